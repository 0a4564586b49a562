"""Risk views: linkage, embedding NN re-identification, DCR / membership inference, dispatch."""

import json

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.leakage.embedding import embedding_risk, speaker_like_embeddings
from dpstudio.engine.leakage.linkage import linkage_risk
from dpstudio.engine.leakage.synthetic import dcr_risk, membership_advantage


def test_linkage_toy_table():
    orig = pd.DataFrame({"zip": ["a", "a", "b", "b", "c", "c"], "age": [20, 40, 20, 40, 20, 40.0]})
    # unperturbed: every record unique on (zip, age) -> rate 1
    r = linkage_risk(orig, orig, ["zip", "age"], seed=0)
    assert r["reid_rate_unperturbed"] == pytest.approx(1.0)
    assert r["reid_rate"] == pytest.approx(1.0)
    assert r["chance_rate"] == pytest.approx(1 / 6)
    # age released as a constant: each zip has two tied candidates -> 1/2
    rel = orig.assign(age=30.0)
    assert linkage_risk(orig, rel, ["zip", "age"])["reid_rate"] == pytest.approx(0.5)
    # zip swapped between a and b: exact categorical match points to the wrong people
    rel2 = orig.assign(zip=["b", "b", "a", "a", "c", "c"])
    assert linkage_risk(orig, rel2, ["zip", "age"])["reid_rate"] == pytest.approx(2 / 6)


def test_linkage_falls_with_noise():
    g = np.random.default_rng(0)
    n = 800
    orig = pd.DataFrame({"x": g.uniform(0, 100, n), "y": g.uniform(0, 100, n), "s": g.choice(list("abcd"), n)})
    rates = []
    for b in (0.5, 5.0, 50.0):
        rel = orig.assign(x=orig.x + g.laplace(0, b, n), y=orig.y + g.laplace(0, b, n))
        rates.append(linkage_risk(orig, rel, ["x", "y", "s"], max_targets=400)["reid_rate"])
    assert rates[0] > rates[1] > rates[2]
    assert rates[2] < 0.05


def test_embedding_reid_falls_as_eps_falls():
    X, pool = speaker_like_embeddings(n_ids=1000, dim=256, pool_size=3000, seed=0)
    r = embedding_risk(X, pool, [1.0, 10.0, 50.0, 200.0])
    reid = r["reid_rate"]
    assert reid[0] < reid[1] < reid[2] < reid[3]
    assert reid[0] < 3 * r["baseline_reid_rate"] + 2e-3
    assert reid[3] > 0.2  # close pool neighbours identify people
    dist = r["mean_angular_distortion"]
    assert dist[0] > dist[1] > dist[2] > dist[3] >= r["limit_eps_infinite"]["mean_angular_distortion"] - 1e-12


def test_embedding_exact_matches_mechanism_sampling():
    from dpstudio.engine.mechanisms import MetricSelection
    from dpstudio.engine.rng import RandomSource

    X, pool = speaker_like_embeddings(n_ids=200, dim=64, pool_size=600, latent=6, seed=1)
    eps = 60.0
    r = embedding_risk(X, pool, [eps])
    mech = MetricSelection(epsilon=eps, pool=pool)
    Xu = X / np.linalg.norm(X, axis=1, keepdims=True)
    src = RandomSource(3)
    hits = []
    for _ in range(30):
        rel = mech.release(X, src)
        rel = rel / np.linalg.norm(rel, axis=1, keepdims=True)
        hits.append(np.mean(np.argmax(rel @ Xu.T, axis=1) == np.arange(len(X))))
    hits = np.array(hits)
    assert abs(hits.mean() - r["reid_rate"][0]) < 4 * hits.std(ddof=1) / np.sqrt(len(hits)) + 0.01


def test_dcr_and_membership_inference():
    g = np.random.default_rng(2)
    n = 600
    pop = pd.DataFrame({"a": g.normal(size=2 * n), "b": g.normal(size=2 * n), "c": g.choice(["x", "y", "z"], 2 * n)})
    train, hold = pop.iloc[:n], pop.iloc[n:]
    fresh = pd.DataFrame({"a": g.normal(size=n), "b": g.normal(size=n), "c": g.choice(["x", "y", "z"], n)})
    good = dcr_risk(train, hold, fresh, ["a", "b", "c"])
    leaky = dcr_risk(train, hold, train.sample(frac=1.0, random_state=0), ["a", "b", "c"])
    assert 0.7 < good["dcr"]["median_ratio"] < 1.4
    assert good["membership_inference"]["advantage"] < 0.15
    assert leaky["dcr"]["median_ratio"] < 0.01
    assert leaky["dcr"]["share_synthetic_closer_than_holdout_p5"] > 0.9
    assert leaky["membership_inference"]["advantage"] > 0.9
    assert membership_advantage(np.zeros(5), np.ones(5))["advantage"] == 1.0


def _label_recipe(rtype="label"):
    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Mechanism, Recipe, ReleaseSpec

    cols = [
        Column("x1", "float", "public"),
        Column("x2", "categorical", "public"),
        Column("y", "categorical", "label", Domain("categorical", categories=("0", "1")), Mechanism("rr")),
    ]
    if rtype == "semi-sensitive":
        cols.append(Column("s", "float", "sensitive", Domain("numeric", low=-5, high=5), Mechanism("laplace")))
    return Recipe(InputSpec("x.csv"), ReleaseSpec(rtype), tuple(cols), Budget(1.0))


def _label_frame(n=3000, seed=0):
    g = np.random.default_rng(seed)
    x1 = g.normal(size=n)
    x2 = g.choice(["a", "b"], n)
    y = (g.random(n) < 1 / (1 + np.exp(-(2 * x1 + (x2 == "a"))))).astype(int)
    return pd.DataFrame({"x1": x1, "x2": x2, "y": y.astype(str), "s": y + g.normal(size=n)})


@pytest.mark.parametrize("rtype", ["label", "semi-sensitive"])
def test_risk_for_recipe_label(rtype):
    from dpstudio.risk import risk_for_recipe

    out = risk_for_recipe(_label_recipe(rtype), _label_frame(), seed=0)
    json.dumps(out, allow_nan=False)
    assert out["computed_on"] == "raw data - internal use only"
    view = out["label_views"]["y"]
    acc = view["at_epsilon"]["accuracy"]
    assert acc["informed"] >= acc["naive"] - 1e-12 and acc["informed"] >= acc["uninformed"] - 1e-12
    assert len(view["curves"]["epsilon"]) == 60
    assert 0 < view["k"]["share_k_above_1"] < 1
    if rtype == "semi-sensitive":
        e = view["effective_label_epsilon"]
        assert e["effective_label_epsilon"] > e["relative_to_public_posterior_epsilon"]


def test_risk_for_recipe_record_linkage():
    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Mechanism, Recipe, ReleaseSpec
    from dpstudio.risk import risk_for_recipe

    g = np.random.default_rng(1)
    n = 500
    frame = pd.DataFrame(
        {"zip": g.choice(["10", "20", "30"], n), "age": g.integers(18, 90, n), "income": g.uniform(0, 1e5, n)}
    )
    cols = (
        Column("zip", "categorical", "public"),
        Column("age", "integer", "sensitive", Domain("numeric", low=0, high=100), Mechanism("laplace")),
        Column("income", "float", "sensitive", Domain("numeric", low=0, high=1e5), Mechanism("laplace")),
    )
    r = Recipe(InputSpec("x.csv"), ReleaseSpec("record"), cols, Budget(2.0))
    out = risk_for_recipe(r, frame, seed=0)
    json.dumps(out, allow_nan=False)
    lk = out["linkage"]
    assert lk["reid_rate_unperturbed"] > 0.9
    assert lk["chance_rate"] <= lk["reid_rate"] < lk["reid_rate_unperturbed"]
    assert out["computed_on"] == "raw data - internal use only"
