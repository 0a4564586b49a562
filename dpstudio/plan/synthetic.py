"""Release type ``synthetic``: DP synthetic rows from a generator fitted on one-shot private
releases (PEARL, Liew et al. 2022; or the DP-MERF / MST baselines).  The synthesizer calibrates its
Gaussian releases to the part of the budget the plan gives it: the recipe's (epsilon, delta) is
the total of the release, DP domain estimates included, planned up front and composed in zCDP (or
Gaussian DP when every part is Gaussian; :func:`budget_split`).  Sampling rows is post-processing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpstudio.engine.accounting import PrivacyLoss, compose
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress, sub_progress
from dpstudio.engine.rng import RandomSource
from dpstudio.plan.record import is_integer_text
from dpstudio.plan.units import PlanUnit, ReleaseOutcome, ReleasePlan, refusal
from dpstudio.recipe.model import Recipe
from dpstudio.recipe.validate import NUMERIC_TYPES

if TYPE_CHECKING:
    from dpstudio.engine.synth.base import FittedSynth, Synthesizer
    from dpstudio.engine.synth.encoding import ColumnSpec, TableSpec

METHOD_TEXT = {
    "aim": "AIM: adaptively chosen noisy marginals + graphical model (McKenna et al. 2022)",
    "mst": "MST: noisy marginals on a maximum spanning tree (McKenna et al. 2021)",
    "pearl": "PEARL: private characteristic-function embedding + generator (Liew et al. 2022)",
    "merf": "DP-MERF: random-Fourier-feature mean embedding + generator (Harder et al. 2021)",
}
#: the short names users see
METHOD_NAME = {"aim": "AIM", "mst": "MST", "pearl": "PEARL", "merf": "DP-MERF"}
#: synthesizers that measure noisy marginals (counts) rather than one embedding
MARGINAL_METHODS = ("aim", "mst")


def method_of(recipe: Recipe) -> str:
    """The recipe's synthesizer: its ``method`` option, or the recommended one when it names none
    (:func:`recommend_method`, a function of the public schema)."""
    method: str = recipe.release.options.get("method") or recommend_method(recipe)[0]
    if method not in METHOD_TEXT:
        raise refusal(
            f"release option method={method!r}: choose one of {', '.join(METHOD_TEXT)}", field="release", page="release"
        )
    return method


def table_spec(recipe: Recipe) -> TableSpec:
    """The synthesizer's public schema, built only from the recipe's declared domains."""
    from dpstudio.engine.synth.encoding import ColumnSpec, TableSpec

    features: list[ColumnSpec] = []
    label: ColumnSpec | None = None
    for c in recipe.columns:
        if c.role in ("identifier", "ignore", "embedding"):
            continue
        d = c.domain
        assert d is not None, c.name  # every kept column has a domain when this runs
        if c.type in NUMERIC_TYPES:
            assert d.low is not None and d.high is not None, c.name
            spec = ColumnSpec.numeric(c.name, d.low, d.high, integer=c.type == "integer", missing=d.missing)
        else:
            assert d.categories is not None, c.name
            # values outside the list count as the 'other' category when there is one (a DP list
            # always has one: the values too rare to be kept), as in every other release type
            other = d.other if d.other is not None and d.other in d.categories else None
            spec = ColumnSpec.categorical(c.name, tuple(d.categories), missing=d.missing, other=other)
        if c.role == "label":
            label = spec
        else:
            features.append(spec)
    if not features:
        raise refusal("release 'synthetic': no kept column to synthesise", field="columns", page="columns")
    return TableSpec(columns=tuple(features), label=label)


#: above this many kept columns AIM's search over pairs and triples of columns (which grows with
#: the square of the column count) takes minutes; MST's tree stays fast
AIM_MAX_COLUMNS = 30


def recommend_method(recipe: Recipe) -> tuple[str, str]:
    """The synthesizer to suggest for this recipe's public schema, with a one-line reason.

    Why these rules (benchmarks/RESULTS.md, "Synthetic data on several real tables": Adult, Census
    PUMS and a medical table, categories public or estimated with DP, 3 seeds, epsilon 0.3, 1
    and 4; 10 seeds of AIM and MST at epsilon 1 on Adult and the medical table): AIM had the
    best or a tied-best classifier ROC on every table at every epsilon -- level with MST on Adult
    at epsilon 1 (where both match the real rows), ahead of it at 0.3 and 4, clearly ahead of
    all three others on PUMS, where the label depends on several columns at once and MST's tree
    cannot hold that -- and at epsilon 1 lower 2-way marginal error than MST on Adult and the
    medical table (beyond 2 standard errors over the 10 seeds, both ways of giving categories),
    whose label nothing predicts; the embedding methods (PEARL, DP-MERF) trailed both marginal
    methods everywhere while taking minutes.  AIM's fit grows with the square of the
    number of columns (about a minute at 30 columns of 5 categories), so wider tables get MST.
    Only public input (the kept columns) is used."""
    kept = [c for c in recipe.columns if c.role not in ("identifier", "ignore", "embedding")]
    if len(kept) > AIM_MAX_COLUMNS:
        return "mst", (
            f"with {len(kept)} columns AIM's search over pairs and triples of columns would take "
            "many minutes; MST fits in seconds and keeps every column's distribution"
        )
    return "aim", (
        "in our benchmark on three real tables and three budgets AIM kept the most classifier utility or tied "
        "the best, well ahead where the outcome depends on several columns at once, and fits in about a minute or less"
    )


def _options(recipe: Recipe) -> dict[str, Any]:
    opts = recipe.release.options.to_dict()
    opts.pop("method", None)
    opts.pop("domain_share", None)  # the plan's, not the synthesizer's
    return opts


#: the part of a synthetic release's budget (of its zCDP rho, or GDP mu^2, and of its delta for
#: partition selections) that DP domain estimates get by default, split over the estimated columns
DEFAULT_DOMAIN_SHARE = 0.1


def domain_share(recipe: Recipe) -> float:
    """The release option ``domain_share`` (default :data:`DEFAULT_DOMAIN_SHARE`): public."""
    raw = recipe.release.options.get("domain_share", DEFAULT_DOMAIN_SHARE)
    try:
        share = float(raw)
    except (TypeError, ValueError):
        share = float("nan")
    if not (0.0 < share < 1.0):
        raise refusal(
            f"release option domain_share={raw!r}: the part of the budget for DP domain estimates "
            "must lie strictly between 0 and 1",
            field="release",
            page="release",
        )
    return share


def calculus_of(method: str, recipe: Recipe) -> str:
    """Which calculus the synthesizer's fit calibrates in: "zcdp" or "gdp" (``Synthesizer.calculus``)."""
    try:
        synth = _synthesizer_for(method, recipe)
    except (TypeError, ValueError):  # bad options: the fit reports them; the plan assumes zCDP
        return "zcdp"
    return str(getattr(synth, "calculus", "zcdp"))


@dataclass(frozen=True)
class BudgetSplit:
    """How a synthetic release's typed (epsilon, delta) is shared, from public quantities only.

    ``calculus``: "zcdp" (every part's rho adds; thresholds are approximate zCDP, their deltas
    add), "gdp" (every part is Gaussian: mu's add in quadrature) or "basic" (no DP domain
    estimate: the synthesizer has the whole budget).  ``charges``: column -> its estimate's
    part; ``rho``/``mu``: the synthesizer's; ``synth_epsilon``/``synth_delta``: the
    (epsilon', delta') handed to the synthesizer, whose calibration yields that rho (or a mu at
    most that mu); ``share``: the synthesizer's (epsilon, delta) share of the typed budget."""

    calculus: str
    charges: dict[str, Any]
    synth_epsilon: float
    synth_delta: float
    share: tuple[float, float]
    rho: float | None = None
    mu: float | None = None


def _label_classes_bound(recipe: Recipe) -> int:
    """An upper bound on the label's classes before its domain is estimated (public)."""
    for c in recipe.columns:
        if c.role == "label" and c.domain is not None:
            d = c.domain
            return len(d.categories or d.candidates or ()) + 2  # + "other" + "missing"
    return 1


def budget_split(recipe: Recipe, method: str) -> BudgetSplit:
    """The split of the typed budget between the DP domain estimates and the synthesizer
    (docs/accounting.md §One budget for a synthetic release; the Gaussian category discovery:
    docs/domains.md §Partition selection with Gaussian noise).

    The domain estimates to run get ``domain_share`` of the budget (of rho, or of mu^2), divided
    over the columns in proportion to the squares of their recipe costs (equal costs, the
    default: an even split), and partition selections ``domain_share`` of delta, evenly; domain
    estimates made before the release keep their recorded (epsilon, delta) and are added by basic
    composition.  The synthesizer gets the rest, so the composition of every part is the typed
    (epsilon, delta).  Refused when nothing is left for the synthesizer."""
    from dpstudio.engine import accounting
    from dpstudio.engine.synth import privacy
    from dpstudio.plan.domains import DomainCharge, needs_estimate

    eps_t, delta_t = float(recipe.budget.epsilon), float(recipe.budget.delta)
    dp_cols = [
        c
        for c in recipe.columns
        if c.domain is not None
        and c.domain.source == "dp"
        and c.domain.cost is not None
        and (needs_estimate(c) or c.domain.known)
    ]
    todo = [c for c in dp_cols if needs_estimate(c)]
    before = [c for c in dp_cols if not needs_estimate(c)]
    calculus = calculus_of(method, recipe)
    if not dp_cols:
        if calculus == "gdp":
            return BudgetSplit("basic", {}, eps_t, delta_t, (eps_t, delta_t), mu=privacy.gdp_mu_for(eps_t, delta_t))
        return BudgetSplit("basic", {}, eps_t, delta_t, (eps_t, delta_t), rho=privacy.zcdp_rho_for(eps_t, delta_t))
    share = domain_share(recipe)
    weights = {c.name: float(c.domain.cost.epsilon) ** 2 for c in todo if c.domain and c.domain.cost}
    w_sum = sum(weights.values()) or 1.0
    names = ", ".join(c.name for c in dp_cols)

    def nothing_left(why: str) -> Exception:
        return refusal(
            f"the DP estimates of the domains of {names} {why}: nothing is left for the synthesizer "
            f"of this release (epsilon {eps_t:g}, delta {delta_t:g}); give a larger budget, a smaller "
            "domain share or type public domains",
            field="budget",
            page="budget",
        )

    gaussian_only = (
        calculus == "gdp"
        and not before
        and all(c.domain is not None and c.domain.kind != "numeric" and c.domain.candidates for c in todo)
    )
    if gaussian_only and todo:
        # Gaussian DP: every part is Gaussian, so mu's add in quadrature (Dong, Roth & Su 2022).
        # The noise that runs is discrete (counts on the lattice 2^-20 Z, the synthesizer's on its
        # lattices): the allowances below compose exactly to the typed total, and the noise is
        # calibrated to them scaled by the lattice shave of the whole release (privacy.lattice_mu_for
        # over every released coordinate), so the discrete law meets the typed (epsilon, delta).
        synth = _synthesizer_for(method, recipe)
        lattice_dim = getattr(synth, "_lattice_dim", None)
        if lattice_dim is not None:
            dims = sum(len(c.domain.candidates or ()) for c in todo if c.domain is not None)
            dims += int(lattice_dim(_label_classes_bound(recipe)))
            mu_t = privacy.gdp_mu_for(eps_t, delta_t)
            shave = privacy.lattice_mu_for(eps_t, delta_t, dims) / mu_t
            charges: dict[str, Any] = {}
            used = 0.0
            for c in todo:
                mu_c = mu_t * (share * weights[c.name] / w_sum) ** 0.5
                used += mu_c**2
                d_c = delta_t * mu_c**2 / mu_t**2
                charges[c.name] = DomainCharge(
                    rho=mu_c**2 / 2.0,
                    epsilon=privacy.gdp_epsilon(mu_c, d_c),
                    delta=d_c,
                    share=(eps_t * mu_c**2 / mu_t**2, d_c),
                    sigma=2.0**0.5 / (mu_c * shave),
                    gdp_mu=mu_c,
                )
            mu_s = (mu_t**2 - used) ** 0.5 * (1.0 - 1e-12)  # float rounding: never above the typed total
            d_s = delta_t - sum(ch.delta for ch in charges.values())
            return BudgetSplit(
                "gdp",
                charges,
                privacy.gdp_epsilon(mu_s * shave, d_s),
                d_s,
                (eps_t * mu_s**2 / mu_t**2, d_s),
                mu=mu_s,
            )
    # zCDP: bounds are bounded-range exponential mechanisms (eps^2/8 per draw, Cesar & Rogers
    # 2021), Gaussian counts 1/sigma^2, partition selections approximate zCDP (their deltas add),
    # the synthesizer's Gaussians mu^2/2 and selections eps^2/8; rho's add (Bun & Steinke 2016)
    n_sel = sum(1 for c in todo if c.domain is not None and c.domain.kind != "numeric" and not c.domain.candidates)
    sel_each = share * delta_t / n_sel if n_sel else 0.0
    pre_eps = sum(float(c.domain.cost.epsilon) for c in before if c.domain and c.domain.cost)
    pre_delta = sum(float(c.domain.cost.delta) for c in before if c.domain and c.domain.cost)
    eps_avail = eps_t - pre_eps
    d_conv = delta_t - pre_delta - n_sel * sel_each
    if not (eps_avail > 0 and d_conv > 0):
        raise nothing_left(f"use epsilon {pre_eps:.4g} and delta {pre_delta + n_sel * sel_each:.3g}")
    rho_t = accounting.zcdp_rho_for(eps_avail, d_conv)
    charges = {}
    used = 0.0
    for c in todo:
        rho_c = rho_t * share * weights[c.name] / w_sum
        used += rho_c
        d_c = d_conv * rho_c / rho_t
        eps_share = eps_avail * rho_c / rho_t
        if c.domain is not None and c.domain.kind == "numeric":
            eps_b = 4.0 * rho_c**0.5
            charges[c.name] = DomainCharge(
                rho=eps_b**2 / 16.0, epsilon=eps_b, delta=0.0, share=(eps_share, d_c), epsilon_bounds=eps_b
            )
        elif c.domain is not None and c.domain.candidates:
            charges[c.name] = DomainCharge(
                rho=rho_c,
                epsilon=accounting.zcdp_epsilon(rho_c, d_c),
                delta=d_c,
                share=(eps_share, d_c),
                sigma=rho_c**-0.5,
            )
        else:
            charges[c.name] = DomainCharge(
                rho=rho_c,
                epsilon=accounting.zcdp_epsilon(rho_c, d_c),
                delta=d_c + sel_each,
                share=(eps_share, d_c + sel_each),
                sigma=rho_c**-0.5,
                selection_delta=sel_each,
            )
    rho_s = (rho_t - used) * (1.0 - 1e-12)  # float rounding: never above the typed total
    if not rho_s > 0:
        raise nothing_left("use the whole budget")
    d_s = d_conv * rho_s / rho_t
    if calculus == "gdp":  # a Gaussian synthesizer in a zCDP plan: its mu^2/2 is its rho
        mu_s = (2.0 * rho_s) ** 0.5
        synth_eps = privacy.gdp_epsilon(mu_s, d_s)
    else:
        synth_eps = privacy.zcdp_epsilon(rho_s, d_s)
    return BudgetSplit("zcdp", charges, synth_eps, d_s, (eps_avail * rho_s / rho_t, d_s), rho=rho_s)


def _synthesizer_for(method: str, recipe: Recipe) -> Synthesizer:
    from dpstudio.engine.synth import SYNTHESIZERS

    return SYNTHESIZERS[method](**_options(recipe))


def option_names(method: str) -> list[str]:
    """The release options the ``method`` synthesizer takes (besides ``method`` and ``domain_share``)."""
    import dataclasses
    import inspect

    if method in ("pearl", "merf"):
        from dpstudio.engine.synth.training import PearlConfig

        return [f.name for f in dataclasses.fields(PearlConfig)]
    if method == "aim":
        from dpstudio.engine.synth.aim import AIMSynthesizer as cls
    else:
        from dpstudio.engine.synth.mst import MSTSynthesizer as cls  # type: ignore[assignment]
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [n for n, p in inspect.signature(cls.__init__).parameters.items() if n != "self" and p.kind not in kinds]


def option_defaults(method: str) -> dict[str, Any]:
    """The value each option of the ``method`` synthesizer takes when the recipe does not set it
    (what the GUI shows in an empty field: the value that runs)."""
    import dataclasses
    import inspect

    if method in ("pearl", "merf"):
        from dpstudio.engine.synth.training import PearlConfig

        return {f.name: f.default for f in dataclasses.fields(PearlConfig) if f.default is not dataclasses.MISSING}
    if method == "aim":
        from dpstudio.engine.synth.aim import AIMSynthesizer as cls
    else:
        from dpstudio.engine.synth.mst import MSTSynthesizer as cls  # type: ignore[assignment]
    params = inspect.signature(cls.__init__).parameters
    return {n: p.default for n, p in params.items() if n in option_names(method) and p.default is not p.empty}


def check_options(method: str, recipe: Recipe) -> None:
    """Refuse the synthesizer's options that it would refuse when fitting (an unknown name, a
    value of the wrong kind), here, before any data is read or budget reserved: a release that
    passed ``recipe check`` must not stop at its first line with a type error."""
    opts = _options(recipe)
    known = option_names(method)
    unknown = sorted(k for k in opts if k not in known)
    name = METHOD_NAME.get(method, method)
    if unknown:
        raise refusal(
            f"release option(s) {', '.join(repr(k) for k in unknown)}: not an option of the {name} "
            f"synthesizer; its options are {', '.join(known)}",
            field="release",
            page="release",
        )
    try:
        _synthesizer_for(method, recipe)
    except (TypeError, ValueError) as exc:  # the options are public: their message may be shown
        raise refusal(f"release options of the {name} synthesizer: {exc}", field="release", page="release") from None


@dataclass(frozen=True)
class SynthesizerRelease:
    """A synthesizer calibrated to the recipe's (epsilon, delta): its Gaussian releases are
    composed exactly to that total (docs/synthesizers.md); sampling rows is post-processing."""

    method: str
    options: tuple[tuple[str, object], ...]
    epsilon: float
    delta: float
    #: the zCDP rho its releases may spend in all (a zCDP plan; MST and AIM calibrate to it
    #: exactly from (epsilon, delta), a Gaussian-DP synthesizer's mu^2/2 stays at most it)
    rho: float | None = None
    #: the GDP mu allowance (a Gaussian-DP plan; the fit's mu stays at most it)
    mu: float | None = None

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            kind="dp",
            label=f"{self.method} synthesizer (its releases composed exactly to this total)",
            zcdp_rho=self.rho if self.mu is None else None,
            gdp_mu=self.mu,
        )

    def _synthesizer(self) -> Synthesizer:
        from dpstudio.engine.synth import SYNTHESIZERS

        return SYNTHESIZERS[self.method](**dict(self.options))

    def budget_plan(self, rows: int, n_classes: int) -> list[dict[str, Any]]:
        """How the fit will split this budget over its noisy releases, from public quantities only
        (the synthesizer's own ``budget_plan``: what the wizard shows before the release)."""
        plan: list[dict[str, Any]] = self._synthesizer().budget_plan(self.epsilon, self.delta, rows, n_classes)
        return plan

    def one_way_tv_forecast(self, recipe: Recipe, rows: int, rows_out: int | None = None) -> tuple[float, float] | None:
        """(forecast, sampling part) of the mean 1-way total variation of the synthetic table,
        from this budget's 1-way measurement noise and the sampling of ``rows_out`` rows (default
        ``rows``) -- :meth:`CellLayout.one_way_tv_forecast`; None for a synthesizer without
        1-way measurements (PEARL, DP-MERF)."""
        synth = self._synthesizer()
        one_way_mu = getattr(synth, "one_way_mu", None)
        layout_of = getattr(synth, "layout", None)
        if one_way_mu is None or layout_of is None:
            return None
        layout = layout_of(table_spec(recipe))
        forecast: tuple[float, float] = layout.one_way_tv_forecast(
            one_way_mu(self.epsilon, self.delta, layout.d),
            rows,
            rows_out or rows,
            iid=not getattr(synth, "systematic_sampling", False),
        )
        return forecast

    def one_way_tv(self, recipe: Recipe, real: pd.DataFrame, synthetic: pd.DataFrame) -> float | None:
        """The mean 1-way total variation between ``real`` and ``synthetic`` on the cells the
        forecast uses (internal: it reads the raw data)."""
        synth = self._synthesizer()
        layout_of = getattr(synth, "layout", None)
        if layout_of is None:
            return None
        spec = table_spec(recipe)
        value: float = layout_of(spec).one_way_tv(_as_strings(real, spec), _as_strings(synthetic, spec))
        return value

    def release(
        self,
        data: pd.DataFrame,
        spec: TableSpec,
        rng: RandomSource,
        *,
        progress: ProgressCallback = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> FittedSynth:
        """The fitted generator (its own ``privacy_loss()`` is checked against this one's)."""
        synth = self._synthesizer()
        return synth.fit(data, spec, epsilon=self.epsilon, delta=self.delta, rng=rng, progress=progress, cancel=cancel)


def compile(recipe: Recipe) -> ReleasePlan:
    """The synthetic-data release of ``recipe``, compiled (no data read)."""
    from dpstudio.plan.domains import domain_units

    method = method_of(recipe)
    check_options(method, recipe)
    opts = _options(recipe)
    # the epsilon the user typed is the release's total: DP domain estimates and the synthesizer
    # share it, planned up front and composed in zCDP (or Gaussian DP when every part is Gaussian)
    split = budget_split(recipe, method)
    domains = domain_units(recipe, split.charges)
    mech = SynthesizerRelease(
        method, tuple(sorted(opts.items())), split.synth_epsilon, split.synth_delta, split.rho, split.mu
    )
    kept = tuple(c.name for c in recipe.columns if c.role not in ("identifier", "ignore", "embedding"))
    unit = PlanUnit(
        name="whole table",
        kind="synthesizer",
        columns=kept,
        mechanism_name=method,
        loss=mech.privacy_loss(),
        mechanism=mech,
        budget_share=split.share,
        description=METHOD_TEXT[method],
        facts=opts,
        post_processing=(
            "rows are sampled from the fitted generator (post-processing)",
            "output types follow the recipe's declared types",
        ),
    )
    units = domains + [unit]
    how = {"basic": "basic", "zcdp": "zcdp+basic", "gdp": "gdp"}[split.calculus]
    composition = compose([u.loss for u in units], delta=recipe.budget.delta or None, method=how)
    return ReleasePlan(
        release_type="synthetic",
        guarantee="central",
        units=tuple(units),
        composition=composition,
        notes=(
            "synthetic rows are generated from noisy summaries; they are not real "
            "records, but their statistics follow the data only as far as the budget "
            "allows",
        ),
        recipe=recipe,
        compiler=compile,
    )


def _as_strings(frame: pd.DataFrame, spec: TableSpec) -> pd.DataFrame:
    """Categorical columns as the text their (string) category lists name
    (:func:`dpstudio.engine.synth.encoding.category_text`)."""
    from dpstudio.engine.synth.encoding import category_text

    return pd.DataFrame(
        {
            c.name: category_text(frame[c.name], c.categories) if c.kind == "categorical" else frame[c.name]
            for c in spec.all_columns
        }
    )


def _declared_dtypes(synth: pd.DataFrame, recipe: Recipe) -> pd.DataFrame:
    """Output types from the recipe's declared types only (never the raw frame's dtypes, which
    change with a single missing value)."""
    for c in recipe.columns:
        if c.name not in synth.columns:
            continue
        if c.type == "integer" or (
            c.domain is not None and c.domain.categories and all(is_integer_text(x) for x in c.domain.categories)
        ):
            conv = pd.to_numeric(synth[c.name], errors="coerce")
            if c.domain is not None and c.domain.missing:
                if conv.notna().sum() == synth[c.name].notna().sum():
                    # a column that may be empty: pandas' nullable integers keep the empty cells,
                    # whether or not this block drew one (the type follows the recipe only)
                    synth[c.name] = conv.round().astype("Int64")
            elif conv.notna().all():
                synth[c.name] = conv.round().astype(np.int64)
        elif c.type == "categorical" and c.domain is not None and c.domain.categories:
            # an empty cell stays empty (never the text "nan"/"None", which could be a category)
            col = synth[c.name]
            synth[c.name] = pd.Categorical(col.astype(str).where(col.notna()), categories=list(c.domain.categories))
    return synth


#: ``RandomSource.stream`` purpose of sampling synthetic rows: block ``k`` from stream (2, k)
SYNTH_STREAM = 2


def execute(
    plan: ReleasePlan,
    frame: pd.DataFrame,
    rng: RandomSource,
    *,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> ReleaseOutcome:
    """Run the domain estimates, then fit the plan's own synthesizer object and sample rows."""
    from dpstudio.plan.domains import start_central

    recipe, domain_notes, final, unit, drawn_by = start_central(plan, frame, rng, "synthesizer")
    mech = unit.mechanism
    assert isinstance(mech, SynthesizerRelease), unit.name
    spec = table_spec(recipe)
    data = _as_strings(frame, spec)
    drawn_by[unit.name] = mech
    fitted = mech.release(data, spec, rng, progress=sub_progress(progress, 0.0, 0.9), cancel=cancel)
    rows = recipe.outputs.rows or len(frame)
    return finish_fit(
        final, recipe, unit, mech, fitted, rows, rng, domain_notes, drawn_by, progress=progress, cancel=cancel
    )


def finish_fit(
    final: ReleasePlan,
    recipe: Recipe,
    unit: PlanUnit,
    mech: SynthesizerRelease,
    fitted: FittedSynth,
    rows: int,
    rng: RandomSource,
    domain_notes: dict[str, Any],
    drawn_by: dict[str, Any],
    *,
    write: Callable[[pd.DataFrame], None] | None = None,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> ReleaseOutcome:
    """Check the fit's record against its part of the plan, then sample ``rows`` rows block by
    block (block ``k`` from the random stream ``(SYNTH_STREAM, k)``: any engine samples the same
    rows for a fixed seed) -- handed to ``write`` one block at a time, or returned as one table.
    The published fidelity figure compares the first block as drawn (up to
    :data:`~dpstudio.engine.data.stream.BLOCK_ROWS` rows) with the noisy 1-way marginals."""
    from dpstudio.engine.data.stream import BLOCK_ROWS
    from dpstudio.plan.record import block_starts

    method = mech.method
    cancel.check()
    loss = fitted.privacy_loss()
    # against the synthesizer's own part (its (epsilon', delta') in the plan), not the typed total:
    # the DP domain estimates took the rest
    if loss.epsilon > mech.epsilon * (1 + 1e-9) or loss.delta > mech.delta * (1 + 1e-9):
        raise RuntimeError(
            f"synthesizer {method} spent ({loss.epsilon}, {loss.delta}) beyond its part of the plan "
            f"({mech.epsilon}, {mech.delta})"
        )
    _check_against_unit(method, loss, mech)
    proven = proven_figure(loss)
    if proven is not None and not (
        proven["epsilon"] <= mech.epsilon * (1 + 1e-9) and proven["delta"] <= mech.delta * (1 + 1e-9)
    ):
        raise RuntimeError(
            f"synthesizer {method}: the figure proven for its noise "
            f"({proven['epsilon']}, {proven['delta']}) exceeds its part of the plan "
            f"({mech.epsilon}, {mech.delta})"
        )
    fidelity = None
    pieces: list[pd.DataFrame] = []
    starts = block_starts(rows, BLOCK_ROWS)
    for k, first in enumerate(starts):
        cancel.check()
        progress(0.9 + 0.09 * k / len(starts), f"sampling rows {first + 1:,} of {rows:,}")
        sample = fitted.sample(min(BLOCK_ROWS, rows - first), rng.stream(SYNTH_STREAM, k))
        if k == 0:
            # the fidelity figure compares the sample as drawn (the synthesizer's own category labels)
            fidelity = fitted.marginal_fidelity(sample)
        block = _declared_dtypes(sample.copy(), recipe)
        if write is not None:
            write(block)
        else:
            pieces.append(block)
    out = None if write is not None else (pieces[0] if len(pieces) == 1 else pd.concat(pieces, ignore_index=True))
    transcript = [
        f"{c.label}: epsilon={c.epsilon:.4g}, delta={c.delta:.3g}"
        + (f", mu={c.gdp_mu:.4g}" if c.gdp_mu is not None else "")
        for c in fitted.components
    ]
    public: dict[str, Any] = {"synthesizer": method, "rows": int(rows), "synthesizer_transcript": transcript}
    # structured parts for the report's accounting table (the transcript strings are rounded)
    public["synthesizer_components"] = [
        {"label": c.label, "epsilon": float(c.epsilon), "delta": float(c.delta), "gdp_mu": c.gdp_mu}
        for c in fitted.components
    ]
    if fidelity is not None:
        public["synthesizer_fidelity"] = fidelity
    if proven is not None:
        public["synthesizer_proven"] = proven
    training = _training_note(getattr(fitted, "info", None) or {})
    if training:
        public["synthesizer_training"] = training
    return ReleaseOutcome(
        data=out, steward_stats=dict(domain_notes), public_stats=public, final_plan=final, drawn_by=drawn_by
    )


def _check_against_unit(method: str, loss: PrivacyLoss, mech: SynthesizerRelease) -> None:
    """The fit's own record (its ``privacy_loss()``) against the plan unit's part of the budget:
    a zCDP fit's rho at most the unit's, a Gaussian-DP fit's mu at most the unit's allowance."""
    tol = 1 + 1e-9
    rho = (loss.details or {}).get("zcdp_rho", loss.zcdp_rho)
    mu = loss.gdp_mu
    if mech.rho is not None and mech.mu is None:
        spent = rho if rho is not None else (mu * mu / 2.0 if mu is not None else None)
        if spent is None or not spent <= mech.rho * tol:
            raise RuntimeError(f"synthesizer {method} spent rho {spent} beyond its part of the plan ({mech.rho})")
    if mech.mu is not None and (mu is None or not mu <= mech.mu * tol):
        raise RuntimeError(f"synthesizer {method} spent mu {mu} beyond its part of the plan ({mech.mu})")


def proven_figure(loss: PrivacyLoss) -> dict[str, Any] | None:
    """The (epsilon, delta) proven for the noise as sampled, from a synthesizer's total.

    The noise that runs is a discrete Gaussian on a lattice (and, for MST, an exactly sampled
    exponential mechanism).  PEARL / DP-MERF calibrate continuous Gaussian DP (Dong, Roth & Su
    2019) and carry the proven figure of the discrete law beside it (``privacy.attach_proven``);
    MST's zCDP total holds for the discrete Gaussian as is (Canonne, Kamath & Steinke 2020).
    None when the synthesizer states no proven figure or it is not finite (no noise)."""
    d = getattr(loss, "details", None) or {}
    eps, delta = d.get("proven_epsilon"), d.get("proven_delta")
    if eps is None or delta is None or not (np.isfinite(eps) and np.isfinite(delta)):
        return None
    out: dict[str, Any] = {"epsilon": float(eps), "delta": float(delta), "basis": str(d.get("proven_by", ""))}
    for key in ("gdp_epsilon_continuous", "lattice_H"):
        if d.get(key) is not None and np.isfinite(d[key]):
            out[key] = float(d[key])
    return out


def _training_note(info: dict[str, Any]) -> str:
    """How a generator was trained (shards, worker processes): not a privacy fact, but it
    tells a reader why a re-run on another machine may differ in the last digits."""
    if "train_shards" not in info:
        return ""
    procs = info.get("train_processes") or 0
    note = f"{info['train_shards']} batch shards, " + (f"{procs} worker processes" if procs else "in one process")
    if info.get("train_processes_unavailable"):
        note += f" (worker processes unavailable: {info['train_processes_unavailable']})"
    return note
