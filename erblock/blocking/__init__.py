"""Blocking keys: specs that map records to int64 block ids (see :mod:`.keys`); the
registry of key kinds is :mod:`.registry`."""

from .ids import block_ids, hash_keys
from .keys import (
    NULL_BLOCK,
    Column,
    Composite,
    FunctionKey,
    KeySpec,
    Lower,
    Phonetic,
    Prefix,
    Token,
    as_key_spec,
    column,
    composite,
    lower,
    metaphone,
    nysiis,
    prefix,
    soundex,
    token,
)
from .registry import KEY_KINDS, key_from_dict, parse_key

__all__ = [
    "NULL_BLOCK",
    "Column",
    "Composite",
    "FunctionKey",
    "KEY_KINDS",
    "KeySpec",
    "Lower",
    "Phonetic",
    "Prefix",
    "Token",
    "as_key_spec",
    "block_ids",
    "hash_keys",
    "column",
    "composite",
    "key_from_dict",
    "lower",
    "metaphone",
    "nysiis",
    "parse_key",
    "prefix",
    "soundex",
    "token",
]
