"""Pure planning (numpy, no Dask): BDM → match tasks on reduce tasks."""

from .bdm import BDM
from .packing import hashed, lpt, round_robin
from .plan import Plan
from .strategies import STRATEGIES, plan_basic, plan_blocksplit

__all__ = ["BDM", "STRATEGIES", "Plan", "hashed", "lpt", "plan_basic", "plan_blocksplit",
           "round_robin"]
