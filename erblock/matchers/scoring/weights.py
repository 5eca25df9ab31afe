"""Match weights of a fitted Fellegi-Sunter model, vectorised over pairs.

A pair's match weight is its prior (``log₂ λ/(1−λ)``) plus one weight per comparison,
``log₂ m[l]/u[l]`` at its level ``l`` (0 at the null level), plus term-frequency
adjustments. Pairs found by a key pass whose EM session learnt its own λ and the m/u of
the comparisons that pass selects on take those instead (see :mod:`.training`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..levels import PROB_FLOOR
from .related import related_weight

__all__ = ["comparison_weights", "level_weights", "pass_overrides", "pass_priors",
           "pass_related", "pass_sessions", "prior", "tf_adjustments"]


def level_weights(m: Sequence[float] | np.ndarray, u: Sequence[float] | np.ndarray
                  ) -> np.ndarray:
    """``[0, log2(m_0/u_0), …]``: index 0 is the null level (a missing value)."""
    m = np.clip(np.asarray(m, dtype=np.float64), PROB_FLOOR, 1.0)
    u = np.clip(np.asarray(u, dtype=np.float64), PROB_FLOOR, 1.0)
    return np.concatenate([[0.0], np.log2(m) - np.log2(u)])


def prior(lam: float) -> float:
    """Prior match weight ``log2(λ / (1 − λ))``."""
    return math.log2(lam) - math.log2(1.0 - lam)


def comparison_weights(tables: Sequence[np.ndarray], gamma: np.ndarray) -> np.ndarray:
    """(pairs × comparisons) weight of each pair's level (γ = −1: null)."""
    idx = gamma.astype(np.int64) + 1
    if not len(tables):
        return np.zeros((len(gamma), 0))
    return np.column_stack([t[idx[:, j]] for j, t in enumerate(tables)])


def pass_sessions(sessions: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """What scores each key pass's pairs: its trained, trusted session; for a session
    with a three-class fit (:mod:`.related`), the matches against the non-matches (prior
    ``π_M/(π_M+π_U)``, their m and u where its keys select: elsewhere the fit held the
    model's) and the related records."""
    out = {p: s for s in sessions if s.get("trained") and s.get("trusted", True)
           and s.get("lambda") for p in s["passes"]}
    for s in sessions:
        rel = s.get("related")
        if rel:
            pi = rel["pi"]
            lam = min(max(pi[0] / max(pi[0] + pi[2], PROB_FLOOR), PROB_FLOOR), 1 - 1e-12)
            keyed = set(s.get("deactivated", ()))
            out.update(dict.fromkeys(s["passes"], {
                "passes": s["passes"], "lambda": lam, "related": rel,
                **{f"{part}_selected": {n: v for n, v in rel[part].items() if n in keyed}
                   for part in ("m", "u")}}))
    return out


def pass_overrides(out: np.ndarray, gamma: np.ndarray, passes: np.ndarray,
                   sessions: Mapping[int, Mapping[str, Any]], names: Sequence[str]) -> None:
    """In place: pairs of a trained pass use its session's m/u of selected comparisons."""
    idx = gamma.astype(np.int64) + 1
    for p, sess in sessions.items():
        rows = np.flatnonzero(passes == p)
        if not len(rows):
            continue
        for name, m in sess.get("m_selected", {}).items():
            k = names.index(name)
            table = level_weights(m, sess["u_selected"][name])
            out[rows, k] = table[idx[rows, k]]


def pass_priors(default: float, passes: np.ndarray | None, n: int,
                sessions: Mapping[int, Mapping[str, Any]]) -> np.ndarray:
    """Prior weight per pair: its pass's session λ, else ``default``."""
    out = np.full(n, default)
    if passes is not None:
        for p, sess in sessions.items():
            out[passes == p] = prior(float(sess["lambda"]))
    return out


def pass_related(gamma: np.ndarray, passes: np.ndarray | None,
                 sessions: Mapping[int, Mapping[str, Any]], names: Sequence[str],
                 tf_bits: np.ndarray | None = None) -> np.ndarray:
    """Per pair, the related records' term of a pass with a three-class fit
    (:mod:`.related`), 0 elsewhere; ``tf_bits``: each pair's term-frequency adjustment."""
    out = np.zeros(len(gamma))
    if passes is None:
        return out
    for p, sess in sessions.items():
        rel = sess.get("related")
        rows = np.flatnonzero(passes == p)
        if not rel or not len(rows):
            continue
        out[rows] = related_weight(gamma[rows], rel["pi"], [rel["r"][n] for n in names],
                                   [rel["u"][n] for n in names],
                                   None if tf_bits is None else tf_bits[rows])
    return out


def tf_adjustments(model: Any, gamma: np.ndarray, values: Mapping[str, Any]) -> np.ndarray:
    """(pairs × comparisons) term-frequency adjustment: ``log2(u_exact) − log2(tf(v))``
    at the exact level of the model's tf comparisons, 0 elsewhere.

    A value absent from the frequency table (new in this run) counts as the rarest seen.
    """
    out = np.zeros(gamma.shape, dtype=np.float64)
    for k, s in enumerate(model.specs_ or ()):
        table = model.tf_.get(s.name)
        if not s.tf or table is None or s.name not in values or not len(table):
            continue
        top = np.flatnonzero(gamma[:, k] == s.n_levels - 1)
        if not len(top):
            continue
        kernel = model.comparisons_[k].kernel if k < len(model.comparisons_) else None
        col = values[s.name]
        codes = None
        if isinstance(getattr(col, "dtype", None), pd.StringDtype):
            # text (as the engine's pairs carry it): each distinct value looked up once
            # (tf_values works value by value)
            codes, uniques = pd.factorize(pd.Series(col).iloc[top], use_na_sentinel=True)
            raw = pd.Series(uniques)
        else:
            raw = pd.Series(np.asarray(col, dtype=object)[top])
        norm = kernel.tf_values(raw) if kernel is not None else raw.astype("string")
        freq = norm.map(table).to_numpy(np.float64, na_value=np.nan)
        if codes is not None:
            freq = np.append(freq, np.nan)[codes]  # code -1 (missing): absent
        freq = np.where(np.isnan(freq), float(table.min()), freq)
        u_exact = float(model.u_[k][-1])
        out[top, k] = math.log2(max(u_exact, PROB_FLOOR)) - np.log2(np.maximum(freq, PROB_FLOOR))
    return out
