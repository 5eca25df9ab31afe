"""Shared fixtures: one real threads-based LocalCluster per session, a Client per test."""

from __future__ import annotations

import logging
import os

# Dask's diagnostics cost CPU even when a cluster idles (the worker's statistical
# profiler samples every thread every 10 ms, the event-loop tick runs every 20 ms): 0.04
# of a core per idle process, measured. Tests do not read them, so they are off for the
# in-process clusters and, through the environment, for every dask scheduler, worker and
# CLI process the tests start.
_QUIET = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}
for _k, _v in _QUIET.items():  # Dask's environment form: DASK_A__B__C
    os.environ.setdefault("DASK_" + _k.upper().replace(".", "__"), str(_v))

import dask  # noqa: E402
import pytest  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402
from hypothesis import settings  # noqa: E402

# no wall-clock limit on any property test (speed is measured in benchmarks/): hypothesis'
# default 200 ms deadline failed a 1 ms test whose first run met a loaded 2-core machine
settings.register_profile("erblock", deadline=None)
settings.load_profile("erblock")

dask.config.set(_QUIET)

#: The longest test files (seconds on 2 cores, measured), run first: pytest-xdist
#: (``--dist loadfile --no-loadscope-reorder`` in pyproject.toml) hands files out in
#: collection order, so the long ones start early instead of leaving one core alone at
#: the end (longest first, as in LPT scheduling). Other files keep pytest's order.
SLOW_FIRST = (
    "test_quality_gates.py", "test_faults.py", "test_report_html.py", "test_memory.py",
    "test_join.py", "test_determinism.py", "test_clustering.py", "test_conformance.py",
    "test_cli_scoring.py", "test_cli_cluster.py", "test_multipass.py", "test_real_cluster.py",
    "test_tls.py", "test_encoded.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(rank)))  # stable: order kept


@pytest.fixture(scope="session")
def cluster():
    with LocalCluster(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as c:
        yield c


@pytest.fixture
def client(cluster):
    with Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(scope="module")
def real_cluster():
    """Address of a real ``dask scheduler`` with two ``dask worker`` processes (1 thread
    each) on 127.0.0.1, started once per test file on free ports and stopped after it (an
    idle cluster kept for the session costs more CPU than starting one per file)."""
    from procs import ProcCluster

    with ProcCluster(n_workers=2, nthreads=1) as pc:
        yield pc.address


@pytest.fixture
def real_client(real_cluster):
    """A client of :func:`real_cluster` for one test."""
    with Client(real_cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(autouse=True)
def _no_cost_model_of_another_test():
    """Every test starts without the cost models earlier tests calibrated: ``auto`` uses
    any model measured on the same cluster, so on the shared session cluster its plan (and
    what a test measures of it) would depend on which tests ran before in this worker."""
    from erblock.engine.calibrate import clear_cache

    clear_cache()


@pytest.fixture(autouse=True)
def _on_the_cluster(request, monkeypatch):
    """Tests run on the cluster they pass (or erblock's own): ``executor="auto"`` would run
    their small pandas jobs in the test process (erblock.engine.local), and the suite is
    about the distributed path. Tests of the local executor pass ``executor="local"``, and
    tests marked ``auto_executor`` see the default choice."""
    if request.node.get_closest_marker("auto_executor") is None:
        from erblock.engine import local

        monkeypatch.setattr(local, "LOCAL_MAX_RECORDS", -1)


@pytest.fixture(scope="session", autouse=True)
def _close_erblock_local_cluster():
    """Close the local cluster erblock starts for calls without ``client=`` while pytest
    still owns the log streams (at interpreter exit they are already closed)."""
    yield
    from erblock.engine.cluster import _close_all

    _close_all()
