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
                free_m: Sequence[bool] | None = None) -> dict[str, Any]:
    """Three-class EM on a session's histogram (module doc): ``m`` held, ``r`` (start)
    and the ``free_u`` comparisons' ``u`` estimated, ``lam`` the session's two-class
    match share (π starts with ``related_start`` of it for related records, the rest
    for matches). ``free_r``: which comparisons' ``r`` are estimated (all, by default;
    the others are held as given); ``free_m``: which comparisons' ``m`` are (none by
    default). Returns ``pi`` (matches, related, non-matches), ``m``, ``r``, ``u``,
    ``seen_matches`` (per comparison, the expected matches where it is present),
    ``n_iter``, ``converged``."""
    gamma, w = hist.gamma(), hist.counts.astype(np.float64)
    n_levels = [len(x) for x in m]
    free = [free_r] * len(m) if isinstance(free_r, bool) else list(free_r)
    r = [np.asarray(x, dtype=np.float64).copy() for x in r]
    u = [np.asarray(x, dtype=np.float64).copy() for x in u]
    pi = np.array([(1 - related_start) * lam, related_start * lam, 1.0 - lam])
    m = [np.asarray(x, dtype=np.float64).copy() for x in m]
    seen_m = [0.0] * len(m)  # expected matches where each comparison is present
    log_m = _log_lik(gamma, m)
    converged, it = False, 0
    for it in range(1, max_iter + 1):  # noqa: B007 (n_iter is reported)
        cols = np.column_stack([log_m, _log_lik(gamma, r), _log_lik(gamma, u)])
        like = np.exp(cols - cols.max(axis=1, keepdims=True))
        # the shares alone, with the classes' distributions as they stand: cheap steps
        # that carry a share running to 0 there quickly (one step a round is slow)
        new_pi = pi
        for _ in range(PI_STEPS):
            dens = like * np.clip(new_pi, PROB_FLOOR, 1.0)[None, :]
            post = dens / dens.sum(axis=1, keepdims=True) * w[:, None]
            step, new_pi = new_pi, post.sum(axis=0) / w.sum()
            if float(np.max(np.abs(new_pi - step) / np.maximum(step, PI_FLOOR))) < PI_TOL:
                break
        delta = float(np.max(np.abs(new_pi - pi) / np.maximum(pi, PI_FLOOR)))
        pi = new_pi
        for k, n in enumerate(n_levels):
            sel = gamma[:, k] >= 0
            if free[k]:
                c = np.bincount(gamma[sel, k], weights=post[sel, 1], minlength=n)[:n] + R_PSEUDO
                delta = max(delta, float(np.max(np.abs(c / c.sum() - r[k]))))
                r[k] = c / c.sum()
            seen_m[k] = float(post[sel, 0].sum())
            if free_m is not None and free_m[k] and seen_m[k] > 0:
                cm = np.bincount(gamma[sel, k], weights=post[sel, 0], minlength=n)[:n] + M_PSEUDO
                delta = max(delta, float(np.max(np.abs(cm / cm.sum() - m[k]))))
                m[k] = cm / cm.sum()
            if free_u[k]:
                cu = np.bincount(gamma[sel, k], weights=post[sel, 2], minlength=n)[:n]
                if cu.sum() > 0:
                    cu = np.clip(cu / cu.sum(), PROB_FLOOR, 1.0)
                    delta = max(delta, float(np.max(np.abs(cu - u[k]))))
                    u[k] = cu / cu.sum()
        if free_m is not None and any(free_m):
            log_m = _log_lik(gamma, m)
        if delta < tol:
            converged = True
            break
    return {"pi": pi.tolist(), "m": m, "r": r, "u": u, "seen_matches": seen_m,
            "n_iter": it, "converged": converged}


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
