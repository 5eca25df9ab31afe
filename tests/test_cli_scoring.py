"""The batch jobs of the command line: model scoring, saved models, entity ids, and record
ids that survive the trip through CSV and parquet files."""

from __future__ import annotations

import json
import os

import dask.dataframe as dd
import pandas as pd
import pytest
from cli_helpers import run_json as _run
from oracle import brute_dedupe, pair_list

import erblock
from erblock.blocking import Phonetic
from erblock.cli import main
from erblock.datasets import generate

COMPARE = ["--compare", "first_name:name", "--compare", "surname:name", "--compare", "dob:date"]
KEY = ["--key", "soundex:surname"]


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    df, *_ = generate(600, kind="person", seed=3)
    df = df.drop(columns=["block_key", "entity_id"])
    df.index = pd.Index([f"p{i:04d}" for i in range(len(df))], name="pid")
    return df


@pytest.mark.parametrize("layout", ["pandas_index", "dask_directory", "csv_id_column",
                                    "parquet_no_index", "categorical_index"])
def test_record_ids_survive_files(people, tmp_path, layout, capsys):
    small = people.iloc[:80]
    if layout == "pandas_index":  # df.to_parquet() keeps the named index
        path, extra = tmp_path / "in.parquet", []
        small.to_parquet(path)
        ids = small.index
    elif layout == "dask_directory":
        path, extra = tmp_path / "dir", []
        dd.from_pandas(small, npartitions=3).to_parquet(path)
        ids = small.index
    elif layout == "csv_id_column":
        path, extra = tmp_path / "in.csv", ["--id", "pid"]
        small.to_csv(path)
        ids = small.index
    elif layout == "categorical_index":  # Dask reads its categories as unknown
        path, extra = tmp_path / "in.parquet", []
        small.set_axis(pd.CategoricalIndex(small.index, name="pid")).to_parquet(path)
        ids = small.index
    else:  # no index stored: records are numbered in input order
        path, extra = tmp_path / "in.parquet", []
        small.reset_index(drop=True).to_parquet(path)
        ids = pd.RangeIndex(len(small))
    out = tmp_path / "out"
    _run(["dedupe", str(path), *KEY, *COMPARE, *extra, "-o", str(out), "--quiet"], capsys)
    pairs = pd.read_parquet(out)
    expected = small.set_axis(ids)
    assert set(pair_list(pairs)) == brute_dedupe(expected, [Phonetic("surname", "soundex")])


def test_bundled_dblp_acm_written_by_pandas_keeps_its_ids(tmp_path, capsys):
    from erblock.datasets import load_dblp_acm

    dblp, acm, truth = load_dblp_acm()
    dblp.to_parquet(tmp_path / "dblp.parquet")
    acm.to_parquet(tmp_path / "acm.parquet")
    out = tmp_path / "pairs"
    _run(["link", str(tmp_path / "dblp.parquet"), str(tmp_path / "acm.parquet"),
          "--key", "year+token:title", "--compare", "title:text", "--compare",
          "authors:name", "--compare", "venue:text", "--scoring", "em", "-o", str(out),
          "--quiet"], capsys)
    pairs = pd.read_parquet(out)
    q = erblock.evaluate(pairs[pairs["match_probability"] >= 0.5], truth)
    assert q["f1"] > 0.8, q


def test_em_model_saved_and_reused_scores_the_same(people, tmp_path, capsys):
    path = tmp_path / "people.parquet"
    people.to_parquet(path)
    model = tmp_path / "model.json"
    _run(["dedupe", str(path), *KEY, *COMPARE, "--scoring", "em", "--save-model", str(model),
          "-o", str(tmp_path / "a"), "--quiet"], capsys)
    saved = erblock.load_model(model)
    assert saved.fitted and saved.kind == "fellegi_sunter"
    _run(["dedupe", str(path), *KEY, *COMPARE, "--model", str(model),
          "-o", str(tmp_path / "b"), "--quiet"], capsys)
    a, b = (pd.read_parquet(tmp_path / d).sort_values(["left_id", "right_id"])
            .reset_index(drop=True) for d in ("a", "b"))
    pd.testing.assert_series_equal(a["match_probability"], b["match_probability"])


def test_dedupe_cluster_writes_pairs_and_an_entity_per_record(people, tmp_path, capsys):
    path = tmp_path / "people.parquet"
    people.to_parquet(path)
    out = tmp_path / "out"
    rep = tmp_path / "run.json"
    res = _run(["dedupe", str(path), *KEY, *COMPARE, "--scoring", "em", "--cluster", "0.9",
                "-o", str(out), "--report", str(rep), "--quiet"], capsys)
    # the reports name the final directory, not the staging one the run wrote into
    final = os.path.abspath(out / "pairs")
    assert erblock.read_report(str(rep)).output == final == res["output"]
    assert erblock.read_report(str(out / "pairs")).output == final
    # the run's directory holds pairs/ and entities/: its report is the pairs'
    assert erblock.read_report(str(out)).output == final
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == final
    pairs = pd.read_parquet(out / "pairs")
    entities = pd.read_parquet(out / "entities").set_index("id")["entity_id"]
    expected = erblock.cluster(pairs, 0.9, ids=people.index, score_column="match_probability")
    assert entities.sort_index().to_dict() == expected.sort_index().to_dict()
    assert res["entities"]["records"] == len(people)
    assert res["entities"]["entities"] == expected.nunique()
    # the same from the pairs afterwards, with the cluster command
    ent2 = tmp_path / "ent2"
    res2 = _run(["cluster", str(out / "pairs"), "--threshold", "0.9", "--records", str(path),
                 "-o", str(ent2), "--quiet"], capsys)
    again = pd.read_parquet(ent2).set_index("id")["entity_id"]
    assert again.sort_index().to_dict() == expected.sort_index().to_dict()
    assert res2["score_column"] == "match_probability"


def test_cluster_command_without_records_covers_ids_seen_in_pairs(tmp_path, capsys):
    pairs = pd.DataFrame({"left_id": ["a", "b", "x"], "right_id": ["b", "c", "y"],
                          "score": [0.9, 0.95, 0.2]})
    pairs.to_parquet(tmp_path / "pairs.parquet", index=False)
    _run(["cluster", str(tmp_path / "pairs.parquet"), "--threshold", "0.5", "-o",
          str(tmp_path / "e"), "--quiet"], capsys)
    got = pd.read_parquet(tmp_path / "e").set_index("id")["entity_id"].to_dict()
    assert got == {"a": "a", "b": "a", "c": "a", "x": "x", "y": "y"}
    # a threshold in bits on match weights (it was refused as outside [0, 1])
    pairs.assign(match_weight=[6.0, 2.0, -3.0]).to_parquet(tmp_path / "w.parquet",
                                                           index=False)
    _run(["cluster", str(tmp_path / "w.parquet"), "--score-column", "match_weight",
          "--threshold", "5", "-o", str(tmp_path / "ew"), "--quiet"], capsys)
    got = pd.read_parquet(tmp_path / "ew").set_index("id")["entity_id"].to_dict()
    assert got == {"a": "a", "b": "a", "c": "c", "x": "x", "y": "y"}
    assert main(["cluster", str(tmp_path / "pairs.parquet"), "--threshold", "5", "-o",
                 str(tmp_path / "e5"), "--quiet"]) == 2
    assert ("--threshold: score lies in [0, 1], so 5.0 would keep no pair or every pair; "
            "give a threshold in [0, 1] (or --score-column match_weight") in \
        capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--save-model", "m.json"], "--save-model saves the fitted model"),
    (["--scoring", "em", "--model", "m.json"], "--model scores with a saved model"),
    (["--cluster", "1.5"], "--cluster must be in [0, 1]"),
    (["--model", "missing.json"], "--model 'missing.json'"),
])
def test_bad_scoring_arguments_exit_2(people, tmp_path, argv, message, capsys):
    path = tmp_path / "p.parquet"
    people.iloc[:20].to_parquet(path)
    code = main(["dedupe", str(path), *KEY, *COMPARE, *argv, "--quiet"])
    assert code == 2
    assert message in capsys.readouterr().err
