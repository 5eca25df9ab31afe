"""A session whose "matches" are related records is set aside (inverted fits).

A register with households: members of one household share the postcode, street and
phone, have different given names and, being partners, the same sex less often than two
random records do. A second pass keyed on the postcode finds them by the thousand next to
a few true matches, and EM on that pass calls them matches. No set of matches agrees on
a comparison less often than random pairs do, so such a fit must not give the model its
m: the session is marked ``inverted``, not trusted, and warned about.
"""

from __future__ import annotations

import numpy as np

from erblock.matchers.levels import PatternHistogram
from erblock.matchers.scoring.training import train

NAMES = ["given_name", "postcode", "street", "phone", "sex"]
M = [np.array([0.05, 0.05, 0.9]), np.array([0.05, 0.05, 0.9]),
     np.array([0.1, 0.1, 0.8]), np.array([0.1, 0.05, 0.85]), np.array([0.01, 0.99])]
U = [np.array([0.95, 0.04, 0.01]), np.array([0.97, 0.02, 0.01]),
     np.array([0.98, 0.015, 0.005]), np.array([0.99, 0.008, 0.002]), np.array([0.5, 0.5])]
#: members of one household: other given names, the same address and phone, partners
HOUSEHOLD = [np.array([0.9, 0.1, 0.0]), np.array([0.0, 0.0, 1.0]),
             np.array([0.05, 0.05, 0.9]), np.array([0.1, 0.05, 0.85]), np.array([0.6, 0.4])]
N_PAIRS = 1_000_000
LAM, RELATED = 0.002, 0.006  # shares of all pairs: matches, household members
M_TOL = 0.03


def _draw(households: bool, seed: int = 3) -> tuple[dict[int, PatternHistogram], np.ndarray]:
    """Per-pass histograms (pass 0 keyed on the given name, pass 1 on the postcode, each
    keeping exact agreement) and which pairs match."""
    rng = np.random.default_rng(seed)
    x = rng.random(N_PAIRS)
    kind = np.where(x < LAM, 0, np.where(x < LAM + (RELATED if households else 0), 1, 2))
    gamma = np.empty((N_PAIRS, len(M)), dtype=np.int8)
    for k, dists in enumerate(zip(M, HOUSEHOLD, U)):
        draws = [rng.choice(len(p), size=N_PAIRS, p=p) for p in dists]
        gamma[:, k] = np.choose(kind, draws)
    first = gamma[:, 0] == 2
    second = ~first & (gamma[:, 1] == 2)
    radix = [len(m) + 1 for m in M]
    return ({0: PatternHistogram.from_gamma(gamma[first], radix),
             1: PatternHistogram.from_gamma(gamma[second], radix)}, kind == 0)


def _train(households: bool):
    hists, match = _draw(households)
    return train(hists, U, [len(m) for m in M], {0: {0}, 1: {1}}, N_PAIRS, NAMES), match


def test_a_pass_that_finds_households_is_set_aside():
    res, _ = _train(households=True)
    s0, s1 = (next(s for s in res.sessions if s.passes == (p,)) for p in (0, 1))
    assert s1.trained and s1.inverted == (4,) and not s1.trusted
    assert s0.trusted and s0.inverted == ()
    assert any("passes [1]" in w and "related records" in w and "sex" in w
               for w in res.warnings)
    # m comes from the session that found matches (sex: the same 99 % of the time)
    for k in (2, 3, 4):
        np.testing.assert_allclose(res.m[k], M[k], atol=M_TOL, err_msg=NAMES[k])
    assert res.sessions[1].to_dict(NAMES)["inverted"] == ["sex"]


def test_without_households_no_session_is_inverted():
    res, match = _train(households=False)
    assert all(s.trusted and s.inverted == () for s in res.sessions)
    assert not any("related records" in w for w in res.warnings)
