"""Bundled data, loaders, and the synthetic generator (skew, truth, errors, dask path)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import OSA

from erblock.datasets import (
    block_shares,
    columns_of,
    generate,
    load_abt_buy,
    load_dblp_acm,
    load_historical_50k,
    pairs_from_clusters,
)
from erblock.matchers.clustering import cluster

DATA = Path(__file__).resolve().parents[1] / "erblock" / "datasets" / "data"

# --------------------------------------------------------------------------- bundled DBLP-ACM


def test_dblp_acm_bundle_shapes_types_and_values():
    dblp, acm, truth = load_dblp_acm()
    assert (len(dblp), len(acm), len(truth)) == (2616, 2294, 2224)
    assert dblp.index.is_unique and acm.index.is_unique
    assert dblp.index.name == acm.index.name == "id"
    assert list(dblp.columns) == list(acm.columns) == ["title", "authors", "venue", "year"]
    assert pd.api.types.is_string_dtype(dblp.index)
    assert acm.index.dtype == "int64"
    assert str(dblp["year"].dtype) == str(acm["year"].dtype) == "Int64"
    # truth ids have the type of the index they point into, and all exist
    assert pd.api.types.is_string_dtype(truth["left_id"])
    assert truth["right_id"].dtype == "int64"
    assert truth["left_id"].isin(dblp.index).all()
    assert truth["right_id"].isin(acm.index).all()
    assert not truth.duplicated().any()
    assert dblp.loc["conf/vldb/PoosalaI96", "title"] == (
        "Estimation of Query-Result Distribution and its Application in "
        "Parallel-Join Load Balancing"
    )
    assert acm.loc[304586, "authors"] == "Gottfried Vossen, Mathias Weske"
    assert acm.loc[304586, "year"] == 1999
    assert acm["authors"].isna().sum() == 14
    # latin-1 decoded: accented letters survive
    assert dblp["title"].str.contains("Thémis").any()


def test_dblp_acm_bundle_is_small():
    files = list(DATA.glob("dblp_acm_*.parquet"))
    assert len(files) == 3
    assert sum(f.stat().st_size for f in files) < 1_000_000


# --------------------------------------------------------------------------- directory loaders


def _load_or_skip(loader):
    try:
        return loader()
    except FileNotFoundError as e:  # the shared data folder is not part of the package
        pytest.skip(str(e))


def test_abt_buy():
    abt, buy, truth = _load_or_skip(load_abt_buy)
    assert (len(abt), len(buy), len(truth)) == (1081, 1092, 1097)
    assert abt.index.dtype == buy.index.dtype == "int64"
    assert list(abt.columns) == ["name", "description", "price"]
    assert list(buy.columns) == ["name", "description", "manufacturer", "price"]
    assert abt.loc[580, "price"] == 399.0  # "$399.00"
    assert np.isnan(abt.loc[552, "price"])
    assert truth["left_id"].isin(abt.index).all() and truth["right_id"].isin(buy.index).all()
    assert truth.equals(truth.sort_values(["left_id", "right_id"], ignore_index=True))


def test_historical_50k():
    df, truth = _load_or_skip(load_historical_50k)
    assert len(df) == 50578 and df.index.name == "unique_id" and df.index.is_unique
    assert "cluster" in df.columns and df["cluster"].nunique() == 5156
    assert len(truth) == 303961
    assert (truth["left_id"] < truth["right_id"]).all()
    same = df.loc[truth["left_id"], "cluster"].to_numpy() == df.loc[truth["right_id"], "cluster"]
    assert same.all()


def test_loader_search_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ERBLOCK_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=r"abt_buy.*ERBLOCK_DATA"):
        load_abt_buy()
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nowhere")):
        load_abt_buy(tmp_path / "nowhere")
    # a copy reachable via $ERBLOCK_DATA (parent folder) and via path (the set's folder)
    src = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "abt_buy"  # ../shared
    if not src.is_dir():
        pytest.skip("shared data not available")
    (tmp_path / "d" / "abt_buy").mkdir(parents=True)
    for f in src.iterdir():
        (tmp_path / "d" / "abt_buy" / f.name).write_bytes(f.read_bytes())
    monkeypatch.setenv("ERBLOCK_DATA", str(tmp_path / "d"))
    assert len(load_abt_buy()[0]) == 1081
    monkeypatch.delenv("ERBLOCK_DATA")
    assert len(load_abt_buy(tmp_path / "d" / "abt_buy")[1]) == 1092


# --------------------------------------------------------------------------- pairs_from_clusters


def test_pairs_from_clusters_literal():
    labels = pd.Series(["x", "y", "x", None, "x", "y"], index=[5, 3, 1, 9, 4, 8])
    got = pairs_from_clusters(labels)
    assert list(zip(got["left_id"], got["right_id"])) == [(1, 4), (1, 5), (3, 8), (4, 5)]
    assert got["left_id"].dtype == "int64"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=40))
def test_pairs_from_clusters_equals_brute_force(groups):
    ids = [f"r{i:02d}" for i in range(len(groups))]
    got = pairs_from_clusters(pd.Series(groups, index=ids, dtype="int64"))
    want = sorted(
        (a, b) for (a, ga), (b, gb) in itertools.combinations(zip(ids, groups), 2) if ga == gb
    )
    assert list(zip(got["left_id"], got["right_id"])) == want


# --------------------------------------------------------------------------- generator: shape


def test_block_shares_literal():
    assert block_shares(3, None) == pytest.approx([1 / 3] * 3)
    assert block_shares(3, ("exp", np.log(2))) == pytest.approx([4 / 7, 2 / 7, 1 / 7])
    assert block_shares(2, ("zipf", 1.0)) == pytest.approx([2 / 3, 1 / 3])
    with pytest.raises(ValueError, match=r"skew must be None, \('exp', s\)"):
        block_shares(3, ("pareto", 1.0))
    with pytest.raises(ValueError, match="skew parameter must be a finite number >= 0"):
        block_shares(3, ("exp", -1.0))


def test_generate_columns_and_dtypes():
    df, truth = generate(500, seed=1)
    assert (
        list(df.columns)
        == columns_of("person")
        == [
            "first_name",
            "surname",
            "dob",
            "city",
            "zip",
            "block_key",
            "entity_id",
        ]
    )
    assert df.index.name == "id" and df.index.dtype == "int64"
    assert df.index.tolist() == list(range(500))
    assert all(pd.api.types.is_string_dtype(df[c]) for c in columns_of("person")[:5])
    assert df["dob"].dropna().str.fullmatch(r"\d{4}-\d{2}-\d{2}").mean() > 0.9
    assert df["block_key"].between(0, 99).all()
    assert list(truth.columns) == ["left_id", "right_id"]
    assert truth.dtypes.tolist() == [np.dtype("int64")] * 2

    r, s_, truth = generate(300, kind="title", task="link", seed=1)
    assert list(r.columns) == list(s_.columns) == columns_of("title")
    assert str(r["year"].dtype) == "Int64"
    assert r.index.tolist() == list(range(300)) and s_.index.tolist() == list(range(300, 600))


def test_generate_is_reproducible_by_seed():
    a, ta = generate(2000, kind="title", seed=5)
    b, tb = generate(2000, kind="title", seed=5)
    c, _ = generate(2000, kind="title", seed=6)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(ta, tb)
    assert not a["title"].equals(c["title"])


def test_generate_rejects_bad_arguments():
    with pytest.raises(ValueError, match="kind must be one of"):
        generate(10, kind="company")
    with pytest.raises(ValueError, match="task must be one of"):
        generate(10, task="join")
    with pytest.raises(ValueError, match=r"dup_rate must be a number in \[0, 1\], got 1.5"):
        generate(10, dup_rate=1.5)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        generate(-1)
    with pytest.raises(ValueError, match="npartitions must be None or an integer >= 1"):
        generate(10, npartitions=0)


# --------------------------------------------------------------------------- generator: truth


def test_dedupe_truth_is_within_entities_and_blocks():
    n = 20_000
    df, truth = generate(n, dup_rate=0.2, seed=2)
    # round(n * dup_rate) duplicates: records minus entities
    assert n - df["entity_id"].nunique() == 4000
    assert (truth["left_id"] < truth["right_id"]).all()
    pd.testing.assert_frame_equal(truth, pairs_from_clusters(df["entity_id"]))
    # entity_id is the smallest id of the entity: what cluster() returns for the truth
    pd.testing.assert_series_equal(cluster(truth, ids=df.index), df["entity_id"], check_names=False)
    bk = df["block_key"]
    assert (bk.loc[truth["left_id"]].to_numpy() == bk.loc[truth["right_id"]].to_numpy()).all()


def test_key_errors_move_some_true_pairs_across_blocks():
    df, truth = generate(20_000, key_error_rate=0.5, skew=None, seed=2)
    bk = df["block_key"]
    crossing = bk.loc[truth["left_id"]].to_numpy() != bk.loc[truth["right_id"]].to_numpy()
    assert 0.3 < crossing.mean() < 0.8


def test_link_truth():
    n = 10_000
    r, s_, truth = generate(n, task="link", dup_rate=0.3, seed=4)
    assert len(truth) == 3000
    assert truth["left_id"].isin(r.index).all() and truth["right_id"].isin(s_.index).all()
    assert truth["left_id"].is_unique and truth["right_id"].is_unique
    # a copy carries the df_r id as entity_id and the same block
    assert (s_.loc[truth["right_id"], "entity_id"].to_numpy() == truth["left_id"]).all()
    assert (
        s_.loc[truth["right_id"], "block_key"].to_numpy()
        == r.loc[truth["left_id"], "block_key"].to_numpy()
    ).all()
    fresh = ~s_.index.isin(truth["right_id"])
    assert (s_.loc[fresh, "entity_id"] == s_.index[fresh]).all()


# --------------------------------------------------------------------------- generator: skew


@pytest.mark.parametrize("skew", [("exp", 0.5), ("zipf", 1.0), None])
def test_block_key_shares_match_target(skew):
    n = 200_000
    df, _ = generate(n, skew=skew, seed=3)
    share = np.bincount(df["block_key"], minlength=100) / n
    target = block_shares(100, skew)
    # binomial sd, x1.2 because duplicates copy keys (records come in clusters)
    sd = 1.2 * np.sqrt(target * (1 - target) / n)
    assert (np.abs(share - target) <= 6 * sd + 1e-12).all()
    assert np.abs(share - target).max() < 0.005


# --------------------------------------------------------------------------- generator: errors


def test_typo_rate_and_single_edits():
    n = 100_000
    clean, _ = generate(n, typo_rate=0.0, token_drop_rate=0.0, missing_rate=0.0, seed=8)
    noisy, _ = generate(n, typo_rate=0.2, token_drop_rate=0.0, missing_rate=0.0, seed=8)
    n_dup = n - clean["entity_id"].nunique()
    # same seed: same entities and structure, errors only in duplicates
    pd.testing.assert_series_equal(clean["entity_id"], noisy["entity_id"])
    for col in ["first_name", "surname", "dob", "city", "zip"]:
        changed = clean[col] != noisy[col]
        # transposing equal neighbours ("ll", "1944") changes nothing: a little under 0.2
        assert 0.175 < changed.sum() / n_dup < 0.215, col
        dist = {OSA.distance(a, b) for a, b in zip(clean[col][changed], noisy[col][changed])}
        assert dist == {1}, col  # one insert / delete / substitute / transpose


def test_token_drops_and_missing_values():
    n = 20_000
    kw = dict(kind="title", typo_rate=0.0, seed=9)
    clean, _ = generate(n, token_drop_rate=0.0, missing_rate=0.0, **kw)
    noisy, _ = generate(n, token_drop_rate=1.0, missing_rate=0.0, **kw)
    n_dup = n - clean["entity_id"].nunique()
    changed = clean["title"] != noisy["title"]
    assert changed.sum() >= 0.98 * n_dup
    words = lambda s: s.str.count(" ") + 1  # noqa: E731
    assert (words(clean["title"][changed]) - words(noisy["title"][changed]) == 1).all()
    missing, _ = generate(n, token_drop_rate=0.0, missing_rate=0.1, **kw)
    rates = missing[columns_of("title")[:4]].isna().mean()
    assert rates.between(0.09, 0.11).all()
    assert missing["block_key"].notna().all()


# --------------------------------------------------------------------------- generator: dask


def test_dask_path_one_partition_equals_pandas():
    df, truth = generate(3000, kind="title", seed=11, npartitions=1)
    pdf, ptruth = generate(3000, kind="title", seed=11)
    # dask has its own string dtype; values are the same
    pd.testing.assert_frame_equal(df.compute(), pdf, check_dtype=False)
    pd.testing.assert_frame_equal(truth.compute(), ptruth)


def test_dask_path_partitions_ids_and_distribution():
    n, p = 60_000, 6
    df, truth = generate(n, skew=("zipf", 1.0), seed=12, npartitions=p)
    assert df.npartitions == p and truth.npartitions == p
    assert df.divisions == (0, 10_000, 20_000, 30_000, 40_000, 50_000, 59_999)
    full = df.compute()
    assert full.index.tolist() == list(range(n))  # unique, partition offset + row
    # each partition is built on its own, from its own seed
    pd.testing.assert_frame_equal(df.partitions[3].compute(), full.loc[30_000:39_999])
    share = np.bincount(full["block_key"], minlength=100) / n
    assert np.abs(share - block_shares(100, ("zipf", 1.0))).max() < 0.01
    t = truth.compute()
    want = pairs_from_clusters(full["entity_id"])
    pd.testing.assert_frame_equal(t.reset_index(drop=True), want)
    # projection: only block_key built
    assert df["block_key"].sum().compute() == full["block_key"].sum()


def test_dask_graph_stays_small_with_many_blocks():
    import pickle

    df, _ = generate(1000, n_blocks=1_000_000, skew=("zipf", 1.0), npartitions=2)
    # the shares are recomputed on the workers, not embedded in each task
    assert len(pickle.dumps(dict(df.__dask_graph__()))) < 50_000
    assert df["block_key"].max().compute() < 1_000_000


def test_dask_link_ids_do_not_collide():
    r, s_, truth = generate(9_000, task="link", npartitions=3, seed=13)
    rc, sc, tc = r.compute(), s_.compute(), truth.compute()
    assert rc.index.tolist() == list(range(9_000))
    assert sc.index.tolist() == list(range(9_000, 18_000))
    assert len(tc) == 3 * 600
    assert tc["left_id"].isin(rc.index).all() and tc["right_id"].isin(sc.index).all()
