"""PairRange: pair-index arithmetic against enumeration, and plans checked through the real
routing and comparer (tests/plan_check.py) against the brute force: every pair once,
loads equal the comparisons performed, and no record sent where none of its pairs is."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_check import EXACT, compare_all, records_from_bdm, route_all, true_pairs
from strategies import bdms

from erblock.balancing import BDM
from erblock.balancing.plan import RANGE
from erblock.balancing.ranges import range_bands, range_intervals, tri_locate, tri_row_start
from erblock.balancing.strategies.pairrange import plan_pairrange
from erblock.engine.tasks.compare import compare_task
from erblock.engine.tasks.route import record_keys


def enumerate_pairs(n_r: int, n_s: int, link: bool) -> list[tuple[int, int]]:
    """All pairs of a block in the global row-major order (the reference numbering)."""
    if link:
        return [(i, j) for i in range(n_r) for j in range(n_s)]
    return [(i, j) for i in range(n_r) for j in range(i + 1, n_r)]


def test_triangle_arithmetic_matches_enumeration():
    for n in range(2, 45):
        pairs = enumerate_pairs(n, 0, False)
        i, j = tri_locate(np.arange(len(pairs)), n)
        assert list(zip(i.tolist(), j.tolist())) == pairs
        assert tri_row_start(np.arange(n - 1), n).tolist() == [
            pairs.index((r, r + 1)) for r in range(n - 1)]
    # large blocks: exact where float sqrt alone would be off
    n = 3_000_000
    p = np.array([0, 1, n - 2, n - 1, n * (n - 1) // 2 - 1, 1_234_567_891_234])
    i, j = tri_locate(p, n)
    assert (tri_row_start(i, n) + (j - i - 1) == p).all()
    assert ((i < j) & (j < n)).all()


@settings(max_examples=150, deadline=None)
@given(link=st.booleans(), n_r=st.integers(1, 25), n_s=st.integers(1, 25), data=st.data())
def test_bands_and_intervals_are_exactly_the_range(link, n_r, n_s, data):
    if not link and n_r < 2:
        n_r = 2
    pairs = enumerate_pairs(n_r, n_s, link)
    lo = data.draw(st.integers(0, len(pairs) - 1))
    hi = data.draw(st.integers(lo + 1, len(pairs)))
    want = pairs[lo:hi]
    got = []
    for r0, r1, c0, c1, tri in range_bands(n_r, n_s, link, lo, hi):
        for i in range(r0, r1):
            for j in range(max(c0, i + 1) if tri else c0, c1):
                got.append((i, j))
    assert sorted(got) == sorted(want) and len(got) == hi - lo
    left, right = range_intervals(n_r, n_s, link, lo, hi)
    covered_l = {x for a, b in left for x in range(a, b)}
    covered_r = {x for a, b in right for x in range(a, b)}
    if link:
        assert covered_l == {i for i, _ in want}
        assert covered_r == {j for _, j in want}
    else:
        assert covered_l == {x for pr in want for x in pr}
        assert not right


@settings(max_examples=40, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 12), budget=st.sampled_from([3, 17, 1 << 21]),
       seed=st.integers(0, 3))
def test_every_pair_once_loads_exact_and_routing_minimal(bdm, r, budget, seed):
    plan = plan_pairrange(bdm, r)
    records = records_from_bdm(bdm, seed)
    routed = route_all(records, plan)
    got, done = compare_all(plan, routed, cell_budget=budget)
    want = true_pairs(records, bdm.link)
    assert got == want
    assert done.tolist() == plan.loads.tolist()
    assert plan.total_comparisons == sum(want.values())
    assert len(routed) == plan.records_routed
    # minimal: every (record, reduce task) row routed takes part in a pair of that task
    assert not routed.duplicated(["_erb_id", "_erb_task"]).any()
    used = set()
    for t in range(r):
        rows = routed[routed["_erb_task"] == t]
        pairs, _ = _task_pairs(plan, rows, t)
        used |= {(i, t) for pr in pairs for i in pr}
    assert used == set(zip(routed["_erb_id"].tolist(), routed["_erb_task"].tolist()))
    # balanced by construction: loads differ by at most one comparison
    assert plan.loads.max() - plan.loads.min() <= 1


def _task_pairs(plan, rows, t):
    left = rows[rows["_erb_src"] == 0]
    right = rows[rows["_erb_src"] == 1] if plan.link else None
    pairs, stats = compare_task(t, plan, left, right, EXACT, {"v": 0}, 1, None,
                                (np.int64, np.int64))
    return list(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist())), stats


def test_literal_triangle_ranges_and_routing():
    # one block of 5 records in one partition, 10 pairs on 3 tasks: [0,3) [3,6) [6,10)
    # t0: (0,1) (0,2) (0,3); t1: (0,4) (1,2) (1,3); t2: (1,4) (2,3) (2,4) (3,4)
    bdm = BDM.from_arrays([9], [0], [0], [5], (1, 0), False)
    plan = plan_pairrange(bdm, 3)
    assert plan.loads.tolist() == [3, 3, 4]
    assert (plan.match.kind == RANGE).all()
    assert list(zip(plan.match.lo.tolist(), plan.match.hi.tolist())) == [(0, 3), (3, 6), (6, 10)]
    records = records_from_bdm(bdm)
    routed = route_all(records, plan).sort_values(["_erb_rank", "_erb_task"])
    by_rank = routed.groupby("_erb_rank")["_erb_task"].apply(list).to_dict()
    assert by_rank == {0: [0, 1], 1: [0, 1, 2], 2: [0, 1, 2], 3: [0, 1, 2], 4: [1, 2]}
    assert plan.records_routed == 13 and plan.replication == pytest.approx(13 / 5)


def test_blocks_inside_one_range_stay_whole_and_need_no_rank():
    # blocks of 10 pairs each (5 records), 3 blocks on 3 tasks: nothing is cut
    bdm = BDM.from_arrays([1, 2, 3], [0, 0, 0], [0, 0, 0], [5, 5, 5], (1, 0), False)
    plan = plan_pairrange(bdm, 3)
    assert plan.loads.tolist() == [10, 10, 10]
    assert not (plan.match.kind == RANGE).any()
    assert plan.details.cut_blocks == 0 and plan.replication == 1.0


def test_ranks_count_records_of_earlier_partitions():
    # block split over 3 partitions (2, 3, 1 records): global ranks follow input order
    bdm = BDM.from_arrays([4, 4, 4], [0, 1, 2], [0, 0, 0], [2, 3, 1], (3, 0), False)
    plan = plan_pairrange(bdm, 4)
    records = records_from_bdm(bdm)
    ranks = []
    for _, g in records.groupby("_erb_part"):
        g = g.reset_index(drop=True)
        ranks.append(plan.locate(record_keys(g))[1][np.argsort(g["_erb_rid"].to_numpy())])
    assert np.concatenate(ranks).tolist() == [0, 1, 2, 3, 4, 5]


def test_more_records_than_profiled_is_an_error():
    bdm = BDM.from_arrays([4], [0], [0], [6], (1, 0), False)
    plan = plan_pairrange(bdm, 3)
    records = records_from_bdm(BDM.from_arrays([4], [0], [0], [7], (1, 0), False))
    with pytest.raises(RuntimeError, match="input changed between the profile and the route"):
        plan.locate(record_keys(records))


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("s", [0.0, 0.5, 1.0])
def test_exponential_skew_is_balanced(s, link):
    rng = np.random.default_rng(42)
    w = np.exp(-s * np.arange(100))
    rows = []
    for src in (0, 1) if link else (0,):
        blk = rng.choice(100, size=50_000, p=w / w.sum())
        part = rng.integers(0, 20, len(blk))
        u, c = np.unique(blk * 20 + part, return_counts=True)
        rows.append(pd.DataFrame({"b": u // 20, "p": u % 20, "s": src, "c": c}))
    t = pd.concat(rows)
    bdm = BDM.from_arrays(t["b"], t["p"], t["s"], t["c"], (20, 20 if link else 0), link)
    plan = plan_pairrange(bdm, 100)
    assert plan.imbalance <= 1.05
    assert plan.total_comparisons == int(bdm.comparisons()[1].sum())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, 7)), max_size=12))
def test_small_task_pairs_are_every_cell_in_row_major_order(shapes):
    """The batched small tasks' pair positions equal a per-task enumeration: triangles
    i < j of [l0, l0 + nl), rectangles [l0, l0 + nl) × [r0, r0 + nr), task after task."""
    from erblock.engine.tasks.compare import _pair_index

    tri = np.array([s[0] for s in shapes], dtype=bool)
    nl = np.array([s[1] for s in shapes], dtype=np.int64)
    nr = np.array([s[2] for s in shapes], dtype=np.int64)
    l0 = np.cumsum(np.r_[0, nl[:-1]]) if len(shapes) else np.zeros(0, np.int64)
    r0 = 100 + (np.cumsum(np.r_[0, nr[:-1]]) if len(shapes) else np.zeros(0, np.int64))
    want: list[tuple[int, int]] = []
    for t, a, n_l, b, n_r in zip(tri, l0, nl, r0, nr):
        if t:
            want += [(a + i, a + j) for i in range(n_l) for j in range(i + 1, n_l)]
        else:
            want += [(a + i, b + j) for i in range(n_l) for j in range(n_r)]
    li, rj = _pair_index(tri, l0, nl, r0, nr)
    assert list(zip(li.tolist(), rj.tolist())) == want
