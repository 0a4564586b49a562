"""Record-level releases: ``record``, ``label`` and ``semi-sensitive``.

Each record is perturbed independently by per-column mechanisms; by seed 004 Thm 4.7 the
table is (eps, delta)-DP under replace-one neighbours when each one-record mechanism is, and by
Thm 4.3 every later use of the released table is post-processing.  The per-record budget is
split across the perturbed columns by weight and recombined by basic composition (exact for the
pure-DP components).  ``label`` perturbs only the label (a label-DP guarantee); ``semi-sensitive``
perturbs the sensitive features and the label and leaves public columns untouched (a
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
    """(epsilon, delta) of each perturbation unit: epsilon by weight; delta to the Gaussian units
    (or, when there are none, by weight to all units — Laplace and RR then use their exact
    (eps, delta) calibrations)."""
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


def build_mechanism(col, epsilon: float, delta: float, pool=None):
    """The engine mechanism object for one unit (columns share one for an embedding group)."""
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
                       gdp_mu=loss.gdp_mu, kind=kind, details=dict(loss.details))


def _mechanism_summary(name: str, cols, mech, eps: float, delta: float) -> dict:
    col = cols[0]
    info = {"unit": name, "columns": [c.name for c in cols], "mechanism": _mechanism_name(col),
            "epsilon": eps, "delta": delta}
    for attr, key in (("scale", "scale"), ("sigma", "sigma"), ("step", "grid_step"),
                      ("p", "p_each_other_category"), ("keep", "p_keep")):
        v = getattr(mech, attr, None)
        if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool):
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
    return info


class _PlaceholderPool:
    """Stands in for an embedding pool during planning (accounting does not depend on it)."""

    def __init__(self, dim: int):
        self.array = np.eye(max(dim, 2), dtype=np.float32)


def plan(recipe: Recipe) -> ReleasePlan:
    from dpstudio.engine.release.domains import domain_components

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
    split = budget_split(recipe)
    if not split:
        raise UserError(f"release {rtype!r}: no column would be perturbed - mark columns "
                        f"{' / '.join(perturbed_roles(rtype))}")
    components = list(domain_components(recipe))
    summaries = []
    notes = []
    for name, cols in perturbed_units(recipe):
        eps, delta = split[name]
        col = cols[0]
        pool = _PlaceholderPool(len(cols)).array if _mechanism_name(col) == "metric" else None
        if _mechanism_name(col) != "metric" and (col.domain is None or not col.domain.known):
            if col.domain is not None and col.domain.source == "dp":
                # bounds not known until estimated at release time: account with the search range
                from dataclasses import replace
                d = col.domain
                col = replace(col, domain=replace(d, low=d.search_low, high=d.search_high)) \
                    if d.kind == "numeric" else replace(col, domain=replace(d, categories=d.candidates or ("?", "??")))
            else:
                raise UserError(f"column {col.name!r}: no domain")
        mech = build_mechanism(col, eps, delta, pool=pool)
        components.append(_unit_loss(name, col, mech, kind))
        summaries.append(_mechanism_summary(name, cols, mech, eps, delta))
    composition = compose(components, delta=recipe.budget.delta or None, method="basic")
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
    from dpstudio.engine.release.domains import resolve_dp_domains

    recipe, domain_stats = resolve_dp_domains(recipe, frame, rng)
    split = budget_split(recipe)
    units = perturbed_units(recipe)
    unit_of = {c.name: (name, cols) for name, cols in units for c in cols}
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
        name, cols = unit_of[col.name]
        if name in done_units:
            continue
        done_units.add(name)
        eps, delta = split[name]
        mech_name = _mechanism_name(col)
        if mech_name == "metric":
            names = [c.name for c in cols]
            pool = load_pool(col, frame, names, recipe)
            mech = build_mechanism(col, eps, delta, pool=pool)
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
        mech = build_mechanism(col, eps, delta)
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
    return ReleaseOutcome(data=data, steward_stats={"columns": stats, **domain_stats})
