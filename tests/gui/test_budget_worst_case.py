"""The budget page never shows a search-range scale as the scale of a column whose bounds are
estimated with DP at release time: it is labelled as the worst case."""

from __future__ import annotations

from dpstudio.recipe.model import Cost, Domain


def test_budget_table_labels_dp_bounds_as_worst_case(qtbot, loaded_demo):
    win = loaded_demo
    dom = Domain("numeric", source="dp", cost=Cost(0.1, 0.0), search_low=0.0, search_high=1_000_000.0)
    win.session.update_column("income", domain=dom)
    win.go_to(3)
    from dpstudio.gui.wizard.budget_charts import COL

    prev = win.budget_page.preview
    err = COL["error"]
    qtbot.waitUntil(lambda: prev.table.rowCount() > 0 and prev.table.item(0, err).text() != "", timeout=120000)
    rows = {
        prev.table.item(i, COL["unit"]).text(): prev.table.item(i, err).text() for i in range(prev.table.rowCount())
    }
    assert rows["income"].startswith("\u2264 ")
    assert not rows["education_level"].startswith("\u2264")
    assert "worst case" in prev.notes.text()
