"""Columns page: a type or role the user sets is recorded as confirmed; suggestions read from
the data stay marked as inferred until changed or confirmed with "Confirm all suggestions"."""

from __future__ import annotations

from conftest import load
from PySide6.QtCore import Qt

from dpstudio.gui.wizard.columns_page import COL_ROLE, COL_TYPE
from dpstudio.recipe.validate import inferred_facts


def test_setting_a_type_on_the_columns_page_records_it_confirmed(qtbot, window, demo_copy):
    load(qtbot, window, demo_copy)
    window.go_to(1)
    page = window.columns_page
    rec = window.session.recipe
    assert rec.column("age").type == "integer" and rec.column("age").type_source == "inferred"
    i = page._names.index("age")
    combo = page.table.cellWidget(i, COL_TYPE)
    assert combo.font().italic()  # inferred: shown in italics
    assert not page.confirm_button.isHidden() and not page.inferred_label.isHidden()

    combo.setCurrentIndex(combo.findData("float"))
    age = window.session.recipe.column("age")
    assert (age.type, age.type_source, age.role_source) == ("float", "confirmed", "inferred")
    assert not page.table.cellWidget(i, COL_TYPE).font().italic()
    assert page.table.cellWidget(i, COL_ROLE).font().italic()
    assert window.session.recipe.column("income").type_source == "inferred"  # only what was set

    qtbot.mouseClick(page.confirm_button, Qt.MouseButton.LeftButton)
    assert inferred_facts(window.session.recipe) == []
    assert page.confirm_button.isHidden() and page.inferred_label.isHidden()
    assert window.session.recipe.column("age").type == "float"  # confirming changes no value
    window.session.undo()
    assert inferred_facts(window.session.recipe)  # one undo step
