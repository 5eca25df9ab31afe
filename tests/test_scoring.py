"""Scoring: Fellegi-Sunter EM (on histograms, exact), tf adjustment, JSON, supervised, engine."""

from __future__ import annotations

import copy
import json
import math
import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import erblock
from erblock.attrs import SharedDict, plain
from erblock.engine.tasks.score import row_ranges
from erblock.matchers.comparisons import as_comparisons
from erblock.matchers.em import REL_FLOOR, fit_em
from erblock.matchers.levels import (
    PROB_FLOOR,
    LevelSpec,
    PatternHistogram,
    default_m,
    resolve_levels,
)
from erblock.matchers.scoring import FellegiSunter, ModelWarning, load_model
from erblock.matchers.scoring.base import read_json
from erblock.matchers.scoring.supervised import ScoreThreshold, SupervisedModel, labels_from_truth
from erblock.report import RunReport

# ---------------------------------------------------------------------- synthetic model

LAMBDA = 0.15
M = [np.array([0.05, 0.15, 0.8]), np.array([0.1, 0.9]), np.array([0.05, 0.05, 0.2, 0.7])]
U = [np.array([0.85, 0.1, 0.05]), np.array([0.75, 0.25]), np.array([0.7, 0.2, 0.08, 0.02])]
NULL_RATE = [0.0, 0.1, 0.05]


def draw_gamma(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Level vectors drawn from the known model (with nulls) and the true match flags."""
    rng = np.random.default_rng(seed)
    match = rng.random(n) < LAMBDA
    gamma = np.empty((n, len(M)), dtype=np.int8)
    for k, (m, u) in enumerate(zip(M, U)):
        gm = rng.choice(len(m), size=n, p=m)
        gu = rng.choice(len(u), size=n, p=u)
        g = np.where(match, gm, gu)
        g[rng.random(n) < NULL_RATE[k]] = -1
        gamma[:, k] = g
    return gamma, match


def test_em_recovers_known_parameters():
    gamma, _ = draw_gamma(200_000)
    n_levels = [len(m) for m in M]
    start_u = [np.full(n, 1.0 / n) for n in n_levels]  # u unknown: EM estimates it too
    res = fit_em(gamma, np.ones(len(gamma)), n_levels, start_u, fix_u=False, max_iter=1000,
                 tol=1e-9)
    assert res["converged"]
    assert res["lambda"] == pytest.approx(LAMBDA, abs=0.01)
    for k in range(len(M)):
        np.testing.assert_allclose(res["m"][k], M[k], atol=0.02)
        np.testing.assert_allclose(res["u"][k], U[k], atol=0.02)


def test_em_with_fixed_u_recovers_lambda_and_m():
    gamma, _ = draw_gamma(100_000, seed=1)
    res = fit_em(gamma, np.ones(len(gamma)), [len(m) for m in M], U, fix_u=True, tol=1e-9)
    assert res["lambda"] == pytest.approx(LAMBDA, abs=0.01)
    for k in range(len(M)):
        np.testing.assert_allclose(res["m"][k], M[k], atol=0.02)
        np.testing.assert_array_equal(res["u"][k], U[k])  # untouched


def test_histogram_em_equals_pair_level_em():
    gamma, _ = draw_gamma(30_000, seed=2)
    radix = [len(m) + 1 for m in M]
    # histograms of three "tasks", merged as the client does
    chunks = np.array_split(gamma, 3)
    hist = PatternHistogram.merge([PatternHistogram.from_gamma(c, radix) for c in chunks])
    assert hist.total == len(gamma)
    assert len(hist.codes) <= math.prod(radix)
    kw = dict(n_levels=[len(m) for m in M], u=U, fix_u=[True, False, True], max_iter=50,
              tol=0.0, accelerate=False)
    by_hist = fit_em(hist.gamma(), hist.counts, **kw)
    by_pair = fit_em(gamma, np.ones(len(gamma)), **kw)
    assert by_hist["lambda"] == pytest.approx(by_pair["lambda"], rel=1e-9)
    for a, b in zip(by_hist["m"] + by_hist["u"], by_pair["m"] + by_pair["u"]):
        np.testing.assert_allclose(a, b, rtol=1e-9)


def test_histogram_codes_round_trip():
    gamma, _ = draw_gamma(1000, seed=3)
    radix = [len(m) + 1 for m in M]
    hist = PatternHistogram.from_gamma(gamma, radix)
    decoded = hist.gamma()
    # every decoded row occurs in gamma with the counted multiplicity
    rows, counts = np.unique(gamma, axis=0, return_counts=True)
    got = {tuple(r): c for r, c in zip(decoded.tolist(), hist.counts.tolist())}
    assert got == {tuple(r): c for r, c in zip(rows.tolist(), counts.tolist())}


def _em_reference(gamma, w, n_levels, u, m, lam, fixed, keep_m, pseudo, max_iter, tol):
    """The E- and M-steps written out plainly (per present row, per comparison)."""
    floor = PROB_FLOOR

    def table(p):
        return np.concatenate([[0.0], np.log(np.clip(p, floor, 1.0))])

    K = gamma.shape[1]
    idx = gamma.astype(np.int64) + 1
    u = [np.clip(np.asarray(x, dtype=np.float64), floor, 1.0) for x in u]
    m = [np.asarray(x, dtype=np.float64).copy() for x in m]
    for it in range(1, max_iter + 1):  # noqa: B007 (returned)
        logit = np.zeros(len(gamma))
        for k in range(K):
            logit += table(m[k])[idx[:, k]] - table(u[k])[idx[:, k]]
        logit = logit + math.log(lam) - math.log1p(-lam)
        p = 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))
        wp, wq = w * p, w * (1.0 - p)
        new_lam = float(wp.sum() / w.sum())
        new_m, new_u = [], []
        for k in range(K):
            sel = gamma[:, k] >= 0
            nk = n_levels[k]
            mk = np.bincount(gamma[sel, k], weights=wp[sel], minlength=nk)[:nk] + pseudo
            new_m.append(m[k] if keep_m[k] or mk.sum() <= 0 else mk / mk.sum())
            uk = np.bincount(gamma[sel, k], weights=wq[sel], minlength=nk)[:nk]
            new_u.append(u[k] if fixed[k] or uk.sum() <= 0
                         else np.clip(uk / uk.sum(), floor, 1.0))
        delta = max([abs(new_lam - lam) / max(min(lam, 1.0 - lam), REL_FLOOR)]
                    + [float(np.max(np.abs(a - b) / np.maximum(b, REL_FLOOR)))
                       for a, b in zip(new_m + new_u, m + u)])
        lam, m, u = min(max(new_lam, 1e-9), 1 - 1e-9), new_m, new_u
        if delta < tol:
            break
    return lam, m, u, it


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_em_steps_equal_the_plain_formulas_to_the_last_bit(seed):
    """fit_em counts levels on shifted codes and caches fixed u's logs: the same numbers
    as the plain steps, exactly (a fit's benchmarks do not move when it is sped up)."""
    gamma, _ = draw_gamma(20_000, seed=seed)
    if seed == 2:  # level 0 of the first comparison never seen: its u and m hit the floor
        gamma[:, 0] = np.maximum(gamma[:, 0], 1)
    hist = PatternHistogram.from_gamma(gamma, [len(m) + 1 for m in M])
    n_levels = [len(m) for m in M]
    m0 = [np.full(n, 1.0 / n) for n in n_levels]
    fixed = [True, False, True] if seed < 2 else [False, False, True]
    keep, pseudo = [False, False, seed == 1], 0.1 if seed < 2 else 0.0
    res = fit_em(hist.gamma(), hist.counts, n_levels, U, m=m0, lam=0.3, fix_u=fixed,
                 fix_m=keep, pseudo=pseudo, max_iter=200, tol=1e-6, accelerate=False)
    lam, m, u, it = _em_reference(hist.gamma(), hist.counts.astype(np.float64), n_levels, U,
                                  m0, 0.3, fixed, keep, pseudo, 200, 1e-6)
    if seed == 2:
        assert res["u"][0][0] == PROB_FLOOR and res["m"][0][0] == 0.0
    assert res["converged"] and it < 200  # the stopping rule ended both (51-79 steps)
    assert res["n_iter"] == it and res["lambda"] == lam
    for a, b in zip(res["m"] + res["u"], m + u):
        np.testing.assert_array_equal(a, b)


def _rare_matches(n=200_000, seed=0):
    """λ = 0.004 and u of 0.002 at the top levels: the small parameters that EM moves
    slowly (product and bibliographic links)."""
    rng = np.random.default_rng(seed)
    m = [np.array([0.05, 0.15, 0.8]), np.array([0.2, 0.8]), np.array([0.1, 0.3, 0.6])]
    u = [np.array([0.97, 0.028, 0.002]), np.array([0.9, 0.1]), np.array([0.95, 0.045, 0.005])]
    match = rng.random(n) < 0.004
    gamma = np.stack([np.where(match, rng.choice(len(a), n, p=a), rng.choice(len(b), n, p=b))
                      for a, b in zip(m, u)], axis=1).astype(np.int8)
    hist = PatternHistogram.from_gamma(gamma, [len(a) + 1 for a in m])
    return hist.gamma(), hist.counts.astype(np.float64), [len(a) for a in m]


def test_em_stops_where_no_parameter_moves_relative_to_its_size():
    gamma, counts, n_levels = _rare_matches()
    start = [np.full(n, 1.0 / n) for n in n_levels]
    res = fit_em(gamma, counts, n_levels, start, fix_u=False, max_iter=5000,
                 tol=1e-4, accelerate=False)
    assert res["converged"]
    # one more plain step moves λ (0.004) and the smallest u by less than 1e-4 of
    # themselves (an absolute rule, changes below 1e-4, stopped here with λ still moving
    # by 1.05e-4 of itself a step)
    again = fit_em(gamma, counts, n_levels, res["u"], m=res["m"],
                   lam=res["lambda"], fix_u=False, max_iter=1, tol=0.0, accelerate=False)
    assert abs(again["lambda"] - res["lambda"]) < 1e-4 * res["lambda"]
    for a, b in zip(again["u"] + again["m"], res["u"] + res["m"]):
        assert np.all(np.abs(a - b) <= 1e-4 * np.maximum(b, REL_FLOOR)), (a, b)


def test_squarem_reaches_plain_ems_fixed_point_in_fewer_steps():
    gamma, counts, n_levels = _rare_matches(seed=1)
    start = [np.full(n, 1.0 / n) for n in n_levels]
    kw = dict(fix_u=False, max_iter=20_000, tol=1e-9, pseudo=0.1)
    plain = fit_em(gamma, counts, n_levels, start, accelerate=False, **kw)
    fast = fit_em(gamma, counts, n_levels, start, **kw)
    assert plain["converged"] and fast["converged"]
    assert fast["n_iter"] < plain["n_iter"] / 2, (fast["n_iter"], plain["n_iter"])
    assert fast["lambda"] == pytest.approx(plain["lambda"], rel=1e-6)
    for a, b in zip(fast["m"] + fast["u"], plain["m"] + plain["u"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-9)
    assert fast["loglik"] >= plain["loglik"] - 1e-6 * abs(plain["loglik"])


def test_squarem_with_held_m_held_u_and_nulls_ends_where_plain_em_does():
    # one m held, u of two comparisons held, a null rate per comparison (draw_gamma)
    gamma, _ = draw_gamma(50_000, seed=5)
    hist = PatternHistogram.from_gamma(gamma, [len(m) + 1 for m in M])
    n_levels = [len(m) for m in M]
    kw = dict(m=[np.full(n, 1.0 / n) for n in n_levels[:2]] + [M[2]], lam=0.3,
              fix_u=[True, False, True], fix_m=[False, False, True], pseudo=0.1,
              max_iter=20_000, tol=1e-9)
    plain = fit_em(hist.gamma(), hist.counts, n_levels, U, accelerate=False, **kw)
    fast = fit_em(hist.gamma(), hist.counts, n_levels, U, **kw)
    assert plain["converged"] and fast["converged"] and fast["n_iter"] <= plain["n_iter"]
    assert fast["lambda"] == pytest.approx(plain["lambda"], rel=1e-6)
    for a, b in zip(fast["m"] + fast["u"], plain["m"] + plain["u"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-9)
    np.testing.assert_array_equal(fast["m"][2], M[2])  # held
    np.testing.assert_array_equal(fast["u"][0], U[0])


def test_squarem_keeps_an_extrapolation_only_where_the_objective_does_not_drop():
    from erblock.matchers import em

    gamma, counts, n_levels = _rare_matches(seed=2)
    fit = em._Fit(gamma, counts, n_levels, [np.full(n, 1.0 / n) for n in n_levels],
                  [False] * 3, [False] * 3, 0.1)
    shares = [np.bincount(gamma[:, k], weights=counts, minlength=n) / counts.sum()
              for k, n in enumerate(n_levels)]
    zero, _ = fit.step(0.1, fit.flat([default_m(n) for n in n_levels]), fit.flat(shares))
    zero, _ = fit.step(*zero)  # past the first steps, where EM moves fast anyway
    one, _ = fit.step(*zero)
    two, _ = fit.step(*one)
    kept = fit.squarem(zero, one, two)
    assert kept is not two  # far from the fixed point the jump is taken ...
    assert fit.objective(*kept) >= fit.objective(*two)
    worse = em._Fit.objective  # ... and refused where it would lower the objective
    fit.objective = lambda lam, m, u: worse(fit, lam, m, u) - (0.0 if m is two[1] else 1e9)
    assert fit.squarem(zero, one, two) is two


def test_em_refuses_levels_outside_the_layout():
    """A level past a comparison's last would be read as the next comparison's."""
    gamma = np.array([[0, 1], [2, 0]], dtype=np.int8)
    with pytest.raises(ValueError, match="levels must lie in"):
        fit_em(gamma, np.ones(2), [2, 2], [np.full(2, 0.5)] * 2)
    with pytest.raises(ValueError, match="levels must lie in"):
        fit_em(gamma - 2, np.ones(2), [3, 2], [np.full(3, 1 / 3), np.full(2, 0.5)])
    with pytest.raises(ValueError, match="n_levels"):  # m of another layout
        fit_em(gamma, np.ones(2), [3, 2], [np.full(3, 1 / 3), np.full(2, 0.5)],
               m=[np.full(2, 0.5), np.full(3, 1 / 3)])


def test_histogram_codes_are_the_mixed_radix_codes_ascending():
    gamma, _ = draw_gamma(5000, seed=4)
    radix = [len(m) + 1 for m in M]
    hist = PatternHistogram.from_gamma(gamma, radix)
    codes = (gamma.astype(np.int64) + 1) @ np.cumprod([1, *radix[:-1]])
    want, counts = np.unique(codes, return_counts=True)
    np.testing.assert_array_equal(hist.codes, want)
    np.testing.assert_array_equal(hist.counts, counts)
    assert hist.codes.dtype == hist.counts.dtype == np.int64


# --------------------------------------------------------------------------- levels


def test_levels_thresholds_tolerance_and_null():
    spec = LevelSpec("x", "x", "levenshtein", (0.8, 0.9, 1.0))
    sims = np.array([np.float32(0.9), 0.89, 1.0, np.nan, 0.0, np.float32(0.8)], dtype=np.float64)
    assert spec.levels(sims).tolist() == [2, 1, 3, -1, 0, 1]
    assert spec.labels() == ["< 0.8", ">= 0.8", ">= 0.9", "exact"]


def test_resolve_levels_defaults_overrides_and_errors():
    comps = as_comparisons({"name": "jaro_winkler", "dob": "exact"})
    specs = resolve_levels(comps, {"name": (0.7, 1.0)})
    assert specs[0].thresholds == (0.7, 1.0)
    assert specs[1].thresholds == (1.0,)
    with pytest.raises(ValueError, match="name no comparison.*'dob'"):
        resolve_levels(comps, {"nmae": (0.9,)})
    with pytest.raises(ValueError, match=r"levels\['name'\] must be distinct thresholds"):
        resolve_levels(comps, {"name": (0.0, 1.0)})
    with pytest.raises(ValueError, match="recall must be in"):
        FellegiSunter(recall=0)
    with pytest.raises(ValueError, match=r"tf_adjust: \['city'\] names no comparison"):
        FellegiSunter(tf_adjust="city").bind(comps)
    # EM's stopping rule, the sample's seed and the detection switch are checked too (a
    # negative or NaN tol ran every iteration and then warned "did not converge")
    for bad, message in ((dict(tol=-1), "tol must be a number in"),
                         (dict(tol=float("nan")), "tol must be a number in"),
                         (dict(seed="a"), "seed must be an integer"),
                         (dict(detect="no"), "detect must be True or False")):
        with pytest.raises(ValueError, match=message):
            FellegiSunter(**bad)
    assert FellegiSunter(tol=np.float64(1e-6), seed=np.int64(3)).seed == 3
    # a date format's bad directive is refused when the comparison is made
    with pytest.raises(ValueError, match=r"date format '%Q'.*bad directive.*column 'dob'"):
        erblock.comparison("dob", "date", format="%Q")


# ------------------------------------------------------------------ model on pandas


def _pairs_from_gamma(gamma: np.ndarray) -> pd.DataFrame:
    """A pairs frame whose similarity columns land exactly on the given levels."""
    values = {0: 0.5, 1: 0.85, 2: 0.95, 3: 1.0}
    cols = {}
    for k, name in enumerate(["a", "b", "c"]):
        g = gamma[:, k]
        if k == 1:  # two levels: thresholds (1.0,)
            v = np.where(g == 1, 1.0, 0.0)
        elif k == 0:  # three levels: thresholds (0.8, 1.0)
            v = np.select([g == 0, g == 1, g == 2], [0.5, 0.85, 1.0])
        else:
            v = np.vectorize(values.get)(np.maximum(g, 0)).astype(float)
        cols[name] = np.where(g < 0, np.nan, v)
    n = len(gamma)
    return pd.DataFrame({"left_id": np.arange(n), "right_id": np.arange(n) + n, **cols})


LEVELS = {"a": (0.8, 1.0), "b": (1.0,), "c": (0.8, 0.92, 1.0)}


def test_fit_on_pandas_pairs_and_apply():
    gamma, match = draw_gamma(50_000, seed=4)
    pairs = _pairs_from_gamma(gamma)
    model = FellegiSunter(levels=LEVELS, tol=1e-9).fit(pairs)  # u among the candidates
    assert model.gamma_of(pairs).tolist() == gamma.tolist()
    assert model.lambda_ == pytest.approx(LAMBDA, abs=0.01)
    out = model.apply(pairs)
    assert {"match_weight", "match_probability"} <= set(out.columns)
    assert out["match_probability"].between(0, 1).all()
    # the posterior separates the simulated matches well
    pred = out["match_probability"].to_numpy() >= 0.5
    tp = (pred & match).sum()
    assert tp / pred.sum() > 0.9 and tp / match.sum() > 0.9
    # weights are log2 odds
    np.testing.assert_allclose(out["match_probability"],
                               1 / (1 + 2.0 ** -out["match_weight"]), rtol=1e-12)
    s = model.summary()
    assert list(s.columns[:5]) == ["comparison", "level", "label", "m", "u"]
    assert len(s) == 3 + 2 + 4


def test_json_round_trip_gives_identical_scores(tmp_path):
    gamma, _ = draw_gamma(5000, seed=5)
    pairs = _pairs_from_gamma(gamma)
    model = FellegiSunter(levels=LEVELS, tf_adjust="b").fit(
        pairs, tf={"b": pd.Series({"x": 0.01, "y": 0.5})})
    tfv = {"b": np.where(np.arange(len(pairs)) % 2 == 0, "x", "y")}
    path = tmp_path / "model.json"
    text = model.to_json(path)
    json.loads(text)  # plain JSON
    carrier = pd.DataFrame({"left_id": [1]})
    carrier.attrs["erblock_model"] = model.to_dict()  # what a scored run's pairs carry
    for loaded in (FellegiSunter.from_json(text), FellegiSunter.from_json(path),
                   load_model(path), load_model(carrier)):
        assert isinstance(loaded, FellegiSunter)
        assert loaded.to_dict() == model.to_dict()
        pd.testing.assert_frame_equal(loaded.apply(pairs, tfv), model.apply(pairs, tfv))
    with pytest.raises(ValueError, match="carries no model"):
        load_model(pd.DataFrame({"left_id": [1]}))
    unfitted = FellegiSunter(levels={"a": (0.5, 1.0)}, u_pairs=1000)
    again = FellegiSunter.from_json(unfitted.to_json())
    assert again.to_dict() == unfitted.to_dict() and not again.fitted


def test_shared_dict_is_read_only_shared_and_round_trips():
    d = SharedDict.of({"a": {"b": [1, {"c": 2}]}, "n": 3, "t": ({"e": 1},)})
    assert copy.deepcopy(d) is d and copy.deepcopy({"x": d})["x"] is d
    assert isinstance(d["a"], SharedDict) and isinstance(d["a"]["b"][1], SharedDict)
    assert isinstance(d["t"], tuple) and isinstance(d["t"][0], SharedDict)
    for edit in (lambda: d.__setitem__("n", 4), lambda: d.update(n=4), lambda: d.pop("n"),
                 lambda: d["a"].clear(), lambda: d.setdefault("z", 1),
                 lambda: d["a"]["b"][1].__delitem__("c"), lambda: d.popitem()):
        with pytest.raises(TypeError, match="read-only"):
            edit()
    assert d == {"a": {"b": [1, {"c": 2}]}, "n": 3, "t": ({"e": 1},)}
    again = pickle.loads(pickle.dumps(d))
    assert type(again) is SharedDict and again == d and isinstance(again["a"], SharedDict)
    assert json.loads(json.dumps(d)) == {**d, "t": [{"e": 1}]}
    mine = plain(d)  # an editable copy
    mine["a"]["b"][1]["c"] = 5
    assert type(mine["a"]) is dict and d["a"]["b"][1]["c"] == 2
    assert type(mine["t"]) is tuple and type(mine["t"][0]) is dict
    # a model loaded from pairs.attrs holds its own, editable dicts
    assert type(read_json(d)["a"]["b"][1]) is dict


def test_tf_adjustment_rewards_rare_values():
    gamma = np.array([[2, 1, 3], [2, 1, 3], [2, 0, 3], [2, 1, 3]], dtype=np.int8)
    pairs = _pairs_from_gamma(gamma)
    train, _ = draw_gamma(20_000, seed=6)
    model = FellegiSunter(levels=LEVELS, tf_adjust="b").fit(
        _pairs_from_gamma(train), tf={"b": pd.Series({"rare": 0.001, "common": 0.3})})
    values = {"b": np.array(["rare", "common", "rare", "unseen"], dtype=object)}
    plain = model.weights_of(gamma).sum(axis=1)
    adjusted = model.weights_of(gamma, values).sum(axis=1)
    u_rand = model.u_[1][-1]
    # exact agreement: weight + log2(u_random / tf(v)); unseen values get the smallest tf
    assert adjusted[0] - plain[0] == pytest.approx(math.log2(u_rand / 0.001))
    assert adjusted[1] - plain[1] == pytest.approx(math.log2(u_rand / 0.3))
    assert adjusted[3] - plain[3] == pytest.approx(math.log2(u_rand / 0.001))
    assert adjusted[2] == plain[2]  # not at the exact level: unchanged
    assert adjusted[0] > adjusted[1]
    # text as the engine's pairs carry it (Arrow strings, each distinct value looked up
    # once): the same weights as value by value, a missing value included
    gamma5 = np.vstack([gamma, [[2, 1, 3]]]).astype(np.int8)
    objects = np.array(["rare", "common", "rare", "unseen", None], dtype=object)
    for dtype in ("string", "str"):
        arrow = {"b": pd.array(objects, dtype=dtype)}
        np.testing.assert_array_equal(model.weights_of(gamma5, arrow),
                                      model.weights_of(gamma5, {"b": objects}))
    with pytest.warns(UserWarning, match="tf_values"):
        model.apply(pairs)


def test_unfitted_model_errors():
    with pytest.raises(RuntimeError, match="not fitted"):
        FellegiSunter().bind({"a": "exact"}).weight_tables()
    with pytest.raises(ValueError, match="fitted on comparisons"):
        gamma, _ = draw_gamma(1000)
        FellegiSunter(levels=LEVELS).fit(_pairs_from_gamma(gamma)).bind({"zzz": "exact"})
    fitted = FellegiSunter(levels=LEVELS).fit(_pairs_from_gamma(gamma))
    names = [s.name for s in fitted.specs_]
    with pytest.raises(ValueError, match=rf"fitted on comparisons {re.escape(str(names))}, "
                                         r"in that order.*in the model's order"):
        fitted.bind(list(reversed(fitted.comparisons_)))


# ---------------------------------------------------------------------- supervised


def _labelled(n: int = 4000, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    gamma, match = draw_gamma(n, seed=seed)
    pairs = _pairs_from_gamma(gamma)
    rng = np.random.default_rng(seed)
    pairs["a"] = np.clip(pairs["a"] + rng.normal(0, 0.03, n), 0, 1)
    truth = pairs.loc[match, ["left_id", "right_id"]]
    return pairs, truth


def test_labels_from_truth_link_and_dedupe():
    pairs = pd.DataFrame({"left_id": [1, 2, 3], "right_id": [10, 20, 30]})
    truth = pd.DataFrame({"left_id": [1, 30], "right_id": [10, 3]})
    assert labels_from_truth(pairs, truth, dedupe=False).tolist() == [True, False, False]
    assert labels_from_truth(pairs, truth, dedupe=True).tolist() == [True, False, True]


def test_supervised_fit_reads_a_dedupe_s_truth_unordered_from_its_report():
    """A dedupe's truth lists (b, a) for the pair (a, b) about half the time: fit() took
    every such true pair for a non-match unless told dedupe=True."""
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    pairs = pd.DataFrame({"left_id": np.arange(0, 40, 2), "right_id": np.arange(1, 40, 2),
                          "a": rng.random(20)})
    truth = pairs.loc[pairs["a"] > 0.5, ["right_id", "left_id"]].set_axis(
        ["left_id", "right_id"], axis=1)  # every true pair the other way round
    with pytest.raises(ValueError, match="both matches and non-matches"):
        SupervisedModel("logistic").fit(pairs, truth, dedupe=False)  # the old default
    for mode in ("dedupe", None):  # the report says so; no report, no pair of equal ids
        pairs.attrs = {"erblock_report": {"mode": mode}} if mode else {}
        model = SupervisedModel("logistic").fit(pairs, truth)
        prob, true = model.predict_proba(pairs), (pairs["a"] > 0.5).to_numpy()
        assert prob[true].min() > prob[~true].max()  # learnt from the true pairs


@pytest.mark.parametrize("kind", ["logistic", "gradient_boosting"])
def test_supervised_fit_and_json(kind, tmp_path):
    pytest.importorskip("sklearn")
    pairs, truth = _labelled()
    params = {"n_estimators": 30, "max_depth": 3, "random_state": 0} \
        if kind == "gradient_boosting" else {}
    model = SupervisedModel(kind, **params).fit(pairs, truth)
    assert model.features_ == ["a", "b", "c"]
    prob = model.predict_proba(pairs)
    y = labels_from_truth(pairs, truth, dedupe=False)
    pred = prob >= 0.5
    assert (pred == y).mean() > 0.9
    loaded = load_model(model.to_json(tmp_path / "m.json"))
    assert isinstance(loaded, SupervisedModel)
    np.testing.assert_allclose(loaded.predict_proba(pairs), prob, rtol=1e-12)
    # erblock's own evaluation of the saved trees / coefficients equals scikit-learn's
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    from erblock.matchers.scoring.supervised import _features

    X = _features(pairs, ["a", "b", "c"])
    est = (GradientBoostingClassifier(**params) if kind == "gradient_boosting"
           else LogisticRegression(max_iter=1000)).fit(X, y)
    np.testing.assert_allclose(prob, est.predict_proba(X)[:, 1], rtol=1e-9, atol=1e-12)


def test_supervised_errors():
    pairs, truth = _labelled(200)
    with pytest.raises(ValueError, match="exactly one of truth"):
        SupervisedModel().fit(pairs)
    with pytest.raises(ValueError, match="kind must be one of"):
        SupervisedModel("forest")
    with pytest.raises(ValueError, match="must be fitted"):
        SupervisedModel().bind({"a": "exact"})
    pytest.importorskip("sklearn")
    saved = SupervisedModel().fit(pairs, truth).to_dict()
    saved["coef"] = saved["coef"][:-1]  # a hand-edited file: refused on load, not in matmul
    with pytest.raises(ValueError, match="coefficients where its features"):
        load_model(saved)


def test_score_threshold_round_trip():
    t = ScoreThreshold(0.7)
    assert load_model(t.to_json()).threshold == 0.7
    pairs = pd.DataFrame({"left_id": [1, 2], "right_id": [3, 4], "score": [0.9, 0.5]})
    assert t.predict(pairs).tolist() == [True, False]
    with pytest.raises(ValueError, match=r"threshold must be a number in \[0, 1\]"):
        ScoreThreshold(2)


# --------------------------------------------------------------------- worker side


def test_phase_one_sends_a_histogram_not_pairs():
    gamma, _ = draw_gamma(20_000, seed=8)
    pairs = _pairs_from_gamma(gamma)
    model = FellegiSunter(levels=LEVELS).bind([("a", "jaro_winkler"), ("b", "exact"),
                                               ("c", "jaro_winkler")])
    model.specs_ = tuple(LevelSpec(s.column, s.column, s.method, s.thresholds)
                         for s in model.specs_)
    by_pass = model.summarize(pairs)  # one histogram per key pass (here: no pass column)
    assert list(by_pass) == [0]
    hist = by_pass[0]
    assert isinstance(hist, PatternHistogram)
    assert hist.total == len(pairs)
    # bounded by the number of level vectors, not by the number of pairs
    assert len(hist.codes) <= math.prod(model.radix) == 4 * 3 * 5
    assert hist.nbytes <= 16 * math.prod(model.radix)


# ------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def people():
    from erblock.datasets import generate

    df, truth = generate(3000, kind="person", n_blocks=40, skew=None, dup_rate=0.3, seed=3)
    return df, truth


COMPARE = {"first_name": "jaro_winkler", "surname": "jaro_winkler", "dob": "levenshtein",
           "city": "jaro_winkler", "zip": "exact"}


def test_dedupe_em_end_to_end(client, people, monkeypatch):
    df, truth = people
    gathered: list = []
    real_gather = client.gather

    def spy(futures, *args, **kwargs):
        out = real_gather(futures, *args, **kwargs)
        gathered.append(out)
        return out

    monkeypatch.setattr(client, "gather", spy)
    pairs = erblock.dedupe(df, key="block_key", compare=COMPARE, scoring="em", client=client,
                           n_tasks=4)
    assert {"match_weight", "match_probability", "score"} <= set(pairs.columns)
    model = load_model(pairs.attrs["erblock_model"])
    assert isinstance(model, FellegiSunter) and model.fitted
    # the block key is independent of the compared columns: nothing set apart, nothing
    # detected, every m trained with u of random pairs
    assert [(s["deactivated"], s["detected"]) for s in model.sessions_] == [([], [])]
    assert model.m_source_ == ["em"] * 5
    m = erblock.evaluate(pairs, truth, threshold=0.5, score_column="match_probability",
                         n_left=len(df))
    assert m["pair_completeness"] == 1.0
    assert m["f1"] > 0.9, m
    # phase 1 gathered only histograms (tiny); pairs came back only in phase 2
    hist_batches = [g for g in gathered if isinstance(g, list) and g and isinstance(g[0], dict)
                    and all(isinstance(h, PatternHistogram) for h in g[0].values())]
    assert len(hist_batches) == 1
    hists = [h for task in hist_batches[0] for h in task.values()]
    assert sum(h.total for h in hists) == model.n_candidates_ == len(pairs)
    assert sum(h.nbytes for h in hists) < 0.05 * pairs.memory_usage().sum()
    report = RunReport.of(pairs)
    assert report.model["kind"] == "fellegi_sunter"
    assert report.pairs == len(pairs)


def test_fitted_model_scores_without_refitting(client, people, tmp_path):
    df, _ = people
    first = erblock.dedupe(df, key="block_key", compare=COMPARE, scoring="em", client=client,
                           n_tasks=3, sort=True)
    model = load_model(first.attrs["erblock_model"])
    again = erblock.dedupe(df, key="block_key", compare=COMPARE, scoring=model, client=client,
                           n_tasks=5, threshold=0.5, sort=True)
    assert "scoring_seconds" not in RunReport.of(again).settings  # one phase
    keep = first[first["match_probability"] >= 0.5].reset_index(drop=True)
    pd.testing.assert_frame_equal(again, keep, check_like=True)
    # the dict the pairs carry is a model too, as link's docstring says (it was refused)
    by_dict = erblock.dedupe(df, key="block_key", compare=COMPARE, client=client, n_tasks=5,
                             scoring=first.attrs["erblock_model"], threshold=0.5, sort=True)
    pd.testing.assert_frame_equal(by_dict, keep, check_like=True)
    # frames pandas derives from the pairs share the report and model, uncopied
    for name in ("erblock_model", "erblock_report"):
        assert keep.attrs[name] is first.attrs[name]
    with pytest.raises(TypeError, match="read-only"):
        first.attrs["erblock_model"]["lambda"] = 0.5
    first.to_parquet(tmp_path / "pairs.parquet")  # pandas writes attrs as JSON
    back = pd.read_parquet(tmp_path / "pairs.parquet")
    assert back.attrs["erblock_model"] == first.attrs["erblock_model"]
    assert load_model(back).to_dict() == model.to_dict()
    # written by the workers, with the model next to the parts
    lazy = erblock.dedupe(df, key="block_key", compare=COMPARE, scoring="em",
                          client=client, output=str(tmp_path / "out"), threshold=0.5)
    report = erblock.read_report(tmp_path / "out")
    written = pd.read_parquet(tmp_path / "out")
    assert len(written) == report.pairs and (written["match_probability"] >= 0.5).all()
    saved = load_model(tmp_path / "out" / "_erblock_model.json")
    assert isinstance(saved, FellegiSunter)
    # the Dask frame output= returns explains its pairs with the saved model: pair i is
    # the i-th of the computed frame, whichever partition holds it
    with pytest.raises(ValueError, match="_erblock_model.json"):
        erblock.explain_pair(lazy, 0)
    whole = lazy.compute()
    assert lazy.npartitions > 1
    for i in (0, len(whole) // 2, len(whole) - 1):
        pd.testing.assert_frame_equal(erblock.explain_pair(lazy, i, model=saved),
                                      erblock.explain_pair(whole, i, model=saved))
    with pytest.raises(IndexError, match=f"pair {len(whole)} of {len(whole)}"):
        erblock.explain_pair(lazy, len(whole), model=saved)


def test_em_with_tf_adjustment_end_to_end(client, people):
    df, truth = people
    model = FellegiSunter(tf_adjust="surname", u_pairs=200_000)
    pairs = erblock.dedupe(df, key="block_key", compare=COMPARE, scoring=model, client=client)
    assert model.fitted and list(model.tf_) == ["surname_jaro_winkler"]  # fitted in place
    assert model.tf_["surname_jaro_winkler"].sum() == pytest.approx(1.0)
    assert not [c for c in pairs.columns if c.startswith("_erb_")]
    m = erblock.evaluate(pairs, truth, threshold=0.5, score_column="match_probability",
                         n_left=len(df))
    assert m["f1"] > 0.9, m
    # the pairs lack the surnames the tf adjustment weighed: their waterfalls still add
    # up to each pair's own match weight (the rest is the value's term frequency)
    exact = np.flatnonzero(pairs["surname_jaro_winkler"].to_numpy() == 1.0)[:20]
    assert len(exact)
    for i in exact.tolist():
        steps = erblock.explain_pair(pairs, i)
        assert steps["cumulative"].iloc[-1] == pytest.approx(pairs["match_weight"].iloc[i])
        assert "term frequency" in steps.set_index("step").loc["surname_jaro_winkler", "level"]
    # another model's explanation is its own: no difference is passed off as a frequency
    other = load_model(pairs.attrs["erblock_model"])
    other.lambda_ = other.lambda_ / 10
    steps = erblock.explain_pair(pairs, int(exact[0]), model=other)
    assert "term frequency" not in " ".join(steps["level"])
    # fitted during that run: a second run scores with it as it is, and says so
    with pytest.warns(ModelWarning, match="fitted during an earlier run"):
        erblock.dedupe(df.iloc[:600], key="block_key", compare=COMPARE, scoring=model,
                       client=client)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelWarning)  # reused on purpose: no warning
        erblock.dedupe(df.iloc[:600], key="block_key", compare=COMPARE,
                       scoring=load_model(model.to_dict()), client=client)


def test_link_em_blocking_columns_refine_u(client):
    from erblock.datasets import load_dblp_acm

    dblp, acm, truth = load_dblp_acm()
    key = erblock.composite("year", erblock.token("title", 0))
    compare = {"title": "token_sort", "authors": "token_set", "venue": "token_set"}
    # the non-matches of one year and title word share an author 100 times as often as
    # random pairs (the same authors' papers): detected, and the fit is said to rest on
    # the venue alone
    with pytest.warns(ModelWarning, match=r"only \['venue_token_set'\] is free"):
        pairs = erblock.link(dblp, acm, key=key, compare=compare, client=client,
                             scoring=FellegiSunter(u_pairs=300_000))
    model = load_model(pairs.attrs["erblock_model"])
    # title is read by the blocking key: set apart (free u) in the only session
    assert model.sessions_[0]["deactivated"] == ["title_token_sort", "authors_token_set"]
    assert model.sessions_[0]["detected"] == ["authors_token_set"]
    assert model.m_source_ == ["em among candidates", "em among candidates", "em"]
    m = erblock.evaluate(pairs, truth, threshold=0.5, score_column="match_probability",
                         n_left=len(dblp), n_right=len(acm))
    assert m["f1"] > 0.9, m


def test_scoring_argument_is_checked(people):
    df, _ = people
    with pytest.raises(ValueError, match="did you mean 'em'"):
        erblock.dedupe(df, key="block_key", compare=COMPARE, scoring="emm")
    with pytest.raises(TypeError, match="scoring must be"):
        erblock.dedupe(df, key="block_key", compare=COMPARE, scoring=object())
    with pytest.raises(ValueError, match="must be fitted"):
        erblock.dedupe(df, key="block_key", compare=COMPARE, scoring=SupervisedModel())


def test_score_threshold_as_scoring(client, people):
    df, _ = people
    a = erblock.dedupe(df, key="block_key", compare=COMPARE, client=client,
                       scoring=ScoreThreshold(0.8), sort=True)
    b = erblock.dedupe(df, key="block_key", compare=COMPARE, client=client, threshold=0.8,
                       sort=True)
    pd.testing.assert_frame_equal(a, b)
    assert (a["score"] >= 0.8).all()


# --------------------------------------------------------------------- benchmark smoke


def test_random_pair_row_ranges_split_the_work_evenly():
    link = row_ranges(10, 7, 3)
    assert link[0][0] == 0 and link[-1][1] == 10
    assert all(a[1] == b[0] for a, b in zip(link, link[1:]))
    tri = row_ranges(1000, None, 4)
    work = [sum(1000 - 1 - i for i in range(a, b)) for a, b in tri]
    assert tri[0][0] == 0 and tri[-1][1] == 1000 and len(tri) == 4
    assert max(work) / min(work) < 1.05
    assert row_ranges(0, None, 4) == []


def test_quality_benchmark_quick_run(client, tmp_path, monkeypatch):
    """benchmarks/bench_quality.py --quick --no-peers: code paths only, not numbers."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_quality.py"
    spec = importlib.util.spec_from_file_location("_bench_quality", path)
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # dataclasses look the module up
    spec.loader.exec_module(bench)
    res = bench.main(["--quick", "--no-peers", "--out", str(tmp_path)], client=client)
    r = res["datasets"]["dblp_acm"]["systems"]["erblock"]
    assert r["candidates"] > 0 and 0 < r["default"]["f1"] <= 1
    assert (tmp_path / "quality.json").exists()
    assert "## Quality" in (tmp_path / "quality.md").read_text()


def test_labels_correct_an_em_run_through_its_match_weight(client):
    """The guide's recipe for a few labelled pairs: a logistic model fitted on a scored
    run's similarities *and* its match_weight, applied to the scored pairs. It reads the
    weight (changing it changes the probability); as ``scoring=`` of a run it is refused
    with a message that says how to use it, not as a mismatch of ``compare=``."""
    pytest.importorskip("sklearn")
    from erblock.datasets import generate

    df_r, df_s, *_ = generate(800, kind="person", task="link", dup_rate=0.5, seed=31)
    truth = pd.DataFrame({"left_id": df_r.index, "entity": df_r["entity_id"]}).merge(
        pd.DataFrame({"right_id": df_s.index, "entity": df_s["entity_id"]}), on="entity")
    compare = {"first_name": "name", "surname": "name", "dob": "date"}
    cols = list(compare)
    pairs = erblock.link(df_r[cols], df_s[cols], key=erblock.prefix("surname", 1),
                         compare=compare, scoring="em", client=client)
    sims = [f"{c}_{k}" for c, k in compare.items()]
    sample = pairs.sample(300, random_state=0)
    model = SupervisedModel("logistic").fit(sample, truth[["left_id", "right_id"]],
                                            features=[*sims, "match_weight"])
    decided = model.apply(pairs)
    assert len(decided) == len(pairs) and model.features_[-1] == "match_weight"
    lower = model.apply(pairs.assign(match_weight=pairs["match_weight"] - 5.0))
    assert (lower["match_probability"] < decided["match_probability"]).all()
    q = erblock.evaluate(decided[decided["match_probability"] >= 0.5],
                         truth[["left_id", "right_id"]])
    found = erblock.evaluate(pairs, truth[["left_id", "right_id"]])  # the candidates'
    assert q["precision"] >= 0.9 and q["tp"] >= 0.9 * found["tp"], (q, found)
    with pytest.raises(ValueError, match=r"apply this one to the scored pairs"):
        erblock.link(df_r[cols], df_s[cols], key=erblock.prefix("surname", 1),
                     compare=compare, scoring=model, client=client)
    # the decided pairs carry the model that weighed them, not the EM model (whose
    # waterfall took the new weight's difference for a term-frequency step)
    assert decided.attrs["erblock_model"] == model.to_dict()
    with pytest.raises(TypeError, match="explains a Fellegi-Sunter model's weights"):
        erblock.explain_pair(decided, 0)
    assert erblock.explain_pair(pairs, 0)["weight"].sum() == pytest.approx(
        pairs["match_weight"].iloc[0], abs=1e-6)
    # the key pass a pair was found by (match_key) is no similarity to learn from
    assert "match_key" in pairs.columns
    plain = SupervisedModel("logistic").fit(sample, truth[["left_id", "right_id"]])
    assert "match_key" not in plain.features_


def test_offline_tf_tables_are_checked_when_given_and_round_trip():
    """tf= keyed by a column's name (not the comparison's) was silently unused; shares
    of 0 (an unused category's value_counts) are kept and load again; counts that are
    not shares are refused when fitting, not when the saved model is loaded."""
    gamma, _ = draw_gamma(3000, seed=6)
    pairs = _pairs_from_gamma(gamma)
    shares = pd.Series({"x": 0.6, "y": 0.4, "unused": 0.0})
    model = FellegiSunter(levels=LEVELS, tf_adjust="b").fit(pairs, tf={"b": shares})
    assert load_model(model.to_json()).tf_["b"].to_dict() == shares.to_dict()
    with pytest.raises(ValueError, match=r"tf: 'nope' is no comparison of the model"):
        FellegiSunter(levels=LEVELS).fit(pairs, tf={"nope": shares})
    with pytest.raises(ValueError, match=r"value_counts\(normalize=True\)"):
        FellegiSunter(levels=LEVELS).fit(pairs, tf={"b": pd.Series({"x": 12, "y": 3})})


def test_supervised_inputs_that_would_score_wrongly_are_refused():
    """From a probe: gradient boosting with another loss or start scored wrongly (the
    saved trees are walked with log loss and a constant start); NaN or "yes" labels read
    as True; a saved model without its trees predicted NaN; features="col" was split
    into letters; a Dask frame or a truth array crashed without saying why."""
    pytest.importorskip("sklearn")
    import dask.dataframe as dd

    pairs, truth = _labelled(600)
    y = labels_from_truth(pairs, truth, dedupe=False)
    for bad in ({"loss": "exponential"}, {"init": "zero"}):
        with pytest.raises(ValueError, match="is not supported"):
            SupervisedModel("gradient_boosting", **bad)
    for labels, match in ((np.where(y, 1.0, np.nan), "bools or 0/1"),
                          (np.where(y, "yes", "no"), "bools or 0/1"),
                          ("yes", "one bool")):
        with pytest.raises((ValueError, TypeError), match=match):
            SupervisedModel().fit(pairs, labels=labels)
    shuffled = pd.Series(y, index=pairs.index).sample(frac=1.0, random_state=1)
    with pytest.raises(ValueError, match="a Series indexed differently from pairs"):
        SupervisedModel().fit(pairs, labels=shuffled)  # by position or by index? says so
    want = SupervisedModel().fit(pairs, labels=y).coef_
    for same in (shuffled.reindex(pairs.index), y.reshape(-1, 1), pd.DataFrame({"l": y}),
                 pd.array(y, dtype="boolean"), y.astype(int).tolist()):
        np.testing.assert_allclose(SupervisedModel().fit(pairs, labels=same).coef_, want)
    flagged = SupervisedModel().fit(pairs.assign(same=pairs["a"] > 0.5), labels=y,
                                    features=["a", "same"])  # a bool feature is 0/1
    assert flagged.features_ == ["a", "same"]
    with pytest.raises(TypeError, match="truth must be a frame of true pairs"):
        SupervisedModel().fit(pairs, y)
    with pytest.raises(TypeError, match=r"features must be a list .*features=\['a'\]"):
        SupervisedModel().fit(pairs, truth, features="a")
    with pytest.raises(ValueError, match=r"features: \['t'\] are not numeric"):
        SupervisedModel().fit(pairs.assign(t="x"), truth, features=["a", "t"])
    with pytest.raises(TypeError, match="Dask DataFrame"):
        SupervisedModel().fit(dd.from_pandas(pairs, npartitions=2), truth)
    with pytest.raises(ValueError, match="truth holds missing record ids"):
        SupervisedModel().fit(pairs, pd.concat([truth, pd.DataFrame(
            {"left_id": [np.nan], "right_id": [np.nan]})]))
    model = SupervisedModel("gradient_boosting", n_estimators=np.int64(5),
                            random_state=0).fit(pairs, truth)
    assert load_model(model.to_json()).params == {"n_estimators": 5, "random_state": 0}
    with pytest.raises(TypeError, match="threshold must be a number"):
        model.predict(pairs, threshold="0.5")
    saved = model.to_dict()
    for edit, match in ((lambda d: d.pop("trees"), "needs 'trees'"),
                        (lambda d: d.update(format=99), "format 99"),
                        (lambda d: d["trees"][0]["feature"].__setitem__(0, 99),
                         r"trees\[0\] is malformed")):
        d = json.loads(json.dumps(saved))
        edit(d)
        with pytest.raises(ValueError, match=match):
            load_model(d)


def test_saved_trees_split_as_scikit_learn_does_in_float32():
    """scikit-learn's trees compare float32 features with their thresholds: a float64
    feature between the two (here a match_weight) went the other way in erblock."""
    pytest.importorskip("sklearn")
    from sklearn.ensemble import GradientBoostingClassifier

    from erblock.matchers.scoring.supervised import _features

    pairs = pd.DataFrame({"left_id": range(40), "right_id": range(100, 140),
                          "f": np.r_[np.full(20, 0.1), np.full(20, 0.3)]})
    y = np.r_[np.zeros(20, bool), np.ones(20, bool)]
    model = SupervisedModel("gradient_boosting", n_estimators=1, max_depth=1).fit(
        pairs, labels=y)
    cut = float(model.trees_[0]["threshold"][0])
    probe = pairs.head(1).assign(f=np.nextafter(cut, 1.0))  # above it in float64 only
    est = GradientBoostingClassifier(n_estimators=1, max_depth=1).fit(
        _features(pairs, ["f"]), y)
    want = est.predict_proba(_features(probe, ["f"]))[:, 1]
    np.testing.assert_allclose(model.predict_proba(probe), want, rtol=1e-12)


def test_score_threshold_predicts_a_float32_score_at_it_as_the_run_kept_it():
    pairs = pd.DataFrame({"left_id": [1], "right_id": [2],
                          "score": np.array([0.7], dtype=np.float32)})
    assert ScoreThreshold(0.7).predict(pairs).tolist() == [True]
