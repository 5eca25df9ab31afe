"""Input frames as lists of partitions, and their prepared records (driver side).

A pandas frame is cut into contiguous pieces (input order is kept: record ids follow
it) and handed to the cluster as tasks it can rerun (:func:`hold`); a Dask frame's
partitions are taken as they are, *before* any column projection, so every pass numbers partitions alike (``read_parquet``
merges partitions when fewer columns are read). Each partition is then prepared once
(:func:`erblock.engine.tasks.prepare.prepare_partition`) and, by default, kept in cluster
memory so profile and route do not compute keys twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.dataframe.utils import has_known_categories

from ..blocking.neighbourhood import SortedNeighbourhood, SortOrder, order_starts, value_counts
from .dateorders import read_orders
from .job import Job
from .local import Executor, LocalClient
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
    #: columns read in the other order of an ambiguous date writing (:mod:`.dateorders`)
    dates_read: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def n_parts(self) -> int:
        return len(self.parts)


def hold(client: Executor, objects: list[Any]) -> list[Any]:
    """Futures of client-side objects that the cluster can rebuild.

    Each object becomes a task whose run spec *is* the object (the scheduler keeps it),
    not scattered data: a scattered key whose only copy dies with a worker is forgotten
    with everything that depends on it (and the active memory manager removes the extra
    copies ``broadcast``/``replicate`` make), while a task is simply run again. Hold the
    futures for as long as the run needs the objects.
    """
    return list(client.compute([dask.delayed(o, pure=False, traverse=False) for o in objects],
                               optimize_graph=False))


def move_sources(cluster: Executor, local: LocalClient, sources: Sequence[Source]
                 ) -> list[Source]:
    """Sources prepared in this process (:mod:`.local`), held by ``cluster`` instead: a job
    that turned out too big to stay here moves before it is planned."""
    return [dataclasses.replace(s, parts=hold(cluster, local.gather(s.parts)), held=())
            for s in sources]


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
    """The dtype the ids come out in: as they went in, except a categorical whose
    categories Dask does not know (a parquet file written from pandas with a categorical
    index or id, read by ``dd.read_parquet``): its meta holds a placeholder category
    (text, whatever the ids are), which every id would be cast to NaN against, so its
    ids come out as the values they are (object: numbers stay numbers)."""
    dtype = meta[id_column].dtype if id_column else meta.index.dtype
    if isinstance(dtype, pd.CategoricalDtype) and not has_known_categories(
            meta[id_column] if id_column else meta.index):
        return np.dtype(object)
    return dtype


@dataclass
class Raw:
    """One input frame as partitions the cluster can compute (before preparation)."""

    parts: list[Any]
    meta: pd.DataFrame
    held: tuple[Any, ...] = ()


def split_source(client: Executor, df: Any, job: Job, threads: int) -> Raw:
    """The partitions of one input: a Dask frame's own, a pandas frame's contiguous pieces."""
    if isinstance(df, dd.DataFrame):
        return Raw(list(df.to_delayed()), df._meta)
    n_parts = job.options.npartitions or default_npartitions(
        len(df), threads, job.options.sample is not None)
    held = hold(client, split_frame(df, n_parts))
    return Raw(list(held), df.iloc[:0], tuple(held))


def sort_orders(client: Executor, job: Job, raws: Sequence[Raw]) -> list[dict[int, Any]]:
    """For every input partition, the order tables of the job's sorted-neighbourhood
    passes: ``[source][partition] -> {pass: starts}`` (empty dicts when there are none).
    Every partition counts its sort values on the cluster; only the counts travel."""
    ordered = [p for p, k in enumerate(job.keys) if k.ordered]
    out: list[dict[int, Any]] = [dict() for _ in raws]
    if not ordered:
        return out
    keys = {p: cast(SortedNeighbourhood, job.keys[p]) for p in ordered}
    numeric = {p: k.by_number([raw.meta[c].dtype for raw in raws for c in k.columns])
               for p, k in keys.items()}
    todo = [dask.delayed(value_counts, pure=False)(part, keys[p], numeric[p])
            for raw in raws for part in raw.parts for p in ordered]
    counts = iter(client.compute(todo, sync=True))
    per_pass: dict[int, dict[tuple[int, int], Any]] = {p: {} for p in ordered}
    for src, raw in enumerate(raws):
        for i in range(len(raw.parts)):
            for p in ordered:
                per_pass[p][(src, i)] = next(counts)
    starts = {p: order_starts(c) for p, c in per_pass.items()}
    for src, raw in enumerate(raws):
        out[src] = {i: {p: SortOrder(starts[p][(src, i)], numeric[p]) for p in ordered}
                    for i in range(len(raw.parts))}
    return out


def prepare_sources(client: Executor, frames: Sequence[Any], job: Job, threads: int,
                    persist: bool) -> list[Source]:
    """Every input of ``job`` prepared (dates written in another order throughout read so,
    :mod:`.dateorders`; sorted-neighbourhood passes ordered first)."""
    raws, read = read_orders(client, job, [split_source(client, f, job, threads)
                                           for f in frames])
    orders = sort_orders(client, job, raws)
    sources = [dataclasses.replace(prepare_source(client, raw, job, src, threads, False,
                                                  orders[src]), dates_read=read[src])
               for src, raw in enumerate(raws)]
    if not persist:
        return sources
    # one call for every source: this process (erblock.engine.local) computes at once
    held = iter(client.compute([p for s in sources for p in s.parts], optimize_graph=False))
    return [dataclasses.replace(s, parts=[next(held) for _ in s.parts]) for s in sources]


def prepare_source(client: Executor, df: Any, job: Job, src: int, threads: int,
                   persist: bool, orders: dict[int, Any] | None = None) -> Source:
    """Partitions of input ``src`` prepared for ``job`` (see the module doc); ``df`` is a
    frame or its :class:`Raw` partitions, ``orders`` the partitions' order tables."""
    keys, id_column = job.keys, job.id_columns[src]
    value_columns = job.value_columns_for(src)
    raw = df if isinstance(df, Raw) else split_source(client, df, job, threads)
    orders = orders or {}
    meta = prepare_partition(raw.meta, part=0, src=src, keys=keys,
                             value_columns=value_columns, id_column=id_column,
                             orders=_empty_orders(job))
    # the fixed arguments bound once: Dask would walk the key specs (dataclasses) of
    # every partition's call looking for collections
    prepare = partial(prepare_partition, src=src, keys=keys, value_columns=value_columns,
                      id_column=id_column)
    parts = [dask.delayed(prepare, pure=False)(p, part=i, orders=orders.get(i))
             for i, p in enumerate(raw.parts)]
    if persist:
        parts = client.compute(parts, optimize_graph=False)
    return Source(src, parts, _id_dtype(raw.meta, id_column), meta, raw.held)


def _empty_orders(job: Job) -> dict[int, Any]:
    return {p: SortOrder(pd.Series([], dtype="int64"), False) for p, k in enumerate(job.keys)
            if k.ordered}
