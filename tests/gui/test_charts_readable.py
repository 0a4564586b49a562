"""Charts a person can read (issue 18, item 7) and the budget page's details on demand (item 6).

At 1280x820 and 1024x700: legends outside the plots, axis titles that fit beside their axis,
plain tick labels, every drawn value inside the view, category labels that do not overlap,
budget-table headers and cells shown whole, and a slider that never rounds a typed epsilon."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel

SIZES = ((1280, 820), (1024, 700))
JARGON = ("zCDP", "ρ", "μ²", "RDP", "Rényi")


def _run_queued() -> None:
    """Run what the event loop has queued -- posted layout requests and zero-delay timers, each
    of which may queue the next -- a fixed number of rounds: no wall-clock wait to race."""
    from PySide6.QtWidgets import QApplication

    for _ in range(20):
        QApplication.sendPostedEvents()
        QApplication.processEvents()


def _settle(qtbot, win):
    panel = win.budget_page.preview
    qtbot.waitUntil(
        lambda: panel._curve_worker is None and panel._leak_worker is None and panel._sample_worker is None,
        timeout=120000,
    )
    _run_queued()  # the zero-delay layout timers and posted layout requests run
    for c in _charts(panel):
        c.fit_axis_titles()


def _charts(panel):
    return [c for c in (panel.error_chart, panel.hist_chart, panel.attack_chart) if c.isVisible()]


def _curves(chart):
    from pyqtgraph import PlotDataItem

    return [
        it
        for it in chart.plot.getPlotItem().listDataItems()
        if isinstance(it, PlotDataItem) and it.isVisible() and it.getOriginalDataset()[0] is not None
    ]


def _check_chart(chart):
    """The legend lies outside the plot, titles fit, every drawn point is inside the view."""
    p = chart.plot.getPlotItem()
    assert p.legend is None  # no legend item drawn over the plot
    if chart._legend_entries:
        assert chart.legend.isVisible()
        legend = chart.legend.geometry()
        plot = chart.stack.geometry()
        assert not legend.intersects(plot)
    vb = p.getViewBox()
    (x0, x1), (y0, y1) = vb.viewRange()
    view = QRectF(x0, y0, x1 - x0, y1 - y0)
    log_x, log_y = p.ctrl.logXCheck.isChecked(), p.ctrl.logYCheck.isChecked()
    for item in _curves(chart):
        x, y = item.getOriginalDataset()
        x, y = np.asarray(x, float), np.asarray(y, float)
        if item.opts.get("stepMode"):
            x = 0.5 * (x[1:] + x[:-1])  # bin centres
        fx = np.log10(x) if log_x else x
        fy = np.log10(y) if log_y else y
        for a, b in zip(fx, fy, strict=True):
            assert view.contains(a, b), (chart.title.text(), a, b, view)
    for side in ("left", "bottom"):
        text = chart.axis_title_text(side)
        if text:
            fm = QFontMetrics(p.getAxis(side).label.font())
            assert fm.horizontalAdvance(text) <= chart.axis_title_room(side), (side, text)
            assert chart.axis_title_fits(side), (side, text)  # not cut at the plot's edge


def _check_table(panel):
    """Every shown header and cell of the budget table is shown whole (nothing elided or cut)."""
    from dpstudio.gui.wizard.budget_charts import table_headers

    t = panel.table
    hh = t.horizontalHeader()
    fm = QFontMetrics(hh.font())
    cfm = QFontMetrics(t.font())
    for j, head in enumerate(table_headers(compact=True)):
        if t.isColumnHidden(j):
            continue
        width = hh.sectionSize(j)
        assert fm.horizontalAdvance(head) + 8 <= width, head
        for i in range(t.rowCount()):
            assert cfm.horizontalAdvance(t.item(i, j).text()) + 6 <= width, t.item(i, j).text()
        assert len(t.horizontalHeaderItem(j).toolTip()) > 20  # what the column means


def _visit(win, qtbot, size):
    win.resize(*size)
    _settle(qtbot, win)
    panel = win.budget_page.preview
    for chart in _charts(panel):
        if chart.showing_plot:
            _check_chart(chart)
    _check_table(panel)
    return panel


@pytest.mark.parametrize("size", SIZES)
def test_record_budget_page_readable(qtbot, loaded_demo, size):
    win = loaded_demo
    assert win.go_to(3), win.session.problems()
    panel = win.budget_page.preview
    for name in ("income", "children", "education_level"):
        panel.column_combo.setCurrentText(name)
        qtbot.waitUntil(lambda: panel.error_chart.showing_plot and panel.hist_chart.showing_plot, timeout=120000)
        _visit(win, qtbot, size)
    # a record release has no attacker chart: the table takes its place, δ (all 0) is hidden
    assert not panel.attack_chart.isVisible()
    from dpstudio.gui.wizard.budget_charts import COL

    assert panel.table.isColumnHidden(COL["delta"])


@pytest.mark.parametrize("size", SIZES)
def test_label_budget_page_readable(qtbot, loaded_demo, size):
    from dpstudio.gui.wizard.budget_charts import leakage_available
    from dpstudio.gui.wizard.edits import set_release_type

    win = loaded_demo
    win.session.update(lambda r: set_release_type(r, "semi-sensitive"))
    assert win.go_to(3), win.session.problems()
    panel = win.budget_page.preview
    if leakage_available():
        qtbot.waitUntil(lambda: panel.attack_chart.showing_plot, timeout=120000)
    _visit(win, qtbot, size)


def test_error_curves_stay_inside_the_axis_range(qtbot):
    """Floor values far below the chosen mechanism's (a floor that falls to 0 at large ε) and a
    marker off the curves: nothing is drawn outside the view."""
    from dpstudio.gui.charts.error_chart import Y_MIN, ErrorChart

    chart = ErrorChart()
    qtbot.addWidget(chart)
    chart.resize(500, 320)
    chart.show()
    eps = np.geomspace(0.01, 50, 25)
    err = 3.0 / eps
    floor = np.exp(-eps) * 0.5  # falls to ~1e-22
    chart.set_curves(eps, err, floor, "error as a share of the range", "error")
    chart.set_epsilon(50.0, 1e-3)
    _run_queued()
    _check_chart(chart)
    x, y = chart.floor.getOriginalDataset()
    assert np.min(y) >= Y_MIN and len(y) < len(eps)  # the part under 0.01 % is not drawn
    # the top: the largest error is inside the range
    (_, _), (y0, y1) = chart.plot.getPlotItem().getViewBox().viewRange()
    assert np.log10(err.max()) <= y1


def test_attack_chart_range_from_the_data(qtbot):
    from dpstudio.gui.charts.attack_chart import AttackChart

    chart = AttackChart()
    qtbot.addWidget(chart)
    chart.resize(500, 320)
    chart.show()
    eps = np.geomspace(0.01, 50, 25)
    chart.set_curves(eps, np.full(25, 0.2), np.linspace(0.25, 0.9, 25), np.linspace(0.3, 0.95, 25))
    chart.set_epsilon(1.0, (0.2, 0.5, 0.6))
    _run_queued()
    _check_chart(chart)


def test_tick_labels_are_plain_numbers(qtbot):
    from dpstudio.gui.charts.base import PlainAxis, fmt_tick

    assert [fmt_tick(v) for v in (1e-6, 0.5, 1, 10, 150_000, 2.5)] == [
        "0.000001",
        "0.5",
        "1",
        "10",
        "150,000",
        "2.5",
    ]
    ax = PlainAxis("left")
    lin = ax.tickStrings([0.0, 0.000001, 0.5, 20000.0], 1.0, 0.1)
    assert lin == ["0", "0.000001", "0.5", "20,000"]
    ax.setLogMode(True)
    logs = ax.tickStrings([-6.0, -4.0, np.log10(3e-4), -1.0, 0.0, 2.0], 1.0, 1.0)
    assert logs == ["0.000001", "0.0001", "", "0.1", "1", "100"]
    for s in lin + logs:
        assert not re.search(r"e[-+]?\d|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]", s), s


def test_many_categories_use_horizontal_bars_with_whole_labels(qtbot):
    from dpstudio.gui.charts.histogram_chart import LABEL_CHARS, MAX_UPRIGHT, HistogramChart

    chart = HistogramChart()
    qtbot.addWidget(chart)
    chart.resize(420, 300)
    chart.show()
    few = ["north", "south", "east"]
    chart.set_categorical(few, np.array([0.2, 0.5, 0.3]), np.array([0.25, 0.45, 0.3]), "region")
    _run_queued()
    chart.fit_axis_titles()
    assert not chart.horizontal and chart.tick_labels() == few
    _check_chart(chart)

    many = [f"occupation category number {i}" for i in range(MAX_UPRIGHT + 4)]
    share = np.full(len(many), 1 / len(many))
    chart.set_categorical(many, share, share, "occupation")
    _run_queued()
    chart.fit_axis_titles()
    assert chart.horizontal
    labels = chart.tick_labels()
    assert len(set(labels)) == len(many)  # elided in the middle: still told apart
    assert all(len(t) <= LABEL_CHARS for t in labels)
    # names on the left axis, one per bar row, a bar row high apart: no two overlap
    vb = chart.plot.getPlotItem().getViewBox()
    row_px = vb.geometry().height() / (vb.viewRange()[1][1] - vb.viewRange()[1][0])
    assert row_px >= QFontMetrics(chart.font()).height()
    assert np.allclose(chart.bars_priv.opts["width"], share)  # the bar lengths are the shares
    _check_chart(chart)
    # upright again for a few categories, with the ticks back on the bottom axis
    chart.set_categorical(few, np.array([0.2, 0.5, 0.3]), np.array([0.25, 0.45, 0.3]), "region")
    assert not chart.horizontal and chart.tick_labels() == few


def test_typed_epsilon_stays_exact(qtbot, loaded_demo):
    from dpstudio.gui.wizard.budget_page import eps_to_slider, slider_to_eps

    win = loaded_demo
    assert win.go_to(3)
    page = win.budget_page
    spin = page.spin
    spin.setFocus()
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "0.37")
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert win.session.recipe.budget.epsilon == 0.37
    assert page.slider.value() == eps_to_slider(0.37)  # the slider follows ...
    page.refresh()
    assert win.session.recipe.budget.epsilon == 0.37  # ... without rounding the typed value
    assert spin.value() == 0.37
    plan, _ = win.session.plan()
    assert plan.recipe.budget.epsilon == 0.37
    # the slider is on a log scale with a usable resolution: neighbouring steps differ by about 1 %
    for eps in (0.01, 0.37, 4.0, 50.0):
        pos = eps_to_slider(eps)
        if pos < page.slider.maximum():
            assert slider_to_eps(pos + 1) / slider_to_eps(pos) <= 1.0101
    # moving the slider sets what the slider shows
    page.slider.setValue(eps_to_slider(2.0))
    assert win.session.recipe.budget.epsilon == slider_to_eps(eps_to_slider(2.0))


def _main_texts(page, details_area) -> str:
    out = []
    for lab in page.findChildren(QLabel):
        if not lab.isVisible() or details_area.isAncestorOf(lab):
            continue
        out.append(lab.text())
    return "\n".join(out)


def test_details_area_collapsed_and_holds_the_jargon(qtbot, loaded_demo):
    from dpstudio.gui.wizard.edits import set_mechanism

    win = loaded_demo
    s = win.session
    s.update(lambda r: set_mechanism(set_mechanism(r, "income", "gaussian"), "education_level", "gaussian"))
    assert win.go_to(3), s.problems()
    panel = win.budget_page.preview
    _settle(qtbot, win)
    assert not panel.details_area.isVisible() and not panel.details_button.isChecked()
    details = panel.details.text()
    assert "zCDP" in details and "ρ" in details
    assert "<code>gaussian</code>" in details and "<code>rr</code>" in details  # mechanism ids
    main = _main_texts(win.budget_page, panel.details_area)
    for word in JARGON:
        assert word not in main, word
    # plain words first: the budget share as a relative weight, on the page and in the ε header
    assert "Shares are relative: 2 gets twice the ε of 1" in panel.share_note.text()
    assert panel.share_note.isVisible()
    assert "relative" in panel.table.horizontalHeaderItem(2).toolTip()
    # opened on demand
    panel.details_button.click()
    assert panel.details_area.isVisible() and "zCDP" in _visible_details(panel)
    panel.details_button.click()
    assert not panel.details_area.isVisible()


def _visible_details(panel) -> str:
    return panel.details.text() if panel.details.isVisible() else ""


def test_synthetic_accounting_only_in_details(qtbot, loaded_demo):
    from dataclasses import replace

    from dpstudio.gui.wizard.edits import set_release_type

    win = loaded_demo
    s = win.session
    s.update(lambda r: set_release_type(r, "synthetic"))
    s.update(lambda r: replace(r, release=replace(r.release, options=r.release.options.with_(method="mst"))))
    for c in s.recipe.columns:
        if c.role not in ("identifier", "ignore") and c.domain is None:
            s.update_column(c.name, role="ignore")
    assert win.go_to(3), s.problems()
    panel = win.budget_page.preview
    shown = panel.error_chart.message.text()
    assert "How the synthesizer spends the budget" in shown
    for word in JARGON:
        assert word not in shown, word
    assert "zCDP ρ" in panel.details.text()
    assert not panel.details_area.isVisible()
    main = _main_texts(win.budget_page, panel.details_area)
    for word in JARGON:
        assert word not in main, word
