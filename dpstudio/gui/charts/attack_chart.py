"""Attacker accuracy against epsilon: uninformed / naive / informed (BRIEF section 4)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from dpstudio.gui.charts.base import GREEN, GREY, RED, ChartBox
from dpstudio.gui.i18n import tr


def three_curves(result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Accept the leakage model's answer as a dict, an object with attributes, or a 3-tuple."""
    keys = ("uninformed", "naive", "informed")
    if isinstance(result, dict) and isinstance(result.get("accuracy"), dict):
        result = result["accuracy"]
    if isinstance(result, dict):
        return tuple(np.asarray(result[k], dtype=float) for k in keys)
    if all(hasattr(result, k) for k in keys):
        return tuple(np.asarray(getattr(result, k), dtype=float) for k in keys)
    a, b, c = result
    return np.asarray(a, float), np.asarray(b, float), np.asarray(c, float)


class AttackChart(ChartBox):
    def __init__(self, parent=None):
        super().__init__(tr("How well could an attacker guess the label?"), parent)
        p = self.plot.getPlotItem()
        p.setLogMode(x=True, y=False)
        p.setLabel("bottom", tr("ε (log scale)"))
        p.setLabel("left", tr("attacker accuracy"))
        p.setYRange(0.4, 1.0)
        p.addLegend(offset=(10, 10))
        self.uninformed = p.plot([], [], pen=pg.mkPen(GREY, width=2, style=Qt.PenStyle.DashLine),
                                 name=tr("uses public columns only"))
        self.naive = p.plot([], [], pen=pg.mkPen(GREEN, width=2), name=tr("uses the released label only"))
        self.informed = p.plot([], [], pen=pg.mkPen(RED, width=2.5), name=tr("uses both (best attacker)"))
        self.vline = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888", width=1, style=Qt.PenStyle.DotLine))
        p.addItem(self.vline)
        self._grid = None
        self._curves = None

    def set_curves(self, eps_grid, uninformed, naive, informed) -> None:
        self._grid = np.asarray(eps_grid, float)
        self._curves = (np.asarray(uninformed, float), np.asarray(naive, float), np.asarray(informed, float))
        self.uninformed.setData(eps_grid, uninformed)
        self.naive.setData(eps_grid, naive)
        self.informed.setData(eps_grid, informed)
        self.show_plot()

    def values_at(self, eps: float):
        if self._grid is None:
            return None
        le = np.log(eps)
        return tuple(float(np.interp(le, np.log(self._grid), c)) for c in self._curves)

    def set_epsilon(self, eps: float):
        if self._grid is None or not self.showing_plot:
            return None
        self.vline.setPos(np.log10(eps))
        return self.values_at(eps)
