"""Write a reduce task's pairs as one parquet part, atomically (worker side): whole
(:func:`write_part`) or streamed in row groups as the compare finds them
(:class:`PartWriter`)."""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import numpy as np
import pandas as pd

PART_NAME = "part-{task:05d}.parquet"


def sort_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs in a canonical order: by left id, then right id."""
    try:
        return pairs.sort_values(["left_id", "right_id"], kind="stable").reset_index(drop=True)
    except TypeError:  # ids of mixed types: order by their text
        key = pairs["left_id"].astype(str) + "\x00" + pairs["right_id"].astype(str)
        return pairs.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)


class PartWriter:
    """``part-<task>.parquet`` written row group by row group (one per :meth:`write`),
    under a temporary name that :meth:`close` renames: a recomputed task rewrites its part
    whole and a reader never sees half a part. ``rows``: how many kept pairs the compare
    gathers before it writes them (see :func:`stream_rows`)."""

    def __init__(self, out_dir: str, task: int, rows: int) -> None:
        self.final = os.path.join(out_dir, PART_NAME.format(task=task))
        self.tmp = f"{self.final}.{uuid.uuid4().hex}.tmp"
        self.rows = max(1, int(rows))
        self.pairs = 0
        self.seconds = 0.0
        self._writer: Any = None
        self._schema: Any = None

    def write(self, pairs: Any) -> None:
        """Write ``pairs`` (a pairs frame, or an arrow table of the same columns, whose
        text ids may be dictionary columns) as one row group.

        An arrow table goes as it is, without the arrow schema in the file: readers see
        plain text ids, not categories (parquet stores both alike)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not len(pairs):  # an empty task leaves no part (run.py writes one typed part
            return  # if the whole output is empty): its id types would be guesses
        start = time.perf_counter()
        if isinstance(pairs, pa.Table):
            same = self._schema is None or pairs.schema.equals(self._schema)
            table = pairs if same else pairs.cast(self._schema)
            # dictionary pages only where the column is one (text ids): hashing the
            # similarities for a dictionary costs a quarter of the write and they seldom
            # repeat enough to pay for it
            dicts = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
            options: dict[str, Any] = {"store_schema": False, "use_dictionary": dicts}
        else:
            table = pa.Table.from_pandas(pairs, preserve_index=False, schema=self._schema)
            options = {}
        if self._writer is None:
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self.tmp, table.schema, **options)
        self._writer.write_table(table)
        self.pairs += len(pairs)
        self.seconds += time.perf_counter() - start

    def close(self) -> float:
        """Finish the part (none if nothing was written); the seconds writing took."""
        start = time.perf_counter()
        if self._writer is not None:
            self._writer.close()
            os.replace(self.tmp, self.final)
        return self.seconds + time.perf_counter() - start

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if os.path.exists(self.tmp):
            os.remove(self.tmp)


def stream_rows(cell_budget: int) -> int:
    """Kept pairs a streaming compare gathers before writing them: an eighth of the
    chunk's cells (at least 2¹⁴). A streaming task also compares in chunks of at most this
    many cells, so it never holds more than twice as many kept pairs."""
    return max(1 << 14, cell_budget // 8)


def write_part(pairs: pd.DataFrame, out_dir: str, task: int) -> float:
    """Write one reduce task's pairs as ``part-<task>.parquet`` (nothing if it has
    none); the seconds it took.

    Written under a temporary name and renamed, so a recomputed task (a worker died)
    rewrites the same part whole and a reader never sees half a part.
    """
    if not len(pairs):  # as PartWriter: no part for an empty task
        return 0.0
    start = time.perf_counter()
    final = os.path.join(out_dir, PART_NAME.format(task=task))
    tmp = f"{final}.{uuid.uuid4().hex}.tmp"
    pairs.to_parquet(tmp, index=False, engine="pyarrow")
    os.replace(tmp, final)
    return time.perf_counter() - start
