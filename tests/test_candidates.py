"""Candidate pairs without comparing (``erblock.candidates``, ``--candidates``).

Against the brute force (tests/oracle.py): for every strategy, link and dedupe, with a
single-valued, a multi-valued and a sorted-neighbourhood pass, the candidates are the
pairs the keys imply, each once, and ``match_key`` is the first pass that puts the pair
in one block. Written output (streamed and sorted) holds the same pairs; ids keep their
dtype; options that compare or score are refused by name.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list
from strategies import cluster_settings
from test_multi_keys import KEYS, frames

import erblock
from erblock.balancing import STRATEGIES
from erblock.blocking import tokens
from erblock.cli import main
from erblock.report import RunReport

MIXED = KEYS["single, tokens, sorted neighbourhood"]
COLUMNS = ["left_id", "right_id", "match_key"]


def _first_pass(brute, frames_, keys) -> dict[tuple, int]:
    """Each pair of the oracle's blocking with the first pass that finds it."""
    first: dict[tuple, int] = {}
    for p in range(len(keys)):
        for pair in brute(*frames_, [keys[p]]):
            first.setdefault(pair, p)
    return first


def _check(got: pd.DataFrame, expected: dict[tuple, int]) -> None:
    assert list(got.columns) == COLUMNS
    assert got["match_key"].dtype == "int8"
    pairs = pair_list(got)
    assert len(pairs) == len(set(pairs)), "a candidate pair appeared twice"
    assert dict(zip(pairs, got["match_key"].tolist())) == expected
    assert RunReport.of(got).comparisons == len(expected)


@pytest.mark.parametrize("strategy", ["auto", *sorted(STRATEGIES)])
@cluster_settings(2)
@given(df=frames(), df_s=frames(), m=st.integers(1, 4), r=st.integers(1, 9))
def test_candidates_are_the_brute_force_pairs_with_their_first_pass(client, strategy, df,
                                                                      df_s, m, r):
    kw = dict(key=MIXED, strategy=strategy, n_tasks=r, client=client, npartitions=m,
              cost_model="default")
    _check(erblock.candidates(df, **kw), _first_pass(brute_dedupe, [df], MIXED))
    got = erblock.candidates(df, df_s, **kw)
    _check(got, _first_pass(brute_link, [df, df_s], MIXED))


def test_candidates_equal_the_pairs_a_link_compares(client):
    left = pd.DataFrame({"t": ["canon eos zoom", "the camera", "digital zoom", None, "eos"]},
                        index=pd.Index(["a1", "a2", "a3", "a4", "a5"], name="sku"))
    right = pd.DataFrame({"t": ["eos the", "zoom", "", "camera digital", "x"]},
                         index=pd.Index([10, 20, 30, 40, 50], name="code"))
    got = erblock.candidates(left, right, key=tokens("t"), client=client, sort=True)
    linked = erblock.link(left, right, key=tokens("t"), compare={"t": "jaro_winkler"},
                          client=client, sort=True)
    assert pair_list(got) == pair_list(linked) and len(got) == 7
    assert got["left_id"].tolist()[:2] == ["a1", "a1"]
    assert got["right_id"].dtype == right.index.dtype  # ids come out as they went in


@pytest.mark.parametrize("sort", [False, True])
def test_written_candidates_hold_the_same_pairs(client, tmp_path, sort):
    df = pd.DataFrame({"t": ["a b", "b c", "c d", "x", None, "a"]},
                      index=pd.Index([f"r{i}" for i in range(6)], name="rid"))
    memory = erblock.candidates(df, key=[tokens("t"), "t"], client=client)
    lazy = erblock.candidates(df, key=[tokens("t"), "t"], client=client,
                              output=str(tmp_path / "out"), sort=sort)
    with pytest.raises(TypeError, match=r"a Dask frame of pairs carries no report: read it "
                                        r"from the output directory"):
        RunReport.of(lazy)
    with pytest.raises(TypeError, match="got int"):
        RunReport.of(3)
    written = lazy.compute()
    assert list(written.columns) == COLUMNS
    assert sorted(pair_list(written)) == sorted(pair_list(memory))
    assert sorted(zip(pair_list(written), written["match_key"])) == sorted(
        zip(pair_list(memory), memory["match_key"]))
    assert RunReport.of(str(tmp_path / "out")).pairs == len(memory) == 3


def test_no_candidates_gives_the_columns_and_types(client, tmp_path):
    df = pd.DataFrame({"t": ["a", "b", None]}, index=[3, 1, 2])
    got = erblock.candidates(df, key="t", client=client)
    assert list(got.columns) == COLUMNS and len(got) == 0
    assert got["left_id"].dtype == df.index.dtype and got["match_key"].dtype == "int8"
    written = erblock.candidates(df, key="t", client=client, output=str(tmp_path / "o"))
    assert list(written.compute().columns) == COLUMNS


@pytest.mark.parametrize(("option", "value"), [("compare", {"t": "exact"}),
                                               ("scoring", "em"), ("threshold", 0.5),
                                               ("cardinality", "1:1")])
def test_candidates_refuse_what_compares_or_scores(option, value):
    df = pd.DataFrame({"t": ["a", "a"]})
    with pytest.raises(ValueError, match=f"no {option}="):
        erblock.candidates(df, df, key="t", **{option: value})


def test_a_run_without_compare_points_to_candidates():
    df = pd.DataFrame({"t": ["a", "a"]})
    with pytest.raises(ValueError, match="erblock.candidates"):
        erblock.dedupe(df, key="t")


def test_cli_writes_candidates_and_refuses_comparing_flags(tmp_path, capsys):
    src = tmp_path / "in.parquet"
    pd.DataFrame({"t": ["a b", "b c", "c d", "x"]},
                 index=pd.Index(["r1", "r2", "r3", "r4"], name="id")).to_parquet(src)
    out = tmp_path / "pairs"
    assert main(["dedupe", str(src), "--key", "tokens:t", "--candidates", "-o", str(out),
                 "--quiet"]) == 0
    got = pd.read_parquet(out)
    assert list(got.columns) == COLUMNS
    assert sorted(pair_list(got)) == [("r1", "r2"), ("r2", "r3")]
    assert main(["dedupe", str(src), "--key", "t", "--candidates", "--compare",
                 "t:exact", "--threshold", "0.5"]) == 2
    assert ("--candidates compares nothing, so --compare, --threshold cannot go with it"
            in capsys.readouterr().err)
    assert main(["dedupe", str(src), "--key", "t"]) == 2
    assert "--compare is required" in capsys.readouterr().err
