"""Save a PNG of every wizard page for every release type, at two window sizes, and every page
of each release's PDF report: ``python -m dpstudio.gui.screenshots OUTDIR`` (``make screenshots``).

* ``OUTDIR/<W>x<H>/<type>_<n>_<page>.png``: the six wizard pages (and the export page once the
  release is done) of a record, semi-sensitive, label, synthetic, model and density release of
  the demo data, at 1280x820 and 1024x700;
* ``OUTDIR/report/<type>-<page>.png``: each page of the release's PDF report (``pdftoppm``;
  skipped with a message when it is missing).

Runs offscreen (``QT_QPA_PLATFORM=offscreen``) with the light theme; settings, preferences, the
ledger and every output go to a temporary folder, so screenshots never touch the user's real
budget.  Synthetic data uses MST (quick); the whole run takes a few minutes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

SIZES = ((1280, 820), (1024, 700))
RELEASE_TYPES = ("record", "semi-sensitive", "label", "synthetic", "model", "density")
PAGES = ("data", "columns", "release", "budget", "review", "export")
#: single shots beside the release types: ``budget-targets`` is the budget page's "Set targets"
#: mode on the record release, two targets solved (``OUTDIR/<W>x<H>/budget-targets.png``)
EXTRA_SHOTS = ("budget-targets",)


def _targets_shot(app, win, base, out: Path, sizes, suffix: str, shot) -> None:
    from dpstudio.recipe.model import Target

    win.session.set_recipe(base)
    win.go_to(3)
    page = win.budget_page
    page.set_mode(True)
    panel = page.targets
    panel.set_targets((Target("within", 20000.0, "income", 0.5), Target("keep", 0.8, "children")))
    if panel.start_find() is not None:
        _wait(app, lambda: panel.worker is None)
    for w, h in sizes:
        win.resize(w, h)
        shot(out / f"{w}x{h}" / f"budget-targets{suffix}.png")
    page.set_mode(False)


def _wait(app, cond, timeout=180.0):
    t0 = time.monotonic()
    while not cond():
        app.processEvents()
        time.sleep(0.01)
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("timed out waiting for the GUI")
    from PySide6.QtCore import QCoreApplication, QEvent

    for _ in range(5):
        app.processEvents()
        # widgets replaced with deleteLater (a table's cell widgets) go as in the running app's
        # event loop; without it they stay on screen at their old places in the pictures
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _isolate(tmp: Path) -> None:
    """Settings, preferences, ledger and outputs in ``tmp`` (never the user's own)."""
    os.environ["DPSTUDIO_LEDGER"] = str(tmp / "ledger.sqlite")
    os.environ["DPSTUDIO_PREFS"] = str(tmp / "preferences.json")
    os.environ["DPSTUDIO_OUTPUT_DIR"] = str(tmp / "outputs")
    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))


def recipe_for(base, rtype: str):
    """The demo recipe turned into a release of type ``rtype`` (columns the type cannot use left out)."""
    from dpstudio.gui.wizard.edits import set_release_type, set_role

    r = base
    if rtype == "record":
        return r
    if rtype == "label":  # it publishes every other column as it is: they are marked public
        for c in r.columns:
            if c.role == "sensitive":
                r = set_role(r, c.name, "public")
        return set_release_type(r, rtype)
    if rtype == "semi-sensitive":
        return set_release_type(r, rtype)
    if rtype == "synthetic":
        r = set_release_type(r, "synthetic")
        r = replace(r, release=replace(r.release, options=r.release.options.with_(method="aim")))
        for c in r.columns:  # a column without a public domain is left out of the quick demo
            if c.role not in ("identifier", "ignore") and c.domain is None:
                r = set_role(r, c.name, "ignore")
        return r
    if rtype == "model":
        r = set_release_type(r, "model")
        for c in r.columns:
            if c.role not in ("identifier", "ignore", "label") and (c.domain is None or c.type != "integer"):
                r = set_role(r, c.name, "ignore")
        return r
    if rtype == "density":
        for c in r.columns:
            if c.role not in ("identifier", "ignore") and (c.domain is None or c.type != "integer"):
                r = set_role(r, c.name, "ignore")
        for c in r.columns:
            if c.role == "public":
                r = set_role(r, c.name, "sensitive")
        return set_release_type(r, "density")
    raise ValueError(f"unknown release type {rtype!r}")


def _settle(app, win) -> None:
    """Wait until the budget page's workers (curves, attacker model, samples) are done."""
    panel = win.budget_page.preview
    _wait(
        app,
        lambda: panel._curve_worker is None and panel._leak_worker is None and panel._sample_worker is None,
    )


def take(outdir: str, *, dark: bool = False, types=RELEASE_TYPES, sizes=SIZES, report: bool = True) -> list[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="dpstudio-shots-"))
    _isolate(tmp)
    from PySide6.QtCore import QSettings

    from dpstudio import prefs
    from dpstudio.gui.app import create_application, create_main_window
    from dpstudio.gui.theme import apply_theme
    from dpstudio.resources import resource_path

    app = create_application()
    QSettings().setValue("appearance/theme", "dark" if dark else "light")
    apply_theme()
    if hasattr(prefs, "set_operator"):
        prefs.set_operator("A. Steward (screenshots)")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "_dark" if dark else ""
    win = create_main_window()
    win.resize(*sizes[0])
    win.show()
    saved: list[Path] = []

    def shot(path: Path) -> None:
        _settle(app, win)
        path.parent.mkdir(parents=True, exist_ok=True)
        win.grab().save(str(path))
        saved.append(path)

    demo = tmp / "census_demo.csv"  # a copy: the demo's recipe comes along, nothing is written beside the app
    shutil.copy(resource_path("demo", "census_demo.csv"), demo)
    recipe_file = resource_path("demo", "census_demo.recipe.json")
    if Path(recipe_file).exists():
        shutil.copy(recipe_file, tmp / "census_demo.recipe.json")
    (tmp / "outputs").mkdir()
    win.data_page.load(str(demo))
    _wait(app, lambda: win.session.has_data and not win.data_page.loading)
    base = win.session.recipe
    pdftoppm = shutil.which("pdftoppm")
    if report and pdftoppm is None:
        print("pdftoppm not found (install poppler-utils): report pages are not rendered", file=sys.stderr)

    for rtype in types:
        if rtype in EXTRA_SHOTS:
            _targets_shot(app, win, base, out, sizes, suffix, shot)
            continue
        if rtype == "label":
            # chosen over the demo's roles first: the columns marked sensitive, and the button
            # that publishes them as they are
            from dpstudio.gui.wizard.edits import set_release_type

            win.session.set_recipe(base)
            win.resize(*sizes[0])
            win.go_to(2)
            win.session.set_recipe(set_release_type(base, "label"))
            shot(out / f"{sizes[0][0]}x{sizes[0][1]}" / f"{rtype}_3_release_marked_sensitive{suffix}.png")
        win.session.set_recipe(recipe_for(base, rtype))
        if rtype == "synthetic":  # the quick trial fit, so the budget page shows its histogram
            win.go_to(3)
            panel = win.budget_page.preview
            if panel.start_trial() is not None:
                _wait(app, lambda panel=panel: panel.trial_worker is None)
        for w, h in sizes:
            win.resize(w, h)
            for n, page in enumerate(PAGES):
                if not win.go_to(n):
                    print(f"{rtype}: cannot reach the {page} page: {win.session.problems()}", file=sys.stderr)
                    break
                if page == "columns":
                    win.columns_page.select("income")
                shot(out / f"{w}x{h}" / f"{rtype}_{n + 1}_{page}{suffix}.png")
        # the release itself, with a PDF report
        stem = rtype.replace("-", "_")
        ext = ".json" if rtype in ("model", "density") else ".csv"
        win.session.set_targets(
            output_path=str(tmp / "outputs" / f"{stem}{ext}"), report_path=str(tmp / "outputs" / f"{stem}_report.pdf")
        )
        win.resize(*sizes[0])
        if not win.go_to(len(PAGES) - 1):
            continue
        ep = win.export_page
        ep.confirm_release = lambda _t: True
        if ep.start_release() is not None:
            _wait(app, lambda ep=ep: ep.worker is None, timeout=600)
        for tl in app.topLevelWidgets():  # an error dialog, if the release failed
            if tl.isVisible() and tl is not win and tl.objectName() == "errorBox":
                tl.grab().save(str(out / f"{rtype}_export_error{suffix}.png"))
                tl.close()
        for w, h in sizes:
            win.resize(w, h)
            shot(out / f"{w}x{h}" / f"{rtype}_{len(PAGES)}_export_done{suffix}.png")
        pdf = getattr(ep.result, "report_path", None)
        if ep.result is not None:
            # a changed setting after the release: the next one goes to new file names
            from dataclasses import replace

            win.resize(*sizes[0])
            win.session.update(lambda r: replace(r, budget=replace(r.budget, epsilon=r.budget.epsilon * 2)))
            ep.refresh_now()
            shot(out / f"{sizes[0][0]}x{sizes[0][1]}" / f"{rtype}_{len(PAGES)}_export_changed{suffix}.png")
            win.session.undo()
        ep.confirm_release = ep._ask_confirm
        if report and pdftoppm and pdf and Path(pdf).exists():
            (out / "report").mkdir(exist_ok=True)
            for old in (out / "report").glob(f"{rtype}-*.png"):
                old.unlink()
            subprocess.run([pdftoppm, "-png", "-r", "80", str(pdf), str(out / "report" / rtype)], check=True)
            saved.extend(sorted((out / "report").glob(f"{rtype}-*.png")))
        elif report and pdftoppm:
            print(f"{rtype}: no PDF report ({getattr(ep, 'last_error', None)})", file=sys.stderr)
    win.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return saved


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outdir = argv[0] if argv else "screenshots"
    types = tuple(argv[1].split(",")) if len(argv) > 1 else RELEASE_TYPES + EXTRA_SHOTS
    for p in take(outdir, types=types):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
