"""Comparisons whose agreement another comparison's agreement implies, found among random
pairs, and read as missing where it does (pure numpy, on the client).

Two people with the same first name are nearly always of the same sex; two addresses with
the same postcode nearly always name the same suburb. The model multiplies one likelihood
ratio per comparison, so such a pair of comparisons counts one piece of evidence twice.
Worse, the two agree together among *non-matches* far more often than the model assumes,
and EM can explain that by taking "the same first name" for the match class: on a
generated person register linked on first name, surname, date of birth and sex, blocked on
surname sound + initial and on the date, EM's match class was the pairs with the same
first name (λ of that session 0.21 instead of 0.03), F1 0.32; with sex read as missing
where the first names are equal, 0.97 (``benchmarks/bench_sweep.py``'s
``household_link_person``; Splink 0.90).

Comparison ``k`` is *implied* by ``j`` when, among random pairs at ``j``'s top level (with
``k`` present), ``k`` is at its top level at least :data:`IMPLIED_SHARE` of the time and
below it at most 1 / :data:`IMPLIED_LIFT` as often as among all random pairs (in a
historical register the sexes of two random people differ 27 % of the time, those of two
people with the same first name 7 %), and chance, not the matches a random sample holds,
makes those pairs: they number at least
:data:`CHANCE_FACTOR` times the matches the model expects among the random pairs (two
papers with the same title are mostly one paper, and their authors agree because of
that, not because a title implies its authors). That expectation comes from a first fit
without the mask, which the dependence may have inflated (twice the true λ on a small
register): hence a margin of three, not ten. Where ``j`` is at its top level, ``k`` is
then read as missing (the null level: it adds nothing), in training, for u and in
scoring; elsewhere it keeps its evidence (people with different first names: sex still
tells). A comparison is implied by at most one other, and one that implies is never
implied itself, so nothing is masked in a circle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..levels import PatternHistogram
from .sessions import Trained

IMPLIED_SHARE = 0.9  #: k at its top level among random pairs at j's top level, at least
IMPLIED_LIFT = 2.0  #: ... and disagrees at most 1/this as often as among all random pairs
MIN_PARENT_PAIRS = 50  #: random pairs at j's top level (with k present) needed to judge
CHANCE_FACTOR = 3.0  #: those pairs, over the matches expected among the random pairs
#: a comparison at its top level on this share of the random pairs (where present) is
#: (nearly) constant: nothing implies it, and it is said to carry next to no evidence
NEAR_CONSTANT = 0.99


def find_implied(random: PatternHistogram, n_levels: Sequence[int],
                 expected_matches: float) -> list[tuple[int, int]]:
    """``(j, k)`` pairs: comparison ``k`` is implied by ``j`` (module doc), sorted.

    ``random``: histogram of the random pairs' level vectors; ``expected_matches``: the
    matches a model expects among them (λ of a random pair times their number).
    """
    if random.total == 0 or len(n_levels) < 2:
        return []
    g, c = random.gamma(), random.counts.astype(np.float64)
    K = len(n_levels)
    top = [g[:, k] == n_levels[k] - 1 for k in range(K)]
    present = g >= 0
    found = []
    for j in range(K):
        if n_levels[j] < 2 or float(c[top[j]].sum()) < max(MIN_PARENT_PAIRS,
                                                              CHANCE_FACTOR * expected_matches):
            continue
        for k in range(K):
            seen = float(c[present[:, k]].sum())
            if k == j or n_levels[k] < 2 or seen == 0:
                continue
            sel = top[j] & present[:, k]
            n = float(c[sel].sum())
            if n < MIN_PARENT_PAIRS:
                continue
            share = float(c[sel & top[k]].sum()) / n
            apart = 1.0 - float(c[top[k]].sum()) / seen  # k below its top, all random pairs
            if apart <= 1.0 - NEAR_CONSTANT:  # a constant column: no dependence to mask
                continue
            if share >= IMPLIED_SHARE and 1.0 - share <= apart / IMPLIED_LIFT:
                found.append((share, j, k))
    out: list[tuple[int, int]] = []
    parents: set[int] = set()
    children: set[int] = set()
    for _, j, k in sorted(found, key=lambda t: (-t[0], t[1], t[2])):
        if k in children or k in parents or j in children:
            continue
        out.append((j, k))
        parents.add(j)
        children.add(k)
    return sorted(out)


def mask(gamma: np.ndarray, implied: Sequence[tuple[int, int]],
         n_levels: Sequence[int]) -> np.ndarray:
    """``gamma`` with each implied comparison null where its implier is at its top level."""
    if not implied:
        return gamma
    out = gamma.copy()
    for j, k in implied:
        out[gamma[:, j] == n_levels[j] - 1, k] = -1
    return out


def mask_hist(h: PatternHistogram, implied: Sequence[tuple[int, int]],
              n_levels: Sequence[int]) -> PatternHistogram:
    """The histogram of the masked level vectors (patterns that become equal merge)."""
    if not implied or h.total == 0:
        return h
    codes = (mask(h.gamma(), implied, n_levels).astype(np.int64) + 1) @ h.strides
    uniq, inv = np.unique(codes, return_inverse=True)
    return PatternHistogram(h.radix, uniq, np.bincount(inv, weights=h.counts,
                                                       minlength=len(uniq)).astype(np.int64))


def level_counts(h: PatternHistogram, n_levels: Sequence[int]) -> list[np.ndarray]:
    """Per comparison, the pairs at each level, index 0 = null (as random summaries count)."""
    g = h.gamma().astype(np.int64)
    return [np.bincount(g[:, k] + 1, weights=h.counts, minlength=n + 1)[:n + 1]
            for k, n in enumerate(n_levels)]


def found_by_pass(gamma: np.ndarray, first: np.ndarray | None, radix: Sequence[int],
                  codes: np.ndarray | None = None) -> dict[int, PatternHistogram] | None:
    """Histograms of the level vectors of the random pairs some key pass agrees on, by
    the first such pass (``first``: −1 for none; None without several passes;
    ``codes``: the level vectors' codes when already computed)."""
    if first is None:
        return None
    if codes is None:
        codes = PatternHistogram.codes_of(gamma, radix)
    return {int(f): PatternHistogram.from_codes(codes[first == f], radix)
            for f in np.unique(first[first >= 0]).tolist()}


def u_before(counts: Sequence[np.ndarray], found: Mapping[int, PatternHistogram],
             n_levels: Sequence[int],
             u_from_counts: Callable[[list[np.ndarray]], list[np.ndarray]]
             ) -> Callable[[int], list[np.ndarray]]:
    """u of the random pairs no pass before ``p`` agrees on, for every ``p``: ``counts``
    the random pairs' level counts (index 0 = null), ``found`` the histograms of those
    some pass agrees on, by the first such pass. A later pass's pairs are those its
    predecessors missed; a random pair an earlier key finds is not among them (it is
    either that pass's pair or no candidate), so its levels are not this session's u."""
    removed: dict[int, list[np.ndarray]] = {}
    acc = [np.zeros(n + 1) for n in n_levels]
    for f in sorted(found):
        acc = [a + c for a, c in zip(acc, level_counts(found[f], n_levels))]
        removed[f] = acc

    def u_of(p: int) -> list[np.ndarray]:
        before = [f for f in removed if f < p]
        if not before:
            return u_from_counts([np.asarray(c, dtype=np.float64) for c in counts])
        gone = removed[max(before)]
        return u_from_counts([np.maximum(np.asarray(c, dtype=np.float64) - g, 0.0)
                              for c, g in zip(counts, gone)])
    return u_of


def train_masked(train: Callable[..., Trained],
                 hists: Mapping[int, PatternHistogram], u: list[np.ndarray],
                 random: PatternHistogram | None, n_levels: Sequence[int],
                 u_from_counts: Callable[[list[np.ndarray]], list[np.ndarray]],
                 names: Sequence[str], counts: Sequence[np.ndarray] | None = None,
                 found: Mapping[int, PatternHistogram] | None = None
                 ) -> tuple[Trained, list[tuple[int, int]], list[np.ndarray]]:
    """Train; when the random pairs show implied comparisons (judged with the λ of that
    first fit), mask them in the histograms and the random pairs and train again.
    ``counts`` and ``found`` (see :func:`u_before`) give each session the u of the
    random pairs its earlier passes miss. Returns the training result, the implied pairs
    and the u used."""
    after = (u_before(counts, found, n_levels, u_from_counts)
             if found and counts is not None else None)
    res = train(hists, u, u_before=after, random=random)
    if random is None or random.total == 0:
        return res, [], u
    _say_constant(res, u, names)
    # judged with two classes' λ, as without the random pairs' related records
    lam = res.lam if res.lam_two_class is None else res.lam_two_class
    implied = find_implied(random, n_levels, lam * random.total)
    if not implied:
        return res, [], u
    masked = {p: mask_hist(h, implied, n_levels) for p, h in hists.items()}
    base = level_counts(mask_hist(random, implied, n_levels), n_levels)
    u = u_from_counts(base)
    if after is not None and found:
        after = u_before(base, {f: mask_hist(h, implied, n_levels) for f, h in found.items()},
                         n_levels, u_from_counts)
    res = train(masked, u, u_before=after, random=mask_hist(random, implied, n_levels),
                implied=tuple(implied))
    _say_constant(res, u, names)
    for j, k in implied:  # untrained because masked on every candidate: say so
        lead = f"{names[k]}: m could not be trained"
        said = (f"{names[k]}: read as missing wherever {names[j]} agrees (implied by it "
                "among random pairs), which is on every candidate pair it is present in; "
                "its default m adds nothing there")
        weak = f"{names[k]}: its top level is rarer among matches"
        beyond = (f"{names[k]}: read as missing wherever {names[j]} agrees (implied by it "
                  "among random pairs); where it does not, matches agree on it less often "
                  f"than random pairs (m < u): beyond {names[j]} it carries no evidence, "
                  "or what the model calls matches holds related records (the members "
                  "of a household, a family)")
        res.warnings[:] = [said if w.startswith(lead) else beyond if w.startswith(weak)
                           else w for w in res.warnings]
    return res, implied, u


def _say_constant(res: Trained, u: Sequence[np.ndarray], names: Sequence[str]) -> None:
    """Replace the "m < u" warning of a (nearly) constant comparison, a chance wobble of
    two shares near 1, with what the user can act on: it carries next to no evidence."""
    for k, uk in enumerate(u):
        if len(uk) < 2 or float(uk[-1]) < NEAR_CONSTANT:
            continue
        weak = f"{names[k]}: its top level is rarer among matches"
        said = (f"{names[k]}: {float(uk[-1]):.1%} of random pairs agree on it (a nearly "
                "constant column): it carries next to no evidence; compare columns that "
                "tell records apart")
        res.warnings[:] = [w for w in res.warnings if not w.startswith(weak)]
        if said not in res.warnings:
            res.warnings.append(said)
