"""Release type ``model``: DP logistic regression by exact Gibbs-posterior sampling
(docs/models.md §DP logistic regression by Gibbs posterior sampling).

Features: the kept numeric/boolean non-label columns, scaled with their PUBLIC bounds to
[-1, 1] and by R/sqrt(d) (option ``scaling`` = "ball", default: ||z|| <= R with no clipping
inside the bounds) or scaled to [-1, 1] then clipped to the L2 ball of radius R ("box").
Values outside the bounds are clipped; missing values take the middle of the bounds (z = 0).
Label: the label column's two declared categories, the first is -1.  Options: ``norm_bound``
R (default 1), ``lambda`` (default: :func:`gibbs_logistic.default_lambda`), ``prior_scale``,
``sampler_delta_fraction`` (default 1e-3), ``sampler`` ("rejection", exact; or "ula", refused
unless its published schedule fits ``max_steps``).  The guarantee and every number behind it
are in :mod:`dpstudio.engine.models.gibbs_logistic`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine.accounting import PrivacyLoss, compose
from dpstudio.engine.models import gibbs_logistic as gl
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError
from dpstudio.plan.units import PlanUnit, ReleaseOutcome, ReleasePlan, refusal
from dpstudio.recipe.model import Column, Recipe
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
    if not cats or len(cats) != 2:
        # the count only: the list may have been copied from the private data
        raise refusal(
            f"column {lab.name!r}: the DP logistic regression needs exactly 2 declared "
            f"label categories, got {len(cats or ())}",
            field=f"column:{lab.name}",
            page="columns",
        )
    return lab


def _options(recipe: Recipe) -> dict[str, Any]:
    o = recipe.release.options
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
        raise refusal(
            f"release option sampler={out['sampler']!r}: choose 'rejection' or 'ula'", field="release", page="release"
        )
    if out["scaling"] not in ("ball", "box"):
        raise refusal(
            f"release option scaling={out['scaling']!r}: choose 'ball' or 'box'", field="release", page="release"
        )
    if not out["norm_bound"] > 0:
        raise refusal(
            f"release option norm_bound must be > 0, got {out['norm_bound']!r}", field="release", page="release"
        )
    return out


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
        cal = gl.calibrate(
            n,
            d,
            self.epsilon,
            self.delta,
            norm_bound=opts["norm_bound"],
            lam=None if opts["lambda"] is None else float(opts["lambda"]),
            prior_scale=None if opts["prior_scale"] is None else float(opts["prior_scale"]),
            sampler_delta_fraction=opts["sampler_delta_fraction"],
        )
        progress(0.05, "sampling the Gibbs posterior")
        if opts["sampler"] == "rejection":
            res = gl.sample_rejection(yz, cal, rng, progress=progress, cancel=cancel)
        else:
            res = gl.sample_ula(yz, cal, rng, max_steps=int(opts["max_steps"]), progress=progress, cancel=cancel)
        return cal, res


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
    frac = opts["sampler_delta_fraction"]
    d_sampler = b.delta * frac
    gamma = d_sampler / (math.exp(b.epsilon) + 1.0)
    d_gibbs = b.delta - d_sampler
    L = gl.lipschitz_constant(opts["norm_bound"])
    facts = {
        "features": [c.name for c in feats],
        "label": lab.name,
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
    unit = PlanUnit(
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
    units = domain_units(recipe) + [unit]
    composition = compose([u.loss for u in units], delta=b.delta or None, method="basic")
    notes = (
        "the sampler is exact rejection sampling capped so that TV <= gamma (Minami 2015, Thm 12, "
        "adds (e^eps + 1) gamma to delta); its running time depends on the data and is not released",
    )
    return ReleasePlan(
        release_type="model",
        guarantee="central",
        units=tuple(units),
        composition=composition,
        notes=notes,
        recipe=recipe,
        compiler=compile,
    )


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
