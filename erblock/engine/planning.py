"""The plan phase of a run: profile (full or progressive sample), cost model, strategy.

* ``make_plan`` runs one planner, or for ``auto`` every candidate (all registered
  strategies that plan from a BDM, BlockSplit at several split degrees) and keeps the one
  with the lowest predicted makespan under the cost model (:mod:`erblock.balancing.cost`).
  The prediction, and for ``auto`` the table of candidates, go into ``plan.info``.
* ``plan_job`` is what :func:`erblock.engine.run.run` calls between prepare and route.
* ``prediction`` puts the prediction next to what the run measured, for the report.

Multi-pass blocking: the BDM holds one row per (record, pass with a key), so every planner
balances the union of the passes. A pair that agrees on several passes is planned once
per pass but compared only in the first (the others are masked), so planned comparisons
exceed performed ones by exactly the number of such repeats; the matrix cells computed,
and so the time, still follow the plan. The report shows both and their difference.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import dask.dataframe as dd
import numpy as np
from distributed import Client

from ..balancing.bdm import BDM
from ..balancing.cost import CostModel, annotate, candidate_plans, choose
from ..balancing.plan import Plan
from ..balancing.strategies import STRATEGIES
from .calibrate import resolve_cost_model, worth_calibrating

if TYPE_CHECKING:  # pragma: no cover
    from ..report import RunReport
    from .run import Job


def make_plan(bdm: BDM, strategy: str, r: int, *, model: CostModel | None = None,
              threads: int = 1, records_in: int | None = None, explain: bool = False) -> Plan:
    """Plan ``bdm`` on ``r`` reduce tasks with ``strategy`` (or ``"auto"``).

    ``model`` and ``threads`` give the predicted makespan (``plan.info``); ``records_in``
    (distinct records with a key) makes ``replication`` count a record once even when it
    has a key in several passes; ``explain`` adds the candidate table for an explicit
    strategy too (``auto`` always has it).
    """
    model = model or CostModel()
    threads = max(1, int(threads))
    if strategy == "auto" or explain:
        plans = candidate_plans(bdm, r)
        if strategy != "auto" and strategy not in plans:
            plans[strategy] = STRATEGIES[strategy](bdm, r)
        for p in plans.values():
            _set_records_in(p, records_in)
        best, cands = choose(plans, model, threads)
        plan = best if strategy == "auto" else plans[strategy]
        if strategy == "auto":
            label = next(c.label for c in cands if c.plan is best)
            plan.info["auto"] = True
            plan.info["auto_choice"] = label
        annotate(plan, model, threads, cands)
        return plan
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(sorted(STRATEGIES))} or 'auto', "
                         f"got {strategy!r}")
    plan = STRATEGIES[strategy](bdm, r)
    _set_records_in(plan, records_in)
    annotate(plan, model, threads)
    return plan


def _set_records_in(plan: Plan, records_in: int | None) -> None:
    if records_in is not None and records_in > 0 and records_in != plan.records_in:
        plan.info["key_rows_in"] = plan.records_in  # (record, pass) rows with a key
        plan.records_in = int(records_in)
        plan.replication = plan.records_routed / plan.records_in


def records_with_key(rec: dict[str, int]) -> int:
    """Distinct records that have a key in at least one pass (from the profile counts)."""
    return int(rec.get("records_r", 0) + rec.get("records_s", 0) - rec.get("not_blocked", 0))


def plan_job(client: Client, job: Job, prepared: Sequence[dd.DataFrame],
             check_ids: Sequence[bool], threads: int, r: int, t0: float,
             explain: bool = False) -> tuple[Plan, dict[str, int], dict[str, float]]:
    """Profile and plan ``job``: (plan, record counts, phase seconds since ``t0``).

    ``profile`` is the time from ``t0`` (the run's start: keys are computed while
    profiling) until the BDM or the sample is in; ``plan`` the planning time including
    cost-model calibration. An exact plan keeps its BDM in ``plan.bdm`` only when
    ``explain`` (the plan is shipped to the workers, the BDM need not be).
    """
    from .run import profile, profile_sketch

    if job.sample is not None:
        from .sampling import profile_sample

        model, cal_seconds = resolve_cost_model(client, job, prepared, threads, need=False)
        plan, rec, timing = profile_sample(client, job, prepared, check_ids, threads, r,
                                           model, t0)
        timing["plan"] += cal_seconds
    else:
        # the cell strategies plan on a sketch profile (SketchProfile) instead of the BDM
        sketched = getattr(STRATEGIES.get(job.strategy), "needs_sketch", False)
        bdm: Any  # a SketchProfile for the cell strategies, else the BDM
        if sketched:
            bdm, rec = profile_sketch(prepared, client, job, check_ids, r)
        else:
            bdm, rec = profile(prepared, client, job, check_ids)
        t1 = time.perf_counter()
        timing = {"profile": t1 - t0}
        # auto plans on the BDM; calibrating pays off only for a big enough job
        need = job.strategy == "auto" and worth_calibrating(
            float(bdm.comparisons()[1].sum()), threads)
        model, cal_seconds = resolve_cost_model(client, job, prepared, threads, need=need)
        plan = make_plan(bdm, job.strategy, r, model=model, threads=threads,
                         records_in=records_with_key(rec), explain=explain and not sketched)
        timing["plan"] = time.perf_counter() - t1
        if explain:
            setattr(plan, "sketch" if sketched else "bdm", bdm)
    plan.info["calibration_seconds"] = cal_seconds
    return plan, rec, timing


def prediction(plan: Plan, report: RunReport) -> dict[str, Any]:
    """The plan's prediction next to what ``report`` measured."""
    info = plan.info
    measured = float(report.phases.get("route_compare", 0.0))
    predicted = float(info.get("predicted_makespan", 0.0))
    out: dict[str, Any] = {
        "strategy": plan.strategy,
        "auto": bool(info.get("auto", False)),
        "auto_choice": info.get("auto_choice"),
        "threads": info.get("threads"),
        "predicted_makespan": predicted,
        "measured_makespan": measured,
        "measured_over_predicted": measured / predicted if predicted > 0 else None,
        "predicted_ideal": info.get("predicted_ideal"),
        "predicted_imbalance_seconds": info.get("predicted_imbalance_seconds"),
        "measured_imbalance_seconds": report.imbalance_seconds,
        "predicted_comparisons": plan.total_comparisons,
        "performed_comparisons": report.comparisons,
        "cost_model": info.get("cost_model"),
        "calibration_seconds": info.get("calibration_seconds", 0.0),
    }
    if info.get("sampled"):
        out["sample"] = info.get("sample")
    if info.get("sampled") or info.get("estimated"):
        out["loads_estimated"] = True  # planned comparisons are estimates
    else:
        # exact plans: the difference is the pairs found by several passes (compared once)
        out["repeat_pairs_skipped"] = plan.total_comparisons - report.comparisons
    if "candidates" in info:
        out["candidates"] = info["candidates"]
    task_seconds = info.get("predicted_task_seconds")
    if task_seconds is not None:
        out["predicted_task_seconds"] = np.asarray(task_seconds, dtype=float).tolist()
    return out
