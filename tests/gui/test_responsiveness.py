"""The GUI thread keeps running while engine work runs on a worker; cancel is prompt and clean."""
from __future__ import annotations

import time

import numpy as np

from PySide6.QtCore import QTimer

from dpstudio.export import atomic_path  # imported up front: a first import inside the job takes seconds
from dpstudio.gui.workers import TaskRunner


def slow_job(seconds, *, progress, cancel):
    """Engine-like CPU work: numpy kernels (which release the GIL) between short Python slices
    that hold it, reporting progress every step."""
    rng = np.random.default_rng(0)
    data = rng.random(200_000)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        cancel.check()
        np.sort(data)  # releases the GIL
        sum(i * i for i in range(2_000))  # holds it briefly, as engine glue code does
        progress((time.monotonic() - t0) / seconds, "working")
    return "done"


def writing_job(target, *, progress, cancel, chunks=2000):
    """Writes a large file through the atomic writer, polling cancel between chunks."""
    with atomic_path(target, cancel=cancel) as tmp:
        with open(tmp, "w") as fh:
            for i in range(chunks):
                cancel.check()
                fh.write("x" * 10_000 + "\n")
                time.sleep(0.005)
                progress(i / chunks, "writing")
    return str(target)


def test_timer_keeps_firing_during_a_10_second_job(qtbot):
    runner = TaskRunner()
    ticks = []
    timer = QTimer()
    timer.setInterval(50)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    progress = []
    done = []
    timer.start()
    runner.start(slow_job, 10.0, on_finished=done.append, on_progress=lambda f, m: progress.append(f))
    qtbot.waitUntil(lambda: bool(done), timeout=20000)
    timer.stop()
    assert done == ["done"]
    assert len(ticks) >= 150, len(ticks)
    assert max(b - a for a, b in zip(ticks, ticks[1:])) < 0.5  # never frozen for long
    assert progress and progress[-1] > 0.9


def test_cancel_stops_within_half_a_second_and_leaves_no_file(qtbot, tmp_path):
    runner = TaskRunner()
    target = tmp_path / "out.csv"
    cancelled = []
    w = runner.start(writing_job, target, on_cancelled=lambda: cancelled.append(time.monotonic()),
                     on_finished=lambda r: cancelled.append("finished"))
    qtbot.wait(400)
    assert w.running
    t0 = time.monotonic()
    w.cancel()
    qtbot.waitUntil(lambda: bool(cancelled), timeout=2000)
    assert cancelled[0] != "finished"
    assert cancelled[0] - t0 < 0.5
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # not even the temporary file


def test_cancelling_a_release_from_the_export_page(qtbot, loaded_demo, monkeypatch):
    """Cancel during a (slowed) release: no output, nothing spent."""
    import dpstudio.gui.wizard.export_page as ep
    win = loaded_demo
    page = win.export_page
    out = __import__("pathlib").Path(win.session.output_path)

    def slow_release(recipe, output_path, report_path, variant, *, progress, cancel):
        def slow_progress(f, m=""):
            time.sleep(0.05)
            progress(f, m)
        return real(recipe, output_path, None, variant, progress=slow_progress, cancel=cancel)

    real = ep.run_release
    monkeypatch.setattr(ep, "run_release", slow_release)
    win.go_to(5)
    page.confirm_release = lambda text: True
    page.start_release()
    qtbot.wait(150)
    t0 = time.monotonic()
    page.cancel()
    qtbot.waitUntil(lambda: page.worker is None, timeout=5000)
    assert time.monotonic() - t0 < 0.5 + 0.1
    assert page.result is None and "Cancelled" in page.progress_text.text()
    assert not out.exists()
    assert not list(out.parent.glob("*.dpstmp"))
    from dpstudio.ledger import Ledger
    assert Ledger().summary(win.session.loaded.sha256)["releases"] == 0
