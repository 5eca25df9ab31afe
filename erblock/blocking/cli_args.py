"""Reading the arguments of a key's command-line form (``prefix:COLUMN:N``)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any


def cli_args(name: str, args: Sequence[str], lo: int, hi: int, usage: str) -> list[str]:
    if not lo <= len(args) <= hi or any(not a for a in args):
        hint = ("; a ':' inside a column name or a format is written with a backslash "
                "before it (%H\\:%M)" if len(args) > hi else "")
        raise ValueError(f"cannot read {':'.join([name, *args])!r}; expected {usage}{hint}")
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


#: separators of the command-line forms a column name may hold, written with a backslash
#: before them (``--key addr\:city``), and the private-use characters they stand as while
#: the form is split
_ESCAPED = {":": "\ue000", "+": "\ue001", "=": "\ue002", "\\": "\ue003"}


def hide_escapes(text: str) -> str:
    """``text`` with every backslash-escaped separator (``\\:``, ``\\+``, ``\\=``,
    ``\\\\``) as a character no split touches; :func:`restore_escapes` gives them back."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPED:
            out.append(_ESCAPED[text[i + 1]])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def restore_escapes(value: Any) -> Any:
    """``value`` (a string, or the dicts and lists of a spec's ``to_dict``) with the
    hidden separators back as the literal characters they escaped."""
    if isinstance(value, str):
        for char, hidden in _ESCAPED.items():
            value = value.replace(hidden, char)
        return value
    if isinstance(value, dict):
        return {k: restore_escapes(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(restore_escapes(v) for v in value)
    return value


def restore_in_message(message: str) -> str:
    """An error message about a form whose escapes were hidden, with them as the user
    wrote them (``addr\\:city``), also where the message shows a part by its ``repr``."""
    for char, hidden in _ESCAPED.items():
        message = message.replace(hidden, "\\" + char).replace(
            repr(hidden)[1:-1], "\\" + char)
    return message


def option_column(spec: Any, what: str) -> None:
    """Check that ``spec.column`` names a column (a non-empty string)."""
    if not isinstance(spec.column, str) or not spec.column:
        raise ValueError(f"{what}: column must be a column name, got {spec.column!r}")
