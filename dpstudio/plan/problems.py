"""The problems only the plan can see - each perturbed unit's share of epsilon, each Gaussian
unit's noise in grid steps - beside the recipe's own (``recipe.validate``), so a user fixes
everything in one pass; :func:`dpstudio.plan.compile.plan_problems` adds the compiler's refusals."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from dpstudio.recipe.model import Column, Recipe
from dpstudio.recipe.validate import (
    DROPPED_ROLES,
    MAX_EPSILON,
    MAX_GAUSSIAN_SIGMA_STEPS,
    MAX_WEIGHT,
    MIN_UNIT_EPSILON,
    MIN_WEIGHT,
    Problem,
    validate,
)

if TYPE_CHECKING:
    from dpstudio.engine.data.schema import TableSchema


#: the release options each release type reads (a synthetic release checks its own, by method):
#: any other key would be ignored while the user believes it set something
KNOWN_OPTIONS = {
    "record": ("clamp_to_bounds",),
    "label": ("clamp_to_bounds",),
    "semi-sensitive": ("clamp_to_bounds",),
    "density": ("bandwidth", "grid_size", "sample_rows"),
    "model": (
        "norm_bound",
        "lambda",
        "prior_scale",
        "sampler_delta_fraction",
        "sampler",
        "scaling",
        "max_steps",
        "mechanism",
        "noise",
        "tolerance_fraction",
        "reference_norm",
        "class_weights",
    ),
}
#: the mechanism parameters each mechanism reads
KNOWN_PARAMS = {"metric": ("pool",)}


@functools.cache
def _read_by_some_release() -> frozenset[str]:
    """Every release option some release type reads (a synthetic release: by method; fixed by the
    code, so computed once rather than at every compile)."""
    from dpstudio.plan.synthetic import option_names

    names = {k for opts in KNOWN_OPTIONS.values() for k in opts} | {"method", "domain_share"}
    for method in ("aim", "mst", "pearl", "merf"):
        names |= set(option_names(method))
    return frozenset(names)


def ignored_settings(recipe: Recipe) -> list[Problem]:
    """Release options and mechanism parameters that nothing reads (a typo, a made-up setting):
    refused, not silently ignored.  An option another release type reads (left by a change of
    type, e.g. a synthesizer's ``method`` on a record release) misleads no one and passes."""
    out: list[Problem] = []
    known = KNOWN_OPTIONS.get(recipe.release.type)
    if known is not None:
        anywhere = _read_by_some_release()
        unknown = sorted(str(k) for k in recipe.release.options.to_dict() if str(k) not in anywhere)
        if unknown:
            out.append(
                Problem(
                    f"release option(s) {', '.join(repr(k) for k in unknown)}: not read by a "
                    f"{recipe.release.type} release (its options: {', '.join(known)})",
                    field="release",
                    page="release",
                )
            )
    for c in recipe.columns:
        if c.mechanism is None or c.role in DROPPED_ROLES:
            continue
        takes = KNOWN_PARAMS.get(c.mechanism.name, ())
        unknown = sorted(str(k) for k in c.mechanism.params.to_dict() if str(k) not in takes)
        if unknown:
            out.append(
                Problem(
                    f"column {c.name!r}: mechanism parameter(s) {', '.join(repr(k) for k in unknown)} are not "
                    f"read by {c.mechanism.name!r}"
                    + (f" (it reads: {', '.join(takes)})" if takes else " (it takes none)"),
                    field=f"column:{c.name}",
                    page="release",
                )
            )
    return out


def recipe_and_unit_problems(recipe: Recipe, schema: TableSchema | None = None) -> list[Problem]:
    """The recipe's problems (given a TableSchema, also its fit to the data) and the units'
    (the compiler's own refusals are added by :func:`dpstudio.plan.compile.plan_problems`)."""
    p = validate(recipe, schema) + ignored_settings(recipe)
    b = recipe.budget
    weights_ok = all(
        MIN_WEIGHT <= c.mechanism.weight <= MAX_WEIGHT
        for c in recipe.columns
        if c.mechanism is not None and c.role not in DROPPED_ROLES
    )
    if (
        weights_ok
        and MIN_UNIT_EPSILON <= b.epsilon <= MAX_EPSILON
        and 0 <= b.delta < 1
        and recipe.release.type in ("record", "label", "semi-sensitive")
    ):
        p += unit_problems(recipe)
    return p


def _unit_field(cols: list[Column]) -> str:
    """A unit's field: its column, or "columns" for an embedding group of several columns."""
    return f"column:{cols[0].name}" if len(cols) == 1 else "columns"


def unit_problems(recipe: Recipe) -> list[Problem]:
    """Each perturbed unit's epsilon share, and each Gaussian unit's sigma in grid steps.

    Both follow from the total budget (the budget page) and the weights and mechanisms (the
    release page, one step earlier): they are shown on the budget page, the later of the two,
    so lowering epsilon never blocks a page the user has already left."""
    from dpstudio.engine.mechanisms.gaussian import analytic_gaussian_sigma, gaussian_grid
    from dpstudio.plan.record import _mechanism_name, budget_split, gaussian_group, perturbed_units

    p: list[Problem] = []
    split = budget_split(recipe)
    unit_cols = dict(perturbed_units(recipe))
    gaussians = [(n, cols) for n, cols in perturbed_units(recipe) if _mechanism_name(cols[0]) == "gaussian"]
    group = gaussian_group(recipe) if len(gaussians) > 1 else None
    for name, (eps, _) in split.items():
        if eps < MIN_UNIT_EPSILON:
            p.append(
                Problem(
                    f"column {name!r}: its share of epsilon is {eps:.3g} (budget x weight / total "
                    f"weight), below {MIN_UNIT_EPSILON:g}; raise its weight or the budget",
                    field=_unit_field(unit_cols[name]),
                    page="budget",
                )
            )
    for name, cols in gaussians:
        eps, delta = split[name]
        if eps < MIN_UNIT_EPSILON or not 0 < delta < 1:
            continue  # reported above, or by the delta checks
        d = cols[0].domain
        lo, hi = (
            (d.low, d.high)
            if d is not None and d.known
            else ((d.search_low, d.search_high) if d is not None and d.source == "dp" else (None, None))
        )
        if lo is None or hi is None or not hi > lo:
            continue  # no usable bounds: reported by the domain checks
        try:
            if group is not None:
                rho = group["rho_share"][name]
                steps = gaussian_grid(lo, hi, integer=cols[0].type == "integer", rho=rho).diam_steps
                sigma = steps / math.sqrt(2.0 * rho)
            else:
                steps = gaussian_grid(lo, hi, integer=cols[0].type == "integer", epsilon=eps, delta=delta).diam_steps
                sigma = analytic_gaussian_sigma(eps, delta, steps) if steps else 0.0
        except ValueError:
            sigma = math.inf
        if sigma > MAX_GAUSSIAN_SIGMA_STEPS:
            p.append(
                Problem(
                    f"column {name!r}: Gaussian noise at epsilon {eps:.3g}, delta {delta:.3g} needs "
                    f"sigma ~ {sigma:.3g} grid steps; the exact discrete Gaussian is limited to "
                    f"{MAX_GAUSSIAN_SIGMA_STEPS:g} - raise its epsilon share or use 'laplace'",
                    field=_unit_field(cols),
                    page="budget",
                )
            )
    return p
