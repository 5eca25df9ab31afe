"""erblock: entity resolution with blocking on Dask, balanced by comparisons, not records.

The pipeline: blocking keys (``erblock.blocking``) → profile (BDM) → plan
(``erblock.balancing``) → route and compare on Dask (``erblock.engine``,
``erblock.matchers``) → pairs.
"""

from .api import dedupe, link, plan
from .blocking import composite, lower, metaphone, nysiis, prefix, soundex, token
from .matchers.clustering import cluster
from .matchers.comparisons import Comparison, comparison
from .matchers.evaluate import evaluate
from .matchers.scoring import FellegiSunter, load_model
from .matchers.supervised import ScoreThreshold, SupervisedModel
from .report import RunReport

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "FellegiSunter",
    "RunReport",
    "ScoreThreshold",
    "SupervisedModel",
    "cluster",
    "comparison",
    "composite",
    "dedupe",
    "evaluate",
    "link",
    "load_model",
    "lower",
    "metaphone",
    "nysiis",
    "plan",
    "prefix",
    "soundex",
    "token",
]
