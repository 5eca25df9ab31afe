"""Comparison levels, level-vector histograms and their weights: Fellegi-Sunter's numbers.

A comparison's similarity is cut into levels by ascending thresholds (level 0 below the
first, the top level at or above the last; ``-1`` = null, no evidence). A pair's level
vector γ is encoded as one int64 (mixed radix) so a reduce task can summarise any number
of pairs by a :class:`PatternHistogram` (distinct γ and their counts), and
:func:`erblock.matchers.em.fit_em` runs EM on such a histogram. Because pairs with the same
γ have the same posterior, EM over the histogram *is* EM over the pairs (tested). See
:mod:`erblock.matchers.scoring` for the model built on these pieces. Pure numpy: no Dask,
no pandas.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..scalars import is_number
from .comparisons import Comparison
from .methods import METHODS

__all__ = [
    "DEFAULT_THRESHOLDS",
    "LevelSpec",
    "PatternHistogram",
    "default_m",
    "gamma_matrix",
    "log_odds",
    "posterior",
    "resolve_levels",
]

#: Default level thresholds per comparison method (the top one is the exact agreement),
#: from the method registry.
DEFAULT_THRESHOLDS: dict[str, tuple[float, ...]] = {n: m().levels for n, m in METHODS.items()}
EPS = 1e-6  # thresholds are met within this tolerance (float32 similarities)
PROB_FLOOR = 1e-9  # m and u are kept in [floor, 1] so weights stay finite


# ----------------------------------------------------------------------------- levels


@dataclass(frozen=True)
class LevelSpec:
    """The levels of one comparison: its result column, ascending thresholds on its
    similarity, a label per level (lowest first) and whether term frequencies adjust its
    exact level."""

    name: str
    column: str
    method: str
    thresholds: tuple[float, ...]
    names: tuple[str, ...] = ()
    tf: bool = False

    @property
    def n_levels(self) -> int:
        """Non-null levels (``len(thresholds) + 1``)."""
        return len(self.thresholds) + 1

    def labels(self) -> list[str]:
        """Readable label of each non-null level, lowest first."""
        if len(self.names) == self.n_levels:
            return list(self.names)
        out = [f"< {self.thresholds[0]:g}"]
        for t in self.thresholds:
            out.append("exact" if t >= 1.0 and self.method != "numeric" else f">= {t:g}")
        return out

    def levels(self, sims: np.ndarray) -> np.ndarray:
        """Level of every similarity (int8; −1 for a missing similarity)."""
        sims = np.asarray(sims, dtype=np.float64)
        out = np.zeros(sims.shape, dtype=np.int8)
        for t in self.thresholds:
            out += (sims >= t - EPS).astype(np.int8)
        out[np.isnan(sims)] = -1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "column": self.column, "method": self.method,
                "thresholds": list(self.thresholds), "names": list(self.names),
                "tf": self.tf}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LevelSpec:
        return cls(str(d["name"]), str(d["column"]), str(d["method"]),
                   tuple(float(t) for t in d["thresholds"]),
                   tuple(str(x) for x in d.get("names", ())), bool(d.get("tf", False)))


def check_thresholds(name: str, thresholds: Any) -> tuple[float, ...]:
    """``thresholds`` (one number or a sequence of them) as ascending Python floats.

    Booleans and strings are not thresholds (``True`` would be 1.0, ``"1"`` a digit).
    """
    if is_number(thresholds):
        thresholds = (thresholds,)
    try:
        if isinstance(thresholds, (str, bytes)) or not all(is_number(t) for t in thresholds):
            raise TypeError
        ts = tuple(sorted(float(t) for t in thresholds))
    except (TypeError, ValueError):
        raise TypeError(
            f"levels[{name!r}] must be a number or a sequence of numbers, similarity "
            f"thresholds in (0, 1] (not booleans or strings), got {thresholds!r}"
        ) from None
    if not ts or any(not (0.0 < t <= 1.0) for t in ts) or len(set(ts)) != len(ts):
        raise ValueError(
            f"levels[{name!r}] must be distinct thresholds in (0, 1] (e.g. (0.8, 0.92, 1.0)), "
            f"got {thresholds!r}"
        )
    return ts


def resolve_levels(comparisons: Sequence[Comparison], levels: Mapping[str, Any] | None,
                   tf: Sequence[str] | Literal[False] | None = None
                   ) -> tuple[LevelSpec, ...]:
    """Level specs of ``comparisons``: each method's default levels and labels unless
    ``levels`` overrides them (by result name or column). ``tf``: the comparisons (names
    or columns) whose exact level term frequencies adjust; None: each method's default
    (names and emails) where the top level is exact (threshold 1.0); False: none. A
    comparison named in ``tf`` must have an exact level."""
    levels = dict(levels or {})
    wanted = None if tf is None else set(tf or ())
    used: set[str] = set()
    out = []
    for c in comparisons:
        key = c.name if c.name in levels else (c.column if c.column in levels else None)
        if key is not None:
            used.add(key)
            ts, labels = check_thresholds(key, levels[key]), tuple[str, ...]()
        else:
            ts, labels = c.kernel.levels, c.kernel.labels
        exact = ts[-1] >= 1.0  # tf adjusts the exact level: the top one must be it
        if wanted is None:
            use_tf = bool(c.kernel.tf) and exact  # the default: dropped where not exact
        else:
            use_tf = c.name in wanted or c.column in wanted
            if use_tf and not exact:
                raise ValueError(
                    f"tf_adjust: {c.name!r} has no exact level (its top threshold is "
                    f"{ts[-1]:g}); term frequencies adjust the exact level: add 1.0 to "
                    f"its thresholds in levels= or leave it out of tf_adjust")
        out.append(LevelSpec(c.name, c.column, c.method, tuple(ts), tuple(labels), use_tf))
    if wanted:
        known = {c.name for c in comparisons} | {c.column for c in comparisons}
        if wanted - known:
            raise ValueError(f"tf_adjust: {sorted(wanted - known)} names no comparison; use "
                             f"one of {sorted({c.name for c in comparisons})} (or its column)")
    unknown = set(levels) - used
    if unknown:
        names = [c.name for c in comparisons] + [c.column for c in comparisons]
        raise ValueError(
            f"levels: {sorted(unknown, key=str)} name no comparison; use a comparison's result name "
            f"or column, one of {sorted(set(names))}"
        )
    radix = [s.n_levels + 1 for s in out]
    if math.prod(radix) >= 2**62:
        raise ValueError("levels: too many comparisons × levels to encode a level vector "
                         "in 62 bits; use fewer thresholds")
    return tuple(out)


def gamma_matrix(specs: Sequence[LevelSpec], sims: Sequence[np.ndarray]) -> np.ndarray:
    """(pairs × comparisons) int8 level matrix from the similarity arrays."""
    n = len(sims[0]) if sims else 0
    out = np.empty((n, len(specs)), dtype=np.int8)
    for k, (s, v) in enumerate(zip(specs, sims)):
        out[:, k] = s.levels(v)
    return out


# ------------------------------------------------------------------------- histogram


@dataclass
class PatternHistogram:
    """Counts of distinct level vectors: ``codes`` (int64, mixed radix) and ``counts``.

    A level vector γ is encoded as Σ_k (γ_k + 1) · stride_k with radix ``levels_k + 1``
    (digit 0 = null). Histograms from any number of tasks merge by :meth:`merge`.
    """

    radix: tuple[int, ...]
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def strides(self) -> np.ndarray:
        return np.cumprod((1, *self.radix[:-1])).astype(np.int64) if self.radix else np.zeros(0)

    @classmethod
    def from_gamma(cls, gamma: np.ndarray, radix: Sequence[int]) -> PatternHistogram:
        return cls.from_codes(cls.codes_of(gamma, radix), radix)

    @staticmethod
    def codes_of(gamma: np.ndarray, radix: Sequence[int]) -> np.ndarray:
        """The code of every level vector (row of ``gamma``), one column at a time (no
        int64 copy of the whole matrix)."""
        codes = np.zeros(len(gamma), dtype=np.int64)
        stride = 1
        for k, r in enumerate(radix):
            codes += (gamma[:, k].astype(np.int64) + 1) * stride
            stride *= int(r)
        return codes

    @classmethod
    def from_codes(cls, codes: np.ndarray, radix: Sequence[int]) -> PatternHistogram:
        """The histogram of level-vector codes (:meth:`codes_of`), codes ascending."""
        h = cls(tuple(int(r) for r in radix))
        if len(codes) == 0:
            return h
        counted = pd.Series(codes, copy=False).value_counts(sort=False)  # a hash table
        order = np.argsort(counted.index.to_numpy(), kind="stable")
        h.codes = counted.index.to_numpy(dtype=np.int64)[order]
        h.counts = counted.to_numpy(dtype=np.int64)[order]
        return h

    def gamma(self) -> np.ndarray:
        """Decode the distinct level vectors (rows aligned with ``counts``)."""
        out = np.empty((len(self.codes), len(self.radix)), dtype=np.int8)
        rest = self.codes.copy()
        for k, r in enumerate(self.radix):
            out[:, k] = rest % r - 1
            rest //= r
        return out

    @staticmethod
    def merge(hists: Sequence[PatternHistogram]) -> PatternHistogram:
        """Sum histograms (all of the same radix)."""
        if not hists:
            raise ValueError("merge: no histograms")
        radix = hists[0].radix
        if any(h.radix != radix for h in hists):
            raise ValueError("merge: histograms of different level layouts")
        codes = np.concatenate([h.codes for h in hists])
        counts = np.concatenate([h.counts for h in hists])
        uniq, inv = np.unique(codes, return_inverse=True)
        return PatternHistogram(radix, uniq, np.bincount(inv, weights=counts,
                                                         minlength=len(uniq)).astype(np.int64))

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.counts.nbytes)


# ---------------------------------------------------------------- weights of level vectors

#: pseudo-count added to every level's expected matches in the M-step: a level never seen
#: among the matches keeps a small, finite m (no infinite weights)
M_PSEUDO = 0.1


def _log_table(p: np.ndarray) -> np.ndarray:
    """log of probabilities per level with a 0 in front for the null level."""
    return np.concatenate([[0.0], np.log(np.clip(p, PROB_FLOOR, 1.0))])


def log_odds(gamma: np.ndarray, m: Sequence[np.ndarray], u: Sequence[np.ndarray]
             ) -> np.ndarray:
    """Σ_k ln(m_k[γ_k] / u_k[γ_k]) of every level vector (null levels add nothing)."""
    idx = gamma.astype(np.int64) + 1
    out = np.zeros(len(gamma))
    for k in range(gamma.shape[1]):
        out += _log_table(m[k])[idx[:, k]] - _log_table(u[k])[idx[:, k]]
    return out


def posterior(gamma: np.ndarray, m: Sequence[np.ndarray], u: Sequence[np.ndarray],
              lam: float) -> np.ndarray:
    """P(match | γ) of every level vector under prior ``lam``."""
    logit = log_odds(gamma, m, u) + math.log(lam) - math.log1p(-lam)
    return 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))


def default_m(n_levels: int) -> np.ndarray:
    """Starting (and untrained) m: 90 % on the top level, the rest halving downwards."""
    if n_levels == 1:
        return np.ones(1)
    rest = 0.5 ** np.arange(n_levels - 1, 0, -1, dtype=np.float64)
    rest = 0.1 * rest / rest.sum()
    return np.concatenate([rest, [0.9]])


def kl_bits(m: Any, u: Any) -> float:
    """KL divergence of level shares ``m`` from ``u`` in bits (u floored at
    ``PROB_FLOOR``): how far matches' levels are from random pairs'."""
    mk = np.asarray(m, dtype=np.float64)
    uk = np.clip(np.asarray(u, dtype=np.float64), PROB_FLOOR, 1.0)
    pos = mk > 0
    return float(np.sum(mk[pos] * np.log2(mk[pos] / uk[pos])))
