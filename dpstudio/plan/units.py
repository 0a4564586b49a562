"""The compiled release plan: typed, frozen records that every part of the product reads.

A :class:`ReleasePlan` holds one :class:`PlanUnit` per release unit (a DP domain estimate, a
perturbed column or column group, a synthesizer, a model, a density), each with the calibrated
mechanism object that draws its noise, its privacy loss, its noise parameters and its expected
error; plus the accountant's total and transcript.  The release executes the units' own
mechanism objects, and ``recipe check``, the GUI, the report and the ledger print the plan's
fields: a number is computed once, where the noise is calibrated, and read everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from dpstudio.engine.accounting import Composition, PrivacyLoss
from dpstudio.errors import RecipeError
from dpstudio.recipe.validate import Problem

if TYPE_CHECKING:
    from dpstudio.recipe.model import Recipe

#: what a unit is: estimated domains come first, every other unit may depend on them
UNIT_KINDS = ("domain", "perturbation", "synthesizer", "model", "density")


class UnitMechanism(Protocol):
    """What :attr:`PlanUnit.mechanism` holds: a calibrated object that states its guarantee and
    draws the unit's noise.  The per-value mechanisms of :mod:`dpstudio.engine.mechanisms` and the
    plan's own release objects (domain estimates, synthesizer, model, density) all qualify;
    ``release`` takes what each release type feeds it, so its signature is left open here."""

    def privacy_loss(self) -> PrivacyLoss: ...

    def release(self, *args: Any, **kwargs: Any) -> Any: ...


def refusal(message: str, *, field: str, page: str) -> RecipeError:
    """A recipe the compiler cannot compile, as a typed problem (the wizard shows it on ``page``)."""
    return RecipeError([Problem(message, field=field, page=page)])


@dataclass(frozen=True)
class NoiseParameters:
    """The public parameters of a unit's noise, in the column's own units (None: not applicable).

    ``scale``: Laplace b; ``sigma``: Gaussian standard deviation; ``grid_step``: the lattice the
    noisy values lie on; ``keep_probability`` / ``other_probability``: randomized response's
    P(value kept) and P(each other category); ``categories``: size of the category list;
    ``zcdp_rho``: the unit's share of a jointly calibrated zCDP budget; ``sigma_steps`` /
    ``diam_steps``: sigma and the domain's width in grid steps."""

    scale: float | None = None
    sigma: float | None = None
    grid_step: float | None = None
    keep_probability: float | None = None
    other_probability: float | None = None
    categories: int | None = None
    zcdp_rho: float | None = None
    sigma_steps: float | None = None
    diam_steps: float | None = None

    @classmethod
    def of(cls, mech: UnitMechanism) -> NoiseParameters:
        """Read the parameters off a calibrated mechanism object (never recomputed)."""

        def num(name: str) -> float | None:
            v = getattr(mech, name, None)
            return None if v is None or isinstance(v, bool) else float(v)

        loss = mech.privacy_loss()
        cats = getattr(mech, "n_categories", None)
        return cls(
            scale=num("scale"),
            sigma=num("sigma"),
            grid_step=num("step"),
            keep_probability=num("keep"),
            other_probability=num("p"),
            categories=None if cats is None else int(cats),
            zcdp_rho=None if loss.zcdp_rho is None else float(loss.zcdp_rho),
            sigma_steps=num("sigma_steps"),
            diam_steps=num("diam_steps"),
        )

    def items(self) -> dict[str, float]:
        """The parameters that apply, by field name."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class PlanUnit:
    """One release unit, compiled.

    ``mechanism``: the calibrated object whose ``release`` draws this unit's noise (None for a
    domain estimated before this release and for units whose engine object is made at run
    time from public facts only, e.g. a model's sampler that needs the public row count).
    ``loss``: what the accountant composes.  ``budget_share``: the unit's (epsilon, delta) share
    of the recipe's budget (a jointly calibrated Gaussian's own guarantee differs: ``loss``).
    ``provisional``: built on the public search range because its domain is estimated with DP
    at release time; its parameters are then the worst case and the finalised plan has the
    ones that ran.  ``floor``: the smallest worst-case error any mechanism with the unit's
    (epsilon, delta) can achieve (Jazbec 2018, Thm 5.3 / 5.5), in the same units as
    ``expected_error``.  ``post_processing``: what is done to the noisy values (public rules
    only).  ``facts``: further public numbers a reader needs (e.g. a model's a_max)."""

    name: str
    kind: str
    columns: tuple[str, ...]
    mechanism_name: str
    loss: PrivacyLoss
    mechanism: UnitMechanism | None = None
    budget_share: tuple[float, float] = (0.0, 0.0)
    noise: NoiseParameters = NoiseParameters()
    expected_error: float | None = None
    floor: float | None = None
    #: a numeric unit whose noisy values are clamped to its bounds (the default): the worst case
    #: over the bounds of the error after clamping (<= ``expected_error``, the noise's own; the
    #: quantity ``floor`` bounds from below); None when nothing is clamped or the unit is provisional
    clamped_error: float | None = None
    domain: tuple[float, float] | None = None
    categories_count: int | None = None
    domain_source: str | None = None
    provisional: bool = False
    search_range: tuple[float, float] | None = None
    post_processing: tuple[str, ...] = ()
    description: str = ""
    facts: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.kind not in UNIT_KINDS:
            raise ValueError(f"unit kind must be one of {UNIT_KINDS}, got {self.kind!r}")
        object.__setattr__(self, "facts", MappingProxyType(dict(self.facts)))

    @property
    def epsilon(self) -> float:
        return float(self.loss.epsilon)

    @property
    def delta(self) -> float:
        return float(self.loss.delta)

    @property
    def shown_error(self) -> float | None:
        """The expected error the product prints and charts (budget page, report): for a number
        clamped to its bounds, the worst case over the bounds of the error after clamping, the
        quantity ``floor`` bounds from below; else the noise's own ``expected_error``."""
        return self.clamped_error if self.clamped_error is not None else self.expected_error

    @property
    def error_exceeds_range(self) -> bool:
        """Whether a numeric unit's expected error (for a provisional unit, its worst case) is
        wider than its public bounds: its released values say little about the real ones.  The
        one rule the budget page's warning and the report's summary both apply."""
        if self.expected_error is None or self.domain is None:
            return False
        low, high = float(self.domain[0]), float(self.domain[1])
        return high > low and self.expected_error > high - low

    def to_json(self) -> dict[str, Any]:
        """The unit as ``recipe check`` and the report's reproducibility section print it."""
        out: dict[str, Any] = {
            "unit": self.name,
            "kind": self.kind,
            "columns": list(self.columns),
            "mechanism": self.mechanism_name,
            "epsilon": self.epsilon,
            "delta": self.delta,
        }
        if self.description:
            out["description"] = self.description
        if self.noise.zcdp_rho is not None:
            out.update(
                budget_share_epsilon=self.budget_share[0],
                budget_share_delta=self.budget_share[1],
                calibration="joint zCDP with the other Gaussian columns",
            )
        prefix = "worst_case_" if self.provisional else ""
        for k, v in self.noise.items().items():
            if self.provisional and k in ("sigma_steps", "diam_steps"):
                continue
            out[(prefix if k not in ("zcdp_rho",) else "") + k] = v
        if self.expected_error is not None:
            out[prefix + "expected_error"] = self.expected_error
        if self.clamped_error is not None:
            out["clamped_error"] = self.clamped_error
        if self.floor is not None:
            out[prefix + "floor"] = self.floor
        if self.domain is not None and not self.provisional:  # a provisional one is the search range
            out["domain"] = list(self.domain)
        if self.categories_count is not None:
            out["categories"] = self.categories_count
        if self.domain_source is not None:
            out["domain_source"] = self.domain_source
        if self.provisional:
            out["scale_depends_on_estimate"] = True
            if self.search_range is not None:
                out["search_range"] = list(self.search_range)
                shown = ", ".join(f"{k} = {v:.6g}" for k, v in self.noise.items().items() if k in ("scale", "sigma"))
                out["note"] = (
                    "scale depends on the DP estimate of the bounds; worst case (whole search range "
                    f"[{self.search_range[0]:g}, {self.search_range[1]:g}]): {shown}; the release "
                    "report gives the scale that ran"
                )
            else:
                out["note"] = (
                    "parameters depend on the DP-selected category list; the release report gives the ones that ran"
                )
        if self.post_processing:
            out["post_processing"] = list(self.post_processing)
        out.update({k: v for k, v in self.facts.items() if k not in out})
        return out


@dataclass(frozen=True)
class LabelGuarantee:
    """The label's formal guarantee in a label or semi-sensitive release (no data read).

    ``epsilon``, ``delta``: the bound on how far the release moves the label's posterior odds
    relative to what the public columns already say - the release's composed total, since every
    unit (the label's randomized response, the perturbed sensitive columns, DP domain estimates)
    may carry information about the label (Sekiguchi 2024, Prop. 4.0.1 as corrected in
    docs/errata.md).  ``label_unit_epsilon`` is the epsilon of the label's randomized response
    alone: the attacker curves are read there.  ``sensitive_epsilon``: the rest."""

    column: str
    epsilon: float
    label_unit_epsilon: float
    sensitive_epsilon: float
    release_type: str
    note: str
    delta: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label_epsilon": self.epsilon,
            "label_delta": self.delta,
            "relative_to": "public columns",
            "note": self.note,
            "epsilon_label_rr": self.label_unit_epsilon,
        }
        if self.release_type == "semi-sensitive":
            out["epsilon_sensitive"] = self.sensitive_epsilon
        return out


@dataclass(frozen=True)
class ReleasePlan:
    """A recipe compiled: its units (domain estimates first), their total and the notes.

    ``guarantee``: "record-level", "label", "semi-sensitive" or "central".  ``final``: False while
    some unit is provisional (its domain is estimated at release time); the release returns the
    finalised plan, whose total never exceeds this one's, and the report reads that."""

    release_type: str
    guarantee: str
    units: tuple[PlanUnit, ...]
    composition: Composition
    notes: tuple[str, ...] = ()
    label: LabelGuarantee | None = None
    recipe: Recipe | None = field(default=None, repr=False, compare=False)
    #: the release type's ``compile`` (what ``at_budget`` calls; the plan keeps no import of it)
    compiler: Callable[[Recipe], ReleasePlan] | None = field(default=None, repr=False, compare=False)

    @property
    def total(self) -> PrivacyLoss:
        return self.composition.total

    @property
    def components(self) -> tuple[PrivacyLoss, ...]:
        return tuple(u.loss for u in self.units)

    @property
    def final(self) -> bool:
        return not any(u.provisional for u in self.units)

    @property
    def perturbation_units(self) -> tuple[PlanUnit, ...]:
        return tuple(u for u in self.units if u.kind == "perturbation")

    def unit(self, name: str) -> PlanUnit:
        for u in self.units:
            if u.name == name:
                return u
        raise KeyError(name)

    def unit_of_column(self, column: str) -> PlanUnit | None:
        """The non-domain unit that releases ``column`` (None: dropped or released unchanged)."""
        for u in self.units:
            if u.kind != "domain" and column in u.columns:
                return u
        return None

    def protected_columns(self) -> tuple[str, ...]:
        """The columns whose released values carry this plan's noise (perturbed, synthesised
        or fitted into a model or density): what the ledger records a release protected."""
        return tuple(dict.fromkeys(c for u in self.units if u.kind != "domain" for c in u.columns))

    def unchanged_columns(self) -> tuple[str, ...]:
        """The columns a record, label or semi-sensitive release copies as they are (no noise)."""
        if self.recipe is None or self.release_type not in ("record", "label", "semi-sensitive"):
            return ()
        protected = set(self.protected_columns())
        return tuple(
            c.name for c in self.recipe.columns if c.role not in ("identifier", "ignore") and c.name not in protected
        )

    @property
    def mechanisms(self) -> tuple[dict[str, Any], ...]:
        """The non-domain units as JSON (what ``recipe check`` and the report's appendix print)."""
        return tuple(u.to_json() for u in self.units if u.kind != "domain")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "guarantee": self.guarantee,
            "total": self.total.to_json(),
            "composition": self.composition.to_json(),
            "units": [u.to_json() for u in self.units],
            "notes": list(self.notes),
        }
        if self.label is not None:
            out["label_guarantee"] = self.label.to_json()
        return out

    def at_budget(self, epsilon: float) -> ReleasePlan:
        """The same recipe compiled at another total epsilon (same delta): what the previews plot."""
        if self.recipe is None or self.compiler is None:
            raise ValueError("this plan was not compiled from a recipe")
        r = self.recipe
        # the recipe was checked when this plan was compiled; only the budget differs
        return self.compiler(replace(r, budget=replace(r.budget, epsilon=float(epsilon))))


@dataclass
class ReleaseOutcome:
    """The result of executing a plan: a table (records or synthetic rows) and/or a JSON artifact
    (model coefficients, density grid).  ``steward_stats`` are computed on the raw data (e.g.
    clipped counts): for the data steward and the internal report only, never published.
    ``final_plan``: the plan whose mechanisms drew the noise: the compiled plan finalised from
    the DP domain estimates (the compiled plan itself when nothing was estimated).  ``drawn_by``:
    unit name -> the mechanism object that drew its noise (the tests hold it against the plan)."""

    data: pd.DataFrame | None = None
    artifact: dict[str, Any] | None = None
    steward_stats: dict[str, Any] = field(default_factory=dict)
    public_stats: dict[str, Any] = field(default_factory=dict)  # computed from DP outputs only
    final_plan: ReleasePlan | None = None
    drawn_by: dict[str, UnitMechanism] = field(default_factory=dict)
