"""Is a ready-made key column made from a compared column? Measured on a sample.

A key given as a plain column (``key="name_first"``) says nothing about where its values
came from. When they were cut from a compared column (the first word of ``name``, the
first three characters of ``postcode``, the year of an ISO ``dob``), the blocking selects
pairs on that column, and a scoring model that does not know it mistakes the agreement
the key implies for evidence (:mod:`erblock.matchers.scoring.training`). Declaring it
(``column("name_first", derived_from="name")``) is exact; this module finds the common
cases without it.

The test, per record with both values present: the key's text (normalised as
:func:`~erblock.blocking.text.fold_text` does) starts the compared text or one of its
words, or, for a key glued from several columns, one of its pieces does (its runs of
letters and of digits, each judged on its own: ``sm1982`` from the surname's first
letters and the year of birth is cut from both ``surname`` and ``dob``, ``s1982`` too).
A key *derived* from the column passes for nearly every record (:data:`DERIVED_SHARE`),
while against the compared value of a record drawn at random it passes far less often
(at most half as often): that rules out keys that pass whatever the record, such as a
one-letter key against long texts. Vectorised (numpy's string functions), no loop per
record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .text import as_key_strings, normalised_objects

DERIVED_SHARE = 0.9  #: share of records whose key starts the compared text or one of its words
MAX_PIECES = 3  #: pieces of a glued key tested (its first runs of letters or digits)
MIN_RECORDS = 20  #: records with both values needed to decide
SAMPLE = 2000  #: records a run samples per input for the test
_TEXT = np.dtypes.StringDType()


@dataclass(frozen=True)
class Derivation:
    """How often a key's text starts the compared text (or a word of it): on the record's
    own value (``share``) and on a random record's (``chance``), over ``n`` records."""

    share: float
    chance: float
    n: int

    @property
    def derived(self) -> bool:
        return (self.n >= MIN_RECORDS and self.share >= DERIVED_SHARE
                and self.chance <= self.share / 2)


def folded(values: pd.Series) -> pd.Series:
    """``values`` as the test compares them: folded text (:func:`fold_text`), "" where
    missing; each distinct value folded once. Fold a column once and pass it to
    :func:`derivation_of` for every comparison it is tested against."""
    text = as_key_strings(values.reset_index(drop=True))
    return pd.Series(normalised_objects(text), dtype=object)


def _starts(k: pd.Series, t: pd.Series) -> np.ndarray:
    """:func:`starts_text_or_word` of folded keys and texts."""
    # variable-width strings: a fixed-width array would pad every row to the longest text
    # (one 50,000-character description made a 2,000-row sample cost 0.8 GB)
    k_ = k.to_numpy(dtype=_TEXT)
    t_ = t.to_numpy(dtype=_TEXT)
    if not len(k_):
        return np.zeros(0, dtype=bool)
    found = _at_word_start(np.strings.add(" ", t_), k_)
    return found & (np.strings.str_len(k_) > 0) & (np.strings.str_len(t_) > 0)


def _at_word_start(led: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per row: whether ``keys[i]`` starts a word of the text ``led[i]`` (the text led by
    a space, so a word start is a space followed by the key)."""
    return np.strings.find(led, np.strings.add(" ", keys)) >= 0


def starts_text_or_word(keys: pd.Series, texts: pd.Series) -> np.ndarray:
    """Per row: whether ``keys[i]`` (folded, non-empty) starts ``texts[i]`` or one of its
    words (False where either is missing or empty). One numpy string ufunc over all rows."""
    return _starts(folded(keys), folded(texts))


def pieces(keys: pd.Series, *, is_folded: bool = False) -> list[pd.Series]:
    """The folded keys, then for keys of several pieces (runs of letters or of digits)
    each of their first :data:`MAX_PIECES` pieces ("" where none)."""
    whole = keys.reset_index(drop=True) if is_folded else folded(keys)
    runs = whole.str.findall(r"[^\W\d_]+|\d+")
    glued = runs.map(len).to_numpy() > 1
    out = [whole]
    for i in range(MAX_PIECES):  # object dtype: an all-missing piece is not float NaN
        piece = runs.str[i].astype(object)
        out.append(piece.where(glued & piece.notna().to_numpy(), ""))
    return out


def derivation(keys: pd.Series, texts: pd.Series, seed: int = 0) -> Derivation:
    """The :class:`Derivation` of key column ``keys`` from compared column ``texts``
    (aligned rows of one sample)."""
    return derivation_of(pieces(keys), folded(texts), seed)


def derivation_of(key_pieces: list[pd.Series], text: pd.Series, seed: int = 0
                  ) -> Derivation:
    """:func:`derivation` of a key column's :func:`pieces` and a :func:`folded` compared
    column (aligned rows): a run folds each column of its sample once. The texts are
    numpy strings from here on (lengths and searches without a loop per record)."""
    key = key_pieces[0].to_numpy(dtype=_TEXT)
    t = text.to_numpy(dtype=_TEXT)
    both = (np.strings.str_len(key) > 0) & (np.strings.str_len(t) > 0)
    t = t[both]
    n = len(t)
    if n == 0:
        return Derivation(0.0, 0.0, 0)
    shuffled = t[np.random.default_rng(seed).permutation(n)]
    led, led_shuffled = np.strings.add(" ", t), np.strings.add(" ", shuffled)
    out = []
    for i, part in enumerate(key_pieces):  # the key, then each piece of a glued key
        k = (key if i == 0 else part.to_numpy(dtype=_TEXT))[both]
        present = np.strings.str_len(k) > 0
        if i and not present.any():
            continue  # no key of several pieces: this piece is "" throughout, never derived
        share = (_at_word_start(led, k) & present).mean()
        chance = (_at_word_start(led_shuffled, k) & present).mean()
        out.append(Derivation(float(share), float(chance), n))
        if out[-1].derived:
            return out[-1]
    return out[0]
