"""Fitting a Fellegi-Sunter model on a pandas frame of pairs, outside a run.

A run fits from per-task histograms (:meth:`.FellegiSunter.fit_summaries`); this is the
same training for pairs a user already has, e.g. a ``scoring="mean"`` result, with
random pairs for u when they have them and EM among the candidates when not.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..comparisons import Comparison
from ..levels import PatternHistogram
from .base import RESERVED_COLUMNS, ModelWarning, model_columns
from .training import train_candidates

__all__ = ["fit_frame"]

#: the key passes an offline fit with random pairs records (no run's keys are these)
OFFLINE_KEYS = "the candidate pairs given to fit()"


def fit_frame(model: Any, pairs: pd.DataFrame, compare: Any = None,
              random_pairs: pd.DataFrame | None = None, total_pairs: float | None = None,
              tf: Mapping[str, pd.Series] | None = None,
              blocking_columns: Sequence[str] = ()) -> None:
    """Fit ``model`` in place (see :meth:`.FellegiSunter.fit` for the arguments)."""
    if compare is not None:
        model.bind(compare)
    elif model.specs_ is None:
        internal = set(model_columns(pairs))
        cols = [c for c in pairs.columns if c not in RESERVED_COLUMNS and c not in internal
                and pd.api.types.is_numeric_dtype(pairs[c])]
        if not cols:
            raise ValueError("pairs: no similarity columns to fit on")
        model.bind([Comparison(c, "jaro_winkler", name=c) for c in cols])
    # a refit starts clean: nothing of an earlier fit may outlive it
    model.lambda_, model.warnings_, model.sessions_, model.tf_ = None, [], [], {}
    model.n_u_pairs_, model.pass_keys_, model.use_passes = 0, [], True
    specs = model.specs_
    hist = PatternHistogram.from_gamma(model.gamma_of(pairs), model.radix)
    if random_pairs is None:
        res = train_candidates(hist, [s.n_levels for s in specs], model.max_iter, model.tol)
        model.lambda_, model.m_, model.u_ = res.lam, res.m, res.u
        model.m_source_ = res.m_source
        model.sessions_ = [s.to_dict([x.name for x in specs]) for s in res.sessions]
        model.n_candidates_, model.total_pairs_ = hist.total, float(hist.total)
        model.warnings_ = res.warnings
        for w in res.warnings:
            warnings.warn(w, ModelWarning, stacklevel=3)
    else:
        counts = [np.bincount(g + 1, minlength=s.n_levels + 1)
                  for g, s in zip(model.gamma_of(random_pairs).T.astype(np.int64), specs)]
        selected = set(blocking_columns)
        blocked = {0: {k for k, c in enumerate(model.comparisons_) if c.column in selected}}
        model._fit({0: hist}, model.u_from_counts(counts), blocked,
                   float(total_pairs) if total_pairs else float(len(pairs)))
        model.n_u_pairs_ = len(random_pairs)
        # its session learnt from these pairs, found by no key a run knows: a run with any
        # keys scores with λ of a random pair instead (bind warns), not with pass 0's
        model.pass_keys_ = [OFFLINE_KEYS]
    for name, shares in (tf or {}).items():
        model.tf_[name] = pd.Series(shares, dtype=np.float64)
