"""Calibrate the cost model on the cluster that will run the job.

A small calibration job (records taken from the job's own input, put into blocks of
known, skewed sizes, and compared with the job's own comparisons) runs on the cluster with
the Basic strategy. A first, small run (it also warms the workers up) measures how fast the
comparisons are; the job is then grown until comparing takes about
:data:`TARGET_TASK_SECONDS` (a per-comparison cost is only measurable when comparisons,
not overheads, fill the tasks) or reaches :data:`MAX_SCALE` (the first step assumes
seconds grow with the comparisons, the square of the scale, later ones that they grow
only with the scale: encoded comparisons of repeating values cost less per pair in a
bigger block) and run with as many reduce tasks as worker threads and
with eight times as many; two last runs route twice the records in small blocks (many
records, few comparisons), which separates the per-record cost from the per-comparison
one: blocks of :data:`RECORD_BLOCK` (their comparisons are the small match tasks' ones,
compared as aligned pairs and priced apart) and pairs (records nearly alone: with only
the former, the per-record cost absorbed the aligned pairs' and came out several times
what routing a record costs). :meth:`CostModel.fit` turns what the runs measured (per
task seconds, comparisons and those in small match tasks, records, match tasks, and the
wall time of route+compare) into per-comparison (in a matrix, and in small match
tasks), per-record, per-match-task and per-reduce-task costs.

The model keeps what the runs measured (:attr:`CostModel.measurements`, in the run
report). It is cached for the session per (scheduler address, worker threads,
comparisons, threshold), so a session pays for calibration once, and only for a job big
enough to be worth it (:func:`worth_calibrating`: calibrating takes 1-3 s, a small job is
planned with a model measured earlier in the session or the default one). A user can
pass their own model instead (``cost_model=CostModel(...)``, a dict, or a previous
:class:`~erblock.report.RunReport`), or ``cost_model="default"`` to skip calibration.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import dask
import numpy as np
import pandas as pd

from ..balancing.cost import CostModel
from ..balancing.strategies import get_strategy
from ..blocking.keys import Column
from ..report import RunReport
from .execute import prepare_execution, run_mean
from .inputs import Source, prepare_source
from .job import COST_MODEL_CHOICES, Job, RunOptions
from .local import Executor, LocalClient
from .output import remove_tree
from .profile import profile_bdm
from .schema import RID, value_column

#: Block sizes of the calibration job at scale 1: skewed (so tasks differ in comparisons
#: per record) plus many blocks of 3 (so tasks differ in match tasks). About 3,000 records
#: and 0.8 M comparisons; the skewed blocks grow with the scale.
CALIBRATION_BLOCKS = (1000, 600, 360, 216, 130, 78, 47, 28, 17, 10, 6, 4, 2)
SMALL_BLOCKS = 160  #: blocks of 3 records
#: in-task seconds (all tasks together) the scaled calibration run aims at
TARGET_TASK_SECONDS = 0.6
MAX_SCALE = 8.0  #: at most 64 times the comparisons of scale 1 (about 50 M)
RECORD_BLOCK = 40  #: block size of the record-heavy run (many records, few comparisons)
PAIR_BLOCK = 2  #: block size of the records-only run

_lock = threading.Lock()
_cache: dict[tuple[str, int, str], CostModel] = {}


def _signature(job: Job) -> str:
    """What the per-comparison cost depends on: the comparisons, how many pairs are kept
    (the threshold) and where they go (returned to the client or written by workers)."""
    return json.dumps({"comparisons": [c.to_dict() for c in job.comparisons],
                       "threshold": job.threshold, "written": job.output is not None},
                      sort_keys=True, default=str)


def _address(client: Executor) -> str:
    if isinstance(client, LocalClient):
        return "local"  # this process: its threads, whichever LocalClient runs them
    try:
        return str(client.scheduler.address)
    except AttributeError:  # pragma: no cover - a client without a scheduler connection
        return "unknown"


#: calibrate only for jobs whose comparisons alone would take this long under the default
#: model (calibrating takes about 1-2 s; 2-3 s when encoded comparisons need more growth
#: steps)
CALIBRATE_ABOVE_SECONDS = 2.0


def worth_calibrating(total_comparisons: float, threads: int) -> bool:
    """Whether a job is big enough for ``auto`` to calibrate before choosing."""
    ideal = total_comparisons * CostModel().per_comparison / max(1, threads)
    return ideal >= CALIBRATE_ABOVE_SECONDS


def _is_report_dict(value: Any) -> bool:
    return isinstance(value, Mapping) and "tasks" in value and "phases" in value


def as_cost_model(value: Any, threads: int | None = None) -> str | CostModel | None:
    """The ``cost_model`` option as the job holds it: None, ``"calibrate"``,
    ``"default"`` or a :class:`CostModel` (a dict of its fields, or a previous run's
    :class:`~erblock.report.RunReport` or its dict, are fitted into one)."""
    if value is None or isinstance(value, CostModel):
        return value
    if isinstance(value, str) and value in COST_MODEL_CHOICES:
        return value
    if isinstance(value, RunReport):
        return CostModel.from_report(value, threads)
    if _is_report_dict(value):  # a report read back from JSON (``--report run.json``)
        return CostModel.from_report(RunReport.from_dict(dict(value)), threads)
    if isinstance(value, Mapping):
        return CostModel.from_dict(value)
    raise ValueError(
        "cost_model must be None (calibrate when strategy='auto'), 'calibrate', 'default', "
        f"a CostModel, a dict of its fields or a previous RunReport; got {value!r}"
    )


def resolve_cost_model(client: Executor, job: Job, sources: Sequence[Source],
                       threads: int, need: bool) -> tuple[CostModel, float]:
    """The cost model for ``job`` and the seconds spent calibrating (0 when cached/given).

    ``need`` says whether the caller's decision depends on the model (``auto``): only then
    does an uncached session calibrate; otherwise a cached model of this cluster or the
    default serves for the reported prediction.
    """
    spec = job.options.cost_model
    if isinstance(spec, CostModel):
        return spec, 0.0
    if spec == "default":
        return CostModel(), 0.0
    key = (_address(client), threads, _signature(job))
    with _lock:
        cached = _cache.get(key)
    if cached is not None and spec != "calibrate":
        return cached, 0.0
    if spec == "calibrate" and not job.comparisons:
        raise ValueError("cost_model='calibrate' measures the job's comparisons; pass "
                         "compare= too (erblock.plan), or cost_model='default'")
    if spec == "calibrate" or (need and job.comparisons):
        start = time.perf_counter()
        model = calibrate(client, job, sources, threads)
        with _lock:
            _cache[key] = model
        return model, time.perf_counter() - start
    with _lock:  # any model measured on this cluster beats the default
        same_cluster = [m for (addr, t, _), m in _cache.items()
                        if addr == key[0] and t == threads]
    return (same_cluster[-1] if same_cluster else CostModel()), 0.0


def cached_models() -> dict[tuple[str, int, str], CostModel]:
    """The models calibrated in this session (a copy)."""
    with _lock:
        return dict(_cache)


def clear_cache() -> None:
    """Forget calibrated models (the next ``auto`` run calibrates again)."""
    with _lock:
        _cache.clear()


def _head_records(n: int, *parts: pd.DataFrame) -> pd.DataFrame:
    """The first ``n`` records (one row each) of prepared partitions."""
    return pd.concat(parts, ignore_index=True).drop_duplicates(RID).head(n)


def _sample_values(client: Executor, job: Job, sources: Sequence[Source], n: int
                   ) -> pd.DataFrame:
    """Up to ``n`` records of the job's compared columns (left-side names), from the
    first partitions of the first source."""
    rows = client.compute(dask.delayed(_head_records)(n, *sources[0].parts[:4]), sync=True)
    data = {}
    for column, i in job.col_index().items():
        data[column] = rows[value_column(i)].to_numpy()
    frame = pd.DataFrame(data)
    for column, i in job.col_index().items():
        frame[column] = frame[column].astype(rows[value_column(i)].dtype)
    return frame


def calibration_frame(values: pd.DataFrame, scale: float = 1.0, seed: int = 0,
                      sizes: np.ndarray | None = None) -> pd.DataFrame:
    """Records drawn from ``values`` (with replacement when there are too few) with a
    block key column ``erb_cal_key``: the blocks ``sizes``, by default
    :data:`CALIBRATION_BLOCKS` times ``scale`` and :data:`SMALL_BLOCKS` blocks of 3."""
    if sizes is None:
        sizes = np.r_[np.maximum(np.rint(np.asarray(CALIBRATION_BLOCKS) * scale), 2),
                      np.full(SMALL_BLOCKS, 3)]
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    rng = np.random.default_rng(seed)
    pick = rng.permutation(len(values))[:n] if len(values) >= n else rng.integers(
        0, len(values), n)
    frame = values.iloc[pick].reset_index(drop=True)
    frame["erb_cal_key"] = np.repeat(np.arange(len(sizes)), sizes).astype(str)
    return frame


def _measure(client: Executor, job: Job, frame: pd.DataFrame, r: int, threads: int,
             scale: float | None = None) -> dict[str, Any]:
    """One calibration run with ``r`` reduce tasks: what :meth:`CostModel.fit` needs
    (and the ``scale`` of its skewed blocks; None for the record-heavy run).

    The calibration job is a dedupe of ``frame`` blocked on its ``erb_cal_key`` column with
    the job's comparisons and threshold, planned with Basic and run like the job (its
    pairs written like the job's, next to its output directory, then removed).
    """
    out = None if job.output is None else os.path.join(
        os.path.dirname(os.path.abspath(job.output)),
        f".erblock-calibration-{uuid.uuid4().hex[:12]}")
    cal = Job(mode="dedupe", keys=(Column("erb_cal_key"),), comparisons=job.comparisons,
              threshold=job.threshold, output=out, strategy="basic", n_tasks=r,
              options=RunOptions(npartitions=threads,
                                 shuffle_method=job.options.shuffle_method,
                                 cell_budget=job.options.cell_budget, cost_model="default"))
    try:
        if out is not None:
            os.makedirs(out)
        source = prepare_source(client, frame, cal, 0, threads, persist=True)
        profile = profile_bdm(client, cal, [source], [False])
        plan = get_strategy("basic").make(profile.data, r)
        start = time.perf_counter()
        ex = prepare_execution(client, cal, plan, [source], (frame.index.dtype,) * 2)
        results = run_mean(client, cal, ex, out)
        wall = time.perf_counter() - start
    finally:
        if out is not None:
            remove_tree(out)
    tasks = sorted((stats for _, stats in results), key=lambda t: t.task)
    return {
        "comparisons": [t.comparisons for t in tasks],
        "records": [t.records for t in tasks],
        "match_tasks": [t.match_tasks for t in tasks],
        "small_comparisons": [t.small_comparisons for t in tasks],
        "seconds": [t.seconds + t.write_seconds for t in tasks],
        "wall": wall,
        "scale": scale,
    }


def calibrate(client: Executor, job: Job, sources: Sequence[Source], threads: int
              ) -> CostModel:
    """Run the calibration job on ``client`` (module doc) and fit a :class:`CostModel`."""
    values = _sample_values(client, job, sources, 4000)
    if len(values) == 0:
        return CostModel(source="default (no records to calibrate with)")
    frame = calibration_frame(values)
    probe = _measure(client, job, frame, threads, threads, 1.0)  # also warms workers up
    busy = float(np.sum(probe["seconds"]))
    # comparisons grow with the square of the scale; when seconds grow slower (an encoded
    # comparison costs less per pair in a bigger block: its distinct values repeat), the
    # next steps assume they grow only linearly. Each of those at least doubles the scale
    # (busy < half the target), so at most log2(MAX_SCALE) of them run.
    scale = max(1.0, min(MAX_SCALE, float(np.sqrt(TARGET_TASK_SECONDS / max(busy, 1e-3)))))
    while True:
        frame = calibration_frame(values, scale)
        first = _measure(client, job, frame, threads, threads, scale)
        busy = float(np.sum(first["seconds"]))
        if busy >= TARGET_TASK_SECONDS / 2 or scale >= MAX_SCALE:
            break
        scale = min(MAX_SCALE, scale * TARGET_TASK_SECONDS / max(busy, 1e-3))
    runs = [first, _measure(client, job, frame, 8 * threads, threads, scale)]
    # many records, few comparisons: tells the per-record cost from the per-comparison
    # one (in the skewed job, records and comparisons grow together)
    records = 2 * len(frame)
    for size in (RECORD_BLOCK, PAIR_BLOCK):
        heavy = calibration_frame(values, sizes=np.full(max(1, records // size), size))
        runs.append(_measure(client, job, heavy, threads, threads))
    return CostModel.fit(runs, threads, source=f"calibrated on {_address(client)}")
