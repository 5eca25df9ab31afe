"""Multi-pass blocking (``key=[...]``: a pair is a candidate when it agrees on any pass)
end to end on a LocalCluster against the brute force (tests/oracle.py unions the passes).

For every registered strategy and ``auto``, link and dedupe, with missing and empty keys
in every pass: each pair of the union is compared exactly once; the plan balances the
union of the passes, so its comparisons exceed the performed ones by exactly the pairs
found by more than one pass (reported as ``repeat_pairs_skipped``); no reduce task does
more than planned; replication counts each record once however many passes it has.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list
from strategies import cluster_settings

import erblock
from erblock.balancing import STRATEGIES
from erblock.blocking import prefix
from erblock.report import RunReport

STRATEGY_LIST = sorted(STRATEGIES) + ["auto"]
K1 = ["a", "a", "a", "b", "b", "c", None, ""]
K2 = ["x", "x", "y", "z", None, None, ""]
NAMES = ["smith", "smyth", "jones", "jon", None, "li"]
COMPARE = {"name": "jaro_winkler"}

@st.composite
def frames(draw, min_size=0, max_size=40):
    n = draw(st.integers(min_size, max_size))
    start = draw(st.integers(0, 1000))
    return pd.DataFrame(
        {"k1": pd.Series(draw(st.lists(st.sampled_from(K1), min_size=n, max_size=n)),
                         dtype=object),
         "k2": pd.Series(draw(st.lists(st.sampled_from(K2), min_size=n, max_size=n)),
                         dtype=object),
         "name": pd.Series(draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n)),
                           dtype=object)},
        index=pd.RangeIndex(start, start + n))


def _repeats(per_pass: list[set], union: set) -> int:
    return sum(len(p) for p in per_pass) - len(union)


def _keyed(df: pd.DataFrame, cols: list[str]) -> int:
    """Records with a non-missing, non-empty key in at least one pass."""
    has = pd.Series(False, index=df.index)
    for c in cols:
        has |= df[c].notna() & (df[c].astype(str) != "")
    return int(has.sum())


def _check(pairs, expected: set, per_pass: list[set], plan) -> None:
    report = RunReport.of(pairs)
    got = pair_list(pairs)
    assert len(got) == len(set(got)), "a pair was compared twice"
    assert set(got) == expected
    assert report.comparisons == len(expected)
    if not plan.estimated:  # cell strategies only estimate their loads
        assert (report.task_comparisons <= plan.loads).all(), "a task did more than planned"
        # the plan balances the union of the passes: pairs of several passes are planned
        # once per pass and compared once
        assert plan.total_comparisons - report.comparisons == _repeats(per_pass, expected)
        assert report.prediction["repeat_pairs_skipped"] == _repeats(per_pass, expected)


@pytest.mark.parametrize("strategy", STRATEGY_LIST)
@cluster_settings(3)
@given(df=frames(), m=st.integers(1, 5), r=st.integers(1, 12))
def test_dedupe_multipass_matches_brute_force(client, strategy, df, m, r):
    keys = ["k1", "k2"]
    pairs = erblock.dedupe(df, key=keys, compare=COMPARE, strategy=strategy, n_tasks=r,
                           client=client, npartitions=m, cost_model="default")
    plan = erblock.plan(df, key=keys, strategy=strategy, n_tasks=r, client=client,
                        npartitions=m, cost_model="default")
    expected = brute_dedupe(df, keys)
    _check(pairs, expected, [brute_dedupe(df, [k]) for k in keys], plan)
    pos = {label: i for i, label in enumerate(df.index)}
    assert all(pos[a] < pos[b] for a, b in pair_list(pairs)), "left must precede right"
    assert plan.records_in == _keyed(df, keys)


@pytest.mark.parametrize("strategy", STRATEGY_LIST)
@cluster_settings(3)
@given(df_r=frames(), df_s=frames(), m=st.integers(1, 5), r=st.integers(1, 12))
def test_link_multipass_matches_brute_force(client, strategy, df_r, df_s, m, r):
    keys = ["k1", "k2"]
    pairs = erblock.link(df_r, df_s, key=keys, compare=COMPARE, strategy=strategy,
                         n_tasks=r, client=client, npartitions=m, cost_model="default")
    plan = erblock.plan(df_r, df_s, key=keys, strategy=strategy, n_tasks=r, client=client,
                        npartitions=m, cost_model="default")
    expected = brute_link(df_r, df_s, keys)
    _check(pairs, expected, [brute_link(df_r, df_s, [k]) for k in keys], plan)
    assert plan.records_in == _keyed(df_r, keys) + _keyed(df_s, keys)


def test_composite_and_spec_passes(client):
    # list = OR over passes, tuple = AND inside a pass; a prefix spec as a third pass
    df = pd.DataFrame({
        "k1": ["a", "a", "a", "b", None, "b"],
        "k2": ["x", "y", "x", "x", "x", None],
        "name": ["ann", "anna", "ann", "bob", "bo", "bobby"],
    })
    keys = [("k1", "k2"), "k2", prefix("name", 2)]
    pairs = erblock.dedupe(df, key=keys, compare=COMPARE, client=client, n_tasks=3,
                           strategy="blocksplit", cost_model="default")
    expected = brute_dedupe(df, keys)
    assert sorted(pair_list(pairs)) == sorted(expected)
    per_pass = [brute_dedupe(df, [k]) for k in keys]
    rep = RunReport.of(pairs)
    assert rep.prediction["repeat_pairs_skipped"] == _repeats(per_pass, expected) > 0


def test_pairs_of_several_passes_keep_the_scores_of_one_comparison(client):
    # (0, 1) agree on both passes: compared once, with the same similarity as alone
    df = pd.DataFrame({"k1": ["a", "a", "b"], "k2": ["x", "x", "x"],
                       "name": ["martha", "marhta", "dixon"]})
    both = erblock.dedupe(df, key=["k1", "k2"], compare=COMPARE, client=client, sort=True,
                          cost_model="default")
    one = erblock.dedupe(df, key="k2", compare=COMPARE, client=client, sort=True,
                         cost_model="default")
    pd.testing.assert_frame_equal(both, one)


def test_plan_balances_the_union_of_passes(client):
    # pass k1 has one big block, pass k2 spreads records: the plan counts both passes
    n = 400
    df = pd.DataFrame({"k1": ["big"] * n, "k2": [str(i % 40) for i in range(n)],
                       "name": ["n"] * n})
    plan = erblock.plan(df, key=["k1", "k2"], strategy="blocksplit", n_tasks=8,
                        client=client, npartitions=4, cost_model="default")
    per_pass = n * (n - 1) // 2 + 40 * (10 * 9 // 2)
    assert plan.total_comparisons == per_pass
    assert plan.imbalance < 1.1
    assert plan.replication >= 1.0
