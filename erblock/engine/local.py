"""Small jobs in this process: the engine's own tasks on Dask's threaded scheduler.

A link of two pandas frames of a thousand records each spends more of its time in the
distributed scheduler than in its tasks. Measured on Abt-Buy under token blocking
(182,522 candidate pairs, a two-process ``LocalCluster``): 0.25–0.30 s for
``erblock.candidates``, of which the tasks themselves run ~0.1 s; the rest is task
submission, scheduling, transfers between processes and round trips (four per run).

``executor="auto"`` (the default) therefore *starts* a job here when every input is a
pandas frame and they hold at most :data:`LOCAL_MAX_RECORDS` records together (unless
``shuffle_method="p2p"``, which needs ``distributed``'s workers): the same
task functions and graphs, run by :class:`LocalClient` (Dask's threaded scheduler, one
thread per core, no scheduler process, nothing serialised). The profile then decides: a
job of more than :data:`LOCAL_MAX_COMPARISONS` comparisons (a skewed block can make a small
input a big job) *moves* to the cluster before it is planned: its prepared partitions are
held there (:func:`move_sources`) and planning, routing and comparing run on the cluster as
for any job. ``executor="cluster"`` always uses the cluster, ``executor="local"`` never
does (for a run without ``distributed``'s processes, e.g. to debug). Pairs, plans and
reports are the same either way; the report's ``settings["executor"]`` says which ran.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import dask
import pandas as pd
from dask.delayed import Delayed, DelayedLeaf
from distributed import Client

from .job import Job

#: pandas inputs of at most this many records (together) start in this process
LOCAL_MAX_RECORDS = 100_000
#: a job started here moves to the cluster when its profile counts more comparisons than
#: this: about a second of comparing on one core at typical rates, so a job that stays
#: here is one the cluster could not finish much sooner once its overhead is paid
LOCAL_MAX_COMPARISONS = 5_000_000


def starts_local(job: Job, frames: Sequence[Any]) -> bool:
    """Whether a run of ``job`` on ``frames`` starts in this process (module doc)."""
    executor = job.options.executor
    if executor != "auto":
        return executor == "local"
    # a progressive sample is for inputs too big to profile in full; Dask's p2p shuffle
    # needs distributed's workers
    return (job.options.sample is None and job.options.shuffle_method != "p2p"
            and all(isinstance(f, pd.DataFrame) for f in frames)
            and sum(len(f) for f in frames) <= LOCAL_MAX_RECORDS)


def stays_local(job: Job, total_comparisons: float) -> bool:
    """Whether a job started here stays here once its profile is known."""
    return job.options.executor == "local" or total_comparisons <= LOCAL_MAX_COMPARISONS


def _memory() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def _is_leaf(x: Any) -> bool:
    """Whether ``x`` is an object wrapped as delayed (a leaf: nothing to run)."""
    return isinstance(x, DelayedLeaf)


def default_threads(threads: int | None = None) -> int:
    """Threads of this machine's executors: ``threads``, else ``$ERBLOCK_THREADS``, else
    one per core (this process's :class:`LocalClient` and the local cluster alike)."""
    return threads or int(os.environ.get("ERBLOCK_THREADS", 0)) or os.cpu_count() or 1


class LocalClient:
    """The part of ``distributed.Client`` the engine uses, run in this process.

    ``compute`` runs a graph at once on Dask's threaded scheduler and returns "futures"
    that are the results wrapped as literal ``Delayed`` objects, so later graphs take them
    as inputs exactly as they take a cluster's futures, and ``gather`` unwraps them. There
    is nothing to cancel and no worker to lose: a failing task raises from ``compute``.
    """

    status = "running"

    def __init__(self, threads: int | None = None) -> None:
        self.threads = default_threads(threads)
        self.id = f"local-{uuid.uuid4().hex}"
        self._values: dict[Any, Any] = {}

    def _run(self, xs: Sequence[Any]) -> list[Any]:
        if not xs:
            return []
        # graph optimisation only culls and fuses, and costs more than it saves here
        return list(dask.compute(*xs, scheduler="threads", num_workers=self.threads,
                                 optimize_graph=False))

    def compute(self, x: Any, sync: bool = False, **_: Any) -> Any:
        """``x`` (a collection or a list of them) computed now; with ``sync`` the values,
        else done futures of them (``workers=`` and other placement options mean nothing
        here). Objects already done (``hold`` of client-side objects) are not run again."""
        many = isinstance(x, (list, tuple))
        xs = list(x) if many else [x]
        if not sync and all(_is_leaf(v) for v in xs):
            return xs if many else xs[0]
        values = self._run(xs)
        if not sync:
            values = [self._done(v) for v in values]
        return values if many else values[0]

    def _done(self, value: Any) -> Any:
        future = dask.delayed(value, pure=False, traverse=False)
        self._values[future.key] = value  # for gather; dropped with this client
        return future

    def gather(self, futures: Any) -> Any:
        """The values of done futures (anything else is computed)."""
        many = isinstance(futures, (list, tuple))
        xs = list(futures) if many else [futures]
        done = [isinstance(x, Delayed) and x.key in self._values for x in xs]
        values = [self._values[x.key] if d else None for x, d in zip(xs, done)]
        todo = [i for i, d in enumerate(done) if not d]
        for i, v in zip(todo, self._run([xs[i] for i in todo])):
            values[i] = v
        return values if many else values[0]

    def persist(self, x: Any, **_: Any) -> Any:
        """Done futures of ``x`` (a list of delayed objects), or ``x`` persisted."""
        if isinstance(x, (list, tuple)):
            return self.compute(list(x))
        return dask.persist(x, scheduler="threads", num_workers=self.threads)[0]

    def map(self, func: Callable[..., Any], *iterables: Any, pure: bool = True,
            **kwargs: Any) -> list[Any]:
        """``func`` of every item (futures among the arguments are their values)."""
        return self.compute([dask.delayed(func, pure=False)(*args, **kwargs)
                             for args in zip(*iterables)])

    def cancel(self, futures: Any) -> None:
        """Nothing runs in the background here."""

    def scheduler_info(self, n_workers: int = 0) -> dict[str, Any]:
        """One "worker": this process, its threads and the machine's memory."""
        return {"id": self.id, "workers": {"local": {"nthreads": self.threads,
                                                     "memory_limit": _memory()}}}

    def as_current(self) -> Any:
        """Dask collections computed inside use the threaded scheduler."""
        return dask.config.set(scheduler="threads", num_workers=self.threads)


#: what the engine's driver functions take: a cluster's client or this process
Executor = Client | LocalClient
