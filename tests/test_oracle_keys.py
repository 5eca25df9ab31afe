"""The oracle's own key computation, checked on literal values, then erblock against it.

``tests/oracle.py`` computes keys without erblock's key code, so the brute-force tests
check what a key *means*. Here its values are checked by hand on literal cases (numbers
written three ways, empty strings, accents, short texts), and every key kind is run
through ``erblock.dedupe`` / ``erblock.link`` on a frame full of such cases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oracle import brute_dedupe, brute_link, key_values, pair_list

import erblock
from erblock import composite, items, minhash, prefix, qgrams, soundex, token, tokens
from erblock.blocking import date, digits
from erblock.blocking.keys import Lower, Phonetic


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "code": pd.array([1, 1.0, "1", "", None, 1.5, "1.5", " 1", 2, "2"], dtype=object),
        "year": [1987.0, np.nan, 1987.0, 2001.0, 1987.5, 2001.0, np.nan, 1987.0, 3.0, 3.0],
        "name": ["José  García", "jose garcia", "JOSE GARCIA", "", None, "Zoë Smith",
                 "zoe smith-jones", "  ", "Ann", "ann"],
        "tags": [["a", 1], ("b",), None, [], {"a"}, 1.0, "b", np.array(["c", "a"]), ["d"],
                 []],
        "phone": ["310/246-1501", "(310) 246-1501", "310.246.1501", "246-1501", None,
                  "n/a", 3102461501, "", "+1 310 246 1501", "212 555 0000"],
        "dob": ["1987-05-12", "19870512", "05/12/1987", "13/05/1987", None, "junk", "",
                "1987-05-13", "12/31/2001", "20011231"],
    }, index=pd.Index([f"r{i}" for i in range(10)], name="rid"))


def test_values_by_hand() -> None:
    df = _frame()
    assert key_values(df, "code").tolist() == [
        "1", "1", "1", None, None, "1.5", "1.5", " 1", "2", "2"]
    assert key_values(df, "year").tolist() == [
        "1987", None, "1987", "2001", "1987.5", "2001", None, "1987", "3", "3"]
    assert key_values(df, Lower("name")).tolist() == [
        "jose garcia", "jose garcia", "jose garcia", None, None, "zoe smith",
        "zoe smith-jones", None, "ann", "ann"]
    assert key_values(df, prefix("name", 3)).tolist() == [
        "jos", "jos", "jos", None, None, "zoe", "zoe", None, "ann", "ann"]
    assert key_values(df, prefix("name", 3, normalize=False)).tolist() == [
        "Jos", "jos", "JOS", None, None, "Zoë", "zoe", None, "Ann", "ann"]  # "  ": blank
    assert key_values(df, token("name", 1)).tolist() == [
        "garcia", "garcia", "garcia", None, None, "smith", "smith-jones", None, None, None]
    assert key_values(df, soundex("name"))[["r0", "r8"]].tolist() == ["J226", "A500"]
    assert key_values(df, tokens("name"))[["r0", "r6", "r7"]].tolist() == [
        {"jose", "garcia"}, {"zoe", "smith", "jones"}, set()]
    assert key_values(df, tokens("name", min_length=4))["r6"] == {"smith", "jones"}
    assert key_values(df, qgrams("name", 4))[["r8", "r5"]].tolist() == [
        {"ann"}, {"zoe ", "oe s", "e sm", " smi", "smit", "mith"}]
    assert key_values(df, items("tags")).tolist() == [
        {"a", "1"}, {"b"}, set(), set(), {"a"}, {"1"}, {"b"}, {"c", "a"}, {"d"}, set()]
    assert key_values(df, date("dob")).tolist() == [
        "1987-05-12", "1987-05-12", "1987-05-12", "1987-05-13", None, None, None,
        "1987-05-13", "2001-12-31", "2001-12-31"]
    assert key_values(df, date("dob", "month", "%d/%m/%Y"))[["r2", "r3"]].tolist() == [
        "1987-12", "1987-05"]
    assert key_values(df, digits("phone")).tolist() == [
        "3102461501", "3102461501", "3102461501", "2461501", None, None, "3102461501",
        None, "13102461501", "2125550000"]
    assert key_values(df, digits("phone", 7))[["r3", "r8"]].tolist() == ["2461501"] * 2
    both = key_values(df, ("code", "year")).tolist()
    assert both[0] == both[2] == ("1", "1987") and both[1] is None and both[3] is None


def _pairs_of(pairs: pd.DataFrame) -> set[tuple]:
    return set(pair_list(pairs))


KEYS = {
    "column (1, 1.0, '1')": "code",
    "float column with NaN": "year",
    "lower": Lower("name"),
    "prefix": prefix("name", 3),
    "raw prefix": prefix("name", 2, normalize=False),
    "token": token("name", 0),
    "last token": token("name", -1),
    "soundex": soundex("name"),
    "metaphone": Phonetic("name", "metaphone"),
    "composite": composite("code", token("name", 0)),
    "tuple": ("year", "code"),
    "function": lambda d: d["name"].str.len() % 3,
    "tokens": tokens("name"),
    "qgrams": qgrams("name", 2),
    "items": items("tags"),
    "items of a function": items(lambda d: d["name"].str.lower().str.split(), needs="name"),
    "minhash": minhash("name", bands=6, rows=2),
    "minhash on q-grams": minhash("name", 0.5, q=2),
    "composite with tokens": composite(tokens("name"), "year"),
    "date": date("dob"),
    "digits": digits("phone"),
    "last digits": digits("phone", 7),
    "date's year, day first": date("dob", "year", "%d/%m/%Y"),
    "date with a word": composite(date("dob", "month"), token("name", 0)),
}


@pytest.mark.parametrize("label", list(KEYS))
def test_erblock_blocks_as_the_oracle_says(client, label: str) -> None:
    key = KEYS[label]
    df = pd.concat([_frame(), _frame().set_axis([f"s{i}" for i in range(10)])])
    df.index.name = "rid"
    pairs = erblock.dedupe(df, key=key, compare={"name": "jaro_winkler"}, client=client)
    expected = brute_dedupe(df, [key])
    assert _pairs_of(pairs) == expected and len(pairs) == len(expected)
    left, right = _frame(), _frame().set_axis([f"s{i}" for i in range(10)])
    linked = erblock.link(left, right, key=key, compare={"name": "jaro_winkler"},
                          client=client)
    expected = brute_link(left, right, [key])
    assert _pairs_of(linked) == expected and len(linked) == len(expected)
