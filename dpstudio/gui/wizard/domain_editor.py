"""Edits one column's domain and shows where it comes from: typed (public), estimated with DP
(at a visible cost) or copied from the data (a red warning and an explicit confirmation)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QButtonGroup,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.texts import domain_source_text
from dpstudio.gui.wizard.base import blocked
from dpstudio.gui.wizard.edits import domain_kind
from dpstudio.recipe.model import Cost, Domain


def _num(text: str):
    try:
        return float(text.replace(",", "")) if text.strip() else None
    except ValueError:
        return None


def _fmt(x) -> str:
    return "" if x is None else f"{x:g}"


def _list(text: str):
    items = tuple(s.strip() for s in text.replace("\n", ",").split(",") if s.strip())
    return items or None


def domain_summary(col) -> str:
    d = col.domain
    if d is None:
        return ""
    if d.source == "dp":
        return f"DP estimate (ε {d.cost.epsilon:g})" if d.cost else "DP estimate"
    if d.kind == "numeric":
        body = f"{_fmt(d.low)} … {_fmt(d.high)}" if d.known else "bounds from data"
    else:
        body = (
            ", ".join(d.categories[:6]) + (" …" if len(d.categories) > 6 else "")
            if d.categories
            else "categories from data"
        )
    return ("⚠ " if d.source == "data" else "") + body


class DomainEditor(QGroupBox):
    """Emits ``domainEdited(column, Domain | None, acknowledged)``; it never touches the recipe."""

    domainEdited = Signal(str, object, bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.column = None
        self.confirm_copy = self._ask_copy  # replaced in tests
        self.sources = QButtonGroup(self)
        self.radio = {}
        box = QVBoxLayout()
        for src in ("public", "dp", "data"):
            title, text = domain_source_text(src)
            rb = QRadioButton(title)
            rb.setToolTip(text)
            self.radio[src] = rb
            self.sources.addButton(rb)
            box.addWidget(rb)
            rb.toggled.connect(lambda on, s=src: self._source_toggled(on, s))
        self.explain = QLabel()
        self.explain.setWordWrap(True)
        self.explain.setObjectName("note")
        box.addWidget(self.explain)

        val = QDoubleValidator()
        val.setNotation(QDoubleValidator.Notation.ScientificNotation)
        self.low, self.high = QLineEdit(), QLineEdit()
        self.search_low, self.search_high = QLineEdit(), QLineEdit()
        for e in (self.low, self.high, self.search_low, self.search_high):
            e.setValidator(val)
            e.editingFinished.connect(self._emit)
        self.low.setPlaceholderText(self.tr("e.g. 0"))
        self.high.setPlaceholderText(self.tr("e.g. 120"))
        self.categories = QLineEdit()
        self.categories.setPlaceholderText(self.tr("comma-separated, e.g. yes, no"))
        self.categories.editingFinished.connect(self._emit)
        self.other = QLineEdit()
        self.other.setPlaceholderText(self.tr("optional: category for values not in the list"))
        self.other.editingFinished.connect(self._emit)
        self.candidates = QLineEdit()
        self.candidates.setPlaceholderText(self.tr("optional: the public list of possible categories"))
        self.candidates.editingFinished.connect(self._emit)
        self.cost = QDoubleSpinBox()
        self.cost.setRange(0.01, 5.0)
        self.cost.setSingleStep(0.05)
        self.cost.setValue(0.1)
        self.cost.setToolTip(self.tr("The ε spent on estimating this domain; it adds to the release's total."))
        self.cost.editingFinished.connect(self._emit)

        self.form = QFormLayout()
        self.form.addRow(self.tr("Lowest possible value"), self.low)
        self.form.addRow(self.tr("Highest possible value"), self.high)
        self.form.addRow(self.tr("Categories"), self.categories)
        self.form.addRow(self.tr("Unlisted values become"), self.other)
        self.form.addRow(self.tr("Search from"), self.search_low)
        self.form.addRow(self.tr("Search to"), self.search_high)
        self.form.addRow(self.tr("Candidate categories"), self.candidates)
        self.form.addRow(self.tr("Privacy cost (ε)"), self.cost)
        box.addLayout(self.form)
        self.warning = QLabel()
        self.warning.setObjectName("danger")
        self.warning.setWordWrap(True)
        box.addWidget(self.warning)
        box.addStretch(1)
        self.setLayout(box)
        self.show_column(None)

    def _rows(self, visible: set[QWidget]):
        for w in (
            self.low,
            self.high,
            self.categories,
            self.other,
            self.search_low,
            self.search_high,
            self.candidates,
            self.cost,
        ):
            self.form.setRowVisible(w, w in visible)

    def show_column(self, col) -> None:
        self.column = col
        kind = None if col is None else domain_kind(col.type)
        if col is None or kind is None or col.role in ("identifier", "ignore", "embedding"):
            self.setTitle(self.tr("Domain"))
            for rb in self.radio.values():
                rb.setVisible(False)
            self._rows(set())
            self.warning.setText("")
            if col is None:
                self.explain.setText(self.tr("Select a column to set its domain."))
            elif col.role in ("identifier", "ignore"):
                self.explain.setText(self.tr("This column is dropped: it needs no domain."))
            elif col.role == "embedding":
                self.explain.setText(self.tr("Embedding vectors use a public pool instead of a domain."))
            else:
                self.explain.setText(
                    self.tr("Columns of type {0} cannot be released; set the role to 'Ignore'.").format(col.type)
                )
            return
        self.setTitle(self.tr("Domain of “{0}”").format(col.name))
        d = col.domain
        src = d.source if d is not None else "public"
        ws = list(self.radio.values()) + [
            self.low,
            self.high,
            self.categories,
            self.other,
            self.search_low,
            self.search_high,
            self.candidates,
            self.cost,
        ]
        with blocked(*ws):
            for rb in self.radio.values():
                rb.setVisible(True)
            self.radio[src].setChecked(True)
            self.low.setText(_fmt(d.low) if d is not None and src == "public" else "")
            self.high.setText(_fmt(d.high) if d is not None and src == "public" else "")
            public_categories = d is not None and d.categories and src == "public"
            self.categories.setText(", ".join(d.categories) if public_categories else "")
            self.other.setText(d.other or "" if d is not None else "")
            self.search_low.setText(_fmt(d.search_low) if d is not None else "")
            self.search_high.setText(_fmt(d.search_high) if d is not None else "")
            self.candidates.setText(", ".join(d.candidates) if d is not None and d.candidates else "")
            if d is not None and d.cost is not None:
                self.cost.setValue(d.cost.epsilon)
        self._layout_for(src, kind)

    def _layout_for(self, src: str, kind: str) -> None:
        numeric = kind == "numeric"
        rows: dict[str, set[QWidget]] = {
            "public": {self.low, self.high} if numeric else {self.categories, self.other},
            "dp": {self.search_low, self.search_high, self.cost} if numeric else {self.candidates, self.cost},
            "data": set() if numeric else {self.other},
        }
        self._rows(rows[src])
        self.explain.setText(domain_source_text(src)[1])
        if src == "data":
            self.warning.setText(
                self.tr(
                    "⚠ Copied from the private data: the exact extremes or rare "
                    "categories of real people are revealed. The privacy guarantee does "
                    "NOT cover this, and the report will say so."
                )
            )
        else:
            self.warning.setText("")

    def _source_toggled(self, on: bool, src: str) -> None:
        if on:
            self._source_chosen(src)

    def _source_chosen(self, src: str) -> None:
        col = self.column
        kind = None if col is None else domain_kind(col.type)
        if col is None or kind is None:  # no domain to choose (show_column hides the choice)
            return
        if src == "data" and not (col.domain is not None and col.domain.source == "data"):
            if not self.confirm_copy(col.name):
                self.show_column(col)  # revert the radio button
                return
            self._layout_for(src, kind)
            self.domainEdited.emit(col.name, Domain(kind=kind, source="data"), True)
            return
        self._layout_for(src, kind)
        self._emit()

    def _ask_copy(self, name: str) -> bool:
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            self.tr("Copy the domain from the private data?"),
            self.tr(
                "The bounds or categories of “{0}” would be read from the private data and published with the release."
            ).format(name),
            QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setInformativeText(
            self.tr(
                "The minimum, maximum and rare categories often belong to one "
                "identifiable person. The differential-privacy guarantee does not cover "
                "this, and the report records your acknowledgement. Prefer typing "
                "public bounds or a DP estimate."
            )
        )
        ok = box.addButton(self.tr("I understand, copy from the data"), QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is ok

    def current_domain(self) -> Domain | None:
        col = self.column
        kind = None if col is None else domain_kind(col.type)
        if col is None or kind is None:  # a column of this type has no domain
            return None
        src = next((s for s, rb in self.radio.items() if rb.isChecked()), "public")
        if src == "public":
            if kind == "numeric":
                low, high = _num(self.low.text()), _num(self.high.text())
                if low is None and high is None:
                    return None
                return Domain(kind="numeric", source="public", low=low, high=high)
            cats = _list(self.categories.text())
            if cats is None:
                return None
            return Domain(kind="categorical", source="public", categories=cats, other=self.other.text().strip() or None)
        if src == "dp":
            cost = Cost(epsilon=round(self.cost.value(), 4))
            if kind == "numeric":
                return Domain(
                    kind="numeric",
                    source="dp",
                    cost=cost,
                    search_low=_num(self.search_low.text()),
                    search_high=_num(self.search_high.text()),
                )
            return Domain(kind="categorical", source="dp", cost=cost, candidates=_list(self.candidates.text()))
        d = col.domain
        return Domain(
            kind=kind,
            source="data",
            other=self.other.text().strip() or None,
            low=d.low if d else None,
            high=d.high if d else None,
        )

    def _emit(self) -> None:
        if self.column is not None:
            self.domainEdited.emit(self.column.name, self.current_domain(), False)
