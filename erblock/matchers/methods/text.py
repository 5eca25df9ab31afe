"""``text``: titles, descriptions, product names: token sets, not characters.

Values are tokenised once per record (lower case, accents stripped; every distinct token
a 64-bit hash; at most 256 distinct tokens of a value, those with the smallest hashes,
an arbitrary but fixed choice) and compared as token *sets*. A token is a run of letters
and digits, except that a word (between spaces) holding a digit is one token with its
punctuation dropped (``codes=True``, the default): model and part numbers are written
with and without hyphens and slashes (``KDL-40S5100`` / ``KDL40S5100``, ``MB735LL/A`` /
``MB735LLA``, ``910-000692`` / ``910000692``), and split at the punctuation they would
share no token (``kdl`` + ``40s5100`` against ``kdl40s5100``). Two values that both hold
codes but share none are a different model, house number or edition whatever their other
words: their similarity is 0 (the lowest level). A code also agrees with itself written
with a space inside: each code joined to the word before and after it (``hdr`` +
``sr12``) is a *variant* that a code of the other value may equal; variants only decide
this rule, they are no tokens of the similarity. A value cut at 256 tokens is not judged
by the rule. ``codes=False``: runs of letters and digits only, and no code rule.
Compared with ``metric="jaccard"`` (default) ``|A ∩ B| / |A ∪ B|``, with ``"cosine"``
``|A ∩ B| / √(|A|·|B|)``, with ``"overlap"`` ``|A ∩ B| / min(|A|, |B|)``. Intersections
of a whole block are one sparse matrix product (scipy), never a loop over pairs. The
default levels: the same token set (1), ≥ 0.75, ≥ 0.5, ≥ 0.25, else.

``weighting="idf"`` (the default) counts a token by its inverse document frequency in
the whole input (both sources of a link): ``w_t = ln((1 + N) / (1 + df_t)) + 1`` for
``N`` records with tokens, ``df_t`` of them holding ``t`` (scikit-learn's smoothed idf),
so ``|X|`` above becomes ``Σ_{t∈X} w_t`` (cosine: ``Σ w_t²`` over ``√(Σ_A w²·Σ_B w²)``).
Sharing a model number or a rare surname then counts for more than sharing "the" or
"camera" — what product titles and descriptions need. The engine counts the document
frequencies on the cluster before comparing (:mod:`erblock.engine.corpus`); without them
(a method used on its own) the weights are all 1. ``weighting="none"``: plain sets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .base import Method, Prepared
from .tokenize import token_rows

METRICS = ("jaccard", "cosine", "overlap")
WEIGHTINGS = ("idf", "none")


@dataclass(frozen=True)
class TokenWeights:
    """Inverse document frequencies of the input's tokens: sorted token hashes and their
    weights (a token not among them, never seen in the input, weighs the most)."""

    tokens: np.ndarray  # int64, sorted
    weights: np.ndarray  # float64
    n_docs: int

    @classmethod
    def from_counts(cls, tokens: np.ndarray, counts: np.ndarray, n_docs: int) -> TokenWeights:
        """Smoothed idf from document frequencies (``counts`` per token, ``n_docs``)."""
        order = np.argsort(tokens, kind="stable")
        w = np.log((1.0 + n_docs) / (1.0 + counts[order].astype(np.float64))) + 1.0
        return cls(tokens[order].astype(np.int64), w, int(n_docs))

    def of(self, tokens: np.ndarray) -> np.ndarray:
        """The weight of every token of ``tokens``."""
        top = float(np.log(1.0 + self.n_docs) + 1.0)
        if not len(self.tokens):
            return np.full(len(tokens), top)
        i = np.minimum(np.searchsorted(self.tokens, tokens), len(self.tokens) - 1)
        return np.where(self.tokens[i] == tokens, self.weights[i], top)


#: distinct tokens kept per value (those with the smallest hashes; a value cut there is
#: not judged by the code rule)
MAX_TOKENS = 256


#: low bits of a token hash: 0 (bit 0 clear) a word, 1 a code (a word holding a digit,
#: ``codes=True``), 3 a code *variant* (a code joined to the word before or after it),
#: which only :meth:`TextMethod._conflicts` reads
CODE, VARIANT = np.int64(1), np.int64(3)
SHARED = np.int64(2)  #: the tag of codes and variants alike, when the two are compared
#: the last entry of a value cut at MAX_TOKENS (tagged as a variant: no token): the code
#: rule then leaves it out, since a code it shares may be among the entries cut
TRUNCATED = np.int64(-1)
#: a matrix's shared codes are found in batches of at most this many (row, row) matches
JOIN_BATCH = 1 << 20


def _code_variants(tokens: pd.Series, is_code: np.ndarray) -> pd.Series:
    """Every code joined to the token before and the token after it in its value (a code
    written with a space inside, ``hdr sr12`` for ``hdr-sr12``), indexed by value."""
    row = tokens.index.to_numpy()
    text = tokens.to_numpy(dtype=object)
    same = row[1:] == row[:-1]  # token i and i + 1 belong to one value
    before = np.flatnonzero(same & is_code[1:]) + 1  # codes with a token before them
    after = np.flatnonzero(same & is_code[:-1])  # codes with a token after them
    joined = np.concatenate([text[before - 1] + text[before], text[after] + text[after + 1]])
    return pd.Series(joined, index=np.concatenate([row[before], row[after]]), dtype=object)


def token_table(values: pd.Series, codes: bool = True) -> np.ndarray:
    """(values × MAX_TOKENS) int64: the distinct token hashes of every value, sorted,
    padded with 0 (a hash is never 0). With ``codes``, a code's hash has bit 0 set and its
    variants (:func:`_code_variants`) follow the tokens in the same row, tagged
    :data:`VARIANT` (they never push a token out of the table), and a value cut at
    :data:`MAX_TOKENS` ends in :data:`TRUNCATED`."""
    row, token, is_code = token_rows(values, codes)
    hashes = _hash(token) & ~VARIANT  # the low bits say what it is
    if codes and len(token):
        hashes |= np.where(is_code, CODE, np.int64(0))
        variants = _code_variants(pd.Series(token, index=row, dtype=object), is_code)
        row = np.concatenate([row, variants.index.to_numpy(dtype=np.int64)])
        hashes = np.concatenate([hashes, _hash(variants.to_numpy(dtype=object)) | VARIANT])
    hashes = np.where(hashes == 0, np.int64(4), hashes)  # 0 pads
    order = np.lexsort((hashes, (hashes & VARIANT) == VARIANT, row))
    row, hashes = row[order], hashes[order]
    keep = np.r_[True, (row[1:] != row[:-1]) | (hashes[1:] != hashes[:-1])] if len(row) \
        else np.zeros(0, dtype=bool)
    row, hashes = row[keep], hashes[keep]
    starts = np.searchsorted(row, np.arange(len(values)))
    rank = np.arange(len(row)) - starts[row]
    fit = rank < MAX_TOKENS
    table = np.zeros((len(values), MAX_TOKENS), dtype=np.int64)
    table[row[fit], rank[fit]] = hashes[fit]
    if codes and not fit.all():
        table[np.unique(row[~fit]), MAX_TOKENS - 1] = TRUNCATED
    width = int(rank.max()) + 1 if len(rank) else 1
    return table[:, : min(width, MAX_TOKENS)]


def _hash(tokens: np.ndarray) -> np.ndarray:
    return pd.util.hash_array(tokens, categorize=True).view(np.int64) if len(tokens) else \
        np.zeros(0, np.int64)


def _cat(*entries: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return (np.concatenate([e[0] for e in entries]), np.concatenate([e[1] for e in entries]))


def _join(left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray],
          batch: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Rows (of the left, of the right) of every pair of entries ``(row, value)`` with
    equal values, in batches of at most ``batch`` pairs (None: :data:`JOIN_BATCH`; or one
    left entry's matches): sorted right values, each left value's run of them expanded."""
    batch = JOIN_BATCH if batch is None else batch
    order = np.argsort(right[1], kind="stable")
    values, rows = right[1][order], right[0][order]
    lo = np.searchsorted(values, left[1], side="left")
    count = np.searchsorted(values, left[1], side="right") - lo
    group = (np.cumsum(count) - count) // max(batch, 1)  # the batch of each left entry
    cut = np.flatnonzero(np.diff(group)) + 1
    for sel in np.split(np.arange(len(count)), cut) if len(count) else []:
        c = count[sel]
        at = np.repeat(lo[sel] - np.cumsum(c) + c, c) + np.arange(int(c.sum()))
        yield np.repeat(left[0][sel], c).astype(np.int64), rows[at].astype(np.int64)


def _is_token(table: np.ndarray) -> np.ndarray:
    """Where a padded table holds a token: not padding, not a code variant (variants only
    decide the code rule, they are no tokens of the similarity)."""
    return (table != 0) & ((table & VARIANT) != VARIANT)


def _tokens_only(table: np.ndarray) -> np.ndarray:
    """The table without the code variants."""
    return np.where(_is_token(table), table, 0)


def _csr(table: np.ndarray, vocab: np.ndarray, weights: np.ndarray | None = None
         ) -> sp.csr_matrix:
    """Value × token matrix of a padded token table: 1 per token, or its weight (one per
    token of ``vocab``)."""
    present = _is_token(table)
    indptr = np.zeros(len(table) + 1, dtype=np.int64)
    np.cumsum(present.sum(axis=1), out=indptr[1:])
    cols = np.searchsorted(vocab, table[present])
    data = (np.ones(len(cols), dtype=np.float64) if weights is None
            else weights[cols].astype(np.float64))
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
    weighting: str = "idf"
    codes: bool = True  #: a word holding a digit is one token, punctuation dropped
    #: the input's token weights, set by the engine (:meth:`with_corpus`); not an option
    corpus: TokenWeights | None = field(default=None, compare=False, repr=False,
                                        metadata={"state": True})

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"text metric must be one of {', '.join(METRICS)}, "
                             f"got {self.metric!r}")
        if not isinstance(self.codes, bool):
            raise ValueError(f"text codes must be True or False, got {self.codes!r}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"text weighting must be one of {', '.join(WEIGHTINGS)}, "
                             f"got {self.weighting!r}")

    @property
    def needs_corpus(self) -> bool:  # type: ignore[override]
        return self.weighting == "idf"

    def corpus_items(self, prepared: Prepared) -> np.ndarray:
        """The distinct tokens of every record (document frequencies count these)."""
        table = _tokens_only(prepared.values)
        return table[table != 0]

    def with_corpus(self, corpus: Any) -> TextMethod:
        return dataclasses.replace(self, corpus=corpus) if self.needs_corpus else self

    def _weights(self, vocab: np.ndarray) -> np.ndarray | None:
        if self.weighting != "idf" or self.corpus is None:
            return None
        return self.corpus.of(vocab)

    def prepare_key(self) -> Any:
        return (TextMethod.prepare, self.codes)

    def prepare(self, values: pd.Series) -> Prepared:
        table = token_table(values, self.codes)
        return Prepared(table, ~(table != 0).any(axis=1))

    def _sets(self, lv: np.ndarray, rv: np.ndarray
              ) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix]:
        """(left, right with the weights of the metric's intersection, right as 0/1 or
        weights) over one vocabulary: ``a @ b_inter.T`` is the (weighted) intersection."""
        vocab = self._vocab(lv, rv)
        w = self._weights(vocab)
        a, b = _csr(lv, vocab, w), _csr(rv, vocab, w)
        if w is None or self.metric == "cosine":  # cosine: Σ w² over the shared tokens
            return a, b, b
        return a, b, _csr(rv, vocab)

    def _norms(self, m: sp.csr_matrix) -> np.ndarray:
        sq = m.multiply(m) if self.metric == "cosine" else m
        return np.asarray(sq.sum(axis=1)).ravel()

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
        """The distinct tokens of the tables (code variants left out)."""
        return np.unique(np.concatenate([t[_is_token(t)] for t in tables]))

    @staticmethod
    def _code_entries(t: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """(row, hash) of every code and of every code variant of a table, both tagged
        :data:`SHARED` so that a code and an equal variant are equal; rows cut at
        :data:`MAX_TOKENS` have none (the rule does not judge them)."""
        kind = t & VARIANT
        whole = ~(t == TRUNCATED).any(axis=1)[:, None]
        out = []
        for mask in ((kind == CODE) & whole, (kind == VARIANT) & whole & (t != TRUNCATED)):
            row, col = np.nonzero(mask)
            out.append((row, (t[row, col] & ~VARIANT) | SHARED))
        return tuple(out)

    def _conflicts(self, left: np.ndarray, right: np.ndarray,
                   pairs: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray | None:
        """Where both values hold codes and share none (a code of one is neither a code
        nor a code variant of the other): a matrix, or for the aligned ``pairs`` (rows of
        ``left``, rows of ``right``) a vector; None when one side has no codes."""
        (ca, va), (cb, vb) = self._code_entries(left), self._code_entries(right)
        if not (len(ca[0]) and len(cb[0])):
            return None
        n, m = len(left), len(right)
        has_a, has_b = np.zeros(n, bool), np.zeros(m, bool)
        has_a[ca[0]], has_b[cb[0]] = True, True
        if pairs is not None:  # per pair: its rows' code sets, gathered (pairs × codes)
            li, rj = pairs
            vocab = np.unique(np.concatenate([ca[1], va[1], cb[1], vb[1]]))

            def csr(rows: int, *entries: tuple[np.ndarray, np.ndarray]) -> sp.csr_matrix:
                row, val = _cat(*entries)
                return sp.csr_matrix((np.ones(len(row), np.float32),
                                      (row, np.searchsorted(vocab, val))),
                                     shape=(rows, len(vocab)))

            codes_a, codes_b = csr(n, ca), csr(m, cb)
            any_a, any_b = csr(n, ca, va), csr(m, cb, vb)  # codes and variants
            shared = (np.asarray(codes_a[li].multiply(any_b[rj]).sum(axis=1)).ravel()
                      + np.asarray(any_a[li].multiply(codes_b[rj]).sum(axis=1)).ravel())
            return has_a[li] & has_b[rj] & (shared == 0)
        out = has_a[:, None] & has_b[None, :]
        flat = out.ravel()  # a view: ``out`` is a new C-ordered array
        # every (left row, right row) sharing a value: a left code against the right's
        # codes and variants, a left variant against the right's codes (equality joins)
        for lr, rr in ((ca, _cat(cb, vb)), (va, cb)):
            for li, rj in _join(lr, rr):
                flat[li * m + rj] = False
        return out

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        a, b, bi = self._sets(lv, rv)
        inter = (a @ bi.T).toarray()
        sim = self._score(inter, self._norms(a)[:, None], self._norms(b)[None, :])
        conflict = self._conflicts(lv, rv) if self.codes else None
        if conflict is not None:
            sim[conflict] = 0.0
        return sim

    def aligned(self, left: Prepared, right: Prepared, li: np.ndarray, rj: np.ndarray,
                score_cutoff: float | None = None) -> np.ndarray:
        # token sets of the distinct rows the pairs touch, gathered pair by pair (the
        # tables are wide: gathering them first costs more than the similarity)
        lu, li_ = np.unique(li, return_inverse=True)
        ru, rj_ = np.unique(rj, return_inverse=True)
        sim = self._pairs(left.values[lu], right.values[ru], li_.ravel(), rj_.ravel())
        missing = left.missing[li] | right.missing[rj]
        if missing.any():
            sim[missing] = np.nan
        return sim

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        rows = np.arange(len(lv))
        return self._pairs(lv, rv, rows, rows)

    def _pairs(self, lv: np.ndarray, rv: np.ndarray, li: np.ndarray, rj: np.ndarray
               ) -> np.ndarray:
        """Similarities of the pairs (lv[li[k]], rv[rj[k]]), missing values aside."""
        a, b, bi = self._sets(lv, rv)
        inter = np.asarray(a[li].multiply(bi[rj]).sum(axis=1)).ravel()
        sim = self._score(inter, self._norms(a)[li], self._norms(b)[rj])
        conflict = self._conflicts(lv, rv, (li, rj)) if self.codes else None
        if conflict is not None:
            sim[conflict] = 0.0
        return sim
