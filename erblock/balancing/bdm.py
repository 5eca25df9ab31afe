"""The block distribution matrix (BDM), paper 004 §3.1.

The BDM holds how many records of each block sit in each input partition (and, for link,
in each source). It is all a planner needs: block sizes give the comparisons per block,
and the per-partition split tells which sub-blocks exist for BlockSplit.

This module is pure numpy: the engine builds the per-partition counts with Dask
(:func:`count_partition`) and concatenates them; planners read the merged arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

SRC_R = 0  #: source of the left frame (and of the only frame for dedupe)
SRC_S = 1  #: source of the right frame (link)


@dataclass(frozen=True)
class BDM:
    """Records per (block, input partition, source), as parallel arrays.

    Rows are unique on (block, part, src) and sorted by (block, src, part). ``n_parts``
    is the number of input partitions of each source (m_R, m_S); ``link`` says whether
    pairs are R×S (True) or within one source (False).
    """

    block: np.ndarray  # int64 block id
    part: np.ndarray  # int64 input partition
    src: np.ndarray  # int8 source (SRC_R / SRC_S)
    count: np.ndarray  # int64 records
    n_parts: tuple[int, int]
    link: bool

    @classmethod
    def from_arrays(
        cls,
        block: np.ndarray,
        part: np.ndarray,
        src: np.ndarray,
        count: np.ndarray,
        n_parts: tuple[int, int],
        link: bool,
    ) -> BDM:
        """Build a BDM from possibly unsorted rows, summing duplicate (block, part, src)."""
        block = np.asarray(block, dtype=np.int64)
        part = np.asarray(part, dtype=np.int64)
        src = np.asarray(src, dtype=np.int8)
        count = np.asarray(count, dtype=np.int64)
        keep = count > 0
        block, part, src, count = block[keep], part[keep], src[keep], count[keep]
        if len(block):
            order = np.lexsort((part, src, block))
            block, part, src, count = block[order], part[order], src[order], count[order]
            new = np.ones(len(block), dtype=bool)
            new[1:] = (
                (block[1:] != block[:-1]) | (src[1:] != src[:-1]) | (part[1:] != part[:-1])
            )
            starts = np.flatnonzero(new)
            count = np.add.reduceat(count, starts)
            block, part, src = block[starts], part[starts], src[starts]
        return cls(block, part, src, count, (int(n_parts[0]), int(n_parts[1])), bool(link))

    @property
    def n_records(self) -> int:
        return int(self.count.sum())

    def block_sizes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct blocks with their sizes in R and in S (S is all zero for dedupe).

        Computed once per BDM (``auto`` plans every candidate from the same one); the
        arrays are read-only."""
        return self._sizes

    @cached_property
    def _sizes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if len(self.block) and not (self.block[1:] >= self.block[:-1]).all():
            blocks, inv = np.unique(self.block, return_inverse=True)
        else:  # rows sorted by block (from_arrays): runs instead of a sort
            new = np.r_[True, self.block[1:] != self.block[:-1]] if len(self.block) else \
                np.zeros(0, dtype=bool)
            blocks, inv = self.block[new], np.cumsum(new) - 1
        out = [blocks]
        for src in (SRC_R, SRC_S):
            sel = self.src == src
            n = np.zeros(len(blocks), dtype=np.int64)
            np.add.at(n, inv[sel], self.count[sel])  # exact in int64 (no float weights)
            out.append(n)
        for a in out:
            a.flags.writeable = False
        return out[0], out[1], out[2]

    def comparisons(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct blocks and the comparisons each implies (n(n−1)/2, or n_R·n_S)."""
        blocks, n_r, n_s = self.block_sizes()
        return blocks, block_comparisons(n_r, n_s, self.link)


def block_comparisons(n_r: np.ndarray, n_s: np.ndarray, link: bool) -> np.ndarray:
    """Comparisons of blocks with ``n_r`` (and ``n_s``) records."""
    n_r = np.asarray(n_r, dtype=np.int64)
    if link:
        return n_r * np.asarray(n_s, dtype=np.int64)
    return n_r * (n_r - 1) // 2


def count_partition(block: np.ndarray, part: int, src: int,
                    passes: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-partition BDM rows from the block ids of one input partition (runs on workers);
    with ``passes`` (the pass of each block id), the pass of each row too."""
    block = np.asarray(block, dtype=np.int64)
    blocks, first, counts = np.unique(block, return_index=True, return_counts=True)
    out = {
        "block": blocks,
        "part": np.full(len(blocks), part, dtype=np.int64),
        "src": np.full(len(blocks), src, dtype=np.int8),
        "count": counts.astype(np.int64),
    }
    if passes is not None:
        out["pass"] = np.asarray(passes, dtype=np.int8)[first]
    return out
