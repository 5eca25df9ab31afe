"""Random record pairs (u of the Fellegi-Sunter model): the sample prepared once, the
comparisons encoded where values repeat, each task preferring the next worker thread."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from distributed import Client, LocalCluster, SchedulerPlugin

import erblock
from erblock.datasets import generate
from erblock.engine.cluster import worker_slots
from erblock.engine.tasks.encoded import block_encoding
from erblock.engine.tasks.score import PreparedSample, prepare_sample, random_summaries
from erblock.matchers.comparisons import as_comparisons
from erblock.matchers.scoring import FellegiSunter

COMPARE = {"first_name": "name", "surname": "name", "dob": "date", "city": "name",
           "zip": "postcode"}


def _same(a: Any, b: Any) -> bool:
    """Deep equality of summaries: arrays exactly (NaN equal), objects by their fields."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__"):
        return type(a) is type(b) and _same(vars(a), vars(b))
    return bool(a == b)


def _direct(s: PreparedSample) -> PreparedSample:
    """The same sample with no column encoded: every pair through the kernel."""
    return PreparedSample(s.frame, s.columns, [None] * len(s.columns))


@pytest.fixture(scope="module")
def sample():
    df, _ = generate(700, kind="person", task="dedupe", seed=3)
    df = df.reset_index(drop=True)
    rng = np.random.default_rng(0)
    for col in COMPARE:  # missing values in every compared column
        df.loc[rng.random(len(df)) < 0.1, col] = None
    comps = as_comparisons(COMPARE)
    model = FellegiSunter().bind(comps)
    return df, comps, model


def _encoded(left, other, comps, rows, budget, link, always=False):
    """Names of the comparisons random_summaries encodes for a task of ``rows``."""
    a, b = rows or (0, len(left))
    codes = block_encoding(left.encoded, other.encoded, a, b, 0 if link else a + 1,
                           len(other), not link, comps, None, always=always,
                           cell_budget=budget)
    return [c.name for c, x in zip(comps, codes) if x is not None]


@pytest.mark.parametrize("link", [False, True])
def test_encoded_random_pairs_equal_the_direct_kernel(sample, link):
    df, comps, model = sample
    cols = [c.column for c in comps]
    left = prepare_sample(df.iloc[:400], comps, cols)
    right = prepare_sample(df.iloc[400:], comps, cols) if link else None
    other = right if link else left
    # several chunks of a task that starts mid-sample (every gather offset non-zero),
    # then the whole sample in one chunk
    for rows, budget in (((50, 300), 30_000), (None, 1 << 20)):
        encoded = _encoded(left, other, comps, rows, budget, link)
        # the repeated cities are encoded; dates, nearly all distinct, stay on the kernel
        assert "city_name" in encoded and "dob_date" not in encoded, encoded
        got = random_summaries(left, right, comps, model, budget, rows)
        want = random_summaries(_direct(left), None if right is None else _direct(right),
                                comps, model, budget, rows)
        assert len(got) == len(want) > (2 if rows else 0)
        assert all(_same(a, b) for a, b in zip(got, want))
        n = sum(s[1] for s in got)
        a, b = rows or (0, 400)
        assert n == (sum(400 - 1 - i for i in range(a, b)) if not link else (b - a) * 300)


def test_encode_option_reaches_the_random_pairs(sample):
    df, comps, model = sample
    cols = [c.column for c in comps]
    never = prepare_sample(df.iloc[:400], comps, cols, "never")
    assert never.encoded == [None] * len(comps)
    left = prepare_sample(df.iloc[:400], comps, cols)
    auto = _encoded(left, left, comps, None, 1 << 20, False)
    always = _encoded(left, left, comps, None, 1 << 20, False, always=True)
    assert set(auto) < set(always) and "dob_date" in always
    want = random_summaries(never, None, comps, model, 1 << 20)
    for mode in ("auto", "always"):
        got = random_summaries(left, None, comps, model, 1 << 20, mode=mode)
        assert all(_same(a, b) for a, b in zip(got, want))


def test_worker_slots_interleave_the_workers_threads():
    with LocalCluster(processes=False, n_workers=2, threads_per_worker=2,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster, set_as_default=False) as client:
        slots = worker_slots(client)
        addresses = sorted(client.scheduler_info()["workers"])
    assert slots == [addresses[0], addresses[1], addresses[0], addresses[1]]


class _Placements(SchedulerPlugin):
    """Records the worker restrictions of the random-pair tasks the scheduler receives."""

    name = "erblock-test-placements"

    def __init__(self, scheduler: Any) -> None:
        self.seen: list[tuple[tuple[str, ...], bool]] = []
        self.scheduler = scheduler

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kw: Any) -> None:
        if start == "released" and "random_summaries" in str(key):
            ts = self.scheduler.tasks[key]
            self.seen.append((tuple(sorted(ts.worker_restrictions or ())),
                              bool(ts.loose_restrictions)))


def test_random_pair_tasks_prefer_each_worker_thread_in_turn(cluster, client):
    df, _ = generate(1500, kind="person", task="dedupe", seed=5)
    plugin = _Placements(cluster.scheduler)  # the in-process cluster's scheduler
    cluster.scheduler.add_plugin(plugin)
    try:
        pairs = erblock.dedupe(df, key="block_key", compare=COMPARE, client=client,
                               scoring=FellegiSunter(u_pairs=400_000))
    finally:
        cluster.scheduler.remove_plugin(name=plugin.name)
    workers = sorted(client.scheduler_info()["workers"])
    # two row ranges per worker thread, each restricted (loosely: work stealing and a
    # worker's death may still move it) to one worker in turn
    assert sorted(plugin.seen) == sorted([((w,), True) for w in workers] * 2), plugin.seen
    assert len(pairs) > 0


def test_sample_shares_a_column_prepared_alike(sample):
    """Two comparisons of one column whose methods prepare it alike hold one prepared
    column and one encoding (as a reduce task's Side does); another method of the same
    column prepares its own."""
    df, _, _ = sample
    comps = as_comparisons([("surname", "jaro_winkler"), ("surname", "jaro"),
                            ("surname", "exact"), ("city", "jaro_winkler")])
    assert comps[0].kernel.prepare_key() == comps[1].kernel.prepare_key()
    assert comps[0].kernel.prepare_key() != comps[2].kernel.prepare_key()
    prepared = prepare_sample(df.iloc[:300], comps, [c.column for c in comps])
    assert prepared.columns[0] is prepared.columns[1]
    assert prepared.encoded[0] is prepared.encoded[1] is not None
    assert prepared.columns[2] is not prepared.columns[0]
    assert prepared.columns[3] is not prepared.columns[0]
    alone = prepare_sample(df.iloc[:300], comps[1:2], ["surname"])
    np.testing.assert_array_equal(alone.columns[0].values, prepared.columns[1].values)


def test_held_memory_is_what_dask_counts(sample):
    """Dask sizes a future's value with sys.getsizeof unless the object says better: the
    kept pairs and the prepared sample report the arrays they hold, shared ones once."""
    from dask.sizeof import sizeof

    from erblock.engine.tasks.score import KeptTask

    df, comps, _ = sample
    pairs = df.assign(text_id=df["surname"].astype(object))
    deep = int(pairs.memory_usage(deep=True).sum())
    assert 0.8 * deep < sizeof(KeptTask(pairs, {"task": 1})) < 1.25 * deep
    cols = [c.column for c in comps]
    prepared = prepare_sample(df, comps, cols)
    frame = int(df.memory_usage(deep=True).sum())
    assert sizeof(prepared) > frame + sum(p.values.nbytes for p in prepared.columns)
    twice = prepare_sample(df, [*comps, comps[0]], [*cols, cols[0]])
    assert sizeof(twice) == sizeof(prepared)  # the repeated comparison shares its column


def test_random_pairs_do_not_depend_on_the_partitioning():
    """The u sample is drawn by a hash of each record's id, not of its position: the
    model, and so every match weight, is the same for 1, 2 or 3 input partitions and for
    a Dask frame cut elsewhere (a position-based draw moved weights by up to 2 bits)."""
    import dask.dataframe as dd

    df, _ = generate(1000, kind="person", task="dedupe", seed=1)
    compare = {"first_name": "name", "surname": "name", "dob": "date", "zip": "postcode"}
    runs = []
    for data, n in ((df, 1), (df, 2), (df, 3), (dd.from_pandas(df, npartitions=4), None)):
        model = FellegiSunter(u_pairs=50_000)  # fewer than the record pairs: a sample
        pairs = erblock.dedupe(data, key=erblock.soundex("surname"), compare=compare,
                               scoring=model, npartitions=n)
        runs.append((model.n_u_pairs_, model.lambda_,
                     pairs.sort_values(["left_id", "right_id"]).reset_index(drop=True)))
    assert runs[0][0] < 1000 * 999 // 2
    for n_u, lam, pairs in runs[1:]:
        assert (n_u, lam) == runs[0][:2]
        np.testing.assert_array_equal(pairs["match_weight"], runs[0][2]["match_weight"])
