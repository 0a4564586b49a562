"""The model release's mechanism option (dpstudio.plan.model): "auto" chooses from public figures,
"gibbs" is the Gibbs release as it always was, one-vs-rest and class weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.models import gibbs_logistic as gl
from dpstudio.engine.models import objective as op
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import RecipeError, UserError
from dpstudio.plan import model
from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Params, Randomness, Recipe, ReleaseSpec

OPTS = model.default_options(2)  # what a release that sets no option chooses with


def _recipe(options=None, cats=("0", "1"), eps=1.0):
    cols = (
        Column("x1", "float", "sensitive", Domain("numeric", low=0, high=1)),
        Column("x2", "float", "sensitive", Domain("numeric", low=0, high=1)),
        Column("y", "categorical", "label", Domain("categorical", categories=cats)),
    )
    return Recipe(
        input=InputSpec(path="x.csv"),
        release=ReleaseSpec(type="model", options=Params.of(options or {})),
        columns=cols,
        budget=Budget(epsilon=eps, delta=1e-5),
        randomness=Randomness(seed=1),
    )


def _frame(n=600, seed=0, classes=2):
    g = np.random.default_rng(seed)
    x1, x2 = g.random(n), g.random(n)
    s = x1 + 0.5 * x2 + 0.15 * g.normal(size=n)
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, classes + 1)[1:-1]))
    return pd.DataFrame({"x1": x1, "x2": x2, "y": y.astype(str)})


def test_auto_picks_objective_perturbation_at_large_n_and_says_why():
    c = model.choose(11077, 15, 2, 1.0, 1e-5, dict(OPTS))
    assert c.mechanism == "objective"
    assert c.predicted["rows_x_epsilon_per_coefficient"] == pytest.approx(11077 / 15)
    assert c.reason.startswith("11077 rows \u00d7 \u03b5 1 / 15 coefficients = 738 \u2265 1")
    assert c.objective is not None and c.objective.proven_epsilon <= 1.0 * (1 + 1e-12)
    assert c.title == "objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011)"


@pytest.mark.parametrize(
    ("n", "dim", "eps", "mechanism"),
    [(60, 31, 0.5, "gibbs"), (30, 31, 1.0, "gibbs"), (31, 31, 1.0, "objective"), (398, 31, 0.1, "objective")],
)
def test_auto_rule_is_rows_times_epsilon_per_coefficient(n, dim, eps, mechanism):
    """Public figures only: objective perturbation from n eps / D >= 1, else the Gibbs posterior."""
    c = model.choose(n, dim, 2, eps, 1e-5, dict(OPTS))
    assert c.mechanism == mechanism
    assert (c.gibbs is not None) and (c.objective is not None)  # both calibrated, both public
    if mechanism == "gibbs":
        assert "too few rows" in c.reason and c.title.startswith("Gibbs posterior sampling")


def test_auto_without_gibbs_for_many_classes_or_weights():
    c = model.choose(500, 3, 3, 1.0, 1e-5, {**OPTS, "class_weights": (1.0, 1.0, 1.0)})
    assert c.mechanism == "objective" and "3 label categories" in c.reason and "gibbs" not in c.predicted
    assert c.objective is not None and c.objective.problems == 3
    c = model.choose(500, 3, 2, 1.0, 1e-5, {**OPTS, "class_weights": (1.0, 4.0)})
    assert c.mechanism == "objective" and "class weights" in c.reason
    assert c.objective is not None and c.objective.weight_max == 4.0
    assert c.objective.grad_bound == pytest.approx(4.0 * 2**0.5)


def test_gibbs_when_asked_is_bit_identical_to_the_engine_draw():
    """mechanism = "gibbs" releases exactly the draw of gibbs_logistic with the same randomness
    (what the release did before the option existed), and "auto" choosing Gibbs draws the same."""
    frame = _frame(400)
    out = model.execute(model.compile(_recipe({"mechanism": "gibbs"})), frame, RandomSource(5))
    Z = np.column_stack([(frame[c].to_numpy() - 0.5) / 0.5 for c in ("x1", "x2")]) / np.sqrt(2)
    yz = np.where(frame["y"].to_numpy() == "0", -1.0, 1.0)[:, None] * np.hstack([Z, np.ones((400, 1))])
    cal = gl.calibrate(400, 3, 1.0, 1e-5)
    theta = gl.snap(gl.sample_rejection(yz, cal, RandomSource(5)).theta)
    assert out.artifact["scaled"]["coefficients"] == [float(v) for v in theta[:-1]]
    assert out.artifact["scaled"]["intercept"] == float(theta[-1])
    unit = out.final_plan.unit("logistic regression")
    assert unit.mechanism_name == "gibbs-logistic" and unit.facts["mechanism_choice"].endswith("set in the recipe")


def test_auto_choosing_gibbs_draws_what_gibbs_draws():
    """30 features, 300 rows, eps = 0.1 (300 x 0.1 / 31 < 1): "auto" picks the Gibbs posterior,
    and its release is bit-identical to mechanism = "gibbs" with the same randomness."""
    g = np.random.default_rng(1)
    X = g.random((300, 30))
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(30)])
    frame["y"] = np.where(X[:, :5].sum(1) + 0.3 * g.normal(size=300) > 2.5, "1", "0")
    cols = tuple(Column(f"x{i}", "float", "sensitive", Domain("numeric", low=0, high=1)) for i in range(30)) + (
        Column("y", "categorical", "label", Domain("categorical", categories=("0", "1"))),
    )

    def run(options):
        rec = Recipe(
            input=InputSpec(path="x.csv"),
            release=ReleaseSpec(type="model", options=Params.of(options)),
            columns=cols,
            budget=Budget(epsilon=0.1, delta=1e-5),
        )
        return model.execute(model.compile(rec), frame, RandomSource(9))

    auto, gibbs = run({}), run({"mechanism": "gibbs"})
    assert auto.artifact["guarantee"]["mechanism"] == "gibbs"
    assert auto.artifact["scaled"]["coefficients"] == gibbs.artifact["scaled"]["coefficients"]
    assert auto.artifact["intercept"] == gibbs.artifact["intercept"]
    assert auto.final_plan.unit("logistic regression").mechanism_name == "gibbs-logistic"


def test_auto_release_finalises_the_plan_with_the_choice():
    rec = _recipe()
    plan = model.compile(rec)
    unit = plan.unit("logistic regression")
    assert unit.mechanism_name == model.MECHANISM_NAMES["auto"]
    assert unit.facts["mechanism_choice"].startswith("automatic")
    preview = model.preview_choice(plan, 600)
    assert preview is not None
    out = model.execute(plan, _frame(600), RandomSource(2))
    final = out.final_plan.unit("logistic regression")
    assert final.mechanism is unit.mechanism  # the plan's own object drew
    assert final.facts["mechanism_choice"] == f"{preview.title}: {preview.reason}"
    assert final.mechanism_name == model.MECHANISM_NAMES[preview.mechanism]
    assert out.final_plan.total == plan.total
    g = out.artifact["guarantee"]
    assert g["mechanism"] == preview.mechanism and g["mechanism_reason"] == preview.reason
    assert g["proven_epsilon"] <= 1.0 * (1 + 1e-12) and g["proven_delta"] <= 1e-5 * (1 + 1e-12)
    assert out.artifact["coefficients"]["x1"] > 0


def test_one_vs_rest_three_classes():
    rec = _recipe({"mechanism": "auto"}, cats=("0", "1", "2"), eps=4.0)
    frame = _frame(3000, classes=3)
    out = model.execute(model.compile(rec), frame, RandomSource(4))
    art = out.artifact
    assert art["type"] == "logistic_regression_one_vs_rest" and art["label"]["classes"] == ["0", "1", "2"]
    assert art["guarantee"]["problems"] == 3
    assert art["guarantee"]["epsilon_per_problem"] == pytest.approx(4.0 / 3)
    assert art["guarantee"]["proven_epsilon"] <= 4.0 * (1 + 1e-12)
    # predictions from the released coefficients beat the majority class by far
    scores = np.column_stack(
        [
            frame["x1"] * art["coefficients"][k]["x1"]
            + frame["x2"] * art["coefficients"][k]["x2"]
            + art["intercept"][k]
            for k in ("0", "1", "2")
        ]
    )
    acc = np.mean(np.array(["0", "1", "2"])[scores.argmax(1)] == frame["y"].to_numpy())
    assert acc > 0.6
    assert "one_vs_rest" in out.final_plan.unit("logistic regression").facts


def test_class_weights_enter_the_sensitivity():
    rec = _recipe({"class_weights": {"1": 3.0}})
    plan = model.compile(rec)
    assert plan.unit("logistic regression").facts["class_weights"] == {"0": 1.0, "1": 3.0}
    out = model.execute(plan, _frame(600), RandomSource(8))
    g = out.artifact["guarantee"]
    assert g["mechanism"] == "objective" and g["weight_max"] == 3.0
    assert g["gradient_bound"] == pytest.approx(3.0 * 2**0.5)


@pytest.mark.parametrize(
    ("options", "cats", "match"),
    [
        ({"mechanism": "magic"}, ("0", "1"), "mechanism"),
        ({"noise": "cauchy"}, ("0", "1"), "noise"),
        ({"class_weights": {"maybe": 2}}, ("0", "1"), "not label categories"),
        ({"class_weights": {"1": -1}}, ("0", "1"), "must be > 0"),
        ({"class_weights": [1, 2]}, ("0", "1"), "a weight per label category"),
        ({"tolerance_fraction": 1.5}, ("0", "1"), "tolerance_fraction"),
        ({"mechanism": "gibbs"}, ("0", "1", "2"), "2 label categories"),
        ({"mechanism": "gibbs", "class_weights": {"1": 2}}, ("0", "1"), "without class weights"),
    ],
)
def test_bad_options_are_refused_on_the_release_page(options, cats, match):
    with pytest.raises(RecipeError, match=match) as e:
        model.compile(_recipe(options, cats=cats))
    assert e.value.problems[0].page == "release"


def test_auto_choosing_objective_draws_what_the_engine_draws():
    """The benchmark's "auto" rows are the engine's objective-perturbation release with the
    calibration of :func:`choose` and the same randomness: the plan's release is that draw."""
    frame = _frame(600)
    out = model.execute(model.compile(_recipe()), frame, RandomSource(13))
    assert out.artifact["guarantee"]["mechanism"] == "objective"
    Z = np.column_stack([(frame[c].to_numpy() - 0.5) / 0.5 for c in ("x1", "x2")]) / np.sqrt(2)
    u = np.where(frame["y"].to_numpy() == "0", -1.0, 1.0)[:, None] * np.hstack([Z, np.ones((600, 1))])
    c = model.choose(600, 3, 2, 1.0, 1e-5, {**OPTS, "sampler": "rejection"})
    assert c.objective is not None
    theta = op.release(u, c.objective, RandomSource(13)).theta
    assert out.artifact["scaled"]["coefficients"] == [float(v) for v in theta[:-1]]
    assert out.artifact["scaled"]["intercept"] == float(theta[-1])


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_the_release_charges_the_chosen_mechanisms_own_delta(tmp_path, noise):
    """The row count is public, so the plan is settled before the ledger reserves: objective
    perturbation with Laplace-like noise is pure epsilon-DP and is charged delta = 0 (not the
    budget's delta); Gaussian noise is charged its delta.  The ledger, the plan, the model file,
    ``recipe check`` with the data and the warnings all say what ran."""
    import json
    from dataclasses import replace

    from dpstudio.ledger import Ledger
    from dpstudio.pipeline import check_recipe, execute_release

    frame = _frame(600)
    data = tmp_path / "x.csv"
    frame.to_csv(data, index=False)
    recipe = replace(_recipe({"noise": noise}), input=InputSpec(path=str(data)))
    ledger = Ledger(tmp_path / "l.sqlite")
    res = execute_release(recipe, output_path=tmp_path / "m.json", ledger=ledger)
    entry = ledger.show(res.input_sha256)["entries"][-1]
    guarantee = json.loads((tmp_path / "m.json").read_text())["guarantee"]
    checked = check_recipe(recipe, frame=frame)["total"]
    unit = next(u for u in res.plan.units if u.kind == "model")
    if noise == "laplace":
        assert entry["delta"] == 0 and res.plan.total.delta == 0 and res.recorded_total.delta == 0
        assert guarantee["delta"] == 0 and guarantee["kind"] == "central pure eps-DP"
        assert guarantee["delta_per_problem"] == 0 and guarantee["budget_delta"] == pytest.approx(1e-5)
        assert "Laplace-like" in guarantee["derivation"] and "Kifer" not in guarantee["derivation"]
        assert checked["delta"] == 0
    else:
        assert entry["delta"] == pytest.approx(1e-5) and res.plan.total.delta == pytest.approx(1e-5)
        assert guarantee["delta"] == pytest.approx(1e-5) and "Kifer, Smith & Thakurta" in guarantee["derivation"]
        assert checked["delta"] == pytest.approx(1e-5)
    assert entry["epsilon"] == pytest.approx(1.0) and unit.loss.delta == entry["delta"]
    # the Gibbs sampler's note belongs to a Gibbs draw only
    assert not any("sampler is exact" in w for w in res.warnings)


def test_a_fit_whose_rows_choose_a_mechanism_the_plan_did_not_charge_is_stopped():
    """The plan settled for 600 rows charges delta = 0 (Laplace-like noise); fitted on a table
    whose rows choose the Gibbs posterior (it needs delta), the release draws nothing."""
    plan = model.for_rows(model.compile(_recipe({"noise": "laplace"}, eps=0.01)), 600)  # 600 x 0.01 / 3 >= 1
    unit = next(u for u in plan.units if u.kind == "model")
    assert unit.loss.delta == 0 and unit.facts["noise"].startswith("Laplace-like")
    # the review page reads the settled plan: the chosen mechanism, and the Gibbs note gone
    assert unit.facts["mechanism_choice"].startswith("objective perturbation")
    assert not any(t.startswith("the sampler is exact") for t in plan.notes)
    with pytest.raises(UserError, match="nothing was drawn"):
        model.execute(plan, _frame(150), RandomSource(0))  # 150 x 0.01 / 3 < 1: the Gibbs posterior


@pytest.mark.parametrize("mechanism", ["objective", "gibbs"])
def test_the_model_file_states_the_total_the_ledger_charged(tmp_path, mechanism):
    """With a DP estimate of a feature's bounds (the file's scaling shows them), the model file's
    guarantee is the release's total, as charged; the model's own part is beside it."""
    import json
    from dataclasses import replace

    from dpstudio.ledger import Ledger
    from dpstudio.pipeline import execute_release
    from dpstudio.recipe.model import Cost

    frame = _frame(600)
    data = tmp_path / "x.csv"
    frame.to_csv(data, index=False)
    recipe = _recipe({"mechanism": mechanism})
    dp = Domain("numeric", source="dp", cost=Cost(0.1, 0.0), search_low=-4.0, search_high=4.0)
    recipe = replace(
        recipe, input=InputSpec(path=str(data)), columns=(replace(recipe.columns[0], domain=dp), *recipe.columns[1:])
    )
    ledger = Ledger(tmp_path / "l.sqlite")
    res = execute_release(recipe, output_path=tmp_path / "m.json", ledger=ledger)
    entry = ledger.show(res.input_sha256)["entries"][-1]
    g = json.loads((tmp_path / "m.json").read_text())["guarantee"]
    assert g["epsilon"] == pytest.approx(entry["epsilon"]) and g["delta"] == pytest.approx(entry["delta"])
    assert g["epsilon"] == pytest.approx(1.1) and g["model_epsilon"] == pytest.approx(1.0)
    if mechanism == "objective":  # the calibration figures are the model part's
        assert g["proven_epsilon"] <= g["model_epsilon"] * (1 + 1e-12)


def test_a_gibbs_plan_prints_the_inverse_temperature_it_draws_with(tmp_path):
    """The Gibbs sampler set in the recipe: the plan settled for the public row count prints
    beta, a and lambda as numbers, equal to the calibration the release draws with."""
    import json
    from dataclasses import replace

    from dpstudio.pipeline import execute_release
    from dpstudio.plan import compile_plan, for_rows

    frame = _frame(600)
    data = tmp_path / "x.csv"
    frame.to_csv(data, index=False)
    recipe = replace(_recipe({"mechanism": "gibbs"}), input=InputSpec(path=str(data)))
    unit = next(u for u in for_rows(compile_plan(recipe), len(frame)).units if u.kind == "model")
    assert isinstance(unit.facts["beta"], float) and unit.facts["table_rows"] == 600
    res = execute_release(recipe, output_path=tmp_path / "m.json", ledger=None)
    g = json.loads((tmp_path / "m.json").read_text())["guarantee"]
    assert (unit.facts["beta"], unit.facts["a"], unit.facts["lambda"]) == (g["beta"], g["a"], g["lambda"])
    ran = next(u for u in res.plan.units if u.kind == "model")
    assert ran.facts["beta"] == g["beta"]
    with pytest.raises(Exception, match="settled for 600 rows, the table has 599"):
        from dpstudio.engine.rng import RandomSource

        model.execute(for_rows(compile_plan(recipe), 600), frame.iloc[:599], RandomSource(0))
