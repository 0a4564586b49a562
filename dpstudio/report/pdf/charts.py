"""Report charts rendered offscreen with pyqtgraph to PNG bytes.

This and :mod:`dpstudio.report.pdf` are the only report modules that import Qt.  Charts are
drawn on the Qt application's thread (:func:`on_gui_thread`: a worker thread of the GUI hands
the drawing over), in the headless CLI too (the ``offscreen`` platform is chosen when there is
no display).  A chart is laid out at its printed size (``LOGICAL_WIDTH`` layout pixels, fonts in
the report's sizes) and exported scaled up, so its text prints at the size of the report's
notes; its legend is painted below the plot, never over a curve.  pyqtgraph's SVG exporter
crashes with PySide6 6.12: PNG only.
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


#: the object through which worker threads run chart drawing on the application's thread: made
#: once, on that thread (:func:`install_dispatcher`).  A runner made on the worker and moved
#: there (moveToThread holds the GIL while it waits for Qt's object locks) deadlocked with the
#: GUI thread disconnecting a dying object's signals (it holds such a lock and waits for the
#: GIL): a release with a PDF report hung for good, once in a CI run.
_DISPATCHER = None


def _dispatcher_class():
    from PySide6 import QtCore

    class _Dispatcher(QtCore.QObject):
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

    return _Dispatcher


def install_dispatcher() -> None:
    """Make the chart dispatcher on the calling thread, which must be the Qt application's (the
    GUI calls this when it creates its application); a no-op elsewhere or when it exists."""
    global _DISPATCHER
    from PySide6 import QtCore, QtWidgets

    app = QtWidgets.QApplication.instance()
    if _DISPATCHER is None and app is not None and QtCore.QThread.currentThread() == app.thread():
        _DISPATCHER = _dispatcher_class()()


def on_gui_thread(fn):
    """Run ``fn()`` on the Qt application's thread (widgets may only live there): directly when
    already on it, else through a blocking queued call to the dispatcher made on that thread (the
    GUI's event loop runs it)."""
    from PySide6 import QtCore

    app = ensure_app()
    if QtCore.QThread.currentThread() == app.thread():
        return fn()
    if _DISPATCHER is None:
        from dpstudio.errors import UserError

        # said in words (a RuntimeError's text is withheld from the user as an internal error's)
        raise UserError(
            "the PDF report's charts are drawn on the Qt application's thread, and this process "
            "made its application without dpstudio's chart dispatcher "
            "(dpstudio.report.pdf.charts.install_dispatcher on that thread)"
        )
    box = {"fn": fn}
    _DISPATCHER.call.emit(box)
    if "error" in box:
        raise box["error"]
    return box.get("result")


LOGICAL_WIDTH = 680  # the chart's size on the page, in layout pixels (96 per inch): fonts are sized for it
LOGICAL_PLOT_HEIGHT = 300


def error_floor_chart(curves: dict, *, width: int = 1360, height: int | None = None) -> bytes | None:
    """Expected error of each column's mechanism (solid) and the floor no mechanism with the same
    (ε, δ) can beat (dashed), against the release's ε, with the chosen ε marked.

    ``curves``: :func:`dpstudio.report.model.error_floor_curves` -- every point read off the
    release plan compiled at that budget, relative to the column's range (numbers) or as the
    probability of a wrong category (categories), so columns share one axis.  Columns whose
    curves coincide (the same mechanism and share of the budget) are drawn as one line, named
    together in the legend, which sits below the plot (it never covers a curve).  The image is
    ``width`` pixels wide (drawn at the page's size and scaled up, so its text prints at the
    report's sizes); ``height`` is ignored (the height follows the legend).  Returns PNG bytes,
    or None when there is nothing to draw or Qt is not available.
    """
    del height
    if not curves or not curves.get("units") or not qt_available():
        return None
    return on_gui_thread(lambda: _error_floor_chart(curves, int(width)))


def _same_line(a: np.ndarray, b: np.ndarray, tol_decades: float) -> bool:
    """Two curves a log axis would draw as one line: the same points missing, and everywhere
    else less than ``tol_decades`` apart."""
    ok_a, ok_b = np.isfinite(a) & (a > 0), np.isfinite(b) & (b > 0)
    if a.shape != b.shape or not np.array_equal(ok_a, ok_b):
        return False
    return bool(np.all(np.abs(np.log10(a[ok_a]) - np.log10(b[ok_b])) <= tol_decades))


def _groups(curves, tol_decades: float = 0.01) -> list[dict]:
    """Units with the same mechanism whose error and floor curves coincide on the chart (the
    same share of the budget: one line on a log axis, the last drawn hiding the others) are
    merged into one line named after all of them."""
    out: list[dict] = []
    for u in curves["units"]:
        err = np.asarray(u["error"], dtype=float)
        flo = np.asarray(u["floor"], dtype=float)
        for g in out:
            if (
                g["mechanism"] == u["mechanism"]
                and _same_line(err, g["error"], tol_decades)
                and _same_line(flo, g["floor"], tol_decades)
            ):
                g["names"].append(str(u["name"]))
                break
        else:
            out.append({"names": [str(u["name"])], "mechanism": u["mechanism"], "error": err, "floor": flo})
    return out


def _legend_label(names: list[str], mechanism: str) -> str:
    return ", ".join(names) + f" ({mechanism})"


def _clip_below(x: np.ndarray, y: np.ndarray, bottom: float) -> tuple[np.ndarray, np.ndarray]:
    """The curve (log-log) cut where it leaves the axis at ``bottom``: points below it dropped,
    the crossing added on the axis, runs separated by NaN (so no line is drawn outside)."""
    xs: list[float] = []
    ys: list[float] = []
    ok = np.isfinite(y) & (y > 0)
    lx = np.log10(x)
    for i in range(len(x)):
        inside = bool(ok[i] and y[i] >= bottom)
        if i and ok[i] and ok[i - 1]:
            was = bool(y[i - 1] >= bottom)
            if was != inside:  # the segment crosses the bottom: add the crossing point
                ly0, ly1, lb = np.log10(y[i - 1]), np.log10(y[i]), np.log10(bottom)
                t = (lb - ly0) / (ly1 - ly0)
                xs.append(float(10 ** (lx[i - 1] + t * (lx[i] - lx[i - 1]))))
                ys.append(bottom)
                if not inside:
                    xs.append(float(x[i]))
                    ys.append(np.nan)
        if inside:
            xs.append(float(x[i]))
            ys.append(float(y[i]))
        elif xs and not np.isnan(ys[-1]):
            xs.append(float(x[i]))
            ys.append(np.nan)
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def _pct_tick(k: int) -> str:
    """10**k as a percentage with exactly the digits it needs: 0.01 %, 1 %, 1,000 %."""
    return f"{100 * 10.0**k:,.{max(0, -k - 2)}f} %"


def _error_floor_chart(curves, width) -> bytes:
    import pyqtgraph as pg
    from PySide6 import QtCore, QtGui

    from dpstudio.report.text import MECHANISM_SHORT

    ensure_app()
    px = width / LOGICAL_WIDTH  # lines are drawn in output pixels: widths scale with the image
    grid = np.asarray(curves["epsilon"], dtype=float)
    chosen_eps = float(curves["chosen"])
    at = int(np.argmin(np.abs(grid - chosen_eps)))
    lo, hi = float(grid[0]), float(grid[-1])

    # the y range: whole decades around every error and floor, down to 0.0001 % at the lowest
    values = np.concatenate([np.asarray(u[k], dtype=float) for u in curves["units"] for k in ("error", "floor")])
    values = values[np.isfinite(values) & (values > 0)]
    y_floor = -6
    y_lo = int(np.floor(np.log10(values.min()))) if values.size else -3
    y_lo = max(y_lo, y_floor)
    y_hi = int(np.ceil(np.log10(values.max()))) if values.size else 1
    y_hi = max(y_hi, y_lo + 1)
    # curves closer than about 2 pixels of the plot are one line
    groups = _groups(curves, tol_decades=0.01 * (y_hi - y_lo))

    tick_font = QtGui.QFont("DejaVu Sans")
    tick_font.setPixelSize(11)
    label_css = {"font-size": "12px", "font-family": "DejaVu Sans"}
    view = pg.GraphicsLayoutWidget()
    view.setBackground("w")
    view.resize(LOGICAL_WIDTH, LOGICAL_PLOT_HEIGHT)
    layout = view.ci
    layout.setContentsMargins(2, 4, 10, 2)
    plot = layout.addPlot(row=0, col=0)
    plot.setLogMode(x=True, y=True)
    plot.showGrid(x=True, y=True, alpha=0.18)
    plot.getViewBox().setBackgroundColor("w")
    plot.getViewBox().setMouseEnabled(False, False)
    plot.hideButtons()
    step = 1 if y_hi - y_lo <= 8 else 2  # every decade labelled, or every other one when there are many
    y_ticks = [(k, _pct_tick(k)) for k in range(y_lo, y_hi + 1) if (k - y_lo) % step == 0]
    y_minor = [(k, "") for k in range(y_lo, y_hi + 1) if (k - y_lo) % step]
    metrics = QtGui.QFontMetrics(tick_font)
    tick_w = max(metrics.horizontalAdvance(t) for _, t in y_ticks)
    for axis in ("left", "bottom"):
        ax = plot.getAxis(axis)
        ax.setPen(pg.mkPen("#333", width=px))
        ax.setTextPen(pg.mkPen("#222"))
        ax.setStyle(tickFont=tick_font, tickTextOffset=4, autoExpandTextSpace=True, textFillLimits=[(0, 0.95)])
    # room for the longest tick label and the axis title beside it: neither is clipped
    plot.getAxis("left").setWidth(tick_w + 8 + 2 * 16)
    plot.getAxis("bottom").setHeight(metrics.height() + 6 + 22)
    plot.setLabel("bottom", f"ε of the release (dotted line: the chosen ε = {chosen_eps:g})", **label_css)
    plot.setLabel("left", "expected error (% of range or % wrong)", **label_css)
    xt = [v for v in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if lo <= v <= hi]
    plot.getAxis("bottom").setTicks([[(float(np.log10(v)), f"{v:g}") for v in xt], []])
    plot.getAxis("left").setTicks([y_ticks, y_minor])
    entries: list[tuple[str, object, str]] = []  # (colour, pen style, text) of the legend below
    dashed = False  # a floor is drawn (dashed)
    bottom = 10.0**y_lo
    for i, g in enumerate(groups):
        color = PALETTE[i % len(PALETTE)]
        style = QtCore.Qt.PenStyle.SolidLine if i < len(PALETTE) else QtCore.Qt.PenStyle.DashDotLine
        e, f = g["error"], g["floor"]
        ok = np.isfinite(e) & (e >= bottom)
        mech = MECHANISM_SHORT.get(g["mechanism"], g["mechanism"])
        x, y = _clip_below(grid, e, bottom)  # never drawn below the axis
        plot.plot(x, y, pen=pg.mkPen(color, width=2.2 * px, style=style), connect="finite")
        at_floor = g["mechanism"] == "rr"  # randomized response meets its floor exactly: one line suffices
        entries.append((color, style, _legend_label(g["names"], mech + (", at its floor" if at_floor else ""))))
        if not at_floor:
            dashed = True
            x, y = _clip_below(grid, f, bottom)
            plot.plot(x, y, pen=pg.mkPen(color, width=1.3 * px, style=QtCore.Qt.PenStyle.DashLine), connect="finite")
        if ok[at]:  # the table's figure, at the chosen epsilon
            plot.plot(
                [grid[at]],
                [e[at]],
                pen=None,
                symbol="o",
                symbolSize=6,
                symbolPen=pg.mkPen(color),
                symbolBrush=pg.mkBrush(color),
            )
    plot.addItem(
        pg.InfiniteLine(
            pos=float(np.log10(chosen_eps)),
            angle=90,
            pen=pg.mkPen("#000", width=1.2 * px, style=QtCore.Qt.PenStyle.DotLine),
        )
    )
    if dashed:
        entries.append(
            (
                "#555",
                QtCore.Qt.PenStyle.DashLine,
                "dashed: the floor, the smallest error any mechanism with the same \u03b5 and \u03b4 can reach",
            )
        )
    # a little room beyond the outer decades and budgets, so their tick labels are drawn
    pad_x, pad_y = 0.06, 0.05 * (y_hi - y_lo)
    plot.getViewBox().setRange(
        xRange=(np.log10(lo) - pad_x, np.log10(hi) + pad_x), yRange=(y_lo - pad_y, y_hi + pad_y), padding=0.0
    )
    layout.setGeometry(QtCore.QRectF(0, 0, LOGICAL_WIDTH, LOGICAL_PLOT_HEIGHT))
    ensure_app().processEvents()

    from pyqtgraph.exporters import ImageExporter

    exporter = ImageExporter(layout)
    exporter.parameters()["width"] = int(width)
    image = exporter.export(toBytes=True)
    view.close()
    view.deleteLater()
    return _png_bytes(_with_legend(image, entries, image.width() / LOGICAL_WIDTH))


def _with_legend(plot_image, entries, scale: float):
    """The plot with its legend painted below it (outside the plot: it never covers a curve);
    long entries wrap."""
    from PySide6 import QtCore, QtGui

    font = QtGui.QFont("DejaVu Sans")
    font.setPixelSize(max(1, round(11 * scale)))
    metrics = QtGui.QFontMetricsF(font)
    width = plot_image.width()
    left, sample, gap = 48 * scale, 26 * scale, 8 * scale
    text_w = width - left - sample - gap - 10 * scale
    flags = int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.TextFlag.TextWordWrap)
    rects = [metrics.boundingRect(QtCore.QRectF(0, 0, text_w, 10_000), flags, text) for _, _, text in entries]
    spacing = 3 * scale
    height = int(plot_image.height() + 8 * scale + sum(r.height() + spacing for r in rects) + 6 * scale)
    out = QtGui.QImage(width, height, QtGui.QImage.Format.Format_ARGB32)
    out.fill(QtGui.QColor("white"))
    painter = QtGui.QPainter(out)
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        painter.drawImage(0, 0, plot_image)
        painter.setFont(font)
        y = plot_image.height() + 8 * scale
        for (color, style, text), rect in zip(entries, rects, strict=True):
            mid = y + metrics.height() / 2
            painter.setPen(QtGui.QPen(QtGui.QColor(color), 2.2 * scale, style))
            painter.drawLine(QtCore.QPointF(left, mid), QtCore.QPointF(left + sample, mid))
            painter.setPen(QtGui.QColor("#222"))
            painter.drawText(QtCore.QRectF(left + sample + gap, y, text_w, rect.height()), flags, text)
            y += rect.height() + spacing
    finally:
        painter.end()
    return out
