"""Dates written in one order throughout: counted and rewritten per partition (worker side).

See :mod:`erblock.engine.dateorders` for the driver that decides from these counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...blocking.date_parsing import conventions, read_in_order


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
        out[c] = [(other, n_other, n_either, n_default) for other, n_other, n_either,
                  n_default, *_ in conventions(values, weights=held)]
    return out


def with_dates_read(part: pd.DataFrame, prefer: Mapping[str, Sequence[str]]) -> Any:
    """The partition with each column of ``prefer`` read in its preferred orders
    (:func:`~erblock.blocking.date_parsing.read_in_order`); the other columns as given."""
    if not prefer:
        return part
    return part.assign(**{c: read_in_order(part[c], p) for c, p in prefer.items()})
