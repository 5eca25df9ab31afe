"""Route and compare on the cluster (driver side): the graph of one run's reduce tasks.

**Routing** is exact, never a hashing shuffle (which would undo the balance). With the
``direct`` method each prepared partition is split by reduce task
(:func:`~erblock.engine.tasks.route.split_by_task`) and every reduce task takes its piece
of every partition: one small task per (partition, reduce task), no sort, no repartition;
``auto`` uses it while partitions × reduce tasks stay below
:data:`~erblock.engine.job.DIRECT_ROUTE_LIMIT`. Beyond, records move with Dask's shuffle
of ``set_index(TASK, divisions=range(r + 1))``, which places ids exactly (``tasks`` or
``p2p``).

**Reduce tasks** get the predicted load as priority, so the largest start first. By the
run's scoring (:mod:`erblock.engine.tasks.reduce`): the mean score in one phase (then,
with an output directory, a write task per reduce task on the same worker, prioritised
so that a worker holds at most one unwritten result per thread); a fitted model in one
phase; a model that fits during the run in two (:func:`run_two_phase`).
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..balancing.plan import Plan
from ..blocking.dates import unformatted_date_keys
from ..blocking.neighbourhood import window_of
from ..matchers.methods.base import Method
from ..matchers.scoring.base import FitContext, ScoringModel
from ..report import TaskStats
from .cluster import worker_slots
from .inputs import Source, hold
from .job import DIRECT_ROUTE_LIMIT, Job
from .local import Executor
from .output import remove_tree
from .progress import show_progress
from .schema import RANK, TASK, UNIT
from .tasks.prepare import invalid_counts, sample_records, value_counts
from .tasks.reduce import (
    TaskSpec,
    compare_reduce,
    keep_reduce,
    model_reduce,
    reduce_call,
    score_reduce,
    stream_reduce,
    write_reduce,
)
from .tasks.route import piece, route_partition, split_by_task
from .tasks.score import prepare_sample, random_summaries, row_ranges, summarize_kept

#: the share of a comparison's present values it cannot read from which that is warned
INVALID_SHARE = 0.1

Results = list[tuple[pd.DataFrame | None, TaskStats]]


@dataclass
class Execution:
    """A plan held by the cluster with the routed records of every reduce task."""

    plan: Plan
    plan_future: Any
    received: list[list[list[Any]]]  # source -> reduce task -> pieces
    spec: TaskSpec
    spec_future: Any = None  #: the spec held once by the cluster (tasks refer to it)

    @property
    def r(self) -> int:
        return self.plan.n_tasks

    def inputs(self, t: int) -> tuple[list[Any], list[Any] | None]:
        return self.received[0][t], (self.received[1][t] if len(self.received) > 1 else None)

    @property
    def shipped_spec(self) -> Any:
        """The spec as tasks take it: held once by the cluster (its comparisons may carry
        corpus statistics of the whole input), not copied into every task."""
        return self.spec_future if self.spec_future is not None else self.spec

    def priority(self, t: int) -> int:
        return int(self.plan.loads[t])

    def reduce_tasks(self, func: Any, *extra: Any) -> list[Any]:
        """``func(t, plan, left, right, spec, *extra)`` as a delayed task per reduce task,
        the largest loads first."""
        tasks = []
        name = getattr(func, "__name__", "reduce")
        for t in range(self.r):
            left, right = self.inputs(t)
            pieces = [*left, *(right or ())]
            with dask.annotate(priority=self.priority(t)):
                tasks.append(dask.delayed(reduce_call, pure=False)(
                    func, len(left), -1 if right is None else len(right), t, self.plan_future,
                    self.shipped_spec, *pieces, *extra,
                    dask_key_name=f"{name}-{uuid.uuid4().hex}"))
        return tasks


def routed_meta(meta: pd.DataFrame) -> pd.DataFrame:
    """An empty routed frame: the prepared columns and the routing ones."""
    return meta.assign(**{UNIT: np.zeros(0, np.int64), TASK: np.zeros(0, np.int64),
                          RANK: np.zeros(0, np.int64)})


def use_direct_routing(job: Job, sources: Sequence[Source], r: int) -> bool:
    method = job.options.shuffle_method
    if method == "direct":
        return True
    return method == "auto" and sum(s.n_parts for s in sources) * r <= DIRECT_ROUTE_LIMIT


def route(job: Job, plan_f: Any, sources: Sequence[Source], r: int) -> list[list[list[Any]]]:
    """For every source and reduce task, the lazy pieces of records it receives."""
    out = []
    if use_direct_routing(job, sources, r):
        for s in sources:
            splits = [dask.delayed(split_by_task, pure=False)(p, plan_f) for p in s.parts]
            out.append([[dask.delayed(piece, pure=True)(sp, t) for sp in splits]
                        for t in range(r)])
        return out
    method = "tasks" if job.options.shuffle_method == "auto" else job.options.shuffle_method
    for s in sources:
        ddf = dd.from_delayed(s.parts, meta=s.meta, verify_meta=False)
        routed = ddf.map_partitions(route_partition, plan_f, meta=routed_meta(s.meta),
                                    align_dataframes=False)
        parts = routed.set_index(TASK, divisions=list(range(r + 1)),
                                 shuffle_method=method).to_delayed()
        out.append([[parts[t]] for t in range(r)])
    return out


def prepare_execution(client: Executor, job: Job, plan: Plan, sources: Sequence[Source],
                      id_dtypes: tuple[object, object]) -> Execution:
    """Hand the plan to the cluster once and build the routing graph."""
    [plan_f] = hold(client, [plan])
    r = plan.n_tasks
    meta = tuple(routed_meta(s.meta) for s in sources)
    spec = TaskSpec(comparisons=job.comparisons, col_index=job.col_index(),
                    n_passes=len(job.keys), threshold=job.threshold, id_dtypes=id_dtypes,
                    cell_budget=job.options.cell_budget, sort=job.options.sort, link=job.link,
                    meta=(meta[0], meta[1] if len(meta) > 1 else None),
                    encode=job.options.encode,
                    windows=tuple(window_of(k) for k in job.keys),
                    pass_of_pair=job.candidates)
    [spec_f] = hold(client, [spec])
    return Execution(plan, plan_f, route(job, plan_f, sources, r), spec, spec_f)


def count_invalid(client: Executor, job: Job, sources: Sequence[Source]) -> Any:
    """Start counting ``invalid_<comparison>``: present values its method could not
    compare (for the methods that can refuse values, e.g. ``date``), on the workers,
    beside the compare tasks; :func:`invalid_totals` collects the counts."""
    checked = {c.name: (job.value_column_of(c), c) for c in job.comparisons
               if type(c.kernel).invalid is not Method.invalid}
    if not checked:
        return []
    srcs = [s.src for s in sources for _ in s.parts]
    return list(zip(srcs, client.compute([dask.delayed(invalid_counts)(p, checked)
                                          for s in sources for p in s.parts])))


def invalid_totals(client: Executor, futures: Any, job: Job
                   ) -> tuple[dict[str, int], dict[str, str]]:
    """The counts :func:`count_invalid` started, summed over partitions
    (``invalid_<comparison>``), and what is said of each comparison that, in one input,
    cannot compare at least ``INVALID_SHARE`` of its present values (a date format the
    defaults do not read turns that evidence off) or reads some values two ways (see
    ``Method.misread``). Said as warnings, and kept for the run report."""
    srcs = [src for src, _ in futures]
    per_part = client.gather([f for _, f in futures]) if futures else []
    names = per_part[0].keys() if per_part else ()
    totals, said = {}, {}
    for n in names:
        comp = next(c for c in job.comparisons if c.name == n)
        totals[f"invalid_{n}"] = int(sum(c[n][0] for c in per_part))
        lines = []
        for src in sorted(set(srcs)):
            mine = [c[n] for s, c in zip(srcs, per_part) if s == src]
            lines += _unreadable(comp, job, src, mine)
        if lines:
            said[n] = "; ".join(lines)
            for line in lines:
                warnings.warn(line, UserWarning, stacklevel=2)
    return totals, said


def _unreadable(comp: Any, job: Job, src: int, parts: list[Any]) -> list[str]:
    """What is said of ``comp``'s values in input ``src`` (its partitions' counts)."""
    bad, present = sum(p[0] for p in parts), sum(p[1] for p in parts)
    column = comp.right_column if src == 1 and comp.right_column else comp.column
    where = f"{column!r}" + ("" if job.mode == "dedupe" else f" in {('df_r', 'df_s')[src]}")
    right = ("" if comp.right_column in (None, comp.column)
             else f", right_column={comp.right_column!r}")
    out = []
    if present and bad >= INVALID_SHARE * present:
        shown = list(dict.fromkeys(v for p in parts for v in p[2]))[:3]
        advice = comp.kernel.invalid_advice.format(column=comp.column, right=right)
        out.append(f"compare {comp.name!r}: {bad:,} of the {present:,} present values of "
                   f"{where} ({bad / present:.0%}) cannot be read by {comp.kernel.name} "
                   f"(e.g. {', '.join(map(repr, shown))}) and count as missing"
                   f"{'; ' + advice if advice else ''}")
    readings: dict[str, list[Any]] = {}
    for p in parts:
        for option, n_other, n_either, n_default, other, either in p[3]:
            got = readings.setdefault(option, [0, 0, 0, [], []])
            got[0], got[1], got[2] = got[0] + n_other, got[1] + n_either, got[2] + n_default
            got[3] += other
            got[4] += either
    for option, (n_other, n_either, n_default, other, either) in readings.items():
        # the other order read more than a few typos: the column is written so
        if n_other and n_either and n_other > n_default:
            keys = "".join(f"; the key {k.kind}({column!r}) read them so too (its blocks "
                           f"miss them): give date({column!r}, {k.part!r}, format={option!r})"
                           for k in unformatted_date_keys(job.keys, column)[:1])
            out.append(f"compare {comp.name!r}: {where}: " + comp.kernel.misread_advice.format(
                option=option, n_other=n_other, n_either=n_either, column=comp.column,
                right=right,
                shown_other=", ".join(map(repr, list(dict.fromkeys(other))[:2])),
                shown_either=", ".join(map(repr, list(dict.fromkeys(either))[:2]))) + keys)
    return out


def _gather(client: Executor, futures: list[Any], out_dir: str | None) -> Any:
    try:
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)  # stop what still runs before removing its directory
        if out_dir is not None:
            remove_tree(out_dir)
        raise


def run_mean(client: Executor, job: Job, ex: Execution, out_dir: str | None) -> Results:
    """Mean scoring in one phase: compare (threshold in the kernels), return or write."""
    if out_dir is not None and not job.options.sort:  # written as they gather
        futures = client.compute(ex.reduce_tasks(stream_reduce, out_dir),
                                 optimize_graph=False)
        if job.options.progress:
            show_progress(futures, "compare and write")
        return list(_gather(client, futures, out_dir))
    compared = ex.reduce_tasks(compare_reduce)
    tasks = compared
    if out_dir is not None:
        # a finished (sorted) compare is written before any other compare starts, so a
        # worker holds at most one unwritten result per thread
        with dask.annotate(priority=int(ex.plan.loads.max()) + 1):
            tasks = [dask.delayed(write_reduce, pure=False)(c, out_dir) for c in compared]
    both = job.options.progress and out_dir is not None
    futures = client.compute(compared + tasks if both else tasks, optimize_graph=False)
    if job.options.progress:
        # compare futures are released as they finish: their pairs stay on the workers
        # only until written
        show_progress(futures[: ex.r], "compare", release=both)
        if both:
            show_progress(futures[ex.r:], "write")
    return list(_gather(client, futures[-ex.r:], out_dir))


def run_fitted(client: Executor, job: Job, ex: Execution, model: ScoringModel,
               threshold: float | None, out_dir: str | None) -> Results:
    """A fitted model in one phase: compare, score, threshold, return or write."""
    [model_f] = hold(client, [model])
    tasks = ex.reduce_tasks(model_reduce, model_f, threshold, out_dir)
    futures = client.compute(tasks, optimize_graph=False)
    if job.options.progress:
        show_progress(futures, "compare")
    return list(_gather(client, futures, out_dir))


def _sample_fractions(job: Job, records: dict[str, int], pairs: int) -> list[float]:
    """Record-sample fraction per source so that the sample gives about ``pairs`` pairs."""
    if job.link:
        nr, ns = max(records.get("records_r", 0), 1), max(records.get("records_s", 0), 1)
        f = min(1.0, float(np.sqrt(pairs / (nr * ns))))
        return [f, f]
    n = max(records.get("records_r", 0), 2)
    target = (1.0 + np.sqrt(1.0 + 8.0 * pairs)) / 2.0  # n(n-1)/2 = pairs
    return [min(1.0, float(target / n))]


def _random_pair_futures(client: Executor, job: Job, sources: Sequence[Source],
                         records: dict[str, int], model_d: Any, pairs: int, seed: int
                         ) -> list[Any]:
    """Futures of tasks summarising ``pairs`` random record pairs with the model (row
    ranges of a deterministic record sample, prepared once, compared in full)."""
    vcols = [job.value_column_of(c) for c in job.comparisons]
    samples = []
    for s, f in zip(sources, _sample_fractions(job, records, pairs)):
        parts = [dask.delayed(sample_records)(p, f, seed) for p in s.parts]
        sample = dask.delayed(pd.concat)(parts, ignore_index=True)
        samples.append(dask.delayed(prepare_sample)(sample, job.comparisons, vcols,
                                                    job.options.encode))
    samples = client.persist(samples)  # released with the last reference
    sizes = client.compute([dask.delayed(len)(s) for s in samples], sync=True)
    right = samples[1] if job.link else None
    slots = worker_slots(client)
    ranges = row_ranges(sizes[0], sizes[1] if job.link else None, 2 * max(1, len(slots)))
    windows = tuple(window_of(k) for k in job.keys)
    tasks = [dask.delayed(random_summaries)(samples[0], right, job.comparisons, model_d,
                                            job.options.cell_budget, rows, len(job.keys),
                                            windows, job.options.encode) for rows in ranges]
    # each task prefers a worker thread in turn (any worker may still take it): left to
    # locality, most of them queued where the sample was made (seen: 3 of 4 on one worker).
    # One worker (this process's executor among them) has nothing to place: one call
    if len(set(slots)) <= 1:
        return list(client.compute(tasks))
    return [client.compute(t, workers=[slots[i % len(slots)]], allow_other_workers=True)
            for i, t in enumerate(tasks)]


def _nbytes(summary: Any) -> int:
    """Bytes of one task's phase-1 summary (a histogram, a dict of them per pass, or a
    random-pair summary's tuple of level counts, pair count and histogram)."""
    if isinstance(summary, Mapping):
        return sum(_nbytes(v) for v in summary.values())
    if isinstance(summary, (tuple, list)):
        return sum(_nbytes(v) for v in summary)
    return int(getattr(summary, "nbytes", 0))


def run_two_phase(client: Executor, job: Job, ex: Execution, model: ScoringModel,
                  threshold: float | None, sources: Sequence[Source],
                  records: dict[str, int], out_dir: str | None,
                  fit_keys: Sequence[Any] | None = None) -> tuple[Results, dict[str, Any]]:
    """A model that fits during the run (see :mod:`erblock.matchers.scoring.base`):
    (1) every reduce task compares without a threshold and keeps its pairs on its worker;
    only the model's summary of them is gathered, while random pairs and value counts are
    computed beside; (2) the client fits, broadcasts the model and each kept task is scored
    where it is. ``fit_keys``: the key passes as the model learns them (``job.keys`` with
    what ready-made key columns were found to derive from). Returns the results and what
    the phases measured."""
    import time

    request = model.fit_request()
    assert request is not None  # as_scoring refuses models that cannot fit
    timing: dict[str, Any] = {}
    futures: list[Any] = []
    try:
        t0 = time.perf_counter()
        model_d = dask.delayed(model, name=f"erblock-model-{uuid.uuid4().hex}")
        kept = client.compute(ex.reduce_tasks(keep_reduce, model_d), optimize_graph=False)
        futures = list(kept)
        [unfitted_f] = hold(client, [model])
        futures.append(unfitted_f)
        summaries_f = client.map(summarize_kept, kept, model=unfitted_f, pure=False)
        futures += summaries_f
        random_f = _random_pair_futures(
            client, job, sources, records, model_d, request.random_pairs, request.seed
        ) if request.random_pairs else []
        futures += random_f
        names = list(request.value_counts)
        counts_f = {}
        for name in names:
            comp = next(c for c in job.comparisons if c.name == name)
            col = job.value_column_of(comp)
            counts_f[name] = client.compute(
                [dask.delayed(value_counts)(p, col, comp) for s in sources for p in s.parts])
            futures += counts_f[name]
        if job.options.progress:
            show_progress(kept, "compare")
        summaries = client.gather(summaries_f)
        random = [x for part in client.gather(random_f) for x in part]
        counts = {}
        for name, fs in counts_f.items():
            parts = [c for c in client.gather(fs) if len(c)]
            merged = pd.concat(parts) if parts else pd.Series([], dtype=np.int64)
            counts[name] = merged.groupby(level=0, sort=False).sum() if len(merged) else merged
        timing["phase1"] = time.perf_counter() - t0

        t1 = time.perf_counter()
        context = FitContext(link=job.link, keys=tuple(fit_keys or job.keys),
                             run_keys=tuple(job.keys), records=dict(records),
                             random_pairs=request.random_pairs)
        model.fit_summaries(summaries, random, counts, context)
        timing["fit"] = time.perf_counter() - t1
        timing["summary_bytes"] = int(sum(_nbytes(s) for s in summaries))
        timing["random_summary_bytes"] = int(sum(_nbytes(s) for s in random))

        t2 = time.perf_counter()
        [model_f] = hold(client, [model])
        futures.append(model_f)
        scored = client.map(score_reduce, kept, model=model_f, spec=ex.shipped_spec,
                            threshold=threshold, out_dir=out_dir, pure=False)
        futures += scored
        results = list(client.gather(scored))
        timing["score"] = time.perf_counter() - t2
        return results, timing
    except BaseException:
        client.cancel(futures)
        if out_dir is not None:
            remove_tree(out_dir)
        raise
    finally:
        client.cancel(futures)  # frees the kept pairs on the workers
