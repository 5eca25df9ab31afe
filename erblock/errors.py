"""Errors erblock raises about the user's data, apart from Python's own.

:class:`InputTypeError` is a ``TypeError`` (Python callers catch what they always did),
raised when a column's data cannot be used as asked: numbers given to a text comparison,
lists where one value per record is needed, texts written like lists. The command line
rewords it for files and flags (the input file instead of ``df``, ``--compare`` advice
instead of ``.astype``), as it does the API's ``ValueError`` messages.
"""

from __future__ import annotations

__all__ = ["InputTypeError"]


class InputTypeError(TypeError):
    """A column holds data of a type the requested key or comparison cannot read."""
