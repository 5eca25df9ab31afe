"""Packing match tasks onto reduce tasks: pure policies over arrays of costs.

A packing policy is a function ``(costs, r) -> reduce task per item``; planners take it
as an argument so tests can force any assignment without patching.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

Packing = Callable[[np.ndarray, int], np.ndarray]


def lpt(costs: np.ndarray, r: int, *, tail: float = 0.01) -> np.ndarray:
    """Longest processing time first: each item, largest first, to the least-loaded task.

    Greedy LPT is within 4/3 of the optimal makespan. Items no larger than ``tail`` times
    the mean load (typically millions of small blocks) are placed by water filling
    instead of one heap operation each: the level λ that the small items fill the tasks
    up to is computed, and items are laid, largest first, into the spare capacities
    ``λ − load`` in task order, so every task ends within one small item of λ. Ties
    break by item index, so the result is deterministic.
    """
    costs = np.asarray(costs, dtype=np.float64)
    out = np.zeros(len(costs), dtype=np.int64)
    if len(costs) == 0:
        return out
    if r < 1:
        raise ValueError(f"r must be >= 1, got {r}")
    order = np.argsort(-costs, kind="stable")
    small = costs[order] <= tail * costs.sum() / r
    n_big = int(np.argmax(small)) if small.any() else len(order)
    heap = [(0.0, t) for t in range(r)]
    for i in order[:n_big]:
        load, t = heapq.heappop(heap)
        out[i] = t
        heapq.heappush(heap, (load + costs[i], t))
    rest = order[n_big:]
    if len(rest):
        loads = np.zeros(r, dtype=np.float64)
        for load, t in heap:
            loads[t] = load
        out[rest] = _water_fill(loads, costs[rest])
    return out


def _water_fill(loads: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Reduce task per item so that loads rise evenly to a common level."""
    by_load = np.lexsort((np.arange(len(loads)), loads))
    sorted_loads = loads[by_load]
    total = items.sum()
    # Level λ: the smallest with sum(max(0, λ - load)) == total, over the k lowest tasks.
    prefix = np.cumsum(sorted_loads)
    k = np.arange(1, len(loads) + 1)
    levels = (total + prefix) / k
    upper = np.r_[sorted_loads[1:], np.inf]
    k_fill = int(np.argmax(levels <= upper))
    level = levels[k_fill]
    capacity = np.maximum(level - sorted_loads[: k_fill + 1], 0.0)
    bounds = np.cumsum(capacity)
    midpoints = np.cumsum(items) - items / 2
    slot = np.minimum(np.searchsorted(bounds, midpoints, side="right"), k_fill)
    return by_load[slot].astype(np.int64)


def hashed(keys: np.ndarray, r: int) -> np.ndarray:
    """Reduce task of each key by hashing (``key mod r`` on the unsigned 64-bit id)."""
    keys = np.asarray(keys, dtype=np.int64)
    return (keys.view(np.uint64) % np.uint64(r)).astype(np.int64)


def round_robin(costs: np.ndarray, r: int) -> np.ndarray:
    """Items to tasks in turn, ignoring cost (a deliberately naive policy for tests)."""
    return np.arange(len(costs), dtype=np.int64) % r
