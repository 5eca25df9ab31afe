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
"""

from __future__ import annotations

import math
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
        return str(int(f)) if f.is_integer() and abs(f) < 2.0**53 else repr(f)
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
    raise ValueError(f"the oracle has no key computation for kind {kind!r}")


def _values(df: pd.DataFrame, d: dict[str, Any]) -> list[Value]:
    """The key of every record, in order, from the spec's dict form."""
    if d["kind"] == "composite":
        parts = [_values(df, p) for p in d["parts"]]
        return [None if any(v is None or v == "" for v in vals) else vals
                for vals in zip(*parts)]
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
        return pd.Series([None if v == "" else v for v in vals], index=df.index,
                         dtype=object)
    elif isinstance(key, KeySpec):
        if key.kind == "function":  # a user function: its values as given
            func: Any = key.func  # type: ignore[attr-defined]
            return key_values(df, func)
        key = key.to_dict()
    vals = _values(df, key)
    return pd.Series([None if v is None or v == "" else v for v in vals], index=df.index,
                     dtype=object)


def _keys(df: pd.DataFrame, key: Any) -> np.ndarray:
    """Key values as hashable text (object array; None = not blocked), any frame size."""
    return np.array([None if v is None else repr(v) for v in key_values(df, key)],
                    dtype=object)


def brute_dedupe(df: pd.DataFrame, keys: list) -> set[tuple]:
    """Unordered pairs (earlier id, later id in input order) agreeing on any key."""
    pos = pd.Series(range(len(df)), index=df.index)
    out: set[tuple] = set()
    for key in keys:
        k = pd.DataFrame({"id": df.index, "pos": pos.to_numpy(), "k": _keys(df, key)})
        k = k.dropna(subset=["k"])
        m = k.merge(k, on="k")
        m = m[m["pos_x"] < m["pos_y"]]
        out |= set(zip(m["id_x"], m["id_y"]))
    return out


def brute_link(df_r: pd.DataFrame, df_s: pd.DataFrame, keys: list) -> set[tuple]:
    out: set[tuple] = set()
    for key in keys:
        a = pd.DataFrame({"id": df_r.index, "k": _keys(df_r, key)}).dropna(subset=["k"])
        b = pd.DataFrame({"id": df_s.index, "k": _keys(df_s, key)}).dropna(subset=["k"])
        m = a.merge(b, on="k")
        out |= set(zip(m["id_x"], m["id_y"]))
    return out


def pair_list(pairs: pd.DataFrame) -> list[tuple]:
    return list(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist()))
