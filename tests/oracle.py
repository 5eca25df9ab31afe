"""A slow, obviously correct reference: the pairs blocking implies, by pandas merge.

Independent of the engine *and of erblock's key code*: every key value is computed here
from the key's declared parameters (its ``to_dict()``), value by value in plain Python
and jellyfish, following the documented meaning of each kind, and pairs come from plain
pandas joins on those values, never from block ids, plans or routing. So a key that
means something other than its documentation says fails the brute-force comparisons.

Documented meaning (``erblock.blocking``): ``column`` is the raw value, numbers written
canonically (``1``, ``1.0`` and ``"1"`` meet; ``1.5`` stays ``1.5``); ``lower`` is the
normalised text (NFKD accents dropped, lower case, white space collapsed); ``prefix`` the
first n characters (of the normalised text unless ``normalize=False``); ``token`` the
i-th word of the normalised text (none when there are fewer words); ``phonetic`` the
jellyfish code of the normalised text; ``composite`` all parts at once (none when a part
is missing or empty). A missing or empty key blocks nothing.

Multi-valued kinds give a record a *set* of keys, and a pair is a candidate when the sets
meet: ``tokens`` the runs of letters and digits of the normalised text (at least
``min_length`` long), ``qgrams`` its q-character substrings (a text of at most q characters
is its own gram), ``items`` the elements of a list (a scalar is a list of one),
``minhash`` one key per band: the band's minima over the shingles of
``splitmix64(hash(shingle) XOR seed_i)``, written here in plain Python integers.
``sorted_neighbourhood`` is the sequential method: records sorted by the key's text (a raw
numeric column: by number)
(then source, then input order), every pair less than ``window`` apart (link: across
the sources only).
"""

from __future__ import annotations

import datetime
import itertools
import math
import re
import unicodedata
from collections.abc import Callable
from typing import Any

import jellyfish
import numpy as np
import pandas as pd

from erblock.blocking.keys import KeySpec

Value = Any  # a key value: str, a tuple of str (composite), or None


def canonical(v: Any) -> str | None:
    """One raw value as key text: None when missing, integral numbers without ``.0``."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (float, np.floating)) and math.isnan(float(v)):
        return None
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(v)


def normalised(text: str | None) -> str | None:
    if text is None:
        return None
    folded = "".join(c for c in unicodedata.normalize("NFKD", text)
                     if not unicodedata.combining(c))
    return " ".join(folded.lower().split())


def _word(text: str | None, i: int) -> str | None:
    if text is None:
        return None
    words = text.split()
    return words[i] if -len(words) <= i < len(words) else None


def _one(d: dict[str, Any]) -> Callable[[Any], Value]:
    """The key of one raw value of a single-column kind (from the spec's dict form)."""
    kind = d["kind"]
    if kind == "column":
        return canonical
    if kind == "lower":
        return lambda v: normalised(canonical(v))
    if kind == "prefix":
        norm, n = d.get("normalize", True), d["n"]

        def first(v: Any) -> Value:
            t = canonical(v)
            t = normalised(t) if norm else t
            return None if t is None else t[:n]
        return first
    if kind == "token":
        return lambda v: _word(normalised(canonical(v)), d.get("i", 0))
    if kind == "phonetic":
        encode = getattr(jellyfish, d["algorithm"])

        def code(v: Any) -> Value:
            t = normalised(canonical(v))
            return None if t is None else (encode(t) if t.strip() else "")
        return code
    if kind == "date":
        return _date_of(d.get("part", "day"), d.get("format"))
    if kind == "digits":
        last = d.get("last")

        def only_digits(v: Any) -> Value:
            t = canonical(v)
            t = None if t is None else "".join(  # a digit of any script, as 0-9
                str(unicodedata.decimal(ch)) for ch in t if unicodedata.decimal(ch, None)
                is not None)
            t = t if not t or last is None else t[-last:]
            return t or None
        return only_digits
    raise ValueError(f"the oracle has no key computation for kind {kind!r}")


#: the writings the oracle reads, in erblock's order for the values the tests hold
_DATE_WRITINGS = ("%Y-%m-%d", "%Y%m%d", "%m/%d/%Y", "%d/%m/%Y")


def _date_of(part: str, fmt: str | None) -> Callable[[Any], Value]:
    """A date key by ``datetime.strptime``, one value at a time: ``fmt`` first, then
    :data:`_DATE_WRITINGS` but those with the day and month in the other order than
    ``fmt``'s; a datetime is its date; unread: no key."""
    width = {"day": 10, "month": 7, "year": 4}[part]
    writings = _DATE_WRITINGS
    if fmt and "%d" in fmt and "%m" in fmt:
        other = "%m/%d/%Y" if fmt.index("%d") < fmt.index("%m") else "%d/%m/%Y"
        writings = tuple(w for w in writings if w != other)

    def read(v: Any) -> Value:
        if isinstance(v, (datetime.date, np.datetime64)) and not pd.isna(v):
            return pd.Timestamp(v).date().isoformat()[:width]
        if not isinstance(v, str):
            return None
        for f in ((fmt,) if fmt else ()) + writings:
            try:
                return datetime.datetime.strptime(v.strip(), f).date().isoformat()[:width]
            except ValueError:
                continue
        return None
    return read


MULTI = ("tokens", "qgrams", "items", "minhash")
_MASK = (1 << 64) - 1


def _mix(z: int) -> int:
    """splitmix64's finaliser in Python integers."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _grams(text: str, q: int) -> set[str]:
    if len(text) <= q:
        return {text} if text.strip() else set()
    return {text[i:i + q] for i in range(len(text) - q + 1)}


def _words(text: str, min_length: int = 1) -> set[str]:
    return {w for w in re.findall(r"[^\W_]+", text) if len(w) >= min_length}


def _many(d: dict[str, Any]) -> Callable[[Any], frozenset]:
    """The key set of one raw value of a multi-valued kind."""
    kind = d["kind"]
    if kind == "tokens":
        return lambda v: frozenset(_words(normalised(canonical(v)) or "", d.get("min_length", 1)))
    if kind == "qgrams":
        return lambda v: frozenset(_grams(normalised(canonical(v)) or "", d.get("q", 3)))
    if kind == "items":
        def elements(v: Any) -> frozenset:
            vals = list(v) if isinstance(v, (list, tuple, set, np.ndarray)) else [v]
            return frozenset(c for c in map(canonical, vals) if c)
        return elements
    if kind == "minhash":
        from erblock.blocking.minhash import MinHash
        spec = MinHash(**{k: v for k, v in d.items() if k != "kind"})
        b, r = spec.shape  # bands and rows for the threshold: the key's declared shape
        seeds = [int(x) for x in np.random.default_rng(d["seed"]).integers(
            0, 2**64, size=b * r, dtype=np.uint64)]

        def bands(v: Any) -> frozenset:
            text = normalised(canonical(v)) or ""
            sh = _words(text) if d.get("q") is None else _grams(text, d["q"])
            if not sh:
                return frozenset()
            hashes = [int(pd.util.hash_array(np.array([x], dtype=object))[0]) for x in sh]
            mins = [min(_mix(x ^ s) for x in hashes) for s in seeds]
            return frozenset((j, tuple(mins[j * r:(j + 1) * r])) for j in range(b))
        return bands
    raise ValueError(f"the oracle has no key computation for kind {kind!r}")


def _is_multi(d: dict[str, Any]) -> bool:
    return d["kind"] in MULTI or any(_is_multi(p) for p in d.get("parts", []))


def _values(df: pd.DataFrame, d: dict[str, Any]) -> list[Value]:
    """The key of every record, in order, from the spec's dict form (a frozenset of keys
    for multi-valued kinds and composites with a multi-valued part)."""
    if d["kind"] == "composite":
        parts = [_values(df, p) for p in d["parts"]]
        if _is_multi(d):
            sets = [[v if isinstance(v, frozenset) else
                     (frozenset() if _blank(v) else frozenset([v])) for v in vals]
                    for vals in parts]
            return [frozenset(itertools.product(*rec)) for rec in zip(*sets)]
        return [None if any(_blank(v) for v in vals) else vals
                for vals in zip(*parts)]
    if d["kind"] in MULTI:
        f = _many(d)
        return [f(v) for v in df[d["column"]].tolist()]
    f = _one(d)
    return [f(v) for v in df[d["column"]].tolist()]


def key_values(df: pd.DataFrame, key: Any) -> pd.Series:
    """The key of every record of ``df`` (object Series; None = not blocked).

    ``key``: a column name, a tuple (composite), a key spec, or a callable (a user
    function: the oracle takes its values as given, written canonically)."""
    if isinstance(key, str):
        key = {"kind": "column", "column": key}
    elif isinstance(key, tuple):
        key = {"kind": "composite",
               "parts": [{"kind": "column", "column": k} if isinstance(k, str)
                         else k.to_dict() for k in key]}
    elif callable(key) and not isinstance(key, KeySpec):
        vals = [canonical(v) for v in np.asarray(key(df), dtype=object)]
        return pd.Series([None if _blank(v) else v for v in vals], index=df.index,
                         dtype=object)
    elif isinstance(key, KeySpec):
        if key.kind == "function":  # a user function: its values as given
            func: Any = key.func  # type: ignore[attr-defined]
            if key.multi:  # lists as given: each element a key
                each = _many({"kind": "items"})
                return pd.Series([each(v) for v in np.asarray(func(df), dtype=object)],
                                 index=df.index, dtype=object)
            return key_values(df, func)
        key = key.to_dict()
    vals = _values(df, key)
    return pd.Series([None if _blank(v) else v for v in vals], index=df.index,
                     dtype=object)


def _keys(df: pd.DataFrame, key: Any) -> pd.DataFrame:
    """Every (record position, key as hashable text) of ``df``; records without keys have
    no row. A single-valued key gives a record one row, a multi-valued one a row per key."""
    rows = []
    for pos, v in enumerate(key_values(df, key)):
        for k in (v if isinstance(v, frozenset) else [v]):
            if k is not None:
                rows.append((pos, repr(k)))
    return pd.DataFrame(rows, columns=["pos", "k"]).astype({"pos": np.int64, "k": object})


key_rows = _keys  # public: the (position, key) rows of one key


def _blank(v: Any) -> bool:
    """No key: missing, empty or only white space."""
    return v is None or (isinstance(v, str) and not v.strip())


def _escaped(part: str) -> str:
    """A composite part as its key text writes it: the separator escaped."""
    return part.replace("\x1e", "\x1e\x1e").replace("\x1f", "\x1e\x1f")


def _sort_text(v: Any) -> str | None:
    if v is None:
        return None
    return "\x1f".join(map(_escaped, v)) if isinstance(v, tuple) else str(v)


def _window(frames: list[pd.DataFrame], key: KeySpec) -> set[tuple]:
    """The sequential sorted neighbourhood: records of every frame ordered by the key's
    text, then frame, then input order; every pair less than ``window`` apart, as
    (frame, position) pairs, earlier first (for several frames, only pairs across them)."""
    d = key.to_dict()
    rows: list[tuple[Any, int, int]] = []
    for src, df in enumerate(frames):
        col = d["key"].get("column") if d["key"]["kind"] == "column" else None
        if col is not None and df[col].dtype.kind in "iuf":  # a raw numeric column:
            for pos, x in enumerate(df[col].tolist()):  # ordered by number
                if x is not None and x == x:
                    rows.append((float(x), src, pos))
            continue
        for pos, v in enumerate(key_values(df, _from_dict(d["key"]))):
            t = _sort_text(v)
            if t and not _blank(t):
                rows.append((t, src, pos))
    rows.sort()
    w = d["window"]
    out = set()
    for i in range(len(rows)):
        for j in range(i + 1, min(i + w, len(rows))):
            a, b = rows[i][1:], rows[j][1:]
            if len(frames) == 1 or a[0] != b[0]:
                out.add((a, b) if a < b else (b, a))
    return out


def _from_dict(d: dict[str, Any]) -> Any:
    from erblock.blocking import key_from_dict
    return key_from_dict(d)


def brute_dedupe(df: pd.DataFrame, keys: list) -> set[tuple]:
    """Unordered pairs (earlier id, later id in input order) agreeing on any key."""
    out: set[tuple] = set()
    ids = np.asarray(df.index, dtype=object)
    for key in keys:
        if isinstance(key, KeySpec) and key.kind == "sorted_neighbourhood":
            out |= {(ids[a[1]], ids[b[1]]) for a, b in _window([df], key)}
            continue
        k = _keys(df, key)
        m = k.merge(k, on="k")
        m = m[m["pos_x"] < m["pos_y"]]
        out |= set(zip(ids[m["pos_x"].to_numpy()], ids[m["pos_y"].to_numpy()]))
    return out


def brute_link(df_r: pd.DataFrame, df_s: pd.DataFrame, keys: list) -> set[tuple]:
    out: set[tuple] = set()
    rid, sid = np.asarray(df_r.index, dtype=object), np.asarray(df_s.index, dtype=object)
    for key in keys:
        if isinstance(key, KeySpec) and key.kind == "sorted_neighbourhood":
            out |= {(rid[a[1]], sid[b[1]]) for a, b in _window([df_r, df_s], key)}
            continue
        m = _keys(df_r, key).merge(_keys(df_s, key), on="k")
        out |= set(zip(rid[m["pos_x"].to_numpy()], sid[m["pos_y"].to_numpy()]))
    return out


def pair_list(pairs: pd.DataFrame) -> list[tuple]:
    return list(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist()))
