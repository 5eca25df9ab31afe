"""erblock: entity resolution with blocking on Dask, balanced by comparisons, not records.

The pipeline: blocking keys (``erblock.blocking``) → profile and plan
(``erblock.balancing``) → comparisons, scoring, clustering (``erblock.matchers``) → the
engine that runs it on Dask (``erblock.engine``) → pairs.

``import erblock`` is cheap: the public names below are loaded on first use, so Dask and
distributed are only imported when a run, a plan or a cluster needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

#: public name -> module that defines it
_EXPORTS = {
    "link": "erblock.api",
    "dedupe": "erblock.api",
    "plan": "erblock.api",
    "candidates": "erblock.api",
    "read_report": "erblock.api",
    "cluster": "erblock.matchers.clustering",
    "assign": "erblock.matchers.assignment",
    "evaluate": "erblock.matchers.evaluate",
    "Comparison": "erblock.matchers.comparisons",
    "comparison": "erblock.matchers.comparisons",
    "FellegiSunter": "erblock.matchers.scoring.fellegi_sunter",
    "load_model": "erblock.matchers.scoring",
    "explain_pair": "erblock.matchers.scoring",
    "plot_weights": "erblock.matchers.scoring",
    "ScoreThreshold": "erblock.matchers.scoring.supervised",
    "SupervisedModel": "erblock.matchers.scoring.supervised",
    "RunReport": "erblock.report",
    "composite": "erblock.blocking",
    "lower": "erblock.blocking",
    "metaphone": "erblock.blocking",
    "nysiis": "erblock.blocking",
    "prefix": "erblock.blocking",
    "soundex": "erblock.blocking",
    "token": "erblock.blocking",
    "tokens": "erblock.blocking",
    "qgrams": "erblock.blocking",
    "items": "erblock.blocking",
    "minhash": "erblock.blocking",
    "sorted_neighbourhood": "erblock.blocking",
}

__all__ = [
    "__version__",
    "Comparison",
    "FellegiSunter",
    "RunReport",
    "ScoreThreshold",
    "SupervisedModel",
    "assign",
    "candidates",
    "cluster",
    "comparison",
    "composite",
    "dedupe",
    "evaluate",
    "explain_pair",
    "link",
    "load_model",
    "items",
    "lower",
    "metaphone",
    "minhash",
    "nysiis",
    "plan",
    "plot_weights",
    "prefix",
    "qgrams",
    "read_report",
    "sorted_neighbourhood",
    "soundex",
    "token",
    "tokens",
]


#: subpackages a user reaches as attributes (``erblock.blocking.column(...)``,
#: ``erblock.datasets.generate(...)``), imported on first use like the names above
_SUBMODULES = frozenset({"attrs", "balancing", "blocking", "datasets", "engine", "matchers",
                         "report", "validate"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"erblock.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'erblock' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:  # the public names only: no ``Any`` or ``importlib`` on tab
    return sorted(set(__all__) | _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .api import candidates, dedupe, link, plan, read_report
    from .blocking import (
        composite,
        items,
        lower,
        metaphone,
        minhash,
        nysiis,
        prefix,
        qgrams,
        sorted_neighbourhood,
        soundex,
        token,
        tokens,
    )
    from .matchers.assignment import assign
    from .matchers.clustering import cluster
    from .matchers.comparisons import Comparison, comparison
    from .matchers.evaluate import evaluate
    from .matchers.scoring import explain_pair, load_model, plot_weights
    from .matchers.scoring.fellegi_sunter import FellegiSunter
    from .matchers.scoring.supervised import ScoreThreshold, SupervisedModel
    from .report import RunReport
