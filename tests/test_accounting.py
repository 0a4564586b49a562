"""Accounting: RDP curves, conversions, exact GDP, composition - golden values with citations."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpstudio.engine.accounting import (
    RDP_ORDERS,
    PrivacyLoss,
    calibrate_gaussian_gdp,
    compose,
    gaussian_sigma_for_gdp_target,
    gdp_delta,
    gdp_epsilon,
    gdp_mu_for,
    rdp_gaussian,
    rdp_laplace,
    rdp_pure_dp,
    rdp_randomized_response,
    rdp_to_dp,
)

FINE_ORDERS = np.concatenate([np.arange(1.001, 100.0, 0.001)])


def _gauss_loss(sens, sigma, label="gaussian"):
    mu = sens / sigma
    return PrivacyLoss(epsilon=gdp_epsilon(mu, 1e-5), delta=1e-5, label=label, rdp=rdp_gaussian(sens, sigma), gdp_mu=mu)


# ------------------------------------------------------------------ golden values (published)


def test_golden_rdp_conversion_pure_dp_constant_curve():
    # google/differential-privacy, dp_accounting rdp_privacy_accountant_test.py,
    # test_compute_epsilon_delta_pure_dp: orders 2..32, constant RDP 1.1, delta 1e-5 ->
    # eps = 1.32783806176 at order 32 (their compute_epsilon uses the same Canonne-Kamath-
    # Steinke 2020 Prop. 12 / Balle et al. 2020 Thm 21 conversion).
    orders = np.arange(2, 33, dtype=float)
    eps, order = rdp_to_dp([1.1] * orders.size, 1e-5, orders=orders, return_order=True)
    assert eps == pytest.approx(1.32783806176, abs=1e-10)
    assert order == 32


def test_golden_rdp_gaussian_exactly_one_at_1e6():
    # Same test file, test_compute_epsilon_delta_gaussian: a single Gaussian with noise
    # multiplier 4.530877117 (Mironov 2017 RDP alpha/(2 sigma^2)), orders 1.000..99.999 step 1e-3,
    # gives exactly (1, 1e-6) under the improved conversion.
    orders = np.arange(1001, 100000) * 0.001  # order 1 (KL) carries no conversion; dropped
    eps = rdp_to_dp(rdp_gaussian(1.0, 4.530877117, orders=orders), 1e-6, orders=orders)
    assert eps == pytest.approx(1.0, abs=1e-6)


def test_golden_mironov_gaussian_rdp():
    # Mironov 2017, Prop. 7 (and dp_accounting test_compute_rdp_gaussian): alpha/(2 sigma^2).
    r = rdp_gaussian(1.0, 2.71828, orders=[3.14159])
    assert r[0] == pytest.approx(3.14159 / (2 * 2.71828**2), rel=1e-14)
    r = rdp_gaussian(2.0, 4.0)
    assert np.allclose(r, np.asarray(RDP_ORDERS) * 4 / 32)


def test_golden_balle_wang_analytic_gaussian_sigma():
    # Balle & Wang 2018 (ICML), analytic Gaussian mechanism, Thm 8: for (eps, delta) = (1, 1e-5)
    # and Delta = 1 the optimal sigma is 3.7306 (vs 4.8448 for the classical sqrt(2 log(1.25/delta))
    # bound, which is only proved for eps < 1).  One Gaussian release is mu-GDP with mu = Delta/sigma
    # and the GDP profile equals Balle-Wang's Thm 8 formula, so calibrate_gaussian_gdp(k=1) must
    # reproduce the analytic Gaussian sigma.
    c = calibrate_gaussian_gdp(1.0, 1e-5, 1)
    assert c == pytest.approx(3.7306, abs=5e-5)
    classical = math.sqrt(2 * math.log(1.25 / 1e-5))
    assert classical == pytest.approx(4.8448, abs=1e-4)
    assert c < classical


def test_golden_gdp_profile_mu1_against_direct_integration():
    # Dong, Roth & Su 2022, Cor. 2.13: mu-GDP <=> (eps, delta(eps))-DP for all eps with
    # delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).  mu = 1, eps = 1: 0.12693674.
    # Independent check: the hockey-stick divergence  int (p - e^eps q)_+  of N(1,1) vs N(0,1).
    assert gdp_delta(1.0, 1.0) == pytest.approx(0.1269367375, abs=1e-9)

    def hockey_stick(x, mu, eps):
        return max(stats.norm.pdf(x, mu) - math.exp(eps) * stats.norm.pdf(x), 0.0)

    for mu, eps in [(1.0, 1.0), (0.5, 0.3), (2.0, 3.0), (0.2683, 1.0)]:
        x0 = eps / mu + mu / 2  # the integrand vanishes below x0
        direct = integrate.quad(hockey_stick, x0, np.inf, args=(mu, eps), epsabs=1e-14)[0]
        assert gdp_delta(mu, eps) == pytest.approx(direct, rel=1e-7, abs=1e-14)


def test_golden_pearl_two_releases_brief_3_9():
    # BRIEF 3.9: PEARL's two Gaussian releases at (1, 1e-5): exact GDP gives sigma ~= 5.28,
    # the paper's RDP calibration (autodp) used 5.72.  Reproduced below:
    #  * GDP: two releases, each sigma_i = c*Delta_i, are sqrt(2)/c-GDP -> c = 5.2759.
    #  * 5.72 is RDP with the improved (CKS 2020 Prop. 12) conversion optimised over a
    #    (near-)continuous set of orders, as autodp does: c = 5.7207.  The classical Mironov
    #    conversion would need 6.93, so 5.72 is not the textbook conversion.
    #  * With our coarse RDP_ORDERS grid, eps at c = 5.72 is 1.0072 (> 1): the grid costs ~0.7 %.
    c_gdp = calibrate_gaussian_gdp(1.0, 1e-5, 2)
    assert round(c_gdp, 2) == 5.28
    assert gdp_epsilon(math.sqrt(2) / c_gdp, 1e-5) <= 1.0 + 1e-12

    def rdp_eps(c, orders):
        return rdp_to_dp(2 * np.asarray(rdp_gaussian(1.0, c, orders=orders)), 1e-5, orders=orders)

    from scipy.optimize import brentq

    c_rdp = brentq(lambda c: rdp_eps(c, FINE_ORDERS) - 1.0, 4.0, 8.0, xtol=1e-10)
    assert round(c_rdp, 2) == 5.72
    assert (c_rdp / c_gdp - 1) == pytest.approx(0.084, abs=0.002)  # "8 % less noise"
    classical = brentq(
        lambda c: float(np.min(np.asarray(FINE_ORDERS) / c**2 + math.log(1e5) / (FINE_ORDERS - 1))) - 1, 4, 10
    )
    assert classical == pytest.approx(6.93, abs=0.01)
    # through compose(): GDP is chosen and meets the target at c_gdp; RDP (grid) is valid but larger
    comp = compose([_gauss_loss(1.0, c_gdp, "embedding"), _gauss_loss(1.0, c_gdp, "class counts")], delta=1e-5)
    assert comp.method == "gdp"
    assert comp.total.epsilon <= 1.0 + 1e-9 and comp.total.delta == 1e-5
    assert comp.alternatives["rdp"][0] > comp.total.epsilon


def test_golden_laplace_rdp_mironov_prop6():
    # Mironov 2017 Prop. 6: alpha=2, lambda=1: log( 2/3 e + 1/3 e^-2 ).
    r = rdp_laplace(1.0, 1.0, orders=[2.0])[0]
    assert r == pytest.approx(math.log(2 / 3 * math.e + 1 / 3 * math.exp(-2)), rel=1e-14)
    # tends to eps = 1/lambda at large order and to KL = 1/l + e^{-1/l} - 1 as alpha -> 1
    assert rdp_laplace(1.0, 1.0, orders=[1e6])[0] == pytest.approx(1.0, abs=1e-5)
    assert rdp_laplace(2.0, 1.0, orders=[1.0 + 1e-7])[0] == pytest.approx(0.5 + math.exp(-0.5) - 1, rel=1e-5)


def test_laplace_rdp_against_numeric_renyi_divergence():
    b, s = 1.7, 1.0

    def renyi_integrand(x, a):
        return stats.laplace.pdf(x, 0, b) ** a * stats.laplace.pdf(x, s, b) ** (1 - a)

    for a in (1.5, 3.0, 10.0):
        val = integrate.quad(renyi_integrand, -60, 60, args=(a,), points=[0, s], limit=200)[0]
        assert rdp_laplace(b, s, orders=[a])[0] == pytest.approx(math.log(val) / (a - 1), rel=1e-8)


def test_randomized_response_rdp_exact():
    eps, m = 1.3, 4
    p = 1 / (m + math.exp(eps))
    q = 1 - m * p
    P = np.array([q, p, p, p, p])
    Q = np.array([p, q, p, p, p])
    for a in (1.5, 2.0, 7.0, 64.0):
        direct = math.log(np.sum(P**a * Q ** (1 - a))) / (a - 1)
        assert rdp_randomized_response(eps, m, orders=[a])[0] == pytest.approx(direct, rel=1e-12)
    # RDP never exceeds the pure-DP epsilon; binary RR (m=1) is rdp_pure_dp
    assert max(rdp_randomized_response(eps, m)) <= eps + 1e-12
    assert rdp_pure_dp(0.7) == rdp_randomized_response(0.7, 1)
    bs = np.asarray(rdp_pure_dp(0.7))
    assert np.all(bs <= np.minimum(0.7, np.asarray(RDP_ORDERS) * 0.49 / 2) + 1e-12)  # Bun-Steinke


# ------------------------------------------------------------------ conversions and GDP inversion


def test_improved_conversion_never_worse_than_mironov():
    curve = np.asarray(rdp_gaussian(1.0, 3.0))
    for d in (1e-3, 1e-6, 1e-10):
        mironov = float(np.min(curve + math.log(1 / d) / (np.asarray(RDP_ORDERS) - 1)))
        assert rdp_to_dp(curve, d) <= mironov


def test_gdp_epsilon_inverts_delta_and_is_conservative():
    for mu in (0.05, 0.3, 1.0, 2.5, 6.0):
        for d in (1e-10, 1e-6, 1e-3, 0.05):
            e = gdp_epsilon(mu, d)
            assert gdp_delta(mu, e) <= d
            if e > 0:
                assert gdp_delta(mu, e * (1 - 1e-9) - 1e-12) > d * (1 - 1e-6)
    mus = gdp_mu_for(np.array([0.1, 1.0, 5.0]), 1e-5)
    assert np.all(gdp_delta(mus, np.array([0.1, 1.0, 5.0])) <= 1e-5)


def test_gaussian_sigma_for_gdp_target_weights():
    sig = gaussian_sigma_for_gdp_target(1.0, 1e-5, [1.0, 2.0], weights=[3.0, 1.0])
    mu = math.sqrt((1 / sig[0]) ** 2 + (2 / sig[1]) ** 2)
    assert gdp_epsilon(mu, 1e-5) <= 1.0 + 1e-9
    assert (1 / sig[0]) ** 2 == pytest.approx(3 * (2 / sig[1]) ** 2)
    eq = gaussian_sigma_for_gdp_target(1.0, 1e-5, [1.0, 1.0])
    assert eq[0] == pytest.approx(calibrate_gaussian_gdp(1.0, 1e-5, 2))


# ------------------------------------------------------------------ composition


def test_gdp_vs_rdp_vs_basic_for_gaussians():
    comps = [_gauss_loss(1.0, s) for s in (2.0, 3.0, 4.5, 8.0)]
    res = {m: compose(comps, delta=1e-5, method=m) for m in ("basic", "rdp", "gdp", "auto")}
    gdp, rdp, basic = (res[m].total.epsilon for m in ("gdp", "rdp", "basic"))
    assert gdp <= rdp  # GDP is exact for Gaussians; RDP is a valid upper bound
    # RDP total is valid: the composition is mu-GDP, whose exact delta at the RDP eps is <= target
    mu = res["gdp"].total.gdp_mu
    assert gdp_delta(mu, rdp) <= 1e-5
    assert basic >= rdp and basic >= gdp  # here basic also pays 4x delta
    assert res["auto"].method == "gdp" and res["auto"].total.epsilon == gdp
    assert mu == pytest.approx(math.sqrt(sum((1 / s) ** 2 for s in (2.0, 3.0, 4.5, 8.0))))


def test_basic_composition_and_transcript():
    a = PrivacyLoss(0.25, 0.0, label="laplace on age")
    b = PrivacyLoss(0.5, 1e-6, label="rr on sex")
    c = compose([a, b])
    assert c.method == "basic"
    assert c.total.epsilon == pytest.approx(0.75) and c.total.delta == pytest.approx(1e-6)
    assert c.transcript[0].startswith("laplace on age [dp]: eps=0.25, delta=0")
    assert any("basic composition: sum eps=0.75" in t for t in c.transcript)
    js = c.to_json()
    json.dumps(js)
    assert js["total"]["epsilon"] == pytest.approx(0.75)


def test_auto_prefers_basic_for_few_pure_dp_and_rdp_for_many():
    lap = PrivacyLoss(0.1, 0.0, label="lap", rdp=rdp_laplace(10.0, 1.0))
    few = compose([lap, lap], delta=1e-6)
    assert few.method == "basic" and few.total.epsilon == pytest.approx(0.2)
    many = compose([lap] * 400, delta=1e-6)
    assert many.method == "rdp" and many.total.epsilon < 40 * 0.5
    assert many.total.delta == 1e-6
    assert any(line.startswith("chosen: rdp") for line in many.transcript)


def test_hybrid_gdp_plus_basic_is_valid_and_used():
    g = [_gauss_loss(1.0, 10.0, f"g{i}") for i in range(20)]
    lap = PrivacyLoss(0.1, 0.0, label="laplace")
    c = compose(g + [lap], delta=1e-5)
    assert c.method == "gdp+basic"
    mu = math.sqrt(20) / 10
    assert c.total.epsilon == pytest.approx(gdp_epsilon(mu, 1e-5) + 0.1)
    assert c.total.epsilon < c.alternatives["basic"][0]


def test_metric_components_are_kept_apart():
    m = PrivacyLoss(3.0, 0.0, label="x-vector selection", kind="metric")
    d = PrivacyLoss(1.0, 0.0, label="rr")
    c = compose([m, d, m])
    assert c.total.epsilon == 1.0
    assert c.metric_epsilon == 6.0
    assert c.to_json()["metric_epsilon"] == 6.0


def test_kind_is_weakest_and_errors():
    c = compose([PrivacyLoss(1.0), PrivacyLoss(1.0, kind="label")])
    assert c.total.kind == "label"
    with pytest.raises(ValueError):
        compose([PrivacyLoss(1.0)], delta=1e-5, method="gdp")
    with pytest.raises(ValueError):
        compose([PrivacyLoss(1.0)], method="rdp")
    with pytest.raises(ValueError):
        compose([PrivacyLoss(1.0)], method="nope")


def test_auto_reports_basic_when_target_delta_unmet():
    c = compose([PrivacyLoss(1.0, 1e-4), PrivacyLoss(1.0, 1e-4)], delta=1e-5)
    assert c.method == "basic" and c.total.delta == pytest.approx(2e-4)
    assert any("no method meets" in t for t in c.transcript)


def test_pure_dp_components_compose_through_implied_rdp():
    # 400 pure eps=0.1 releases: the binary-RR RDP curve (valid for any eps-DP mechanism, Kairouz,
    # Oh & Viswanath 2015) beats basic composition (40) and the advanced composition theorem
    # (Dwork, Rothblum & Vadhan 2010: sqrt(2k log(1/d)) eps + k eps (e^eps - 1) = 14.72).
    k, e, d = 400, 0.1, 1e-6
    c = compose([PrivacyLoss(e)] * k, delta=d)
    adv = math.sqrt(2 * k * math.log(1 / d)) * e + k * e * math.expm1(e)
    assert c.method == "rdp" and c.total.epsilon < adv < k * e
    assert any("pure-DP component" in t for t in c.transcript)


def test_cross_check_mechanisms_analytic_gaussian_sigma():
    # second, independently written implementation (engine/mechanisms/gaussian.py, Balle-Wang)
    from dpstudio.engine.mechanisms import gaussian

    for e, d in [(1.0, 1e-5), (0.1, 1e-6), (5.0, 1e-3), (20.0, 1e-9)]:
        assert calibrate_gaussian_gdp(e, d, 1) == pytest.approx(gaussian.analytic_gaussian_sigma(e, d, 1.0), rel=1e-9)


# ------------------------------------------------------------------ zCDP (joint Gaussian calibration)


def test_golden_zcdp_conversion_matches_dp_accounting():
    # dp_accounting's test_compute_epsilon_delta_gaussian: noise multiplier 4.530877117 is exactly
    # (1, 1e-6) under the CKS 2020 Prop. 12 conversion; that Gaussian is rho = 1/(2 sigma^2)-zCDP
    from dpstudio.engine.accounting import zcdp_epsilon

    assert zcdp_epsilon(1 / (2 * 4.530877117**2), 1e-6) == pytest.approx(1.0, abs=1e-6)
    assert zcdp_epsilon(0.0, 1e-6) == 0.0


def test_zcdp_rho_for_is_the_valid_inverse():
    from dpstudio.engine.accounting import zcdp_epsilon, zcdp_rho_for

    for eps, delta in ((0.1, 1e-6), (1.0, 1e-6), (5.0, 1e-9)):
        rho = zcdp_rho_for(eps, delta)
        assert zcdp_epsilon(rho, delta) <= eps
        assert zcdp_epsilon(rho * (1 + 1e-6), delta) > eps  # and it is (almost) the largest
        # independent check: the RDP curve alpha * rho converted on a fine order grid
        orders = np.arange(1.001, 300.0, 0.001)
        assert rdp_to_dp(rho * orders, delta, orders=orders) <= eps * (1 + 1e-6)  # grid: never below


def test_compose_zcdp_group_plus_basic():
    from dpstudio.engine.accounting import zcdp_epsilon

    g = [PrivacyLoss(epsilon=0.6, delta=5e-7, label=f"g{i}", zcdp_rho=0.01) for i in range(2)]
    lap = PrivacyLoss(epsilon=0.3, label="laplace")
    c = compose(g + [lap], delta=1e-6, method="zcdp+basic")
    assert c.method == "zcdp+basic"
    assert c.total.epsilon == pytest.approx(zcdp_epsilon(0.02, 1e-6) + 0.3, rel=1e-12)
    assert c.total.delta == 1e-6
    assert c.alternatives["basic"] == pytest.approx((1.5, 1e-6))
    # a delta-spending non-zCDP component leaves the group less delta
    c2 = compose(g + [PrivacyLoss(epsilon=0.3, delta=5e-7)], delta=1e-6, method="zcdp+basic")
    assert c2.total.epsilon == pytest.approx(zcdp_epsilon(0.02, 5e-7) + 0.3, rel=1e-12)
    # without zCDP components it is basic composition
    assert compose([lap], delta=1e-6, method="zcdp+basic").method == "basic"
