"""DP KDE: sensitivity (worst case attained), analytic vs corollary multiplier, GP noise covariance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstudio.engine import density as kde
from dpstudio.engine.rng import RandomSource


@pytest.mark.parametrize("d", [1, 2])
def test_rkhs_norm_of_worst_neighbour_equals_bound(d):
    n, h = 50, 0.2
    c = kde.kde_constant(n, h, d)
    a, b = np.zeros(d), np.ones(d)  # opposite corners of [0,1]^d
    # ||c (K_a - K_b)||_H^2 = c^2 (K(a,a) + K(b,b) - 2 K(a,b))
    norm = c * math.sqrt(2 - 2 * math.exp(-np.sum((a - b) ** 2) / (2 * h * h)))
    assert norm == pytest.approx(kde.kde_sensitivity(n, h, d, with_missing=False), rel=1e-12)
    assert kde.kde_sensitivity(n, h, d) <= kde.hrw_sensitivity(n, h, d)
    # any other pair is below the bound
    rng = np.random.default_rng(0)
    p, q = rng.random((1000, d)), rng.random((1000, d))
    norms = c * np.sqrt(2 - 2 * np.exp(-((p - q) ** 2).sum(1) / (2 * h * h)))
    assert norms.max() <= kde.kde_sensitivity(n, h, d)


def test_mahalanobis_sensitivity_on_grid_below_rkhs_norm():
    # seed 004 Thm 6.8 on a grid: ||M^{-1/2}(f_D - f_D')|| <= ||f_D - f_D'||_H
    n, h = 40, 0.15
    g = kde.grid_1d(30)
    M = kde.gram_1d(g, h) + 1e-12 * np.eye(30)
    c = kde.kde_constant(n, h, 1)
    diff = c * (np.exp(-((g - 0.0) ** 2) / (2 * h * h)) - np.exp(-((g - 1.0) ** 2) / (2 * h * h)))
    maha = math.sqrt(diff @ np.linalg.solve(M, diff))
    assert maha <= kde.kde_sensitivity(n, h, 1) * (1 + 1e-6)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
def test_analytic_multiplier_beats_corollary(eps):
    s = kde.kde_sensitivity(1000, 0.05, 1)
    assert kde.analytic_multiplier(eps, 1e-5, s) < kde.corollary_multiplier(eps, 1e-5, s)


def test_analytic_multiplier_exists_for_large_eps():
    s = kde.kde_sensitivity(1000, 0.05, 1)
    assert kde.analytic_multiplier(4.0, 1e-5, s) < kde.analytic_multiplier(1.0, 1e-5, s)


@pytest.mark.parametrize("d,size", [(1, 24), (2, 6)])
def test_gp_noise_covariance_monte_carlo(d, size):
    h = 0.2
    grids = [kde.grid_1d(size) for _ in range(d)]
    noise = kde.GPNoise.for_grids(grids, h)
    M = kde.gram_1d(grids[0], h)
    if d == 2:
        M = np.kron(M, M)
    cov = noise.covariance()
    assert np.all(np.linalg.eigvalsh(cov - M) >= -1e-12)  # jitter only adds noise
    draws = noise.sample(RandomSource(5), size=20000).reshape(20000, -1)
    emp = draws.T @ draws / draws.shape[0]
    assert np.max(np.abs(emp - M)) < 0.05


def test_kde_integrates_to_one_and_sampling():
    rng = np.random.default_rng(3)
    pts = rng.beta(2, 5, size=(2000, 1))
    g = kde.grid_1d(512)
    f = kde.kde_on_grid(pts, [g], 0.03, 2000)
    assert np.trapezoid(f, g) == pytest.approx(1.0, abs=0.02)
    u = kde.sample_from_grid_density(f, [g], 5000, np.random.default_rng(0))
    assert abs(u.mean() - 2 / 7) < 0.02
