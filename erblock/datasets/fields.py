"""The fields of generated records: vocabularies, how each field is drawn and rendered,
and the character and token errors of duplicates (vectorised with numpy and pyarrow; no
Python loop per record). Used by :mod:`erblock.datasets.generator`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# 64-bit offsets: a partition's text column may exceed 2 GiB
_PA_STR = pa.large_string()

# --------------------------------------------------------------------------- vocabularies
# Small vocabularies (data/generator_vocab.json), drawn with Zipf-like weights so some
# values are common.


def _load_vocab() -> dict[str, list[str]]:
    ref = resources.files("erblock.datasets").joinpath("data").joinpath("generator_vocab.json")  # one part a call: Python 3.10
    return json.loads(ref.read_text(encoding="utf-8"))


_V = _load_vocab()
_FIRST: list[str] = _V["first_names"]
_SURNAME_ROOTS: list[str] = _V["surname_roots"]
_SURNAME_SUFFIXES: list[str] = _V["surname_suffixes"]
_CITIES: list[str] = _V["cities"]
_TITLE_WORDS: list[str] = _V["title_words"]
_TITLE_GLUE: list[str] = _V["title_glue"]
_VENUES: list[str] = _V["venues"]


def _zipf_weights(n: int, a: float = 0.8) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** a
    return w / w.sum()


def _vocab(words: Sequence[str]) -> pa.Array:
    return pa.array(list(words), type=_PA_STR)


def _title_case(words: Sequence[str]) -> list[str]:
    return [w[:1].upper() + w[1:] for w in words]


_SURNAMES = sorted({r + s for r in _SURNAME_ROOTS for s in _SURNAME_SUFFIXES})
_FIRST_VOCAB = _vocab(_title_case(_FIRST))
_SURNAME_VOCAB = _vocab(_title_case(_SURNAMES))
_CITY_VOCAB = _vocab(_title_case(_CITIES))
# Title tokens: content words and glue words; the first token is capitalised.
_TITLE_TOKENS = _TITLE_WORDS + _TITLE_GLUE
_TITLE_VOCAB = _vocab(_TITLE_TOKENS + _title_case(_TITLE_TOKENS))
_TITLE_W = np.r_[_zipf_weights(len(_TITLE_WORDS), 0.6) * 0.75, np.full(len(_TITLE_GLUE), 0.025)]
_TITLE_W = _TITLE_W / _TITLE_W.sum()
_TITLE_FIRST_W = _zipf_weights(len(_TITLE_WORDS), 0.6)
_VENUE_VOCAB = _vocab(_VENUES)
_MAX_TITLE, _MAX_AUTHORS = 10, 5
_DOB_FIRST, _DOB_LAST = np.datetime64("1930-01-01"), np.datetime64("2005-12-31")
_YEAR_FIRST, _YEAR_LAST = 1990, 2025
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_STR = np.dtypes.StringDType()

# --------------------------------------------------------------------------- fields
# A field draws integer codes per entity, renders codes to values, and knows which errors
# its duplicates get. Codes are dicts of arrays with one row per entity, so subsets (for
# copies and token drops) are a fancy index away.

Codes = dict[str, np.ndarray]


@dataclass(frozen=True)
class Field:
    name: str
    draw: Callable[[np.random.Generator, int], Codes]
    render: Callable[[Codes], pa.Array]
    alphabet: str = _LETTERS
    edits: tuple[str, ...] = ("insert", "delete", "substitute", "transpose")
    tokens: bool = False  # codes hold a token matrix "t" and a count "len": tokens can drop
    numeric: bool = False  # an int field: an error is +-1


def _draw_index(weights: np.ndarray) -> Callable[[np.random.Generator, int], Codes]:
    def draw(rng: np.random.Generator, n: int) -> Codes:
        return {"i": rng.choice(weights.size, size=n, p=weights)}

    return draw


def _render_index(vocab: pa.Array) -> Callable[[Codes], pa.Array]:
    return lambda c: vocab.take(pa.array(c["i"]))


def _draw_dob(rng: np.random.Generator, n: int) -> Codes:
    span = int((_DOB_LAST - _DOB_FIRST).astype(np.int64)) + 1
    return {"d": rng.integers(0, span, size=n)}


def _render_dob(c: Codes) -> pa.Array:
    days = c["d"] + _DOB_FIRST.astype(np.int64)  # days since 1970-01-01
    return pa.array(days.astype(np.int32)).cast(pa.date32()).cast(_PA_STR)


def _draw_zip(rng: np.random.Generator, n: int) -> Codes:
    return {"z": rng.integers(1000, 100000, size=n)}


def _render_zip(c: Codes) -> pa.Array:
    return pc.utf8_lpad(pa.array(c["z"]).cast(_PA_STR), 5, padding="0")


def _draw_title(rng: np.random.Generator, n: int) -> Codes:
    t = rng.choice(len(_TITLE_TOKENS), size=(n, _MAX_TITLE), p=_TITLE_W)
    t[:, 0] = rng.choice(len(_TITLE_WORDS), size=n, p=_TITLE_FIRST_W)  # no leading glue word
    return {"t": t, "len": rng.integers(4, _MAX_TITLE + 1, size=n)}


def _render_title(c: Codes) -> pa.Array:
    t, lens = c["t"], c["len"]
    keep = np.arange(t.shape[1]) < lens[:, None]
    tok = np.where(np.arange(t.shape[1]) == 0, t + len(_TITLE_TOKENS), t)  # capitalised 1st
    return _join_lists(_TITLE_VOCAB.take(pa.array(tok[keep])), lens, " ")


def _draw_authors(rng: np.random.Generator, n: int) -> Codes:
    shape = (n, _MAX_AUTHORS)
    first = rng.choice(len(_FIRST), size=shape, p=_zipf_weights(len(_FIRST)))
    last = rng.choice(len(_SURNAMES), size=shape, p=_zipf_weights(len(_SURNAMES), 0.6))
    lens = rng.choice(np.arange(1, _MAX_AUTHORS + 1), size=n, p=[0.2, 0.3, 0.25, 0.15, 0.1])
    # one token matrix (first * |surnames| + last) so token drops treat authors as units
    return {"t": first * len(_SURNAMES) + last, "len": lens}


def _render_authors(c: Codes) -> pa.Array:
    t, lens = c["t"], c["len"]
    flat = t[np.arange(t.shape[1]) < lens[:, None]]
    names = pc.binary_join_element_wise(
        _FIRST_VOCAB.take(pa.array(flat // len(_SURNAMES))),
        _SURNAME_VOCAB.take(pa.array(flat % len(_SURNAMES))),
        pa.scalar(" ", _PA_STR),
    )
    return _join_lists(names, lens, ", ")


def _join_lists(flat: pa.Array, lens: np.ndarray, sep: str) -> pa.Array:
    offsets = np.r_[0, np.cumsum(lens)].astype(np.int64)
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), flat)
    return pc.binary_join(lists, pa.scalar(sep, _PA_STR))


def _draw_year(rng: np.random.Generator, n: int) -> Codes:
    return {"y": rng.integers(_YEAR_FIRST, _YEAR_LAST + 1, size=n)}


FIELDS: dict[str, tuple[Field, ...]] = {
    "person": (
        Field("first_name", _draw_index(_zipf_weights(len(_FIRST))), _render_index(_FIRST_VOCAB)),
        Field(
            "surname",
            _draw_index(_zipf_weights(len(_SURNAMES), 0.6)),
            _render_index(_SURNAME_VOCAB),
        ),
        Field("dob", _draw_dob, _render_dob, _DIGITS, ("substitute", "transpose")),
        Field("city", _draw_index(_zipf_weights(len(_CITIES))), _render_index(_CITY_VOCAB)),
        Field("zip", _draw_zip, _render_zip, _DIGITS, ("substitute", "transpose")),
    ),
    "title": (
        Field("title", _draw_title, _render_title, tokens=True),
        Field("authors", _draw_authors, _render_authors, tokens=True),
        Field("year", _draw_year, lambda c: c["y"], numeric=True),
        Field("venue", _draw_index(_zipf_weights(len(_VENUES))), _render_index(_VENUE_VOCAB)),
    ),
}


# --------------------------------------------------------------------------- errors


def char_edits(
    values: pa.Array, rng: np.random.Generator, alphabet: str, kinds: tuple[str, ...]
) -> pa.Array:
    """One random character edit per value (values are non-null and non-empty)."""
    s = np.asarray(values.to_numpy(zero_copy_only=False), dtype=_STR)
    n = s.size
    lens = np.strings.str_len(s)
    kind = rng.integers(0, len(kinds), size=n)
    u = rng.random(n)
    alpha = np.array(list(alphabet), dtype=_STR)
    ci = rng.integers(0, len(alphabet), size=n)
    ch = alpha[ci]
    pos = (u * lens).astype(np.int64)  # a character position in [0, len)
    head, tail = np.strings.slice(s, 0, pos), np.strings.slice(s, pos + 1, None)
    # a substitution must change the character
    ch_sub = np.where(np.strings.slice(s, pos, pos + 1) == ch, alpha[(ci + 1) % alpha.size], ch)
    p2 = (u * np.maximum(lens - 1, 1)).astype(np.int64)  # first of two swapped characters
    out = {
        "insert": head + ch + np.strings.slice(s, pos, None),
        "delete": head + tail,
        "substitute": head + ch_sub + tail,
        "transpose": np.strings.slice(s, 0, p2)
        + np.strings.slice(s, p2 + 1, p2 + 2)
        + np.strings.slice(s, p2, p2 + 1)
        + np.strings.slice(s, p2 + 2, None),
    }
    res = np.empty(n, dtype=_STR)
    for k, name in enumerate(kinds):  # a loop over edit kinds, each over whole arrays
        # deleting or swapping in a one-character value would empty or keep it: substitute
        fallback = name in ("delete", "transpose")
        m = (kind == k) & (lens >= 2) if fallback else kind == k
        res[m] = out[name][m]
        if fallback:
            short = (kind == k) & (lens < 2)
            res[short] = out["substitute"][short]
    return pa.array(res, type=_PA_STR)


def drop_token(codes: Codes, rng: np.random.Generator) -> Codes:
    """Remove one random token from rows with at least two tokens."""
    t, lens = codes["t"], codes["len"]
    j = (rng.random(lens.size) * lens).astype(np.int64)
    j = np.where(lens > 1, j, t.shape[1])  # no drop for single tokens
    cols = np.arange(t.shape[1])[None, :]
    src = np.minimum(cols + (cols >= j[:, None]), t.shape[1] - 1)
    return {"t": np.take_along_axis(t, src, axis=1), "len": np.where(lens > 1, lens - 1, lens)}


def subset_codes(codes: Codes, idx: np.ndarray) -> Codes:
    return {k: v[idx] for k, v in codes.items()}


def concat_codes(a: Codes, b: Codes) -> Codes:
    return {k: np.concatenate([a[k], b[k]]) for k in a}


