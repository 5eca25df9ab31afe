"""Sorted-neighbourhood blocking: every pair of records at most ``window − 1`` apart in
the order of a sort key.

Records are ordered by the text of a key (any single-valued key spec; code-point order),
or by number when the key is a raw numeric column (:func:`numeric_order`), ties by
source (R before S) and input order; records without a key take no part. Every
pair at most ``window − 1`` positions apart is a candidate (for link only R × S pairs),
exactly as the sequential method (Hernández and Stolfo) gives them.

To run it in parallel with every balancing strategy, the order is cut into chunks of
``window`` positions and block ``c`` holds chunks ``c`` and ``c + 1``: every window pair
lies in some block, every block has at most ``2·window`` records (so the work is spread
whatever the key's skew, as in Kolb et al.'s RepSN, where the ``window − 1`` records at a
boundary are replicated to the next range), and the comparer keeps a pair of block ``c``
only when its records are less than ``window`` apart and the earlier one lies in chunk
``c`` — so each window pair is compared once (:mod:`erblock.engine.tasks.keysets`).

Global positions come from a small table, not a sort of the records: every input
partition counts its key values (:func:`value_counts`); :func:`order_starts` turns the
counts of all partitions into the first position of every (value, source, partition),
and a record's position is that start plus its rank among its partition's records with
the same value (:func:`positions`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .cli_args import cli_args, cli_int, option_int
from .keys import CliParse, Column, KeySpec
from .text import blank


@dataclass(frozen=True)
class SortedNeighbourhood(KeySpec):
    """Pairs within ``window`` consecutive records in the order of ``key`` (a single-valued
    key spec: a column, a normalised column, a prefix, a phonetic code, a composite)."""

    key: KeySpec
    window: int
    kind: ClassVar[str] = "sorted_neighbourhood"
    cli_names: ClassVar[tuple[str, ...]] = ("sn",)
    cli_usage: ClassVar[str] = "sn:COLUMN:WINDOW"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        col, w = cli_args(name, args, 2, 2, cls.cli_usage)
        return cls(Column(col), cli_int(w, cls.cli_usage))

    def __post_init__(self) -> None:
        if not isinstance(self.key, KeySpec):
            raise TypeError(f"sorted_neighbourhood: key must be a key spec, got {self.key!r}")
        if self.key.multi or isinstance(self.key, SortedNeighbourhood):
            raise ValueError("sorted_neighbourhood: the sort key must give one value per "
                             f"record, got {self.key!r}")
        option_int(self, "window", "sorted_neighbourhood: window", 2)

    @property
    def multi(self) -> bool:
        return True

    @property
    def ordered(self) -> bool:
        """Needs the global order of the run's records (the engine computes it)."""
        return True

    @property
    def columns(self) -> tuple[str, ...]:
        return self.key.columns

    @property
    def selects(self) -> tuple[str, ...]:
        return self.key.selects

    def values(self, df: pd.DataFrame) -> pd.Series:
        raise TypeError(f"{self!r} has no key per record: its blocks depend on the order of "
                        "all records (the engine computes them)")

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        raise TypeError(f"{self!r} has no keys per record alone: its blocks depend on the "
                        "order of all records (the engine computes them)")

    @property
    def numeric_column(self) -> str | None:
        """The column when the key is a raw column, whose numbers sort as numbers."""
        return self.key.column if type(self.key) is Column else None

    def check_types(self, dtypes: Mapping[str, Any]) -> None:
        """Refuse sources whose sort column is numeric in some and not in others
        (``dtypes``: source name -> the column's dtype): numbers and text have no one order."""
        if self.numeric_column is None:
            return
        num = {name: is_sortable_number(d) for name, d in dtypes.items()}
        if len(set(num.values())) > 1:
            raise ValueError(
                f"key {self!r}: column {self.numeric_column!r} is numeric in "
                f"{', '.join(n for n, v in num.items() if v)} but not in "
                f"{', '.join(n for n, v in num.items() if not v)}; sorted neighbourhood "
                "orders numbers by value and text by code point, so the sources would not "
                "share one order: give the column one type in both (e.g. with pd.to_numeric)")

    def by_number(self, dtypes: Sequence[Any]) -> bool:
        """Whether the pass orders by number: a raw column numeric in every input
        (``dtypes``: the column's dtype in each input's meta). Decided once per pass, so
        a partition whose dtype strays from its meta cannot mix the two orders."""
        return self.numeric_column is not None and all(is_sortable_number(d) for d in dtypes)

    def sort_text(self, df: pd.DataFrame, numeric: bool) -> pd.Series:
        """The text records are sorted by (missing, empty or blank: not in the order);
        with ``numeric`` (the pass's :meth:`by_number`) a raw column gives text whose
        code-point order is the numbers' order."""
        col = self.numeric_column
        if numeric:
            assert col is not None
            try:
                return numeric_order(df[col])
            except (ValueError, TypeError) as e:
                raise ValueError(f"key {self!r}: column {col!r} is numeric in the input's "
                                 f"meta but a partition holds {df[col].dtype} values that "
                                 f"are not numbers ({e})") from e
        s = self.key.values(df).astype("string")
        return s.mask(blank(s))

    def blocks(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row position, chunk of the block) of every block of records at global
        positions ``pos`` (−1: not in the order): chunks ``pos // window − 1`` and
        ``pos // window``, the first left out for chunk 0."""
        rows = np.flatnonzero(pos >= 0)
        chunk = pos[rows] // self.window
        first = chunk >= 1
        r = np.concatenate([rows[first], rows])
        c = np.concatenate([chunk[first] - 1, chunk])
        order = np.lexsort((c, r))
        return r[order], c[order]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key.to_dict(), "window": int(self.window)}


    @classmethod
    def from_dict(cls, d: Mapping[str, Any],
                  parse: Callable[[Mapping[str, Any]], KeySpec] | None = None) -> KeySpec:
        if parse is None:
            raise ValueError("a sorted-neighbourhood key is read through "
                             "erblock.blocking.key_from_dict")
        return cls(parse(d["key"]), int(d["window"]))


def is_sortable_number(dtype: Any) -> bool:
    """Whether a column of this dtype holds numbers (not booleans; a categorical is not
    numeric): the one rule for sorting by number and for comparing numbers with text."""
    return bool(pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype))


def numeric_order(values: pd.Series) -> pd.Series:
    """Sixteen hex digits per number whose code-point order is numeric order (missing and
    NaN: missing). The float64 bits with the sign bit set for positive numbers and all
    bits flipped for negative ones order as unsigned integers as the numbers do; integers
    above 2**53 in size share a float with their neighbours (they tie)."""
    x = pd.to_numeric(values).to_numpy(dtype=np.float64, na_value=np.nan)
    x = np.where(x == 0, 0.0, x)  # -0.0 and 0.0 are one number
    bits = x.view(np.uint64)
    top = np.uint64(1) << np.uint64(63)
    key = np.where(bits & top, ~bits, bits | top)
    hexed = np.frombuffer(key.astype(">u8").tobytes().hex().encode(), dtype="S16")
    text = pd.Series(hexed.astype("U16").astype(object), index=values.index, dtype="string")
    return text.mask(np.isnan(x))


@dataclass(frozen=True)
class SortOrder:
    """One partition's order table for one pass: the first global position of each of
    its sort texts, and whether the pass orders by number (the same in every partition)."""

    starts: pd.Series
    numeric: bool


def value_counts(df: pd.DataFrame, key: SortedNeighbourhood, numeric: bool) -> pd.Series:
    """Records per sort text of one input partition (worker side)."""
    return key.sort_text(df, numeric).dropna().value_counts(sort=False)


def order_starts(counts: Mapping[tuple[int, int], pd.Series]
                 ) -> dict[tuple[int, int], pd.Series]:
    """First global position of every sort text of every (source, partition): texts in
    code-point order, then source, then partition (input order)."""
    frames = [pd.DataFrame({"text": c.index.astype(object), "n": c.to_numpy(np.int64),
                            "src": s, "part": p})
              for (s, p), c in counts.items() if len(c)]
    if not frames:
        return {sp: pd.Series([], dtype=np.int64) for sp in counts}
    t = pd.concat(frames, ignore_index=True)
    # code-point order of the Python strings (no fixed-width copy, NUL kept)
    code, _ = pd.factorize(t["text"].to_numpy(dtype=object), sort=True)
    order = np.lexsort((t["part"].to_numpy(), t["src"].to_numpy(), code))
    n = t["n"].to_numpy()[order]
    start = pd.Series(np.cumsum(n) - n, index=order).sort_index().to_numpy()
    t["start"] = start
    out: dict[tuple[int, int], pd.Series] = {}
    for (s, p), g in t.groupby(["src", "part"], sort=False):
        out[(int(s), int(p))] = pd.Series(g["start"].to_numpy(np.int64),
                                          index=pd.Index(g["text"].astype(str)))
    for sp in counts:
        out.setdefault(sp, pd.Series([], dtype=np.int64))
    return out


def positions(df: pd.DataFrame, key: SortedNeighbourhood, order: SortOrder) -> np.ndarray:
    """Global position of every record of one partition (−1: no sort text), from the
    order table of its (source, partition) and its rank among equal texts in input order."""
    text = key.sort_text(df, order.numeric)
    starts = order.starts
    have = text.notna().to_numpy()
    out = np.full(len(df), -1, dtype=np.int64)
    if not have.any():
        return out
    t = text[have].astype(str).reset_index(drop=True)
    first = starts.reindex(t.to_numpy()).to_numpy()
    if np.isnan(first.astype(np.float64)).any():
        raise RuntimeError(f"{key!r}: a sort value of this partition is missing from its "
                           "order table (the partition changed between passes over it)")
    out[have] = first.astype(np.int64) + t.groupby(t, sort=False).cumcount().to_numpy()
    return out


def window_of(key: KeySpec) -> int:
    """The window of a sorted-neighbourhood key, 0 for any other key."""
    return int(key.window) if isinstance(key, SortedNeighbourhood) else 0
