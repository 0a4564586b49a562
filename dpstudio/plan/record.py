"""Record-level releases: ``record``, ``label`` and ``semi-sensitive``.

Each record is perturbed independently by per-column mechanisms; by Jazbec 2018, Thm 4.7, the
table is (eps, delta)-DP under replace-one neighbours when each one-record mechanism is, and by
Thm 4.3 every later use of the released table is post-processing.  The per-record budget is
split across the perturbed columns by weight and recombined by basic composition (exact for the
pure-DP components), except that two or more Gaussian columns share one zCDP budget (their rho's
add: :func:`gaussian_group`), which gives them much less noise for the same (eps, delta).  The
plan is made before any data is read; a column whose bounds are estimated with DP is planned on
its public search range and marked provisional (worst case), and :func:`execute` returns the
finalised plan, whose mechanism objects drew the noise (``ReleaseOutcome.final_plan``).

``label`` perturbs only the label (a label-DP guarantee); ``semi-sensitive`` perturbs the
sensitive features and the label and leaves public columns untouched (a
semi-sensitive-DP guarantee whose label protection is eroded by public features: see
``dpstudio.engine.leakage``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine.accounting import PrivacyLoss, compose
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError
from dpstudio.plan.units import (
    LabelGuarantee,
    NoiseParameters,
    PlanUnit,
    ReleaseOutcome,
    ReleasePlan,
    UnitMechanism,
    refusal,
)
from dpstudio.recipe.model import Column, Recipe
from dpstudio.recipe.validate import default_mechanism, perturbed_roles

GUARANTEE = {"record": "record-level", "label": "label", "semi-sensitive": "semi-sensitive"}
LOSS_KIND = {"record": "dp", "label": "label", "semi-sensitive": "semi-sensitive"}

if TYPE_CHECKING:
    from dpstudio.engine.mechanisms import Mechanism


def _mechanism_name(col: Column) -> str:
    return col.mechanism.name if col.mechanism is not None else default_mechanism(col.type, col.role)


def perturbed_units(recipe: Recipe) -> list[tuple[str, list[Column]]]:
    """Units of perturbation: one per column, one per embedding group (its columns together)."""
    roles = perturbed_roles(recipe.release.type)
    units: list[tuple[str, list[Column]]] = []
    groups: dict[str, list[Column]] = {}
    for c in recipe.columns:
        if c.role not in roles:
            continue
        if c.role == "embedding" and c.type != "vector":
            key = c.group or c.name
            if key not in groups:
                groups[key] = []
                units.append((key, groups[key]))
            groups[key].append(c)
        else:
            units.append((c.name, [c]))
    return units


def budget_split(recipe: Recipe) -> dict[str, tuple[float, float]]:
    """Each perturbation unit's share of the budget: epsilon by weight; delta to the Gaussian
    units by weight (or, when there are none, by weight to all units — Laplace and RR then use
    their exact (eps, delta) calibrations).

    Two or more Gaussian units are not calibrated on their own share: they are calibrated
    jointly on the sum of their shares (:func:`gaussian_group`)."""
    units = perturbed_units(recipe)
    if not units:
        return {}
    weights = np.array([u[1][0].mechanism.weight if u[1][0].mechanism else 1.0 for u in units], float)
    eps = recipe.budget.epsilon * weights / weights.sum()
    names = [_mechanism_name(u[1][0]) for u in units]
    gauss = np.array([n == "gaussian" for n in names])
    delta = np.zeros(len(units))
    if recipe.budget.delta > 0:
        share = weights * gauss if gauss.any() else weights
        delta = recipe.budget.delta * share / share.sum()
    return {u[0]: (float(e), float(d)) for u, e, d in zip(units, eps, delta, strict=True)}


# relative margin kept off the group's rho so float rounding of the sigma's never exceeds it
_RHO_MARGIN = 1e-9


class GaussianGroup(TypedDict):
    """The joint zCDP calibration of a record's Gaussian units (:func:`gaussian_group`)."""

    epsilon: float
    delta: float
    rho: float
    units: list[str]
    rho_share: dict[str, float]


@functools.lru_cache(maxsize=1024)
def _rho_for(epsilon: float, delta: float) -> float:
    """zCDP budget of a Gaussian group (a pure function of two floats, asked for by every
    compile: the previews compile a recipe at many budgets)."""
    from dpstudio.engine.accounting import zcdp_rho_for

    return float(zcdp_rho_for(epsilon, delta))


def gaussian_group(recipe: Recipe) -> GaussianGroup | None:
    """Joint calibration of the record's Gaussian units (None when there are fewer than two).

    The group gets the sum of its units' epsilon shares and the whole delta, and one zCDP budget
    ``rho`` = the largest with ``zcdp_epsilon(rho, delta) <= eps_G`` (Canonne, Kamath & Steinke
    2020, Prop. 12).  Unit i gets ``rho_i = rho w_i / sum w`` (its sigma is D_i / sqrt(2 rho_i)
    grid steps), so the discrete Gaussians together are rho-zCDP (CKS 2020 Prop. 5 per column,
    Bun & Steinke 2016 Lemma 2.3 for the sum) and (eps_G, delta)-DP — instead of
    (sum eps_i, sum delta_i) from calibrating each column on its own (eps_i, delta_i) share, which
    at four columns and (1, 1e-6) means about 45 % less noise for the same guarantee.
    """
    split = budget_split(recipe)
    gauss = [(name, cols) for name, cols in perturbed_units(recipe) if _mechanism_name(cols[0]) == "gaussian"]
    if len(gauss) < 2:
        return None
    eps_g = float(sum(split[n][0] for n, _ in gauss))
    delta_g = float(sum(split[n][1] for n, _ in gauss))
    if not (eps_g > 0 and 0 < delta_g < 1):
        return None  # validation reports the missing delta; nothing to calibrate
    rho = _rho_for(eps_g, delta_g) * (1.0 - _RHO_MARGIN)
    w = np.array([cols[0].mechanism.weight if cols[0].mechanism else 1.0 for _, cols in gauss], float)
    shares = rho * w / w.sum()
    return {
        "epsilon": eps_g,
        "delta": delta_g,
        "rho": rho,
        "units": [n for n, _ in gauss],
        "rho_share": {n: float(r) for (n, _), r in zip(gauss, shares, strict=True)},
    }


def build_mechanism(
    col: Column, epsilon: float, delta: float, pool: npt.ArrayLike | None = None, rho: float | None = None
) -> Mechanism:
    """The engine mechanism object for one unit (columns share one for an embedding group).

    ``rho``: the unit's share of a jointly calibrated zCDP budget (Gaussian units only)."""
    from dpstudio.engine.mechanisms import MECHANISMS

    name = _mechanism_name(col)
    if name == "metric":
        if pool is None:
            raise UserError(f"column {col.name!r}: metric selection needs its public pool loaded")
        mech: Mechanism = MECHANISMS["metric"](epsilon=epsilon, pool=pool)
        return mech
    d = col.domain
    kwargs: dict[str, Any]
    if name in ("laplace", "gaussian"):
        assert d is not None and d.low is not None and d.high is not None, col.name
        kwargs = dict(epsilon=epsilon, low=float(d.low), high=float(d.high), integer=col.type == "integer")
        if name == "gaussian" or delta > 0:
            kwargs["delta"] = delta
        if name == "gaussian" and rho is not None:
            del kwargs["epsilon"]
            kwargs["rho"] = rho
        mech = MECHANISMS[name](**kwargs)
        return mech
    cats = _categories(col)
    kwargs = dict(epsilon=epsilon, n_categories=len(cats))
    if delta > 0:
        kwargs["delta"] = delta
    mech = MECHANISMS["rr"](**kwargs)
    return mech


def _categories(col: Column) -> tuple[str, ...]:
    assert col.domain is not None and col.domain.categories is not None, col.name
    return tuple(col.domain.categories)


def _unit_loss(name: str, col: Column, mech: UnitMechanism, kind: str) -> PrivacyLoss:
    loss = mech.privacy_loss()
    # metric selection is eps*d_chi-private with d_chi <= 1, hence eps-DP for the replaced vector
    label = f"{_mechanism_name(col)} on {name}"
    return PrivacyLoss(
        epsilon=loss.epsilon,
        delta=loss.delta,
        label=label,
        rdp=loss.rdp,
        gdp_mu=loss.gdp_mu,
        kind=kind,
        details=dict(loss.details),
        zcdp_rho=loss.zcdp_rho,
    )


class _PlaceholderPool:
    """Stands in for an embedding pool while compiling (the accounting does not depend on it)."""

    def __init__(self, dim: int) -> None:
        self.array = np.eye(max(dim, 2), dtype=np.float32)


def _with_search_range(col: Column) -> Column:
    """The column with its DP-estimated domain replaced by the public search range (worst case)."""
    from dataclasses import replace

    d = col.domain
    assert d is not None, col.name
    if d.kind == "numeric":
        return replace(col, domain=replace(d, low=d.search_low, high=d.search_high))
    if not d.candidates:
        # no public candidate list: the DP list can be anything, so there is no worst case to
        # show (the unit prints no noise figures); the placeholder only gives the accounting
        return replace(col, domain=replace(d, categories=("?", "??")))
    # the DP list keeps some candidates and always gets 'other': the most categories, hence the
    # largest error, is every candidate plus 'other'
    other = d.other if d.other is not None else "(other)"
    return replace(
        col, domain=replace(d, categories=tuple(d.candidates) + ((other,) if other not in d.candidates else ()))
    )


#: the release option that turns clamping off (``false``); absent means on
CLAMP_OPTION = "clamp_to_bounds"


def clamps_to_bounds(recipe: Recipe) -> bool:
    """Whether a record, label or semi-sensitive release clamps its noisy numbers to the public
    bounds: on unless the recipe says ``"clamp_to_bounds": false``.

    Clamping is post-processing of the noisy values with public bounds only, so it costs no
    privacy (Jazbec 2018, Thm 4.3); and since every true value lies within the bounds (it is
    clipped there before the noise), moving a noisy value to the nearest bound never moves it
    further from the true value: the unclamped expected error is an upper bound."""
    return bool(recipe.release.options.get(CLAMP_OPTION, True))


def _clamp_range(low: float, high: float, integer: bool) -> tuple[float, float]:
    """Where noisy values are clamped: the public bounds (an integer column: the whole numbers
    within them, so a clamped value stays a whole number inside the bounds)."""
    if integer and math.ceil(low) <= math.floor(high):
        return float(math.ceil(low)), float(math.floor(high))
    return float(low), float(high)


def _post_processing(col: Column, clamp: bool) -> tuple[str, ...]:
    """What is done to a unit's values besides the noise: public rules only."""
    name = _mechanism_name(col)
    if name in ("laplace", "gaussian"):
        steps = [
            "values outside the public bounds are clipped to them before the noise",
            "missing values take the middle of the bounds (missingness is not released)",
        ]
        if col.type == "integer":
            steps.append("integer column: the noise is whole numbers, so the released values are whole numbers")
        if clamp:
            steps.append(
                "noisy values outside the public bounds are set to the nearest bound (this costs no "
                "privacy; values near the bounds lean slightly inwards); the expected error shown "
                "is after this step, for the worst true value (the middle of the bounds)"
            )
        else:
            steps.append("noisy values are not clamped: they can fall outside the public bounds")
        return tuple(steps)
    if name == "rr":
        return ("values outside the category list (and missing values) are reported as the 'other' category",)
    return ()


def _floor(name: str, domain: tuple[float, float] | None, categories: int | None, loss: PrivacyLoss) -> float | None:
    """The smallest worst-case error any mechanism with the unit's own (eps, delta) can achieve
    (Jazbec 2018, Thm 5.3 for an interval, Thm 5.5 for m + 1 categories)."""
    from dpstudio.engine.bounds import floor_continuous, floor_finite

    if name in ("laplace", "gaussian") and domain is not None:
        return float(floor_continuous(domain[1] - domain[0], loss.epsilon, loss.delta))
    if name == "rr" and categories:
        return float(floor_finite(categories - 1, 1.0, loss.epsilon, loss.delta))
    return None


def _compile_unit(
    recipe: Recipe,
    name: str,
    cols: list[Column],
    col: Column,
    share: tuple[float, float],
    rho: float | None,
    kind: str,
    provisional: bool,
    pool: npt.ArrayLike | None = None,
) -> PlanUnit:
    """One perturbation unit: its mechanism object calibrated on ``col``'s domain, and what the
    product prints about it, read off that object."""
    mech_name = _mechanism_name(col)
    metric = mech_name == "metric"
    mech = build_mechanism(
        col,
        share[0],
        share[1],
        pool=pool if pool is not None else (_PlaceholderPool(len(cols)).array if metric else None),
        rho=rho,
    )
    loss = _unit_loss(name, col, mech, kind)
    d = col.domain
    domain = (
        (float(d.low), float(d.high))
        if d is not None and d.kind == "numeric" and not metric and d.low is not None and d.high is not None
        else None
    )
    orig = next(c for c in recipe.columns if c.name == col.name).domain
    # a category list discovered with DP and no public candidates: no figure is a worst case
    unknown_list = provisional and orig is not None and orig.kind == "categorical" and not orig.candidates
    shown = not metric and not unknown_list
    cats = len(d.categories or ()) if d is not None and d.kind == "categorical" and shown else None
    err = mech.expected_error() if shown else None
    search: tuple[float, float] | None = None
    if provisional:
        assert orig is not None, col.name  # provisional: its domain is estimated with DP
        if orig.kind == "numeric":
            assert orig.search_low is not None and orig.search_high is not None, col.name
            search = (float(orig.search_low), float(orig.search_high))
    clamp = clamps_to_bounds(recipe)
    # the error the clamped values carry (worst case over the bounds), beside the noise's own
    clamped = mech.clamped_error() if clamp and shown and domain is not None and not provisional else None
    facts: dict[str, Any] = {}
    if metric:
        facts["pool"] = "loaded at release time (the accounting does not depend on it)"
    if rho is not None:
        facts["calibration"] = "joint zCDP with the other Gaussian columns"
    return PlanUnit(
        name=name,
        kind="perturbation",
        columns=tuple(c.name for c in cols),
        mechanism_name=mech_name,
        loss=loss,
        mechanism=None if metric and pool is None else mech,
        budget_share=(float(share[0]), float(share[1])),
        noise=NoiseParameters.of(mech) if shown else NoiseParameters(),
        expected_error=None if err is None else float(err),
        floor=_floor(mech_name, domain, cats, loss),
        clamped_error=None if clamped is None else float(clamped),
        domain=domain,
        categories_count=cats,
        domain_source=None if d is None else d.source,
        provisional=provisional,
        search_range=search,
        post_processing=_post_processing(col, clamp),
        facts=facts,
    )


def _perturbation_units(recipe: Recipe, pools: dict[str, npt.NDArray[np.float32]] | None = None) -> list[PlanUnit]:
    """Every perturbation unit with the mechanism object that will draw its noise.

    A unit whose domain is still to be estimated with DP is built on the public search range and
    marked provisional; a metric unit gets its mechanism once its public pool is loaded
    (``pools``: unit name -> pool array)."""
    split = budget_split(recipe)
    group = gaussian_group(recipe)
    kind = _loss_kind(recipe)
    units: list[PlanUnit] = []
    for name, cols in perturbed_units(recipe):
        col = cols[0]
        provisional = False
        if _mechanism_name(col) != "metric" and (col.domain is None or not col.domain.known):
            if col.domain is not None and col.domain.source == "dp":
                col, provisional = _with_search_range(col), True
            else:
                if col.domain is not None and col.domain.source == "data":
                    raise refusal(
                        f"column {col.name!r}: its domain is copied from the data when the release runs; "
                        f"compile with the data loaded to see its figures",
                        field=f"column:{col.name}",
                        page="columns",
                    )
                raise refusal(f"column {col.name!r}: no domain", field=f"column:{col.name}", page="columns")
        rho = group["rho_share"].get(name) if group is not None else None
        units.append(
            _compile_unit(recipe, name, cols, col, split[name], rho, kind, provisional, pool=(pools or {}).get(name))
        )
    return units


def _passthrough(recipe: Recipe) -> list[str]:
    perturbed_names = {c.name for _, cols in perturbed_units(recipe) for c in cols}
    return [c.name for c in recipe.columns if c.role not in ("identifier", "ignore") and c.name not in perturbed_names]


def _loss_kind(recipe: Recipe) -> str:
    rtype = recipe.release.type
    if rtype == "record" and _passthrough(recipe):
        # replace-one neighbours change whole records: a column copied verbatim has no
        # protection, so what is delivered is semi-sensitive DP (public columns assumed known)
        return LOSS_KIND["semi-sensitive"]
    return LOSS_KIND[rtype]


def _label_guarantee(recipe: Recipe, units: list[PlanUnit], total: PrivacyLoss) -> LabelGuarantee | None:
    """The label's formal guarantee, from the composed total (no data read).

    Every unit of a label or semi-sensitive release - the label's randomized response, the
    perturbed sensitive columns, and the DP estimates of any domain - may carry information about
    the label, so relative to what the public columns say the label is protected at the
    release's composed total (epsilon, delta), no more; in particular a jointly calibrated
    Gaussian group counts with its joint conversion, and a DP domain estimate on the label or a
    sensitive column counts too.  ``label_unit_epsilon`` is the label's randomized response alone
    (where the attacker curves are read)."""
    rtype = recipe.release.type
    labels = recipe.columns_with_role("label")
    if rtype not in ("label", "semi-sensitive") or not labels:
        return None
    lab = labels[0].name
    label_unit = next((u for u in units if u.kind == "perturbation" and lab in u.columns), None)
    eps_rr = float(label_unit.epsilon) if label_unit is not None else 0.0
    eps, delta = float(total.epsilon), float(total.delta)
    shown = f"epsilon = {eps:g}" + (f", delta = {delta:.3g}" if delta > 0 else "")
    if rtype == "label":
        note = (
            f"label DP at {shown}: randomized response on the label (epsilon = {eps_rr:g})"
            + (" and the DP estimates of domains" if eps > eps_rr * (1 + 1e-12) else "")
            + ". Public columns are released unchanged; when they predict the label, an attacker who combines "
            "them with the released label learns more than epsilon suggests (Sekiguchi 2024, §3); the internal "
            "leakage estimate quantifies this."
        )
    else:
        note = (
            f"the label's posterior odds given the release are at most e^{eps:g} times its odds given the public "
            "columns alone"
            + (f", except with probability {delta:.3g}" if delta > 0 else "")
            + " (every perturbed column may be correlated with the label, so the whole release's total counts; "
            "Sekiguchi 2024, Prop. 4.0.1, corrected in docs/errata.md - the public columns' own information is "
            "added separately, as an internal estimate)"
        )
    return LabelGuarantee(lab, eps, eps_rr, max(eps - eps_rr, 0.0), rtype, note, delta=delta)


def assemble(recipe: Recipe, units: list[PlanUnit]) -> ReleasePlan:
    """The plan of compiled units (domain estimates first): the accountant's total, the checks
    that it is what the user asked for, and the notes."""
    rtype = recipe.release.type
    guarantee = GUARANTEE[rtype]
    passthrough = _passthrough(recipe)
    if rtype == "record" and passthrough:
        guarantee = GUARANTEE["semi-sensitive"]
    components = [u.loss for u in units]
    domain_losses = [u.loss for u in units if u.kind == "domain"]
    # the jointly calibrated Gaussian group is converted at the recipe's delta and everything else
    # (Laplace, RR, DP domain estimates) adds by basic composition.  Deliberately not "auto": an
    # RDP total of all units can be a little tighter, but it depends on the grids, which change
    # when DP-estimated bounds arrive, and the run must never spend more than the plan reserved;
    # zcdp+basic depends only on the budget shares, so plan and run agree
    rest_delta = sum(loss.delta for loss in components if loss.zcdp_rho is None)
    target = (recipe.budget.delta or 0.0) + rest_delta
    group = gaussian_group(recipe)
    if any(loss.zcdp_rho is not None for loss in components) and group is not None and 0 < target < 1:
        # the group is converted at the delta it was calibrated for, passed as such
        composition = compose(components, delta=target, method="zcdp+basic", zcdp_delta=group["delta"])
    else:
        composition = compose(components, delta=recipe.budget.delta or None, method="basic")
    # the total is computed, never typed: it must still be what the user asked for (the budget
    # plus the stated costs of DP domain estimates), or the plan is refused before anything runs
    allowed_eps = recipe.budget.epsilon + sum(loss.epsilon for loss in domain_losses)
    allowed_delta = (recipe.budget.delta or 0.0) + sum(loss.delta for loss in domain_losses)
    if (
        composition.total.epsilon > allowed_eps * (1 + 1e-9)
        or composition.total.delta > allowed_delta * (1 + 1e-9) + 1e-300
    ):
        raise refusal(
            f"the planned release would spend eps={composition.total.epsilon:.6g}, "
            f"delta={composition.total.delta:.3g}, more than the budget plus the domain "
            f"estimates allow (eps={allowed_eps:.6g}, delta={allowed_delta:.3g}); "
            f"adjust the budget or the estimates' costs",
            field="budget",
            page="budget",
        )
    notes: list[str] = []
    provisional = [u.name for u in units if u.provisional]
    if provisional:
        notes.append(
            f"{', '.join(provisional)}: the noise scale depends on the DP estimate of the domain, "
            f"made at release time; the scale shown here is the worst case (the whole public "
            f"search range), the release report gives the scale that ran"
        )
    if passthrough:
        notes.append(
            f"columns released unchanged ({', '.join(passthrough)}) are not protected: the "
            f"guarantee covers the perturbed columns only, assuming the unchanged ones are public"
            + (
                "; if they predict the label, the label is less protected than epsilon suggests "
                "(see the leakage estimate)"
                if recipe.columns_with_role("label")
                else ""
            )
        )
    for c in recipe.columns:
        if c.role == "embedding" and c.mechanism is not None and c.mechanism.params.get("pool") == "dataset":
            notes.append(
                f"embedding {c.group or c.name}: replacements are drawn from the dataset itself, so "
                f"the released vectors ARE other people's real vectors; epsilon protects the "
                f"person whose vector is replaced, NOT the people whose vectors are emitted"
            )
            break
    return ReleasePlan(
        release_type=rtype,
        guarantee=guarantee,
        units=tuple(units),
        composition=composition,
        notes=tuple(notes),
        label=_label_guarantee(recipe, units, composition.total),
        recipe=recipe,
        compiler=compile,
    )


def compile(recipe: Recipe) -> ReleasePlan:
    """The record, label or semi-sensitive release of ``recipe``, compiled (no data read)."""
    from dpstudio.plan.domains import domain_units

    rtype = recipe.release.type
    if not budget_split(recipe):
        raise refusal(
            f"release {rtype!r}: no column gets noise, so nothing would be protected - give at least one "
            f"column the role {' or '.join(repr(r) for r in perturbed_roles(rtype))} (Columns step)",
            field="columns",
            page="columns",
        )
    from dpstudio.plan.domains import needs_estimate

    copied = set(_passthrough(recipe))
    unused = [c for c in recipe.columns if c.name in copied and needs_estimate(c)]
    if unused:
        # its domain would be estimated (and charged) for nothing: the column is copied as it is
        raise refusal(
            f"column(s) {', '.join(repr(c.name) for c in unused)}: released unchanged by this {rtype} release, "
            "so their domain is not used, and estimating it with DP would spend budget for nothing; "
            "give them no DP estimate (public bounds or categories, or none)",
            field=f"column:{unused[0].name}",
            page="columns",
        )
    return assemble(recipe, domain_units(recipe) + _perturbation_units(recipe))


def finalise(plan: ReleasePlan, recipe: Recipe, frame: pd.DataFrame) -> ReleasePlan:
    """The plan whose mechanisms draw the noise: ``recipe`` has the DP-estimated domains; units
    that depend on them (and metric units, on their pools) are rebuilt, every other unit is the
    compiled one, mechanism object included."""
    pools: dict[str, npt.NDArray[np.float32]] = {}
    for name, cols in perturbed_units(recipe):
        if _mechanism_name(cols[0]) == "metric":
            pools[name] = load_pool(cols[0], frame, [c.name for c in cols], recipe)
    rebuilt = {u.name: u for u in _perturbation_units(recipe, pools)}
    units: list[PlanUnit] = []
    for u in plan.units:
        if u.kind == "perturbation" and (u.provisional or u.mechanism is None):
            units.append(rebuilt[u.name])
        else:
            units.append(u)
    if all(a is b for a, b in zip(units, plan.units, strict=True)):
        return plan
    return assemble(recipe, units)


# ---- running ----------------------------------------------------------------------------


def _numeric_values(series: pd.Series, col: Column, stats: dict[str, Any]) -> npt.NDArray[np.float64]:
    try:
        x = np.array(
            pd.to_numeric(series, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64
        )
    except (ValueError, TypeError):
        raise UserError(f"column {col.name!r}: expected numbers, found text values") from None
    d = col.domain
    assert d is not None and d.low is not None and d.high is not None, col.name
    missing = np.isnan(x)
    n_missing = int(missing.sum())
    if n_missing:
        # a public fill value (the middle of the public bounds) keeps missingness from being released
        x[missing] = 0.5 * (d.low + d.high)
    n_clipped = int(np.count_nonzero((x < d.low) | (x > d.high)))
    np.clip(x, d.low, d.high, out=x)
    stats[col.name] = {"clipped": n_clipped, "missing_filled": n_missing}
    return x


def _int_categories(cats: Iterable[str]) -> npt.NDArray[np.int64] | None:
    """The categories as integers when every one is an integer's own spelling; None otherwise.
    A code with a leading zero ("025") is text: as a number it would be written "25" and could
    merge with a different code "25"."""
    cats = list(cats)
    if not all(is_integer_text(c) for c in cats):
        return None
    try:
        return np.array([int(c) for c in cats], dtype=np.int64)
    except (ValueError, OverflowError):
        return None


def is_integer_text(c: str) -> bool:
    """Whether ``c`` reads back unchanged from the integer it spells ("25", "-3"; not "025", "+3")."""
    try:
        return str(int(c)) == c
    except (ValueError, OverflowError):
        return False


def _lookup_codes(series: pd.Series, cats: tuple[str, ...]) -> npt.NDArray[np.int64]:
    """Position of each value in ``cats`` (-1 when absent or missing), vectorised.

    Integer/boolean columns with integer-like categories are matched as numbers (no string
    conversion of a million cells); text columns through pyarrow's hash lookup."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
        as_int = _int_categories(cats)
        if pd.api.types.is_bool_dtype(dtype) and as_int is None:
            as_int = np.array([{"true": 1, "false": 0}.get(c.lower(), -(2**62)) for c in cats], np.int64)
        if as_int is not None:
            missing = series.isna().to_numpy()
            values = series.to_numpy(dtype=np.int64, na_value=0) if missing.any() else series.to_numpy(dtype=np.int64)
            codes: npt.NDArray[np.int64]
            if as_int.min() >= 0 and as_int.max() < 1 << 16:
                # small non-negative codes: one table lookup per cell
                lut = np.full(int(as_int.max()) + 2, -1, dtype=np.int64)
                lut[as_int] = np.arange(len(cats))
                codes = lut[np.clip(values, -1, len(lut) - 1)]
            else:
                order = np.argsort(as_int, kind="stable")
                sorted_cats = as_int[order]
                pos = np.clip(np.searchsorted(sorted_cats, values), 0, len(cats) - 1)
                codes = np.where(sorted_cats[pos] == values, order[pos], -1)
            codes[missing] = -1
            return codes.astype(np.int64)
    if pd.api.types.is_float_dtype(dtype):
        # 1.0 -> "1": integer-coded categories stored as floats (because of NaNs) still match
        f = series.to_numpy(dtype=np.float64, na_value=np.nan)
        as_int = _int_categories(cats)
        if as_int is not None and np.all(np.isnan(f) | (f == np.round(f))):
            return _lookup_codes(pd.Series(f).astype("Int64"), cats)
        series = pd.Series(f).map(lambda v: None if np.isnan(v) else (str(int(v)) if v == round(v) else str(v)))
    import pyarrow as pa
    import pyarrow.compute as pc

    arr: pa.Array | pa.ChunkedArray
    if isinstance(series.array, pd.arrays.ArrowStringArray):
        # text already held by arrow (the loaders' str columns): hashed in place, no copy
        arr = pa.array(series.array)
    else:
        # pandas accepts na_value=None (missing cells as None); pandas-stubs do not list it
        arr = pa.array(
            series.astype("string").to_numpy(dtype=object, na_value=None),  # type: ignore[call-overload]
            type=pa.string(),
        )
    idx = pc.index_in(arr, value_set=pa.array(list(cats), type=arr.type))
    found: npt.NDArray[np.int64] = idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return found


def category_codes(series: pd.Series, col: Column, stats: dict[str, Any] | None = None) -> npt.NDArray[np.int64]:
    """Codes into the declared category list; out-of-list values go to ``other`` or are refused."""
    cats = _categories(col)
    codes = _lookup_codes(series, cats)
    bad = codes < 0
    n_bad = int(bad.sum())
    if n_bad:
        assert col.domain is not None, col.name
        other = col.domain.other
        if other is None:
            raise UserError(
                f"column {col.name!r}: {n_bad} value(s) are missing or not in the declared "
                f"category list; add them, or declare an 'other' category"
            )
        codes[bad] = cats.index(other)
    if stats is not None:
        stats[col.name] = {"mapped_to_other": n_bad}
    return codes


def decode_categories(codes: npt.NDArray[np.int64], col: Column) -> npt.NDArray[Any] | pd.Categorical:
    """Released values from codes.  The output type depends on the recipe only (declared type
    and category list), never on the raw column's dtype: one missing value turns a pandas
    int column into float, and letting that change the output would reveal it."""
    cats = _categories(col)
    as_int = _int_categories(cats)
    if as_int is not None:  # integer-coded categories come back as integers
        values: npt.NDArray[np.int64] = as_int[codes]
        return values
    if col.type == "boolean" and {c.lower() for c in cats} <= {"true", "false"}:
        return np.array([c.lower() == "true" for c in cats])[codes]
    # categorical dtype: compact in memory and written as dictionary-encoded Parquet
    # pandas accepts any list-like of categories; pandas-stubs want an Index
    decoded: pd.Categorical = pd.Categorical.from_codes(codes, categories=list(cats))  # type: ignore[call-overload]
    return decoded


def load_pool(col: Column, frame: pd.DataFrame, group_cols: list[str], recipe: Recipe) -> npt.NDArray[np.float32]:
    """The public pool of replacement vectors (or the dataset itself, when acknowledged)."""
    from dpstudio.engine.data.loader import load_table

    pool: str | None = col.mechanism.params.get("pool") if col.mechanism else None
    if pool == "dataset":
        return _vectors(frame, group_cols)
    assert pool is not None, col.name  # validation requires a pool for metric selection
    table = load_table(pool).frame
    missing = [c for c in group_cols if c not in table.columns] if len(group_cols) > 1 else []
    if missing:
        raise UserError(f"embedding pool {pool}: lacks columns {missing[:5]!r}")
    return _vectors(table, group_cols if len(group_cols) > 1 or group_cols[0] in table.columns else list(table.columns))


def _vectors(frame: pd.DataFrame, cols: list[str]) -> npt.NDArray[np.float32]:
    if len(cols) == 1 and frame[cols[0]].dtype == object:
        return np.stack(list(frame[cols[0]].to_numpy())).astype(np.float32)
    return frame[cols].to_numpy(dtype=np.float32)


#: ``RandomSource.stream`` purpose of record perturbation: block ``k`` draws from stream (1, k)
RECORD_STREAM = 1


def check_within_plan(plan: ReleasePlan, final: ReleasePlan) -> None:
    """Refuse to draw noise with mechanisms that spend more than the plan the ledger reserved."""
    planned, ran = plan.total, final.total
    if ran.epsilon > planned.epsilon * (1 + 1e-12) + 1e-15 or ran.delta > planned.delta * (1 + 1e-12) + 1e-300:
        raise RuntimeError(
            f"internal error: the mechanisms built for the release spend (eps={ran.epsilon!r}, "
            f"delta={ran.delta!r}), more than planned ({planned.epsilon!r}, {planned.delta!r})"
        )


def streamable_problem(recipe: Recipe) -> str | None:
    """Why this record release cannot run block by block (None: it can)."""
    for _name, cols in perturbed_units(recipe):
        if _mechanism_name(cols[0]) == "metric":
            pool = cols[0].mechanism.params.get("pool") if cols[0].mechanism else None
            if pool == "dataset":
                return (
                    f"column {cols[0].name!r} draws replacement vectors from the dataset itself, "
                    "which needs the whole table in memory; use a public pool file"
                )
    return None


def merge_stats(into: dict[str, Any], more: dict[str, Any]) -> None:
    """Add one block's per-column counts (clipped, filled, mapped to "other") to ``into``."""
    for col, counts in more.items():
        acc = into.setdefault(col, {})
        for k, v in counts.items():
            acc[k] = acc.get(k, 0) + v


def perturb_block(
    final: ReleasePlan,
    recipe: Recipe,
    block: pd.DataFrame,
    rng: RandomSource,
    stats: dict[str, Any],
    *,
    start: int = 0,
    whole: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One block of a record release: every perturbation unit of ``final`` (the finalised plan)
    applied to the block's rows, in plan order, with the block's own random stream; ``recipe``
    is the recipe with the DP-estimated domains filled in.  Public
    columns pass through.  ``start``: the block's first row in the table (a dataset pool's
    self-exclusion is by position); ``whole``: the table, for a pool drawn from the dataset.
    Counts of clipped / filled / "other" cells are added to ``stats``."""
    block = block.reset_index(drop=True)
    unit_of = {c: u for u in final.perturbation_units for c in u.columns}
    out: dict[str, object] = {}
    done_units: set[str] = set()
    kept = [c for c in recipe.columns if c.role not in ("identifier", "ignore")]
    clamp = clamps_to_bounds(recipe)
    here: dict[str, Any] = {}
    for col in kept:
        if col.name not in unit_of:
            # public column (or not perturbed by this release type), in its declared type
            out[col.name] = public_values(block[col.name], col)
            continue
        u = unit_of[col.name]
        if u.name in done_units:
            continue
        done_units.add(u.name)
        mech, cols = u.mechanism, [recipe.column(n) for n in u.columns]
        assert mech is not None, u.name  # the finalised plan has every perturbation unit's object
        mech_name = u.mechanism_name
        if mech_name == "metric":
            names = [c.name for c in cols]
            pool_param = col.mechanism.params.get("pool") if col.mechanism else None
            # a record's own vector is excluded by position (never by value: excluding equal
            # vectors would make some outputs impossible for one neighbour only, breaking DP)
            self_index = np.arange(start, start + len(block)) if pool_param == "dataset" else None
            if self_index is not None and whole is None:
                raise UserError(streamable_problem(recipe) or "a dataset pool needs the whole table")
            chosen = mech.release(_vectors(block, names), rng, self_index=self_index)
            if len(names) == 1 and col.type == "vector":
                out[col.name] = pd.Series(list(chosen), index=block.index)
            else:
                for j, n in enumerate(names):
                    out[n] = chosen[:, j]
            continue
        if mech_name in ("laplace", "gaussian"):
            x = _numeric_values(block[col.name], col, here)
            y = mech.release(x, rng)
            if clamp:
                # post-processing: plausible values at the price of bias near the bounds
                assert col.domain is not None and col.domain.low is not None and col.domain.high is not None
                np.clip(y, *_clamp_range(col.domain.low, col.domain.high, col.type == "integer"), out=y)
            # an integer column's grid step is a whole number (rint only guards the cast)
            out[col.name] = np.rint(y).astype(np.int64) if col.type == "integer" else y
        else:
            codes = category_codes(block[col.name], col, here)
            out[col.name] = decode_categories(mech.release(codes, rng), col)
    merge_stats(stats, here)
    return pd.DataFrame({c.name: out[c.name] for c in kept if c.name in out})


def public_values(series: pd.Series, col: Column) -> pd.Series:
    """A column released unchanged, typed by the recipe's declaration, not by what one block or
    file happened to hold: integers stay whole numbers whether or not a cell is missing (nullable
    integers), floats are floats; so a streamed release writes what the in-memory one writes."""
    if col.type not in ("integer", "float") or pd.api.types.is_bool_dtype(series.dtype):
        return series
    try:
        x = pd.to_numeric(series, errors="raise")
    except (ValueError, TypeError):
        return series  # text in a numeric column: the release's checks say so elsewhere
    if col.type == "float":
        return x.astype(np.float64)
    f = x.to_numpy(dtype=np.float64, na_value=np.nan)
    present = ~np.isnan(f)
    if not np.all(f[present] == np.round(f[present])):
        return series
    if present.all():
        return pd.Series(f.astype(np.int64), index=series.index)
    return pd.Series(pd.array(np.where(present, f, 0).astype(np.int64), dtype="Int64"), index=series.index).mask(
        ~present
    )


def block_starts(n_rows: int, block_rows: int) -> range:
    """First rows of the blocks of a table of ``n_rows`` (one empty block for an empty table)."""
    return range(0, max(n_rows, 1), block_rows)


def execute(
    plan: ReleasePlan,
    frame: pd.DataFrame,
    rng: RandomSource,
    *,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    block_rows: int | None = None,
) -> ReleaseOutcome:
    """Run the plan's domain estimates, finalise the plan from them, and perturb with exactly
    the finalised plan's mechanism objects (``ReleaseOutcome.drawn_by`` names them), block by
    block (:data:`dpstudio.engine.data.stream.BLOCK_ROWS` rows, block ``k`` with the random
    stream ``(RECORD_STREAM, k)``) as a streamed or cluster run does, so a fixed seed gives the
    same output whichever runs it."""
    from dpstudio.engine.data.stream import BLOCK_ROWS
    from dpstudio.plan.domains import run_domain_units

    if plan.recipe is None:
        raise ValueError("this plan was not compiled from a recipe")
    drawn_by: dict[str, UnitMechanism] = {}
    recipe, domain_stats = run_domain_units(plan.recipe, plan.units, frame, rng, drawn_by)
    final = finalise(plan, recipe, frame)
    check_within_plan(plan, final)
    drawn_by.update({u.name: u.mechanism for u in final.perturbation_units if u.mechanism is not None})
    stats: dict[str, Any] = {}
    rows = block_rows or BLOCK_ROWS
    starts = block_starts(len(frame), rows)
    pieces = []
    for k, first in enumerate(starts):
        cancel.check()
        progress(k / len(starts), "perturbing")
        block = frame.iloc[first : first + rows]
        pieces.append(
            perturb_block(final, recipe, block, rng.stream(RECORD_STREAM, k), stats, start=first, whole=frame)
        )
    progress(1.0, "perturbation done")
    data = pieces[0] if len(pieces) == 1 else pd.concat(pieces, ignore_index=True)
    return ReleaseOutcome(
        data=data, steward_stats={"columns": stats, **domain_stats}, final_plan=final, drawn_by=drawn_by
    )
