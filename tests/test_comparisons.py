"""Comparison kernels against per-pair reference implementations, and their null rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz
from rapidfuzz.distance import DamerauLevenshtein, Indel, Jaro, JaroWinkler, Levenshtein

from erblock.matchers.comparisons import (
    METHODS,
    Comparison,
    as_comparisons,
    comparison,
)

REFERENCE = {
    "jaro_winkler": JaroWinkler.normalized_similarity,
    "jaro": Jaro.normalized_similarity,
    "levenshtein": Levenshtein.normalized_similarity,
    "damerau_levenshtein": DamerauLevenshtein.normalized_similarity,
    "indel": Indel.normalized_similarity,
    "token_set": lambda a, b: fuzz.token_set_ratio(a, b) / 100,
    "token_sort": lambda a, b: fuzz.token_sort_ratio(a, b) / 100,
}

words = st.one_of(st.none(), st.text(alphabet="abcdé xyz", max_size=12))


@pytest.mark.parametrize("method", sorted(REFERENCE))
@settings(max_examples=40, deadline=None)
@given(left=st.lists(words, min_size=1, max_size=6), right=st.lists(words, min_size=1, max_size=6))
def test_string_kernel_equals_per_pair_reference(method, left, right):
    c = Comparison("x", method)
    m = c.matrix(c.prepare(pd.Series(left, dtype=object)), c.prepare(pd.Series(right, dtype=object)))
    assert m.shape == (len(left), len(right)) and m.dtype == np.float32
    for i, a in enumerate(left):
        for j, b in enumerate(right):
            if not a or not b or not a.strip() or not b.strip():  # None, "", " ": missing
                assert np.isnan(m[i, j])
            else:
                assert m[i, j] == pytest.approx(REFERENCE[method](a, b), abs=1e-5)
                assert 0.0 <= m[i, j] <= 1.0


@pytest.mark.parametrize("method", METHODS)
def test_missing_values_give_null_similarity(method):
    c = Comparison("x", method)
    valid = {"numeric": 1.0, "date": "2001-02-03", "phone": "555 123 4567",
             "postcode": "02139", "email": "a@b.c"}.get(method, "a")
    # a blank cell is missing too, as it is for blocking keys: not 0 against a value,
    # and two blanks do not agree
    left = pd.Series([valid, None, np.nan, "", " ", "\t \u3000"], dtype=object)
    right = pd.Series([valid, " "], dtype=object)
    m = c.matrix(c.prepare(left), c.prepare(right))
    assert m[0, 0] == 1.0
    assert np.isnan(m[1:, 0]).all() and np.isnan(m[:, 1]).all()


def test_term_frequencies_leave_blank_values_out():
    """A blank value is missing for the comparison, so it is no term either: counted, it
    took a share of every frequency (and could be the rarest 'value')."""
    import warnings

    import erblock

    df = pd.DataFrame({"k": ["a"] * 6, "name": ["ann", " ", "\t", "ann", "bo", " "]})
    model = erblock.FellegiSunter(tf_adjust="name")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        erblock.dedupe(df, key="k", compare={"name": "exact", "k": "exact"}, scoring=model)
    assert model.tf_["name_exact"].to_dict() == pytest.approx({"ann": 2 / 3, "bo": 1 / 3})


def test_exact_and_numeric():
    e = Comparison("x", "exact")
    m = e.matrix(e.prepare(pd.Series([1, 2])), e.prepare(pd.Series([2, 1, 3])))
    assert m.tolist() == [[0, 1, 0], [1, 0, 0]]
    n = comparison("x", "numeric", scale=10)
    m = n.matrix(n.prepare(pd.Series([30.0])), n.prepare(pd.Series([35.0, 50.0, 30.0])))
    assert m.tolist() == [[0.5, 0.0, 1.0]]
    r = comparison("x", "numeric", mode="rel")
    m = r.matrix(r.prepare(pd.Series([100.0, 0.0])), r.prepare(pd.Series([90.0, 0.0])))
    assert m[0, 0] == pytest.approx(0.9) and m[1, 1] == 1.0
    # text parsed as numbers: what is not a number is missing
    m = n.matrix(n.prepare(pd.Series(["30", "abc"])), n.prepare(pd.Series(["31"])))
    assert m[0, 0] == pytest.approx(0.9) and np.isnan(m[1, 0])


def test_round_trip_and_normalisation():
    specs = as_comparisons({"a": "jaro", "b": {"method": "numeric", "scale": 5, "weight": 2}})
    for s in specs:
        assert Comparison.from_dict(s.to_dict()) == s
    assert specs[1].weight == 2 and specs[1].option == {"scale": 5}
    assert as_comparisons([("a", "exact")])[0].name == "a_exact"


@pytest.mark.parametrize("bad, match", [
    ({"a": "jaro_winklr"}, "did you mean 'jaro_winkler'"),
    ({"a": {"method": "numeric", "scale": -1}}, "scale"),
    ({"a": {"method": "jaro", "scale": 1}}, "not valid for method 'jaro'"),
    ([{"column": "a", "method": "jaro", "weight": 0}], "weight"),
    ([{"column": "a", "method": "jaro", "weight": 1e-300}], "between 1e-6 and 1e6"),
    ({}, "at least one"),
    ("a", "must be a dict"),
    ([("a", "jaro"), ("a", "jaro")], "unique"),
    # a misspelt key named with its column, not a missing positional argument
    ({"dob": {"metod": "date"}},
     r"column 'dob' has no 'method' \(unknown key\(s\) \['metod'\]"),
    # any format strptime refuses, not only a bad directive, and not at run time
    ({"dob": {"method": "date", "format": "%Y-%m-%d %"}},
     r"date format '%Y-%m-%d %': stray %.*format=.*column 'dob'"),
    ({"dob": {"method": "date", "format": "%G-%V"}}, r"date format '%G-%V'.*column 'dob'"),
    # a format without a year put every date in 1900: all "within 1 year" of each other
    ({"dob": {"method": "date", "format": "%d.%m"}},
     r"date format '%d.%m' has no year \(%Y, %y\).*column 'dob'"),
    ({"dob": {"method": "date", "format": "%%Y %m %d"}}, r"date format '%%Y %m %d' has no year"),
    # an infinite scale made every pair similar
    ({"x": {"method": "numeric", "scale": float("inf")}}, r"scale must be a finite number"),
])
def test_bad_comparisons(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        as_comparisons(bad)


@pytest.mark.parametrize("method", METHODS)
def test_aligned_pairs_equal_the_matrix_cells(method):
    c = comparison("x", method, scale=3) if method == "numeric" else Comparison("x", method)
    if method == "numeric":
        left, right = pd.Series([1.0, 2, None, 4, 5]), pd.Series([2.0, None, 5, 1])
    else:
        left = pd.Series(["martha", "marhta", None, "", "a b c"], dtype=object)
        right = pd.Series(["dicksonx", "martha", None, "c b a"], dtype=object)
    pl, pr = c.prepare(left), c.prepare(right)
    li, rj = (x.ravel() for x in np.meshgrid(np.arange(len(left)), np.arange(len(right)),
                                            indexing="ij"))
    np.testing.assert_allclose(c.aligned(pl, pr, li, rj), c.matrix(pl, pr)[li, rj])
