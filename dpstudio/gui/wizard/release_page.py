"""Step 3 - Release: what kind of release, and the mechanism for each column, each explained
in plain words (what it protects, what it does not)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpstudio.gui.texts import mechanism_text, mechanism_tooltip, release_text, semi_sensitive_text
from dpstudio.gui.wizard.base import WizardPage, blocked, note_label, table_item
from dpstudio.gui.wizard.edits import (
    allowed_mechanisms,
    embedding_pool,
    embedding_units,
    pool_file_problem,
    publish_unprotected,
    set_embedding_pool,
    set_mechanism,
    set_release_type,
    unprotected_marked,
)
from dpstudio.recipe.model import RELEASE_TYPES, Params

# release options edited on this page: (key, kind, minimum, maximum, step, special text at the minimum)
MODEL_OPTIONS = ("norm_bound", "lambda")
DENSITY_OPTIONS = ("bandwidth", "grid_size", "sample_rows")
#: the synthesizer options this page has fields for, by method (the others are set in the recipe)
SYNTH_OPTIONS = {"aim": ("bins", "max_values", "rounds_per_column", "max_cells"), "mst": ("bins", "max_values")}
_SYNTH_KEYS = ("bins", "max_values", "rounds_per_column", "max_cells")


def set_release_option(recipe, key: str, value):
    """A release option set (``value`` None removes it: the engine's default applies)."""
    opts = recipe.release.options.to_dict()
    if value is None:
        opts.pop(key, None)
    else:
        opts[key] = value
    return replace(recipe, release=replace(recipe.release, options=Params.of(opts)))


class ReleasePage(WizardPage):
    key = "release"

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        types_box = QGroupBox(self.tr("What do you want to release?"))
        grid = QGridLayout(types_box)
        self.type_group = QButtonGroup(self)
        self.type_buttons = {}
        for i, rtype in enumerate(RELEASE_TYPES):
            title, what, guarantee = release_text(rtype)
            rb = QRadioButton(title)
            tip = f"{what}\n\n{guarantee}"
            if rtype == "semi-sensitive":
                tip += "\n\n" + semi_sensitive_text()
            rb.setToolTip(tip)
            self.type_group.addButton(rb)
            self.type_buttons[rtype] = rb
            rb.toggled.connect(lambda on, t=rtype: on and self._type_chosen(t))
            grid.addWidget(rb, i // 2, i % 2)
        self.type_text = note_label()
        # a label release publishes the columns marked sensitive as they are: a problem, and the
        # one-click answer (the other answers - ignore them, another release - are one step away)
        self.publish_button = QPushButton()
        self.publish_button.setToolTip(
            self.tr(
                "Marks these columns public: the release publishes them exactly as they are, and its "
                "guarantee protects only the label. To keep them out instead, mark them 'ignore' on the "
                "Columns page; to protect them, choose a record release."
            )
        )
        self.publish_button.clicked.connect(lambda: self.session.update(publish_unprotected))
        self.publish_button.setVisible(False)
        type_box = QVBoxLayout()
        type_box.addWidget(self.type_text)
        type_box.addWidget(self.publish_button, 0, Qt.AlignmentFlag.AlignLeft)
        grid.addLayout(type_box, 3, 0, 1, 2)

        self.method = QComboBox()
        self.method.currentIndexChanged.connect(self._method_chosen)
        self.method_row = QHBoxLayout()
        self.method_label = QLabel(self.tr("Synthesizer:"))
        self.method_row.addWidget(self.method_label)
        self.method_row.addWidget(self.method, 1)
        # why the recommended synthesizer is recommended, visible (not only in a tooltip)
        self.method_why = note_label()
        method_box = QVBoxLayout()
        method_box.addLayout(self.method_row)
        method_box.addWidget(self.method_why)
        grid.addLayout(method_box, 4, 0, 1, 2)
        self.options_box = self._build_options()
        grid.addWidget(self.options_box, 5, 0, 1, 2)
        self.clamp = QCheckBox(self.tr("Keep released numbers within their public bounds"))
        self.clamp.setToolTip(
            self.tr(
                "Noisy numbers that fall outside a column's public bounds are set to the nearest bound. "
                "This costs no privacy and avoids impossible values (an age of −40); values near the "
                "bounds then lean slightly inwards. The expected error shown is then the one after "
                "this step, for the worst true value (the middle of the bounds)."
            )
        )
        self.clamp.toggled.connect(self._clamp_toggled)
        grid.addWidget(self.clamp, 6, 0, 1, 2)

        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(
            [
                self.tr("Column"),
                self.tr("Mechanism"),
                self.tr("Budget share\n(relative weight)"),
                self.tr("What it protects — and what it does not"),
            ]
        )
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        share_head = self.table.horizontalHeaderItem(2)
        if share_head is not None:
            share_head.setToolTip(
                self.tr(
                    "A relative weight, not a percentage: ε is divided among the protected columns in "
                    "proportion to their weights. A column with weight 2 gets twice the ε (less noise) "
                    "of a column with weight 1; the total stays the ε you set on the budget step."
                )
            )
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.problem_label = note_label("", "problems")
        lay = QVBoxLayout(self)
        lay.addWidget(types_box)
        lay.addWidget(QLabel(self.tr("<b>How each released column is protected</b>")))
        lay.addWidget(self.table, 1)
        self.pool_box = QGroupBox(self.tr("Embedding vectors: where the replacement vectors come from"))
        self.pool_layout = QVBoxLayout(self.pool_box)
        self.pool_layout.addWidget(
            note_label(
                self.tr(
                    "Each embedding vector is replaced by a vector from a <b>public pool</b> — a file with the same "
                    "vector columns, e.g. embeddings of public texts — preferring vectors close to the original."
                )
            )
        )
        self.pool_rows: dict[str, tuple] = {}
        self.pool_box.setVisible(False)
        lay.addWidget(self.pool_box)
        lay.addWidget(self.problem_label)
        self._rows_key = None
        self._pool_key = None
        # replaced in tests: dialogs that would block
        self.choose_pool_file = self._browse_pool_file
        self.confirm_dataset_pool = self._ask_dataset_pool

    def title(self):
        return self.tr("Choose the release")

    def subtitle(self):
        return self.tr("Pick what to publish and how each column is protected.")

    def help_text(self):
        parts = []
        for t in RELEASE_TYPES:
            title, what, guarantee = release_text(t)
            parts.append(f"<b>{title}</b>: {what} {guarantee}")
        for m in ("laplace", "gaussian", "rr", "metric"):
            title, what, protects, not_ = mechanism_text(m)
            parts.append(f"<b>{title}</b>: {what} {protects} {not_}")
        return "<br><br>".join(parts)

    def refresh(self):
        rec = self.session.recipe
        if rec is None:
            return
        rtype = rec.release.type
        with blocked(*self.type_buttons.values()):
            self.type_buttons[rtype].setChecked(True)
        title, what, guarantee = release_text(rtype)
        text = f"{what}<br><i>{guarantee}</i>"
        if rtype == "semi-sensitive":
            text += "<br>" + semi_sensitive_text()
        self.type_text.setText(text)
        marked = unprotected_marked(rec)
        self.publish_button.setVisible(bool(marked))
        if marked:
            shown = ", ".join(marked[:4]) + (
                self.tr(" and {0} more").format(len(marked) - 4) if len(marked) > 4 else ""
            )
            self.publish_button.setText(self.tr("Publish {0} as they are (mark public)").format(shown))
        self._refresh_method(rec)
        self._refresh_options(rec)
        self._refresh_clamp(rec)
        self._refresh_table(rec)
        self._refresh_pools(rec)
        problems = self.problems()
        self.problem_label.setText("" if not problems else "<br>".join(f"• {p}" for p in _collapse(problems)[:6]))

    def _refresh_method(self, rec):
        show = rec.release.type == "synthetic"
        self.method.setVisible(show)
        self.method_label.setVisible(show)
        self.method_why.setVisible(show)
        if not show:
            return
        from dpstudio.plan.stream import COUNT_METHODS
        from dpstudio.plan.synthetic import METHOD_NAME, METHOD_TEXT, recommend_method

        best, why = recommend_method(rec)
        # a file too large for memory is released a part at a time: only AIM and MST can run on it
        large = self.session.sample_of is not None
        with blocked(self.method):
            if (
                self.method.count() != len(METHOD_TEXT)
                or self.method.property("recommended") != best
                or self.method.property("large") != large
            ):
                self.method.clear()
                for k, text in METHOD_TEXT.items():
                    label = text + (self.tr(" (recommended)") if k == best else "")
                    if large and k not in COUNT_METHODS:
                        label += self.tr(" — not for this file: needs the whole table in memory")
                    self.method.addItem(label, k)
                self.method.setProperty("recommended", best)
                self.method.setProperty("large", large)
            self.method.setToolTip(self.tr("Recommended: {0} ({1})").format(METHOD_NAME[best], why))
            self.method_why.setText(self.tr("Why {0} is recommended: {1}.").format(METHOD_NAME[best], why))
            # no method chosen yet: the plan runs the recommended one, so that is what is shown
            self.method.setCurrentIndex(max(0, self.method.findData(rec.release.options.get("method") or best)))

    def _refresh_table(self, rec):
        rtype = rec.release.type
        rows = [c for c in rec.columns if c.role not in ("identifier", "ignore")]
        key = (rtype, tuple((c.name, c.role, c.type) for c in rows))
        if key != self._rows_key:
            self._rows_key = key
            self.table.setRowCount(len(rows))
            for i, c in enumerate(rows):
                self.table.setItem(i, 0, QTableWidgetItem(c.name))
                allowed = allowed_mechanisms(c, rtype)
                if len(allowed) > 1:
                    combo = QComboBox()
                    combo.setMaximumHeight(combo.sizeHint().height())  # not stretched over a tall row
                    for m in allowed:
                        combo.addItem(mechanism_text(m)[0], m)
                        combo.setItemData(combo.count() - 1, mechanism_tooltip(m), Qt.ItemDataRole.ToolTipRole)
                    combo.currentIndexChanged.connect(
                        lambda _i, n=c.name, w=combo: self.session.update(
                            lambda r: set_mechanism(r, n, w.currentData())
                        )
                    )
                    self.table.setCellWidget(i, 1, combo)
                else:
                    self.table.removeCellWidget(i, 1)
                    if allowed:
                        name = mechanism_text(allowed[0])[0]
                    else:
                        name = {
                            "synthetic": self.tr("chosen by the synthesizer"),
                            "density": self.tr("part of the density"),
                        }.get(rtype, self.tr("part of the model"))
                    self.table.setItem(i, 1, QTableWidgetItem(name))
                if allowed and allowed != ("none",):
                    spin = QDoubleSpinBox()
                    spin.setMaximumHeight(spin.sizeHint().height())
                    spin.setRange(0.1, 10.0)
                    spin.setSingleStep(0.5)
                    spin.setToolTip(
                        self.tr(
                            "Relative share of ε: a column with share 2 gets twice the budget "
                            "(less noise) of a column with share 1."
                        )
                    )
                    spin.valueChanged.connect(
                        lambda v, n=c.name: self.session.update(lambda r: set_mechanism(r, n, weight=v))
                    )
                    self.table.setCellWidget(i, 2, spin)
                else:
                    self.table.removeCellWidget(i, 2)
                    self.table.setItem(i, 2, QTableWidgetItem("—"))
                self.table.setItem(i, 3, QTableWidgetItem())
        for i, c in enumerate(rows):
            allowed = allowed_mechanisms(c, rtype)
            mech = c.mechanism.name if c.mechanism is not None else (allowed[0] if allowed else None)
            mech_cell = self.table.cellWidget(i, 1)
            if isinstance(mech_cell, QComboBox):
                with blocked(mech_cell):
                    mech_cell.setCurrentIndex(max(0, mech_cell.findData(mech)))
            share_cell = self.table.cellWidget(i, 2)
            if isinstance(share_cell, QDoubleSpinBox):
                with blocked(share_cell):
                    share_cell.setValue(c.mechanism.weight if c.mechanism is not None else 1.0)
            item = table_item(self.table, i, 3)
            if mech is None:
                item.setText(
                    {
                        "synthetic": self.tr("Used to train the synthesizer; never published row by row."),
                        "model": self.tr("Used to fit the model (a feature or the label); never published row by row."),
                        "density": self.tr("Its distribution is estimated; never published row by row."),
                    }.get(rtype, self.tr("Never published row by row."))
                )
                item.setToolTip("")
            elif mech == "none":
                item.setText(self.tr("Copied as it is: protects nothing. Only for information that is already public."))
                item.setToolTip(mechanism_tooltip(mech))
            else:
                title, what, protects, not_ = mechanism_text(mech)
                item.setText(f"{what}\n{protects}\n{not_}")
                item.setToolTip(mechanism_tooltip(mech))

    def _type_chosen(self, rtype):
        def change(r):
            r = set_release_type(r, rtype)
            if rtype not in ("record", "label", "semi-sensitive"):
                r = set_release_option(r, "clamp_to_bounds", None)  # a record-release option only
            # this page's options of the other types go too: a synthesizer refuses options it
            # does not know (the plan names them), and the user cannot see them on this page
            for key in (MODEL_OPTIONS if rtype != "model" else ()) + (DENSITY_OPTIONS if rtype != "density" else ()):
                r = set_release_option(r, key, None)
            if rtype != "synthetic":  # a synthesizer's choice and options mean nothing to the others
                from dpstudio.plan.problems import KNOWN_OPTIONS

                for key in r.release.options.to_dict():
                    if key not in KNOWN_OPTIONS.get(rtype, ()):
                        r = set_release_option(r, key, None)
            if rtype == "synthetic" and "method" not in r.release.options:
                # start from the recommended synthesizer; the user can still pick another
                from dataclasses import replace

                from dpstudio.plan.synthetic import recommend_method

                best, _why = recommend_method(r)
                r = replace(r, release=replace(r.release, options=r.release.options.with_(method=best)))
            return r

        self.session.update(change)

    def _method_chosen(self, _i):
        from dataclasses import replace

        m = self.method.currentData()
        if m:
            from dpstudio.plan.synthetic import option_names

            # options of the previous synthesizer that the chosen one does not take go (it would
            # refuse them, and this page shows no field to remove them)
            keep = set(option_names(m)) | {"method", "domain_share"}

            def choose(r):
                opts = {k: v for k, v in r.release.options.to_dict().items() if k in keep}
                opts["method"] = m
                return replace(r, release=replace(r.release, options=Params.of(opts)))

            self.session.update(choose)

    # ---- release options (model, density) ---------------------------------------------
    def _build_options(self) -> QGroupBox:
        box = QGroupBox(self.tr("Options"))
        form = QFormLayout(box)
        self.opt: dict[str, QSpinBox | QDoubleSpinBox] = {}
        nb = QDoubleSpinBox()
        nb.setRange(0.01, 1000.0)
        nb.setDecimals(2)
        nb.setValue(1.0)
        nb.setToolTip(
            self.tr(
                "How far every row's (scaled) features may reach: rows are shrunk to fit inside "
                "this radius. Larger lets the model use more of each row but needs more noise; "
                "1 suits features scaled to their public bounds."
            )
        )
        lam = QDoubleSpinBox()
        lam.setRange(0.0, 1e6)
        lam.setDecimals(3)
        lam.setSpecialValueText(self.tr("automatic"))
        lam.setToolTip(
            self.tr(
                "How strongly the coefficients are pulled towards zero (regularisation). "
                "Stronger pulling makes the privacy noise smaller but the model simpler. "
                "'automatic' uses dpstudio's default for your table size and ε."
            )
        )
        bw = QDoubleSpinBox()
        bw.setRange(0.0, 1.0)
        bw.setDecimals(3)
        bw.setSingleStep(0.01)
        bw.setSpecialValueText(self.tr("automatic"))
        bw.setToolTip(
            self.tr(
                "How much the density is smoothed, as a share of the column's public range. "
                "More smoothing hides single people better and needs less noise, but blurs "
                "peaks. 'automatic' follows the usual rule of thumb for the table size."
            )
        )
        gs = QSpinBox()
        gs.setRange(1, 4096)
        gs.setSpecialValueText(self.tr("automatic"))
        gs.setToolTip(
            self.tr(
                "How many points the published density is given at (per axis). More points "
                "make a finer picture and a bigger file; they do not cost privacy. "
                "'automatic': 256 for one column, 64 × 64 for two."
            )
        )
        sr = QSpinBox()
        sr.setRange(0, 10_000_000)
        sr.setSingleStep(1000)
        sr.setSpecialValueText(self.tr("none (publish the density only)"))
        sr.setToolTip(
            self.tr(
                "Optionally also draw this many artificial values from the private density "
                "(a table of made-up rows). They cost no extra privacy: they come from the "
                "published density, not from the data."
            )
        )
        bins = QSpinBox()
        bins.setRange(2, 1024)
        bins.setToolTip(
            self.tr(
                "Numbers are grouped into this many ranges (of their public bounds) before the "
                "synthesizer counts them. More ranges keep finer detail but spread the same noise "
                "over more counts. Whole-number columns with few values keep one range per value."
            )
        )
        mv = QSpinBox()
        mv.setRange(2, 100_000)
        mv.setToolTip(
            self.tr(
                "A whole-number column with at most this many possible values is counted value by "
                "value instead of in ranges."
            )
        )
        rounds = QSpinBox()
        rounds.setRange(1, 1000)
        rounds.setToolTip(
            self.tr(
                "How many rounds of choosing and measuring a combination of columns AIM runs, per "
                "column. More rounds measure more combinations, each with a smaller share of the "
                "budget (more noise each)."
            )
        )
        cells = QSpinBox()
        cells.setRange(1000, 2_000_000_000)
        cells.setSingleStep(100_000)
        cells.setGroupSeparatorShown(True)
        cells.setToolTip(
            self.tr(
                "The largest model AIM may build, in cells. Larger models can capture more "
                "combinations of columns but take more memory and time to fit."
            )
        )
        for key, w, label in (
            ("norm_bound", nb, self.tr("Feature radius")),
            ("lambda", lam, self.tr("Regularisation (λ)")),
            ("bandwidth", bw, self.tr("Smoothing (bandwidth)")),
            ("grid_size", gs, self.tr("Grid points")),
            ("sample_rows", sr, self.tr("Artificial rows to draw")),
            ("bins", bins, self.tr("Ranges per number column")),
            ("max_values", mv, self.tr("Values counted one by one (up to)")),
            ("rounds_per_column", rounds, self.tr("Rounds per column")),
            ("max_cells", cells, self.tr("Largest model (cells)")),
        ):
            w.valueChanged.connect(lambda _v, k=key: self._option_edited(k))
            form.addRow(label, w)
            self.opt[key] = w
        # a model's mechanism, as the compiled plan chooses it for the loaded table's row count
        self.model_choice = note_label("")
        form.addRow(self.tr("Mechanism"), self.model_choice)
        self._opt_form = form
        return box

    def _model_choice_text(self) -> str:
        """The mechanism the model release will use and why: the compiled plan's rule, applied
        to the loaded table's row count (public under the guarantee's neighbours)."""
        from dpstudio.plan.model import preview_choice

        plan, error = self.session.plan()
        if plan is None:
            return error or ""
        unit = next((u for u in plan.units if u.kind == "model"), None)
        if unit is None:
            return ""
        frame = self.session.frame
        try:
            choice = preview_choice(plan, len(frame)) if frame is not None and len(frame) else None
        except ValueError:  # a budget the calibration refuses: the problems list says why
            choice = None
        if choice is None:
            return str(unit.facts.get("mechanism_choice", unit.description))
        return f"<b>{choice.title}</b>: {choice.reason}."

    def _synth_method(self, rec) -> str | None:
        """The synthesizer the plan runs (the recipe's, else the recommended one)."""
        if rec.release.type != "synthetic":
            return None
        from dpstudio.plan.synthetic import recommend_method

        return str(rec.release.options.get("method") or recommend_method(rec)[0])

    def _refresh_options(self, rec):
        from dpstudio.plan.synthetic import METHOD_NAME, option_defaults

        rtype = rec.release.type
        method = self._synth_method(rec)
        shown: tuple[str, ...] = MODEL_OPTIONS if rtype == "model" else DENSITY_OPTIONS if rtype == "density" else ()
        synth_defaults = {}
        if method is not None:
            shown = SYNTH_OPTIONS.get(method, ())
            synth_defaults = option_defaults(method) if shown else {}
        self.options_box.setVisible(bool(shown))
        if method is not None:
            self.options_box.setTitle(self.tr("{0} options").format(METHOD_NAME.get(method, method)))
        else:
            self.options_box.setTitle(self.tr("Model options") if rtype == "model" else self.tr("Density options"))
        o = rec.release.options
        with blocked(*self.opt.values()):
            for key, w in self.opt.items():
                self._opt_form.setRowVisible(w, key in shown)
                v = o.get(key)
                # an empty field shows the value that runs: the synthesizer's own default
                default = {"norm_bound": 1.0, "sample_rows": 0, **synth_defaults}.get(key, w.minimum())
                if isinstance(w, QDoubleSpinBox):
                    w.setValue(default if v is None else float(v))
                else:
                    w.setValue(int(default) if v is None else int(v))
        self._opt_form.setRowVisible(self.model_choice, rtype == "model")
        if rtype == "model":
            self.model_choice.setText(self._model_choice_text())

    def _option_edited(self, key):
        w = self.opt[key]
        v = w.value()
        if key in ("lambda", "bandwidth", "grid_size") and v == w.minimum():
            value = None  # automatic
        elif key == "sample_rows" and v == 0:
            value = None
        elif key in _SYNTH_KEYS and v == self._synth_default(key):
            value = None  # the synthesizer's default: the recipe need not say it
        else:
            value = int(v) if isinstance(w, QSpinBox) else float(v)
        self.session.update(lambda r: set_release_option(r, key, value), merge=f"option:{key}")

    def _synth_default(self, key: str):
        from dpstudio.plan.synthetic import option_defaults

        rec = self.session.recipe
        method = self._synth_method(rec) if rec is not None else None
        return option_defaults(method).get(key) if method else None

    # ---- clamping to the public bounds (record, label, semi-sensitive) --------------------
    def _refresh_clamp(self, rec):
        from dpstudio.plan.record import clamps_to_bounds

        self.clamp.setVisible(rec.release.type in ("record", "label", "semi-sensitive"))
        with blocked(self.clamp):
            self.clamp.setChecked(clamps_to_bounds(rec))

    def _clamp_toggled(self, on: bool):
        from dpstudio.plan.record import CLAMP_OPTION

        # on is the default: the option is written only to turn clamping off
        self.session.update(lambda r: set_release_option(r, CLAMP_OPTION, None if on else False))

    # ---- embedding pools ----------------------------------------------------------------
    def _refresh_pools(self, rec):
        units = embedding_units(rec) if rec.release.type == "record" else []
        self.pool_box.setVisible(bool(units))
        key = tuple((k, tuple(c.name for c in cols)) for k, cols in units)
        if key != self._pool_key:
            self._pool_key = key
            for widgets in self.pool_rows.values():
                widgets[0].setParent(None)
                widgets[0].deleteLater()
            self.pool_rows = {}
            for k, cols in units:
                row = QWidget()
                h = QHBoxLayout(row)
                h.setContentsMargins(0, 0, 0, 0)
                names = [c.name for c in cols]
                what = (
                    names[0]
                    if len(names) == 1
                    else self.tr("{0} ({1} columns: {2} … {3})").format(k, len(names), names[0], names[-1])
                )
                name = QLabel(f"<b>{what}</b>")
                status = QLabel()
                status.setWordWrap(True)
                file_b = QPushButton(self.tr("Choose a public pool file…"))
                file_b.setToolTip(
                    self.tr(
                        "A CSV or Parquet file of public vectors with the same columns; "
                        "released vectors are picked from it."
                    )
                )
                file_b.clicked.connect(lambda _c=False, kk=k: self.choose_pool(kk))
                data_b = QPushButton(self.tr("Use the dataset's own vectors…"))
                data_b.setToolTip(
                    self.tr(
                        "Pick replacements among the other rows of this table. The output "
                        "then contains other people's real vectors; you will be asked to "
                        "confirm."
                    )
                )
                data_b.clicked.connect(lambda _c=False, kk=k: self.use_dataset_pool(kk))
                h.addWidget(name)
                h.addWidget(status, 1)
                h.addWidget(file_b)
                h.addWidget(data_b)
                self.pool_layout.addWidget(row)
                self.pool_rows[k] = (row, status, file_b, data_b)
        for k, _cols in units:
            pool = embedding_pool(rec, k)
            status = self.pool_rows[k][1]
            if pool is None:
                status.setText("<span style='color:#D55E00'>" + self.tr("⚠ no pool chosen yet") + "</span>")
                status.setToolTip("")
            elif pool == "dataset":
                status.setText(
                    "<span style='color:#D55E00'>"
                    + self.tr("the dataset's own vectors (confirmed: the output contains other people's real vectors)")
                    + "</span>"
                )
                status.setToolTip("")
            else:
                status.setText(self.tr("public pool: {0}").format(Path(str(pool)).name))
                status.setToolTip(str(pool))

    def _browse_pool_file(self, key: str) -> str:
        start = str(Path(self.session.loaded.path).parent) if self.session.loaded is not None else ""
        path, _ = QFileDialog.getOpenFileName(
            self, self.tr("Public pool of vectors for {0}").format(key), start, self.tr("Tables (*.csv *.parquet)")
        )
        return path

    def choose_pool(self, key: str) -> bool:
        """Ask for a public pool file and use it for embedding ``key`` (its columns are checked)."""
        rec = self.session.recipe
        if rec is None:
            return False
        path = self.choose_pool_file(key)
        if not path:
            return False
        cols = [c.name for c in dict(embedding_units(rec))[key]]
        problem = pool_file_problem(path, cols)
        if problem:
            from dpstudio.gui.dialogs import show_error

            self._pool_error = show_error(self.window(), self.tr("This file cannot be the pool"), problem)
            return False
        return self.session.update(lambda r: set_embedding_pool(r, key, str(path)))

    def _ask_dataset_pool(self, key: str) -> bool:
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            self.tr("Use the dataset's own vectors?"),
            self.tr(
                "Each vector of <b>{0}</b> would be replaced by the vector of <b>another row of this table</b>."
                "<br><br>The published file then consists of <b>other people's real vectors</b>: nobody's "
                "vector stays in their own row, but every published vector belongs to a real person in your "
                "data. Only do this if those vectors may be shown to the readers of the release. "
                "A public pool file avoids this.<br><br>The recipe and the report will record that you "
                "accepted this ({1})."
            ).format(key, "embedding-pool-is-dataset"),
            QMessageBox.StandardButton.NoButton,
            self,
        )
        box.setTextFormat(Qt.TextFormat.RichText)
        yes = box.addButton(self.tr("Use the dataset's vectors"), QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is yes

    def use_dataset_pool(self, key: str) -> bool:
        if self.session.recipe is None or not self.confirm_dataset_pool(key):
            return False
        return self.session.update(lambda r: set_embedding_pool(r, key, "dataset", acknowledge=True))


def _collapse(problems: Sequence[str]) -> list[str]:
    """One line for the many identical problems of an embedding group's columns."""
    import re

    order, count = [], {}
    for p in problems:
        generic = re.sub(r"^column '[^']*': ", "", p)
        if generic not in count:
            order.append((generic, p))
            count[generic] = 0
        count[generic] += 1
    return [p if count[g] == 1 else f"{p} (and {count[g] - 1} more column(s))" for g, p in order]
