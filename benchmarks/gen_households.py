"""Generated person registers with households, for held-out checks.

Written in session 16 (2026-11-27) for ``bench_sweep.py``: the person sets erblock is
checked on (FEBRL, RLdata, the generator's persons) draw every person independently, so
a record's nearest non-match is a stranger with a similar name. In a real register the
hardest non-matches live at the same address: a partner, a child, twins, a son named
after his father. They share address, postcode and phone (and mostly the surname), and
differ in given name, date of birth and sex. The design and every rate below were fixed before
any score was computed on it; seeds and rates stay as they are.

Households (entities are the people in them):

- size 1 to 6 (0.30, 0.30, 0.15, 0.15, 0.07, 0.03); a household of two is a couple
  (0.75) or a parent and a child; from three on, a couple and children;
- address: house number 1 to 300, a street (a surname-like word and a suffix: street,
  road, avenue, drive, lane, place, crescent, court), one of the generator's 80 cities as
  the suburb (Zipf-like), a 4-digit postcode (each suburb has five), a 10-digit landline
  (missing 0.25);
- the first adult: sex either, born 1940 to 1985; the partner: the other sex (0.9),
  born within a few years (normal, sd 4 years), own surname 0.25 (else the household's);
- children: born 18 to 42 years after the younger adult (one who would be born after
  2019 is born 0 to 17 years before 2020 instead, never less than 16 years after the
  younger adult), the household's surname, sex either, given names distinct within the
  household except a son named after his father (0.05 of the sons of households with a
  male adult); the second child is the first one's twin (same date of birth) in 0.04 of
  households with two or more children;
- given names: the generator's 200 names (male and female alternate in its list),
  Zipf-like.

:func:`generate_household_link`: register A lists every person of ``n_households``
households; register B, a later snapshot, keeps each person with probability 0.7,
moves 0.15 of households to a new address (all their B records), and adds
``new_share`` times as many households of its own (at least one). Every B record is written with, at
rates times ``noise``: given name as a short form when it has one (0.15; "william" ->
"bill") else a typo (0.08), missing (0.02); surname changed on marriage (0.05 of adult
women; a new draw, which may be the old name), a typo (0.06), missing (0.01); date of
birth missing (0.04), day and month swapped (0.03 of the dates whose day is 12 or less
and differs from the month), one digit wrong (0.04); sex missing (0.02), wrong (0.005); house number
missing (0.05), wrong (0.02); street suffix abbreviated (0.6: "rd", "st", ...), a typo
(0.05), missing (0.03); suburb a typo (0.03), missing (0.02); postcode missing (0.02),
one digit wrong (0.01); phone one digit wrong (0.02), written "(02) 1234 5678" (0.5, not
times ``noise``), missing when the household has none and in 0.3 more (not times
``noise``). A date with a wrong digit may be no date ("1982-05-59"). Truth: every (A id, B id) of one person.

:func:`generate_household_dedupe`: one register of ``n_households`` households in which
``dup_rate`` of the people are entered a second time, written as B writes above (no
moves, no marriage); truth is every pair of one person's records.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # heldout.py sits beside this script
    sys.path.insert(0, str(HERE))

import heldout  # noqa: E402

from erblock.datasets import fields as _f  # noqa: E402

_SIZES = np.array([1, 2, 3, 4, 5, 6])
_SIZE_P = np.array([0.30, 0.30, 0.15, 0.15, 0.07, 0.03])
_SUFFIX = np.array(["street", "road", "avenue", "drive", "lane", "place", "crescent",
                    "court"])
_SUFFIX_SHORT = dict(zip(_SUFFIX, ["st", "rd", "ave", "dr", "ln", "pl", "cres", "ct"],
                         strict=True))
_SHORT = {"william": "bill", "robert": "bob", "richard": "rick", "james": "jim",
          "john": "jack", "michael": "mike", "elizabeth": "liz", "margaret": "maggie",
          "thomas": "tom", "joseph": "joe", "christopher": "chris", "daniel": "dan",
          "matthew": "matt", "anthony": "tony", "jennifer": "jenny", "patricia": "pat",
          "susan": "sue", "barbara": "barb", "charles": "charlie", "david": "dave",
          "jessica": "jess", "katherine": "kate", "andrew": "andy", "joshua": "josh",
          "kenneth": "ken", "steven": "steve", "edward": "ed", "samuel": "sam",
          "benjamin": "ben", "nicholas": "nick", "jonathan": "jon", "alexander": "alex",
          "rebecca": "becky", "deborah": "debbie", "kimberly": "kim", "donald": "don",
          "timothy": "tim", "ronald": "ron", "gregory": "greg", "raymond": "ray",
          "patrick": "pat", "lawrence": "larry", "victoria": "vicky", "christine": "chris",
          "catherine": "cathy", "stephanie": "steph", "samantha": "sam", "gerald": "gerry"}
_DAY = np.timedelta64(1, "D")
_YEAR = 365.25


def _zipf(rng: np.random.Generator, n_vocab: int, n: int, a: float = 0.8) -> np.ndarray:
    w = 1.0 / np.arange(1, n_vocab + 1) ** a
    return rng.choice(n_vocab, size=n, p=w / w.sum())


def _days(d: str) -> int:
    return int((np.datetime64(d) - np.datetime64("1970-01-01")) / _DAY)


def _names_by_sex(rng: np.random.Generator, sex: np.ndarray) -> np.ndarray:
    """Given names (indexes into the generator's list) of the given sexes (0 male)."""
    half = len(_f._FIRST) // 2
    return 2 * _zipf(rng, half, len(sex)) + sex


def _households(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """One row per person of ``n`` households (module doc), with its household ``hh``."""
    size = rng.choice(_SIZES, size=n, p=_SIZE_P)
    couple = (size >= 3) | ((size == 2) & (rng.random(n) < 0.75))
    hh = np.repeat(np.arange(n), size)
    rank = np.arange(len(hh)) - np.repeat(np.cumsum(size) - size, size)
    partner = (rank == 1) & couple[hh]
    child = (rank >= 1) & ~partner
    sex = rng.integers(0, 2, len(hh))
    sex0 = sex[np.cumsum(size) - size]  # the first adult's
    sex = np.where(partner, np.where(rng.random(len(hh)) < 0.9, 1 - sex0[hh], sex0[hh]), sex)
    lo, hi = _days("1940-01-01"), _days("1985-12-31")
    dob0 = rng.integers(lo, hi + 1, n)
    dob1 = dob0 + np.rint(rng.normal(0, 4 * _YEAR, n)).astype(np.int64)
    younger = np.where(couple, np.maximum(dob0, dob1), dob0)
    last = _days("2019-12-31")
    kid = younger[hh] + (rng.uniform(18, 42, len(hh)) * _YEAR).astype(np.int64)
    kid = np.where(kid > last, last - (rng.uniform(0, 17, len(hh)) * _YEAR).astype(np.int64),
                   kid)
    kid = np.maximum(kid, younger[hh] + int(16 * _YEAR))
    dob = np.where(rank == 0, dob0[hh], np.where(partner, dob1[hh], kid))
    # twins: the second child shares the first child's birth date
    first_child = np.where(couple, 2, 1)
    n_children = size - first_child
    twins = (n_children >= 2) & (rng.random(n) < 0.04)
    second = child & (rank == first_child[hh] + 1) & twins[hh]
    dob[second] = dob[np.flatnonzero(second) - 1]
    given = _names_by_sex(rng, sex)
    for _ in range(20):  # distinct given names within a household (a few redraws)
        dup = pd.DataFrame({"hh": hh, "g": given}).duplicated().to_numpy()
        if not dup.any():
            break
        given[dup] = _names_by_sex(rng, sex[dup])
    # a son named after his father (the household's male adult, if any)
    father = np.full(n, -1)
    adult_male = (rank == 0) & (sex == 0) | partner & (sex == 0)
    father[hh[adult_male]] = given[adult_male]
    junior = child & (sex == 0) & (father[hh] >= 0) & (rng.random(len(hh)) < 0.05)
    given[junior] = father[hh[junior]]
    surname = _zipf(rng, len(_f._SURNAMES), n)[hh]
    own = partner & (rng.random(len(hh)) < 0.25)
    surname[own] = _zipf(rng, len(_f._SURNAMES), int(own.sum()))
    addr = _addresses(rng, n)
    out = pd.DataFrame({"hh": hh, "rank": rank, "adult": ~child,
                        "given_name": np.asarray(_f._FIRST)[given],
                        "surname": np.asarray(_f._SURNAMES)[surname],
                        "dob": (np.datetime64("1970-01-01") + dob * _DAY),
                        "sex": np.where(sex == 0, "m", "f")})
    return pd.concat([out, addr.iloc[hh].reset_index(drop=True)], axis=1)


def _addresses(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """One address per household: house number, street, suburb, postcode, phone."""
    suburb = _zipf(rng, len(_f._CITIES), n, 0.6)
    street = (np.asarray(_f._SURNAMES)[rng.integers(0, len(_f._SURNAMES), n)].astype(object)
              + " " + _SUFFIX[rng.integers(0, len(_SUFFIX), n)])
    phone = pd.Series(["0" + str(2 + s % 8) + "".join(d) for s, d in zip(
        suburb, rng.integers(0, 10, (n, 8)).astype(str), strict=True)], dtype=object)
    phone[rng.random(n) < 0.25] = None
    return pd.DataFrame({
        "house_number": rng.integers(1, 301, n).astype(str),
        "street": street,
        "suburb": np.asarray(_f._CITIES)[suburb],
        "postcode": (2000 + 10 * suburb + rng.integers(0, 5, n)).astype(str),
        "phone": phone,
    })


def _edit(values: pd.Series, rng: np.random.Generator, p: float,
          alphabet: str = "abcdefghijklmnopqrstuvwxyz") -> pd.Series:
    """``values`` with one random character edit in a share ``p`` of the present ones."""
    pick = values.notna().to_numpy() & (rng.random(len(values)) < p)
    pick &= values.fillna("").str.len().to_numpy() > 0
    out = values.copy()
    if pick.any():
        edited = _f.char_edits(pa.array(values[pick].astype(str).tolist()), rng, alphabet,
                               ("insert", "delete", "substitute", "transpose"))
        out[pick] = edited.to_pylist()
    return out


def _digit(values: pd.Series, rng: np.random.Generator, p: float) -> pd.Series:
    """One digit (never another character) replaced by another digit in a share ``p``
    of the present values."""
    pick = np.flatnonzero(values.notna().to_numpy() & (rng.random(len(values)) < p))
    out = values.copy()
    for i in pick:  # a few hundred values: a plain loop reads best
        v = str(values.iloc[i])
        where = [k for k, ch in enumerate(v) if ch in "0123456789"]
        if where:
            k = where[rng.integers(len(where))]
            new = str((int(v[k]) + rng.integers(1, 10)) % 10)
            out.iloc[i] = v[:k] + new + v[k + 1:]
    return out


def _missing(values: pd.Series, rng: np.random.Generator, p: float) -> pd.Series:
    return values.mask(rng.random(len(values)) < p)


def _written(people: pd.DataFrame, rng: np.random.Generator, noise: float,
             marriage: bool) -> pd.DataFrame:
    """People as the noisy register writes them (module doc), as strings."""
    n = len(people)
    r = lambda p: min(1.0, p * noise)  # noqa: E731
    given = people["given_name"].astype(object)
    short = given.map(_SHORT)
    use_short = short.notna().to_numpy() & (rng.random(n) < r(0.15))
    given = given.where(~use_short, short)
    given = given.where(use_short, _edit(given, rng, r(0.08)))
    given = _missing(given, rng, r(0.02))
    surname = people["surname"].astype(object)
    if marriage:
        wed = (people["adult"] & (people["sex"] == "f")).to_numpy() & (rng.random(n) < r(0.05))
        surname = surname.where(~wed, pd.Series(np.asarray(_f._SURNAMES)[_zipf(
            rng, len(_f._SURNAMES), n)], index=surname.index))
    surname = _missing(_edit(surname, rng, r(0.06)), rng, r(0.01))
    dob = pd.to_datetime(people["dob"])
    swap = (dob.dt.day <= 12) & (dob.dt.day != dob.dt.month) & (rng.random(n) < r(0.03))
    iso = dob.dt.strftime("%Y-%m-%d").astype(object)
    swapped = dob.dt.strftime("%Y-%d-%m").astype(object)
    dob_s = iso.where(~swap.to_numpy(), swapped)
    dob_s = _missing(_digit(dob_s, rng, r(0.04)), rng, r(0.04))
    sex = people["sex"].astype(object)
    flip = rng.random(n) < r(0.005)
    sex = _missing(sex.where(~flip, sex.map({"m": "f", "f": "m"})), rng, r(0.02))
    street = people["street"].astype(object)
    parts = street.str.rsplit(" ", n=1)
    abbr = rng.random(n) < r(0.6)
    street = street.where(~abbr, parts.str[0] + " " + parts.str[1].map(_SUFFIX_SHORT))
    street = _missing(_edit(street, rng, r(0.05)), rng, r(0.03))
    phone = people["phone"].astype(object)
    fmt = phone.notna().to_numpy() & (rng.random(n) < 0.5)
    phone = _digit(phone, rng, r(0.02))
    phone = phone.where(~fmt, "(" + phone.str[:2] + ") " + phone.str[2:6] + " "
                        + phone.str[6:])
    phone = phone.mask(rng.random(n) < 0.3)
    return pd.DataFrame({
        "given_name": given, "surname": surname, "dob": dob_s, "sex": sex,
        "house_number": _missing(_digit(people["house_number"].astype(object), rng, r(0.02)),
                                 rng, r(0.05)),
        "street": street,
        "suburb": _missing(_edit(people["suburb"].astype(object), rng, r(0.03)), rng,
                           r(0.02)),
        "postcode": _missing(_digit(people["postcode"].astype(object), rng, r(0.01)), rng,
                             r(0.02)),
        "phone": phone,
    }, index=people.index)


def _clean_register(people: pd.DataFrame) -> pd.DataFrame:
    """The clean register's writing of people (ISO dates, everything else as drawn)."""
    out = people[["given_name", "surname", "dob", "sex", "house_number", "street", "suburb",
                  "postcode", "phone"]].copy()
    out["dob"] = pd.to_datetime(out["dob"]).dt.strftime("%Y-%m-%d")
    return out.astype(object)


def generate_household_link(n_households: int = 4000, seed: int = 0, noise: float = 1.0,
                            new_share: float = 0.25
                            ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Registers A and B and the truth (module doc); ids are integers, B's after A's."""
    rng = np.random.default_rng(seed)
    people = _households(rng, n_households)
    people["person"] = np.arange(len(people))
    a = _clean_register(people)
    a.index = pd.RangeIndex(len(a), name="id")
    kept = people[rng.random(len(people)) < 0.7].copy()
    moved = rng.random(n_households) < 0.15
    new_addr = _addresses(rng, n_households)
    mv = moved[kept["hh"].to_numpy()]
    for c in new_addr.columns:
        kept.loc[mv, c] = new_addr[c].to_numpy()[kept["hh"].to_numpy()[mv]]
    others = _households(rng, max(1, int(round(new_share * n_households))))
    others["person"] = -1 - np.arange(len(others))
    b_people = pd.concat([kept, others], ignore_index=True)
    b_people = b_people.iloc[rng.permutation(len(b_people))].reset_index(drop=True)
    b = _written(b_people, rng, noise, marriage=True)
    b.index = pd.RangeIndex(len(a), len(a) + len(b), name="id")
    truth = heldout._link_truth(pd.Series(people["person"].to_numpy(), index=a.index),
                   pd.Series(b_people["person"].to_numpy(), index=b.index))
    return a, b, truth


def generate_household_dedupe(n_households: int = 3000, seed: int = 0, noise: float = 1.0,
                              dup_rate: float = 0.15) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One register with some people entered twice, and the truth (module doc)."""
    rng = np.random.default_rng(seed)
    people = _households(rng, n_households)
    people["person"] = np.arange(len(people))
    again = people[rng.random(len(people)) < dup_rate]
    df = pd.concat([_clean_register(people), _written(again, rng, noise, marriage=False)],
                   ignore_index=True)
    person = np.r_[people["person"].to_numpy(), again["person"].to_numpy()]
    order = rng.permutation(len(df))
    df, person = df.iloc[order].reset_index(drop=True), person[order]
    df.index.name = "id"
    t = heldout._link_truth(pd.Series(person, index=df.index), pd.Series(person, index=df.index))
    t = t[t["left_id"] < t["right_id"]].reset_index(drop=True)
    return df, t
