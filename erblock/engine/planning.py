"""The plan phase of a run: which profile, and the plan made from it.

* :func:`profile_for` profiles what the job's strategy plans on: a progressive sample
  (``sample=``), a sketch (the cell strategies) or the BDM;
* :func:`plan_job` picks the cost model (calibrating when ``auto`` needs it and the job
  is worth it) and the number of reduce tasks, and plans: the sequence a run and
  :func:`erblock.plan` share;
* :func:`plan_from` turns a profile into a plan on ``r`` reduce tasks: the job's strategy,
  or for ``auto`` every strategy that plans on the BDM (with the variants each offers)
  under the cost model, keeping the lowest predicted makespan. It is pure given the
  profile, so the memory fit re-plans from the same profile with more tasks;
* :func:`prediction` puts the prediction next to what the run measured, for the report.

Multi-pass blocking: the BDM holds one row per (record, pass with a key), so every
planner balances the union of the passes. A pair that agrees on several passes is
planned once per pass but compared only in the first (the others are masked), so planned
comparisons exceed performed ones by exactly the number of such repeats; the matrix cells
computed, and so the time, still follow the plan. The report shows both.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import dask
import numpy as np

from ..balancing.auto import annotate, candidate_plans, choose
from ..balancing.cost import CostModel, default_task_count, most_tasks, overhead_warning
from ..balancing.explain import largest_blocks
from ..balancing.plan import Plan
from ..balancing.sampled import plan_sampled
from ..balancing.strategies import AUTO, get_strategy
from ..report import RunReport
from .calibrate import resolve_cost_model, worth_calibrating
from .cluster import total_threads
from .inputs import Source, split_source
from .job import Job
from .local import Executor
from .profile import Profile, profile_bdm, profile_sample, profile_sketch
from .tasks.labels import block_labels

#: the largest blocks whose key text :func:`erblock.plan` looks up (``describe()`` shows
#: the top five by default)
LABELLED_BLOCKS = 20


def strategy_options(job: Job) -> Any:
    """The options spec of the job's strategy (None for ``auto``)."""
    return job.options.strategy_options


def profile_kind(job: Job) -> str:
    """What the job plans on: "sample", "sketch" or "bdm"."""
    if job.options.sample is not None:
        return "sample"
    if job.strategy != AUTO and get_strategy(job.strategy).profile == "sketch":
        return "sketch"
    return "bdm"


def profile_for(client: Executor, job: Job, sources: Sequence[Source],
                check_ids: Sequence[bool], r: int) -> Profile:
    """Profile the prepared input for the job's strategy (see the module doc)."""
    kind = profile_kind(job)
    if kind == "sample":
        return profile_sample(client, job, sources, check_ids, r)
    if kind == "sketch":
        sketch = getattr(strategy_options(job), "sketch", None)
        return profile_sketch(client, job, sources, check_ids, r, sketch)
    return profile_bdm(client, job, sources, check_ids)


def first_task_count(job: Job, threads: int) -> int:
    """The reduce tasks a profile is made for: the job's ``n_tasks``, else
    :func:`~erblock.balancing.cost.most_tasks` (a sketch's width and a sample's draw
    depend on it)."""
    return job.n_tasks or most_tasks(max(1, int(threads)))


def task_count(job: Job, profile: Profile, model: CostModel, threads: int) -> int:
    """The reduce tasks of the plan: the job's ``n_tasks``, else fewer than
    :func:`first_task_count` for a small job whose exact profile (the BDM) says so
    (:func:`~erblock.balancing.cost.default_task_count`)."""
    if job.n_tasks is not None:  # honoured as asked, but said when absurd
        why = overhead_warning(job.n_tasks, profile.total_comparisons, model, threads)
        if why is not None:
            warnings.warn(why, UserWarning, stacklevel=2)
    if job.n_tasks is not None or profile.kind != "bdm":
        return first_task_count(job, threads)
    return default_task_count(profile.total_comparisons, profile.records_with_key, model,
                              threads)


def plan_job(client: Executor, job: Job, sources: Sequence[Source], profile: Profile,
             threads: int, *, explain: bool = False) -> tuple[Plan, CostModel, float]:
    """The plan of ``job`` from ``profile``, the cost model it was made with, and the
    seconds spent calibrating that model (0 when cached, given or not needed).

    Only ``auto`` on the BDM decides by the model, so only then, and for a job worth it
    (:func:`~erblock.engine.calibrate.worth_calibrating`), does an uncalibrated session
    calibrate; the reduce tasks are :func:`task_count`.
    """
    need = (job.strategy == AUTO and profile.kind == "bdm"
            and worth_calibrating(profile.total_comparisons, threads))
    model, calibration = resolve_cost_model(client, job, sources, threads, need=need)
    plan = plan_from(profile, job, task_count(job, profile, model, threads), model, threads,
                     explain=explain)
    return plan, model, calibration


def plan_from(profile: Profile, job: Job, r: int, model: CostModel, threads: int, *,
              explain: bool = False) -> Plan:
    """The plan of ``job`` on ``r`` reduce tasks from ``profile`` (see the module doc).

    ``explain`` compares an explicit strategy with the candidates of ``auto`` too, and
    keeps the profile in the plan for :meth:`~erblock.balancing.plan.Plan.describe`.
    """
    threads = max(1, int(threads))
    if profile.kind == "sample":
        plan = plan_sampled(profile.data, r, job.options.sample)
        plan = annotate(plan.with_details(sample=profile.sample), model, threads)
    elif job.strategy == AUTO or (explain and profile.kind == "bdm"):
        plans = candidate_plans(profile.data, r)
        if job.strategy != AUTO and job.strategy not in plans:
            plans[job.strategy] = get_strategy(job.strategy).make(
                profile.data, r, strategy_options(job))
        plans = {k: p.with_records_in(profile.records_with_key) for k, p in plans.items()}
        _, plan = choose(plans, model, threads,
                         chosen=None if job.strategy == AUTO else job.strategy)
    else:
        plan = get_strategy(job.strategy).make(profile.data, r, strategy_options(job))
        plan = annotate(plan, model, threads)
    plan = plan.with_records_in(profile.records_with_key)
    return plan.with_profile(profile.data) if explain else plan


def prediction(plan: Plan, report: RunReport, calibration_seconds: float = 0.0,
               windowed: bool = False) -> dict[str, Any]:
    """The plan's prediction next to what ``report`` measured (``windowed``: the job has
    a sorted-neighbourhood pass)."""
    pred = plan.prediction
    measured = float(report.phases.get("route_compare", 0.0))
    predicted = pred.makespan if pred is not None else 0.0
    out: dict[str, Any] = {
        "strategy": plan.strategy,
        "auto": bool(pred is not None and pred.auto_choice is not None),
        "auto_choice": pred.auto_choice if pred is not None else None,
        "threads": pred.threads if pred is not None else None,
        "predicted_makespan": predicted,
        "measured_makespan": measured,
        "measured_over_predicted": measured / predicted if predicted > 0 else None,
        "predicted_ideal": pred.ideal if pred is not None else None,
        "predicted_imbalance_seconds": pred.imbalance_seconds if pred is not None else None,
        "measured_imbalance_seconds": report.imbalance_seconds,
        "predicted_comparisons": plan.total_comparisons,
        "performed_comparisons": report.comparisons,
        "cost_model": dict(pred.cost_model) if pred is not None else None,
        "calibration_seconds": calibration_seconds,
    }
    sample = getattr(plan.details, "sample", None)
    if sample is not None:
        out["sample"] = sample
    if plan.estimated:
        out["loads_estimated"] = True  # planned comparisons are estimates
    else:  # exact plans: what the plan counted and no task compared
        out["planned_pairs_not_compared"] = plan.total_comparisons - report.comparisons
        # the pairs found by several passes or blocks (compared once); a sorted-
        # neighbourhood pass's blocks also hold pairs beyond its window: no such count
        out["repeat_pairs_skipped"] = None if windowed else out["planned_pairs_not_compared"]
    if pred is not None and pred.candidates:
        out["candidates"] = [c.to_dict() for c in pred.candidates]
    if pred is not None:
        out["predicted_task_seconds"] = [float(x) for x in pred.task_seconds]
    return out


def with_block_labels(client: Executor, job: Job, sources: Sequence[Source],
                      inputs: Sequence[Any], plan: Plan) -> Plan:
    """``plan`` with the key text of its :data:`LABELLED_BLOCKS` largest blocks, so that
    ``describe()`` says which key value makes a block large (:mod:`.tasks.labels`): one
    more pass over the inputs, for :func:`erblock.plan` only (a run never needs it)."""
    wanted = np.array([b["block"] for b in largest_blocks(plan, LABELLED_BLOCKS)],
                      dtype=np.int64)
    if len(wanted) == 0:
        return plan
    todo = []
    for source, frame in zip(sources, inputs):
        parts = list(source.held) or split_source(client, frame, job,
                                                  total_threads(client)).parts
        todo += [dask.delayed(block_labels, pure=False)(p, job.keys, source.dates_read,
                                                         wanted) for p in parts]
    labels: dict[int, str] = {}
    for found in client.compute(todo, sync=True):
        for block, text in found.items():
            labels.setdefault(block, text)
    return plan.with_block_labels(labels)
