"""What a fitted Fellegi-Sunter model adds up per pair: the prior, every comparison's
weight (its key pass's m and u where the pass selects on it, term frequencies), the
related records' term and the groups' term (:mod:`.groups`). A mixin of
:class:`.fellegi_sunter.FellegiSunter`, apart from how the model is fitted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..levels import LevelSpec
from .base import PASS_COLUMN, value_column
from .groups import Group, groups_term
from .offline import OFFLINE_KEYS
from .weights import (
    comparison_weights,
    level_weights,
    pass_overrides,
    pass_priors,
    pass_related,
    pass_sessions,
    prior,
    tf_adjustments,
)


class ScoredParts:
    """The per-pair parts of the match weight (module doc)."""

    lambda_: float | None
    m_: list[np.ndarray] | None
    u_: list[np.ndarray] | None
    sessions_: list[dict[str, Any]]
    use_passes: bool
    groups_: tuple[Group, ...]
    tf_: dict[str, pd.Series]

    def require_fitted(self) -> None:  # pragma: no cover - the model defines it
        raise NotImplementedError

    def _specs(self) -> tuple[LevelSpec, ...]:  # pragma: no cover - the model defines it
        raise NotImplementedError

    @property
    def pair_values(self) -> tuple[str, ...]:  # pragma: no cover - the model defines it
        raise NotImplementedError

    def weight_tables(self) -> list[np.ndarray]:
        """log2(m/u) per comparison with 0 in front for the null level."""
        self.require_fitted()
        return [level_weights(m, u) for m, u in zip(self.m_ or (), self.u_ or ())]

    @property
    def prior_weight(self) -> float:
        self.require_fitted()
        return prior(float(self.lambda_))  # type: ignore[arg-type]

    def tf_adjustments(self, gamma: np.ndarray, values: Mapping[str, Any]) -> np.ndarray:
        """(pairs × comparisons) term-frequency adjustment of the weights (0 elsewhere):
        ``log2(u_exact) − log2(tf(v))`` at the exact level of tf comparisons."""
        return tf_adjustments(self, gamma, values)

    def _pass_sessions(self) -> dict[int, Mapping[str, Any]]:
        """Trained sessions by the key pass they cover."""
        return pass_sessions(self.sessions_) if self.use_passes else {}

    def weights_of(self, gamma: np.ndarray, values: Mapping[str, Any] | None = None,
                   passes: np.ndarray | None = None, tf: np.ndarray | None = None
                   ) -> np.ndarray:
        """(pairs × comparisons) match weight of every comparison, tf included (``tf``:
        the :meth:`tf_adjustments` of ``values`` when already computed); with the key pass
        of every pair, selected comparisons use their pass's m and u."""
        out = comparison_weights(self.weight_tables(), gamma)
        if passes is not None:
            names = [s.name for s in self._specs()]
            pass_overrides(out, gamma, passes, self._pass_sessions(), names)
        if tf is None and values:
            tf = self.tf_adjustments(gamma, values)
        return out if tf is None else out + tf

    def related_of(self, gamma: np.ndarray, passes: np.ndarray | None,
                   tf_bits: np.ndarray | None = None) -> np.ndarray:
        """Per pair, the related records' term (:mod:`.related`); ``tf_bits``: its tf.
        Pairs without a key pass are scored with the one session of a model fitted on
        given pairs (:meth:`fit`: they are those pairs' kind), else without it."""
        if passes is None and list(getattr(self, "pass_keys_", [])) == [OFFLINE_KEYS]:
            passes = np.zeros(len(gamma), dtype=np.int64)
        if not self.has_related or passes is None:
            return np.zeros(len(gamma))
        return pass_related(gamma, passes, self._pass_sessions(),
                            [s.name for s in self._specs()], tf_bits)

    def scored_parts(self, gamma: np.ndarray, values: Mapping[str, Any] | None,
                     passes: np.ndarray | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Prior, comparison weights, related term and groups' term of every pair (tf
        computed once)."""
        tf = self.tf_adjustments(gamma, values) if values else None
        w = self.weights_of(gamma, passes=passes, tf=tf)
        return (self.priors_of(passes, len(gamma)), w,
                self.related_of(gamma, passes, None if tf is None else tf.sum(axis=1)),
                groups_term(w, self.groups_))

    def ungrouped_parts(self, gamma: np.ndarray, passes: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
        """Every row's match weight without the groups' term, and its comparison weights
        (what :func:`.groups.fit_mu` holds)."""
        prior_w, w, related, _ = self.scored_parts(gamma, None, passes)
        return prior_w + w.sum(axis=1) + related, w

    @property
    def has_related(self) -> bool:
        """Whether some pass is scored with a third class (related records)."""
        return self.use_passes and any(s.get("related") for s in self.sessions_)

    def priors_of(self, passes: np.ndarray | None, n: int) -> np.ndarray:
        """Prior weight of every pair: its pass's session λ, else λ of a random pair."""
        return pass_priors(self.prior_weight, passes, n, self._pass_sessions())

    @staticmethod
    def passes_of(pairs: pd.DataFrame) -> np.ndarray | None:
        """The key pass of every pair (``match_key``), when the pairs carry it."""
        return pairs[PASS_COLUMN].to_numpy() if PASS_COLUMN in pairs.columns else None

    def pair_value_columns(self, pairs: pd.DataFrame) -> dict[str, Any]:
        """The tf comparisons' values the engine attached to ``pairs`` (arrays as the
        frame holds them: text stays Arrow text, not Python strings)."""
        return {n: pairs[value_column(n)].array for n in self.pair_values
                if value_column(n) in pairs.columns}
