"""Expected error of one column's mechanism against the floor no epsilon-DP mechanism can beat.

The curves go through the plan's own figures at a few dozen budgets; the marker is the value of
the current plan, given by the caller (never read off the curve).  The y range is set from every
drawn value (the mechanism's curve, the floor and the marker); floor values below
:data:`Y_MIN` (errors under 0.01 % of the range) are not drawn, so no line leaves the plot."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from dpstudio.gui.charts.base import BLUE, BOX, DASHED, RED, SOLID, ChartBox
from dpstudio.gui.i18n import tr

Y_MIN = 1e-4  # errors under 0.01 % of the range are not drawn


class ErrorChart(ChartBox):
    def __init__(self, parent=None):
        super().__init__(tr("Expected error vs ε — and the best any mechanism could do"), parent)
        p = self.plot.getPlotItem()
        p.setLogMode(x=True, y=True)
        self.set_axis_title("bottom", tr("ε (privacy budget, log scale)"), tr("ε (log scale)"))
        self.set_axis_title("left", tr("expected error (log scale)"), tr("error"))
        self.floor = p.plot([], [], pen=pg.mkPen(RED, width=2, style=Qt.PenStyle.DashLine))
        self.zero = p.plot([], [], pen=pg.mkPen(None))
        self.fill = pg.FillBetweenItem(self.zero, self.floor, brush=pg.mkBrush(213, 94, 0, 40))
        p.addItem(self.fill)
        self.curve = p.plot([], [], pen=pg.mkPen(BLUE, width=2.5), antialias=True)
        self.marker = p.plot([], [], pen=None, symbol="o", symbolSize=10, symbolBrush=BLUE)
        self.vline = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888", width=1, style=Qt.PenStyle.DotLine))
        p.addItem(self.vline)
        self.set_legend(
            [
                (BLUE, SOLID, tr("chosen mechanism")),
                (RED, DASHED, tr("floor (best possible)")),
                ("#F2C9B0", BOX, tr("out of reach")),
            ]
        )
        self.legend.setToolTip(
            tr(
                "Floor: no differentially private mechanism with this ε can be more accurate "
                "(Jazbec 2018); the shaded area below it is out of reach for any mechanism."
            )
        )
        self.has_curves = False
        self._y_span = (Y_MIN, 1.0)

    def set_curves(self, eps_grid, err, floor, ylabel: str, short_label: str | None = None) -> None:
        """Draw the curves through the points where the plan has a value (NaN: none)."""
        eps_grid, err, floor = (np.asarray(a, dtype=float) for a in (eps_grid, err, floor))
        ok = np.isfinite(err) & (err >= Y_MIN)
        okf = np.isfinite(floor) & (floor >= Y_MIN)
        drawn = np.concatenate([err[ok], floor[okf]])
        low = max(float(np.min(drawn, initial=1.0)), Y_MIN)
        high = float(np.max(drawn, initial=low))
        # at least one decade, so the axis has a labelled tick at each end
        lo_dec, hi_dec = np.floor(np.log10(low)), np.ceil(np.log10(max(high, low * 10)))
        self._y_span = (10**lo_dec, 10**hi_dec)
        self.curve.setData(eps_grid[ok], err[ok])
        self.floor.setData(eps_grid[okf], floor[okf])
        self.zero.setData(eps_grid[okf], np.full(int(okf.sum()), 10**lo_dec))
        self.set_axis_title("left", ylabel + " " + tr("(log scale)"), short_label or tr("error"))
        p = self.plot.getPlotItem()
        p.setYRange(lo_dec, hi_dec, padding=0.02)
        x = eps_grid[ok | okf]
        if len(x):
            p.setXRange(np.log10(x.min()), np.log10(x.max()), padding=0.02)
        self.has_curves = True
        self.show_plot()

    def set_epsilon(self, eps: float, value: float | None) -> None:
        """Move the marker to ``value``: the current plan's figure at ``eps`` (None: no marker)."""
        self.vline.setPos(np.log10(eps))
        if value is None or not (np.isfinite(value) and value > 0):
            self.marker.setData([], [])
            return
        self.marker.setData([eps], [float(value)])
        lo, hi = self._y_span
        if not lo <= value <= hi:  # keep the marker inside the plot
            lo, hi = min(lo, 10 ** np.floor(np.log10(value))), max(hi, 10 ** np.ceil(np.log10(value)))
            self._y_span = (lo, hi)
            self.plot.getPlotItem().setYRange(np.log10(lo), np.log10(hi), padding=0.02)
