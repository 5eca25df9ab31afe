"""Lossy pruning of a multi-valued key's blocks, by request only.

Token and q-gram blocking are lossless in erblock: the biggest block is split and
balanced like any other. When its pairs are not worth comparing at all, a pass can be
pruned as JedAI does, and the run report says what it cost:

* **block purging** (``max_comparisons``): blocks that imply more comparisons than this
  are dropped;
* **block filtering** (``keep``): each record stays only in its ``keep`` smallest blocks
  of the pass (by comparisons, ties by block id) when ``keep`` is an integer, or in that
  share of them when it is a float in (0, 1] (rounded up, at least one).

Purging runs first; filtering then ranks the blocks that are left. Both are decided from
the exact block sizes of the whole input (one count of the pruned passes before and one
after, for the report), so the result
does not depend on partitioning. A pair that shared a block it lost may still meet in
another block the two records kept; pairs are still compared once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .cli_args import cli_args, cli_int
from .keys import CliParse, KeySpec


@dataclass(frozen=True)
class Pruned(KeySpec):
    """``key`` (a multi-valued key) with purged and/or filtered blocks; see the module."""

    key: KeySpec
    max_comparisons: int | None = None
    keep: float | None = None
    kind: ClassVar[str] = "pruned"
    cli_names: ClassVar[tuple[str, ...]] = ("purge", "filter")
    cli_usage: ClassVar[str] = "purge:MAX_COMPARISONS:KEY | filter:KEEP:KEY (KEY e.g. tokens:title)"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        if parse is None:
            raise ValueError("a pruned key's command-line form is read through "
                             "erblock.blocking.parse_key")
        got = cli_args(name, args, 2, 8, cls.cli_usage)
        inner = parse(":".join(got[1:]))
        m = cli_int(got[0], cls.cli_usage) if name == "purge" else None
        k: float | None = None
        if name == "filter":
            try:
                k = int(got[0]) if got[0].isdigit() else float(got[0])
            except ValueError:
                raise ValueError(f"{got[0]!r} is not a number of blocks or a fraction "
                                 f"(expected {cls.cli_usage})") from None
        if isinstance(inner, Pruned):  # purge:…:filter:…:KEY
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
        if m is not None and (not isinstance(m, (int, np.integer)) or isinstance(m, bool)
                              or m < 1):
            raise ValueError(f"max_comparisons must be an integer >= 1, got {m!r}")
        k = self.keep
        ok = k is None or (not isinstance(k, bool) and (
            (isinstance(k, (int, np.integer)) and k >= 1)
            or (isinstance(k, (float, np.floating)) and 0 < k <= 1)))
        if not ok:
            raise ValueError(f"keep must be an integer >= 1 (blocks) or a fraction in (0, 1], "
                             f"got {k!r}")
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

    def to_dict(self) -> dict[str, Any]:
        m, k = self.max_comparisons, self.keep
        return {"kind": self.kind, "key": self.key.to_dict(),
                "max_comparisons": None if m is None else int(m),
                "keep": None if k is None else (float(k) if isinstance(k, (float, np.floating))
                                               else int(k))}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any],
                  parse: Callable[[Mapping[str, Any]], KeySpec] | None = None) -> KeySpec:
        if parse is None:
            raise ValueError("a pruned key is read through erblock.blocking.key_from_dict")
        return cls(parse(d["key"]), d.get("max_comparisons"), d.get("keep"))


def prune(key: KeySpec, max_comparisons: int | None = None,
          keep: float | None = None) -> Pruned:
    """``key`` with block purging (drop blocks above ``max_comparisons``) and/or block
    filtering (keep each record in its ``keep`` smallest blocks, or that share of them).
    Lossy: the run report counts the blocks and comparisons dropped."""
    return Pruned(key, max_comparisons, keep)
