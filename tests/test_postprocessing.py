"""Free post-processing of record-level releases (issue 18, item 4): noisy numbers are clamped to
the public bounds by default (an explicit ``"clamp_to_bounds": false`` keeps them raw), integer
columns stay whole numbers, the plan says so, and the plan's expected error stays an upper bound."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.rng import RandomSource
from dpstudio.plan import record
from dpstudio.plan.compile import compile_plan, execute
from dpstudio.recipe.model import (
    Budget,
    Column,
    Domain,
    InputSpec,
    Mechanism,
    Params,
    Randomness,
    Recipe,
    ReleaseSpec,
    parse_recipe_text,
    recipe_from_json,
)

N = 20_000


def loads_recipe(text: str) -> Recipe:
    return recipe_from_json(parse_recipe_text(text))


def _col(name, ctype, low, high, mech="laplace", role="sensitive"):
    return Column(
        name,
        ctype,
        role,
        domain=Domain("numeric", low=low, high=high),
        mechanism=Mechanism(mech) if mech else None,
        type_source="confirmed",
        role_source="confirmed",
    )


def _label():
    return Column(
        "y",
        "categorical",
        "label",
        domain=Domain("categorical", categories=("a", "b")),
        mechanism=Mechanism("rr"),
        type_source="confirmed",
        role_source="confirmed",
    )


def _recipe(columns, rtype="record", eps=1.0, delta=0.0, options=None):
    return Recipe(
        input=InputSpec(path="data.csv"),
        release=ReleaseSpec(rtype, options=Params.of(options or {})),
        columns=tuple(columns),
        budget=Budget(eps, delta),
        randomness=Randomness(seed=5),
    )


def _frame():
    g = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "educ": g.integers(1, 17, N),
            "income": g.uniform(0, 100_000, N).round(2),
            "y": g.choice(["a", "b"], N),
        }
    )


def _release(recipe, seed=11):
    plan = compile_plan(recipe)
    return plan, execute(plan, _frame(), RandomSource(seed=seed)).data


def test_education_at_epsilon_1_stays_within_1_to_16_and_whole(tmp_path):
    # the example: record-level Laplace on education 1-16 at epsilon 1
    plan, out = _release(_recipe([_col("educ", "integer", 1, 16)]))
    v = out["educ"].to_numpy()
    assert v.dtype == np.int64
    assert v.min() >= 1 and v.max() <= 16
    # a real share sits on the bounds: the expected |noise| (about 15) is as wide as the range
    assert plan.unit("educ").expected_error > 10
    assert 0.2 < np.mean((v == 1) | (v == 16)) < 0.9
    # and without clamping the same release runs far outside the bounds
    _, raw = _release(_recipe([_col("educ", "integer", 1, 16)], options={"clamp_to_bounds": False}))
    r = raw["educ"].to_numpy()
    assert r.dtype == np.int64 and (r.min() < -20 and r.max() > 36)


def test_the_plan_states_the_clamping_in_plain_words():
    on = compile_plan(_recipe([_col("educ", "integer", 1, 16)])).unit("educ").post_processing
    off = compile_plan(_recipe([_col("educ", "integer", 1, 16)], options={"clamp_to_bounds": False}))
    text = " ".join(on)
    assert "set to the nearest bound" in text and "costs no privacy" in text
    assert "expected error shown is after this step, for the worst true value" in text
    assert "whole numbers" in text  # the integer column's grid
    assert not any("nearest bound" in s for s in off.unit("educ").post_processing)
    assert any("not clamped" in s for s in off.unit("educ").post_processing)
    # the plan's JSON (recipe check, the report's appendix) carries it
    assert compile_plan(_recipe([_col("educ", "integer", 1, 16)])).mechanisms[0]["post_processing"] == list(on)


def test_clamping_costs_nothing_the_total_is_the_same():
    a = compile_plan(_recipe([_col("educ", "integer", 1, 16), _col("income", "float", 0, 100_000)]))
    b = compile_plan(
        _recipe(
            [_col("educ", "integer", 1, 16), _col("income", "float", 0, 100_000)], options={"clamp_to_bounds": False}
        )
    )
    assert a.total.epsilon == b.total.epsilon and a.total.delta == b.total.delta
    assert [u.expected_error for u in a.units] == [u.expected_error for u in b.units]


@pytest.mark.parametrize("mech", ["laplace", "gaussian"])
def test_float_column_clamped_and_expected_error_is_an_upper_bound(mech):
    cols = [_col("income", "float", 0, 100_000, mech=mech)]
    delta = 1e-6 if mech == "gaussian" else 0.0
    plan, out = _release(_recipe(cols, eps=0.5, delta=delta))
    _, raw = _release(_recipe(cols, eps=0.5, delta=delta, options={"clamp_to_bounds": False}))
    x = _frame()["income"].to_numpy()
    y, r = out["income"].to_numpy(), raw["income"].to_numpy()
    assert y.min() >= 0 and y.max() <= 100_000
    assert r.min() < 0 and r.max() > 100_000  # the raw noise leaves the range
    err = plan.unit("income").expected_error
    # the plan's figure is the raw noise's mean |error| ...
    assert np.mean(np.abs(r - x)) == pytest.approx(err, rel=0.05)
    # ... and an upper bound once clamped: every clamped value is at least as close to the truth
    assert np.all(np.abs(y - x) <= np.abs(r - x) + 1e-9)
    assert np.mean(np.abs(y - x)) < err


def test_integer_column_with_fractional_bounds_clamps_to_whole_numbers_inside():
    plan, out = _release(_recipe([_col("educ", "integer", 0.5, 16.5)]))
    v = out["educ"].to_numpy()
    assert v.dtype == np.int64 and v.min() == 1 and v.max() == 16


def test_semi_sensitive_release_clamps_its_numeric_features_too():
    cols = [_col("educ", "integer", 1, 16), _label()]
    plan, out = _release(_recipe(cols, rtype="semi-sensitive"))
    assert out["educ"].min() >= 1 and out["educ"].max() <= 16
    assert any("nearest bound" in s for s in plan.unit("educ").post_processing)
    assert set(out["y"]) <= {"a", "b"}


def test_label_release_passes_public_columns_unchanged():
    cols = [_col("educ", "integer", 1, 16, mech=None, role="public"), _label()]
    plan, out = _release(_recipe(cols, rtype="label"))
    assert np.array_equal(out["educ"].to_numpy(), _frame()["educ"].to_numpy())  # not perturbed, not clamped


def test_recipe_json_keeps_an_explicit_false_and_absence_means_on():
    on = _recipe([_col("educ", "integer", 1, 16)])
    off = replace(on, release=replace(on.release, options=Params.of({"clamp_to_bounds": False})))
    assert record.clamps_to_bounds(loads_recipe(on.dumps())) is True
    again = loads_recipe(off.dumps())
    assert again.release.options.get("clamp_to_bounds") is False and record.clamps_to_bounds(again) is False


def test_the_budget_preview_clamps_as_the_release_does():
    """The wizard's histogram preview post-processes like the release: clamped to the public
    bounds by default, raw when the recipe turns clamping off (it showed −900 for 1–16 before)."""
    pytest.importorskip("PySide6")
    from types import SimpleNamespace

    from dpstudio.gui.charts.preview import ColumnSample, Unit

    frame = pd.DataFrame({"edu": np.arange(20_000) % 16 + 1})
    sample = ColumnSample(frame, Unit("edu", "numeric", "laplace", 1.0, 16.0))
    noise = SimpleNamespace(scale=50.0, sigma=None)
    raw = sample.privatize(noise)
    assert raw.min() < 1.0 and raw.max() > 16.0  # the noise alone runs far out of the bounds
    clamped = sample.privatize(noise, clamp=True)
    assert clamped.min() == 1.0 and clamped.max() == 16.0
    edges, _, shown = sample.histogram(noise, clamp=True)
    outside = (edges[1:] <= 1.0) | (edges[:-1] >= 16.0)
    assert shown[outside].sum() == 0.0 and abs(shown.sum() - 1.0) < 1e-12
