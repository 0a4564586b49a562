"""A titled chart box: a pyqtgraph plot, or a plain message when there is nothing to show."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

pg.setConfigOptions(antialias=False, useNumba=False)  # fast redraws; main curves opt in

# colour-blind-safe (Okabe-Ito)
BLUE, ORANGE, GREEN, RED, GREY, PURPLE = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#8C8C8C", "#CC79A7"


class ChartBox(QWidget):
    def __init__(self, title: str, parent=None):
        super().__init__(parent)
        self.title = QLabel(f"<b>{title}</b>")
        self.title.setWordWrap(True)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setObjectName("chartCaption")
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(140)
        self.plot.setMenuEnabled(False)
        self.plot.getPlotItem().hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setObjectName("chartMessage")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.plot)
        self.stack.addWidget(self.message)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.title)
        lay.addWidget(self.stack, 1)
        lay.addWidget(self.caption)
        self._apply_palette()

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.stack.setCurrentWidget(self.message)

    def show_plot(self) -> None:
        self.stack.setCurrentWidget(self.plot)

    @property
    def showing_plot(self) -> bool:
        return self.stack.currentWidget() is self.plot

    def _apply_palette(self) -> None:
        pal = self.palette()
        self.plot.setBackground(pal.color(QPalette.ColorRole.Base))
        fg = pal.color(QPalette.ColorRole.Text)
        for name in ("left", "bottom"):
            ax = self.plot.getPlotItem().getAxis(name)
            ax.enableAutoSIPrefix(False)
            ax.setPen(fg)
            ax.setTextPen(fg)

    def changeEvent(self, event):  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)
