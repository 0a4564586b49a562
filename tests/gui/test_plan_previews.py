"""The budget page and the Review page print the compiled plan.

* the budget table's ε, δ, noise and expected error are the plan units' own figures, for every
  release type and at several budgets;
* the error chart's marker is the current plan's expected error, the curves are cached per
  recipe-without-its-epsilon (moving ε starts no new computation);
* the attacker estimate is read at the epsilon of the label's randomized response
  (``plan.label.label_unit_epsilon``), the same number on the budget chart and on Review.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from conftest import load

EPSILONS = (0.3, 1.0, 4.0)


def _cells(panel) -> list[dict]:
    from dpstudio.gui.wizard.budget_charts import TABLE_COLUMNS

    t = panel.table
    return [{k: t.item(i, j).text() for j, k in enumerate(TABLE_COLUMNS)} for i in range(t.rowCount())]


def _number(text: str) -> float:
    """The number in a table cell: "≤ b = 1,234", "σ = 3.1", "keep 66.1 %", "2.5 × 10⁻⁷", "12.5 %"."""
    sup = str.maketrans("\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "-0123456789")
    plain = re.sub(
        r" \u00d7 10([\u207b\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+)", lambda g: "e" + g[1].translate(sup), text
    )
    m = re.search(r"-?[\d,]*\.?\d+(?:e[-+]?\d+)?", plain.replace("\u2264", ""))
    value = float(m.group(0).replace(",", ""))
    return value / 100 if "%" in text else value


def _check_table(session, panel) -> None:
    """Every row is a plan unit, its cells the unit's fields (formatted as the product formats them
    and, parsed back, equal to the fields to the printed precision)."""
    from dpstudio.gui.charts.preview import error_text, fmt_delta, fmt_epsilon, noise_text
    from dpstudio.plan import compile_plan, for_rows

    plan, err = session.plan()
    assert plan is not None, err
    # the session's plan is the plan of the current recipe, settled for the loaded table's rows
    again = compile_plan(session.recipe)
    if session.frame is not None and session.sample_of is None:
        again = for_rows(again, len(session.frame))
    assert [(u.name, u.epsilon, u.delta, u.expected_error) for u in again.units] == [
        (u.name, u.epsilon, u.delta, u.expected_error) for u in plan.units
    ]
    rows = _cells(panel)
    assert [r["unit"] for r in rows] == [u.name for u in plan.units]
    for r, u in zip(rows, plan.units, strict=True):
        assert (r["epsilon"], r["delta"], r["noise"], r["error"]) == (
            fmt_epsilon(u.epsilon),
            fmt_delta(u.delta),
            noise_text(u),
            error_text(u),
        ), u.name
        assert _number(r["epsilon"]) == pytest.approx(u.epsilon, rel=1e-3)
        assert _number(r["delta"]) == pytest.approx(u.delta, rel=1e-2, abs=0)
        if u.kind == "density":  # the settled calibration, relative to a flat density (density.for_rows)
            assert _number(r["noise"]) == pytest.approx(u.facts["noise_sd_relative_to_flat"], rel=2e-3)
            assert _number(r["error"]) == pytest.approx(u.facts["noise_mean_abs_relative_to_flat"], rel=2e-3)
            continue
        noise = (
            u.noise.scale
            if u.noise.scale is not None
            else u.noise.sigma
            if u.noise.sigma is not None
            else u.noise.keep_probability
        )
        if noise is None:
            assert r["noise"] == "\u2014"
        else:
            assert _number(r["noise"]) == pytest.approx(noise, rel=2e-3, abs=1e-3 if u.noise.keep_probability else 0)
        if u.shown_error is None:
            assert r["error"] == "\u2014"
        else:
            tol = 1e-3 if u.categories_count else 0
            # the printed error: after clamping to the bounds (worst case) when the release clamps
            assert _number(r["error"]) == pytest.approx(u.shown_error, rel=2e-3, abs=tol)
            assert r["error"].startswith("\u2264") == u.provisional


def _check_marker(session, panel, qtbot) -> None:
    """The error chart's marker is the current plan's expected error of the shown unit."""
    from dpstudio.gui.charts.preview import relative

    if not panel._units:
        return
    qtbot.waitUntil(lambda: panel.error_chart.showing_plot, timeout=120000)
    plan, _ = session.plan()
    unit = panel._units[max(panel.column_combo.currentIndex(), 0)]
    x, y = panel.error_chart.marker.getOriginalDataset()
    assert x[0] == session.recipe.budget.epsilon
    assert y[0] == float(relative(unit, plan.unit(unit.name).shown_error))


def _sweep(window, qtbot) -> None:
    s = window.session
    assert window.go_to(3), s.problems()
    page = window.budget_page
    for eps in EPSILONS:
        page.set_epsilon(eps)
        assert s.recipe.budget.epsilon == eps
        _check_table(s, page.preview)
        _check_marker(s, page.preview, qtbot)
    # the Review page prints the same cells: part, expected error in its plain table, the noise
    # parameter in its (collapsed) technical details
    assert window.go_to(4), s.problems()
    plain = window.review_page.view.toPlainText()
    details = window.review_page.details.toPlainText()
    for r in _cells(page.preview):
        assert r["unit"] in plain and r["error"] in plain
        assert r["unit"] in details and r["noise"] in details and r["error"] in details


def _demo_variant(window, change) -> None:
    window.session.update(change)


@pytest.mark.parametrize(
    "variant", ["laplace+rr", "two-gaussians", "label", "semi-sensitive", "dp-bounds", "synthetic"]
)
def test_budget_table_prints_the_plan_units_demo(qtbot, loaded_demo, variant):
    from dpstudio.gui.wizard.edits import publish_unprotected, set_domain, set_mechanism, set_release_type
    from dpstudio.recipe.model import Cost, Domain

    win = loaded_demo
    s = win.session
    if variant == "two-gaussians":
        s.update(lambda r: set_mechanism(set_mechanism(r, "income", "gaussian"), "education_level", "gaussian"))
        assert s.recipe.budget.delta > 0
    elif variant == "label":  # its other columns published as they are (the release page's button)
        s.update(lambda r: publish_unprotected(set_release_type(r, variant)))
    elif variant == "semi-sensitive":
        s.update(lambda r: set_release_type(r, variant))
    elif variant == "dp-bounds":
        dom = Domain("numeric", source="dp", cost=Cost(0.1, 0.0), search_low=0.0, search_high=1_000_000.0)
        s.update(lambda r: set_domain(r, "income", dom))
    elif variant == "synthetic":
        s.update(lambda r: set_release_type(r, "synthetic"))
        for c in s.recipe.columns:  # public columns without a typed domain are left out
            if c.role not in ("identifier", "ignore") and c.domain is None:
                s.update_column(c.name, role="ignore")
    plan, err = s.plan()
    assert plan is not None, err
    if variant == "two-gaussians":
        assert [u.mechanism_name for u in plan.perturbation_units].count("gaussian") == 2
    if variant == "dp-bounds":
        assert plan.unit("income").provisional
    _sweep(win, qtbot)


def _numeric_table(path, n=300):
    rng = np.random.default_rng(1)
    x1 = rng.uniform(0, 1, n)
    x2 = rng.uniform(0, 10, n)
    y = np.where(x1 + 0.1 * x2 + rng.normal(0, 0.3, n) > 1.0, "yes", "no")
    pd.DataFrame({"x1": x1.round(4), "x2": x2.round(3), "y": y}).to_csv(path, index=False)


@pytest.mark.parametrize("rtype", ["model", "density"])
def test_budget_table_prints_the_plan_units_model_density(qtbot, window, tmp_path, rtype):
    from dpstudio.gui.wizard.edits import set_domain, set_release_type
    from dpstudio.recipe.model import Domain

    data = tmp_path / "num.csv"
    _numeric_table(data)
    load(qtbot, window, data)
    s = window.session
    s.update_column("x1", role="sensitive")
    s.update_column("x2", role="sensitive" if rtype == "density" else "public")
    s.update_column("y", role="label" if rtype == "model" else "ignore", type="categorical")
    s.update(
        lambda r: set_domain(
            set_domain(r, "x1", Domain(kind="numeric", low=0, high=1)), "x2", Domain(kind="numeric", low=0, high=10)
        )
    )
    if rtype == "model":
        s.update(lambda r: set_domain(r, "y", Domain(kind="categorical", categories=("no", "yes"))))
    s.update(lambda r: set_release_type(r, rtype))
    _sweep(window, qtbot)


def test_curves_are_cached_and_moving_epsilon_only_moves_the_marker(qtbot, loaded_demo):
    win = loaded_demo
    assert win.go_to(3)
    page = win.budget_page
    prev = page.preview
    qtbot.waitUntil(lambda: prev.error_chart.showing_plot and prev._curve_worker is None, timeout=120000)
    curve = prev.error_chart.curve.getOriginalDataset()
    assert len(curve[0]) >= 20  # the plan at a few dozen budgets
    cached = dict(prev._curves)
    for eps in (0.2, 0.7, 3.0, 9.0):
        page.set_epsilon(eps)
        assert prev._curve_worker is None and dict(prev._curves) == cached  # nothing recomputed
        assert np.array_equal(prev.error_chart.curve.getOriginalDataset()[0], curve[0])
    # a change of the recipe other than epsilon computes new curves (on a worker)
    from dpstudio.gui.wizard.edits import set_mechanism

    win.session.update(lambda r: set_mechanism(r, "income", weight=5.0))
    assert prev._curve_worker is not None and not prev.error_chart.showing_plot
    qtbot.waitUntil(lambda: prev.error_chart.showing_plot, timeout=120000)


def test_attacker_is_read_at_the_label_epsilon_on_the_chart_and_on_review(qtbot, loaded_demo):
    from dpstudio.gui.wizard.budget_charts import leakage_available, leakage_key
    from dpstudio.gui.wizard.edits import set_release_type

    if not leakage_available():
        pytest.skip("no leakage model in this build")
    win = loaded_demo
    s = win.session
    # semi-sensitive: the label's randomized response gets one share of epsilon, the sensitive
    # columns the others
    s.update(lambda r: set_release_type(r, "semi-sensitive"))
    assert win.go_to(3), s.problems()
    win.budget_page.set_epsilon(2.0)
    chart = win.budget_page.preview.attack_chart
    qtbot.waitUntil(lambda: chart.showing_plot and chart.current is not None, timeout=120000)
    plan, _ = s.plan()
    eps_label = plan.label.label_unit_epsilon
    assert eps_label < 0.5 * plan.total.epsilon
    model = s.derived[leakage_key(s, s.recipe)]
    from dpstudio.risk import label_rr_law

    want = model.accuracies_of(label_rr_law(plan)[0])
    informed = float(want["informed"][0])
    assert chart.current == pytest.approx((float(want["uninformed"][0]), float(want["naive"][0]), informed))
    on_chart = re.search(r"released label guesses it right (\d+%)", chart.caption.text()).group(1)
    assert win.go_to(4), s.problems()
    review = win.review_page.view.toPlainText()
    on_review = re.search(r"guesses it right (\d+%)", review).group(1)
    assert on_chart == on_review == f"{informed:.0%}"
    # read at the total epsilon, the number would differ (what the Review page used to show)
    at_total = float(model.accuracies(np.array([plan.total.epsilon]))["informed"][0])
    assert f"{at_total:.0%}" != on_review
