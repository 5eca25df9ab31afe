"""Reading inputs for the command line: CSV or parquet files, globs, fsspec URLs.

Files are read lazily with Dask. A CSV read by Dask numbers rows from 0 in every
partition, so without an id column every record gets a global row number as its id
(partition offset + row), computed from the partition lengths.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

FORMATS = ("csv", "parquet")


def guess_format(path: str) -> str:
    p = path.lower().rstrip("/")
    for suffix in (".csv.gz", ".csv.bz2", ".csv", ".tsv", ".txt"):
        if p.endswith(suffix):
            return "csv"
    if p.endswith((".parquet", ".pq", ".parq")) or "." not in p.rsplit("/", 1)[-1]:
        return "parquet"
    raise ValueError(
        f"cannot tell the format of {path!r} from its name; pass --format csv or --format parquet"
    )


def read_table(path: str, fmt: str | None = None, *, encoding: str | None = None,
               id_column: str | None = None, blocksize: str = "64MB") -> dd.DataFrame:
    """A Dask frame of ``path`` whose index is a unique record id.

    CSV columns are read as text (numbers are parsed by the comparisons that need them),
    so dtypes never differ between partitions.
    """
    fmt = fmt or guess_format(path)
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {FORMATS}, got {fmt!r}")
    try:
        if fmt == "csv":
            ddf = dd.read_csv(path, dtype=str, blocksize=blocksize,
                              encoding=encoding or "utf-8", keep_default_na=True)
        else:
            ddf = dd.read_parquet(path)
    except (FileNotFoundError, OSError) as exc:
        raise FileNotFoundError(f"input {path!r} could not be read: {exc}") from exc
    if id_column is not None:
        if id_column not in ddf.columns:
            raise KeyError(f"--id column {id_column!r} is not in {path!r} "
                           f"(columns: {list(ddf.columns)})")
        return _index_by(ddf, id_column)
    return with_row_ids(ddf)


def _index_by(ddf: dd.DataFrame, column: str) -> dd.DataFrame:
    """Use ``column`` as the index, partition by partition (no shuffle, order kept)."""
    meta = ddf._meta.set_index(column)
    return ddf.map_partitions(lambda p: p.set_index(column), meta=meta,
                              align_dataframes=False, clear_divisions=True)


def with_row_ids(ddf: dd.DataFrame) -> dd.DataFrame:
    """Index every record by its global row number (input order across partitions)."""
    lengths = ddf.map_partitions(len, meta=("n", "int64")).compute().tolist() \
        if ddf.npartitions > 1 else [None]
    offsets = np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64) \
        if ddf.npartitions > 1 else np.zeros(1, dtype=np.int64)

    def _number(part: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
        i = partition_info["number"] if partition_info else 0
        start = int(offsets[i])
        part = part.copy()
        part.index = pd.RangeIndex(start, start + len(part), name="row")
        return part

    meta = ddf._meta.copy()
    meta.index = pd.RangeIndex(0, 0, name="row")
    return ddf.map_partitions(_number, meta=meta, align_dataframes=False,
                              clear_divisions=True)
