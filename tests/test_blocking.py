"""Key specs: what they compute, their round trip, and block-id hashing."""

from __future__ import annotations

import jellyfish
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from erblock.blocking import (
    NULL_BLOCK,
    Column,
    Composite,
    Lower,
    Phonetic,
    Prefix,
    Token,
    as_key_spec,
    block_ids,
    composite,
    key_from_dict,
    metaphone,
    nysiis,
    prefix,
    soundex,
    token,
    tokens,
)

ALL_SPECS = [Column("a"), Lower("a"), Prefix("a", 2), Prefix("a", 3, False), soundex("a"),
             metaphone("a"), nysiis("a"), Token("a", 1), composite("a", prefix("b", 1))]


@pytest.mark.parametrize("spec", ALL_SPECS, ids=repr)
def test_round_trip(spec):
    assert key_from_dict(spec.to_dict()) == spec


def test_repr_says_what_runs():
    assert repr(prefix("title", 3)) == "Prefix(column='title', n=3, normalize=True)"


def test_values_of_each_spec():
    df = pd.DataFrame({"a": ["Müller  Anne", "  mueller", None, "", "ROBERT"],
                       "b": ["x1", "y", "z", "w", None]})
    assert Lower("a").values(df).tolist()[:2] == ["muller anne", "mueller"]
    assert Prefix("a", 3).values(df).tolist()[:2] == ["mul", "mue"]
    assert Prefix("a", 3, normalize=False).values(df).tolist()[0] == "Mül"
    assert soundex("a").values(df).tolist()[4] == jellyfish.soundex("robert")
    assert nysiis("a").values(df).tolist()[4] == jellyfish.nysiis("robert")
    assert Token("a", 1).values(df).tolist()[0] == "anne"
    pos, words = tokens("a").items(pd.concat([df, pd.DataFrame({"a": ["MÜLLER"]})],
                                              ignore_index=True))
    assert pos.tolist() == [0, 0, 1, 4, 5]  # accents folded, ASCII or not
    assert words.tolist() == ["muller", "anne", "mueller", "robert", "muller"]
    ids = block_ids(df, composite("a", "b"))
    assert ids[2] == NULL_BLOCK and ids[3] == NULL_BLOCK and ids[4] == NULL_BLOCK
    assert ids[0] != NULL_BLOCK


def test_missing_and_empty_keys_are_not_blocked():
    df = pd.DataFrame({"a": ["x", None, "", np.nan, "x"]})
    ids = block_ids(df, Column("a"))
    assert (ids[1:4] == NULL_BLOCK).all()
    assert ids[0] == ids[4] != NULL_BLOCK


def test_numbers_meet_across_dtypes():
    # an int column in one source and a float column (because of NaN) in the other
    a = block_ids(pd.DataFrame({"y": [1987, 2001]}), Column("y"))
    b = block_ids(pd.DataFrame({"y": [1987.0, np.nan, 2001.0]}), Column("y"))
    c = block_ids(pd.DataFrame({"y": ["1987", None, "2001"]}), Column("y"))
    assert a.tolist() == [b[0], b[2]] == [c[0], c[2]]


def test_string_dtypes_hash_alike():
    values = ["ab", "c", None]
    ids = [block_ids(pd.DataFrame({"k": pd.Series(values, dtype=d)}), Column("k"))
           for d in (object, "string", "string[pyarrow]", "category")]
    for other in ids[1:]:
        assert other.tolist() == ids[0].tolist()


@given(st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=30))
def test_equal_keys_equal_ids(values):
    df = pd.DataFrame({"k": pd.Series(values, dtype=object)})
    ids = block_ids(df, Column("k"))
    for i, vi in enumerate(values):
        for j, vj in enumerate(values):
            blank_i, blank_j = not (vi and vi.strip()), not (vj and vj.strip())
            if not blank_i and not blank_j:
                assert (ids[i] == ids[j]) == (vi == vj)
            if blank_i:  # missing, empty or white space only ('\r', '\x0c'): no key
                assert ids[i] == NULL_BLOCK


def test_as_key_spec_forms_and_errors():
    assert as_key_spec("a") == Column("a")
    assert as_key_spec(("a", "b")) == Composite((Column("a"), Column("b")))
    assert as_key_spec(("a",)) == Column("a")
    with pytest.raises(TypeError, match="column labels must be strings, got 3"):
        as_key_spec(3)
    with pytest.raises(TypeError, match="key must be a column name"):
        as_key_spec({"a"})
    with pytest.raises(ValueError, match="prefix length"):
        prefix("a", 0)
    with pytest.raises(ValueError, match="phonetic algorithm"):
        Phonetic("a", "caverphone")
    assert token("a") == Token("a", 0)


def test_callable_key_errors_name_the_function():
    df = pd.DataFrame({"a": [1, 2, 3]})

    def boom(d):
        raise RuntimeError("bad")

    def short(d):
        return d["a"].iloc[:2]

    with pytest.raises(ValueError, match="key function 'boom' raised RuntimeError"):
        block_ids(df, as_key_spec(boom))
    with pytest.raises(ValueError, match="returned 2 values for 3 records"):
        block_ids(df, as_key_spec(short))
    ids = block_ids(df, as_key_spec(lambda d: d["a"] % 2))
    assert ids[0] == ids[2] != ids[1]


def test_a_key_that_starts_the_text_or_a_word_of_it():
    from erblock.blocking.derived import starts_text_or_word

    keys = pd.Series(["Empress", "court", None, "", "pal", "ct", "1987", "las vegas", "é"])
    texts = pd.Series(["empress court", "Palace  Court", "x", "y", "palace", "court",
                       "1987-05-12", "3570 Las Vegas Blvd", "Éclair"])
    assert starts_text_or_word(keys, texts).tolist() == [
        True, True, False, False, True, False, True, True, True]


def test_derivation_needs_nearly_every_record_and_far_less_by_chance():
    from erblock.blocking.derived import MIN_RECORDS, derivation

    g = np.random.default_rng(3)
    words = np.array([f"w{i:03d}" for i in range(200)])
    text = pd.Series([" ".join(g.choice(words, 3)) for _ in range(300)])
    first = text.str.split().str[0]
    assert derivation(first, text).derived  # the first word of the name
    assert derivation(text.str[:2], text).share == 1.0
    assert not derivation(text.str[:2], text).derived  # "w0" starts most texts anyway
    other = pd.Series(g.choice(words, 300))
    assert not derivation(other, text).derived  # an unrelated column
    some = first.where(np.arange(300) % 5 != 0, other)  # only 80 % cut from the text
    assert not derivation(some, text).derived
    with_missing = first.where(np.arange(300) % 3 != 0, None)
    d = derivation(with_missing, text)  # missing keys are left out, not counted against
    assert d.derived and d.n == 200
    few = derivation(first[: MIN_RECORDS - 1], text[: MIN_RECORDS - 1])
    assert few.share == 1.0 and not few.derived


def test_a_key_glued_from_two_columns_is_derived_from_both():
    from erblock.blocking.derived import derivation, pieces

    g = np.random.default_rng(4)
    sur = pd.Series(g.choice(["smith", "jones", "abbott", "lee", "ng", "brown", "taylor",
                              "wilson", "martin", "garcia", "davies", "evans"], 400))
    dob = pd.Series([f"{y}-{m:02d}-{d:02d}" for y, m, d in zip(
        g.integers(1930, 2005, 400), g.integers(1, 13, 400), g.integers(1, 29, 400))])
    key = sur.str[:2] + dob.str[:4]  # "sm1982", as a user might build it
    assert [p[:2].tolist() for p in pieces(key[:2])][:3] == [
        key[:2].tolist(), sur.str[:2][:2].tolist(), dob.str[:4][:2].tolist()]
    assert derivation(key, sur).derived and derivation(key, dob).derived
    initial = sur.str[:1] + dob.str[:4]  # "s1982": a one-letter piece counts on its own
    assert derivation(initial, sur).derived and derivation(initial, dob).derived
    other = pd.Series(g.choice(["ann", "bob", "cy", "dee", "eve", "flo"], 400))
    assert not derivation(key, other).derived
    # one run only (a plain word or number, or a one-letter key) is tested whole, as before
    assert [p.tolist() for p in pieces(pd.Series(["smith", "a", "1987"]))][1:] == [
        ["", "", ""]] * 3


def _ids(values: pd.Series) -> np.ndarray:
    from erblock.blocking import column
    from erblock.blocking.ids import block_ids

    return np.asarray(block_ids(pd.DataFrame({"v": values}), column("v")))


def test_a_date_time_is_one_key_whatever_else_its_partition_holds():
    """pandas writes a datetime column without times when all are midnight and with them
    otherwise: the same date must still be one block in both partitions (and a tz-aware
    time the same as its UTC time)."""
    p1 = pd.Series(pd.to_datetime(["1987-05-01", "1990-01-01"]))
    p2 = pd.Series(pd.to_datetime(["1987-05-01", "1990-01-01 10:30"], format="ISO8601"))
    assert _ids(p1)[0] == _ids(p2)[0]
    assert _ids(p1)[1] != _ids(p2)[1]
    berlin = pd.Series(pd.to_datetime(["1990-01-01 11:30"]).tz_localize("Europe/Berlin"))
    assert _ids(berlin)[0] == _ids(p2)[1]
    # the same values as objects (e.g. a column mixing dates and text) meet them too
    mixed = pd.Series([pd.Timestamp("1987-05-01"), "x", pd.NaT], dtype=object)
    assert _ids(mixed)[0] == _ids(p1)[0]


def test_categorical_and_decimal_numbers_meet_the_same_float():
    from decimal import Decimal

    plain = _ids(pd.Series([1987.0, 2.5]))
    assert (_ids(pd.Series([1987.0, 2.5], dtype="category")) == plain).all()
    assert (_ids(pd.Series([Decimal("1987.00"), Decimal("2.5")])) == plain).all()


def test_missing_times_and_decimals_block_nothing_in_any_partition():
    from decimal import Decimal

    from erblock.blocking.keys import NULL_BLOCK

    alone = pd.Series([pd.NaT, np.datetime64("NaT"), Decimal("NaN")], dtype=object)
    with_text = pd.Series([pd.NaT, np.datetime64("NaT"), Decimal("NaN"), "x"], dtype=object)
    assert (_ids(alone) == NULL_BLOCK).all()
    assert (_ids(with_text)[:3] == NULL_BLOCK).all()


def test_list_elements_true_and_one_stay_apart():
    from erblock.blocking.text import explode_values

    _, a = explode_values(pd.Series([[True, 1]]), "x")
    _, b = explode_values(pd.Series([[1, True]]), "x")
    assert a.tolist() == ["True", "1"] and b.tolist() == ["1", "True"]


def test_a_function_key_repr_has_no_memory_address():
    """A model saves its keys' reprs and compares them with a later run's (another
    process): an address would never match."""
    from erblock.blocking.function import FunctionKey

    r = repr(FunctionKey(_first_letter, needs=("name",)))
    assert "0x" not in r and "test_blocking._first_letter" in r and "'name'" in r


def _first_letter(df: pd.DataFrame) -> pd.Series:
    return df["name"].str[:1]


def test_an_empty_or_untyped_composite_is_refused_clearly():
    from erblock.blocking import Composite, composite

    with pytest.raises(ValueError, match="at least one part"):
        composite()
    with pytest.raises(TypeError, match="parts are key specs, got 'a'"):
        Composite(("a", "b"))  # type: ignore[arg-type]


def test_nested_values_are_refused_wherever_they_are():
    """The check used to read the first 1,000 values only: a list further down raised an
    unclear error, a tuple became a key like "('x', 'y')"."""
    from erblock.blocking.function import FunctionKey
    from erblock.blocking.text import explode_values

    late = pd.Series([["a"]] * 1500 + [[("x", "y")]])
    with pytest.raises(TypeError, match="nested lists"):
        explode_values(late, "items('t')")
    df = pd.DataFrame({"name": ["a"] * 1500 + ["b"]})
    listy = FunctionKey(lambda d: pd.Series([("x", "y") if v == "b" else v for v in d["name"]],
                                            index=d.index), needs=("name",))
    with pytest.raises(TypeError, match="returned lists"):
        listy.values(df)


def test_composite_parts_never_run_together(client):
    """("x\\x1fy", "z") and ("x", "y\\x1fz") are different keys (the parts' separator
    inside a value is escaped); a blank part of a composite with a multi-valued part gives
    no key, as it does in a single-valued composite. Checked against the oracle."""
    from oracle import brute_dedupe, pair_list

    import erblock

    df = pd.DataFrame({"a": ["x\x1fy", "x", "x\x1e\x1fy", "x\x1fy", " ", " "],
                       "b": ["z", "y\x1fz", "z", "z", "z", "z"],
                       "t": ["w", "w", "w", "w", "w", "w"]})
    ids = block_ids(df, composite("a", "b"))
    assert len(set(ids[:3].tolist())) == 3 and ids[0] == ids[3]
    for key in (composite("a", "b"), composite("a", tokens("t"))):
        pairs = erblock.dedupe(df, key=key, compare={"b": "exact"}, client=client)
        assert set(pair_list(pairs)) == brute_dedupe(df, [key]) == {(0, 3)}


def test_blank_elements_of_multi_valued_keys_stay_keys(client):
    """Only a record's one key is missing when blank: the space q-gram of multi-word text
    and a white-space list element are keys, as the oracle says (a review found them
    dropped)."""
    from oracle import brute_dedupe, pair_list

    import erblock
    from erblock.blocking import items, qgrams

    df = pd.DataFrame({"t": ["ab cd", "xy zw", "pq", "ab"],
                       "l": [["p", " "], [" "], ["q"], ["p"]]})
    for key, want in ((qgrams("t", 1), {(0, 1), (0, 3)}), (items("l"), {(0, 1), (0, 3)})):
        pairs = erblock.dedupe(df, key=key, compare={"t": "exact"}, client=client)
        assert set(pair_list(pairs)) == brute_dedupe(df, [key]) == want, key


def test_whole_floats_beyond_2_53_key_as_the_integer_they_are():
    """A float column (an int column with a gap) and an int column meet on any whole
    number, however large; 1e16 was written '1e+16' and met nothing."""
    from erblock.blocking.text import as_key_strings

    floats = pd.Series([1e16, np.nan, 2.0**62, -(2.0**70), 1.5])
    assert as_key_strings(floats).tolist()[:4] == [
        "10000000000000000", pd.NA, str(2**62), str(-(2**70))]
    assert as_key_strings(pd.Series([1e16], dtype=object)).tolist() == ["10000000000000000"]
    assert (_ids(pd.Series([10**16, 2**62])) == _ids(pd.Series([1e16, 2.0**62]))).all()
    # a whole Decimal is its exact integer, not the float it rounds to
    from decimal import Decimal
    assert as_key_strings(pd.Series([Decimal("9007199254740993")], dtype=object)).tolist() \
        == ["9007199254740993"]


def test_a_date_key_meets_across_writings_and_names_bad_options(client):
    """The same birth date written by a register (``19870512``), a census (``05/12/1987``)
    and a datetime column shares a block; a bad part or format is refused naming the
    column."""
    import erblock
    from erblock.blocking import date

    census = pd.DataFrame({"dob": ["05/12/1987", "12/31/2001", "junk"], "n": ["a", "b", "c"]})
    register = pd.DataFrame({"dob": pd.to_datetime(["1987-05-12", "2001-12-31", None]),
                             "n": ["a", "x", "c"]}, index=[10, 11, 12])
    pairs = erblock.link(census, register, key=date("dob"), compare={"n": "exact"},
                         client=client)
    assert sorted(zip(pairs["left_id"], pairs["right_id"])) == [(0, 10), (1, 11)]
    for bad, words in (({"part": "week"}, "part must be one of"),
                       ({"format": "dd/mm/yyyy"}, "strftime format"),
                       # as the date comparison refuses them (the key read 05/01 as
                       # 1900-01-05, blocked with a real one, and lost 29/02)
                       ({"format": "%d/%m", "part": "month"}, r"'%d/%m' has no year"),
                       ({"format": "%Q/%Y"}, "bad directive")):  # refused now, not in a task
        with pytest.raises(ValueError, match=f"'dob'.*{words}"):
            date("dob", **bad)


def test_a_date_key_reads_date_times_as_written_and_integers_that_lost_a_zero():
    """An object column of zoned date-times is keyed by the date each is written on, as a
    datetime column is (it was keyed in UTC: 23:30 in New York was the next day); a
    ``MMDDYYYY`` date stored as an integer lost its leading zero and is read with it."""
    import datetime as dt

    from erblock.blocking import date

    late = pd.Timestamp("1987-05-12 23:30", tz="US/Eastern")
    objects = pd.DataFrame({"d": pd.Series([late, dt.date(2001, 3, 4), pd.NaT, "1999-01-02",
                                            None], dtype=object)})
    assert date("d").values(objects).tolist() == [
        "1987-05-12", "2001-03-04", pd.NA, "1999-01-02", pd.NA]
    zoned = pd.DataFrame({"d": pd.Series([late])})
    assert date("d").values(zoned).tolist() == ["1987-05-12"]
    ints = pd.DataFrame({"d": pd.Series([12251990, 1021987, 10211987, None], dtype="Int64")})
    assert date("d", format="%m%d%Y").values(ints).tolist() == [
        "1990-12-25", "1987-01-02", "1987-10-21", pd.NA]
    assert date("d", format="%m%d%Y").values(ints.astype(float)).tolist()[:3] == [
        "1990-12-25", "1987-01-02", "1987-10-21"]
    # numbers in an object column (JSON, a frame built from rows) or categories are numbers
    # too; beside text, only the numbers lost a zero (the text "5121987" is not read)
    as_objects = pd.DataFrame({"d": pd.Series([1021987, None, "1021987", 12251990],
                                              dtype=object)})
    assert date("d").values(as_objects).tolist() == [
        "1987-02-01", pd.NA, pd.NA, "1990-12-25"]
    assert date("d").values(as_objects.iloc[[0, 1, 3]].astype("category")).tolist() == [
        "1987-02-01", pd.NA, "1990-12-25"]
    assert date("d").values(pd.DataFrame({"d": ["1021987"]})).isna().all()
    from decimal import Decimal
    beside_text = pd.Series([Decimal(1021987), 1021987.0, "x", True], dtype=object)
    assert date("d").values(pd.DataFrame({"d": beside_text})).tolist()[:2] == [
        "1987-02-01"] * 2
    assert date("d").values(pd.DataFrame({"d": pd.Categorical([1021987, "x"])}))[0] == \
        "1987-02-01"
    # seven digits of a format that writes seven (a year and its day) stay as they are
    ordinal = pd.DataFrame({"d": [1987132, 2001045]})
    assert date("d", format="%Y%j").values(ordinal).tolist() == ["1987-05-12", "2001-02-14"]
    # a zoned date-time beside numbers in an object column: its own date as well
    mixed = pd.DataFrame({"d": pd.Series([late, 19870512], dtype=object)})
    assert date("d").values(mixed).tolist() == ["1987-05-12", "1987-05-12"]


def test_a_digits_key_meets_across_punctuation_and_names_bad_options():
    from erblock.blocking import digits

    df = pd.DataFrame({"phone": ["310/246-1501", "(310) 246-1501", "none", 3102461501,
                                 "٣١٠-246-1501", "３１０ 246 1501²"]})
    # digits of any script are 0-9; a superscript is no digit of the number
    assert digits("phone").values(df).tolist()[:2] + digits("phone").values(df).tolist()[4:] \
        == ["3102461501"] * 4
    assert pd.isna(digits("phone").values(df)[2])
    assert digits("phone", 4).values(df).tolist()[3] == "1501"
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="'phone': last must be an integer >= 1"):
            digits("phone", bad)


def test_date_and_digits_keys_need_a_column_name():
    from erblock.blocking import date, digits

    for make, what in ((date, "date key"), (digits, "digits key")):
        for bad in ("", 3, None):
            with pytest.raises(ValueError, match=f"{what}: column must be a column name"):
                make(bad)
