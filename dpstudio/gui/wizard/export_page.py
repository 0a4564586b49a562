"""Step 6 - Export: output and report paths, runs execute_release on a worker with progress
and cancel, shows where the files went and offers to open the report."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.charts.preview import fmt_delta, fmt_loss
from dpstudio.gui.dialogs import show_error
from dpstudio.gui.texts import cluster_help_text
from dpstudio.gui.wizard.base import WizardPage, blocked, note_label
from dpstudio.recipe.model import OUTPUT_FORMATS, Recipe
from dpstudio.targets import artifact_beside, artifact_only

EXT = {"csv": ".csv", "parquet": ".parquet", "xlsx": ".xlsx", "json": ".json"}
#: the engine's report variants (dpstudio.report.VARIANTS), named for a compliance officer
REPORT_VARIANTS = (
    ("internal", QT_TRANSLATE_NOOP("ExportPage", "Internal (for the data steward; includes raw-data risk estimates)")),
    (
        "external",
        QT_TRANSLATE_NOOP("ExportPage", "External (safe to publish: privatized outputs and public information only)"),
    ),
)
#: the scheduler address shown in the cluster command until the user types theirs
SCHEDULER_PLACEHOLDER = "tcp://SCHEDULER:8786"
#: the preference remembering the scheduler address (dpstudio.prefs)
SCHEDULER_PREF = "cluster_scheduler"


def cluster_command(
    recipe_path: str,
    output_path: str,
    report_path: str | None = None,
    *,
    scheduler: str = "",
    report_variant: str = "internal",
    new_dataset: bool = False,
    operator: str | None = None,
    multiline: bool = False,
) -> str:
    """The exact command that runs the saved recipe on the Dask cluster at ``scheduler``, every
    argument quoted for a POSIX shell.  ``multiline``: the same command over several lines (a
    backslash before each line break), for display."""
    q = shlex.quote
    groups = [
        f"dpstudio release {q(recipe_path)}",
        f"--engine dask --scheduler {q(scheduler.strip() or SCHEDULER_PLACEHOLDER)}",
        f"--output {q(output_path)}",
    ]
    if report_path:
        groups.append(f"--report {q(report_path)}")
        if report_variant != "internal":
            groups[-1] += f" --report-variant {q(report_variant)}"
    if new_dataset:
        groups.append("--new-dataset")
    if operator:
        groups.append(f"--operator {q(operator)}")
    return (" \\\n    " if multiline else " ").join(groups)


def run_release(
    recipe,
    output_path,
    report_path,
    report_variant,
    *,
    progress,
    cancel,
    new_dataset=False,
    recipe_path=None,
    state=None,
    operator=None,
    make_folders=(),
    engine="memory",
):
    """Worker job: the one release pipeline, with the ledger (opened on this thread).

    ``state`` (a dict) learns ``committed`` at the point of no return and then ``result``: the
    worker reports a cancel pressed after the commit as "cancelled", and the page must still tell
    the truth (written and recorded).  ``make_folders``: the user's default output folders,
    made now (when the release writes, not when the data is loaded) and removed again if the
    release stops before it wrote anything into them.  ``operator``: the person releasing, for
    the report (None: not recorded).  ``engine``: ``"memory"`` loads the table, ``"stream"`` reads
    it in blocks (a file too large for memory; ``Session.engine``)."""
    from dpstudio.gui.session import open_ledger
    from dpstudio.pipeline import execute_release

    made = []
    for folder in dict.fromkeys(Path(f) for f in make_folders):
        missing = [p for p in (folder, *folder.parents) if not p.exists()]
        folder.mkdir(parents=True, exist_ok=True)
        made.extend(missing)  # deepest first
    ledger = open_ledger()
    state = {} if state is None else state
    try:
        result = execute_release(
            recipe,
            output_path=output_path,
            ledger=ledger,
            report_path=report_path or None,
            report_variant=report_variant,
            progress=progress,
            cancel=cancel,
            new_dataset=new_dataset,
            recipe_path=recipe_path,
            on_commit=lambda: state.__setitem__("committed", True),
            operator=operator,
            engine=engine,
        )
    except BaseException:
        for folder in made:  # only empty folders this release made
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    state["result"] = result
    return result


class ExportPage(WizardPage):
    key = "export"
    released = Signal(object)

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        self.worker = None
        self.result = None
        self.last_error = None
        self._run_state: dict = {}
        #: the session's state (and report kind) the last release ran with: "Release now" stays
        #: off until something changes
        self.released_key: tuple | None = None
        self._cost_text = ""
        self._result_html = ""  # the last release's summary (kept while the settings change)
        self._done_text = ""
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
        self.formula = QCheckBox(self.tr("Protect spreadsheet formulas"))
        self.formula.setToolTip(
            self.tr("Cells starting with = + - @ are written as text, so a spreadsheet never runs them.")
        )
        self.formula.toggled.connect(
            lambda on: self.session.update(lambda r: replace(r, outputs=replace(r.outputs, formula_protection=on)))
        )
        self.seed_box = QCheckBox(self.tr("Test run with a fixed seed (never for real releases)"))
        self.seed_box.setToolTip(
            self.tr("The noise becomes reproducible by anyone who knows the seed: for tests only.")
        )
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
        self.variant.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.variant.setMinimumContentsLength(24)
        for key, label in REPORT_VARIANTS:
            # PySide6's stub types QT_TRANSLATE_NOOP as returning object; it returns its message (a str)
            self.variant.addItem(self.tr(label), key)  # type: ignore[arg-type]
        self.variant.currentIndexChanged.connect(lambda _i: self._state_changed())

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
        # the ledger charges an edited or re-saved copy of a known dataset to that dataset's cap;
        # only this explicit (recorded) declaration gives a file whose rows match one its own budget
        self.new_dataset = QCheckBox(self.tr("This is a new dataset (not a copy of one already released)"))
        self.new_dataset.setToolTip(
            self.tr(
                "Not an edited or re-saved copy of a dataset already released. The ledger "
                "recognises a file that shares most of its rows with a dataset it knows and "
                "charges that dataset's budget. Tick this only if the data really are about "
                "other people; the declaration is recorded in the ledger and the report."
            )
        )
        form.addRow("", self.new_dataset)
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
        self.progress_text.setWordWrap(True)  # the "settings changed" text names the next file
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

        self.cluster_box = self._build_cluster_box()

        lay = QVBoxLayout(self)
        lay.addWidget(box)
        lay.addWidget(self.cost_label)
        lay.addLayout(run_row)
        lay.addWidget(self.progress_text)
        lay.addWidget(self.result_label)
        lay.addWidget(self.result_buttons)
        lay.addWidget(self.cluster_box)
        lay.addStretch(1)

    # ---- run on a cluster ----------------------------------------------------------------
    def _build_cluster_box(self) -> QGroupBox:
        from dpstudio import prefs

        #: the recipe file written for the cluster, and the recipe it holds (None: not yet)
        self.cluster_recipe_path: str | None = None
        self._cluster_recipe: Recipe | None = None
        self.choose_recipe_path = self._ask_recipe_path  # replaced in tests
        box = QGroupBox(self.tr("Run on a cluster"))
        box.setCheckable(False)
        lay = QVBoxLayout(box)
        lay.addWidget(note_label(cluster_help_text()))
        self.scheduler = QLineEdit()
        self.scheduler.setPlaceholderText(SCHEDULER_PLACEHOLDER)
        self.scheduler.setToolTip(self.tr("The address of the cluster's Dask scheduler, e.g. tcp://10.0.0.5:8786"))
        remembered = prefs.load().get(SCHEDULER_PREF)
        self.scheduler.setText(remembered if isinstance(remembered, str) else "")
        self.scheduler.editingFinished.connect(self._scheduler_edited)
        self.scheduler.textChanged.connect(lambda _t: self._update_cluster())
        self.new_dataset.toggled.connect(lambda _on: self._update_cluster())
        self.save_recipe_button = QPushButton(self.tr("Save the recipe for the cluster…"))
        self.save_recipe_button.setToolTip(
            self.tr("Write this release's recipe to a file and show the command that runs it on the cluster")
        )
        self.save_recipe_button.clicked.connect(self.save_cluster_recipe)
        row = QHBoxLayout()
        row.addWidget(QLabel(self.tr("Scheduler address")))
        row.addWidget(self.scheduler, 1)
        row.addWidget(self.save_recipe_button)
        lay.addLayout(row)
        self.cluster_command = QTextEdit()
        self.cluster_command.setReadOnly(True)
        self.cluster_command.setAcceptRichText(False)
        # one option a line, never broken inside a path or after "--"
        self.cluster_command.setLineWrapMode(QTextEdit.LineWrapMode.NoWrap)
        self.cluster_command.setStyleSheet("font-family: monospace;")
        self.copy_button = QPushButton(self.tr("Copy"))
        self.copy_button.setToolTip(self.tr("Copy the command to the clipboard"))
        self.copy_button.clicked.connect(self.copy_cluster_command)
        cmd_row = QHBoxLayout()
        cmd_row.addWidget(self.cluster_command, 1)
        cmd_row.addWidget(self.copy_button)
        self.cluster_command_row = self._wrap(cmd_row)
        lay.addWidget(self.cluster_command_row)
        self.cluster_note = note_label()
        lay.addWidget(self.cluster_note)
        self._update_cluster()
        return box

    def _scheduler_edited(self) -> None:
        from dpstudio import prefs

        address = self.scheduler.text().strip()
        if prefs.load().get(SCHEDULER_PREF) != address:
            try:
                prefs.save(**{SCHEDULER_PREF: address})
            except OSError:
                pass  # a preference is never worth an error: the address stays in the field

    def _ask_recipe_path(self, start: str) -> str:
        path, _ = QFileDialog.getSaveFileName(
            self, self.tr("Save the recipe for the cluster"), start, self.tr("Recipes (*.recipe.json *.json)")
        )
        return path

    def save_cluster_recipe(self) -> str | None:
        """Ask where to write the recipe, write it, and show the command that runs it on the
        cluster.  Returns the path written (None: not written)."""
        s = self.session
        if s.recipe is None or s.loaded is None or self.cluster_problem() is not None:
            return None
        folder = Path(s.output_path).parent if s.output_path else Path(s.loaded.path).parent
        start = str(folder / f"{Path(s.loaded.path).stem}.recipe.json")
        path = self.choose_recipe_path(start)
        if not path:
            return None
        from dpstudio.errors import UserError
        from dpstudio.export import write_text
        from dpstudio.ledger import default_ledger_path
        from dpstudio.targets import refuse_overwrite

        try:
            # never over the data it describes or the ledger; atomic, like every output
            # an existing file: the save dialog has asked before replacing it
            refuse_overwrite(
                "recipe", path, input_path=s.loaded.path, ledger_path=default_ledger_path(), replace_existing=True
            )
            from dpstudio.pipeline import refuse_paid_file

            refuse_paid_file(default_ledger_path(), "recipe", path)  # never a paid release's file
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            write_text(s.recipe.dumps(), path)
        except (OSError, UserError) as exc:
            self._recipe_error = show_error(self.window(), self.tr("Could not save the recipe"), exc)
            return None
        s.recipe_source = path  # a release may then not write over it
        self.cluster_recipe_path = str(Path(path).resolve())
        self._cluster_recipe = s.recipe
        self._update_cluster()
        return self.cluster_recipe_path

    def cluster_problem(self) -> str | None:
        """Why the current release cannot run on a cluster (None: it can, or there is no plan).
        A cluster reads the data in parts, as a streamed release does, whatever the file's size."""
        plan, _ = self.session.plan()
        if plan is None:
            return None
        from dpstudio.plan.stream import stream_problem

        return stream_problem(plan)

    def cluster_command_text(self, multiline: bool = False) -> str:
        """The command (one line; ``multiline``: as shown, one option a line); empty until the
        recipe is saved."""
        s = self.session
        if self.cluster_recipe_path is None:
            return ""
        from dpstudio import prefs

        return cluster_command(
            self.cluster_recipe_path,
            s.output_path,
            s.report_path or None,
            scheduler=self.scheduler.text(),
            report_variant=self.variant.currentData() or "internal",
            new_dataset=self.new_dataset.isChecked(),
            operator=prefs.operator(),
            multiline=multiline,
        )

    def copy_cluster_command(self) -> None:
        from PySide6.QtWidgets import QApplication

        text = self.cluster_command_text()
        if text:
            QApplication.clipboard().setText(text)
            self.cluster_note.setText(self.tr("Command copied."))

    def _update_cluster(self) -> None:
        if not hasattr(self, "cluster_note"):
            return  # still being built
        s = self.session
        why = self.cluster_problem()
        self.save_recipe_button.setEnabled(s.recipe is not None and s.loaded is not None and why is None)
        self.save_recipe_button.setToolTip(
            self.tr("Not possible for this release: {0}").format(why)
            if why
            else self.tr("Write this release's recipe to a file and show the command that runs it on the cluster")
        )
        text = self.cluster_command_text()
        self.cluster_command_row.setVisible(bool(text))
        shown = self.cluster_command_text(multiline=True)
        if self.cluster_command.toPlainText() != shown:
            self.cluster_command.setPlainText(shown)
            lines = shown.count("\n") + 1
            # every line, and room for the horizontal scroll bar of a long path
            self.cluster_command.setFixedHeight(self.cluster_command.fontMetrics().lineSpacing() * (lines + 1) + 16)
        if why:
            self.cluster_command_row.setVisible(False)
            self.cluster_note.setText(
                self.tr("This release cannot run on a cluster, which reads the data a part at a time: {0}.").format(why)
            )
            return
        if not text:
            self.cluster_note.setText(
                self.tr("Save the recipe to see the command that runs this release on the cluster.")
            )
            return
        notes = [self.tr("Run it where the cluster can read {0}.").format(Path(s.loaded.path).name if s.loaded else "")]
        if self._cluster_recipe is not None and s.recipe != self._cluster_recipe:
            notes.insert(0, self.tr("The settings changed since the recipe was saved: save it again."))
        if not self.scheduler.text().strip():
            notes.append(self.tr("Type the scheduler's address above (it replaces SCHEDULER in the command)."))
        self.cluster_note.setText(" ".join(notes))

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
        return self.tr(
            "Release now draws the random noise, writes the data file and the report, and records "
            "the privacy loss in the dataset's ledger. Files are written to a temporary name and "
            "renamed at the end, so a release cancelled or failed before that point leaves nothing "
            "behind and spends nothing; once the data is in place and the spend recorded, the "
            "release is final (a failing report is then a warning). The internal report includes "
            "risk estimates computed from the raw data; give the external variant to anyone outside "
            "your organisation."
        )

    def isComplete(self):  # noqa: N802 - Qt override
        """Done: released, and nothing changed since (recipe, data, paths, report kind)."""
        return self.result is not None and not self.changed_since_release()

    def state_key(self) -> tuple:
        return (self.session.generation, self.variant.currentData())

    def changed_since_release(self) -> bool:
        return self.released_key is not None and self.released_key != self.state_key()

    def can_release(self) -> bool:
        plan, _ = self.session.plan()
        return (
            self.session.has_data
            and not self.session.problems()
            and self.session.stream_problem() is None
            and plan is not None
            and bool(self.session.output_path)
            and self.worker is None
            and self.released_key != self.state_key()  # the same release again: change something first
        )

    def on_data_changed(self):
        """A new table: nothing of the previous dataset's release stays on the page."""
        self.result = None
        self.last_error = None
        self.released_key = None
        self._run_state = {}
        self.result_label.setText("")
        self._result_html = ""
        self.result_buttons.setVisible(False)
        self.progress.setValue(0)
        self.progress_text.setText("")
        self.new_dataset.setChecked(False)
        self.cluster_recipe_path = None
        self._cluster_recipe = None
        self._update_cluster()
        self._update_buttons()
        self.completeChanged.emit()

    def _move_off_released_files(self) -> bool:
        """A new release never writes over the previous one's files: an output path that still
        names the previous release's output (recorded in the ledger: the release would refuse
        it) or its report gets the next free name.  True when a path changed."""
        import os

        from dpstudio.gui.session import next_free_name, report_beside
        from dpstudio.targets import artifact_path

        s, r = self.session, self.result
        if r is None:
            return False

        def kept(path, released) -> bool:
            return (
                bool(path and released)
                and os.path.realpath(path) == os.path.realpath(released)
                and os.path.lexists(path)
            )

        def companions(candidate: str) -> list[str]:
            # the report that follows the output's name, the density side file beside it
            extra = [report_beside(candidate, s.report_path)] if s.report_path and not s.report_explicit else []
            if s.recipe is not None and artifact_beside(s.recipe):
                extra.append(str(artifact_path(candidate)))
            return extra

        out = next_free_name(s.output_path, companions) if kept(s.output_path, r.output_path) else None
        report = None
        if s.report_explicit and kept(s.report_path, r.report_path):
            report = next_free_name(s.report_path)
        if out is None and report is None:
            return False
        s.set_targets(output_path=out, report_path=report)
        return True

    def _state_changed(self):
        """After a release: "done" while nothing changed; once something changed, the result
        shown is the previous release's (said so), and Release now makes a new one, to new
        file names."""
        if self.worker is None and self.released_key is not None:
            if self.changed_since_release():
                if self._move_off_released_files():
                    return  # set_targets has updated the page (this method, through targetsChanged)
                self.cost_label.setText(self._cost_text)
                self.progress.setValue(0)
                text = self.tr(
                    "The settings changed since the release below: “Release now” makes a new "
                    "release and spends the budget again."
                )
                if self.result is not None and self.session.output_path:
                    text += " " + self.tr("It writes {0}; the previous release's files stay as they are.").format(
                        Path(self.session.output_path.rstrip("/")).name
                    )
                self.progress_text.setText(text)
                heading = self.tr("Previous release (made with earlier settings):")
            else:
                self.cost_label.setText(
                    self.tr("Released. Change the settings or the file names to make another release.")
                )
                self.progress.setValue(1000)
                self.progress_text.setText(self._done_text)
                heading = ""
            if self._result_html:
                self.result_label.setText((f"<b>{heading}</b><br>" if heading else "") + self._result_html)
        else:
            self.cost_label.setText(self._cost_text)
        self._update_buttons()
        self._update_cluster()
        self.completeChanged.emit()

    # ---- view --------------------------------------------------------------------------
    def _targets_changed(self):
        s = self.session
        with blocked(self.output, self.report, self.report_format):
            self.output.setText(s.output_path)
            self.report.setText(s.report_path)
            self.output.setToolTip(s.output_path)
            self.report.setToolTip(s.report_path)
            self.report_format.setCurrentIndex(1 if s.report_path.lower().endswith(".pdf") else 0)
        self._state_changed()

    def refresh(self):
        rec = self.session.recipe
        if rec is None:
            return
        artifact = artifact_only(rec)
        self.format.setEnabled(not artifact)
        self.formula.setEnabled(not artifact)
        self.output_label.setText(
            self.tr("Released model (JSON file)")
            if rec.release.type == "model"
            else self.tr("Released density (JSON file)")
            if artifact
            else self.tr("Privatized data file")
        )
        self.format.setToolTip(
            self.tr("This release is a JSON file (coefficients / density grid), not a table.")
            if artifact
            else self.tr("File format of the released table")
        )
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
        why = self.session.stream_problem()
        if plan is not None and why:
            self._cost_text = self.tr(
                "<b>This release cannot run on this file</b>: the file is too large for this "
                "computer's memory and is released a part at a time, but {0}. Change it on the "
                "“Choose the release” step."
            ).format(why)
        elif plan is not None:
            t = plan.total
            self._cost_text = self.tr(
                "This release will spend <b>ε = {0:.3g}</b>{1} from this dataset's budget."
            ).format(t.epsilon, f", δ = {fmt_delta(t.delta)}" if t.delta else "")
            if self.session.sample_of is not None:
                self._cost_text += " " + self.tr(
                    "The file is too large for this computer's memory: the release reads all its "
                    "{0} rows a part at a time."
                ).format(f"{self.session.sample_of:,}")
        else:
            self._cost_text = self.tr("Not ready: {0}").format(err)
        self.run_button.setToolTip(
            self.tr("Not possible for this file: {0}").format(why)
            if plan is not None and why
            else self.tr("Draw the noise, write the files and record the spend (Ctrl+E)")
        )
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
            # a format, not a chosen path: the report still follows the data file
            self.session.set_targets(
                report_path=str(Path(self.session.report_path).with_suffix(self.report_format.currentData())),
                report_chosen=False,
            )

    def _seed_changed(self, *_):
        seed = self.seed.value() if self.seed_box.isChecked() else None
        self.session.update(lambda r: replace(r, randomness=replace(r.randomness, seed=seed)))

    def browse_output(self):
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save the privatized data as"), self.session.output_path)
        if path:
            self.session.set_targets(output_path=path)

    def browse_report(self):
        path, _ = QFileDialog.getSaveFileName(
            self, self.tr("Save the report as"), self.session.report_path, self.tr("Reports (*.html *.pdf)")
        )
        if path:
            self.session.set_targets(report_path=path)

    # ---- running -----------------------------------------------------------------------
    def _ask_confirm(self, text: str) -> bool:
        """Confirm the release; the first time ever, the same dialog asks for the operator's name
        (remembered; Settings ▸ Preferences changes it)."""
        from PySide6.QtWidgets import QDialog

        from dpstudio import prefs
        from dpstudio.gui.dialogs import release_confirm_dialog

        first = "operator" not in prefs.load()
        dlg = release_confirm_dialog(self, self.tr("Release and spend the budget?"), text, ask_operator=first)
        self._confirm_dialog = dlg
        if dlg.exec() != QDialog.DialogCode.Accepted:
            return False
        if first:
            prefs.set_operator(dlg.operator_name())
        return True

    def default_folders(self) -> list[str]:
        """The user's default output folder when a target is in it (made by the release)."""
        from dpstudio import prefs

        s = self.session
        if s.loaded is None:
            return []
        folder = prefs.output_dir(Path(s.loaded.path).name)
        targets = [p for p in (s.output_path, s.report_path) if p]
        return [str(folder)] if any(Path(p).parent == folder for p in targets) else []

    def start_release(self):
        if not self.can_release():
            return None
        s = self.session
        out = Path(s.output_path)
        plan, _ = s.plan()
        if plan is None:  # can_release() checked there is one
            return None
        text = self.tr(
            "This draws the noise and writes {0}. It spends {1} of this dataset's budget and cannot be undone."
        ).format(out.name, fmt_loss({"epsilon": plan.total.epsilon, "delta": plan.total.delta}))
        from dpstudio.targets import artifact_path

        written = [out, Path(s.report_path) if s.report_path else None]
        if s.recipe is not None and artifact_beside(s.recipe):
            written.append(artifact_path(out))
        for existing in [p for p in written if p is not None and p.exists()]:
            text += "\n\n" + self.tr("{0} already exists and will be replaced.").format(existing.name)
        if self.new_dataset.isChecked():
            text += "\n\n" + self.tr(
                "You declare this a new dataset: if the ledger recognises its rows as a "
                "dataset already released, this release gets a budget of its own. The "
                "declaration is recorded in the ledger and the report."
            )
        if not self.confirm_release(text):
            return None
        from dpstudio import prefs

        operator = prefs.operator()  # asked once, in the first release's confirmation
        self.result = None
        self.last_error = None
        self.result_buttons.setVisible(False)
        self.result_label.setText("")
        self.progress.setValue(0)
        self._run_state = {}
        self._starting_key = self.state_key()
        self.worker = self.runner.start(
            run_release,
            s.recipe,
            s.output_path,
            s.report_path,
            self.variant.currentData(),
            recipe_path=s.recipe_source,
            state=self._run_state,
            operator=operator,
            make_folders=self.default_folders(),
            engine=s.engine,
            **({"new_dataset": True} if self.new_dataset.isChecked() else {}),
            on_finished=self._finished,
            on_failed=self._failed,
            on_cancelled=self._cancelled,
            on_progress=self._progress,
        )
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
        self.released_key = getattr(self, "_starting_key", self.state_key())
        self.progress.setValue(1000)
        # the result's own record of what happened, not the paths asked for
        self.progress_text.setText(
            self.tr("Done: {0}.").format(result.done_text()) if result.report_error else self.tr("Done.")
        )
        rec = result.recipe
        if artifact_only(rec):
            lines = [
                self.tr("Released {0} (JSON): <b>{1}</b>").format(
                    self.tr("model") if rec.release.type == "model" else self.tr("density"), result.output_path
                )
            ]
        else:
            lines = [self.tr("Privatized data: <b>{0}</b>").format(result.output_path)]
            if artifact_beside(rec):
                lines.append(
                    self.tr("Density (JSON): <b>{0}</b>").format(result.artifact_path)
                    if result.artifact_path is not None
                    else self.tr("Density (JSON): not written (see the warning below)")
                )
        if result.report_path is not None:
            lines.append(self.tr("Report: <b>{0}</b>").format(result.report_path))
        elif result.report_error is not None:
            lines.append(self.tr("<b>The report failed</b>: {0}").format(result.report_error))
        total = result.recorded_total
        if result.ledger_recorded and total is not None:
            this = fmt_loss({"epsilon": total.epsilon, "delta": total.delta})
            lines.append(
                self.tr("This release spent {0} (release {1} in the ledger).").format(this, result.ledger_entry)
                if result.ledger_entry is not None
                else self.tr("This release spent {0}.").format(this)
            )
        after = result.ledger_after or {}
        if after.get("spent"):
            lines.append(
                self.tr("The ledger now records {0} spent on this dataset in {1} release(s).").format(
                    fmt_loss(after["spent"]), after.get("releases", "?")
                )
            )
        for w in result.warnings:
            lines.append("⚠ " + w)
        self._result_html = "<br>".join(lines)
        self._done_text = self.progress_text.text()
        self.result_label.setText(self._result_html)
        self.result_buttons.setVisible(True)
        self.open_report_button.setEnabled(result.report_path is not None)
        self._state_changed()
        self.released.emit(result)

    def _failed(self, exc):
        if self._run_state.get("committed"):
            self._final_anyway(exc)
            return
        self.worker = None
        self.last_error = exc
        self.progress.setValue(0)
        self.progress_text.setText(self.tr("The release failed; nothing was written or spent."))
        self._update_buttons()
        self.completeChanged.emit()
        show_error(self.window(), self.tr("The release failed"), exc)

    def _cancelled(self):
        if self._run_state.get("committed"):
            self._final_anyway(None)
            return
        self.worker = None
        self.progress.setValue(0)
        self.progress_text.setText(self.tr("Cancelled: nothing was written or spent."))
        self._update_buttons()
        self.completeChanged.emit()

    def _final_anyway(self, exc):
        """Cancel or a failure came after the point of no return: the release happened - say so."""
        result = self._run_state.get("result")
        if result is not None:
            if exc is None:
                result.warnings.append(
                    self.tr(
                        "Cancel was pressed after the release was final: the data "
                        "was already written and the spend recorded."
                    )
                )
            self._finished(result)
            return
        # the engine turns every failure after the commit into a warning; this is the last resort
        self.worker = None
        self.last_error = exc
        self.released_key = getattr(self, "_starting_key", self.state_key())  # it was spent
        self.progress.setValue(1000)
        text = self.tr(
            "The release is final: the data was written to {0} and the spend recorded in the "
            "ledger; then it failed: {1}"
        ).format(self.session.output_path, exc or self.tr("cancelled"))
        self.progress_text.setText(text)
        self.result_label.setText(text)
        self._update_buttons()
        self.completeChanged.emit()

    def open_report(self):
        if self.session.report_path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(self.session.report_path))

    def open_folder(self):
        if self.session.output_path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(self.session.output_path).parent)))
