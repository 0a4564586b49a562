"""Mechanisms: calibration against exact privacy profiles, published values, release laws."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from dpstudio.engine.accounting import RDP_ORDERS
from dpstudio.engine.mechanisms import (
    MECHANISMS,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MetricSelection,
    RandomizedResponse,
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
)
from dpstudio.engine.mechanisms import gaussian as G
from dpstudio.engine.mechanisms import laplace as L
from dpstudio.engine.mechanisms import sampling as S
from dpstudio.engine.rng import RandomSource


def test_registry():
    assert set(MECHANISMS) == {"laplace", "gaussian", "rr", "exponential", "metric"}
    for name, cls in MECHANISMS.items():
        assert cls.name == name and cls.__doc__


def test_validation_quotes_bad_values():
    with pytest.raises(ValueError, match="-1"):
        LaplaceMechanism(epsilon=-1, low=0, high=1)
    with pytest.raises(ValueError, match="1.5"):
        LaplaceMechanism(epsilon=1, delta=1.5, low=0, high=1)
    with pytest.raises(ValueError, match="low=2"):
        LaplaceMechanism(epsilon=1, low=2, high=1)
    with pytest.raises(TypeError):
        LaplaceMechanism(1, 0, 0, 1)  # keyword-only
    with pytest.raises(ValueError, match="0.0"):
        GaussianMechanism(epsilon=1, delta=0.0, low=0, high=1)
    with pytest.raises(ValueError, match="70000"):
        RandomizedResponse(epsilon=1, n_categories=70000)
    with pytest.raises(ValueError, match="-2"):
        ExponentialMechanism(epsilon=1, sensitivity=-2)
    with pytest.raises(ValueError, match="zero"):
        MetricSelection(epsilon=1, pool=np.array([[0.0, 0.0], [1.0, 0.0]]))


# ---------------------------------------------------------------- Laplace
@pytest.mark.parametrize("eps,t,s", [(1.0, 7.3, 5), (0.5, 40.0, 16), (2.0, 3.0, 9), (0.1, 200.0, 25)])
def test_discrete_laplace_profile_closed_form_matches_summation(eps, t, s):
    closed = float(L.discrete_laplace_delta(eps, t, [s])[0])
    numeric = L.discrete_laplace_delta_numeric(eps, t, s)
    assert closed == pytest.approx(numeric, rel=1e-9, abs=1e-15)


def test_continuous_profile_is_limit_of_discrete():
    eps, mu = 0.7, 1.9
    t = 1e5
    s = int(mu * t)
    assert float(L.discrete_laplace_delta(eps, t, [s])[0]) == pytest.approx(
        L.continuous_laplace_delta(eps, mu), rel=1e-4
    )


def test_continuous_laplace_profile_by_integration():
    # integrate (p - e^eps q)_+ for Lap(0, b) vs Lap(diam, b) numerically
    from scipy import integrate

    eps, b, diam = 0.8, 1.0, 1.5

    def p(x):
        return math.exp(-abs(x) / b) / (2 * b)

    def q(x):
        return math.exp(-abs(x - diam) / b) / (2 * b)

    def hockey_stick(x):
        return max(0.0, p(x) - math.exp(eps) * q(x))

    val = integrate.quad(hockey_stick, -60, diam, points=[0.0, (diam - eps * b) / 2], limit=200)[0]
    assert val == pytest.approx(L.continuous_laplace_delta(eps, diam / b), rel=1e-7)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-3), (0.5, 1e-5), (2.0, 0.05)])
def test_laplace_exact_calibration_beats_seed_and_is_valid(eps, delta):
    m = LaplaceMechanism(epsilon=eps, delta=delta, low=0.0, high=10.0)
    D = m.diam_steps
    seed_t = L.laplace_b_seed(eps, delta, D)
    assert m.scale_steps < seed_t  # less noise than the seed ...
    # ... and still (eps, delta)-DP by brute-force summation at the worst shift
    assert L.discrete_laplace_delta_numeric(eps, m.scale_steps, D) <= delta
    # the seed's scale is valid too (looser)
    assert L.discrete_laplace_delta_numeric(eps, seed_t, D) <= delta
    # tight: 0.1% less noise would break the guarantee
    assert L.discrete_laplace_delta_numeric(eps, m.scale_steps * 0.999, D) > delta
    # continuous analogue: exact b = diam/(eps - 2 log(1-delta)) within grid effects
    assert m.scale_steps == pytest.approx(L.laplace_b_exact(eps, delta, D), rel=1e-3)


def test_laplace_worst_shift_is_the_diameter():
    t, D = 12.0, 40
    d = L.discrete_laplace_delta(0.6, t, np.arange(1, D + 1))
    assert np.all(np.diff(d) >= -1e-15) and d[-1] == d.max()


def test_laplace_pure_and_error_and_clip():
    m = LaplaceMechanism(epsilon=0.5, low=0.0, high=1.0, grid_bits=6)
    assert m.scale_steps == m.diam_steps / 0.5
    pl = m.privacy_loss()
    assert pl.epsilon == 0.5 and pl.delta == 0.0 and len(pl.rdp) == len(RDP_ORDERS)
    assert max(pl.rdp) <= 0.5 + 1e-12 and all(np.diff(pl.rdp) >= -1e-12)
    x = np.concatenate([np.full(100_000, 0.5), [-3.0, 7.0]])
    y, n_clipped = m.release(x, RandomSource(5), return_clipped=True)
    assert n_clipped == 2
    err = np.abs(y[:100_000] - m.grid.to_values(m.grid.snap(np.array([0.5])))[0]).mean()
    assert err == pytest.approx(m.expected_error(), rel=0.02)
    assert m.expected_error() == pytest.approx(2.0, rel=0.01)  # b = diam/eps


def test_discrete_laplace_rdp_matches_summation():
    t, s = 6.0, 4
    x = np.arange(-600, 601, dtype=float)  # tails beyond carry < 1e-40 of the sum
    p = S.discrete_laplace_pmf(x, t)
    q = S.discrete_laplace_pmf(x - s, t)
    rdp = L.discrete_laplace_rdp(t, s, orders=(1.5, 2.0, 8.0))
    for a, v in zip((1.5, 2.0, 8.0), rdp, strict=True):
        assert v == pytest.approx(logsumexp(a * np.log(p) + (1 - a) * np.log(q)) / (a - 1), rel=1e-9)


# ---------------------------------------------------------------- Gaussian
def test_analytic_gaussian_published_value():
    s = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert s == pytest.approx(3.73, abs=0.005)  # Balle & Wang 2018 (eps=1, delta=1e-5)
    # independent check: recompute delta from the closed form with plain scipy.stats.norm
    from scipy.stats import norm

    def d(sg):
        return norm.cdf(1 / (2 * sg) - sg) - math.e * norm.cdf(-1 / (2 * sg) - sg)

    assert d(s) <= 1e-5 < d(s * 0.9999)
    assert analytic_gaussian_delta(1.0, s, 1.0) == pytest.approx(d(s), rel=1e-9)


@pytest.mark.parametrize("eps", [0.1, 0.5, 0.9])
def test_classic_gaussian_is_larger(eps):
    assert G.classic_gaussian_sigma(eps, 1e-5) > analytic_gaussian_sigma(eps, 1e-5, 1.0)


def test_analytic_gaussian_scales_and_large_eps():
    assert analytic_gaussian_sigma(1.0, 1e-5, 7.0) == pytest.approx(
        7 * analytic_gaussian_sigma(1.0, 1e-5, 1.0), rel=1e-9
    )
    s = analytic_gaussian_sigma(20.0, 1e-5, 1.0)
    assert 0 < analytic_gaussian_delta(20.0, s, 1.0) <= 1e-5


def test_cks_theorem7_matches_bruteforce():
    eps, sigma2, s = 1.0, 6.25, 3
    x = np.arange(-400, 401)
    p = S.discrete_gaussian_pmf(x, sigma2)
    q = S.discrete_gaussian_pmf(x - s, sigma2)
    brute = np.sum(np.maximum(p - math.exp(eps) * q, 0))
    assert float(G.discrete_gaussian_delta(eps, sigma2, [s])[0]) == pytest.approx(brute, rel=1e-9)


def test_gaussian_mechanism_calibration_is_exactly_valid():
    m = GaussianMechanism(epsilon=1.0, delta=1e-5, low=0.0, high=1.0, grid_bits=4)
    D = m.diam_steps
    x = np.arange(-20 * D - 200, 20 * D + 201)
    s2 = float(m.sigma2_exact)
    p = S.discrete_gaussian_pmf(x, s2)
    q = S.discrete_gaussian_pmf(x - D, s2)
    assert np.sum(np.maximum(p - math.e * q, 0)) <= 1e-5
    assert m.sigma_steps == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5, D), rel=0.01)
    pl = m.privacy_loss()
    assert pl.gdp_mu is None and pl.rdp[3] == pytest.approx(2.0 * D**2 / (2 * s2))
    y = m.release(np.full(200_000, 0.25), RandomSource(2))
    k0 = m.grid.snap(np.array([0.25]))[0]
    assert np.abs(y / m.step - k0).mean() * m.step == pytest.approx(m.expected_error(), rel=0.02)


# ---------------------------------------------------------------- randomized response
@pytest.mark.parametrize("eps,delta,k", [(1.0, 0.0, 2), (0.5, 0.0, 5), (2.0, 1e-3, 10)])
def test_rr_probabilities(eps, delta, k):
    m = RandomizedResponse(epsilon=eps, delta=delta, n_categories=k)
    target = (1 - delta) / (k - 1 + math.exp(eps))
    assert target <= m.p < target + 1e-9
    assert m.expected_error() == pytest.approx((k - 1) * m.p)
    assert m.keep <= math.exp(eps) * m.p + delta + 1e-15 or m.keep <= math.exp(eps) * m.p + delta
    v = np.full(300_000, 1)
    y = m.release(v, RandomSource(4))
    freq = np.bincount(y, minlength=k) / y.size
    assert freq[1] == pytest.approx(m.keep, abs=0.004)
    others = np.delete(freq, 1)
    assert np.allclose(others, m.p, atol=0.004)


def test_rr_binary_flip_probability():
    m = RandomizedResponse(epsilon=1.0, n_categories=2)
    assert m.p == pytest.approx(1 / (1 + math.e), abs=1e-9)


def test_rr_rdp_matches_bruteforce():
    m = RandomizedResponse(epsilon=1.0, n_categories=4)
    P = np.array([m.keep, m.p, m.p, m.p])
    Q = np.array([m.p, m.keep, m.p, m.p])
    rdp = m.privacy_loss().rdp
    for a, v in zip(RDP_ORDERS, rdp, strict=True):
        assert v == pytest.approx(logsumexp(a * np.log(P) + (1 - a) * np.log(Q)) / (a - 1), rel=1e-9)
    assert max(rdp) <= 1.0 + 1e-9


# ---------------------------------------------------------------- exponential
def test_exponential_frequencies_and_stability():
    m = ExponentialMechanism(epsilon=2.0, sensitivity=1.0)
    u = np.array([0.0, 1.0, 3.0]) + 1e6  # huge offset: must not overflow
    idx = m.select(np.tile(u, (200_000, 1)), RandomSource(1))
    w = np.exp(2.0 * (u - u.max()) / 2.0)
    assert np.allclose(np.bincount(idx, minlength=3) / idx.size, w / w.sum(), atol=0.004)
    assert isinstance(m.select(u, RandomSource(1)), int)


@pytest.mark.parametrize(
    "logw",
    [
        [0.0, -0.5, -1.0, -np.inf, -2.0],  # an excluded candidate
        list(-0.02 * np.arange(200)),  # many candidates, flat-ish
        [0.0] + [-6.0] * 60,  # one dominant: acceptance rate ~1/k
    ],
)
def test_exponential_sampler_matches_exact_law(logw):
    """Chi-square against exp(w) / sum exp(w) (the sampler's exact law)."""
    from scipy.stats import chisquare

    from dpstudio.engine.mechanisms.exponential import sample_log_weights

    logw = np.asarray(logw)
    n = 200_000
    idx = sample_log_weights(np.tile(logw, (n, 1)), RandomSource(11))
    p = np.exp(logw - logw.max())
    p /= p.sum()
    counts = np.bincount(idx, minlength=logw.size)
    assert counts[p == 0].sum() == 0
    keep = p * n >= 5
    assert chisquare(counts[keep], p[keep] / p[keep].sum() * counts[keep].sum()).pvalue > 1e-4


class _ScriptedSource(RandomSource):
    """Seeded source whose uint32 words come from a script (then zeros)."""

    def __init__(self, words):
        super().__init__(0)
        self.words = list(words)

    def uint32(self, n):
        out = np.zeros(int(n), dtype=np.uint32)
        take = self.words[: int(n)]
        out[: len(take)] = take
        self.words = self.words[len(take) :]
        return out


def test_exponential_sampler_reaches_every_candidate_with_positive_weight():
    """With log-weights [0, -40] candidate 1 has probability e^-40 ~ 4e-18.  An inverse CDF on
    a float uniform can never output it (the float CDF is [1, 1]), so for a neighbour where its
    weight is e^eps times larger or smaller the ratio is 0 vs > 0: the pure eps claim would
    quietly be (eps, ~1e-16).  The exact sampler outputs it on the right random bits: proposal
    word 2^31 picks index 1 of 2, and an all-zero uniform accepts any positive probability."""
    from dpstudio.engine.mechanisms.exponential import sample_log_weights

    logw = np.array([[0.0, -40.0]])
    assert sample_log_weights(logw, _ScriptedSource([2**31] * 4)) == [1]
    # and with ordinary bits it is the dominant candidate, as it should be nearly always
    assert sample_log_weights(np.tile(logw, (1000, 1)), RandomSource(5)).max() == 0


def test_exponential_sampler_rejects_bad_weights():
    from dpstudio.engine.mechanisms.exponential import sample_log_weights

    for bad in ([[np.nan, 0.0]], [[np.inf, 0.0]], [[-np.inf, -np.inf]]):
        with pytest.raises(ValueError):
            sample_log_weights(np.array(bad), RandomSource(0))
    assert sample_log_weights(np.zeros((0, 4)), RandomSource(0)).shape == (0,)
    one = np.full((3, 50_000), -np.inf)
    one[:, 777] = 0.0  # a single live candidate among many excluded
    assert sample_log_weights(one, RandomSource(0)).tolist() == [777, 777, 777]


# ---------------------------------------------------------------- metric selection
def test_metric_selection_law_has_factor_half():
    rng = np.random.default_rng(0)
    pool = rng.normal(size=(6, 3))
    x0 = rng.normal(size=3)
    m = MetricSelection(epsilon=3.0, pool=pool)
    idx = m.select(np.tile(x0, (200_000, 1)), RandomSource(3))
    from dpstudio.engine.mechanisms import angular_distance

    d = angular_distance(x0, pool)[0]
    w = np.exp(-1.5 * d)
    assert np.allclose(np.bincount(idx, minlength=6) / idx.size, w / w.sum(), atol=0.004)
    assert m.privacy_loss().kind == "metric"


def test_metric_selection_self_index_excludes_own_row():
    pool = np.random.default_rng(1).normal(size=(50, 4))
    m = MetricSelection(epsilon=50.0, pool=pool)
    idx = m.select(pool, RandomSource(2), self_index=np.arange(50))
    assert np.all(idx != np.arange(50))
    out = m.release(pool[:3], RandomSource(2), self_index=[0, 1, 2])
    assert out.shape == (3, 4)


def test_randomized_response_on_one_category_keeps_it():
    """One category (a DP list that kept only "other"): nothing to randomize, 0-DP, error 0."""
    from dpstudio.engine.mechanisms.randomized_response import RandomizedResponse
    from dpstudio.engine.rng import RandomSource

    rr = RandomizedResponse(epsilon=0.5, n_categories=1)
    assert rr.keep == 1.0 and rr.p == 0.0 and rr.expected_error() == 0.0
    assert np.array_equal(rr.release(np.zeros(50, dtype=np.int64), RandomSource(0)), np.zeros(50))
    assert all(v == 0.0 for v in rr.privacy_loss().rdp)
    with pytest.raises(ValueError, match="category codes must lie in"):
        rr.release(np.array([0, 1]), RandomSource(0))
    with pytest.raises(ValueError, match=r"\[1, 65536\]"):
        RandomizedResponse(epsilon=0.5, n_categories=0)
