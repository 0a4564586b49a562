"""Start the desktop application: ``run_gui(path=None) -> int``.

``DPSTUDIO_EXIT_AFTER_MS=N`` (used by the packaging smoke test): quit N ms after the main
window is first shown, and print ``dpstudio: first window shown after X.XXX s`` to stderr,
measured from the start of the process (``/proc/self/stat`` when available, else from the
import of this module).
"""

from __future__ import annotations

import os
import sys
import time

_IMPORT_PERF = time.perf_counter()  # taken as early as possible (before Qt is imported)


def _process_age_at_import() -> float | None:
    """Seconds between the process start and the import of this module (Linux /proc), else None."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
        fields = stat[stat.rindex(")") + 2 :].split()
        start_ticks = int(fields[19])  # field 22 (starttime), counted after "pid (comm)"
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK") - (time.perf_counter() - _IMPORT_PERF)
        return age if 0 <= age < 3600 else None
    except (OSError, ValueError, IndexError, AttributeError):
        return None


_AGE_AT_IMPORT = _process_age_at_import()


def seconds_since_start() -> float:
    """Seconds since the process started (or, without /proc, since this module was imported)."""
    return (_AGE_AT_IMPORT or 0.0) + time.perf_counter() - _IMPORT_PERF


# Qt is imported after _IMPORT_PERF so that the start-up time measured includes loading it
from PySide6.QtCore import QCoreApplication, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QIcon  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from dpstudio.gui.theme import apply_theme, resource_file  # noqa: E402 - after the start-up timestamp

ORGANIZATION = "dpstudio"
APPLICATION = "dpstudio"


def create_application(argv=None) -> QApplication:
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QApplication(list(argv if argv is not None else sys.argv[:1]))
    if not isinstance(app, QApplication):
        raise RuntimeError(f"dpstudio needs a QApplication, but a {type(app).__name__} already exists")
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    app.setApplicationDisplayName("dpstudio")
    app.setStyle("Fusion")
    icon = resource_file("icons", "dpstudio.svg")
    if icon:
        app.setWindowIcon(QIcon(str(icon)))
    from dpstudio.gui.i18n import install_translator

    install_translator(app)
    from dpstudio.report.pdf.charts import install_dispatcher

    install_dispatcher()  # report charts drawn for a release running on a worker thread
    apply_theme()
    if not app.property("dpstudioSchemeHooked"):  # a Qt dynamic property: hook the scheme once per application
        QGuiApplication.styleHints().colorSchemeChanged.connect(lambda _s: apply_theme())
        app.setProperty("dpstudioSchemeHooked", True)
    return app


def create_main_window(path: str | None = None):
    from dpstudio.gui.main_window import MainWindow

    win = MainWindow()
    if path:
        win.data_page.load(str(path))
    return win


def exit_after_ms() -> int | None:
    """The ``DPSTUDIO_EXIT_AFTER_MS`` smoke-test hook (None when unset or not a number >= 0)."""
    raw = os.environ.get("DPSTUDIO_EXIT_AFTER_MS", "").strip()
    try:
        ms = int(float(raw)) if raw else None
    except ValueError:
        return None
    return ms if ms is not None and ms >= 0 else None


def install_exit_hook(win, ms: int, stream=None) -> None:
    """Report the first-window time once ``win`` has been shown, then quit ``ms`` later."""
    from PySide6.QtCore import QEvent, QObject, QTimer

    stream = stream if stream is not None else sys.stderr

    def shown():
        if getattr(win, "_dpstudio_first_shown", None) is not None:
            return
        win._dpstudio_first_shown = seconds_since_start()
        print(f"dpstudio: first window shown after {win._dpstudio_first_shown:.3f} s", file=stream, flush=True)

        def leave():
            win.close()  # cancels and waits for running workers
            QApplication.quit()

        QTimer.singleShot(ms, leave)

    class _FirstPaint(QObject):
        def eventFilter(self, obj, event):  # noqa: N802 - Qt override
            if event.type() in (QEvent.Type.Paint, QEvent.Type.Expose, QEvent.Type.UpdateRequest):
                shown()
            return False

    flt = _FirstPaint(win)
    win.installEventFilter(flt)
    win._dpstudio_exit_filter = flt
    QTimer.singleShot(3000, shown)  # fallback: a platform that never paints still exits


def run_gui(path: str | None = None) -> int:
    app = create_application()
    # Python's cyclic garbage collector runs in whichever thread happens to allocate; a cycle
    # holding Qt objects collected on a worker thread crashes Qt.  Collect on the GUI thread
    # only, from a timer (pyqtgraph's collector; the tests do the same per test).
    from pyqtgraph.util.garbage_collector import GarbageCollector

    app._dpstudio_gc = GarbageCollector(interval=1.0)  # type: ignore[attr-defined]
    win = create_main_window(path)
    ms = exit_after_ms()
    if ms is not None:
        install_exit_hook(win, ms)
    win.show()
    return app.exec()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_gui(sys.argv[1] if len(sys.argv) > 1 else None))
