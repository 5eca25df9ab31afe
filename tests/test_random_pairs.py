"""Random record pairs (u of the Fellegi-Sunter model): the sample prepared once, the
comparisons encoded where values repeat, the tasks spread over the workers."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from distributed import Client, LocalCluster, get_task_stream

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


@pytest.mark.parametrize("link", [False, True])
def test_encoded_random_pairs_equal_the_direct_kernel(sample, link):
    df, comps, model = sample
    cols = [c.column for c in comps]
    left = prepare_sample(df.iloc[:400], comps, cols)
    right = prepare_sample(df.iloc[400:], comps, cols) if link else None
    other = right if link else left
    # the repeated names and cities are encoded for this task (the sample is big enough)
    codes = block_encoding(left.encoded, other.encoded, 50, 300, 0 if link else 51,
                           len(other), not link, comps, None, cell_budget=1 << 22)
    encoded = [c.name for c, x in zip(comps, codes) if x is not None]
    assert "first_name_name" in encoded and "city_name" in encoded, encoded
    assert "dob_date" not in encoded  # nearly all distinct: the kernel stays
    for rows, budget in (((50, 300), 10_000), (None, 1 << 20)):  # many chunks, one
        got = random_summaries(left, right, comps, model, budget, rows)
        want = random_summaries(_direct(left), None if right is None else _direct(right),
                                comps, model, budget, rows)
        assert len(got) == len(want) > 0
        assert all(_same(a, b) for a, b in zip(got, want))
        n = sum(s[1] for s in got)
        a, b = rows or (0, 400)
        assert n == (sum(400 - 1 - i for i in range(a, b)) if not link else (b - a) * 300)


def test_worker_slots_interleave_the_workers_threads():
    with LocalCluster(processes=False, n_workers=2, threads_per_worker=2,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster, set_as_default=False) as client:
        slots = worker_slots(client)
        addresses = sorted(client.scheduler_info()["workers"])
    assert slots == [addresses[0], addresses[1], addresses[0], addresses[1]]


def test_random_pair_tasks_run_on_every_worker(client):
    df, _ = generate(1500, kind="person", task="dedupe", seed=5)
    with get_task_stream(client) as ts:
        pairs = erblock.dedupe(df, key="block_key", compare=COMPARE, client=client,
                               scoring=FellegiSunter(u_pairs=400_000))
    ran = {}
    for d in ts.data:
        if "random_summaries" in str(d["key"]):
            ran[d["worker"]] = ran.get(d["worker"], 0) + 1
    assert len(ran) == len(client.scheduler_info()["workers"]) == 2, ran
    assert sum(ran.values()) == 4  # two row ranges per worker thread
    assert len(pairs) > 0
