"""One conformance suite over every registered implementation.

Strategies (:data:`erblock.balancing.strategies.STRATEGIES`, plus ``auto``):

* planner level, no cluster (tests/plan_check.py: the real routing and comparer): every
  within-block pair is computed exactly once; exact plans' loads are the comparisons
  performed; estimated plans (sketches) still compute exactly the pairs;
* on a real LocalCluster, link and dedupe, against the independent brute force
  (tests/oracle.py): the pair set, each pair once, left before right for dedupe, the
  report's comparisons, identical similarities whatever the strategy, partitioning and
  number of tasks; the same in this process (``executor="local"``,
  erblock.engine.local); a dict round trip of every strategy's options.

Comparison methods (:data:`erblock.matchers.methods.METHODS`): range [0, 1] or NaN,
missing values give NaN (never 0), ``aligned`` equals ``matrix`` cell by cell, a value
compared with itself scores 1, options round-trip through the spec's dict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list
from plan_check import exact_pairs_and_loads
from strategies import bdms, cluster_settings, frames

import erblock
from erblock.balancing.strategies import STRATEGIES
from erblock.matchers.comparisons import Comparison
from erblock.matchers.methods import METHODS
from erblock.report import RunReport

ALL = sorted(STRATEGIES)
COMPARE = {"name": "jaro_winkler", "age": {"method": "numeric", "scale": 10}}
#: 4 examples per strategy in the suite; benchmarks/fuzz_nightly.py scales them up
CLUSTER = cluster_settings(4)


# -- planner level --------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=40, deadline=None)
@given(bdm=bdms(), r=st.integers(1, 12), budget=st.sampled_from([3, 17, 1 << 21]),
       seed=st.integers(0, 3))
def test_planner_computes_every_pair_once(name, bdm, r, budget, seed):
    plan = STRATEGIES[name].make(bdm, r)
    got, want, done = exact_pairs_and_loads(bdm, plan, seed, budget)
    assert got == want, "a pair was lost or computed twice"
    assert max(got.values(), default=1) == 1
    assert len(plan.loads) == r
    if not plan.estimated:
        assert done.tolist() == plan.loads.tolist(), "planned loads != performed"
        assert plan.total_comparisons == sum(want.values())


@pytest.mark.parametrize("name", ALL)
def test_strategy_options_round_trip(name):
    s = STRATEGIES[name]
    opts = s.options()
    assert s.parse_options(opts.to_dict()) == opts
    assert s.parse_options(None) == opts
    with pytest.raises(ValueError, match="option"):
        s.parse_options({"no_such_option": 1})


# -- on a cluster, against the brute force ----------------------------------------------


def _check(pairs, expected):
    got = pair_list(pairs)
    assert len(got) == len(set(got)), "a pair appeared twice"
    assert set(got) == expected
    assert RunReport.of(pairs).comparisons >= len(expected)


@pytest.mark.parametrize("executor", ["cluster", "local"])
@pytest.mark.parametrize("strategy", ["auto", *ALL])
@CLUSTER
@given(df=frames(), m=st.integers(1, 6), r=st.integers(1, 30))
def test_dedupe_equals_brute_force(client, strategy, executor, df, m, r):
    pairs = erblock.dedupe(df, key="k", compare=COMPARE, strategy=strategy, n_tasks=r,
                           client=client, npartitions=m, executor=executor)
    expected = brute_dedupe(df, ["k"])
    _check(pairs, expected)
    report = RunReport.of(pairs)
    assert report.comparisons == len(expected)
    if not report.plan.get("estimated"):
        assert report.task_comparisons.sum() == report.plan["total_comparisons"]
    pos = {label: i for i, label in enumerate(df.index)}
    assert all(pos[a] < pos[b] for a, b in pair_list(pairs)), "left must precede right"


@pytest.mark.parametrize("executor", ["cluster", "local"])
@pytest.mark.parametrize("strategy", ["auto", *ALL])
@CLUSTER
@given(df_r=frames(), df_s=frames(), m=st.integers(1, 6), r=st.integers(1, 30))
def test_link_equals_brute_force(client, strategy, executor, df_r, df_s, m, r):
    pairs = erblock.link(df_r, df_s, key="k", compare=COMPARE, strategy=strategy, n_tasks=r,
                         client=client, npartitions=m, executor=executor)
    expected = brute_link(df_r, df_s, ["k"])
    _check(pairs, expected)
    assert RunReport.of(pairs).comparisons == len(expected)


@CLUSTER
@given(df=frames(min_size=5), m=st.integers(1, 6), r=st.integers(1, 30))
def test_results_identical_across_strategies(client, df, m, r):
    runs = [erblock.dedupe(df, key="k", compare=COMPARE, strategy=s, n_tasks=rr,
                           client=client, npartitions=mm, sort=True)
            for s, mm, rr in [("basic", 1, 1), *[(s, m, r) for s in ALL]]]
    first = runs[0].reset_index(drop=True)
    for other in runs[1:]:
        pd.testing.assert_frame_equal(first, other.reset_index(drop=True))


def test_dask_shuffle_routing_equals_direct(client):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"k": rng.choice(list("aaaabbc"), 300),
                       "name": rng.choice(["smith", "smyth", "jones", "jon"], 300)})
    runs = [erblock.dedupe(df, key="k", compare={"name": "jaro"}, strategy=s, n_tasks=9,
                           client=client, npartitions=4, sort=True, shuffle_method=how)
            for s in ("blocksplit", "pairrange") for how in ("direct", "tasks")]
    assert len(runs[0]) == len(brute_dedupe(df, ["k"]))
    for other in runs[1:]:
        pd.testing.assert_frame_equal(runs[0], other)


# -- comparison methods -----------------------------------------------------------------

SAMPLES = {
    "date": pd.Series(["1987-05-12", "19870512", "05/12/1987", "1987-12-05", None, "",
                       "not a date", "2001-02-03"], dtype=object),
    "postcode": pd.Series(["SW1A 1AA", "sw1a 1ab", "02139", None, "", "02138", "10115",
                           "SW2 1AA"], dtype=object),
    "email": pd.Series(["A.b@x.com", "a.b@y.org", "ab@x.com", None, "", "c@d.e", "nodomain",
                        "x@y.z"], dtype=object),
    "phone": pd.Series(["+1 555 123 4567", "555-123-4567", "5551234576", None, "", "1234",
                        "no digits", "44 20 7946 0018"], dtype=object),
    "text": pd.Series(["smith", "smyth", "", None, "jones", "o'neil", "müller", "x" * 40],
                      dtype=object),
    "number": pd.Series([1.0, 2.5, None, 100.0, -3.0, 0.0, 2.5, np.nan], dtype=object),
    "any": pd.Series(["a", "b", "a", None, "", 1, 1.0, "c"], dtype=object),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_method_conforms(name):
    comp = Comparison("v", name)
    values = SAMPLES.get(name, SAMPLES[comp.kernel.accepts])
    prep = comp.prepare(values)
    mat = comp.matrix(prep, prep)
    assert mat.dtype == np.float32 and mat.shape == (len(values), len(values))
    finite = mat[~np.isnan(mat)]
    assert ((finite >= 0) & (finite <= 1)).all()
    missing = prep.missing
    assert missing.any(), "the sample has missing values"
    assert np.isnan(mat[missing]).all() and np.isnan(mat[:, missing]).all()
    assert not np.isnan(mat[np.ix_(~missing, ~missing)]).any()
    present = np.flatnonzero(~missing)
    assert (mat[present, present] == 1).all(), "a value compared with itself scores 1"
    li, rj = np.meshgrid(np.arange(len(values)), np.arange(len(values)), indexing="ij")
    aligned = comp.aligned(prep, prep, li.ravel(), rj.ravel())
    np.testing.assert_array_equal(aligned.reshape(mat.shape), mat)
    # inspect (one parse, in the run's count tasks) says what invalid and misread say
    bad, misread = comp.kernel.inspect(values)
    alone = comp.kernel.invalid(values)
    assert (bad is None and alone is None) or np.array_equal(bad, alone)
    assert misread == comp.kernel.misread(values)
    assert comp.kernel.count_invalid(values) == (0 if bad is None else int(bad.sum()))


@pytest.mark.parametrize("name", sorted(METHODS))
def test_method_spec_round_trip(name):
    comp = Comparison("v", name, weight=2.0)
    assert Comparison.from_dict(comp.to_dict()) == comp
    with pytest.raises(ValueError, match="not valid for method"):
        Comparison("v", name, options=(("no_such_option", 1),))
