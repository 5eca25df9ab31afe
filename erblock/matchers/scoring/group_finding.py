"""Which comparisons make a group (:mod:`.groups`), found among the random pairs.

With ``groups="auto"``, a group starts at the comparisons whose kind
says where a record is found (``postcode``, ``phone``: :attr:`.Method.locates`) or, where
no compared kind does, at two comparisons of no descriptive kind that go together as
below (a house number and a street: tax forms carry no postcode), and takes
in every comparison whose agreement goes with theirs among random *non-matching* pairs
(the random pairs weighted by 1 − P(match), judged by the comparisons that describe the
record, names and dates, where they alone can reach P(match) > 0.5: a model that took
housemates for matches would call the very pairs that show the group matches; else by
the whole model): both at their top level at least
:data:`GROUP_LIFT` times as often as if independent, in at least :data:`GROUP_MIN_PAIRS`
pairs (the same street, postcode and number are one address; households share a
landline; a personal phone does not go with the address, and stays out).
Comparisons whose kind describes the record itself (``name``, ``date``, ``email``:
``locates`` is False) join only where a member implies them or they imply a member
(:mod:`.implied`: the suburb a postcode names), and take nothing else in: a household
shares its surname far beyond chance too (at one address as nearly always as a suburb
goes with its postcode, once housemates count as non-matches), yet a moved person keeps
it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np

from ..levels import PROB_FLOOR, PatternHistogram, posterior
from .implied import IMPLIED_SHARE

GROUP_LIFT = 10.0  #: joint top-level agreement among random non-matches, over independence
GROUP_MIN_PAIRS = 3.0  #: ... in at least this many (weighted) random non-matching pairs
#: (households are rare among random pairs: of 3 million pairs of two 10,000-person
#: registers, a handful share a phone; at ten times the chance rate, three pairs where
#: 0.3 are expected happen by chance once in 280 tests)


def find_groups(random: PatternHistogram, n_levels: Sequence[int],
                locates: Sequence[bool | None], m: Sequence[np.ndarray],
                u: Sequence[np.ndarray], lam: float,
                implied: Sequence[tuple[int, int]] = (),
                exclude: Collection[int] = ()) -> tuple[tuple[int, ...], ...]:
    """The groups of comparisons that change together with the locating ones (module
    doc): the connected component of each seed, as sorted indices, those of at least two
    comparisons (a postcode and a personal mobile are two components; the postcode's
    group stands alone). ``locates`` per comparison: True
    (its kind locates the record: a seed), None (joins when it agrees with a member far
    beyond chance among random non-matches), False (its kind describes the record: it
    joins, and takes others in, only where it implies a member or a member implies it).
    ``implied``: ``(j, k)`` pairs of
    :mod:`.implied` (``k`` read as missing where ``j`` agrees, so ``random`` no longer
    shows them agreeing together): linked, as ``j`` determines ``k``. ``exclude``:
    comparisons that neither join a group nor link others into one."""
    if random.total == 0:
        return ()
    g = random.gamma()
    w = non_matches(g, random.counts, locates, m, u, lam)
    top = np.stack([g[:, k] == n - 1 for k, n in enumerate(n_levels)], axis=1)
    present = g >= 0

    def linked(a: int, b: int) -> bool:
        if (a, b) in implied or (b, a) in implied:
            return True
        return together(a, b)

    def together(a: int, b: int) -> bool:  # at the top level together, beyond chance
        if locates[a] is False or locates[b] is False:  # the record's own: only implied
            return False
        both = present[:, a] & present[:, b]
        n = float(w[both].sum())
        joint = float(w[both & top[:, a] & top[:, b]].sum())
        if n <= 0 or joint < GROUP_MIN_PAIRS:
            return False
        pa, pb = float(w[both & top[:, a]].sum()) / n, float(w[both & top[:, b]].sum()) / n
        return joint / n >= GROUP_LIFT * pa * pb

    def seeded(a: int, b: int) -> bool:
        """Whether two comparisons of no descriptive kind go together beyond chance. An
        implied pair's co-agreement is masked: the implied one agrees where its implier
        does (``IMPLIED_SHARE`` at least), which is ``GROUP_LIFT`` times chance only when
        it agrees rarely otherwise (a house number where the street agrees: yes; the sex
        where a first name agrees, half of all pairs: no address)."""
        for j, k in ((a, b), (b, a)):
            if (j, k) in implied:
                n = float(w[present[:, k]].sum())
                share = float(w[present[:, k] & top[:, k]].sum()) / n if n > 0 else 1.0
                return GROUP_LIFT * share <= IMPLIED_SHARE
        return together(a, b)

    seeds = [k for k, loc in enumerate(locates) if loc and k not in exclude]
    if not seeds:  # no kind locates a record: two parts that go together do (number, street)
        open_ = [k for k, loc in enumerate(locates) if loc is None and k not in exclude]
        seeds = [a for a in open_ if any(seeded(a, b) for b in open_ if b != a)]
    placed: set[int] = set(exclude)
    out = []
    for seed in seeds:
        if seed in placed:
            continue
        group, todo = {seed}, [seed]
        while todo:  # the connected component of this seed
            a = todo.pop()
            for b in range(len(n_levels)):
                if b not in group and b not in placed and linked(a, b):
                    group.add(b)
                    todo.append(b)
        placed |= group
        if len(group) >= 2:
            out.append(tuple(sorted(group)))
    return tuple(out)


def non_matches(g: np.ndarray, counts: np.ndarray, locates: Sequence[bool | None],
                 m: Sequence[np.ndarray], u: Sequence[np.ndarray], lam: float) -> np.ndarray:
    """Random pairs' counts weighted by 1 − P(match), as the comparisons describing the
    record judge them (names, dates) where they can tell a match on their own, else the
    whole model: a model that took housemates, who agree on the address, for matches
    would call the very pairs that show the group matches."""
    own = [k for k, loc in enumerate(locates) if loc is False]
    best = math.log2(max(lam, PROB_FLOOR) / (1.0 - lam)) + sum(
        float(np.max(np.log2(np.clip(m[k], PROB_FLOOR, None) / np.clip(u[k], PROB_FLOOR, None))))
        for k in own)
    post = (posterior(g[:, own], [m[k] for k in own], [u[k] for k in own], lam)
            if own and best > 0 else posterior(g, m, u, lam))
    return counts.astype(np.float64) * (1.0 - post)
