"""MinHash LSH blocking: records whose token (or q-gram) sets are similar share a block.

A record's shingles are the tokens of the normalised text of a column (or its q-grams with
``q=``). Each of ``bands × rows`` hash functions maps a shingle to 64 bits; the record's
signature holds the minimum of each function over its shingles, and every band of
``rows`` minima is one key: two records share a block when they agree on a whole band,
which happens with probability ``1 − (1 − J^rows)^bands`` for Jaccard similarity ``J``.
A pair that shares several bands is compared once, like any multi-valued key.

Everything is computed per distinct text with numpy over all shingles at once (no loop
per record), and is reproducible: shingle ``x`` (pandas' 64-bit ``hash_array`` of its
text) goes through hash function ``i`` as ``splitmix64(x XOR seed_i)`` with the seeds
``numpy.random.default_rng(seed).integers(0, 2**64, bands * rows, dtype=uint64)``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .cli_args import cli_args, option_int
from .keys import CliParse, KeySpec
from .multi import MultiColumnKey, text_qgrams, text_tokens
from .text import as_key_strings, explode_uniques, factorize_text, normalise_text

DEFAULT_PERMUTATIONS = 128
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on uint64 (wrapping arithmetic): a well-mixed 64-bit hash."""
    with np.errstate(over="ignore"):
        z = x ^ (x >> np.uint64(30))
        z = z * _M1
        z = z ^ (z >> np.uint64(27))
        z = z * _M2
        return z ^ (z >> np.uint64(31))


@lru_cache(maxsize=64)
def lsh_params(threshold: float, num_perm: int = DEFAULT_PERMUTATIONS) -> tuple[int, int]:
    """(bands, rows) with bands·rows ≤ ``num_perm`` minimising the chance of missing a pair
    above ``threshold`` plus the chance of a candidate below it (each integrated over the
    Jaccard similarity, equal weights), as datasketch's MinHashLSH chooses them."""
    j = np.linspace(0.0, 1.0, 2001)
    below, above = j <= threshold, j >= threshold
    best: tuple[float, int, int] | None = None
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            p = 1.0 - (1.0 - j**r) ** b
            err = np.trapezoid(p[below], j[below]) + np.trapezoid(1.0 - p[above], j[above])
            if best is None or err < best[0] - 1e-12:
                best = (float(err), b, r)
    assert best is not None
    return best[1], best[2]


@dataclass(frozen=True)
class MinHash(MultiColumnKey):
    """MinHash LSH on the tokens (or ``q``-grams) of a column: ``bands`` keys per record.

    Give ``threshold`` (the Jaccard similarity from which pairs should become candidates;
    bands and rows are chosen for it among ``num_perm`` hash functions) or ``bands`` and
    ``rows`` explicitly. ``seed`` fixes the hash functions.
    """

    column: str
    threshold: float | None = 0.8
    bands: int | None = None
    rows: int | None = None
    q: int | None = None
    num_perm: int = DEFAULT_PERMUTATIONS
    seed: int = 1
    kind: ClassVar[str] = "minhash"
    cli_names: ClassVar[tuple[str, ...]] = ("minhash",)
    cli_usage: ClassVar[str] = "minhash:COLUMN[:THRESHOLD]"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        got = cli_args(name, args, 1, 2, cls.cli_usage)
        if len(got) == 1:
            return cls(got[0])
        try:
            return cls(got[0], float(got[1]))
        except ValueError:
            raise ValueError(f"{got[1]!r} is not a threshold in (0, 1) "
                             f"(expected {cls.cli_usage})") from None

    def __post_init__(self) -> None:
        if self.bands is None and self.rows is None:
            t = self.threshold
            if not isinstance(t, numbers.Real) or isinstance(t, bool) or not 0 < t < 1:
                raise ValueError(f"minhash threshold must be a number in (0, 1), got {t!r}")
            object.__setattr__(self, "threshold", float(t))
        elif self.bands is None or self.rows is None:
            raise ValueError("minhash: give both bands and rows, or a threshold")
        for name in ("bands", "rows", "q", "num_perm"):
            if getattr(self, name) is not None:
                option_int(self, name, f"minhash {name}", 1)
        option_int(self, "seed", "minhash seed", 0)

    @property
    def shape(self) -> tuple[int, int]:
        """(bands, rows) this key uses."""
        if self.bands is not None and self.rows is not None:
            return self.bands, self.rows
        assert self.threshold is not None
        return lsh_params(float(self.threshold), self.num_perm)

    def seeds(self) -> np.ndarray:
        """The uint64 seed of every hash function (band-major: band b uses [b·rows, …))."""
        b, r = self.shape
        return np.random.default_rng(self.seed).integers(0, 2**64, size=b * r, dtype=np.uint64)

    def shingles(self, text: str) -> list[str]:
        """The shingles of one normalised text."""
        return text_tokens(text) if self.q is None else text_qgrams(text, self.q)

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        """One key per band of every record with shingles: (position, int64 key)."""
        s = normalise_text(as_key_strings(df[self.column]))
        uniques, codes = factorize_text(s)
        lists = [self.shingles(u) for u in uniques]
        sigs = self.band_keys(lists)  # (uniques, bands)
        bands = list(range(sigs.shape[1]))
        per_unique = [bands if x else [] for x in lists]
        pos, band = explode_uniques(per_unique, codes)
        band = band.astype(np.int64)
        unique_of = codes[pos]
        return pos, pd.Series(sigs[unique_of, band], dtype=np.int64)

    def band_keys(self, shingle_lists: Sequence[Sequence[str]]) -> np.ndarray:
        """int64 key of every band of every shingle list (rows of empty lists are 0)."""
        b, r = self.shape
        n = len(shingle_lists)
        lens = np.fromiter((len(x) for x in shingle_lists), dtype=np.int64, count=n)
        flat = np.array([t for x in shingle_lists for t in x], dtype=object)
        out = np.zeros((n, b), dtype=np.int64)
        if len(flat) == 0:
            return out
        base = pd.util.hash_array(flat, categorize=True)
        owner = np.repeat(np.arange(n), lens)
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        rows_of = owner[starts]  # lists with at least one shingle
        seeds = self.seeds()
        for band in range(b):
            acc = np.full(len(rows_of), np.uint64(band) + np.uint64(0x9E3779B97F4A7C15))
            for k in range(band * r, band * r + r):
                mins = np.minimum.reduceat(splitmix64(base ^ seeds[k]), starts)
                acc = splitmix64(acc ^ mins)
            out[rows_of, band] = acc.view(np.int64)
        return out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "column": self.column}
        for name in ("threshold", "bands", "rows", "q", "num_perm", "seed"):
            v = getattr(self, name)
            d[name] = v if v is None else (float(v) if name == "threshold" else int(v))
        return d
