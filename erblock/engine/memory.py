"""Memory model of a run, and sizing a plan to a per-task memory budget.

What a reduce task holds while it compares (``docs/memory.md`` has the full model):

* its **records**: the routed rows it received (``R_t`` records of ``b`` bytes each as
  measured on a prepared partition), a sorted copy and the prepared kernel values, about
  ``RECORD_COPIES × R_t × b``;
* one **chunk** of similarity matrices: ``cell_budget`` cells, each a float32 per
  comparison plus masks, score and temporaries (:func:`cell_bytes`);
* the **pairs it keeps**: ``K_t × pair_bytes`` (several copies while they are assembled
  and written, :data:`PAIR_COPIES`). Without a threshold every comparison is kept
  (``K_t`` = the task's load); with a threshold the kept share is measured before the run
  on a sample of candidate pairs (:mod:`.keeprate`; ``THRESHOLD_KEEP`` when it is not
  measured); a task that streams its pairs to parquet (``output=``) holds one row group.

:func:`fit_to_budget` makes a plan fit: it shrinks the chunk to a quarter of the budget
and raises the number of reduce tasks (strategies that split blocks then cut smaller
sub-blocks) until the largest task's estimate fits, or fails up front with what would fit.
The planning itself stays pure: this module only evaluates plans.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import psutil
from dask.utils import format_bytes, parse_bytes

from ..balancing.cost import CostModel
from ..balancing.plan import Plan
from ..balancing.strategies import AUTO, STRATEGIES
from .inputs import Source
from .job import Job
from .keeprate import KeepRate
from .keeprate import measure as measure_keep
from .planning import plan_from
from .profile import Profile
from .tasks.write import stream_rows

RECORD_COPIES = 3.0  #: routed frame + sorted copy + prepared kernel values
THRESHOLD_KEEP = 0.01  #: share of comparisons assumed kept when a threshold is given
CHUNK_SHARE = 0.25  #: at most this share of the budget goes to one chunk of matrices
MAX_TASKS = 1 << 14  #: never plan more reduce tasks than this to fit a budget
MIN_CELLS = 1 << 12  #: smallest chunk (cells) worth a kernel call
MAX_ATTEMPTS = 6  #: re-plans with more tasks before giving up


def parse_budget(value: Any) -> int | str | None:
    """``None``, ``"auto"``, a number of bytes or a string such as ``"2GB"`` / ``"512MiB"``."""
    if value is None or value == "auto":
        return value
    if isinstance(value, bool):
        raise ValueError(f"memory_budget must be bytes (e.g. '2GB'), 'auto' or None, got {value!r}")
    if isinstance(value, str):
        try:
            value = parse_bytes(value)
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"memory_budget: cannot read {value!r} as a size; use e.g. '2GB', '512MiB' "
                "or a number of bytes"
            ) from exc
    if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value) \
            or value < (1 << 20):
        raise ValueError(
            f"memory_budget must be at least 1 MiB per reduce task (e.g. '2GB'), got {value!r}"
        )
    return int(value)


def auto_budget(workers: dict[str, dict[str, Any]]) -> int | None:
    """Per-task budget from the workers' ``memory_limit``: half of the smallest worker's
    limit per thread (Dask starts spilling at 60 %); None when workers have no limit."""
    per_thread = [w["memory_limit"] / max(1, w.get("nthreads", 1))
                  for w in workers.values() if w.get("memory_limit")]
    return int(min(per_thread) * 0.5) if per_thread else None


def cell_bytes(n_comparisons: int) -> int:
    """Bytes per cell of a compare chunk: a float32 matrix per comparison, the score,
    the kept-pair mask, the structure masks and the temporaries of the weighted mean; plus,
    per comparison, the distinct-pair similarities of an encoded block (at most the
    chunk's cells of float32, :mod:`erblock.engine.tasks.encoded`)."""
    return 8 * n_comparisons + 20


PAIR_COPIES = 4.0  #: chunk pieces + concatenated arrays + result frame + Arrow/parquet copy


def pair_bytes(n_comparisons: int) -> int:
    """Bytes of one kept pair at the task's peak: ids, similarities and score as 8-byte
    values, ``PAIR_COPIES`` times (measured: the pieces, their concatenation, the result
    frame and, with ``output=``, the Arrow table written to parquet)."""
    return int(PAIR_COPIES * (16 + 8 * (n_comparisons + 1)))


@dataclass
class MemoryEstimate:
    """Estimated peak bytes of every reduce task, and its parts."""

    records: np.ndarray
    chunk: int
    pairs: np.ndarray

    @property
    def per_task(self) -> np.ndarray:
        return self.records + self.chunk + self.pairs

    @property
    def peak(self) -> int:
        return int(self.per_task.max()) if len(self.per_task) else self.chunk

    def worst(self) -> int:
        return int(np.argmax(self.per_task)) if len(self.per_task) else 0


def estimate(plan: Plan, bytes_per_record: float, n_comparisons: int, threshold: float | None,
             cell_budget: int, streamed: bool = False, keep: float | None = None
             ) -> MemoryEstimate:
    """What each reduce task of ``plan`` is expected to hold at its peak. ``streamed``: the
    task writes its kept pairs in row groups as they gather (mean scoring with
    ``output=``), so it holds at most one group of them whatever the keep rate. ``keep``:
    the share of comparisons a threshold keeps, as measured (default ``THRESHOLD_KEEP``)."""
    records = (plan.records_per_task() * bytes_per_record * RECORD_COPIES).astype(np.int64)
    if threshold is None:
        keep = 1.0
    elif keep is None:
        keep = THRESHOLD_KEEP
    kept = plan.loads * keep
    if streamed:  # a row group gathering and at most one chunk's pairs on top
        kept = np.minimum(plan.loads, 2 * stream_rows(cell_budget))
    pairs = (kept * pair_bytes(n_comparisons)).astype(np.int64)
    return MemoryEstimate(records, int(cell_budget * cell_bytes(n_comparisons)), pairs)


def chunk_cells(budget: int, n_comparisons: int, cell_budget: int) -> int:
    """The chunk size (cells) to use under ``budget``: at most ``CHUNK_SHARE`` of it."""
    fit = int(budget * CHUNK_SHARE) // cell_bytes(n_comparisons)
    return max(MIN_CELLS, min(cell_budget, fit))


def fmt_bytes(n: float) -> str:
    return format_bytes(int(n))


def tasks_to_fit(est: MemoryEstimate, budget: int, r: int) -> int:
    """How many reduce tasks would bring the largest task's estimate under ``budget``,
    assuming the variable part shrinks in proportion to 1/r (at least doubling)."""
    variable = est.peak - est.chunk
    room = max(budget - est.chunk, 1)
    return int(min(MAX_TASKS, max(2 * r, math.ceil(r * variable / room * 1.1))))


def too_big_message(est: MemoryEstimate, budget: int, plan: Plan, threshold: float | None,
                    output: str | None) -> str:
    t = est.worst()
    hints = []
    if threshold is None:
        hints.append("a threshold (only pairs above it are kept)")
    splitting = [n for n, s in STRATEGIES.items() if s.splits_blocks]
    if plan.strategy in STRATEGIES and not STRATEGIES[plan.strategy].splits_blocks:
        hints.append(f"strategy='auto' or one of {splitting} ({plan.strategy} cannot split "
                     "a block)")
    hints.append("a larger memory_budget (and workers with more memory per thread)")
    return (
        f"memory_budget: reduce task {t} would need about {fmt_bytes(est.per_task[t])} "
        f"(records {fmt_bytes(est.records[t])}, matrices {fmt_bytes(est.chunk)}, pairs "
        f"{fmt_bytes(est.pairs[t])}) with {plan.n_tasks} tasks and strategy "
        f"{plan.strategy!r}, more than the budget of {fmt_bytes(budget)} per task; try "
        + ", or ".join(hints)
        + ("" if output else "; output='dir' keeps the pairs on disk instead of in memory")
    )


def _bytes_and_rows(part: Any) -> tuple[int, int]:
    return int(part.memory_usage(deep=True, index=True).sum()), len(part)


def measure_record_bytes(client: Any, sources: Sequence[Source]) -> float:
    """Bytes per prepared record, measured on the first partition of every source."""
    probes = [dask.delayed(_bytes_and_rows)(s.parts[0]) for s in sources]
    sizes = client.compute(probes, sync=True)
    nbytes, rows = sum(s[0] for s in sizes), sum(s[1] for s in sizes)
    return nbytes / rows if rows else 256.0


def resolve_budget(client: Any, value: Any) -> int | None:
    """The per-task budget in bytes (``"auto"`` reads the workers' memory limits)."""
    value = parse_budget(value)
    if value == "auto":
        try:
            info = client.scheduler_info(n_workers=-1)
        except TypeError:  # older distributed
            info = client.scheduler_info()
        return auto_budget(info.get("workers", {}))
    return value  # type: ignore[return-value]


def check_result_fits(plan: Plan, n_comparisons: int, threshold: float | None,
                      output: str | None, keep: KeepRate | None = None) -> None:
    """Refuse up front a run whose kept pairs could not fit in this process: all of them
    without a threshold, the measured share (its upper bound) with one."""
    if output is not None or plan.total_comparisons == 0:
        return
    if threshold is not None and keep is None:
        return
    share = 1.0 if threshold is None else keep.upper  # type: ignore[union-attr]
    need = plan.total_comparisons * share * pair_bytes(n_comparisons)
    available = psutil.virtual_memory().available
    if need <= 0.5 * available:
        return
    if threshold is None:
        raise MemoryError(
            f"the result would hold all {plan.total_comparisons:,} compared pairs, about "
            f"{fmt_bytes(need)}, in this process ({fmt_bytes(available)} available); pass "
            "output='dir' so the workers write parquet parts, or a threshold"
        )
    raise MemoryError(
        f"threshold={threshold} keeps about {keep.rate:.1%} of the "  # type: ignore[union-attr]
        f"{plan.total_comparisons:,} compared pairs (measured on {keep.pairs:,} sampled "  # type: ignore[union-attr]
        f"candidate pairs): about {fmt_bytes(need)} of pairs in this process "
        f"({fmt_bytes(available)} available); pass output='dir' so the workers write "
        "parquet parts, or a higher threshold"
    )


def fit_plan(client: Any, job: Job, sources: Sequence[Source], profile: Profile,
             threads: int, r: int, plan: Plan, model: CostModel, streamed: bool = False
             ) -> tuple[Plan, Job, dict[str, Any] | None]:
    """Make ``plan`` fit ``job.options.memory_budget`` (see module docstring): re-plan from
    ``profile`` with more reduce tasks until the largest task fits. Returns the plan, the
    job with its chunk size set, and what the fit decided (None without a budget)."""
    n_comp = len(job.comparisons)
    budget = resolve_budget(client, job.options.memory_budget)
    fit: dict[str, Any] | None = None
    keep = _measured_keep(client, job, sources, profile, plan, n_comp, budget, streamed)
    rate = keep.upper if keep is not None else None
    if budget is not None and plan.total_comparisons > 0:
        per_record = measure_record_bytes(client, sources)
        job = job.replace(cell_budget=chunk_cells(budget, n_comp, job.options.cell_budget))
        cells = job.options.cell_budget
        est = estimate(plan, per_record, n_comp, job.threshold, cells, streamed, rate)
        best = (est, plan)
        attempts = 0
        while est.peak > budget:
            new_r = tasks_to_fit(est, budget, r)
            # the user fixed n_tasks, or more tasks stopped helping (an unsplittable block)
            if job.n_tasks is not None or new_r <= r or attempts >= MAX_ATTEMPTS:
                msg = too_big_message(best[0], budget, best[1], job.threshold, job.output)
                if job.n_tasks is not None:
                    msg += f"; or leave n_tasks unset (it is {job.n_tasks}) so it can grow"
                raise MemoryError(msg)
            # "auto" may weigh task overhead above memory: also try the strategies that
            # split blocks and keep the plan with the smallest peak
            options = []
            for cand in _candidates(job, profile):
                p = plan_from(profile, cand, new_r, model, threads)
                options.append((estimate(p, per_record, n_comp, job.threshold, cells,
                                         streamed, rate), p))
            (est, plan), r = min(options, key=lambda o: o[0].peak), new_r
            if est.peak < best[0].peak:
                best = (est, plan)
            attempts += 1
        fit = {"memory_budget": budget, "memory_peak_estimate": est.peak,
               "bytes_per_record": round(per_record, 1), "cell_budget": cells,
               "n_tasks": plan.n_tasks}
    if keep is not None:
        fit = {**(fit or {}), **keep.to_dict()}
    check_result_fits(plan, n_comp, job.threshold, job.output, keep)
    return plan, job, fit


#: measure the keep rate when keeping every compared pair would take more than this
MEASURE_KEEP_ABOVE = 64 << 20


def _measured_keep(client: Any, job: Job, sources: Sequence[Source], profile: Profile,
                   plan: Plan, n_comp: int, budget: int | None, streamed: bool
                   ) -> KeepRate | None:
    """The threshold's keep rate, measured when it matters: the pairs are held (in this
    process, or by tasks under a budget) and keeping them all would be large."""
    if job.threshold is None or streamed or plan.total_comparisons == 0:
        return None
    if job.output is not None and budget is None:
        return None  # written whole by the workers, nothing to size
    if plan.total_comparisons * pair_bytes(n_comp) < MEASURE_KEEP_ABOVE:
        return None
    records = max(profile.records.get("records_r", 0), profile.records.get("records_s", 0))
    return measure_keep(client, job, sources, plan.total_comparisons, records)


def _candidates(job: Job, profile: Profile) -> list[Job]:
    """Jobs to re-plan with more tasks: the job itself, and under ``auto`` the registered
    strategies that split blocks and plan on this profile (so a memory fit never depends
    on the cost model's choice)."""
    if job.strategy != AUTO or profile.kind != "bdm":
        return [job]
    return [job] + [job.replace(strategy=name) for name, s in STRATEGIES.items()
                    if s.splits_blocks and s.profile == "bdm"]
