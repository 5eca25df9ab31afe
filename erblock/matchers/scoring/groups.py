"""Groups of comparisons that change together: a record's address parts and landline.

A person who moved disagrees on the house number, street, postcode and phone at once.
The model multiplies one likelihood ratio per comparison, so such a match pays each
part's "else" weight: on a generated register linked to a later snapshot in which 15 %
of the households had moved, the five parts cost a moved person about 31 bits, and 85 %
of them were lost (F1 0.91; the same run with the address joined into one column, 0.98).
The parts are not independent among matches: a match either keeps its address, where
each part agrees as its m says, or has moved, where the parts look like those of two
random records. A group ``G`` is therefore scored as one mixture::

    P(γ_G | match) = (1 − μ) Π_{k∈G} m_k(γ_k) + μ Π_{k∈G} u_k(γ_k)

so that the group adds ``log₂((1 − μ) 2^W + μ)`` to the match weight instead of the
sum ``W`` of its comparisons' weights: about ``W + log₂(1 − μ)`` when the parts agree,
never less than ``log₂ μ`` when none does (μ = 0.15: −2.7 bits). The term frequencies
and the key pass's m and u of each part are in ``W`` as the rest of the model uses them.

**μ** is fitted by EM over every candidate pair (their level histograms, by key pass),
with the rest of the fitted model held: the share of the matches that differ on the
group as random pairs do.

**Which comparisons** (``groups="auto"``): a group starts at the comparisons whose kind
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
it. A group needs two comparisons and a fitted μ of at least :data:`MU_MIN` (otherwise
no match behaves so and the plain model stands). ``groups=[[...], ...]`` declares groups
instead (their μ is fitted all the same); ``groups=None`` uses none.

**Related records** (:func:`related_profile`): the random non-matches that agree on a
whole group are housemates; their levels are the third class's r in training
(:mod:`.third_class`) when no pass is inverted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..levels import PROB_FLOOR, PatternHistogram, posterior
from .implied import IMPLIED_SHARE, mask_hist
from .related import R_PSEUDO

GROUP_LIFT = 10.0  #: joint top-level agreement among random non-matches, over independence
GROUP_MIN_PAIRS = 3.0  #: ... in at least this many (weighted) random non-matching pairs
#: (households are rare among random pairs: of 3 million pairs of two 10,000-person
#: registers, a handful share a phone; at ten times the chance rate, three pairs where
#: 0.3 are expected happen by chance once in 280 tests)
RELATED_MIN_PAIRS = 20.0  #: fewer random non-matches agreeing on a whole group: no r
MU_START = 0.1
MU_MIN = 0.005  #: a detected group with a smaller fitted μ is dropped
MU_FLOOR = 1e-4  #: a declared group's μ never goes below this (its floor stays finite)
MU_MAX = 0.5  #: at most half the matches may look random on a group
MU_MAX_ITER = 500
MU_TOL = 1e-7


def check_groups(groups: Any) -> str | tuple[tuple[str, ...], ...]:
    """The ``groups`` option as given: ``"auto"``, no groups (``None``, ``False``, ``()``)
    or a sequence of groups, each a sequence of at least two comparison names or
    columns."""
    if groups is None or groups is False:
        return ()
    if isinstance(groups, str):
        if groups != "auto":
            raise ValueError(f"groups: expected 'auto', None or a list of lists of "
                             f"comparison names, got {groups!r}")
        return "auto"
    try:
        out = tuple(tuple(g) if not isinstance(g, str) else (g,) for g in groups)
    except TypeError:
        raise TypeError(f"groups: expected 'auto', None or a list of lists of comparison "
                        f"names, got {groups!r}") from None
    for g in out:
        if len(g) < 2 or not all(isinstance(c, str) for c in g):
            raise ValueError(f"groups: every group is a list of at least two comparison "
                             f"names or columns, got {list(g)!r}")
    return out


def resolve_groups(groups: tuple[tuple[str, ...], ...], names: Sequence[str],
                   columns: Sequence[Sequence[str]]) -> tuple[tuple[int, ...], ...]:
    """Declared groups as comparison indices: each entry names a comparison (its result
    name) or a column it compares; unknown names and a comparison in two groups are
    refused."""
    out: list[tuple[int, ...]] = []
    seen: set[int] = set()
    for g in groups:
        idx = []
        for c in g:
            hits = [k for k, n in enumerate(names) if n == c] or [
                k for k, cols in enumerate(columns) if c in cols]
            if len(hits) != 1:
                what = "no comparison" if not hits else "several comparisons"
                raise ValueError(f"groups: {c!r} names {what}; expected one of {list(names)}")
            if hits[0] in seen or hits[0] in idx:
                raise ValueError(f"groups: {names[hits[0]]!r} is in more than one group")
            idx.append(hits[0])
        seen.update(idx)
        out.append(tuple(sorted(idx)))
    return tuple(out)


def find_groups(random: PatternHistogram, n_levels: Sequence[int],
                locates: Sequence[bool | None], m: Sequence[np.ndarray],
                u: Sequence[np.ndarray], lam: float,
                implied: Sequence[tuple[int, int]] = ()) -> tuple[tuple[int, ...], ...]:
    """The groups of comparisons that change together with the locating ones (module
    doc): the connected component of each seed, as sorted indices, those of at least two
    comparisons (a postcode and a personal mobile are two components; the postcode's
    group stands alone). ``locates`` per comparison: True
    (its kind locates the record: a seed), None (joins when it agrees with a member far
    beyond chance among random non-matches), False (its kind describes the record: it
    joins, and takes others in, only where it implies a member or a member implies it).
    ``implied``: ``(j, k)`` pairs of
    :mod:`.implied` (``k`` read as missing where ``j`` agrees, so ``random`` no longer
    shows them agreeing together): linked, as ``j`` determines ``k``."""
    if random.total == 0:
        return ()
    g = random.gamma()
    w = _non_matches(g, random.counts, locates, m, u, lam)
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

    seeds = [k for k, loc in enumerate(locates) if loc]
    if not seeds:  # no kind locates a record: two parts that go together do (number, street)
        open_ = [k for k, loc in enumerate(locates) if loc is None]
        seeds = [a for a in open_ if any(seeded(a, b) for b in open_ if b != a)]
    placed: set[int] = set()
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


def _non_matches(g: np.ndarray, counts: np.ndarray, locates: Sequence[bool | None],
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


def related_profile(random: PatternHistogram, n_levels: Sequence[int],
                    locates: Sequence[bool | None], m: Sequence[np.ndarray],
                    u: Sequence[np.ndarray], lam: float,
                    implied: Sequence[tuple[int, int]] = (),
                    declared: Sequence[Sequence[int]] = ()) -> list[np.ndarray] | None:
    """Level shares ``r`` of related records (housemates: at one address, not the same
    person) read off the random pairs, or None when no group is found (the largest is
    used), or fewer than :data:`RELATED_MIN_PAIRS` random non-matches agree on it, or
    fewer than the random matches that do (in a register without households such pairs
    are matches whose names and dates have typos: febrl's, a fifth as many). A related
    pair is a random non-match (weighted as in group detection) at the top level of
    every member of the group present in it (at least two; a member that ``implied``
    masks where its implier agrees counts as agreeing there). Off the group, r is the
    levels of those pairs; on it, the matches' ``m``: housemates share one address,
    recorded as a match's is (read off the random pairs, a house number where the street
    agrees is mostly a neighbour's)."""
    groups = declared or find_groups(random, n_levels, locates, m, u, lam, implied)
    if not groups:
        return None
    group = max(groups, key=len)
    g = random.gamma()
    w = _non_matches(g, random.counts, locates, m, u, lam)
    top = {k: g[:, k] == n_levels[k] - 1 for k in group}
    for j, k in implied:  # read as missing where j agrees: there it agrees as well
        if k in top:
            top[k] = top[k] | ((g[:, k] < 0) & (g[:, j] == n_levels[j] - 1))
    present = {k: (g[:, k] >= 0) | top[k] for k in group}
    related = np.sum([present[k] for k in group], axis=0) >= 2
    for k in group:  # a member absent does not say the address differs
        related &= top[k] | ~present[k]
    kin = float(w[related].sum())
    same = float((random.counts.astype(np.float64) - w)[related].sum())
    if kin < max(RELATED_MIN_PAIRS, same):  # else: matches the names misjudge, as likely
        return None
    r = []
    for k, n in enumerate(n_levels):
        if k in group:
            r.append(np.asarray(m[k], dtype=np.float64))
            continue
        sel = related & (g[:, k] >= 0)
        c = np.bincount(g[sel, k], weights=w[sel], minlength=n)[:n] + R_PSEUDO
        r.append(c / c.sum())
    return r


def group_term(weights: np.ndarray, group: Sequence[int], mu: float) -> np.ndarray:
    """Per pair, what the group changes in the match weight: ``log₂((1 − μ) 2^W + μ) − W``
    with ``W`` the group's summed comparison weights (``weights``: pairs × comparisons)."""
    W = weights[:, list(group)].sum(axis=1)
    return np.logaddexp2(math.log2(1.0 - mu) + W, math.log2(mu)) - W


def groups_term(weights: np.ndarray, groups: Sequence[Group]) -> np.ndarray:
    """Per pair, the summed :func:`group_term` of every fitted group (0 without any)."""
    out = np.zeros(len(weights))
    for g in groups:
        out += group_term(weights, g.comparisons, g.mu)
    return out


def fit_mu(parts: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
           hists: Mapping[int, PatternHistogram], group: Sequence[int]
           ) -> tuple[float, int, bool]:
    """μ of one group by EM over the candidates' level histograms (by key pass), the
    rest of the model held. ``parts(gamma, passes)`` gives every row's match weight
    without any group and its comparison weights. Returns μ, iterations, converged."""
    base, W, counts = [], [], []
    for p, h in hists.items():
        if h.total == 0:
            continue
        gamma = h.gamma()
        full, weights = parts(gamma, np.full(len(gamma), p))
        base.append(full)
        W.append(weights[:, list(group)].sum(axis=1))
        counts.append(h.counts.astype(np.float64))
    if not base:
        return MU_START, 0, False
    b, w, c = np.concatenate(base), np.concatenate(W), np.concatenate(counts)
    mu, it, converged = MU_START, 0, False
    for it in range(1, MU_MAX_ITER + 1):  # noqa: B007 (reported)
        lg = np.logaddexp2(math.log2(1.0 - mu) + w, math.log2(mu))
        p_match = 1.0 / (1.0 + np.exp2(-np.clip(b - w + lg, -1000, 1000)))
        moved = np.exp2(math.log2(mu) - lg)  # the share of the matches that moved
        total = float((c * p_match).sum())
        new = float((c * p_match * moved).sum()) / total if total > 0 else mu
        new = min(max(new, MU_FLOOR), MU_MAX)
        if abs(new - mu) < MU_TOL:
            mu, converged = new, True
            break
        mu = new
    return mu, it, converged


@dataclass(frozen=True)
class Group:
    """A fitted group: its comparisons (indices), μ, and how its EM ended."""

    comparisons: tuple[int, ...]
    mu: float
    n_iter: int = 0
    converged: bool = True
    declared: bool = False

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        return {"comparisons": [names[k] for k in self.comparisons], "mu": self.mu,
                "n_iter": self.n_iter, "converged": self.converged,
                "declared": self.declared}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], names: Sequence[str]) -> Group:
        """The group a :meth:`to_dict` wrote, checked against the model's comparison
        ``names`` (a hand-edited file fails here, with what was expected)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"params.groups: expected a mapping per group, got {d!r}")
        comps, mu = d.get("comparisons"), d.get("mu")
        if (not isinstance(comps, (list, tuple)) or len(comps) < 2
                or not all(isinstance(c, str) and c in names for c in comps)
                or len(set(comps)) != len(comps)):
            raise ValueError(f"params.groups: comparisons must name at least two distinct "
                             f"comparisons of the model {list(names)}, got {comps!r}")
        if isinstance(mu, bool) or not isinstance(mu, (int, float)) or not 0.0 < mu < 1.0:
            raise ValueError(f"params.groups: μ must be in (0, 1), got {mu!r}")
        n_iter = d.get("n_iter", 0)
        if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 0:
            raise ValueError(f"params.groups: n_iter must be a count, got {n_iter!r}")
        return cls(tuple(sorted(list(names).index(c) for c in comps)), float(mu), n_iter,
                   bool(d.get("converged", True)), bool(d.get("declared", False)))


def groups_from_dicts(items: Any, names: Sequence[str]) -> tuple[Group, ...]:
    """Saved groups (``params.groups``): a list of :meth:`Group.to_dict` mappings, no
    comparison in two of them."""
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"params.groups: expected a list of groups, got {items!r}")
    out = tuple(Group.from_dict(d, names) for d in items)
    every = [k for g in out for k in g.comparisons]
    if len(every) != len(set(every)):
        raise ValueError("params.groups: a comparison is in more than one group")
    return out


def declared_groups(model: Any) -> tuple[tuple[int, ...], ...]:
    """The model's declared groups as comparison indices (``()`` for ``"auto"`` or none);
    raises naming the unknown entry (checked when the model is bound, before a run)."""
    if isinstance(model.groups, str) or not model.groups:
        return ()
    names = [s.name for s in model.specs_ or ()]
    columns = [(c.column, c.right_column or c.column) for c in model.comparisons_]
    return resolve_groups(model.groups, names, columns)


def fit_groups(model: Any, hists: Mapping[int, PatternHistogram],
               random: PatternHistogram | None) -> tuple[Group, ...]:
    """The fitted model's groups (module doc): declared ones, or with ``"auto"`` those
    :func:`find_groups` finds among ``random`` (None: not summarised, so none); each
    with μ by :func:`fit_mu` on the candidates' histograms ``hists`` (by key pass), the
    groups fitted before it held. Both histograms are read as the model scores: with
    the comparisons another implies masked (:mod:`.implied`). Sets ``model.groups_``."""
    specs = model.specs_ or ()
    n_levels = [s.n_levels for s in specs]
    hists = {p: mask_hist(h, model.implied_, n_levels) for p, h in hists.items()}
    candidates: tuple[tuple[int, ...], ...] = declared_groups(model)
    declared = bool(candidates)
    if model.groups == "auto" and random is not None:
        locates = [getattr(c.kernel, "locates", None) for c in model.comparisons_]
        candidates = find_groups(mask_hist(random, model.implied_, n_levels), n_levels,
                                 locates, model.m_, model.u_, float(model.lambda_),
                                 tuple(model.implied_))
    model.groups_ = ()
    for g in candidates:
        mu, n_iter, converged = fit_mu(model.ungrouped_parts, hists, g)
        if declared or mu >= MU_MIN:
            model.groups_ = (*model.groups_, Group(g, mu, n_iter, converged, declared))
    return tuple(model.groups_)
