"""The parts a plan is made of: units, match tasks, what a strategy records about its
choices (:class:`Details`) and what the cost model predicts (:class:`Prediction`).

See :mod:`erblock.balancing.plan` for how they fit together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..scalars import as_python

TRIANGLE = 0  #: all pairs inside one unit (dedupe)
RECTANGLE = 1  #: all pairs left unit × right unit
RANGE = 2  #: pairs [lo, hi) of one block in row-major order (PairRange)
KIND_NAMES = {TRIANGLE: "triangle", RECTANGLE: "rectangle", RANGE: "range"}

WHOLE = -1  #: part/piece value of a unit that holds a whole block (or cell) of a source
#: a TRIANGLE or RECTANGLE match task of at most this many cells is *small*: the compare
#: batches all of a reduce task's small ones as aligned pairs (one kernel call, one value
#: fetched per pair) instead of a similarity matrix each (~0.5 ms fixed per kernel call),
#: and the cost model prices their comparisons apart
SMALL_CELLS = 2048


def small_match_tasks(kind: np.ndarray, n_left: np.ndarray, n_right: np.ndarray,
                      limit: int = SMALL_CELLS) -> np.ndarray:
    """Which match tasks are small (see :data:`SMALL_CELLS`): a TRIANGLE or RECTANGLE
    whose ``n_left`` × ``n_right`` records (a triangle's own ``n_left`` records; its
    ``n_right`` is not read) make at most ``limit`` cells. The planner (pricing) and the
    compare (batching) both ask this, so they agree on every task."""
    nl = np.asarray(n_left, dtype=np.int64)
    cells = np.where(kind == TRIANGLE, nl * (nl - 1) // 2, nl * np.asarray(n_right, np.int64))
    return (kind != RANGE) & (cells <= limit)


@dataclass(frozen=True)
class Units:
    """Unit table: unit ``u`` is (block[u], src[u], part[u], piece[u]) with size[u] records.

    ``block`` is the block id (a sketch cell for cell plans, a bucket number for hash
    buckets); ``part`` is the input partition of a split sub-block, or :data:`WHOLE`, or a
    negative marker of the strategy's own unit kinds.
    """

    block: np.ndarray
    src: np.ndarray
    part: np.ndarray
    piece: np.ndarray
    size: np.ndarray

    def __len__(self) -> int:
        return len(self.block)


@dataclass(frozen=True)
class MatchTasks:
    """Match task table (parallel arrays). ``lo``/``hi`` (pair indices inside the block)
    are only meaningful for ``RANGE`` tasks and may be None when a plan has none."""

    kind: np.ndarray
    left: np.ndarray  # unit id
    right: np.ndarray  # unit id (== left for triangles)
    comparisons: np.ndarray
    reduce_task: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.kind)


def check_n_tasks(r: Any) -> None:
    """Raise unless ``r`` (the number of reduce tasks) is an integer >= 1."""
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or r < 1:
        raise ValueError(f"n_tasks must be an integer >= 1, got {r!r}")


def _length(cols: tuple[Any, ...]) -> int:
    """Length of one-dimensional columns (or scalars) broadcast together: scalars alone
    make one row (called for every unit a planner adds, so no numpy helper)."""
    n = -1
    for c in cols:
        if isinstance(c, (int, np.integer)):
            continue
        if np.ndim(c) != 1:
            if np.ndim(c) == 0:
                continue
            raise ValueError(f"unit columns must be one-dimensional, got shape {np.shape(c)}")
        m = len(c)
        if n in (-1, 1):
            n = m
        elif m not in (1, n):
            raise ValueError(f"unit columns of different lengths: {n} and {m}")
    return 1 if n == -1 else n


class UnitBuilder:
    """Accumulates units and match tasks while a strategy plans."""

    def __init__(self) -> None:
        self._units: list[np.ndarray] = []
        self._tasks: list[np.ndarray] = []
        self.n_units = 0

    def add_units(
        self, block: np.ndarray | int, src: np.ndarray | int, part: np.ndarray | int,
        piece: np.ndarray | int, size: np.ndarray | int,
    ) -> np.ndarray:
        """Append units (arrays or scalars broadcast together); return their ids."""
        cols = (block, src, part, piece, size)
        n = _length(cols)
        rows = np.empty((5, n), dtype=np.int64)  # filled by broadcasting (no stack)
        for row, c in zip(rows, cols):
            row[:] = c
        ids = np.arange(self.n_units, self.n_units + n, dtype=np.int64)
        self._units.append(rows)
        self.n_units += n
        return ids

    def add_tasks(
        self, kind: np.ndarray | int, left: np.ndarray, right: np.ndarray, comparisons: np.ndarray
    ) -> None:
        cols = (kind, left, right, comparisons)
        rows = np.empty((4, _length(cols)), dtype=np.int64)
        for row, c in zip(rows, cols):
            row[:] = c
        # empty (sub-)blocks and single-record triangles make no task
        self._tasks.append(rows[:, rows[3] > 0])

    def build(self) -> tuple[Units, np.ndarray]:
        """The unit table and the task rows (kind, left unit, right unit, comparisons)."""
        u = np.concatenate(self._units, axis=1) if self._units else np.zeros((5, 0), np.int64)
        t = np.concatenate(self._tasks, axis=1) if self._tasks else np.zeros((4, 0), np.int64)
        return Units(u[0], u[1].astype(np.int8), u[2], u[3], u[4]), t


@dataclass(frozen=True)
class Details:
    """What a strategy records about its own choices (one subclass per strategy).

    ``unit_name`` is what the plan's unit keys are ("block", or "cell" for sketch plans).
    """

    unit_name: ClassVar[str] = "block"

    def describe(self) -> list[str]:
        """Lines :meth:`Plan.describe` adds for this strategy (none by default)."""
        return []

    def listed(self, units: Any) -> np.ndarray:
        """Which units hold records of a single block (units that mix blocks, such as hash
        buckets, are not listed among the largest blocks)."""
        return np.ones(len(units), dtype=bool)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.repr}


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return as_python(value)
    if isinstance(value, Details):
        return value.to_dict()
    return value


@dataclass(frozen=True)
class Candidate:
    """One plan the cost model compared (a row of ``auto``'s table)."""

    label: str
    strategy: str
    predicted_makespan: float
    predicted_total: float
    ideal: float
    imbalance: float
    max_load: int
    match_tasks: int
    replication: float
    records_routed: int
    split_factor: float | None
    chosen: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Prediction:
    """What the cost model predicts for a plan on ``threads`` worker threads.

    ``makespan`` is the predicted route+compare wall time, ``ideal`` the same with the
    work spread perfectly, ``task_seconds`` the predicted seconds of each reduce task.
    ``candidates`` is the table of plans compared (``auto``, ``erblock.plan``) and
    ``auto_choice`` the label ``auto`` chose (None for an explicit strategy).
    """

    makespan: float
    ideal: float
    imbalance_seconds: float
    task_seconds: np.ndarray = field(repr=False)
    threads: int
    cost_model: Mapping[str, Any]
    candidates: tuple[Candidate, ...] = ()
    auto_choice: str | None = None
    basic_loads: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "makespan": self.makespan,
            "ideal": self.ideal,
            "imbalance_seconds": self.imbalance_seconds,
            "task_seconds": np.asarray(self.task_seconds, dtype=float).tolist(),
            "threads": self.threads,
            "cost_model": dict(self.cost_model),
            "candidates": [c.to_dict() for c in self.candidates],
            "auto_choice": self.auto_choice,
        }
