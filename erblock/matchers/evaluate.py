"""Quality of a result against ground truth.

- :func:`evaluate`: precision, recall and F1 of the predicted pairs, plus the two blocking
  measures: pair completeness (share of the true pairs that were candidates at all: the
  recall ceiling set by blocking) and reduction ratio (share of all possible pairs that
  blocking saved).
- :func:`pr_curve` / :func:`plot_pr_curve`: the same at every threshold in one sort.
- :func:`cluster_metrics`: pairwise precision/recall/F1 and the adjusted Rand index of a
  clustering (dedupe), from the contingency table, never from enumerated pairs.

Pairs are compared as sets of distinct pairs. For dedupe, a pair is unordered:
``(a, b) == (b, a)``; both frames are normalised before matching. Ids are matched by value
and may be of any hashable type (they are factorised jointly, never sorted:
:mod:`erblock.matchers.evaluate_ids`); a row without one of its two ids is refused.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, cast

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .clustering import in_memory
from .evaluate_ids import (
    check_columns,
    check_frames,
    check_id_types,
    check_size,
    check_sizes_hold,
    ids_in_common,
    pair_codes,
    self_pairs,
)
from .thresholds import check_threshold, compared_by_run, meets

__all__ = ["cluster_metrics", "evaluate", "ids_in_common", "plot_pr_curve", "pr_curve"]


def infer_dedupe(dedupe: bool | None, n_left: int | None, n_right: int | None,
                 pairs: pd.DataFrame | None = None, candidates: pd.DataFrame | None = None
                 ) -> tuple[bool, str]:
    """Whether pairs compare unordered (a dedupe's), and what said so; when only a pair
    of equal ids says they are a link's, a warning names the way to say otherwise."""
    if dedupe is not None:
        return bool(dedupe), "dedupe=" + str(bool(dedupe))
    # the run that made the pairs says which it was (its report rides in the frame's
    # attrs): a link's truth may pair a record with the other input's record of the
    # same id, which a dedupe would drop as a self-pair
    report = pairs.attrs.get("erblock_report") if pairs is not None else None
    if isinstance(report, dict) and report.get("mode") in ("link", "dedupe"):
        return report["mode"] == "dedupe", f"the pairs' own report (a {report['mode']})"
    if n_right is not None:
        return False, "n_right (a link)"
    # erblock's dedupe never pairs a record with itself: a pair of equal ids is a link's
    # (pairs written with output= or read back from parquet carry no report)
    if any(_has_equal_ids(f) for f in (pairs, candidates)):
        warnings.warn("the pairs carry no run report and hold a pair of two equal ids: "
                      "taken as a link's (pass n_right=, or dedupe=True if they are a "
                      "dedupe's)", UserWarning, stacklevel=3)
        return False, "a pair of equal ids (a link's)"
    # nothing else to go by: unordered, exact for dedupe; for a link it differs only
    # when a reversed pair is present too
    return True, "no sign of a link"


def _has_equal_ids(f: pd.DataFrame | None) -> bool:
    if f is None or not len(f):
        return False
    try:
        same = f["left_id"].eq(f["right_id"])
    except TypeError:  # ids that do not compare: none equal
        return False
    return bool(same.fillna(False).to_numpy(dtype=bool).any())


def _score_of(pairs: pd.DataFrame, score_column: str) -> pd.Series:
    if score_column not in pairs.columns:
        raise ValueError(
            f"pairs: no score column {score_column!r} (columns: {list(pairs.columns)}); "
            "pass score_column=... or threshold=None"
        )
    return pairs[score_column]


def _scores(pairs: pd.DataFrame, score_column: str) -> np.ndarray:
    return _score_of(pairs, score_column).to_numpy(dtype=np.float64, na_value=np.nan)


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


def _f1(tp: float, n_predicted: float, n_true: float) -> float:
    """2 tp / (predicted + true): 0 when nothing is predicted, NaN only without either."""
    return _ratio(2 * tp, n_predicted + n_true)


# --------------------------------------------------------------------------- evaluate


def evaluate(
    pairs: pd.DataFrame,
    truth: pd.DataFrame,
    *,
    threshold: float | None = None,
    score_column: str | None = None,
    n_left: int | None = None,
    n_right: int | None = None,
    candidates: pd.DataFrame | None = None,
    dedupe: bool | None = None,
) -> dict[str, Any]:
    """Precision, recall, F1, pair completeness and reduction ratio of ``pairs``.

    Parameters
    ----------
    pairs
        ``left_id``, ``right_id`` (and ``score_column`` when ``threshold`` is set). Rows
        with ``score >= threshold`` are the predicted matches (all rows if ``threshold`` is
        None); all rows are the candidate pairs unless ``candidates`` is given, or unless
        they are a run's whole output kept at its threshold (below).
    score_column
        The column ``threshold`` applies to; None: ``match_probability`` when the pairs
        have it (a model's decision: ``threshold=0.5`` is its default decision), else
        ``score``.
    truth
        The true pairs, ``left_id``, ``right_id``.
    n_left, n_right
        Input sizes, for the reduction ratio: possible pairs are ``n_left * n_right``
        (link) or ``n_left * (n_left - 1) / 2`` (dedupe, ``n_right`` not given).
    candidates
        The compared pairs, when ``pairs`` holds only some of them (a selection of a
        run's pairs: ``pairs[pairs.match_probability >= 0.5]`` is evaluated with
        ``candidates=pairs``, or as ``evaluate(pairs, truth, threshold=0.5)``). Not
        given, and ``pairs`` are a run's whole output kept at its ``threshold=`` (or its
        links under ``cardinality=``), the candidates are the run's count of compared
        pairs, from the report the pairs carry: the reduction ratio uses it (and the
        run's input sizes when ``n_left`` is not given) and pair completeness is None.
    dedupe
        Compare pairs unordered. ``None``: what the run that made ``pairs`` was (its
        report in ``pairs.attrs``), else ``False`` if ``n_right`` is given or a pair has
        two equal ids (a dedupe never pairs a record with itself), else ``True`` (exact
        for dedupe; for a link it only differs if a reversed pair is present too).

    Returns
    -------
    dict with ``precision``, ``recall``, ``f1``, ``tp``, ``fp``, ``fn``,
    ``pair_completeness`` (true pairs among the candidates / true pairs; None when the
    candidates below a run's threshold are gone, above),
    ``reduction_ratio`` (1 - candidates / possible pairs, ``None`` without ``n_left``),
    ``n_predicted``, ``n_candidates``, ``n_true`` and ``threshold``. Counts are over
    distinct pairs (self-pairs in dedupe truth are ignored). A ratio with a zero
    denominator is NaN; F1 is 2 tp / (predicted + true pairs), so 0 when nothing is
    predicted, and NaN only when there are neither predicted nor true pairs.

    Raises
    ------
    ValueError
        A row of ``pairs``, ``truth`` or ``candidates`` without one of its ids; a
        ``threshold`` outside [0, 1] on ``score`` or ``match_probability`` (it is compared
        in the scores' precision: a float32 score at the threshold is predicted, as the
        run kept it), or below the threshold of the run whose whole output these are;
        ``n_left`` / ``n_right`` below 0 or below the ids the candidates hold.
    TypeError
        A frame that is no DataFrame, a ``threshold`` or size that is no number.
    """
    for f, name in ((pairs, "pairs"), (truth, "truth"), (candidates, "candidates")):
        if f is not None:
            check_columns(f, name)
    if score_column is None:
        score_column = "match_probability" if "match_probability" in pairs.columns else "score"
    check_threshold(threshold, score_column)
    n_left, n_right = check_size(n_left, "n_left"), check_size(n_right, "n_right")
    wanted = ["left_id", "right_id"] + ([score_column] if threshold is not None else [])
    pairs = in_memory(pairs, [c for c in wanted if c in pairs.columns])
    truth = in_memory(truth, ["left_id", "right_id"])
    candidates = None if candidates is None else in_memory(candidates, ["left_id", "right_id"])
    check_frames({"pairs": pairs, "truth": truth, "candidates": candidates}, "evaluate")
    dedupe, why = infer_dedupe(dedupe, n_left, n_right, pairs, candidates)
    if n_right is not None and n_left is None:
        raise ValueError("n_right given without n_left: pass both for link, n_left for dedupe")
    if dedupe and n_right is not None:
        raise ValueError(f"n_right: these pairs are compared as a dedupe's ({why}), which "
                         "has a single input: drop n_right, or pass dedupe=False")
    if not dedupe and n_left is not None and n_right is None:
        raise ValueError(f"n_left without n_right: these pairs are a link's ({why}); its "
                         "possible pairs are n_left * n_right: pass both, or dedupe=True "
                         "if they are a dedupe's")
    compared = compared_by_run(pairs, score_column, threshold)  # the run's own cut
    compared = None if candidates is not None else compared
    if compared is not None and n_left is None:  # the run's own inputs, as it counted them
        n_left, n_right = compared[1], compared[2]
    cand = pairs if candidates is None else candidates
    check_sizes_hold(cand, dedupe, n_left, n_right)
    predicted = pairs
    if threshold is not None:  # compared as the run compared (float32 scores)
        predicted = pairs[meets(_score_of(pairs, score_column), threshold)]
    names = ["pairs", "truth", "candidates"]
    for f, name in zip([pairs, truth, cand], names):
        check_columns(f, name)
    check_id_types(pairs, truth, ("pairs", "truth"))
    pred_k, true_k, cand_k = pair_codes([predicted, truth, cand], dedupe, names)
    if dedupe:  # a record is never its own duplicate
        true_k = true_k[~self_pairs(truth)]
    pred_k, true_k, cand_k = np.unique(pred_k), np.unique(true_k), np.unique(cand_k)
    tp = int(np.isin(pred_k, true_k, assume_unique=True).sum())
    if not dedupe and tp == 0 and len(truth) and len(predicted):
        _warn_if_swapped(predicted, truth)
    fp, fn = pred_k.size - tp, true_k.size - tp
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    found = int(np.isin(true_k, cand_k, assume_unique=True).sum())
    n_cand = cand_k.size if compared is None else compared[0]
    rr = None
    if n_left is not None:
        total = n_left * n_right if n_right is not None else n_left * (n_left - 1) // 2
        rr = 1.0 - n_cand / total if total else math.nan
    return {
        "precision": precision,
        "recall": recall,
        "f1": _f1(tp, pred_k.size, true_k.size),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "pair_completeness": _ratio(found, true_k.size) if compared is None else None,
        "reduction_ratio": rr,
        "n_predicted": int(pred_k.size),
        "n_candidates": int(n_cand),
        "n_true": int(true_k.size),
        "threshold": threshold,
    }


def _warn_if_swapped(predicted: pd.DataFrame, truth: pd.DataFrame) -> None:
    """A link's truth with left_id and right_id the other way round matches nothing."""
    swapped = truth.rename(columns={"left_id": "right_id", "right_id": "left_id"})
    pred_k, true_k = pair_codes([predicted, swapped], False, ["pairs", "truth"])
    pred_k, true_k = np.unique(pred_k), np.unique(true_k)
    hits = int(np.isin(pred_k, true_k, assume_unique=True).sum())
    if hits >= max(3, min(pred_k.size, true_k.size) / 2):  # not a few pairs by chance
        warnings.warn(f"truth: no true pair was found, but {hits} are with its left_id and "
                      "right_id swapped: a link's truth needs left_id from the left input "
                      "(df_r) and right_id from the right one", UserWarning, stacklevel=3)


def pr_curve(
    pairs: pd.DataFrame,
    truth: pd.DataFrame,
    *,
    score_column: str | None = None,
    dedupe: bool | None = None,
) -> pd.DataFrame:
    """Precision, recall and F1 at every distinct score used as threshold.

    One sort and cumulative sums: row ``t`` says what :func:`evaluate` with
    ``threshold=t`` and the same ``score_column`` would give (its units: bits for
    ``match_weight``; pass ``score_column="match_probability"`` for thresholds that
    ``link(threshold=...)`` takes). Sorted by threshold, descending. Recall is over all true
    pairs, including those never among ``pairs``; a pair listed twice counts with its best
    score; NaN scores never match. ``dedupe=None``: as :func:`evaluate` decides.
    ``score_column=None``: a model's ``match_weight`` when the pairs have it (it ranks
    pairs whose probabilities all round to 1.0), else ``match_probability``, else
    ``score``.
    """
    check_columns(pairs, "pairs")
    check_columns(truth, "truth")
    if score_column is None:
        score_column = next((c for c in ("match_weight", "match_probability")
                             if c in pairs.columns), "score")
    pairs = in_memory(pairs, [c for c in ("left_id", "right_id", score_column)
                              if c in pairs.columns])
    truth = in_memory(truth, ["left_id", "right_id"])
    check_frames({"pairs": pairs, "truth": truth}, "pr_curve")
    dedupe = infer_dedupe(dedupe, None, None, pairs)[0]
    score = _scores(pairs, score_column)
    check_id_types(pairs, truth, ("pairs", "truth"))
    keys, true_k = pair_codes([pairs, truth], dedupe, ["pairs", "truth"])
    if dedupe:
        true_k = true_k[~self_pairs(truth)]
    true_k = np.unique(true_k)
    ok = ~np.isnan(score)
    keys, score = keys[ok], score[ok]
    # best score per distinct pair, then descending score
    order = np.lexsort((-score, keys))
    first = (np.r_[True, keys[order][1:] != keys[order][:-1]] if keys.size
             else np.zeros(0, dtype=bool))  # no pair (or none scored): an empty curve
    keys, score = keys[order][first], score[order][first]
    order = np.argsort(-score, kind="stable")
    keys, score = keys[order], score[order]
    hit = np.isin(keys, true_k, assume_unique=True)
    tp = np.cumsum(hit)
    n = np.arange(1, keys.size + 1)
    last = np.r_[score[1:] != score[:-1], True] if keys.size else np.empty(0, bool)
    tp, n, thr = tp[last], n[last], score[last]  # ties: all pairs at one score together
    precision = tp / n
    recall = tp / true_k.size if true_k.size else np.full(tp.size, np.nan)
    f1 = 2 * tp / (n + true_k.size)  # as evaluate's: 0 at every threshold without truth
    return pd.DataFrame({"threshold": thr, "precision": precision, "recall": recall, "f1": f1})


def plot_pr_curve(curve: pd.DataFrame, path: str | os.PathLike, *, title: str | None = None) -> str:
    """Draw a :func:`pr_curve` (precision against recall, best F1 marked) to a PNG file.

    Needs matplotlib (``pip install erblock[plot]``); it is imported here only, and the
    figure is drawn with the Agg canvas directly, so no global backend is changed.
    Returns the path written.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("plot_pr_curve needs matplotlib: pip install 'erblock[plot]'") from e
    fig = Figure(figsize=(5, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(curve["recall"], curve["precision"], ".-", label="PR")
    if len(curve) and curve["f1"].gt(0).any():  # no best point when no pair is true
        best = curve.loc[cast(Any, curve["f1"].idxmax())]
        ax.plot(
            [best["recall"]],
            [best["precision"]],
            "o",
            label=f"best F1 {best['f1']:.3f} at {best['threshold']:.3g}",
        )
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.02), ylim=(0, 1.02))
    ax.set_title(title or "precision / recall")
    ax.legend(loc="lower left")
    ax.grid(alpha=0.3)
    fig.savefig(os.fspath(path), format="png")
    return os.fspath(path)


# --------------------------------------------------------------------------- clusters


def cluster_metrics(pred_labels: pd.Series, true_labels: pd.Series) -> dict[str, Any]:
    """Compare a clustering with the true one (dedupe): pairwise P/R/F1 and adjusted Rand.

    Both Series map record id (index) to a cluster label; they must cover the same
    records (aligned by index). A "pair" is two records in one cluster: precision is the
    share of predicted same-cluster pairs that are true, recall the share of true ones
    found. The adjusted Rand index (Hubert & Arabie 1985) is the Rand index corrected for
    chance: 1 for identical partitions, about 0 for random ones; it is computed here from
    the contingency table (scikit-learn's ``adjusted_rand_score`` gives the same value,
    and is not needed). Everything is counted from the contingency table, so it costs
    O(records), not O(pairs). No records: no pairs (precision, recall and F1 NaN) and an
    adjusted Rand index of 1, as for any two identical trivial partitions.
    """
    for labels, name in ((pred_labels, "pred_labels"), (true_labels, "true_labels")):
        if not isinstance(labels, pd.Series):
            got = ("a Dask " + type(labels).__name__ + " (.compute() it)"
                   if hasattr(labels, "compute") else type(labels).__name__)
            raise TypeError(
                f"{name} must be a pandas Series of cluster labels indexed by record id "
                f"(as erblock.cluster returns), got {got}; for labels in record order "
                "pass pd.Series(labels, index=record_ids)")
    if not pred_labels.index.is_unique or not true_labels.index.is_unique:
        raise ValueError("pred_labels, true_labels: the index (record ids) must be unique")
    if len(pred_labels) != len(true_labels) or not pred_labels.index.isin(true_labels.index).all():
        raise ValueError(
            "pred_labels and true_labels must label the same records: got "
            f"{len(pred_labels)} and {len(true_labels)} ids, "
            f"{int((~pred_labels.index.isin(true_labels.index)).sum())} not in true_labels"
        )
    true_labels = true_labels.reindex(pred_labels.index)
    if pred_labels.isna().any() or true_labels.isna().any():
        raise ValueError("cluster labels must not be missing")
    a, ua = pd.factorize(pred_labels.to_numpy())
    b, ub = pd.factorize(true_labels.to_numpy())
    n = a.size
    # duplicates are summed; the shape is given, so no record gives an empty table
    table = sp.coo_matrix((np.ones(n), (a, b)), shape=(len(ua), len(ub))).tocsr()
    nij = table.data
    rows = np.asarray(table.sum(axis=1)).ravel()
    cols = np.asarray(table.sum(axis=0)).ravel()

    def comb2(x: np.ndarray) -> float:
        return float(np.sum(x * (x - 1) / 2))

    tp, pred_pairs, true_pairs = comb2(nij), comb2(rows), comb2(cols)
    precision, recall = _ratio(tp, pred_pairs), _ratio(tp, true_pairs)
    total = n * (n - 1) / 2
    expected = pred_pairs * true_pairs / total if total else 0.0
    max_index = (pred_pairs + true_pairs) / 2
    # identical trivial partitions (all singletons, or one cluster): 1 by convention
    ari = 1.0 if max_index == expected else (tp - expected) / (max_index - expected)
    return {
        "precision": precision,
        "recall": recall,
        "f1": _f1(tp, pred_pairs, true_pairs),
        "adjusted_rand_index": ari,
        "tp": int(tp),
        "pred_pairs": int(pred_pairs),
        "true_pairs": int(true_pairs),
        "n_records": n,
        "n_pred_clusters": int(rows.size),
        "n_true_clusters": int(cols.size),
    }

