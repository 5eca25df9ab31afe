"""The compared-once rule's key joins (:mod:`erblock.engine.tasks.keysets`) against scipy's
sparse products of the same incidence matrices built from dense arrays (an independent
computation)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from erblock.engine.tasks import keysets
from erblock.engine.tasks.keysets import Incidence, shared_aligned, shared_cells


def _matrix(draw: st.DrawFn, rows: int, keys: int) -> np.ndarray:
    density = draw(st.floats(0.0, 0.6))
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).random((rows, keys)) < density


def _incidence(dense: np.ndarray, key_codes: np.ndarray) -> Incidence:
    rows, cols = np.nonzero(dense)
    return Incidence.of(rows, key_codes[cols], dense.shape[0], len(key_codes))


@st.composite
def _case(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nl, nr, nk = draw(st.integers(1, 25)), draw(st.integers(1, 25)), draw(st.integers(1, 12))
    codes = np.random.default_rng(draw(st.integers(0, 99))).permutation(nk)  # any order
    return _matrix(draw, nl, nk), _matrix(draw, nr, nk), codes


@pytest.mark.parametrize("join_max", [0, 1 << 30], ids=["scipy", "join"])
def test_shared_cells_are_the_product_non_zeros(join_max, monkeypatch) -> None:
    monkeypatch.setattr(keysets, "JOIN_MAX_TRIPLES", join_max)

    @settings(max_examples=80, deadline=None)
    @given(_case(), st.data())
    def check(case, data) -> None:
        lm, rm, codes = case
        a = data.draw(st.integers(0, lm.shape[0] - 1))
        b = data.draw(st.integers(a + 1, lm.shape[0]))
        c = data.draw(st.integers(0, rm.shape[0] - 1))
        d = data.draw(st.integers(c + 1, rm.shape[0]))
        want = (sparse.csr_matrix(lm[a:b].astype(np.int32))
                @ sparse.csr_matrix(rm[c:d].astype(np.int32)).T).toarray() > 0
        got = np.zeros_like(want)
        shared = shared_cells(_incidence(lm, codes), _incidence(rm, codes), a, b, c, d)
        assert (shared is None) == (not want.any())
        if shared is not None:
            got[shared] = True
        np.testing.assert_array_equal(got, want)

    check()


@settings(max_examples=100, deadline=None)
@given(_case(), st.data())
def test_shared_aligned_is_the_row_wise_product(case, data) -> None:
    lm, rm, codes = case
    k = data.draw(st.integers(0, 40))
    li = np.array(data.draw(st.lists(st.integers(0, lm.shape[0] - 1), min_size=k,
                                     max_size=k)), dtype=np.int64)
    rj = np.array(data.draw(st.lists(st.integers(0, rm.shape[0] - 1), min_size=k,
                                     max_size=k)), dtype=np.int64)
    want = (lm[li] & rm[rj]).any(axis=1) if k else np.zeros(0, dtype=bool)
    got = shared_aligned(_incidence(lm, codes), _incidence(rm, codes), li, rj)
    np.testing.assert_array_equal(got, want)


def test_empty_rows_and_sides() -> None:
    empty = Incidence.of(np.zeros(0, np.int64), np.zeros(0, np.int64), 3, 6)
    full = Incidence.of(np.array([0, 1, 2]), np.array([5, 5, 5]), 3, 6)
    assert shared_cells(empty, full, 0, 3, 0, 3) is None
    assert shared_cells(full, empty, 0, 3, 0, 3) is None
    assert not shared_aligned(empty, full, np.array([0, 1]), np.array([2, 2])).any()
    shared = shared_cells(full, full, 1, 3, 0, 2)
    assert shared is not None
    assert sorted(zip(*(x.tolist() for x in shared))) == [(0, 0), (0, 1), (1, 0), (1, 1)]
