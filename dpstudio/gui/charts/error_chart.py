"""Expected error of one column's mechanism against the floor no epsilon-DP mechanism can beat.

The curves go through the plan's own figures at a few dozen budgets; the marker is the value of
the current plan, given by the caller (never read off the curve)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from dpstudio.gui.charts.base import BLUE, RED, ChartBox
from dpstudio.gui.i18n import tr


class ErrorChart(ChartBox):
    def __init__(self, parent=None):
        super().__init__(tr("Expected error vs ε — and the best any mechanism could do"), parent)
        p = self.plot.getPlotItem()
        p.setLogMode(x=True, y=True)
        p.setLabel("bottom", tr("ε (privacy budget, log scale)"))
        p.setLabel("left", tr("expected error"))
        p.addLegend(offset=(-10, 10))
        self.floor = p.plot(
            [],
            [],
            pen=pg.mkPen(RED, width=2, style=Qt.PenStyle.DashLine),
            name=tr("floor: no ε-DP mechanism does better"),
        )
        self.zero = p.plot([], [], pen=pg.mkPen(None))
        self.fill = pg.FillBetweenItem(self.zero, self.floor, brush=pg.mkBrush(213, 94, 0, 40))
        p.addItem(self.fill)
        self.curve = p.plot([], [], pen=pg.mkPen(BLUE, width=2.5), name=tr("chosen mechanism"), antialias=True)
        self.marker = p.plot([], [], pen=None, symbol="o", symbolSize=10, symbolBrush=BLUE)
        self.vline = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888", width=1, style=Qt.PenStyle.DotLine))
        p.addItem(self.vline)
        self.has_curves = False

    def set_curves(self, eps_grid, err, floor, ylabel: str) -> None:
        """Draw the curves through the points where the plan has a value (NaN: none)."""
        eps_grid, err, floor = (np.asarray(a, dtype=float) for a in (eps_grid, err, floor))
        ok = np.isfinite(err) & (err > 0)
        okf = np.isfinite(floor) & (floor > 0)
        self.curve.setData(eps_grid[ok], err[ok])
        self.floor.setData(eps_grid[okf], floor[okf])
        low = max(float(np.min(floor[okf], initial=1e-4)), 1e-4)  # errors under 0.01 % are not drawn
        high = max(float(np.max(err[ok], initial=low)), low * 10)
        self.zero.setData(eps_grid[okf], np.full(int(okf.sum()), low))
        self.plot.getPlotItem().setLabel("left", ylabel + " " + tr("(log scale)"))
        self.plot.getPlotItem().setYRange(np.log10(low), np.log10(high), padding=0.05)
        self.plot.getPlotItem().enableAutoRange(axis="x")
        self.has_curves = True
        self.show_plot()

    def set_epsilon(self, eps: float, value: float | None) -> None:
        """Move the marker to ``value``: the current plan's figure at ``eps`` (None: no marker)."""
        self.vline.setPos(np.log10(eps))
        if value is None or not (np.isfinite(value) and value > 0):
            self.marker.setData([], [])
        else:
            self.marker.setData([eps], [float(value)])
