"""A slow, obviously correct reference: the pairs blocking implies, by pandas merge.

Independent of the engine: it uses only the key specs' ``values`` (what the key *is*)
and plain pandas joins on the key strings, never block ids, plans or routing.
"""

from __future__ import annotations

import pandas as pd

from erblock.blocking.keys import as_key_spec


def _keys(df: pd.DataFrame, key) -> pd.Series:
    spec = as_key_spec(key)
    vals = spec.values(df).astype(object)
    vals[vals.isna() | (vals.astype(str) == "")] = None
    return vals


def brute_dedupe(df: pd.DataFrame, keys: list) -> set[tuple]:
    """Unordered pairs (earlier id, later id in input order) agreeing on any key."""
    pos = pd.Series(range(len(df)), index=df.index)
    out: set[tuple] = set()
    for key in keys:
        k = pd.DataFrame({"id": df.index, "pos": pos.to_numpy(), "k": _keys(df, key).to_numpy()})
        k = k.dropna(subset=["k"])
        m = k.merge(k, on="k")
        m = m[m["pos_x"] < m["pos_y"]]
        out |= set(zip(m["id_x"], m["id_y"]))
    return out


def brute_link(df_r: pd.DataFrame, df_s: pd.DataFrame, keys: list) -> set[tuple]:
    out: set[tuple] = set()
    for key in keys:
        a = pd.DataFrame({"id": df_r.index, "k": _keys(df_r, key).to_numpy()}).dropna(subset=["k"])
        b = pd.DataFrame({"id": df_s.index, "k": _keys(df_s, key).to_numpy()}).dropna(subset=["k"])
        m = a.merge(b, on="k")
        out |= set(zip(m["id_x"], m["id_y"]))
    return out


def pair_list(pairs: pd.DataFrame) -> list[tuple]:
    return list(zip(pairs["left_id"].tolist(), pairs["right_id"].tolist()))
