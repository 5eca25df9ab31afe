"""Training's step 6: related records as a third class, for every session (client side).

A session whose matches agree on a comparison less often than random pairs do took
related records for matches (:func:`.sessions.inverted`); :mod:`.related` refits it
with three classes. Related records are not that pass's alone: twins share a date of
birth, housemates an initial, so every other trained session is scored with three
classes too. And the two-class fits that gave the model its m counted the related
records they held as matches (the housemates sharing an initial agree on the whole
address), so m is learnt again from three-class fits:

1. the inverted session's fit: the model's m held, r free, started from its own
   two-class "matches";
2. every other trained session: r from (1), held except where (1)'s keys or its own
   select (there free: (1) could not learn it where its keys select, and the related
   records a key keeps are alike on it, as juniors are on the given name; started from
   (1)'s r restricted to the levels the candidates reach), u as in the session, and m
   free where its keys do not select (a weak fit's ``m_held`` are among them: held);
   the shares free;
3. m of those comparisons pooled again over (2), weighted by each fit's expected
   matches where the comparison is present (kept as it was below ``MIN_MATCHES``);
4. (1) and (2) once more with the pooled m held: the fits the passes are scored with.

One round: (2) learnt m against the r that (1) learnt with the old m held, and the r
of (4) is not used to learn m again.

Without an inverted session, ``r_random`` (the related records' r read off the random
pairs: :func:`.groups.related_profile`) takes the place of (1): it is held in (2) and
(4), and (2) starts m from generic m where it is free (started from the two-class m,
which counted the housemates as matches, the matches' class keeps them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..levels import PatternHistogram, default_m
from .related import fit_related, seen_levels, truncated
from .sessions import Session

__all__ = ["MIN_MATCHES", "fit_third_class"]

MIN_MATCHES = 20.0  #: fewer expected matches where a comparison is present: m kept


def fit_third_class(sessions: Sequence[Session], merged: Sequence[PatternHistogram],
                    againsts: Sequence[frozenset[int]], m: Sequence[np.ndarray],
                    u: Sequence[np.ndarray], n_levels: Sequence[int],
                    r_random: Sequence[np.ndarray] | None = None
                    ) -> tuple[list[np.ndarray], list[tuple[int, ...]], set[int]]:
    """Step 6 (module doc), in place on ``sessions`` (``merged``: their histograms,
    ``againsts``: what earlier keys select against in each; ``r_random``: related
    records' r from the random pairs, used when no session is inverted). Returns the model's m,
    pooled again from the three-class fits when some session has related records, the
    passes whose fit of (2) did not converge (the final fits report their own) and the
    comparisons whose m was pooled again."""
    m = [np.asarray(x, dtype=np.float64) for x in m]
    if not any(s.set_aside == "inverted" for s in sessions):
        if r_random is None:
            return m, [], set()
        src: tuple[Sequence[np.ndarray], tuple[int, ...]] | None = (r_random, ())
    else:
        src = None
    _fit_inverted(sessions, merged, againsts, m, u, n_levels)
    _related_elsewhere(sessions, merged, againsts, m, u, n_levels, True, src)
    m, repooled = _pooled(sessions, m)
    unsettled = [s.passes for s in sessions
                 if s.related and not s.set_aside and not s.related["converged"]]
    for s in sessions:
        s.related = None
    _fit_inverted(sessions, merged, againsts, m, u, n_levels)
    _related_elsewhere(sessions, merged, againsts, m, u, n_levels, False, src)
    return m, unsettled, repooled


def _fit_inverted(sessions: Sequence[Session], merged: Sequence[PatternHistogram],
                  againsts: Sequence[frozenset[int]], m: Sequence[np.ndarray],
                  u: Sequence[np.ndarray], n_levels: Sequence[int]) -> None:
    """(1): m held as the model has it (restricted to the levels its candidates reach
    where its keys select), r started from the session's own fit, u as in the session."""
    K = len(m)
    for i, s in enumerate(sessions):
        if s.set_aside != "inverted":
            continue
        g, c = merged[i].gamma(), merged[i].counts
        fixed_u = againsts[i] - set(s.detected)
        s.related = fit_related(
            merged[i], [truncated(m[k], seen_levels(g, c, k, n_levels[k]))
                        if k in s.blocked else m[k] for k in range(K)],
            [s.u_blocked.get(k, u[k]) for k in range(K)],
            [s.m[k] if k in s.m else s.m_blocked[k] for k in range(K)],
            [k in s.u_blocked and k not in fixed_u for k in range(K)], s.lam)


def _related_elsewhere(sessions: Sequence[Session], merged: Sequence[PatternHistogram],
                       againsts: Sequence[frozenset[int]], m: Sequence[np.ndarray],
                       u: Sequence[np.ndarray], n_levels: Sequence[int], free_m: bool,
                       given: tuple[Sequence[np.ndarray], tuple[int, ...]] | None = None
                       ) -> None:
    """(2) (``free_m``) or (4): the other trained sessions with three classes; m as the
    session scores with it where its keys select (its own estimate, else the model's
    restricted to the levels its candidates reach), the model's elsewhere (free with
    ``free_m``). r is the inverted session's (``given`` None: π_R starts at a tenth of
    λ) or the random pairs' (``given``: at half of λ), free where this session's keys
    select (and the inverted session's), started from the source's r restricted to the
    levels the candidates reach (from the matches' m it can die out: its share to 0)."""
    if given is None:
        found = [s for s in sessions if s.related]
        if not found:
            return
        src = max(found, key=lambda s: s.related["pi"][1] * s.pairs)  # type: ignore[index]
        r_src, src_blocked = src.related["r"], src.blocked  # type: ignore[index]
    else:
        r_src, src_blocked = given
    K = len(m)
    for i, s in enumerate(sessions):
        if s.related or not s.trained or s.set_aside or not s.lam > 0:
            continue
        g, c = merged[i].gamma(), merged[i].counts
        seen = {k: seen_levels(g, c, k, n_levels[k]) for k in s.blocked}
        # the source's r is not this key's: where it selects, the housemates it keeps
        # (juniors, siblings with like names) are learnt here
        learn = [k in s.blocked or (given is None and k in src_blocked) for k in range(K)]
        fixed_u = againsts[i] - set(s.detected)
        s.related = fit_related(
            merged[i], [s.m_blocked[k] if k in s.m_blocked and k not in s.m_fixed
                        else truncated(m[k], seen[k]) if k in seen
                        else default_m(n_levels[k]) if given is not None and free_m
                        else m[k] for k in range(K)],
            [s.u_blocked.get(k, u[k]) for k in range(K)],
            [truncated(np.asarray(r_src[k]), seen[k]) if k in seen
             else m[k] if learn[k] else np.asarray(r_src[k]) for k in range(K)],
            [k in s.u_blocked and k not in fixed_u for k in range(K)], s.lam,
            free_r=learn, related_start=0.1 if given is None else 0.5,
            free_m=[k not in s.blocked for k in range(K)] if free_m else None)


def _pooled(sessions: Sequence[Session], m: Sequence[np.ndarray]
            ) -> tuple[list[np.ndarray], set[int]]:
    """(3): m of every comparison some three-class fit of (2) left free, averaged over
    those fits weighted by their expected matches where it is present; as given when
    they hold fewer than ``MIN_MATCHES``. Also returns the comparisons pooled."""
    out = list(m)
    pooled: set[int] = set()
    for k in range(len(m)):
        fits = [(s.related["seen_matches"][k], np.asarray(s.related["m"][k]))
                for s in sessions if s.related and not s.set_aside and k not in s.blocked]
        total = sum(w for w, _ in fits)
        if total >= MIN_MATCHES:
            out[k] = sum(w * x for w, x in fits) / total
            pooled.add(k)
    return out, pooled
