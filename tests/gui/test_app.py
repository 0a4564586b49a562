"""Start-up: the DPSTUDIO_EXIT_AFTER_MS smoke-test hook, and opening a file from the command line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from conftest import DEMO_CSV, REPO


def test_exit_after_ms_hook_quits_and_reports_first_window(tmp_path):
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        DPSTUDIO_EXIT_AFTER_MS="300",
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        DPSTUDIO_LEDGER=str(tmp_path / "ledger.sqlite"),
        HOME=str(tmp_path),
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "dpstudio", "gui"], env=env, cwd=str(REPO), capture_output=True, text=True, timeout=60
    )
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"^dpstudio: first window shown after (\d+\.\d{3}) s$", proc.stderr, re.M)
    assert m, proc.stderr
    shown = float(m.group(1))
    assert 0 < shown < took + 0.5  # measured from the process start, so below the wall time


def test_hook_is_off_without_the_variable(monkeypatch):
    from dpstudio.gui.app import exit_after_ms

    monkeypatch.delenv("DPSTUDIO_EXIT_AFTER_MS", raising=False)
    assert exit_after_ms() is None
    monkeypatch.setenv("DPSTUDIO_EXIT_AFTER_MS", "2000")
    assert exit_after_ms() == 2000
    monkeypatch.setenv("DPSTUDIO_EXIT_AFTER_MS", "soon")
    assert exit_after_ms() is None


SCRIPT = r"""
import os, sys, time
from PySide6.QtWidgets import QApplication
from dpstudio.gui.app import create_application, create_main_window
app = create_application()
win = create_main_window(sys.argv[1])
win.show()
t0 = time.monotonic()
while not (win.session.has_data and not win.data_page.loading and win.current_index == 1):
    app.processEvents()
    time.sleep(0.01)
    if time.monotonic() - t0 > 30:
        break
print("loaded", win.session.loaded.path if win.session.loaded is not None else None, win.current_index, flush=True)
win.close()
sys.stdout.flush()
os._exit(0)
"""


def test_gui_with_a_file_opens_it_loaded(tmp_path):
    """``dpstudio gui resources/demo/census_demo.csv`` (what ``make demo`` runs) opens the demo.

    In a child process: a second main window built at module level inside the pytest process
    made PySide abort while the interpreter was finalizing (see the report)."""
    import shutil

    d = tmp_path / "demo"
    d.mkdir()
    shutil.copy(DEMO_CSV, d / DEMO_CSV.name)
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        DPSTUDIO_LEDGER=str(tmp_path / "ledger.sqlite"),
        HOME=str(tmp_path),
    )
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(d / DEMO_CSV.name)],
        env=env,
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("loaded")][-1]
    assert line.split()[1].endswith(DEMO_CSV.name) and line.split()[2] == "1", line
