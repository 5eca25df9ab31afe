"""Plans from a progressive sample (paper 001 §3): chop large blocks, pack medium ones,
hash small and unseen ones. The estimates and the stopping test are in
:mod:`.progressive`; see its docstring for the method.

Because unseen blocks are routed by hash and chopped blocks by a hash of the record id
(:class:`~erblock.balancing.placement.HashRoutes`), every record has a place whatever the
sample missed: the set of compared pairs is exactly the within-block pairs, as for a full
profile. Only the *loads* are estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bdm import SRC_R, SRC_S
from .packing import hashed, lpt
from .placement import HashRoutes
from .plan import Plan, assemble
from .progressive import SampleEstimate, SampleGoal
from .units import RECTANGLE, TRIANGLE, WHOLE, Details, UnitBuilder, Units, check_n_tasks

CHOPPED = -2  #: ``part`` of a unit that is one hash piece of a chopped block
BUCKET = -3  #: ``part`` of a unit that collects the small and unseen blocks of a bucket


@dataclass(frozen=True)
class SampledDetails(Details):
    """What a sampled plan chose, and (set by the engine) how the sample was drawn."""

    large_blocks: int
    medium_blocks: int
    small_blocks_seen: int
    threshold: float
    chop: float
    load_variance: np.ndarray = field(repr=False)
    sample: dict[str, Any] | None = None

    def describe(self) -> list[str]:
        s = self.sample
        lines = []
        if isinstance(s, dict):
            goal = s.get("goal", {})
            lines.append(
                f"progressive sample {sum(s.get('partitions_sampled', [])):,} of "
                f"{sum(s.get('partitions', [])):,} partitions, {s.get('records_sampled', 0):,} "
                f"records, {len(s.get('rounds', []))} rounds; goal "
                f"{'met' if s.get('goal_met') else 'NOT met'} (upper bound of max/mean "
                f"{s.get('upper_imbalance', float('nan')):.3f} at alpha={goal.get('alpha')}, "
                f"delta={goal.get('delta')})")
        lines.append(f"  {self.large_blocks:,} blocks chopped, {self.medium_blocks:,} packed "
                     "whole, the rest hashed")
        return lines

    def listed(self, units: Any) -> np.ndarray:
        return np.asarray(units.part != BUCKET)


def _link_piece_sizes(a: float, b: float, q: float) -> tuple[float, float]:
    """R and S piece sizes with product about ``q`` (at least one record each)."""
    if a * b <= q:
        return a, b
    root = max(math.sqrt(max(q, 1.0)), 1.0)
    if a <= root:
        return a, max(1.0, q / a)
    if b <= root:
        return max(1.0, q / b), b
    return root, root


#: finer chops tried when pieces of 1/chop of the mean load pack too unevenly
CHOP_STEPS = (1, 2, 4, 8)


def plan_sampled(est: SampleEstimate, r: int, goal: SampleGoal | None = None) -> Plan:
    """Chop large blocks, pack medium ones, hash small and unseen ones (module doc).

    Sampling more cannot fix a plan whose pieces are too coarse to pack evenly, so when
    the estimated imbalance exceeds ``1 + delta/2`` the large blocks are chopped finer
    (``goal.chop`` times 2, 4, 8) and the first plan within it, else the most even one, is
    kept (``details.chop``).

    ``plan.loads`` are estimates, ``details.load_variance`` their variances; the plan's
    :class:`HashRoutes` place what its unit table does not list.
    """
    check_n_tasks(r)
    goal = goal or SampleGoal()
    best: Plan | None = None
    for step in CHOP_STEPS:
        plan = _plan_sampled(est, int(r), goal, goal.chop * step)
        if best is None or plan.imbalance < best.imbalance:
            best = plan
        if plan.imbalance <= 1.0 + goal.delta / 2 or not plan.details.large_blocks:  # type: ignore[union-attr]
            break
    assert best is not None
    return best


def _plan_sampled(est: SampleEstimate, r: int, goal: SampleGoal, chop: float) -> Plan:
    link = est.link
    comps = est.comparisons
    total = float(comps.sum())
    mean_load = total / r
    small = comps <= goal.small * mean_load
    large = comps > mean_load
    medium = ~small & ~large
    complete = est.sampled_parts == est.n_parts  # every partition seen: nothing unseen
    builder = UnitBuilder()
    # per match task: the block estimate it scales with (-1: bucket), its share of it, the
    # relative variance hash piece sizes add, and its reduce task when fixed (-1: packed)
    t_key: list[np.ndarray] = []
    t_share: list[np.ndarray] = []
    t_hash_rel: list[np.ndarray] = []
    t_fixed: list[np.ndarray] = []

    def tasks(kind: int, left: np.ndarray, right: np.ndarray, c: np.ndarray, key: Any,
              share: Any, rel: Any, fixed: Any = -1, exact: bool = False) -> None:
        c = np.rint(np.asarray(c, dtype=np.float64))
        if exact and complete:  # exact counts: empty tasks make no task, as in a full profile
            keep = c > 0
        else:  # estimates (or hash pieces): a task seen empty may still get pairs, keep it
            keep = np.ones(len(c), dtype=bool)
            c = np.maximum(c, 1)
        cols = [np.broadcast_to(np.asarray(v), c.shape)[keep]
                for v in (left, right, key, share, rel, fixed)]
        builder.add_tasks(kind, cols[0], cols[1], c[keep].astype(np.int64))
        t_key.append(cols[2].astype(np.int64))
        t_share.append(cols[3].astype(np.float64))
        t_hash_rel.append(cols[4].astype(np.float64))
        t_fixed.append(cols[5].astype(np.int64))

    # buckets first: bucket b is one unit per source and a task on reduce task b
    b_ids = np.arange(r, dtype=np.int64)
    small_idx = np.flatnonzero(small)
    bucket_of = hashed(est.block[small_idx], r)
    b_load = np.bincount(bucket_of, weights=comps[small_idx], minlength=r)
    b_var = np.bincount(bucket_of, weights=est.variance[small_idx], minlength=r)
    size_r = np.bincount(bucket_of, weights=est.n_r[small_idx], minlength=r)
    bucket_units = np.full((2, r), -1, dtype=np.int64)
    bucket_units[SRC_R] = builder.add_units(b_ids, SRC_R, BUCKET, b_ids, np.rint(size_r))
    if link:
        size_s = np.bincount(bucket_of, weights=est.n_s[small_idx], minlength=r)
        bucket_units[SRC_S] = builder.add_units(b_ids, SRC_S, BUCKET, b_ids, np.rint(size_s))
        tasks(RECTANGLE, bucket_units[SRC_R], bucket_units[SRC_S], b_load, -1 - b_ids, 1.0,
              0.0, b_ids, exact=True)
    else:
        tasks(TRIANGLE, bucket_units[SRC_R], bucket_units[SRC_R], b_load, -1 - b_ids, 1.0,
              0.0, b_ids, exact=True)

    # medium blocks: whole units, one task each
    mi = np.flatnonzero(medium)
    ur = builder.add_units(est.block[mi], SRC_R, WHOLE, WHOLE, np.rint(est.n_r[mi]))
    if link:
        us = builder.add_units(est.block[mi], SRC_S, WHOLE, WHOLE, np.rint(est.n_s[mi]))
        tasks(RECTANGLE, ur, us, comps[mi], mi, 1.0, 0.0, exact=True)
    else:
        tasks(TRIANGLE, ur, ur, comps[mi], mi, 1.0, 0.0, exact=True)

    # large blocks: chopped into hash pieces
    ch_block, ch_src, ch_h, ch_unit0 = [], [], [], []
    q = max(mean_load / chop, 1.0)
    for k in np.flatnonzero(large).tolist():
        blk = int(est.block[k])
        if link:
            sr, ss = _link_piece_sizes(est.n_r[k], est.n_s[k], q)
            h_r = max(1, math.ceil(est.n_r[k] / sr))
            h_s = max(1, math.ceil(est.n_s[k] / ss))
            ids_r = builder.add_units(blk, SRC_R, CHOPPED, np.arange(h_r), np.rint(
                est.n_r[k] / h_r))
            ids_s = builder.add_units(blk, SRC_S, CHOPPED, np.arange(h_s), np.rint(
                est.n_s[k] / h_s))
            for src, h, ids in ((SRC_R, h_r, ids_r), (SRC_S, h_s, ids_s)):
                ch_block.append(blk)
                ch_src.append(src)
                ch_h.append(h)
                ch_unit0.append(int(ids[0]))
            ga, gb = np.meshgrid(np.arange(h_r), np.arange(h_s), indexing="ij")
            share = 1.0 / (h_r * h_s)
            rel = (h_r - 1) / max(est.n_r[k], 1.0) + (h_s - 1) / max(est.n_s[k], 1.0)
            tasks(RECTANGLE, ids_r[ga.ravel()], ids_s[gb.ravel()],
                  np.full(h_r * h_s, comps[k] * share), k, share, rel)
        else:
            n = est.n_r[k]
            h = max(1, math.ceil(n / math.sqrt(q)))
            ids = builder.add_units(blk, SRC_R, CHOPPED, np.arange(h), np.rint(n / h))
            ch_block.append(blk)
            ch_src.append(SRC_R)
            ch_h.append(h)
            ch_unit0.append(int(ids[0]))
            # h triangles of 1/h² of the pairs each, h(h−1)/2 rectangles of 2/h² each
            tri_share = 1.0 / (h * h)
            rel_piece = 4.0 * (h - 1) / max(n, 1.0)
            tasks(TRIANGLE, ids, ids, np.full(h, comps[k] * tri_share), k, tri_share,
                  rel_piece)
            a, b = np.triu_indices(h, k=1)
            rect_share = 2.0 / (h * h)
            tasks(RECTANGLE, ids[a], ids[b], np.full(len(a), comps[k] * rect_share), k,
                  rect_share, rel_piece / 2)

    key = np.concatenate(t_key) if t_key else np.zeros(0, np.int64)
    share = np.concatenate(t_share) if t_share else np.zeros(0)
    rel = np.concatenate(t_hash_rel) if t_hash_rel else np.zeros(0)
    fixed = np.concatenate(t_fixed) if t_fixed else np.zeros(0, np.int64)

    def assign(units: Units, t: np.ndarray) -> np.ndarray:
        out = fixed.copy()
        initial = np.bincount(out[out >= 0], weights=t[3][out >= 0], minlength=r)[:r]
        free = np.flatnonzero(out < 0)
        out[free] = lpt(t[3][free], r, loads=initial, tail=None)
        return out

    records = float(est.n_r.sum() + est.n_s.sum())
    hashing = HashRoutes(
        np.asarray(ch_block, dtype=np.int64), np.asarray(ch_src, dtype=np.int8),
        np.asarray(ch_h, dtype=np.int64), np.asarray(ch_unit0, dtype=np.int64), bucket_units)
    plan = assemble("sampling", r, link, builder, assign, int(round(records)),
                    placements=(hashing,), estimated=True)
    # Var(RL_t): tasks of one block on one reduce task move together (share of one
    # estimate); different blocks and buckets are independent; hash piece sizes add noise.
    m = plan.match
    var_t = np.zeros(r)
    block_tasks = key >= 0
    if block_tasks.any():
        pair = key[block_tasks] * r + m.reduce_task[block_tasks]
        uniq, inv = np.unique(pair, return_inverse=True)
        w = np.bincount(inv, weights=share[block_tasks])
        k_of, t_of = uniq // r, uniq % r
        np.add.at(var_t, t_of, w * w * est.variance[k_of])
        np.add.at(var_t, m.reduce_task[block_tasks],
                  (m.comparisons[block_tasks] ** 2) * rel[block_tasks])
    var_t += b_var  # bucket b sits on reduce task b
    details = SampledDetails(int(large.sum()), int(medium.sum()), int(small.sum()), mean_load,
                             chop, var_t)
    return Plan(plan.strategy, plan.n_tasks, plan.link, plan.units, plan.match,
                plan.records_in, plan.placements, details, estimated=True)
