"""Release type ``model``: DP logistic regression (docs/models.md) by one of two mechanisms,
option ``mechanism``:

* ``"gibbs"``: one exact draw from a Gibbs posterior (Minami 2015; :mod:`gibbs_logistic`);
* ``"objective"``: objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011; Kifer, Smith &
  Thakurta 2012; :mod:`dpstudio.engine.models.objective`);
* ``"auto"`` (default): chosen from the public row count n (public under replace-one
  neighbours), D = d + 1 and epsilon (:func:`choose`: objective perturbation when
  n eps / D >= 1); the compiled plan states the rule, the finalised plan (what the report
  reads) the choice and why.

Features: the kept numeric/boolean non-label columns, scaled with their PUBLIC bounds to
[-1, 1] and by R/sqrt(d) (option ``scaling`` = "ball", default: ||z|| <= R with no clipping
inside the bounds) or scaled to [-1, 1] then clipped to the L2 ball of radius R ("box").
Values outside the bounds are clipped; missing values take the middle of the bounds (z = 0).
Label: the label column's declared categories; with two the first is -1; with K > 2 the model
is one-vs-rest (objective perturbation only, each class at epsilon/K, delta/K).  Options:
``norm_bound`` R (default 1), ``lambda`` (default: each mechanism's own rule),
``prior_scale``, ``sampler_delta_fraction`` (default 1e-3), ``sampler`` ("rejection", exact; or
"ula", refused unless its published schedule fits ``max_steps``) for the Gibbs model;
``noise`` ("auto", "gaussian", "laplace"), ``class_weights`` (public weight per label category,
a mapping; sensitivity scales with the largest), ``tolerance_fraction`` and ``reference_norm``
for objective perturbation.  The guarantees and every number behind them are in the two engine
modules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine.accounting import PrivacyLoss, compose
from dpstudio.engine.models import gibbs_logistic as gl
from dpstudio.engine.models import objective as op
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import RecipeError, UserError
from dpstudio.plan.units import PlanUnit, ReleaseOutcome, ReleasePlan, refusal
from dpstudio.recipe.model import Column, Params, Recipe
from dpstudio.recipe.validate import NUMERIC_TYPES


def _features(recipe: Recipe) -> list[Column]:
    return [
        c
        for c in recipe.columns
        if c.role not in ("identifier", "ignore", "label") and (c.type in NUMERIC_TYPES or c.type == "boolean")
    ]


def _label(recipe: Recipe) -> Column:
    labels = recipe.columns_with_role("label")
    if len(labels) != 1:
        raise refusal("release 'model': needs exactly one label column", field="columns", page="columns")
    lab = labels[0]
    cats = lab.domain.categories if lab.domain is not None else None
    if not cats or len(cats) < 2:
        # the count only: the list may have been copied from the private data
        raise refusal(
            f"column {lab.name!r}: the DP logistic regression needs at least 2 declared "
            f"label categories, got {len(cats or ())}",
            field=f"column:{lab.name}",
            page="columns",
        )
    return lab


MECHANISMS = ("auto", "gibbs", "objective")
#: "auto" fits by objective perturbation when n eps / D reaches this (validated, not tuned on tests)
AUTO_ROWS_EPS_PER_COEFFICIENT = 1.0
#: the plan's mechanism names (the report prints them; "gibbs-logistic" has its own text)
MECHANISM_NAMES = {
    "auto": "logistic regression, mechanism chosen automatically",
    "gibbs": "gibbs-logistic",
    "objective": "logistic regression, objective perturbation",
}
MECHANISM_TITLES = {
    "gibbs": "Gibbs posterior sampling (Minami 2015)",
    "objective": "objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011)",
}


def _bad_option(text: str) -> RecipeError:
    return refusal(text, field="release", page="release")


def _options(recipe: Recipe) -> dict[str, Any]:
    return _options_from(recipe.release.options)


def _options_from(o: Params) -> dict[str, Any]:
    out: dict[str, Any] = {
        "norm_bound": float(o.get("norm_bound", 1.0)),
        "lambda": o.get("lambda"),
        "prior_scale": o.get("prior_scale"),
        "sampler_delta_fraction": float(o.get("sampler_delta_fraction", gl.DEFAULT_SAMPLER_DELTA_FRACTION)),
        "sampler": str(o.get("sampler", "rejection")),
        "scaling": str(o.get("scaling", "ball")),
        "max_steps": float(o.get("max_steps", 1e7)),
    }
    if out["sampler"] not in ("rejection", "ula"):
        raise _bad_option(f"release option sampler={out['sampler']!r}: choose 'rejection' or 'ula'")
    if out["scaling"] not in ("ball", "box"):
        raise _bad_option(f"release option scaling={out['scaling']!r}: choose 'ball' or 'box'")
    if not out["norm_bound"] > 0:
        raise _bad_option(f"release option norm_bound must be > 0, got {out['norm_bound']!r}")
    return out


def _choice_options(recipe: Recipe, lab: Column) -> dict[str, Any]:
    """The options that choose between the mechanisms and calibrate objective perturbation
    (kept apart from :func:`_options` so a Gibbs release's object is what it always was)."""
    assert lab.domain is not None and lab.domain.categories is not None, lab.name
    return _choice_options_from(recipe.release.options, [str(c) for c in lab.domain.categories])


def _choice_options_from(o: Params, cats: list[str]) -> dict[str, Any]:
    mech = str(o.get("mechanism", "auto"))
    if mech not in MECHANISMS:
        raise _bad_option(f"release option mechanism={mech!r}: choose 'auto', 'gibbs' or 'objective'")
    noise = str(o.get("noise", "auto"))
    if noise not in op.NOISE_KINDS:
        raise _bad_option(f"release option noise={noise!r}: choose 'auto', 'gaussian' or 'laplace'")
    frac = float(o.get("tolerance_fraction", op.DEFAULT_TOLERANCE_FRACTION))
    if not 0 < frac < 1:
        raise _bad_option(f"release option tolerance_fraction must lie in (0, 1), got {frac!r}")
    ref = o.get("reference_norm")
    if ref is not None and not float(ref) > 0:
        raise _bad_option(f"release option reference_norm must be > 0, got {ref!r}")
    raw = o.get("class_weights")
    if isinstance(raw, Params):  # a JSON object in the recipe
        raw = raw.to_dict()
    weights = [1.0] * len(cats)
    if raw is not None:
        if not isinstance(raw, dict):
            raise _bad_option('release option class_weights: give a weight per label category, e.g. {"yes": 3}')
        unknown = sorted(str(k) for k in raw if str(k) not in cats)
        if unknown:
            raise _bad_option(f"release option class_weights: {unknown} are not label categories")
        for k, v in raw.items():
            w = float(v)
            if not (w > 0 and math.isfinite(w)):
                raise _bad_option(f"release option class_weights: weight of {k!r} must be > 0, got {v!r}")
            weights[cats.index(str(k))] = w
    weighted = len(set(weights)) > 1
    if mech == "gibbs" and (len(cats) > 2 or weighted):
        raise refusal(
            "release 'model': the Gibbs posterior model is for 2 label categories without class weights; "
            "choose mechanism 'objective' or 'auto'",
            field="release",
            page="release",
        )
    return {
        "mechanism": mech,
        "noise": noise,
        "tolerance_fraction": frac,
        "reference_norm": None if ref is None else float(ref),
        "class_weights": tuple(weights),
    }


@dataclass(frozen=True)
class Choice:
    """Which mechanism fits the model and why (public numbers only)."""

    mechanism: str  # "gibbs" | "objective"
    reason: str
    objective: op.ObjectiveCalibration | None
    gibbs: gl.GibbsCalibration | None
    predicted: dict[str, float]

    @property
    def title(self) -> str:
        return MECHANISM_TITLES[self.mechanism]

    def to_json(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "reason": self.reason, "predicted_excess_risk": dict(self.predicted)}


def default_options(classes: int = 2) -> dict[str, Any]:
    """The options :func:`choose` gets for a recipe that sets none, with ``classes`` label
    categories (the benchmark and the tests choose with exactly the release's defaults)."""
    return {**_options_from(Params()), **_choice_options_from(Params(), [str(i) for i in range(classes)])}


def choose(
    n: int,
    dim: int,
    classes: int,
    epsilon: float,
    delta: float,
    options: dict[str, Any],
) -> Choice:
    """The mechanism for a table of ``n`` rows (public), ``dim`` = D = features + 1, ``classes``
    label categories: the one asked for, or ("auto") objective perturbation when
    n eps / D >= :data:`AUTO_ROWS_EPS_PER_COEFFICIENT` (its noise, of norm ~ D/(n eps) relative to
    the data's gradient, is then small) and the Gibbs posterior below (its strong public prior
    shrinks a noise-dominated fit towards 0, which does better there).  The threshold was chosen
    on validation splits carved from training rows (benchmarks/RESULTS_model.md).  Depends on no
    data beyond the row count."""
    mech = options["mechanism"]
    weights = options["class_weights"]
    R = options["norm_bound"]
    lam = None if options["lambda"] is None else float(options["lambda"])
    B = op.default_reference_norm(dim, R) if options["reference_norm"] is None else options["reference_norm"]
    problems = 1 if classes == 2 else classes
    ocal: op.ObjectiveCalibration | None = None
    gcal: gl.GibbsCalibration | None = None
    predicted: dict[str, float] = {}
    if mech in ("auto", "objective"):
        ocal = op.calibrate(
            n,
            dim,
            epsilon,
            delta,
            norm_bound=R,
            lam=lam,
            noise=options["noise"],
            problems=problems,
            weight_max=max(weights),
            tolerance_fraction=options["tolerance_fraction"],
            reference_norm=B,
        )
        predicted["objective_predicted_excess_risk"] = ocal.predicted_excess
    gibbs_ok = classes == 2 and len(set(weights)) == 1
    if mech == "gibbs" or (mech == "auto" and gibbs_ok):
        gcal = gl.calibrate(
            n,
            dim,
            epsilon,
            delta,
            norm_bound=R,
            lam=lam,
            prior_scale=None if options["prior_scale"] is None else float(options["prior_scale"]),
            sampler_delta_fraction=options["sampler_delta_fraction"],
        )
    if mech != "auto":
        return Choice(mech, "set in the recipe", ocal, gcal, predicted)
    if not gibbs_ok:
        why = f"{classes} label categories" if classes > 2 else "class weights"
        return Choice(
            "objective",
            f"the Gibbs posterior handles 2 categories without weights; this release has {why}",
            ocal,
            gcal,
            predicted,
        )
    ratio = n * epsilon / dim
    predicted["rows_x_epsilon_per_coefficient"] = ratio
    pick = "objective" if ratio >= AUTO_ROWS_EPS_PER_COEFFICIENT else "gibbs"
    shown = f"{ratio:,.0f}" if ratio >= 1000 else f"{ratio:.3g}"
    head = f"{n} rows \u00d7 \u03b5 {epsilon:g} / {dim} coefficients = {shown}"
    reason = (
        f"{head} \u2265 {AUTO_ROWS_EPS_PER_COEFFICIENT:g}: enough rows for objective perturbation's noise"
        if pick == "objective"
        else f"{head} < {AUTO_ROWS_EPS_PER_COEFFICIENT:g}: too few rows for objective perturbation's noise; "
        "the Gibbs posterior's stronger shrinkage does better"
    )
    return Choice(pick, reason, ocal, gcal, predicted)


@dataclass(frozen=True)
class GibbsLogisticRelease:
    """DP logistic regression: one exact draw from the Gibbs posterior (Minami 2015, Thm 8 and
    Thm 12; docs/models.md).  Its inverse temperature needs the public row count, so the sampler
    is calibrated by :meth:`release` from n and this object's (epsilon, delta) and options."""

    epsilon: float
    delta: float
    options: tuple[tuple[str, Any], ...]

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            kind="dp",
            label="Gibbs-posterior logistic regression (exact rejection sampler)",
            details={"delta_split": "delta_gibbs + (e^eps + 1) gamma"},
        )

    def calibrate(self, n: int, dim: int) -> gl.GibbsCalibration:
        """The sampler's calibration for ``n`` rows and ``dim`` coefficients (features and the
        intercept): what :meth:`release` draws with, and what the plan prints before it runs."""
        opts = dict(self.options)
        return gl.calibrate(
            n,
            dim,
            self.epsilon,
            self.delta,
            norm_bound=opts["norm_bound"],
            lam=None if opts["lambda"] is None else float(opts["lambda"]),
            prior_scale=None if opts["prior_scale"] is None else float(opts["prior_scale"]),
            sampler_delta_fraction=opts["sampler_delta_fraction"],
        )

    def release(
        self,
        yz: npt.NDArray[np.float64],
        rng: RandomSource,
        *,
        progress: ProgressCallback = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> tuple[gl.GibbsCalibration, gl.SampleResult]:
        """``(calibration, sample)`` for the signed, scaled design ``yz`` (n rows)."""
        opts = dict(self.options)
        n, d = yz.shape
        cal = self.calibrate(n, d)
        progress(0.05, "sampling the Gibbs posterior")
        if opts["sampler"] == "rejection":
            res = gl.sample_rejection(yz, cal, rng, progress=progress, cancel=cancel)
        else:
            res = gl.sample_ula(yz, cal, rng, max_steps=int(opts["max_steps"]), progress=progress, cancel=cancel)
        return cal, res


@dataclass(frozen=True)
class LogisticRegressionRelease:
    """DP logistic regression whose mechanism is chosen when it runs ("auto") or is objective
    perturbation ("objective"): both need the public row count, so :meth:`release` calibrates
    from n and this object's (epsilon, delta) and options (:func:`choose`).  A Gibbs draw made
    here is the one :class:`GibbsLogisticRelease` makes with the same options and randomness."""

    epsilon: float
    delta: float
    options: tuple[tuple[str, Any], ...]
    classes: int

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            kind="dp",
            label="logistic regression ("
            + (
                "objective perturbation"
                if dict(self.options)["mechanism"] == "objective"
                else "Gibbs posterior or objective perturbation, chosen from public n"
            )
            + ")",
            details={"delta_split": "the chosen mechanism's own (docs/models.md)"},
        )

    def choose(self, n: int, dim: int) -> Choice:
        return choose(n, dim, self.classes, self.epsilon, self.delta, dict(self.options))

    def release(
        self,
        zt: npt.NDArray[np.float64],
        codes: npt.NDArray[np.int64],
        rng: RandomSource,
        *,
        progress: ProgressCallback = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> tuple[Choice, npt.NDArray[np.float64], dict[str, Any]]:
        """``(choice, theta, info)``: theta one row per class (K > 2) or one row (binary, the
        first category is -1) over the columns of ``zt`` = (z, 1)."""
        opts = dict(self.options)
        n, D = zt.shape
        choice = self.choose(n, D)
        if choice.mechanism == "gibbs":
            cal = choice.gibbs
            assert cal is not None
            yz = np.where(codes == 0, -1.0, 1.0)[:, None] * zt
            progress(0.05, "sampling the Gibbs posterior")
            if opts["sampler"] == "rejection":
                res = gl.sample_rejection(yz, cal, rng, progress=progress, cancel=cancel)
            else:
                res = gl.sample_ula(yz, cal, rng, max_steps=int(opts["max_steps"]), progress=progress, cancel=cancel)
            info = {
                "accepted": res.accepted,
                "proposals": res.proposals,
                **{k: v for k, v in res.info.items() if k != "ula"},
            }
            return choice, gl.snap(res.theta)[None, :], info
        ocal = choice.objective
        assert ocal is not None
        w = np.asarray(opts["class_weights"], dtype=np.float64)[codes]
        targets = [1] if self.classes == 2 else list(range(self.classes))
        thetas = []
        iters = []
        for j, k in enumerate(targets):
            progress(0.05 + 0.9 * j / len(targets), "fitting the perturbed objective")
            y = np.where(codes == k, 1.0, -1.0)
            r = op.release(y[:, None] * zt, ocal, rng, weights=w, cancel=cancel)
            thetas.append(r.theta)
            iters.append(int(r.info["newton_iterations"]))
        return choice, np.vstack(thetas), {"newton_iterations": iters}


def compile(recipe: Recipe) -> ReleasePlan:
    """The DP model release of ``recipe``, compiled (no data read)."""
    from dpstudio.plan.domains import domain_units

    opts = _options(recipe)
    lab = _label(recipe)
    feats = _features(recipe)
    if not feats:
        raise refusal("release 'model': no numeric/boolean feature columns", field="columns", page="columns")
    for c in feats:
        if c.type != "boolean" and (c.domain is None or (not c.domain.known and c.domain.source != "dp")):
            raise refusal(f"column {c.name!r}: needs public bounds", field=f"column:{c.name}", page="columns")
    b = recipe.budget
    if not (b.delta > 0):
        raise refusal("release 'model': needs delta > 0", field="budget", page="budget")
    copts = _choice_options(recipe, lab)
    post = (
        "features scaled with their public bounds; values outside are clipped, "
        "missing values take the middle of the bounds",
        "coefficients mapped back to the original units",
    )
    gibbs_note = (
        "the sampler is exact rejection sampling capped so that TV <= gamma (Minami 2015, Thm 12, "
        "adds (e^eps + 1) gamma to delta); its running time depends on the data and is not released"
    )
    unit: PlanUnit
    if copts["mechanism"] == "gibbs":
        unit = _gibbs_unit(recipe, opts, lab, feats, "set in the recipe")
        notes: tuple[str, ...] = (gibbs_note,)
    else:
        cats = lab.domain.categories if lab.domain is not None and lab.domain.categories is not None else ()
        all_opts = {**opts, **copts}
        lmech = LogisticRegressionRelease(
            float(b.epsilon), float(b.delta), tuple(sorted(all_opts.items(), key=lambda kv: kv[0])), len(cats)
        )
        auto = copts["mechanism"] == "auto"
        facts: dict[str, Any] = {
            "features": [c.name for c in feats],
            "label": lab.name,
            "mechanism_choice": (
                "automatic, when the model is fitted, from the public row count: objective perturbation "
                "when rows \u00d7 \u03b5 / coefficients \u2265 1, else the Gibbs posterior"
                if auto
                else "objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011): set in the recipe"
            ),
            "classes": len(cats),
            "norm_bound": opts["norm_bound"],
            "feature_norm": op.feature_norm(opts["norm_bound"]),
            "smoothness_c": op.LOGISTIC_SMOOTHNESS,
            "noise": copts["noise"],
            "tolerance_fraction": copts["tolerance_fraction"],
            "scaling": opts["scaling"],
        }
        if len(set(copts["class_weights"])) > 1:
            facts["class_weights"] = {str(c): w for c, w in zip(cats, copts["class_weights"], strict=True)}
        if len(cats) > 2:
            facts["one_vs_rest"] = f"{len(cats)} binary models, each at \u03b5/{len(cats)}, \u03b4/{len(cats)}"
        unit = PlanUnit(
            name="logistic regression",
            kind="model",
            columns=tuple(c.name for c in feats) + (lab.name,),
            mechanism_name=MECHANISM_NAMES[copts["mechanism"]],
            loss=lmech.privacy_loss(),
            mechanism=lmech,
            budget_share=(lmech.epsilon, lmech.delta),
            description=(
                "logistic regression by objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011) or "
                "Gibbs posterior sampling (Minami 2015), chosen when fitted from public figures"
                if auto
                else "logistic regression by objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011; "
                "Kifer, Smith & Thakurta 2012)"
            ),
            facts=facts,
            post_processing=post,
        )
        notes = (
            "objective perturbation: the minimiser of the noisy objective is found to a public tolerance "
            "whose effect is covered by extra noise inside the budget (Iyengar et al. 2019)",
        ) + ((gibbs_note + " (if the Gibbs posterior is chosen)",) if auto else ())
    units = domain_units(recipe) + [unit]
    composition = compose([u.loss for u in units], delta=b.delta or None, method="basic")
    return ReleasePlan(
        release_type="model",
        guarantee="central",
        units=tuple(units),
        composition=composition,
        notes=notes,
        recipe=recipe,
        compiler=compile,
    )


def _gibbs_unit(recipe: Recipe, opts: dict[str, Any], lab: Column, feats: list[Column], why: str) -> PlanUnit:
    """The Gibbs-posterior unit (mechanism "gibbs"), as it always was plus the choice's facts."""
    b = recipe.budget
    frac = opts["sampler_delta_fraction"]
    d_sampler = b.delta * frac
    gamma = d_sampler / (math.exp(b.epsilon) + 1.0)
    d_gibbs = b.delta - d_sampler
    L = gl.lipschitz_constant(opts["norm_bound"])
    facts = {
        "features": [c.name for c in feats],
        "label": lab.name,
        "mechanism_choice": f"{MECHANISM_TITLES['gibbs']}: {why}",
        "delta_gibbs": d_gibbs,
        "delta_sampler": d_sampler,
        "gamma": gamma,
        "norm_bound": opts["norm_bound"],
        "lipschitz": L,
        "a_max": gl.exact_a_max(b.epsilon, d_gibbs),
        "beta": "sqrt(a_max * n * lambda / (2 L^2)), computed with the public n at release time",
        "sampler": opts["sampler"],
        "scaling": opts["scaling"],
    }
    mech = GibbsLogisticRelease(float(b.epsilon), float(b.delta), tuple(sorted(opts.items(), key=lambda kv: kv[0])))
    return PlanUnit(
        name="logistic regression",
        kind="model",
        columns=tuple(c.name for c in feats) + (lab.name,),
        mechanism_name="gibbs-logistic",
        loss=mech.privacy_loss(),
        mechanism=mech,
        budget_share=(mech.epsilon, mech.delta),
        description=("Gibbs posterior, logistic loss + N(0, I/(n lambda)) prior (Minami 2015, Thm 8, Thm 12)"),
        facts=facts,
        post_processing=(
            "features scaled with their public bounds; values outside are clipped, "
            "missing values take the middle of the bounds",
            "coefficients mapped back to the original units",
        ),
    )


def chosen_unit(unit: PlanUnit, choice: Choice) -> PlanUnit:
    """The model unit of the finalised plan: the same mechanism object, with the mechanism that
    ran, why, and its public calibration as facts (what the report prints)."""
    facts = dict(unit.facts)
    facts["mechanism_choice"] = f"{choice.title}: {choice.reason}"
    facts.update(choice.predicted)
    if choice.mechanism == "objective":
        assert choice.objective is not None
        c = choice.objective
        facts.update(
            {
                "noise": "Gaussian" if c.noise == "gaussian" else "Laplace-like (Gamma norm, uniform direction)",
                "noise_scale": c.noise_scale,
                "lambda": c.lam,
                "ridge_m": c.ridge,
                "epsilon_jacobian": c.eps_jacobian,
                "epsilon_noise": c.eps_noise,
                "epsilon_tolerance": c.eps_tolerance,
                "delta_noise": c.delta_noise,
                "delta_tolerance": c.delta_tolerance,
                "tolerance_noise_scale": c.tolerance_scale,
            }
        )
        description = "logistic regression by objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011" + (
            "; Gaussian noise after Kifer, Smith & Thakurta 2012)" if c.noise == "gaussian" else ")"
        )
    else:
        assert choice.gibbs is not None
        g = choice.gibbs
        facts.update({"beta": g.beta, "lambda": g.lam, "delta_gibbs": g.delta_gibbs, "delta_sampler": g.delta_sampler})
        description = "Gibbs posterior, logistic loss + N(0, I/(n lambda)) prior (Minami 2015)"
    return replace(unit, mechanism_name=MECHANISM_NAMES[choice.mechanism], description=description, facts=facts)


def preview_choice(plan: ReleasePlan, n_rows: int) -> Choice | None:
    """The choice the plan's model unit will make for a table of ``n_rows`` rows (the row count
    is public), or None when the plan is a Gibbs release set in the recipe."""
    unit = next((u for u in plan.units if u.kind == "model"), None)
    if unit is None or not isinstance(unit.mechanism, LogisticRegressionRelease):
        return None
    return unit.mechanism.choose(int(n_rows), len(unit.columns))  # features + intercept


def for_rows(plan: ReleasePlan, n_rows: int) -> ReleasePlan:
    """The plan for a table of ``n_rows`` rows (public under replace-one neighbours), settled
    before the ledger reserves anything: an automatic or objective-perturbation model unit takes
    the mechanism the row count chooses (its facts, and only its own note), and when that is
    objective perturbation with Laplace-like noise, which is pure epsilon-DP (Chaudhuri,
    Monteleoni & Sarwate 2011, Alg. 2: :attr:`ObjectiveCalibration.proven_delta` is 0), the unit
    charges that proven delta, not the budget's.  Other plans are returned as they are.  The
    mechanism object keeps the budget's (epsilon, delta), from which :func:`choose` makes the
    same choice when the model is fitted (:func:`_execute_chosen` checks it)."""
    unit = next((u for u in plan.units if u.kind == "model"), None)
    if unit is not None and isinstance(unit.mechanism, GibbsLogisticRelease) and n_rows >= 1:
        # the Gibbs sampler set in the recipe: its inverse temperature and prior follow from n,
        # printed as the numbers it will draw with (not a formula)
        cal = unit.mechanism.calibrate(int(n_rows), len(unit.columns))  # features + intercept
        facts = {**unit.facts, "table_rows": int(n_rows), "beta": cal.beta, "a": cal.a, "lambda": cal.lam}
        facts["prior_std"] = 1.0 / math.sqrt(cal.m_pi)
        return replace(plan, units=tuple(replace(u, facts=facts) if u is unit else u for u in plan.units))
    if unit is None or not isinstance(unit.mechanism, LogisticRegressionRelease) or n_rows < 1:
        return plan
    choice = preview_choice(plan, n_rows)
    if choice is None:
        return plan
    settled = chosen_unit(unit, choice)
    if choice.mechanism == "objective" and choice.objective is not None:
        proven = float(choice.objective.proven_delta)
        if proven < unit.loss.delta:
            settled = replace(
                settled, loss=replace(unit.loss, delta=proven), budget_share=(unit.budget_share[0], proven)
            )
    units = tuple(settled if u is unit else u for u in plan.units)
    b = plan.recipe.budget if plan.recipe is not None else None
    composition = compose([u.loss for u in units], delta=(b.delta or None) if b is not None else None, method="basic")
    return replace(plan, units=units, composition=composition, notes=_notes_of(plan.notes, choice.mechanism))


def _notes_of(notes: tuple[str, ...], mechanism: str) -> tuple[str, ...]:
    """The plan's notes of the mechanism that runs (the compiled plan lists the Gibbs sampler's
    "if chosen" beside objective perturbation's)."""
    other = "objective perturbation:" if mechanism == "gibbs" else "the sampler is exact"
    return tuple(t for t in notes if not t.startswith(other))


def _scale(
    recipe: Recipe, frame: pd.DataFrame, opts: dict[str, Any], stats: dict[str, Any]
) -> tuple[list[Column], npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    feats = _features(recipe)
    d = len(feats)
    R = opts["norm_bound"]
    cols: list[npt.NDArray[np.float64]] = []
    centers: list[float] = []
    halfw: list[float] = []
    for c in feats:
        if c.type == "boolean" and (c.domain is None or c.domain.kind != "numeric"):
            lo, hi = 0.0, 1.0
        else:
            assert c.domain is not None and c.domain.low is not None and c.domain.high is not None, c.name
            lo, hi = float(c.domain.low), float(c.domain.high)
        x = pd.to_numeric(frame[c.name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan).copy()
        miss = np.isnan(x)
        x[miss] = 0.5 * (lo + hi)
        clipped = int(np.count_nonzero((x < lo) | (x > hi)))
        stats[c.name] = {"clipped": clipped, "missing_filled": int(miss.sum())}
        x = np.clip(x, lo, hi)
        centers.append(0.5 * (lo + hi))
        halfw.append(0.5 * (hi - lo))
        cols.append((x - centers[-1]) / halfw[-1])
    Z = np.column_stack(cols) if cols else np.zeros((len(frame), 0))
    if opts["scaling"] == "ball":
        factor = R / math.sqrt(d)
        Z = Z * factor
        scale = np.full(d, factor) / np.asarray(halfw)
    else:
        scale = 1.0 / np.asarray(halfw)
    norms = np.linalg.norm(Z, axis=1)
    over = norms > R * (1 + 1e-12)
    stats["norm_clipped"] = int(over.sum())
    if over.any():
        Z[over] *= (R / norms[over])[:, None]
    return feats, Z, np.asarray(centers), scale


def _with_total(guarantee: dict[str, Any], final: ReleasePlan) -> dict[str, Any]:
    """The model's guarantee as published: ``epsilon``/``delta`` are the release's total (what the
    ledger charged: DP estimates of the feature bounds, which the scaling in the file shows,
    included); the model mechanism's own part is ``model_epsilon``/``model_delta``, and the
    calibration figures beside them are that part's."""
    total = final.total
    return {
        **guarantee,
        "epsilon": total.epsilon,
        "delta": total.delta,
        "model_epsilon": guarantee["epsilon"],
        "model_delta": guarantee["delta"],
    }


def execute(
    plan: ReleasePlan,
    frame: pd.DataFrame,
    rng: RandomSource,
    *,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> ReleaseOutcome:
    """Run the domain estimates, then draw the model with the plan's own sampler object."""
    from dpstudio.plan.domains import start_central
    from dpstudio.plan.record import category_codes

    recipe, domain_stats, final, unit, drawn_by = start_central(plan, frame, rng, "model")
    mech = unit.mechanism
    if isinstance(mech, LogisticRegressionRelease):
        return _execute_chosen(recipe, domain_stats, final, unit, drawn_by, mech, frame, rng, progress, cancel)
    assert isinstance(mech, GibbsLogisticRelease), unit.name
    opts = dict(mech.options)
    lab = _label(recipe)
    assert lab.domain is not None and lab.domain.categories is not None, lab.name  # _label checked: 2 categories
    stats: dict[str, Any] = {}
    feats, Z, centers, scale = _scale(recipe, frame, opts, stats)
    codes = category_codes(frame[lab.name], lab, stats)
    y = np.where(codes == 0, -1.0, 1.0)
    n, d = Z.shape
    zt = np.hstack([Z, np.ones((n, 1))])
    yz = y[:, None] * zt
    b = recipe.budget
    settled = unit.facts.get("table_rows")
    if settled is not None and int(settled) != n:
        # the plan printed (and the ledger reserved) figures for another row count
        raise UserError(f"release 'model': the plan was settled for {settled} rows, the table has {n}")
    drawn_by[unit.name] = mech
    try:
        cal, res = mech.release(yz, rng, progress=progress, cancel=cancel)
    except ValueError as exc:
        raise UserError(f"release 'model': {exc}") from None
    theta = gl.snap(res.theta)
    a, b0 = theta[:-1], float(theta[-1])
    # a'z + b = sum_j a_j s_j (x_j - c_j) + b  (exact wherever no L2 clipping happened)
    w = a * scale
    intercept = b0 - float(np.dot(w, centers))
    guarantee = {
        "epsilon": b.epsilon,
        "delta": b.delta,
        "neighbours": "replace-one (n public)",
        "kind": "central (eps, delta)-DP",
        "derivation": (
            "Minami 2015, Thm 8(ii): exact tail condition a = 2 L^2 beta^2 / m <= "
            "(sqrt(eps + log 1/delta_gibbs) - sqrt(log 1/delta_gibbs))^2, L = sqrt(R^2 + 1); "
            "Thm 12: + (e^eps + 1) gamma for a sampler within TV gamma"
        ),
        **cal.to_json(),
        "sampler": (
            "exact rejection from the tangent Gaussian envelope, capped so that "
            "P(no acceptance) <= gamma (Devroye 1986 Ch. II Thm 3.1)"
        )
        if opts["sampler"] == "rejection"
        else "unadjusted Langevin, Vempala & Wibisono 2019 Thm 1 schedule",
        "randomness": rng.describe(),
    }
    guarantee = _with_total(guarantee, final)
    artifact = {
        "type": "logistic_regression",
        "label": {"column": lab.name, "negative": lab.domain.categories[0], "positive": lab.domain.categories[1]},
        "features": [c.name for c in feats],
        "coefficients": {c.name: float(v) for c, v in zip(feats, w, strict=True)},
        "intercept": intercept,
        "scaled": {
            "coefficients": [float(v) for v in a],
            "intercept": b0,
            "scaling": opts["scaling"],
            "norm_bound": opts["norm_bound"],
            "centers": [float(v) for v in centers],
            "scale": [float(v) for v in scale],
            "note": "z = scale * (clip(x, low, high) - center), then clipped to ||z|| <= R",
        },
        "guarantee": guarantee,
    }
    steward = {
        "columns": stats,
        **domain_stats,
        "sampler": {
            "accepted": res.accepted,
            "proposals": res.proposals,
            **{k: v for k, v in res.info.items() if k != "ula"},
        },
    }
    progress(1.0, "model released")
    return ReleaseOutcome(artifact=artifact, steward_stats=steward, final_plan=final, drawn_by=drawn_by)


def _execute_chosen(
    recipe: Recipe,
    domain_stats: dict[str, Any],
    final: ReleasePlan,
    unit: PlanUnit,
    drawn_by: dict[str, Any],
    mech: LogisticRegressionRelease,
    frame: pd.DataFrame,
    rng: RandomSource,
    progress: ProgressCallback,
    cancel: CancelToken,
) -> ReleaseOutcome:
    """An "auto" or "objective" model release: choose from the public n, fit, and finalise the
    plan with the choice (same mechanism object; its description and facts say what ran)."""
    from dpstudio.plan.record import category_codes

    opts = dict(mech.options)
    lab = _label(recipe)
    assert lab.domain is not None and lab.domain.categories is not None, lab.name
    cats = list(lab.domain.categories)
    stats: dict[str, Any] = {}
    feats, Z, centers, scale = _scale(recipe, frame, opts, stats)
    codes = category_codes(frame[lab.name], lab, stats)
    n = Z.shape[0]
    if n < 1:
        raise UserError("release 'model': the table has no rows")
    zt = np.hstack([Z, np.ones((n, 1))])
    b = recipe.budget
    # the plan's charge was settled from the row count (:func:`for_rows`); the fit must make
    # the choice that charge covers, or nothing is drawn
    planned = mech.choose(n, zt.shape[1])
    needs = float(planned.objective.proven_delta) if planned.mechanism == "objective" and planned.objective else b.delta
    if needs > unit.loss.delta * (1 + 1e-12):
        raise UserError(
            f"release 'model': the plan charged delta = {unit.loss.delta:g}, but the fitted table's "
            f"{n} rows choose a mechanism that needs delta = {needs:g}; nothing was drawn"
        )
    drawn_by[unit.name] = mech
    try:
        choice, theta, info = mech.release(zt, codes, rng, progress=progress, cancel=cancel)
    except ValueError as exc:
        raise UserError(f"release 'model': {exc}") from None
    new_unit = chosen_unit(unit, choice)
    final = replace(
        final,
        units=tuple(new_unit if u is unit else u for u in final.units),
        notes=_notes_of(final.notes, choice.mechanism),
    )

    def original(row: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], float]:
        # a'z + b = sum_j a_j s_j (x_j - c_j) + b  (exact wherever no L2 clipping happened)
        w = row[:-1] * scale
        return w, float(row[-1]) - float(np.dot(w, centers))

    if choice.mechanism == "gibbs":
        assert choice.gibbs is not None
        cal_json = choice.gibbs.to_json()
        derivation = (
            "Minami 2015, Thm 8(ii): exact tail condition a = 2 L^2 beta^2 / m <= "
            "(sqrt(eps + log 1/delta_gibbs) - sqrt(log 1/delta_gibbs))^2, L = sqrt(R^2 + 1); "
            "Thm 12: + (e^eps + 1) gamma for a sampler within TV gamma"
        )
    else:
        assert choice.objective is not None
        cal_json = choice.objective.to_json()
        noise_text = (
            "Gaussian noise per Kifer, Smith & Thakurta 2012"
            if choice.objective.noise == "gaussian"
            else "Laplace-like noise (density proportional to exp(-eps_n ||b|| / (2 w zeta)), "
            "Chaudhuri, Monteleoni & Sarwate 2011 Alg. 2: pure eps-DP, delta = 0)"
        )
        derivation = (
            "Chaudhuri, Monteleoni & Sarwate 2011 Alg. 2 (objective perturbation), replace-one: "
            "log-ratio <= log(1 + w c zeta^2/m) (Jacobian) + noise term for a gradient shift <= 2 w zeta, "
            f"zeta = sqrt(R^2 + 1), c = 1/4; {noise_text}; the optimiser's "
            "tolerance covered by extra noise (Iyengar et al. 2019)"
        )
    guarantee = {
        "epsilon": b.epsilon,
        "delta": b.delta,
        "neighbours": "replace-one (n public)",
        "kind": "central (eps, delta)-DP",
        "mechanism": choice.mechanism,
        "mechanism_reason": choice.reason,
        "derivation": derivation,
        **cal_json,
        "randomness": rng.describe(),
    }
    if unit.loss.delta < b.delta:
        # what the plan charged: the chosen mechanism's own delta (settled from the row count);
        # the budget's delta, which the calibration was given, stays beside it
        problems = max(int(guarantee.get("problems", 1)), 1)
        guarantee.update(delta=unit.loss.delta, budget_delta=b.delta, delta_per_problem=unit.loss.delta / problems)
        if unit.loss.delta == 0:
            guarantee["kind"] = "central pure eps-DP"
    guarantee = _with_total(guarantee, final)
    label: dict[str, Any] = {"column": lab.name}
    if len(cats) == 2:
        w, icpt = original(theta[0])
        label.update({"negative": cats[0], "positive": cats[1]})
        coefficients: dict[str, Any] = {c.name: float(v) for c, v in zip(feats, w, strict=True)}
        intercept: Any = icpt
        scaled: dict[str, Any] = {"coefficients": [float(v) for v in theta[0, :-1]], "intercept": float(theta[0, -1])}
    else:
        label["classes"] = cats
        coefficients, intercept = {}, {}
        for k, cat in enumerate(cats):
            w, icpt = original(theta[k])
            coefficients[str(cat)] = {c.name: float(v) for c, v in zip(feats, w, strict=True)}
            intercept[str(cat)] = icpt
        scaled = {
            "coefficients": {str(c): [float(v) for v in theta[k, :-1]] for k, c in enumerate(cats)},
            "intercept": {str(c): float(theta[k, -1]) for k, c in enumerate(cats)},
            "prediction": "the class with the largest score a'z + b (one-vs-rest)",
        }
    artifact = {
        "type": "logistic_regression" if len(cats) == 2 else "logistic_regression_one_vs_rest",
        "label": label,
        "features": [c.name for c in feats],
        "coefficients": coefficients,
        "intercept": intercept,
        "scaled": {
            **scaled,
            "scaling": opts["scaling"],
            "norm_bound": opts["norm_bound"],
            "centers": [float(v) for v in centers],
            "scale": [float(v) for v in scale],
            "note": "z = scale * (clip(x, low, high) - center), then clipped to ||z|| <= R",
        },
        "guarantee": guarantee,
    }
    steward = {"columns": stats, **domain_stats, "fit": info}
    progress(1.0, "model released")
    return ReleaseOutcome(artifact=artifact, steward_stats=steward, final_plan=final, drawn_by=drawn_by)
