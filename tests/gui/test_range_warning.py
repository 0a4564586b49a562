"""The budget page warns when a column's expected noise exceeds its public range (from the
compiled plan), and the release page lets the user turn off clamping to the public bounds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dpstudio.gui.charts.preview import fmt_number


def _budget(win, eps: float):
    win.go_to(3)
    page = win.budget_page
    page.spin.setValue(eps)
    assert win.session.recipe.budget.epsilon == pytest.approx(eps)
    return page


def _unit(win, column):
    plan, err = win.session.plan()
    assert plan is not None, err
    return plan.unit(column)


def test_warning_names_the_column_whose_noise_exceeds_its_range(qtbot, loaded_demo):
    win = loaded_demo
    page = _budget(win, 4.0)
    edu, income = _unit(win, "education_level"), _unit(win, "income")
    # the demo at epsilon 4: education (1 to 16) gets noise far wider than its range, income does not
    assert edu.expected_error > edu.domain[1] - edu.domain[0]
    assert income.expected_error < income.domain[1] - income.domain[0]
    assert not page.range_warning.isHidden()
    text = page.range_warning.text()
    assert "<b>education_level</b>" in text and "income" not in text
    assert fmt_number(edu.expected_error) in text  # the plan's figure, as the budget table prints it
    assert "range 1 to 16" in text and "say little about the real ones" in text
    # advice in plain words: more budget or budget share, a coarser domain, synthetic data
    for advice in ("more ε", "budget share", "few categories", "synthetic data"):
        assert advice in text
    assert "--" not in text  # no command-line flags in the GUI


def test_warning_follows_the_budget_and_the_share(qtbot, loaded_demo):
    win = loaded_demo
    page = _budget(win, 1.0)
    assert not page.range_warning.isHidden()
    page.spin.setValue(40.0)  # noise well inside the range: nothing to warn about
    edu = _unit(win, "education_level")
    assert edu.expected_error < edu.domain[1] - edu.domain[0]
    assert page.range_warning.isHidden() and page.range_warning.text() == ""
    page.spin.setValue(4.0)
    assert not page.range_warning.isHidden()
    # a larger budget share for the column fixes it at the same epsilon
    from dpstudio.gui.wizard.edits import set_mechanism

    win.session.update(lambda r: set_mechanism(r, "education_level", weight=20.0))
    edu, income = _unit(win, "education_level"), _unit(win, "income")
    assert edu.expected_error < edu.domain[1] - edu.domain[0]
    # ... and takes it from the others: income's noise now exceeds its range instead
    assert income.expected_error > income.domain[1] - income.domain[0]
    assert "education_level" not in page.range_warning.text() and "<b>income</b>" in page.range_warning.text()


def test_no_warning_without_a_plan_or_numeric_units(qtbot, loaded_demo):
    from dpstudio.gui.wizard.edits import set_role

    win = loaded_demo
    page = _budget(win, 1.0)
    assert not page.range_warning.isHidden()
    # neither numeric column is perturbed any more: no unit has a range to compare with
    win.session.update(lambda r: set_role(set_role(r, "education_level", "public"), "income", "public"))
    plan, _ = win.session.plan()
    assert plan is not None and all(u.domain is None for u in plan.perturbation_units)
    assert page.range_warning.isHidden()


def test_clamp_checkbox_turns_clamping_off_and_on(qtbot, loaded_demo):
    win = loaded_demo
    win.go_to(2)
    page = win.release_page
    assert not page.clamp.isHidden() and page.clamp.isChecked()  # on by default for record releases
    assert "clamp_to_bounds" not in win.session.recipe.release.options
    assert any("nearest bound" in s for s in _unit(win, "education_level").post_processing)
    page.clamp.setChecked(False)
    assert win.session.recipe.release.options.get("clamp_to_bounds") is False
    steps = _unit(win, "education_level").post_processing
    assert not any("nearest bound" in s for s in steps) and any("not clamped" in s for s in steps)
    page.clamp.setChecked(True)
    assert "clamp_to_bounds" not in win.session.recipe.release.options
    assert "--" not in page.clamp.toolTip() and "after this step" in page.clamp.toolTip()


def test_clamp_checkbox_only_for_record_releases(qtbot, loaded_demo):
    win = loaded_demo
    win.go_to(2)
    page = win.release_page
    page.clamp.setChecked(False)
    page.type_buttons["synthetic"].setChecked(True)
    assert page.clamp.isHidden()
    # the record-release option does not travel into the synthesizer's options
    assert "clamp_to_bounds" not in win.session.recipe.release.options
    page.type_buttons["label"].setChecked(True)
    assert not page.clamp.isHidden() and page.clamp.isChecked()


def test_recipe_saying_false_shows_unchecked(qtbot, loaded_demo):
    from dpstudio.recipe.model import Params

    win = loaded_demo
    win.go_to(2)
    win.session.update(lambda r: replace(r, release=replace(r.release, options=Params.of({"clamp_to_bounds": False}))))
    assert not win.release_page.clamp.isChecked()
