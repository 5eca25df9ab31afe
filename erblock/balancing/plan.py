"""The plan: which records go to which reduce task, and which pairs each task computes.

Every strategy produces the same shape, so routing and comparing are written once:

* **units** are the groups of records that travel together: a whole block of a source,
  or a *piece* of a per-partition sub-block (BlockSplit). A record finds its unit from
  its block id, source and input partition, and, inside a split sub-block, from its
  rank in the partition: piece ``p`` of a sub-block of ``n`` records cut into ``h``
  pieces holds ranks ``q`` with ``q * h // n == p``.
* **match tasks** compare units: ``TRIANGLE`` (all pairs inside one unit, dedupe) or
  ``RECTANGLE`` (left unit × right unit). Each has its comparison count and a reduce task.
* a record is sent once to each distinct reduce task that has a match task using its
  unit: ``replication`` = records routed / records with a key.
* ``RANGE`` tasks (PairRange, :mod:`.pairrange`) compute the pairs ``[lo, hi)`` of one
  block in its row-major order (triangle for dedupe, rectangle for link). Their units are
  *ranked*: a record's global rank in its block (records of the block in earlier input
  partitions + its rank in its partition) picks a *segment* of the unit, and every
  segment has its own reduce tasks (:class:`Ranked`), so a record goes exactly to the
  tasks whose range holds one of its pairs.
* Cell strategies (:mod:`.cells`) key units by the sketch cell of the block id instead of
  the block id (:class:`CellMap`), and cut a cell into *pieces* by a record's position in
  ``[0, 1)`` (:class:`Pieces`); a unit then mixes blocks and the comparer only pairs
  records of equal block ids. Their comparisons are estimates (``info["estimated"]``).

Invariants (checked in tests against a brute force): every pair that blocking implies is
in exactly one match task; ``loads[t]`` is the sum of comparisons of the match tasks of
reduce task ``t`` and equals the comparisons the worker performs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

TRIANGLE = 0  #: all pairs inside one unit (dedupe)
RECTANGLE = 1  #: all pairs left unit × right unit
RANGE = 2  #: pairs [lo, hi) of one block in row-major order (PairRange)
KIND_NAMES = {TRIANGLE: "triangle", RECTANGLE: "rectangle", RANGE: "range"}

WHOLE = -1  #: part/piece value of a unit that holds a whole block of a source


@dataclass(frozen=True)
class Units:
    """Unit table: unit ``u`` is (block[u], src[u], part[u], piece[u]) with size[u] records."""

    block: np.ndarray
    src: np.ndarray
    part: np.ndarray
    piece: np.ndarray
    size: np.ndarray

    def __len__(self) -> int:
        return len(self.block)


@dataclass(frozen=True)
class Splits:
    """Split sub-blocks: (block, src, part) has ``n`` records cut into ``h`` pieces whose
    units are ``unit0 .. unit0 + h - 1``."""

    block: np.ndarray
    src: np.ndarray
    part: np.ndarray
    n: np.ndarray
    h: np.ndarray
    unit0: np.ndarray


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


@dataclass(frozen=True)
class Ranked:
    """Units routed by a record's rank in its (block, source) (PairRange).

    ``unit[g]`` (sorted) holds ``n[g]`` records; a record of input partition ``p`` has
    global rank ``offset + local rank``, where ``offset`` is the row (``off_group``,
    ``off_part``) of the offset table (records of the block in earlier partitions).
    Unit ``g`` is cut into segments starting at ranks ``seg_start[seg_indptr[g]:
    seg_indptr[g+1]]``; segment ``k`` goes to ``targets[tgt_indptr[k]:tgt_indptr[k+1]]``.
    """

    unit: np.ndarray
    n: np.ndarray
    off_group: np.ndarray
    off_part: np.ndarray
    offset: np.ndarray
    seg_indptr: np.ndarray
    seg_start: np.ndarray
    tgt_indptr: np.ndarray
    targets: np.ndarray

    def segment_lengths(self) -> np.ndarray:
        """Records in every segment."""
        ends = np.empty(len(self.seg_start), dtype=np.int64)
        ends[:-1] = self.seg_start[1:]
        ends[self.seg_indptr[1:] - 1] = self.n  # the last segment of a unit ends at n
        return ends - self.seg_start


@dataclass(frozen=True)
class Pieces:
    """Units picked by a record's position (cell strategies).

    Records of key ``key[g]`` (a sketch cell) and source ``src[g]`` are cut into ``h[g]``
    pieces, units ``unit0[g] .. unit0[g] + h[g] − 1``: a record at position ``x`` in
    ``[0, 2^32)`` (:data:`POSITION_BITS`) goes to piece ``#{cuts of g <= x}``, with the
    ``h − 1`` increasing cuts of group ``g`` in ``cuts[cut_indptr[g]:cut_indptr[g+1]]``.
    """

    key: np.ndarray
    src: np.ndarray
    unit0: np.ndarray
    h: np.ndarray
    cut_indptr: np.ndarray
    cuts: np.ndarray


POSITION_BITS = 32  #: record positions and piece cuts are fractions of 2^32


@dataclass(frozen=True)
class CellMap:
    """Units keyed by sketch cell: the key of a block id is its cell in row ``theta`` of
    the sketch ``spec`` (a :class:`~erblock.balancing.sketch.SketchSpec`)."""

    spec: Any
    theta: int

    def keys(self, blocks: np.ndarray) -> np.ndarray:
        return self.spec.cells(blocks, self.theta)


def check_n_tasks(r: int) -> None:
    """Raise unless ``r`` (the number of reduce tasks) is an integer >= 1."""
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or r < 1:
        raise ValueError(f"n_tasks must be an integer >= 1, got {r!r}")


class UnitBuilder:
    """Accumulates units, split sub-blocks and match tasks while a strategy plans."""

    def __init__(self) -> None:
        self._units: list[np.ndarray] = []
        self._splits: list[np.ndarray] = []
        self._tasks: list[np.ndarray] = []
        self.n_units = 0

    def add_units(
        self, block: np.ndarray | int, src: np.ndarray | int, part: np.ndarray | int,
        piece: np.ndarray | int, size: np.ndarray | int,
    ) -> np.ndarray:
        """Append units (arrays or scalars broadcast together); return their ids."""
        block, src, part, piece, size = np.broadcast_arrays(
            np.atleast_1d(np.asarray(block, dtype=np.int64)), np.asarray(src, dtype=np.int64),
            np.asarray(part, dtype=np.int64), np.asarray(piece, dtype=np.int64),
            np.asarray(size, dtype=np.int64),
        )
        ids = np.arange(self.n_units, self.n_units + len(block), dtype=np.int64)
        self._units.append(np.stack([block, src, part, piece, size]))
        self.n_units += len(block)
        return ids

    def add_split(self, block: int, src: int, part: int, n: int, h: int, unit0: int) -> None:
        self._splits.append(np.array([[block], [src], [part], [n], [h], [unit0]], dtype=np.int64))

    def add_tasks(
        self, kind: np.ndarray | int, left: np.ndarray, right: np.ndarray, comparisons: np.ndarray
    ) -> None:
        kind, left, right, comparisons = np.broadcast_arrays(
            np.asarray(kind, dtype=np.int64), np.asarray(left, dtype=np.int64),
            np.asarray(right, dtype=np.int64), np.asarray(comparisons, dtype=np.int64),
        )
        keep = comparisons > 0  # empty (sub-)blocks and single-record triangles make no task
        self._tasks.append(np.stack([kind[keep], left[keep], right[keep], comparisons[keep]]))

    def build(self) -> tuple[Units, Splits, np.ndarray]:
        u = np.concatenate(self._units, axis=1) if self._units else np.zeros((5, 0), np.int64)
        s = np.concatenate(self._splits, axis=1) if self._splits else np.zeros((6, 0), np.int64)
        t = np.concatenate(self._tasks, axis=1) if self._tasks else np.zeros((4, 0), np.int64)
        units = Units(u[0], u[1].astype(np.int8), u[2], u[3], u[4])
        splits = Splits(s[0], s[1].astype(np.int8), s[2], s[3], s[4], s[5])
        return units, splits, t


@dataclass
class Plan:
    """A strategy's answer: units, match tasks and their reduce tasks, with predicted loads.

    Attributes follow DESIGN.md §2: ``tasks`` (one row per match task), ``loads``
    (comparisons per reduce task), ``imbalance`` (max/mean of loads), ``replication``
    (records routed / records with a key) and ``total_comparisons``.
    """

    strategy: str
    n_tasks: int
    link: bool
    units: Units
    splits: Splits
    match: MatchTasks
    records_in: int
    info: dict[str, Any] = field(default_factory=dict)
    ranked: Ranked | None = None
    pieces: Pieces | None = None
    cells: CellMap | None = None

    def __post_init__(self) -> None:
        loads = np.zeros(self.n_tasks, dtype=np.int64)
        np.add.at(loads, self.match.reduce_task, self.match.comparisons)
        self.loads = loads
        self.total_comparisons = int(self.match.comparisons.sum())
        mean = loads.mean() if self.n_tasks else 0.0
        self.imbalance = float(loads.max() / mean) if mean > 0 else 1.0
        indptr, targets = self._unit_targets()
        self.unit_indptr, self.unit_targets = indptr, targets
        fanout = np.diff(indptr)
        if self.ranked is not None and len(self.ranked.unit):
            # ranked units go segment by segment, not to every task of their block
            fanout = fanout.copy()
            fanout[self.ranked.unit] = 0
            seg_fanout = np.diff(self.ranked.tgt_indptr)
            ranked_routed = int((seg_fanout * self.ranked.segment_lengths()).sum())
        else:
            ranked_routed = 0
        self.records_routed = int((fanout * self.units.size).sum()) + ranked_routed
        self.replication = self.records_routed / self.records_in if self.records_in else 0.0

    def _unit_targets(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR unit -> distinct reduce tasks that need it."""
        n_units = len(self.units)
        m = self.match
        pairs_u = np.concatenate([m.left, m.right])
        pairs_t = np.concatenate([m.reduce_task, m.reduce_task])
        if len(pairs_u):
            # distinct (unit, task) keys; sort + diff is several times faster here than
            # np.unique's hash path on millions of keys
            key = np.sort(pairs_u * max(self.n_tasks, 1) + pairs_t)
            key = key[np.r_[True, key[1:] != key[:-1]]]
            pairs_u, pairs_t = key // max(self.n_tasks, 1), key % max(self.n_tasks, 1)
        counts = np.bincount(pairs_u, minlength=n_units)
        indptr = np.zeros(n_units + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr, pairs_t.astype(np.int64)

    # -- views -------------------------------------------------------------------------

    def match_tasks_of(self, reduce_task: int) -> np.ndarray:
        """Indices of the match tasks assigned to ``reduce_task``, largest first."""
        idx = np.flatnonzero(self.match.reduce_task == reduce_task)
        return idx[np.argsort(-self.match.comparisons[idx], kind="stable")]

    @property
    def tasks(self) -> pd.DataFrame:
        """One row per match task: kind, block, sub-block ids, comparisons, reduce task."""
        import pandas as pd

        m, u = self.match, self.units
        return pd.DataFrame(
            {
                "match_task": np.arange(len(m), dtype=np.int64),
                "reduce_task": m.reduce_task,
                "kind": [KIND_NAMES.get(int(k), str(k)) for k in m.kind],
                "block": u.block[m.left] if len(m) else np.zeros(0, np.int64),
                "left_unit": m.left,
                "right_unit": m.right,
                "left_part": u.part[m.left] if len(m) else np.zeros(0, np.int64),
                "left_piece": u.piece[m.left] if len(m) else np.zeros(0, np.int64),
                "right_part": u.part[m.right] if len(m) else np.zeros(0, np.int64),
                "right_piece": u.piece[m.right] if len(m) else np.zeros(0, np.int64),
                "comparisons": m.comparisons,
            }
        )

    def summary(self) -> dict[str, Any]:
        """Plain-number summary for reports and JSON."""
        return {
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
            **{k: v for k, v in self.info.items() if isinstance(v, (int, float, str, bool))},
        }

    def describe(self, top: int = 5) -> str:
        """Readable explanation: comparisons, largest blocks, balance, replication, predicted
        makespan and the strategies compared (:func:`erblock.balancing.explain.describe`)."""
        from .explain import describe

        return describe(self, top)

    def plot(self, path: Any, title: str | None = None, top: int = 10) -> Any:
        """Draw comparisons per reduce task next to Basic's, and the ``top`` largest blocks,
        as a PNG (needs matplotlib; :func:`erblock.balancing.explain.plot`). Returns the path."""
        from .explain import plot

        return plot(self, path, title, top)

    def __repr__(self) -> str:
        return (
            f"Plan(strategy={self.strategy!r}, n_tasks={self.n_tasks}, "
            f"total_comparisons={self.total_comparisons}, imbalance={self.imbalance:.3f}, "
            f"replication={self.replication:.3f})"
        )


def make_plan(
    strategy: str, n_tasks: int, link: bool, builder: UnitBuilder,
    assign: Callable[[Units, np.ndarray], np.ndarray], records_in: int,
    info: dict[str, Any] | None = None,
) -> Plan:
    """Assemble a :class:`Plan` from a builder; ``assign(units, tasks)`` gives the reduce task
    of each match task (``tasks`` rows: kind, left unit, right unit, comparisons)."""
    units, splits, t = builder.build()
    reduce_task = np.asarray(assign(units, t), dtype=np.int64)
    match = MatchTasks(t[0], t[1], t[2], t[3], reduce_task)
    return Plan(strategy, n_tasks, link, units, splits, match, records_in, info or {})
