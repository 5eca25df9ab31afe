"""u counted on the random pairs' non-matches (erblock.matchers.scoring.nonmatch).

Random pairs are drawn from a known mixture (a share λ of matches with m, the rest
non-matches with u). The observed level shares overstate u at the agreeing levels; the
posterior-weighted counts recover the non-matches' u, and a model fitted on a small,
dense link leaves about the expected matches out of its random pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from erblock.matchers.levels import PatternHistogram
from erblock.matchers.scoring import FellegiSunter
from erblock.matchers.scoring.nonmatch import nonmatch_counts

M = [np.array([0.05, 0.15, 0.80]), np.array([0.10, 0.20, 0.70]), np.array([0.2, 0.8])]
U = [np.array([0.97, 0.025, 0.005]), np.array([0.90, 0.08, 0.02]), np.array([0.5, 0.5])]
N_LEVELS = [3, 3, 2]


def _smoothed(counts: list[np.ndarray]) -> list[np.ndarray]:
    """u from level counts (index 0 = null) with add-one smoothing, as the model does."""
    return [(c[1:] + 1.0) / (c[1:].sum() + len(c) - 1) for c in counts]


def _random_pairs(lam: float, n: int, seed: int = 0) -> PatternHistogram:
    rng = np.random.default_rng(seed)
    match = rng.random(n) < lam
    gamma = np.empty((n, len(M)), dtype=np.int64)
    for k, (m, u) in enumerate(zip(M, U)):
        gamma[match, k] = rng.choice(len(m), size=int(match.sum()), p=m)
        gamma[~match, k] = rng.choice(len(u), size=int((~match).sum()), p=u)
    gamma[rng.random(n) < 0.05, 1] = -1  # some values missing
    return PatternHistogram.from_gamma(gamma, [n + 1 for n in N_LEVELS])


def test_posterior_weighted_counts_recover_the_non_matches_u():
    lam, n = 0.02, 400_000
    random = _random_pairs(lam, n)
    g = random.gamma().astype(np.int64)
    observed = _smoothed([np.bincount(g[:, k] + 1, weights=random.counts, minlength=L + 1)
                          for k, L in enumerate(N_LEVELS)])
    # the matches among the random pairs inflate the agreeing levels: 0.005 -> ~0.021
    assert observed[0][2] > 3 * U[0][2]
    counts, removed = nonmatch_counts(random, lam, M, observed, N_LEVELS, _smoothed)
    got = _smoothed(counts)
    for k in range(len(M)):
        np.testing.assert_allclose(got[k], U[k], rtol=0.08, atol=1e-3)
    assert removed == pytest.approx(lam * n, rel=0.1)


def test_the_pairs_left_out_are_never_more_than_the_matches_lambda_expects():
    """A model that expects fewer matches than its m would find (related records look
    like matches): the posteriors are held to λ of the pairs."""
    random = _random_pairs(0.05, 100_000)
    g = random.gamma().astype(np.int64)
    observed = _smoothed([np.bincount(g[:, k] + 1, weights=random.counts, minlength=L + 1)
                          for k, L in enumerate(N_LEVELS)])
    _, free = nonmatch_counts(random, 0.05, M, observed, N_LEVELS, _smoothed)
    assert free > 0.01 * 100_000
    _, held = nonmatch_counts(random, 0.01, M, observed, N_LEVELS, _smoothed)
    assert held == pytest.approx(0.01 * 100_000, rel=1e-3)


def test_a_term_frequency_comparison_keeps_its_observed_exact_count():
    """Its exact level is scored by value shares counted over all records (matches
    included), so training keeps the observed count there; its other levels lose their
    matches like any comparison's."""
    random = _random_pairs(0.02, 100_000)
    g = random.gamma().astype(np.int64)
    raw = [np.bincount(g[:, k] + 1, weights=random.counts, minlength=L + 1)
           for k, L in enumerate(N_LEVELS)]
    plain, _ = nonmatch_counts(random, 0.02, M, _smoothed(raw), N_LEVELS, _smoothed)
    tf, _ = nonmatch_counts(random, 0.02, M, _smoothed(raw), N_LEVELS, _smoothed,
                            tf=[True, False, False])
    assert tf[0][3] == raw[0][3] and plain[0][3] < 0.5 * raw[0][3]
    assert tf[0][1] < raw[0][1] and tf[1][3] == pytest.approx(plain[1][3], rel=0.05)


def test_no_match_share_leaves_the_counts_as_they_are():
    random = _random_pairs(0.02, 10_000)
    g = random.gamma().astype(np.int64)
    raw = [np.bincount(g[:, k] + 1, weights=random.counts, minlength=L + 1)
           for k, L in enumerate(N_LEVELS)]
    counts, removed = nonmatch_counts(random, 0.0, M, _smoothed(raw), N_LEVELS, _smoothed)
    assert removed == 0.0
    for a, b in zip(counts, raw):
        np.testing.assert_array_equal(a, b)


def test_a_dense_link_leaves_its_random_matches_out_of_u():
    """Two small lists sharing most entities: the random pairs (here all pairs) hold the
    matches, so an exact name is common among them; the fitted model leaves about as
    many matches out of u as there are, and its u of an exact name is the non-matches'."""
    rng = np.random.default_rng(3)
    n_l, n_r = 300, 200
    names = np.array([f"n{i:04d}" for i in range(n_l)])
    city = rng.choice(["la", "ny", "sf", "sd"], size=n_l)
    r_names, r_city = names[:n_r].copy(), city[:n_r].copy()
    noisy = rng.random(n_r) < 0.2
    r_names[noisy] = np.char.add("x", r_names[noisy])  # a fifth of the matches differ
    phone = rng.integers(0, 50, size=n_l)  # the same phone: most matches, 1 in 50 others
    r_phone = np.where(rng.random(n_r) < 0.9, phone[:n_r], rng.integers(0, 50, size=n_r))
    li, rj = (a.ravel() for a in np.meshgrid(np.arange(n_l), np.arange(n_r), indexing="ij"))
    everything = pd.DataFrame({"left_id": li, "right_id": rj + 10_000,
                               "name_exact": (names[li] == r_names[rj]).astype(float),
                               "city_exact": (city[li] == r_city[rj]).astype(float),
                               "phone_exact": (phone[li] == r_phone[rj]).astype(float)})
    cand = everything[everything["city_exact"] == 1.0]  # blocked on the city
    compare = {"name": "exact", "city": "exact", "phone": "exact"}
    model = FellegiSunter().fit(cand, compare,
                                random_pairs=everything[["name_exact", "city_exact",
                                                         "phone_exact"]],
                                total_pairs=float(n_l * n_r), blocking_columns=["city"])
    true_matches = int((~noisy).sum())
    observed = true_matches / len(everything)  # exact name among random pairs: matches only
    assert model.u_matches_removed_ == pytest.approx(n_r, rel=0.25)
    assert model.u_[0][-1] < observed / 20
