"""Inputs for the command line: CSV/parquet files, globs, directories and fsspec URLs.

Every form is read through Dask's readers and must give the same records with the same
ids (global row numbers in input order, or an ``--id`` column); the CLI runs on each
form and on column mappings between R and S give the brute force's pairs.
"""

from __future__ import annotations

import fsspec
import pandas as pd
import pytest
from oracle import brute_dedupe, brute_link, pair_list

from erblock.cli import main, parse_id, parse_pairs
from erblock.engine.io import expand_paths, guess_format, read_table, rename_columns


@pytest.fixture
def people() -> pd.DataFrame:
    return pd.DataFrame({
        "pid": [f"p{i:02d}" for i in range(12)],
        "surname": ["smith", "smyth", "smith", "jones", "johns", None, "brown", "braun",
                    "smith", "jones", "li", "lee"],
        "first": ["ann", "anne", "bob", "carl", "karl", "x", "y", "y", "annie", "carla",
                  "wei", "way"],
    })


def _write_parts(df: pd.DataFrame, directory, fmt: str, n: int = 3) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    bounds = [round(i * len(df) / n) for i in range(n + 1)]
    paths = []
    for i in range(n):
        part = df.iloc[bounds[i]:bounds[i + 1]]
        path = directory / f"part-{i}.{fmt}"
        if fmt == "csv":
            part.to_csv(path, index=False)
        else:
            part.to_parquet(path, index=False)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_glob_directory_and_url_give_the_same_records_in_input_order(people, tmp_path, fmt):
    d = tmp_path / "in"
    _write_parts(people, d, fmt)
    (d / "_SUCCESS").write_text("")  # a marker some writers leave: not a part
    forms = [str(d / f"part-*.{fmt}"), f"file://{d}/part-*.{fmt}", str(d), f"file://{d}"]
    for form in forms:
        got = read_table(form).compute()
        assert list(got.index) == list(range(len(people))), form
        assert got["surname"].isna().tolist() == people["surname"].isna().tolist(), form
        assert got["surname"].dropna().tolist() == people["surname"].dropna().tolist(), form
        assert got["pid"].tolist() == people["pid"].tolist(), form


def test_a_directory_of_csv_parts_is_read_as_csv_unless_it_is_ambiguous(people, tmp_path):
    d = tmp_path / "in"
    _write_parts(people, d, "csv")
    assert read_table(str(d), fmt="csv").compute()["pid"].tolist() == people["pid"].tolist()
    people.iloc[:2].to_parquet(d / "extra.parquet")
    with pytest.raises(ValueError, match="holds both CSV and parquet files"):
        read_table(str(d))
    assert len(read_table(str(d), fmt="csv").compute()) == len(people)
    p = tmp_path / "pq"
    _write_parts(people, p, "parquet")
    with pytest.raises(FileNotFoundError, match="no CSV file in the directory"):
        read_table(str(p), fmt="csv")
    # notes and folders beside the parts are not parts (of either kind)
    (p / "README.txt").write_text("how these were made")
    assert read_table(str(p)).compute()["pid"].tolist() == people["pid"].tolist()
    c = tmp_path / "csv"
    _write_parts(people, c, "csv")
    (c / "README.txt").write_text("how these were made")
    (c / "old").mkdir()
    assert read_table(str(c)).compute()["pid"].tolist() == people["pid"].tolist()
    (c / ".cache").mkdir()  # hidden and nested parquet files are not parts either
    people.iloc[:2].to_parquet(c / ".cache" / "x.parquet")
    (c / "old" / "backup.parquet").write_bytes(b"")
    assert len(read_table(str(c)).compute()) == len(people)
    # parts with another header (columns in another order) are refused by name
    people.iloc[:2, ::-1].to_csv(c / "part-8.csv", index=False)
    with pytest.raises(ValueError, match=r"part-8\.csv' has the columns"):
        read_table(str(c))
    (c / "part-8.csv").unlink()
    # Dask takes the compression of the first file for all: mixed ones are refused
    people.iloc[:2].to_csv(c / "part-9.csv.gz", index=False)
    with pytest.raises(ValueError, match="compressed differently"):
        read_table(str(c))
    # parts named otherwise (.tsv, .txt) are neither: say so, not a parquet error
    t = tmp_path / "tsv"
    t.mkdir()
    people.to_csv(t / "a.tsv", sep="\t", index=False)
    with pytest.raises(ValueError, match="neither CSV"):
        read_table(str(t))
    # hive partitions (key=value/ folders) stay a parquet dataset
    h = tmp_path / "hive"
    people.assign(part=people.index % 2).to_parquet(h, partition_cols=["part"])
    assert len(read_table(str(h)).compute()) == len(people)


def test_id_column_becomes_the_index(people, tmp_path):
    path = tmp_path / "p.csv"
    people.to_csv(path, index=False)
    got = read_table(str(path), id_column="pid").compute()
    assert got.index.tolist() == people["pid"].tolist()
    assert "pid" not in got.columns
    with pytest.raises(KeyError, match="--id column 'id' is not in"):
        read_table(str(path), id_column="id")


def test_id_column_may_name_a_stored_parquet_index(people, tmp_path):
    """--id names the index a parquet file was written with (``df.to_parquet()``), so a
    link whose id is a column in one file and the stored index in the other reads both."""
    path = tmp_path / "p.parquet"
    people.set_index("pid").to_parquet(path)
    got = read_table(str(path), id_column="pid").compute()
    assert got.index.tolist() == people["pid"].tolist() and "pid" not in got.columns
    with pytest.raises(KeyError, match="--id column 'id' is not in"):
        read_table(str(path), id_column="id")


def test_a_parquet_range_index_other_than_the_default_is_the_id(tmp_path):
    """A named RangeIndex (``df.rename_axis('id').to_parquet()``) is metadata, not a
    column: reading it failed with KeyError '[nan] not in index', and --id id said the
    column is not in the file. Its ids are start + step x row."""
    named, stepped = tmp_path / "named.parquet", tmp_path / "stepped.parquet"
    pd.DataFrame({"n": list("abc")}).rename_axis("id").to_parquet(named)
    pd.DataFrame({"n": list("abc")}, index=pd.RangeIndex(10, 16, 2)).to_parquet(stepped)
    for path, id_column, want in [(named, None, [0, 1, 2]), (named, "id", [0, 1, 2]),
                                  (stepped, None, [10, 12, 14])]:
        got = read_table(str(path), id_column=id_column).compute()
        assert got.index.tolist() == want and got["n"].tolist() == list("abc")
    # parts each written with a range (100-102, 500-501): no ids of one input, refused
    # (a directory was renumbered 100-104 from its first part's metadata)
    parts = tmp_path / "parts"
    parts.mkdir()
    pd.DataFrame({"n": list("abc")}, index=pd.RangeIndex(100, 103)).to_parquet(
        parts / "a.parquet")
    pd.DataFrame({"n": list("de")}, index=pd.RangeIndex(500, 502)).to_parquet(
        parts / "b.parquet")
    for given in (parts, parts / "*.parquet"):
        with pytest.raises(ValueError, match=r"its 2 parts were each written with a "
                                             r"RangeIndex"):
            read_table(str(given))


@pytest.mark.parametrize("names", [None, ["g", "n"]])
def test_a_parquet_multiindex_needs_an_id_column(tmp_path, names):
    """A MultiIndex's ids would be tuples, which no written id column holds (the run broke
    at its end, in a worker): refused up front naming the file and --id; with --id the
    file reads, its named levels as columns."""
    df = pd.DataFrame({"city": ["x", "x", "y"], "rid": [5, 6, 7]},
                      index=pd.MultiIndex.from_arrays([["a", "a", "b"], [1, 2, 1]],
                                                      names=names))
    path = tmp_path / "mi.parquet"
    df.to_parquet(path)
    with pytest.raises(ValueError, match=r"'.*mi.parquet' was written with a pandas "
                                         r"MultiIndex \(2 levels\).*give --id COLUMN"):
        read_table(str(path))
    got = read_table(str(path), id_column="rid").compute()
    assert got.index.tolist() == [5, 6, 7] and got["city"].tolist() == ["x", "x", "y"]
    assert sorted(got.columns) == sorted(["city"] + (names or []))
    # a hive-partitioned directory keeps its partition column
    hive = tmp_path / "hive"
    df.to_parquet(hive, partition_cols=["city"])
    got = read_table(str(hive), id_column="rid").compute().sort_index()
    assert got.index.tolist() == [5, 6, 7] and got["city"].astype(str).tolist() == [
        "x", "x", "y"]


def test_fsspec_url_of_another_filesystem(people):
    """A non-local protocol (fsspec's in-memory filesystem) is read the same way."""
    fs = fsspec.filesystem("memory")
    with fs.open("/erblock-test/people.csv", "w") as f:
        people.to_csv(f, index=False)
    try:
        assert expand_paths("memory://erblock-test/*.csv") == ["memory:///erblock-test/people.csv"]
        got = read_table("memory://erblock-test/people.csv").compute()
        assert got["pid"].tolist() == people["pid"].tolist()
    finally:
        fs.rm("/erblock-test", recursive=True)


@pytest.mark.parametrize(("path", "message"), [
    ("nothing-*.csv", "no file matches"),
    ("missing.parquet", "no such file or directory"),
])
def test_missing_inputs_are_named(tmp_path, path, message):
    with pytest.raises(FileNotFoundError, match=message) as info:
        read_table(str(tmp_path / path))
    assert path in str(info.value)


def test_unknown_protocol_and_format():
    with pytest.raises(ValueError, match="'nope://x.csv'"):
        read_table("nope://x.csv")
    with pytest.raises(ValueError, match="pass --format"):
        guess_format("data.json")
    assert guess_format("data/part-*.csv.gz") == "csv"
    assert guess_format("s3://bucket/people") == "parquet"


def test_rename_columns_checks_names(people):
    import dask.dataframe as dd

    ddf = dd.from_pandas(people, npartitions=2)
    out = rename_columns(ddf, {"name": "first"}, "S")
    assert "name" in out.columns and "first" not in out.columns
    with pytest.raises(KeyError, match="column 'given' is not in S"):
        rename_columns(ddf, {"name": "given"}, "S")
    with pytest.raises(ValueError, match="already has a column 'surname'"):
        rename_columns(ddf, {"surname": "first"}, "S")


def test_parse_pairs_and_id():
    assert parse_pairs(["a=b", "c=d"], "--map") == {"a": "b", "c": "d"}
    with pytest.raises(ValueError, match="expected LEFT=RIGHT"):
        parse_pairs(["ab"], "--map")
    assert parse_id("id", 1) == ("id", "id")
    assert parse_id("rid=sid", 2) == ("rid", "sid")
    with pytest.raises(ValueError, match="two inputs"):
        parse_id("rid=sid", 1)


def test_cli_dedupe_on_a_glob_of_csv_parts(people, tmp_path, capsys):
    _write_parts(people, tmp_path / "in", "csv")
    out = tmp_path / "out"
    assert main(["dedupe", str(tmp_path / "in" / "part-*.csv"), "--key", "surname",
                 "--compare", "first:jaro", "--id", "pid", "-o", str(out), "--quiet"]) == 0
    pairs = pd.read_parquet(out)
    assert set(pair_list(pairs)) == brute_dedupe(people.set_index("pid"), ["surname"])


def test_cli_link_with_column_mapping_and_different_ids(people, tmp_path, capsys):
    """S names its columns differently: --map for the key and a comparison, --id L=R."""
    r = people.iloc[:8]
    s = people.iloc[4:].rename(columns={"pid": "sid", "surname": "family", "first": "given"})
    r.to_csv(tmp_path / "r.csv", index=False)
    s.to_parquet(tmp_path / "s.parquet", index=False)
    out = tmp_path / "links"
    code = main(["link", str(tmp_path / "r.csv"), str(tmp_path / "s.parquet"),
                 "--map", "surname=family", "--id", "pid=sid", "--key", "surname",
                 "--compare", "first=given:jaro_winkler", "--compare", "surname:exact",
                 "-o", str(out), "--quiet"])
    assert code == 0
    pairs = pd.read_parquet(out)
    expected = brute_link(r.set_index("pid"),
                          s.rename(columns={"family": "surname"}).set_index("sid"), ["surname"])
    assert set(pair_list(pairs)) == expected
    assert set(pairs["right_id"]) <= set(s["sid"])
    assert pairs["surname_exact"].eq(1.0).all()


@pytest.mark.parametrize(("argv", "message"), [
    (["--map", "surname"], "expected LEFT=RIGHT"),
    (["--map", "surname=nope"], "column 'nope' is not in S"),
])
def test_cli_bad_mapping_exits_2(people, tmp_path, capsys, argv, message):
    people.to_csv(tmp_path / "p.csv", index=False)
    p = str(tmp_path / "p.csv")
    assert main(["link", p, p, "--key", "surname", "--compare", "first:jaro", "--quiet",
                 *argv]) == 2
    assert message in capsys.readouterr().err


def test_cli_map_refused_for_dedupe(people, tmp_path, capsys):
    people.to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(SystemExit) as exc:  # dedupe has no --map: argparse refuses it
        main(["dedupe", str(tmp_path / "p.csv"), "--key", "surname", "--compare",
              "first:jaro", "--map", "a=b"])
    assert exc.value.code == 2
    assert "--map" in capsys.readouterr().err


def test_cli_repeated_ids_exit_2_naming_the_problem(people, tmp_path, capsys):
    people.assign(pid="same").to_csv(tmp_path / "p.csv", index=False)
    assert main(["dedupe", str(tmp_path / "p.csv"), "--key", "surname", "--compare",
                 "first:jaro", "--id", "pid", "--quiet"]) == 2
    assert "record ids are not unique" in capsys.readouterr().err
