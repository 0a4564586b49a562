"""Step 2 - Columns: each column's role, type and domain, with the inferred suggestions
preselected; identifiers and ignored columns are visibly dropped."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QBoxLayout,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from dpstudio.gui.texts import role_text
from dpstudio.gui.wizard.base import WizardPage, blocked, cell_widget, note_label, table_item
from dpstudio.gui.wizard.domain_editor import DomainEditor, domain_summary
from dpstudio.gui.wizard.edits import (
    DROPPED_ROLES,
    apply_domain_file,
    binary_domain_offer,
    confirm_suggestions,
    domain_kind,
    set_domain,
    set_domains,
    set_role,
    set_type,
)
from dpstudio.recipe.model import COLUMN_TYPES, ROLES, Domain

DOMAIN_FILES = "Domain files (*.json *.csv *.tsv *.txt)"


def domain_text(d: Domain) -> str:
    """A domain in a few words, for the paste preview (public values only)."""
    if d.source == "data":
        return "copy from the private data"
    if d.source == "dp":
        return f"estimate with DP (ε {d.cost.epsilon:g})" if d.cost else "estimate with DP"
    if d.kind == "numeric":
        return f"{d.low:g} … {d.high:g}"
    cats = d.categories or ()
    return ", ".join(cats[:8]) + (f" … ({len(cats)})" if len(cats) > 8 else "")


class DomainTableDialog(QDialog):
    """Paste a domain table (from a spreadsheet or a text file), see each row's domain or its
    problem, and apply the good rows to the matching columns."""

    def __init__(self, recipe, text: str = "", parent=None):
        super().__init__(parent)
        self.recipe = recipe
        self.rows: list = []
        self.setWindowTitle(self.tr("Paste domains"))
        self.resize(720, 520)
        lay = QVBoxLayout(self)
        lay.addWidget(
            note_label(
                self.tr(
                    "Paste one column per line, tab- or comma-separated: <b>column, lowest, highest</b> for "
                    "numbers (age, 0, 120), or <b>column, categories</b> with the categories separated by "
                    "| or ; (sex, female|male). These are public choices: type them from a code book or "
                    "another public source, not from the data."
                )
            )
        )
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText("age\t0\t120\nsex\tfemale|male")
        self.text.setPlainText(text)
        self.text.textChanged.connect(self._preview)
        lay.addWidget(self.text, 1)
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels([self.tr("Column"), self.tr("Domain"), self.tr("Check")])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        lay.addWidget(self.table, 2)
        self.summary = note_label("")
        lay.addWidget(self.summary)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.apply_button = self.buttons.addButton(self.tr("Apply"), QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self._preview()

    def _check(self, row) -> str | None:
        from dpstudio.recipe.domainfile import mismatch

        if row.error is not None:
            return row.error
        if row.domain.source == "data":
            return self.tr("a copy from the private data: choose it in the domain panel, which asks you to confirm")
        return mismatch(self.recipe, row.column, row.domain)

    def _preview(self) -> None:
        from dpstudio.recipe.domainfile import parse_domain_table

        rows = parse_domain_table(self.text.toPlainText())
        self.rows = [(r, self._check(r)) for r in rows]
        self.table.setRowCount(len(rows))
        red, green = QColor("#D55E00"), QColor("#009E73")
        for i, (r, err) in enumerate(self.rows):
            self.table.setItem(i, 0, QTableWidgetItem(r.column or self.tr("(line {0})").format(r.line)))
            self.table.setItem(i, 1, QTableWidgetItem("" if r.domain is None else domain_text(r.domain)))
            check = QTableWidgetItem(self.tr("✓ will be applied") if err is None else "✗ " + err)
            check.setForeground(green if err is None else red)
            check.setToolTip("" if err is None else err)
            self.table.setItem(i, 2, check)
        good = len(self.good())
        bad = len(self.rows) - good
        self.apply_button.setText(self.tr("Apply {0} domain(s)").format(good))
        self.apply_button.setEnabled(good > 0)
        self.summary.setText(
            ""
            if not self.rows
            else self.tr(
                "{0} row(s) ready, {1} with a problem (not applied: fix them above, or apply the rest)."
            ).format(good, bad)
        )

    def good(self) -> dict:
        return {r.column: r.domain for r, err in self.rows if err is None}

    def problems(self) -> list[str]:
        return [f"{r.column or self.tr('line {0}').format(r.line)}: {err}" for r, err in self.rows if err is not None]


COL_NAME, COL_ROLE, COL_TYPE, COL_DOMAIN, COL_STATUS = range(5)


class ColumnsPage(WizardPage):
    key = "columns"

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(
            [
                self.tr("Column"),
                self.tr("Role"),
                self.tr("Type"),
                self.tr("Domain"),
                self.tr("Status"),
            ]
        )
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        # several rows: one domain choice for all of them (Ctrl/Shift-click, Ctrl+A)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(COL_DOMAIN, QHeaderView.ResizeMode.Stretch)
        head = self.table.horizontalHeaderItem(COL_DOMAIN)
        assert head is not None  # set by setHorizontalHeaderLabels above
        head.setToolTip(self.tr("The public range (numbers) or category list (text) the column may take."))
        self.table.itemSelectionChanged.connect(self._selected)
        self.editor = DomainEditor()
        self.editor.setMinimumWidth(330)
        self.editor.domainEdited.connect(self._domain_edited)
        self.editor.domainsEdited.connect(self._domains_edited)
        # replaced in tests: file choosers, the confirmation of copies from the data, messages
        self.choose_open_file = self._choose_open_file
        self.choose_save_file = self._choose_save_file
        self.confirm_copies = self._confirm_copies
        self.show_message = self._show_message
        self.paste_button = QPushButton(self.tr("Paste domains…"))
        self.paste_button.setToolTip(
            self.tr("Paste a table of ranges and category lists, e.g. copied from a spreadsheet (Ctrl+Shift+V).")
        )
        self.paste_button.clicked.connect(lambda: self.paste_domains())
        self.paste_shortcut = QShortcut(QKeySequence("Ctrl+Shift+V"), self)
        self.paste_shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)  # on this page only
        self.paste_shortcut.activated.connect(self.paste_domains)
        self.load_button = QPushButton(self.tr("Load domains…"))
        self.load_button.setToolTip(
            self.tr("Apply the ranges and category lists saved from another table with the same columns.")
        )
        self.load_button.clicked.connect(lambda: self.load_domains())
        self.save_button = QPushButton(self.tr("Save domains…"))
        self.save_button.setToolTip(
            self.tr(
                "Save the ranges and category lists to a file (JSON or CSV) to reuse them with another table "
                "with the same columns. Nothing read from the data is written."
            )
        )
        self.save_button.clicked.connect(lambda: self.save_domains())
        self.domains_label = note_label("")
        self.domains_label.setVisible(False)
        self.problem_label = note_label("", "problems")
        # types and roles read from the data decide the released grid and which columns are
        # released: shown in italics until the user changes or confirms them
        self.inferred_label = note_label("")
        self.confirm_button = QPushButton(self.tr("Confirm all suggestions"))
        self.confirm_button.setToolTip(
            self.tr("Accept every suggested type and role as your own choice (recorded in the recipe and the report).")
        )
        self.confirm_button.clicked.connect(self._confirm_all)
        inferred_row = QHBoxLayout()
        inferred_row.addWidget(self.inferred_label, 1)
        inferred_row.addWidget(self.confirm_button)
        # the hint above the buttons, so a 1024-pixel window fits the page
        file_row = QHBoxLayout()
        for b in (self.paste_button, self.load_button, self.save_button):
            file_row.addWidget(b)
        file_row.addStretch(1)
        left = QVBoxLayout()
        left.addWidget(self.table, 1)
        left.addWidget(note_label(self.tr("Select several columns (Ctrl- or Shift-click) to give them one domain.")))
        left.addLayout(file_row)
        left.addWidget(self.domains_label)
        row = QHBoxLayout()
        row.addLayout(left, 3)
        row.addWidget(self.editor, 2)
        self._row = row
        lay = QVBoxLayout(self)
        lay.addWidget(
            note_label(
                self.tr(
                    "dpstudio suggested a role for every column. Numbers and categories you release need a "
                    "<b>domain</b>: the range or category list everyone may know (e.g. age 0–120). Typing it from "
                    "public knowledge is free; estimating it costs a little ε; copying it from the data leaks."
                )
            )
        )
        lay.addLayout(row, 1)
        lay.addLayout(inferred_row)
        lay.addWidget(self.problem_label)
        self._names: list[str] = []

    #: below this width the domain panel goes under the table (side by side, a 1024-pixel window
    #: would squeeze the table's Domain and Status columns to a few letters)
    STACK_BELOW = 1000

    def resizeEvent(self, event):  # noqa: N802 - Qt override
        want = (
            QBoxLayout.Direction.TopToBottom
            if event.size().width() < self.STACK_BELOW
            else QBoxLayout.Direction.LeftToRight
        )
        if self._row.direction() != want:
            self._row.setDirection(want)
        super().resizeEvent(event)

    def title(self):
        return self.tr("Classify the columns")

    def subtitle(self):
        return self.tr("Say what each column is, and give the public range of every column you release.")

    def help_text(self):
        lines = [self.tr("Roles:")]
        for r in ROLES:
            t, text = role_text(r)
            lines.append(f"• <b>{t}</b>: {text}")
        return "<br>".join(lines)

    # ---- building ----------------------------------------------------------------------
    def on_data_changed(self):
        rec = self.session.recipe
        schema = self.session.schema
        if rec is None or schema is None:  # both are set together by Session.set_data
            return
        self._names = [c.name for c in rec.columns]
        self.table.setRowCount(len(rec.columns))
        for i, c in enumerate(rec.columns):
            self.table.setItem(i, COL_NAME, QTableWidgetItem(c.name))
            role = QComboBox()
            for r in ROLES:
                t, text = role_text(r)
                role.addItem(t, r)
                role.setItemData(role.count() - 1, text, Qt.ItemDataRole.ToolTipRole)
            try:
                role.setToolTip(
                    self.tr("Suggested: {0} — {1}").format(
                        role_text(schema.column(c.name).suggested_role)[0], schema.column(c.name).reason
                    )
                )
            except KeyError:
                pass
            role.currentIndexChanged.connect(lambda _i, n=c.name, w=role: self._role(n, w.currentData()))
            self.table.setCellWidget(i, COL_ROLE, role)
            typ = QComboBox()
            for t in COLUMN_TYPES:
                typ.addItem(self.tr(t), t)
            typ.currentIndexChanged.connect(lambda _i, n=c.name, w=typ: self._type(n, w.currentData()))
            self.table.setCellWidget(i, COL_TYPE, typ)
            self.table.setItem(i, COL_DOMAIN, QTableWidgetItem())
            self.table.setItem(i, COL_STATUS, QTableWidgetItem())
        if rec.columns:
            self.select(rec.columns[0].name)

    def refresh(self):
        rec = self.session.recipe
        if rec is None:
            return
        if [c.name for c in rec.columns] != self._names:
            self.on_data_changed()
        problems = self.problems()
        for i, c in enumerate(rec.columns):
            role_w = cell_widget(self.table, i, COL_ROLE, QComboBox)
            type_w = cell_widget(self.table, i, COL_TYPE, QComboBox)
            with blocked(role_w, type_w):
                role_w.setCurrentIndex(role_w.findData(c.role))
                type_w.setCurrentIndex(type_w.findData(c.type))
            self._mark_inferred(role_w, c.role_source != "confirmed")
            type_inferred = c.type_source != "confirmed" and c.role not in DROPPED_ROLES
            self._mark_inferred(type_w, type_inferred)
            type_w.setToolTip(
                self.tr("Read from the data, not confirmed: it decides the released grid (integer or float).")
                if type_inferred
                else ""
            )
            dropped = c.role in DROPPED_ROLES
            name = table_item(self.table, i, COL_NAME)
            f = QFont(name.font())
            f.setStrikeOut(dropped)
            name.setFont(f)
            grey = QColor(140, 140, 140)
            name.setForeground(grey if dropped else self.palette().text().color())
            dom = table_item(self.table, i, COL_DOMAIN)
            from dpstudio.recipe.validate import perturbed_roles

            passes = c.role not in perturbed_roles(rec.release.type) and c.domain is None
            dom.setText(
                ""
                if dropped
                else (
                    self.tr("— (released as is)")
                    if passes
                    else domain_summary(c, rec.release.type)
                    or (
                        self.tr("⚠ missing: type the public range")
                        if domain_kind(c.type) == "numeric"
                        else self.tr("⚠ missing: type the categories")
                    )
                )
            )
            dom.setForeground(
                QColor("#D55E00")
                if c.domain is not None and c.domain.source == "data"
                else self.palette().text().color()
            )
            mine = [p for p in problems if p.field == f"column:{c.name}"]
            status = table_item(self.table, i, COL_STATUS)
            if dropped:
                status.setText(self.tr("dropped"))
                status.setForeground(grey)
                status.setToolTip(self.tr("Not part of the release."))
            elif mine:
                status.setText(self.tr("needs attention"))
                status.setForeground(QColor("#D55E00"))
                status.setToolTip("\n".join(mine))
            else:
                status.setText(self.tr("ready"))
                status.setForeground(QColor("#009E73"))
                status.setToolTip("")
        self._selected()
        self._show_inferred(rec)
        self.problem_label.setText(self._problem_text(problems))
        self.problem_label.setObjectName("problems" if problems else "note")
        self.problem_label.style().unpolish(self.problem_label)
        self.problem_label.style().polish(self.problem_label)

    def _mark_inferred(self, combo, inferred: bool) -> None:
        f = QFont(combo.font())
        f.setItalic(inferred)
        combo.setFont(f)

    def _show_inferred(self, rec) -> None:
        from dpstudio.recipe.validate import inferred_facts

        facts = inferred_facts(rec)
        self.inferred_label.setText(
            self.tr(
                "{0} column(s) have a type or role (in italics) or a “may be empty” setting read from the "
                "data, not chosen by you. They decide the released grid (integer or float), empty cells and "
                "which columns are released: change them, or confirm them."
            ).format(len(facts))
            if facts
            else ""
        )
        self.inferred_label.setVisible(bool(facts))
        self.confirm_button.setVisible(bool(facts))

    def _problem_text(self, problems):
        if not problems:
            return self.tr("✓ Every column is ready.")
        head = self.tr("{0} problem(s) to fix before continuing:").format(len(problems))
        return head + "<br>" + "<br>".join(f"• {p}" for p in problems[:6]) + ("<br>…" if len(problems) > 6 else "")

    # ---- edits -------------------------------------------------------------------------
    def selected_columns(self) -> list:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        rec = self.session.recipe
        if rec is None:
            return []
        return [rec.columns[i] for i in sorted({r.row() for r in rows}) if i < len(rec.columns)]

    def current_column(self):
        cols = self.selected_columns()
        return cols[0] if cols else None

    def select(self, *names: str) -> None:
        """Select exactly the columns ``names`` (selectRow would add to the selection while a
        modifier key is held)."""
        from PySide6.QtCore import QItemSelection, QItemSelectionModel

        sel = QItemSelection()
        for n in names:
            i = self._names.index(n)
            sel.select(self.table.model().index(i, 0), self.table.model().index(i, self.table.columnCount() - 1))
        self.table.selectionModel().select(sel, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        if names:
            self.table.setCurrentCell(self._names.index(names[0]), 0, QItemSelectionModel.SelectionFlag.NoUpdate)

    def _selected(self):
        cols = self.selected_columns()
        self.editor.rows = self.session.schema.rows if self.session.schema is not None else None
        schema = self.session.schema  # empty cells per column: the "may be empty" proposal
        self.editor.empty_cells = {c.name: c.missing for c in schema.columns} if schema is not None else {}
        offer = self._offer(cols[0]) if len(cols) == 1 else None
        self.editor.set_release_type(self.session.recipe.release.type if self.session.recipe is not None else None)
        self.editor.show_columns(cols, offer)

    def _offer(self, col):
        """The obvious public domain of a yes/no column (edits.binary_domain_offer)."""
        schema, frame = self.session.schema, self.session.frame
        if frame is None or col.name not in frame.columns:
            return None
        try:
            inferred = schema.column(col.name).type if schema is not None else None
        except KeyError:
            inferred = None
        return binary_domain_offer(col, inferred, frame[col.name])

    def _role(self, name, role):
        self.session.update(lambda r: set_role(r, name, role))

    def _type(self, name, col_type):
        self.session.update(lambda r: set_type(r, name, col_type))

    def _confirm_all(self):
        self.session.update(confirm_suggestions)

    def _domain_edited(self, name, domain, acknowledged):
        self.session.update(lambda r: set_domain(r, name, domain, acknowledge=acknowledged))

    def _domains_edited(self, names, domain, acknowledged):
        self.session.update(lambda r: set_domains(r, names, domain, acknowledge=acknowledged))

    # ---- domain tables and files -----------------------------------------------------------
    def paste_domains(self, text: str | None = None, *, run=None) -> dict:
        """The paste dialog on ``text`` (default: the clipboard); applies the rows without a
        problem.  ``run`` replaces ``dialog.exec`` in tests.  The applied domains."""
        rec = self.session.recipe
        if rec is None:
            return {}
        if text is None:
            text = QGuiApplication.clipboard().text()
        dialog = DomainTableDialog(rec, text, self)
        accepted = (run or (lambda d: d.exec()))(dialog) == QDialog.DialogCode.Accepted
        if not accepted:
            return {}
        good = dialog.good()
        if good:
            report = self._apply(good, acknowledge=False)
            self._note_report(report.lines()[:1] + [self.tr("not applied: {0}").format(p) for p in dialog.problems()])
        return good

    def _apply(self, domains: dict, *, acknowledge: bool):
        box = {}

        def edit(r):
            out, box["report"] = apply_domain_file(r, domains, acknowledge=acknowledge)
            return out

        self.session.update(edit)
        return box["report"]

    def _note_report(self, lines: list[str]) -> None:
        from html import escape

        shown = (
            lines if len(lines) <= 5 else lines[:4] + [self.tr("… and {0} more (hover for all)").format(len(lines) - 4)]
        )
        self.domains_label.setText("<br>".join(escape(x) for x in shown))
        self.domains_label.setToolTip("\n".join(lines) if len(lines) > 5 else "")
        self.domains_label.setVisible(bool(lines))

    def load_domains(self, path: str | None = None):
        """Apply a domain file to the matching columns; what was not applied is reported."""
        from dpstudio.errors import UserError
        from dpstudio.recipe.domainfile import load_domains as read

        if self.session.recipe is None:
            return None
        path = path or self.choose_open_file()
        if not path:
            return None
        try:
            domains = read(path)
        except UserError as exc:
            problems = getattr(exc, "problems", None)
            self.show_message(
                self.tr("The domain file cannot be used"),
                str(exc) if not problems else "\n".join(problems[:12]) + ("\n…" if len(problems) > 12 else ""),
            )
            return None
        copies = [n for n, d in domains.items() if d.source == "data"]
        acknowledge = bool(copies) and self.confirm_copies(copies)
        report = self._apply(domains, acknowledge=acknowledge)
        lines = report.lines()
        self._note_report(lines)
        if report.skipped:
            self.show_message(self.tr("Some domains were not applied"), "\n".join(lines))
        return report

    def save_domains(self, path: str | None = None) -> int:
        from dpstudio.errors import UserError
        from dpstudio.recipe.domainfile import save_domains as write

        rec = self.session.recipe
        if rec is None:
            return 0
        path = path or self.choose_save_file()
        if not path:
            return 0
        from dpstudio.ledger import default_ledger_path
        from dpstudio.targets import refuse_overwrite

        loaded = self.session.loaded
        try:
            # never over the data, the recipe or the ledger (the same rules as a release's targets)
            refuse_overwrite(
                "domain file",
                path,
                input_path=loaded.path if loaded is not None else None,
                recipe_path=self.session.recipe_source,
                ledger_path=default_ledger_path(),
                replace_existing=True,  # the save dialog has asked before replacing a file
            )
            from dpstudio.pipeline import refuse_paid_file

            refuse_paid_file(default_ledger_path(), "domain file", path)  # never a paid release's file
            n = write(rec, path)
        except (UserError, OSError) as exc:
            self.show_message(self.tr("The domains were not saved"), str(exc))
            return 0
        self._note_report([self.tr("{0} domain(s) saved to {1}").format(n, path)])
        return n

    def _choose_open_file(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Load domains"), "", self.tr(DOMAIN_FILES))
        return path

    def _choose_save_file(self) -> str:
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save domains"), "domains.json", self.tr(DOMAIN_FILES))
        return path

    def _confirm_copies(self, names: list[str]) -> bool:
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            self.tr("Copy domains from the private data?"),
            self.tr("The file asks to copy the domain of {0} from the private data.").format(", ".join(names)),
            QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setInformativeText(
            self.tr(
                "The minimum, maximum and rare categories often belong to one identifiable person; the "
                "privacy guarantee does not cover them. Cancel applies the rest of the file without these."
            )
        )
        ok = box.addButton(self.tr("I understand, copy from the data"), QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is ok

    def _show_message(self, title: str, text: str) -> None:
        QMessageBox.information(self, title, text)
