"""Blocking keys: specs that map records to int64 block ids (see :mod:`.keys`; multi-valued
keys in :mod:`.multi` and :mod:`.minhash`, dates read as dates in :mod:`.dates`, digits in :mod:`.digits`); the registry of key kinds is :mod:`.registry`,
the constructors users call are in :mod:`.make`."""

from .dates import DateKey, date
from .digits import DigitsKey, digits
from .function import FunctionKey
from .ids import block_id_items, block_ids, hash_keys
from .keys import (
    NULL_BLOCK,
    Column,
    Composite,
    KeySpec,
    Lower,
    Phonetic,
    Prefix,
    Token,
)
from .make import (
    as_key_spec,
    column,
    composite,
    items,
    lower,
    metaphone,
    minhash,
    nysiis,
    prefix,
    qgrams,
    sorted_neighbourhood,
    soundex,
    token,
    tokens,
)
from .minhash import MinHash
from .multi import Items, QGrams, Tokens
from .neighbourhood import SortedNeighbourhood
from .pruning import Pruned, prune
from .registry import KEY_KINDS, key_from_dict, parse_key

__all__ = [
    "NULL_BLOCK",
    "Column",
    "Composite",
    "DateKey",
    "DigitsKey",
    "FunctionKey",
    "Items",
    "KEY_KINDS",
    "KeySpec",
    "Lower",
    "MinHash",
    "Phonetic",
    "Prefix",
    "Pruned",
    "QGrams",
    "SortedNeighbourhood",
    "Token",
    "Tokens",
    "as_key_spec",
    "block_id_items",
    "block_ids",
    "hash_keys",
    "column",
    "composite",
    "date",
    "digits",
    "items",
    "key_from_dict",
    "lower",
    "metaphone",
    "minhash",
    "nysiis",
    "parse_key",
    "prefix",
    "prune",
    "qgrams",
    "soundex",
    "sorted_neighbourhood",
    "token",
    "tokens",
]
