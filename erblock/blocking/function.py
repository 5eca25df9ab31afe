"""Key functions: a user's ``DataFrame -> Series`` as a key spec (one value per record, or
a list per record with ``multi_valued=True``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .keys import KeySpec, _names
from .text import as_key_strings, explode_values, has_nested


@dataclass(frozen=True)
class FunctionKey(KeySpec):
    """A user function ``DataFrame -> Series`` (one value per record, same index).

    ``columns`` lists the columns the function reads (all columns when empty), so the
    engine can project the input before blocking.
    """

    func: Callable[[pd.DataFrame], Any]
    needs: tuple[str, ...] = ()
    derived_from: tuple[str, ...] = ()
    multi_valued: bool = False  #: the function gives a list of keys per record
    kind: ClassVar[str] = "function"

    def __post_init__(self) -> None:  # a single name is one column, not its letters
        object.__setattr__(self, "needs", _names(self.needs))
        object.__setattr__(self, "derived_from", _names(self.derived_from))

    @property
    def columns(self) -> tuple[str, ...]:
        return self.needs

    @property
    def selects(self) -> tuple[str, ...]:
        return (*self.needs, *self.derived_from)

    @property
    def multi(self) -> bool:
        return self.multi_valued

    def items(self, df: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
        if not self.multi_valued:
            return super().items(df)
        return explode_values(self._call(df), self._name)

    @property
    def _name(self) -> str:
        return str(getattr(self.func, "__name__", repr(self.func)))

    def __repr__(self) -> str:
        # no memory address: a model saves its keys' reprs and compares them with a later
        # run's, in another process (a lambda is only as distinct as its module and name)
        f = self.func
        name = f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', self._name)}"
        return (f"FunctionKey(func={name}, needs={self.needs!r}, "
                f"derived_from={self.derived_from!r}, multi_valued={self.multi_valued!r})")

    def values(self, df: pd.DataFrame) -> pd.Series:
        if self.multi_valued:
            raise TypeError(f"key function {self._name!r} is multi-valued: use items()")
        series = self._call(df)
        if has_nested(series):
            raise TypeError(
                f"key function {self._name!r} returned lists; a function that gives several "
                "keys per record is a multi-valued key: erblock.blocking.items(func)")
        return as_key_strings(series)

    def _call(self, df: pd.DataFrame) -> pd.Series:
        """The function's values, one per record, aligned with ``df``'s index."""
        name = self._name
        try:
            out = self.func(df)
        except Exception as exc:
            raise ValueError(f"key function {name!r} raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(out, (pd.Series, np.ndarray, list)):
            raise TypeError(
                f"key function {name!r} must return a Series (one value per record), "
                f"got {type(out).__name__}"
            )
        if len(out) != len(df):
            raise ValueError(
                f"key function {name!r} returned {len(out)} values for {len(df)} records; "
                "it must return one value per record"
            )
        if isinstance(out, pd.Series) and not out.index.equals(df.index) and _same_labels(
                out.index, df.index):
            out = out.reindex(df.index)  # same records in another order: align by label
        series = out if isinstance(out, pd.Series) else pd.Series(out)
        # otherwise one value per record by position (e.g. a Series after reset_index)
        return pd.Series(series.to_numpy(), index=df.index)

    def to_dict(self) -> dict[str, Any]:
        raise TypeError("a function key cannot be written to a dict; use a named key spec")


def _same_labels(a: pd.Index, b: pd.Index) -> bool:
    """True when ``a`` and ``b`` hold the same unique labels (in any order)."""
    return a.is_unique and b.is_unique and len(a) == len(b) and len(b.difference(a)) == 0
