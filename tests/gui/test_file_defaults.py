"""Safe defaults for files (issue 18, item 8) and the operator's name (item 2, the GUI half):
outputs go to the user's own folder, the report follows the data file, "Release now" waits for
a change after a release, and the operator is asked once, remembered and editable."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from conftest import load
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLineEdit

from dpstudio import prefs


def _release(qtbot, page):
    page.confirm_release = lambda text: True
    assert page.start_release() is not None, page.session.problems()
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)


def test_outputs_default_to_the_users_folder_made_at_release(qtbot, loaded_demo):
    win = loaded_demo
    s = win.session
    folder = prefs.output_dir("census_demo.csv")
    assert Path(os.environ["DPSTUDIO_OUTPUT_DIR"]) in folder.parents
    assert Path(s.output_path) == folder / "census_demo_dp.csv"
    assert Path(s.report_path) == folder / "census_demo_dp_report.html"
    input_folder = Path(s.loaded.path).parent
    assert Path(s.output_path).parent != input_folder
    assert not folder.exists()  # made when the release writes, not at load
    win.go_to(5)
    assert win.export_page.output.text() == s.output_path
    _release(qtbot, win.export_page)
    assert win.export_page.last_error is None, win.export_page.last_error
    assert (folder / "census_demo_dp.csv").is_file() and (folder / "census_demo_dp_report.html").is_file()
    assert not list(input_folder.glob("*_dp*"))  # nothing beside the input


def test_a_refused_release_leaves_no_empty_folder_and_no_traceback(qtbot, loaded_demo):
    from PySide6.QtWidgets import QMessageBox

    from dpstudio.ledger import Ledger

    win = loaded_demo
    Ledger().set_cap(win.session.loaded.sha256, 0.5)  # less than the release needs
    folder = prefs.output_dir("census_demo.csv")
    win.go_to(5)
    _release(qtbot, win.export_page)
    from dpstudio.errors import BudgetError

    assert isinstance(win.export_page.last_error, BudgetError) and win.export_page.result is None
    assert not folder.exists()
    boxes = [b for b in win.findChildren(QMessageBox) if b.objectName() == "errorBox"]
    assert boxes
    box = boxes[-1]
    assert "Traceback" not in box.detailedText() and "Internal error" not in box.text()
    assert "--" not in box.text() + box.detailedText()


def test_the_report_path_follows_the_data_path_until_chosen(qtbot, loaded_demo, tmp_path):
    win = loaded_demo
    s = win.session
    win.go_to(5)
    page = win.export_page
    page.output.setText(str(tmp_path / "mine" / "release.csv"))
    page.output.editingFinished.emit()
    assert s.report_path == str(tmp_path / "mine" / "release_report.html")
    assert page.report.text() == s.report_path
    # choosing PDF is a format, not a path: it still follows
    page.report_format.setCurrentIndex(page.report_format.findData(".pdf"))
    assert s.report_path.endswith("release_report.pdf")
    page.output.setText(str(tmp_path / "other" / "x.csv"))
    page.output.editingFinished.emit()
    assert s.report_path == str(tmp_path / "other" / "x_report.pdf")
    # a report path the user typed stays where it is
    page.report.setText(str(tmp_path / "reports" / "officer.html"))
    page.report.editingFinished.emit()
    page.output.setText(str(tmp_path / "third" / "y.csv"))
    page.output.editingFinished.emit()
    assert s.output_path == str(tmp_path / "third" / "y.csv")
    assert s.report_path == str(tmp_path / "reports" / "officer.html")


def test_release_now_is_disabled_after_a_release_until_something_changes(qtbot, loaded_demo, tmp_path):
    win = loaded_demo
    s = win.session
    page = win.export_page
    win.go_to(5)
    assert page.run_button.isEnabled()
    _release(qtbot, page)
    assert page.result is not None and page.isComplete()
    assert not page.run_button.isEnabled() and not page.can_release()
    assert page.start_release() is None  # Ctrl+E does nothing either
    # a recipe change enables it again (and the step is no longer done)
    s.update(lambda r: replace(r, budget=replace(r.budget, epsilon=1.5)))
    page.refresh_now()
    assert page.run_button.isEnabled() and not page.isComplete()
    assert "settings changed" in page.progress_text.text()
    # the next release goes to new names: the first one's output is recorded in the ledger
    # (a release refuses to write over it) and its report belongs to it
    first = Path(page.result.output_path)
    first_bytes = first.read_bytes()
    assert Path(s.output_path) == first.with_name(f"{first.stem}-2{first.suffix}")
    assert Path(s.report_path).name == f"{first.stem}-2_report{Path(s.report_path).suffix}"
    assert Path(s.output_path).name in page.progress_text.text()
    s.undo()  # a change too: the previous release stays what it was
    assert page.run_button.isEnabled()
    # the second release disables it again; a new output path enables it
    _release(qtbot, page)
    assert not page.run_button.isEnabled()
    assert first.read_bytes() == first_bytes and Path(page.result.output_path) == Path(s.output_path) != first
    s.set_targets(output_path=str(tmp_path / "again.csv"))
    assert page.run_button.isEnabled()
    _release(qtbot, page)
    assert not page.run_button.isEnabled()
    # setting the same path again is no change
    s.set_targets(output_path=s.output_path)
    assert not page.run_button.isEnabled()
    # new data: enabled (once the recipe is ready)
    load(qtbot, win, Path(s.loaded.path))
    assert page.result is None and page.released_key is None
    assert page.can_release() == (not s.problems() and s.plan()[0] is not None)


def _accept_confirm(name: str | None, seen: list):
    """Fill the confirmation dialog when it shows (it runs its own event loop).  Gives up after
    a bounded number of event-loop turns, so a timer never outlives its test to accept a later
    test's dialog."""
    tries = [0]

    def act():
        dlg = QApplication.activeModalWidget()
        if dlg is None:
            tries[0] += 1
            if tries[0] < 2000:
                QTimer.singleShot(10, act)
            return
        field = dlg.findChild(QLineEdit, "operatorName")
        seen.append(field is not None)
        if field is not None and name is not None:
            field.setText(name)
        dlg.accept()

    QTimer.singleShot(0, act)


def test_the_operator_is_asked_once_remembered_and_passed_on(qtbot, loaded_demo, monkeypatch):
    import dpstudio.gui.wizard.export_page as export_page

    win = loaded_demo
    page = win.export_page
    win.go_to(5)
    calls = []
    real = export_page.run_release

    def spy(*a, **k):
        calls.append(k.get("operator"))
        return real(*a, **k)

    monkeypatch.setattr(export_page, "run_release", spy)
    assert prefs.operator() is None and "operator" not in prefs.load()
    seen: list[bool] = []
    _accept_confirm("  Ada   Lovelace ", seen)
    assert page.start_release() is not None
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)
    assert seen == [True]  # the first confirmation asked for the name
    assert prefs.operator() == "Ada Lovelace" and calls == ["Ada Lovelace"]
    assert page.result is not None and page.result.operator == "Ada Lovelace"  # the report names them
    # the second release does not ask again
    win.session.update(lambda r: replace(r, budget=replace(r.budget, epsilon=1.0)))
    _accept_confirm(None, seen)
    assert page.start_release() is not None
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)
    assert seen == [True, False] and calls == ["Ada Lovelace", "Ada Lovelace"]


def test_an_empty_operator_is_remembered_as_not_recorded(qtbot, loaded_demo):
    win = loaded_demo
    page = win.export_page
    win.go_to(5)
    seen: list[bool] = []
    _accept_confirm("", seen)
    assert page.confirm_release is not None
    assert page._ask_confirm("spend?") is True
    assert seen == [True] and "operator" in prefs.load() and prefs.operator() is None


def test_the_operator_is_edited_in_settings_preferences(qtbot, window):
    menus = [a.text().replace("&", "") for a in window.menuBar().actions()]
    assert "Settings" in menus
    assert window.preferences_action.text().replace("&", "").startswith("Preferences")
    prefs.set_operator("Ada")
    seen = []

    def ask(current):
        seen.append(current)
        return True, "Grace Hopper"

    window.ask_preferences = ask
    window.preferences_action.trigger()
    assert seen == ["Ada"] and prefs.operator() == "Grace Hopper"
    window.ask_preferences = lambda current: (False, None)  # Cancel keeps it
    window.preferences_action.trigger()
    assert prefs.operator() == "Grace Hopper"
    # the real dialog shows the current name and returns what is typed
    from dpstudio.gui.dialogs import operator_dialog

    dlg = operator_dialog(window, "Grace Hopper")
    qtbot.addWidget(dlg)
    field = dlg.findChild(QLineEdit, "operatorName")
    assert field.text() == "Grace Hopper"
    field.setText("   ")
    assert dlg.operator_name() is None


def test_next_free_name_numbers_past_every_existing_file(tmp_path):
    from dpstudio.gui.session import next_free_name

    (tmp_path / "out.csv").touch()
    assert next_free_name(str(tmp_path / "out.csv")) == str(tmp_path / "out-2.csv")
    (tmp_path / "out-2.csv").touch()
    assert next_free_name(str(tmp_path / "out.csv")) == str(tmp_path / "out-3.csv")
    assert next_free_name(str(tmp_path / "out-2.csv")) == str(tmp_path / "out-3.csv")
    (tmp_path / "ds").mkdir()
    assert next_free_name(str(tmp_path / "ds") + "/") == str(tmp_path / "ds-2") + "/"


def test_next_free_name_leaves_numbers_that_are_not_its_counter_and_frees_companions(tmp_path):
    from dpstudio.gui.session import next_free_name

    assert next_free_name(str(tmp_path / "sales-2024.csv")) == str(tmp_path / "sales-2024-2.csv")
    assert next_free_name(str(tmp_path / "run-007.csv")) == str(tmp_path / "run-007-2.csv")
    # the report named after the output exists for -2: the next number frees both
    (tmp_path / "x-2_report.html").touch()
    got = next_free_name(str(tmp_path / "x.csv"), lambda c: [c.replace(".csv", "_report.html")])
    assert got == str(tmp_path / "x-3.csv")
