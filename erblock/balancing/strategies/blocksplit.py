"""BlockSplit (paper 004 §3.2), pure numpy over a BDM.

BlockSplit keeps blocks with at most P/r comparisons whole and splits the larger ones into
their per-input-partition sub-blocks; a split block becomes one triangle task per
sub-block and one rectangle task per pair of sub-blocks (for link: one rectangle per
non-empty R-sub-block × S-sub-block). Empty sub-blocks make no task. All match tasks,
largest first, go to the least-loaded reduce task (LPT). When there are few partitions a
sub-block can still hold more than P/r comparisons: such sub-blocks are cut into equal
pieces by record rank inside the partition, so that no match task exceeds P/r unless a
single pair does (P/r < 1). A record of a split sub-block finds its piece by its rank
(:class:`~erblock.balancing.placement.SplitPieces`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...scalars import as_python, is_number
from ..bdm import BDM, SRC_R, SRC_S, block_comparisons
from ..packing import Packing, lpt
from ..placement import SplitPieces
from ..plan import RECTANGLE, TRIANGLE, Details, Plan, UnitBuilder, Units, assemble, check_n_tasks
from .base import Strategy, options_from_dict
from .basic import whole_blocks

#: split degrees ``auto`` tries: a block is split when it holds more than P / (factor · r)
#: comparisons, and no match task exceeds that threshold. Factor 1 is the paper's rule;
#: larger factors balance better at the price of more match tasks and more replicated
#: records, smaller ones the other way round.
SPLIT_FACTORS = (0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True)
class BlockSplitOptions:
    """``threshold``: the largest match task in comparisons (None: P/r, the paper's rule);
    ``packing``: the packing policy (default LPT)."""

    threshold: float | None = None
    packing: Packing = lpt

    def __post_init__(self) -> None:
        t = self.threshold
        if t is not None and (not is_number(t) or not t >= 0):
            raise ValueError(f"threshold must be a number of comparisons >= 0, got {t!r}")
        object.__setattr__(self, "threshold", as_python(t))  # a count read from data is NumPy's

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BlockSplitOptions:
        return options_from_dict(cls, d, "blocksplit")


@dataclass(frozen=True)
class BlockSplitDetails(Details):
    split_blocks: int
    threshold: float
    split_factor: float | None = None


def piece_sizes(n: int, h: int) -> np.ndarray:
    """Sizes of the ``h`` pieces of a sub-block of ``n`` records (ranks q with q*h//n == p)."""
    p = np.arange(h + 1, dtype=np.int64)
    bounds = -((-p * n) // h)  # ceil(p * n / h)
    return np.diff(bounds)


class _Splits:
    """Split sub-blocks as they are planned: (block, src, part, n, h, unit0) rows."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int, int, int]] = []

    def add(self, builder: UnitBuilder, block: int, src: int, part: int, n: int, h: int
            ) -> tuple[np.ndarray, np.ndarray]:
        sz = piece_sizes(n, h)
        ids = builder.add_units(block, src, part, np.arange(h), sz)
        self.rows.append((block, src, part, n, h, int(ids[0])))
        return ids, sz

    def placement(self) -> SplitPieces:
        a = np.array(self.rows, dtype=np.int64).reshape(-1, 6).T
        return SplitPieces(a[0], a[1].astype(np.int8), a[2], a[3], a[4], a[5])


def _split_dedupe(builder: UnitBuilder, splits: _Splits, block: int, parts: np.ndarray,
                  counts: np.ndarray, q: float) -> None:
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
        ids, sz = splits.add(builder, block, SRC_R, part, n, h)
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
    root = max(math.isqrt(int(q)) if q >= 1 else 1, 1)
    if a_max <= root:
        return a_max, max(1, int(q // a_max))
    if b_max <= root:
        return max(1, int(q // b_max)), b_max
    return root, root


def _split_link(builder: UnitBuilder, splits: _Splits, block: int, parts_r: np.ndarray,
                counts_r: np.ndarray, parts_s: np.ndarray, counts_s: np.ndarray,
                q: float) -> None:
    """R and S sub-blocks by partition (cut into pieces when needed); one rectangle per
    R piece × S piece."""
    s_r, s_s = _link_piece_sizes(int(counts_r.max()), int(counts_s.max()), q)
    side_units = []
    for src, parts, counts, s in ((SRC_R, parts_r, counts_r, s_r), (SRC_S, parts_s, counts_s, s_s)):
        ids_all, sz_all = [], []
        for part, n in zip(parts.tolist(), counts.tolist()):
            ids, sz = splits.add(builder, block, src, part, n, max(1, -(-n // s)))
            ids_all.append(ids)
            sz_all.append(sz)
        side_units.append((np.concatenate(ids_all), np.concatenate(sz_all)))
    (ur, szr), (us, szs) = side_units
    ga, gb = np.meshgrid(np.arange(len(ur)), np.arange(len(us)), indexing="ij")
    a, b = ga.ravel(), gb.ravel()
    builder.add_tasks(RECTANGLE, ur[a], us[b], szr[a] * szs[b])


def plan_blocksplit(bdm: BDM, r: int, options: BlockSplitOptions | None = None, *,
                    threshold: float | None = None, packing: Packing | None = None) -> Plan:
    """BlockSplit (paper 004 §3.2) with further splitting of oversized sub-blocks.

    ``threshold`` (default P/r, the paper's rule) is the largest match task: blocks above
    it are split, and split sub-blocks are cut into pieces until no task exceeds it. The
    cost model (:mod:`erblock.balancing.cost`) tries several thresholds: the split degree.
    Keywords override ``options``.
    """
    check_n_tasks(r)
    options = options or BlockSplitOptions()
    if threshold is not None or packing is not None:
        options = BlockSplitOptions(threshold if threshold is not None else options.threshold,
                                    packing or options.packing)
    blocks, n_r, n_s = bdm.block_sizes()
    comps = block_comparisons(n_r, n_s, bdm.link)
    total = int(comps.sum())
    q = total / r if options.threshold is None else float(options.threshold)
    split = comps > q
    keep = (comps > 0) & ~split
    builder = UnitBuilder()
    whole_blocks(builder, bdm, blocks[keep], n_r[keep], n_s[keep])
    splits = _Splits()
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
                _split_link(builder, splits, blk, part[r_rows], cnt[r_rows], part[s_rows],
                            cnt[s_rows], q)
            else:
                _split_dedupe(builder, splits, blk, part, cnt, q)

    def assign(units: Units, t: np.ndarray) -> np.ndarray:
        # LPT over comparisons; ties keep the builder order, which is deterministic.
        return options.packing(t[3], r)

    return assemble("blocksplit", r, bdm.link, builder, assign, bdm.n_records,
                    placements=(splits.placement(),),
                    details=BlockSplitDetails(int(split.sum()), q))


def split_degrees(bdm: BDM, r: int) -> dict[str, Plan]:
    """BlockSplit at every split degree of :data:`SPLIT_FACTORS` (what ``auto`` weighs)."""
    total = int(bdm.comparisons()[1].sum())
    out = {}
    for f in SPLIT_FACTORS:
        threshold = total / (r * f) if total else 0.0
        p = plan_blocksplit(bdm, r, BlockSplitOptions(threshold))
        out["blocksplit" if f == 1.0 else f"blocksplit x{f:g}"] = p.with_details(
            split_factor=float(f))
    return out


STRATEGY = Strategy(
    name="blocksplit",
    summary="split blocks above P/r into per-partition sub-blocks, LPT-pack the match tasks",
    profile="bdm",
    plan=plan_blocksplit,
    options=BlockSplitOptions,
    splits_blocks=True,
    variants=split_degrees,
)
