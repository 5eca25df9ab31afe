"""Checks of what a :class:`~.supervised.SupervisedModel` is given: its estimator's
parameters, the pairs and labels it is fitted on, the features it reads, and a saved
model's fields. Each error names the argument; a mistake fails here, not as a wrong
probability or inside a worker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...scalars import as_python

#: scikit-learn parameters erblock's own tree walk cannot reproduce: it assumes log loss
#: and a constant start (the training log-odds)
UNSUPPORTED = {"loss": ("log_loss",), "init": (None,)}


def check_params(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The estimator's parameters as plain Python (NumPy scalars saved as JSON numbers),
    refusing those whose model erblock would evaluate wrongly."""
    out = {k: as_python(v) for k, v in params.items()}
    if kind == "gradient_boosting":
        for name, allowed in UNSUPPORTED.items():
            if name in out and out[name] not in allowed:
                raise ValueError(f"SupervisedModel: {name}={out[name]!r} is not supported "
                                 f"(erblock evaluates saved trees with log loss and a "
                                 f"constant start); leave {name} at its default")
    return out


def check_pairs_frame(pairs: Any, what: str) -> None:
    """``pairs`` must be a pandas frame (a Dask frame is computed first)."""
    if isinstance(pairs, pd.DataFrame):
        return
    if hasattr(pairs, "compute") and hasattr(pairs, "columns"):
        raise TypeError(f"{what}: pairs is a Dask DataFrame (output= returns one); pass "
                        "pairs.compute(), or read the pairs you label with pandas")
    raise TypeError(f"{what}: pairs must be a pandas DataFrame, got {type(pairs).__name__}")


def as_labels(labels: Any, pairs: pd.DataFrame) -> np.ndarray:
    """One boolean per row of ``pairs``: bools or 0/1 (a Series indexed as the pairs
    are; a one-column frame or an (n, 1) array is read as its column); anything else
    (NaN, "yes", 2) is refused rather than read as True."""
    if isinstance(labels, (str, bytes, bool, int, float)) or not hasattr(labels, "__len__"):
        raise TypeError(f"labels must be one bool (or 0/1) per pair, e.g. a list or a Series "
                        f"indexed like pairs; got {type(labels).__name__} {labels!r}")
    if isinstance(labels, pd.DataFrame) and labels.shape[1] == 1:
        labels = labels.iloc[:, 0]  # one column of labels
    elif getattr(labels, "ndim", 1) == 2 and np.shape(labels)[1] == 1:
        labels = np.ravel(labels)  # an (n, 1) array
    if isinstance(labels, pd.Series) and not labels.index.equals(pairs.index):
        # by position or by index? the two differ, so the caller says which
        raise ValueError("labels: a Series indexed differently from pairs; pass "
                         "labels.to_numpy() for labels in the pairs' row order, or "
                         "labels.reindex(pairs.index) for labels by index")
    values = pd.Series(labels if isinstance(labels, pd.Series) else list(labels),
                       dtype=object)
    if len(values) != len(pairs):
        raise ValueError(f"labels: {len(values)} labels for {len(pairs)} pairs")
    ok = values.map(lambda v: isinstance(v, (bool, np.bool_)) or (
        isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1)))
    if not ok.all():
        bad = values[~ok].head(3).tolist()
        raise ValueError(f"labels must be bools or 0/1 (True: a match); "
                         f"{int((~ok).sum())} are not, e.g. {bad}")
    return values.astype(bool).to_numpy()


def check_features(features: Any, pairs: pd.DataFrame) -> list[str]:
    """``features=`` as a list of numeric columns of ``pairs``."""
    if isinstance(features, (str, bytes)) or not isinstance(features, Sequence):
        raise TypeError(f"features must be a list of column names, got "
                        f"{type(features).__name__} {features!r}"
                        + (f" (features=[{features!r}])" if isinstance(features, str) else ""))
    cols = list(features)
    missing = [c for c in cols if c not in pairs.columns]
    if missing:
        raise KeyError(f"features: pairs have no column(s) {missing}; got "
                       f"{list(pairs.columns)}")
    text = [c for c in cols if not pd.api.types.is_numeric_dtype(pairs[c])]  # bools: 0/1
    if text:
        raise ValueError(f"features: {text} are not numeric columns (similarities, or "
                         f"match_weight); got dtypes {[str(pairs[c].dtype) for c in text]}")
    return cols


def check_saved(d: Mapping[str, Any]) -> None:
    """A saved SupervisedModel holds what scoring reads: its format, features, and the
    coefficients or the trees those features index."""
    if d.get("format") != 1:
        raise ValueError(f"saved SupervisedModel: format {d.get('format')!r}; this erblock "
                         "reads format 1: fit it again")
    features = d.get("features")
    if features is None:
        return  # not fitted
    n = 2 * len(features)  # a similarity and a missing flag each
    if d.get("kind") == "logistic":
        if "coef" not in d or "intercept" not in d:
            raise ValueError("saved SupervisedModel: a fitted logistic model needs 'coef' "
                             "and 'intercept'")
        return
    for key in ("trees", "init_logit", "learning_rate"):
        if key not in d:
            raise ValueError(f"saved SupervisedModel: a fitted gradient boosting model "
                             f"needs {key!r}")
    for i, t in enumerate(d["trees"]):
        need = {"children_left", "children_right", "feature", "threshold", "value"}
        if not isinstance(t, Mapping) or need - set(t):
            raise ValueError(f"saved SupervisedModel: trees[{i}] needs {sorted(need)}")
        sizes = {len(t[k]) for k in need}
        feat = np.asarray(t["feature"])
        inner = np.asarray(t["children_left"]) >= 0
        if len(sizes) != 1 or (feat[inner] >= n).any() or (feat[inner] < 0).any():
            raise ValueError(f"saved SupervisedModel: trees[{i}] is malformed (arrays of "
                             f"unequal length, or a feature beyond the {n} that "
                             f"features {list(features)} give)")
