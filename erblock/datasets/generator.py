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

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from erblock.datasets.fields import (
    FIELDS,
    Codes,
    Field,
    char_edits,
    concat_codes,
    drop_token,
    subset_codes,
)
from erblock.datasets.loaders import within_group_pairs
from erblock.datasets.structure import (
    MISSING,
    NOISE,
    VALUES,
    R,
    S,
    Skew,
    Spec,
    block_shares,
    dedupe_structure,
    link_structure,
    rng_for,
)
from erblock.scalars import is_number

__all__ = ["block_shares", "columns_of", "generate"]

# 64-bit offsets: a partition's text column may exceed 2 GiB
_PA_STR = pa.large_string()

def columns_of(kind: str = "person") -> list[str]:
    """Column names of generated records of ``kind`` (the index is ``id``)."""
    _check_choice("kind", kind, FIELDS)
    return [f.name for f in FIELDS[kind]] + ["block_key", "entity_id"]


# --------------------------------------------------------------------------- partitions


def _column(
    field: Field,
    codes: Codes,
    entity: np.ndarray,
    noisy: np.ndarray,
    spec: Spec,
    noise: np.random.Generator,
    missing: np.random.Generator,
) -> pd.Series | pd.arrays.IntegerArray:
    """Values of one field for records of ``entity``, with errors in ``noisy`` records."""
    m = entity.size
    dup = np.flatnonzero(noisy)
    rec = subset_codes(codes, entity)
    if field.tokens:
        drop = dup[noise.random(dup.size) < spec.token_drop_rate]
        dropped = drop_token(subset_codes(rec, drop), noise)
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
        new = char_edits(values.take(pa.array(edit)), noise, field.alphabet, field.edits)
        values = pc.replace_with_mask(values, pa.array(mask), new)
    if gone.any():
        values = pc.if_else(pa.array(gone), pa.scalar(None, _PA_STR), values)
    return pd.Series(values, dtype="str")


def _frame(
    fields: Sequence[Field],
    struct: dict[str, np.ndarray],
    codes_of: Callable[[int, Field], Codes],
    spec: Spec,
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
                rng_for(spec, part, side, NOISE, i),
                rng_for(spec, part, side, MISSING, i),
            )
            data[f.name] = col.array if isinstance(col, pd.Series) else col
    data["block_key"] = struct["block_key"]
    data["entity_id"] = struct["entity_id"]
    index = pd.Index(struct["ids"], dtype="int64", name="id")
    return pd.DataFrame({c: data[c] for c in wanted}, index=index)


def _dedupe_part(part: int, spec: Spec, columns: Sequence[str] | None = None) -> pd.DataFrame:
    st = dedupe_structure(spec, part)
    n_ent = int(st["n_entities"])
    return _frame(
        FIELDS[spec.kind],
        st,
        lambda i, f: f.draw(rng_for(spec, part, R, VALUES, i), n_ent),
        spec,
        part,
        R,
        columns,
    )


def _link_part(
    part: int, spec: Spec, side: str, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    st = link_structure(spec, part)
    m = spec.sizes[part]
    if side == "r":
        r = dict(st["r"], entity=np.arange(m))
        return _frame(
            FIELDS[spec.kind],
            r,
            lambda i, f: f.draw(rng_for(spec, part, R, VALUES, i), m),
            spec,
            part,
            R,
            columns,
        )
    s = st["s"]
    src = s["src"]

    def codes(i: int, f: Field) -> Codes:
        # S entities = the copied R entities (same codes as in df_r) + fresh S entities
        r_codes = subset_codes(f.draw(rng_for(spec, part, R, VALUES, i), m), src)
        return concat_codes(r_codes, f.draw(rng_for(spec, part, S, VALUES, i), m - src.size))

    return _frame(FIELDS[spec.kind], s, codes, spec, part, S, columns)


def _truth_part(part: int, spec: Spec) -> pd.DataFrame:
    if spec.task == "dedupe":
        st = dedupe_structure(spec, part)
        rank = np.arange(st["ids"].size)  # ids increase with the row
        left, right = within_group_pairs(rank, st["entity"])
        left, right = st["ids"][left], st["ids"][right]
    else:
        s = link_structure(spec, part)["s"]
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
    if not (is_number(value) and 0.0 <= value <= 1.0):
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
        character insert, delete, substitute or transpose (dob and zip: a digit substituted
        or two characters transposed, at any position: a date's hyphen too, so some typo
        dates are no dates, ``1956411-23``; year: +-1). Originals and ``df_r`` are clean.
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
    _check_choice("kind", kind, FIELDS)
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
    spec = Spec(
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


def _lazy(spec: Spec, makers: list[Callable[..., pd.DataFrame]]) -> tuple[Any, ...]:
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
