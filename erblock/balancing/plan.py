"""The plan: which records go to which reduce task, and which pairs each task computes.

Every strategy produces the same shape, so routing and comparing are written once:

* **units** are the groups of records that travel together: a whole block of a source,
  a *piece* of a per-partition sub-block (BlockSplit), a piece of a sketch cell (cell
  strategies), a hash piece or a hash bucket (plans from a sample).
* **match tasks** compare units: ``TRIANGLE`` (all pairs inside one unit, dedupe),
  ``RECTANGLE`` (left unit × right unit) or ``RANGE`` (the pairs ``[lo, hi)`` of one block
  in its row-major order, PairRange). Each has its comparison count and a reduce task.
* **placements** (:mod:`.placement`) say how a record finds its unit: by its block, by
  its rank in a split sub-block, by its position in a sketch cell, by a hash. A plan
  declares the placements it uses and routing loops over them, whatever the strategy.
* a record is sent once to each distinct reduce task that has a match task using its
  unit (a ranked record only to the tasks of its segment): ``replication`` = records
  routed / records with a key.

A :class:`Plan` is frozen. What a strategy knows about its own choices is in
``details`` (a small typed record per strategy), what the cost model predicts in
``prediction`` (:class:`Prediction`, added with :meth:`Plan.with_prediction`).

Invariants (checked in tests against a brute force): every pair that blocking implies is
in exactly one match task; ``loads[t]`` is the sum of comparisons of the match tasks of
reduce task ``t`` and, for exact plans, equals the comparisons the worker performs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from . import explain
from .placement import Placement, RankedUnits, RecordKeys, WholeUnits
from .units import (
    KIND_NAMES,
    RANGE,
    RECTANGLE,
    TRIANGLE,
    WHOLE,
    Candidate,
    Details,
    MatchTasks,
    Prediction,
    UnitBuilder,
    Units,
    check_n_tasks,
    small_match_tasks,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

@dataclass(frozen=True, eq=False)
class Plan:
    """A strategy's answer: units, match tasks and their reduce tasks, with predicted loads.

    Attributes follow DESIGN.md §2: ``tasks`` (one row per match task), ``loads``
    (comparisons per reduce task), ``imbalance`` (max/mean of loads), ``replication``
    (records routed / records with a key) and ``total_comparisons``.

    ``estimated`` says the loads are estimates (plans from a sketch or a sample: the pair
    set is still exact). ``records_in`` counts distinct records with a key; with several
    key passes ``key_rows_in`` counts (record, pass) rows. ``profile`` keeps the BDM or
    sketch the plan was made from when asked to (``erblock.plan``), for explaining it.
    """

    strategy: str
    n_tasks: int
    link: bool
    units: Units
    match: MatchTasks
    records_in: int
    placements: tuple[Placement, ...]
    details: Details | None = None
    estimated: bool = False
    prediction: Prediction | None = None
    key_rows_in: int | None = None
    profile: Any = field(default=None, repr=False)
    #: block id -> its key text, for the largest blocks (``erblock.plan`` looks them up)
    block_labels: dict[int, str] = field(default_factory=dict, repr=False)

    # -- derived quantities ---------------------------------------------------------------

    @cached_property
    def loads(self) -> np.ndarray:
        """Comparisons per reduce task (int64)."""
        return np.bincount(self.match.reduce_task, weights=self.match.comparisons,
                           minlength=self.n_tasks)[: self.n_tasks].astype(np.int64)

    @cached_property
    def small_loads(self) -> np.ndarray:
        """Comparisons per reduce task in small match tasks
        (:func:`~erblock.balancing.units.small_match_tasks`; int64), which the compare
        batches as aligned pairs."""
        m, size = self.match, self.units.size
        small = small_match_tasks(m.kind, size[m.left], size[m.right])
        return np.bincount(m.reduce_task[small], weights=m.comparisons[small],
                           minlength=self.n_tasks)[: self.n_tasks].astype(np.int64)

    @property
    def total_comparisons(self) -> int:
        return int(self.match.comparisons.sum())

    @property
    def imbalance(self) -> float:
        mean = self.loads.mean() if self.n_tasks else 0.0
        return float(self.loads.max() / mean) if mean > 0 else 1.0

    @cached_property
    def _targets(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR unit -> distinct reduce tasks that need it."""
        n_units, r = len(self.units), max(self.n_tasks, 1)
        m = self.match
        pairs_u = np.concatenate([m.left, m.right])
        pairs_t = np.concatenate([m.reduce_task, m.reduce_task])
        if len(pairs_u):
            # distinct (unit, task) keys; sort + diff is several times faster here than
            # np.unique's hash path on millions of keys
            key = np.sort(pairs_u * r + pairs_t)
            key = key[np.r_[True, key[1:] != key[:-1]]]
            pairs_u, pairs_t = key // r, key % r
        indptr = np.zeros(n_units + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs_u, minlength=n_units), out=indptr[1:])
        return indptr, pairs_t.astype(np.int64)

    @property
    def unit_indptr(self) -> np.ndarray:
        return self._targets[0]

    @property
    def unit_targets(self) -> np.ndarray:
        return self._targets[1]

    @cached_property
    def records_routed(self) -> int:
        """Records sent to reduce tasks, counting a record once per task it goes to."""
        fanout = np.diff(self.unit_indptr)
        extra = 0
        for p in self.placements:
            fanout, routed = p.routed_records(fanout)
            extra += routed
        return int((fanout * self.units.size).sum()) + extra

    @property
    def replication(self) -> float:
        return self.records_routed / self.records_in if self.records_in else 0.0

    def records_per_task(self) -> np.ndarray:
        """Records routed to each reduce task (as planned; a record counts once per task)."""
        fanout = np.diff(self.unit_indptr)
        sizes = np.repeat(self.units.size, fanout)
        out = np.bincount(self.unit_targets, weights=sizes, minlength=self.n_tasks)
        return out[: self.n_tasks].astype(np.int64)

    # -- routing --------------------------------------------------------------------------

    def locate(self, keys: RecordKeys) -> tuple[np.ndarray, np.ndarray]:
        """Unit of every record (−1: in no match task) and its rank in a ranked unit
        (−1 otherwise), by the plan's placements in order."""
        n = len(keys)
        unit = np.full(n, -1, dtype=np.int64)
        rank = np.full(n, -1, dtype=np.int64)
        if n and len(self.units):
            for p in self.placements:
                p.place(keys, unit, rank)
        return unit, rank

    def route(self, keys: RecordKeys) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One row per (record, reduce task that needs it): the record's position in
        ``keys``, its unit, the reduce task and its rank (−1 unless ranked)."""
        unit, rank = self.locate(keys)
        keep = np.flatnonzero(unit >= 0)
        u = unit[keep]
        lo, hi = self.unit_indptr[u], self.unit_indptr[u + 1]
        targets = self.unit_targets
        for p in self.placements:
            lo, hi, targets = p.targets(u, rank[keep], lo, hi, targets)
        reps = hi - lo
        rows = np.repeat(keep, reps)
        offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
        tasks = targets[np.repeat(lo, reps) + offsets].astype(np.int64)
        return rows, np.repeat(u, reps), tasks, np.repeat(rank[keep], reps)

    # -- views ----------------------------------------------------------------------------

    def match_tasks_of(self, reduce_task: int) -> np.ndarray:
        """Indices of the match tasks assigned to ``reduce_task``, largest first."""
        idx = np.flatnonzero(self.match.reduce_task == reduce_task)
        return idx[np.argsort(-self.match.comparisons[idx], kind="stable")]

    @property
    def tasks(self) -> pd.DataFrame:
        """One row per match task: kind, block, sub-block ids, comparisons, reduce task."""
        import pandas as pd

        m, u = self.match, self.units
        empty = np.zeros(0, np.int64)
        return pd.DataFrame(
            {
                "match_task": np.arange(len(m), dtype=np.int64),
                "reduce_task": m.reduce_task,
                "kind": [KIND_NAMES.get(int(k), str(k)) for k in m.kind],
                "block": u.block[m.left] if len(m) else empty,
                "left_unit": m.left,
                "right_unit": m.right,
                "left_part": u.part[m.left] if len(m) else empty,
                "left_piece": u.piece[m.left] if len(m) else empty,
                "right_part": u.part[m.right] if len(m) else empty,
                "right_piece": u.piece[m.right] if len(m) else empty,
                "comparisons": m.comparisons,
            }
        )

    def summary(self) -> dict[str, Any]:
        """Plain-number summary for reports and JSON."""
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "n_tasks": self.n_tasks,
            "link": self.link,
            "total_comparisons": self.total_comparisons,
            "match_tasks": len(self.match),
            "max_load": int(self.loads.max()) if self.n_tasks else 0,
            "mean_load": float(self.loads.mean()) if self.n_tasks else 0.0,
            "imbalance": self.imbalance,
            "records_in": self.records_in,
            "records_routed": self.records_routed,
            "replication": self.replication,
            "estimated": self.estimated,
        }
        if self.key_rows_in is not None:
            out["key_rows_in"] = self.key_rows_in
        if self.details is not None:
            out["details"] = self.details.to_dict()
        if self.prediction is not None:
            out["predicted_makespan"] = self.prediction.makespan
            if self.prediction.auto_choice is not None:
                out["auto_choice"] = self.prediction.auto_choice
        return out

    # -- new plans from this one ----------------------------------------------------------

    def with_prediction(self, prediction: Prediction) -> Plan:
        """This plan with the cost model's prediction attached."""
        return dataclasses.replace(self, prediction=prediction)

    def with_records_in(self, records_in: int | None) -> Plan:
        """This plan counting ``records_in`` distinct records with a key (several passes
        give a record one row per pass with a key; replication counts it once)."""
        if records_in is None or records_in <= 0 or records_in == self.records_in:
            return self
        return dataclasses.replace(self, records_in=int(records_in),
                                   key_rows_in=self.records_in)

    def with_profile(self, profile: Any) -> Plan:
        """This plan keeping the profile (BDM or sketch) it was made from."""
        return dataclasses.replace(self, profile=profile)

    def with_block_labels(self, labels: dict[int, str]) -> Plan:
        """This plan knowing the key text of the blocks of ``labels`` (by block id)."""
        return dataclasses.replace(self, block_labels=dict(labels))

    def with_details(self, **changes: Any) -> Plan:
        """This plan with fields of its ``details`` replaced."""
        if self.details is None:
            raise ValueError(f"plan of {self.strategy!r} has no details to change")
        return dataclasses.replace(self, details=dataclasses.replace(self.details, **changes))

    def describe(self, top: int = 5) -> str:
        """Readable explanation: comparisons, largest blocks, balance, replication, predicted
        makespan and the strategies compared (:func:`erblock.balancing.explain.describe`)."""
        return explain.describe(self, top)

    def plot(self, path: Any, title: str | None = None, top: int = 10) -> Any:
        """Draw comparisons per reduce task next to Basic's, and the ``top`` largest blocks,
        as a PNG (needs matplotlib; :func:`erblock.balancing.explain.plot`). Returns the path."""
        return explain.plot(self, path, title, top)

    def __repr__(self) -> str:
        return (
            f"Plan(strategy={self.strategy!r}, n_tasks={self.n_tasks}, "
            f"total_comparisons={self.total_comparisons}, imbalance={self.imbalance:.3f}, "
            f"replication={self.replication:.3f})"
        )


def assemble(
    strategy: str, n_tasks: int, link: bool, builder: UnitBuilder,
    assign: Callable[[Units, np.ndarray], np.ndarray], records_in: int, *,
    placements: Sequence[Placement] = (), details: Details | None = None,
    estimated: bool = False,
) -> Plan:
    """Assemble a :class:`Plan` from a builder; ``assign(units, tasks)`` gives the reduce task
    of each match task (``tasks`` rows: kind, left unit, right unit, comparisons).

    Whole units (``part == WHOLE``) are placed by their block; ``placements`` come after.
    """
    units, t = builder.build()
    reduce_task = np.asarray(assign(units, t), dtype=np.int64)
    match = MatchTasks(t[0], t[1], t[2], t[3], reduce_task)
    return Plan(strategy, n_tasks, link, units, match, records_in,
                (WholeUnits.of(units, WHOLE), *placements), details, estimated)


__all__ = [
    "KIND_NAMES", "RANGE", "RECTANGLE", "TRIANGLE", "WHOLE", "Candidate", "Details",
    "MatchTasks", "Plan", "Prediction", "RankedUnits", "UnitBuilder", "Units", "assemble",
    "check_n_tasks",
]
