"""PairRange (Kolb et al., ICDE 2012; the "PR" baseline of paper 003 ch. IV), pure numpy.

All pairs of all blocks get one global number: blocks in the order of their ids, and
inside a block row-major over the upper triangle (dedupe: pair (i, j), i < j, of the
records at ranks i and j) or the rectangle (link: R rank i × S rank j, index
``i·n_S + j``). ``[0, P)`` is cut into ``r`` ranges of ``⌊P/r⌋`` or ``⌈P/r⌉`` pairs, one
per reduce task, so the loads differ by at most one comparison: imbalance ≈ 1 by
construction.

A block inside one range is an ordinary whole-block task. A block cut by range bounds
becomes one ``RANGE`` match task per range it meets, with its pair interval
``[lo, hi)`` in block coordinates. Its records are *ranked*: the rank of a record is its
position in the block in input order (records of the block in earlier partitions, from
the BDM, plus its rank inside its partition), and a record goes exactly to the ranges
that hold one of its pairs. For a range these are a union of at most two rank intervals
(:func:`range_intervals`), so every cut block is split into a few segments of ranks with
the same target tasks (:class:`~erblock.balancing.plan.Ranked`). The comparer rebuilds
the range's row bands from the ranks (:func:`range_bands`) and computes only those
pairs: the first and the last (partial) rows with their column intervals, the full rows
between as one block of rows.

The pair arithmetic is in :mod:`erblock.balancing.ranges`; records find their segment by
:class:`~erblock.balancing.placement.RankedUnits`.

Invariants (tests/test_pairrange.py): every within-block pair is computed exactly once;
``loads`` equal the comparisons performed; no record is sent to a task that does not use
it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bdm import BDM, SRC_R, SRC_S, block_comparisons
from ..placement import RankedUnits, WholeUnits
from ..plan import (
    RANGE,
    RECTANGLE,
    TRIANGLE,
    WHOLE,
    Details,
    MatchTasks,
    Plan,
    UnitBuilder,
    check_n_tasks,
)
from ..ranges import range_intervals
from .base import NoOptions, Strategy


@dataclass(frozen=True)
class PairRangeDetails(Details):
    cut_blocks: int
    range: float


def range_bounds(total: int, r: int) -> np.ndarray:
    """``r + 1`` bounds ``⌊t·P/r⌋`` of the pair ranges (exact integer arithmetic)."""
    return np.array([t * int(total) // r for t in range(r + 1)], dtype=np.int64)


class _RankedBuilder:
    """Collects ranked units (cut blocks), their partition offsets and segments."""

    def __init__(self) -> None:
        self.unit: list[int] = []
        self.n: list[int] = []
        self.offsets: list[tuple[np.ndarray, np.ndarray]] = []
        self.segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, unit: int, n: int, parts: np.ndarray, counts: np.ndarray,
            intervals: list[tuple[int, int, int]]) -> None:
        """Unit of ``n`` records in ``parts`` (with ``counts``); ``intervals`` (a, b, task)."""
        self.unit.append(unit)
        self.n.append(n)
        self.offsets.append((parts, np.cumsum(counts) - counts))
        a = np.array([iv[0] for iv in intervals], dtype=np.int64)
        b = np.array([iv[1] for iv in intervals], dtype=np.int64)
        t = np.array([iv[2] for iv in intervals], dtype=np.int64)
        starts = np.unique(np.concatenate([[0], a, b]))
        starts = starts[starts < n]
        first = np.searchsorted(starts, a, side="left")
        last = np.searchsorted(starts, b, side="left")  # segments starting before b
        reps = last - first
        seg = np.repeat(first, reps) + (np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps,
                                                                           reps))
        task = np.repeat(t, reps)
        width = int(t.max()) + 1 if len(t) else 1
        key = np.unique(seg * width + task)  # distinct (segment, task), sorted
        self.segments.append((starts, key // width, key % width))

    def build(self) -> RankedUnits:
        g = len(self.unit)
        seg_counts = np.array([len(s[0]) for s in self.segments], dtype=np.int64)
        seg_indptr = np.zeros(g + 1, dtype=np.int64)
        np.cumsum(seg_counts, out=seg_indptr[1:])
        seg_start = (np.concatenate([s[0] for s in self.segments]) if g
                     else np.zeros(0, np.int64))
        seg_ids, targets = [], []
        for k, (_, seg, task) in enumerate(self.segments):
            seg_ids.append(seg + seg_indptr[k])
            targets.append(task)
        seg_all = np.concatenate(seg_ids) if g else np.zeros(0, np.int64)
        tgt_all = np.concatenate(targets) if g else np.zeros(0, np.int64)
        tgt_indptr = np.zeros(len(seg_start) + 1, dtype=np.int64)
        np.cumsum(np.bincount(seg_all, minlength=len(seg_start)), out=tgt_indptr[1:])
        off_group = np.concatenate([np.full(len(p), k, dtype=np.int64)
                                    for k, (p, _) in enumerate(self.offsets)]) if g else \
            np.zeros(0, np.int64)
        off_part = (np.concatenate([p for p, _ in self.offsets]) if g
                    else np.zeros(0, np.int64))
        offset = (np.concatenate([o for _, o in self.offsets]) if g
                  else np.zeros(0, np.int64))
        return RankedUnits(np.array(self.unit, dtype=np.int64), np.array(self.n, dtype=np.int64),
                      off_group, off_part.astype(np.int64), offset.astype(np.int64),
                      seg_indptr, seg_start.astype(np.int64), tgt_indptr, tgt_all)


def plan_pairrange(bdm: BDM, r: int, options: NoOptions | None = None) -> Plan:
    """PairRange: ``r`` equal ranges of the globally numbered pairs (see the module doc)."""
    check_n_tasks(r)
    blocks, n_r, n_s = bdm.block_sizes()
    comps = block_comparisons(n_r, n_s, bdm.link)
    keep = comps > 0
    blocks, n_r, n_s, comps = blocks[keep], n_r[keep], n_s[keep], comps[keep]
    ends = np.cumsum(comps)
    starts = ends - comps
    total = int(ends[-1]) if len(ends) else 0
    bounds = range_bounds(total, r)
    t_first = np.searchsorted(bounds, starts, side="right") - 1
    t_last = np.searchsorted(bounds, ends - 1, side="right") - 1
    whole = t_first == t_last

    builder = UnitBuilder()
    if bdm.link:
        ur = builder.add_units(blocks[whole], SRC_R, WHOLE, WHOLE, n_r[whole])
        us = builder.add_units(blocks[whole], SRC_S, WHOLE, WHOLE, n_s[whole])
        builder.add_tasks(RECTANGLE, ur, us, comps[whole])
    else:
        ur = builder.add_units(blocks[whole], SRC_R, WHOLE, WHOLE, n_r[whole])
        builder.add_tasks(TRIANGLE, ur, ur, comps[whole])
    whole_tasks = t_first[whole]

    ranked = _RankedBuilder()
    rt: list[list[int]] = []  # kind, left, right, comparisons, reduce task, lo, hi
    cut = np.flatnonzero(~whole)
    for k in cut.tolist():
        blk, nr, ns = int(blocks[k]), int(n_r[k]), int(n_s[k])
        g0, g1 = int(starts[k]), int(ends[k])
        u_r = int(builder.add_units(blk, SRC_R, WHOLE, WHOLE, nr)[0])
        u_s = int(builder.add_units(blk, SRC_S, WHOLE, WHOLE, ns)[0]) if bdm.link else u_r
        iv_r: list[tuple[int, int, int]] = []
        iv_s: list[tuple[int, int, int]] = []
        for task in range(int(t_first[k]), int(t_last[k]) + 1):
            lo = max(int(bounds[task]), g0) - g0
            hi = min(int(bounds[task + 1]), g1) - g0
            if hi <= lo:
                continue
            rt.append([RANGE, u_r, u_s, hi - lo, task, lo, hi])
            left, right = range_intervals(nr, ns, bdm.link, lo, hi)
            iv_r += [(a, b, task) for a, b in left]
            iv_s += [(a, b, task) for a, b in right]
        # BDM rows are sorted by (block, src, part): this block's rows are one slice
        lo_row = int(np.searchsorted(bdm.block, blk, side="left"))
        hi_row = int(np.searchsorted(bdm.block, blk, side="right"))
        rows = slice(lo_row, hi_row)
        for src, unit, n, iv in ((SRC_R, u_r, nr, iv_r), (SRC_S, u_s, ns, iv_s)):
            if src == SRC_S and not bdm.link:
                continue
            sel = bdm.src[rows] == src
            ranked.add(unit, n, bdm.part[rows][sel], bdm.count[rows][sel], iv)

    units, t = builder.build()
    range_rows = np.array(rt, dtype=np.int64).reshape(-1, 7).T
    kind = np.concatenate([t[0], range_rows[0]])
    match = MatchTasks(
        kind=kind,
        left=np.concatenate([t[1], range_rows[1]]),
        right=np.concatenate([t[2], range_rows[2]]),
        comparisons=np.concatenate([t[3], range_rows[3]]),
        reduce_task=np.concatenate([whole_tasks, range_rows[4]]).astype(np.int64),
        lo=np.concatenate([np.zeros(t.shape[1], np.int64), range_rows[5]]),
        hi=np.concatenate([t[3], range_rows[6]]),
    )
    details = PairRangeDetails(cut_blocks=len(cut), range=total / r if r else 0.0)
    return Plan("pairrange", r, bdm.link, units, match, bdm.n_records,
                (WholeUnits.of(units, WHOLE), ranked.build()), details)


STRATEGY = Strategy(
    name="pairrange",
    summary="cut the globally numbered pairs into r equal ranges (imbalance about 1)",
    profile="bdm",
    plan=plan_pairrange,
    splits_blocks=True,
)
