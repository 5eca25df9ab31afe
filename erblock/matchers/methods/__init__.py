"""The registry of comparison kinds: one module per family, one line each here.

``METHODS`` maps a method name to its :class:`~.base.Method` class; ``compare=``, the
command line, the default Fellegi-Sunter levels, the docs and the conformance tests take
their lists from it. To add a kind, write a ``Method`` subclass (see
``docs/architecture.md``) and add it below.
"""

from __future__ import annotations

from .base import Method, Prepared
from .contact import EmailMethod, PhoneMethod, PostcodeMethod
from .dates import DateMethod
from .exact import ExactMethod
from .names import NameMethod
from .numeric import NumericMethod
from .strings import (
    DamerauLevenshteinMethod,
    IndelMethod,
    JaroMethod,
    JaroWinklerMethod,
    LevenshteinMethod,
    TokenSetMethod,
    TokenSortMethod,
)
from .text import TextMethod

METHODS: dict[str, type[Method]] = {
    m.name: m
    for m in (
        ExactMethod,
        JaroWinklerMethod,
        JaroMethod,
        LevenshteinMethod,
        DamerauLevenshteinMethod,
        IndelMethod,
        TokenSetMethod,
        TokenSortMethod,
        NumericMethod,
        NameMethod,
        DateMethod,
        PostcodeMethod,
        EmailMethod,
        PhoneMethod,
        TextMethod,
    )
}


def get_method(name: str, column: str = "?") -> type[Method]:
    """The registered method ``name`` (a ValueError naming the choices otherwise)."""
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        import difflib

        close = difflib.get_close_matches(str(name), METHODS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"compare: unknown method {name!r} for column {column!r}; "
            f"expected one of {', '.join(METHODS)}{hint}"
        ) from None


__all__ = ["METHODS", "Method", "Prepared", "get_method"]
