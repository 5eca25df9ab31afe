"""``numeric``: closeness of two numbers, absolute or relative.

``mode="abs"``: ``max(0, 1 − |a−b| / scale)``; ``mode="rel"``: ``max(0, 1 − |a−b| /
max(|a|, |b|))`` (0 vs 0 gives 1). Text is parsed as numbers; what is not a number is
missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from .base import Method, Prepared


@dataclass(frozen=True)
class NumericMethod(Method):
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
        if isinstance(s, bool) or not isinstance(s, (int, float)):
            raise ValueError(f"numeric scale must be a number > 0, got {s!r}")
        if not s > 0:
            raise ValueError(f"numeric scale must be > 0, got {s!r}")

    def prepare(self, values: pd.Series) -> Prepared:
        missing = values.isna().to_numpy()
        arr = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        return Prepared(arr, missing | np.isnan(arr))

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
