"""Comparison levels, level-vector histograms and EM: the numerical core of Fellegi-Sunter.

A comparison's similarity is cut into levels by ascending thresholds (level 0 below the
first, the top level at or above the last; ``-1`` = null, no evidence). A pair's level
vector γ is encoded as one int64 (mixed radix) so a reduce task can summarise any number
of pairs by a :class:`PatternHistogram` (distinct γ and their counts), and :func:`fit_em`
runs EM on such a histogram. Because pairs with the same γ have the same posterior, EM
over the histogram *is* EM over the pairs (tested). See :mod:`erblock.matchers.scoring`
for the model built on these pieces. Pure numpy: no Dask, no pandas.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from .comparisons import Comparison
from .methods import METHODS

__all__ = [
    "DEFAULT_THRESHOLDS",
    "LevelSpec",
    "PatternHistogram",
    "default_m",
    "fit_em",
    "gamma_matrix",
    "log_likelihood",
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
    if isinstance(thresholds, (int, float)) and not isinstance(thresholds, bool):
        thresholds = (thresholds,)
    try:
        ts = tuple(sorted(float(t) for t in thresholds))
    except (TypeError, ValueError):
        raise TypeError(
            f"levels[{name!r}] must be a sequence of similarity thresholds in (0, 1], "
            f"got {thresholds!r}"
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
    (names and emails); False: none."""
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
        if wanted is None:
            use_tf = bool(c.kernel.tf)
        else:
            use_tf = c.name in wanted or c.column in wanted
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
            f"levels: {sorted(unknown)} name no comparison; use a comparison's result name "
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


# ------------------------------------------------------------------------------- EM

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


def log_likelihood(gamma: np.ndarray, counts: np.ndarray, m: Sequence[np.ndarray],
                   u: Sequence[np.ndarray], lam: float) -> float:
    """Log likelihood of the weighted level vectors under the two-class mixture."""
    idx = gamma.astype(np.int64) + 1
    lm = np.full(len(gamma), math.log(lam))
    lu = np.full(len(gamma), math.log1p(-lam))
    for k in range(gamma.shape[1]):
        lm += _log_table(m[k])[idx[:, k]]
        lu += _log_table(u[k])[idx[:, k]]
    return float(np.sum(np.asarray(counts, dtype=np.float64) * np.logaddexp(lm, lu)))


def _moved(new: Sequence[np.ndarray], old: Sequence[np.ndarray]) -> float:
    """The largest change of any probability between two lists of level arrays."""
    if not len(new):
        return 0.0
    return float(np.max(np.abs(np.concatenate(new) - np.concatenate(old))))


def fit_em(
    gamma: np.ndarray,
    counts: np.ndarray,
    n_levels: Sequence[int],
    u: Sequence[np.ndarray],
    m: Sequence[np.ndarray] | None = None,
    lam: float = 0.1,
    fix_u: bool | Sequence[bool] = True,
    max_iter: int = 200,
    tol: float = 1e-4,
    pseudo: float = 0.0,
    fix_m: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """EM for λ and m (and the u not fixed) over weighted level vectors.

    ``gamma``: (rows × comparisons) levels 0 … n − 1, −1 = null (nothing else);
    ``counts``: weight of each row (the histogram counts, or ones for pair-level EM: the
    result is the same). ``fix_u``: keep u fixed for all comparisons, none, or per
    comparison (a bool each); ``fix_m``: per comparison, keep the given ``m`` (e.g.
    estimated where the blocking did not select on it). ``pseudo`` is added to every
    level's expected matches in the M-step. Returns a dict with ``lambda``, ``m``, ``u``
    (lists of arrays per comparison), ``n_iter``, ``converged`` and ``loglik``.
    """
    gamma = np.asarray(gamma)
    w = np.asarray(counts, dtype=np.float64)
    K = gamma.shape[1]
    if len(n_levels) != K or len(u) != K:
        raise ValueError("fit_em: n_levels and u must have one entry per comparison")
    u = [np.clip(np.asarray(x, dtype=np.float64), PROB_FLOOR, 1.0) for x in u]
    if m is None:
        m = [default_m(n) for n in n_levels]
    m = [np.asarray(x, dtype=np.float64).copy() for x in m]
    fixed = [bool(fix_u)] * K if isinstance(fix_u, (bool, np.bool_)) else [bool(f) for f in fix_u]
    if len(fixed) != K:
        raise ValueError("fit_em: fix_u must be a bool or one bool per comparison")
    keep_m = [False] * K if fix_m is None else [bool(f) for f in fix_m]
    if len(keep_m) != K:
        raise ValueError("fit_em: fix_m must be one bool per comparison")
    lam = float(min(max(lam, 1e-6), 1 - 1e-6))
    total = w.sum()
    converged = False
    if any(len(m[k]) != n or len(u[k]) != n for k, n in enumerate(n_levels)):
        raise ValueError("fit_em: m and u must have n_levels[k] values for comparison k")
    if len(gamma) and K and (gamma.min() < -1
                             or (gamma.max(axis=0) >= np.asarray(n_levels)).any()):
        raise ValueError("fit_em: levels must lie in 0 … n_levels − 1, or −1 for null")
    # One flat table for all comparisons: comparison k's null level at off[k], its
    # levels after it. Each iteration takes the logs of every m at once and counts every
    # level with one bincount (a bin sums the same rows in the same order as a count per
    # comparison would), so the fit is the same to the last bit, with a few numpy calls
    # an iteration instead of a few per comparison.
    off = np.cumsum([0, *[n + 1 for n in n_levels[:-1]]], dtype=np.int64)
    slots = int(sum(n + 1 for n in n_levels))
    pos = [np.ascontiguousarray(gamma[:, k], dtype=np.int64) + 1 + off[k] for k in range(K)]
    every = np.concatenate(pos) if K else np.zeros(0, dtype=np.int64)
    one = np.ones(1)

    def log_flat(ps: Sequence[np.ndarray]) -> np.ndarray:
        flat = np.concatenate([x for p in ps for x in (one, p)]) if K else np.zeros(0)
        return np.log(np.clip(flat, PROB_FLOOR, 1.0))  # ln 1 = 0 at the null levels

    lu = log_flat(u)  # kept while every u is fixed
    free_u = not all(fixed)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (n_iter is reported)
        table = log_flat(m) - lu
        logit = np.zeros(len(w))
        for k in range(K):
            logit += table[pos[k]]
        logit = logit + math.log(lam) - math.log1p(-lam)
        p = 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))
        wp, wq = w * p, w * (1.0 - p)
        new_lam = float(wp.sum() / total) if total > 0 else lam
        cm = np.bincount(every, weights=np.tile(wp, K), minlength=slots)
        cu = np.bincount(every, weights=np.tile(wq, K), minlength=slots) if free_u else cm
        new_m, new_u = [], []
        for k in range(K):
            a, nk = int(off[k]) + 1, n_levels[k]
            mk = cm[a:a + nk] + pseudo
            sm = mk.sum()
            new_m.append(m[k] if keep_m[k] or sm <= 0 else mk / sm)
            if fixed[k]:
                new_u.append(u[k])
            else:
                uk = cu[a:a + nk]
                su = uk.sum()
                new_u.append(np.clip(uk / su, PROB_FLOOR, 1.0) if su > 0 else u[k])
        delta = max(abs(new_lam - lam), _moved(new_m, m), _moved(new_u, u))
        u = new_u
        if free_u:
            lu = log_flat(u)
        lam, m = min(max(new_lam, 1e-9), 1 - 1e-9), new_m
        if delta < tol:
            converged = True
            break
    return {"lambda": lam, "m": m, "u": u, "n_iter": it, "converged": converged,
            "loglik": log_likelihood(gamma, w, m, u, lam) if len(w) else 0.0}


def default_m(n_levels: int) -> np.ndarray:
    """Starting (and untrained) m: 90 % on the top level, the rest halving downwards."""
    if n_levels == 1:
        return np.ones(1)
    rest = 0.5 ** np.arange(n_levels - 1, 0, -1, dtype=np.float64)
    rest = 0.1 * rest / rest.sum()
    return np.concatenate([rest, [0.9]])
