"""Dates an input writes in the other order of an ambiguous writing, throughout (driver side).

Eight digits are read day first by default, slashes month first, dashes day first
(:mod:`erblock.blocking.date_parsing`), and the other order where the default fails. An
input whose column is written the other way throughout (``MMDDYYYY`` registers) had
every date with a day up to 12 read with day and month swapped (a warning said so): its
``date`` keys missed those records' blocks and its ``date`` comparisons saw a swap.
Before any key is made, every partition of each input counts, for each column a
``date`` key or comparison reads by the defaults (no ``format=``), the values only the
other order of a writing reads and those only the default reads; summed over the input,
a column with at least ``PREFER_MIN`` of the first and ``PREFER_RATIO`` times as many
as of the second is read in the other order: its values that order reads are rewritten
``YYYY-MM-DD`` in that input's partitions, so every key and comparison reads them
alike. A column of both writings, or a few typos read the other way, keeps the
defaults (and the warning). Counts add up over partitions, so the decision does not
depend on how an input is partitioned. The run report lists what was read so
(``settings["dates_read"]``). The counting is one more pass over the inputs that have
such columns (each partition's distinct values parsed once; a Dask input read from
files is read once more).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dask

from ..blocking.date_parsing import READINGS, preferred_orders
from ..blocking.dates import unformatted_date_keys
from .job import Job
from .local import Executor
from .tasks.dates import date_order_counts, with_dates_read

_rank = {other: i for i, (_, other) in enumerate(READINGS)}

#: per input, the columns read in other orders and those orders' formats
Read = list[dict[str, tuple[str, ...]]]


def date_columns(job: Job, src: int) -> list[str]:
    """The columns of input ``src`` that a ``date`` key or comparison reads by the default
    formats (no ``format=``)."""
    cols = [(c.right_column or c.column) if src == 1 else c.column for c in job.comparisons
            if c.method == "date" and dict(c.options).get("format") is None]
    cols += [k.column for k in unformatted_date_keys(job.keys)]
    return list(dict.fromkeys(cols))


def orders_read(counts: Iterable[Mapping[str, Sequence[tuple[str, int, int, int]]]]
                ) -> dict[str, tuple[str, ...]]:
    """Per column, the other orders it is read in (module doc), from the
    :func:`~.tasks.dates.date_order_counts` of every partition of one input (summed
    here, so the decision does not depend on the partitioning); columns read by the
    defaults are left out."""
    summed: dict[tuple[str, str], list[int]] = {}
    for part in counts:
        for c, found in part.items():
            for other, *n in found:
                got = summed.setdefault((c, other), [0, 0, 0])
                got[:] = [a + b for a, b in zip(got, n)]
    prefer: dict[str, tuple[str, ...]] = {}
    for (c, other), n in sorted(summed.items(), key=lambda kv: (kv[0][0], _rank[kv[0][1]])):
        if preferred_orders([(other, *n)]):  # in READINGS' order, whatever the partitions
            prefer[c] = (*prefer.get(c, ()), other)
    return prefer


def read_orders(client: Executor, job: Job, raws: Sequence[Any]) -> tuple[list[Any], Read]:
    """``raws`` (:class:`.inputs.Raw`) with the columns written in another order
    throughout read so (module doc), and, per input, those columns and orders."""
    cols = [[c for c in date_columns(job, s) if c in raw.meta.columns]
            for s, raw in enumerate(raws)]
    todo = [dask.delayed(date_order_counts, pure=False)(p, cols[s])
            for s, raw in enumerate(raws) if cols[s] for p in raw.parts]
    counts = iter(client.compute(todo, sync=True) if todo else [])
    read: Read = [orders_read(next(counts) for _ in raw.parts) if cols[s] else {}
                  for s, raw in enumerate(raws)]
    out = [raw if not prefer else dataclasses.replace(
        raw, parts=[dask.delayed(with_dates_read, pure=False)(p, prefer) for p in raw.parts],
        meta=with_dates_read(raw.meta, prefer)) for raw, prefer in zip(raws, read)]
    return out, read
