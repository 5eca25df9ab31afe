"""Block ids: a 64-bit hash of every record's key string (``NULL_BLOCK`` when missing).

Equal keys give equal ids in every partition and in both sources without a global
factorisation pass. Two different keys collide with probability about
``n_keys**2 / 2**65`` (3e-6 for ten million distinct keys).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from .keys import NULL_BLOCK, KeySpec
from .text import arrow_text, blank_arrow, empty_arrow


def hash_keys(values: pd.Series, whole: bool = True) -> np.ndarray:
    """int64 block id per record: a 64-bit hash of the key string, NULL_BLOCK if missing,
    empty or (``whole``: a record's one key) white space only. An element of a
    multi-valued key is missing only when empty: a q-gram may be a space."""
    arr = arrow_text(values)
    missing = blank_arrow(arr) if whole else empty_arrow(arr)
    # the hash of the strings as pandas hashes a string column (hash_pandas_object), of
    # each distinct string once (a string's hash does not depend on the others)
    enc = pc.dictionary_encode(arr.fill_null(""))
    text = np.asarray(enc.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    codes = enc.indices.to_numpy(zero_copy_only=False)
    ids = pd.util.hash_array(text, categorize=False).view(np.int64)[codes]
    ids[ids == NULL_BLOCK] = NULL_BLOCK + 1  # keep the sentinel free for missing keys
    ids[missing] = NULL_BLOCK
    return ids


def block_ids(df: pd.DataFrame, key: KeySpec) -> np.ndarray:
    """Block id per record of ``df`` for one key pass."""
    if key.multi:
        raise TypeError(f"{key!r} gives several blocks per record: use block_id_items")
    if len(df) == 0:
        return np.empty(0, dtype=np.int64)
    return hash_keys(key.values(df))


def block_id_items(df: pd.DataFrame, key: KeySpec) -> tuple[np.ndarray, np.ndarray]:
    """Every block of every record of ``df`` for one key pass: (row position, block id),
    sorted by position then id, each (record, block) once, missing keys left out.

    Keys given as int64 (MinHash bands) are block ids already; text keys are hashed.
    """
    if len(df) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    pos, vals = key.items(df)
    if key.multi and pd.api.types.is_integer_dtype(vals.dtype):
        ids = vals.to_numpy(np.int64).copy()
        ids[ids == NULL_BLOCK] = NULL_BLOCK + 1
    else:
        ids = hash_keys(vals, whole=not key.multi)
    pos = np.asarray(pos, dtype=np.int64)
    keep = ids != NULL_BLOCK
    pos, ids = pos[keep], ids[keep]
    if not key.multi or len(pos) == 0:
        return pos, ids
    order = np.lexsort((ids, pos))
    pos, ids = pos[order], ids[order]
    first = np.r_[True, (pos[1:] != pos[:-1]) | (ids[1:] != ids[:-1])]
    return pos[first], ids[first]
