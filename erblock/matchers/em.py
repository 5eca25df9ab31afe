"""EM for the two-class Fellegi-Sunter mixture over weighted level vectors.

:func:`fit_em` runs on a :class:`~erblock.matchers.levels.PatternHistogram` (distinct level
vectors γ and their counts) or on pairs (counts of one): the same fit, since pairs with the
same γ have the same posterior. It stops when no parameter moves by more than ``tol``
*relative to its size* (to :data:`REL_FLOOR` at least; λ relative to min(λ, 1 − λ)): an
absolute rule calls a fit with λ ≈ 0.02 and u ≈ 10⁻³ converged while both still drift by
a tenth (Abt-Buy stopped after 534 steps at F1 0.38; run on to a fixed point, 0.54).
Where EM crawls, SQUAREM (Varadhan & Roland 2008, scheme S3) extrapolates from two EM
steps and keeps the result only if it does not lower the objective (the likelihood plus
the pseudo-counts' term, what an EM step never lowers): where the likelihood has one
optimum, the same fixed point in a fraction of the steps (each cycle also evaluates the
objective twice, about an E-step each). Where it has several, the path may end in
another one, as a different start would; the training's several starting λ pick the best
by likelihood either way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .levels import PROB_FLOOR, default_m

__all__ = ["REL_FLOOR", "fit_em", "squarem_step"]

#: changes are measured relative to a parameter's value, or to this where it is smaller
REL_FLOOR = 1e-3


def _sums(values: np.ndarray, seg: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Each comparison's sum of its level values (``values`` one after the other, ``seg``
    the comparison of each), equal to the bit to ``values[a:b].sum()``: one sequential
    bincount, and numpy's own sum where a comparison has 8 levels or more (numpy sums
    shorter arrays in order, longer ones pairwise)."""
    out = np.bincount(seg, weights=values, minlength=len(n))
    if (n >= 8).any():
        ends = np.cumsum(n)
        for k in np.flatnonzero(n >= 8).tolist():
            out[k] = values[ends[k] - n[k]:ends[k]].sum()
    return out


def _check(gamma: np.ndarray, n_levels: Sequence[int], u: Sequence[np.ndarray],
           m: Sequence[np.ndarray], fixed: Sequence[bool], keep_m: Sequence[bool]) -> None:
    K = gamma.shape[1]
    if len(n_levels) != K or len(u) != K:
        raise ValueError("fit_em: n_levels and u must have one entry per comparison")
    if len(fixed) != K:
        raise ValueError("fit_em: fix_u must be a bool or one bool per comparison")
    if len(keep_m) != K:
        raise ValueError("fit_em: fix_m must be one bool per comparison")
    if any(len(m[k]) != n or len(u[k]) != n for k, n in enumerate(n_levels)):
        raise ValueError("fit_em: m and u must have n_levels[k] values for comparison k")
    if len(gamma) and K and (gamma.min() < -1
                             or (gamma.max(axis=0) >= np.asarray(n_levels)).any()):
        raise ValueError("fit_em: levels must lie in 0 … n_levels − 1, or −1 for null")


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
    accelerate: bool = True,
) -> dict[str, Any]:
    """EM for λ and m (and the u not fixed) over weighted level vectors.

    Parameters
    ----------
    gamma, counts
        (rows × comparisons) levels 0 … n − 1, −1 = null (no evidence); the weight of
        each row (the histogram counts, or ones for pair-level EM: the result is the same).
    n_levels, u, m, lam
        Levels per comparison; u (the start where not fixed), m and λ to start from
        (m: :func:`~erblock.matchers.levels.default_m` when None).
    fix_u, fix_m
        Keep u fixed for all comparisons, none, or per comparison (a bool each); per
        comparison, keep the given m (e.g. estimated where the blocking did not select).
    max_iter, tol
        At most ``max_iter`` EM steps; converged when one step moves no parameter by
        ``tol`` relative to its value (:data:`REL_FLOOR` at least).
    pseudo
        Added to every level's expected matches in the M-step (the fit then maximises
        the likelihood plus ``pseudo`` · Σ ln m over the free m).
    accelerate
        SQUAREM steps (module doc); False: plain EM, step by step.

    Returns
    -------
    dict
        ``lambda``, ``m``, ``u`` (lists of arrays per comparison), ``n_iter`` (EM steps
        taken), ``converged`` and ``loglik``.
    """
    gamma = np.asarray(gamma)
    w = np.asarray(counts, dtype=np.float64)
    K = gamma.shape[1]
    u = [np.clip(np.asarray(x, dtype=np.float64), PROB_FLOOR, 1.0) for x in u]
    if m is None:
        m = [default_m(n) for n in n_levels]
    m = [np.asarray(x, dtype=np.float64).copy() for x in m]
    fixed = [bool(fix_u)] * K if isinstance(fix_u, (bool, np.bool_)) else [bool(f) for f in fix_u]
    keep_m = [False] * K if fix_m is None else [bool(f) for f in fix_m]
    _check(gamma, n_levels, u, m, fixed, keep_m)
    fit = _Fit(gamma, w, n_levels, u, fixed, keep_m, pseudo)
    state: State = (float(min(max(lam, 1e-6), 1 - 1e-6)), fit.flat(m), fit.flat(u))
    converged = False
    while fit.steps < max_iter:
        one, delta = fit.step(*state)
        if delta < tol or not accelerate or fit.steps + 2 > max_iter:
            state, converged = one, delta < tol
            if converged:
                break
            continue
        two, delta = fit.step(*one)
        if delta < tol:
            state, converged = two, True
            break
        state = fit.squarem(state, one, two)
    lam, mf, uf = state
    return {"lambda": lam, "m": fit.lists(mf), "u": fit.lists(uf), "n_iter": fit.steps,
            "converged": converged, "loglik": fit.loglik(lam, mf, uf) if len(w) else 0.0}


def squarem_step(t0: np.ndarray, t1: np.ndarray, t2: np.ndarray
                 ) -> tuple[float, np.ndarray, np.ndarray] | None:
    """SQUAREM's (S3) step length α and the differences ``r``, ``v`` from a packed point
    ``t0`` and its two EM steps: the extrapolated point is ``t0 − 2αr + α²v``. None
    where that point is ``t2`` itself (α = −1, or no curvature to extrapolate along)."""
    r, v = t1 - t0, t2 - 2.0 * t1 + t0
    nv = float(np.linalg.norm(v))
    if nv == 0.0 or not np.isfinite(nv):
        return None
    alpha = min(-float(np.linalg.norm(r)) / nv, -1.0)
    return None if alpha == -1.0 else (alpha, r, v)


#: (λ, m, u) of a fit, m and u flat (:class:`_Fit`)
State = tuple[float, np.ndarray, np.ndarray]


class _Fit:
    """The EM map of one fit and its objective, on flat parameter vectors: comparison k's
    null level at ``off[k]`` (held at 1, so its log is 0), its levels after it. A step
    takes the logs of every m at once, counts every level with one bincount (a bin sums
    the same rows in the same order as a count per comparison would) and normalises every
    comparison at once (:func:`_sums`): the plain formulas to the last bit, with a few
    numpy calls a step instead of a few per comparison."""

    def __init__(self, gamma: np.ndarray, w: np.ndarray, n_levels: Sequence[int],
                 u: Sequence[np.ndarray], fixed: Sequence[bool], keep_m: Sequence[bool],
                 pseudo: float) -> None:
        K = gamma.shape[1]
        self.w, self.total, self.pseudo = w, float(w.sum()), pseudo
        self.n = np.asarray(list(n_levels), dtype=np.int64).reshape(K)
        self.off = np.cumsum(np.r_[0, self.n[:-1] + 1], dtype=np.int64)[:K]
        self.slots = int((self.n + 1).sum())
        self.pos = [np.ascontiguousarray(gamma[:, k], dtype=np.int64) + 1 + self.off[k]
                    for k in range(K)]
        self.every = np.concatenate(self.pos) if K else np.zeros(0, dtype=np.int64)
        #: the level slots (not the null ones) in order, and their comparison
        self.seg = np.repeat(np.arange(K, dtype=np.int64), self.n)
        self.level = (np.repeat(self.off + 1, self.n)
                      + np.arange(len(self.seg)) - np.repeat(np.cumsum(self.n) - self.n, self.n))
        held_m, fixed_u = np.asarray(keep_m, dtype=bool), np.asarray(fixed, dtype=bool)
        self.held_m, self.fixed_u = held_m[self.seg], fixed_u[self.seg]  # per level slot
        self.free_m, self.free_u = ~held_m, ~fixed_u  # per comparison
        self.lu_fixed = None if self.free_u.any() else self._log(self.flat(u))
        self.steps = 0

    def flat(self, ps: Sequence[np.ndarray]) -> np.ndarray:
        """Per-comparison level arrays as one flat vector (1 at the null slots)."""
        out = np.ones(self.slots)
        if len(self.level):
            out[self.level] = np.concatenate([np.asarray(p, dtype=np.float64) for p in ps])
        return out

    def lists(self, flat: np.ndarray) -> list[np.ndarray]:
        """A flat vector as per-comparison level arrays."""
        return [flat[a + 1:a + 1 + n].copy() for a, n in zip(self.off.tolist(), self.n.tolist())]

    @staticmethod
    def _log(flat: np.ndarray) -> np.ndarray:
        return np.log(np.minimum(np.maximum(flat, PROB_FLOOR), 1.0))  # ln 1 = 0: null slots

    def _logs_u(self, uf: np.ndarray) -> np.ndarray:
        return self._log(uf) if self.lu_fixed is None else self.lu_fixed

    def _rows(self, table: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.w))
        for p in self.pos:  # in order, as the plain formulas add them
            out += table[p]
        return out

    def _normalised(self, counts: np.ndarray, old: np.ndarray, held: np.ndarray,
                    floor: float | None) -> np.ndarray:
        """``old`` with each comparison not ``held`` set to its level ``counts`` over their
        sum (clipped to [floor, 1] when given), where that sum is positive."""
        sums = _sums(counts, self.seg, self.n)
        take = ~held & (sums > 0)[self.seg]
        if not take.any():
            return old
        x = counts / np.where(sums > 0, sums, 1.0)[self.seg]  # the others are not taken
        if floor is not None:
            x = np.minimum(np.maximum(x, floor), 1.0)
        out = old.copy()
        out[self.level[take]] = x[take]
        return out

    def step(self, lam: float, m: np.ndarray, u: np.ndarray) -> tuple[State, float]:
        """One EM step from (λ, m, u), and the largest relative change it made."""
        self.steps += 1
        logit = self._rows(self._log(m) - self._logs_u(u))
        logit = logit + math.log(lam) - math.log1p(-lam)
        p = 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))
        wp, wq = self.w * p, self.w * (1.0 - p)
        new_lam = float(wp.sum() / self.total) if self.total > 0 else lam
        K = len(self.pos)
        cm = np.bincount(self.every, weights=np.tile(wp, K), minlength=self.slots)
        new_m = self._normalised(cm[self.level] + self.pseudo, m, self.held_m, None)
        new_u = u
        if self.free_u.any():
            cu = np.bincount(self.every, weights=np.tile(wq, K), minlength=self.slots)
            new_u = self._normalised(cu[self.level], u, self.fixed_u, PROB_FLOOR)
        # λ's change relative to the smaller of λ and 1 − λ (a share near 1 still drifts);
        # every probability's relative to its value (the null slots stay 1: no change)
        both, old = np.concatenate([new_m, new_u]), np.concatenate([m, u])
        moved = float(np.max(np.abs(both - old) / np.maximum(old, REL_FLOOR))) if len(old) \
            else 0.0
        delta = max(abs(new_lam - lam) / max(min(lam, 1.0 - lam), REL_FLOOR), moved)
        return (min(max(new_lam, 1e-9), 1 - 1e-9), new_m, new_u), delta

    def loglik(self, lam: float, m: np.ndarray, u: np.ndarray) -> float:
        """Log likelihood of the weighted level vectors under the two-class mixture."""
        lm = self._rows(self._log(m)) + math.log(lam)
        lu = self._rows(self._logs_u(u)) + math.log1p(-lam)
        return float(np.sum(self.w * np.logaddexp(lm, lu)))

    def objective(self, lam: float, m: np.ndarray, u: np.ndarray) -> float:
        """What a step does not lower: the log likelihood, plus the pseudo-counts' term."""
        out = self.loglik(lam, m, u)
        if self.pseudo:
            logs = _sums(self._log(m)[self.level], self.seg, self.n)
            out += self.pseudo * sum(logs[self.free_m].tolist())
        return out

    def squarem(self, zero: State, one: State, two: State) -> State:
        """SQUAREM (S3) from ``zero`` and its two EM steps: the extrapolated point after a
        stabilising EM step where that does not lower the objective, else ``two``."""
        t0, t1, t2 = (self._pack(s) for s in (zero, one, two))
        got = squarem_step(t0, t1, t2)
        if got is None:
            return two
        alpha, r, v = got
        jumped, _ = self.step(*self._unpack(t0 - 2.0 * alpha * r + alpha * alpha * v, two))
        if self.objective(*jumped) >= self.objective(*two):
            return jumped
        return two

    def _pack(self, s: State) -> np.ndarray:
        lam, m, u = s
        return np.concatenate([[lam], m[self.level[~self.held_m]], u[self.level[~self.fixed_u]]])

    def _unpack(self, t: np.ndarray, like: State) -> State:
        """Parameters from a packed vector, put back where they are probabilities."""
        lam = float(min(max(t[0], 1e-9), 1 - 1e-9))
        nm = int((~self.held_m).sum())
        m = self._put(t[1:1 + nm], like[1], self.held_m, 0.0)
        u = self._put(t[1 + nm:], like[2], self.fixed_u, PROB_FLOOR)
        return lam, m, u

    def _put(self, values: np.ndarray, like: np.ndarray, held: np.ndarray, floor: float
             ) -> np.ndarray:
        """``like`` with the free comparisons' levels set to ``values`` (one after the
        other) floored at ``floor`` and normalised, where their sum is positive."""
        x = np.zeros(len(self.level))
        x[~held] = np.maximum(values, floor)
        return self._normalised(x, like, held, floor)
