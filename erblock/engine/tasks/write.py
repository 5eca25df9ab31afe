"""Write a reduce task's pairs as one parquet part, atomically (worker side)."""

from __future__ import annotations

import os
import time
import uuid

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


def write_part(pairs: pd.DataFrame, out_dir: str, task: int) -> float:
    """Write one reduce task's pairs as ``part-<task>.parquet``; the seconds it took.

    Written under a temporary name and renamed, so a recomputed task (a worker died)
    rewrites the same part whole and a reader never sees half a part.
    """
    start = time.perf_counter()
    final = os.path.join(out_dir, PART_NAME.format(task=task))
    tmp = f"{final}.{uuid.uuid4().hex}.tmp"
    pairs.to_parquet(tmp, index=False, engine="pyarrow")
    os.replace(tmp, final)
    return time.perf_counter() - start
