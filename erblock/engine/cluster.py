"""Which Dask cluster a run uses.

* a ``distributed.Client`` passed in: that client;
* a scheduler address (``"tcp://host:8786"``): a client connected to it (cached);
* nothing: the current default client if the user made one, else a quiet, threads-based
  ``LocalCluster`` owned by erblock, started once and reused (threads suit rapidfuzz,
  which releases the GIL, and need no ``__main__`` guard in user scripts).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any

from distributed import Client

_lock = threading.Lock()
_local: dict[str, Any] = {}
_remote: dict[str, Client] = {}


def _close_all() -> None:
    for c in list(_remote.values()):
        c.close()
    _remote.clear()
    client = _local.pop("client", None)
    cluster = _local.pop("cluster", None)
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()


atexit.register(_close_all)


def local_client(threads: int | None = None) -> Client:
    """erblock's own threads-based local cluster (created on first use)."""
    with _lock:
        client = _local.get("client")
        if client is not None and client.status == "running":
            return client
        from distributed import LocalCluster

        threads = threads or int(os.environ.get("ERBLOCK_THREADS", 0)) or os.cpu_count() or 1
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=threads,
            processes=False,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster, set_as_default=False)
        _local.update(client=client, cluster=cluster)
        return client


def get_client(client: Client | str | None = None, security: Any = None) -> Client:
    """The client a run should use (see module docstring)."""
    if isinstance(client, Client):
        return client
    if isinstance(client, str):
        with _lock:
            existing = _remote.get(client)
            if existing is not None and existing.status == "running":
                return existing
            try:
                c = Client(client, set_as_default=False, security=security, timeout="20s")
            except OSError as exc:
                raise ConnectionError(
                    f"client: could not connect to the Dask scheduler at {client!r} ({exc}); "
                    "check the address and that `dask scheduler` is running"
                ) from exc
            _remote[client] = c
            return c
    if client is not None:
        raise TypeError(
            "client must be a distributed.Client, a scheduler address such as "
            f"'tcp://127.0.0.1:8786', or None; got {type(client).__name__}"
        )
    try:
        from distributed import default_client

        return default_client()
    except ValueError:
        return local_client()


def total_threads(client: Client) -> int:
    """Worker threads of the cluster (at least 1)."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # older distributed
        info = client.scheduler_info()
    return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))


def dashboard_link(client: Client) -> str | None:
    try:
        link = client.dashboard_link
    except Exception:  # noqa: BLE001 - no dashboard is not an error
        return None
    return link or None
