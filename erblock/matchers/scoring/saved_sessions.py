"""Checks of a saved model's per-session parameters (what each key pass's pairs are
weighed with): a hand-edited or truncated file fails when it is loaded, naming the
entry, not in the workers with an IndexError or as silently wrong weights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...scalars import is_int, is_number

if TYPE_CHECKING:  # pragma: no cover - the model passes itself in
    from .fellegi_sunter import FellegiSunter

SUM_TOL = 1e-4  #: how far a saved distribution's sum may be from 1 (rounding only)


def probabilities(where: str, x: Any, n: int) -> np.ndarray:
    """``x`` as ``n`` probabilities summing to 1 (one per level), else a ValueError."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        a = np.full(0, np.nan)
    if a.shape != (n,) or not np.isfinite(a).all() or (a < 0).any() or (a > 1).any() \
            or abs(float(a.sum()) - 1.0) > SUM_TOL:
        raise ValueError(f"{where} must be {n} probabilities (one per level) summing to "
                         f"1, got {x!r}")
    return a


def check_shares(where: str, freq: Any) -> None:
    """Term frequencies: each value's share of the records, in [0, 1] (a share of 0, an
    unused category's, is kept: no pair has that value)."""
    a = np.asarray(freq, dtype=np.float64)
    if not (np.isfinite(a) & (a >= 0) & (a <= 1)).all():
        raise ValueError(f"{where}: term frequencies must be each value's share of the "
                         "records, in [0, 1] (value_counts(normalize=True)), got values "
                         f"from {np.nanmin(a) if len(a) else 'none'} to "
                         f"{np.nanmax(a) if len(a) else 'none'}")


def check_sessions(model: FellegiSunter) -> None:
    """Every session's passes, λ, overridden m/u and related records' class fit the
    model's comparisons (``params.sessions[i]`` names the one that does not)."""
    levels = {s.name: s.n_levels for s in model.specs_ or ()}
    for i, s in enumerate(model.sessions_):
        where = f"params.sessions[{i}]"
        if not isinstance(s, Mapping):
            raise ValueError(f"{where} must be an object, got {type(s).__name__}")
        passes = s.get("passes", [])
        if not isinstance(passes, list) or not all(is_int(p) and p >= 0 for p in passes):
            raise ValueError(f"{where}.passes must be key pass indexes, got {passes!r}")
        lam = s.get("lambda")
        if lam is not None and not (is_number(lam) and 0.0 < lam < 1.0):
            raise ValueError(f"{where}.lambda must be in (0, 1), got {lam!r}")
        _names(f"{where}.deactivated", s.get("deactivated") or [], levels)
        m_sel, u_sel = s.get("m_selected") or {}, s.get("u_selected") or {}
        if set(m_sel) != set(u_sel):
            raise ValueError(f"{where}: m_selected and u_selected must name the same "
                             f"comparisons, got {sorted(m_sel)} and {sorted(u_sel)}")
        for part, table in (("m_selected", m_sel), ("u_selected", u_sel)):
            for name in _names(f"{where}.{part}", table, levels):
                probabilities(f"{where}.{part}[{name!r}]", table[name], levels[name])
        rel = s.get("related")
        if rel:
            _related(f"{where}.related", rel, levels)


def _names(where: str, names: Any, levels: Mapping[str, int]) -> list[str]:
    out = list(names)
    unknown = [n for n in out if n not in levels]
    if unknown:
        raise ValueError(f"{where}: {unknown} are no comparisons of the model "
                         f"({sorted(levels)})")
    return out


def _related(where: str, rel: Any, levels: Mapping[str, int]) -> None:
    if not isinstance(rel, Mapping):
        raise ValueError(f"{where} must be an object, got {type(rel).__name__}")
    probabilities(f"{where}.pi (matches, related, non-matches)", rel.get("pi"), 3)
    for part in ("r", "u"):  # every comparison's, as the related term reads them all
        table = rel.get(part) or {}
        missing = sorted(set(levels) - set(table))
        if missing:
            raise ValueError(f"{where}.{part} lacks the comparison(s) {missing}")
        for name in _names(f"{where}.{part}", table, levels):
            probabilities(f"{where}.{part}[{name!r}]", table[name], levels[name])
    m = rel.get("m") or {}
    for name in _names(f"{where}.m", m, levels):
        probabilities(f"{where}.m[{name!r}]", m[name], levels[name])
