"""Fuzzing end to end: random frames, keys, strategies, partitionings and task counts
against the brute force (tests/oracle.py).

Invariant checked on every example: the output pairs are exactly the pairs that agree on
at least one key pass (each once; for dedupe never a record with itself and left before
right in input order), the report counts exactly that many comparisons, and a threshold
keeps exactly the pairs of the unthresholded run whose score reaches it.

The number of examples comes from ``ERBLOCK_FUZZ_EXAMPLES`` (default 3: a bounded CI
profile); ``benchmarks/fuzz_nightly.py`` runs the same tests with many more.
"""

from __future__ import annotations

import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.api import STRATEGY_NAMES
from erblock.blocking import composite, prefix, soundex
from erblock.report import RunReport

EXAMPLES = int(os.environ.get("ERBLOCK_FUZZ_EXAMPLES", "3"))  # nightly: 200
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])

KEY_VALUES = ["a", "a", "a", "b", "b", "c", "Ä", "😀", "1", "1.0", None, "", np.nan]
NAMES = ["smith", "smyth", "Smith", "jones", "jon", "li", None, "", "müller", "mueller",
         "o'neil", "x" * 300, "中文", "👍🏽"]


def _first_letter(df: pd.DataFrame) -> pd.Series:
    """A callable key (module level, so it pickles by reference)."""
    return df["name"].astype("string").str.slice(0, 1)


KEYS = {
    "column": ["k"],
    "numbers": ["num"],
    "prefix": [prefix("name", 1)],
    "soundex": [soundex("name")],
    "composite": [("k", "num")],
    "composite_spec": [composite("k", prefix("name", 2))],
    "callable": [_first_letter],
    "multipass": ["k", prefix("name", 2)],
    "multipass3": ["num", ("k", "num"), soundex("name")],
}


@st.composite
def frames(draw, min_size: int = 0, max_size: int = 80) -> pd.DataFrame:
    n = draw(st.integers(min_size, max_size))
    keys = draw(st.lists(st.sampled_from(KEY_VALUES), min_size=n, max_size=n))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n))
    nums = draw(st.lists(st.one_of(st.none(), st.integers(0, 4).map(float)), min_size=n,
                         max_size=n))
    index_kind = draw(st.sampled_from(["range", "offset", "shuffled", "strings"]))
    if index_kind == "range":
        index = pd.RangeIndex(n)
    elif index_kind == "offset":
        index = pd.RangeIndex(10_000, 10_000 + n)
    elif index_kind == "shuffled":
        index = pd.Index(np.random.default_rng(n).permutation(n) * 3 + 7)
    else:
        index = pd.Index([f"id-{i}" for i in range(n)])
    return pd.DataFrame({
        "k": pd.Series(keys, dtype=object),
        "name": pd.Series(names, dtype=object),
        "num": pd.Series(nums, dtype="float64"),
    }, index=index)


COMPARE = {"name": "jaro_winkler", "num": {"method": "numeric", "scale": 2}}


def _maybe_dask(df: pd.DataFrame, as_dask: bool, m: int):
    if not as_dask:
        return df
    return dd.from_pandas(df, npartitions=max(1, min(m, max(len(df), 1))), sort=False)


def _check_pairs(pairs: pd.DataFrame, expected: set[tuple]) -> None:
    got = pair_list(pairs)
    assert len(got) == len(set(got)), "a pair appeared twice"
    assert set(got) == expected
    assert RunReport.of(pairs).comparisons == len(expected)


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@FUZZ
@given(df=frames(), key=st.sampled_from(sorted(KEYS)), m=st.integers(1, 6),
       r=st.integers(1, 24), as_dask=st.booleans())
def test_fuzz_dedupe(client, strategy, df, key, m, r, as_dask):
    keys = KEYS[key]
    pairs = erblock.dedupe(_maybe_dask(df, as_dask, m), key=keys, compare=COMPARE,
                           strategy=strategy, n_tasks=r, client=client,
                           npartitions=None if as_dask else m)
    _check_pairs(pairs, brute_dedupe(df, keys))
    pos = {label: i for i, label in enumerate(df.index)}
    assert all(pos[a] < pos[b] for a, b in pair_list(pairs)), "left must precede right"


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@FUZZ
@given(df_r=frames(), df_s=frames(), key=st.sampled_from(sorted(KEYS)), m=st.integers(1, 6),
       r=st.integers(1, 24), as_dask=st.booleans())
def test_fuzz_link(client, strategy, df_r, df_s, key, m, r, as_dask):
    keys = KEYS[key]
    pairs = erblock.link(_maybe_dask(df_r, as_dask, m), df_s, key=keys, compare=COMPARE,
                         strategy=strategy, n_tasks=r, client=client,
                         npartitions=None if as_dask else m)
    _check_pairs(pairs, brute_link(df_r, df_s, keys))


@FUZZ
@given(df=frames(min_size=2), threshold=st.floats(0.0, 1.0), r=st.integers(1, 12),
       strategy=st.sampled_from(STRATEGY_NAMES))
def test_fuzz_threshold_is_a_filter_of_the_full_run(client, df, threshold, r, strategy):
    full = erblock.dedupe(df, key="k", compare=COMPARE, client=client, sort=True)
    kept = erblock.dedupe(df, key="k", compare=COMPARE, client=client, sort=True,
                          threshold=threshold, n_tasks=r, strategy=strategy)
    expected = full[full["score"] >= np.float32(threshold)].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, expected, check_exact=True)
