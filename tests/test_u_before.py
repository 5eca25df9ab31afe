"""u of a later key pass leaves out the random pairs an earlier pass would find.

A pass's candidates are the pairs its key finds and no earlier key did, so its
non-matches never agree on an earlier key. The random pairs that train u are told apart
by the first pass each agrees on (:func:`erblock.engine.tasks.keysets.first_shared`,
checked here against a brute force), and a session's u of what earlier keys select on
comes from the rest (:func:`erblock.matchers.scoring.implied.u_before`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import erblock
from erblock.blocking import NULL_BLOCK as NULL
from erblock.blocking import column, composite, prefix, token, tokens
from erblock.engine.tasks.keysets import first_shared
from erblock.engine.tasks.prepare import prepare_partition, sample_records
from erblock.matchers.levels import PatternHistogram
from erblock.matchers.scoring.implied import u_before

WORDS = ["red", "blue", "green", "sun", "moon"]
CITIES = ["a", "b", "c", None]


def _records(draw, n: int) -> pd.DataFrame:
    names = [" ".join(draw(st.lists(st.sampled_from(WORDS), max_size=3))) for _ in range(n)]
    cities = [draw(st.sampled_from(CITIES)) for _ in range(n)]
    return pd.DataFrame({"name": names, "city": cities})


@st.composite
def frames(draw):
    link = draw(st.booleans())
    left = _records(draw, draw(st.integers(1, 12)))
    right = _records(draw, draw(st.integers(1, 12))) if link else None
    return left, right


def _oracle(left: pd.DataFrame, right: pd.DataFrame) -> np.ndarray:
    """First pass each pair agrees on: 0 the same city, 1 a shared word, −1 neither."""
    out = np.full((len(left), len(right)), -1, dtype=np.int8)
    for i, (ln, lc) in enumerate(zip(left["name"], left["city"])):
        for j, (rn, rc) in enumerate(zip(right["name"], right["city"])):
            if lc is not None and lc == rc:
                out[i, j] = 0
            elif set(ln.split()) & set(rn.split()):
                out[i, j] = 1
    return out


@settings(max_examples=60, deadline=None)
@given(frames())
def test_the_first_pass_a_random_pair_agrees_on_matches_a_brute_force(data):
    left, right = data
    keys = [column("city"), tokens("name")]

    def prepared(df: pd.DataFrame, src: int) -> pd.DataFrame:
        part = prepare_partition(df, part=src, src=src, keys=keys, value_columns=["name"])
        return sample_records(part, 1.0, 0).sort_values("_erb_rid").reset_index(drop=True)

    pl = prepared(left, 0)
    pr = pl if right is None else prepared(right, 1)
    got = first_shared(pl, None if right is None else pr, 2, (0, 0), slice(1, None),
                       slice(0, len(pr)))
    want = _oracle(left, left if right is None else right)[1:]
    np.testing.assert_array_equal(got, want)


def test_one_single_valued_pass_says_nothing():
    df = pd.DataFrame({"city": ["a", "b"], "name": ["x", "y"]})
    part = prepare_partition(df, part=0, src=0, keys=[column("city")], value_columns=["name"])
    assert first_shared(part, None, 1, (0,), slice(0, 2), slice(0, 2)) is None


def test_u_before_removes_the_pairs_earlier_passes_find():
    radix = [3, 4]  # levels + 1 (null) of two comparisons with 2 and 3 levels
    counts = [np.array([0, 90, 10]), np.array([5, 60, 25, 10])]
    # pass 0 finds 6 random pairs (top levels), pass 1 finds 3 more
    found = {0: PatternHistogram.from_gamma(np.array([[1, 2]] * 5 + [[1, 1]]), radix),
             1: PatternHistogram.from_gamma(np.array([[0, 2]] * 3), radix)}

    def shares(c):
        return [np.asarray(x, dtype=np.float64)[1:] / np.sum(x[1:]) for x in c]

    u_of = u_before(counts, found, [2, 3], shares)
    np.testing.assert_allclose(u_of(0)[0], [0.9, 0.1])
    np.testing.assert_allclose(u_of(1)[0], [90 / 94, 4 / 94])
    np.testing.assert_allclose(u_of(1)[1], [60 / 89, 24 / 89, 5 / 89])
    np.testing.assert_allclose(u_of(2)[0], [87 / 91, 4 / 91])
    np.testing.assert_allclose(u_of(2)[1], [60 / 86, 24 / 86, 2 / 86])
    np.testing.assert_allclose(u_of(5)[0], u_of(2)[0])


def test_a_later_pass_takes_the_u_of_the_random_pairs_its_predecessors_miss(client):
    """Restaurants blocked on the name's first word, then on phone prefix and street
    word: the second pass's pairs never share the name's first word, so among its
    non-matches the same name is far rarer than among random pairs (most random pairs
    with the same name share its first word). Parent: the random-pair u, restricted to
    the levels the session reaches, which keep the same name."""
    left = pd.DataFrame({"name": ["joe's diner", "the grill", "la bonne table", "sun cafe",
                                  "blue moon bar", "green house", "red lobster", "the diner"]
                         * 60})
    rng = np.random.default_rng(3)
    left["name"] = [f"{n} {w}" if rng.random() < 0.9 else n for n, w in
                    zip(left["name"], rng.choice(["north", "south", "east", "west", "bay",
                                                  "hill", "park", "lake"], len(left)))]
    left["phone"] = [f"{rng.integers(200, 210)}{rng.integers(0, 10**7):07d}"
                     for _ in range(len(left))]
    left["addr"] = [f"{rng.integers(1, 99)} {s} st" for s in
                    rng.choice(["main", "oak", "elm", "pine", "lake", "hill"], len(left))]
    left["cuisine"] = rng.choice(["italian", "french", "diner", "cafe", "bar", "thai",
                                  "mexican", "chinese", "greek", "pub"], len(left))
    left["zip"] = [f"{z:05d}" for z in rng.integers(10000, 10100, len(left))]
    right = left.sample(frac=0.7, random_state=1).reset_index()
    # a tenth written with the words in another order: the same token set, another first
    # word, so the second pass holds some exact names (its matches)
    right["name"] = [" ".join(n.split()[::-1]) if rng.random() < 0.1 else n
                     for n in right["name"]]
    right = right.set_index("index")
    right.index.name = None
    keys = [token("name", 0), composite(prefix("phone", 3), token("addr", 1))]
    model = erblock.FellegiSunter(u_pairs=200_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        erblock.link(left, right, key=keys, compare={"name": "text", "phone": "phone",
                                                     "addr": "text", "cuisine": "exact",
                                                     "zip": "postcode"},
                     scoring=model, client=client)
    k = [s.column for s in model.comparisons_].index("name")
    name = model.specs_[k].name
    late = [s for s in model.sessions_ if s["passes"] == [1]]
    assert late and name in late[0]["u_selected"]
    u_late = late[0]["u_selected"][name][-1]
    assert u_late < model.u_[k][-1] / 4, (u_late, model.u_[k][-1])


def test_a_sorted_neighbourhood_pass_finds_the_pairs_less_than_its_window_apart():
    from erblock.engine.schema import key_column

    pos = np.array([0, 1, 2, 5, -1, 3])  # -1: no position (no sort key)
    city = np.array([7, 7, 8, 9, 9, NULL], dtype=np.int64)
    df = pd.DataFrame({key_column(0): city, key_column(1): pos})
    got = first_shared(df, None, 2, (0, 3), slice(0, 6), slice(0, 6))
    want = np.full((6, 6), -1)
    for i in range(6):
        for j in range(6):
            if city[i] == city[j] and city[i] != NULL:
                want[i, j] = 0
            elif pos[i] >= 0 and pos[j] >= 0 and abs(pos[i] - pos[j]) < 3:
                want[i, j] = 1
    np.testing.assert_array_equal(got, want)
