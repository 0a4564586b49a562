"""Accuracy floors and closed-form expected errors for the live preview (docs/accounting.md, "Accuracy floors").

Jazbec 2018, §5 (one-record mechanisms on a compact metric space ``(D, rho)``, maximal
expected error ``gamma = max_d E rho(Y_d, d)``), for every (eps, delta)-DP mechanism:

* Thm 5.3 (any D):                    ``gamma >= (1 - delta) diam(D) / (2 (1 + e^eps))``
* Thm 5.5 (m+1 points, min distance kappa): ``gamma >= (1 - delta) kappa m / (m + e^eps)``

Randomized response attains Thm 5.5 with equality under the discrete metric.  Everything here
is vectorised: arrays of columns broadcast against arrays of epsilons.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from dpstudio.engine.accounting import gdp_mu_for

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))


def floor_continuous(diam: npt.ArrayLike, eps: npt.ArrayLike, delta: npt.ArrayLike = 0.0) -> npt.NDArray[np.float64]:
    """Jazbec 2018, Thm 5.3: ``(1 - delta) diam / (2 (1 + e^eps))`` (broadcasts).

    ``1/(1 + e^eps)`` is computed as ``expit(-eps)`` so large eps does not overflow.
    """
    diam, eps, delta = (np.asarray(x, dtype=float) for x in (diam, eps, delta))
    floor: npt.NDArray[np.float64] = (1.0 - delta) * diam * 0.5 * special.expit(-eps)
    return floor


def floor_finite(m: npt.ArrayLike, kappa: npt.ArrayLike, eps: npt.ArrayLike,
                 delta: npt.ArrayLike = 0.0) -> npt.NDArray[np.float64]:
    """Jazbec 2018, Thm 5.5: ``(1 - delta) kappa m / (m + e^eps)`` for m+1 points (broadcasts).

    ``m / (m + e^eps) = expit(log m - eps)``; m = 0 (a single category) gives 0.
    """
    m, kappa, eps, delta = (np.asarray(x, dtype=float) for x in (m, kappa, eps, delta))
    with np.errstate(divide="ignore"):
        frac = special.expit(np.log(m) - eps)
    floor: npt.NDArray[np.float64] = (1.0 - delta) * kappa * np.where(m > 0, frac, 0.0)
    return floor


# --------------------------------------------------------------------------- column descriptors

@dataclass(frozen=True)
class ColumnSpec:
    """What the preview needs to know about one column (public information only).

    ``kind``: "numeric" (needs ``diam`` = high - low of the public bounds) or "categorical"
    (needs ``n_categories`` = m + 1; ``kappa`` = distance between distinct categories, 1 for the
    discrete metric).  ``mechanism``: "laplace" | "gaussian" (numeric) or "rr" (categorical).
    ``delta``: the column's delta.  ``weight``: its share of the per-record epsilon, so the
    column runs at ``eps_col = weight * eps`` (budgets of a record's columns add, docs/accounting.md).
    """

    kind: str
    mechanism: str
    diam: float | None = None
    n_categories: int | None = None
    kappa: float = 1.0
    delta: float = 0.0
    weight: float = 1.0
    name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("numeric", "categorical"):
            raise ValueError(f"column kind must be 'numeric' or 'categorical', got {self.kind!r}")
        ok = {"numeric": ("laplace", "gaussian"), "categorical": ("rr",)}[self.kind]
        if self.mechanism not in ok:
            raise ValueError(f"mechanism {self.mechanism!r} does not apply to a {self.kind} column")
        if self.kind == "numeric" and not (self.diam is not None and self.diam >= 0):
            raise ValueError(f"numeric column needs diam >= 0, got {self.diam!r}")
        if self.kind == "categorical" and not (self.n_categories and self.n_categories >= 1):
            raise ValueError(f"categorical column needs n_categories >= 1, got {self.n_categories!r}")
        if not (0.0 <= self.delta < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {self.delta!r}")
        if self.mechanism == "gaussian" and self.delta <= 0:
            raise ValueError("the Gaussian mechanism needs delta > 0")
        if not (self.weight > 0):
            raise ValueError(f"weight must be > 0, got {self.weight!r}")


def _as_spec(c: ColumnSpec | Mapping[str, Any]) -> ColumnSpec:
    if isinstance(c, ColumnSpec):
        return c
    if isinstance(c, Mapping):
        return ColumnSpec(**dict(c))
    raise TypeError(f"column descriptor must be a ColumnSpec or a dict, got {type(c).__name__}")


# --------------------------------------------------------------------------- analytic Gaussian, vectorised

_TABLE_LOG_EPS = np.linspace(np.log(1e-8), np.log(1e4), 1201)


@lru_cache(maxsize=64)
def _mu_table(delta: float) -> npt.NDArray[np.float64]:
    """log mu*(eps) on a log-eps grid, mu* = largest mu with mu-GDP => (eps, delta)-DP."""
    return np.log(gdp_mu_for(np.exp(_TABLE_LOG_EPS), delta))


def _log_gdp_delta(mu: npt.NDArray[np.float64], eps: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    la = special.log_ndtr(-eps / mu + mu / 2)
    lb = eps + special.log_ndtr(-eps / mu - mu / 2)
    log_delta: npt.NDArray[np.float64] = la + np.log(-np.expm1(np.minimum(lb - la, -1e-300)))
    return log_delta


def analytic_gaussian_mu(eps: npt.ArrayLike, delta: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Vectorised ``mu*(eps, delta)``: sigma = Delta / mu* is the analytic Gaussian mechanism
    (Balle & Wang 2018 Thm 8 = Dong, Roth & Su 2022 Cor. 2.13 for one release).

    Interpolates a cached per-delta table (log-log, 1201 points over eps in [1e-8, 1e4]), then
    polishes with two Newton steps on ``log delta(mu) = log delta`` (``d delta/d mu = phi(a)``,
    since ``e^eps phi(b) = phi(a)``) - accurate to ~1e-12 relative, for display purposes.
    """
    eps = np.asarray(eps, dtype=float)
    delta = np.asarray(delta, dtype=float)
    eps, delta = np.broadcast_arrays(eps, delta)
    out = np.empty(eps.shape)
    le = np.log(np.clip(eps, 1e-8, 1e4))
    for d in np.unique(delta):
        sel = delta == d
        mu = np.exp(np.interp(le[sel], _TABLE_LOG_EPS, _mu_table(float(d))))
        e = np.clip(eps[sel], 1e-8, 1e4)
        ld = np.log(d)
        for _ in range(2):
            a = -e / mu + mu / 2
            lf = _log_gdp_delta(mu, e)
            # d log f / d mu = phi(a) / f
            dlog = np.exp(-0.5 * a * a - 0.5 * np.log(2 * np.pi) - lf)
            step = (lf - ld) / dlog
            mu = np.clip(mu - step, mu * 0.5, mu * 2.0)
        out[sel] = mu
    return out


# --------------------------------------------------------------------------- expected errors

def expected_error_curves(columns: Sequence[ColumnSpec | Mapping[str, Any]],
                          eps_grid: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Expected error of each column's mechanism and its floor, at every per-record epsilon.

    Returns ``(errors, floors)``, both of shape ``(len(columns), len(eps_grid))``.  Column ``j``
    runs at ``eps_col = weight_j * eps`` and its own delta.  Closed forms:

    * Laplace (docs/mechanisms.md, exact privacy profile ``delta(eps) = 1 - e^{(eps - diam/b)/2}``):
      ``b = diam / (eps_col - 2 log(1 - delta))``; ``E|Y - d| = b``.
    * Gaussian: analytic-Gaussian ``sigma = diam / mu*(eps_col, delta)``;
      ``E|Y - d| = sigma sqrt(2/pi)``.
    * Randomized response on m+1 categories (Jazbec 2018, Ex. 4.10): ``p = (1 - delta)/(m + e^eps)``;
      expected discrete-metric error ``kappa m p``, equal to the Thm 5.5 floor.

    Floors: Thm 5.3 with ``diam`` for numeric columns, Thm 5.5 with ``(m, kappa)`` for
    categorical ones, both at ``(eps_col, delta)``.
    """
    specs = [_as_spec(c) for c in columns]
    eps = np.atleast_1d(np.asarray(eps_grid, dtype=float))
    if eps.ndim != 1 or np.any(~(eps > 0)):
        raise ValueError("eps_grid must be a 1-D array of positive epsilons")
    k = len(specs)
    w = np.array([s.weight for s in specs], dtype=float)[:, None]
    dl = np.array([s.delta for s in specs], dtype=float)[:, None]
    diam = np.array([s.diam if s.diam is not None else 0.0 for s in specs], dtype=float)[:, None]
    m = np.array([(s.n_categories or 1) - 1 for s in specs], dtype=float)[:, None]
    kappa = np.array([s.kappa for s in specs], dtype=float)[:, None]
    mech = np.array([s.mechanism for s in specs])
    ec = w * eps[None, :]
    errors = np.empty((k, eps.size))
    floors = np.empty((k, eps.size))

    num = np.array([s.kind == "numeric" for s in specs])
    if num.any():
        floors[num] = floor_continuous(diam[num], ec[num], dl[num])
    if (~num).any():
        floors[~num] = floor_finite(m[~num], kappa[~num], ec[~num], dl[~num])

    lap = mech == "laplace"
    if lap.any():
        errors[lap] = diam[lap] / (ec[lap] - 2.0 * np.log1p(-dl[lap]))
    gau = mech == "gaussian"
    if gau.any():
        mu = analytic_gaussian_mu(ec[gau], np.broadcast_to(dl[gau], ec[gau].shape))
        errors[gau] = diam[gau] / mu * _SQRT_2_OVER_PI
    rr = mech == "rr"
    if rr.any():
        errors[rr] = floor_finite(m[rr], kappa[rr], ec[rr], dl[rr])  # kappa m p, p=(1-d)/(m+e^eps)
    return errors, floors
