"""Dictionary-encoded compare (worker side): each distinct value pair once per block.

Real blocks repeat values (first names, cities, a surname shared by the whole block), so
inside a match task the *distinct* value pairs are often a small fraction of the record
pairs. :class:`Side` encodes every prepared column once per reduce task
(:func:`encode`: an int32 code per record and the distinct prepared values); for a block
(``l0:l1`` × ``r0:r1`` of the two sides) :func:`block_encoding` decides per comparison
whether to compute the similarity of the distinct values present on each side once
(``cdist``-style over distinct × distinct) and gather every pair's value by code, or to
stay on the direct per-pair path. The choice is made from the counts the task sees:
encoded when the distinct pairs are at most ``ENCODE_SHARE`` of the block's cells (a
gather costs a fraction of a string comparison) and fit in ``ENCODE_MAX_CELLS``.

The values are those of the same kernel on the same prepared values, so they are
bit-identical to the direct path (tested on hypothesis-generated frames).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...matchers.comparisons import Comparison
from ...matchers.methods import Prepared
from .mean import cell_positions, mean_score

ENCODE_SHARE = 0.25  #: encoded when distinct pairs <= this share of the block's cells
ENCODE_MIN_CELLS = 1 << 14  #: blocks with fewer cells go direct (the set-up would dominate)
ENCODE_MAX_CELLS = 1 << 22  #: the distinct-pair matrix at most this big (16 MiB float32)
#: row chunks of a block whose comparisons are all encoded: lookups and sums are bound by
#: memory bandwidth, and chunks of 1 MiB per array stay in cache (measured ~1.4x faster
#: than 2**21 cells on 444 M person pairs, three comparisons)
ENCODED_CHUNK_CELLS = 1 << 18


@dataclass(frozen=True)
class Encoded:
    """A prepared column as codes: ``uniques.take(codes)`` gives back every record's
    prepared values (missing records share the last code, whose value is missing)."""

    codes: np.ndarray  # int32 per record
    uniques: Prepared


def row_codes(rows: np.ndarray) -> np.ndarray:
    """A code per row of a table, equal rows alike, numbered in order of first appearance:
    what factorizing the rows as tuples gives (missing values equal one another). Wide
    integer tables by one sort of their rows' bytes; others column by column on integer
    codes instead of through a MultiIndex of tuples (~10x faster)."""
    n = len(rows)
    if n and rows.ndim == 2 and rows.shape[1] >= 16 and rows.dtype.kind in "iub":
        # wide integer tables (token sets): equal rows are equal bytes, so one sort of the
        # rows as bytes (measured 2x faster at 150 columns, slower below ~10)
        flat = np.ascontiguousarray(rows).view(
            np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first)] = np.arange(len(first))  # numbered by first appearance
        return rank[inverse.ravel()]
    combined = np.zeros(n, dtype=np.int64)
    span = 1  # combined < span
    for j in range(rows.shape[1]):
        codes, uniques = pd.factorize(rows[:, j], use_na_sentinel=False)
        k = max(len(uniques), 1)
        if span * k >= 2**62:  # renumber densely (< n) before the next column
            combined, dense = pd.factorize(combined)
            span = max(len(dense), 1)
        combined = combined * k + codes
        span *= k
    return pd.factorize(combined)[0] if n else combined


def prepare_columns(frame: pd.DataFrame, comparisons: Sequence[Comparison],
                    columns: Sequence[str], mode: str = "auto"
                    ) -> tuple[list[Prepared], list[Encoded | None]]:
    """Each comparison's prepared values of ``frame[columns[k]]`` and their codes (None
    with ``mode="never"``, the run's ``encode=`` option). Comparisons of one column whose
    methods prepare it alike (equal ``prepare_key``) share one preparation."""
    done: dict[tuple[str, Any], tuple[Prepared, Encoded | None]] = {}
    for c, col in zip(comparisons, columns):
        key = (col, c.kernel.prepare_key())
        if key not in done:
            p = c.prepare(frame[col])
            done[key] = (p, None if mode == "never" else encode(p))
    held = [done[(col, c.kernel.prepare_key())] for c, col in zip(comparisons, columns)]
    return [p for p, _ in held], [e for _, e in held]


def encode(p: Prepared) -> Encoded | None:
    """The codes and distinct values of a prepared column (None if its values cannot be
    told apart by equality, e.g. unhashable objects)."""
    v = p.values
    n = len(v)
    try:
        if v.ndim == 1:
            codes, _ = pd.factorize(v, use_na_sentinel=True)
        else:  # a table per record (dates, e-mail parts, token sets): equal rows, one code
            codes = row_codes(v.reshape(n, -1))
    except (TypeError, ValueError):
        return None
    codes = np.asarray(codes, dtype=np.int64).ravel()
    if (codes[~p.missing] < 0).any():  # a present value factorize calls missing (NaN)
        return None
    codes[p.missing] = -1
    present = codes >= 0
    # renumber the present values 0..k-1 (factorize leaves gaps where missing values were)
    uniq_codes, first, dense = np.unique(codes[present], return_index=True,
                                         return_inverse=True)
    rows = np.flatnonzero(present)[first]
    k = len(uniq_codes)
    out = np.full(n, k, dtype=np.int32)
    out[present] = dense.ravel()
    miss_row = np.flatnonzero(~present)[:1]
    take = np.concatenate([rows, miss_row])
    missing = np.zeros(len(take), dtype=bool)
    missing[k:] = True
    return Encoded(out, Prepared(v[take], missing))


@dataclass
class BlockCodes:
    """One comparison of one block on the encoded path: the distinct-pair similarities and
    each row's / column's index into them."""

    matrix: np.ndarray  # (distinct left × distinct right) float32
    rows: np.ndarray  # per left record of the block: its row in ``matrix``
    cols: np.ndarray  # per right record of the block: its column in ``matrix``

    def gather(self, a: int, b: int, c: int, d: int) -> np.ndarray:
        """Similarities of block rows [a, b) × columns [c, d) (positions in the block)."""
        # two 1-D takes: ~4x faster than one 2-D fancy index on a chunk
        return self.matrix.take(self.rows[a:b], axis=0).take(self.cols[c:d], axis=1)

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Similarities of the aligned block positions (rows[i], cols[i]): what
        :meth:`gather` gives at those cells."""
        return self.matrix.ravel().take(self.rows[rows] * self.matrix.shape[1]
                                        + self.cols[cols])


@dataclass
class CodeEquality:
    """An ``exact`` comparison of one block by its values' codes (one code space for both
    sides, −1 for missing): 1.0 where equal, 0.0 where not, NaN where a value is missing —
    what the kernel gives, without touching the values."""

    rows: np.ndarray  # joint code per left record of the block
    cols: np.ndarray  # per right record

    def gather(self, a: int, b: int, c: int, d: int) -> np.ndarray:
        lc, rc = self.rows[a:b], self.cols[c:d]
        out = (lc[:, None] == rc[None, :]).astype(np.float32)
        if (lc < 0).any():
            out[lc < 0, :] = np.nan
        if (rc < 0).any():
            out[:, rc < 0] = np.nan
        return out

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The aligned form of :meth:`gather`, at cells (rows[i], cols[i])."""
        lc, rc = self.rows[rows], self.cols[cols]
        out = (lc == rc).astype(np.float32)
        out[(lc < 0) | (rc < 0)] = np.nan
        return out


def joint_codes(left: Encoded, right: Encoded | None) -> tuple[np.ndarray, np.ndarray]:
    """Codes of both sides' records in one code space (−1: missing), from their distinct
    values: once per reduce task and column."""
    if right is None or right is left:
        codes = np.where(left.uniques.missing[left.codes], -1, left.codes).astype(np.int64)
        return codes, codes
    lu, ru = left.uniques, right.uniques
    both, _ = pd.factorize(np.concatenate([lu.values, ru.values]), use_na_sentinel=True)
    lmap, rmap = both[: len(lu.values)].copy(), both[len(lu.values):].copy()
    lmap[lu.missing], rmap[ru.missing] = -1, -1
    return lmap[left.codes].astype(np.int64), rmap[right.codes].astype(np.int64)


def block_encoding(left: list[Encoded | None], right: list[Encoded | None],
                   l0: int, l1: int, r0: int, r1: int, triangle: bool,
                   comparisons: Sequence[Comparison], cutoff: float | None,
                   always: bool = False, cell_budget: int = ENCODE_MAX_CELLS,
                   equal: Sequence[tuple[np.ndarray, np.ndarray] | None] = ()
                   ) -> list[BlockCodes | CodeEquality | None]:
    """Per comparison, the encoded form of block ``[l0, l1) × [r0, r1)`` or None (direct).
    ``always``: encode whatever the counts. A distinct-pair matrix never exceeds
    ``cell_budget`` cells (nor ``ENCODE_MAX_CELLS``), so computing it takes what a direct
    chunk takes, and an encoded block's chunks are at most a quarter of it: together they
    stay within what the memory model budgets (``cell_budget`` × (8·c + 20) bytes,
    :func:`erblock.engine.memory.cell_bytes`)."""
    limit = min(cell_budget, ENCODE_MAX_CELLS)
    nl, nr = l1 - l0, r1 - r0
    if triangle and (l0, l1) == (r0, r1):
        cells = nl * (nl - 1) // 2
    elif triangle:  # a slab of a triangle: each row meets the columns after it
        rows = np.arange(l0, l1, dtype=np.int64)
        cells = int(np.maximum(r1 - np.maximum(rows + 1, r0), 0).sum())
    else:
        cells = nl * nr
    out: list[BlockCodes | CodeEquality | None] = [None] * len(comparisons)
    if cells < ENCODE_MIN_CELLS and not always:
        return out
    for k, c in enumerate(comparisons):
        eq = equal[k] if k < len(equal) else None
        if eq is not None:  # exact: compare codes, whatever the distinct counts
            out[k] = CodeEquality(eq[0][l0:l1], eq[1][r0:r1])
            continue
        le, re = left[k], right[k]
        if le is None or re is None:
            continue
        ul, il = np.unique(le.codes[l0:l1], return_inverse=True)
        if triangle and le is re and (l0, l1) == (r0, r1):
            ur, ir = ul, il
        else:
            ur, ir = np.unique(re.codes[r0:r1], return_inverse=True)
        distinct = len(ul) * len(ur)
        if distinct > limit or (distinct > ENCODE_SHARE * cells and not always):
            continue
        mat = c.matrix(le.uniques.take(ul), re.uniques.take(ur), cutoff)
        out[k] = BlockCodes(mat, il.ravel().astype(np.intp), ir.ravel().astype(np.intp))
    return out


#: a block whose distinct pairs exceed the matrix limit is compared in row slabs of at
#: least this many rows, each encoded on its own (fewer rows, fewer distinct values)
SLAB_MIN_ROWS = 256


def slab_rows(left: list[Encoded | None], right: list[Encoded | None],
              l0: int, l1: int, r0: int, r1: int,
              equal: Sequence[tuple[np.ndarray, np.ndarray] | None] = (),
              cell_budget: int = ENCODE_MAX_CELLS) -> int | None:
    """Rows per slab when block ``[l0, l1) × [r0, r1)`` holds too many distinct value
    pairs for one matrix per comparison, but slabs of its rows would not: a slab of ``S``
    rows has at most ``S`` distinct left values, so ``S = limit // distinct right values``
    fits (the largest over the comparisons that do not fit); None when every comparison
    fits whole, or when a slab would be under :data:`SLAB_MIN_ROWS` rows (their right side
    alone is too varied: the direct path)."""
    limit = min(cell_budget, ENCODE_MAX_CELLS)
    if l1 - l0 <= SLAB_MIN_ROWS or (l1 - l0) * (r1 - r0) <= limit:
        return None  # no slab to cut, or every distinct-pair matrix fits
    widest = 0
    for k, (le, re) in enumerate(zip(left, right)):
        if (k < len(equal) and equal[k] is not None) or le is None or re is None:
            continue
        dl = len(np.unique(le.codes[l0:l1]))
        dr = len(np.unique(re.codes[r0:r1]))
        if dl * dr > limit:
            widest = max(widest, dr)
    if widest == 0:
        return None
    rows = limit // widest
    return rows if SLAB_MIN_ROWS <= rows < l1 - l0 else None


#: threshold pushdown when the tests applied to every cell of a chunk leave at most this
#: share of its cells (above, a dense lookup of every comparison is as fast)
PUSHDOWN_MAX_DENSITY = 0.3
#: tests applied to every cell of a chunk (the most selective); the others only to the
#: cells those leave
DENSE_TESTS = 2


@dataclass
class Pushdown:
    """Threshold pushdown on an encoded block. ``tests``, most selective first: per
    comparison whose value alone can rule a pair out, a bool over its distinct-pair matrix
    that marks the similarities that could still lift the mean score to the threshold if
    every other comparison scored its maximum (None for an ``exact`` comparison whose
    disagreement rules a pair out: equal codes or a missing value pass). A chunk applies
    the first ``dense`` tests to every cell, the others to the cells left, and computes
    the similarities (matrix lookups, code equality) only for the cells that pass them
    all. Each test is a necessary condition, and the score comes from the same
    :func:`~erblock.engine.tasks.mean.mean_score`, cell by cell the same float32
    operations as the dense path, so the kept pairs and their values are identical."""

    blocks: list[BlockCodes | CodeEquality]
    weights: np.ndarray
    tests: list[tuple[int, np.ndarray | None]]
    dense: int = 1

    def _cells(self, k: int, passing: np.ndarray | None, a: int, b: int, c: int, d: int
               ) -> np.ndarray:
        """Test k on every cell of block rows [a, b) × columns [c, d)."""
        blk = self.blocks[k]
        if passing is not None:
            return passing.take(blk.rows[a:b], axis=0).take(blk.cols[c:d], axis=1)
        lc, rc = blk.rows[a:b], blk.cols[c:d]
        ok = lc[:, None] == rc[None, :]
        ok[lc < 0, :] = True
        ok[:, rc < 0] = True
        return ok

    def pairs(self, a: int, b: int, c: int, d: int, mask: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
        """Rows / columns (within the chunk) of the pairs that may pass, their
        similarities per comparison and their mean score."""
        ok = self._cells(*self.tests[0], a, b, c, d)
        for k, passing in self.tests[1:self.dense]:
            ok &= self._cells(k, passing, a, b, c, d)
        if mask is not None:
            ok &= mask
        _, ri, cj = cell_positions(ok)
        for k, passing in self.tests[self.dense:]:
            blk = self.blocks[k]
            rows, cols = blk.rows[a + ri], blk.cols[c + cj]
            if passing is None:  # exact: agree, or miss a value
                sel = (rows == cols) | (rows < 0) | (cols < 0)
            else:
                sel = passing.ravel().take(rows * passing.shape[1] + cols)
            ri, cj = ri[sel], cj[sel]
        sims = [blk.at(a + ri, c + cj) for blk in self.blocks]
        # mean_score is elementwise: on these pairs it gives the dense chunk's values
        return ri, cj, sims, mean_score(sims, self.weights)


def _cell_share(blk: BlockCodes | CodeEquality, passing: np.ndarray | None) -> float:
    """Share of the block's cells (record pairs) that pass a test: distinct pairs weighed
    by how many records hold each value (a triangle counted as its whole rectangle: the
    share only orders the tests)."""
    n = len(blk.rows) * len(blk.cols)
    if n == 0:
        return 0.0
    if passing is not None:
        cl = np.bincount(blk.rows, minlength=passing.shape[0]).astype(np.float64)
        cr = np.bincount(blk.cols, minlength=passing.shape[1]).astype(np.float64)
        return float(cl @ (passing @ cr)) / n
    lp, rp = blk.rows[blk.rows >= 0], blk.cols[blk.cols >= 0]
    # codes are the task's: renumber the block's own, so the cost follows the block
    uniq, inv = np.unique(np.concatenate([lp, rp]), return_inverse=True)
    inv = inv.ravel()
    equal = float(np.bincount(inv[:len(lp)], minlength=len(uniq)).astype(np.float64)
                  @ np.bincount(inv[len(lp):], minlength=len(uniq)).astype(np.float64))
    return (equal + n - len(lp) * len(rp)) / n


def pushdown(blocks: Sequence[BlockCodes | CodeEquality | None], weights: np.ndarray,
             threshold: float | None) -> Pushdown | None:
    """A :class:`Pushdown` for a block whose comparisons are all encoded (distinct-pair
    matrices or code equality, at least one matrix), when the most selective tests (at
    most :data:`DENSE_TESTS`) together rule out most of its cells; else None (the dense
    path).

    The mean is over the comparisons present for a pair (a missing value drops its
    weight), so a pair with similarity ``s`` on comparison k can reach threshold ``t``
    only if ``w_k (t − s) <= Σ_j w_j max(M_j − t, 0)`` over the other comparisons (``M_j``
    their largest similarity in the block, 1 for code equality): the best case includes
    exactly the others above ``t``. Pairs missing comparison k always pass to the exact
    computation."""
    if threshold is None or any(b is None for b in blocks):
        return None
    full = [b for b in blocks if isinstance(b, BlockCodes)]
    if not full or any(b.matrix.size == 0 for b in full):
        return None
    w = weights.astype(np.float64)
    tops = []
    for b in blocks:
        if isinstance(b, BlockCodes):
            present = b.matrix[~np.isnan(b.matrix)]
            tops.append(float(present.max()) if present.size else 0.0)
        else:
            tops.append(1.0)
    lift = w * np.maximum(np.array(tops) - threshold, 0.0)
    tests: list[tuple[float, int, np.ndarray | None]] = []
    for k, b in enumerate(blocks):
        # float64 bound with a margin for float32 rounding (of the score and of the
        # threshold), scaled to comparison k: never rules out a pair float32 would keep
        need = threshold - (lift.sum() - lift[k]) / w[k] - 1e-5 * w.sum() / w[k]
        if isinstance(b, BlockCodes):
            with np.errstate(invalid="ignore"):
                passing = (b.matrix >= need) | np.isnan(b.matrix)
            tests.append((_cell_share(b, passing), k, passing))
        elif b is not None and need > 0:  # an exact disagreement (0) alone rules it out
            tests.append((_cell_share(b, None), k, None))
    tests = sorted((t for t in tests if t[0] < 1.0), key=lambda t: t[0])
    if not tests:
        return None
    dense = min(DENSE_TESTS, len(tests))
    if float(np.prod([t[0] for t in tests[:dense]])) > PUSHDOWN_MAX_DENSITY:
        return None
    return Pushdown([b for b in blocks if b is not None], weights,
                    [(k, p) for _, k, p in tests], dense)
