"""The live preview beside the budget controls: error vs floor, original vs privatized
histogram, attacker accuracy, synthetic-data trial.  Heavy parts (leakage model fit, large
samples, trial fit) run on workers; moving epsilon only re-evaluates cached curves."""
from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QGridLayout, QHBoxLayout, QHeaderView, QLabel,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from dpstudio.gui.charts.attack_chart import AttackChart, three_curves
from dpstudio.gui.charts.error_chart import ErrorChart
from dpstudio.gui.charts.histogram_chart import HistogramChart
from dpstudio.gui.charts.preview import (EPS_GRID, SAMPLE_ROWS, ColumnSample, error_curves, preview_units,
                                         relative)
from dpstudio.gui.i18n import tr

GUI_THREAD_BUDGET_S = 0.010  # work under 10 ms may run on the GUI thread; anything longer goes to a worker
LEAKAGE_SAMPLE = 50_000


def leakage_available() -> bool:
    try:
        from dpstudio.engine.leakage.risk import LabelLeakageModel  # noqa: F401
        return True
    except Exception:  # noqa: BLE001
        return False


def fit_leakage(frame, public_cols, label_col, *, progress, cancel):
    """Worker job: fit the label-leakage model on (a sample of) the table."""
    from dpstudio.engine.leakage.risk import LabelLeakageModel

    if len(frame) > LEAKAGE_SAMPLE:
        frame = frame.sample(LEAKAGE_SAMPLE, random_state=0)
    progress(0.1, "fitting the attacker model")
    cancel.check()
    model = LabelLeakageModel.fit(frame, list(public_cols), label_col)
    cancel.check()
    raw = model.curves(EPS_GRID)
    curves = three_curves(raw)
    share = None
    if isinstance(raw, dict) and isinstance(raw.get("iue_adv_bound"), dict):
        share = raw["iue_adv_bound"].get("share_above")
    return model, curves, share


def make_sample(frame, unit, *, progress, cancel):
    return ColumnSample(frame, unit)


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
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels([tr("Column"), tr("Mechanism"), tr("Expected error"),
                                              tr("Best possible (floor)")])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setToolTip(tr("Expected error per released value at the chosen ε, in the column's units "
                                 "(for categories: the chance a value is replaced)."))
        self.table.cellClicked.connect(lambda r, _c: self.column_combo.setCurrentIndex(r))
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setObjectName("note")

        self.synth_box = QWidget()
        sl = QVBoxLayout(self.synth_box)
        sl.setContentsMargins(0, 0, 0, 0)
        self.synth_text = QLabel()
        self.synth_text.setWordWrap(True)
        self.trial_button = QPushButton(tr("Run a quick trial fit"))
        self.trial_button.setToolTip(tr("Trains the synthesizer on a small sample to show what the output "
                                        "looks like. Nothing is saved or published."))
        self.trial_button.clicked.connect(self.start_trial)
        self.trial_cancel = QPushButton(tr("Cancel"))
        self.trial_cancel.setEnabled(False)
        self.trial_cancel.clicked.connect(self.cancel_trial)
        self.trial_result = QLabel()
        self.trial_result.setWordWrap(True)
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
        top.addWidget(QLabel(tr("Preview column:")))
        top.addWidget(self.column_combo, 1)
        grid = QGridLayout()
        grid.addWidget(self.error_chart, 0, 0)
        grid.addWidget(self.hist_chart, 0, 1)
        grid.addWidget(self.table, 1, 0)
        grid.addWidget(self.attack_chart, 1, 1)
        grid.addWidget(self.synth_box, 1, 1)
        grid.setRowStretch(0, 3)
        grid.setRowStretch(1, 2)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addLayout(grid, 1)
        lay.addWidget(self.notes)

        self._curve_key = None
        self._units = []
        self._err = self._floor = None
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
        rec = s.preview_recipe()
        if rec is None:
            return
        key = (rec.columns, rec.release.type, rec.budget.delta)
        if force or key != self._curve_key:
            self._rebuild(rec, key)
        elif rec.release.type == "synthetic":
            self._update_synth(rec)  # the noise-to-signal ratio follows epsilon
        eps = rec.budget.epsilon if rec.budget.epsilon > 0 else 1.0
        self._set_epsilon(eps)

    def _rebuild(self, rec, key) -> None:
        if key != self._curve_key:
            units, notes = preview_units(rec)
            self._units = units
            self._curve_key = key
            self._err, self._floor = error_curves(units) if units else (None, None)
            names = [u.name for u in units]
            _refill_combo(self.column_combo, names)
            self.table.setRowCount(len(units))
            for i, u in enumerate(units):
                self.table.setItem(i, 0, QTableWidgetItem(u.name))
                from dpstudio.gui.texts import mechanism_text
                self.table.setItem(i, 1, QTableWidgetItem(mechanism_text(u.mechanism)[0]))
                self.table.setItem(i, 2, QTableWidgetItem())
                self.table.setItem(i, 3, QTableWidgetItem())
            self.notes.setText("; ".join(notes))
        rtype = rec.release.type
        self.table.setVisible(rtype in ("record", "label", "semi-sensitive"))
        if rtype in ("synthetic", "model", "density"):
            self._sample_key = None
            self._sample = None
            self.error_chart.title.setText("<b>" + tr("How this release is protected") + "</b>")
        if rtype == "synthetic":
            self._synth_columns(rec)
            self._draw_trial()
            self._update_side(rec)
            return
        self.hist_chart.set_series_names(tr("original"), tr("privatized"))
        self.hist_chart.title.setText("<b>" + tr("Original vs privatized values (sample)") + "</b>")
        if not self._units:
            msg = tr("Error curves are shown for record, label and semi-sensitive releases with a domain "
                     "for every released column.") if rtype in ("record", "label", "semi-sensitive") else \
                tr("This release adds its noise inside the {0}, not to each value, so there is no per-column "
                   "error curve; the total privacy loss above is what it spends.").format(
                    tr("model") if rtype == "model" else tr("density estimate"))
            self.error_chart.show_message(msg)
            self.hist_chart.show_message(tr("Nothing to preview yet.") if rtype in ("record", "label", "semi-sensitive")
                                         else tr("Only the {0} is published, never rows.").format(
                                             tr("model's coefficients") if rtype == "model" else tr("density grid")))
        else:
            i = max(self.column_combo.currentIndex(), 0)
            u = self._units[i]
            rel_err = relative([u], self._err[i:i + 1])[0]
            rel_floor = relative([u], self._floor[i:i + 1])[0]
            ylabel = tr("error as a share of the range") if u.kind == "numeric" else tr("chance a value is changed")
            self.error_chart.set_curves(EPS_GRID, rel_err, rel_floor, ylabel)
            self.error_chart.title.setText("<b>" + tr("Expected error of “{0}” vs ε — and the best any "
                                                      "mechanism could do").format(u.name) + "</b>"
                                           + (" " + tr("(worst case: its bounds are estimated with DP at "
                                                       "release time)") if u.worst_case else ""))
            self._ensure_sample(u)
        self._update_side(rec)

    def _synth_columns(self, rec) -> None:
        names = [c.name for c in rec.columns if c.role not in ("identifier", "ignore", "embedding")]
        if [self.column_combo.itemText(i) for i in range(self.column_combo.count())] != names:
            _refill_combo(self.column_combo, names)
        self.table.setRowCount(0)
        self.notes.setText("")

    def _draw_trial(self) -> None:
        name = self.column_combo.currentText()
        marg = (self.trial or {}).get("marginals", {}).get(name)
        if marg is None:
            self.hist_chart.show_message(tr("Run a quick trial fit (below) to compare the original and the "
                                            "synthetic distribution of “{0}”.").format(name) if name else
                                         tr("Nothing to preview yet."))
            self.hist_chart.caption.setText("")
            return
        self.hist_chart.set_series_names(tr("original (sample)"), tr("synthetic (trial)"))
        self.hist_chart.title.setText("<b>" + tr("Original vs synthetic values (quick trial fit)") + "</b>")
        kind, pos, a, b = marg
        if kind == "numeric":
            self.hist_chart.set_numeric(pos, a, b, name)
        else:
            self.hist_chart.set_categorical(pos, a, b, name)
        self.hist_chart.caption.setText(tr("1-way distribution of “{0}”: the trial sample vs rows generated by a "
                                           "short trial fit. The real release trains longer.").format(name))

    def _update_side(self, rec) -> None:
        rtype = rec.release.type
        self.synth_box.setVisible(rtype == "synthetic")
        self.attack_chart.setVisible(rtype != "synthetic")
        if rtype == "synthetic":
            self._update_synth(rec)
            return
        if rtype not in ("label", "semi-sensitive"):
            self.attack_chart.show_message(tr("The attacker chart applies to label and semi-sensitive releases, "
                                              "where public columns are published unchanged next to a "
                                              "protected label."))
            return
        if not leakage_available():
            self.attack_chart.show_message(tr("Attack estimate not available yet in this version."))
            return
        labels = [c.name for c in rec.columns if c.role == "label"]
        unchanged = ("public",) if rtype == "semi-sensitive" else ("public", "sensitive")
        public = tuple(c.name for c in rec.columns if c.role in unchanged)
        if not labels or not public:
            self.attack_chart.show_message(tr("Mark a label column and at least one public column to "
                                              "estimate what an attacker could infer."))
            return
        key = ("leakage", id(self.session.loaded), public, labels[0])
        got = self.session.derived.get(key)
        if got is not None:
            self._leak_x = EPS_GRID * self._label_share(rec)
            self._leak_share = got[2] if len(got) > 2 else None
            self.attack_chart.set_curves(self._leak_x, *got[1])
            return
        if self._leak_worker is None:
            self.attack_chart.show_message(tr("Estimating how well an attacker could guess the label…"))
            self._leak_worker = self.runner.start(
                fit_leakage, self.session.frame, public, labels[0],
                on_finished=lambda res, k=key: self._leak_done(k, res),
                on_failed=lambda exc: self._leak_failed(exc), on_cancelled=lambda: self._leak_failed(None))

    def _label_share(self, rec) -> float:
        """Total epsilon per unit of label epsilon (the label gets a share of the budget)."""
        from dpstudio.engine.release.record import budget_split
        try:
            split = budget_split(rec)
            lab = next(c.name for c in rec.columns if c.role == "label")
            return rec.budget.epsilon / split[lab][0] if split[lab][0] > 0 else 1.0
        except Exception:  # noqa: BLE001
            return 1.0

    def _leak_done(self, key, result) -> None:
        self._leak_worker = None
        self.session.derived[key] = result
        self.update_all(force=True)

    def _leak_failed(self, exc) -> None:
        self._leak_worker = None
        from dpstudio.gui.dialogs import error_summary
        self.attack_chart.show_message(tr("The attack estimate failed: {0}").format(
            error_summary(exc)) if exc else tr("Attack estimate cancelled."))

    # ---- epsilon -------------------------------------------------------------------------
    def _set_epsilon(self, eps: float) -> None:
        if self._units:
            le = np.log(eps)
            lg = np.log(EPS_GRID)
            for i, u in enumerate(self._units):
                e = float(np.interp(le, lg, self._err[i]))
                f = float(np.interp(le, lg, self._floor[i]))
                fmt = (lambda x: f"{x:,.3g}") if u.kind == "numeric" else (lambda x: f"{100 * x:.1f} %")
                # bounds still to be estimated with DP: the search range gives the worst case only
                self.table.item(i, 2).setText(("\u2264 " if u.worst_case else "") + fmt(e))
                self.table.item(i, 3).setText(fmt(f))
            self.error_chart.set_epsilon(eps)
            self._draw_histogram(eps)
        vals = self.attack_chart.set_epsilon(eps)
        if vals is not None:
            text = tr("At ε = {0:.3g}: best attacker right {1:.0%} of the time; public columns alone {2:.0%}.").format(
                eps, vals[2], vals[0])
            share = getattr(self, "_leak_share", None)
            if share is not None:
                s = float(np.interp(np.log(eps), np.log(self._leak_x), np.asarray(share, float)))
                text += " " + tr("{0:.0%} of people are exposed beyond the label guarantee (advantage > 0.1).").format(s)
            self.attack_chart.caption.setText(text + " " + tr("Estimated from the raw data: internal use only."))
        else:
            self.attack_chart.caption.setText("")

    def _ensure_sample(self, unit) -> None:
        key = (unit, id(self.session.loaded))
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
        self._sample_worker = self.runner.start(make_sample, frame, unit,
                                                on_finished=lambda s, k=key: self._sample_done(k, s))

    def _sample_done(self, key, sample) -> None:
        self._sample_worker = None
        if key == self._sample_key and self._units:
            self._sample = sample
            rec = self.session.recipe
            if rec is not None:
                self._draw_histogram(rec.budget.epsilon)

    def _draw_histogram(self, eps: float) -> None:
        sample = self._sample
        if sample is None:
            return
        t0 = time.perf_counter()
        pos, a, b = sample.histogram(eps)
        u = sample.unit
        if u.kind == "numeric":
            self.hist_chart.set_numeric(pos, a, b, u.name)
        else:
            self.hist_chart.set_categorical(u.categories, a, b, u.name)
        self.hist_chart.caption.setText(tr("{0} of {1} rows, privatized at ε = {2:.3g} for this preview only.").format(
            f"{len(sample.values):,}", f"{len(self.session.frame):,}", eps))
        self.last_hist_ms = 1000 * (time.perf_counter() - t0)

    # ---- synthetic -----------------------------------------------------------------------
    def _update_synth(self, rec) -> None:
        rows = self.session.schema.rows if self.session.schema is not None else 0
        budget_split = synth_budget_plan(rec, rows)
        split = budget_plan_text(budget_split, rec.release.options.get("method", "pearl"))
        self.error_chart.show_message(tr("Synthetic data adds its noise inside the synthesizer, not to each "
                                         "value: see the noise-to-signal ratio and the trial fit.")
                                      + ("<br><br>" + split if split else ""))
        plan, err = self.session.plan()
        nsr = None
        if plan is not None and isinstance(plan.extra, dict):
            nsr = plan.extra.get("noise_to_signal")
        calc = embedding_noise_to_signal(rec, rows, budget_split) if nsr is None and err is None else None
        if nsr is not None:
            self.synth_text.setText(tr("Noise-to-signal ratio of the private summary (embedding): {0:.3g}. "
                                       "Below 0.1 the generator sees the data clearly; above 1 mostly noise.").format(float(nsr)))
            self.synth_text.setToolTip("")
        elif calc is not None:
            self.synth_text.setText(tr(
                "Noise-to-signal ratio of the private summary: at least <b>{0:.3g}</b> "
                "({1}). Below 0.1 the generator sees the data clearly; around 1 and above it "
                "mostly sees noise.").format(calc["ratio"], calc["verdict"]))
            self.synth_text.setToolTip(tr(
                "Computed from public quantities only (ε, δ, the number of rows, the synthesizer settings): "
                "noise per coordinate σ = {0:.3g}, times √{1} coordinates, divided by the largest possible "
                "size (norm 1) of the embedding. The real embedding is at most that large, so the true ratio "
                "is at least this.").format(calc["sigma"], calc["dim"]))
        else:
            method = rec.release.options.get("method", "pearl")
            self.synth_text.setText(tr("The synthesizer adds Gaussian noise to counts of the data "
                                       "(MST: no single embedding, so no noise-to-signal ratio). "
                                       "A trial fit shows the result on a small sample.") if method == "mst" else
                                    tr("The noise-to-signal ratio needs a valid budget (ε and δ > 0). "
                                       "A trial fit shows the result on a small sample."))
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
            trial_fit, rec, self.session.frame,
            on_finished=self._trial_done, on_failed=self._trial_failed, on_cancelled=self._trial_failed,
            on_progress=lambda f, m: self.trial_result.setText(tr("Training on a sample… {0:.0f} %").format(100 * f)))
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
        self.trial_result.setText(tr("Trial fit stopped: {0}").format(error_summary(exc)) if exc else
                                  tr("Trial fit cancelled."))


def synth_budget_plan(recipe, rows: int) -> list[dict] | None:
    """The synthesizer's own split of the recipe's budget (``Synthesizer.budget_plan``: public
    quantities only, the same numbers the fit then spends).  None without a valid budget."""
    method = recipe.release.options.get("method", "pearl")
    b = recipe.budget
    if not rows or not (b.epsilon > 0 and b.delta > 0):
        return None
    try:
        from dpstudio.engine.synth import SYNTHESIZERS
        opts = {k: v for k, v in recipe.release.options.to_dict().items() if k != "method"}
        synth = SYNTHESIZERS[method](**opts)
    except Exception:  # noqa: BLE001 - unknown options: the release page reports them
        return None
    labels = [c for c in recipe.columns if c.role == "label"]
    classes = 1
    if labels and labels[0].domain is not None and labels[0].domain.categories:
        classes = len(labels[0].domain.categories) + (1 if labels[0].domain.other is not None
                                                       and labels[0].domain.other not in labels[0].domain.categories else 0)
    try:
        return synth.budget_plan(b.epsilon, b.delta, rows, classes)
    except ValueError:
        return None


def budget_plan_text(plan: list[dict] | None, method: str) -> str:
    """The plan as rich text for the panel: what each release gets and its noise."""
    if not plan:
        return ""
    unit = tr("zCDP ρ") if method == "mst" else tr("Gaussian-DP μ²")
    lines = [tr("<b>How the synthesizer spends the budget</b> (shares of {0}, which add up exactly):").format(unit)]
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

    if recipe.release.options.get("method", "pearl") not in ("pearl", "merf"):
        return None
    plan = plan if plan is not None else synth_budget_plan(recipe, rows)
    emb = next((p for p in plan or () if "sigma" in p and "embedding" in p["part"]), None)
    if emb is None:
        return None
    sigma, dim = emb["sigma"], emb["dim"]
    ratio = sigma * math.sqrt(dim)
    verdict = tr("the generator sees the data clearly") if ratio < 0.1 else \
        tr("usable, some detail is lost") if ratio < 0.5 else tr("mostly noise: raise ε or use more rows")
    return {"ratio": ratio, "sigma": sigma, "dim": dim, "share": emb["share"], "verdict": verdict}


TRIAL_ROWS = 2000
TRIAL_OPTIONS = {"pearl": {"steps": 300, "k": 100}, "merf": {"steps": 300, "k": 100}, "mst": {}}


def _marginal(col, orig, synth):
    import pandas as pd
    if col.type in ("integer", "float") and col.domain is not None and col.domain.known:
        edges = np.linspace(float(col.domain.low), float(col.domain.high), 31)
        a = pd.to_numeric(orig, errors="coerce").dropna().clip(edges[0], edges[-1]).to_numpy()
        b = pd.to_numeric(synth, errors="coerce").dropna().clip(edges[0], edges[-1]).to_numpy()
        ha = np.histogram(a, edges)[0] / max(len(a), 1)
        hb = np.histogram(b, edges)[0] / max(len(b), 1)
        return "numeric", edges, ha, hb
    cats = list(col.domain.categories) if col.domain is not None and col.domain.categories else \
        sorted(set(map(str, orig.dropna())))
    sa, sb = orig.astype(str), synth.astype(str)
    ha = np.array([(sa == c).mean() for c in cats])
    hb = np.array([(sb == c).mean() for c in cats])
    return "categorical", cats, ha, hb


def trial_fit(recipe, frame, *, progress, cancel, rows: int | None = None) -> dict:
    """Worker job: a short fit of the synthesizer (few steps, few frequencies) on a sample, and the
    1-way marginals of every column, original sample vs synthetic rows.  Nothing is published."""
    from dataclasses import replace

    from dpstudio.engine.release import release_module
    from dpstudio.engine.rng import make_random_source

    rows = rows or TRIAL_ROWS
    method = recipe.release.options.get("method", "pearl")
    quick = dict(TRIAL_OPTIONS.get(method, {}))
    opts = recipe.release.options.to_dict()
    for k, v in quick.items():
        opts[k] = min(v, opts.get(k, v))
    from dpstudio.recipe.model import Params
    recipe = replace(recipe, release=replace(recipe.release, options=Params.of(opts)),
                     outputs=replace(recipe.outputs, rows=None))
    module = release_module(recipe.release.type)
    sample = frame.sample(min(rows, len(frame)), random_state=0) if len(frame) > rows else frame
    sample = sample.reset_index(drop=True)
    plan = module.plan(recipe)
    t0 = time.perf_counter()
    outcome = module.run(recipe, sample, plan, make_random_source(0), progress=progress, cancel=cancel)
    cancel.check()
    synth = outcome.data
    text = tr("Trial: trained on {0:,} sampled rows in {1:.1f} s ({2}); {3:,} synthetic rows. Pick a "
              "column above to compare its distribution.").format(
        len(sample), time.perf_counter() - t0,
        ", ".join(f"{k} = {v}" for k, v in quick.items()) or tr("default settings"),
        0 if synth is None else len(synth))
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
