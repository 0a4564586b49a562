"""A density release's printed noise is the noise that ran (the plan settled for the public row
count, :func:`dpstudio.plan.density.for_rows`), and its artifact states the release's whole
guarantee."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine import density as kde
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError
from dpstudio.plan import compile_plan, execute, for_rows
from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Params, Recipe, ReleaseSpec


def _recipe(eps=1.0, grid=64, domain=None, two=False):
    dom = domain or Domain("numeric", low=0.0, high=100.0)
    cols = [Column("x", "float", "sensitive", dom)]
    if two:
        cols.append(Column("w", "float", "sensitive", Domain("numeric", low=0.0, high=50.0)))
    return Recipe(
        input=InputSpec("x.csv"),
        release=ReleaseSpec("density", Params.of({"grid_size": grid})),
        columns=tuple(cols),
        budget=Budget(eps, 1e-6),
    )


def _frame(n=3000, two=False):
    g = np.random.default_rng(1)
    f = {"x": g.normal(40, 10, n).clip(0, 100)}
    if two:
        f["w"] = g.uniform(0, 50, n)
    return pd.DataFrame(f)


@pytest.mark.parametrize("two", [False, True])
def test_the_settled_plan_prints_the_calibration_the_release_draws_with(two):
    frame = _frame(two=two)
    plan = for_rows(compile_plan(_recipe(two=two, grid=32 if two else 64)), len(frame))
    facts = plan.unit("density").facts
    g = execute(plan, frame, RandomSource(0)).artifact["guarantee"]
    assert facts["noise_multiplier"] == g["noise_multiplier"]
    assert facts["bandwidth"] == g["bandwidth_scaled"] and facts["sensitivity"] == g["sensitivity"]
    assert facts["noise_sd_relative_to_flat"] == g["noise_sd_relative_to_flat"]
    assert facts["noise_mean_abs_relative_to_flat"] == g["noise_mean_abs_relative_to_flat"]
    vol = 100.0 * (50.0 if two else 1.0)
    assert g["noise_sd_at_grid_point"] == pytest.approx(g["noise_sd_relative_to_flat"] / vol, rel=1e-12)


def test_the_printed_noise_is_the_measured_noise_and_bounds_it():
    """Two releases of the same table differ by noise alone, B (z1 - z2) (the snapped KDE is the
    same): whitened, the differences are iid with standard deviation sqrt(2) multiplier, so the
    point figure multiplier * sqrt((B B^T)_ii) is the measured one.  Fixed seeds: deterministic."""
    frame = _frame(n=2000)
    plan = for_rows(compile_plan(_recipe(eps=0.5, grid=64)), len(frame))
    facts = plan.unit("density").facts
    h = facts["bandwidth"]
    noise = kde.GPNoise.for_grids([kde.grid_1d(64)], h)
    outs = [np.asarray(execute(plan, frame, RandomSource(s)).artifact["density"]) * 100.0 for s in range(200)]
    z = np.concatenate([noise.whiten(a - b) for a, b in zip(outs[::2], outs[1::2], strict=True)]) / math.sqrt(2)
    assert float(z.std()) == pytest.approx(facts["noise_multiplier"], rel=0.04)  # 6,400 draws: SE 0.9 %
    assert float(np.abs(z).mean()) == pytest.approx(math.sqrt(2 / math.pi) * facts["noise_multiplier"], rel=0.04)
    # the point figure: multiplier * sqrt((B B^T)_ii), bounded within 1e-6 by the printed one
    exact = facts["noise_multiplier"] * float(np.sqrt((noise.factors[0] ** 2).sum(axis=1)).max())
    assert exact <= facts["noise_sd_relative_to_flat"] <= exact * (1 + 1e-6)
    assert facts["noise_mean_abs_relative_to_flat"] == pytest.approx(
        math.sqrt(2 / math.pi) * facts["noise_sd_relative_to_flat"], rel=1e-12
    )


def test_the_noise_shrinks_with_more_rows_and_more_epsilon():
    sd = {
        (n, e): for_rows(compile_plan(_recipe(eps=e)), n).unit("density").facts["noise_sd_relative_to_flat"]
        for n in (500, 5000)
        for e in (0.5, 2.0)
    }
    assert sd[(5000, 0.5)] < sd[(500, 0.5)] and sd[(500, 2.0)] < sd[(500, 0.5)]


def test_the_artifact_states_the_whole_guarantee_with_dp_bounds():
    """Bounds estimated with DP cost budget too, and the grid shows them: the artifact's epsilon is
    the plan's total, the density part's own budget stated beside it."""
    dom = Domain("numeric", source="dp", search_low=0.0, search_high=1000.0, cost=Cost(0.2))
    frame = _frame()
    plan = for_rows(compile_plan(_recipe(eps=1.0, domain=dom)), len(frame))
    g = execute(plan, frame, RandomSource(0)).artifact["guarantee"]
    assert g["epsilon"] == pytest.approx(plan.total.epsilon) and g["epsilon"] == pytest.approx(1.2)
    assert g["density_epsilon"] == pytest.approx(1.0) and g["delta"] == plan.total.delta


def test_a_plan_settled_for_another_row_count_is_refused():
    frame = _frame(n=1000)
    plan = for_rows(compile_plan(_recipe()), 999)
    with pytest.raises(UserError, match="settled for 999 rows"):
        execute(plan, frame, RandomSource(0))


def test_check_and_the_report_print_the_noise_the_release_drew_with(tmp_path, monkeypatch, capsys):
    import json

    from dpstudio.cli import main

    monkeypatch.chdir(tmp_path)
    _frame(n=1500).to_csv("x.csv", index=False)
    args = ["--release", "density", "--role", "x=sensitive", "--bounds", "x=0:100", "--delta", "1e-6"]
    assert main(["recipe", "init", "x.csv", "-o", "r.json", *args]) == 0
    capsys.readouterr()
    assert main(["recipe", "check", "r.json", "--with-data"]) == 0
    facts = next(u for u in json.loads(capsys.readouterr().out)["units"] if u["unit"] == "density")
    assert main(["release", "r.json", "--output", "d.json", "--report", "r.html"]) == 0
    capsys.readouterr()
    g = json.loads((tmp_path / "d.json").read_text())["guarantee"]
    assert facts["noise_multiplier"] == g["noise_multiplier"]
    assert facts["noise_sd_relative_to_flat"] == g["noise_sd_relative_to_flat"]
    html = (tmp_path / "r.html").read_text()
    assert f"standard deviation of {100 * g['noise_sd_relative_to_flat']:.1f} %" in html
