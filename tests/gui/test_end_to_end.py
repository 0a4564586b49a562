"""Drive the whole wizard on the demo dataset to an export; the ledger must grow."""

from __future__ import annotations

import pytest
from conftest import load

BOUNDS = {"education_level": ("1", "16"), "income": ("0", "500000")}


def test_wizard_end_to_end_on_demo(qtbot, window, demo_copy):
    win = window
    # 1. data
    load(qtbot, win, demo_copy)
    assert win.current_index == 1
    # 2. columns: type public domains through the domain editor
    cols = win.columns_page
    for c in win.session.recipe.columns:
        if c.role in ("identifier", "ignore", "public"):
            continue
        cols.select(c.name)
        ed = cols.editor
        if c.name in BOUNDS:
            ed.low.setText(BOUNDS[c.name][0])
            ed.high.setText(BOUNDS[c.name][1])
            ed.high.editingFinished.emit()
        else:
            values = sorted(str(v) for v in win.session.frame[c.name].dropna().unique())
            ed.categories.setText(", ".join(values))  # public knowledge: yes/no, 0/1
            ed.categories.editingFinished.emit()
    assert cols.isComplete(), win.session.problems()
    qtbot.waitUntil(win.next_button.isEnabled, timeout=120000)  # navigation updates once per event-loop turn
    qtbot.waitUntil(win.next_button.isEnabled, timeout=120000)
    win.next_button.click()
    # 3. release: record-level perturbation (the default)
    assert win.current_index == 2 and win.release_page.isComplete()
    qtbot.waitUntil(win.next_button.isEnabled, timeout=120000)
    win.next_button.click()
    # 4. budget
    win.budget_page.spin.setValue(2.0)
    assert win.session.recipe.budget.epsilon == 2.0
    qtbot.waitUntil(win.next_button.isEnabled, timeout=120000)
    win.next_button.click()
    # 5. review: total computed from the recipe
    plan, _ = win.session.plan()
    assert plan.total.epsilon == pytest.approx(2.0)
    assert win.review_page.isComplete()
    qtbot.waitUntil(win.next_button.isEnabled, timeout=120000)
    win.next_button.click()
    # 6. export
    assert win.current_index == 5
    page = win.export_page
    out = demo_copy.with_name("census_dp.csv")
    report = demo_copy.with_name("census_dp_report.html")
    win.session.set_targets(output_path=str(out), report_path=str(report))
    page.confirm_release = lambda text: True
    from dpstudio.ledger import Ledger

    before = Ledger().summary(win.session.loaded.sha256)
    win.export_action.trigger()  # Ctrl+E
    assert page.worker is not None
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)
    assert page.last_error is None, page.last_error
    assert page.result is not None and out.exists()
    after = Ledger().summary(win.session.loaded.sha256)
    assert after["releases"] == before["releases"] + 1
    assert after["spent"]["epsilon"] == pytest.approx(before["spent"]["epsilon"] + 2.0)
    import pandas as pd

    released = pd.read_csv(out)
    assert "person_id" not in released.columns and len(released) == 4000
    assert report.exists() and report.stat().st_size > 0
