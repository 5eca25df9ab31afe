"""Planner-level checks without a cluster (not a test module): synthetic records from a
BDM, the real routing (:func:`erblock.engine.tasks.route.route_partition`) and the real
comparer (:func:`erblock.engine.tasks.compare.compare_task`), against a brute force on
block ids.

What reaches a reduce task and what it computes are exactly what a run on a cluster would
do, only without Dask moving the rows.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from erblock.balancing.bdm import BDM
from erblock.balancing.units import SMALL_CELLS
from erblock.engine.schema import RID_SHIFT
from erblock.engine.tasks.compare import compare_task
from erblock.engine.tasks.route import record_units, route_partition
from erblock.matchers.comparisons import Comparison

EXACT = (Comparison("v", "exact"),)


def records_from_bdm(bdm: BDM, seed: int = 0) -> pd.DataFrame:
    """One prepared record per BDM count, blocks interleaved inside every partition."""
    rng = np.random.default_rng(seed)
    blk = np.repeat(bdm.block, bdm.count)
    part = np.repeat(bdm.part, bdm.count)
    src = np.repeat(bdm.src, bdm.count).astype(np.int8)
    order = np.lexsort((rng.random(len(blk)), part, src))  # shuffle inside (src, part)
    blk, part, src = blk[order], part[order], src[order]
    row = np.zeros(len(blk), dtype=np.int64)
    if len(blk):
        new = np.r_[True, (part[1:] != part[:-1]) | (src[1:] != src[:-1])]
        starts = np.flatnonzero(new)
        row = np.arange(len(blk)) - np.repeat(starts, np.diff(np.r_[starts, len(blk)]))
    rid = (part << RID_SHIFT) + row
    return pd.DataFrame({
        "_erb_id": np.arange(len(blk), dtype=np.int64) + src.astype(np.int64) * 10**9,
        "_erb_rid": rid, "_erb_part": part, "_erb_src": src, "_erb_block": blk,
        "_erb_pass": np.zeros(len(blk), dtype=np.int8),
        "_erb_v0": pd.Series((blk % 3).astype(str), dtype=object),
    })


def route_all(records: pd.DataFrame, plan) -> pd.DataFrame:
    """Route every (source, partition) group as the engine routes a partition."""
    parts = [route_partition(g.reset_index(drop=True), plan)
             for _, g in records.groupby(["_erb_src", "_erb_part"], sort=True)]
    if not parts:
        return records.assign(_erb_unit=np.int64(0), _erb_task=np.int64(0),
                              _erb_rank=np.int64(0)).iloc[:0]
    return pd.concat(parts, ignore_index=True)


def compare_all(plan, routed: pd.DataFrame, cell_budget: int = 1 << 21,
                stats: list | None = None, small_task: int = SMALL_CELLS,
                frames: list | None = None) -> tuple[Counter, np.ndarray]:
    """Run every reduce task's match tasks; (pair multiset, comparisons per reduce task).
    ``stats`` collects what every reduce task counted, ``frames`` its pairs."""
    got: Counter = Counter()
    done = np.zeros(plan.n_tasks, dtype=np.int64)
    by_task = dict(tuple(routed.groupby("_erb_task")))
    empty = routed.iloc[:0]
    for t in range(plan.n_tasks):
        rows = by_task.get(t, empty)
        left = rows[rows["_erb_src"] == 0]
        right = rows[rows["_erb_src"] == 1] if plan.link else None
        if plan.link and right is None:  # pragma: no cover
            right = empty
        pairs, counter = compare_task(t, plan, left, right, EXACT, {"v": 0}, 1, None,
                                      (np.int64, np.int64), cell_budget,
                                      small_task=small_task)
        if frames is not None:
            frames.append(pairs)
        done[t] = counter.comparisons
        if stats is not None:
            stats.append(counter)
        got.update(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist()))
    return got, done


def true_pairs(records: pd.DataFrame, link: bool) -> Counter:
    """Every within-block pair once: (R id, S id) for link, (earlier, later) for dedupe."""
    if link:
        r = records[records["_erb_src"] == 0]
        s = records[records["_erb_src"] == 1]
        m = r.merge(s, on="_erb_block")
    else:
        m = records.merge(records, on="_erb_block")
        m = m[m["_erb_rid_x"] < m["_erb_rid_y"]]
    return Counter(zip(m["_erb_id_x"].tolist(), m["_erb_id_y"].tolist()))


def exact_pairs_and_loads(bdm: BDM, plan, seed: int = 0, cell_budget: int = 1 << 21
                          ) -> tuple[Counter, Counter, np.ndarray]:
    """(pairs computed, true pairs, comparisons per reduce task) of ``plan`` on records
    made from ``bdm``, through the real routing and comparer."""
    records = records_from_bdm(bdm, seed)
    got, done = compare_all(plan, route_all(records, plan), cell_budget)
    return got, true_pairs(records, bdm.link), done


def record_units_all(records: pd.DataFrame, plan) -> np.ndarray:
    """Unit of every record, located partition by partition as the engine does."""
    unit = np.full(len(records), -1, dtype=np.int64)
    for _, g in records.groupby(["_erb_src", "_erb_part"]):
        unit[g.index.to_numpy()] = record_units(g, plan)
    return unit
