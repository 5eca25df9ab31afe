"""Reading the arguments of a key's command-line form (``prefix:COLUMN:N``)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any


def cli_args(name: str, args: Sequence[str], lo: int, hi: int, usage: str) -> list[str]:
    if not lo <= len(args) <= hi or any(not a for a in args):
        raise ValueError(f"cannot read {':'.join([name, *args])!r}; expected {usage}")
    return list(args)


def cli_int(text: str, usage: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer (expected {usage})") from None


def option_int(spec: Any, field: str, what: str, lo: int | None = None) -> None:
    """Check that ``spec.field`` is an integer (a numpy integer too, never a bool) of at
    least ``lo``, and store it as a Python int, so a key's repr and saved form are the same
    whatever integer type it was given (a saved model matches its keys by repr)."""
    v = getattr(spec, field)
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or (lo is not None
                                                                      and v < lo):
        bound = "" if lo is None else f" >= {lo}"
        raise ValueError(f"{what} must be an integer{bound}, got {v!r}")
    object.__setattr__(spec, field, int(v))


def option_float(spec: Any, field: str) -> None:
    """Store a number option given as a numpy number as the Python one (an integer as
    an int, any other real as a float); anything else is left for the caller to refuse."""
    v = getattr(spec, field)
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        object.__setattr__(spec, field, int(v) if isinstance(v, numbers.Integral) else float(v))
