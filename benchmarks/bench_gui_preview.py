"""Budget-page redraw time on a 1,000,000-row table (offscreen).

Loads a generated 1,000,000-row table through the real loader, opens the budget step, then moves
the epsilon slider step by step; each step is timed from the slider change until every chart has
been recomputed and the page repainted (``QWidget.grab()``).  Prints JSON:
``{rows, redraw_ms_median, redraw_ms_p95}``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def make_table(path: Path, rows: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    pd.DataFrame(
        {
            "person_id": np.arange(rows),
            "age": rng.integers(18, 90, rows),
            "sex": rng.choice(["female", "male"], rows),
            "income": rng.lognormal(10, 1, rows).round(0),
            "education_level": rng.integers(1, 17, rows),
            "employed": rng.integers(0, 2, rows),
        }
    ).to_parquet(path)


def main(rows: int = 1_000_000, steps: int = 60) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="dpstudio-bench-"))
    os.environ["DPSTUDIO_LEDGER"] = str(tmp / "ledger.sqlite")
    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    from dpstudio.engine.progress import NEVER_CANCELLED
    from dpstudio.gui.app import create_application
    from dpstudio.gui.main_window import MainWindow
    from dpstudio.gui.session import load_for_session
    from dpstudio.gui.wizard.budget_page import eps_to_slider
    from dpstudio.gui.wizard.edits import set_domain
    from dpstudio.recipe.model import Domain

    path = tmp / "big.parquet"
    make_table(path, rows)
    app = create_application()
    win = MainWindow()
    win.resize(1360, 860)
    win.show()
    win.session.set_data(*load_for_session(path, progress=lambda *a: None, cancel=NEVER_CANCELLED))
    doms = {
        "income": Domain(kind="numeric", low=0, high=500_000),
        "education_level": Domain(kind="numeric", low=1, high=16),
        "employed": Domain(kind="categorical", categories=("0", "1")),
    }
    r = win.session.recipe
    for name, d in doms.items():
        if r.column(name).role not in ("identifier", "ignore", "public"):
            r = set_domain(r, name, d)
    win.session.set_recipe(r)
    assert win.go_to(3), win.session.problems()
    page = win.budget_page
    page.preview.column_combo.setCurrentText("income")
    t_end = time.monotonic() + 30
    while page.preview._sample is None and time.monotonic() < t_end:  # the sample is drawn on a worker
        app.processEvents()
        time.sleep(0.01)
    for _ in range(5):
        app.processEvents()
    page.grab()
    times = []
    positions = [eps_to_slider(e) for e in (0.05, 0.1, 0.3, 1, 3, 10)]
    for i in range(steps):
        pos = positions[i % len(positions)] + i // len(positions)
        t0 = time.perf_counter()
        page.slider.setValue(pos)
        app.processEvents()  # runs the queued updates and repaints every visible chart
        times.append(1000 * (time.perf_counter() - t0))
    times.sort()
    out = {
        "rows": int(win.session.schema.rows),
        "redraw_ms_median": round(times[len(times) // 2], 2),
        "redraw_ms_p95": round(times[int(0.95 * (len(times) - 1))], 2),
    }
    win.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)))
