"""Original vs privatized distribution of one column, on a sample.

Numeric columns: two step histograms.  Categorical columns: side-by-side bars, upright for up to
:data:`MAX_UPRIGHT` categories (labels elided to the room under each bar), horizontal beyond, with
the category names down the left axis, where long names have room."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics

from dpstudio.gui.charts.base import BLUE, BOX, GREY, SOLID, ChartBox
from dpstudio.gui.i18n import tr

MAX_UPRIGHT = 6  # more categories than this: horizontal bars
LABEL_CHARS = 18  # category names longer than this are elided on the left axis


class HistogramChart(ChartBox):
    def __init__(self, parent=None):
        super().__init__(tr("Original vs privatized values (sample)"), parent)
        p = self.plot.getPlotItem()
        self.orig = pg.PlotDataItem(
            [0, 1],
            [0],
            stepMode="center",
            fillLevel=0,
            pen=pg.mkPen(GREY, width=1.5),
            brush=pg.mkBrush(140, 140, 140, 90),
        )
        self.priv = pg.PlotDataItem(
            [0, 1],
            [0],
            stepMode="center",
            fillLevel=0,
            pen=pg.mkPen(BLUE, width=2),
            brush=pg.mkBrush(0, 114, 178, 70),
        )
        self.bars_orig = pg.BarGraphItem(x=[], height=[], width=0.38, brush=pg.mkBrush(140, 140, 140, 160))
        self.bars_priv = pg.BarGraphItem(x=[], height=[], width=0.38, brush=pg.mkBrush(0, 114, 178, 200))
        for it in (self.orig, self.priv, self.bars_orig, self.bars_priv):
            p.addItem(it)
        self._kind = None
        self._cats: tuple[str, ...] = ()
        self.horizontal = False
        self._names = (tr("original"), tr("privatized"))
        self._update_legend()

    def _update_legend(self) -> None:
        glyph = SOLID if self._kind == "numeric" else BOX
        self.set_legend([(GREY, glyph, self._names[0]), (BLUE, glyph, self._names[1])])

    def set_series_names(self, original: str, other: str) -> None:
        """Legend texts (e.g. "original" / "synthetic (trial)" for a synthetic-data trial)."""
        self._names = (original, other)
        self._update_legend()

    def _ylim(self, original, private) -> float:
        return max(float(np.max(original, initial=0)), float(np.max(private, initial=0))) * 1.1 + 1e-9

    def set_numeric(self, edges, original, private, xlabel: str) -> None:
        p = self.plot.getPlotItem()
        if self._kind != "numeric":
            self._kind = "numeric"
            self.horizontal = False
            self.bars_orig.setVisible(False)
            self.bars_priv.setVisible(False)
            self.orig.setVisible(True)
            self.priv.setVisible(True)
            p.getAxis("bottom").setTicks(None)
            p.getAxis("left").setTicks(None)
            self._update_legend()
        self.orig.setData(edges, original)
        self.priv.setData(edges, private)
        self.set_axis_title("bottom", xlabel)
        self.set_axis_title("left", tr("share of rows"), tr("share"))
        p.setYRange(0, self._ylim(original, private), padding=0)
        p.setXRange(edges[0], edges[-1], padding=0)
        self.show_plot()

    def set_categorical(self, categories, original, private, xlabel: str) -> None:
        p = self.plot.getPlotItem()
        cats = tuple(map(str, categories))
        n = len(cats)
        pos = np.arange(n, dtype=float)
        if self._kind != "categorical" or self._cats != cats:
            self._kind = "categorical"
            self._cats = cats
            self.horizontal = n > MAX_UPRIGHT
            self.orig.setVisible(False)
            self.priv.setVisible(False)
            self.bars_orig.setVisible(True)
            self.bars_priv.setVisible(True)
            self._update_legend()
        top = self._ylim(original, private)
        if self.horizontal:
            # categories down the left axis, the first at the top
            y = n - 1 - pos
            self.bars_orig.setOpts(x0=0, y=y + 0.2, width=original, height=0.38, x=None, y0=None)
            self.bars_priv.setOpts(x0=0, y=y - 0.2, width=private, height=0.38, x=None, y0=None)
            p.getAxis("bottom").setTicks(None)
            p.getAxis("left").setTicks([[(n - 1 - i, _elide(c, LABEL_CHARS)) for i, c in enumerate(cats)]])
            self.set_axis_title("bottom", tr("share of rows"), tr("share"))
            self.set_axis_title("left", xlabel)
            p.setXRange(0, top, padding=0)
            p.setYRange(-0.6, n - 0.4, padding=0)
        else:
            self.bars_orig.setOpts(x=pos - 0.2, height=original, width=0.38, x0=None, y=None, y0=0)
            self.bars_priv.setOpts(x=pos + 0.2, height=private, width=0.38, x0=None, y=None, y0=0)
            p.getAxis("left").setTicks(None)
            self._set_upright_ticks()
            self.set_axis_title("bottom", xlabel)
            self.set_axis_title("left", tr("share of rows"), tr("share"))
            p.setXRange(-0.6, n - 0.4, padding=0)
            p.setYRange(0, top, padding=0)
        self.show_plot()

    def _set_upright_ticks(self) -> None:
        """Category names under upright bars, elided to the room each bar has."""
        n = max(len(self._cats), 1)
        ax = self.plot.getPlotItem().getAxis("bottom")
        room = max(int(ax.geometry().width() / n) - 8, 24)
        fm = QFontMetrics(ax.style.get("tickFont") or self.font())
        ticks = [(i, fm.elidedText(c, Qt.TextElideMode.ElideRight, room)) for i, c in enumerate(self._cats)]
        ax.setTicks([ticks])

    def tick_labels(self) -> list[str]:
        """The category names as the axis shows them."""
        ax = self.plot.getPlotItem().getAxis("left" if self.horizontal else "bottom")
        ticks = ax._tickLevels or [[]]
        return [t for _v, t in ticks[0]]

    def fit_axis_titles(self) -> None:
        super().fit_axis_titles()
        if self._kind == "categorical" and not self.horizontal and self._cats:
            self._set_upright_ticks()


def _elide(text: str, chars: int) -> str:
    """``text`` in at most ``chars`` characters, elided in the middle (names that share a long
    beginning stay apart)."""
    if len(text) <= chars:
        return text
    head = (chars - 1) // 2
    return text[:head] + "…" + text[-(chars - 1 - head) :]
