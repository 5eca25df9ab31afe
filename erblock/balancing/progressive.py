"""Progressive sampling (paper 001, Ramakrishnan et al.): plan from a sample of partitions.

A full profile computes the blocking key of every record before anything is planned. The
progressive sampler instead profiles a random sample of input partitions, grows it
(doubling) and stops as soon as the plan it would build is good enough: every reduce
task's load, at confidence ``alpha``, stays within ``(1 + delta)`` of the mean reduce load.
The engine side (profiling the partitions) is :func:`erblock.engine.profile.profile_sample`;
this module is the pure part: the goal, the estimates and the stopping test; the plan is
:func:`erblock.balancing.sampled.plan_sampled`.

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

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from statistics import NormalDist
from typing import Any

import numpy as np

from ..scalars import as_python, is_int, is_number
from .bdm import BDM, SRC_R, SRC_S
from .plan import Plan


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
            if not is_number(v) or not math.isfinite(v):
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
            if not is_int(v) or v < (
                    1 if name == "min_partitions" else 0):
                raise bad(name, "an integer >= 1" if name == "min_partitions"
                          else "an integer >= 0")
            object.__setattr__(self, name, as_python(v))  # a NumPy integer as Python's
        for name in ("delta", "alpha", "initial", "growth", "max_fraction", "small", "chop"):
            object.__setattr__(self, name, as_python(getattr(self, name)))

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



# -- the stopping test -----------------------------------------------------------------


def goal_test(plan: Plan, goal: SampleGoal) -> dict[str, Any]:
    """Whether ``plan`` meets ``goal``: max_t E + z·sd ≤ (1 + δ)·mean, z for ``α^{1/r}``."""
    loads = plan.loads.astype(np.float64)
    details = plan.details
    var = np.asarray(getattr(details, "load_variance", np.zeros(len(loads))), dtype=np.float64)
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
