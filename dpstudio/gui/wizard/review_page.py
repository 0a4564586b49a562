"""Step 5 - Review: every problem, warning and acknowledgement, the total privacy loss
(computed from the recipe by compile_recipe, never typed) and a risk summary.

Plain language first: what is released, what is protected, what it costs and what to watch.
The accountant's vocabulary (zCDP, ρ, μ, RDP, mechanism ids, noise parameters) stays in the
"Technical details" area below, collapsed until the user opens it."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTextBrowser, QToolButton, QVBoxLayout

from dpstudio.gui.charts.preview import fmt_delta
from dpstudio.gui.texts import domain_source_text, guarantee_text, release_text, semi_sensitive_text
from dpstudio.gui.wizard.base import WizardPage
from dpstudio.gui.wizard.budget_charts import sample_note
from dpstudio.recipe.validate import ACK_DATASET_POOL, ACK_DOMAIN_FROM_DATA

ACK_TEXT = {
    ACK_DOMAIN_FROM_DATA: "Some domains are copied from the private data; the guarantee does not cover them.",
    ACK_DATASET_POOL: "Embedding replacements are drawn from the dataset itself: other people's real vectors "
    "are released.",
}

#: how the accountant added the parts up (``plan.composition.to_json()["method"]``), for the details
COMPOSITION_TEXT = {
    "basic": "basic composition (the parts' ε and δ add up)",
    "zcdp+basic": "the Gaussian columns composed in zCDP (their ρ add up), converted to (ε, δ), plus basic "
    "composition of the rest",
}


def _model_protection(unit, tr) -> str:
    """How the model unit protects the data, by the mechanism the plan settled for the loaded
    table (:func:`dpstudio.plan.model.for_rows`): the words must match what runs."""
    from dpstudio.plan.model import MECHANISM_NAMES

    if unit.mechanism_name == MECHANISM_NAMES["objective"]:
        return tr(
            "random noise is added to the model's training objective; the coefficients that fit the "
            "noisy objective are released (objective perturbation)"
        )
    if unit.mechanism_name == MECHANISM_NAMES["gibbs"]:
        return tr("the model's coefficients are drawn at random, favouring those that fit the data (Gibbs posterior)")
    return tr(
        "chosen when the model is fitted, from the table's row count: objective perturbation or the Gibbs posterior"
    )


class ReviewPage(WizardPage):
    key = "review"

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        self.view = QTextBrowser()
        self.view.setOpenExternalLinks(False)
        self.details_button = QToolButton()
        self.details_button.setObjectName("detailsToggle")
        self.details_button.setCheckable(True)
        self.details_button.setChecked(False)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setText(self.tr("Technical details (accounting, noise parameters, mechanisms)"))
        self.details_button.setToolTip(
            self.tr("For a statistician or an auditor: how the total was computed, part by part.")
        )
        self.details_button.toggled.connect(self._toggle_details)
        self.details = QTextBrowser()
        self.details.setObjectName("technicalDetails")
        self.details.setVisible(False)
        self._leak_worker = None
        lay = QVBoxLayout(self)
        lay.addWidget(self.view, 3)
        lay.addWidget(self.details_button)
        lay.addWidget(self.details, 2)

    def title(self):
        return self.tr("Review before release")

    def subtitle(self):
        return self.tr("Check the total privacy cost, the warnings and what you have acknowledged.")

    def help_text(self):
        return self.tr(
            "The total privacy loss is computed from the plan (every mechanism and every DP "
            "domain estimate), never typed in. Warnings name residual risks the guarantee does "
            "not cover; the report repeats them for the compliance officer. Open “Technical "
            "details” for the accountant's figures."
        )

    def isComplete(self):  # noqa: N802
        if not self.session.has_data or self.session.problems():
            return False
        plan, _ = self.session.plan()
        return plan is not None

    def html(self) -> str:
        return self.view.toHtml()

    def text(self) -> str:
        """The plain part as the user reads it."""
        return self.view.toPlainText()

    def details_text(self) -> str:
        return self.details.toPlainText()

    def _toggle_details(self, on: bool) -> None:
        self.details.setVisible(on)
        self.details_button.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)

    def on_data_changed(self):
        self.view.setHtml("")
        self.details.setHtml("")

    def refresh(self):
        s = self.session
        rec = s.recipe
        if rec is None:
            self.view.setHtml("")
            self.details.setHtml("")
            return
        tr = self.tr
        e = html.escape
        parts = []
        plan, err = s.plan()
        title, what, guarantee = release_text(rec.release.type)
        if rec.release.type == "record" and plan is not None and plan.guarantee == "semi-sensitive":
            # the heading names what is delivered: public columns copied make it semi-sensitive,
            # not the whole-record protection the record type names (audit finding)
            title = tr("Noise on every column not marked public (semi-sensitive protection)")
            guarantee = release_text("semi-sensitive")[2]
        parts.append(f"<h2>{e(title)}</h2><p>{e(what)}<br><i>{e(guarantee)}</i></p>")
        if rec.release.type == "semi-sensitive":
            parts.append(f"<p>{e(semi_sensitive_text())}</p>")
        elif plan is not None and plan.guarantee == "semi-sensitive":
            because = tr(
                "Some columns are marked public and released as they are, so this release's guarantee "
                "is “semi-sensitive”, not whole-record:"
            )
            parts.append(f"<p>{e(because)} {e(semi_sensitive_text())}</p>")
        if plan is not None:
            t = plan.total
            loss = f"ε = {t.epsilon:.4g}, δ = {fmt_delta(t.delta)}"
            parts.append(
                f"<h3>{e(tr('Total privacy loss (computed)'))}</h3><p style='font-size:16pt'><b>{loss}</b></p>"
                f"<p>{e(tr('What is protected: {0}.').format(guarantee_text(plan.guarantee)))}</p>"
            )
            parts.append(self._plain_table(plan))
        else:
            parts.append(
                f"<h3>{e(tr('Total privacy loss'))}</h3><p style='color:#D55E00'>"
                f"{e(tr('Not computable yet'))}: {e(err or '')}</p>"
            )

        problems = s.problems()
        if problems:
            parts.append(
                f"<h3 style='color:#D55E00'>{e(tr('Problems to fix ({0})').format(len(problems)))}</h3><ul>"
                + "".join(f"<li>{e(p)}</li>" for p in problems)
                + "</ul>"
            )

        warnings = list(plan.notes) if plan is not None else []
        for c in rec.columns:
            if c.domain is not None and c.domain.source == "data" and c.role not in ("identifier", "ignore"):
                warnings.append(
                    tr("column {0}: domain copied from the private data — {1}").format(
                        c.name, domain_source_text("data")[1]
                    )
                )
        if rec.randomness.seed is not None:
            warnings.append(
                tr(
                    "a fixed random seed ({0}) makes the noise reproducible by anyone who knows it: for tests only"
                ).format(rec.randomness.seed)
            )
        if rec.release.type in ("label", "semi-sensitive"):
            warnings.extend(self._leakage_lines(rec, plan))
        copied = self._copied_after_protection(plan)
        if copied:
            warnings.append(copied)
        dropped = [c.name for c in rec.columns if c.role in ("identifier", "ignore")]
        unchanged = self._unchanged(rec)
        parts.append(f"<h3>{e(tr('Warnings and residual risks'))}</h3>")
        parts.append(
            "<ul>" + "".join(f"<li>{e(w)}</li>" for w in warnings) + "</ul>" if warnings else f"<p>{e(tr('None.'))}</p>"
        )
        parts.append(f"<h3>{e(tr('Acknowledgements'))}</h3>")
        if rec.acknowledgements:
            parts.append(
                "<ul>" + "".join(f"<li>{e(tr(ACK_TEXT.get(a, a)))}</li>" for a in rec.acknowledgements) + "</ul>"
            )
        else:
            parts.append(f"<p>{e(tr('None needed.'))}</p>")
        parts.append(f"<h3>{e(tr('Risk summary'))}</h3><ul>")
        parts.append(f"<li>{e(tr('Dropped (not released): {0}').format(', '.join(dropped) or tr('none')))}</li>")
        unchanged_text = tr("Released unchanged (no protection): {0}").format(", ".join(unchanged) or tr("none"))
        parts.append(f"<li>{e(unchanged_text)}</li>")
        randomness = tr("cryptographically secure") if rec.randomness.secure else tr("fixed seed (test only)")
        parts.append(f"<li>{e(tr('Randomness: {0}').format(randomness))}</li>")
        parts.append("</ul>")
        self.view.setHtml("".join(parts))
        self.details.setHtml(self._details_html(rec, plan))

    # ---- the plain table and the technical details --------------------------------------
    def _plain_table(self, plan) -> str:
        """One row per part of the release: what protects it, its share of ε, the error to expect."""
        from dpstudio.gui.charts.preview import error_text, fmt_epsilon
        from dpstudio.gui.wizard.budget_charts import mechanism_title

        e = html.escape
        tr = self.tr
        head = "".join(
            f"<th align=left>{e(h)}</th>"
            for h in (tr("Part of the release"), tr("Protection"), tr("ε used"), tr("Expected error"))
        )
        rows = []
        notes: list[str] = []
        for u in plan.units:
            if u.mechanism_name in ("laplace", "gaussian", "rr", "metric") or u.kind == "domain":
                how = mechanism_title(u)
            elif u.kind == "density":  # the estimator's own description is for the details below
                how = tr("random noise added to the whole density curve (a smooth random function)")
            elif u.kind == "model":
                how = _model_protection(u, tr)
                why = u.facts.get("mechanism_choice")
                if why:
                    notes.append(tr("Mechanism of the model: {0}.").format(why))
            else:  # a synthesizer: its own plain description
                how = u.description or mechanism_title(u)
            cells = (u.name, how, fmt_epsilon(u.epsilon), error_text(u))
            rows.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
        note = tr(
            "Expected error: the typical difference between a released value and the true one "
            "(for categories: the chance a value is changed)."
        )
        if any(u.kind == "density" for u in plan.units):
            note += " " + tr(
                "For the density: the noise's typical size at each grid point, as a share of the height "
                "of a flat density over the bounds (the smoothing by the bandwidth comes on top)."
            )
        return (
            f"<table cellpadding=4 border=1 style='border-collapse:collapse'><tr>{head}</tr>{''.join(rows)}</table>"
            + "".join(f"<p>{e(n)}</p>" for n in notes)
            + f"<p style='color:gray'>{e(note)}</p>"
        )

    def _details_html(self, rec, plan) -> str:
        """The accountant's view: composition, each unit's mechanism id, (ε, δ), noise, floor,
        zCDP ρ, Gaussian-DP μ; the label's formal guarantee."""
        from dpstudio.gui.wizard.budget_charts import joint_gaussian_note, table_headers, unit_cells

        e = html.escape
        tr = self.tr
        if plan is None:
            return f"<p>{e(tr('No plan yet: fix the problems above.'))}</p>"
        comp = plan.composition.to_json()
        method = str(comp.get("method", ""))
        t = plan.total
        parts = [
            f"<h4>{e(tr('Accounting'))}</h4><p>"
            + e(tr("Guarantee: {0}; total ε = {1:.6g}, δ = {2}.").format(plan.guarantee, t.epsilon, fmt_delta(t.delta)))
            + "<br>"
            + e(tr("Composition: {0}.").format(tr(COMPOSITION_TEXT.get(method, method))))
            + "</p>"
        ]
        head = "".join(f"<th>{e(h)}</th>" for h in [*table_headers(), tr("Mechanism id"), "zCDP ρ", "GDP μ"])
        rows = []
        for u in plan.units:
            rho = u.noise.zcdp_rho if u.noise.zcdp_rho is not None else u.loss.zcdp_rho
            mu = u.loss.gdp_mu
            cells = [
                *unit_cells(u),
                u.mechanism_name,
                "—" if rho is None else f"{rho:.4g}",
                "—" if mu is None else f"{mu:.4g}",
            ]
            rows.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
        parts.append(
            f"<table cellpadding=4 border=1 style='border-collapse:collapse'><tr>{head}</tr>{''.join(rows)}</table>"
        )
        # the estimators' own descriptions (and their papers), kept out of the plain view above
        described = [u for u in plan.units if u.kind in ("synthesizer", "model", "density") and u.description]
        if described:
            parts.append("<ul>" + "".join(f"<li>{e(u.name)}: {e(u.description)}</li>" for u in described) + "</ul>")
        if any(u.noise.zcdp_rho is not None for u in plan.units):
            parts.append(f"<p><i>{e(joint_gaussian_note())}</i></p>")
        if t.rdp is not None:
            parts.append(f"<p>{e(tr('The total also has a Rényi-DP (RDP) curve; the report lists it.'))}</p>")
        if plan.label is not None:
            lab = plan.label
            parts.append(
                f"<h4>{e(tr('Label guarantee'))}</h4><p>"
                + e(
                    tr(
                        "Label {0}: ε = {1:.4g} relative to the public columns (the whole release counts); "
                        "its randomized response alone: ε = {2:.4g}."
                    ).format(lab.column, lab.epsilon, lab.label_unit_epsilon)
                )
                + "</p>"
            )
        if rec.acknowledgements:
            acks = tr("Acknowledgements recorded in the recipe: {0}").format(", ".join(rec.acknowledgements))
            parts.append(f"<p>{e(acks)}</p>")
        return "".join(parts)

    def _copied_after_protection(self, plan) -> str | None:
        """The ledger's word on columns this release copies that earlier releases of the same
        dataset protected (the release says it too, after its commit)."""
        if plan is None or not plan.unchanged_columns() or self.session.loaded is None:
            return None
        try:
            from dpstudio.gui.session import open_ledger
            from dpstudio.pipeline import earlier_protection_warning

            led = open_ledger()
            known = self.session.ledger_lookup(led)
            return earlier_protection_warning(led, known.get("dataset"), plan)
        except Exception:  # noqa: BLE001 - advice only; the budget panel reports a ledger it cannot use
            return None

    @staticmethod
    def _unchanged(rec):
        from dpstudio.recipe.validate import perturbed_roles

        if rec.release.type in ("synthetic", "model", "density"):
            return []
        roles = perturbed_roles(rec.release.type)
        return [c.name for c in rec.columns if c.role not in roles and c.role not in ("identifier", "ignore")]

    # ---- the attacker estimate (the same figure as the budget page's attacker chart) ----------
    def attacker_figure(self, rec, plan):
        """``(label epsilon, (uninformed, naive, informed) accuracy)`` read from the plan's label
        guarantee (``plan.label.label_unit_epsilon``) exactly as the budget page's attacker chart
        reads it; None while the attacker model is not fitted."""
        from dpstudio.gui.wizard.budget_charts import attacker_at, leakage_key

        key = leakage_key(self.session, rec)
        model = self.session.derived.get(key) if key is not None else None
        if model is None or plan is None or plan.label is None:
            return None
        eps_label = plan.label.label_unit_epsilon
        vals, _share = attacker_at(model, plan)
        return eps_label, vals

    def _leakage_lines(self, rec, plan):
        from dpstudio.gui.wizard.budget_charts import leakage_available, leakage_key

        figure = self.attacker_figure(rec, plan)
        if figure is None:
            key = leakage_key(self.session, rec)
            if key is not None and plan is not None and plan.label is not None and leakage_available():
                self._start_leakage(key)
                return [
                    self.tr(
                        "public columns are released unchanged; estimating how well an attacker could "
                        "guess the label from them…"
                    )
                ]
            return [self.tr("public columns are released unchanged; no attack estimate for this release")]
        eps_label, vals = figure
        return [
            self.tr(
                "at the label's ε = {3:.3g} (its randomized response alone) an attacker using public "
                "columns and the released label guesses it right {0:.0%} of the time (public columns "
                "alone: {1:.0%}, released label alone: {2:.0%}) — estimated from the raw data, for "
                "internal use only"
            ).format(vals[2], vals[0], vals[1], eps_label)
            + sample_note(self.session)
        ]

    def _start_leakage(self, key) -> None:
        """Fit the attacker model on a worker (the budget page uses the same one, in
        ``session.derived``), then show its figure."""
        if self._leak_worker is not None or self.session.frame is None:
            return
        from dpstudio.gui.wizard.budget_charts import fit_leakage

        public, label = key[2], key[3]
        token = self.session.data_token

        def done(model, k=key):
            self._leak_worker = None
            if self.session.data_token == token:
                self.session.derived[k] = model
                if self.isVisible():
                    self.refresh_now()
                else:
                    self._stale = True

        def failed(*_a):
            self._leak_worker = None

        self._leak_worker = self.runner.start(
            fit_leakage,
            self.session.frame,
            public,
            label,
            on_finished=done,
            on_failed=failed,
            on_cancelled=failed,
        )
