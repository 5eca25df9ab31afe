"""Checks of the user's inputs before any Dask work: frames, columns, key and comparison
dtypes, record ids. Each error names the argument, the column and the source (``df``,
``df_r``, ``df_s``) and says what was expected (:mod:`erblock.api` calls these)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .balancing.bdm import SRC_S
from .blocking.function import FunctionKey
from .blocking.ids import block_id_items
from .blocking.keys import KeySpec
from .blocking.neighbourhood import SortedNeighbourhood
from .engine.schema import PREFIX
from .errors import InputTypeError
from .matchers.comparisons import Comparison


def is_dask(df: Any) -> bool:
    import dask.dataframe as dd

    return isinstance(df, dd.DataFrame)


def check_frame(df: Any, name: str) -> None:
    if not isinstance(df, pd.DataFrame) and not is_dask(df):
        raise TypeError(f"{name} must be a pandas or Dask DataFrame, got {type(df).__name__}")
    dup = pd.Index(df.columns)[pd.Index(df.columns).duplicated()].unique().tolist()
    if dup:
        raise ValueError(
            f"{name}: column names must be unique, repeated: {dup[:10]}; rename them "
            "(e.g. df.columns = [...]) so each column can be named in key= and compare="
        )
    bad = [str(c) for c in df.columns if str(c).startswith(PREFIX)]
    if bad:
        raise ValueError(f"{name}: column names starting with {PREFIX!r} are reserved, "
                         f"got {bad}")


def dtype_of(df: Any, column: str) -> Any:
    return df._meta[column].dtype if is_dask(df) else df[column].dtype


def columns_of(df: Any) -> list[str]:
    return [str(c) for c in df.columns]


def require_column(df: Any, name: str, column: str, role: str) -> None:
    cols = columns_of(df)
    if column in cols:
        label = df.columns[cols.index(column)]
        if not isinstance(label, str):
            raise TypeError(
                f"{role} column {column!r} of {name} is labelled {label!r} "
                f"({type(label).__name__}), not a string; erblock names columns by text: "
                "rename them first, e.g. df.columns = df.columns.astype(str)")
        return
    close = difflib.get_close_matches(column, cols, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    if column in [str(n) for n in getattr(df.index, "names", ()) if n is not None]:
        hint = (f"; {column!r} is a level of a MultiIndex: make it a column "
                f"(df.reset_index({column!r})) or the index"
                if role == "id" else
                f"; {column!r} is the record id (the index): a key or comparison on it "
                "needs it as a column too (e.g. df[col] = df.index, or another --id)")
    more = "…" if len(cols) > 20 else ""
    raise KeyError(f"{role} column {column!r} is not in {name} (columns: {cols[:20]}{more}){hint}")



def check_keys(keys: Sequence[KeySpec], frames: Sequence[tuple[str, Any]]) -> None:
    for k in keys:
        for name, df in frames:
            for col in k.columns:
                require_column(df, name, col, "key")
            if isinstance(k, FunctionKey) and isinstance(df, pd.DataFrame) and len(df):
                # A key function that raises or returns the wrong shape fails here, on the
                # first records, with the same message it would give inside a worker.
                block_id_items(df.head(20), k)
        if isinstance(k, SortedNeighbourhood):
            k.check_types({name: dtype_of(df, c) for name, df in frames for c in k.columns})


def check_comparisons(comparisons: Sequence[Comparison],
                      frames: Sequence[tuple[str, Any]]) -> None:
    """Every compared column exists and its dtype suits the method, in every source (a
    column numeric in one source and text in the other: see ``Method.check_dtypes``)."""
    for c in comparisons:
        if len(frames) == 1 and c.right_column not in (None, c.column):
            raise ValueError(
                f"compare: {c.name!r} compares {c.column!r} with {c.right_column!r} "
                "(right_column), which is for a link (df_s's column); a dedupe compares a "
                "column with itself")
        cols = [c.right_column if src == SRC_S else c.column for src in range(len(frames))]
        for (name, df), col in zip(frames, cols):
            require_column(df, name, col, "compare")
            check_scalar(df, name, col)
        c.kernel.check_dtypes({name: (col, dtype_of(df, col), may_hold_numbers(df, col),
                                      holds_text(df, col))
                               for (name, df), col in zip(frames, cols)})


def check_scalar(df: Any, name: str, column: str) -> None:
    """A compared column holds one value per record: lists, arrays, dicts and structs are
    refused (their text form would be compared). Pandas object columns are judged by
    their first values, arrow dtypes by their type."""
    import pyarrow as pa

    dtype = dtype_of(df, column)
    nested = isinstance(dtype, pd.ArrowDtype) and pa.types.is_nested(dtype.pyarrow_dtype)
    if not nested and not is_dask(df) and pd.api.types.is_object_dtype(dtype):
        first = df[column].dropna().head(100)
        nested = any(isinstance(v, (list, tuple, dict, set, np.ndarray)) for v in first)
    if nested:
        raise InputTypeError(f"compare: column {column!r} of {name} holds lists or records, not "
                        "one value per record; compare a column of values (join or explode "
                        "them first; a list of keys can be a blocking key: erblock.items)")


def may_hold_numbers(df: Any, column: str) -> bool:
    """Whether a column can hold a number: not when a pandas column is all missing, nor
    for a float column of a Dask frame (its meta cannot tell an empty CSV column, which
    reads as float NaN, from numbers)."""
    if is_dask(df):
        return df._meta[column].dtype.kind != "f"
    return bool(df[column].notna().any())


def holds_text(df: Any, column: str) -> bool:
    """Whether a column holds text: a string dtype, a category of strings, or (pandas) an
    object column whose present values are all strings (a Dask object column's meta
    cannot tell)."""
    dtype = dtype_of(df, column)
    if isinstance(dtype, pd.CategoricalDtype):
        dtype = dtype.categories.dtype
        if pd.api.types.is_object_dtype(dtype) and not is_dask(df):
            return pd.api.types.infer_dtype(df[column].cat.categories) == "string"
    if not pd.api.types.is_object_dtype(dtype):
        return bool(pd.api.types.is_string_dtype(dtype))
    return (not is_dask(df) and df[column].notna().any()
            and pd.api.types.infer_dtype(df[column], skipna=True) == "string")


def id_columns(id: Any, link: bool) -> tuple[str | None, str | None]:
    """The id column of each input from ``id=``: None (the index), a column name for
    both, or for a link a pair ``(left, right)`` (either None: that input's index)."""
    pair = tuple(id) if isinstance(id, (tuple, list)) else (id, id)
    if isinstance(id, (tuple, list)) and (len(pair) != 2 or not link and pair[1] not in (
            None, pair[0])):
        raise ValueError(
            f"id: expected one column name, or for a link a pair (left, right), got {id!r}"
            if link else f"id: a dedupe has one input, so one id column name, got {id!r}")
    for col in pair:
        if col is not None and not isinstance(col, str):
            raise TypeError(f"id: the id column must be named by text (or None: the index), "
                            f"got {col!r} ({type(col).__name__}); rename the columns "
                            "first, e.g. df.columns = df.columns.astype(str)")
    return pair[0], pair[1]


def named_index_ids(ids: tuple[str | None, str | None], frames: Sequence[tuple[str, Any]]
                    ) -> tuple[str | None, str | None]:
    """``ids`` with a name that is an input's (one-level) index and none of its columns
    read as that input's index: a link whose id is a column in one input and the index
    in the other can name it once (``id="rid"``)."""
    out = list(ids)
    for src, (name, df) in enumerate(frames):
        col = out[src]
        index = df._meta.index if is_dask(df) else df.index
        if col is None or index.nlevels != 1 or index.name != col:
            continue
        if col not in columns_of(df):
            out[src] = None
        elif not is_dask(df) and not index.equals(pd.Index(df[col])):  # which is meant?
            raise ValueError(
                f"{name}: id={col!r} names both a column and the index, and they hold "
                f"different values; rename one (df.rename_axis(None) to keep the column as "
                f"the id, or df.drop(columns={col!r}) to keep the index)")
    return out[0], out[1]


def check_ids(df: Any, name: str, id_column: str | None) -> bool:
    """Check id uniqueness now for pandas; return True when the profile must check (Dask)."""
    if id_column is not None:
        require_column(df, name, id_column, "id")
    if is_dask(df):
        return True
    if id_column is None and isinstance(df.index, pd.MultiIndex):
        raise ValueError(
            f"{name}: the index is a MultiIndex, but erblock needs one id per record: "
            "df.index = df.index.to_flat_index() (tuples as ids), or reset_index() and "
            "pass id='<a unique column>'")
    ids = df[id_column] if id_column else df.index
    if not ids.is_unique:
        dup = pd.Index(ids)[pd.Index(ids).duplicated()][:3].tolist()
        what = f"id column {id_column!r}" if id_column else "index"
        fix = ("pass id= a column whose values are unique, or drop id= to use the index"
               if id_column else "use df.reset_index(drop=True) or pass id='<a unique column>'")
        raise ValueError(f"{name}: the {what} has repeated labels (e.g. {dup}); erblock "
                         f"reports pairs by record id, so each record needs its own: {fix}")
    if ids.hasnans:
        raise ValueError(f"{name}: record ids must not be missing")
    return False


def check_writable_ids(df: Any, name: str, id_column: str | None) -> None:
    """With ``output=``: the ids of a pandas frame must convert to one parquet column (a
    Dask frame's are met by the writers)."""
    if is_dask(df):
        return
    import pyarrow as pa

    ids = df[id_column] if id_column else df.index
    try:
        pa.array(ids, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        what = f"column {id_column!r}" if id_column else "index"
        raise ValueError(
            f"{name}: the record ids (its {what}) cannot be written to parquet (output=): "
            f"{e}. Give them one type, e.g. df.index = df.index.astype(str)") from None
