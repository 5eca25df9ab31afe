"""String similarity methods: rapidfuzz scorers over whole blocks (``cdist``/``cpdist``).

``rapidfuzz.process.cdist`` releases the GIL, so threads scale; ``cpdist`` compares aligned
pairs for many tiny blocks at once. Each method is one scorer and the factor that maps
its score into [0, 1].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import DamerauLevenshtein, Indel, Jaro, JaroWinkler, Levenshtein
from rapidfuzz.process import cdist, cpdist

from .base import Method


@dataclass(frozen=True)
class StringMethod(Method):
    """A rapidfuzz scorer (``scorer`` times ``factor`` is the similarity in [0, 1])."""

    scorer: ClassVar[Callable[..., Any]]
    factor: ClassVar[float] = 1.0

    def _cutoff(self, score_cutoff: float | None) -> float | None:
        if score_cutoff is None:
            return None
        # rapidfuzz compares its float64 score with the cutoff, but the caller keeps
        # float32 scores >= threshold; a score just below the cutoff in float64 can round
        # up to it in float32, so the kernel's cutoff sits a little lower.
        return max(0.0, score_cutoff - 1e-6) / self.factor

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        out = cdist(lv, rv, scorer=self.scorer, dtype=np.float32, workers=1,
                    score_cutoff=self._cutoff(cutoff))
        if self.factor != 1.0:
            out *= np.float32(self.factor)
        return out

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        out = cpdist(lv, rv, scorer=self.scorer, dtype=np.float32, workers=1,
                     score_cutoff=self._cutoff(cutoff))
        if self.factor != 1.0:
            out *= np.float32(self.factor)
        return out


@dataclass(frozen=True)
class JaroWinklerMethod(StringMethod):
    name: ClassVar[str] = "jaro_winkler"
    summary: ClassVar[str] = "Jaro-Winkler similarity (names)"
    scorer = staticmethod(JaroWinkler.normalized_similarity)


@dataclass(frozen=True)
class JaroMethod(StringMethod):
    name: ClassVar[str] = "jaro"
    summary: ClassVar[str] = "Jaro similarity"
    scorer = staticmethod(Jaro.normalized_similarity)


@dataclass(frozen=True)
class LevenshteinMethod(StringMethod):
    name: ClassVar[str] = "levenshtein"
    summary: ClassVar[str] = "1 − Levenshtein distance / max length"
    scorer = staticmethod(Levenshtein.normalized_similarity)


@dataclass(frozen=True)
class DamerauLevenshteinMethod(StringMethod):
    name: ClassVar[str] = "damerau_levenshtein"
    summary: ClassVar[str] = "1 − Damerau-Levenshtein distance / max length"
    scorer = staticmethod(DamerauLevenshtein.normalized_similarity)


@dataclass(frozen=True)
class IndelMethod(StringMethod):
    name: ClassVar[str] = "indel"
    summary: ClassVar[str] = "1 − Indel distance / (len a + len b)  (= fuzz.ratio / 100)"
    scorer = staticmethod(Indel.normalized_similarity)


@dataclass(frozen=True)
class TokenSetMethod(StringMethod):
    name: ClassVar[str] = "token_set"
    summary: ClassVar[str] = "fuzz.token_set_ratio / 100 (word sets, any order)"
    scorer = staticmethod(fuzz.token_set_ratio)
    factor: ClassVar[float] = 0.01


@dataclass(frozen=True)
class TokenSortMethod(StringMethod):
    name: ClassVar[str] = "token_sort"
    summary: ClassVar[str] = "fuzz.token_sort_ratio / 100 (words sorted)"
    scorer = staticmethod(fuzz.token_sort_ratio)
    factor: ClassVar[float] = 0.01
