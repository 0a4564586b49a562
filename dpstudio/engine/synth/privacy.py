"""Private calibration helpers for the synthetic-data engines.

Exact Gaussian-DP (Dong, Roth & Su 2019) for compositions of Gaussian releases, an RDP /
zCDP cross-check with the improved conversion (Canonne, Kamath & Steinke 2020, Prop. 12 /
Balle et al. 2020), and the grid-snapped Gaussian noise used by every release here.

The GDP and RDP conversions are the accountant's (``dpstudio.engine.accounting``).  Noise: every
release is snapped to a power-of-two grid g = 2^(floor(log2 Delta)-20) and gets g * Z with Z an
exact discrete Gaussian of scale sigma/g from
``dpstudio.engine.mechanisms.sampling.discrete_gaussian`` (Canonne, Kamath & Steinke 2020).
Accounting of the discrete Gaussian ("the discrete law" below; docs/mechanisms.md): its zCDP
bound Delta^2/(2 sigma^2) holds exactly (the shift between snapped neighbours is an integer
vector of grid steps), so zCDP totals need no correction; GDP totals get a proven correction
(:func:`lattice_proven`), the calibration is shaved by it (:func:`lattice_mu_for`,
:func:`lattice_shave`) and :func:`attach_proven` makes the proven epsilon the headline.  The
RDP figure stays as a cross-check (``details['rdp_crosscheck_epsilon']``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .. import accounting
from ..accounting import RDP_ORDERS, PrivacyLoss
from ..rng import RandomSource

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


def gdp_compose(mus: Iterable[float]) -> float:
    """Exact composition: sqrt(sum mu_i^2)."""
    return float(math.sqrt(sum(float(m) ** 2 for m in mus)))


# --------------------------------------------------------------------------- RDP / zCDP


def rdp_to_dp(
    rdp_eps: Sequence[float] | npt.NDArray[np.float64], orders: Sequence[float] | npt.NDArray[np.float64], delta: float
) -> float:
    """Improved conversion (CKS 2020 Prop. 12), via the accountant."""
    return float(accounting.rdp_to_dp(rdp_eps, delta, orders))


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
    return PrivacyLoss(
        epsilon=eps,
        delta=delta,
        label=label,
        rdp=gaussian_rdp_curve(mu),
        gdp_mu=mu,
        details={"sensitivity": sensitivity, "sigma": sigma, "mechanism": "gaussian (grid-snapped)"},
    )


def total_gaussian_loss(components: Iterable[PrivacyLoss], delta: float, label: str) -> PrivacyLoss:
    """Exact GDP total of Gaussian components (each has gdp_mu)."""
    components = list(components)
    if any(c.gdp_mu is None or not math.isfinite(c.gdp_mu) for c in components):
        return PrivacyLoss(
            epsilon=math.inf,
            delta=delta,
            label=label,
            details={"composition": "exact Gaussian DP", "n_releases": len(components)},
        )
    mu = gdp_compose(c.gdp_mu for c in components if c.gdp_mu is not None)  # all set: checked above
    eps = gdp_epsilon(mu, delta) if math.isfinite(mu) else math.inf
    rdp_eps = rdp_to_dp(gaussian_rdp_curve(mu), RDP_ORDERS, delta) if math.isfinite(mu) else math.inf
    return PrivacyLoss(
        epsilon=eps,
        delta=delta,
        label=label,
        rdp=gaussian_rdp_curve(mu),
        gdp_mu=mu,
        details={"composition": "exact Gaussian DP", "rdp_crosscheck_epsilon": rdp_eps, "n_releases": len(components)},
    )


# --------------------------------------------------------------------------- noise

GRID_BITS = 20  # grid step = sensitivity * 2**-GRID_BITS (data independent)


def gaussian_noise(
    rng: RandomSource, sigma: float, shape: int | tuple[int, ...], grid: float
) -> tuple[npt.NDArray[np.float64], str]:
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
    return (np.asarray(ints, dtype=np.float64).reshape(shape) * grid, f"exact discrete Gaussian on grid {grid:.3g}")


def snap(values: npt.ArrayLike, grid: float) -> npt.NDArray[np.float64]:
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


def release_gaussian(
    rng: RandomSource, value: npt.ArrayLike, sensitivity: float, mu: float, delta: float, label: str
) -> tuple[npt.NDArray[np.float64], PrivacyLoss]:
    """Release ``value`` as a mu-GDP Gaussian mechanism on a data-independent grid.

    grid = 2**(floor(log2 sensitivity) - GRID_BITS) (a power of two: snapping and k*grid are
    exact in float64).  The value is snapped to the grid, which can move a neighbour pair apart
    by at most grid*sqrt(dim) more, so sigma is calibrated to that snapped sensitivity:
    sigma = (sensitivity + grid sqrt(dim)) / mu.  mu = inf releases the exact value (tests)."""
    value = np.asarray(value, dtype=np.float64)
    if not math.isfinite(mu):
        loss = PrivacyLoss(
            epsilon=math.inf,
            delta=0.0,
            label=label,
            details={"sigma": 0.0, "sensitivity": sensitivity, "noise": "none (epsilon = inf)"},
        )
        return value.copy(), loss
    grid, sens, sigma = release_scale(sensitivity, mu, value.size)
    noise, how = gaussian_noise(rng, sigma, value.shape, grid)
    loss = gaussian_loss(sens, sigma, delta, label)
    loss.details["noise"] = how
    loss.details["grid"] = grid
    loss.details["raw_sensitivity"] = sensitivity
    loss.details["dim"] = int(value.size)  # coordinates on the lattice (lattice_terms)
    return snap(value, grid) + noise, loss


# --------------------------------------------------------------------------- the discrete law
# The GDP / analytic-Gaussian figures are those of CONTINUOUS Gaussian noise; the noise that runs
# is a discrete Gaussian on the lattice g*Z (g = grid).  What is proven for the law that runs
# (derivation in docs/mechanisms.md, "Discrete Gaussian on a lattice"):
#
# (a) Renyi DP / zCDP.  snap() puts both neighbours' values on the lattice, so in grid units the
#     shift k between them is an INTEGER vector with |k| <= (Delta + g sqrt(D)) / g.  For integer
#     shifts the discrete Gaussian's Renyi divergence of order alpha is <= alpha |k|^2/(2 s^2),
#     s = sigma/g, the continuous value (Canonne, Kamath & Steinke 2020, multivariate zCDP bound;
#     proof: sum_z exp(-(z - t)^2/(2 s^2)) is largest at t = 0, Poisson summation).  So zCDP totals
#     (MST) are proven figures for the noise that runs, with no correction.
# (b) (eps, delta) from GDP / the analytic Gaussian.  Compare the discrete mechanism a + gZ with
#     the ROUNDED continuous one g*round((a + G)/g) = a + g*round(G/g), a post-processing of the
#     continuous mechanism and hence exactly as private.  Per coordinate, with r(z) the rounded
#     and d(z) the discrete Gaussian probability of z, for |z| <= T s
#         |log r(z) - log d(z)| <= eta(s, T) = max(T^2, 1)/(24 s^2) + 3 e^{-2 pi^2 s^2}
#     (r/phi_s = int_{-1/2}^{1/2} exp(-(2zu + u^2)/(2s^2)) du lies in [e^{-1/(24 s^2)}, sinh(x)/x],
#     x = |z|/(2s^2), by Jensen and by dropping -u^2; sinh(x)/x <= e^{x^2/6}; d/phi_s = 1/S with
#     1 <= S <= 1 + 3 e^{-2 pi^2 s^2} by Poisson summation).  Outside the box T s:
#     P_d <= 2 e^{-T^2/2} (the discrete Gaussian's mgf is <= the continuous one, CKS 2020) and
#     P_r <= 2 Phi(-(T - 1/(2s))).  Splitting every event on the boxes around both neighbours:
#         (eps_r, delta_r) for the rounded law  =>  (eps_r + 2 H, e^H delta_r + e^{eps_r + H} B_r + B_d)
#     for the discrete one, H = sum over released coordinates of eta, B_d, B_r = the summed tails
#     (adaptive compositions: the boxes intersect, tails add).  The correction is polynomial in
#     1/s (lattice tails differ at order 1/s), not exp(-2 pi^2 s^2), which only bounds normalisers.


def _box_T(dim: int, epsilon: float, delta: float) -> float:
    """Box half-width T (std units) whose tails cost <= 1e-6 delta even after a factor e^eps
    (H grows only like T^2 ~ log(1/tail), so a tiny tail share is almost free)."""
    return math.sqrt(2.0 * math.log(4.0 * max(int(dim), 1) * (math.exp(epsilon) + 1.0) / (1e-6 * delta)))


def lattice_terms(parts: Iterable[tuple[int, float]], T: float) -> tuple[float, float, float]:
    """(H, B_d, B_r) of the argument above for releases given as (dim, s), s = sigma/grid."""
    from scipy.special import ndtr

    H = B_d = B_r = 0.0
    for dim, s in parts:
        if not s >= 1.0:
            return math.inf, 1.0, 1.0
        q = math.exp(-2.0 * math.pi**2 * s * s)
        H += dim * (max(T * T, 1.0) / (24.0 * s * s) + 3.0 * q)
        B_d += dim * 2.0 * math.exp(-0.5 * T * T)
        B_r += dim * 2.0 * float(ndtr(-(T - 0.5 / s)))
    return H, B_d, B_r


def lattice_proven(eps_r: float, delta_r: float, parts: Iterable[tuple[int, float]], T: float) -> tuple[float, float]:
    """Proven (eps, delta) of the discrete law, given (eps_r, delta_r) of the continuous one."""
    H, B_d, B_r = lattice_terms(parts, T)
    return eps_r + 2.0 * H, math.exp(H) * delta_r + math.exp(eps_r + H) * B_r + B_d


def lattice_shave(epsilon: float, delta: float, dim: int, s0: float) -> tuple[float, float, float]:
    """(eps', delta', T): calibrate the continuous mechanism for (eps', delta') and the discrete
    law of ``dim`` coordinates at any scale s >= s0 is (epsilon, delta)-DP by
    :func:`lattice_proven` (H and B_r fall as s grows, so one shave suffices)."""
    T = _box_T(dim, epsilon, delta)
    H, B_d, B_r = lattice_terms([(dim, s0)], T)
    eps1 = epsilon - 2.0 * H
    delta1 = (delta - math.exp(epsilon) * B_r - B_d) * math.exp(-H) * (1.0 - 1e-12)
    if not (eps1 > 0 and delta1 > 0):
        raise ValueError(f"the noise lattice is too coarse for (epsilon={epsilon}, delta={delta})")
    return eps1, delta1, T


def lattice_mu_for(epsilon: float, delta: float, total_dim: int) -> float:
    """Total GDP mu whose DISCRETE releases (:func:`release_gaussian`) meet (epsilon, delta).

    Every such release has s = sigma/grid >= 2^GRID_BITS / mu_i >= 2^GRID_BITS / mu (its snapped
    sensitivity spans >= 2^GRID_BITS grid steps), so the shave computed at the unshaved mu0 covers
    the shaved mu too."""
    mu0 = gdp_mu_for(epsilon, delta)
    if not math.isfinite(mu0):
        return mu0
    eps1, delta1, _ = lattice_shave(epsilon, delta, total_dim, 2.0**GRID_BITS / mu0)
    return gdp_mu_for(eps1, delta1)


def attach_proven(total: PrivacyLoss, components: Iterable[PrivacyLoss], epsilon: float, delta: float) -> PrivacyLoss:
    """Put the proven (eps, delta) of the discrete law into ``total`` (headline epsilon and
    ``details``); the continuous GDP figure stays as ``gdp_epsilon_continuous``.

    ``epsilon`` (the target) only sets the box width T; the bound is valid for any T as long as
    the continuous eps_r used in the tail term is <= the one assumed, which is checked."""
    mu = total.gdp_mu
    if mu is None or not math.isfinite(mu):
        return total
    parts = [(c.details["dim"], c.details["sigma"] / c.details["grid"]) for c in components if c.details.get("dim")]
    dim = sum(d for d, _ in parts)
    cap = float(epsilon)
    for _ in range(8):
        T = _box_T(dim, cap, delta)
        H, B_d, B_r = lattice_terms(parts, T)
        # (1 - 1e-12): the round trip through exp(-H) and exp(H) must not overshoot delta
        delta_r = (delta - B_d - math.exp(cap + H) * B_r) * math.exp(-H) * (1.0 - 1e-12)
        eps_r = gdp_epsilon(mu, delta_r) if delta_r > 0 else math.inf
        if eps_r <= cap:
            break
        cap = eps_r if math.isfinite(eps_r) else 2.0 * cap
    eps_p, delta_p = lattice_proven(eps_r, delta_r, parts, T) if eps_r <= cap else (math.inf, delta)
    details = {
        **total.details,
        "gdp_epsilon_continuous": total.epsilon,
        "lattice_H": H,
        "lattice_box_T": T,
        "proven_epsilon": eps_p,
        "proven_delta": delta_p,
        "proven_by": "rounded continuous Gaussian (GDP) + pointwise ratio to the discrete "
        "Gaussian on the lattice (docs/mechanisms.md)",
    }
    return replace(total, epsilon=eps_p, details=details)


def selection_loss(epsilon: float, sensitivity: float, label: str) -> PrivacyLoss:
    """One exactly sampled exponential-mechanism choice: epsilon-DP and epsilon-bounded range,
    hence epsilon^2/8-zCDP (Cesar & Rogers 2021); its RDP curve min(eps^2/8 a, eps)."""
    rdp = (
        tuple(float(min(epsilon * epsilon / 8.0 * a, epsilon)) for a in RDP_ORDERS) if math.isfinite(epsilon) else None
    )
    return PrivacyLoss(
        epsilon=epsilon,
        delta=0.0,
        label=label,
        rdp=rdp,
        details={
            "zcdp_rho": epsilon * epsilon / 8.0,
            "sensitivity": sensitivity,
            "mechanism": "exponential (bounded range)",
        },
    )


def zcdp_total(components: Sequence[PrivacyLoss], delta: float, label: str) -> PrivacyLoss:
    """The zCDP composition of a marginal synthesizer's releases (Gaussian rho = mu^2/2,
    selections eps^2/8; Bun & Steinke 2016), converted to (epsilon, delta) (Canonne, Kamath &
    Steinke 2020, Prop. 12).  The figure holds for the noise that runs as is: the discrete
    Gaussian on integer lattice shifts meets the continuous zCDP bound and the exponential
    mechanism is sampled exactly, so no lattice correction is due."""
    total_rho = sum(
        (c.gdp_mu**2) / 2.0 if c.gdp_mu is not None else float(c.details.get("zcdp_rho", math.inf)) for c in components
    )
    tot_eps = zcdp_epsilon(total_rho, delta) if math.isfinite(total_rho) else math.inf
    curves = [c.rdp for c in components if c.rdp is not None]
    rdp_tot = (
        tuple(float(sum(r[i] for r in curves)) for i in range(len(RDP_ORDERS)))
        if len(curves) == len(components)
        else None
    )
    return PrivacyLoss(
        epsilon=tot_eps,
        delta=delta,
        label=label,
        rdp=rdp_tot,
        details={
            "composition": "zCDP (Gaussian rho = mu^2/2, EM eps^2/8)",
            "zcdp_rho": total_rho,
            "n_releases": len(components),
            "proven_epsilon": tot_eps,
            "proven_delta": delta,
            "proven_by": "zCDP of the discrete Gaussian on its lattice (Canonne, "
            "Kamath & Steinke 2020) and of the exactly sampled "
            "exponential mechanism (Cesar & Rogers 2021), converted "
            "to (epsilon, delta) (Canonne, Kamath & Steinke 2020, "
            "Prop. 12)",
        },
    )
