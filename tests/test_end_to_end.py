"""End to end on a real LocalCluster: similarities, scores, thresholds, options, outputs
and reports (that every strategy gives the brute-force pair set is test_conformance.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.blocking import prefix
from erblock.report import RunReport

NAMES = ["smith", "smyth", "jones", "jon", "li", None, "brown", "o'neil", "müller", "x"]
COMPARE = {"name": "jaro_winkler", "age": {"method": "numeric", "scale": 10}}


def test_skewed_link_with_many_tasks_is_exact_and_balanced(client):
    w = np.exp(-0.8 * np.arange(12))

    def make(n, seed):
        g = np.random.default_rng(seed)
        return pd.DataFrame({"k": g.choice(12, n, p=w / w.sum()).astype(str),
                             "name": g.choice(["ann", "anna", "bo", "bob"], n)})
    df_r, df_s = make(400, 1), make(300, 2)
    df_s.index = df_s.index + 10_000
    pairs = erblock.link(df_r, df_s, key="k", compare={"name": "levenshtein"},
                         strategy="blocksplit", n_tasks=16, client=client, npartitions=4)
    rep = RunReport.of(pairs)
    assert set(pair_list(pairs)) == brute_link(df_r, df_s, ["k"])
    assert rep.imbalance_comparisons < 1.2


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
    assert RunReport.of(kept).comparisons == len(full)


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
    assert RunReport.of(pairs).records["not_blocked"] == 1


def test_chunked_compare_equals_unchunked(client):
    df = pd.DataFrame({"k": ["x"] * 120, "name": [f"n{i * 37 % 101}" for i in range(120)]})
    a = erblock.dedupe(df, key="k", compare={"name": "levenshtein"}, client=client, sort=True)
    b = erblock.dedupe(df, key="k", compare={"name": "levenshtein"}, client=client, sort=True,
                       cell_budget=7)
    pd.testing.assert_frame_equal(a, b)


def test_output_directory_written_by_workers(client, tmp_path):
    df = pd.DataFrame({"k": list("aaabbbcc"), "name": list("abcdefgh")})
    out = tmp_path / "pairs"
    lazy = erblock.dedupe(df, key="k", compare={"name": "exact"}, client=client,
                          output=str(out), n_tasks=3)
    parts = sorted(p.name for p in out.iterdir() if not p.name.startswith("_"))
    assert parts and all(p.startswith("part-") and p.endswith(".parquet") for p in parts)
    got = pd.read_parquet(out)
    assert set(pair_list(got)) == brute_dedupe(df, ["k"])
    # the result is the written pairs, lazily; the report sits next to them
    assert set(pair_list(lazy.compute())) == set(pair_list(got))
    report = erblock.read_report(out)
    assert report.pairs == len(got) and report.output == str(out)
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
    rep = RunReport.of(pairs)
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
    rebuilt = RunReport.of(back)
    assert rebuilt.comparisons == RunReport.of(pairs).comparisons == 15
    assert rebuilt.summary() == RunReport.of(pairs).summary()
    assert RunReport.from_dict(rebuilt.to_dict()) == rebuilt
