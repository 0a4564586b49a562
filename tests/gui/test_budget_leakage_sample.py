"""The budget page's attacker chart fits on the rows the CLI, the risk estimate and the report use
(``dpstudio.risk.row_sample``): on a table over the sample size its figures are theirs, to the
last digit (a separate ``frame.sample`` gave 87.53 % where the report said 87.59 %)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED
from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Mechanism, Recipe, ReleaseSpec
from dpstudio.risk import MAX_ROWS, risk_for_recipe


def test_attacker_chart_fits_on_the_risk_estimates_row_sample():
    from dpstudio.gui.wizard.budget_charts import attacker_at, fit_leakage, leakage_inputs

    n = MAX_ROWS + 5_000
    g = np.random.default_rng(7)
    age = g.integers(18, 91, n)
    y = (g.random(n) < 1 / (1 + np.exp(-(age - 50) / 8))).astype(int).astype(str)
    frame = pd.DataFrame({"age": age, "sex": g.choice(["f", "m"], n), "y": y})
    cols = (
        Column("age", "integer", "public"),
        Column("sex", "categorical", "public"),
        Column("y", "categorical", "label", Domain("categorical", categories=("0", "1")), Mechanism("rr")),
    )
    recipe = Recipe(InputSpec("x.csv"), ReleaseSpec("label"), cols, Budget(1.0))
    public, label = leakage_inputs(recipe)

    model = fit_leakage(frame, public, label, progress=lambda *a: None, cancel=NEVER_CANCELLED)
    assert model.n == MAX_ROWS
    view = risk_for_recipe(recipe, frame, seed=0)["label_views"]["y"]["at_epsilon"]
    from dpstudio.plan import compile_plan

    (uninformed, _naive, informed), share = attacker_at(model, compile_plan(recipe))
    # the same rows, hence the same model: equal figures, not merely close ones
    assert uninformed == view["accuracy"]["uninformed"]
    assert share == view["iue_adv_bound"]["share_above"]
    assert informed == view["accuracy"]["informed"]  # both read at the plan's law
