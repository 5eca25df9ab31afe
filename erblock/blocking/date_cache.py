"""The dates this process has read, by text: a job reads the same dates many times.

A ``date`` comparison or key reads a column's distinct texts in every task that holds
them: the date-order count, the check for unreadable values, the random-pair sample, the
blocking keys and each reduce task's records all parse the same dates again, and parsing
(a regular expression per format family, ``strptime`` per tried format) is most of a
person link's date work. :data:`READ` keeps, per process (a worker, or the client when a
job runs there), the reading of every distinct text seen, per ``format=`` and preferred
orders, and parses only the texts it has not seen. By the default formats, and by a
``format=`` without ``%f``, a text's reading depends on that text alone, so the result
is the one a fresh parse gives; the day is part of the key, as a two-digit year's
century depends on it. Formats with ``%f`` are parsed every time (pandas reads a batch
with fractions finer than a microsecond in nanoseconds, where a year before 1677 does
not fit; the parse cuts such fractions only after a ``.`` or ``,``). Bounded: keeping
more than :data:`MAX_TEXTS` texts in all starts afresh, and texts longer than
:data:`MAX_LENGTH` (no date is written so long) are not kept.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

#: distinct texts kept in all (about 150 bytes each for a ten-character date)
MAX_TEXTS = 200_000
#: texts longer than this are parsed every time, never kept
MAX_LENGTH = 64
#: directives whose reading depends on the other values parsed with it
_BATCH = re.compile(r"%f")

Readings = tuple[np.ndarray, np.ndarray, np.ndarray]  #: days, parsed, format per text


def today() -> _dt.date:
    """The day a reading is kept for (a two-digit year in the future is a century
    earlier, so its reading changes with the day)."""
    return _dt.date.today()


class _Kept:
    """One reading's texts and their days, parsed flags and formats, by row. Rows are
    found through a frozen index (pandas' vectorised hash look-up, built once per
    freeze) and a dict of the texts added since; the index is rebuilt when the dict
    outgrows a quarter of it (and 1,024), so rebuilds cost O(1) per text kept,
    amortised."""

    def __init__(self) -> None:
        self.frozen = pd.Index([], dtype=object)
        self.recent: dict[str, int] = {}
        self.texts = np.full(1024, None, dtype=object)
        self.days = np.zeros(1024, dtype=np.int64)
        self.ok = np.zeros(1024, dtype=bool)
        self.by = np.full(1024, None, dtype=object)

    def __len__(self) -> int:
        return len(self.frozen) + len(self.recent)

    def rows(self, texts: np.ndarray) -> np.ndarray:
        """The row of each of ``texts`` (an object array), -1 where not kept."""
        rows = self.frozen.get_indexer(pd.Index(texts, dtype=object)) if len(
            self.frozen) else np.full(len(texts), -1, dtype=np.intp)
        miss = np.flatnonzero(rows < 0)
        if len(miss) and self.recent:
            get = self.recent.get
            rows[miss] = np.fromiter((get(t, -1) for t in texts[miss]), dtype=np.intp,
                                     count=len(miss))
        return rows

    def add(self, texts: np.ndarray, days: np.ndarray, ok: np.ndarray, by: np.ndarray
            ) -> None:
        new = np.flatnonzero(self.rows(texts) < 0)  # another thread may have kept some
        new = new[~pd.Index(texts[new], dtype=object).duplicated()]
        n = len(self)
        if n + len(new) > len(self.days):  # room doubled: amortised copies
            size = max(2 * len(self.days), n + len(new))
            self.texts, self.days, self.ok, self.by = (
                _grown(a, n, size) for a in (self.texts, self.days, self.ok, self.by))
        at = np.arange(n, n + len(new))
        self.texts[at], self.days[at], self.ok[at], self.by[at] = (
            texts[new], days[new], ok[new], by[new])
        self.recent.update(zip(texts[new].tolist(), at.tolist()))
        if len(self.recent) > max(1024, len(self.frozen) // 4):
            self.frozen = pd.Index(self.texts[:n + len(new)], dtype=object)
            self.recent = {}


def _grown(a: np.ndarray, n: int, size: int) -> np.ndarray:
    """The first ``n`` entries of ``a`` in an array of ``size``."""
    out = np.full(size, None, dtype=object) if a.dtype == object else np.zeros(size, a.dtype)
    out[:n] = a[:n]
    return out


class ReadCache:
    """Readings of distinct texts per (format, preferred orders, day); thread-safe."""

    def __init__(self, max_texts: int = MAX_TEXTS) -> None:
        self.max_texts = max_texts
        self._lock = threading.Lock()
        self._seen: dict[tuple[Any, ...], _Kept] = {}

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._seen.values())

    def read(self, uniq: pd.Series, fmt: str | None, prefer: Sequence[str],
             parse: Callable[[pd.Series, str | None, Sequence[str]], Readings]) -> Readings:
        """``parse(uniq, fmt, prefer)``, parsing only the texts not read before."""
        if fmt is not None and _BATCH.search(fmt.replace("%%", "")):
            return parse(uniq, fmt, prefer)
        key = (fmt, tuple(sorted(prefer)), today())
        texts = uniq.to_numpy(dtype=object)
        n = len(texts)
        days, ok = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        by = np.full(n, None, dtype=object)
        hit = np.zeros(n, dtype=bool)
        with self._lock:
            kept = self._seen.get(key)
            if kept is not None and n:
                rows = kept.rows(texts)
                hit = rows >= 0
                at = rows[hit]
                days[hit], ok[hit], by[hit] = kept.days[at], kept.ok[at], kept.by[at]
        todo = np.flatnonzero(~hit)
        if not len(todo):
            return days, ok, by
        new = uniq.iloc[todo].reset_index(drop=True)
        days[todo], ok[todo], by[todo] = parse(new, fmt, prefer)
        short = np.fromiter(map(len, texts[todo]), dtype=np.int64, count=len(todo)) <= MAX_LENGTH
        keep = todo[short]
        # a parse across midnight may have read a two-digit year by the new day
        if len(keep) <= self.max_texts and today() == key[2]:
            self._keep(key, texts[keep], days[keep], ok[keep], by[keep])
        return days, ok, by

    def _keep(self, key: tuple[Any, ...], texts: np.ndarray, days: np.ndarray,
              ok: np.ndarray, by: np.ndarray) -> None:
        with self._lock:
            for old in [k for k in self._seen if k[2] != key[2]]:  # another day's
                del self._seen[old]
            if sum(len(v) for v in self._seen.values()) + len(texts) > self.max_texts:
                self._seen.clear()
            self._seen.setdefault(key, _Kept()).add(texts, days, ok, by)


#: this process's readings
READ = ReadCache()
