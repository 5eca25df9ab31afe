"""The registry of key kinds: dict round trips and the command-line forms.

:data:`KEY_KINDS` maps a ``kind`` to its spec class; :func:`key_from_dict` inverts
``KeySpec.to_dict`` and :func:`parse_key` reads the command line's ``--key`` forms, both
through the registry. To add a kind, write a :class:`~erblock.blocking.keys.KeySpec`
subclass and add it to :data:`KEY_KINDS`.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import Any

from .cli_args import hide_escapes, restore_escapes, restore_in_message
from .dates import DateKey
from .digits import DigitsKey
from .keys import Column, Composite, KeySpec, Lower, Phonetic, Prefix, Token
from .minhash import MinHash
from .multi import Items, QGrams, Tokens
from .neighbourhood import SortedNeighbourhood
from .pruning import Pruned

#: every key kind by name: ``to_dict``/``key_from_dict`` and the command line use it
KEY_KINDS: dict[str, type[KeySpec]] = {
    k.kind: k for k in (Column, Lower, Prefix, Token, Phonetic, Composite, DateKey, DigitsKey,
                        Tokens, QGrams, Items, MinHash, SortedNeighbourhood, Pruned)
}


def key_from_dict(d: Mapping[str, Any]) -> KeySpec:
    """Inverse of ``KeySpec.to_dict``."""
    cls = KEY_KINDS.get(str(d.get("kind")))
    if cls is None:
        raise ValueError(f"unknown key kind {d.get('kind')!r} in {dict(d)!r}; known: "
                         f"{sorted(KEY_KINDS)}")
    return cls.from_dict(d, key_from_dict)


def cli_key_forms() -> list[str]:
    """The command-line forms of every registered key kind (for help texts)."""
    return [k.cli_usage for k in KEY_KINDS.values() if k.cli_usage]


def parse_key(text: str) -> KeySpec:
    """A key from its command-line form: ``COLUMN``, ``prefix:COLUMN:N`` and the other
    forms of :func:`cli_key_forms`; parts joined with ``+`` make a composite key. A column
    whose name holds ``:``, ``+`` or ``=`` is written with a backslash before them
    (``prefix:addr\\:city:3``)."""
    hidden = hide_escapes(text)
    if hidden == text:
        return _parse_key(text, text)
    try:
        spec = _parse_key(hidden, text)
    except ValueError as exc:  # a part named in the message: with its escapes as given
        raise ValueError(restore_in_message(str(exc))) from exc
    return key_from_dict(restore_escapes(spec.to_dict()))


def _parse_key(text: str, given: str) -> KeySpec:
    """:func:`parse_key` of ``text`` (its escapes hidden), naming ``given`` in errors."""
    if not text.strip():
        raise ValueError(f"--key {given!r}: empty key")
    parts = text.split("+")
    if not all(p.strip() for p in parts):
        raise ValueError(f"--key {given!r}: an empty part between '+' signs (a composite key "
                         "is PART+PART, e.g. city+prefix:surname:3)")
    by_name = {n: k for k in KEY_KINDS.values() for n in k.cli_names}
    specs: list[KeySpec] = []
    for part in parts:
        name, *args = part.split(":")
        cls = Column if not args else by_name.get(name)
        if cls is None:  # a misspelt kind, or a column whose name holds ':'
            close = difflib.get_close_matches(name, by_name, n=1)
            hint = (f"; did you mean {close[0]!r}?" if close else "") + (
                "; a column whose name holds ':', '+' or '=' is written with a "
                f"backslash before them ({part.replace(':', chr(92) + ':')})")
            raise ValueError(f"--key {given!r}: cannot read {part!r}; expected one of "
                             f"{', '.join(cli_key_forms())}{hint}")
        try:
            # kinds that wrap a key read it with parse_key (older kinds take two arguments)
            nested = "parse" in inspect.signature(cls.from_cli).parameters
            specs.append(cls.from_cli(name, args, parse_key) if nested
                         else cls.from_cli(name, args))
        except ValueError as exc:
            raise ValueError(f"--key {given!r}: {exc}") from exc
    return specs[0] if len(specs) == 1 else Composite(tuple(specs))
