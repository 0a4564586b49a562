"""Compile a recipe into a :class:`~dpstudio.plan.units.ReleasePlan`, and execute a plan.

``compile_plan`` reads no data and draws no noise: every number the product shows before a
release (``recipe check``, the wizard's budget table and charts, the Review page) is a field of
its result, and the ledger reserves its total.  ``execute`` runs the plan's domain estimates,
finalises the units that depend on them, and draws the noise with the finalised plan's own
mechanism objects; the report reads that finalised plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import RecipeError, UserError
from dpstudio.plan.units import ReleaseOutcome, ReleasePlan
from dpstudio.recipe.model import Recipe
from dpstudio.recipe.validate import Problem

if TYPE_CHECKING:
    from dpstudio.engine.data.schema import TableSchema

RELEASE_TYPES = ("record", "label", "semi-sensitive", "synthetic", "model", "density")


class ReleaseModule(Protocol):
    """What each release-type module provides (:mod:`~dpstudio.plan.record`, ``synthetic``, ...)."""

    def compile(self, recipe: Recipe) -> ReleasePlan: ...

    def execute(
        self,
        plan: ReleasePlan,
        frame: pd.DataFrame,
        rng: RandomSource,
        *,
        progress: ProgressCallback = ...,
        cancel: CancelToken = ...,
    ) -> ReleaseOutcome: ...


def release_module(release_type: str) -> ReleaseModule:
    """The module that compiles and executes ``release_type`` (``compile``, ``execute``)."""
    if release_type in ("record", "label", "semi-sensitive"):
        from dpstudio.plan import record

        return record
    if release_type == "synthetic":
        from dpstudio.plan import synthetic

        return synthetic
    if release_type == "model":
        from dpstudio.plan import model

        return model
    if release_type == "density":
        from dpstudio.plan import density

        return density
    raise UserError(f"unknown release type {release_type!r}; choose one of {', '.join(RELEASE_TYPES)}")


def compile_checked(
    recipe: Recipe, schema: TableSchema | None = None, *, check_targets: bool = True
) -> tuple[ReleasePlan | None, list[Problem]]:
    """``(plan, [])`` for a recipe that compiles, ``(None, problems)`` otherwise: every problem the
    recipe's validation, the units' limits and the compiler itself find, each a typed
    :class:`~dpstudio.recipe.validate.Problem` that names the wizard page that fixes it.  A plan
    that misses the recipe's accuracy targets is refused too, unless ``check_targets`` is off
    (the budget page's previews: the plan at a budget the user is still choosing)."""
    from dpstudio.plan.problems import recipe_and_unit_problems

    problems = recipe_and_unit_problems(recipe, schema)
    if problems:
        return None, problems
    try:
        plan = release_module(recipe.release.type).compile(recipe)
    except RecipeError as exc:  # the compiler's refusals are typed where they are made
        typed = [p if isinstance(p, Problem) else Problem(p, field="release", page="release") for p in exc.problems]
        return None, typed
    except UserError as exc:
        return None, [Problem(str(exc), field="release", page="release")]
    if check_targets and recipe.budget.targets:
        from dpstudio.plan.solve import unmet_targets

        missed = unmet_targets(plan)
        if missed:
            return None, missed
    return plan, []


def for_rows(plan: ReleasePlan, n_rows: int) -> ReleasePlan:
    """``plan`` settled for the table's row count (public under replace-one neighbours), before
    the ledger reserves its total: only a model release's charge depends on it
    (:func:`dpstudio.plan.model.for_rows`); a density's noise does, and is settled here so the
    figures printed before the release are the ones it draws with
    (:func:`dpstudio.plan.density.for_rows`)."""
    if plan.release_type == "model":
        from dpstudio.plan import model

        return model.for_rows(plan, n_rows)
    if plan.release_type == "density":
        from dpstudio.plan import density

        return density.for_rows(plan, n_rows)
    return plan


def plan_problems(recipe: Recipe, schema: TableSchema | None = None) -> list[Problem]:
    """Every problem that stops ``recipe`` from compiling (empty: it compiles)."""
    return compile_checked(recipe, schema)[1]


def compile_plan(recipe: Recipe, schema: TableSchema | None = None) -> ReleasePlan:
    """The compiled plan of a valid recipe (and, given the data's public schema, its fit to it).

    Raises :class:`RecipeError` listing every problem when the recipe cannot be released."""
    plan, problems = compile_checked(recipe, schema)
    if plan is None:
        raise RecipeError(problems)
    return plan


def execute(
    plan: ReleasePlan,
    frame: pd.DataFrame,
    rng: RandomSource,
    *,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    block_rows: int | None = None,
) -> ReleaseOutcome:
    """Release ``frame`` as ``plan`` says (a record release block by block, ``block_rows`` rows
    each: the default is the streamed engine's).  ``outcome.final_plan`` is the plan whose mechanism
    objects drew the noise (``outcome.drawn_by``); its total never exceeds ``plan.total``."""
    if plan.recipe is None:
        raise ValueError("this plan was not compiled from a recipe")
    module = release_module(plan.release_type)
    if block_rows is not None and plan.release_type in ("record", "label", "semi-sensitive"):
        outcome: ReleaseOutcome = module.execute(  # type: ignore[call-arg]
            plan, frame, rng, progress=progress, cancel=cancel, block_rows=block_rows
        )
    else:
        outcome = module.execute(plan, frame, rng, progress=progress, cancel=cancel)
    if outcome.final_plan is None:
        outcome.final_plan = plan
    return outcome
