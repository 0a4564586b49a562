"""Objective perturbation for logistic regression (dpstudio.engine.models.objective): the
calibration's constants, the approximate minimiser's accounting, the noise laws, and an audit on
replace-one neighbours that catches a halved noise scale (exact privacy losses of the drawn
releases, plus the statistical audit of dpstudio.engine.audit).  Every draw is seeded."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstudio.engine.audit import empirical_epsilon
from dpstudio.engine.mechanisms.gaussian import analytic_gaussian_sigma
from dpstudio.engine.models import objective as op
from dpstudio.engine.rng import RandomSource

ZETA = math.sqrt(2.0)  # ||(z, 1)|| for R = 1


# ---- calibration -------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 8.0])
@pytest.mark.parametrize(("n", "dim", "problems"), [(50, 3, 1), (400, 31, 1), (11077, 15, 1), (3000, 10, 4)])
def test_privacy_loss_adds_up_to_the_budget(noise, eps, n, dim, problems):
    c = op.calibrate(n, dim, eps, 1e-5, noise=noise, problems=problems)
    assert c.noise == noise
    assert c.proven_epsilon <= eps * (1 + 1e-12)
    assert c.proven_epsilon >= eps * (1 - 1e-9)  # nothing wasted
    assert c.proven_delta <= 1e-5 * (1 + 1e-12)
    assert op.privacy_loss_bound(c) == (c.proven_epsilon, c.proven_delta)
    # the pieces: Jacobian, noise and tolerance of each problem
    assert c.eps_jacobian == pytest.approx(math.log1p(0.25 * 2.0 / c.ridge))
    assert c.eps_jacobian <= (c.epsilon_problem - c.eps_tolerance) / 2 * (1 + 1e-12)
    assert c.eps_tolerance == pytest.approx(0.01 * eps / problems)
    if noise == "laplace":
        assert c.noise_scale == pytest.approx(2 * ZETA / c.eps_noise)  # replace-one: 2 s / eps_n
        assert c.delta_noise == 0.0 and c.proven_delta == 0.0
    else:
        assert op.gaussian_noise_epsilon(c.noise_scale, ZETA, c.delta_noise) <= c.eps_noise
        assert op.gaussian_noise_epsilon(c.noise_scale * (1 - 1e-9), ZETA, c.delta_noise) > c.eps_noise
        assert c.tolerance_scale == pytest.approx(analytic_gaussian_sigma(c.eps_tolerance, c.delta_tolerance, 2e-7))


def test_constants_of_the_calibration():
    c = op.calibrate(1000, 5, 1.0, 1e-5, norm_bound=3.0, weight_max=2.5, noise="laplace")
    zeta = math.sqrt(10.0)
    assert c.feature_norm == pytest.approx(zeta)
    assert c.grad_bound == pytest.approx(2.5 * zeta)  # |l'| <= 1 times the weight
    assert c.hess_bound == pytest.approx(2.5 * 0.25 * 10.0)  # w c zeta^2, c = 1/4
    # the Gaussian tail: Phi(-t) + 2 Phi(-2t) = delta_n (the one-sided inner products)
    from scipy.special import ndtr

    t = op.gaussian_tail(1e-5)
    assert ndtr(-t) + 2 * ndtr(-2 * t) <= 1e-5
    assert ndtr(-t) + 2 * ndtr(-2 * t) == pytest.approx(1e-5, rel=1e-9)
    assert 4.26 < t < 4.27


def test_gaussian_tail_bound_holds_by_simulation():
    """P(max(0, -g1) + max(0, g2) > 2t) <= Phi(-t) + 2 Phi(-2t) for correlated standard normals
    (rho = -1 is the worst case: then the sum is 2 max(0, g2)); checked at t = 1, 1.5 where the
    probabilities are large enough to estimate from 400,000 draws."""
    g = np.random.default_rng(0)
    for rho in (-1.0, -0.5, 0.0, 0.5, 0.9):
        x = g.normal(size=400_000)
        y = rho * x + math.sqrt(1 - rho * rho) * g.normal(size=400_000)
        for t in (1.0, 1.5):
            p = np.mean(np.maximum(0, -x) + np.maximum(0, y) > 2 * t)
            assert p <= op.gaussian_tail_probability(t) + 0.002, (rho, t, p)


def test_user_lambda_and_chaudhuris_extra_ridge():
    # a lambda strong enough: m = n lam, no extra ridge
    c = op.calibrate(1000, 5, 1.0, 1e-5, lam=0.01, noise="gaussian")
    assert c.ridge == pytest.approx(10.0) and c.extra_ridge == 0.0 and not c.lam_default
    # too weak for eps_J <= eps/2: m = w c zeta^2 / (e^{eps_o/2} - 1), Delta = m - n lam
    c = op.calibrate(1000, 5, 1.0, 1e-5, lam=1e-6, noise="gaussian")
    eps_o = 0.99
    assert c.ridge == pytest.approx(0.5 / math.expm1(eps_o / 2), rel=1e-12)
    assert c.extra_ridge == pytest.approx(c.ridge - 1e-3)
    assert c.eps_jacobian == pytest.approx(eps_o / 2) and c.eps_noise == pytest.approx(eps_o / 2)


def test_default_ridge_minimises_the_public_prediction_with_the_curvature_prior():
    """The default ridge: the grid m_half 2^(k/4) point minimising (E||b||^2 + m^2 B^2)/(2(m + h)),
    h = CURVATURE_COEF n / D (public).  h = 0 is the worst-case rule E||b||^2/(2m) + m B^2/2; a
    curvature prior lowers the ridge at large n eps, never raises it."""
    assert op.predicted_excess(900.0, 2.0, 15.0) == pytest.approx(900.0 / 4.0 + 2.0 * 225.0 / 2.0)
    assert op.predicted_excess(900.0, 2.0, 15.0, 3.0) == pytest.approx((900.0 + 4.0 * 225.0) / 10.0)
    for n, dim, eps in [(11077, 15, 2.0), (18036, 15, 8.0), (398, 31, 1.0), (5000, 10, 0.5)]:
        c = op.calibrate(n, dim, eps, 1e-5, noise="laplace")
        assert c.curvature == pytest.approx(op.CURVATURE_COEF * n / dim)
        assert c.to_json()["curvature_prior"] == c.curvature
        worst = op.calibrate(n, dim, eps, 1e-5, noise="laplace", curvature=0.0)
        assert c.ridge <= worst.ridge
        # the chosen ridge beats its grid neighbours under the public prediction
        hb, B = c.hess_bound, c.reference_norm
        m_half = op.ridge_for_jacobian((c.epsilon_problem - c.eps_tolerance) / 2.0, hb)
        k = round(4 * math.log2(c.ridge / m_half))
        assert c.ridge == pytest.approx(m_half * 2 ** (k / 4), rel=1e-12)

        def score(m, cal=c, hb=hb, dim=dim, B=B):
            ej = op.jacobian_epsilon(m, hb)
            scale = op.laplace_scale(cal.epsilon_problem - cal.eps_tolerance - ej, cal.grad_bound)
            return op.predicted_excess(op.expected_noise_norm2("laplace", scale, dim), m, B, cal.curvature)

        assert c.predicted_excess * n == pytest.approx(score(c.ridge), rel=1e-12)
        for kk in (k - 1, k + 1):
            if kk >= 0:
                assert score(m_half * 2 ** (kk / 4)) >= score(c.ridge)
    # Adult's size at eps = 2: the prior takes the ridge from ~2 (worst case) to about 1
    c = op.calibrate(11077, 15, 2.0, 1e-5)
    assert c.ridge < 0.75 * op.calibrate(11077, 15, 2.0, 1e-5, curvature=0.0).ridge
    # a small table keeps (almost) the worst-case ridge
    small = op.calibrate(398, 31, 1.0, 1e-5)
    assert small.ridge == pytest.approx(op.calibrate(398, 31, 1.0, 1e-5, curvature=0.0).ridge)
    with pytest.raises(ValueError, match="curvature"):
        op.calibrate(100, 3, 1.0, 1e-5, curvature=-1.0)


def test_calibration_refuses_bad_input():
    with pytest.raises(ValueError, match="delta > 0"):
        op.calibrate(100, 3, 1.0, 0.0, noise="gaussian")
    with pytest.raises(ValueError, match="noise"):
        op.calibrate(100, 3, 1.0, 1e-5, noise="cauchy")
    # pure epsilon: the automatic choice can only be the Gamma-norm noise
    assert op.calibrate(100, 3, 1.0, 0.0).noise == "laplace"


@pytest.mark.parametrize("seed", range(5))
def test_jacobian_ratio_is_bounded_by_one_factor(seed):
    """det(B + h uu')/det(B + h' u'u'') <= 1 + w c zeta^2/m for B >= m I (the replace-one
    Jacobian term; Chaudhuri et al. 2011 use the square of the factor)."""
    g = np.random.default_rng(seed)
    D, m = 6, 0.7
    A = g.normal(size=(40, D))
    B = A.T @ A * g.random() + m * np.eye(D)
    worst = 0.0
    for _ in range(200):
        u, up = g.normal(size=D), g.normal(size=D)
        u *= ZETA / np.linalg.norm(u)
        up *= ZETA / np.linalg.norm(up)
        h, hp = 0.25 * g.random(), 0.25 * g.random()
        r = np.linalg.slogdet(B + h * np.outer(u, u))[1] - np.linalg.slogdet(B + hp * np.outer(up, up))[1]
        worst = max(worst, r)
    assert worst <= op.jacobian_epsilon(m, 0.25 * 2.0)
    # and the bound is attained when B = m I, h = c, h' = 0
    exact = np.linalg.slogdet(m * np.eye(D) + 0.25 * np.outer(u, u))[1] - D * math.log(m)
    assert exact == pytest.approx(op.jacobian_epsilon(m, 0.5))


# ---- the minimiser and its tolerance -------------------------------------------------------------
def _toy(n=500, d=4, seed=0):
    g = np.random.default_rng(seed)
    Z = g.normal(size=(n, d))
    Z /= np.maximum(1.0, np.linalg.norm(Z, axis=1))[:, None]
    y = np.where(Z @ np.arange(1.0, d + 1) + 0.5 * g.normal(size=n) > 0, 1.0, -1.0)
    return y[:, None] * np.hstack([Z, np.ones((n, 1))])


def test_approximate_minimiser_is_within_the_accounted_displacement():
    u = _toy()
    c = op.calibrate(len(u), u.shape[1], 1.0, 1e-5, noise="gaussian")
    w = np.ones(len(u))
    rng = RandomSource(11)
    for _ in range(20):
        b = op.draw_noise(rng, c.noise, c.dim, c.noise_scale)
        approx, info = op.minimise(u, w, c.ridge, b, 0.5 * c.ridge * c.displacement)
        exact, _ = op.minimise(u, w, c.ridge, b, 1e-6 * c.ridge * c.displacement)
        # ||theta~ - theta*|| <= ||grad F(theta~)|| / m <= r / 2 (half the accounted r)
        assert np.linalg.norm(approx - exact) <= 0.5 * c.displacement
        assert info["grad_norm"] <= 0.5 * c.ridge * c.displacement
    # the tolerance noise covers a shift of 2 r at (eps_t, delta_t) and is in the total
    assert c.tolerance_scale == analytic_gaussian_sigma(c.eps_tolerance, c.delta_tolerance, 2 * c.displacement)
    assert c.proven_epsilon == pytest.approx(c.eps_jacobian + c.eps_noise + c.eps_tolerance)
    assert c.proven_delta == pytest.approx(c.delta_noise + c.delta_tolerance)


def test_newton_survives_saturated_starts():
    """Noise far larger than the data: the first Newton steps are huge and must be damped."""
    K = 1000
    bg = np.vstack([np.tile([-ZETA, 0.0], (K, 1)), np.tile([0.0, -ZETA], (K, 1))])
    theta, info = op.minimise(bg, np.ones(2 * K), 0.601, np.array([0.976, -3.964]), 1e-8)
    assert np.linalg.norm(op.gradient(theta, bg, np.ones(2 * K), 0.601, np.array([0.976, -3.964]))) <= 1e-8


def test_release_refuses_rows_beyond_the_bound_and_bad_weights():
    u = _toy(n=50)
    c = op.calibrate(50, u.shape[1], 1.0, 1e-5)
    with pytest.raises(ValueError, match="norm bound"):
        op.release(u * 2.0, c, RandomSource(1))
    with pytest.raises(ValueError, match="weights"):
        op.release(u, c, RandomSource(1), weights=np.full(50, 2.0))
    r = op.release(u, c, RandomSource(1))
    assert np.all(np.rint(r.theta / 2.0**-30) * 2.0**-30 == r.theta)  # snapped to the public grid


# ---- noise laws ------------------------------------------------------------------------------------
def test_gamma_norm_noise_law():
    D, k = 5, 2.0
    rng = RandomSource(3)
    draws = np.array([op.gamma_norm_noise(rng, D, k) for _ in range(20000)])
    norms = np.linalg.norm(draws, axis=1)
    # ||b|| ~ Gamma(D, k): mean D k, sd sqrt(D) k; 20000 draws: the mean is within 3 sd / sqrt(N)
    assert abs(norms.mean() - D * k) < 3 * math.sqrt(D) * k / math.sqrt(20000) * 3
    assert abs(norms.var() - D * k * k) < 0.05 * D * k * k
    # uniform direction: the mean unit vector is ~0
    assert np.linalg.norm((draws / norms[:, None]).mean(axis=0)) < 0.03
    assert np.all(op.secure_exponential(RandomSource(1), 1000) > 0)


# ---- audit on replace-one neighbours ---------------------------------------------------------------
def _neighbours(K=1000):
    """Two tables differing in one row: u (angle 0) vs u' (angle 150 degrees), both of norm
    zeta = sqrt(2).  K copies of -u and of -u' pin theta where u'theta, u''theta ~ -3, so
    l'(.) ~ -1 for both and the gradient shift ||l'(u'theta) u - l'(u''theta) u'|| ~ 1.8 zeta:
    close to the replace-one worst case 2 zeta (not attainable for the logistic loss)."""
    phi = math.radians(150)
    u = ZETA * np.array([1.0, 0.0])
    up = ZETA * np.array([math.cos(phi), math.sin(phi)])
    bg = np.vstack([np.tile(-u, (K, 1)), np.tile(-up, (K, 1))])
    return np.vstack([bg, u]), np.vstack([bg, up])


def _draws(U, cal, seed, trials, mult=1.0):
    rng = RandomSource(seed)
    return np.array([op.release(U, cal, rng, noise_multiplier=mult).theta for _ in range(trials)])


def test_audit_laplace_exact_losses_catch_a_halved_noise_scale():
    """Releases drawn on both neighbours; each draw's exact privacy loss (change of variables,
    docs/models.md) under the law that drew it.  The honest mechanism stays below its claim on
    every draw and comes close (the audit is not vacuous); with half the noise scale draws
    exceed the claim by far."""
    D1, D2 = _neighbours()
    n = len(D1)
    cal = op.calibrate(n, 2, 1.0, 0.0, lam=5.0 / n, noise="laplace")
    claim = cal.proven_epsilon
    for U, V, seed in ((D1, D2, 7), (D2, D1, 8)):
        honest = op.exact_privacy_loss(_draws(U, cal, seed, 1500), U, V, cal)
        assert honest.max() <= claim
        assert honest.max() >= 0.8 * cal.eps_noise  # the pair is near the worst case
        halved = op.exact_privacy_loss(_draws(U, cal, seed, 1500, 0.5), U, V, cal, noise_scale=cal.noise_scale / 2)
        assert halved.max() > 1.4 * claim
        assert np.mean(halved > claim) > 0.2


def test_audit_gaussian_exact_losses_catch_a_halved_noise_scale():
    """(eps, delta) with delta = 1 %: P(loss > eps) <= delta.  The honest mechanism's draws exceed
    eps far less often; with half the noise scale ~8 % of them do."""
    D1, D2 = _neighbours()
    n = len(D1)
    cal = op.calibrate(n, 2, 1.0, 1e-2, lam=5.0 / n, noise="gaussian")
    claim, delta = cal.proven_epsilon, cal.proven_delta
    honest = op.exact_privacy_loss(_draws(D1, cal, 9, 2000), D1, D2, cal)
    assert np.mean(honest > claim) <= delta
    halved = op.exact_privacy_loss(_draws(D1, cal, 9, 2000, 0.5), D1, D2, cal, noise_scale=cal.noise_scale / 2)
    assert np.mean(halved > claim) > 3 * delta


def test_audit_reconstructed_noise_has_the_calibrated_scale():
    """b = -grad G_D(theta) read back from each release has the calibrated law (sd sigma per
    coordinate); half the scale is caught by a wide margin."""
    D1, D2 = _neighbours(K=300)
    n = len(D1)
    cal = op.calibrate(n, 2, 1.0, 1e-5, lam=5.0 / n, noise="gaussian")

    def noise_sd(U, mult, seed):
        th = _draws(U, cal, seed, 1500, mult)
        s = op._sigmoid(-(th @ U.T))
        b = s @ U - cal.ridge * th
        return float(b.std())

    for U, seed in ((D1, 21), (D2, 22)):
        assert abs(noise_sd(U, 1.0, seed) / cal.noise_scale - 1) < 0.06
        assert noise_sd(U, 0.5, seed) / cal.noise_scale < 0.56


def test_statistical_audit_of_releases_passes():
    """dpstudio.engine.audit's lower bound on epsilon from releases on the two neighbours (the
    projection on the mean difference, on a grid): below the claim for the honest mechanism."""
    D1, D2 = _neighbours(K=300)
    n = len(D1)
    cal = op.calibrate(n, 2, 1.0, 0.0, lam=5.0 / n, noise="laplace")
    A, B = _draws(D1, cal, 31, 3000), _draws(D2, cal, 32, 3000)
    direction = A.mean(0) - B.mean(0)
    direction /= np.linalg.norm(direction)
    pa, pb = A @ direction, B @ direction
    edges = np.linspace(pa.min(), pa.max(), 60)
    r = empirical_epsilon(np.digitize(pa, edges), np.digitize(pb, edges), 0.0, ordered=True)
    assert r["empirical_epsilon_lower_bound"] <= cal.proven_epsilon
    assert r["empirical_epsilon_lower_bound"] > 0.05  # the neighbours are told apart at all


def test_erratum_e17_intercept_and_replace_one_constants():
    """docs/errata.md E17: Chaudhuri et al. 2011's constants (shift 2, c = 1/4 for ||x|| <= 1)
    applied to (z, 1) with ||z|| <= R need zeta = sqrt(R^2 + 1): shift 2 zeta, Hessian c zeta^2.
    With zeta = R the rows (z, 1) with ||z|| = R are refused (or, unchecked, get too little
    noise: the exact losses of the audit above exceed the claim); without the replace-one 2 the
    audit's honest losses exceed the claim (checked by re-introducing both)."""
    c = op.calibrate(1000, 3, 1.0, 1e-5, norm_bound=1.0, noise="laplace")
    assert c.grad_bound == pytest.approx(ZETA) and c.hess_bound == pytest.approx(0.25 * 2.0)
    assert c.noise_scale == pytest.approx(2.0 * ZETA / c.eps_noise)
    z = np.array([[0.6, 0.8, 1.0]])  # ||z|| = R = 1, then the intercept
    u = np.repeat(z, 1000, axis=0)
    assert op.release(u, c, RandomSource(2)).theta.shape == (3,)
