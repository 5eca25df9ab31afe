"""Cost model of reduce tasks and its calibration (papers 002 and 000), pure numpy.

Comparisons alone do not say how long a reduce task runs: every task also pays a fixed
overhead (scheduling, its shuffle output, sorting its records), every record it receives
costs something (shipping, preparing the compared values), and every match task costs a
kernel call. Paper 002 (Gufler et al.) argues for a cost model of the *reducer* instead
of counting tuples; paper 000 (CSAW) shows the trade-off it creates: splitting a heavy key
into ``P`` pieces divides its work by ``P`` but adds ``P`` per-task overheads (and, for
ER, replicates records), so the best split degree minimises the predicted makespan
``max_ℓ W_ℓ / P_ℓ + c + (1/T) Σ_ℓ (W_ℓ + c P_ℓ)`` rather than the imbalance.

erblock's model of reduce task ``t``::

    seconds_t = overhead_per_task + per_comparison · (comparisons_t − small_t)
                + per_small_comparison · small_t
                + per_record · records_t + per_match_task · match_tasks_t

where ``small_t`` are the comparisons of its small match tasks (at most
:data:`~erblock.balancing.units.SMALL_CELLS` cells): the compare batches those as aligned
pairs, one value fetched per pair, which costs per pair many times what a block's
similarity matrix does (measured with four comparisons on historical_50k's names: about
1 µs a pair, against 0.01-0.2 µs in a block's matrix). With one rate for both, a
calibration charged the difference to the records (its record-heavy run is made of small
blocks), and ``auto`` then overcharged replicating the records of a split block.

The makespan on ``T`` worker threads is ``overhead_per_job`` (what the route+compare
phase costs whatever its size: building and submitting the graph, the shuffle's
latency) plus the list schedule of these costs, largest first (the engine gives Dask the
predicted load as task priority, so this is what the scheduler does): :func:`lpt_makespan`.
The model is calibrated from what the cluster measured (:meth:`CostModel.fit` on a
calibration job, :meth:`CostModel.from_report` on a previous run), never from assumed
hardware figures, except for the documented defaults used when nothing was measured.

``auto`` weighs candidate plans under this model: :mod:`erblock.balancing.auto`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..scalars import as_python, is_number
from .packing import lpt_makespan
from .plan import Plan


@dataclass(frozen=True)
class CostModel:
    """Seconds of a reduce task as a linear function of what it does (see module doc).

    The defaults are rounded from calibrations on a 2-core development machine (local
    cluster, Jaro-Winkler on 10-20 character names): 20 M comparisons/s per thread
    without a threshold (about 40 M/s with a 0.9 threshold, which lets the kernel stop
    early), tens of milliseconds per reduce task, a few microseconds per routed record,
    0.1-0.2 s per job. They only serve until a calibration (or a model passed in) gives
    measured ones; ``source`` says where a model's numbers come from.
    """

    overhead_per_task: float = 1e-2
    per_comparison: float = 5e-8
    per_record: float = 5e-6
    per_match_task: float = 3e-5
    overhead_per_job: float = 0.2
    #: seconds of a comparison in a small match task; None: ``per_comparison`` (a model
    #: given by hand, the default one, or one saved before this was measured)
    per_small_comparison: float | None = None
    source: str = "default"
    #: the runs a fitted model was fitted to (:meth:`fit`'s ``runs``, per-task arrays as
    #: lists), kept so that a report shows what calibration measured and a model can be
    #: refitted; not part of equality
    measurements: tuple[dict[str, Any], ...] = dataclasses.field(default=(), compare=False,
                                                                 repr=False)

    def __post_init__(self) -> None:
        rates = ["overhead_per_task", "per_comparison", "per_record", "per_match_task",
                 "overhead_per_job"]
        if self.per_small_comparison is not None:  # None: per_comparison's rate
            rates.append("per_small_comparison")
        for name in rates:
            value = getattr(self, name)
            if not is_number(value) or not math.isfinite(value) or value < 0:
                raise ValueError(
                    f"CostModel.{name} must be a finite number of seconds >= 0, got {value!r}"
                )
            object.__setattr__(self, name, as_python(value))  # NumPy's number as Python's

    def task_seconds(self, comparisons: np.ndarray, records: np.ndarray | float = 0,
                     match_tasks: np.ndarray | float = 0, small: np.ndarray | float = 0
                     ) -> np.ndarray:
        """Predicted seconds of reduce tasks with these comparisons (of which ``small`` in
        small match tasks), records and match tasks."""
        comparisons = np.asarray(comparisons, dtype=np.float64)
        small = np.asarray(small, dtype=np.float64)
        return (self.overhead_per_task + self.per_comparison * (comparisons - small)
                + self.small_rate * small
                + self.per_record * np.asarray(records, dtype=np.float64)
                + self.per_match_task * np.asarray(match_tasks, dtype=np.float64))

    @property
    def small_rate(self) -> float:
        """Seconds of a comparison in a small match task."""
        return self.per_comparison if self.per_small_comparison is None else \
            self.per_small_comparison

    @property
    def comparisons_per_second(self) -> float:
        """Throughput of one thread on comparisons alone."""
        return 1.0 / self.per_comparison if self.per_comparison > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)  # a deep copy: a report's dict shares nothing with the model
        out["measurements"] = list(out["measurements"])
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CostModel:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"CostModel.from_dict: unknown field(s) {sorted(unknown)}")
        d = dict(d)
        d["measurements"] = tuple(_measurement(r) for r in d.get("measurements") or ())
        return cls(**d)

    # -- calibration ---------------------------------------------------------------------

    @classmethod
    def fit(
        cls,
        runs: Sequence[Mapping[str, Any]],
        threads: int,
        source: str = "calibrated",
    ) -> CostModel:
        """Fit a model to measured runs.

        Each run is a mapping with per-reduce-task arrays ``comparisons``, ``records``,
        ``match_tasks``, ``seconds`` (measured inside the task), optionally
        ``small_comparisons`` (those in small match tasks; none when absent), and the
        measured ``wall`` seconds of the route+compare phase. A comparison rate the runs
        do not tell (no such comparisons, or fitted to 0) is taken to be the other one.
        The per-item costs come from a non-negative least-squares fit of the task seconds
        (their intercept is the in-task overhead).
        What the wall time holds beyond the list schedule of the measured task seconds is
        work outside the tasks (building and submitting the graph, routing and shuffling
        records, gathering the pairs kept). Two runs routing the same records with
        different numbers of tasks tell its per-task part (from how it grows with the
        tasks); the rest is split into a per-routed-record part and a per-job constant by
        how it grows with the records routed (runs of different sizes; without them it is
        all per job). With one run it is all per task.
        """
        if not runs:
            raise ValueError("CostModel.fit: give at least one measured run")
        threads = check_threads(threads)
        checked = [_measurement(r) for r in runs]
        if not any(r["seconds"] for r in checked):
            raise ValueError("CostModel.fit: the measured runs hold no reduce task")
        cmp = np.concatenate([np.asarray(r["comparisons"], np.float64) for r in checked])
        rec = np.concatenate([np.asarray(r["records"], np.float64) for r in checked])
        mts = np.concatenate([np.asarray(r["match_tasks"], np.float64) for r in checked])
        sec = np.concatenate([np.asarray(r["seconds"], np.float64) for r in checked])
        small = np.concatenate([np.asarray(r.get("small_comparisons", np.zeros(len(r["seconds"]))),
                                           np.float64) for r in checked])
        large = cmp - small
        coef = nnls_subsets(np.column_stack([np.ones_like(cmp), large, small, rec, mts]), sec)
        c_in, b, b_small, a, d = (float(x) for x in coef)
        # a rate the runs cannot tell (no such comparisons, or fitted 0) is the other one
        b, b_small = (b if b > 0 else b_small), (b_small if b_small > 0 else b)
        if b <= 0:  # too few tasks to tell costs apart: charge all to comparisons, one rate
            b = b_small = float(sec.sum() / max(cmp.sum(), 1.0))
            c_in, a, d = 0.0, 0.0, 0.0
        c_out, a_out, job = _outside_overhead(checked, threads)
        return cls(overhead_per_task=c_in + c_out, per_comparison=b,
                   per_small_comparison=b_small, per_record=a + a_out, per_match_task=d,
                   overhead_per_job=job, source=source, measurements=tuple(checked))

    @classmethod
    def from_report(cls, report: Any, threads: int | None = None) -> CostModel:
        """A model fitted to a previous :class:`~erblock.report.RunReport` (one run)."""
        tasks = getattr(report, "tasks", None)
        if not tasks:
            raise ValueError("CostModel.from_report: the report has no measured reduce tasks")
        threads = threads or int(report.settings.get("threads", 0) or 0)
        if not threads:
            raise ValueError("CostModel.from_report: the report does not say how many worker "
                             "threads ran it; pass threads=")
        run = {
            "comparisons": [t.comparisons for t in tasks],
            "records": [t.records for t in tasks],
            "match_tasks": [t.match_tasks for t in tasks],
            "small_comparisons": [t.small_comparisons for t in tasks],
            "seconds": [t.seconds + t.write_seconds for t in tasks],
            "wall": float(report.phases.get("route_compare", 0.0)),
        }
        return cls.fit([run], threads, source="report")


#: what a measured run holds per reduce task (:meth:`CostModel.fit`) ...
RUN_ARRAYS = ("comparisons", "records", "match_tasks", "seconds")
#: ... and may hold (reports and models saved before it was measured lack it)
OPTIONAL_ARRAYS = ("small_comparisons",)


def _measurement(run: Mapping[str, Any]) -> dict[str, Any]:
    """A measured run as plain lists and numbers (JSON-ready), its arrays checked."""
    missing = [k for k in RUN_ARRAYS if k not in run]
    if missing:
        raise ValueError(f"CostModel: a measured run needs {', '.join(RUN_ARRAYS)}; "
                         f"missing {', '.join(missing)}")
    arrays = {k: np.asarray(run[k], np.float64) for k in RUN_ARRAYS + OPTIONAL_ARRAYS
              if k in run}
    if any(a.ndim != 1 for a in arrays.values()):
        raise ValueError(f"CostModel: a measured run's {', '.join(RUN_ARRAYS)} must be one "
                         "number per reduce task")
    if len({len(a) for a in arrays.values()}) != 1:
        raise ValueError("CostModel: a measured run's per-task arrays differ in length")
    out = {k: as_python(v) for k, v in run.items() if k not in arrays}
    out.update({k: a.tolist() for k, a in arrays.items()})
    return out


def check_threads(threads: int) -> int:
    """``threads`` as an int, or a ValueError unless it is an integer >= 1."""
    if not isinstance(threads, (int, np.integer)) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    return int(threads)


def nnls_subsets(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares for a handful of columns, exactly: the best unconstrained
    fit over every subset of columns whose coefficients are all >= 0."""
    n_cols = x.shape[1]
    best, best_err = np.zeros(n_cols), float(np.sum(y**2))
    scale = np.maximum(np.abs(x).max(axis=0), 1e-300)
    xs = x / scale
    for k in range(1, n_cols + 1):
        for cols in itertools.combinations(range(n_cols), k):
            sub = xs[:, cols]
            coef, *_ = np.linalg.lstsq(sub, y, rcond=None)
            if np.any(coef < 0):
                continue
            err = float(np.sum((sub @ coef - y) ** 2))
            if err < best_err - 1e-15:
                best = np.zeros(n_cols)
                best[list(cols)] = coef
                best_err = err
    return best / scale


def _outside_overhead(runs: Sequence[Mapping[str, Any]], threads: int
                      ) -> tuple[float, float, float]:
    """Seconds spent outside the tasks: (per reduce task, per routed record, per job)."""
    measured = [(np.asarray(r["seconds"], np.float64), float(r["wall"]),
                 float(np.sum(r["records"]))) for r in runs if r.get("wall")]
    if not measured:
        return 0.0, 0.0, 0.0

    def excess(c: float, s: np.ndarray, wall: float) -> float:
        return wall - lpt_makespan(s + c, threads)

    same = [(a, b) for a in measured for b in measured
            if len(a[0]) < len(b[0]) and a[2] == b[2]]
    if not same:  # nothing tells tasks from the rest: all per task
        s, wall, _ = measured[0]
        return _solve_c(lambda c: excess(c, s, wall)), 0.0, 0.0
    (s1, w1, _), (s2, w2, _) = max(same, key=lambda p: len(p[1][0]) - len(p[0][0]))
    # what does not depend on the number of tasks cancels in w2 - w1: solve it for c
    c = _solve_c(lambda c: (w2 - w1) - (lpt_makespan(s2 + c, threads)
                                         - lpt_makespan(s1 + c, threads)))
    common = np.array([max(0.0, excess(c, s, w)) for s, w, _ in measured])
    routed = np.array([n for _, _, n in measured]) / threads
    if len(np.unique(routed)) < 2:
        return c, 0.0, float(common.mean())
    job, per_record = nnls_subsets(np.column_stack([np.ones_like(routed), routed]), common)
    return c, float(per_record), float(job)


def _solve_c(f: Callable[[float], float], hi: float = 10.0) -> float:
    """Smallest c >= 0 with f(c) <= 0 for a decreasing f (bisection), 0 if f(0) <= 0."""
    if f(0.0) <= 0:
        return 0.0
    if f(hi) > 0:
        return hi
    lo = 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


# -- prediction ------------------------------------------------------------------------


#: reduce tasks per worker thread a job gets by default (slack for the list schedule)
TASKS_PER_THREAD = 4
#: a default task carries at least this many times the per-task overhead in work
WORK_PER_OVERHEAD = 5.0


def most_tasks(threads: int) -> int:
    """The reduce tasks of a job that left ``n_tasks`` unset, at most:
    :data:`TASKS_PER_THREAD` per worker thread (room to even out what the plan's
    prediction misses)."""
    return TASKS_PER_THREAD * check_threads(threads)


def default_task_count(comparisons: float, records: float, model: CostModel,
                       threads: int) -> int:
    """Reduce tasks for a job that left ``n_tasks`` unset.

    :data:`TASKS_PER_THREAD` per worker thread, fewer when that would give tasks less
    than :data:`WORK_PER_OVERHEAD` times the model's per-task overhead of work (for a
    small job the fixed cost of its tasks, not its comparisons, is the run time), never
    fewer than one per thread. A job needing more (memory) gets more from the memory
    fit."""
    threads = check_threads(threads)
    most = most_tasks(threads)
    if model.overhead_per_task <= 0:
        return most
    work = model.per_comparison * float(comparisons) + model.per_record * float(records)
    need = math.ceil(work / (WORK_PER_OVERHEAD * model.overhead_per_task))
    return int(min(most, max(threads, need)))


#: a requested task count is worth a warning when its tasks' fixed cost alone is
#: predicted above this many seconds and above this many times the comparisons' work
OVERHEAD_WARN_SECONDS = 10.0
OVERHEAD_WARN_RATIO = 10.0


def overhead_warning(n_tasks: int, comparisons: float, model: CostModel, threads: int
                     ) -> str | None:
    """Why a requested ``n_tasks`` will run slowly, or None.

    Every reduce task has a fixed cost (``model.overhead_per_task``: tens of milliseconds
    to schedule it, build its sides and write its pairs), so far more tasks than the
    comparisons need make the run last as long as those costs add up: 100,000 tasks for
    17,000 comparisons take minutes where 4 take a second. Warned only when the tasks'
    overhead is predicted above :data:`OVERHEAD_WARN_SECONDS` and above
    :data:`OVERHEAD_WARN_RATIO` times the comparisons' own seconds, so under the default
    cost model a task count chosen for balance (100 tasks of a few thousand comparisons)
    is not flagged; a calibrated model that measured a larger cost a task (0.2 s and more
    on one or two threads) flags it, as that is what the run will then cost.
    """
    threads = check_threads(threads)
    overhead = n_tasks * model.overhead_per_task / threads
    work = float(comparisons) * model.per_comparison / threads
    if overhead <= max(OVERHEAD_WARN_SECONDS, OVERHEAD_WARN_RATIO * work):
        return None
    empty = f"; {n_tasks - int(comparisons):,} of them can hold no comparison" if (
        n_tasks > comparisons) else ""
    return (f"n_tasks={n_tasks:,} for {float(comparisons):,.0f} comparisons "
            f"({float(comparisons) / n_tasks:,.1f} a task{empty}): the tasks' fixed cost "
            f"(~{model.overhead_per_task * 1e3:.0f} ms each, cost model "
            f"{model.source!r}) is predicted at ~{overhead:,.0f} s on {threads} thread(s), "
            f"the comparisons at ~{work:,.2f} s; pass fewer tasks, or n_tasks=None to let "
            "erblock choose")


def plan_task_features(plan: Plan
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per reduce task: predicted comparisons, records received, match tasks, and the
    comparisons of its small match tasks (:attr:`~erblock.balancing.plan.Plan.small_loads`)."""
    r = plan.n_tasks
    match_tasks = np.bincount(plan.match.reduce_task, minlength=r)[:r]
    return (plan.loads.astype(np.float64), plan.records_per_task().astype(np.float64),
            match_tasks.astype(np.float64), plan.small_loads.astype(np.float64))
