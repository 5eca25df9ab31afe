"""What each blocking pass finds, from the BDM rows, and the passes that find nothing.

A pass keyed on a column the two inputs of a link write differently (``SMITH`` against
``smith``, ``19870512`` against ``05/12/1987``, ``310/246-1501`` against
``310-246-1501``) puts their records in different blocks: the pass compares nothing
across them, silently, and the pairs only it would find are lost. The same happens in a
dedupe keyed on a column whose values are all different (an id). The BDM already counts
the records of every block per source; with the pass of each block
(:func:`~erblock.balancing.bdm.count_partition`) this module sums them per pass
(:func:`pass_overlaps`) and says which passes look like that (:func:`unmet_passes`), for a
warning and the run report. Pure numpy, on the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..blocking.keys import NULL_BLOCK, KeySpec
from .bdm import SRC_R, SRC_S

#: a pass is judged only when each input has at least this many keyed records in it
MIN_KEYED = 50
#: a link pass is "unmet" when fewer than this share of the smaller input's keyed records
#: are in blocks the other input has too
MET_SHARE = 0.01
#: what reads a column alike when the inputs or records write it differently
ADVICE = ("A key that reads them alike: lower(column) for case, accents and spacing, "
          "date(column) for dates written differently, digits(column) for phone numbers "
          "(--key lower:COLUMN, date:COLUMN, digits:COLUMN); or clean the column first")


@dataclass(frozen=True)
class PassOverlap:
    """One pass: keyed records (key rows for a multi-valued key) of each input, those in a
    block holding records of both inputs (link) or of two records or more (dedupe), and
    the comparisons its blocks imply (a pair shared with an earlier pass included)."""

    index: int
    keyed: tuple[int, int]
    shared: tuple[int, int]
    comparisons: int

    def to_dict(self) -> dict[str, Any]:
        return {"pass": self.index, "keyed": list(self.keyed), "shared": list(self.shared),
                "comparisons": self.comparisons}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PassOverlap:
        k, s = d["keyed"], d["shared"]
        return cls(int(d["pass"]), (int(k[0]), int(k[1])), (int(s[0]), int(s[1])),
                   int(d["comparisons"]))


def pass_overlaps(block: np.ndarray, src: np.ndarray, count: np.ndarray, passes: np.ndarray,
                  n_passes: int, link: bool) -> tuple[PassOverlap, ...]:
    """Per pass, from BDM rows (block, source, records) and each row's pass; rows of
    :data:`NULL_BLOCK` (records without a key) are left out. Rows may repeat a block (one
    per partition)."""
    keep = (np.asarray(block) != NULL_BLOCK) & (np.asarray(passes) >= 0)
    block, src = np.asarray(block, np.int64)[keep], np.asarray(src)[keep]
    count, passes = np.asarray(count, np.int64)[keep], np.asarray(passes, np.int64)[keep]
    blocks, first, inv = np.unique(block, return_index=True, return_inverse=True)
    n_r = np.bincount(inv, weights=np.where(src == SRC_R, count, 0), minlength=len(blocks))
    n_s = np.bincount(inv, weights=np.where(src == SRC_S, count, 0), minlength=len(blocks))
    n_r, n_s = n_r.astype(np.int64), n_s.astype(np.int64)
    if link:
        met, pairs = (n_r > 0) & (n_s > 0), n_r * n_s
    else:
        met, pairs = n_r > 1, n_r * (n_r - 1) // 2
    p = passes[first]

    def per_pass(values: np.ndarray) -> np.ndarray:
        return np.bincount(p, weights=values, minlength=n_passes).astype(np.int64)

    keyed_r, keyed_s = per_pass(n_r), per_pass(n_s)
    shared_r, shared_s = per_pass(np.where(met, n_r, 0)), per_pass(np.where(met, n_s, 0))
    comps = per_pass(pairs)
    return tuple(PassOverlap(i, (int(keyed_r[i]), int(keyed_s[i])),
                             (int(shared_r[i]), int(shared_s[i])), int(comps[i]))
                 for i in range(n_passes))


def unmet_passes(overlaps: Sequence[PassOverlap], keys: Sequence[KeySpec],
                 link: bool) -> list[str]:
    """A sentence for each single-valued pass that finds (almost) nothing although both
    inputs have keys in it: what a user should check. Multi-valued keys, sorted
    neighbourhood and MinHash passes are not judged (similar texts may share no band)."""
    out = []
    for o, key in zip(overlaps, keys):
        if key.multi or key.ordered:
            continue
        cols = ", ".join(map(repr, key.columns)) or "its key function's input"
        if link:
            small = int(np.argmin(o.keyed))
            if min(o.keyed) < MIN_KEYED or o.shared[small] >= MET_SHARE * o.keyed[small]:
                continue
            out.append(
                f"blocking pass {o.index} ({key!r}): the two inputs share almost no key "
                f"value: {o.keyed[0]:,} records of df_r and {o.keyed[1]:,} of df_s have a "
                f"key, but only {o.shared[0]:,} and {o.shared[1]:,} are in a block the other "
                f"input has too, so the pass finds {o.comparisons:,} pairs. Do the inputs "
                f"write {cols} the same way (case, spacing, a date or phone format)? "
                + ADVICE)
        elif o.keyed[0] >= MIN_KEYED and o.comparisons == 0:
            out.append(
                f"blocking pass {o.index} ({key!r}): every one of its {o.keyed[0]:,} keyed "
                f"records has a key no other record has, so the pass finds no pair; is "
                f"{cols} an identifier, or written differently by different records (case, "
                "spacing, format)? " + ADVICE)
    return out
