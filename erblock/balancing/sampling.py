"""Progressive sampling (paper 001, Ramakrishnan et al.): plan from a sample of partitions.

A full profile computes the blocking key of every record before anything is planned. The
progressive sampler instead profiles a random sample of input partitions, grows it
(doubling) and stops as soon as the plan it would build is good enough: every reduce
task's load, at confidence ``alpha``, stays within ``(1 + delta)`` of the mean reduce load.
The engine side (profiling the partitions) is :mod:`erblock.engine.sampling`; this module
is the pure part: the estimates, the plan and the stopping test.

**Estimates.** Sampling whole partitions is cluster sampling: with ``s`` of ``m``
partitions drawn, a block's records are estimated as ``n̂ = (m/s) Σ x_p`` (``x_p`` its
records in sampled partition ``p``), with variance ``m² (1 − s/m) S² / s`` (``S²`` the
variance of ``x_p`` over the sampled partitions; never below the variance of the same
fraction drawn record by record, which covers blocks seen in one partition only). Its
comparisons are ``x(x − 1) / (2 f²)`` (unbiased when records are sampled with rate
``f = s/m``) for dedupe and ``n̂_R · n̂_S`` for link, with variances by the delta method.

**Chop, pack, hash** (001 §3). With ``A`` the estimated mean reduce load:

* *large* blocks (more than ``A`` comparisons) are chopped: each record goes to one of
  ``h`` pieces by a hash of its record id, and the pieces are compared as in BlockSplit
  (triangles and rectangles, or R pieces × S pieces), so no task exceeds about ``A``;
* *medium* blocks stay whole: one match task each, packed by LPT;
* *small* blocks (at most ``small · A`` comparisons) and every block the sample never saw
  are hashed by block id into ``r`` buckets; bucket ``b`` is one unit per source (it mixes
  blocks: records are only compared with records of their own block) on reduce task ``b``.
  Medium and chopped tasks are packed on top of the estimated bucket loads.

Because unseen blocks are routed by hash and chopped blocks by a hash of the record id,
every record has a place whatever the sample missed: the set of compared pairs is exactly
the within-block pairs, as for a full profile. Only the *loads* are estimates.

**Stopping test** (001 §5): reduce loads are sums of independent block estimates, so
``E(RL_t)`` and ``Var(RL_t)`` add up over the blocks on task ``t`` (plus the spread of
hash piece sizes); sampling stops when ``max_t E(RL_t) + z·sd(RL_t) ≤ (1 + δ)·mean_t
E(RL_t)`` with ``z`` the normal quantile of ``α^{1/r}`` (all ``r`` tasks at once, 001
Eq. 1), or when every partition has been sampled (the goal may be out of reach: small or
very skewed jobs), or ``max_fraction`` is reached.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from statistics import NormalDist
from typing import Any

import numpy as np

from .bdm import BDM, SRC_R, SRC_S
from .packing import hashed
from .plan import RECTANGLE, TRIANGLE, WHOLE, Plan, UnitBuilder, Units, make_plan

CHOPPED = -2  #: ``part`` of a unit that is one hash piece of a chopped block
BUCKET = -3  #: ``part`` of a unit that collects the small and unseen blocks of a bucket
NULL_BLOCK = np.iinfo(np.int64).min


@dataclass(frozen=True)
class SampleGoal:
    """The sampler's goal and limits (``sample=`` option of link, dedupe and plan).

    ``delta``: accepted overload of a reduce task over the mean; ``alpha``: confidence
    that no task exceeds it; ``initial``: fraction of input partitions in the first round
    (at least ``min_partitions``); each round multiplies the sample by ``growth``;
    ``max_fraction``: stop growing at this fraction of the partitions; ``small``: blocks
    with at most ``small`` times the mean reduce load are hashed, not packed; ``chop``:
    large blocks are chopped into tasks of at most 1/``chop`` of the mean reduce load (001
    §3.2 chops to a configurable fraction of it; finer pieces pack better but replicate
    more records); ``seed``: the random order of partitions.
    """

    delta: float = 0.1
    alpha: float = 0.95
    initial: float = 0.1
    growth: float = 2.0
    min_partitions: int = 2
    max_fraction: float = 1.0
    small: float = 0.01
    chop: float = 2.0
    seed: int = 0

    def __post_init__(self) -> None:
        def bad(name: str, what: str) -> ValueError:
            return ValueError(f"sample: {name} must be {what}, got {getattr(self, name)!r}")

        for name in ("delta", "alpha", "initial", "growth", "max_fraction", "small", "chop"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise bad(name, "a number")
        if self.delta <= 0:
            raise bad("delta", "> 0 (the accepted overload, e.g. 0.1 for 10 %)")
        if not 0 < self.alpha < 1:
            raise bad("alpha", "in (0, 1) (a confidence level, e.g. 0.95)")
        if not 0 < self.initial <= 1:
            raise bad("initial", "a fraction in (0, 1]")
        if self.growth <= 1:
            raise bad("growth", "> 1")
        if not 0 < self.max_fraction <= 1:
            raise bad("max_fraction", "a fraction in (0, 1]")
        if not 0 <= self.small < 1:
            raise bad("small", "in [0, 1)")
        if self.chop < 1:
            raise bad("chop", ">= 1")
        for name in ("min_partitions", "seed"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < (
                    1 if name == "min_partitions" else 0):
                raise bad(name, "an integer >= 1" if name == "min_partitions"
                          else "an integer >= 0")

    @classmethod
    def from_option(cls, value: Any) -> SampleGoal:
        """``True``, a dict of fields (e.g. ``{"delta": 0.1, "alpha": 0.95}``) or a goal."""
        if isinstance(value, SampleGoal):
            return value
        if value is True:
            return cls()
        if isinstance(value, Mapping):
            known = {f.name for f in fields(cls)}
            unknown = set(value) - known
            if unknown:
                raise ValueError(f"sample: unknown field(s) {sorted(unknown)}; "
                                 f"known: {sorted(known)}")
            return cls(**dict(value))
        raise ValueError(
            "sample must be True or a dict such as {'delta': 0.1, 'alpha': 0.95} "
            f"(overload and confidence), got {value!r}"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def z(self) -> float:
        """Normal quantile of ``alpha`` (one task); see :func:`goal_test` for r tasks."""
        return NormalDist().inv_cdf(self.alpha)


# -- estimates -------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleEstimate:
    """Per block seen in the sample: estimated records (R, S) and comparisons, variances."""

    block: np.ndarray
    n_r: np.ndarray
    n_s: np.ndarray
    var_r: np.ndarray
    var_s: np.ndarray
    comparisons: np.ndarray
    variance: np.ndarray
    link: bool
    sampled_parts: tuple[int, int]
    n_parts: tuple[int, int]
    records_sampled: int

    @property
    def fraction(self) -> float:
        """Fraction of the input partitions sampled (of both sources together)."""
        m = sum(self.n_parts)
        return sum(self.sampled_parts) / m if m else 1.0


def _side(sample: BDM, blocks: np.ndarray, src: int, s: int, m: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(records seen, estimated records, variance of the estimate) per block, one source."""
    rows = sample.src == src
    idx = np.searchsorted(blocks, sample.block[rows])
    x = sample.count[rows].astype(np.float64)
    seen = np.bincount(idx, weights=x, minlength=len(blocks))
    sq = np.bincount(idx, weights=x * x, minlength=len(blocks))
    if s <= 0 or m <= 0:
        z = np.zeros(len(blocks))
        return z, z, z
    scale = m / s
    est = scale * seen
    fpc = 1.0 - s / m
    bern = est * (scale - 1.0)  # record-by-record sampling of the same fraction
    if s >= 2:
        s2 = np.maximum(sq - seen * seen / s, 0.0) / (s - 1)
        clus = m * m * fpc * s2 / s
        var = np.maximum(clus, bern)
    else:
        var = bern
    return seen, est, np.maximum(var, 0.0)


def estimate(sample: BDM, sampled_parts: tuple[int, int], n_parts: tuple[int, int]
             ) -> SampleEstimate:
    """Block estimates from the BDM rows of ``sampled_parts`` of ``n_parts`` partitions."""
    blocks = np.unique(sample.block)
    x_r, n_r, v_r = _side(sample, blocks, SRC_R, sampled_parts[0], n_parts[0])
    if sample.link:
        _, n_s, v_s = _side(sample, blocks, SRC_S, sampled_parts[1], n_parts[1])
        comps = n_r * n_s
        var = n_s * n_s * v_r + n_r * n_r * v_s + v_r * v_s
    else:
        n_s = v_s = np.zeros(len(blocks))
        f = sampled_parts[0] / n_parts[0] if n_parts[0] else 1.0
        comps = np.maximum(x_r * (x_r - 1.0), 0.0) / (2.0 * f * f) if f > 0 else x_r * 0
        var = (np.maximum(n_r - 0.5, 0.0) ** 2) * v_r
    return SampleEstimate(blocks, n_r, n_s, v_r, v_s, comps, var, sample.link,
                          (int(sampled_parts[0]), int(sampled_parts[1])),
                          (int(n_parts[0]), int(n_parts[1])), sample.n_records)


# -- routing by hash -------------------------------------------------------------------


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a well-spread 64-bit hash of int64 values (as uint64)."""
    z = np.asarray(x, dtype=np.int64).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class HashRoutes:
    """How a sampled plan places records its unit table does not list by block.

    Chopped blocks: (``block``, ``src``) is cut into ``h`` pieces, units ``unit0`` ..
    ``unit0 + h − 1``; a record goes to piece ``mix64(rid) mod h``. Every other block with
    a key goes to unit ``buckets[src, block mod n_buckets]`` (``hashed`` placement).
    """

    block: np.ndarray
    src: np.ndarray
    h: np.ndarray
    unit0: np.ndarray
    buckets: np.ndarray  # (2, n_buckets) unit ids, -1 when the source has none

    def fill(self, unit: np.ndarray, block: np.ndarray, src: np.ndarray,
             rid: np.ndarray) -> None:
        """Set ``unit`` (in place) for records not placed yet (−1) that have a key."""
        todo = np.flatnonzero((unit < 0) & (block != NULL_BLOCK))
        if len(todo) == 0:
            return
        blk, sr = block[todo], np.asarray(src[todo], dtype=np.int64)
        placed = np.zeros(len(todo), dtype=bool)
        for s in np.unique(self.src).tolist():
            entries = np.flatnonzero(self.src == s)
            order = entries[np.argsort(self.block[entries], kind="stable")]
            sorted_blocks = self.block[order]
            mine = np.flatnonzero(sr == s)
            pos = np.minimum(np.searchsorted(sorted_blocks, blk[mine]), len(order) - 1)
            hit = sorted_blocks[pos] == blk[mine]
            rows, entry = mine[hit], order[pos[hit]]
            piece = (mix64(rid[todo[rows]]) % self.h[entry].astype(np.uint64)).astype(np.int64)
            unit[todo[rows]] = self.unit0[entry] + piece
            placed[rows] = True
        todo, blk, sr = todo[~placed], blk[~placed], sr[~placed]
        if len(todo):
            bucket = hashed(blk, self.buckets.shape[1])
            unit[todo] = self.buckets[sr, bucket]


# -- the plan --------------------------------------------------------------------------


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


def lpt_onto(costs: np.ndarray, loads: np.ndarray) -> np.ndarray:
    """LPT onto tasks that already carry ``loads``: each item, largest first, to the task
    with the least load (ties to the lower task id). Returns the task of each item."""
    out = np.zeros(len(costs), dtype=np.int64)
    heap = [(float(v), t) for t, v in enumerate(np.asarray(loads, dtype=np.float64))]
    heapq.heapify(heap)
    for i in np.argsort(-np.asarray(costs, dtype=np.float64), kind="stable").tolist():
        load, t = heapq.heappop(heap)
        out[i] = t
        heapq.heappush(heap, (load + float(costs[i]), t))
    return out


#: finer chops tried when pieces of 1/chop of the mean load pack too unevenly
CHOP_STEPS = (1, 2, 4, 8)


def plan_sampled(est: SampleEstimate, r: int, goal: SampleGoal | None = None) -> Plan:
    """Chop large blocks, pack medium ones, hash small and unseen ones (module doc).

    Sampling more cannot fix a plan whose pieces are too coarse to pack evenly, so when
    the estimated imbalance exceeds ``1 + delta/2`` the large blocks are chopped finer
    (``goal.chop`` times 2, 4, 8) and the first plan within it, else the most even one, is
    kept (``info["chop"]``).

    ``plan.loads`` are estimates; ``plan.info["load_variance"]`` their variances, and
    ``plan.hashing`` the :class:`HashRoutes` the router uses for what the unit table does
    not list.
    """
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or r < 1:
        raise ValueError(f"n_tasks must be an integer >= 1, got {r!r}")
    goal = goal or SampleGoal()
    best: Plan | None = None
    for step in CHOP_STEPS:
        plan = _plan_sampled(est, int(r), goal, goal.chop * step)
        if best is None or plan.imbalance < best.imbalance:
            best = plan
        if plan.imbalance <= 1.0 + goal.delta / 2 or not plan.info["large_blocks"]:
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
        out[free] = lpt_onto(t[3][free], initial)
        return out

    records = float(est.n_r.sum() + est.n_s.sum())
    info: dict[str, Any] = {
        "sampled": True,
        "large_blocks": int(large.sum()),
        "medium_blocks": int(medium.sum()),
        "small_blocks_seen": int(small.sum()),
        "threshold": mean_load,
        "chop": chop,
    }
    plan = make_plan("sampling", r, link, builder, assign, int(round(records)), info)
    plan.hashing = HashRoutes(  # type: ignore[attr-defined]
        np.asarray(ch_block, dtype=np.int64), np.asarray(ch_src, dtype=np.int8),
        np.asarray(ch_h, dtype=np.int64), np.asarray(ch_unit0, dtype=np.int64), bucket_units)
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
    plan.info["load_variance"] = var_t
    return plan


def goal_test(plan: Plan, goal: SampleGoal) -> dict[str, Any]:
    """Whether ``plan`` meets ``goal``: max_t E + z·sd ≤ (1 + δ)·mean, z for ``α^{1/r}``."""
    loads = plan.loads.astype(np.float64)
    var = np.asarray(plan.info.get("load_variance", np.zeros(len(loads))), dtype=np.float64)
    busy = int((loads > 0).sum())
    z = NormalDist().inv_cdf(goal.alpha ** (1.0 / max(busy, 1)))
    mean = float(loads.mean()) if len(loads) else 0.0
    upper = loads + z * np.sqrt(var)
    bound = float(upper.max()) if len(upper) else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(loads > 0, z * np.sqrt(var) / loads, 0.0)
    return {
        "met": bool(mean > 0 and bound <= (1.0 + goal.delta) * mean),
        "z": z,
        "upper_imbalance": bound / mean if mean > 0 else 1.0,
        "predicted_imbalance": float(loads.max() / mean) if mean > 0 else 1.0,
        "max_relative_error": float(rel.max()) if len(rel) else 0.0,
    }
