"""Synthetic data on the budget page: the noise-to-signal ratio and the quick trial fit."""

from __future__ import annotations

import math
from dataclasses import replace


def _synthetic(window):
    from dpstudio.gui.wizard.edits import set_release_type

    s = window.session
    s.update(lambda r: set_release_type(r, "synthetic"))
    # an embedding synthesizer (the noise-to-signal ratio is theirs; the default is AIM)
    s.update(lambda r: replace(r, release=replace(r.release, options=r.release.options.with_(method="pearl"))))
    for c in s.recipe.columns:  # public columns without a typed domain are left out of this test
        if c.role not in ("identifier", "ignore") and c.domain is None:
            s.update_column(c.name, role="ignore")
    assert s.recipe.budget.delta > 0
    assert window.go_to(3), s.problems()
    return window.budget_page.preview


def test_noise_to_signal_from_public_quantities(qtbot, loaded_demo):
    from dpstudio.gui.wizard.budget_charts import embedding_noise_to_signal

    panel = _synthetic(loaded_demo)
    s = loaded_demo.session
    assert panel.synth_box.isVisible()
    assert "at least" in panel.synth_text.text() and "noise per coordinate" in panel.synth_text.toolTip()
    rows = s.schema.rows
    low = embedding_noise_to_signal(s.recipe, rows)
    loaded_demo.budget_page.set_epsilon(s.recipe.budget.epsilon * 4)
    high = embedding_noise_to_signal(s.recipe, rows)
    assert high["ratio"] < low["ratio"]  # more epsilon, less noise
    assert f"{high['ratio']:.3g}" in panel.synth_text.text()  # the text follows epsilon
    # the formula: ratio = sigma sqrt(dim), sigma ~ (2/n) / mu_E (plus the grid-snapping term)
    from dpstudio.engine.synth.privacy import gdp_mu_for

    assert math.isclose(high["ratio"], high["sigma"] * math.sqrt(high["dim"]))
    mu_e = gdp_mu_for(s.recipe.budget.epsilon, s.recipe.budget.delta) * math.sqrt(high["share"])
    assert math.isclose(high["sigma"], 2.0 / rows / mu_e, rel_tol=1e-3)
    # the left panel shows the synthesizer's own split of the budget, following epsilon
    shown = panel.error_chart.message.text()
    assert "How the synthesizer spends the budget" in shown and "weighted embedding" in shown
    assert f"{high['sigma']:.3g}" in shown
    from dataclasses import replace

    mst = replace(s.recipe, release=replace(s.recipe.release, options=s.recipe.release.options.with_(method="mst")))
    assert embedding_noise_to_signal(mst, rows) is None


def test_trial_fit_runs_shows_marginals_and_can_be_cancelled(qtbot, loaded_demo, monkeypatch):
    from dpstudio.gui.wizard import budget_charts

    monkeypatch.setitem(budget_charts.TRIAL_OPTIONS, "pearl", {"steps": 60, "k": 50})  # keep the test short
    monkeypatch.setattr(budget_charts, "TRIAL_ROWS", 800)
    panel = _synthetic(loaded_demo)
    # cancel at once: the worker stops, nothing shown
    w = panel.start_trial()
    assert w is not None and panel.trial_cancel.isEnabled() and not panel.trial_button.isEnabled()
    panel.cancel_trial()
    qtbot.waitUntil(lambda: panel.trial_worker is None, timeout=120000)
    assert "cancelled" in panel.trial_result.text().lower()
    assert panel.trial is None and panel.trial_button.isEnabled() and not panel.trial_cancel.isEnabled()
    # a full (short) trial
    panel.start_trial()
    qtbot.waitUntil(lambda: panel.trial_worker is None, timeout=120000)
    assert panel.trial is not None, panel.trial_result.text()
    assert "Trial" in panel.trial_result.text()
    marg = panel.trial["marginals"]
    assert marg
    name = panel.column_combo.currentText()
    assert name in marg
    kind, pos, a, b = marg[name]
    assert abs(sum(a) - 1) < 0.05 and abs(sum(b) - 1) < 0.05
    assert panel.hist_chart.showing_plot
    # another column
    other = next(
        i
        for i in range(panel.column_combo.count())
        if panel.column_combo.itemText(i) in marg and panel.column_combo.itemText(i) != name
    )
    panel.column_combo.setCurrentIndex(other)
    assert panel.hist_chart.showing_plot
