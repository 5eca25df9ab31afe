"""Entity ids from matching pairs on the command line: ``erblock dedupe … --cluster T``
and ``erblock cluster PAIRS …``.

Connected components run on the cluster (:func:`erblock.engine.clustering.cluster_dask`)
when the pairs are a parquet directory, so neither pairs nor labels travel to the client;
every record of the input gets an entity id (a record without a match is its own entity,
its id), written as parquet ``id, entity_id`` by the workers.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import pandas as pd

from ..engine.output import MARKERS, staged_output
from ..engine.tasks.write import PART_NAME
from ..matchers.clustering import decision_column, decision_threshold
from ..matchers.thresholds import check_threshold
from ..report import written_report
from .common import _client, _inputs, _say, to_json_line
from .parser import UsageError
from .paths import check_apart, local_paths

__all__ = ["cmd_cluster", "entity_frame", "score_column_of", "write_entities"]

ENTITIES_FILE = MARKERS[1]  #: what an entity directory holds besides its parts


def score_column_of(columns: Any, given: str | None = None) -> str:
    """The column a threshold applies to (:func:`.clustering.decision_column`), checked."""
    cols = list(columns)
    if given is not None and given not in cols:
        raise UsageError(f"--score-column {given!r} is not in the pairs (columns: {cols})")
    return decision_column(cols, given)


def entity_frame(pairs: Any, records: Any, threshold: float | None, score_column: str,
                 client: Any) -> Any:
    """Dask frame ``id, entity_id`` for every record of ``records`` (a Dask frame indexed
    by record id): the smallest id of its connected component over the pairs with
    ``score_column >= threshold`` (all pairs when None)."""
    from ..engine.clustering import cluster_dask

    labels = cluster_dask(pairs, threshold, score_column=score_column, client=client)
    ids = records.map_partitions(lambda p: pd.DataFrame({"id": p.index.to_numpy()}),
                                 meta=pd.DataFrame({"id": records._meta.index.to_numpy()}))
    dtype = ids._meta["id"].dtype  # the records' id dtype (pairs may read back as string)
    if pd.api.types.is_object_dtype(dtype):
        dtype = pd.StringDtype()
        ids = ids.astype({"id": dtype})
    found = labels.reset_index().astype({"id": dtype, "entity_id": _nullable(dtype)})
    out = ids.merge(found, on="id", how="left")  # unmatched: <NA>, never a float

    def _own(part: pd.DataFrame) -> pd.DataFrame:
        own = part["entity_id"].where(part["entity_id"].notna(), part["id"])
        return part.assign(entity_id=own.astype(part["id"].dtype))

    return out.map_partitions(_own, meta=out._meta.assign(
        entity_id=out._meta["entity_id"].astype(out._meta["id"].dtype)))


def _nullable(dtype: Any) -> Any:
    """A dtype that holds ``dtype``'s values and a missing value exactly: 64-bit ids as
    floats would lose their last bits (a left merge makes missing entity ids NaN)."""
    if getattr(dtype, "kind", None) in ("i", "u") and not isinstance(
            dtype, pd.api.extensions.ExtensionDtype):
        return f"{'U' if dtype.kind == 'u' else ''}Int{dtype.itemsize * 8}"
    return dtype


def write_entities(entities: Any, path: str, client: Any) -> dict[str, Any]:
    """Write the entity frame as parquet (by the workers) and return counts read back
    from it: records, entities, the largest entity."""
    import dask.dataframe as dd

    client.compute(entities.to_parquet(path, write_index=False, compute=False,
                                       write_metadata_file=False,
                                       name_function=lambda i: PART_NAME.format(task=i)),
                   sync=True)
    written = dd.read_parquet(path)
    sizes = written.groupby("entity_id").size()
    n_rec, n_ent, largest = client.compute(
        [written.shape[0], sizes.shape[0], sizes.max()], sync=True)
    info = {"records": int(n_rec), "entities": int(n_ent),
            "largest": int(largest) if n_rec else 0}
    with open(os.path.join(path, ENTITIES_FILE), "w", encoding="utf-8") as fh:
        json.dump(info, fh)  # marks the directory as erblock's (``--overwrite`` may replace it)
    return {**info, "path": path}


def in_memory_entities(pairs: pd.DataFrame, ids: pd.Index, threshold: float | None,
                       score_column: str) -> tuple[pd.Series, dict[str, Any]]:
    """Entity ids of pairs held on the client (a run without ``-o``)."""
    from ..matchers.clustering import cluster

    labels = cluster(pairs, threshold, ids=ids, score_column=score_column)
    sizes = labels.value_counts()
    return labels, {"records": int(len(labels)), "entities": int(len(sizes)),
                    "largest": int(sizes.max()) if len(sizes) else 0}


def cmd_cluster(args: argparse.Namespace) -> int:
    """``erblock cluster PAIRS -o ENTITIES [--threshold T] [--records IN --id COL]``."""
    import dask.dataframe as dd

    check_apart(args.output, [args.pairs, args.records], fmt=getattr(args, "format", None))
    local = local_paths(args.pairs)
    if local and not any(os.path.exists(p) for p in local):
        raise FileNotFoundError(f"pairs {args.pairs!r}: no such file or directory")
    client = _client(args)
    try:
        pairs = dd.read_parquet(args.pairs)
    except (FileNotFoundError, OSError, ValueError) as exc:
        raise FileNotFoundError(f"pairs {args.pairs!r} could not be read: {exc}") from exc
    missing = {"left_id", "right_id"} - set(pairs.columns)
    if missing:
        raise UsageError(f"pairs {args.pairs!r}: no {sorted(missing)} column (expected the "
                         "output of erblock dedupe/link -o)")
    if pairs["left_id"].dtype != pairs["right_id"].dtype:  # one input's ids: one type
        raise UsageError(f"pairs {args.pairs!r}: left_id is {pairs['left_id'].dtype} but "
                         f"right_id is {pairs['right_id'].dtype}; the ids of one input's "
                         "records are of one type (a dedupe's pairs)")
    mode = _run_mode(args.pairs)
    said_link, why = mode == "link", ""
    if mode is None and client.compute((pairs["left_id"] == pairs["right_id"]).any(),
                                       sync=True):  # no run report: judged by the ids
        why = (" (a pair of two equal ids, which a dedupe never writes; the run report "
               "beside them would say)")
    if why or said_link:
        raise UsageError(f"pairs {args.pairs!r} are a link's{why}: the ids of its two inputs may "
                         "coincide, so one set of entities cannot hold them; for one link "
                         "per record use erblock link --cardinality 1:1")
    column = score_column_of(pairs.columns, args.score_column)
    threshold = args.threshold
    try:  # on match_probability or score in [0, 1]; a match weight (bits) any number
        check_threshold(threshold, column, "--threshold")
    except ValueError as exc:
        raise UsageError(str(exc).replace("score_column='match_weight'",
                                          "--score-column match_weight")) from None
    if threshold is None and column == "match_probability":  # as erblock.cluster does
        report = written_report(pairs)
        rows = client.compute(pairs.shape[0], sync=True) if report else 0
        threshold = decision_threshold(column, None, report, int(rows))
    if threshold is not None and column not in pairs.columns:
        raise UsageError(f"--threshold applies to {column!r}, which the pairs do not have")
    if args.records is not None:
        records = _inputs(args, [args.records], client)[0]
        _check_overlap(pairs, records, args, client)
    else:  # every id seen in a pair
        ends = [pairs[["left_id"]].rename(columns={"left_id": "id"}),
                pairs[["right_id"]].rename(columns={"right_id": "id"})]
        records = dd.concat(ends).drop_duplicates().set_index("id", sort=False)
    with staged_output(args.output, args.overwrite) as work:
        assert work is not None
        info = write_entities(entity_frame(pairs, records, threshold, column, client),
                              work, client)
    info["path"] = args.output
    info["score_column"], info["threshold"] = column, threshold
    if args.json:
        print(to_json_line(info))
    else:
        _say(args, f"{info['records']:,} records in {info['entities']:,} entities (largest "
                   f"{info['largest']:,}) written to {args.output}")
    return 0


def _run_mode(path: str) -> str | None:
    """The mode (``link``/``dedupe``) the run that wrote ``path`` recorded, if any."""
    from ..report import RunReport

    try:
        return RunReport.of(path).mode
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _id_kind(dtype: Any) -> str:
    """"numbers" or "text" (or the dtype's name): ids of one kind compare as values."""
    if pd.api.types.is_bool_dtype(dtype):
        return str(dtype)
    if pd.api.types.is_numeric_dtype(dtype):
        return "numbers"
    if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        return "text"
    return str(dtype)


def _check_overlap(pairs: Any, records: Any, args: argparse.Namespace, client: Any) -> None:
    """Refuse ``--records`` that are not the run's input under its ids (an ``--id``
    forgotten): ids of another kind than the pairs' (row numbers against text ids), or
    an id of a pair that is no record id (its entity would join the wrong record)."""
    import dask.dataframe as dd

    advice = "give the --id the run used"
    rec_kind, pair_kind = _id_kind(records._meta.index.dtype), _id_kind(
        pairs._meta["left_id"].dtype)
    if rec_kind != pair_kind:
        read = "row numbers: no --id" if args.id is None else f"--id {args.id}"
        fix = advice if args.id is None else (
            "give --records the run's input in its format (CSV ids are read as text, "
            "parquet ids keep their type)")
        raise UsageError(f"--records {args.records!r}: its record ids are {rec_kind} "
                         f"({read}), the ids of the pairs in {args.pairs!r} {pair_kind}; "
                         f"{fix}")
    ids = records.map_partitions(lambda p: pd.DataFrame({"id": p.index.to_numpy()}),
                                 meta=pd.DataFrame({"id": records._meta.index.to_numpy()}))
    ends = dd.concat([pairs[["left_id"]].rename(columns={"left_id": "id"}),
                      pairs[["right_id"]].rename(columns={"right_id": "id"})])
    if pd.api.types.is_object_dtype(ids._meta["id"].dtype) or \
            ids._meta["id"].dtype != ends._meta["id"].dtype:
        ids, ends = ids.astype({"id": "string"}), ends.astype({"id": "string"})
    ends, unique = ends.drop_duplicates(), ids.drop_duplicates()
    n_ids, n_unique, n_ends, hits = client.compute(
        [ids.shape[0], unique.shape[0], ends.shape[0],
         dd.merge(ends, unique, on="id").shape[0]], sync=True)
    if n_unique < n_ids:
        many = n_ids - n_unique
        raise UsageError(f"--records {args.records!r}: "
                         + ("a record id repeats" if many == 1 else f"{many:,} record ids repeat")
                         + f", but each record gets one entity by its id; {advice} (its "
                         "values are unique)")
    if n_ends and not hits:
        raise UsageError(f"--records {args.records!r}: none of its record ids is an id of the "
                         f"pairs in {args.pairs!r}; {advice}")
    if hits < n_ends:
        raise UsageError(f"--records {args.records!r}: {n_ends - hits:,} of the {n_ends:,} "
                         f"record ids in the pairs of {args.pairs!r} are no record id of it "
                         f"(is it the run's input?); {advice}")
