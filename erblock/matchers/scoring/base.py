"""The scoring-model protocol the engine calls, whatever the model.

A model turns the similarity columns of candidate pairs into ``match_weight`` and
``match_probability`` (:meth:`ScoringModel.apply`). A model that is not fitted yet can ask
the engine, through a :class:`FitRequest`, for what it needs to fit during the run, in two
phases, without the pairs ever travelling to the client:

1. every reduce task compares its pairs, keeps them in worker memory and sends
   :meth:`ScoringModel.summarize` of them (small: e.g. a histogram of level vectors);
   the engine also compares ``random_pairs`` random record pairs and sends
   :meth:`ScoringModel.summarize_random` of their similarities, and counts the values of
   the ``value_counts`` comparisons' columns;
2. the client calls :meth:`ScoringModel.fit_summaries`, broadcasts the fitted model, and
   each kept task is scored on its worker.

Pairs carry, while the model sees them, the left record's value of each comparison in
the model's ``pair_values`` (``value_column(name)``, dropped before output) and, when the
model ``needs_pass``, the key pass that found the pair (:data:`PASS_COLUMN`,
``match_key``, kept in the output). Models save and load as JSON (``to_dict``/``from_dict``,
:func:`erblock.load_model`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...attrs import plain
from ..comparisons import PASS_COLUMN as PASS_COLUMN  # the pairs frame's own columns
from ..comparisons import RESERVED_COLUMNS as RESERVED_COLUMNS

MODEL_ATTR = "erblock_model"  #: ``pairs.attrs`` key of the model that scored the pairs
_VALUE_PREFIX = "_erb_pair_value_"


class ModelWarning(UserWarning):
    """A scoring model's fit that deserves a look (no convergence, λ at a boundary, a
    comparison that could not be trained); the same text is in the model's report."""


def value_column(comparison_name: str) -> str:
    """Column holding the left record's value of a comparison (while a model sees pairs)."""
    return f"{_VALUE_PREFIX}{comparison_name}"


def model_columns(pairs: pd.DataFrame) -> list[str]:
    """The internal columns a model asked for, present in ``pairs``."""
    return [c for c in pairs.columns if c.startswith(_VALUE_PREFIX)]


@dataclass(frozen=True)
class FitRequest:
    """What an unfitted model needs from a run to fit (see the module doc)."""

    random_pairs: int = 0
    seed: int = 0
    value_counts: tuple[str, ...] = ()


@dataclass(frozen=True)
class FitContext:
    """What the run tells a model when it fits: the mode, the key passes (their
    ``columns``), record counts and how many random pairs were compared.

    ``keys`` are the passes as training sees them: a ready-made key column found cut
    from compared columns carries them in ``derived_from``. ``run_keys`` are the passes
    as the run was given them (``keys`` when empty): what a later run must repeat for the
    model's per-pass sessions to apply.
    """

    link: bool
    keys: tuple[Any, ...]
    records: Mapping[str, int] = field(default_factory=dict)
    random_pairs: int = 0
    run_keys: tuple[Any, ...] = ()


class ScoringModel:
    """Base of erblock's scoring models (see the module doc).

    ``kinds`` are the ``kind`` values its saved form may carry. ``decision`` is the column
    a run's ``threshold`` applies to; a model that decides on ``"score"`` (the mean
    similarity) adds nothing and its ``default_threshold`` becomes the run's threshold.
    """

    kinds: ClassVar[tuple[str, ...]] = ()
    decision: ClassVar[str] = "match_probability"

    @property
    def fitted(self) -> bool:  # pragma: no cover - every model defines it
        raise NotImplementedError

    @property
    def needs_pass(self) -> bool:
        """Whether pairs must carry the key pass that found them (fit and scoring)."""
        return False

    @property
    def pair_values(self) -> tuple[str, ...]:
        """Comparisons whose left value every pair must carry when this model sees it."""
        return ()

    @property
    def default_threshold(self) -> float | None:
        """The threshold a run applies when none is given (None: keep every pair)."""
        return None

    def bind(self, compare: Any, keys: Sequence[Any] | None = None) -> ScoringModel:
        """This model ready for comparisons ``compare`` and the run's key passes ``keys``
        (checked against a fitted model)."""
        return self

    # -- fitting during a run (unfitted models) --------------------------------------------

    def fit_request(self) -> FitRequest | None:
        """What fitting during a run needs; None when the model cannot fit during a run."""
        return None

    def summarize(self, pairs: pd.DataFrame) -> Any:
        """Worker side, phase 1: a small summary of one reduce task's pairs."""
        raise NotImplementedError(f"{type(self).__name__} does not fit during a run")

    def summarize_random(self, sims: pd.DataFrame, first: np.ndarray | None = None) -> Any:
        """Worker side, phase 1: a summary of random pairs' similarity columns (``first``:
        the first key pass each pair agrees on, −1 for none, with several passes)."""
        raise NotImplementedError(f"{type(self).__name__} does not fit during a run")

    def fit_summaries(self, summaries: Sequence[Any], random: Sequence[Any],
                      value_counts: Mapping[str, pd.Series], context: FitContext) -> None:
        """Client side: fit from the phase-1 summaries (in place)."""
        raise NotImplementedError(f"{type(self).__name__} does not fit during a run")

    # -- scoring ----------------------------------------------------------------------------

    def apply(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """``pairs`` with ``match_weight`` and ``match_probability`` (a new frame)."""
        raise NotImplementedError  # pragma: no cover - every model defines it

    def examples(self, pairs: pd.DataFrame, k: int = 3) -> list[dict[str, Any]]:
        """Worker side: a few scored pairs worth showing in the report (none by default)."""
        return []

    def report(self) -> dict[str, Any]:
        """A small JSON-ready summary for the run report."""
        return {"kind": self.to_dict().get("kind")}

    # -- persistence ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - every model defines it
        raise NotImplementedError

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Any:  # pragma: no cover - defined per model
        raise NotImplementedError

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The model as JSON text (also written to ``path`` when given)."""
        text = json.dumps(self.to_dict())
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    @classmethod
    def from_json(cls, text_or_path: str | os.PathLike | Mapping[str, Any]) -> Any:
        """Load a model from JSON text, a file written by :meth:`to_json`, or its dict."""
        return cls.from_dict(read_json(text_or_path))


def probability(weight: np.ndarray) -> np.ndarray:
    """match_probability of a match weight (log2 odds)."""
    return 1.0 / (1.0 + np.exp2(-np.clip(weight, -1000, 1000)))


def read_json(text_or_path: str | os.PathLike | Mapping[str, Any]) -> dict[str, Any]:
    """A model's dict from JSON text, a file path, or the dict itself."""
    if isinstance(text_or_path, Mapping):  # already parsed, e.g. pairs.attrs["erblock_model"]
        return plain(text_or_path)  # the model's own, editable (attrs' dicts are read-only)
    text = source = os.fspath(text_or_path)
    if not text.lstrip().startswith("{"):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    else:
        source = "the JSON text"
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:  # name the file: the position alone does not
        raise ValueError(f"load_model: {source} is not a saved model's JSON ({e}); save "
                         "one with model.to_json() or erblock link --save-model") from e
