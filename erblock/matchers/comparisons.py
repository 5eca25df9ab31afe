"""Comparisons: frozen specs and bulk similarity kernels over whole sub-block products.

Every method maps a pair of values to a similarity in [0, 1] (1 = identical) and has one
rule for missing values: **a missing value on either side gives a null (NaN)
similarity**, never a silent 0. Missing means None, NaN, pd.NA or an empty string (a
blank field carries no evidence; for ``numeric`` also text that is not a number). Kernels work on a left and a right column of prepared
values and return a ``(len(left), len(right))`` float32 matrix, computed with
``rapidfuzz.process.cdist`` for strings (which releases the GIL, so threads scale) and
with numpy broadcasting for exact and numeric comparisons; no Python loop per pair.

Methods:

=====================  ============================================================
``exact``              1 if the values are equal, else 0 (any dtype)
``jaro_winkler``       Jaro-Winkler similarity
``jaro``               Jaro similarity
``levenshtein``        1 − Levenshtein distance / max length
``damerau_levenshtein`` 1 − Damerau-Levenshtein distance / max length
``indel``              1 − Indel distance / (len a + len b)  (= fuzz.ratio / 100)
``token_set``          fuzz.token_set_ratio / 100
``token_sort``         fuzz.token_sort_ratio / 100
``numeric``            ``mode="abs"``: max(0, 1 − |a−b| / scale);
                       ``mode="rel"``: max(0, 1 − |a−b| / max(|a|, |b|))  (0 vs 0 → 1)
=====================  ============================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

STRING_METHODS = (
    "jaro_winkler",
    "jaro",
    "levenshtein",
    "damerau_levenshtein",
    "indel",
    "token_set",
    "token_sort",
)
METHODS = ("exact", *STRING_METHODS, "numeric")


def _scorer(method: str) -> tuple[Callable[..., float], float]:
    """rapidfuzz scorer for a string method and the factor that maps it to [0, 1]."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import (
        DamerauLevenshtein,
        Indel,
        Jaro,
        JaroWinkler,
        Levenshtein,
    )

    table: dict[str, tuple[Callable[..., float], float]] = {
        "jaro_winkler": (JaroWinkler.normalized_similarity, 1.0),
        "jaro": (Jaro.normalized_similarity, 1.0),
        "levenshtein": (Levenshtein.normalized_similarity, 1.0),
        "damerau_levenshtein": (DamerauLevenshtein.normalized_similarity, 1.0),
        "indel": (Indel.normalized_similarity, 1.0),
        "token_set": (fuzz.token_set_ratio, 0.01),
        "token_sort": (fuzz.token_sort_ratio, 0.01),
    }
    return table[method]


@dataclass(frozen=True)
class Comparison:
    """Compare ``column`` with ``method``; the result column is ``name``.

    ``weight`` is its weight in the mean ``score``; ``options`` holds method options
    (``numeric``: ``scale`` (default 1.0) and ``mode`` (``"abs"`` or ``"rel"``)).
    ``right_column`` names the column in the right frame when it differs (link).
    """

    column: str
    method: str
    weight: float = 1.0
    name: str = ""
    right_column: str = ""
    options: tuple[tuple[str, Any], ...] = field(default=())

    OPTION_KEYS: ClassVar[dict[str, tuple[str, ...]]] = {"numeric": ("scale", "mode")}

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"compare: column must be a non-empty string, got {self.column!r}")
        if self.method not in METHODS:
            import difflib

            close = difflib.get_close_matches(str(self.method), METHODS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"compare: unknown method {self.method!r} for column {self.column!r}; "
                f"expected one of {', '.join(METHODS)}{hint}"
            )
        w = self.weight
        if not isinstance(w, (int, float)) or isinstance(w, bool) or not np.isfinite(w) or w <= 0:
            raise ValueError(
                f"compare: weight of {self.column!r} must be a positive number, got {w!r}"
            )
        allowed = self.OPTION_KEYS.get(self.method, ())
        for k, _ in self.options:
            if k not in allowed:
                raise ValueError(
                    f"compare: option {k!r} is not valid for method {self.method!r} "
                    f"(column {self.column!r}); valid options: {allowed or 'none'}"
                )
        opts = dict(self.options)
        if self.method == "numeric":
            if opts.get("mode", "abs") not in ("abs", "rel"):
                raise ValueError(
                    f"compare: numeric mode of {self.column!r} must be 'abs' or 'rel', "
                    f"got {opts['mode']!r}"
                )
            scale = opts.get("scale", 1.0)
            if not isinstance(scale, (int, float)) or not scale > 0:
                raise ValueError(
                    f"compare: numeric scale of {self.column!r} must be > 0, got {scale!r}"
                )
        if not self.name:
            object.__setattr__(self, "name", f"{self.column}_{self.method}")
        if not self.right_column:
            object.__setattr__(self, "right_column", self.column)

    @property
    def option(self) -> dict[str, Any]:
        return dict(self.options)

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "method": self.method,
            "weight": self.weight,
            "name": self.name,
            "right_column": self.right_column,
            "options": dict(self.options),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Comparison:
        d = dict(d)
        opts = d.pop("options", {}) or {}
        known = {"column", "method", "weight", "name", "right_column"}
        extra = set(d) - known
        if extra:
            # Options may also be given inline: {"column": "age", "method": "numeric", "scale": 5}
            opts = {**opts, **{k: d.pop(k) for k in extra}}
        return cls(options=tuple(sorted(opts.items())), **d)

    # -- kernels -----------------------------------------------------------------------

    def prepare(self, values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        """Values ready for the kernel and a missing-value mask (runs once per record)."""
        missing = values.isna().to_numpy()
        if self.method == "numeric":
            arr = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            return arr, missing | np.isnan(arr)
        # An empty string is missing too, as it is for blocking keys: "" vs "" is no evidence
        # of a match and "" vs "abc" none against it.
        text = values.astype("string").fillna("").to_numpy(dtype=object)
        blank = text == ""
        if self.method == "exact":
            return values.to_numpy(dtype=object), missing | blank
        return text, missing | blank

    def matrix(
        self, left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray],
        score_cutoff: float | None = None,
    ) -> np.ndarray:
        """Similarity matrix (float32, NaN where either value is missing)."""
        (lv, lm), (rv, rm) = left, right
        if self.method in STRING_METHODS:
            from rapidfuzz.process import cdist

            scorer, factor = _scorer(self.method)
            cutoff = None
            if score_cutoff is not None:
                # rapidfuzz compares its float64 score with the cutoff, but the caller keeps
                # float32 scores >= threshold; a score just below the cutoff in float64 can
                # round up to it in float32, so the kernel's cutoff sits a little lower.
                cutoff = max(0.0, score_cutoff - 1e-6) / factor
            out = cdist(lv, rv, scorer=scorer, dtype=np.float32, workers=1, score_cutoff=cutoff)
            if factor != 1.0:
                out *= np.float32(factor)
        elif self.method == "exact":
            codes, _ = pd.factorize(np.concatenate([lv, rv]), use_na_sentinel=True)
            lc, rc = codes[: len(lv)], codes[len(lv) :]
            out = (lc[:, None] == rc[None, :]).astype(np.float32)
        else:
            opts = self.option
            diff = np.abs(lv[:, None] - rv[None, :])
            if opts.get("mode", "abs") == "rel":
                denom = np.maximum(np.abs(lv)[:, None], np.abs(rv)[None, :])
                with np.errstate(divide="ignore", invalid="ignore"):
                    sim = np.where(denom > 0, 1.0 - diff / denom, 1.0)
            else:
                sim = 1.0 - diff / float(opts.get("scale", 1.0))
            out = np.clip(sim, 0.0, 1.0).astype(np.float32)
        if lm.any():
            out[lm, :] = np.nan
        if rm.any():
            out[:, rm] = np.nan
        return out

    def aligned(
        self, left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray],
        li: np.ndarray, rj: np.ndarray, score_cutoff: float | None = None,
    ) -> np.ndarray:
        """Similarities of the pairs (left[li[k]], right[rj[k]]): float32, NaN if missing.

        The same values as :meth:`matrix` at those cells, for many small blocks at once:
        ``rapidfuzz.process.cpdist`` over aligned pairs costs a fraction of a microsecond
        a pair, where a ``cdist`` call per tiny block costs its fixed overhead each time.
        """
        (lv, lm), (rv, rm) = left, right
        if self.method in STRING_METHODS:
            from rapidfuzz.process import cpdist

            scorer, factor = _scorer(self.method)
            cutoff = None
            if score_cutoff is not None:  # see matrix(): float32 rounding at the cutoff
                cutoff = max(0.0, score_cutoff - 1e-6) / factor
            out = cpdist(lv[li], rv[rj], scorer=scorer, dtype=np.float32, workers=1,
                         score_cutoff=cutoff)
            if factor != 1.0:
                out *= np.float32(factor)
        elif self.method == "exact":
            codes, _ = pd.factorize(np.concatenate([lv, rv]), use_na_sentinel=True)
            out = (codes[: len(lv)][li] == codes[len(lv) :][rj]).astype(np.float32)
        else:
            a, b = lv[li], rv[rj]
            diff = np.abs(a - b)
            if self.option.get("mode", "abs") == "rel":
                denom = np.maximum(np.abs(a), np.abs(b))
                with np.errstate(divide="ignore", invalid="ignore"):
                    sim = np.where(denom > 0, 1.0 - diff / denom, 1.0)
            else:
                sim = 1.0 - diff / float(self.option.get("scale", 1.0))
            out = np.clip(sim, 0.0, 1.0).astype(np.float32)
        missing = lm[li] | rm[rj]
        if missing.any():
            out[missing] = np.nan
        return out


CompareLike = Any


def as_comparisons(compare: CompareLike) -> tuple[Comparison, ...]:
    """Normalise ``compare`` (dict column -> method, or a list of specs) into Comparisons.

    Accepted: ``{"surname": "jaro_winkler", "dob": "exact"}``,
    ``{"age": {"method": "numeric", "scale": 5}}``, or a list of :class:`Comparison`,
    dicts (``{"column": ..., "method": ..., "weight": ...}``) or ``(column, method)`` tuples.
    """
    if isinstance(compare, Comparison):
        return (compare,)
    specs: list[Comparison] = []
    if isinstance(compare, Mapping):
        for col, how in compare.items():
            if isinstance(how, str):
                specs.append(Comparison(col, how))
            elif isinstance(how, Mapping):
                specs.append(Comparison.from_dict({"column": col, **how}))
            else:
                raise TypeError(
                    f"compare[{col!r}] must be a method name or a dict of options, "
                    f"got {type(how).__name__}"
                )
    elif isinstance(compare, Sequence) and not isinstance(compare, (str, bytes)):
        for item in compare:
            if isinstance(item, Comparison):
                specs.append(item)
            elif isinstance(item, Mapping):
                specs.append(Comparison.from_dict(item))
            elif isinstance(item, tuple) and len(item) == 2:
                specs.append(Comparison(item[0], item[1]))
            else:
                raise TypeError(
                    "compare: each item must be a Comparison, a dict or a (column, method) "
                    f"tuple, got {item!r}"
                )
    else:
        raise TypeError(
            "compare must be a dict {column: method} or a list of comparisons, "
            f"got {type(compare).__name__}"
        )
    if not specs:
        raise ValueError("compare: give at least one comparison, e.g. {'name': 'jaro_winkler'}")
    names = [s.name for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"compare: result column names must be unique, repeated: {sorted(dup)}")
    return tuple(specs)


def comparison(column: str, method: str, weight: float = 1.0, name: str = "",
               right_column: str = "", **options: Any) -> Comparison:
    """Build a :class:`Comparison` (options such as ``scale=5`` as keywords)."""
    return Comparison(column, method, weight, name, right_column, tuple(sorted(options.items())))
