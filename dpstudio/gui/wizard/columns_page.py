"""Step 2 - Columns: each column's role, type and domain, with the inferred suggestions
preselected; identifiers and ignored columns are visibly dropped."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from dpstudio.gui.texts import role_text
from dpstudio.gui.wizard.base import WizardPage, blocked, cell_widget, note_label, table_item
from dpstudio.gui.wizard.domain_editor import DomainEditor, domain_summary
from dpstudio.gui.wizard.edits import DROPPED_ROLES, confirm_suggestions, set_domain, set_role, set_type
from dpstudio.recipe.model import COLUMN_TYPES, ROLES

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
                self.tr("Domain (public range / categories)"),
                self.tr("Status"),
            ]
        )
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(COL_DOMAIN, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._selected)
        self.editor = DomainEditor()
        self.editor.setMinimumWidth(330)
        self.editor.domainEdited.connect(self._domain_edited)
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
        row = QHBoxLayout()
        row.addWidget(self.table, 3)
        row.addWidget(self.editor, 2)
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
            self.table.selectRow(0)

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
                    self.tr("— not needed: released as it is")
                    if passes
                    else domain_summary(c) or self.tr("⚠ missing: type the public range")
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
                "{0} column(s) have a type or role (in italics) read from the data, not chosen by you. "
                "They decide the released grid (integer or float) and which columns are released: change "
                "them, or confirm them."
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
    def current_column(self):
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or self.session.recipe is None:
            return None
        return self.session.recipe.columns[rows[0].row()]

    def select(self, name: str) -> None:
        self.table.selectRow(self._names.index(name))

    def _selected(self):
        self.editor.show_column(self.current_column())

    def _role(self, name, role):
        self.session.update(lambda r: set_role(r, name, role))

    def _type(self, name, col_type):
        self.session.update(lambda r: set_type(r, name, col_type))

    def _confirm_all(self):
        self.session.update(confirm_suggestions)

    def _domain_edited(self, name, domain, acknowledged):
        self.session.update(lambda r: set_domain(r, name, domain, acknowledge=acknowledged))
