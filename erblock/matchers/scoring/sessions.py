"""What training produces: EM sessions (one per group of key passes), the trained model's
parts, and how the sessions' m are pooled into one model (module doc of
:mod:`.training`, steps 4 and 6)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..levels import PatternHistogram, kl_bits

DEGENERATE = 0.9  #: a session fit whose λ is above this is not used to find non-matches
INVERTED_Z = 3.0  #: matches agreeing less than random pairs by this many standard errors
INVERTED_GAP = 0.05  #: ... and by this much (absolute), or half as often
#: a fit below DEGENERATE whose matches carry less than this share of a degenerate fit's
#: evidence (on the comparisons both hold free) found no matches (:func:`_hollow`)
EVIDENCE_RATIO = 0.5


@dataclass
class Session:
    """One EM session: the passes it pools, what it deactivated and what it found."""

    passes: tuple[int, ...]
    blocked: tuple[int, ...]
    detected: tuple[int, ...] = ()
    pairs: int = 0
    lam: float = float("nan")
    n_iter: int = 0
    converged: bool = False
    trained: bool = False
    trusted: bool = True  #: False: a near-1 λ_s or an inverted fit beside sane sessions
    #: comparisons (random-pair u) its matches agree on less often than random pairs
    inverted: tuple[int, ...] = ()
    #: why it is not trusted: "degenerate", "inverted" or "no evidence"
    set_aside: str = ""
    #: its three-class fit (:func:`.related.fit_related`): an inverted session's, or any
    #: other's once one session found related records
    related: dict[str, Any] | None = None
    m: dict[int, np.ndarray] = field(default_factory=dict)
    m_blocked: dict[int, np.ndarray] = field(default_factory=dict)
    u_blocked: dict[int, np.ndarray] = field(default_factory=dict)
    m_fixed: tuple[int, ...] = ()  #: selected comparisons whose m other sessions gave
    #: comparisons no key selects whose m other sessions gave: a weak fit (:func:`weak`)
    m_held: tuple[int, ...] = ()
    #: per comparison, the session's expected matches among the pairs where it is present
    seen_matches: dict[int, float] = field(default_factory=dict)

    @property
    def matches(self) -> float:
        return self.lam * self.pairs if self.trained and self.trusted else 0.0

    def matches_with(self, k: int) -> float:
        """Expected matches whose comparison ``k`` is present: what the session's m of
        ``k`` was estimated from (a comparison always missing here learnt nothing)."""
        return self.seen_matches.get(k, 0.0) if self.trained and self.trusted else 0.0

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        return {"passes": list(self.passes), "pairs": self.pairs,
                "deactivated": [names[k] for k in self.blocked],
                "detected": [names[k] for k in self.detected],
                "m_fixed": [names[k] for k in self.m_fixed],
                "m_held": [names[k] for k in self.m_held],
                "lambda": self.lam if self.trained else None, "n_iter": self.n_iter,
                "converged": self.converged, "trained": self.trained,
                "trusted": self.trained and self.trusted,
                "inverted": [names[k] for k in self.inverted],
                "set_aside": self.set_aside or None,
                "related": None if self.related is None else {
                    "pi": list(self.related["pi"]), "n_iter": self.related["n_iter"],
                    "converged": self.related["converged"],
                    **{part: {names[k]: np.asarray(v).tolist()
                              for k, v in enumerate(self.related[part])}
                       for part in ("m", "r", "u")}},
                "m_selected": {names[k]: v.tolist() for k, v in self.m_blocked.items()},
                "u_selected": {names[k]: v.tolist() for k, v in self.u_blocked.items()}}


@dataclass
class Trained:
    """The outcome: λ of a random pair, m per comparison, sessions, warnings."""

    lam: float
    m: list[np.ndarray]
    m_source: list[str]
    sessions: list[Session]
    warnings: list[str]
    n_candidates: int
    lam_iterations: int  #: of the random-pair λ's fixed point
    u: list[np.ndarray] = field(default_factory=list)  #: only when u was trained too
    #: λ before the random pairs' related records were set apart (None: they were not)
    lam_two_class: float | None = None


def fit_warnings(s: Session, where: str) -> list[str]:
    """What a trained session's EM did wrong: no convergence, a match share at 0 or 1
    (a session set aside for its λ is warned about where it is set aside)."""
    out = []
    if not s.converged:
        out.append(f"{where} did not converge in {s.n_iter} iterations")
    if (s.lam < 1e-4 or s.lam > 0.99) and s.trusted:
        out.append(f"{where}: the share of matches ran to {s.lam:.3g}; check the comparisons "
                   "and the blocking")
    return out


def session_m(hist: PatternHistogram, pooled: Mapping[int, np.ndarray]
              ) -> dict[int, np.ndarray]:
    """m among a session's matches from the pooled m: the key also selects its matches,
    so levels that none of the session's candidates reaches (a key on the exact date
    leaves only the exact level) are impossible there, and the rest keep their ratios."""
    gamma, counts = hist.gamma(), hist.counts
    out = {}
    for k, m in pooled.items():
        sel = gamma[:, k] >= 0
        seen = np.bincount(gamma[sel, k], weights=counts[sel], minlength=len(m))[:len(m)] > 0
        if seen.sum() > 1 and float(m[seen].sum()) > 0:  # one level left: no evidence
            out[k] = np.where(seen, m, 0.0) / float(m[seen].sum())
    return out


def inverted(s: Session, u: Sequence[np.ndarray]) -> tuple[int, ...]:
    """Comparisons with random-pair u on which the session's matches agree at the top
    level less often than random pairs do: by ``INVERTED_Z`` standard errors of its
    expected matches where the comparison is present, and by ``INVERTED_GAP`` or half.
    Matches agree at least about as often as random pairs on any comparison that carries
    evidence (a near-constant column, a country that random pairs share 99.9 % of the
    time, may see matches at 99.7 %: not a material gap), so such a fit's match class is
    something else: related records (the members of a household, who agree on surname,
    address and phone and, being partners, less often on sex than random pairs do)."""
    out = []
    for k, m in s.m.items():
        n = s.seen_matches.get(k, 0.0)
        if len(m) < 2 or n <= 0:
            continue
        top, rnd = float(m[-1]), float(u[k][-1])
        significant = rnd - top > INVERTED_Z * math.sqrt(rnd * (1.0 - rnd) / n)
        if significant and (rnd - top >= INVERTED_GAP or top <= 0.5 * rnd):
            out.append(k)
    return tuple(out)


def evidence(s: Session, u: Sequence[np.ndarray], among: set[int] | None = None) -> float:
    """The mean weight of evidence of a session's matches, in bits: the KL divergence of
    its m from the random-pair u, summed over the comparisons it holds free (those whose
    u is the random pairs'), or over those of them ``among``."""
    return sum(kl_bits(m, u[k]) for k, m in s.m.items() if among is None or k in among)


def weak(sessions: Sequence[Session], u: Sequence[np.ndarray],
         min_matches: float) -> dict[int, tuple[int, frozenset[int]]]:
    """Trusted sessions whose matches carry less than ``EVIDENCE_RATIO`` of the evidence
    of another trusted, not weak session's matches, on the comparisons both hold free
    (at least ``min_matches`` expected matches each where they are present): session ->
    (the strongest such other session, those comparisons).

    m is a property of the matches: on what no key selects, the matches of any pass agree
    alike. A fit whose "matches" agree far less there has split off something else: a
    key correlated with a free comparison (a first-name pass selects people born in the
    same years: EM took 45 % of its 545,000 candidates, those of similar age, for
    matches, and the model expected 22 matches per record) or chance agreements where an
    earlier pass found every match. Its m is then held at the other sessions' and its u
    taken among its own candidates (its key gathers non-matches alike on those
    comparisons), and its match share refitted (:func:`~.training.train`). Sessions are
    judged from the one whose matches carry the most evidence down, each against those
    already found not weak, so at least one always stands (pairwise the relation can
    cycle when each pair is judged on other comparisons)."""
    ok = [i for i, s in enumerate(sessions) if s.trained and s.trusted and s.m]
    ok.sort(key=lambda i: -evidence(sessions[i], u))
    standing: list[int] = []
    out: dict[int, tuple[int, frozenset[int]]] = {}
    for i in ok:
        best: tuple[int, frozenset[int]] | None = None
        strength = 0.0
        for j in standing:
            common = frozenset(k for k in set(sessions[i].m) & set(sessions[j].m)
                               if min(sessions[i].matches_with(k), sessions[j].matches_with(k))
                               >= min_matches)
            if not common:
                continue
            mine, theirs = evidence(sessions[i], u, set(common)), evidence(sessions[j], u,
                                                                           set(common))
            if mine < EVIDENCE_RATIO * theirs and theirs > strength:
                best, strength = (j, common), theirs
        if best is None:
            standing.append(i)
        else:
            out[i] = best
    return out


def _hollow(sessions: Sequence[Session], u: Sequence[np.ndarray] | None) -> set[int]:
    """Sessions (indexes) fitted below ``DEGENERATE`` whose matches carry less than
    ``EVIDENCE_RATIO`` of the evidence of a degenerate fit's matches, on the comparisons
    both hold free, when every such fit is so. Matches agree alike on what no key
    selects, whichever pass found them; a degenerate fit that took a comparison its key
    fixes for evidence calls non-matches matches, which agree on little else, while a
    pass on an identifier that found every match first leaves later passes none (EM then
    splits off namesakes or chance agreements, far weaker). Only then is the degenerate
    fit believed; anywhere else nothing changes."""
    if u is None:
        return set()
    sane = [i for i, s in enumerate(sessions) if s.trained and s.lam <= DEGENERATE]
    high = [s for s in sessions if s.trained and s.lam > DEGENERATE]

    def weaker(s: Session) -> bool:
        for d in high:
            common = set(s.m) & set(d.m)
            if evidence(s, u, common) < EVIDENCE_RATIO * evidence(d, u, common):
                return True
        return False

    return set(sane) if high and sane and all(weaker(sessions[i]) for i in sane) else set()


def distrust(sessions: Sequence[Session], u: Sequence[np.ndarray] | None = None
             ) -> list[Session]:
    """Mark (and return) the sessions whose λ_s is above ``DEGENERATE`` while another
    trained session's is not ("degenerate"), and, given the random-pair ``u``, those with
    an :func:`inverted` fit while another trained session is neither ("inverted"; module
    doc of :mod:`.training`, step 6). When every fit below ``DEGENERATE`` found matches
    far weaker than a degenerate fit's, those are set aside instead ("no evidence",
    :func:`_hollow`)."""
    for s in sessions:
        s.inverted = inverted(s, u) if u is not None and s.trained else ()
    hollow = _hollow(sessions, u)
    sane = any(s.trained and s.lam <= DEGENERATE and i not in hollow
               for i, s in enumerate(sessions))
    plain = any(s.trained and s.lam <= DEGENERATE and not s.inverted and i not in hollow
                for i, s in enumerate(sessions))
    out = []
    for i, s in enumerate(sessions):
        s.set_aside = ("" if not s.trained else "no evidence" if i in hollow
                       else "degenerate" if sane and s.lam > DEGENERATE
                       else "inverted" if plain and s.inverted else "")
        s.trusted = not s.set_aside
        if not s.trusted:
            out.append(s)
    return out


def pooled_m(sessions: Sequence[Session], K: int, selected: bool = False
             ) -> dict[int, np.ndarray]:
    """m of each comparison averaged over the sessions that did not select on it (with
    ``selected``: over those that did, estimated among their candidates), weighted by
    their expected matches where it is present; comparisons no such session saw are
    left out."""
    out: dict[int, np.ndarray] = {}
    for k in range(K):
        pool = [((s.m_blocked if selected else s.m)[k], s.matches_with(k)) for s in sessions
                if k in (s.m_blocked if selected else s.m) and s.matches_with(k) > 0]
        if pool:
            out[k] = np.average(np.stack([x for x, _ in pool]), axis=0,
                                weights=[w for _, w in pool])
    return out


def against_references(sessions: Sequence[Session], againsts: Sequence[frozenset[int]],
                       pooled: Mapping[int, np.ndarray], u: Sequence[np.ndarray],
                       min_matches: float) -> dict[int, tuple[int, np.ndarray]]:
    """For each comparison that only earlier keys select on and no session has free:
    the session (index) whose first, free fit tells its matches from random pairs best
    (the largest KL divergence of its m from the random-pair u), among the trusted ones
    with at least ``min_matches`` expected matches where it is present, and that m
    (module doc of :mod:`.training`, step 4). Related records that a key gathers (housemates a postcode pass
    finds) pull a session's m of the names toward u, so the best-separated estimate is
    the least contaminated one, whatever the order of the passes."""
    best: dict[int, tuple[float, int, np.ndarray]] = {}
    for i, s in enumerate(sessions):
        if not (s.trained and s.trusted):
            continue
        for k in againsts[i]:
            if k in pooled or k not in s.m_blocked or s.matches_with(k) < min_matches:
                continue
            m = np.asarray(s.m_blocked[k], dtype=np.float64)
            kl = kl_bits(m, u[k])  # the largest, in any base
            if k not in best or kl > best[k][0]:
                best[k] = (kl, i, m)
    return {k: (i, m) for k, (_, i, m) in best.items()}


def weak_warning(s: Session, strong: Session, common: frozenset[int], lam: float,
                 u: Sequence[np.ndarray], names: Sequence[str]) -> str:
    """What is said of a :func:`weak` session ``s`` (judged against ``strong`` on
    ``common``) refitted to match share ``lam``."""
    return (f"EM on passes {list(s.passes)} called {s.lam:.0%} of its {s.pairs} candidates "
            f"matches, whose agreement on {', '.join(names[k] for k in sorted(common))} "
            f"carries {evidence(s, u, set(common)):.1f} bits against "
            f"{evidence(strong, u, set(common)):.1f} for those of passes {list(strong.passes)}: "
            "not matches (a key correlated with a compared column, such as first names "
            "with birth years, gathers alike non-matches); refitted with the other "
            "sessions' m held and u among its own candidates, its match share is "
            f"{lam:.2%}")
