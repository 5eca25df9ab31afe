"""erblock's own local cluster (no client given): its worker runs without Dask's
statistical profiler, and the user's Dask configuration is left as it was."""

from __future__ import annotations

import dask
import pandas as pd

import erblock
from erblock.engine.cluster import _close_all, local_client


def test_own_local_cluster_runs_without_the_profiler_and_leaves_config_alone():
    with dask.config.set({"distributed.worker.profile.enabled": True,
                          "distributed.admin.tick.interval": "20ms"}):
        _close_all()  # a cluster another test made (under the suite's config) is not it
        client = local_client()
        workers = list(client.cluster.workers.values())
        assert workers and all("profile" not in w.periodic_callbacks for w in workers)
        assert dask.config.get("distributed.worker.profile.enabled") is True
        assert dask.config.get("distributed.admin.tick.interval") == "20ms"
        df = pd.DataFrame({"k": ["a", "a", "b"], "name": ["x", "x", "y"]})
        pairs = erblock.dedupe(df, key="k", compare={"name": "exact"})  # no client: this one
        assert list(zip(pairs["left_id"], pairs["right_id"])) == [(0, 1)]
