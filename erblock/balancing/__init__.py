"""Pure planning (numpy, no Dask): profile (BDM or sketch) → match tasks on reduce tasks."""

from .bdm import BDM
from .packing import hashed, lpt, round_robin
from .plan import Plan
from .strategies import STRATEGIES, get_strategy, plan_basic, plan_blocksplit, strategy_names

__all__ = ["BDM", "STRATEGIES", "Plan", "get_strategy", "hashed", "lpt", "plan_basic",
           "plan_blocksplit", "round_robin", "strategy_names"]
