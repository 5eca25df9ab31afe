"""What counts as a number in erblock's arguments: Python's and NumPy's alike.

A value read from a frame is a NumPy scalar (``pairs.score.iloc[0]`` is ``np.float32``, a
count from ``len`` of an array or ``.sum()`` is ``np.int64``), and passing it on as an
argument must work as the Python number would. Booleans are not numbers here: ``True`` as
a count or a threshold is a mistake. Checks that accept these convert them to Python's
``int``/``float``, so specs and reports stay plain (JSON has no ``np.float32``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_python", "is_int", "is_number"]


def is_int(x: Any) -> bool:
    """Whether ``x`` is an integer, Python's or NumPy's (not a bool)."""
    return (isinstance(x, (int, np.integer))
            and not isinstance(x, (bool, np.bool_, np.timedelta64)))


def is_number(x: Any) -> bool:
    """Whether ``x`` is a real number, Python's or NumPy's (not a bool)."""
    return (isinstance(x, (int, float, np.integer, np.floating))
            and not isinstance(x, (bool, np.bool_, np.timedelta64)))


def as_python(x: Any) -> Any:
    """``x`` as Python's own scalar when it is NumPy's (``np.float32(0.5)`` is ``0.5``).

    Anything else is returned as it is, so a checked argument can be stored through this
    whatever its type.
    """
    if isinstance(x, np.floating):  # float(), not .item(): np.longdouble stays NumPy's
        return float(x)
    return x.item() if isinstance(x, np.generic) else x
