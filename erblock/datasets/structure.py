"""Who is who in generated records: the partition spec, its random streams, block sizes
of controlled skew, and which records are duplicates of which (see
:mod:`erblock.datasets.generator` for the guarantees)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Skew = tuple[str, float] | None


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class Spec:
    """Everything a worker needs to build one partition (small, picklable)."""

    kind: str
    task: str
    n_blocks: int
    skew: Skew
    dup_rate: float
    typo_rate: float
    token_drop_rate: float
    missing_rate: float
    key_error_rate: float
    seed: int
    sizes: tuple[int, ...]  # records per partition (each side, for link)

    @property
    def n(self) -> int:
        return sum(self.sizes)

    def offset(self, part: int) -> int:
        return sum(self.sizes[:part])

    def shares(self) -> np.ndarray:
        # recomputed on the worker: millions of blocks must not travel in the graph
        return block_shares(self.n_blocks, self.skew)


# Stream ids: SeedSequence(seed, spawn_key=(partition, side, purpose, field)), so each
# field's values do not depend on which other columns are built.
R, S = 0, 1
STRUCT, VALUES, NOISE, MISSING = 0, 1, 2, 3


def rng_for(spec: Spec, part: int, side: int, purpose: int, field: int = 0) -> np.random.Generator:
    return np.random.default_rng(
        np.random.SeedSequence(spec.seed, spawn_key=(part, side, purpose, field))
    )


def block_shares(n_blocks: int, skew: Skew = ("exp", 0.5)) -> np.ndarray:
    """Target share of records in each block: the ``block_key`` distribution of :func:`generate`.

    ``("exp", s)``: share of block ``k`` ∝ ``exp(-s*k)``; ``("zipf", a)``: ∝ ``(k+1)**-a``;
    ``None``: uniform. ``k = 0 .. n_blocks-1``; block 0 is the largest.
    """
    if not isinstance(n_blocks, (int, np.integer)) or n_blocks < 1:
        raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}")
    k = np.arange(n_blocks, dtype=np.float64)
    if skew is None:
        w = np.ones(n_blocks)
    else:
        if not (isinstance(skew, (tuple, list)) and len(skew) == 2 and skew[0] in ("exp", "zipf")):
            raise ValueError(f"skew must be None, ('exp', s) or ('zipf', alpha), got {skew!r}")
        law, a = skew
        if isinstance(a, bool) or not isinstance(a, (int, float, np.number)):
            raise ValueError(f"skew parameter must be a finite number >= 0, got {skew!r}")
        if not np.isfinite(a) or a < 0:
            raise ValueError(f"skew parameter must be a finite number >= 0, got {skew!r}")
        w = np.exp(-float(a) * k) if law == "exp" else (k + 1) ** -float(a)
    return w / w.sum()


# --------------------------------------------------------------------------- structure


def dedupe_structure(spec: Spec, part: int) -> dict[str, np.ndarray]:
    """Who is a duplicate of whom, and block keys, for one dedupe partition."""
    m = spec.sizes[part]
    rng = rng_for(spec, part, R, STRUCT)
    p = spec.shares()
    n_dup = int(round(m * spec.dup_rate))
    n_orig = m - n_dup
    if m and not n_orig:  # at least one original to copy from
        n_orig, n_dup = 1, m - 1
    orig_key = rng.choice(p.size, size=n_orig, p=p)
    src = rng.integers(0, max(n_orig, 1), size=n_dup)
    entity = np.r_[np.arange(n_orig), src]
    key = orig_key[entity]
    is_dup = np.r_[np.zeros(n_orig, bool), np.ones(n_dup, bool)]
    err = is_dup & (rng.random(m) < spec.key_error_rate)
    key[err] = rng.choice(p.size, size=int(err.sum()), p=p)
    perm = rng.permutation(m)  # row r holds record perm[r]: duplicates are not at the end
    ids = spec.offset(part) + np.arange(m, dtype=np.int64)
    entity = entity[perm]
    first = np.unique(entity, return_index=True)[1]  # rows are in id order: first = min id
    return {
        "ids": ids,
        "entity": entity,
        "n_entities": np.int64(n_orig),
        "noisy": is_dup[perm],
        "block_key": key[perm].astype(np.int64),
        "entity_id": ids[first][entity],
    }


def link_structure(spec: Spec, part: int) -> dict[str, dict[str, np.ndarray]]:
    """R records and S records (copies of distinct R records plus fresh ones)."""
    m = spec.sizes[part]
    p = spec.shares()
    rng_r, rng_s = rng_for(spec, part, R, STRUCT), rng_for(spec, part, S, STRUCT)
    r_ids = spec.offset(part) + np.arange(m, dtype=np.int64)
    s_ids = spec.n + r_ids
    r_key = rng_r.choice(p.size, size=m, p=p).astype(np.int64)
    n_copy = int(round(m * spec.dup_rate))
    src = rng_s.choice(m, size=n_copy, replace=False)  # R rows copied into S
    fresh = m - n_copy
    key = np.r_[r_key[src], rng_s.choice(p.size, size=fresh, p=p)].astype(np.int64)
    is_copy = np.r_[np.ones(n_copy, bool), np.zeros(fresh, bool)]
    err = is_copy & (rng_s.random(m) < spec.key_error_rate)
    key[err] = rng_s.choice(p.size, size=int(err.sum()), p=p)
    perm = rng_s.permutation(m)
    # S entities: 0..n_copy-1 are the copied R rows, n_copy.. are fresh S entities
    s_entity = np.arange(m)[perm]
    is_copy = is_copy[perm]
    r_of = np.full(m, -1, dtype=np.int64)  # the copied R row, -1 for fresh records
    r_of[is_copy] = src[s_entity[is_copy]]
    return {
        "r": {
            "ids": r_ids,
            "block_key": r_key,
            "entity_id": r_ids,
            "noisy": np.zeros(m, bool),
        },
        "s": {
            "ids": s_ids,
            "entity": s_entity,
            "block_key": key[perm],
            "entity_id": np.where(is_copy, r_ids[np.maximum(r_of, 0)], s_ids),
            "noisy": is_copy,
            "src": src,
            "r_of": r_of,
        },
    }


