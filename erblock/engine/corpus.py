"""Statistics of the whole input that a comparison needs before comparing (driver side).

``text`` with ``weighting="idf"`` weighs every token by its inverse document frequency
in the whole input, both sources of a link
(:class:`~erblock.matchers.methods.text.TokenWeights`). Every prepared partition counts
the records holding each token (:func:`~erblock.engine.tasks.prepare.corpus_counts`); only
the counts travel, they are summed here, and the job's comparisons get the weights, so
every reduce task, the random pairs of the model and the encoded path compare with the
same numbers whatever the partitioning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import dask
import numpy as np

from ..matchers.methods.text import TokenWeights
from .inputs import Source
from .job import Job
from .local import Executor
from .tasks.prepare import corpus_counts


def with_corpus(client: Executor, job: Job, sources: Sequence[Source]) -> Job:
    """``job`` whose comparisons that need corpus statistics carry them."""
    wanted = [c for c in job.comparisons if c.needs_corpus]
    if not wanted:
        return job
    todo = [dask.delayed(corpus_counts, pure=False)(part, job.value_column_of(c), c)
            for c in wanted for s in sources for part in s.parts]
    results = iter(client.compute(todo, sync=True))
    weights = {}
    for c in wanted:
        got = [next(results) for s in sources for _ in s.parts]
        items = np.concatenate([g[0] for g in got]) if got else np.zeros(0, np.int64)
        counts = np.concatenate([g[1] for g in got]) if got else np.zeros(0, np.int64)
        uniq, inv = np.unique(items, return_inverse=True)
        df = np.bincount(inv.ravel(), weights=counts, minlength=len(uniq)).astype(np.int64)
        weights[c.name] = TokenWeights.from_counts(uniq, df, sum(g[2] for g in got))
    comparisons = tuple(c.with_corpus(weights[c.name]) if c.name in weights else c
                        for c in job.comparisons)
    return dataclasses.replace(job, comparisons=comparisons)
