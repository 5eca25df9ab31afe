"""Key text: values written the same way in every source and partition, and normalised.

Blocking compares key *strings*: a key ``1987`` in one source and ``1987.0`` in the other
must meet, and ``"Müller "`` must meet ``"muller"`` under a normalising key. These helpers
work once per distinct value (factorise, transform the uniques, map back), never per
record in Python.
"""

from __future__ import annotations

import datetime as _dt
import unicodedata
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputTypeError

__all__ = ["arrow_text", "as_key_strings", "blank", "blank_arrow", "distinct_list", "empty",
           "empty_arrow", "explode_flat", "explode_uniques", "explode_values",
           "factorize_text", "fold_text", "fold_texts", "has_nested", "normalise_text",
           "normalised_objects", "plain_ascii", "rebuild", "separable", "separable_arrow"]


def _folded_distinct(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each distinct non-missing value folded (:func:`fold_texts`), and every record's
    code (−1: missing)."""
    uniques, codes = factorize_text(values.astype("string"))
    return fold_texts(uniques), codes


def normalise_text(values: pd.Series) -> pd.Series:
    """Lower-case, strip accents and collapse white space (missing values stay missing)."""
    folded, codes = _folded_distinct(values)
    return rebuild(folded, codes, values.index)


def normalised_objects(values: pd.Series) -> np.ndarray:
    """:func:`normalise_text` of key strings as an object array, "" where missing: what a
    comparison prepares, without a round trip through pandas' string dtype."""
    folded, codes = _folded_distinct(values)
    out = np.empty(len(folded) + 1, dtype=object)
    out[:-1] = folded
    out[-1] = ""
    return out[codes]


def fold_text(text: str) -> str:
    """One value as :func:`normalise_text` writes it (lower case, no accents, single
    spaces): for code that factorises once and works per distinct value."""
    if not text.isascii():  # NFKD leaves ASCII as it is, with no combining marks to drop
        decomposed = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(text.lower().split())


#: white space as ``str.split`` reads it in ASCII text, except the four separators
#: (\x1c-\x1f) that Arrow's ASCII kernels do not count as space: texts with those go
#: through :func:`fold_text`
_ASCII_SPACE = "[\t\n\x0b\x0c\r ]+"
_PY_ONLY_SPACE = "[\x1c-\x1f]"


def plain_ascii(arr: pa.Array) -> np.ndarray:
    """Per Arrow string: whether Arrow's ASCII kernels read it as Python does (ASCII, none
    of the separators ``\\x1c``-``\\x1f`` that ``str.split`` counts as space); False where
    null."""
    if not len(arr):
        return np.zeros(0, dtype=bool)
    plain = pc.and_(pc.string_is_ascii(arr),
                    pc.invert(pc.match_substring_regex(arr, _PY_ONLY_SPACE)))
    return np.asarray(plain.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def fold_texts(texts: Sequence[str]) -> np.ndarray:
    """:func:`fold_text` of many texts, as an object array: ASCII ones with Arrow kernels
    (lower case, runs of white space as one space, none at the ends), others one by one."""
    out = np.empty(len(texts), dtype=object)
    if not len(texts):
        return out
    arr = pa.array(texts, type=pa.large_string())
    plain_np = plain_ascii(arr)
    plain = pa.array(plain_np)
    folded = pc.ascii_trim_whitespace(pc.replace_substring_regex(
        pc.ascii_lower(arr.filter(plain)), _ASCII_SPACE, " "))
    out[plain_np] = folded.to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(~plain_np).tolist():
        out[i] = fold_text(texts[i])
    return out


def factorize_text(s: pd.Series) -> tuple[list[str], np.ndarray]:
    """Distinct non-missing values (as str) and the code of every record (−1: missing)."""
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    return [str(u) for u in distinct_list(uniques)], codes


def distinct_list(uniques: Any) -> list[Any]:
    """``pd.factorize``'s uniques as a list (an Index read value by value costs ~1 µs a
    value; its array's ``tolist`` a tenth of that)."""
    return np.asarray(uniques, dtype=object).tolist()


def rebuild(values: Sequence[Any] | np.ndarray, codes: np.ndarray, index: pd.Index) -> pd.Series:
    """Map per-unique results back to records; code -1 (missing) stays missing."""
    arr = np.empty(len(values) + 1, dtype=object)
    arr[:-1] = values
    arr[-1] = None
    return pd.Series(arr[codes], index=index, dtype="string")


#: every character ``str.isspace`` counts as white space (a test checks the list against
#: all of Unicode)
PY_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
                 + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000")


def arrow_text(values: pd.Series) -> pa.Array:
    """``values`` as Arrow large strings (missing values null)."""
    arr = pa.array(values.astype("string").array)
    if arr.type != pa.large_string():  # before combining: 32-bit offsets end at 2 GiB
        arr = arr.cast(pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_string())
    return arr


def empty_arrow(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per Arrow string: whether it is null or has no characters."""
    if not len(arr):
        return np.zeros(0, dtype=bool)
    got = pc.fill_null(pc.equal(pc.utf8_length(arr), 0), True)
    return np.asarray(got.to_numpy(zero_copy_only=False), dtype=bool)


def blank_arrow(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per Arrow string: whether it is null, empty or only white space (as ``str.isspace``
    reads it: those characters trimmed, nothing is left)."""
    return empty_arrow(pc.utf8_trim(arr, characters=PY_WHITESPACE) if len(arr) else arr)


def empty(values: pd.Series) -> np.ndarray:
    """Which key strings are NA or empty: no key (an element of a multi-valued key, a
    q-gram, may be a space)."""
    return empty_arrow(arrow_text(values))


def blank(values: pd.Series) -> np.ndarray:
    """Which key strings are missing as a record's one key: NA, empty or only white space
    (a blank cell of a CSV is no key; as a key it would put every blank record in one
    block)."""
    return blank_arrow(arrow_text(values))


SEPARATOR = "\x1f"  #: joins the parts of a composite key
_ESCAPE = "\x1e"


def separable(values: pd.Series) -> pd.Series:
    """Key text that joins unambiguously with :data:`SEPARATOR`: a ``\\x1e`` or
    ``\\x1f`` inside a value is escaped (``\\x1e\\x1e``, ``\\x1e\\x1f``), so two
    different tuples of parts never give one joined key; other text, nearly all of it, is
    unchanged (so the rule is the same in every partition)."""
    t = values.astype("string")
    mask = _separators(arrow_text(t))
    if not mask.any():
        return t
    t = t.copy()
    t[mask] = (t[mask].str.replace(_ESCAPE, _ESCAPE * 2, regex=False)
               .str.replace(SEPARATOR, _ESCAPE + SEPARATOR, regex=False))
    return t


def _separators(arr: pa.Array) -> np.ndarray:
    """Which values hold a separator or the escape character."""
    if not len(arr):
        return np.zeros(0, dtype=bool)
    data = arr.buffers()[2]  # UTF-8 bytes: neither character is part of another's bytes
    if data is None or not np.isin(np.frombuffer(data, dtype=np.uint8), (0x1E, 0x1F)).any():
        return np.zeros(len(arr), dtype=bool)
    found = pc.fill_null(pc.match_substring_regex(arr, f"[{_ESCAPE}{SEPARATOR}]"), False)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def separable_arrow(arr: pa.Array) -> pa.Array:
    """:func:`separable` of Arrow large strings (the rare values to escape go through
    pandas)."""
    mask = _separators(arr)
    if not mask.any():
        return arr
    return arrow_text(separable(pd.Series(arr.to_pandas(), dtype="string")))


def as_key_strings(values: pd.Series) -> pd.Series:
    """Key values as strings, with numbers and times written the same way in every source.

    Integral floats (a column that became float because of NaN) are written as integers,
    so a key ``1987`` in one source and ``1987.0`` in the other still meet. The rule is per
    value, never per column or partition: ``1987.0`` is ``"1987"`` whether or not the same
    partition also holds ``1987.5``. Object columns mixing numbers and text get the same
    treatment value by value (``1``, ``1.0``, ``Decimal("1.00")`` and ``"1"`` are all
    ``"1"``); categories are written as their values are. Date-times are ``YYYY-MM-DD`` at
    midnight and ``YYYY-MM-DD HH:MM:SS[.ffffff]`` otherwise, in UTC when they carry a time
    zone (again per value: pandas' own text of a column changes with its other values);
    ``NaT`` is missing.
    """
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):  # once per category, then by code
        cats = as_key_strings(pd.Series(np.asarray(dtype.categories, dtype=object),
                                        dtype=dtype.categories.dtype))
        return rebuild(cats.tolist(), values.cat.codes.to_numpy(), values.index)
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return _by_distinct(values, _timestamp_key_string)
    if pd.api.types.is_timedelta64_dtype(dtype):
        return _by_distinct(values, lambda t: pd.Timedelta(t).isoformat())
    if pd.api.types.is_float_dtype(dtype):
        return _float_key_strings(values)
    if pd.api.types.is_bool_dtype(dtype):
        return values.astype("boolean").astype("string")
    if pd.api.types.is_object_dtype(dtype) and \
            pd.api.types.infer_dtype(values, skipna=True) != "string":
        return values.map(_scalar_key_string).astype("string")
    return values.astype("string")


_INT64 = 2.0**63  # whole floats below this convert to int64 exactly


def _float_key_strings(values: pd.Series) -> pd.Series:
    """Whole floats as the integer they are exactly (``1e16`` is ``10000000000000000``,
    as the int64 column of another source writes it), others as pandas writes them."""
    arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):  # inf has no remainder
        whole = np.isfinite(arr) & (np.mod(arr, 1) == 0)
    text = values.astype("string")
    if whole.any():
        small = whole & (np.abs(arr) < _INT64)
        ints = pd.Series(np.where(small, arr, 0).astype(np.int64), index=values.index)
        text = text.mask(small, ints.astype("string"))
        huge = np.flatnonzero(whole & ~small)  # beyond int64: Python's exact integers
        if len(huge):
            vals = text.to_numpy(dtype=object)
            vals[huge] = [str(int(v)) for v in arr[huge]]
            text = pd.Series(vals, index=values.index, dtype="string")
    return text


def _by_distinct(values: pd.Series, write: Any) -> pd.Series:
    """``write`` applied once per distinct non-missing value, mapped back to the records."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return rebuild([write(u) for u in distinct_list(uniques)], codes, values.index)


def _timestamp_key_string(v: Any) -> str:
    """One date-time as key text: the date at midnight, else with its time (UTC when it
    carries a zone) — per value, as pandas' text of a whole column is not."""
    ts = pd.Timestamp(v)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)
    if ts == ts.normalize():
        return ts.strftime("%Y-%m-%d")
    return ts.strftime("%Y-%m-%d %H:%M:%S.%f" if ts.microsecond else "%Y-%m-%d %H:%M:%S")


def _scalar_key_string(v: Any) -> str | None:
    """Canonical text of one key value of an object column (None when missing)."""
    if v is None or (not isinstance(v, str) and pd.api.types.is_scalar(v) and pd.isna(v)):
        return None  # None, NaN, pd.NA, NaT (any kind), Decimal("NaN")
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, Decimal):  # a whole one exactly (a float rounds beyond 2**53)
        if v.is_finite() and v == v.to_integral_value():
            return str(int(v))
        v = float(v)
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, (pd.Timestamp, np.datetime64, _dt.datetime, _dt.date)):
        return _timestamp_key_string(v)
    if isinstance(v, (pd.Timedelta, np.timedelta64, _dt.timedelta)):
        return pd.Timedelta(v).isoformat()
    return str(v)


def explode_values(values: pd.Series, name: str) -> tuple[np.ndarray, pd.Series]:
    """(record position, key string) for every element of a column of lists.

    Elements may be lists, tuples, sets or arrays; a scalar is a one-element list and a
    missing value or an empty list gives no key. Elements are written as
    :func:`as_key_strings` writes values, so ``1`` and ``1.0`` meet.
    """
    _refuse_list_texts(values, name)
    s = pd.Series(values.to_numpy(dtype=object), index=np.arange(len(values)))
    ex = s.explode().astype(object)
    flat = _flat_factorize(ex)
    if flat is None:
        raise InputTypeError(f"{name}: expected a list of keys per record, got nested lists or "
                        "dicts")
    # written once per distinct element, not per element, unless factorize merged values
    # that are written differently (True == 1, Decimal(1) == 1 as Python objects)
    if pd.api.types.infer_dtype(ex, skipna=True) not in _FACTORIZE_SAFE:
        keys = as_key_strings(ex)
    else:
        codes, uniques = flat
        text = as_key_strings(pd.Series(np.asarray(uniques, dtype=object), dtype=object))
        keys = rebuild(text.tolist(), codes, ex.index)
    keep = ~empty(keys)
    return ex.index.to_numpy(np.int64)[keep], keys[keep].reset_index(drop=True)


_ITEM = r"""(?:'[^']*'|"[^"]*"|[+-]?\d+(?:\.\d*)?)"""
#: a list, tuple or array written out: ['a', 'b'], ('a',), [1, 2], ['a' 'b'] (numpy), []
_LIST_TEXT = (rf"[\[(]\s*(?:{_ITEM}(?:\s*,\s*|\s+){_ITEM})*(?:{_ITEM}\s*,?)?\s*[\])]")


_ONE_NUMBER = r"[\[(]\s*[+-]?\d+(?:\.\d*)?\s*[\])]"  #: [2019]: a key, or a list? a key


def _refuse_list_texts(values: pd.Series, name: str) -> None:
    """Refuse text values written like a Python list (``"['a', 'b']"``, ``"[1, 2]"``):
    the record would block on that whole text, meeting no other. Lists become such
    texts in a CSV file, and in a Dask frame that converted object columns to strings.
    A bracketed word (``[draft]``, ``(none)``) is a key like any other."""
    if not (pd.api.types.is_string_dtype(values.dtype) or pd.api.types.is_object_dtype(
            values.dtype)):
        return
    try:  # object columns of lists have no .str: nothing to refuse
        opens = values.str.lstrip().str.startswith(("[", "("))
    except AttributeError:
        return
    text = values[opens.fillna(False).astype(bool)].astype(str).str.strip()
    listed = text.str.fullmatch(_LIST_TEXT) & ~text.str.fullmatch(_ONE_NUMBER)
    bad = text[listed.fillna(False).astype(bool)]
    if len(bad):
        raise InputTypeError(
            f"{name}: the column holds texts written like lists ({bad.iloc[0][:40]!r}), "
            "not lists: such a record would block on its whole text. Dask turns list "
            "columns into strings: build the frame under dask.config.set("
            "{'dataframe.convert-string': False}) or give the column a pyarrow list dtype "
            "(pd.ArrowDtype(pa.list_(pa.string()))); from a CSV file, parse the texts into "
            "lists first (e.g. ast.literal_eval)")


#: element types whose equal Python objects are written alike (no bool, Decimal, …)
_FACTORIZE_SAFE = ("string", "integer", "floating", "mixed-integer-float", "empty")


def _nested(v: Any) -> bool:
    return isinstance(v, (list, tuple, set, frozenset, np.ndarray, dict))


def _flat_factorize(values: pd.Series) -> tuple[np.ndarray, Any] | None:
    """``pd.factorize`` of ``values``, or None when a value is a container (list, tuple,
    set, array, dict): checked on every value, once per distinct one."""
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:  # unhashable: lists, dicts, arrays
        return None
    if pd.api.types.is_object_dtype(values.dtype) and any(
            _nested(u) for u in distinct_list(uniques)):
        return None
    return codes, uniques


def has_nested(values: pd.Series) -> bool:
    """Whether any value is a container (see :func:`_flat_factorize`)."""
    return pd.api.types.is_object_dtype(values.dtype) and _flat_factorize(values) is None


def explode_uniques(lists: Sequence[Sequence[Any]], codes: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Map per-unique key lists back to records: (record position, key) for every key of
    every record, records in order (code −1: no keys). Vectorised over records."""
    lens = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    return explode_flat(lens, np.array([k for x in lists for k in x], dtype=object), codes)


def explode_flat(lens: np.ndarray, flat: np.ndarray, codes: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`explode_uniques` of lists given flat: unique ``u``'s keys are the next
    ``lens[u]`` elements of ``flat``."""
    starts = np.r_[0, np.cumsum(lens)[:-1]] if len(lens) else np.zeros(0, np.int64)
    have = codes >= 0
    rec_len = np.where(have, lens[np.where(have, codes, 0)] if len(lens) else 0, 0)
    pos = np.repeat(np.arange(len(codes), dtype=np.int64), rec_len)
    first = np.repeat(np.where(have, starts[np.where(have, codes, 0)] if len(lens) else 0, 0),
                      rec_len)
    within = np.arange(len(pos)) - np.repeat(np.cumsum(rec_len) - rec_len, rec_len)
    return pos, flat[first + within] if len(pos) else np.zeros(0, dtype=object)
