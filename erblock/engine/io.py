"""Reading inputs for the command line: CSV or parquet files, globs, fsspec URLs.

Everything is read lazily with Dask's readers, so a path may be a single file, a
directory of parquet or CSV parts (its ``*.csv`` files in name order), a glob
(``data/part-*.csv``) or any fsspec URL
(``file:///data/*.parquet``, ``s3://bucket/people/``, ``gcs://…``: the protocol's fsspec
package must be installed where the files are read, i.e. on the workers). Globs are
expanded once here, so a pattern that matches nothing fails at once with the pattern
named, not as an empty result.

A CSV read by Dask numbers rows from 0 in every partition, so without an id column every
record gets a global row number as its id (partition offset + row), computed from the
partition lengths on the cluster that will run the job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

FORMATS = ("csv", "parquet")

_CSV_SUFFIXES = (".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".csv", ".tsv", ".txt")
_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


def guess_format(path: str) -> str:
    """``"csv"`` or ``"parquet"`` from the name (a glob's pattern counts; a name without a
    suffix is taken for a parquet directory)."""
    p = path.lower().rstrip("/")
    if p.endswith(_CSV_SUFFIXES):
        return "csv"
    if p.endswith(_PARQUET_SUFFIXES) or "." not in p.rsplit("/", 1)[-1]:
        return "parquet"
    raise ValueError(
        f"cannot tell the format of {path!r} from its name; pass --format csv or --format parquet"
    )


def expand_paths(path: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The files (or parquet directory) ``path`` names, with globs expanded through fsspec.

    Raises ``FileNotFoundError`` naming ``path`` when nothing exists there.
    """
    from fsspec.core import url_to_fs

    try:
        fs, root = url_to_fs(path, **dict(storage_options or {}))
    except (ImportError, ValueError) as exc:  # unknown protocol, or its package missing
        raise ValueError(f"input {path!r}: {exc}") from exc
    protocol = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    if any(ch in root for ch in "*?["):
        found = sorted(fs.glob(root))
    else:
        found = [root] if fs.exists(root) else []
    if not found:
        what = "no file matches" if any(ch in root for ch in "*?[") else "no such file or directory"
        raise FileNotFoundError(f"input {path!r} could not be read: {what}")
    if protocol in ("file", "local"):
        return found
    return [fs.unstrip_protocol(f) for f in found]


def read_table(path: str, fmt: str | None = None, *, encoding: str | None = None,
               id_column: str | None = None, blocksize: str | int = "64MB",
               storage_options: Mapping[str, Any] | None = None,
               client: Any = None, sep: str = ",",
               na_values: Sequence[str] | None = None) -> dd.DataFrame:
    """A Dask frame of ``path`` whose index is a unique record id.

    ``path`` is a file, a parquet directory, a glob or an fsspec URL (see the module
    docstring). CSV columns are read as text (numbers are parsed by the comparisons that
    need them), so dtypes never differ between partitions; ``sep`` separates their fields.
    Missing are empty cells and, with ``na_values`` None, pandas' default markers (``NA``,
    ``N/A``, ``NULL``, ``nan``, ``None``, …); a list replaces those markers (``[]``: only
    empty cells, so Namibia's ``NA`` stays a value). With ``id_column`` that column
    becomes the index (its uniqueness is checked during the run's profile pass); without
    it, a parquet input written with its pandas index (``df.to_parquet()`` with a named or
    non-default index) keeps that index as the id, and other records are numbered in
    input order; ``id_column`` may also name such a stored index (one side of a link
    written with its id as a column, the other with it as the index). ``client``, when
    given, computes the partition lengths for that numbering on its cluster (where the
    files may be the only ones to exist).
    """
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"--format must be one of {FORMATS}, got {fmt!r}")
    files = expand_paths(path, storage_options)
    opts = dict(storage_options or {})
    files, fmt = _directory_parts(path, files, fmt, opts)
    fmt = fmt or guess_format(path)
    stored: list[Any] = []  # a parquet input's stored pandas index
    try:
        if fmt == "csv":
            markers = {} if na_values is None else {
                "keep_default_na": False, "na_values": sorted({"", *na_values})}
            # a compressed file is read whole (it cannot be cut into blocks: Dask warns
            # and asks for blocksize=None, which no command-line user can give)
            whole = any(f.lower().endswith(_COMPRESSED) for f in files)
            ddf = dd.read_csv(files, dtype=str, blocksize=None if whole else blocksize,
                              sep=sep, encoding=encoding or "utf-8",
                              storage_options=opts or None,
                              **({"keep_default_na": True} | markers))
        else:
            stored, names, n_parts = _index_columns(files, opts)  # the index pandas wrote
            if len(stored) > 1 and id_column is None:
                raise _multi_index(path, len(stored))
            # with --id, a MultiIndex's named levels are columns like the others
            levels = {"index": False, "columns": [
                n for n in names if not n.startswith("__index_level_")]} \
                if len(stored) > 1 else {"index": False} if _ranged(stored) else {}
            ddf = dd.read_parquet(files if len(files) > 1 else files[0],
                                  storage_options=opts or None, **levels)
    except (FileNotFoundError, OSError) as exc:
        raise FileNotFoundError(f"input {path!r} could not be read: {exc}") from exc
    except _MultiIndexError:
        raise
    except ValueError as exc:  # an empty CSV, a file that is not parquet, …
        if isinstance(exc, pd.errors.EmptyDataError) or "No columns to parse" in str(exc):
            what = f"input {path!r}" + ("" if len(files) == 1 else
                                        f": its first part {files[0]!r}")
            raise ValueError(f"{what} is empty: a CSV input needs a header line naming "
                             "its columns") from None
        hint = ("; give its encoding (encoding=, --encoding on the command line)"
                if isinstance(exc, UnicodeError) else "")
        detail = str(exc).rpartition("Original Message:")[2].strip()  # Dask's wrapping
        raise ValueError(f"input {path!r} could not be read as {fmt}: {detail}{hint}"
                         ) from exc
    if fmt == "csv":
        _refuse_repeated_names(path, _header(files[0], encoding or "utf-8", sep, opts))
        _same_headers(files, encoding or "utf-8", sep, opts)
    if id_column is None and fmt == "parquet" and _stored_index(stored):
        return ddf  # the index pandas wrote (``df.to_parquet()``) is the record id
    ranged = _ranged(stored)
    if ranged is not None and (id_column is None or (
            id_column == ranged.get("name") and id_column not in ddf.columns)):
        return _range_ids(ddf, ranged, path, max(len(files), n_parts), client)
    if id_column is not None:
        if id_column not in ddf.columns and fmt == "parquet" and ddf.index.name == id_column:
            return ddf  # --id names the index the file was written with (``df.to_parquet()``)
        if id_column not in ddf.columns:
            raise KeyError(f"--id column {id_column!r} is not in {path!r} "
                           f"(columns: {list(ddf.columns)})")
        return _index_by(ddf, id_column)
    return with_row_ids(ddf, client=client)


def rename_columns(ddf: dd.DataFrame, mapping: Mapping[str, str], name: str) -> dd.DataFrame:
    """Rename columns of ``ddf`` by ``{new_name: existing_name}``.

    The CLI's ``--map LEFT=RIGHT`` uses this on S so that keys and comparisons can name
    R's columns. Fails naming the column when an existing one is missing or a new name
    would collide with a column that is not renamed.
    """
    cols = [str(c) for c in ddf.columns]
    renames: dict[str, str] = {}
    for new, old in mapping.items():
        if old not in cols:
            raise KeyError(f"--map {new}={old}: column {old!r} is not in {name} (columns: {cols})")
        renames[old] = new
    clash = [new for old, new in renames.items()
             if new in cols and new not in renames and new != old]
    if clash:
        raise ValueError(
            f"--map: {name} already has a column {clash[0]!r} that is not renamed; "
            f"map it too or choose another name")
    return ddf.rename(columns=renames) if renames else ddf


#: endings of compressed files, which are read whole (one partition per file)
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zip")
#: what a directory of CSV parts holds (its other files, e.g. a README, are not read)
CSV_PARTS = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")


def _header(file: str, encoding: str, sep: str, opts: Mapping[str, Any]) -> list[str]:
    """The column names a CSV file's first line holds, as written (pandas renames a
    repeated one ``name.1``, which cannot be told from a column really named so)."""
    import csv

    import fsspec

    with fsspec.open(file, "rt", encoding=encoding, compression="infer", **dict(opts)) as fh:
        return next(csv.reader([fh.readline()], delimiter=sep), [])  # type: ignore[arg-type]


def _same_headers(files: list[str], encoding: str, sep: str,
                  opts: Mapping[str, Any]) -> None:
    """Refuse CSV parts whose headers differ, naming the first such file (Dask would fail
    later, in a task, without saying which)."""
    if len(files) < 2:
        return
    first: list[str] | None = None
    for f in files:
        head = _header(f, encoding, sep, opts)
        if first is None:
            first = head
        elif head != first:
            raise ValueError(f"CSV part {f!r} has the columns {head}, but {files[0]!r} has "
                             f"{first}: every part needs the same header")


def _refuse_repeated_names(path: str, header: list[str]) -> None:
    """A CSV header naming a column twice (as written: ``city,city.1`` is two names):
    pandas renames the second ``name.1``, and a key or comparison on ``name`` would
    silently read the first."""
    seen: set[str] = set()
    for c in header:
        if c in seen and c:
            raise ValueError(f"input {path!r}: its header names the column {c!r} more than "
                             f"once (pandas would read the second as {c + '.1'!r}); rename "
                             "them")
        seen.add(c)


def _directory_parts(path: str, files: list[str], fmt: str | None,
                     storage_options: Mapping[str, Any]) -> tuple[list[str], str | None]:
    """A directory of CSV parts (``*.csv``, compressed alike) is read as those files in
    name order; one of parquet parts (or of hive partitions, ``key=value/``) stays a
    parquet dataset. Other inputs are returned as they are."""
    from fsspec.core import url_to_fs

    if len(files) != 1:
        return files, fmt
    fs, root = url_to_fs(files[0], **dict(storage_options))
    if not fs.isdir(root) or fmt == "parquet":
        return files, fmt
    entries = [e for e in fs.ls(root, detail=True)  # the top level only, listed once
               if not e["name"].rstrip("/").rsplit("/", 1)[-1].startswith(("_", "."))]
    is_dir = {e["name"]: e.get("type") == "directory" for e in entries}
    csvs = sorted(n for n, d in is_dir.items() if not d and n.lower().endswith(CSV_PARTS))
    parquet = [n for n, d in is_dir.items()
               if (not d and n.lower().endswith(_PARQUET_SUFFIXES))
               or (d and "=" in n.rstrip("/").rsplit("/", 1)[-1])]
    if fmt is None and not csvs:
        if parquet or not entries:
            return files, "parquet"
        raise ValueError(f"input {path!r} holds neither CSV (*.csv) nor parquet files; "
                         "give a glob of its parts (e.g. 'DIR/*.tsv') and --format")
    if fmt is None and parquet:
        raise ValueError(f"input {path!r} holds both CSV and parquet files; give a glob of "
                         "one kind (e.g. 'DIR/*.csv') or --format")
    if not csvs:
        raise FileNotFoundError(f"input {path!r} could not be read: no CSV file in the "
                                f"directory (names ending {', '.join(CSV_PARTS)})")
    kinds = {next(s for s in sorted(CSV_PARTS, key=len, reverse=True)
                  if n.lower().endswith(s)) for n in csvs}
    if len(kinds) > 1:  # Dask infers the compression from the first file alone
        raise ValueError(f"input {path!r} holds CSV files compressed differently "
                         f"({', '.join(sorted(kinds))}); give a glob of one kind, e.g. "
                         f"'{path.rstrip('/')}/*{sorted(kinds)[0]}'")
    local = files[0] == root
    return [n if local else fs.unstrip_protocol(n) for n in csvs], "csv"


def directory_format(path: str, fmt: str | None = None) -> str | None:
    """How the local directory ``path`` is read as an input: ``'csv'`` (its top-level CSV
    parts) or ``'parquet'`` (a dataset: every part below it); None when neither."""
    try:
        return _directory_parts(path, [path], fmt, {})[1]
    except (ValueError, OSError):
        return None


class _MultiIndexError(ValueError):
    pass


def _multi_index(path: str, levels: int) -> ValueError:
    return _MultiIndexError(
        f"input {path!r} was written with a pandas MultiIndex ({levels} levels) as its "
        "index, and a record id is one value: give --id COLUMN (the id column of a file "
        "written with df.reset_index().to_parquet(...))")


def _ranged(stored: list[Any]) -> dict[str, Any] | None:
    """The RangeIndex a parquet input was written with, when it is one other than the
    default (named, or not starting at 0 by 1): pandas keeps it as metadata, not a
    column, and Dask cannot read it back as the index."""
    if len(stored) != 1 or not isinstance(stored[0], dict) or stored[0].get("kind") != "range":
        return None
    c = stored[0]
    named = c.get("name") is not None or c.get("start", 0) != 0 or c.get("step", 1) != 1
    return c if named else None


def _range_ids(ddf: dd.DataFrame, ranged: Mapping[str, Any], path: str, n_files: int,
               client: Any) -> dd.DataFrame:
    """``ddf`` indexed by the RangeIndex it was written with: start + step × row."""
    start, step = int(ranged.get("start", 0)), int(ranged.get("step", 1))
    if n_files > 1:  # each part's range restarts, or is its own: no ids of one input
        raise ValueError(f"input {path!r}: its {n_files} parts were each written with a "
                         "RangeIndex (its ids, kept only as metadata), which do not number "
                         "one input; write the index as a column (df.reset_index()) and "
                         "give its name as the id (--id)")
    return with_row_ids(ddf, client=client, start=start, step=step, name=ranged.get("name"))


def _stored_index(stored: list[Any]) -> bool:
    """True when the parquet data carries a pandas index stored as a column (any index
    but a RangeIndex, see :func:`_ranged`): dask reads it back as the index."""
    return any(isinstance(c, str) for c in stored)  # a RangeIndex is metadata only


def _index_columns(files: list[str], storage_options: Mapping[str, Any]
                   ) -> tuple[list[Any], list[str], int]:
    """The pandas index a parquet input was written with: its ``index_columns`` metadata
    (a column name per stored level, or a range's description), its column names (the
    first part's, then the hive partition keys of its path, ``city=x/``) and how many
    parts a directory holds (1 for a file)."""
    import pyarrow.parquet as pq
    from fsspec.core import url_to_fs

    fs, root = url_to_fs(files[0], **dict(storage_options))
    hive: list[str] = []
    n_parts = 1
    if fs.isdir(root):
        parts = sorted(f for f in fs.find(root) if f.endswith(_PARQUET_SUFFIXES))
        if not parts:
            return [], [], 0
        hive = [seg.split("=", 1)[0] for seg in
                parts[0][len(root.rstrip("/")) + 1:].split("/")[:-1] if "=" in seg]
        root, n_parts = parts[0], len(parts)
    with fs.open(root, "rb") as fh:
        schema = pq.read_schema(fh)
    return (list((schema.pandas_metadata or {}).get("index_columns", [])),
            list(schema.names) + [k for k in hive if k not in schema.names], n_parts)


def _index_by(ddf: dd.DataFrame, column: str) -> dd.DataFrame:
    """Use ``column`` as the index, partition by partition (no shuffle, order kept)."""
    meta = ddf._meta.set_index(column)

    def _set(part: pd.DataFrame) -> pd.DataFrame:
        return part.set_index(column)

    return ddf.map_partitions(_set, meta=meta, align_dataframes=False, clear_divisions=True)


def with_row_ids(ddf: dd.DataFrame, client: Any = None, *, start: int = 0, step: int = 1,
                 name: str | None = "row") -> dd.DataFrame:
    """Index every record by its global row number (input order across partitions), or
    by ``start + step × row`` (a RangeIndex a parquet file was written with)."""
    if ddf.npartitions > 1:
        sizes = ddf.map_partitions(len, meta=("n", "int64"))
        lengths = (client.compute(sizes, sync=True) if client is not None
                   else sizes.compute()).tolist()
        offsets = np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64)
    else:
        offsets = np.zeros(1, dtype=np.int64)

    def _number(part: pd.DataFrame, partition_info: dict[str, Any] | None = None
                ) -> pd.DataFrame:
        i = partition_info["number"] if partition_info else 0
        first = start + step * int(offsets[i])
        part = part.copy()
        part.index = pd.RangeIndex(first, first + step * len(part), step, name=name)
        return part

    meta = ddf._meta.copy()
    meta.index = pd.RangeIndex(0, 0, name=name)
    return ddf.map_partitions(_number, meta=meta, align_dataframes=False,
                              clear_divisions=True)
