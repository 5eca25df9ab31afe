"""Progressive sampling (paper 001): estimates, chop/pack/hash plans, the stopping test,
and the exact pair set end to end although the plan was built from a sample.

The pure part is tested without a cluster: a plan built from any subset of partitions
routes every record of the *full* BDM (blocks never seen go to hash buckets, chopped
blocks to hash pieces) so that every within-block pair is in exactly one match task.
End to end, on a LocalCluster, the pairs equal the brute force for link and dedupe,
with missing keys and several passes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list
from plan_check import exact_pairs_and_loads
from strategies import bdms, cluster_settings

import erblock
from erblock.balancing import BDM
from erblock.balancing.hashing import splitmix64
from erblock.balancing.packing import lpt
from erblock.balancing.progressive import SampleGoal, estimate, goal_test
from erblock.balancing.sampled import BUCKET, CHOPPED, plan_sampled
from erblock.report import RunReport

# -- the goal -------------------------------------------------------------------------


@pytest.mark.parametrize("bad, message", [
    ({"delta": 0}, "delta must be > 0"),
    ({"alpha": 1.0}, "alpha must be in"),
    ({"alpha": "high"}, "alpha must be a number"),
    ({"initial": 0}, "initial must be a fraction"),
    ({"growth": 1.0}, "growth must be > 1"),
    ({"max_fraction": 1.5}, "max_fraction must be a fraction"),
    ({"chop": 0.5}, "chop must be >= 1"),
    ({"min_partitions": 0}, "min_partitions must be an integer >= 1"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"confidence": 0.9}, "unknown field"),
])
def test_sample_goal_is_checked(bad, message):
    with pytest.raises(ValueError, match=f"sample: {message}"):
        SampleGoal.from_option(bad)


def test_sample_goal_from_option():
    assert SampleGoal.from_option(True) == SampleGoal()
    g = SampleGoal.from_option({"delta": 0.2, "alpha": 0.9})
    assert (g.delta, g.alpha) == (0.2, 0.9)
    assert SampleGoal.from_option(g) is g
    assert SampleGoal(**g.to_dict()) == g
    with pytest.raises(ValueError, match="sample must be True or a dict"):
        SampleGoal.from_option(0.1)


def test_api_checks_sample_option(client):
    df = pd.DataFrame({"k": ["a", "a"], "name": ["x", "y"]})
    with pytest.raises(ValueError, match="strategy must be 'auto'"):
        erblock.dedupe(df, key="k", compare={"name": "exact"}, strategy="blocksplit",
                       sample=True, client=client)
    with pytest.raises(ValueError, match="sample: delta"):
        erblock.plan(df, key="k", sample={"delta": -1}, client=client)
    with pytest.raises(ValueError, match="cost_model must be"):
        erblock.dedupe(df, key="k", compare={"name": "exact"}, cost_model="fast",
                       client=client)


# -- estimates ------------------------------------------------------------------------


def _bdm(n: int = 40_000, m: int = 40, blocks: int = 60, s: float = 0.15, seed: int = 0,
         link: bool = False) -> BDM:
    rng = np.random.default_rng(seed)
    w = np.exp(-s * np.arange(blocks))
    rows = []
    for src in (0, 1) if link else (0,):
        blk = rng.choice(blocks, size=n, p=w / w.sum())
        part = rng.integers(0, m, n)
        u, c = np.unique(blk * m + part, return_counts=True)
        rows.append((u // m, u % m, np.full(len(u), src), c))
    b, p, sr, c = (np.concatenate(x) for x in zip(*rows))
    return BDM.from_arrays(b, p, sr, c, (m, m if link else 0), link)


def _subset(bdm: BDM, parts: dict[int, np.ndarray]) -> BDM:
    keep = np.zeros(len(bdm.block), dtype=bool)
    for src, ps in parts.items():
        keep |= (bdm.src == src) & np.isin(bdm.part, ps)
    return BDM.from_arrays(bdm.block[keep], bdm.part[keep], bdm.src[keep], bdm.count[keep],
                           bdm.n_parts, bdm.link)


def test_full_sample_estimates_exactly():
    for link in (False, True):
        bdm = _bdm(n=3000, link=link)
        est = estimate(bdm, bdm.n_parts, bdm.n_parts)
        blocks, comps = bdm.comparisons()
        assert est.block.tolist() == blocks.tolist()
        assert np.allclose(est.comparisons, comps)
        assert np.all(est.variance == 0)
        assert est.fraction == 1.0


def test_sample_estimates_are_unbiased_and_their_variance_is_honest():
    bdm = _bdm()
    blocks, comps = bdm.comparisons()
    rng = np.random.default_rng(1)
    draws, zs = [], []
    for _ in range(200):
        parts = rng.choice(40, 8, replace=False)
        est = estimate(_subset(bdm, {0: parts}), (8, 0), (40, 0))
        full = np.zeros(len(blocks))
        full[np.searchsorted(blocks, est.block)] = est.comparisons
        draws.append(full)
        big = np.searchsorted(blocks, est.block[:3])
        zs.append((full[big] - comps[big]) / np.sqrt(est.variance[:3]))
    mean = np.mean(draws, axis=0)
    top = np.argsort(-comps)[:10]
    assert np.allclose(mean[top], comps[top], rtol=0.03)
    # standardised errors of the largest blocks: roughly unit variance (not overconfident)
    assert 0.6 < np.std(np.concatenate(zs)) < 1.4


# -- plans: every pair exactly once whatever the sample saw -------------------------


@settings(max_examples=40, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 9), data=st.data())
def test_sampled_plan_covers_every_pair_once(bdm, r, data):
    seen = {}
    for src in (0, 1) if bdm.link else (0,):
        m = bdm.n_parts[src]
        seen[src] = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=0,
                                                max_size=m, unique=True)), dtype=np.int64)
    sample = _subset(bdm, seen)
    est = estimate(sample, (len(seen[0]), len(seen.get(1, []))), bdm.n_parts)
    goal = SampleGoal(small=data.draw(st.sampled_from([0.0, 0.01, 0.5])),
                      chop=data.draw(st.sampled_from([1.0, 2.0, 8.0])))
    plan = plan_sampled(est, r, goal)
    got, want, _ = exact_pairs_and_loads(bdm, plan)
    assert got == want
    assert len(plan.loads) == r


def test_chop_pack_hash_classes():
    bdm = _bdm(n=20_000, m=10, blocks=200, s=0.3)
    est = estimate(bdm, bdm.n_parts, bdm.n_parts)
    plan = plan_sampled(est, 8, SampleGoal(chop=2.0, small=0.01))
    u = plan.units
    mean = est.comparisons.sum() / 8
    chopped = np.unique(u.block[u.part == CHOPPED])
    assert plan.details.large_blocks == len(chopped) == int((est.comparisons > mean).sum())
    assert len(np.unique(u.block[u.part == -1])) == plan.details.medium_blocks
    assert (u.part == BUCKET).sum() == 8  # one bucket per reduce task
    # chopped tasks stay near mean/chop, so LPT packs them within a few percent
    chopped_tasks = np.isin(u.block[plan.match.left], chopped) & (u.part[plan.match.left]
                                                                  == CHOPPED)
    assert plan.match.comparisons[chopped_tasks].max() <= 0.75 * mean
    assert plan.imbalance < 1.05
    # a complete sample plans exactly the comparisons there are
    assert plan.total_comparisons == pytest.approx(est.comparisons.sum(), rel=1e-3)


def test_goal_test_tightens_with_the_sample():
    bdm = _bdm(n=200_000, m=64, blocks=80, s=0.05)
    goal = SampleGoal(delta=0.1, alpha=0.95)
    rng = np.random.default_rng(3)
    order = rng.permutation(64)
    bounds = []
    for s in (2, 8, 32, 64):
        est = estimate(_subset(bdm, {0: order[:s]}), (s, 0), (64, 0))
        t = goal_test(plan_sampled(est, 8, goal), goal)
        bounds.append(t["upper_imbalance"])
    assert bounds[0] > bounds[-1]
    assert bounds[-1] <= 1.1  # the whole input: only hash-piece noise is left
    est = estimate(_subset(bdm, {0: order[:2]}), (2, 0), (64, 0))
    assert not goal_test(plan_sampled(est, 8, SampleGoal(delta=0.001)),
                         SampleGoal(delta=0.001))["met"]


def test_lpt_with_loads_fills_the_least_loaded_first():
    out = lpt(np.array([5.0, 1.0, 3.0]), 3, loads=np.array([0.0, 4.0, 10.0]), tail=None)
    assert out.tolist() == [0, 0, 1]  # 5 -> task 0 (0); 3 -> task 1 (4); 1 -> task 0 (5)


def test_splitmix64_spreads_consecutive_ids():
    x = np.arange(1 << 16, dtype=np.int64)
    h = splitmix64(x)
    assert len(np.unique(h)) == len(x)
    assert splitmix64(x).tolist() == h.tolist()
    counts = np.bincount((h % np.uint64(7)).astype(np.int64), minlength=7)
    assert counts.min() > 0.95 * len(x) / 7


# -- end to end -------------------------------------------------------------------------

KEYS = ["a", "a", "a", "a", "a", "b", "b", "c", "d", None, ""]
NAMES = ["smith", "smyth", "jones", None, "li"]

@st.composite
def frames(draw, max_size=60):
    n = draw(st.integers(0, max_size))
    start = draw(st.integers(0, 1000))
    return pd.DataFrame(
        {"k": pd.Series(draw(st.lists(st.sampled_from(KEYS), min_size=n, max_size=n)),
                        dtype=object),
         "k2": pd.Series(draw(st.lists(st.sampled_from(KEYS[4:]), min_size=n, max_size=n)),
                         dtype=object),
         "name": pd.Series(draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n)),
                           dtype=object)},
        index=pd.RangeIndex(start, start + n))


SAMPLE = {"delta": 0.1, "alpha": 0.95, "initial": 0.2, "min_partitions": 1}


@cluster_settings(4)
@given(df=frames(), m=st.integers(1, 8), r=st.integers(1, 12),
       keys=st.sampled_from([["k"], ["k", "k2"]]))
def test_sampled_dedupe_matches_brute_force(client, df, m, r, keys):
    pairs = erblock.dedupe(df, key=keys, compare={"name": "jaro"}, n_tasks=r,
                           npartitions=m, sample=SAMPLE, client=client,
                           cost_model="default")
    got = pair_list(pairs)
    assert len(got) == len(set(got))
    assert set(got) == brute_dedupe(df, keys)
    rep = RunReport.of(pairs)
    assert rep.strategy == "sampling"
    s = rep.prediction["sample"]
    assert 1 <= s["partitions_sampled"][0] <= s["partitions"][0]
    assert s["records_sampled"] <= len(df)


@cluster_settings(4)
@given(df_r=frames(), df_s=frames(), m=st.integers(1, 8), r=st.integers(1, 12))
def test_sampled_link_matches_brute_force(client, df_r, df_s, m, r):
    pairs = erblock.link(df_r, df_s, key=["k", "k2"], compare={"name": "jaro"}, n_tasks=r,
                         npartitions=m, sample=SAMPLE, client=client, cost_model="default")
    got = pair_list(pairs)
    assert len(got) == len(set(got))
    assert set(got) == brute_link(df_r, df_s, ["k", "k2"])


def test_sampling_stops_early_on_a_large_input_and_stays_exact(client):
    rng = np.random.default_rng(5)
    n = 30_000
    w = np.exp(-0.1 * np.arange(60))
    df = pd.DataFrame({"k": rng.choice(60, n, p=w / w.sum()).astype(str),
                       "name": rng.choice(["ann", "anna", "bob"], n)})
    df.loc[rng.random(n) < 0.02, "k"] = None
    goal = {"delta": 0.25, "alpha": 0.9, "initial": 0.05}
    plan = erblock.plan(df, key="k", sample=goal, n_tasks=4, npartitions=60, client=client,
                        cost_model="default")
    s = plan.details.sample
    assert s["goal_met"]
    assert s["partitions_sampled"][0] < 60  # stopped before reading everything
    assert s["records_sampled"] < n
    assert len(s["rounds"]) >= 1
    pairs = erblock.dedupe(df, key="k", compare={"name": "exact"}, sample=goal, n_tasks=4,
                           npartitions=60, client=client, cost_model="default",
                           threshold=1.0)
    rep = RunReport.of(pairs)
    keyed = df.dropna(subset=["k"])
    exact = int((keyed.groupby("k").size() * (keyed.groupby("k").size() - 1) // 2).sum())
    assert rep.comparisons == exact
    assert rep.records["records_estimated"] == 1
    # the sampled loads estimate what the workers did
    assert rep.imbalance_comparisons < 1.5
