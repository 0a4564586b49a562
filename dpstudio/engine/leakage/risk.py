"""``risk_for_recipe``: the internal risk estimate of a recipe, dispatched on the release type.

* ``record``: linkage attack on a simulated release (public + perturbed columns as
  quasi-identifiers), per-column expected error of the mechanisms, and the NN
  re-identification / angular distortion of embedding groups;
* ``label`` / ``semi-sensitive``: the three label attackers (seed 002) at the recipe's epsilon
  and over an epsilon grid, distributions of k and of the Prop. 3.0.2 IUEAdv expression, the
  count and share of records above a threshold, and (semi-sensitive) the effective epsilon for
  the label (Prop. 4.0.1, corrected);
* ``synthetic``: DCR and membership-inference advantage of the recipe's synthesizer fitted on
  a training split, when ``dpstudio.engine.synth`` exposes a registry; otherwise "unavailable".

All of it reads the raw data: every dict says ``"computed_on": "raw data - internal use only"``.
The estimates' own randomness (folds, simulated releases, splits) comes from ``seed``; it has
no privacy role because nothing here is released.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpstudio.engine.leakage.label import (
    COMPUTED_ON, DEFAULT_GRID, LabelLeakageModel, effective_label_epsilon)
from dpstudio.engine.progress import NEVER_CANCELLED, no_progress

__all__ = ["risk_for_recipe", "label_risk", "record_risk", "synthetic_risk", "COMPUTED_ON"]


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


def _eps_by_column(recipe) -> dict:
    from dpstudio.engine.release.record import budget_split, perturbed_units
    split = budget_split(recipe)
    out = {}
    for unit, cols in perturbed_units(recipe):
        for c in cols:
            out[c.name] = split[unit]
    return out


def risk_for_recipe(recipe, frame: pd.DataFrame, seed: int = 0, *, eps_grid=DEFAULT_GRID,
                    progress=no_progress, cancel=NEVER_CANCELLED) -> dict:
    """JSON-able internal risk estimate for ``recipe`` on ``frame`` (see module docstring)."""
    rtype = recipe.release.type
    head = {"release_type": rtype, "epsilon": recipe.budget.epsilon, "delta": recipe.budget.delta,
            "rows": int(len(frame)), "seed": seed, "computed_on": COMPUTED_ON,
            "warning": "computed on the raw data: for the data steward and the internal report only, "
                       "never for publication"}
    if rtype in ("label", "semi-sensitive"):
        body = label_risk(recipe, frame, seed=seed, eps_grid=eps_grid, progress=progress, cancel=cancel)
    elif rtype == "record":
        body = record_risk(recipe, frame, seed=seed, progress=progress, cancel=cancel)
    elif rtype == "synthetic":
        body = synthetic_risk(recipe, frame, seed=seed, progress=progress, cancel=cancel)
    else:
        body = {"available": False,
                "note": f"no attack-based risk view for a {rtype!r} release (an aggregate/model "
                        "release: see its privacy accounting)"}
    return _jsonable({**head, **body})


# ---- label / semi-sensitive ------------------------------------------------------------------

def label_risk(recipe, frame, *, seed=0, eps_grid=DEFAULT_GRID, threshold: float = 0.1,
               progress=no_progress, cancel=NEVER_CANCELLED) -> dict:
    labels = [c.name for c in recipe.columns if c.role == "label"]
    if not labels:
        return {"available": False, "note": "no column has the role 'label'", "computed_on": COMPUTED_ON}
    public = [c.name for c in recipe.columns if c.role == "public" and c.name in frame.columns]
    eps_of = _eps_by_column(recipe)
    out: dict = {"label_views": {}, "computed_on": COMPUTED_ON}
    for lab in labels:
        eps_label = eps_of.get(lab, (recipe.budget.epsilon, 0.0))[0]
        model = LabelLeakageModel.fit(frame, public, lab, seed=seed, threshold=threshold,
                                      progress=progress, cancel=cancel)
        view = model.summary(eps_label, eps_grid)
        view["epsilon_label"] = eps_label
        view["attackers"] = {
            "uninformed": "argmax P(y|public columns) - ignores the released label",
            "naive": "trusts the released label (what label DP is designed against)",
            "informed": "Bayes-optimal on P(y|public columns) and the released label",
            "accuracy_kinds": "'informed'/'uninformed': expected over the mechanism on this table's "
                              "true labels; '*_model': with y drawn from the fitted P(y|x) (seed 002 IEAU)"}
        if recipe.release.type == "semi-sensitive":
            sens = [c.name for c in recipe.columns if c.role == "sensitive"]
            eps_sens = sum(eps_of.get(s, (0.0, 0.0))[0] for s in sens)
            if model.binary:
                view["effective_label_epsilon"] = effective_label_epsilon(
                    eps_label, eps_sens, posteriors=model.P, labels=model.y)
            else:
                view["effective_label_epsilon"] = {
                    "available": False, "note": "Prop. 4.0.1 is stated for binary labels"}
            view["note_semi_sensitive"] = ("the attackers above ignore the perturbed sensitive "
                                           "features: their accuracy is a lower bound on what an "
                                           "attacker using them too could reach")
        out["label_views"][lab] = view
    return out


# ---- record ----------------------------------------------------------------------------------

def _simulate_record_release(recipe, frame, seed):
    """A simulated release: the product's own record release if it runs, else closed-form noise."""
    from dpstudio.engine.rng import RandomSource
    try:
        from dpstudio.engine.release import record as rec
        plan = rec.plan(recipe)
        outcome = rec.run(recipe, frame, plan, RandomSource(seed))
        return outcome.data, plan, "dpstudio record release (seeded simulation)"
    except Exception as exc:  # noqa: BLE001 - fall back to closed-form perturbation
        reason = f"{type(exc).__name__}: {exc}"
    g = np.random.default_rng(seed)
    eps_of = _eps_by_column(recipe)
    data = frame.copy()
    for c in recipe.columns:
        if c.name not in eps_of or c.role == "embedding" or c.name not in frame.columns:
            continue
        eps = eps_of[c.name][0]
        d = c.domain
        if d is None or not d.known:
            continue
        if d.kind == "numeric":
            x = pd.to_numeric(frame[c.name], errors="coerce").to_numpy(float)
            x = np.clip(np.nan_to_num(x, nan=0.5 * (d.low + d.high)), d.low, d.high)
            data[c.name] = x + g.laplace(0.0, d.diameter / eps, size=x.size)
        else:
            cats = list(d.categories)
            codes = pd.Index(cats).get_indexer(frame[c.name].astype(str))
            m = len(cats) - 1
            keep = math.exp(eps) / (m + math.exp(eps))
            move = g.random(codes.size) >= keep
            other = g.integers(0, max(m, 1), codes.size)
            other = other + (other >= codes)
            data[c.name] = np.asarray(cats, dtype=object)[np.where(move & (codes >= 0), other, codes)]
    return data, None, f"closed-form Laplace/RR simulation (record release unavailable: {reason})"


def record_risk(recipe, frame, *, seed=0, max_targets=2000, progress=no_progress,
                cancel=NEVER_CANCELLED) -> dict:
    from dpstudio.engine.leakage.linkage import linkage_risk
    out: dict = {"computed_on": COMPUTED_ON}
    qi = [c.name for c in recipe.columns
          if c.role in ("public", "sensitive", "label") and c.name in frame.columns]
    progress(0.05, "simulating the release")
    released, plan, how = _simulate_record_release(recipe, frame, seed)
    cancel.check()
    progress(0.4, "linkage attack")
    out["linkage"] = {**linkage_risk(frame, released, qi, max_targets=max_targets, seed=seed),
                      "simulation": how}
    if plan is not None:
        out["expected_error"] = [
            {k: m.get(k) for k in ("unit", "columns", "mechanism", "epsilon", "expected_error")
             if k in m} for m in plan.mechanisms]
    emb = [c for c in recipe.columns if c.role == "embedding"]
    if emb:
        out["embedding"] = _embedding_views(recipe, frame, emb)
    progress(1.0, "risk estimate done")
    return out


def _embedding_views(recipe, frame, emb_cols) -> dict:
    from dpstudio.engine.leakage.embedding import embedding_risk
    from dpstudio.engine.release.record import _vectors, budget_split, load_pool, perturbed_units
    split = budget_split(recipe)
    views = {}
    for unit, cols in perturbed_units(recipe):
        if cols[0].role != "embedding":
            continue
        names = [c.name for c in cols]
        try:
            pool = load_pool(cols[0], frame, names, recipe)
            vecs = _vectors(frame, names)
        except Exception as exc:  # noqa: BLE001
            views[unit] = {"available": False, "note": f"pool or vectors unavailable: {exc}",
                           "computed_on": COMPUTED_ON}
            continue
        is_ds = (cols[0].mechanism is not None and cols[0].mechanism.params.get("pool") == "dataset")
        eps = split[unit][0]
        grid = sorted(set([eps] + np.geomspace(0.5, 200, 12).tolist()))
        r = embedding_risk(vecs, pool, grid, pool_is_dataset=is_ds)
        i = grid.index(eps)
        views[unit] = {"at_epsilon": {"epsilon": eps, "reid_rate": r["reid_rate"][i],
                                      "mean_angular_distortion": r["mean_angular_distortion"][i]},
                       "curves": r, "computed_on": COMPUTED_ON}
    return views


# ---- synthetic -------------------------------------------------------------------------------

def _table_spec(recipe, frame):
    from dpstudio.engine.synth.encoding import ColumnSpec, TableSpec
    feats, label = [], None
    for c in recipe.columns:
        if c.role not in ("public", "sensitive", "label") or c.domain is None or not c.domain.known:
            continue
        if c.domain.kind == "numeric":
            cs = ColumnSpec.numeric(c.name, c.domain.low, c.domain.high, integer=c.type == "integer")
        else:
            cs = ColumnSpec.categorical(c.name, c.domain.categories)
        if c.role == "label" and label is None and cs.kind == "categorical":
            label = cs
        else:
            feats.append(cs)
    return TableSpec(tuple(feats), label)


def synthetic_risk(recipe, frame, *, seed=0, holdout: float = 0.2, progress=no_progress,
                   cancel=NEVER_CANCELLED) -> dict:
    from dpstudio.engine.leakage.synthetic import dcr_risk
    try:
        import dpstudio.engine.synth as synth_mod
    except ImportError as exc:  # pragma: no cover
        return {"available": False, "note": f"synthesizers not importable: {exc}", "computed_on": COMPUTED_ON}
    registry = getattr(synth_mod, "SYNTHESIZERS", None)
    method = recipe.release.options.get("method", "pearl")
    if not registry or method not in registry:
        return {"available": False, "computed_on": COMPUTED_ON,
                "note": f"dpstudio.engine.synth exposes no synthesizer registry entry {method!r} "
                        "(SYNTHESIZERS): the DCR / membership-inference view is unavailable"}
    from dpstudio.engine.rng import RandomSource
    g = np.random.default_rng(seed)
    n = len(frame)
    perm = g.permutation(n)
    n_ho = max(1, int(round(holdout * n)))
    ho, tr = frame.iloc[np.sort(perm[:n_ho])], frame.iloc[np.sort(perm[n_ho:])]
    spec_fn = getattr(synth_mod, "spec_from_recipe", None)
    spec = spec_fn(recipe) if spec_fn is not None else _table_spec(recipe, frame)
    progress(0.05, "fitting the synthesizer on a training split")
    try:
        fitted = registry[method]().fit(tr, spec, epsilon=recipe.budget.epsilon,
                                        delta=recipe.budget.delta, rng=RandomSource(seed),
                                        cancel=cancel)
        syn = fitted.sample(len(tr), RandomSource(seed + 1))
    except Exception as exc:  # noqa: BLE001
        return {"available": False, "note": f"synthesizer failed: {type(exc).__name__}: {exc}",
                "computed_on": COMPUTED_ON}
    cols = [c.name for c in spec.all_columns if c.name in syn.columns]
    domains = {c.name: c.domain for c in recipe.columns if c.domain is not None}
    progress(0.9, "distance to closest record")
    res = dcr_risk(tr, ho, syn, cols, domains=domains, seed=seed)
    return {"synthetic": {**res, "method": method, "train_rows": int(len(tr)),
                          "holdout_rows": int(len(ho)),
                          "note": "the synthesizer was fitted on 80 % of the rows for this estimate; "
                                  "the remaining 20 % are the holdout"},
            "computed_on": COMPUTED_ON}
