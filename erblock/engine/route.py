"""Worker-side record preparation and routing (pandas only; called inside Dask tasks).

``prepare_partition`` runs first on every input partition: it stamps the input-partition
number and a record id (``_erb_rid`` = partition << 40 | row, i.e. input order), computes
the block id of every key pass, and keeps only the columns the comparisons need.

``route_partition`` then finds each record's unit in the plan and emits one row per
distinct reduce task that needs that unit (``_erb_task``). It is a pure function of the
partition and the plan, so Dask can recompute it after a worker dies and get the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..balancing.plan import Plan
from ..blocking.keys import NULL_BLOCK, KeySpec, block_ids

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


def record_units(records: pd.DataFrame, plan: Plan) -> np.ndarray:
    """Unit id of every prepared record (−1 when its block has no match task)."""
    n = len(records)
    unit = np.full(n, -1, dtype=np.int64)
    if n == 0 or len(plan.units) == 0:
        return unit
    u = plan.units
    blk = records["_erb_block"].to_numpy()
    src = records["_erb_src"].to_numpy().astype(np.int64)
    whole = u.part == -1
    # Whole-block units: look up (block, src).
    for s in np.unique(src).tolist():
        sel = np.flatnonzero(src == s)
        cand = np.flatnonzero(whole & (u.src == s))
        if len(cand) == 0:
            continue
        index = pd.Index(u.block[cand])
        pos = index.get_indexer(blk[sel])
        hit = pos >= 0
        unit[sel[hit]] = cand[pos[hit]]
    # Split sub-blocks: look up (block, src, part), then the piece from the record's rank.
    sp = plan.splits
    if len(sp.block):
        keys = pd.MultiIndex.from_arrays([sp.block, sp.src.astype(np.int64), sp.part])
        part = records["_erb_part"].to_numpy()
        pos = keys.get_indexer(pd.MultiIndex.from_arrays([blk, src, part]))
        hit = np.flatnonzero(pos >= 0)
        if len(hit):
            # rank of the record inside its (block, src, part) group, in input order
            rid = records["_erb_rid"].to_numpy()[hit]
            grp = pos[hit]
            order = np.lexsort((rid, grp))
            sorted_grp = grp[order]
            starts = np.r_[0, np.flatnonzero(sorted_grp[1:] != sorted_grp[:-1]) + 1]
            first = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
            rank = np.empty(len(hit), dtype=np.int64)
            rank[order] = np.arange(len(order)) - first
            h, cnt = sp.h[grp], sp.n[grp]
            if np.any(rank >= cnt):
                raise RuntimeError(
                    "a partition holds more records of a block than the profile counted; "
                    "the input changed between the profile and the route phase"
                )
            unit[hit] = sp.unit0[grp] + rank * h // cnt
    # Hash routes (plans built from a progressive sample, balancing.sampling): pieces of
    # chopped blocks by a hash of the record id; blocks the plan does not list, by block id.
    hashing = getattr(plan, "hashing", None)
    if hashing is not None:
        hashing.fill(unit, blk, src, records["_erb_rid"].to_numpy())
    return unit


def route_partition(records: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    """One row per (record, reduce task that needs it), with ``_erb_task`` and ``_erb_unit``."""
    unit = record_units(records, plan)
    keep = np.flatnonzero(unit >= 0)
    u = unit[keep]
    lo, hi = plan.unit_indptr[u], plan.unit_indptr[u + 1]
    reps = hi - lo
    rows = np.repeat(keep, reps)
    # positions into unit_targets: lo, lo+1, ..., hi-1 for every record
    offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    tasks = plan.unit_targets[np.repeat(lo, reps) + offsets]
    out = records.iloc[rows].reset_index(drop=True)
    out["_erb_unit"] = np.repeat(u, reps)
    out["_erb_task"] = tasks.astype(np.int64)
    return out
