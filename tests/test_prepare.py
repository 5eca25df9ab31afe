"""Where the input is prepared (``prepare=``): the client for small pandas input, the
workers otherwise. Which side prepares must change no block, plan or pair."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.blocking import prune, sorted_neighbourhood, tokens
from erblock.engine.inputs import CLIENT_RECORDS, prepares_locally
from erblock.engine.job import Job, RunOptions

pytestmark = pytest.mark.cluster


def _frame(n: int, seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    words = np.array(["red", "blue", "green", "the", "cam", "tv", "pro", "max"])
    title = [" ".join(g.choice(words, g.integers(1, 4))) for _ in range(n)]
    surname = g.choice(["smith", "jones", "lee", "brown", None], n)
    return pd.DataFrame({"title": title, "surname": surname,
                         "k": g.choice(["a", "b", "c"], n)},
                        index=pd.Index(np.arange(n) * 7 + 3, name="rid"))


KEYS = {
    "plain": "k",
    "tokens": tokens("title"),
    "sn": sorted_neighbourhood("surname", window=3),
    "passes": ["k", tokens("title")],
    "pruned": prune(tokens("title"), keep=2),
}


def _job(n_frames: int, prepare: str, sample: bool = False) -> Job:
    return Job(mode="link" if n_frames == 2 else "dedupe", keys=(), comparisons=(),
               options=RunOptions(prepare=prepare, persist=not sample))


@pytest.mark.parametrize("name", sorted(KEYS))
def test_plan_is_the_same_prepared_on_the_client_or_the_workers(client, name):
    df_r, df_s = _frame(120, 1), _frame(90, 2)
    for frames in ([df_r], [df_r, df_s]):
        plans = [erblock.plan(*frames, key=KEYS[name], client=client, n_tasks=7,
                              strategy="pairrange", npartitions=3, prepare=where)
                 for where in ("client", "cluster")]
        a, b = (p.summary() for p in plans)
        assert a == b
        assert a["total_comparisons"] > 0
        for field in ("kind", "left", "right", "comparisons", "reduce_task"):
            np.testing.assert_array_equal(getattr(plans[0].match, field),
                                          getattr(plans[1].match, field))


@pytest.mark.parametrize("strategy", ["cellblock", "pairrange"])
@pytest.mark.parametrize("name", sorted(KEYS))
def test_pairs_are_the_brute_force_ones_whoever_prepares(client, name, strategy):
    df_r, df_s = _frame(80, 3), _frame(60, 4)
    key = KEYS[name]
    runs = {}
    for where in ("client", "cluster"):
        kw = dict(key=key, compare={"title": "jaro_winkler"}, client=client, n_tasks=5,
                  strategy=strategy, npartitions=2, prepare=where)
        runs[where] = (set(pair_list(erblock.dedupe(df_r, **kw))),
                       set(pair_list(erblock.link(df_r, df_s, **kw))))
    assert runs["client"] == runs["cluster"]
    if name == "pruned":  # lossy by design: a subset of the unpruned key's pairs
        full = [KEYS["tokens"]]
        assert runs["client"][0] <= brute_dedupe(df_r, full)
        assert runs["client"][1] <= brute_link(df_r, df_s, full)
    else:
        keys = key if isinstance(key, list) else [key]
        assert runs["client"] == (brute_dedupe(df_r, keys), brute_link(df_r, df_s, keys))


def test_auto_prepares_small_pandas_input_on_the_client():
    small = pd.DataFrame({"k": ["a"] * 10})
    big = pd.DataFrame({"k": ["a"] * (CLIENT_RECORDS + 1)})
    assert prepares_locally([small], _job(1, "auto"), persist=True)
    assert prepares_locally([small, small], _job(2, "auto"), persist=True)
    assert not prepares_locally([big], _job(1, "auto"), persist=True)
    assert prepares_locally([big], _job(1, "client"), persist=True)
    assert not prepares_locally([small], _job(1, "cluster"), persist=True)
    # a progressive sample or persist=False reads partitions lazily on the workers
    assert not prepares_locally([small], _job(1, "auto", sample=True), persist=False)
    ddf = dd.from_pandas(small, npartitions=1)
    assert not prepares_locally([ddf], _job(1, "auto"), persist=True)


def test_prepare_client_refuses_dask_input_naming_it(client):
    df = _frame(20, 5)
    with pytest.raises(ValueError, match=r"prepare='client'.*df_s is a Dask DataFrame"):
        erblock.link(df, dd.from_pandas(df, npartitions=2), key="k", client=client,
                     compare={"title": "jaro_winkler"},
                     prepare="client")
    with pytest.raises(ValueError, match=r"prepare must be one of auto, client, cluster, "
                                          r"got 'laptop'"):
        erblock.dedupe(df, key="k", client=client, prepare="laptop",
                       compare={"title": "jaro_winkler"})
