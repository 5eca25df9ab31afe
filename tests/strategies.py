"""Shared hypothesis strategies of the test suite (not a test module)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from erblock.balancing import BDM


@st.composite
def bdms(draw, link: bool | None = None, big: int = 14):
    """Small BDMs: 1–6 blocks over 1–5 partitions, some blocks big (up to ``big`` records
    per partition), for link or dedupe."""
    link = draw(st.booleans()) if link is None else link
    m = draw(st.integers(1, 5))
    rows = []
    for b in range(draw(st.integers(1, 6))):
        block_id = draw(st.integers(-(2**62), 2**62)) + b
        top = big if draw(st.booleans()) else 3
        for src in (0, 1) if link else (0,):
            for p in range(m):
                c = draw(st.integers(0, top))
                if c:
                    rows.append((block_id, p, src, c))
    if not rows:
        rows.append((7, 0, 0, 2))
    b, p, s, c = map(np.array, zip(*rows))
    return BDM.from_arrays(b, p, s, c, (m, m if link else 0), link)


KEYS = ["a", "a", "a", "a", "b", "b", "c", "d", None, ""]  # skewed, with missing/empty
NAMES = ["smith", "smyth", "jones", "jon", "li", None, "brown", "o'neil", "müller", "x"]


@st.composite
def frames(draw, min_size: int = 0, max_size: int = 60):
    """Records with a skewed key ``k`` (missing and empty keys too), a name and an age."""
    n = draw(st.integers(min_size, max_size))
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=n, max_size=n))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n))
    ages = draw(st.lists(st.one_of(st.none(), st.integers(0, 90)), min_size=n, max_size=n))
    start = draw(st.integers(0, 1000))
    return pd.DataFrame({"k": pd.Series(keys, dtype=object),
                         "name": pd.Series(names, dtype=object),
                         "age": pd.Series(ages, dtype="Float64")},
                        index=pd.RangeIndex(start, start + n))


#: hypothesis examples are multiplied by this (``benchmarks/fuzz_nightly.py`` raises it)
SCALE = float(os.environ.get("ERBLOCK_EXAMPLES_SCALE", "1"))


def examples(n: int) -> int:
    """``n`` examples in the suite, more in the nightly run (at least 1)."""
    return max(1, int(round(n * SCALE)))


def cluster_settings(n: int) -> settings:
    """Settings of a property test that runs erblock on a cluster: ``n`` examples (scaled),
    no deadline, and no "explain" phase (it reruns every failing example many times)."""
    return settings(max_examples=examples(n), deadline=None,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])
