"""Progress reporting and cooperative cancellation for long-running engine work.

Long work is a plain function ``run(..., progress=..., cancel=...)``: the GUI runs it on a
worker thread, the CLI calls it directly, tests pass stubs.  No Qt here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class Cancelled(Exception):
    """Raised inside engine work when its cancel token has been set."""


class ProgressCallback(Protocol):
    def __call__(self, fraction: float, message: str = "") -> None: ...


def no_progress(fraction: float, message: str = "") -> None:
    """A progress callback that ignores everything."""


class CancelToken:
    """Thread-safe flag that a long job polls; ``check()`` raises :class:`Cancelled`."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled("cancelled by the user")


NEVER_CANCELLED = CancelToken()


def sub_progress(progress: Callable[[float, str], None], start: float, stop: float) -> ProgressCallback:
    """A callback mapping [0, 1] of a sub-task into [start, stop] of its parent."""
    span = stop - start

    def report(fraction: float, message: str = "") -> None:
        progress(start + span * min(max(fraction, 0.0), 1.0), message)

    return report
