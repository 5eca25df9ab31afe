"""Worker-side record preparation and routing (pandas only; called inside Dask tasks).

``prepare_partition`` runs first on every input partition: it stamps the input-partition
number and a record id (``_erb_rid`` = partition << 40 | row, i.e. input order), computes
the block id of every key pass, and keeps only the columns the comparisons need.

``route_partition`` then finds each record's unit in the plan and emits one row per
distinct reduce task that needs that unit (``_erb_task``). It is a pure function of the
partition and the plan, so Dask can recompute it after a worker dies and get the same rows.

How a record finds its unit (:func:`locate`): by (block, source) for whole blocks; for
BlockSplit pieces also by its rank among the records of its block in its partition; for
PairRange's ranked units by its global rank in the block (records of the block in earlier
partitions, from the plan, plus that rank), which picks the segment whose reduce tasks it
goes to (``_erb_rank`` travels with it, the comparer needs it); for the cell strategies
by the sketch cell of its block id, and inside a divided cell by its position
(:func:`record_positions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..balancing.plan import POSITION_BITS, Plan
from ..blocking.keys import NULL_BLOCK, KeySpec, block_ids

_PHI64 = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio
RID_SHIFT = 40  #: a record id is (input partition << RID_SHIFT) | row within the partition
PASS_MIX = np.int64(-7046029254386353131)  # odd 64-bit constant mixing the pass into block ids


def value_column(i: int) -> str:
    return f"_erb_v{i}"


def pass_column(p: int) -> str:
    return f"_erb_k{p}"


def mix_pass(ids: np.ndarray, p: int) -> np.ndarray:
    """Block ids of pass ``p`` made distinct from other passes' ids (pass 0 unchanged)."""
    if p == 0:
        return ids
    with np.errstate(over="ignore"):
        out = ids * PASS_MIX + np.int64(p)
    out[ids == NULL_BLOCK] = NULL_BLOCK
    out[(out == NULL_BLOCK) & (ids != NULL_BLOCK)] = NULL_BLOCK + 1
    return out


def prepare_partition(
    df: pd.DataFrame,
    *,
    part: int,
    src: int,
    keys: Sequence[KeySpec],
    value_columns: Sequence[str],
    id_column: str | None = None,
) -> pd.DataFrame:
    """Records of one input partition, one row per key pass with a key.

    Columns: ``_erb_id`` (the record's id: index label, or ``id_column``), ``_erb_rid``,
    ``_erb_part``, ``_erb_src``, ``_erb_block`` (block id of this pass, mixed with the
    pass), ``_erb_pass``, and with several passes ``_erb_k<p>`` (raw id of every pass, to
    skip pairs an earlier pass already compares), then ``_erb_v<i>`` for each compared
    column. Records without any key get one row with ``_erb_block == NULL_BLOCK``.
    """
    n = len(df)
    ids = df[id_column].to_numpy() if id_column else df.index.to_numpy()
    rid = (np.int64(part) << np.int64(RID_SHIFT)) + np.arange(n, dtype=np.int64)
    per_pass = [block_ids(df, k) for k in keys]
    base: dict[str, Any] = {
        "_erb_id": ids,
        "_erb_rid": rid,
        "_erb_part": np.full(n, part, dtype=np.int64),
        "_erb_src": np.full(n, src, dtype=np.int8),
    }
    if len(keys) > 1:
        for p, b in enumerate(per_pass):
            base[pass_column(p)] = b
    for i, col in enumerate(value_columns):
        base[value_column(i)] = df[col].to_numpy()
    frame = pd.DataFrame(base)
    pieces = []
    no_key = np.ones(n, dtype=bool)
    for p, b in enumerate(per_pass):
        has = b != NULL_BLOCK
        no_key &= ~has
        sub = frame[has]
        sub = sub.assign(_erb_block=mix_pass(b[has], p), _erb_pass=np.int8(p))
        pieces.append(sub)
    if no_key.any() or n == 0:
        pieces.append(frame[no_key].assign(_erb_block=NULL_BLOCK, _erb_pass=np.int8(-1)))
    out = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0]
    for i, col in enumerate(value_columns):
        # keep the original dtype of the compared columns (concat of empty frames may lose it)
        if out[value_column(i)].dtype != df[col].dtype:
            out[value_column(i)] = out[value_column(i)].astype(df[col].dtype)
    return out.reset_index(drop=True)


def _group_ranks(*keys: np.ndarray, rid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of every row inside its group (equal ``keys``) in ``rid`` order, and the size
    of its group."""
    n = len(rid)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((rid, *keys[::-1]))
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, n])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, sizes)
    size = np.empty(n, dtype=np.int64)
    size[order] = np.repeat(sizes, sizes)
    return rank, size


def record_positions(block: np.ndarray, src: np.ndarray, part: np.ndarray, rid: np.ndarray
                     ) -> np.ndarray:
    """Position in ``[0, 2^32)`` of every record inside its block (cell strategies).

    The ``c`` records of a block in one input partition (and source) sit at
    ``(q + o) / c`` for their rank ``q`` in input order and an offset ``o`` in [0, 1)
    hashed from (block, source, partition): evenly spaced, so a piece of width ``f`` gets
    ``f·c`` of them up to one record, whatever the block. A pure function of the
    partition, like the ranks of BlockSplit pieces.
    """
    from ..balancing.sketch import splitmix64

    q, c = _group_ranks(block, src, part, rid=rid)
    base = splitmix64(np.asarray(block, dtype=np.int64).view(np.uint64)
                      ^ (np.asarray(src, dtype=np.int64).view(np.uint64) << np.uint64(32)))
    with np.errstate(over="ignore"):  # golden-ratio steps: partitions interleave evenly
        offset = (base + np.asarray(part, dtype=np.int64).view(np.uint64) * _PHI64) >> np.uint64(32)
    pos = ((q.astype(np.uint64) << np.uint64(POSITION_BITS)) + offset) // np.maximum(c, 1).astype(
        np.uint64)
    return pos.astype(np.int64)


def locate(records: pd.DataFrame, plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """Unit id of every prepared record (−1 when it takes part in no match task) and, for
    records of ranked units (PairRange), their rank in the block (−1 otherwise)."""
    n = len(records)
    unit = np.full(n, -1, dtype=np.int64)
    rank = np.full(n, -1, dtype=np.int64)
    if n == 0 or len(plan.units) == 0:
        return unit, rank
    u = plan.units
    blk = records["_erb_block"].to_numpy().astype(np.int64)
    src = records["_erb_src"].to_numpy().astype(np.int64)
    part = records["_erb_part"].to_numpy().astype(np.int64)
    rid = records["_erb_rid"].to_numpy()
    has_key = blk != NULL_BLOCK
    key = plan.cells.keys(blk) if plan.cells is not None else blk
    whole = u.part == -1
    # Whole units: look up (key, src).
    for s in np.unique(src).tolist():
        sel = np.flatnonzero((src == s) & has_key)
        cand = np.flatnonzero(whole & (u.src == s))
        if len(cand) == 0 or len(sel) == 0:
            continue
        index = pd.Index(u.block[cand])
        pos = index.get_indexer(key[sel])
        hit = pos >= 0
        unit[sel[hit]] = cand[pos[hit]]
    # Split sub-blocks (BlockSplit): look up (block, src, part), then the piece from the
    # record's rank inside the partition.
    sp = plan.splits
    if len(sp.block):
        keys = pd.MultiIndex.from_arrays([sp.block, sp.src.astype(np.int64), sp.part])
        pos = keys.get_indexer(pd.MultiIndex.from_arrays([blk, src, part]))
        hit = np.flatnonzero((pos >= 0) & has_key)
        if len(hit):
            grp = pos[hit]
            q, _ = _group_ranks(grp, rid=rid[hit])
            h, cnt = sp.h[grp], sp.n[grp]
            if np.any(q >= cnt):
                raise RuntimeError(_CHANGED)
            unit[hit] = sp.unit0[grp] + q * h // cnt
    # Pieces (cell strategies): look up (key, src), then the piece from the position.
    pc = plan.pieces
    if pc is not None and len(pc.key):
        index = pd.MultiIndex.from_arrays([pc.key, pc.src.astype(np.int64)])
        pos = index.get_indexer(pd.MultiIndex.from_arrays([key, src]))
        hit = np.flatnonzero((pos >= 0) & has_key)
        if len(hit):
            grp = pos[hit].astype(np.int64)
            x = record_positions(blk[hit], src[hit], part[hit], rid[hit])
            cut_grp = np.repeat(np.arange(len(pc.key), dtype=np.int64), np.diff(pc.cut_indptr))
            cut_keys = (cut_grp << POSITION_BITS) | pc.cuts
            below = np.searchsorted(cut_keys, (grp << POSITION_BITS) | x, side="right")
            unit[hit] = pc.unit0[grp] + below - pc.cut_indptr[grp]
    # Hash routes (plans built from a progressive sample, balancing.sampling): pieces of
    # chopped blocks by a hash of the record id; blocks the plan does not list, by block id.
    hashing = getattr(plan, "hashing", None)
    if hashing is not None:
        hashing.fill(unit, blk, src, rid)
    # Ranked units (PairRange): global rank = records of the block in earlier partitions
    # + rank inside the partition.
    rk = plan.ranked
    if rk is not None and len(rk.unit):
        g = np.searchsorted(rk.unit, unit)
        g = np.minimum(g, len(rk.unit) - 1)
        hit = np.flatnonzero((unit >= 0) & (rk.unit[g] == unit))
        if len(hit):
            g = g[hit]
            q, _ = _group_ranks(g, part[hit], rid=rid[hit])
            offsets = pd.MultiIndex.from_arrays([rk.off_group, rk.off_part])
            row = offsets.get_indexer(pd.MultiIndex.from_arrays([g, part[hit]]))
            if np.any(row < 0):
                raise RuntimeError(_CHANGED)
            x = rk.offset[row] + q
            if np.any(x >= rk.n[g]):
                raise RuntimeError(_CHANGED)
            rank[hit] = x
    return unit, rank


_CHANGED = ("a partition holds more records of a block than the profile counted; the input "
            "changed between the profile and the route phase")


def record_units(records: pd.DataFrame, plan: Plan) -> np.ndarray:
    """Unit id of every prepared record (−1 when its block has no match task)."""
    return locate(records, plan)[0]


def route_partition(records: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One row per (record, reduce task that needs it), with ``_erb_task``, ``_erb_unit``
    and ``_erb_rank`` (rank in the block for ranked units, else −1)."""
    unit, rank = locate(records, plan)
    keep = np.flatnonzero(unit >= 0)
    u = unit[keep]
    lo, hi = plan.unit_indptr[u], plan.unit_indptr[u + 1]
    targets = plan.unit_targets
    rk = plan.ranked
    ranked = rank[keep] >= 0
    if rk is not None and ranked.any():
        # a ranked record goes to the tasks of its segment, not to every task of its block
        g = np.searchsorted(rk.unit, u[ranked])
        seg_grp = np.repeat(np.arange(len(rk.unit), dtype=np.int64), np.diff(rk.seg_indptr))
        seg_keys = (seg_grp << RID_SHIFT) | rk.seg_start
        seg = np.searchsorted(seg_keys, (g << RID_SHIFT) | rank[keep][ranked], side="right") - 1
        base = len(targets)
        lo, hi = lo.copy(), hi.copy()
        lo[ranked] = base + rk.tgt_indptr[seg]
        hi[ranked] = base + rk.tgt_indptr[seg + 1]
        targets = np.concatenate([targets, rk.targets])
    reps = hi - lo
    rows = np.repeat(keep, reps)
    # positions into targets: lo, lo+1, ..., hi-1 for every record
    offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    tasks = targets[np.repeat(lo, reps) + offsets]
    out = records.iloc[rows].reset_index(drop=True)
    out["_erb_unit"] = np.repeat(u, reps)
    out["_erb_task"] = tasks.astype(np.int64)
    out["_erb_rank"] = np.repeat(rank[keep], reps)
    return out
