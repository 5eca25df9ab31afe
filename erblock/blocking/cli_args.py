"""Reading the arguments of a key's command-line form (``prefix:COLUMN:N``)."""

from __future__ import annotations

from collections.abc import Sequence


def cli_args(name: str, args: Sequence[str], lo: int, hi: int, usage: str) -> list[str]:
    if not lo <= len(args) <= hi or any(not a for a in args):
        raise ValueError(f"cannot read {':'.join([name, *args])!r}; expected {usage}")
    return list(args)


def cli_int(text: str, usage: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer (expected {usage})") from None
