"""Scoring candidate pairs: unsupervised Fellegi-Sunter with EM, and the worker functions.

**Comparison levels.** Each comparison's similarity (in [0, 1], NaN when a value is
missing) is cut into levels by thresholds: with thresholds ``(0.8, 0.92, 1.0)`` a pair is
at level 0 (``< 0.8``), 1 (``>= 0.8``), 2 (``>= 0.92``) or 3 (``>= 1.0``, the exact
agreement), and at the *null* level when the similarity is missing. The null level
contributes weight 0 (no evidence either way). Thresholds are set per comparison (by its
result name or its column); :data:`DEFAULT_THRESHOLDS` gives the default per method.
Thresholds are compared with a tolerance of 1e-6, so a float32 ``0.9`` meets ``0.9``.

**The model** (Fellegi & Sunter 1969). For a pair with level vector γ,
``match_weight = log2(λ / (1 − λ)) + Σ_k log2(m_k[γ_k] / u_k[γ_k])`` and
``match_probability = 1 / (1 + 2^−match_weight)``, where λ is the share of matches among
the *candidate pairs*, ``m_k[l]`` the probability of level ``l`` for a match and
``u_k[l]`` for a non-match.

* ``u`` is estimated from random record pairs (which are almost all non-matches): a
  deterministic sample of records is drawn on the workers (by a hash of the record id)
  and compared in full, up to ``u_pairs`` pairs (3 million by default; the benchmark
  F1s do not move between 1 and 10 million), split into row ranges over the workers; only
  the level counts come back.
* ``λ`` and ``m`` are estimated by EM over the candidate pairs. ``u`` is kept fixed at its
  random-pair value (as Splink does after ``estimate_u_using_random_sampling``) for every
  comparison whose column no blocking key reads (``fix_u="auto"``, the default). A
  comparison on a blocking column is different: candidates were *selected* by that
  column, so non-matching candidates agree on it far more often than random pairs do
  (on DBLP-ACM blocked on year and first title word, 16 % of non-matching candidates have
  title Jaro-Winkler >= 0.8 against 0.07 % of random pairs). With u fixed there, no
  non-match distribution fits the candidates and EM drifts to λ = 1 (everything a
  match); so for those comparisons EM refines u among the candidates, starting from the
  random-pair value. ``fix_u=True``/``False`` fixes all or none.
* **EM runs on the histogram of level vectors**, the sufficient statistic of this model:
  pairs with the same γ have the same posterior, so EM over the distinct γ weighted by
  their counts is *exactly* EM over all pairs. A reduce task sends its histogram (at most
  Π_k (levels_k + 1) rows, typically a few hundred) and keeps its pairs in worker memory;
  the client sums the histograms and fits; the workers then score the kept pairs. Pairs
  never travel to the client for training.
* **Term-frequency adjustment** (one comparison, ``tf_adjust``): for a pair at the exact
  level on value ``v``, the weight gains ``log2(u_rand / tf(v))``, where ``tf(v)`` is the
  share of records with value ``v`` (both sources together for link) and ``u_rand`` the
  exact level's u among random pairs. With u fixed this is Splink's rule (``u`` replaced
  by ``tf(v)``): agreeing on a rare surname is stronger evidence than on a common one;
  with u refined among candidates the same factor scales the refined u. EM itself runs
  without it.

The fitted model is saved with :meth:`FellegiSunter.to_json` and loaded with
:meth:`FellegiSunter.from_json` (or :func:`load_model` for any erblock model), and can be
passed back as ``scoring=model`` to score new pairs without refitting.

Levels, histograms and EM are in :mod:`erblock.matchers.levels`. During a run the model
fits through the engine's two-phase protocol (:mod:`erblock.matchers.scoring.base`):
:meth:`FellegiSunter.summarize` turns a reduce task's pairs into their histogram,
:meth:`FellegiSunter.summarize_random` random pairs into level counts for u, and
:meth:`FellegiSunter.fit_summaries` fits on the client.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..comparisons import Comparison, as_comparisons
from ..levels import (
    DEFAULT_THRESHOLDS,
    PROB_FLOOR,
    LevelSpec,
    PatternHistogram,
    check_thresholds,
    fit_em,
    gamma_matrix,
    resolve_levels,
)
from .base import (
    RESERVED_COLUMNS,
    FitContext,
    FitRequest,
    ScoringModel,
    model_columns,
    probability,
    value_column,
)

__all__ = ["DEFAULT_THRESHOLDS", "FellegiSunter", "LevelSpec", "PatternHistogram", "fit_em",
           "resolve_levels"]


# --------------------------------------------------------------------------- the model


class FellegiSunter(ScoringModel):
    """Unsupervised Fellegi-Sunter model: levels, u from random pairs, λ and m by EM.

    Parameters
    ----------
    levels
        Thresholds per comparison (key: the comparison's result name or its column), e.g.
        ``{"surname": (0.88, 0.94, 1.0)}``; others use :data:`DEFAULT_THRESHOLDS`.
    tf_adjust
        A comparison (name or column) whose exact agreement is weighted by how rare the
        value is (term-frequency adjustment), or None.
    fix_u
        ``"auto"`` (default): keep ``u`` from random pairs fixed for comparisons on columns
        no blocking key reads and refine it by EM for the others; ``True``: fix all;
        ``False``: refine all.
    u_pairs
        How many random record pairs estimate ``u`` (a sample of records compared in full;
        a level never seen among them gets add-one smoothing).
    max_iter, tol
        EM stopping rule (change of every parameter below ``tol``).
    lambda_init
        Starting share of matches among the candidates.
    seed
        Seed of the record sample for ``u``.

    Attributes
    ----------
    specs_
        Levels per comparison (set by :meth:`bind`, by a run, or by :meth:`fit`).
    lambda_
        Share of matches among the candidates (the fitted attributes are set by a run
        with ``scoring=model`` or ``"em"``, or by :meth:`fit`).
    m_, u_
        Level probabilities per comparison for matches / non-matches, lowest level first.
    u_random_, fixed_u_
        u among random record pairs, and whether each comparison's u stayed fixed.
    tf_
        Share of records per value of the ``tf_adjust`` comparison (a Series), or None.
    n_iter_, converged_, n_candidates_, n_patterns_, n_u_pairs_
        EM iterations and convergence, candidate pairs and distinct level vectors fitted
        on, random pairs behind ``u``.
    """

    kind = "fellegi_sunter"
    kinds: ClassVar[tuple[str, ...]] = ("fellegi_sunter",)

    def __init__(
        self,
        levels: Mapping[str, Any] | None = None,
        tf_adjust: str | None = None,
        *,
        fix_u: bool | str = "auto",
        u_pairs: int = 3_000_000,
        max_iter: int = 1000,
        tol: float = 1e-7,
        lambda_init: float = 0.1,
        seed: int = 0,
    ) -> None:
        if levels is not None and not isinstance(levels, Mapping):
            raise TypeError(f"levels must be a dict {{comparison: thresholds}}, got {levels!r}")
        for k, v in (levels or {}).items():
            check_thresholds(k, v)
        if tf_adjust is not None and not isinstance(tf_adjust, str):
            raise TypeError(f"tf_adjust must be a comparison name or column, got {tf_adjust!r}")
        if fix_u not in (True, False, "auto"):
            raise ValueError(f"fix_u must be True, False or 'auto', got {fix_u!r}")
        if not isinstance(u_pairs, int) or isinstance(u_pairs, bool) or u_pairs < 1:
            raise ValueError(f"u_pairs must be an integer >= 1, got {u_pairs!r}")
        if not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
        if not 0.0 < float(lambda_init) < 1.0:
            raise ValueError(f"lambda_init must be in (0, 1), got {lambda_init!r}")
        self.levels = dict(levels or {})
        self.tf_adjust = tf_adjust
        self.fix_u = fix_u
        self.u_pairs = u_pairs
        self.max_iter = max_iter
        self.tol = float(tol)
        self.lambda_init = float(lambda_init)
        self.seed = int(seed)
        self.specs_: tuple[LevelSpec, ...] | None = None
        self.tf_index_: int | None = None
        self.lambda_: float | None = None
        self.m_: list[np.ndarray] | None = None
        self.u_: list[np.ndarray] | None = None
        self.u_random_: list[np.ndarray] | None = None
        self.fixed_u_: list[bool] | None = None
        self.blocking_columns_: frozenset[str] | None = None
        self.tf_: pd.Series | None = None
        self.n_iter_ = 0
        self.converged_ = False
        self.n_candidates_ = 0
        self.n_patterns_ = 0
        self.n_u_pairs_ = 0

    # -- state --------------------------------------------------------------------------

    @property
    def fitted(self) -> bool:
        return self.lambda_ is not None

    def __repr__(self) -> str:
        state = (f"fitted, λ={self.lambda_:.4g}, {len(self.specs_ or ())} comparisons"
                 if self.fitted else "not fitted")
        tf = f", tf_adjust={self.tf_adjust!r}" if self.tf_adjust else ""
        return f"FellegiSunter({state}{tf})"

    def bind(self, compare: Any) -> FellegiSunter:
        """This model's levels for ``compare`` (comparison specs, as given to ``link``).

        An unfitted model gets its level specs; a fitted one is checked: the comparisons
        must produce the result columns it was fitted on, in the same order.
        """
        comparisons = as_comparisons(compare)
        if self.fitted:
            names = [c.name for c in comparisons]
            fitted = [s.name for s in self.specs_ or ()]
            if names != fitted:
                raise ValueError(
                    f"scoring: the model was fitted on comparisons {fitted}, but this run "
                    f"compares {names}; use the same compare= as when fitting"
                )
            return self
        specs = resolve_levels(comparisons, self.levels)
        self.specs_ = specs
        self.tf_index_ = self._tf_index(specs)
        return self

    def _tf_index(self, specs: Sequence[LevelSpec]) -> int | None:
        if self.tf_adjust is None:
            return None
        hits = [i for i, s in enumerate(specs) if self.tf_adjust in (s.name, s.column)]
        if not hits:
            raise ValueError(
                f"tf_adjust: {self.tf_adjust!r} names no comparison; use one of "
                f"{[s.name for s in specs]} (or its column)"
            )
        return hits[0]

    @property
    def radix(self) -> tuple[int, ...]:
        return tuple(s.n_levels + 1 for s in self._specs())

    def _specs(self) -> tuple[LevelSpec, ...]:
        if self.specs_ is None:
            raise RuntimeError("the model has no comparisons yet: call bind(compare) or fit()")
        return self.specs_

    def _require_fitted(self) -> None:
        if not self.fitted:
            raise RuntimeError(
                "FellegiSunter is not fitted: pass it as scoring= to erblock.link/dedupe, "
                "call fit(pairs), or load a saved model"
            )

    # -- fitting ------------------------------------------------------------------------

    def u_from_counts(self, level_counts: Sequence[np.ndarray]) -> list[np.ndarray]:
        """u per comparison from random-pair level counts (index 0 = null, ignored).

        Add-one smoothing keeps a level never seen among random pairs finite.
        """
        out = []
        for s, c in zip(self._specs(), level_counts):
            c = np.asarray(c, dtype=np.float64)[1 : s.n_levels + 1]
            out.append((c + 1.0) / (c.sum() + s.n_levels))
        return out

    def set_blocking_columns(self, columns: Any) -> None:
        """Columns the blocking keys read (None: unknown), for ``fix_u="auto"``."""
        self.blocking_columns_ = None if columns is None else frozenset(str(c) for c in columns)

    def _fixed_mask(self, specs: Sequence[LevelSpec]) -> list[bool]:
        if self.fix_u is True or self.fix_u is False:
            return [bool(self.fix_u)] * len(specs)
        if self.blocking_columns_ is None:  # unknown blocking: refine every u
            return [False] * len(specs)
        return [s.column not in self.blocking_columns_ for s in specs]

    def fit_histogram(self, hist: PatternHistogram,
                      u_counts: Sequence[np.ndarray] | None = None,
                      n_u_pairs: int = 0) -> FellegiSunter:
        """Fit λ and m (and u) by EM on a pattern histogram; ``u_counts`` from random pairs.

        Without ``u_counts``, u starts from the level shares of all candidates (mostly
        non-matches) and is refined by EM whatever ``fix_u`` says.
        """
        specs = self._specs()
        if hist.radix != self.radix:
            raise ValueError("fit_histogram: the histogram's level layout differs from the model's")
        gamma, counts = hist.gamma(), hist.counts
        n_levels = [s.n_levels for s in specs]
        fix_u: list[bool] = self._fixed_mask(specs)
        if u_counts is not None:
            u = self.u_from_counts(u_counts)
        else:
            fix_u = [False] * len(specs)
            u = []
            for k, nk in enumerate(n_levels):
                sel = gamma[:, k] >= 0
                c = np.bincount(gamma[sel, k], weights=counts[sel], minlength=nk)[:nk]
                u.append((c + 1.0) / (c.sum() + nk))
        self.u_random_ = [np.asarray(x, dtype=np.float64) for x in u]
        self.fixed_u_ = fix_u
        res = fit_em(gamma, counts, n_levels, u, lam=self.lambda_init, fix_u=fix_u,
                     max_iter=self.max_iter, tol=self.tol)
        self.lambda_ = float(res["lambda"])
        self.m_ = [np.asarray(x, dtype=np.float64) for x in res["m"]]
        self.u_ = [np.asarray(x, dtype=np.float64) for x in res["u"]]
        self.n_iter_ = int(res["n_iter"])
        self.converged_ = bool(res["converged"])
        self.n_candidates_ = hist.total
        self.n_patterns_ = len(hist.codes)
        self.n_u_pairs_ = int(n_u_pairs)
        return self

    def fit(self, pairs: pd.DataFrame, compare: Any = None, *,
            random_pairs: pd.DataFrame | None = None,
            tf: pd.Series | None = None,
            blocking_columns: Sequence[str] | None = None) -> FellegiSunter:
        """Fit on a pandas frame of candidate pairs (e.g. a ``scoring="mean"`` result).

        ``compare``: the comparisons that made ``pairs`` (for default levels per method);
        without it every numeric column other than ids/score is a comparison with the
        generic levels. ``random_pairs``: similarity columns of random record pairs, for
        ``u``; without it ``u`` is estimated by EM too. ``tf``: value → share of records
        for the ``tf_adjust`` comparison. ``blocking_columns``: the columns the blocking keys
        read, for ``fix_u="auto"`` (unknown: every u is refined by EM).
        """
        self.set_blocking_columns(blocking_columns)
        if compare is not None:
            self.bind(compare)
        elif not self.fitted or self.specs_ is None:
            internal = set(model_columns(pairs))
            cols = [c for c in pairs.columns if c not in RESERVED_COLUMNS and c not in internal
                    and pd.api.types.is_numeric_dtype(pairs[c])]
            if not cols:
                raise ValueError("pairs: no similarity columns to fit on")
            self.specs_ = resolve_levels([Comparison(c, "jaro_winkler", name=c) for c in cols],
                                         self.levels)
            self.tf_index_ = self._tf_index(self.specs_)
        specs = self._specs()
        gamma = self._gamma_of(pairs)
        hist = PatternHistogram.from_gamma(gamma, self.radix)
        u_counts = None
        if random_pairs is not None:
            g = self._gamma_of(random_pairs)
            u_counts = [np.bincount(g[:, k] + 1, minlength=s.n_levels + 1)
                        for k, s in enumerate(specs)]
        self.fit_histogram(hist, u_counts, n_u_pairs=0 if random_pairs is None else len(random_pairs))
        if tf is not None:
            self.set_tf(tf)
        return self

    def set_tf(self, tf: pd.Series) -> None:
        """Term frequencies (value → share of records) for the ``tf_adjust`` comparison."""
        if self.tf_adjust is None:
            raise ValueError("set_tf: the model has no tf_adjust comparison")
        tf = pd.Series(tf, dtype=np.float64)
        tf.index = tf.index.astype(str)
        self.tf_ = tf

    def _gamma_of(self, pairs: pd.DataFrame) -> np.ndarray:
        specs = self._specs()
        missing = [s.name for s in specs if s.name not in pairs.columns]
        if missing:
            raise KeyError(f"pairs: missing similarity column(s) {missing}; got {list(pairs.columns)}")
        return gamma_matrix(specs, [pairs[s.name].to_numpy(np.float64, na_value=np.nan)
                                    for s in specs])

    # -- fitting during a run (the engine's two-phase protocol) ------------------------

    def _tf_column(self) -> str | None:
        if self.tf_index_ is None or self.specs_ is None:
            return None
        return value_column(self.specs_[self.tf_index_].name)

    @property
    def pair_values(self) -> tuple[str, ...]:
        """The tf comparison: its value per pair picks the term frequency."""
        return () if self.tf_index_ is None else (self._specs()[self.tf_index_].name,)

    def fit_request(self) -> FitRequest:
        return FitRequest(random_pairs=self.u_pairs, seed=self.seed,
                          value_counts=self.pair_values)

    def summarize(self, pairs: pd.DataFrame) -> PatternHistogram:
        """The histogram of level vectors of one reduce task's pairs (phase 1)."""
        return PatternHistogram.from_gamma(self._gamma_of(pairs), self.radix)

    def summarize_random(self, sims: pd.DataFrame) -> tuple[list[np.ndarray], int]:
        """Level counts (index 0 = null) of random pairs, per comparison, and their number."""
        gamma = self._gamma_of(sims)
        counts = [np.bincount(gamma[:, k].astype(np.int64) + 1, minlength=s.n_levels + 1)
                  for k, s in enumerate(self._specs())]
        return counts, len(sims)

    def fit_summaries(self, summaries: Sequence[Any], random: Sequence[Any],
                      value_counts: Mapping[str, pd.Series], context: FitContext) -> None:
        """Fit on the summed histograms, with u from the random-pair level counts and the
        term frequencies from the value counts (phase 1 to 2, on the client)."""
        merged = PatternHistogram.merge(list(summaries)) if summaries else \
            PatternHistogram(self.radix)
        specs = self._specs()
        u_counts = [np.sum([r[0][k] for r in random], axis=0) for k in range(len(specs))] \
            if random else None
        n_u = int(sum(r[1] for r in random))
        self.set_blocking_columns(_blocking_columns(context.keys))
        self.fit_histogram(merged, u_counts, n_u_pairs=n_u)
        if self.tf_index_ is not None:
            counts = value_counts.get(specs[self.tf_index_].name)
            if counts is not None:
                total = float(counts.sum())
                self.set_tf(counts / total if total else counts.astype(np.float64))

    # -- scoring ------------------------------------------------------------------------

    def weight_tables(self) -> list[np.ndarray]:
        """log2(m/u) per comparison with 0 in front for the null level."""
        self._require_fitted()
        return [np.concatenate([[0.0], np.log2(np.clip(m, PROB_FLOOR, 1.0))
                                - np.log2(np.clip(u, PROB_FLOOR, 1.0))])
                for m, u in zip(self.m_ or (), self.u_ or ())]

    @property
    def prior_weight(self) -> float:
        self._require_fitted()
        lam = float(self.lambda_)  # type: ignore[arg-type]
        return math.log2(lam) - math.log2(1.0 - lam)

    def match_weight_of(self, gamma: np.ndarray, tf_values: Any = None) -> np.ndarray:
        """Match weight of level vectors; ``tf_values`` = the tf column's value per pair."""
        tables = self.weight_tables()
        w = np.full(len(gamma), self.prior_weight)
        for j, t in enumerate(tables):
            w += t[gamma[:, j].astype(np.int64) + 1]
        k = self.tf_index_
        if k is not None and self.tf_ is not None and tf_values is not None:
            top = gamma[:, k] == self._specs()[k].n_levels - 1
            if top.any():
                vals = pd.Series(np.asarray(tf_values, dtype=object)[top]).astype("string")
                freq = vals.map(self.tf_).to_numpy(np.float64, na_value=np.nan)
                floor = float(self.tf_.min()) if len(self.tf_) else PROB_FLOOR
                freq = np.where(np.isnan(freq), floor, freq)
                u_rand = self.u_random_[k][-1] if self.u_random_ is not None else self.u_[k][-1]  # type: ignore[index]
                w[top] += math.log2(max(float(u_rand), PROB_FLOOR)) - np.log2(
                    np.maximum(freq, PROB_FLOOR))
        return w

    def apply(self, pairs: pd.DataFrame, tf_values: Any = None) -> pd.DataFrame:
        """``pairs`` with ``match_weight`` and ``match_probability`` added (a new frame).

        For the tf adjustment the tf comparison's value per pair is taken from
        ``tf_values`` or the column the engine adds
        (:func:`~erblock.matchers.scoring.base.value_column`); without either it is skipped
        with a warning.
        """
        self._require_fitted()
        gamma = self._gamma_of(pairs)
        tf_col = self._tf_column()
        if tf_values is None and tf_col is not None and tf_col in pairs.columns:
            tf_values = pairs[tf_col].to_numpy()
        if self.tf_index_ is not None and self.tf_ is not None and tf_values is None:
            warnings.warn(
                f"apply: the model adjusts {self.tf_adjust!r} by term frequency but no values "
                "were given (tf_values=...); scoring without the adjustment",
                UserWarning, stacklevel=2,
            )
        w = self.match_weight_of(gamma, tf_values)
        out = pairs.drop(columns=model_columns(pairs)).copy()
        out["match_weight"] = w
        out["match_probability"] = probability(w)
        return out

    def predict_proba(self, pairs: pd.DataFrame, tf_values: Any = None) -> np.ndarray:
        """match_probability of each pair."""
        return self.apply(pairs, tf_values)["match_probability"].to_numpy()

    def predict(self, pairs: pd.DataFrame, threshold: float = 0.5,
                tf_values: Any = None) -> np.ndarray:
        """Default decision: ``match_probability >= threshold`` (boolean array)."""
        return self.predict_proba(pairs, tf_values) >= threshold

    def summary(self) -> pd.DataFrame:
        """One row per comparison level: m, u, match weight (log2 m/u), like Splink's chart."""
        self._require_fitted()
        rows = []
        for k, (s, m, u) in enumerate(zip(self._specs(), self.m_ or (), self.u_ or ())):
            for level, label in enumerate(s.labels()):
                rows.append({"comparison": s.name, "level": level, "label": label,
                             "m": float(m[level]), "u": float(u[level]),
                             "u_random": float(self.u_random_[k][level]) if self.u_random_
                             else float(u[level]),
                             "match_weight": math.log2(max(m[level], PROB_FLOOR))
                             - math.log2(max(u[level], PROB_FLOOR))})
        return pd.DataFrame(rows)

    def report(self) -> dict[str, Any]:
        """A small JSON-ready summary for the run report (no tf table)."""
        self._require_fitted()
        return {
            "kind": self.kind,
            "lambda": self.lambda_,
            "n_iter": self.n_iter_,
            "converged": self.converged_,
            "n_candidates": self.n_candidates_,
            "n_patterns": self.n_patterns_,
            "n_u_pairs": self.n_u_pairs_,
            "fixed_u": self.fixed_u_,
            "tf_adjust": self.tf_adjust,
            "weights": {s.name: [round(float(x), 4) for x in t[1:]]
                        for s, t in zip(self._specs(), self.weight_tables())},
        }

    # -- persistence --------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Everything needed to score again (settings, levels, parameters, tf table)."""
        d: dict[str, Any] = {
            "kind": self.kind,
            "format": 1,
            "settings": {"levels": {k: list(v) for k, v in self.levels.items()},
                         "tf_adjust": self.tf_adjust, "fix_u": self.fix_u,
                         "u_pairs": self.u_pairs, "max_iter": self.max_iter, "tol": self.tol,
                         "lambda_init": self.lambda_init, "seed": self.seed},
            "specs": [s.to_dict() for s in self.specs_] if self.specs_ is not None else None,
        }
        if self.fitted:
            d["params"] = {
                "lambda": self.lambda_,
                "m": [x.tolist() for x in self.m_ or ()],
                "u": [x.tolist() for x in self.u_ or ()],
                "u_random": [x.tolist() for x in self.u_random_ or ()],
                "fixed_u": self.fixed_u_,
                "n_iter": self.n_iter_, "converged": self.converged_,
                "n_candidates": self.n_candidates_, "n_patterns": self.n_patterns_,
                "n_u_pairs": self.n_u_pairs_,
            }
            if self.tf_ is not None:
                d["tf"] = {"values": self.tf_.index.tolist(), "freq": self.tf_.tolist()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FellegiSunter:
        if d.get("kind") != cls.kind:
            raise ValueError(f"not a Fellegi-Sunter model: kind={d.get('kind')!r}")
        model = cls(**d["settings"])
        if d.get("specs") is not None:
            model.specs_ = tuple(LevelSpec.from_dict(s) for s in d["specs"])
            model.tf_index_ = model._tf_index(model.specs_)
        p = d.get("params")
        if p:
            model.lambda_ = float(p["lambda"])
            model.m_ = [np.asarray(x, dtype=np.float64) for x in p["m"]]
            model.u_ = [np.asarray(x, dtype=np.float64) for x in p["u"]]
            model.u_random_ = [np.asarray(x, dtype=np.float64) for x in p.get("u_random") or p["u"]]
            model.fixed_u_ = p.get("fixed_u")
            model.n_iter_, model.converged_ = int(p["n_iter"]), bool(p["converged"])
            model.n_candidates_, model.n_patterns_ = int(p["n_candidates"]), int(p["n_patterns"])
            model.n_u_pairs_ = int(p["n_u_pairs"])
        if d.get("tf"):
            model.tf_ = pd.Series(d["tf"]["freq"], index=pd.Index(d["tf"]["values"], dtype=str),
                                  dtype=np.float64)
        return model


def _blocking_columns(keys: Sequence[Any]) -> set[str] | None:
    """Columns any blocking key reads (None when a key does not declare them)."""
    cols: set[str] = set()
    for k in keys:
        if not k.columns:
            return None
        cols.update(k.columns)
    return cols
