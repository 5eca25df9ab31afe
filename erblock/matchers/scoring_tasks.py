"""Worker-side functions of Fellegi-Sunter scoring (run inside Dask tasks by the engine).

Phase 1 (:func:`keep_task`): a reduce task's candidate pairs get their level vectors and
stay in worker memory as a :class:`KeptTask` (a Dask future); only
:func:`kept_histogram` — the task's pattern histogram, bounded by the number of level
vectors, not of pairs — goes to the client. Meanwhile :func:`sample_records` and
:func:`u_level_counts` count levels over random record pairs (for u), split into row
ranges by :func:`u_row_ranges`, and :func:`tf_counts` counts values for the
term-frequency adjustment. Phase 2 (:func:`score_kept`): the fitted model scores the kept
pairs and the threshold is applied, on the same worker. A fitted model scores in one phase
(:func:`score_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .comparisons import Comparison
from .levels import LevelSpec, PatternHistogram
from .scoring import TF_COLUMN

__all__ = [
    "KeptTask",
    "keep_task",
    "kept_histogram",
    "sample_records",
    "score_kept",
    "score_pairs",
    "sum_level_counts",
    "tf_counts",
    "tf_values_for",
    "u_level_counts",
    "u_row_ranges",
]


@dataclass
class KeptTask:
    """One reduce task's candidate pairs, kept in worker memory between the two phases."""

    pairs: pd.DataFrame
    gamma: np.ndarray
    radix: tuple[int, ...]
    stats: dict[str, Any]


def tf_values_for(pairs: pd.DataFrame, records: pd.DataFrame, value_col: str) -> np.ndarray:
    """The value of ``value_col`` of each pair's left record (looked up by record id)."""
    first = records.drop_duplicates("_erb_rid")
    index = pd.Index(first["_erb_id"].to_numpy())
    pos = index.get_indexer(pairs["left_id"].to_numpy())
    vals = first[value_col].to_numpy(dtype=object)
    out = np.empty(len(pairs), dtype=object)
    out[:] = None
    ok = pos >= 0
    out[ok] = vals[pos[ok]]
    return out


def keep_task(pairs: pd.DataFrame, stats: dict[str, Any], model: Any,
              tf_values: np.ndarray | None) -> KeptTask:
    """Phase 1 on a worker: level vectors of a task's pairs; pairs stay on the worker."""
    if tf_values is not None:
        pairs = pairs.assign(**{TF_COLUMN: tf_values})
    return KeptTask(pairs, model._gamma_of(pairs), model.radix, stats)


def kept_histogram(kept: KeptTask) -> PatternHistogram:
    """What phase 1 sends to the client: the task's pattern histogram, nothing else."""
    return PatternHistogram.from_gamma(kept.gamma, kept.radix)


def score_kept(kept: KeptTask, model: Any, threshold: float | None) -> pd.DataFrame:
    """Phase 2 on a worker: add ``match_weight``/``match_probability``, apply ``threshold``."""
    return score_pairs(kept.pairs, model, threshold)


def score_pairs(pairs: pd.DataFrame, model: Any, threshold: float | None) -> pd.DataFrame:
    """Score a frame of pairs with ``model`` and keep ``match_probability >= threshold``."""
    if len(pairs) == 0:
        out = pairs.drop(columns=[TF_COLUMN], errors="ignore").copy()
        out["match_weight"] = np.zeros(0)
        out["match_probability"] = np.zeros(0)
        return out
    out = model.apply(pairs)
    if threshold is not None:
        out = out[out["match_probability"].to_numpy() >= threshold].reset_index(drop=True)
    return out


def sample_records(part: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    """A deterministic sample of a prepared partition's records (one row per record)."""
    first = part.drop_duplicates("_erb_rid")
    if fraction >= 1.0:
        return first
    h = pd.util.hash_array(first["_erb_rid"].to_numpy(np.int64) ^ np.int64(seed),
                           categorize=False)
    return first[h < np.uint64(int(fraction * 2.0**64 - 1))]


def u_level_counts(left: pd.DataFrame, right: pd.DataFrame | None,
                   comparisons: Sequence[Comparison], value_columns: Sequence[str],
                   specs: Sequence[LevelSpec], cell_budget: int = 1 << 21,
                   rows: tuple[int, int] | None = None) -> tuple[list[np.ndarray], int]:
    """Level counts (index 0 = null) of all pairs of sampled records, and the pair count.

    Dedupe (``right`` None): pairs i < j of ``left``; link: ``left`` × ``right``. Only
    left rows ``rows = (start, stop)`` when given (so several tasks share the work). The
    product is computed in row chunks of at most ``cell_budget`` cells.
    """
    dedupe = right is None
    right = left if right is None else right
    counts = [np.zeros(s.n_levels + 1, dtype=np.int64) for s in specs]
    lv = [c.prepare(left[v].reset_index(drop=True)) for c, v in zip(comparisons, value_columns)]
    rv = [c.prepare(right[v].reset_index(drop=True)) for c, v in zip(comparisons, value_columns)]
    nl, nr = len(left), len(right)
    n_pairs = 0
    if nl == 0 or nr == 0:
        return counts, 0
    start, stop = (0, nl) if rows is None else (max(0, rows[0]), min(nl, rows[1]))
    chunk = max(1, cell_budget // nr)
    for a in range(start, stop, chunk):
        b = min(a + chunk, stop)
        c0 = a + 1 if dedupe else 0
        if c0 >= nr:
            break
        mask = None
        if dedupe:
            mask = np.arange(c0, nr)[None, :] > np.arange(a, b)[:, None]
        for k, (c, s) in enumerate(zip(comparisons, specs)):
            mat = c.matrix((lv[k][0][a:b], lv[k][1][a:b]), (rv[k][0][c0:], rv[k][1][c0:]))
            lev = s.levels(mat if mask is None else mat[mask])
            counts[k] += np.bincount(lev.ravel().astype(np.int64) + 1, minlength=s.n_levels + 1)
        n_pairs += int(mask.sum()) if mask is not None else (b - a) * (nr - c0)
    return counts, n_pairs


def u_row_ranges(n_left: int, n_right: int | None, n_tasks: int) -> list[tuple[int, int]]:
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


def sum_level_counts(parts: Sequence[tuple[list[np.ndarray], int]]
                     ) -> tuple[list[np.ndarray], int]:
    """Add up :func:`u_level_counts` results of several row ranges."""
    counts = [np.sum([p[0][k] for p in parts], axis=0) for k in range(len(parts[0][0]))]
    return counts, int(sum(p[1] for p in parts))


def tf_counts(part: pd.DataFrame, value_col: str) -> pd.Series:
    """Records per value of ``value_col`` in a prepared partition (one row per record)."""
    first = part.drop_duplicates("_erb_rid")
    vals = first[value_col].dropna().astype("string")
    return vals.value_counts(sort=False)
