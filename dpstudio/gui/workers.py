"""Run engine work off the GUI thread: a QRunnable with a separate signals QObject.

Engine functions follow one shape, ``fn(*args, progress=..., cancel=..., **kwargs)``; the worker
passes a throttled progress callback and a :class:`CancelToken`.  Cancelling is cooperative: the
engine polls ``cancel.check()`` and raises :class:`Cancelled`, which becomes the ``cancelled``
signal.  The GUI thread only starts jobs and receives their signals (queued connections).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from dpstudio.engine.progress import Cancelled, CancelToken


class WorkerSignals(QObject):
    """Lives on the GUI thread; emitted from the worker thread (queued delivery)."""

    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(object)  # the exception
    cancelled = Signal()
    done = Signal()  # after any of finished / failed / cancelled


class Worker(QRunnable):
    """Runs ``fn(*args, progress=cb, cancel=token, **kwargs)`` on a pool thread."""

    PROGRESS_INTERVAL = 0.05  # seconds between progress signals (the engine may report often)

    def __init__(self, fn: Callable[..., Any], *args, pass_progress: bool = True, **kwargs):
        super().__init__()
        self.setAutoDelete(False)  # the Python side keeps it alive until done
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.pass_progress = pass_progress
        self.token = CancelToken()
        self.signals = WorkerSignals()
        self._last = 0.0
        self.running = False
        self.finished_at: float | None = None

    def cancel(self) -> None:
        self.token.cancel()

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled

    def _progress(self, fraction: float, message: str = "") -> None:
        now = time.monotonic()
        if fraction >= 1.0 or now - self._last >= self.PROGRESS_INTERVAL:
            self._last = now
            self.signals.progress.emit(float(fraction), str(message))
        if self.token.cancelled:
            raise Cancelled("cancelled by the user")

    def run(self) -> None:  # on a pool thread
        self.running = True
        try:
            if self.pass_progress:
                result = self.fn(*self.args, progress=self._progress, cancel=self.token, **self.kwargs)
            else:
                result = self.fn(*self.args, **self.kwargs)
            if self.token.cancelled:
                raise Cancelled("cancelled by the user")
        except Cancelled:
            self.signals.cancelled.emit()
        except BaseException as exc:  # noqa: BLE001 - every failure goes to the GUI as a dialog
            self.signals.failed.emit(exc)
        else:
            self.signals.finished.emit(result)
        finally:
            self.running = False
            self.finished_at = time.monotonic()
            self.signals.done.emit()


# Workers stay referenced here until well after they finish, whatever happens to the runner that
# started them: a QRunnable collected while a pool thread still runs it would crash the process.
_ALIVE: dict[int, Worker] = {}
_GRACE_S = 2.0


def _keep(worker: Worker) -> None:
    now = time.monotonic()
    for key, w in list(_ALIVE.items()):
        if w.finished_at is not None and now - w.finished_at > _GRACE_S:
            del _ALIVE[key]
    _ALIVE[id(worker)] = worker


class TaskRunner(QObject):
    """Starts workers and keeps them alive until they report back (one pool for the app)."""

    def __init__(self, parent: QObject | None = None, pool: QThreadPool | None = None):
        super().__init__(parent)
        # Engine stretches that hold the GIL (pure-Python loops between numpy calls) would make
        # the GUI thread wait up to the default 5 ms switch interval per hand-off, and much longer
        # on a loaded machine; a 1 ms interval keeps timers and repaints prompt.
        if sys.getswitchinterval() > 0.001:
            sys.setswitchinterval(0.001)
        self.pool = pool or QThreadPool.globalInstance()
        self._active: set[Worker] = set()

    def start(
        self,
        fn: Callable[..., Any],
        *args,
        on_finished=None,
        on_failed=None,
        on_cancelled=None,
        on_progress=None,
        pass_progress: bool = True,
        **kwargs,
    ) -> Worker:
        w = Worker(fn, *args, pass_progress=pass_progress, **kwargs)
        if on_finished:
            w.signals.finished.connect(on_finished)
        if on_failed:
            w.signals.failed.connect(on_failed)
        if on_cancelled:
            w.signals.cancelled.connect(on_cancelled)
        if on_progress:
            w.signals.progress.connect(on_progress)
        w.signals.done.connect(lambda w=w: self._active.discard(w))
        self._active.add(w)
        _keep(w)
        self.pool.start(w)
        return w

    @property
    def active(self) -> int:
        return len(self._active)

    def cancel_all(self) -> None:
        for w in list(self._active):
            w.cancel()

    def wait(self, msecs: int = 5000) -> bool:
        return self.pool.waitForDone(msecs)
