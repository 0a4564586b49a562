"""Save a PNG of every wizard step on the demo data: ``python -m dpstudio.gui.screenshots OUTDIR``.

Runs offscreen-friendly (``QT_QPA_PLATFORM=offscreen``); settings and the ledger go to a
temporary folder so screenshots never touch the user's real budget.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def _wait(app, cond, timeout=60.0):
    t0 = time.monotonic()
    while not cond():
        app.processEvents()
        time.sleep(0.01)
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("timed out waiting for the GUI")
    for _ in range(5):
        app.processEvents()


def take(outdir: str, *, dark: bool = False) -> list[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="dpstudio-shots-"))
    os.environ.setdefault("DPSTUDIO_LEDGER", str(tmp / "ledger.sqlite"))
    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    from dpstudio.gui.app import create_application, create_main_window
    from dpstudio.gui.theme import apply_theme
    from dpstudio.resources import resource_path

    app = create_application()
    QSettings().setValue("appearance/theme", "dark" if dark else "light")
    apply_theme()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "_dark" if dark else ""
    win = create_main_window()
    win.resize(1360, 860)
    win.show()
    saved = []

    def shot(name):
        _wait(app, lambda: True)
        p = out / f"{name}{suffix}.png"
        win.grab().save(str(p))
        saved.append(p)

    shot("0_start")
    demo = resource_path("demo", "census_demo.csv")
    win.data_page.load(str(demo))
    _wait(app, lambda: win.session.has_data and not win.data_page.loading)
    win.go_to(0)
    shot("1_data")
    win.go_to(1)
    win.columns_page.select("income")
    shot("2_columns")
    win.go_to(2)
    shot("3_release")
    win.go_to(3)
    win.budget_page.preview.column_combo.setCurrentText("income")
    # the error curves are the plan's at a few dozen budgets, computed on a worker
    _wait(app, lambda: win.budget_page.preview._curve_worker is None)
    shot("4_budget")
    # a label release, to show the attacker chart
    from dpstudio.gui.wizard.edits import set_release_type, set_role

    recipe = win.session.recipe
    win.session.update(lambda r: set_role(set_release_type(r, "label"), "employed", "label"))
    _wait(app, lambda: win.budget_page.preview._leak_worker is None, timeout=60)
    _wait(app, lambda: win.budget_page.preview._curve_worker is None)
    shot("4b_budget_label")
    # synthetic data: noise-to-signal ratio and a quick trial fit (columns without a domain left out)
    win.session.set_recipe(recipe)
    win.session.update(lambda r: set_release_type(r, "synthetic"))
    for c in win.session.recipe.columns:
        if c.role not in ("identifier", "ignore") and c.domain is None:
            win.session.update(lambda r, n=c.name: set_role(r, n, "ignore"))
    win.go_to(3)
    panel = win.budget_page.preview
    if panel.start_trial() is not None:
        _wait(app, lambda: panel.trial_worker is None, timeout=120)
    panel.column_combo.setCurrentText("income")
    shot("4c_budget_synthetic")
    win.session.set_recipe(recipe)
    win.session.update(lambda r: set_release_type(r, "model"))
    for c in win.session.recipe.columns:
        if c.role not in ("identifier", "ignore", "label") and c.domain is None:
            win.session.update(lambda r, n=c.name: set_role(r, n, "ignore"))
    win.go_to(2)
    shot("3b_release_model")
    win.session.set_recipe(recipe)
    win.go_to(4)
    shot("5_review")
    win.session.set_targets(
        output_path=str(tmp / "census_demo_dp.csv"), report_path=str(tmp / "census_demo_dp_report.html")
    )
    win.go_to(5)
    shot("6_export")
    win.export_page.confirm_release = lambda _t: True
    if win.export_page.start_release() is not None:
        _wait(app, lambda: win.export_page.worker is None, timeout=120)
        for w in app.topLevelWidgets():  # an error dialog, if the release failed
            if w.isVisible() and w is not win and w.objectName() == "errorBox":
                w.grab().save(str(out / f"6c_export_error{suffix}.png"))
    shot("6b_export_done")
    win.export_page.confirm_release = win.export_page._ask_confirm
    win.close()
    return saved


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outdir = argv[0] if argv else "screenshots"
    for p in take(outdir):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
