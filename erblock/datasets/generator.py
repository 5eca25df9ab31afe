"""Synthetic records with ground truth and a block key of controlled skew.

Why: load balancing only matters when blocks are skewed, and quality only means something
with ground truth. :func:`generate` gives both at any scale: person-like or title-like
records with realistic errors in duplicates, a ``block_key`` column whose block sizes follow
an exponential or Zipf law (the skews of papers 003/004), and the true pairs.

How it stays exact and fast:

- **Skew.** Every record's ``block_key`` has marginal distribution ``block_shares(n_blocks,
  skew)`` exactly: originals draw it i.i.d.; a duplicate copies the key of a uniformly chosen
  original, whose key has that same distribution; a "key error" redraws it from the same
  distribution. So block ``k`` holds ``n * share[k]`` records in expectation.
- **Truth.** Duplicates share their entity's ``block_key`` (unless ``key_error_rate > 0``),
  so every true pair lies inside one block and blocking on ``block_key`` has pair
  completeness 1.
- **Speed.** Everything is vectorised with numpy and pyarrow (vocabulary takes, list
  joins); character edits touch only the few noisy values. No Python loop per record.
- **Scale.** With ``npartitions``, each partition is generated on a worker by
  ``dask.dataframe.from_map`` from its own seed ``SeedSequence(seed, spawn_key=(i, ...))``;
  entities never span partitions, ids are ``partition offset + row``, and nothing is built
  on the client. ``npartitions=1`` gives exactly the pandas result.

Columns (index ``id``, ``int64``, unique; for link, ``df_s`` ids start at ``n``):

- ``kind="person"``: ``first_name``, ``surname``, ``dob`` (``"YYYY-MM-DD"``), ``city``,
  ``zip`` (5 digits, as text; independent of ``city``),
- ``kind="title"``: ``title``, ``authors`` (``"First Last, First Last"``), ``year``
  (nullable ``Int64``), ``venue``,
- then ``block_key`` (``int64`` in ``[0, n_blocks)``, block 0 the largest) and ``entity_id``
  (``int64``: the smallest record id of the entity, across ``df_r`` and ``df_s`` for link).
  ``entity_id`` is ground truth: never compare on it.

Text columns have pandas' ``str`` dtype (Arrow-backed); missing values are NaN (``<NA>``
for ``year``). On the dask path, dask converts text columns to its ``string`` dtype
(missing values ``<NA>``); the values are the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from importlib import resources
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from erblock.datasets.loaders import within_group_pairs

__all__ = ["block_shares", "columns_of", "generate"]

Skew = tuple[str, float] | None
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
class _Field:
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


_FIELDS: dict[str, tuple[_Field, ...]] = {
    "person": (
        _Field("first_name", _draw_index(_zipf_weights(len(_FIRST))), _render_index(_FIRST_VOCAB)),
        _Field(
            "surname",
            _draw_index(_zipf_weights(len(_SURNAMES), 0.6)),
            _render_index(_SURNAME_VOCAB),
        ),
        _Field("dob", _draw_dob, _render_dob, _DIGITS, ("substitute", "transpose")),
        _Field("city", _draw_index(_zipf_weights(len(_CITIES))), _render_index(_CITY_VOCAB)),
        _Field("zip", _draw_zip, _render_zip, _DIGITS, ("substitute", "transpose")),
    ),
    "title": (
        _Field("title", _draw_title, _render_title, tokens=True),
        _Field("authors", _draw_authors, _render_authors, tokens=True),
        _Field("year", _draw_year, lambda c: c["y"], numeric=True),
        _Field("venue", _draw_index(_zipf_weights(len(_VENUES))), _render_index(_VENUE_VOCAB)),
    ),
}


def columns_of(kind: str = "person") -> list[str]:
    """Column names of generated records of ``kind`` (the index is ``id``)."""
    _check_choice("kind", kind, _FIELDS)
    return [f.name for f in _FIELDS[kind]] + ["block_key", "entity_id"]


# --------------------------------------------------------------------------- errors


def _char_edits(
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


def _drop_token(codes: Codes, rng: np.random.Generator) -> Codes:
    """Remove one random token from rows with at least two tokens."""
    t, lens = codes["t"], codes["len"]
    j = (rng.random(lens.size) * lens).astype(np.int64)
    j = np.where(lens > 1, j, t.shape[1])  # no drop for single tokens
    cols = np.arange(t.shape[1])[None, :]
    src = np.minimum(cols + (cols >= j[:, None]), t.shape[1] - 1)
    return {"t": np.take_along_axis(t, src, axis=1), "len": np.where(lens > 1, lens - 1, lens)}


def _subset(codes: Codes, idx: np.ndarray) -> Codes:
    return {k: v[idx] for k, v in codes.items()}


def _concat(a: Codes, b: Codes) -> Codes:
    return {k: np.concatenate([a[k], b[k]]) for k in a}


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class _Spec:
    """Everything a worker needs to build one partition (small, picklable)."""

    kind: str
    task: str
    n_blocks: int
    skew: Skew
    dup_rate: float
    typo_rate: float
    token_drop_rate: float
    missing_rate: float
    key_error_rate: float
    seed: int
    sizes: tuple[int, ...]  # records per partition (each side, for link)

    @property
    def n(self) -> int:
        return sum(self.sizes)

    def offset(self, part: int) -> int:
        return sum(self.sizes[:part])

    def shares(self) -> np.ndarray:
        # recomputed on the worker: millions of blocks must not travel in the graph
        return block_shares(self.n_blocks, self.skew)


# Stream ids: SeedSequence(seed, spawn_key=(partition, side, purpose, field)), so each
# field's values do not depend on which other columns are built.
_R, _S = 0, 1
_STRUCT, _VALUES, _NOISE, _MISSING = 0, 1, 2, 3


def _rng(spec: _Spec, part: int, side: int, purpose: int, field: int = 0) -> np.random.Generator:
    return np.random.default_rng(
        np.random.SeedSequence(spec.seed, spawn_key=(part, side, purpose, field))
    )


def block_shares(n_blocks: int, skew: Skew = ("exp", 0.5)) -> np.ndarray:
    """Target share of records in each block: the ``block_key`` distribution of :func:`generate`.

    ``("exp", s)``: share of block ``k`` ∝ ``exp(-s*k)``; ``("zipf", a)``: ∝ ``(k+1)**-a``;
    ``None``: uniform. ``k = 0 .. n_blocks-1``; block 0 is the largest.
    """
    if not isinstance(n_blocks, (int, np.integer)) or n_blocks < 1:
        raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}")
    k = np.arange(n_blocks, dtype=np.float64)
    if skew is None:
        w = np.ones(n_blocks)
    else:
        if not (isinstance(skew, (tuple, list)) and len(skew) == 2 and skew[0] in ("exp", "zipf")):
            raise ValueError(f"skew must be None, ('exp', s) or ('zipf', alpha), got {skew!r}")
        law, a = skew
        if isinstance(a, bool) or not isinstance(a, (int, float, np.number)):
            raise ValueError(f"skew parameter must be a finite number >= 0, got {skew!r}")
        if not np.isfinite(a) or a < 0:
            raise ValueError(f"skew parameter must be a finite number >= 0, got {skew!r}")
        w = np.exp(-float(a) * k) if law == "exp" else (k + 1) ** -float(a)
    return w / w.sum()


# --------------------------------------------------------------------------- structure


def _dedupe_structure(spec: _Spec, part: int) -> dict[str, np.ndarray]:
    """Who is a duplicate of whom, and block keys, for one dedupe partition."""
    m = spec.sizes[part]
    rng = _rng(spec, part, _R, _STRUCT)
    p = spec.shares()
    n_dup = int(round(m * spec.dup_rate))
    n_orig = m - n_dup
    if m and not n_orig:  # at least one original to copy from
        n_orig, n_dup = 1, m - 1
    orig_key = rng.choice(p.size, size=n_orig, p=p)
    src = rng.integers(0, max(n_orig, 1), size=n_dup)
    entity = np.r_[np.arange(n_orig), src]
    key = orig_key[entity]
    is_dup = np.r_[np.zeros(n_orig, bool), np.ones(n_dup, bool)]
    err = is_dup & (rng.random(m) < spec.key_error_rate)
    key[err] = rng.choice(p.size, size=int(err.sum()), p=p)
    perm = rng.permutation(m)  # row r holds record perm[r]: duplicates are not at the end
    ids = spec.offset(part) + np.arange(m, dtype=np.int64)
    entity = entity[perm]
    first = np.unique(entity, return_index=True)[1]  # rows are in id order: first = min id
    return {
        "ids": ids,
        "entity": entity,
        "n_entities": np.int64(n_orig),
        "noisy": is_dup[perm],
        "block_key": key[perm].astype(np.int64),
        "entity_id": ids[first][entity],
    }


def _link_structure(spec: _Spec, part: int) -> dict[str, dict[str, np.ndarray]]:
    """R records and S records (copies of distinct R records plus fresh ones)."""
    m = spec.sizes[part]
    p = spec.shares()
    rng_r, rng_s = _rng(spec, part, _R, _STRUCT), _rng(spec, part, _S, _STRUCT)
    r_ids = spec.offset(part) + np.arange(m, dtype=np.int64)
    s_ids = spec.n + r_ids
    r_key = rng_r.choice(p.size, size=m, p=p).astype(np.int64)
    n_copy = int(round(m * spec.dup_rate))
    src = rng_s.choice(m, size=n_copy, replace=False)  # R rows copied into S
    fresh = m - n_copy
    key = np.r_[r_key[src], rng_s.choice(p.size, size=fresh, p=p)].astype(np.int64)
    is_copy = np.r_[np.ones(n_copy, bool), np.zeros(fresh, bool)]
    err = is_copy & (rng_s.random(m) < spec.key_error_rate)
    key[err] = rng_s.choice(p.size, size=int(err.sum()), p=p)
    perm = rng_s.permutation(m)
    # S entities: 0..n_copy-1 are the copied R rows, n_copy.. are fresh S entities
    s_entity = np.arange(m)[perm]
    is_copy = is_copy[perm]
    r_of = np.full(m, -1, dtype=np.int64)  # the copied R row, -1 for fresh records
    r_of[is_copy] = src[s_entity[is_copy]]
    return {
        "r": {
            "ids": r_ids,
            "block_key": r_key,
            "entity_id": r_ids,
            "noisy": np.zeros(m, bool),
        },
        "s": {
            "ids": s_ids,
            "entity": s_entity,
            "block_key": key[perm],
            "entity_id": np.where(is_copy, r_ids[np.maximum(r_of, 0)], s_ids),
            "noisy": is_copy,
            "src": src,
            "r_of": r_of,
        },
    }


# --------------------------------------------------------------------------- partitions


def _column(
    field: _Field,
    codes: Codes,
    entity: np.ndarray,
    noisy: np.ndarray,
    spec: _Spec,
    noise: np.random.Generator,
    missing: np.random.Generator,
) -> pd.Series | pd.arrays.IntegerArray:
    """Values of one field for records of ``entity``, with errors in ``noisy`` records."""
    m = entity.size
    dup = np.flatnonzero(noisy)
    rec = _subset(codes, entity)
    if field.tokens:
        drop = dup[noise.random(dup.size) < spec.token_drop_rate]
        dropped = _drop_token(_subset(rec, drop), noise)
        for k in rec:
            rec[k][drop] = dropped[k]
    values = field.render(rec)
    edit = dup[noise.random(dup.size) < spec.typo_rate]
    gone = missing.random(m) < spec.missing_rate
    if field.numeric:  # off by one, never equal
        values = values.astype(np.int64)
        values[edit] += noise.choice(np.array([-1, 1]), size=edit.size)
        return pd.arrays.IntegerArray(values, gone)
    if edit.size:
        mask = np.zeros(m, bool)
        mask[edit] = True
        new = _char_edits(values.take(pa.array(edit)), noise, field.alphabet, field.edits)
        values = pc.replace_with_mask(values, pa.array(mask), new)
    if gone.any():
        values = pc.if_else(pa.array(gone), pa.scalar(None, _PA_STR), values)
    return pd.Series(values, dtype="str")


def _frame(
    fields: Sequence[_Field],
    struct: dict[str, np.ndarray],
    codes_of: Callable[[int, _Field], Codes],
    spec: _Spec,
    part: int,
    side: int,
    columns: Sequence[str] | None,
) -> pd.DataFrame:
    data: dict[str, Any] = {}
    wanted = columns_of(spec.kind) if columns is None else list(columns)
    for i, f in enumerate(fields):
        if f.name in wanted:
            col = _column(
                f,
                codes_of(i, f),
                struct["entity"],
                struct["noisy"],
                spec,
                _rng(spec, part, side, _NOISE, i),
                _rng(spec, part, side, _MISSING, i),
            )
            data[f.name] = col.array if isinstance(col, pd.Series) else col
    data["block_key"] = struct["block_key"]
    data["entity_id"] = struct["entity_id"]
    index = pd.Index(struct["ids"], dtype="int64", name="id")
    return pd.DataFrame({c: data[c] for c in wanted}, index=index)


def _dedupe_part(part: int, spec: _Spec, columns: Sequence[str] | None = None) -> pd.DataFrame:
    st = _dedupe_structure(spec, part)
    n_ent = int(st["n_entities"])
    return _frame(
        _FIELDS[spec.kind],
        st,
        lambda i, f: f.draw(_rng(spec, part, _R, _VALUES, i), n_ent),
        spec,
        part,
        _R,
        columns,
    )


def _link_part(
    part: int, spec: _Spec, side: str, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    st = _link_structure(spec, part)
    m = spec.sizes[part]
    if side == "r":
        r = dict(st["r"], entity=np.arange(m))
        return _frame(
            _FIELDS[spec.kind],
            r,
            lambda i, f: f.draw(_rng(spec, part, _R, _VALUES, i), m),
            spec,
            part,
            _R,
            columns,
        )
    s = st["s"]
    src = s["src"]

    def codes(i: int, f: _Field) -> Codes:
        # S entities = the copied R entities (same codes as in df_r) + fresh S entities
        r_codes = _subset(f.draw(_rng(spec, part, _R, _VALUES, i), m), src)
        return _concat(r_codes, f.draw(_rng(spec, part, _S, _VALUES, i), m - src.size))

    return _frame(_FIELDS[spec.kind], s, codes, spec, part, _S, columns)


def _truth_part(part: int, spec: _Spec) -> pd.DataFrame:
    if spec.task == "dedupe":
        st = _dedupe_structure(spec, part)
        rank = np.arange(st["ids"].size)  # ids increase with the row
        left, right = within_group_pairs(rank, st["entity"])
        left, right = st["ids"][left], st["ids"][right]
    else:
        s = _link_structure(spec, part)["s"]
        rows = np.flatnonzero(s["noisy"])
        left = spec.offset(part) + s["r_of"][rows]
        right = s["ids"][rows]
        o = np.lexsort((right, left))
        left, right = left[o], right[o]
    return pd.DataFrame({"left_id": left.astype(np.int64), "right_id": right.astype(np.int64)})


# --------------------------------------------------------------------------- public


def _check_choice(name: str, value: object, options: Sequence[str] | dict) -> None:
    if value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}")


def _check_rate(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


def generate(
    n: int,
    *,
    kind: Literal["person", "title"] = "person",
    task: Literal["dedupe", "link"] = "dedupe",
    n_blocks: int = 100,
    skew: Skew = ("exp", 0.5),
    dup_rate: float = 0.2,
    typo_rate: float = 0.2,
    token_drop_rate: float = 0.1,
    missing_rate: float = 0.01,
    key_error_rate: float = 0.0,
    seed: int = 0,
    npartitions: int | None = None,
) -> tuple[Any, ...]:
    """Synthetic records with ground truth and a ``block_key`` of controlled skew.

    Parameters
    ----------
    n
        Records in ``df`` (dedupe), or in each of ``df_r`` and ``df_s`` (link).
    kind
        ``"person"`` (first_name, surname, dob, city, zip) or ``"title"`` (title, authors,
        year, venue). See the module docstring for the exact columns and dtypes.
    task
        ``"dedupe"`` returns ``(df, truth)``; ``"link"`` returns ``(df_r, df_s, truth)``.
    n_blocks, skew
        ``block_key`` takes values ``0 .. n_blocks-1`` with shares
        :func:`block_shares` ``(n_blocks, skew)`` in expectation: ``("exp", s)``,
        ``("zipf", alpha)`` or ``None`` (uniform).
    dup_rate
        Dedupe: share of records that are duplicates of an original (each picks an original
        uniformly, so entities have 1, 2, 3, ... records). Link: share of ``df_s`` records
        that are copies of distinct ``df_r`` records; the rest of ``df_s`` is unrelated.
    typo_rate
        Probability that a field of a duplicate (link: of a copy) gets one error: a
        character insert, delete, substitute or transpose (dob and zip: substitute or
        transpose of digits; year: +-1). Originals and ``df_r`` are clean.
    token_drop_rate
        Probability that a duplicate's ``title`` / ``authors`` loses one token / author.
    missing_rate
        Probability that any field value of any record is missing.
    key_error_rate
        Probability that a duplicate's ``block_key`` is redrawn (from the same shares), so
        that some true pairs cross blocks. 0 by default: every true pair is in one block.
    seed
        Everything is a function of ``seed`` (and ``npartitions``).
    npartitions
        ``None``: pandas frames. Otherwise dask DataFrames of ``npartitions`` partitions
        built lazily on the workers with ``dask.dataframe.from_map``, truth included (a
        dask DataFrame too). Partition ``i`` holds ids ``offset_i .. offset_i + n_i - 1``
        (known divisions); ``npartitions=1`` computes to the pandas result.

    Truth: ``left_id``, ``right_id`` (``int64``). Dedupe: every pair of records of one
    entity, ``left_id < right_id``, sorted. Link: ``(df_r id, df_s id)`` of each copy,
    sorted. ``df_s`` ids are ``n .. 2n-1`` so the two id spaces never collide.
    """
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    _check_choice("kind", kind, _FIELDS)
    _check_choice("task", task, ("dedupe", "link"))
    for name, rate in [
        ("dup_rate", dup_rate),
        ("typo_rate", typo_rate),
        ("token_drop_rate", token_drop_rate),
        ("missing_rate", missing_rate),
        ("key_error_rate", key_error_rate),
    ]:
        _check_rate(name, rate)
    if npartitions is not None and (
        not isinstance(npartitions, (int, np.integer)) or npartitions < 1
    ):
        raise ValueError(f"npartitions must be None or an integer >= 1, got {npartitions!r}")
    block_shares(n_blocks, skew)  # validates n_blocks and skew
    p = max(int(npartitions or 1), 1)
    sizes = tuple(int(n) // p + (1 if i < int(n) % p else 0) for i in range(p))
    spec = _Spec(
        kind=kind,
        task=task,
        n_blocks=int(n_blocks),
        skew=None if skew is None else (str(skew[0]), float(skew[1])),
        dup_rate=float(dup_rate),
        typo_rate=float(typo_rate),
        token_drop_rate=float(token_drop_rate),
        missing_rate=float(missing_rate),
        key_error_rate=float(key_error_rate),
        seed=int(seed),
        sizes=sizes,
    )
    if task == "dedupe":
        makers = [_dedupe_part]
    else:
        makers = [partial(_link_part, side="r"), partial(_link_part, side="s")]
    if npartitions is None:
        return (*(f(0, spec) for f in makers), _truth_part(0, spec))
    return _lazy(spec, makers)


def _lazy(spec: _Spec, makers: list[Callable[..., pd.DataFrame]]) -> tuple[Any, ...]:
    import dask.dataframe as dd

    empty = replace(spec, sizes=(0,))
    out = []
    for side, make in enumerate(makers):
        base = spec.n * side  # df_s ids start at n
        divisions = None
        if all(spec.sizes):
            starts = [base + spec.offset(i) for i in range(len(spec.sizes))]
            divisions = (*starts, base + spec.n - 1)
        out.append(
            dd.from_map(
                make,
                range(len(spec.sizes)),
                spec=spec,
                meta=make(0, empty),
                divisions=divisions,
                label=f"erblock-generate-{spec.kind}",
            )
        )
    out.append(
        dd.from_map(
            _truth_part,
            range(len(spec.sizes)),
            spec=spec,
            meta=_truth_part(0, empty),
            label="erblock-generate-truth",
        )
    )
    return tuple(out)
