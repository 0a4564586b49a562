"""The live preview beside the budget controls: the plan's units (budget table), error vs floor,
original vs privatized histogram, attacker accuracy, synthetic-data trial.

Every number is read from the compiled plan: the table and the markers from ``session.plan()``
(the exact plan at the current epsilon), the curves from ``plan.at_budget`` at a few dozen
budgets, computed on a worker once per recipe-without-its-epsilon and cached, so moving epsilon
only moves the markers.  Heavy parts (leakage model fit, large samples, curves, trial fit) run on
workers."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import replace

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.charts.attack_chart import AttackChart
from dpstudio.gui.charts.error_chart import ErrorChart
from dpstudio.gui.charts.histogram_chart import HistogramChart
from dpstudio.gui.charts.preview import (
    SAMPLE_ROWS,
    ColumnSample,
    error_text,
    floor_text,
    fmt_delta,
    fmt_epsilon,
    noise_text,
    plan_curves,
    preview_units,
    relative,
)
from dpstudio.gui.i18n import tr
from dpstudio.gui.wizard.base import table_item

GUI_THREAD_BUDGET_S = 0.010  # work under 10 ms may run on the GUI thread; anything longer goes to a worker
PANEL_MIN_HEIGHT = 470  # pixels: below this the budget page scrolls
PANEL_MIN_HEIGHT_TEXT = 260  # the same when no chart is drawn (model and density releases)
CURVE_CACHE = 16  # recipes (without their epsilon) whose curves are kept

#: the budget table's columns (one row per plan unit)
TABLE_COLUMNS = ("unit", "mechanism", "epsilon", "delta", "noise", "error", "floor")
COL = {k: i for i, k in enumerate(TABLE_COLUMNS)}


def table_headers(compact: bool = False) -> list[str]:
    """Column titles in :data:`TABLE_COLUMNS` order (``compact``: for the half-width budget table,
    whose headers carry the long titles as tooltips: :func:`table_header_tips`)."""
    if compact:
        return [tr("Part"), tr("Mechanism"), "ε", "δ", tr("Noise"), tr("Error"), tr("Floor")]
    return [
        tr("Part of the release"),
        tr("Mechanism"),
        "ε",
        "δ",
        tr("Noise"),
        tr("Expected error"),
        tr("Best possible (floor)"),
    ]


def table_header_tips() -> list[str]:
    """What each budget-table column means, in :data:`TABLE_COLUMNS` order."""
    return [
        tr("The part of the release: a column, or columns released together"),
        tr("How the noise is added"),
        tr(
            "The privacy budget this part spends. It follows the part's budget share (set on the "
            "release step): shares are relative, so a share of 2 gets twice the ε of a share of 1."
        ),
        tr("The small chance δ that the guarantee does not hold (0: pure ε-DP)"),
        tr("The noise added: Laplace scale b, Gaussian σ, or the chance a category is kept"),
        tr("Expected error per released value, in the column's units (categories: the chance a value is replaced)"),
        tr("The best any mechanism with this ε and δ could do"),
    ]


def mechanism_title(unit) -> str:
    from dpstudio.gui.texts import mechanism_text

    if unit.mechanism_name in ("laplace", "gaussian", "rr", "metric"):
        return mechanism_text(unit.mechanism_name)[0]
    if unit.kind == "domain":
        return tr("DP estimate of the domain")
    return unit.mechanism_name


def unit_cells(unit) -> list[str]:
    """One plan unit as the budget table and the Review page print it (in :data:`TABLE_COLUMNS`
    order): its own epsilon and delta, noise parameter, expected error and floor, from its fields."""
    return [
        unit.name,
        mechanism_title(unit),
        fmt_epsilon(unit.epsilon),
        fmt_delta(unit.delta),
        noise_text(unit),
        error_text(unit),
        floor_text(unit),
    ]


def density_noise_text(plan) -> str:
    """The density's noise at a grid point, relative to a flat density's height, from the plan's
    settled unit (:func:`dpstudio.plan.density.for_rows`: the calibration the release draws with)."""
    unit = next((u for u in plan.units if u.kind == "density"), None)
    facts = unit.facts if unit is not None else {}
    sd, mean_abs = facts.get("noise_sd_relative_to_flat"), facts.get("noise_mean_abs_relative_to_flat")
    if sd is None or mean_abs is None:
        return tr("Its noise depends on the number of rows: load the data to see it.")
    return tr(
        "At this ε the noise at each grid point has a standard deviation of {0} of a flat density's height "
        "(on average {1} off; the smoothing by the bandwidth, {2} of the range, is not noise and comes on top)."
    ).format(_pct_text(sd), _pct_text(mean_abs), _pct_text(float(facts["bandwidth"])))


def _pct_text(x: float) -> str:
    return f"{100 * x:.3g} %"


def joint_gaussian_note() -> str:
    return tr(
        "The Gaussian columns are calibrated together: each one's ε and δ is its own guarantee, and "
        "together they spend less than the sum — the total above is what the accountant computes."
    )


def share_caption() -> str:
    """The budget share, explained as the relative weight it is."""
    return tr(
        "Each part's ε follows its budget share, set on the release step. Shares are relative: 2 gets twice the ε of 1."
    )


def _fmt(x: float) -> str:
    return f"{float(x):.4g}"


#: the synthetic release's budget split table (:func:`synthetic_split_rows`)
SPLIT_COLUMNS = ("part", "share", "epsilon")


def split_headers() -> list[str]:
    return [tr("Part of the release"), tr("Share of the budget"), tr("ε of that share")]


def _split_part_text(unit) -> str:
    col = unit.columns[0] if unit.columns else unit.name
    if unit.kind == "synthesizer":
        return tr("Fitting the synthesizer")
    what = tr("Finding the range of {0}") if unit.name.startswith("bounds of") else tr("Finding the categories of {0}")
    text = what.format(col)
    if unit.mechanism is None:
        text += " " + tr("(done before this release)")
    return text


def synthetic_split_rows(plan) -> list[tuple[str, str, str, str]]:
    """A synthetic release's budget as the budget page's split table shows it: one row per DP
    domain estimate and one for the synthesizer (what it is in plain words, its share of the
    budget in percent, the ε of that share, a tooltip), then the total, which is the ε typed.

    Read off the plan: each unit's ``budget_share`` (its part of the typed (ε, δ), proportional to
    its zCDP ρ or Gaussian-DP μ²) and the plan's total; nothing is recomputed."""
    if plan is None or plan.release_type != "synthetic":
        return []
    total = float(plan.total.epsilon)
    rows = []
    for u in plan.units:
        eps_share = float(u.budget_share[0])
        pct = 100.0 * eps_share / total if total > 0 else 0.0
        tip = tr(
            "On its own this step would be ε = {0}, δ = {1}; composed with the others it takes this share. "
            "The accounting is in the details."
        ).format(fmt_epsilon(u.epsilon), fmt_delta(u.delta))
        rows.append((_split_part_text(u), f"{pct:.1f} %", fmt_epsilon(eps_share), tip))
    rows.append(
        (
            tr("Total (the ε you chose)"),
            "100 %",
            fmt_epsilon(total),
            tr("Every part composed together: the total the release spends and the ledger records."),
        )
    )
    return rows


def split_caption(plan) -> str:
    """One plain sentence under the split table (why the shares are not simply added)."""
    if plan is None or plan.release_type != "synthetic":
        return ""
    if not any(u.kind == "domain" for u in plan.units):
        return tr("The synthesizer has the whole budget: every domain is public.")
    text = tr(
        "The ε you chose is the whole budget: finding the unknown domains takes a fixed share and the "
        "synthesizer gets the rest. Each share's ε is its part of the total; the parts are composed "
        "together, which gives each one more than splitting ε by simple addition would."
    )
    # the plan's own thresholds: a value held by about this many rows is kept half the time, a
    # rarer one seldom -- the user decides here whether to type a list or give more budget
    found = [
        tr("{0}: about {1} rows").format(u.columns[0], f"{u.facts['threshold']:,.0f}")
        for u in plan.units
        if u.kind == "domain" and u.columns and "threshold" in (u.facts or {})
    ]
    if found:
        text += " " + tr(
            "Finding categories keeps a value only when its noisy count passes a threshold ({0}); rarer "
            "values are released as “(other)”. A public list keeps them all."
        ).format("; ".join(found))
    return text


def details_html(plan, synth_plan: list[dict] | None = None, method: str = "") -> str:
    """The specialist's view of the plan, for the collapsed "Details" area: each unit's mechanism
    id and the accounting quantities (zCDP ρ, Gaussian-DP μ, whether an RDP curve is used), how the
    total is composed, and the synthesizer's own split (shares of zCDP ρ or of μ²).  Read off the
    plan's fields, never recomputed."""
    import html

    e = html.escape
    if plan is None:
        return ""
    rows = []
    for u in plan.units:
        loss = u.loss
        acc = []
        if u.noise.zcdp_rho is not None:
            acc.append(
                tr("zCDP ρ = {0} (calibrated jointly with the other Gaussian columns)").format(_fmt(u.noise.zcdp_rho))
            )
        elif loss.zcdp_rho is not None:
            acc.append(tr("zCDP ρ = {0}").format(_fmt(loss.zcdp_rho)))
        if loss.gdp_mu is not None:
            acc.append(tr("Gaussian-DP μ = {0} (μ² = {1})").format(_fmt(loss.gdp_mu), _fmt(loss.gdp_mu**2)))
        if loss.rdp is not None:
            acc.append(tr("Rényi-DP (RDP) curve used in composition"))
        rows.append(
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                e(u.name),
                e(u.mechanism_name),
                e(_fmt(u.epsilon)),
                e(_fmt(u.delta)),
                e("; ".join(acc) or "—"),
            )
        )
    parts = [
        "<table cellspacing='0' cellpadding='4'><tr><th align='left'>{}</th><th align='left'>{}</th>"
        "<th align='left'>ε</th><th align='left'>δ</th><th align='left'>{}</th></tr>{}</table>".format(
            e(tr("Part")), e(tr("Mechanism id")), e(tr("Accounting")), "".join(rows)
        )
    ]
    comp = plan.composition
    parts.append(
        "<p>"
        + e(tr("Composition: {0} — total ε = {1}, δ = {2}.")).format(
            e(comp.method), e(_fmt(plan.total.epsilon)), e(_fmt(plan.total.delta))
        )
        + "</p>"
    )
    if plan.release_type == "synthetic" and any(u.kind == "domain" for u in plan.units):
        if comp.method == "gdp":
            calc = tr(
                "One budget for the whole release, in Gaussian DP (Dong, Roth & Su 2022): every part is "
                "Gaussian, so the parts' μ² add up to the μ of the typed (ε, δ)."
            )
        else:
            calc = tr(
                "One budget for the whole release, in zero-concentrated DP (Bun & Steinke 2016): the parts' "
                "ρ add up (the exponential-mechanism bounds (ε/2)²/8 per quantile, ε²/16 in all, "
                "Gaussian counts 1/σ²); "
                "finding categories without a list is approximate zCDP, whose δ's add; the sum is converted "
                "to (ε, δ) (Canonne, Kamath & Steinke 2020) at the typed δ minus those δ's."
            )
        approx = [u for u in plan.units if u.loss.zcdp_delta]
        if approx:
            calc += " " + tr("Approximate-zCDP δ: {0}.").format(
                ", ".join(f"{u.name} {_fmt(u.loss.zcdp_delta)}" for u in approx)
            )
        parts.append("<p>" + e(calc) + "</p>")
    if synth_plan:
        unit = tr("Gaussian-DP μ²") if method in ("pearl", "merf") else tr("zCDP ρ")
        lines = [e(tr("The synthesizer's accounting: shares of {0}, which add up exactly:").format(unit))]
        for part in synth_plan:
            lines.append("• " + e(tr("{0}: {1:.1f} % of {2}").format(tr(part["part"]), 100 * part["share"], unit)))
        parts.append("<p>" + "<br>".join(lines) + "</p>")
    return "".join(parts)


def leakage_available() -> bool:
    try:
        from dpstudio.risk import LabelLeakageModel  # noqa: F401

        return True
    except Exception:  # noqa: BLE001
        return False


def fit_leakage(frame, public_cols, label_col, *, progress, cancel):
    """Worker job: fit the label-leakage model on (a sample of) the table."""
    from dpstudio.risk import LabelLeakageModel, row_sample

    # the rows the CLI, the risk estimate and the report use (risk.row_sample, seed 0): one
    # sample, hence one attacker figure, whichever of them shows it
    frame, _info = row_sample(frame, seed=0)
    progress(0.1, "fitting the attacker model")
    cancel.check()
    model = LabelLeakageModel.fit(frame, list(public_cols), label_col)
    cancel.check()
    return model


def leakage_inputs(rec) -> tuple[tuple[str, ...], str] | None:
    """(columns released unchanged, label column) the attacker model uses, or None."""
    labels = [c.name for c in rec.columns if c.role == "label"]
    unchanged = ("public",) if rec.release.type == "semi-sensitive" else ("public", "sensitive")
    public = tuple(c.name for c in rec.columns if c.role in unchanged)
    return (public, labels[0]) if labels and public else None


def leakage_key(session, rec):
    """Where the fitted attacker model of ``rec`` is kept in ``session.derived`` (None: no model)."""
    inputs = leakage_inputs(rec)
    return None if inputs is None else ("leakage", session.data_token, *inputs)


def attacker_at(model, plan):
    """The leakage model under the plan's randomized response on the label as it runs (its keep
    and other-category probabilities: :func:`dpstudio.risk.label_rr_law`, what the CLI and the
    report read), at ``plan.label.label_unit_epsilon``: ``((uninformed, naive, informed) accuracy,
    share of records exposed beyond the label guarantee or None)``."""
    from dpstudio.risk import label_rr_law

    law, _law_at = label_rr_law(plan)
    at = model.at(float(plan.label.label_unit_epsilon), rr=law)
    acc = at["accuracy"]
    share = (at.get("iue_adv_bound") or {}).get("share_above")
    return (acc["uninformed"], acc["naive"], acc["informed"]), share


def curve_key(plan):
    """The curves depend on the recipe but not on its epsilon."""
    r = plan.recipe
    return replace(r, budget=replace(r.budget, epsilon=1.0))


def make_sample(frame, unit, *, progress, cancel):
    return ColumnSample(frame, unit)


class FitScrollArea(QScrollArea):
    """A vertical scroll area whose widget fills the view and is never made less high than its
    minimum height (then it scrolls): charts keep their axes in a short window, and grow with a
    tall one (unlike ``widgetResizable``, which follows the wrapped labels' preferred height)."""

    def __init__(self, widget: QWidget, parent=None):
        super().__init__(parent)
        self.setWidget(widget)
        self.setWidgetResizable(False)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def _fit(self) -> None:
        w = self.widget()
        if w is not None:
            vp = self.viewport().size()
            w.resize(vp.width(), max(vp.height(), w.minimumHeight()))

    def resizeEvent(self, event):  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit()
        self._fit()  # again: the scroll bar may have appeared or gone, changing the view's width


class PreviewPanel(QWidget):
    def __init__(self, session, runner, parent=None):
        super().__init__(parent)
        self.session, self.runner = session, runner
        self.column_combo = QComboBox()
        self.column_combo.setToolTip(tr("The column shown in the error and histogram charts"))
        self.column_combo.currentIndexChanged.connect(lambda _i: self.update_all(force=True))
        self.error_chart = ErrorChart()
        self.hist_chart = HistogramChart()
        self.attack_chart = AttackChart()
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels(table_headers(compact=True))
        for j, tip in enumerate(table_header_tips()):
            head = self.table.horizontalHeaderItem(j)
            if head is not None:
                head.setToolTip(tip)
        # the mechanism is in each row's tooltip (and in the Noise cell's b / σ / keep): the table fits
        # beside the attacker chart without scrolling
        self.table.setColumnHidden(COL["mechanism"], True)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        hh = self.table.horizontalHeader()
        # every column as wide as its widest cell or header (nothing elided); the table scrolls
        # sideways rather than cut a number when the window is very narrow
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setStretchLastSection(False)
        vh = self.table.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        self.table.setMinimumHeight(4 * (self.table.fontMetrics().height() + 8))
        self.table.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.table.setWordWrap(False)
        self.table.setToolTip(
            tr(
                "Each part of the release at the chosen ε, as the plan calibrates it: its own ε "
                "and δ, its noise (Laplace scale b, Gaussian σ, or the chance a category is "
                "kept), the expected error per released value in the column's units (for "
                "categories: the chance a value is replaced) and the floor: the best any "
                "mechanism with that ε and δ can do. “≤” marks a worst case: the domain is "
                "estimated with DP at release time."
            )
        )
        self.table.cellClicked.connect(self._row_clicked)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setObjectName("note")
        self.share_note = QLabel(share_caption())
        self.share_note.setWordWrap(True)
        self.share_note.setObjectName("note")
        self.share_note.setToolTip(table_header_tips()[COL["epsilon"]])
        self.table_box = QWidget()
        tl = QVBoxLayout(self.table_box)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(2)
        tl.addWidget(self.table, 1)
        tl.addWidget(self.share_note)
        # a synthetic release: how the typed budget is split (domain estimates, synthesizer, total)
        self.split_table = QTableWidget(0, len(SPLIT_COLUMNS))
        self.split_table.setObjectName("budgetSplit")
        self.split_table.setHorizontalHeaderLabels(split_headers())
        self.split_table.verticalHeader().setVisible(False)
        self.split_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.split_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.split_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.split_table.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.split_table.setWordWrap(False)
        self.split_table.setToolTip(
            tr("How the ε you chose is shared by the steps of this release. Open the details for the accounting.")
        )
        self.split_table.setVisible(False)
        self.split_note = QLabel()
        self.split_note.setWordWrap(True)
        self.split_note.setObjectName("note")
        self.split_note.setVisible(False)
        tl.addWidget(self.split_table, 1)
        tl.addWidget(self.split_note)
        tl.addStretch(0)

        # the specialist's figures (mechanism ids, zCDP ρ, μ², RDP), collapsed by default
        self.details_button = QToolButton()
        self.details_button.setText(tr("Details for specialists"))
        self.details_button.setCheckable(True)
        self.details_button.setChecked(False)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setAutoRaise(True)
        self.details_button.setToolTip(
            tr("The mechanisms' internal names and the accounting behind the total (zCDP, Gaussian-DP, RDP).")
        )
        self.details = QLabel()
        self.details.setObjectName("budgetDetails")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_area = QScrollArea()
        self.details_area.setWidget(self.details)
        self.details_area.setWidgetResizable(True)
        self.details_area.setMaximumHeight(160)
        self.details_area.setVisible(False)
        self.details_button.toggled.connect(self._toggle_details)

        self.synth_box = QWidget()
        sl = QVBoxLayout(self.synth_box)
        sl.setContentsMargins(0, 0, 0, 0)
        self.synth_text = QLabel()
        self.synth_text.setWordWrap(True)
        self.trial_button = QPushButton(tr("Run a quick trial fit"))
        self.trial_button.setToolTip(
            tr(
                "Trains the synthesizer on a small sample to show what the output "
                "looks like. Nothing is saved or published."
            )
        )
        self.trial_button.clicked.connect(self.start_trial)
        self.trial_cancel = QPushButton(tr("Cancel"))
        self.trial_cancel.setEnabled(False)
        self.trial_cancel.clicked.connect(self.cancel_trial)
        self.trial_result = QLabel()
        self.trial_result.setWordWrap(True)
        self.trial_result.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.trial = None  # the last trial: {"text", "marginals"}
        sl.addWidget(QLabel("<b>" + tr("Synthetic data") + "</b>"))
        sl.addWidget(self.synth_text)
        trow = QHBoxLayout()
        trow.addWidget(self.trial_button)
        trow.addWidget(self.trial_cancel)
        trow.addStretch(1)
        sl.addLayout(trow)
        sl.addWidget(self.trial_result, 1)

        top = QHBoxLayout()
        self.column_label = QLabel(tr("Preview column:"))
        top.addWidget(self.column_label)
        top.addWidget(self.column_combo, 1)
        top.addWidget(self.details_button)
        self.grid = grid = QGridLayout()
        grid.addWidget(self.error_chart, 0, 0)
        grid.addWidget(self.hist_chart, 0, 1)
        grid.addWidget(self.table_box, 1, 0)
        grid.addWidget(self.attack_chart, 1, 1)
        grid.addWidget(self.synth_box, 1, 1)
        grid.setRowStretch(0, 1)
        grid.setRowStretch(1, 1)
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 1)
        self._grid_layout = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addLayout(grid, 1)
        lay.addWidget(self.notes)
        lay.addWidget(self.details_area)

        # the charts' own room (the budget page scrolls below it): two rows of charts whose plots
        # keep their axes and titles
        self.setMinimumHeight(PANEL_MIN_HEIGHT)
        self._units = []  # the plan's units with an error curve (preview.Unit)
        self._table_names = None
        self._curves: OrderedDict = OrderedDict()  # curve_key -> preview.Curves
        self._curve_worker = None
        self._curve_worker_key = None
        self._curve_error = None  # (key, message) of a failed curve job
        self._shown_curves = None  # (curve_key, unit) drawn on the error chart
        self._shown_attack = None  # (curve_key, leakage key) drawn on the attack chart
        self._mode = None
        self._sample = None
        self._sample_key = None
        self._sample_worker = None
        self._slow_samples = False
        self._leak_worker = None
        self.trial_worker = None
        self.last_hist_ms = 0.0

    # ---- orchestration ------------------------------------------------------------------
    def update_all(self, force: bool = False) -> None:
        s = self.session
        rec = s.recipe
        if rec is None:
            return
        plan, err = s.plan()
        rtype = rec.release.type
        self._fit_height(rtype)
        self._fill_table(plan)
        self._update_details(rec, plan)
        if rtype != self._mode:
            self._mode = rtype
            force = True
        if rtype == "synthetic":
            self._set_side(self.synth_box)
            self._show_synthetic(rec)
            return
        # the attacker chart only where it applies; elsewhere the budget table takes the whole row
        self._set_side(self.attack_chart if rtype in ("label", "semi-sensitive") else None)
        units, notes = preview_units(plan)
        if force or units != self._units:
            self._units = units
            self._shown_curves = None
            _refill_combo(self.column_combo, [u.name for u in units])
        # nothing to choose (a model, a density, no domains yet): no empty box
        self.column_label.setVisible(bool(units))
        self.column_combo.setVisible(bool(units))
        self.notes.setText("; ".join(notes))
        self.notes.setVisible(bool(notes))
        self.hist_chart.set_series_names(tr("original"), tr("privatized"))
        self.hist_chart.title.setText("<b>" + tr("Original vs privatized values (sample)") + "</b>")
        eps = rec.budget.epsilon
        if plan is None:
            self._sample, self._sample_key = None, None
            msg = tr("No preview yet: {0}").format(err)
            self.error_chart.show_message(msg)
            self.hist_chart.show_message(tr("Nothing to preview yet."))
            self.hist_chart.caption.setText("")
            self.attack_chart.show_message(msg)
            self.attack_chart.caption.setText("")
            return
        if not units:
            self._sample, self._sample_key = None, None
            record_like = rtype in ("record", "label", "semi-sensitive")
            if not record_like:
                self.error_chart.title.setText("<b>" + tr("How this release is protected") + "</b>")
            msg = (
                tr(
                    "Error curves are shown for record, label and semi-sensitive releases with a domain "
                    "for every released column."
                )
                if record_like
                else tr(
                    "This release adds its noise inside the {0}, not to each value, so there is no per-column "
                    "error curve; the total privacy loss above is what it spends."
                ).format(tr("model") if rtype == "model" else tr("density estimate"))
            )
            if rtype == "density":
                msg += " " + density_noise_text(plan)
            model = next((u for u in plan.units if u.kind == "model"), None)
            if model is not None and model.facts.get("mechanism_choice"):
                # which mechanism the plan settled for this table, and why (what the release runs)
                msg += "\n\n" + tr("Mechanism: {0}.").format(model.facts["mechanism_choice"])
            self.error_chart.show_message(msg)
            self.hist_chart.show_message(
                tr("Nothing to preview yet.")
                if record_like
                else tr("Only the model's coefficients are published, never rows.")
                if rtype == "model"
                else tr("Only the density grid is published, never rows.")
            )
            if not record_like:
                self.hist_chart.title.setText("<b>" + tr("What is published") + "</b>")
            self.hist_chart.caption.setText("")
        else:
            unit = self._units[max(self.column_combo.currentIndex(), 0)]
            self._draw_curves(plan, unit)
            self._draw_marker(plan, unit, eps)
            self._ensure_sample(unit)
            self._draw_histogram(plan, eps)
        self._update_attack(rec, plan, eps)

    def _fit_height(self, rtype: str) -> None:
        """The panel's minimum height: room for readable plots, less for the releases whose
        charts are messages only (model, density: then the page needs no scrolling)."""
        want = PANEL_MIN_HEIGHT_TEXT if rtype in ("model", "density") else PANEL_MIN_HEIGHT
        if self.minimumHeight() != want:
            self.setMinimumHeight(want)
            view = self.parentWidget()
            scroll = view.parentWidget() if view is not None else None
            if isinstance(scroll, FitScrollArea):
                scroll._fit()

    def _set_side(self, widget) -> None:
        """Show ``widget`` (the attacker chart, the synthetic-data box or None) beside the table."""
        for w in (self.attack_chart, self.synth_box):
            w.setVisible(w is widget)
        # label releases: the attacker chart (long legend and caption) beside the error chart, where
        # the rows are tallest; the histogram under it; no side widget: the table takes the row
        layout = (
            ((self.attack_chart, 0, 1, 1), (self.hist_chart, 1, 1, 1), (self.table_box, 1, 0, 1))
            if widget is self.attack_chart
            else ((self.hist_chart, 0, 1, 1), (self.table_box, 1, 0, 1 if widget is not None else 2))
            + (((widget, 1, 1, 1),) if widget is not None else ())
        )
        if layout != self._grid_layout:
            self._grid_layout = layout
            self.grid.setRowStretch(1, 1 if widget is not None else 0)  # a lone table: the charts grow
            for w, row, col, span in layout:
                self.grid.removeWidget(w)
                self.grid.addWidget(w, row, col, 1, span)

    def _toggle_details(self, on: bool) -> None:
        self.details_button.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.details_area.setVisible(on)

    def _update_details(self, rec, plan) -> None:
        synth = None
        method = _method(rec) if rec.release.type == "synthetic" else ""
        if rec.release.type == "synthetic":
            rows = self.session.schema.rows if self.session.schema is not None else 0
            synth = synth_budget_plan(rec, rows)
        text = details_html(plan, synth, method)
        self.details.setText(text or tr("No plan yet."))

    def _show_synthetic(self, rec) -> None:
        self._sample, self._sample_key = None, None
        self.error_chart.title.setText("<b>" + tr("How this release is protected") + "</b>")
        self._synth_columns(rec)
        self._draw_trial()
        self._update_synth(rec)

    # ---- the budget table: one row per plan unit ------------------------------------------
    def _fill_table(self, plan) -> None:
        units = [] if plan is None else list(plan.units)
        names = [u.name for u in units]
        if names != self._table_names:
            self._table_names = names
            self.table.setRowCount(len(units))
            for i in range(len(units)):
                for j in range(len(TABLE_COLUMNS)):
                    self.table.setItem(i, j, QTableWidgetItem())
        for i, u in enumerate(units):
            cells = unit_cells(u)
            for j, text in enumerate(cells):
                item = table_item(self.table, i, j)
                if item.text() != text:  # unchanged cells cost no relayout when epsilon moves
                    item.setText(text)
            tip = cells[COL["mechanism"]] + (": " + u.description if u.description else "")
            if u.noise.zcdp_rho is not None:
                tip += "\n" + joint_gaussian_note()
            table_item(self.table, i, COL["unit"]).setToolTip(tip)
        # δ only when some part has one
        self.table.setColumnHidden(COL["delta"], not any(u.delta > 0 for u in units))
        # the share caption where shares matter: more than one part spends ε
        self.share_note.setVisible(sum(1 for u in units if u.epsilon > 0) > 1)
        # no taller than its rows: the charts get the room
        t = self.table
        rows_h = t.verticalHeader().defaultSectionSize() * max(len(units), 3)
        t.setMaximumHeight(t.horizontalHeader().sizeHint().height() + rows_h + 2 * t.frameWidth() + 20)
        self._fill_split(plan)

    def _fill_split(self, plan) -> None:
        """A synthetic release: the split table (domain estimates, synthesizer, total) in place
        of the per-unit table."""
        rows = synthetic_split_rows(plan)
        synthetic = bool(rows)
        self.table.setVisible(not synthetic)
        if synthetic:
            self.share_note.setVisible(False)
        self.split_table.setVisible(synthetic)
        self.split_note.setText(split_caption(plan))
        self.split_note.setVisible(synthetic)
        if not synthetic:
            return
        t = self.split_table
        if t.rowCount() != len(rows):
            t.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, text in enumerate(row[: len(SPLIT_COLUMNS)]):
                item = t.item(i, j)
                if item is None:
                    item = QTableWidgetItem()
                    if j > 0:
                        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    t.setItem(i, j, item)
                if item.text() != text:
                    item.setText(text)
                item.setToolTip(row[3])
            bold = i == len(rows) - 1
            for j in range(len(SPLIT_COLUMNS)):
                item = t.item(i, j)
                if item is not None and item.font().bold() != bold:
                    f = item.font()
                    f.setBold(bold)
                    item.setFont(f)
        h = t.verticalHeader().defaultSectionSize() * len(rows)
        t.setMaximumHeight(t.horizontalHeader().sizeHint().height() + h + 2 * t.frameWidth() + 6)

    def _row_clicked(self, row: int, _col: int) -> None:
        item = self.table.item(row, COL["unit"])
        i = self.column_combo.findText(item.text()) if item is not None else -1
        if i >= 0:
            self.column_combo.setCurrentIndex(i)

    # ---- error curves: the plan at CURVE_POINTS budgets, on a worker, cached -------------
    def _draw_curves(self, plan, unit) -> None:
        key = curve_key(plan)
        curves = self._curves.get(key)
        if curves is None:
            self._shown_curves = None
            failed = self._curve_error
            if failed is not None and failed[0] == key:
                self.error_chart.show_message(tr("The error curves could not be computed: {0}").format(failed[1]))
                return
            self.error_chart.show_message(tr("Computing the error curves…"))
            self._start_curves(plan, key)
            return
        if self._shown_curves == (key, unit):
            return
        self._shown_curves = (key, unit)
        if unit.kind == "numeric":
            ylabel, short = tr("error as a share of the range"), tr("error / range")
        else:
            ylabel, short = tr("chance a value is changed"), tr("chance changed")
        self.error_chart.set_curves(
            curves.eps,
            relative(unit, curves.errors[unit.name]),
            relative(unit, curves.floors[unit.name]),
            ylabel,
            short,
        )
        self.error_chart.title.setText(
            "<b>"
            + tr("Expected error of “{0}” at each ε").format(unit.name)
            + "</b>"
            + (" " + tr("(worst case: its domain is estimated with DP at release time)") if unit.worst_case else "")
        )

    def _start_curves(self, plan, key) -> None:
        if self._curve_worker is not None:
            if self._curve_worker_key == key:
                return
            self._curve_worker.cancel()
        self._curve_worker_key = key
        self._curve_worker = self.runner.start(
            plan_curves,
            plan,
            on_finished=lambda c, k=key: self._curves_done(k, c),
            on_failed=lambda exc, k=key: self._curves_failed(k, exc),
            on_cancelled=lambda k=key: self._curves_failed(k, None),
        )

    def _curves_done(self, key, curves) -> None:
        if key == self._curve_worker_key:
            self._curve_worker, self._curve_worker_key = None, None
        self._curves[key] = curves
        while len(self._curves) > CURVE_CACHE:
            self._curves.popitem(last=False)
        self.update_all()

    def _curves_failed(self, key, exc) -> None:
        if key != self._curve_worker_key:
            return  # a superseded job
        self._curve_worker, self._curve_worker_key = None, None
        if exc is not None:
            from dpstudio.gui.dialogs import error_summary

            self._curve_error = (key, error_summary(exc))
            self.update_all()

    def _draw_marker(self, plan, unit, eps: float) -> None:
        """The marker: the current plan's expected error of ``unit`` (exact, never interpolated)."""
        if not self.error_chart.showing_plot:
            return
        e = plan.unit(unit.name).shown_error
        self.error_chart.set_epsilon(eps, None if e is None else float(relative(unit, e)))

    # ---- attacker chart ---------------------------------------------------------------------
    def _update_attack(self, rec, plan, eps: float) -> None:
        rtype = rec.release.type
        if rtype not in ("label", "semi-sensitive"):
            self.attack_chart.show_message(
                tr(
                    "The attacker chart applies to label and semi-sensitive releases, "
                    "where public columns are published unchanged next to a "
                    "protected label."
                )
            )
            self.attack_chart.caption.setText("")
            return
        if not leakage_available():
            self.attack_chart.show_message(tr("Attack estimate not available yet in this version."))
            return
        key = leakage_key(self.session, rec)
        if key is None or plan.label is None:
            self.attack_chart.show_message(
                tr("Mark a label column and at least one public column to estimate what an attacker could infer.")
            )
            self.attack_chart.caption.setText("")
            return
        model = self.session.derived.get(key)
        if model is None:
            self._shown_attack = None
            self.attack_chart.caption.setText("")
            if self._leak_worker is None:
                self.attack_chart.show_message(tr("Estimating how well an attacker could guess the label…"))
                public, label = key[2], key[3]
                self._leak_worker = self.runner.start(
                    fit_leakage,
                    self.session.frame,
                    public,
                    label,
                    on_finished=lambda res, k=key: self._leak_done(k, res),
                    on_failed=lambda exc: self._leak_failed(exc),
                    on_cancelled=lambda: self._leak_failed(None),
                )
            return
        ckey = curve_key(plan)
        curves = self._curves.get(ckey)
        if curves is None or curves.label_epsilon is None:
            self._shown_attack = None
            self.attack_chart.show_message(tr("Computing the attacker curves…"))
            self.attack_chart.caption.setText("")
            self._start_curves(plan, ckey)
            return
        if self._shown_attack != (ckey, key):
            from dpstudio.risk import label_rr_law

            ok = np.isfinite(curves.label_epsilon) & (curves.label_epsilon > 0)
            # the mechanism that would run at each point (its delta and grid), as the marker's
            _law, law_at = label_rr_law(plan)
            acc = model.accuracies_of([law_at(float(e)) for e in curves.label_epsilon[ok]])
            self.attack_chart.set_curves(curves.eps[ok], acc["uninformed"], acc["naive"], acc["informed"])
            self._shown_attack = (ckey, key)
        eps_label = plan.label.label_unit_epsilon
        vals, share = attacker_at(model, plan)
        self.attack_chart.set_epsilon(eps, vals)
        # the attacker the review page and the report name (public columns and released label
        # combined; not called "the best": its model is estimated and can score a little below
        # the plain one), then what the guarantee allows of it
        text = tr(
            "At ε = {0:.3g} an attacker combining the public columns and the released label guesses it "
            "right {1:.0%} of the time (from the public columns alone: {2:.0%})"
        ).format(eps, vals[2], vals[0])
        if share is not None:
            text += tr(
                "; {0:.0%} of people are exposed beyond what ε allows: for them the public columns add "
                "more than 0.1 to what the released label tells"
            ).format(share)
        self.attack_chart.caption.setText(text + ". " + tr("Internal estimate."))
        self.attack_chart.caption.setToolTip(
            tr(
                "Read at the ε of the label's randomized response ({0:.3g}). “Exposed”: an attacker's "
                "advantage above 0.1 for that person. Estimated from the raw data: for internal use only."
            ).format(eps_label)
            + sample_note(self.session)
        )

    def _leak_done(self, key, model) -> None:
        self._leak_worker = None
        self.session.derived[key] = model
        self.update_all(force=True)

    def _leak_failed(self, exc) -> None:
        self._leak_worker = None
        from dpstudio.gui.dialogs import error_summary

        self.attack_chart.show_message(
            tr("The attack estimate failed: {0}").format(error_summary(exc))
            if exc
            else tr("Attack estimate cancelled.")
        )

    # ---- histogram: a sample privatized with the current plan's noise parameters ----------
    def _ensure_sample(self, unit) -> None:
        key = (unit, self.session.data_token)
        if key == self._sample_key:
            return
        self._sample = None
        self._sample_key = key
        frame = self.session.frame
        if frame is None:
            return
        if len(frame) <= 4 * SAMPLE_ROWS and not self._slow_samples:
            t0 = time.perf_counter()
            self._sample = ColumnSample(frame, unit)
            # measured: if it took longer than the GUI-thread budget, later samples go to a worker
            self._slow_samples = time.perf_counter() - t0 > GUI_THREAD_BUDGET_S
            return
        self.hist_chart.show_message(tr("Drawing a sample of {0} rows…").format(f"{SAMPLE_ROWS:,}"))
        if self._sample_worker is not None:
            self._sample_worker.cancel()
        self._sample = None
        self._sample_worker = self.runner.start(
            make_sample, frame, unit, on_finished=lambda s, k=key: self._sample_done(k, s)
        )

    def _sample_done(self, key, sample) -> None:
        self._sample_worker = None
        if key == self._sample_key and self._units:
            self._sample = sample
            plan, _ = self.session.plan()
            if plan is not None:
                self._draw_histogram(plan, plan.recipe.budget.epsilon)

    def _draw_histogram(self, plan, eps: float) -> None:
        sample = self._sample
        if sample is None:
            return
        u = sample.unit
        try:
            noise = plan.unit(u.name).noise
        except KeyError:
            return
        t0 = time.perf_counter()
        from dpstudio.plan.record import clamps_to_bounds

        # the preview post-processes as the release will: clamped to the bounds unless turned off
        pos, a, b = sample.histogram(noise, clamp=clamps_to_bounds(plan.recipe))
        if u.kind == "numeric":
            self.hist_chart.set_numeric(pos, a, b, u.name)
        else:
            self.hist_chart.set_categorical(u.categories, a, b, u.name)
        # a large file's frame is already a sample: the row count is the file's
        total = self.session.sample_of or len(self.session.frame)
        self.hist_chart.caption.setText(
            tr("{0} of {1} rows, privatized at ε = {2:.3g} for this preview only.").format(
                f"{len(sample.values):,}", f"{total:,}", eps
            )
        )
        self.last_hist_ms = 1000 * (time.perf_counter() - t0)

    def _synth_columns(self, rec) -> None:
        names = [c.name for c in rec.columns if c.role not in ("identifier", "ignore", "embedding")]
        if [self.column_combo.itemText(i) for i in range(self.column_combo.count())] != names:
            _refill_combo(self.column_combo, names)
        self.notes.setText("")
        self.notes.setVisible(False)

    def _draw_trial(self) -> None:
        name = self.column_combo.currentText()
        marg = (self.trial or {}).get("marginals", {}).get(name)
        if marg is None:
            self.hist_chart.show_message(
                tr(
                    "Run a quick trial fit (below) to compare the original and the synthetic distribution of “{0}”."
                ).format(name)
                if name
                else tr("Nothing to preview yet.")
            )
            self.hist_chart.caption.setText("")
            return
        self.hist_chart.set_series_names(tr("original (sample)"), tr("synthetic (trial)"))
        self.hist_chart.title.setText("<b>" + tr("Original vs synthetic values (quick trial fit)") + "</b>")
        kind, pos, a, b = marg
        if kind == "numeric":
            self.hist_chart.set_numeric(pos, a, b, name)
        else:
            self.hist_chart.set_categorical(pos, a, b, name)
        self.hist_chart.caption.setText(
            tr(
                "1-way distribution of “{0}”: the trial sample vs rows generated by a "
                "short trial fit. The real release trains longer."
            ).format(name)
        )

    # ---- synthetic -----------------------------------------------------------------------
    def _update_synth(self, rec) -> None:
        rows = self.session.schema.rows if self.session.schema is not None else 0
        # the synthesizer's own split of its budget (Synthesizer.budget_plan: public quantities only)
        synth_plan = synth_budget_plan(rec, rows)
        from dpstudio.plan.synthetic import MARGINAL_METHODS

        method = _method(rec)
        split = budget_plan_text(synth_plan, method)
        self.error_chart.show_message(
            (
                tr("Synthetic data adds its noise inside the synthesizer, not to each value: see the trial fit.")
                if method in MARGINAL_METHODS
                else tr(
                    "Synthetic data adds its noise inside the synthesizer, not to each "
                    "value: see the noise-to-signal ratio and the trial fit."
                )
            )
            + ("<br><br>" + split if split else "")
        )
        _plan, err = self.session.plan()
        calc = embedding_noise_to_signal(rec, rows, synth_plan) if err is None else None
        if calc is not None:
            self.synth_text.setText(
                tr(
                    "Noise-to-signal ratio of the private summary: at least <b>{0:.3g}</b> "
                    "({1}). Below 0.1 the generator sees the data clearly; around 1 and above it "
                    "mostly sees noise."
                ).format(calc["ratio"], calc["verdict"])
            )
            self.synth_text.setToolTip(
                tr(
                    "Computed from public quantities only (ε, δ, the number of rows, the synthesizer settings): "
                    "noise per coordinate σ = {0:.3g}, times √{1} coordinates, divided by the largest possible "
                    "size (norm 1) of the embedding. The real embedding is at most that large, so the true ratio "
                    "is at least this."
                ).format(calc["sigma"], calc["dim"])
            )
        else:
            from dpstudio.plan.synthetic import MARGINAL_METHODS

            method = _method(rec)
            self.synth_text.setText(
                tr(
                    "The synthesizer adds Gaussian noise to counts of the data "
                    "(no single embedding, so no noise-to-signal ratio). "
                    "A trial fit shows the result on a small sample."
                )
                if method in MARGINAL_METHODS
                else tr(
                    "The noise-to-signal ratio needs a valid budget (ε and δ > 0). "
                    "A trial fit shows the result on a small sample."
                )
            )
            self.synth_text.setToolTip("")
        self.trial_button.setEnabled(err is None and self.trial_worker is None)
        self.trial_cancel.setEnabled(self.trial_worker is not None)

    def start_trial(self):
        rec = self.session.preview_recipe()
        if rec is None or self.trial_worker is not None or self.session.frame is None:
            return None
        self.trial_result.setText(tr("Training on a sample…"))
        self.trial_button.setEnabled(False)
        self.trial_cancel.setEnabled(True)
        self.trial_worker = self.runner.start(
            trial_fit,
            rec,
            self.session.frame,
            on_finished=self._trial_done,
            on_failed=self._trial_failed,
            on_cancelled=self._trial_failed,
            on_progress=lambda f, m: self.trial_result.setText(tr("Training on a sample… {0:.0f} %").format(100 * f)),
        )
        return self.trial_worker

    def cancel_trial(self) -> None:
        if self.trial_worker is not None:
            self.trial_worker.cancel()
            self.trial_result.setText(tr("Cancelling…"))

    def _trial_done(self, result) -> None:
        self.trial_worker = None
        self.trial = result
        self.trial_button.setEnabled(True)
        self.trial_cancel.setEnabled(False)
        self.trial_result.setText(result["text"])
        self._draw_trial()

    def _trial_failed(self, exc=None) -> None:
        self.trial_worker = None
        self.trial_button.setEnabled(True)
        self.trial_cancel.setEnabled(False)
        from dpstudio.gui.dialogs import error_summary

        self.trial_result.setText(
            tr("Trial fit stopped: {0}").format(error_summary(exc)) if exc else tr("Trial fit cancelled.")
        )


def synth_budget_plan(recipe, rows: int) -> list[dict] | None:
    """The synthesizer's own split of the recipe's budget (``Synthesizer.budget_plan``: public
    quantities only, the same numbers the fit then spends).  None without a valid budget.

    Read off the compiled plan's synthesizer unit (the object the release fits) and the number of
    label classes of the public table spec the fit is given (``table_spec(recipe).n_classes``),
    never counted here."""
    b = recipe.budget
    if not rows or not (b.epsilon > 0 and b.delta > 0):
        return None
    spec = release_table_spec(recipe)
    if spec is None:
        return None
    from dpstudio.plan import synthetic

    try:  # the compiled plan's synthesizer unit: the object the release will fit
        unit = next(u for u in synthetic.compile(recipe).units if u.kind == "synthesizer")
    except Exception:  # noqa: BLE001 - unknown method or options: the release page reports them
        return None
    if not isinstance(unit.mechanism, synthetic.SynthesizerRelease):
        return None
    try:
        return unit.mechanism.budget_plan(rows, spec.n_classes)
    except ValueError:
        return None


def release_table_spec(recipe):
    """The public table spec the synthetic release fits on (``dpstudio.plan.synthetic.table_spec``),
    or None while it cannot be built (the label's categories unknown, no kept column).

    A feature column whose domain is still to be estimated with DP (its bounds are known only
    once the release runs) is left out: the budget split depends on the spec's label alone."""
    from dpstudio.plan.synthetic import table_spec

    known = tuple(c for c in recipe.columns if c.role == "label" or (c.domain is not None and c.domain.known))
    if any(c.role == "label" and (c.domain is None or not c.domain.known) for c in known):
        return None
    try:
        return table_spec(replace(recipe, columns=known))
    except Exception:  # noqa: BLE001 - no kept column yet: the release page reports it
        return None


def budget_plan_text(plan: list[dict] | None, method: str) -> str:
    """The plan as rich text for the panel: what each release gets and its noise."""
    if not plan:
        return ""
    lines = [tr("<b>How the synthesizer spends the budget</b> (the accounting is under “Details for specialists”):")]
    for part in plan:
        line = tr("{0}: {1:.0f} %").format(tr(part["part"]), 100 * part["share"])
        if "sigma" in part:
            line += tr(" — Gaussian noise σ = {0:.3g} on each of {1:,} values").format(part["sigma"], part["dim"])
        lines.append("• " + line)
    return "<br>".join(lines)


def embedding_noise_to_signal(recipe, rows: int, plan: list[dict] | None = None) -> dict | None:
    """Noise-to-signal ratio of the PEARL / DP-MERF embedding release, from public quantities.

    The embedding E = (1/n) sum phi(x_i) e_{y_i}^T has Frobenius norm <= 1 (||phi(x)|| = 1) and
    L2 sensitivity 2/n; its Gaussian noise sigma per coordinate comes from the synthesizer's own
    budget plan (:func:`synth_budget_plan`).  The ratio shown is sigma * sqrt(dim) / 1: the
    expected noise norm over the largest possible embedding norm, hence a lower bound of the true
    ratio.  None for MST or an invalid budget.  ``plan``: the recipe's plan if already at hand."""
    import math

    if _method(recipe) not in ("pearl", "merf"):
        return None
    plan = plan if plan is not None else synth_budget_plan(recipe, rows)
    emb = next((p for p in plan or () if "sigma" in p and "embedding" in p["part"]), None)
    if emb is None:
        return None
    sigma, dim = emb["sigma"], emb["dim"]
    ratio = sigma * math.sqrt(dim)
    verdict = (
        tr("the generator sees the data clearly")
        if ratio < 0.1
        else tr("usable, some detail is lost")
        if ratio < 0.5
        else tr("mostly noise: raise ε or use more rows")
    )
    return {"ratio": ratio, "sigma": sigma, "dim": dim, "share": emb["share"], "verdict": verdict}


TRIAL_ROWS = 2000
TRIAL_OPTIONS = {"pearl": {"steps": 300, "k": 100}, "merf": {"steps": 300, "k": 100}, "mst": {}, "aim": {}}


def _marginal(col, orig, synth):
    import pandas as pd

    if col.type in ("integer", "float") and col.domain is not None and col.domain.known:
        edges = np.linspace(float(col.domain.low), float(col.domain.high), 31)
        a = pd.to_numeric(orig, errors="coerce").dropna().clip(edges[0], edges[-1]).to_numpy()
        b = pd.to_numeric(synth, errors="coerce").dropna().clip(edges[0], edges[-1]).to_numpy()
        ha = np.histogram(a, edges)[0] / max(len(a), 1)
        hb = np.histogram(b, edges)[0] / max(len(b), 1)
        return "numeric", edges, ha, hb
    cats = (
        list(col.domain.categories)
        if col.domain is not None and col.domain.categories
        else sorted(set(map(str, orig.dropna())))
    )
    sa, sb = orig.astype(str), synth.astype(str)
    ha = np.array([(sa == c).mean() for c in cats])
    hb = np.array([(sb == c).mean() for c in cats])
    return "categorical", cats, ha, hb


def _method(recipe) -> str:
    """The synthesizer the plan will run (the recipe's choice or the recommended one); "" when
    the recipe names an unknown one (the Release page reports it)."""
    from dpstudio.errors import UserError
    from dpstudio.plan.synthetic import method_of

    try:
        return method_of(recipe)
    except UserError:
        return ""


#: the trial fit's own seeded stream (dpstudio.engine.rng.RandomSource): never a release's draws
PREVIEW_STREAM = 2**40 + 0x7E1A1


def trial_fit(recipe, frame, *, progress, cancel, rows: int | None = None) -> dict:
    """Worker job: a short fit of the synthesizer (few steps, few frequencies) on a sample, and the
    1-way marginals of every column, original sample vs synthetic rows.  Nothing is published."""
    from dataclasses import replace

    from dpstudio.engine.rng import RandomSource
    from dpstudio.plan import release_module

    rows = rows or TRIAL_ROWS
    from dpstudio.plan.synthetic import method_of

    method = method_of(recipe)
    quick = dict(TRIAL_OPTIONS.get(method, {}))
    opts = recipe.release.options.to_dict()
    for k, v in quick.items():
        opts[k] = min(v, opts.get(k, v))
    from dpstudio.recipe.model import Params

    recipe = replace(
        recipe, release=replace(recipe.release, options=Params.of(opts)), outputs=replace(recipe.outputs, rows=None)
    )
    module = release_module(recipe.release.type)
    sample = frame.sample(min(rows, len(frame)), random_state=0) if len(frame) > rows else frame
    sample = sample.reset_index(drop=True)
    plan = module.compile(recipe)
    t0 = time.perf_counter()
    # a stream of its own: a trial never draws a seeded release's noise
    outcome = module.execute(plan, sample, RandomSource(0, stream=PREVIEW_STREAM), progress=progress, cancel=cancel)
    cancel.check()
    synth = outcome.data
    text = tr(
        "Trial: trained on {0:,} sampled rows in {1:.1f} s ({2}); {3:,} synthetic rows. Pick a "
        "column above to compare its distribution."
    ).format(
        len(sample),
        time.perf_counter() - t0,
        ", ".join(f"{k} = {v}" for k, v in quick.items()) or tr("default settings"),
        0 if synth is None else len(synth),
    )
    marginals = {}
    if synth is not None:
        for c in recipe.columns:
            if c.name in synth.columns and c.name in sample.columns:
                try:
                    marginals[c.name] = _marginal(c, sample[c.name], synth[c.name])
                except Exception:  # noqa: BLE001 - one odd column must not lose the trial
                    pass
    return {"text": text, "marginals": marginals}


def _refill_combo(combo, names) -> None:
    """Replace a combo's items without emitting signals, keeping the current choice if it stays."""
    current = combo.currentText()
    combo.blockSignals(True)
    combo.clear()
    combo.addItems(names)
    if current in names:
        combo.setCurrentIndex(names.index(current))
    combo.blockSignals(False)


def sample_note(session) -> str:
    """ " " + the sample label of an estimate, for a file too large for memory ("" otherwise)."""
    if session.sample_of is None or session.frame is None:
        return ""
    from dpstudio.gui.texts import sample_estimate_text

    return " " + sample_estimate_text(session.sample_of, len(session.frame))
