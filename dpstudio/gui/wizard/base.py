"""The page base class: QWizardPage-style (``isComplete`` + ``completeChanged``), stateless.

A page reads ``session.recipe`` in ``refresh()`` and writes through ``session.update``.  Pages
refresh lazily: a change while a page is hidden marks it stale; it refreshes when shown.
"""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import QLabel, QTableWidget, QTableWidgetItem, QWidget

from dpstudio.gui.session import Session
from dpstudio.gui.workers import TaskRunner
from dpstudio.recipe.validate import Problem

W = TypeVar("W", bound=QWidget)


class WizardPage(QWidget):
    completeChanged = Signal()
    key = "page"

    def __init__(self, session: Session, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self.session = session
        self.runner = runner
        self._stale = True
        session.recipeChanged.connect(self._on_recipe_changed)
        session.dataChanged.connect(self._on_data_changed)

    # ---- QWizardPage-like API --------------------------------------------------------
    def title(self) -> str:
        raise NotImplementedError

    def subtitle(self) -> str:
        return ""

    def help_text(self) -> str:
        return self.subtitle()

    def isComplete(self) -> bool:  # noqa: N802 - Qt override
        return self.session.has_data and not self.session.page_problems(self.key)

    def problems(self) -> list[Problem]:
        """The problems this page can fix (routed by each problem's ``page``)."""
        return self.session.page_problems(self.key) if self.session.has_data else []

    # ---- refreshing ------------------------------------------------------------------
    def refresh(self) -> None:
        """Show the session's current recipe (override)."""

    def on_data_changed(self) -> None:
        """Rebuild what depends on the table (override)."""

    def _on_data_changed(self) -> None:
        self.on_data_changed()
        self._stale = True

    def _on_recipe_changed(self) -> None:
        self._stale = True
        if self.isVisible():
            self.refresh_now()
        self.completeChanged.emit()

    def refresh_now(self) -> None:
        self._stale = False
        self.refresh()

    def showEvent(self, event):  # noqa: N802 - Qt override
        if self._stale:
            self.refresh_now()
        super().showEvent(event)


def blocked(*widgets):
    """Context: update widgets from the recipe without echoing edits back into it."""
    return _Blockers(widgets)


class _Blockers:
    def __init__(self, widgets):
        self.widgets = widgets

    def __enter__(self):
        self._b = [QSignalBlocker(w) for w in self.widgets]

    def __exit__(self, *exc):
        for b in self._b:
            b.unblock()
        self._b = []


def note_label(text: str = "", object_name: str = "note") -> QLabel:
    lab = QLabel(text)
    lab.setWordWrap(True)
    lab.setObjectName(object_name)
    return lab


def table_item(table: QTableWidget, row: int, column: int) -> QTableWidgetItem:
    """The item the page put at ``(row, column)`` when it filled ``table`` (LookupError if none)."""
    item = table.item(row, column)
    if item is None:
        raise LookupError(f"no item at row {row}, column {column}")
    return item


def cell_widget(table: QTableWidget, row: int, column: int, kind: type[W]) -> W:
    """The ``kind`` widget the page put at ``(row, column)`` of ``table`` (LookupError if none)."""
    widget = table.cellWidget(row, column)
    if not isinstance(widget, kind):
        raise LookupError(f"no {kind.__name__} at row {row}, column {column}")
    return widget
