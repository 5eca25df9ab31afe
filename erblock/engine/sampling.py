"""Progressive sampling on the cluster (paper 001): profile a growing random sample of
input partitions until the plan built from it meets the goal.

Each round computes the blocking keys and BDM rows of the newly drawn partitions only (one
small Dask task each), re-estimates the blocks, rebuilds the chop/pack/hash plan and runs
the stopping test of :mod:`erblock.balancing.sampling`. The sample then grows by
``goal.growth`` until the test passes, the partitions run out or ``goal.max_fraction`` is
reached. Partitions are drawn in a random order fixed by ``goal.seed``; for link both
sources are sampled at the same fraction.

What the full profile checks on every record is only checked on the sample here: record
ids are checked for uniqueness within the sampled partitions, and the counts of records
and of records without a key in the report are estimates (``records_estimated``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import dask
import dask.dataframe as dd
import numpy as np
from distributed import Client

from ..balancing.bdm import BDM, SRC_R, SRC_S
from ..balancing.cost import CostModel, annotate
from ..balancing.plan import Plan
from ..balancing.sampling import SampleGoal, estimate, goal_test, plan_sampled
from ..blocking.keys import NULL_BLOCK

if TYPE_CHECKING:  # pragma: no cover
    from .run import Job


def _check_sample_ids(ids: dict[int, list[np.ndarray]], link: bool) -> None:
    for src, chunks in ids.items():
        if not chunks:
            continue
        _, counts = np.unique(np.concatenate(chunks), return_counts=True)
        if (counts > 1).any():
            which = "df_s" if src == SRC_S else ("df_r" if link else "df")
            raise ValueError(
                f"{which}: record ids are not unique ({int((counts > 1).sum())} ids repeat in "
                "the sampled partitions). erblock reports pairs by id, so every record needs "
                "its own: call reset_index(drop=True) on a Dask frame read from files, or pass "
                "id='<a unique column>'"
            )


def profile_sample(client: Client, job: Job, prepared: Sequence[dd.DataFrame],
                   check_ids: Sequence[bool], threads: int, r: int, model: CostModel,
                   t0: float) -> tuple[Plan, dict[str, int], dict[str, float]]:
    """Sample, estimate and plan until ``job.sample`` is met: (plan, estimated record
    counts, {"profile": seconds since ``t0`` spent sampling, "plan": planning seconds})."""
    from .run import _profile_partition

    goal: SampleGoal = job.sample
    m = [p.npartitions for p in prepared] + ([0] if len(prepared) == 1 else [])
    delayed = [p.to_delayed() for p in prepared]
    rng = np.random.default_rng(goal.seed)
    order = [rng.permutation(mi) for mi in m]
    cap = [min(mi, max(1, math.ceil(goal.max_fraction * mi))) for mi in m]
    taken = [0, 0]
    cols: dict[str, list[np.ndarray]] = {"block": [], "part": [], "src": [], "count": []}
    records = [0, 0]
    ids: dict[int, list[np.ndarray]] = {SRC_R: [], SRC_S: []}
    rounds: list[dict[str, Any]] = []
    plan_seconds = 0.0
    fraction = goal.initial
    while True:
        want = [min(c, max(min(goal.min_partitions, mi), math.ceil(fraction * mi), t + 1))
                for c, mi, t in zip(cap, m, taken)]
        tasks, srcs = [], []
        for src in range(len(prepared)):
            for i in order[src][taken[src]:want[src]].tolist():
                tasks.append(dask.delayed(_profile_partition)(delayed[src][i], check_ids[src]))
                srcs.append(src)
        for src, res in zip(srcs, client.compute(tasks, sync=True) if tasks else []):
            for k in cols:
                cols[k].append(res[k])
            records[src] += res["records"]
            if "ids" in res:
                ids[src].append(res["ids"])
        taken = want
        t_plan = time.perf_counter()
        arr = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}
        keyed = arr["block"] != NULL_BLOCK
        sample = BDM.from_arrays(arr["block"][keyed], arr["part"][keyed], arr["src"][keyed],
                                 arr["count"][keyed], (m[0], m[1]), job.link)
        est = estimate(sample, (taken[0], taken[1]), (m[0], m[1]))
        plan = plan_sampled(est, r, goal)
        test = goal_test(plan, goal)
        plan_seconds += time.perf_counter() - t_plan
        rounds.append({"partitions": list(taken), "records": int(sum(records)),
                       "upper_imbalance": test["upper_imbalance"],
                       "predicted_imbalance": test["predicted_imbalance"],
                       "met": test["met"]})
        if test["met"] or taken == cap:
            break
        fraction *= goal.growth
    _check_sample_ids(ids, job.link)
    t_plan = time.perf_counter()
    annotate(plan, model, threads)
    scale = [mi / t if t else 0.0 for mi, t in zip(m, taken)]
    null = arr["block"] == NULL_BLOCK
    not_blocked = [float(arr["count"][null & (arr["src"] == s)].sum()) * scale[s]
                   for s in (SRC_R, SRC_S)]
    rec = {
        "records_r": int(round(records[SRC_R] * scale[SRC_R])),
        "records_s": int(round(records[SRC_S] * scale[SRC_S])),
        "not_blocked_r": int(round(not_blocked[SRC_R])),
        "not_blocked_s": int(round(not_blocked[SRC_S])),
        "records_estimated": 1,
    }
    rec["not_blocked"] = rec["not_blocked_r"] + rec["not_blocked_s"]
    plan.info["sample"] = {
        "goal": goal.to_dict(),
        "goal_met": test["met"],
        "partitions_sampled": list(taken),
        "partitions": list(m),
        "fraction": est.fraction,
        "records_sampled": int(sum(records)),
        "rounds": rounds,
        "z": test["z"],
        "upper_imbalance": test["upper_imbalance"],
        "max_relative_error": test["max_relative_error"],
    }
    plan.info["sample_partitions"] = int(sum(taken))
    plan.info["sample_records"] = int(sum(records))
    plan.info["sample_goal_met"] = bool(test["met"])
    plan_seconds += time.perf_counter() - t_plan
    total = time.perf_counter() - t0
    return plan, rec, {"profile": total - plan_seconds, "plan": plan_seconds}
