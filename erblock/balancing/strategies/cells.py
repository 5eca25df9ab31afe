"""Cell strategies on a sketch profile (paper 003 ch. IV): cell block and cell range division.

A BDM grows with the number of blocks; a sketch (:mod:`.sketch`) does not. These planners
never see a block: they plan on ``C^θ``, the estimated comparisons of each of the ``w``
cells of one sketch row θ (:func:`~.sketch.cell_work`), and a record is routed by the cell
of its block id in that row (:class:`~.plan.CellMap`). A cell may hold several blocks;
the comparer pairs records only when their block ids are equal, so the pair set is exact
whatever the sketch estimates. Only the loads are estimates: ``plan.loads`` (and the
comparisons of each match task) are what the sketch predicts, ``plan.info["estimated"]``
says so, and the run report shows the comparisons actually performed.

**Cell block division** (003 Alg. 5). A cell whose estimated work ``W_j`` exceeds the
sub-cell size is divided into ``D_j`` sub-cells along one side (a record of that side
goes to one sub-cell, a record of the other side to every sub-cell of its cell), and all
(sub-)cells are packed with LPT. The paper uses ``D_j = ⌈W_j·r/L̂⌉`` and proves a makespan
of at most ``(2 − 1/r)(1 + Δ/L)``; with items that close to the mean load LPT does come
near that bound (100 sub-cells of 0.9 mean on 100 tasks leave a task with two). Here:

* sub-cells are about ``L̂/(g·r)`` with ``granularity`` g (default 8), so LPT ends within
  about ``1/g`` of the mean;
* for link, the number of sub-cells is apportioned (:func:`sub_cells`) so that they
  number ``g·r`` and are all close to one quantum (rounding every cell up leaves a few
  extra sub-cells, and the task that gets one is a quantum above the rest);
* no sub-cell gets fewer than :data:`MIN_PIECE` records on average (below that a
  sub-cell's true work is mostly rounding);
* the division is along the side with more records in the cell, not always R (one R
  record against a million S records could not be divided along R);
* a record picks its sub-cell by its *position* (below), not at random;
* small items (≤ 1 % of the mean) are water-filled in cell order, not by size
  (:func:`cell_order_lpt`), so cells whose estimates are off do not pile up on one task.

**Cell range division** (003 Alg. 6). PairRange over cells: the cells, in index order,
lay their estimated work end to end on ``[0, L̂)``, which is cut into ``r`` equal ranges;
a cell inside one range is one match task, a cell cut by range bounds is cut into one
piece per range it meets, of its share of the work. Link: pieces along the side with
more records (the paper's "rows", each one record of that side × the whole other side);
every record of the other side goes to all ranges of its cell. Bound: ``1 + Δ/L``.

**Dedupe** (one source; the paper only treats link). A cell is a triangle of pairs.
Cell block division cuts a divided cell into ``D`` pieces and makes BlockSplit's tasks:
each piece alone (triangle) and each pair of pieces (rectangle), ``D(D+1)/2`` tasks of at
most the cap (``D = ⌈√(2·W_j/cap)⌉``), packed with LPT. Cell range division orders the
cell's records by position and numbers the pairs row-major, as PairRange does; the
pieces are bands of rows ``[u_k, u_{k+1})`` of the position axis, and band ``k`` holds
the pairs whose earlier record is in it: piece ``k`` alone and piece ``k`` × every later
piece. The work below position ``u`` is ``F(u) = 1 − (1 − u)²`` of the cell, so range
bound ``f`` becomes the band bound ``u = 1 − √(1 − f)``. A record of piece ``k`` goes to
the ranges of bands ``0 … k``, as PairRange sends a record to every range of an earlier
row of its block.

**Positions.** A record's position in ``[0, 1)`` (as a fraction of ``2^32``) spreads the
records of every block evenly over the cell: the ``c`` records of a block in one input
partition sit at ``(q + o)/c`` for their rank ``q`` there and a hashed offset ``o``
(:func:`erblock.engine.route.record_positions`). A piece of width ``f`` then gets ``f·c``
of them up to one record per partition, so every piece holds its share of every block and
the true work of a piece follows the estimate of its cell.

Profile: the planners take a :class:`~.sketch.SketchProfile` (what the engine's sketch
profile builds), or a :class:`~.bdm.BDM`, from which they build the same sketch
(a sketch is linear in the records, so this equals sketching the records). Options
(:class:`CellOptions`): ``sketch`` (a :class:`~.sketch.SketchSpec` or dict: kind, d, w, seed; w defaults to 64·r).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ...scalars import as_python, is_number
from ..bdm import BDM, SRC_R, SRC_S
from ..packing import Packing, lpt
from ..placement import POSITION_BITS, CellMap, CellPieces, WholeUnits
from ..plan import RECTANGLE, TRIANGLE, WHOLE, Details, MatchTasks, Plan, UnitBuilder
from ..sketch import CellWork, SketchProfile, as_sketch_spec, from_bdm
from .base import options_from_dict

DEFAULT_GRANULARITY = 8.0
PIECE = -2  #: ``part`` of a cell-piece unit (whole units have ``WHOLE``)
MIN_PIECE = 4  #: cell block division makes no sub-cell of fewer records (on average)
ESTIMATORS = ("bounded", "paper")
_ONE = 1 << POSITION_BITS


@dataclass(frozen=True)
class CellOptions:
    """Options of the cell strategies: ``sketch`` (a
    :class:`~erblock.balancing.sketch.SketchSpec` or its dict; None: FastAGMS, d = 5,
    w = 64·r), ``estimate`` (``"bounded"``, never undershooting, or the paper's
    ``"paper"``), and for cell block division ``granularity`` (sub-cells of about
    L̂/(granularity·r)) and ``packing`` (default: LPT, small cells in cell order)."""

    sketch: Any = None
    estimate: str = "bounded"
    granularity: float = DEFAULT_GRANULARITY
    packing: Packing | None = None

    def __post_init__(self) -> None:
        if self.sketch is not None:
            object.__setattr__(self, "sketch", as_sketch_spec(self.sketch))
        if self.estimate not in ESTIMATORS:
            raise ValueError(f"estimate must be one of {', '.join(ESTIMATORS)}, "
                             f"got {self.estimate!r}")
        g = self.granularity
        if not is_number(g) or not g >= 1:
            raise ValueError(f"granularity must be a number >= 1, got {g!r}")
        object.__setattr__(self, "granularity", as_python(g))  # NumPy's number as Python's

    def to_dict(self) -> dict[str, Any]:
        return {"sketch": None if self.sketch is None else self.sketch.to_dict(),
                "estimate": self.estimate, "granularity": self.granularity}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CellOptions:
        return options_from_dict(cls, d, "cell")


@dataclass(frozen=True)
class CellDetails(Details):
    unit_name: ClassVar[str] = "cell"
    sketch_kind: str
    sketch_d: int
    sketch_w: int
    sketch_seed: int
    sketch_bytes: int
    theta: int
    estimator: str
    estimated_total: float
    cells: int
    granularity: float | None = None
    divided_cells: int | None = None
    cut_cells: int | None = None


def sketch_profile(profile: BDM | SketchProfile, r: int, sketch: Any = None) -> SketchProfile:
    """The sketch profile to plan on: ``profile`` itself, or the sketch of a BDM."""
    if isinstance(profile, SketchProfile):
        if sketch is not None:
            spec = as_sketch_spec(sketch)
            if spec.w is None:
                spec = replace(spec, w=profile.spec.w)
            if spec != profile.spec:
                raise ValueError(f"sketch: {spec} differs from the profile's {profile.spec}; "
                                 "profile again with these settings or drop sketch=")
        return profile
    if isinstance(profile, BDM):
        return from_bdm(profile, as_sketch_spec(sketch).resolved(r))
    raise TypeError("cell strategies plan on a SketchProfile or a BDM, got "
                    f"{type(profile).__name__}")


def _cuts(fractions: np.ndarray) -> np.ndarray:
    """Interior cut points (fractions in (0, 1)) as integer positions in [1, 2^32)."""
    return np.clip(np.floor(np.asarray(fractions, dtype=np.float64) * _ONE), 1, _ONE - 1
                   ).astype(np.int64)


class _CellPlan:
    """Units, pieces and estimated match tasks of a cell plan, assembled into a Plan."""

    def __init__(self, prof: SketchProfile, cw: CellWork) -> None:
        self.prof, self.cw = prof, cw
        self.units = UnitBuilder()
        self.tasks: list[np.ndarray] = []  # rows: kind, left, right, reduce task (-1: pack)
        self.costs: list[np.ndarray] = []
        self.pieces: list[tuple[int, int, int, np.ndarray]] = []  # key, src, unit0, cuts

    def whole(self, cells: np.ndarray, reduce_task: np.ndarray | int) -> None:
        """Every cell of ``cells`` as one match task (on ``reduce_task``, -1: packed later)."""
        cw = self.cw
        work = cw.work[cells]
        if self.prof.link:
            ur = self.units.add_units(cells, SRC_R, WHOLE, WHOLE, cw.count_r[cells])
            us = self.units.add_units(cells, SRC_S, WHOLE, WHOLE, cw.count_s[cells])
            self.task(RECTANGLE, ur, us, work, reduce_task)
        else:
            u = self.units.add_units(cells, SRC_R, WHOLE, WHOLE, cw.count_r[cells])
            self.task(TRIANGLE, u, u, work, reduce_task)

    def task(self, kind: Any, left: Any, right: Any, cost: Any, reduce_task: Any) -> None:
        kind, left, right, cost, reduce_task = np.broadcast_arrays(
            np.asarray(kind, np.int64), np.asarray(left, np.int64), np.asarray(right, np.int64),
            np.asarray(cost, np.float64), np.asarray(reduce_task, np.int64))
        self.tasks.append(np.stack([kind, left, right, reduce_task]))
        self.costs.append(cost.copy())

    def split(self, cell: int, fractions: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Cut ``cell`` into pieces at ``fractions`` (increasing, in (0, 1)) of the side it is
        divided along (the one with more records); return the piece units, their widths,
        that side and, for link, the whole unit of the other side (−1 for dedupe)."""
        cw = self.cw
        link = self.prof.link
        side = SRC_R if (not link or cw.count_r[cell] >= cw.count_s[cell]) else SRC_S
        count = cw.count_r[cell] if side == SRC_R else cw.count_s[cell]
        cuts = _cuts(fractions)
        bounds = np.r_[0, cuts, _ONE].astype(np.float64) / _ONE
        widths = np.diff(bounds)
        sizes = np.rint(widths * count).astype(np.int64)
        ids = self.units.add_units(cell, side, PIECE, np.arange(len(widths)), sizes)
        self.pieces.append((cell, side, int(ids[0]), cuts))
        other = -1
        if link:
            o_src = SRC_S if side == SRC_R else SRC_R
            o_cnt = cw.count_s[cell] if side == SRC_R else cw.count_r[cell]
            other = int(self.units.add_units(cell, o_src, WHOLE, WHOLE, o_cnt)[0])
        return ids, widths, side, other

    def build(self, strategy: str, r: int, packing: Packing | None, details: dict[str, Any]
              ) -> Plan:
        units, _ = self.units.build()
        t = np.concatenate(self.tasks, axis=1) if self.tasks else np.zeros((4, 0), np.int64)
        cost = np.concatenate(self.costs) if self.costs else np.zeros(0)
        reduce_task = t[3].copy()
        pack = reduce_task < 0
        if pack.any():
            if packing is None:  # pragma: no cover - the planners always pass one
                raise ValueError("tasks left unassigned without a packing policy")
            reduce_task[pack] = np.asarray(packing(cost[pack], r), dtype=np.int64)
        comparisons = np.maximum(np.rint(cost), 1).astype(np.int64)
        match = MatchTasks(t[0], t[1], t[2], comparisons, reduce_task)
        if self.pieces:
            key = np.array([p[0] for p in self.pieces], dtype=np.int64)
            src = np.array([p[1] for p in self.pieces], dtype=np.int8)
            unit0 = np.array([p[2] for p in self.pieces], dtype=np.int64)
            h = np.array([len(p[3]) + 1 for p in self.pieces], dtype=np.int64)
            cut_indptr = np.zeros(len(key) + 1, dtype=np.int64)
            np.cumsum(h - 1, out=cut_indptr[1:])
            cuts = np.concatenate([p[3] for p in self.pieces]).astype(np.int64)
        else:
            key = unit0 = h = cuts = np.zeros(0, np.int64)
            src = key.astype(np.int8)
            cut_indptr = np.zeros(1, np.int64)
        prof, cw = self.prof, self.cw
        cells = CellMap(prof.spec, cw.theta)
        pieces = CellPieces(key, src, unit0, h, cut_indptr, cuts, cells)
        info = CellDetails(
            sketch_kind=prof.spec.kind, sketch_d=prof.spec.d, sketch_w=int(prof.spec.w or 0),
            sketch_seed=prof.spec.seed, sketch_bytes=prof.nbytes, theta=cw.theta,
            estimator=cw.estimator, estimated_total=cw.total,
            cells=int((cw.work > 0).sum()), **details)
        return Plan(strategy, r, prof.link, units, match, prof.n_records,
                    (WholeUnits.of(units, WHOLE, cells), pieces), info, estimated=True)


def cell_order_lpt(costs: np.ndarray, r: int) -> np.ndarray:
    """LPT for the cells above 1 % of the mean load, water filling for the rest *in cell
    order* rather than by size: sketch estimates of small cells are noisy, and sorted by
    estimate the cells whose counters cancelled would sit next to each other and fill the
    same reduce task; in cell order their errors are independent and average out."""
    return lpt(costs, r, small_in_order=True)


def sub_cells(work: np.ndarray, n_items: float) -> np.ndarray:
    """Sub-cells per cell so that the cells of at least half a quantum make about
    ``n_items`` sub-cells of nearly one quantum each (link).

    The quantum is ``q = (L̂ − small)/n_items``, ``small`` the work of the cells below
    ``q/2`` (kept whole: LPT's water filling spreads them). The others get ``⌊W/q⌋`` (at
    least 1) sub-cells, plus one for the largest remainders until they number
    ``n_items`` (Hamilton's apportionment). Rounding every cell up (the paper's
    ``⌈W·r/L̂⌉``) instead leaves a few sub-cells more than a multiple of ``r``, and
    whichever reduce task gets the extra one ends a whole quantum above the rest.
    """
    work = np.asarray(work, dtype=np.float64)
    d = np.ones(len(work), dtype=np.int64)
    total = work.sum()
    if total <= 0 or n_items < 1:
        return d
    q = total / n_items
    for _ in range(3):  # settle which cells count as small
        big = work >= q / 2
        q = max(work[big].sum(), 1e-300) / n_items
    big = work >= q / 2
    base = np.maximum(np.floor(work / q), 1).astype(np.int64)
    extra = int(round(n_items)) - int(base[big].sum())
    if extra > 0:
        rem = np.where(big, work / q - base, -np.inf)
        top = np.argsort(-rem, kind="stable")[:extra]
        base[top[np.isfinite(rem[top])]] += 1
    d[big] = base[big]
    return d


def _longest_side(cw: CellWork, cell: int, link: bool) -> int:
    return int(max(cw.count_r[cell], cw.count_s[cell]) if link else cw.count_r[cell])


def _thin_cuts(u: np.ndarray, tasks: np.ndarray, records: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Drop cuts that would leave a piece of less than one record's width (``1/records``):
    a too thin piece before a cut joins the next range's task, a too thin last piece
    stays with the task before it."""
    min_width = 1.0 / max(records, 1)
    keep_u: list[float] = []
    keep_t = [int(tasks[0])]
    last = 0.0
    for cut, t in zip(u.tolist(), tasks[1:].tolist()):
        if 1.0 - cut < min_width:
            break  # the rest of the cell is thinner than a record: it stays where it is
        if cut - last < min_width:
            keep_t[-1] = t  # the piece since the last cut is too thin: hand it on
            continue
        keep_u.append(cut)
        keep_t.append(t)
        last = cut
    return np.array(keep_u, dtype=np.float64), np.array(keep_t, dtype=np.int64)


