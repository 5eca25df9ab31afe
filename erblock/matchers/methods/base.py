"""What a comparison kind is: prepare values once, compare them in bulk, cut into levels.

A :class:`Method` is a frozen dataclass whose fields are its options (so ``Numeric(scale=5)``
is a checked, inspectable spec), modelled on rapidfuzz's scorer protocol: it maps a pair of
values to a similarity in [0, 1] (1 = identical) with one rule for missing values — a
missing value on either side gives a null (NaN) similarity, never a silent 0. Missing
means None, NaN, pd.NA or a string that is empty or only white space (a blank field
carries no evidence).

* :meth:`Method.prepare` runs once per record: values ready for the kernel and a missing
  mask (:class:`Prepared`);
* :meth:`Method.matrix` compares a left and a right slice in full (``len(left) ×
  len(right)`` float32, the kernel of whole sub-block products);
* :meth:`Method.aligned` compares aligned pairs ``(left[li[k]], right[rj[k]])`` (many
  tiny blocks at once);
* :attr:`Method.levels` are the similarity thresholds that cut it into Fellegi-Sunter
  levels by default; ``accepts`` says which column dtypes it takes.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd

from ...blocking.neighbourhood import is_sortable_number
from ...blocking.text import blank
from ...errors import InputTypeError
from ...scalars import is_number


def check_thresholds(name: str, thresholds: Any) -> tuple[float, ...]:
    """Distinct similarity thresholds in (0, 1), as a descending tuple (one number: one
    threshold)."""
    if is_number(thresholds):
        thresholds = (thresholds,)
    try:
        ts = tuple(sorted((float(t) for t in thresholds), reverse=True))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers in (0, 1), got {thresholds!r}") from None
    if not ts or any(not 0.0 < t < 1.0 for t in ts) or len(set(ts)) != len(ts):
        raise ValueError(f"{name} must be distinct numbers in (0, 1), got {thresholds!r}")
    return ts


class Prepared(NamedTuple):
    """Values of a slice of records ready for a kernel, and which of them are missing."""

    values: np.ndarray
    missing: np.ndarray

    def take(self, idx: Any) -> Prepared:
        return Prepared(self.values[idx], self.missing[idx])


#: the advice of a column numeric in one source and text in the other (the command line
#: rewords it: its CSV columns are text, parquet keeps types)
ONE_TYPE = ("give the column one type in both inputs (codes as text: pd.read_csv(..., "
            "dtype=str); numbers: pd.to_numeric)")
#: what a method accepts: "text" (strings; numbers refused), "number" (numbers or text
#: parsed as numbers), "any"
ACCEPTS = ("text", "number", "any")


@dataclass(frozen=True)
class Method:
    """Base of the comparison kinds (see the module doc). Subclasses set ``name`` and
    define the kernels; their dataclass fields are their options."""

    name: ClassVar[str] = ""
    accepts: ClassVar[str] = "text"
    #: a column numeric in one source and text in the other: "ok" (the method parses or
    #: cleans both alike), "zeros" (numbers have lost a code's leading zeros: warned),
    #: "never" (a number never equals a text: refused)
    mixed_types: ClassVar[str] = "ok"
    #: default Fellegi-Sunter level thresholds (ascending; the top one is exact agreement)
    LEVELS: ClassVar[tuple[float, ...]] = (0.8, 0.92, 1.0)
    #: a label per level, lowest first (None: derived from the thresholds)
    LABELS: ClassVar[tuple[str, ...] | None] = None
    summary: ClassVar[str] = ""
    #: where the record is found (True: an address's postcode, a landline), what the
    #: record is (False: names, dates, e-mail), or neither (None): which comparisons a
    #: Fellegi-Sunter group of parts that change together may hold (``scoring.groups``)
    locates: ClassVar[bool | None] = None
    #: adjust the exact level by term frequency unless a model says otherwise
    tf: bool = False

    @property
    def levels(self) -> tuple[float, ...]:
        """Similarity thresholds of the default Fellegi-Sunter levels, ascending."""
        return self.LEVELS

    @property
    def labels(self) -> tuple[str, ...]:
        """A readable label per level, lowest (else) first."""
        if self.LABELS is not None:
            return self.LABELS
        ts = self.levels
        return (f"< {ts[0]:g}", *(f">= {t:g}" for t in ts[:-1]), "exact")

    # -- options ------------------------------------------------------------------------

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The method's options: its dataclass fields, except run state (``metadata``
        ``{"state": True}``, e.g. the corpus statistics of ``text``)."""
        return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get("state"))

    @classmethod
    def with_options(cls, options: Mapping[str, Any], column: str = "?") -> Method:
        """The method with ``options`` (checked: unknown names and bad values raise)."""
        allowed = cls.option_names()
        for k in options:
            if k not in allowed:
                raise ValueError(
                    f"compare: option {k!r} is not valid for method {cls.name!r} "
                    f"(column {column!r}); its options: {', '.join(allowed) or 'none'}; "
                    "every comparison also takes weight= (and name= in Python)"
                )
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        for k, v in options.items():  # a switch is a switch ("tf=maybe" is no answer)
            if isinstance(defaults.get(k), bool) and not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"compare: option {k!r} of method {cls.name!r} (column "
                                 f"{column!r}) is true or false, got {v!r}")
        try:
            return cls(**dict(options))
        except ValueError as exc:
            raise ValueError(f"compare: {exc} (column {column!r}, method {cls.name!r})") from None

    def options(self) -> dict[str, Any]:
        """The options that differ from their defaults."""
        out = {}
        for f in dataclasses.fields(self):
            if f.metadata.get("state"):
                continue
            v = getattr(self, f.name)
            if v != f.default:
                out[f.name] = v
        return out

    # -- input --------------------------------------------------------------------------

    def tf_values(self, values: pd.Series) -> pd.Series:
        """The values term frequencies are counted on (as the method compares them)."""
        return values.astype("string")

    #: the similarity is 1 for equal prepared values, else 0: the encoded path compares
    #: the values' codes instead (:mod:`erblock.engine.tasks.encoded`)
    equality: ClassVar[bool] = False
    #: whether the method needs statistics of the whole input (:meth:`corpus_items`)
    needs_corpus: ClassVar[bool] = False

    def corpus_items(self, prepared: Prepared) -> np.ndarray:  # pragma: no cover
        """What the corpus statistics count, once per record (e.g. its distinct tokens)."""
        return np.zeros(0, dtype=np.int64)

    def with_corpus(self, corpus: Any) -> Method:
        """This method with the whole input's statistics (methods that need none ignore
        them)."""
        return self

    #: what to do about values this method cannot compare (said when many are)
    invalid_advice: ClassVar[str] = ""

    def invalid(self, values: pd.Series) -> np.ndarray | None:
        """Which values are present but cannot be compared (they count as missing), or
        None for a method that compares any value."""
        return None

    #: what is said of a column :meth:`misread` finds read two ways (a format string)
    misread_advice: ClassVar[str] = ""

    def misread(self, values: pd.Series
                ) -> list[tuple[str, int, int, int, list[str], list[str]]]:
        """How ambiguous values were read, to find ones probably read the wrong way: per
        other reading, (the option that reads so, values only it reads, values read the
        default way that it reads otherwise, values only the default reads, examples of
        the first two). Counts of partitions add up. Empty for most methods."""
        return []

    def inspect(self, values: pd.Series
                ) -> tuple[np.ndarray | None, list[tuple[str, int, int, int, list[str], list[str]]]]:
        """:meth:`invalid` and :meth:`misread` of ``values`` (a method that parses once
        for both overrides this)."""
        return self.invalid(values), self.misread(values)

    def count_invalid(self, values: pd.Series) -> int:
        """How many values are present but cannot be compared (see :meth:`invalid`)."""
        bad = self.invalid(values)
        return 0 if bad is None else int(bad.sum())

    def check_dtype(self, dtype: Any, column: str, frame: str) -> None:
        """Raise an InputTypeError (a TypeError) naming the column when this method
        cannot compare ``dtype``."""
        numeric = is_sortable_number(dtype)
        if self.accepts == "text" and numeric:
            raise InputTypeError(
                f"compare: column {column!r} of {frame} holds numbers ({dtype}) but method "
                f"{self.name!r} compares text; use 'numeric' or 'exact', or convert the "
                "column with .astype(str)"
            )
        textual = pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
        cats = getattr(dtype, "categories", None) if isinstance(
            dtype, pd.CategoricalDtype) else None  # a categorical is read as its values
        coded = cats is not None and (
            (is_sortable_number(cats.dtype) and not pd.api.types.is_bool_dtype(cats.dtype))
            or pd.api.types.is_object_dtype(cats.dtype)
            or pd.api.types.is_string_dtype(cats.dtype))
        if self.accepts == "number" and not (numeric or textual or coded):
            raise InputTypeError(
                f"compare: column {column!r} of {frame} is {dtype}, but method "
                f"{self.name!r} needs numbers"
            )

    def check_dtypes(self, columns: Mapping[str, tuple[str, Any, bool, bool]]) -> None:
        """:meth:`check_dtype` for every source (``columns``: frame name -> (column, its
        dtype, whether it may hold a number: not when it is all missing, whether it holds
        text: a string dtype, or object or category values that are all strings)), then a
        column of numbers in one source and of strings in the other (see
        ``mixed_types``). A numeric column that is all missing (an empty CSV column reads
        as float NaN) is missing everywhere, not numbers."""
        for frame, (col, dtype, some, _) in columns.items():
            if some or not is_sortable_number(dtype):
                self.check_dtype(dtype, col, frame)
        num = [f for f, (_, d, some, _) in columns.items() if some and is_sortable_number(d)]
        txt = [f for f, (*_, text) in columns.items() if text]
        if not (num and txt) or self.mixed_types == "ok":
            return
        a, b = columns[num[0]][0], columns[txt[0]][0]
        what = (f"compare: column {a!r} is numeric in {num[0]} but text in {txt[0]}" if a == b
                else f"compare: column {a!r} of {num[0]} is numeric but {b!r} of {txt[0]} is text")
        if self.mixed_types == "never":
            raise ValueError(f"{what}: method {self.name!r} never finds a number equal to "
                             f"a text; {ONE_TYPE}")
        warnings.warn(f"{what}: codes read as numbers lose their leading zeros (02138 -> "
                      "2138) and then never agree with the same code written as text; "
                      f"{ONE_TYPE}", UserWarning, stacklevel=_caller_level())

    # -- kernels ------------------------------------------------------------------------

    def prepare_key(self) -> Any:
        """What :meth:`prepare` depends on: comparisons of one column whose methods have
        equal keys share their prepared values."""
        return type(self).prepare

    def prepare(self, values: pd.Series) -> Prepared:
        """Values ready for the kernel and a missing mask (runs once per record).

        The default: text. A string that is empty or only white space is missing too, as
        it is for blocking keys: a blank cell carries no evidence (``"abc"`` against
        ``" "`` would otherwise score 0 and pull the mean down, and two blanks agree).
        """
        strings = values.astype("string")
        return Prepared(strings.fillna("").to_numpy(dtype=object), blank(strings))

    def matrix(self, left: Prepared, right: Prepared,
               score_cutoff: float | None = None) -> np.ndarray:
        """Similarity matrix (float32, NaN where either value is missing)."""
        out = self._matrix(left.values, right.values, score_cutoff)
        if left.missing.any():
            out[left.missing, :] = np.nan
        if right.missing.any():
            out[:, right.missing] = np.nan
        return out

    def aligned(self, left: Prepared, right: Prepared, li: np.ndarray, rj: np.ndarray,
                score_cutoff: float | None = None) -> np.ndarray:
        """Similarities of the pairs (left[li[k]], right[rj[k]]): float32, NaN if missing;
        the same values as :meth:`matrix` at those cells."""
        out = self._aligned(left.values[li], right.values[rj], score_cutoff)
        missing = left.missing[li] | right.missing[rj]
        if missing.any():
            out[missing] = np.nan
        return out

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - every method defines it

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - every method defines it


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside erblock (the user's call), seen from
    the function that calls this one."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and _in_erblock(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    return level


def _in_erblock(module: str) -> bool:
    return module == "erblock" or module.startswith("erblock.")
