"""Privacy-loss values and their composition.

Every mechanism returns a :class:`PrivacyLoss`; totals are always computed by :func:`compose`,
never typed.  Composition methods: basic (eps/delta add), Renyi DP (Mironov 2017) with the
improved RDP -> (eps, delta) conversion (Canonne, Kamath & Steinke 2020, Prop. 12), zero-
concentrated DP (Bun & Steinke 2016; its rho's add, converted with the same Prop. 12 optimised over
every order) and exact Gaussian DP (Dong, Roth & Su 2022).  Neighbouring datasets differ in one
record (replace-one).  Derivations: docs/accounting.md; for the exact RDP curve of the
discrete Laplace (``mechanisms.laplace.discrete_laplace_rdp``) see
docs/accounting.md §Exact RDP of the discrete Laplace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt
from scipy import special

# Renyi orders used for every RDP curve in the product (curves are tuples aligned with this).
RDP_ORDERS: tuple[float, ...] = (
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    5.0,
    6.0,
    7.0,
    8.0,
    10.0,
    12.0,
    14.0,
    16.0,
    20.0,
    24.0,
    28.0,
    32.0,
    48.0,
    64.0,
    96.0,
    128.0,
    256.0,
    512.0,
    1024.0,
)


@dataclass(frozen=True)
class PrivacyLoss:
    """The privacy loss of one mechanism or of a composition.

    ``epsilon``/``delta``: the (eps, delta)-DP guarantee (replace-one neighbours).
    ``rdp``: Renyi-DP epsilons at :data:`RDP_ORDERS` when the mechanism has an RDP curve.
    ``gdp_mu``: set when the mechanism is exactly mu-Gaussian-DP (Gaussian noise).
    ``zcdp_rho``: set when the mechanism is rho-zero-concentrated-DP (Bun & Steinke 2016) and was
    calibrated jointly with others on that scale (e.g. discrete Gaussian columns of one record).
    ``zcdp_delta``: with ``zcdp_rho``, the mechanism is ``zcdp_delta``-approximately rho-zCDP
    (Bun & Steinke 2016, Def. 8.1: rho-zCDP once conditioned on events of probability at least
    ``1 - zcdp_delta``; thresholding steps such as partition selection): these deltas add, and
    the zCDP conversion runs at the target delta minus their sum (docs/accounting.md).
    ``kind``: "dp" (record-level / central), "label", "semi-sensitive" or "metric"
    (epsilon per unit of the metric, d_chi privacy).
    """

    epsilon: float
    delta: float = 0.0
    label: str = ""
    rdp: tuple[float, ...] | None = None
    gdp_mu: float | None = None
    kind: str = "dp"
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    zcdp_rho: float | None = None
    zcdp_delta: float = 0.0

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0) or np.isnan(self.epsilon):
            raise ValueError(f"epsilon must be >= 0, got {self.epsilon!r}")
        if not (0.0 <= self.delta < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {self.delta!r}")
        if self.rdp is not None and len(self.rdp) != len(RDP_ORDERS):
            raise ValueError(f"rdp curve must have {len(RDP_ORDERS)} values, got {len(self.rdp)}")
        if self.zcdp_rho is not None and not (self.zcdp_rho >= 0):
            raise ValueError(f"zcdp_rho must be >= 0, got {self.zcdp_rho!r}")
        if not (0.0 <= self.zcdp_delta < 1.0) or (self.zcdp_delta > 0 and self.zcdp_rho is None):
            raise ValueError(f"zcdp_delta must lie in [0, 1) and comes with zcdp_rho, got {self.zcdp_delta!r}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "kind": self.kind, "epsilon": self.epsilon, "delta": self.delta}
        if self.gdp_mu is not None:
            out["gdp_mu"] = self.gdp_mu
        if self.zcdp_rho is not None:
            out["zcdp_rho"] = self.zcdp_rho
        if self.zcdp_delta:
            out["zcdp_delta"] = self.zcdp_delta
        if self.rdp is not None:
            out["rdp"] = {"orders": list(RDP_ORDERS), "epsilons": list(self.rdp)}
        return out


# ---------------------------------------------------------------------------------------------
# Renyi-DP curves (all aligned with RDP_ORDERS unless ``orders`` is given)
# ---------------------------------------------------------------------------------------------

_KIND_STRENGTH = {"dp": 3, "semi-sensitive": 2, "label": 1}


def _orders_array(orders: npt.ArrayLike | None) -> npt.NDArray[np.float64]:
    a = np.asarray(RDP_ORDERS if orders is None else orders, dtype=float)
    if np.any(a <= 1.0):
        raise ValueError("Renyi orders must be > 1")
    return a


def rdp_gaussian(sensitivity: float, sigma: float, orders: npt.ArrayLike | None = None) -> tuple[float, ...]:
    """RDP curve of the Gaussian mechanism: ``eps(alpha) = alpha * Delta^2 / (2 sigma^2)``.

    Mironov 2017, "Renyi Differential Privacy", Prop. 7 (L2 sensitivity ``Delta``, std ``sigma``).
    """
    if not (sigma > 0) or not (sensitivity >= 0):
        raise ValueError(f"need sigma > 0 and sensitivity >= 0, got {sigma!r}, {sensitivity!r}")
    a = _orders_array(orders)
    return tuple(float(x) for x in a * (sensitivity**2) / (2.0 * sigma**2))


def rdp_laplace(b: float, sensitivity: float = 1.0, orders: npt.ArrayLike | None = None) -> tuple[float, ...]:
    """RDP curve of the Laplace mechanism with scale ``b`` and L1 sensitivity ``sensitivity``.

    Mironov 2017, Prop. 6 (table 2), with ``lambda = b / sensitivity``:
    ``eps(alpha) = 1/(alpha-1) * log( alpha/(2alpha-1) e^{(alpha-1)/lambda}
    + (alpha-1)/(2alpha-1) e^{-alpha/lambda} )``, evaluated in log space.
    """
    if not (b > 0) or not (sensitivity >= 0):
        raise ValueError(f"need b > 0 and sensitivity >= 0, got {b!r}, {sensitivity!r}")
    a = _orders_array(orders)
    if sensitivity == 0:
        return tuple(0.0 for _ in a)
    lam = b / sensitivity
    t1 = np.log(a / (2 * a - 1)) + (a - 1) / lam
    t2 = np.log((a - 1) / (2 * a - 1)) - a / lam
    val = np.logaddexp(t1, t2) / (a - 1)
    val = np.minimum(val, 1.0 / lam)  # D_alpha <= D_inf = Delta/b (monotone in alpha)
    return tuple(float(x) for x in np.maximum(val, 0.0))


def rdp_randomized_response(
    epsilon: float, m: int, *, delta: float = 0.0, p: float | None = None, orders: npt.ArrayLike | None = None
) -> tuple[float, ...]:
    """Exact RDP curve of k-ary randomized response on ``m + 1`` categories (docs/accounting.md, "Rényi DP").

    ``P(Y=d) = 1 - m p``, ``P(Y=d') = p``, with ``p = (1 - delta)/(m + e^eps)`` unless given.
    Every pair of inputs is symmetric, so the worst pair is any ``d != d'``:
    ``D_alpha = 1/(alpha-1) log( q^a p^(1-a) + p^a q^(1-a) + (m-1) p )``, ``q = 1 - m p``.
    With ``m = 1`` this is binary RR, which dominates every pure eps-DP mechanism
    (Kairouz, Oh & Viswanath 2015, Thm 2.1 + data processing): see :func:`rdp_pure_dp`.
    """
    m = int(m)
    if m < 1:
        raise ValueError(f"randomized response needs m >= 1 (two categories), got {m}")
    if p is None:
        p = (1.0 - delta) / (m + np.exp(epsilon))
    q = 1.0 - m * p
    if not (0 < p <= q):
        raise ValueError(f"invalid randomized-response probabilities p={p!r}, q={q!r}")
    a = _orders_array(orders)
    lp, lq = np.log(p), np.log(q)
    terms = [a * lq + (1 - a) * lp, a * lp + (1 - a) * lq]
    if m > 1:
        terms.append(np.full_like(a, np.log(m - 1) + lp))
    val = np.logaddexp.reduce(np.stack(terms), axis=0) / (a - 1)
    val = np.minimum(val, lq - lp)  # D_alpha <= D_inf = log(q/p)
    return tuple(float(x) for x in np.maximum(val, 0.0))


def rdp_pure_dp(epsilon: float, orders: npt.ArrayLike | None = None) -> tuple[float, ...]:
    """The tightest RDP curve implied by pure eps-DP alone: that of binary randomized response.

    Any eps-DP pair of output laws is a post-processing of binary RR's pair (Kairouz, Oh &
    Viswanath 2015, Thm 2.1), and Renyi divergence obeys data processing, so
    ``D_alpha <= rdp_randomized_response(eps, 1)`` (<= min(eps, alpha eps^2 / 2), Bun & Steinke 2016).
    """
    if epsilon == 0:
        return tuple(0.0 for _ in _orders_array(orders))
    return rdp_randomized_response(epsilon, 1, orders=orders)


@overload
def rdp_to_dp(
    rdp_curve: npt.ArrayLike, delta: float, orders: npt.ArrayLike | None = None, *, return_order: Literal[False] = False
) -> float: ...
@overload
def rdp_to_dp(
    rdp_curve: npt.ArrayLike, delta: float, orders: npt.ArrayLike | None = None, *, return_order: Literal[True]
) -> tuple[float, float]: ...


def rdp_to_dp(
    rdp_curve: npt.ArrayLike, delta: float, orders: npt.ArrayLike | None = None, *, return_order: bool = False
) -> float | tuple[float, float]:
    """Convert an RDP curve to (eps, delta)-DP with the improved conversion.

    Canonne, Kamath & Steinke 2020 ("The discrete Gaussian for DP", Prop. 12) and
    Balle et al. 2020 ("Hypothesis testing interpretations and Renyi DP", Thm 21):
    ``eps = rdp(alpha) + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)``,
    minimised over the orders.  Never worse than Mironov 2017 Prop. 3,
    ``rdp + log(1/delta)/(alpha-1)``: the extra terms ``log(1-1/alpha) - log(alpha)/(alpha-1)``
    are negative for every ``alpha > 1``.  The curve must be valid at every order supplied;
    a coarse order grid only costs tightness, never validity.
    """
    if not (0.0 < delta < 1.0):
        raise ValueError(f"RDP conversion needs 0 < delta < 1, got {delta!r}")
    a = _orders_array(orders)
    r = np.asarray(rdp_curve, dtype=float)
    if r.shape != a.shape:
        raise ValueError(f"rdp curve has {r.size} values for {a.size} orders")
    eps = r + np.log1p(-1.0 / a) - (np.log(delta) + np.log(a)) / (a - 1.0)
    i = int(np.argmin(eps))
    e = float(max(eps[i], 0.0))
    return (e, float(a[i])) if return_order else e


# ---------------------------------------------------------------------------------------------
# Gaussian DP (Dong, Roth & Su 2019/2022)
# ---------------------------------------------------------------------------------------------


@overload
def gdp_delta(mu: float, eps: float) -> float: ...
@overload
def gdp_delta(mu: npt.ArrayLike, eps: npt.ArrayLike) -> float | npt.NDArray[np.float64]: ...


def gdp_delta(mu: npt.ArrayLike, eps: npt.ArrayLike) -> float | npt.NDArray[np.float64]:
    """Privacy profile of mu-GDP: ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

    Dong, Roth & Su 2022 (JRSS-B), Cor. 2.13; identical to Balle & Wang 2018 Thm 8 for the
    Gaussian mechanism with ``mu = Delta/sigma``.  Vectorised (broadcasts ``mu`` and ``eps``);
    evaluated in log space so large ``eps`` does not overflow.
    """
    mu = np.asarray(mu, dtype=float)
    eps = np.asarray(eps, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        la = special.log_ndtr(-eps / mu + mu / 2)
        lb = eps + special.log_ndtr(-eps / mu - mu / 2)
        out = np.exp(la) * -np.expm1(np.minimum(lb - la, 0.0))
    out = np.where(mu <= 0, 0.0, out)
    out = np.clip(out, 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


@overload
def gdp_epsilon(mu: float, delta: float, *, iters: int = 200) -> float: ...
@overload
def gdp_epsilon(mu: npt.ArrayLike, delta: npt.ArrayLike, *, iters: int = 200) -> float | npt.NDArray[np.float64]: ...


def gdp_epsilon(mu: npt.ArrayLike, delta: npt.ArrayLike, *, iters: int = 200) -> float | npt.NDArray[np.float64]:
    """Smallest eps with ``gdp_delta(mu, eps) <= delta`` (vectorised bisection).

    The profile is decreasing in eps; the returned value is the upper end of the final
    bracket, so ``gdp_delta(mu, result) <= delta`` holds in floating point (never optimistic).
    """
    mu = np.asarray(mu, dtype=float)
    delta = np.asarray(delta, dtype=float)
    if np.any(delta <= 0) or np.any(delta >= 1):
        raise ValueError(f"gdp_epsilon needs 0 < delta < 1, got {delta!r}")
    mu, delta = np.broadcast_arrays(mu, delta)
    lo = np.zeros(mu.shape)
    hi = np.maximum(mu * mu / 2 + mu * np.sqrt(2 * np.log(1 / delta)), 1e-12) + 1.0
    # make sure hi is feasible
    for _ in range(60):
        bad = gdp_delta(mu, hi) > delta
        if not np.any(bad):
            break
        hi = np.where(bad, hi * 2, hi)
    zero = gdp_delta(mu, 0.0) <= delta
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        ok = gdp_delta(mu, mid) <= delta
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
        if np.all(hi - lo <= 1e-13 * np.maximum(hi, 1e-300)):
            break
    out = np.where(zero | (mu <= 0), 0.0, hi)
    return float(out) if out.ndim == 0 else out


@overload
def gdp_mu_for(epsilon: float, delta: float, *, iters: int = 200) -> float: ...
@overload
def gdp_mu_for(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, *, iters: int = 200
) -> float | npt.NDArray[np.float64]: ...


def gdp_mu_for(epsilon: npt.ArrayLike, delta: npt.ArrayLike, *, iters: int = 200) -> float | npt.NDArray[np.float64]:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP (vectorised bisection).

    ``gdp_delta`` is increasing in mu; the returned value is the lower end of the final
    bracket, so ``gdp_delta(result, epsilon) <= delta`` in floating point.
    """
    eps = np.asarray(epsilon, dtype=float)
    delta = np.asarray(delta, dtype=float)
    if np.any(eps < 0) or np.any(delta <= 0) or np.any(delta >= 1):
        raise ValueError(f"need epsilon >= 0 and 0 < delta < 1, got {epsilon!r}, {delta!r}")
    eps, delta = np.broadcast_arrays(eps, delta)
    lo = np.zeros(eps.shape)
    hi = np.ones(eps.shape)
    for _ in range(200):
        small = gdp_delta(hi, eps) <= delta
        if not np.any(small):
            break
        lo = np.where(small, hi, lo)
        hi = np.where(small, hi * 2, hi)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        ok = gdp_delta(mid, eps) <= delta
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
        if np.all(hi - lo <= 1e-14 * hi):
            break
    return float(lo) if lo.ndim == 0 else lo


def calibrate_gaussian_gdp(epsilon: float, delta: float, n_releases: int = 1) -> float:
    """Common noise multiplier ``c`` so that ``k`` Gaussian releases with std ``sigma_i = c Delta_i``
    are jointly (epsilon, delta)-DP under exact GDP composition.

    Each release is ``(1/c)``-GDP; k of them are ``sqrt(k)/c``-GDP (Dong, Roth & Su 2022,
    Cor. 3.3), so ``c = sqrt(k) / mu*`` with ``mu* = gdp_mu_for(epsilon, delta)``.
    With ``k = 1`` this is the analytic Gaussian mechanism of Balle & Wang 2018 (Thm 8).
    PEARL's two releases at (1, 1e-5): ``c = 5.276`` (docs/accounting.md, "Gaussian DP"; docs/errata.md, E3).
    """
    k = int(n_releases)
    if k < 1:
        raise ValueError(f"n_releases must be >= 1, got {n_releases!r}")
    mu = gdp_mu_for(epsilon, delta)
    c = np.sqrt(k) / mu
    return float(np.nextafter(c, np.inf))


def gaussian_sigma_for_gdp_target(
    epsilon: float, delta: float, sensitivities: npt.ArrayLike, weights: npt.ArrayLike | None = None
) -> npt.NDArray[np.float64]:
    """Per-release stds for Gaussian releases with L2 sensitivities ``Delta_i`` meeting
    (epsilon, delta) jointly under exact GDP composition.

    ``weights`` (non-negative, default equal) share the squared GDP budget:
    ``mu_i^2 = w_i mu*^2 / sum w``, ``sigma_i = Delta_i / mu_i``; then
    ``sqrt(sum mu_i^2) = mu*`` (Dong, Roth & Su 2022, Cor. 3.3).
    """
    sens = np.atleast_1d(np.asarray(sensitivities, dtype=float))
    w = np.ones_like(sens) if weights is None else np.atleast_1d(np.asarray(weights, dtype=float))
    if w.shape != sens.shape or np.any(w <= 0) or np.any(sens < 0):
        raise ValueError("weights must be positive and match the sensitivities")
    mu = gdp_mu_for(epsilon, delta)
    mu_i = mu * np.sqrt(w / w.sum())
    sigma: npt.NDArray[np.float64] = np.nextafter(sens / mu_i, np.inf)
    return sigma


# ---------------------------------------------------------------------------------------------
# Zero-concentrated DP (Bun & Steinke 2016)
# ---------------------------------------------------------------------------------------------

# candidate orders for the zCDP -> (eps, delta) conversion: alpha - 1 from 1e-6 to 1e8
_ZCDP_LOG_AM1 = np.linspace(np.log(1e-6), np.log(1e8), 2801)


def _zcdp_eps_at(rho: float | npt.NDArray[np.float64], delta: float, alpha: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """CKS 2020 Prop. 12 applied to the RDP curve ``alpha * rho``: valid at every ``alpha > 1``."""
    alpha = np.asarray(alpha, dtype=float)
    eps: npt.NDArray[np.float64] = (
        alpha * rho + np.log1p(-1.0 / alpha) - (np.log(delta) + np.log(alpha)) / (alpha - 1.0)
    )
    return eps


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest eps (over the orders tried) such that rho-zCDP implies (eps, delta)-DP.

    rho-zCDP means ``D_alpha <= alpha rho`` at every order (Bun & Steinke 2016, Def. 1.1), so
    the improved conversion of Canonne, Kamath & Steinke 2020 (Prop. 12) holds at every
    ``alpha > 1``; we minimise it over a fine log grid of orders and refine around the best one
    by golden-section search.  The value returned is the formula at one definite order, hence a
    valid bound whether or not that order is the exact minimiser.
    """
    rho = float(rho)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"zCDP conversion needs 0 < delta < 1, got {delta!r}")
    if not (rho >= 0) or not np.isfinite(rho):
        raise ValueError(f"rho must be finite and >= 0, got {rho!r}")
    if rho == 0.0:
        return 0.0
    x = _ZCDP_LOG_AM1
    vals = _zcdp_eps_at(rho, delta, 1.0 + np.exp(x))
    i = int(np.argmin(vals))
    lo, hi = x[max(i - 1, 0)], x[min(i + 1, x.size - 1)]
    g = (np.sqrt(5.0) - 1.0) / 2.0
    best_x, best = x[i], float(vals[i])
    for _ in range(80):  # golden section on log(alpha - 1)
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        fa, fb = (float(_zcdp_eps_at(rho, delta, 1.0 + np.exp(t))) for t in (a, b))
        if fa <= fb:
            hi = b
            if fa < best:
                best_x, best = a, fa
        else:
            lo = a
            if fb < best:
                best_x, best = b, fb
    return float(max(float(_zcdp_eps_at(rho, delta, 1.0 + np.exp(best_x))), 0.0))


def _rho_at(epsilon: float, delta: float, log_am1: float | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The rho for which the conversion at order ``alpha = 1 + exp(log_am1)`` gives exactly ``epsilon``."""
    alpha = 1.0 + np.exp(np.asarray(log_am1, dtype=float))
    rho: npt.NDArray[np.float64] = (epsilon - _zcdp_eps_at(0.0, delta, alpha)) / alpha
    return rho


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest rho (to ~1e-12 relative) with ``zcdp_epsilon(rho, delta) <= epsilon``.

    ``zcdp_epsilon(rho) <= eps`` holds iff some order alpha gives ``alpha rho + c(alpha) <= eps``
    (``c`` the rest of CKS 2020 Prop. 12), i.e. iff ``rho <= max_alpha (eps - c(alpha)) / alpha``:
    the maximum is found on the same order grid and refined by golden-section search.  The result
    is then checked with :func:`zcdp_epsilon` itself and lowered until the check holds in floating
    point, so it is never optimistic.
    """
    if not (epsilon > 0) or not (0.0 < delta < 1.0):
        raise ValueError(f"need epsilon > 0 and 0 < delta < 1, got {epsilon!r}, {delta!r}")
    x = _ZCDP_LOG_AM1
    vals = _rho_at(epsilon, delta, x)
    i = int(np.argmax(vals))
    lo, hi = x[max(i - 1, 0)], x[min(i + 1, x.size - 1)]
    g = (np.sqrt(5.0) - 1.0) / 2.0
    best = float(vals[i])
    for _ in range(80):  # golden section on log(alpha - 1)
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        fa, fb = float(_rho_at(epsilon, delta, a)), float(_rho_at(epsilon, delta, b))
        if fa >= fb:
            hi = b
            best = max(best, fa)
        else:
            lo = a
            best = max(best, fb)
    if not best > 0:
        return 0.0
    rho = best * (1.0 - 1e-13)
    while zcdp_epsilon(rho, delta) > epsilon:  # rounding: step down until the check holds
        rho *= 1.0 - 1e-12
    return rho


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Composition:
    """The total privacy loss of a sequence of releases and how it was computed.

    ``total`` covers every non-metric component (kind "dp", "semi-sensitive", "label"); its
    ``kind`` is the *weakest* neighbour relation present (a record-level guarantee implies the
    label and semi-sensitive ones, not conversely), so mixing record- and label-DP releases
    yields a label-DP total.  Components of kind "metric" (d_chi privacy: eps per unit of
    distance) compose by adding their per-unit epsilons and are reported separately in
    ``metric_epsilon`` (and ``metric_delta``); they are not part of ``total``.
    ``alternatives`` maps every applicable method to its (eps, delta) so the report can show
    what the choice saved.
    """

    total: PrivacyLoss
    method: str
    transcript: tuple[str, ...]
    metric_epsilon: float = 0.0
    metric_delta: float = 0.0
    alternatives: dict[str, tuple[float, float]] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "total": self.total.to_json(),
            "metric_epsilon": self.metric_epsilon,
            "metric_delta": self.metric_delta,
            "alternatives": {k: {"epsilon": e, "delta": d} for k, (e, d) in self.alternatives.items()},
            "transcript": list(self.transcript),
        }


_METHODS = ("auto", "basic", "rdp", "gdp", "zcdp+basic")


def _rdp_curve_of(loss: PrivacyLoss) -> npt.NDArray[np.float64] | None:
    """The component's RDP curve; for a pure-DP component without one, :func:`rdp_pure_dp`."""
    if loss.rdp is not None:
        return np.asarray(loss.rdp, dtype=float)
    if loss.delta == 0.0:
        return np.asarray(rdp_pure_dp(loss.epsilon), dtype=float)
    return None


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _describe(i: int, loss: PrivacyLoss) -> str:
    name = loss.label or f"component {i + 1}"
    parts = [f"{name} [{loss.kind}]: eps={_fmt(loss.epsilon)}, delta={_fmt(loss.delta)}"]
    if loss.gdp_mu is not None:
        parts.append(f"mu-GDP mu={_fmt(loss.gdp_mu)}")
    if loss.zcdp_rho is not None:
        parts.append(f"rho-zCDP rho={_fmt(loss.zcdp_rho)}")
        if loss.zcdp_delta:
            parts.append(f"approximate zCDP delta={_fmt(loss.zcdp_delta)}")
    if loss.rdp is not None:
        parts.append("has RDP curve")
    if loss.kind == "metric":
        parts.append("(per unit of distance)")
    return ", ".join(parts)


def compose(
    losses: Sequence[PrivacyLoss], *, delta: float | None = None, method: str = "auto", zcdp_delta: float | None = None
) -> Composition:
    """Total privacy loss of ``losses`` (sequential composition on the same dataset).

    Methods (all valid upper bounds; replace-one neighbours throughout):

    * ``"basic"`` - eps's and delta's add (Dwork et al. 2006; Dwork & Roth 2014 Thm 3.16).
    * ``"rdp"`` - RDP curves add at each order (Mironov 2017, Prop. 1), then the improved
      conversion at the target ``delta`` (:func:`rdp_to_dp`).  Needs every component's curve;
      a pure eps-DP component without one gets :func:`rdp_pure_dp` (valid for any eps-DP
      mechanism).
    * ``"gdp"`` - mu's add in quadrature (Dong, Roth & Su 2022, Cor. 3.3), exact conversion
      by :func:`gdp_epsilon`.  Needs every component to be mu-GDP.
    * ``"zcdp+basic"`` - the components carrying ``zcdp_rho`` (calibrated jointly, e.g. the
      discrete Gaussian columns of a record release) compose by adding their rho's (Bun &
      Steinke 2016, Lemma 2.3), converted by :func:`zcdp_epsilon` at ``delta`` minus the other
      components' deltas (or at ``zcdp_delta``, the delta the group was calibrated for, when
      given: a difference of floats can lose a small delta next to a large one); the others add
      by basic composition.  Without such components it is basic composition.  Approximate zCDP
      components (``zcdp_delta`` > 0, Bun & Steinke 2016 Def. 8.1) add their deltas: the
      conversion runs at that delta minus their sum.
    * ``"auto"`` - every applicable method, plus the hybrids "gdp+basic"/"rdp+basic" (compose
      the GDP/RDP-capable components at ``delta - sum(other deltas)`` and add the rest by basic
      composition), and picks the smallest epsilon among those meeting the target delta
      (basic is always computed; if nothing meets the target, basic is returned and says so).
    """
    if method not in _METHODS:
        raise ValueError(f"unknown composition method {method!r}; choose one of {_METHODS}")
    if delta is not None and not (0.0 <= delta < 1.0):
        raise ValueError(f"target delta must lie in [0, 1), got {delta!r}")
    losses = list(losses)
    lines: list[str] = []
    for i, loss in enumerate(losses):
        if not isinstance(loss, PrivacyLoss):
            raise TypeError(f"compose expects PrivacyLoss values, got {type(loss).__name__}")
        lines.append(_describe(i, loss))

    metric = [loss for loss in losses if loss.kind == "metric"]
    core = [loss for loss in losses if loss.kind != "metric"]
    m_eps = float(sum(loss.epsilon for loss in metric))
    m_delta = float(sum(loss.delta for loss in metric))
    if metric:
        lines.append(
            f"metric-DP components compose separately: sum eps per unit distance="
            f"{_fmt(m_eps)}, sum delta={_fmt(m_delta)} (not part of the (eps, delta) total)"
        )

    unknown = {loss.kind for loss in core} - set(_KIND_STRENGTH)
    if unknown:
        raise ValueError(f"unknown privacy-loss kind(s) {sorted(unknown)}")
    kind = min((loss.kind for loss in core), key=_KIND_STRENGTH.__getitem__, default="dp")
    if len({loss.kind for loss in core}) > 1:
        lines.append(f"mixed neighbour relations: the total holds for the weakest one ({kind})")

    rdp_total = None
    curves = [_rdp_curve_of(loss) for loss in core]
    known = [c for c in curves if c is not None]
    if core and len(known) == len(curves):
        rdp_total = tuple(float(x) for x in np.sum(known, axis=0))
        n_implied = sum(1 for loss in core if loss.rdp is None)
        if n_implied:
            lines.append(
                f"{n_implied} pure-DP component(s) without an RDP curve use the binary-"
                "randomized-response curve implied by pure DP (Kairouz-Oh-Viswanath 2015)"
            )
    mu_total = None
    mus = [loss.gdp_mu for loss in core if loss.gdp_mu is not None]
    if core and len(mus) == len(core):
        mu_total = float(np.sqrt(sum(m**2 for m in mus)))
    rho_total = None
    rhos = [loss.zcdp_rho for loss in core if loss.zcdp_rho is not None]
    if core and len(rhos) == len(core):
        rho_total = float(sum(rhos))

    # --- candidates -------------------------------------------------------------------------
    cands: dict[str, tuple[float, float]] = {}
    notes: dict[str, str] = {}
    b_eps = float(sum(loss.epsilon for loss in core))
    b_delta = float(sum(loss.delta for loss in core))
    cands["basic"] = (b_eps, b_delta)
    notes["basic"] = f"basic composition: sum eps={_fmt(b_eps)}, sum delta={_fmt(b_delta)}"

    target_ok = delta is not None and delta > 0
    if method in ("rdp", "gdp") and not target_ok:
        raise ValueError(f"method {method!r} needs a target delta in (0, 1)")
    if method == "rdp" and rdp_total is None:
        raise ValueError("method 'rdp' needs an RDP curve (or pure DP) on every (non-metric) component")
    if method == "gdp" and mu_total is None:
        raise ValueError("method 'gdp' needs every (non-metric) component to be mu-GDP")
    if method == "zcdp+basic" and not target_ok:
        raise ValueError("method 'zcdp+basic' needs a target delta in (0, 1)")

    zc_in = [loss for loss in core if loss.zcdp_rho is not None]
    if delta is not None and target_ok and zc_in and method in ("auto", "zcdp+basic"):
        rest = [loss for loss in core if loss.zcdp_rho is None]
        r_eps = float(sum(loss.epsilon for loss in rest))
        r_delta = float(sum(loss.delta for loss in rest))
        approx = float(sum(loss.zcdp_delta for loss in zc_in))
        d_in = (delta - r_delta if zcdp_delta is None else float(zcdp_delta)) - approx
        if d_in > 0:
            rho = float(sum(loss.zcdp_rho for loss in zc_in if loss.zcdp_rho is not None))
            e_in = zcdp_epsilon(rho, d_in)
            cands["zcdp+basic"] = (e_in + r_eps, delta if zcdp_delta is None else d_in + approx + r_delta)
            approx_note = (
                f" (approximate zCDP: the conditioning events' deltas add to {_fmt(approx)}, Bun-Steinke 2016 Def. 8.1)"
                if approx
                else ""
            )
            notes["zcdp+basic"] = (
                f"zCDP composition of {len(zc_in)} jointly calibrated component(s): "
                f"rho=sum rho_i={_fmt(rho)}{approx_note}, converted (Canonne-Kamath-Steinke 2020 "
                f"Prop. 12, best order) at delta={_fmt(d_in)} -> eps={_fmt(e_in)}, plus "
                f"{len(rest)} by basic composition (eps={_fmt(r_eps)}, "
                f"delta={_fmt(r_delta)}): eps={_fmt(e_in + r_eps)}, delta={_fmt(delta)}"
            )

    if delta is not None and target_ok and core:
        if rdp_total is not None:
            e, a = rdp_to_dp(rdp_total, delta, return_order=True)
            cands["rdp"] = (e, delta)
            notes["rdp"] = (
                f"RDP composition: sum of {len(core)} curves, improved conversion "
                f"(Canonne-Kamath-Steinke 2020 Prop. 12) at delta={_fmt(delta)}: "
                f"eps={_fmt(e)} (order {a:g})"
            )
        if mu_total is not None:
            e = gdp_epsilon(mu_total, delta)
            cands["gdp"] = (e, delta)
            notes["gdp"] = (
                f"GDP composition: mu=sqrt(sum mu_i^2)={_fmt(mu_total)}, exact "
                f"conversion (Dong-Roth-Su Cor. 2.13) at delta={_fmt(delta)}: eps={_fmt(e)}"
            )
        if method == "auto":
            groups: tuple[tuple[str, Callable[[PrivacyLoss], bool]], ...] = (
                ("gdp", lambda loss: loss.gdp_mu is not None),
                ("rdp", lambda loss: _rdp_curve_of(loss) is not None),
            )
            for name, has in groups:
                inside = [loss for loss in core if has(loss)]
                rest = [loss for loss in core if not has(loss)]
                if not inside or not rest:
                    continue
                r_eps = float(sum(loss.epsilon for loss in rest))
                r_delta = float(sum(loss.delta for loss in rest))
                d_in = delta - r_delta
                if d_in <= 0:
                    continue
                if name == "gdp":
                    mu = float(np.sqrt(sum(loss.gdp_mu**2 for loss in inside if loss.gdp_mu is not None)))
                    e_in = gdp_epsilon(mu, d_in)
                else:
                    curve = np.sum([c for loss in inside if (c := _rdp_curve_of(loss)) is not None], axis=0)
                    e_in = rdp_to_dp(curve, d_in)
                key = f"{name}+basic"
                cands[key] = (e_in + r_eps, delta)
                notes[key] = (
                    f"hybrid: {len(inside)} component(s) by {name.upper()} at "
                    f"delta={_fmt(d_in)} -> eps={_fmt(e_in)}, plus {len(rest)} by basic "
                    f"composition (eps={_fmt(r_eps)}, delta={_fmt(r_delta)}): "
                    f"eps={_fmt(e_in + r_eps)}, delta={_fmt(delta)}"
                )

    if method == "auto":
        valid = {k: v for k, v in cands.items() if delta is None or v[1] <= delta + 1e-15}
        if valid:
            # smallest eps; ties go to the simplest (insertion order: basic first)
            chosen = min(valid, key=lambda k: valid[k][0])
        else:
            chosen = "basic"
        for k in cands:
            lines.append(notes[k])
        if delta is not None and chosen == "basic" and cands["basic"][1] > delta:
            lines.append(f"no method meets the target delta={_fmt(delta)}: reporting basic composition")
        others = ", ".join(f"{k} eps={_fmt(v[0])}" for k, v in cands.items() if k != chosen)
        lines.append(f"chosen: {chosen} (tightest valid)" + (f"; alternatives: {others}" if others else ""))
    elif method == "zcdp+basic" and "zcdp+basic" not in cands:
        chosen = "basic"
        lines.append(
            notes["basic"]
            + (
                " (no jointly calibrated zCDP component)"
                if not zc_in
                else " (the other components' deltas leave none for the zCDP group)"
            )
        )
    else:
        chosen = method
        lines.append(notes[chosen])

    eps_tot, delta_tot = cands[chosen]
    total = PrivacyLoss(
        epsilon=float(eps_tot),
        delta=float(delta_tot),
        label="total",
        rdp=rdp_total,
        gdp_mu=mu_total,
        kind=kind,
        zcdp_rho=rho_total,
        zcdp_delta=float(sum(loss.zcdp_delta for loss in core)) if rho_total is not None else 0.0,
        details={"method": chosen, "components": len(core)},
    )
    return Composition(
        total=total,
        method=chosen,
        transcript=tuple(lines),
        metric_epsilon=m_eps,
        metric_delta=m_delta,
        alternatives=dict(cands),
    )
