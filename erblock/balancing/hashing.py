"""The one 64-bit mixing function of the planners (sketch rows, positions, hash pieces)."""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on 64-bit values (a fast, well-mixing bijection; int64
    input is read as its uint64 bits). Deterministic across processes and platforms."""
    x = np.asarray(x)
    x = x.view(np.uint64) if x.dtype == np.int64 else x.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))
