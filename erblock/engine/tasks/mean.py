"""The weighted mean score of a chunk's similarities (worker side), shared by the dense
compare and the threshold pushdown so both compute a pair's score the same way."""

from __future__ import annotations

import numpy as np


def weight_total(weights: np.ndarray) -> np.float32:
    """The weights added one at a time in float32: the denominator the missing-value
    path of :func:`mean_score` accumulates cell by cell, so a pair's score does not depend
    on whether another pair of its chunk has a missing value (``sum`` adds pairwise)."""
    total = np.float32(0)
    for w in weights:
        total = np.float32(total + w)
    return total


def mean_score(mats: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """Weighted mean of the similarities present at each cell (NaN where none is), float32.

    Elementwise (any shape): a cell's score is the same whatever else its chunk holds."""
    if len(mats) == 1:
        return mats[0]
    if not any(np.isnan(m.sum()) for m in mats):
        # no missing value in the chunk: in place, without temporaries where w = 1 (the
        # same float32 operations in the same order as below, so the same score)
        num = mats[0].copy() if weights[0] == 1 else mats[0] * weights[0]
        for m, w in zip(mats[1:], weights[1:]):
            if w == 1:
                num += m
            else:
                num += m * w
        num /= weight_total(weights)
        return num
    num = np.zeros_like(mats[0])
    den = np.zeros_like(mats[0])
    for m, w in zip(mats, weights):
        nan = np.isnan(m)
        if nan.any():
            num += np.where(nan, 0.0, m) * w
            den += (~nan) * w
        else:
            num += m * w
            den += w
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan).astype(np.float32)


def cell_positions(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-major flat positions of the true cells of a 2-D mask, with their rows and
    columns: rows by repeating each row's count, several times faster than ``divmod``
    (the chunks of a compare spend much of their time here)."""
    flat = np.flatnonzero(sel)
    ri = np.repeat(np.arange(sel.shape[0]), np.count_nonzero(sel, axis=1))
    return flat, ri, flat - ri * sel.shape[1]
