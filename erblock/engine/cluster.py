"""Which Dask cluster a run uses.

* a ``distributed.Client`` passed in: that client;
* a scheduler address (``"tcp://host:8786"``): a client connected to it (cached);
* nothing: the current default client if the user made one, else a quiet, threads-based
  ``LocalCluster`` owned by erblock, started once and reused (threads suit rapidfuzz,
  which releases the GIL, and need no ``__main__`` guard in user scripts).

Before a client is used, :func:`check_workers` asks every worker which erblock it can
import (with a probe that needs no erblock to unpickle), so a worker without erblock or
with another version fails up front with a clear message instead of an unpickling error
deep inside a task. :func:`make_security` builds the ``distributed.security.Security``
of a TLS-secured scheduler from PEM file paths (what the CLI's ``--tls-*`` flags pass).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import types
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from typing import Any

import dask
from distributed import Client

from .._version import __version__
from .local import Executor, default_threads

_lock = threading.Lock()
_local: dict[str, Any] = {}
_remote: dict[tuple[str, Any], Client] = {}  # (address, TLS files) -> client
_checked: dict[tuple[str, frozenset[str]], bool] = {}


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

        threads = default_threads(threads)
        # without the worker's statistical profiler (it samples every thread's stack every
        # 10 ms, taking the GIL the compare threads share) and with a 1 s event-loop tick
        # (20 ms): only for this cluster, read when its worker starts; a cluster the user
        # brings keeps its own configuration
        with dask.config.set({"distributed.worker.profile.enabled": False,
                              "distributed.admin.tick.interval": "1s"}):
            cluster = LocalCluster(
                n_workers=1,
                threads_per_worker=threads,
                processes=False,
                dashboard_address=":0",  # a free port: never collide with another's 8787
                silence_logs=logging.ERROR,
            )
        client = Client(cluster, set_as_default=False)
        _local.update(client=client, cluster=cluster)
        return client


def get_client(client: Client | str | None = None, security: Any = None,
               check: bool = True, timeout: str | None = None) -> Client:
    """The client a run should use (see module docstring).

    ``security`` (a ``distributed.security.Security``, see :func:`make_security`) is used
    when connecting to a scheduler address. With ``check`` the workers' erblock version is
    verified once per set of workers (:func:`check_workers`). ``timeout`` for connecting
    defaults to Dask's ``distributed.comm.timeouts.connect`` setting (30 s unless set).
    """
    if timeout is None:
        import dask

        timeout = str(dask.config.get("distributed.comm.timeouts.connect", "30s"))
    c = _get_client(client, security, timeout)
    if check:
        check_workers(c)
    return c


def connector(client: Client | str | None, output: str | None, stack: contextlib.ExitStack
              ) -> Callable[[], Client]:
    """A function that connects to the run's cluster when first called (a job that starts
    in this process may never need it, :mod:`.local`), checks its workers and keeps the
    rest of the run in ``stack`` under :func:`scheduler_guard`. A ``client`` of the wrong
    type is refused now."""
    check_client_type(client)
    got: list[Client] = []

    def connect() -> Client:
        if not got:
            c = get_client(client, check=False)
            stack.enter_context(scheduler_guard(c, output))
            check_workers(c)
            got.append(c)
        return got[0]

    return connect


def check_client_type(client: Any) -> None:
    """Refuse a ``client=`` that is no :class:`~distributed.Client`, address or None."""
    if not (client is None or isinstance(client, (Client, str))):
        raise TypeError(
            "client must be a distributed.Client, a scheduler address such as "
            f"'tcp://127.0.0.1:8786', or None; got {type(client).__name__}"
        )


def _get_client(client: Any, security: Any, timeout: str) -> Client:
    if isinstance(client, Client):
        return client
    if isinstance(client, str):
        with _lock:
            cache_key = (client, _security_key(security))
            existing = _remote.get(cache_key)
            if existing is not None and existing.status == "running":
                return existing
            if client.startswith("tls://") and security is None:
                raise ValueError(
                    f"client: {client!r} is a TLS address; pass a client that has the "
                    "certificates, client=distributed.Client(address, security="
                    "erblock.engine.cluster.make_security(ca_file, cert, key)) (the CLI: "
                    "--tls-ca-file, --tls-cert and --tls-key)"
                )
            try:
                c = Client(client, set_as_default=False, security=security, timeout=timeout)
            except (OSError, TimeoutError) as exc:
                raise ConnectionError(
                    f"client: could not connect to the Dask scheduler at {client!r} ({exc}); "
                    "check the address, that `dask scheduler` is running and, for tls://, "
                    "the certificate files"
                ) from exc
            _remote[cache_key] = c
            return c
    check_client_type(client)
    try:
        from distributed import default_client

        return default_client()
    except ValueError:
        return local_client()


class SchedulerLostError(ConnectionError):
    """The connection to the Dask scheduler was lost during a run (the run was abandoned)."""


@contextlib.contextmanager
def scheduler_guard(client: Client, output: str | None = None) -> Iterator[None]:
    """Turn the errors a lost scheduler causes into one clear :class:`SchedulerLostError`.

    Without it a dead scheduler surfaces as a bare ``FutureCancelledError()`` or a
    ``CommClosedError`` from deep inside distributed. Errors raised while the client is
    still connected (bad input, a failing task, an existing output directory) pass
    through unchanged.
    """
    from distributed.client import ClosedClientError
    from distributed.comm.core import CommClosedError

    try:
        if client.status in ("connecting", "closing", "closed", "failed"):
            raise CommClosedError(f"the client is {client.status}")
        yield
    except (CancelledError, OSError, TimeoutError, ClosedClientError) as exc:
        connection_error = isinstance(
            exc, (CancelledError, CommClosedError, TimeoutError, ClosedClientError))
        if not _scheduler_lost(client, wait=2.0 if connection_error else 0.0):
            raise
        addr = getattr(getattr(client, "scheduler", None), "address", None) or "?"
        where = (f"; nothing was written under {os.path.abspath(output)!r}"
                 if output is not None else "")
        raise SchedulerLostError(
            f"lost the connection to the Dask scheduler at {addr} during the run "
            f"({type(exc).__name__}: {exc or 'futures cancelled'}); the run was abandoned"
            f"{where}. Check the scheduler's log, restart the scheduler and its workers, "
            "and run again"
        ) from exc


def _scheduler_lost(client: Client, wait: float = 2.0) -> bool:
    """True when the client is no longer connected to its scheduler (waits briefly, since
    the client notices a closed connection a moment after the futures do)."""
    deadline = time.monotonic() + wait
    while True:
        if client.status != "running":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _security_key(security: Any) -> Any:
    """What identifies a ``Security`` for the client cache (its certificate files)."""
    if security is None:
        return None
    return tuple(getattr(security, a, None) for a in
                 ("tls_ca_file", "tls_client_cert", "tls_client_key", "require_encryption"))


def close_remote(address: str | None = None) -> None:
    """Close the cached client of scheduler ``address`` (all cached remote clients if None).

    Call before stopping a scheduler that runs were pointed at by address, so the cached
    client does not keep trying to reconnect.
    """
    with _lock:
        for key in [k for k in _remote if address is None or k[0] == address]:
            c = _remote.pop(key, None)
            if c is not None:
                c.close()


def _workers(client: Executor) -> dict[str, Any]:
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # older distributed
        info = client.scheduler_info()
    return dict(info.get("workers", {}))


def total_threads(client: Executor) -> int:
    """Worker threads of the cluster (at least 1)."""
    return max(1, sum(w.get("nthreads", 1) for w in _workers(client).values()))


def worker_slots(client: Executor) -> list[str]:
    """One worker address per worker thread, interleaved (``a, b, a, b`` for two workers
    of two threads): where to place tasks in turn (empty while no worker is connected)."""
    threads = {a: max(1, int(w.get("nthreads", 1))) for a, w in _workers(client).items()}
    slots = [a for i in range(max(threads.values(), default=0))
             for a, n in sorted(threads.items()) if i < n]
    return slots


def dashboard_link(client: Client) -> str | None:
    """The dashboard address, when the cluster serves one (bokeh installed), else None."""
    import importlib.util

    if importlib.util.find_spec("bokeh") is None:
        return None
    try:
        link = client.dashboard_link
    except Exception:  # noqa: BLE001 - no dashboard is not an error
        return None
    return link or None


# -- TLS ------------------------------------------------------------------------------


def make_security(ca_file: str | None = None, cert: str | None = None, key: str | None = None,
                  require_encryption: bool = True) -> Any:
    """``distributed.security.Security`` for a TLS-secured scheduler, from PEM file paths.

    ``ca_file`` is the certificate authority that signed the scheduler's and workers'
    certificates; ``cert``/``key`` are this client's certificate and private key (``key``
    may be omitted when ``cert`` holds both). Files are checked now, so a typo fails here
    with the argument named rather than as a TLS handshake error.
    """
    from distributed.security import Security

    for name, path in (("tls_ca_file", ca_file), ("tls_cert", cert), ("tls_key", key)):
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"{name}: no such file {path!r}")
    if ca_file is None or cert is None:
        raise ValueError(
            "TLS needs at least tls_ca_file and tls_cert (and tls_key unless the certificate "
            f"file holds the key); got tls_ca_file={ca_file!r}, tls_cert={cert!r}"
        )
    return Security(
        tls_ca_file=ca_file,
        tls_client_cert=cert,
        tls_client_key=key,
        require_encryption=require_encryption,
    )


# -- worker check ---------------------------------------------------------------------


def _probe_source() -> dict[str, Any]:
    """Runs on a worker: which erblock it imports (needs only the standard library)."""
    import importlib
    import sys

    out: dict[str, Any] = {"python": ".".join(map(str, sys.version_info[:3]))}
    try:
        mod = importlib.import_module("erblock")
    except Exception as exc:  # noqa: BLE001 - reported to the client, not raised here
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["erblock"] = getattr(mod, "__version__", None)
    out["path"] = getattr(mod, "__file__", None)
    return out


# A copy of the probe with its own globals: it pickles by value, so a worker that cannot
# import erblock can still run it (a reference to erblock.engine.cluster would not unpickle).
_probe = types.FunctionType(_probe_source.__code__, {"__builtins__": __builtins__},
                             "erblock_worker_probe")


def check_workers(client: Client) -> dict[str, dict[str, Any]]:
    """Verify every worker imports the same erblock version as this process.

    Raises ``RuntimeError`` naming the workers that lack erblock or have another version
    (and what to install). Cached per scheduler and set of workers, so runs on the same
    cluster pay one round trip once. In-process clusters share this interpreter and are
    not probed.
    """


    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # older distributed
        info = client.scheduler_info()
    workers = frozenset(info.get("workers", {}))
    cache_key = (str(info.get("id", client.scheduler.address if client.scheduler else "")),
                 workers)
    if not workers or cache_key in _checked or _in_process(client):
        return {}
    results = client.run(_probe, on_error="return")
    bad = []
    for addr, res in sorted(results.items()):
        if isinstance(res, BaseException):
            bad.append(f"{addr}: the probe failed ({type(res).__name__}: {res})")
        elif "error" in res:
            bad.append(f"{addr}: cannot import erblock ({res['error']})")
        elif res.get("erblock") != __version__:
            bad.append(f"{addr}: erblock {res.get('erblock')} at {res.get('path')}")
    if bad:
        raise RuntimeError(
            f"the Dask workers must run erblock {__version__} (this process), but:\n  "
            + "\n  ".join(bad)
            + f"\ninstall erblock=={__version__} in the workers' environment (e.g. "
            f"`pip install erblock=={__version__}`, or use the client's image) and restart them"
        )
    _checked[cache_key] = True
    return results


def _in_process(client: Client) -> bool:
    cluster = getattr(client, "cluster", None)
    return cluster is not None and getattr(cluster, "processes", True) is False


def persist_on(client: Executor | None, collection: Any) -> Any:
    """``collection`` persisted by its own ``persist`` (its optimised graph) under
    ``client``, or the default scheduler when None: with dask-expr, ``client.persist(x)``
    of a persisted parquet read can lose its dependencies."""
    if client is None:
        return collection.persist()
    with client.as_current():
        return collection.persist()
