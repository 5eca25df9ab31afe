"""Reduce tasks: what one Dask task per reduce task runs (worker side).

A reduce task receives the routed rows of its records (pieces from every input
partition, or one shuffled partition), runs its match tasks (:mod:`.compare`), and then,
by the run's scoring, returns its pairs, writes them as a parquet part (:mod:`.write`), or
keeps them in worker memory for a model that fits during the run (:mod:`.score`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from ...balancing.plan import Plan
from ...matchers.scoring.base import ScoringModel
from ...report import TaskStats
from .compare import TaskCounter, compare_task
from .score import KeptTask, score_pairs
from .write import PartWriter, sort_pairs, stream_rows, write_part

Result = tuple[pd.DataFrame | None, TaskStats]


@dataclass(frozen=True)
class TaskSpec:
    """What every reduce task of a run needs besides its records (shipped once)."""

    comparisons: tuple[Any, ...]
    col_index: dict[str, int]
    n_passes: int
    threshold: float | None
    id_dtypes: tuple[object, object]
    cell_budget: int
    sort: bool
    link: bool
    meta: tuple[pd.DataFrame, pd.DataFrame | None]  # empty routed frames (no records)
    encode: str = "auto"  #: see erblock.engine.job.ENCODE_CHOICES
    windows: tuple[int, ...] = ()  #: window of each sorted-neighbourhood pass (else 0)
    pass_of_pair: bool = False  #: every pair carries the key pass that found it


def _worker() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return "local"


def _records(pieces: Sequence[pd.DataFrame | None], meta: pd.DataFrame) -> pd.DataFrame:
    frames = [p for p in pieces if p is not None and len(p)]
    if not frames:
        return meta
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _stats(c: TaskCounter, write_seconds: float = 0.0, pairs: int | None = None,
           extra_seconds: float = 0.0) -> TaskStats:
    return TaskStats(task=c.task, comparisons=c.comparisons,
                     pairs=c.pairs if pairs is None else pairs, records=c.records,
                     match_tasks=c.match_tasks, seconds=c.seconds + extra_seconds,
                     write_seconds=write_seconds, worker=_worker(), cells=c.cells,
                     small_comparisons=c.small_comparisons)


def _compare(task: int, plan: Plan, left: Sequence[Any], right: Sequence[Any] | None,
             spec: TaskSpec, threshold: float | None, model: ScoringModel | None,
             sink: PartWriter | None = None) -> tuple[pd.DataFrame, TaskCounter]:
    names = model.pair_values if model is not None else ()
    lrec = _records(left, spec.meta[0])
    right_meta = spec.meta[1] if spec.meta[1] is not None else spec.meta[0]
    rrec = _records(right, right_meta) if spec.link and right is not None else None
    return compare_task(task, plan, lrec, rrec, spec.comparisons, spec.col_index,
                        spec.n_passes, threshold, spec.id_dtypes, spec.cell_budget,
                        pair_values=[c for c in spec.comparisons if c.name in names],
                        pass_of_pair=spec.pass_of_pair or bool(model is not None
                                                               and model.needs_pass),
                        encode=spec.encode, sink=sink, windows=spec.windows)


def _finish(pairs: pd.DataFrame, stats: TaskStats, spec: TaskSpec, out_dir: str | None
            ) -> Result:
    if spec.sort and len(pairs):
        pairs = sort_pairs(pairs)
    if out_dir is None:
        return pairs, stats
    seconds = write_part(pairs, out_dir, stats.task)
    return None, replace(stats, write_seconds=seconds)


def reduce_call(func: Any, n_left: int, n_right: int, task: int, plan: Plan, spec: TaskSpec,
                *rest: Any) -> Any:
    """``func(task, plan, left, right, spec, *extra)`` with the pieces given flat:
    ``rest`` is the ``n_left`` left pieces, the ``n_right`` right ones (−1: no right side)
    and ``extra``. Dask builds a task from flat arguments ten times faster than from
    lists of pieces (which it wraps in tasks of their own), and a run builds one per
    reduce task on the client."""
    n_r = max(n_right, 0)
    left = list(rest[:n_left])
    right = None if n_right < 0 else list(rest[n_left:n_left + n_r])
    return func(task, plan, left, right, spec, *rest[n_left + n_r:])


def compare_reduce(task: int, plan: Plan, left: Sequence[Any], right: Sequence[Any] | None,
                   spec: TaskSpec) -> Result:
    """Mean scoring: compare with the threshold applied in the kernels; return the pairs."""
    pairs, c = _compare(task, plan, left, right, spec, spec.threshold, None)
    return _finish(pairs, _stats(c), spec, None)


def stream_reduce(task: int, plan: Plan, left: Sequence[Any], right: Sequence[Any] | None,
                  spec: TaskSpec, out_dir: str) -> Result:
    """Mean scoring with ``output=`` (unsorted): the compare writes its kept pairs to its
    parquet part in row groups as they gather, so memory is bounded whatever the keep
    rate."""
    sink = PartWriter(out_dir, task, stream_rows(spec.cell_budget))
    try:
        _, c = _compare(task, plan, left, right, spec, spec.threshold, None, sink)
        seconds = sink.close()
    except BaseException:
        sink.abort()
        raise
    return None, replace(_stats(c), write_seconds=seconds)


def write_reduce(result: Result, out_dir: str) -> Result:
    """Write one reduce task's pairs (from :func:`compare_reduce`) as its parquet part."""
    pairs, stats = result
    assert pairs is not None
    return None, replace(stats, write_seconds=write_part(pairs, out_dir, stats.task))


def model_reduce(task: int, plan: Plan, left: Sequence[Any], right: Sequence[Any] | None,
                 spec: TaskSpec, model: ScoringModel, threshold: float | None,
                 out_dir: str | None) -> Result:
    """A fitted model: compare, score, apply the threshold, return or write."""
    pairs, c = _compare(task, plan, left, right, spec, None, model)
    start = time.perf_counter()
    examples: list[dict[str, Any]] = []
    scored = score_pairs(pairs, model, threshold, examples)
    stats = _stats(c, pairs=len(scored), extra_seconds=time.perf_counter() - start)
    return _finish(scored, replace(stats, examples=tuple(examples)), spec, out_dir)


def keep_reduce(task: int, plan: Plan, left: Sequence[Any], right: Sequence[Any] | None,
                spec: TaskSpec, model: ScoringModel) -> KeptTask:
    """Phase 1 of a model that fits during the run: compare without a threshold and keep
    the pairs (with what the model asked for) in worker memory."""
    pairs, c = _compare(task, plan, left, right, spec, None, model)
    return KeptTask(pairs, _stats(c).to_dict())


def score_reduce(kept: KeptTask, model: ScoringModel, spec: TaskSpec, threshold: float | None,
                 out_dir: str | None) -> Result:
    """Phase 2: score the kept pairs with the fitted model, apply the threshold."""
    start = time.perf_counter()
    examples: list[dict[str, Any]] = []
    scored = score_pairs(kept.pairs, model, threshold, examples)
    stats = TaskStats.from_dict(kept.stats)
    stats = replace(stats, pairs=len(scored), examples=tuple(examples),
                    seconds=stats.seconds + time.perf_counter() - start)
    return _finish(scored, stats, spec, out_dir)
