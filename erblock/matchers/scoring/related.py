"""A third class for inverted sessions: related records (pure numpy, client side).

A session whose "matches" agree on a comparison less often than random pairs do
(:func:`.sessions.inverted`) took related records for matches: in a register with
households, a pass keyed on the postcode finds the members of each household by the
thousand (the same surname, address and phone; other given names; partners) next to a few
true matches. Two classes cannot tell them apart there; three can, because the other
sessions have already learnt what matches look like. The session is refitted by EM with

* **matches**: the model's m (learnt by the other sessions), restricted to the levels the
  session's candidates reach, held;
* **related records**: free, started from the session's two-class fit (its "matches");
* **non-matches**: u as in the session (random-pair u where it does not select, its own
  among its candidates, free, where it does);

and its pairs are scored ``P(match) = π_M Πm / (π_M Πm + π_R Πr + π_U Πu)``. As a match
weight this is the usual two-class weight of matches against non-matches (the prior
``log₂ π_M/π_U`` and ``log₂ m/u`` per comparison) plus one more term, the related records'
``−log₂(1 + π_R Πr / (π_U Πu))`` (never positive), which :func:`related_weight` gives.

Related records are not the inverted pass's alone: :mod:`.third_class` refits every
other trained session with three classes too (``free_r``, ``free_m``: which
distributions a fit estimates; the rest are held).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..em import squarem_step
from ..levels import M_PSEUDO, PROB_FLOOR, PatternHistogram

RELATED_MAX_ITER = 2000  #: (500 stopped a census x tax-forms fit at 969 short of its tolerance)
RELATED_TOL = 1e-5  #: EM ends when nothing changes more (π relative, m, r and u absolute)
R_PSEUDO = 0.1  #: added to every level's expected related records in the M-step
PI_STEPS = 200  #: share-only EM steps per round (the classes' distributions held)
#: ... until no share changes more than this, relative (as ``RELATED_TOL`` judges π; an
#: absolute 1e-12 took 200 steps a round, 2.5 s of a 158,853-pair link's 7)
PI_TOL = RELATED_TOL
PI_FLOOR = 1e-4  #: a share's change counts relative to it, or to this when smaller


def seen_levels(gamma: np.ndarray, counts: np.ndarray, k: int, n: int) -> np.ndarray:
    """Which levels of comparison ``k`` some pair of the histogram reaches."""
    sel = gamma[:, k] >= 0
    return np.bincount(gamma[sel, k], weights=counts[sel], minlength=n)[:n] > 0


def truncated(p: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """``p`` restricted to the ``seen`` levels and renormalised (``p`` if none is)."""
    kept = np.where(seen, p, 0.0)
    return kept / kept.sum() if float(kept.sum()) > 0 else p


def _log_lik(gamma: np.ndarray, dists: Sequence[np.ndarray]) -> np.ndarray:
    """Σ_k log p_k[γ_k] per row (a missing level adds nothing)."""
    out = np.zeros(len(gamma))
    for k, p in enumerate(dists):
        sel = gamma[:, k] >= 0
        out[sel] += np.log(np.clip(np.asarray(p, dtype=np.float64), PROB_FLOOR, 1.0))[
            gamma[sel, k]]
    return out


def fit_related(hist: PatternHistogram, m: Sequence[np.ndarray], u: Sequence[np.ndarray],
                r: Sequence[np.ndarray], free_u: Sequence[bool], lam: float,
                max_iter: int = RELATED_MAX_ITER, tol: float = RELATED_TOL, *,
                free_r: bool | Sequence[bool] = True, related_start: float = 0.9,
                free_m: Sequence[bool] | None = None, accelerate: bool = True
                ) -> dict[str, Any]:
    """Three-class EM on a session's histogram (module doc): ``m`` held, ``r`` (start)
    and the ``free_u`` comparisons' ``u`` estimated, ``lam`` the session's two-class
    match share (π starts with ``related_start`` of it for related records, the rest
    for matches). ``free_r``: which comparisons' ``r`` are estimated (all, by default;
    the others are held as given); ``free_m``: which comparisons' ``m`` are (none by
    default). ``accelerate``: SQUAREM cycles (as :func:`~erblock.matchers.em.fit_em`:
    two EM steps, an extrapolation kept only where it does not lower the objective);
    False: plain EM. Returns ``pi`` (matches, related, non-matches), ``m``, ``r``,
    ``u``, ``seen_matches`` (per comparison, the expected matches where it is present),
    ``n_iter`` (EM steps), ``converged``."""
    K = len(m)
    fit = _Related(hist, [len(x) for x in m],
                   [free_r] * K if isinstance(free_r, bool) else list(free_r),
                   [False] * K if free_m is None else list(free_m), list(free_u))

    def own(d: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(x, dtype=np.float64).copy() for x in d)

    state: _State = (np.array([(1 - related_start) * lam, related_start * lam, 1.0 - lam]),
                     own(m), own(r), own(u))
    converged = False
    while fit.steps < max_iter:
        one, delta = fit.step(state)
        if delta < tol or not accelerate or fit.steps + 2 > max_iter:
            state, converged = one, delta < tol
            if converged:
                break
            continue
        two, delta = fit.step(one)
        if delta < tol:
            state, converged = two, True
            break
        state = fit.squarem(state, one, two)
    pi, m_, r_, u_ = state
    return {"pi": pi.tolist(), "m": list(m_), "r": list(r_), "u": list(u_),
            "seen_matches": fit.seen_matches(state), "n_iter": fit.steps,
            "converged": converged}


#: (π, m, r, u) of a three-class fit
_State = tuple[np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...],
               tuple[np.ndarray, ...]]


def _shares(like: np.ndarray, w: np.ndarray, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The classes' shares by EM with their distributions held (``like``: rows × classes,
    each row's likelihoods up to a factor), from ``pi`` until no share changes by
    :data:`PI_TOL` of itself (:data:`PI_FLOOR` at least), in at most :data:`PI_STEPS`
    steps, SQUAREM-accelerated (a share running to 0 crawls); and the rows' weighted
    posteriors (rows × classes) at the shares returned. Cheap steps that carry a share
    to its value where the distributions stand (one step a round is slow)."""
    total = float(w.sum())

    def em(p: np.ndarray) -> tuple[np.ndarray, float]:  # a step, the change it makes
        c = np.clip(p, PROB_FLOOR, 1.0)
        nxt = c * (like.T @ (w / (like @ c))) / total
        return nxt, float(np.max(np.abs(nxt - p) / np.maximum(p, PI_FLOOR)))

    def loglik(p: np.ndarray) -> float:
        return float(w @ np.log(like @ np.clip(p, PROB_FLOOR, 1.0)))

    steps = 0
    while steps < PI_STEPS:
        one, d = em(pi)
        steps += 1
        if d < PI_TOL or steps + 2 > PI_STEPS:
            pi = one
            if d < PI_TOL:
                break
            continue
        two, d = em(one)
        steps += 1
        if d < PI_TOL:
            pi = two
            break
        got = squarem_step(pi, one, two)
        if got is None:
            pi = two
            continue
        alpha, r, v = got
        jump = pi - 2.0 * alpha * r + alpha * alpha * v
        for _ in range(8):  # halfway back toward ``two`` (α = −1) while a share is < 0
            if jump.min() >= 0:
                break
            alpha = (alpha - 1.0) / 2.0
            jump = pi - 2.0 * alpha * r + alpha * alpha * v
        if jump.min() < 0:  # no jump that keeps every share: ``two``
            pi = two
            continue
        jumped, _ = em(jump / jump.sum())
        steps += 1
        pi = jumped if loglik(jumped) >= loglik(two) else two
    c = np.clip(pi, PROB_FLOOR, 1.0)
    dens = like * c[None, :]
    return pi, dens / dens.sum(axis=1, keepdims=True) * w[:, None]


class _Related:
    """The three-class EM map of one fit (:func:`fit_related`), its objective and the
    SQUAREM extrapolation over its free parameters."""

    def __init__(self, hist: PatternHistogram, n_levels: list[int], free_r: list[bool],
                 free_m: list[bool], free_u: list[bool]) -> None:
        self.gamma, self.w = hist.gamma(), hist.counts.astype(np.float64)
        self.n_levels, self.free_r, self.free_m, self.free_u = n_levels, free_r, free_m, free_u
        self.sel = [self.gamma[:, k] >= 0 for k in range(len(n_levels))]
        # each row's level of comparison k as a position in all comparisons' levels one
        # after the other (a missing level: the last position, log 1 = 0)
        offsets = np.cumsum([0, *n_levels[:-1]]).astype(np.int64)
        self.at = np.where(self.gamma >= 0, self.gamma + offsets, sum(n_levels))
        self.steps = 0
        self._log_m: tuple[tuple[np.ndarray, ...], np.ndarray] | None = None  # (m, Σ log)

    def _cols(self, s: _State) -> np.ndarray:
        """(rows × 3) Σ_k log p_k[γ_k] of matches, related records, non-matches."""
        pi, m, r, u = s
        if self._log_m is None or self._log_m[0] is not m:  # m is mostly held: once
            self._log_m = (m, self._log_lik(m))
        return np.column_stack([self._log_m[1], self._log_lik(r), self._log_lik(u)])

    def _log_lik(self, dists: Sequence[np.ndarray]) -> np.ndarray:
        """:func:`_log_lik` by one gather over all comparisons' levels."""
        logs = np.log(np.clip(np.concatenate([*dists, [1.0]]), PROB_FLOOR, 1.0))
        return logs[self.at].sum(axis=1)

    def step(self, s: _State) -> tuple[_State, float]:
        """One EM step from ``s`` and the largest change it makes (π relative, m, r
        and u absolute)."""
        self.steps += 1
        pi, m, r, u = s
        cols = self._cols(s)
        like = np.exp(cols - cols.max(axis=1, keepdims=True))
        w = self.w
        new_pi, post = _shares(like, w, pi)
        delta = float(np.max(np.abs(new_pi - pi) / np.maximum(pi, PI_FLOOR)))
        m2, r2, u2, m_moved = list(m), list(r), list(u), False
        for k, n in enumerate(self.n_levels):
            sel, g = self.sel[k], self.gamma[self.sel[k], k]
            if self.free_r[k]:
                c = np.bincount(g, weights=post[sel, 1], minlength=n)[:n] + R_PSEUDO
                r2[k] = c / c.sum()
                delta = max(delta, float(np.max(np.abs(r2[k] - r[k]))))
            if self.free_m[k] and float(post[sel, 0].sum()) > 0:
                cm = np.bincount(g, weights=post[sel, 0], minlength=n)[:n] + M_PSEUDO
                m2[k], m_moved = cm / cm.sum(), True
                delta = max(delta, float(np.max(np.abs(m2[k] - m[k]))))
            if self.free_u[k]:
                cu = np.bincount(g, weights=post[sel, 2], minlength=n)[:n]
                if cu.sum() > 0:
                    cu = np.clip(cu / cu.sum(), PROB_FLOOR, 1.0)
                    delta = max(delta, float(np.max(np.abs(cu - u[k]))))
                    u2[k] = cu / cu.sum()
        return (new_pi, tuple(m2) if m_moved else m, tuple(r2), tuple(u2)), delta

    def seen_matches(self, s: _State) -> list[float]:
        """Per comparison, the expected matches among the pairs where it is present."""
        post = self._posterior(s)[:, 0] * self.w
        return [float(post[sel].sum()) for sel in self.sel]

    def _posterior(self, s: _State) -> np.ndarray:
        cols = self._cols(s) + np.log(np.clip(s[0], PROB_FLOOR, 1.0))[None, :]
        return np.exp(cols - np.logaddexp.reduce(cols, axis=1)[:, None])

    def objective(self, s: _State) -> float:
        """What an EM step does not lower: the log likelihood (shares floored as the
        E-step floors them) plus the pseudo-counts' terms of the free r and m."""
        pi, m, r, _ = s
        cols = self._cols(s) + np.log(np.clip(pi, PROB_FLOOR, 1.0))[None, :]
        out = float(np.sum(self.w * np.logaddexp.reduce(cols, axis=1)))
        for k in range(len(self.n_levels)):
            if self.free_r[k]:
                out += R_PSEUDO * float(np.log(np.maximum(r[k], PROB_FLOOR)).sum())
            if self.free_m[k]:
                out += M_PSEUDO * float(np.log(np.maximum(m[k], PROB_FLOOR)).sum())
        return out

    def squarem(self, zero: _State, one: _State, two: _State) -> _State:
        """SQUAREM (S3) from ``zero`` and its two EM steps: the extrapolated point after a
        stabilising EM step where that does not lower the objective, else ``two``."""
        t0, t1, t2 = (self._pack(x) for x in (zero, one, two))
        got = squarem_step(t0, t1, t2)
        if got is None:
            return two
        alpha, r, v = got
        jumped, _ = self.step(self._unpack(t0 - 2.0 * alpha * r + alpha * alpha * v, two))
        return jumped if self.objective(jumped) >= self.objective(two) else two

    def _free(self) -> list[tuple[int, int]]:
        """(which distribution: 1 m, 2 r, 3 u; comparison) of every free one, in order."""
        flags = (self.free_m, self.free_r, self.free_u)
        return [(d, k) for d in (1, 2, 3) for k in range(len(self.n_levels)) if flags[d - 1][k]]

    def _pack(self, s: _State) -> np.ndarray:
        return np.concatenate([s[0], *(s[d][k] for d, k in self._free())])

    def _unpack(self, t: np.ndarray, like: _State) -> _State:
        """Parameters from a packed vector, floored (u at its floor, the others at 0) and
        normalised where they are probabilities; held ones as in ``like``."""
        pi = np.maximum(t[:3], 0.0)
        parts: list[list[np.ndarray]] = [[], list(like[1]), list(like[2]), list(like[3])]
        at = 3
        for d, k in self._free():
            n = self.n_levels[k]
            x = np.maximum(t[at:at + n], PROB_FLOOR if d == 3 else 0.0)
            at += n
            if float(x.sum()) > 0:
                parts[d][k] = x / x.sum()
        m = like[1] if not any(self.free_m) else tuple(parts[1])
        return (pi / pi.sum() if float(pi.sum()) > 0 else like[0], m, tuple(parts[2]),
                tuple(parts[3]))


def related_weight(gamma: np.ndarray, pi: Sequence[float], r: Sequence[np.ndarray],
                   u: Sequence[np.ndarray], tf_bits: np.ndarray | None = None) -> np.ndarray:
    """Per pair, the related records' term of the match weight (module doc):
    ``−log₂(1 + π_R Πr / (π_U Πu))``. ``tf_bits``: the pairs' term-frequency adjustment
    (bits), which replaces u of an exact level by the value's frequency, so Πu by
    ``Πu · 2^−tf_bits`` here as in the rest of the weight (a rare surname that a
    household shares is rare evidence against non-matches, not against related
    records)."""
    d = (math.log(max(pi[1], PROB_FLOOR)) - math.log(max(pi[2], PROB_FLOOR))
         + _log_lik(gamma, r) - _log_lik(gamma, u))
    if tf_bits is not None:
        d = d + np.asarray(tf_bits, dtype=np.float64) * math.log(2.0)
    return -np.logaddexp(0.0, d) / math.log(2.0)
