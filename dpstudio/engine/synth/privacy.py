"""Private calibration helpers for the synthetic-data engines.

Exact Gaussian-DP (Dong, Roth & Su 2019) for compositions of Gaussian releases, an RDP /
zCDP cross-check with the improved conversion (Canonne, Kamath & Steinke 2020, Prop. 12 /
Balle et al. 2020), and the grid-snapped Gaussian noise used by every release here.

The GDP and RDP conversions are the accountant's (``dpstudio.engine.accounting``).  Noise: every release is snapped to a power-of-two grid g = 2^(floor(log2 Delta)-20)
and gets g * Z with Z an exact discrete Gaussian of scale sigma/g from
``dpstudio.engine.mechanisms.sampling.discrete_gaussian`` (Canonne, Kamath & Steinke 2020).
Accounting of the discrete Gaussian:
its zCDP bound Delta^2/(2 sigma^2) holds exactly (CKS Thm 4, sensitivity in grid units is an
integer multiple after snapping up to the snap term we add), and with sigma/g > 10^6 its
privacy curve differs from the continuous Gaussian's by terms of order exp(-2 pi^2 sigma^2/g^2)
(Poisson summation): the GDP figures are used as the (eps, delta) statement, the RDP/zCDP
figure is the rigorous cross-check (reported in ``details['rdp_crosscheck_epsilon']``).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import accounting
from ..accounting import RDP_ORDERS, PrivacyLoss

# --------------------------------------------------------------------------- Gaussian DP
# The accountant's implementations (dpstudio.engine.accounting) are the single source; these
# wrappers only add the epsilon = inf convention the synthesizers' tests use.


def gdp_delta(epsilon: float, mu: float) -> float:
    """delta(eps) of a mu-GDP mechanism (argument order: epsilon first)."""
    if mu <= 0 or math.isinf(epsilon):
        return 0.0
    return float(accounting.gdp_delta(mu, epsilon))


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest eps with gdp_delta(eps, mu) <= delta."""
    if mu <= 0:
        return 0.0
    if delta <= 0:
        return math.inf
    return float(accounting.gdp_epsilon(mu, delta))


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP."""
    if math.isinf(epsilon):
        return math.inf
    if epsilon <= 0 or delta <= 0:
        raise ValueError("need epsilon > 0 and delta > 0 for a Gaussian release")
    return float(accounting.gdp_mu_for(epsilon, delta))


def gdp_compose(mus) -> float:
    """Exact composition: sqrt(sum mu_i^2)."""
    return float(math.sqrt(sum(float(m) ** 2 for m in mus)))


# --------------------------------------------------------------------------- RDP / zCDP


def rdp_to_dp(rdp_eps, orders, delta: float) -> float:
    """Improved conversion (CKS 2020 Prop. 12), via the accountant."""
    return accounting.rdp_to_dp(rdp_eps, delta, orders)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """(eps, delta) from rho-zCDP with the improved conversion on a fine grid of orders."""
    if rho <= 0:
        return 0.0
    a = _ZCDP_ORDERS
    e = rho * a + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    return float(max(e.min(), 0.0))


_ZCDP_ORDERS = 1.0 + np.geomspace(1e-4, 1e5, 4000)


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest rho with zcdp_epsilon(rho, delta) <= epsilon (bisection)."""
    if math.isinf(epsilon):
        return math.inf
    lo, hi = 0.0, 1.0
    while zcdp_epsilon(hi, delta) <= epsilon:
        hi *= 2.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if zcdp_epsilon(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def gaussian_rdp_curve(mu: float) -> tuple[float, ...]:
    """RDP of a mu-GDP Gaussian mechanism: alpha * mu^2 / 2 at every product order."""
    return tuple(float(a * mu * mu / 2.0) for a in RDP_ORDERS)


# --------------------------------------------------------------------------- releases


def gaussian_loss(sensitivity: float, sigma: float, delta: float, label: str) -> PrivacyLoss:
    """PrivacyLoss of one Gaussian release (L2 sensitivity, noise std sigma)."""
    mu = sensitivity / sigma if sigma > 0 else math.inf
    eps = gdp_epsilon(mu, delta) if math.isfinite(mu) else math.inf
    return PrivacyLoss(epsilon=eps, delta=delta, label=label, rdp=gaussian_rdp_curve(mu),
                       gdp_mu=mu, details={"sensitivity": sensitivity, "sigma": sigma,
                                           "mechanism": "gaussian (grid-snapped)"})


def total_gaussian_loss(components, delta: float, label: str) -> PrivacyLoss:
    """Exact GDP total of Gaussian components (each has gdp_mu)."""
    components = list(components)
    if any(c.gdp_mu is None or not math.isfinite(c.gdp_mu) for c in components):
        return PrivacyLoss(epsilon=math.inf, delta=delta, label=label,
                           details={"composition": "exact Gaussian DP", "n_releases": len(components)})
    mu = gdp_compose(c.gdp_mu for c in components)
    eps = gdp_epsilon(mu, delta) if math.isfinite(mu) else math.inf
    rdp_eps = rdp_to_dp(gaussian_rdp_curve(mu), RDP_ORDERS, delta) if math.isfinite(mu) else math.inf
    return PrivacyLoss(epsilon=eps, delta=delta, label=label, rdp=gaussian_rdp_curve(mu),
                       gdp_mu=mu, details={"composition": "exact Gaussian DP",
                                           "rdp_crosscheck_epsilon": rdp_eps,
                                           "n_releases": len(components)})


# --------------------------------------------------------------------------- noise

GRID_BITS = 20  # grid step = sensitivity * 2**-GRID_BITS (data independent)


def gaussian_noise(rng, sigma: float, shape, grid: float) -> tuple[np.ndarray, str]:
    """Gaussian noise with std ``sigma`` on the lattice ``grid * Z``: ``grid`` times an exact
    discrete Gaussian of scale sigma/grid (CKS 2020, :func:`..mechanisms.sampling.discrete_gaussian`).

    The value to be released must be snapped to the same lattice first (:func:`snap`), so the
    output carries no low-order bits of the data (Mironov 2012).  Returns (noise, how)."""
    from ..mechanisms.sampling import discrete_gaussian

    shape = tuple(np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
    n = math.prod(shape)
    if sigma == 0:
        return np.zeros(shape), "none"
    ints = discrete_gaussian(Fraction(sigma / grid) ** 2, n, rng)
    return (np.asarray(ints, dtype=np.float64).reshape(shape) * grid,
            f"exact discrete Gaussian on grid {grid:.3g}")


def snap(values: np.ndarray, grid: float) -> np.ndarray:
    """Round to the lattice grid*Z (moves each coordinate by <= grid/2)."""
    return np.rint(np.asarray(values, dtype=np.float64) / grid) * grid


def snapped_sensitivity(sensitivity: float, grid: float, dim: int) -> float:
    """L2 sensitivity after snapping both neighbours: <= Delta + grid*sqrt(dim)."""
    return float(sensitivity + grid * math.sqrt(dim))


def release_scale(sensitivity: float, mu: float, dim: int) -> tuple[float, float, float]:
    """(grid, snapped sensitivity, sigma) of :func:`release_gaussian` for a ``dim``-vector:
    public quantities only, so a plan can show them before any data is touched."""
    grid = 2.0 ** (math.floor(math.log2(sensitivity)) - GRID_BITS)
    sens = snapped_sensitivity(sensitivity, grid, dim)
    return grid, sens, sens / mu


def release_gaussian(rng, value: np.ndarray, sensitivity: float, mu: float, delta: float,
                     label: str) -> tuple[np.ndarray, PrivacyLoss]:
    """Release ``value`` as a mu-GDP Gaussian mechanism on a data-independent grid.

    grid = 2**(floor(log2 sensitivity) - GRID_BITS) (a power of two: snapping and k*grid are
    exact in float64).  The value is snapped to the grid, which can move a neighbour pair apart
    by at most grid*sqrt(dim) more, so sigma is calibrated to that snapped sensitivity:
    sigma = (sensitivity + grid sqrt(dim)) / mu.  mu = inf releases the exact value (tests)."""
    value = np.asarray(value, dtype=np.float64)
    if not math.isfinite(mu):
        loss = PrivacyLoss(epsilon=math.inf, delta=0.0, label=label, details={"sigma": 0.0,
                           "sensitivity": sensitivity, "noise": "none (epsilon = inf)"})
        return value.copy(), loss
    grid, sens, sigma = release_scale(sensitivity, mu, value.size)
    noise, how = gaussian_noise(rng, sigma, value.shape, grid)
    loss = gaussian_loss(sens, sigma, delta, label)
    loss.details["noise"] = how
    loss.details["grid"] = grid
    loss.details["raw_sensitivity"] = sensitivity
    return snap(value, grid) + noise, loss
