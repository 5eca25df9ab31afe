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

**Which comparisons** (``groups="auto"``): :mod:`.group_finding`, without the personal
members (:func:`_shared_by_housemates`: a mover keeps an identifier that housemates
copied) and what joined through them alone. A group needs two
comparisons and a fitted μ of at least :data:`MU_MIN` (otherwise no match behaves so
and the plain model stands). ``groups=[[...], ...]`` declares groups instead (their μ is
fitted all the same); ``groups=None`` uses none.

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

from ..levels import PatternHistogram
from .group_finding import find_groups, non_matches
from .implied import mask_hist
from .related import R_PSEUDO

RELATED_MIN_PAIRS = 20.0  #: fewer random non-matches agreeing on a whole group: no r
#: a member whose agreement says "one address" defines related records only where the pairs
#: at one address (the rest of the group) share it at least this share as often as matches
RELATED_SHARE = 0.5
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
    agrees is mostly a neighbour's). A personal member of the group (an identifier that
    some records copied from a housemate's: :func:`_shared_by_housemates`) defines
    nothing here and is read off the related pairs like a comparison off the group; a
    found group is found again without it, so that what joined through it alone leaves
    too (a middle initial that goes with the identifier, not with the address)."""
    groups = declared or find_groups(random, n_levels, locates, m, u, lam, implied)
    if not groups:
        return None
    seen = _Seen(random, n_levels, locates, m, u, lam, implied)
    parts = seen.housemates(max(groups, key=len), bool(declared))
    if not parts:
        return None
    group = parts[0]  # what is left of the address (not a landline split off it)
    g, w, top, present = seen.g, seen.w, seen.top, seen.present
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


class _Seen:
    """The random pairs as group checks read them: levels ``g``, non-match weights ``w``
    (:func:`.group_finding.non_matches`), and per comparison its top level (a member
    that ``implied`` masks where its implier agrees counts as agreeing there) and
    presence."""

    def __init__(self, random: PatternHistogram, n_levels: Sequence[int],
                 locates: Sequence[bool | None], m: Sequence[np.ndarray],
                 u: Sequence[np.ndarray], lam: float,
                 implied: Sequence[tuple[int, int]] = ()) -> None:
        self.args = (random, n_levels, locates, m, u, lam, implied)
        self.g = g = random.gamma()
        self.w = non_matches(g, random.counts, locates, m, u, lam)
        self.top = {k: g[:, k] == n - 1 for k, n in enumerate(n_levels)}
        for j, k in implied:  # read as missing where j agrees: there it agrees as well
            self.top[k] = self.top[k] | ((g[:, k] < 0) & (g[:, j] == n_levels[j] - 1))
        self.present = {k: (g[:, k] >= 0) | self.top[k] for k in self.top}

    def housemates(self, group: Sequence[int], declared: bool = False
                   ) -> list[tuple[int, ...]]:
        """``group`` without its personal members (:func:`_shared_by_housemates`) and,
        unless ``declared``, without what joined it through them only: the group is
        found again without them (a middle initial that goes with a copied SSN among
        misjudged matches, not with the address, leaves with it). The parts left of it
        (a personal member that bridged an address and a landline leaves two), each
        checked again, of two members at least; the largest first (ties: more members
        of a locating kind)."""
        random, n_levels, locates, m, u, lam, implied = self.args
        personal: set[int] = set()
        todo, out = [tuple(group)], []
        while todo:
            part = todo.pop()
            kept = _shared_by_housemates(part, self.top, self.present, self.w, m, locates)
            if len(kept) == len(part) or declared:
                out += [kept] if len(kept) >= 2 else []
                continue
            personal |= set(part) - set(kept)
            found = find_groups(random, n_levels, locates, m, u, lam, implied, personal)
            todo += [f for f in found if set(f) <= set(part)]  # found within this part
        return sorted(out, key=lambda f: (-len(f), -sum(bool(locates[k]) for k in f)))


def _shared_by_housemates(group: Sequence[int], top: Mapping[int, np.ndarray],
                          present: Mapping[int, np.ndarray], w: np.ndarray,
                          m: Sequence[np.ndarray], locates: Sequence[bool | None]
                          ) -> tuple[int, ...]:
    """The members of ``group`` that define related records: all but a personal one. A
    member of no locating kind, beside two others or more, is personal when, among the
    random non-matches (weights ``w``) with every member present, most pairs at its top
    level are at the top level of all the others (its agreement says "one address")
    but, of the pairs at the top level of all the others, fewer than
    :data:`RELATED_SHARE` of the matches' share (``m``) are at its own (most housemates
    do not share it), both judged on :data:`RELATED_MIN_PAIRS` pairs at least. An
    identifier that some records copied from a housemate's is such a member. A landline
    or a postcode (kinds that locate a record) never is, nor is a member beside a single
    other one (a postcode alone holds many households, few of whose pairs share a
    landline), nor a house number, which pairs on one street share rarely but which does
    not say "one street" on its own."""
    everywhere = np.logical_and.reduce([present[k] for k in group])
    keep = []
    for k in group:
        rest = everywhere.copy()
        for j in group:
            if j != k:
                rest &= top[j]
        own = everywhere & top[k]
        n_own, n_rest = float(w[own].sum()), float(w[rest].sum())
        both = float(w[own & rest].sum())
        personal = (not locates[k] and len(group) >= 3
                    and n_own >= RELATED_MIN_PAIRS and n_rest >= RELATED_MIN_PAIRS
                    and both >= 0.5 * n_own
                    and both < RELATED_SHARE * float(m[k][-1]) * n_rest)
        if not personal:
            keep.append(k)
    return tuple(keep)


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
        masked = mask_hist(random, model.implied_, n_levels)
        found = find_groups(masked, n_levels, locates, model.m_, model.u_,
                            float(model.lambda_), tuple(model.implied_))
        seen = _Seen(masked, n_levels, locates, model.m_, model.u_, float(model.lambda_),
                     tuple(model.implied_)) if found else None
        # a personal member does not move with the address: out of the group
        candidates = tuple(h for f in found for h in seen.housemates(f)) if seen else ()
    model.groups_ = ()
    for g in candidates:
        mu, n_iter, converged = fit_mu(model.ungrouped_parts, hists, g)
        if declared or mu >= MU_MIN:
            model.groups_ = (*model.groups_, Group(g, mu, n_iter, converged, declared))
    return tuple(model.groups_)
