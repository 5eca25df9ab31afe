"""A link's cardinality applied to pairs that stay on the cluster (driver side).

:func:`assign_dask` keeps the same links as :func:`erblock.matchers.assignment.assign`
(see there for the order and the cardinalities) for a Dask DataFrame of pairs: the best
pair of a record is found by shuffling the pairs on its id, the two-sided greedy runs in
rounds of those shuffles until what is left fits on the client, where the in-memory
greedy finishes it. :func:`assign_output` applies it to the parts a run wrote.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from ..matchers.assignment import (
    IDS,
    assign,
    check_cardinality,
    check_ids_present,
    check_pairs,
    check_threshold,
    rank_column_of,
    unique_sides,
)
from ..matchers.thresholds import cast_to
from .cluster import persist_on
from .tasks.write import PART_NAME, sort_pairs

__all__ = ["LOCAL_ROWS", "assign_dask", "assign_output"]

#: the two-sided greedy finishes on the client once this few pairs are left
LOCAL_ROWS = 1_000_000


def _best(frame: Any, by: list[str], score: str, shuffle_method: str) -> Any:
    """Per value of ``by`` (an id, or both: a pair listed twice), its best row: highest
    score, then the smallest id of the other side."""
    order = [score, *(c for c in IDS if c not in by)]

    def first(part: pd.DataFrame) -> pd.DataFrame:
        ranked = part.sort_values(order, ascending=[False] + [True] * (len(order) - 1),
                                  kind="stable")
        return ranked.drop_duplicates(by)

    moved = frame.shuffle(on=by, shuffle_method=shuffle_method)
    return moved.map_partitions(first, meta=frame._meta)


def _drop_ids(frame: Any, taken: Any, col: str, shuffle_method: str) -> Any:
    """Rows of ``frame`` whose ``col`` is not among ``taken[col]``."""
    marks = taken[[col]].assign(_taken=True)
    merged = frame.merge(marks, on=col, how="left", shuffle_method=shuffle_method)
    return merged[merged["_taken"].isna()].drop(columns="_taken")


def assign_dask(pairs: Any, cardinality: str | None, score_column: str = "score", *,
                threshold: float | None = None, client: Any = None,
                shuffle_method: str = "tasks", local_rows: int = LOCAL_ROWS,
                rank_column: str | None = None, check_ids: bool = True) -> Any:
    """The rows of the Dask DataFrame ``pairs`` that are links under ``cardinality``.

    The same links as the in-memory :func:`~erblock.matchers.assignment.assign`, unordered.
    Each round of the two-sided greedy takes the pairs that are the best of both their
    records and drops the pairs touching a taken record; once at most ``local_rows``
    pairs are left they are gathered and finished by the in-memory greedy. Rounds are
    few on real scores (most records' best pair is taken in the first); a long chain of
    pairs whose scores fall along it costs about a round per two pairs until what is
    left fits on the client. A pair with a missing id is refused, as by ``assign``
    (``check_ids``: count them first, one pass over ``pairs``; a run's own output,
    which has none, skips it).
    """
    import dask.dataframe as dd

    check_pairs(pairs, score_column, 0.0)  # the columns named, as assign names them
    check_threshold(threshold, score_column)
    cardinality = check_cardinality(cardinality)
    rank = rank_column_of(pairs.columns, score_column, rank_column)
    if check_ids:
        counts = pairs[IDS].isna().sum()
        counts = counts.compute() if client is None else client.compute(counts, sync=True)
        check_ids_present(None, "assign_dask", counts={c: int(counts[c]) for c in IDS})
    keep = pairs[~pairs[score_column].isna() & ~pairs[rank].isna()]
    if threshold is not None:
        keep = keep[keep[score_column] >= cast_to(keep[score_column].dtype, threshold)]
    one_right, one_left = unique_sides(cardinality)
    if not (one_left or one_right):
        return keep
    sm = shuffle_method
    if not (one_left and one_right):
        return _best(keep, ["right_id" if one_right else "left_id"], rank, sm)

    def persist(x: Any) -> Any:
        return persist_on(client, x)

    def compute(x: Any) -> Any:
        return x.compute() if client is None else client.compute(x, sync=True)

    alive = persist(keep[[*IDS, rank]])
    taken: list[Any] = []
    while True:
        n = int(compute(alive.shape[0]))
        if n <= local_rows:
            rest = compute(alive)
            last = assign(rest, "1:1", rank)[IDS]
            taken.append(dd.from_pandas(last, npartitions=1))
            break
        best_l = _best(alive, ["left_id"], rank, sm)[IDS]
        best_r = _best(alive, ["right_id"], rank, sm)[IDS]
        both = persist(best_l.merge(best_r, on=IDS, shuffle_method=sm))
        taken.append(both)
        alive = _drop_ids(_drop_ids(alive, both, "left_id", sm), both, "right_id", sm)
        alive = persist(alive)
    links = dd.concat(taken) if len(taken) > 1 else taken[0]
    # a pair listed twice is one link, its best row (as in memory), not one per listing
    return _best(keep.merge(links, on=IDS, how="inner", shuffle_method=sm), IDS, rank, sm)


def _rows(path: str) -> int:
    """Rows of a parquet file, from its footer."""
    return int(pq.ParquetFile(path).metadata.num_rows)


def assign_output(out_dir: str, cardinality: str, score_column: str, client: Any,
                  shuffle_method: str, *, sort: bool = False) -> dict[str, int]:
    """Keep only the links among the parts the workers wrote into ``out_dir``.

    The written pairs (the decided ones: the kernels applied the threshold) move to a
    hidden subdirectory, the links are written by the workers as the run's parts, with
    the same schema (each part sorted by ids with ``sort``), and the subdirectory is
    removed. Returns the number of decided pairs and of links.
    """
    import dask.dataframe as dd

    decided_dir = os.path.join(out_dir, "_decided")
    os.makedirs(decided_dir)
    n_decided = 0
    for name in os.listdir(out_dir):
        if name.startswith("part-"):
            n_decided += _rows(os.path.join(out_dir, name))
            os.replace(os.path.join(out_dir, name), os.path.join(decided_dir, name))
    decided = dd.read_parquet(decided_dir)
    schema = pq.read_schema(os.path.join(decided_dir, sorted(os.listdir(decided_dir))[0]))
    links = assign_dask(decided, cardinality, score_column, client=client,
                        shuffle_method=shuffle_method, check_ids=False)
    if sort:
        links = links.map_partitions(sort_pairs, meta=links._meta)
    links_dir = os.path.join(out_dir, "_links")
    write = links.to_parquet(links_dir, write_index=False, compute=False,
                             write_metadata_file=False, schema=schema,
                             name_function=lambda i: PART_NAME.format(task=i))
    client.compute(write, sync=True)
    n_links = 0
    for name in sorted(os.listdir(links_dir)):
        if name.startswith("part-"):
            path = os.path.join(links_dir, name)
            n_links += _rows(path)
            os.replace(path, os.path.join(out_dir, name))
    shutil.rmtree(decided_dir)
    shutil.rmtree(links_dir)
    return {"decided_pairs": int(n_decided), "links": int(n_links)}
