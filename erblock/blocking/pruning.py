"""Lossy pruning of a multi-valued key's blocks, by request only.

Token and q-gram blocking are lossless in erblock: the biggest block is split and
balanced like any other. When its pairs are not worth comparing at all, a pass can be
pruned as JedAI does, and the run report says what it cost:

* **block purging** (``max_comparisons``): blocks that imply more comparisons than this
  are dropped; ``"auto"`` picks the limit from the block sizes as JedAI's comparison-based
  block purging does (:func:`purge_threshold`, smoothing factor ``smoothing``, 1.025 by
  default);
* **block filtering** (``keep``): each record stays only in its ``keep`` smallest blocks
  of the pass (by comparisons, ties by block id) when ``keep`` is an integer, or in that
  share of them when it is a float in (0, 1] (rounded up, at least one). Blocks without
  any comparison (one record; one side of a link) hold no pair and are not counted as
  a record's blocks (JedAI's block building drops them).

Purging runs first; filtering then ranks the blocks that are left. Both are decided from
the exact block sizes of the whole input (one count of the pruned passes before and one
after, for the report), so the result
does not depend on partitioning. A pair that shared a block it lost may still meet in
another block the two records kept; pairs are still compared once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .cli_args import cli_args, cli_int, option_float, option_int
from .keys import CliParse, KeySpec

#: JedAI's default smoothing factor of comparison-based block purging
PURGE_SMOOTHING = 1.025


@dataclass(frozen=True)
class Pruned(KeySpec):
    """``key`` (a multi-valued key) with purged and/or filtered blocks; see the module."""

    key: KeySpec
    max_comparisons: int | str | None = None
    keep: float | None = None
    smoothing: float = PURGE_SMOOTHING
    kind: ClassVar[str] = "pruned"
    cli_names: ClassVar[tuple[str, ...]] = ("purge", "filter")
    cli_usage: ClassVar[str] = ("purge:MAX_COMPARISONS|auto:KEY | filter:KEEP:KEY "
                                "(KEY e.g. tokens:title)")

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        if parse is None:
            raise ValueError("a pruned key's command-line form is read through "
                             "erblock.blocking.parse_key")
        got = cli_args(name, args, 2, 8, cls.cli_usage)
        inner = parse(":".join(got[1:]))
        m: int | str | None = None
        if name == "purge":
            m = "auto" if got[0] == "auto" else cli_int(got[0], cls.cli_usage)
        k: float | None = None
        if name == "filter":
            try:
                k = int(got[0]) if got[0].isdigit() else float(got[0])
            except ValueError:
                raise ValueError(f"{got[0]!r} is not a number of blocks or a fraction "
                                 f"(expected {cls.cli_usage})") from None
        if isinstance(inner, Pruned):  # purge:…:filter:…:KEY
            if (m is not None and inner.max_comparisons is not None) or (
                    k is not None and inner.keep is not None):
                raise ValueError(f"{name} is given twice in {':'.join([name, *args])!r}; "
                                 f"expected {cls.cli_usage}, each at most once")
            return cls(inner.key, m if m is not None else inner.max_comparisons,
                       k if k is not None else inner.keep)
        return cls(inner, m, k)

    def __post_init__(self) -> None:
        if isinstance(self.key, Pruned):
            raise ValueError("prune: give max_comparisons and keep in one prune(...), not "
                             "one pruned key inside another")
        if not isinstance(self.key, KeySpec) or not self.key.multi:
            raise ValueError(f"pruning needs a multi-valued key (tokens, qgrams, items, "
                             f"minhash), got {self.key!r}")
        if self.key.ordered:
            raise ValueError("a sorted-neighbourhood key has blocks of at most 2·window "
                             "records: there is nothing to prune")
        m = self.max_comparisons
        if m is not None and m != "auto" and (
                not isinstance(m, (int, np.integer)) or isinstance(m, bool) or m < 1):
            raise ValueError(f"max_comparisons must be an integer >= 1 or 'auto', got {m!r}")
        sf = self.smoothing
        if isinstance(sf, bool) or not isinstance(sf, (int, float, np.number)) \
                or not sf >= 1:
            raise ValueError(f"smoothing must be a number >= 1 (JedAI's smoothing factor), "
                             f"got {sf!r}")
        if isinstance(m, (int, np.integer)):
            option_int(self, "max_comparisons", "max_comparisons", 1)
        option_float(self, "smoothing")
        k = self.keep
        ok = k is None or (not isinstance(k, bool) and (
            (isinstance(k, (int, np.integer)) and k >= 1)
            or (isinstance(k, (float, np.floating)) and 0 < k <= 1)))
        if not ok:
            raise ValueError(f"keep must be an integer >= 1 (blocks) or a fraction in (0, 1], "
                             f"got {k!r}")
        if isinstance(k, (int, np.integer)):
            option_int(self, "keep", "keep", 1)
        elif k is not None:
            option_float(self, "keep")
        if m is None and k is None:
            raise ValueError("prune: give max_comparisons (block purging), keep (block "
                             "filtering) or both")

    @property
    def multi(self) -> bool:
        return True

    @property
    def columns(self) -> tuple[str, ...]:
        return self.key.columns

    @property
    def selects(self) -> tuple[str, ...]:
        return self.key.selects

    def values(self, df: pd.DataFrame) -> pd.Series:
        return self.key.values(df)

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        return self.key.items(df)

    def kept(self, n_blocks: np.ndarray) -> np.ndarray:
        """How many of its blocks a record with ``n_blocks`` blocks keeps."""
        n = np.asarray(n_blocks, dtype=np.int64)
        if self.keep is None:
            return n
        if isinstance(self.keep, (float, np.floating)):  # a share (1.0: all blocks)
            return np.maximum(1, np.ceil(n * self.keep - 1e-9).astype(np.int64))
        return np.minimum(n, int(math.ceil(self.keep)))

    def resolved(self, limit: int) -> Pruned:
        """This key with ``max_comparisons="auto"`` replaced by ``limit``."""
        return replace(self, max_comparisons=max(1, int(limit))) \
            if self.max_comparisons == "auto" else self

    def to_dict(self) -> dict[str, Any]:
        m, k = self.max_comparisons, self.keep
        return {"kind": self.kind, "key": self.key.to_dict(),
                "max_comparisons": m if m is None or m == "auto" else int(m),
                "keep": None if k is None else (float(k) if isinstance(k, (float, np.floating))
                                               else int(k)),
                "smoothing": float(self.smoothing)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any],
                  parse: Callable[[Mapping[str, Any]], KeySpec] | None = None) -> KeySpec:
        if parse is None:
            raise ValueError("a pruned key is read through erblock.blocking.key_from_dict")
        return cls(parse(d["key"]), d.get("max_comparisons"), d.get("keep"),
                   d.get("smoothing", PURGE_SMOOTHING))


def prune(key: KeySpec, max_comparisons: int | str | None = None,
          keep: float | None = None, smoothing: float = PURGE_SMOOTHING) -> Pruned:
    """``key`` with block purging (drop blocks above ``max_comparisons``; ``"auto"``: the
    limit JedAI's comparison-based block purging picks, see :func:`purge_threshold`)
    and/or block filtering (keep each record in its ``keep`` smallest blocks, or that
    share of them). Lossy: the run report counts the blocks and comparisons dropped."""
    return Pruned(key, max_comparisons, keep, smoothing)


def purge_threshold(comparisons: np.ndarray, sizes: np.ndarray,
                    smoothing: float = PURGE_SMOOTHING) -> int:
    """The largest comparisons per block that comparison-based block purging keeps.

    JedAI's rule (Papadakis et al., "Comparative analysis of approximate blocking
    techniques for entity resolution", PVLDB 2016; JedAI's
    ``ComparisonsBasedBlockPurging``): group the
    blocks by their comparisons into levels c_0 < c_1 < ..., and let BC_i / CC_i be the
    records (block assignments) / comparisons of all blocks up to level i. Walking down
    from the largest level, a level is purged while dropping it raises the assignments per
    comparison BC/CC by at least the ``smoothing`` factor; the walk stops at the first
    level i with ``BC_i · CC_{i+1} < smoothing · CC_i · BC_{i+1}`` and keeps the blocks up
    to level i + 1. (If no level stops it, the blocks up to c_1 are kept, as in JedAI; a
    single level is kept whole. pyJedAI's port never tests the smallest level, so there it
    keeps up to c_2, or purges everything when there are two levels; where a level stops
    the walk, as on real token blocks, both give the same limit.) Blocks without
    comparisons play no part.

    Parameters
    ----------
    comparisons, sizes
        Comparisons and records of every block (the whole input's, not a partition's).
    smoothing
        JedAI's smoothing factor (>= 1): larger stops the walk sooner and so purges
        less (``inf``: nothing).
    """
    c = np.asarray(comparisons, dtype=np.float64)
    s = np.asarray(sizes, dtype=np.float64)
    live = c > 0
    levels, at = np.unique(c[live], return_inverse=True)
    if len(levels) <= 1:
        return int(levels[0]) if len(levels) else 0
    bc = np.cumsum(np.bincount(at, weights=s[live]))
    cc = np.cumsum(np.bincount(at, weights=c[live]))
    stop = np.flatnonzero(bc[:-1] * cc[1:] < smoothing * cc[:-1] * bc[1:])
    return int(levels[stop[-1] + 1] if len(stop) else levels[1])
