"""Packing match tasks onto reduce tasks: pure policies over arrays of costs.

A packing policy is a function ``(costs, r) -> reduce task per item``; planners take it
as an argument so tests can force any assignment without patching. :func:`lpt` is the one
longest-processing-time implementation; its options cover every use in the planners
(initial loads, small items water-filled by size or in their given order) and
:func:`lpt_makespan` is the makespan of its schedule.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

Packing = Callable[[np.ndarray, int], np.ndarray]


def lpt(costs: np.ndarray, r: int, *, loads: np.ndarray | None = None,
        tail: float | None = 0.01, small_in_order: bool = False) -> np.ndarray:
    """Longest processing time first: each item, largest first, to the least-loaded task.

    Greedy LPT is within 4/3 of the optimal makespan. Items no larger than ``tail`` times
    the mean load (typically millions of small blocks) are placed by water filling
    instead of one heap operation each: the level λ that the small items fill the tasks
    up to is computed, and items are laid into the spare capacities ``λ − load`` in task
    order, so every task ends within one small item of λ. The small items are laid
    largest first, or with ``small_in_order`` in their given order (sketch cells: cells
    whose estimates are off then do not pile up on one task). ``tail=None`` places every
    item by the heap. ``loads`` are loads the tasks already carry. Ties break by task and
    item index, so the result is deterministic.
    """
    costs = np.asarray(costs, dtype=np.float64)
    out = np.zeros(len(costs), dtype=np.int64)
    if len(costs) == 0:
        return out
    if r < 1:
        raise ValueError(f"r must be >= 1, got {r}")
    start = np.zeros(r) if loads is None else np.asarray(loads, dtype=np.float64)
    if tail is None:
        big = np.ones(len(costs), dtype=bool)
    else:
        big = costs > tail * costs.sum() / r
    order = np.flatnonzero(big)
    order = order[np.argsort(-costs[order], kind="stable")]
    heap = [(float(v), t) for t, v in enumerate(start)]
    heapq.heapify(heap)
    for i in order.tolist():
        load, t = heapq.heappop(heap)
        out[i] = t
        heapq.heappush(heap, (load + costs[i], t))
    small = np.flatnonzero(~big)
    if len(small):
        if not small_in_order:
            small = small[np.argsort(-costs[small], kind="stable")]
        level = np.zeros(r)
        for load, t in heap:
            level[t] = load
        out[small] = _water_fill(level, costs[small])
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


def lpt_makespan(costs: np.ndarray, threads: int) -> float:
    """Finish time of the list schedule of ``costs`` on ``threads``, largest first."""
    costs = np.asarray(costs, dtype=np.float64)
    if not isinstance(threads, (int, np.integer)) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    if len(costs) == 0:
        return 0.0
    if threads >= len(costs):
        return float(costs.max())
    task = lpt(costs, int(threads), tail=None)
    return float(np.bincount(task, weights=costs, minlength=int(threads)).max())


def hashed(keys: np.ndarray, r: int) -> np.ndarray:
    """Reduce task of each key by hashing (``key mod r`` on the unsigned 64-bit id)."""
    keys = np.asarray(keys, dtype=np.int64)
    return (keys.view(np.uint64) % np.uint64(r)).astype(np.int64)


def round_robin(costs: np.ndarray, r: int) -> np.ndarray:
    """Items to tasks in turn, ignoring cost (a deliberately naive policy for tests)."""
    return np.arange(len(costs), dtype=np.int64) % r
