"""The dates a process has read (erblock.blocking.date_cache): a text read before is
looked up, never parsed again, and its reading is the one a fresh parse gives."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from erblock.blocking import date_cache
from erblock.blocking.date_cache import ReadCache
from erblock.blocking.date_parsing import _read_distinct, read_dates

WRITINGS = ("%Y-%m-%d", "%Y%m%d", "%d%m%Y", "%m%d%Y", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y",
            "%d-%m-%Y", "%d %b %Y", "%b %d, %Y", "%m/%d/%y")


def _texts(n: int, seed: int) -> pd.Series:
    rng = np.random.default_rng(seed)
    days = pd.Timestamp("1900-01-01") + pd.to_timedelta(rng.integers(0, 45_000, n), unit="D")
    fmts = rng.choice(len(WRITINGS), n)
    out = np.array([d.strftime(WRITINGS[f]) for d, f in zip(days, fmts)], dtype=object)
    junk = rng.random(n)
    out[junk < 0.03] = "not a date"
    out[(junk >= 0.03) & (junk < 0.05)] = ""
    out[(junk >= 0.05) & (junk < 0.07)] = None
    out[(junk >= 0.07) & (junk < 0.09)] = "1987-05-12T10:30:00+02:00"
    return pd.Series(out, dtype=object)


def _fresh(values: pd.Series, fmt: str | None = None, prefer: tuple[str, ...] = ()):
    """read_dates with nothing kept: every distinct text parsed."""
    date_cache.READ.clear()
    days, ok, by = read_dates(values, fmt, prefer)
    date_cache.READ.clear()
    return days, ok, by


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize(("fmt", "prefer"), [(None, ()), (None, ("%d/%m/%Y", "%m%d%Y")),
                                             ("%d/%m/%y", ())])
def test_readings_kept_are_those_a_fresh_parse_gives(fmt, prefer):
    whole = _texts(3_000, 1)
    expect = _fresh(whole, fmt, prefer)
    # overlapping pieces read in turn: most of each is kept from the pieces before
    for lo, hi in ((0, 1_000), (500, 2_000), (0, 3_000), (1_500, 3_000)):
        piece = whole.iloc[lo:hi]
        got = read_dates(piece, fmt, prefer)
        assert _same(got, tuple(a[lo:hi] for a in expect)), (lo, hi)
    assert _same(read_dates(whole, fmt, prefer), expect)
    date_cache.READ.clear()


def test_each_format_and_order_is_kept_apart():
    ambiguous = pd.Series(["05/12/1987", "13/05/1987", "05/06/1994"] * 2)
    month_first = read_dates(ambiguous)
    day_first = read_dates(ambiguous, None, ("%d/%m/%Y",))
    given = read_dates(ambiguous, "%d/%m/%Y")
    assert list(month_first[2][:3]) == ["%m/%d/%Y", "%d/%m/%Y", "%m/%d/%Y"]
    assert list(day_first[2][:3]) == ["%d/%m/%Y"] * 3
    assert list(given[2][:3]) == ["%d/%m/%Y"] * 3
    assert month_first[0][0] != day_first[0][0] and day_first[0][0] == given[0][0]
    assert _same(read_dates(ambiguous), month_first)
    date_cache.READ.clear()


def test_only_unseen_texts_are_parsed_and_the_cache_is_bounded():
    calls: list[int] = []

    def parse(uniq, fmt, prefer):
        calls.append(len(uniq))
        return _read_distinct(uniq, fmt, prefer)

    cache = ReadCache(max_texts=1_000)
    texts = pd.Series(pd.unique(_texts(5_000, 2).dropna()), dtype=object)
    cache.read(texts.iloc[:600], None, (), parse)
    again = cache.read(texts.iloc[300:900], None, (), parse)
    assert calls == [600, 300] and len(cache) == 900
    assert _same(again, _read_distinct(texts.iloc[300:900].reset_index(drop=True), None, ()))
    cache.read(texts.iloc[900:1_400], None, (), parse)  # would outgrow: starts afresh
    assert len(cache) == 500
    cache.read(texts.iloc[:2_000], None, (), parse)  # more than it keeps: kept none
    assert len(cache) == 500
    assert calls[-1] == 1_500


def test_another_day_reads_afresh(monkeypatch):
    """A two-digit year's century depends on the day (the latest year not in the future):
    kept readings are another day's, so they are dropped and the texts read again."""
    date_cache.READ.clear()
    texts = pd.Series(["04/03/95", "12/31/01"], dtype=object)
    now = read_dates(texts, "%m/%d/%y")
    assert len(date_cache.READ) == 2
    monkeypatch.setattr(date_cache, "today", lambda: dt.date(1999, 1, 1))
    then = read_dates(texts, "%m/%d/%y")
    assert len(date_cache.READ) == 2  # the other day's readings dropped
    as_dates = [pd.Timestamp(d, unit="D").date() for d in then[0]]
    assert as_dates == [dt.date(1995, 4, 3), dt.date(1901, 12, 31)]
    assert then[0][1] != now[0][1]  # 2001 today
    date_cache.READ.clear()


def _day(y: int, m: int, d: int) -> int:
    return (dt.date(y, m, d) - dt.date(1970, 1, 1)).days


def test_zone_names_read_each_value_in_its_own_zone():
    """``%Z``: the date as written in each value's zone, whatever zones the others
    have (mixed zones made pandas read the whole batch in UTC: 23:30 EST was May 13 next
    to a UTC value and May 12 alone), years before 1677 too; such texts are kept."""
    fmt, est = "%Y-%m-%d %H:%M %Z", "1987-05-12 23:30 EST"
    alone = _fresh(pd.Series([est]), fmt)
    mixed = _fresh(pd.Series([est, "1987-05-12 23:30 UTC", "1500-05-12 23:30 CET", "x"]),
                   fmt)
    assert mixed[0][0] == alone[0][0] == _day(1987, 5, 12)
    assert list(mixed[0][:3]) == [_day(1987, 5, 12)] * 2 + [_day(1500, 5, 12)]
    assert list(mixed[1]) == [True, True, True, False]
    read_dates(pd.Series([est, "1987-05-12 23:30 UTC"]), fmt)
    assert len(date_cache.READ) == 2
    assert _same(read_dates(pd.Series([est]), fmt), alone)
    date_cache.READ.clear()


def test_a_fraction_finer_than_a_microsecond_changes_no_other_reading():
    """pandas read a batch holding a nanosecond fraction in nanoseconds, where 1500 does
    not fit: that date was unreadable next to it and readable alone (and kept so)."""
    old, fine = "1500-05-12", "2000-5-12T10:30:00.123456789"
    alone = _fresh(pd.Series([old]))
    both = _fresh(pd.Series([old, fine]))
    assert alone[1][0] and list(both[1]) == [True, True]
    assert list(both[0]) == [_day(1500, 5, 12), _day(2000, 5, 12)]
    read_dates(pd.Series([old, fine]))
    assert _same(read_dates(pd.Series([old])), alone)
    date_cache.READ.clear()


def test_fractions_read_by_their_batch_are_never_kept():
    """pandas reads a batch with a fraction finer than a microsecond in nanoseconds,
    where a year before 1677 does not fit: ``%f`` formats are parsed every time, so a
    text read with others first reads alone as a fresh parse does."""
    fmt = "%d/%m/%Y %H:%M:%S.%f"
    texts = ["05/12/1500 00:00:00.1", "05/12/2000 00:00:00.123456789"]
    alone = _fresh(pd.Series(texts[:1]), fmt)
    assert alone[1][0]
    read_dates(pd.Series(texts), fmt)
    assert len(date_cache.READ) == 0
    assert _same(read_dates(pd.Series(texts[:1]), fmt), alone)


def test_texts_kept_meanwhile_by_another_reader_are_kept_once():
    """Parsing runs outside the lock: a reader that keeps the same texts meanwhile (here
    from inside the parse) leaves one row per text, each with its own reading."""
    cache = ReadCache()
    texts = pd.Series(["01/02/2000", "1999-12-31", "13/05/1987"], dtype=object)

    def parse(uniq, fmt, prefer):
        cache.read(uniq.iloc[:2].reset_index(drop=True), fmt, prefer, _read_distinct)
        return _read_distinct(uniq, fmt, prefer)

    first = cache.read(texts, None, (), parse)
    assert len(cache) == 3
    assert _same(cache.read(texts, None, (), _read_distinct), first)
    assert _same(first, _read_distinct(texts, None, ()))


def test_long_texts_and_readings_across_midnight_are_not_kept(monkeypatch):
    cache = ReadCache()
    long_text = "1987-05-12" + " " * 10 + "x" * 60
    cache.read(pd.Series([long_text, "1987-05-12"], dtype=object), None, (), _read_distinct)
    assert len(cache) == 1

    def across_midnight(uniq, fmt, prefer):
        monkeypatch.setattr(date_cache, "today", lambda: dt.date(2099, 1, 1))
        return _read_distinct(uniq, fmt, prefer)

    cache.read(pd.Series(["04/03/95"], dtype=object), "%m/%d/%y", (), across_midnight)
    assert len(cache) == 1  # read by the new day: kept under neither


def test_repeated_texts_given_directly_are_kept_once():
    cache = ReadCache()
    cache.read(pd.Series(["01/02/2000"] * 2, dtype=object), None, (), _read_distinct)
    cache.read(pd.Series(["1999-12-31"], dtype=object), None, (), _read_distinct)
    got = cache.read(pd.Series(["01/02/2000"], dtype=object), None, (), _read_distinct)
    assert len(cache) == 2 and list(got[2]) == ["%m/%d/%Y"]
    assert pd.Timestamp(got[0][0], unit="D").date() == dt.date(2000, 1, 2)


def test_threads_reading_at_once_get_fresh_readings():
    whole = _texts(4_000, 3)
    expect = _fresh(whole)
    cuts = [(i * 250, i * 250 + 1_500) for i in range(11)]

    def one(cut):
        lo, hi = cut
        return cut, read_dates(whole.iloc[lo:hi])

    with ThreadPoolExecutor(4) as pool:
        for (lo, hi), got in pool.map(one, cuts * 3):
            assert _same(got, tuple(a[lo:hi] for a in expect))
    assert len(date_cache.READ) == whole.dropna().nunique()  # each text kept once
    assert _same(read_dates(whole), expect)
    date_cache.READ.clear()
