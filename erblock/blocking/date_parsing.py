"""Reading dates written as text, for the ``date`` comparison kind
(:mod:`erblock.matchers.methods.dates`) and the ``date`` blocking key (:mod:`.dates`).

A value is read by the first of the tried formats that parses it: ``format=`` when given,
then :data:`FORMATS`. Each format is tried only on the values written in its shape
(:data:`SHAPES`: digits and separators), so a column of junk costs one regular
expression per format family, not one parse per format. Some writings are ambiguous:
``05/12/1987`` is May 12 month first and 5 December day first. Slashes are read month
first and dashes and eight digits day first; the other reading is tried where the
first fails (``13/05/1987``). :func:`conventions` finds a column read both ways, whose
ambiguous values were probably read the wrong way.

A two-digit year (``%y``) is the latest year it can be that is not in the future
(``04/03/50`` is 1950, not 2050): records hold births and past events.
"""

from __future__ import annotations

import datetime as _dt
import numbers
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import date_cache
from .date_cache import READ
from .text import as_key_strings

#: tried in order, value by value: a value is read by the first that parses it
FORMATS = ("ISO8601", "%Y%m%d", "%d%m%Y", "%m%d%Y", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y",
           "%d-%m-%Y", "%m-%d-%Y", "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%B %d, %Y")
#: the shape a value has for a default format to be tried on it. Eight digits are read
#: day or month first only when their last four are a year from 1800 to 2099
#: (``19121164`` is a typo of ``1912-11-64``, not 19 December 1164)
SHAPES = {
    "%Y%m%d": r"\d{8}", "%d%m%Y": r"\d{4}(?:18|19|20)\d{2}", "%m%d%Y": r"\d{4}(?:18|19|20)\d{2}",
    "%m/%d/%Y": r"\d{1,2}/\d{1,2}/\d{4}", "%d/%m/%Y": r"\d{1,2}/\d{1,2}/\d{4}",
    "%d.%m.%Y": r"\d{1,2}\.\d{1,2}\.\d{4}", "%d-%m-%Y": r"\d{1,2}-\d{1,2}-\d{4}",
    "%m-%d-%Y": r"\d{1,2}-\d{1,2}-\d{4}", "%d %b %Y": r"\d{1,2} [A-Za-z]+ \d{4}",
    "%d %B %Y": r"\d{1,2} [A-Za-z]+ \d{4}", "%b %d, %Y": r"[A-Za-z]+ \d{1,2}, \d{4}",
    "%B %d, %Y": r"[A-Za-z]+ \d{1,2}, \d{4}",
}
#: ambiguous writings: (the default reading, the other one)
READINGS = (("%m/%d/%Y", "%d/%m/%Y"), ("%d-%m-%Y", "%m-%d-%Y"), ("%d%m%Y", "%m%d%Y"))
#: a column is read in the other order of a writing when at least this many of its values
#: only that order reads ...
PREFER_MIN = 10
#: ... and this many times as many as only the default reads (typos read either way)
PREFER_RATIO = 10

#: an ISO 8601 date (extended or basic) followed by a time
_ISO_TIMED = r"^(?:\d{4}-\d{2}-\d{2}|\d{8})[T ]"
#: ... whose time is one: hours, minutes, seconds, fraction, UTC offset (group: the date)
_ISO_DATE_TIME = (r"^(\d{4}-\d{2}-\d{2}|\d{8})[T ](?:[01]\d|2[0-3])"
                  r"(?::?[0-5]\d(?::?[0-5]\d(?:[.,]\d+)?)?)?\s*(?:Z|[+-]\d{2}(?::?\d{2})?)?$")
_OFFSET = r"\s*(?:Z|[+-]\d{2}(?::?\d{2})?)$"  #: a UTC offset at the end of a value


def format_problem(fmt: str) -> str | None:
    """Why ``fmt`` is unusable as a user's date format, as a sentence naming it (None:
    it is usable): a format pandas cannot parse with (``%Q``, a stray ``%``), or one
    without a year (``%d.%m`` reads every date in 1900: a comparison would find all
    dates within a year of each other, a key would lose 29 February and block 05/01
    with a real 1900-01-05)."""
    try:  # refused now, not when a task parses
        parse_dates(pd.Series(["0"], dtype=object), fmt)
    except ValueError as exc:
        return (f"date format {fmt!r}: {exc}; format= must be a valid strptime format "
                "such as '%d.%m.%Y'")
    if not re.search(r"%[YyGcx]", fmt.replace("%%", "")):
        return (f"date format {fmt!r} has no year (%Y, %y); a date is read whole, so its "
                "format must read one")
    return None


def parse_dates(values: pd.Series, fmt: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(days since 1970-01-01 as int64, parsed) of every value; missing and unparsable
    values are not parsed. Distinct values are parsed once."""
    days, ok, _ = read_dates(values, fmt)
    return days, ok


def read_dates(values: pd.Series, fmt: str | None = None, prefer: Sequence[str] = ()
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`parse_dates` and the format that read each value (None: not read as text).
    ``prefer``: other orders of :data:`READINGS` tried before their defaults."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        days, ok = _datetimes(values)
        return days, ok, np.full(len(values), None, dtype=object)
    text = _date_text(values, fmt)
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    days_u, ok_u, by_u = READ.read(pd.Series(uniques, dtype=object), fmt, tuple(prefer),
                                   _read_distinct)
    ok = np.zeros(len(values), dtype=bool)
    days = np.zeros(len(values), dtype=np.int64)
    has = codes >= 0
    by = np.full(len(values), None, dtype=object)
    ok[has] = ok_u[codes[has]]
    days[has] = days_u[codes[has]]
    by[has] = by_u[codes[has]]
    return days, ok, by


def _read_distinct(uniq: pd.Series, fmt: str | None, prefer: Sequence[str]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Days, parsed and format of each of the distinct texts ``uniq`` (as
    :func:`read_dates`): each value's reading depends on that value alone."""
    ok_u = np.zeros(len(uniq), dtype=bool)
    days_u = np.zeros(len(uniq), dtype=np.int64)
    by_u = np.full(len(uniq), None, dtype=object)
    todo = (uniq.str.len() > 0).to_numpy().copy()
    tries: list[tuple[str, pd.Series, bool]] = []  # (format, the text it reads, shaped)
    if fmt:  # the user's format first, on the values as written
        if fmt.rstrip().endswith("%z"):  # the date as written, its offset cut
            tries.append((fmt.rstrip()[:-2].rstrip(),  # the offset's white space goes too
                          uniq.str.replace(_OFFSET, "", regex=True), False))
        else:
            tries.append((fmt, uniq, False))
    # an ISO date-time is the date it is written on, whatever its offset
    timed = uniq.str.match(_ISO_TIMED).fillna(False).to_numpy(dtype=bool)
    dated = uniq
    if timed.any():
        date = uniq.str.extract(_ISO_DATE_TIME, expand=False)
        no_time = timed & date.isna().to_numpy()  # a time that is none: no date by default
        dated = uniq.where(~timed | date.isna(), date).where(~no_time, "")
    tries += [(f, dated, f in SHAPES) for f in _preferring(defaults_after(fmt), prefer)]
    present = (dated.str.len() > 0).to_numpy()
    shapes: dict[str, np.ndarray] = {}  # a shape's mask, over the values unread when made
    for f, text, shaped_only in tries:
        if not todo.any():
            break
        shaped = todo & present if text is dated else todo.copy()
        if shaped_only:
            if SHAPES[f] not in shapes:
                mask = np.zeros(len(uniq), dtype=bool)
                sub = np.flatnonzero(shaped)
                mask[sub] = text.iloc[sub].str.fullmatch(SHAPES[f]).fillna(False).to_numpy(
                    dtype=bool)
                shapes[SHAPES[f]] = mask
            shaped &= shapes[SHAPES[f]]
        idx = np.flatnonzero(shaped)
        if not len(idx):
            continue
        got = _to_datetime(text.iloc[idx], f)
        # a year before 1 is no date a record holds ("-1" reads as ISO year -1)
        hit = (got.notna() & (got.dt.year >= 1)).to_numpy()
        days_u[idx[hit]] = got[hit].to_numpy().astype("datetime64[D]").astype(np.int64)
        ok_u[idx[hit]] = True
        todo[idx[hit]] = False
        by_u[idx[hit]] = f
    return days_u, ok_u, by_u


#: formats of eight digits, day and month first: a number written so loses a leading zero
_LEADING_ZERO = (None, "%d%m%Y", "%m%d%Y")


def _date_text(values: pd.Series, fmt: str | None = None) -> pd.Series:
    """The values as text to read. Date-times in an object column are the date they are
    written on (as in a datetime column; their key text is in UTC). In a column of
    numbers read by the defaults or a day-and-month-first eight-digit ``fmt``, seven
    digits get the leading zero their integer lost back (``5121987`` is ``05121987``:
    month or day first, read as eight digits are; ``%Y%j``'s seven digits stay)."""
    text = as_key_strings(values).str.strip()
    kind = pd.api.types.infer_dtype(values, skipna=True) if pd.api.types.is_object_dtype(
        values.dtype) else ""
    if kind in ("datetime", "date", "mixed", "mixed-integer"):
        local = values.map(_local_date)
        text = text.where(local.isna(), local.astype("string"))
    if fmt in _LEADING_ZERO:
        seven = text.str.fullmatch(r"\d{7}").fillna(False).to_numpy(dtype=bool)
        if seven.any():
            seven[seven] = _numbers(values[seven])
            text = text.where(~seven, "0" + text)
    return text


def _numbers(values: pd.Series) -> np.ndarray:
    """Which values are numbers (whose writing drops a leading zero): all of a numeric
    column, the numbers of an object column (``"5121987"`` written as text kept what it
    was given) and of a category column's categories; never a bool."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = pd.Series(values.cat.categories)
        codes = values.cat.codes.to_numpy()
        return np.where(codes >= 0, _numbers(cats)[np.maximum(codes, 0)], False)
    if pd.api.types.is_bool_dtype(values.dtype):
        return np.zeros(len(values), dtype=bool)
    if not pd.api.types.is_object_dtype(values.dtype):
        return np.full(len(values), pd.api.types.is_numeric_dtype(values.dtype))
    return values.map(lambda v: isinstance(v, (numbers.Real, Decimal))
                      and not isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)


def _local_date(v: Any) -> str | None:
    """``YYYY-MM-DD`` of a date or date-time as written (its own time zone); else None."""
    if not isinstance(v, _dt.date) or v is pd.NaT:
        return None
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"


def _preferring(formats: Sequence[str], prefer: Sequence[str]) -> list[str]:
    """``formats`` with each other order in ``prefer`` tried before its default."""
    out = list(formats)
    for default, other in READINGS:
        if other in prefer and default in out and other in out:
            i, j = out.index(default), out.index(other)
            out[min(i, j)], out[max(i, j)] = other, default
    return out


def preferred_orders(found: Sequence[tuple[Any, ...]]) -> tuple[str, ...]:
    """The other orders a column is written in throughout, from :func:`conventions`'
    counts (summed over partitions; only each tuple's first four entries, other order,
    values only it reads, values read differently, values only the default reads, are
    used): at least :data:`PREFER_MIN` values only the other
    order reads, :data:`PREFER_RATIO` times as many as only the default reads (a
    column of both writings, or a few typos read the other way, keeps the defaults)."""
    return tuple(other for other, n_other, _, n_default, *_ in found
                 if n_other >= PREFER_MIN and n_other >= PREFER_RATIO * n_default)


def read_in_order(values: pd.Series, prefer: Sequence[str]) -> pd.Series:
    """``values`` with those that a preferred order of :func:`preferred_orders` reads
    written ``YYYY-MM-DD`` (so that every key and comparison reads them so); the others
    as they were. An object column (a string column keeps its dtype)."""
    days, ok, by = read_dates(values, None, prefer)
    hit = ok & np.isin(by.astype(str), list(prefer))
    out = values.astype(object)
    out[hit] = np.datetime_as_string(days[hit].astype("datetime64[D]"), unit="D")
    if pd.api.types.is_string_dtype(values.dtype) and not pd.api.types.is_object_dtype(
            values.dtype):
        return out.astype(values.dtype)
    return out


def defaults_after(fmt: str | None) -> tuple[str, ...]:
    """The default formats tried after ``fmt``: all of them, except those that read an
    ambiguous writing in the other order than ``fmt`` does (after ``%d/%m/%y``,
    ``05/12/1987`` is not read month first)."""
    order = _order(fmt) if fmt else None
    return tuple(f for f in FORMATS if order is None or _order(f) in (None, order)
                 or not f.endswith("%Y"))


def _order(fmt: str) -> bool | None:
    """Whether ``fmt`` writes the day before the month (None: not both, or by name)."""
    plain = fmt.replace("%%", "")
    d, m = plain.find("%d"), plain.find("%m")
    return None if d < 0 or m < 0 else d < m


def _microseconds(text: pd.Series) -> pd.Series:
    """``text`` with the digits of a fraction beyond the sixth cut (vectorised)."""
    arr = pa.array(text.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    cut = pc.replace_substring_regex(arr, r"([.,][0-9]{6})[0-9]+", r"\1")
    return pd.Series(cut.to_numpy(zero_copy_only=False), index=text.index, dtype=object)


def _naive(t: Any) -> Any:
    """A timestamp's wall-clock time without its zone (NaT as it is)."""
    return t.tz_localize(None) if t is not pd.NaT and t.tz is not None else t


def _datetimes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Days and presence of a datetime column (time zones: the local date as written)."""
    if isinstance(values.dtype, pd.ArrowDtype):  # arrow dates and timestamps
        dtype: Any = f"datetime64[s{_tz(values.dtype)}]"
        values = pd.Series(values.astype(dtype), index=values.index)
    dt = pd.to_datetime(values).dt.tz_localize(None) if getattr(
        values.dt, "tz", None) is not None else values
    ok = dt.notna().to_numpy()
    days = np.zeros(len(values), dtype=np.int64)
    days[ok] = dt[ok].to_numpy().astype("datetime64[D]").astype(np.int64)
    return days, ok


def _to_datetime(text: pd.Series, fmt: str) -> pd.Series:
    """``text`` parsed with ``fmt`` (NaT where it does not parse), always naive. A user
    format with ``%z`` not at its end is read in UTC, whatever the other values are; one
    with ``%Z`` is the date as written in each value's own zone, whatever the others'. A
    two-digit year in the future is a century earlier. Each value is read as it would be
    alone (:mod:`.date_cache` relies on it): fractions finer than a microsecond are cut
    (only the date is kept), as one of them made pandas read a whole batch in
    nanoseconds, where a year before 1677 does not fit."""
    utc = "%z" in fmt
    if fmt in ("ISO8601", "mixed") or "%f" in fmt:
        text = _microseconds(text)
    try:
        got = pd.to_datetime(text, format=fmt, errors="coerce", utc=utc)
    except ValueError:  # zones pandas cannot mix (%Z)
        got = None
    if got is None or got.dtype == object:  # (pandas 2 gives objects): value by value
        got = pd.Series([_naive(pd.to_datetime(t, format=fmt, errors="coerce", utc=utc))
                         for t in text], index=text.index, dtype="datetime64[us]")
    got = got.dt.tz_localize(None) if getattr(got.dt, "tz", None) is not None else got
    if re.search(r"%y", fmt.replace("%%", "")):
        future = (got.dt.normalize() > pd.Timestamp(date_cache.today())).fillna(False)
        if future.any():
            got = got.where(~future, got[future] - pd.DateOffset(years=100))
    return got


def _tz(dtype: pd.ArrowDtype) -> str:
    """``", <zone>"`` of an arrow timestamp with a time zone (as numpy's dtype spells it)."""
    tz = getattr(dtype.pyarrow_dtype, "tz", None)
    return f", {tz}" if tz else ""


def conventions(values: pd.Series, fmt: str | None = None,
                read: tuple[np.ndarray, np.ndarray] | None = None,
                weights: np.ndarray | None = None
                ) -> list[tuple[str, int, int, int, list[str], list[str]]]:
    """How the ambiguous writings of ``values`` were read, per default reading of
    :data:`READINGS` that read or could read any: (the other order's format; values
    only the other order reads, e.g. ``13/05/1987``; values the default read that the
    other order reads as another date, ``05/12/1987``; values only the default reads,
    ``05/25/1987``; two examples of the first two). Counts of partitions add up; a
    column whose other-order-only values outnumber its default-only ones is probably
    written in the other order, its ambiguous values swapped. Empty with ``fmt`` (the
    user said how the column is written, and the other order is not tried). ``read``:
    the days and formats :func:`read_dates` gave ``values`` (without ``fmt``), if known;
    ``weights``: how many records hold each value (distinct values counted so)."""
    if fmt or pd.api.types.is_datetime64_any_dtype(values.dtype):
        return []
    if read is None:
        days, _, by = read_dates(values, None)
    else:
        days, by = read
    text = as_key_strings(values).str.strip()
    out = []
    for default, other in READINGS:
        other_only, by_default = by == other, by == default
        if not (other_only.any() or by_default.any()):
            continue
        either, only = np.zeros(len(by), dtype=bool), np.zeros(len(by), dtype=bool)
        idx = np.flatnonzero(by_default)
        if len(idx):
            alt = _to_datetime(text.iloc[idx], other)
            alt_days = alt.to_numpy().astype("datetime64[D]").astype(np.int64)
            either[idx] = alt.notna().to_numpy() & (alt_days != days[idx])
            only[idx] = alt.isna().to_numpy()
        w = np.ones(len(by), dtype=np.int64) if weights is None else weights
        out.append((other, int(w[other_only].sum()), int(w[either].sum()),
                    int(w[only].sum()),
                    text[other_only].drop_duplicates().head(2).tolist(),
                    text[either].drop_duplicates().head(2).tolist()))
    return out


#: formats whose typos keep YYYYMMDD digits, and how such a typo is written in each
_DIGIT_FORMATS = {None: r"\d{8}|\d{4}-\d{2}-\d{2}", "%Y%m%d": r"\d{8}",
                  "%Y-%m-%d": r"\d{4}-\d{2}-\d{2}"}


def typo_digits(values: pd.Series, parsed: np.ndarray, fmt: str | None = None) -> np.ndarray:
    """``YYYYMMDD`` as an integer for every value that did not parse but is written as
    ``YYYYMMDD`` or ``YYYY-MM-DD`` (0 for the others)."""
    out = np.zeros(len(values), dtype=np.int64)
    if parsed.all() or pd.api.types.is_datetime64_any_dtype(values.dtype):
        return out
    idx = np.flatnonzero(~parsed)
    text = as_key_strings(values.iloc[idx]).str.strip()
    digits = text.str.fullmatch(_DIGIT_FORMATS[None]).fillna(False).to_numpy(dtype=bool)
    out[idx[digits]] = text[digits].str.replace("-", "", regex=False).astype(np.int64)
    return out
