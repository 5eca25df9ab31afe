"""Tokens of the ``text`` comparison, for whole columns at once (worker side).

The rule (:mod:`.text`): texts are normalised (lower case, accents stripped), a word
(between white space) that holds a digit is one token with its punctuation dropped (a
*code*, ``codes=True``), and every other word gives its runs of letters and digits. As
regular expressions over the normalised text: ``\\S*\\d\\S*|[^\\W_]+`` found left to right,
then ``[\\W_]`` removed.

Nearly every value is ASCII, and for ASCII the rule needs no Python per value or per
token: lower-case, split at white space, and per word either drop everything but
``[a-z0-9]`` (a word with a digit) or split at runs of anything else. That is done with
Arrow's string kernels (:func:`_ascii_tokens`). Values with other characters (accents,
other scripts, and the ASCII control characters ``\\x1c``–``\\x1f`` that Python counts as
white space and Arrow does not) take the regular expressions (:func:`_regex_tokens`);
both give the same tokens in the same order (tested against each other).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...blocking.text import arrow_text, as_key_strings, normalise_text, plain_ascii

Tokens = tuple[np.ndarray, np.ndarray, np.ndarray]  #: value position, token, is a code


def _regex_tokens(text: pd.Series, codes: bool) -> Tokens:
    """(value position, token, is a code) of normalised texts, a row per token in text
    order."""
    text = text.reset_index(drop=True)
    # letters and digits of any script (``[^\W_]``): Cyrillic, Greek, CJK and "ß" are
    # letters too (``[0-9a-z]`` made every non-Latin text a missing value)
    if not codes:
        tokens = text.str.findall(r"[^\W_]+").explode().dropna()
    else:
        # a whole word when it holds a digit (tried first at a word's start), else word
        # runs; either keeps a digit or letter, so no token comes out empty
        tokens = text.str.findall(r"\S*\d\S*|[^\W_]+").explode().dropna()
        tokens = tokens.str.replace(r"[\W_]", "", regex=True)
    is_code = (tokens.str.contains(r"\d", regex=True).to_numpy(dtype=bool) if codes
               else np.zeros(len(tokens), dtype=bool))
    return tokens.index.to_numpy(dtype=np.int64), tokens.to_numpy(dtype=object), is_code


def _ascii_tokens(texts: pa.Array, codes: bool) -> Tokens:
    """:func:`_regex_tokens` of ASCII texts (not yet normalised, no nulls), with Arrow."""
    words = pc.ascii_split_whitespace(pc.ascii_lower(texts))
    word_value = pc.list_parent_indices(words).to_numpy()
    flat = pc.list_flatten(words)
    if codes:
        is_code = pc.match_substring_regex(flat, "[0-9]").to_numpy(zero_copy_only=False)
    else:
        is_code = np.zeros(len(flat), dtype=bool)
    runs = pc.split_pattern_regex(flat, "[^a-z0-9]+")
    run_word = pc.list_parent_indices(runs).to_numpy()
    run_text = pc.list_flatten(runs)
    keep = pc.greater(pc.binary_length(run_text), 0).to_numpy(zero_copy_only=False)
    keep &= ~is_code[run_word]  # a code is one token, below
    code_word = np.flatnonzero(is_code)
    code_text = pc.replace_substring_regex(flat.take(pa.array(code_word, pa.int64())),
                                           "[^a-z0-9]+", "")
    word = np.concatenate([run_word[keep], code_word])
    text = np.concatenate([run_text.filter(pa.array(keep)).to_numpy(zero_copy_only=False),
                           code_text.to_numpy(zero_copy_only=False)]).astype(object)
    code = np.r_[np.zeros(int(keep.sum()), dtype=bool), np.ones(len(code_word), dtype=bool)]
    order = np.argsort(word, kind="stable")  # text order: a word's runs stay in order
    return word_value[word[order]].astype(np.int64), text[order], code[order]


def token_rows(values: pd.Series, codes: bool = True) -> Tokens:
    """(value position, token, is a code) of raw column values (missing: no tokens), one
    row per token, by value and in text order (see the module doc)."""
    strings = as_key_strings(values)
    arr = arrow_text(strings)  # 64-bit offsets: a column may hold more than 2 GiB of text
    valid = arr.is_valid()
    fast_np = plain_ascii(arr)  # False where null
    parts: list[Tokens] = []
    sel = np.flatnonzero(fast_np)
    if len(sel):
        fast_arr = arr if len(sel) == len(arr) else arr.take(pa.array(sel, pa.int64()))
        r, t, c = _ascii_tokens(fast_arr, codes)
        parts.append((sel[r], t, c))
    rest = np.flatnonzero(~fast_np & valid.to_numpy(zero_copy_only=False))
    if len(rest):
        r, t, c = _regex_tokens(normalise_text(strings.iloc[rest]).fillna(""), codes)
        parts.append((rest[r], t, c))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, dtype=object), np.zeros(0, dtype=bool)
    if len(parts) == 1:  # each path gives its rows in order
        return parts[0]
    row, token, code = (np.concatenate([p[k] for p in parts]) for k in range(3))
    order = np.argsort(row, kind="stable")
    return row[order], token[order], code[order]
