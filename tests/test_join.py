"""Threshold pushdown by equality (erblock/engine/tasks/join.py): a block compared as a
join on an exact comparison's codes keeps exactly the pairs, values and counts of the
dense path, for every strategy, link and dedupe, several passes, missing values and
weights; it is used only where the bound allows it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.balancing.strategies import STRATEGIES
from erblock.engine.tasks.join import join_candidates, ruling_comparisons
from erblock.report import RunReport


def _frame(seed: int, n: int, side: int = 0, n_dates: int = 100) -> pd.DataFrame:
    rng = np.random.default_rng(seed + 100 * side)
    first = np.array(["anna", "anne", "ann", "jose", "josé", "zoë", "zoe", "li", "lee", "bo"],
                     dtype=object)
    dob = np.array([f"19{50 + i % 50}-0{1 + i % 9}-1{i % 10}" for i in range(n_dates)],
                   dtype=object)[rng.integers(0, n_dates, n)]
    dob[rng.random(n) < 0.02] = None
    city = np.array(["york", "leeds", "hull", ""], dtype=object)[rng.integers(0, 4, n)]
    return pd.DataFrame({
        "k": rng.integers(0, 3, n).astype(str),
        "k2": rng.integers(0, 20, n),
        "first": first[rng.integers(0, len(first), n)],
        "dob": dob,
        "city": city,
    }, index=pd.Index([f"{'rs'[side]}{seed}-{i}" for i in range(n)], name="rid"))


COMPARE = {"first": "jaro_winkler", "dob": "exact", "city": "exact"}


def _cells(pairs: pd.DataFrame) -> int:
    return sum(t.cells for t in RunReport.of(pairs).tasks)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_join_keeps_what_the_dense_path_keeps(client, strategy: str) -> None:
    df = _frame(1, 1200)
    for keys in (["k"], ["k", "k2"]):
        runs = {e: erblock.dedupe(df, key=keys, compare=COMPARE, strategy=strategy, n_tasks=4,
                                  client=client, npartitions=3, sort=True, threshold=0.8,
                                  encode=e)
                for e in ("auto", "never")}  # never: no codes, so no join
        pd.testing.assert_frame_equal(runs["auto"].reset_index(drop=True),
                                      runs["never"].reset_index(drop=True))
        reps = {e: RunReport.of(p) for e, p in runs.items()}
        assert reps["auto"].comparisons == reps["never"].comparisons == len(
            brute_dedupe(df, keys))
        assert _cells(runs["auto"]) < _cells(runs["never"]) / 3  # the join ran
    r, s = _frame(2, 400, side=0), _frame(2, 300, side=1)
    linked = {e: erblock.link(r, s, key="k", compare=COMPARE, strategy=strategy, n_tasks=3,
                              client=client, sort=True, threshold=0.8, encode=e)
              for e in ("auto", "never")}
    pd.testing.assert_frame_equal(linked["auto"].reset_index(drop=True),
                                  linked["never"].reset_index(drop=True))
    assert RunReport.of(linked["auto"]).comparisons == len(brute_link(r, s, ["k"]))
    kept = set(pair_list(linked["auto"]))
    assert kept and kept <= brute_link(r, s, ["k"])


def test_join_with_weights_and_missing_values_keeps_pairs_at_the_threshold(client) -> None:
    # city weighs 3, first 1, dob 1: at 0.8 a pair differing on city (0 of 3) cannot pass,
    # one differing on dob can (first and city lift it: 4 * 0.2 >= 1 * 0.8), so only city
    # rules; pairs with a missing city stay candidates and are scored without it
    df = _frame(4, 900)
    compare = {"first": "jaro_winkler", "dob": "exact", "city": {"method": "exact", "weight": 3}}
    runs = {e: erblock.dedupe(df, key="k", compare=compare, client=client, sort=True,
                              threshold=0.8, encode=e) for e in ("auto", "never")}
    pd.testing.assert_frame_equal(runs["auto"].reset_index(drop=True),
                                  runs["never"].reset_index(drop=True))
    assert runs["auto"]["city_exact"].isna().any()  # missing-city pairs were kept
    assert (runs["auto"]["dob_exact"] == 0).any()  # dob disagreements too


def test_only_comparisons_that_rule_alone_are_joined() -> None:
    codes = [(np.zeros(1), np.zeros(1))] * 3
    w = np.ones(3, dtype=np.float32)
    assert ruling_comparisons(["a", "b", "c"], w, 0.9, codes) == [0, 1, 2]  # 0.9 > 0.2
    assert ruling_comparisons(["a", "b", "c"], w, 0.5, codes) == []  # 0.5 < 1.0
    assert ruling_comparisons(["a", "b", "c"], w, None, codes) == []
    assert ruling_comparisons(["a", "b", "c"], np.array([1, 20, 1.0]), 0.9,
                              codes) == [1]  # only the heavy one
    assert ruling_comparisons(["a", "b", "c"], w, 0.9, [None, codes[0], None]) == [1]
    # the boundary: 2 comparisons at t = 0.5: w t = 0.5 = (1 - t): a differing pair can
    # reach exactly 0.5, so the bound must not rule it out
    assert ruling_comparisons(["a", "b"], np.ones(2), 0.5, codes[:2]) == []


@settings(max_examples=60, deadline=None)
@given(lc=st.lists(st.integers(-1, 4), max_size=30), rc=st.lists(st.integers(-1, 4),
                                                                  max_size=30))
def test_join_candidates_count_agreeing_or_missing_pairs(lc: list[int], rc: list[int]) -> None:
    want = sum(1 for a in lc for b in rc if a < 0 or b < 0 or a == b)
    assert join_candidates(np.array(lc, dtype=np.int64), np.array(rc, dtype=np.int64)) == want
