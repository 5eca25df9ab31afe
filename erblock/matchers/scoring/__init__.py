"""Scoring models: the registry, and turning ``scoring=`` into a model.

``scoring="mean"`` scores by the weighted mean of the similarities (no model);
``"em"`` fits an unsupervised :class:`~.fellegi_sunter.FellegiSunter` during the run; any
:class:`~.base.ScoringModel` object (fitted or not) scores with it. :data:`MODELS` maps
every saved ``kind`` to its class, for :func:`load_model`. To add a model, subclass
:class:`~.base.ScoringModel` in a module and add it to ``_MODEL_CLASSES`` below.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...scalars import is_int
from .base import FitContext, FitRequest, ModelWarning, ScoringModel, read_json
from .charts import plot_waterfall, plot_weights
from .explain import contributions, summary, waterfall
from .fellegi_sunter import FellegiSunter
from .supervised import ScoreThreshold, SupervisedModel

_MODEL_CLASSES: tuple[type[ScoringModel], ...] = (FellegiSunter, SupervisedModel, ScoreThreshold)

#: every saved model kind -> its class
MODELS: dict[str, type[ScoringModel]] = {k: cls for cls in _MODEL_CLASSES for k in cls.kinds}

#: names accepted as ``scoring=``: None is the mean score, otherwise a model factory
NAMED: dict[str, type[ScoringModel] | None] = {"mean": None, "em": FellegiSunter}


def load_model(text_or_path: str | os.PathLike | Mapping[str, Any] | Any) -> ScoringModel:
    """Load any erblock scoring model saved with ``to_json`` (JSON text, a file path, or
    its dict, such as ``pairs.attrs["erblock_model"]``), or the model a scored pairs
    frame carries (``load_model(pairs)``)."""
    attrs = getattr(text_or_path, "attrs", None)
    if isinstance(attrs, Mapping) and not isinstance(text_or_path, Mapping):
        if "erblock_model" not in attrs:
            raise ValueError("load_model: this frame carries no model (it was not scored "
                             "with scoring='em' or a model)")
        text_or_path = attrs["erblock_model"]
    d = read_json(text_or_path)
    if not isinstance(d, Mapping):
        raise ValueError(f"load_model: expected a saved model (a JSON object), got "
                         f"{type(d).__name__}")
    cls = MODELS.get(str(d.get("kind")))
    if cls is None:
        raise ValueError(f"load_model: unknown model kind {d.get('kind')!r}; known: "
                         f"{sorted(MODELS)}")
    model: ScoringModel = cls.from_dict(d)
    return model


def as_scoring(scoring: Any, comparisons: Any, keys: Any = None) -> ScoringModel | None:
    """The model a run scores with (None: the mean score), bound to ``comparisons`` (and,
    for models that learn per key pass, the run's ``keys``)."""
    if isinstance(scoring, str):
        if scoring not in NAMED:
            close = difflib.get_close_matches(scoring, NAMED, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"scoring must be one of {', '.join(map(repr, NAMED))} or a "
                             f"model, got {scoring!r}{hint}")
        factory = NAMED[scoring]
        return None if factory is None else factory().bind(comparisons)
    if isinstance(scoring, Mapping):  # a saved model's dict: pairs.attrs["erblock_model"]
        scoring = load_model(scoring)
    if isinstance(scoring, ScoringModel):
        if getattr(scoring, "fitted_in_run_", False):
            warnings.warn(
                f"scoring: this {type(scoring).__name__} was fitted during an earlier run "
                f"(on {getattr(scoring, 'n_candidates_', 0):,} candidate pairs) and scores "
                f"this one as it is, without refitting. Pass a new {type(scoring).__name__}"
                "() to fit on this run's data, or erblock.load_model(model.to_dict()) to "
                "reuse the fit on purpose (no warning)", ModelWarning, stacklevel=5)
        bound = scoring.bind(comparisons, keys)
        if not bound.fitted and bound.fit_request() is None:
            raise ValueError(f"scoring: a {type(scoring).__name__} must be fitted first (it "
                             "cannot fit during a run), e.g. model.fit(pairs, truth)")
        return bound
    raise TypeError(
        f"scoring must be {', '.join(map(repr, NAMED))} or a scoring model (FellegiSunter, "
        "a fitted SupervisedModel, ScoreThreshold, erblock.load_model('model.json'), or "
        "a saved model's dict such as pairs.attrs['erblock_model']), "
        f"got {type(scoring).__name__}"
    )


def explain_pair(pairs: pd.DataFrame, i: int = 0, model: Any = None,
                 path: Any = None) -> pd.DataFrame:
    """The waterfall of pair ``i`` (by position) of scored ``pairs``: the model is the one
    in ``pairs.attrs["erblock_model"]`` unless given; with ``path`` it is drawn as a PNG.

    ``pairs`` may be the Dask frame that ``output=`` returns (or the written pairs read
    back): its partitions' lengths are computed, then the one holding pair ``i``. Such a
    frame carries no model, so pass
    ``model=erblock.load_model("<output>/_erblock_model.json")``."""
    if not is_int(i):
        n = f", 0 to {len(pairs) - 1}" if isinstance(pairs, pd.DataFrame) else ""
        raise TypeError(f"explain_pair: i must be the pair's position (an int{n}), got "
                        f"{type(i).__name__} {i!r}; the position of ids a, b: "
                        "int(np.flatnonzero((pairs.left_id == a) & (pairs.right_id == b))[0])")
    if not isinstance(pairs, pd.DataFrame):
        if not (hasattr(pairs, "npartitions") and hasattr(pairs, "get_partition")):
            raise TypeError("explain_pair: pairs must be a pandas or Dask DataFrame, got "
                            f"{type(pairs).__name__}")
        if model is None:
            raise ValueError(
                "explain_pair: a Dask frame of pairs (output='dir' returns one) carries no "
                "model; pass model=erblock.load_model('dir/_erblock_model.json'), the model "
                "the run wrote beside its pairs")
        return explain_pair(_row_frame(pairs, i), 0, model, path)
    carried = pairs.attrs.get("erblock_model")
    # the pairs' match_weight is the model's unless they carry another one (a Dask
    # output read back carries none: the model given is the run's, as documented)
    own = model is None or carried is None or (isinstance(model, Mapping)
                                               and model == carried)
    if model is None:
        if carried is None:
            raise ValueError("explain_pair: these pairs carry no model; pass model=")
        model = load_model(carried)
    elif isinstance(model, Mapping):
        model = load_model(model)
    if not isinstance(model, FellegiSunter):
        raise TypeError(f"explain_pair: a waterfall explains a Fellegi-Sunter model's weights; "
                        f"these pairs were scored by a {type(model).__name__}")
    own = own or carried == model.to_dict()
    if not 0 <= i < len(pairs):
        raise IndexError(f"explain_pair: pair {i} of {len(pairs)}")
    table = waterfall(model, pairs.iloc[int(i)], scored=own)
    if path is not None:
        ids = [pairs[c].iloc[i] if c in pairs.columns else None
               for c in ("left_id", "right_id")]  # a row of mixed dtypes makes them floats
        plot_waterfall(table, path, title=f"{ids[0]} ~ {ids[1]}")
    return table


def _row_frame(pairs: Any, i: int) -> pd.DataFrame:
    """Row ``i`` (by position) of a Dask frame as a one-row pandas frame: every
    partition's length, then the partition that holds it. (The lengths are of the whole
    frame: Dask may read a one-column projection of parquet parts in fewer, fused
    partitions, whose lengths would not be the frame's.)"""
    lengths = np.asarray(pairs.map_partitions(len).compute(), dtype=np.int64)
    total = int(lengths.sum())
    if not 0 <= i < total:
        raise IndexError(f"explain_pair: pair {i} of {total}")
    ends = np.cumsum(lengths)
    k = int(np.searchsorted(ends, i, side="right"))
    part = pairs.get_partition(k).compute()
    return part.iloc[[i - int(ends[k] - lengths[k])]]


__all__ = ["MODELS", "NAMED", "FellegiSunter", "FitContext", "FitRequest", "ModelWarning",
           "ScoreThreshold", "ScoringModel", "SupervisedModel", "as_scoring", "contributions",
           "explain_pair", "load_model", "plot_waterfall", "plot_weights", "summary",
           "waterfall"]
