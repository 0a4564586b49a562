"""The GUI thread keeps running while engine work runs on a worker; cancel is prompt and clean."""

from __future__ import annotations

import queue
import threading
import time

import numpy as np
from PySide6.QtCore import QTimer

from dpstudio.export import atomic_path  # imported up front: a first import inside the job takes seconds
from dpstudio.gui.workers import TaskRunner


def job_needing_the_gui_thread(rounds, *, progress, cancel):
    """Engine-like CPU work that can only finish if the GUI thread keeps running: at each round
    it waits for a tick that a QTimer on the GUI thread sends.  If the job ran on the GUI thread,
    or starved it, no tick would come (a deadlock, caught by the wait's bound), so the assertion
    is about ordering, not about how fast this machine is."""
    rng = np.random.default_rng(0)
    data = rng.random(200_000)
    for i in range(rounds):
        cancel.check()
        np.sort(data)  # releases the GIL
        sum(j * j for j in range(2_000))  # holds it briefly, as engine glue code does
        if not TICKS.get(timeout=30):
            return "no tick"
        progress((i + 1) / rounds, "working")
    return ("done", threading.get_ident())


def endless_writing_job(target, *, progress, cancel):
    """Writes through the atomic writer, chunk after chunk, until it is cancelled: it cannot
    finish by itself, so the test needs no timing to know the cancel is what stopped it."""
    with atomic_path(target, cancel=cancel) as tmp:
        with open(tmp, "w") as fh:
            i = 0
            while True:
                cancel.check()
                fh.write("x" * 10_000 + "\n")
                i += 1
                if i == 10:
                    STARTED.set()
                progress(0.5, "writing")


TICKS: queue.Queue[bool] = queue.Queue()
STARTED = threading.Event()


def test_worker_runs_while_the_gui_thread_keeps_serving_events(qtbot):
    runner = TaskRunner()
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: TICKS.put(True))
    progress = []
    done = []
    timer.start()
    runner.start(job_needing_the_gui_thread, 50, on_finished=done.append, on_progress=lambda f, m: progress.append(f))
    qtbot.waitUntil(lambda: bool(done), timeout=120000)
    timer.stop()
    status, thread = done[0]
    assert status == "done"
    assert thread != threading.get_ident()  # the work ran off the GUI thread
    assert progress and progress[-1] == 1.0


def test_cancel_stops_the_job_and_leaves_no_file(qtbot, tmp_path):
    runner = TaskRunner()
    target = tmp_path / "out.csv"
    outcome = []
    STARTED.clear()
    w = runner.start(
        endless_writing_job,
        target,
        on_cancelled=lambda: outcome.append("cancelled"),
        on_finished=lambda r: outcome.append("finished"),
        on_failed=lambda *a: outcome.append("failed"),
    )
    assert STARTED.wait(60)
    assert w.running
    w.cancel()
    qtbot.waitUntil(lambda: bool(outcome), timeout=120000)
    assert outcome == ["cancelled"]
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # not even the temporary file


def test_cancelling_a_release_from_the_export_page(qtbot, loaded_demo, monkeypatch):
    """Cancel during a release, before its commit: no output, nothing spent.  The release is
    held at its first progress report after the budget reservation until the page has asked
    to cancel, so the cancel always lands in that window, however fast or slow the machine."""
    import threading as _th

    import dpstudio.gui.wizard.export_page as ep

    win = loaded_demo
    page = win.export_page
    out = __import__("pathlib").Path(win.session.output_path)
    held = _th.Event()

    def held_release(recipe, output_path, report_path, variant, *, progress, cancel, **kwargs):
        def holding_progress(f, m=""):
            if f >= 0.2 and not held.is_set():  # inside the run: the budget is reserved
                held.set()
                deadline = time.monotonic() + 60  # a bound, not a timing assertion
                while not cancel.cancelled and time.monotonic() < deadline:
                    time.sleep(0.001)
            progress(f, m)

        return real(recipe, output_path, None, variant, progress=holding_progress, cancel=cancel, **kwargs)

    real = ep.run_release
    monkeypatch.setattr(ep, "run_release", held_release)
    win.go_to(5)
    page.confirm_release = lambda text: True
    page.start_release()
    qtbot.waitUntil(held.is_set, timeout=120000)
    page.cancel()
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)
    assert page.result is None and "Cancelled" in page.progress_text.text()
    assert not out.exists()
    assert not list(out.parent.glob("*.dpstmp"))
    from dpstudio.ledger import Ledger

    assert Ledger().summary(win.session.loaded.sha256)["releases"] == 0
