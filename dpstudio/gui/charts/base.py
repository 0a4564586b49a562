"""A titled chart box: a pyqtgraph plot, or a plain message when there is nothing to show.

Readable at small window sizes: the legend is a line of text above the plot (it never covers a
curve), tick labels are plain numbers with one format on every axis (log axes label their
decades: 0.01, 0.1, 1, 10, 100 - never "1e-06" or "10²"), and each axis title has a short form
used when the long one does not fit beside the plot."""

from __future__ import annotations

import html
import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

pg.setConfigOptions(antialias=False, useNumba=False)  # fast redraws; main curves opt in

# colour-blind-safe (Okabe-Ito)
BLUE, ORANGE, GREEN, RED, GREY, PURPLE = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#8C8C8C", "#CC79A7"

#: a plot less high than this (pixels) shows no bottom axis title: its ticks need the room
BOTTOM_TITLE_MIN_PLOT = 150

#: legend glyphs: a solid line, a dashed line, a filled box, a dot
SOLID, DASHED, BOX, DOT = "━━", "╍╍", "■", "●"


def fmt_tick(x: float) -> str:
    """A tick value as a plain number: thousands separators, no exponent, no trailing zeros."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else ""
    a = abs(x)
    if a >= 1:
        return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 * max(a, 1) else f"{x:,.3g}".rstrip("0").rstrip(".")
    digits = max(0, -math.floor(math.log10(a))) + 2
    return f"{x:.{digits}f}".rstrip("0").rstrip(".")


class PlainAxis(pg.AxisItem):
    """An axis whose tick labels are plain numbers (:func:`fmt_tick`); on a log axis only the
    decades are labelled, so every label has the same form."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        if self.logMode:
            return self.logTickStrings(values, scale, spacing)
        return [fmt_tick(v * scale) for v in values]

    def logTickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        out = []
        for v in values:
            decade = abs(v - round(v)) < 1e-6
            out.append(fmt_tick(10 ** round(v) * scale) if decade else "")
        return out


class ChartBox(QWidget):
    def __init__(self, title: str, parent=None):
        super().__init__(parent)
        self.title = QLabel(f"<b>{title}</b>")
        self.title.setWordWrap(True)
        self.legend = QLabel()
        self.legend.setObjectName("chartLegend")
        self.legend.setWordWrap(True)
        self.legend.setVisible(False)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setObjectName("chartCaption")
        self.plot = pg.PlotWidget(axisItems={"left": PlainAxis("left"), "bottom": PlainAxis("bottom")})
        self.plot.setMinimumHeight(110)
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
        lay.setSpacing(1)
        lay.addWidget(self.title)
        lay.addWidget(self.legend)
        lay.addWidget(self.stack, 1)
        lay.addWidget(self.caption)
        self._legend_entries: list[tuple[str, str, str]] = []
        self._axis_titles: dict[str, tuple[str, str]] = {}
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.timeout.connect(self.fit_axis_titles)
        self._apply_palette()

    # ---- legend: a line of text outside the plot ---------------------------------------------
    def set_legend(self, entries) -> None:
        """``entries``: (colour, glyph, text) - shown above the plot, never over a curve."""
        self._legend_entries = [tuple(e) for e in entries]
        parts = [
            f"<span style='color:{c}'>{g}</span>&nbsp;{html.escape(t).replace(' ', '&nbsp;')}"
            for c, g, t in self._legend_entries
        ]
        self.legend.setText("&nbsp;&nbsp;&nbsp; ".join(parts))
        self.legend.setVisible(bool(parts) and self.showing_plot)

    def legend_texts(self) -> list[str]:
        return [t for _c, _g, t in self._legend_entries]

    # ---- axis titles: the long form when it fits, else the short one -------------------------
    def set_axis_title(self, side: str, text: str, short: str | None = None) -> None:
        self._axis_titles[side] = (text, short or text)
        self.fit_axis_titles()

    def axis_title_room(self, side: str) -> float:
        """Pixels along the axis available to its title."""
        r = self.plot.getPlotItem().getViewBox().geometry()
        return float(r.height() if side in ("left", "right") else r.width())

    def axis_title_fits(self, side: str) -> bool:
        """Whether the title of ``side`` lies wholly beside its axis and inside the plot widget
        (not cut at an edge, not running past the axis)."""
        ax = self.plot.getPlotItem().getAxis(side)
        if not ax.label.isVisible():
            return True
        length = ax.label.boundingRect().width()  # along the axis (the left title is rotated)
        along = ax.size().height() if side in ("left", "right") else ax.size().width()
        # the text itself: the label's rectangle without its document margin (pyqtgraph nudges the
        # label past the widget's edge by that margin)
        m = int(ax.label.document().documentMargin()) + 1
        shown = self.plot.mapFromScene(ax.label.sceneBoundingRect()).boundingRect().adjusted(m, m, -m, -m)
        return length <= along + 1 and self.plot.viewport().rect().contains(shown)

    def axis_title_text(self, side: str) -> str:
        ax = self.plot.getPlotItem().getAxis(side)
        return ax.labelText if ax.label.isVisible() else ""

    def fit_axis_titles(self) -> None:
        """Each axis title in its long form if it fits beside the plot, else its short form,
        else none (the axis tooltip keeps the long one): a title is never cut."""
        item = self.plot.getPlotItem()
        for side, (long, short) in self._axis_titles.items():
            ax = item.getAxis(side)
            ax.setToolTip(long)
            candidates = [] if side == "bottom" and self.plot.height() < BOTTOM_TITLE_MIN_PLOT else [long, short]
            for text in candidates:
                if ax.labelText != text or not ax.label.isVisible():
                    item.setLabel(side, text)
                ax.resizeEvent(None)  # place the new label (pyqtgraph places it on resize only)
                along = ax.size().height() if side in ("left", "right") else ax.size().width()
                if ax.label.boundingRect().width() <= along:  # the label's own length, margins included
                    break
            else:
                ax.showLabel(False)

    def resizeEvent(self, event):  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit_timer.start(0)  # after the plot's own layout has followed

    # ---- plot or message -----------------------------------------------------------------------
    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.stack.setCurrentWidget(self.message)
        self.legend.setVisible(False)

    def show_plot(self) -> None:
        self.stack.setCurrentWidget(self.plot)
        self.legend.setVisible(bool(self._legend_entries))

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
