"""Comparisons: frozen specs saying which column is compared how.

A :class:`Comparison` names a column, a method from the registry
(:data:`erblock.matchers.methods.METHODS`) with its options, a weight in the mean score and
the name of its result column. It is checked when built (unknown methods, options and bad
values fail with the column named) and round-trips through ``to_dict``/``from_dict``. Its
``kernel`` is the method object that prepares and compares values in bulk
(:mod:`erblock.matchers.methods`).

Every method maps a pair of values to a similarity in [0, 1] (1 = identical) and has one
rule for missing values: **a missing value on either side gives a null (NaN)
similarity**, never a silent 0. Missing means None, NaN, pd.NA or a blank string (empty or
only white space).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..blocking.cli_args import hide_escapes, restore_escapes, restore_in_message
from ..scalars import as_python, is_number
from .methods import METHODS, Method, Prepared, get_method

STRING_METHODS = tuple(n for n, m in METHODS.items() if m.accepts == "text")


#: columns a scored pairs frame has besides the similarities
RESERVED_COLUMNS = ("left_id", "right_id", "score", "match_weight", "match_probability")
PASS_COLUMN = "match_key"  #: the key pass that found the pair (kept in scored output)
#: the pairs frame's own columns, which no comparison's result column may be named
PAIR_COLUMNS = (*RESERVED_COLUMNS, PASS_COLUMN)


@dataclass(frozen=True)
class Comparison:
    """Compare ``column`` with ``method``; the result column is ``name``.

    ``weight`` is its weight in the mean ``score``; ``options`` holds method options
    (e.g. ``numeric``: ``scale`` and ``mode``) as sorted ``(name, value)`` pairs.
    ``right_column`` names the column in the right frame when it differs (link).
    """

    column: str
    method: str
    weight: float = 1.0
    name: str = ""
    right_column: str = ""
    options: tuple[tuple[str, Any], ...] = field(default=())
    #: statistics of the whole input the method needs (``text``'s token weights), set by
    #: the engine before comparing (:meth:`with_corpus`); not part of the spec
    corpus: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ValueError(f"compare: column must be a non-empty string, got {self.column!r}")
        get_method(self.method, self.column)
        w = self.weight
        if not is_number(w) or not np.isfinite(w) or w <= 0:
            raise ValueError(
                f"compare: weight of {self.column!r} must be a positive number, got {w!r}"
            )
        if not 1e-6 <= w <= 1e6:  # scores are float32: 1e-300 is 0 there (a 0/0 score)
            raise ValueError(f"compare: weight of {self.column!r} must be between 1e-6 and "
                             f"1e6 (only the weights' ratios count), got {w!r}")
        object.__setattr__(self, "weight", as_python(w))
        # a list option (read back from JSON) is the tuple it was given as, a NumPy
        # scalar (a scale read from a frame) the Python value
        object.__setattr__(self, "options", tuple(sorted(
            (k, tuple(v) if isinstance(v, list) else as_python(v))
            for k, v in dict(self.options).items())))
        self.kernel  # noqa: B018 - options are checked when the spec is built
        if not self.name:
            object.__setattr__(self, "name", f"{self.column}_{self.method}")
        if not self.right_column:
            object.__setattr__(self, "right_column", self.column)

    @cached_property
    def kernel(self) -> Method:
        """The method object with this comparison's options (and corpus statistics)."""
        k = get_method(self.method, self.column).with_options(dict(self.options), self.column)
        return k.with_corpus(self.corpus) if self.corpus is not None else k

    @property
    def needs_corpus(self) -> bool:
        """Whether the method wants statistics of the whole input before comparing."""
        return bool(self.kernel.needs_corpus) and self.corpus is None

    def with_corpus(self, corpus: Any) -> Comparison:
        """This comparison with the whole input's statistics for its method."""
        return dataclasses.replace(self, corpus=corpus)

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
        for need in ("column", "method"):  # a misspelt key is no method option
            if need not in d:
                raise ValueError(
                    f"compare: the comparison of column {d.get('column')!r} has no {need!r}"
                    + (f" (unknown key(s) {sorted(extra, key=str)}: misspelt?)" if extra
                       else "") + f"; known keys: {sorted(known)} and the method's options")
        if extra:
            # Options may also be given inline: {"column": "age", "method": "numeric", "scale": 5}
            opts = {**opts, **{k: d.pop(k) for k in extra}}
        return cls(options=tuple(sorted(opts.items())), **d)

    # -- kernels (delegated to the method) --------------------------------------------------

    def prepare(self, values: Any) -> Prepared:
        """Values ready for the kernel and a missing-value mask (runs once per record)."""
        return self.kernel.prepare(values)

    def matrix(self, left: Prepared | tuple[np.ndarray, np.ndarray],
               right: Prepared | tuple[np.ndarray, np.ndarray],
               score_cutoff: float | None = None) -> np.ndarray:
        """Similarity matrix (float32, NaN where either value is missing)."""
        return self.kernel.matrix(Prepared(*left), Prepared(*right), score_cutoff)

    def aligned(self, left: Prepared | tuple[np.ndarray, np.ndarray],
                right: Prepared | tuple[np.ndarray, np.ndarray], li: np.ndarray,
                rj: np.ndarray, score_cutoff: float | None = None) -> np.ndarray:
        """Similarities of the pairs (left[li[k]], right[rj[k]]): float32, NaN if missing."""
        return self.kernel.aligned(Prepared(*left), Prepared(*right), li, rj, score_cutoff)


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
    taken = [n for n in names if n in PAIR_COLUMNS]
    if taken:  # the similarity would replace the ids or the score
        raise ValueError(f"compare: {taken[0]!r} names a column of the pairs frame "
                         f"({', '.join(PAIR_COLUMNS)}); give the comparison another "
                         "name= (by default <column>_<method>)")
    return tuple(specs)


def comparison(column: str, method: str, weight: float = 1.0, name: str = "",
               right_column: str = "", **options: Any) -> Comparison:
    """Build a :class:`Comparison` (options such as ``scale=5`` as keywords)."""
    return Comparison(column, method, weight, name, right_column, tuple(sorted(options.items())))


def parse_compare(text: str) -> Comparison:
    """A comparison from its command-line form ``COLUMN:METHOD[:OPTION=VALUE...]``
    (``LEFT=RIGHT:METHOD`` for link with different names; option ``weight=W``). Option
    values are read as numbers when they look like numbers. A column whose name holds
    ``:`` or ``=`` is written with a backslash before them (``addr\\:city:name``)."""
    given, text = text, hide_escapes(text)
    try:
        return _parse_compare(text, given)
    except ValueError as exc:
        if text == given:  # no escapes: the message as it is
            raise
        raise ValueError(restore_in_message(str(exc))) from exc


def _parse_compare(text: str, given: str) -> Comparison:
    """:func:`parse_compare` of ``text`` (its escapes hidden), naming ``given`` in errors."""
    bits = text.split(":")
    if len(bits) < 2 or not bits[0] or not bits[1]:
        raise ValueError(f"--compare {given!r}: expected COLUMN:METHOD, e.g. name:jaro_winkler")
    col, method, rest = bits[0], bits[1], bits[2:]
    left, _, right = col.partition("=")
    opts: dict[str, Any] = {}
    weight = 1.0
    for item in rest:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"--compare {given!r}: option {item!r} must be NAME=VALUE")
        if key == "weight":
            try:
                weight = float(value)
            except ValueError:
                raise ValueError(f"--compare {given!r}: {value!r} is not a number") from None
        else:
            opts[restore_escapes(key)] = restore_escapes(_cli_value(value))
    try:
        return Comparison(restore_escapes(left), restore_escapes(method), weight,
                          right_column=restore_escapes(right),
                          options=tuple(sorted(opts.items())))
    except ValueError as exc:
        raise ValueError(f"--compare {given!r}: {exc}") from None


def _cli_value(text: str) -> Any:
    """An option value from the command line: ``true``/``false`` (any case) as booleans,
    an int, a float, comma-separated numbers as a tuple (``thresholds=0.9,0.8``), or the
    text itself (a date ``format=`` with commas stays text)."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if "," in text:
        parts = [_cli_value(p) for p in text.split(",")]
        if all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in parts):
            return tuple(parts)
    return text


def cli_methods_help() -> str:
    """One line per registered method with its options (for ``--compare`` help)."""
    lines = []
    for name, m in METHODS.items():
        opts = m.option_names()
        extra = f" (options: {', '.join(opts)})" if opts else ""
        lines.append(f"{name}{extra}")
    return "; ".join(lines)
