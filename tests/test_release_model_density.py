"""End to end: the CLI releases a DP logistic regression and a DP density; plan/run directly."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.progress import Cancelled, CancelToken
from dpstudio.engine.rng import RandomSource
from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Params, Randomness, Recipe, ReleaseSpec


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "dpstudio", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x1, x2 = rng.random(n), rng.random(n)
    y = (x1 + 0.5 * x2 + 0.2 * rng.normal(size=n) > 0.8).astype(int)
    return pd.DataFrame({"x1": x1, "x2": x2, "y": y})


def test_cli_model_release(tmp_path):
    _frame().to_csv(tmp_path / "d.csv", index=False)
    r = _cli(
        "recipe",
        "init",
        "d.csv",
        "-o",
        "r.json",
        "--release",
        "model",
        "--role",
        "y=label",
        "--role",
        "x1=sensitive",
        "--role",
        "x2=sensitive",
        "--bounds",
        "x1=0:1",
        "--bounds",
        "x2=0:1",
        "--categories",
        "y=0,1",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--seed",
        "3",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    r = _cli("release", "r.json", "--output", "out.json", "--no-ledger", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    art = json.loads((tmp_path / "out.json").read_text())
    assert art["type"] == "logistic_regression"
    assert set(art["coefficients"]) == {"x1", "x2"}
    g = art["guarantee"]
    # the delta stated (and charged) is the chosen mechanism's own, the budget's beside it when lower
    assert g["epsilon"] == 1.0 and g["delta"] == g["proven_delta"] <= 1e-5
    assert g["delta"] == 1e-5 or g["budget_delta"] == 1e-5
    # mechanism "auto" (the default since issue 22) picks objective perturbation at n = 400, d = 2
    assert g["mechanism"] == "objective" and "400 rows" in g["mechanism_reason"]
    assert g["proven_epsilon"] <= 1.0 * (1 + 1e-12) and g["proven_delta"] <= 1e-5 * (1 + 1e-12)
    assert g["feature_norm"] == pytest.approx(2**0.5)
    assert art["coefficients"]["x1"] > 0  # the signal survives at n=400, eps=1


def test_model_release_gibbs_when_asked_direct():
    """mechanism = "gibbs": the Gibbs-posterior release as before (what the CLI test checked)."""
    from dpstudio.plan import model

    cols = [
        Column("x1", "float", "sensitive", Domain("numeric", low=0, high=1)),
        Column("x2", "float", "sensitive", Domain("numeric", low=0, high=1)),
        Column("y", "integer", "label", Domain("categorical", categories=("0", "1"))),
    ]
    out = model.execute(model.compile(_recipe("model", cols, {"mechanism": "gibbs"})), _frame(), RandomSource(3))
    g = out.artifact["guarantee"]
    assert g["epsilon"] == 1.0 and g["delta"] == 1e-5
    assert g["delta_gibbs"] + g["delta_sampler"] == pytest.approx(1e-5)
    assert g["lipschitz"] == pytest.approx(2**0.5)
    assert out.artifact["coefficients"]["x1"] > 0


def test_cli_density_release(tmp_path):
    _frame().to_csv(tmp_path / "d.csv", index=False)
    r = _cli(
        "recipe",
        "init",
        "d.csv",
        "-o",
        "r.json",
        "--release",
        "density",
        "--role",
        "x1=sensitive",
        "--role",
        "x2=ignore",
        "--role",
        "y=ignore",
        "--bounds",
        "x1=0:1",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--seed",
        "4",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    r = _cli("release", "r.json", "--output", "out.json", "--no-ledger", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    art = json.loads((tmp_path / "out.json").read_text())
    assert art["type"] == "density" and len(art["density"]) == 256
    g = art["guarantee"]
    assert g["noise_multiplier"] < g["noise_multiplier_corollary_eps_le_1"]


def _recipe(rtype, cols, options=None, eps=1.0):
    return Recipe(
        input=InputSpec(path="x.csv"),
        release=ReleaseSpec(type=rtype, options=Params.of(options or {})),
        columns=tuple(cols),
        budget=Budget(epsilon=eps, delta=1e-5),
        randomness=Randomness(seed=1),
    )


def test_density_2d_with_samples_direct():
    from dpstudio.plan import density

    cols = [
        Column("x1", "float", "sensitive", Domain("numeric", low=0, high=1)),
        Column("x2", "float", "sensitive", Domain("numeric", low=0, high=1)),
        Column("y", "integer", "ignore"),
    ]
    rec = _recipe("density", cols, {"sample_rows": 300, "grid_size": 32})
    pl = density.compile(rec)
    assert pl.total.epsilon == 1.0 and pl.total.delta == 1e-5
    out = density.execute(pl, _frame(), RandomSource(2))
    assert np.asarray(out.artifact["density"]).shape == (32, 32)
    assert out.data.shape == (300, 2) and out.data["x1"].between(0, 1).all()


def test_model_plan_and_cancel_direct():
    from dpstudio.plan import model

    cols = [
        Column("x1", "float", "sensitive", Domain("numeric", low=0, high=1)),
        Column("x2", "float", "public", Domain("numeric", low=0, high=1)),
        Column("y", "integer", "label", Domain("categorical", categories=("0", "1"))),
    ]
    rec = _recipe("model", cols, {"norm_bound": 1.0}, eps=2.0)
    pl = model.compile(rec)
    assert pl.total.epsilon == 2.0 and pl.total.delta == 1e-5 and pl.guarantee == "central"
    tok = CancelToken()
    tok.cancel()
    with pytest.raises(Cancelled):
        model.execute(pl, _frame(), RandomSource(1), cancel=tok)
    out = model.execute(pl, _frame(), RandomSource(1))
    assert '"mode"' not in json.dumps(out.artifact)  # nothing non-private leaks into the artifact (the MAP)
