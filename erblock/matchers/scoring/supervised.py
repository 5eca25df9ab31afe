"""Supervised scoring from labelled pairs, and the plain threshold on ``score``.

:class:`SupervisedModel` learns ``match_probability`` from pairs whose truth is known
(``erblock.evaluate``'s truth frame, or a boolean label per pair). Features are, per
comparison, the similarity (missing → 0) and a missing-value indicator, so a missing
value is never confused with a disagreement. Two estimators from scikit-learn (an
optional dependency: ``pip install 'erblock[ml]'``, needed to *fit* only):

* ``"logistic"`` — ``LogisticRegression``; saved as its coefficients and intercept.
* ``"gradient_boosting"`` — ``GradientBoostingClassifier`` (log loss); saved as its trees
  (``children_left``, ``children_right``, ``feature``, ``threshold``, leaf ``value``),
  its learning rate and its initial log-odds. That is a documented, pickle-free JSON
  format: erblock evaluates the trees itself with numpy (``x[feature] <= threshold`` goes
  left), so a saved model scores pairs without scikit-learn and gives the same
  probabilities as ``predict_proba`` (checked in the tests).

``match_weight`` is the log2 odds of ``match_probability``, as for Fellegi-Sunter.

:class:`ScoreThreshold` is the simplest classifier: ``score >= threshold``; it exists so
that a decision rule on the mean score can be saved and loaded like the other models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...attrs import SharedDict
from ...scalars import is_number
from ..assignment import check_ids_present
from ..comparisons import as_comparisons
from ..evaluate import infer_dedupe
from ..thresholds import check_threshold, meets
from .base import (
    MODEL_ATTR,
    PASS_COLUMN,
    RESERVED_COLUMNS,
    ScoringModel,
    model_columns,
    probability,
)
from .supervised_checks import (
    as_labels,
    check_features,
    check_pairs_frame,
    check_params,
    check_saved,
)

__all__ = ["ScoreThreshold", "SupervisedModel", "labels_from_truth"]


def labels_from_truth(pairs: pd.DataFrame, truth: pd.DataFrame, dedupe: bool) -> np.ndarray:
    """Boolean label per row of ``pairs``: is (``left_id``, ``right_id``) a true pair?

    For dedupe the pair is unordered ((a, b) is (b, a)).
    """
    for name, f in (("pairs", pairs), ("truth", truth)):
        missing = {"left_id", "right_id"} - set(f.columns)
        if missing:
            raise ValueError(f"{name}: missing column(s) {sorted(missing)}")
    true = pd.MultiIndex.from_arrays([truth["left_id"].to_numpy(), truth["right_id"].to_numpy()])
    got = pd.MultiIndex.from_arrays([pairs["left_id"].to_numpy(), pairs["right_id"].to_numpy()])
    hit = got.isin(true)
    if dedupe:
        rev = pd.MultiIndex.from_arrays([pairs["right_id"].to_numpy(),
                                         pairs["left_id"].to_numpy()])
        hit |= rev.isin(true)
    return np.asarray(hit, dtype=bool)


def _features(pairs: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """(pairs × 2·comparisons) features: similarity (NaN → 0), then missing indicators."""
    missing = [c for c in columns if c not in pairs.columns]
    if missing:
        raise KeyError(f"pairs: missing similarity column(s) {missing}; got {list(pairs.columns)}")
    sims = np.column_stack([pairs[c].to_numpy(np.float64, na_value=np.nan) for c in columns]) \
        if len(columns) else np.zeros((len(pairs), 0))
    null = np.isnan(sims)
    return np.hstack([np.where(null, 0.0, sims), null.astype(np.float64)])


def _similarity_columns(pairs: pd.DataFrame) -> list[str]:
    internal = set(model_columns(pairs))
    return [c for c in pairs.columns if c not in RESERVED_COLUMNS and c not in internal
            and c != PASS_COLUMN and pd.api.types.is_numeric_dtype(pairs[c])]


class SupervisedModel(ScoringModel):
    """A classifier of pairs fitted on labelled pairs (scikit-learn needed to fit).

    Parameters
    ----------
    kind
        ``"logistic"`` (default) or ``"gradient_boosting"``.
    **params
        Passed to the scikit-learn estimator (e.g. ``C=1.0``, ``n_estimators=100``).

    Attributes
    ----------
    features_
        The similarity columns the model reads (set by :meth:`fit`).
    coef_, intercept_
        Logistic regression: weights of the features (similarity, then missing flags).
    trees_, init_logit_, learning_rate_
        Gradient boosting: the trees, the starting log-odds and the shrinkage.
    """

    kinds: ClassVar[tuple[str, ...]] = ("logistic", "gradient_boosting")

    def __init__(self, kind: str = "logistic", **params: Any) -> None:
        if kind not in self.kinds:
            raise ValueError(f"kind must be one of {self.kinds}, got {kind!r}")
        self.kind = kind
        self.params = check_params(kind, params)
        self.features_: list[str] | None = None
        self.coef_: np.ndarray | None = None
        self.intercept_: float | None = None
        self.trees_: list[dict[str, np.ndarray]] | None = None
        self.init_logit_: float | None = None
        self.learning_rate_: float | None = None
        self.n_train_ = 0

    @property
    def fitted(self) -> bool:
        return self.features_ is not None

    def __repr__(self) -> str:
        state = f"fitted on {self.features_}" if self.fitted else "not fitted"
        return f"SupervisedModel({self.kind!r}, {state})"

    def bind(self, compare: Any, keys: Sequence[Any] | None = None) -> SupervisedModel:
        """Check that ``compare`` produces the similarity columns the model was fitted on."""
        if not self.fitted:
            raise ValueError("scoring: a SupervisedModel must be fitted on labelled pairs first "
                             "(model.fit(pairs, truth))")
        names = [c.name for c in as_comparisons(compare)]
        missing = [f for f in self.features_ or () if f not in names]
        scored = [f for f in missing if f in ("match_weight", "match_probability")]
        if scored:
            raise ValueError(f"scoring: the model was fitted on {scored}, the output of "
                             "another scoring model, which a run does not compute before "
                             "it; run with that model (scoring='em' or its saved model) and "
                             "apply this one to the scored pairs: model.apply(pairs)")
        if missing:
            raise ValueError(f"scoring: the model needs similarity columns {missing}, but this "
                             f"run compares {names}; use the same compare= as when fitting")
        return self

    def fit(self, pairs: pd.DataFrame, truth: pd.DataFrame | None = None, *,
            labels: Any = None, features: Sequence[str] | None = None,
            dedupe: bool | None = None) -> SupervisedModel:
        """Fit on ``pairs`` labelled by ``truth`` (true pairs) or by ``labels`` (bool per row).

        ``features``: the similarity columns to use (default: every numeric column other
        than ids, ``score`` and match columns). ``dedupe=True`` matches truth unordered;
        None decides as :func:`erblock.evaluate` does (the pairs' own report, else a pair
        of equal ids means a link, else unordered).
        """
        try:
            from sklearn.ensemble import GradientBoostingClassifier
            from sklearn.linear_model import LogisticRegression
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("SupervisedModel.fit needs scikit-learn: "
                              "pip install 'erblock[ml]'") from e
        if (truth is None) == (labels is None):
            raise ValueError("fit: give exactly one of truth (true pairs) or labels (per row)")
        check_pairs_frame(pairs, "fit")
        if truth is not None and not isinstance(truth, pd.DataFrame):
            raise TypeError(f"fit: truth must be a frame of true pairs (left_id, right_id), "
                            f"got {type(truth).__name__}; one label per pair is labels=")
        if truth is not None and dedupe is None:
            dedupe = infer_dedupe(None, None, None, pairs)[0]
        y = (labels_from_truth(pairs, truth, bool(dedupe)) if truth is not None
             else as_labels(labels, pairs))
        if truth is not None:  # a missing id would match another row's missing id
            check_ids_present(truth, "fit", "truth")
            check_ids_present(pairs, "fit")
        if y.all() or not y.any():
            raise ValueError("fit: the labels must contain both matches and non-matches")
        cols = (check_features(features, pairs) if features is not None
                else _similarity_columns(pairs))
        if not cols:
            raise ValueError("fit: no similarity columns in pairs")
        X = _features(pairs, cols)
        if self.kind == "logistic":
            est = LogisticRegression(**{"max_iter": 1000, **self.params}).fit(X, y)
            self.coef_ = est.coef_[0].astype(np.float64)
            self.intercept_ = float(est.intercept_[0])
        else:
            est = GradientBoostingClassifier(**self.params).fit(X, y)
            prior = float(est.init_.predict_proba(X[:1])[0, 1])
            self.init_logit_ = math.log(prior) - math.log1p(-prior)
            self.learning_rate_ = float(est.learning_rate)
            self.trees_ = []
            for t in est.estimators_[:, 0]:
                tr = t.tree_
                self.trees_.append({
                    "children_left": tr.children_left.astype(np.int64),
                    "children_right": tr.children_right.astype(np.int64),
                    "feature": tr.feature.astype(np.int64),
                    "threshold": tr.threshold.astype(np.float64),
                    "value": tr.value[:, 0, 0].astype(np.float64),
                })
        self.features_ = cols
        self.n_train_ = len(pairs)
        return self

    def _logit(self, pairs: pd.DataFrame) -> np.ndarray:
        if not self.fitted:
            raise RuntimeError("SupervisedModel is not fitted: call fit(pairs, truth) first")
        check_pairs_frame(pairs, "apply")
        X = _features(pairs, self.features_ or [])
        if self.kind == "logistic":
            return X @ self.coef_ + self.intercept_  # type: ignore[operator]
        X = X.astype(np.float32).astype(np.float64)  # scikit-learn's trees split float32
        z = np.full(len(X), self.init_logit_, dtype=np.float64)
        for t in self.trees_ or ():
            node = np.zeros(len(X), dtype=np.int64)
            left, right = t["children_left"], t["children_right"]
            feat, thr = t["feature"], t["threshold"]
            active = left[node] >= 0
            while active.any():
                idx = np.flatnonzero(active)
                nd = node[idx]
                go_left = X[idx, feat[nd]] <= thr[nd]
                node[idx] = np.where(go_left, left[nd], right[nd])
                active = left[node] >= 0
            z += self.learning_rate_ * t["value"][node]  # type: ignore[operator]
        return z

    def predict_proba(self, pairs: pd.DataFrame) -> np.ndarray:
        """match_probability of each pair."""
        return probability(self._logit(pairs) / math.log(2.0))

    def predict(self, pairs: pd.DataFrame, threshold: float = 0.5) -> np.ndarray:
        """Default decision: ``match_probability >= threshold``."""
        check_threshold(threshold, "match_probability")
        return self.predict_proba(pairs) >= threshold

    def apply(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """``pairs`` with ``match_weight`` (log2 odds) and ``match_probability`` added."""
        z = self._logit(pairs)
        out = pairs.drop(columns=model_columns(pairs)).copy()
        out["match_weight"] = z / math.log(2.0)
        out["match_probability"] = probability(z / math.log(2.0))
        if MODEL_ATTR in out.attrs:  # the weights are this model's now, not the frame's
            out.attrs[MODEL_ATTR] = SharedDict.of(self.to_dict())  # (a task's: none)
        return out

    def report(self) -> dict[str, Any]:
        return {"kind": self.kind, "features": self.features_, "n_train": self.n_train_}

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "format": 1, "params": self.params,
                             "features": self.features_, "n_train": self.n_train_}
        if self.kind == "logistic" and self.coef_ is not None:
            d["coef"] = self.coef_.tolist()
            d["intercept"] = self.intercept_
        if self.kind == "gradient_boosting" and self.trees_ is not None:
            d["init_logit"] = self.init_logit_
            d["learning_rate"] = self.learning_rate_
            d["trees"] = [{k: v.tolist() for k, v in t.items()} for t in self.trees_]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SupervisedModel:
        if d.get("kind") not in cls.kinds:
            raise ValueError(f"not a supervised model: kind={d.get('kind')!r}")
        check_saved(d)
        model = cls(d["kind"], **(d.get("params") or {}))
        model.features_ = list(d["features"]) if d.get("features") is not None else None
        model.n_train_ = int(d.get("n_train", 0))
        if "coef" in d:
            model.coef_ = np.asarray(d["coef"], dtype=np.float64).ravel()
            model.intercept_ = float(d["intercept"])
            want = 2 * len(model.features_ or ())  # a similarity and a missing flag each
            if model.features_ is not None and model.coef_.size != want:
                raise ValueError(f"saved model: {model.coef_.size} coefficients where its "
                                 f"features {model.features_} need {want}")
        if "trees" in d:
            model.init_logit_ = float(d["init_logit"])
            model.learning_rate_ = float(d["learning_rate"])
            model.trees_ = [{k: np.asarray(v, dtype=np.float64 if k in ("threshold", "value")
                                           else np.int64) for k, v in t.items()}
                            for t in d["trees"]]
        return model


class ScoreThreshold(ScoringModel):
    """Classify by the mean score alone: a match when ``score >= threshold``."""

    kinds: ClassVar[tuple[str, ...]] = ("score_threshold",)
    kind = "score_threshold"
    decision: ClassVar[str] = "score"  # a rule on the mean score: the run's threshold

    def __init__(self, threshold: float = 0.8) -> None:
        if not is_number(threshold) or not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
        self.threshold = float(threshold)

    @property
    def fitted(self) -> bool:
        return True

    @property
    def default_threshold(self) -> float | None:
        return self.threshold

    def apply(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """The pairs as they are: the decision is ``score >= threshold``."""
        return pairs

    def __repr__(self) -> str:
        return f"ScoreThreshold({self.threshold:g})"

    def predict(self, pairs: pd.DataFrame) -> np.ndarray:
        if "score" not in pairs.columns:
            raise KeyError(f"pairs: no 'score' column; got {list(pairs.columns)}")
        return meets(pairs["score"], self.threshold)  # in float32 if so, as the run

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "format": 1, "threshold": self.threshold}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoreThreshold:
        if d.get("kind") != cls.kind:
            raise ValueError(f"not a score threshold: kind={d.get('kind')!r}")
        return cls(float(d["threshold"]))

