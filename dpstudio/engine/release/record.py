"""Record-level releases: ``record``, ``label`` and ``semi-sensitive``.

Each record is perturbed independently by per-column mechanisms; by Jazbec 2018, Thm 4.7, the
table is (eps, delta)-DP under replace-one neighbours when each one-record mechanism is, and by
Thm 4.3 every later use of the released table is post-processing.  The per-record budget is
split across the perturbed columns by weight and recombined by basic composition (exact for the
pure-DP components), except that two or more Gaussian columns share one zCDP budget (their rho's
add: :func:`gaussian_group`), which gives them much less noise for the same (eps, delta).  The
plan is made before any data is read; a column whose bounds are estimated with DP is planned on
its public search range and marked provisional (worst case), and ``run`` returns the plan of the
mechanisms that actually drew the noise (``ReleaseOutcome.final_plan``).

``label`` perturbs only the label (a label-DP guarantee); ``semi-sensitive`` perturbs the
sensitive features and the label and leaves public columns untouched (a
semi-sensitive-DP guarantee whose label protection is eroded by public features: see
``dpstudio.engine.leakage``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from dpstudio.engine.accounting import PrivacyLoss, compose
from dpstudio.engine.progress import NEVER_CANCELLED, no_progress
from dpstudio.engine.release.base import ReleaseOutcome, ReleasePlan
from dpstudio.errors import UserError
from dpstudio.recipe.model import Recipe
from dpstudio.recipe.validate import NUMERIC_TYPES, default_mechanism, perturbed_roles

GUARANTEE = {"record": "record-level", "label": "label", "semi-sensitive": "semi-sensitive"}
LOSS_KIND = {"record": "dp", "label": "label", "semi-sensitive": "semi-sensitive"}


def _mechanism_name(col) -> str:
    return col.mechanism.name if col.mechanism is not None else default_mechanism(col.type, col.role)


def perturbed_units(recipe: Recipe) -> list[tuple[str, list]]:
    """Units of perturbation: one per column, one per embedding group (its columns together)."""
    roles = perturbed_roles(recipe.release.type)
    units: list[tuple[str, list]] = []
    groups: dict[str, list] = {}
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
    return {u[0]: (float(e), float(d)) for u, e, d in zip(units, eps, delta)}


# relative margin kept off the group's rho so float rounding of the sigma's never exceeds it
_RHO_MARGIN = 1e-9


def gaussian_group(recipe: Recipe) -> dict | None:
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
    from dpstudio.engine.accounting import zcdp_rho_for

    rho = zcdp_rho_for(eps_g, delta_g) * (1.0 - _RHO_MARGIN)
    w = np.array([cols[0].mechanism.weight if cols[0].mechanism else 1.0 for _, cols in gauss], float)
    shares = rho * w / w.sum()
    return {"epsilon": eps_g, "delta": delta_g, "rho": rho, "units": [n for n, _ in gauss],
            "rho_share": {n: float(r) for (n, _), r in zip(gauss, shares)}}


def build_mechanism(col, epsilon: float, delta: float, pool=None, rho: float | None = None):
    """The engine mechanism object for one unit (columns share one for an embedding group).

    ``rho``: the unit's share of a jointly calibrated zCDP budget (Gaussian units only)."""
    from dpstudio.engine.mechanisms import MECHANISMS

    name = _mechanism_name(col)
    if name == "metric":
        if pool is None:
            raise UserError(f"column {col.name!r}: metric selection needs its public pool loaded")
        return MECHANISMS["metric"](epsilon=epsilon, pool=pool)
    d = col.domain
    if name in ("laplace", "gaussian"):
        kwargs = dict(epsilon=epsilon, low=float(d.low), high=float(d.high), integer=col.type == "integer")
        if name == "gaussian" or delta > 0:
            kwargs["delta"] = delta
        if name == "gaussian" and rho is not None:
            del kwargs["epsilon"]
            kwargs["rho"] = rho
        return MECHANISMS[name](**kwargs)
    cats = _categories(col)
    kwargs = dict(epsilon=epsilon, n_categories=len(cats))
    if delta > 0:
        kwargs["delta"] = delta
    return MECHANISMS["rr"](**kwargs)


def _categories(col) -> tuple[str, ...]:
    return tuple(col.domain.categories)


def _unit_loss(name: str, col, mech, kind: str) -> PrivacyLoss:
    loss = mech.privacy_loss()
    # metric selection is eps*d_chi-private with d_chi <= 1, hence eps-DP for the replaced vector
    label = f"{_mechanism_name(col)} on {name}"
    return PrivacyLoss(epsilon=loss.epsilon, delta=loss.delta, label=label, rdp=loss.rdp,
                       gdp_mu=loss.gdp_mu, kind=kind, details=dict(loss.details), zcdp_rho=loss.zcdp_rho)


# parameters that depend on the domain: provisional while the domain is still to be estimated
_SCALE_KEYS = ("scale", "sigma", "grid_step", "expected_error", "p_each_other_category", "p_keep",
               "categories_count")


def _mechanism_summary(name: str, cols, mech, share: tuple[float, float], provisional: bool = False) -> dict:
    """What the report and ``recipe check`` print about one unit: the parameters of ``mech``.

    ``provisional``: the unit's domain is estimated with DP at release time, so ``mech`` was
    built on the public search range; its scale is then only the worst case and is reported
    under ``worst_case_*`` keys, never as the scale."""
    col = cols[0]
    loss = mech.privacy_loss()
    info = {"unit": name, "columns": [c.name for c in cols], "mechanism": _mechanism_name(col),
            "epsilon": float(loss.epsilon), "delta": float(loss.delta)}
    if loss.zcdp_rho is not None:
        # calibrated jointly: the unit's own (eps, delta) is for information; the total is composed
        # in zCDP from its rho together with the other Gaussian columns
        info.update(zcdp_rho=float(loss.zcdp_rho), budget_share_epsilon=share[0], budget_share_delta=share[1],
                    calibration="joint zCDP with the other Gaussian columns")
    for attr, key in (("scale", "scale"), ("sigma", "sigma"), ("step", "grid_step"),
                      ("p", "p_each_other_category"), ("keep", "p_keep")):
        v = getattr(mech, attr, None)
        if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool):
            info[key] = float(v)
    for attr, key in (("sigma_steps", "sigma_steps"), ("diam_steps", "diam_steps")):
        v = getattr(mech, attr, None)
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            info[key] = float(v)
    if hasattr(mech, "n_categories"):
        info["categories_count"] = int(mech.n_categories)
    err = mech.expected_error() if hasattr(mech, "expected_error") else None
    if err is not None:
        info["expected_error"] = float(err)
    if col.domain is not None:
        if col.domain.kind == "numeric":
            info["domain"] = [col.domain.low, col.domain.high]
        else:
            info["categories"] = len(col.domain.categories or ())
        info["domain_source"] = col.domain.source
    if provisional:
        info["scale_depends_on_estimate"] = True
        info.pop("sigma_steps", None)
        info.pop("diam_steps", None)
        numeric = col.domain.kind == "numeric"
        for key in _SCALE_KEYS:
            v = info.pop(key, None)
            if v is not None and numeric:
                info[f"worst_case_{key}"] = v
        if numeric:
            info["search_range"] = [col.domain.search_low, col.domain.search_high]
            shown = [f"{k} = {info['worst_case_' + k]:.6g}" for k in ("scale", "sigma")
                     if f"worst_case_{k}" in info]
            info["note"] = ("scale depends on the DP estimate of the bounds; worst case (whole search range "
                            f"[{col.domain.search_low:g}, {col.domain.search_high:g}]): " + ", ".join(shown)
                            + "; the release report gives the scale that ran")
        else:
            info["note"] = ("parameters depend on the DP-selected category list; the release report gives "
                            "the ones that ran")
    return info


class _PlaceholderPool:
    """Stands in for an embedding pool during planning (accounting does not depend on it)."""

    def __init__(self, dim: int):
        self.array = np.eye(max(dim, 2), dtype=np.float32)


def _with_search_range(col):
    """The column with its DP-estimated domain replaced by the public search range (worst case)."""
    from dataclasses import replace
    d = col.domain
    if d.kind == "numeric":
        return replace(col, domain=replace(d, low=d.search_low, high=d.search_high))
    return replace(col, domain=replace(d, categories=d.candidates or ("?", "??")))


def _build_units(recipe: Recipe, pool_for) -> list[dict]:
    """Every perturbation unit with the mechanism object that will draw its noise.

    Units whose domain is still to be estimated with DP are built on the public search range and
    marked provisional.  ``pool_for(col, cols)`` returns a metric unit's pool."""
    split = budget_split(recipe)
    group = gaussian_group(recipe)
    built = []
    for name, cols in perturbed_units(recipe):
        eps, delta = split[name]
        col = cols[0]
        metric = _mechanism_name(col) == "metric"
        provisional = False
        if not metric and (col.domain is None or not col.domain.known):
            if col.domain is not None and col.domain.source == "dp":
                col, provisional = _with_search_range(col), True
            else:
                raise UserError(f"column {col.name!r}: no domain")
        rho = group["rho_share"].get(name) if group is not None else None
        mech = build_mechanism(col, eps, delta, pool=pool_for(col, cols) if metric else None, rho=rho)
        built.append({"name": name, "cols": cols, "col": col, "mech": mech, "share": (eps, delta),
                      "provisional": provisional})
    return built


def _plan_of(recipe: Recipe, built: list[dict], domain_losses) -> ReleasePlan:
    """The plan (accounting + summaries) of mechanisms already built."""
    rtype = recipe.release.type
    kind = LOSS_KIND[rtype]
    guarantee = GUARANTEE[rtype]
    perturbed_names = {c.name for _, cols in perturbed_units(recipe) for c in cols}
    passthrough = [c.name for c in recipe.columns
                   if c.role not in ("identifier", "ignore") and c.name not in perturbed_names]
    if rtype == "record" and passthrough:
        # replace-one neighbours change whole records: a column copied verbatim has no
        # protection, so what is delivered is semi-sensitive DP (public columns assumed known)
        kind, guarantee = LOSS_KIND["semi-sensitive"], GUARANTEE["semi-sensitive"]
    components = list(domain_losses)
    summaries = []
    notes = []
    for u in built:
        components.append(_unit_loss(u["name"], u["col"], u["mech"], kind))
        summaries.append(_mechanism_summary(u["name"], u["cols"], u["mech"], u["share"], u["provisional"]))
    # the jointly calibrated Gaussian group is converted at the recipe's delta and everything else
    # (Laplace, RR, DP domain estimates) adds by basic composition.  Deliberately not "auto": an
    # RDP total of all units can be a little tighter, but it depends on the grids, which change
    # when DP-estimated bounds arrive, and the run must never spend more than the plan reserved;
    # zcdp+basic depends only on the budget shares, so plan and run agree
    rest_delta = sum(l.delta for l in components if l.zcdp_rho is None)
    target = (recipe.budget.delta or 0.0) + rest_delta
    group = gaussian_group(recipe)
    if any(l.zcdp_rho is not None for l in components) and group is not None and 0 < target < 1:
        # the group is converted at the delta it was calibrated for, passed as such
        composition = compose(components, delta=target, method="zcdp+basic", zcdp_delta=group["delta"])
    else:
        composition = compose(components, delta=recipe.budget.delta or None, method="basic")
    # the total is computed, never typed: it must still be what the user asked for (the budget
    # plus the stated costs of DP domain estimates), or the plan is refused before anything runs
    allowed_eps = recipe.budget.epsilon + sum(l.epsilon for l in domain_losses)
    allowed_delta = (recipe.budget.delta or 0.0) + sum(l.delta for l in domain_losses)
    if composition.total.epsilon > allowed_eps * (1 + 1e-9) or \
            composition.total.delta > allowed_delta * (1 + 1e-9) + 1e-300:
        raise UserError(f"the planned release would spend eps={composition.total.epsilon:.6g}, "
                        f"delta={composition.total.delta:.3g}, more than the budget plus the domain "
                        f"estimates allow (eps={allowed_eps:.6g}, delta={allowed_delta:.3g}); "
                        f"adjust the budget or the estimates' costs")
    provisional = [u["name"] for u in built if u["provisional"]]
    if provisional:
        notes.append(f"{', '.join(provisional)}: the noise scale depends on the DP estimate of the domain, "
                     f"made at release time; the scale shown here is the worst case (the whole public "
                     f"search range), the release report gives the scale that ran")
    if passthrough:
        notes.append(f"columns released unchanged ({', '.join(passthrough)}) are not protected: the "
                     f"guarantee covers the perturbed columns only, assuming the unchanged ones are public"
                     + ("; if they predict the label, the label is less protected than epsilon suggests "
                        "(see the leakage estimate)" if recipe.columns_with_role("label") else ""))
    for c in recipe.columns:
        if c.role == "embedding" and c.mechanism is not None and c.mechanism.params.get("pool") == "dataset":
            notes.append(f"embedding {c.group or c.name}: replacements are drawn from the dataset itself, so "
                         f"the released vectors ARE other people's real vectors; epsilon protects the "
                         f"person whose vector is replaced, NOT the people whose vectors are emitted")
            break
    return ReleasePlan(components=tuple(components), composition=composition, guarantee=guarantee,
                       mechanisms=tuple(summaries), notes=tuple(notes))


def plan(recipe: Recipe) -> ReleasePlan:
    from dpstudio.engine.release.domains import domain_components

    rtype = recipe.release.type
    if not budget_split(recipe):
        raise UserError(f"release {rtype!r}: no column would be perturbed - mark columns "
                        f"{' / '.join(perturbed_roles(rtype))}")
    built = _build_units(recipe, pool_for=lambda col, cols: _PlaceholderPool(len(cols)).array)
    return _plan_of(recipe, built, domain_components(recipe))


def label_guarantee(recipe: Recipe, plan_: ReleasePlan | None = None) -> dict | None:
    """The label's formal guarantee (no data read); None when the release has no label."""
    if recipe.release.type not in ("label", "semi-sensitive") or not recipe.columns_with_role("label"):
        return None
    from dpstudio.engine.leakage.label import label_guarantee as _label_guarantee
    return _label_guarantee(recipe, plan_)


# ---- running ----------------------------------------------------------------------------

def _numeric_values(series: pd.Series, col, stats: dict) -> np.ndarray:
    try:
        x = np.array(pd.to_numeric(series, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan),
                     dtype=np.float64)
    except (ValueError, TypeError):
        raise UserError(f"column {col.name!r}: expected numbers, found text values") from None
    d = col.domain
    missing = np.isnan(x)
    n_missing = int(missing.sum())
    if n_missing:
        # a public fill value (the middle of the public bounds) keeps missingness from being released
        x[missing] = 0.5 * (d.low + d.high)
    n_clipped = int(np.count_nonzero((x < d.low) | (x > d.high)))
    np.clip(x, d.low, d.high, out=x)
    stats[col.name] = {"clipped": n_clipped, "missing_filled": n_missing}
    return x


def _int_categories(cats) -> np.ndarray | None:
    try:
        return np.array([int(c) for c in cats], dtype=np.int64)
    except (ValueError, OverflowError):
        return None


def _lookup_codes(series: pd.Series, cats: tuple[str, ...]) -> np.ndarray:
    """Position of each value in ``cats`` (-1 when absent or missing), vectorised.

    Integer/boolean columns with integer-like categories are matched as numbers (no string
    conversion of a million cells); text columns through pyarrow's hash lookup."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
        as_int = _int_categories(cats)
        if pd.api.types.is_bool_dtype(dtype) and as_int is None:
            as_int = np.array([{"true": 1, "false": 0}.get(c.lower(), -(2 ** 62)) for c in cats], np.int64)
        if as_int is not None:
            missing = series.isna().to_numpy()
            values = series.to_numpy(dtype=np.int64, na_value=0) if missing.any() else \
                series.to_numpy(dtype=np.int64)
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

    arr = pa.array(series.astype("string").to_numpy(dtype=object, na_value=None), type=pa.string())
    idx = pc.index_in(arr, value_set=pa.array(list(cats), type=pa.string()))
    return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def category_codes(series: pd.Series, col, stats: dict | None = None) -> np.ndarray:
    """Codes into the declared category list; out-of-list values go to ``other`` or are refused."""
    cats = _categories(col)
    codes = _lookup_codes(series, cats)
    bad = codes < 0
    n_bad = int(bad.sum())
    if n_bad:
        other = col.domain.other
        if other is None:
            raise UserError(f"column {col.name!r}: {n_bad} value(s) are missing or not in the declared "
                            f"category list; add them, or declare an 'other' category")
        codes[bad] = cats.index(other)
    if stats is not None:
        stats[col.name] = {"mapped_to_other": n_bad}
    return codes


def decode_categories(codes: np.ndarray, col):
    """Released values from codes.  The output type depends on the recipe only (declared type
    and category list), never on the raw column's dtype: one missing value turns a pandas
    int column into float, and letting that change the output would reveal it."""
    cats = _categories(col)
    as_int = _int_categories(cats)
    if as_int is not None:  # integer-coded categories come back as integers
        return as_int[codes]
    if col.type == "boolean" and {c.lower() for c in cats} <= {"true", "false"}:
        return np.array([c.lower() == "true" for c in cats])[codes]
    # categorical dtype: compact in memory and written as dictionary-encoded Parquet
    return pd.Categorical.from_codes(codes, categories=list(cats))


def load_pool(col, frame: pd.DataFrame, group_cols: list[str], recipe: Recipe) -> np.ndarray:
    """The public pool of replacement vectors (or the dataset itself, when acknowledged)."""
    from dpstudio.engine.data.loader import load_table

    pool = col.mechanism.params.get("pool") if col.mechanism else None
    if pool == "dataset":
        return _vectors(frame, group_cols)
    table = load_table(pool).frame
    missing = [c for c in group_cols if c not in table.columns] if len(group_cols) > 1 else []
    if missing:
        raise UserError(f"embedding pool {pool}: lacks columns {missing[:5]!r}")
    return _vectors(table, group_cols if len(group_cols) > 1 or group_cols[0] in table.columns
                    else list(table.columns))


def _vectors(frame: pd.DataFrame, cols: list[str]) -> np.ndarray:
    if len(cols) == 1 and frame[cols[0]].dtype == object:
        return np.stack(frame[cols[0]].to_numpy()).astype(np.float32)
    return frame[cols].to_numpy(dtype=np.float32)


def run(recipe: Recipe, frame: pd.DataFrame, plan_: ReleasePlan, rng, *, progress=no_progress,
        cancel=NEVER_CANCELLED) -> ReleaseOutcome:
    """Estimate the DP domains, build every unit's mechanism once on the domains that will be
    used, and perturb with exactly those objects.  ``final_plan`` summarises the same objects,
    so the report prints the scales that drew the noise."""
    from dpstudio.engine.release.domains import domain_components, resolve_dp_domains

    # the costs of the domain estimates, as planned (labels included), before they are resolved
    domain_losses = domain_components(recipe)
    recipe, domain_stats = resolve_dp_domains(recipe, frame, rng)
    pools: dict[str, np.ndarray] = {}

    def pool_for(col, cols):
        names = [c.name for c in cols]
        pools[col.name] = load_pool(col, frame, names, recipe)
        return pools[col.name]

    built = _build_units(recipe, pool_for)
    final = _plan_of(recipe, built, domain_losses)
    planned, ran = plan_.total, final.total
    if ran.epsilon > planned.epsilon * (1 + 1e-12) + 1e-15 or ran.delta > planned.delta * (1 + 1e-12) + 1e-300:
        # the ledger reserved the plan's total: never draw noise that spends more
        raise RuntimeError(f"internal error: the mechanisms built for the release spend (eps={ran.epsilon!r}, "
                           f"delta={ran.delta!r}), more than planned ({planned.epsilon!r}, {planned.delta!r})")
    unit_of = {c.name: u for u in built for c in u["cols"]}
    stats: dict = {}
    out: dict[str, object] = {}
    done_units: set[str] = set()
    kept = [c for c in recipe.columns if c.role not in ("identifier", "ignore")]
    clamp = bool(recipe.release.options.get("clamp_to_bounds", False))
    for i, col in enumerate(kept):
        cancel.check()
        progress(i / max(len(kept), 1), f"perturbing {col.name}")
        if col.name not in unit_of:
            out[col.name] = frame[col.name]  # public column (or not perturbed by this release type)
            continue
        u = unit_of[col.name]
        if u["name"] in done_units:
            continue
        done_units.add(u["name"])
        mech, cols = u["mech"], u["cols"]
        mech_name = _mechanism_name(col)
        if mech_name == "metric":
            names = [c.name for c in cols]
            pool_param = col.mechanism.params.get("pool") if col.mechanism else None
            # a record's own vector is excluded by position (never by value: excluding equal
            # vectors would make some outputs impossible for one neighbour only, breaking DP)
            self_index = np.arange(len(frame)) if pool_param == "dataset" else None
            chosen = mech.release(_vectors(frame, names), rng, self_index=self_index)
            if len(names) == 1 and col.type == "vector":
                out[col.name] = pd.Series(list(chosen), index=frame.index)
            else:
                for j, n in enumerate(names):
                    out[n] = chosen[:, j]
            continue
        if mech_name in ("laplace", "gaussian"):
            x = _numeric_values(frame[col.name], col, stats)
            y = mech.release(x, rng)
            if clamp:
                # post-processing: plausible values at the price of bias near the bounds
                np.clip(y, col.domain.low, col.domain.high, out=y)
            out[col.name] = y.astype(np.int64) if col.type == "integer" else y
        else:
            codes = category_codes(frame[col.name], col, stats)
            out[col.name] = decode_categories(mech.release(codes, rng), col)
    progress(1.0, "perturbation done")
    data = pd.DataFrame({c.name: out[c.name] for c in kept if c.name in out})
    return ReleaseOutcome(data=data, steward_stats={"columns": stats, **domain_stats}, final_plan=final)
