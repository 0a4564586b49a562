"""One state, everywhere (issue 18, item 5): a new file leaves nothing of the previous dataset on
any page, the budget panel follows the ledger after a release, the sidebar marks a step done
only when it is, a later choice that needs an earlier step says so and goes there, and the
Review and Budget pages show the same attacker figure."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from conftest import load

from dpstudio.gui.wizard.edits import set_release_type


def _release(qtbot, win):
    page = win.export_page
    assert win.go_to(5), win.session.problems()
    page.confirm_release = lambda text: True
    assert page.start_release() is not None
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)
    assert page.last_error is None, page.last_error
    return page


def _other_table(tmp_path):
    d = tmp_path / "other"
    d.mkdir()
    path = d / "clinic.csv"
    pd.DataFrame({"weight": list(range(40, 100)) * 3, "ward": ["a", "b", "c"] * 60}).to_csv(path, index=False)
    return path


def _done_marks(win) -> list[bool]:
    return [win.steps.item(j).text().startswith("✓") for j in range(len(win.pages))]


def test_a_new_file_shows_nothing_of_the_previous_dataset(qtbot, loaded_demo, tmp_path):
    win = loaded_demo
    page = _release(qtbot, win)
    assert page.result is not None and "Privatized data" in page.result_label.text()
    assert page.result_buttons.isVisibleTo(page) and win.step_done(5)
    win.go_to(4)
    assert "income" in win.review_page.text()

    load(qtbot, win, _other_table(tmp_path))
    s = win.session
    assert {c.name for c in s.recipe.columns} == {"weight", "ward"}
    # export: no "done" state, no result, no buttons of the previous release
    assert page.result is None and page.released_key is None
    assert page.result_label.text() == "" and page.progress_text.text() == ""
    assert not page.result_buttons.isVisibleTo(page) and page.progress.value() == 0
    assert not page.isComplete() and not win.step_done(5)
    # the targets are the new dataset's
    assert "clinic" in s.output_path and "census" not in s.output_path + s.report_path
    # review and data pages: the new table only
    win.review_page.refresh_now()
    assert "income" not in win.review_page.text() and "census" not in win.review_page.text()
    assert "income" not in win.review_page.details_text()
    assert "clinic.csv" in win.data_page.summary.text()
    # nothing derived from the previous table is kept (risk model, caches)
    assert not s.derived
    assert all("✓" not in win.steps.item(j).text() for j in range(2, 6))


def test_the_budget_panel_follows_the_ledger_after_a_release(qtbot, loaded_demo):
    win = loaded_demo
    win.go_to(3)
    assert "0 release(s)" in win.budget_page.ledger_text.text()
    _release(qtbot, win)
    text = win.budget_page.ledger_text.text()
    eps = win.session.plan()[0].total.epsilon
    assert "1 release(s)" in text and f"ε {eps:.3g}" in text, text


def test_the_sidebar_marks_a_step_done_only_when_it_is(qtbot, window, demo_copy):
    from dataclasses import replace

    win = window
    assert not any(_done_marks(win))  # nothing loaded: nothing done
    load(qtbot, win, demo_copy)  # no saved recipe: the columns need domains
    win._update_nav()
    marks = _done_marks(win)
    assert marks[0] and not any(marks[1:]), marks
    assert win.columns_page.problems()
    # the demo's ready recipe: every step is complete, but a step not yet shown is not "done"
    from conftest import DEMO_RECIPE

    from dpstudio.recipe.model import load_recipe

    ready = load_recipe(DEMO_RECIPE)
    win.session.set_recipe(replace(ready, input=win.session.recipe.input))
    assert all(p.isComplete() for p in win.pages[:5]), win.session.problems()
    for i in (2, 3, 4):
        assert win.go_to(i)
    win.go_to(1)
    win._update_nav()
    marks = _done_marks(win)
    assert marks[:5] == [True, False, True, True, True] and not marks[5]  # 1 is the current step
    # a problem on the budget step: it and every later step are no longer done
    win.session.update(lambda r: replace(r, budget=replace(r.budget, epsilon=0.0)))
    win._update_nav()
    marks = _done_marks(win)
    assert marks[2] and not marks[3] and not marks[4], marks
    assert win.steps.item(3).toolTip() == "Needs attention"


def test_a_later_choice_that_needs_an_earlier_step_takes_the_user_there(qtbot, loaded_demo):
    win = loaded_demo
    assert win.go_to(2)
    win.release_page.type_buttons["synthetic"].click()
    assert win.session.recipe.release.type == "synthetic"
    # the release step itself is fine; the columns step now needs the public columns' domains
    assert win.release_page.isComplete() and not win.columns_page.isComplete()
    assert win.columns_page.problems()
    win._update_nav()
    assert win.next_button.isEnabled()
    assert "Step 2" in win.blocker.text() and "Next takes you there" in win.blocker.text()
    assert "needs a public domain" in win.blocker.text()
    # Next is never silent: it goes to the step that needs attention and says why
    win.next_button.click()
    assert win.current_index == 1
    assert win.notice.isVisibleTo(win) and "needs a public domain" in win.notice.text()
    assert "--" not in win.notice.text() + win.blocker.text()
    # fixing it (back to a record release here) clears the notice
    win.session.undo()
    win._update_nav()
    assert win.columns_page.isComplete() and win.notice.isHidden()


def test_review_and_budget_pages_show_the_same_attacker_figure(qtbot, loaded_demo):
    from dpstudio.gui.wizard.budget_charts import attacker_at, leakage_available, leakage_key
    from dpstudio.risk import label_rr_law

    if not leakage_available():
        pytest.skip("no leakage model in this build")
    win = loaded_demo
    s = win.session
    s.update(lambda r: set_release_type(r, "semi-sensitive"))
    # the Review page computes the estimate itself (no visit to the budget step needed)
    assert win.go_to(4), s.problems()
    review = win.review_page
    qtbot.waitUntil(lambda: "guesses it right" in review.text(), timeout=120000)
    plan, _ = s.plan()
    model = s.derived[leakage_key(s, s.recipe)]
    eps_label = plan.label.label_unit_epsilon
    vals, _share = attacker_at(model, plan)
    # the budget page's chart, from the same plan's label guarantee and the same model
    win.go_to(3)
    chart = win.budget_page.preview.attack_chart
    qtbot.waitUntil(lambda: chart.showing_plot and chart.current is not None, timeout=120000)
    caption = chart.caption.text()
    win.go_to(4)
    text = review.text()
    assert chart.current == pytest.approx(vals)
    for figure in (f"{vals[2]:.0%}", f"{vals[0]:.0%}"):
        assert figure in caption and figure in text, (figure, caption, text)
    assert f"label's ε = {eps_label:.3g}" in text
    on_chart = re.search(r"right (\d+%)", caption).group(1)
    on_review = re.search(r"guesses it right (\d+%)", text).group(1)
    law, _ = label_rr_law(plan)  # the randomized response as it runs (delta, grid)
    assert on_chart == on_review == f"{float(model.accuracies_of(law)['informed'][0]):.0%}"


def test_the_budget_panel_lists_spend_of_different_guarantees_apart(qtbot, loaded_demo, tmp_path):
    """A dataset with a record release and a label release: the one "spent" adds two kinds of
    guarantee, and the panel says how much of each."""
    from dpstudio.engine.accounting import PrivacyLoss
    from dpstudio.ledger import Ledger

    win = loaded_demo
    _release(qtbot, win)
    led = Ledger()
    sha = win.session.loaded.sha256
    label = led.reserve(
        sha, loss=PrivacyLoss(epsilon=0.25, delta=0.0), release_type="label", output_path=tmp_path / "lab.csv"
    )
    led.write_and_commit(label, tmp_path / "lab.csv", lambda tmp: open(tmp, "w").write("x\n1\n"))
    win.go_to(3)
    win.budget_page.refresh_ledger()
    text = win.budget_page.ledger_text.text()
    plan = win.session.plan()[0]
    eps = plan.total.epsilon
    assert "2 release(s)" in text, text
    # the demo's record release copies its public columns: semi-sensitive DP, counted as such
    # (it was filed under record releases while the review and the report said semi-sensitive)
    assert win.session.recipe.release.type == "record" and plan.guarantee == "semi-sensitive"
    assert f"of which sensitive columns only: ε {eps:.3g}" in text, text
    assert "record releases" not in text, text
    win.go_to(4)  # the review's heading names the same guarantee
    review = win.review_page.text()
    assert "semi-sensitive protection" in review and "whole-record protection" not in review
    assert "of which label DP (label columns only): ε 0.25" in text, text


def test_the_budget_panel_and_its_cap_follow_the_dataset_a_release_is_charged_to(
    qtbot, loaded_demo, tmp_path, monkeypatch
):
    """An edited copy of a released file (one cell corrected, another name) is charged to the
    released dataset by its rows: the panel shows that dataset's spend, and a cap set here is
    set on it (before, both looked the file up by its SHA-256 alone: "0 release(s)", and a cap
    on a dataset no release of the file ever met)."""
    from dpstudio.ledger import Ledger

    win = loaded_demo
    _release(qtbot, win)
    first = win.session.loaded.sha256
    edited = pd.read_csv(win.session.loaded.path)
    edited.loc[0, "age"] = int(edited.loc[0, "age"]) + 1
    d = tmp_path / "edited"
    d.mkdir()
    edited.to_csv(d / "corrected.csv", index=False)
    load(qtbot, win, d / "corrected.csv")
    assert win.session.loaded.sha256 != first
    # the row sketch was made by the load's worker: the panel hashes no row on the GUI thread
    monkeypatch.setattr(Ledger, "fingerprint_rows", lambda self, frame: pytest.fail("rows hashed on the GUI thread"))
    win.go_to(3)
    win.budget_page.refresh_ledger()
    text = win.budget_page.ledger_text.text()
    assert "This file is charged to dataset 'census_demo.csv'" in text and "1 release(s)" in text, text
    # a cap below what was spent is said and asked before it is set (walkthrough finding)
    from PySide6.QtWidgets import QMessageBox

    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a) or QMessageBox.StandardButton.No)
    assert not win.budget_page.cap_below_spent_confirmed(0.5) and len(asked) == 1
    assert "already spent" in asked[0][2]
    assert win.budget_page.cap_below_spent_confirmed(100.0) and len(asked) == 1
    win.budget_page.set_cap(0.5)
    assert Ledger().summary(first)["cap"] == {"epsilon": 0.5, "delta": None}
    assert "Remaining: ε 0" in win.budget_page.ledger_text.text()


def test_the_budget_panel_recognises_a_copy_with_a_row_number_column(qtbot, loaded_demo, tmp_path):
    """A copy with one column added (here a row number) is charged to the released dataset by its
    rows over the other columns, and the panel says so (before: a fresh budget)."""
    win = loaded_demo
    _release(qtbot, win)
    copy = pd.read_csv(win.session.loaded.path)
    copy.insert(0, "row_no", range(1, len(copy) + 1))
    d = tmp_path / "numbered"
    d.mkdir()
    copy.to_csv(d / "numbered.csv", index=False)
    load(qtbot, win, d / "numbered.csv")
    win.go_to(3)
    win.budget_page.refresh_ledger()
    text = win.budget_page.ledger_text.text()
    assert "This file is charged to dataset 'census_demo.csv'" in text and "over all but one column" in text, text
    assert "1 release(s)" in text, text


def test_the_budget_panel_says_what_recovery_did_after_a_crash(qtbot, loaded_demo, tmp_path):
    """A release whose process ended after its point of no return (the application crashed) is
    completed when the ledger is next opened; the panel says so (the CLI prints it)."""
    import hashlib
    import os
    import sqlite3

    from dpstudio import ledger as ledger_mod
    from dpstudio.ledger import Ledger

    win = loaded_demo
    sha = win.session.loaded.sha256
    led = Ledger()
    led.resolve(sha, create=True)
    tmp = tmp_path / ".out.csv.1-1.dpsrel"
    tmp.write_text("x\n1\n")
    con = sqlite3.connect(led.path)
    con.execute(
        "INSERT INTO entries(dataset, time, epsilon, delta, status, pid, pid_start_time, host, output_path, "
        "tmp_path, output_sha256) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            sha,
            "t",
            0.5,
            0.0,
            "committing",
            os.getpid(),  # this process, but its start time says another one: dead
            "not-this-process",
            ledger_mod._HOST,
            str(tmp_path / "out.csv"),
            str(tmp),
            hashlib.sha256(b"x\n1\n").hexdigest(),
        ),
    )
    con.commit()
    con.close()
    win.go_to(3)
    win.budget_page.refresh_ledger()
    text = win.budget_page.ledger_text.text()
    assert "was completed and is charged" in text and (tmp_path / "out.csv").read_text() == "x\n1\n", text


def test_the_review_warns_of_a_column_an_earlier_release_protected(qtbot, loaded_demo):
    """A column perturbed by the first release and marked public for the next one: the review
    says the copy undoes the earlier noise (the release says it again after its commit)."""
    win = loaded_demo
    _release(qtbot, win)
    s = win.session
    assert "education_level" in s.plan()[0].protected_columns()
    s.update_column("education_level", role="public", mechanism=None)  # a public column takes no mechanism
    assert win.go_to(4), s.problems()
    review = win.review_page.text()
    assert "earlier releases of this dataset protected with noise: education_level (release 1)" in review, review
