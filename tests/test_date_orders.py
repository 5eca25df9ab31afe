"""Dates an input writes in the other order of an ambiguous writing, throughout: read so
before any key or comparison (:mod:`erblock.engine.dateorders`)."""

from __future__ import annotations

import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import erblock
from erblock.blocking import date
from erblock.blocking.date_parsing import (
    PREFER_MIN,
    conventions,
    preferred_orders,
    read_in_order,
)
from erblock.engine.dateorders import orders_read
from erblock.engine.tasks.dates import date_order_counts


def _people(n: int, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    days = pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20_000, n), unit="D")
    names = np.array([f"p{i}" for i in range(n)])
    return pd.DataFrame({"name": names}), pd.Series(days)


def test_read_in_order_and_when_a_column_is_read_so():
    v = pd.Series(["10221985", "03242016", "12042018", None, "1987-05-12", "xx"] * 4)
    got = read_in_order(v, ("%m%d%Y",))
    assert got.drop(index=3).tolist()[:5] == [
        "1985-10-22", "2016-03-24", "2018-12-04", "1987-05-12", "xx"] and pd.isna(got[3])
    assert read_in_order(v.astype("string"), ("%m%d%Y",)).dtype == "string"
    assert read_in_order(pd.Series([10221985]), ("%m%d%Y",)).tolist() == ["1985-10-22"]
    found = conventions(v)  # 8 only month first reads, none only day first
    assert [f[:4] for f in found] == [("%m%d%Y", 8, 4, 0)]
    assert preferred_orders(found) == ()  # under PREFER_MIN
    assert preferred_orders([("%m%d%Y", PREFER_MIN, 5, 1, [], [])]) == ("%m%d%Y",)
    # a column of both writings (more than a tenth as many values read only the default
    # way) keeps the defaults; a few typos read the other way do not count against it
    assert preferred_orders([("%m%d%Y", 50, 30, 6, [], [])]) == ()
    assert preferred_orders([("%m%d%Y", 50, 30, 5, [], [])]) == ("%m%d%Y",)


def test_orders_read_sums_the_partitions_before_deciding():
    """Each partition alone is under PREFER_MIN; together they are read month first. The
    default-only values of another partition count against it just as well."""
    half = PREFER_MIN // 2 + 1
    parts = [{"dob": [("%m%d%Y", half, 3, 0)], "other": [("%m%d%Y", 2, 0, 0)]},
             {"dob": [("%m%d%Y", half, 1, 0)], "other": [("%m%d%Y", 1, 0, 0)]}]
    assert all(orders_read([p]) == {} for p in parts)
    assert orders_read(parts) == {"dob": ("%m%d%Y",)}
    against = {"dob": [("%m%d%Y", 0, 0, 2)]}  # 2 * PREFER_RATIO > 2 * half
    assert orders_read([*parts, against]) == {}
    assert orders_read([]) == {}
    two = [{"dob": [("%d/%m/%Y", 20, 0, 0)]}, {"dob": [("%m%d%Y", 20, 0, 0)]}]
    assert orders_read(two) == orders_read(two[::-1]) == {"dob": ("%d/%m/%Y", "%m%d%Y")}


def _run(r, s, **kw):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        pairs = erblock.link(r, s, key=[date("dob")], compare={"name": "exact", "dob": "date"},
                             **kw)
    return pairs, [str(w.message) for w in said]


def test_an_input_writing_month_first_throughout_is_read_so(client):
    """R writes ISO dates, S the same people's as MMDDYYYY (a US register): every date
    with a day up to 12 was read day first, so the date key missed those pairs and the
    comparison saw a swap; a warning said so. Now S's column is read month first
    (said in the report), exactly as with format='%m%d%Y', whatever the partitioning."""
    r, days = _people(400, 1)
    r = r.assign(dob=days.dt.strftime("%Y-%m-%d"))
    s = r.assign(dob=days.dt.strftime("%m%d%Y"))
    s.index = s.index + 10_000
    pairs, said = _run(r, s, client=client)
    assert not any("swapped" in w for w in said), said
    same = pairs[pairs["right_id"] - pairs["left_id"] == 10_000]  # (and namesakes' births)
    assert len(same) == 400 and (same["dob_date"] == 1.0).all()
    report = erblock.RunReport.of(pairs)
    assert report.settings["dates_read"] == {"df_s": {"dob": ["%m%d%Y"]}}
    given = erblock.link(r, s, key=[date("dob", format="%m%d%Y")],
                         compare={"name": "exact", "dob": {"method": "date",
                                                           "format": "%m%d%Y"}},
                         client=client)
    pd.testing.assert_frame_equal(pairs.reset_index(drop=True), given.reset_index(drop=True))
    parted, _ = _run(dd.from_pandas(r, npartitions=3), dd.from_pandas(s, npartitions=4),
                     client=client)
    parted = parted.compute() if hasattr(parted, "compute") else parted
    pd.testing.assert_frame_equal(pairs.reset_index(drop=True), parted.reset_index(drop=True))
    assert "dates_read" not in erblock.RunReport.of(given).settings


def test_a_column_of_both_writings_keeps_the_defaults_and_the_warning(client):
    r, days = _people(400, 2)
    r = r.assign(dob=days.dt.strftime("%Y-%m-%d"))
    # half month first, half day first (two registers merged): both kinds of
    # unambiguous values, so neither order is the column's; the defaults stay
    s = r.assign(dob=np.where(np.arange(400) % 2 == 0, days.dt.strftime("%m%d%Y"),
                              days.dt.strftime("%d%m%Y")))
    s.index = s.index + 10_000
    pairs, said = _run(r, s, client=client)
    assert "dates_read" not in erblock.RunReport.of(pairs).settings
    month_first = np.arange(400) % 2 == 0
    ambiguous = (days.dt.day <= 12).to_numpy()
    # the day-first half and the unambiguous month-first ones are found; the ambiguous
    # month-first ones are read day first, as the defaults do
    found = set(pairs.loc[pairs["right_id"] - pairs["left_id"] == 10_000, "left_id"])
    expect = set(np.flatnonzero(~month_first | ~ambiguous | (days.dt.day == days.dt.month)
                                .to_numpy()))
    assert found == expect


@pytest.mark.parametrize("format", ["%d/%m/%Y", "%m-%d-%Y"])
def test_the_other_orders_of_slashes_and_dashes_too(client, format):
    r, days = _people(300, 3)
    r = r.assign(dob=days.dt.strftime("%Y-%m-%d"))
    s = r.assign(dob=days.dt.strftime(format))
    s.index = s.index + 10_000
    pairs, said = _run(r, s, client=client)
    same = pairs[pairs["right_id"] - pairs["left_id"] == 10_000]
    assert len(same) == 300 and (same["dob_date"] == 1.0).all()
    assert erblock.RunReport.of(pairs).settings["dates_read"] == {"df_s": {"dob": [format]}}


def test_counts_add_up_over_partitions_and_a_format_of_none_is_no_format(client):
    """Four partitions of S hold three month-first-only dates each (and ambiguous ones):
    no partition reaches PREFER_MIN alone, the input does (12), so S is read month first;
    nine (three partitions) are too few. ``format=None`` given is the defaults."""
    days = pd.Series(pd.to_datetime(
        [f"1980-03-{d:02d}" for d in range(13, 25)] + [f"1980-{m:02d}-05" for m in range(1, 13)]
        + [f"1981-{m:02d}-07" for m in range(1, 9)]))
    order = np.array([i // 3 for i in range(12)] + [i % 4 for i in range(20)])
    r = pd.DataFrame({"name": [f"p{i}" for i in range(32)],
                      "dob": days.dt.strftime("%Y-%m-%d")}).iloc[np.argsort(order, kind="stable")]
    s = r.assign(dob=pd.to_datetime(r["dob"]).dt.strftime("%m%d%Y"))
    s.index = s.index + 10_000
    assert PREFER_MIN == 10
    parted, _ = _run(r, dd.from_pandas(s, npartitions=4, sort=False), client=client)
    parted = parted.compute() if hasattr(parted, "compute") else parted
    assert erblock.RunReport.of(parted).settings["dates_read"] == {"df_s": {"dob": ["%m%d%Y"]}}
    few = s[~s["name"].isin([f"p{i}" for i in range(9, 12)])]  # nine left
    pairs, _ = _run(r, dd.from_pandas(few, npartitions=3, sort=False), client=client)
    pairs = pairs.compute() if hasattr(pairs, "compute") else pairs
    assert "dates_read" not in erblock.RunReport.of(pairs).settings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        none = erblock.link(r, s, key=[date("dob")], compare={
            "name": "exact", "dob": {"method": "date", "format": None}}, client=client)
    assert erblock.RunReport.of(none).settings["dates_read"] == {"df_s": {"dob": ["%m%d%Y"]}}


def test_a_key_column_cut_from_a_date_read_in_the_other_order_is_found(client):
    """A ready-made key column of the year of birth (``"1987"``), next to a ``date``
    comparison of a column S writes ``MMDDYYYY`` throughout: the derived-key test reads
    the dates as the comparison does (``1987-05-12``, where the year starts a word), so
    the key is found to be cut from the date in both inputs, not in R's only."""
    r, days = _people(400, 6)
    r = r.assign(dob=days.dt.strftime("%Y-%m-%d"), yob=days.dt.strftime("%Y"))
    s = r.assign(dob=days.dt.strftime("%m%d%Y"))
    s.index = s.index + 10_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = erblock.link(r, s, key="yob", compare={"name": "exact", "dob": "date"},
                             scoring="em", client=client)
    settings = erblock.RunReport.of(pairs).settings
    assert settings["dates_read"] == {"df_s": {"dob": ["%m%d%Y"]}}
    assert settings["derived_keys"] == {"0": ["dob"]}


@pytest.mark.parametrize("dtype", [object, "string"])
def test_counting_skips_iso_dates_and_counts_as_every_value_parsed(dtype):
    """ISO dates are left out of the counting (no reading of another order reads them)
    without changing any count: the counts equal conventions' on every value."""
    rng = np.random.default_rng(7)
    days = pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20_000, 600), unit="D")
    writings = [days.strftime(f) for f in ("%Y-%m-%d", "%m%d%Y", "%d/%m/%Y", "%m-%d-%Y")]
    values = np.concatenate([*writings, [" 1987-05-12 ", "1987-05-12T10:00", "١٩٨٧-٠٥-١٢",
                                          "12-05-1987", "x", ""]])
    col = pd.Series(rng.choice(values, 5_000), dtype=dtype)
    col[rng.random(5_000) < 0.05] = None
    got = date_order_counts(pd.DataFrame({"d": col}), ["d"])["d"]
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    held = np.bincount(codes[codes >= 0], minlength=len(uniques))
    expect = [f[:4] for f in conventions(pd.Series(uniques, dtype=col.dtype), weights=held)]
    assert got == expect and len(expect) == 3
