"""Unsupervised Fellegi-Sunter scoring: levels, u from random pairs, λ and m by EM.

For a pair with level vector γ (one level per comparison, from its method's default
levels: exact, then partial agreements, then "else"; a missing value gives the null level,
which adds nothing), ``match_weight = log₂(λ / (1 − λ)) + Σ_k log₂(m_k[γ_k] / u_k[γ_k]) +
term-frequency adjustments`` and ``match_probability = 1 / (1 + 2^−match_weight)``: λ is
the probability that two *random* records match, ``m_k[l]`` the share of matches at level
``l`` of comparison ``k`` and ``u_k[l]`` the share of random record pairs. The default
decision is ``match_probability >= 0.5``.

* **u** comes from random record pairs: a deterministic sample of records (a hash of the
  record id) compared in full on the workers, ``u_pairs`` pairs (3 million by default);
  only level counts travel. A level never seen among them gets add-one smoothing.
* **λ and m** come from EM over the candidate pairs, per key pass, with the comparisons a
  pass selects on deactivated in its session — see :mod:`.training` for the method and
  why. EM runs on the histogram of level vectors (the sufficient statistic), so the pairs
  stay on the workers: they send their histograms, the client fits, the workers score.
* **Term frequencies** adjust the exact level of every comparison whose method asks for it
  (``name``, ``email``) or that ``tf_adjust`` names: agreeing on a value shared by a share
  ``tf(v)`` of the records is worth ``log₂(u_exact / tf(v))`` instead of ``log₂(1 /
  u_exact)``. Values are counted on the cluster, over both sources, as the method
  normalises them.

A fitted model explains itself (:meth:`FellegiSunter.summary`, :mod:`.explain`: weights
per level, the waterfall of one pair), saves as JSON (:meth:`~.base.ScoringModel.to_json`,
:func:`erblock.load_model`) and scores new pairs as ``scoring=model``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...attrs import SharedDict
from ..comparisons import Comparison, as_comparisons
from ..levels import LevelSpec, PatternHistogram, gamma_matrix, resolve_levels
from .base import (
    MODEL_ATTR,
    PASS_COLUMN,
    FitContext,
    FitRequest,
    ModelWarning,
    ScoringModel,
    model_columns,
    probability,
)
from .explain import boundary_examples, model_report, summary
from .groups import Group, check_groups, declared_groups, fit_groups, related_profile
from .implied import mask, train_masked
from .offline import fit_frame, fit_run, summarize_random, u_from_counts
from .options import (
    canonical_key,
    check_levels,
    check_options,
    check_same_comparisons,
    keys_differ_message,
)
from .parts import ScoredParts
from .persist import fs_from_dict, fs_to_dict
from .training import train

__all__ = ["FellegiSunter"]


class FellegiSunter(ScoredParts, ScoringModel):
    """Unsupervised Fellegi-Sunter model (see the module doc).

    Parameters
    ----------
    levels
        Thresholds per comparison (key: its result name or column) to replace the
        method's default levels, e.g. ``{"surname": (0.88, 0.94, 1.0)}``.
    tf_adjust
        Comparisons (names or columns) whose exact level term frequencies adjust; None:
        those whose method does it by default (``name``, ``email``) and whose top level
        is exact (threshold 1.0: ``levels`` without 1.0 drops it quietly); False: none.
        A comparison named here must have an exact level (ValueError when bound).
    recall
        The share of true matches the blocking finds (1: all); λ is divided by it.
    detect
        Test every session's comparisons for selection by the blocking (see
        :mod:`.training`) and the random pairs for comparisons another's agreement
        implies (:mod:`.implied`); False trusts the key specs' declared columns only.
    groups
        Comparisons that change together, scored as one mixture (a moved person
        disagrees on every part of the address at once; :mod:`.groups`): ``"auto"`` finds
        the parts that go with the postcode and phone comparisons (it needs ``detect``),
        a list of lists of comparison names or columns declares them, None uses none.
    u_pairs, seed
        Random record pairs behind u (at least 1,000), and the seed of their record
        sample (an int64).
    max_iter, tol
        EM stopping rule: at most ``max_iter`` steps; converged when no parameter moves
        by ``tol`` relative to its value (:mod:`erblock.matchers.em`; SQUAREM steps
        where EM crawls). The three-class fits have their own (:mod:`.related`).

    Attributes
    ----------
    specs_
        Levels per comparison (set by :meth:`bind`, a run, or :meth:`fit`).
    lambda_
        Probability that two random records match.
    m_, u_
        Level probabilities per comparison for matches / random pairs, lowest level first.
    m_source_
        Where each comparison's m comes from: ``"em"``, ``"em among candidates"`` (every
        session's keys select on it), either with ``", three classes"`` (pooled again
        from three-class fits, :mod:`.third_class`), ``"default"`` (untrained).
    sessions_, warnings_
        The EM sessions (passes, deactivated and detected comparisons, pairs, λ of the
        session, iterations, convergence) and what went wrong.
    tf_
        Share of records per value, per term-frequency comparison.
    n_candidates_, n_u_pairs_, total_pairs_
        Candidate pairs, random pairs and all record pairs the fit saw.
    implied_
        ``(j, k)`` comparison indices: ``k`` is read as missing where ``j`` is at its top
        level (the same first name implies the same sex).
    groups_
        The fitted groups (:class:`.groups.Group`: comparisons and μ, the share of
        matches that differ on them as random pairs do).
    """

    kind = "fellegi_sunter"
    kinds: ClassVar[tuple[str, ...]] = ("fellegi_sunter",)

    def __init__(self, levels: Mapping[str, Any] | None = None,
                 tf_adjust: str | Sequence[str] | bool | None = None, *, recall: float = 1.0,
                 detect: bool = True,
                 groups: str | Sequence[Sequence[str]] | None = "auto", u_pairs: int = 3_000_000,
                 max_iter: int = 1000, tol: float = 1e-4, seed: int = 0) -> None:
        self.tf_adjust = check_options(levels, tf_adjust, recall, u_pairs, max_iter, tol, seed,
                                       detect)
        self.levels = check_levels(levels)  # tuples of Python floats: plain to save
        self.recall = float(recall)
        self.detect = bool(detect)
        self.groups = check_groups(groups)
        self.u_pairs = int(u_pairs)
        self.max_iter = int(max_iter)
        self.tol = float(tol)
        self.seed = int(seed)
        self.specs_: tuple[LevelSpec, ...] | None = None
        self.comparisons_: tuple[Comparison, ...] = ()
        self.lambda_: float | None = None
        self.m_: list[np.ndarray] | None = None
        self.u_: list[np.ndarray] | None = None
        self.m_source_: list[str] = []
        self.sessions_: list[dict[str, Any]] = []
        self.warnings_: list[str] = []
        self.tf_: dict[str, pd.Series] = {}
        self.pass_keys_: list[str] = []
        self.use_passes = True  #: score with what each pass's session learnt
        self.n_candidates_, self.n_u_pairs_, self.total_pairs_ = 0, 0, 0.0
        self.implied_: tuple[tuple[int, int], ...] = ()
        self.groups_: tuple[Group, ...] = ()
        self.keys_warning_ = ""  #: bound to other keys than it was fitted with (reported)
        self.fitted_in_run_ = False  #: fitted by a run (not by fit(), not loaded)

    @property
    def fitted(self) -> bool:
        return self.lambda_ is not None

    def __repr__(self) -> str:
        state = (f"fitted, λ={self.lambda_:.4g}, {len(self.specs_ or ())} comparisons"
                 if self.fitted else "not fitted")
        return f"FellegiSunter({state})"

    def bind(self, compare: Any, keys: Sequence[Any] | None = None) -> FellegiSunter:
        """This model's levels for ``compare`` (comparison specs, as given to ``link``).

        An unfitted model gets its level specs; a fitted one is checked: the comparisons
        must produce the result columns it was fitted on, in the same order. Bound to a
        run whose key passes differ from those it was fitted on, it scores every pair with
        λ and the random-pair u (what its sessions learnt belongs to their keys).
        """
        comparisons = as_comparisons(compare)
        if self.fitted:
            check_same_comparisons(comparisons, self.comparisons_,
                                   [s.name for s in self.specs_ or ()])
        if self.fitted and keys is not None and self.pass_keys_:
            same = [canonical_key(repr(k)) for k in keys] == [
                canonical_key(t) for t in self.pass_keys_]
            self.keys_warning_ = "" if same else keys_differ_message(self.m_source_,
                                                                       self._specs())
            if not same and self.use_passes:
                warnings.warn(self.keys_warning_, ModelWarning, stacklevel=3)
            self.use_passes = same
        if self.fitted:
            return self
        self.specs_ = resolve_levels(comparisons, self.levels, self.tf_adjust)
        self.comparisons_ = comparisons
        declared_groups(self)  # unknown names fail here, before a run
        return self

    @property
    def radix(self) -> tuple[int, ...]:
        return tuple(s.n_levels + 1 for s in self._specs())

    def _specs(self) -> tuple[LevelSpec, ...]:
        if self.specs_ is None:
            raise RuntimeError("the model has no comparisons yet: call bind(compare) or fit()")
        return self.specs_

    def require_fitted(self) -> None:
        if not self.fitted:
            raise RuntimeError(
                "FellegiSunter is not fitted: pass it as scoring= to erblock.link/dedupe, "
                "call fit(pairs), or load a saved model"
            )

    def gamma_of(self, pairs: pd.DataFrame) -> np.ndarray:
        """(pairs × comparisons) levels of the similarity columns of ``pairs``."""
        specs = self._specs()
        missing = [s.name for s in specs if s.name not in pairs.columns]
        if missing:
            raise KeyError(f"pairs: missing similarity column(s) {missing}; got {list(pairs.columns)}")
        gamma = gamma_matrix(specs, [pairs[s.name].to_numpy(np.float64, na_value=np.nan)
                                     for s in specs])
        return mask(gamma, self.implied_, [s.n_levels for s in specs])

    def u_from_counts(self, level_counts: Sequence[np.ndarray]) -> list[np.ndarray]:
        """u per comparison from random-pair level counts (:func:`.offline.u_from_counts`)."""
        return u_from_counts(self._specs(), level_counts)

    # -- fitting during a run (the engine's two-phase protocol) ------------------------

    @property
    def pair_values(self) -> tuple[str, ...]:
        """Term-frequency comparisons: their value per pair picks the frequency."""
        return tuple(s.name for s in self._specs() if s.tf)

    def fit_request(self) -> FitRequest:
        return FitRequest(random_pairs=self.u_pairs, seed=self.seed,
                          value_counts=self.pair_values)

    @property
    def needs_pass(self) -> bool:
        return True

    def summarize(self, pairs: pd.DataFrame) -> dict[int, PatternHistogram]:
        """Histograms of level vectors of one reduce task's pairs, by key pass."""
        gamma = self.gamma_of(pairs)
        passes = (pairs[PASS_COLUMN].to_numpy() if PASS_COLUMN in pairs.columns
                  else np.zeros(len(pairs), dtype=np.int8))
        return {int(p): PatternHistogram.from_gamma(gamma[passes == p], self.radix)
                for p in np.unique(passes).tolist()}

    def summarize_random(self, sims: pd.DataFrame, first: np.ndarray | None = None) -> tuple:
        """Random pairs' level counts per comparison (index 0 = null), their number, their
        histogram (``detect``), and those some pass agrees on (:func:`.found_by_pass`)."""
        return summarize_random(self, sims, first)

    def fit_summaries(self, summaries: Sequence[Any], random: Sequence[Any],
                      value_counts: Mapping[str, pd.Series], context: FitContext) -> None:
        """Fit from the phase-1 summaries (on the client; see :mod:`.training`)."""
        fit_run(self, summaries, random, value_counts, context)

    def _selected_by(self, key: Any) -> set[int]:
        cols = set(getattr(key, "selects", getattr(key, "columns", ())))
        return {k for k, c in enumerate(self.comparisons_)
                if c.column in cols or c.right_column in cols}

    def _fit(self, hists: Mapping[int, PatternHistogram], u: list[np.ndarray],
             blocked: Mapping[int, set[int]], total_pairs: float,
             random: PatternHistogram | None = None, counts: Sequence[np.ndarray] | None = None,
             found: Mapping[int, PatternHistogram] | None = None) -> None:
        specs = self._specs()
        names = [s.name for s in specs]
        n_levels = [s.n_levels for s in specs]
        fit = partial(train, n_levels=n_levels, blocked=blocked, total_pairs=total_pairs,
                      names=names, recall=self.recall, detect=self.detect,
                      max_iter=self.max_iter, tol=self.tol,
                      related=partial(related_profile, n_levels=n_levels, locates=[
                          getattr(c.kernel, "locates", None) for c in self.comparisons_],
                          declared=declared_groups(self)) if self.groups else None)

        res, implied, u = train_masked(fit, hists, u, random if self.detect else None,
                                       n_levels, self.u_from_counts, names, counts, found)
        self.implied_ = tuple(implied)
        self.lambda_, self.m_, self.u_ = res.lam, res.m, u
        self.m_source_ = res.m_source
        self.sessions_ = [s.to_dict(names) for s in res.sessions]
        self.warnings_ = res.warnings
        self.n_candidates_ = res.n_candidates
        self.total_pairs_ = float(total_pairs)
        fit_groups(self, hists, random)
        for w in res.warnings:
            warnings.warn(w, ModelWarning, stacklevel=3)

    def fit(self, pairs: pd.DataFrame, compare: Any = None, *,
            random_pairs: pd.DataFrame | None = None, total_pairs: float | None = None,
            tf: Mapping[str, pd.Series] | None = None,
            blocking_columns: Sequence[str] = ()) -> FellegiSunter:
        """Fit on a pandas frame of candidate pairs (e.g. a ``scoring="mean"`` result).

        ``compare``: the comparisons that made ``pairs`` (default levels per method);
        ``random_pairs``: similarity columns of random record pairs, for u;
        ``total_pairs``: all record pairs, for λ (λ among the candidates when None, and
        then comparisons that imply others are not looked for: that needs the matches
        expected among the random pairs);
        ``tf``: comparison -> share of records per value; ``blocking_columns``: the
        columns the blocking selected on. Without ``random_pairs`` u is estimated among
        the candidates by EM (a model of the candidates, not of random pairs).
        """
        fit_frame(self, pairs, compare, random_pairs, total_pairs, tf, blocking_columns)
        return self

    # -- scoring ------------------------------------------------------------------------

    def apply(self, pairs: pd.DataFrame, tf_values: Mapping[str, Any] | None = None
              ) -> pd.DataFrame:
        """``pairs`` with ``match_weight`` and ``match_probability`` (a new frame).

        Term frequencies need each tf comparison's left value per pair: ``tf_values``
        (name -> values) or the columns a run attaches; without them the adjustment is
        skipped with a warning.
        """
        self.require_fitted()
        gamma = self.gamma_of(pairs)
        values = dict(tf_values) if tf_values is not None else self.pair_value_columns(pairs)
        lacking = [n for n in self.pair_values if n in self.tf_ and n not in values]
        if lacking and len(pairs):
            warnings.warn(f"apply: the model adjusts {lacking} by term frequency but their "
                          "values were not given (tf_values=...); scoring without it",
                          ModelWarning, stacklevel=2)
        prior_w, weights, related, grouped = self.scored_parts(gamma, values,
                                                               self.passes_of(pairs))
        w = prior_w + weights.sum(axis=1) + related + grouped
        out = pairs.drop(columns=model_columns(pairs)).copy()
        out["match_weight"] = w
        out["match_probability"] = probability(w)
        if MODEL_ATTR in out.attrs:  # the weights are this model's now, not the frame's
            out.attrs[MODEL_ATTR] = SharedDict.of(self.to_dict())  # (a task's: none)
        return out

    def predict_proba(self, pairs: pd.DataFrame, tf_values: Any = None) -> np.ndarray:
        """match_probability of each pair."""
        return self.apply(pairs, tf_values)["match_probability"].to_numpy()

    def predict(self, pairs: pd.DataFrame, threshold: float = 0.5,
                tf_values: Any = None) -> np.ndarray:
        """Default decision: ``match_probability >= threshold`` (boolean array)."""
        return self.predict_proba(pairs, tf_values) >= threshold

    def examples(self, pairs: pd.DataFrame, k: int = 3) -> list[dict[str, Any]]:
        """The ``k`` scored pairs nearest the decision boundary, explained level by level."""
        return boundary_examples(self, pairs, k)

    def summary(self, key_pass: int | None = None) -> pd.DataFrame:
        """One row per comparison level: label, m, u and match weight (log2 m/u); with
        ``key_pass``, what that pass's pairs are weighed with (see :func:`.explain.summary`)."""
        return summary(self, key_pass)

    def report(self) -> dict[str, Any]:
        return model_report(self)

    def to_dict(self) -> dict[str, Any]:
        return fs_to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FellegiSunter:
        return fs_from_dict(cls, d)
