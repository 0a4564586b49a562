"""Step 6 - Export: output and report paths, runs execute_release on a worker with progress
and cancel, shows where the files went and offers to open the report."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout,
                               QLabel, QLineEdit, QMessageBox, QProgressBar, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

from dpstudio.gui.dialogs import show_error
from dpstudio.gui.wizard.base import WizardPage, blocked, note_label
from dpstudio.recipe.model import OUTPUT_FORMATS

EXT = {"csv": ".csv", "parquet": ".parquet", "xlsx": ".xlsx", "json": ".json"}


def artifact_only(recipe) -> bool:
    """Releases whose output is a JSON artifact, not a table (a model; a density without samples)."""
    t = recipe.release.type
    return t == "model" or (t == "density" and not int(recipe.release.options.get("sample_rows", 0) or 0))


def artifact_beside(recipe) -> bool:
    """A density with sampled rows: the table is the output, the density JSON goes beside it."""
    return recipe.release.type == "density" and not artifact_only(recipe)


def run_release(recipe, output_path, report_path, report_variant, *, progress, cancel):
    """Worker job: the one release pipeline, with the ledger (opened on this thread)."""
    from dpstudio.recipe.run import execute_release

    try:
        from dpstudio.ledger import Ledger
        ledger = Ledger()
    except ImportError:
        ledger = None
    missing_report = False
    if report_path:
        try:
            from dpstudio.report import write_report  # noqa: F401
        except ImportError:
            report_path, missing_report = None, True
    result = execute_release(recipe, output_path=output_path, ledger=ledger, report_path=report_path or None,
                             report_variant=report_variant, progress=progress, cancel=cancel)
    if missing_report:
        result.warnings.append("the report writer is not available yet in this version: no report was written")
    return result


class ExportPage(WizardPage):
    key = "export"
    released = Signal(object)

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        self.worker = None
        self.result = None
        self.last_error = None
        self.confirm_release = self._ask_confirm  # replaced in tests
        session.targetsChanged.connect(self._targets_changed)

        self.output = QLineEdit()
        self.output.editingFinished.connect(lambda: self.session.set_targets(output_path=self.output.text()))
        self.out_browse = QPushButton(self.tr("Browse…"))
        self.out_browse.clicked.connect(self.browse_output)
        self.format = QComboBox()
        for f in OUTPUT_FORMATS:
            self.format.addItem(f.upper(), f)
        self.format.currentIndexChanged.connect(self._format_chosen)
        self.formula = QCheckBox(self.tr("Protect spreadsheet formulas (cells starting with = + - @ stay text)"))
        self.formula.toggled.connect(lambda on: self.session.update(
            lambda r: replace(r, outputs=replace(r.outputs, formula_protection=on))))
        self.seed_box = QCheckBox(self.tr("Reproducible test run with a fixed seed (never for real releases)"))
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed_box.toggled.connect(self._seed_changed)
        self.seed.valueChanged.connect(self._seed_changed)

        self.report = QLineEdit()
        self.report.editingFinished.connect(lambda: self.session.set_targets(report_path=self.report.text()))
        self.rep_browse = QPushButton(self.tr("Browse…"))
        self.rep_browse.clicked.connect(self.browse_report)
        self.report_format = QComboBox()
        self.report_format.addItem("HTML", ".html")
        self.report_format.addItem("PDF", ".pdf")
        self.report_format.currentIndexChanged.connect(self._report_format_chosen)
        self.variant = QComboBox()
        self.variant.addItem(self.tr("Internal (includes estimates from the raw data)"), "internal")
        self.variant.addItem(self.tr("Public (only what may be published)"), "public")

        form = QFormLayout()
        out_row = QHBoxLayout()
        out_row.addWidget(self.output, 1)
        out_row.addWidget(self.format)
        out_row.addWidget(self.out_browse)
        self.output_label = QLabel(self.tr("Privatized data file"))
        form.addRow(self.output_label, out_row)
        form.addRow("", self.formula)
        seed_row = QHBoxLayout()
        seed_row.addWidget(self.seed_box)
        seed_row.addWidget(self.seed)
        seed_row.addStretch(1)
        form.addRow("", self._wrap(seed_row))
        rep_row = QHBoxLayout()
        rep_row.addWidget(self.report, 1)
        rep_row.addWidget(self.report_format)
        rep_row.addWidget(self.rep_browse)
        form.addRow(self.tr("Report for the compliance officer"), rep_row)
        form.addRow(self.tr("Report kind"), self.variant)
        box = QGroupBox(self.tr("Where to write"))
        box.setLayout(form)

        self.run_button = QPushButton(self.tr("Release now"))
        self.run_button.setObjectName("primary")
        self.run_button.setToolTip(self.tr("Draw the noise, write the files and record the spend (Ctrl+E)"))
        self.run_button.clicked.connect(self.start_release)
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress_text = QLabel()
        run_row = QHBoxLayout()
        run_row.addWidget(self.run_button)
        run_row.addWidget(self.cancel_button)
        run_row.addWidget(self.progress, 1)
        self.cost_label = note_label()
        self.result_label = note_label("", "result")
        self.open_report_button = QPushButton(self.tr("Open the report"))
        self.open_report_button.clicked.connect(self.open_report)
        self.open_folder_button = QPushButton(self.tr("Show the folder"))
        self.open_folder_button.clicked.connect(self.open_folder)
        res_row = QHBoxLayout()
        res_row.addWidget(self.open_report_button)
        res_row.addWidget(self.open_folder_button)
        res_row.addStretch(1)
        self.result_buttons = self._wrap(res_row)
        self.result_buttons.setVisible(False)

        lay = QVBoxLayout(self)
        lay.addWidget(box)
        lay.addWidget(self.cost_label)
        lay.addLayout(run_row)
        lay.addWidget(self.progress_text)
        lay.addWidget(self.result_label)
        lay.addWidget(self.result_buttons)
        lay.addStretch(1)

    @staticmethod
    def _wrap(layout) -> QWidget:
        w = QWidget()
        layout.setContentsMargins(0, 0, 0, 0)
        w.setLayout(layout)
        return w

    def title(self):
        return self.tr("Export the release")

    def subtitle(self):
        return self.tr("Write the privatized data and the report; the spend is recorded in the budget ledger.")

    def help_text(self):
        return self.tr("Release now draws the random noise, writes the data file and the report, and records "
                       "the privacy loss in the dataset's ledger. Files are written to a temporary name and "
                       "renamed at the end, so a cancelled or failed release leaves nothing behind and spends "
                       "nothing. The internal report includes risk estimates computed from the raw data; give "
                       "the public variant to anyone outside your organisation.")

    def isComplete(self):  # noqa: N802
        return self.result is not None

    def can_release(self) -> bool:
        plan, _ = self.session.plan()
        return (self.session.has_data and not self.session.problems() and plan is not None
                and bool(self.session.output_path) and self.worker is None)

    # ---- view --------------------------------------------------------------------------
    def _targets_changed(self):
        s = self.session
        with blocked(self.output, self.report, self.report_format):
            self.output.setText(s.output_path)
            self.report.setText(s.report_path)
            self.report_format.setCurrentIndex(1 if s.report_path.lower().endswith(".pdf") else 0)
        self._update_buttons()

    def refresh(self):
        rec = self.session.recipe
        if rec is None:
            return
        artifact = artifact_only(rec)
        self.format.setEnabled(not artifact)
        self.formula.setEnabled(not artifact)
        self.output_label.setText(self.tr("Released model (JSON file)") if rec.release.type == "model" else
                                  self.tr("Released density (JSON file)") if artifact else
                                  self.tr("Privatized data file"))
        self.format.setToolTip(self.tr("This release is a JSON file (coefficients / density grid), not a table.")
                               if artifact else self.tr("File format of the released table"))
        out = self.session.output_path
        if out:
            want = ".json" if artifact else EXT[rec.outputs.format]
            if Path(out).suffix.lower() != want:
                self.session.set_targets(output_path=str(Path(out).with_suffix(want)))
        with blocked(self.format, self.formula, self.seed_box, self.seed):
            self.format.setCurrentIndex(self.format.findData(rec.outputs.format))
            self.formula.setChecked(rec.outputs.formula_protection)
            self.seed_box.setChecked(rec.randomness.seed is not None)
            self.seed.setEnabled(rec.randomness.seed is not None)
            if rec.randomness.seed is not None:
                self.seed.setValue(rec.randomness.seed)
        plan, err = self.session.plan()
        if plan is not None:
            t = plan.total
            self.cost_label.setText(self.tr("This release will spend <b>ε = {0:.3g}</b>{1} from this dataset's "
                                            "budget.").format(t.epsilon, f", δ = {t.delta:.1e}" if t.delta else ""))
        else:
            self.cost_label.setText(self.tr("Not ready: {0}").format(err))
        self._targets_changed()

    def _update_buttons(self):
        self.run_button.setEnabled(self.can_release())
        self.cancel_button.setEnabled(self.worker is not None)

    # ---- edits -------------------------------------------------------------------------
    def _format_chosen(self, _i):
        fmt = self.format.currentData()
        self.session.update(lambda r: replace(r, outputs=replace(r.outputs, format=fmt)))
        if self.session.output_path:
            self.session.set_targets(output_path=str(Path(self.session.output_path).with_suffix(EXT[fmt])))

    def _report_format_chosen(self, _i):
        if self.session.report_path:
            self.session.set_targets(report_path=str(Path(self.session.report_path).with_suffix(
                self.report_format.currentData())))

    def _seed_changed(self, *_):
        seed = self.seed.value() if self.seed_box.isChecked() else None
        self.session.update(lambda r: replace(r, randomness=replace(r.randomness, seed=seed)))

    def browse_output(self):
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save the privatized data as"), self.session.output_path)
        if path:
            self.session.set_targets(output_path=path)

    def browse_report(self):
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save the report as"), self.session.report_path,
                                              self.tr("Reports (*.html *.pdf)"))
        if path:
            self.session.set_targets(report_path=path)

    # ---- running -----------------------------------------------------------------------
    def _ask_confirm(self, text: str) -> bool:
        return QMessageBox.question(self, self.tr("Release and spend the budget?"), text,
                                    QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                                    QMessageBox.StandardButton.Cancel) == QMessageBox.StandardButton.Yes

    def start_release(self):
        if not self.can_release():
            return None
        s = self.session
        out = Path(s.output_path)
        plan, _ = s.plan()
        text = self.tr("This draws the noise and writes {0}. It spends ε = {1:.3g} of this dataset's budget "
                       "and cannot be undone.").format(out.name, plan.total.epsilon)
        if out.exists():
            text += "\n\n" + self.tr("{0} already exists and will be replaced.").format(out.name)
        if not self.confirm_release(text):
            return None
        self.result = None
        self.last_error = None
        self.result_buttons.setVisible(False)
        self.result_label.setText("")
        self.progress.setValue(0)
        self.worker = self.runner.start(run_release, s.recipe, s.output_path, s.report_path,
                                        self.variant.currentData(),
                                        on_finished=self._finished, on_failed=self._failed,
                                        on_cancelled=self._cancelled, on_progress=self._progress)
        self._update_buttons()
        self.completeChanged.emit()
        return self.worker

    def cancel(self):
        if self.worker is not None:
            self.worker.cancel()
            self.progress_text.setText(self.tr("Cancelling…"))

    def _progress(self, fraction, message):
        self.progress.setValue(int(1000 * fraction))
        self.progress_text.setText(message)

    def _finished(self, result):
        self.worker = None
        self.result = result
        self.progress.setValue(1000)
        self.progress_text.setText(self.tr("Done."))
        rec = result.recipe
        if artifact_only(rec):
            lines = [self.tr("Released {0} (JSON): <b>{1}</b>").format(
                self.tr("model") if rec.release.type == "model" else self.tr("density"), result.output_path)]
        else:
            lines = [self.tr("Privatized data: <b>{0}</b>").format(result.output_path)]
            if artifact_beside(rec):
                p = Path(result.output_path)
                lines.append(self.tr("Density (JSON): <b>{0}</b>").format(p.with_name(p.stem + ".artifact.json")))
        if self.session.report_path and Path(self.session.report_path).exists():
            lines.append(self.tr("Report: <b>{0}</b>").format(self.session.report_path))
        after = result.ledger_after or {}
        spent = (after.get("spent") or {}).get("epsilon")
        if spent is not None:
            lines.append(self.tr("The ledger now records ε = {0:.3g} spent on this dataset in {1} release(s).").format(
                spent, after.get("releases", "?")))
        for w in result.warnings:
            lines.append("⚠ " + w)
        self.result_label.setText("<br>".join(lines))
        self.result_buttons.setVisible(True)
        self.open_report_button.setEnabled(bool(self.session.report_path) and Path(self.session.report_path).exists())
        self._update_buttons()
        self.completeChanged.emit()
        self.released.emit(result)

    def _failed(self, exc):
        self.worker = None
        self.last_error = exc
        self.progress.setValue(0)
        self.progress_text.setText(self.tr("The release failed; nothing was written or spent."))
        self._update_buttons()
        self.completeChanged.emit()
        show_error(self.window(), self.tr("The release failed"), exc)

    def _cancelled(self):
        self.worker = None
        self.progress.setValue(0)
        self.progress_text.setText(self.tr("Cancelled: nothing was written or spent."))
        self._update_buttons()
        self.completeChanged.emit()

    def open_report(self):
        if self.session.report_path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(self.session.report_path))

    def open_folder(self):
        if self.session.output_path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(self.session.output_path).parent)))
