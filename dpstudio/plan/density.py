"""Release type ``density``: DP kernel density estimate of 1 or 2 numeric sensitive columns with
Gaussian-process noise on a grid (Hall, Rinaldo & Wasserman 2013; docs/mechanisms.md;
:mod:`dpstudio.engine.density` has the maths).

Options: ``bandwidth`` (in units of the public range, default Scott's rule from n and the
public range), ``grid_size`` (default 256 in 1-D, 64 per axis in 2-D), ``sample_rows``
(default 0: synthetic values drawn from the clipped, renormalised DP density — post-processing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine import density as kde
from dpstudio.engine.accounting import PrivacyLoss, compose, rdp_gaussian
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError
from dpstudio.plan.units import PlanUnit, ReleaseOutcome, ReleasePlan, refusal
from dpstudio.recipe.model import Column, Recipe


def _columns(recipe: Recipe) -> list[Column]:
    cols = list(recipe.columns_with_role("sensitive"))
    if len(cols) not in (1, 2):
        raise refusal(
            f"release 'density': mark 1 or 2 numeric columns 'sensitive', got {len(cols)}",
            field="columns",
            page="columns",
        )
    for c in cols:
        if c.domain is None or (not c.domain.known and c.domain.source != "dp"):
            raise refusal(f"column {c.name!r}: needs public bounds", field=f"column:{c.name}", page="columns")
    return cols


def _options(recipe: Recipe, d: int) -> dict[str, Any]:
    o = recipe.release.options
    g = int(o.get("grid_size", 256 if d == 1 else 64))
    if not 2 <= g <= (4096 if d == 1 else 256):
        raise refusal(
            f"release option grid_size={g}: choose 2..{4096 if d == 1 else 256}", field="release", page="release"
        )
    h = o.get("bandwidth")
    if h is not None and not float(h) > 0:
        raise refusal(f"release option bandwidth must be > 0, got {h!r}", field="release", page="release")
    rows = int(o.get("sample_rows", 0))
    if rows < 0:
        raise refusal("release option sample_rows must be >= 0", field="release", page="release")
    return {"grid_size": g, "bandwidth": None if h is None else float(h), "sample_rows": rows}


@dataclass(frozen=True)
class DensityCalibration:
    """The public numbers of one density release for ``n`` rows: everything :meth:`DensityRelease.release`
    draws its noise with, and what the plan prints before it runs (the same function computes both).

    ``multiplier``: the standard deviation of the discrete Gaussian noise on each whitened
    coordinate (on the lattice ``grid_step``), so the noise at a grid point of the unit-cube
    density has standard deviation at most ``multiplier * sqrt(M'_ii)`` (:meth:`point_sd`)."""

    n: int
    d: int
    grid_size: int
    bandwidth: float  # in units of the public range
    sensitivity: float
    snapped_sensitivity: float
    grid_step: float
    continuous_epsilon: float
    continuous_delta: float
    box: float
    multiplier: float

    def point_sd(self) -> float:
        """An upper bound on the noise's standard deviation at every grid point, for the density
        on the unit cube (a flat density has height 1 there).  The noise is B z, z discrete
        Gaussian (variance at most ``multiplier``^2; Canonne, Kamath & Steinke 2020), so its
        variance at point i is at most multiplier^2 (B B^T)_ii = multiplier^2 M'_ii, and
        M'_ii <= prod_k (1 + (JITTER + 1e-13) g): the Gram matrix's diagonal is 1, its eigenvalues
        are at most g (entries <= 1), the jitter adds JITTER * lambda_max and clipping the rounding's
        negative eigenvalues (~1e-13 ||M||) adds at most their size (:class:`kde.GPNoise`).  The
        bound is within 1e-6 of the exact figure."""
        per_axis = 1.0 + (kde.JITTER + 1e-13) * self.grid_size
        return float(self.multiplier * per_axis ** (self.d / 2.0))

    def mean_abs_error(self) -> float:
        """The expected absolute noise at each grid point (unit-cube density): sqrt(2/pi) times
        :meth:`point_sd`, the Gaussian's mean absolute value (the discrete Gaussian on a lattice
        2^-12 of the sensitivity fine has the same to far below the digits printed)."""
        return math.sqrt(2.0 / math.pi) * self.point_sd()


@dataclass(frozen=True)
class DensityRelease:
    """Kernel density on a grid plus Gaussian-process noise, analytically calibrated to
    (epsilon, delta) (Hall, Rinaldo & Wasserman 2013, Thm 6.1/6.8 as in Jazbec 2018; the lattice
    correction of docs/mechanisms.md).  The sensitivity needs the public row count, so the noise
    multiplier is computed by :meth:`release` from n, the bandwidth and this object's budget."""

    epsilon: float
    delta: float
    grid_size: int
    bandwidth: float | None

    def privacy_loss(self) -> PrivacyLoss:
        # the analytic calibration makes mu = Delta / sigma the GDP mu for (eps, delta)
        from dpstudio.engine.accounting import gdp_mu_for

        mu = float(gdp_mu_for(self.epsilon, self.delta))
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            kind="dp",
            gdp_mu=mu,
            rdp=rdp_gaussian(1.0, 1.0 / mu),
            label="Gaussian-process noise on a kernel density estimate",
        )

    def calibrate(self, n: int, d: int) -> DensityCalibration:
        """The noise for ``n`` rows (public under replace-one neighbours) and ``d`` columns:
        public quantities only, so the plan shows it before the release, which draws with it.

        The GP noise mult*B*Z is isotropic in whitened coordinates c = B^{-1} f, where the
        sensitivity is <= Delta (Thm 6.8; B B^T >= M).  To keep the data's low-order bits out of
        the output (Mironov 2012) c is snapped to a data-independent grid and gets exact discrete
        Gaussian noise on that grid; snapping can move neighbours apart by grid*sqrt(dim) more,
        and the whitening's rounding error is covered by a 1e-6 relative margin.  The analytic
        calibration is for continuous noise; the noise that runs is a discrete Gaussian on
        grid_step * Z, so it is calibrated for a slightly smaller (eps', delta') that makes the
        discrete law meet the recipe's (eps, delta) (privacy.lattice_proven; docs/mechanisms.md)."""
        from dpstudio.engine.synth.privacy import lattice_shave, snapped_sensitivity

        h = self.bandwidth if self.bandwidth is not None else kde.scott_bandwidth(n, d)
        size = self.grid_size**d
        delta_s = kde.kde_sensitivity(n, h, d)
        grid_step = 2.0 ** (math.floor(math.log2(delta_s)) - 12)
        sens = snapped_sensitivity(delta_s * (1 + 1e-6), grid_step, size)
        mult0 = kde.analytic_multiplier(self.epsilon, self.delta, sens)
        eps1, delta1, box = lattice_shave(self.epsilon, self.delta, size, mult0 / grid_step)
        mult = kde.analytic_multiplier(eps1, delta1, sens)
        return DensityCalibration(
            n=n,
            d=d,
            grid_size=self.grid_size,
            bandwidth=h,
            sensitivity=delta_s,
            snapped_sensitivity=sens,
            grid_step=grid_step,
            continuous_epsilon=eps1,
            continuous_delta=delta1,
            box=box,
            multiplier=mult,
        )

    def release(
        self,
        pts: npt.NDArray[np.float64],
        rng: RandomSource,
        *,
        progress: ProgressCallback = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> dict[str, Any]:
        """The noisy density on the unit grid of ``pts`` (n x d, scaled to [0, 1]) and the public
        numbers that calibrated it (:meth:`calibrate`)."""
        from dpstudio.engine.synth.privacy import gaussian_noise, gdp_delta, lattice_proven, snap

        n, d = pts.shape
        cal = self.calibrate(n, d)
        h, delta_s, sens, grid_step, mult = (
            cal.bandwidth,
            cal.sensitivity,
            cal.snapped_sensitivity,
            cal.grid_step,
            cal.multiplier,
        )
        eps1, box = cal.continuous_epsilon, cal.box
        grids = [kde.grid_1d(self.grid_size) for _ in range(d)]
        cancel.check()
        progress(0.1, "kernel density on the grid")
        f = kde.kde_on_grid(pts, grids, h, n)
        cancel.check()
        progress(0.4, "Gaussian-process noise")
        noise = kde.GPNoise.for_grids(grids, h)
        c = noise.whiten(f)
        proven_eps, proven_delta = lattice_proven(eps1, gdp_delta(eps1, sens / mult), [(c.size, mult / grid_step)], box)
        z, how = gaussian_noise(rng, mult, c.shape, grid_step)
        f_dp = noise.color(snap(c, grid_step) + z)
        corollary = kde.corollary_multiplier(self.epsilon, self.delta, delta_s) if self.epsilon <= 1 else None
        guarantee = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "kind": "central (eps, delta)-DP",
            "neighbours": "replace-one (n public)",
            "n": n,
            "bandwidth_scaled": h,
            "sensitivity": delta_s,
            "sensitivity_hrw_sqrt2": kde.hrw_sensitivity(n, h, d),
            "noise_multiplier": mult,
            "noise_multiplier_corollary_eps_le_1": corollary,
            "noise_grid": grid_step,
            "proven_epsilon": proven_eps,
            "proven_delta": proven_delta,
            "continuous_calibration": {"epsilon": eps1, "delta": cal.continuous_delta},
            "noise_sd_relative_to_flat": cal.point_sd(),
            "noise_mean_abs_relative_to_flat": cal.mean_abs_error(),
            "calibration": "analytic Gaussian mechanism (Balle & Wang 2018 Thm 8) on M^{-1/2} f",
            "jitter": kde.JITTER,
            "randomness": rng.describe(),
            "noise_sampling": f"{how}, in whitened coordinates (sensitivity {sens:.6g} after snapping)",
        }
        return {"density": f_dp, "grids": grids, "bandwidth": h, "guarantee": guarantee}


def compile(recipe: Recipe) -> ReleasePlan:
    """The density release of ``recipe``, compiled (no data read)."""
    from dpstudio.plan.domains import domain_units

    cols = _columns(recipe)
    d = len(cols)
    opts = _options(recipe, d)
    b = recipe.budget
    if not (b.delta > 0):
        raise refusal("release 'density': needs delta > 0", field="budget", page="budget")
    mech = DensityRelease(float(b.epsilon), float(b.delta), opts["grid_size"], opts["bandwidth"])
    facts = {
        "grid_size": opts["grid_size"],
        "bandwidth": opts["bandwidth"] if opts["bandwidth"] is not None else "Scott's rule n^(-1/(d+4))/sqrt(12)",
        "sensitivity": (
            "max(1, sqrt(2 - 2 exp(-d/(2h^2)))) / (n (2 pi h^2)^(d/2)), at most sqrt(2)/(n (2 pi h^2)^(d/2))"
        ),
        "calibration": "analytic Gaussian mechanism (Balle & Wang 2018) for Mahalanobis sensitivity",
    }
    unit = PlanUnit(
        name="density",
        kind="density",
        columns=tuple(c.name for c in cols),
        mechanism_name="gp-density",
        loss=mech.privacy_loss(),
        mechanism=mech,
        budget_share=(mech.epsilon, mech.delta),
        description=("KDE + multiplier * GP(0, K) on a grid (Hall, Rinaldo & Wasserman 2013; Jazbec 2018 Thm 6.1/6.8)"),
        facts=facts,
        post_processing=("values outside the public bounds are clipped before the estimate",)
        + (("synthetic values sampled from the clipped, renormalised DP density",) if opts["sample_rows"] > 0 else ()),
    )
    units = domain_units(recipe) + [unit]
    composition = compose([u.loss for u in units], delta=b.delta, method="basic")
    return ReleasePlan(
        release_type="density",
        guarantee="central",
        units=tuple(units),
        composition=composition,
        recipe=recipe,
        compiler=compile,
    )


def for_rows(plan: ReleasePlan, n_rows: int) -> ReleasePlan:
    """The plan for a table of ``n_rows`` rows (public under replace-one neighbours): the density
    unit's noise as :meth:`DensityRelease.calibrate` computes it for that n, the same call the
    release draws with, as facts (multiplier, bandwidth, sensitivity, the noise's standard
    deviation and mean absolute size at a grid point relative to a flat density's height, which
    reads the same whatever the columns' units; the artifact also gives them in its own units).
    The charge does not depend on n."""
    unit = next((u for u in plan.units if u.kind == "density"), None)
    if unit is None or not isinstance(unit.mechanism, DensityRelease) or n_rows < 1:
        return plan
    cal = unit.mechanism.calibrate(int(n_rows), len(unit.columns))
    facts = dict(unit.facts)
    facts.update(
        {
            "table_rows": int(n_rows),
            "bandwidth": cal.bandwidth,
            "sensitivity": cal.sensitivity,
            "noise_multiplier": cal.multiplier,
            "noise_sd_relative_to_flat": cal.point_sd(),
            "noise_mean_abs_relative_to_flat": cal.mean_abs_error(),
        }
    )
    if unit.mechanism.bandwidth is None:
        facts["bandwidth_rule"] = "Scott's rule n^(-1/(d+4))/sqrt(12)"
    settled = replace(unit, facts=facts)
    return replace(plan, units=tuple(settled if u is unit else u for u in plan.units))


def execute(
    plan: ReleasePlan,
    frame: pd.DataFrame,
    rng: RandomSource,
    *,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> ReleaseOutcome:
    """Run the domain estimates, then the plan's own density mechanism object."""
    from dpstudio.plan.domains import start_central

    recipe, domain_stats, final, unit, drawn_by = start_central(plan, frame, rng, "density")
    mech = unit.mechanism
    assert isinstance(mech, DensityRelease), unit.name
    cols = _columns(recipe)
    d = len(cols)
    opts = _options(recipe, d)
    n = len(frame)
    if n < 1:
        raise UserError("release 'density': the table has no rows")
    stats: dict[str, Any] = {}
    pts = np.empty((n, d))
    lows: list[float] = []
    highs: list[float] = []
    for k, c in enumerate(cols):
        assert c.domain is not None and c.domain.low is not None and c.domain.high is not None, c.name
        lo, hi = float(c.domain.low), float(c.domain.high)
        x = pd.to_numeric(frame[c.name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        miss = np.isnan(x)
        clipped = int(np.count_nonzero((x < lo) | (x > hi)))
        stats[c.name] = {"clipped": clipped, "missing": int(miss.sum())}
        pts[:, k] = (np.clip(x, lo, hi) - lo) / (hi - lo)
        lows.append(lo)
        highs.append(hi)
    settled_rows = unit.facts.get("table_rows")
    if settled_rows is not None and int(settled_rows) != n:
        # the plan printed (and the ledger reserved) for another row count: its noise figures
        # would not be the ones drawn
        raise UserError(f"release 'density': the plan was settled for {settled_rows} rows, the table has {n}")
    drawn_by[unit.name] = mech
    out = mech.release(pts, rng, progress=progress, cancel=cancel)
    f_dp, grids, h, guarantee = out["density"], out["grids"], out["bandwidth"], out["guarantee"]
    vol = float(np.prod(np.asarray(highs) - np.asarray(lows)))
    dens = f_dp / vol  # density on the original scale
    grid_orig = {c.name: (lows[k] + grids[k] * (highs[k] - lows[k])).tolist() for k, c in enumerate(cols)}
    # the release's guarantee is the plan's total (DP domain estimates included: the grid shows
    # their bounds); the density part's own budget is "density_epsilon"/"density_delta", and the
    # calibration figures (proven_*, noise_*) are that part's
    total = final.total
    guarantee = {
        **guarantee,
        "epsilon": total.epsilon,
        "delta": total.delta,
        "density_epsilon": guarantee["epsilon"],
        "density_delta": guarantee["delta"],
        # the noise in this file's units (the density per unit of the column, or of area)
        "noise_sd_at_grid_point": guarantee["noise_sd_relative_to_flat"] / vol,
        "noise_mean_abs_at_grid_point": guarantee["noise_mean_abs_relative_to_flat"] / vol,
    }
    artifact = {
        "type": "density",
        "columns": [c.name for c in cols],
        "grid": grid_orig,
        "bandwidth": {c.name: h * (highs[k] - lows[k]) for k, c in enumerate(cols)},
        "density": dens.tolist(),
        "note": "noisy density on the grid (original units); may be negative: clip for use",
        "guarantee": guarantee,
    }
    data: pd.DataFrame | None = None
    if opts["sample_rows"] > 0:
        cancel.check()
        progress(0.8, "sampling synthetic values")
        # post-processing of the DP density: no privacy role, so the fast generator is fine
        u = kde.sample_from_grid_density(f_dp, grids, opts["sample_rows"], rng.numpy_generator())
        data = pd.DataFrame({c.name: lows[k] + u[:, k] * (highs[k] - lows[k]) for k, c in enumerate(cols)})
        for c in cols:
            if c.type == "integer":
                data[c.name] = np.rint(data[c.name]).astype(np.int64)
    progress(1.0, "density released")
    return ReleaseOutcome(
        data=data,
        artifact=artifact,
        steward_stats={"columns": stats, **domain_stats},
        final_plan=final,
        drawn_by=drawn_by,
    )
