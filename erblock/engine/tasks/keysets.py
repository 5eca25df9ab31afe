"""Where a pair is compared when its records share several blocks (worker side).

A pair is compared once: in the first key pass it agrees on, and, in a pass whose key is
multi-valued (tokens, q-grams, MinHash bands), only in the block of the smallest key id
the two records share ("Don't match twice", Kolb, Thor and Rahm). Both rules are decided
from the two records' own keys, which every prepared row carries
(:func:`erblock.engine.tasks.prepare.key_lists`), so no task needs another's data.

:class:`PassKeys` holds the keys of one reduce task's two sides for every pass: a
single-valued pass as one int64 id per row, a multi-valued pass as row × key
incidences over one vocabulary shared by both sides (:class:`Incidence`: compressed
rows, key codes in id order). For a multi-valued pass ``q`` the left incidence keeps,
per row, what rules the pair out: all its keys of pass ``q`` when the row belongs to a
later pass, its keys smaller than its own block when it belongs to pass ``q``, nothing
when to an earlier pass. A pair is redundant when that row shares a key with the right
record's pass-``q`` keys (:func:`shared_cells`, :func:`shared_aligned`).

A sorted-neighbourhood pass ``q`` (its window ``w`` given by the engine) keeps each
record's position in the order; in its own blocks a pair stays when the two records are
less than ``w`` apart and the earlier one lies in the block's first chunk (the row's
``WINDOW``), and in later passes a pair less than ``w`` apart is ruled out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy import sparse

from ...blocking.keys import NULL_BLOCK
from ..schema import WINDOW, key_column

_NULL = np.int64(NULL_BLOCK)


def _lists(records: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(row of every key, key id) of a packed key column (int64 bytes per row)."""
    arr = pa.array(records[column].array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset:arr.offset + n + 1]
    data = arr.buffers()[2]
    raw = (np.frombuffer(data, dtype=np.uint8)[offs[0]:offs[-1]] if data is not None
           else np.zeros(0, np.uint8))
    ids = np.frombuffer(raw.tobytes(), dtype="<i8").astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(offs) // 8)
    return rows, ids


def _packed(dtype: object) -> bool:
    """Whether a key column holds packed key lists (arrow binary), not one id per row."""
    return isinstance(dtype, pd.ArrowDtype) and pa.types.is_binary(dtype.pyarrow_dtype)


#: a row chunk whose two slices share at most this many (row, column, key) triples is
#: joined with numpy (:func:`shared_cells`), a larger one multiplied by scipy; measured on
#: Zipf-like token sets, the join is faster up to ~2e5 triples when the two rows of a cell
#: share one key, about half as fast once they share two or more (the product merges
#: them, the join lists each)
JOIN_MAX_TRIPLES = 1 << 16


@dataclass
class Incidence:
    """Row × key incidence in compressed-row form: row ``i``'s keys are
    ``keys[start[i]:start[i + 1]]``, codes in [0, n_keys), any order."""

    start: np.ndarray
    keys: np.ndarray
    n_keys: int

    @classmethod
    def of(cls, rows: np.ndarray, keys: np.ndarray, n_rows: int, n_keys: int) -> Incidence:
        """From (row, key code) entries whose rows are non-decreasing."""
        return cls(np.searchsorted(rows, np.arange(n_rows + 1)), keys, n_keys)

    @cached_property
    def matrix(self) -> sparse.csr_matrix:
        """All rows as a scipy CSR matrix (built once; only ever row-indexed, which
        copies, so it never changes the arrays it shares)."""
        return self.rows_matrix(0, len(self.start) - 1)

    def rows_matrix(self, a: int, b: int) -> sparse.csr_matrix:
        """Rows [a, b) as a scipy CSR matrix, made from the slices (no scipy slicing)."""
        lo, hi = int(self.start[a]), int(self.start[b])
        return sparse.csr_matrix((np.ones(hi - lo, np.int32), self.keys[lo:hi],
                                  self.start[a:b + 1] - lo), shape=(b - a, self.n_keys))

    def entries(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """(row − a, key) of every entry of rows [a, b)."""
        lo, hi = int(self.start[a]), int(self.start[b])
        rows = np.repeat(np.arange(b - a, dtype=np.int64), np.diff(self.start[a:b + 1]))
        return rows, self.keys[lo:hi]


def shared_cells(left: Incidence, right: Incidence, a: int, b: int, c: int, d: int
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """The cells (row − a, column − c) of rows [a, b) of ``left`` × rows [c, d) of
    ``right`` whose two rows share a key (a cell may come more than once); None if none.

    The non-zeros of the product of the two incidences. A small one (at most
    :data:`JOIN_MAX_TRIPLES`) is a join of the two slices' key arrays with numpy: a
    triangle's row chunks ask this hundreds of times per task, and scipy's per-call cost
    was most of a token-blocking task's time; a larger one is scipy's product, which
    merges the keys a cell's two rows share."""
    if left.start[a] == left.start[b] or right.start[c] == right.start[d]:
        return None
    lrows, lkeys = left.entries(a, b)
    rcols, rkeys = right.entries(c, d)
    order = np.argsort(rkeys)
    sorted_keys, rcols = rkeys[order], rcols[order]
    lo = np.searchsorted(sorted_keys, lkeys, side="left")
    count = np.searchsorted(sorted_keys, lkeys, side="right") - lo
    total = int(count.sum())
    if total == 0:
        return None
    if total > JOIN_MAX_TRIPLES:
        shared = (left.rows_matrix(a, b) @ right.rows_matrix(c, d).T).tocoo()
        return shared.row, shared.col
    # each left entry's run of right positions lo .. lo + count - 1, laid end to end
    start = np.repeat(lo - (np.cumsum(count) - count), count)
    return np.repeat(lrows, count), rcols[start + np.arange(total)]


def shared_aligned(left: Incidence, right: Incidence, li: np.ndarray, rj: np.ndarray
                   ) -> np.ndarray:
    """Whether the aligned pairs (row ``li[k]`` of ``left``, row ``rj[k]`` of ``right``)
    share a key: scipy's row-wise product of the gathered rows, which merges each pair's
    two key lists in one pass (a join of all the pairs' keys would sort them)."""
    if not len(li) or not len(left.keys) or not len(right.keys):
        return np.zeros(len(li), dtype=bool)
    return np.asarray(left.matrix[li].multiply(right.matrix[rj]).getnnz(axis=1)) > 0


class PassKeys:
    """Every pass's keys of a reduce task's left and right rows (right may be left)."""

    def __init__(self, left: pd.DataFrame, right: pd.DataFrame | None, n_passes: int,
                 left_block: np.ndarray, left_pass: np.ndarray,
                 windows: Sequence[int] = ()) -> None:
        self.n_passes = n_passes
        self.single: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.multi: dict[int, tuple[Incidence, Incidence]] = {}
        #: sorted-neighbourhood passes: positions of both sides and the window
        self.window: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        self.chunk = (left[WINDOW].to_numpy(np.int64) if WINDOW in left.columns
                      else np.zeros(0, np.int64))
        cols = [key_column(p) for p in range(n_passes)]
        if not all(c in left.columns for c in cols):
            return  # one single-valued pass: nothing to rule out
        other = left if right is None else right
        for q, col in enumerate(cols):
            w = int(windows[q]) if q < len(windows) else 0
            if _packed(left[col].dtype):  # packed key lists (prepare.key_lists)
                self.multi[q] = self._sets(left, other, col, q, left_block, left_pass)
                continue
            lk = left[col].to_numpy(np.int64)
            rk = lk if right is None else other[col].to_numpy(np.int64)
            if w:
                self.window[q] = (lk, rk, w)
            elif WINDOW in left.columns and (left_pass == q).any() and (
                    self.chunk[left_pass == q] >= 0).any():
                raise RuntimeError(f"pass {q} is a sorted-neighbourhood pass, but its window "
                                   "was not given to the comparer")
            else:
                self.single[q] = (lk, rk)

    @property
    def active(self) -> bool:
        """Whether any pair can be redundant (several passes, or a multi-valued pass)."""
        return bool(self.multi) or bool(self.window) or len(self.single) > 1

    def _windows(self, a: np.ndarray, b: np.ndarray, lp: np.ndarray, chunk: np.ndarray,
                 lpos: np.ndarray, rpos: np.ndarray, q: int, w: int) -> np.ndarray:
        """Whether pairs (broadcast ``a`` × ``b`` index arrays) are ruled out by the
        sorted-neighbourhood pass ``q``: in its own blocks, pairs ``window`` or more apart
        and pairs whose earlier record is not in the block's first chunk; in later passes,
        pairs it compares."""
        pa_, pb = lpos[a], rpos[b]
        near = (np.abs(pa_ - pb) < w) & (pa_ >= 0) & (pb >= 0)
        own = lp == q
        first = np.minimum(pa_, pb) // w == chunk
        return np.where(own, ~(near & first), (lp > q) & near)

    @staticmethod
    def _sets(left: pd.DataFrame, right: pd.DataFrame, col: str, q: int,
              block: np.ndarray, passes: np.ndarray) -> tuple[Incidence, Incidence]:
        lr, lid = _lists(left, col)
        rr, rid = (lr, lid) if right is left else _lists(right, col)
        vocab, lc, rc = _coded(lid, rid)
        # which of a left row's keys rule a pair out (module docstring)
        row_pass = passes[lr]
        own = np.searchsorted(vocab, block[lr])
        rules = (row_pass > q) | ((row_pass == q) & (lc < own))
        n_keys = len(vocab)
        return (Incidence.of(lr[rules], lc[rules], len(left), n_keys),
                Incidence.of(rr, rc, len(right), n_keys))

    def dense_mask(self, li: np.ndarray, rj: np.ndarray, lp: np.ndarray) -> np.ndarray | None:
        """False where the pair (li[a], rj[b]) is compared in another pass or block
        (None: every pair stays). ``li``/``rj`` are contiguous ranges of row positions;
        ``lp`` is the pass of the left rows."""
        mask: np.ndarray | None = None
        top = int(lp.max()) if len(lp) else -1
        for q, (lk, rk) in self.single.items():
            if q >= top:
                continue
            a, b = lk[li], rk[rj]
            earlier = (a[:, None] == b[None, :]) & ((a != _NULL) & (lp > q))[:, None]
            mask = ~earlier if mask is None else mask & ~earlier
        for q, (lpos, rpos, w) in self.window.items():
            if q > top:
                continue
            out = self._windows(li[:, None], rj[None, :], lp[:, None],
                                self.chunk[li][:, None], lpos, rpos, q, w)
            mask = ~out if mask is None else mask & ~out
        for linc, rinc in self.multi.values():
            shared = shared_cells(linc, rinc, int(li[0]), int(li[-1]) + 1, int(rj[0]),
                                  int(rj[-1]) + 1)
            if shared is not None:
                if mask is None:
                    mask = np.ones((len(li), len(rj)), dtype=bool)
                mask[shared] = False
        return mask

    def aligned_mask(self, li: np.ndarray, rj: np.ndarray, lp: np.ndarray) -> np.ndarray:
        """True where the aligned pair (li[k], rj[k]) is compared here."""
        keep = np.ones(len(li), dtype=bool)
        for q, (lk, rk) in self.single.items():
            a, b = lk[li], rk[rj]
            keep &= ~((a == b) & (a != _NULL) & (lp > q))
        for q, (lpos, rpos, w) in self.window.items():
            keep &= ~self._windows(li, rj, lp, self.chunk[li], lpos, rpos, q, w)
        for linc, rinc in self.multi.values():
            keep &= ~shared_aligned(linc, rinc, li, rj)
        return keep


def _coded(lid: np.ndarray, rid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both sides' raw key ids as codes of one sorted vocabulary: (vocab, left, right)."""
    # a hash factorisation and a sort of the distinct ids: np.unique's inverse sorts all
    codes, uniques = pd.factorize(np.concatenate([lid, rid]))
    order = np.argsort(uniques)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    inv = rank[codes]
    return uniques[order], inv[:len(lid)], inv[len(lid):]


def first_shared(left: pd.DataFrame, right: pd.DataFrame | None, n_passes: int,
                 windows: Sequence[int], rows: slice, cols: slice) -> np.ndarray | None:
    """The first key pass each pair (``left[rows]`` × ``right[cols]``) agrees on, −1
    where none does (None when the rows carry no per-pass keys: one single-valued pass).
    Random record pairs counted by it tell which of them an earlier pass would have found
    (:func:`erblock.matchers.scoring.implied.u_before`)."""
    cols_ = [key_column(p) for p in range(n_passes)]
    if n_passes < 2 or not all(c in left.columns for c in cols_):
        return None
    other = left if right is None else right
    nl, nr = len(range(*rows.indices(len(left)))), len(range(*cols.indices(len(other))))
    first = np.full((nl, nr), -1, dtype=np.int8)
    for q in range(n_passes - 1, -1, -1):
        col, w = cols_[q], (int(windows[q]) if q < len(windows) else 0)
        if _packed(left[col].dtype):
            lr, lid = _lists(left.iloc[rows], col)
            rr, rid = _lists(other.iloc[cols], col)
            vocab, lc, rc = _coded(lid, rid)
            shared = shared_cells(Incidence.of(lr, lc, nl, len(vocab)),
                                  Incidence.of(rr, rc, nr, len(vocab)), 0, nl, 0, nr)
            if shared is not None:
                first[shared] = q
            continue
        a = left[col].to_numpy(np.int64)[rows][:, None]
        b = other[col].to_numpy(np.int64)[cols][None, :]
        if w:  # sorted neighbourhood: positions less than the window apart
            agree = (np.abs(a - b) < w) & (a >= 0) & (b >= 0)
        else:
            agree = (a == b) & (a != _NULL)
        first[agree] = q
    return first
