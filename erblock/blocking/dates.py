"""``date``: block on a date *as a date*, however each input writes it.

A register writes ``19870512``, a census ``05/12/1987``, a file read by pandas holds a
datetime column: blocking on the raw column puts the same birth date of the two inputs in
different blocks, so that pass finds no pair across them. :class:`DateKey` reads the
column as the ``date`` comparison kind does (:mod:`erblock.blocking.date_parsing`:
``format=`` first, then ISO 8601, ``%Y%m%d``, ``%m/%d/%Y`` and the other common writings;
datetime columns as their dates) and keys each record by its date written one way:
``YYYY-MM-DD`` (``part="day"``), ``YYYY-MM`` (``"month"``) or ``YYYY`` (``"year"``). A
value no format reads is a missing key: the record is not blocked in this pass (as with
any missing key; the comparison of the same column counts and reports unread values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from .cli_args import cli_args, option_column
from .date_parsing import format_problem, parse_dates
from .keys import CliParse, KeySpec

#: the parts of a date a key can be, and the numpy unit that writes each
PARTS: dict[str, Literal["D", "M", "Y"]] = {"day": "D", "month": "M", "year": "Y"}


@dataclass(frozen=True)
class DateKey(KeySpec):
    """The date of a column read as a date, written ``YYYY-MM-DD`` (or its month, year).

    Parameters
    ----------
    column
        The column holding the dates (text in any of the read writings, or datetimes).
    part
        ``"day"`` (the whole date, default), ``"month"`` or ``"year"``.
    format
        A ``strftime`` format tried before the defaults, for a writing they do not read
        or read the other way (``"%d/%m/%Y"``; as ``comparison(..., "date", format=)``).
    """

    column: str
    part: str = "day"
    format: str | None = None
    kind: ClassVar[str] = "date"
    cli_names: ClassVar[tuple[str, ...]] = ("date",)
    cli_usage: ClassVar[str] = "date:COLUMN[:day|month|year[:FORMAT]]"

    def __post_init__(self) -> None:
        option_column(self, "date key")
        if self.part not in PARTS:
            raise ValueError(f"date key on {self.column!r}: part must be one of "
                             f"{', '.join(map(repr, PARTS))}, got {self.part!r}")
        if self.format is not None and (not isinstance(self.format, str)
                                        or "%" not in self.format):
            raise ValueError(f"date key on {self.column!r}: format must be a strftime format "
                             f"such as '%d/%m/%Y', got {self.format!r}")
        # as the date comparison refuses it (refused now, not when a task parses): a
        # format without a year reads every date in 1900, where 29/02 does not exist
        problem = None if self.format is None else format_problem(self.format)
        if problem is not None:
            raise ValueError(f"date key on {self.column!r}: {problem}")

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        col, *rest = cli_args(name, args, 1, 3, cls.cli_usage)
        return cls(col, rest[0] if rest else "day", rest[1] if len(rest) > 1 else None)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        days, ok = parse_dates(df[self.column], self.format)
        dates: Any = days.astype("datetime64[D]")
        text = np.datetime_as_string(dates, unit=PARTS[self.part])
        out = pd.Series(text, index=df.index, dtype="string")
        return out.where(ok)  # an unread date blocks nothing

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "column": self.column, "part": self.part}
        if self.format is not None:
            d["format"] = self.format
        return d


def date(column: str, part: str = "day", format: str | None = None) -> DateKey:
    """Key: the date in ``column`` read as a date (:class:`DateKey`), so that inputs writing
    dates differently (``19870512``, ``05/12/1987``, a datetime column) share blocks."""
    return DateKey(column, part, format)


def unformatted_date_keys(keys: Sequence[KeySpec], column: str | None = None
                          ) -> list[DateKey]:
    """The date keys among ``keys`` (inside composites, pruned and sorted-neighbourhood
    keys too) that read ``column`` (None: any) by the default formats (no ``format=``):
    when the column's dates were probably read with day and month swapped, these were
    too."""
    out: list[DateKey] = []
    for key in keys:
        if isinstance(key, DateKey):
            reads = column is None or key.column == column
            out += [key] if reads and key.format is None else []
            continue
        inner = getattr(key, "parts", None) or (getattr(key, "key", None),)
        out += unformatted_date_keys([k for k in inner if isinstance(k, KeySpec)], column)
    return out
