"""The observable session: the current Recipe plus the loaded table and its schema.

Pages never keep state of their own: they read ``session.recipe`` and change it only through
``session.update(lambda r: replace(r, ...))``; every change emits ``recipeChanged`` and is
undoable.  Loading a new table emits ``dataChanged`` (then ``recipeChanged``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from dpstudio.engine.data.sample import is_large_file, load_sample, schema_of
from dpstudio.recipe.model import Recipe
from dpstudio.recipe.validate import Problem

if TYPE_CHECKING:  # the engine's loader is imported lazily (start-up time)
    import pandas as pd

    from dpstudio.engine.data.loader import LoadedTable
    from dpstudio.engine.data.schema import TableSchema
    from dpstudio.plan import ReleasePlan

UNDO_LIMIT = 200


def recipe_for_file(path, loaded, schema) -> tuple[Recipe, str | None]:
    """The recipe a freshly loaded file starts with: a ``<stem>.recipe.json`` saved beside it
    when it was made for this very file, else one built from the inferred schema."""
    from dpstudio.recipe.build import recipe_from_schema
    from dpstudio.recipe.model import load_recipe

    p = Path(path)
    sibling = p.with_name(p.stem + ".recipe.json")
    if sibling.is_file():
        try:
            r = load_recipe(sibling)
        except Exception:  # noqa: BLE001 - a broken sibling is ignored, the schema recipe is used
            r = None
        if (
            r is not None
            and (r.input.sha256 in (None, loaded.sha256))
            and {c.name for c in r.columns} == {c.name for c in schema.columns}
        ):
            r = replace(r, input=replace(r.input, path=str(loaded.path), sha256=loaded.sha256, format=loaded.format))
            return r, str(sibling)
    return recipe_from_schema(loaded, schema), None


def _load(path, options, *, progress, cancel):
    """The table at ``path``: loaded whole, or as a sample when it is too large for memory."""
    from dpstudio.engine.data.loader import load_table

    if is_large_file(path):
        return load_sample(path, options, progress=progress, cancel=cancel)
    return load_table(path, options, progress=progress, cancel=cancel)


def load_for_session(path, options=None, *, progress, cancel):
    """Worker job: load a table (a sample when it is too large for memory), infer its schema,
    make its starting recipe (no Qt)."""
    from dpstudio.engine.progress import sub_progress

    loaded = _load(path, options, progress=sub_progress(progress, 0.0, 0.85), cancel=cancel)
    cancel.check()
    progress(0.9, "inferring column types")
    schema = schema_of(loaded)
    cancel.check()
    recipe, source = recipe_for_file(path, loaded, schema)
    progress(1.0, "ready")
    return loaded, schema, recipe, source


#: what opening the ledger settled in this session (releases of a process that ended mid-way,
#: e.g. a crash of this application): the budget panel says it (appended from worker threads)
RECOVERED: list[str] = []


def open_ledger():
    """The default ledger, opened as the GUI opens it: what its recovery did is kept in
    :data:`RECOVERED` for the budget panel (the CLI prints it)."""
    from dpstudio.ledger import Ledger, recovery_text

    led = Ledger()
    RECOVERED.extend(recovery_text(r) for r in led.recovered)
    return led


def ledger_row_sketch(loaded: LoadedTable):
    """Worker side (no Qt), after a load: ``(ledger path, keyed row sketch)`` of the loaded table
    for the default ledger when resolving the file will need its rows (:meth:`Session.ledger_lookup`),
    so that the budget panel never hashes every row on the GUI thread; None for a sample of a file
    too large for memory, a file the ledger already resolves, or a ledger that cannot be used
    (the panel says why when it opens it)."""
    if loaded.sample_of is not None:
        return None
    try:
        led = open_ledger()
        if not led.needs_fingerprint(loaded.sha256):
            return None
        return str(led.path), led.fingerprint_rows(loaded.frame)
    except Exception:  # noqa: BLE001 - only a head start; the lookup computes or reports it
        return None


def load_recipe_and_data(recipe_path, *, progress, cancel):
    """Worker job: open a saved recipe and the table it names (a sample when it is too large)."""
    from dpstudio.errors import UserError
    from dpstudio.pipeline import load_input
    from dpstudio.recipe.model import load_recipe

    recipe = load_recipe(recipe_path)
    if is_large_file(recipe.input.path):
        loaded = load_sample(
            recipe.input.path, recipe.input.options.to_dict() or None, progress=progress, cancel=cancel
        )
        if recipe.input.sha256 and loaded.sha256 != recipe.input.sha256:
            raise UserError(
                f"{recipe.input.path} is not the file this recipe was made for (SHA-256 {loaded.sha256[:12]}... "
                f"!= {recipe.input.sha256[:12]}...); make a new recipe for it"
            )
    else:
        loaded = load_input(recipe, progress=progress, cancel=cancel)
    schema = schema_of(loaded)
    return loaded, schema, recipe, str(recipe_path)


def default_targets(loaded, fmt: str) -> tuple[str, str]:
    """The default output and report paths of a freshly loaded table: in the user's own folder
    for this dataset (``prefs.output_dir``: Documents/dpstudio/<stem>/), never beside the input,
    which may be read-only, shared or inside the application.  The folder is made by the release,
    not here."""
    from dpstudio import prefs

    p = Path(loaded.path)
    folder = prefs.output_dir(p.name)
    return str(folder / f"{p.stem}_dp{OUTPUT_EXT[fmt]}"), str(folder / f"{p.stem}_dp_report.html")


def report_beside(output_path: str, report_path: str) -> str:
    """The report path that follows ``output_path``: same folder, ``<stem>_report``, the report's
    current format (HTML unless it is a PDF)."""
    suffix = ".pdf" if report_path.lower().endswith(".pdf") else ".html"
    out = Path(output_path)
    return str(out.with_name(f"{out.stem}_report{suffix}"))


def next_free_name(path: str, companions=None) -> str:
    """``path`` with the next number that names nothing yet: ``out.csv`` -> ``out-2.csv``,
    ``out-2.csv`` -> ``out-3.csv`` (a trailing ``-N``, N from 2 to 999 without a leading zero, is
    taken as the counter: ``sales-2024.csv`` -> ``sales-2024-2.csv``); a folder path keeps its
    trailing slash.  ``companions(candidate)``: the other files written with it (a report named
    after it, a density side file), which must not exist either."""
    import os
    import re

    folder = path.endswith(("/", os.sep))
    p = Path(path.rstrip("/" + os.sep))
    suffix = "" if folder else p.suffix
    stem = p.name[: len(p.name) - len(suffix)] if suffix else p.name
    m = re.fullmatch(r"(.*)-([2-9]|[1-9][0-9]{1,2})", stem)
    base, k = (m.group(1), int(m.group(2)) + 1) if m else (stem, 2)
    while True:
        candidate = str(p.with_name(f"{base}-{k}{suffix}")) + (os.sep if folder else "")
        if not any(os.path.lexists(c) for c in [candidate, *(companions(candidate) if companions else ())]):
            return candidate
        k += 1


OUTPUT_EXT = {"csv": ".csv", "parquet": ".parquet", "xlsx": ".xlsx", "json": ".json"}


class Session(QObject):
    recipeChanged = Signal()
    dataChanged = Signal()
    targetsChanged = Signal()  # output / report paths (not part of the recipe)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.recipe: Recipe | None = None
        self.loaded: LoadedTable | None = None
        self.schema: TableSchema | None = None
        self.recipe_source: str | None = None  # file the recipe came from, if any
        self.output_path: str = ""
        self.report_path: str = ""
        #: the user chose the report path: it no longer follows the output path
        self.report_explicit = False
        #: counts every change of the recipe, the data and the targets: a page that acted on one
        #: state (the export page after a release) compares it to know whether anything changed
        self.generation = 0
        #: counts loads: a key for caches of the loaded table (``id(loaded)`` may be reused)
        self.data_token = 0
        self._undo: list[Recipe] = []
        self._redo: list[Recipe] = []
        self._cache: dict[str, Any] = {}
        self._last_merge: str | None = None
        self.derived: dict[Any, Any] = {}  # expensive results shared by pages (e.g. the leakage model)
        self._preview: tuple[Any, Any] | None = None  # (key, columns) of preview_recipe
        self._rows_fp: tuple[Any, Any] | None = None  # (load and ledger, row sketch) of ledger_lookup

    # ---- data ------------------------------------------------------------------------
    @property
    def has_data(self) -> bool:
        return self.loaded is not None and self.recipe is not None

    @property
    def frame(self) -> pd.DataFrame | None:
        """The loaded table; for a file too large for memory, a uniform sample of its rows
        (:attr:`sample_of`)."""
        return None if self.loaded is None else self.loaded.frame

    @property
    def sample_of(self) -> int | None:
        """The file's total rows when :attr:`frame` is a sample of a file too large for memory
        (previews and estimates then use the sample; the release reads every row, in blocks)."""
        return None if self.loaded is None else self.loaded.sample_of

    @property
    def engine(self) -> str:
        """How the release reads the input: ``"stream"`` (in blocks) for a file too large for
        memory, else ``"memory"``."""
        return "stream" if self.sample_of is not None else "memory"

    def ledger_lookup(self, ledger) -> dict:
        """The ledger summary of the dataset that a release of the loaded file is charged to,
        resolved as the release resolves it: by SHA-256, the recipe's dataset name, then its rows
        (their keyed sketch is computed once per load and ledger).  A sample of a file too large
        for memory has no sketch of every row: the release itself matches its rows.  The sketch
        is normally made by the load's worker (:func:`ledger_row_sketch`); computed here only when
        the ledger changed since."""
        assert self.loaded is not None and self.recipe is not None
        sha = self.loaded.sha256
        fp = None
        if self.sample_of is None and ledger.needs_fingerprint(sha):
            key = (self.data_token, str(ledger.path))  # the sketch is keyed by the ledger's key
            if self._rows_fp is None or self._rows_fp[0] != key:
                self._rows_fp = (key, ledger.fingerprint_rows(self.frame))
            fp = self._rows_fp[1]
        return ledger.lookup(
            sha, dataset_name=Path(self.loaded.path).name, label=self.recipe.input.dataset, fingerprint=fp
        )

    def stream_problem(self) -> str | None:
        """Why the current release cannot run on a file too large for memory (None: it can, or
        the file fits in memory)."""
        if self.sample_of is None:
            return None
        plan, _ = self.plan()
        if plan is None:
            return None
        from dpstudio.plan.stream import stream_problem

        return stream_problem(plan)

    def set_data(
        self,
        loaded: LoadedTable,
        schema: TableSchema,
        recipe: Recipe,
        recipe_source: str | None = None,
        row_sketch: tuple[str, Any] | None = None,
    ) -> None:
        """``row_sketch``: :func:`ledger_row_sketch` of ``loaded``, made by the load's worker."""
        self.loaded, self.schema, self.recipe = loaded, schema, recipe
        self.recipe_source = recipe_source
        self._undo.clear()
        self._redo.clear()
        self._cache.clear()
        self.derived.clear()
        self._preview = None
        self._last_merge = None
        self.data_token += 1
        self._rows_fp = None if row_sketch is None else ((self.data_token, row_sketch[0]), row_sketch[1])
        self.generation += 1
        self.output_path, self.report_path = default_targets(loaded, recipe.outputs.format)
        self.report_explicit = False
        self.dataChanged.emit()
        self.targetsChanged.emit()
        self.recipeChanged.emit()

    def set_targets(
        self, output_path: str | None = None, report_path: str | None = None, *, report_chosen: bool = True
    ) -> None:
        """Set the output and/or report path.  A report path given here is the user's choice
        (``report_chosen``) and stays; until then the report follows the output path (same
        folder, ``<stem>_report``).  Emits ``targetsChanged`` only when a path changed."""
        before = (self.output_path, self.report_path)
        if report_path is not None:
            self.report_path = report_path
            self.report_explicit = self.report_explicit or report_chosen
        if output_path is not None:
            self.output_path = output_path
            if report_path is None and not self.report_explicit and output_path and self.report_path:
                self.report_path = report_beside(output_path, self.report_path)
        if (self.output_path, self.report_path) != before:
            self.generation += 1
            self.targetsChanged.emit()

    # ---- recipe ----------------------------------------------------------------------
    def update(self, change: Callable[[Recipe], Recipe], merge: str | None = None) -> bool:
        """Apply ``change`` to the recipe (a pure function returning a new Recipe).

        Successive changes with the same ``merge`` key (e.g. dragging the epsilon slider) make
        one undo step."""
        if self.recipe is None:
            return False
        new = change(self.recipe)
        if new is None or new == self.recipe:
            return False
        if not (merge is not None and merge == self._last_merge and self._undo):
            self._undo.append(self.recipe)
            del self._undo[:-UNDO_LIMIT]
        self._last_merge = merge
        self._redo.clear()
        self._set(new)
        return True

    def update_column(self, name: str, **changes) -> bool:
        return self.update(lambda r: r.with_column(name, **changes))

    def set_recipe(self, recipe: Recipe) -> None:
        self.update(lambda _r: recipe)

    def _set(self, recipe: Recipe) -> None:
        self.recipe = recipe
        self.generation += 1
        self._cache.clear()
        self.recipeChanged.emit()

    def can_undo(self) -> bool:
        return bool(self._undo)

    def can_redo(self) -> bool:
        return bool(self._redo)

    def undo(self) -> None:
        if self._undo and self.recipe is not None:  # the stacks are only filled while a recipe is set
            self._redo.append(self.recipe)
            self._last_merge = None
            self._set(self._undo.pop())

    def redo(self) -> None:
        if self._redo and self.recipe is not None:
            self._undo.append(self.recipe)
            self._last_merge = None
            self._set(self._redo.pop())

    # ---- derived (cached per recipe) ---------------------------------------------------
    def problems(self) -> list[Problem]:
        """Every problem with the recipe and its fit to the loaded table, the plan's included
        (each unit's share of epsilon, each Gaussian unit's noise)."""
        if self.recipe is None:
            return []
        if "problems" not in self._cache:
            from dpstudio.plan import compile_checked
            from dpstudio.recipe.validate import declared_type_problems

            # as the release checks them: 'copied from data' domains filled in from the loaded
            # table, the compiler's own refusals, and the declared types held against the table
            recipe = self._preview_of(self.recipe)
            # the plan the charts preview even while it misses a target; the miss is a problem
            plan, problems = compile_checked(recipe, self.schema, check_targets=False)
            if plan is not None and recipe.budget.targets:
                from dpstudio.plan.solve import unmet_targets

                problems += unmet_targets(plan)
            if plan is not None and self.frame is not None and self.sample_of is None:
                from dpstudio.plan import for_rows

                plan = for_rows(plan, len(self.frame))  # the whole table's row count, as the release settles it
            if plan is not None:
                # the same compile serves the budget table and charts (it runs on the GUI thread
                # at every slider step: once, not twice)
                self._cache.setdefault("plan", (plan, None))
            if self.frame is not None:
                problems += declared_type_problems(recipe, self.frame)
            if plan is not None and self.sample_of is not None:
                # a file too large for memory is released in blocks: what needs every row in
                # memory at once is refused here, with the reason, not when the release runs
                from dpstudio.plan.stream import stream_problem

                why = stream_problem(plan)
                if why:
                    problems.append(
                        Problem(
                            f"this file is too large for this computer's memory and is released a "
                            f"part at a time, but {why}",
                            "release",
                            "release",
                        )
                    )
            # the recipe layer's texts carry command-line hints ("--bounds COL=LOW:HIGH"): the
            # wizard says where to act instead (same field and page)
            from dpstudio.gui.texts import gui_problem

            self._cache["problems"] = [gui_problem(p) for p in problems]
        return self._cache["problems"]

    def page_problems(self, page: str) -> list[Problem]:
        """The problems the wizard page ``page`` can fix (each problem names its page)."""
        return [p for p in self.problems() if p.page == page]

    def plan(self) -> tuple[ReleasePlan | None, str | None]:
        """``(plan, error_text)``: the compiled plan, or why there is none.

        Compiled from the recipe with its 'copied from data' domains filled in from the loaded
        table, as the release will (``pipeline.execute_release``), so the figures are the ones
        that will run."""
        if self.recipe is None:
            return None, "no data loaded"
        if "plan" not in self._cache:
            self.problems()  # compiles, and keeps the plan when there is one
        if "plan" not in self._cache:
            # problems with the recipe's fit to the table do not stop its own figures being shown
            from dpstudio.pipeline import compile_recipe

            try:
                self._cache["plan"] = (compile_recipe(self._preview_of(self.recipe)), None)
            except Exception as exc:  # noqa: BLE001 - shown to the user, never raised
                from dpstudio.gui.dialogs import error_summary

                self._cache["plan"] = (None, error_summary(exc))
        return self._cache["plan"]

    def preview_recipe(self) -> Recipe | None:
        """The recipe with 'copied from data' domains resolved (for previews on this machine only).

        Cached by the columns, so moving the epsilon slider never re-reads the data."""
        return None if self.recipe is None else self._preview_of(self.recipe)

    def _preview_of(self, r: Recipe) -> Recipe:
        key = (r.columns, self.data_token)
        cached = self._preview
        if cached is None or cached[0] != key:
            filled = r
            if self.frame is not None and any(
                c.domain is not None and c.domain.source == "data" and not c.domain.known for c in r.columns
            ):
                from dpstudio.recipe.build import fill_domains_from_data

                try:
                    filled = fill_domains_from_data(r, self.frame)
                except Exception:  # noqa: BLE001 - the preview then shows the column as unknown
                    filled = r
            self._preview = cached = (key, filled.columns)
        return replace(r, columns=cached[1])
