"""Runs against real ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1.

The same jobs give the same pairs on the real cluster (separate processes: everything
is pickled, parquet parts are written by other processes) as on the in-process
LocalCluster and as the brute force. Workers without erblock, or with another version,
are refused up front with a message naming them.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest
from distributed import Client
from oracle import brute_dedupe, brute_link, pair_list
from procs import ProcCluster

import erblock
from erblock.blocking import prefix
from erblock.report import RunReport

pytestmark = pytest.mark.cluster

COMPARE = {"name": "jaro_winkler", "age": {"method": "numeric", "scale": 10}}


def _frame(n: int, seed: int, start: int = 0) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    w = np.exp(-0.5 * np.arange(10))
    keys = g.choice(10, n, p=w / w.sum()).astype(str).astype(object)
    keys[g.random(n) < 0.05] = None
    return pd.DataFrame(
        {"k": keys,
         "name": g.choice(["smith", "smyth", "jones", "li", "müller", "o'neil"], n),
         "age": g.integers(20, 60, n).astype(float)},
        index=pd.RangeIndex(start, start + n))


@pytest.mark.parametrize("strategy", ["basic", "blocksplit", "auto"])
def test_dedupe_on_real_cluster_equals_local_and_brute_force(real_client, client, strategy):
    df = _frame(600, 1)
    kw = dict(key="k", compare=COMPARE, strategy=strategy, n_tasks=7, npartitions=3, sort=True)
    real = erblock.dedupe(df, client=real_client, **kw)
    local = erblock.dedupe(df, client=client, **kw)
    pd.testing.assert_frame_equal(real, local)
    assert set(pair_list(real)) == brute_dedupe(df, ["k"])
    workers = {t.worker for t in RunReport.of(real).tasks}
    assert len(workers) == 2, "both worker processes should have run compare tasks"


def test_link_on_real_cluster_equals_local_and_brute_force(real_client, client):
    df_r, df_s = _frame(400, 2), _frame(300, 3, start=10_000)
    kw = dict(key=["k", prefix("name", 2)], compare=COMPARE, strategy="blocksplit", n_tasks=5,
              npartitions=4, sort=True)
    real = erblock.link(df_r, df_s, client=real_client, **kw)
    local = erblock.link(df_r, df_s, client=client, **kw)
    pd.testing.assert_frame_equal(real, local)
    assert set(pair_list(real)) == brute_link(df_r, df_s, ["k", prefix("name", 2)])


def test_scheduler_address_string_and_output_written_by_worker_processes(real_cluster, tmp_path):
    df = _frame(300, 4)
    out = tmp_path / "pairs"
    erblock.dedupe(df, key="k", compare=COMPARE, client=real_cluster, n_tasks=4,
                   output=str(out))
    report = erblock.read_report(out)
    got = pd.read_parquet(out)
    assert len(got) == report.pairs
    assert set(pair_list(got)) == brute_dedupe(df, ["k"])
    assert sorted(p.name for p in out.iterdir()) == ["_erblock_report.json"] + [
        f"part-{t:05d}.parquet" for t in range(4)]


def _shadow_package(tmp_path, body: str) -> dict[str, str]:
    """A PYTHONPATH under which ``import erblock`` finds ``body`` instead of the real one."""
    pkg = tmp_path / "shadow" / "erblock"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(body))
    return {"PYTHONPATH": str(tmp_path / "shadow")}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('__version__ = "0.0.1-other"\n', r"erblock 0\.0\.1-other"),
        ('raise ModuleNotFoundError("No module named \'erblock\'", name="erblock")\n',
         r"cannot import erblock \(ModuleNotFoundError"),
    ],
    ids=["other-version", "missing"],
)
def test_workers_with_another_or_no_erblock_fail_up_front(tmp_path, body, message):
    env = _shadow_package(tmp_path, body)
    df = _frame(50, 5)
    with ProcCluster(n_workers=1, worker_env=env) as pc, \
            Client(pc.address, set_as_default=False) as c:
        with pytest.raises(RuntimeError, match=message) as info:
            erblock.dedupe(df, key="k", compare=COMPARE, client=c)
        assert f"erblock {erblock.__version__}" in str(info.value)
        assert "install erblock" in str(info.value)
        # plan() talks to the same workers: checked too
        with pytest.raises(RuntimeError, match=message):
            erblock.plan(df, key="k", client=c)
