"""What a batch job reads is never replaced or mixed with what it writes, and cluster's
--records are the run's input under its ids (found by a probe of the command line: each
test fails on the code before its fix)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import run_json

from erblock.cli import main

DEDUPE = ["--id", "id", "--key", "prefix:name:1", "--compare", "name:jaro"]


@pytest.fixture()
def names(tmp_path) -> str:
    path = tmp_path / "r.csv"
    path.write_text("id,name\n1,john\n2,jon\n3,mary\n4,marie\n5,zed\n")
    return str(path)


def _code(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def test_cluster_records_of_other_ids_are_refused_not_rekeyed(names, tmp_path, capsys):
    """Records read without --id (row numbers 0..4) against the pairs' text ids "1".."4"
    passed (some overlapped as text): entities were joined to the wrong records and
    record 5 was lost, exit 0."""
    pairs = str(tmp_path / "p")
    assert main(["dedupe", names, *DEDUPE, "-o", pairs, "--quiet"]) == 0
    code, err = _code(["cluster", pairs, "--records", names, "-o", str(tmp_path / "e"),
                       "--quiet"], capsys)
    assert code == 2 and "its record ids are numbers (row numbers: no --id), the ids of " \
                          "the pairs" in err and "give the --id the run used" in err
    assert not (tmp_path / "e").exists()
    # records lacking an id the pairs use: refused, not clustered without it
    fewer = tmp_path / "fewer.csv"
    fewer.write_text("id,name\n1,john\n2,jon\n3,mary\n")
    code, err = _code(["cluster", pairs, "--records", str(fewer), "--id", "id", "-o",
                       str(tmp_path / "e"), "--quiet"], capsys)
    assert code == 2 and "1 of the 4 record ids in the pairs" in err
    # a repeated record id hid a missing one (1, 1, 3, 4, 5 against 1..4): refused
    twice = tmp_path / "twice.csv"
    twice.write_text("id,name\n1,john\n1,jon\n3,mary\n4,marie\n5,zed\n")
    code, err = _code(["cluster", pairs, "--records", str(twice), "--id", "id", "-o",
                       str(tmp_path / "e"), "--quiet"], capsys)
    assert code == 2 and "a record id repeats" in err
    # the run's --id on the records in another format: the format is the advice
    as_parquet = tmp_path / "r.parquet"
    pd.read_csv(names).to_parquet(as_parquet, index=False)  # ids as numbers
    code, err = _code(["cluster", pairs, "--records", str(as_parquet), "--id", "id", "-o",
                       str(tmp_path / "e"), "--quiet"], capsys)
    assert code == 2 and "record ids are numbers (--id id)" in err
    assert "give --records the run's input in its format" in err
    # the run's --id: every record, its entity
    assert main(["cluster", pairs, "--records", names, "--id", "id", "-o",
                 str(tmp_path / "e"), "--quiet"]) == 0
    got = pd.read_parquet(tmp_path / "e").set_index("id")["entity_id"]
    assert got.to_dict() == {"1": "1", "2": "1", "3": "3", "4": "3", "5": "5"}


def test_files_a_run_writes_never_replace_its_inputs(names, tmp_path, capsys):
    before = Path(names).read_text()
    for flag in ("--report", "--save-model"):
        extra = ["--compare", "name:jaro_winkler", "--scoring", "em"] if flag == "--save-model" \
            else []
        code, err = _code(["dedupe", names, *DEDUPE, *extra, flag, names, "--quiet"], capsys)
        assert code == 2 and f"{flag} {names!r} is the input {names!r}" in err
    assert Path(names).read_text() == before
    report = tmp_path / "run.json"
    assert main(["dedupe", names, *DEDUPE, "--report", str(report), "--quiet"]) == 0
    kept = report.read_text()
    code, err = _code(["report", str(report), "--html", str(report)], capsys)
    assert code == 2 and "--html" in err and report.read_text() == kept


def test_an_output_inside_an_input_directory_is_refused(names, tmp_path, capsys):
    """Parts written into a parquet input directory became part of that input: the next
    run on it failed on the pairs' columns. A CSV directory reads only its top-level
    CSV files (and ``key=value`` folders), so an output folder or report in it is
    allowed, and the next run reads the same records."""
    parquet = tmp_path / "pq"
    parquet.mkdir()
    pd.read_csv(names).to_parquet(parquet / "a.parquet", index=False)
    code, err = _code(["dedupe", str(parquet), *DEDUPE, "-o", str(parquet / "out"),
                       "--quiet"], capsys)
    assert code == 2 and "lies inside the input directory" in err
    assert not (parquet / "out").exists()
    code, err = _code(["dedupe", str(parquet), *DEDUPE, "-o", str(tmp_path / "o"),
                       "--report", str(parquet / "run.json"), "--quiet"], capsys)
    assert code == 2 and "would be read as part of the input" in err
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "a.csv").write_text(Path(names).read_text())
    code, err = _code(["dedupe", str(parts), *DEDUPE, "-o", str(parts / "x=1"), "--quiet"],
                      capsys)  # a key=value folder is a hive partition of the input
    assert code == 2 and "lies inside the input directory" in err
    code, err = _code(["dedupe", str(parts), *DEDUPE, "-o", str(tmp_path / "o2"),
                       "--report", str(parts / "b.csv"), "--quiet"], capsys)
    assert code == 2 and "would be read as part of the input" in err
    first = run_json(["dedupe", str(parts), *DEDUPE, "-o", str(parts / "out"),
                      "--report", str(parts / "run.json")], capsys)
    again = run_json(["dedupe", str(parts), *DEDUPE], capsys)
    assert first["records"]["records_r"] == again["records"]["records_r"] == 5
    # a glob reads only what it matches: its fixed part is no input directory
    assert main(["dedupe", str(parts / "*.csv"), *DEDUPE, "-o", str(parts / "out2"),
                 "--quiet"]) == 0
    pairs = str(tmp_path / "p")
    assert main(["dedupe", names, *DEDUPE, "-o", pairs, "--quiet"]) == 0
    code, err = _code(["cluster", pairs, "-o", pairs + "/ent", "--quiet"], capsys)
    assert code == 2 and "lies inside the input directory" in err


def test_files_written_beside_a_globs_matches_are_allowed(tmp_path, capsys, monkeypatch):
    """A glob's directory is no input: a report written there (or anywhere below the
    working directory for '*.csv') was refused as 'lies in the input'. A file that the
    glob would match is refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "people-1.csv").write_text("id,name\n1,john\n2,jon\n")
    (tmp_path / "sub").mkdir()
    for report in ("report.json", "sub/report.json", str(tmp_path / "r2.json")):
        code, err = _code(["dedupe", "people-*.csv", *DEDUPE, "-o", f"out-{len(report)}",
                           "--report", report, "--quiet"], capsys)
        assert code == 0, err
    code, err = _code(["dedupe", "people-*.csv", *DEDUPE, "-o", "out-x", "--report",
                       "people-2.csv", "--quiet"], capsys)
    assert code == 2 and "would be read as part of the input 'people-*.csv'" in err
    code, err = _code(["dedupe", "people-*.csv", *DEDUPE, "--report", "people-1.csv",
                       "--quiet"], capsys)
    assert code == 2 and "is the input 'people-*.csv'" in err


def test_paths_that_cannot_be_used_are_named_with_exit_2(names, tmp_path, capsys):
    code, err = _code(["dedupe", names, *DEDUPE, "-o", names + "/x/y", "--quiet"], capsys)
    assert code == 2 and f"lies under {names!r}, which is a file" in err
    assert "erblock-tmp" not in err
    code, err = _code(["cluster", str(tmp_path / "nope"), "-o", str(tmp_path / "e")], capsys)
    assert code == 2 and err.strip().endswith("no such file or directory")


def test_json_for_scripts_is_strict(names, tmp_path, capsys):
    """report --json printed a bare NaN (precision when nothing is predicted), which
    JSON.parse and other strict parsers refuse."""
    from erblock.cli.common import to_json_line

    assert to_json_line({"a": math.nan, "b": [math.inf, 1.0], "c": pd.Timestamp(0)}) == \
        '{"a": null, "b": [null, 1.0], "c": "1970-01-01 00:00:00"}'
    # NumPy's scalars as numbers, pandas' missing values as null (not "nan", "<NA>")
    assert to_json_line({"a": np.float32("nan"), "b": pd.NA, "c": pd.NaT, "d": np.int64(3),
                         "e": np.float32(0.5)}) == \
        '{"a": null, "b": null, "c": null, "d": 3, "e": 0.5}'
    report, truth = tmp_path / "run.json", tmp_path / "truth.csv"
    truth.write_text("left_id,right_id\n1,2\n")
    assert main(["dedupe", names, *DEDUPE, "-o", str(tmp_path / "p"), "--report",
                 str(report), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(report), "--truth", str(truth), "--threshold", "0.999",
                 "--json"]) == 0
    out = capsys.readouterr().out

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    got = json.loads(out, parse_constant=refuse)
    assert got["quality"]["precision"] is None and got["quality"]["n_predicted"] == 0


def test_a_link_s_pairs_without_their_report_are_not_clustered(tmp_path, capsys):
    """Parts copied without the run's report were clustered: records of the two inputs
    that share an id merged into one entity. A pair of two equal ids says it is a link."""
    import shutil

    r, s = tmp_path / "r.csv", tmp_path / "s.csv"
    r.write_text("id,name\n1,john\n2,mary\n3,zed\n")
    s.write_text("id,name\n1,jon\n2,marie\n7,zed\n")
    out, copy = tmp_path / "l", tmp_path / "copy"
    assert main(["link", str(r), str(s), *DEDUPE, "-o", str(out), "--quiet"]) == 0
    copy.mkdir()
    for part in out.glob("*.parquet"):
        shutil.copy(part, copy)
    code, err = _code(["cluster", str(copy), "-o", str(tmp_path / "e"), "--quiet"], capsys)
    assert code == 2 and "are a link's (a pair of two equal ids" in err


def test_id_names_a_parquet_files_stored_index_in_a_link(names, tmp_path, capsys):
    """R a CSV with an ``id`` column, S a parquet file written with ``id`` as its index:
    ``--id id`` reads both (it said the column is not in S's file)."""
    s = tmp_path / "s.parquet"
    pd.DataFrame({"id": ["s1", "s2"], "name": ["jon", "marie"]}).set_index("id").to_parquet(s)
    out = tmp_path / "pairs"
    code, err = _code(["link", names, str(s), *DEDUPE, "--threshold", "0.8", "-o", str(out),
                       "--quiet"], capsys)
    assert code == 0, err
    got = pd.read_parquet(out)
    assert set(zip(got["left_id"].astype(str), got["right_id"])) == {("1", "s1"),
                                                                    ("2", "s1"),
                                                                    ("4", "s2")}


def test_an_empty_csv_and_an_output_that_cannot_be_created_are_named(names, tmp_path, capsys):
    """An empty CSV gave Dask's two-line 'error occurred while calling the read_csv
    method'; an output on a file system that refuses directories named the internal
    ``*.erblock-tmp-*`` path."""
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, err = _code(["dedupe", str(empty), *DEDUPE, "--quiet"], capsys)
    assert code == 2 and "is empty: a CSV input needs a header line" in err, err
    assert "Original Message" not in err
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc (a file system where no directory can be made)")
    code, err = _code(["dedupe", names, *DEDUPE, "--threshold", "0.8", "-o",
                       "/proc/erblock-out", "--quiet"], capsys)
    assert code == 2 and "output: '/proc/erblock-out' cannot be written" in err, err
    assert "erblock-tmp" not in err


def test_review_mends_of_paths_signals_and_messages(names, tmp_path, capsys, monkeypatch):
    """An output a glob input would read next time is refused ('runs/*/*.parquet' -o
    runs/r2 made its pairs part of the input); ``**`` matches no directory too, as the
    reader's glob does; an output name too long with the staging suffix is exit 2 naming
    why; an empty first CSV part is named; a signal the parent ignores stays ignored."""
    import logging
    import signal

    from erblock.cli import _stoppable
    from erblock.cli.common import to_json_line

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    pd.read_csv(names).to_parquet(tmp_path / "runs" / "r1" / "part-00000.parquet")
    for glob_input in ("runs/*/*.parquet", "runs/**/*.parquet", "runs/*"):
        code, err = _code(["dedupe", glob_input, *DEDUPE, "-o", "runs/r2", "--quiet"], capsys)
        assert code == 2 and "or its parts match the input" in err, err
    from erblock.cli.parser import UsageError
    from erblock.cli.paths import check_apart

    for glob_input in ("runs/*/pairs/*.parquet", "runs/*/*/*.parquet"):  # --cluster's parts
        with pytest.raises(UsageError, match="or its parts match the input"):
            check_apart("runs/r2", [glob_input])
    assert not (tmp_path / "runs" / "r2").exists()
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "a.csv").write_text(Path(names).read_text())
    code, err = _code(["dedupe", "deep/**/*.csv", *DEDUPE, "--report", "deep/r.csv",
                       "--quiet"], capsys)
    assert code == 2 and "would be read as part of the input 'deep/**/*.csv'" in err
    code, err = _code(["dedupe", names, *DEDUPE, "-o", "x" * 240, "--quiet"], capsys)
    assert code == 2 and "staging suffix" in err and "failed" not in err
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.csv").write_text("")
    (tmp_path / "parts" / "b.csv").write_text(Path(names).read_text())
    code, err = _code(["dedupe", "parts", *DEDUPE, "--quiet"], capsys)
    assert code == 2 and "input 'parts': its first part" in err and "a.csv' is empty" in err
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    level = logging.getLogger("asyncio").level
    try:
        with _stoppable():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, before)
    assert logging.getLogger("asyncio").level == level
    assert to_json_line({"a": np.array([np.nan])}) == '{"a": "[nan]"}'  # no scalar: text


def test_a_quoted_home_in_a_written_path_is_the_home(names, tmp_path, capsys, monkeypatch):
    """'~/run.json' (quoted: no shell expanded it) was checked as $HOME/run.json but
    written to a folder named '~' in the working directory."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert main(["dedupe", names, *DEDUPE, "--report", "~/run.json", "--quiet"]) == 0
    assert (home / "run.json").is_file() and not (work / "~").exists()
    assert main(["report", "~/run.json", "--html", "~/run.html", "--quiet"]) == 0
    assert (home / "run.html").is_file()
