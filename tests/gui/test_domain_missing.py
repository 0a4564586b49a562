"""The columns page's "May be empty" choice: visible for every column with a domain, proposed
from the file's empty cells like the type, saved in the domain, and undone like any edit."""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import load

from dpstudio.gui.wizard.edits import set_domain
from dpstudio.recipe.model import Domain


def _table(tmp_path):
    gen = np.random.default_rng(0)
    n = 300
    age = pd.array(gen.integers(18, 90, n), dtype="Int64")
    age[gen.random(n) < 0.2] = pd.NA
    job = gen.choice(["clerk", "nurse", "driver"], n).astype(object)
    job[gen.random(n) < 0.1] = None
    frame = pd.DataFrame({"age": age, "job": job, "score": gen.integers(0, 10, n)})
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def _columns_page(qtbot, window, tmp_path):
    load(qtbot, window, _table(tmp_path))
    window.go_to(1)
    return window.columns_page


def test_may_be_empty_is_proposed_from_empty_cells_and_undoable(qtbot, window, tmp_path):
    page = _columns_page(qtbot, window, tmp_path)
    ed = page.editor
    page.select("age")
    assert ed.may_be_empty.isVisible() and ed.may_be_empty.isChecked()  # proposed: the file has empty cells
    assert "empty cells" in ed.empty_note.text() and ed.empty_note.isVisible()
    # typing the bounds saves the domain with the proposal
    ed.low.setText("0")
    ed.high.setText("120")
    ed.high.editingFinished.emit()
    d = window.session.recipe.column("age").domain
    assert d is not None and (d.low, d.high) == (0.0, 120.0) and d.missing
    # unticking is an edit of the domain: one undo step brings the flag back
    ed.may_be_empty.click()
    assert window.session.recipe.column("age").domain.missing is False
    assert window.session.recipe.column("age").domain.high == 120.0
    window.session.undo()
    assert window.session.recipe.column("age").domain.missing is True
    page.select("job")
    page.select("age")
    assert ed.may_be_empty.isChecked()  # the editor shows the recipe's value again
    # the columns table says so in plain words
    i = page._names.index("age")
    assert "may be empty" in page.table.item(i, 3).text()


def test_a_column_without_empty_cells_is_not_proposed(qtbot, window, tmp_path):
    page = _columns_page(qtbot, window, tmp_path)
    ed = page.editor
    page.select("score")
    assert ed.may_be_empty.isVisible() and not ed.may_be_empty.isChecked()
    assert ed.empty_note.text() == ""
    ed.may_be_empty.click()  # no domain yet: nothing to save, the choice waits for the domain
    assert window.session.recipe.column("score").domain is None
    ed.low.setText("0")
    ed.high.setText("9")
    ed.high.editingFinished.emit()
    assert window.session.recipe.column("score").domain.missing is True


def test_a_domain_that_says_not_empty_shows_a_hint(qtbot, window, tmp_path):
    page = _columns_page(qtbot, window, tmp_path)
    window.session.update(
        lambda r: set_domain(r, "job", Domain(kind="categorical", categories=("clerk", "nurse", "driver")))
    )
    page.select("job")
    ed = page.editor
    assert not ed.may_be_empty.isChecked()
    assert "tick this" in ed.empty_note.text()
    ed.may_be_empty.click()
    d = window.session.recipe.column("job").domain
    assert d.missing and d.categories == ("clerk", "nurse", "driver")
