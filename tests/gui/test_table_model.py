import numpy as np
import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableView

from dpstudio.gui.table_model import DataFrameModel, format_cell


def test_million_rows_open_without_converting_and_format_lazily(qtbot, monkeypatch):
    """Opening a 1M-row table formats only the cells Qt shows: the work is bounded by the
    viewport, not by the row count (counted, not timed; benchmarks/bench_gui_preview.py times it)."""
    import dpstudio.gui.table_model as tm

    n = 1_000_000
    frame = pd.DataFrame(
        {
            "a": np.arange(n),
            "b": np.random.default_rng(0).random(n),
            "c": pd.array(["x", None] * (n // 2), dtype="string"),
        }
    )
    calls = []
    real = tm.format_cell
    monkeypatch.setattr(tm, "format_cell", lambda v: calls.append(1) or real(v))
    model = DataFrameModel(frame)
    view = QTableView()
    qtbot.addWidget(view)
    view.setModel(model)
    view.verticalHeader().setDefaultSectionSize(22)
    view.resize(800, 600)
    view.show()
    view.grab()
    view.scrollToBottom()
    view.grab()
    visible_cells = 3 * (600 // 22 + 2)
    assert 0 < len(calls) <= 4 * visible_cells, len(calls)  # two screens drawn, a few repaints
    assert model.rowCount() == n and model.columnCount() == 3
    assert model.data(model.index(n - 1, 0)) == str(n - 1)
    assert model.data(model.index(1, 2)) == ""


def test_dropped_columns_are_struck_through(qtbot):
    model = DataFrameModel(pd.DataFrame({"id": [1], "x": [2]}))
    model.set_dropped(["id"])
    assert "dropped" in model.headerData(0, Qt.Orientation.Horizontal)
    assert model.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.FontRole).strikeOut()
    assert format_cell(float("nan")) == ""
