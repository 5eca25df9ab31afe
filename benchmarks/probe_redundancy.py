"""Design probe (issue 12, item 1): can a cheap reordering make token-blocking plans
balance the pairs actually compared?

A pair that shares several tokens is compared once, in the block of its smallest shared
key. Plans cut every block's pairs into ranges of equal *cells* (what ``cdist`` computes,
so what time follows); the pairs kept per range then vary (max/mean 1.33 on Abt-Buy names
at r = 100). The design probed here: sort each block's records by their own smallest key,
so that two records whose smallest keys are equal (and smaller than the block's) sit in
one contiguous square of the block's matrix. Every pair of such a square shares that key,
so it is redundant and can be skipped without looking at it, and the count of the cells
left is exact from one more number per record (its smallest key) in the profile. If the
redundant pairs were mostly in those squares, cutting at equal cells left would balance
the kept pairs too.

The probe computes, exactly, per block, which pairs are kept (``A @ B.T`` over the keys
smaller than the block, with scipy's sparse products), lays the cells out in plan order
(blocks in key order, rows sorted by smallest key, row-major), cuts them into r equal
ranges, and prints the kept-pair imbalance of today's layout and of the layout without
the squares, for key orders by hash (as erblock numbers keys) and by block size.

Measured 2026-12-08 (r = 100): Abt-Buy names, today 1.326, squares skipped 1.280 (hash
order) / 1.198 (biggest blocks first); 5,000 generated titles 1.248 -> 1.211 / 1.139. The
squares hold a small share of the redundant cells (9,000 and 24,000 of Abt-Buy's
60,000): most redundant pairs have different smallest keys and share a later one. The
design does not reach 1.05; it is recorded here, not built.

    python benchmarks/probe_redundancy.py [r]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from erblock.blocking import tokens  # noqa: E402
from erblock.datasets import generate  # noqa: E402


def _ranks(keys: list[np.ndarray], order: str) -> tuple[pd.Index, np.ndarray]:
    """The vocabulary and each key's rank: by hash (erblock's key ids) or block size."""
    every = np.concatenate(keys)
    vocab = pd.Index(pd.unique(every))
    if order == "hash":
        h = pd.util.hash_array(vocab.to_numpy().astype(object)).astype(np.int64)
        o = np.argsort(h, kind="stable")
    else:
        size = pd.Series(every).value_counts().reindex(vocab).to_numpy()
        o = np.argsort(-size, kind="stable")
    rank = np.empty(len(vocab), dtype=np.int64)
    rank[o] = np.arange(len(vocab))
    return vocab, rank


def kept_imbalance(frames: list[pd.DataFrame], column: str, order: str, r: int
                   ) -> dict[str, dict[str, float]]:
    """Cells and kept pairs of today's layout and of the layout without the squares, and
    the kept pairs' max/mean over ``r`` ranges of equal cells (module doc)."""
    link = len(frames) == 2
    items = [tokens(column).items(f) for f in frames]
    pos = [np.asarray(p) for p, _ in items]
    keys = [k.astype(str).to_numpy() for _, k in items]
    vocab, rank = _ranks(keys, order)
    n_keys = len(vocab)
    mats = [sparse.csr_matrix((np.ones(len(p)), (p, rank[vocab.get_indexer(k)])),
                              shape=(len(f), n_keys)) for p, k, f in zip(pos, keys, frames)]
    mats = mats if link else [mats[0], mats[0]]
    smallest = [np.array([min(row) if row else n_keys for row in m.tolil().rows])
                for m in mats]
    cols = [m.tocsc() for m in mats]
    today, squares = [], []
    for k in range(n_keys):
        a, b = cols[0][:, k].nonzero()[0], cols[1][:, k].nonzero()[0]
        if not len(a) or not len(b):
            continue
        a = a[np.argsort(smallest[0][a], kind="stable")]
        b = b[np.argsort(smallest[1][b], kind="stable")]
        kept = ~((mats[0][a][:, :k] @ mats[1][b][:, :k].T).toarray() > 0)
        same = ((smallest[0][a][:, None] == smallest[1][b][None, :])
                & (smallest[0][a][:, None] < k))
        cells = np.ones_like(kept) if link else np.triu(np.ones_like(kept), 1)
        assert not (kept & same & cells).any()  # a square holds redundant pairs only
        today.append(kept[cells])
        squares.append(kept[cells & ~same])
    out = {}
    for name, seq in (("today", today), ("squares skipped", squares)):
        flat = np.concatenate(seq)
        per = np.array([c.sum() for c in np.array_split(flat, r)])
        out[name] = {"cells": int(len(flat)), "kept": int(flat.sum()),
                     "kept_imbalance": round(float(per.max() / per.mean()), 3)}
    return out


def main(r: int = 100) -> None:
    import quality_cases as qc  # the benchmark's Abt-Buy loader

    abt = qc.load_case("abt_buy")
    titles, _ = generate(5000, kind="title", seed=12)  # records, true pairs
    for name, frames, column in (("Abt-Buy names", list(abt.frames), "name"),
                                 ("5,000 generated titles", [titles], "title")):
        for order in ("hash", "size"):
            print(name, f"keys by {order}:", kept_imbalance(frames, column, order, r),
                  flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
