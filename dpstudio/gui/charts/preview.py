"""What the live charts show, computed from the recipe (numpy only, no Qt).

* error curves: each perturbed column's expected error and the floor no epsilon-DP mechanism
  can beat (``dpstudio.engine.bounds``), as a share of the column's range, over an epsilon grid;
* a fixed sample (<= 20,000 rows) of one column, privatized for display with the same closed
  forms (Laplace scale = expected error; Gaussian sigma; randomized-response keep probability),
  reusing fixed standard noise draws so the histogram moves smoothly with epsilon.

These previews use the private data on the steward's machine only; nothing here is released.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS_MIN, EPS_MAX = 0.01, 50.0
EPS_GRID = np.geomspace(EPS_MIN, EPS_MAX, 241)
SAMPLE_ROWS = 20_000
RECORD_TYPES = ("record", "label", "semi-sensitive")


@dataclass(frozen=True)
class Unit:
    """One perturbed column as the preview sees it."""

    name: str
    kind: str  # "numeric" | "categorical"
    mechanism: str
    share: float  # share of the total epsilon
    delta: float
    diam: float | None = None
    low: float | None = None
    high: float | None = None
    categories: tuple[str, ...] | None = None
    # the domain is estimated with DP at release time: shown on the whole search range (worst case)
    worst_case: bool = False
    # Gaussian columns calibrated jointly (record.gaussian_group): the group's share of epsilon,
    # its delta, and this column's share of the group's zCDP budget
    group_share: float | None = None
    group_delta: float | None = None
    rho_weight: float | None = None


def preview_units(recipe) -> tuple[list[Unit], list[str]]:
    """The previewable units of a record-type recipe, and notes on the columns left out."""
    notes: list[str] = []
    if recipe is None or recipe.release.type not in RECORD_TYPES:
        return [], notes
    from dpstudio.engine.release.record import _mechanism_name, budget_split, perturbed_units

    try:
        split = budget_split(recipe)
    except Exception as exc:  # noqa: BLE001
        return [], [str(exc)]
    total = recipe.budget.epsilon if recipe.budget.epsilon > 0 else 1.0
    # two or more Gaussian columns are calibrated jointly (one zCDP budget split by weight)
    gauss = [(n, cs[0].mechanism.weight if cs[0].mechanism else 1.0) for n, cs in perturbed_units(recipe)
             if _mechanism_name(cs[0]) == "gaussian"]
    joint = len(gauss) >= 2 and recipe.budget.delta > 0
    g_eps = sum(split[n][0] for n, _ in gauss)
    g_w = sum(w for _, w in gauss)
    units = []
    for name, cols in perturbed_units(recipe):
        col = cols[0]
        mech = _mechanism_name(col)
        eps_u, delta_u = split[name]
        share = eps_u / total
        d = col.domain
        if mech == "metric":
            notes.append(f"{name}: embedding (metric selection) - no error curve")
            continue
        if d is None:
            notes.append(f"{name}: no domain yet")
            continue
        if d.kind == "numeric" and mech in ("laplace", "gaussian"):
            low, high = (d.low, d.high) if d.known else (d.search_low, d.search_high)
            if low is None or high is None or not high > low:
                notes.append(f"{name}: bounds not set")
                continue
            if mech == "gaussian" and not delta_u > 0:
                notes.append(f"{name}: Gaussian needs delta > 0")
                continue
            if not d.known:
                notes.append(f"{name}: bounds estimated with DP at release time - its error is shown "
                             f"for the whole search range (worst case)")
            extra = dict(group_share=g_eps / total, group_delta=float(recipe.budget.delta),
                         rho_weight=dict(gauss)[name] / g_w) if joint and mech == "gaussian" else {}
            units.append(Unit(name, "numeric", mech, share, delta_u, diam=float(high - low),
                              low=float(low), high=float(high), worst_case=not d.known, **extra))
        elif d.kind == "categorical" and mech == "rr":
            cats = d.categories if d.categories is not None else d.candidates
            if not cats:
                notes.append(f"{name}: categories not set")
                continue
            units.append(Unit(name, "categorical", "rr", share, delta_u, categories=tuple(map(str, cats)),
                              worst_case=not d.known))
        else:
            notes.append(f"{name}: {mech} does not apply to its domain")
    return units, notes


def _spec(u: Unit):
    from dpstudio.engine.bounds import ColumnSpec

    if u.kind == "numeric":
        return ColumnSpec(kind="numeric", mechanism=u.mechanism, diam=u.diam, delta=u.delta,
                          weight=u.share, name=u.name)
    return ColumnSpec(kind="categorical", mechanism="rr", n_categories=len(u.categories), delta=u.delta,
                      weight=u.share, name=u.name)


def error_curves(units: list[Unit], eps_grid=EPS_GRID) -> tuple[np.ndarray, np.ndarray]:
    """(errors, floors) of shape (units, grid), in the column's own units."""
    from dpstudio.engine.bounds import expected_error_curves

    if not units:
        return np.zeros((0, len(eps_grid))), np.zeros((0, len(eps_grid)))
    errors, floors = expected_error_curves([_spec(u) for u in units], eps_grid)
    for i, u in enumerate(units):
        if u.rho_weight is not None:
            errors[i], floors[i] = _joint_gaussian_curves(u, np.asarray(eps_grid, dtype=float))
    return errors, floors


def _joint_gaussian_curves(u: Unit, eps_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Error and floor of a jointly calibrated Gaussian column (record.gaussian_group): the group
    gets rho(eps_G, delta) of zCDP, this column ``rho_weight`` of it, sigma = diam / sqrt(2 rho_i);
    its floor is at its own guarantee (eps_i at its delta share)."""
    from dpstudio.engine.accounting import zcdp_epsilon_many, zcdp_rho_for_many
    from dpstudio.engine.bounds import floor_continuous

    rho_i = zcdp_rho_for_many(u.group_share * eps_grid, u.group_delta) * u.rho_weight
    with np.errstate(divide="ignore"):
        sigma = np.where(rho_i > 0, u.diam / np.sqrt(2.0 * np.maximum(rho_i, 1e-300)), np.inf)
    eps_i = zcdp_epsilon_many(rho_i, u.delta)
    return sigma * np.sqrt(2.0 / np.pi), floor_continuous(u.diam, eps_i, u.delta)


def relative(units: list[Unit], values: np.ndarray) -> np.ndarray:
    """Errors as a share of the range (numeric) or probability of a wrong category (categorical)."""
    scale = np.array([u.diam if u.kind == "numeric" and u.diam else 1.0 for u in units])[:, None]
    return values / scale


class ColumnSample:
    """A fixed random sample of one column plus fixed standard noise, privatized on demand."""

    def __init__(self, frame, unit: Unit, seed: int = 20240601):
        rng = np.random.default_rng(seed)
        n = len(frame)
        idx = np.sort(rng.choice(n, size=SAMPLE_ROWS, replace=False)) if n > SAMPLE_ROWS else np.arange(n)
        series = frame[unit.name].iloc[idx]
        self.unit = unit
        if unit.kind == "numeric":
            import pandas as pd
            x = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            x = x[~np.isnan(x)]
            self.values = np.clip(x, unit.low, unit.high)
            self.noise = rng.laplace(size=len(self.values)) if unit.mechanism == "laplace" \
                else rng.standard_normal(len(self.values))
        else:
            cats = list(unit.categories)
            lookup = {c: i for i, c in enumerate(cats)}
            codes = np.array([lookup.get(str(v), -1) for v in series.astype("string").fillna("")], dtype=int)
            self.values = codes[codes >= 0]
            self.uniform = rng.random(len(self.values))
            # a uniformly chosen *other* category for each row
            k = max(len(cats), 2)
            self.other = (self.values + 1 + rng.integers(0, k - 1, len(self.values))) % k

    def privatize(self, epsilon: float) -> np.ndarray:
        u = self.unit
        err, _ = error_curves([u], np.array([max(epsilon, 1e-6)]))
        e = float(err[0, 0])
        if u.kind == "numeric":
            scale = e if u.mechanism == "laplace" else e / np.sqrt(2.0 / np.pi)
            return self.values + scale * self.noise
        m = len(u.categories) - 1
        p_change = e  # kappa * m * p with kappa = 1: the probability of reporting another category
        if m <= 0:
            return self.values
        return np.where(self.uniform < p_change, self.other, self.values)

    def histogram(self, epsilon: float, bins: int = 40):
        """``(edges_or_positions, original_counts, private_counts)`` as fractions of the sample."""
        priv = self.privatize(epsilon)
        n = max(len(self.values), 1)
        if self.unit.kind == "numeric":
            lo, hi = self.unit.low, self.unit.high
            pad = 0.25 * (hi - lo)
            edges = np.linspace(lo - pad, hi + pad, bins + 1)
            a, _ = np.histogram(self.values, edges)
            b, _ = np.histogram(priv, edges)  # privatized values beyond the shown range are not drawn
            return edges, a / n, b / n
        k = len(self.unit.categories)
        a = np.bincount(self.values, minlength=k)[:k]
        b = np.bincount(priv.astype(int), minlength=k)[:k]
        return np.arange(k), a / n, b / n
