"""``numeric``: closeness of two numbers, absolute or relative.

``mode="abs"``: ``max(0, 1 − |a−b| / scale)``; ``mode="rel"``: ``max(0, 1 − |a−b| /
max(|a|, |b|))`` (0 vs 0 gives 1; ``scale`` does not apply and is ignored).

Text is parsed as numbers the way shops and registers write them: a currency or unit
around the number is dropped (``$1,299.99``, ``USD 20``, ``20.00 EUR``, ``12 kg``) and
commas between groups of three digits are thousands separators (``1,299.99`` is 1299.99).
Nothing is guessed beyond that: ``1.299,99`` or ``2x4`` are no numbers. What is not a
number is missing, and the present ones are counted in the run report
(``invalid_<comparison>``), as for dates. Numbers are compared as float64, so integers
beyond 2**53 (16 digits and more: card numbers, long ids) lose their last digits and
neighbours compare equal; such codes are text to compare with ``exact``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from ...scalars import is_number
from .base import Method, Prepared

#: a currency, unit or words before or after the number (never inside it)
_AROUND = r"^[^\d+\-.]+|[^\d.]+$"
#: a number written with thousands separators: 1,299 / 12,345,678.5
_THOUSANDS = r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?$"


def parse_numbers(values: pd.Series) -> np.ndarray:
    """``values`` as float64: numbers as they are, text as the module doc says (NaN when
    missing or not a number). Vectorised: pandas string methods on the text that
    ``pd.to_numeric`` did not take. A categorical is read as its categories' values."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.dtype.categories
        if not pd.api.types.is_numeric_dtype(cats.dtype) or pd.api.types.is_bool_dtype(
                cats.dtype):
            return parse_numbers(values.astype(object))
        codes = values.cat.codes.to_numpy()
        table = np.append(cats.to_numpy(dtype=np.float64), np.nan)  # code -1: missing
        return table[codes]
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(
            values.dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    out = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan,
                                                          copy=True)
    rest = np.isnan(out) & values.notna().to_numpy()
    if rest.any():
        text = values[rest].astype("string").str.strip().str.replace(_AROUND, "", regex=True)
        grouped = text.str.fullmatch(_THOUSANDS).fillna(False).to_numpy(dtype=bool)
        text = text.where(~grouped, text.str.replace(",", "", regex=False))
        out[rest] = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64,
                                                                  na_value=np.nan)
    return out


@dataclass(frozen=True)
class NumericMethod(Method):
    invalid_advice: ClassVar[str] = (
        "numbers are read with a currency sign, units or thousands separators stripped; "
        "convert other writings to numbers first")
    name: ClassVar[str] = "numeric"
    accepts: ClassVar[str] = "number"
    LEVELS: ClassVar[tuple[float, ...]] = (0.5, 0.9, 1.0)
    summary: ClassVar[str] = "1 − |a−b| / scale (mode='abs') or / max(|a|, |b|) (mode='rel')"

    scale: float = 1.0
    mode: str = "abs"

    def __post_init__(self) -> None:
        if self.mode not in ("abs", "rel"):
            raise ValueError(f"numeric mode must be 'abs' or 'rel', got {self.mode!r}")
        s = self.scale
        if not is_number(s):
            raise ValueError(f"numeric scale must be a number > 0, got {s!r}")
        if not s > 0 or not np.isfinite(s):  # an infinite scale makes every pair 1
            raise ValueError(f"numeric scale must be a finite number > 0, got {s!r}")
        object.__setattr__(self, "scale", float(s))

    def prepare(self, values: pd.Series) -> Prepared:
        missing = values.isna().to_numpy()
        arr = parse_numbers(values)
        return Prepared(arr, missing | np.isnan(arr))

    def invalid(self, values: pd.Series) -> np.ndarray:
        """Present values that are not numbers (blank text counts as missing)."""
        text = values.astype("string").str.strip()
        present = (values.notna() & text.fillna("").ne("")).to_numpy()
        return present & np.isnan(parse_numbers(values))

    def _sim(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        diff = np.abs(a - b)
        if self.mode == "rel":
            denom = np.maximum(np.abs(a), np.abs(b))
            with np.errstate(divide="ignore", invalid="ignore"):
                sim = np.where(denom > 0, 1.0 - diff / denom, 1.0)
        else:
            sim = 1.0 - diff / float(self.scale)
        return np.clip(sim, 0.0, 1.0).astype(np.float32)

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return self._sim(lv[:, None], rv[None, :])

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return self._sim(lv, rv)
