"""A fitted Fellegi-Sunter model at its edges: pooling m over sessions, what a saved
model remembers, what it may be bound to, fits that must warn, and a refit that starts
clean. Each test fails on the code before its fix (review of the scoring code)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import erblock
from erblock.matchers.comparisons import Comparison
from erblock.matchers.levels import PatternHistogram
from erblock.matchers.scoring import FellegiSunter, ModelWarning, as_scoring, load_model, training
from erblock.matchers.scoring.explain import waterfall
from erblock.matchers.scoring.training import train

M = [np.array([0.05, 0.05, 0.9]), np.array([0.04, 0.08, 0.88]),
     np.array([0.1, 0.1, 0.8]), np.array([0.02, 0.13, 0.85])]
U = [np.array([0.95, 0.04, 0.01]), np.array([0.9, 0.08, 0.02]),
     np.array([0.7, 0.25, 0.05]), np.array([0.8, 0.15, 0.05])]
NAMES = list("abcd")


def _population(n: int = 1_000_000, lam: float = 0.005, seed: int = 0
                ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    match = rng.random(n) < lam
    g = np.empty((n, len(M)), np.int8)
    for k, (m, u) in enumerate(zip(M, U)):
        g[:, k] = np.where(match, rng.choice(3, size=n, p=m), rng.choice(3, size=n, p=u))
    return g, match


def _two_passes(g: np.ndarray) -> dict[int, np.ndarray]:
    """Pass 0 blocks on a's top level, pass 1 on b's (pairs found first by pass 0)."""
    first = g[:, 0] == 2
    return {0: first, 1: (g[:, 1] == 2) & ~first}


def _hist(g: np.ndarray) -> PatternHistogram:
    return PatternHistogram.from_gamma(g, [4] * len(M))


def test_pooled_m_counts_a_session_only_where_the_comparison_is_present():
    """c is missing in every pair pass 0 found: pass 0 learnt nothing of c's m, so the
    pooled m of c must be pass 1's (true m [0.1, 0.1, 0.8]), not an average with pass 0's
    untouched uniform start weighted by pass 0's many matches."""
    g, match = _population()
    ps = _two_passes(g)
    g = g.copy()
    g[ps[0], 2] = -1
    recall = match[ps[0] | ps[1]].sum() / match.sum()
    res = train({p: _hist(g[s]) for p, s in ps.items()}, U, [3] * 4, {0: {0}, 1: {1}},
                len(g), NAMES, recall=recall)
    np.testing.assert_allclose(res.m[2], M[2], atol=0.12)
    assert res.m[2][2] > 0.65
    assert res.m_source[2] == "em"


def test_a_random_pair_prior_that_does_not_settle_is_reported(monkeypatch):
    g, match = _population(300_000, seed=1)
    ps = _two_passes(g)
    monkeypatch.setattr(training, "LAMBDA_MAX_ITER", 1)
    res = train({p: _hist(g[s]) for p, s in ps.items()}, U, [3] * 4, {0: {0}, 1: {1}},
                len(g), NAMES)
    assert any("did not settle in 1 iterations" in w for w in res.warnings), res.warnings


def _pairs(n: int = 3000, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Candidate pairs (a third true) and random pairs, as similarities of three
    Jaro-Winkler comparisons (each level's representative similarity)."""
    rng = np.random.default_rng(seed)
    lv = np.array([0.0, 0.9, 1.0])

    def draw(k: int, p: list[np.ndarray]) -> np.ndarray:
        return np.stack([lv[rng.choice(3, size=k, p=p[j])] for j in range(3)], axis=1)

    match = rng.random(n) < 0.3
    sims = np.where(match[:, None], draw(n, M), draw(n, U))
    pairs = pd.DataFrame(sims, columns=list("abc"))
    pairs.insert(0, "right_id", range(n))
    pairs.insert(0, "left_id", range(n))
    return pairs, pd.DataFrame(draw(20_000, U), columns=list("abc"))


def _offline_model() -> tuple[FellegiSunter, pd.DataFrame]:
    pairs, rnd = _pairs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        model = FellegiSunter().fit(pairs, random_pairs=rnd, total_pairs=1e7)
    return model, pairs


def test_an_offline_fit_is_not_applied_to_a_run_s_first_pass_and_saves_that():
    """fit(pairs, random_pairs=...) learns a session from pairs no run key found: bound to
    a run's keys, the model must say so and score with λ of a random pair, and the saved
    model must score as the bound one did (it used to forget it had been told)."""
    model, pairs = _offline_model()
    x = pairs.iloc[:50].assign(match_key=np.int8(0))
    before = model.predict_proba(x)
    with pytest.warns(ModelWarning, match="blocking keys differ"):
        model.bind(model.comparisons_, keys=["k"])
    assert not model.use_passes
    bound = model.predict_proba(x)
    assert not np.allclose(before, bound), "the session's prior no longer applies"
    again = load_model(model.to_json())
    assert not again.use_passes
    np.testing.assert_array_equal(again.predict_proba(x), bound)
    # the explanation's prior is the one that scored the pair
    steps = waterfall(again, x.iloc[0])
    assert steps["level"][0] == f"λ = {again.lambda_:.3g}"


def test_the_waterfall_names_the_key_pass_prior_that_scored_the_pair():
    model, pairs = _offline_model()
    steps = waterfall(model, pairs.iloc[:1].assign(match_key=np.int8(0)))
    lam = model.sessions_[0]["lambda"]
    assert steps["level"][0] == f"λ = {lam:.3g} (its key pass)"


def test_a_fitted_model_refuses_other_comparisons_under_the_same_names():
    model, _ = _offline_model()
    other = [Comparison("email", "exact", name="a"), *model.comparisons_[1:]]
    with pytest.raises(ValueError, match=r"comparison 'a' was fitted as .*jaro_winkler.*"
                                         r"this run compares .*exact"):
        as_scoring(model, other)
    # the same comparisons (a mean score's weight aside) still bind
    same = [Comparison(c.column, c.method, weight=2.0, name=c.name)
            for c in model.comparisons_]
    assert as_scoring(model, same) is model


def test_a_fitted_model_binds_to_its_comparisons_written_another_way():
    """Options are compared as the method reads them: thresholds in another order, or a
    default (``tf=True`` of ``name``) written out, were "fitted as ... but this run
    compares ..."; a real difference still is."""
    pairs = pd.DataFrame({"left_id": range(4), "right_id": range(4),
                          "surname_name": [1.0, 0.9, 0.5, 0.95]})
    model = FellegiSunter(u_pairs=1000).fit(
        pairs, {"surname": {"method": "name", "thresholds": [0.9, 0.8]}})
    again = load_model(json.loads(json.dumps(model.to_dict())))
    for written in ({"method": "name", "thresholds": (0.8, 0.9), "tf": True},
                    {"method": "name", "thresholds": [0.9, 0.8], "weight": 3.0}):
        assert as_scoring(again, {"surname": written}) is again
    with pytest.raises(ValueError, match=r"fitted as .*'thresholds': \(0.9, 0.8\).*this run "
                                         r"compares .*'thresholds': \(0.9, 0.7\)"):
        as_scoring(again, {"surname": {"method": "name", "thresholds": [0.7, 0.9]}})
    with pytest.raises(ValueError, match=r"this run compares .*'tf': False"):
        as_scoring(again, {"surname": {"method": "name", "thresholds": [0.9, 0.8],
                                       "tf": False}})


def test_a_model_saved_with_older_key_reprs_still_binds_to_its_keys():
    """Keys given numpy numbers were written np.int64(4) in a model's pass keys; keys now
    hold Python numbers, so that model must still match them (a review found such models
    scoring every pair with the random-pair prior). A list option read back from JSON is
    the tuple the comparison was given (a CLI thresholds=0.9,0.8 model was refused)."""
    from erblock.blocking import sorted_neighbourhood

    model, _ = _offline_model()
    model.pass_keys_ = ["SortedNeighbourhood(key=Column(column='k', derived_from=()), "
                        "window=np.int64(4))"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelWarning)
        model.bind(model.comparisons_, keys=[sorted_neighbourhood("k", np.int64(4))])
    assert model.use_passes
    with pytest.warns(ModelWarning, match="blocking keys differ"):
        model.bind(model.comparisons_, keys=[sorted_neighbourhood("k", 5)])
    listed = Comparison("a", "name", options=(("thresholds", [0.9, 0.8]),))
    assert listed == Comparison("a", "name", options=(("thresholds", (0.9, 0.8)),))
    assert Comparison.from_dict(json.loads(json.dumps(listed.to_dict()))) == listed


def test_a_candidates_only_fit_warns_and_a_refit_starts_clean():
    pairs, rnd = _pairs()
    with pytest.warns(ModelWarning, match="did not converge in 1 iterations"):
        model = FellegiSunter(max_iter=1).fit(pairs)
    assert any("did not converge" in w for w in model.warnings_)
    model.max_iter = 1000
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelWarning)
        model.fit(pairs)
    assert model.warnings_ == [] and model.n_u_pairs_ == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        model.fit(pairs, random_pairs=rnd, total_pairs=1e7)
    assert model.n_u_pairs_ == len(rnd)
    model.fit(pairs)  # candidates only again: nothing of the random-pair fit is left
    assert model.n_u_pairs_ == 0 and model.pass_keys_ == [] and model.use_passes


def test_derivation_tests_each_comparison_s_own_right_column(client):
    """Two link comparisons read the same left column against different right columns:
    the key column is cut from R.name and S.name, not from S.note; the second comparison
    must be tested on its own columns, not take the first one's answer."""
    rng = np.random.default_rng(7)
    words = np.array(["alpha", "bravo", "delta", "gamma", "kilo", "lima", "oscar", "tango"])
    n = 400
    names = [" ".join(rng.choice(words, 3)) for _ in range(n)]
    note = ["".join(rng.choice(list("xyz"), 6)) for _ in range(n)]
    r = pd.DataFrame({"name": names})
    s = pd.DataFrame({"name": names, "note": note})
    r["k"], s["k"] = r["name"].str.split().str[0], s["name"].str.split().str[0]
    compare = [Comparison("name", "jaro_winkler", right_column="note", name="name_note"),
               Comparison("name", "jaro_winkler", name="name_name")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        pairs = erblock.link(r, s, key="k", compare=compare, scoring="em", client=client)
    settings = erblock.RunReport.of(pairs).settings
    assert settings["derived_keys"] == {"0": ["name"]}
    assert settings["scoring_seconds"]["summary_bytes"] > 0
    assert settings["scoring_seconds"]["random_summary_bytes"] > 0


def test_summary_of_a_key_pass_is_what_its_pairs_are_weighed_with(client):
    """summary(key_pass=i): the pass's λ and, on the comparisons its key selects on, its
    m and u; each comparison step of a pass's pair's waterfall is that table's weight at
    the pair's level (the model's own table would differ on the selected comparison)."""
    df, _ = erblock.datasets.generate(n=1_500, seed=3)
    pairs = erblock.dedupe(df, key=["surname", "dob"], client=client, scoring="em",
                           compare={"first_name": "jaro_winkler", "surname": "jaro_winkler",
                                    "dob": "date", "city": "exact"})
    model = load_model(pairs.attrs["erblock_model"])
    own = model.summary()
    assert own.attrs == {"lambda": model.lambda_, "key_pass": None, "related": False}
    for p, selected in ((0, "surname_jaro_winkler"), (1, "dob_date")):
        table = model.summary(key_pass=p)
        assert table.attrs["lambda"] == model.sessions_[p]["lambda"] != model.lambda_
        assert set(table.loc[table["m_source"] == f"key pass {p}", "comparison"]) >= {selected}
        assert not np.allclose(table["match_weight"], own["match_weight"])
        i = int(np.flatnonzero(pairs["match_key"].to_numpy() == p)[0])
        steps = waterfall(model, pairs.iloc[[i]]).iloc[1:]  # the prior first
        for step, label, weight in zip(steps["step"], steps["level"], steps["weight"]):
            row = table[(table["comparison"] == step) & (table["label"] == label)]
            if label.startswith("null"):  # a missing value is no evidence: no level
                assert row.empty and weight == 0.0
                continue
            assert row["match_weight"].item() == pytest.approx(weight)
    assert type(model.summary(key_pass=np.int64(1)).attrs["key_pass"]) is int  # parquet-able
    model.pass_keys_ = []  # as a model fitted on given pairs alone
    with pytest.raises(ValueError, match="fitted without key passes .* got 0"):
        model.summary(key_pass=0)
    model.pass_keys_ = ["a", "b"]
    for bad in (2, -1, True, "0"):
        with pytest.raises(ValueError, match="key_pass must be the index of one of the "
                                             r"model's 2 key pass\(es\)"):
            model.summary(key_pass=bad)
