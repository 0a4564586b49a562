"""What the live charts show, read from the compiled release plan (numpy only, no Qt).

* preview units: the plan's perturbation units that have an error curve (Laplace or Gaussian
  noise on a numeric domain, randomized response on a category list); a unit planned on its
  public search range (domain estimated with DP at release time) is flagged worst case;
* curves: each unit's ``shown_error`` and ``floor`` as the plan compiles them at
  :data:`CURVE_POINTS` log-spaced total epsilons (``plan.at_budget``; :func:`plan_curves` is a
  worker job) - the value at the current epsilon is read from the current plan, never from a curve;
* a fixed sample (<= 20,000 rows) of one column plus fixed standard noise draws, privatized for
  display with the plan's own noise parameters (Laplace scale b, Gaussian sigma, randomized
  response's keep probability), so the histogram moves smoothly with epsilon;
* the texts of the budget table and the Review page, formatted from the plan's unit fields.

These previews use the private data on the steward's machine only; nothing here is released.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpstudio.engine.progress import NEVER_CANCELLED, no_progress

EPS_MIN, EPS_MAX = 0.01, 50.0
CURVE_POINTS = 25  # plan.at_budget costs ~2 ms (Laplace / RR) to ~90 ms (Gaussian groups) per point
EPS_GRID = np.geomspace(EPS_MIN, EPS_MAX, CURVE_POINTS)
SAMPLE_ROWS = 20_000


@dataclass(frozen=True)
class Unit:
    """One plan unit with an error curve, as the preview draws it (from the plan, never recomputed)."""

    name: str
    kind: str  # "numeric" | "categorical"
    mechanism: str  # the unit's mechanism_name: "laplace" | "gaussian" | "rr"
    low: float | None = None
    high: float | None = None
    categories: tuple[str, ...] | None = None
    # planned on the public search range: its domain is estimated with DP at release time
    worst_case: bool = False

    @property
    def diam(self) -> float | None:
        return None if self.low is None or self.high is None else float(self.high - self.low)


def _category_names(plan, unit) -> tuple[str, ...]:
    """Display names of a randomized-response unit's categories (the recipe's list, or the public
    candidates a DP category estimate chooses from); numbered when they cannot be matched."""
    names = None
    try:
        d = plan.recipe.column(unit.columns[0]).domain
        names = d.categories if d.categories is not None else d.candidates
    except Exception:  # noqa: BLE001 - no recipe or no such column: numbered categories
        names = None
    if names is None or len(names) != unit.categories_count:
        names = tuple(f"#{i + 1}" for i in range(unit.categories_count or 0))
    return tuple(map(str, names))


def preview_units(plan) -> tuple[list[Unit], list[str]]:
    """The plan's perturbation units that have an error curve, and notes on the others."""
    notes: list[str] = []
    if plan is None:
        return [], notes
    units = []
    for u in plan.perturbation_units:
        if u.mechanism_name in ("laplace", "gaussian") and u.domain is not None:
            units.append(
                Unit(
                    u.name,
                    "numeric",
                    u.mechanism_name,
                    low=float(u.domain[0]),
                    high=float(u.domain[1]),
                    worst_case=u.provisional,
                )
            )
            if u.provisional:
                notes.append(
                    f"{u.name}: bounds estimated with DP at release time - its error is shown "
                    f"for the whole search range (worst case)"
                )
        elif u.mechanism_name == "rr" and u.categories_count:
            units.append(
                Unit(u.name, "categorical", "rr", categories=_category_names(plan, u), worst_case=u.provisional)
            )
            if u.provisional:
                notes.append(
                    f"{u.name}: categories estimated with DP at release time - its error is shown "
                    f"for the public candidate list (worst case)"
                )
        elif u.mechanism_name == "metric":
            notes.append(f"{u.name}: embedding (metric selection) - no error curve")
        else:
            notes.append(f"{u.name}: {u.mechanism_name} - no error curve")
    return units, notes


@dataclass(frozen=True)
class Curves:
    """The plan's own figures at each total epsilon of ``eps``: per unit name, ``shown_error``
    and ``floor`` (column units; NaN where the plan has none), and the epsilon of the label's
    randomized response alone (label and semi-sensitive releases; else None)."""

    eps: np.ndarray
    errors: dict
    floors: dict
    label_epsilon: np.ndarray | None = None


def plan_curves(plan, eps_grid=EPS_GRID, *, progress=no_progress, cancel=NEVER_CANCELLED) -> Curves:
    """Worker job: compile ``plan``'s recipe at every total epsilon of ``eps_grid``
    (``plan.at_budget``) and collect each perturbation unit's expected error and floor."""
    grid = np.asarray(eps_grid, dtype=float)
    names = [u.name for u in plan.perturbation_units]
    errors = {n: np.full(len(grid), np.nan) for n in names}
    floors = {n: np.full(len(grid), np.nan) for n in names}
    label = np.full(len(grid), np.nan) if plan.label is not None else None
    for i, eps in enumerate(grid):
        cancel.check()
        try:
            p = plan.at_budget(float(eps))
        except Exception:  # noqa: BLE001 - a budget this recipe cannot be compiled at: no point there
            continue
        for u in p.perturbation_units:
            if u.name in errors:
                if u.shown_error is not None:
                    errors[u.name][i] = u.shown_error
                if u.floor is not None:
                    floors[u.name][i] = u.floor
        if label is not None and p.label is not None:
            label[i] = p.label.label_unit_epsilon
        progress((i + 1) / len(grid), "error curves")
    return Curves(grid, errors, floors, label)


def relative(unit: Unit, values):
    """An error as a share of the range (numeric) or the probability of a changed category."""
    scale = unit.diam if unit.kind == "numeric" and unit.diam else 1.0
    return np.asarray(values, dtype=float) / scale


# ---- the texts of the budget table and the Review page (from the plan's unit fields) ----------


def fmt_number(x: float) -> str:
    x = float(x)
    if x == 0:
        return "0"
    if not np.isfinite(x) or abs(x) >= 1e9 or abs(x) < 1e-4:
        return f"{x:.3g}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def fmt_epsilon(eps: float) -> str:
    return f"{float(eps):.4g}"


def fmt_delta(delta: float) -> str:
    """δ as the report prints it ("1 × 10⁻⁶"): one number format in the wizard and the report."""
    from dpstudio.report.model import fmt

    return fmt(float(delta), 3)


def fmt_loss(d) -> str:
    """A ledger total ``{"epsilon", "delta"}`` as the wizard shows it: "ε 1.5, δ 1 × 10⁻⁶" (no δ
    when it is 0)."""
    if not d:
        return "—"
    e, dl = d.get("epsilon"), d.get("delta")
    out = f"ε {e:.3g}" if e is not None else "ε —"
    if dl:
        out += f", δ {fmt_delta(dl)}"
    return out


def noise_text(unit) -> str:
    """The unit's noise parameter: Laplace b, Gaussian sigma or randomized response's keep
    probability ("≤" when planned on the public search range: the worst case)."""
    if unit.kind == "density":
        sd = unit.facts.get("noise_sd_relative_to_flat")
        return "—" if sd is None else f"σ = {100 * sd:.3g} % of a flat density"
    n = unit.noise
    rel = "≤" if unit.provisional else "="
    if n.scale is not None:
        return f"b {rel} {fmt_number(n.scale)}"
    if n.sigma is not None:
        return f"σ {rel} {fmt_number(n.sigma)}"
    if n.keep_probability is not None:
        return f"keep {100 * n.keep_probability:.1f} %"
    return "—"


def _error_value(unit, x: float) -> str:
    return f"{100 * x:.1f} %" if unit.categories_count else fmt_number(x)


def error_text(unit) -> str:
    """Expected error per released value, in the column's units (categories: the chance a value
    is changed); "≤" when planned on the public search range (worst case)."""
    if unit.kind == "density":
        e = unit.facts.get("noise_mean_abs_relative_to_flat")
        return "—" if e is None else f"{100 * e:.3g} % of a flat density"
    if unit.shown_error is None:
        return "—"
    return ("≤ " if unit.provisional else "") + _error_value(unit, unit.shown_error)


def floor_text(unit) -> str:
    return "—" if unit.floor is None else _error_value(unit, unit.floor)


class ColumnSample:
    """A fixed random sample of one column plus fixed standard noise, privatized on demand with
    the plan's noise parameters."""

    def __init__(self, frame, unit: Unit, seed: int = 20240601):
        rng = np.random.default_rng(seed)
        n = len(frame)
        idx = np.sort(rng.choice(n, size=SAMPLE_ROWS, replace=False)) if n > SAMPLE_ROWS else np.arange(n)
        series = frame[unit.name].iloc[idx]
        self.unit = unit
        self.low, self.high = float(unit.low or 0.0), float(unit.high or 0.0)
        self.categories: tuple[str, ...] = unit.categories or ()
        if unit.kind == "numeric":
            import pandas as pd

            x = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            x = x[~np.isnan(x)]
            self.values = np.clip(x, self.low, self.high)
            # unit noise: Laplace(1) scaled by b, or N(0, 1) scaled by sigma
            self.noise = (
                rng.laplace(size=len(self.values))
                if unit.mechanism == "laplace"
                else rng.standard_normal(len(self.values))
            )
        else:
            cats = list(self.categories)
            lookup = {c: i for i, c in enumerate(cats)}
            codes = np.array([lookup.get(str(v), -1) for v in series.astype("string").fillna("")], dtype=int)
            self.values = codes[codes >= 0]
            self.uniform = rng.random(len(self.values))
            # a uniformly chosen *other* category for each row
            k = max(len(cats), 2)
            self.other = (self.values + 1 + rng.integers(0, k - 1, len(self.values))) % k

    def privatize(self, noise, clamp: bool = False) -> np.ndarray:
        """The sample with noise of the plan's parameters (``NoiseParameters`` of the unit), then
        clamped to the public bounds when the release clamps (as the release does)."""
        u = self.unit
        if u.kind == "numeric":
            s = noise.scale if u.mechanism == "laplace" else noise.sigma
            y = self.values + float(s or 0.0) * self.noise
            return np.clip(y, self.low, self.high) if clamp else y
        keep = noise.keep_probability
        if keep is None or len(self.categories) < 2:
            return self.values
        return np.where(self.uniform < 1.0 - keep, self.other, self.values)

    def histogram(self, noise, bins: int = 40, clamp: bool = False):
        """``(edges_or_positions, original_counts, private_counts)`` as fractions of the sample."""
        priv = self.privatize(noise, clamp)
        n = max(len(self.values), 1)
        if self.unit.kind == "numeric":
            lo, hi = self.low, self.high
            pad = 0.25 * (hi - lo)
            edges = np.linspace(lo - pad, hi + pad, bins + 1)
            a, _ = np.histogram(self.values, edges)
            b, _ = np.histogram(priv, edges)  # privatized values beyond the shown range are not drawn
            return edges, a / n, b / n
        k = len(self.categories)
        a = np.bincount(self.values, minlength=k)[:k]
        b = np.bincount(priv.astype(int), minlength=k)[:k]
        return np.arange(k), a / n, b / n
