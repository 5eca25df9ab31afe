"""The records of a reduce task as the comparer sees them, and its results as they are
collected (worker side).

:class:`Side` sorts a task's routed records by (unit, block, record id), so every unit, and
every block inside a unit, is a contiguous slice, and prepares each compared column once
(comparisons whose methods prepare alike share it). :func:`structure_mask` keeps a pair
exact when a unit mixes blocks or key passes; :class:`Collector` gathers kept pairs and
:func:`assemble` turns them into the pairs frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...matchers.comparisons import Comparison
from ...matchers.scoring.base import PASS_COLUMN
from ...matchers.scoring.base import value_column as pair_value_column
from ..schema import BLOCK, ID, PASS, RANK, RID, UNIT, value_column
from .encoded import joint_codes, prepare_columns
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
    small_comparisons: int = 0  #: of the comparisons, those in small match tasks


class Side:
    """Prepared columns of a frame of records, sorted by (unit, block, rid)."""

    def __init__(self, records: pd.DataFrame, comparisons: Sequence[Comparison],
                 col_index: dict[str, int], n_passes: int, encode: str = "auto",
                 windows: Sequence[int] = ()) -> None:
        if len(records):  # np.lexsort: pandas' sort by several columns factorises each
            order = np.lexsort((records[RID].to_numpy(), records[BLOCK].to_numpy(),
                                records[UNIT].to_numpy()))
            records = records.iloc[order]
        self.records = records
        self.ids = records[ID].to_numpy()
        self.rid = records[RID].to_numpy()
        self.block = records[BLOCK].to_numpy()
        self.unit = records[UNIT].to_numpy()
        self.rank = (records[RANK].to_numpy() if RANK in records.columns
                     else np.full(len(records), -1, dtype=np.int64))
        self.passes = records[PASS].to_numpy()
        self._id_dictionary: Any = None  # (codes, arrow dictionary) of text ids, once
        self.n_passes = n_passes
        self.windows = tuple(windows)  #: window of every sorted-neighbourhood pass (else 0)
        self.pair_keys: PassKeys | None = None  #: set by :meth:`rules_against`
        #: per comparison, codes of both sides in one space for ``exact`` (encoded.py)
        self.equal_codes: list[tuple[np.ndarray, np.ndarray] | None] = []
        self.encode_mode = encode  #: "auto", "always" or "never" (block_encoding)
        #: per comparison, its prepared values and their codes (encoded.py); comparisons
        #: whose methods prepare a column alike share them
        self.values, self.encoded = prepare_columns(
            records, comparisons, [value_column(col_index[c.column]) for c in comparisons],
            encode)

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

    def id_array(self, rows: np.ndarray, dtype: object) -> Any:
        """The ids of ``rows`` as an arrow array: integers as they are, text as a
        dictionary array over the distinct ids among ``rows`` (a row group's dictionary
        page holds only what it uses); None for other id dtypes (bytes, mixed, nullable:
        the frame path keeps them)."""
        import pyarrow as pa

        if self.ids.dtype.kind in "iu" and self.ids.dtype == dtype:
            return pa.array(self.ids[rows])
        if self._id_dictionary is None:
            text = (self.ids.dtype == object
                    and pd.api.types.is_string_dtype(dtype)  # type: ignore[arg-type]
                    and pd.api.types.infer_dtype(self.ids, skipna=False) in ("string", "empty"))
            if not text:
                self._id_dictionary = False
                return None
            codes, uniques = pd.factorize(self.ids, use_na_sentinel=False)
            self._id_dictionary = (codes, pa.array(uniques, type=pa.string()))
        if self._id_dictionary is False:
            return None
        codes, dictionary = self._id_dictionary
        used, local = pd.factorize(codes[rows])  # ids of these rows only, hashed
        return pa.DictionaryArray.from_arrays(pa.array(used.astype(np.int32)),
                                              dictionary.take(pa.array(local, type=pa.int64())))

    def slice_of(self, unit: int) -> tuple[int, int]:
        """Positions [lo, hi) of the records of ``unit``."""
        lo, hi = self.slices_of(np.array([unit], dtype=np.int64))
        return int(lo[0]), int(hi[0])

    def slices_of(self, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`slice_of` for many units at once (int64 arrays)."""
        return (np.searchsorted(self.unit, units, side="left").astype(np.int64),
                np.searchsorted(self.unit, units, side="right").astype(np.int64))


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


def structure_chunks(left: Side, right: Side, l0: int, l1: int, r0: int, r1: int,
                     triangle: bool, chunk: int
                     ) -> Iterator[tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray | None]]:
    """The row chunks of rows [l0, l1) × columns [r0, r1): ``(a, b, c0, li, rj, mask)``
    for rows [a, b) against columns [c0, r1) (a triangle's chunk meets only the columns
    after its first row), with :func:`structure_mask` and, for a triangle, only the
    cells right of the diagonal (None = every cell)."""
    for a in range(l0, l1, chunk):
        b = min(a + chunk, l1)
        c0 = a + 1 if triangle else r0
        if c0 >= r1:
            return
        li, rj = np.arange(a, b), np.arange(c0, r1)
        mask = structure_mask(left, right, li, rj)
        if triangle:
            tri = rj[None, :] > li[:, None]
            mask = tri if mask is None else mask & tri
        yield a, b, c0, li, rj, mask


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
             score: np.ndarray | None) -> None:
        """Keep pairs (positions in the two sides, a similarity array per comparison, the
        score: None for candidates, which have neither); flush when ``flush_rows`` have
        gathered."""
        if not len(li):
            return
        self.left.append(li)
        self.right.append(rj)
        for k, v in enumerate(sims):
            self.sims[k].append(v)
        if score is not None:
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


def _pair_rows(left: Side, right: Side, out: Collector, dedupe: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of the collected pairs in the two sides (a dedupe's pairs oriented so
    that left comes first in the input)."""
    if out.left:
        li, rj = np.concatenate(out.left), np.concatenate(out.right)
    else:
        li = rj = np.zeros(0, dtype=np.int64)
    if dedupe and len(li):
        swap = left.rid[li] > right.rid[rj]
        li, rj = np.where(swap, rj, li), np.where(swap, li, rj)
    return li, rj


def _similarities(out: Collector, comparisons: Sequence[Comparison]
                  ) -> dict[str, np.ndarray]:
    """Each comparison's similarities and the score, float32 as computed (no rounding);
    nothing for candidates (no comparison)."""
    data = {c.name: np.concatenate(out.sims[k]) if out.sims[k] else np.zeros(0, np.float32)
            for k, c in enumerate(comparisons)}
    if comparisons:
        data["score"] = np.concatenate(out.score) if out.score else np.zeros(0, np.float32)
    return data


def assemble(left: Side, right: Side, out: Collector, comparisons: Sequence[Comparison],
              dedupe: bool, id_dtypes: tuple[object, object],
              pair_values: Sequence[Comparison] = (), col_index: dict[str, int] | None = None,
              pass_of_pair: bool = False) -> pd.DataFrame:
    """The collected pairs as a pairs frame (ids in their input dtypes)."""
    li, rj = _pair_rows(left, right, out, dedupe)
    data: dict[str, Any] = {
        "left_id": pd.Series(left.ids[li]).astype(id_dtypes[0]),
        "right_id": pd.Series(right.ids[rj]).astype(id_dtypes[1]),
        **_similarities(out, comparisons),
    }
    for c in pair_values:
        assert col_index is not None
        data[pair_value_column(c.name)] = left.records[value_column(col_index[c.column])
                                                      ].array.take(li)  # dtype kept
    if pass_of_pair:  # both records of a pair are rows of the same pass
        data[PASS_COLUMN] = left.passes[li].astype(np.int8)
    # the columns are new arrays: taken as they are, not consolidated into one block
    # per dtype (a copy of every column: ~0.1 s a 5-million-pair task)
    return pd.DataFrame(data, copy=False)


def pair_table(left: Side, right: Side, out: Collector, comparisons: Sequence[Comparison],
               dedupe: bool, id_dtypes: tuple[object, object], pass_of_pair: bool = False
               ) -> Any:
    """The collected pairs as an arrow table for the parquet writer, built without pandas:
    integer ids as they are, text ids as dictionary columns over the task's distinct ids
    (no string is copied per pair). None when an id column is neither (the writer then
    takes :func:`assemble`'s frame, which keeps any dtype)."""
    import pyarrow as pa

    li, rj = _pair_rows(left, right, out, dedupe)
    lid, rid = left.id_array(li, id_dtypes[0]), right.id_array(rj, id_dtypes[1])
    if lid is None or rid is None:
        return None
    cols = {"left_id": lid, "right_id": rid, **_similarities(out, comparisons)}
    if pass_of_pair:
        cols[PASS_COLUMN] = left.passes[li].astype(np.int8)
    return pa.table(cols)
