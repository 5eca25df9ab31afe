"""The records of a reduce task as the comparer sees them, and its results as they are
collected (worker side).

:class:`Side` sorts a task's routed records by (unit, block, record id), so every unit, and
every block inside a unit, is a contiguous slice, and prepares each compared column once
(comparisons whose methods prepare alike share it). :func:`structure_mask` keeps a pair
exact when a unit mixes blocks or key passes; :class:`Collector` gathers kept pairs and
:func:`assemble` turns them into the pairs frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...matchers.comparisons import Comparison
from ...matchers.methods import Prepared
from ...matchers.scoring.base import PASS_COLUMN
from ...matchers.scoring.base import value_column as pair_value_column
from ..schema import BLOCK, ID, PASS, RANK, RID, UNIT, value_column
from .encoded import Encoded, joint_codes
from .encoded import encode as encode_column
from .keysets import PassKeys


@dataclass
class TaskCounter:
    """What one reduce task did, counted while it runs (see :class:`erblock.report.TaskStats`)."""

    task: int
    comparisons: int = 0
    pairs: int = 0
    records: int = 0
    match_tasks: int = 0
    seconds: float = 0.0
    cells: int = 0  #: similarity cells computed (comparisons plus what masks discard)
    kernel_calls: int = 0


class Side:
    """Prepared columns of a frame of records, sorted by (unit, block, rid)."""

    def __init__(self, records: pd.DataFrame, comparisons: Sequence[Comparison],
                 col_index: dict[str, int], n_passes: int, encode: str = "auto",
                 windows: Sequence[int] = ()) -> None:
        if len(records):
            records = records.sort_values([UNIT, BLOCK, RID], kind="stable")
        self.records = records
        self.ids = records[ID].to_numpy()
        self.rid = records[RID].to_numpy()
        self.block = records[BLOCK].to_numpy()
        self.unit = records[UNIT].to_numpy()
        self.rank = (records[RANK].to_numpy() if RANK in records.columns
                     else np.full(len(records), -1, dtype=np.int64))
        self.passes = records[PASS].to_numpy()
        self.n_passes = n_passes
        self.windows = tuple(windows)  #: window of every sorted-neighbourhood pass (else 0)
        self.pair_keys: PassKeys | None = None  #: set by :meth:`rules_against`
        #: per comparison, codes of both sides in one space for ``exact`` (encoded.py)
        self.equal_codes: list[tuple[np.ndarray, np.ndarray] | None] = []
        # comparisons whose methods prepare a column alike share the prepared values
        cache: dict[tuple[int, Any], Prepared] = {}
        codes: dict[tuple[int, Any], Encoded | None] = {}
        self.values: list[Prepared] = []
        self.encoded: list[Encoded | None] = []  # codes of each column (encoded.py)
        self.encode_mode = encode  #: "auto", "always" or "never" (block_encoding)
        for c in comparisons:
            i = col_index[c.column]
            key = (i, c.kernel.prepare_key())
            if key not in cache:
                cache[key] = c.prepare(records[value_column(i)])
                codes[key] = encode_column(cache[key]) if encode != "never" else None
            self.values.append(cache[key])
            self.encoded.append(codes[key])

    def rules_against(self, right: Side) -> None:
        """Learn the keys that decide where this side's pairs with ``right`` are compared
        (:mod:`.keysets`); needed before any pair is compared."""
        keys = PassKeys(self.records, None if right is self else right.records,
                        self.n_passes, self.block, self.passes, self.windows)
        self.pair_keys = keys if keys.active else None

    def share_codes(self, right: Side, comparisons: Sequence[Comparison]) -> None:
        """Codes of this side's and ``right``'s values in one space, for the comparisons
        that are value equality (``exact``): blocks then compare codes, not values."""
        self.equal_codes = [
            joint_codes(le, None if right is self else re)
            if c.kernel.equality and le is not None and re is not None else None
            for c, le, re in zip(comparisons, self.encoded, right.encoded)]

    def slice_of(self, unit: int) -> tuple[int, int]:
        lo = int(np.searchsorted(self.unit, unit, side="left"))
        hi = int(np.searchsorted(self.unit, unit, side="right"))
        return lo, hi


def structure_mask(left: Side, right: Side, li: np.ndarray, rj: np.ndarray) -> np.ndarray | None:
    """Pairs of rows ``li`` × columns ``rj`` (contiguous ranges) allowed by block equality
    and the compared-once rules (None = all)."""
    mask = None
    lb, rb = left.block[li], right.block[rj]
    if lb.min() != lb.max() or rb.min() != rb.max() or lb[0] != rb[0]:
        mask = lb[:, None] == rb[None, :]
    if left.pair_keys is not None:
        # where blocks are equal both rows are of the same pass (block ids are mixed with
        # the pass), so the left row's pass is the pair's, in units that mix passes too
        once = left.pair_keys.dense_mask(li, rj, left.passes[li])
        if once is not None:
            mask = once if mask is None else mask & once
    return mask


class Collector:
    """Kept pairs as they are found: positions in the two sides, similarities, score.

    With ``on_full`` set (a streaming writer), it is called whenever ``flush_rows`` pairs
    have gathered; it takes them with :meth:`drain`, so a task holds at most about
    ``flush_rows`` kept pairs whatever its keep rate."""

    def __init__(self, n_comp: int) -> None:
        self.left: list[np.ndarray] = []
        self.right: list[np.ndarray] = []
        self.sims: list[list[np.ndarray]] = [[] for _ in range(n_comp)]
        self.score: list[np.ndarray] = []
        self.cells = 0
        self.kernel_calls = 0
        self.rows = 0  #: kept pairs held now
        self.flush_rows = 0
        self.on_full: Callable[[], None] | None = None

    def keep(self, li: np.ndarray, rj: np.ndarray, sims: Sequence[np.ndarray],
             score: np.ndarray) -> None:
        """Keep pairs (positions in the two sides, a similarity array per comparison, the
        score); flush when ``flush_rows`` have gathered."""
        if not len(li):
            return
        self.left.append(li)
        self.right.append(rj)
        for k, v in enumerate(sims):
            self.sims[k].append(v)
        self.score.append(score)
        self.rows += len(li)
        if self.on_full is not None and self.rows >= self.flush_rows:
            self.on_full()

    def drain(self) -> Collector:
        """The pairs held so far (as a collector of their own); this one is emptied."""
        out = Collector(len(self.sims))
        out.left, out.right, out.sims, out.score = self.left, self.right, self.sims, self.score
        out.rows = self.rows
        self.left, self.right, self.score = [], [], []
        self.sims = [[] for _ in out.sims]
        self.rows = 0
        return out


def assemble(left: Side, right: Side, out: Collector, comparisons: Sequence[Comparison],
              dedupe: bool, id_dtypes: tuple[object, object],
              pair_values: Sequence[Comparison] = (), col_index: dict[str, int] | None = None,
              pass_of_pair: bool = False) -> pd.DataFrame:
    if out.left:
        li, rj = np.concatenate(out.left), np.concatenate(out.right)
    else:
        li = rj = np.zeros(0, dtype=np.int64)
    passes = left.passes[li]  # both records of a pair are rows of the same pass
    if dedupe and len(li):
        # orient every pair so that left comes first in the input
        swap = left.rid[li] > right.rid[rj]
        li, rj = np.where(swap, rj, li), np.where(swap, li, rj)
    data = {
        "left_id": pd.Series(left.ids[li]).astype(id_dtypes[0]),
        "right_id": pd.Series(right.ids[rj]).astype(id_dtypes[1]),
    }
    for k, c in enumerate(comparisons):
        vals = np.concatenate(out.sims[k]) if out.sims[k] else np.zeros(0, np.float32)
        data[c.name] = vals.astype(np.float64)
    score = np.concatenate(out.score) if out.score else np.zeros(0, np.float32)
    data["score"] = score.astype(np.float64)
    for c in pair_values:
        assert col_index is not None
        data[pair_value_column(c.name)] = left.records[value_column(col_index[c.column])
                                                      ].to_numpy(dtype=object)[li]
    if pass_of_pair:
        data[PASS_COLUMN] = passes.astype(np.int8)
    return pd.DataFrame(data)
