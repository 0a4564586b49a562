import time

import numpy as np
import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableView

from dpstudio.gui.table_model import DataFrameModel, format_cell


def test_million_rows_open_instantly_and_format_lazily(qtbot):
    n = 1_000_000
    frame = pd.DataFrame({"a": np.arange(n), "b": np.random.default_rng(0).random(n),
                          "c": pd.array(["x", None] * (n // 2), dtype="string")})
    t0 = time.perf_counter()
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
    assert time.perf_counter() - t0 < 2.0
    assert model.rowCount() == n and model.columnCount() == 3
    assert model.data(model.index(n - 1, 0)) == str(n - 1)
    assert model.data(model.index(1, 2)) == ""


def test_dropped_columns_are_struck_through(qtbot):
    model = DataFrameModel(pd.DataFrame({"id": [1], "x": [2]}))
    model.set_dropped(["id"])
    assert "dropped" in model.headerData(0, Qt.Orientation.Horizontal)
    assert model.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.FontRole).strikeOut()
    assert format_cell(float("nan")) == ""
