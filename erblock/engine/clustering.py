"""Clustering pairs that do not fit in memory, on the cluster (driver side).

The in-memory path is :func:`erblock.matchers.clustering.cluster` (scipy); this is the
same connected components, computed with Dask (hooking plus pointer jumping) so that
neither the pairs nor the labels travel to the client.
"""

from __future__ import annotations

from typing import Any

import dask
import dask.dataframe as dd

from ..matchers.assignment import IDS, check_frame, check_ids_present
from ..matchers.clustering import (
    check_pairs,
    decision_column,
    decision_threshold,
    labels_to_series,
)
from ..matchers.thresholds import cast_to
from ..report import ATTRS_KEY, written_report
from .cluster import persist_on


def cluster_dask(
    pairs: Any,
    threshold: float | None = None,
    *,
    score_column: str | None = None,
    max_iter: int = 100,
    shuffle_method: str = "tasks",
    client: Any = None,
) -> Any:
    """Connected components of a dask DataFrame of pairs, without collecting it.

    Min-label propagation with hooking and pointer jumping (Shiloach-Vishkin style), as
    rounds of dask merges and groupbys. Every record ``x`` holds a label ``L(x) <= x`` naming
    a record of its component (initially itself). Each round:

    1. *hook*: for every pair whose ends carry different labels ``a < b``, set
       ``L(b) = min(L(b), a)`` — the label record itself is re-pointed, so a whole tree
       moves at once, not a single record;
    2. *jump*: ``L(x) = min(L(x), L(L(x)))``, halving the depth of the label trees.

    Labels only decrease and stay inside the component, and the smallest record of a
    component keeps its own label; when no pair has two different labels, every component
    carries a single label, which is then its smallest id — the same result as
    :func:`cluster`. Rounds grow about logarithmically with component size (5-10 on random
    graphs of 10^3-10^5 records). Each round is a few shuffles and computes one count; the
    edges (ids only) and the labels are persisted on the workers, nothing is gathered on
    the client.

    ``threshold`` None is as for :func:`cluster` (a model's ``match_probability`` is cut
    at its decision, unless the pairs are a thresholded run's whole output, as the report
    beside their parquet says). ``shuffle_method`` is passed to every merge and groupby:
    ``"tasks"`` works with any scheduler and suits small graphs; use ``"p2p"`` for large
    ones under a distributed client. ``client``: a ``distributed.Client`` to run on;
    ``None`` uses the default scheduler (the current default client, if any).

    Returns a dask Series ``entity_id`` indexed by record id (``id``; partitions are not
    sorted, divisions unknown); only records that appear in a
    kept pair are included (records without a match are their own entity). Raises
    ``ValueError``, as :func:`cluster` does, when a pair has a missing id (counted in one
    pass over the id columns), and ``RuntimeError`` if not converged after ``max_iter``
    rounds.
    """
    check_frame(pairs)
    score_column = decision_column(pairs.columns, score_column)
    check_pairs(pairs, score_column, threshold)
    report = None
    if threshold is None:  # the report beside the parquet, or kept by dd.from_pandas
        report = written_report(pairs) or getattr(pairs._meta, "attrs", {}).get(ATTRS_KEY)
    counts = (pairs[IDS].isna().sum(), pairs.shape[0])  # one pass: missing ids, rows
    missing, rows = (dask.compute(*counts) if client is None
                     else client.compute(list(counts), sync=True))
    check_ids_present(pairs, "cluster", counts={c: int(missing[c]) for c in IDS})
    if score_column in pairs.columns:
        threshold = decision_threshold(score_column, threshold, report, int(rows))
    if threshold is not None:
        pairs = pairs[pairs[score_column] >= cast_to(pairs[score_column].dtype, threshold)]
    sm = shuffle_method

    def persist(x: Any) -> Any:
        return persist_on(client, x)

    def count(x: Any) -> int:
        if client is None:
            return int(x.shape[0].compute())
        # rows of the persisted partitions, counted where they are (a ``len`` graph over a
        # persisted read_parquet can lose its dependencies under dask-expr)
        from distributed import futures_of

        return int(sum(client.gather(client.map(len, futures_of(x), pure=False))))

    edges = pairs[["left_id", "right_id"]].rename(columns={"left_id": "u", "right_id": "v"})
    edges = persist(edges)  # read every round
    nodes = dd.concat([edges["u"], edges["v"]]).drop_duplicates(split_out=edges.npartitions)
    labels = nodes.to_frame(name="node")
    labels = persist(labels.assign(label=labels["node"]))
    nparts = labels.npartitions
    for _ in range(max_iter):
        ends = edges.merge(
            labels.rename(columns={"node": "u", "label": "a"}), on="u", shuffle_method=sm
        )
        ends = ends.merge(
            labels.rename(columns={"node": "v", "label": "b"}), on="v", shuffle_method=sm
        )
        ends = ends[ends["a"] != ends["b"]]
        hooks = ends.assign(
            node=ends["a"].where(ends["a"] > ends["b"], ends["b"]),  # larger label ...
            label=ends["a"].where(ends["a"] < ends["b"], ends["b"]),  # ... points to smaller
        )[["node", "label"]]
        hooks = persist(hooks)
        if count(hooks) == 0:
            # per partition, no sort: set_index would compute divisions eagerly
            return labels.map_partitions(labels_to_series)
        labels = (
            dd.concat([labels, hooks])
            .groupby("node")["label"]
            .min(split_out=nparts, shuffle_method=sm)
            .reset_index()
        )
        hop = labels.rename(columns={"node": "label", "label": "hop"})
        labels = labels.merge(hop, on="label", shuffle_method=sm)  # labels are nodes: no loss
        labels = labels.assign(
            label=labels["label"].where(labels["label"] <= labels["hop"], labels["hop"])
        )
        labels = persist(labels[["node", "label"]])
    raise RuntimeError(
        f"cluster_dask: labels still changing after max_iter={max_iter} rounds; raise max_iter"
    )
