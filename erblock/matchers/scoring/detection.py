"""Detection: did the blocking select pairs on a comparison it was not told about?

A comparison that no key declares keeps the random-pair u in its session (it anchors the
fit). When the blocking did select on it (a ready-made key column cut from it, a column
correlated with the key), its non-matching candidates agree far more often than random
pairs and the fit mistakes that agreement for match evidence. Tested against conditional
independence among the session's *clear non-matches* by the other comparisons (their
posterior below 1 % and below half the prior, so that the others count against a match
and a small prior alone does not make a pair clear; with too few of those, every pair
weighted by 1 − P(match | the others)): its levels above "else" are

- more than 10 times as frequent as among random pairs, in at least 30 % of them, or
- "else" more than 10 times rarer (agreement on a common value, a city that random
  pairs share a fifth of the time, can rise at most five-fold), in at least 30 % of them,
  or
- 3 times as frequent in so many non-matches that the excess reaches half the matches the
  fit finds besides them where k is present (with few true matches among many
  candidates, they would become the match class). The excess rate among the clear
  non-matches is taken over every non-match where k is present, and a fit with the
  random-pair u must have counted those among its matches, so they are set against the
  rest (excess ≥ λn/3 for the n pairs where k is present): relatives who share a first
  name in a surname block, 20 times as often as random pairs, made a fit of half
  matches where a quarter were. Among pairs weighted by 1 − P(match | the others),
  which hold matches too, the excess is counted as it is and set against all the
  matches the fit finds.

Clear non-matches are judged by the fitted m and λ and, when that finds nothing, by
generic m and the fitted λ; a fit that called nearly every candidate a match is judged
by generic m and an even prior only, whose 0.5 then stands for the fit's match share
(:mod:`.training`).

The comparison most unlike random pairs is returned; :mod:`.training` frees its u.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..levels import posterior
from .sessions import DEGENERATE

DETECT_LIFT = 10.0  #: selected: above else this many times as often as at random, or else
#: this many times less often
DETECT_SHARE = 0.3  #: ... and in at least this share of the clear non-matches
DETECT_MIN = 30  #: clear non-matches needed to test a comparison
EXCESS_LIFT = 3.0  #: or above else 3 times as often as at random, in so many non-matches
EXCESS_SHARE = 0.5  #: ... that they reach half the matches the fit finds


def selected_comparison(gamma: np.ndarray, counts: np.ndarray, fixed: Sequence[bool],
                        m: Sequence[np.ndarray], u: Sequence[np.ndarray], lam: float
                        ) -> int | None:
    """The comparison (among those with u ``fixed``) whose levels among the clear
    non-matches are most unlike random pairs', if any is (see the module doc)."""
    worst, worst_lift = None, 0.0
    for j in range(len(fixed)):
        if not fixed[j]:
            continue
        others = [i for i in range(len(fixed)) if i != j]
        p_other = posterior(gamma[:, others], [m[i] for i in others],
                            [u[i] for i in others], lam)
        present = gamma[:, j] >= 0
        # clear: the others count against a match (the prior alone is not enough)
        clear = (p_other < min(0.01, 0.5 * lam)) & present
        weight = counts * clear
        n = float(counts[present].sum())
        weighted = float(weight.sum()) < DETECT_MIN
        if weighted:
            # the others cannot tell any non-match for sure: weigh every pair by how
            # likely the others make it a non-match instead
            weight = counts * (1.0 - p_other) * present
        n_clear = float(weight.sum())
        if n_clear < DETECT_MIN:
            continue
        share = float(weight[gamma[:, j] > 0].sum()) / n_clear
        chance = min(max(1.0 - float(u[j][0]), 1e-12), 1.0 - 1e-12)
        lift = max(share / chance, (1.0 - chance) / max(1.0 - share, 1e-12))
        rate = min(share - chance, 0.99)
        if weighted:  # the weighted pairs hold matches too: the excess may be matches
            excess, rival = rate * n_clear, lam * float(counts.sum())
        else:  # non-matches beyond chance, over all those where k is present, which the
            # fit had to count among its matches: they rival the matches besides them
            excess = rate * (1.0 - lam) * n / (1.0 - rate) if rate > 0 else 0.0
            rival = lam * n - excess
        strong = share >= DETECT_SHARE and lift > DETECT_LIFT
        swamping = share / chance > EXCESS_LIFT and excess >= EXCESS_SHARE * rival
        if (strong or swamping) and (worst is None or lift > worst_lift):
            worst, worst_lift = j, lift
    return worst


def detect_selected(gamma: np.ndarray, counts: np.ndarray, fixed: Sequence[bool],
                    m: Sequence[np.ndarray], u: Sequence[np.ndarray], lam: float,
                    generic: Sequence[np.ndarray]) -> int | None:
    """The comparison a session's fit shows the blocking selected on, if any: clear
    non-matches judged by the fitted ``m`` and ``lam``, then by ``generic`` m (a fit that
    took a selected comparison for evidence has learnt its non-matches' levels as m of
    the others); a fit that called nearly every candidate a match (``lam`` above
    ``DEGENERATE``) is judged by ``generic`` m and an even prior only."""
    looks = [(m, lam), (generic, lam)] if lam <= DEGENERATE else [(generic, 0.5)]
    for m_test, lam_test in looks:
        j = selected_comparison(gamma, counts, fixed, m_test, u, lam_test)
        if j is not None:
            return j
    return None
