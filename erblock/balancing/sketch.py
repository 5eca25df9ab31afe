"""Sketch profiles of block sizes: Count-Min and FastAGMS (paper 003 ch. III–IV), pure numpy.

A BDM holds one row per (block, partition, source): with millions of blocks it no longer
fits a planner's memory. A *sketch* keeps a ``d × w`` array of counters instead, whatever
the number of blocks. Row ``i`` has its own hash function ``h_i`` from block ids to
``[0, w)``; every record adds to one counter per row:

* **Count-Min** (003 Alg. 1): ``C[i, h_i(k)] += 1``. A counter is the exact number of
  records whose block hashes to that cell, so a point estimate ``min_i C[i, h_i(k)]``
  never underestimates, and overestimates by at most ``ε·N`` with probability
  ``≥ 1 − δ`` for ``w = ⌈e/ε⌉``, ``d = ⌈ln 1/δ⌉`` (003 Lemma 1).
* **FastAGMS** (003 Alg. 4): ``C[i, h_i(k)] += g_i(k)`` with a second hash
  ``g_i(k) ∈ {+1, −1}``; collisions cancel on average, so the inner product of two
  sketches estimates the join size ``Σ_k n_R(k)·n_S(k)`` within ``ε‖R‖₂‖S‖₂``
  (003 Lemma 2), and a point estimate is the median over rows of ``g_i(k)·C[i, h_i(k)]``.
  003 states Lemma 2 with ``ε = e/w``; for FastAGMS the bound needs ``w = O(1/ε²)``
  (a row is unbiased with variance ``≤ 2‖R‖²‖S‖²/w``, so it is within ``√(8/w)‖R‖‖S‖``
  with probability ¾ and the median of ``d`` rows fails with probability ``e^−Ω(d)``),
  which is what we measure (tests/test_sketch.py).
  Cell strategies also need how many records sit in a cell (who is the larger side,
  how many records a sub-cell gets, dedupe work ``(c² − n)/2``), so a FastAGMS sketch
  carries the Count-Min counters of the same hash functions next to its signed ones
  (memory ``2·d·w`` counters, still independent of the number of blocks).

Like dask's ``hyperloglog`` the sketch is three pure functions: :func:`build` on one
input partition (runs inside a Dask task), :func:`merge` by summing counters (the merged
sketch equals the one built on all records at once: 003 Prop. 1), and the estimators
:func:`estimate` (point query), :func:`inner_product` (join size) and :func:`cell_work`
(the per-cell work array ``C^θ`` of 003 ch. IV that the cell strategies plan on).

Hashing: ``h_i``/``g_i`` are a splitmix64 finaliser over the block id xor a per-row seed
derived from ``SketchSpec.seed`` (deterministic across processes and platforms; not the
paper's provably pairwise / four-wise independent polynomial families, which need 128-bit
products numpy lacks; the tests check the Lemma 1/2 bounds empirically). A different hash
can be injected (``SketchSpec(hash=f)``, ``f(keys: int64 array, seed: uint64) -> uint64
array``); the cell of a key is ``f(key, seed_i) mod w`` and its sign the top bit of
``f(key, sign_seed_i)``. An injected function must be a picklable top-level function: the
plan carries it to the workers, which route records by the cell of their block.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from .bdm import SRC_R, SRC_S
from .hashing import splitmix64

KINDS = ("fastagms", "countmin")
DEFAULT_KIND = "fastagms"
DEFAULT_D = 5
WIDTH_PER_TASK = 64  #: default w = 64·r (paper 003 IV: best between 50 and 100 times r)
MIN_WIDTH = 64

HashFn = Callable[[np.ndarray, np.uint64], np.ndarray]



def default_hash(keys: np.ndarray, seed: np.uint64) -> np.ndarray:
    """Default hash of int64 keys under ``seed``: splitmix64(key xor seed)."""
    return splitmix64(np.asarray(keys, dtype=np.int64).view(np.uint64) ^ np.uint64(seed))


@dataclass(frozen=True)
class SketchSpec:
    """How to sketch: ``kind`` ("fastagms" or "countmin"), ``d`` rows, ``w`` counters per
    row (None: ``64·r`` when planning for ``r`` reduce tasks), ``seed`` of the hash
    functions and an optional injected ``hash`` (see the module docstring).

    Checked when built; ``from_dict(spec.to_dict()) == spec`` (without an injected hash).
    """

    kind: str = DEFAULT_KIND
    d: int = DEFAULT_D
    w: int | None = None
    seed: int = 0
    hash: HashFn | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"sketch: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name, lo in (("d", 1), ("w", 2)):
            v = getattr(self, name)
            if name == "w" and v is None:
                continue
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
                raise ValueError(f"sketch: {name} must be an integer >= {lo}, got {v!r}")
        if not isinstance(self.seed, (int, np.integer)) or isinstance(self.seed, bool):
            raise ValueError(f"sketch: seed must be an integer, got {self.seed!r}")
        if self.hash is not None and not callable(self.hash):
            raise ValueError(f"sketch: hash must be a callable (keys, seed) -> uint64 array, "
                             f"got {self.hash!r}")
        object.__setattr__(self, "d", int(self.d))
        object.__setattr__(self, "seed", int(self.seed))
        if self.w is not None:
            object.__setattr__(self, "w", int(self.w))

    def resolved(self, r: int) -> SketchSpec:
        """This spec with ``w`` fixed (``64·r``, at least 64, when it was None)."""
        if self.w is not None:
            return self
        return replace(self, w=max(MIN_WIDTH, WIDTH_PER_TASK * int(r)))

    @property
    def nbytes(self) -> int:
        """Bytes of one source's sketch (int64 counters; FastAGMS keeps two arrays)."""
        if self.w is None:
            raise ValueError("sketch: w is not resolved yet; call spec.resolved(r)")
        return self.d * self.w * 8 * (2 if self.kind == "fastagms" else 1)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "d": self.d, "w": self.w, "seed": self.seed}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SketchSpec:
        unknown = set(d) - {"kind", "d", "w", "seed", "hash"}
        if unknown:
            raise ValueError(f"sketch: unknown option(s) {sorted(unknown)}; valid options are "
                             "kind ('fastagms' or 'countmin'), d, w, seed, hash")
        return cls(**dict(d))

    # -- hash functions ----------------------------------------------------------------

    def row_seeds(self) -> tuple[np.ndarray, np.ndarray]:
        """(cell seed, sign seed) of every row, derived from ``seed``."""
        base = np.uint64(self.seed & 0xFFFFFFFFFFFFFFFF)
        with np.errstate(over="ignore"):
            idx = np.arange(2 * self.d, dtype=np.uint64) + base * np.uint64(2 * self.d + 1)
        seeds = splitmix64(splitmix64(idx))
        return seeds[: self.d], seeds[self.d :]

    def cells(self, keys: np.ndarray, row: int) -> np.ndarray:
        """Cell of every key in ``row`` (int64 in ``[0, w)``)."""
        if self.w is None:
            raise ValueError("sketch: w is not resolved yet; call spec.resolved(r)")
        cell_seeds, _ = self.row_seeds()
        fn = self.hash or default_hash
        h = np.asarray(fn(np.asarray(keys, dtype=np.int64), cell_seeds[row]), dtype=np.uint64)
        return (h % np.uint64(self.w)).astype(np.int64)

    def signs(self, keys: np.ndarray, row: int) -> np.ndarray:
        """±1 of every key in ``row`` (int64)."""
        _, sign_seeds = self.row_seeds()
        fn = self.hash or default_hash
        h = np.asarray(fn(np.asarray(keys, dtype=np.int64), sign_seeds[row]), dtype=np.uint64)
        return 1 - 2 * (h >> np.uint64(63)).astype(np.int64)


def as_sketch_spec(value: Any) -> SketchSpec:
    """A :class:`SketchSpec` from None (defaults), a spec or a dict of options."""
    if value is None:
        return SketchSpec()
    if isinstance(value, SketchSpec):
        return value
    if isinstance(value, Mapping):
        return SketchSpec.from_dict(value)
    raise TypeError("sketch must be a dict such as {'kind': 'countmin', 'd': 5, 'w': 4096} "
                    f"or a SketchSpec, got {type(value).__name__}")


@dataclass(frozen=True)
class Sketch:
    """Counters of one sketch: ``counts`` (Count-Min, d×w int64) and, for FastAGMS,
    ``signed`` (d×w int64); ``spec`` says how they were hashed."""

    spec: SketchSpec
    counts: np.ndarray
    signed: np.ndarray | None

    @property
    def n(self) -> int:
        """Records sketched (every row of ``counts`` sums to it)."""
        return int(self.counts[0].sum()) if self.counts.size else 0

    @property
    def nbytes(self) -> int:
        return int(self.counts.nbytes + (self.signed.nbytes if self.signed is not None else 0))


def build(keys: np.ndarray, spec: SketchSpec, weights: np.ndarray | None = None) -> Sketch:
    """Sketch of one partition: every key (block id) adds its weight (default 1) to one
    counter per row. ``spec.w`` must be resolved. O(d·len(keys)) time, O(d·w) memory."""
    if spec.w is None:
        raise ValueError("sketch: w is not resolved yet; call spec.resolved(r)")
    keys = np.asarray(keys, dtype=np.int64)
    wts = None if weights is None else np.asarray(weights, dtype=np.int64)
    if wts is not None and len(wts) != len(keys):
        raise ValueError(f"sketch: weights has {len(wts)} values for {len(keys)} keys")
    d, w = spec.d, spec.w
    counts = np.zeros((d, w), dtype=np.int64)
    signed = np.zeros((d, w), dtype=np.int64) if spec.kind == "fastagms" else None
    for i in range(d):
        cells = spec.cells(keys, i)
        counts[i] = _bincount(cells, wts, w)
        if signed is not None:
            g = spec.signs(keys, i)
            signed[i] = _bincount(cells, g if wts is None else g * wts, w)
    return Sketch(spec, counts, signed)


def _bincount(cells: np.ndarray, weights: np.ndarray | None, w: int) -> np.ndarray:
    if weights is None:
        return np.bincount(cells, minlength=w).astype(np.int64)
    # weights as float64 are exact up to 2^53 per counter
    return np.rint(np.bincount(cells, weights=weights.astype(np.float64), minlength=w)
                   ).astype(np.int64)


def merge(sketches: Iterable[Sketch]) -> Sketch:
    """Sum of sketches built with the same spec (003 Prop. 1: equals the sketch of the union)."""
    items = list(sketches)
    if not items:
        raise ValueError("sketch: merge needs at least one sketch")
    spec = items[0].spec
    for s in items[1:]:
        if (s.spec.kind, s.spec.d, s.spec.w, s.spec.seed) != (spec.kind, spec.d, spec.w,
                                                             spec.seed):
            raise ValueError(f"sketch: cannot merge sketches of different specs: {spec} and {s.spec}")
    counts = np.asarray(np.sum([s.counts for s in items], axis=0, dtype=np.int64))
    signed = (np.asarray(np.sum([cast(np.ndarray, s.signed) for s in items], axis=0,
                                dtype=np.int64))
              if spec.kind == "fastagms" else None)
    return Sketch(spec, counts, signed)


def estimate(sketch: Sketch, keys: np.ndarray) -> np.ndarray:
    """Point estimates of the records of each key: Count-Min ``min_i C[i, h_i(k)]`` (never
    below the truth), FastAGMS the median over rows of ``g_i(k)·C[i, h_i(k)]``."""
    spec = sketch.spec
    keys = np.asarray(keys, dtype=np.int64)
    per_row = np.empty((spec.d, len(keys)), dtype=np.int64)
    for i in range(spec.d):
        cells = spec.cells(keys, i)
        if spec.kind == "countmin":
            per_row[i] = sketch.counts[i, cells]
        else:
            per_row[i] = spec.signs(keys, i) * cast(np.ndarray, sketch.signed)[i, cells]
    if spec.kind == "countmin":
        return per_row.min(axis=0)
    return np.median(per_row, axis=0)


def inner_product(a: Sketch, b: Sketch) -> float:
    """Estimated join size ``Σ_k n_a(k)·n_b(k)``: Count-Min takes the smallest row inner
    product (every row overestimates), FastAGMS the median one (003 ch. IV, Lemma 2)."""
    rows = _row_products(a, b)
    return float(rows.min() if a.spec.kind == "countmin" else np.median(rows))


def _row_products(a: Sketch, b: Sketch) -> np.ndarray:
    if a.spec.kind == "countmin":
        return (a.counts.astype(np.float64) * b.counts).sum(axis=1)
    return (cast(np.ndarray, a.signed).astype(np.float64) * cast(np.ndarray, b.signed)
            ).sum(axis=1)


@dataclass(frozen=True)
class CellWork:
    """The per-cell work array of 003 ch. IV in the chosen row ``theta``.

    ``work[j]``: estimated comparisons of cell ``j`` (float, 0 when the cell cannot hold a
    pair); ``count_r[j]``/``count_s[j]``: records of cell ``j`` per source (exact: the
    Count-Min counters); ``estimator``: which estimate ``work`` holds (see
    :func:`cell_work`); ``total``: the estimated total work ``L̂`` (sum of ``work``).
    """

    theta: int
    work: np.ndarray
    count_r: np.ndarray
    count_s: np.ndarray
    estimator: str = ""

    @property
    def total(self) -> float:
        return float(self.work.sum())


ESTIMATES = ("bounded", "paper")


def cell_work(r: Sketch, s: Sketch | None, method: str = "bounded") -> CellWork:
    """``C^θ``: estimated comparisons per cell, for link (``s`` given) or dedupe.

    Per row ``i`` and cell ``j`` three estimates exist. Count-Min: ``c_R·c_S`` (dedupe
    ``c(c−1)/2``), exact for a cell of one block and never below the truth: the error is
    the *collision mass*, the cross products of different blocks sharing the cell.
    FastAGMS: ``s_R·s_S`` (dedupe ``(s² − c)/2``) from the signed counters, unbiased but
    off by the same cross products with random signs, so it can fall far below the truth.
    Split by sign (FastAGMS kind only): the blocks of a cell with ``g = +1`` hold
    ``(c + s)/2`` records, those with ``g = −1`` ``(c − s)/2``, and the work is at most that
    of one block per sign: ``(c_R·c_S + s_R·s_S)/2`` (the mean of the other two), exact
    for a cell of one block or of two with opposite signs, never below the truth.

    ``method="paper"`` (003 ch. IV): θ is the row whose FastAGMS total is the median, the
    cells hold the FastAGMS estimate. ``method="bounded"`` (default): θ is the row with the
    least collision mass (smallest Count-Min total), where cells mix the fewest blocks;
    a Count-Min sketch uses its Count-Min estimate there, a FastAGMS sketch the sign-split
    bound. Neither ever undershoots, and an underestimated cell is what overloads a reduce
    task: with the paper's estimate, two large blocks of opposite signs sharing a cell
    cancel to almost nothing, and the ranges that get that cell are loaded many times
    over (``benchmarks/bench_strategies.py``, 100 blocks in a sketch of ``w = 2·r``:
    ``cellrange`` 1.27 bounded against 4.98 with the paper's estimate on equal blocks,
    1.13 against 3.35 on Zipf 0.5). The price is an overestimate when many blocks share
    each cell (many more blocks than ``w``): with 20 000 Zipf-0.5 blocks and ``w = 64·r``
    ``cellrange`` reaches 1.73 bounded against 1.43 with the paper's estimate (``cellblock``
    1.19 against 1.36); a wider sketch helps most there. Every estimate is then
    clipped to ``[1, Count-Min]`` for a cell that can hold a pair (so it is planned) and
    set to 0 for one that cannot.
    """
    if method not in ESTIMATES:
        raise ValueError(f"estimate must be one of {', '.join(ESTIMATES)}, got {method!r}")
    cr = r.counts.astype(np.float64)
    cs = s.counts.astype(np.float64) if s is not None else None
    cm = cr * cs if cs is not None else cr * (cr - 1) / 2
    cm_totals = cm.sum(axis=1)
    if r.spec.kind == "countmin":
        theta = int(np.argmin(cm_totals))
        est, name = cm[theta], "countmin"
    else:
        sr = cast(np.ndarray, r.signed).astype(np.float64)
        ams = sr * cast(np.ndarray, s.signed) if s is not None else (sr * sr - cr) / 2
        totals = ams.sum(axis=1)
        median_row = int(np.argsort(totals, kind="stable")[(len(totals) - 1) // 2])
        if method == "paper":
            theta = median_row
            est, name = ams[theta], "fastagms"
        else:
            theta = int(np.argmin(cm_totals))
            est, name = (cm[theta] + ams[theta]) / 2, "sign-split bound"
    count_r = r.counts[theta].copy()
    count_s = s.counts[theta].copy() if s is not None else np.zeros_like(count_r)
    upper = cm[theta]
    work = np.where(upper >= 1, np.clip(est, 1.0, np.maximum(upper, 1.0)), 0.0)
    return CellWork(theta, work, count_r, count_s, name)


@dataclass(frozen=True)
class SketchProfile:
    """What the cell strategies plan on: the merged sketch of each source.

    ``r`` is the sketch of the left frame (the only one for dedupe), ``s`` of the right
    one (None for dedupe); ``n_parts`` the input partitions per source. Built by the
    engine (:func:`erblock.engine.run.profile_sketch`) or from a BDM
    (:func:`from_bdm`: the same counters, since a sketch is linear in the records).
    """

    spec: SketchSpec
    r: Sketch
    s: Sketch | None
    link: bool
    n_parts: tuple[int, int] = (0, 0)

    @property
    def n_records(self) -> int:
        return self.r.n + (self.s.n if self.s is not None else 0)

    @property
    def nbytes(self) -> int:
        return self.r.nbytes + (self.s.nbytes if self.s is not None else 0)

    def work(self, method: str = "bounded") -> CellWork:
        return cell_work(self.r, self.s if self.link else None, method)


def from_bdm(bdm: Any, spec: SketchSpec) -> SketchProfile:
    """The sketch profile of the records a BDM counts (equal to sketching the records)."""
    def side(src: int) -> Sketch:
        rows = bdm.src == src
        return build(bdm.block[rows], spec, bdm.count[rows])

    return SketchProfile(spec, side(SRC_R), side(SRC_S) if bdm.link else None, bdm.link,
                         tuple(bdm.n_parts))


def error_bounds(w: int, d: int) -> tuple[float, float]:
    """(ε, δ) of a ``d × w`` sketch: ε = e/w, δ = e^−d (003 Lemma 1 and 2)."""
    return math.e / w, math.exp(-d)


def size_for(epsilon: float, delta: float) -> tuple[int, int]:
    """(w, d) that give error ``ε`` with probability ``1 − δ``: w = ⌈e/ε⌉, d = ⌈ln 1/δ⌉."""
    if not 0 < epsilon < 1 or not 0 < delta < 1:
        raise ValueError(f"sketch: epsilon and delta must be in (0, 1), got {epsilon}, {delta}")
    return math.ceil(math.e / epsilon), math.ceil(math.log(1 / delta))
