"""Saving the recipe from the GUI never writes over the data it describes, and a release may
then not write over the saved recipe."""

from __future__ import annotations

from pathlib import Path


def test_save_recipe_refuses_the_input_and_remembers_the_recipe(qtbot, loaded_demo, monkeypatch, tmp_path):
    import dpstudio.gui.main_window as mw

    win = loaded_demo
    data = Path(win.session.loaded.path)
    before = data.read_bytes()
    errors = []
    monkeypatch.setattr(mw, "show_error", lambda parent, title, exc: errors.append(str(exc)))
    monkeypatch.setattr(mw.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(data), "")))
    win.save_recipe()
    assert data.read_bytes() == before
    assert errors and "input data file" in errors[0]

    target = tmp_path / "saved.recipe.json"
    monkeypatch.setattr(mw.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))
    win.save_recipe()
    assert target.is_file() and win.session.recipe_source == str(target)
