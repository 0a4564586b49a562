"""Edits one column's domain and shows where it comes from: typed (public), estimated with DP
(at a visible cost) or copied from the data (a red warning and an explicit confirmation).

Whether the column may be empty is part of its domain (``Domain.missing``): a checkbox, ticked
by default when the loaded file has empty cells in the column (proposed from the data, like the
type, and visible), saved with the domain, undone with it."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.texts import domain_source_text
from dpstudio.gui.wizard.base import blocked
from dpstudio.gui.wizard.edits import domain_kind, suggested_discovery_delta
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


def domain_summary(col, release_type: str | None = None) -> str:
    d = col.domain
    if d is None:
        return ""
    if d.source == "dp":
        # in a synthetic release the estimates share a part of the typed budget (the plan's
        # split): the column's cost is only its weight in that part, not an epsilon of its own
        if release_type == "synthetic" and not d.known:
            head = "DP estimate (within the budget)"
        else:
            head = f"DP estimate (ε {d.cost.epsilon:g})" if d.cost else "DP estimate"
        return head + (" · may be empty" if d.missing else "")
    if d.kind == "numeric":
        body = f"{_fmt(d.low)} … {_fmt(d.high)}" if d.known else "bounds from data"
    else:
        body = (
            ", ".join(d.categories[:6]) + (" …" if len(d.categories) > 6 else "")
            if d.categories
            else "categories from data"
        )
    return ("⚠ " if d.source == "data" else "") + body + (" · may be empty" if d.missing else "")


_OWN = object()  # show_column: the column's own domain


def _delta_text(x: float) -> str:
    """1e-07 -> "0.0000001" (plain decimals up to ten places, then scientific)."""
    text = f"{x:.10f}".rstrip("0").rstrip(".")
    return text if x >= 1e-10 and text not in ("0", "") else f"{x:g}"


class DomainEditor(QGroupBox):
    """Emits ``domainEdited(column, Domain | None, acknowledged)`` for one column, and
    ``domainsEdited(columns, Domain, acknowledged)`` for one choice given to several selected
    columns (of one kind); it never touches the recipe."""

    domainEdited = Signal(str, object, bool)
    domainsEdited = Signal(list, object, bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.column = None
        self.names: list[str] = []  # the columns an edit applies to (several: a bulk edit)
        self.rows: int | None = None  # rows of the loaded table (the default δ follows them)
        self.offer: Domain | None = None  # the obvious public domain of a yes/no column
        self.empty_cells: dict[str, int] = {}  # column -> empty cells in the loaded file (the proposal)
        self._shown: tuple[list, Domain | None] = ([], None)
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
        self.offer_button = QPushButton()
        self.offer_button.clicked.connect(self._take_offer)
        self.offer_button.setVisible(False)
        box.addWidget(self.offer_button)
        self.offer_note = QLabel()
        self.offer_note.setWordWrap(True)
        self.offer_note.setObjectName("note")
        self.offer_note.setVisible(False)
        box.addWidget(self.offer_note)

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
        dval = QDoubleValidator(0.0, 1e-3, 15)
        dval.setNotation(QDoubleValidator.Notation.ScientificNotation)
        self.delta = QLineEdit()
        self.delta.setValidator(dval)
        self.delta.editingFinished.connect(self._emit)
        self.delta.setToolTip(
            self.tr(
                "Without a list of possible categories, the categories are found in the data with noise. "
                "A category held by one person could then be published: this is the small chance that it is."
            )
        )
        self.delta_note = QLabel()
        self.delta_note.setWordWrap(True)
        self.delta_note.setObjectName("note")

        self.form = QFormLayout()
        # a narrow panel (1024-pixel windows) puts a field under its label instead of clipping it
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.form.addRow(self.tr("Lowest possible value"), self.low)
        self.form.addRow(self.tr("Highest possible value"), self.high)
        self.form.addRow(self.tr("Categories"), self.categories)
        self.form.addRow(self.tr("Unlisted values become"), self.other)
        self.form.addRow(self.tr("Search from"), self.search_low)
        self.form.addRow(self.tr("Search to"), self.search_high)
        self.form.addRow(self.tr("Candidate categories"), self.candidates)
        self.cost_label = QLabel(self.tr("Privacy cost (ε)"))
        self.form.addRow(self.cost_label, self.cost)
        self.form.addRow(self.tr("Rare-category risk (δ)"), self.delta)
        self.form.addRow(self.delta_note)
        box.addLayout(self.form)
        # short: a check box does not wrap, and the long form was cut off in a narrow panel (the tooltip says it all)
        self.may_be_empty = QCheckBox(self.tr("May be empty (synthesised as a value)"))
        self.may_be_empty.setToolTip(
            self.tr(
                "Ticked: empty cells of this column are kept as a value of their own, so synthetic data has "
                "empty cells about as often as the real data, and where they go with other columns. "
                "Unticked: empty cells are treated as unknown values and synthetic data has none. "
                "Only synthetic data uses this choice."
            )
        )
        self.may_be_empty.toggled.connect(self._empty_toggled)
        box.addWidget(self.may_be_empty)
        self.empty_note = QLabel()
        self.empty_note.setWordWrap(True)
        self.empty_note.setObjectName("note")
        box.addWidget(self.empty_note)
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
            self.delta,
            self.delta_note,
        ):
            self.form.setRowVisible(w, w in visible)

    def set_release_type(self, release_type: str | None) -> None:
        """Name the cost field for what it is in this release: an epsilon added to the total, or
        (synthetic data) a weight within the part of the typed budget the estimates share."""
        if release_type == "synthetic":
            self.cost_label.setText(self.tr("Weight in the estimates' share"))
            self.cost.setToolTip(
                self.tr(
                    "In a synthetic-data release the ε you chose is the total: the domain estimates "
                    "share a small part of it (10 % by default) and the synthesizer gets the rest. "
                    "A column with a larger weight gets a larger piece of that part. The Budget step "
                    "shows the split."
                )
            )
        else:
            self.cost_label.setText(self.tr("Privacy cost (ε)"))
            self.cost.setToolTip(self.tr("The ε spent on estimating this domain; it adds to the release's total."))

    def show_columns(self, cols, offer: Domain | None = None) -> None:
        """Show the domain of one column, or the one choice for several selected columns (of
        one kind: numbers, or categories); ``offer``: the obvious domain of a yes/no column."""
        cols = list(cols)
        self._shown = (cols, offer)
        if len(cols) <= 1:
            self.show_column(cols[0] if cols else None, offer)
            return
        kinds = {domain_kind(c.type) for c in cols}
        released = all(c.role not in ("identifier", "ignore", "embedding") for c in cols)
        if len(kinds) != 1 or None in kinds or not released:
            self.show_column(None)
            self.names = []
            self.setTitle(self.tr("Domain of {0} columns").format(len(cols)))
            self.explain.setText(
                self.tr(
                    "The selected columns are of different kinds ({0}). One domain fits only columns of "
                    "one kind: select only number columns (they share a range) or only category columns "
                    "(they share a category list)."
                ).format(", ".join(sorted({self._kind_word(c) for c in cols})))
            )
            return
        domains = {c.domain for c in cols}
        common = domains.pop() if len(domains) == 1 else None
        self.show_column(cols[0], None, common)
        self.names = [c.name for c in cols]
        self._show_empty(common)
        self.setTitle(self.tr("Domain of {0} columns").format(len(cols)))
        shown = ", ".join(self.names[:6]) + (" …" if len(self.names) > 6 else "")
        each = (
            self.tr(" Each column's estimate costs the ε below, counted in the total.")
            if self.radio["dp"].isChecked()
            else ""
        )
        self.explain.setText(
            self.tr("Your choice here is given to all {0} selected columns: {1}.").format(len(cols), shown)
            + (
                ""
                if common is not None or all(c.domain is None for c in cols)
                else self.tr(" They have different domains now; a choice replaces them all.")
            )
            + each
        )

    def _kind_word(self, col) -> str:
        if col.role in ("identifier", "ignore"):
            return self.tr("dropped")
        if col.role == "embedding":
            return self.tr("embedding")
        kind = domain_kind(col.type)
        return {"numeric": self.tr("numbers"), "categorical": self.tr("categories")}.get(kind or "", col.type)

    def show_column(self, col, offer: Domain | None = None, domain: object = _OWN) -> None:
        """Show ``col`` (its own domain, or ``domain``: the common one of a bulk selection)."""
        self.column = col
        self.names = [] if col is None else [col.name]
        self.offer = offer
        self._show_offer()
        kind = None if col is None else domain_kind(col.type)
        if col is None or kind is None or col.role in ("identifier", "ignore", "embedding"):
            self.setTitle(self.tr("Domain"))
            for rb in self.radio.values():
                rb.setVisible(False)
            self._rows(set())
            self.may_be_empty.setVisible(False)
            self.empty_note.setVisible(False)
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
        d = col.domain if domain is _OWN else domain
        assert d is None or isinstance(d, Domain)
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
            self.delta,
        ]
        with blocked(*ws):
            for rb in self.radio.values():
                rb.setVisible(True)
            self.radio[src].setChecked(True)
            self.low.setText(_fmt(d.low) if d is not None and src == "public" else "")
            self.high.setText(_fmt(d.high) if d is not None and src == "public" else "")
            public_categories = d.categories if d is not None and d.categories and src == "public" else ()
            self.categories.setText(", ".join(public_categories or ()))
            self.other.setText(d.other or "" if d is not None else "")
            self.search_low.setText(_fmt(d.search_low) if d is not None else "")
            self.search_high.setText(_fmt(d.search_high) if d is not None else "")
            self.candidates.setText(", ".join(d.candidates) if d is not None and d.candidates else "")
            if d is not None and d.cost is not None:
                self.cost.setValue(d.cost.epsilon)
            default_delta = suggested_discovery_delta(self.rows)
            delta = d.cost.delta if d is not None and d.cost is not None and d.cost.delta > 0 else default_delta
            self.delta.setText(_delta_text(delta))
            self.delta.setPlaceholderText(_delta_text(default_delta))
        self._show_empty(d)
        self._layout_for(src, kind)

    def _layout_for(self, src: str, kind: str) -> None:
        numeric = kind == "numeric"
        discovery = {self.delta, self.delta_note} if not _list(self.candidates.text()) else set()
        rows: dict[str, set[QWidget]] = {
            "public": {self.low, self.high} if numeric else {self.categories, self.other},
            "dp": (
                {self.search_low, self.search_high, self.cost} if numeric else {self.candidates, self.cost} | discovery
            ),
            "data": set() if numeric else {self.other},
        }
        self._rows(rows[src])
        if self.rows:
            self.delta_note.setText(
                self.tr(
                    "Without a list of possible categories, they are found in the data itself, with noise. "
                    "δ is the small chance that a category held by a single person is published anyway. "
                    "The suggested {0} (one chance in {1:,.0f}) keeps it far below one in {2:,}, one person "
                    "of this table."
                ).format(
                    _delta_text(suggested_discovery_delta(self.rows)),
                    1 / suggested_discovery_delta(self.rows),
                    self.rows,
                )
            )
        else:
            self.delta_note.setText(
                self.tr(
                    "Without a list of possible categories, they are found in the data itself, with noise. "
                    "δ is the small chance that a category held by a single person is published anyway; "
                    "keep it far below one in the number of rows."
                )
            )
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

    def _empty_in_file(self) -> int:
        """Empty cells of the shown column(s) in the loaded file (several: the fewest of them)."""
        counts = [self.empty_cells.get(n, 0) for n in self.names]
        return min(counts) if counts else 0

    def _show_empty(self, d: Domain | None) -> None:
        """The checkbox from the domain, or proposed from the file when there is no domain yet."""
        empty = self._empty_in_file()
        ticked = d.missing if d is not None else empty > 0
        with blocked(self.may_be_empty):
            self.may_be_empty.setVisible(True)
            self.may_be_empty.setChecked(ticked)
        if empty > 0 and d is None:
            note = self.tr("Ticked because the file has empty cells in this column; untick it if it cannot be empty.")
        elif empty > 0 and not ticked:
            note = self.tr(
                "The file has empty cells in this column: tick this so that synthetic data keeps them "
                "instead of treating them as unknown values."
            )
        else:
            note = ""
        self.empty_note.setText(note)
        self.empty_note.setVisible(bool(note))

    def _empty_toggled(self, on: bool) -> None:
        """A change of the checkbox is a domain edit (one undo step); without a domain yet, it is
        kept for the domain the user types next."""
        d = self.current_domain()
        if d is not None:
            self._send(d, False)
        self.empty_note.setVisible(False)

    def _source_toggled(self, on: bool, src: str) -> None:
        if on:
            self._source_chosen(src)

    def _source_chosen(self, src: str) -> None:
        col = self.column
        kind = None if col is None else domain_kind(col.type)
        if col is None or kind is None:  # no domain to choose (show_column hides the choice)
            return
        already = len(self.names) <= 1 and col.domain is not None and col.domain.source == "data"
        if src == "data" and not already:
            if not self.confirm_copy(", ".join(self.names) if len(self.names) > 1 else col.name):
                self._redisplay()  # revert the radio button
                return
            self._layout_for(src, kind)
            self._send(Domain(kind=kind, source="data", missing=self.may_be_empty.isChecked()), True)
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
        """The domain the fields describe, with the "may be empty" choice (None: nothing typed)."""
        d = self._typed_domain()
        return None if d is None else replace(d, missing=self.may_be_empty.isChecked())

    def _typed_domain(self) -> Domain | None:
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
            candidates = _list(self.candidates.text())
            if candidates is None:
                # partition selection without a public list is (ε, δ)-DP: δ from its field
                delta = _num(self.delta.text())
                if delta is None or not delta > 0:
                    delta = suggested_discovery_delta(self.rows)
                cost = Cost(epsilon=cost.epsilon, delta=delta)
            return Domain(kind="categorical", source="dp", cost=cost, candidates=candidates)
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
            self._send(self.current_domain(), False)

    def _send(self, domain: Domain | None, acknowledged: bool) -> None:
        if len(self.names) > 1:
            if domain is not None:  # a bulk edit never clears the columns' domains
                self.domainsEdited.emit(list(self.names), domain, acknowledged)
        elif self.column is not None:
            self.domainEdited.emit(self.column.name, domain, acknowledged)

    def _redisplay(self) -> None:
        self.show_columns(*self._shown)

    def _show_offer(self) -> None:
        d = self.offer
        self.offer_button.setVisible(d is not None)
        self.offer_note.setVisible(d is not None)
        if d is None:
            return
        if d.kind == "numeric":
            values = self.tr("range {0} to {1}").format(_fmt(d.low), _fmt(d.high))
        else:
            values = self.tr("categories {0}").format(" and ".join(d.categories or ()))
        self.offer_button.setText(self.tr("Yes/no column: use the {0}").format(values))
        # the offer comes from the values the schema saw: the user's click is what makes it a
        # public choice, so the note asks for the fact that justifies it
        self.offer_note.setText(
            self.tr(
                "Offered because this column holds only these two values. Use it if no other value is "
                "possible (a yes/no answer, not a count that happens to be 0 or 1 here): then the list is "
                "public knowledge and costs no privacy."
            )
        )

    def _take_offer(self) -> None:
        if self.offer is not None and self.column is not None:
            self.domainEdited.emit(self.column.name, replace(self.offer, missing=self.may_be_empty.isChecked()), False)
