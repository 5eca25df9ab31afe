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

from ..blocking.pruning import Pruned, purge_threshold
from .inputs import Source, hold
from .job import Job
from .local import Executor
from .schema import PASS
from .tasks.prune import block_counts, comparisons_of, describe, prune_partition


def _counts(client: Executor, sources: Sequence[Source], passes: list[int],
            link: bool) -> dict[int, pd.DataFrame]:
    """Comparisons and records per block of every pruned pass, in one pass over the
    input."""
    todo = [dask.delayed(block_counts, pure=False)(part, passes)
            for s in sources for part in s.parts]
    frames = [f for f in client.compute(todo, sync=True) if len(f)]
    counts = pd.concat(frames, ignore_index=True) if frames else None
    return {p: comparisons_of(counts[counts[PASS] == p] if counts is not None
                              else counts, link) for p in passes}


def prune_sources(client: Executor, job: Job, sources: Sequence[Source], persist: bool
                  ) -> tuple[list[Source], list[dict[str, Any]]]:
    """The sources with the pruned passes' rows dropped, and what each pass lost."""
    asked = {p: k for p, k in enumerate(job.keys) if isinstance(k, Pruned)}
    if not asked:
        return list(sources), []
    report = []
    before = _counts(client, sources, list(asked), job.link)
    # "auto" purging: the limit follows from the blocks' sizes, known only now
    specs = {p: spec.resolved(purge_threshold(before[p]["comparisons"].to_numpy(),
                                              before[p]["records"].to_numpy(), spec.smoothing))
             if spec.max_comparisons == "auto" else spec for p, spec in asked.items()}
    shipped = {p: (spec, before[p]["comparisons"]) for p, spec in specs.items()}
    [held] = hold(client, [shipped])  # rebuilt if a worker dies, unlike scattered data
    out = []
    for s in sources:
        parts = [dask.delayed(prune_partition, pure=False)(part, held) for part in s.parts]
        if persist:
            parts = client.compute(parts, optimize_graph=False)
        out.append(dataclasses.replace(s, parts=list(parts)))
    after = _counts(client, out, list(specs), job.link)
    for p, spec in specs.items():
        limit = spec.max_comparisons
        report.append({"pass": p, **describe(before[p]["comparisons"], after[p]["comparisons"],
                                             asked[p], None if limit is None else int(limit))})
    return out, report
