"""Run one reduce task: its match tasks over whole sub-block products, score, threshold.

Inside a reduce task, records are grouped by unit (sorted by unit, then record id) and
every match task of the plan is run over its unit slices, in row chunks so memory stays
bounded (``cell_budget`` matrix cells per chunk and comparison):

* ``TRIANGLE``: pairs i < j of one unit (in input order, so ``left`` precedes ``right``);
  a row chunk [a, b) only compares against columns from a + 1 on.
* ``RECTANGLE``: left unit × right unit; for dedupe each pair is oriented so the record
  that comes first in the input is ``left``.

* ``RANGE`` (PairRange): the pairs ``[lo, hi)`` of one block in row-major order; the
  records carry their rank in the block (``_erb_rank``), the range is cut into row bands
  (:func:`~erblock.balancing.pairrange.range_bands`: the partial first and last rows with
  their column intervals, the full rows between), and only those cells are computed.

Two masks keep the pair set exact when a unit mixes blocks or passes: records are only
compared when their block ids are equal, and with several key passes a pair is compared
in the first pass it agrees on, never again. ``comparisons`` counts the pairs that pass
these masks; the planner counts every block's pairs, so with several passes or
multi-valued keys it predicts more (the difference is reported as the repeated pairs
skipped; for cell strategies the planner only estimates). Records are sorted by (unit, block, record id), so in a unit that mixes
blocks (a sketch cell) each block is a contiguous run: such tasks go run by run, and
consecutive small runs are batched into one matrix as long as at least half of its
cells are useful (the block mask drops the rest), so neither many tiny blocks nor the
cross-block cells of large ones cost much.

``score`` is the weighted mean of the non-missing similarities (NaN when all are missing);
``threshold`` keeps pairs with ``score >= threshold``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...balancing.plan import RANGE, TRIANGLE, Plan
from ...balancing.ranges import range_bands
from ...balancing.units import SMALL_CELLS, small_match_tasks
from ...matchers.comparisons import Comparison
from ..job import DEFAULT_CELL_BUDGET
from .encoded import ENCODED_CHUNK_CELLS, BlockCodes, block_encoding, pushdown, slab_rows
from .join import (
    JOIN_MAX_SHARE,
    JOIN_MIN_CELLS,
    join_candidates,
    ruling_comparisons,
    run_aligned,
    run_join,
)
from .mean import cell_positions, mean_score
from .sides import Collector, Side, TaskCounter, assemble, pair_table, structure_chunks
from .write import PartWriter

SMALL_BATCH = 1 << 10  # a batch of block runs may waste this many cells whatever its size
# match tasks with at most SMALL_CELLS cells (the planner's cost model knows the same
# bound) go through one aligned-pairs batch per reduce task (cpdist, ~0.2 µs a pair)
# instead of a cdist call each (~0.5 ms fixed per call)
#: rows of a triangle chunk at most: a chunk of rows [a, b) is computed against every
#: column after a, so (b − a)²/2 of its cells lie left of the diagonal and are wasted; a
#: block in one chunk computed twice its pairs. 128 rows keep that waste to 64 cells a
#: row (~1 % of a 5,000-record block) for one more kernel call per 128 rows.
TRIANGLE_ROWS = 128


def _run_block(left: Side, right: Side, l0: int, l1: int, r0: int, r1: int, triangle: bool,
               comparisons: Sequence[Comparison], weights: np.ndarray, threshold: float | None,
               out: Collector, cell_budget: int, slab: bool = False) -> int:
    """Compare rows [l0, l1) of ``left`` with [r0, r1) of ``right``; return comparisons.
    ``slab``: already a row slab of a bigger block (not split again)."""
    ncols_total = r1 - r0
    if ncols_total <= 0 or l1 <= l0:
        return 0
    if not comparisons:  # candidates only: the pairs the structure allows, nothing computed
        return _pairs_only(left, right, l0, l1, r0, r1, triangle, out, cell_budget)
    joined = _try_join(left, right, l0, l1, r0, r1, triangle, comparisons, weights,
                       threshold, out, cell_budget)
    if joined is not None:
        return joined
    rows = None if slab or left.encode_mode == "never" else slab_rows(
        left.encoded, right.encoded, l0, l1, r0, r1, left.equal_codes, cell_budget)
    if rows is not None:  # too many distinct pairs for one matrix: slabs of rows
        # a triangle's slab meets only the columns after its first row
        return sum(_run_block(left, right, a, min(a + rows, l1), max(r0, a) if triangle
                              else r0, r1, triangle, comparisons, weights, threshold, out,
                              cell_budget, slab=True)
                   for a in range(l0, l1, rows))
    done = 0
    single = len(comparisons) == 1
    cutoff = threshold if (single and threshold is not None and threshold > 0) else None
    enc = block_encoding(left.encoded, right.encoded, l0, l1, r0, r1,
                         triangle and left is right, comparisons, cutoff,
                         always=left.encode_mode == "always", cell_budget=cell_budget,
                         equal=left.equal_codes)
    n_direct = sum(e is None for e in enc)
    if n_direct == 0:  # lookups and sums only: chunks that stay in cache go faster
        cell_budget = max(1, min(cell_budget // 4, ENCODED_CHUNK_CELLS))
    chunk = max(1, cell_budget // max(ncols_total, 1))
    if triangle:
        chunk = min(chunk, TRIANGLE_ROWS)
    # cells: similarities computed per comparison (mean over the comparisons): the pair
    # cells of the direct ones, the distinct-value cells of the encoded ones
    out.cells += sum(e.matrix.size for e in enc if isinstance(e, BlockCodes)) // len(comparisons)
    push = pushdown(enc, weights, threshold) if n_direct == 0 else None
    for a, b, c0, li, rj, mask in structure_chunks(left, right, l0, l1, r0, r1, triangle,
                                                   chunk):
        done += int(mask.sum()) if mask is not None else (b - a) * (r1 - c0)
        out.kernel_calls += 1
        if push is not None:  # threshold pushdown (encoded.py): identical pairs and values
            ri, cj, sims, score = push.pairs(a - l0, b - l0, c0 - r0, r1 - r0, mask)
            keep = np.flatnonzero(score >= np.float32(threshold))
            out.keep(li[ri[keep]], rj[cj[keep]], [v[keep] for v in sims], score[keep])
            continue
        mats = [c.matrix(lp.take(slice(a, b)), rp.take(slice(c0, r1)), cutoff) if e is None
                else e.gather(a - l0, b - l0, c0 - r0, r1 - r0)
                for c, lp, rp, e in zip(comparisons, left.values, right.values, enc)]
        score = mean_score(mats, weights) if not single else mats[0]
        if threshold is not None:
            sel = score >= np.float32(threshold)
            if mask is not None:
                sel &= mask
        else:
            sel = mask  # None: every cell is kept
        out.cells += score.size * n_direct // len(comparisons)
        keep_cells(out, li, rj, sel, mats, score)
    return done


def _pairs_only(left: Side, right: Side, l0: int, l1: int, r0: int, r1: int, triangle: bool,
                out: Collector, cell_budget: int) -> int:
    """Candidates only (no comparison): keep every pair of rows [l0, l1) × [r0, r1) that
    the block and compared-once rules allow, chunk by chunk as the compare would."""
    chunk = max(1, cell_budget // (r1 - r0))
    if triangle:
        chunk = min(chunk, TRIANGLE_ROWS)
    done = 0
    for a, b, c0, li, rj, mask in structure_chunks(left, right, l0, l1, r0, r1, triangle,
                                                   chunk):
        if mask is None:
            done += (b - a) * (r1 - c0)
            out.keep(np.repeat(li, r1 - c0), np.tile(rj, b - a), [], None)
            continue
        _, ri, cj = cell_positions(mask)
        done += len(ri)
        out.keep(li[ri], rj[cj], [], None)
    return done


def _try_join(left: Side, right: Side, l0: int, l1: int, r0: int, r1: int, triangle: bool,
              comparisons: Sequence[Comparison], weights: np.ndarray, threshold: float | None,
              out: Collector, cell_budget: int) -> int | None:
    """The block as an equality join (:mod:`.join`) when an exact comparison rules out
    the pairs it disagrees on and the join is the cheaper way; else None."""
    ruling = ruling_comparisons(comparisons, weights, threshold, left.equal_codes)
    if not ruling or threshold is None:
        return None
    nl, nr = l1 - l0, r1 - r0
    cells = nl * (nl - 1) // 2 + nl * (nr - nl) if triangle else nl * nr
    if cells < JOIN_MIN_CELLS:  # a small dense block is as fast as sorting for a join
        return None
    best = min((join_candidates(left.equal_codes[k][0][l0:l1],  # type: ignore[index]
                                left.equal_codes[k][1][r0:r1]), k)  # type: ignore[index]
               for k in ruling)
    if (best[0] // 2 if triangle else best[0]) > JOIN_MAX_SHARE * cells:
        return None
    return run_join(left, right, l0, l1, r0, r1, triangle, best[1], comparisons, weights,
                    threshold, out, cell_budget, also=[k for k in ruling if k != best[1]])


def keep_cells(out: Collector, li: np.ndarray, rj: np.ndarray, sel: np.ndarray | None,
               mats: Sequence[np.ndarray], score: np.ndarray) -> None:
    """Hand the chunk's cells where ``sel`` is true (all of them if None) to ``out``.

    Row-major flat positions, row numbers by repeating each row's count and 1-D takes:
    several times faster than ``divmod`` and 2-D fancy indexing (which a chunk that keeps
    every pair, all pairs written, spends most of its time on)."""
    n_r, n_c = score.shape
    if sel is None:
        out.keep(np.repeat(li, n_c), np.tile(rj, n_r), [m.ravel() for m in mats],
                 score.ravel())
        return
    flat, ri, cj = cell_positions(sel)
    out.keep(li[ri], rj[cj], [m.ravel().take(flat) for m in mats], score.ravel().take(flat))


def _run_units(left: Side, right: Side, l0: int, l1: int, r0: int, r1: int, triangle: bool,
               comparisons: Sequence[Comparison], weights: np.ndarray, threshold: float | None,
               out: Collector, cell_budget: int) -> int:
    """A TRIANGLE or RECTANGLE match task over unit slices, block run by block run when
    the units mix blocks; return comparisons."""
    if l1 <= l0 or r1 <= r0:
        return 0
    args = (comparisons, weights, threshold, out, cell_budget)
    b = left.block[l0]
    if left.block[l1 - 1] == b and right.block[r0] == b and right.block[r1 - 1] == b:
        return _run_block(left, right, l0, l1, r0, r1, triangle, *args)
    lb = left.block[l0:l1]
    ls = l0 + np.flatnonzero(np.r_[True, lb[1:] != lb[:-1]])
    le = np.r_[ls[1:], l1]
    if triangle:
        cs, ce = ls, le
        useful = (le - ls) * (le - ls - 1) // 2
    else:
        rb = right.block[r0:r1]
        blocks = left.block[ls]
        cs = r0 + np.searchsorted(rb, blocks, side="left")
        ce = r0 + np.searchsorted(rb, blocks, side="right")
        useful = (le - ls) * (ce - cs)
    done = 0
    cur: list[int] | None = None  # rows [a, b), columns [c, d), useful cells
    for k in np.flatnonzero(useful > 0).tolist():
        if cur is not None:
            rows, cols = int(le[k]) - cur[0], int(ce[k]) - cur[2]
            area = rows * (rows - 1) // 2 if triangle else rows * cols
            use = cur[4] + int(useful[k])
            if area <= cell_budget and area <= 2 * use + SMALL_BATCH:
                cur[1], cur[3], cur[4] = int(le[k]), int(ce[k]), use
                continue
            done += _run_block(left, right, cur[0], cur[1], cur[2], cur[3], triangle, *args)
        cur = [int(ls[k]), int(le[k]), int(cs[k]), int(ce[k]), int(useful[k])]
    if cur is not None:
        done += _run_block(left, right, cur[0], cur[1], cur[2], cur[3], triangle, *args)
    return done


def _pair_index(tri: np.ndarray, l0: np.ndarray, nl: np.ndarray, r0: np.ndarray,
                nr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column positions of every pair of many small match tasks, task after task
    in row-major order: triangles i < j of [l0, l0 + nl), rectangles [l0, +nl) × [r0, +nr).
    Vectorised over tasks: one row entry per task row, then one entry per cell."""
    rows = nl.astype(np.int64)
    task_of_row = np.repeat(np.arange(len(nl)), rows)
    i = np.arange(len(task_of_row)) - np.repeat(np.cumsum(rows) - rows, rows)  # row in task
    t = tri[task_of_row]
    # a triangle's row i meets the columns after it; a rectangle's every column
    width = np.where(t, rows[task_of_row] - 1 - i, nr[task_of_row]).astype(np.int64)
    first = np.where(t, l0[task_of_row] + i + 1, r0[task_of_row])  # its first column
    n = int(width.sum())
    j = np.arange(n) - np.repeat(np.cumsum(width) - width, width)  # column within the row
    return np.repeat(l0[task_of_row] + i, width), np.repeat(first, width) + j


def _run_small(left: Side, right: Side, l0: np.ndarray, l1: np.ndarray, r0: np.ndarray,
               r1: np.ndarray, tri: np.ndarray, comparisons: Sequence[Comparison],
               weights: np.ndarray, threshold: float | None, out: Collector,
               cell_budget: int) -> int:
    """All small TRIANGLE/RECTANGLE tasks of a reduce task (row and column slices, and
    whether each is a triangle), batched by ``cell_budget``."""
    nl, nr = l1 - l0, r1 - r0
    cells = np.where(tri, nl * (nl - 1) // 2, nl * nr)
    live = np.flatnonzero(cells > 0)
    batch = (np.cumsum(cells[live]) - 1) // max(cell_budget, 1)
    cut = np.flatnonzero(np.diff(batch)) + 1
    done = 0
    for sel in np.split(live, cut) if len(live) else []:
        li, rj = _pair_index(tri[sel], l0[sel], nl[sel], r0[sel], nr[sel])
        done += run_aligned(left, right, li, rj, comparisons, weights, threshold, out)
    return done


def _rank_slice(side: Side, s0: int, s1: int, a: int, b: int, task: int) -> tuple[int, int]:
    """Positions of the records of ranks [a, b) in the slice [s0, s1) (all must be there)."""
    rk = side.rank[s0:s1]
    p0 = s0 + int(np.searchsorted(rk, a, side="left"))
    p1 = s0 + int(np.searchsorted(rk, b, side="left"))
    if p1 - p0 != b - a:
        raise RuntimeError(
            f"reduce task {task} holds {p1 - p0} of the {b - a} records of ranks [{a}, {b}) "
            "its pair range needs: routing and plan disagree"
        )
    return p0, p1


def _run_range(task: int, plan: Plan, mt: int, left: Side, right: Side, link: bool,
               comparisons: Sequence[Comparison], weights: np.ndarray, threshold: float | None,
               out: Collector, cell_budget: int) -> int:
    """The pairs [lo, hi) of one block (PairRange), band by band; return comparisons."""
    m, units = plan.match, plan.units
    lu, ru = int(m.left[mt]), int(m.right[mt])
    l0, l1 = left.slice_of(lu)
    r0, r1 = right.slice_of(ru) if link else (l0, l1)
    n_r, n_s = int(units.size[lu]), int(units.size[ru])
    args = (comparisons, weights, threshold, out, cell_budget)
    done = 0
    assert m.lo is not None and m.hi is not None  # RANGE tasks carry their pair range
    for a, b, c, d, tri in range_bands(n_r, n_s, link, int(m.lo[mt]), int(m.hi[mt])):
        p0, p1 = _rank_slice(left, l0, l1, a, b, task)
        q0, q1 = _rank_slice(right, r0, r1, c, d, task)
        if tri:  # full rows: columns from each row's successor to the end of the block
            done += _run_block(left, left, p0, p1, p0, q1, True, *args)
        else:
            done += _run_block(left, right, p0, p1, q0, q1, False, *args)
    return done


def compare_task(
    task: int,
    plan: Plan,
    left_records: pd.DataFrame,
    right_records: pd.DataFrame | None,
    comparisons: Sequence[Comparison],
    col_index: dict[str, int],
    n_passes: int,
    threshold: float | None,
    id_dtypes: tuple[object, object],
    cell_budget: int = DEFAULT_CELL_BUDGET,
    pair_values: Sequence[Comparison] = (),
    pass_of_pair: bool = False,
    small_task: int = SMALL_CELLS,
    encode: str = "auto",
    sink: PartWriter | None = None,
    windows: Sequence[int] = (),
) -> tuple[pd.DataFrame, TaskCounter]:
    """All pairs of reduce task ``task``: a pairs frame and what it took.

    ``pair_values``: comparisons whose left value each pair carries (for a scoring model,
    :func:`erblock.matchers.scoring.base.value_column`); ``pass_of_pair``: add the key
    pass that found each pair; ``small_task``: match tasks of at most this many cells are
    batched as aligned pairs (−1: every task through the matrix kernel); ``encode``:
    compare distinct values once per block (:mod:`.encoded`): ``"auto"``, ``"always"``,
    ``"never"``; ``sink``: write the kept pairs there in row groups of ``sink.rows`` as
    they gather (bounded memory at any keep rate) and return an empty frame;
    ``windows``: the window of every sorted-neighbourhood pass (0 for other passes).
    No ``comparisons``: the candidate pairs only, nothing computed (``erblock.candidates``).
    """
    start = time.perf_counter()
    stats = TaskCounter(task=task)
    left = Side(left_records, comparisons, col_index, n_passes, encode, windows)
    right = left if right_records is None else Side(right_records, comparisons, col_index,
                                                    n_passes, encode, windows)
    left.rules_against(right)
    left.share_codes(right, comparisons)
    stats.records = len(left_records) + (0 if right_records is None else len(right_records))
    weights = np.array([c.weight for c in comparisons], dtype=np.float32)
    out = Collector(len(comparisons))

    def frame(collected: Collector) -> pd.DataFrame:
        return assemble(left, right, collected, comparisons, dedupe=right_records is None,
                        id_dtypes=id_dtypes, pair_values=pair_values, col_index=col_index,
                        pass_of_pair=pass_of_pair)

    def table(collected: Collector) -> Any:  # for the writer: arrow, else a frame
        t = pair_table(left, right, collected, comparisons, right_records is None, id_dtypes,
                       pass_of_pair)
        return frame(collected) if t is None else t

    if sink is not None:  # chunks no larger than a row group: at most two groups held
        cell_budget = min(cell_budget, sink.rows)
        out.flush_rows = sink.rows
        out.on_full = lambda: sink.write(table(out.drain()))
    m = plan.match
    link = right_records is not None
    mts = plan.match_tasks_of(task)
    stats.match_tasks += len(mts)
    kind = m.kind[mts]
    triangle = kind == TRIANGLE
    l0, l1 = left.slices_of(m.left[mts])
    r0, r1 = right.slices_of(m.right[mts])
    r0, r1 = np.where(triangle, l0, r0), np.where(triangle, l1, r1)
    # batched as aligned pairs below
    small = small_match_tasks(kind, l1 - l0, r1 - r0, small_task)
    for k in np.flatnonzero(~small).tolist():  # largest first, as planned
        if kind[k] == RANGE:
            stats.comparisons += _run_range(task, plan, int(mts[k]), left, right, link,
                                            comparisons, weights, threshold, out, cell_budget)
            continue
        tri = bool(triangle[k])
        stats.comparisons += _run_units(left, right if not tri else left, int(l0[k]),
                                        int(l1[k]), int(r0[k]), int(r1[k]), tri, comparisons,
                                        weights, threshold, out, cell_budget)
    s_ = np.flatnonzero(small)
    done_small = _run_small(left, right, l0[s_], l1[s_], r0[s_], r1[s_], triangle[s_],
                            comparisons, weights, threshold, out, cell_budget)
    stats.comparisons += done_small
    stats.small_comparisons += done_small
    if sink is not None:
        sink.write(table(out))
        pairs = frame(Collector(len(comparisons)))
    else:
        pairs = frame(out)
    stats.pairs = sink.pairs if sink is not None else len(pairs)
    stats.cells, stats.kernel_calls = out.cells, out.kernel_calls
    stats.seconds = time.perf_counter() - start
    return pairs, stats


