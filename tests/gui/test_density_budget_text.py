"""The budget page's density figures are the settled plan's (the calibration the release draws with)."""

from __future__ import annotations

from dpstudio.gui.charts.preview import error_text, noise_text
from dpstudio.gui.wizard.budget_charts import density_noise_text
from dpstudio.plan import compile_plan, for_rows
from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Params, Recipe, ReleaseSpec


def _recipe(eps: float) -> Recipe:
    return Recipe(
        input=InputSpec("x.csv"),
        release=ReleaseSpec("density", Params.of({"grid_size": 64})),
        columns=(Column("x", "float", "sensitive", Domain("numeric", low=0.0, high=100.0)),),
        budget=Budget(eps, 1e-6),
    )


def test_density_noise_is_read_from_the_settled_plan():
    plan = compile_plan(_recipe(eps=1.0))
    assert "load the data" in density_noise_text(plan)  # no row count yet: nothing invented
    assert noise_text(plan.unit("density")) == "—" == error_text(plan.unit("density"))
    settled = for_rows(plan, 4000)
    f = settled.unit("density").facts
    text = density_noise_text(settled)
    assert f"{100 * f['noise_sd_relative_to_flat']:.3g} %" in text
    assert f"{100 * f['noise_mean_abs_relative_to_flat']:.3g} %" in text
    assert noise_text(settled.unit("density")) == f"σ = {100 * f['noise_sd_relative_to_flat']:.3g} % of a flat density"
