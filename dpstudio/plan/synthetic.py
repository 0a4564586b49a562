"""Release type ``synthetic``: DP synthetic rows from a generator fitted on one-shot private
releases (PEARL, Liew et al. 2022; or the DP-MERF / MST baselines).  The synthesizer calibrates its
Gaussian releases so that their exact composition is the recipe's (epsilon, delta); DP domain
estimates, if any, are added on top by basic composition.  Sampling rows is post-processing.
"""

from __future__ import annotations

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

DEFAULT_METHOD = "pearl"
METHOD_TEXT = {
    "pearl": "PEARL: private characteristic-function embedding + generator (Liew et al. 2022)",
    "merf": "DP-MERF: random-Fourier-feature mean embedding + generator (Harder et al. 2021)",
    "mst": "MST: noisy marginals on a maximum spanning tree (McKenna et al. 2021)",
}


def method_of(recipe: Recipe) -> str:
    method: str = recipe.release.options.get("method", DEFAULT_METHOD)
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
            spec = ColumnSpec.numeric(c.name, d.low, d.high, integer=c.type == "integer")
        else:
            assert d.categories is not None, c.name
            spec = ColumnSpec.categorical(c.name, tuple(d.categories))
        if c.role == "label":
            label = spec
        else:
            features.append(spec)
    if not features:
        raise refusal("release 'synthetic': no kept column to synthesise", field="columns", page="columns")
    return TableSpec(columns=tuple(features), label=label)


#: above this many categories in one column MST's 2-way tables get too sparse for the noise
MST_MAX_CATEGORIES = 100


def recommend_method(recipe: Recipe) -> tuple[str, str]:
    """The synthesizer to suggest for this recipe's public schema, with a one-line reason.

    Why these rules: on the Adult benchmark (benchmarks/RESULTS.md, 12 classifiers, 5 seeds)
    MST scored the best hard-label ROC at (1, 1e-5) and fits in under a second, against minutes
    for the embedding methods; its weakness is large domains, because each tree edge measures a
    full |A| x |B| table whose cells drown in noise, while an embedding method's release has the
    same size whatever the domains; of those, DP-MERF matched or beat PEARL on Adult at every
    epsilon (and was stabler at eps = 10).  Only public input (the declared domains) is used.
    """
    kept = [c for c in recipe.columns if c.role not in ("identifier", "ignore", "embedding")]
    # declared lists only (a column still missing its domain counts as small for now)
    biggest = max(
        (len(c.domain.categories or ()) for c in kept if c.type not in NUMERIC_TYPES and c.domain is not None),
        default=0,
    )
    if biggest > MST_MAX_CATEGORIES:
        return "merf", (
            f"a column has {biggest} categories: MST's two-way tables would be mostly "
            "noise; a mean embedding does not grow with the domain, and DP-MERF matched "
            "or beat PEARL at every epsilon in our Adult benchmark"
        )
    return "mst", (
        "marginal-based MST kept the most classifier utility in our Adult benchmark and fits in about a second"
    )


def _options(recipe: Recipe) -> dict[str, Any]:
    opts = recipe.release.options.to_dict()
    opts.pop("method", None)
    return opts


@dataclass(frozen=True)
class SynthesizerRelease:
    """A synthesizer calibrated to the recipe's (epsilon, delta): its Gaussian releases are
    composed exactly to that total (docs/synthesizers.md); sampling rows is post-processing."""

    method: str
    options: tuple[tuple[str, object], ...]
    epsilon: float
    delta: float

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            kind="dp",
            label=f"{self.method} synthesizer (its Gaussian releases composed exactly to this total)",
        )

    def _synthesizer(self) -> Synthesizer:
        from dpstudio.engine.synth import SYNTHESIZERS

        return SYNTHESIZERS[self.method](**dict(self.options))

    def budget_plan(self, rows: int, n_classes: int) -> list[dict[str, Any]]:
        """How the fit will split this budget over its noisy releases, from public quantities only
        (the synthesizer's own ``budget_plan``: what the wizard shows before the release)."""
        plan: list[dict[str, Any]] = self._synthesizer().budget_plan(self.epsilon, self.delta, rows, n_classes)
        return plan

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
    opts = _options(recipe)
    # the epsilon the user typed is the release's total: DP domain estimates are paid out of it
    # (basic composition, the plan's method) and the synthesizer gets what is left
    domains = domain_units(recipe)
    spent_eps = sum(float(u.loss.epsilon) for u in domains)
    spent_delta = sum(float(u.loss.delta) for u in domains)
    eps = float(recipe.budget.epsilon) - spent_eps
    delta = float(recipe.budget.delta) - spent_delta
    if domains and (eps <= 0 or delta < 0 or (recipe.budget.delta > 0 and delta <= 0)):
        names = ", ".join(c for u in domains for c in u.columns)
        raise refusal(
            f"the DP estimates of the domains of {names} use epsilon {spent_eps:.4g} and delta "
            f"{spent_delta:.3g}: the whole budget of this release (epsilon {recipe.budget.epsilon:g}, "
            f"delta {recipe.budget.delta:g}), nothing is left for the synthesizer; give a larger "
            "budget or type public domains",
            field="budget",
            page="budget",
        )
    mech = SynthesizerRelease(method, tuple(sorted(opts.items())), eps, delta)
    kept = tuple(c.name for c in recipe.columns if c.role not in ("identifier", "ignore", "embedding"))
    unit = PlanUnit(
        name="whole table",
        kind="synthesizer",
        columns=kept,
        mechanism_name=method,
        loss=mech.privacy_loss(),
        mechanism=mech,
        budget_share=(mech.epsilon, mech.delta),
        description=METHOD_TEXT[method],
        facts=opts,
        post_processing=(
            "rows are sampled from the fitted generator (post-processing)",
            "output types follow the recipe's declared types",
        ),
    )
    units = domains + [unit]
    composition = compose([u.loss for u in units], delta=recipe.budget.delta or None, method="basic")
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
    """Categorical columns as strings so they match the recipe's (string) category lists."""
    out: dict[str, pd.Series] = {}
    for c in spec.all_columns:
        s = frame[c.name]
        if c.kind == "categorical" and not pd.api.types.is_string_dtype(s.dtype):
            f = pd.to_numeric(s, errors="coerce")
            integral = f.notna() & (f == f.round())
            s = s.astype("string").where(~integral, f.round().astype("Int64").astype("string"))
        out[c.name] = s
    return pd.DataFrame(out)


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
            if conv.notna().all():
                synth[c.name] = conv.round().astype(np.int64)
        elif c.type == "categorical" and c.domain is not None and c.domain.categories:
            synth[c.name] = pd.Categorical(synth[c.name].astype(str), categories=list(c.domain.categories))
    return synth


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
    method = mech.method
    spec = table_spec(recipe)
    data = _as_strings(frame, spec)
    drawn_by[unit.name] = mech
    fitted = mech.release(data, spec, rng, progress=sub_progress(progress, 0.0, 0.9), cancel=cancel)
    cancel.check()
    rows = recipe.outputs.rows or len(frame)
    progress(0.92, f"sampling {rows} rows")
    sample = fitted.sample(rows, rng)
    # the fidelity figure compares the sample as drawn (the synthesizer's own category labels)
    fidelity = fitted.marginal_fidelity(sample)
    out = _declared_dtypes(sample.copy(), recipe)
    loss = fitted.privacy_loss()
    if loss.epsilon > recipe.budget.epsilon * (1 + 1e-9) or loss.delta > recipe.budget.delta * (1 + 1e-9):
        raise RuntimeError(
            f"synthesizer {method} spent ({loss.epsilon}, {loss.delta}) beyond the recipe's "
            f"({recipe.budget.epsilon}, {recipe.budget.delta})"
        )
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
    proven = proven_figure(loss)
    if proven is not None:
        if not (
            proven["epsilon"] <= recipe.budget.epsilon * (1 + 1e-9)
            and proven["delta"] <= recipe.budget.delta * (1 + 1e-9)
        ):
            raise RuntimeError(
                f"synthesizer {method}: the figure proven for its noise "
                f"({proven['epsilon']}, {proven['delta']}) exceeds the recipe's "
                f"({recipe.budget.epsilon}, {recipe.budget.delta})"
            )
        public["synthesizer_proven"] = proven
    training = _training_note(getattr(fitted, "info", None) or {})
    if training:
        public["synthesizer_training"] = training
    return ReleaseOutcome(
        data=out, steward_stats=dict(domain_notes), public_stats=public, final_plan=final, drawn_by=drawn_by
    )


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
