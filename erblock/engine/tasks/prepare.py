"""Prepare, profile and sample one input partition (worker side)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ...balancing.bdm import count_partition
from ...balancing.sketch import SketchSpec
from ...balancing.sketch import build as build_sketch
from ...balancing.sketch import merge as merge_sketches
from ...blocking.ids import block_id_items
from ...blocking.keys import NULL_BLOCK, KeySpec
from ...blocking.neighbourhood import SortedNeighbourhood, SortOrder, positions
from ...blocking.text import as_key_strings, blank
from ...matchers.comparisons import Comparison
from ..schema import (
    BLOCK,
    ID,
    PART,
    PASS,
    RID,
    RID_SHIFT,
    SRC,
    WINDOW,
    key_column,
    value_column,
)

MISSING_ID = np.uint64(0)  #: the id hash of a missing record id (checked on the client)
PASS_MIX = np.int64(-7046029254386353131)  # odd 64-bit constant mixing the pass into block ids


def mix_pass(ids: np.ndarray, p: int) -> np.ndarray:
    """Block ids of pass ``p`` made distinct from other passes' ids (pass 0 unchanged)."""
    if p == 0:
        return ids
    with np.errstate(over="ignore"):
        out = ids * PASS_MIX + np.int64(p)
    out[ids == NULL_BLOCK] = NULL_BLOCK
    out[(out == NULL_BLOCK) & (ids != NULL_BLOCK)] = NULL_BLOCK + 1
    return out


def prepare_partition(
    df: pd.DataFrame,
    *,
    part: int,
    src: int,
    keys: Sequence[KeySpec],
    value_columns: Sequence[str],
    id_column: str | None = None,
    orders: dict[int, SortOrder] | None = None,
) -> pd.DataFrame:
    """Records of one input partition, one row per (key pass, block of the record).

    Columns: see :mod:`erblock.engine.schema`. A single-valued key gives a record at most
    one row per pass, a multi-valued key one per key, a sorted-neighbourhood key two (the
    blocks of its chunk and of the chunk before, one in chunk 0; ``WINDOW`` holds the
    row's block chunk; ``orders[p]`` is
    pass ``p``'s order table for this partition). Records without any key get one row
    with ``BLOCK == NULL_BLOCK``. The compared columns keep their dtype.
    """
    n = len(df)
    ids = df[id_column].to_numpy() if id_column else df.index.to_numpy()
    rid = (np.int64(part) << np.int64(RID_SHIFT)) + np.arange(n, dtype=np.int64)
    sn_pos: dict[int, np.ndarray] = {}
    per_pass = []
    for p, k in enumerate(keys):
        if k.ordered:
            assert isinstance(k, SortedNeighbourhood)
            if orders is None or p not in orders:
                raise RuntimeError(f"pass {p} ({k!r}) needs the order of all records")
            sn_pos[p] = positions(df, k, orders[p])
            per_pass.append(k.blocks(sn_pos[p]))
        else:
            per_pass.append(block_id_items(df, k))
    base: dict[str, Any] = {ID: ids, RID: rid, PART: np.full(n, part, dtype=np.int64),
                            SRC: np.full(n, src, dtype=np.int8)}
    if len(keys) > 1 or any(k.multi for k in keys):
        for p, (pos, b) in enumerate(per_pass):
            base[key_column(p)] = (sn_pos[p] if p in sn_pos else
                                   key_lists(pos, mix_pass(b, p), n) if keys[p].multi
                                   else single_keys(pos, b, n))
    for i, col in enumerate(value_columns):
        base[value_column(i)] = df[col].array  # keeps the dtype (arrow dates too)
    frame = pd.DataFrame(base)
    pieces = []
    no_key = np.ones(n, dtype=bool)
    windowed = {WINDOW: np.int64(-1)} if sn_pos else {}
    for p, (pos, b) in enumerate(per_pass):
        no_key[pos] = False
        extra = {WINDOW: b} if p in sn_pos else windowed
        pieces.append(frame.iloc[pos].assign(**{BLOCK: mix_pass(b, p), PASS: np.int8(p)},
                                             **extra))
    if no_key.any() or n == 0:
        pieces.append(frame[no_key].assign(**{BLOCK: NULL_BLOCK, PASS: np.int8(-1)},
                                           **windowed))
    out = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0]
    for i, col in enumerate(value_columns):
        # keep the original dtype of the compared columns (concat of empty frames may lose it)
        if out[value_column(i)].dtype != df[col].dtype:
            out[value_column(i)] = out[value_column(i)].astype(df[col].dtype)
    return out.reset_index(drop=True)


def single_keys(pos: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """The raw block id of every record of a single-valued pass (``NULL_BLOCK``: none)."""
    out = np.full(n, NULL_BLOCK, dtype=np.int64)
    out[pos] = ids
    return out


def key_lists(pos: np.ndarray, ids: np.ndarray, n: int) -> pd.arrays.ArrowExtensionArray:
    """Every record's block ids of a multi-valued pass, sorted, packed as int64 bytes in an
    arrow binary column (which every shuffle moves; the comparer decides from two
    records' lists where their pair is compared, :mod:`.keysets`)."""
    order = np.lexsort((ids, pos))
    pos, ids = pos[order], ids[order].astype("<i8")
    offsets = np.searchsorted(pos, np.arange(n + 1)) * 8
    if offsets[-1] >= 2**31:  # arrow binary offsets are int32
        raise ValueError(
            f"the key lists of this partition take {offsets[-1] / 2**30:.1f} GiB (each of a "
            "record's rows carries all its keys, so q-grams of long texts grow with the square "
            "of their count): use more input partitions, tokens or minhash instead of qgrams, "
            "or a larger q")
    offsets = offsets.astype(np.int32)
    packed = pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                           pa.py_buffer(ids.tobytes())])
    return pd.arrays.ArrowExtensionArray(packed)


def _id_hashes(part: pd.DataFrame) -> np.ndarray:
    """Hashes of the partition's record ids; a missing id hashes to :data:`MISSING_ID`."""
    first = part.drop_duplicates(RID)
    h = pd.util.hash_pandas_object(first[ID], index=False).to_numpy().copy()
    h[h == MISSING_ID] ^= np.uint64(1)  # keep the marker for missing ids only
    h[first[ID].isna().to_numpy()] = MISSING_ID
    return h


def profile_partition(part: pd.DataFrame, check_ids: bool) -> dict[str, Any]:
    """BDM rows of one prepared partition: records per (block, partition, source), the
    number of distinct records, and (``check_ids``) the hashes of their ids."""
    # a prepared partition holds one input partition of one source
    number = int(part[PART].to_numpy()[0]) if len(part) else 0
    src = int(part[SRC].to_numpy()[0]) if len(part) else 0
    out: dict[str, Any] = count_partition(part[BLOCK].to_numpy(np.int64), number, src,
                                          part[PASS].to_numpy(np.int8))
    out["records"] = int(len(np.unique(part[RID].to_numpy(np.int64))))
    if check_ids:
        out["ids"] = _id_hashes(part)
    return out


def sketch_partition(part: pd.DataFrame, spec: SketchSpec, check_ids: bool) -> dict[str, Any]:
    """Sketch of one prepared partition: O(d·w) whatever its blocks."""
    blk = part[BLOCK].to_numpy(np.int64)
    keyed = blk != NULL_BLOCK
    out: dict[str, Any] = {
        "sketch": build_sketch(blk[keyed], spec),
        "records": int(part[RID].nunique()),
        "not_blocked": int((~keyed).sum()),
    }
    if check_ids:
        out["ids"] = _id_hashes(part)
    return out


def merge_sketch_results(*results: dict[str, Any]) -> dict[str, Any]:
    """Sum partition sketches and record counts (id hashes are concatenated)."""
    out: dict[str, Any] = {
        "sketch": merge_sketches(r["sketch"] for r in results),
        "records": sum(r["records"] for r in results),
        "not_blocked": sum(r["not_blocked"] for r in results),
    }
    ids = [r["ids"] for r in results if "ids" in r]
    if ids:
        out["ids"] = np.concatenate(ids)
    return out


def sample_records(part: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    """A deterministic sample of a prepared partition's records (one row per record)."""
    first = part.drop_duplicates(RID)
    if fraction >= 1.0:
        return first
    return first[_sampled(_record_keys(first), fraction, seed)]


def _record_keys(part: pd.DataFrame) -> np.ndarray:
    """The records' own ids, hashed, with the source mixed in. Their ids, not their
    positions: a sample drawn by position changed with the partitioning (and with it u,
    and every match weight, between npartitions=1 and 3, or a laptop and a cluster). The
    source: ids often restart in every input, so a link sampled on the ids alone would
    draw the same records on both sides (pair (i, i) with probability f instead of f²:
    two extracts of one table would give a random-pair sample full of true matches)."""
    ids = pd.util.hash_pandas_object(part[ID], index=False).to_numpy().view(np.int64)
    with np.errstate(over="ignore"):
        return ids + part[SRC].to_numpy(np.int64) * PASS_MIX


def _sampled(keys: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Whether each int64 key falls in a deterministic ``fraction`` of the hash space."""
    h = pd.util.hash_array(keys ^ np.int64(seed), categorize=False)
    return h < np.uint64(int(fraction * 2.0**64 - 1))


def probe_rows(part: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    """Every row (all key passes) of a deterministic sample of a prepared partition's
    records: what the keep-rate probe (:mod:`erblock.engine.keeprate`) pairs up."""
    if fraction >= 1.0:
        return part
    # by position: the probe sizes tasks and memory, the run's results never depend on it
    with np.errstate(over="ignore"):
        keys = part[RID].to_numpy(np.int64) + part[SRC].to_numpy(np.int64) * PASS_MIX
    return part[_sampled(keys, fraction, seed)]


def value_counts(part: pd.DataFrame, column: str, comparison: Comparison) -> pd.Series:
    """Records per value of a prepared value column (one row per record), the values
    normalised as ``comparison`` compares them (term frequencies)."""
    first = part.drop_duplicates(RID)
    vals = comparison.kernel.tf_values(first[column]).dropna().astype(str)
    return vals[~blank(vals)].value_counts(sort=False)  # a blank value is missing


def corpus_counts(part: pd.DataFrame, column: str, comparison: Comparison
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """Document frequencies of one prepared partition for ``comparison``'s corpus
    statistics: (distinct items, records holding each, records with any item)."""
    first = part.drop_duplicates(RID)
    prepared = comparison.prepare(first[column])
    items = comparison.kernel.corpus_items(prepared)
    uniq, counts = np.unique(items, return_counts=True)
    return uniq, counts.astype(np.int64), int((~prepared.missing).sum())


def invalid_counts(part: pd.DataFrame, checked: dict[str, tuple[str, Comparison]]
                   ) -> dict[str, tuple[int, int, list[str], list[Any]]]:
    """Per comparison: (records of a prepared partition whose value is present but cannot
    be compared, e.g. an unparsable date, which the comparison treats as missing; records
    whose value is present; up to three distinct such values, for the message; what
    :meth:`~erblock.matchers.methods.base.Method.misread` finds)."""
    first = part.drop_duplicates(RID)
    out = {}
    for name, (col, comp) in checked.items():
        values = first[col]
        bad, misread = comp.kernel.inspect(values)
        bad = np.zeros(len(values), dtype=bool) if bad is None else bad
        present = int((~blank(as_key_strings(values))).sum())
        shown = as_key_strings(values[bad]).str.strip().drop_duplicates().head(3).tolist()
        out[name] = (int(bad.sum()), present, [str(v) for v in shown], misread)
    return out
