"""Attacker accuracy against epsilon: uninformed / naive / informed (Sekiguchi 2024; docs/leakage.md §Label attackers).

The x axis is the release's total epsilon; each point is the leakage model read at the epsilon of
the label's randomized response in the plan compiled at that total (``label_unit_epsilon``).
The markers are the values at the current plan, given by the caller (never read off the curves)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from dpstudio.gui.charts.base import DASHED, GREEN, GREY, RED, SOLID, ChartBox
from dpstudio.gui.i18n import tr


class AttackChart(ChartBox):
    def __init__(self, parent=None):
        super().__init__(tr("How well could an attacker guess the label, using…"), parent)
        p = self.plot.getPlotItem()
        p.setLogMode(x=True, y=False)
        self.set_axis_title("bottom", tr("total ε of the release (log scale)"), tr("ε (log scale)"))
        self.set_axis_title("left", tr("attacker accuracy"), tr("accuracy"))
        p.setYRange(0.4, 1.0)
        self.uninformed = p.plot([], [], pen=pg.mkPen(GREY, width=2, style=Qt.PenStyle.DashLine))
        self.naive = p.plot([], [], pen=pg.mkPen(GREEN, width=2))
        self.informed = p.plot([], [], pen=pg.mkPen(RED, width=2.5))
        self.set_legend(
            [
                (GREY, DASHED, tr("public columns")),
                (GREEN, SOLID, tr("released label")),
                (RED, SOLID, tr("both combined")),
            ]
        )
        self.markers = p.plot(
            [],
            [],
            pen=None,
            symbol="o",
            symbolSize=8,
            symbolBrush=[pg.mkBrush(GREY), pg.mkBrush(GREEN), pg.mkBrush(RED)],
        )
        self.vline = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888", width=1, style=Qt.PenStyle.DotLine))
        p.addItem(self.vline)
        # its legend and caption wrap at narrow widths: their lines are reserved, so the layout
        # never squeezes the plot under its axes
        line = self.caption.fontMetrics().lineSpacing()
        self.caption.setMinimumHeight(3 * line)
        self.legend.setMinimumHeight(line)
        self.current = None  # (uninformed, naive, informed) at the current plan, as shown

    def set_curves(self, eps_grid, uninformed, naive, informed) -> None:
        eps_grid = np.asarray(eps_grid, float)
        ok = np.isfinite(eps_grid) & (eps_grid > 0)
        drawn = []
        for item, values in ((self.uninformed, uninformed), (self.naive, naive), (self.informed, informed)):
            y = np.asarray(values, float)[ok]
            item.setData(eps_grid[ok], y)
            drawn.append(y[np.isfinite(y)])
        y = np.concatenate(drawn) if drawn else np.array([])
        # accuracies: from the data, never cut (at most 0 .. 1), in steps of 0.1
        lo = min(0.4, np.floor(10 * float(np.min(y, initial=1.0))) / 10)
        hi = max(min(1.0, np.ceil(10 * float(np.max(y, initial=0.0))) / 10), lo + 0.1)
        p = self.plot.getPlotItem()
        p.setYRange(max(lo, 0.0), hi, padding=0.03)
        if ok.any():
            p.setXRange(np.log10(eps_grid[ok].min()), np.log10(eps_grid[ok].max()), padding=0.02)
        self.show_plot()

    def set_epsilon(self, eps: float, values) -> None:
        """Mark ``values`` (uninformed, naive, informed accuracy at the current plan) at total ``eps``."""
        self.current = None if values is None else tuple(float(v) for v in values)
        self.vline.setPos(np.log10(eps))
        if self.current is None:
            self.markers.setData([], [])
        else:
            self.markers.setData([eps] * 3, list(self.current))
