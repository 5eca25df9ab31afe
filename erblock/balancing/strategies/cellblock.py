"""Cell block division (paper 003 Alg. 5) on a sketch profile: see :mod:`.cells`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..bdm import BDM, SRC_R
from ..plan import RECTANGLE, TRIANGLE, Plan, check_n_tasks
from ..sketch import SketchProfile
from .base import Strategy
from .cells import MIN_PIECE, CellOptions, _CellPlan, cell_order_lpt, sketch_profile, sub_cells


def plan_cellblock(profile: BDM | SketchProfile, r: int, options: CellOptions | None = None,
                   **kw: Any) -> Plan:
    """Cell block division (003 Alg. 5, sub-cells capped at ``L̂/(granularity·r)``);
    keywords override fields of ``options``."""
    check_n_tasks(r)
    options = replace(options or CellOptions(), **kw)
    granularity = options.granularity
    prof = sketch_profile(profile, r, options.sketch)
    cw = prof.work(options.estimate)
    total = cw.total
    cells = np.flatnonzero(cw.work > 0)
    out = _CellPlan(prof, cw)
    if total > 0:
        cap = total / (r * granularity)
        work = cw.work[cells]
        if prof.link:
            longest = np.maximum(cw.count_r[cells], cw.count_s[cells])
            d = sub_cells(work, r * granularity)
        else:
            longest = cw.count_r[cells]
            d = np.rint(np.sqrt(2.0 * work / cap))
        # a sub-cell of a few records is mostly rounding: its true work is off by ±1 record
        d = np.clip(d, 1, np.maximum(longest // MIN_PIECE, 1)).astype(np.int64)
        out.whole(cells[d == 1], -1)
        for cell, dj in zip(cells[d > 1].tolist(), d[d > 1].tolist()):
            w = float(cw.work[cell])
            frac = np.arange(1, dj) / dj
            if prof.link:
                ids, _, side, other = out.split(cell, frac)
                left, right = (ids, other) if side == SRC_R else (other, ids)
                out.task(RECTANGLE, left, right, w / dj, -1)
            else:
                ids, _, _, _ = out.split(cell, frac)
                out.task(TRIANGLE, ids, ids, w / dj**2, -1)
                a, b = np.triu_indices(dj, k=1)
                out.task(RECTANGLE, ids[a], ids[b], 2 * w / dj**2, -1)
    info = {"granularity": float(granularity),
            "divided_cells": int(sum(len(p[3]) > 0 for p in out.pieces))}
    return out.build("cellblock", r, options.packing or cell_order_lpt, info)


STRATEGY = Strategy(
    name="cellblock",
    summary="cell block division on a Count-Min/FastAGMS sketch (millions of blocks)",
    profile="sketch",
    plan=plan_cellblock,
    options=CellOptions,
    splits_blocks=True,
)


