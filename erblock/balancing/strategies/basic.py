"""Basic: one match task per block, blocks hashed to reduce tasks (the baseline).

One large block makes one reduce task do most of the work; every other strategy is
measured against this.
"""

from __future__ import annotations

import numpy as np

from ..bdm import BDM, SRC_R, SRC_S, block_comparisons
from ..packing import hashed
from ..plan import RECTANGLE, TRIANGLE, WHOLE, Plan, UnitBuilder, Units, assemble, check_n_tasks
from .base import NoOptions, Strategy


def whole_blocks(builder: UnitBuilder, bdm: BDM, blocks: np.ndarray, n_r: np.ndarray,
                 n_s: np.ndarray) -> None:
    """One unit per (block, source) and one match task per block."""
    if bdm.link:
        ur = builder.add_units(blocks, SRC_R, WHOLE, WHOLE, n_r)
        us = builder.add_units(blocks, SRC_S, WHOLE, WHOLE, n_s)
        builder.add_tasks(RECTANGLE, ur, us, n_r * n_s)
    else:
        u = builder.add_units(blocks, SRC_R, WHOLE, WHOLE, n_r)
        builder.add_tasks(TRIANGLE, u, u, block_comparisons(n_r, n_s, False))


def plan_basic(bdm: BDM, r: int, options: NoOptions | None = None) -> Plan:
    """Basic: one match task per block, blocks hashed to reduce tasks."""
    check_n_tasks(r)
    blocks, n_r, n_s = bdm.block_sizes()
    comps = block_comparisons(n_r, n_s, bdm.link)
    keep = comps > 0
    builder = UnitBuilder()
    whole_blocks(builder, bdm, blocks[keep], n_r[keep], n_s[keep])

    def assign(units: Units, t: np.ndarray) -> np.ndarray:
        return hashed(units.block[t[1]], r)

    return assemble("basic", r, bdm.link, builder, assign, bdm.n_records)


STRATEGY = Strategy(
    name="basic",
    summary="hash whole blocks to reduce tasks (the baseline; one big block stays on one task)",
    profile="bdm",
    plan=plan_basic,
)
