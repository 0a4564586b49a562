"""The main window: a step list beside a stack of wizard pages, Back/Next, menus, shortcuts."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.dialogs import show_error
from dpstudio.gui.session import Session
from dpstudio.gui.wizard.base import WizardPage
from dpstudio.gui.wizard.budget_page import BudgetPage
from dpstudio.gui.wizard.columns_page import ColumnsPage
from dpstudio.gui.wizard.data_page import DataPage, recent_files
from dpstudio.gui.wizard.export_page import ExportPage
from dpstudio.gui.wizard.release_page import ReleasePage
from dpstudio.gui.wizard.review_page import ReviewPage
from dpstudio.gui.workers import TaskRunner


class MainWindow(QMainWindow):
    def __init__(self, session: Session | None = None, runner: TaskRunner | None = None):
        super().__init__()
        self.setWindowTitle(self.tr("dpstudio — private data release"))
        self.session = session or Session(self)
        self.runner = runner or TaskRunner(self)
        # each page by its own class (typed), then the steps in order
        self.data_page = DataPage(self.session, self.runner)
        self.columns_page = ColumnsPage(self.session, self.runner)
        self.release_page = ReleasePage(self.session, self.runner)
        self.budget_page = BudgetPage(self.session, self.runner)
        self.review_page = ReviewPage(self.session, self.runner)
        self.export_page = ExportPage(self.session, self.runner)
        self.pages: list[WizardPage] = [
            self.data_page,
            self.columns_page,
            self.release_page,
            self.budget_page,
            self.review_page,
            self.export_page,
        ]

        self.steps = QListWidget()
        self.steps.setObjectName("steps")
        self.steps.setFixedWidth(235)
        self.steps.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.steps.setToolTip(self.tr("Steps (Alt+Left / Alt+Right or Ctrl+PgUp / Ctrl+PgDn)"))
        for i, p in enumerate(self.pages):
            self.steps.addItem(QListWidgetItem(f"{i + 1}. {p.title()}"))
        self.steps.currentRowChanged.connect(self._step_clicked)

        self.stack = QStackedWidget()
        for p in self.pages:
            if not isinstance(p, ExportPage):
                self.stack.addWidget(p)
            else:
                area = QScrollArea()
                area.setWidgetResizable(True)
                area.setFrameShape(QScrollArea.Shape.NoFrame)
                area.setWidget(p)
                self.stack.addWidget(area)
            p.completeChanged.connect(self._schedule_nav)
        self.heading = QLabel()
        self.heading.setObjectName("heading")
        self.subheading = QLabel()
        self.subheading.setObjectName("subheading")
        self.subheading.setWordWrap(True)
        self.back_button = QPushButton(self.tr("◀ Back"))
        self.back_button.setToolTip(self.tr("Previous step (Alt+Left)"))
        self.back_button.clicked.connect(self.go_back)
        self.next_button = QPushButton(self.tr("Next ▶"))
        self.next_button.setObjectName("primary")
        self.next_button.setToolTip(self.tr("Next step (Alt+Right)"))
        self.next_button.clicked.connect(self.go_next)
        self.blocker = QLabel()
        self.blocker.setObjectName("blocker")
        self.blocker.setWordWrap(True)
        nav = QHBoxLayout()
        nav.addWidget(self.blocker, 1)
        nav.addWidget(self.back_button)
        nav.addWidget(self.next_button)
        right = QVBoxLayout()
        right.addWidget(self.heading)
        right.addWidget(self.subheading)
        right.addWidget(self.stack, 1)
        right.addLayout(nav)
        central = QWidget()
        lay = QHBoxLayout(central)
        lay.addWidget(self.steps)
        lay.addLayout(right, 1)
        self.setCentralWidget(central)
        self.setAcceptDrops(True)
        self._build_menus()
        self.data_page.loadingChanged.connect(
            lambda busy: self.statusBar().showMessage(self.tr("Loading…") if busy else "", 0 if busy else 1)
        )
        self.export_page.released.connect(lambda _r: self.budget_page.refresh_ledger())
        self.session.dataChanged.connect(self._data_loaded)
        self.session.recipeChanged.connect(self._schedule_nav)
        self._nav_pending = False
        self.go_to(0)
        self.resize(QSize(1280, 820))
        geo = QSettings().value("window/geometry")
        if geo is not None:
            self.restoreGeometry(geo)

    # ---- menus and shortcuts -------------------------------------------------------------
    def _action(self, menu, text, slot, shortcut=None, tip=None):
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcuts(shortcut if isinstance(shortcut, list) else [shortcut])
        if tip:
            a.setStatusTip(tip)
            a.setToolTip(tip)
        a.triggered.connect(slot)
        menu.addAction(a)
        return a

    def _build_menus(self):
        mb = self.menuBar()
        f = mb.addMenu(self.tr("&File"))
        self.open_action = self._action(
            f, self.tr("&Open a table…"), self.data_page.open_dialog, QKeySequence.StandardKey.Open
        )
        self._action(f, self.tr("Open a saved &recipe…"), self.data_page.open_recipe_dialog)
        self.save_action = self._action(
            f,
            self.tr("&Save the recipe…"),
            self.save_recipe,
            QKeySequence.StandardKey.Save,
            self.tr("Save the release plan (JSON) to repeat it or run it from the command line"),
        )
        self.recent_menu = f.addMenu(self.tr("Recent files"))
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._action(f, self.tr("Open the &demo data"), self.data_page.open_demo)
        f.addSeparator()
        self.export_action = self._action(
            f,
            self.tr("&Export…"),
            self.export_now,
            QKeySequence("Ctrl+E"),
            self.tr("Go to the export step and release"),
        )
        f.addSeparator()
        self._action(f, self.tr("&Quit"), self.close, QKeySequence.StandardKey.Quit)
        e = mb.addMenu(self.tr("&Edit"))
        self.undo_action = self._action(e, self.tr("&Undo"), self.session.undo, QKeySequence.StandardKey.Undo)
        self.redo_action = self._action(e, self.tr("&Redo"), self.session.redo, QKeySequence.StandardKey.Redo)
        v = mb.addMenu(self.tr("&View"))
        theme = v.addMenu(self.tr("Appearance"))
        group = QActionGroup(self)
        current = QSettings().value("appearance/theme", "system")
        for key, text in (
            ("system", self.tr("Follow the system")),
            ("light", self.tr("Light")),
            ("dark", self.tr("Dark")),
        ):
            a = self._action(theme, text, lambda _c=False, k=key: self.set_theme(k))
            a.setCheckable(True)
            a.setChecked(key == current)
            group.addAction(a)
        g = mb.addMenu(self.tr("&Go"))
        self.back_action = self._action(
            g, self.tr("Previous step"), self.go_back, [QKeySequence("Alt+Left"), QKeySequence("Ctrl+PgUp")]
        )
        self.next_action = self._action(
            g, self.tr("Next step"), self.go_next, [QKeySequence("Alt+Right"), QKeySequence("Ctrl+PgDown")]
        )
        h = mb.addMenu(self.tr("&Help"))
        self.help_action = self._action(
            h, self.tr("Help on this step"), self.show_help, QKeySequence.StandardKey.HelpContents
        )
        if not self.help_action.shortcuts() or QKeySequence("F1") not in self.help_action.shortcuts():
            self.help_action.setShortcuts(list(self.help_action.shortcuts()) + [QKeySequence("F1")])
        self._action(h, self.tr("About dpstudio"), self.show_about)

    def _fill_recent(self):
        self.recent_menu.clear()
        files = recent_files()
        for path in files:
            a = self.recent_menu.addAction(Path(path).name)
            a.setToolTip(path)
            a.triggered.connect(lambda _c=False, p=path: self.data_page.load(p))
        if not files:
            a = self.recent_menu.addAction(self.tr("(none yet)"))
            a.setEnabled(False)

    def set_theme(self, key: str):
        QSettings().setValue("appearance/theme", key)
        from dpstudio.gui.theme import apply_theme

        apply_theme()

    # ---- navigation ----------------------------------------------------------------------
    @property
    def current_index(self) -> int:
        return self.stack.currentIndex()

    def current_page(self) -> WizardPage:
        return self.pages[self.current_index]

    def reachable(self, index: int) -> bool:
        """A step is reachable when every step before it is complete."""
        return all(p.isComplete() for p in self.pages[:index] if p is not self.export_page)

    def go_to(self, index: int) -> bool:
        if not 0 <= index < len(self.pages) or not self.reachable(index):
            self._update_nav()
            return False
        self.stack.setCurrentIndex(index)
        page = self.pages[index]
        self.heading.setText(page.title())
        self.subheading.setText(page.subtitle())
        self.steps.blockSignals(True)
        self.steps.setCurrentRow(index)
        self.steps.blockSignals(False)
        self._update_nav()
        return True

    def _step_clicked(self, row: int):
        if not self.go_to(row):
            self.steps.blockSignals(True)
            self.steps.setCurrentRow(self.current_index)
            self.steps.blockSignals(False)

    def go_next(self):
        return self.go_to(self.current_index + 1)

    def go_back(self):
        return self.go_to(self.current_index - 1)

    def _schedule_nav(self):
        """Coalesce the many completeChanged signals of one edit into one update."""
        if not self._nav_pending:
            self._nav_pending = True
            QTimer.singleShot(0, self._update_nav)

    def _update_nav(self):
        self._nav_pending = False
        i = self.current_index
        page = self.pages[i]
        complete = [p.isComplete() for p in self.pages]
        for j, p in enumerate(self.pages):
            item = self.steps.item(j)
            ok = complete[j]
            item.setText(f"{'✓' if ok and j != i else j + 1}{'' if ok and j != i else '.'} {p.title()}")
            reach = all(complete[k] for k in range(j) if self.pages[k] is not self.export_page)
            flags = Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled if reach else Qt.ItemFlag.NoItemFlags
            item.setFlags(flags)
        self.back_button.setEnabled(i > 0)
        last = i == len(self.pages) - 1
        self.next_button.setVisible(not last)
        self.next_button.setEnabled(complete[i])
        problems = page.problems() if hasattr(page, "problems") else []
        if last or complete[i]:
            self.blocker.setText("")
        elif not self.session.has_data:
            self.blocker.setText(self.tr("Open a table to begin."))
        elif problems:
            text = self.tr("{0} thing(s) to fix on this step before continuing (hover for the list).")
            self.blocker.setText(text.format(len(problems)))
            self.blocker.setToolTip("\n".join(problems))
        else:
            self.blocker.setText(self.tr("Fix the problems listed above to continue."))
        self.undo_action.setEnabled(self.session.can_undo())
        self.redo_action.setEnabled(self.session.can_redo())

    def _data_loaded(self):
        if self.session.loaded is not None:
            self.statusBar().showMessage(self.tr("Loaded {0}").format(Path(self.session.loaded.path).name), 5000)
        self._update_nav()
        if self.current_index == 0:
            self.go_to(1)

    # ---- actions -------------------------------------------------------------------------
    def export_now(self):
        if self.go_to(len(self.pages) - 1):
            self.export_page.start_release()
        else:
            self.statusBar().showMessage(self.tr("Finish the earlier steps before exporting."), 5000)

    def save_recipe(self):
        if self.session.recipe is None or self.session.loaded is None:
            return
        start = str(Path(self.session.loaded.path).with_suffix(".recipe.json"))
        path, _ = QFileDialog.getSaveFileName(
            self, self.tr("Save the recipe"), start, self.tr("Recipes (*.recipe.json *.json)")
        )
        if path:
            from dpstudio.errors import UserError
            from dpstudio.export import write_text
            from dpstudio.ledger import default_ledger_path
            from dpstudio.targets import refuse_overwrite

            try:
                # never over the data it describes or the ledger; atomic, like every output
                refuse_overwrite("recipe", path, input_path=self.session.loaded.path, ledger_path=default_ledger_path())
                write_text(self.session.recipe.dumps(), path)
                self.session.recipe_source = path  # a release may then not write over it
                self.statusBar().showMessage(self.tr("Recipe saved to {0}").format(path), 5000)
            except (OSError, UserError) as exc:
                show_error(self, self.tr("Could not save the recipe"), exc)

    def help_html(self) -> str:
        page = self.current_page()
        return f"<h3>{page.title()}</h3><p>{page.help_text()}</p>"

    def show_help(self):
        box = QMessageBox(
            QMessageBox.Icon.Information, self.tr("Help"), self.help_html(), QMessageBox.StandardButton.Close, self
        )
        box.setTextFormat(Qt.TextFormat.RichText)
        box.open()
        self._help_box = box

    def show_about(self):
        from dpstudio import __version__

        QMessageBox.about(
            self,
            self.tr("About dpstudio"),
            self.tr(
                "<b>dpstudio {0}</b><br>Release sensitive tables with differential privacy, with a report a "
                "compliance officer can sign."
            ).format(__version__),
        )

    # ---- window --------------------------------------------------------------------------
    def dragEnterEvent(self, event):  # noqa: N802 - Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event):  # noqa: N802 - Qt override
        self.data_page.dropEvent(event)

    def closeEvent(self, event):  # noqa: N802 - Qt override
        if self.export_page.worker is not None:
            ok = QMessageBox.question(
                self, self.tr("A release is running"), self.tr("Cancel the running release and quit?")
            )
            if ok != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
        QSettings().setValue("window/geometry", self.saveGeometry())
        self.runner.cancel_all()
        self.runner.wait(3000)
        super().closeEvent(event)
