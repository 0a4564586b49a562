"""The export page offers the report variants the engine has, and after the point of no return
(data written, spend recorded) it says so - a failing report or a late Cancel never turns into
"nothing was written or spent"."""

from __future__ import annotations

import errno
from pathlib import Path

import pandas as pd

from tests.gui.conftest import load


def _ready(qtbot, window, tmp_path):
    from dpstudio.recipe.model import Domain

    d = tmp_path / "data"
    d.mkdir()
    pd.DataFrame({"age": list(range(20, 80)) * 4, "sex": ["f", "m"] * 120}).to_csv(d / "in.csv", index=False)
    load(qtbot, window, d / "in.csv")
    window.session.update(
        lambda r: r.with_column("age", role="sensitive", domain=Domain("numeric", low=0, high=120)).with_column(
            "sex", role="public"
        )
    )
    window.go_to(5)
    page = window.export_page
    page.confirm_release = lambda text: True
    window.session.set_targets(output_path=str(d / "out.csv"), report_path=str(d / "rep.html"))
    return d, page


def _run(qtbot, page):
    assert page.start_release() is not None
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)


def _spent(window) -> int:
    from dpstudio.ledger import Ledger

    return Ledger().summary(window.session.loaded.sha256)["releases"]


def test_the_variants_are_the_engines_and_external_works(qtbot, window, tmp_path):
    from dpstudio.report import VARIANTS

    d, page = _ready(qtbot, window, tmp_path)
    keys = [page.variant.itemData(i) for i in range(page.variant.count())]
    assert tuple(keys) == VARIANTS
    assert "safe to publish" in page.variant.itemText(keys.index("external"))
    page.variant.setCurrentIndex(keys.index("external"))
    _run(qtbot, page)
    assert page.last_error is None, page.last_error
    assert page.result.report_path == str(d / "rep.html")
    html = (d / "rep.html").read_text(encoding="utf-8")
    assert "Residual risk estimates" not in html  # the internal-only section
    assert "Report: <b>" in page.result_label.text()


def test_a_report_failure_after_the_commit_says_written_and_recorded(qtbot, window, tmp_path, monkeypatch):
    import dpstudio.report as report

    def full_disk(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", "rep.html")

    monkeypatch.setattr(report, "write_report", full_disk)
    d, page = _ready(qtbot, window, tmp_path)
    _run(qtbot, page)
    assert page.result is not None and page.result.committed
    assert (d / "out.csv").is_file() and _spent(window) == 1
    status = page.progress_text.text() + page.result_label.text()
    assert "nothing was written" not in status
    assert "the data was written to" in status and "recorded in the ledger" in status, status
    assert "The report failed" in page.result_label.text() and "No space left" in page.result_label.text()
    assert not page.open_report_button.isEnabled()


def test_cancel_after_the_commit_is_reported_as_a_final_release(qtbot, window, tmp_path, monkeypatch):
    import dpstudio.report as report

    d, page = _ready(qtbot, window, tmp_path)
    real = report.write_report

    def press_cancel_then_write(*a, **k):
        page.worker.cancel()  # the user presses Cancel during the report phase
        return real(*a, **k)

    monkeypatch.setattr(report, "write_report", press_cancel_then_write)
    _run(qtbot, page)
    assert page.result is not None and page.result.committed
    assert "nothing was written" not in page.progress_text.text()
    assert "Cancel was pressed after the release was final" in page.result_label.text()
    assert Path(d / "rep.html").is_file() and (d / "out.csv").is_file() and _spent(window) == 1


def test_report_charts_run_on_the_gui_thread_through_one_dispatcher_made_there(qtbot):
    """A worker thread hands chart drawing to the application's thread through the dispatcher the
    GUI made on that thread at start (a runner made on the worker and moved over deadlocked once
    with the GUI thread disconnecting a dying object: a release with a PDF report hung)."""
    import threading

    from PySide6.QtWidgets import QApplication

    from dpstudio.report.pdf import charts

    assert charts._DISPATCHER is not None and charts._DISPATCHER.thread() == QApplication.instance().thread()
    main_ident, seen, errors = threading.get_ident(), {}, []

    def worker():
        try:
            seen["ran_on"] = charts.on_gui_thread(threading.get_ident)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    qtbot.waitUntil(lambda: not t.is_alive(), timeout=30000)
    assert not errors and seen["ran_on"] == main_ident
    # an application made without it: a user's error in words (a RuntimeError's text is withheld)
    from dpstudio.errors import UserError

    saved, charts._DISPATCHER = charts._DISPATCHER, None
    try:
        t = threading.Thread(target=worker)
        t.start()
        qtbot.waitUntil(lambda: not t.is_alive(), timeout=30000)
    finally:
        charts._DISPATCHER = saved
    assert len(errors) == 1 and isinstance(errors[0], UserError) and "install_dispatcher" in str(errors[0])
