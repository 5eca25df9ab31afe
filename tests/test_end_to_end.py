"""End to end on a real LocalCluster against the brute force (tests/oracle.py).

For every strategy, link and dedupe, with skewed keys, missing keys, single-record blocks,
1–8 input partitions and 1–50 reduce tasks: the output pair set equals the brute-force
set, each pair once; the plan's loads equal the comparisons the workers performed; and
the results (similarities and scores) are identical across strategies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.blocking import prefix

STRATEGY_LIST = ["basic", "blocksplit", "pairrange"]
KEYS = ["a", "a", "a", "a", "b", "b", "c", "d", None, ""]  # skewed, with missing/empty
NAMES = ["smith", "smyth", "jones", "jon", "li", None, "brown", "o'neil", "müller", "x"]

settings.register_profile("e2e", max_examples=20, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture])
settings.load_profile("e2e")


@st.composite
def frames(draw, min_size=0, max_size=60):
    n = draw(st.integers(min_size, max_size))
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=n, max_size=n))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n))
    ages = draw(st.lists(st.one_of(st.none(), st.integers(0, 90)), min_size=n, max_size=n))
    start = draw(st.integers(0, 1000))
    df = pd.DataFrame({"k": pd.Series(keys, dtype=object), "name": pd.Series(names, dtype=object),
                       "age": pd.Series(ages, dtype="Float64")},
                      index=pd.RangeIndex(start, start + n))
    return df


COMPARE = {"name": "jaro_winkler", "age": {"method": "numeric", "scale": 10}}


def _check(pairs, expected, report, plan_loads):
    got = pair_list(pairs)
    assert len(got) == len(set(got)), "a pair appeared twice"
    assert set(got) == expected
    assert report.comparisons == len(expected)
    assert report.task_comparisons.tolist() == plan_loads.tolist()


@pytest.mark.parametrize("strategy", STRATEGY_LIST)
@given(df=frames(), m=st.integers(1, 8), r=st.integers(1, 50))
def test_dedupe_matches_brute_force(client, strategy, df, m, r):
    pairs = erblock.dedupe(df, key="k", compare=COMPARE, strategy=strategy, n_tasks=r,
                           client=client, npartitions=m)
    report = pairs.attrs["erblock_report"]
    plan = erblock.plan(df, key="k", strategy=strategy, n_tasks=r, client=client, npartitions=m)
    _check(pairs, brute_dedupe(df, ["k"]), report, plan.loads)
    pos = {label: i for i, label in enumerate(df.index)}
    assert all(pos[a] < pos[b] for a, b in pair_list(pairs)), "left must precede right"


@pytest.mark.parametrize("strategy", STRATEGY_LIST)
@given(df_r=frames(), df_s=frames(), m=st.integers(1, 8), r=st.integers(1, 50))
def test_link_matches_brute_force(client, strategy, df_r, df_s, m, r):
    pairs = erblock.link(df_r, df_s, key="k", compare=COMPARE, strategy=strategy, n_tasks=r,
                         client=client, npartitions=m)
    report = pairs.attrs["erblock_report"]
    plan = erblock.plan(df_r, df_s, key="k", strategy=strategy, n_tasks=r, client=client,
                        npartitions=m)
    _check(pairs, brute_link(df_r, df_s, ["k"]), report, plan.loads)


@given(df=frames(min_size=5), m=st.integers(1, 8), r=st.integers(1, 50))
def test_results_identical_across_strategies_and_partitionings(client, df, m, r):
    runs = [
        erblock.dedupe(df, key="k", compare=COMPARE, strategy=s, n_tasks=rr, client=client,
                       npartitions=mm, sort=True)
        for s, rr, mm in (("basic", 1, 1), ("blocksplit", r, m), ("auto", r, m))
    ]
    for other in runs[1:]:
        pd.testing.assert_frame_equal(runs[0], other)


def test_skewed_link_with_many_tasks_is_exact_and_balanced(client):
    rng = np.random.default_rng(7)
    w = np.exp(-0.8 * np.arange(12))
    def make(n, seed):
        g = np.random.default_rng(seed)
        return pd.DataFrame({"k": g.choice(12, n, p=w / w.sum()).astype(str),
                             "name": g.choice(["ann", "anna", "bo", "bob"], n)})
    df_r, df_s = make(400, 1), make(300, 2)
    df_s.index = df_s.index + 10_000
    pairs = erblock.link(df_r, df_s, key="k", compare={"name": "levenshtein"},
                         strategy="blocksplit", n_tasks=16, client=client, npartitions=4)
    rep = pairs.attrs["erblock_report"]
    assert set(pair_list(pairs)) == brute_link(df_r, df_s, ["k"])
    assert rep.imbalance_comparisons < 1.2
    assert rng is not None


def test_similarities_equal_reference_values(client):
    from rapidfuzz.distance import JaroWinkler

    df = pd.DataFrame({"k": ["x"] * 4, "name": ["martha", "marhta", None, "dixon"],
                       "age": [30.0, 35.0, 40.0, None]})
    pairs = erblock.dedupe(df, key="k", compare=COMPARE, client=client, sort=True)
    got = pairs.set_index(["left_id", "right_id"])
    assert got.loc[(0, 1), "name_jaro_winkler"] == pytest.approx(
        JaroWinkler.normalized_similarity("martha", "marhta"), abs=1e-6)
    assert got.loc[(0, 1), "age_numeric"] == pytest.approx(0.5)
    # missing name: null similarity, score is the mean of what is there
    assert np.isnan(got.loc[(0, 2), "name_jaro_winkler"])
    assert got.loc[(0, 2), "score"] == pytest.approx(0.0)
    assert got.loc[(1, 2), "score"] == pytest.approx(0.5)
    # both similarities missing: score is null
    assert np.isnan(got.loc[(2, 3), "score"])


def test_threshold_filters_on_workers_but_counts_all_comparisons(client):
    df = pd.DataFrame({"k": ["x"] * 50, "name": [f"name{i % 7}" for i in range(50)]})
    full = erblock.dedupe(df, key="k", compare={"name": "jaro_winkler"}, client=client)
    kept = erblock.dedupe(df, key="k", compare={"name": "jaro_winkler"}, threshold=0.99,
                          client=client, n_tasks=5)
    assert len(full) == 50 * 49 // 2
    assert len(kept) == int((full["score"] >= 0.99).sum())
    assert (kept["score"] >= 0.99).all()
    assert kept.attrs["erblock_report"].comparisons == len(full)


def test_weighted_score(client):
    df = pd.DataFrame({"k": ["x", "x"], "a": ["abc", "abc"], "b": ["abc", "xyz"]})
    pairs = erblock.dedupe(df, key="k", client=client, compare=[
        {"column": "a", "method": "exact", "weight": 3.0},
        {"column": "b", "method": "exact", "weight": 1.0},
    ])
    assert pairs["score"].iloc[0] == pytest.approx(0.75)


def test_prefix_key_and_dask_input(client):
    import dask.dataframe as dd

    df = pd.DataFrame({"title": ["The cat", "the dog", "THE end", "A cat", "a bat", None]})
    ddf = dd.from_pandas(df, npartitions=3, sort=False)
    pairs = erblock.dedupe(ddf, key=prefix("title", 3), compare={"title": "indel"},
                           client=client)
    assert set(pair_list(pairs)) == brute_dedupe(df, [prefix("title", 3)])
    assert pairs.attrs["erblock_report"].records["not_blocked"] == 1


def test_chunked_compare_equals_unchunked(client):
    df = pd.DataFrame({"k": ["x"] * 120, "name": [f"n{i * 37 % 101}" for i in range(120)]})
    a = erblock.dedupe(df, key="k", compare={"name": "levenshtein"}, client=client, sort=True)
    b = erblock.dedupe(df, key="k", compare={"name": "levenshtein"}, client=client, sort=True,
                       cell_budget=7)
    pd.testing.assert_frame_equal(a, b)


def test_output_directory_written_by_workers(client, tmp_path):
    df = pd.DataFrame({"k": list("aaabbbcc"), "name": list("abcdefgh")})
    out = tmp_path / "pairs"
    report = erblock.dedupe(df, key="k", compare={"name": "exact"}, client=client,
                            output=str(out), n_tasks=3)
    assert isinstance(report, erblock.RunReport)
    parts = sorted(p.name for p in out.iterdir())
    assert parts and all(p.startswith("part-") and p.endswith(".parquet") for p in parts)
    got = pd.read_parquet(out)
    assert set(pair_list(got)) == brute_dedupe(df, ["k"])
    assert not list(tmp_path.glob("*.erblock-tmp-*"))
    with pytest.raises(FileExistsError, match="output"):
        erblock.dedupe(df, key="k", compare={"name": "exact"}, client=client, output=str(out))


def test_empty_input_gives_empty_result_with_columns(client):
    df = pd.DataFrame({"k": pd.Series([], dtype=object), "name": pd.Series([], dtype=object)})
    pairs = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client)
    assert list(pairs.columns) == ["left_id", "right_id", "name_jaro", "score"]
    assert len(pairs) == 0
    one = erblock.link(df, df.iloc[:0], key="k", compare={"name": "jaro"}, client=client)
    assert len(one) == 0


def test_report_phases_and_tasks(client):
    df = pd.DataFrame({"k": ["x"] * 30 + ["y"] * 5, "name": ["n"] * 35})
    pairs = erblock.dedupe(df, key="k", compare={"name": "exact"}, client=client, n_tasks=4,
                           strategy="blocksplit")
    rep = pairs.attrs["erblock_report"]
    assert set(rep.phases) == {"profile", "plan", "route_compare", "write"}
    assert len(rep.tasks) == 4
    assert rep.imbalance_comparisons >= 1.0
    d = rep.to_dict()
    assert d["comparisons"] == 435 + 10
    assert d["plan"]["strategy"] == "blocksplit"
    import json

    assert json.loads(rep.to_json())["pairs"] == len(pairs)


def test_pairs_with_their_report_survive_parquet(client, tmp_path):
    df = pd.DataFrame({"k": ["x"] * 6, "name": list("abcabc")})
    pairs = erblock.dedupe(df, key="k", compare={"name": "exact"}, client=client)
    path = tmp_path / "pairs.parquet"
    pairs.to_parquet(path)  # pandas writes attrs as JSON: the report must be JSON-safe
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, pairs, check_like=False)
    rebuilt = erblock.RunReport.from_dict(back.attrs["erblock_report"])
    assert rebuilt.comparisons == pairs.attrs["erblock_report"].comparisons == 15
    assert rebuilt.summary() == pairs.attrs["erblock_report"].summary()


@pytest.mark.parametrize("key", ["k", ["k", "name"]])
def test_batched_small_tasks_equal_the_matrix_path(client, monkeypatch, key):
    """Small match tasks go through one aligned-pairs batch; the result is the same as
    comparing every task with its own cdist matrix (the in-process cluster sees the patch)."""
    import erblock.matchers.compare as cmp

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"k": rng.choice(list("abcdefghij") + [None], 300),
                       "name": rng.choice(NAMES, 300),
                       "age": pd.Series(rng.integers(0, 90, 300), dtype="Float64")})
    args = dict(key=key, compare=COMPARE, client=client, sort=True, n_tasks=7,
                strategy="blocksplit")
    batched = erblock.dedupe(df, **args)
    monkeypatch.setattr(cmp, "SMALL_TASK", -1)  # every task through the matrix path
    matrix = erblock.dedupe(df, **args)
    pd.testing.assert_frame_equal(batched, matrix)
    assert set(pair_list(batched)) == brute_dedupe(df, key if isinstance(key, list) else [key])
