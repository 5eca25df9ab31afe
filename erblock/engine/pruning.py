"""Block purging and filtering on the cluster (driver side): see
:mod:`erblock.blocking.pruning` for what is dropped and :mod:`.tasks.prune` for how.

Only passes whose key is a :class:`~erblock.blocking.pruning.Pruned` key are touched; their
blocks are counted over the whole input first (only the counts travel), then every
prepared partition drops its rows, and the counts are taken again for the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import dask
import pandas as pd
from distributed import Client

from ..blocking.pruning import Pruned
from .inputs import Source, hold
from .job import Job
from .tasks.prune import block_counts, comparisons_of, describe, prune_partition


def _counts(client: Client, sources: Sequence[Source], passes: list[int],
            link: bool) -> dict[int, pd.Series]:
    """Comparisons per block of every pruned pass (block ids are mixed with the pass, so
    a block belongs to exactly one pass)."""
    todo = [dask.delayed(block_counts, pure=False)(part, passes)
            for s in sources for part in s.parts]
    frames = [f for f in client.compute(todo, sync=True) if len(f)]
    counts = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {"_erb_block": [], "_erb_src": [], "n": []})
    return {0: comparisons_of(counts, link)}


def prune_sources(client: Client, job: Job, sources: Sequence[Source], persist: bool
                  ) -> tuple[list[Source], list[dict[str, Any]]]:
    """The sources with the pruned passes' rows dropped, and what each pass lost."""
    specs = {p: k for p, k in enumerate(job.keys) if isinstance(k, Pruned)}
    if not specs:
        return list(sources), []
    report = []
    shipped: dict[int, tuple[Pruned, pd.Series]] = {}
    before: dict[int, pd.Series] = {}
    for p, spec in specs.items():
        before[p] = _counts(client, sources, [p], job.link)[0]
        shipped[p] = (spec, before[p])
    [held] = hold(client, [shipped])  # rebuilt if a worker dies, unlike scattered data
    out = []
    for s in sources:
        parts = [dask.delayed(prune_partition, pure=False)(part, held) for part in s.parts]
        if persist:
            parts = client.compute(parts, optimize_graph=False)
        out.append(dataclasses.replace(s, parts=list(parts)))
    for p, spec in specs.items():
        after = _counts(client, out, [p], job.link)[0]
        report.append({"pass": p, **describe(before[p], after, spec)})
    return out, report
