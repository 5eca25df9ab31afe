"""What users write as ``key=``: the constructors of every key kind and
:func:`as_key_spec`, which turns a column name, a tuple, a callable or a spec into one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np
import pandas as pd

from .function import FunctionKey
from .keys import Column, Composite, KeySpec, Lower, Phonetic, Prefix, Token, _names
from .minhash import DEFAULT_PERMUTATIONS, MinHash
from .multi import Items, QGrams, Tokens
from .neighbourhood import SortedNeighbourhood

KeyLike = Union[str, tuple, KeySpec, Callable[[pd.DataFrame], Any]]  # noqa: UP007 (runtime alias, py3.10)

def column(col: str, derived_from: str | tuple[str, ...] = ()) -> Column:
    """Block on the raw value of ``col`` (a ready-made key column: name the columns it was
    made from in ``derived_from``)."""
    return Column(col, _names(derived_from))


def lower(col: str) -> Lower:
    """Block on the normalised text of ``col`` (lower case, no accents, single spaces)."""
    return Lower(col)


def prefix(col: str, n: int, normalize: bool = True) -> Prefix:
    """Block on the first ``n`` characters of ``col`` (normalised text unless told not to)."""
    return Prefix(col, n, normalize)


def token(col: str, i: int = 0) -> Token:
    """Block on the ``i``-th word of the normalised text of ``col``."""
    return Token(col, i)


def soundex(col: str) -> Phonetic:
    """Block on the Soundex code of ``col``."""
    return Phonetic(col, "soundex")


def metaphone(col: str) -> Phonetic:
    """Block on the Metaphone code of ``col``."""
    return Phonetic(col, "metaphone")


def nysiis(col: str) -> Phonetic:
    """Block on the NYSIIS code of ``col``."""
    return Phonetic(col, "nysiis")


def composite(*parts: KeyLike) -> Composite:
    """Block on several keys at once (records must agree on all of them)."""
    return Composite(tuple(as_key_spec(p) for p in parts))


def as_key_spec(key: KeyLike) -> KeySpec:
    """Normalise what users pass as ``key`` (one pass) into a :class:`KeySpec`."""
    if isinstance(key, KeySpec):
        return key
    if isinstance(key, str):
        return Column(key)
    if isinstance(key, tuple):
        if len(key) == 0:
            raise ValueError("key: a composite key (tuple) needs at least one column")
        if len(key) == 1:
            return as_key_spec(key[0])
        return Composite(tuple(as_key_spec(p) for p in key))
    if callable(key):
        return FunctionKey(key)
    if isinstance(key, (int, float, np.integer, np.floating)) and not isinstance(key, bool):
        raise TypeError(
            f"key: column labels must be strings, got {key!r} ({type(key).__name__}); name "
            "the columns with text, e.g. df.columns = df.columns.astype(str), and pass "
            f"key={str(key)!r}"
        )
    raise TypeError(
        "key must be a column name, a tuple of columns, a callable DataFrame -> Series, "
        f"or a spec such as erblock.blocking.prefix('title', 3); got {type(key).__name__}"
    )


def tokens(col: str, min_length: int = 1) -> Tokens:
    """Token blocking: a block per distinct word of the normalised text of ``col`` (words
    shorter than ``min_length`` are no keys); a pair sharing several words is compared once."""
    return Tokens(col, min_length)


def qgrams(col: str, q: int = 3) -> QGrams:
    """Q-gram blocking: a block per distinct ``q``-gram of the normalised text of ``col``."""
    return QGrams(col, q)


def items(source: str | Callable[[pd.DataFrame], Any], needs: str | Sequence[str] = ()
          ) -> KeySpec:
    """A block per element of a list-valued column, or of the lists a function
    ``DataFrame -> Series of lists`` returns (``needs``: the columns it reads)."""
    if isinstance(source, str):
        return Items(source)
    if callable(source):
        return FunctionKey(source, _names(needs), multi_valued=True)
    raise TypeError(f"items: expected a column name or a function, got {type(source).__name__}")


def minhash(col: str, threshold: float = 0.8, *, bands: int | None = None,
            rows: int | None = None, q: int | None = None,
            num_perm: int = DEFAULT_PERMUTATIONS, seed: int = 1) -> MinHash:
    """MinHash LSH on the tokens (``q=None``) or q-grams of ``col``: pairs whose Jaccard
    similarity is about ``threshold`` or more become candidates (or give ``bands`` and
    ``rows``); see :mod:`erblock.blocking.minhash`."""
    if bands is not None or rows is not None:
        return MinHash(col, None, bands, rows, q, num_perm, seed)
    return MinHash(col, threshold, None, None, q, num_perm, seed)


def sorted_neighbourhood(key: KeyLike, window: int) -> SortedNeighbourhood:
    """Sorted-neighbourhood blocking: records ordered by ``key`` (a column name, a tuple, or
    a single-valued key spec), every pair at most ``window − 1`` positions apart compared;
    see :mod:`erblock.blocking.neighbourhood`."""
    return SortedNeighbourhood(as_key_spec(key), window)
