"""``postcode``, ``email`` and ``phone``: exact agreement, then the partial agreements
that carry evidence.

Values are normalised once per record (full-width characters and the digits of every
script read as ASCII letters and digits) and the parts a level compares are hashed to
64-bit integers, so every level is a vectorised integer comparison:

* ``postcode`` (upper case, letters and digits only). UK postcodes (``SW1A 1AA``) have
  Splink's levels: full, sector (``SW1A1``), district (``SW1A``), area (``SW``). Other
  codes (``02139``, ``1234AB``, ``10115``) drop their last 1, 2 and 3 characters for the
  same three levels (ZIP+sector, ZIP3, …). Similarity 1 / 0.8 / 0.6 / 0.4 / 0.
* ``email`` (lower case, trimmed): exact (1), same user part at another domain (0.8), user
  parts within Jaro-Winkler 0.88 (0.6), else 0. Term frequency adjusts the exact level.
* ``phone`` (digits only, leading zeros dropped): exact (1); the same number with a country or area prefix
  omitted on one side, i.e. one is a suffix of the other of at least 7 digits (0.8); one
  digit typed wrong or two adjacent digits swapped (0.6); the last 4 digits equal (0.4);
  else 0. A present value without digits (``n/a``) is missing and counted in the run
  report, as unparsable dates are.

A part that a value does not have (a code too short for a district, an email without
``@``) never agrees at that level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz.distance import JaroWinkler
from rapidfuzz.process import cdist, cpdist

from ...blocking.digits import ascii_digits
from ...blocking.text import as_key_strings
from .base import Method, Prepared

_UK = re.compile(r"^[A-Z]{1,2}[0-9][A-Z0-9]?[0-9][A-Z]{2}$")
MAX_DIGITS = 16  #: phone numbers are compared on their last 16 digits


def _hash(texts: pd.Series, salt: pd.Series) -> np.ndarray:
    """64-bit hash per text; missing texts get a hash of ``salt`` (never equal to another
    value's part)."""
    missing = texts.isna().to_numpy()
    base = pd.util.hash_array(texts.fillna("").to_numpy(dtype=object), categorize=True)
    if missing.any():
        own = pd.util.hash_array(("\x00" + salt.fillna("")).to_numpy(dtype=object),
                                 categorize=True)
        base = np.where(missing, own, base)
    return base.view(np.int64)


def _clean(values: pd.Series, pattern: str, upper: bool = False, nfkc: bool = True
           ) -> pd.Series:
    """Normalised text: digits of any script as 0-9 and, with ``nfkc``, full-width and
    other compatibility letters as theirs (not for phones: ``²`` or ``½`` are no
    digits of a number)."""
    text = as_key_strings(values).str.strip()
    wide = ~text.str.isascii().fillna(True).to_numpy(dtype=bool)
    if nfkc and wide.any():
        text = text.copy()
        text[wide] = text[wide].str.normalize("NFKC")
    text = ascii_digits(text)
    text = text.str.upper() if upper else text.str.lower()
    text = text.str.replace(pattern, "", regex=True)
    return text.mask(text == "")


def _levels_from_parts(lv: np.ndarray, rv: np.ndarray, sims: tuple[float, ...]) -> np.ndarray:
    """1 for equal first columns, else ``sims[i]`` for the first equal column i + 1."""
    conds = [lv[..., i] == rv[..., i] for i in range(lv.shape[-1])]
    return np.select(conds, [1.0, *sims], 0.0).astype(np.float32)


#: a postcode part of at most this many characters is its own 64-bit code: its bytes
PACKED = 8


def postcode_lengths(codes: pa.StringArray) -> np.ndarray:
    """(codes × 4) lengths of the full code, sector, district and area of normalised
    postcodes (see the module doc), 0 where a code is too short for the part or missing.
    Every part is a prefix of the code."""
    n = pc.utf8_length(codes).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    uk = pc.match_substring_regex(codes, _UK.pattern).fill_null(False).to_numpy(
        zero_copy_only=False)
    two = pc.match_substring_regex(codes, "^[A-Z]{2}").fill_null(False).to_numpy(
        zero_copy_only=False)  # a UK area of two letters
    out = np.stack([n, np.where(uk, n - 2, n - 1), np.where(uk, n - 3, n - 2),
                    np.where(uk, np.where(two, 2, 1), n - 3)], axis=1)
    out[n == 0] = 0
    return np.maximum(out, 0)


def postcode_table(codes: pd.Series) -> np.ndarray:
    """(codes × 4) int64: the full code, sector, district and area of normalised postcodes
    (ASCII letters and digits, None when missing), each part as one integer that is equal
    for equal parts only: a part of at most :data:`PACKED` characters is its bytes, a
    longer one a 64-bit hash of its text, a missing part a hash of ``\\x00`` and the whole
    code (equal to no other code's part)."""
    arr = pa.array(codes.to_numpy(dtype=object), type=pa.large_string())
    lengths = postcode_lengths(arr)
    m = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + m + 1]
    data = arr.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    raw = np.concatenate([raw, np.zeros(PACKED, np.uint8)])  # every gather stays inside
    first = raw[offsets[:-1, None] + np.arange(PACKED)]  # (m × 8) the first bytes
    j = np.arange(PACKED)
    table = np.empty((m, 4), dtype=np.int64)
    for c in range(4):
        keep = j[None, :] < lengths[:, c, None]
        table[:, c] = np.ascontiguousarray(np.where(keep, first, 0)).view("<i8")[:, 0]
    text = codes.fillna("").to_numpy(dtype=object)
    long_ = lengths > PACKED
    if long_.any():  # hashed by their text, one part length at a time
        for c in range(4):
            for length in np.unique(lengths[long_[:, c], c]).tolist():
                rows = np.flatnonzero(long_[:, c] & (lengths[:, c] == length))
                part = pd.Series(text[rows]).str.slice(0, length).to_numpy(dtype=object)
                table[rows, c] = pd.util.hash_array(part, categorize=True).view(np.int64)
    none = lengths == 0
    if none.any():
        rows = np.flatnonzero(none.any(axis=1))
        salt = pd.util.hash_array(("\x00" + pd.Series(text[rows])).to_numpy(dtype=object),
                                  categorize=True).view(np.int64)
        table[rows] = np.where(none[rows], salt[:, None], table[rows])
    return table


@dataclass(frozen=True)
class PostcodeMethod(Method):
    name: ClassVar[str] = "postcode"
    locates: ClassVar[bool | None] = True
    accepts: ClassVar[str] = "any"
    mixed_types: ClassVar[str] = "zeros"
    LEVELS: ClassVar[tuple[float, ...]] = (0.4, 0.6, 0.8, 1.0)
    LABELS: ClassVar[tuple[str, ...]] = ("else", "same area", "same district",
                                         "same sector", "exact")
    summary: ClassVar[str] = "postcodes: exact, same sector, district, area"

    def prepare(self, values: pd.Series) -> Prepared:
        # every distinct value cleaned and cut once (a column repeats its postcodes), the
        # last entry standing for missing values
        # (factorized as written: values that compare equal, 1 and True, are written
        # apart, and a list is hashable only as its text)
        raw, uniq = pd.factorize(as_key_strings(values), use_na_sentinel=True)
        codes = _clean(pd.Series(uniq), r"[^A-Z0-9]", upper=True)
        u_codes = pd.Series([*codes.astype(object).where(codes.notna(), None), None],
                            dtype=object)
        table = postcode_table(u_codes)
        at = np.where(raw < 0, len(uniq), raw)
        return Prepared(table[at], u_codes.isna().to_numpy()[at])

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return _levels_from_parts(lv[:, None, :], rv[None, :, :], (0.8, 0.6, 0.4))

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return _levels_from_parts(lv, rv, (0.8, 0.6, 0.4))


@dataclass(frozen=True)
class EmailMethod(Method):
    name: ClassVar[str] = "email"
    locates: ClassVar[bool | None] = False
    accepts: ClassVar[str] = "text"
    LEVELS: ClassVar[tuple[float, ...]] = (0.6, 0.8, 1.0)
    LABELS: ClassVar[tuple[str, ...]] = ("else", "user parts similar", "same user part",
                                         "exact")
    summary: ClassVar[str] = "emails: exact (tf), same user part, user parts similar"
    tf: bool = True

    def _emails(self, values: pd.Series) -> pd.Series:
        return _clean(values, r"\s+")

    def tf_values(self, values: pd.Series) -> pd.Series:
        return self._emails(values).astype("string")

    def prepare(self, values: pd.Series) -> Prepared:
        emails = self._emails(values)
        user = emails.str.extract(r"^([^@]+)@", expand=False)
        table = np.empty((len(emails), 3), dtype=object)
        table[:, 0] = _hash(emails, emails)
        table[:, 1] = _hash(user, emails)
        table[:, 2] = user.fillna("").to_numpy(dtype=object)
        return Prepared(table, emails.isna().to_numpy())

    @staticmethod
    def _combine(exact: np.ndarray, same_user: np.ndarray, jw: np.ndarray) -> np.ndarray:
        return np.select([exact, same_user, jw >= 0.88], [1.0, 0.8, 0.6], 0.0).astype(
            np.float32)

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        h = lv[:, :2].astype(np.int64), rv[:, :2].astype(np.int64)
        jw = cdist(lv[:, 2], rv[:, 2], scorer=JaroWinkler.normalized_similarity,
                   dtype=np.float32, workers=1, score_cutoff=0.88)
        jw[(lv[:, 2] == "")[:, None] | (rv[:, 2] == "")[None, :]] = 0
        return self._combine(h[0][:, None, 0] == h[1][None, :, 0],
                             h[0][:, None, 1] == h[1][None, :, 1], jw)

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        a, b = lv[:, :2].astype(np.int64), rv[:, :2].astype(np.int64)
        jw = cpdist(lv[:, 2], rv[:, 2], scorer=JaroWinkler.normalized_similarity,
                    dtype=np.float32, workers=1, score_cutoff=0.88)
        jw[(lv[:, 2] == "") | (rv[:, 2] == "")] = 0
        return self._combine(a[:, 0] == b[:, 0], a[:, 1] == b[:, 1], jw)


def phone_digits(values: pd.Series) -> pd.Series:
    """The digits of phone numbers without leading zeros (a national trunk ``0`` or an
    international ``00``: ``+44 20 …``, ``0044 20 …`` and ``020 …`` then end alike);
    missing when there are none."""
    digits = _clean(values, r"[^0-9]", nfkc=False)
    return digits.str.replace(r"^0+", "", regex=True).mask(lambda d: d == "")


@dataclass(frozen=True)
class PhoneMethod(Method):
    name: ClassVar[str] = "phone"
    locates: ClassVar[bool | None] = True
    accepts: ClassVar[str] = "any"
    LEVELS: ClassVar[tuple[float, ...]] = (0.4, 0.6, 0.8, 1.0)
    LABELS: ClassVar[tuple[str, ...]] = ("else", "last 4 digits equal", "one digit off",
                                         "prefix omitted", "exact")
    invalid_advice: ClassVar[str] = "a phone number needs a digit other than 0"
    summary: ClassVar[str] = ("phones: exact digits, prefix omitted, one digit off, "
                              "last 4 digits equal")

    def tf_values(self, values: pd.Series) -> pd.Series:
        return phone_digits(values).astype("string")

    def invalid(self, values: pd.Series) -> np.ndarray:
        """Present values without a digit other than zeros (``n/a``, ``000``)."""
        present = as_key_strings(values).str.strip().fillna("").ne("").to_numpy(dtype=bool)
        return present & phone_digits(values).isna().to_numpy()

    def prepare(self, values: pd.Series) -> Prepared:
        digits = phone_digits(values)
        text = digits.fillna("").str.slice(-MAX_DIGITS)
        uniq, inv = np.unique(text.to_numpy(dtype=str), return_inverse=True)
        table = np.full((len(uniq), MAX_DIGITS + 1), -1, dtype=np.int64)
        n = np.char.str_len(uniq).astype(np.int64) if len(uniq) else np.zeros(0, np.int64)
        table[:, 0] = n
        if len(uniq):  # right-aligned digits: column 1 is the last digit
            codes = np.frombuffer(np.char.ljust(uniq, MAX_DIGITS).astype(
                f"<U{MAX_DIGITS}").tobytes(), dtype=np.uint32).reshape(len(uniq), MAX_DIGITS)
            pos = np.arange(MAX_DIGITS)
            src = n[:, None] - 1 - pos[None, :]  # i-th digit from the right
            ok = src >= 0
            picked = np.take_along_axis(codes, np.clip(src, 0, MAX_DIGITS - 1), axis=1)
            table[:, 1:] = np.where(ok, picked.astype(np.int64) - ord("0"), -1)
        return Prepared(table[inv.ravel()], digits.isna().to_numpy())

    @staticmethod
    def _sim(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        na, nb = a[..., 0], b[..., 0]
        short = np.minimum(na, nb)
        eq = [a[..., i] == b[..., i] for i in range(1, MAX_DIGITS + 1)]
        pos = np.arange(MAX_DIGITS).reshape((MAX_DIGITS,) + (1,) * na.ndim)
        within = pos < short  # digit positions (from the right) both numbers have
        agree = np.where(within, np.stack(eq), True).all(axis=0)
        exact = agree & (na == nb)
        suffix = agree & (short >= 7)
        diff = np.stack([~e for e in eq]) & within
        n_diff = diff.sum(axis=0)
        swap = np.zeros(np.broadcast(na, nb).shape, dtype=bool)
        for i in range(1, MAX_DIGITS):
            swap |= (diff[i - 1] & diff[i] & (a[..., i] == b[..., i + 1])
                     & (a[..., i + 1] == b[..., i]))
        one_off = (na == nb) & (na >= 4) & ((n_diff == 1) | ((n_diff == 2) & swap))
        last4 = (short >= 4) & np.stack(eq[:4]).all(axis=0)
        return np.select([exact, suffix, one_off, last4], [1.0, 0.8, 0.6, 0.4], 0.0).astype(
            np.float32)

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return self._sim(lv[:, None, :], rv[None, :, :])

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return self._sim(lv, rv)
