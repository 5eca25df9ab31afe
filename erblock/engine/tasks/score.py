"""A scoring model's phases on the workers (see :mod:`erblock.matchers.scoring.base`).

Phase 1: a reduce task's pairs are kept in worker memory (:class:`KeptTask`, a Dask
future) and only :func:`summarize_kept` — the model's small summary — goes to the
client; :func:`random_summaries` compares all pairs of a record sample (random pairs,
prepared once per run by :func:`prepare_sample`) in row ranges (:func:`row_ranges`) and
summarises them with the model. Phase 2
(:func:`score_pairs`): the fitted model scores kept pairs where they are and the run's
threshold applies to the model's decision column.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...matchers.comparisons import Comparison
from ...matchers.methods import Prepared
from ...matchers.scoring.base import ScoringModel, model_columns
from .encoded import Encoded, block_encoding, prepare_columns
from .keysets import first_shared


def held_bytes(arrays: Iterable[Any]) -> int:
    """About the bytes that arrays (numpy, pandas, arrow-backed) hold, each counted once:
    an object array's values are sized from a sample of 64, as ``dask.sizeof`` does (the
    worker tasks do not import Dask)."""
    total, seen = 0, set()
    for a in arrays:
        if id(a) in seen:
            continue
        seen.add(id(a))
        total += int(getattr(a, "nbytes", 0))
        if isinstance(a, np.ndarray) and a.dtype.kind == "O" and a.size:
            flat = a.ravel()
            sample = flat[:: max(1, len(flat) // 64)][:64]
            total += int(len(flat) * np.mean([sys.getsizeof(v) for v in sample]))
    return total


def _frame_arrays(df: pd.DataFrame) -> list[Any]:
    """A frame's index and columns as arrays :func:`held_bytes` sizes: numpy-backed ones
    (objects, python strings) as their numpy arrays, the rest (arrow, datetimes) as they
    are held."""
    index = df.index  # as it is: a RangeIndex holds three numbers
    held: list[Any] = [index.to_numpy() if index.dtype == np.dtype(object) else index]
    for k in df.columns:
        col = df[k]
        numpy_backed = isinstance(col.array, pd.arrays.NumpyExtensionArray)
        held.append(col.to_numpy() if numpy_backed else col.array)
    return held


@dataclass
class KeptTask:
    """One reduce task's candidate pairs, kept in worker memory between the two phases."""

    pairs: pd.DataFrame
    stats: dict[str, Any]

    def __sizeof__(self) -> int:
        # what Dask's memory accounting counts for the future (its sizeof falls back to
        # sys.getsizeof, which sees the object alone, not the frame it holds)
        return held_bytes(_frame_arrays(self.pairs)) + sys.getsizeof(self.stats)


def summarize_kept(kept: KeptTask, model: ScoringModel) -> Any:
    """What phase 1 sends to the client: the model's summary of the task's pairs."""
    return model.summarize(kept.pairs)


def score_pairs(pairs: pd.DataFrame, model: ScoringModel, threshold: float | None,
                examples: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """Score pairs with ``model`` and keep those whose decision column reaches
    ``threshold`` (the model's internal columns are dropped); ``examples`` collects the
    model's examples of the scored pairs."""
    if len(pairs) == 0:
        out = pairs.drop(columns=model_columns(pairs))
        if model.decision != "score":
            out = out.assign(match_weight=np.zeros(0), match_probability=np.zeros(0))
        return out
    out = model.apply(pairs)
    out = out.drop(columns=model_columns(out))
    if examples is not None:
        examples += model.examples(pairs.assign(match_weight=out["match_weight"].to_numpy(),
                                                match_probability=out["match_probability"]
                                                .to_numpy()))
    if threshold is not None:
        out = out[out[model.decision].to_numpy(np.float64, na_value=np.nan) >= threshold
                  ].reset_index(drop=True)
    return out


@dataclass
class PreparedSample:
    """A record sample with every compared column prepared once (and dictionary-encoded,
    :func:`.encoded.encode`), shared by all random-pair tasks of a run: preparing (dates
    parsed, texts tokenised) cost each task as much as half its comparisons."""

    frame: pd.DataFrame  # the sampled records (:func:`.keysets.first_shared` reads keys)
    columns: list[Prepared]
    encoded: list[Encoded | None]

    def __len__(self) -> int:
        return len(self.frame)

    def __sizeof__(self) -> int:
        # as KeptTask's; comparisons that share a prepared column count it once
        arrays = _frame_arrays(self.frame)
        for p, e in zip(self.columns, self.encoded):
            arrays += [p.values, p.missing]
            if e is not None:
                arrays += [e.codes, e.uniques.values, e.uniques.missing]
        return held_bytes(arrays)


def prepare_sample(sample: pd.DataFrame, comparisons: Sequence[Comparison],
                   value_columns: Sequence[str], mode: str = "auto") -> PreparedSample:
    """Prepare and encode the compared columns of a record sample (one task per source;
    ``mode`` as the run's ``encode=`` option: "never" encodes none). Comparisons of one
    column whose methods prepare it alike share one preparation, as a reduce task's
    :class:`.sides.Side` does."""
    sample = sample.reset_index(drop=True)
    return PreparedSample(sample, *prepare_columns(sample, comparisons, value_columns, mode))


def random_summaries(left: PreparedSample, right: PreparedSample | None,
                     comparisons: Sequence[Comparison], model: ScoringModel,
                     cell_budget: int, rows: tuple[int, int] | None = None,
                     n_passes: int = 1, windows: Sequence[int] = (),
                     mode: str = "auto") -> list[Any]:
    """The model's summaries of all pairs of sampled records, chunk by chunk.

    Dedupe (``right`` None): pairs i < j of ``left``; link: ``left`` × ``right``. Only
    left rows ``rows = (start, stop)`` when given (so several tasks share the work). Each
    chunk holds at most ``cell_budget`` pairs. A comparison whose distinct values are few
    against the task's pairs (names, cities, codes) is computed once per distinct value
    pair and gathered by code (:func:`.encoded.block_encoding`: the same values, bit for
    bit; ``mode`` as the run's ``encode=`` option). Those distinct-pair matrices are made
    once per task, each of at most a quarter of the task's pairs ("always": any size) and
    of ``min(cell_budget, ENCODE_MAX_CELLS)`` cells. With several key passes the model
    also learns the first pass each pair agrees on (:func:`.keysets.first_shared`;
    ``windows``: each sorted-neighbourhood pass's window, 0 for other passes).
    """
    dedupe = right is None
    other = left if right is None else right
    nl, nr = len(left), len(other)
    out: list[Any] = []
    if nl == 0 or nr == 0:
        return out
    start, stop = (0, nl) if rows is None else (max(0, rows[0]), min(nl, rows[1]))
    lo = start + 1 if dedupe else 0  # the first column any row of the task meets
    if start >= stop or lo >= nr:
        return out
    codes = block_encoding(left.encoded, other.encoded, start, stop, lo, nr, dedupe,
                           comparisons, None, always=mode == "always",
                           cell_budget=cell_budget)
    chunk = max(1, cell_budget // nr)
    for a in range(start, stop, chunk):
        b = min(a + chunk, stop)
        c0 = a + 1 if dedupe else 0
        if c0 >= nr:
            break
        mask = np.arange(c0, nr)[None, :] > np.arange(a, b)[:, None] if dedupe else None
        n = int(mask.sum()) if mask is not None else (b - a) * (nr - c0)
        # one float64 row per comparison, filled once: the frame below is a view of it
        # (a frame built from separate arrays copies them all into one block)
        block = np.empty((len(comparisons), n))
        for k, c in enumerate(comparisons):
            coded = codes[k]
            mat = (coded.gather(a - start, b - start, c0 - lo, nr - lo) if coded is not None
                   else c.matrix(left.columns[k].take(slice(a, b)),
                                 other.columns[k].take(slice(c0, nr))))
            block[k] = (mat if mask is None else mat[mask]).ravel()
        sims = pd.DataFrame(block.T, columns=[c.name for c in comparisons], copy=False)
        first = first_shared(left.frame, None if dedupe else other.frame, n_passes, windows,
                             slice(a, b), slice(c0, nr))
        if first is None:
            out.append(model.summarize_random(sims))
        else:
            found = (first if mask is None else first[mask]).ravel()
            out.append(model.summarize_random(sims, first=found))
    return out


def row_ranges(n_left: int, n_right: int | None, n_tasks: int) -> list[tuple[int, int]]:
    """Split the left sample rows into ``n_tasks`` ranges of about equal pair counts.

    Link: equal row counts. Dedupe: row ``i`` pairs with ``n − 1 − i`` later rows, so the
    cuts are placed on the cumulative triangle.
    """
    n_tasks = max(1, min(n_tasks, n_left))
    if n_left == 0:
        return []
    if n_right is not None:
        cuts = np.linspace(0, n_left, n_tasks + 1).round().astype(int)
    else:
        work = np.cumsum(np.arange(n_left - 1, -1, -1, dtype=np.float64))
        total = work[-1] if len(work) else 0.0
        targets = np.linspace(0, total, n_tasks + 1)[1:-1]
        cuts = np.r_[0, np.searchsorted(work, targets) + 1, n_left]
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
