"""Gibbs-posterior logistic regression: exact tail condition, the seed's Cor. 10(ii) mistake,
the exact rejection sampler (law and cap), and the Langevin comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpstudio.engine.models import gibbs_logistic as gl
from dpstudio.engine.models.langevin import secure_normal, ula_schedule
from dpstudio.engine.rng import RandomSource


def test_exact_condition_is_tight():
    for eps in (0.1, 0.5, 1.0, 2.0, 5.0):
        for delta in (1e-3, 1e-5, 1e-8):
            a = gl.exact_a_max(eps, delta)
            assert gl.tail_probability(a, eps) == pytest.approx(delta, rel=1e-9)
            assert gl.tail_probability(a * 1.001, eps) > delta


def test_seed_cor10_violates_exact_condition_at_eps2():
    # BRIEF 3.7: at delta=1e-5, eps=2 the seed's beta gives a=0.0833 > allowed 0.0800
    a_seed, a_ok = gl.seed_cor10_a(2.0, 1e-5), gl.exact_a_max(2.0, 1e-5)
    assert round(a_seed, 3) == 0.083 and round(a_ok, 3) == 0.080 and a_seed > a_ok
    assert gl.tail_probability(a_seed, 2.0) > 1e-5  # the printed delta would be false
    m, L = 10.0, math.sqrt(2.0)
    assert gl.a_of_beta(gl.seed_cor10_beta(2.0, 1e-5, m, L), m, L) == pytest.approx(a_seed)
    # near eps <= 1 the closed form is (just) safe
    for eps in (0.25, 0.5, 1.0):
        assert gl.seed_cor10_a(eps, 1e-5) <= gl.exact_a_max(eps, 1e-5)


def test_lipschitz_includes_intercept():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(2000, 3))
    z /= np.linalg.norm(z, axis=1, keepdims=True)  # ||z|| = R = 1
    theta = rng.normal(size=(2000, 4)) * 5
    t = np.einsum("ij,ij->i", np.hstack([z, np.ones((2000, 1))]), theta)
    grad_norm = (1 / (1 + np.exp(t))) * math.sqrt(2.0)  # |l'(t)| * ||(z,1)||
    assert grad_norm.max() > 1.0  # exceeds the seed's L = R = 1
    assert grad_norm.max() <= gl.lipschitz_constant(1.0)


def test_calibration_delta_split_and_beta():
    cal = gl.calibrate(1000, 5, 1.0, 1e-5)
    assert cal.delta_gibbs + cal.delta_sampler == pytest.approx(1e-5, rel=1e-12)
    assert cal.tail <= cal.delta_gibbs
    assert cal.delta_sampler == pytest.approx((math.e + 1) * cal.gamma_target)
    assert cal.a <= cal.a_max


def _posterior_1d_grid(yz, beta, m):
    grid = np.linspace(-8, 8, 4001)
    U = np.array([gl.potential(np.array([g]), yz, beta, m) for g in grid])
    p = np.exp(-(U - U.min()))
    cdf = np.cumsum(p)
    return grid, cdf / cdf[-1]


def test_rejection_sampler_matches_posterior_1d():
    # D = 1 (intercept only): compare the sampler's law with the numerically integrated posterior
    rng = np.random.default_rng(1)
    y = np.where(rng.random(60) < 0.7, 1.0, -1.0)
    yz = y[:, None] * np.ones((60, 1))
    cal = gl.calibrate(60, 1, 1.0, 1e-5, lam=0.05)
    src = RandomSource(7)
    draws = np.array([gl.sample_rejection(yz, cal, src).theta[0] for _ in range(800)])
    grid, cdf = _posterior_1d_grid(yz, cal.beta, cal.m_pi)
    ks = stats.kstest(draws, lambda x: np.interp(x, grid, cdf))
    assert ks.pvalue > 1e-3


def test_acceptance_bound_is_a_lower_bound():
    rng = np.random.default_rng(2)
    n, d = 200, 3
    z = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = np.where(z.sum(1) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    yz = y[:, None] * np.hstack([z, np.ones((n, 1))])
    cal = gl.calibrate(n, d + 1, 1.0, 1e-5, prior_scale=3.0)
    theta0, _ = gl.find_mode(yz, cal.beta, cal.m_pi)
    t0 = yz @ theta0
    d0 = -1 / (1 + np.exp(t0))
    mu = -(cal.beta / cal.m_pi) * (yz.T @ d0)
    lower = gl.log_acceptance_lower(yz, cal.beta, cal.m_pi, mu - theta0)
    props = mu + rng.normal(size=(20000, d + 1)) / math.sqrt(cal.m_pi)
    T = yz @ props.T
    gap = cal.beta * (np.logaddexp(0, -T) - np.logaddexp(0, -t0)[:, None] - d0[:, None] * (T - t0[:, None])).sum(0)
    assert np.log(np.mean(np.exp(-gap))) >= lower - 0.02
    assert lower >= cal.log_p_worst


def test_sampler_polls_cancel():
    from dpstudio.engine.progress import Cancelled, CancelToken

    tok = CancelToken()
    tok.cancel()
    cal = gl.calibrate(10, 1, 1.0, 1e-5, lam=1.0)
    with pytest.raises(Cancelled):
        gl.sample_rejection(np.ones((10, 1)), cal, RandomSource(1), cancel=tok)


def test_secure_normal_is_standard_normal():
    z = secure_normal(RandomSource(3), 40000)
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_ula_needs_infeasible_steps_at_dp_gamma():
    cal = gl.calibrate(1000, 10, 1.0, 1e-5)
    sch = ula_schedule(cal.m_pi, cal.smoothness, cal.dim, cal.gamma_target)
    assert sch.tv_bound <= cal.gamma_target * (1 + 1e-9)
    assert sch.iterations > 1e12
