"""Step 3 - Release: what kind of release, and the mechanism for each column, each explained
in plain words (what it protects, what it does not)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QButtonGroup, QComboBox, QDoubleSpinBox, QGridLayout,
                               QGroupBox, QHBoxLayout, QHeaderView, QLabel, QRadioButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout)

from dpstudio.gui.texts import mechanism_text, mechanism_tooltip, release_text
from dpstudio.gui.wizard.base import WizardPage, blocked, note_label
from dpstudio.gui.wizard.edits import allowed_mechanisms, set_mechanism, set_release_type
from dpstudio.recipe.model import RELEASE_TYPES


def release_available(rtype: str) -> bool:
    from dpstudio.engine.release import release_module
    try:
        release_module(rtype)
        return True
    except Exception:  # noqa: BLE001 - the engine part may not exist yet
        return False


class ReleasePage(WizardPage):
    key = "release"

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        types_box = QGroupBox(self.tr("What do you want to release?"))
        grid = QGridLayout(types_box)
        self.type_group = QButtonGroup(self)
        self.type_buttons = {}
        for i, rtype in enumerate(RELEASE_TYPES):
            title, what, guarantee = release_text(rtype)
            rb = QRadioButton(title)
            rb.setToolTip(f"{what}\n\n{guarantee}")
            if not release_available(rtype):
                rb.setEnabled(False)
                rb.setText(title + " " + self.tr("(not available yet)"))
            self.type_group.addButton(rb)
            self.type_buttons[rtype] = rb
            rb.toggled.connect(lambda on, t=rtype: on and self._type_chosen(t))
            grid.addWidget(rb, i // 2, i % 2)
        self.type_text = note_label()
        grid.addWidget(self.type_text, 3, 0, 1, 2)

        self.method = QComboBox()
        self.method.currentIndexChanged.connect(self._method_chosen)
        self.method_row = QHBoxLayout()
        self.method_label = QLabel(self.tr("Synthesizer:"))
        self.method_row.addWidget(self.method_label)
        self.method_row.addWidget(self.method, 1)
        grid.addLayout(self.method_row, 4, 0, 1, 2)

        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels([self.tr("Column"), self.tr("Mechanism"), self.tr("Budget share"),
                                              self.tr("What it protects — and what it does not")])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.problem_label = note_label("", "problems")
        lay = QVBoxLayout(self)
        lay.addWidget(types_box)
        lay.addWidget(QLabel(self.tr("<b>How each released column is protected</b>")))
        lay.addWidget(self.table, 1)
        lay.addWidget(self.problem_label)
        self._rows_key = None

    def title(self):
        return self.tr("Choose the release")

    def subtitle(self):
        return self.tr("Pick what to publish and how each column is protected.")

    def help_text(self):
        parts = []
        for t in RELEASE_TYPES:
            title, what, guarantee = release_text(t)
            parts.append(f"<b>{title}</b>: {what} {guarantee}")
        for m in ("laplace", "gaussian", "rr", "metric"):
            title, what, protects, not_ = mechanism_text(m)
            parts.append(f"<b>{title}</b>: {what} {protects} {not_}")
        return "<br><br>".join(parts)

    def refresh(self):
        rec = self.session.recipe
        if rec is None:
            return
        rtype = rec.release.type
        with blocked(*self.type_buttons.values()):
            self.type_buttons[rtype].setChecked(True)
        title, what, guarantee = release_text(rtype)
        self.type_text.setText(f"{what}<br><i>{guarantee}</i>")
        self._refresh_method(rec)
        self._refresh_table(rec)
        problems = self.problems()
        self.problem_label.setText("" if not problems else "<br>".join(f"• {p}" for p in problems[:6]))

    def _refresh_method(self, rec):
        show = rec.release.type == "synthetic"
        self.method.setVisible(show)
        self.method_label.setVisible(show)
        if not show:
            return
        try:
            from dpstudio.engine.release.synthetic import DEFAULT_METHOD, METHOD_TEXT
        except Exception:  # noqa: BLE001
            DEFAULT_METHOD, METHOD_TEXT = "pearl", {"pearl": "PEARL"}
        with blocked(self.method):
            if self.method.count() != len(METHOD_TEXT):
                self.method.clear()
                for k, text in METHOD_TEXT.items():
                    self.method.addItem(text, k)
            self.method.setCurrentIndex(max(0, self.method.findData(rec.release.options.get("method", DEFAULT_METHOD))))

    def _refresh_table(self, rec):
        rtype = rec.release.type
        rows = [c for c in rec.columns if c.role not in ("identifier", "ignore")]
        key = (rtype, tuple((c.name, c.role, c.type) for c in rows))
        if key != self._rows_key:
            self._rows_key = key
            self.table.setRowCount(len(rows))
            for i, c in enumerate(rows):
                self.table.setItem(i, 0, QTableWidgetItem(c.name))
                allowed = allowed_mechanisms(c, rtype)
                if len(allowed) > 1:
                    combo = QComboBox()
                    for m in allowed:
                        combo.addItem(mechanism_text(m)[0], m)
                        combo.setItemData(combo.count() - 1, mechanism_tooltip(m), Qt.ItemDataRole.ToolTipRole)
                    combo.currentIndexChanged.connect(
                        lambda _i, n=c.name, w=combo: self.session.update(lambda r: set_mechanism(r, n, w.currentData())))
                    self.table.setCellWidget(i, 1, combo)
                else:
                    self.table.removeCellWidget(i, 1)
                    if allowed:
                        name = mechanism_text(allowed[0])[0]
                    else:
                        name = self.tr("chosen by the synthesizer") if rtype == "synthetic" else self.tr("part of the model")
                    self.table.setItem(i, 1, QTableWidgetItem(name))
                if allowed and allowed != ("none",):
                    spin = QDoubleSpinBox()
                    spin.setRange(0.1, 10.0)
                    spin.setSingleStep(0.5)
                    spin.setToolTip(self.tr("Relative share of ε: a column with share 2 gets twice the budget "
                                            "(less noise) of a column with share 1."))
                    spin.valueChanged.connect(
                        lambda v, n=c.name: self.session.update(lambda r: set_mechanism(r, n, weight=v)))
                    self.table.setCellWidget(i, 2, spin)
                else:
                    self.table.removeCellWidget(i, 2)
                    self.table.setItem(i, 2, QTableWidgetItem("—"))
                self.table.setItem(i, 3, QTableWidgetItem())
        for i, c in enumerate(rows):
            allowed = allowed_mechanisms(c, rtype)
            mech = c.mechanism.name if c.mechanism is not None else (allowed[0] if allowed else None)
            combo = self.table.cellWidget(i, 1)
            if isinstance(combo, QComboBox):
                with blocked(combo):
                    combo.setCurrentIndex(max(0, combo.findData(mech)))
            spin = self.table.cellWidget(i, 2)
            if isinstance(spin, QDoubleSpinBox):
                with blocked(spin):
                    spin.setValue(c.mechanism.weight if c.mechanism is not None else 1.0)
            item = self.table.item(i, 3)
            if mech is None:
                item.setText(self.tr("Used to train the synthesizer / model; never published row by row."))
                item.setToolTip("")
            elif mech == "none":
                item.setText(self.tr("Copied as it is: protects nothing. Only for information that is already public."))
                item.setToolTip(mechanism_tooltip(mech))
            else:
                title, what, protects, not_ = mechanism_text(mech)
                item.setText(f"{what}\n{protects}\n{not_}")
                item.setToolTip(mechanism_tooltip(mech))

    def _type_chosen(self, rtype):
        self.session.update(lambda r: set_release_type(r, rtype))

    def _method_chosen(self, _i):
        from dataclasses import replace
        m = self.method.currentData()
        if m:
            self.session.update(lambda r: replace(r, release=replace(r.release, options=r.release.options.with_(method=m))))
