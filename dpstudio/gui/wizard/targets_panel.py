"""The budget page's "Set targets" mode: the user states what the release must achieve and
dpstudio finds the smallest ε (and split) that meets it (``dpstudio.plan.solve``).

The targets live in the recipe (``budget.targets``); the panel only edits them through the
session.  "Find ε" runs on the worker thread: the risk targets' evidence (an attacker model and
a linkage attack fitted on the raw data, cached in ``session.derived``) and the solver.  A
solution that meets every target is applied: its ε, weights and record become the session's
recipe, so the page's ε controls, charts and table follow it.  Every figure shown is read off
the solution's compiled plan (``Solution.plan``) or its per-target results.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.i18n import tr
from dpstudio.gui.session import Session
from dpstudio.gui.workers import TaskRunner, Worker
from dpstudio.recipe.model import Recipe, Target
from dpstudio.recipe.validate import DROPPED_ROLES, MAX_EPSILON, TARGET_RELEASES

#: kinds the solver needs data for (an attacker model, a simulated release, the number of rows)
EVIDENCE_KINDS = ("label-attack", "reid", "marginals")
RISK_KINDS = ("label-attack", "reid")
INTERNAL_NOTE = "Estimated from the raw data: for internal use only."

#: kind -> (short name, what it means)
KINDS: dict[str, tuple[str, str]] = {
    "within": (
        "Within a tolerance",
        "The released value of this column stays within ± the tolerance of the real value for at "
        "least this share of the records.",
    ),
    "keep": (
        "Category kept",
        "Each record's category in this column is released unchanged with at least this "
        "probability (otherwise it is swapped for a random other category).",
    ),
    "marginals": (
        "Synthetic proportions",
        "Each column's proportions in the synthetic table stay close to the real ones: the total "
        "variation distance (0 = identical, 1 = nothing in common), on average over the columns, "
        "is at most this value.",
    ),
    "label-attack": (
        "Label guessing",
        "No attacker who sees the release guesses a person's label right more often than this share of the time.",
    ),
    "reid": (
        "Re-identification",
        "At most this share of people can be re-identified by linking the release to what is published unchanged.",
    ),
}

#: kind -> default value (within: the share of records; its tolerance is 5 % of the range)
DEFAULTS = {"within": 0.95, "keep": 0.8, "marginals": 0.05, "label-attack": 0.6, "reid": 0.01}
#: kinds whose value is a probability, shown in percent
PERCENT_KINDS = ("keep", "label-attack", "reid")


def kind_name(kind: str) -> str:
    return tr(KINDS[kind][0])


def kind_tooltip(kind: str) -> str:
    text = tr(KINDS[kind][1])
    if kind in RISK_KINDS:
        text += " " + tr(INTERNAL_NOTE)
    return text


def target_columns(recipe: Recipe, kind: str) -> list[str]:
    """The columns a ``kind`` target can be about (as ``validate.target_problems`` accepts them)."""
    if kind not in ("within", "keep"):
        return []
    want = ("laplace", "gaussian") if kind == "within" else ("rr",)
    return [
        c.name
        for c in recipe.columns
        if c.mechanism is not None and c.mechanism.name in want and c.role not in DROPPED_ROLES and c.role != "public"
    ]


def target_kinds(recipe: Recipe) -> list[str]:
    """The target kinds that apply to the recipe's release type and have a column to be about."""
    rtype = recipe.release.type
    return [
        k
        for k, types in TARGET_RELEASES.items()
        if k in KINDS and rtype in types and (k not in ("within", "keep") or target_columns(recipe, k))
    ]


def column_range(recipe: Recipe, column: str) -> tuple[float, float] | None:
    """The column's public range (its bounds, else the search range of DP-estimated bounds)."""
    try:
        dom = recipe.column(column).domain
    except Exception:  # noqa: BLE001 - no such column
        return None
    if dom is None:
        return None
    for lo, hi in ((dom.low, dom.high), (dom.search_low, dom.search_high)):
        if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi) and hi > lo:
            return float(lo), float(hi)
    return None


def default_tolerance(recipe: Recipe, column: str) -> float:
    """5 % of the column's public range, rounded to two significant digits (1 without a range)."""
    rng = column_range(recipe, column)
    if rng is None:
        return 1.0
    return float(f"{0.05 * (rng[1] - rng[0]):.2g}")


def solve_key(recipe: Recipe) -> tuple:
    """What a solution depends on: the columns, the release and the budget (not the outputs)."""
    return (recipe.columns, recipe.release, recipe.budget)


def evidence_key(session: Session, recipe: Recipe) -> tuple | None:
    """Where the targets' evidence is kept in ``session.derived`` (None: none needed)."""
    from dpstudio.risk import unchanged_columns

    kinds = tuple(sorted({t.kind for t in recipe.budget.targets if t.kind in EVIDENCE_KINDS}))
    if not any(k in RISK_KINDS for k in kinds):
        return None
    labels = tuple(c.name for c in recipe.columns if c.role == "label")
    return ("target-evidence", session.data_token, kinds, recipe.release.type, tuple(unchanged_columns(recipe)), labels)


def find_epsilon(recipe, frame, rows, cap, evidence, *, progress, cancel):
    """Worker job: the targets' evidence (when not given and a risk target needs it), then the
    solver.  Returns ``(evidence, solution)``."""
    from dpstudio.engine.progress import sub_progress
    from dpstudio.plan.solve import Evidence, solve

    kinds = {t.kind for t in recipe.budget.targets}
    if evidence is None:
        if kinds & set(RISK_KINDS) and frame is not None:
            from dpstudio.risk import evidence_for

            progress(0.0, "estimating the attacks on the raw data")
            evidence = evidence_for(recipe, frame, rows=rows, progress=sub_progress(progress, 0.0, 0.6), cancel=cancel)
        else:
            evidence = Evidence(rows=rows)
    elif evidence.rows != rows:
        evidence = replace(evidence, rows=rows)
    cancel.check()
    start = 0.6 if kinds & set(RISK_KINDS) else 0.0
    solution = solve(recipe, evidence=evidence, cap=cap, progress=sub_progress(progress, start, 1.0), cancel=cancel)
    return evidence, solution


def fmt_eps(eps: float) -> str:
    return f"{eps:.4g}"


class TargetsPanel(QWidget):
    """The targets, their editor, "Find ε" and what was found."""

    #: a solution was applied to the session's recipe
    solved = Signal()
    #: a search ended (found, failed or cancelled): what the page shows beside the panel may change
    searched = Signal()

    def __init__(
        self, session: Session, runner: TaskRunner, cap: Callable[[], float | None], parent: QWidget | None = None
    ):
        super().__init__(parent)
        self.session = session
        self.runner = runner
        self.remaining_cap = cap  # the dataset's remaining ε (None: no cap set)
        self.worker: Worker | None = None
        self.solution: Any = None  # the last Solution shown
        self._shown_for: tuple | None = None  # solve_key of the recipe the solution belongs to
        self._started_for: tuple | None = None
        self.last_error: str | None = None

        # ---- the editor: kind, column, numbers, add
        self.kind = QComboBox()
        self.kind.setToolTip(tr("What the release must achieve."))
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.column = QComboBox()
        self.column.setToolTip(tr("The column the target is about."))
        self.column.currentIndexChanged.connect(self._column_changed)
        self.value = QDoubleSpinBox()
        self.value.setKeyboardTracking(False)
        self.value.valueChanged.connect(self._update_add_button)
        self.share = QDoubleSpinBox()
        self.share.setRange(1.0, 99.9)
        self.share.setDecimals(1)
        self.share.setSuffix(" %")
        self.share.setValue(100 * DEFAULTS["within"])
        self.share.setToolTip(tr("The share of records whose released value must be within the tolerance."))
        self.value_label = QLabel()
        self.share_label = QLabel(tr("for"))
        self.share_label.setToolTip(self.share.toolTip())
        self.add_button = QPushButton(tr("Add target"))
        self.add_button.clicked.connect(self.add_from_editor)
        for combo in (self.kind, self.column):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        # two lines: what and on which column, then the numbers (fits a 1024-pixel window)
        editor = QHBoxLayout()
        editor.setContentsMargins(0, 0, 0, 0)
        editor.addWidget(QLabel(tr("New target:")))
        editor.addWidget(self.kind)
        editor.addWidget(self.column)
        editor.addStretch(1)
        numbers = QHBoxLayout()
        numbers.setContentsMargins(0, 0, 0, 0)
        numbers.addWidget(self.value_label)
        numbers.addWidget(self.value)
        numbers.addWidget(self.share_label)
        numbers.addWidget(self.share)
        numbers.addWidget(self.add_button)
        numbers.addStretch(1)

        # ---- the targets and their predicted values
        self.table = QTableWidget(0, 3)
        for i, (head, tip) in enumerate(
            (
                (tr("Target"), tr("What the release must achieve.")),
                (tr("At the ε found"), tr("Each target's predicted value at the ε found (✓ met, ✗ not met).")),
                ("", tr("Remove a target")),
            )
        ):
            item = QTableWidgetItem(head)
            item.setToolTip(tip)
            self.table.setHorizontalHeaderItem(i, item)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        hh.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        hh.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setToolTip(tr("Select a target to change its numbers in the row above; Delete removes it."))
        self.table.itemSelectionChanged.connect(self._row_selected)
        self.delete_shortcut = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.table)
        self.delete_shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
        self.delete_shortcut.activated.connect(self.remove_selected)

        # ---- find, progress, cancel
        self.find_button = QPushButton(tr("Find ε"))
        self.find_button.setDefault(True)
        self.find_button.setToolTip(
            tr(
                "Find the smallest ε that meets every target, and how to share it among the columns "
                "(Ctrl+Return). The result becomes this release's budget."
            )
        )
        self.find_button.clicked.connect(self.start_find)
        self.find_shortcuts = []
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            sc = QShortcut(QKeySequence(keys), self)
            sc.setContext(Qt.ShortcutContext.WindowShortcut)  # while the panel is shown
            sc.activated.connect(self.start_find)
            self.find_shortcuts.append(sc)
        self.cancel_button = QPushButton(tr("Cancel"))
        self.cancel_button.setToolTip(tr("Stop the search; the budget stays as it is."))
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(10)
        self.progress.setVisible(False)
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextFormat(Qt.TextFormat.RichText)
        self.result.setToolTip(
            tr("The ε found and the total this release will charge to the dataset's budget (from its plan).")
        )
        find_row = QHBoxLayout()
        find_row.setContentsMargins(0, 0, 0, 0)
        find_row.addWidget(self.find_button)
        find_row.addWidget(self.cancel_button)
        find_row.addWidget(self.progress, 1)
        find_row.addWidget(self.result, 4)
        self.advice = QLabel()
        self.advice.setObjectName("note")
        self.advice.setWordWrap(True)
        self.advice.setTextFormat(Qt.TextFormat.RichText)
        self.advice.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.advice_area = AdviceArea(self.advice)
        self.advice_area.setVisible(False)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        lay.addWidget(self.table)
        lay.addLayout(editor)
        lay.addLayout(numbers)
        lay.addLayout(find_row)
        lay.addWidget(self.advice_area)
        self._recipe_kinds: tuple = ()

    # ---- reading the recipe ------------------------------------------------------------
    @property
    def targets(self) -> tuple[Target, ...]:
        rec = self.session.recipe
        return () if rec is None else tuple(rec.budget.targets)

    def refresh(self) -> None:
        rec = self.session.recipe
        if rec is None:
            return
        self._fill_kinds(rec)
        self._fill_table()
        self._update_state()

    def _fill_kinds(self, rec: Recipe) -> None:
        kinds = tuple(target_kinds(rec))
        cols = tuple((k, tuple(target_columns(rec, k))) for k in kinds)
        if (kinds, cols) == self._recipe_kinds:
            return
        self._recipe_kinds = (kinds, cols)
        current = self.kind.currentData()
        self.kind.blockSignals(True)
        self.kind.clear()
        for k in kinds:
            self.kind.addItem(kind_name(k), k)
            self.kind.setItemData(self.kind.count() - 1, kind_tooltip(k), Qt.ItemDataRole.ToolTipRole)
        if current in kinds:
            self.kind.setCurrentIndex(kinds.index(current))
        self.kind.blockSignals(False)
        self.kind.setEnabled(bool(kinds))
        if not kinds:
            self.kind.setToolTip(tr("This type of release takes no targets yet: set ε instead."))
        self._kind_changed()

    def _kind_changed(self, *_args) -> None:
        rec = self.session.recipe
        kind = self.kind.currentData()
        if kind is not None:
            self.kind.setToolTip(kind_tooltip(kind))
        current = self.column.currentData()
        cols = target_columns(rec, kind) if rec is not None and kind else []
        self.column.blockSignals(True)
        self.column.clear()
        for c in cols:
            self.column.addItem(c, c)
        if current in cols:
            self.column.setCurrentIndex(cols.index(current))
        self.column.blockSignals(False)
        self.column.setVisible(bool(cols))
        within = kind == "within"
        self.share.setVisible(within)
        self.share_label.setVisible(within)
        self._column_changed()

    def _column_changed(self, *_args) -> None:
        """The value spin box for the chosen kind, with its default (or the existing target's)."""
        rec = self.session.recipe
        kind = self.kind.currentData()
        column = self.column.currentData()
        existing = self._existing(kind, column)
        v = self.value
        v.blockSignals(True)
        if kind == "within":
            rng = column_range(rec, column) if rec is not None and column else None
            width = rng[1] - rng[0] if rng else 1000.0
            decimals = max(0, min(6, 2 - math.floor(math.log10(max(width * 0.01, 1e-9)))))
            v.setDecimals(decimals)
            v.setRange(10.0**-decimals, max(width, 1.0) * 10)
            v.setSingleStep(float(f"{width * 0.01:.1g}") if width > 0 else 1.0)
            v.setSuffix("")
            v.setPrefix("± ")
            v.setValue(existing.value if existing else default_tolerance(rec, column) if rec and column else 1.0)
            self.share.setValue(100 * (existing.probability if existing and existing.probability else DEFAULTS[kind]))
            self.value_label.setText(tr("within"))
            v.setToolTip(
                tr("The tolerance, in the column's own units (default: 5 % of its range). ") + kind_tooltip(kind)
            )
        elif kind in PERCENT_KINDS:
            v.setPrefix("≥ " if kind == "keep" else "≤ ")
            v.setSuffix(" %")
            v.setDecimals(2 if kind == "reid" else 1)
            v.setRange(0.01, 99.99)
            v.setSingleStep(0.5 if kind == "reid" else 5.0)
            v.setValue(100 * (existing.value if existing else DEFAULTS[kind]))
            self.value_label.setText(
                {"keep": tr("kept with probability"), "label-attack": tr("right at most"), "reid": tr("at most")}[kind]
            )
            v.setToolTip(kind_tooltip(kind))
        elif kind == "marginals":
            v.setPrefix("≤ ")
            v.setSuffix("")
            v.setDecimals(3)
            v.setRange(0.001, 0.999)
            v.setSingleStep(0.01)
            v.setValue(existing.value if existing else DEFAULTS[kind])
            self.value_label.setText(tr("total variation"))
            v.setToolTip(kind_tooltip(kind))
        v.blockSignals(False)
        v.setEnabled(kind is not None)
        self.value_label.setToolTip(v.toolTip())
        self._update_add_button()

    def _existing(self, kind, column) -> Target | None:
        for t in self.targets:
            if t.kind == kind and (t.column == column or kind not in ("within", "keep")):
                return t
        return None

    def _update_add_button(self, *_args) -> None:
        kind = self.kind.currentData()
        ok = kind is not None and (kind not in ("within", "keep") or self.column.currentData() is not None)
        self.add_button.setEnabled(ok and self.worker is None)
        replacing = ok and self._existing(kind, self.column.currentData()) is not None
        self.add_button.setText(tr("Change target") if replacing else tr("Add target"))
        self.add_button.setToolTip(
            tr("Change the numbers of this target (the ε must then be found again).")
            if replacing
            else tr("Add this target to the list (the ε must then be found again).")
        )

    def editor_target(self) -> Target | None:
        """The target the editor row states."""
        kind = self.kind.currentData()
        if kind is None:
            return None
        if kind == "within":
            column = self.column.currentData()
            return (
                None
                if column is None
                else Target("within", float(self.value.value()), column, self.share.value() / 100)
            )
        if kind == "keep":
            column = self.column.currentData()
            return None if column is None else Target("keep", self.value.value() / 100, column)
        if kind in PERCENT_KINDS:
            return Target(kind, self.value.value() / 100)
        return Target(kind, float(self.value.value()))

    # ---- edits (through the session: undoable) -------------------------------------------
    def set_targets(self, targets: tuple[Target, ...]) -> None:
        """The recipe's targets become ``targets``; the last solution's record no longer holds."""
        from dpstudio.recipe.model import Params

        self.session.update(lambda r: replace(r, budget=replace(r.budget, targets=tuple(targets), solved=Params())))

    def add_target(self, target: Target) -> None:
        same = (target.kind, target.column if target.kind in ("within", "keep") else None)
        kept = [t for t in self.targets if (t.kind, t.column if t.kind in ("within", "keep") else None) != same]
        at = next((i for i, t in enumerate(self.targets) if t not in kept), len(kept))
        kept.insert(at, target)
        self.set_targets(tuple(kept))

    def add_from_editor(self) -> None:
        t = self.editor_target()
        if t is not None and self.worker is None:
            self.add_target(t)

    def remove_target(self, index: int) -> None:
        ts = list(self.targets)
        if 0 <= index < len(ts) and self.worker is None:
            del ts[index]
            self.set_targets(tuple(ts))

    def remove_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self.remove_target(rows[0].row())

    def _row_selected(self) -> None:
        """A selected target is loaded into the editor row, to change its numbers."""
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        ts = self.targets
        i = rows[0].row()
        if not 0 <= i < len(ts):
            return
        t = ts[i]
        k = self.kind.findData(t.kind)
        if k < 0:
            return
        self.kind.setCurrentIndex(k)
        if t.column is not None:
            c = self.column.findData(t.column)
            if c >= 0:
                self.column.setCurrentIndex(c)
        self._column_changed()

    # ---- the view ----------------------------------------------------------------------------
    @property
    def stale(self) -> bool:
        """Whether the shown solution no longer belongs to the session's recipe."""
        rec = self.session.recipe
        return self.solution is None or rec is None or solve_key(rec) != self._shown_for

    def _results(self) -> dict[Target, Any]:
        if self.solution is None or self.stale:
            return {}
        return {r.target: r for r in self.solution.results}

    def _fill_table(self) -> None:
        from dpstudio.plan.solve import describe, value_text

        ts = self.targets
        results = self._results()
        self.table.setRowCount(len(ts))
        for i, t in enumerate(ts):
            what = QTableWidgetItem(describe(t))
            tip = kind_tooltip(t.kind) if t.kind in KINDS else ""
            what.setToolTip(describe(t) + ("<br><br>" + tip if tip else ""))
            self.table.setItem(i, 0, what)
            res = results.get(t)
            if res is None:
                text, tip2 = tr("— find ε"), tr("Not computed for these targets yet: press “Find ε”.")
            elif res.met:
                text, tip2 = "✓ " + value_text(t, res.predicted), tr("Met at the ε found.")
                if res.advisory and self.solution is not None and self.solution.epsilon is None:
                    tip2 = tr("Met at the ε you typed (risk targets are checks: they do not choose ε).")
            else:
                shown = value_text(t, res.predicted) if res.predicted is not None else ""
                text = "✗ " + status_text(res.status) + (f": {shown}" if shown else "")
                if not shown and res.best is not None:  # impossible: the best any ε up to the limit reaches
                    text += " — " + tr("closest possible: {0}").format(value_text(t, res.best))
                tip2 = res.advice
            if t.kind in RISK_KINDS:
                tip2 = (tip2 + " " if tip2 else "") + tr(INTERNAL_NOTE)
            item = QTableWidgetItem(text)
            item.setToolTip(tip2)
            item.setData(Qt.ItemDataRole.UserRole, None if res is None else res.status)
            self.table.setItem(i, 1, item)
            remove = self.table.cellWidget(i, 2)
            if not isinstance(remove, QToolButton):  # made once per row: rows keep their index
                remove = QToolButton()
                remove.setText("✕")
                remove.setAutoRaise(True)
                remove.setToolTip(tr("Remove this target"))
                remove.clicked.connect(lambda _c=False, i=i: self.remove_target(i))
                self.table.setCellWidget(i, 2, remove)
            remove.setAccessibleName(tr("Remove the target {0}").format(describe(t)))
            remove.setEnabled(self.worker is None)
        self.table.resizeRowsToContents()
        self._fit_table()

    def _fit_table(self) -> None:
        """The table as high as its rows (two to five shown; more scroll)."""
        t = self.table
        shown = min(t.rowCount(), 5)
        rows = sum(t.rowHeight(i) for i in range(shown)) + max(0, 2 - shown) * t.verticalHeader().defaultSectionSize()
        t.setFixedHeight(t.horizontalHeader().sizeHint().height() + rows + 2 * t.frameWidth())

    def status_of(self, row: int) -> str | None:
        """The status shown in ``row`` ("met", "impossible", ... ; None: not computed)."""
        item = self.table.item(row, 1)
        return None if item is None else item.data(Qt.ItemDataRole.UserRole)

    def _update_state(self) -> None:
        from dpstudio.gui.texts import gui_message
        from dpstudio.recipe.validate import target_problems

        rec = self.session.recipe
        running = self.worker is not None
        has = bool(self.targets)
        problems = target_problems(rec) if rec is not None and has else []
        self.find_button.setEnabled(has and not problems and not running and self.session.has_data)
        self.cancel_button.setVisible(running)
        self.progress.setVisible(running)
        self._update_add_button()
        if running:
            return
        sol = None if self.stale else self.solution
        notes: list[str] = []
        if not has:
            self.result.setText(tr("Add what the release must achieve, then press “Find ε”."))
        elif problems:
            self.result.setText(tr("Fix the targets first (see below)."))
        elif self.last_error and self._shown_for == (solve_key(rec) if rec is not None else None):
            self.result.setText("<span style='color:#D55E00'>" + self.last_error + "</span>")
        elif sol is None:
            self.result.setText(
                tr("The targets changed: press “Find ε”.")
                if self.solution is not None
                else tr("Press “Find ε” to find the budget these targets need.")
            )
        elif sol.feasible and sol.plan is not None:
            total = sol.plan.total
            text = tr("ε found: <b>{0}</b> — this release will charge ε = {1}").format(
                fmt_eps(sol.epsilon), fmt_eps(total.epsilon)
            )
            if total.delta:
                from dpstudio.gui.charts.preview import fmt_delta

                text += tr(", δ = {0}").format(fmt_delta(total.delta))
            text += tr(" to the dataset's budget.")
            self.result.setText(text)
            notes = list(sol.notes)
        elif all(r.advisory for r in sol.results):
            # risk targets alone choose nothing: they are checked at the ε as typed
            self.result.setText(
                tr("Risk targets are checks, not a way to choose ε: checked at the ε you set, {0}.").format(
                    fmt_eps(rec.budget.epsilon) if rec is not None else "—"
                )
            )
            notes = list(sol.notes)
        else:
            self.result.setText(
                "<span style='color:#D55E00'>"
                + tr("No ε up to {0} meets every target; the budget is unchanged.").format(f"{sol.cap:g}")
                + "</span>"
            )
        advice = []
        if sol is not None:
            for r in sol.results:
                if r.advice and not r.met:
                    what, why = _esc(describe_target(r.target)), _esc(gui_message(r.advice))
                    advice.append(f"• <b>{what}</b> — {status_text(r.status)}: {why}")
        advice += ["• " + _esc(gui_message(n)) for n in notes]
        if any(t.kind in RISK_KINDS for t in self.targets):
            advice.append(tr("Risk targets are estimated from the raw data: for internal use only."))
        self.advice.setText("<br>".join(advice))
        self.advice_area.setVisible(bool(advice))
        self.advice_area.updateGeometry()

    # ---- finding ε ------------------------------------------------------------------------
    def cap(self) -> float:
        """The largest ε the solver may choose: what the dataset has left, at most the product's limit."""
        rem = self.remaining_cap()
        return MAX_EPSILON if rem is None else min(float(rem), MAX_EPSILON)

    def start_find(self) -> Worker | None:
        if self.worker is not None or not self.find_button.isEnabled() or not self.isVisible():
            return None
        rec = self.session.preview_recipe()
        if rec is None or self.session.recipe is None:
            return None
        ekey = evidence_key(self.session, rec)
        evidence = self.session.derived.get(ekey) if ekey is not None else None
        rows = self.session.sample_of or (len(self.session.frame) if self.session.frame is not None else None)
        self._started_for = solve_key(self.session.recipe)
        self.last_error = None
        self.progress.setValue(0)
        self.result.setText(tr("Finding ε…"))
        self.worker = self.runner.start(
            find_epsilon,
            rec,
            self.session.frame,
            rows,
            self.cap(),
            evidence,
            on_finished=lambda res, k=ekey: self._found(k, res),
            on_failed=self._failed,
            on_cancelled=self._cancelled,
            on_progress=self._progress,
        )
        self._fill_table()
        self._update_state()
        return self.worker

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.result.setText(tr("Cancelling…"))

    def _progress(self, fraction: float, message: str) -> None:
        self.progress.setValue(int(1000 * fraction))
        if message:
            self.result.setText(tr("Finding ε… {0}").format(tr(message)))

    def _found(self, ekey, result) -> None:
        self.worker = None
        evidence, solution = result
        if ekey is not None:
            self.session.derived[ekey] = evidence
        rec = self.session.recipe
        if rec is None or solve_key(rec) != self._started_for:
            self.solution = None  # the recipe changed meanwhile: this solution is not its
            self.refresh()
            self.result.setText(tr("The recipe changed during the search: press “Find ε” again."))
            self.searched.emit()
            return
        self.solution = solution
        if solution.feasible:
            applied = solution.apply()
            new = self.applied_recipe(rec, applied)
            self._shown_for = solve_key(new)
            self.session.update(lambda _r: new)
            self.solved.emit()
        else:
            self._shown_for = solve_key(rec)
        self.refresh()
        self.searched.emit()

    @staticmethod
    def applied_recipe(rec: Recipe, applied: Recipe) -> Recipe:
        """``rec`` with the solved budget and weights of ``applied`` (``Solution.apply()``, made
        from the recipe with 'copied from data' domains filled in: those stay as the user set them)."""
        by_name = {c.name: c for c in applied.columns}
        cols = tuple(
            replace(c, mechanism=replace(c.mechanism, weight=by_name[c.name].mechanism.weight))  # type: ignore[union-attr]
            if c.mechanism is not None and c.name in by_name and by_name[c.name].mechanism is not None
            else c
            for c in rec.columns
        )
        return replace(rec, columns=cols, budget=applied.budget)

    def _failed(self, exc) -> None:
        from dpstudio.gui.dialogs import error_summary

        self.worker = None
        self.solution = None
        rec = self.session.recipe
        self._shown_for = solve_key(rec) if rec is not None else None
        self.last_error = tr("Could not find ε: {0}").format(error_summary(exc))
        self.refresh()
        self.searched.emit()

    def _cancelled(self) -> None:
        self.worker = None
        self.refresh()
        self.result.setText(tr("Search cancelled; the budget is unchanged."))
        self.searched.emit()


class AdviceArea(QScrollArea):
    """The advice under the targets: as high as its text, up to :attr:`MAX_HEIGHT` (then it
    scrolls), so a long list never pushes the page's charts out of a small window."""

    MAX_HEIGHT = 110
    MIN_HEIGHT = 48

    def __init__(self, label: QLabel, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = label
        self.setWidget(label)
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.viewport().setAutoFillBackground(False)  # the box's own background, like a label
        label.setAutoFillBackground(False)

    def _text_height(self) -> int:
        width = max(self.viewport().width(), 200)
        return self.label.heightForWidth(width) if self.label.hasHeightForWidth() else self.label.sizeHint().height()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(super().sizeHint().width(), min(self._text_height() + 2, self.MAX_HEIGHT))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(0, min(self._text_height() + 2, self.MIN_HEIGHT))

    def resizeEvent(self, event):  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.updateGeometry()  # the text's height follows the width


def status_text(status: str) -> str:
    return {
        "met": tr("met"),
        "impossible": tr("impossible"),
        "beyond cap": tr("needs more than what is left"),
        "not met": tr("not met"),
        "check": tr("not checked"),
        "blocked": tr("waits on another target"),
    }.get(status, status)


def describe_target(t: Target) -> str:
    from dpstudio.plan.solve import describe

    return describe(t)


def _esc(text: str) -> str:
    import html

    return html.escape(text, quote=False)
