"""erblock: entity resolution with blocking on Dask, balanced by comparisons, not records.

The pipeline: blocking keys (``erblock.blocking``) → profile (BDM) → plan
(``erblock.balancing``) → route and compare on Dask (``erblock.engine``,
``erblock.matchers``) → pairs.
"""

from .api import dedupe, link, plan
from .blocking import composite, lower, metaphone, nysiis, prefix, soundex, token
from .matchers.comparisons import Comparison, comparison
from .report import RunReport

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "RunReport",
    "comparison",
    "composite",
    "dedupe",
    "link",
    "lower",
    "metaphone",
    "nysiis",
    "plan",
    "prefix",
    "soundex",
    "token",
]
