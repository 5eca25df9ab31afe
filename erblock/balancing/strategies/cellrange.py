"""Cell range division (paper 003 Alg. 6) on a sketch profile: see :mod:`.cells`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..bdm import BDM, SRC_R
from ..plan import RECTANGLE, TRIANGLE, Plan, check_n_tasks
from ..sketch import SketchProfile
from .base import Strategy
from .cells import CellOptions, _CellPlan, _longest_side, _thin_cuts, sketch_profile


def plan_cellrange(profile: BDM | SketchProfile, r: int, options: CellOptions | None = None,
                   **kw: Any) -> Plan:
    """Cell range division (003 Alg. 6): ``r`` equal ranges of the estimated cell work;
    keywords override fields of ``options``."""
    check_n_tasks(r)
    options = replace(options or CellOptions(), **kw)
    prof = sketch_profile(profile, r, options.sketch)
    cw = prof.work(options.estimate)
    total = cw.total
    cells = np.flatnonzero(cw.work > 0)
    out = _CellPlan(prof, cw)
    n_cut = 0
    if total > 0:
        work = cw.work[cells]
        start = np.cumsum(work) - work
        bounds = np.arange(r + 1, dtype=np.float64) * (total / r)
        t_first = np.clip(np.searchsorted(bounds, start, side="right") - 1, 0, r - 1)
        t_last = np.clip(np.searchsorted(bounds, start + work, side="left") - 1, 0, r - 1)
        t_last = np.maximum(t_last, t_first)
        whole = t_first == t_last
        out.whole(cells[whole], t_first[whole])
        for k in np.flatnonzero(~whole).tolist():
            cell, w, s0 = int(cells[k]), float(work[k]), float(start[k])
            tasks = np.arange(t_first[k], t_last[k] + 1)
            f = (bounds[tasks[1:]] - s0) / w  # work fraction at each inner range bound
            u = f if prof.link else 1.0 - np.sqrt(np.clip(1.0 - f, 0.0, 1.0))
            u, tasks = _thin_cuts(u, tasks, _longest_side(cw, cell, prof.link))
            if len(u) == 0:  # every piece would hold less than one record
                out.whole(np.array([cell]), tasks[0])
                continue
            n_cut += 1
            if prof.link:
                ids, widths, side, other = out.split(cell, u)
                ok = widths > 0  # a piece between two equal cuts gets no record
                pieces = ids[ok]
                left, right = (pieces, other) if side == SRC_R else (other, pieces)
                out.task(RECTANGLE, left, right, w * widths[ok], tasks[ok])
            else:
                ids, widths, _, _ = out.split(cell, u)
                ok = widths > 0
                out.task(TRIANGLE, ids[ok], ids[ok], w * widths[ok] ** 2, tasks[ok])
                a, b = np.triu_indices(len(ids), k=1)
                keep = ok[a] & ok[b]
                a, b = a[keep], b[keep]
                out.task(RECTANGLE, ids[a], ids[b], 2 * w * widths[a] * widths[b], tasks[a])
    return out.build("cellrange", r, None, {"cut_cells": n_cut})


STRATEGY = Strategy(
    name="cellrange",
    summary="cell range division on a sketch: PairRange over sketch cells",
    profile="sketch",
    plan=plan_cellrange,
    options=CellOptions,
    splits_blocks=True,
)


