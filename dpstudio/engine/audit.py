"""Statistical privacy audit: an empirical LOWER bound on epsilon for each mechanism.

Method (in the spirit of Ding et al. 2018 "Detecting violations of differential privacy" and
Jagielski, Ullman & Oprea 2020; described in docs/audit.md):
1. Pick a worst-case pair of neighbouring inputs for the mechanism (below) and draw ``trials``
   outputs under each.
2. Split each sample in halves A and B.  On A, choose the distinguishing event S: outputs are
   mapped to discrete outcomes (grid points, categories, candidate or pool indices); candidate
   events are prefixes of the outcomes ordered by value (threshold events, optimal for
   monotone-likelihood-ratio noise) and ordered by the empirical likelihood ratio on A; the
   one with the best Clopper-Pearson lower bound on A is kept.
3. On the independent half B, with 95% Clopper-Pearson bounds p_lo <= P(M(x) in S) and
   q_up >= P(M(x') in S), eps_lb = log((p_lo - delta) / q_up); both directions, take the max.
   Since (eps, delta)-DP implies P(S) <= e^eps Q(S) + delta, a DP mechanism gives
   eps_lb <= eps except with probability <= 5% (per direction; the selection on A does not
   bias B).  passed = eps_lb <= claimed eps (docs/audit.md §The confidence bound;
   docs/audit.md §What a pass or a fail means).

Neighbouring pairs: Laplace/Gaussian: the public bounds low vs high (the largest shift);
RR: two different categories; exponential: utilities (D, 0, ..., 0) vs (0, D, ..., D) with K
candidates (every utility moves by exactly the sensitivity D; the ratio of P(candidate 0)
approaches e^eps as K grows); metric: x at angle 0 and x' at angle pi/2 (d = 1/2) with a
public pool of one point at x and 20 at x' -- the pool that makes the normaliser ratio
Z(x')/Z(x) large, i.e. the case where the factor 1/2 (docs/errata.md, E4) matters; the claim is eps*d.

Broken variants (must fail): "laplace_half_scale", "gaussian_half_sigma", "rr_2eps",
"metric_2eps" (the VoicePrivacy 2020 note's weights exp(-eps d)), "exponential_no_half" (weights exp(eps u/D)).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import beta

from dpstudio.engine.mechanisms.base import Mechanism
from dpstudio.engine.mechanisms.exponential import ExponentialMechanism
from dpstudio.engine.mechanisms.gaussian import GaussianMechanism
from dpstudio.engine.mechanisms.laplace import LaplaceMechanism
from dpstudio.engine.mechanisms.metric_selection import MetricSelection
from dpstudio.engine.mechanisms.randomized_response import RandomizedResponse
from dpstudio.engine.rng import RandomSource

BROKEN = {
    "laplace_half_scale": "laplace",
    "gaussian_half_sigma": "gaussian",
    "rr_2eps": "rr",
    "metric_2eps": "metric",
    "exponential_no_half": "exponential",
}
MECHANISM_NAMES = ("laplace", "gaussian", "rr", "exponential", "metric")
_ALPHA = 0.05  # two-sided Clopper-Pearson level (95% intervals)
_EXP_K = 10  # candidates in the exponential-mechanism audit
_METRIC_BULK = 20  # pool points at x' in the metric audit
_METRIC_ANGLE = math.pi / 2  # d(x, x') = 1/2


def _cp_lower(k: npt.ArrayLike, n: int) -> npt.NDArray[np.float64]:
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = beta.ppf(_ALPHA / 2, k, n - k + 1)
    bound: npt.NDArray[np.float64] = np.where(k > 0, lo, 0.0)
    return bound


def _cp_upper(k: npt.ArrayLike, n: int) -> npt.NDArray[np.float64]:
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        up = beta.ppf(1 - _ALPHA / 2, k + 1, n - k)
    bound: npt.NDArray[np.float64] = np.where(k < n, up, 1.0)
    return bound


def _eps_bound(kp: npt.ArrayLike, kq: npt.ArrayLike, n: int, delta: float) -> npt.NDArray[np.float64]:
    """log((p_lo - delta)/q_up), -inf where p_lo <= delta."""
    p_lo = _cp_lower(kp, n) - delta
    q_up = _cp_upper(kq, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_lo > 0, np.log(np.maximum(p_lo, 1e-300) / q_up), -np.inf)


def empirical_epsilon(
    out_x: npt.ArrayLike, out_y: npt.ArrayLike, delta: float = 0.0, *, ordered: bool = False
) -> dict[str, Any]:
    """Lower-bound eps from two samples of discrete outcomes (half to choose S, half to test).

    ``ordered``: outcomes are numbers from noise with a monotone likelihood ratio (Laplace,
    Gaussian), so only threshold events are searched -- ordering by the noisy empirical ratio
    would overfit half A (winner's curse) and waste power on B.
    """
    out_x = np.asarray(out_x).ravel()
    out_y = np.asarray(out_y).ravel()
    n = min(out_x.size, out_y.size)
    h = n // 2
    _, inv = np.unique(np.concatenate([out_x[:n], out_y[:n]]), return_inverse=True)
    ix, iy = inv[:n], inv[n:]
    L = int(inv.max()) + 1
    cxa, cya = np.bincount(ix[:h], minlength=L), np.bincount(iy[:h], minlength=L)
    cxb, cyb = np.bincount(ix[h : 2 * h], minlength=L), np.bincount(iy[h : 2 * h], minlength=L)
    nb = 2 * h - h
    # choose ONE event on half A (over both directions and all orderings), test it once on B:
    # testing several events on B and keeping the max would inflate the false-alarm rate
    pick: tuple[int, npt.NDArray[np.intp]] | None
    best_score, pick = -math.inf, None
    for direction, (cpa, cqa) in enumerate(((cxa, cya), (cya, cxa))):
        ratio = (cpa + 0.5) / (cqa + 0.5)
        orders = [np.arange(L), np.arange(L)[::-1]]
        if not ordered:
            orders.append(np.argsort(-ratio, kind="stable"))
        for order in orders:
            kp, kq = np.cumsum(cpa[order]), np.cumsum(cqa[order])
            score = _eps_bound(kp, kq, h, delta)
            j = int(np.argmax(score))
            if score[j] > best_score or pick is None:
                best_score, pick = float(score[j]), (direction, order[: j + 1])
    assert pick is not None  # set by the first candidate event
    direction, chosen = pick
    cpb, cqb = (cxb, cyb) if direction == 0 else (cyb, cxb)
    kpb, kqb = int(cpb[chosen].sum()), int(cqb[chosen].sum())
    return {
        "empirical_epsilon_lower_bound": float(_eps_bound(kpb, kqb, nb, delta)),
        "event_size": int(chosen.size),
        "p_hat": kpb / nb,
        "q_hat": kqb / nb,
    }


def _samples(
    mechanism: str, epsilon: float, delta: float, trials: int, rng: RandomSource, broken: str | None
) -> tuple[npt.NDArray[Any] | int, npt.NDArray[Any] | int, float]:
    """(outcomes under x, outcomes under x', claimed epsilon for this pair)."""
    m: Mechanism  # narrowed to each branch's class by its assignment
    x: npt.NDArray[Any] | int
    y: npt.NDArray[Any] | int
    if mechanism == "laplace":
        m = LaplaceMechanism(epsilon=epsilon, delta=delta, low=0.0, high=1.0, grid_bits=4)
        if broken == "laplace_half_scale":
            m.scale_steps = m.scale_steps / 2.0
        x = m.release(np.zeros(trials), rng)
        y = m.release(np.ones(trials), rng)
        return x, y, epsilon
    if mechanism == "gaussian":
        m = GaussianMechanism(epsilon=epsilon, delta=delta, low=0.0, high=1.0, grid_bits=4)
        if broken == "gaussian_half_sigma":
            m.sigma_steps /= 2.0
            m.sigma2_exact = m.sigma2_exact / 4
        x = m.release(np.zeros(trials), rng)
        y = m.release(np.ones(trials), rng)
        return x, y, epsilon
    if mechanism == "rr":
        eps_used = 2.0 * epsilon if broken == "rr_2eps" else epsilon
        m = RandomizedResponse(epsilon=eps_used, delta=delta, n_categories=4)
        x = m.release(np.zeros(trials, dtype=np.int64), rng)
        y = m.release(np.ones(trials, dtype=np.int64), rng)
        return x, y, epsilon
    if mechanism == "exponential":
        sens = 1.0
        m = ExponentialMechanism(
            epsilon=epsilon, sensitivity=sens, _unsafe_factor=2.0 if broken == "exponential_no_half" else 1.0
        )
        u = np.zeros(_EXP_K)
        u[0] = sens
        u2 = np.full(_EXP_K, sens)
        u2[0] = 0.0
        x = m.select(np.broadcast_to(u, (trials, _EXP_K)), rng)
        y = m.select(np.broadcast_to(u2, (trials, _EXP_K)), rng)
        return x, y, epsilon
    if mechanism == "metric":
        a = _METRIC_ANGLE
        xv = np.array([1.0, 0.0])
        yv = np.array([math.cos(a), math.sin(a)])
        pool = np.vstack([xv[None, :], np.repeat(yv[None, :], _METRIC_BULK, axis=0)])
        m = MetricSelection(epsilon=epsilon, pool=pool, _unsafe_full_epsilon=(broken == "metric_2eps"))
        # (the input equals pool row 0 on purpose: the pool is public and the exclusion is by
        # identity only, so nothing is excluded here)
        x = m.select(np.broadcast_to(xv, (trials, 2)), rng)
        y = m.select(np.broadcast_to(yv, (trials, 2)), rng)
        d = a / math.pi
        # outcomes: pool index 0 vs the 20 identical bulk points (merged: they are one output value)
        return np.minimum(x, 1), np.minimum(y, 1), epsilon * d
    raise ValueError(f"unknown mechanism {mechanism!r}; choose from {', '.join(MECHANISM_NAMES)}")


def audit(
    mechanism: str,
    *,
    epsilon: float,
    delta: float = 0.0,
    trials: int = 1_000_000,
    seed: int | None = None,
    broken: str | None = None,
) -> dict[str, Any]:
    """Empirical lower bound on the privacy loss of ``mechanism`` vs its claim (module doc)."""
    if mechanism not in MECHANISM_NAMES:
        raise ValueError(f"unknown mechanism {mechanism!r}; choose from {', '.join(MECHANISM_NAMES)}")
    if broken is not None and BROKEN.get(broken) != mechanism:
        raise ValueError(
            f"broken variant {broken!r} does not apply to {mechanism!r}; "
            f"choose from {sorted(k for k, v in BROKEN.items() if v == mechanism)}"
        )
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1000:
        raise ValueError(f"trials must be an integer >= 1000, got {trials!r}")
    eps = float(epsilon)
    if not eps > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    dl = float(delta)
    if mechanism == "gaussian" and dl == 0.0:
        raise ValueError("the Gaussian mechanism needs delta > 0, got 0.0")
    rng = RandomSource(seed)
    x, y, claimed = _samples(mechanism, eps, dl, int(trials), rng, broken)
    res = empirical_epsilon(x, y, dl, ordered=mechanism in ("laplace", "gaussian"))
    lb = res["empirical_epsilon_lower_bound"]
    lb = max(0.0, lb) if math.isfinite(lb) else 0.0
    return {
        "mechanism": mechanism,
        "broken": broken,
        "claimed_epsilon": claimed,
        "claimed_delta": dl,
        "trials": int(trials),
        "empirical_epsilon_lower_bound": lb,
        "passed": bool(lb <= claimed),
    }
