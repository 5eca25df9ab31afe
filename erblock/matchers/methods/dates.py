"""``date``: dates compared as dates, with levels that fit how dates go wrong.

Values are parsed once per record: pandas datetimes as they are; text (or integers such as
``19870512``) with the first format that reads it, value by value: ``format=`` when
given, then :data:`~erblock.blocking.date_parsing.FORMATS`: ISO 8601 (``1987-05-12``, with or without a
time; a date-time is the date it is written on, whatever its UTC offset), ``%Y%m%d``,
eight digits day first (``12051987``), slashes month first (``%m/%d/%Y``), dashes day
first (``%d-%m-%Y``), the other order where the first fails (``13/05/1987``),
``%d.%m.%Y`` and written months (``12 May 1987``, ``May 12, 1987``); see
:mod:`erblock.blocking.date_parsing`. So ``format=`` names how one input writes its dates without
making the other input's unreadable (a link of an ISO census with a register written
``%d/%m/%y``). A column written in the other order throughout is best read with
``format=`` (its ambiguous days are otherwise read the default way: the run warns when
more of an input's values can only be read the other way than only the default way).
A value that does not parse is **missing** (no evidence either way) and is counted
(:meth:`DateMethod.count_invalid`, shown in the run report), except a value written as
``YYYYMMDD`` or ``YYYY-MM-DD`` that is no date because of a typo (``19231164``, day 64):
its digits still reach the *exact* and *one edit* levels against another value (a typo is
what the one-edit level is for), and any other level is missing (how far apart it is
cannot be said).

The similarity is graded so that its levels are the default Fellegi-Sunter levels:

=====  ===================================================================
1.0    the same date
0.9    one character edit of ``YYYYMMDD`` (a typo or two adjacent digits swapped), or
       day and month swapped
0.75   within one month (30.44 days)
0.5    within one year (365.25 days)
0.25   within ten years
0      further apart
=====  ===================================================================

Everything is vectorised with numpy over whole matrices; no Python loop per pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...blocking.date_parsing import (
    FORMATS,
    conventions,
    format_problem,
    parse_dates,
    read_dates,
    typo_digits,
)
from ...blocking.text import as_key_strings, blank
from .base import Method, Prepared

__all__ = ["FORMATS", "DateMethod", "date_similarity", "parse_dates", "typo_digits"]

MONTH_DAYS = 365.25 / 12
YEAR_DAYS = 365.25
_EPOCH = np.datetime64("1970-01-01", "D")


def _ymd(days: np.ndarray) -> np.ndarray:
    """``YYYYMMDD`` as an integer, from days since the epoch."""
    d = (_EPOCH + days.astype("timedelta64[D]")).astype("datetime64[D]")
    y = d.astype("datetime64[Y]").astype(np.int64) + 1970
    m = d.astype("datetime64[M]").astype(np.int64) % 12 + 1
    dd = (d - d.astype("datetime64[M]")).astype(np.int64) + 1
    return y * 10000 + m * 100 + dd


_LOW3 = np.uint32(0x77777777)  #: the three low bits of each of eight four-bit digits
_HIGH = np.uint32(0x88888888)  #: the high bit of each


def _bcd(ymd: np.ndarray) -> np.ndarray:
    """``YYYYMMDD``'s eight decimal digits as the four-bit digits of one uint32, the first
    digit highest (computed per value, before any broadcast)."""
    out = np.zeros(np.shape(ymd), dtype=np.uint32)
    for i in range(8):
        out |= (((ymd // 10 ** (7 - i)) % 10) << (4 * (7 - i))).astype(np.uint32)
    return out


def _one_edit(ya: np.ndarray, yb: np.ndarray) -> np.ndarray:
    """Whether ``YYYYMMDD`` digits ``ya`` and ``yb`` differ in exactly one digit, or in two
    adjacent digits swapped (12 vs 21), broadcast against each other.

    On digit-coded integers (:func:`_bcd`), ``x = a ^ b`` has a non-zero four-bit digit
    where they differ, counted in a few whole-array operations. Only pairs with two
    differing digits are tested for a swap: digits p and p + 1 (adjacent) are swapped
    when both digits of ``x`` there equal ``a_p ^ a_(p+1)``."""
    xa, xb = _bcd(ya), _bcd(yb)
    x = xa ^ xb
    # per digit, the high bit set when the digit is non-zero (no carry between digits)
    high = ((x & _LOW3) + _LOW3 | x) & _HIGH
    n_diff = np.bitwise_count(high)
    out = n_diff == 1
    two = np.flatnonzero(n_diff == 2)
    if len(two):
        at = np.unravel_index(two, x.shape)
        xt, at_, hi = x[at], np.broadcast_to(xa, x.shape)[at], high[at]
        low = (hi & (~hi + np.uint32(1))) >> np.uint32(3)  # the lower one's low bit
        nib = low * np.uint32(15)
        swap = (((hi >> np.uint32(4)) & hi) != 0)  # adjacent
        swap &= ((xt ^ (xt >> np.uint32(4))) & nib) == 0  # differ by the same bits
        swap &= ((xt ^ at_ ^ (at_ >> np.uint32(4))) & nib) == 0  # a's two digits' bits
        out.reshape(-1)[two] = swap
    return out


def date_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Graded similarity (see the module doc) of dates ``a`` and ``b`` (rows of
    [days, YYYYMMDD, 1 if a date else 0]), broadcast against each other."""
    da, db = a[..., 0], b[..., 0]
    ya, yb = a[..., 1], b[..., 1]
    gap = np.abs(da - db)
    one_edit = _one_edit(ya, yb)
    ma, mb = (ya // 100) % 100, (yb // 100) % 100
    day_a, day_b = ya % 100, yb % 100
    day_month = (ya // 10000 == yb // 10000) & (ma == day_b) & (day_a == mb) & (ma != day_a)
    sim = np.select(
        [gap == 0, one_edit | day_month, gap <= MONTH_DAYS, gap <= YEAR_DAYS,
         gap <= 10 * YEAR_DAYS],
        [1.0, 0.9, 0.75, 0.5, 0.25], 0.0)
    typo = (a[..., 2] == 0) | (b[..., 2] == 0)  # digits of a non-date: edit levels only
    if typo.any():
        sim = np.where(typo, np.where(ya == yb, 1.0, np.where(one_edit | day_month, 0.9,
                                                              np.nan)), sim)
    return sim.astype(np.float32)


@dataclass(frozen=True)
class DateMethod(Method):
    """Dates as dates (see the module doc); ``format`` is a ``strptime`` format for text."""

    name: ClassVar[str] = "date"
    locates: ClassVar[bool | None] = False
    accepts: ClassVar[str] = "any"
    LEVELS: ClassVar[tuple[float, ...]] = (0.25, 0.5, 0.75, 0.9, 1.0)
    LABELS: ClassVar[tuple[str, ...]] = ("else", "within 10 years", "within 1 year",
                                         "within 1 month", "one edit or day/month swap",
                                         "exact")
    misread_advice: ClassVar[str] = (
        "{n_other:,} of its dates can only be read as {option!r} (e.g. {shown_other}), so "
        "its {n_either:,} dates that read either way (e.g. {shown_either}) were probably "
        "read with day and month swapped; if the column is written so throughout, give "
        "comparison({column!r}, 'date'{right}, format={option!r})")
    invalid_advice: ClassVar[str] = (
        "if they are dates, give their format, e.g. comparison({column!r}, 'date'{right}, "
        "format='%d/%m/%y') (tried first, before the formats read by default)")
    summary: ClassVar[str] = ("dates: exact, one edit or day/month swap, within 1 month, "
                              "1 year, 10 years")

    format: str | None = None

    def __post_init__(self) -> None:
        if self.format is not None and (not isinstance(self.format, str) or "%" not in
                                        self.format):
            raise ValueError(f"date format must be a strptime format such as '%d.%m.%Y', "
                             f"got {self.format!r}")
        problem = None if self.format is None else format_problem(self.format)
        if problem is not None:
            raise ValueError(problem)

    def prepare_key(self) -> Any:
        return (type(self).prepare, self.format)

    def prepare(self, values: pd.Series) -> Prepared:
        days, ok = parse_dates(values, self.format)
        typo = typo_digits(values, ok, self.format)
        table = np.stack([days, np.where(ok, _ymd(days), typo), ok.astype(np.int64)], axis=1)
        return Prepared(table, ~ok & (typo == 0))

    def misread(self, values: pd.Series
                ) -> list[tuple[str, int, int, int, list[str], list[str]]]:
        """Ambiguous dates (``05/12/1987``) in a column whose other values are written
        the other way (``13/05/1987``): see :func:`erblock.blocking.date_parsing.conventions`."""
        return conventions(values, self.format)

    def invalid(self, values: pd.Series) -> np.ndarray:
        """Present values that are neither a date nor a date's digits with a typo."""
        return self._invalid(values, parse_dates(values, self.format)[1])

    def _invalid(self, values: pd.Series, ok: np.ndarray) -> np.ndarray:
        return ~blank(as_key_strings(values)) & ~ok & (typo_digits(values, ok) == 0)

    def inspect(self, values: pd.Series
                ) -> tuple[np.ndarray, list[tuple[str, int, int, int, list[str], list[str]]]]:
        """:meth:`invalid` and :meth:`misread`, the values read once."""
        days, ok, by = read_dates(values, self.format)
        return self._invalid(values, ok), conventions(values, self.format, (days, by))

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return date_similarity(lv[:, None, :], rv[None, :, :])

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return date_similarity(lv, rv)
