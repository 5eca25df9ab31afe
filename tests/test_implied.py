"""Comparisons implied by another's agreement (same first name -> same sex): found among
random pairs, read as missing where their implier agrees, kept through save and load."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import erblock
from erblock.matchers.levels import PatternHistogram
from erblock.matchers.scoring import implied as I

N_LEVELS = [3, 2, 2]  # a name-like comparison, a sex-like one, an unrelated one


def _random(n: int = 20_000, share: float = 0.99, seed: int = 0) -> PatternHistogram:
    """Random pairs: comparison 0 at its top level 2 % of the time; there comparison 1
    agrees with probability ``share``, elsewhere half the time; comparison 2 independent."""
    rng = np.random.default_rng(seed)
    g0 = rng.choice(3, n, p=[0.9, 0.08, 0.02])
    g1 = np.where(g0 == 2, rng.random(n) < share, rng.random(n) < 0.5).astype(int)
    g2 = (rng.random(n) < 0.3).astype(int)
    return PatternHistogram.from_gamma(np.stack([g0, g1, g2], axis=1), [4, 3, 3])


def test_an_agreement_that_implies_another_is_found():
    assert I.find_implied(_random(), N_LEVELS, expected_matches=5) == [(0, 1)]


@pytest.mark.parametrize("share", [0.8, 0.5])
def test_an_agreement_that_only_makes_another_likelier_is_not(share):
    assert I.find_implied(_random(share=share), N_LEVELS, expected_matches=5) == []


def test_a_constant_column_is_implied_by_nothing_and_said_to_carry_no_evidence(client):
    """A country that every record shares was "implied" by the first name (nothing
    disagrees, so nothing disagrees less): the warning spoke of households instead of
    saying it carries no evidence."""
    rng = np.random.default_rng(1)
    g0 = rng.choice(3, 20_000, p=[0.9, 0.08, 0.02])
    const = PatternHistogram.from_gamma(np.stack([g0, np.ones(20_000, int)], axis=1), [4, 3])
    assert I.find_implied(const, [3, 2], expected_matches=5) == []
    r, s, _ = erblock.datasets.generate(600, kind="person", task="link", dup_rate=0.5,
                                        typo_rate=0.3, seed=7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        erblock.link(r.assign(country="UK"), s.assign(country="UK"), key="block_key",
                     compare={"first_name": "name", "surname": "name", "dob": "date",
                              "country": "exact"}, scoring="em", client=client)
    said = [str(w.message) for w in caught]
    assert any(w.startswith("country_exact: 100.0% of random pairs agree on it (a nearly "
                            "constant column): it carries next to no evidence") for w in said)
    assert not any("country_exact: read as missing" in w or "country_exact: its top level"
                   in w for w in said), said


def test_matches_among_the_random_pairs_do_not_count_as_an_implication():
    # ~400 random pairs agree on comparison 0: if 200 matches are expected among the random
    # pairs, those agreements may be the matches, which agree on everything
    h = _random()
    assert I.find_implied(h, N_LEVELS, expected_matches=200) == []
    assert I.find_implied(h, N_LEVELS, expected_matches=100) == [(0, 1)]


def test_too_few_random_pairs_at_the_top_level_judge_nothing():
    assert I.find_implied(_random(n=1_000), N_LEVELS, expected_matches=0) == []


def test_two_comparisons_implying_each_other_mask_only_one():
    rng = np.random.default_rng(1)
    g = (rng.random(5_000) < 0.1).astype(int)
    h = PatternHistogram.from_gamma(np.stack([g, g], axis=1), [3, 3])
    assert I.find_implied(h, [2, 2], expected_matches=0) == [(0, 1)]


def test_mask_reads_the_implied_comparison_as_missing_where_its_implier_agrees():
    gamma = np.array([[2, 1, 0], [2, 0, 1], [1, 1, 1], [-1, 0, 1], [2, -1, 0]], dtype=np.int8)
    out = I.mask(gamma, [(0, 1)], N_LEVELS)
    assert out.tolist() == [[2, -1, 0], [2, -1, 1], [1, 1, 1], [-1, 0, 1], [2, -1, 0]]
    assert gamma[0, 1] == 1  # the input is left alone
    h = PatternHistogram.from_gamma(gamma, [4, 3, 3])
    masked = I.mask_hist(h, [(0, 1)], N_LEVELS)
    assert masked.total == 5 and len(masked.codes) == 4  # rows 0 and 4 now one pattern
    assert sorted(map(tuple, masked.gamma().tolist())) == sorted(
        set(map(tuple, out.tolist())))
    counts = I.level_counts(masked, N_LEVELS)
    assert counts[1].tolist() == [3, 1, 1]  # null, level 0, level 1


# -- end to end: a register where the first name decides the sex ----------------------------

def _people(n: int, rng: np.random.Generator) -> pd.DataFrame:
    first = np.array([f"name{i:03d}" for i in range(200)])
    w = 1 / np.arange(1, 201) ** 0.8
    fi = rng.choice(200, n, p=w / w.sum())
    syl = np.array(["ba", "ko", "mi", "ru", "te", "lo", "san", "dre", "vi", "pe", "gu",
                    "ha", "jo", "ne", "fi", "wal"])
    sur = np.unique(["".join(rng.choice(syl, 3)) for _ in range(3000)])
    ws = 1 / np.arange(1, len(sur) + 1)
    dob = pd.Timestamp("1940-01-01") + pd.to_timedelta(rng.integers(0, 25_000, n), unit="D")
    return pd.DataFrame({"first": first[fi],
                         "surname": sur[rng.choice(len(sur), n, p=ws / ws.sum())],
                         "dob": dob.strftime("%Y-%m-%d"),
                         "sex": np.array(["m", "f"])[fi % 2]})


def _register(n: int = 1000, seed: int = 0):
    """Register A; B holds 70 % of A's people (a tenth of their names and dates with one
    wrong character) and a third as many others."""
    rng = np.random.default_rng(seed)
    a = _people(n, rng)
    keep = np.flatnonzero(rng.random(n) < 0.7)
    b = a.iloc[keep].reset_index(drop=True)
    for c in ("first", "surname", "dob"):
        hit = rng.random(len(b)) < 0.1
        b.loc[hit, c] = b.loc[hit, c].str[:-1] + "x"
    b = pd.concat([b, _people(n // 3, rng)], ignore_index=True)
    b.index = b.index + 100_000
    truth = pd.DataFrame({"left_id": keep, "right_id": 100_000 + np.arange(len(keep))})
    return a, b, truth


def test_a_register_where_the_first_name_decides_the_sex(client):
    a, b, truth = _register()
    model = erblock.FellegiSunter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = erblock.link(a, b, key=[erblock.composite(erblock.soundex("surname"),
                                                           erblock.prefix("first", 1)), "dob"],
                             compare={"first": "name", "surname": "name", "dob": "date",
                                      "sex": "exact"}, scoring=model, client=client)
    assert model.report()["implied"] == [{"comparison": "sex_exact",
                                         "implied_by": "first_name"}]
    got = erblock.evaluate(pairs[pairs["match_probability"] >= 0.5], truth)
    # without the mask EM's match class is "the same first name": precision 0.46, F1 0.62
    assert got["precision"] >= 0.95 and got["f1"] >= 0.93, got
    # scoring reads sex as missing where the first names agree, and only there
    contrib = erblock.matchers.scoring.explain.contributions(model, pairs)
    same_first = pairs["first_name"].to_numpy() >= 1.0
    assert (contrib["sex_exact"].to_numpy()[same_first] == 0).all()
    assert (contrib["sex_exact"].to_numpy()[~same_first] != 0).any()
    i = int(np.flatnonzero(same_first)[0])
    steps = erblock.matchers.scoring.explain.waterfall(model, pairs.iloc[[i]])
    assert steps.set_index("step").loc["sex_exact", "level"] == (
        "implied by first_name (no evidence)")
    back = erblock.FellegiSunter.from_dict(model.to_dict())
    assert back.implied_ == model.implied_ == ((0, 3),)
    bare = pairs.drop(columns=["match_weight", "match_probability"])
    with warnings.catch_warnings():  # the output has no term-frequency values: both skip them
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(back.apply(bare)["match_weight"],
                                   model.apply(bare)["match_weight"])
