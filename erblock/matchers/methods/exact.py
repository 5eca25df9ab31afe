"""``exact``: 1 when the two values are equal, else 0 (any dtype)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from .base import Method, Prepared


@dataclass(frozen=True)
class ExactMethod(Method):
    name: ClassVar[str] = "exact"
    accepts: ClassVar[str] = "any"
    mixed_types: ClassVar[str] = "never"
    LEVELS: ClassVar[tuple[float, ...]] = (1.0,)
    summary: ClassVar[str] = "1 if the values are equal, else 0 (any dtype)"
    equality: ClassVar[bool] = True

    def prepare(self, values: pd.Series) -> Prepared:
        blank = super().prepare(values).missing
        return Prepared(values.to_numpy(dtype=object), blank)

    @staticmethod
    def _codes(lv: np.ndarray, rv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        codes, _ = pd.factorize(np.concatenate([lv, rv]), use_na_sentinel=True)
        return codes[: len(lv)], codes[len(lv):]

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        lc, rc = self._codes(lv, rv)
        return (lc[:, None] == rc[None, :]).astype(np.float32)

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        lc, rc = self._codes(lv, rv)
        return (lc == rc).astype(np.float32)
