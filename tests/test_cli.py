"""The command line, run in-process through ``erblock.cli.main`` against real files."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest
from oracle import brute_dedupe, brute_link, pair_list

from erblock.blocking import Composite, Phonetic, Prefix, Token, parse_key
from erblock.cli import main
from erblock.cli.common import in_cli_terms
from erblock.matchers.comparisons import parse_compare


@pytest.fixture
def people(tmp_path):
    df = pd.DataFrame({
        "surname": ["smith", "smyth", "smith", "jones", "johns", None, "brown"],
        "first": ["ann", "anne", "bob", "carl", "karl", "x", "y"],
        "age": [30, 31, 50, 40, 41, 20, 22],
    })
    path = tmp_path / "people.csv"
    df.to_csv(path, index=False)
    return df, path


def test_parse_key_forms():
    assert parse_key("prefix:title:3") == Prefix("title", 3)
    assert parse_key("soundex:surname") == Phonetic("surname", "soundex")
    assert parse_key("year+token:title") == Composite((parse_key("year"), Token("title", 0)))
    with pytest.raises(ValueError, match="cannot read 'prefix:title'"):
        parse_key("prefix:title")


def test_parse_compare_forms():
    c = parse_compare("age:numeric:scale=5:weight=2")
    assert (c.column, c.method, c.weight, c.option["scale"]) == ("age", "numeric", 2.0, 5.0)
    c = parse_compare("title=name:jaro_winkler")
    assert (c.column, c.right_column) == ("title", "name")
    with pytest.raises(ValueError, match="COLUMN:METHOD"):
        parse_compare("title")


def test_a_backslash_escapes_the_separators_in_column_names(tmp_path, capsys):
    """Columns named addr:city or a+b (OpenStreetMap tags, flattened JSON) are written
    with a backslash before the separator, in --key (nested keys too) and --compare;
    errors show the form as given; a run on such columns equals the brute force."""
    from erblock.blocking import Column, SortedNeighbourhood, Tokens

    assert parse_key(r"addr\:city") == Column("addr:city")
    assert parse_key(r"prefix:addr\:city:3") == Prefix("addr:city", 3)
    assert parse_key(r"a\+b+c") == Composite((Column("a+b"), Column("c")))
    assert parse_key(r"sn:addr\:city:5") == SortedNeighbourhood(Column("addr:city"), 5)
    assert parse_key(r"purge:auto:tokens:t\:x").to_dict()["key"] == Tokens("t:x").to_dict()
    assert parse_key(r"back\\slash") == Column("back\\slash")
    c = parse_compare(r"a\=b=c\:d:exact")
    assert (c.column, c.right_column, c.method) == ("a=b", "c:d", "exact")
    assert parse_compare(r"dob:date:format=%Y\:%m").option["format"] == "%Y:%m"
    with pytest.raises(ValueError, match=r"'x' is not an integer"):
        parse_key(r"prefix:addr\:city:x")
    with pytest.raises(ValueError, match=r"cannot read 'bogus:addr\\:city:3'"):
        parse_key(r"bogus:addr\:city:3")
    with pytest.raises(ValueError, match=r"cannot read 'a:b'.*a column whose name holds ':'"
                                         r".*with a backslash before them \(a\\:b\)"):
        parse_key("a:b")  # the column 'a:b', unescaped: the message shows how
    with pytest.raises(ValueError, match=r"expected date:COLUMN.*a ':' inside a column name "
                                         r"or a format is written with a backslash"):
        parse_key("date:ts:day:%d/%m/%Y %H:%M")
    assert parse_key(r"date:ts:day:%d/%m/%Y %H\:%M").format == "%d/%m/%Y %H:%M"
    df = pd.DataFrame({"addr:city": ["paris", "paris", "rome", "rome", "paris"],
                       "a+b": ["x", "x", "y", "z", "x"],
                       "name": ["anna", "anne", "bob", "rob", "zed"]})
    df.to_csv(tmp_path / "p.csv", index=False)
    assert main(["dedupe", str(tmp_path / "p.csv"), "--key", r"addr\:city", "--compare",
                 r"a\+b:exact", "--compare", "name:jaro_winkler", "-o",
                 str(tmp_path / "out"), "--quiet"]) == 0
    got = pd.read_parquet(tmp_path / "out")
    assert set(pair_list(got)) == brute_dedupe(df, ["addr:city"])
    assert "a+b_exact" in got.columns


def test_parse_compare_reads_booleans_and_number_lists():
    """tf=False was the text 'False' (true in Python: the adjustment stayed on), and
    thresholds had no command-line spelling; a date format with commas stays text."""
    from erblock.matchers.levels import resolve_levels

    for text, tf in (("first:name:tf=False", False), ("first:name:tf=TRUE", True),
                     ("first:name", True), ("first:jaro_winkler:tf=true", True)):
        [spec] = resolve_levels([parse_compare(text)], None)
        assert spec.tf is tf, text
    assert parse_compare("t:text:codes=false").option["codes"] is False
    assert parse_compare("first:name:thresholds=0.9,0.8").option["thresholds"] == (0.9, 0.8)
    [spec] = resolve_levels([parse_compare("first:name:thresholds=0.9")], None)
    assert spec.n_levels == 3  # exact, >= 0.9, else
    assert parse_compare("dob:date:format=%d,%m,%Y").option["format"] == "%d,%m,%Y"


def test_dedupe_writes_parquet_and_report(people, tmp_path, capsys):
    df, path = people
    out, rep = tmp_path / "out", tmp_path / "run.json"
    code = main(["dedupe", str(path), "--key", "soundex:surname", "--compare",
                 "first:jaro_winkler", "--compare", "age:numeric:scale=10", "-o", str(out),
                 "--report", str(rep), "--quiet"])
    assert code == 0
    pairs = pd.read_parquet(out)
    df.index = pd.RangeIndex(len(df))
    assert set(pair_list(pairs)) == brute_dedupe(df, [Phonetic("surname", "soundex")])
    report = json.loads(rep.read_text())
    assert report["comparisons"] == len(pairs)
    assert set(report["phases"]) == {"profile", "plan", "route_compare", "write"}
    assert report["records"]["not_blocked"] == 1


def test_csv_separator_and_missing_markers(tmp_path, capsys):
    """pandas reads NA (Namibia), NULL, None … as missing by default: --na-values ''
    keeps them as values (only empty cells are missing); --sep reads ';' files."""
    from cli_helpers import run_json

    path = tmp_path / "people.csv"
    path.write_text("name;country\nAnna Shikongo;NA\nAna Shikongo;NA\nPeter Muller;DE\n"
                    "Peter Mueller;DE\nZoe;\n")
    out = tmp_path / "out"
    argv = ["dedupe", str(path), "--sep", ";", "--key", "country", "--compare", "name:jaro",
            "--overwrite", "-o", str(out)]
    default = run_json(argv, capsys)
    assert default["records"]["not_blocked"] == 3  # NA twice and the empty cell
    assert len(pd.read_parquet(out)) == 1
    kept = run_json(argv + ["--na-values", ""], capsys)
    assert kept["records"]["not_blocked"] == 1 and len(pd.read_parquet(out)) == 2
    listed = run_json(argv + ["--na-values", "NA,unknown"], capsys)
    assert listed["records"]["not_blocked"] == 3
    for bad in ("", "||"):
        assert main(["dedupe", str(path), "--sep", bad, "--key", "country", "--compare",
                     "name:jaro"]) == 2
    tabbed = tmp_path / "tabbed.csv"
    tabbed.write_text(path.read_text().replace(";", "\t"))
    spaced = run_json(["dedupe", str(tabbed), "--sep", "\\t", "--key", "country",
                       "--compare", "name:jaro", "--na-values", " NULL, NA "], capsys)
    assert spaced["records"]["not_blocked"] == 3  # the spaces around the markers go
    twice = tmp_path / "twice.csv"
    twice.write_text("name,name,v.1\nann,anna,x\nann,anne,y\n")
    capsys.readouterr()
    assert main(["dedupe", str(twice), "--key", "v.1", "--compare", "name:jaro"]) == 2
    assert "names the column 'name' more than once" in capsys.readouterr().err
    # a column really named "city.1" beside "city" is two names, not a repeated one
    dotted = tmp_path / "dotted.csv"
    dotted.write_text("city,city.1\nx,1\nx,2\n")
    got = run_json(["dedupe", str(dotted), "--key", "city", "--compare", "city.1:exact"],
                   capsys)
    assert got["pairs"] == 1


def test_a_column_type_error_names_the_file_and_the_flags(tmp_path, capsys):
    """A parquet column keeps its type: numbers given to a text comparison are a bad
    input (exit 2) in command-line words, naming the file, not the API's df/.astype."""
    typed = tmp_path / "typed.parquet"
    pd.DataFrame({"k": ["a", "a"], "year": [1987, 1988]}).to_parquet(typed, index=False)
    capsys.readouterr()
    assert main(["dedupe", str(typed), "--key", "k", "--compare", "year:jaro"]) == 2
    err = capsys.readouterr().err
    assert f"of input {str(typed)!r} holds numbers" in err
    assert "compare it with numeric or exact" in err and "astype" not in err


def test_multi_valued_and_sorted_neighbourhood_keys(people, tmp_path):
    """``--key tokens:…``, ``--key sn:…:W`` and ``--key minhash:…`` from the command line,
    each pair once, as the oracle says."""
    df, path = people
    out = tmp_path / "out"
    keys = ["tokens:first", "sn:surname:3", "minhash:first:0.5"]
    argv = ["dedupe", str(path), "--compare", "first:jaro", "-o", str(out), "--quiet"]
    assert main(argv + [a for k in keys for a in ("--key", k)]) == 0
    pairs = pd.read_parquet(out)
    df.index = pd.RangeIndex(len(df))
    got = pair_list(pairs)
    assert len(got) == len(set(got))
    assert set(got) == brute_dedupe(df, [parse_key(k) for k in keys])


def test_link_prints_json(people, tmp_path, capsys):
    df, path = people
    code = main(["link", str(path), str(path), "--key", "surname", "--compare",
                 "first:exact", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    df.index = pd.RangeIndex(len(df))
    assert out["comparisons"] == len(brute_link(df, df, ["surname"]))


def test_plan_command(people, capsys):
    _, path = people
    assert main(["plan", str(path), "--key", "surname", "--n-tasks", "3",
                 "--strategy", "blocksplit"]) == 0
    text = capsys.readouterr().out
    assert "total comparisons" in text and "blocksplit" in text


@pytest.mark.parametrize("argv, message", [
    (["dedupe", "X", "--key", "a", "--compare", "a:foo"], "unknown method 'foo'"),
    (["dedupe", "X", "--key", "prefix:a", "--compare", "a:jaro"], "cannot read"),
    (["dedupe", "X", "--key", "a", "--compare", "a:jaro", "--threshold", "2"], "threshold"),
    (["dedupe", "/no/such/file.csv", "--key", "a", "--compare", "a:jaro"], "could not be read"),
])
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_file_in_another_encoding_asks_for_encoding(tmp_path, capsys):
    """The bad byte is past the rows read up front: the decode error is raised on a
    worker and arrived without its text, so the message was empty."""
    path = tmp_path / "latin.csv"
    pd.DataFrame({"year": range(5001), "name": ["Jose"] * 5000 + ["Ren\xe9e"]}).to_csv(
        path, index=False, encoding="latin-1")
    assert main(["plan", str(path), "--key", "year"]) == 2
    err = capsys.readouterr().err
    assert "latin.csv" in err and "--encoding" in err
    assert main(["plan", str(path), "--key", "year", "--encoding", "latin-1"]) == 0


def test_sorted_neighbourhood_on_csv_and_typed_parquet_says_why(tmp_path, capsys):
    """CSV columns are read as text, parquet keeps numbers: the two have no one order, and
    the advice must be one a command-line user can follow (sorting; an exact comparison)."""
    df = pd.DataFrame({"zip": [100, 9, 10, 2], "name": ["a", "b", "c", "d"]})
    df.to_csv(tmp_path / "r.csv", index=False)
    df.to_parquet(tmp_path / "s.parquet")
    assert main(["link", str(tmp_path / "r.csv"), str(tmp_path / "s.parquet"), "--key",
                 "sn:zip:2", "--compare", "name:exact", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "numeric in S ('" in err and "give both inputs in one format" in err
    assert "pd.to_numeric" not in err and "['" not in err
    # an exact comparison of the same column: a number never equals a text
    assert main(["link", str(tmp_path / "r.csv"), str(tmp_path / "s.parquet"), "--key",
                 "name", "--compare", "zip:exact", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "column 'zip' is numeric in S ('" in err and "text in R ('" in err
    assert "give both inputs in one format" in err and "pd.to_numeric" not in err
    # postcode compares them (as text) but warns, once, printed in the same terms
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["link", str(tmp_path / "r.csv"), str(tmp_path / "s.parquet"), "--key",
                     "name", "--compare", "zip:postcode"]) == 0
    assert len(caught) == 1
    paths = [str(tmp_path / "r.csv"), str(tmp_path / "s.parquet")]
    with in_cli_terms(paths):
        shown = warnings.formatwarning(caught[0].message, UserWarning, "x.py", 1)
    assert shown.startswith(f"erblock: UserWarning: compare: column 'zip' is numeric in S "
                            f"({paths[1]!r}) but text in R ({paths[0]!r})")
    assert "give both inputs in one format" in shown and "dtype=str" not in shown
    assert warnings.formatwarning is not None and "erblock:" not in warnings.formatwarning(
        "m", UserWarning, "x.py", 1)  # restored after the command


def test_missing_column_names_it(people, capsys):
    _, path = people
    assert main(["dedupe", str(path), "--key", "surnam", "--compare", "first:jaro",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'surnam'" in err and "did you mean 'surname'" in err


def test_demo_runs_on_bundled_data(capsys, tmp_path):
    out_dir, rep = tmp_path / "out", tmp_path / "run.json"
    assert main(["demo", "--json", "-o", str(out_dir), "--report", str(rep)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["quality"]["f1"] > 0.9
    assert out["quality"]["pair_completeness"] > 0.95
    # the report says where the kept pairs went, and they are there
    saved = json.loads(rep.read_text())
    assert saved["output"] == str(out_dir)
    assert len(pd.read_parquet(out_dir)) == out["quality"]["n_predicted"] == saved["pairs"]
    # the output holds the pairs at the threshold: its report says so, so that `erblock
    # report --truth` does not take the kept pairs for the candidates
    assert saved["settings"]["threshold"] == 0.75
    assert saved["quality"]["n_candidates"] > saved["pairs"]
    assert saved["quality"]["threshold"] == 0.75  # the quality's own (was None)
    assert main(["demo", "--threshold", "1.5", "--quiet"]) == 2


def test_memory_budget_flag(people, tmp_path):
    _, path = people
    out, rep = tmp_path / "out", tmp_path / "run.json"
    assert main(["dedupe", str(path), "--key", "surname", "--compare", "first:jaro",
                 "--memory-budget", "64MB", "-o", str(out), "--report", str(rep),
                 "--quiet"]) == 0
    assert json.loads(rep.read_text())["comparisons"] >= 1


def test_bad_memory_budget_exits_2(people, capsys):
    _, path = people
    assert main(["dedupe", str(path), "--key", "surname", "--compare", "first:jaro",
                 "--memory-budget", "lots", "--quiet"]) == 2
    assert "memory_budget" in capsys.readouterr().err


def test_demo_never_replaces_an_existing_directory_unasked(tmp_path, capsys):
    """`erblock demo -o DIR` used to delete what DIR held; now it refuses before running."""
    out = tmp_path / "precious"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "notes.txt").write_text("keep")
    assert main(["demo", "-o", str(out), "--quiet"]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (out / "sub" / "notes.txt").read_text() == "keep"


def test_output_that_is_a_file_exits_2(people, tmp_path, capsys):
    _, path = people
    target = tmp_path / "afile.txt"
    target.write_text("mine")
    assert main(["dedupe", str(path), "--key", "surname", "--compare", "first:jaro",
                 "--quiet", "-o", str(target)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert target.read_text() == "mine"


@pytest.mark.parametrize("argv, message", [
    (["dedupe", "X", "--key", "a+", "--compare", "a:jaro"], "an empty part between '+'"),
    (["dedupe", "X", "--key", "a", "--compare", "a:jaro:wieght=2"],
     "every comparison also takes weight="),
    (["dedupe", "X", "--key", "a", "--compare", "a:numeric:scale=abc"],
     "scale must be a number > 0, got 'abc'"),
    (["dedupe", "X", "--key", "a", "--compare", "a:jaro", "--scheduler", "nonsense"],
     "--scheduler 'nonsense': missing port number"),
    (["dedupe", "X", "--key", "a", "--compare", "a:jaro", "--scheduler", "localhost:87x"],
     "give HOST:PORT"),
    (["dedupe", "X", "--key", "a", "--compare", "a:jaro", "--encoding", "nosuchenc"],
     "--encoding 'nosuchenc' is not an encoding"),
])
def test_more_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_n_tasks_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["dedupe", "X", "--key", "a", "--compare", "a:jaro", "--n-tasks", "0"])
    assert exc.value.code == 2
    assert "--n-tasks: expected a whole number >= 1, got '0'" in capsys.readouterr().err


def test_an_empty_or_corrupt_input_names_the_file(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not a parquet file at all")
    for path in (empty, bad):
        assert main(["dedupe", str(path), "--key", "a", "--compare", "a:jaro", "--quiet"]) == 2
        err = capsys.readouterr().err
        said = "is empty" if path == empty else "could not be read"
        assert f"input {str(path)!r} {said}" in err and "Traceback" not in err


def test_dedupe_help_has_no_link_only_options(capsys):
    with pytest.raises(SystemExit):
        main(["dedupe", "--help"])
    out = capsys.readouterr().out
    assert "--map" not in out and "for link with different names" not in out


def test_no_progress_bars_when_stderr_is_not_a_terminal(people, tmp_path, capsys):
    _, path = people
    assert main(["dedupe", str(path), "--key", "surname", "--compare", "first:jaro",
                 "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "[#" not in err and "\r" not in err


def test_input_errors_name_the_file_and_the_flag(people, tmp_path, capsys):
    """The API's messages say df / id='...'; the command line's name the file and flags."""
    df, path = people
    assert main(["dedupe", str(path), "--key", "nosuch", "--compare", "first:jaro",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--key column 'nosuch' is not in input {str(path)!r}" in err
    dup = tmp_path / "dup.csv"
    df.assign(pid="011").to_csv(dup, index=False)
    assert main(["dedupe", str(dup), "--id", "pid", "--key", "surname", "--compare",
                 "first:jaro", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"input {str(dup)!r}: record ids are not unique" in err
    assert "pick an --id column whose values are unique" in err
    assert "reset_index" not in err and "id='" not in err


def test_quiet_holds_back_warnings_and_compressed_csv_reads_whole(people, tmp_path, capsys):
    """``--quiet``: nothing on stderr but errors, so no warning either (the model's are in
    the run report); a gzip CSV is read whole without Dask's blocksize warning, which
    asks for an argument no command-line user can give."""
    df, path = people
    gz = tmp_path / "people.csv.gz"
    df.to_csv(gz, index=False)
    one = ["dedupe", str(gz), "--key", "surname", "--compare", "first:name", "--scoring",
           "em"]  # EM on one comparison: a ModelWarning
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert main(one + ["--quiet"]) == 0
    assert shown == [] and capsys.readouterr().err == ""
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert main(one) == 0
    said = [str(w.message) for w in shown]
    assert any("EM needs at least 2 comparisons" in s for s in said), said
    assert not any("blocksize" in s for s in said), said
    # the caller's own logging switch is left as it was
    import logging

    logging.disable(logging.WARNING)
    try:
        assert main(one + ["--quiet"]) == 0
        assert logging.root.manager.disable == logging.WARNING
    finally:
        logging.disable(logging.NOTSET)
