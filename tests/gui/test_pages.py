"""Each wizard page against the demo data."""

from __future__ import annotations

import pytest
from conftest import load
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QKeySequence


def test_data_page_loads_on_worker_and_summarises(qtbot, window, demo_copy):
    page = window.data_page
    assert not page.isComplete()
    w = page.load(str(demo_copy))
    assert w is not None and page.loading  # returns at once: the worker does the reading
    qtbot.waitUntil(lambda: window.session.has_data, timeout=120000)
    assert page.model.rowCount() == 4000
    assert page.schema_table.rowCount() == 12
    assert "4,000 rows" in page.summary.text()
    assert window.current_index == 1  # moved on to the columns step
    from dpstudio.gui.wizard.data_page import recent_files

    assert recent_files()[0] == str(demo_copy.resolve())


def test_data_page_bad_file_shows_error_dialog(qtbot, window, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x00\x01\x02" * 100)
    window.data_page.load(str(bad))
    qtbot.waitUntil(lambda: not window.data_page.loading, timeout=120000)
    assert window.data_page.last_error is not None
    boxes = [w for w in window.findChildren(type(window).__mro__[0].__base__.__base__) if w.objectName() == "errorBox"]
    from PySide6.QtWidgets import QMessageBox

    boxes = [b for b in window.findChildren(QMessageBox) if b.objectName() == "errorBox"]
    assert boxes and boxes[-1].text() and "\n" not in boxes[-1].text()
    assert not window.session.has_data


def test_data_page_drag_and_drop(qtbot, window, demo_copy):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(demo_copy))])
    ev = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    window.data_page.dropEvent(ev)
    qtbot.waitUntil(lambda: window.session.has_data, timeout=120000)


def test_columns_page_roles_and_dropped_identifier(qtbot, window, demo_copy):
    load(qtbot, window, demo_copy)
    page = window.columns_page
    window.go_to(1)
    assert not page.isComplete()  # schema recipe: sensitive columns have no domain yet
    row = page._names.index("person_id")
    assert page.table.item(row, 4).text() == "dropped"
    assert page.table.item(row, 0).font().strikeOut()
    # change a role through the combo box
    i = page._names.index("income")
    combo = page.table.cellWidget(i, 1)
    combo.setCurrentIndex(combo.findData("ignore"))
    assert window.session.recipe.column("income").role == "ignore"
    assert page.table.item(i, 4).text() == "dropped"
    window.session.undo()
    assert window.session.recipe.column("income").role == "sensitive"


def test_columns_page_domain_editor(qtbot, window, demo_copy):
    load(qtbot, window, demo_copy)
    window.go_to(1)
    page = window.columns_page
    page.select("income")
    ed = page.editor
    ed.low.setText("0")
    ed.high.setText("500000")
    ed.high.editingFinished.emit()
    d = window.session.recipe.column("income").domain
    assert (d.source, d.low, d.high) == ("public", 0.0, 500000.0)
    # DP estimate: cost visible and counted
    ed.radio["dp"].setChecked(True)
    ed.search_low.setText("0")
    ed.search_high.setText("1000000")
    ed.search_high.editingFinished.emit()
    d = window.session.recipe.column("income").domain
    assert d.source == "dp" and d.cost.epsilon == pytest.approx(0.1)
    # copy from data: declined -> nothing changes; confirmed -> acknowledgement added, red warning
    ed.confirm_copy = lambda name: False
    ed.radio["data"].setChecked(True)
    assert window.session.recipe.column("income").domain.source == "dp"
    assert not ed.radio["data"].isChecked()
    ed.confirm_copy = lambda name: True
    ed.radio["data"].setChecked(True)
    rec = window.session.recipe
    assert rec.column("income").domain.source == "data"
    assert "domain-copied-from-data" in rec.acknowledgements
    assert "NOT cover" in ed.warning.text()
    assert page.table.item(page._names.index("income"), 3).text().startswith("⚠")


def test_release_page_types_and_explanations(qtbot, loaded_demo):
    win = loaded_demo
    win.go_to(2)
    page = win.release_page
    assert page.isComplete()
    texts = [page.table.item(r, 3).text() for r in range(page.table.rowCount())]
    assert any("Protects" in t and "Does not protect" in t for t in texts)
    page.type_buttons["synthetic"].setChecked(True)
    assert win.session.recipe.release.type == "synthetic"
    assert win.session.recipe.budget.delta > 0
    assert page.method.isVisible()
    # the synthesizer starts at the recommended one, marked and explained in the combo
    from dpstudio.plan.synthetic import recommend_method

    best, why = recommend_method(win.session.recipe)
    assert win.session.recipe.release.options.get("method") == best
    assert page.method.currentData() == best and "(recommended)" in page.method.currentText()
    assert why in page.method.toolTip()
    # and why, visibly, not only in a tooltip
    assert page.method_why.isVisible() and why in page.method_why.text()
    page.type_buttons["record"].setChecked(True)
    # every mechanism combo has a tooltip explaining it
    for r in range(page.table.rowCount()):
        w = page.table.cellWidget(r, 1)
        if w is not None:
            assert w.itemData(0, Qt.ItemDataRole.ToolTipRole)


def test_budget_page_slider_drives_recipe_and_charts(qtbot, loaded_demo):
    from dpstudio.gui.wizard.budget_page import eps_to_slider, slider_to_eps

    win = loaded_demo
    win.go_to(3)
    page = win.budget_page
    page.slider.setValue(eps_to_slider(0.5))
    assert win.session.recipe.budget.epsilon == pytest.approx(slider_to_eps(eps_to_slider(0.5)))
    assert page.spin.value() == pytest.approx(win.session.recipe.budget.epsilon)
    prev = page.preview
    qtbot.waitUntil(lambda: prev.error_chart.showing_plot and prev.hist_chart.showing_plot, timeout=120000)
    from dpstudio.gui.wizard.budget_charts import COL

    e_small = prev.table.item(0, COL["error"]).text()
    page.spin.setValue(8.0)
    assert win.session.recipe.budget.epsilon == 8.0
    assert prev.table.item(0, COL["error"]).text() != e_small
    assert page.slider.value() == eps_to_slider(8.0)
    assert "ε = " in page.total.text()
    assert page.ledger_summary is not None and page.ledger_summary["releases"] == 0
    page.set_cap(10.0)
    assert page.ledger_summary["cap"]["epsilon"] == 10.0
    # tooltips explain epsilon and delta
    assert "privacy budget" in page.slider.toolTip() and "probability" in page.delta.toolTip()


def test_budget_page_attack_chart_for_label_release(qtbot, loaded_demo):
    from dpstudio.gui.wizard.budget_charts import leakage_available
    from dpstudio.gui.wizard.edits import publish_unprotected, set_release_type, set_role

    win = loaded_demo
    win.go_to(3)
    win.session.update(lambda r: publish_unprotected(set_role(set_release_type(r, "label"), "employed", "label")))
    chart = win.budget_page.preview.attack_chart
    if not leakage_available():
        assert "not available yet" in chart.message.text()
        return
    qtbot.waitUntil(lambda: chart.showing_plot, timeout=120000)
    vals = chart.current
    assert vals is not None and all(0 <= v <= 1 for v in vals)


def test_review_page_shows_computed_total(qtbot, loaded_demo):
    win = loaded_demo
    win.go_to(4)
    page = win.review_page
    plan, _ = win.session.plan()
    text = page.view.toPlainText()
    assert f"ε = {plan.total.epsilon:.4g}" in text
    assert "Acknowledgements" in text and "Risk summary" in text
    assert page.isComplete()
    from dataclasses import replace

    win.session.update(lambda r: replace(r, randomness=replace(r.randomness, seed=7)))
    assert "fixed random seed" in page.view.toPlainText()


def test_shortcuts_and_help(qtbot, loaded_demo):
    win = loaded_demo
    assert QKeySequence("Ctrl+E") in win.export_action.shortcuts()
    assert QKeySequence("F1") in win.help_action.shortcuts()
    assert QKeySequence("Alt+Right") in win.next_action.shortcuts()
    assert QKeySequence("Ctrl+PgUp") in win.back_action.shortcuts()
    win.go_to(1)
    win.next_action.trigger()
    assert win.current_index == 2
    win.back_action.trigger()
    assert win.current_index == 1
    assert "Roles" in win.help_html()


def test_navigation_is_blocked_by_validation(qtbot, window, demo_copy):
    load(qtbot, window, demo_copy)
    assert window.current_index == 1
    assert not window.next_button.isEnabled()  # domains missing
    assert not window.go_to(3)
    assert "fix" in window.blocker.text()


def test_dark_and_light_palettes(qtbot, window):
    from PySide6.QtCore import QSettings
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    window.set_theme("dark")
    dark = QApplication.palette().color(QPalette.ColorRole.Window).lightness()
    window.set_theme("light")
    light = QApplication.palette().color(QPalette.ColorRole.Window).lightness()
    assert dark < 100 < light
    assert QSettings().value("appearance/theme") == "light"


def test_a_label_release_asks_before_publishing_columns_marked_sensitive(qtbot, loaded_demo):
    """Choosing a label release with columns marked sensitive: they would go out unchanged, so
    that is a problem on the columns step, and the release page offers the one-click answer."""
    from dpstudio.gui.wizard.edits import set_role

    win = loaded_demo
    assert win.go_to(2)
    page = win.release_page
    win.session.update(lambda r: set_role(r, "employed", "label"))
    marked = [c.name for c in win.session.recipe.columns if c.role == "sensitive"]
    assert marked
    assert not page.publish_button.isVisibleTo(page)  # a record release perturbs them
    page.type_buttons["label"].click()
    assert win.session.recipe.release.type == "label"
    assert page.publish_button.isVisibleTo(page)
    assert all(name in page.publish_button.text() for name in marked[:4]), page.publish_button.text()
    problems = [str(p) for p in win.columns_page.problems()]
    assert any(f"column '{marked[0]}': marked sensitive, but a label release" in p for p in problems), problems
    page.publish_button.click()
    rec = win.session.recipe
    assert all(rec.column(n).role == "public" and rec.column(n).role_source == "confirmed" for n in marked)
    assert not page.publish_button.isVisibleTo(page)
    assert not any("marked sensitive" in str(p) for p in win.columns_page.problems())
    win.session.undo()  # one step back: the roles as they were
    assert all(win.session.recipe.column(n).role == "sensitive" for n in marked)


def test_switching_from_synthetic_back_to_record_leaves_no_synthesizer_option(qtbot, loaded_demo):
    from dpstudio.plan.problems import recipe_and_unit_problems

    win = loaded_demo
    assert win.go_to(2)
    page = win.release_page
    page.type_buttons["synthetic"].setChecked(True)
    assert "method" in win.session.recipe.release.options
    page.type_buttons["record"].setChecked(True)
    opts = win.session.recipe.release.options.to_dict()
    assert "method" not in opts and set(opts) <= {"clamp_to_bounds"}, opts
    assert not [p for p in recipe_and_unit_problems(win.session.recipe) if "release option" in str(p)]
    assert page.isComplete()
