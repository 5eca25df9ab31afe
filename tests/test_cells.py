"""Cell strategies (paper 003 Alg. 5 and 6) on sketch profiles: exact pair sets whatever
the sketch collisions (through the real routing and comparer, tests/plan_check.py), true
per-task comparisons behind the estimated loads, balance on skewed blocks, and runs on a
LocalCluster against the brute force."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list
from plan_check import compare_all, record_units_all, records_from_bdm, route_all, true_pairs
from strategies import bdms

import erblock
from erblock.balancing import BDM, STRATEGIES
from erblock.balancing.explain import exact_loads, exact_task_comparisons
from erblock.balancing.sketch import SketchSpec, from_bdm
from erblock.balancing.strategies import plan_cellblock, plan_cellrange
from erblock.report import RunReport

CELL_PLANNERS = {"cellblock": plan_cellblock, "cellrange": plan_cellrange}


def skewed_bdm(weights: np.ndarray, link: bool, n: int = 50_000, m: int = 20,
               seed: int = 42) -> BDM:
    rng = np.random.default_rng(seed)
    p = weights / weights.sum()
    rows = []
    for src in (0, 1) if link else (0,):
        blk = rng.choice(len(p), size=n, p=p)
        part = rng.integers(0, m, n)
        u, c = np.unique(blk * m + part, return_counts=True)
        rows.append(pd.DataFrame({"b": u // m * 1_000_003 + 17, "p": u % m, "s": src, "c": c}))
    t = pd.concat(rows)
    return BDM.from_arrays(t["b"], t["p"], t["s"], t["c"], (m, m if link else 0), link)


@pytest.mark.parametrize("name", sorted(CELL_PLANNERS))
@settings(max_examples=30, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 12), w=st.integers(2, 9),
       kind=st.sampled_from(["countmin", "fastagms"]), seed=st.integers(0, 50),
       budget=st.sampled_from([5, 64, 1 << 21]))
def test_every_pair_once_whatever_the_collisions(name, bdm, r, w, kind, seed, budget):
    # tiny w: many blocks share a cell, records of different blocks meet in one unit
    plan = CELL_PLANNERS[name](bdm, r, sketch={"kind": kind, "w": w, "seed": seed})
    records = records_from_bdm(bdm, seed)
    routed = route_all(records, plan)
    got, done = compare_all(plan, routed, cell_budget=budget)
    want = true_pairs(records, bdm.link)
    assert got == want
    # the loads are estimates; the comparisons performed are the exact ones per task
    unit = record_units_all(records, plan)
    assert done.tolist() == exact_loads(plan, unit, records["_erb_block"].to_numpy()).tolist()
    assert plan.estimated is True
    assert len(plan.loads) == r and (plan.match.comparisons >= 1).all()


@pytest.mark.parametrize("name", sorted(CELL_PLANNERS))
@pytest.mark.parametrize("link", [False, True])
def test_plan_from_sketch_profile_equals_plan_from_bdm(name, link):
    bdm = skewed_bdm(np.exp(-0.5 * np.arange(30)), link, n=3_000, m=4)
    spec = SketchSpec(kind="fastagms", d=4, w=96, seed=2)
    a = CELL_PLANNERS[name](bdm, 8, sketch=spec)
    b = CELL_PLANNERS[name](from_bdm(bdm, spec), 8)
    for field in ("kind", "left", "right", "comparisons", "reduce_task"):
        assert np.array_equal(getattr(a.match, field), getattr(b.match, field))
    assert a.details.theta == b.details.theta
    with pytest.raises(ValueError, match="differs from the profile"):
        CELL_PLANNERS[name](from_bdm(bdm, spec), 8, sketch={"w": 97})
    with pytest.raises(TypeError, match="SketchProfile or a BDM"):
        CELL_PLANNERS[name]({"a": 1}, 8)


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("s", [0.0, 0.5, 1.0])
def test_exponential_skew_true_imbalance(s, link):
    # b = 100 blocks, m = 20 partitions, r = 100 tasks (paper 004); measured in the
    # comparisons each reduce task really performs, from the exact blocks of its records
    bdm = skewed_bdm(np.exp(-s * np.arange(100)), link)
    records = records_from_bdm(bdm)
    blocks = records["_erb_block"].to_numpy()
    limits = {"cellrange": 1.05, "cellblock": 1.15}
    for name, limit in limits.items():
        plan = STRATEGIES[name].make(bdm, 100)
        loads = exact_loads(plan, record_units_all(records, plan), blocks)
        assert loads.sum() == int(bdm.comparisons()[1].sum())
        assert loads.max() / loads.mean() <= limit, (name, loads.max() / loads.mean())


def _hash_mod(keys: np.ndarray, seed: np.uint64) -> np.ndarray:
    return (np.asarray(keys, dtype=np.int64) % 4).astype(np.uint64)


def test_blocks_sharing_a_cell_are_compared_only_within_a_block():
    # injected hash: blocks 0 and 4 land in cell 0; 6 + 4 records, pairs 15 + 6
    bdm = BDM.from_arrays([0, 4, 1], [0, 0, 0], [0, 0, 0], [6, 4, 2], (1, 0), False)
    spec = SketchSpec(kind="countmin", d=1, w=4, hash=_hash_mod)
    plan = plan_cellrange(bdm, 1, sketch=spec)
    assert plan.loads.tolist() == [45 + 1]  # Count-Min counts the cell as one block
    records = records_from_bdm(bdm)
    routed = route_all(records, plan)
    got, done = compare_all(plan, routed)
    assert got == true_pairs(records, False) and done.tolist() == [15 + 6 + 1]
    per_task = exact_task_comparisons(plan, record_units_all(records, plan),
                                      records["_erb_block"].to_numpy())
    assert sorted(per_task.tolist()) == [1, 21]


def test_grouped_compare_skips_cross_block_cells():
    # one cell holding 300 blocks of 3 records: 900 useful pairs, not 404 550
    n_blocks = 300
    bdm = BDM.from_arrays(np.arange(n_blocks) * 4, np.zeros(n_blocks), np.zeros(n_blocks),
                          np.full(n_blocks, 3), (1, 0), False)
    spec = SketchSpec(kind="countmin", d=1, w=4, hash=_hash_mod)
    plan = plan_cellrange(bdm, 1, sketch=spec)
    records = records_from_bdm(bdm)
    stats = []
    got, done = compare_all(plan, route_all(records, plan), stats=stats)
    assert done.tolist() == [900] and got == true_pairs(records, False)
    # neither the full 900 × 900 matrix nor one kernel call per block: runs are batched
    # and the block mask drops the cells between blocks
    (task,) = stats
    assert task.cells <= 0.1 * 900 * 900
    assert task.kernel_calls < n_blocks / 5


def test_options_are_checked():
    bdm = BDM.from_arrays([1], [0], [0], [5], (1, 0), False)
    with pytest.raises(ValueError, match="granularity must be a number >= 1"):
        plan_cellblock(bdm, 2, granularity=0.5)
    with pytest.raises(ValueError, match="estimate must be one of bounded, paper"):
        plan_cellrange(bdm, 2, estimate="exact")
    with pytest.raises(ValueError, match="n_tasks must be an integer >= 1"):
        plan_cellrange(bdm, 0)


# -- on a LocalCluster -----------------------------------------------------------------

KEYS = ["a"] * 6 + ["b"] * 3 + ["c", "d", "e", "f", None, ""]
NAMES = ["smith", "smyth", "jones", None, "li", "brown"]
COMPARE = {"name": "jaro_winkler"}


@st.composite
def frames(draw, max_size=50):
    n = draw(st.integers(0, max_size))
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=n, max_size=n))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n))
    start = draw(st.integers(0, 1000))
    return pd.DataFrame({"k": pd.Series(keys, dtype=object),
                         "name": pd.Series(names, dtype=object)},
                        index=pd.RangeIndex(start, start + n))


SKETCHES = st.one_of(st.none(), st.fixed_dictionaries(
    {"kind": st.sampled_from(["countmin", "fastagms"]), "w": st.integers(2, 6),
     "seed": st.integers(0, 9)}))


@pytest.mark.parametrize("strategy", sorted(CELL_PLANNERS))
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(df=frames(), m=st.integers(1, 6), r=st.integers(1, 20), sketch=SKETCHES)
def test_dedupe_on_cluster_matches_brute_force(client, strategy, df, m, r, sketch):
    pairs = erblock.dedupe(df, key="k", compare=COMPARE, strategy=strategy, n_tasks=r,
                           client=client, npartitions=m, sketch=sketch, sort=True)
    report = RunReport.of(pairs)
    got = pair_list(pairs)
    expected = brute_dedupe(df, ["k"])
    assert len(got) == len(set(got)) and set(got) == expected
    assert report.comparisons == len(expected)
    assert report.plan["estimated"] is True
    pos = {label: i for i, label in enumerate(df.index)}
    assert all(pos[a] < pos[b] for a, b in got)
    basic = erblock.dedupe(df, key="k", compare=COMPARE, strategy="basic", n_tasks=3,
                           client=client, sort=True)
    pd.testing.assert_frame_equal(pairs, basic)


@pytest.mark.parametrize("strategy", sorted(CELL_PLANNERS))
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(df_r=frames(), df_s=frames(), m=st.integers(1, 6), r=st.integers(1, 20),
       sketch=SKETCHES)
def test_link_on_cluster_matches_brute_force(client, strategy, df_r, df_s, m, r, sketch):
    pairs = erblock.link(df_r, df_s, key="k", compare=COMPARE, strategy=strategy, n_tasks=r,
                         client=client, npartitions=m, sketch=sketch)
    report = RunReport.of(pairs)
    got = pair_list(pairs)
    expected = brute_link(df_r, df_s, ["k"])
    assert len(got) == len(set(got)) and set(got) == expected
    assert report.comparisons == len(expected)


def test_skewed_link_on_cluster_is_exact_and_balanced(client):
    w = np.exp(-0.8 * np.arange(12))

    def make(n, seed):
        g = np.random.default_rng(seed)
        k = g.choice(12, n, p=w / w.sum()).astype(str).astype(object)
        k[g.random(n) < 0.05] = None
        return pd.DataFrame({"k": k, "name": g.choice(["ann", "anna", "bo", "bob"], n)})

    df_r, df_s = make(400, 1), make(300, 2)
    df_s.index = df_s.index + 10_000
    for strategy, limit in (("cellrange", 1.1), ("cellblock", 1.2)):
        pairs = erblock.link(df_r, df_s, key="k", compare={"name": "levenshtein"},
                             strategy=strategy, n_tasks=16, client=client, npartitions=4)
        rep = RunReport.of(pairs)
        assert set(pair_list(pairs)) == brute_link(df_r, df_s, ["k"])
        assert rep.records["not_blocked_r"] == int(df_r["k"].isna().sum())
        # small blocks (sub-cells of a few records): looser than the planner-level test
        assert rep.imbalance_comparisons < limit, (strategy, rep.imbalance_comparisons)


def test_sketch_option_errors(client):
    df = pd.DataFrame({"k": ["a", "a"], "name": ["x", "y"]})
    with pytest.raises(ValueError, match="strategy is 'basic'"):
        erblock.dedupe(df, key="k", compare=COMPARE, strategy="basic", sketch={"w": 64},
                       client=client)
    with pytest.raises(ValueError, match="kind must be one of fastagms, countmin"):
        erblock.dedupe(df, key="k", compare=COMPARE, strategy="cellrange",
                       sketch={"kind": "ams"}, client=client)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['rows'\]"):
        erblock.link(df, df, key="k", compare=COMPARE, strategy="cellblock",
                     sketch={"rows": 3}, client=client)
    plan = erblock.plan(df, key="k", strategy="cellrange", n_tasks=3, client=client,
                        sketch={"kind": "countmin", "w": 32})
    assert plan.details.sketch_kind == "countmin" and plan.details.sketch_w == 32
    assert plan.total_comparisons == 1


def test_strategies_benchmark_quick_run(tmp_path):
    # the benchmark script cannot rot: its --quick mode runs every section end to end
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_strategies.py"
    spec = importlib.util.spec_from_file_location("_bench_strategies", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    res = bench.main(["--quick", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "strategies.json").read_text())
    assert saved["verdict"]["pairrange"] == pytest.approx(res["verdict"]["pairrange"])
    assert saved["verdict"]["sketch_bytes_ok"]
    md = (tmp_path / "strategies.md").read_text()
    assert md.startswith("## Load-balancing strategies")
    assert "| exp s = 1 |" in md and "Profiling: BDM vs sketch" in md
