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

import numpy as np
import pandas as pd

from ...matchers.comparisons import Comparison
from ...matchers.methods import Prepared

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


def encode(p: Prepared) -> Encoded | None:
    """The codes and distinct values of a prepared column (None if its values cannot be
    told apart by equality, e.g. unhashable objects)."""
    v = p.values
    n = len(v)
    try:
        if v.ndim == 1:
            codes, _ = pd.factorize(v, use_na_sentinel=True)
        else:  # a table per record (dates, e-mail parts, token sets): equal rows, one code
            rows = v.reshape(n, -1)
            codes, _ = pd.MultiIndex.from_arrays(
                [rows[:, j] for j in range(rows.shape[1])]).factorize()
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


def block_encoding(left: list[Encoded | None], right: list[Encoded | None],
                   l0: int, l1: int, r0: int, r1: int, triangle: bool,
                   comparisons: Sequence[Comparison], cutoff: float | None,
                   always: bool = False, cell_budget: int = ENCODE_MAX_CELLS
                   ) -> list[BlockCodes | None]:
    """Per comparison, the encoded form of block ``[l0, l1) × [r0, r1)`` or None (direct).
    ``always``: encode whatever the counts. A distinct-pair matrix never exceeds twice
    ``cell_budget`` cells (nor ``ENCODE_MAX_CELLS``) and an encoded block's chunks are at
    most a quarter of it, so together they stay within the chunk the memory model budgets
    (``cell_budget`` × (12·c + 20) bytes, :func:`erblock.engine.memory.cell_bytes`)."""
    limit = min(2 * cell_budget, ENCODE_MAX_CELLS)
    nl, nr = l1 - l0, r1 - r0
    cells = nl * (nl - 1) // 2 if triangle else nl * nr
    out: list[BlockCodes | None] = [None] * len(comparisons)
    if cells < ENCODE_MIN_CELLS and not always:
        return out
    for k, c in enumerate(comparisons):
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
