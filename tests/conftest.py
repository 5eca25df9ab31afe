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
