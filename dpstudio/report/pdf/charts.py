"""Report charts rendered offscreen with pyqtgraph to PNG bytes.

This and :mod:`dpstudio.report.pdf` are the only report modules that import Qt.  Charts are
drawn from a ``pg.PlotItem`` in a bare ``QGraphicsScene`` (no QWidget), so they can be made on
the GUI's worker thread as well as in the headless CLI (the ``offscreen`` platform is chosen
when there is no display).  pyqtgraph's SVG exporter crashes with PySide6 6.12: PNG only.
"""

from __future__ import annotations

import os
import sys

import numpy as np

_APP = None
PALETTE = ["#1f5fa8", "#c0392b", "#2e8b57", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#b7950b"]


def qt_available() -> bool:
    try:
        import pyqtgraph  # noqa: F401 - imported only to probe that it loads
        from PySide6 import QtGui  # noqa: F401 - imported only to probe that Qt's libraries load
    except Exception:  # ImportError, or Qt libraries missing on the system
        return False
    return True


def ensure_app():
    """A Qt application object (reusing the GUI's); offscreen when there is no display."""
    global _APP
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication.instance()
    if app is None:
        if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = _APP = QtWidgets.QApplication(["dpstudio-report"])
    return app


def _png_bytes(image) -> bytes:
    from PySide6 import QtCore

    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")
    return bytes(buf.data().data())  # QByteArray.data(): the bytes (its buffer protocol is not in the stubs)


def on_gui_thread(fn):
    """Run ``fn()`` on the Qt application's thread (widgets may only live there): directly when
    already on it, else through a blocking queued call (the GUI's event loop runs it)."""
    from PySide6 import QtCore

    app = ensure_app()
    if QtCore.QThread.currentThread() == app.thread():
        return fn()

    class _Runner(QtCore.QObject):
        call = QtCore.Signal(object)

        def __init__(self):
            super().__init__()
            self.call.connect(self.run, QtCore.Qt.ConnectionType.BlockingQueuedConnection)

        @QtCore.Slot(object)
        def run(self, box):
            try:
                box["result"] = box["fn"]()
            except BaseException as exc:  # re-raised on the calling thread
                box["error"] = exc

    runner = _Runner()
    runner.moveToThread(app.thread())
    box = {"fn": fn}
    runner.call.emit(box)
    runner.deleteLater()
    if "error" in box:
        raise box["error"]
    return box.get("result")


def error_floor_chart(curves: dict, *, width: int = 1000, height: int = 460) -> bytes | None:
    """Expected error of each column's mechanism (solid) and the floor no mechanism with the same
    (ε, δ) can beat (dashed), against the release's ε, with the chosen ε marked.

    ``curves``: :func:`dpstudio.report.model.error_floor_curves` -- every point read off the
    release plan compiled at that budget, relative to the column's range (numbers) or as the
    probability of a wrong category (categories), so columns share one axis.  Returns PNG bytes,
    or None when there is nothing to draw or Qt is not available.
    """
    if not curves or not curves.get("units") or not qt_available():
        return None
    return on_gui_thread(lambda: _error_floor_chart(curves, width, height))


def _error_floor_chart(curves, width, height) -> bytes:
    import pyqtgraph as pg
    from PySide6 import QtCore, QtGui

    from dpstudio.report.text import MECHANISM_SHORT

    ensure_app()
    grid = np.asarray(curves["epsilon"], dtype=float)
    chosen_eps = float(curves["chosen"])
    units = curves["units"]
    errors = np.array([u["error"] for u in units], dtype=float)
    floors = np.array([u["floor"] for u in units], dtype=float)
    at = int(np.argmin(np.abs(grid - chosen_eps)))
    lo, hi = float(grid[0]), float(grid[-1])

    widget = pg.PlotWidget(background="w")
    widget.resize(width, height)
    plot = widget.getPlotItem()
    plot.setGeometry(QtCore.QRectF(0, 0, width, height))
    plot.setLogMode(x=True, y=True)
    plot.showGrid(x=True, y=True, alpha=0.25)
    plot.getViewBox().setBackgroundColor("w")
    for axis in ("left", "bottom"):
        ax = plot.getAxis(axis)
        ax.setPen(pg.mkPen("#333"))
        ax.setTextPen(pg.mkPen("#222"))
        ax.setStyle(tickFont=QtGui.QFont("DejaVu Sans", 9))
    plot.setLabel("bottom", "ε of the release", color="#222", **{"font-size": "10pt"})
    plot.setLabel("left", "expected error (relative)", color="#222", **{"font-size": "10pt"})
    xt = [v for v in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if lo <= v <= hi]
    plot.getAxis("bottom").setTicks([[(np.log10(v), f"{v:g}") for v in xt], []])
    finite = np.concatenate([errors[errors > 0], floors[floors > 0]])
    y_lo = np.floor(np.log10(max(finite.min(), 1e-6))) if finite.size else -3
    y_hi = np.ceil(np.log10(finite.max())) if finite.size else 1
    plot.getAxis("left").setTicks([[(k, f"{10.0**k:g}") for k in range(int(y_lo), int(y_hi) + 1)], []])
    legend = plot.addLegend(
        offset=(-10, 10),
        labelTextColor="#222",
        brush=pg.mkBrush(255, 255, 255, 230),
        pen=pg.mkPen("#999"),
        labelTextSize="9pt",
    )
    for i, u in enumerate(units[: len(PALETTE)]):
        color = PALETTE[i % len(PALETTE)]
        e, f = errors[i], floors[i]
        ok = (e > 0) & np.isfinite(e)
        plot.plot(
            grid[ok],
            e[ok],
            pen=pg.mkPen(color, width=2.5),
            name=f"{u['name']} ({MECHANISM_SHORT.get(u['mechanism'], u['mechanism'])})",
        )
        okf = (f > 0) & np.isfinite(f)
        if u["mechanism"] != "rr":  # randomized response meets its floor exactly: one line suffices
            plot.plot(grid[okf], f[okf], pen=pg.mkPen(color, width=1.5, style=QtCore.Qt.PenStyle.DashLine))
        if ok[at]:  # the table's figure, at the chosen epsilon
            plot.plot(
                [grid[at]],
                [e[at]],
                pen=None,
                symbol="o",
                symbolSize=7,
                symbolPen=pg.mkPen(color),
                symbolBrush=pg.mkBrush(color),
            )
    line = pg.InfiniteLine(
        pos=np.log10(chosen_eps),
        angle=90,
        pen=pg.mkPen("#000", width=1.5, style=QtCore.Qt.PenStyle.DotLine),
        label=f"chosen ε = {chosen_eps:.3g}",
        labelOpts={"position": 0.08, "color": "#000", "fill": (255, 255, 255, 220)},
    )
    plot.addItem(line)
    legend.addItem(
        pg.PlotDataItem(pen=pg.mkPen("#555", width=1.5, style=QtCore.Qt.PenStyle.DashLine)),
        "floor (dashed): best any mechanism can do",
    )
    plot.getViewBox().setRange(xRange=(np.log10(lo), np.log10(hi)), yRange=(y_lo, y_hi), padding=0.02)

    from pyqtgraph.exporters import ImageExporter

    exporter = ImageExporter(plot)
    exporter.parameters()["width"] = width
    image = exporter.export(toBytes=True)
    data = _png_bytes(image)
    widget.close()
    widget.deleteLater()
    return data
