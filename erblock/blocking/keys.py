"""Blocking keys: small frozen specs that turn records into block ids.

A key spec says *what* the blocking key of a record is (a column, a composite of columns,
the first letters of a normalised column, a phonetic code, or a user function). It is
inspectable (its ``repr`` says what will run) and round-trips through ``to_dict``.

:func:`erblock.blocking.ids.block_ids` turns key values into block ids; missing, empty or blank
keys become :data:`NULL_BLOCK` (the record is not blocked, and counted in the report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .cli_args import cli_args, cli_int, option_int
from .text import (
    SEPARATOR,
    arrow_text,
    as_key_strings,
    blank,
    blank_arrow,
    empty,
    factorize_text,
    normalise_text,
    rebuild,
    separable,
    separable_arrow,
)

#: Block id given to records whose key is missing, empty or blank: they are never compared.
NULL_BLOCK = np.iinfo(np.int64).min


CliParse = Callable[[str], "KeySpec"]  #: reads a nested key's command-line form


class KeySpec:
    """Base of all key specs: ``columns`` it reads and ``values(df)`` it produces.

    ``kind`` names the spec in its dict form (``to_dict``/:func:`key_from_dict`);
    ``cli_names`` and ``cli_usage`` give its command-line form (``prefix:COLUMN:N``), which
    :meth:`from_cli` reads; :data:`KEY_KINDS` registers every kind.
    """

    kind: ClassVar[str] = ""
    cli_names: ClassVar[tuple[str, ...]] = ()
    cli_usage: ClassVar[str] = ""

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:  # pragma: no cover
        """The spec of the command-line form ``name:ARG:ARG`` (``parse`` reads a nested
        key's form, for kinds that wrap another key)."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls, d: Mapping[str, Any],
                  parse: Callable[[Mapping[str, Any]], KeySpec] | None = None) -> KeySpec:
        """Inverse of :meth:`to_dict` (every field by name; ``parse`` reads nested keys)."""
        return cls(**{k: v for k, v in d.items() if k != "kind"})

    @property
    def columns(self) -> tuple[str, ...]:  # pragma: no cover - overridden
        raise NotImplementedError

    def values(self, df: pd.DataFrame) -> pd.Series:  # pragma: no cover - overridden
        """Key value per record as a string Series; missing means not blocked."""
        raise NotImplementedError

    @property
    def multi(self) -> bool:
        """True when a record can have several keys in this pass (a block per key)."""
        return False

    @property
    def ordered(self) -> bool:
        """True when the blocks depend on the order of all records (sorted neighbourhood:
        the engine computes the order first; :func:`~erblock.blocking.neighbourhood.
        window_of` gives its window)."""
        return False

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        """Every key of every record: (row position of the record, key) — key strings,
        or int64 block ids (MinHash bands).

        A single-valued key gives each record one item (missing ones too, which block
        nothing); a multi-valued key (:mod:`erblock.blocking.multi`) gives a record one
        item per key, in any order, possibly repeated.
        """
        return np.arange(len(df), dtype=np.int64), self.values(df)

    @property
    def selects(self) -> tuple[str, ...]:
        """Columns this key selects pairs on: the columns it reads and, for a ready-made
        key column, the columns it was derived from. A scoring model does not learn what
        a match looks like on them from the pairs this key found."""
        return self.columns

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError  # pragma: no cover


@dataclass(frozen=True)
class Column(KeySpec):
    """The raw value of one column (numbers written canonically, text as is).

    ``derived_from`` names the columns a ready-made key column was computed from (e.g. a
    first-word column made from ``name``), so scoring knows the key selects on them.
    """

    column: str
    derived_from: tuple[str, ...] = ()
    kind: ClassVar[str] = "column"
    cli_usage: ClassVar[str] = "COLUMN"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        return cls(name)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived_from", _names(self.derived_from))

    @property
    def selects(self) -> tuple[str, ...]:
        return (self.column, *self.derived_from)

    def values(self, df: pd.DataFrame) -> pd.Series:
        return as_key_strings(df[self.column])

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "column": self.column}
        if self.derived_from:
            d["derived_from"] = list(self.derived_from)
        return d


@dataclass(frozen=True)
class Lower(KeySpec):
    """Normalised text of a column: lower case, accents stripped, white space collapsed."""

    column: str
    kind: ClassVar[str] = "lower"
    cli_names: ClassVar[tuple[str, ...]] = ("lower",)
    cli_usage: ClassVar[str] = "lower:COLUMN"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        (col,) = cli_args(name, args, 1, 1, cls.cli_usage)
        return cls(col)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        return normalise_text(as_key_strings(df[self.column]))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column}


@dataclass(frozen=True)
class Prefix(KeySpec):
    """The first ``n`` characters of a column (of its normalised text by default)."""

    column: str
    n: int
    normalize: bool = True
    kind: ClassVar[str] = "prefix"
    cli_names: ClassVar[tuple[str, ...]] = ("prefix",)
    cli_usage: ClassVar[str] = "prefix:COLUMN:N"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        col, n = cli_args(name, args, 2, 2, cls.cli_usage)
        return cls(col, cli_int(n, cls.cli_usage))

    def __post_init__(self) -> None:
        option_int(self, "n", "prefix length n", 1)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        s = as_key_strings(df[self.column])
        if self.normalize:
            s = normalise_text(s)
        return s.str.slice(0, self.n)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "n": self.n, "normalize": self.normalize}


@dataclass(frozen=True)
class Token(KeySpec):
    """The ``i``-th word of the normalised text of a column (0 = first; negative from the end).

    Records with fewer words have no key for this pass.
    """

    column: str
    i: int = 0
    kind: ClassVar[str] = "token"
    cli_names: ClassVar[tuple[str, ...]] = ("token",)
    cli_usage: ClassVar[str] = "token:COLUMN[:I]"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        got = cli_args(name, args, 1, 2, cls.cli_usage)
        return cls(got[0], cli_int(got[1], cls.cli_usage) if len(got) == 2 else 0)

    def __post_init__(self) -> None:
        option_int(self, "i", "token index i")

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        s = normalise_text(as_key_strings(df[self.column]))
        uniques, codes = factorize_text(s)
        i = self.i

        def pick(text: str) -> str | None:
            words = text.split()
            return words[i] if -len(words) <= i < len(words) else None

        return rebuild([pick(u) for u in uniques], codes, s.index)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "i": self.i}


@dataclass(frozen=True)
class Phonetic(KeySpec):
    """A phonetic code of a column (``soundex``, ``metaphone`` or ``nysiis``, by jellyfish).

    The code is computed once per distinct value, not once per record.
    """

    column: str
    algorithm: str
    kind: ClassVar[str] = "phonetic"
    ALGORITHMS: ClassVar[tuple[str, ...]] = ("soundex", "metaphone", "nysiis")
    cli_names: ClassVar[tuple[str, ...]] = ALGORITHMS
    cli_usage: ClassVar[str] = "soundex:COLUMN | metaphone:COLUMN | nysiis:COLUMN"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str], parse: CliParse | None = None
                 ) -> KeySpec:
        (col,) = cli_args(name, args, 1, 1, f"{name}:COLUMN")
        return cls(col, name)

    def __post_init__(self) -> None:
        if self.algorithm not in self.ALGORITHMS:
            raise ValueError(
                f"phonetic algorithm must be one of {self.ALGORITHMS}, got {self.algorithm!r}"
            )

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        import jellyfish

        encode: Callable[[str], str] = getattr(jellyfish, self.algorithm)
        s = normalise_text(as_key_strings(df[self.column]))
        uniques, codes = factorize_text(s)
        coded = [encode(u) if u.strip() else "" for u in uniques]
        return rebuild(coded, codes, s.index)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "algorithm": self.algorithm}


@dataclass(frozen=True)
class Composite(KeySpec):
    """Several keys at once (AND): records share a block only if they agree on all parts.

    A record with any part missing is not blocked.
    """

    parts: tuple[KeySpec, ...]
    kind: ClassVar[str] = "composite"

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("a composite key needs at least one part, e.g. "
                             "composite('city', prefix('surname', 3))")
        for p in self.parts:
            if not isinstance(p, KeySpec):
                raise TypeError(f"a composite key's parts are key specs, got {p!r}: use "
                                "erblock.blocking.composite(...), which takes column names too")
            if p.kind in ("sorted_neighbourhood", "pruned"):
                raise ValueError(
                    f"a composite key cannot hold {p!r}: a {p.kind.replace('_', ' ')} key "
                    "is a pass of its own (pass it in the key list, or prune the composite)")

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for p in self.parts for c in p.columns))

    @property
    def selects(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for p in self.parts for c in p.selects))

    @property
    def multi(self) -> bool:
        return any(p.multi for p in self.parts)

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        """With a multi-valued part: one item per combination of the parts' keys."""
        if not self.multi:
            return super().items(df)
        joined: pd.DataFrame | None = None
        for k, part in enumerate(self.parts):
            pos, vals = part.items(df)
            # int64 keys (MinHash bands) are digits: nothing to escape
            text = (vals.astype(str).astype("string") if pd.api.types.is_integer_dtype(vals.dtype)
                    else separable(vals))
            piece = pd.DataFrame({"pos": pos, k: text.to_numpy(dtype=object)})
            # a single-valued part is no key when blank, an element only when empty
            piece = piece[~(empty(text) if part.multi else blank(text))]
            joined = piece if joined is None else joined.merge(piece, on="pos")
        assert joined is not None
        text = joined[0].astype(str)
        for k in range(1, len(self.parts)):
            text = text + SEPARATOR + joined[k].astype(str)
        return joined["pos"].to_numpy(np.int64), text.astype("string").reset_index(drop=True)

    def values(self, df: pd.DataFrame) -> pd.Series:
        if self.multi:
            raise TypeError(f"{self!r} has a multi-valued part: read its keys with items()")
        values = [p.values(df) for p in self.parts]
        # the parts' separator inside a value is escaped: joined keys are unambiguous
        pieces = [separable_arrow(arrow_text(v)) for v in values]
        missing = np.zeros(len(df), dtype=bool)
        for piece in pieces:
            missing |= blank_arrow(piece)
        joined = pc.binary_join_element_wise(*pieces, pa.scalar(SEPARATOR, pa.large_string()),
                                             null_handling="replace", null_replacement="")
        if missing.any():  # a blank part: no key (null), kept as Arrow text throughout
            joined = pc.if_else(pa.array(missing), pa.scalar(None, pa.large_string()),
                                joined)
        return pd.Series(pd.arrays.ArrowStringArray(joined), index=values[0].index)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any],
                  parse: Callable[[Mapping[str, Any]], KeySpec] | None = None) -> KeySpec:
        if parse is None:
            raise ValueError("a composite key is read through erblock.blocking.key_from_dict")
        return cls(tuple(parse(p) for p in d["parts"]))


def _names(cols: str | Sequence[str]) -> tuple[str, ...]:  # one string: one column
    return (cols,) if isinstance(cols, str) else tuple(cols)
