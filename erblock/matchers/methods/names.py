"""``name``: person names (and other short proper names).

Values are normalised once per record (lower case, accents stripped, white space
collapsed), then compared with Jaro-Winkler. Levels, as Splink's ``NameComparison``:
exact, Jaro-Winkler ≥ 0.92, ≥ 0.88, ≥ 0.70, else. By default the exact level is adjusted
by term frequency (agreeing on a rare name is stronger evidence than on a common one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd
from rapidfuzz.distance import JaroWinkler

from ...blocking.text import as_key_strings, normalise_text, normalised_objects
from .base import Prepared, check_thresholds
from .strings import StringMethod


def normalised(values: pd.Series) -> pd.Series:
    """Lower case, accents stripped, white space collapsed (missing stays missing)."""
    return normalise_text(as_key_strings(values))


@dataclass(frozen=True)
class NameMethod(StringMethod):
    """Jaro-Winkler on normalised names; ``thresholds`` are the fuzzy levels below exact,
    ``tf`` adjusts the exact level by term frequency."""

    name: ClassVar[str] = "name"
    locates: ClassVar[bool | None] = False
    summary: ClassVar[str] = "names: exact, Jaro-Winkler >= 0.92, >= 0.88, >= 0.70 (tf on exact)"
    scorer = staticmethod(JaroWinkler.normalized_similarity)

    thresholds: tuple[float, ...] = (0.92, 0.88, 0.70)
    tf: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", check_thresholds("name thresholds",
                                                                self.thresholds))

    @property
    def levels(self) -> tuple[float, ...]:
        return tuple(sorted(self.thresholds)) + (1.0,)

    @property
    def labels(self) -> tuple[str, ...]:
        return ("else", *(f"Jaro-Winkler >= {t:g}" for t in sorted(self.thresholds)), "exact")

    def prepare_key(self) -> Any:
        return (NameMethod.prepare,)

    def prepare(self, values: pd.Series) -> Prepared:
        text = normalised_objects(as_key_strings(values))
        return Prepared(text, values.isna().to_numpy() | (text == ""))

    def tf_values(self, values: pd.Series) -> pd.Series:
        return normalised(values)
