"""The quality section of a run's report: its pairs against ground truth.

:func:`quality_from_truth` reads the pairs (the run's output directory, or others) and the
truth (a frame, CSV or parquet), refuses a row without one of its ids, aligns the id
types of the two (a CSV gives numbers where the run may have text ids) and measures them
with :func:`erblock.evaluate`. :mod:`erblock.report_html` draws what it returns.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["as_dict", "quality_from_truth"]


def as_dict(report: Any) -> dict[str, Any]:
    """A run report (a :class:`~erblock.report.RunReport` or its dict) as a dict."""
    if isinstance(report, Mapping):
        return dict(report)
    to_dict = getattr(report, "to_dict", None)
    if to_dict is None:
        raise TypeError(
            "report must be a RunReport, a dict or the path of a JSON file written by "
            f"--report; got {type(report).__name__}")
    return dict(to_dict())


def quality_from_truth(report: Any, truth: Any, pairs: Any = None,
                       threshold: float | None = None) -> dict[str, Any]:
    """Precision, recall, F1, pair completeness and reduction ratio of a run's pairs.

    ``truth``: a DataFrame or a CSV/parquet path with ``left_id``, ``right_id``.
    ``pairs``: a DataFrame or a parquet path; by default the run's output directory. The
    run's pairs cut by its threshold (as many as it wrote, none below it) leave the compared
    pairs it counts as the candidates: the reduction ratio uses that, pair completeness is None.
    ``threshold`` (on ``match_probability`` if present, else ``score``); None: a model's
    default decision (``match_probability >= 0.5``), else every pair is predicted.
    Ids are compared as text when their types differ (CSV gives numbers as text); a row
    without one of its ids is refused first (as text it would be ``"nan"``).
    """
    import pandas as pd

    from .matchers.evaluate import evaluate, ids_in_common
    from .matchers.evaluate_ids import check_columns, check_frames, check_sizes_hold
    from .matchers.thresholds import meets

    d = as_dict(report)
    pairs_df = _read_pairs(pairs if pairs is not None else d.get("output"), "pairs")
    truth_df = _read_pairs(truth, "truth")
    check_columns(pairs_df, "pairs")
    check_columns(truth_df, "truth")
    check_frames({"pairs": pairs_df, "truth": truth_df}, "")
    pairs_df, truth_df = _align_id_types(pairs_df, truth_df)
    records = d.get("records", {})
    link = d.get("mode") == "link"
    n_left = int(records.get("records_r", 0)) or None
    n_right = int(records.get("records_s", 0)) if link and n_left is not None else None
    cut = d.get("settings", {}).get("threshold")
    col = "match_probability" if "match_probability" in pairs_df else "score"
    if threshold is None and "match_probability" in pairs_df.columns:
        threshold = max(0.5, cut or 0.0)  # a model's default decision, or the run's cut
    elif pairs is None and cut is not None and threshold is not None and threshold < cut:
        raise ValueError(f"threshold {threshold}: the run wrote the pairs at {col} >= "
                         f"{cut}; a lower threshold would predict pairs it did not write: "
                         "run again with a lower threshold (or none)")
    try:  # pairs given that name more records than the run read are another run's
        check_sizes_hold(pairs_df, not link, n_left, n_right)
    except ValueError:
        n_left = n_right = None  # so no reduction ratio, rather than a wrong one
    m = evaluate(pairs_df, truth_df, threshold=threshold, n_left=n_left, n_right=n_right,
                 dedupe=not link)
    m["ids_in_common"] = ids_in_common(pairs_df, truth_df)  # 0: the run used other ids
    own = pairs is None or (len(pairs_df) == int(d.get("pairs", -1)) and (  # the run's own
        col not in pairs_df or bool(meets(pairs_df[col], cut or 0).all())))
    if own and cut is not None:  # the candidates were all compared pairs (counted)
        compared = sum(int(t.get("comparisons", 0)) for t in d.get("tasks", []))
        m["n_candidates"] = compared
        m["pair_completeness"] = None  # unknown: the candidates below the threshold are gone
        if n_left:
            total = n_left * n_right if n_right is not None else n_left * (n_left - 1) // 2
            m["reduction_ratio"] = 1.0 - compared / total if total else math.nan
    return {k: v for k, v in m.items() if not isinstance(v, pd.DataFrame)}


def _read_pairs(src: Any, name: str) -> Any:
    import pandas as pd

    if isinstance(src, pd.DataFrame):
        return src
    if src is None:
        raise ValueError(f"{name}: the report has no output directory (the run returned its "
                         "pairs in memory); pass the pairs explicitly (--pairs DIR)")
    path = str(src)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{name}: no such file or directory {path!r}")
    try:
        if path.lower().endswith((".csv", ".csv.gz", ".tsv")):
            df = pd.read_csv(path, sep="\t" if path.lower().endswith(".tsv") else ",")
        else:
            df = pd.read_parquet(path)
    except (ValueError, OSError) as exc:  # an empty file, one that is not parquet, …
        raise ValueError(f"{name}: {path!r} could not be read as pairs: {exc}") from exc
    missing = {"left_id", "right_id"} - set(df.columns)
    if missing:
        raise ValueError(f"{name}: {path!r} has no column(s) {sorted(missing)} "
                         f"(columns: {list(df.columns)})")
    return df


def _align_id_types(a: Any, b: Any) -> tuple[Any, Any]:
    """Both frames' id columns as text where one side is numbers and the other is not."""
    import pandas as pd

    for col in ("left_id", "right_id"):
        if pd.api.types.is_numeric_dtype(a[col]) != pd.api.types.is_numeric_dtype(b[col]):
            a = a.assign(**{col: _as_text(a[col])})
            b = b.assign(**{col: _as_text(b[col])})
    return a, b


def _as_text(ids: Any) -> Any:
    """Ids as text, an integral float as its integer: a CSV column with a blank cell is
    read as floats, and 47.0 must read "47" as the run's id 47 does."""
    import numpy as np
    import pandas as pd

    if pd.api.types.is_float_dtype(ids.dtype) and ids.notna().all():
        v = ids.to_numpy(dtype=np.float64)
        if bool((np.isfinite(v) & (v == np.trunc(v)) & (np.abs(v) < 2.0**63)).all()):
            ids = ids.astype("Int64")
    return ids.astype(str)
