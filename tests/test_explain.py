"""Plan explanation: Plan.describe() text and Plan.plot() PNG (erblock.balancing.explain)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import bdms

import erblock
from erblock.balancing import BDM, plan_basic, plan_blocksplit
from erblock.balancing.auto import candidate_plans, choose
from erblock.balancing.cost import CostModel
from erblock.balancing.explain import basic_loads, describe, largest_blocks
from erblock.balancing.progressive import SampleGoal, estimate
from erblock.balancing.sampled import plan_sampled

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def paper_bdm() -> BDM:
    # Paper 004 Fig. 2: blocks w, x, y, z (ids 0..3) over 2 partitions
    return BDM.from_arrays([0, 0, 1, 2, 2, 3, 3], [0, 1, 1, 0, 1, 0, 1], [0] * 7,
                           [2, 1, 2, 2, 2, 2, 3], (2, 0), False)


def test_describe_literal_plan():
    plan = plan_blocksplit(paper_bdm(), 3)
    text = plan.describe()
    assert "total comparisons  20" in text
    assert "imbalance          1.050" in text
    assert "replication" in text
    # largest block is z (id 3): 5 records, 10 of the 20 comparisons
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("block")
                and " 3 " in ln)
    assert "5 records" in line and "10 comparisons (50.0 %)" in line
    assert "largest match tasks:" in text


def test_largest_blocks_from_units_equal_those_from_the_bdm():
    bdm = paper_bdm()
    for plan in (plan_basic(bdm, 3), plan_blocksplit(bdm, 3)):
        from_units = largest_blocks(plan, top=10)
        assert largest_blocks(plan.with_profile(bdm), top=10) == from_units
    assert [(b["block"], b["comparisons"]) for b in from_units] == [(3, 10), (2, 6), (0, 3),
                                                                   (1, 1)]


@settings(max_examples=50, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 8))
def test_largest_blocks_agree_for_any_exact_plan(bdm, r):
    plan = plan_blocksplit(bdm, r)
    from_units = largest_blocks(plan, top=20)
    assert largest_blocks(plan.with_profile(bdm), top=20) == from_units
    assert sum(b["comparisons"] for b in from_units) == plan.total_comparisons


def test_describe_lists_the_strategies_compared_and_marks_the_choice():
    rng = np.random.default_rng(0)
    w = np.exp(-0.5 * np.arange(30))
    blk = rng.choice(30, 5000, p=w / w.sum())
    part = rng.integers(0, 4, 5000)
    u, c = np.unique(blk * 4 + part, return_counts=True)
    bdm = BDM.from_arrays(u // 4, u % 4, np.zeros(len(u)), c, (4, 0), False)
    model = CostModel(0.001, 5e-8, 1e-6, 1e-5, source="test model")
    _, plan = choose(candidate_plans(bdm, 8), model, threads=2)
    text = describe(plan)
    assert "auto: lowest predicted makespan" in text
    assert "predicted makespan" in text and "cost model: test model" in text
    assert "strategies compared" in text
    marked = [ln for ln in text.splitlines() if ln.startswith("  * ")]
    assert len(marked) == 1 and plan.prediction.auto_choice in marked[0]
    rows = plan.prediction.candidates
    assert min(r.predicted_total for r in rows) == next(
        r.predicted_total for r in rows if r.chosen)
    # an explicit strategy explained with its alternatives
    _, explicit = choose(candidate_plans(bdm, 8), model, threads=2, chosen="basic")
    assert explicit.strategy == "basic"
    assert "strategies compared" in describe(explicit)


def test_describe_sampled_plan():
    bdm = paper_bdm()
    est = estimate(bdm, (1, 0), (2, 0))
    plan = plan_sampled(est, 3, SampleGoal()).with_details(sample={
        "partitions_sampled": [1, 0], "partitions": [2, 0], "records_sampled": 7,
        "rounds": [{}], "goal_met": False, "upper_imbalance": 1.5,
        "goal": SampleGoal().to_dict()})
    text = plan.describe()
    assert "(estimated)" in text
    assert "progressive sample 1 of 2 partitions, 7 records, 1 rounds; goal NOT met" in text


def test_plot_writes_png_with_basic_next_to_the_plan(tmp_path):
    plan = plan_blocksplit(paper_bdm(), 3).with_profile(paper_bdm())
    assert basic_loads(plan).tolist() == plan_basic(paper_bdm(), 3).loads.tolist()
    out = plan.plot(tmp_path / "plan.png")
    data = out.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 2000
    # a plan without basic's loads still draws itself
    bare = plan_blocksplit(paper_bdm(), 3)
    assert basic_loads(bare) is None
    assert (plan_basic(paper_bdm(), 3).plot(tmp_path / "basic.png")).stat().st_size > 1000
    assert bare.plot(tmp_path / "bare.png").read_bytes()[:8] == PNG_MAGIC
    # thousands of tasks are drawn as one outline (a bar per task took minutes)
    many = plan_basic(paper_bdm(), 3000).with_profile(paper_bdm())
    assert many.plot(tmp_path / "many.png").read_bytes()[:8] == PNG_MAGIC


def test_erblock_plan_explains_and_draws(client, tmp_path):
    rng = np.random.default_rng(1)
    w = np.exp(-0.4 * np.arange(20))
    df = pd.DataFrame({"k": rng.choice(20, 3000, p=w / w.sum()).astype(str)})
    plan = erblock.plan(df, key="k", strategy="blocksplit", n_tasks=8, client=client,
                        npartitions=4, cost_model=CostModel(source="given"))
    text = plan.describe()
    assert text.splitlines()[0].startswith("strategy           blocksplit")
    assert "strategies compared" in text and "basic" in text
    assert "cost model: given" in text
    png = plan.plot(tmp_path / "p.png")
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert plan.prediction.basic_loads.sum() == plan.total_comparisons


def test_plot_shows_the_largest_blocks_panel(tmp_path):
    import matplotlib.image as mpimg

    plan = plan_blocksplit(paper_bdm(), 3)
    png = plan.plot(tmp_path / "p.png", top=3)
    width = mpimg.imread(png).shape[1]
    narrow = plan.plot(tmp_path / "q.png", top=0)  # no blocks panel
    assert width > mpimg.imread(narrow).shape[1]


def _brute_largest(keys: pd.Series, top: int) -> list[tuple[str, int]]:
    """(key text, comparisons) of the ``top`` largest blocks of a dedupe, by pandas."""
    n = keys.dropna().value_counts()
    return sorted(((k, int(c * (c - 1) // 2)) for k, c in n.items() if c > 1),
                  key=lambda t: -t[1])[:top]


def test_erblock_plan_names_the_key_of_its_largest_blocks(client):
    """``erblock.plan`` looks up the key text of the largest blocks (it listed only their
    64-bit hashes, which do not say which value to fix): each label is the key value
    that brute force finds with that block's comparisons, for pandas and Dask input, a
    composite key, and a second pass; a sorted-neighbourhood pass has none."""
    import dask.dataframe as dd

    from erblock.blocking import composite, prefix, sorted_neighbourhood

    rng = np.random.default_rng(5)
    n = 1500
    df = pd.DataFrame({"surname": rng.choice(["smith"] * 40 + ["jones"] * 15 +
                                             [f"s{i}" for i in range(45)], n),
                       "first": rng.choice(["ann", "bob", "cyd", "dee"], n)})
    want = dict(_brute_largest(df["surname"], 100))
    for frame in (df, dd.from_pandas(df, npartitions=3)):
        plan = erblock.plan(frame, key="surname", client=client)
        got = largest_blocks(plan, 6)
        assert [b["key"] for b in got[:2]] == ["smith", "jones"]
        assert all(want[b["key"]] == b["comparisons"] for b in got), got
        assert "key 'smith'" in plan.describe()
    two = erblock.plan(df, key=[composite("surname", prefix("first", 1)), "first"],
                       client=client)
    pairs = df["surname"] + " + " + df["first"].str[0]
    want = dict(_brute_largest(pairs, 1000)) | dict(_brute_largest(df["first"], 4))
    for b in largest_blocks(two, 8):
        assert want[b["key"]] == b["comparisons"], b
    sn = erblock.plan(df, key=sorted_neighbourhood("surname", 5), client=client)
    assert all(b["key"] is None for b in largest_blocks(sn, 3))
