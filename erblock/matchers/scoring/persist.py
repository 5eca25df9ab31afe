"""The saved form of a Fellegi-Sunter model: everything needed to score again (settings,
comparisons, levels, λ, m, u, term frequencies, what the fit reported)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...scalars import is_int
from ..comparisons import Comparison
from ..levels import LevelSpec
from .groups import groups_from_dicts
from .options import MIN_U_PAIRS
from .saved_sessions import check_sessions, check_shares, probabilities

if TYPE_CHECKING:  # pragma: no cover - the model passes itself in
    from .fellegi_sunter import FellegiSunter

FORMAT = 2


def fs_to_dict(model: FellegiSunter) -> dict[str, Any]:
    tf = model.tf_adjust
    d: dict[str, Any] = {
        "kind": model.kind,
        "format": FORMAT,
        "settings": {"levels": {k: list(v) for k, v in model.levels.items()},
                     "tf_adjust": list(tf) if isinstance(tf, tuple) else tf,
                     "recall": model.recall, "detect": model.detect,
                     "groups": (model.groups if isinstance(model.groups, str)
                                else [list(g) for g in model.groups]),
                     "u_pairs": model.u_pairs, "max_iter": model.max_iter, "tol": model.tol,
                     "seed": model.seed},
        "specs": [s.to_dict() for s in model.specs_] if model.specs_ is not None else None,
        "comparisons": [c.to_dict() for c in model.comparisons_],
    }
    names = [s.name for s in model.specs_ or ()]
    if model.fitted:
        d["params"] = {
            "lambda": model.lambda_,
            "m": [x.tolist() for x in model.m_ or ()],
            "u": [x.tolist() for x in model.u_ or ()],
            "m_source": list(model.m_source_),
            "sessions": model.sessions_,
            "warnings": list(model.warnings_),
            "n_candidates": model.n_candidates_,
            "n_u_pairs": model.n_u_pairs_,
            "total_pairs": model.total_pairs_,
            "pass_keys": list(model.pass_keys_),
            "use_passes": bool(model.use_passes),
            "implied": [[names[j], names[k]] for j, k in model.implied_],
            "groups": [g.to_dict(names) for g in model.groups_],
        }
        d["tf"] = {name: {"values": t.index.astype(str).tolist(), "freq": t.tolist()}
                   for name, t in model.tf_.items()}
    return d


def fs_from_dict(cls: type[FellegiSunter], d: Mapping[str, Any]) -> FellegiSunter:
    if d.get("kind") != cls.kind:
        raise ValueError(f"not a Fellegi-Sunter model: kind={d.get('kind')!r}")
    if d.get("format") != FORMAT:
        raise ValueError(f"this Fellegi-Sunter model was saved in format {d.get('format')!r}; "
                         f"this erblock reads format {FORMAT}: fit it again")
    try:
        return _read(cls, d)
    except (KeyError, TypeError, IndexError, AttributeError) as e:  # a hand-edited file
        raise ValueError(f"saved Fellegi-Sunter model: malformed ({type(e).__name__}: "
                         f"{e}); save it again with model.to_json()") from e


def _read(cls: type[FellegiSunter], d: Mapping[str, Any]) -> FellegiSunter:
    settings = dict(d["settings"])
    settings.setdefault("groups", None)  # saved before groups: refits as it was fitted
    tf = settings.pop("tf_adjust", None)
    if is_int(settings.get("u_pairs")):  # saved before the minimum: only a refit reads it
        settings["u_pairs"] = max(int(settings["u_pairs"]), MIN_U_PAIRS)
    unknown = sorted(set(settings) - set(inspect.signature(cls).parameters))
    if unknown:
        raise ValueError(f"saved model: unknown setting(s) {unknown} in 'settings'")
    model = cls(tf_adjust=tf, **settings)
    if d.get("specs") is not None:
        model.specs_ = tuple(LevelSpec.from_dict(s) for s in d["specs"])
    model.comparisons_ = tuple(Comparison.from_dict(c) for c in d.get("comparisons", ()))
    p = d.get("params")
    if p:
        if not isinstance(p.get("lambda"), (int, float)):
            raise ValueError(f"λ (params.lambda) must be in (0, 1), got {p.get('lambda')!r}")
        model.lambda_ = float(p["lambda"])
        model.m_ = [np.asarray(x, dtype=np.float64) for x in p["m"]]
        model.u_ = [np.asarray(x, dtype=np.float64) for x in p["u"]]
        model.m_source_ = list(p.get("m_source", []))
        model.sessions_ = list(p.get("sessions", []))
        model.warnings_ = list(p.get("warnings", []))
        model.n_candidates_ = int(p.get("n_candidates", 0))
        model.n_u_pairs_ = int(p.get("n_u_pairs", 0))
        model.total_pairs_ = float(p.get("total_pairs", 0.0))
        model.pass_keys_ = list(p.get("pass_keys", []))
        model.use_passes = bool(p.get("use_passes", True))
        index = {s.name: k for k, s in enumerate(model.specs_ or ())}
        model.implied_ = tuple((index[j], index[k]) for j, k in p.get("implied", []))
        model.groups_ = groups_from_dicts(p.get("groups", []), list(index))
        _check_params(model)
        check_sessions(model)
    for name, t in (d.get("tf") or {}).items():
        freq = pd.Series(t["freq"], index=pd.Index(t["values"], dtype=str), dtype=np.float64)
        check_shares(f"tf[{name!r}]", freq)
        model.tf_[name] = freq
    return model


def _check_params(model: FellegiSunter) -> None:
    """A saved model's parameters fit its comparisons: one m and one u per comparison,
    each a probability per level, and λ in (0, 1) (a hand-edited or truncated file fails
    here, not in the workers)."""
    specs = model.specs_ or ()
    if len(model.comparisons_) != len(specs):
        raise ValueError(f"a fitted model needs one entry of 'comparisons' per entry of "
                         f"'specs': got {len(model.comparisons_)} and {len(specs)}")
    lam = model.lambda_
    if lam is None or not 0.0 < lam < 1.0:
        raise ValueError(f"λ (params.lambda) must be in (0, 1), got {lam!r}")
    for what, probs in (("m", model.m_ or []), ("u", model.u_ or [])):
        if len(probs) != len(specs):
            raise ValueError(f"params.{what} holds {len(probs)} comparisons, the model "
                             f"{len(specs)}")
        for s, x in zip(specs, probs):
            probabilities(f"params.{what} of {s.name!r}", x, s.n_levels)
