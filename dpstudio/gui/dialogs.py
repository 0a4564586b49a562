"""Error dialogs: a one-line summary a user can act on; the details behind a "Show Details…" button.

A user error (:class:`~dpstudio.errors.UserError`, a file the system refused) is explained in
its own words, with the wizard's names for things (never a command-line flag) and never a Python
traceback; only an internal error carries its traceback, behind "Show Details…", for a bug report.
"""

from __future__ import annotations

import traceback

from PySide6.QtWidgets import QMessageBox, QWidget

from dpstudio.gui.i18n import tr


def is_user_error(exc: BaseException) -> bool:
    """Something the user can act on: a UserError, or a file the operating system refused."""
    from dpstudio.errors import UserError

    return isinstance(exc, (UserError, OSError))


def _os_error_text(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{what}: {exc.filename}" if exc.filename else what


def error_summary(exc: BaseException) -> str:
    """One line a user can act on (UserError messages already are)."""
    from dpstudio.gui.texts import gui_message

    raw = _os_error_text(exc) if isinstance(exc, OSError) and exc.strerror else str(exc).strip()
    text = raw.splitlines()[0] if raw else type(exc).__name__
    if is_user_error(exc):
        return gui_message(text)
    return tr("Internal error: {0}").format(text)


def error_details(exc: BaseException) -> str:
    """What the "Details" button shows: every problem of a recipe, the rest of a user error's
    message, or - for an internal error only - the traceback."""
    from dpstudio.gui.texts import gui_message

    problems = getattr(exc, "problems", None)
    if problems:
        return "\n".join(f"- {gui_message(str(p))}" for p in problems)
    if is_user_error(exc):
        lines = str(exc).strip().splitlines()
        return gui_message("\n".join(lines[1:])) if len(lines) > 1 else ""
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
        from dpstudio.gui.texts import gui_message

        summary = gui_message(str(exc_or_summary))
    box = make_error_box(parent, title, summary, details)
    box.setModal(True)
    box.open()
    return box


def _operator_field(current: str | None):
    from PySide6.QtWidgets import QLineEdit

    from dpstudio.prefs import OPERATOR_MAX

    edit = QLineEdit(current or "")
    edit.setObjectName("operatorName")
    edit.setMaxLength(OPERATOR_MAX)
    edit.setPlaceholderText(tr("e.g. Jane Doe, data protection office (may be left empty)"))
    return edit


def _dialog(parent: QWidget | None, title: str, texts: list[str], edit, ok_text: str | None = None):
    from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout

    class NameDialog(QDialog):
        """A short explanation, optionally the operator's name field, OK / Cancel."""

        def __init__(self) -> None:
            super().__init__(parent)
            self.operator_edit = edit

        def operator_name(self) -> str | None:
            return (self.operator_edit.text().strip() or None) if self.operator_edit is not None else None

    dlg = NameDialog()
    dlg.setWindowTitle(title)
    lay = QVBoxLayout(dlg)
    for t in texts:
        lab = QLabel(t)
        lab.setWordWrap(True)
        lay.addWidget(lab)
    if edit is not None:
        lay.addWidget(edit)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
    ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
    if ok_text and ok is not None:
        ok.setText(ok_text)
    cancel = buttons.button(QDialogButtonBox.StandardButton.Cancel)
    if ok_text and cancel is not None:
        cancel.setDefault(True)  # a release spends budget: Enter never confirms it by accident
    buttons.accepted.connect(dlg.accept)
    buttons.rejected.connect(dlg.reject)
    lay.addWidget(buttons)
    dlg.setMinimumWidth(480)
    return dlg


OPERATOR_TEXT = (
    "Your name (or role) is printed in every release report as the person who made the release, "
    "so a compliance officer knows whom to ask. Leave it empty and reports say “not recorded”."
)


def operator_dialog(parent: QWidget | None, current: str | None):
    """Settings ▸ Preferences: the operator's name (may be left empty)."""
    return _dialog(parent, tr("Preferences"), [tr("<b>Operator</b>"), tr(OPERATOR_TEXT)], _operator_field(current))


def release_confirm_dialog(parent: QWidget | None, title: str, text: str, *, ask_operator: bool):
    """The confirmation before a release; the first time, it also asks for the operator's name
    (asked once, then remembered: Settings ▸ Preferences changes it)."""
    texts = [text]
    edit = None
    if ask_operator:
        texts.append(
            tr("<b>Who is releasing?</b> ")
            + tr(OPERATOR_TEXT)
            + " "
            + tr("You are asked once; Settings ▸ Preferences changes it.")
        )
        edit = _operator_field(None)
    dlg = _dialog(parent, title, texts, edit, ok_text=tr("Release"))
    dlg.setObjectName("releaseConfirm")
    return dlg


def ask_operator(parent: QWidget | None, current: str | None) -> tuple[bool, str | None]:
    """``(accepted, name)``: the name typed (None when empty); ``(False, None)`` on Cancel."""
    from PySide6.QtWidgets import QDialog

    dlg = operator_dialog(parent, current)
    if dlg.exec() != QDialog.DialogCode.Accepted:
        return False, None
    return True, dlg.operator_name()
