"""The registry of balancing strategies: one module per strategy, one line each here.

``STRATEGIES`` maps a name to its :class:`~.base.Strategy`; the API, the command line,
``auto``, the memory fit, the docs and the conformance tests all take their lists from
it. To add a strategy, write a module with a ``STRATEGY`` object (see
``docs/architecture.md``) and add it to the tuple below.
"""

from __future__ import annotations

from . import basic, blocksplit, cellblock, cellrange, pairrange
from .base import NoOptions, Strategy
from .basic import plan_basic
from .blocksplit import BlockSplitOptions, plan_blocksplit
from .cellblock import plan_cellblock
from .cellrange import plan_cellrange
from .cells import CellOptions
from .pairrange import plan_pairrange

STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        basic.STRATEGY,
        blocksplit.STRATEGY,
        pairrange.STRATEGY,
        cellblock.STRATEGY,
        cellrange.STRATEGY,
    )
}

AUTO = "auto"  #: the meta-strategy: the lowest predicted makespan among the BDM strategies


def strategy_names(with_auto: bool = True) -> tuple[str, ...]:
    """Names a user can pass as ``strategy=`` (``auto`` first)."""
    return ((AUTO,) if with_auto else ()) + tuple(STRATEGIES)


def get_strategy(name: str) -> Strategy:
    """The registered strategy ``name`` (a ValueError naming the choices otherwise)."""
    try:
        return STRATEGIES[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(str(name), strategy_names(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"strategy must be one of {', '.join(strategy_names())}, "
                         f"got {name!r}{hint}") from None


__all__ = [
    "AUTO", "STRATEGIES", "BlockSplitOptions", "CellOptions", "NoOptions", "Strategy",
    "get_strategy", "plan_basic", "plan_blocksplit", "plan_cellblock", "plan_cellrange",
    "plan_pairrange", "strategy_names",
]
