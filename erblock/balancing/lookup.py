"""Exact row lookups in tables of integer columns (pure numpy, run by the router).

A plan's placements (:mod:`.placement`) find each record's row in a table of integer
keys (block, source, partition, …). :class:`Lookup` sorts a table once; a placement keeps
its own, so routing the partitions of a run builds it once per process.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["RADIX_LIMIT", "Lookup", "lookup"]


def _codes(uniq: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Rank of every value among the sorted distinct ``uniq`` (−1 when absent); a column of
    consecutive integers (sources, partitions) by subtraction."""
    if len(uniq) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    lo = int(uniq[0])
    if int(uniq[-1]) - lo == len(uniq) - 1:  # consecutive: no search
        code = values - lo
        return np.where((code >= 0) & (code < len(uniq)), code, -1)
    pos = np.minimum(np.searchsorted(uniq, values), len(uniq) - 1)
    return np.where(uniq[pos] == values, pos, -1).astype(np.int64)


#: combined keys stay below this (the codes are re-ranked when they would not)
RADIX_LIMIT = 2 ** 62


class Lookup:
    """Exact row lookup in a table of parallel integer columns with unique rows.

    Built once per table (a placement keeps its own, so routing the partitions of a run
    sorts the plan's table once per process, not once per partition). Columns are
    combined through dense codes, never hashed."""

    def __init__(self, table: Sequence[np.ndarray]) -> None:
        cols = [np.asarray(c, dtype=np.int64) for c in table]
        self.n = len(cols[0])
        self.uniq = [np.unique(c) for c in cols]
        #: after column k, the distinct combined keys when they were re-ranked to keep the
        #: mixed-radix key below RADIX_LIMIT (None: not needed)
        self.rerank: list[np.ndarray | None] = []
        key = _codes(self.uniq[0], cols[0])
        span = len(self.uniq[0])
        for u, c in zip(self.uniq[1:], cols[1:]):
            if span * max(len(u), 1) >= RADIX_LIMIT:
                table_keys = np.unique(key)
                key, span = _codes(table_keys, key), len(table_keys)
                self.rerank.append(table_keys)
            else:
                self.rerank.append(None)
            key = key * max(len(u), 1) + _codes(u, c)
            span *= max(len(u), 1)
        self.order = np.argsort(key, kind="stable")
        self.sorted = key[self.order]

    def _key(self, query: Sequence[np.ndarray]) -> np.ndarray:
        """The combined key of query rows (−1 where a value is not in the table)."""
        key = _codes(self.uniq[0], np.asarray(query[0], dtype=np.int64))
        for u, q, table_keys in zip(self.uniq[1:], query[1:], self.rerank):
            if table_keys is not None:
                key = np.where(key >= 0, _codes(table_keys, key), -1)
            c = _codes(u, np.asarray(q, dtype=np.int64))
            key = np.where((key >= 0) & (c >= 0), key * max(len(u), 1) + c, -1)
        return key

    def find(self, query: Sequence[np.ndarray]) -> np.ndarray:
        """Row of every query key, −1 when absent."""
        n_query = len(query[0])
        out = np.full(n_query, -1, dtype=np.int64)
        if self.n == 0 or n_query == 0:
            return out
        key = self._key(query)
        pos = np.minimum(np.searchsorted(self.sorted, key), len(self.sorted) - 1)
        hit = (key >= 0) & (self.sorted[pos] == key)
        out[hit] = self.order[pos[hit]]
        return out


def lookup(table: Sequence[np.ndarray], query: Sequence[np.ndarray]) -> np.ndarray:
    """Row of every query key in ``table`` (parallel integer columns, unique rows), −1 when
    absent (:class:`Lookup` built for this one query)."""
    return Lookup(table).find(query)
