"""cluster / one_to_one / cluster_dask against tiny obviously-correct references."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import erblock
from erblock.engine.clustering import cluster_dask
from erblock.matchers.clustering import cluster, one_to_one

# --------------------------------------------------------------------------- references


def union_find_labels(edges: list[tuple[int, int]], nodes: list[int]) -> dict[int, int]:
    """Smallest member of each connected component, by plain union-find."""
    parent = {v: v for v in nodes}

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)  # root is always the smallest id
    return {v: find(v) for v in nodes}


def greedy_reference(pairs: pd.DataFrame) -> list[tuple[int, int]]:
    """Sequential greedy: best score first, ties by (left, right); both ends free."""
    rows = sorted(
        zip(pairs["score"], pairs["left_id"], pairs["right_id"]),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    used_l, used_r, out = set(), set(), []
    for _, lft, rgt in rows:
        if lft not in used_l and rgt not in used_r:
            used_l.add(lft)
            used_r.add(rgt)
            out.append((lft, rgt))
    return out


graphs = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 30), st.sampled_from([0.1, 0.5, 0.5, 0.9])),
    max_size=60,
)

# --------------------------------------------------------------------------- cluster


def test_cluster_literal_example():
    pairs = pd.DataFrame(
        {
            "left_id": [1, 2, 5, 7, 9],
            "right_id": [2, 3, 6, 8, 10],
            "score": [0.9, 0.8, 0.4, 0.95, 0.7],
        }
    )
    got = cluster(pairs, 0.5, ids=range(12))
    assert got.name == "entity_id"
    assert got.index.name == "id"
    assert got.index.tolist() == list(range(12))
    assert got.tolist() == [0, 1, 1, 1, 4, 5, 6, 7, 7, 9, 9, 11]
    # without ids: every id seen in pairs (5-6 is below the threshold: two singletons)
    got = cluster(pairs, 0.5)
    assert got.to_dict() == {1: 1, 2: 1, 3: 1, 5: 5, 6: 6, 7: 7, 8: 7, 9: 9, 10: 9}
    # no threshold: every row is a match
    assert cluster(pairs).loc[6] == 5


def test_cluster_string_ids_keep_ids_order_and_extras():
    pairs = pd.DataFrame({"left_id": ["b", "c", "x"], "right_id": ["a", "d", "c"]})
    got = cluster(pairs, ids=["d", "c", "b", "a", "e"])
    # ids order first, then ids only seen in pairs, sorted
    assert got.index.tolist() == ["d", "c", "b", "a", "e", "x"]
    assert got.tolist() == ["c", "c", "a", "a", "e", "c"]


def test_cluster_nan_scores_never_match_and_empty_pairs():
    pairs = pd.DataFrame({"left_id": [1, 2], "right_id": [2, 3], "score": [np.nan, 0.8]})
    assert cluster(pairs, 0.5).to_dict() == {1: 1, 2: 2, 3: 2}
    empty = pairs.iloc[:0]
    assert cluster(empty, 0.5, ids=[3, 1]).to_dict() == {3: 3, 1: 1}


def test_cluster_mixed_id_types_fall_back_to_str_order():
    pairs = pd.DataFrame({"left_id": ["conf/x", "conf/y"], "right_id": [375, 376]})
    got = cluster(pairs)
    # str order: "375" < "376" < "conf/x" < "conf/y"
    assert got.to_dict() == {375: 375, 376: 376, "conf/x": 375, "conf/y": 376}


def test_ids_of_different_integer_dtypes_stay_apart():
    """int64 with uint64 ids (or float truth) promote to float64 in a plain concat, and
    19-digit ids beyond 2**53 then merge: each id must stay its own."""
    b = 1_500_000_000_000_000_000
    pairs = pd.DataFrame({"left_id": np.array([b, b + 2], dtype="int64"),
                          "right_id": np.array([b + 1, b + 3], dtype="uint64"),
                          "score": [0.9, 0.9]})
    got = cluster(pairs, 0.5, ids=[b, b + 1, b + 2, b + 3, b + 4])
    assert got.to_dict() == {b: b, b + 1: b, b + 2: b + 2, b + 3: b + 2, b + 4: b + 4}
    alone = cluster(pairs, 0.5)
    assert alone.index.dtype == np.int64 and alone.dtype == np.int64
    assert alone.to_dict() == {b: b, b + 1: b, b + 2: b + 2, b + 3: b + 2}


def test_ids_keep_their_dtype_and_mixed_ids_stay_apart():
    b = 1_500_000_000_000_000_000
    # categoricals of int64 and uint64 ids: promoted to float64 by a plain append
    cats = pd.DataFrame({"left_id": pd.Categorical(np.array([b, b + 2], dtype="int64")),
                         "right_id": pd.Categorical(np.array([b + 1, b + 3], dtype="uint64")),
                         "score": [0.9, 0.9]})
    assert cluster(cats, 0.5).to_dict() == {b: b, b + 1: b, b + 2: b + 2, b + 3: b + 2}
    # ints and floats: floats where they are, ints exact, no duplicate ids
    mixed = pd.DataFrame({"left_id": [5.0], "right_id": [7.0], "score": [0.9]})
    got = cluster(mixed, 0.5, ids=pd.Index([b + 1, b + 3, 5]))
    assert got.to_dict() == {b + 1: b + 1, b + 3: b + 3, 5: 5, 7.0: 5}
    # entity ids come back in the ids' own dtype
    for dtype, ids in (("Int64", [1, 2, 3, 4]), ("int64[pyarrow]", [1, 2, 3, 4]),
                       ("string", ["1", "2", "3", "4"]), ("uint64", [1, 2, 3, 4])):
        pairs = pd.DataFrame({"left_id": pd.array(ids[::2], dtype=dtype),
                              "right_id": pd.array(ids[1::2], dtype=dtype),
                              "score": [0.9, 0.1]})
        out = cluster(pairs, 0.5)
        assert out.dtype == out.index.dtype == pd.Series(ids, dtype=dtype).dtype, dtype
        assert out.tolist() == [ids[0], ids[0], ids[2], ids[3]], dtype


def test_cluster_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"missing column\(s\) \['score'\]"):
        cluster(pd.DataFrame({"left_id": [1], "right_id": [2]}), 0.5)
    with pytest.raises(ValueError, match="ids: record ids must be unique"):
        cluster(pd.DataFrame({"left_id": [1], "right_id": [2]}), ids=[1, 1, 2])
    scored = pd.DataFrame({"left_id": [1, 3], "right_id": [2, 4], "score": [0.9, 0.2]})
    with pytest.raises(TypeError, match="threshold must be a number"):
        cluster(scored, "0.5")
    with pytest.raises(ValueError, match=r"score lies in \[0, 1\], so 2 would keep no pair"):
        cluster(scored, 2)
    weighted = scored.assign(match_weight=[5.0, -3.0])
    assert cluster(weighted, 2, score_column="match_weight").to_dict() == {1: 1, 2: 1, 3: 3,
                                                                          4: 4}
    with pytest.raises(ValueError, match="missing record ids"):
        cluster(pd.DataFrame({"left_id": [1.0, np.nan], "right_id": [2.0, 3.0]}))
    with pytest.warns(UserWarning, match="no id of ids= .* is among the pairs' ids"):
        cluster(scored, 0.5, ids=["1", "2", "3", "4"])
    mixed = pd.DataFrame({"left_id": [1, 2], "right_id": ["2", "3"]})
    with pytest.warns(UserWarning, match=r"ids= \(int64\) is among the pairs' ids "
                                         r"\(int64/(object|str); 1 is not '1'\)"):
        cluster(mixed, ids=[7, 8])
    with warnings.catch_warnings():  # object ids that do meet the pairs' int ids: silent
        warnings.simplefilter("error")
        got = cluster(scored, 0.5, ids=pd.Index([1, 2, 3, 4, 5], dtype=object))
    assert got.to_dict() == {1: 1, 2: 1, 3: 3, 4: 4, 5: 5}
    # a link's pairs: ids of two inputs may coincide, one set of entities cannot hold them
    link = scored.copy()
    link.attrs["erblock_report"] = {"mode": "link"}
    with pytest.raises(ValueError, match="a link's"):
        cluster(link, 0.5)


def test_cluster_takes_a_dask_frame_of_pairs():
    import dask.dataframe as dd

    pairs = pd.DataFrame({"left_id": [1, 2, 5], "right_id": [2, 3, 6],
                          "score": [0.9, 0.8, 0.1]})
    got = cluster(dd.from_pandas(pairs, npartitions=2), 0.5)
    assert got.to_dict() == cluster(pairs, 0.5).to_dict() == {1: 1, 2: 1, 3: 1, 5: 5, 6: 6}


@settings(max_examples=60, deadline=None)
@given(graphs, st.sampled_from([None, 0.5]))
def test_cluster_equals_union_find(edges, threshold):
    pairs = pd.DataFrame(edges, columns=["left_id", "right_id", "score"])
    ids = list(range(0, 35, 1))
    got = cluster(pairs, threshold, ids=ids)
    kept = [(a, b) for a, b, s in edges if threshold is None or s >= threshold]
    assert got.to_dict() == union_find_labels(kept, ids)


# --------------------------------------------------------------------------- one_to_one


def test_one_to_one_literal_example():
    pairs = pd.DataFrame(
        {
            "left_id": ["a", "a", "b", "b", "c", "d"],
            "right_id": [1, 2, 1, 3, 3, 4],
            "score": [0.9, 0.8, 0.95, 0.5, 0.5, np.nan],
        },
        index=[10, 11, 12, 13, 14, 15],
    )
    got = one_to_one(pairs)
    # b-1 (0.95) first, then a-2 (a-1 is taken), then the tie b-3 / c-3: b is used -> c-3
    assert list(zip(got["left_id"], got["right_id"])) == [("b", 1), ("a", 2), ("c", 3)]
    assert got.index.tolist() == [12, 11, 14]  # original rows kept
    assert len(one_to_one(pairs, threshold=0.85)) == 1  # a-1 loses to b-1


def test_one_to_one_tie_break_is_by_ids():
    pairs = pd.DataFrame({"left_id": [2, 1, 1], "right_id": [5, 6, 5], "score": [0.7] * 3})
    got = one_to_one(pairs)
    # equal scores: (1, 5) < (1, 6) < (2, 5); after 1-5, both others touch a used id
    assert list(zip(got["left_id"], got["right_id"])) == [(1, 5)]
    assert greedy_reference(pairs) == [(1, 5)]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 8), st.sampled_from([0.2, 0.5, 0.7, 0.9])),
        max_size=40,
    )
)
def test_one_to_one_equals_sequential_greedy(rows):
    pairs = pd.DataFrame(rows, columns=["left_id", "right_id", "score"]).drop_duplicates(
        ["left_id", "right_id"]
    )
    got = one_to_one(pairs)
    assert list(zip(got["left_id"], got["right_id"])) == greedy_reference(pairs)
    assert got["left_id"].is_unique and got["right_id"].is_unique


# --------------------------------------------------------------------------- cluster_dask


@pytest.fixture(scope="module")
def dask_client():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            processes=False,
            n_workers=2,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as lc,
        Client(lc, set_as_default=False) as c,
    ):
        yield c


def test_cluster_dask_matches_scipy_path(dask_client):
    import dask.dataframe as dd

    rng = np.random.default_rng(7)
    n = 300
    pairs = pd.DataFrame(
        {
            "left_id": rng.integers(0, n, 400),
            "right_id": rng.integers(0, n, 400),
            "score": rng.random(400),
        }
    )
    # a long chain too, numbered against the grain: the worst case for label propagation
    chain = np.arange(n, n + 60)[::-1]
    pairs = pd.concat(
        [pairs, pd.DataFrame({"left_id": chain[:-1], "right_id": chain[1:], "score": 1.0})],
        ignore_index=True,
    )
    ddf = dd.from_pandas(pairs, npartitions=3)
    got = cluster_dask(ddf, 0.3, client=dask_client)
    got = dask_client.compute(got).result().sort_index()
    want = cluster(pairs, 0.3)
    kept = pairs[pairs["score"] >= 0.3]
    seen = np.unique(np.r_[kept["left_id"], kept["right_id"]])
    assert got.index.tolist() == seen.tolist()  # only records in a kept pair
    pd.testing.assert_series_equal(got, want.loc[seen], check_names=False, check_dtype=False)
    assert got.loc[n + 59] == n  # the chain collapsed to its smallest id


def test_cluster_dask_string_ids(dask_client):
    import dask.dataframe as dd

    pairs = pd.DataFrame(
        {"left_id": ["d", "b", "x", "y"], "right_id": ["c", "c", "y", "z"], "score": 1.0}
    )
    got = cluster_dask(dd.from_pandas(pairs, npartitions=2), client=dask_client)
    got = dask_client.compute(got).result().sort_index()
    assert got.to_dict() == {"b": "b", "c": "b", "d": "b", "x": "x", "y": "x", "z": "x"}


def test_a_float32_score_at_the_threshold_joins_as_the_run_kept_it(dask_client):
    """A run's scores are float32 and it keeps score >= float32(threshold); clustering
    at that threshold joins the pair too, in memory, from a Dask frame and with
    cluster_dask (float32 0.7 is below the float64 0.7, which had split it off)."""
    import dask.dataframe as dd

    pairs = pd.DataFrame({"left_id": [0, 2], "right_id": [1, 3],
                          "score": np.array([0.7, 0.5], dtype=np.float32)})
    want = {0: 0, 1: 0, 2: 2, 3: 3}
    parts = dd.from_pandas(pairs, npartitions=2)
    for t in (0.7, np.float64(0.7), np.float32(0.7)):
        assert cluster(pairs, t).to_dict() == want, t
        assert cluster(parts, t).to_dict() == want, t
        got = dask_client.compute(cluster_dask(parts, t, client=dask_client)).result()
        assert got.to_dict() == {0: 0, 1: 0}, t
    # the model's float64 probability compares in float64: 0.7 itself is kept, below not
    p = pairs.assign(match_probability=[0.7, np.nextafter(0.7, 0)])
    assert cluster(p, 0.7).to_dict() == want


def test_pairs_and_ids_that_are_not_what_cluster_takes_are_named(dask_client):
    import dask.dataframe as dd

    for bad in ([(1, 2)], None):
        with pytest.raises(TypeError, match=r"pairs must be a pandas or Dask DataFrame with "
                                            r"columns left_id and right_id, got "):
            cluster(bad)
    scored = pd.DataFrame({"left_id": [1], "right_id": [2], "score": [0.9]})
    for bad in (5, "abc", b"ab"):
        with pytest.raises(TypeError, match=r"ids must be the record ids \(an Index, array "
                                            r"or list, e.g. ids=df.index\), got "):
            cluster(scored, 0.5, ids=bad)
    with pytest.raises(TypeError, match=r"got a DataFrame; pass its index \(ids=df.index\)"):
        cluster(scored, 0.5, ids=scored)
    assert cluster(scored, 0.5, ids=(i for i in [1, 2, 3])).to_dict() == {1: 1, 2: 1, 3: 3}
    # a pair with a missing id: the same message in memory and on the cluster (the
    # command line's erblock cluster)
    nan = pd.DataFrame({"left_id": [1.0, np.nan, 3.0], "right_id": [2.0, 3.0, np.nan],
                        "score": 0.9})
    said = (r"^cluster: pairs hold missing record ids: 1 row has a missing left_id and 1 row "
            r"has a missing right_id; a pair needs both ids: drop the rows without a partner$")
    with pytest.raises(ValueError, match=said):
        cluster(nan, 0.5)
    with pytest.raises(ValueError, match=said):
        cluster_dask(dd.from_pandas(nan, npartitions=2), 0.5, client=dask_client)
    with pytest.raises(ValueError, match=said):  # below the threshold too
        cluster_dask(dd.from_pandas(nan.assign(score=0.1), npartitions=2), 0.5)


def test_a_link_s_written_pairs_are_refused_as_its_frame_is(client, tmp_path):
    """``output=`` returns a Dask frame, which carries no attrs: cluster() took a link's
    written pairs for a dedupe's and merged left record 0 with right record 0. The run's
    report is read beside the parquet, also for a selection of the frame or the
    directory read back; a dedupe's written pairs still cluster."""
    import dask.dataframe as dd

    r = pd.DataFrame({"k": [1, 1, 2], "name": ["ann", "anne", "carl"]})
    s = pd.DataFrame({"k": [1, 2], "name": ["ann", "carl"]})
    out = tmp_path / "link"
    d = erblock.link(r, s, key="k", compare={"name": "jaro"}, threshold=0.5,
                     output=str(out), client=client)
    for frame in (d, d[d["score"] > 0.1], dd.read_parquet(out)):
        with pytest.raises(ValueError, match="these pairs are a link's"):
            erblock.cluster(frame, 0.5)
    parts = sorted(str(f) for f in out.glob("*.parquet"))  # read as files, or a glob
    for frame in (dd.read_parquet(parts), dd.read_parquet(str(out / "*.parquet"))):
        with pytest.raises(ValueError, match="these pairs are a link's"):
            erblock.cluster(frame, 0.5)
    dd_out = tmp_path / "dedupe"
    pairs = erblock.dedupe(r, key="k", compare={"name": "jaro"}, threshold=0.5,
                           output=str(dd_out), client=client)
    ents = erblock.cluster(pairs, 0.5)
    assert ents.loc[0] == ents.loc[1] == 0
    # ids= as a Dask index or column (ndim 1) is ids, not a frame
    records = dd.from_pandas(r, npartitions=2)
    for ids in (records.index, records["k"].index):
        got = erblock.cluster(pairs, 0.5, ids=ids)
        assert list(got.index) == [0, 1, 2] and got.loc[2] == 2
