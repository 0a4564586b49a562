"""Domain-estimation units: domains estimated with DP at release time come first in every plan.

Each is a small calibrated object whose ``release`` is the exact mechanism of
:mod:`dpstudio.engine.domains` (bounds: two exponential-mechanism quantiles on a public grid;
categories: noisy counts of public candidates, or partition selection), and whose output set is
fixed by public inputs only.  The plan is finalised from their outputs
(:func:`dpstudio.plan.compile.execute`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError
from dpstudio.plan.units import NoiseParameters, PlanUnit, ReleasePlan, UnitMechanism
from dpstudio.recipe.model import Column, Domain, Recipe


def _category_strings(series: pd.Series) -> npt.NDArray[Any]:
    """Values as the strings category lists use: integral floats as "1", not "1.0"."""
    if pd.api.types.is_float_dtype(series.dtype):
        f = series.to_numpy(dtype=np.float64)
        if np.all(f == np.round(f)):
            return np.round(f).astype(np.int64).astype(str)
    return series.astype(str).to_numpy()


def needs_estimate(col: Column) -> bool:
    d = col.domain
    return d is not None and d.source == "dp" and not d.known and col.role not in ("identifier", "ignore")


@dataclass(frozen=True)
class BoundsEstimate:
    """epsilon-DP bounds of one numeric column on the public grid of its search range
    (:func:`dpstudio.engine.domains.dp_bounds`; docs/domains.md §DP bounds)."""

    column: str
    epsilon: float
    search_low: float
    search_high: float
    integer: bool
    #: charged in zCDP (a synthetic release's joint budget): two exponential-mechanism draws at
    #: epsilon/2, each (epsilon/2)^2/8-zCDP (bounded range, Cesar & Rogers 2021): epsilon^2/16
    zcdp: bool = False

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=0.0,
            kind="dp",
            label=f"DP estimate of the bounds of {self.column}",
            zcdp_rho=self.epsilon**2 / 16.0 if self.zcdp else None,
        )

    def release(self, x: npt.NDArray[np.float64], rng: RandomSource) -> tuple[float, float]:
        from dpstudio.engine import domains as dp_domains

        low, high, _loss = dp_domains.dp_bounds(
            x,
            epsilon=self.epsilon,
            coarse_low=self.search_low,
            coarse_high=self.search_high,
            rng=rng,
            integer=self.integer,
        )
        if not low < high:
            # both quantiles drew the same grid point: widen to its grid neighbour, so the
            # published bounds stay on the public grid (post-processing)
            low, high = dp_domains.next_grid_point(low, self.search_low, self.search_high, integer=self.integer)
        return float(low), float(high)


@dataclass(frozen=True)
class CategoryDiscovery:
    """(epsilon, delta)-DP category list of one column: noisy counts of a public candidate list,
    or partition selection without one (:func:`dpstudio.engine.domains.dp_select_categories`)."""

    column: str
    epsilon: float
    delta: float
    candidates: tuple[str, ...] | None
    #: Gaussian noise of this scale on the counts, accounted in zCDP (a synthetic release's joint
    #: budget; :func:`dpstudio.engine.domains.dp_select_categories_gaussian`); None: Laplace
    #: noise at (epsilon, delta).  ``epsilon``/``delta`` are then the stand-alone figure.
    sigma: float | None = None
    #: without a candidate list: the delta allowed for a value held by one record to be kept
    #: (the approximate-zCDP delta this unit charges; the threshold keeps it at most this)
    selection_delta: float | None = None
    #: with a candidate list in a Gaussian-DP plan: the unit's mu allowance (its noise may be
    #: calibrated below it, see ``dpstudio.plan.synthetic``); None: not part of a GDP plan
    gdp_mu: float | None = None

    @property
    def threshold(self) -> int | None:
        """Partition selection's integer threshold (None with candidates or Laplace noise)."""
        if self.sigma is None or self.candidates or self.selection_delta is None:
            return None
        from dpstudio.engine.domains import gaussian_partition_threshold

        return gaussian_partition_threshold(self.sigma, self.selection_delta)

    def privacy_loss(self) -> PrivacyLoss:
        label = f"DP estimate of the categories of {self.column}"
        if self.sigma is None:
            return PrivacyLoss(epsilon=self.epsilon, delta=self.delta, kind="dp", label=label)
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            kind="dp",
            label=label,
            zcdp_rho=1.0 / self.sigma**2,
            zcdp_delta=0.0 if self.candidates else float(self.selection_delta or 0.0),
            gdp_mu=self.gdp_mu,
        )

    def release(self, values: npt.NDArray[Any], rng: RandomSource) -> tuple[str, ...]:
        from dpstudio.engine import domains as dp_domains

        if self.sigma is not None:
            kept, _ = dp_domains.dp_select_categories_gaussian(
                values,
                sigma=self.sigma,
                delta=self.delta,
                rng=rng,
                candidates=list(self.candidates) if self.candidates else None,
                selection_delta=self.selection_delta,
            )
            return tuple(str(x) for x in kept)
        cats, _loss = dp_domains.dp_select_categories(
            values,
            epsilon=self.epsilon,
            delta=self.delta,
            rng=rng,
            candidates=list(self.candidates) if self.candidates else None,
        )
        return tuple(str(x) for x in cats)


@dataclass(frozen=True)
class DomainCharge:
    """A DP domain estimate's part of a budget planned jointly with the rest of the release (a
    synthetic release: ``dpstudio.plan.synthetic``).  ``rho``: its zCDP charge; ``sigma``: the
    Gaussian noise on category counts (None for bounds); ``epsilon_bounds``: the bounds'
    exponential-mechanism epsilon (``rho = epsilon^2/16``); ``selection_delta``: partition
    selection's approximate-zCDP delta; ``gdp_mu``: the mu allowance in a Gaussian-DP plan;
    ``epsilon``/``delta``: the stand-alone figure; ``share``: its (epsilon, delta) share of the
    typed budget (what the budget page and the report show)."""

    rho: float
    epsilon: float
    delta: float
    share: tuple[float, float]
    sigma: float | None = None
    epsilon_bounds: float | None = None
    selection_delta: float | None = None
    gdp_mu: float | None = None


def domain_units(recipe: Recipe, charges: Mapping[str, DomainCharge] | None = None) -> list[PlanUnit]:
    """One unit per domain estimated with DP: still to be run (with its calibrated object), or run
    earlier (e.g. in the GUI), whose cost still belongs to this release's total.  ``charges``:
    the column's part of a jointly planned budget (synthetic releases), which replaces the
    column's own cost for an estimate still to run."""
    out: list[PlanUnit] = []
    for c in recipe.columns:
        d = c.domain
        if d is None or d.source != "dp" or d.cost is None or not (needs_estimate(c) or d.known):
            continue  # a dropped column's domain that was never estimated costs nothing
        what = "bounds" if d.kind == "numeric" else "categories"
        mech: UnitMechanism | None = None
        charge = charges.get(c.name) if charges is not None and needs_estimate(c) else None
        noise = NoiseParameters()
        share = (float(d.cost.epsilon), float(d.cost.delta))
        if needs_estimate(c):
            label = f"DP estimate of the {what} of {c.name}"
            if d.kind == "numeric":
                assert d.search_low is not None and d.search_high is not None, c.name  # validated
                eps_b = float(d.cost.epsilon) if charge is None else float(charge.epsilon_bounds or 0.0)
                mech = BoundsEstimate(
                    c.name,
                    eps_b,
                    float(d.search_low),
                    float(d.search_high),
                    c.type == "integer",
                    zcdp=charge is not None,
                )
            elif charge is None:
                mech = CategoryDiscovery(
                    c.name, float(d.cost.epsilon), float(d.cost.delta), tuple(d.candidates) if d.candidates else None
                )
            else:
                mech = CategoryDiscovery(
                    c.name,
                    float(charge.epsilon),
                    float(charge.delta),
                    tuple(d.candidates) if d.candidates else None,
                    sigma=charge.sigma,
                    selection_delta=None if d.candidates else charge.selection_delta,
                    gdp_mu=charge.gdp_mu,
                )
                noise = NoiseParameters(sigma=charge.sigma)
            name = (
                "exponential-mechanism quantiles"
                if d.kind == "numeric"
                else ("noisy candidate counts" if d.candidates else "partition selection")
            )
            if charge is not None:
                share = charge.share
                if d.kind != "numeric":
                    name = "Gaussian " + name
        else:
            label = f"DP estimate of the {what} of {c.name} (done before the release)"
            name = "done before the release"
        loss = (
            mech.privacy_loss()
            if charge is not None and mech is not None
            else PrivacyLoss(epsilon=d.cost.epsilon, delta=d.cost.delta, label=label, kind="dp")
        )
        search = (
            (float(d.search_low), float(d.search_high))
            if d.kind == "numeric" and d.search_low is not None and d.search_high is not None
            else None
        )
        # a jointly planned estimate's part of the budget, as ``recipe check`` prints it (the loss's)
        facts: dict[str, float] = {}
        if charge is not None:
            if loss.zcdp_rho is not None:
                facts["zcdp_rho"] = float(loss.zcdp_rho)
            if loss.zcdp_delta:
                facts["approximate_zcdp_delta"] = float(loss.zcdp_delta)
            if loss.gdp_mu is not None:
                facts["gdp_mu"] = float(loss.gdp_mu)
            threshold = getattr(mech, "threshold", None)
            if threshold is not None:
                facts["threshold"] = float(threshold)
        out.append(
            PlanUnit(
                name=f"{what} of {c.name}",
                kind="domain",
                columns=(c.name,),
                mechanism_name=name,
                loss=loss,
                mechanism=mech,
                budget_share=share,
                noise=noise,
                search_range=search,
                domain_source="dp",
                description=label,
                facts=facts,
            )
        )
    return out


def run_domain_units(
    recipe: Recipe,
    units: tuple[PlanUnit, ...],
    frame: pd.DataFrame,
    rng: RandomSource,
    drawn_by: dict[str, UnitMechanism],
) -> tuple[Recipe, dict[str, Any]]:
    """Run the plan's domain units that are still to run, in plan order; the recipe completed
    with their outputs (post-processing of DP outputs only), and the public notes."""
    notes: dict[str, Any] = {}
    new_domain: dict[str, Domain] = {}
    for u in units:
        if u.kind != "domain" or u.mechanism is None:
            continue
        col = recipe.column(u.columns[0])
        d = col.domain
        assert d is not None, col.name  # a domain unit's column has a DP domain
        mech = u.mechanism
        if isinstance(mech, BoundsEstimate):
            x = frame[col.name].to_numpy(dtype=np.float64, na_value=np.nan)
            low, high = mech.release(x[~np.isnan(x)], rng)
            new_domain[col.name] = replace(d, low=low, high=high)
            notes[f"dp_domain:{col.name}"] = [low, high]
        else:
            cats: tuple[str, ...] = mech.release(_category_strings(frame[col.name].dropna()), rng)
            other = d.other if d.other is not None else "(other)"
            cats = cats + ((other,) if other not in cats else ())
            # a synthetic release goes on with the column reduced to its "other" value (useless
            # but honest, and the estimate's cost is already part of the release's total); the
            # other types need two categories for their randomized response, so they stop
            if len(cats) < 2 and recipe.release.type != "synthetic":
                raise UserError(
                    f"column {col.name!r}: DP category discovery kept no category; "
                    "give a public category list, or more budget for this estimate"
                )
            new_domain[col.name] = replace(d, categories=cats, other=other)
            notes[f"dp_domain:{col.name}"] = list(cats)
        drawn_by[u.name] = mech
    if not new_domain:
        return recipe, notes
    cols = tuple(replace(c, domain=new_domain[c.name]) if c.name in new_domain else c for c in recipe.columns)
    return replace(recipe, columns=cols), notes


def resolve_dp_domains(recipe: Recipe, frame: pd.DataFrame, rng: RandomSource) -> tuple[Recipe, dict[str, Any]]:
    """Run every DP domain estimate ``recipe`` asks for (the domain units of its plan)."""
    return run_domain_units(recipe, tuple(domain_units(recipe)), frame, rng, {})


def start_central(
    plan: ReleasePlan, frame: pd.DataFrame, rng: RandomSource, kind: str
) -> tuple[Recipe, dict[str, Any], ReleasePlan, PlanUnit, dict[str, UnitMechanism]]:
    """The first steps of a release with one central unit (synthesizer, model, density): run the
    domain units, finalise the plan with their outputs (the central unit's object depends on no
    estimate: it reads the domains when it runs), and hand back ``(recipe, domain notes, final
    plan, the unit of ``kind``, drawn_by)``."""
    if plan.recipe is None:
        raise ValueError("this plan was not compiled from a recipe")
    drawn_by: dict[str, UnitMechanism] = {}
    recipe, notes = run_domain_units(plan.recipe, plan.units, frame, rng, drawn_by)
    final = plan if recipe is plan.recipe else replace(plan, recipe=recipe)
    unit = next(u for u in final.units if u.kind == kind)
    return recipe, notes, final, unit, drawn_by
