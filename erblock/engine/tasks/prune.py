"""Block purging and filtering of pruned passes, on one prepared partition (worker side).

See :mod:`erblock.blocking.pruning` for what is dropped. The driver
(:mod:`erblock.engine.pruning`) counts the pruned passes' blocks over the whole input
(:func:`block_counts`) and ships every pruned pass's comparisons per block back;
:func:`prune_partition` then drops rows, and rebuilds the key lists of the pruned passes
from the rows that are left (the compared-once rule must see the blocks a record kept,
or a pair whose smallest shared block was dropped would be lost).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...blocking.keys import NULL_BLOCK
from ...blocking.pruning import Pruned
from ..schema import BLOCK, PASS, RID, SRC, WINDOW, key_column
from .prepare import key_lists


def block_counts(part: pd.DataFrame, passes: list[int]) -> pd.DataFrame:
    """Records per (pass, block, source) of the pruned passes of one prepared partition."""
    rows = part[part[PASS].isin(passes)]
    g = rows.groupby([PASS, BLOCK, SRC], sort=False).size()
    return g.rename("n").reset_index()


def prune_partition(part: pd.DataFrame, pruned: Mapping[int, tuple[Pruned, pd.Series]]
                    ) -> pd.DataFrame:
    """The partition without the rows the pruned passes drop; ``pruned[p]`` is pass
    ``p``'s spec and its comparisons per block (over the whole input)."""
    if not len(part):
        return part
    drop = np.zeros(len(part), dtype=bool)
    passes = part[PASS].to_numpy()
    new_lists: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for p, (spec, comps) in pruned.items():
        rows = np.flatnonzero(passes == p)
        blk = part[BLOCK].to_numpy()[rows]
        c = comps.reindex(blk).fillna(0).to_numpy(np.float64)
        # a block without comparisons (one record, or one side of a link) holds no pair:
        # it is no block to rank (as in JedAI, whose block building drops it)
        ok = c > 0
        if spec.max_comparisons is not None:
            ok &= c <= spec.max_comparisons
        rid = part[RID].to_numpy()[rows]
        if spec.keep is not None:  # each record's smallest blocks (comparisons, then id)
            idx = np.flatnonzero(ok)
            order = idx[np.lexsort((blk[idx], c[idx], rid[idx]))]
            r = rid[order]
            starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
            sizes = np.diff(np.r_[starts, len(r)])
            rank = np.arange(len(r)) - np.repeat(starts, sizes)
            keep = rank < np.repeat(spec.kept(sizes), sizes)
            ok[:] = False
            ok[order[keep]] = True
        drop[rows[~ok]] = True
        new_lists[p] = (rid[ok], blk[ok])
    out = part[~drop]
    lost = np.setdiff1d(part[RID].to_numpy(), out[RID].to_numpy())
    if len(lost):  # records left without any block stay counted, as not blocked
        first = part.drop_duplicates(RID)
        gone = first[first[RID].isin(lost)].assign(**{BLOCK: NULL_BLOCK, PASS: np.int8(-1)})
        if WINDOW in gone.columns:
            gone[WINDOW] = np.int64(-1)
        out = pd.concat([out, gone], ignore_index=True)
    out = out.reset_index(drop=True)
    rids, at = np.unique(out[RID].to_numpy(), return_inverse=True)
    for p, (rid, blk) in new_lists.items():  # key lists of what is left, for every row
        lists = key_lists(np.searchsorted(rids, rid), blk, len(rids))
        out[key_column(p)] = pd.Series(lists).take(at).reset_index(drop=True).array
    return out


def comparisons_of(counts: pd.DataFrame | None, link: bool) -> pd.DataFrame:
    """Comparisons (``comparisons``) and records (``records``) per block from its
    (block, src, n) rows."""
    if counts is None or not len(counts):
        return pd.DataFrame({"comparisons": pd.Series([], dtype=np.float64),
                             "records": pd.Series([], dtype=np.float64)})
    t = counts.groupby([BLOCK, SRC])["n"].sum().unstack(fill_value=0)
    n_r = t[0].to_numpy(np.float64) if 0 in t.columns else np.zeros(len(t))
    n_s = t[1].to_numpy(np.float64) if 1 in t.columns else np.zeros(len(t))
    return pd.DataFrame({"comparisons": n_r * n_s if link else n_r * (n_r - 1) / 2,
                         "records": n_r + n_s}, index=t.index)


def describe(before: pd.Series, after: pd.Series, spec: Pruned, limit: int | None
              ) -> dict[str, Any]:
    """What pruning one pass cost: blocks and comparisons before and after; ``limit`` is
    the comparisons per block purging kept (``spec.max_comparisons`` resolved)."""
    purged = (before > limit) if limit is not None else pd.Series(False, index=before.index)
    return {"key": repr(spec.key), "max_comparisons": spec.max_comparisons,
            "purge_limit": limit, "keep": spec.keep,
            "blocks_before": int((before > 0).sum()), "blocks_after": int((after > 0).sum()),
            "purged_blocks": int(purged.sum()),
            "purged_comparisons": int(before[purged].sum()),
            "comparisons_before": int(before.sum()), "comparisons_after": int(after.sum())}
