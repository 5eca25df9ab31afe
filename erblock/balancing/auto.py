"""``auto``: predicted makespans of candidate plans, and the choice among them.

``auto`` (:func:`choose`) builds candidate plans (every registered strategy that plans
from a BDM, each with the variants it offers, e.g. BlockSplit at several split degrees)
and keeps the one with the lowest predicted makespan, except that a plan more than
:data:`UNBALANCED` (its busiest task's comparisons over the mean) must be predicted
:data:`UNBALANCED_MARGIN` times faster than the best balanced one: a model fitted on a
small calibration job can misprice replication, while idle threads are certain (measured:
on one block of 1.28 B pairs with ``encode``, a calibration whose per-record cost had
absorbed the small match tasks' comparisons, before those were priced apart, predicted
``basic`` faster; it took 18.6 s against blocksplit's 10 s). The prediction and the
table of candidates are the plan's :class:`~erblock.balancing.plan.Prediction`, which
:mod:`erblock.balancing.explain` shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from .bdm import BDM
from .cost import CostModel, check_threads, plan_task_features
from .packing import lpt_makespan
from .plan import Candidate, Plan, Prediction
from .strategies import STRATEGIES


def predict(plan: Plan, model: CostModel, threads: int) -> Prediction:
    """Predicted seconds per reduce task and makespan of ``plan`` on ``threads``.

    ``makespan`` is the predicted route+compare wall time; ``ideal`` is the same with the
    total work spread perfectly over the threads, so ``makespan / ideal`` is the predicted
    loss to imbalance and indivisible tasks.
    """
    threads = check_threads(threads)
    cmp, rec, mts, small = plan_task_features(plan)
    seconds = model.task_seconds(cmp, rec, mts, small) if plan.n_tasks else np.zeros(0)
    makespan = model.overhead_per_job + lpt_makespan(seconds, threads)
    ideal = model.overhead_per_job + (float(seconds.sum() / threads) if len(seconds) else 0.0)
    mean = float(seconds.mean()) if len(seconds) else 0.0
    return Prediction(makespan=makespan, ideal=ideal,
                      imbalance_seconds=float(seconds.max() / mean) if mean > 0 else 1.0,
                      task_seconds=seconds, threads=threads, cost_model=model.to_dict())


def candidate_plans(bdm: BDM, r: int, strategies: Mapping[str, Any] | None = None
                    ) -> dict[str, Plan]:
    """Plans of every registered strategy ``auto`` weighs (those that plan from a BDM),
    with the variants each offers (BlockSplit at several split degrees)."""
    out: dict[str, Plan] = {}
    for s in (STRATEGIES if strategies is None else strategies).values():
        if s.in_auto:
            out.update(s.candidates(bdm, r))
    return out


def _row(label: str, plan: Plan, pred: Prediction, extra: float, chosen: bool) -> Candidate:
    return Candidate(
        label=label, strategy=plan.strategy, predicted_makespan=pred.makespan,
        predicted_total=pred.makespan + extra, ideal=pred.ideal, imbalance=plan.imbalance,
        max_load=int(plan.loads.max()) if plan.n_tasks else 0, match_tasks=len(plan.match),
        replication=plan.replication, records_routed=plan.records_routed,
        split_factor=getattr(plan.details, "split_factor", None), chosen=chosen)


#: a candidate whose busiest task has more than this many times the mean comparisons ...
UNBALANCED = 2.0
#: ... is chosen over the best balanced candidate only when predicted this many times
#: faster: a model fitted on small calibration jobs can overstate what replicating
#: records costs, while an unbalanced plan's idle threads are certain
UNBALANCED_MARGIN = 1.5


def choose(plans: Mapping[str, Plan], model: CostModel, threads: int,
           extra_seconds: Mapping[str, float] | None = None, *,
           chosen: str | None = None) -> tuple[str, Plan]:
    """The label and plan with the lowest predicted makespan (plus its extra seconds, the
    profiling a candidate needs beyond the others), with its prediction and the table of
    all candidates attached. Ties go to the plan that routes fewer records. A plan more
    than :data:`UNBALANCED` must beat the best balanced one by :data:`UNBALANCED_MARGIN`.
    ``chosen`` picks a given label instead (an explicit strategy, explained against the
    others)."""
    if not plans:
        raise ValueError("choose: no candidate plans")
    extra_seconds = extra_seconds or {}
    preds = {label: predict(p, model, threads) for label, p in plans.items()}

    def total(k: str) -> float:
        return preds[k].makespan + extra_seconds.get(k, 0.0)

    ranked = sorted(plans, key=lambda k: (total(k), plans[k].records_routed, k))
    label = ranked[0] if chosen is None else chosen
    if chosen is None and plans[label].imbalance > UNBALANCED:
        balanced = [k for k in ranked if plans[k].imbalance <= UNBALANCED]
        if balanced and total(label) * UNBALANCED_MARGIN > total(balanced[0]):
            label = balanced[0]
    rows = tuple(_row(k, plans[k], preds[k], float(extra_seconds.get(k, 0.0)), k == label)
                 for k in ranked)
    basic = plans.get("basic")
    pred = dataclasses.replace(
        preds[label], candidates=rows, auto_choice=label if chosen is None else None,
        basic_loads=None if basic is None else basic.loads.copy())
    return label, plans[label].with_prediction(pred)


def annotate(plan: Plan, model: CostModel, threads: int) -> Plan:
    """``plan`` with its predicted makespan under ``model`` attached."""
    return plan.with_prediction(predict(plan, model, threads))
