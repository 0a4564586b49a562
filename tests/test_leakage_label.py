"""Label leakage (seed 002): closed forms vs Monte Carlo, cross-fitting, IUEAdv, Prop. 4.0.1."""

import math

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.leakage.label import (
    LabelLeakageModel,
    effective_label_epsilon,
    flip_probability,
    informed_accuracy_binary,
    iue_adv_bound,
    k_ratio,
    posterior_gain_flipped,
    rr_keep_probability,
)
from dpstudio.engine.leakage.logistic import crossfit_posteriors, encode_features, fit_logistic


def _random_posteriors(g, n, K):
    P = g.dirichlet(np.full(K, 0.6), size=n)
    y = np.array([g.choice(K, p=p) for p in P])
    return P, y


def _simulate_rr(g, y, K, eps, reps):
    keep = rr_keep_probability(eps, K)
    n = y.size
    move = g.random((reps, n)) >= keep
    other = g.integers(0, K - 1, (reps, n))
    other = other + (other >= y[None, :])
    return np.where(move, other, y[None, :])


def _bayes_guess(P, yt, eps, K):
    """Independent implementation: argmax_c P(c|x) P(y~|c) (ties -> follow y~)."""
    keep = rr_keep_probability(eps, K)
    r = (1 - keep) / (K - 1)
    like = np.where(np.arange(K)[None, None, :] == yt[:, :, None], keep, r)
    post = P[None, :, :] * like
    best = post.argmax(axis=2)
    mx = post.max(axis=2)
    follow = post[np.arange(yt.shape[0])[:, None], np.arange(yt.shape[1])[None, :], yt] >= mx * (1 - 1e-12)
    return np.where(follow, yt, best)


@pytest.mark.parametrize("K", [2, 3])
def test_closed_forms_match_monte_carlo(K):
    g = np.random.default_rng(1)
    n, reps = 1500, 300
    P, y = _random_posteriors(g, n, K)
    m = LabelLeakageModel(P, y, list(range(K)))
    for eps in (0.3, 1.0, 2.5):
        yt = _simulate_rr(g, y, K, eps, reps)
        inf_mc = (_bayes_guess(P, yt, eps, K) == y[None, :]).mean(axis=1)
        naive_mc = (yt == y[None, :]).mean(axis=1)
        acc = m.accuracies(np.array([eps]))
        for closed, mc in ((acc["informed"][0], inf_mc), (acc["naive"][0], naive_mc)):
            se = mc.std(ddof=1) / math.sqrt(reps)
            assert abs(closed - mc.mean()) < 4 * se + 1e-4, (K, eps, closed, mc.mean(), se)
        # model-based accuracy (y ~ P(y|x), as in the seed's IEAU)
        ym = np.array([g.choice(K, p=p) for p in P])
        ytm = _simulate_rr(g, ym, K, eps, reps)
        inf_m = (_bayes_guess(P, ytm, eps, K) == ym[None, :]).mean(axis=1)
        se = inf_m.std(ddof=1) / math.sqrt(reps)
        # extra slack: one draw of ym adds its own variance
        assert abs(acc["informed_model"][0] - inf_m.mean()) < 4 * se + 4 * math.sqrt(0.25 / n)
    assert m.accuracies(np.array([1.0]))["uninformed"][0] == pytest.approx(np.mean(P.argmax(1) == y))


def test_informed_binary_reference_and_rr_class():
    """The binary reference formula, checked against the product's RandomizedResponse."""
    from dpstudio.engine.mechanisms import RandomizedResponse
    from dpstudio.engine.rng import RandomSource

    g = np.random.default_rng(2)
    n, reps, eps = 2000, 200, 1.2
    p1 = g.beta(0.7, 0.7, n)
    y = (g.random(n) < p1).astype(int)
    rr = RandomizedResponse(epsilon=eps, n_categories=2)
    src = RandomSource(5)
    yt = np.stack([rr.release(y, src) for _ in range(reps)])
    L = np.log(p1) - np.log1p(-p1)
    guess = np.where(np.abs(L) <= eps, yt, (L > 0).astype(int)[None, :])
    mc = (guess == y).mean(axis=1)
    closed = informed_accuracy_binary(p1, y, eps).mean()
    assert abs(mc.mean() - closed) < 4 * mc.std(ddof=1) / math.sqrt(reps) + 2e-4
    m = LabelLeakageModel(np.column_stack([1 - p1, p1]), y, [0, 1])
    assert m.accuracies(np.array([eps]))["informed"][0] == pytest.approx(closed, abs=1e-12)


def test_crossfitting_never_uses_own_label():
    """A per-record ID column lets an in-sample model memorise every label; cross-fitted
    posteriors of held-out IDs cannot see them and fall back to the prior."""
    g = np.random.default_rng(3)
    n = 1200
    y = (g.random(n) < 0.5).astype(int)
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(n)], "noise": g.normal(size=n), "y": y})
    X = encode_features(frame, ["id", "noise"])
    insample = fit_logistic(X, y, 2, l2=1e-5).predict_proba(X)[:, 1]
    assert np.mean((insample > 0.5) == y) > 0.99  # memorised
    P, info = crossfit_posteriors(X, y, 2, l2=1e-5, folds=5)
    assert info["all_converged"]
    assert np.mean((P[:, 1] > 0.5) == y) < 0.56  # chance level
    assert np.quantile(np.abs(P[:, 1] - y.mean()), 0.99) < 0.15  # ~ the training-fold prior
    m = LabelLeakageModel.fit(frame, ["id", "noise"], "y")
    assert m.uninformed_observed < 0.56


def test_crossfit_recovers_true_posterior():
    g = np.random.default_rng(4)
    n = 20000
    x = g.normal(size=(n, 3))
    logit = 1.5 * x[:, 0] - x[:, 1] + 0.3
    y = (g.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    frame = pd.DataFrame(x, columns=["a", "b", "c"]).assign(y=y, cat=g.choice(["u", "v"], n))
    m = LabelLeakageModel.fit(frame, ["a", "b", "c", "cat"], "y")
    assert np.max(np.abs(m.P[:, 1] - 1 / (1 + np.exp(-logit)))) < 0.06


def test_iue_adv_formula():
    g = np.random.default_rng(5)
    p = g.uniform(0.01, 0.99, 5000)
    prior = g.uniform(0.05, 0.95, 5000)
    eps = g.uniform(0.05, 6, 5000)
    B = iue_adv_bound(p, prior, eps)
    k = k_ratio(p, prior)
    assert np.all((B > 0) == (k > 1))  # Cor. 3.0.3
    # increasing in k at fixed prior and eps
    ps = np.linspace(0.01, 0.99, 99)
    Bs = iue_adv_bound(ps, 0.3, 1.0)
    assert np.all(np.diff(Bs) > 0) and np.all(np.diff(k_ratio(ps, 0.3)) > 0)
    # on records whose label RR kept, the bound is exactly P(y|x,y~=y) - P(y|y~=y) (Bayes)
    q = 1 - flip_probability(eps)
    post_x = q * p / (q * p + (1 - q) * (1 - p))
    post_0 = q * prior / (q * prior + (1 - q) * (1 - prior))
    np.testing.assert_allclose(B, post_x - post_0, atol=1e-12)


def test_seed_prop_3_0_2_fails_on_flipped_labels():
    """Seed 002's proof subtracts a term it has bounded from above: the inequality is reversed
    when RR flipped the label.  eps=3, P(y)=0.5, P(y|x)=0.952."""
    eps, prior, p = 3.0, 0.5, 0.952
    bound = iue_adv_bound(p, prior, eps)
    flipped = posterior_gain_flipped(p, prior, eps)
    q = 1 - flip_probability(eps)
    # Bayes, by hand, for y~ = 1 - y
    direct = (1 - q) * p / ((1 - q) * p + q * (1 - p)) - (1 - q) * prior / ((1 - q) * prior + q * (1 - prior))
    assert flipped == pytest.approx(direct)
    assert bound == pytest.approx(0.0450, abs=5e-4)
    assert flipped == pytest.approx(0.449, abs=1e-3)  # 10x the 'bound'
    expected = q * bound + (1 - q) * flipped
    assert expected > bound  # even on average over RR


def test_curves_counts_and_quantiles_match_brute_force():
    g = np.random.default_rng(6)
    n = 3000
    P, y = _random_posteriors(g, n, 2)
    m = LabelLeakageModel(P, y, [0, 1], threshold=0.05)
    grid = np.geomspace(0.05, 10, 25)
    c = m.curves(grid)
    B = iue_adv_bound(P[np.arange(n), y][:, None], m.prior[y][:, None], grid[None, :])
    assert c["iue_adv_bound"]["count_above"] == (B > 0.05).sum(axis=0).tolist()
    for q in ("0.5", "0.9", "1.0"):
        ref = np.quantile(B, float(q), axis=0, method="inverted_cdf")
        np.testing.assert_allclose(c["iue_adv_bound"]["quantiles"][q], ref, atol=1e-12)
    a = m.at(1.3)
    Bs = m.iue_adv(1.3)
    assert a["iue_adv_bound"]["count_above"] == int((Bs > 0.05).sum())
    assert a["iue_adv_bound"]["quantiles"]["0.9"] == pytest.approx(
        float(np.quantile(Bs, 0.9, method="inverted_cdf")), abs=1e-12
    )
    assert a["computed_on"] == "raw data - internal use only"


def test_prop_4_0_1_max_understates_and_sum_holds():
    """Discrete example: public x with likelihood ratio e, a sensitive feature equal to y
    released by RR at eps'=1, label RR at eps_2=1.  Posterior odds / prior odds reach e^3;
    the seed's max{eps', lambda} + eps_2 = 2 understates it, eps' + lambda + eps_2 = 3 holds."""
    e = math.e
    a = 0.8
    b = a / e  # P(x=1|y=1) / P(x=1|y=0) = e
    keep = e / (1 + e)  # binary RR at eps=1
    # worst output: x=1, x~_priv=1, y~=1
    like1 = a * keep * keep
    like0 = b * (1 - keep) * (1 - keep)
    log_factor = math.log(like1 / like0)
    assert log_factor == pytest.approx(3.0)
    res = effective_label_epsilon(1.0, 1.0, public_llr=1.0)
    assert res["seed_prop_4_0_1_epsilon"] == pytest.approx(2.0)
    assert res["seed_prop_4_0_1_epsilon"] < log_factor - 0.5
    assert res["effective_label_epsilon"] == pytest.approx(3.0)
    assert res["relative_to_public_posterior_epsilon"] == pytest.approx(2.0)
    # relative to the public posterior the factor is e^(eps' + eps_2) = e^2, as the seed states
    assert math.log((keep * keep) / ((1 - keep) * (1 - keep))) == pytest.approx(2.0)


def test_effective_label_epsilon_from_posteriors():
    P = np.array([[0.5, 0.5], [0.1, 0.9], [0.8, 0.2], [0.5, 0.5]])
    y = np.array([0, 1, 0, 1])
    r = effective_label_epsilon(1.0, 0.0, posteriors=P, labels=y)
    assert r["public_log_likelihood_ratio"] == pytest.approx(math.log(9.0))
    assert r["effective_label_epsilon"] == pytest.approx(1.0 + math.log(9.0))
    assert r["computed_on"] == "raw data - internal use only"


def test_label_guarantee_from_recipe():
    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Mechanism, Recipe, ReleaseSpec

    cols = (
        Column("age", "integer", "public"),
        Column("income", "float", "sensitive", Domain("numeric", low=0, high=1e5), Mechanism("laplace", weight=1.0)),
        Column(
            "sick", "categorical", "label", Domain("categorical", categories=("no", "yes")), Mechanism("rr", weight=3.0)
        ),
    )
    r = Recipe(InputSpec("x.csv"), ReleaseSpec("semi-sensitive"), cols, Budget(2.0))
    from dpstudio.plan import compile_plan

    out = compile_plan(r).label
    assert out.label_unit_epsilon == pytest.approx(1.5)
    assert out.epsilon == pytest.approx(2.0)
    assert out.to_json()["epsilon_label_rr"] == pytest.approx(1.5)
    from dataclasses import replace

    label_cols = (cols[0], replace(cols[1], mechanism=None, role="public"), cols[2])  # 'label' perturbs the label only
    r2 = Recipe(InputSpec("x.csv"), ReleaseSpec("label"), label_cols, Budget(2.0))
    assert compile_plan(r2).label.epsilon == pytest.approx(2.0)
