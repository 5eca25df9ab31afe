"""Dates written in one order throughout: counted and rewritten per partition (worker side).

See :mod:`erblock.engine.dateorders` for the driver that decides from these counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...blocking.date_parsing import conventions, read_in_order

_ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"  #: ASCII digits only (RE2's \d is ASCII too)


def date_order_counts(part: pd.DataFrame, columns: Sequence[str]
                      ) -> dict[str, list[tuple[str, int, int, int]]]:
    """Per column, :func:`~erblock.blocking.date_parsing.conventions`' counts of the
    partition's values: (other order, values only it reads, values either order reads
    as different dates, values only the default reads)."""
    out: dict[str, list[tuple[str, int, int, int]]] = {}
    for c in columns:  # each distinct value read once, counted as often as it is held
        codes, uniques = pd.factorize(part[c], use_na_sentinel=True)
        held = np.bincount(codes[codes >= 0], minlength=len(uniques))
        values = pd.Series(uniques, dtype=part[c].dtype)
        if pd.api.types.infer_dtype(values, skipna=True) == "string":  # ISO: no order
            iso = _iso(values)
            values, held = values[~iso].reset_index(drop=True), held[~iso]
        out[c] = [(other, n_other, n_either, n_default) for other, n_other, n_either,
                  n_default, *_ in conventions(values, weights=held)]
    return out


def _iso(values: pd.Series) -> np.ndarray:
    """Which ``values`` are written ``YYYY-MM-DD`` in ASCII digits: no reading of
    :data:`~erblock.blocking.date_parsing.READINGS` reads them (their last part is no
    four-digit year), so they count for no order and need no parsing (vectorised)."""
    text = pa.array(values.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    hit = pc.match_substring_regex(pc.utf8_trim_whitespace(text), _ISO_DATE)
    return np.asarray(hit.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def with_dates_read(part: pd.DataFrame, prefer: Mapping[str, Sequence[str]]) -> Any:
    """The partition with each column of ``prefer`` read in its preferred orders
    (:func:`~erblock.blocking.date_parsing.read_in_order`); the other columns as given."""
    if not prefer:
        return part
    return part.assign(**{c: read_in_order(part[c], p) for c, p in prefer.items()})
