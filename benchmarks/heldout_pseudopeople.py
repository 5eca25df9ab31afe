"""Held-out person registers from pseudopeople: a census linked to a Social Security register.

pseudopeople (the US Census Bureau-funded simulator of the Institute for Health Metrics
and Evaluation, BSD-3-Clause) ships a *sample* population of about 20,000 simulated
people in its wheel and writes the records that different registers would hold of them,
with the errors those registers make: typos, OCR and phonetic errors, nicknames, fake
names, swapped month and day, copies of a household member's age or birth date, missing
values, left-out rows. Its own default noise is used, at a fixed seed.

- ``pp_census_decade``: the 2020 census x the 2030 census (people moved, married, died
  and were born between them), names, birth date, sex, house number and street; rule P
  (the sample town's city and zip code are one value: no postcode pass).
- ``pp_census_wic``: the 2020 census x the WIC records (Women, Infants and Children) of
  every year: mothers and young children, siblings and twins; kinds and blocking as
  ``pp_census_decade``.
- ``pp_census_w2``: the 2020 census x the 2020 W-2 and 1099 tax forms (one per employer),
  names and mailing address only (no birth date: the household problem), blocked on
  rule P's name pass and house number + first street word.
- ``pp_tax_1040_w2``: the 2020 1040 tax returns (the primary filer) x the 2020 W-2 and
  1099 forms (one per employer), names, SSN and mailing address: two tax registers,
  blocked on rule P's name pass, house number + first street word, and the SSN's digits.
- ``pp_census_ssa``: link of the 2020 decennial census (about 10,000 records: one per
  person counted) to the Social Security register (about 24,000: creation and death
  events of every year, so a person can have two records), first name, middle initial,
  last name, date of birth and sex. The census writes dates ``MM/DD/YYYY``, the register
  ``YYYYMMDD``; the register's middle name is cut to its initial, as the census writes
  it. Truth: records of the same simulant. Rule P of :mod:`heldout`: (1) soundex of the
  last name + first letter of the first name, (2) the whole date of birth, read as a date
  (:func:`erblock.blocking.date`: the two inputs write it differently, so the raw
  strings share no block), no postcode.

Generating needs pseudopeople 1.3.1, which pins its own dependencies (vivarium): it is
run in a virtual environment of its own, ``$ERBLOCK_HELDOUT_CACHE/pseudopeople-1.3.1-venv``
(made with ``python -m venv`` and ``pip install pseudopeople==1.3.1`` on first use,
unless ``ERBLOCK_HELDOUT_NO_FETCH`` is set), or by the current Python when it has that
version. The generated records are cached as parquet next to it.

Kinds, blocking and seed were fixed before any system was run on these records.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import venv
from typing import Any

import heldout as ho
import pandas as pd

from erblock.blocking import composite, date, digits, prefix, soundex, token

VERSION = "1.3.1"
SEED = 1
KINDS = {"first_name": "name", "middle_initial": "exact", "last_name": "name",
         "date_of_birth": "date", "sex": "exact"}

#: the generated tables: file name -> pseudopeople call
TABLES = {
    "census": "generate_decennial_census(year=2020, seed={seed}, verbose=False)",
    "ssa": "generate_social_security(year=None, seed={seed}, verbose=False)",
    "census2030": "generate_decennial_census(year=2030, seed={seed}, verbose=False)",
    "w2": "generate_taxes_w2_and_1099(year=2020, seed={seed}, verbose=False)",
    "t1040": "generate_taxes_1040(year=2020, seed={seed}, verbose=False)",
    "wic": "generate_women_infants_and_children(year=None, seed={seed}, verbose=False)",
}
_SCRIPT = """
import sys
import pseudopeople as psp
out, name, call = sys.argv[1], sys.argv[2], sys.argv[3]
getattr(psp, call.split("(")[0])(**eval("dict(" + call.split("(", 1)[1])).to_parquet(
    f"{out}/{name}.parquet.part")
"""


def _python() -> str:
    """A Python with pseudopeople ``VERSION``: this one, or the cache's own venv."""
    try:
        if importlib.metadata.version("pseudopeople") == VERSION:
            return sys.executable
    except importlib.metadata.PackageNotFoundError:
        pass
    env = ho.cache_dir() / f"pseudopeople-{VERSION}-venv"
    py = env / "bin" / "python"
    ready = py.exists() and subprocess.run(
        [str(py), "-c", "import pseudopeople"], capture_output=True).returncode == 0
    if not ready:  # never made, or an install that failed half-way: (re)install
        if os.environ.get(ho.NO_FETCH_ENV):
            raise FileNotFoundError(f"pseudopeople {VERSION} is not installed and "
                                    f"{ho.NO_FETCH_ENV} is set")
        print(f"heldout: making {env} (pip install pseudopeople=={VERSION})", file=sys.stderr)
        venv.create(env, with_pip=True, clear=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        f"pseudopeople=={VERSION}"], check=True)
    return str(py)


def _generated(name: str, seed: int = SEED) -> pd.DataFrame:
    """The table ``name`` of :data:`TABLES` as pseudopeople writes it at ``seed`` (cached)."""
    out = ho.cache_dir() / f"pseudopeople-{VERSION}-seed{seed}"
    if not (out / f"{name}.parquet").exists():
        out.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([_python(), "-c", _SCRIPT, str(out), name,
                               TABLES[name].format(seed=seed)], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"pseudopeople could not generate {name!r}: "
                               f"{done.stderr.strip()[-2000:]}")
        (out / f"{name}.parquet.part").replace(out / f"{name}.parquet")  # whole, or none
    return pd.read_parquet(out / f"{name}.parquet")


#: the tax forms' mailing address as the census names its address columns
MAILING = {"mailing_address_street_number": "street_number",
           "mailing_address_street_name": "street_name"}


def _frame(df: pd.DataFrame, kinds: dict[str, str] = KINDS) -> pd.DataFrame:
    df = df.reset_index(drop=True)
    df.index = df.index.astype("int64")
    return ho._clean(df[list(kinds)].astype(object))


def _truth(left: pd.DataFrame, right: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame
           ) -> pd.DataFrame:
    return ho._link_truth(pd.Series(a["simulant_id"].to_numpy(), index=left.index),
                          pd.Series(b["simulant_id"].to_numpy(), index=right.index))


def _name_pass() -> Any:
    """Rule P's first pass: the surname's sound and the first name's initial."""
    return composite(soundex("last_name"), prefix("first_name", 1))


def _rule_p() -> list[Any]:
    """Rule P's blocking: the name pass, then the date of birth."""
    return [_name_pass(), date("date_of_birth")]


def load_pp_census_ssa(seed: int = SEED) -> ho.HeldOut:
    """pseudopeople: 2020 census x Social Security register (link, ~10,000 x ~24,000)."""
    census, ssa = _generated("census", seed), _generated("ssa", seed)
    ssa = ssa.assign(middle_initial=ssa["middle_name"].astype("string").str[:1])
    left, right = _frame(census), _frame(ssa)
    truth = _truth(left, right, census, ssa)
    return ho.HeldOut(
        "pp_census_ssa", "link", (left, right), truth, dict(KINDS), _rule_p(),
        f"pseudopeople=={VERSION}: generate_decennial_census(year=2020, seed={seed}) x "
        f"generate_social_security(year=None, seed={seed}), default noise",
        "Census dates MM/DD/YYYY, register YYYYMMDD; the register's middle name cut to its "
        "initial; a person has up to two register records (creation, death).")


ADDRESS_KINDS = {"first_name": "name", "middle_initial": "exact", "last_name": "name",
                 "date_of_birth": "date", "sex": "exact", "street_number": "exact",
                 "street_name": "text"}


def _census_address_link(name: str, other: str, seed: int, source: str, notes: str
                         ) -> ho.HeldOut:
    """The 2020 census linked to the table ``other`` on ADDRESS_KINDS, by rule P."""
    a, b = _generated("census", seed), _generated(other, seed)
    left, right = _frame(a, ADDRESS_KINDS), _frame(b, ADDRESS_KINDS)
    return ho.HeldOut(name, "link", (left, right), _truth(left, right, a, b),
                      dict(ADDRESS_KINDS), _rule_p(), source, notes)


def load_pp_census_decade(seed: int = SEED) -> ho.HeldOut:
    """pseudopeople: the 2020 census x the 2030 census (link, ~10,000 x ~11,000)."""
    return _census_address_link(
        "pp_census_decade", "census2030", seed,
        f"pseudopeople=={VERSION}: generate_decennial_census(year=2020 and 2030, "
        f"seed={seed}), default noise",
        "Ten years apart: people moved, married, died and were born; the sample town's "
        "city and zip code are one value (left out). Rule P: no postcode pass.")


def load_pp_census_wic(seed: int = SEED) -> ho.HeldOut:
    """pseudopeople: the 2020 census x WIC records of every year (link, ~10,000 x ~3,000)."""
    return _census_address_link(
        "pp_census_wic", "wic", seed,
        f"pseudopeople=={VERSION}: generate_decennial_census(year=2020) x "
        f"generate_women_infants_and_children(year=None), seed={seed}, default noise",
        "Mothers and young children, one record a year of participation; babies born "
        "after 2020 are in no census record (a quarter of the WIC records match). Siblings "
        "and twins share the surname, address and often the birth date. Rule P, as "
        "pp_census_decade.")


W2_KINDS = {"first_name": "name", "middle_initial": "exact", "last_name": "name",
            "street_number": "exact", "street_name": "text"}


def load_pp_census_w2(seed: int = SEED) -> ho.HeldOut:
    """pseudopeople: the 2020 census x 2020 W-2 and 1099 tax forms (no birth date)."""
    census, w2 = _generated("census", seed), _generated("w2", seed).rename(columns=MAILING)
    left, right = _frame(census, W2_KINDS), _frame(w2, W2_KINDS)
    blocking = [_name_pass(), composite("street_number", token("street_name", 0))]
    return ho.HeldOut(
        "pp_census_w2", "link", (left, right), _truth(left, right, census, w2),
        dict(W2_KINDS), blocking,
        f"pseudopeople=={VERSION}: generate_decennial_census(year=2020) x "
        f"generate_taxes_w2_and_1099(year=2020), seed={seed}, default noise",
        "No birth date on tax forms: names and the mailing address only, so the people of "
        "one household share the address and often the last name; a person has one form "
        "per employer. Blocking: rule P's name pass and, for the missing date and the "
        "one-value zip code, house number + first word of the street.")


TAX_KINDS = {"first_name": "name", "middle_initial": "exact", "last_name": "name",
             "ssn": "exact", "street_number": "exact", "street_name": "text"}


def load_pp_tax_1040_w2(seed: int = SEED) -> ho.HeldOut:
    """pseudopeople: 2020 1040 returns' primary filers x 2020 W-2 and 1099 forms (link)."""
    t1040 = _generated("t1040", seed).rename(columns=MAILING)
    w2 = _generated("w2", seed).rename(columns=MAILING)
    left, right = _frame(t1040, TAX_KINDS), _frame(w2, TAX_KINDS)
    blocking = [_name_pass(), composite("street_number", token("street_name", 0)),
                digits("ssn")]
    return ho.HeldOut(
        "pp_tax_1040_w2", "link", (left, right), _truth(left, right, t1040, w2),
        dict(TAX_KINDS), blocking,
        f"pseudopeople=={VERSION}: generate_taxes_1040(year=2020) x "
        f"generate_taxes_w2_and_1099(year=2020), seed={seed}, default noise",
        "Two tax registers: a return's primary filer and the forms of their employers "
        "(one form per employer, so a filer can have several). Blocking: rule P's name "
        "pass, house number + first word of the street (no birth date; the zip code is "
        "one value), and the SSN's digits, which both registers hold.")
