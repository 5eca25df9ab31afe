"""Block-based strategies: Basic and BlockSplit (paper 004), pure numpy over a BDM.

**Basic** sends each block to one reduce task chosen by hashing its id: the baseline.
One large block makes one reduce task do most of the work.

**BlockSplit** (004 §3.2) keeps blocks with at most P/r comparisons whole and splits the
larger ones into their per-input-partition sub-blocks; a split block becomes one triangle
task per sub-block and one rectangle task per pair of sub-blocks (for link: one rectangle
per non-empty R-sub-block × S-sub-block). Empty sub-blocks make no task. All match tasks,
largest first, go to the least-loaded reduce task (LPT). When there are few partitions a
sub-block can still hold more than P/r comparisons: such sub-blocks are cut into equal
pieces by record rank inside the partition, so that no match task exceeds P/r unless a
single pair does (P/r < 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .bdm import BDM, SRC_R, SRC_S, block_comparisons
from .cells import plan_cellblock, plan_cellrange
from .packing import Packing, hashed, lpt
from .pairrange import plan_pairrange
from .plan import RECTANGLE, TRIANGLE, WHOLE, Plan, UnitBuilder, Units, make_plan


def piece_sizes(n: int, h: int) -> np.ndarray:
    """Sizes of the ``h`` pieces of a sub-block of ``n`` records (ranks q with q*h//n == p)."""
    p = np.arange(h + 1, dtype=np.int64)
    bounds = -((-p * n) // h)  # ceil(p * n / h)
    return np.diff(bounds)


def _whole_blocks(builder: UnitBuilder, bdm: BDM, blocks: np.ndarray, n_r: np.ndarray,
                  n_s: np.ndarray) -> None:
    """One unit per (block, source) and one match task per block."""
    if bdm.link:
        ur = builder.add_units(blocks, SRC_R, WHOLE, WHOLE, n_r)
        us = builder.add_units(blocks, SRC_S, WHOLE, WHOLE, n_s)
        builder.add_tasks(RECTANGLE, ur, us, n_r * n_s)
    else:
        u = builder.add_units(blocks, SRC_R, WHOLE, WHOLE, n_r)
        builder.add_tasks(TRIANGLE, u, u, block_comparisons(n_r, n_s, False))


def _records_in(bdm: BDM) -> int:
    return bdm.n_records


def plan_basic(bdm: BDM, r: int) -> Plan:
    """Basic: one match task per block, blocks hashed to reduce tasks."""
    _check_r(r)
    blocks, n_r, n_s = bdm.block_sizes()
    comps = block_comparisons(n_r, n_s, bdm.link)
    keep = comps > 0
    builder = UnitBuilder()
    _whole_blocks(builder, bdm, blocks[keep], n_r[keep], n_s[keep])

    def assign(units: Units, t: np.ndarray) -> np.ndarray:
        return hashed(units.block[t[1]], r)

    return make_plan("basic", r, bdm.link, builder, assign, _records_in(bdm))


def _split_dedupe(builder: UnitBuilder, block: int, parts: np.ndarray, counts: np.ndarray,
                  q: float) -> None:
    """Sub-blocks by partition, cut further into pieces of at most s = ⌊√q⌋ records when a
    task involving the sub-block would exceed q; then all triangles and rectangles."""
    s = max(1, math.isqrt(int(q)) if q >= 1 else 1)
    unit_ids: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    order = np.argsort(-counts, kind="stable")
    top = counts[order[0]]
    second = counts[order[1]] if len(counts) > 1 else 0
    for i, (part, n) in enumerate(zip(parts.tolist(), counts.tolist())):
        other = second if i == order[0] else top
        needs = n * (n - 1) // 2 > q or n * other > q
        h = max(1, -(-n // s)) if needs else 1
        sz = piece_sizes(n, h)
        ids = builder.add_units(block, SRC_R, part, np.arange(h), sz)
        builder.add_split(block, SRC_R, part, n, h, int(ids[0]))
        unit_ids.append(ids)
        sizes.append(sz)
    u = np.concatenate(unit_ids)
    sz = np.concatenate(sizes)
    builder.add_tasks(TRIANGLE, u, u, sz * (sz - 1) // 2)
    a, b = np.triu_indices(len(u), k=1)
    builder.add_tasks(RECTANGLE, u[a], u[b], sz[a] * sz[b])


def _link_piece_sizes(a_max: int, b_max: int, q: float) -> tuple[int, int]:
    """Largest R and S piece sizes whose product stays within q (at least one record each)."""
    if a_max * b_max <= q:
        return a_max, b_max
    root = math.isqrt(int(q)) if q >= 1 else 1
    root = max(root, 1)
    if a_max <= root:
        return a_max, max(1, int(q // a_max))
    if b_max <= root:
        return max(1, int(q // b_max)), b_max
    return root, root


def _split_link(builder: UnitBuilder, block: int, parts_r: np.ndarray, counts_r: np.ndarray,
                parts_s: np.ndarray, counts_s: np.ndarray, q: float) -> None:
    """R and S sub-blocks by partition (cut into pieces when needed); one rectangle per
    R piece × S piece."""
    s_r, s_s = _link_piece_sizes(int(counts_r.max()), int(counts_s.max()), q)
    side_units = []
    for src, parts, counts, s in ((SRC_R, parts_r, counts_r, s_r), (SRC_S, parts_s, counts_s, s_s)):
        ids_all, sz_all = [], []
        for part, n in zip(parts.tolist(), counts.tolist()):
            h = max(1, -(-n // s))
            sz = piece_sizes(n, h)
            ids = builder.add_units(block, src, part, np.arange(h), sz)
            builder.add_split(block, src, part, n, h, int(ids[0]))
            ids_all.append(ids)
            sz_all.append(sz)
        side_units.append((np.concatenate(ids_all), np.concatenate(sz_all)))
    (ur, szr), (us, szs) = side_units
    ga, gb = np.meshgrid(np.arange(len(ur)), np.arange(len(us)), indexing="ij")
    a, b = ga.ravel(), gb.ravel()
    builder.add_tasks(RECTANGLE, ur[a], us[b], szr[a] * szs[b])


def plan_blocksplit(bdm: BDM, r: int, packing: Packing = lpt, *,
                    threshold: float | None = None) -> Plan:
    """BlockSplit (paper 004 §3.2) with further splitting of oversized sub-blocks.

    ``threshold`` (default P/r, the paper's rule) is the largest match task: blocks above
    it are split, and split sub-blocks are cut into pieces until no task exceeds it. The
    cost model (:mod:`erblock.balancing.cost`) tries several thresholds: the split degree.
    """
    _check_r(r)
    blocks, n_r, n_s = bdm.block_sizes()
    comps = block_comparisons(n_r, n_s, bdm.link)
    total = int(comps.sum())
    q = total / r if threshold is None else float(threshold)
    if not q >= 0:
        raise ValueError(f"threshold must be a number of comparisons >= 0, got {threshold!r}")
    split = comps > q
    keep = (comps > 0) & ~split
    builder = UnitBuilder()
    _whole_blocks(builder, bdm, blocks[keep], n_r[keep], n_s[keep])
    split_blocks = blocks[split]
    if len(split_blocks):
        rows = np.isin(bdm.block, split_blocks)
        b_blk, b_part, b_src, b_cnt = bdm.block[rows], bdm.part[rows], bdm.src[rows], bdm.count[rows]
        starts = np.flatnonzero(np.r_[True, b_blk[1:] != b_blk[:-1]])
        ends = np.r_[starts[1:], len(b_blk)]
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            blk, src, part, cnt = int(b_blk[lo]), b_src[lo:hi], b_part[lo:hi], b_cnt[lo:hi]
            if bdm.link:
                r_rows, s_rows = src == SRC_R, src == SRC_S
                _split_link(builder, blk, part[r_rows], cnt[r_rows], part[s_rows], cnt[s_rows], q)
            else:
                _split_dedupe(builder, blk, part, cnt, q)

    def assign(units: Units, t: np.ndarray) -> np.ndarray:
        # LPT over comparisons; ties keep the builder order, which is deterministic.
        return packing(t[3], r)

    info = {"split_blocks": int(split.sum()), "threshold": q}
    return make_plan("blocksplit", r, bdm.link, builder, assign, _records_in(bdm), info)


def _check_r(r: int) -> None:
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or r < 1:
        raise ValueError(f"n_tasks must be an integer >= 1, got {r!r}")


#: name -> planner ``(profile, r, **options) -> Plan``. ``basic``, ``blocksplit`` and
#: ``pairrange`` take a BDM; the cell strategies (``needs_sketch``) take a
#: :class:`~erblock.balancing.sketch.SketchProfile` (what the engine profiles for them) or
#: a BDM (sketched on the fly).
STRATEGIES: dict[str, Callable[..., Plan]] = {"basic": plan_basic, "blocksplit": plan_blocksplit, "pairrange": plan_pairrange,
              "cellblock": plan_cellblock, "cellrange": plan_cellrange}
