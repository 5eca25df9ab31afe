"""What a run attaches to its pairs frame (``pairs.attrs``): read-only, shared dicts.

pandas deep-copies a frame's ``attrs`` into every frame derived from it (each filter,
sort or column pick), and a fitted model with term-frequency tables runs to megabytes:
as plain dicts, the report and model of historical_50k made a filter of its 450k pairs
(``pairs[pairs.match_probability >= 0.5]``) take 21 ms instead of 7. A
:class:`SharedDict` is read-only, so it can be shared instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SharedDict", "plain"]


class SharedDict(dict):  # type: ignore[type-arg]
    """A read-only dict that :func:`copy.deepcopy` returns as it is (module doc).

    Nested dicts are :class:`SharedDict` too; :func:`plain` gives an editable copy. It
    stays a ``dict``: JSON, pickling and ``isinstance`` checks work."""

    __slots__ = ()

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> SharedDict:
        """``value`` with every nested mapping made a :class:`SharedDict` (lists and
        tuples are walked; lists stay lists)."""
        out: SharedDict = _rebuilt(value, cls)
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickle rebuilds it without __setitem__
        return (SharedDict, (dict(self),))

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("this dict is read-only: a run's report and model in pairs.attrs "
                        "are shared by every frame pandas derives from the pairs; edit a "
                        "copy: erblock.attrs.plain(d) (from erblock.attrs import plain)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only


def _rebuilt(value: Any, mapping: Any) -> Any:
    """``value`` with every mapping in it made anew by ``mapping`` and every plain list or
    tuple rebuilt (not a named tuple: it is kept whole); other values shared."""
    if isinstance(value, Mapping):
        return mapping({k: _rebuilt(v, mapping) for k, v in value.items()})
    if type(value) in (list, tuple):
        return type(value)(_rebuilt(v, mapping) for v in value)
    return value


def plain(value: Any) -> Any:
    """An editable copy of ``value``: every mapping in it a new ``dict``, every list or
    tuple a new one (other values shared)."""
    return _rebuilt(value, dict)
