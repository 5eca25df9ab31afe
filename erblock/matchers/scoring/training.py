"""Training an unsupervised Fellegi-Sunter model from what a run summarised, whatever the
blocking (pure numpy: the engine hands over histograms, never pairs).

The model scores a pair by ``logit₂ λ + Σ_k log₂(m_k[γ_k] / u_k[γ_k])``: λ is the prior of
a *random* pair, u the level shares among random record pairs (estimated directly), m the
level shares among matches. Candidate pairs are not random pairs: blocking selected them
on some columns, so on those columns non-matching candidates agree far more often than
random pairs do. Training follows from that:

1. **Sessions.** Pairs are summarised per key pass (the first pass that found them). The
   comparisons a pass *selects on* are set apart in its session: the columns its key
   reads, the columns the key says it derives from, those of every earlier pass,
   declared or detected in its session (its pairs are the ones the earlier keys did
   *not* find: selected against them), and comparisons detected from the data (step 3).
   Passes share a session only when both their own keys' columns and that whole set are
   the same (two late passes keyed on different columns select different non-matches:
   pooled, no one model fits them).
2. **EM per session**: the comparisons the session does not select on keep u fixed at
   the random-pair values (they anchor the fit); those its own keys select on get a free
   u, estimated among the candidates (among candidates their non-matches agree far more
   often than random pairs). Those only *earlier* passes select on take the u of the
   random pairs no earlier key agrees on (the engine tells each random pair's first
   agreeing pass), restricted to the levels the session's candidates reach: its pairs
   are those the earlier keys missed, so its non-matches are too (a restaurant pass after
   one on the name's first word: most random pairs with the same name share that word,
   so among the rest the same name is far rarer). λ_s and every m are free. EM starts
   from several λ (the best likelihood wins); a small pseudo-count keeps unseen levels
   finite.
3. **Detection.** An active comparison k is tested against conditional independence:
   among the session's *clear non-matches* by the other comparisons (posterior without k
   below 1 %), its levels above "else" should be as frequent as among random pairs. When
   they are far more frequent (more than 10 times, and in at least 30 % of those pairs),
   or "else" is far rarer (10 times: a city that random pairs share a fifth of the time
   can be shared by 93 % of the non-matches an area-code key selects, only 4.4 times as
   often, but they disagree 11 times less often), or they are 3 times as frequent in so
   many non-matches that those reach half the matches the fit finds besides them (a city
   key whose non-matches share street words 9 times as often as random pairs; relatives
   sharing a first name in a surname block), the blocking selected on k (a ready-made
   key column derived from it, a column correlated with the key): k gets a free u in
   that session and the session is refitted. A known risk: when the others leave no
   clear non-match (below), the weighted pairs include true matches, and the third test
   can then flag a strong comparison the key does not select on (its u is freed; in
   simulations the fit held); clear non-matches must be below half the prior, so that
   with a tiny λ_s and the others missing the prior alone does not make matches clear.
   (Clear non-matches are judged by the fit's m, then by generic m: a fit that took k
   for evidence has learnt the levels of k's non-matches as m of the others; when it
   called nearly every candidate a match, only generic m and an even prior are used;
   when the others leave fewer clear non-matches than needed, every pair counts with the
   weight 1 − P(match | the others): a restaurant link blocked on the first word of the
   name, a third of its candidates true, has no clear non-match by address and phone.)
4. **m** of a comparison is the average of its estimates over the sessions that did not
   select on it, weighted by their expected matches; a comparison every session selects
   on takes its estimates among the candidates (``m_source`` says which); one with no
   trained session keeps default m (reported, with a warning). A key changes how often
   *non-matches* agree on what it selects on far more than how matches agree, so a
   session is then refitted with the m that other sessions estimated for the comparisons
   its own keys select on (declared or detected) held fixed (``m_fixed``), restricted to
   the levels the session's candidates reach (a key selects its matches too: on an exact
   date key only the exact level is left): only λ_s and those comparisons' u stay free
   there. The columns of earlier passes get the same treatment: the session's pairs are
   those their keys missed, so its matches agree less there, which the restriction to
   the levels left says (an earlier key on the exact name leaves no exact names), and
   their u is fixed as in step 2. Where no session has such a comparison free (every
   key selects on the names), its m is held at the estimate of the session selected
   against it whose free fit tells matches from random pairs best (the largest KL
   divergence from u, among trusted sessions with at least 20 expected matches where it
   is present), whatever the order of the passes; that session keeps it free. Left
   free everywhere, it learns what each key's non-matches share: a postcode pass after
   passes on the names and the date finds flatmates, whose names then read as matches'
   names (precision 0.50), and the related records pull the names' m toward u. Apart
   from that reference, only what no key touches keeps a free m. Without
   this, a pass whose free comparisons are few or correlated with its key (a second pass
   on area code and house number, where the city always agrees; the tenth pass of a
   person blocking, after keys on every name, date and postcode) can explain its
   candidates as mostly matches that disagree on the phone or on both names.
   A session whose matches carry under half the evidence of another's on the comparisons
   both hold free (:func:`.sessions.weak`: a first-name pass gathers people of one age) is
   refitted with their m held (``m_held``), their u among its candidates, and warned about.
5. **λ** is the fixed point of λ = Σ_candidates P(match | γ; λ) / (pairs in all), i.e. EM
   over all record pairs assuming the pairs blocking did not find are non-matches
   (divided by the assumed ``recall`` of the blocking, 1 by default); the pairs of a
   pass scored with three classes (step 6) count with the matches that fit expects.
6. **Scoring a candidate** uses what its pass's session learnt where the blocking selected:
   the session's λ_s (the prior of a pair *that shares this key*) and, for the comparisons
   the pass selects on, their m and u among its candidates; the other comparisons use the
   pooled m and random-pair u. This is P(match | γ, found by this pass) under conditional
   independence: the agreement a key implies (the same first title word, a similar
   surname sound) is evidence that γ alone does not carry, so scoring candidates with
   the random-pair prior would miss it (DBLP-ACM blocked on year and the first title word:
   recall 0.50 instead of 0.96 with raw ``token_sort`` titles). Pairs of a pass whose
   session could not be trained are scored with λ and the random-pair u, and so are those
   of a session that called nearly all its candidates matches (λ_s above 0.9) while other
   sessions did not (it has most likely taken a comparison the key fixes for evidence),
   unless every other session's matches carry under half its matches' evidence on the
   comparisons both hold free (an identifier pass found every match first and left the
   others only chance agreements): those are then set aside instead ("no evidence",
   :func:`.sessions.distrust`; they are not refitted).
   A session is *inverted* when its matches agree on a comparison with random-pair u
   less often than random pairs do (by 3 standard errors, and by 0.05 or half), which no
   set of matches does on a comparison that carries evidence: it took related records
   for matches (a postcode pass of a register with households, whose "matches" were
   partners: the same surname, address and phone, and the same sex 42 % of the time
   where random pairs have 50 %). While another session is neither, its pairs are scored
   with three classes (:mod:`.related`: matches with the model's m held, the related
   records, non-matches). Either kind is reported (``trusted``, ``set_aside``,
   ``inverted``), warned about and left out of m. Related records are not one pass's:
   twins share a date of birth, housemates an initial, so once one session has them
   every other trained session is scored with three classes too: its m (as it scores
   with it), r and u held, the shares, its own key's u and r where the first session
   could not learn it fitted. The two-class fits that gave m counted the related records
   they held as matches, so m is pooled again from three-class fits where it is free
   (:mod:`.third_class`). Without an inverted session, the related records' r is read
   off the random pairs that agree on a whole address group (``related``:
   :func:`.groups.related_profile`), and every session is fitted the same way.

Sessions report passes, deactivated comparisons, pairs, λ_s, iterations and convergence;
warnings say when EM did not converge, λ_s ran to 0 or 1, a session was set aside
(degenerate or inverted), or an exact level has m < u.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..em import fit_em
from ..levels import M_PSEUDO, PatternHistogram, default_m, posterior
from .detection import detect_selected
from .related import seen_levels, truncated
from .sessions import (
    Session,
    Trained,
    against_references,
    distrust,
    fit_warnings,
    pooled_m,
    session_m,
    weak,
    weak_warning,
)
from .third_class import MIN_MATCHES, fit_third_class

MIN_SESSION_PAIRS = 20  #: a session with fewer pairs trains nothing
MIN_COMPARISONS = 2  #: a model of fewer comparisons is not identifiable: nothing trains
LAMBDA_STARTS = (0.02, 0.2, 0.6)
LAMBDA_MAX_ITER = 500  #: iterations of the random-pair λ's fixed point
LAMBDA_FLOOR = 1e-12  #: the smallest random-pair λ (a fit that expects no match at all)


def _em(gamma: np.ndarray, counts: np.ndarray, n_levels: Sequence[int],
        u: Sequence[np.ndarray], fixed: Sequence[bool], max_iter: int, tol: float,
        m_known: Mapping[int, np.ndarray] | None = None) -> dict[str, Any]:
    """EM from several starting λ; the fit with the highest likelihood. ``m_known``:
    comparisons whose m is held at the given values."""
    known = dict(m_known or {})
    m0 = [known[k] if k in known else default_m(n) for k, n in enumerate(n_levels)]
    fix_m = [k in known for k in range(len(n_levels))]
    best: dict[str, Any] | None = None
    for lam0 in LAMBDA_STARTS:
        res = fit_em(gamma, counts, n_levels, u, m=m0, lam=lam0, fix_u=list(fixed),
                     max_iter=max_iter, tol=tol, pseudo=M_PSEUDO, fix_m=fix_m)
        if best is None or res["loglik"] > best["loglik"] + 1e-9:
            best = res
    assert best is not None
    return best


def _candidate_u(gamma: np.ndarray, counts: np.ndarray, k: int, n: int) -> np.ndarray:
    """Level shares of comparison ``k`` among the candidates (a starting u)."""
    sel = gamma[:, k] >= 0
    c = np.bincount(gamma[sel, k], weights=counts[sel], minlength=n)[:n]
    return (c + 1.0) / (c.sum() + n)


def _session(hist: PatternHistogram, passes: tuple[int, ...], blocked: set[int],
             n_levels: Sequence[int], u: Sequence[np.ndarray], detect: bool,
             max_iter: int, tol: float,
             m_known: Mapping[int, np.ndarray] | None = None,
             against: frozenset[int] = frozenset(),
             u_against: Sequence[np.ndarray] | None = None) -> Session:
    """EM on one session: comparisons the passes select on keep a free u (estimated among
    the candidates), the others u of random pairs (module doc, steps 2–3); ``m_known``
    holds the m of selected comparisons that other sessions estimated (step 4);
    ``against``: blocked comparisons that only earlier passes select on, whose u is the
    random pairs' (``u_against``: those the earlier passes miss) restricted to the
    levels the candidates reach (step 2)."""
    gamma, counts = hist.gamma(), hist.counts.astype(np.float64)
    s = Session(passes, tuple(sorted(blocked)), pairs=hist.total)
    detected: list[int] = []
    cols = list(range(len(n_levels)))
    src = u if u_against is None else u_against
    u_ag = {k: truncated(np.asarray(src[k], dtype=np.float64),
                              seen_levels(gamma, counts, k, n_levels[k])) for k in against}
    generic = [default_m(n) for n in n_levels]
    while True:
        active = [k not in blocked for k in cols]
        fixed = [a or k in u_ag for k, a in zip(cols, active)]
        anchored = sum(active) >= 1 or any(k in (m_known or {}) for k in blocked)
        if hist.total < MIN_SESSION_PAIRS or not anchored or len(cols) < MIN_COMPARISONS:
            return s  # (a weak fit's refit is anchored on the m held, not on random u)
        start_u = [u_ag[k] if k in u_ag and k in blocked
                   else u[k] if a else _candidate_u(gamma, counts, k, n_levels[k])
                   for k, a in zip(cols, active)]
        res = _em(gamma, counts, list(n_levels), start_u, fixed, max_iter, tol, m_known)
        if detect and sum(active) > 1:
            j = detect_selected(gamma, counts, active, res["m"], res["u"], res["lambda"],
                                generic)
            if j is not None:
                blocked = blocked | {cols[j]}
                detected.append(cols[j])
                continue
        break
    s.blocked, s.detected = tuple(sorted(blocked)), tuple(detected)
    s.m_fixed = tuple(sorted(k for k in (m_known or {}) if k in blocked))
    s.lam, s.n_iter, s.converged, s.trained = (float(res["lambda"]), int(res["n_iter"]),
                                               bool(res["converged"]), True)
    post = counts * posterior(gamma, res["m"], res["u"], res["lambda"])
    for k in cols:
        (s.m_blocked if k in blocked else s.m)[k] = np.asarray(res["m"][k])
        if k in blocked:
            s.u_blocked[k] = np.asarray(res["u"][k])
        s.seen_matches[k] = float(post[gamma[:, k] >= 0].sum())
    return s


def train(hists: Mapping[int, PatternHistogram], u: Sequence[np.ndarray],
          n_levels: Sequence[int], blocked: Mapping[int, set[int]], total_pairs: float,
          names: Sequence[str], *, recall: float = 1.0, detect: bool = True,
          max_iter: int = 1000, tol: float = 1e-4,
          u_before: Callable[[int], Sequence[np.ndarray]] | None = None,
          random: PatternHistogram | None = None, implied: Sequence[tuple[int, int]] = (),
          related: Callable[..., Sequence[np.ndarray] | None] | None = None) -> Trained:
    """Train λ and m from per-pass histograms (see the module doc).

    ``hists``: pass -> histogram of the level vectors of the pairs it found first;
    ``u``: random-pair level shares per comparison; ``blocked``: pass -> comparisons it
    is known to select on; ``total_pairs``: all record pairs (n(n−1)/2 or n_R·n_S);
    ``u_before``: pass ``p`` -> u of the random pairs no pass before ``p`` agrees on
    (what earlier keys select against takes it; ``u`` when not given); ``related``:
    ``(random, m=, u=, lam=, implied=)`` -> the related records' r read off the
    ``random`` pairs (``implied``: the comparisons masked in them), or None.
    """
    warnings: list[str] = []
    if len(n_levels) < MIN_COMPARISONS:
        warnings.append(f"EM needs at least {MIN_COMPARISONS} comparisons: with one, "
                        "matches cannot be told from non-matches that agree on it, so "
                        "nothing is trained; compare more columns, or score with a "
                        "threshold or a supervised model")
    groups: dict[tuple[frozenset[int], frozenset[int]], list[int]] = {}
    earlier: set[int] = set()
    for p in sorted(set(hists) | set(blocked)):
        # a pair belongs to the first pass that found it: a later pass's pairs are also
        # selected (against) on what every earlier pass selects on
        own = frozenset(blocked.get(p, set()))
        earlier |= own
        if p in hists:
            groups.setdefault((frozenset(earlier), own), []).append(p)
    sessions, merged, againsts = [], [], []
    found: dict[int, tuple[int, ...]] = {}  # pass -> detected: later passes select against
    for (b, own), passes in groups.items():
        merged.append(PatternHistogram.merge([hists[p] for p in passes]))
        selected = set().union(*(v for p, v in found.items() if p < passes[0])) | b
        againsts.append(frozenset(selected - own))
        sessions.append(_session(merged[-1], tuple(passes), selected, n_levels, u, detect,
                                 max_iter, tol, against=againsts[-1],
                                 u_against=u_before(passes[0]) if u_before else None))
        found.update(dict.fromkeys(passes, sessions[-1].detected))
    K = len(n_levels)
    # step 4: m is a property of the matches, which blocking does not make agree less; a
    # session refits with the m other sessions estimated for what its own and earlier
    # keys select on held fixed (restricted to the levels its candidates reach), so only
    # λ_s, the m of what no key touches and the non-matches' u of its own key's
    # comparisons are free there.
    distrust(sessions, u)
    weaker = weak(sessions, u, MIN_MATCHES)  # a fit whose matches are something else
    for i in weaker:
        sessions[i].trusted = False  # left out of the pooled m and the references
    pooled = pooled_m(sessions, K)
    refs = against_references(sessions, againsts, pooled, u, MIN_MATCHES)
    first = list(sessions)  # the first fits (a weak one is judged against one of them)
    for i, s in enumerate(sessions):
        keyed = set(s.detected).union(*(blocked.get(p, set()) for p in s.passes), againsts[i])
        held = {k: pooled[k] for k in keyed if k in pooled}
        held.update({k: m for k, (j, m) in refs.items() if k in againsts[i] and j != i})
        gathered: set[int] = set()  # a weak fit's: its key gathers alike non-matches
        if i in weaker:  # m held, u among its candidates: its match share is refitted
            gathered = {k for k in s.m if k in pooled}
            held.update({k: pooled[k] for k in gathered})
        known = session_m(merged[i], held)
        if s.trained and known and s.set_aside != "no evidence":  # it found no matches
            refit = _session(merged[i], s.passes, set(s.blocked) | (gathered & set(known)),
                             n_levels, u, False, max_iter, tol, known,
                             againsts[i] - set(s.detected),
                             u_before(s.passes[0]) if u_before else None)
            refit.detected = s.detected
            if i in weaker:
                refit.m_held = tuple(sorted(gathered & set(known)))
                warnings.append(weak_warning(s, first[weaker[i][0]], weaker[i][1], refit.lam, u,
                                             names))
            sessions[i] = refit
    for s in distrust(sessions, u):
        if s.set_aside == "inverted":
            what = ", ".join(f"{names[k]} ({s.m[k][-1]:.3g} vs {u[k][-1]:.3g})"
                             for k in s.inverted)
            warnings.append(f"EM on passes {list(s.passes)}: the pairs it calls matches "
                            f"agree less often than random pairs on {what}, so they are "
                            "related records (a household, a family, a chain's branches) "
                            "rather than the same entity: it is not used for m, and its "
                            "pairs are scored with three classes (matches as the other "
                            "sessions learnt them, these related records, non-matches); "
                            "compare columns that tell such records apart")
        elif s.set_aside == "no evidence":
            warnings.append(f"EM on passes {list(s.passes)}: the pairs it calls matches "
                            "agree far less than those of a pass that called nearly all its "
                            "candidates matches (which found the matches first, e.g. on an "
                            "identifier), so it found none: it is not used for m, and its "
                            "pairs are scored with the random-pair prior")
        else:
            warnings.append(f"EM on passes {list(s.passes)} called {s.lam:.0%} of its "
                            f"{s.pairs} candidates matches while other passes' sessions "
                            "did not: it is not used for m, and its pairs are scored with "
                            "the random-pair prior")
    m: list[np.ndarray] = []
    source: list[str] = []
    active = pooled_m(sessions, K)
    among = pooled_m(sessions, K, selected=True)
    for k in range(K):
        if k in active or k in among:
            m.append(active[k] if k in active else among[k])
            source.append("em" if k in active else "em among candidates")
        else:
            m.append(default_m(n_levels[k]))
            source.append("default")
            warnings.append(f"{names[k]}: m could not be trained (no session with enough "
                            "pairs where it is present and the blocking does not select "
                            "on it); using default m")
    r, lam_two = None, None  # related records read off the random pairs (a group)
    if (related is not None and random is not None and random.total
            and not any(s.set_aside == "inverted" for s in sessions)):
        lam_two = _lambda_random(hists, m, u, total_pairs, sessions)[0]
        r = related(random, m=m, u=u, implied=implied, lam=lam_two)
    m, unsettled, repooled = fit_third_class(sessions, merged, againsts, m, u,
                                             n_levels, r)  # step 6
    source = [f"{src}, three classes" if k in repooled else src
              for k, src in enumerate(source)]
    warnings += [f"EM with three classes on passes {list(p)}, learning m, did not converge"
                 for p in unsettled]
    for s in sessions:
        if s.related and not s.related["converged"]:
            warnings.append(f"EM with three classes on passes {list(s.passes)} did not "
                            f"converge in {s.related['n_iter']} iterations")
    for s in sessions:
        if s.trained:
            warnings += fit_warnings(s, f"EM on passes {list(s.passes)}")
        free = [names[k] for k in range(K) if k not in s.blocked or k in s.m_fixed]
        if s.trained and s.trusted and len(free) < MIN_COMPARISONS:  # keys select the rest
            warnings.append(
                f"EM on passes {list(s.passes)}: only {free} is free of the blocking, so "
                "the fit rests on it alone: non-matches that often agree on it are taken "
                "for matches; compare more columns, or block on columns not compared")
    for k in range(K):
        if n_levels[k] > 1 and m[k][-1] < u[k][-1]:
            warnings.append(f"{names[k]}: its top level is rarer among matches than among "
                            "random pairs (m < u): a weak or inverted comparison")
    lam, iters, n_cand, settled = _lambda_random(hists, m, u, total_pairs, sessions)
    if not settled:
        warnings.append(f"λ of a random pair did not settle in {iters} iterations "
                        f"(last {lam:.3g})")
    elif n_cand and lam <= LAMBDA_FLOOR:
        warnings.append("λ of a random pair ran to 0: the model expects no matches among "
                        "the candidates; check the comparisons and the blocking")
    lam = min(lam / max(recall, 1e-9), 1 - 1e-9)
    two = None if r is None or lam_two is None else min(lam_two / max(recall, 1e-9), 1 - 1e-9)
    return Trained(lam, m, source, sessions, warnings, n_cand, iters, lam_two_class=two)


def _lambda_random(hists: Mapping[int, PatternHistogram], m: Sequence[np.ndarray],
                   u: Sequence[np.ndarray], total_pairs: float, sessions: Sequence[Session]
                   ) -> tuple[float, int, int, bool]:
    """Fixed point of λ = Σ_candidates P(match | γ; λ) / total_pairs (module doc, step 5):
    (λ, iterations, candidates, whether it settled within ``LAMBDA_MAX_ITER``). The pairs
    of a pass scored with three classes count with the matches that fit expects (its
    related records are not matches)."""
    three = {p for s in sessions if s.related for p in s.passes}
    fixed = sum(s.related["pi"][0] * s.pairs for s in sessions if s.related)
    n_cand = sum(h.total for h in hists.values())
    rest = [h for p, h in hists.items() if p not in three]
    if n_cand == 0 or total_pairs <= 0:
        return 1e-9, 0, 0, True
    expected = sum(s.matches for s in sessions if not s.related) + fixed
    lam = min(max(expected / total_pairs, LAMBDA_FLOOR), 0.5)
    if not rest:
        return max(fixed / total_pairs, LAMBDA_FLOOR), 0, n_cand, True
    merged = PatternHistogram.merge(rest)
    gamma, counts = merged.gamma(), merged.counts.astype(np.float64)
    for it in range(1, LAMBDA_MAX_ITER + 1):
        new = (float(np.sum(counts * posterior(gamma, m, u, lam))) + fixed) / total_pairs
        new = min(max(new, LAMBDA_FLOOR), 1 - 1e-9)
        if abs(math.log(new) - math.log(lam)) < 1e-9:
            return new, it, n_cand, True
        lam = new
    return lam, LAMBDA_MAX_ITER, n_cand, False


def train_candidates(hist: PatternHistogram, n_levels: Sequence[int], max_iter: int = 1000,
                     tol: float = 1e-4) -> Trained:
    """λ, m and u all by EM among the candidates (no random pairs): a model of the
    candidate pairs, whose λ is their match share, not that of a random pair."""
    gamma, counts = hist.gamma(), hist.counts
    u0 = [_candidate_u(gamma, counts, k, nk) for k, nk in enumerate(n_levels)]
    res = fit_em(gamma, counts, n_levels, u0, fix_u=False, max_iter=max_iter, tol=tol)
    lam = float(res["lambda"])
    s = Session(passes=(0,), blocked=(), pairs=hist.total, lam=lam, n_iter=res["n_iter"],
                converged=res["converged"], trained=True)
    return Trained(lam, list(res["m"]), ["em"] * len(n_levels), [s],
                   fit_warnings(s, "EM among the candidates"), hist.total,
                   res["n_iter"], u=list(res["u"]))
