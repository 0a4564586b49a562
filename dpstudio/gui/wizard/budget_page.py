"""Step 4 - Budget: epsilon (log slider + spin box) and delta, the dataset's ledger balance,
and live charts that follow epsilon."""

from __future__ import annotations

import html
import math
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QButtonGroup,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QRadioButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.charts.preview import EPS_MAX, EPS_MIN, fmt_delta, fmt_loss
from dpstudio.gui.texts import delta_tooltip, epsilon_tooltip
from dpstudio.gui.wizard.base import WizardPage, blocked, note_label
from dpstudio.gui.wizard.budget_charts import FitScrollArea, PreviewPanel
from dpstudio.gui.wizard.targets_panel import TargetsPanel
from dpstudio.recipe.model import Params

SLIDER_STEPS = 1000
_LO, _HI = math.log10(EPS_MIN), math.log10(EPS_MAX)


def slider_to_eps(pos: int) -> float:
    return float(f"{10 ** (_LO + (_HI - _LO) * pos / SLIDER_STEPS):.3g}")


def eps_to_slider(eps: float) -> int:
    eps = min(max(eps, EPS_MIN), EPS_MAX)
    return round((math.log10(eps) - _LO) / (_HI - _LO) * SLIDER_STEPS)


def strength(eps: float, tr) -> str:
    if eps <= 1:
        return tr("strong protection")
    if eps <= 5:
        return tr("moderate protection")
    if eps <= 10:
        return tr("weak protection")
    return tr("very weak protection")


class BudgetPage(WizardPage):
    key = "budget"

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setPageStep(50)
        self.slider.setMinimumWidth(100)  # log scale: 1000 steps from 0.01 to 50, about 0.85 % each
        self.slider.setToolTip(epsilon_tooltip())
        self.slider.valueChanged.connect(lambda pos: self.set_epsilon(slider_to_eps(pos)))
        self.spin = QDoubleSpinBox()
        self.spin.setRange(EPS_MIN, EPS_MAX)
        self.spin.setDecimals(3)
        self.spin.setSingleStep(0.1)
        # a typed value is taken as typed when the user is done (not on every keystroke), and
        # the slider follows it without rounding it
        self.spin.setKeyboardTracking(False)
        self.spin.setToolTip(epsilon_tooltip())
        self.spin.valueChanged.connect(self.set_epsilon)
        self.strength = QLabel()
        self.delta = QLineEdit()
        v = QDoubleValidator(0.0, 0.999, 20)
        v.setNotation(QDoubleValidator.Notation.ScientificNotation)
        self.delta.setValidator(v)
        self.delta.setToolTip(delta_tooltip())
        self.delta.setMaximumWidth(120)
        self.delta.editingFinished.connect(self._delta_edited)
        self.delta_hint = QLabel()
        self.delta_hint.setObjectName("note")
        self.delta_hint.setWordWrap(True)  # a long hint wraps, never widens the window
        self.delta.setMinimumWidth(80)

        eps_label = QLabel(self.tr("Privacy budget ε"))
        eps_label.setToolTip(epsilon_tooltip())
        delta_label = QLabel(self.tr("δ"))
        delta_label.setToolTip(delta_tooltip())
        self.eps_row = QWidget()  # hidden while the targets set ε
        row = QHBoxLayout(self.eps_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(eps_label)
        row.addWidget(self.spin)
        row.addWidget(QLabel(self.tr("more private")))
        row.addWidget(self.slider, 1)
        row.addWidget(QLabel(self.tr("more accurate")))
        row2 = QHBoxLayout()
        row2.addWidget(delta_label)
        row2.addWidget(self.delta)
        row2.addWidget(self.delta_hint, 1)

        self.total = QLabel()
        self.total.setTextFormat(Qt.TextFormat.RichText)
        self.total.setWordWrap(True)
        self.ledger_text = QLabel()
        self.ledger_text.setWordWrap(True)
        self.cap_button = QPushButton(self.tr("Set a budget cap…"))
        self.cap_button.setToolTip(self.tr("The most ε this dataset may ever spend over all its releases."))
        self.cap_button.clicked.connect(self.ask_cap)
        ledger_box = QGroupBox(self.tr("This dataset's budget"))
        lb = QVBoxLayout(ledger_box)
        lb.addWidget(self.ledger_text, 1)
        lb.addWidget(self.cap_button, 0, Qt.AlignmentFlag.AlignLeft)

        # two ways to set the budget: type ε, or state targets and let dpstudio find ε
        self.mode_eps = QRadioButton(self.tr("Set ε"))
        self.mode_eps.setToolTip(self.tr("Choose the privacy budget ε yourself and watch the charts follow it."))
        self.mode_targets = QRadioButton(self.tr("Set targets"))
        self.mode_targets.setToolTip(
            self.tr(
                "Say what the release must achieve (how accurate a column stays, how well an attacker "
                "may guess) and let dpstudio find the smallest ε that achieves it."
            )
        )
        self.mode_group = QButtonGroup(self)
        self.mode_group.addButton(self.mode_eps)
        self.mode_group.addButton(self.mode_targets)
        self.mode_eps.setChecked(True)
        self.mode_targets.toggled.connect(self._mode_toggled)
        mode_row = QHBoxLayout()
        mode_row.addWidget(self.mode_eps)
        mode_row.addWidget(self.mode_targets)
        mode_row.addStretch(1)
        self.targets = TargetsPanel(session, runner, self.remaining_epsilon)
        self.targets.setVisible(False)
        self.targets.searched.connect(self._refresh_problems)
        self.targets.solved.connect(self._show_target_column)

        controls = QGroupBox(self.tr("Budget of this release"))
        cl = QVBoxLayout(controls)
        cl.addLayout(mode_row)
        cl.addWidget(self.eps_row)
        cl.addWidget(self.targets)
        cl.addLayout(row2)
        total_row = QHBoxLayout()  # the strength beside the total: the box stays three lines high
        total_row.addWidget(self.total, 1)
        total_row.addWidget(self.strength)
        cl.addLayout(total_row)
        self.problem_label = note_label("", "problems")
        self.top = top = QHBoxLayout()
        top.addWidget(controls, 3)
        top.addWidget(ledger_box, 2)
        self.preview = PreviewPanel(session, runner)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.problem_label)
        self.range_warning = note_label("", "warning")  # columns whose error exceeds their range
        self.range_warning.setTextFormat(Qt.TextFormat.RichText)
        self.range_warning.setVisible(False)
        lay.addWidget(self.range_warning)
        # the charts scroll rather than shrink under their axes when the window is short
        self.preview_scroll = FitScrollArea(self.preview)
        lay.addWidget(self.preview_scroll, 1)
        self.ledger_summary = None

    def title(self):
        return self.tr("Set the privacy budget")

    def subtitle(self):
        return self.tr("Move ε and watch the charts: less ε means more privacy and more noise.")

    def help_text(self):
        return "<br><br>".join(
            [
                epsilon_tooltip(),
                delta_tooltip(),
                self.tr(
                    "“Set targets” turns this around: say what the release must achieve — a column's "
                    "values within a tolerance for a share of the records, categories kept with some "
                    "probability, at most some share of correct guesses of the label, at most some share "
                    "of people re-identified — and “Find ε” finds the smallest ε that achieves all of it "
                    "and how to share it among the columns. Targets about attackers are estimated from "
                    "the raw data: for internal use only."
                ),
                self.tr(
                    "The left chart shows the expected error of the selected column at every ε, next to the red "
                    "floor: no differentially private mechanism can be more accurate than the floor. The "
                    "histogram compares original and privatized values on a sample (this preview stays on your "
                    "computer). For label releases, the attacker chart shows how often someone could guess the "
                    "label from the published data."
                ),
            ]
        )

    # ---- edits -------------------------------------------------------------------------
    def set_epsilon(self, eps: float) -> None:
        """The user's ε rules: a solved budget's record no longer holds (the targets stay)."""
        eps = float(eps)
        if eps > 0:
            self.session.update(
                lambda r: replace(r, budget=replace(r.budget, epsilon=eps, solved=Params())), merge="epsilon"
            )

    def _delta_edited(self):
        try:
            d = float(self.delta.text() or 0)
        except ValueError:
            return
        self.session.update(lambda r: replace(r, budget=replace(r.budget, delta=d, solved=Params())))

    # ---- mode --------------------------------------------------------------------------
    @property
    def targets_mode(self) -> bool:
        return self.mode_targets.isChecked()

    def set_mode(self, targets: bool) -> None:
        (self.mode_targets if targets else self.mode_eps).setChecked(True)

    def _mode_toggled(self, targets: bool) -> None:
        self.eps_row.setVisible(not targets)
        self.targets.setVisible(targets)
        self.top.setStretch(0, 5 if targets else 3)  # the targets' table takes room from the ledger's box
        self.total.setVisible(not targets)  # the targets panel states the total beside the ε found
        if targets:
            self.targets.refresh()

    def _show_target_column(self) -> None:
        """After a search, the charts show the first column a target is about."""
        rec = self.session.recipe
        column = next((t.column for t in rec.budget.targets if t.column), None) if rec is not None else None
        combo = self.preview.column_combo
        i = combo.findText(column) if column else -1
        if i >= 0:
            combo.setCurrentIndex(i)

    def remaining_epsilon(self) -> float | None:
        """What the dataset's ledger cap leaves (None: no cap set)."""
        rem = (self.ledger_summary or {}).get("remaining") or {}
        e = rem.get("epsilon")
        return None if e is None else float(e)

    # ---- view --------------------------------------------------------------------------
    def on_data_changed(self):
        # the mode follows the loaded recipe: targets mode when it states targets
        rec = self.session.recipe
        self.targets.solution = None  # found for the previous table
        self.set_mode(bool(rec is not None and rec.budget.targets))
        self.refresh_ledger()

    def refresh(self):
        rec = self.session.recipe
        if rec is None:
            return
        eps, delta = rec.budget.epsilon, rec.budget.delta
        with blocked(self.slider, self.spin):
            if slider_to_eps(self.slider.value()) != eps:
                self.slider.setValue(eps_to_slider(eps))
            if abs(self.spin.value() - eps) > 1e-9:
                self.spin.setValue(eps)
        self.strength.setText(strength(eps, self.tr))
        if not self.delta.hasFocus():
            self.delta.setText("0" if delta == 0 else f"{delta:.1e}")
        rows = self.session.schema.rows if self.session.schema else 0
        plan, err = self.session.plan()
        if rec.release.type == "model" and plan is not None and plan.total.delta == 0:
            # the plan settled a pure ε-DP mechanism for this table: what it charges is δ = 0
            hint = self.tr("the mechanism chosen for this table is pure ε-DP: δ = 0 is charged (1/n = {0})")
        elif rec.release.type in ("synthetic", "model", "density"):
            hint = self.tr("this release needs δ > 0; keep it far below 1/n = {0}")
        else:
            hint = self.tr("keep δ far below 1/n = {0}; 0 = pure ε-DP")
        self.delta_hint.setText(hint.format(fmt_delta(1 / rows)) if rows else "")
        if plan is not None:
            t = plan.total
            text = self.tr("Total privacy loss of this release (computed): <b>ε = {0:.3g}</b>").format(t.epsilon)
            if t.delta:
                text += self.tr(", δ = {0}").format(fmt_delta(t.delta))
            self.total.setText(text)
        else:
            self.total.setText(self.tr("Total privacy loss: not computable yet — {0}").format(err))
        self._refresh_problems()
        self._refresh_range_warning(plan)
        if self.targets_mode:
            self.targets.refresh()
        self.preview.update_all()
        self._ledger_text()

    def _refresh_problems(self) -> None:
        problems = self.problems()
        if self.targets_mode and not self.targets.stale:
            # the targets' table and advice say how the current solution meets them
            problems = [p for p in problems if p.field != "targets"]
        texts = [self._target_words(str(p)) for p in problems]
        self.problem_label.setText("<br>".join(f"• {p}" for p in texts))
        self.problem_label.setVisible(bool(texts))  # no empty line taking room from the charts

    def _target_words(self, text: str) -> str:
        """A problem about a target names it in words, not in its recipe form."""
        from dpstudio.plan.solve import describe

        rec = self.session.recipe
        for t in rec.budget.targets if rec is not None else ():
            text = text.replace(f"targets: {t.spec}:", self.tr("Target “{0}”:").format(describe(t)))
        return text

    def _refresh_range_warning(self, plan) -> None:
        """Warn about numeric columns whose expected error (the compiled plan's) exceeds the width
        of their public bounds: their released values say little about the real ones."""
        from dpstudio.gui.charts.preview import fmt_number

        parts = []
        for u in plan.perturbation_units if plan is not None else ():
            if not u.error_exceeds_range:
                continue
            low, high = u.domain
            worst = self.tr(" at most") if u.provisional else ""
            parts.append(
                self.tr("<b>{0}</b> (noise about {1}{2}, range {3} to {4})").format(
                    ", ".join(u.columns), fmt_number(u.expected_error), worst, fmt_number(low), fmt_number(high)
                )
            )
        text = ""
        if parts:
            text = (
                "<span style='color:#D55E00'>⚠ "
                + self.tr(
                    "The expected noise is larger than the whole range of {0}: the released values say little "
                    "about the real ones. To make them useful, give these columns more ε (a larger budget above, "
                    "or a larger budget share on the Release page), group their values into a few categories "
                    "(a coarser domain, on the Columns page), or release synthetic data instead."
                ).format(self.tr(" and ").join(parts) if len(parts) <= 2 else ", ".join(parts))
                + "</span>"
            )
        self.range_warning.setText(text)
        self.range_warning.setVisible(bool(parts))

    def refresh_ledger(self):
        self.ledger_summary = None
        if self.session.loaded is None:
            return
        try:
            from dpstudio.gui.session import open_ledger

            self.ledger_summary = self.session.ledger_lookup(open_ledger())
            self.ledger_error = None
        except Exception as exc:  # noqa: BLE001 - shown in the box
            from dpstudio.gui.dialogs import error_summary

            self.ledger_error = error_summary(exc)
        self._ledger_text()

    def _ledger_text(self):
        s = self.ledger_summary
        if s is None:
            self.ledger_text.setText(getattr(self, "ledger_error", None) or self.tr("Ledger not available yet."))
            self.cap_button.setEnabled(False)
            return
        self.cap_button.setEnabled(True)
        cap = s.get("cap")
        lines = []
        ident = s.get("identity") or {}
        if ident.get("how") in ("rows", "name"):  # charged to a dataset this file is not the first file of
            why = (
                (
                    self.tr("its rows match {0:.0%} of '{1}' over all but one column")
                    if ident.get("over_columns")
                    else self.tr("its rows match {0:.0%} of '{1}'")
                ).format(ident.get("share_of_rows") or 0, ident.get("matched_file"))
                if ident["how"] == "rows"
                else self.tr("the recipe names it")
            )
            lines.append(
                self.tr("This file is charged to dataset '{0}' ({1}).").format(
                    html.escape(str(s.get("dataset_name") or s.get("name"))), html.escape(why)
                )
            )
        lines.append(
            self.tr("Spent so far: {0} in {1} release(s)").format(fmt_loss(s.get("spent")), s.get("releases", 0))
        )
        for kind, v in (s.get("spent_by_guarantee") or {}).items():  # totals of different guarantees
            lines.append("&nbsp;&nbsp;" + self.tr("of which {0}: {1}").format(html.escape(kind), fmt_loss(v)))
        lines.append(self.tr("Cap: {0}").format(fmt_loss(cap) if cap else self.tr("none set")))
        rem = s.get("remaining")
        if rem:
            lines.append(self.tr("Remaining: {0}").format(fmt_loss(rem)))
            plan, _ = self.session.plan()
            over_e = plan is not None and rem.get("epsilon") is not None and plan.total.epsilon > rem["epsilon"] + 1e-12
            # δ too: the ledger refuses a release that would pass either cap
            over_d = plan is not None and rem.get("delta") is not None and plan.total.delta > rem["delta"] + 1e-12
            if over_e or over_d:
                lines.append(
                    "<span style='color:#D55E00'>"
                    + self.tr("This release needs more than what remains: it will be refused.")
                    + "</span>"
                )
        from dpstudio.gui.session import RECOVERED

        for note in RECOVERED:  # what opening the ledger settled this session (a crash before)
            lines.append("<span style='color:#D55E00'>" + html.escape(self.tr("Ledger: {0}.").format(note)) + "</span>")
        self.ledger_text.setText("<br>".join(lines))

    def ask_cap(self):
        if self.session.loaded is None:
            return
        cur = (self.ledger_summary or {}).get("cap") or {}
        value, ok = QInputDialog.getDouble(
            self,
            self.tr("Budget cap"),
            self.tr("Total ε this dataset may spend over all releases:"),
            cur.get("epsilon") or 5.0,
            0.0,
            1000.0,
            3,
        )
        if ok and self.cap_below_spent_confirmed(value):
            self.set_cap(value)

    def cap_below_spent_confirmed(self, epsilon: float) -> bool:
        """A cap below what the dataset has spent admits no further release: said, and asked
        (it was set without a word, and the panel then read "Remaining: ε 0")."""
        spent = ((self.ledger_summary or {}).get("spent") or {}).get("epsilon") or 0.0
        if epsilon >= spent:
            return True
        answer = QMessageBox.question(
            self,
            self.tr("Cap below what was spent"),
            self.tr(
                "This dataset has already spent ε {0:.3g}. A cap of ε {1:.3g} is below that: no further "
                "release of it will be admitted (the releases made stay recorded). Set it anyway?"
            ).format(spent, epsilon),
        )
        return answer == QMessageBox.StandardButton.Yes

    def set_cap(self, epsilon: float):
        from dpstudio.gui.dialogs import show_error

        if self.session.loaded is None:  # no dataset: no ledger entry to cap
            return
        try:
            from dpstudio.ledger import Ledger

            # the dataset a release of this file is charged to (its rows may be a known
            # dataset's); a δ cap already set stays
            known = self.ledger_summary or {}
            cap = known.get("cap") or {}
            Ledger().set_cap(known.get("dataset") or self.session.loaded.sha256, epsilon, cap.get("delta"))
        except Exception as exc:  # noqa: BLE001
            show_error(self.window(), self.tr("Could not set the cap"), exc)
        self.refresh_ledger()
