"""u without the matches among the random pairs (pure numpy, client side).

u is the level share among *non-matching* record pairs, but the random pairs it is
counted on hold matches too, a share λ of them: ``u_obs = λ·m + (1 − λ)·u``. On a big
register that share is negligible. On a small, dense link it is not: two restaurant
guides of a few hundred entries share a hundred restaurants, and among their random
pairs nearly every pair with the same name *is* one of them (Fodors × Zagat: a random
pair agrees on the whole name 4.9e-4 of the time, a non-matching pair 6e-6). The
observed u then makes the strongest evidence look common, and a restaurant's own
record can lose to a neighbour at the same address.

The random pairs are summarised as a histogram of level vectors, so each pattern can be
weighed by how likely its pairs are *not* matches under the fitted model (λ, the
model's m, the current u): ``1 − P(match | γ)``, the posteriors together holding no
more matches than the λ of the pairs a random sample holds. u is counted again with
those weights (add-one smoothing as before), the posteriors are updated with the new u
until u settles, and the model is trained again with it; :data:`ROUNDS` such rounds.
Unlike subtracting ``λ·m`` level by level, this needs no floor: a level's random pairs
that look like matches on the other comparisons leave u, the others stay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..levels import PatternHistogram
from .sessions import Trained

__all__ = ["ROUNDS", "nonmatch_counts", "refit_on_nonmatches"]

ROUNDS = 2  #: times u is counted again and the model trained with it
MAX_ITER = 100  #: posterior updates for one u at most
TOL = 1e-6  #: they end when no level's log2 u moves more
BISECTIONS = 64  #: halvings of the prior's shift that holds the posteriors to λ


def _probability(w: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp2(-np.clip(w, -1000.0, 1000.0)))


def _posteriors(gamma: np.ndarray, counts: np.ndarray, lam: float,
                m: Sequence[np.ndarray], u: Sequence[np.ndarray]) -> np.ndarray:
    """P(match | γ) of every pattern (a null level adds nothing), held to the matches a
    random sample holds: when the patterns' posteriors add up to more than λ of the
    pairs, the prior is lowered until they add up to λ (the excess is what the model
    cannot tell from matches, e.g. relatives: they are non-matches and stay in u)."""
    w = np.full(len(gamma), np.log2(lam) - np.log2(1.0 - lam))
    for k, (mk, uk) in enumerate(zip(m, u)):
        g = gamma[:, k]
        ok = g >= 0
        w[ok] += np.log2(np.maximum(np.asarray(mk, np.float64)[g[ok]], 1e-300)) \
            - np.log2(np.asarray(uk, np.float64)[g[ok]])
    budget = lam * float(counts.sum())
    if float(counts @ _probability(w)) <= budget:
        return _probability(w)
    lo, hi = -2000.0, 0.0  # a shift of the weights in bits: bisection on the monotone sum
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if float(counts @ _probability(w + mid)) > budget:
            hi = mid
        else:
            lo = mid
    return _probability(w + lo)


def nonmatch_counts(random: PatternHistogram, lam: float, m: Sequence[np.ndarray],
                    u: Sequence[np.ndarray], n_levels: Sequence[int],
                    u_from_counts: Callable[[list[np.ndarray]], list[np.ndarray]],
                    tf: Sequence[bool] = ()) -> tuple[list[np.ndarray], float]:
    """Level counts of the random pairs weighted by ``1 − P(match | γ)`` (index 0 = null),
    iterated with the u they give until it settles; and the matches they leave out.

    ``tf``: comparisons with term frequencies keep the observed count at their top
    level: their exact agreement is scored by the share of records holding the value,
    counted over all records, matches included, so training reads it the same way."""
    gamma = random.gamma().astype(np.int64)
    counts = random.counts.astype(np.float64)
    observed = [np.bincount(gamma[:, k] + 1, weights=counts, minlength=n + 1)[:n + 1]
                for k, n in enumerate(n_levels)]
    level_counts: list[np.ndarray] = observed
    removed = 0.0
    if not 0.0 < lam < 1.0:
        return observed, removed
    for _ in range(MAX_ITER):
        p = _posteriors(gamma, counts, lam, m, u)
        kept = counts * (1.0 - p)
        removed = float((counts * p).sum())
        level_counts = [np.bincount(gamma[:, k] + 1, weights=kept, minlength=n + 1)[:n + 1]
                        for k, n in enumerate(n_levels)]
        for k in np.flatnonzero(np.asarray(tf, dtype=bool)).tolist():
            level_counts[k][n_levels[k]] = observed[k][n_levels[k]]
        new = u_from_counts(level_counts)
        moved = max((float(np.max(np.abs(np.log2(a) - np.log2(b)))) for a, b in zip(new, u)),
                    default=0.0)
        u = new
        if moved < TOL:
            break
    return level_counts, removed


def refit_on_nonmatches(train: Callable[[Mapping[int, PatternHistogram], list[np.ndarray]],
                                        Trained],
                        hists: Mapping[int, PatternHistogram], res: Trained,
                        u: list[np.ndarray], random: PatternHistogram,
                        n_levels: Sequence[int],
                        u_from_counts: Callable[[list[np.ndarray]], list[np.ndarray]],
                        tf: Sequence[bool] = ()) -> tuple[Trained, list[np.ndarray], float]:
    """:data:`ROUNDS` rounds of u counted on the random pairs' non-matches (module doc)
    after a first fit ``res`` with ``u`` on ``hists`` (both histograms as that fit saw
    them; ``tf``: see :func:`nonmatch_counts`). Returns the last fit, its u and the
    matches left out of the random pairs."""
    removed = 0.0
    if random.total == 0:
        return res, u, removed
    for _ in range(ROUNDS):
        counts, removed = nonmatch_counts(random, float(res.lam), res.m, u, n_levels,
                                          u_from_counts, tf)
        u = u_from_counts(counts)
        res = train(hists, u)
    return res, u, removed
