"""A read-only Qt model over a pandas DataFrame that formats only the cells Qt asks for.

Nothing is converted up front, so a 1,000,000-row table opens instantly: ``data()`` is called
for the visible cells only and formats one value at a time.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

from dpstudio.gui.i18n import tr

#: the invalid index Qt uses for "the root" (the table itself): the default ``parent``
_ROOT = QModelIndex()


def format_cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.6g}"
    try:
        import pandas as pd

        if pd.isna(value) is True:
            return ""
    except (TypeError, ValueError):
        pass
    text = str(value)
    return text if len(text) <= 200 else text[:199] + "…"


class DataFrameModel(QAbstractTableModel):
    def __init__(self, frame=None, parent=None):
        super().__init__(parent)
        self._frame = None
        self._columns: list = []
        self._dropped: set[str] = set()
        self.set_frame(frame)

    def set_frame(self, frame) -> None:
        self.beginResetModel()
        self._frame = frame
        self._columns = [] if frame is None else [frame.iloc[:, j] for j in range(frame.shape[1])]
        self.endResetModel()

    def set_dropped(self, names) -> None:
        """Columns shown greyed (identifiers / ignored: not part of the release)."""
        names = set(names)
        if names != self._dropped:
            self._dropped = names
            if self._columns:
                self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(self._columns) - 1)
                self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, len(self._columns) - 1))

    def rowCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() or self._frame is None else len(self._frame)

    def columnCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return format_cell(self._columns[index.column()].iat[index.row()])
        if (
            role == Qt.ItemDataRole.ForegroundRole
            and self._frame is not None
            and str(self._frame.columns[index.column()]) in self._dropped
        ):
            from PySide6.QtGui import QColor

            return QColor(140, 140, 140)
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802 - Qt override
        if self._frame is None:
            return None
        if orientation == Qt.Orientation.Horizontal:
            name = str(self._frame.columns[section])
            if role == Qt.ItemDataRole.DisplayRole:
                return name + (" " + tr("(dropped)") if name in self._dropped else "")
            if role == Qt.ItemDataRole.FontRole and name in self._dropped:
                from PySide6.QtGui import QFont

                f = QFont()
                f.setStrikeOut(True)
                return f
            if role == Qt.ItemDataRole.ToolTipRole:
                return str(self._frame.dtypes.iloc[section])
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{section + 1:,}"
        return None
