"""Cost model, makespan prediction and ``auto`` (erblock.balancing.cost): no cluster.

Literal values for the model and the list schedule, a calibration fit that must recover
the model that generated the measurements, hypothesis for the invariants of the split
degrees (every pair exactly once at any threshold) and of the schedule (Graham's bounds),
and ``auto`` choosing by predicted makespan, not by imbalance.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_check import exact_pairs_and_loads
from strategies import bdms

from erblock.balancing import BDM, plan_basic, plan_blocksplit
from erblock.balancing.auto import annotate, candidate_plans, choose, predict
from erblock.balancing.cost import (
    CostModel,
    default_task_count,
    most_tasks,
    nnls_subsets,
    overhead_warning,
    plan_task_features,
)
from erblock.balancing.packing import lpt_makespan
from erblock.report import RunReport


def test_task_seconds_is_linear_in_what_a_task_does():
    m = CostModel(overhead_per_task=1.0, per_comparison=0.5, per_record=0.25,
                  per_match_task=2.0)
    got = m.task_seconds(np.array([0, 4]), np.array([0, 8]), np.array([0, 1]))
    assert got.tolist() == [1.0, 1.0 + 2.0 + 2.0 + 2.0]
    assert m.comparisons_per_second == 2.0
    # comparisons in small match tasks: their own rate, or per_comparison when not given
    assert m.task_seconds(4, 0, 0, small=4).tolist() == 3.0
    priced = dataclasses.replace(m, per_small_comparison=2.0)
    assert priced.task_seconds(np.array([4, 4]), 0, 0, small=np.array([0, 3])).tolist() == [
        3.0, 1.0 + 0.5 + 6.0]


@pytest.mark.parametrize("field", ["overhead_per_task", "per_comparison", "per_record",
                                   "per_match_task", "overhead_per_job",
                                   "per_small_comparison"])
@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "1", True])
def test_cost_model_rejects_bad_values(field, bad):
    with pytest.raises(ValueError, match=f"CostModel.{field} must be a finite number"):
        CostModel(**{field: bad})


def test_cost_model_dict_round_trip():
    m = CostModel(0.01, 2e-8, 1e-6, 5e-5, 0.25, source="test")
    assert CostModel.from_dict(m.to_dict()) == m
    priced = dataclasses.replace(m, per_small_comparison=3e-7)
    assert CostModel.from_dict(priced.to_dict()) == priced
    # a model saved before small match tasks were priced apart reads as one rate
    old = {k: v for k, v in m.to_dict().items() if k != "per_small_comparison"}
    assert CostModel.from_dict(old) == m and m.small_rate == m.per_comparison
    with pytest.raises(ValueError, match="unknown field"):
        CostModel.from_dict({"per_pair": 1.0})


def test_a_fitted_model_keeps_its_measurements_through_json_and_refits_to_itself():
    import json

    truth = CostModel(overhead_per_task=0.004, per_comparison=4e-8, per_record=3e-6,
                      per_match_task=5e-5, overhead_per_job=0.3)
    runs = [_simulated_run(truth, _items(1), 2, 2), _simulated_run(truth, _items(1), 16, 2)]
    runs[0]["scale"] = 2.5  # extra fields of a run are kept as they are
    fit = CostModel.fit(runs, threads=2)
    assert len(fit.measurements) == 2 and fit.measurements[0]["scale"] == 2.5
    back = CostModel.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back == fit and back.measurements == fit.measurements
    again = CostModel.fit(back.measurements, threads=2)
    assert again == fit
    # equality is about the coefficients, not what they were measured on
    assert dataclasses.replace(fit, measurements=()) == fit
    with pytest.raises(ValueError, match="missing seconds"):
        CostModel.from_dict({"measurements": [{"comparisons": [1], "records": [1],
                                               "match_tasks": [1]}]})
    with pytest.raises(ValueError, match="differ in length"):
        CostModel.from_dict({"measurements": [{"comparisons": [1], "records": [1, 2],
                                               "match_tasks": [1], "seconds": [0.1]}]})
    with pytest.raises(ValueError, match="one number per reduce task"):
        CostModel.fit([{"comparisons": 1, "records": 1, "match_tasks": 1, "seconds": 0.5}],
                      threads=1)
    with pytest.raises(ValueError, match="no reduce task"):
        CostModel.fit([{"comparisons": [], "records": [], "match_tasks": [], "seconds": []}],
                      threads=1)
    assert CostModel.from_dict({"measurements": None}).measurements == ()
    # numpy numbers of a run's other fields come out as Python ones (JSON-ready)
    run = dict(runs[0], wall=np.float32(0.5), scale=np.int64(3))
    kept = CostModel.fit([run], threads=2).measurements[0]
    assert type(kept["wall"]) is float and type(kept["scale"]) is int
    json.dumps(kept)
    # a report's dict shares nothing with the model it came from
    d = fit.to_dict()
    d["measurements"][0]["seconds"][0] = -1.0
    assert fit.measurements[0]["seconds"][0] != -1.0


def test_lpt_makespan_literal():
    # Graham's example: LPT gives 11 on 3 machines (optimum 9)
    assert lpt_makespan(np.array([5, 5, 4, 4, 3, 3, 3]), 3) == 11.0
    assert lpt_makespan(np.array([3.0, 1.0]), 8) == 3.0  # more threads than tasks
    assert lpt_makespan(np.zeros(0), 2) == 0.0
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        lpt_makespan(np.ones(3), 0)


@settings(max_examples=200, deadline=None)
@given(costs=st.lists(st.floats(0, 100), min_size=1, max_size=40), t=st.integers(1, 8))
def test_lpt_makespan_within_list_scheduling_bounds(costs, t):
    c = np.array(costs)
    got = lpt_makespan(c, t)
    assert max(c.max(), c.sum() / t) - 1e-9 <= got  # no schedule beats these
    assert got <= c.sum() / t + c.max() * (1 - 1 / t) + 1e-9  # Graham's list bound


def test_nnls_recovers_coefficients_and_keeps_them_non_negative():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(50), rng.uniform(0, 1e6, 50), rng.uniform(0, 1e4, 50)])
    y = x @ np.array([0.002, 5e-8, 1e-6])
    assert np.allclose(nnls_subsets(x, y), [0.002, 5e-8, 1e-6], rtol=1e-6)
    # a column that only hurts gets 0, never a negative coefficient
    y2 = x[:, 1] * 1e-7 - x[:, 2] * 1e-9
    coef = nnls_subsets(x, y2)
    assert (coef >= 0).all() and coef[2] == 0.0


def _items(seed: int, n: int = 96, scale: float = 1.0):
    """Match tasks of a job: comparisons, records, match tasks (one each)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 2_000_000, n) * scale, rng.integers(10, 3000, n) * scale,
            np.ones(n))


def _simulated_run(model: CostModel, items, r: int, threads: int, *, c_in: float = 0.001,
                   outside_per_record: float = 0.0, small=None):
    """What a cluster following ``model`` would report for ``items`` on ``r`` tasks: in-task
    seconds miss the per-task overhead spent outside (scheduling) and the routing of
    records; the wall time has them, and the per-job constant. ``small``: which match
    tasks are small (their comparisons reported and priced apart)."""
    cmp, rec, mts = items
    task = np.arange(len(cmp)) % r
    cmp_t, rec_t, mts_t = (np.bincount(task, x, minlength=r) for x in (cmp, rec, mts))
    small_t = (np.zeros(r) if small is None
               else np.bincount(task, np.where(small, cmp, 0), minlength=r))
    seconds = (c_in + model.task_seconds(cmp_t, 0, mts_t, small_t) - model.overhead_per_task
               + (model.per_record - outside_per_record) * rec_t)
    c_out = model.overhead_per_task - c_in
    wall = (lpt_makespan(seconds + c_out, threads) + model.overhead_per_job
            + outside_per_record * rec.sum() / threads)
    run = {"comparisons": cmp_t, "records": rec_t, "match_tasks": mts_t, "seconds": seconds,
           "wall": wall}
    if small is not None:
        run["small_comparisons"] = small_t
    return run


def test_fit_recovers_the_model_that_made_the_measurements():
    truth = CostModel(overhead_per_task=0.004, per_comparison=4e-8, per_record=3e-6,
                      per_match_task=5e-5, overhead_per_job=0.3)
    small, big = _items(1), _items(1, scale=3.0)
    runs = [_simulated_run(truth, small, 2, 2, outside_per_record=1e-6),
            _simulated_run(truth, big, 2, 2, outside_per_record=1e-6),
            _simulated_run(truth, big, 16, 2, outside_per_record=1e-6)]
    fit = CostModel.fit(runs, threads=2)
    assert fit.per_comparison == pytest.approx(truth.per_comparison, rel=1e-3)
    assert fit.per_match_task == pytest.approx(truth.per_match_task, rel=0.05)
    assert fit.overhead_per_task == pytest.approx(truth.overhead_per_task, rel=0.1)
    assert fit.per_record == pytest.approx(truth.per_record, rel=0.1)
    assert fit.overhead_per_job == pytest.approx(truth.overhead_per_job, rel=0.1)
    assert fit.source == "calibrated"
    for run in (runs[0], runs[2]):
        cmp_t, rec_t, mts_t = run["comparisons"], run["records"], run["match_tasks"]
        predicted = fit.overhead_per_job + lpt_makespan(fit.task_seconds(cmp_t, rec_t, mts_t),
                                                        2)
        assert predicted == pytest.approx(run["wall"], rel=0.02)


def test_fit_prices_the_comparisons_of_small_match_tasks_apart():
    # small match tasks cost 20x a comparison: a job of many small blocks (few comparisons
    # a record) must not charge that to its records
    truth = CostModel(overhead_per_task=0.004, per_comparison=1e-8, per_record=3e-6,
                      per_match_task=5e-5, overhead_per_job=0.3, per_small_comparison=2e-7)
    rng = np.random.default_rng(3)
    n = 400
    sizes = rng.choice([2, 3, 40, 3000], n, p=[0.4, 0.3, 0.25, 0.05])
    items = (sizes * (sizes - 1) / 2, sizes.astype(float), np.ones(n))
    small = items[0] <= 2048
    pairs = (np.ones(300), np.full(300, 2.0), np.ones(300))  # the records-only run
    runs = [_simulated_run(truth, items, 2, 2, small=small),
            _simulated_run(truth, items, 16, 2, small=small),
            _simulated_run(truth, pairs, 2, 2, small=np.ones(300, bool))]
    fit = CostModel.fit(runs, threads=2)
    assert fit.per_comparison == pytest.approx(1e-8, rel=1e-3)
    assert fit.per_small_comparison == pytest.approx(2e-7, rel=1e-3)
    assert fit.per_record == pytest.approx(3e-6, rel=0.05)
    # with one rate for both, the fit cannot be right about records and comparisons
    merged = [{k: v for k, v in r.items() if k != "small_comparisons"} for r in runs]
    one = CostModel.fit(merged, threads=2)
    assert one.per_small_comparison == one.per_comparison
    assert abs(one.per_record - 3e-6) > 0.5e-6 or abs(one.per_comparison - 1e-8) > 1e-9
    # runs without small match tasks say nothing of their rate: it is the other one
    big = CostModel.fit([_simulated_run(truth, items, 2, 2),
                         _simulated_run(truth, items, 16, 2)], threads=2)
    assert big.small_rate == big.per_comparison


def test_plan_prices_only_small_match_tasks_as_small():
    from erblock.balancing.units import SMALL_CELLS

    # dedupe blocks of 3 (3 cells) and 100 (4,950 cells) records, one partition
    sizes = np.array([3, 3, 100, 64])
    bdm = BDM.from_arrays(np.arange(4), np.zeros(4), np.zeros(4), sizes, (1, 0), False)
    plan = plan_basic(bdm, 1)
    cells = sizes * (sizes - 1) // 2
    assert plan.small_loads.tolist() == [int(cells[cells <= SMALL_CELLS].sum())] == [2022]
    cmp, _, _, small = plan_task_features(plan)
    assert small.tolist() == [2022.0] and cmp.tolist() == [float(cells.sum())]


def test_fit_without_runs_of_other_sizes_charges_the_rest_per_job():
    truth = CostModel(overhead_per_task=0.002, per_comparison=4e-8, per_record=2e-6,
                      per_match_task=0.0, overhead_per_job=0.5)
    items = _items(2)
    runs = [_simulated_run(truth, items, 4, 2), _simulated_run(truth, items, 32, 2)]
    fit = CostModel.fit(runs, threads=2)
    assert fit.overhead_per_job == pytest.approx(0.5, rel=0.05)
    assert fit.per_comparison == pytest.approx(truth.per_comparison, rel=1e-3)
    # one run alone cannot tell tasks from the rest: all of it is charged per task
    one = CostModel.fit(runs[:1], threads=2)
    assert one.overhead_per_job == 0.0
    assert one.overhead_per_task > truth.overhead_per_task


def test_from_report_needs_tasks_and_threads():
    from erblock.report import TaskStats

    report = RunReport("dedupe", "basic", 1, phases={"route_compare": 0.2},
                       tasks=(TaskStats(0, comparisons=10, records=5, match_tasks=1,
                                        seconds=0.1),))
    with pytest.raises(ValueError, match="threads"):
        CostModel.from_report(report)
    m = CostModel.from_report(report, threads=1)
    assert m.source == "report"
    assert m.task_seconds(10, 5, 1) == pytest.approx(0.2, rel=1e-6)
    with pytest.raises(ValueError, match="no measured reduce tasks"):
        CostModel.from_report(RunReport("dedupe", "basic", 1), threads=1)


def _skewed_bdm(s: float = 1.0, n: int = 20_000, m: int = 8, seed: int = 0) -> BDM:
    rng = np.random.default_rng(seed)
    w = np.exp(-s * np.arange(50))
    blk = rng.choice(50, size=n, p=w / w.sum())
    part = rng.integers(0, m, n)
    u, c = np.unique(blk * m + part, return_counts=True)
    return BDM.from_arrays(u // m, u % m, np.zeros(len(u)), c, (m, 0), False)


def test_default_task_count_gives_a_small_job_fewer_tasks():
    m = CostModel()  # 10 ms a task, 5e-8 s a comparison, 5e-6 s a record
    # a big job: 4 per thread; a tiny one: one per thread (never fewer)
    assert default_task_count(1e9, 1e6, m, threads=2) == 8
    assert default_task_count(0, 0, m, threads=2) == 2
    assert default_task_count(200_000, 2_000, m, threads=2) == 2
    # in between, as many as hold 5 overheads (0.05 s) of work: 0.15 s -> 3, 0.16 s -> 4
    assert default_task_count(3_000_000, 0, m, threads=2) == 3
    assert default_task_count(3_000_000, 2_000, m, threads=2) == 4
    assert default_task_count(3_000_000, 0, m, threads=4) == 4
    # a model without per-task overhead has no reason for fewer tasks
    free = dataclasses.replace(m, overhead_per_task=0.0)
    assert default_task_count(10, 10, free, threads=3) == 12
    assert most_tasks(3) == 12 and most_tasks(1) == 4
    with pytest.raises(ValueError, match="threads"):
        most_tasks(0)


def test_overhead_warning_only_when_the_tasks_fixed_cost_swamps_the_job():
    m = CostModel()  # 10 ms a task, 5e-8 s a comparison
    # 100 tasks of a few thousand comparisons (a balance experiment): nothing to say
    assert overhead_warning(100, 242_334, m, threads=2) is None
    assert overhead_warning(2_000, 17_000, m, threads=2) is None  # 10 s: at the limit
    why = overhead_warning(100_000, 16_960, m, threads=2)
    assert why is not None and "n_tasks=100,000 for 16,960 comparisons" in why
    assert "83,040 of them can hold no comparison" in why and "~500 s on 2" in why
    assert "n_tasks=None" in why
    # more than 10 s of overhead, but the comparisons take longer still: a big job
    assert overhead_warning(4_000, 1e10, m, threads=2) is None
    assert overhead_warning(4_000, 1e7, m, threads=2) is not None


def test_planning_absurdly_many_tasks_warns_and_a_sensible_count_does_not(client):
    """The warning comes from planning, so a run and erblock.plan say it alike (a run
    of 3,000 tasks is the half minute the warning is about: not run here)."""
    import warnings

    import pandas as pd

    import erblock

    df = pd.DataFrame({"k": ["a"] * 8 + ["b"] * 4, "name": list("abcdefghijkl")})
    with pytest.warns(UserWarning, match=r"n_tasks=3,000 for 34 comparisons \(0.0 a task; "
                      r"2,966 of them can hold no comparison\)"):
        plan = erblock.plan(df, key="k", n_tasks=3_000, client=client)
    assert plan.n_tasks == 3_000 and plan.total_comparisons == 34  # honoured as asked
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        erblock.plan(df, key="k", n_tasks=40, client=client)


def test_plan_task_features_add_up_to_the_plan():
    plan = plan_blocksplit(_skewed_bdm(), 16)
    cmp, rec, mts, small = plan_task_features(plan)
    assert cmp.sum() == plan.total_comparisons
    assert 0 < small.sum() < cmp.sum() and (small <= cmp).all()
    assert rec.sum() == plan.records_routed
    assert mts.sum() == len(plan.match)


def test_predict_uses_the_list_schedule():
    plan = plan_basic(_skewed_bdm(), 8)
    model = CostModel(0.0, 1e-6, 0.0, 0.0, overhead_per_job=0.0)
    pred = predict(plan, model, threads=2)
    assert pred.makespan == pytest.approx(lpt_makespan(plan.loads * 1e-6, 2))
    assert pred.ideal == pytest.approx(plan.total_comparisons * 1e-6 / 2)
    assert pred.makespan >= pred.ideal


def test_auto_splits_when_comparisons_dominate_and_not_when_overhead_does():
    bdm = _skewed_bdm(s=1.0)
    plans = candidate_plans(bdm, 16)
    assert {"basic", "blocksplit", "blocksplit x2"} <= set(plans)
    compute_bound = CostModel(overhead_per_task=0.0, per_comparison=1e-7, per_record=0.0,
                              per_match_task=0.0)
    _, best = choose(plans, compute_bound, threads=4)
    cands = best.prediction.candidates
    assert best.strategy != "basic" and best.imbalance < 1.1
    assert cands[0].predicted_total <= cands[-1].predicted_total
    # per-record cost so high that replication outweighs balance: no split pays off
    shipping_bound = CostModel(overhead_per_task=0.0, per_comparison=1e-12, per_record=1.0,
                               per_match_task=1.0)
    _, best2 = choose(plans, shipping_bound, threads=4)
    assert best2.strategy == "basic"


def test_an_unbalanced_plan_must_win_by_a_clear_margin():
    """One giant block: basic leaves all but one thread idle. A model whose per-record
    cost makes replication look dear enough for basic to be predicted a little faster
    still gets a balanced plan; basic wins only when predicted much faster."""
    from erblock.balancing.auto import UNBALANCED, UNBALANCED_MARGIN
    from erblock.balancing.explain import describe

    bdm = _skewed_bdm(s=3.0, n=6000, m=2)
    plans = candidate_plans(bdm, 8)
    assert plans["basic"].imbalance > UNBALANCED

    def with_per_record(a: float) -> tuple[float, str, str]:
        model = CostModel(overhead_per_task=0.0, per_comparison=1e-7, per_record=a,
                          per_match_task=0.0)
        _, best = choose(plans, model, threads=2)
        rows = {c.label: c.predicted_makespan for c in best.prediction.candidates}
        balanced = min(v for k, v in rows.items() if plans[k].imbalance <= UNBALANCED)
        return rows["basic"] / balanced, best.prediction.auto_choice, describe(best)

    # sweep the per-record cost: basic is chosen exactly when predicted faster by the margin
    seen = set()
    for a in np.geomspace(1e-4, 1e2, 25):
        ratio, choice, text = with_per_record(float(a))
        assert (choice == "basic") == (ratio * UNBALANCED_MARGIN <= 1.0), (a, ratio, choice)
        seen.add((choice == "basic", ratio < 1.0))
        guarded = choice != "basic" and ratio < 1.0
        assert ("best balanced plan" in text) == guarded, text
    # the sweep covers: balanced by prediction, basic faster within the margin (guarded),
    # basic faster beyond it
    assert {(False, False), (False, True), (True, True)} <= seen


def test_finer_split_is_chosen_when_it_lowers_the_makespan():
    # one dominant block: P/r pieces pack unevenly onto 3 threads; finer pieces pack better
    bdm = _skewed_bdm(s=3.0, n=6000, m=2)
    plans = candidate_plans(bdm, 4)
    model = CostModel(0.0, 1e-7, 0.0, 0.0)
    _, best = choose(plans, model, threads=3)
    by_label = {c.label: c for c in best.prediction.candidates}
    assert by_label["blocksplit x8"].predicted_makespan < by_label["blocksplit"].predicted_makespan
    assert best.details.split_factor > 1.0


def test_choose_attaches_prediction_and_candidates():
    bdm = _skewed_bdm()
    plans = candidate_plans(bdm, 8)
    label, best = choose(plans, CostModel(), threads=2)
    pred = best.prediction
    assert pred.makespan == pytest.approx(pred.candidates[0].predicted_makespan)
    assert pred.auto_choice == label == pred.candidates[0].label
    assert len(pred.candidates) == len(plans)
    assert pred.basic_loads.tolist() == plans["basic"].loads.tolist()
    assert "predicted_makespan" in best.summary()
    assert annotate(plans["basic"], CostModel(), 2).prediction.candidates == ()


@pytest.mark.parametrize("factor", [0.25, 1.0, 3.0, 16.0])
@settings(max_examples=20, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 9))
def test_blocksplit_at_any_split_degree_covers_every_pair_once(factor, bdm, r):
    total = int(bdm.comparisons()[1].sum())
    threshold = total / (r * factor)
    plan = plan_blocksplit(bdm, r, threshold=threshold)
    got, want, done = exact_pairs_and_loads(bdm, plan)
    assert got == want and done.tolist() == plan.loads.tolist()
    assert all(c <= max(threshold, 1) for c in plan.match.comparisons.tolist())


def test_blocksplit_threshold_is_checked():
    with pytest.raises(ValueError, match="threshold must be a number of comparisons"):
        plan_blocksplit(_skewed_bdm(), 4, threshold=-1.0)


# -- calibration on the cluster (erblock.engine.calibrate) --------------------------------


def test_calibration_runs_once_per_session_only_for_jobs_worth_it(client):
    import pandas as pd

    import erblock
    from erblock.engine.calibrate import cached_models, clear_cache, worth_calibrating

    clear_cache()
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"k": rng.choice(list("abcdefgh"), 600),
                       "name": rng.choice(["ann", "anna", "annie", "bob", "robert"], 600)})
    # a small job is not worth calibrating for: auto plans with the default model
    assert not worth_calibrating(22_000, 2) and worth_calibrating(1e9, 2)
    small = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client, n_tasks=4)
    assert small.attrs["erblock_report"]["prediction"]["cost_model"]["source"] == "default"
    assert not cached_models()
    first = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client, n_tasks=4,
                           cost_model="calibrate")
    pred = first.attrs["erblock_report"]["prediction"]
    assert pred["calibration_seconds"] > 0
    model = CostModel.from_dict(pred["cost_model"])
    assert model.source.startswith("calibrated on ")
    assert model.per_comparison > 0
    # the report keeps what calibration measured: two runs of the skewed job (as many
    # tasks as threads, and eight times as many) at one scale, then the record-heavy run;
    # the skewed job was grown until comparing filled it, or to the largest scale
    from erblock.engine.calibrate import MAX_SCALE, TARGET_TASK_SECONDS

    skewed, many, heavy, pairs = model.measurements
    assert len(skewed["seconds"]) == 2 and len(many["seconds"]) == 16
    assert skewed["scale"] == many["scale"] and heavy["scale"] is None
    # the record-heavy runs: blocks of 40 (all small match tasks, 19.5 comparisons a
    # record) and pairs (half a comparison a record), routing the same records
    assert sum(heavy["small_comparisons"]) == sum(heavy["comparisons"])
    assert sum(heavy["comparisons"]) == pytest.approx(19.5 * sum(heavy["records"]))
    assert sum(pairs["comparisons"]) == sum(pairs["small_comparisons"])
    assert sum(pairs["comparisons"]) == sum(pairs["records"]) // 2
    assert sum(skewed["small_comparisons"]) < sum(skewed["comparisons"])
    assert model.per_small_comparison is not None
    assert sum(skewed["comparisons"]) == sum(many["comparisons"])
    assert (sum(skewed["seconds"]) >= TARGET_TASK_SECONDS / 2
            or skewed["scale"] == MAX_SCALE)
    assert CostModel.fit(model.measurements, threads=2, source=model.source) == model
    assert len(cached_models()) == 1
    second = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client, n_tasks=4)
    pred2 = second.attrs["erblock_report"]["prediction"]
    assert pred2["calibration_seconds"] == 0.0
    assert pred2["cost_model"] == pred["cost_model"]
    assert pred2["predicted_makespan"] > 0 and pred2["measured_makespan"] > 0
    # a model from a previous run's report, or given as a dict, skips calibration
    from_report = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client,
                                 n_tasks=4, cost_model=RunReport.of(second))
    assert from_report.attrs["erblock_report"]["prediction"]["cost_model"]["source"] == "report"
    import json

    as_json = json.loads(RunReport.of(second).to_json())  # --report run.json
    from_json = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client,
                               n_tasks=4, cost_model=as_json)
    assert from_json.attrs["erblock_report"]["prediction"]["cost_model"]["source"] == "report"
    given = erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client, n_tasks=4,
                           cost_model={"per_comparison": 1e-6, "source": "mine"})
    assert given.attrs["erblock_report"]["prediction"]["cost_model"]["source"] == "mine"
    # a different threshold keeps a different share of pairs: calibrated separately
    erblock.dedupe(df, key="k", compare={"name": "jaro"}, client=client, n_tasks=4,
                   threshold=0.9, cost_model="calibrate")
    assert len(cached_models()) == 2
    clear_cache()


def test_calibrate_needs_comparisons(client):
    import pandas as pd

    import erblock

    df = pd.DataFrame({"k": ["a", "a", "b"]})
    with pytest.raises(ValueError, match="pass compare="):
        erblock.plan(df, key="k", cost_model="calibrate", client=client)
    plan = erblock.plan(df, key="k", cost_model="default", client=client)
    assert plan.prediction.cost_model["source"] == "default"
    # one comparison: as many reduce tasks as threads (2), unless the user says otherwise
    assert plan.n_tasks == 2
    assert erblock.plan(df, key="k", client=client, n_tasks=5).n_tasks == 5
    run = erblock.candidates(df, key="k", client=client)
    assert RunReport.of(run).n_tasks == 2 and len(run) == 1


def test_a_run_reports_the_comparisons_of_small_match_tasks_as_planned(client):
    import pandas as pd

    import erblock

    # blocks of 3 (small) and of 80 (3,160 cells: not small), dedupe and link
    keys = np.r_[np.repeat(np.arange(20), 3), np.full(80, 99)]
    df = pd.DataFrame({"k": keys, "name": [f"n{i % 7}" for i in range(len(keys))]})
    for frames in ([df], [df, df.iloc[::2]]):
        plan = erblock.plan(*frames, key="k", client=client, n_tasks=3, strategy="basic")
        fn = erblock.dedupe if len(frames) == 1 else erblock.link
        rep = RunReport.of(fn(*frames, key="k", compare={"name": "exact"}, client=client,
                              n_tasks=3, strategy="basic"))
        got = [t.small_comparisons for t in sorted(rep.tasks, key=lambda t: t.task)]
        assert got == plan.small_loads.tolist()
        assert 0 < sum(got) < rep.comparisons


def test_bench_cluster_quick_smoke(tmp_path):
    """benchmarks/bench_cluster.py --quick runs end to end (code paths, never speed)."""
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_cluster.py"
    spec = importlib.util.spec_from_file_location("_bench_cluster", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    res = bench.main(["--quick", "--out", str(tmp_path), "--name", "smoke"])
    data = json.loads((tmp_path / "smoke.json").read_text())
    assert data["quick"] and data["summary"]["auto_measured_over_predicted_median"] > 0
    labels = [r["label"] for r in res["runs"]]
    assert labels[0] == "auto (calibrating)" and "sampling" in labels
    # every run compared the same pairs, whatever its plan
    assert len({r["comparisons"] for r in res["runs"]}) == 1
    assert (tmp_path / "smoke.md").read_text().startswith("## Cluster")
