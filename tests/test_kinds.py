"""Every typed comparison kind against levels worked out by hand on literal values,
including missing and unparsable ones (null level: no evidence), and the report's count
of values a kind could not compare."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import erblock
from erblock.blocking.date_parsing import parse_dates
from erblock.matchers.levels import resolve_levels

NULL = "null"


def level(method: str, a: object, b: object, **options: object) -> str:
    """The default Fellegi-Sunter level label of the pair (a, b), both ways round and
    through both kernels (matrix and aligned), which must agree."""
    comp = erblock.comparison("x", method, **options)
    kern = comp.kernel
    spec = resolve_levels([comp], None)[0]
    labels = []
    for x, y in ((a, b), (b, a)):
        px, py = (kern.prepare(pd.Series([v], dtype=object)) for v in (x, y))
        sim = kern.matrix(px, py)[0, 0]
        same = kern.aligned(px, py, np.array([0]), np.array([0]))[0]
        assert (np.isnan(sim) and np.isnan(same)) or sim == same
        g = int(spec.levels(np.array([sim]))[0])
        labels.append(NULL if g < 0 else spec.labels()[g])
    assert labels[0] == labels[1], f"{method} is not symmetric on {a!r}, {b!r}"
    return labels[0]


@pytest.mark.parametrize("a, b, expected", [
    ("Smith", " smith ", "exact"),  # case and white space are normalised
    ("José", "jose", "exact"),  # accents stripped
    ("anne", "ann", "Jaro-Winkler >= 0.92"),  # JW 0.942
    ("martha", "marhta", "Jaro-Winkler >= 0.92"),  # JW 0.961
    ("dwayne", "duane", "Jaro-Winkler >= 0.7"),  # JW 0.84
    ("smith", "jones", "else"),
    (None, "smith", NULL),
    ("", "smith", NULL),  # a blank field carries no evidence
])
def test_name(a, b, expected):
    assert level("name", a, b) == expected


@pytest.mark.parametrize("a, b, expected", [
    ("1987-05-12", "1987-05-12", "exact"),
    ("1987-05-12", "19870512", "exact"),  # ISO and %Y%m%d are the same date
    ("05/12/1987", "1987-05-12", "exact"),  # %m/%d/%Y
    ("13/05/1987", "1987-05-13", "exact"),  # day first where month first fails
    ("12.05.1987", "1987-05-12", "exact"),  # %d.%m.%Y, always day first
    ("2.5.1987", "1987-05-02", "exact"),
    ("13-05-1987", "1987-05-13", "exact"),  # %d-%m-%Y where %m-%d-%Y fails
    ("12 May 1987", "May 12, 1987", "exact"),  # written months
    ("12 may 1987", "1987-05-12", "exact"),
    ("September 3, 2001", "2001-09-03", "exact"),
    ("12/05/1987", "1987-05-12", "one edit or day/month swap"),  # read month first
    ("31/02/1987", "1987-02-28", NULL),  # no such day either way
    ("12/05/87", "1987-05-12", NULL),  # a two-digit year: which century is not said
    ("1987-05-12", "1987-05-13", "one edit or day/month swap"),  # one digit
    ("1987-05-12", "1987-12-05", "one edit or day/month swap"),  # day and month swapped
    ("1987-05-12", "1978-05-12", "one edit or day/month swap"),  # adjacent digits swapped
    ("1987-05-12", "1987-05-30", "within 1 month"),  # two digits, 18 days
    ("1987-05-12", "1987-09-20", "within 1 year"),
    ("1987-05-12", "1991-02-03", "within 10 years"),
    ("1987-05-12", "1950-01-01", "else"),
    ("1987-05-12", "not a date", NULL),  # unparsable = missing
    ("1987-02-30", "1987-02-28", NULL),  # no such day, and two digits apart
    ("19231164", "19231114", "one edit or day/month swap"),  # a typo made day 64
    ("1923-11-64", "19231164", "exact"),  # the same non-date, written both ways
    ("19231164", "19231201", NULL),  # how far apart a non-date is cannot be said
    ("not a date", "not a date", NULL),
    (None, "1987-05-12", NULL),
    ("-1", "-1", NULL),  # a sentinel, not the year -1 (ISO 8601 reads it so)
])
def test_date(a, b, expected):
    assert level("date", a, b) == expected


def _one_edit_by_text(a: int, b: int) -> bool:
    """The edit rule on the digits as text: one digit differs, or two adjacent swapped."""
    x, y = f"{a:08d}", f"{b:08d}"
    diff = [i for i in range(8) if x[i] != y[i]]
    return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                              and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]])


_ymd = st.integers(0, 99_999_999)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ymd, st.integers(0, 7), st.integers(0, 9), st.integers(0, 3)),
                min_size=1, max_size=40))
def test_date_one_edit_matches_the_digit_rule(rows):
    from erblock.matchers.methods.dates import _one_edit

    a, b = [], []
    for v, i, d, how in rows:  # b: a copy, one digit set, two adjacent swapped, or other
        t = list(f"{v:08d}")
        if how == 1:
            t[i] = str(d)
        elif how == 2 and i < 7:
            t[i], t[i + 1] = t[i + 1], t[i]
        elif how == 3:
            t = list(f"{(v * 7919 + d) % 100_000_000:08d}")
        a.append(v)
        b.append(int("".join(t)))
    la, lb = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    expected = np.array([[_one_edit_by_text(x, y) for y in b] for x in a])
    np.testing.assert_array_equal(_one_edit(la[:, None], lb[None, :]), expected)  # matrix
    np.testing.assert_array_equal(_one_edit(la, lb), expected.diagonal())  # aligned


def test_date_format_option_and_datetimes():
    # format= is tried first and the defaults after it: another input's ISO dates stay
    # readable (a link of an ISO census with a register written %d/%m/%y)
    assert level("date", "12.05.1987", "1987-05-12", format="%d.%m.%Y") == "exact"
    assert level("date", "04/03/50", "1950-03-04", format="%d/%m/%y") == "exact"  # not 2050
    assert level("date", "05/12/1987", "1987-12-05", format="%d/%m/%Y") == "exact"
    assert level("date", "12.05.1987", "13.05.1987", format="%d.%m.%Y") == \
        "one edit or day/month swap"
    comp = erblock.comparison("x", "date")
    kern = comp.kernel
    ts = kern.prepare(pd.Series(pd.to_datetime(["1987-05-12", None])))
    text = kern.prepare(pd.Series(["1987-05-12", "1987-05-12"], dtype=object))
    sims = kern.matrix(ts, text)
    assert sims[0, 0] == 1.0 and np.isnan(sims[1]).all()
    # arrow dates and time-zoned timestamps (read_parquet(dtype_backend="pyarrow")): the
    # date as written, like a tz-aware datetime64 column
    import datetime as dt

    d32 = kern.prepare(pd.Series(pd.array([dt.date(1987, 5, 12), None], dtype="date32[pyarrow]")))
    tz = kern.prepare(pd.Series(pd.array([dt.datetime(1987, 5, 12, 23, 30), None],
                                         dtype="timestamp[us, tz=Australia/Sydney][pyarrow]")))
    for side in (d32, tz):
        sims = kern.matrix(side, text)
        assert sims[0, 0] == 1.0 and np.isnan(sims[1]).all()


def test_arrow_dates_and_times_are_compared_in_a_run(client):
    import datetime as dt

    df = pd.DataFrame({"k": ["x"] * 3,
                       "dob": pd.array([dt.date(1980, 1, 2)] * 2 + [dt.date(1981, 1, 2)],
                                       dtype="date32[pyarrow]"),
                       "at": pd.array([dt.time(5, 1)] * 3, dtype="time64[us][pyarrow]")})
    pairs = erblock.dedupe(df, key="k", compare={"dob": "date", "at": "exact"}, client=client)
    sims = dict(zip(zip(pairs["left_id"], pairs["right_id"]), pairs["dob_date"]))
    assert sims[(0, 1)] == 1.0 and sims[(0, 2)] < 1.0 and (pairs["at_exact"] == 1.0).all()


@pytest.mark.parametrize("a, b, expected", [
    ("SW1A 1AA", "sw1a1aa", "exact"),
    ("SW1A 1AA", "SW1A 1BB", "same sector"),
    ("SW1A 1AA", "SW1A 2BB", "same district"),
    ("SW1A 1AA", "SW2 1AA", "same area"),
    ("SW1A 1AA", "EC1A 1BB", "else"),
    ("02139", "02139", "exact"),
    ("02139", "02138", "same sector"),  # other codes: drop the last 1, 2, 3 characters
    ("02139", "02149", "same district"),
    ("02139", "02239", "same area"),
    (None, "02139", NULL),
])
def test_postcode(a, b, expected):
    assert level("postcode", a, b) == expected


def _postcode_parts(code: str | None) -> list[object]:
    """The module doc's parts of one normalised code, as text (a missing part is
    ``("none", code)``: equal to no other code's part)."""
    import re

    if not code:
        return [("none", code)] * 4
    n = len(code)
    if re.fullmatch(r"[A-Z]{1,2}[0-9][A-Z0-9]?[0-9][A-Z]{2}", code):
        parts = [code, code[:-2], code[:-3], re.match(r"[A-Z]{1,2}", code).group(0)]
    else:
        parts = [code] + [code[:max(n - cut, 0)] for cut in (1, 2, 3)]
    return [p if p else ("none", code) for p in parts]


_UK_CODES = st.builds(lambda a, d, x, s, u: a + d + x + s + u,
                      st.text("ABCDEFGHIJKLMNOPRSTUWYZ", min_size=1, max_size=2),
                      st.text("0123456789", min_size=1, max_size=1),
                      st.text("ABCDEFGHJKPSTUW0123456789", max_size=1),
                      st.text("0123456789", min_size=1, max_size=1),
                      st.text("ABDEFGHJLNPQRSTUWXYZ", min_size=2, max_size=2))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), _UK_CODES, st.text("AB0129", max_size=12),
                          st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", max_size=14)),
                min_size=1, max_size=40))
def test_postcode_parts_agree_exactly_when_their_text_does(codes):
    """The integer parts (bytes up to 8 characters, hashes beyond, a per-code mark where
    a part is missing) are equal for two codes exactly when the parts' text is."""
    from erblock.matchers.methods.contact import postcode_table

    codes = [c or None for c in codes]
    table = postcode_table(pd.Series(codes, dtype=object))
    ref = [_postcode_parts(c) for c in codes]
    for c in range(4):
        for i in range(len(codes)):
            for j in range(len(codes)):
                assert (table[i, c] == table[j, c]) == (ref[i][c] == ref[j][c]), (
                    codes[i], codes[j], c)


@pytest.mark.parametrize("a, b, expected", [
    ("Ann.Lee@Example.com ", "ann.lee@example.com", "exact"),
    ("ann.lee@example.com", "ann.lee@other.org", "same user part"),
    ("ann.lee@example.com", "ann.leee@other.org", "user parts similar"),
    ("ann.lee@example.com", "bob@example.com", "else"),
    ("ann.lee@example.com", None, NULL),
])
def test_email(a, b, expected):
    assert level("email", a, b) == expected


@pytest.mark.parametrize("a, b, expected", [
    ("(020) 7946-0958", "020 7946 0958", "exact"),  # digits only
    ("+44 20 7946 0958", "020 7946 0958", "prefix omitted"),  # 2079460958 is a suffix
    ("020 7946 0958", "020 7946 0959", "one digit off"),
    ("020 7946 0958", "020 7964 0958", "one digit off"),  # adjacent digits swapped
    ("020 7946 0958", "031 5555 0958", "last 4 digits equal"),
    ("020 7946 0958", "031 5555 1234", "else"),
    ("n/a", "020 7946 0958", NULL),  # no digits
])
def test_phone(a, b, expected):
    assert level("phone", a, b) == expected


@pytest.mark.parametrize("a, b, expected", [
    ("The Art of Computer Programming", "art of computer programming, the", "same tokens"),
    ("sony digital camera dsc w55", "sony dsc w55 digital camera black", ">= 0.75"),  # 5/6
    ("sony digital camera", "canon digital camera", ">= 0.5"),  # 2/4
    ("sony dsc w55", "canon eos 40d camera", "else"),
    (None, "x", NULL),
    # a word holding a digit is one token without its punctuation: model numbers agree
    # however they are written, and are not half-shared when split at the hyphen
    ("Denon Turntable - DP29F", "Denon DP-29F Turntable", "same tokens"),
    ("Apple iPod Nano - MB735LL/A", "apple ipod nano mb735lla", "same tokens"),
    ("Logitech V470 Mouse 910-000692", "Logitech V470 Mouse - 910000692", "same tokens"),
    ("sony hdr-sr12", "sony hdr sr12", ">= 0.25"),  # 1 of 4: sony, hdrsr12 | hdr, sr12
    ("wireless-g router", "Wireless G Router", "same tokens"),  # no digit: word runs
    # both hold codes and share none: a different model, house number or edition
    ("sony bravia kdl-40s5100 lcd tv", "sony bravia kdl-46s5100 lcd tv", "else"),  # 5/7
    ("123 main st", "125 main st", "else"),
    ("sony bravia 40 lcd", "sony bravia 46 lcd", "else"),
    # a code on one side only is no conflict (nor is a code written with a space inside:
    # "sony hdr-sr12" vs "sony hdr sr12" above, hdr + sr12 = hdrsr12)
    ("sony bravia lcd tv", "sony bravia lcd tv kdl40s5100", ">= 0.75"),  # 4/5
])
def test_text(a, b, expected):
    assert level("text", a, b) == expected


def test_text_codes_option():
    """``codes=False``: runs of letters and digits only, as the words are split."""
    assert level("text", "Denon DP-29F", "Denon DP29F", codes=False) == ">= 0.25"  # 1/4
    assert level("text", "sony hdr-sr12", "sony hdr sr12", codes=False) == "same tokens"
    # no codes, so no conflicts either: 3 of 5 tokens
    assert level("text", "sony kdl-40s5100 tv", "sony kdl-46s5100 tv", codes=False) == ">= 0.5"
    with pytest.raises(ValueError, match="codes"):
        erblock.comparison("x", "text", codes="yes")


def test_exact_and_numeric():
    assert level("exact", "F", "F") == "exact"
    assert level("exact", "F", "M") == "< 1"
    assert level("exact", None, "M") == NULL
    assert level("numeric", 100, 100) == "exact"
    assert level("numeric", 100, 96, scale=50) == ">= 0.9"  # 1 - 4/50 = 0.92
    assert level("numeric", 100, 80, scale=50) == ">= 0.5"  # 0.6
    assert level("numeric", 100, 20, scale=50) == "< 0.5"
    assert level("numeric", 100, 95, mode="rel") == ">= 0.9"  # 1 - 5/100


def test_numbers_written_as_text_are_parsed_as_shops_write_them():
    """Currency and units around a number go, commas between groups of three digits are
    thousands separators; nothing else is guessed."""
    from erblock.matchers.methods.numeric import NumericMethod, parse_numbers

    got = parse_numbers(pd.Series(["$1,299.99", "USD 20", "20.00 EUR", "12 kg", "-5", "1e3",
                                   "$ 1,234,567.5", "1.299,99", "2x4", "12,34", "  ", None],
                                  dtype=object))
    want = [1299.99, 20.0, 20.0, 12.0, -5.0, 1000.0, 1234567.5] + [np.nan] * 5
    np.testing.assert_allclose(got, want)
    # three present values are no numbers; blank text and None are missing
    assert NumericMethod().count_invalid(pd.Series(["$5", "1.299,99", "2x4", "12,34", " ",
                                                    None], dtype=object)) == 3
    assert level("numeric", "$1,299.00", "1299", mode="rel") == "exact"


def test_unparsable_numbers_are_counted_in_the_report(client):
    df = pd.DataFrame({"k": ["a"] * 4, "price": ["$399.00", "399", "call for price", None]})
    pairs = quietly(erblock.dedupe, df, key="k", compare={"price": "numeric"}, client=client,
                    sort=True)
    assert said(pairs, "price_numeric").endswith(
        "'price' (33%) cannot be read by numeric (e.g. 'call for price') and count as "
        "missing; numbers are read with a currency sign, units or thousands separators "
        "stripped; convert other writings to numbers first")
    assert erblock.RunReport.of(pairs).records["invalid_price_numeric"] == 1
    assert pairs["price_numeric"].tolist()[0] == 1.0  # "$399.00" vs "399"


def test_unparsable_dates_are_counted_in_the_report(client):
    df = pd.DataFrame({"k": ["a"] * 5,
                       "dob": ["1987-05-12", "12/05/1987", "not a date", None, "1987-02-30"]})
    pairs = quietly(erblock.dedupe, df, key="k", compare={"dob": "date"}, client=client)
    assert "1 of the 4 present values of 'dob' (25%)" in said(pairs, "dob_date")
    assert said(pairs, "dob_date").endswith("comparison('dob', 'date', format='%d/%m/%y') "
                                            "(tried first, before the formats read by "
                                            "default)")
    report = erblock.RunReport.of(pairs)
    # "not a date"; 30 February still has the digits of a date with a typo
    assert report.records["invalid_dob_date"] == 1
    assert "1 dob_date values could not be compared" in report.summary()
    assert pairs["dob_date"].isna().sum() == 10 - 1  # only one pair has two valid dates


def test_phone_international_and_trunk_prefixes_agree():
    assert level("phone", "0044 20 7946 0958", "+44 20 7946 0958") == "exact"
    assert level("phone", "000", "0") == NULL  # only zeros: no number


def _tokens(text: str) -> set[str]:
    import re
    import unicodedata
    folded = "".join(c for c in unicodedata.normalize("NFKD", text)
                     if not unicodedata.combining(c))
    return set(re.findall(r"[0-9a-z]+", folded.lower()))


def test_idf_weighted_text_by_hand():
    """Token weights ln((1 + N) / (1 + df)) + 1 from a corpus; weighted Jaccard, cosine and
    overlap worked out in plain Python; without a corpus the weights are 1."""
    from erblock.matchers.methods.text import TokenWeights, token_table
    corpus = ["sony camera", "canon camera", "nikon camera", "sony dsc w55", "the camera"]
    docs = [_tokens(t) for t in corpus]
    n = len(docs)
    df = {t: sum(t in d for d in docs) for d in docs for t in d}
    w = {t: np.log((1 + n) / (1 + c)) + 1 for t, c in df.items()}
    hashes = token_table(pd.Series(corpus))
    uniq, counts = np.unique(hashes[hashes != 0], return_counts=True)
    weights = TokenWeights.from_counts(uniq, counts, n)
    a, b = "sony camera", "sony dsc w55 camera"
    ta, tb = _tokens(a), _tokens(b)
    expect = {
        "jaccard": sum(w[t] for t in ta & tb) / sum(w[t] for t in ta | tb),
        "cosine": sum(w[t] ** 2 for t in ta & tb) / np.sqrt(
            sum(w[t] ** 2 for t in ta) * sum(w[t] ** 2 for t in tb)),
        "overlap": sum(w[t] for t in ta & tb) / min(sum(w[t] for t in ta),
                                                    sum(w[t] for t in tb)),
    }
    for metric, value in expect.items():
        comp = erblock.comparison("x", "text", metric=metric).with_corpus(weights)
        pa, pb = (comp.prepare(pd.Series([v])) for v in (a, b))
        got = comp.matrix(pa, pb)[0, 0]
        assert got == pytest.approx(value, rel=1e-6)
        assert comp.aligned(pa, pb, np.array([0]), np.array([0]))[0] == got
        plain = erblock.comparison("x", "text", metric=metric, weighting="none")
        unweighted = erblock.comparison("x", "text", metric=metric)  # no corpus: weights 1
        assert plain.matrix(pa, pb)[0, 0] == unweighted.matrix(pa, pb)[0, 0]
    # sharing the rare "sony" counts for more than sharing the common "camera"
    comp = erblock.comparison("x", "text").with_corpus(weights)
    p = [comp.prepare(pd.Series([v])) for v in ("sony x", "sony y", "camera x", "camera y")]
    assert comp.matrix(p[0], p[1])[0, 0] > comp.matrix(p[2], p[3])[0, 0]
    assert erblock.comparison("x", "text").to_dict() == comp.to_dict()  # not in the spec
    with pytest.raises(ValueError, match="weighting"):
        erblock.comparison("x", "text", weighting="bm25")


def test_idf_weights_come_from_the_whole_input(client):
    """The engine counts document frequencies over both sources, whatever the
    partitioning and strategy: every run gives the same similarities, equal to weights
    computed here from all records."""
    rng = np.random.default_rng(4)
    words = np.array(["sony", "camera", "canon", "the", "lens", "w55", "zoom", "black"])
    def frame(n, start):
        return pd.DataFrame({"k": rng.choice(["a", "b"], n),
                             "t": [" ".join(rng.choice(words, rng.integers(1, 5)))
                                   for _ in range(n)]},
                            index=pd.RangeIndex(start, start + n))
    left, right = frame(60, 0), frame(50, 100)
    docs = [_tokens(t) for t in pd.concat([left.t, right.t])]
    n = len(docs)
    w = {t: np.log((1 + n) / (1 + sum(t in d for d in docs))) + 1 for d in docs for t in d}
    runs = []
    for parts, strategy in ((1, "basic"), (3, "pairrange"), (2, "cellrange")):
        pairs = erblock.link(left, right, key="k", compare={"t": "text"}, client=client,
                             npartitions=parts, strategy=strategy, n_tasks=3, sort=True)
        runs.append(pairs["t_text"].to_numpy())
        ta = [_tokens(left.t[i]) for i in pairs.left_id]
        tb = [_tokens(right.t[j]) for j in pairs.right_id]
        ref = [sum(w[t] for t in x & y) / sum(w[t] for t in x | y) for x, y in zip(ta, tb)]
        np.testing.assert_allclose(pairs["t_text"].to_numpy(), ref, rtol=1e-6)
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


def test_date_typos_count_only_when_written_as_a_date_of_the_format():
    """A non-date keeps its digits for the typo levels when it is written as ``YYYYMMDD``
    or ``YYYY-MM-DD`` (the defaults read those whatever ``format=`` says first); a
    half-dashed ``1923-1164`` never. Eight digits whose first four are a year are never
    read day or month first: only those whose last four are a year from 1800 to 2099
    (``19121164`` is no 19 December 1164, ``20111987`` is 20 November 1987)."""
    from erblock.matchers.methods.dates import parse_dates, typo_digits

    values = pd.Series(["19231164", "1923-11-64", "1923-1164", "abc"])
    none = np.zeros(len(values), dtype=bool)
    for fmt in (None, "%Y%m%d", "%d/%m/%Y"):
        assert typo_digits(values, none, fmt).tolist() == [19231164, 19231164, 0, 0]
    assert parse_dates(pd.Series(["19121164", "20111987"]))[1].tolist() == [False, True]
    assert parse_dates(pd.Series(["12051987"]))[1].all()  # 12 May 1987


def test_the_cli_guide_lists_every_registered_key_form():
    """docs/guide/cli.md's key table follows the registry (a new key kind must add its
    command-line form there too)."""
    from pathlib import Path

    from erblock.blocking.registry import KEY_KINDS

    text = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "cli.md").read_text()
    for kind in KEY_KINDS.values():
        for name in kind.cli_names:
            assert f"`{name}:" in text, name


def test_text_tokens_are_letters_and_digits_of_any_script():
    """Cyrillic, Greek, CJK, "ß": the same text has the same tokens (it was missing)."""
    from erblock.matchers.methods.text import TextMethod, _tokens_only, token_table

    vals = pd.Series(["Война и мир", "Ἰλιάς 2", "战争与和平", "Straße 12", "Øresund",
                      "KDL-40S5100 tv"])
    assert ((_tokens_only(token_table(vals)) != 0).sum(axis=1) == [3, 2, 1, 2, 1, 2]).all()
    # and a code variant beside each code that has a neighbour (Ἰλιάς2, straße12, kdl40s5100tv)
    assert ((token_table(vals) != 0).sum(axis=1) == [3, 3, 1, 3, 1, 3]).all()
    m = TextMethod(weighting="none")
    p = m.prepare(vals)
    np.testing.assert_array_equal(m.matrix(p, p).diagonal(), np.ones(len(vals)))
    q = m.prepare(pd.Series(["война и мир", "Strasse 12"]))
    assert m.matrix(q, p)[0, 0] == 1.0  # lower-cased alike


def test_date_times_are_the_date_they_are_written_on_whatever_their_offset():
    """ISO date-times with and without UTC offsets, mixed in one column (pandas refuses
    mixed offsets: the whole column failed), are the date as written."""
    from erblock.matchers.methods.dates import DateMethod, parse_dates

    values = pd.Series(["1987-03-04T10:00", "1987-03-04 23:30:00-05:00",
                        "1987-03-04T01:00:00Z", "1987-03-04T10:00+02:00", "1987-03-04",
                        "19870304", None], dtype=object)
    days, ok = parse_dates(values)
    assert ok.tolist() == [True] * 6 + [False]
    assert set(days[:6].tolist()) == {int(np.datetime64("1987-03-04", "D").astype(np.int64))}
    assert level("date", "1987-03-04T23:30:00-05:00", "1987-03-04") == "exact"
    assert DateMethod().count_invalid(values) == 0
    # a value's date never depends on the values parsed with it (offsets mixed or not)
    fmt = "%Y-%m-%dT%H:%M:%S%z"
    for v, f in [("1987-03-04T23:30:00-05:00", fmt), ("19870304T2330-0500", None),
                 ("1987-03-04T23-05:00", None)]:
        alone = parse_dates(pd.Series([v]), f)[0][0]
        for others in (["1987-03-04T10:00:00+09:00"], ["1987-03-04"], []):
            assert parse_dates(pd.Series([v, *others]), f)[0][0] == alone == days[0]
    # a format whose offset follows a space ("%Y-%m-%d %z") read no date at all
    spaced = pd.Series(["1987-03-04 +0100", "1987-03-04 -05:00", "1987-03-04 Z"])
    days_z, ok_z = parse_dates(spaced, "%Y-%m-%d %z")
    assert ok_z.all() and set(days_z.tolist()) == {days[0]}
    # a time that is none is no date-time: missing and counted
    junk = pd.Series(["1987-03-04T25:99", "1987-03-04T10:00garbage", "1987-03-04T24:00",
                      "1987-03-04 10:00:00 extra"])
    assert not parse_dates(junk)[1].any() and DateMethod().count_invalid(junk) == 4


def test_full_width_and_other_script_digits_are_digits():
    assert level("phone", "０２０ ７９４６ ０９５８", "020 7946 0958") == "exact"
    assert level("phone", "٠٢٠٧٩٤٦٠٩٥٨", "020 7946 0958") == "exact"  # Arabic-Indic
    assert level("phone", "020 7946 0958 ext²", "020 7946 0958") == "exact"  # ² no digit
    assert level("postcode", "ＳＷ１Ａ １ＡＡ", "SW1A 1AA") == "exact"


def test_phones_without_digits_are_counted_in_the_report(client):
    df = pd.DataFrame({"k": ["a"] * 5,
                       "tel": ["020 7946 0958", "n/a", "000", None, "０２０ ７９４６ ０９５８"]})
    pairs = quietly(erblock.dedupe, df, key="k", compare={"tel": "phone"}, client=client)
    assert erblock.RunReport.of(pairs).records["invalid_tel_phone"] == 2  # n/a, 000
    assert said(pairs, "tel_phone") == (
        "compare 'tel_phone': 2 of the 4 present values of 'tel' (50%) cannot be read by "
        "phone (e.g. 'n/a', '000') and count as missing; a phone number needs a digit "
        "other than 0")
    assert pairs["tel_phone"].max() == 1.0


def test_numeric_reads_a_categorical_as_its_values(client):
    from erblock.matchers.methods.numeric import NumericMethod, parse_numbers

    got = parse_numbers(pd.Series(pd.Categorical([1.5, 2.5, None, 1.5])))
    np.testing.assert_array_equal(got, [1.5, 2.5, np.nan, 1.5])
    text = pd.Series(pd.Categorical(["$5", "call", None]))
    np.testing.assert_array_equal(parse_numbers(text), [5.0, np.nan, np.nan])
    assert NumericMethod().count_invalid(text) == 1
    df = pd.DataFrame({"k": ["a", "a", "a"], "x": pd.Categorical([1.5, 1.5, 20.0])})
    pairs = erblock.dedupe(df, key="k", compare={"x": "numeric"}, sort=True, client=client)
    assert pairs["x_numeric"].tolist() == [1.0, 0.0, 0.0]
    # categories that are no numbers nor text are refused as their dtype would be
    for values in (pd.to_datetime(["2020-01-01"] * 3), [True, False, True]):
        bad = df.assign(x=pd.Categorical(values))
        with pytest.raises(TypeError, match="needs numbers"):
            erblock.dedupe(bad, key="k", compare={"x": "numeric"}, client=client)


def test_text_code_conflicts_matrix_equals_aligned():
    """The code rule gives the same similarity in a block matrix as per aligned pair, and
    leaves values without codes as they were."""
    vals = ["sony kdl-40s5100 tv", "sony kdl 40s5100 tv", "sony kdl-46s5100 tv", "sony tv",
            None, "canon eos 40d", "canon eos-40d body", "123 main st"]
    comp = erblock.comparison("x", "text")
    p = comp.prepare(pd.Series(vals, dtype=object))
    mat = comp.matrix(p, p)
    li, rj = (x.ravel() for x in np.meshgrid(np.arange(len(vals)), np.arange(len(vals)),
                                             indexing="ij"))
    np.testing.assert_array_equal(comp.aligned(p, p, li, rj), mat.ravel())
    assert mat[0, 2] == 0.0 and mat[0, 1] > 0.0  # another model; a code split by a space
    assert mat[0, 3] > 0.0  # one side without codes
    assert mat[5, 6] > 0.0  # 40d vs eos40d: eos + 40d on the left is eos40d
    assert mat[5, 7] == 0.0 and np.isnan(mat[4]).all()  # 40d vs 123; missing


def _codes_by_hand(text: str) -> tuple[set[str], set[str], set[str]]:
    """The tokens, codes and code variants of a text, in plain Python (module doc)."""
    import re
    toks = [re.sub(r"[\W_]", "", t) for t in re.findall(r"\S*\d\S*|[^\W_]+", text.lower())]
    is_code = [any(c.isdigit() for c in t) for t in toks]
    variants = {toks[k] + toks[k + 1] for k in range(len(toks) - 1)
                if is_code[k] or is_code[k + 1]}
    return set(toks), {t for t, c in zip(toks, is_code) if c}, variants


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["sony", "tv", "kdl", "40", "40s", "kdl40",
                                          "s40", "a-1", "a1", "1a", "x"]),
                         min_size=1, max_size=5).map(" ".join), min_size=2, max_size=8))
def test_text_code_rule_matches_plain_python(texts):
    """Unweighted Jaccard of the token sets, and 0 exactly where both texts hold codes and
    no code of one is a code or a code variant (a code joined to a neighbour) of the
    other; in a block matrix and per aligned pair alike."""
    comp = erblock.comparison("x", "text", weighting="none")
    p = comp.prepare(pd.Series(texts, dtype=object))
    mat = comp.matrix(p, p)
    n = len(texts)
    li, rj = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    np.testing.assert_array_equal(comp.aligned(p, p, li, rj).reshape(n, n), mat)
    for i, a in enumerate(texts):
        for j, b in enumerate(texts):
            (ta, ca, va), (tb, cb, vb) = _codes_by_hand(a), _codes_by_hand(b)
            conflict = bool(ca and cb and not ca & (cb | vb) and not (ca | va) & cb)
            want = 0.0 if conflict else len(ta & tb) / len(ta | tb)
            assert mat[i, j] == pytest.approx(want, abs=1e-6), (a, b)


def test_text_code_rule_in_batches_and_for_cut_values(monkeypatch):
    """The matrix's shared codes found in batches of any size give the same conflicts; a
    value cut at MAX_TOKENS is not judged by the rule (a code it shares may be cut)."""
    import erblock.matchers.methods.text as text

    vals = ["a1 b2 c3", "a1 x", "b2 y", "c9 z", "d4", "b2", "a1 b2", None] * 3
    comp = erblock.comparison("x", "text", weighting="none")
    p = comp.prepare(pd.Series(vals, dtype=object))
    whole = comp.matrix(p, p)
    monkeypatch.setattr(text, "JOIN_BATCH", 2)  # read at call time
    entries = (np.arange(4), np.array([7, 7, 8, 9]))
    assert [len(a) for a, _ in text._join(entries, entries)] == [2, 2, 2]  # 7·7 twice, 8, 9
    np.testing.assert_array_equal(comp.matrix(p, p), whole)
    assert (whole == 0).sum() > 0
    # a value with more distinct tokens than the table holds is not judged: its codes
    # c0 … c199 kept in the table would conflict with c999 (words shared either way)
    words = " ".join(a + b for a in "abcdefghij" for b in "klmnopqrst")  # 100 words
    long = words + " " + " ".join(f"c{k}" for k in range(200))
    q = comp.prepare(pd.Series([long, words + " c999"], dtype=object))
    assert (q.values == text.TRUNCATED).any(axis=1).tolist() == [True, False]
    assert comp.matrix(q, q)[0, 1] > 0.0
    assert comp.aligned(q, q, np.array([0]), np.array([1]))[0] > 0.0


_TEXT_CHARS = st.sampled_from(list("aZk09_-/. ,'()&+") + ["\t", "\n", "\x0b", "\x0c", "\r",
                                                         "\x1c", "\x1f", "\x00", "é", "É",
                                                         "ß", "Ω", "ж", "٣", "ﬁ", "\u00a0"])


@given(st.lists(st.one_of(st.none(), st.text(_TEXT_CHARS, max_size=24), st.integers(),
                          st.floats(allow_nan=True, allow_infinity=False)), max_size=30),
       st.booleans())
@settings(max_examples=300)
def test_text_tokens_of_whole_columns_equal_the_regular_expressions(values, codes):
    """The ``text`` kind's tokens (Arrow for ASCII values, regular expressions for the
    rest) equal the rule's regular expressions applied to every normalised value: the
    same tokens, in the same order, with the same code flags."""
    from erblock.blocking.text import as_key_strings, normalise_text
    from erblock.matchers.methods.tokenize import _regex_tokens, token_rows

    col = pd.Series(values, dtype=object)
    got = token_rows(col, codes)
    want = _regex_tokens(normalise_text(as_key_strings(col)).fillna(""), codes)
    assert got[0].tolist() == want[0].tolist()
    assert got[1].tolist() == want[1].tolist()
    assert got[2].tolist() == want[2].tolist()


@pytest.mark.parametrize("kind", ["name", "postcode", "text", "date", "email", "phone"])
def test_a_comparison_prepares_each_value_as_it_prepares_it_alone(kind):
    """Preparing a column (distinct values once, then spread) gives every value what
    preparing it on its own gives: no value's preparation depends on its neighbours."""
    from erblock.matchers.comparisons import comparison

    c = comparison("v", kind)
    values = pd.Series(["SW1A 1AA", "sw1a1aa", None, "Ádám  Smith", "  ", np.nan, "12345",
                        "１２３45", "ab-12 kdl-40", 12345, 12345.0, "SW1A 1AA", "1987-03-04",
                        "x@y.org", "+44 20 7946 0018", "", 1, True], dtype=object)
    whole = c.prepare(values)
    for i in range(len(values)):
        alone = c.prepare(values.iloc[[i]])
        assert bool(alone.missing[0]) == bool(whole.missing[i]), (kind, values.iloc[i])
        if not whole.missing[i]:  # a wider table (token sets) pads with zeros
            a, w = np.atleast_1d(alone.values[0]), np.atleast_1d(whole.values[i])
            assert w[:len(a)].tolist() == a.tolist(), (kind, values.iloc[i])
            assert not w[len(a):].astype(bool).any(), (kind, values.iloc[i])


def quietly(run, *args, **kwargs):
    """``run(...)`` with its warnings ignored: what they said is read from the report.
    (A warning of a run on an in-process cluster may not reach ``pytest.warns``: pandas
    enters ``catch_warnings`` in the worker threads, which is not thread-safe.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(*args, **kwargs)


def said(pairs, comparison: str) -> str:
    return erblock.RunReport.of(pairs).settings["unreadable"][comparison]


def test_a_date_column_the_defaults_cannot_read_is_warned_about_once_it_is_many(client):
    """Two-digit years are read by no default format: every dob was missing and the
    run said so only in a count. Now a warning names the column, the share and examples
    once a tenth of its present values cannot be read (kept in the report too); a few
    stray values stay a count. Day-first dates (``13/05/1987``, ``12.05.1987``) are read
    by the defaults."""
    import dask

    from erblock.engine.execute import invalid_totals
    from erblock.engine.job import Job
    from erblock.engine.schema import RID
    from erblock.engine.tasks.prepare import invalid_counts
    from erblock.matchers.comparisons import as_comparisons

    rng = np.random.default_rng(3)
    days = pd.to_datetime("1950-01-01") + pd.to_timedelta(rng.integers(0, 20000, 40), "D")
    df = pd.DataFrame({"k": "a", "dob": days.strftime("%d/%m/%y")})
    pairs = quietly(erblock.dedupe, df, key="k", compare={"dob": "date"}, client=client)
    assert said(pairs, "dob_date").startswith(
        "compare 'dob_date': 40 of the 40 present values of 'dob' (100%) cannot be read by "
        f"date (e.g. {df['dob'][0]!r}, {df['dob'][1]!r}, {df['dob'][2]!r})")
    few = df.assign(dob=days.strftime("%d.%m.%Y"))
    few.loc[:2, "dob"] = "unknown"  # 3 of 40: counted, not warned about
    pairs = quietly(erblock.dedupe, few, key="k", compare={"dob": "date"}, client=client)
    assert erblock.RunReport.of(pairs).records["invalid_dob_date"] == 3
    assert "unreadable" not in erblock.RunReport.of(pairs).settings
    assert (pairs["dob_date"] == 1.0).sum() == 0 and pairs["dob_date"].notna().sum() == 37 * 36 // 2
    # what the report keeps is what is warned (from the counts of finished tasks)
    comps = as_comparisons({"dob": "date"})
    job = Job(mode="dedupe", keys=(), comparisons=comps, strategy="basic", n_tasks=1)
    parts = [df.iloc[:20].assign(**{RID: range(20)}), df.iloc[20:].assign(**{RID: range(20, 40)})]
    futures = list(zip([0, 0], client.compute(
        [dask.delayed(invalid_counts)(p, {"dob_date": ("dob", comps[0])}) for p in parts])))
    with pytest.warns(UserWarning, match=r"^compare 'dob_date': 40 of the 40 present values"):
        counts, text = invalid_totals(client, futures, job)
    assert counts == {"invalid_dob_date": 40} and text["dob_date"] == said(
        quietly(erblock.dedupe, df, key="k", compare={"dob": "date"}, client=client),
        "dob_date")


def test_unreadable_dates_are_judged_and_named_per_input_of_a_link(client):
    """A register written %d/%m/%y linked to an ISO census: the count pooled both inputs
    (S's 100 % unreadable was 4.8 % of all, unwarned), named R's column, and its advice
    (format=) made R unreadable instead. Now each input is judged and named, and the
    advised format= reads both: it is tried before the defaults."""
    rng = np.random.default_rng(5)
    days = pd.to_datetime("1930-01-01") + pd.to_timedelta(rng.integers(0, 25000, 100), "D")
    r = pd.DataFrame({"k": "a", "dob": days.strftime("%Y-%m-%d")})
    s = pd.DataFrame({"k": "a", "birth": days[:5].strftime("%d/%m/%y")})
    big_r = pd.concat([r] * 20, ignore_index=True)  # S's 5 values are 0.25 % of all
    comp = erblock.comparison("dob", "date", right_column="birth")
    pairs = quietly(erblock.link, big_r, s, key="k", compare=[comp], client=client)
    text = said(pairs, "dob_date")
    assert text.startswith("compare 'dob_date': 5 of the 5 present values of 'birth' "
                           "in df_s (100%) cannot be read by date")
    assert "comparison('dob', 'date', right_column='birth', format='%d/%m/%y')" in text
    advised = erblock.comparison("dob", "date", right_column="birth", format="%d/%m/%y")
    pairs = quietly(erblock.link, r, s, key="k", compare=[advised], client=client)
    assert "unreadable" not in erblock.RunReport.of(pairs).settings
    assert pairs["dob_date"].notna().all() and (pairs["dob_date"] == 1.0).sum() == 5


def test_a_column_read_both_day_and_month_first_is_warned_about(client):
    """Day-first dates read month first where they can be (05/12/1987 as May 12) next
    to ones only day first reads (13/05/1987): the column is probably day first, and its
    ambiguous dates swapped. Said with the format= that reads it; on the command line as
    the --compare option."""
    df = pd.DataFrame({"k": "a", "dob": ["13/05/1987", "05/12/1987", "25/12/1990",
                                         "03/04/2000", "1987-05-12"]})
    pairs = quietly(erblock.dedupe, df, key="k", compare={"dob": "date"}, client=client)
    assert said(pairs, "dob_date") == (
        "compare 'dob_date': 'dob': 2 of its dates can only be read as '%d/%m/%Y' (e.g. "
        "'13/05/1987', '25/12/1990'), so its 2 dates that read either way (e.g. "
        "'05/12/1987', '03/04/2000') were probably read with day and month swapped; if "
        "the column is written so throughout, give comparison('dob', 'date', "
        "format='%d/%m/%Y')")
    fixed = erblock.comparison("dob", "date", format="%d/%m/%Y")
    pairs = quietly(erblock.dedupe, df, key="k", compare=[fixed], client=client)
    assert "unreadable" not in erblock.RunReport.of(pairs).settings
    # a date key that reads the column by the defaults misread them too: named, with its
    # format= (the first only; inside a composite as well)
    from erblock.blocking import composite, date

    keyed = quietly(erblock.dedupe, df, key=["k", composite("k", date("dob", "year"))],
                    compare={"dob": "date"}, client=client)
    assert said(keyed, "dob_date").endswith(
        "format='%d/%m/%Y'); the key date('dob') read them so too (its blocks miss them): "
        "give date('dob', 'year', format='%d/%m/%Y')")
    keyed = quietly(erblock.dedupe, df, key=["k", date("dob", format="%d/%m/%Y")],
                    compare={"dob": "date"}, client=client)
    assert "the key" not in said(keyed, "dob_date")
    from erblock.cli.common import _reworded

    assert _reworded("give date('dob', 'day', format='%m%d%Y')", {}) == \
        "give --key date:dob:day:%m%d%Y"

    for api, cli in [("comparison('dob', 'date', right_column='birth', format='%d/%m/%Y')",
                      "--compare dob=birth:date:format=%d/%m/%Y"),
                     ("comparison('dob', 'date', format='%d/%m/%y')",
                      "--compare dob:date:format=%d/%m/%y")]:
        assert _reworded(f"give {api} (tried first)", {}) == f"give {cli} (tried first)"


def test_review_mends_of_date_reading():
    """Eight digits day first with day 18-20 were unread (the guard looked at the day);
    format= was overridden by the other order's default (05/12/1987 read as May 12
    under %d/%m/%y); a two-digit-year date-time later today went back a century; a
    column's read orders are judged on counts summed over partitions, and a few typos
    read the other way do not make a column 'the other order'."""
    from erblock.engine.execute import _unreadable
    from erblock.engine.job import Job
    from erblock.engine.schema import RID
    from erblock.engine.tasks.prepare import invalid_counts
    from erblock.matchers.comparisons import as_comparisons

    days, ok = parse_dates(pd.Series(["18051987", "20121990", "19121164"]))
    assert ok.tolist() == [True, True, False]
    assert level("date", "05/12/1987", "1987-12-05", format="%d/%m/%y") == "exact"
    today = pd.Timestamp.today()
    late = today.strftime("%d/%m/%y") + " 23:59"
    got, ok = parse_dates(pd.Series([late]), "%d/%m/%y %H:%M")
    assert ok.all() and got[0] == (today.normalize() - pd.Timestamp("1970-01-01")).days
    comps = as_comparisons({"dob": "date"})
    job = Job(mode="dedupe", keys=(), comparisons=comps, strategy="basic", n_tasks=1)

    def said(*parts: list[str]) -> list[str]:
        counts = [invalid_counts(pd.DataFrame({"dob": p, RID: range(len(p))}),
                                 {"dob_date": ("dob", comps[0])})["dob_date"] for p in parts]
        return _unreadable(comps[0], job, 0, counts)

    # the day-first-only value and the ambiguous ones in different partitions: summed
    got = said(["13/05/1987", "25/12/1990"], ["05/12/1990"] * 3 + ["06/11/1970"] * 3)
    assert len(got) == 1 and "2 of its dates can only be read as '%d/%m/%Y'" in got[0]
    assert "its 6 dates that read either way" in got[0]
    # a month-first column with one typo: no advice to read it day first
    assert said(["05/25/1987"] * 30 + ["05/12/1987", "03/04/2000", "13/05/1987"]) == []
