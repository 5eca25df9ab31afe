"""From scored pairs to entities.

- :func:`cluster` (dedupe): connected components of the graph whose edges are the pairs
  scoring at least ``threshold`` (scipy ``connected_components``). Transitive: if a~b and
  b~c, then a, b and c are one entity even when a~c scores low.
- :func:`erblock.engine.clustering.cluster_dask`: the same components for pair sets that do not fit in memory,
  by min-label propagation with pointer jumping over dask DataFrames.
- :func:`one_to_one` (link): greedy best-first matching in which each left and each right
  record is used at most once (:mod:`erblock.matchers.assignment` has the other
  cardinalities).

Entity ids are **the smallest record id of the component**, so they do not depend on the
order of the pairs, and a record in no pair is its own entity. Record ids must be mutually
comparable (all ints or all strings); otherwise they are ordered by their ``str``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..report import ATTRS_KEY, written_report
from .assignment import assign, check_frame, check_ids_present, check_pairs
from .thresholds import meets, run_decision

__all__ = ["check_pairs", "cluster", "decision_column", "labels_to_series", "one_to_one"]


MODEL_DECISION = 0.5  #: a model's default decision on ``match_probability``


def decision_column(columns: Iterable[Any], given: str | None = None) -> str:
    """The column a clustering threshold applies to: ``given``, else ``match_probability``
    when a model scored the pairs (its decision column), else ``score``."""
    if given is not None:
        return given
    return "match_probability" if "match_probability" in set(columns) else "score"


def decision_threshold(score_column: str, threshold: float | None, report: Any,
                       n_rows: int) -> float | None:
    """The threshold pairs are clustered at: ``threshold``; when None on a model's
    ``match_probability``, its decision, 0.5 (a run with a model writes every compared
    pair, however unlikely; ``erblock cluster`` does the same), except for the whole
    output of a run that kept only the pairs at its own threshold (its ``report``,
    ``n_rows`` pairs): those are decided. On other columns None keeps every pair."""
    if threshold is not None or score_column != "match_probability":
        return threshold
    decided = run_decision(report, n_rows)
    if decided is not None and decided[0] == "match_probability" and decided[1] is not None:
        return None  # the run's own decision: every pair it kept is at or above it
    return MODEL_DECISION


def _warn_if_recut(pairs: pd.DataFrame, score_column: str, threshold: float | None,
                   report: Any) -> None:
    """Warn when the model's decision drops pairs of a selection made from a run's pairs
    (its report rides along, fewer rows): the user may have decided at another value."""
    if threshold is None or not isinstance(report, dict) or len(pairs) >= int(
            report.get("pairs", 0)):
        return
    dropped = int((~meets(pairs[score_column], threshold)).sum())
    if dropped:
        warnings.warn(f"cluster: no threshold given: these pairs are cut at the model's "
                      f"decision, {score_column} >= {threshold}, which leaves out {dropped:,} "
                      "of them; pass the threshold they were selected at (threshold=0 "
                      "keeps every pair)", UserWarning, stacklevel=3)


def _selected(pairs: pd.DataFrame, threshold: float | None, score_column: str) -> pd.DataFrame:
    """Pairs that count as matches (NaN scores never do)."""
    if threshold is None:
        return pairs
    return pairs[meets(pairs[score_column], threshold)]


def in_memory(pairs: Any, columns: list[str]) -> pd.DataFrame:
    """``pairs`` as a pandas frame: of a Dask frame (``output=``'s result, parquet read
    back) only ``columns`` are computed."""
    if isinstance(pairs, pd.DataFrame):
        return pairs
    if not hasattr(pairs, "compute") or not hasattr(pairs, "columns"):
        raise TypeError(f"pairs must be a pandas or Dask DataFrame, got {type(pairs).__name__}")
    out = pairs[columns].compute()
    report = written_report(pairs)  # a Dask frame has no attrs: its run's, from the file
    if report is not None:
        out.attrs[ATTRS_KEY] = report
    return out


def joined_ids(parts: Sequence[pd.Series | pd.Index]) -> pd.Index:
    """Ids of several columns as one Index, each id as it is. The columns are appended as
    pandas appends them (int64 with Int64 or int32 stays integer) unless that turns
    integer ids into floats: numpy promotes int64 with uint64 (or integers with
    floats) to float64, which merges ids beyond 2**53 (a 19-digit id equal to its
    neighbour). Those are appended as Python objects, which keep them exact and still
    match ``3`` with ``3.0`` by value."""
    idx = [p if isinstance(p, pd.Index) else pd.Index(p) for p in parts]
    out = idx[0].append(idx[1:]) if len(idx) > 1 else idx[0]
    if pd.api.types.is_float_dtype(out.dtype) and any(_integers(i.dtype) for i in idx):
        return pd.Index(np.concatenate([i.astype(object).to_numpy() for i in idx]),
                        dtype=object)
    return out


def _integers(dtype: Any) -> bool:
    """Whether ids of ``dtype`` are integers (a categorical's: its categories')."""
    if isinstance(dtype, pd.CategoricalDtype):
        dtype = dtype.categories.dtype
    return pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _as_inferred(index: pd.Index) -> pd.Index:
    """An object Index of ids (:func:`joined_ids`' exact path) back in its values' own
    integer dtype where they share one, as the inputs gave them; kept as objects where
    that would make them floats (ints mixed with floats)."""
    if index.dtype != object:
        return index
    inferred = index.infer_objects()
    return index if pd.api.types.is_float_dtype(inferred.dtype) else inferred


def _sorted_unique(values: pd.Index) -> pd.Index:
    """Unique ids in their natural order, or by ``str`` when they do not compare."""
    uniq = values.unique()
    try:
        return uniq.sort_values()
    except TypeError:  # mixed types, e.g. str and int ids
        return uniq[np.argsort(uniq.astype(str).to_numpy(), kind="stable")]


def cluster(
    pairs: pd.DataFrame,
    threshold: float | None = None,
    *,
    ids: Iterable[Any] | None = None,
    score_column: str | None = None,
) -> pd.Series:
    """Entity id for every record: connected components over the matching pairs.

    Parameters
    ----------
    pairs
        Frame with ``left_id``, ``right_id`` (and ``score_column`` when ``threshold`` is set).
    threshold
        Keep pairs with ``score >= threshold``; ``None`` keeps every row (already
        classified pairs), except on a model's ``match_probability``: a run with a model
        writes every compared pair, however unlikely, so they are cut at the model's
        decision, 0.5 (as ``erblock cluster`` does), unless they are the whole output of
        a run that kept only the pairs at its own threshold (its report rides along).
        A selection of a run's pairs that this cut shrinks is warned about: pass the
        threshold it was made at.
    ids
        All record ids (e.g. ``df.index``), so that records without a match get singleton
        clusters. Without it, the records are those seen in any row of ``pairs`` (also
        below the threshold).
    score_column
        The column ``threshold`` applies to: by default ``match_probability`` when a model
        scored the pairs (as ``erblock dedupe --cluster`` does), else ``score``.

    Returns
    -------
    pandas.Series named ``entity_id``, indexed by record id (name ``id``): in the order of
    ``ids`` when given (followed, sorted, by any other id seen in ``pairs``), else sorted.
    The value is the smallest record id of the record's component.

    Raises
    ------
    TypeError
        ``pairs`` is no frame, ``threshold`` no number or ``ids`` no collection of ids.
    ValueError
        A pair or ``ids`` holds a missing id, or ``threshold`` is outside [0, 1] on a
        column that lies in [0, 1]. A float32 score equal to the threshold (as the run
        wrote it) is kept, as the run kept it (:mod:`erblock.matchers.thresholds`).
    """
    check_frame(pairs)
    score_column = decision_column(pairs.columns, score_column)
    check_pairs(pairs, score_column, threshold)
    _check_ids_argument(ids)
    keep = [score_column] if score_column in pairs.columns else []
    pairs = in_memory(pairs, ["left_id", "right_id"] + keep)
    if score_column in pairs.columns and threshold is None:
        report = pairs.attrs.get(ATTRS_KEY)
        threshold = decision_threshold(score_column, threshold, report, len(pairs))
        _warn_if_recut(pairs, score_column, threshold, report)
    report = pairs.attrs.get("erblock_report")
    if isinstance(report, dict) and report.get("mode") == "link":
        raise ValueError(
            "cluster: these pairs are a link's: the ids of its two inputs may coincide, so "
            "one set of entities cannot hold them; for one link per record pass "
            "cardinality='1:1' to erblock.link")
    check_ids_present(pairs, "cluster")
    given = None if ids is None else (ids if isinstance(ids, pd.Index) else pd.Index(list(ids)))
    # the ids of ids= and of the pairs joined once: the nodes are all of them
    joined = joined_ids([pairs["left_id"], pairs["right_id"]] if given is None
                        else [given, pairs["left_id"], pairs["right_id"]])
    seen = joined if given is None else joined[len(given):]
    if given is not None and not given.is_unique:
        raise ValueError("ids: record ids must be unique")
    if given is not None and given.hasnans:
        raise ValueError("cluster: ids hold missing record ids; every record needs one")
    if given is not None and len(given) and len(seen) and not given.isin(seen).any():
        dtypes = "/".join(sorted({str(pairs[c].dtype) for c in ("left_id", "right_id")}))
        warnings.warn(f"cluster: no id of ids= ({given.dtype}) is among the pairs' ids "
                      f"({dtypes}; 1 is not '1'): each of ids= is its own entity",
                      UserWarning, stacklevel=2)
    kept = _selected(pairs, threshold, score_column)
    nodes = _sorted_unique(joined)
    # codes follow the sorted order, so the smallest code of a component is its smallest id
    li = nodes.get_indexer(pd.Index(kept["left_id"]))
    ri = nodes.get_indexer(pd.Index(kept["right_id"]))
    n = len(nodes)
    graph = sp.coo_matrix((np.ones(li.size, dtype=np.int8), (li, ri)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    # first occurrence of each component label in code order = its smallest member
    _, first = np.unique(comp, return_index=True)
    final = _as_inferred(nodes)  # one dtype for the ids and the entity ids
    out = pd.Series(final[first[comp]], index=final.rename("id"), name="entity_id")
    if given is not None:
        extra = nodes.difference(given, sort=False)
        order = joined_ids([given, _sorted_unique(extra)]) if len(extra) else given
        out = out.reindex(_as_inferred(order).rename("id"))
    return out


def _check_ids_argument(ids: Any) -> None:
    """Refuse an ``ids=`` that is no collection of record ids (a str would be its letters)."""
    if ids is None:
        return
    if getattr(ids, "ndim", 1) == 2:  # a pandas or Dask frame (their Index, Series: 1)
        raise TypeError("ids must be the record ids, got a DataFrame; pass its index "
                        "(ids=df.index) or its id column")
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise TypeError(f"ids must be the record ids (an Index, array or list, e.g. "
                        f"ids=df.index), got {type(ids).__name__} {ids!r}")


def one_to_one(
    pairs: pd.DataFrame, score_column: str = "score", *, threshold: float | None = None
) -> pd.DataFrame:
    """Greedy best-first 1:1 matching for link: each left and right id is used at most once.

    The same as :func:`erblock.matchers.assignment.assign` with ``cardinality="1:1"``:
    pairs ranked by ``score_column`` descending (by ``match_weight`` for
    ``match_probability`` when the pairs carry it), ties by ``left_id`` then ``right_id``; the
    accepted rows of ``pairs`` (original index kept) in rank order. Pairs with a NaN score,
    or below ``threshold`` when given, are never accepted.
    """
    return assign(pairs, "1:1", score_column, threshold=threshold)


def labels_to_series(df: pd.DataFrame) -> pd.Series:
    return df.set_index("node")["label"].rename("entity_id").rename_axis("id")
