"""The bad-input catalogue (docs/reliability.md): each case fails with a clear error, or is
handled in a documented way whose effect is counted in the run report and checked here
against the brute force.
"""

from __future__ import annotations

import json
import warnings

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.blocking import prefix
from erblock.report import RunReport

DF = pd.DataFrame({"k": list("aabbc"), "name": ["ann", "anne", "bob", "bobby", "cy"]})
JW = {"name": "jaro_winkler"}


def _records(pairs: pd.DataFrame) -> dict:
    return RunReport.of(pairs).records


# -- columns ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(key="nmae", compare=JW), KeyError, r"key column 'nmae' is not in df .*did you mean 'name'"),
        (dict(key="k", compare={"nam": "jaro"}), KeyError, r"compare column 'nam' .*did you mean 'name'"),
        (dict(key="k", compare={"name": "jaro_winkle"}), ValueError, r"unknown method 'jaro_winkle'.*did you mean 'jaro_winkler'"),
        (dict(key=("k", "nmae"), compare=JW), KeyError, r"key column 'nmae'"),
        (dict(key=prefix("nmae", 2), compare=JW), KeyError, r"key column 'nmae'"),
        (dict(key="k", compare=JW, id="ident"), KeyError, r"id column 'ident' is not in df"),
        (dict(key=0, compare=JW), TypeError, r"column labels must be strings, got 0"),
        (dict(key="k", compare=JW, strategy="blocksplt"), ValueError, r"did you mean 'blocksplit'"),
    ],
)
def test_missing_or_misspelled_names(kwargs, error, message):
    with pytest.raises(error, match=message):
        erblock.dedupe(DF, **kwargs)


def test_misspelled_column_in_s_names_df_s():
    with pytest.raises(KeyError, match=r"compare column 'name' is not in df_s"):
        erblock.link(DF, DF.rename(columns={"name": "nome"}), key="k", compare=JW)


def test_duplicate_column_names():
    dup = DF.set_axis(["k", "k"], axis=1)
    with pytest.raises(ValueError, match=r"df: column names must be unique, repeated: \['k'\]"):
        erblock.dedupe(dup, key="k", compare={"k": "jaro"})


def test_not_a_dataframe():
    with pytest.raises(TypeError, match="df must be a pandas or Dask DataFrame, got Series"):
        erblock.dedupe(DF["k"], key="k", compare=JW)


def test_reserved_column_prefix():
    with pytest.raises(ValueError, match="'_erb_' are reserved"):
        erblock.dedupe(DF.assign(_erb_x=1), key="k", compare=JW)


# -- dtypes -----------------------------------------------------------------------------


def test_numbers_in_a_string_comparison():
    df = pd.DataFrame({"k": list("aa"), "n": [1, 2]})
    with pytest.raises(TypeError, match=r"column 'n' of df holds numbers \(int64\) but method 'jaro'"):
        erblock.dedupe(df, key="k", compare={"n": "jaro"})


def test_text_in_a_numeric_comparison():
    df = pd.DataFrame({"k": list("aa"), "d": pd.to_datetime(["2020-01-01", "2020-01-02"])})
    with pytest.raises(TypeError, match=r"column 'd' of df is datetime64.*'numeric' needs numbers"):
        erblock.dedupe(df, key="k", compare={"d": "numeric"})


def test_mixed_types_are_compared_as_text_and_keyed_as_text(client):
    # documented treatment: object columns mixing types are compared by their text, and
    # keys are text too, so 1, 1.0 and "1" share a block
    df = pd.DataFrame({"k": pd.Series(["1", 1, 1.0, "x"], dtype=object),
                       "name": pd.Series(["12", 12, "ab", None], dtype=object)})
    pairs = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client, sort=True)
    assert pair_list(pairs) == [(0, 1), (0, 2), (1, 2)]
    assert pairs["name_jaro"].tolist()[0] == pytest.approx(1.0)  # "12" vs 12


def test_object_numbers_in_numeric_comparison_unparseable_text_is_missing(client):
    df = pd.DataFrame({"k": list("aaa"), "v": pd.Series(["1", "x", 3], dtype=object)})
    with warnings.catch_warnings():  # said in the report (see test_kinds.quietly)
        warnings.simplefilter("ignore")
        pairs = erblock.dedupe(df, key="k", compare={"v": {"method": "numeric", "scale": 4}},
                               client=client, sort=True)
    assert "1 of the 3 present values of 'v' (33%)" in erblock.RunReport.of(
        pairs).settings["unreadable"]["v_numeric"]
    sims = dict(zip(pair_list(pairs), pairs["v_numeric"]))
    assert sims[(0, 2)] == pytest.approx(0.5)
    assert np.isnan(sims[(0, 1)]) and np.isnan(sims[(1, 2)])


@pytest.mark.parametrize("dtype", ["category", "string[pyarrow]", "string[python]",
                                   pd.ArrowDtype(pa.string()), pd.ArrowDtype(pa.large_string()),
                                   object])
def test_string_like_dtypes_give_the_same_result(client, dtype):
    ref = erblock.dedupe(DF.astype(object), key="k", compare={"name": "jaro", "k": "exact"},
                         client=client, sort=True)
    got = erblock.dedupe(DF.astype(dtype), key="k", compare={"name": "jaro", "k": "exact"},
                         client=client, sort=True)
    pd.testing.assert_frame_equal(got, ref)
    mixed = erblock.link(DF.astype(dtype), DF.astype(object), key=prefix("name", 1),
                         compare={"name": "jaro"}, client=client)
    assert set(pair_list(mixed)) == brute_link(DF, DF, [prefix("name", 1)])


# -- keys -------------------------------------------------------------------------------


@pytest.mark.parametrize("null", [None, np.nan, pd.NA, ""])
def test_all_null_key_column_gives_no_pairs_and_counts_every_record(client, null):
    df = pd.DataFrame({"k": pd.Series([null] * 4, dtype=object), "name": list("abcd")})
    pairs = erblock.dedupe(df, key="k", compare=JW, client=client)
    assert len(pairs) == 0
    assert list(pairs.columns) == ["left_id", "right_id", "name_jaro_winkler", "score"]
    assert _records(pairs)["not_blocked"] == 4


def test_nan_none_empty_string_in_keys_and_values(client):
    # keys: None, NaN and "" are all "no key" (not blocked, counted); values: all missing,
    # so their similarity is null and the score is the mean of what is there
    df = pd.DataFrame({
        "k": pd.Series(["x", "x", "x", "x", "x", None, np.nan, ""], dtype=object),
        "name": pd.Series(["ann", None, np.nan, "", "ann", "ann", "ann", "ann"], dtype=object),
        "city": pd.Series(["rome"] * 8, dtype=object),
    })
    pairs = erblock.dedupe(df, key="k", compare={"name": "jaro", "city": "exact"},
                           client=client, sort=True)
    assert set(pair_list(pairs)) == brute_dedupe(df, ["k"])
    assert _records(pairs)["not_blocked"] == 3
    got = pairs.set_index(["left_id", "right_id"])
    assert got.loc[(0, 4), "name_jaro"] == pytest.approx(1.0)
    for missing in (1, 2, 3):  # None, NaN and "" behave the same
        assert np.isnan(got.loc[(0, missing), "name_jaro"])
        assert got.loc[(0, missing), "score"] == pytest.approx(1.0)  # city only
    assert np.isnan(got.loc[(1, 3), "name_jaro"])  # "" vs None: missing, not a match


def test_empty_strings_are_missing_for_exact_too(client):
    df = pd.DataFrame({"k": ["x"] * 3, "name": ["", "", "a"]})
    pairs = erblock.dedupe(df, key="k", compare={"name": "exact"}, client=client, sort=True)
    assert pairs["name_exact"].isna().all()


def _boom(df):
    raise RuntimeError("kaboom")


def test_callable_key_that_raises_fails_before_any_dask_work():
    with pytest.raises(ValueError, match="key function '_boom' raised RuntimeError: kaboom"):
        erblock.dedupe(DF, key=_boom, compare=JW)


def test_callable_key_that_raises_on_dask_input_fails_in_worker_with_the_same_message(client):
    ddf = dd.from_pandas(DF, npartitions=2)
    with pytest.raises(ValueError, match="key function '_boom' raised RuntimeError: kaboom"):
        erblock.dedupe(ddf, key=_boom, compare=JW, client=client)


def _short(df):
    return df["k"].iloc[:2]


@pytest.mark.parametrize("dask_input", [False, True])
def test_key_of_the_wrong_length(client, dask_input):
    df = dd.from_pandas(DF, npartitions=2) if dask_input else DF
    with pytest.raises(ValueError, match=r"key function '_short' returned 2 values for \d records"):
        erblock.dedupe(df, key=_short, compare=JW, client=client)


def test_float_keys_are_canonical_per_value_not_per_partition(client):
    # partition 0 holds only whole numbers, partition 1 also 1987.5: 1987.0 must still meet
    df = pd.DataFrame({"k": [1987.0, 2.0, 1987.0, 1987.5, np.nan], "name": list("abcde")})
    pairs = erblock.dedupe(df, key="k", compare=JW, client=client, npartitions=2)
    assert set(pair_list(pairs)) == {(0, 2)}
    other = pd.DataFrame({"k": pd.Series([1987, "1987", 2.5], dtype=object), "name": list("xyz")})
    link = erblock.link(df, other, key="k", compare=JW, client=client, npartitions=2)
    assert set(pair_list(link)) == {(0, 0), (0, 1), (2, 0), (2, 1)}


def test_key_returning_a_scalar():
    with pytest.raises(TypeError, match="must return a Series .* got str"):
        erblock.dedupe(DF, key=lambda d: "x", compare=JW)


def test_key_function_result_aligned_by_label_or_position(client):
    # a Series with the same labels in another order is aligned by label; one with other
    # labels (e.g. after reset_index) is taken by position
    shuffled = erblock.dedupe(DF, key=lambda d: d["k"].iloc[::-1], compare=JW, client=client)
    positional = erblock.dedupe(DF, key=lambda d: d["k"].reset_index(drop=True), compare=JW,
                                client=client)
    expected = brute_dedupe(DF, ["k"])
    assert set(pair_list(shuffled)) == expected
    assert set(pair_list(positional)) == expected


# -- ids --------------------------------------------------------------------------------


def test_duplicate_index_labels():
    with pytest.raises(ValueError, match=r"df: the index has repeated labels \(e.g. \[0\]\)"):
        erblock.dedupe(DF.set_axis([0, 0, 1, 2, 3]), key="k", compare=JW)


def test_duplicate_index_labels_across_dask_partitions(client):
    ddf = dd.from_pandas(DF.set_axis([0, 1, 2, 0, 1]), npartitions=2, sort=False)
    with pytest.raises(ValueError, match=r"df: record ids are not unique \(2 ids repeat\)"):
        erblock.dedupe(ddf, key="k", compare=JW, client=client)
    # ids of one text in two types collide too, and the message says so
    mixed = DF.set_axis(pd.Index([1, "1", 2, "b", "c"], dtype=object))
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(mixed, npartitions=2, sort=False)
    with pytest.raises(ValueError, match=r"record ids are not unique \(1 ids repeat\).*"
                                         r"1 and '1' in one object index count as one"):
        erblock.dedupe(ddf, key="k", compare=JW, client=client)


def test_missing_index_label():
    with pytest.raises(ValueError, match="record ids must not be missing"):
        erblock.dedupe(DF.set_axis([0.0, np.nan, 1.0, 2.0, 3.0]), key="k", compare=JW)


def test_a_missing_id_on_a_dask_frame_is_refused_as_on_pandas(client):
    df = pd.DataFrame({"pid": ["a", "b", None, "d"], "k": ["x"] * 4})
    for strategy in ("blocksplit", "cellblock"):  # the BDM and the sketch profile
        with pytest.raises(ValueError, match=r"df: record ids must not be missing \(1 are\)"):
            erblock.candidates(dd.from_pandas(df, npartitions=2), key="k", id="pid",
                               strategy=strategy, client=client)


def test_bad_id_arguments_name_id_and_what_was_expected(client):
    """id= given a non-text label, a malformed pair, or a second column in a dedupe: a
    clear error naming id= (they crashed with 'int' is not iterable or IndexError, or a
    dedupe ignored the second name)."""
    df = pd.DataFrame({0: [10, 11, 12], "rid": [1, 2, 3], "k": [1, 1, 2]})
    with pytest.raises(TypeError, match=r"id: the id column must be named by text .*got 0 "
                                        r"\(int\)"):
        erblock.candidates(df, key="k", id=0)
    with pytest.raises(ValueError, match=r"id: expected one column name, or for a link a "
                                         r"pair \(left, right\), got \('rid',\)"):
        erblock.candidates(df, df, key="k", id=("rid",))
    with pytest.raises(ValueError, match=r"id: a dedupe has one input, so one id column"):
        erblock.candidates(df, key="k", id=("rid", "no_such_col"))
    assert len(erblock.candidates(df, key="k", id=["rid", None], client=client)) == 1
    assert len(erblock.candidates(df, df, key="k", id=["rid", "rid"], client=client)) == 5


def test_repeated_ids_in_an_id_column_are_named_for_pandas_and_dask(client):
    df = pd.DataFrame({"rid": [1, 2, 2, 3], "k": ["x"] * 4})
    fix = "pass id= a column whose values are unique"
    with pytest.raises(ValueError, match=rf"df: the id column 'rid' has repeated labels "
                                         rf"\(e.g. \[2\]\).*{fix}"):
        erblock.candidates(df, key="k", id="rid")
    with pytest.raises(ValueError, match=rf"df: the id column 'rid' holds repeated values "
                                         rf"\(1 ids repeat.*{fix}"):
        erblock.candidates(dd.from_pandas(df, npartitions=2), key="k", id="rid",
                           client=client)
    named = df.set_index("rid").assign(c=0).set_index("c", append=True)
    with pytest.raises(KeyError, match=r"'rid' is a level of a MultiIndex: make it a column "
                                       r"\(df.reset_index\('rid'\)\) or the index"):
        erblock.candidates(named, key="k", id="rid")


def test_id_may_name_an_index_for_one_side_and_a_column_for_the_other(client):
    """A link whose id is a column in R and the (named) index in S names it once, for
    pandas and Dask; the ids come out as they went in."""
    r = pd.DataFrame({"rid": ["a1", "a2", "a3"], "k": ["x", "y", "x"]})
    s = pd.DataFrame({"rid": ["b1", "b2"], "k": ["x", "y"]}).set_index("rid")
    want = {("a1", "b1"), ("a3", "b1"), ("a2", "b2")}
    for left, right in ((r, s), (dd.from_pandas(r, npartitions=2),
                                 dd.from_pandas(s, npartitions=1))):
        got = erblock.candidates(left, right, key="k", id="rid", client=client)
        assert set(zip(got["left_id"], got["right_id"])) == want
    got = erblock.candidates(s, r, key="k", id="rid", client=client)
    assert set(zip(got["right_id"], got["left_id"])) == want


def test_categorical_ids_dask_does_not_know_come_out_as_they_went_in(client):
    """A categorical id whose categories Dask has not read (a parquet file written from
    pandas with a categorical index) came out NaN on every pair: cast to the meta's
    placeholder category. Ids come out as their values, as a column and as the index,
    scored or not; with known categories they keep the categorical dtype."""
    df = pd.DataFrame({"k": ["a", "a", "b", "b"], "n": ["x", "x", "y", "z"],
                       "pid": pd.Categorical(["p1", "p2", "p3", "p4"])})
    want = {("p1", "p2"), ("p3", "p4")}
    d = dd.from_pandas(df, npartitions=2)
    unknown = d.assign(pid=d.pid.cat.as_unknown())
    for frame in (unknown, unknown.set_index("pid", sort=False)):
        kw = {"id": "pid"} if "pid" in frame.columns else {}
        for got in (erblock.candidates(frame, key="k", client=client, **kw),
                    erblock.dedupe(frame, key="k", compare={"n": "exact"}, client=client,
                                   **kw)):
            assert set(zip(got["left_id"], got["right_id"])) == want
    known = erblock.dedupe(d, key="k", compare={"n": "exact"}, id="pid", client=client)
    assert isinstance(known["left_id"].dtype, pd.CategoricalDtype)
    assert set(zip(known["left_id"], known["right_id"])) == want
    # categories of numbers stay numbers (Dask's placeholder category is text)
    numbers = dd.from_pandas(df.assign(pid=pd.Categorical([11, 12, 13, 14])), npartitions=2)
    numbers = numbers.assign(pid=numbers.pid.cat.as_unknown())
    got = erblock.dedupe(numbers, key="k", compare={"n": "exact"}, id="pid", client=client)
    assert sorted(zip(got["left_id"], got["right_id"])) == [(11, 12), (13, 14)]
    assert all(type(i) is int for i in got["left_id"])


def test_a_multiindex_is_refused_with_what_to_do():
    df = DF.set_axis(pd.MultiIndex.from_tuples([(1, "a"), (1, "b"), (2, "a"), (2, "b"),
                                                (3, "a")]))
    with pytest.raises(ValueError, match=r"df: the index is a MultiIndex.*to_flat_index"):
        erblock.dedupe(df, key="k", compare=JW)


def test_column_labels_that_are_not_strings_are_refused_before_any_work():
    df = pd.DataFrame({0: ["ann", "anne", "bob"], 1: ["x", "x", "x"]})
    with pytest.raises(TypeError, match=r"key column '1' of df is labelled 1 \(int\).*astype\(str\)"):
        erblock.candidates(df, key="1")
    with pytest.raises(TypeError, match=r"compare column '0' of df is labelled 0 \(int\)"):
        erblock.dedupe(df.set_axis([0, "k"], axis=1), key="k", compare={"0": "name"})


def test_ids_parquet_cannot_hold_are_refused_before_writing(client, tmp_path):
    df = pd.DataFrame({"k": ["x"] * 4, "nm": ["ann", "anne", "bob", "rob"]},
                      index=pd.Index([1, "a", 2, "b"], dtype=object))
    with pytest.raises(ValueError, match=r"df: the record ids \(its index\) cannot be written "
                       r"to parquet \(output=\).*astype\(str\)"):
        erblock.dedupe(df, key="k", compare={"nm": "name"}, output=str(tmp_path / "out"),
                       client=client)
    assert not (tmp_path / "out").exists()
    pairs = erblock.dedupe(df, key="k", compare={"nm": "name"}, client=client)  # in memory
    assert set(pairs["left_id"]) | set(pairs["right_id"]) == {1, "a", 2, "b"}


def test_link_with_the_same_labels_in_r_and_s_is_fine(client):
    # documented: left_id is a label of df_r, right_id of df_s; they may coincide
    pairs = erblock.link(DF, DF, key="k", compare=JW, client=client)
    assert set(pair_list(pairs)) == brute_link(DF, DF, ["k"])
    assert (0, 0) in set(pair_list(pairs))


def test_duplicate_ids_inside_one_link_source_are_refused():
    with pytest.raises(ValueError, match="df_s: the index has repeated labels"):
        erblock.link(DF, DF.set_axis([9, 9, 8, 7, 6]), key="k", compare=JW)


# -- sizes ------------------------------------------------------------------------------


def test_empty_inputs(client):
    empty = DF.iloc[:0]
    for pairs in (erblock.dedupe(empty, key="k", compare=JW, client=client),
                  erblock.link(empty, DF, key="k", compare=JW, client=client),
                  erblock.link(DF, empty, key="k", compare=JW, client=client),
                  erblock.dedupe(dd.from_pandas(empty, npartitions=1), key="k", compare=JW,
                                 client=client)):
        assert len(pairs) == 0
        assert list(pairs.columns) == ["left_id", "right_id", "name_jaro_winkler", "score"]


def test_a_model_with_no_candidate_pairs_to_fit_says_so(client, tmp_path, capsys):
    """No pair to fit: the run warns that the model stays unfitted (it said nothing, and
    the command line saved the unfitted model as if it were one)."""
    from erblock.cli import main
    from erblock.matchers.scoring import ModelWarning

    alone = pd.DataFrame({"name": ["Anna", "Bob", "Cleo"], "k": ["a", "b", "c"]})
    with pytest.warns(ModelWarning, match="no candidate pairs.*stays unfitted"):
        pairs = erblock.dedupe(alone, key="k", compare={"name": "name"}, scoring="em",
                               client=client)
    assert len(pairs) == 0
    alone.to_csv(tmp_path / "a.csv", index=False)
    with pytest.warns(ModelWarning):
        assert main(["dedupe", str(tmp_path / "a.csv"), "--key", "k", "--compare",
                     "name:name", "--scoring", "em", "--save-model",
                     str(tmp_path / "m.json")]) == 0
    assert not (tmp_path / "m.json").exists()
    assert "model not saved: it is not fitted" in capsys.readouterr().err


def test_one_record(client):
    pairs = erblock.dedupe(DF.iloc[:1], key="k", compare=JW, client=client, n_tasks=3)
    assert len(pairs) == 0
    assert _records(pairs)["records_r"] == 1
    link = erblock.link(DF.iloc[:1], DF.iloc[:1], key="k", compare=JW, client=client)
    assert pair_list(link) == [(0, 0)]


def test_n_tasks_larger_than_the_number_of_pairs(client):
    pairs = erblock.dedupe(DF, key="k", compare=JW, client=client, n_tasks=60,
                           strategy="blocksplit")
    rep = RunReport.of(pairs)
    assert set(pair_list(pairs)) == brute_dedupe(DF, ["k"])
    assert rep.n_tasks == 60 and rep.comparisons == 2
    assert (rep.task_comparisons > 0).sum() == 2


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), float("inf"), "0.5", True])
def test_thresholds_outside_zero_one(bad):
    with pytest.raises(ValueError, match=r"threshold must be a number in \[0, 1\]"):
        erblock.dedupe(DF, key="k", compare=JW, threshold=bad)


@pytest.mark.parametrize("edge, kept", [(0, 3), (0.0, 3), (1, 1), (1.0, 1),
                                        (np.float64(0.5), 3)])
def test_thresholds_on_the_edges_are_accepted(client, edge, kept):
    # the two "cy" records score exactly 1: threshold 1 keeps that pair and only it
    df = pd.concat([DF, pd.DataFrame({"k": ["c"], "name": ["cy"]})], ignore_index=True)
    pairs = erblock.dedupe(df, key="k", compare=JW, threshold=edge, client=client)
    assert len(pairs) == kept and (pairs["score"] >= float(edge)).all()


def test_numpy_numbers_are_numbers(client):
    """A threshold read from the pairs is np.float32, a count np.int64: both are taken
    as the Python numbers (and stored as those: specs and reports stay JSON)."""
    pairs = erblock.dedupe(DF, key="k", compare=JW, client=client)
    top = pairs["score"].max()
    assert isinstance(top, np.float32)
    kept = erblock.dedupe(DF, key="k", compare=JW, threshold=top, n_tasks=np.int64(2),
                          npartitions=np.int64(2), client=client)
    assert len(kept) == int((pairs["score"] >= float(top)).sum())
    rep = erblock.RunReport.of(kept)
    assert type(rep.settings["threshold"]) is float
    json.dumps(rep.to_dict())
    weighted = erblock.Comparison("name", "jaro_winkler", weight=np.float32(2.0))
    assert type(weighted.weight) is float and weighted.to_dict()["weight"] == 2.0
    # np.longdouble's .item() is still NumPy's: the weight must come out a float anyway
    long = erblock.Comparison("name", "jaro_winkler", weight=np.longdouble(2))
    assert type(long.weight) is float and json.loads(json.dumps(long.to_dict()))["weight"] == 2.0
    num = erblock.Comparison("x", "numeric", options={"scale": np.int64(5)})
    json.dumps(num.to_dict())
    model = erblock.FellegiSunter(u_pairs=np.int64(1000), max_iter=np.int64(50))
    assert type(model.u_pairs) is int and type(model.max_iter) is int
    plan = erblock.plan(DF, key="k", n_tasks=np.int64(3))
    assert plan.n_tasks == 3
    for bad in (np.bool_(True), np.float64(2.5)):
        with pytest.raises(ValueError, match=r"n_tasks must be an integer >= 1"):
            erblock.dedupe(DF, key="k", compare=JW, n_tasks=bad)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_bad_n_tasks(bad):
    with pytest.raises(ValueError, match=r"n_tasks must be an integer >= 1"):
        erblock.dedupe(DF, key="k", compare=JW, n_tasks=bad)


# -- text content -----------------------------------------------------------------------


def test_unicode_and_emoji(client):
    from rapidfuzz.distance import JaroWinkler

    df = pd.DataFrame({"k": ["😀x", "😀y", "Zoë", "Zoe\u0308", "ZOË", "中文"],
                       "name": ["👍🏽 ok", "👍🏽 okay", "Zoë", "Zoe\u0308", "zoë", "中文字"]})
    key = prefix("k", 1)  # normalised: accents folded, lower case; emoji kept
    pairs = erblock.dedupe(df, key=key, compare=JW, client=client, sort=True)
    assert set(pair_list(pairs)) == brute_dedupe(df, [key]) == {(0, 1), (2, 3), (2, 4), (3, 4)}
    got = pairs.set_index(["left_id", "right_id"])["name_jaro_winkler"]
    assert got[(0, 1)] == pytest.approx(JaroWinkler.normalized_similarity("👍🏽 ok", "👍🏽 okay"),
                                        abs=1e-6)
    # values are compared as given (not normalised): composed ë vs e + combining mark differ
    assert got[(2, 3)] < 1.0


def test_very_long_strings(client):
    from rapidfuzz.distance import Levenshtein

    long = "ab" * 5000  # 10 000 characters
    df = pd.DataFrame({"k": ["x"] * 3, "name": [long, long[:-1] + "c", "z" * 10_000]})
    # strategy fixed: auto's cost-model calibration replicates sampled values into a
    # ~30 MB calibration frame here (Dask warns "Sending large graph"), see the report
    pairs = erblock.dedupe(df, key="k", compare={"name": "levenshtein"}, client=client,
                           sort=True, strategy="blocksplit")
    got = pairs.set_index(["left_id", "right_id"])["name_levenshtein"]
    assert got[(0, 1)] == pytest.approx(Levenshtein.normalized_similarity(long, long[:-1] + "c"))
    assert got[(0, 2)] == pytest.approx(0.0)
    long_keys = erblock.dedupe(df.assign(k=df["name"]), key="k", compare=JW, client=client,
                               strategy="blocksplit")
    assert len(long_keys) == 0  # three different 10 000-character keys


# -- Dask input -------------------------------------------------------------------------


def test_dask_frame_with_unknown_divisions(client):
    ddf = dd.from_pandas(DF, npartitions=3, sort=False).clear_divisions()
    assert not ddf.known_divisions
    pairs = erblock.dedupe(ddf, key="k", compare=JW, client=client)
    assert set(pair_list(pairs)) == brute_dedupe(DF, ["k"])
    link = erblock.link(ddf, DF, key="k", compare=JW, client=client)
    assert set(pair_list(link)) == brute_link(DF, DF, ["k"])


# -- options ----------------------------------------------------------------------------


def test_unknown_option():
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\): \['npartition'\]"):
        erblock.dedupe(DF, key="k", compare=JW, npartition=3)


def test_client_of_the_wrong_type():
    with pytest.raises(TypeError, match="client must be a distributed.Client, a scheduler address"):
        erblock.dedupe(DF, key="k", compare=JW, client=42)


def test_unreachable_scheduler_address():
    from procs import free_port

    from erblock.engine.cluster import get_client

    with pytest.raises(ConnectionError, match="could not connect to the Dask scheduler"):
        get_client(f"tcp://127.0.0.1:{free_port()}", timeout="1s")


def test_tls_address_without_security():
    with pytest.raises(ValueError, match=r"is a TLS address; pass a client .*security=erblock.engine.cluster.make_security"):
        erblock.dedupe(DF, key="k", compare=JW, client="tls://127.0.0.1:1")


def test_numbers_in_one_source_and_text_in_the_other(client):
    """exact never finds 2138 equal to "2138": refused, naming the column and both
    sources; postcode cleans both to text but numbers lost their leading zeros: warned,
    and codes without one still agree. Object and category columns of strings count as
    text (a Dask object column's meta cannot tell, and is not judged)."""
    r = pd.DataFrame({"k": ["x", "x"], "code": [2138, 1234]})
    s = pd.DataFrame({"k": ["x", "x"], "code": pd.Series(["02138", "1234"], dtype="str")})
    with pytest.raises(ValueError, match=r"column 'code' is numeric in df_r but text in df_s"
                       r".*'exact' never finds a number equal"):
        erblock.link(r, s, key="k", compare={"code": "exact"}, client=client)
    with pytest.warns(UserWarning, match=r"column 'code' is numeric in df_r but text in "
                      r"df_s: codes read as numbers lose their leading zeros") as caught:
        pairs = erblock.link(r, s, key="k", compare={"code": "postcode"}, client=client)
    assert caught[0].filename == __file__  # points at the caller's line
    sims = dict(zip(pair_list(pairs), pairs["code_postcode"]))
    assert sims[(1, 1)] == 1.0 and sims[(0, 0)] < 1.0
    # renamed columns are named both; object and category text are text too
    with pytest.raises(ValueError, match=r"column 'code' of df_r is numeric but 'zip' of df_s is text"):
        erblock.link(r, s.rename(columns={"code": "zip"}), key="k", client=client,
                     compare=[erblock.comparison("code", "exact", right_column="zip")])
    for dtype in (object, "category"):
        with pytest.raises(ValueError, match=r"column 'code' is numeric in df_r but text"):
            erblock.link(r, s.astype({"code": dtype}), key="k", compare={"code": "exact"},
                         client=client)
    mixed = s.assign(code=pd.Series(["02138", 1234], dtype=object))  # not all text: not judged
    pairs = erblock.link(r, mixed, key="k", compare={"code": "exact"}, client=client)
    assert len(pairs) == 4
    # a column that is all missing (pandas reads an empty CSV column as float NaN) holds
    # no number: compared (null similarity), neither refused nor warned about
    empty = r.assign(code=np.nan)
    for kind in ("exact", "postcode", "name", "text"):  # text kinds too: missing, not numbers
        pairs = erblock.link(empty, s, key="k", compare={"code": kind}, client=client)
        assert len(pairs) == 4 and pairs[f"code_{kind}"].isna().all()


def test_a_malformed_model_file_is_named(tmp_path):
    path = tmp_path / "model.json"
    path.write_text('{"kind": "fellegi_sunter", ')
    with pytest.raises(ValueError, match=r"load_model: .*model\.json is not a saved model's "
                                         r"JSON \(.*line 1"):
        erblock.load_model(path)
    with pytest.raises(ValueError, match=r"load_model: the JSON text is not"):
        erblock.load_model('{"kind": ')


def test_an_id_naming_both_a_column_and_a_different_index_is_refused(client):
    df = pd.DataFrame({"pid": ["a", "b", "c"], "k": ["x", "x", "x"]},
                      index=pd.Index(["p", "q", "r"], name="pid"))
    with pytest.raises(ValueError, match=r"df: id='pid' names both a column and the index, "
                                         r"and they hold different values; rename one"):
        erblock.candidates(df, key="k", id="pid")
    # set_index(..., drop=False): the same values, nothing to choose
    same = df.set_index("pid", drop=False)
    got = erblock.candidates(same, key="k", id="pid", client=client)
    assert set(zip(got["left_id"], got["right_id"])) == {("a", "b"), ("a", "c"), ("b", "c")}
