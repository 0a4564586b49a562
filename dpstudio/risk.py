"""``risk_for_recipe``: the internal risk estimate of a recipe, dispatched on the release type.

* ``record``: linkage attack on a simulated release (public + perturbed columns as
  quasi-identifiers), per-column expected error of the mechanisms, and the NN
  re-identification / angular distortion of embedding groups;
* ``label`` / ``semi-sensitive``: the three label attackers (Sekiguchi 2024) at the recipe's epsilon
  and over an epsilon grid, distributions of k and of the Prop. 3.0.2 IUEAdv expression, the
  count and share of records above a threshold, and (semi-sensitive) the effective epsilon for
  the label (Prop. 4.0.1, corrected);
* ``synthetic``: DCR and membership-inference advantage of the recipe's synthesizer fitted on
  a training split, when ``dpstudio.engine.synth`` exposes a registry; otherwise "unavailable".

All of it reads the raw data: every dict says ``"computed_on": "raw data - internal use only"``.
The estimates' own randomness (folds, simulated releases, splits) comes from ``seed``; it has
no privacy role because nothing here is released.

Cost: a table of more than :data:`MAX_ROWS` rows is estimated on a uniform sample of
``MAX_ROWS`` rows drawn without replacement by the estimates' own generator (seeded from
``seed``; never the release's noise source), so time and memory are bounded at any size (full
tables cost ~1.7 KB per row: 3M rows took 162 s and 5.3 GB).  ``"sample"`` records the sample
size, and every rate carries its row-sampling standard error (``*_se``/``standard_errors``):
for a mean of per-record values in [0, 1] with mean p over N of M rows,
``sqrt(p (1 - p) / N) * sqrt(1 - N / M)`` -- the Bernoulli variance bounds that of any [0, 1]
variable, the finite-population factor makes it 0 when every row is used.  It covers the row
sampling only, not the fitted posterior model's own error.  Attacks that match against "all
originals" (linkage, embedding re-identification) then match against the N sampled ones:
fewer look-alikes can only help the attacker, so on a sample they overstate the full table's rate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dpstudio.engine.leakage.label import (
    COMPUTED_ON,
    DEFAULT_GRID,
    LabelLeakageModel,
    RRLaw,
    effective_label_epsilon,
)
from dpstudio.engine.progress import NEVER_CANCELLED, Cancelled, no_progress

__all__ = [
    "risk_for_recipe",
    "evidence_for",
    "reid_estimator",
    "linkage_of_plan",
    "label_risk",
    "record_risk",
    "synthetic_risk",
    "row_sample",
    "share_se",
    "failure_text",
    "MAX_ROWS",
    "COMPUTED_ON",
]

#: the estimates run on at most this many rows (a uniform sample without replacement)
MAX_ROWS = 50_000
#: second word of the simulated release's seed: its noise is never the released file's (rng.RandomSource)
_SIMULATION_STREAM = 2**40 + 0x51A  # above every key a release's own streams use
#: second word of the sample generator's seed: the sample stream differs from the other uses of ``seed``
_SAMPLE_STREAM = 0x5A3D1E


def row_sample(
    frame: pd.DataFrame, seed: int = 0, max_rows: int | None = MAX_ROWS
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``(rows, info)``: ``frame`` itself when it has at most ``max_rows`` rows, else a uniform
    sample of ``max_rows`` rows without replacement (kept in table order), drawn by a numpy
    generator seeded with ``(seed, stream)`` -- the estimates' own, not the release's noise.
    ``info`` says how many rows of how many were used (``max_rows=None``: all rows)."""
    m = int(len(frame))
    n = m if max_rows is None else min(m, int(max_rows))
    info: dict[str, Any] = {"rows_used": n, "rows_total": m, "sampled": n < m, "max_rows": max_rows}
    if n < m:
        info.update(
            method="uniform without replacement, numpy PCG64 seeded from the estimate's seed",
            statement=f"estimated on a uniform sample of {n:,} of {m:,} rows; each rate's "
            f"row-sampling standard error is given beside it (*_se, standard_errors)",
        )
        g = np.random.default_rng([int(seed), _SAMPLE_STREAM])
        idx = np.sort(g.choice(m, size=n, replace=False))
        return frame.iloc[idx].reset_index(drop=True), info
    # the linkage rate's SE is not 0 on all rows: it covers its targets and simulated noise too
    info["statement"] = f"estimated on all {m:,} rows (no row sampling: the row-sampling standard errors are 0)"
    return frame, info


def share_se(p, n_used: int, fraction: float):
    """Row-sampling standard error of a mean ``p`` of per-record values in [0, 1] over ``n_used``
    records, a share ``fraction`` of the table's: ``sqrt(p (1 - p) / N * (1 - fraction))``
    (see module docstring)."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    fpc = min(1.0, max(0.0, 1.0 - float(fraction)))
    return np.sqrt(p * (1.0 - p) / max(int(n_used), 1) * fpc)


def failure_text(exc: BaseException) -> str:
    """What a note or warning says about a failed step: the exception's type and a generic
    sentence.  Never the exception's own text: an arbitrary error (a parser's, pandas') can quote
    a cell of the raw data, and these notes reach the CLI, the GUI and the report."""
    return f"{type(exc).__name__} (the error's own text is withheld: it can quote a value of the raw data)"


def _prepare(frame, seed, max_rows, rows_total):
    """The rows a body estimates on, the share of the table they are, and the sample info."""
    frame, info = row_sample(frame, seed, max_rows)
    total = info["rows_total"] if rows_total is None else int(rows_total)
    return frame, (len(frame) / total if total > 0 else 1.0), info


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def _compiled(recipe):
    """``(plan, None)``, or ``(None, note)`` when the recipe does not compile (then nothing it
    would release can be described)."""
    from dpstudio.plan import compile_plan

    try:
        return compile_plan(recipe), None
    except Exception as exc:  # noqa: BLE001 - the figure is then absent, never made up
        if isinstance(exc, Cancelled):
            raise
        return None, f"the recipe does not compile ({failure_text(exc)}): no plan to read the total from"


def label_rr_law(plan) -> tuple[RRLaw, Any]:
    """``(law, law_at)``: the randomized response of ``plan``'s label unit as it runs (its
    ``keep_probability`` / ``other_probability``: every attacker figure is read there, beside
    the "P(value kept)" the report prints), and ``law_at(eps)``: the same mechanism class,
    delta and categories at another epsilon, for the curves over an epsilon grid."""
    from dpstudio.engine.mechanisms import RandomizedResponse

    assert plan.label is not None
    unit = plan.unit_of_column(plan.label.column)
    if unit is None:
        raise ValueError(f"the plan releases no label unit for {plan.label.column!r}")
    law = RRLaw.of_unit(unit)

    def law_at(eps: float) -> RRLaw:
        return RRLaw.of_mechanism(RandomizedResponse(epsilon=eps, delta=unit.delta, n_categories=law.categories))

    return law, law_at


def risk_for_recipe(
    recipe,
    frame: pd.DataFrame,
    seed: int = 0,
    *,
    eps_grid=DEFAULT_GRID,
    max_rows: int | None = MAX_ROWS,
    progress=no_progress,
    cancel=NEVER_CANCELLED,
) -> dict:
    """JSON-able internal risk estimate for ``recipe`` on ``frame`` (see module docstring), on
    at most ``max_rows`` rows (``"sample"`` says how many; ``None``: all)."""
    rtype = recipe.release.type
    frame, sample = row_sample(frame, seed, max_rows)
    # the epsilon printed is the plan's composed total (budget + DP domain estimates + joint
    # calibration), the one the release spends - never the typed budget beside it
    plan, plan_note = _compiled(recipe)
    head = {
        "release_type": rtype,
        "epsilon": plan.total.epsilon if plan is not None else None,
        "delta": plan.total.delta if plan is not None else None,
        "budget": {"epsilon": recipe.budget.epsilon, "delta": recipe.budget.delta},
        **({"plan_note": plan_note} if plan_note else {}),
        "rows": sample["rows_total"],
        "sample": sample,
        "seed": seed,
        "computed_on": COMPUTED_ON,
        "warning": "computed on the raw data: for the data steward and the internal report only, never for publication",
    }
    # the bodies get the sample (max_rows=None: no second sampling) and the table's size for the SEs
    kw = dict(seed=seed, max_rows=None, rows_total=sample["rows_total"], progress=progress, cancel=cancel)
    if rtype in ("label", "semi-sensitive"):
        body = label_risk(recipe, frame, eps_grid=eps_grid, plan=plan, **kw)
    elif rtype == "record":
        body = record_risk(recipe, frame, **kw)
    elif rtype == "synthetic":
        body = synthetic_risk(recipe, frame, **kw)
    else:
        body = {
            "available": False,
            "note": f"no attack-based risk view for a {rtype!r} release (an aggregate/model "
            "release: see its privacy accounting)",
        }
    body.pop("sample", None)  # the head's: the bodies saw the sample as their whole table
    return _jsonable({**head, **body})


# ---- label / semi-sensitive ------------------------------------------------------------------


def unchanged_columns(recipe) -> list[str]:
    """The columns a label or semi-sensitive release publishes unchanged beside the label: what
    the label attackers know (a label release passes its sensitive columns through too; the
    budget page's attacker chart uses the same rule)."""
    unchanged = ("public",) if recipe.release.type == "semi-sensitive" else ("public", "sensitive")
    return [c.name for c in recipe.columns if c.role in unchanged]


def label_risk(
    recipe,
    frame,
    *,
    seed=0,
    eps_grid=DEFAULT_GRID,
    threshold: float = 0.1,
    max_rows: int | None = MAX_ROWS,
    rows_total: int | None = None,
    progress=no_progress,
    cancel=NEVER_CANCELLED,
    plan=None,
) -> dict:
    """Label attackers on (a sample of at most ``max_rows`` of) the rows; ``rows_total``: the
    table's size when ``frame`` is already a sample of it (for the standard errors).

    Every figure is read from ``plan`` (compiled from ``recipe`` when not given): the attackers
    at the law of the label's randomized response (:func:`label_rr_law`), the effective epsilon
    from the plan's label guarantee."""
    labels = [c.name for c in recipe.columns if c.role == "label"]
    if not labels:
        return {"available": False, "note": "no column has the role 'label'", "computed_on": COMPUTED_ON}
    if plan is None:
        from dpstudio.plan import compile_plan

        plan = compile_plan(recipe)
    guarantee = plan.label
    assert guarantee is not None, "a label or semi-sensitive plan states its label guarantee"
    frame, fraction, sample = _prepare(frame, seed, max_rows, rows_total)
    public = [c for c in unchanged_columns(recipe) if c in frame.columns]
    law, law_at = label_rr_law(plan)
    out: dict = {"label_views": {}, "sample": sample, "computed_on": COMPUTED_ON}
    lab = guarantee.column  # validation allows one label column: the plan's
    eps_label = guarantee.label_unit_epsilon
    model = LabelLeakageModel.fit(frame, public, lab, seed=seed, threshold=threshold, progress=progress, cancel=cancel)
    view = model.summary(eps_label, eps_grid, rr=law, rr_at=law_at)
    _add_label_standard_errors(view, model.n, fraction)
    view["epsilon_label"] = eps_label
    view["attackers"] = {
        "uninformed": "argmax P(y|public columns) - ignores the released label",
        "naive": "trusts the released label (what label DP is designed against)",
        "informed": "Bayes-optimal on P(y|public columns) and the released label",
        "accuracy_kinds": "'informed'/'uninformed': expected over the mechanism on this table's "
        "true labels; '*_model': with y drawn from the fitted P(y|x) (IEAU, "
        "Sekiguchi 2024, Def. 2.2.1)",
    }
    if recipe.release.type == "semi-sensitive":
        if model.binary:
            # built on the plan's label guarantee: the whole composed total relative to the
            # public columns (DP domain estimates, a jointly calibrated Gaussian group), not
            # a sum of the units' stand-alone epsilons beside it
            view["effective_label_epsilon"] = effective_label_epsilon(
                eps_label,
                guarantee.sensitive_epsilon,
                posteriors=model.P,
                labels=model.y,
                guarantee_epsilon=guarantee.epsilon,
            )
            view["effective_label_epsilon"]["relative_to_public_posterior_delta"] = guarantee.delta
            if sample["sampled"] or fraction < 1:
                view["effective_label_epsilon"]["sample_note"] = (
                    "the public likelihood ratio is the maximum over the sampled rows: the "
                    "whole table can hold larger ones"
                )
        else:
            view["effective_label_epsilon"] = {
                "available": False,
                "note": "Prop. 4.0.1 is stated for binary labels",
            }
        view["note_semi_sensitive"] = (
            "the attackers above ignore the perturbed sensitive "
            "features: their accuracy is a lower bound on what an "
            "attacker using them too could reach"
        )
    out["label_views"][lab] = view
    return out


def _add_label_standard_errors(view: dict, n: int, fraction: float) -> None:
    """Row-sampling SEs beside the label view's rates (the naive attacker's accuracy is the
    RR keep probability, a constant: SE 0)."""

    def se(p):
        return share_se(p, n, fraction)

    at = view["at_epsilon"]
    acc = at["accuracy"]
    errs = {
        "accuracy": {k: (0.0 if k == "naive" else float(se(v))) for k, v in acc.items()},
        "informed_minus_naive": float(se(acc["informed"])),
    }
    if "iue_adv_bound" in at:
        errs["iue_share_above"] = float(se(at["iue_adv_bound"]["share_above"]))
    at["standard_errors"] = errs
    at["rows_used"] = int(n)
    cur = view["curves"]
    cur["accuracy_se"] = {k: (np.zeros(len(v)) if k == "naive" else se(v)).tolist() for k, v in cur["accuracy"].items()}
    if "iue_adv_bound" in cur:
        cur["iue_adv_bound"]["share_above_se"] = se(cur["iue_adv_bound"]["share_above"]).tolist()
    if "share_k_above_1" in view.get("k", {}):
        view["k"]["share_k_above_1_se"] = float(se(view["k"]["share_k_above_1"]))


# ---- record ----------------------------------------------------------------------------------


def linkage_of_plan(plan, frame, seed=0, *, max_targets=2000, progress=no_progress, cancel=NEVER_CANCELLED) -> dict:
    """The linkage attack on a simulated release: ``plan``'s own mechanisms executed on
    ``frame`` with the seeded stream ``seed``, every released record matched back on the public,
    sensitive and label columns.  The residual-risk table and the budget's ``reid`` target both
    call this, so a setting has one re-identification figure."""
    from dpstudio.engine.leakage.linkage import linkage_risk
    from dpstudio.engine.rng import RandomSource
    from dpstudio.plan import execute

    recipe = plan.recipe
    qi = [c.name for c in recipe.columns if c.role in ("public", "sensitive", "label") and c.name in frame.columns]
    # a stream of its own: with a recipe seeded like the estimate, RandomSource(seed) would draw
    # the very noise of the released file, not "independent randomness" as the report says
    released = execute(plan, frame, RandomSource(seed, stream=_SIMULATION_STREAM)).data
    assert released is not None, "a record release returns its rows"
    cancel.check()
    progress(0.4, "linkage attack")
    return {
        **linkage_risk(frame, released, qi, max_targets=max_targets, seed=seed),
        "simulation": "dpstudio record release (seeded simulation)",
    }


def reid_estimator(frame: pd.DataFrame, seed: int = 0, max_rows: int | None = MAX_ROWS):
    """``plan -> re-identification rate``, computed exactly as the report's residual-risk table
    computes it for the same plan (the same row sample, seed and attack: :func:`linkage_of_plan`)."""
    rows, _info = row_sample(frame, seed, max_rows)
    cache: dict = {}  # plan id -> (plan, rate); the plan is held, so its id is never reused

    def rate(plan) -> float:
        key = id(plan)
        if key not in cache:
            cache[key] = (plan, float(linkage_of_plan(plan, rows, seed)["reid_rate"]))
        return cache[key][1]

    return rate


def evidence_for(
    recipe, frame: pd.DataFrame, *, seed: int = 0, rows: int | None = None, progress=no_progress, cancel=NEVER_CANCELLED
):
    """What ``recipe``'s targets need beyond the plan (:class:`dpstudio.plan.solve.Evidence`),
    estimated on ``frame`` as the residual-risk estimates are (internal use only): the label
    attackers' model on the same row sample, the linkage attack of :func:`reid_estimator`, and
    the number of records (``rows``, when ``frame`` is a sample of a larger file)."""
    from dpstudio.errors import UserError
    from dpstudio.plan.solve import Evidence

    kinds = {t.kind for t in recipe.budget.targets}
    model = None
    if "label-attack" in kinds:
        labels = [c.name for c in recipe.columns if c.role == "label"]
        if not labels:
            raise UserError("a label-attack target needs a column with the role 'label'")
        sample, _info = row_sample(frame, seed, MAX_ROWS)
        public = [c for c in unchanged_columns(recipe) if c in sample.columns]
        model = LabelLeakageModel.fit(sample, public, labels[0], seed=seed, progress=progress, cancel=cancel)
    reid = reid_estimator(frame, seed) if "reid" in kinds else None
    return Evidence(label_model=model, reid=reid, rows=int(rows) if rows is not None else len(frame))


def record_risk(
    recipe,
    frame,
    *,
    seed=0,
    max_targets=2000,
    max_rows: int | None = MAX_ROWS,
    rows_total: int | None = None,
    progress=no_progress,
    cancel=NEVER_CANCELLED,
) -> dict:
    """Linkage attack on a simulated release of (a sample of at most ``max_rows`` of) the rows."""

    frame, fraction, sample = _prepare(frame, seed, max_rows, rows_total)
    out: dict = {"sample": sample, "computed_on": COMPUTED_ON}
    progress(0.05, "simulating the release")
    try:
        from dpstudio.plan import compile_plan

        plan = compile_plan(recipe)
        linkage = linkage_of_plan(plan, frame, seed, max_targets=max_targets, progress=progress, cancel=cancel)
    except Exception as exc:  # noqa: BLE001 - the estimate is then unavailable, never made up
        if isinstance(exc, Cancelled):
            raise
        out["linkage"] = {
            "available": False,
            "computed_on": COMPUTED_ON,
            "note": f"the simulated release failed ({failure_text(exc)}): no linkage estimate",
        }
        return out
    out["linkage"] = linkage
    if fraction < 1:
        out["linkage"]["sample_note"] = (
            f"released and matched within a sample of {len(frame):,} rows: with fewer look-alikes to "
            f"confuse it the attack does at least as well as on the whole table (an overstatement)"
        )
    emb = [c for c in recipe.columns if c.role == "embedding"]
    if emb:
        out["embedding"] = _embedding_views(recipe, frame, emb, fraction)
    progress(1.0, "risk estimate done")
    return out


def _embedding_views(recipe, frame, emb_cols, fraction: float = 1.0) -> dict:
    from dpstudio.engine.leakage.embedding import embedding_risk
    from dpstudio.plan import compile_plan
    from dpstudio.plan.record import _vectors, load_pool

    views = {}
    for u in compile_plan(recipe).perturbation_units:
        cols = [recipe.column(n) for n in u.columns]
        unit = u.name
        if cols[0].role != "embedding":
            continue
        names = [c.name for c in cols]
        try:
            pool = load_pool(cols[0], frame, names, recipe)
            vecs = _vectors(frame, names)
        except Exception as exc:  # noqa: BLE001
            views[unit] = {
                "available": False,
                "note": f"pool or vectors unavailable: {failure_text(exc)}",
                "computed_on": COMPUTED_ON,
            }
            continue
        is_ds = cols[0].mechanism is not None and cols[0].mechanism.params.get("pool") == "dataset"
        eps = u.epsilon
        grid = sorted(set([eps] + np.geomspace(0.5, 200, 12).tolist()))
        r = embedding_risk(vecs, pool, grid, pool_is_dataset=is_ds)
        i = grid.index(eps)
        n = r["n_records"]
        r["reid_rate_se"] = share_se(r["reid_rate"], n, fraction).tolist()
        views[unit] = {
            "at_epsilon": {
                "epsilon": eps,
                "reid_rate": r["reid_rate"][i],
                "reid_rate_se": r["reid_rate_se"][i],
                "mean_angular_distortion": r["mean_angular_distortion"][i],
            },
            "curves": r,
            "computed_on": COMPUTED_ON,
        }
        if fraction < 1:
            views[unit]["sample_note"] = (
                f"nearest original among the {n:,} sampled records: the rate overstates the whole table's"
            )
    return views


# ---- synthetic -------------------------------------------------------------------------------


def synthetic_risk(
    recipe,
    frame,
    *,
    seed=0,
    holdout: float = 0.2,
    max_rows: int | None = MAX_ROWS,
    rows_total: int | None = None,
    progress=no_progress,
    cancel=NEVER_CANCELLED,
) -> dict:
    """DCR and membership inference of the recipe's synthesizer fitted on a training split of
    (a sample of at most ``max_rows`` of) the rows."""
    from dpstudio.engine.leakage.synthetic import dcr_risk
    from dpstudio.engine.rng import RandomSource
    from dpstudio.plan import compile_plan
    from dpstudio.plan.domains import run_domain_units
    from dpstudio.plan.synthetic import _as_strings, table_spec

    frame, _fraction, sample = _prepare(frame, seed, max_rows, rows_total)
    # the release's own compiled synthesizer (method, options, budget), fitted on a training split
    plan = compile_plan(recipe)
    unit = next(u for u in plan.units if u.kind == "synthesizer")
    method = unit.mechanism_name
    g = np.random.default_rng(seed)
    n = len(frame)
    perm = g.permutation(n)
    n_ho = max(1, int(round(holdout * n)))
    ho, tr = frame.iloc[np.sort(perm[:n_ho])], frame.iloc[np.sort(perm[n_ho:])]
    progress(0.05, "fitting the synthesizer on a training split")
    assert plan.recipe is not None  # compile_plan always records the recipe it compiled
    try:
        # streams of their own (never a seeded release's draws: see linkage_of_plan)
        resolved, _ = run_domain_units(plan.recipe, plan.units, tr, RandomSource(seed, stream=_SIMULATION_STREAM), {})
        spec = table_spec(resolved)
        mech = unit.mechanism
        assert mech is not None  # a compiled synthesizer unit always carries its release object
        fitted = mech.release(_as_strings(tr, spec), spec, RandomSource(seed, stream=_SIMULATION_STREAM), cancel=cancel)
        syn = fitted.sample(len(tr), RandomSource(seed, stream=_SIMULATION_STREAM + 1))
    except Exception as exc:  # noqa: BLE001 - the estimate is then unavailable, never made up
        return {"available": False, "note": f"synthesizer failed: {failure_text(exc)}", "computed_on": COMPUTED_ON}
    recipe = resolved
    cols = [c.name for c in spec.all_columns if c.name in syn.columns]
    domains = {c.name: c.domain for c in recipe.columns if c.domain is not None}
    progress(0.9, "distance to closest record")
    res = dcr_risk(tr, ho, syn, cols, domains=domains, seed=seed)
    return {
        "synthetic": {
            **res,
            "method": method,
            "train_rows": int(len(tr)),
            "holdout_rows": int(len(ho)),
            "note": "the synthesizer was fitted on 80 % of the rows for this estimate; "
            "the remaining 20 % are the holdout",
        },
        "sample": sample,
        "computed_on": COMPUTED_ON,
    }
