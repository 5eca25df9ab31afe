"""Placements: how a record finds its unit in a plan (pure numpy, run by the router).

A plan declares the placements it needs, in order; routing a partition applies each in
turn to the records not placed yet, so routing never branches on a strategy's name:

* :class:`WholeUnits`: whole blocks (or whole sketch cells), looked up by (key, source);
* :class:`SplitPieces` (BlockSplit): a per-partition sub-block of ``n`` records cut into
  ``h`` pieces; a record takes piece ``q·h // n`` by its rank ``q`` in the sub-block in
  input order;
* :class:`CellPieces` (cell strategies): a sketch cell cut at positions; a record takes
  the piece its position (:func:`record_positions`) falls in;
* :class:`HashRoutes` (plans from a sample): chopped blocks by a hash of the record id,
  every other keyed record into a bucket by a hash of its block id;
* :class:`RankedUnits` (PairRange): records of a cut block get their global rank in the
  block, and go only to the reduce tasks of the rank segment they fall in.

Every placement is a pure function of the partition and the plan, so Dask can recompute a
lost routing task and get the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..blocking.keys import NULL_BLOCK
from .hashing import splitmix64
from .lookup import Lookup

POSITION_BITS = 32  #: record positions and piece cuts are fractions of 2^32
_PHI64 = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio
_CHANGED = ("a partition holds more records of a block than the profile counted; the input "
            "changed between the profile and the route phase")


@dataclass(frozen=True)
class RecordKeys:
    """What routing knows of every prepared record: block id (``NULL_BLOCK``: no key),
    source, input partition and record id (input order)."""

    block: np.ndarray
    src: np.ndarray
    part: np.ndarray
    rid: np.ndarray

    def __len__(self) -> int:
        return len(self.block)

    @property
    def keyed(self) -> np.ndarray:
        return self.block != NULL_BLOCK


def group_ranks(*keys: np.ndarray, rid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of every row inside its group (equal ``keys``) in ``rid`` order, and the size
    of its group."""
    n = len(rid)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((rid, *keys[::-1]))
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, n])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, sizes)
    size = np.empty(n, dtype=np.int64)
    size[order] = np.repeat(sizes, sizes)
    return rank, size


def record_positions(block: np.ndarray, src: np.ndarray, part: np.ndarray, rid: np.ndarray
                     ) -> np.ndarray:
    """Position in ``[0, 2^32)`` of every record inside its block (cell strategies).

    The ``c`` records of a block in one input partition (and source) sit at
    ``(q + o) / c`` for their rank ``q`` in input order and an offset ``o`` in [0, 1)
    hashed from (block, source, partition): evenly spaced, so a piece of width ``f`` gets
    ``f·c`` of them up to one record, whatever the block.
    """
    q, c = group_ranks(block, src, part, rid=rid)
    base = splitmix64(np.asarray(block, dtype=np.int64).view(np.uint64)
                      ^ (np.asarray(src, dtype=np.int64).view(np.uint64) << np.uint64(32)))
    with np.errstate(over="ignore"):  # golden-ratio steps: partitions interleave evenly
        offset = (base + np.asarray(part, dtype=np.int64).view(np.uint64) * _PHI64) >> np.uint64(32)
    pos = ((q.astype(np.uint64) << np.uint64(POSITION_BITS)) + offset) // np.maximum(c, 1).astype(
        np.uint64)
    return pos.astype(np.int64)


# -- placements --------------------------------------------------------------------------


class Placement:
    """Base of the placement kinds: ``place`` sets the unit (and rank) of records it
    places; ``targets`` and ``routed_records`` let a kind send records to fewer tasks
    than their unit's (ranked segments)."""

    def place(self, keys: RecordKeys, unit: np.ndarray, rank: np.ndarray) -> None:
        raise NotImplementedError  # pragma: no cover - every kind defines it

    def targets(self, unit: np.ndarray, rank: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where routed records go: ``targets[lo:hi]`` per record (unchanged by default)."""
        return lo, hi, targets

    def routed_records(self, fanout: np.ndarray) -> tuple[np.ndarray, int]:
        """(fanout per unit of the records routed by unit, records routed otherwise)."""
        return fanout, 0


@dataclass(frozen=True)
class CellMap:
    """Units keyed by sketch cell: the key of a block id is its cell in row ``theta`` of
    the sketch ``spec`` (a :class:`~erblock.balancing.sketch.SketchSpec`)."""

    spec: Any
    theta: int

    def keys(self, blocks: np.ndarray) -> np.ndarray:
        return self.spec.cells(blocks, self.theta)


def _keys_of(keys: RecordKeys, cells: CellMap | None) -> np.ndarray:
    return keys.block if cells is None else cells.keys(keys.block)


@dataclass(frozen=True)
class WholeUnits(Placement):
    """Units holding a whole block (or sketch cell) of a source: ``unit[i]`` is the unit
    of records with key ``key[i]`` from source ``src[i]``."""

    key: np.ndarray
    src: np.ndarray
    unit: np.ndarray
    cells: CellMap | None = None

    @classmethod
    def of(cls, units: Any, whole: int, cells: CellMap | None = None) -> WholeUnits:
        """The whole units (``part == whole``) of a unit table."""
        sel = np.flatnonzero(units.part == whole)
        return cls(units.block[sel], units.src[sel].astype(np.int64), sel.astype(np.int64),
                   cells)

    @cached_property
    def _index(self) -> Lookup:
        """The lookup of this placement's table, built once per process."""
        return Lookup((self.key, self.src))

    def place(self, keys: RecordKeys, unit: np.ndarray, rank: np.ndarray) -> None:
        if len(self.key) == 0:
            return
        sel = np.flatnonzero(keys.keyed & (unit < 0))
        if len(sel) == 0:
            return
        key = _keys_of(keys, self.cells)
        pos = self._index.find((key[sel], keys.src[sel].astype(np.int64)))
        hit = pos >= 0
        unit[sel[hit]] = self.unit[pos[hit]]


@dataclass(frozen=True)
class SplitPieces(Placement):
    """BlockSplit's split sub-blocks: (block, src, part) has ``n`` records cut into ``h``
    pieces whose units are ``unit0 .. unit0 + h - 1``."""

    block: np.ndarray
    src: np.ndarray
    part: np.ndarray
    n: np.ndarray
    h: np.ndarray
    unit0: np.ndarray

    @cached_property
    def _index(self) -> Lookup:
        """The lookup of this placement's table, built once per process."""
        return Lookup((self.block, self.src.astype(np.int64), self.part))

    def place(self, keys: RecordKeys, unit: np.ndarray, rank: np.ndarray) -> None:
        if len(self.block) == 0:
            return
        pos = self._index.find((keys.block, keys.src.astype(np.int64), keys.part))
        hit = np.flatnonzero((pos >= 0) & keys.keyed)
        if len(hit) == 0:
            return
        grp = pos[hit]
        q, _ = group_ranks(grp, rid=keys.rid[hit])
        h, cnt = self.h[grp], self.n[grp]
        if np.any(q >= cnt):
            raise RuntimeError(_CHANGED)
        unit[hit] = self.unit0[grp] + q * h // cnt


@dataclass(frozen=True)
class CellPieces(Placement):
    """Units picked by a record's position (cell strategies).

    Records of key ``key[g]`` (a sketch cell) and source ``src[g]`` are cut into ``h[g]``
    pieces, units ``unit0[g] .. unit0[g] + h[g] − 1``: a record at position ``x`` in
    ``[0, 2^32)`` goes to piece ``#{cuts of g <= x}``, with the ``h − 1`` increasing cuts
    of group ``g`` in ``cuts[cut_indptr[g]:cut_indptr[g+1]]``.
    """

    key: np.ndarray
    src: np.ndarray
    unit0: np.ndarray
    h: np.ndarray
    cut_indptr: np.ndarray
    cuts: np.ndarray
    cells: CellMap

    @cached_property
    def _index(self) -> Lookup:
        """The lookup of this placement's table, built once per process."""
        return Lookup((self.key, self.src.astype(np.int64)))

    def place(self, keys: RecordKeys, unit: np.ndarray, rank: np.ndarray) -> None:
        if len(self.key) == 0:
            return
        key = _keys_of(keys, self.cells)
        pos = self._index.find((key, keys.src.astype(np.int64)))
        hit = np.flatnonzero((pos >= 0) & keys.keyed)
        if len(hit) == 0:
            return
        grp = pos[hit]
        x = record_positions(keys.block[hit], keys.src[hit], keys.part[hit], keys.rid[hit])
        cut_grp = np.repeat(np.arange(len(self.key), dtype=np.int64), np.diff(self.cut_indptr))
        cut_keys = (cut_grp << POSITION_BITS) | self.cuts
        below = np.searchsorted(cut_keys, (grp << POSITION_BITS) | x, side="right")
        unit[hit] = self.unit0[grp] + below - self.cut_indptr[grp]


@dataclass(frozen=True)
class HashRoutes(Placement):
    """How a plan from a sample places records its unit table does not list by block.

    Chopped blocks: (``block``, ``src``) is cut into ``h`` pieces, units ``unit0`` ..
    ``unit0 + h − 1``; a record goes to piece ``splitmix64(rid) mod h``. Every other block
    with a key goes to unit ``buckets[src, block mod n_buckets]``.
    """

    block: np.ndarray
    src: np.ndarray
    h: np.ndarray
    unit0: np.ndarray
    buckets: np.ndarray  # (2, n_buckets) unit ids, -1 when the source has none

    @cached_property
    def _index(self) -> Lookup:
        """The lookup of this placement's table, built once per process."""
        return Lookup((self.block, self.src.astype(np.int64)))

    def place(self, keys: RecordKeys, unit: np.ndarray, rank: np.ndarray) -> None:
        todo = np.flatnonzero((unit < 0) & keys.keyed)
        if len(todo) == 0:
            return
        blk, sr = keys.block[todo], keys.src[todo].astype(np.int64)
        pos = self._index.find((blk, sr))
        hit = pos >= 0
        entry = pos[hit]
        piece = (splitmix64(keys.rid[todo[hit]]) % self.h[entry].astype(np.uint64)
                 ).astype(np.int64)
        unit[todo[hit]] = self.unit0[entry] + piece
        rest = ~hit
        if rest.any():
            from .packing import hashed

            unit[todo[rest]] = self.buckets[sr[rest], hashed(blk[rest], self.buckets.shape[1])]


@dataclass(frozen=True)
class RankedUnits(Placement):
    """Units routed by a record's rank in its (block, source) (PairRange).

    ``unit[g]`` (sorted) holds ``n[g]`` records; a record of input partition ``p`` has
    global rank ``offset + local rank``, where ``offset`` is the row (``off_group``,
    ``off_part``) of the offset table (records of the block in earlier partitions).
    Unit ``g`` is cut into segments starting at ranks ``seg_start[seg_indptr[g]:
    seg_indptr[g+1]]``; segment ``k`` goes to ``targets[tgt_indptr[k]:tgt_indptr[k+1]]``.
    """

    unit: np.ndarray
    n: np.ndarray
    off_group: np.ndarray
    off_part: np.ndarray
    offset: np.ndarray
    seg_indptr: np.ndarray
    seg_start: np.ndarray
    tgt_indptr: np.ndarray
    seg_targets: np.ndarray

    def segment_lengths(self) -> np.ndarray:
        """Records in every segment."""
        ends = np.empty(len(self.seg_start), dtype=np.int64)
        ends[:-1] = self.seg_start[1:]
        ends[self.seg_indptr[1:] - 1] = self.n  # the last segment of a unit ends at n
        return ends - self.seg_start

    @cached_property
    def _index(self) -> Lookup:
        """The lookup of this placement's table, built once per process."""
        return Lookup((self.off_group, self.off_part))

    def place(self, keys: RecordKeys, unit: np.ndarray, rank: np.ndarray) -> None:
        if len(self.unit) == 0:
            return
        g = np.minimum(np.searchsorted(self.unit, unit), len(self.unit) - 1)
        hit = np.flatnonzero((unit >= 0) & (self.unit[g] == unit))
        if len(hit) == 0:
            return
        g = g[hit]
        part = keys.part[hit]
        q, _ = group_ranks(g, part, rid=keys.rid[hit])
        row = self._index.find((g, part))
        if np.any(row < 0):
            raise RuntimeError(_CHANGED)
        x = self.offset[row] + q
        if np.any(x >= self.n[g]):
            raise RuntimeError(_CHANGED)
        rank[hit] = x

    def targets(self, unit: np.ndarray, rank: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ranked = rank >= 0
        if len(self.unit) == 0 or not ranked.any():
            return lo, hi, targets
        # a ranked record goes to the tasks of its segment, not to every task of its block
        g = np.searchsorted(self.unit, unit[ranked])
        seg_grp = np.repeat(np.arange(len(self.unit), dtype=np.int64), np.diff(self.seg_indptr))
        shift = np.int64(40)  # ranks stay far below 2^40
        seg_keys = (seg_grp << shift) | self.seg_start
        seg = np.searchsorted(seg_keys, (g << shift) | rank[ranked], side="right") - 1
        base = len(targets)
        lo, hi = lo.copy(), hi.copy()
        lo[ranked] = base + self.tgt_indptr[seg]
        hi[ranked] = base + self.tgt_indptr[seg + 1]
        return lo, hi, np.concatenate([targets, self.seg_targets])

    def routed_records(self, fanout: np.ndarray) -> tuple[np.ndarray, int]:
        if len(self.unit) == 0:
            return fanout, 0
        fanout = fanout.copy()
        fanout[self.unit] = 0
        seg_fanout = np.diff(self.tgt_indptr)
        return fanout, int((seg_fanout * self.segment_lengths()).sum())
