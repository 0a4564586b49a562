"""Entry script of the frozen dpstudio (PyInstaller, see packaging/dpstudio.spec).

The same binary is the CLI (``dpstudio --version``, ``dpstudio release ...``) and the desktop
app (``dpstudio`` / ``dpstudio gui FILE``): it simply calls :func:`dpstudio.cli.main`.
A binary named ``dpstudio-gui*`` (the windowed Windows executable) always opens the GUI, passing
its arguments as the file to open (what Explorer's "Open with" does).

Smoke-test / start-time hook: with ``DPSTUDIO_EXIT_AFTER_MS=N``, dpstudio.gui.app itself quits N ms
after the main window is first painted and prints ``dpstudio: first window shown after X s``.
On top of that the launcher prints, when the Qt event loop starts, one line

    dpstudio-startup: event-loop t=<unix time> windows=[<visible top-level window titles>]

so the smoke test can check which windows are up (e.g. no error dialog), and it quits the loop
N + 5000 ms after it started as a safety net (should the app's own hook not fire). Nothing
happens unless the variable is set (the CLI never imports Qt).
"""

from __future__ import annotations

import os
import sys
import time


def _install_exit_hook(ms: int) -> None:
    from PySide6 import QtCore, QtWidgets

    original_exec = QtWidgets.QApplication.exec

    def exec_with_timeout(*_args):
        app = QtWidgets.QApplication.instance()

        def report():
            titles = [w.windowTitle() or type(w).__name__ for w in app.topLevelWidgets() if w.isVisible()]
            print(f"dpstudio-startup: event-loop t={time.time():.3f} windows={titles!r}", file=sys.stderr, flush=True)

        QtCore.QTimer.singleShot(0, report)
        QtCore.QTimer.singleShot(ms + 5000, lambda: app.exit(0))  # safety net; the app quits first
        return original_exec()

    QtWidgets.QApplication.exec = exec_with_timeout


def main() -> int:
    import multiprocessing

    multiprocessing.freeze_support()  # no-op on Linux; needed for spawn on Windows/macOS
    ms = os.environ.get("DPSTUDIO_EXIT_AFTER_MS", "").strip()
    if ms:
        _install_exit_hook(int(ms))
    from dpstudio.cli import gui_entry
    from dpstudio.cli import main as cli_main

    exe = os.path.basename(sys.executable).lower()
    if exe.startswith("dpstudio-gui"):
        return gui_entry()
    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
