"""A session whose "matches" are related records is set aside (inverted fits).

A register with households: members of one household share the postcode, street and
phone, have different given names and, being partners, the same sex less often than two
random records do. A second pass keyed on the postcode finds them by the thousand next to
a few true matches, and EM on that pass calls them matches. No set of matches agrees on
a comparison less often than random pairs do, so such a fit must not give the model its
m: the session is marked ``inverted``, not trusted, and warned about.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from erblock.matchers.levels import PatternHistogram
from erblock.matchers.scoring.sessions import Session, distrust, inverted
from erblock.matchers.scoring.training import train

NAMES = ["given_name", "postcode", "street", "phone", "sex"]
M = [np.array([0.05, 0.05, 0.9]), np.array([0.05, 0.05, 0.9]),
     np.array([0.1, 0.1, 0.8]), np.array([0.1, 0.05, 0.85]), np.array([0.01, 0.99])]
U = [np.array([0.95, 0.04, 0.01]), np.array([0.97, 0.02, 0.01]),
     np.array([0.98, 0.015, 0.005]), np.array([0.99, 0.008, 0.002]), np.array([0.5, 0.5])]
#: members of one household: other given names, the same address and phone, partners
HOUSEHOLD = [np.array([0.9, 0.1, 0.0]), np.array([0.0, 0.0, 1.0]),
             np.array([0.05, 0.05, 0.9]), np.array([0.1, 0.05, 0.85]), np.array([0.6, 0.4])]
N_PAIRS = 1_000_000
LAM, RELATED = 0.002, 0.006  # shares of all pairs: matches, household members
M_TOL = 0.03


def _register(ms: list[np.ndarray], hs: list[np.ndarray], us: list[np.ndarray],
              seed: int, related: float = RELATED, first_key: int = 0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Level vectors of the pairs two passes find (exact agreement on comparison
    ``first_key``, the given name by default, then on the postcode), the pass of each and
    which are matches (kind 0) or household members (kind 1), drawn from the classes'
    level shares ``ms``, ``hs`` and ``us``."""
    rng = np.random.default_rng(seed)
    x = rng.random(N_PAIRS)
    kind = np.where(x < LAM, 0, np.where(x < LAM + related, 1, 2))
    gamma = np.empty((N_PAIRS, len(ms)), dtype=np.int8)
    for k, dists in enumerate(zip(ms, hs, us)):
        draws = [rng.choice(len(p), size=N_PAIRS, p=p) for p in dists]
        gamma[:, k] = np.choose(kind, draws)
    first = gamma[:, first_key] == len(ms[first_key]) - 1
    found = first | (gamma[:, 1] == len(ms[1]) - 1)
    return gamma[found], np.where(first, 0, 1)[found].astype(np.int8), kind[found]


def _draw(households: bool, seed: int = 3) -> dict[int, PatternHistogram]:
    """Per-pass histograms of the three-level register."""
    gamma, passes, _ = _register(M, HOUSEHOLD, U, seed, RELATED if households else 0.0)
    radix = [len(m) + 1 for m in M]
    return {p: PatternHistogram.from_gamma(gamma[passes == p], radix) for p in (0, 1)}


def _train(households: bool, seed: int = 3):
    return train(_draw(households, seed), U, [len(m) for m in M], {0: {0}, 1: {1}}, N_PAIRS, NAMES)


def _session(**kw: object) -> Session:
    base: dict[str, object] = dict(passes=(0,), blocked=(), pairs=10_000, lam=0.2,
                                   trained=True)
    base.update(kw)
    return Session(**base)  # type: ignore[arg-type]


def test_a_pass_that_finds_households_is_set_aside():
    res = _train(households=True)
    s0, s1 = (next(s for s in res.sessions if s.passes == (p,)) for p in (0, 1))
    assert s1.trained and s1.inverted == (4,) and not s1.trusted
    assert s0.trusted and s0.inverted == ()
    assert any("passes [1]" in w and "related records" in w and "sex" in w
               for w in res.warnings)
    # m comes from the session that found matches (sex: the same 99 % of the time)
    for k in (2, 3, 4):
        np.testing.assert_allclose(res.m[k], M[k], atol=M_TOL, err_msg=NAMES[k])
    d = s1.to_dict(NAMES)
    assert d["inverted"] == ["sex"] and d["set_aside"] == "inverted"
    # a known limit: the given name's m now comes only from the first pass, whose key
    # leaves its exact level alone, so its m is all exact (truth: 0.9); the household
    # pass's pairs, scored with it, pay for their other given names in full
    assert res.m_source[0] == "em among candidates" and res.m[0][-1] > 0.99


@pytest.mark.parametrize("seed", [3, 4])
def test_without_households_no_session_is_inverted(seed):
    res = _train(households=False, seed=seed)
    assert all(s.trusted and s.inverted == () for s in res.sessions)
    assert not any("related records" in w for w in res.warnings)


def test_inverted_needs_a_significant_and_material_gap():
    u = [np.array([0.001, 0.999]), np.array([0.5, 0.5]), np.array([0.99, 0.01])]
    # a near-constant column: matches 99.7 % where random pairs agree 99.9 %, on 5,000
    # expected matches (significant, not material); sex at 42 % vs 50 % (both); a rare
    # agreement at 0.4 % vs 1 % (under half)
    s = _session(m={0: np.array([0.003, 0.997]), 1: np.array([0.58, 0.42]),
                    2: np.array([0.996, 0.004])},
                 seen_matches={0: 5000.0, 1: 5000.0, 2: 5000.0})
    assert inverted(s, u) == (1, 2)
    # too few matches to tell: not significant
    few = _session(m={1: np.array([0.58, 0.42])}, seen_matches={1: 50.0})
    assert inverted(few, u) == ()


def test_distrust_reasons():
    u = [np.array([0.5, 0.5])]
    inv = {"m": {0: np.array([0.6, 0.4])}, "seen_matches": {0: 5000.0}}
    ok = {"m": {0: np.array([0.01, 0.99])}, "seen_matches": {0: 5000.0}}
    plain, household = _session(**ok), _session(passes=(1,), **inv)
    degenerate = _session(passes=(2,), lam=0.95, **inv)  # both: degenerate wins
    out = distrust([plain, household, degenerate], u)
    assert out == [household, degenerate]
    assert (household.set_aside, degenerate.set_aside) == ("inverted", "degenerate")
    assert plain.trusted and plain.set_aside == ""
    # no plain session left: nothing is set aside for inversion (nothing better to use)
    a, b = _session(**inv), _session(passes=(1,), **inv)
    assert distrust([a, b], u) == [] and a.inverted == (0,)
    # without u only the degenerate rule applies, as before
    c, d = _session(**inv), _session(passes=(1,), lam=0.95, **inv)
    assert distrust([c, d]) == [d] and c.inverted == ()


# -- the third class: scoring the household pass ---------------------------------------

#: the same register with exact comparisons only (two levels each): a fitted model
NAMES2 = [*NAMES, "dob"]
M2 = [np.array([0.1, 0.9]), np.array([0.1, 0.9]), np.array([0.2, 0.8]),
      np.array([0.15, 0.85]), np.array([0.01, 0.99]), np.array([0.05, 0.95])]
U2 = [np.array([0.99, 0.01]), np.array([0.99, 0.01]), np.array([0.995, 0.005]),
      np.array([0.998, 0.002]), np.array([0.5, 0.5]), np.array([0.999, 0.001])]
H2 = [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.1, 0.9]),
      np.array([0.15, 0.85]), np.array([0.6, 0.4]), np.array([0.98, 0.02])]


@pytest.fixture(scope="module")
def household_model():
    from erblock.matchers.scoring import FellegiSunter

    gamma, passes, kind = _register(M2, H2, U2, seed=5)
    model = FellegiSunter().bind({n: "exact" for n in NAMES2})
    hists = {p: PatternHistogram.from_gamma(gamma[passes == p], model.radix) for p in (0, 1)}
    with pytest.warns(UserWarning, match="related records"):
        model._fit(hists, U2, {0: {0}, 1: {1}}, N_PAIRS)
    names = [s.name for s in model.specs_ or ()]
    pairs = pd.DataFrame(gamma.astype(np.float64), columns=names)
    pairs["match_key"] = passes
    return model, pairs, kind


def test_the_household_pass_is_scored_with_three_classes(household_model):
    model, pairs, kind = household_model
    s1 = next(s for s in model.sessions_ if s["passes"] == [1])
    assert s1["set_aside"] == "inverted" and s1["related"]["converged"]
    pi = s1["related"]["pi"]
    second = pairs["match_key"].to_numpy() == 1
    # the related class holds the households, the match class the few true matches
    assert pi[1] == pytest.approx((kind[second] == 1).mean(), rel=0.1)
    assert pi[0] == pytest.approx((kind[second] == 0).mean(), rel=0.3)
    decided = model.predict(pairs)
    true = kind == 0

    def f1(d: np.ndarray, sel: np.ndarray) -> float:
        return 2 * (d & true & sel).sum() / ((d & sel).sum() + (true & sel).sum())

    # the postcode pass: as good as the true three-class model (its pairs hold only
    # other given names and the same postcode: those levels are certain in every class)
    gamma = pairs[[s.name for s in model.specs_ or ()]].to_numpy().astype(np.int64)
    like = [np.prod([dists[k][gamma[:, k]] for k in range(2, len(NAMES2))], axis=0)
            for dists in (M2, H2, U2)]
    share = [(kind[second] == c).mean() for c in range(3)]
    oracle = share[0] * like[0] / sum(q * lk for q, lk in zip(share, like)) >= 0.5
    assert f1(decided, second) >= f1(oracle, second) - 0.03
    assert f1(decided, ~second) > 0.9  # the given-name pass (no household there)
    # λ of a random pair counts the matches, not the households
    assert model.lambda_ == pytest.approx(true.sum() / N_PAIRS, rel=0.15)


def test_related_term_in_the_waterfall_and_through_json(household_model):
    from erblock import load_model
    from erblock.matchers.scoring.explain import RELATED as TERM
    from erblock.matchers.scoring.explain import waterfall

    model, pairs, kind = household_model
    scored = model.apply(pairs)
    member = int(np.flatnonzero((kind == 1) & (pairs["match_key"].to_numpy() == 1))[0])
    steps = waterfall(model, pairs.iloc[[member]])
    assert TERM in set(steps["step"])
    assert steps["cumulative"].iloc[-1] == pytest.approx(scored["match_weight"].iloc[member])
    # the first pass is scored with three classes too, but no household shares a given
    # name there: its related share is nil, and so is the term
    s0 = next(s for s in model.sessions_ if s["passes"] == [0])
    assert s0["set_aside"] is None and s0["related"]["pi"][1] < 1e-3
    first = int(np.flatnonzero(pairs["match_key"].to_numpy() == 0)[0])
    steps = waterfall(model, pairs.iloc[[first]]).set_index("step")
    assert abs(steps.loc[TERM, "weight"]) < 0.05
    again = load_model(model.to_json())
    np.testing.assert_allclose(again.apply(pairs)["match_weight"], scored["match_weight"])


def test_related_term_uses_the_term_frequency_of_the_pair():
    """With tf, a non-match's chance of the exact level is the value's frequency: the
    related records' term must compare them with that, as the rest of the weight does."""
    from erblock.matchers.scoring.related import related_weight

    gamma = np.array([[1, 1], [1, 0]], dtype=np.int8)
    pi, r, u = [0.01, 0.09, 0.9], [np.array([0.2, 0.8])] * 2, [np.array([0.99, 0.01])] * 2
    tf_bits = np.array([3.0, 0.0])  # the first pair's value: 8 times rarer than u says
    got = related_weight(gamma, pi, r, u, tf_bits)
    pu = np.array([0.01 * 0.01 / 8, 0.01 * 0.99])
    pr = np.array([0.8 * 0.8, 0.8 * 0.2])
    np.testing.assert_allclose(got, -np.log2(1 + pi[1] * pr / (pi[2] * pu)))


@pytest.mark.parametrize("same_postcode", [1.0, 0.8])
def test_households_that_another_pass_finds_are_scored_with_three_classes(same_postcode):
    """Twins share the date of birth: a pass keyed on it finds them next to the matches,
    with the household's address and phone. Scored with two classes, those agreements
    make them matches; the related records learnt on the postcode pass are held there
    too, and only the classes' shares are fitted, and the related records' postcode
    (which the postcode pass could not learn: its key fixes it) where some have moved."""
    from erblock.matchers.scoring import FellegiSunter

    hs = [H2[0], np.array([1 - same_postcode, same_postcode]), *H2[2:]]
    gamma, passes, kind = _register(M2, hs, U2, seed=6, first_key=5)
    model = FellegiSunter().bind({n: "exact" for n in NAMES2})
    hists = {p: PatternHistogram.from_gamma(gamma[passes == p], model.radix) for p in (0, 1)}
    with pytest.warns(UserWarning, match="related records"):
        model._fit(hists, U2, {0: {5}, 1: {1}}, N_PAIRS)
    first = passes == 0
    s0 = next(s for s in model.sessions_ if s["passes"] == [0])
    assert s0["set_aside"] is None and s0["related"]["converged"]
    assert s0["related"]["pi"][1] == pytest.approx((kind[first] == 1).mean(), rel=0.3)
    pairs = pd.DataFrame(gamma.astype(np.float64), columns=[s.name for s in model.specs_ or ()])
    pairs["match_key"] = passes
    decided = model.predict(pairs)[first]
    true, g = kind[first] == 0, gamma[first].astype(np.int64)
    assert (kind[first] == 1).sum() > 50  # the twins are there to be told apart
    # the true three-class model of the pass's pairs (the key's comparison left out)
    share = [(kind[first] == c).mean() for c in range(3)]
    like = [np.prod([d[k][g[:, k]] for k in range(len(NAMES2)) if k != 5], axis=0)
            for d in (M2, hs, U2)]
    oracle = share[0] * like[0] / sum(q * lk for q, lk in zip(share, like)) >= 0.5

    def precision(d: np.ndarray) -> float:
        return float((d & true).sum() / d.sum())

    # as precise as the truth allows (0.97: twins of one sex differ only in the given
    # name); two classes took every twin for a match (0.94)
    assert precision(decided) >= precision(oracle) - 0.01
    assert (decided & true).sum() >= (oracle & true).sum() - 10


@pytest.mark.parametrize("same_dob", [0.1, 0.3])
def test_m_is_learnt_from_three_classes(same_dob):
    """A pass keyed on the date of birth finds household members who share it (twins,
    and here many more) next to the matches; its two-class fit counts them as matches,
    and they have other given names and, partners, other sexes: m of the given name fell
    to 0.71 (10 %) and 0.48 (30 %) where the truth is 0.90. m is pooled again from the
    three-class fits (erblock/matchers/scoring/third_class.py)."""
    hs = [*H2[:5], np.array([1 - same_dob, same_dob])]
    gamma, passes, _ = _register(M2, hs, U2, seed=6, first_key=5)
    radix = [len(m) + 1 for m in M2]
    hists = {p: PatternHistogram.from_gamma(gamma[passes == p], radix) for p in (0, 1)}
    res = train(hists, U2, [len(m) for m in M2], {0: {5}, 1: {1}}, N_PAIRS, NAMES2)
    assert any("related records" in w for w in res.warnings)
    assert not any("did not converge" in w for w in res.warnings)
    # given name and sex tell related records apart; street, phone and the postcode
    # (which the date-of-birth pass learns: the postcode pass's key fixed it) do not
    for k in (0, 1, 2, 3, 4):
        np.testing.assert_allclose(res.m[k], M2[k], atol=M_TOL, err_msg=NAMES2[k])
    # the model says so (the date of birth, which every key selects on, is not pooled)
    assert res.m_source == ["em, three classes"] * 5 + ["em among candidates"]
    # the date-of-birth pass is scored with the m the model reports
    s0 = next(s for s in res.sessions if s.passes == (0,))
    for k in (0, 1, 2, 3, 4):
        np.testing.assert_allclose(s0.related["m"][k], res.m[k], err_msg=NAMES2[k])


def test_the_report_shows_the_prior_a_three_class_pass_is_scored_with():
    """The HTML sessions table showed the two-class EM λ of a session, not the prior its
    pairs are weighed with when it has three classes: π_M / (π_M + π_U)."""
    from erblock.matchers.scoring.weights import pass_sessions, prior
    from erblock.report_model import _session_lambda, _sessions_table

    s = {"passes": [2], "trained": True, "trusted": False, "lambda": 0.1014,
         "related": {"pi": [0.0001, 0.3, 0.6999], "m": {}, "u": {}, "r": {}}}
    used = pass_sessions([s])[2]["lambda"]
    assert _session_lambda(s) == pytest.approx(used, rel=1e-12)
    assert prior(_session_lambda(s)) == pytest.approx(prior(used))
    assert "0.1014" not in _sessions_table([s])
    assert _session_lambda({"lambda": 0.25}) == 0.25  # two classes: its own λ


def test_explain_pair_says_that_i_is_a_position():
    from erblock.matchers.scoring import explain_pair

    pairs = pd.DataFrame({"left_id": [51], "right_id": [7], "match_weight": [1.0]})
    for bad in ("51", 1.5, True):
        with pytest.raises(TypeError, match="i must be the pair's position"):
            explain_pair(pairs, bad, model={"kind": "fellegi_sunter"})


def _edited(model, edit):
    d = json.loads(model.to_json())
    edit(d)
    return d


def _session_with(d, key):
    return next(s for s in d["params"]["sessions"] if s.get(key))


@pytest.mark.parametrize("edit, message", [
    (lambda d: _session_with(d, "related")["related"]["m"].update(
        {k: [0.0] * (len(v) - 1) + [55.0] for k, v in
         _session_with(d, "related")["related"]["m"].items()}),
     r"related\.m\[.*summing to 1"),
    (lambda d: _session_with(d, "lambda").update(**{"lambda": 1.0}),
     r"sessions\[\d\]\.lambda must be in \(0, 1\), got 1\.0"),
    (lambda d: _session_with(d, "related")["related"].update(pi=[0.5, 0.5]),
     r"related\.pi .* must be 3 probabilities"),
    (lambda d: _session_with(d, "related")["related"]["r"].pop(d["specs"][-1]["name"]),
     r"related\.r lacks the comparison\(s\) \['\w+'\]"),
    (lambda d: _session_with(d, "related").update(deactivated=["nope"]),
     r"deactivated: \['nope'\] are no comparisons of the model"),
    (lambda d: _session_with(d, "m_selected")["m_selected"].update(
        nope=_session_with(d, "m_selected")["m_selected"].popitem()[1]),
     r"m_selected and u_selected must name the same comparisons"),
    (lambda d: d["params"]["m"][0].__setitem__(0, 0.9), r"params\.m of .* summing to 1"),
    (lambda d: d["settings"].update(foo=1), r"unknown setting\(s\) \['foo'\]"),
    (lambda d: d["params"].pop("u"), r"malformed \(KeyError: 'u'\)"),
    (lambda d: d.update(comparisons=[]), r"one entry of 'comparisons' per entry of 'specs'"),
    (lambda d: d.update(tf={d["specs"][0]["name"]: {"values": ["ann"], "freq": [-0.1]}}),
     r"tf\['\w+'\]: term frequencies must be each value's share of the records"),
    (lambda d: d.update(tf={d["specs"][0]["name"]: {"values": ["ann"], "freq": [7.0]}}),
     r"in \[0, 1\] \(value_counts\(normalize=True\)\)"),
])
def test_an_edited_model_file_is_refused_when_loaded(household_model, edit, message):
    """A hand-edited model's per-session parameters were never checked: a related
    records' m of 55 scored silently wrong, a session λ of 1 failed in the workers with
    'math domain error', a shortened π with an IndexError."""
    from erblock import load_model

    model, pairs, _ = household_model
    assert load_model(model.to_json()).to_dict() == model.to_dict()  # intact: loads
    with pytest.raises(ValueError, match=message):
        load_model(_edited(model, edit))


def test_a_waterfall_with_a_long_step_label_is_drawn_whole(tmp_path):
    """A groups step names all its comparisons: the label was one line longer than the
    figure, tight_layout gave up with a warning (an error here) and cut the labels off."""
    from PIL import Image

    from erblock.matchers.scoring import plot_waterfall

    long = ("scored together: house_number_exact, street_text, suburb_name, "
            "postcode_postcode, phone_phone (μ = 0.143 of matches differ on all)")
    steps = [{"step": "prior", "level": "λ = 0.105 (its key pass)", "weight": -3.1},
             {"step": "groups", "level": long, "weight": -0.22},
             *({"step": f"c{i}", "level": "Jaro-Winkler >= 0.92", "weight": 1.0}
               for i in range(6))]
    path = plot_waterfall(steps, tmp_path / "w.png", title="a ~ b")
    with Image.open(path) as im:
        assert im.size[0] > 400 and im.size[1] > 300


def test_squarem_three_class_fit_ends_where_plain_em_does():
    """The three-class EM's SQUAREM cycles reach plain EM's fixed point (π, r and the free
    u) in fewer EM steps; the held m and u stay as given."""
    from erblock.matchers.scoring.related import fit_related

    gamma, _, kind = _register(M, HOUSEHOLD, U, 3)
    hist = PatternHistogram.from_gamma(gamma, [len(m) + 1 for m in M])
    start = [np.full(len(m), 1 / len(m)) for m in M]
    free_u = [False, True, False, False, False]
    lam = float((kind < 2).mean())

    def plain_and_fast(atol, **kw):
        plain = fit_related(hist, M, U, start, free_u, lam, tol=1e-8, max_iter=50_000,
                            accelerate=False, **kw)
        fast = fit_related(hist, M, U, start, free_u, lam, tol=1e-8, max_iter=50_000, **kw)
        assert plain["converged"] and fast["converged"]
        assert fast["n_iter"] < plain["n_iter"], (fast["n_iter"], plain["n_iter"])
        np.testing.assert_allclose(fast["pi"], plain["pi"], atol=atol)
        for a, b in zip(fast["m"] + fast["r"] + fast["u"],
                        plain["m"] + plain["r"] + plain["u"]):
            np.testing.assert_allclose(a, b, atol=atol)
        return fast

    fast = plain_and_fast(1e-7)
    for k in (0, 2, 3, 4):
        np.testing.assert_array_equal(fast["u"][k], U[k])
    for a, b in zip(fast["m"], M):
        np.testing.assert_array_equal(a, b)
    # as the third-class refits run it: m free off the key's comparisons, r learnt on them
    fast = plain_and_fast(1e-6, free_m=[False, False, True, True, True],
                          free_r=[True, True, False, False, False])
    assert not np.array_equal(fast["m"][2], M[2])  # learnt
    for k in (2, 3, 4):
        np.testing.assert_array_equal(fast["r"][k], start[k])  # held


def test_shares_reach_what_plain_steps_crawl_to():
    """With the classes' distributions held, the shares' accelerated EM ends at a
    likelihood at least that of 2,000 plain steps, where a share running to 0 crawls
    (200 plain steps fell short of it), and the posteriors are the rows' weights split."""
    from erblock.matchers.levels import PROB_FLOOR
    from erblock.matchers.scoring.related import PI_STEPS, _shares

    rng = np.random.default_rng(4)
    a, b = rng.random(300), rng.random(300)  # class 1 nearly class 0: its share crawls
    like = np.column_stack([a, a * (0.9 + 0.1 * rng.random(300)), b])
    w = rng.integers(1, 50, 300).astype(float)

    def loglik(p):
        return float(w @ np.log(like @ np.clip(p, PROB_FLOOR, 1.0)))

    def plain(steps):
        p = np.full(3, 1 / 3)
        for _ in range(steps):
            c = np.clip(p, PROB_FLOOR, 1.0)
            p = c * (like.T @ (w / (like @ c))) / w.sum()
        return p

    pi, post = _shares(like, w, np.full(3, 1 / 3))
    assert loglik(pi) >= loglik(plain(2_000)) - 1e-9 * abs(loglik(pi))
    assert loglik(pi) > loglik(plain(PI_STEPS)) + 1e-6
    assert pi.min() >= 0 and pi.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(post.sum(axis=1), w)
