"""Columns page domains without dead ends: copies from the data fill in, DP category discovery
has its δ, one choice for several columns, pasted domain tables, domain files, the obvious
domain of yes/no columns, and codes with leading zeros as categories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from conftest import load
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog

from dpstudio.gui.wizard.edits import set_role
from dpstudio.recipe.model import Domain

MEDICAL = "/work/shared/datasets/medical/medical.csv"


def _columns(qtbot, window, path):
    load(qtbot, window, path)
    window.go_to(1)
    return window.columns_page


def _column_problems(window, name):
    return [str(p) for p in window.session.problems() if p.field == f"column:{name}"]


def test_copied_from_the_data_fills_numbers_and_categories(qtbot, loaded_demo):
    window = loaded_demo
    window.go_to(1)
    page = window.columns_page
    asked = []
    page.editor.confirm_copy = lambda name: asked.append(name) or True
    for name in ("income", "disability", "children"):  # integer, yes/no words, 0/1 integers
        page.select(name)
        assert window.session.recipe.column(name).role == "sensitive"
        page.editor.radio["data"].click()
        d = window.session.recipe.column(name).domain
        assert d is not None and d.source == "data"
        assert _column_problems(window, name) == []  # no "bounds need both", no "list is empty"
    assert asked == ["income", "disability", "children"]
    assert window.session.problems() == []  # the whole recipe is ready
    plan, err = window.session.plan()
    assert err is None, err
    income = np.asarray(window.session.frame["income"])
    assert plan.unit("income").domain == (float(income.min()), float(income.max()))
    assert window.session.preview_recipe().column("disability").domain.categories == ("no", "yes")
    # the table says it is a copy (a warning sign), never "missing"
    i = page._names.index("income")
    assert page.table.item(i, 3).text().startswith("⚠")


def test_a_copy_refused_in_the_dialog_changes_nothing(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    page.editor.confirm_copy = lambda name: False
    page.select("income")
    page.editor.radio["data"].click()
    assert window.session.recipe.column("income").domain is None
    assert page.editor.radio["public"].isChecked()


def test_dp_categories_without_a_list_get_a_delta_and_compile(qtbot, loaded_demo):
    window = loaded_demo
    window.go_to(1)
    page = window.columns_page
    window.session.update(lambda r: set_role(r, "ethnicity", "sensitive"))
    page.select("ethnicity")
    ed = page.editor
    ed.radio["dp"].click()
    d = window.session.recipe.column("ethnicity").domain
    assert d.source == "dp" and d.candidates is None
    assert d.cost.delta == 1e-7  # the default shown in the field (4,000 rows: far below 1/n)
    assert not ed.delta.isHidden() and ed.delta.text() == "0.0000001"
    assert "4,000" in ed.delta_note.text() and "single person" in ed.delta_note.text()
    assert window.session.problems() == []  # the whole recipe compiles, with no problem
    from dpstudio.plan import compile_checked

    plan, problems = compile_checked(window.session.preview_recipe(), window.session.schema)
    assert problems == [] and plan is not None
    assert plan.total.delta >= 1e-7  # the discovery's δ is part of the release's total
    # the user's own δ
    ed.delta.setText("2e-8")
    ed.delta.editingFinished.emit()
    assert window.session.recipe.column("ethnicity").domain.cost.delta == 2e-8
    # with a public candidate list the estimate needs no δ: the field goes away
    ed.candidates.setText("white, black, asian, other")
    ed.candidates.editingFinished.emit()
    d = window.session.recipe.column("ethnicity").domain
    assert d.candidates == ("white", "black", "asian", "other") and d.cost.delta == 0.0
    assert ed.delta.isHidden()
    assert window.session.problems() == []


def test_one_choice_for_several_columns(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    page.select("age", "education_level", "income")
    ed = page.editor
    assert len(page.selected_columns()) == 3
    assert "3 columns" in ed.title() and "education_level" in ed.explain.text()
    ed.low.setText("0")
    ed.high.setText("100")
    ed.high.editingFinished.emit()
    rec = window.session.recipe
    want = Domain("numeric", source="public", low=0.0, high=100.0)
    assert [rec.column(n).domain for n in ("age", "education_level", "income")] == [want] * 3
    window.session.undo()  # one edit, one undo step
    assert all(window.session.recipe.column(n).domain is None for n in ("age", "education_level", "income"))


def test_bulk_never_clears_different_domains(qtbot, loaded_demo):
    window = loaded_demo
    window.go_to(1)
    page = window.columns_page
    before = window.session.recipe
    page.select("education_level", "income")  # two different public ranges: the fields are empty
    assert page.editor.low.text() == "" and "different domains" in page.editor.explain.text()
    page.editor.low.editingFinished.emit()  # e.g. tabbing through the empty fields
    assert window.session.recipe.columns == before.columns


def test_a_copy_for_several_columns_is_confirmed_once(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    asked = []
    page.editor.confirm_copy = lambda names: asked.append(names) or True
    page.select("age", "income")
    page.editor.radio["data"].click()
    assert asked == ["age, income"]
    assert all(window.session.recipe.column(n).domain.source == "data" for n in ("age", "income"))
    assert _column_problems(window, "age") == _column_problems(window, "income") == []


def test_mixed_kinds_are_explained_not_edited(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    page.select("age", "sex")
    ed = page.editor
    assert "different kinds" in ed.explain.text() and "numbers" in ed.explain.text()
    assert all(rb.isHidden() for rb in ed.radio.values())
    assert ed.low.isHidden() and ed.categories.isHidden()


def test_ctrl_a_selects_every_column(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    page.table.setFocus()
    qtbot.keyClick(page.table, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert len(page.selected_columns()) == len(window.session.recipe.columns)
    assert "different kinds" in page.editor.explain.text()


def test_a_pasted_table_is_previewed_and_applied(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    seen = {}

    def run(dialog):
        seen["checks"] = [dialog.table.item(i, 2).text() for i in range(dialog.table.rowCount())]
        seen["button"] = dialog.apply_button.text()
        return QDialog.DialogCode.Accepted

    text = "age\t0\t120\nethnicity\twhite|black|asian|other\nIncome\t0\t500000\nsex\t0\t1\nmarried\tyes|yes\n"
    applied = page.paste_domains(text, run=run)
    assert sorted(applied) == ["age", "ethnicity"]
    checks = seen["checks"]
    assert checks[0].startswith("✓") and checks[1].startswith("✓")
    assert "did you mean 'income'" in checks[2]  # unknown name, the closest one suggested
    assert "category list" in checks[3]  # bounds for a categorical column
    assert "repeat" in checks[4]
    assert seen["button"] == "Apply 2 domain(s)"
    rec = window.session.recipe
    assert rec.column("age").domain == Domain("numeric", source="public", low=0.0, high=120.0)
    assert rec.column("ethnicity").domain.categories == ("white", "black", "asian", "other")
    assert rec.column("income").domain is None
    note = page.domains_label.text()
    assert not page.domains_label.isHidden() and "2 domain(s) applied" in note and note.count("not applied") == 3


def test_a_cancelled_paste_changes_nothing(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    before = window.session.recipe
    assert page.paste_domains("age\t0\t120", run=lambda d: QDialog.DialogCode.Rejected) == {}
    assert window.session.recipe is before


def test_domains_saved_from_one_table_load_into_another(qtbot, loaded_demo, tmp_path):
    window = loaded_demo
    window.go_to(1)
    page = window.columns_page
    path = tmp_path / "census.domains.json"
    assert page.save_domains(str(path)) == 5
    data = json.loads(path.read_text())
    names = {"education_level", "income", "children", "disability", "employed"}
    assert {e["column"] for e in data["columns"]} == names
    # another table of the same schema (a copy without a recipe), and a file with a stray entry
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(window.session.loaded.path, other / "census2.csv")
    data["columns"].append({"column": "zipcode", "bounds": [0, 99999]})
    data["columns"].append({"column": "sex", "bounds": [0, 1]})
    path.write_text(json.dumps(data))
    load(qtbot, window, other / "census2.csv")
    window.go_to(1)
    messages = []
    page.show_message = lambda title, text: messages.append((title, text))
    report = page.load_domains(str(path))
    assert set(report.applied) == names
    assert len(report.unknown) == 1 and len(report.mismatched) == 1
    assert messages and "zipcode" in messages[0][1] and "sex" in messages[0][1]
    assert window.session.recipe.column("income").domain == Domain("numeric", low=0.0, high=500000.0)
    # the file chooser path (replaced here) is used when no path is given
    page.choose_open_file = lambda: ""
    assert page.load_domains() is None


def test_a_domain_file_never_overwrites_the_data_or_the_recipe(qtbot, loaded_demo):
    """Saving domains over the private input (or the recipe it came with) is refused with a
    message; the file keeps its bytes."""
    window = loaded_demo
    window.go_to(1)
    page = window.columns_page
    messages = []
    page.show_message = lambda title, text: messages.append((title, text))
    data = Path(window.session.loaded.path)
    before = data.read_bytes()
    assert page.save_domains(str(data)) == 0
    assert data.read_bytes() == before
    assert messages and "not saved" in messages[0][0]
    recipe = window.session.recipe_source
    if recipe:
        kept = Path(recipe).read_bytes()
        assert page.save_domains(recipe) == 0
        assert Path(recipe).read_bytes() == kept


def test_a_bad_domain_file_is_explained(qtbot, window, demo_copy, tmp_path):
    page = _columns(qtbot, window, demo_copy)
    messages = []
    page.show_message = lambda title, text: messages.append(text)
    bad = tmp_path / "bad.csv"
    bad.write_text("age,10,5\nsex,a|a\n")
    before = window.session.recipe
    assert page.load_domains(str(bad)) is None
    assert window.session.recipe is before
    assert "line 1 (age)" in messages[0] and "line 2 (sex)" in messages[0]


def test_a_file_copying_from_the_data_asks_first(qtbot, window, demo_copy, tmp_path):
    page = _columns(qtbot, window, demo_copy)
    f = tmp_path / "d.csv"
    f.write_text("column,source,type,low,high\nincome,data,integer,,\nage,,,0,120\n")
    page.confirm_copies = lambda names: False
    page.show_message = lambda title, text: None
    report = page.load_domains(str(f))
    assert report.applied == ["age"] and report.needs_ack == ["income"]
    assert window.session.recipe.column("income").domain is None
    page.confirm_copies = lambda names: names == ["income"]
    report = page.load_domains(str(f))
    assert sorted(report.applied) == ["age", "income"]
    assert window.session.recipe.column("income").domain == Domain("numeric", source="data")
    assert _column_problems(window, "income") == []


def test_yes_no_columns_are_offered_their_obvious_domain(qtbot, window, demo_copy):
    page = _columns(qtbot, window, demo_copy)
    ed = page.editor
    page.select("children")  # integers 0/1
    assert not ed.offer_button.isHidden()
    assert ed.offer_button.text() == "Yes/no column: use the categories 0 and 1"
    # the note asks for the fact that makes it public (no other value possible), not only the data's values
    assert "no other value is possible" in ed.offer_note.text() and "public knowledge" in ed.offer_note.text()
    assert window.session.recipe.column("children").domain is None  # offered, not applied
    qtbot.mouseClick(ed.offer_button, Qt.MouseButton.LeftButton)
    d = window.session.recipe.column("children").domain
    assert d == Domain("categorical", source="public", categories=("0", "1"))
    assert _column_problems(window, "children") == []
    assert ed.offer_button.isHidden()  # the column has its domain now
    page.select("disability")  # yes/no words
    assert ed.offer_button.text() == "Yes/no column: use the categories no and yes"
    page.select("income")
    assert ed.offer_button.isHidden()
    # a 0/1 column the user declared an integer is offered the range 0 to 1
    page.select("children")
    window.session.update(lambda r: r.with_column("children", type="integer", domain=None))
    page.select("children")
    assert ed.offer_button.text() == "Yes/no column: use the range 0 to 1"
    qtbot.mouseClick(ed.offer_button, Qt.MouseButton.LeftButton)
    assert window.session.recipe.column("children").domain == Domain("numeric", low=0.0, high=1.0)


def test_codes_with_leading_zeros_are_categories(qtbot, window, tmp_path):
    data = tmp_path / "medical.csv"
    shutil.copy(MEDICAL, data)
    page = _columns(qtbot, window, data)
    rec = window.session.recipe
    assert rec.column("Treatment").type == "categorical"
    assert window.session.frame["Treatment"].iloc[0] == "025"
    page.select("Treatment")
    assert not page.editor.categories.isHidden() and page.editor.low.isHidden()


def test_ctrl_shift_v_pastes_the_clipboard(qtbot, window, demo_copy, monkeypatch):
    from PySide6.QtGui import QGuiApplication

    from dpstudio.gui.wizard.columns_page import DomainTableDialog

    page = _columns(qtbot, window, demo_copy)
    shown = []
    monkeypatch.setattr(
        DomainTableDialog, "exec", lambda self: shown.append(self.text.toPlainText()) or QDialog.DialogCode.Accepted
    )
    QGuiApplication.clipboard().setText("income\t0\t500000\n")
    page.table.setFocus()
    qtbot.keyClick(page.table, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert shown == ["income\t0\t500000\n"]
    assert window.session.recipe.column("income").domain == Domain("numeric", low=0.0, high=500000.0)


def test_a_domain_file_never_overwrites_a_paid_release_file(qtbot, loaded_demo, tmp_path):
    """The save dialog's "replace?" is not enough for a file an earlier release paid for."""
    from dpstudio.engine.accounting import PrivacyLoss
    from dpstudio.ledger import Ledger, default_ledger_path

    window = loaded_demo
    window.go_to(1)
    page = window.columns_page
    messages = []
    page.show_message = lambda title, text: messages.append((title, text))
    led = Ledger(default_ledger_path())
    paid = tmp_path / "paid.csv"
    res = led.reserve("b" * 64, loss=PrivacyLoss(epsilon=1.0, delta=0.0), output_path=paid, dataset_name="x.csv")
    led.write_and_commit(res, paid, lambda tmp: Path(tmp).write_text("a,b\n1,2\n"))
    assert page.save_domains(str(paid)) == 0
    assert paid.read_text() == "a,b\n1,2\n"
    assert messages and f"of release {res.id}" in messages[-1][1]
