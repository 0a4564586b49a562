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
            if isinstance(p, (BudgetPage, ReviewPage)):  # these scroll inside (charts, the report)
                self.stack.addWidget(p)
            else:
                # the others scroll when the window is short: the release page's options alone
                # asked 601 px, which held the window above a 768-px screen's 700 (audit finding)
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
        # why the window took the user to another step (a later choice needs an earlier step)
        self.notice = QLabel()
        self.notice.setObjectName("blocker")
        self.notice.setWordWrap(True)
        self.notice.setVisible(False)
        nav = QHBoxLayout()
        nav.addWidget(self.blocker, 1)
        nav.addWidget(self.back_button)
        nav.addWidget(self.next_button)
        right = QVBoxLayout()
        right.addWidget(self.heading)
        right.addWidget(self.subheading)
        right.addWidget(self.notice)
        right.addWidget(self.stack, 1)
        right.addLayout(nav)
        central = QWidget()
        lay = QHBoxLayout(central)
        lay.addWidget(self.steps)
        lay.addLayout(right, 1)
        self.setCentralWidget(central)
        self.setAcceptDrops(True)
        self._build_menus()
        for button in self._cancel_buttons():
            button.setShortcut(QKeySequence("Esc"))
            button.setToolTip((button.toolTip() + " " if button.toolTip() else "") + self.tr("(Esc)"))
        self.data_page.loadingChanged.connect(
            lambda busy: self.statusBar().showMessage(self.tr("Loading…") if busy else "", 0 if busy else 1)
        )
        self.export_page.released.connect(lambda _r: self.budget_page.refresh_ledger())
        self.session.dataChanged.connect(self._data_loaded)
        self.session.recipeChanged.connect(self._schedule_nav)
        self._nav_pending = False
        self.visited: set[int] = {0}  # steps shown since the table was loaded
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
        quit_action = self._action(f, self.tr("&Quit"), self.close, QKeySequence.StandardKey.Quit)
        if not quit_action.shortcuts():  # no standard key on Windows (and some X11 keymaps)
            quit_action.setShortcuts([QKeySequence("Ctrl+Q")])
        e = mb.addMenu(self.tr("&Edit"))
        self.undo_action = self._action(e, self.tr("&Undo"), self.session.undo, QKeySequence.StandardKey.Undo)
        self.redo_action = self._action(e, self.tr("&Redo"), self.session.redo, QKeySequence.StandardKey.Redo)
        st = mb.addMenu(self.tr("&Settings"))
        self.preferences_action = self._action(
            st,
            self.tr("&Preferences…"),
            self.edit_preferences,
            QKeySequence.StandardKey.Preferences,
            self.tr("The operator's name printed in release reports"),
        )
        if not self.preferences_action.shortcuts():  # none on Windows and Linux by default
            self.preferences_action.setShortcuts([QKeySequence("Ctrl+,")])
        self.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
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

    def _cancel_buttons(self) -> list:
        """The Cancel buttons of long work: each takes the Esc key while it is enabled and shown
        (a disabled button's shortcut is inactive, so Esc still closes an editor otherwise)."""
        return [
            self.data_page.cancel_button,
            self.budget_page.preview.trial_cancel,
            self.budget_page.targets.cancel_button,
            self.export_page.cancel_button,
        ]

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
        return self.first_blocking(index) is None

    def first_blocking(self, index: int) -> int | None:
        """The first step before ``index`` that is not complete (None: all are)."""
        for k, p in enumerate(self.pages[:index]):
            if p is not self.export_page and not p.isComplete():
                return k
        return None

    def step_done(self, index: int) -> bool:
        """A step is done when it was shown since the table was loaded, it and every step before
        it are complete (no problem routed to them), and - the last step - the release ran with
        the current settings."""
        if not self.session.has_data or index not in self.visited:
            return False
        return self.pages[index].isComplete() and self.reachable(index)

    def go_to(self, index: int) -> bool:
        if not 0 <= index < len(self.pages):
            self._update_nav()
            return False
        blocking = self.first_blocking(index)
        if blocking is not None:
            if blocking < self.current_index and self.session.has_data:
                # a choice on a later step needs an earlier one (e.g. synthetic data needs the
                # public columns' domains): say so and take the user there, never a silent Next
                self._route_to(blocking)
            self._update_nav()
            return False
        self._show(index)
        return True

    def _route_to(self, index: int) -> None:
        page = self.pages[index]
        problems = page.problems()
        first = problems[0] if problems else self.tr("it is not complete")
        text = self.tr("Brought back to step {0} (“{1}”): a later choice needs it. {2}").format(
            index + 1, page.title(), first[:1].upper() + first[1:]
        )
        if len(problems) > 1:
            text += " " + self.tr("(and {0} more)").format(len(problems) - 1)
        self._show(index)
        self.notice.setText(text)
        self.notice.setVisible(True)
        self.statusBar().showMessage(self.tr("Taken to step {0} to fix it.").format(index + 1), 8000)

    def _show(self, index: int) -> None:
        self.notice.setVisible(False)
        self.notice.setText("")
        if self.session.has_data:
            self.visited.add(index)
        self.stack.setCurrentIndex(index)
        page = self.pages[index]
        self.heading.setText(page.title())
        self.subheading.setText(page.subtitle())
        self.steps.blockSignals(True)
        self.steps.setCurrentRow(index)
        self.steps.blockSignals(False)
        self._update_nav()

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
            ok = self.step_done(j)
            item.setText(f"{'✓' if ok and j != i else j + 1}{'' if ok and j != i else '.'} {p.title()}")
            reach = all(complete[k] for k in range(j) if self.pages[k] is not self.export_page)
            flags = Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled if reach else Qt.ItemFlag.NoItemFlags
            item.setFlags(flags)
            item.setToolTip(self.tr("Done") if ok else self.tr("Needs attention") if reach and not complete[j] else "")
        self.back_button.setEnabled(i > 0)
        last = i == len(self.pages) - 1
        self.next_button.setVisible(not last)
        self.next_button.setEnabled(complete[i])
        problems = page.problems() if hasattr(page, "problems") else []
        earlier = self.first_blocking(i)
        if not self.notice.isHidden() and complete[i]:
            self.notice.setVisible(False)  # fixed: the reason to be here is gone
        self.blocker.setToolTip("")
        if earlier is not None and self.session.has_data and complete[i] and not last:
            # this step is fine, but a choice made here needs an earlier step: Next goes there
            first = self.pages[earlier].problems()
            text = self.tr("Step {0} (“{1}”) needs attention because of a choice here").format(
                earlier + 1, self.pages[earlier].title()
            )
            self.blocker.setText(text + (": " + first[0] if first else "") + " — " + self.tr("Next takes you there."))
            self.blocker.setToolTip("\n".join(first))
        elif last or complete[i]:
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
        self.visited = {0, self.current_index}
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
                # an existing file: the save dialog has asked before replacing it
                refuse_overwrite(
                    "recipe",
                    path,
                    input_path=self.session.loaded.path,
                    ledger_path=default_ledger_path(),
                    replace_existing=True,
                )
                from dpstudio.pipeline import refuse_paid_file

                refuse_paid_file(default_ledger_path(), "recipe", path)  # never a paid release's file
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

    def edit_preferences(self):
        """Settings ▸ Preferences: the operator's name printed in release reports."""
        from dpstudio import prefs

        ok, name = self.ask_preferences(prefs.operator())
        if ok:
            shown = prefs.set_operator(name)
            self.statusBar().showMessage(
                self.tr("Operator: {0}").format(shown) if shown else self.tr("Operator: not recorded"), 5000
            )
        return ok

    def ask_preferences(self, current):  # replaced in tests (a modal dialog)
        from dpstudio.gui.dialogs import ask_operator

        return ask_operator(self, current)

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
