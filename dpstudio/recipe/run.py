"""Compile and run a recipe: the one release pipeline behind the CLI and the GUI.

Order matters and is the diffprivlib discipline: validate -> plan (total privacy loss) ->
check and reserve budget in the ledger -> draw noise -> write atomically -> record the spend.
Nothing random happens before the ledger has accepted the release.
"""
from __future__ import annotations

import datetime as _dt
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from dpstudio import __version__
from dpstudio.engine.progress import NEVER_CANCELLED, no_progress, sub_progress
from dpstudio.engine.release import release_module
from dpstudio.engine.release.base import ReleaseOutcome, ReleasePlan
from dpstudio.errors import RecipeError, UserError
from dpstudio.recipe.model import Recipe
from dpstudio.recipe.validate import validate


def compile_recipe(recipe: Recipe) -> ReleasePlan:
    """The plan (privacy accounting) of a structurally valid recipe; no data is read."""
    problems = validate(recipe)
    if problems:
        raise RecipeError(problems)
    return release_module(recipe.release.type).plan(recipe)


def check_recipe(recipe: Recipe, schema=None, frame=None) -> dict:
    """What ``dpstudio recipe check`` prints: validity, every problem, and the total loss.

    With the data (``frame``), label and semi-sensitive releases also get the effective epsilon
    for the label, which depends on how well the public columns predict it (raw-data estimate).
    """
    problems = validate(recipe, schema)
    out: dict = {"valid": not problems, "problems": problems, "release": recipe.release.type,
                 "budget": {"epsilon": recipe.budget.epsilon, "delta": recipe.budget.delta}}
    if not validate(recipe):
        try:
            plan = release_module(recipe.release.type).plan(recipe)
        except UserError as exc:
            out["valid"] = False
            out["problems"] = problems + [str(exc)]
        else:
            out.update(plan.to_json())
            extra = getattr(release_module(recipe.release.type), "label_guarantee", None)
            guarantee = extra(recipe, plan) if extra is not None else None
            if guarantee is not None:
                out["label_guarantee"] = guarantee
                if frame is not None and not problems:
                    from dpstudio.engine.leakage.risk import label_risk
                    views = label_risk(recipe, frame).get("label_views", {})
                    for name, view in views.items():
                        eff = view.get("effective_label_epsilon")
                        if eff is None:  # label release: the public columns' own information
                            eff = {"epsilon_label_rr": view.get("epsilon_label"),
                                   "informed_minus_naive_at_epsilon":
                                       view.get("at_epsilon", {}).get("informed_minus_naive")}
                        out["label_guarantee"]["effective_for_label"] = {
                            "column": name, **eff, "computed_on": "raw data - internal use only"}
    return out


@dataclass
class ReleaseResult:
    """Everything the report and the GUI need to describe a finished release."""

    recipe: Recipe
    plan: ReleasePlan
    outcome: ReleaseOutcome
    schema: object
    dataset_name: str
    input_sha256: str
    release_id: str
    started_at: str
    randomness: str
    output_path: str | None = None
    output_sha256: str | None = None
    ledger_before: dict | None = None
    ledger_after: dict | None = None
    risk: dict | None = None
    version: str = __version__
    warnings: list[str] = field(default_factory=list)


def load_input(recipe: Recipe, input_path=None, *, progress=no_progress, cancel=NEVER_CANCELLED):
    """Load the recipe's input (or ``input_path``) and check it is the file the recipe was made for."""
    from dpstudio.engine.data.loader import load_table

    path = input_path or recipe.input.path
    loaded = load_table(path, recipe.input.options.to_dict() or None, progress=progress, cancel=cancel)
    if recipe.input.sha256 and loaded.sha256 != recipe.input.sha256:
        raise UserError(f"{path} is not the file this recipe was made for (SHA-256 {loaded.sha256[:12]}... "
                        f"!= {recipe.input.sha256[:12]}...); make a new recipe for it")
    return loaded


def execute_release(recipe: Recipe, *, output_path, input_path=None, ledger=None, report_path=None,
                    report_variant: str = "internal", with_risk: bool = True, progress=no_progress,
                    cancel=NEVER_CANCELLED) -> ReleaseResult:
    """Run a whole release: load, validate, account, reserve budget, perturb, write, record."""
    from dpstudio.engine.data.schema import infer_schema
    from dpstudio.engine.rng import make_random_source
    from dpstudio.export import format_for, write_table, write_text
    from dpstudio.recipe.build import fill_domains_from_data

    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    release_id = uuid.uuid4().hex[:16]
    output_path = Path(output_path)
    out_fmt = format_for(output_path, recipe.outputs.format)

    loaded = load_input(recipe, input_path, progress=sub_progress(progress, 0.0, 0.15), cancel=cancel)
    frame = loaded.frame
    schema = infer_schema(frame)
    problems = validate(recipe, schema)
    if problems:
        raise RecipeError(problems)
    recipe = fill_domains_from_data(recipe, frame)
    module = release_module(recipe.release.type)
    plan = module.plan(recipe)
    cancel.check()

    reservation = None
    ledger_before = None
    if ledger is not None:
        ledger_before = ledger.summary(loaded.sha256)
        # refuses (BudgetError) before any noise is drawn
        reservation = ledger.reserve(loaded.sha256, dataset_name=Path(loaded.path).name,
                                     loss=plan.total, release_type=recipe.release.type,
                                     recipe_sha256=recipe.sha256(), output_path=str(output_path))
    try:
        rng = make_random_source(recipe.randomness.seed)
        outcome = module.run(recipe, frame, plan, rng, progress=sub_progress(progress, 0.15, 0.85),
                             cancel=cancel)
        cancel.check()
        progress(0.86, "writing output")
        if outcome.data is not None:
            if ledger is not None:
                output_sha = ledger.write_and_commit(
                    reservation, output_path,
                    lambda tmp: write_table(outcome.data, tmp, fmt=out_fmt,
                                            formula_protection=recipe.outputs.formula_protection,
                                            cancel=cancel))
            else:
                output_sha = write_table(outcome.data, output_path, fmt=out_fmt,
                                         formula_protection=recipe.outputs.formula_protection, cancel=cancel)
        else:
            import json
            text = json.dumps(outcome.artifact, indent=2)
            if ledger is not None:
                output_sha = ledger.write_and_commit(reservation, output_path,
                                                     lambda tmp: write_text(text, tmp))
            else:
                output_sha = write_text(text, output_path)
    except BaseException:
        if reservation is not None:
            ledger.abort(reservation)
        raise

    if outcome.data is not None and outcome.artifact is not None:
        # e.g. a density with sampled values: the table is the output, the JSON goes beside it
        import json
        write_text(json.dumps(outcome.artifact, indent=2),
                   output_path.with_name(output_path.stem + ".artifact.json"))
    result = ReleaseResult(recipe=recipe, plan=plan, outcome=outcome, schema=schema,
                           dataset_name=Path(loaded.path).name, input_sha256=loaded.sha256,
                           release_id=release_id, started_at=started, randomness=rng.describe(),
                           output_path=str(output_path), output_sha256=output_sha,
                           ledger_before=ledger_before,
                           ledger_after=ledger.summary(loaded.sha256) if ledger is not None else None,
                           warnings=list(plan.notes))
    if recipe.randomness.seed is not None:
        result.warnings.append(f"a fixed random seed ({recipe.randomness.seed}) was used: the noise is "
                               f"reproducible by anyone who knows it - not for production releases")
    # synthetic-data risk needs a second fit on a training split: only on request (dpstudio risk)
    if report_path is not None and report_variant == "internal" and with_risk \
            and recipe.release.type != "synthetic":
        progress(0.88, "estimating residual risks (raw data, internal report only)")
        try:
            from dpstudio.engine.leakage.risk import risk_for_recipe
            result.risk = risk_for_recipe(recipe, frame, seed=0)
        except Exception as exc:  # the release is done; a failed estimate must not lose it
            result.warnings.append(f"risk estimate unavailable: {type(exc).__name__}: {exc}")
    if report_path is not None:
        progress(0.9, "writing report")
        from dpstudio.report import write_report
        write_report(result, report_path, variant=report_variant, frame=frame)
    progress(1.0, "done")
    return result
