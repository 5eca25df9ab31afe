"""A blocking that opens with an identifier pass (an e-mail, a national id) finds every
match there; the later passes hold none. Their sessions were the "sane" ones and the
identifier's, λ_s near 1, was set aside: m came from non-matches and the default decision
collapsed (F1 0.000 on the probe's link, 0.999 with the passes swapped)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

import erblock
from erblock.blocking import soundex
from erblock.matchers.scoring.sessions import Session, distrust

# -- the rule, on sessions ----------------------------------------------------------------

U = [np.array([0.95, 0.05]), np.array([0.9, 0.1]), np.array([0.97, 0.03])]
#: matches: most agree on every comparison (about 9 bits over the three)
STRONG = {0: np.array([0.2, 0.8]), 1: np.array([0.25, 0.75]), 2: np.array([0.1, 0.9])}
#: what EM splits off non-matches: barely above the random pairs (well under a bit)
WEAK = {0: np.array([0.9, 0.1]), 1: np.array([0.85, 0.15]), 2: np.array([0.95, 0.05])}


def _session(m: dict[int, np.ndarray], lam: float, passes: tuple[int, ...]) -> Session:
    return Session(passes, (), pairs=10_000, lam=lam, trained=True, m=m,
                   seen_matches=dict.fromkeys(m, 1000.0))


def test_a_degenerate_fit_is_believed_only_when_every_other_fit_is_far_weaker():
    ident, later = _session(STRONG, 0.999, (0,)), _session(WEAK, 0.2, (1,))
    assert distrust([ident, later], U) == [later]
    assert later.set_aside == "no evidence" and ident.trusted and ident.set_aside == ""
    # a degenerate fit that took a comparison its key fixes for evidence: its "matches"
    # agree on little else, the other pass's matches on everything: set aside, as before
    wrong, real = _session(WEAK, 0.98, (0,)), _session(STRONG, 0.01, (1,))
    assert distrust([wrong, real], U) == [wrong] and wrong.set_aside == "degenerate"
    # both found matches: the degenerate one is set aside, as before
    a, b = _session(STRONG, 0.97, (0,)), _session(STRONG, 0.02, (1,))
    assert distrust([a, b], U) == [a] and a.set_aside == "degenerate"
    # one real session beside a weak one is enough to keep the old rule
    c, d, e = (_session(STRONG, 0.99, (0,)), _session(WEAK, 0.3, (1,)),
               _session(STRONG, 0.05, (2,)))
    assert distrust([c, d, e], U) == [c]
    # compared only on the comparisons both hold free: a weak fit is not "weaker" for
    # lacking a comparison its key selects on
    f = _session({0: STRONG[0]}, 0.2, (1,))
    g = _session(STRONG, 0.99, (0,))
    assert distrust([g, f], U) == [g]


# -- the run --------------------------------------------------------------------------------

FIRST = ["james", "mary", "john", "patricia", "robert", "jennifer", "michael", "linda",
         "william", "elizabeth", "david", "barbara", "richard", "susan", "joseph", "jessica"]
SUR = ["smith", "johnson", "williams", "brown", "jones", "garcia", "miller", "davis",
       "rodriguez", "martinez", "hernandez", "lopez", "gonzalez", "wilson", "anderson",
       "thomas", "taylor", "moore", "jackson", "martin", "lee", "perez", "thompson"]
CITY = ["london", "leeds", "paris", "berlin", "madrid", "rome", "vienna", "porto"]


def _people(n: int, rng: np.random.Generator) -> pd.DataFrame:
    dob = pd.Timestamp("1940-01-01") + pd.to_timedelta(rng.integers(0, 60 * 365, n), unit="D")
    return pd.DataFrame({
        "first_name": rng.choice(FIRST, n), "surname": rng.choice(SUR, n),
        "dob": dob.strftime("%Y-%m-%d"), "city": rng.choice(CITY, n),
        "email": [f"user{x}@example.com" for x in rng.integers(0, 10**7, n)]})


def _swap(v: str, i: int) -> str:
    return v[:i] + v[i + 1] + v[i] + v[i + 2:]


def _link(n: int = 1200, n_match: int = 600, seed: int = 5
          ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two registers sharing ``n_match`` people, whose e-mail is the same in both (the
    identifier); a quarter of each other field holds a typo."""
    rng = np.random.default_rng(seed)
    r = _people(n, rng)
    s = pd.concat([r.iloc[:n_match].copy(), _people(n - n_match, rng)], ignore_index=True)
    for c in ("first_name", "surname", "dob", "city"):
        rows = np.flatnonzero(rng.random(n_match) < 0.25)
        s.loc[rows, c] = [_swap(v, int(rng.integers(0, len(v) - 1))) for v in s.loc[rows, c]]
    r.index = pd.RangeIndex(0, n, name="id")
    s.index = pd.RangeIndex(10_000, 10_000 + n, name="id")
    truth = pd.DataFrame({"left_id": r.index[:n_match], "right_id": s.index[:n_match]})
    return r, s, truth


def test_an_identifier_pass_first_scores_as_well_as_last(client):
    r, s, truth = _link()
    compare = {"first_name": "name", "surname": "name", "dob": "date", "city": "name",
               "email": "email"}
    f1 = {}
    for name, key in (("first", ["email", soundex("surname")]),
                      ("last", [soundex("surname"), "email"])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pairs = erblock.link(r, s, key=key, compare=compare, scoring="em", client=client)
        f1[name] = erblock.evaluate(pairs, truth, threshold=0.5)["f1"]
        if name == "first":
            said = [str(w.message) for w in caught]
            sessions = pairs.attrs["erblock_model"]["params"]["sessions"]
    assert f1["first"] >= 0.99 and f1["last"] >= 0.99, f1
    assert any("passes [1]: the pairs it calls matches agree far less" in w
               for w in said), said
    assert [s_["set_aside"] for s_ in sessions] == [None, "no evidence"]
    from erblock.report_model import _used

    assert [_used(s_) for s_ in sessions] == [
        "yes", "<b>no</b> (its matches agreed far less than those of a pass that found them)"]
