"""Accuracy floors (seed 004 Thm 5.3 / 5.5) and closed-form expected errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpstudio.engine.accounting import calibrate_gaussian_gdp, gdp_delta
from dpstudio.engine.bounds import (
    ColumnSpec, analytic_gaussian_mu, expected_error_curves, floor_continuous, floor_finite,
)

EPS = np.geomspace(1e-3, 20, 400)


def test_floor_formulas_and_broadcast():
    assert floor_continuous(10.0, 0.0) == pytest.approx(2.5)
    assert floor_continuous(4.0, 1.0, 0.1) == pytest.approx(0.9 * 4 / (2 * (1 + math.e)))
    assert floor_finite(3, 2.0, 1.0) == pytest.approx(2.0 * 3 / (3 + math.e))
    assert floor_finite(0, 1.0, 1.0) == 0.0
    out = floor_continuous(np.array([[1.0], [2.0]]), EPS[None, :])
    assert out.shape == (2, EPS.size) and np.all(np.diff(out, axis=1) <= 0)
    assert np.isfinite(floor_continuous(1.0, 1e4)) and np.isfinite(floor_finite(5, 1.0, 1e4))


def test_rr_meets_theorem_5_5_exactly():
    for m in (1, 2, 9):
        for d in (0.0, 1e-3, 0.2):
            cols = [ColumnSpec("categorical", "rr", n_categories=m + 1, delta=d)]
            err, flo = expected_error_curves(cols, EPS)
            p = (1 - d) / (m + np.exp(EPS))
            np.testing.assert_allclose(err[0], m * p, rtol=1e-12)  # BRIEF 3.2: gamma = m p
            np.testing.assert_allclose(err[0], flo[0], rtol=1e-12)  # equality with Thm 5.5


def test_no_mechanism_beats_its_floor():
    cols = []
    for d in (0.0, 1e-9, 1e-5, 1e-2, 0.3):
        cols.append(ColumnSpec("numeric", "laplace", diam=7.0, delta=d))
        cols.append(ColumnSpec("categorical", "rr", n_categories=5, kappa=2.0, delta=d))
        if d > 0:
            cols.append(ColumnSpec("numeric", "gaussian", diam=7.0, delta=d))
    err, flo = expected_error_curves(cols, EPS)
    assert np.all(err >= flo * (1 - 1e-12))
    # Laplace: E|Y-d| = b = diam/eps (delta 0) vs floor diam/(2(1+e^eps)): ratio 2(1+e^eps)/eps >= 4
    assert np.all(err[0] / flo[0] >= 4 - 1e-9)


def test_laplace_and_gaussian_closed_forms():
    cols = [ColumnSpec("numeric", "laplace", diam=3.0), ColumnSpec("numeric", "laplace", diam=3.0, delta=0.01),
            ColumnSpec("numeric", "gaussian", diam=2.0, delta=1e-5, weight=0.5)]
    err, _ = expected_error_curves(cols, [1.0, 2.0])
    np.testing.assert_allclose(err[0], [3.0, 1.5])
    # BRIEF 3.1 exact profile: b = diam/(eps - 2 log(1-delta))
    np.testing.assert_allclose(err[1], 3.0 / (np.array([1.0, 2.0]) - 2 * math.log(0.99)))
    # Gaussian at eps_col = 0.5 * 2 = 1: analytic sigma = 3.7306 * diam (Balle & Wang 2018)
    sigma = 2.0 * calibrate_gaussian_gdp(1.0, 1e-5)
    assert err[2, 1] == pytest.approx(sigma * math.sqrt(2 / math.pi), rel=1e-9)


def test_vectorised_analytic_gaussian_matches_bisection():
    eps = np.geomspace(1e-4, 100, 300)
    for d in (1e-10, 1e-5, 0.05):
        mu = analytic_gaussian_mu(eps, d)
        np.testing.assert_allclose(gdp_delta(mu, eps), d, rtol=1e-8)


def test_dict_columns_and_validation():
    err, flo = expected_error_curves([{"kind": "numeric", "mechanism": "laplace", "diam": 1.0}], [1.0])
    assert err.shape == flo.shape == (1, 1)
    with pytest.raises(ValueError):
        ColumnSpec("numeric", "rr", diam=1.0)
    with pytest.raises(ValueError):
        ColumnSpec("numeric", "gaussian", diam=1.0, delta=0.0)
    with pytest.raises(ValueError):
        expected_error_curves([ColumnSpec("numeric", "laplace", diam=1.0)], [0.0])


def test_50_columns_200_eps_are_vectorised():
    """50 columns x 200 epsilons in one call: one finite error per (column, eps), decreasing in
    eps (the speed itself is measured by benchmarks/bench_bounds.py, not asserted here)."""
    cols = [ColumnSpec("numeric", ("laplace", "gaussian")[j % 2], diam=1.0 + j,
                       delta=1e-6 if j % 2 else 0.0, weight=0.02) for j in range(50)]
    eps = np.geomspace(0.01, 20, 200)
    err, floor = expected_error_curves(cols, eps)
    err, floor = np.asarray(err), np.asarray(floor)
    assert err.shape == floor.shape and err.size == 50 * 200
    assert np.all(np.isfinite(err)) and np.all(err >= floor - 1e-12)
    assert np.all(np.diff(err, axis=1) <= 1e-12)  # more budget, less error


def test_laplace_exact_profile_used_for_the_error_curve():
    # BRIEF 3.1: Laplace with mu = diam/b has delta(eps) = max(0, 1 - e^{(eps - mu)/2}), so
    # b = diam/(eps - 2 log(1-delta)) meets (eps, delta) exactly.  Check by integrating
    # (p - e^eps q)_+ for Lap(0, b) vs Lap(diam, b).
    from scipy import integrate, stats
    diam, eps, d = 2.0, 0.8, 0.05
    err, _ = expected_error_curves([ColumnSpec("numeric", "laplace", diam=diam, delta=d)], [eps])
    b = err[0, 0]
    f = lambda x: max(stats.laplace.pdf(x, 0, b) - math.exp(eps) * stats.laplace.pdf(x, diam, b), 0.0)
    hs = integrate.quad(f, -50 * b, 50 * b, points=[0.0, diam], limit=400)[0]
    assert hs == pytest.approx(d, rel=1e-6)
