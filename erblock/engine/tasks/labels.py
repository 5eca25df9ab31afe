"""The key text of given blocks, read from one input partition (worker side).

A plan knows its blocks by id, a 64-bit hash of the key (:mod:`erblock.blocking.ids`);
to say *which* key value makes a block large (``"smith"``, ``1999 + data``),
:func:`block_labels` hashes the partition's keys again as the preparation does
(:func:`~.prepare.prepare_partition`) and returns the text of the wanted ids it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...blocking.ids import hash_keys
from ...blocking.keys import KeySpec
from ...blocking.text import SEPARATOR
from .dates import with_dates_read
from .prepare import mix_pass


def block_labels(part: pd.DataFrame, keys: Sequence[KeySpec],
                 prefer: Mapping[str, Sequence[str]], wanted: np.ndarray) -> dict[int, str]:
    """Block id -> key text, for the ids of ``wanted`` (pass-mixed, as a plan holds them)
    that this partition's records have. ``prefer``: the columns whose dates the run reads
    in another order (as the preparation did). Sorted-neighbourhood passes (blocks are
    windows of the order, not one value) and MinHash bands (hashes) have no text."""
    out: dict[int, str] = {}
    if len(part) == 0 or len(wanted) == 0:
        return out
    part = with_dates_read(part, prefer)
    for p, key in enumerate(keys):
        if key.ordered:
            continue
        _, values = key.items(part)
        if key.multi and pd.api.types.is_integer_dtype(values.dtype):
            continue
        ids = mix_pass(hash_keys(values, whole=not key.multi), p)
        hit = np.flatnonzero(np.isin(ids, wanted))
        if len(hit) == 0:
            continue
        found, first = np.unique(ids[hit], return_index=True)  # one record per block
        texts = values.iloc[hit[first]].astype(str).str.replace(SEPARATOR, " + ",
                                                                regex=False)
        out.update(zip(found.tolist(), texts.tolist()))
    return out
