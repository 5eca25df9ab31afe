"""Seeing a Fellegi-Sunter model: its levels' m, u and weights, and why one pair scored
what it did (a waterfall: the prior, then every comparison's weight, summing to the
pair's match weight). The charts of both are :mod:`.charts`; the run report and its HTML
page show them too."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...scalars import is_int
from ..levels import PROB_FLOOR
from .base import probability
from .groups import groups_term
from .offline import OFFLINE_KEYS

RELATED = "related records"  #: the contribution of a pass's third class (:mod:`.related`)
GROUPS = "groups"  #: what scoring groups as mixtures changes (:mod:`.groups`)

if TYPE_CHECKING:  # pragma: no cover - the model passes itself in
    from .fellegi_sunter import FellegiSunter


def summary(model: FellegiSunter, key_pass: int | None = None) -> pd.DataFrame:
    """One row per comparison level (lowest first): label, m, u, match weight
    (``log2 m/u``), where m came from, and whether term frequencies adjust the level.

    Without ``key_pass``, the model's own parameters; ``attrs["lambda"]`` is its prior.
    A pair found by a key pass that selects on a comparison is weighed with that pass's
    prior and parameters for it (what its blocking guarantees): ``key_pass=i`` (the
    pass's index in the run's list of keys) gives the table its pairs are weighed with,
    the pass's λ in ``attrs`` and ``m_source`` ``"key pass i"`` on the levels it
    overrides; ``attrs["related"]`` says that a third class (related records) adds a
    term no level table shows. :func:`waterfall` shows the weights one pair got.
    """
    model.require_fitted()
    sess: Any = {}
    # a model fitted on given pairs (model.fit) weighs pairs without a key pass with its
    # own table and the related records' term of its one session (pass 0) if that found
    # them; pairs with match_key 0 are that session's (summary(key_pass=0))
    offline = list(model.pass_keys_) == [OFFLINE_KEYS]
    related = offline and bool(model._pass_sessions().get(0, {}).get("related"))
    if key_pass is not None:
        n = len(model.pass_keys_)
        if not is_int(key_pass) or not 0 <= key_pass < n:
            raise ValueError(f"summary: key_pass must be the index of one of the model's "
                             f"{n} key pass(es) (0 to {n - 1}), got {key_pass!r}" if n else
                             "summary: this model was fitted without key passes (on given "
                             f"pairs): no key_pass to show, got {key_pass!r}")
        key_pass = int(key_pass)
        sess = model._pass_sessions().get(key_pass, {})
        related = bool(sess.get("related"))
    over_m, over_u = sess.get("m_selected", {}), sess.get("u_selected", {})
    rows = []
    specs = model.specs_ or ()
    for k, (s, m, u) in enumerate(zip(specs, model.m_ or (), model.u_ or ())):
        source = model.m_source_[k] if k < len(model.m_source_) else "em"
        if s.name in over_m:
            m, u, source = over_m[s.name], over_u[s.name], f"key pass {key_pass}"
        for level, label in enumerate(s.labels()):
            rows.append({
                "comparison": s.name, "level": level, "label": label,
                "m": float(m[level]), "u": float(u[level]),
                "match_weight": math.log2(max(m[level], PROB_FLOOR))
                - math.log2(max(u[level], PROB_FLOOR)),
                "m_source": source,
                "tf": bool(s.tf and level == s.n_levels - 1),
            })
    out = pd.DataFrame(rows)
    out.attrs.update({"lambda": float(sess.get("lambda", model.lambda_)),
                      "key_pass": key_pass, "related": related})
    return out


def model_report(model: FellegiSunter) -> dict[str, Any]:
    """A JSON-ready summary for the run report (no term-frequency tables)."""
    model.require_fitted()
    lam = float(model.lambda_)  # type: ignore[arg-type]
    specs = model.specs_ or ()
    return {
        "kind": model.kind,
        "lambda": lam,
        "prior_weight": math.log2(lam) - math.log2(1.0 - lam),
        "n_candidates": model.n_candidates_,
        "n_u_pairs": model.n_u_pairs_,
        "total_pairs": model.total_pairs_,
        "sessions": model.sessions_,
        "implied": [{"comparison": specs[k].name, "implied_by": specs[j].name}
                    for j, k in model.implied_],
        "groups": [g.to_dict([s.name for s in specs]) for g in model.groups_],
        "warnings": list(model.warnings_) + ([model.keys_warning_] if model.keys_warning_
                                             else []),
        "levels": summary(model).to_dict("records"),
        "tf": {name: int(len(t)) for name, t in model.tf_.items()},
    }


def contributions(model: FellegiSunter, pairs: pd.DataFrame,
                  tf_values: dict[str, Any] | None = None) -> pd.DataFrame:
    """Per pair: the prior weight and every comparison's weight (term frequency
    included where its values are given or the pairs carry them, as the report's
    examples do); the row sums are then the pairs' match weights."""
    model.require_fitted()
    gamma = model.gamma_of(pairs)
    values = tf_values if tf_values is not None else model.pair_value_columns(pairs)
    prior_w, w, related, grouped = model.scored_parts(gamma, values, model.passes_of(pairs))
    out = pd.DataFrame(w, columns=[s.name for s in model.specs_ or ()], index=pairs.index)
    out.insert(0, "prior", prior_w)
    if model.has_related:  # a pass scored with three classes (related records)
        out[RELATED] = related
    if model.groups_:  # comparisons scored together (a moved person's address)
        out[GROUPS] = grouped
    return out


def waterfall(model: FellegiSunter, pair: pd.Series | pd.DataFrame,
              tf_values: dict[str, Any] | None = None, scored: bool = False
              ) -> pd.DataFrame:
    """One pair's match weight, step by step: the prior, then each comparison at its
    level (label, weight, running total), then the final weight and probability.
    ``scored``: the pair's ``match_weight`` is this model's (it scored the pair), so a
    term-frequency adjustment whose value the pair lacks is taken from it."""
    row = pair.to_frame().T if isinstance(pair, pd.Series) else pair.iloc[:1]
    return waterfalls(model, row, tf_values, scored)[0]


def waterfalls(model: FellegiSunter, rows: pd.DataFrame,
               tf_values: dict[str, Any] | None = None, scored: bool = False
               ) -> list[pd.DataFrame]:
    """:func:`waterfall` of every row of ``rows``, their levels and weights computed
    together (the report's examples: a few pairs of every reduce task)."""
    gamma = model.gamma_of(rows)
    contrib = contributions(model, rows, tf_values)
    return [_steps(model, rows.iloc[i:i + 1], gamma[i], contrib.iloc[i], tf_values, scored)
            for i in range(len(rows))]


def _steps(model: FellegiSunter, row: pd.DataFrame, gamma: np.ndarray, contrib: pd.Series,
           tf_values: dict[str, Any] | None, scored: bool) -> pd.DataFrame:
    tf_rest: tuple[list[int], float] | None = None
    if scored:  # tf values the pair lacks: from its own match_weight (and what they move)
        solved = _tf_from_weight(model, row, gamma, contrib, tf_values)
        if solved is not None:
            contrib, tf_rest = solved
    prior_w = float(contrib["prior"])
    lam = 1.0 / (1.0 + 2.0 ** -prior_w)  # the pair's own prior: its key pass's λ if any
    where = "" if math.isclose(lam, model.lambda_ or 0.0, rel_tol=1e-6) else " (its key pass)"
    steps = [{"step": "prior", "level": f"λ = {lam:.3g}{where}", "weight": prior_w}]
    specs = model.specs_ or ()
    by = {k: specs[j].name for j, k in model.implied_ if gamma[j] == specs[j].n_levels - 1}
    for k, s in enumerate(specs):
        g = int(gamma[k])
        label = (s.labels()[g] if g >= 0 else f"implied by {by[k]} (no evidence)"
                 if k in by and pd.notna(row[s.name].iloc[0]) else "null (no evidence)")
        steps.append({"step": s.name, "level": label, "weight": float(contrib[s.name])})
    if tf_rest is not None and len(tf_rest[0]) == 1:
        k = tf_rest[0][0]
        step = steps[1 + k]
        step["weight"] = float(contrib[specs[k].name]) + tf_rest[1]
        step["level"] = f"{step['level']} (with its value's term frequency)"
    elif tf_rest is not None:
        steps.append({"step": "term frequencies", "weight": tf_rest[1],
                      "level": "of the agreeing values of " + ", ".join(
                          specs[k].name for k in tf_rest[0])})
    if RELATED in contrib.index and float(contrib[RELATED]) != 0.0:
        steps.append({"step": RELATED, "level": "its key pass also finds related records",
                      "weight": float(contrib[RELATED])})
    if GROUPS in contrib.index and float(contrib[GROUPS]) != 0.0:
        names = [", ".join(specs[k].name for k in g.comparisons) for g in model.groups_]
        steps.append({"step": GROUPS, "level": "scored together: " + "; ".join(
            f"{n} (μ = {g.mu:.3g} of matches differ on all)"
            for n, g in zip(names, model.groups_)), "weight": float(contrib[GROUPS])})
    out = pd.DataFrame(steps)
    out["cumulative"] = out["weight"].cumsum()
    out["probability"] = probability(out["cumulative"].to_numpy())
    return out


def _tf_from_weight(model: FellegiSunter, row: pd.DataFrame, gamma: np.ndarray,
                    contrib: pd.Series, tf_values: dict[str, Any] | None
                    ) -> tuple[pd.Series, tuple[list[int], float]] | None:
    """A run's pairs do not carry the values term frequencies weigh (the report's
    examples do). Where a tf comparison agrees exactly without its value, the pair's own
    ``match_weight`` tells the adjustment: the related records' and the groups' terms
    depend on it too, so it is solved for (bisection: the weight grows with it) and
    those terms recomputed with it. Returns the pair's contributions with them, and the
    lacking comparisons with their adjustments' sum (exact for one, or for several
    outside any group; several in a group are taken at the same point of their ranges);
    None when no value lacks, or the weight is not this model's."""
    values = tf_values if tf_values is not None else model.pair_value_columns(row)
    specs = model.specs_ or ()
    lacking = [k for k, s in enumerate(specs) if s.tf and len(model.tf_.get(s.name, ()))
               and int(gamma[k]) == s.n_levels - 1 and s.name not in values]
    if not lacking or "match_weight" not in row.columns:
        return None
    target = float(row["match_weight"].iloc[0])
    g, passes = gamma[None, :], model.passes_of(row)
    base = model.weights_of(g, passes=passes)  # no tf
    tf0 = model.tf_adjustments(g, values) if values else np.zeros_like(base)
    lo, hi = np.zeros(len(lacking)), np.zeros(len(lacking))  # each adjustment's range
    for i, k in enumerate(lacking):
        table = model.tf_[specs[k].name].to_numpy(np.float64)
        u = math.log2(max(float((model.u_ or [])[k][-1]), PROB_FLOOR))
        lo[i] = u - math.log2(max(float(table.max()), PROB_FLOOR))
        hi[i] = u - math.log2(max(float(table.min()), PROB_FLOOR))

    def parts(x: float) -> tuple[pd.Series, float]:
        tf = tf0.copy()
        tf[0, lacking] = lo + x * (hi - lo)
        w = base + tf
        out = contrib.copy()
        for k, s in enumerate(specs):
            out[s.name] = float(base[0, k] + tf0[0, k])  # the lacking ones without tf
        if RELATED in out.index:
            out[RELATED] = float(model.related_of(g, passes, tf.sum(axis=1))[0])
        if GROUPS in out.index:
            out[GROUPS] = float(groups_term(w, model.groups_)[0])
        return out, float(out.sum()) + float(tf[0, lacking].sum())

    if not parts(0.0)[1] - 1e-3 <= target <= parts(1.0)[1] + 1e-3:
        return None  # not this model's weight (or rounded away)
    a, b = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (a + b)
        a, b = (mid, b) if parts(mid)[1] < target else (a, mid)
    out, _ = parts(0.5 * (a + b))
    return out, (lacking, target - float(out.sum()))  # the steps add up to the weight


def boundary_examples(model: FellegiSunter, pairs: pd.DataFrame, k: int = 3
                      ) -> list[dict[str, Any]]:
    """The ``k`` scored pairs nearest the decision boundary (probability 0.5), each with
    its waterfall, for the run report."""
    if len(pairs) == 0 or "match_weight" not in pairs.columns or not model.fitted:
        return []
    a = np.abs(pairs["match_weight"].to_numpy(np.float64))
    cand = np.arange(len(a))
    if len(a) > k:  # the k smallest in stable order, without sorting every pair
        small = np.flatnonzero(a <= np.partition(a, k - 1)[k - 1])
        cand = small if len(small) >= k else cand
    near = cand[np.argsort(a[cand], kind="stable")[:k]]
    out = []
    for i, table in zip(near.tolist(), waterfalls(model, pairs.iloc[near])):
        row = pairs.iloc[i]
        out.append({"left_id": str(row["left_id"]), "right_id": str(row["right_id"]),
                    "match_weight": float(row["match_weight"]),
                    "match_probability": float(row["match_probability"]),
                    "steps": table[["step", "level", "weight"]].to_dict("records")})
    return out
