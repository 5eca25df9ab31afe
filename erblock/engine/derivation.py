"""Which compared columns a ready-made key column was made from, measured on a sample of
each input before a model is trained (see :mod:`erblock.blocking.derived`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask.dataframe as dd
import pandas as pd
from distributed import Client

from ..blocking.derived import SAMPLE, Derivation, derivation
from ..blocking.keys import Column, KeySpec
from .job import Job


def _sample(client: Client, df: Any, columns: list[str]) -> pd.DataFrame:
    """Up to :data:`SAMPLE` records of ``columns``: drawn at random from a pandas frame, the
    first ones of a Dask frame (its first partitions; nothing else is computed)."""
    if isinstance(df, dd.DataFrame):
        return client.compute(df[columns].head(SAMPLE, npartitions=-1, compute=False)).result()
    if len(df) > SAMPLE:
        df = df.sample(n=SAMPLE, random_state=0)
    return df[columns]


def _pooled(parts: Sequence[Derivation]) -> Derivation:
    n = sum(d.n for d in parts)
    if not n:
        return Derivation(0.0, 0.0, 0)
    return Derivation(sum(d.share * d.n for d in parts) / n,
                      sum(d.chance * d.n for d in parts) / n, n)


def derived_keys(client: Client, job: Job, frames: Sequence[Any]
                 ) -> tuple[tuple[KeySpec, ...], dict[int, list[str]]]:
    """``job.keys`` with every ready-made key column (:class:`Column`) also naming the
    compared columns its values were cut from (``derived_from``), and those found, by
    pass. Declared ``derived_from`` columns are kept; a key column that is itself compared
    is read by its comparison already."""
    passes = [p for p, k in enumerate(job.keys) if type(k) is Column]
    if not passes or not job.comparisons:
        return job.keys, {}
    wanted = []
    for src, df in enumerate(frames):
        cols = {job.keys[p].columns[0] for p in passes}
        cols |= {c.right_column if src == 1 else c.column for c in job.comparisons}
        wanted.append(sorted(c for c in cols if c in df.columns))
    samples = [_sample(client, df, cols) for df, cols in zip(frames, wanted)]
    keys = list(job.keys)
    found: dict[int, list[str]] = {}
    for p in passes:
        key = keys[p]
        assert isinstance(key, Column)
        new = []
        for c in job.comparisons:
            if key.column in (c.column, c.right_column) or c.column in key.derived_from:
                continue
            per_source = [derivation(s[key.column], s[c.right_column if src == 1 else c.column])
                          for src, s in enumerate(samples)
                          if key.column in s and (c.right_column if src == 1 else c.column) in s]
            if _pooled(per_source).derived:
                new.append(c.column)
        if new:
            found[p] = new
            keys[p] = Column(key.column, (*key.derived_from, *new))
    return tuple(keys), found
