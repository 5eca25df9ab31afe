"""Which compared columns a ready-made key column was made from, measured on a sample of
each input before a model is trained (see :mod:`erblock.blocking.derived`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..blocking.derived import SAMPLE, Derivation, derivation_of, folded, pieces
from ..blocking.keys import Column, Composite, KeySpec
from .job import Job
from .local import Executor
from .tasks.dates import with_dates_read

SAMPLE_PARTITIONS = 8  #: partitions of a Dask input the sample is drawn from, at most


def _random_rows(part: pd.DataFrame, n: int) -> pd.DataFrame:
    return part.sample(n=n, random_state=0) if len(part) > n else part


def _sample(client: Executor, df: Any, columns: list[str]) -> pd.DataFrame:
    """Up to :data:`SAMPLE` records of ``columns``, drawn at random (seeded): from a pandas
    frame directly; from a Dask frame, from up to :data:`SAMPLE_PARTITIONS` partitions
    chosen at random, so that only those are computed and a frame sorted by some column
    is not judged on its first records alone."""
    if isinstance(df, dd.DataFrame):
        sub = df[columns]
        n = sub.npartitions
        chosen = sorted(np.random.default_rng(0).choice(
            n, size=min(n, SAMPLE_PARTITIONS), replace=False).tolist())
        per = -(-SAMPLE // len(chosen))
        part = sub.partitions[chosen].map_partitions(_random_rows, per, meta=sub._meta)
        return client.compute(part, sync=True)
    if len(df) > SAMPLE:
        df = df.sample(n=SAMPLE, random_state=0)
    return df[columns]


def _columns(key: KeySpec) -> list[Column]:
    """The ready-made key columns a pass reads: the key itself, or inside a composite, a
    sorted neighbourhood or a pruned key."""
    if type(key) is Column:
        return [key]
    if isinstance(key, Composite):
        return [c for part in key.parts for c in _columns(part)]
    inner = getattr(key, "key", None)
    return _columns(inner) if isinstance(inner, KeySpec) else []


def _with(key: KeySpec, new: dict[str, tuple[str, ...]]) -> KeySpec:
    """``key`` with each ready-made column in ``new`` also naming those columns in
    ``derived_from``."""
    if type(key) is Column:
        more = [c for c in new.get(key.column, ()) if c not in key.derived_from]
        return Column(key.column, (*key.derived_from, *more)) if more else key
    if isinstance(key, Composite):
        return dataclasses.replace(key, parts=tuple(_with(p, new) for p in key.parts))
    inner = getattr(key, "key", None)
    if isinstance(inner, KeySpec) and dataclasses.is_dataclass(key):
        return dataclasses.replace(key, key=_with(inner, new))  # type: ignore[arg-type]
    return key


def _pooled(parts: Sequence[Derivation]) -> Derivation:
    n = sum(d.n for d in parts)
    if not n:
        return Derivation(0.0, 0.0, 0)
    return Derivation(sum(d.share * d.n for d in parts) / n,
                      sum(d.chance * d.n for d in parts) / n, n)


def derived_keys(client: Executor, job: Job, frames: Sequence[Any],
                 dates_read: Sequence[Mapping[str, Sequence[str]]] = ()
                 ) -> tuple[tuple[KeySpec, ...], dict[int, list[str]]]:
    """``job.keys`` with every ready-made key column (:class:`Column`, alone or inside a
    composite, sorted-neighbourhood or pruned key) also naming the compared columns its
    values were cut from (``derived_from``), and those found, by pass. Declared
    ``derived_from`` columns are kept; a key column that is itself compared is read by its
    comparison already. ``dates_read``: per input, the date columns read in another order
    (:mod:`.dateorders`), so that the sample holds the dates the keys and comparisons
    read."""
    leaves = {p: _columns(k) for p, k in enumerate(job.keys)}
    leaves = {p: cols for p, cols in leaves.items() if cols}
    if not leaves or not job.comparisons:
        return job.keys, {}
    key_cols = {c.column for cols in leaves.values() for c in cols}
    wanted = []
    for src, df in enumerate(frames):
        read = key_cols | {c.right_column if src == 1 else c.column for c in job.comparisons}
        wanted.append(sorted(c for c in read if c in df.columns))
    samples = [_sample(client, df, cols) for df, cols in zip(frames, wanted)]
    if dates_read:
        samples = [with_dates_read(s, {c: f for c, f in read.items() if c in s.columns})
                   for s, read in zip(samples, dates_read, strict=True)]
    # every column of the samples folded once, every key column cut into pieces once
    texts = [{c: folded(s[c]) for c in s.columns} for s in samples]
    cut = [{c: pieces(t[c], is_folded=True) for c in key_cols if c in t} for t in texts]
    tested: dict[tuple[str, str, str], bool] = {}

    def is_derived(key_col: str, c: Any) -> bool:
        # a link's comparison reads one column on each side: both are part of what it is
        memo = (key_col, c.column, c.right_column)
        if memo not in tested:
            per_source = [derivation_of(cut[src][key_col], t[col])
                          for src, t in enumerate(texts)
                          for col in [c.right_column if src == 1 else c.column]
                          if key_col in t and col in t]
            tested[memo] = _pooled(per_source).derived
        return tested[memo]

    keys = list(job.keys)
    found: dict[int, list[str]] = {}
    for p, cols in leaves.items():
        new: dict[str, tuple[str, ...]] = {}
        for key in cols:
            names = dict.fromkeys(c.column for c in job.comparisons
                                  if key.column not in (c.column, c.right_column)
                                  and c.column not in key.derived_from
                                  and is_derived(key.column, c))
            if names:
                new[key.column] = tuple(names)
        if new:
            keys[p] = _with(keys[p], new)
            found[p] = list(dict.fromkeys(c for v in new.values() for c in v))
    return tuple(keys), found
