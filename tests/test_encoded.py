"""Dictionary-encoded compare: the same similarities, bit for bit, as pair by pair.

* every registered method: encoding a prepared column gives back every record's values,
  and the gathered distinct-pair similarities of a block equal the direct matrix cell by
  cell (NaN where a value is missing), with and without a score cutoff, for repeated,
  all-distinct, missing, blank and unicode values (hypothesis);
* end to end on a cluster: ``encode="always"`` and ``encode="never"`` give identical
  pairs frames for every strategy, link and dedupe, one and several passes, and both
  equal the brute force; ``"auto"`` takes the encoded path where distinct values are few
  (the report's cells say how many similarities were computed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.balancing.strategies import STRATEGIES
from erblock.engine.tasks.encoded import block_encoding, encode, row_codes
from erblock.matchers.comparisons import Comparison
from erblock.matchers.methods import METHODS
from erblock.report import RunReport

#: values a method of each ``accepts`` class is given (numbers for "number" kinds)
POOLS = {
    "text": ["smith", "smyth", "", None, "jones", "o'neil", "müller", "MÜLLER", "x" * 30,
             "anne marie", "2001-02-03", "20010302", "sw1a 1aa", "a@b.com", "+44 20 7946 0018"],
    "number": [1.0, 2.5, None, 100.0, -3.0, 0.0, 2.5, np.nan, 7.0],
    "any": ["a", "b", None, "", 1, 1.0, "c", "1"],
}
#: methods whose values must parse to be compared get pools of their own
BY_METHOD = {
    "date": ["2001-02-03", "2001-03-02", "20010203", "02/03/2001", "2001-02-04", "1999-12-31",
             "not a date", None, "", "2001-02-03"],
    "phone": ["020 7946 0018", "+44 20 7946 0018", "0044 20 7946 0019", "7946 0018", None,
              "", "no digits", "555-0100", "555 0100"],
    "email": ["a.b@x.com", "A.B@x.com", "a.b@y.org", "ab@x.com", None, "", "not an email"],
    "postcode": ["SW1A 1AA", "sw1a1aa", "SW1A 2AA", "SW1B 1AA", "EC1A 1BB", None, "",
                 "10115", "10117"],
}
CUTOFFS = {"jaro_winkler": 0.8, "levenshtein": 0.5}


def _values(name: str, draw_idx: list[int]) -> pd.Series:
    pool = BY_METHOD.get(name, POOLS[Comparison("v", name).kernel.accepts])
    return pd.Series([pool[i % len(pool)] for i in draw_idx], dtype=object)


@pytest.mark.parametrize("name", sorted(METHODS))
@settings(max_examples=25, deadline=None)
@given(idx=st.lists(st.integers(0, 40), min_size=1, max_size=60),
       cut=st.tuples(st.integers(0, 59), st.integers(0, 59)))
def test_encoded_block_equals_direct_matrix(name: str, idx: list[int],
                                            cut: tuple[int, int]) -> None:
    comp = Comparison("v", name)
    prep = comp.prepare(_values(name, idx))
    enc = encode(prep)
    assert enc is not None
    back = enc.uniques.take(enc.codes)
    np.testing.assert_array_equal(back.missing, prep.missing)
    present = ~prep.missing
    np.testing.assert_array_equal(back.values[present], prep.values[present])
    n = len(idx)
    for cutoff in (None, CUTOFFS.get(name)):  # a triangle block: one side, shared codes
        [tri] = block_encoding([enc], [enc], 0, n, 0, n, True, [comp], cutoff, always=True)
        np.testing.assert_array_equal(tri.gather(0, n, 0, n), comp.matrix(prep, prep, cutoff))
    a, b = sorted(x % (n + 1) for x in cut)  # rows [a, n) against columns [0, b)
    for cutoff in (None, CUTOFFS.get(name)):
        [block] = block_encoding([enc], [enc], a, n, 0, b, False, [comp], cutoff,
                                 always=True)
        direct = comp.matrix(prep.take(slice(a, n)), prep.take(slice(0, b)), cutoff)
        if block is None:  # an empty side: nothing to compare
            assert direct.size == 0
            continue
        np.testing.assert_array_equal(block.gather(0, n - a, 0, b), direct)


def _frame(seed: int, n: int, link_side: int = 0) -> pd.DataFrame:
    """Few blocks, heavily repeated names and cities, some missing and unicode values."""
    rng = np.random.default_rng(seed + 1000 * link_side)
    first = np.array(["anna", "anne", "ann", "jose", "josé", "zoë", "zoe", "", "li", "lee"],
                     dtype=object)
    last = np.array([f"name{i}" for i in range(40)] + ["müller", "muller"], dtype=object)
    f = first[rng.integers(0, len(first), n)]
    f[rng.random(n) < 0.05] = None
    return pd.DataFrame({
        "k": rng.integers(0, 4, n).astype(str),
        "k2": rng.integers(0, 30, n),
        "first": pd.Series(f, dtype=object),
        "last": last[rng.integers(0, len(last), n)],
        "age": pd.Series(np.where(rng.random(n) < 0.1, np.nan, rng.integers(20, 60, n)),
                         dtype="float64"),
    }, index=pd.Index([f"{'rs'[link_side]}{seed}-{i}" for i in range(n)], name="rid"))


COMPARE = {"first": "jaro_winkler", "last": "name", "age": {"method": "numeric", "scale": 5}}


@settings(max_examples=80, deadline=None)
@given(width=st.sampled_from([1, 2, 3, 5, 16, 24]), kind=st.integers(0, 2), data=st.data())
def test_row_codes_number_rows_as_factorizing_their_tuples_does(width, kind, data):
    """Equal rows share a code, numbered by first appearance, missing equal to missing:
    what a MultiIndex of the rows gives, computed column by column (wide integer tables
    as one sort of their bytes)."""
    pool = [st.integers(-2, 2), st.sampled_from([np.nan, 0.5, -0.0, 0.0]),
            st.sampled_from(["a", "b", None, "é"])][kind]
    rows = data.draw(st.lists(st.lists(pool, min_size=width, max_size=width), max_size=40))
    table = np.array(rows, dtype=object if kind == 2 else np.float64 if kind == 1
                     else np.int64).reshape(len(rows), width)
    want = (pd.MultiIndex.from_arrays([table[:, j] for j in range(width)]).factorize()[0]
            if len(rows) else np.zeros(0, np.int64))
    np.testing.assert_array_equal(row_codes(table), want)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_encoded_and_direct_runs_are_identical(client, strategy: str) -> None:
    df = _frame(1, 600)
    keys = ["k", "k2"]
    runs = {e: erblock.dedupe(df, key=keys, compare=COMPARE, strategy=strategy, n_tasks=5,
                              client=client, npartitions=3, sort=True, encode=e)
            for e in ("always", "never")}
    pd.testing.assert_frame_equal(runs["always"].reset_index(drop=True),
                                  runs["never"].reset_index(drop=True))
    got = pair_list(runs["always"])
    assert len(got) == len(set(got)) and set(got) == brute_dedupe(df, keys)
    kept = {e: erblock.dedupe(df, key=keys, compare=COMPARE, strategy=strategy, n_tasks=5,
                              client=client, sort=True, threshold=0.75, encode=e)
            for e in ("always", "never")}  # several comparisons: threshold pushdown
    pd.testing.assert_frame_equal(kept["always"].reset_index(drop=True),
                                  kept["never"].reset_index(drop=True))
    r, s = _frame(2, 300, link_side=0), _frame(2, 250, link_side=1)
    linked = {e: erblock.link(r, s, key="k", compare=COMPARE, strategy=strategy, n_tasks=4,
                              client=client, sort=True, threshold=0.6, encode=e)
              for e in ("always", "never")}
    pd.testing.assert_frame_equal(linked["always"].reset_index(drop=True),
                                  linked["never"].reset_index(drop=True))
    everything = erblock.link(r, s, key="k", compare=COMPARE, strategy=strategy, n_tasks=4,
                              client=client, sort=True, encode="always")
    got = pair_list(everything)
    assert len(got) == len(set(got)) and set(got) == brute_link(r, s, ["k"])


def test_auto_encodes_repeated_values_and_computes_fewer_cells(client) -> None:
    df = _frame(3, 3000)
    runs = {e: erblock.dedupe(df, key="k", compare={"first": "jaro_winkler"},
                              threshold=0.9, client=client, sort=True, encode=e)
            for e in ("auto", "never")}
    pd.testing.assert_frame_equal(runs["auto"].reset_index(drop=True),
                                  runs["never"].reset_index(drop=True))
    cells = {e: sum(t.cells for t in RunReport.of(p).tasks) for e, p in runs.items()}
    assert cells["auto"] < cells["never"] / 100  # 11 distinct first names per block


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 3),
       thr=st.sampled_from([0.5, 0.7, 0.85, 0.9, 1.0]),
       weights=st.sampled_from([(1.0, 1.0, 1.0, 1.0, 1.0), (2.0, 1.0, 0.5, 1.0, 3.0),
                                (0.3, 3.0, 1.0, 0.5, 1.0), (1.0, 20.0, 1.0, 2.0, 1.0),
                                (0.05, 1.0, 3.0, 1.0, 0.2), (20.0, 1.0, 1.0, 1.0, 1.0)]),
       nan_share=st.sampled_from([0.0, 0.1, 0.5]), jitter=st.booleans(),
       exact=st.integers(0, 2))
def test_threshold_pushdown_keeps_exactly_what_the_dense_path_keeps(seed, k, thr, weights,
                                                                    nan_share, jitter,
                                                                    exact):
    """Matrix comparisons (and ``exact`` ones by code equality, missing codes -1) with
    missing values: the pairs kept and every value equal the dense chunk's."""
    from erblock.engine.tasks.encoded import BlockCodes, CodeEquality, pushdown
    from erblock.engine.tasks.mean import mean_score

    rng = np.random.default_rng(seed)
    rows, cols = 40, 70
    blocks = []
    for _ in range(k):
        dl, dr = rng.integers(1, 12, 2)
        # similarities on a coarse grid, so many sit exactly on the threshold
        mat = (rng.integers(0, 21, (dl, dr)) / 20).astype(np.float32)
        if jitter:  # a few float32 steps either side of the grid (and of the threshold)
            mat = np.clip(mat + rng.integers(-3, 4, (dl, dr)) * np.float32(6e-8), 0, 1
                          ).astype(np.float32)
        mat[rng.random((dl, dr)) < nan_share] = np.nan
        blocks.append(BlockCodes(mat, rng.integers(0, dl, rows), rng.integers(0, dr, cols)))
    for _ in range(exact):  # codes 0..3, -1 missing in about nan_share of the records
        lc, rc = rng.integers(0, 4, rows), rng.integers(0, 4, cols)
        lc[rng.random(rows) < nan_share] = -1
        rc[rng.random(cols) < nan_share] = -1
        blocks.insert(int(rng.integers(0, len(blocks) + 1)), CodeEquality(lc, rc))
    w = np.array(weights[:k + exact], dtype=np.float32)
    push = pushdown(blocks, w, thr)
    mask = rng.random((rows - 5, cols - 3)) < 0.8
    mats = [b.gather(5, rows, 3, cols) for b in blocks]
    score = mean_score(mats, w)
    sel = (score >= np.float32(thr)) & mask
    def num(x) -> float | None:  # NaN as None, so equal tuples compare equal
        return None if np.isnan(x) else float(x)

    want = {(int(i), int(j)): (num(score[i, j]), *(num(m[i, j]) for m in mats))
            for i, j in zip(*np.nonzero(sel))}
    if push is None:  # nothing to rule out: the dense path runs
        return
    ri, cj, sims, sc = push.pairs(5, rows, 3, cols, mask)
    keep = sc >= np.float32(thr)
    got = {(int(i), int(j)): (num(s), *(num(v[n]) for v in sims))
           for n, (i, j, s) in enumerate(zip(ri, cj, sc)) if keep[n]}
    assert got == want


def test_pushdown_with_uneven_weights_keeps_a_pair_at_the_threshold():
    # a light comparison just under the threshold and a heavy one at it: the mean is
    # exactly the threshold in float32, so the pair is kept, and the bound must not drop
    # it (the margin scales with the weights)
    from erblock.engine.tasks.encoded import BlockCodes, pushdown
    from erblock.engine.tasks.mean import mean_score

    light = np.array([[0.8999989, 0.1, 0.2, 0.0, 0.3]], dtype=np.float32)
    heavy = np.array([[0.9, 0.9, 0.1, 0.0, 0.2]], dtype=np.float32)
    w = np.array([1.0, 20.0], dtype=np.float32)
    blocks = [BlockCodes(light, np.zeros(1, np.intp), np.arange(5)),
              BlockCodes(heavy, np.zeros(1, np.intp), np.arange(5))]
    dense = mean_score([light, heavy], w)
    assert dense[0, 0] >= np.float32(0.9)
    push = pushdown(blocks, w, 0.9)
    assert push is not None
    ri, cj, _, score = push.pairs(0, 1, 0, 5, None)
    assert (0, 0) in {(int(i), int(j)) for i, j, v in zip(ri, cj, score)
                      if v >= np.float32(0.9)}


def test_exact_compares_codes_as_the_kernel_compares_values():
    """``exact`` on the encoded path compares codes in one space for both sides: the same
    1.0 / 0.0 / NaN as the kernel on the values, for link (different value sets, missing
    values, mixed types) and dedupe."""
    from erblock.engine.tasks.encoded import CodeEquality, encode, joint_codes
    comp = erblock.comparison("x", "exact")
    left = pd.Series(["a", "b", None, 1, "a", "", 2.0, "c"], dtype=object)
    right = pd.Series(["b", 1.0, "z", None, "a", 2, "a"], dtype=object)
    pl, pr = comp.prepare(left), comp.prepare(right)
    el, er = encode(pl), encode(pr)
    assert el is not None and er is not None
    lc, rc = joint_codes(el, er)
    got = CodeEquality(lc, rc).gather(0, len(left), 0, len(right))
    want = comp.matrix(pl, pr)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.nan_to_num(got, nan=-1), np.nan_to_num(want, nan=-1))
    dc, dc2 = joint_codes(el, None)
    assert dc is dc2
    same = CodeEquality(dc, dc).gather(0, len(left), 0, len(left))
    np.testing.assert_array_equal(np.nan_to_num(same, nan=-1),
                                  np.nan_to_num(comp.matrix(pl, pl), nan=-1))


def _varied(seed: int, n: int, names: int, side: str) -> pd.DataFrame:
    """One block, ``names`` distinct surnames (too many pairs of them for one matrix at a
    small ``cell_budget``), an exact place with missing values, a few first names."""
    rng = np.random.default_rng(seed)
    place = pd.Series(rng.integers(0, 6, n).astype(str), dtype=object)
    place[rng.random(n) < 0.2] = None
    return pd.DataFrame({
        "k": "all",
        "surname": [f"sur{v:04d}x" for v in rng.integers(0, names, n)],
        "first": rng.choice(["ann", "anna", "bob", "rob", "zoë"], n),
        "place": place,
    }, index=pd.Index([f"{side}{i}" for i in range(n)], name="rid"))


@pytest.mark.parametrize("mode", ["link", "dedupe"])
def test_a_block_too_varied_for_one_matrix_is_encoded_in_row_slabs(client, mode) -> None:
    """More distinct surname pairs than ``cell_budget`` allows in one matrix: the block is
    encoded slab by slab of rows (a dedupe's triangle too), with the pushdown's tests on
    code equality for the exact place (missing in a fifth of the records). The pairs and
    values equal the pair-by-pair run's, with far fewer similarities computed (one
    matrix-less surname alone would cost a third of the pairs)."""
    compare = {"surname": "jaro_winkler", "first": "jaro_winkler", "place": "exact"}
    if mode == "link":  # ~590 x ~150 distinct surnames > 2**16: slabs of 2**16 // 150 rows
        r, s = _varied(1, 3000, 600, "r"), _varied(2, 800, 150, "s")
        opts = {"cell_budget": 1 << 16}
        run = lambda e: erblock.link(r, s, key="k", compare=compare, threshold=0.8,  # noqa: E731
                                     client=client, sort=True, n_tasks=1, encode=e, **opts)
    else:  # ~450 distinct: 202,500 > 2**17; slabs of 2**17 // 450 = 291 rows
        df = _varied(3, 3000, 450, "d")
        opts = {"cell_budget": 1 << 17}
        run = lambda e: erblock.dedupe(df, key="k", compare=compare, threshold=0.8,  # noqa: E731
                                       client=client, sort=True, n_tasks=1, encode=e, **opts)
    runs = {e: run(e) for e in ("auto", "never")}
    assert len(runs["auto"]) > 0
    pd.testing.assert_frame_equal(runs["auto"].reset_index(drop=True),
                                  runs["never"].reset_index(drop=True))
    cells = {e: sum(t.cells for t in RunReport.of(p).tasks) for e, p in runs.items()}
    assert cells["auto"] < cells["never"] / 4, cells
