"""Threshold pushdown by equality (worker side): a block compared as a join on the codes
of an ``exact`` comparison, when that comparison alone rules out every pair it does not
agree on.

Every similarity lies in [0, 1] (a property the conformance suite checks for every
registered method), and the score is the weighted mean over the comparisons a pair has
values for. A pair whose values differ on an ``exact`` comparison ``k`` (similarity 0)
can reach the threshold ``t`` only if ``w_k · t <= Σ_{j≠k} w_j · (1 − t)``: the other
comparisons at their best, and any of them missing only lowers what they can add. When
that fails (four comparisons of weight 1 at ``t = 0.9``: 0.9 > 0.3), only the pairs
that agree on ``k`` or miss its value can be kept, and the block needs no more than
those: rows and columns are matched on the comparison's codes (a sort and two binary
searches), and only those candidates are compared (``aligned`` kernels, the same values
as the matrix kernels, and the same :func:`~.mean.mean_score`), so the pairs kept and
their values are identical to the dense path's. ``comparisons`` still counts every pair
of the block that the structure rules allow: the others were decided by the bound.

The join is used where it is cheaper: when its candidates are at most
:data:`JOIN_MAX_SHARE` of the block's cells (on an exact date, a few in a thousand).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...matchers.comparisons import Comparison
from .mean import mean_score
from .sides import Collector, Side, structure_chunks

#: join when its candidates are at most this share of the block's cells: a candidate
#: costs an aligned kernel call per comparison, several times a dense cell
JOIN_MAX_SHARE = 0.1
#: blocks of fewer cells stay dense (sorting codes costs what comparing them does)
JOIN_MIN_CELLS = 4096
#: relative margin of the bound for float32 rounding of the score and the threshold
MARGIN = 1e-5


def ruling_comparisons(comparisons: Sequence[Comparison], weights: np.ndarray,
                       threshold: float | None,
                       codes: Sequence[tuple[np.ndarray, np.ndarray] | None]) -> list[int]:
    """The exact comparisons (with codes) whose disagreement alone keeps a pair under
    ``threshold`` (module docstring); empty without a positive threshold."""
    if threshold is None or threshold <= 0 or not len(comparisons):
        return []
    w = np.asarray(weights, dtype=np.float64)
    lift = w * max(1.0 - float(threshold), 0.0)
    return [k for k, eq in enumerate(codes)
            if eq is not None and w[k] > 0
            and w[k] * threshold > lift.sum() - lift[k] + MARGIN * w.sum()]


def _ranges(lc: np.ndarray, rc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Sort the column codes; per row, the range of sorted columns with its code (all of
    them for a missing row), and the number of missing columns (they sort first)."""
    order = np.argsort(rc, kind="stable")
    src = rc[order]
    n_miss = int(np.searchsorted(src, 0, side="left"))  # codes < 0 are missing
    lo = np.searchsorted(src, lc, side="left")
    hi = np.searchsorted(src, lc, side="right")
    miss = lc < 0
    lo = np.where(miss, 0, lo)
    hi = np.where(miss, len(src), hi)
    return order, lo, hi, n_miss


def _expand(rows: np.ndarray, starts: np.ndarray, counts: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """(row, start + t) for t < count of every row, without a Python loop."""
    total = int(counts.sum())
    rep = np.repeat(np.arange(len(rows)), counts)
    offset = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return rows[rep], starts[rep] + offset


def join_candidates(lc: np.ndarray, rc: np.ndarray) -> int:
    """How many (row, column) pairs agree on their codes or miss one (upper bound for a
    triangle, which keeps about half)."""
    _, lo, hi, n_miss = _ranges(lc, rc)
    return int((hi - lo).sum() + np.where(lc < 0, 0, n_miss).sum())


def _structure_count(left: Side, right: Side, l0: int, l1: int, r0: int, r1: int,
                     triangle: bool, chunk: int) -> int:
    """The pairs of the block region the structure rules allow (what the dense path
    counts as compared)."""
    trivial = (left.pair_keys is None and left.block[l0] == left.block[l1 - 1]
               and right.block[r0] == right.block[r1 - 1] == left.block[l0])
    if trivial and not triangle:
        return (l1 - l0) * (r1 - r0)
    if trivial:  # row i compares columns i + 1 … r1 − 1
        rows = np.arange(l0, l1, dtype=np.int64)
        return int(np.maximum(r1 - rows - 1, 0).sum())
    return sum(int(mask.sum()) if mask is not None else (b - a) * (r1 - c0)
               for a, b, c0, _, _, mask in structure_chunks(left, right, l0, l1, r0, r1,
                                                            triangle, chunk))


def run_join(left: Side, right: Side, l0: int, l1: int, r0: int, r1: int, triangle: bool,
             k: int, comparisons: Sequence[Comparison], weights: np.ndarray,
             threshold: float, out: Collector, cell_budget: int,
             also: Sequence[int] = ()) -> int:
    """Compare block region [l0, l1) × [r0, r1) (columns after the row for a triangle) as
    a join on the codes of comparison ``k``; return the pairs compared (module doc).
    ``also``: other ruling comparisons, whose disagreements are dropped before any
    similarity is computed."""
    codes_l, codes_r = left.equal_codes[k]  # type: ignore[misc]
    lc, rc = codes_l[l0:l1], codes_r[r0:r1]
    order, lo, hi, n_miss = _ranges(lc, rc)
    extra = np.where(lc < 0, 0, n_miss)  # a present row also meets the missing columns
    per_row = (hi - lo) + extra
    # rows in batches of at most cell_budget candidates (a single row may exceed it)
    ends = np.cumsum(per_row)
    cuts = np.searchsorted(ends, np.arange(cell_budget, int(ends[-1]) if len(ends) else 0,
                                           cell_budget), side="left")
    bounds = np.unique(np.r_[0, cuts + 1, len(lc)].clip(0, len(lc)))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = np.arange(a, b)
        ri1, pos1 = _expand(rows, lo[a:b], hi[a:b] - lo[a:b])
        ri2, pos2 = _expand(rows, np.zeros(b - a, dtype=np.int64), extra[a:b])
        li = l0 + np.concatenate([ri1, ri2])
        rj = r0 + order[np.concatenate([pos1, pos2])]
        keep = rj > li if triangle else np.ones(len(li), dtype=bool)
        for q in also:  # another ruling comparison: agree or miss a value, or go
            ql, qr = left.equal_codes[q]  # type: ignore[misc]
            a_, b_ = ql[li], qr[rj]
            keep &= (a_ == b_) | (a_ < 0) | (b_ < 0)
        run_aligned(left, right, li[keep], rj[keep], comparisons, weights, threshold, out)
    chunk = max(1, cell_budget // max(r1 - r0, 1))
    return _structure_count(left, right, l0, l1, r0, r1, triangle, chunk)


def run_aligned(left: Side, right: Side, li: np.ndarray, rj: np.ndarray,
                 comparisons: Sequence[Comparison], weights: np.ndarray,
                 threshold: float | None, out: Collector) -> int:
    """Compare the aligned pairs (li[k], rj[k]) under the structure rules (block equality,
    compared once); return comparisons. Batches of small match tasks and the join's
    candidates both go through here."""
    if len(li) == 0:
        return 0
    mask = left.block[li] == right.block[rj]  # records of one cell may hold several blocks
    li, rj = li[mask], rj[mask]
    if left.pair_keys is not None and len(li):  # compared once: first pass, smallest key
        once = left.pair_keys.aligned_mask(li, rj, left.passes[li])
        li, rj = li[once], rj[once]
    if len(li) == 0:
        return 0
    if not comparisons:  # candidates only
        out.keep(li, rj, [], None)
        return len(li)
    single = len(comparisons) == 1
    cutoff = threshold if (single and threshold is not None and threshold > 0) else None
    out.cells += len(li)
    out.kernel_calls += 1
    sims = [c.aligned(lv, rv, li, rj, cutoff)
            for c, lv, rv in zip(comparisons, left.values, right.values)]
    score = sims[0] if single else mean_score(sims, weights)
    if threshold is None:
        out.keep(li, rj, sims, score)
    else:
        keep = np.flatnonzero(score >= np.float32(threshold))
        out.keep(li[keep], rj[keep], [v[keep] for v in sims], score[keep])
    return len(li)
