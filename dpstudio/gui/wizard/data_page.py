"""Step 1 - Data: open a table (dialog, drag and drop, recent files), load it on a worker,
preview it and summarise its inferred schema."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.dialogs import show_error
from dpstudio.gui.session import ledger_row_sketch, load_for_session, load_recipe_and_data
from dpstudio.gui.table_model import DataFrameModel
from dpstudio.gui.texts import large_file_text, role_text
from dpstudio.gui.wizard.base import WizardPage, note_label

FILE_FILTER = "Tables (*.csv *.tsv *.txt *.parquet *.pq *.xlsx *.dta *.sas7bdat *.xpt);;All files (*)"
RECENT_KEY = "recent/files"
RECENT_MAX = 8


def recent_files() -> list[str]:
    value = QSettings().value(RECENT_KEY, [])
    if isinstance(value, str):  # a one-item list may come back as its item
        return [value]
    if not isinstance(value, (list, tuple)):  # None (nothing stored yet) or something unreadable
        return []
    return [v for v in value if isinstance(v, str)]


def remember_file(path: str) -> None:
    files = [path] + [f for f in recent_files() if f != path]
    QSettings().setValue(RECENT_KEY, files[:RECENT_MAX])


def _with_row_sketch(job):
    """The load ``job`` followed, on the same worker thread, by the ledger's row sketch of what it
    loaded (the budget panel reads it instead of hashing every row on the GUI thread)."""

    def run(path, *, progress, cancel):
        result = job(path, progress=progress, cancel=cancel)
        cancel.check()
        return (*result, ledger_row_sketch(result[0]))

    return run


class DataPage(WizardPage):
    key = "data"
    loadingChanged = Signal(bool)

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        self.worker = None
        self.last_error = None
        self._dropped: list[str] | None = None
        self.setAcceptDrops(True)

        self.open_button = QPushButton(self.tr("Open a table…"))
        self.open_button.setToolTip(self.tr("Open a CSV, Parquet, Excel, Stata or SAS file (Ctrl+O)"))
        self.open_button.clicked.connect(self.open_dialog)
        self.recipe_button = QPushButton(self.tr("Open a saved recipe…"))
        self.recipe_button.setToolTip(self.tr("Continue a release planned earlier (a .recipe.json file)"))
        self.recipe_button.clicked.connect(self.open_recipe_dialog)
        self.demo_button = QPushButton(self.tr("Try the demo data"))
        self.demo_button.setToolTip(self.tr("A synthetic census extract of 4,000 people"))
        self.demo_button.clicked.connect(self.open_demo)
        self.drop_hint = QLabel(self.tr("…or drop a file anywhere on this window."))
        self.drop_hint.setObjectName("note")
        buttons = QHBoxLayout()
        for b in (self.open_button, self.recipe_button, self.demo_button):
            buttons.addWidget(b)
        buttons.addWidget(self.drop_hint)
        buttons.addStretch(1)

        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress_text = QLabel()
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        prog = QHBoxLayout()
        prog.addWidget(self.progress, 1)
        prog.addWidget(self.progress_text)
        prog.addWidget(self.cancel_button)
        self.progress_row = QWidget()
        self.progress_row.setLayout(prog)
        self.progress_row.setVisible(False)

        self.recent_label = QLabel(self.tr("<b>Recent files</b>"))
        self.recent = QListWidget()
        self.recent.setMaximumHeight(130)
        self.recent.itemActivated.connect(lambda it: self.load(it.data(Qt.ItemDataRole.UserRole)))

        self.summary = note_label("", "summary")
        #: a file too large for memory: said once, plainly, above its columns and preview
        self.sample_notice = note_label("", "summary")
        self.sample_notice.setTextFormat(Qt.TextFormat.PlainText)
        self.sample_notice.setVisible(False)
        self.schema_table = QTableWidget(0, 5)
        self.schema_table.setHorizontalHeaderLabels(
            [self.tr("Column"), self.tr("Type"), self.tr("Missing"), self.tr("Distinct"), self.tr("Suggested role")]
        )
        self.schema_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.schema_table.verticalHeader().setVisible(False)
        self.schema_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.schema_table.horizontalHeader().setStretchLastSection(True)

        self.model = DataFrameModel()
        self.preview = QTableView()
        self.preview.setModel(self.model)
        self.preview.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.preview.verticalHeader().setDefaultSectionSize(22)
        self.preview.horizontalHeader().setDefaultSectionSize(120)
        self.preview.horizontalHeader().setResizeContentsPrecision(50)  # fit to the first rows only
        self.preview.setAlternatingRowColors(True)

        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(QLabel(self.tr("<b>Columns found</b>")))
        ll.addWidget(self.schema_table)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        self.preview_label = QLabel(self.tr("<b>Preview</b> (the private data: stays on this computer)"))
        rl.addWidget(self.preview_label)
        rl.addWidget(self.preview)
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([430, 570])
        self.split = split

        lay = QVBoxLayout(self)
        lay.addLayout(buttons)
        lay.addWidget(self.progress_row)
        lay.addWidget(self.summary)
        lay.addWidget(self.sample_notice)
        lay.addWidget(self.recent_label)
        lay.addWidget(self.recent)
        lay.addWidget(split, 1)
        self.update_recent()

    # ---- page API ----------------------------------------------------------------------
    def title(self):
        return self.tr("Load your data")

    def subtitle(self):
        return self.tr(
            "Open the table you want to release. It is read on this computer only; nothing leaves it until you export."
        )

    def help_text(self):
        return self.tr(
            "Open a CSV/TSV, Parquet, Excel, Stata or SAS file with Ctrl+O, by dragging it onto "
            "the window, or from the recent files. dpstudio guesses each column's type and role "
            "(you can change them in the next step). The table's fingerprint (SHA-256) identifies "
            "it in the privacy budget ledger, so renaming the file does not reset its budget. "
            "A CSV or Parquet file too large for this computer's memory is opened from a uniform "
            "sample of its rows (for the previews and the suggested types); the release then "
            "reads every row, a part at a time."
        )

    def isComplete(self):  # noqa: N802 - Qt override
        return self.session.has_data and self.worker is None

    # ---- loading -----------------------------------------------------------------------
    @property
    def loading(self) -> bool:
        return self.worker is not None

    def open_dialog(self):
        start = str(Path(recent_files()[0]).parent) if recent_files() else ""
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open a table"), start, self.tr(FILE_FILTER))
        if path:
            self.load(path)

    def open_recipe_dialog(self):
        path, _ = QFileDialog.getOpenFileName(
            self, self.tr("Open a recipe"), "", self.tr("Recipes (*.recipe.json *.json)")
        )
        if path:
            self.load(path)

    def open_demo(self):
        from dpstudio.resources import resource_path

        self.load(str(resource_path("demo", "census_demo.csv")))

    def load(self, path: str):
        if not path or self.worker is not None:
            return None
        is_recipe = str(path).lower().endswith(".json")
        job = _with_row_sketch(load_recipe_and_data if is_recipe else load_for_session)
        self.progress.setValue(0)
        self.progress_text.setText(self.tr("Reading {0}…").format(Path(path).name))
        self.progress_row.setVisible(True)
        self.last_error = None
        self.worker = self.runner.start(
            job,
            path,
            on_finished=lambda res, p=path: self._loaded(p, res),
            on_failed=lambda exc, p=path: self._failed(p, exc),
            on_cancelled=self._cancelled,
            on_progress=self._progress,
        )
        self.loadingChanged.emit(True)
        self.completeChanged.emit()
        return self.worker

    def cancel(self):
        if self.worker is not None:
            self.worker.cancel()

    def _progress(self, fraction, message):
        self.progress.setValue(int(fraction * 1000))
        if message:
            self.progress_text.setText(message)

    def _done(self):
        self.worker = None
        self.progress_row.setVisible(False)
        self.loadingChanged.emit(False)
        self.completeChanged.emit()

    def _loaded(self, path, result):
        loaded, schema, recipe, source, row_sketch = result
        self._done()
        remember_file(str(Path(path).resolve()))
        self.update_recent()
        self.session.set_data(loaded, schema, recipe, source, row_sketch)

    def _failed(self, path, exc):
        self._done()
        self.last_error = exc
        show_error(self.window(), self.tr("Could not open the file"), exc)

    def _cancelled(self):
        self._done()
        self.progress_text.setText(self.tr("Loading cancelled."))

    # ---- views -------------------------------------------------------------------------
    def update_recent(self):
        self.recent.clear()
        for f in recent_files():
            it = QListWidgetItem(f"{Path(f).name}   —   {Path(f).parent}")
            it.setData(Qt.ItemDataRole.UserRole, f)
            it.setToolTip(f)
            self.recent.addItem(it)
        has = self.recent.count() > 0
        self.recent.setVisible(has)
        self.recent_label.setVisible(has)

    def on_data_changed(self):
        s = self.session
        self.model.set_frame(s.frame)
        self._dropped = None  # refresh() marks the dropped columns of the new table, then fits again
        self._fit_preview()
        schema = s.schema
        if s.loaded is None or schema is None:  # both are set together by Session.set_data
            return
        self.schema_table.setRowCount(len(schema.columns))
        for i, c in enumerate(schema.columns):
            cells = [c.name, c.type, f"{c.missing:,}", f"{c.distinct:,}", role_text(c.suggested_role)[0]]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j == 4:
                    item.setToolTip(c.reason)
                elif j == 0:
                    item.setToolTip(c.name)
                if j in (2, 3):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.schema_table.setItem(i, j, item)
        missing = sum(c.missing for c in schema.columns)
        types: dict[str, int] = {}
        for c in schema.columns:
            types[c.type] = types.get(c.type, 0) + 1
        type_text = ", ".join(f"{n} {t}" for t, n in sorted(types.items(), key=lambda kv: -kv[1]))
        sample = s.frame if s.sample_of is not None else None
        if sample is None:
            text = self.tr("<b>{0}</b>: {1} rows × {2} columns ({3}); {4} missing cells. Fingerprint {5}…").format(
                Path(s.loaded.path).name,
                f"{schema.rows:,}",
                len(schema.columns),
                type_text,
                f"{missing:,}",
                s.loaded.sha256[:12],
            )
        else:
            text = self.tr(
                "<b>{0}</b>: {1} rows × {2} columns ({3}); {4} missing cells in the sample. Fingerprint {5}…"
            ).format(
                Path(s.loaded.path).name,
                f"{schema.rows:,}",
                len(schema.columns),
                type_text,
                f"{missing:,}",
                s.loaded.sha256[:12],
            )
        self._show_sample(None if sample is None else len(sample))
        if s.recipe_source:
            text += "<br>" + self.tr("Settings loaded from the saved recipe <i>{0}</i>.").format(
                Path(s.recipe_source).name
            )
        self.summary.setText(text)
        self.recent_label.setVisible(False)
        self.recent.setVisible(False)

    def _show_sample(self, sample_rows: int | None) -> None:
        """Say (notice, headers, preview title) whether the figures come from a sample."""
        s = self.session
        self.sample_notice.setVisible(sample_rows is not None)
        if sample_rows is None or s.sample_of is None:
            self.sample_notice.setText("")
            self.preview_label.setText(self.tr("<b>Preview</b> (the private data: stays on this computer)"))
            self.schema_table.setHorizontalHeaderLabels(
                [self.tr("Column"), self.tr("Type"), self.tr("Missing"), self.tr("Distinct"), self.tr("Suggested role")]
            )
            return
        self.sample_notice.setText(large_file_text(s.sample_of, sample_rows))
        self.preview_label.setText(
            self.tr("<b>Preview</b>: a uniform sample of {0} rows (the private data: stays on this computer)").format(
                f"{sample_rows:,}"
            )
        )
        self.schema_table.setHorizontalHeaderLabels(
            [
                self.tr("Column"),
                self.tr("Type"),
                self.tr("Missing\n(sample)"),
                self.tr("Distinct\n(sample)"),
                self.tr("Suggested role"),
            ]
        )

    def refresh(self):
        if self.session.recipe is not None:
            dropped = [c.name for c in self.session.recipe.columns if c.role in ("identifier", "ignore")]
            if dropped != self._dropped:
                self._dropped = dropped
                self.model.set_dropped(dropped)
                self._fit_preview()

    def _fit_preview(self):
        """Headers (e.g. "person_id (dropped)") and the first rows fit, within reason."""
        self.preview.resizeColumnsToContents()
        for j in range(self.model.columnCount()):
            self.preview.setColumnWidth(j, min(max(self.preview.columnWidth(j), 60), 260))

    #: below this width the column list and the preview are stacked (a narrow window would cut
    #: the list's roles off side by side)
    STACK_BELOW = 980

    def resizeEvent(self, event):  # noqa: N802 - Qt override
        want = Qt.Orientation.Vertical if event.size().width() < self.STACK_BELOW else Qt.Orientation.Horizontal
        if self.split.orientation() != want:
            self.split.setOrientation(want)
            self.split.setSizes([1, 1] if want == Qt.Orientation.Vertical else [430, 570])
        super().resizeEvent(event)

    # ---- drag and drop -----------------------------------------------------------------
    def dragEnterEvent(self, event):  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event):  # noqa: N802 - Qt override
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.load(urls[0].toLocalFile())
            event.acceptProposedAction()
