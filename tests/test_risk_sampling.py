"""The internal risk estimate runs on a bounded uniform row sample and states its sampling error."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Mechanism, Recipe, ReleaseSpec
from dpstudio.risk import MAX_ROWS, risk_for_recipe, row_sample, share_se

BIG = 300_000


def _label_case(n, seed=0):
    g = np.random.default_rng(seed)
    x1 = g.normal(size=n)
    x2 = g.choice(["a", "b", "c"], n)
    y = (g.random(n) < 1 / (1 + np.exp(-(1.5 * x1 + (x2 == "a"))))).astype(int).astype(str)
    cols = (
        Column("x1", "float", "public"),
        Column("x2", "categorical", "public"),
        Column("y", "categorical", "label", Domain("categorical", categories=("0", "1")), Mechanism("rr")),
    )
    return Recipe(InputSpec("x.csv"), ReleaseSpec("label"), cols, Budget(1.0)), pd.DataFrame(
        {"x1": x1, "x2": x2, "y": y}
    )


def test_row_sample_is_uniform_without_replacement_and_seeded():
    frame = pd.DataFrame({"i": np.arange(BIG)})
    a, info = row_sample(frame, seed=3, max_rows=MAX_ROWS)
    b, _ = row_sample(frame, seed=3, max_rows=MAX_ROWS)
    c, _ = row_sample(frame, seed=4, max_rows=MAX_ROWS)
    assert info["rows_used"] == MAX_ROWS and info["rows_total"] == BIG and info["sampled"]
    idx = a["i"].to_numpy()
    assert idx.size == MAX_ROWS and np.all(np.diff(idx) > 0)  # distinct rows, table order
    assert np.array_equal(idx, b["i"].to_numpy()) and not np.array_equal(idx, c["i"].to_numpy())
    # uniform: each tenth of the table holds ~1/10 of the sample (binomial sd ~ 67)
    per_tenth = np.bincount(idx * 10 // BIG, minlength=10)
    assert np.all(np.abs(per_tenth - MAX_ROWS / 10) < 400)
    small, info_small = row_sample(frame.iloc[:100], seed=3)
    assert len(small) == 100 and not info_small["sampled"]


def test_label_risk_on_a_large_table_runs_on_the_capped_sample_with_standard_errors():
    recipe, frame = _label_case(BIG)
    out = risk_for_recipe(recipe, frame, seed=0)
    json.dumps(out, allow_nan=False)
    s = out["sample"]
    assert (s["rows_used"], s["rows_total"], s["sampled"]) == (MAX_ROWS, BIG, True)
    assert f"{MAX_ROWS:,} of {BIG:,} rows" in s["statement"]
    assert out["rows"] == BIG
    view = out["label_views"]["y"]
    at = view["at_epsilon"]
    assert at["n"] == MAX_ROWS and view["curves"]["n"] == MAX_ROWS  # the model saw the sample only
    se = at["standard_errors"]["accuracy"]
    for k in ("informed", "uninformed", "informed_model"):
        p = at["accuracy"][k]
        want = math.sqrt(p * (1 - p) / MAX_ROWS * (1 - MAX_ROWS / BIG))
        assert se[k] == pytest.approx(want) and 5e-4 < se[k] < 3e-3
    assert se["naive"] == 0.0  # RR keep probability: exact
    assert at["standard_errors"]["iue_share_above"] > 0
    assert len(view["curves"]["accuracy_se"]["informed"]) == len(view["curves"]["epsilon"])
    assert 0 < view["k"]["share_k_above_1_se"] < 0.01
    # the estimate agrees with another sample's within a few standard errors
    other = risk_for_recipe(recipe, frame, seed=1)["label_views"]["y"]["at_epsilon"]
    gap = abs(other["accuracy"]["uninformed"] - at["accuracy"]["uninformed"])
    assert gap < 5 * math.sqrt(2) * se["uninformed"]


def test_record_risk_on_a_large_table_matches_within_the_sample():
    g = np.random.default_rng(1)
    frame = pd.DataFrame({"zip": g.choice([str(z) for z in range(10, 40)], BIG), "age": g.integers(18, 90, BIG)})
    cols = (
        Column("zip", "categorical", "public"),
        Column("age", "integer", "sensitive", Domain("numeric", low=0, high=100), Mechanism("laplace")),
    )
    out = risk_for_recipe(Recipe(InputSpec("x.csv"), ReleaseSpec("record"), cols, Budget(2.0)), frame, seed=0)
    json.dumps(out, allow_nan=False)
    assert out["sample"]["rows_used"] == MAX_ROWS and out["sample"]["sampled"]
    lk = out["linkage"]
    assert lk["n"] == MAX_ROWS and lk["chance_rate"] == 1 / MAX_ROWS  # the attack that ran
    assert "sample_note" in lk
    m = lk["targets"]
    assert lk["reid_rate_se"] == pytest.approx(math.sqrt(lk["reid_rate"] * (1 - lk["reid_rate"]) / m))
    assert 0 < lk["reid_rate_unperturbed_se"] < 0.02
    for key in ("reid_rate", "reid_rate_unperturbed"):
        lo, hi = lk[key + "_ci95"]
        assert lo <= lk[key] <= hi and hi - lo > 0  # Wilson: never a point, even at 0 or 1
    from dpstudio.engine.leakage.linkage import _wilson95

    assert _wilson95(0.0, 2000)[0] == 0.0 and 0.0015 < _wilson95(0.0, 2000)[1] < 0.0025


def test_small_table_uses_every_row_and_has_no_sampling_error():
    recipe, frame = _label_case(2000)
    out = risk_for_recipe(recipe, frame, seed=0)
    assert out["sample"] == {
        "rows_used": 2000,
        "rows_total": 2000,
        "sampled": False,
        "max_rows": MAX_ROWS,
        "statement": out["sample"]["statement"],
    }
    errs = out["label_views"]["y"]["at_epsilon"]["standard_errors"]["accuracy"]
    assert all(v == 0.0 for v in errs.values())
    assert share_se(0.5, 100, 0.5) == pytest.approx(math.sqrt(0.25 / 100 * 0.5))


def test_the_simulated_release_never_draws_the_released_files_noise(monkeypatch):
    """Audit finding: with the recipe's seed 0 (the estimates' own seed), the linkage attack's
    "simulated release with independent randomness" drew exactly the noise of the released file."""
    import dpstudio.plan as plan_mod
    from dpstudio.engine.rng import RandomSource
    from dpstudio.plan import compile_plan, execute
    from dpstudio.recipe.model import Randomness
    from dpstudio.risk import linkage_of_plan

    g = np.random.default_rng(2)
    frame = pd.DataFrame({"zip": g.choice(["a", "b", "c"], 500), "age": g.integers(18, 90, 500)})
    cols = (
        Column("zip", "categorical", "public"),
        Column("age", "integer", "sensitive", Domain("numeric", low=0, high=100), Mechanism("laplace")),
    )
    recipe = Recipe(InputSpec("x.csv"), ReleaseSpec("record"), cols, Budget(1.0), randomness=Randomness(seed=0))
    plan = compile_plan(recipe)
    released = execute(plan, frame, RandomSource(recipe.randomness.seed)).data  # what the release writes
    seen = []
    real = plan_mod.execute

    def spy(*a, **k):
        out = real(*a, **k)
        seen.append(out.data)
        return out

    monkeypatch.setattr(plan_mod, "execute", spy)
    linkage_of_plan(plan, frame, seed=0)
    (simulated,) = seen
    assert (simulated["age"].to_numpy() != released["age"].to_numpy()).mean() > 0.5
