"""The dates this process has read, by text: a job reads the same dates many times.

A ``date`` comparison or key reads a column's distinct texts in every task that holds
them: the date-order count, the check for unreadable values, the random-pair sample, the
blocking keys and each reduce task's records all parse the same dates again, and parsing
(a regular expression per format family, ``strptime`` per tried format) is most of a
person link's date work. :data:`READ` keeps, per process (a worker, or the client when a
job runs there), the reading of every distinct text seen, per ``format=`` and preferred
orders, and parses only the texts it has not seen. A text's reading depends on that text
alone (:func:`~.date_parsing.read_dates`), so the result is the one a fresh parse gives;
the day is part of the key, as a two-digit year's century depends on it. Bounded: a
reading that would outgrow :data:`MAX_TEXTS` starts afresh.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

#: distinct texts kept per reading (about 100 bytes each)
MAX_TEXTS = 200_000

Readings = tuple[np.ndarray, np.ndarray, np.ndarray]  #: days, parsed, format per text


def today() -> _dt.date:
    """The day a reading is kept for (a two-digit year in the future is a century
    earlier, so its reading changes with the day)."""
    return _dt.date.today()


class ReadCache:
    """Readings of distinct texts per (format, preferred orders, day); thread-safe."""

    def __init__(self, max_texts: int = MAX_TEXTS) -> None:
        self.max_texts = max_texts
        self._lock = threading.Lock()
        self._seen: dict[tuple[Any, ...], tuple[pd.Index, np.ndarray, np.ndarray,
                                                np.ndarray]] = {}

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v[0]) for v in self._seen.values())

    def read(self, uniq: pd.Series, fmt: str | None, prefer: Sequence[str],
             parse: Callable[[pd.Series, str | None, Sequence[str]], Readings]) -> Readings:
        """``parse(uniq, fmt, prefer)``, parsing only the texts not read before."""
        key = (fmt, tuple(prefer), today())
        n = len(uniq)
        days, ok = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        by = np.full(n, None, dtype=object)
        with self._lock:
            got = self._seen.get(key)
        todo = np.arange(n)
        if got is not None and n:
            pos = got[0].get_indexer(pd.Index(uniq.to_numpy(dtype=object), dtype=object))
            hit = pos >= 0
            days[hit], ok[hit], by[hit] = (a[pos[hit]] for a in got[1:])
            todo = np.flatnonzero(~hit)
        if not len(todo):
            return days, ok, by
        new = uniq.iloc[todo].reset_index(drop=True)
        days[todo], ok[todo], by[todo] = parse(new, fmt, prefer)
        self._keep(key, new, days[todo], ok[todo], by[todo])
        return days, ok, by

    def _keep(self, key: tuple[Any, ...], texts: pd.Series, days: np.ndarray,
              ok: np.ndarray, by: np.ndarray) -> None:
        with self._lock:
            for old in [k for k in self._seen if k[2] != key[2]]:  # another day's
                del self._seen[old]
            got = self._seen.get(key)
            if got is None or len(got[0]) + len(texts) > self.max_texts:
                got = (pd.Index([], dtype=object), days[:0], ok[:0], by[:0])
            if len(texts) > self.max_texts:
                return
            index = got[0].append(pd.Index(texts.to_numpy(dtype=object), dtype=object))
            first = ~index.duplicated()  # another thread may have kept some meanwhile
            arrays = [np.concatenate([a, b]) for a, b in zip(got[1:], (days, ok, by))]
            self._seen[key] = (index[first], *(a[first] for a in arrays))


#: this process's readings
READ = ReadCache()
