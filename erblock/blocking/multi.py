"""Multi-valued keys: a record in several blocks of one pass.

Token, q-gram and list blocking put a record in one block per key it has. A pair that
shares several keys (or agrees in several passes) is still compared once: in the first
pass it agrees on and, inside a pass, only in the block of the smallest key the two
records share (Kolb, Thor, Rahm, "Don't match twice"), decided by the comparer from the
two records' key lists (:mod:`erblock.engine.tasks.keysets`). Texts are normalised as
:func:`~erblock.blocking.text.normalise_text` does, once per distinct value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .cli_args import cli_args, cli_int, option_int
from .keys import CliParse, KeySpec
from .text import (
    as_key_strings,
    explode_flat,
    explode_uniques,
    explode_values,
    factorize_text,
    fold_text,
)

#: a token is a run of letters and digits (punctuation and ``_`` separate tokens)
TOKEN = re.compile(r"[^\W_]+")


def text_tokens(text: str, min_length: int = 1) -> list[str]:
    """Distinct tokens of a normalised text, in order of first appearance."""
    found = TOKEN.findall(text)
    if min_length > 1:
        found = [t for t in found if len(t) >= min_length]
    return list(dict.fromkeys(found))


#: a byte of ASCII text as token splitting reads it: letters lower-cased, digits kept,
#: everything else a space
_ASCII_TOKEN_BYTES = np.full(256, ord(" "), dtype=np.uint8)
_ASCII_TOKEN_BYTES[np.arange(ord("a"), ord("z") + 1)] = np.arange(ord("a"), ord("z") + 1)
_ASCII_TOKEN_BYTES[np.arange(ord("A"), ord("Z") + 1)] = np.arange(ord("a"), ord("z") + 1)
_ASCII_TOKEN_BYTES[np.arange(ord("0"), ord("9") + 1)] = np.arange(ord("0"), ord("9") + 1)


def tokens_of_texts(texts: pa.Array, min_length: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """:func:`text_tokens` of many texts (not yet normalised, no nulls) at once: (number of
    tokens of each text, the tokens one text after the other).

    ASCII texts (nearly all) are split without a Python loop: normalising an ASCII text
    only lower-cases it, and its tokens are the runs of ``[a-z0-9]``, so its bytes are
    mapped (letters lower-cased, other bytes to spaces) and split on spaces by arrow;
    distinct tokens keep their order of first appearance by a vectorised duplicate
    test. Other texts are normalised and split one by one (:func:`fold_text`,
    :func:`text_tokens`: Unicode letters and digits)."""
    texts = pa.array(texts, type=pa.string())  # int32 offsets (a no-op for such an array)
    n = len(texts)
    is_ascii = pc.string_is_ascii(texts).to_numpy(zero_copy_only=False)
    owners, toks = [], []
    sel = np.flatnonzero(is_ascii)
    if len(sel):
        plain = texts if len(sel) == n else texts.take(pa.array(sel))
        validity, offsets, data = plain.buffers()
        raw = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)
        # same offsets, mapped bytes: a slice's offset still points into the buffer
        mapped = pa.StringArray.from_buffers(len(plain), offsets,
                                             pa.py_buffer(_ASCII_TOKEN_BYTES[raw]),
                                             validity, plain.null_count, plain.offset)
        parts = pc.ascii_split_whitespace(mapped)
        flat = pc.list_flatten(parts)
        owner = sel[pc.list_parent_indices(parts).to_numpy()]
        keep = pc.greater_equal(pc.binary_length(flat), max(1, min_length)).to_numpy(
            zero_copy_only=False)
        enc = pc.dictionary_encode(flat.filter(pa.array(keep)))
        idx = enc.indices.to_numpy().astype(np.int64)
        owner = owner[keep]
        words = enc.dictionary.to_numpy(zero_copy_only=False)
        first = ~pd.Series(owner * np.int64(len(words)) + idx).duplicated().to_numpy()
        owners.append(owner[first])
        toks.append(words[idx[first]])
    for i in np.flatnonzero(~is_ascii).tolist():
        got = text_tokens(fold_text(texts[i].as_py()), min_length)
        owners.append(np.full(len(got), i, dtype=np.int64))
        toks.append(np.array(got, dtype=object))
    owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    tok = np.concatenate(toks) if toks else np.zeros(0, dtype=object)
    order = np.argsort(owner, kind="stable")  # texts in order, each text's tokens in order
    return np.bincount(owner, minlength=n).astype(np.int64), tok[order]


def text_qgrams(text: str, q: int) -> list[str]:
    """Distinct q-grams of a normalised text; a shorter non-empty text is its own gram."""
    if len(text) <= q:
        return [text] if text.strip() else []
    return list(dict.fromkeys(text[i:i + q] for i in range(len(text) - q + 1)))


class MultiColumnKey(KeySpec):
    """Base of the multi-valued keys of one column: several keys per record, read with
    :meth:`items` (there is no single value per record)."""

    column: str

    @property
    def multi(self) -> bool:
        return True

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        raise TypeError(f"{self!r} gives several keys per record: read them with items()")


class _TextKeys(MultiColumnKey):
    """A multi-valued key made per distinct normalised text of one column."""

    def split(self, text: str) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        uniques, codes = factorize_text(as_key_strings(df[self.column]).astype("string"))
        pos, keys = explode_uniques([self.split(fold_text(u)) for u in uniques], codes)
        return pos, pd.Series(keys, dtype="string")


@dataclass(frozen=True)
class Tokens(_TextKeys):
    """Every distinct word of the normalised text of a column (token blocking).

    A word is a run of letters and digits; words shorter than ``min_length`` are not
    keys. A pair sharing several words is compared once.
    """

    column: str
    min_length: int = 1
    kind: ClassVar[str] = "tokens"
    cli_names: ClassVar[tuple[str, ...]] = ("tokens",)
    cli_usage: ClassVar[str] = "tokens:COLUMN[:MIN_LENGTH]"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        got = cli_args(name, args, 1, 2, cls.cli_usage)
        return cls(got[0], cli_int(got[1], cls.cli_usage) if len(got) == 2 else 1)

    def __post_init__(self) -> None:
        option_int(self, "min_length", "min_length", 1)

    def split(self, text: str) -> list[str]:
        return text_tokens(text, self.min_length)

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        codes, uniques = pd.factorize(as_key_strings(df[self.column]).astype("string"),
                                      use_na_sentinel=True)
        lens, flat = tokens_of_texts(pa.array(uniques, type=pa.string()), self.min_length)
        pos, keys = explode_flat(lens, flat, codes)
        return pos, pd.Series(keys, dtype="string")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "min_length": int(self.min_length)}


@dataclass(frozen=True)
class QGrams(_TextKeys):
    """Every distinct ``q``-gram (``q`` consecutive characters) of the normalised text of a
    column, spaces included; a text of at most ``q`` characters is its own key."""

    column: str
    q: int = 3
    kind: ClassVar[str] = "qgrams"
    cli_names: ClassVar[tuple[str, ...]] = ("qgrams",)
    cli_usage: ClassVar[str] = "qgrams:COLUMN[:Q]"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        got = cli_args(name, args, 1, 2, cls.cli_usage)
        return cls(got[0], cli_int(got[1], cls.cli_usage) if len(got) == 2 else 3)

    def __post_init__(self) -> None:
        option_int(self, "q", "q", 1)

    def split(self, text: str) -> list[str]:
        return text_qgrams(text, self.q)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "q": int(self.q)}


@dataclass(frozen=True)
class Items(MultiColumnKey):
    """Every element of a column that holds a list (tuple, set, array) per record.

    Elements are written as the ``column`` key writes values (``1`` and ``1.0`` meet); a
    scalar is a list of one, a missing value or an empty list blocks nothing.
    """

    column: str
    kind: ClassVar[str] = "items"
    cli_names: ClassVar[tuple[str, ...]] = ("items",)
    cli_usage: ClassVar[str] = "items:COLUMN"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        (col,) = cli_args(name, args, 1, 1, cls.cli_usage)
        return cls(col)

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        return explode_values(df[self.column], f"items({self.column!r})")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column}

