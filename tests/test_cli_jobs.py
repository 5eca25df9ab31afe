"""Batch jobs as a data engineer runs them: entity ids that stay exact, cluster steps that
refuse what they cannot do, saved models checked when loaded, paths checked before the
run, warnings that reach the report (found by a probe of the command line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import dask.dataframe as dd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from cli_helpers import run_json as _json

import erblock
from erblock.cli import main
from erblock.datasets import generate
from erblock.matchers.scoring import ModelWarning

COMPARE = ["--compare", "first_name:name", "--compare", "surname:name", "--compare", "dob:date"]
KEY = ["--key", "soundex:surname"]


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    df, *_ = generate(400, kind="person", seed=5)
    return df.drop(columns=["block_key", "entity_id"])


def _fails(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv + ["--quiet"]) == 2
    return capsys.readouterr().err


def _components(pairs: pd.DataFrame, ids, threshold: float) -> dict:
    g = nx.Graph()
    g.add_nodes_from(ids)
    kept = pairs[pairs["match_probability"] >= threshold]
    g.add_edges_from(zip(kept["left_id"], kept["right_id"]))
    return {x: min(c) for c in nx.connected_components(g) for x in c}


def test_entity_ids_of_64_bit_record_ids_are_exact(people, tmp_path, capsys):
    big = people.copy()
    v = np.int64(2**62) - np.arange(len(big), dtype=np.int64) * 7
    v[1::2] *= -1
    big.index = pd.Index(v, name="id")
    path = tmp_path / "big.parquet"
    big.to_parquet(path)
    out = tmp_path / "out"
    _json(["dedupe", str(path), *KEY, *COMPARE, "--scoring", "em", "--cluster", "0.9", "-o",
           str(out), "--quiet"], capsys)
    pairs = pd.read_parquet(out / "pairs")
    got = pd.read_parquet(out / "entities").set_index("id")["entity_id"]
    assert got.dtype == np.int64 and set(got.index) == set(v)
    assert got.to_dict() == _components(pairs, v, 0.9)
    # the cluster command over the written pairs, default threshold: the model's 0.5
    res = _json(["cluster", str(out / "pairs"), "--records", str(path), "-o",
                 str(tmp_path / "e"), "--quiet"], capsys)
    assert res["threshold"] == 0.5 and res["score_column"] == "match_probability"
    again = pd.read_parquet(tmp_path / "e").set_index("id")["entity_id"]
    assert again.to_dict() == _components(pairs, v, 0.5)


def test_cluster_refuses_link_pairs_and_records_of_other_ids(people, tmp_path, capsys):
    r, s = people.iloc[:200], people.iloc[200:]
    r.to_parquet(tmp_path / "r.parquet")
    s.to_parquet(tmp_path / "s.parquet")
    _json(["link", str(tmp_path / "r.parquet"), str(tmp_path / "s.parquet"), *KEY, *COMPARE,
           "--scoring", "em", "-o", str(tmp_path / "l"), "--quiet"], capsys)
    err = _fails(["cluster", str(tmp_path / "l"), "-o", str(tmp_path / "e")], capsys)
    assert "are a link's" in err and "--cardinality 1:1" in err
    # a dedupe run on --id pid, clustered with records read without --id
    csv = tmp_path / "p.csv"
    people.assign(pid=[f"p{i}" for i in range(len(people))]).to_csv(csv, index=False)
    _json(["dedupe", str(csv), "--id", "pid", *KEY, *COMPARE, "--scoring", "em", "-o",
           str(tmp_path / "d"), "--quiet"], capsys)
    err = _fails(["cluster", str(tmp_path / "d"), "--records", str(csv), "-o",
                  str(tmp_path / "e2")], capsys)
    assert "its record ids are numbers (row numbers: no --id), the ids of the pairs" in err
    assert "give the --id the run used" in err


def test_the_api_clusters_a_model_s_pairs_on_its_decision_column(people, client, tmp_path):
    pairs = erblock.dedupe(people, key=erblock.soundex("surname"), client=client,
                           compare={"first_name": "name", "surname": "name", "dob": "date"},
                           scoring="em")
    got = erblock.cluster(pairs, 0.9, ids=people.index)
    assert got.to_dict() == _components(pairs, people.index, 0.9)
    # the mean similarity is another column: at 0.5 it joins far more records
    assert erblock.cluster(pairs, 0.5, ids=people.index).to_dict() == \
        _components(pairs, people.index, 0.5)
    assert not erblock.cluster(pairs, 0.5, ids=people.index, score_column="score").equals(
        erblock.cluster(pairs, 0.5, ids=people.index))
    # no threshold on a model's pairs: its decision, as erblock cluster does (it joined
    # the records of every pair, however unlikely)
    at_decision = _components(pairs, people.index, 0.5)
    assert erblock.cluster(pairs, ids=people.index).to_dict() == at_decision
    assert erblock.cluster(pairs, ids=people.index).nunique() > 1
    # the same run written with output=, clustered on the cluster: its report says so
    from erblock.engine.clustering import cluster_dask

    erblock.dedupe(people, key=erblock.soundex("surname"), client=client, scoring="em",
                   compare={"first_name": "name", "surname": "name", "dob": "date"},
                   output=str(tmp_path / "o"))
    lazy = client.compute(cluster_dask(dd.read_parquet(tmp_path / "o"), client=client),
                          sync=True)
    assert lazy.to_dict() == {i: e for i, e in at_decision.items() if i in lazy.index}
    assert lazy.nunique() < len(lazy)  # some joined, not all in one
    # a run kept at its own threshold is decided; a selection the decision would shrink
    # is cut there, with a warning naming the way to keep it
    low = 0.001
    at_low = _components(pairs, people.index, low)
    assert at_low != at_decision  # so the checks below can tell the two apart
    cut = erblock.dedupe(people, key=erblock.soundex("surname"), client=client, scoring="em",
                         compare={"first_name": "name", "surname": "name", "dob": "date"},
                         threshold=low)
    assert erblock.cluster(cut, ids=people.index).to_dict() == at_low
    mine = pairs[pairs["match_probability"] >= low]
    with pytest.warns(UserWarning, match=r"cut at the model's decision, match_probability "
                                         r">= 0.5, which leaves out \d+ of them"):
        assert erblock.cluster(mine, ids=people.index).to_dict() == at_decision
    assert erblock.cluster(mine, low, ids=people.index).to_dict() == at_low
    # pairs of a Dask frame made from pandas keep their report in the meta
    lazy = client.compute(cluster_dask(dd.from_pandas(cut, npartitions=2), client=client),
                          sync=True)
    assert lazy.to_dict() == {i: e for i, e in at_low.items() if i in lazy.index}


@pytest.fixture(scope="module")
def fitted(people, tmp_path_factory):
    """The people as parquet and the model a CLI run fitted on them (saved as JSON)."""
    folder = tmp_path_factory.mktemp("fitted")
    path, model = folder / "p.parquet", folder / "m.json"
    people.to_parquet(path)
    assert main(["dedupe", str(path), *KEY, *COMPARE, "--scoring", "em", "--save-model",
                 str(model), "--quiet"]) == 0
    return path, model


def test_saved_models_are_checked_when_loaded(fitted, tmp_path, capsys):
    path, model = fitted
    saved = json.loads(model.read_text())
    cases = {
        "unfitted": ({k: v for k, v in saved.items() if k != "params"}, "is not a fitted model"),
        "short_m": ({**saved, "params": {**saved["params"],
                                         "m": [saved["params"]["m"][0][:-1]]
                                         + saved["params"]["m"][1:]}},
                    "params.m of 'first_name_name' must be"),
        "lambda": ({**saved, "params": {**saved["params"], "lambda": None}},
                   "λ (params.lambda) must be in (0, 1)"),
        "list": ([1, 2], "expected a saved model (a JSON object), got list"),
    }
    for name, (content, message) in cases.items():
        bad = tmp_path / f"{name}.json"
        bad.write_text(json.dumps(content))
        err = _fails(["dedupe", str(path), *KEY, *COMPARE, "--model", str(bad)], capsys)
        assert f"--model '{bad}'" in err and message in err, (name, err)


def test_a_model_used_with_other_keys_says_so_in_the_report(fitted, tmp_path, capsys):
    path, model = fitted
    with pytest.warns(ModelWarning):
        res = _json(["dedupe", str(path), "--key", "dob", *COMPARE, "--model", str(model),
                     "-o", str(tmp_path / "o")], capsys)
    differ = [w for w in res["model"]["warnings"]
              if w.startswith("scoring: the run's blocking keys differ from those the model "
                              "was fitted on")]
    assert len(differ) == 1
    assert res["model"]["warnings"] == erblock.read_report(str(tmp_path / "o")).model["warnings"]


def test_files_written_at_the_end_are_checked_first(people, tmp_path, capsys):
    path = tmp_path / "p.parquet"
    people.iloc[:50].to_parquet(path)
    for flag in ("--save-model", "--report"):
        err = _fails(["dedupe", str(path), *KEY, *COMPARE, "--scoring", "em", flag,
                      str(tmp_path / "nodir" / "x.json"), "-o", str(tmp_path / "o")], capsys)
        assert f"{flag} " in err and "no directory" in err
        assert not (tmp_path / "o").exists()
        err = _fails(["dedupe", str(path), *KEY, *COMPARE, "--scoring", "em", flag,
                      str(tmp_path)], capsys)
        assert "is a directory" in err


def test_report_reads_an_output_directory_and_warns_when_truth_ids_differ(tmp_path, capsys):
    dblp, acm, truth = erblock.datasets.load_dblp_acm()
    dblp.reset_index(drop=True).to_csv(tmp_path / "d.csv", index=False)
    acm.reset_index(drop=True).to_csv(tmp_path / "a.csv", index=False)
    truth.to_csv(tmp_path / "t.csv", index=False)
    _json(["link", str(tmp_path / "d.csv"), str(tmp_path / "a.csv"), "--key", "year",
           "--compare", "title:jaro_winkler", "--threshold", "0.9", "-o",
           str(tmp_path / "o"), "--quiet"], capsys)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "o"), "--truth", str(tmp_path / "t.csv")]) == 0
    out, err = capsys.readouterr()
    assert "quality:" in out
    assert "no id of --truth" in err
    # below the run's own threshold the pairs are not all there: refused (it reported
    # the pairs written at 0.9 as the prediction at 0.5)
    assert main(["report", str(tmp_path / "o"), "--truth", str(tmp_path / "t.csv"),
                 "--threshold", "0.5"]) == 2
    assert ("threshold 0.5: the run wrote the pairs at score >= 0.9; a lower threshold "
            "would predict pairs it did not write") in capsys.readouterr().err
    # a warning is one line naming the command, not Python's source line
    pairs = pd.read_parquet(tmp_path / "o")
    have = set(zip(pairs["left_id"], pairs["right_id"]))
    alone = pairs[[(b, a) not in have for a, b in zip(pairs["left_id"], pairs["right_id"])]]
    alone[["right_id", "left_id"]].set_axis(["left_id", "right_id"], axis=1).to_csv(
        tmp_path / "swapped.csv", index=False)
    done = subprocess.run([sys.executable, "-c", "import sys; from erblock.cli import main; "
                           "sys.exit(main())", "report", str(tmp_path / "o"),
                           "--truth", str(tmp_path / "swapped.csv")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONWARNINGS": ""})
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "erblock report: UserWarning: truth: no true pair was found" in err
    assert ".py:" not in err
    # an output flag naming a directory is a bad argument (2), said before any work
    (tmp_path / "dir").mkdir()
    for argv in (["report", str(tmp_path / "o"), "--html", str(tmp_path / "dir")],
                 ["plan", str(tmp_path / "d.csv"), "--key", "year", "--plot",
                  str(tmp_path / "dir")],
                 ["kube-spec", "-o", str(tmp_path / "dir")]):
        assert main(argv) == 2, argv
        assert f"{str(tmp_path / 'dir')!r} is a directory; give a file name" in \
            capsys.readouterr().err
    assert main(["plan", str(tmp_path / "d.csv"), "--key", "year", "--plot",
                 str(tmp_path / "no" / "p.png")]) == 2
    assert "--plot" in capsys.readouterr().err
    # --html makes its directory
    assert main(["report", str(tmp_path / "o"), "--html",
                 str(tmp_path / "new" / "r.html"), "--quiet"]) == 0
    assert (tmp_path / "new" / "r.html").is_file()


def test_option_switches_and_cross_column_dedupe_are_refused(people, capsys):
    err = _fails(["dedupe", "x.csv", *KEY, "--compare", "first_name:name:tf=maybe"], capsys)
    assert "option 'tf' of method 'name'" in err and "true or false" in err
    with pytest.raises(ValueError, match="right_column.*for a link"):
        erblock.dedupe(people, key="dob", compare=[erblock.comparison(
            "surname", "jaro", right_column="first_name")])


def test_columns_of_lists_or_records_are_refused(people):
    df = people.iloc[:10].assign(tags=[["a", "b"]] * 10, rec=[{"b": "x"}] * 10)
    for col in ("tags", "rec"):
        with pytest.raises(TypeError, match=f"column '{col}' of df holds lists or records"):
            erblock.dedupe(df, key="dob", compare={col: "name"})


def test_overwrite_never_deletes_what_erblock_did_not_write(people, tmp_path, capsys, client,
                                                            monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    people.to_csv(data / "people.csv")
    run = ["dedupe", *KEY, *COMPARE, "--id", "id"]
    # the input's own directory, its parent, a glob of it: refused, the input kept
    for target in (data, tmp_path):
        err = _fails([run[0], str(data / "people.csv"), *run[1:], "-o", str(target),
                      "--overwrite"], capsys)
        assert "holds the input" in err and (data / "people.csv").exists()
    for form in (str(data / "*.csv"), f"file://{data}/people.csv"):
        err = _fails([run[0], form, *run[1:], "-o", str(data), "--overwrite"], capsys)
        assert "holds the input" in err
    # a directory with a file of the user's beside it is not replaced, through the API too
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "plan.txt").write_text("mine")
    err = _fails([run[0], str(data / "people.csv"), *run[1:], "-o", str(tmp_path / "notes"),
                  "--overwrite"], capsys)
    assert "'plan.txt', which is not part of an erblock output" in err
    with pytest.raises(FileExistsError, match="plan.txt"):
        erblock.dedupe(people, key="surname", compare={"first_name": "name"},
                       output=str(tmp_path / "notes"), overwrite=True, client=client)
    assert (tmp_path / "notes" / "plan.txt").read_text() == "mine"
    # another tool's parquet dataset (Dask's part.N.parquet, or parts without erblock's
    # report) is not erblock's either, even when it is the run's own input
    ours = tmp_path / "dask_out"
    dd.from_pandas(people, npartitions=2).to_parquet(ours)
    with pytest.raises(FileExistsError, match="part.0.parquet"):
        erblock.dedupe(dd.read_parquet(ours), key="surname", compare={"first_name": "name"},
                       output=str(ours), overwrite=True, client=client)
    assert len(dd.read_parquet(ours)) == len(people)
    # an earlier output, with pairs and entities, is replaced; so are the entities of it
    out = tmp_path / "out"
    for scoring in ("mean", "em"):  # the second (with a model) replaces the first
        _json([run[0], str(data / "people.csv"), *run[1:], "--scoring", scoring, "--cluster",
               "0.9", "-o", str(out), "--overwrite"], capsys)
    assert sorted(p.name for p in out.iterdir()) == ["entities", "pairs"]
    ents = tmp_path / "ents"
    for _ in range(2):
        _json(["cluster", str(out / "pairs"), "-o", str(ents), "--overwrite"], capsys)
    assert (ents / "_erblock_entities.json").exists()
    for argv in (["cluster", str(out / "pairs"), "-o", str(out)],
                 ["cluster", str(out / "pairs"), "-o", str(ents), "--records",
                  str(ents / "*.parquet")],
                 [run[0], str(tmp_path / "*" / "people.csv"), *run[1:], "-o", str(data)]):
        err = _fails([*argv, "--overwrite"], capsys)
        assert "holds the input" in err and (out / "pairs").exists()
    # '~' as fsspec reads it (a quoted path, or --opt=~/…, reaches erblock unexpanded)
    monkeypatch.setenv("HOME", str(tmp_path))
    err = _fails(["cluster", "~/out/pairs", "-o", str(out), "--overwrite"], capsys)
    assert "holds the input" in err and (out / "pairs").exists()
    # an output that is a symbolic link is refused before the run (rmtree would fail after)
    (tmp_path / "link").symlink_to(ents, target_is_directory=True)
    err = _fails(["cluster", str(out / "pairs"), "-o", str(tmp_path / "link"), "--overwrite"],
                 capsys)
    assert "is a symbolic link" in err
    model = out / "pairs" / "_erblock_model.json"
    err = _fails([run[0], str(data / "people.csv"), *run[1:], "--model", str(model), "-o",
                  str(out), "--overwrite"], capsys)
    assert "holds the input" in err and model.exists()
    err = _fails([run[0], str(data / "people.csv"), *run[1:], "-o", str(out), "--overwrite",
                  "--report", str(out / "run.json")], capsys)
    assert "lies inside --output" in err
    # what another program left in an output, even deep inside it, keeps it from being
    # replaced; a link is never followed (what it points to is not erblock's to delete)
    (out / "pairs" / "notes.txt").write_text("mine")
    err = _fails([run[0], str(data / "people.csv"), *run[1:], "-o", str(out), "--overwrite"],
                 capsys)
    assert "'pairs/notes.txt', which is not part of an erblock output" in err
    (out / "pairs" / "notes.txt").unlink()
    (out / "entities" / "elsewhere").symlink_to(data, target_is_directory=True)
    err = _fails([run[0], str(data / "people.csv"), *run[1:], "-o", str(out), "--overwrite"],
                 capsys)
    assert "'entities/elsewhere', which is not part of an erblock output" in err
    assert (data / "people.csv").exists()


def test_a_result_finished_while_its_output_changed_is_kept(tmp_path):
    """A file put into the output during the run: the old directory stays, and so does
    the finished result, where the message says."""
    from erblock.engine.output import OutputConflict, finish_output, staged_output

    final = tmp_path / "out"
    final.mkdir()
    (final / "_erblock_report.json").write_text("{}")
    with pytest.raises(OutputConflict) as info, staged_output(str(final), True) as work:
        (final / "notes.txt").write_text("mine")  # meanwhile, someone writes there
        open(f"{work}/part-00000.parquet", "w").close()
    assert info.value.kept == work and work in str(info.value)
    assert (final / "notes.txt").exists() and os.path.exists(f"{work}/part-00000.parquet")
    # the same through finish_output, which a run without a staging block calls
    (final / "notes.txt").unlink()
    (final / "later.txt").write_text("mine")
    with pytest.raises(OutputConflict, match="later.txt"):
        finish_output(work, str(final), True)
    assert (final / "later.txt").exists() and os.path.exists(work)


def test_entity_ids_keep_a_dtype_that_is_not_an_integer():
    from erblock.cli.entities import _nullable

    assert _nullable(np.dtype("int64")) == "Int64" and _nullable(np.dtype("uint32")) == "UInt32"
    assert _nullable(pd.StringDtype()) == pd.StringDtype()
    kindless = object()  # a dtype-like without a kind is left alone, not taken for an integer
    assert _nullable(kindless) is kindless


def test_a_float32_score_at_the_cluster_threshold_joins_with_and_without_output(tmp_path,
                                                                              capsys):
    """Records 0 and 1 agree on a (weight 7) only: their float32 score is 0.7, which the
    run keeps at --threshold 0.7; --cluster 0.7 joins them in memory as on the cluster
    (without -o it compared in float64 and gave 3 entities, with -o 2)."""
    csv = tmp_path / "f32.csv"
    csv.write_text("rid,k,a,b\n0,1,x,p\n1,1,x,q\n2,1,y,q\n")
    argv = ["dedupe", str(csv), "--id", "rid", "--key", "k", "--compare", "a:exact:weight=7",
            "--compare", "b:exact:weight=3", "--threshold", "0.7", "--cluster", "0.7",
            "--quiet"]
    held = _json(argv, capsys)
    written = _json(argv + ["-o", str(tmp_path / "o")], capsys)
    assert held["pairs"] == written["pairs"] == 1
    assert held["entities"]["entities"] == written["entities"]["entities"] == 2
    ents = pd.read_parquet(tmp_path / "o" / "entities").set_index("id")["entity_id"]
    assert ents.to_dict() == {"0": "0", "1": "0", "2": "2"}


def test_cluster_command_refuses_pairs_with_a_missing_id(tmp_path, capsys):
    """It wrote an entity with id NaN and exited 0."""
    pairs = pd.DataFrame({"left_id": [1.0, np.nan, 3.0], "right_id": [2.0, 3.0, 4.0],
                          "score": [0.9, 0.9, 0.9]})
    pairs.to_parquet(tmp_path / "p.parquet")
    err = _fails(["cluster", str(tmp_path / "p.parquet"), "-o", str(tmp_path / "e")], capsys)
    assert ("error: cluster: pairs hold missing record ids: 1 row has a missing left_id; a "
            "pair needs both ids: drop the rows without a partner") in err
    assert not (tmp_path / "e").exists()


def test_report_truth_with_a_blank_id_is_refused_and_its_float_ids_still_match(tmp_path,
                                                                               capsys):
    """The run's ids are text (a CSV's --id); a truth CSV column with a blank cell is
    read as floats: 47 became "47.0" and the blank "nan", and recall was 0."""
    csv = tmp_path / "p.csv"
    csv.write_text("pid,k,name\n47,1,anna\n48,1,anna\n50,2,bob\n51,2,bob\n")
    _json(["dedupe", str(csv), "--id", "pid", "--key", "k", "--compare", "name:exact",
           "--threshold", "0.5", "-o", str(tmp_path / "o"), "--quiet"], capsys)
    (tmp_path / "t.csv").write_text("left_id,right_id\n47,48\n50,51\n52,\n")
    err = _fails(["report", str(tmp_path / "o"), "--truth", str(tmp_path / "t.csv")], capsys)
    assert ("error: truth holds missing record ids: 1 row has a missing right_id; a true "
            "pair needs both ids: drop the rows without a partner") in err
    (tmp_path / "t.csv").write_text("left_id,right_id\n47,48.0\n50,51.0\n")
    q = _json(["report", str(tmp_path / "o"), "--truth", str(tmp_path / "t.csv"),
               "--quiet"], capsys)["quality"]
    assert (q["tp"], q["recall"], q["ids_in_common"]) == (2, 1.0, 4)
