"""Shared fixtures: one real threads-based LocalCluster per session, a Client per test."""

from __future__ import annotations

import logging

import pytest
from distributed import Client, LocalCluster


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


@pytest.fixture(scope="session")
def real_cluster():
    """Address of a real ``dask scheduler`` with two ``dask worker`` processes (1 thread
    each) on 127.0.0.1, started once per session on free ports and stopped at the end."""
    from procs import ProcCluster

    with ProcCluster(n_workers=2, nthreads=1) as pc:
        yield pc.address


@pytest.fixture
def real_client(real_cluster):
    """A client of :func:`real_cluster` for one test."""
    with Client(real_cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(scope="session", autouse=True)
def _close_erblock_local_cluster():
    """Close the local cluster erblock starts for calls without ``client=`` while pytest
    still owns the log streams (at interpreter exit they are already closed)."""
    yield
    from erblock.engine.cluster import _close_all

    _close_all()
