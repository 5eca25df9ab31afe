"""Detection of a comparison the key makes likelier among non-matches, on generated level
vectors (literal m and u, conditionally independent within each class)."""

from __future__ import annotations

import numpy as np
import pytest

from erblock.matchers.levels import PatternHistogram
from erblock.matchers.scoring.training import train


def _draw(rng: np.random.Generator, match: np.ndarray, m: np.ndarray, u: np.ndarray,
          missing: float) -> np.ndarray:
    g = np.where(match, rng.choice(len(m), len(match), p=m), rng.choice(len(u), len(match), p=u))
    return np.where(rng.random(len(match)) < missing, -1, g)


def test_relatives_sharing_a_first_name_in_a_surname_block_are_not_taken_for_matches():
    """A surname key over a register with families: a quarter of the candidates are true,
    and 28 % of the non-matches share the exact first name (random pairs 1.3 %, 20 times
    fewer; the partial levels are as at random). Its levels above "else" are 8 times as
    frequent as at random, in 31 % of the clear non-matches: under the 10-fold lift, and
    the fit, which must count those relatives among its matches, had λ_s near one half,
    so they never reached half of it. Against the matches the fit finds besides them,
    and with clear non-matches judged by generic m (the fit's m of the date had learnt
    the relatives' dates), the first name is found selected and λ_s is right."""
    rng = np.random.default_rng(2026)
    n, share = 60_000, 0.25
    match = rng.random(n) < share
    spec = [  # m, u of random pairs, u among the key's non-matches, share missing
        ([0.19, 0.15, 0.10, 0.07, 0.49], [0.96, 0.021, 0.004, 0.002, 0.013],
         [0.70, 0.018, 0.003, 0.001, 0.278], 0.0),                      # first name
        ([0.0, 0.0, 0.0, 0.0, 1.0], [0.98, 0.018, 0.001, 0.0005, 0.0005],
         [0.0, 0.0, 0.0, 0.0, 1.0], 0.0),                                # surname: the key
        ([0.011, 0.01, 0.005, 0.002, 0.41, 0.562], [0.69, 0.25, 0.032, 0.002, 0.024, 0.002],
         [0.60, 0.33, 0.04, 0.003, 0.024, 0.003], 0.4),                  # date of birth
        ([0.18, 0.02, 0.80], [0.98, 0.015, 0.005], [0.98, 0.012, 0.008], 0.2),  # birth place
        ([0.13, 0.25, 0.62], [0.988, 0.0115, 0.0005], [0.98, 0.018, 0.002], 0.35),  # postcode
        ([0.13, 0.87], [0.96, 0.04], [0.83, 0.17], 0.65),                # occupation
    ]
    gamma = np.stack([_draw(rng, match, np.array(m), np.array(us), miss)
                      for m, _, us, miss in spec], axis=1).astype(np.int8)
    n_levels = [len(m) for m, *_ in spec]
    res = train({0: PatternHistogram.from_gamma(gamma, [k + 1 for k in n_levels])},
                [np.array(u) for _, u, _, _ in spec], n_levels, {0: {1}}, 2000.0 * n,
                ["first_name", "surname", "dob", "birth_place", "postcode", "occupation"])
    s = res.sessions[0]
    assert 0 in s.detected, "the first name must be found selected by the surname key"
    assert s.lam == pytest.approx(share, rel=0.2)
