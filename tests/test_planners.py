"""Basic and BlockSplit on their own: no cluster, literal BDMs and hypothesis-generated
ones (that every strategy computes every pair once is tests/test_conformance.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_check import compare_all, records_from_bdm, route_all
from strategies import bdms

from erblock.balancing import BDM, lpt, plan_basic, plan_blocksplit, round_robin
from erblock.balancing.strategies.blocksplit import piece_sizes
from erblock.balancing.units import SMALL_CELLS
from erblock.engine.tasks.route import route_partition


@settings(max_examples=60, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 12))
def test_blocksplit_tasks_never_exceed_average_unless_one_pair(bdm, r):
    plan = plan_blocksplit(bdm, r)
    limit = plan.total_comparisons / r
    assert all(c <= max(limit, 1) for c in plan.match.comparisons.tolist())


def test_paper_example_block_split():
    # Paper 004 Fig. 2/3: blocks w, x, y, z over 2 partitions, 3 reduce tasks; only z
    # (2 + 3 records) is split into tasks z.0 (1), z.1 (3), z.0x1 (6).
    bdm = BDM.from_arrays([0, 0, 1, 2, 2, 3, 3], [0, 1, 1, 0, 1, 0, 1], [0] * 7,
                          [2, 1, 2, 2, 2, 2, 3], (2, 0), False)
    plan = plan_blocksplit(bdm, 3)
    assert plan.total_comparisons == 20
    assert sorted(plan.loads.tolist()) == [6, 7, 7]
    t = plan.tasks
    z = t[t["block"] == 3].sort_values("comparisons")
    assert z["comparisons"].tolist() == [1, 3, 6]
    assert z["kind"].tolist() == ["triangle", "triangle", "rectangle"]
    # 14 records, the 5 of z are replicated: 17 routed here (paper: 19 key-value pairs
    # before merging copies that land on the same reduce task)
    assert plan.records_in == 14
    assert plan.records_routed <= 19


def test_basic_hashes_whole_blocks():
    bdm = BDM.from_arrays([5, 5, 9], [0, 1, 0], [0, 0, 0], [3, 4, 2], (2, 0), False)
    plan = plan_basic(bdm, 4)
    assert len(plan.match) == 2
    assert plan.total_comparisons == 21 + 1
    assert plan.replication == 1.0


def test_single_record_blocks_and_one_sided_link_blocks_make_no_task():
    dd = BDM.from_arrays([1, 2], [0, 0], [0, 0], [1, 1], (1, 0), False)
    assert len(plan_blocksplit(dd, 3).match) == 0
    lk = BDM.from_arrays([1, 2, 2], [0, 0, 0], [0, 0, 1], [5, 1, 1], (1, 1), True)
    p = plan_blocksplit(lk, 3)
    assert p.total_comparisons == 1
    assert p.records_routed == 2


@pytest.mark.parametrize("s", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_blocksplit_balances_exponential_skew(s):
    rng = np.random.default_rng(42)
    w = np.exp(-s * np.arange(100))
    blk = rng.choice(100, size=50_000, p=w / w.sum())
    part = rng.integers(0, 20, len(blk))
    u, c = np.unique(blk * 20 + part, return_counts=True)
    bdm = BDM.from_arrays(u // 20, u % 20, np.zeros(len(u)), c, (20, 0), False)
    assert plan_blocksplit(bdm, 100).imbalance <= 1.15
    if s >= 0.5:
        assert plan_basic(bdm, 100).imbalance > 10


def test_link_split_uses_asymmetric_pieces():
    # one R record against 1000 S records in one partition each: pieces along S only
    bdm = BDM.from_arrays([1, 1, 2, 2], [0, 0, 0, 0], [0, 1, 0, 1], [1, 1000, 10, 10], (1, 1), True)
    plan = plan_blocksplit(bdm, 10)
    assert plan.total_comparisons == 1100
    assert plan.match.comparisons.max() <= 110
    assert plan.units.size[plan.units.src == 0].max() <= 10


def test_piece_sizes_match_rank_rule():
    for n in range(1, 40):
        for h in range(1, n + 1):
            sizes = piece_sizes(n, h)
            ranks = np.arange(n) * h // n
            assert sizes.tolist() == np.bincount(ranks, minlength=h).tolist()


def test_lpt_is_deterministic_and_balanced():
    rng = np.random.default_rng(0)
    costs = rng.pareto(1.2, 100_000) + 1
    a, b = lpt(costs, 50), lpt(costs, 50)
    assert (a == b).all()
    loads = np.bincount(a, costs, 50)
    # within 2 % of the mean, or the single largest (indivisible) item
    assert loads.max() <= max(1.02 * loads.mean(), costs.max() + 1e-9)
    assert np.sort(loads)[-2] / loads.mean() < 1.02
    # round robin ignores cost: a policy passed in, not patched
    rr = np.bincount(round_robin(np.array([100.0, 1, 1, 1]), 2), [100.0, 1, 1, 1], 2)
    assert rr.tolist() == [101.0, 2.0]


def test_lpt_classic_case():
    # Graham's example: {5, 5, 4, 4, 3, 3, 3} on 3 machines, LPT makespan 11 (optimum 9)
    costs = np.array([5, 5, 4, 4, 3, 3, 3], dtype=float)
    loads = np.bincount(lpt(costs, 3, tail=0), costs, 3)
    assert sorted(loads.tolist()) == [8.0, 8.0, 11.0]


def test_plan_with_injected_packing():
    bdm = BDM.from_arrays([1, 2, 3], [0, 0, 0], [0, 0, 0], [5, 5, 5], (1, 0), False)
    plan = plan_blocksplit(bdm, 3, packing=lambda costs, r: np.zeros(len(costs), dtype=np.int64))
    assert plan.loads.tolist() == [30, 0, 0]


def test_route_partition_explodes_to_distinct_tasks():
    bdm = BDM.from_arrays([3, 3], [0, 1], [0, 0], [20, 20], (2, 0), False)
    plan = plan_blocksplit(bdm, 4)
    recs = records_from_bdm(bdm)
    part0 = recs[recs["_erb_part"] == 0].reset_index(drop=True)
    routed = route_partition(part0, plan)
    assert not routed.duplicated(["_erb_rid", "_erb_task"]).any()
    assert set(routed["_erb_task"]) <= set(range(4))
    assert len(routed) >= len(part0)


@settings(max_examples=25, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 6))
def test_batched_small_tasks_equal_the_matrix_path(bdm, r):
    """Small match tasks go through one aligned-pairs batch per reduce task; the pairs and
    similarities equal comparing every task with its own matrix."""
    records = records_from_bdm(bdm)
    routed = route_all(records, plan_blocksplit(bdm, r))
    plan = plan_blocksplit(bdm, r)
    out = {}
    for small in (SMALL_CELLS, -1):
        frames = []
        got, done = compare_all(plan, routed, small_task=small, frames=frames)
        pairs = pd.concat(frames, ignore_index=True).sort_values(["left_id", "right_id"])
        out[small] = (got, done.tolist(), pairs.reset_index(drop=True))
    assert out[SMALL_CELLS][:2] == out[-1][:2]
    pd.testing.assert_frame_equal(out[SMALL_CELLS][2], out[-1][2])


@given(bdms())
@settings(max_examples=40)
def test_block_sizes_equal_an_independent_count_and_are_read_only(bdm):
    """The cached block sizes (run boundaries of the sorted rows) equal a pandas group-by
    of the rows, and cannot be changed by a planner that writes into them."""
    blocks, n_r, n_s = bdm.block_sizes()
    rows = pd.DataFrame({"block": bdm.block, "src": bdm.src, "count": bdm.count})
    want = rows.pivot_table(index="block", columns="src", values="count", aggfunc="sum",
                            fill_value=0).reindex(columns=[0, 1], fill_value=0)
    assert blocks.tolist() == want.index.tolist()
    assert n_r.tolist() == want[0].tolist() and n_s.tolist() == want[1].tolist()
    assert bdm.block_sizes()[0] is blocks  # computed once
    for a in (blocks, n_r, n_s):
        with pytest.raises(ValueError):
            a[:1] = 0


def test_unit_builder_broadcasts_scalars_and_refuses_ragged_columns():
    from erblock.balancing.plan import UnitBuilder

    b = UnitBuilder()
    assert b.add_units(7, 0, 0, 0, 3).tolist() == [0]
    assert b.add_units(np.array([1, 2]), 1, np.array([4]), 0, np.array([5, 6])).tolist() == [1, 2]
    assert b.add_units(np.zeros(0, np.int64), 0, 0, 0, 0).tolist() == []
    with pytest.raises(ValueError):
        b.add_units(np.array([1, 2]), 0, 0, 0, np.array([1, 2, 3]))
    b.add_tasks(2, np.array([0, 1]), np.array([0, 2]), np.array([3, 0]))
    units, tasks = b.build()
    assert units.block.tolist() == [7, 1, 2] and units.part.tolist() == [0, 4, 4]
    assert tasks.T.tolist() == [[2, 0, 0, 3]]  # the empty task is dropped


@given(st.lists(st.tuples(st.integers(-2**63, 2**63 - 1), st.integers(0, 3),
                          st.integers(-3, 40)), max_size=30, unique=True),
       st.lists(st.tuples(st.integers(-2**63, 2**63 - 1), st.integers(-1, 4),
                          st.integers(-4, 41)), max_size=30),
       st.booleans(), st.sampled_from([2 ** 62, 7, 1]))
@settings(max_examples=150)
def test_lookup_finds_exactly_the_rows_a_dict_finds(table, query, reuse, limit):
    """A placement's table lookup (mixed-radix codes, re-ranked when the key would
    overflow: forced here with a small limit) equals a dict of the rows."""
    from unittest import mock

    from erblock.balancing import lookup
    from erblock.balancing.lookup import Lookup

    rows = table[:]
    query = query + rows[::2]  # some hits among arbitrary keys
    cols = [np.array([r[k] for r in rows], dtype=np.int64) for k in range(3)]
    q = [np.array([r[k] for r in query], dtype=np.int64) for k in range(3)]
    want = [{r: i for i, r in enumerate(rows)}.get(x, -1) for x in query]
    with mock.patch.object(lookup, "RADIX_LIMIT", limit):
        index = Lookup(cols)
        assert index.find(q).tolist() == want
        if reuse:  # another query on the same (already sorted) index
            assert index.find([c[::-1] for c in q]).tolist() == want[::-1]
