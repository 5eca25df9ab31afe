"""``text``: titles, descriptions, product names: token sets, not characters.

Values are tokenised once per record (lower case, accents stripped, runs of letters and
digits; every distinct token a 64-bit hash; the first 256 distinct tokens of a value) and
compared as token *sets*: with
``metric="jaccard"`` (default) ``|A ∩ B| / |A ∪ B|``, with ``"cosine"``
``|A ∩ B| / √(|A|·|B|)``, with ``"overlap"`` ``|A ∩ B| / min(|A|, |B|)``. Intersections of a
whole block are one sparse matrix product (scipy), never a loop over pairs. The default
levels: the same token set (1), ≥ 0.75, ≥ 0.5, ≥ 0.25, else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ...blocking.text import as_key_strings, normalise_text
from .base import Method, Prepared

METRICS = ("jaccard", "cosine", "overlap")


MAX_TOKENS = 256  #: distinct tokens kept per value (the first ones, in text order)


def token_table(values: pd.Series) -> np.ndarray:
    """(values × MAX_TOKENS) int64: the distinct token hashes of every value, sorted,
    padded with 0 (a hash is never 0: :func:`_hash` maps 0 to 1)."""
    text = normalise_text(as_key_strings(values)).fillna("")
    tokens = text.reset_index(drop=True).str.findall(r"[0-9a-z]+").explode().dropna()
    row = tokens.index.to_numpy(dtype=np.int64)
    hashes = _hash(tokens.to_numpy(dtype=object))
    order = np.lexsort((hashes, row))
    row, hashes = row[order], hashes[order]
    keep = np.r_[True, (row[1:] != row[:-1]) | (hashes[1:] != hashes[:-1])] if len(row) \
        else np.zeros(0, dtype=bool)
    row, hashes = row[keep], hashes[keep]
    starts = np.searchsorted(row, np.arange(len(text)))
    rank = np.arange(len(row)) - starts[row]
    fit = rank < MAX_TOKENS
    table = np.zeros((len(text), MAX_TOKENS), dtype=np.int64)
    table[row[fit], rank[fit]] = hashes[fit]
    width = int(rank.max()) + 1 if len(rank) else 1
    return table[:, : min(width, MAX_TOKENS)]


def _hash(tokens: np.ndarray) -> np.ndarray:
    h = pd.util.hash_array(tokens, categorize=True).view(np.int64) if len(tokens) else \
        np.zeros(0, np.int64)
    return np.where(h == 0, 1, h)


def _csr(table: np.ndarray, vocab: np.ndarray) -> sp.csr_matrix:
    """Binary value × token matrix of a padded token table."""
    present = table != 0
    indptr = np.zeros(len(table) + 1, dtype=np.int64)
    np.cumsum(present.sum(axis=1), out=indptr[1:])
    cols = np.searchsorted(vocab, table[present])
    data = np.ones(len(cols), dtype=np.float32)
    return sp.csr_matrix((data, cols, indptr), shape=(len(table), len(vocab)))


@dataclass(frozen=True)
class TextMethod(Method):
    """Token-set similarity (``metric``: jaccard, cosine or overlap)."""

    name: ClassVar[str] = "text"
    accepts: ClassVar[str] = "text"
    LEVELS: ClassVar[tuple[float, ...]] = (0.25, 0.5, 0.75, 1.0)
    LABELS: ClassVar[tuple[str, ...]] = ("else", ">= 0.25", ">= 0.5", ">= 0.75",
                                         "same tokens")
    summary: ClassVar[str] = "token sets (titles, descriptions): Jaccard, cosine or overlap"

    metric: str = "jaccard"

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"text metric must be one of {', '.join(METRICS)}, "
                             f"got {self.metric!r}")

    def prepare_key(self) -> Any:
        return (TextMethod.prepare,)

    def prepare(self, values: pd.Series) -> Prepared:
        table = token_table(values)
        return Prepared(table, ~(table != 0).any(axis=1))

    def _score(self, inter: np.ndarray, na: np.ndarray, nb: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.metric == "jaccard":
                sim = inter / (na + nb - inter)
            elif self.metric == "cosine":
                sim = inter / np.sqrt(na * nb)
            else:
                sim = inter / np.minimum(na, nb)
        return np.nan_to_num(np.clip(sim, 0.0, 1.0), nan=0.0).astype(np.float32)

    @staticmethod
    def _vocab(*tables: np.ndarray) -> np.ndarray:
        return np.unique(np.concatenate([t[t != 0] for t in tables]))

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        vocab = self._vocab(lv, rv)
        a, b = _csr(lv, vocab), _csr(rv, vocab)
        inter = (a @ b.T).toarray()
        na = np.asarray(a.sum(axis=1)).ravel()[:, None]
        nb = np.asarray(b.sum(axis=1)).ravel()[None, :]
        return self._score(inter, na, nb)

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        vocab = self._vocab(lv, rv)
        a, b = _csr(lv, vocab), _csr(rv, vocab)
        inter = np.asarray(a.multiply(b).sum(axis=1)).ravel()
        na = np.asarray(a.sum(axis=1)).ravel()
        nb = np.asarray(b.sum(axis=1)).ravel()
        return self._score(inter, na, nb)
