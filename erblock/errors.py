"""Errors erblock raises about the user's data, apart from Python's own.

:class:`InputTypeError` is a ``TypeError`` (Python callers catch what they always did),
raised when a column's data cannot be used as asked: numbers given to a text comparison,
lists where one value per record is needed, texts written like lists. The command line
shows it as a bad-input error (exit status 2, reworded for files and flags), while any
other ``TypeError`` stays a failure with its traceback: a bug, not the user's input.
"""

from __future__ import annotations

__all__ = ["InputTypeError"]


class InputTypeError(TypeError):
    """A column holds data of a type the requested key or comparison cannot read."""
