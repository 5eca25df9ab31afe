"""Route one prepared partition: one row per (record, reduce task that needs it).

The plan decides (:meth:`erblock.balancing.plan.Plan.route`, by its placements); this
module turns the decision into rows with ``UNIT``, ``TASK`` and ``RANK``, and, for the
direct routing of :mod:`erblock.engine.execute`, splits them by reduce task.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...balancing.placement import RecordKeys
from ...balancing.plan import Plan
from ..schema import BLOCK, PART, RANK, RID, SRC, TASK, UNIT


def record_keys(records: pd.DataFrame) -> RecordKeys:
    """What the plan's placements need of prepared records."""
    return RecordKeys(records[BLOCK].to_numpy().astype(np.int64),
                      records[SRC].to_numpy().astype(np.int64),
                      records[PART].to_numpy().astype(np.int64),
                      records[RID].to_numpy().astype(np.int64))


def record_units(records: pd.DataFrame, plan: Plan) -> np.ndarray:
    """Unit id of every prepared record (−1 when its block has no match task)."""
    return plan.locate(record_keys(records))[0]


def route_partition(records: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One row per (record, reduce task that needs it), with ``TASK``, ``UNIT`` and
    ``RANK`` (rank in the block for ranked units, else −1)."""
    return _routed(records, *plan.route(record_keys(records)))


def _routed(records: pd.DataFrame, rows: np.ndarray, unit: np.ndarray, task: np.ndarray,
            rank: np.ndarray) -> pd.DataFrame:
    """``records.iloc[rows]`` (a new 0..n index) with ``UNIT``, ``TASK`` and ``RANK``:
    one take of every column, the three added in the same frame."""
    out = records.iloc[rows].set_axis(pd.RangeIndex(len(rows)))
    return pd.concat([out, pd.DataFrame({UNIT: unit, TASK: task, RANK: rank},
                                        index=out.index)], axis=1)


def split_by_task(records: pd.DataFrame, plan: Plan) -> dict[int, pd.DataFrame]:
    """The routed rows of a partition, by reduce task (tasks without rows are absent)."""
    rows, unit, task, rank = plan.route(record_keys(records))
    if len(rows) == 0:
        return {}
    order = np.argsort(task, kind="stable")  # one take of the records, in task order
    rows, unit, task, rank = rows[order], unit[order], task[order], rank[order]
    routed = _routed(records, rows, unit, task, rank)
    starts = np.flatnonzero(np.r_[True, task[1:] != task[:-1]])
    ends = np.r_[starts[1:], len(task)]
    return {int(task[a]): routed.iloc[a:b] for a, b in zip(starts, ends)}


def piece(split: dict[int, pd.DataFrame], task: int) -> pd.DataFrame | None:
    """Reduce task ``task``'s rows of one routed partition (None when it has none)."""
    return split.get(task)
