"""Pair-index arithmetic of ``RANGE`` match tasks (PairRange), pure numpy.

All pairs of a block get one number in row-major order over the upper triangle (dedupe:
pair (i, j), i < j, of the records at ranks i and j) or the rectangle (link: R rank i ×
S rank j, index ``i·n_S + j``). A ``RANGE`` task computes the pairs ``[lo, hi)`` of one
block: :func:`range_intervals` gives the ranks of the records it needs (the router sends
a record only to the ranges that use it) and :func:`range_bands` the bands of rows the
comparer computes.
"""

from __future__ import annotations

import numpy as np


def tri_row_start(i: np.ndarray | int, n: np.ndarray | int) -> np.ndarray:
    """Index of pair (i, i + 1), the first of row ``i``, in the triangle of ``n`` records."""
    i = np.asarray(i, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    return i * (2 * n - i - 1) // 2


def tri_locate(p: np.ndarray | int | list[int], n: np.ndarray | int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Row and column ``(i, j)`` (i < j) of pair index ``p`` in the triangle of ``n``."""
    p = np.asarray(p, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    b = 2.0 * n - 1.0
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * p, 0.0))) / 2.0).astype(np.int64)
    i = np.clip(i, 0, np.maximum(n - 2, 0))
    for _ in range(64):  # float error is at most a row or two; fix it exactly
        down = tri_row_start(i, n) > p
        up = (i + 1 <= n - 2) & (tri_row_start(i + 1, n) <= p)
        if not (down.any() or up.any()):
            break
        i = i - down + up
    j = p - tri_row_start(i, n) + i + 1
    return i, j


def range_intervals(n_r: int, n_s: int, link: bool, lo: int, hi: int
                    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Ranks (half-open intervals) of the records the pairs ``[lo, hi)`` of a block use.

    Returns (left intervals, right intervals); for dedupe both sides are one source and
    the right list is empty.
    """
    if hi <= lo:
        return [], []
    if link:
        i_lo, c_lo = divmod(lo, n_s)
        i_hi, c_hi = divmod(hi - 1, n_s)
        left = [(i_lo, i_hi + 1)]
        if i_lo == i_hi:
            right = [(c_lo, c_hi + 1)]
        elif i_hi == i_lo + 1:
            right = [(0, c_hi + 1), (c_lo, n_s)]
        else:
            right = [(0, n_s)]
        return left, right
    rows, cols = tri_locate([lo, hi - 1], n_r)
    i_lo, i_hi, c_lo, c_hi = int(rows[0]), int(rows[1]), int(cols[0]), int(cols[1])
    if i_lo == i_hi:
        return [(i_lo, i_lo + 1), (c_lo, c_hi + 1)], []
    if i_hi == i_lo + 1:
        # rows i_lo, i_lo+1 and the last row's columns [i_lo+2, c_hi]; the first row's [c_lo, n)
        return [(i_lo, c_hi + 1), (c_lo, n_r)], []
    return [(i_lo, n_r)], []  # a full row i_lo+1 needs every column from i_lo+2 on


def range_bands(n_r: int, n_s: int, link: bool, lo: int, hi: int
                ) -> list[tuple[int, int, int, int, bool]]:
    """The pairs ``[lo, hi)`` as bands ``(row0, row1, col0, col1, triangle)`` in ranks.

    A rectangle band is rows ``[row0, row1)`` × columns ``[col0, col1)``; a triangle
    band (dedupe, full rows only) is every pair (i, j) with ``row0 <= i < row1`` and
    ``i < j < col1``. Together the bands hold exactly ``hi − lo`` pairs.
    """
    if hi <= lo:
        return []
    if link:
        i_lo, c_lo = divmod(lo, n_s)
        i_hi, c_hi = divmod(hi - 1, n_s)
        if i_lo == i_hi:
            return [(i_lo, i_lo + 1, c_lo, c_hi + 1, False)]
        bands = [(i_lo, i_lo + 1, c_lo, n_s, False)]
        if i_hi > i_lo + 1:
            bands.append((i_lo + 1, i_hi, 0, n_s, False))
        bands.append((i_hi, i_hi + 1, 0, c_hi + 1, False))
        return bands
    rows, cols = tri_locate([lo, hi - 1], n_r)
    i_lo, i_hi, c_lo, c_hi = int(rows[0]), int(rows[1]), int(cols[0]), int(cols[1])
    if i_lo == i_hi:
        return [(i_lo, i_lo + 1, c_lo, c_hi + 1, False)]
    bands = [(i_lo, i_lo + 1, c_lo, n_r, False)]
    if i_hi > i_lo + 1:
        bands.append((i_lo + 1, i_hi, i_lo + 2, n_r, True))
    bands.append((i_hi, i_hi + 1, i_hi + 1, c_hi + 1, False))
    return bands


