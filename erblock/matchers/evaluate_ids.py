"""The ids of the frames :mod:`erblock.matchers.evaluate` compares: checked, then keyed.

Every pair of every frame (predicted pairs, truth, candidates) becomes one int64 key,
equal keys for the same pair (:func:`pair_codes`). The ids of all frames are factorised
together, matched by value and never sorted, so they may be of any hashable type. A
missing id is refused first (:func:`check_frames`): ``pd.factorize`` codes it -1, and
``-1 * n + code`` is another pair's key. The input sizes of the reduction ratio are
checked against the ids the candidates name (:func:`check_sizes_hold`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..scalars import is_int, is_number
from .assignment import IDS, check_frame, check_ids_present
from .clustering import joined_ids

__all__ = ["check_columns", "check_frames", "check_id_types", "check_size", "check_sizes_hold",
           "ids_in_common", "pair_codes", "self_pairs"]


def check_columns(f: Any, name: str) -> None:
    """Raise unless ``f`` is a frame with ``left_id`` and ``right_id``."""
    check_frame(f, name)
    missing = set(IDS) - set(f.columns)
    if missing:
        raise ValueError(f"{name}: missing column(s) {sorted(missing)}; got {list(f.columns)}")


def check_frames(frames: dict[str, pd.DataFrame | None], who: str) -> None:
    """Refuse a row without ``left_id`` or ``right_id`` in any of ``frames`` (by name)."""
    for name, f in frames.items():
        if f is not None:
            check_ids_present(f, who, name)


def check_size(n: Any, name: str) -> int | None:
    """``n_left`` / ``n_right``: None or a count of records (as an int)."""
    if n is None:
        return None
    if not (is_int(n) or (is_number(n) and float(n).is_integer())):  # 1e4 is a count too
        raise TypeError(f"{name} must be the number of input records (an int), got {n!r} "
                        f"({type(n).__name__})")
    if n < 0:
        raise ValueError(f"{name} must be the number of input records (>= 0), got {n}")
    return int(n)


def check_sizes_hold(cand: pd.DataFrame, dedupe: bool, n_left: int | None,
                     n_right: int | None) -> None:
    """Refuse input sizes below the records the candidate pairs name (the reduction
    ratio would be below 0)."""
    if n_left is None:
        return
    seen: list[tuple[str, int, int | None, str, str]]
    if dedupe:
        seen = [("n_left", joined_ids([cand["left_id"], cand["right_id"]]).nunique(),
                 n_left, "the candidate pairs hold", "the input")]
    else:
        seen = [("n_left", cand["left_id"].nunique(), n_left, "left_id of the candidate "
                 "pairs holds", "df_r"),
                ("n_right", cand["right_id"].nunique(), n_right, "right_id of the "
                 "candidate pairs holds", "df_s")]
    for name, ids, n, where, source in seen:
        if n is not None and ids > n:
            raise ValueError(f"{name}={n} is fewer records than the {ids:,} distinct ids "
                             f"{where}; give the number of records of {source} (len(df))")


def pair_codes(frames: list[pd.DataFrame], dedupe: bool, names: list[str]) -> list[np.ndarray]:
    """One int64 key per row of each frame; equal keys = the same pair.

    Ids of all frames are factorised together (so ``3`` in one frame is ``3`` in the
    other), and for dedupe the two codes of a pair are put in (min, max) order. The
    frames hold no missing id (:func:`check_frames`).
    """
    for f, name in zip(frames, names):
        check_columns(f, name)
    if dedupe:  # one id space
        codes, uniq = pd.factorize(joined_ids([f[c] for f in frames for c in IDS]))
        k = len(uniq)
        out, start = [], 0
        for f in frames:
            n = len(f)
            a, b = codes[start : start + n], codes[start + n : start + 2 * n]
            start += 2 * n
            out.append(np.minimum(a, b).astype(np.int64) * k + np.maximum(a, b))
        return out
    lcodes, _ = pd.factorize(joined_ids([f["left_id"] for f in frames]))
    rcodes, ru = pd.factorize(joined_ids([f["right_id"] for f in frames]))
    out, start = [], 0
    for n in (len(f) for f in frames):
        out.append(lcodes[start:start + n].astype(np.int64) * len(ru) + rcodes[start:start + n])
        start += n
    return out


def self_pairs(truth: pd.DataFrame) -> np.ndarray:
    """Rows of a dedupe's truth that pair a record with itself, ids compared exactly (not
    after numpy's promotion of int64 and float ids to float64)."""
    codes, _ = pd.factorize(joined_ids([truth["left_id"], truth["right_id"]]))
    return codes[:len(truth)] == codes[len(truth):]


def check_id_types(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]) -> None:
    """Warn when ids cannot match because one side is numbers and the other text."""
    if a.empty or b.empty:  # an empty frame's columns are objects by default
        return
    for col in IDS:  # floats too: a CSV column with a blank cell reads 47 as 47.0
        kinds = {"num" if pd.api.types.is_numeric_dtype(f[col])
                 and not pd.api.types.is_bool_dtype(f[col]) else
                 "str" if pd.api.types.is_string_dtype(f[col]) else "other" for f in (a, b)}
        if kinds == {"num", "str"}:
            warnings.warn(
                f"{col}: {names[0]} has {a[col].dtype} ids and {names[1]} has "
                f"{b[col].dtype} ids; ids are compared by value, so 1 (or 1.0) never "
                "equals '1'. Convert one side, e.g. truth.astype({'" + col + "': "
                "'int64'}), or pairs.astype({'" + col + "': str}).",
                UserWarning, stacklevel=3)


def ids_in_common(pairs: pd.DataFrame, truth: pd.DataFrame) -> int:
    """How many ids of the true pairs occur among the pairs' ids (0: the two use
    different ids, e.g. row numbers against a register's ids)."""
    codes, _ = pd.factorize(joined_ids([truth[c] for c in IDS] + [pairs[c] for c in IDS]))
    return int(np.isin(codes[:2 * len(truth)], codes[2 * len(truth):]).sum())
