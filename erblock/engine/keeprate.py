"""The share of compared pairs a threshold keeps, measured before the run (driver side).

The memory model needs to know how many pairs a thresholded run keeps; a fixed guess
(1 %) is wrong by orders of magnitude for a low threshold. Before the run this module
draws a deterministic sample of records from every prepared partition (all their key
passes, :func:`~erblock.engine.tasks.prepare.probe_rows`), forms the candidate pairs
*within* the sample (records sharing a block, each pair once over the passes), compares
them with the job's comparisons and threshold, and returns the kept share with an upper
confidence bound. Records are sampled uniformly, so the sample's pairs are a uniform
sample of the candidate pairs; about ``TARGET_PAIRS`` of them are compared (a
millisecond-scale job), never more than ``MAX_PAIRS``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pandas as pd

from ..blocking.keys import NULL_BLOCK
from .inputs import Source
from .job import Job
from .schema import BLOCK, RID
from .tasks.mean import mean_score
from .tasks.prepare import probe_rows

TARGET_PAIRS = 4000  #: candidate pairs the sample aims at
MAX_PAIRS = 200_000  #: compared at most (a random subset beyond)
MAX_RECORDS = 20_000  #: sampled records at most per source
MIN_PAIRS = 200  #: fewer sampled pairs measure nothing


@dataclass(frozen=True)
class KeepRate:
    """Kept share of the sampled candidate pairs, its upper bound, the pairs compared."""

    rate: float
    upper: float
    pairs: int

    def to_dict(self) -> dict[str, Any]:
        return {"keep_rate": self.rate, "keep_rate_upper": self.upper,
                "keep_rate_pairs": self.pairs}


def _fraction(total_comparisons: int, records: int) -> float:
    if total_comparisons <= 0 or records <= 0:
        return 0.0
    f = math.sqrt(TARGET_PAIRS / total_comparisons)
    return float(min(1.0, f, MAX_RECORDS / records))


def _pairs(left: pd.DataFrame, right: pd.DataFrame | None) -> pd.DataFrame:
    """Rows of candidate pairs within the sample (positions into the de-duplicated record
    frames), each pair once whatever the passes it shares."""
    a = left[left[BLOCK] != NULL_BLOCK][[RID, BLOCK]]
    b = a if right is None else right[right[BLOCK] != NULL_BLOCK][[RID, BLOCK]]
    m = a.merge(b, on=BLOCK, suffixes=("_l", "_r"))
    if right is None:
        m = m[m[f"{RID}_l"] < m[f"{RID}_r"]]
    return m[[f"{RID}_l", f"{RID}_r"]].drop_duplicates()


def measure(client: Any, job: Job, sources: Sequence[Source], total_comparisons: int,
            records: int, seed: int = 0) -> KeepRate | None:
    """The kept share of ``job``'s candidate pairs under its threshold (None when the
    job has no threshold or the sample holds too few pairs to say)."""
    if job.threshold is None:
        return None
    f = _fraction(total_comparisons, records)
    if f <= 0:
        return None
    frames = [dask.delayed(pd.concat)([dask.delayed(probe_rows)(p, f, seed) for p in s.parts],
                                      ignore_index=True) for s in sources]
    got = client.compute(frames, sync=True)
    left, right = got[0], (got[1] if job.link else None)
    pairs = _pairs(left, right)
    if len(pairs) < MIN_PAIRS:
        return None
    if len(pairs) > MAX_PAIRS:
        pairs = pairs.sample(MAX_PAIRS, random_state=seed)
    lrec = left.drop_duplicates(RID).set_index(RID)
    rrec = lrec if right is None else right.drop_duplicates(RID).set_index(RID)
    li = lrec.index.get_indexer(pairs[f"{RID}_l"])
    rj = rrec.index.get_indexer(pairs[f"{RID}_r"])
    sims = []
    for c in job.comparisons:
        col = job.value_column_of(c)
        sims.append(c.aligned(c.prepare(lrec[col]), c.prepare(rrec[col]), li, rj))
    weights = np.array([c.weight for c in job.comparisons], dtype=np.float32)
    score = mean_score(sims, weights)
    kept = int(np.count_nonzero(score >= np.float32(job.threshold)))
    n = len(pairs)
    rate = kept / n
    # upper bound: Wilson score interval at z = 3 (the model should not under-count)
    z = 3.0
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return KeepRate(rate, min(1.0, centre + half), n)
