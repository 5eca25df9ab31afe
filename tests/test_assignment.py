"""A link's cardinality: the in-memory assignment against sequential references, the
cluster version against the in-memory one, and ``link(cardinality=...)`` / ``erblock link
--cardinality`` end to end, in memory and written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import erblock
from erblock.cli import main
from erblock.engine.assignment import assign_dask
from erblock.matchers.assignment import CARDINALITIES, assign, check_cardinality
from erblock.matchers.scoring import ModelWarning

# ------------------------------------------------------------------------- references


def greedy(rows: list[tuple[float, int, int]]) -> list[tuple[int, int]]:
    """Sequential greedy: best score first, ties by (left, right); both ends free."""
    used_l, used_r, out = set(), set(), []
    for _, lft, rgt in sorted(rows, key=lambda t: (-t[0], t[1], t[2])):
        if lft not in used_l and rgt not in used_r:
            used_l.add(lft)
            used_r.add(rgt)
            out.append((lft, rgt))
    return out


def best_of_each(rows: list[tuple[float, int, int]], side: int) -> set[tuple[int, int]]:
    """For each id of ``side`` (1 left, 2 right), its best pair: top score, then the
    smallest id of the other side."""
    best: dict[int, tuple[float, int, int]] = {}
    other = 3 - side
    for r in rows:
        b = best.get(r[side])
        if b is None or (-r[0], r[other]) < (-b[0], b[other]):
            best[r[side]] = r
    return {(r[1], r[2]) for r in best.values()}


def frame(rows: list[tuple[float, int, int]]) -> pd.DataFrame:
    return pd.DataFrame({"left_id": [r[1] for r in rows], "right_id": [r[2] for r in rows],
                         "score": [r[0] for r in rows]})


def links(pairs: pd.DataFrame) -> set[tuple[object, object]]:
    return set(zip(pairs["left_id"], pairs["right_id"]))


pair_rows = st.lists(
    st.tuples(st.sampled_from([0.2, 0.5, 0.7, 0.9]), st.integers(0, 8), st.integers(0, 8)),
    max_size=40, unique_by=lambda t: (t[1], t[2]))

# ------------------------------------------------------------------------- in memory


def test_literal_example_for_every_cardinality():
    # ann and bob both score high against a2 and b2 (two records of one household)
    pairs = pd.DataFrame({
        "left_id": ["ann", "ann", "bob", "bob", "cat", "dan"],
        "right_id": ["a2", "b2", "a2", "b2", "b2", "d2"],
        "p": [0.99, 0.80, 0.85, 0.97, 0.60, np.nan],
    }, index=[10, 11, 12, 13, 14, 15])
    one = assign(pairs, "1:1", "p")
    assert list(zip(one["left_id"], one["right_id"])) == [("ann", "a2"), ("bob", "b2")]
    assert one.index.tolist() == [10, 13]  # rows as given, best first
    # 1:n: S's records keep their best pair (a2 -> ann, b2 -> bob); NaN never links
    assert links(assign(pairs, "1:n", "p")) == {("ann", "a2"), ("bob", "b2")}
    # n:1: R's records keep theirs; cat keeps b2 although bob has it too
    assert links(assign(pairs, "n:1", "p")) == {("ann", "a2"), ("bob", "b2"), ("cat", "b2")}
    assert len(assign(pairs, "n:m", "p")) == 5 and len(assign(pairs, None, "p")) == 5
    assert links(assign(pairs, "1:1", "p", threshold=0.98)) == {("ann", "a2")}


def test_ties_break_by_ids_whatever_the_row_order():
    pairs = pd.DataFrame({"left_id": [2, 1, 1], "right_id": [5, 6, 5], "score": [0.7] * 3})
    for order in ([0, 1, 2], [2, 1, 0], [1, 0, 2]):
        p = pairs.iloc[order]
        assert links(assign(p, "1:1")) == {(1, 5)}
        assert links(assign(p, "1:n")) == {(1, 5), (1, 6)}  # right 5: left 1 < 2
        assert links(assign(p, "n:1")) == {(1, 5), (2, 5)}  # left 1: right 5 < 6


def confident_household() -> pd.DataFrame:
    """Two people and their two records, every pair far above the decision: each
    probability rounds to 1.0, only the match weights (70 and 60 bits) tell them apart."""
    from erblock.matchers.scoring.base import probability

    w = np.array([60.0, 70.0, 70.0, 60.0])  # 1 -> 6 and 2 -> 5 are the people's own
    return pd.DataFrame({"left_id": [1, 1, 2, 2], "right_id": [5, 6, 5, 6],
                         "match_weight": w, "match_probability": probability(w)})


def test_confident_pairs_rank_by_match_weight_not_a_rounded_probability():
    pairs = confident_household()
    assert (pairs["match_probability"] == 1.0).all()  # the tie the ids used to break
    for card, want in (("1:1", {(1, 6), (2, 5)}), ("1:n", {(2, 5), (1, 6)}),
                       ("n:1", {(1, 6), (2, 5)})):
        assert links(assign(pairs, card, "match_probability", threshold=0.5)) == want, card
    # asked for, the probability ranks: the tie goes to the smaller ids, as before
    assert links(assign(pairs, "1:1", "match_probability",
                        rank_column="match_probability")) == {(1, 5), (2, 6)}
    # without a weight the decision column ranks; a wrong column is named
    assert links(assign(pairs.drop(columns="match_weight"), "1:1",
                        "match_probability")) == {(1, 5), (2, 6)}
    with pytest.raises(ValueError, match="rank_column: 'weight' is not a column"):
        assign(pairs, "1:1", "match_probability", rank_column="weight")


@settings(max_examples=80, deadline=None)
@given(pair_rows)
def test_in_memory_equals_the_sequential_references(rows):
    pairs = frame(rows)
    one = assign(pairs, "1:1")
    assert list(zip(one["left_id"], one["right_id"])) == greedy(rows)
    assert links(assign(pairs, "1:n")) == best_of_each(rows, 2)
    assert links(assign(pairs, "n:1")) == best_of_each(rows, 1)
    assert links(assign(pairs, None)) == {(r[1], r[2]) for r in rows}


@pytest.mark.parametrize("bad", ["1-1", "one_to_one", 1, True])
def test_bad_cardinality_is_named(bad):
    with pytest.raises(ValueError, match="cardinality must be one of '1:1', '1:n'"):
        check_cardinality(bad)


def test_cardinality_is_for_link_only_and_case_insensitive():
    assert erblock.assign is assign  # public as erblock.assign, for pairs a user has
    assert check_cardinality("1:N") == "1:n" and check_cardinality("N:M") is None
    with pytest.raises(ValueError, match="dedupe has one source.*erblock.cluster"):
        check_cardinality("1:1", mode="dedupe")
    assert CARDINALITIES == ("1:1", "1:n", "n:1", "n:m")


# ------------------------------------------------------------------------- on the cluster


@pytest.mark.parametrize(("seed", "local_rows", "ids"),
                         [(0, 0, "int"), (1, 0, "string"), (2, 40, "object")])
def test_cluster_version_equals_in_memory(client, seed, local_rows, ids):
    import dask.dataframe as dd

    g = np.random.default_rng(seed)
    n = 150  # enough chains of conflicts for several rounds; smaller: the suite's time
    pairs = pd.DataFrame({"left_id": g.integers(0, 60, n), "right_id": g.integers(0, 50, n),
                          "score": g.choice([0.3, 0.6, 0.6, 0.8, 0.95, np.nan], n)
                          .astype(np.float32)})
    pairs = pairs.drop_duplicates(["left_id", "right_id"])
    if ids != "int":  # ids as written parquet gives them back, and mixed-width strings
        pairs = pairs.astype({"left_id": str, "right_id": str}).astype(
            {"left_id": ids, "right_id": ids})
    parts = dd.from_pandas(pairs, npartitions=4)
    # each cardinality once ("n:1" is "1:n" with the sides swapped: in memory only); the
    # other id types with the one of most rounds (the suite's time)
    for card in ("1:1", "1:n", None) if ids == "int" else ("1:1",):
        got = client.compute(assign_dask(parts, card, threshold=0.5, client=client,
                                         local_rows=local_rows), sync=True)
        want = assign(pairs, card, threshold=0.5)
        assert links(got) == links(want), card
        assert sorted(got.columns) == sorted(pairs.columns)


def test_cluster_version_ranks_by_match_weight_too(client):
    import dask.dataframe as dd

    pairs = confident_household()
    for local_rows in (0, 10):  # by rounds on the cluster, and finished in memory
        got = client.compute(assign_dask(dd.from_pandas(pairs, npartitions=2), "1:1",
                                         "match_probability", threshold=0.5, client=client,
                                         local_rows=local_rows), sync=True)
        assert links(got) == {(1, 6), (2, 5)}, local_rows


# ------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def households():
    """Two registers without duplicates; each person's housemates share the address."""
    g = np.random.default_rng(5)
    rows = []
    for h in range(60):
        street = f"{g.integers(1, 99)} {g.choice(['oak', 'elm', 'high', 'mill'])} st {h}"
        for k in range(int(g.integers(2, 5))):
            rows.append({"given": g.choice(["ann", "bob", "cat", "dan", "eve", "fay", "gus"])
                         + str(k), "surname": f"fam{h}", "street": street,
                         "dob": f"19{g.integers(40, 99)}-0{g.integers(1, 9)}-1{k}"})
    people = pd.DataFrame(rows)
    r = people.set_axis([f"r{i}" for i in range(len(people))])
    s = people.sample(frac=0.8, random_state=1).set_axis(
        [f"s{i}" for i in range(int(round(0.8 * len(people))))])
    truth = {(f"r{i}", sid) for sid, i in zip(s.index, people.sample(
        frac=0.8, random_state=1).index)}
    return r, s, truth


COMPARE = {"given": "name", "surname": "name", "street": "text", "dob": "date"}


@pytest.mark.parametrize("output", [False, True])
def test_link_keeps_the_links_in_memory_and_written(client, households, tmp_path, output):
    r, s, truth = households
    kw = dict(key="surname", compare=COMPARE, client=client, threshold=0.5)
    out = str(tmp_path / "links") if output else None
    got = erblock.link(r, s, scoring="mean", cardinality="1:1", output=out, **kw)
    report = erblock.read_report(out if output else got)
    if output:
        got = got.compute()
    every = erblock.link(r, s, scoring="mean", **kw)
    assert links(got) == links(assign(every, "1:1", threshold=0.5))
    assert got["left_id"].is_unique and got["right_id"].is_unique
    a = report.settings["assignment"]
    assert a == {"cardinality": "1:1", "decision": "score", "threshold": 0.5,
                 "decided_pairs": len(every), "links": len(got)}
    assert report.pairs == len(got)  # what came out: the links
    assert "cardinality 1:1" in report.summary()
    assert len(links(got) & truth) / len(got) > len(links(every) & truth) / len(every)


@pytest.mark.parametrize("output", [False, True])
def test_a_model_links_at_its_default_decision(client, households, tmp_path, output):
    r, s, _ = households
    kw = dict(key="surname", compare=COMPARE, client=client, sort=True)
    # a surname is a household here, so among random pairs the same surname implies the
    # same street: the street is read as missing on every candidate (and warned about)
    said = "street_text: read as missing wherever surname_name agrees"
    with pytest.warns(ModelWarning, match=said):
        every = erblock.link(r, s, scoring=erblock.FellegiSunter(), **kw)
    out = str(tmp_path / "links") if output else None
    # a fresh model: it is fitted during this run too, then its pairs are assigned
    with pytest.warns(ModelWarning, match=said):
        got = erblock.link(r, s, scoring=erblock.FellegiSunter(), cardinality="1:n",
                           output=out, **kw)
    report = erblock.read_report(out if output else got)
    if output:
        parts = sorted((tmp_path / "links").glob("part-*.parquet"))
        for part in parts:  # sort=True: every part in id order, as without a cardinality
            ids = pd.read_parquet(part)[["left_id", "right_id"]]
            assert ids.equals(ids.sort_values(["left_id", "right_id"]).reset_index(drop=True))
        got = got.compute()
    else:
        assert got[["left_id", "right_id"]].equals(
            got[["left_id", "right_id"]].sort_values(["left_id", "right_id"]))
    assert (got["match_probability"] >= 0.5).all() and got["right_id"].is_unique
    assert links(got) == links(assign(every, "1:n", "match_probability", threshold=0.5))
    assert report.settings["assignment"]["threshold"] == 0.5


def test_a_float32_score_at_the_threshold_stays_decided(client, tmp_path):
    """Ten exact comparisons, nine agreeing: the mean is float32 0.9 (0.89999998 in
    float64); the kernels keep it at threshold 0.9, and so must the links, in memory and
    written."""
    cols = [f"c{i}" for i in range(10)]
    r = pd.DataFrame([["x"] * 10, ["y"] * 10], columns=cols).assign(k="a")
    s = pd.DataFrame([["x"] * 9 + ["z"], ["y"] * 9 + ["z"]], columns=cols).assign(k="a")
    kw = dict(key="k", compare={c: "exact" for c in cols}, threshold=0.9, client=client)
    kept = erblock.link(r, s, **kw)
    assert len(kept) == 2 and kept["score"].dtype == np.float32
    for out in (None, str(tmp_path / "w")):
        got = erblock.link(r, s, cardinality="1:1", output=out, **kw)
        got = got.compute() if out else got
        assert links(got) == links(kept)


def test_the_mean_score_needs_a_threshold_for_links(households):
    r, s, _ = households
    with pytest.raises(ValueError, match="mean score has no decision without a threshold"):
        erblock.link(r, s, key="surname", compare=COMPARE, cardinality="1:1")


def test_bad_cardinality_in_link_and_dedupe(households):
    r, s, _ = households
    with pytest.raises(ValueError, match="cardinality must be one of"):
        erblock.link(r, s, key="surname", compare=COMPARE, cardinality="1to1")
    with pytest.raises(ValueError, match="dedupe has one source"):
        erblock.api.run_frames([r], key="surname", compare=COMPARE, cardinality="1:1")


def test_cli_writes_the_links(households, tmp_path, capsys):
    r, s, _ = households
    a, b = tmp_path / "r.csv", tmp_path / "s.csv"
    r.rename_axis("id").to_csv(a)
    s.rename_axis("id").to_csv(b)
    out = tmp_path / "out"
    args = ["link", str(a), str(b), "--id", "id", "--key", "surname", "--compare",
            "given:name", "--compare", "dob:date", "--threshold", "0.6", "-o", str(out)]
    assert main([*args, "--cardinality", "1:1", "--json", "--quiet"]) == 0
    rep = json.loads(capsys.readouterr().out)
    got = pd.read_parquet(out)
    assert rep["settings"]["assignment"]["links"] == len(got) == rep["pairs"] > 0
    assert got["left_id"].is_unique and got["right_id"].is_unique
    with pytest.raises(SystemExit) as bad:
        main([*args[:-2], "--cardinality", "2:2"])
    assert bad.value.code == 2
    assert "--cardinality: invalid choice" in capsys.readouterr().err


# ------------------------------------------------------------------------- refused input


def test_a_missing_id_is_refused_as_cluster_refuses_it():
    """pd.factorize codes a missing id -1: its pair took the last record's place and a
    valid link was dropped."""
    pairs = pd.DataFrame({"left_id": [np.nan, 1.0], "right_id": [1, 1], "score": [0.9, 0.8]})
    for card in ("1:1", "1:n", "n:1", None):
        with pytest.raises(ValueError, match=r"^assign: pairs hold missing record ids: 1 row "
                                             r"has a missing left_id; a pair needs both ids: "
                                             r"drop the rows without a partner$"):
            assign(pairs, card)
    assert links(assign(pairs.dropna(), "1:1")) == {(1.0, 1)}


def test_assign_dask_refuses_a_missing_id_as_assign_does(client):
    """A pair with a missing id was shuffled like any other (1:1: left to the in-memory
    greedy or dropped by the groupby); now refused with assign's message."""
    import dask.dataframe as dd

    pairs = pd.DataFrame({"left_id": [np.nan, 1.0, 2.0], "right_id": [1, 1, 2],
                          "score": [0.9, 0.8, 0.7]})
    parts = dd.from_pandas(pairs, npartitions=2)
    for card in ("1:1", "1:n", None):
        with pytest.raises(ValueError, match=r"^assign_dask: pairs hold missing record ids: "
                                             r"1 row has a missing left_id; a pair needs "
                                             r"both ids"):
            assign_dask(parts, card, client=client)
    with pytest.raises(ValueError, match=r"cardinality must be one of"):
        assign_dask(parts, "2:2", client=client)
    got = client.compute(assign_dask(dd.from_pandas(pairs.dropna(), npartitions=2), "1:1",
                                     client=client), sync=True)
    assert links(got) == {(1.0, 1), (2.0, 2)}
    # a missing column is named as assign names it (it was pandas' "not in index")
    for drop in ("right_id", "score"):
        with pytest.raises(ValueError, match=rf"pairs: missing column\(s\) \['{drop}'\]"):
            assign_dask(parts.drop(columns=drop), "1:1", client=client)
    with pytest.raises(ValueError, match=r"threshold: score lies in \[0, 1\]"):
        assign_dask(parts.dropna(), "1:1", threshold=1.5, client=client)  # as assign says


def test_thresholds_and_frames_assign_cannot_take_are_named():
    import dask.dataframe as dd

    pairs = frame([(0.9, 1, 5)])
    with pytest.raises(ValueError, match=r"threshold: score lies in \[0, 1\], so 5 would "
                                         r"keep no pair"):
        assign(pairs, "1:1", threshold=5)
    with pytest.raises(TypeError, match=r"threshold must be a number or None, got '0.5'"):
        assign(pairs, "1:1", threshold="0.5")
    weighted = pairs.assign(match_weight=[12.0])  # bits: any real number
    assert len(assign(weighted, "1:1", "match_weight", threshold=5)) == 1
    with pytest.raises(TypeError, match=r"pairs: assign works on a pandas DataFrame in "
                                        r"memory, got a Dask DataFrame; .*cardinality= to "
                                        r"erblock.link .*assign_dask"):
        assign(dd.from_pandas(pairs, npartitions=1), "1:1")
    with pytest.raises(TypeError, match="pairs must be a pandas or Dask DataFrame"):
        assign([(1, 5)], "1:1")


def test_a_float32_score_at_the_threshold_is_a_link_in_memory_and_on_the_cluster(client):
    """The run keeps score >= float32(threshold); so do assign and assign_dask, whatever
    the threshold's own type (a NumPy float64 compared in float64 before)."""
    import dask.dataframe as dd

    pairs = pd.DataFrame({"left_id": [1, 2], "right_id": [5, 6],
                          "score": np.array([0.7, 0.5], dtype=np.float32)})
    parts = dd.from_pandas(pairs, npartitions=2)
    for t in (0.7, np.float64(0.7), np.float32(0.7)):
        assert links(assign(pairs, "1:1", threshold=t)) == {(1, 5)}, t
        for card in ("1:1", "1:n"):
            got = client.compute(assign_dask(parts, card, threshold=t, client=client),
                                 sync=True)
            assert links(got) == {(1, 5)}, (t, card)


@pytest.mark.parametrize("local_rows", [0, 10])
def test_a_pair_listed_twice_is_one_link_on_the_cluster_as_in_memory(client, local_rows):
    """The links were merged back with the pairs: a pair listed twice came out twice."""
    import dask.dataframe as dd

    pairs = pd.DataFrame({"left_id": [1, 1, 2, 2, 3, 1],
                          "right_id": [5, 5, 6, 6, 5, 6],
                          "score": [0.9, 0.9, 0.6, 0.8, 0.7, 0.5]})
    parts = dd.from_pandas(pairs, npartitions=3)
    for card in ("1:1", "1:n", "n:1", None):
        got = client.compute(assign_dask(parts, card, client=client, local_rows=local_rows),
                             sync=True)
        want = assign(pairs, card)
        order = ["left_id", "right_id", "score"]
        pd.testing.assert_frame_equal(got[order].sort_values(order).reset_index(drop=True),
                                      want[order].sort_values(order).reset_index(drop=True))
    assert len(assign(pairs, "1:1")) == 2  # (1, 5) once, (2, 6) at its best: 0.8
