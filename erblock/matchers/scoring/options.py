"""Validation of the Fellegi-Sunter model's options (names the argument and what it expects)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..levels import check_thresholds

__all__ = ["check_options"]


def check_options(levels: Any, tf_adjust: Any, recall: Any, u_pairs: Any, max_iter: Any
                  ) -> tuple[str, ...] | bool | None:
    """Raise on a bad option; return ``tf_adjust`` normalised (a str becomes a 1-tuple)."""
    if levels is not None and not isinstance(levels, Mapping):
        raise TypeError(f"levels must be a dict {{comparison: thresholds}}, got {levels!r}")
    for k, v in (levels or {}).items():
        check_thresholds(k, v)
    if isinstance(tf_adjust, str):
        tf_adjust = (tf_adjust,)
    if not (tf_adjust is None or tf_adjust is False or (
            isinstance(tf_adjust, Sequence) and all(isinstance(t, str) for t in tf_adjust))):
        raise TypeError("tf_adjust must be comparison names or columns, None (the methods' "
                        f"defaults) or False, got {tf_adjust!r}")
    if not isinstance(recall, (int, float)) or isinstance(recall, bool) or \
            not 0.0 < float(recall) <= 1.0:
        raise ValueError(f"recall must be in (0, 1], got {recall!r}")
    if not isinstance(u_pairs, int) or isinstance(u_pairs, bool) or u_pairs < 1:
        raise ValueError(f"u_pairs must be an integer >= 1, got {u_pairs!r}")
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    return tf_adjust if tf_adjust is None or tf_adjust is False else tuple(tf_adjust)
