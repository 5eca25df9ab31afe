"""Validation of the Fellegi-Sunter model's options (names the argument and what it
expects), and of what a fitted model is bound to."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ...scalars import is_int, is_number
from ..comparisons import Comparison
from ..levels import LevelSpec, check_thresholds

__all__ = ["canonical_key", "check_levels", "check_options", "check_same_comparisons",
           "keys_differ_message"]

#: fewer random pairs estimate no u (a sample of a few records draws none at all)
MIN_U_PAIRS = 1000


def check_levels(levels: Any) -> dict[Any, tuple[float, ...]]:
    """``levels`` as plain data: each value a tuple of ascending Python floats (one number
    becomes a 1-tuple, ``np.float32`` a float), so the model's repr and JSON see no NumPy."""
    if levels is not None and not isinstance(levels, Mapping):
        raise TypeError(f"levels must be a dict {{comparison: thresholds}}, got {levels!r}")
    return {k: check_thresholds(k, v) for k, v in (levels or {}).items()}


def check_options(levels: Any, tf_adjust: Any, recall: Any, u_pairs: Any, max_iter: Any,
                  tol: Any = 1e-4, seed: Any = 0, detect: Any = True
                  ) -> tuple[str, ...] | Literal[False] | None:
    """Raise on a bad option; return ``tf_adjust`` normalised (a str becomes a 1-tuple)."""
    check_levels(levels)
    if isinstance(tf_adjust, str):
        tf_adjust = (tf_adjust,)
    if not (tf_adjust is None or tf_adjust is False or (
            isinstance(tf_adjust, Sequence) and all(isinstance(t, str) for t in tf_adjust))):
        raise TypeError("tf_adjust must be comparison names or columns, None (the methods' "
                        f"defaults) or False, got {tf_adjust!r}")
    if not is_number(recall) or not 0.0 < float(recall) <= 1.0:
        raise ValueError(f"recall must be in (0, 1], got {recall!r}")
    if not is_int(u_pairs) or u_pairs < MIN_U_PAIRS:
        raise ValueError(f"u_pairs must be an integer >= {MIN_U_PAIRS:,} (random pairs behind "
                         f"u; the default is 3,000,000), got {u_pairs!r}")
    if not is_number(tol) or not 0.0 < float(tol) < 1.0:
        raise ValueError(f"tol must be a number in (0, 1) (EM's relative change at "
                         f"convergence, e.g. 1e-4), got {tol!r}")
    if not is_int(seed) or not -2**63 <= int(seed) < 2**63:
        raise ValueError(f"seed must be an integer in the int64 range [-2**63, 2**63), "
                         f"got {seed!r}")
    if not isinstance(detect, (bool, np.bool_)):
        raise ValueError(f"detect must be True or False, got {detect!r}")
    if not is_int(max_iter) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if tf_adjust is None or tf_adjust is False:
        return tf_adjust
    return tuple(tf_adjust)


def _spec(c: Comparison) -> dict[str, Any]:
    """What a fitted model's levels depend on: columns, method and the options that differ
    from the method's defaults, as the method reads them (thresholds in any order, or
    ``tf=True`` written out for ``name``, are the same comparison)."""
    d = c.to_dict()
    d.pop("weight", None)  # the mean score's weight: no part of a Fellegi-Sunter model
    d["options"] = c.kernel.options()
    return d


def check_same_comparisons(given: Sequence[Comparison], fitted: Sequence[Comparison],
                           fitted_names: Sequence[str]) -> None:
    """Raise unless a fitted model's comparisons are ``given`` (columns, method, options:
    its levels, m and u mean nothing for another comparison of the same name)."""
    names = [c.name for c in given]
    if names != list(fitted_names) and sorted(names) == sorted(fitted_names):
        raise ValueError(f"scoring: the model was fitted on comparisons {list(fitted_names)}, "
                         f"in that order; this run gives them as {names}: give compare= in "
                         "the model's order")
    if names != list(fitted_names):
        raise ValueError(f"scoring: the model was fitted on comparisons {list(fitted_names)}, "
                         f"but this run compares {names}; use the same compare= as when "
                         "fitting")
    for g, f in zip(given, fitted):  # models saved before comparisons were kept have none
        if _spec(g) != _spec(f):
            raise ValueError(f"scoring: comparison {g.name!r} was fitted as {_spec(f)}, but "
                             f"this run compares {_spec(g)}; use the same compare= as when "
                             "fitting")


def keys_differ_message(m_source: Sequence[str], specs: Sequence[LevelSpec]) -> str:
    """The warning for a fitted model bound to a run whose key passes differ."""
    msg = ("scoring: the run's blocking keys differ from those the model was fitted on; "
           "pairs are scored with the prior of a random pair, not with what each key pass "
           "learnt")
    among = [s.name for s, src in zip(specs, m_source)
             if src.startswith("em among candidates")]
    if among:
        msg += (f"; the m of {', '.join(among)} was estimated only among candidates of keys "
                "that select on it and is used against the random-pair u")
    return msg


_NUMPY_NUMBER = re.compile(r"np\.(?:u?int|float)\d*\(([^()]*)\)")


def canonical_key(text: str) -> str:
    """A key's repr as keys are written now: numpy numbers as Python ones (key options
    given as ``np.int64(4)`` are stored as ``4``), so a model saved before matches."""
    return _NUMPY_NUMBER.sub(r"\1", text)
