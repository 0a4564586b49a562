"""The budget page's "Set targets" mode (issue 21): the user states targets, "Find ε" solves for
the smallest ε on the worker thread, and the solution becomes the session's recipe."""

from __future__ import annotations

from dataclasses import replace

from dpstudio.gui.wizard.targets_panel import fmt_eps
from dpstudio.plan.solve import solve
from dpstudio.recipe.model import Target

WAIT = 120000  # a hang guard, not a speed claim


def budget_page(qtbot, win, targets_mode=True):
    assert win.go_to(3)
    page = win.budget_page
    page.set_mode(targets_mode)
    return page


def add_in_editor(page, kind, column=None, value=None, share=None):
    """State a target through the editor row, as the user does."""
    panel = page.targets
    panel.kind.setCurrentIndex(panel.kind.findData(kind))
    if column is not None:
        panel.column.setCurrentIndex(panel.column.findData(column))
    if value is not None:
        panel.value.setValue(value)
    if share is not None:
        panel.share.setValue(share)
    panel.add_button.click()


def find(qtbot, page):
    panel = page.targets
    assert panel.find_button.isEnabled()
    panel.find_button.click()
    assert panel.worker is not None  # heavy work runs on the worker thread
    qtbot.waitUntil(lambda: panel.worker is None, timeout=WAIT)


def weights(recipe):
    return {c.name: c.mechanism.weight for c in recipe.columns if c.mechanism is not None}


def test_find_epsilon_applies_the_solution(qtbot, loaded_demo):
    win = loaded_demo
    page = budget_page(qtbot, win)
    panel = page.targets
    assert page.targets_mode and panel.isVisible() and not page.eps_row.isVisible()
    # the defaults: within 5 % of the column's public range (income 0-500000), for 95 %
    panel.kind.setCurrentIndex(panel.kind.findData("within"))
    panel.column.setCurrentIndex(panel.column.findData("income"))
    assert panel.value.value() == 25000 and panel.share.value() == 95.0
    add_in_editor(page, "within", "income", 20000, 50)
    add_in_editor(page, "keep", "children", 80)
    rec = win.session.recipe
    assert rec.budget.targets == (Target("within", 20000.0, "income", 0.5), Target("keep", 0.8, "children"))
    assert panel.table.rowCount() == 2 and panel.status_of(0) is None  # not computed yet

    expected = solve(win.session.preview_recipe(), cap=50.0)
    assert expected.feasible
    find(qtbot, page)

    assert f"<b>{fmt_eps(expected.epsilon)}</b>" in panel.result.text()
    assert f"charge ε = {fmt_eps(expected.plan.total.epsilon)}" in panel.result.text()
    applied = expected.apply()
    now = win.session.recipe
    assert now.budget.epsilon == applied.budget.epsilon
    assert weights(now) == weights(applied)
    assert now.budget.targets == rec.budget.targets
    assert now.budget.solved == applied.budget.solved and now.budget.solved.get("status") == "met"
    assert [panel.status_of(i) for i in range(2)] == ["met", "met"]
    assert panel.table.item(0, 1).text().startswith("✓ ")
    # the ε controls and the page's total follow the solved recipe
    assert abs(page.spin.value() - round(expected.epsilon, 3)) < 1e-9
    plan, _ = win.session.plan()
    assert abs(plan.total.epsilon - expected.plan.total.epsilon) < 1e-9
    assert page.preview.column_combo.currentText() == "income"  # the charts show the first target's column
    # undoable in one step
    win.session.undo()
    assert win.session.recipe.budget.epsilon == rec.budget.epsilon


def test_editing_a_target_or_epsilon_marks_the_solution_stale(qtbot, loaded_demo):
    win = loaded_demo
    page = budget_page(qtbot, win)
    panel = page.targets
    add_in_editor(page, "keep", "children", 80)
    find(qtbot, page)
    assert panel.status_of(0) == "met" and not panel.stale
    add_in_editor(page, "keep", "children", 85)  # the same column: the target is changed, not doubled
    assert win.session.recipe.budget.targets == (Target("keep", 0.85, "children"),)
    assert panel.stale and panel.status_of(0) is None
    assert "press “Find ε”" in panel.result.text()
    find(qtbot, page)
    assert panel.status_of(0) == "met"
    # back to "Set ε": the targets stay, a typed ε rules and the solved record goes
    page.set_mode(False)
    assert page.eps_row.isVisible() and not panel.isVisible()
    page.spin.setValue(30.0)
    rec = win.session.recipe
    assert rec.budget.epsilon == 30.0 and rec.budget.targets and not rec.budget.solved.items
    # the removal button removes the target
    page.set_mode(True)
    panel.table.cellWidget(0, 2).click()
    assert win.session.recipe.budget.targets == ()
    assert not panel.find_button.isEnabled()


def test_impossible_target_shows_the_advice(qtbot, loaded_demo):
    win = loaded_demo
    page = budget_page(qtbot, win)
    panel = page.targets
    before = win.session.recipe.budget.epsilon
    add_in_editor(page, "within", "income", 1, 99.0)
    find(qtbot, page)
    assert panel.status_of(0) == "impossible"
    assert panel.table.item(0, 1).text().startswith("✗ ")
    assert panel.advice.isVisible()
    text = panel.advice.text()
    assert "impossible" in text and "widen the tolerance" in text
    assert "No ε up to 50 meets every target" in panel.result.text()
    assert win.session.recipe.budget.epsilon == before  # nothing applied


def test_beyond_the_ledger_cap_says_what_is_needed(qtbot, loaded_demo):
    win = loaded_demo
    page = budget_page(qtbot, win)
    page.set_cap(0.5)
    assert page.targets.cap() == 0.5
    add_in_editor(page, "keep", "children", 95)
    find(qtbot, page)
    panel = page.targets
    assert panel.status_of(0) == "beyond cap"
    assert "more than the 0.5 this dataset can still spend" in panel.advice.text()


def test_label_attack_target_runs_the_attack_model(qtbot, loaded_demo):
    from dpstudio.gui.wizard.edits import publish_unprotected, set_release_type
    from dpstudio.gui.wizard.targets_panel import evidence_key

    win = loaded_demo
    win.session.set_recipe(publish_unprotected(set_release_type(win.session.recipe, "label")))
    page = budget_page(qtbot, win)
    panel = page.targets
    kinds = [panel.kind.itemData(i) for i in range(panel.kind.count())]
    assert "label-attack" in kinds and "reid" not in kinds  # the kinds this release type takes
    add_in_editor(page, "label-attack", value=60)
    assert win.session.recipe.budget.targets == (Target("label-attack", 0.6),)
    assert "internal use only" in panel.advice.text()
    find(qtbot, page)
    assert panel.last_error is None, panel.last_error
    # the public columns alone let an attacker guess the label better than 60 %: not met at
    # any ε, with the floor and what to relax; a risk target chooses no ε (the typed one stays)
    typed = win.session.recipe.budget.epsilon
    item = panel.table.item(0, 1)
    assert panel.status_of(0) == "not met"
    assert item.text().startswith("✗ not met: best attacker right")
    assert "%" in item.text()
    assert "internal use only" in item.toolTip()
    assert "raise the limit" in panel.advice.text()
    assert "Risk targets are checks" in panel.result.text()
    assert win.session.recipe.budget.epsilon == typed and not win.session.recipe.budget.solved.items
    # the attacker model is cached for the next search
    key = evidence_key(win.session, win.session.preview_recipe())
    model = win.session.derived.get(key) if key is not None else None
    assert model is not None
    add_in_editor(page, "label-attack", value=99)
    find(qtbot, page)
    assert win.session.derived.get(key) is model
    assert panel.status_of(0) == "met"
    assert panel.table.item(0, 1).text().startswith("✓ best attacker right")
    assert win.session.recipe.budget.epsilon == typed  # checked at the typed ε, nothing applied


def test_targets_and_mode_survive_a_recipe_round_trip(qtbot, loaded_demo, tmp_path):
    from tests.gui.conftest import load

    win = loaded_demo
    page = budget_page(qtbot, win)
    add_in_editor(page, "within", "income", 20000, 50)
    add_in_editor(page, "keep", "children", 80)
    find(qtbot, page)
    saved = win.session.recipe
    path = tmp_path / "targets.recipe.json"
    path.write_text(saved.dumps())
    plain = tmp_path / "plain.recipe.json"
    plain.write_text(
        replace(saved, budget=replace(saved.budget, targets=(), solved=type(saved.budget.solved)())).dumps()
    )

    load(qtbot, win, plain)
    assert not page.targets_mode  # a recipe without targets opens in "Set ε"
    load(qtbot, win, path)
    assert page.targets_mode
    assert win.session.recipe.budget.targets == saved.budget.targets
    assert win.session.recipe.budget.epsilon == saved.budget.epsilon
    win.go_to(3)
    assert page.targets.table.rowCount() == 2
    assert page.targets.table.item(0, 0).text().startswith("income within ±20000")


def test_ctrl_return_finds_and_cancel_stops(qtbot, loaded_demo, monkeypatch):
    import threading

    from PySide6.QtCore import Qt

    import dpstudio.gui.wizard.targets_panel as tp

    win = loaded_demo
    page = budget_page(qtbot, win)
    panel = page.targets
    add_in_editor(page, "keep", "children", 80)
    before = win.session.recipe
    started = threading.Event()

    def waits_for_cancel(*_args, progress, cancel):  # a search that only ends when cancelled
        started.set()
        while not cancel.cancelled:
            started.wait(0.01)
        cancel.check()

    monkeypatch.setattr(tp, "find_epsilon", waits_for_cancel)
    qtbot.keyClick(win, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert panel.worker is not None
    assert panel.cancel_button.isVisible() and panel.progress.isVisible()
    assert not panel.find_button.isEnabled() and not panel.add_button.isEnabled()
    qtbot.waitUntil(started.is_set, timeout=WAIT)
    qtbot.keyClick(win, Qt.Key.Key_Escape)  # Esc presses the live Cancel button (walkthrough finding)
    qtbot.waitUntil(lambda: panel.worker is None, timeout=WAIT)
    assert "cancelled" in panel.result.text()
    assert not panel.cancel_button.isVisible() and panel.find_button.isEnabled()
    assert win.session.recipe == before
    # hidden in "Set ε" mode, the shortcut does not search
    page.set_mode(False)
    qtbot.keyClick(win, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert panel.worker is None


def test_every_control_explains_itself_in_plain_words(qtbot, loaded_demo):
    from PySide6.QtWidgets import QAbstractButton, QComboBox, QDoubleSpinBox

    from dpstudio.gui.wizard.targets_panel import kind_tooltip

    win = loaded_demo
    page = budget_page(qtbot, win)
    panel = page.targets
    add_in_editor(page, "within", "income", 20000, 50)
    find(qtbot, page)
    controls = [page.mode_eps, page.mode_targets]
    controls += panel.findChildren(QComboBox) + panel.findChildren(QDoubleSpinBox)
    controls += panel.findChildren(QAbstractButton)
    for w in controls:
        if w.isVisible():
            assert w.toolTip().strip(), w
    for i in range(panel.kind.count()):
        assert panel.kind.itemData(i, 3).strip()  # Qt.ToolTipRole: what each kind of target means
    texts = [w.toolTip() for w in controls] + [panel.result.text(), panel.advice.text()]
    texts += [panel.table.item(0, c).text() + panel.table.item(0, c).toolTip() for c in (0, 1)]
    assert not any("--" in t for t in texts)
    assert "income=within" not in " ".join(texts)  # the target in words, not in its recipe form
    for kind in ("label-attack", "reid"):
        assert "for internal use only" in kind_tooltip(kind)
    assert "for internal use only" not in kind_tooltip("within")
    # a problem about a target names it in words
    page.set_mode(False)
    page.spin.setValue(1.0)
    assert "Target “income within ±20000 for 50% of records”" in page.problem_label.text()
    assert "income=within" not in page.problem_label.text()


def test_synthetic_marginals_target(qtbot, loaded_demo):
    from dpstudio.gui.screenshots import recipe_for

    win = loaded_demo
    win.session.set_recipe(recipe_for(win.session.recipe, "synthetic"))
    page = budget_page(qtbot, win)
    panel = page.targets
    assert [panel.kind.itemData(i) for i in range(panel.kind.count())] == ["marginals"]
    add_in_editor(page, "marginals")
    assert win.session.recipe.budget.targets == (Target("marginals", 0.05),)  # the default
    rows = len(win.session.frame)
    from dpstudio.plan.solve import Evidence

    expected = solve(win.session.preview_recipe(), evidence=Evidence(rows=rows), cap=50.0)
    find(qtbot, page)
    assert f"<b>{fmt_eps(expected.epsilon)}</b>" in panel.result.text()
    assert panel.status_of(0) == "met"
    assert win.session.recipe.budget.epsilon == expected.apply().budget.epsilon
