"""Error dialogs: a one-line summary, the details behind a "Show Details" button."""

from __future__ import annotations

import traceback

from PySide6.QtWidgets import QMessageBox, QWidget

from dpstudio.gui.i18n import tr


def error_summary(exc: BaseException) -> str:
    """One line a user can act on (UserError messages already are)."""
    from dpstudio.errors import UserError

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, UserError):
        return text
    return tr("Internal error: {0}").format(text)


def error_details(exc: BaseException) -> str:
    problems = getattr(exc, "problems", None)
    if problems:
        return "\n".join(f"- {p}" for p in problems)
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def make_error_box(parent: QWidget | None, title: str, summary: str, details: str = "") -> QMessageBox:
    box = QMessageBox(QMessageBox.Icon.Warning, title, summary, QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("errorBox")
    if details:
        box.setDetailedText(details)
    return box


def show_error(parent: QWidget | None, title: str, exc_or_summary, details: str = "") -> QMessageBox:
    """Show (non-blocking, window-modal) an error; returns the box so tests can inspect it."""
    if isinstance(exc_or_summary, BaseException):
        summary, details = error_summary(exc_or_summary), details or error_details(exc_or_summary)
    else:
        summary = str(exc_or_summary)
    box = make_error_box(parent, title, summary, details)
    box.setModal(True)
    box.open()
    return box
