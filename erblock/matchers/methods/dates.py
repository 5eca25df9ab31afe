"""``date``: dates compared as dates, with levels that fit how dates go wrong.

Values are parsed once per record: pandas datetimes as they are; text (or integers such as
``19870512``) with ``format=`` when given, else with the first of :data:`FORMATS` that
reads it, value by value: ISO 8601 (``1987-05-12``, with or without a time; a date-time is
the date it is written on, whatever its UTC offset), ``%Y%m%d``, month first
(``%m/%d/%Y``, ``%m-%d-%Y``), day first where month first fails (``13/05/1987``;
``%d.%m.%Y`` is always day first), and written months (``12 May 1987``, ``May 12,
1987``). A column written day first throughout is best read with ``format=`` (its days
up to the 12th are otherwise read month first: the same on both sides when both write
it so, but a day/month swap against a source that writes ISO). A value that
does not parse is **missing** (no evidence either way) and is counted
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

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...blocking.text import as_key_strings
from .base import Method, Prepared

#: tried in order, value by value, when no format is given: a value is read by the first
#: that parses it (so ``05/12/1987`` is May 12, and ``13/05/1987`` the 13th of May)
FORMATS = ("ISO8601", "%Y%m%d", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y", "%m-%d-%Y", "%d-%m-%Y",
           "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%B %d, %Y")
MONTH_DAYS = 365.25 / 12
YEAR_DAYS = 365.25
_EPOCH = np.datetime64("1970-01-01", "D")


def parse_dates(values: pd.Series, fmt: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(days since 1970-01-01 as int64, parsed) of every value; missing and unparsable
    values are not parsed. Distinct values are parsed once."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        if isinstance(values.dtype, pd.ArrowDtype):  # arrow dates and timestamps
            dtype: Any = f"datetime64[s{_tz(values.dtype)}]"
            values = pd.Series(values.astype(dtype), index=values.index)
        dt = pd.to_datetime(values).dt.tz_localize(None) if getattr(
            values.dt, "tz", None) is not None else values
        ok = dt.notna().to_numpy()
        days = np.zeros(len(values), dtype=np.int64)
        days[ok] = dt[ok].to_numpy().astype("datetime64[D]").astype(np.int64)
        return days, ok
    text = as_key_strings(values).str.strip()
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    uniq = pd.Series(uniques, dtype=object)
    ok_u = np.zeros(len(uniq), dtype=bool)
    days_u = np.zeros(len(uniq), dtype=np.int64)
    todo = (uniq.str.len() > 0).to_numpy().copy()
    if not fmt:  # an ISO date-time is the date it is written on, whatever its offset
        timed = uniq.str.match(_ISO_TIMED).fillna(False).to_numpy(dtype=bool)
        if timed.any():
            date = uniq.str.extract(_ISO_DATE_TIME, expand=False)
            todo &= ~timed | date.notna().to_numpy()  # a time that is none: no date
            uniq = uniq.where(~timed | date.isna(), date)
    elif fmt.rstrip().endswith("%z"):  # likewise: the date as written, offset cut
        fmt = fmt.rstrip()[:-2].rstrip()  # the offset's white space goes with it
        uniq = uniq.str.replace(_OFFSET, "", regex=True)
    for f in (fmt,) if fmt else FORMATS:
        if not todo.any():
            break
        idx = np.flatnonzero(todo)
        got = _to_datetime(uniq.iloc[idx], f)
        # a year before 1 is no date a record holds ("-1" reads as ISO year -1)
        hit = (got.notna() & (got.dt.year >= 1)).to_numpy()
        days_u[idx[hit]] = got[hit].to_numpy().astype("datetime64[D]").astype(np.int64)
        ok_u[idx[hit]] = True
        todo[idx[hit]] = False
    ok = np.zeros(len(values), dtype=bool)
    days = np.zeros(len(values), dtype=np.int64)
    has = codes >= 0
    ok[has] = ok_u[codes[has]]
    days[has] = days_u[codes[has]]
    return days, ok


#: an ISO 8601 date (extended or basic) followed by a time
_ISO_TIMED = r"^(?:\d{4}-\d{2}-\d{2}|\d{8})[T ]"
#: ... whose time is one: hours, minutes, seconds, fraction, UTC offset (group: the date)
_ISO_DATE_TIME = (r"^(\d{4}-\d{2}-\d{2}|\d{8})[T ](?:[01]\d|2[0-3])"
                  r"(?::?[0-5]\d(?::?[0-5]\d(?:[.,]\d+)?)?)?\s*(?:Z|[+-]\d{2}(?::?\d{2})?)?$")
_OFFSET = r"\s*(?:Z|[+-]\d{2}(?::?\d{2})?)$"  #: a UTC offset at the end of a value


def _to_datetime(text: pd.Series, fmt: str) -> pd.Series:
    """``text`` parsed with ``fmt`` (NaT where it does not parse), always naive. A user
    format with ``%z`` not at its end is read in UTC, whatever the other values are."""
    utc = "%z" in fmt
    try:
        got = pd.to_datetime(text, format=fmt, errors="coerce", utc=utc)
    except ValueError:  # offsets pandas cannot mix: each value on its own (rare)
        got = pd.Series([pd.to_datetime(t, format=fmt, errors="coerce", utc=True)
                         for t in text], index=text.index, dtype="datetime64[ns, UTC]")
    return got.dt.tz_localize(None) if getattr(got.dt, "tz", None) is not None else got


def _tz(dtype: pd.ArrowDtype) -> str:
    """``", <zone>"`` of an arrow timestamp with a time zone (as numpy's dtype spells it)."""
    tz = getattr(dtype.pyarrow_dtype, "tz", None)
    return f", {tz}" if tz else ""


#: formats whose typos keep YYYYMMDD digits, and how such a typo is written in each
_DIGIT_FORMATS = {None: r"\d{8}|\d{4}-\d{2}-\d{2}", "%Y%m%d": r"\d{8}",
                  "%Y-%m-%d": r"\d{4}-\d{2}-\d{2}"}


def typo_digits(values: pd.Series, parsed: np.ndarray, fmt: str | None = None) -> np.ndarray:
    """``YYYYMMDD`` as an integer for every value that did not parse but is written as
    ``YYYYMMDD`` or ``YYYY-MM-DD`` (0 for the others; with ``fmt``, only as ``fmt``
    writes a date)."""
    out = np.zeros(len(values), dtype=np.int64)
    if fmt not in _DIGIT_FORMATS or parsed.all() or \
            pd.api.types.is_datetime64_any_dtype(values.dtype):
        return out
    idx = np.flatnonzero(~parsed)
    text = as_key_strings(values.iloc[idx]).str.strip()
    digits = text.str.fullmatch(_DIGIT_FORMATS[fmt]).fillna(False).to_numpy(dtype=bool)
    out[idx[digits]] = text[digits].str.replace("-", "", regex=False).astype(np.int64)
    return out


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
    invalid_advice: ClassVar[str] = (
        "if they are dates, give their format, e.g. comparison({column!r}, 'date', "
        "format='%d/%m/%y')")
    summary: ClassVar[str] = ("dates: exact, one edit or day/month swap, within 1 month, "
                              "1 year, 10 years")

    format: str | None = None

    def __post_init__(self) -> None:
        if self.format is not None and (not isinstance(self.format, str) or "%" not in
                                        self.format):
            raise ValueError(f"date format must be a strptime format such as '%d.%m.%Y', "
                             f"got {self.format!r}")
        if self.format is not None:
            try:  # any bad format (%Q, a stray %) is refused now, not when a task parses
                parse_dates(pd.Series(["0"], dtype=object), self.format)
            except ValueError as exc:
                raise ValueError(f"date format {self.format!r}: {exc}; format= must be a "
                                 "valid strptime format such as '%d.%m.%Y'") from None
        if self.format is not None and not re.search(r"%[YyGcx]", self.format.replace("%%", "")):
            # "%d.%m" reads every date in 1900: all of them "within 1 year" of each other
            raise ValueError(f"date format {self.format!r} has no year (%Y, %y); the "
                             "date kind compares whole dates, so its format must read one")

    def prepare_key(self) -> Any:
        return (type(self).prepare, self.format)

    def prepare(self, values: pd.Series) -> Prepared:
        days, ok = parse_dates(values, self.format)
        typo = typo_digits(values, ok, self.format)
        table = np.stack([days, np.where(ok, _ymd(days), typo), ok.astype(np.int64)], axis=1)
        return Prepared(table, ~ok & (typo == 0))

    def invalid(self, values: pd.Series) -> np.ndarray:
        """Present values that are neither a date nor a date's digits with a typo."""
        present = ~(values.isna().to_numpy() | (as_key_strings(values).str.strip()
                                                 .fillna("") == "").to_numpy())
        _, ok = parse_dates(values, self.format)
        return present & ~ok & (typo_digits(values, ok, self.format) == 0)

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return date_similarity(lv[:, None, :], rv[None, :, :])

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return date_similarity(lv, rv)
