"""DP domain estimation: quantiles / bounds (exponential mechanism), category selection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstudio.engine.accounting import compose
from dpstudio.engine.domains import (
    candidate_counts,
    dp_bounds,
    dp_quantile,
    dp_select_categories,
    partition_selection_threshold,
    quantile_utility,
)
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError


def _neighbours(gen, n, pool):
    d = gen.choice(pool, size=n)
    d2 = d.copy()
    d2[gen.integers(n)] = gen.choice(pool)
    return d, d2


def test_quantile_utility_sensitivity_is_one_under_replace_one():
    gen = np.random.default_rng(1)
    grid = np.linspace(-5, 5, 201)
    worst = 0.0
    for _ in range(300):
        d, d2 = _neighbours(gen, 40, np.round(np.linspace(-5, 5, 23), 3))
        for q in (0.0, 0.1, 0.5, 0.97):
            u1 = quantile_utility(np.sort(d), q, grid)
            u2 = quantile_utility(np.sort(d2), q, grid)
            worst = max(worst, float(np.max(np.abs(u1 - u2))))
    assert worst <= 1.0
    assert worst == 1.0  # attained


def test_quantile_utility_sensitivity_is_one_when_missing_values_are_dropped():
    # release domains drop missing values, so n counts the present ones: replacing a missing
    # value by a number moves the count by 0 or 1 and q n by q
    gen = np.random.default_rng(11)
    grid = np.linspace(-5, 5, 101)
    pool = np.concatenate([np.round(np.linspace(-5, 5, 23), 3), [np.nan] * 5])
    worst = 0.0
    for _ in range(300):
        d, d2 = _neighbours(gen, 30, pool)
        for q in (0.0, 0.01, 0.5, 0.99, 1.0):
            u1 = quantile_utility(np.sort(d[~np.isnan(d)]), q, grid)
            u2 = quantile_utility(np.sort(d2[~np.isnan(d2)]), q, grid)
            worst = max(worst, float(np.max(np.abs(u1 - u2))))
    assert 0.99 <= worst <= 1.0 + 1e-12  # q n carries one float rounding


def test_exponential_mechanism_grid_ratio_is_bounded_by_e_eps():
    # exact output law of the grid variant on neighbouring datasets: ratio <= e^eps
    eps, grid = 0.8, np.linspace(0, 10, 51)
    gen = np.random.default_rng(2)
    for _ in range(100):
        d, d2 = _neighbours(gen, 30, np.linspace(0, 10, 11))
        p = [np.exp(0.5 * eps * quantile_utility(np.sort(x), 0.5, grid)) for x in (d, d2)]
        p = [v / v.sum() for v in p]
        assert np.max(np.abs(np.log(p[0] / p[1]))) <= eps + 1e-12


def test_quantile_inside_public_range_and_accurate():
    rng = RandomSource(7)
    gen = np.random.default_rng(3)
    x = gen.normal(40, 10, size=5000)
    for n_bins in (None, 2000):
        est = np.array(
            [dp_quantile(x, 0.5, epsilon=1.0, low=-1000, high=1000, rng=rng, n_bins=n_bins) for _ in range(30)]
        )
        assert np.all((est >= -1000) & (est <= 1000))
        true = np.median(x)
        assert np.mean(np.abs(est - true) < 2.0) >= 0.9
    # tiny epsilon: still inside the range
    v = dp_quantile(x, [0.1, 0.9], epsilon=1e-6, low=0, high=1, rng=rng)
    assert np.all((v >= 0) & (v <= 1))
    assert dp_quantile(x, 0.5, epsilon=1.0, low=3.0, high=3.0, rng=rng) == 3.0


def test_quantile_rejects_bad_inputs():
    rng = RandomSource(1)
    with pytest.raises(UserError):
        dp_quantile([1.0, np.nan], 0.5, epsilon=1, low=0, high=2, rng=rng)
    with pytest.raises(UserError):
        dp_quantile([1.0], 0.5, epsilon=0, low=0, high=2, rng=rng)
    with pytest.raises(UserError):
        dp_quantile([1.0], 1.5, epsilon=1, low=0, high=2, rng=rng)


def test_dp_bounds_cover_and_cost():
    rng = RandomSource(11)
    x = np.random.default_rng(4).uniform(18, 90, size=20000)
    lo, hi, loss = dp_bounds(x, epsilon=1.0, coarse_low=0, coarse_high=150, rng=rng)
    assert 0 <= lo <= hi <= 150
    assert abs(lo - np.quantile(x, 0.01)) < 3 and abs(hi - np.quantile(x, 0.99)) < 3
    assert loss.epsilon == 1.0 and loss.delta == 0.0 and loss.rdp is not None
    assert max(loss.rdp) <= 1.0 + 1e-12
    assert compose([loss, loss]).total.epsilon == pytest.approx(2.0)


def test_candidate_count_sensitivity():
    gen = np.random.default_rng(5)
    cands = ["a", "b", "c", "d"]
    pool = np.array(["a", "b", "c", "d", "zz"])
    l1 = l2 = 0.0
    for _ in range(500):
        d, d2 = _neighbours(gen, 25, pool)
        diff = candidate_counts(d, cands) - candidate_counts(d2, cands)
        l1, l2 = max(l1, np.abs(diff).sum()), max(l2, np.sqrt((diff**2).sum()))
    assert l1 == 2 and l2 == pytest.approx(math.sqrt(2))


def test_select_from_candidates_only():
    rng = RandomSource(3)
    vals = ["x"] * 500 + ["y"] * 300 + ["secret"] * 400 + ["rare"]
    for noise in ("laplace", "gaussian"):
        cats, loss = dp_select_categories(
            vals, epsilon=1.0, delta=1e-6, rng=rng, candidates=["x", "y", "z"], noise=noise
        )
        assert set(cats) <= {"x", "y", "z"}
        assert cats[:2] == ["x", "y"]
        assert loss.epsilon == 1.0
    assert loss.gdp_mu is not None and loss.delta == 1e-6
    assert loss.details["noise"].startswith("exact discrete Gaussian on grid")  # no float noise


def test_partition_selection_singletons_rarely_kept_frequent_kept():
    eps, delta = 1.0, 0.05
    T = partition_selection_threshold(eps, delta)
    q = math.exp(-eps / 2)
    # the smallest integer with q^T / (1 + q) <= delta (discrete Laplace(2/eps) tail)
    p1 = q**T / (1 + q)
    assert isinstance(T, int) and p1 <= delta < q ** (T - 1) / (1 + q)
    assert abs(T - 2 * math.log(1 / (2 * delta))) < 2  # ~ the continuous rule's threshold
    rng = RandomSource(12)
    n_single = 40000
    vals = [f"s{i}" for i in range(n_single)] + ["common"] * 200 + ["mid"] * 60
    kept, loss = dp_select_categories(vals, epsilon=eps, delta=delta, rng=rng)
    singles = sum(1 for v in kept if v.startswith("s"))
    rate = singles / n_single
    # each singleton is kept with probability exactly p1 <= delta
    se = math.sqrt(p1 * (1 - p1) / n_single)
    assert rate <= p1 + 4 * se
    assert rate >= p1 - 4 * se  # and the analysis is not loose
    assert loss.details["singleton_keep_probability"] == pytest.approx(p1)
    assert "common" in kept and "mid" in kept
    assert loss.epsilon == eps and loss.delta == delta
    assert kept == sorted(kept)
    with pytest.raises(UserError):
        dp_select_categories(vals, epsilon=eps, delta=delta, rng=rng, threshold=T - 0.5)
    dp_select_categories(vals, epsilon=eps, delta=delta, rng=rng, threshold=T + 0.5)  # allowed


def test_partition_selection_exact_replace_one_guarantee():
    # Exact keep probabilities for the two partitions a replaced record touches, all count cases;
    # check P(S) <= e^eps P'(S) + delta over all 4 joint outcomes (both directions).
    eps, delta = 0.7, 1e-3
    T = partition_selection_threshold(eps, delta)
    q = math.exp(-eps / 2)

    def keep(c):  # P(c + Z > T), Z ~ discrete Laplace(2/eps); 0 for an absent partition
        if c == 0:
            return 0.0
        j = T + 1 - c  # c + Z > T  <=>  Z >= T + 1 - c
        # P(Z >= j) = q^j / (1 + q) for j >= 0; by symmetry 1 - P(Z >= 1 - j) below 0
        return q**j / (1 + q) if j >= 0 else 1 - q ** (1 - j) / (1 + q)

    worst = 0.0
    for na in range(1, 40):  # partition a loses the record
        for nb in range(0, 40):  # partition b gains it
            P = [keep(na), keep(nb)]
            Q = [keep(na - 1), keep(nb + 1)]
            for x, y in ((P, Q), (Q, P)):
                # hockey-stick divergence sum_o (P(o) - e^eps Q(o))_+ over the 4 joint outcomes
                # (all other partitions have identical laws and factor out)
                hs = 0.0
                for oa in (0, 1):
                    for ob in (0, 1):
                        px = (x[0] if oa else 1 - x[0]) * (x[1] if ob else 1 - x[1])
                        py = (y[0] if oa else 1 - y[0]) * (y[1] if ob else 1 - y[1])
                        hs += max(px - math.exp(eps) * py, 0.0)
                worst = max(worst, hs)
    p1 = keep(1)
    assert worst <= p1 * (1 + 1e-12) and p1 <= delta
    assert worst >= p1 * (1 - 1e-9)  # tight: the divergence is the singleton keep probability
    assert q ** (T - 1) / (1 + q) > delta  # and T is the smallest threshold that delivers delta
