"""Original vs privatized distribution of one column, on a sample."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from dpstudio.gui.charts.base import BLUE, GREY, ChartBox
from dpstudio.gui.i18n import tr


class HistogramChart(ChartBox):
    def __init__(self, parent=None):
        super().__init__(tr("Original vs privatized values (sample)"), parent)
        p = self.plot.getPlotItem()
        p.setLabel("left", tr("share of rows"))
        p.addLegend(offset=(-10, 10))
        self.orig = pg.PlotDataItem(
            [0, 1],
            [0],
            stepMode="center",
            fillLevel=0,
            pen=pg.mkPen(GREY, width=1.5),
            brush=pg.mkBrush(140, 140, 140, 90),
            name=tr("original"),
        )
        self.priv = pg.PlotDataItem(
            [0, 1],
            [0],
            stepMode="center",
            fillLevel=0,
            pen=pg.mkPen(BLUE, width=2),
            brush=pg.mkBrush(0, 114, 178, 70),
            name=tr("privatized"),
        )
        self.bars_orig = pg.BarGraphItem(x=[], height=[], width=0.38, brush=pg.mkBrush(140, 140, 140, 160))
        self.bars_priv = pg.BarGraphItem(x=[], height=[], width=0.38, brush=pg.mkBrush(0, 114, 178, 200))
        for it in (self.orig, self.priv, self.bars_orig, self.bars_priv):
            p.addItem(it)
        self._kind = None
        self._legend = p.legend

    def set_series_names(self, original: str, other: str) -> None:
        """Legend texts (e.g. "original" / "synthetic (trial)" for a synthetic-data trial)."""
        for item, text in ((self.orig, original), (self.priv, other)):
            item.opts["name"] = text
            for sample, label in self._legend.items:
                if sample.item is item:
                    label.setText(text)

    def set_numeric(self, edges, original, private, xlabel: str) -> None:
        p = self.plot.getPlotItem()
        if self._kind != "numeric":
            self._kind = "numeric"
            self.bars_orig.setVisible(False)
            self.bars_priv.setVisible(False)
            self.orig.setVisible(True)
            self.priv.setVisible(True)
            p.getAxis("bottom").setTicks(None)
        self.orig.setData(edges, original)
        self.priv.setData(edges, private)
        p.setLabel("bottom", xlabel)
        p.setYRange(0, max(float(np.max(original, initial=0)), float(np.max(private, initial=0))) * 1.1 + 1e-9)
        p.setXRange(edges[0], edges[-1], padding=0)
        self.show_plot()

    def set_categorical(self, categories, original, private, xlabel: str) -> None:
        p = self.plot.getPlotItem()
        x = np.arange(len(categories), dtype=float)
        if self._kind != "categorical" or getattr(self, "_cats", None) != tuple(categories):
            self._kind = "categorical"
            self._cats = tuple(categories)
            self.orig.setVisible(False)
            self.priv.setVisible(False)
            self.bars_orig.setVisible(True)
            self.bars_priv.setVisible(True)
            labels = [(i, str(c)[:12]) for i, c in enumerate(categories)]
            p.getAxis("bottom").setTicks([labels])
            p.setXRange(-0.6, len(categories) - 0.4, padding=0)
        self.bars_orig.setOpts(x=x - 0.2, height=original)
        self.bars_priv.setOpts(x=x + 0.2, height=private)
        p.setLabel("bottom", xlabel)
        p.setYRange(0, max(float(np.max(original, initial=0)), float(np.max(private, initial=0))) * 1.1 + 1e-9)
        self.show_plot()
