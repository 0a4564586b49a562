"""Step 5 - Review: every problem, warning and acknowledgement, the total privacy loss
(computed from the recipe by compile_recipe, never typed) and a risk summary."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QTextBrowser, QVBoxLayout

from dpstudio.gui.texts import domain_source_text, release_text
from dpstudio.gui.wizard.base import WizardPage
from dpstudio.recipe.validate import ACK_DATASET_POOL, ACK_DOMAIN_FROM_DATA

ACK_TEXT = {
    ACK_DOMAIN_FROM_DATA: "Some domains are copied from the private data; the guarantee does not cover them.",
    ACK_DATASET_POOL: "Embedding replacements are drawn from the dataset itself: other people's real vectors "
    "are released.",
}


class ReviewPage(WizardPage):
    key = "review"

    def __init__(self, session, runner, parent=None):
        super().__init__(session, runner, parent)
        self.view = QTextBrowser()
        self.view.setOpenExternalLinks(False)
        lay = QVBoxLayout(self)
        lay.addWidget(self.view)

    def title(self):
        return self.tr("Review before release")

    def subtitle(self):
        return self.tr("Check the total privacy cost, the warnings and what you have acknowledged.")

    def help_text(self):
        return self.tr(
            "The total privacy loss is computed from the plan (every mechanism and every DP "
            "domain estimate), never typed in. Warnings name residual risks the guarantee does "
            "not cover; the report repeats them for the compliance officer."
        )

    def isComplete(self):  # noqa: N802
        if not self.session.has_data or self.session.problems():
            return False
        plan, _ = self.session.plan()
        return plan is not None

    def html(self) -> str:
        return self.view.toHtml()

    def refresh(self):
        s = self.session
        rec = s.recipe
        if rec is None:
            self.view.setHtml("")
            return
        tr = self.tr
        e = html.escape
        parts = []
        plan, err = s.plan()
        title, what, guarantee = release_text(rec.release.type)
        parts.append(f"<h2>{e(title)}</h2><p>{e(what)}<br><i>{e(guarantee)}</i></p>")
        if plan is not None:
            t = plan.total
            loss = f"ε = {t.epsilon:.4g}" + (f", δ = {t.delta:.2e}" if t.delta else ", δ = 0")
            parts.append(
                f"<h3>{e(tr('Total privacy loss (computed)'))}</h3><p style='font-size:16pt'><b>{loss}</b> "
                f"&nbsp;({e(plan.guarantee)} {e(tr('guarantee'))})</p>"
            )
            # every unit as the plan compiled it: its own (epsilon, delta), noise, expected error, floor
            from dpstudio.gui.wizard.budget_charts import joint_gaussian_note, table_headers, unit_cells

            head = "".join(f"<th>{e(h)}</th>" for h in table_headers())
            rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in unit_cells(u)) + "</tr>" for u in plan.units)
            parts.append(
                f"<table cellpadding=3 border=1 style='border-collapse:collapse'><tr>{head}</tr>{rows}</table>"
            )
            if any(u.noise.zcdp_rho is not None for u in plan.units):
                parts.append(f"<p><i>{e(joint_gaussian_note())}</i></p>")
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
        dropped = [c.name for c in rec.columns if c.role in ("identifier", "ignore")]
        unchanged = self._unchanged(rec)
        parts.append(f"<h3>{e(tr('Warnings and residual risks'))}</h3>")
        parts.append(
            "<ul>" + "".join(f"<li>{e(w)}</li>" for w in warnings) + "</ul>" if warnings else f"<p>{e(tr('None.'))}</p>"
        )
        parts.append(f"<h3>{e(tr('Acknowledgements'))}</h3>")
        if rec.acknowledgements:
            parts.append(
                "<ul>"
                + "".join(f"<li><b>{e(a)}</b>: {e(tr(ACK_TEXT.get(a, '')))}</li>" for a in rec.acknowledgements)
                + "</ul>"
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

    @staticmethod
    def _unchanged(rec):
        from dpstudio.recipe.validate import perturbed_roles

        if rec.release.type in ("synthetic", "model", "density"):
            return []
        roles = perturbed_roles(rec.release.type)
        return [c.name for c in rec.columns if c.role not in roles and c.role not in ("identifier", "ignore")]

    def _leakage_lines(self, rec, plan):
        """The attacker estimate read at the label's own epsilon (``plan.label.label_unit_epsilon``),
        exactly as the budget page's attacker chart reads it."""
        from dpstudio.gui.wizard.budget_charts import attacker_at, leakage_key

        key = leakage_key(self.session, rec)
        model = self.session.derived.get(key) if key is not None else None
        if model is None or plan is None or plan.label is None:
            return [
                self.tr(
                    "public columns are released unchanged; the attack estimate has not been computed "
                    "(open the Budget step to compute it)"
                )
            ]
        eps_label = plan.label.label_unit_epsilon
        vals, _share = attacker_at(model, eps_label)
        return [
            self.tr(
                "at the label's ε = {3:.3g} (its randomized response alone) an attacker using public "
                "columns and the released label guesses it right {0:.0%} of the time (public columns "
                "alone: {1:.0%}, released label alone: {2:.0%}) — estimated from the raw data, for "
                "internal use only"
            ).format(vals[2], vals[0], vals[1], eps_label)
        ]
