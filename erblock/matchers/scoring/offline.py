"""Fitting a Fellegi-Sunter model: from a run's summaries, or on a pandas frame of pairs.

A run fits from per-task histograms (:func:`fit_run`, behind
:meth:`.FellegiSunter.fit_summaries`); :func:`fit_frame` is the same training for pairs a
user already has, e.g. a ``scoring="mean"`` result, with random pairs for u when they
have them and EM among the candidates when not.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..comparisons import Comparison
from ..levels import PatternHistogram
from .base import PASS_COLUMN, RESERVED_COLUMNS, FitContext, ModelWarning, model_columns
from .groups import declared_groups
from .implied import found_by_pass
from .saved_sessions import check_shares
from .training import train_candidates

__all__ = ["MANY_MATCHES", "fit_frame", "fit_run", "match_count_warning"]

#: the key passes an offline fit with random pairs records (no run's keys are these)
OFFLINE_KEYS = "the candidate pairs given to fit()"
#: a link whose model expects more matches than this per record of its smaller input is
#: warned about: a link of two inputs without duplicates has at most one
MANY_MATCHES = 1.5


def fit_frame(model: Any, pairs: pd.DataFrame, compare: Any = None,
              random_pairs: pd.DataFrame | None = None, total_pairs: float | None = None,
              tf: Mapping[str, pd.Series] | None = None,
              blocking_columns: Sequence[str] = ()) -> None:
    """Fit ``model`` in place (see :meth:`.FellegiSunter.fit` for the arguments)."""
    model.fitted_in_run_ = False
    if compare is not None:
        model.bind(compare)
    elif model.specs_ is None:
        internal = set(model_columns(pairs))
        cols = [c for c in pairs.columns if c not in RESERVED_COLUMNS and c not in internal
                and c != PASS_COLUMN and pd.api.types.is_numeric_dtype(pairs[c])]
        if not cols:
            raise ValueError("pairs: no similarity columns to fit on")
        model.bind([Comparison(c, "jaro_winkler", name=c) for c in cols])
    # a refit starts clean: nothing of an earlier fit may outlive it
    model.lambda_, model.warnings_, model.sessions_, model.tf_ = None, [], [], {}
    model.n_u_pairs_, model.pass_keys_, model.use_passes = 0, [], True
    model.implied_, model.groups_ = (), ()
    specs = model.specs_
    hist = PatternHistogram.from_gamma(model.gamma_of(pairs), model.radix)
    if random_pairs is None:
        res = train_candidates(hist, [s.n_levels for s in specs], model.max_iter, model.tol)
        model.lambda_, model.m_, model.u_ = res.lam, res.m, res.u
        model.m_source_ = res.m_source
        model.sessions_ = [s.to_dict([x.name for x in specs]) for s in res.sessions]
        model.n_candidates_, model.total_pairs_ = hist.total, float(hist.total)
        model.warnings_ = res.warnings
        if declared_groups(model):  # m, u and λ all free: the movers are in m already
            w = ("fit: groups are fitted only with random_pairs (u from random pairs); "
                 "without them the declared groups are not used")
            model.warnings_.append(w)
            warnings.warn(w, ModelWarning, stacklevel=3)
        for w in res.warnings:
            warnings.warn(w, ModelWarning, stacklevel=3)
    else:
        counts, _, *random = model.summarize_random(random_pairs)
        selected = set(blocking_columns)
        blocked = {0: {k for k, c in enumerate(model.comparisons_) if c.column in selected}}
        model._fit({0: hist}, model.u_from_counts(counts), blocked,
                   float(total_pairs) if total_pairs else float(len(pairs)),
                   random[0] if random and total_pairs else None)
        model.n_u_pairs_ = len(random_pairs)
        # its session learnt from these pairs, found by no key a run knows: a run with any
        # keys scores with λ of a random pair instead (bind warns), not with pass 0's
        model.pass_keys_ = [OFFLINE_KEYS]
    names = [sp.name for sp in specs]
    for name, shares in (tf or {}).items():
        if name not in names:
            raise ValueError(f"tf: {name!r} is no comparison of the model; tf is keyed by "
                             f"comparison name ({names})")
        table = pd.Series(shares, dtype=np.float64)
        check_shares(f"tf[{name!r}]", table)
        model.tf_[name] = table


def fit_run(model: Any, summaries: Sequence[Any], random: Sequence[Any],
            value_counts: Mapping[str, pd.Series], context: FitContext) -> None:
    """Fit ``model`` in place from a run's phase-1 summaries: per task, histograms of
    level vectors by key pass; per random-pair chunk, level counts, their number and
    (with ``detect``) the histogram of their level vectors; value counts of the
    term-frequency comparisons."""
    hists: dict[int, list[PatternHistogram]] = {}
    for task in summaries:
        for p, h in task.items():
            hists.setdefault(p, []).append(h)
    merged = {p: PatternHistogram.merge(hs) for p, hs in hists.items()}
    counts = [np.sum([r[0][k] for r in random], axis=0) if random
              else np.zeros(s.n_levels + 1) for k, s in enumerate(model.specs_)]
    blocked = {p: model._selected_by(key) for p, key in enumerate(context.keys)}
    total = _total_pairs(context)
    model.pass_keys_ = [repr(k) for k in (context.run_keys or context.keys)]
    rand = [r[2] for r in random if len(r) > 2 and r[2] is not None]
    found: dict[int, list[PatternHistogram]] = {}
    for r in random:
        for f, h in (r[3] if len(r) > 3 and r[3] else {}).items():
            found.setdefault(f, []).append(h)
    model._fit(merged, model.u_from_counts(counts), blocked, total,
               PatternHistogram.merge(rand) if rand else None, counts,
               {f: PatternHistogram.merge(hs) for f, hs in found.items()})
    model.n_u_pairs_ = int(sum(r[1] for r in random))
    model.fitted_in_run_ = True  # as_scoring warns when it is passed to another run
    for name, vc in value_counts.items():
        n = float(vc.sum())
        model.tf_[name] = (vc / n if n else vc.astype(np.float64)).astype(np.float64)
    r = context.records
    w = match_count_warning(float(model.lambda_) * total, int(r.get("records_r", 0)),
                            int(r.get("records_s", 0)), context.link)
    if w:
        model.warnings_.append(w)
        warnings.warn(w, ModelWarning, stacklevel=4)


def match_count_warning(expected: float, n_r: int, n_s: int, link: bool) -> str | None:
    """The warning for a link whose model expects more than :data:`MANY_MATCHES` matches
    per record of its smaller input (None otherwise, and for a dedupe, where one entity
    may have many records)."""
    small = min(n_r, n_s)
    if not link or small <= 0 or expected <= MANY_MATCHES * small:
        return None
    return (f"the model expects {expected:,.0f} matches between {n_r:,} and {n_s:,} "
            f"records, {expected / small:.1f} for each record of the smaller input: unless "
            "the inputs hold duplicates, it takes non-matches for matches, typically records "
            "that agree on several related columns (the people of one household share the "
            "address, phone and surname). If neither input holds duplicates, say so with "
            "cardinality='1:1' (erblock link --cardinality 1:1): the result is then one "
            "link per record, a person's own record outranking the housemates; see 'Where "
            "the unsupervised model fails' in the scoring guide")


def _total_pairs(context: FitContext) -> float:
    """All record pairs of the run: n_R·n_S for link, n(n−1)/2 for dedupe."""
    r = context.records
    nr, ns = float(r.get("records_r", 0)), float(r.get("records_s", 0))
    return nr * ns if context.link else nr * (nr - 1) / 2


def u_from_counts(specs: Sequence[Any], level_counts: Sequence[np.ndarray]) -> list[np.ndarray]:
    """u per comparison from random-pair level counts (index 0 = null, ignored);
    add-one smoothing keeps a level never seen among random pairs finite."""
    out = []
    for s, c in zip(specs, level_counts):
        c = np.asarray(c, dtype=np.float64)[1: s.n_levels + 1]
        out.append((c + 1.0) / (c.sum() + s.n_levels))
    return out


def summarize_random(model: Any, sims: pd.DataFrame, first: np.ndarray | None) -> tuple:
    """Random pairs' level counts per comparison (index 0 = null), their number, their
    histogram (``detect``), and those some pass agrees on (:func:`.found_by_pass`)."""
    gamma = model.gamma_of(sims)
    counts = [np.bincount(gamma[:, k].astype(np.int64) + 1, minlength=s.n_levels + 1)
              for k, s in enumerate(model.specs_)]
    codes = PatternHistogram.codes_of(gamma, model.radix) if model.detect else None
    hist = None if codes is None else PatternHistogram.from_codes(codes, model.radix)
    return counts, len(sims), hist, found_by_pass(gamma, first, model.radix, codes)
