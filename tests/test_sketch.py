"""Sketches (paper 003): mergeable, within the Lemma 1/2 error bounds, exact through an
injected hash; the engine's sketch profile equals the sketch of its BDM."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from erblock.api import run_options
from erblock.balancing import BDM
from erblock.balancing.sketch import (
    SketchSpec,
    as_sketch_spec,
    build,
    cell_work,
    error_bounds,
    estimate,
    from_bdm,
    inner_product,
    merge,
    size_for,
)
from erblock.blocking.make import as_key_spec


def zipf_keys(n: int, n_keys: int, alpha: float, seed: int) -> np.ndarray:
    """``n`` records over ``n_keys`` 64-bit block ids with Zipf(alpha) sizes."""
    rng = np.random.default_rng(seed)
    w = np.arange(1, n_keys + 1, dtype=float) ** -alpha
    ids = rng.integers(-(2**62), 2**62, n_keys)
    return ids[rng.choice(n_keys, size=n, p=w / w.sum())]


def identity_hash(keys: np.ndarray, seed: np.uint64) -> np.ndarray:
    """Injected hash: the key itself (cell = key mod w, sign +1 for small keys)."""
    return np.asarray(keys, dtype=np.int64).view(np.uint64)


@pytest.mark.parametrize("kind", ["countmin", "fastagms"])
@pytest.mark.parametrize("m", [2, 20])
def test_merged_partitions_equal_the_sketch_built_at_once(kind, m):
    keys = zipf_keys(30_000, 2_000, 1.1, seed=m)
    spec = SketchSpec(kind=kind, d=4, w=500, seed=7)
    parts = np.array_split(keys, m)
    merged = merge(build(p, spec) for p in parts)
    whole = build(keys, spec)
    assert np.array_equal(merged.counts, whole.counts)
    assert (merged.signed is None) == (kind == "countmin")
    if kind == "fastagms":
        assert np.array_equal(merged.signed, whole.signed)
    assert merged.n == len(keys)
    # weights: a BDM-like (key, count) table sketches to the same counters
    u, c = np.unique(keys, return_counts=True)
    weighted = build(u, spec, weights=c)
    assert np.array_equal(weighted.counts, whole.counts)


@pytest.mark.parametrize("m", [2, 20])
def test_countmin_never_underestimates_and_meets_lemma_1(m):
    eps, delta = 0.005, 0.01
    w, d = size_for(eps, delta)
    assert (w, d) == (math.ceil(math.e / eps), math.ceil(math.log(1 / delta)))
    keys = zipf_keys(60_000, 4_000, 1.0, seed=11)
    true_keys, true_n = np.unique(keys, return_counts=True)
    for seed in range(5):
        spec = SketchSpec(kind="countmin", d=d, w=w, seed=seed)
        sk = merge(build(p, spec) for p in np.array_split(keys, m))
        est = estimate(sk, true_keys)
        assert (est >= true_n).all(), "Count-Min must never underestimate"
        # P(error > eps·N) <= delta for every key: the observed share of such keys stays
        # within delta (with a little room for sampling noise over 4 000 keys)
        over = (est - true_n) > eps * len(keys)
        assert over.mean() <= 2 * delta, (seed, over.mean())


def test_join_size_estimates_meet_their_bounds():
    # Lemma 2 of paper 003 states |L̂ − L| <= ε‖R‖₂‖S‖₂ with ε = e/w; for FastAGMS that
    # ε is reached with w = O(1/ε²) (Cormode & Garofalakis): a row is unbiased with
    # variance <= 2‖R‖²‖S‖²/w, so by Chebyshev it is within ε = √(8/w) with probability
    # >= 3/4 and the median of d rows fails with probability e^(−Ω(d)). Count-Min's join
    # estimate never undershoots and overshoots by at most (e/w)‖R‖₁‖S‖₁ w.p. 1 − e^−d.
    w, d = 400, 5
    r_keys = zipf_keys(40_000, 3_000, 1.0, seed=1)
    s_keys = np.concatenate([r_keys[:20_000], zipf_keys(10_000, 3_000, 1.0, seed=2)])
    ur, nr = np.unique(r_keys, return_counts=True)
    us, ns = np.unique(s_keys, return_counts=True)
    _, ir, is_ = np.intersect1d(ur, us, return_indices=True)
    true = float((nr[ir] * ns[is_]).sum())
    l2 = np.sqrt((nr.astype(float) ** 2).sum()) * np.sqrt((ns.astype(float) ** 2).sum())
    eps_cm, delta = error_bounds(w, d)
    misses_ams = misses_cm = 0
    for seed in range(20):
        ams = SketchSpec(kind="fastagms", d=d, w=w, seed=seed)
        est = inner_product(merge(build(p, ams) for p in np.array_split(r_keys, 20)),
                            merge(build(p, ams) for p in np.array_split(s_keys, 2)))
        misses_ams += abs(est - true) > np.sqrt(8 / w) * l2
        cm = SketchSpec(kind="countmin", d=d, w=w, seed=seed)
        est_cm = inner_product(build(r_keys, cm), build(s_keys, cm))
        assert est_cm >= true
        misses_cm += est_cm - true > eps_cm * len(r_keys) * len(s_keys)
    assert misses_ams <= 1, misses_ams
    assert misses_cm <= 1, misses_cm
    # FastAGMS is the far better join estimator (why paper 003 uses it for C^θ)
    ams0 = SketchSpec(kind="fastagms", d=d, w=w)
    cm0 = SketchSpec(kind="countmin", d=d, w=w)
    assert abs(inner_product(build(r_keys, ams0), build(s_keys, ams0)) - true) < (
        inner_product(build(r_keys, cm0), build(s_keys, cm0)) - true)


@pytest.mark.parametrize("kind", ["countmin", "fastagms"])
def test_injected_hash_makes_every_estimate_exact(kind):
    w = 64
    keys = np.repeat(np.arange(40), np.arange(1, 41))  # key k has k+1 records, no collisions
    s_keys = np.repeat(np.arange(20, 60), 3)
    spec = SketchSpec(kind=kind, d=3, w=w, hash=identity_hash)
    r, s = build(keys, spec), build(s_keys, spec)
    assert estimate(r, np.arange(40)).tolist() == list(range(1, 41))
    true_join = sum((k + 1) * 3 for k in range(20, 40))
    assert inner_product(r, s) == true_join
    cw = cell_work(r, s)
    want = np.zeros(w)
    want[20:40] = (np.arange(20, 40) + 1) * 3
    assert np.array_equal(cw.work, want)
    dd = cell_work(r, None)
    n = np.arange(1, 41)
    assert np.array_equal(dd.work[:40], n * (n - 1) / 2)
    assert (spec.cells(keys, 0) == keys % w).all()


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1,
                      max_size=40),
       w=st.integers(2, 9), seed=st.integers(0, 1000))
def test_cell_bounds_hold_whatever_the_collisions(sizes, w, seed):
    # Per cell: Count-Min >= the sign-split bound >= the true work (link and dedupe), and
    # the planned (bounded) estimate is 0 exactly for cells that cannot hold a pair.
    n_r = np.array([a for a, _ in sizes])
    n_s = np.array([b for _, b in sizes])
    blocks = np.arange(len(sizes)) * 7919 - 13
    spec = SketchSpec(kind="fastagms", d=3, w=w, seed=seed)
    r, s = build(blocks, spec, n_r), build(blocks, spec, n_s)
    for i in range(spec.d):
        cells = spec.cells(blocks, i)
        true_link = np.bincount(cells, weights=n_r * n_s, minlength=w)
        true_dd = np.bincount(cells, weights=n_r * (n_r - 1) / 2, minlength=w)
        cr, cs = r.counts[i].astype(float), s.counts[i].astype(float)
        sr, ss = r.signed[i].astype(float), s.signed[i].astype(float)
        assert (cr * cs >= true_link - 1e-9).all()
        assert ((cr * cs + sr * ss) / 2 >= true_link - 1e-9).all()
        assert ((cr * (cr - 1) / 2 + (sr * sr - cr) / 2) / 2 >= true_dd - 1e-9).all()
    for other in (s, None):
        cw = cell_work(r, other)
        c_r = r.counts[cw.theta]
        possible = (c_r * (s.counts[cw.theta] if other is not None else c_r - 1)) > 0
        assert ((cw.work > 0) == possible).all()


def test_sketch_memory_does_not_grow_with_blocks():
    spec = SketchSpec(kind="fastagms", d=5, w=1000)
    small = build(np.arange(10), spec)
    large = build(np.arange(1_000_000), spec)
    assert small.nbytes == large.nbytes == spec.nbytes == 5 * 1000 * 8 * 2


def test_spec_is_checked_and_round_trips():
    spec = SketchSpec(kind="countmin", d=4, w=128, seed=3)
    assert SketchSpec.from_dict(spec.to_dict()) == spec
    assert as_sketch_spec({"kind": "countmin", "d": 4, "w": 128, "seed": 3}) == spec
    assert as_sketch_spec(None) == SketchSpec()
    assert SketchSpec().resolved(10).w == 640 and SketchSpec(w=50).resolved(10).w == 50
    with pytest.raises(ValueError, match="kind must be one of fastagms, countmin, got 'cm'"):
        SketchSpec(kind="cm")
    with pytest.raises(ValueError, match="d must be an integer >= 1, got 0"):
        SketchSpec(d=0)
    with pytest.raises(ValueError, match="w must be an integer >= 2, got 1.5"):
        SketchSpec(w=1.5)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['width'\]"):
        as_sketch_spec({"width": 10})
    with pytest.raises(TypeError, match="sketch must be a dict"):
        as_sketch_spec(42)
    with pytest.raises(ValueError, match="strategy is 'blocksplit'"):
        run_options("blocksplit", {"sketch": {"w": 100}})
    assert run_options("cellrange", {"sketch": {"w": 100}}).strategy_options.sketch == \
        SketchSpec(w=100)
    assert run_options("basic", {"sketch": None}).strategy_options is None
    with pytest.warns(UserWarning, match="sketch= has no effect with strategy='auto'"):
        assert run_options("auto", {"sketch": {"w": 100}}).strategy_options is None
    with pytest.raises(ValueError, match="w is not resolved"):
        build(np.arange(3), SketchSpec())
    with pytest.raises(ValueError, match="different specs"):
        merge([build(np.arange(3), SketchSpec(w=8)), build(np.arange(3), SketchSpec(w=9))])


@pytest.mark.parametrize("link", [False, True])
def test_engine_sketch_profile_equals_sketch_of_the_bdm(client, link):
    from erblock.engine.inputs import prepare_source
    from erblock.engine.job import Job, RunOptions
    from erblock.engine.profile import profile_bdm, profile_sketch

    rng = np.random.default_rng(5)

    def frame(n):
        k = rng.choice(["a", "b", "c", "d", "e", None, ""], n).astype(object)
        return pd.DataFrame({"k": k, "name": rng.choice(["x", "y"], n)})

    frames = [frame(300), frame(200)] if link else [frame(300)]
    job = Job(mode="link" if link else "dedupe", keys=(as_key_spec("k"),), comparisons=(),
              options=RunOptions(npartitions=4))
    sources = [prepare_source(client, f, job, src, 2, persist=True)
               for src, f in enumerate(frames)]
    sketched = profile_sketch(client, job, sources, [False] * len(frames), r=4,
                              sketch=SketchSpec(kind="fastagms", d=3, w=16, seed=4))
    exact = profile_bdm(client, job, sources, [False] * len(frames))
    assert sketched.records == exact.records
    prof, bdm = sketched.data, exact.data
    want = from_bdm(bdm, prof.spec)
    assert np.array_equal(prof.r.counts, want.r.counts)
    assert np.array_equal(prof.r.signed, want.r.signed)
    if link:
        assert np.array_equal(prof.s.counts, want.s.counts)
    assert prof.n_records == bdm.n_records
    assert isinstance(bdm, BDM)
