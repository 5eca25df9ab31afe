"""``digits``: block on the digits of a value, however it is punctuated.

One source writes a phone ``310/246-1501``, the other ``(310) 246-1501`` or
``310.246.1501``; a social security number comes with and without dashes, a postcode
with a space. A key on the raw column puts them in different blocks, so that pass finds
no pair across the sources. :class:`DigitsKey` keeps only the digits (``3102461501``),
or the last ``last`` of them (``last=7``: the local number, whatever the area code
prefix or the country code). A value without a digit is a missing key. Digits of every
script count (full-width ``３``, Arabic-Indic ``٣``, Devanagari ``३`` are ``3``), as in the
``phone`` comparison (:func:`ascii_digits`).
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from .cli_args import cli_args, cli_int, option_column, option_int
from .keys import CliParse, KeySpec
from .text import as_key_strings


@dataclass(frozen=True)
class DigitsKey(KeySpec):
    """The digits of a column's values (all of them, or the last ``last``).

    Parameters
    ----------
    column
        The column (phone numbers, identifiers, postcodes: text or numbers).
    last
        Keep only the last ``last`` digits (None: all); a value with fewer keeps what
        it has.
    """

    column: str
    last: int | None = None
    kind: ClassVar[str] = "digits"
    cli_names: ClassVar[tuple[str, ...]] = ("digits",)
    cli_usage: ClassVar[str] = "digits:COLUMN[:LAST]"

    def __post_init__(self) -> None:
        option_column(self, "digits key")
        if self.last is not None:
            option_int(self, "last", f"digits key on {self.column!r}: last", 1)

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        col, *rest = cli_args(name, args, 1, 2, cls.cli_usage)
        return cls(col, cli_int(rest[0], cls.cli_usage) if rest else None)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        s = ascii_digits(as_key_strings(df[self.column])).str.replace(
            r"[^0-9]+", "", regex=True)
        if self.last is not None:
            s = s.str.slice(-self.last)
        return s.where(s.str.len() > 0)  # no digit: no key

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "column": self.column}
        if self.last is not None:
            d["last"] = self.last
        return d


@functools.cache
def decimal_digits() -> dict[int, str]:
    """Every non-ASCII decimal digit (full-width, Arabic-Indic, Devanagari, …) -> 0-9."""
    return {cp: str(unicodedata.decimal(chr(cp))) for cp in range(0x80, sys.maxunicode + 1)
            if unicodedata.category(chr(cp)) == "Nd"}


def ascii_digits(text: pd.Series) -> pd.Series:
    """``text`` (strings) with the decimal digits of every script written 0-9; only the
    values that are not ASCII are translated."""
    wide = ~text.str.isascii().fillna(True).to_numpy(dtype=bool)
    if not wide.any():
        return text
    text = text.copy()
    text[wide] = text[wide].str.translate(decimal_digits())
    return text


def digits(column: str, last: int | None = None) -> DigitsKey:
    """Key: the digits of ``column`` (the last ``last`` of them), so that ``310/246-1501``
    and ``(310) 246-1501`` share a block (:class:`DigitsKey`)."""
    return DigitsKey(column, last)
