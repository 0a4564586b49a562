"""The report prints the compiled plan's numbers, read off its typed units (never recomputed).

Each figure a compliance officer reads -- the noise parameters, the expected error and floor of
the Accuracy table, the error-vs-floor chart, the label guarantee, the DP domain estimates'
cost -- is compared with the field of ``result.plan`` it must come from; several tests give a
unit a number no formula would produce and check that the report prints exactly that number.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import dpstudio.report.text as T
from dpstudio.cli import main
from dpstudio.pipeline import execute_release
from dpstudio.plan import NoiseParameters, ReleasePlan
from dpstudio.recipe.model import load_recipe
from dpstudio.report import build_model, render
from dpstudio.report.model import accuracy_units, error_floor_curves, external_text, fmt, public_text

N = 300


def _data(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, N),
            "income": rng.integers(0, 200_000, N),
            "score": np.round(rng.uniform(0, 100, N), 2),
            "smoker": rng.choice(["yes", "no"], N),
            "grp": rng.choice(["a", "b", "c"], N),
            "sex": rng.choice(["f", "m"], N),
        }
    )
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _release(tmp_path, name, args, *, output=None):
    data, frame = _data(tmp_path)
    rp = tmp_path / f"{name}.recipe.json"
    assert main(["recipe", "init", str(data), "-o", str(rp), "--confirm-inferred", *args]) == 0
    res = execute_release(load_recipe(rp), output_path=tmp_path / (output or f"{name}.csv"), ledger=None)
    return res, frame


RECORD = [
    "--epsilon",
    "2",
    "--delta",
    "1e-6",
    "--role",
    "age=sensitive",
    "--role",
    "income=sensitive",
    "--role",
    "score=sensitive",
    "--role",
    "smoker=sensitive",
    "--role",
    "grp=sensitive",
    "--role",
    "sex=public",
    "--bounds",
    "age=dp:0:150:0.2",
    "--bounds",
    "income=0:250000",
    "--bounds",
    "score=0:100",
    "--mechanism",
    "income=gaussian",
    "--mechanism",
    "score=gaussian",
    "--categories",
    "smoker=yes,no",
    "--categories",
    "grp=a,b,c",
    "--categories",
    "sex=f,m",
]


@pytest.fixture(scope="module")
def record_release(tmp_path_factory):
    """Laplace on DP-estimated bounds, two jointly calibrated Gaussians, two RR columns."""
    return _release(tmp_path_factory.mktemp("plan-record"), "record", RECORD)


@pytest.fixture(scope="module")
def label_release(tmp_path_factory):
    """A label release whose label has three categories (P(kept) and P(other) differ)."""
    return _release(
        tmp_path_factory.mktemp("plan-label"),
        "label",
        [
            "--release",
            "label",
            "--epsilon",
            "1.5",
            "--role",
            "grp=label",
            "--role",
            "age=public",
            "--role",
            "income=public",
            "--role",
            "score=public",
            "--role",
            "smoker=public",
            "--role",
            "sex=public",
            "--categories",
            "grp=a,b,c",
        ],
    )


def _section(model, title):
    return next(s for s in model.sections if s.title == title)


def _table(model, title, first_head=None):
    return next(
        b.content
        for b in _section(model, title).blocks
        if b.kind == "table" and (first_head is None or b.content["head"][0] == first_head)
    )


def _rows(model, title, first_head=None) -> dict[str, list[str]]:
    return {r[0].text: [c.text for c in r] for r in _table(model, title, first_head)["rows"]}


def _with_unit(res, name, **changes):
    """The release result with one plan unit's fields replaced (a number no formula gives)."""
    plan = res.plan
    units = tuple(replace(u, **changes) if u.name == name else u for u in plan.units)
    return replace(res, plan=replace(plan, units=units))


# ---- 1. randomized response's parameters are the plan unit's -------------------------------


def test_label_rr_parameters_are_the_plan_units(label_release):
    res, frame = label_release
    unit = res.plan.unit_of_column("grp")
    noise = unit.noise
    assert noise.keep_probability is not None and noise.other_probability is not None
    assert noise.keep_probability != pytest.approx(noise.other_probability)
    for variant in ("internal", "external"):
        params = _rows(build_model(res, variant, frame, charts=False), "Mechanisms and parameters")["grp"][4]
        assert f"P(value kept) = {fmt(noise.keep_probability)}" in params
        assert f"P(each other category) = {fmt(noise.other_probability)}" in params
        assert f"number of categories = {fmt(noise.categories)}" in params
    # the same figures in the rendered HTML
    html = render(res, "html", frame=frame).decode()
    assert f"P(value kept) = {fmt(noise.keep_probability)}" in html
    assert f"P(each other category) = {fmt(noise.other_probability)}" in html


def test_noise_parameters_are_read_not_recomputed(label_release):
    res, frame = label_release
    unit = res.plan.unit_of_column("grp")
    odd = replace(unit.noise, keep_probability=0.123456, other_probability=0.438272)
    model = build_model(_with_unit(res, unit.name, noise=odd), "internal", frame, charts=False)
    params = _rows(model, "Mechanisms and parameters")["grp"][4]
    assert "P(value kept) = 0.1235" in params and "P(each other category) = 0.4383" in params


def test_record_parameters_with_labels_a_reader_understands(record_release):
    res, frame = record_release
    rows = _rows(build_model(res, "internal", frame, charts=False), "Mechanisms and parameters")
    assert set(rows) == {"age", "income", "score", "smoker", "grp"}  # the bounds estimate is no column
    for u in res.plan.perturbation_units:
        params = rows[u.name][4]
        n = u.noise
        if u.mechanism_name == "laplace":
            assert f"Laplace scale b = {fmt(n.scale)}" in params and f"noise grid step = {fmt(n.grid_step)}" in params
        elif u.mechanism_name == "gaussian":
            assert f"Gaussian \u03c3 = {fmt(n.sigma)}" in params and f"zCDP \u03c1 = {fmt(n.zcdp_rho)}" in params
        else:
            assert f"P(value kept) = {fmt(n.keep_probability)}" in params
        assert rows[u.name][2] == fmt(u.epsilon) and rows[u.name][3] == fmt(u.delta)
        # a category unit's error is a probability, printed as the wizard prints it (a percentage)
        want = f"{100 * u.shown_error:.1f} %" if u.mechanism_name == "rr" else fmt(u.shown_error)
        assert rows[u.name][5] == want
        assert "worst case" not in params  # the finalised plan: the scale that ran


# ---- 2. the Accuracy table reads expected_error, floor and epsilon --------------------------


def test_accuracy_table_is_the_plan_units(record_release):
    res, frame = record_release
    rows = _rows(build_model(res, "internal", frame, charts=False), "Accuracy")
    assert set(rows) == {u.name for u in res.plan.perturbation_units}
    for u in res.plan.perturbation_units:
        _name, _mech, eps, err, floor, ratio = rows[u.name]
        if u.mechanism_name == "rr":  # a probability of a wrong category: a percentage, as in the wizard
            assert (eps, err, floor) == (fmt(u.epsilon), f"{100 * u.shown_error:.1f} %", f"{100 * u.floor:.1f} %")
        else:
            assert (eps, err, floor) == (fmt(u.epsilon), fmt(u.shown_error), fmt(u.floor))
        assert ratio == f"{u.shown_error / u.floor:.2f} \u00d7"


def test_accuracy_floor_and_error_are_read_not_recomputed(record_release):
    res, frame = record_release
    model = build_model(
        _with_unit(res, "score", floor=12.3456, expected_error=98.7654, clamped_error=None),
        "internal",
        frame,
        charts=False,
    )
    row = _rows(model, "Accuracy")["score"]
    assert row[3:] == ["98.77", "12.35", f"{98.7654 / 12.3456:.2f} \u00d7"]
    assert _rows(model, "Mechanisms and parameters")["score"][5] == "98.77"


# ---- 3. the chart's curves are compiled by the plan ----------------------------------------


def test_chart_curves_at_the_chosen_epsilon_are_the_table(record_release):
    res, frame = record_release
    units, _ = accuracy_units(res.plan, set(), False)
    curves = error_floor_curves(res.plan, [u.name for u in units])
    chosen = res.recipe.budget.epsilon
    assert curves["chosen"] == chosen and chosen in curves["epsilon"]
    assert len(curves["epsilon"]) == 21 and curves["epsilon"] == sorted(curves["epsilon"])
    assert curves["epsilon"][0] < chosen < curves["epsilon"][-1]
    i = curves["epsilon"].index(chosen)
    for u, c in zip(units, curves["units"], strict=True):
        width = u.domain[1] - u.domain[0] if u.mechanism_name in ("laplace", "gaussian") else 1.0
        assert c["name"] == u.name and c["mechanism"] == u.mechanism_name
        assert c["error"][i] * width == pytest.approx(u.shown_error, rel=1e-12)
        assert c["floor"][i] * width == pytest.approx(u.floor, rel=1e-12)
        # every other point is the plan compiled at that budget
        for k in (0, len(curves["epsilon"]) - 1):
            other = res.plan.at_budget(curves["epsilon"][k]).unit(u.name)
            assert c["error"][k] * width == pytest.approx(other.shown_error, rel=1e-12)
        errs = np.array(c["error"])
        assert np.all(np.diff(errs) <= 1e-12)  # more epsilon, less error


def test_chart_budgets_stay_where_a_recipe_may_spend(label_release):
    """``at_budget`` does not validate: the chart must not plot budgets ``compile_plan`` refuses."""
    from dpstudio.plan import compile_plan
    from dpstudio.recipe.validate import MAX_EPSILON, MIN_UNIT_EPSILON

    res, _frame = label_release
    for eps in (20.0, MAX_EPSILON):
        recipe = replace(res.recipe, budget=replace(res.recipe.budget, epsilon=eps))
        plan = compile_plan(recipe)
        grid = error_floor_curves(plan, [plan.unit_of_column("grp").name])["epsilon"]
        assert eps in grid and grid == sorted(grid)
        assert grid[-1] == MAX_EPSILON and grid[0] >= MIN_UNIT_EPSILON
        for at in (grid[0], grid[-1]):  # the recipe compiles (and validates) at every budget plotted
            compile_plan(replace(recipe, budget=replace(recipe.budget, epsilon=at)))


def test_chart_is_skipped_when_the_plan_cannot_be_recompiled(record_release, monkeypatch):
    from dpstudio.report.pdf.charts import qt_available

    res, frame = record_release
    if qt_available():
        assert "error_floor.png" in build_model(res, "internal", frame, charts=True).images
    no_recipe = replace(res, plan=replace(res.plan, recipe=None))
    model = build_model(no_recipe, "internal", frame, charts=True)
    assert "error_floor.png" not in model.images and _rows(model, "Accuracy")

    def refuse(self, epsilon):
        raise ValueError("cannot compile")

    monkeypatch.setattr(ReleasePlan, "at_budget", refuse)
    model = build_model(res, "internal", frame, charts=True)
    assert "error_floor.png" not in model.images and _rows(model, "Accuracy")


# ---- 4. domain estimates in the accounting; synthesizer, model, density units --------------


def test_domain_estimates_are_in_the_accounting_not_the_columns(record_release):
    res, frame = record_release
    est = next(u for u in res.plan.units if u.kind == "domain")
    model = build_model(res, "external", frame, charts=False)
    rows = _rows(model, "Privacy accounting", "Estimate")
    assert rows == {
        est.name: [est.name, "DP bounds: exponential-mechanism quantiles", fmt(est.epsilon), fmt(est.delta)]
    }
    assert est.name not in _rows(model, "Mechanisms and parameters")
    cols = _rows(model, "Columns")
    assert f"(cost \u03b5 = {fmt(est.epsilon)}, \u03b4 = 0, included in the total)" in cols["age"][4]


def test_model_unit_prints_its_description_and_facts(tmp_path):
    res, frame = _release(
        tmp_path,
        "model",
        [
            "--release",
            "model",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--role",
            "smoker=label",
            "--role",
            "age=sensitive",
            "--role",
            "score=sensitive",
            "--role",
            "income=ignore",
            "--role",
            "grp=ignore",
            "--role",
            "sex=ignore",
            "--bounds",
            "age=0:120",
            "--bounds",
            "score=0:100",
            "--categories",
            "smoker=yes,no",
        ],
        output="model.json",
    )
    unit = next(u for u in res.plan.units if u.kind == "model")
    row = _rows(build_model(res, "external", None, charts=False), "Mechanisms and parameters")[unit.name]
    # mechanism "auto" (default since issue 22): the finalised plan names what ran and why
    assert row[1] == "logistic regression, objective perturbation"
    assert unit.description in row[4]
    assert "mechanism chosen: objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011): " in row[4]
    for key in ("noise_scale", "ridge_m", "epsilon_jacobian", "epsilon_noise", "norm_bound"):
        assert f"{T.FACT_LABELS[key]} = {fmt(unit.facts[key])}" in row[4], key  # in plain words
    assert "features: age, score" in row[4]
    summary = _section(build_model(res, "external", None, charts=False), "Summary")
    assert any(
        b.kind == "p" and "Mechanism: objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011): " in b.content
        for b in summary.blocks
    )


def test_synthesizer_unit_is_named_and_described(tmp_path):
    res, frame = _release(
        tmp_path,
        "synth",
        [
            "--release",
            "synthetic",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--synth",
            "mst",
            "--rows",
            "100",
            "--role",
            "grp=label",
            "--role",
            "age=sensitive",
            "--role",
            "income=ignore",
            "--role",
            "score=ignore",
            "--role",
            "smoker=ignore",
            "--role",
            "sex=ignore",
            "--bounds",
            "age=0:120",
            "--categories",
            "grp=a,b,c",
        ],
    )
    unit = next(u for u in res.plan.units if u.kind == "synthesizer")
    model = build_model(res, "internal", frame, charts=False)
    row = _rows(model, "Mechanisms and parameters")[unit.name]
    assert row[1] == "MST synthesizer (noisy marginals)" and unit.description in row[4]
    assert _rows(model, "Columns")["age"][5] == "MST synthesizer (noisy marginals)"


# ---- 5. the label guarantee is the plan's ---------------------------------------------------


def test_label_guarantee_is_the_plans(label_release):
    res, frame = label_release
    lab = res.plan.label
    assert lab is not None
    model = build_model(res, "external", frame, charts=False)
    kv = dict(kv for b in _section(model, "Summary").blocks if b.kind == "kv" for kv in b.content)
    assert kv["Label guarantee"].startswith(f"\u03b5 = {fmt(lab.epsilon)} for the label \u201cgrp\u201d")
    # the plan's note as it is, less its pointer to the internal version's leakage estimate
    # (the external version has no such section: issue 18)
    assert kv["Basis"] == external_text(lab.note) and "internal" not in kv["Basis"]
    internal = build_model(res, "internal", frame, charts=False)
    assert dict(kv for b in _section(internal, "Summary").blocks if b.kind == "kv" for kv in b.content)[
        "Basis"
    ] == public_text(lab.note)
    odd = replace(res, plan=replace(res.plan, label=replace(lab, epsilon=0.777)))
    kv = dict(
        kv
        for b in _section(build_model(odd, "external", frame, charts=False), "Summary").blocks
        if b.kind == "kv"
        for kv in b.content
    )
    assert kv["Label guarantee"].startswith("\u03b5 = 0.777 ")


def test_a_label_estimate_at_another_epsilon_is_flagged(label_release):
    res, frame = label_release
    lab = res.plan.label

    def warnings(at_eps):
        risk = {"label_views": {lab.column: {"at_epsilon": {"epsilon": at_eps}}}}
        model = build_model(replace(res, risk=risk), "internal", frame, charts=False)
        return [
            b.content
            for b in _section(model, "Residual risk estimates").blocks
            if b.kind == "warn" and "does not describe this release" in b.content
        ]

    assert warnings(lab.label_unit_epsilon) == []
    assert len(warnings(lab.label_unit_epsilon * 2)) == 1


def test_semi_sensitive_label_guarantee_has_its_parts(tmp_path):
    res, frame = _release(
        tmp_path,
        "semi",
        [
            "--release",
            "semi-sensitive",
            "--epsilon",
            "2",
            "--role",
            "smoker=label",
            "--role",
            "age=sensitive",
            "--role",
            "income=public",
            "--role",
            "score=public",
            "--role",
            "grp=public",
            "--role",
            "sex=public",
            "--bounds",
            "age=0:120",
            "--categories",
            "smoker=yes,no",
        ],
    )
    lab = res.plan.label
    kv = dict(
        kv
        for b in _section(build_model(res, "internal", frame, charts=False), "Summary").blocks
        if b.kind == "kv"
        for kv in b.content
    )
    assert kv["Label guarantee"].startswith(f"\u03b5 = {fmt(lab.epsilon)} ")
    assert f"\u03b5 = {fmt(lab.label_unit_epsilon)}" in kv["Made of"]
    assert f"\u03b5 = {fmt(lab.sensitive_epsilon)}" in kv["Made of"]


# ---- 6. what the external variant withholds --------------------------------------------------


def test_external_withholds_every_parameter_fixed_by_a_copied_domain(tmp_path):
    res, frame = _release(
        tmp_path,
        "copied",
        [
            "--epsilon",
            "1",
            "--role",
            "age=sensitive",
            "--role",
            "grp=sensitive",
            "--role",
            "income=ignore",
            "--role",
            "score=ignore",
            "--role",
            "smoker=ignore",
            "--role",
            "sex=ignore",
            "--bounds",
            "age=data",
            "--categories",
            "grp=data",
        ],
    )
    internal = _rows(build_model(res, "internal", frame, charts=False), "Mechanisms and parameters")
    external = build_model(res, "external", frame, charts=False)
    ext = _rows(external, "Mechanisms and parameters")
    grp = res.plan.unit_of_column("grp")
    assert f"P(value kept) = {fmt(grp.noise.keep_probability)}" in internal["grp"][4]
    for name in ("age", "grp"):
        assert fmt(res.plan.unit(name).shown_error) not in ext[name][5]
        assert ext[name][5] == "withheld: copied from the data"
    assert "Laplace scale b = withheld" in ext["age"][4] and "noise grid step = withheld" in ext["age"][4]
    for label in ("P(value kept)", "P(each other category)", "number of categories"):
        assert f"{label} = withheld" in ext["grp"][4]
    assert not any(b.kind == "table" for b in _section(external, "Accuracy").blocks)
    assert "error_floor.png" not in external.images


def test_external_accounting_does_not_depend_on_a_copied_category_count(tmp_path):
    """Randomized response's RDP curve depends on its number of categories: an accounting method
    that was not used (RDP, under basic composition) would print a different ε for 3 and for 12
    copied categories.  The external variant shows only the method used."""
    models = {}
    for k in (3, 12):
        rng = np.random.default_rng(11)
        frame = pd.DataFrame({"x": rng.uniform(0, 1, N), "city": rng.choice([f"c{i}" for i in range(k)], N)})
        data = tmp_path / f"cities{k}.csv"
        frame.to_csv(data, index=False)
        rp = tmp_path / f"cities{k}.recipe.json"
        args = ["--epsilon", "1", "--delta", "1e-6", "--role", "x=sensitive", "--role", "city=sensitive"]
        args += ["--bounds", "x=0:1", "--categories", "city=data"]
        assert main(["recipe", "init", str(data), "-o", str(rp), "--confirm-inferred", *args]) == 0
        res = execute_release(load_recipe(rp), output_path=tmp_path / f"cities{k}.out.csv", ledger=None)
        assert res.plan.unit_of_column("city").noise.categories == k
        assert res.plan.composition.method == "basic" and "rdp" in res.plan.composition.alternatives
        models[k] = {v: build_model(res, v, frame, charts=False) for v in ("internal", "external")}
    ext = [_section(models[k]["external"], "Privacy accounting") for k in (3, 12)]
    assert ext[0] == ext[1]
    assert not any(b.kind == "table" and b.content["head"][0] == "Method not used" for b in ext[0].blocks)
    # the internal variant shows the methods not used, and there the count does show
    internal = [_rows(models[k]["internal"], "Privacy accounting", "Method not used") for k in (3, 12)]
    assert set(internal[0]) == {"rdp"} and internal[0] != internal[1]


def test_provisional_category_unit_gives_no_parameters_as_final(tmp_path):
    from dpstudio.plan import compile_plan

    res, frame = _release(
        tmp_path,
        "dpcats",
        [
            "--epsilon",
            "1",
            "--role",
            "grp=sensitive",
            "--role",
            "age=ignore",
            "--role",
            "income=ignore",
            "--role",
            "score=ignore",
            "--role",
            "smoker=ignore",
            "--role",
            "sex=ignore",
            "--categories",
            "grp=dp:0.3:a,b,c,d",
        ],
    )
    provisional = compile_plan(res.recipe)
    assert not provisional.final
    row = _rows(
        build_model(replace(res, plan=provisional), "internal", frame, charts=False), "Mechanisms and parameters"
    )["grp"]
    assert "P(value kept) =" not in row[4] and "category list selected with DP" in row[4]
    assert row[5] == "\u2014"
    final = _rows(build_model(res, "internal", frame, charts=False), "Mechanisms and parameters")["grp"]
    assert f"P(value kept) = {fmt(res.plan.unit_of_column('grp').noise.keep_probability)}" in final[4]


def test_noise_labels_cover_the_noise_parameters():
    from dpstudio.report import text as T

    shown = set(T.NOISE_LABELS) | {"zcdp_rho"}
    internal = {"sigma_steps", "diam_steps"}  # the sigma and the domain's width in grid steps
    assert set(NoiseParameters.__dataclass_fields__) == shown | internal
