"""Input frames as lists of partitions, and their prepared records (driver side).

A pandas frame is cut into contiguous pieces (input order is kept: record ids follow
it) and handed to the cluster as tasks it can rerun (:func:`hold`); a Dask frame's
partitions are taken as they are, *before* any column projection, so every pass numbers partitions alike (``read_parquet``
merges partitions when fewer columns are read). Each partition is then prepared once
(:func:`erblock.engine.tasks.prepare.prepare_partition`) and, by default, kept in cluster
memory so profile and route do not compute keys twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd
from distributed import Client

from .job import Job
from .tasks.prepare import prepare_partition

SAMPLE_PARTITION_RECORDS = 2000  #: partition size for progressive sampling (pandas input)


@dataclass
class Source:
    """One input of a run: its prepared partitions (Dask futures, or lazy delayed objects
    when not persisted), the dtype of its record ids and an empty prepared frame.

    ``held`` keeps the futures of a pandas input's partitions (:func:`hold`) for as
    long as the run needs them: prepared partitions lost with a worker are recomputed
    from them."""

    src: int
    parts: list[Any]
    id_dtype: object
    meta: pd.DataFrame
    held: tuple[Any, ...] = ()

    @property
    def n_parts(self) -> int:
        return len(self.parts)


def hold(client: Client, objects: list[Any]) -> list[Any]:
    """Futures of client-side objects that the cluster can rebuild.

    Each object becomes a task whose run spec *is* the object (the scheduler keeps it),
    not scattered data: a scattered key whose only copy dies with a worker is forgotten
    with everything that depends on it (and the active memory manager removes the extra
    copies ``broadcast``/``replicate`` make), while a task is simply run again. Hold the
    futures for as long as the run needs the objects.
    """
    return list(client.compute([dask.delayed(o, pure=False, traverse=False) for o in objects],
                               optimize_graph=False))


def default_npartitions(n: int, threads: int, sample: bool) -> int:
    """Partitions of a pandas frame of ``n`` records: about 5,000 records each, at most
    two per worker thread; with ``sample`` (progressive sampling draws whole partitions)
    about 2,000 each, at least 4 per thread, at most 128."""
    if n == 0:
        return 1
    if sample:
        return max(1, min(n, max(4 * threads, min(128, -(-n // SAMPLE_PARTITION_RECORDS)))))
    return max(1, min(2 * threads, -(-n // 5000)))


def split_frame(df: pd.DataFrame, npartitions: int) -> list[pd.DataFrame]:
    """``df`` cut into ``npartitions`` contiguous pieces of nearly equal length."""
    n = len(df)
    k = max(1, min(npartitions, max(n, 1)))
    bounds = [i * n // k for i in range(k + 1)]
    return [df.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _id_dtype(meta: pd.DataFrame, id_column: str | None) -> object:
    return meta[id_column].dtype if id_column else meta.index.dtype


def prepare_source(client: Client, df: Any, job: Job, src: int, threads: int,
                   persist: bool) -> Source:
    """Partitions of input ``src`` prepared for ``job`` (see the module doc)."""
    keys, id_column = job.keys, job.id_columns[src]
    value_columns = job.value_columns_for(src)
    held: tuple[Any, ...] = ()
    if isinstance(df, dd.DataFrame):
        raw: list[Any] = list(df.to_delayed())
        meta_in = df._meta
    else:
        n_parts = job.options.npartitions or default_npartitions(
            len(df), threads, job.options.sample is not None)
        raw = hold(client, split_frame(df, n_parts))
        held = tuple(raw)
        meta_in = df.iloc[:0]
    meta = prepare_partition(meta_in, part=0, src=src, keys=keys, value_columns=value_columns,
                             id_column=id_column)
    parts = [dask.delayed(prepare_partition, pure=False)(
        p, part=i, src=src, keys=keys, value_columns=value_columns, id_column=id_column)
        for i, p in enumerate(raw)]
    if persist:
        parts = client.compute(parts, optimize_graph=False)
    return Source(src, parts, _id_dtype(meta_in, id_column), meta, held)
