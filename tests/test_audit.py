"""Statistical audit: honest mechanisms pass, every broken variant is caught (2e5 trials)."""

import pytest

from dpstudio.engine.audit import audit, empirical_epsilon

CASES = [
    ("laplace", 1.0, 0.0),
    ("laplace", 1.0, 1e-3),
    ("gaussian", 1.0, 1e-5),
    ("rr", 1.0, 0.0),
    ("exponential", 1.0, 0.0),
    ("metric", 4.0, 0.0),
]
BROKEN = [
    ("laplace", "laplace_half_scale", 1.0, 0.0),
    ("gaussian", "gaussian_half_sigma", 1.0, 1e-5),
    ("rr", "rr_2eps", 1.0, 0.0),
    ("metric", "metric_2eps", 4.0, 0.0),
    ("exponential", "exponential_no_half", 1.0, 0.0),
]
KEYS = {"mechanism", "claimed_epsilon", "claimed_delta", "trials", "empirical_epsilon_lower_bound", "passed"}


@pytest.mark.parametrize("mech,eps,delta", CASES)
def test_honest_mechanisms_pass(mech, eps, delta):
    r = audit(mech, epsilon=eps, delta=delta, trials=200_000, seed=12345)
    assert KEYS <= set(r)
    assert r["passed"], r
    # and the audit is not vacuous: the bound gets close to the claim for tight mechanisms
    if mech in ("laplace", "rr"):
        assert r["empirical_epsilon_lower_bound"] > 0.8 * r["claimed_epsilon"]


def test_metric_claim_is_eps_times_distance():
    r = audit("metric", epsilon=4.0, trials=20_000, seed=1)
    assert r["claimed_epsilon"] == pytest.approx(2.0)


@pytest.mark.parametrize("mech,broken,eps,delta", BROKEN)
def test_broken_variants_fail(mech, broken, eps, delta):
    r = audit(mech, epsilon=eps, delta=delta, trials=200_000, seed=12345, broken=broken)
    assert not r["passed"], r
    assert r["empirical_epsilon_lower_bound"] > r["claimed_epsilon"]


def test_audit_validation():
    with pytest.raises(ValueError, match="nope"):
        audit("nope", epsilon=1.0)
    with pytest.raises(ValueError, match="rr_2eps"):
        audit("laplace", epsilon=1.0, broken="rr_2eps")
    with pytest.raises(ValueError, match="delta"):
        audit("gaussian", epsilon=1.0, delta=0.0)


def test_identical_distributions_give_no_evidence():
    import numpy as np

    g = np.random.default_rng(0)
    r = empirical_epsilon(g.integers(0, 5, 100_000), g.integers(0, 5, 100_000))
    assert r["empirical_epsilon_lower_bound"] < 0.05
