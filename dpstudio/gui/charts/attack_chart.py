"""Attacker accuracy against epsilon: uninformed / naive / informed (Sekiguchi 2024; docs/leakage.md §Label attackers).

The x axis is the release's total epsilon; each point is the leakage model read at the epsilon of
the label's randomized response in the plan compiled at that total (``label_unit_epsilon``).
The markers are the values at the current plan, given by the caller (never read off the curves)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from dpstudio.gui.charts.base import GREEN, GREY, RED, ChartBox
from dpstudio.gui.i18n import tr


class AttackChart(ChartBox):
    def __init__(self, parent=None):
        super().__init__(tr("How well could an attacker guess the label?"), parent)
        p = self.plot.getPlotItem()
        p.setLogMode(x=True, y=False)
        p.setLabel("bottom", tr("total ε of the release (log scale)"))
        p.setLabel("left", tr("attacker accuracy"))
        p.setYRange(0.4, 1.0)
        p.addLegend(offset=(10, 10))
        self.uninformed = p.plot(
            [], [], pen=pg.mkPen(GREY, width=2, style=Qt.PenStyle.DashLine), name=tr("uses public columns only")
        )
        self.naive = p.plot([], [], pen=pg.mkPen(GREEN, width=2), name=tr("uses the released label only"))
        self.informed = p.plot([], [], pen=pg.mkPen(RED, width=2.5), name=tr("uses both (best attacker)"))
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
        self.current = None  # (uninformed, naive, informed) at the current plan, as shown

    def set_curves(self, eps_grid, uninformed, naive, informed) -> None:
        eps_grid = np.asarray(eps_grid, float)
        ok = np.isfinite(eps_grid) & (eps_grid > 0)
        for item, values in ((self.uninformed, uninformed), (self.naive, naive), (self.informed, informed)):
            item.setData(eps_grid[ok], np.asarray(values, float)[ok])
        self.show_plot()

    def set_epsilon(self, eps: float, values) -> None:
        """Mark ``values`` (uninformed, naive, informed accuracy at the current plan) at total ``eps``."""
        self.current = None if values is None else tuple(float(v) for v in values)
        self.vline.setPos(np.log10(eps))
        if self.current is None:
            self.markers.setData([], [])
        else:
            self.markers.setData([eps] * 3, list(self.current))
