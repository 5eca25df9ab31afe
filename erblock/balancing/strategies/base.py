"""What a strategy is: a name, the profile it plans on, its options and its planner."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..plan import Plan

#: profiles a strategy can plan on: the block distribution matrix or a sketch of it
PROFILES = ("bdm", "sketch")


@dataclass(frozen=True)
class NoOptions:
    """Options of a strategy that has none."""

    def to_dict(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NoOptions:
        if d:
            raise ValueError(f"this strategy takes no options, got {sorted(d)}")
        return cls()


@dataclass(frozen=True)
class Strategy:
    """A registered balancing strategy.

    ``plan(profile, r, options)`` returns the :class:`~erblock.balancing.plan.Plan` for
    ``r`` reduce tasks from a profile of kind ``profile`` (``"bdm"`` or ``"sketch"``; a
    sketch strategy also accepts a BDM and sketches it). ``options`` is the frozen
    dataclass of its options (``from_dict``/``to_dict``). ``variants`` gives the labelled
    plans ``auto`` weighs for this strategy (default: the plan with default options);
    ``auto`` only considers strategies that plan on the BDM. ``splits_blocks`` says that
    more reduce tasks make its largest task smaller, so a memory budget can be met by
    planning more tasks.
    """

    name: str
    summary: str
    profile: str
    plan: Callable[[Any, int, Any], Plan]
    options: type[Any] = NoOptions
    splits_blocks: bool = False
    variants: Callable[[Any, int], dict[str, Plan]] | None = None

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"strategy {self.name!r}: profile must be one of {PROFILES}")

    @property
    def in_auto(self) -> bool:
        """Whether ``auto`` weighs this strategy (it plans on the BDM ``auto`` profiles)."""
        return self.profile == "bdm"

    def make(self, profile: Any, r: int, options: Any = None) -> Plan:
        """Plan ``profile`` on ``r`` reduce tasks (``options``: a dict or the options spec)."""
        return self.plan(profile, r, self.parse_options(options))

    def parse_options(self, options: Any) -> Any:
        if options is None:
            return self.options()
        if isinstance(options, self.options):
            return options
        if isinstance(options, Mapping):
            return self.options.from_dict(options)
        raise TypeError(f"strategy {self.name!r}: options must be a dict or "
                        f"{self.options.__name__}, got {type(options).__name__}")

    def candidates(self, bdm: Any, r: int) -> dict[str, Plan]:
        """The plans ``auto`` weighs for this strategy, by label."""
        if self.variants is not None:
            return self.variants(bdm, r)
        return {self.name: self.make(bdm, r)}


def options_from_dict(cls: type, d: Mapping[str, Any], strategy: str) -> Any:
    """Build an options dataclass from a dict, naming unknown keys."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise ValueError(f"strategy {strategy!r}: unknown option(s) {sorted(unknown)}; "
                         f"valid options: {sorted(names)}")
    return cls(**dict(d))
