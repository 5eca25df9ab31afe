"""A threshold on a score column, checked once and applied as the run applies it.

A run's scores are float32, and its kernels keep a pair when ``score >=
np.float32(threshold)``: a mean of 0.7 is float32 0.7, which is 0.69999998 in float64,
below the float64 0.7. Every step that cuts pairs again (clustering, links, evaluation,
in memory or on Dask) compares in the column's own precision through :func:`cast_to`
and :func:`meets`, so a pair the run kept at a threshold is kept at that threshold
everywhere. :func:`check_threshold` is the one check of the value:
a number, not NaN, and for ``score`` and ``match_probability`` (which lie in [0, 1])
within [0, 1]; a ``match_weight`` (bits) may be any real number. :func:`compared_by_run`
says what a run's report tells of pairs it cut at its threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..scalars import is_number

__all__ = ["UNIT_COLUMNS", "cast_to", "check_threshold", "compared_by_run", "meets",
           "run_decision"]

#: score columns that lie in [0, 1]
UNIT_COLUMNS: tuple[str, ...] = ("score", "match_probability")


def check_threshold(threshold: Any, score_column: str, name: str = "threshold") -> None:
    """Raise unless ``threshold`` is None or a number a ``score_column`` can be cut at."""
    if threshold is None:
        return
    if not is_number(threshold):
        raise TypeError(f"{name} must be a number or None, got {threshold!r} "
                        f"({type(threshold).__name__})")
    try:
        value = float(threshold)
    except OverflowError:  # an int beyond float's range
        raise ValueError(f"{name}: an integer of {len(str(abs(int(threshold))))} digits is "
                         "beyond any score; give a number a float can hold") from None
    if math.isnan(value):
        raise ValueError(f"{name}: NaN keeps no pair; give a number")
    if score_column in UNIT_COLUMNS and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: {score_column} lies in [0, 1], so {threshold!r} would "
                         "keep no pair or every pair; give a threshold in [0, 1] (or "
                         "score_column='match_weight' to cut on match weights)")


def _own_float(dtype: Any) -> Any:
    """The NumPy float type scores of ``dtype`` compare in: their own (float32 stays
    float32, also as pandas' nullable ``Float32``), float64 for anything else."""
    dtype = getattr(dtype, "numpy_dtype", dtype)  # pandas' nullable Float32/Float64
    try:
        dtype = np.dtype(dtype)
    except TypeError:  # categorical, string, ...: compared as float64
        return np.float64
    return dtype.type if dtype.kind == "f" else np.float64


def cast_to(dtype: Any, threshold: float) -> Any:
    """``threshold`` in the precision of scores of ``dtype`` (``np.float32(t)`` for
    float32 scores): what ``scores >= threshold`` compares with, pandas or Dask."""
    with np.errstate(over="ignore"):  # a weight beyond float32's range is +-inf there
        return _own_float(dtype)(threshold)


def meets(scores: pd.Series, threshold: float) -> np.ndarray:
    """Boolean array: ``scores >= threshold`` in the scores' own precision (NaN and
    missing scores never meet it)."""
    own = _own_float(scores.dtype)
    values = scores.to_numpy(dtype=own, na_value=np.nan)
    return np.asarray(values >= cast_to(own, threshold))


def run_decision(report: Any, n_rows: int) -> tuple[str, float | None] | None:
    """For a run's whole output, ``n_rows`` pairs carrying its ``report`` (as many as it
    kept): the column its decision is on (``match_probability`` when a model scored
    it, else ``score``) and the threshold it kept pairs at (None: every compared pair;
    a cardinality's links are kept at its decision). None for other frames: no report,
    or a subset of the run's pairs (the user's own selection)."""
    if not isinstance(report, Mapping) or "pairs" not in report:
        return None
    if n_rows != int(report["pairs"]):
        return None
    column = "match_probability" if report.get("model") else "score"
    return column, (report.get("settings") or {}).get("threshold")


def compared_by_run(pairs: pd.DataFrame, score_column: str, threshold: float | None
                    ) -> tuple[int, int | None, int | None] | None:
    """(compared pairs, records of df_r / df, records of df_s) of the run whose whole
    output ``pairs`` are, when it kept only the pairs at its threshold (or its links):
    the candidates are then the run's count, and pair completeness is unknown. None for
    other frames (a subset the user selected is taken as it is). A threshold below the
    run's own on its decision column is refused: what it would add is gone."""
    run: Any = pairs.attrs.get("erblock_report")
    decided = run_decision(run, len(pairs))
    if decided is None or decided[1] is None or "comparisons" not in run:
        return None
    column, cut = decided[0], float(decided[1])
    floor = cut if score_column == column else None
    if column == "match_probability" and score_column == "match_weight":  # the same, in bits
        floor = math.log2(cut / (1 - cut)) if 0 < cut < 1 else (math.inf if cut >= 1
                                                                  else -math.inf)
    if threshold is not None and floor is not None and threshold < floor:
        raise ValueError(f"threshold={threshold}: these pairs are those the run kept at "
                         f"{column} >= {cut}; a lower threshold would predict pairs that "
                         "are not here: run again with a lower threshold= (or none)")
    records = run.get("records") or {}
    n_r, n_s = int(records.get("records_r", 0)) or None, int(records.get("records_s", 0))
    return (int(run["comparisons"]), n_r,
            n_s if run.get("mode") == "link" and n_r is not None else None)
