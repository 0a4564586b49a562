"""DP logistic regression by sampling a Gibbs posterior (Minami et al. 2016, theorem numbers of
Minami 2015, the research note it was taken from; docs/models.md, "DP logistic regression by Gibbs
posterior sampling").

Model.  Records x_i = (z_i, y_i) with ||z_i|| <= R (public norm bound) and y_i in {-1, +1};
theta = (a, b) in R^{D}, D = d + 1, zt_i = (z_i, 1); logistic loss
l(theta, x) = log(1 + exp(-y (a'z + b))); prior N(0, I/(n lam)); Gibbs posterior

    G_{beta,D}(theta) ∝ exp(-U(theta)),   U(theta) = beta sum_i l(theta, x_i) + (m/2) |theta|^2,
    m = m_pi = n lam.

Privacy (Minami 2015 Thm 8).  Each l(., x) is convex and L-Lipschitz with L = sqrt(R^2 + 1):
grad_theta l = -y sigma(-y zt'theta) zt and ||zt|| <= sqrt(R^2 + 1) — the intercept adds the 1,
Minami 2015's L = R forgets it.  -log prior is m-strongly convex.  The log-ratio of the posteriors
of neighbours is 2 beta L-Lipschitz and the posterior satisfies a log-Sobolev inequality with
constant 1/m (Bakry-Emery), so with a = 2 L^2 beta^2 / m (Thm 8(ii)):

    P(log-ratio > eps) <= exp(-(eps - a)^2 / (4 a))      (a < eps).

Setting this <= delta is exactly  a <= (sqrt(eps + log(1/delta)) - sqrt(log(1/delta)))^2
(:func:`exact_a_max`); by Thm 4 (= Lemma 2 of Minami 2015's reference) the posterior is then
(eps, delta)-DP.  The proof never uses Minami 2015's restriction beta <= 1 (it only needs the
strong convexity of U, which holds for every beta > 0), so beta may exceed 1 for large n.
Minami 2015's closed form (Cor. 10(ii)) beta <= eps/(2L) sqrt(m/(1 + 2 log(1/delta))) is NOT
safe for all eps: at delta = 1e-5 and eps = 2 it gives a = 0.0833 > 0.0800 allowed
(:func:`seed_cor10_a`; tests/test_gibbs_logistic.py).

Sampling (Minami 2015 Thm 12: a sampler within TV gamma of the posterior gives
(eps, delta_gibbs + (e^eps + 1) gamma)).  We sample EXACTLY by rejection from a Gaussian
envelope, capped at K proposals:

* Tangent lower bound.  For any theta0, convexity of l gives U >= V with
  V(theta) = beta sum_i [l(t_i0) + l'(t_i0)(t_i - t_i0)] + (m/2)|theta|^2 (t_i = y_i zt_i'theta),
  a Gaussian potential: exp(-V) ∝ N(mu, I/m), mu = -(beta/m) sum_i l'(t_i0) y_i zt_i.
* Accept theta ~ N(mu, I/m) with probability exp(-(U - V)(theta)) (an exact Bernoulli).  The
  accepted theta has density exactly ∝ exp(-U) whatever theta0 is (the rejection method:
  Devroye 1986, "Non-Uniform Random Variate Generation", Ch. II §3, Thm 3.1; equivalently the
  independence Metropolis-Hastings chain with this proposal has
  ||P^k - G||_TV <= (1 - p)^k, Mengersen & Tweedie 1996, Ann. Statist. 24(1), Thm 2.1).
* Acceptance rate.  l'' <= 1/4 gives U - V <= (beta/8) u'Au, u = theta - theta0,
  A = sum_i zt_i zt_i', so p >= E_{u ~ N(nu, I/m)} exp(-(beta/8) u'Au) (nu = mu - theta0), a
  Gaussian integral in closed form: det(I + Q/m)^{-1/2} exp(-(1/2) nu'Q(I + Q/m)^{-1} nu),
  Q = beta A / 4 (:func:`log_acceptance_lower`).  theta0 comes from Newton's method with
  |nu|^2 <= eta/m (eta = 0.01).  Over ALL datasets (tr A <= n L^2) the worst case is equal
  eigenvalues (:func:`log_acceptance_worst_case`, public, shown in the plan).
* Cap.  With at most K proposals the output law is (1 - q) G + q F, q = P(no acceptance)
  <= (1 - p)^K, so TV(output, G) <= (1 - p)^K.  K is the smallest integer with
  (1 - p_lower)^K <= gamma for the data's own lower bound p_lower <= p; hence TV <= gamma for
  EVERY dataset (K, like the running time, depends on the data: neither is released).

Result: a sampler whose TV distance to the posterior is at most gamma by an elementary,
exactly computable bound, so Thm 12 gives (eps, delta_gibbs + (e^eps + 1) gamma).  Unadjusted
Langevin's published bounds (:mod:`.langevin`) need ~1/gamma^2 steps and are infeasible at the
gamma DP needs (:func:`ula_alternative`).

delta split.  delta_sampler = (e^eps + 1) gamma = 0.1 % of the total delta by default
(option ``sampler_delta_fraction``): gamma only enters the cap through log(1/gamma), so a
small share costs almost nothing.

Default lambda.  The envelope has the prior's width 1/sqrt(m), so a weak prior (small lam)
means many proposals.  The default is the smallest lam whose PUBLIC worst-case cost
K_worst * n * D is at most 2e10 (:func:`default_lambda`; a function of n, D, eps, delta, R
only).  Users may set ``lambda`` or ``prior_scale`` s (lam = 1/(n s^2)) instead.  Rejections with
U - V > 60 are decided without a draw; the TV this adds (K e^-60) is inside the gamma bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpstudio.engine.models.langevin import secure_normal, ula_schedule
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, no_progress
from dpstudio.engine.rng import RandomSource

FloatArray = npt.NDArray[np.float64]

#: Newton tolerance on |mu - theta0|^2 * m (enters the public acceptance bound).
ETA = 0.01
#: Default worst-case work of the exact sampler, proposals x n x D (sets the default lambda).
WORK_BUDGET = 2e10
#: Proposals whose U - V exceeds this are rejected without drawing (exp(-60) < 1e-26; the
#: TV this adds, K e^-60, is included in the bound).
GAP_CUTOFF = 60.0
#: Hard limit on proposals (refused beyond: raise lambda).
PROPOSAL_LIMIT = 50_000_000
#: Default share of the total delta given to the sampler's TV term (e^eps + 1) gamma.
DEFAULT_SAMPLER_DELTA_FRACTION = 1e-3
#: Released coefficients are rounded to this public grid (snapping; Mironov 2012).
COEF_GRID = 2.0**-30


# ----------------------------------------------------------------------------------------------
# privacy calibration (no data)
# ----------------------------------------------------------------------------------------------
def lipschitz_constant(norm_bound: float) -> float:
    """L = sqrt(R^2 + 1): the gradient of the logistic loss with intercept is sigma * (z, 1)."""
    return math.sqrt(float(norm_bound) ** 2 + 1.0)


def exact_a_max(epsilon: float, delta: float) -> float:
    """Largest a = 2 L^2 beta^2 / m with exp(-(eps - a)^2/(4a)) <= delta (Minami 2015 Thm 8(ii)).

    (eps - a)^2 >= 4 a log(1/delta) with a < eps  <=>  sqrt(a) <= sqrt(eps + log 1/delta) - sqrt(log 1/delta).
    Written as eps / (sqrt(eps + l) + sqrt(l)) to avoid cancellation.
    """
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"need epsilon > 0 and 0 < delta < 1, got {epsilon!r}, {delta!r}")
    lg = math.log(1.0 / delta)
    r = epsilon / (math.sqrt(epsilon + lg) + math.sqrt(lg))
    return r * r


def tail_probability(a: float, epsilon: float) -> float:
    """Thm 8(ii): P(log-ratio > eps) <= exp(-(eps - a)^2 / (4 a)) for 0 < a < eps (else 1)."""
    if a <= 0:
        return 0.0
    if a >= epsilon:
        return 1.0
    return math.exp(-((epsilon - a) ** 2) / (4.0 * a))


def a_of_beta(beta: float, m_pi: float, lipschitz: float) -> float:
    return 2.0 * lipschitz**2 * beta**2 / m_pi


def beta_max(epsilon: float, delta: float, m_pi: float, lipschitz: float) -> float:
    """Largest beta meeting the exact tail condition (rounded down until the check passes)."""
    beta = math.sqrt(exact_a_max(epsilon, delta) * m_pi / (2.0 * lipschitz**2))
    while tail_probability(a_of_beta(beta, m_pi, lipschitz), epsilon) > delta:
        beta = math.nextafter(beta, 0.0)
    return beta


def seed_cor10_beta(epsilon: float, delta: float, m_pi: float, lipschitz: float) -> float:
    """Minami 2015 Cor. 10(ii): beta <= eps/(2L) sqrt(m / (1 + 2 log(1/delta))) — only safe for eps <~ 1."""
    return epsilon / (2.0 * lipschitz) * math.sqrt(m_pi / (1.0 + 2.0 * math.log(1.0 / delta)))


def seed_cor10_a(epsilon: float, delta: float) -> float:
    """a = 2 L^2 beta^2 / m at Minami 2015's Cor. 10(ii) beta: eps^2 / (2 (1 + 2 log(1/delta)))."""
    return epsilon**2 / (2.0 * (1.0 + 2.0 * math.log(1.0 / delta)))


def lambda_for_prior_scale(n: int, prior_scale: float) -> float:
    """lam = 1 / (n s^2): the prior N(0, I/(n lam)) = N(0, s^2 I)."""
    return 1.0 / (n * float(prior_scale) ** 2)


def default_lambda(
    n: int,
    dim: int,
    epsilon: float,
    delta_gibbs: float,
    gamma: float,
    norm_bound: float,
    work_budget: float = WORK_BUDGET,
) -> float:
    """Smallest lam (weakest prior) whose PUBLIC worst-case sampler cost
    K_worst * n * D stays within ``work_budget`` (bisection on log lam; depends on n, D, eps,
    delta and R only)."""
    L = lipschitz_constant(norm_bound)

    def cost(lam: float) -> float:
        m = n * lam
        beta = math.sqrt(exact_a_max(epsilon, delta_gibbs) * m / (2.0 * L * L))
        return proposals_for(log_acceptance_worst_case(n, dim, beta, m, L), gamma) * n * dim

    lo, hi = -30.0, 10.0  # log lam
    if cost(math.exp(hi)) > work_budget:
        return math.exp(hi)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if cost(math.exp(mid)) <= work_budget:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def log_acceptance_worst_case(n: int, dim: int, beta: float, m: float, lipschitz: float, eta: float = ETA) -> float:
    """Public lower bound on log P(accept) over ALL datasets of size n.

    U - V <= (beta/8) u'Au with u = theta - theta0 ~ N(nu, I/m), A = sum_i zt_i zt_i',
    tr A <= n L^2, |nu|^2 <= eta/m; E exp(-(1/2) u'Qu) = det(I + Q/m)^{-1/2}
    exp(-(1/2) nu'Q(I + Q/m)^{-1} nu) with Q = beta A / 4.  By concavity of log the determinant
    is largest for equal eigenvalues: log p >= -(D/2) log(1 + beta n L^2/(4 m D)) - eta beta n L^2/(8 m).
    """
    c = beta * n * lipschitz**2
    return -0.5 * dim * math.log1p(c / (4.0 * m * dim)) - eta * c / (8.0 * m)


def log_acceptance_lower(yz: FloatArray, beta: float, m: float, nu: FloatArray) -> float:
    """Data-dependent (exact Gaussian-integral) lower bound on log P(accept); see above.

    Used only to choose how many proposals to allow: the TV bound (1 - p)^K <= gamma holds for
    every dataset because p >= this bound; the count itself is never released.
    """
    A = yz.T @ yz
    Q = 0.25 * beta * A
    ev = np.clip(np.linalg.eigvalsh(Q), 0.0, None)
    logdet = float(np.log1p(ev / m).sum())
    # nu' Q (I + Q/m)^{-1} nu <= lambda_max(Q) |nu|^2 / (1 + lambda_max/m) <= m |nu|^2 (bounded either way)
    lam_max = float(ev.max()) if ev.size else 0.0
    quad = lam_max * float(nu @ nu) / (1.0 + lam_max / m)
    return -0.5 * logdet - 0.5 * quad


def proposals_for(log_p: float, gamma: float) -> float:
    """Smallest K with (1 - p)^K <= gamma (a float: may be astronomically large)."""
    p = math.exp(log_p)
    if p >= 1.0:
        return 1.0
    return max(1.0, math.ceil(math.log(gamma) / math.log1p(-p)))


@dataclass(frozen=True)
class GibbsCalibration:
    """Every public number of a Gibbs-posterior logistic-regression release."""

    n: int
    dim: int  # D = features + 1 (intercept)
    epsilon: float
    delta_total: float
    delta_gibbs: float
    delta_sampler: float  # (e^eps + 1) * gamma_target = delta_total - delta_gibbs
    gamma_target: float
    norm_bound: float
    lipschitz: float
    lam: float
    lam_default: bool
    m_pi: float
    beta: float
    a: float
    a_max: float
    tail: float
    log_p_worst: float  # public worst-case log acceptance
    max_proposals_worst: float  # public worst-case proposal cap (may be huge)
    smoothness: float  # M = m + beta n L^2 / 4 (for the ULA comparison)
    eta: float = ETA

    @property
    def effective_ridge(self) -> float:
        return self.lam / self.beta

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "dimension": self.dim,
            "epsilon": self.epsilon,
            "delta_total": self.delta_total,
            "delta_gibbs": self.delta_gibbs,
            "delta_sampler": self.delta_sampler,
            "gamma": self.gamma_target,
            "norm_bound": self.norm_bound,
            "lipschitz": self.lipschitz,
            "lambda": self.lam,
            "lambda_default": self.lam_default,
            "m_pi": self.m_pi,
            "prior_std": 1.0 / math.sqrt(self.m_pi),
            "beta": self.beta,
            "a": self.a,
            "a_max": self.a_max,
            "tail_bound": self.tail,
            "worst_case_log_acceptance": self.log_p_worst,
            "worst_case_proposals": self.max_proposals_worst,
            "effective_ridge": self.effective_ridge,
            "smoothness_M": self.smoothness,
            "newton_eta": self.eta,
        }


def calibrate(
    n: int,
    dim: int,
    epsilon: float,
    delta: float,
    *,
    norm_bound: float = 1.0,
    lam: float | None = None,
    sampler_delta_fraction: float = DEFAULT_SAMPLER_DELTA_FRACTION,
    prior_scale: float | None = None,
) -> GibbsCalibration:
    """Split delta = delta_gibbs + (e^eps + 1) gamma, then lam, beta and the sampler's numbers."""
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"the Gibbs posterior needs epsilon > 0 and 0 < delta < 1, got {epsilon!r}, {delta!r}")
    if not (0 < sampler_delta_fraction < 1):
        raise ValueError(f"sampler_delta_fraction must lie in (0, 1), got {sampler_delta_fraction!r}")
    if not (norm_bound > 0):
        raise ValueError(f"norm_bound must be > 0, got {norm_bound!r}")
    n = int(n)
    if n < 1:
        raise ValueError("need at least one record")
    delta_sampler = delta * sampler_delta_fraction
    delta_gibbs = delta - delta_sampler
    gamma = delta_sampler / (math.exp(epsilon) + 1.0)
    L = lipschitz_constant(norm_bound)
    lam_default = lam is None
    if lam is None:
        lam = (
            lambda_for_prior_scale(n, prior_scale)
            if prior_scale is not None
            else default_lambda(n, dim, epsilon, delta_gibbs, gamma, norm_bound)
        )
    if not (lam > 0):
        raise ValueError(f"lambda must be > 0, got {lam!r}")
    m = n * lam
    beta = beta_max(epsilon, delta_gibbs, m, L)
    a = a_of_beta(beta, m, L)
    lpw = log_acceptance_worst_case(n, dim, beta, m, L)
    return GibbsCalibration(
        n=n,
        dim=int(dim),
        epsilon=float(epsilon),
        delta_total=float(delta),
        delta_gibbs=delta_gibbs,
        delta_sampler=delta_sampler,
        gamma_target=gamma,
        norm_bound=float(norm_bound),
        lipschitz=L,
        lam=float(lam),
        lam_default=lam_default,
        m_pi=m,
        beta=beta,
        a=a,
        a_max=exact_a_max(epsilon, delta_gibbs),
        tail=tail_probability(a, epsilon),
        log_p_worst=lpw,
        max_proposals_worst=proposals_for(lpw, gamma),
        smoothness=m + beta * n * L * L / 4.0,
    )


def ula_alternative(cal: GibbsCalibration) -> dict[str, Any]:
    """What unadjusted Langevin would need for the same gamma (Vempala & Wibisono 2019 Thm 1)."""
    sch = ula_schedule(cal.m_pi, cal.smoothness, cal.dim, cal.gamma_target)
    return sch.to_json()


# ----------------------------------------------------------------------------------------------
# the potential U and its mode
# ----------------------------------------------------------------------------------------------
def _log1pexp_neg(t: FloatArray) -> FloatArray:
    """l(t) = log(1 + exp(-t)), stable."""
    return np.logaddexp(0.0, -t)


def _sigmoid(t: FloatArray) -> FloatArray:
    out = np.empty_like(t)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def potential(theta: FloatArray, yz: FloatArray, beta: float, m: float) -> float:
    """U(theta) = beta sum_i l(y_i zt_i'theta) + (m/2)|theta|^2; ``yz`` rows are y_i zt_i."""
    t = yz @ theta
    return float(beta * _log1pexp_neg(t).sum() + 0.5 * m * theta @ theta)


def potential_grad(theta: FloatArray, yz: FloatArray, beta: float, m: float) -> FloatArray:
    t = yz @ theta
    return -beta * (yz.T @ _sigmoid(-t)) + m * theta


def find_mode(
    yz: FloatArray,
    beta: float,
    m: float,
    *,
    eta: float = ETA,
    max_iter: int = 200,
    cancel: CancelToken = NEVER_CANCELLED,
) -> tuple[FloatArray, dict[str, float]]:
    """Newton's method with backtracking on the strongly convex U, until the envelope mean mu
    satisfies |mu - theta0|^2 = |grad U(theta0)|^2 / m^2 <= eta / m (what the acceptance bound
    assumes).  Strong convexity guarantees convergence; ``max_iter`` only guards against bugs.
    """
    D = yz.shape[1]
    theta = np.zeros(D)
    target = eta * m  # |grad|^2 <= eta m
    u = potential(theta, yz, beta, m)
    for it in range(max_iter):
        cancel.check()
        t = yz @ theta
        s = _sigmoid(-t)
        g = -beta * (yz.T @ s) + m * theta
        gn2 = float(g @ g)
        if gn2 <= 1e-4 * target:
            return theta, {"newton_iterations": it, "grad_norm": math.sqrt(gn2)}
        w = beta * s * (1.0 - s)
        H = (yz * w[:, None]).T @ yz + m * np.eye(D)
        step = np.linalg.solve(H, g)
        lr = 1.0
        while True:
            cand = theta - lr * step
            uc = potential(cand, yz, beta, m)
            if uc <= u - 0.25 * lr * float(g @ step) or lr < 1e-12:
                break
            lr *= 0.5
        theta, u = cand, uc
    g = potential_grad(theta, yz, beta, m)
    gn2 = float(g @ g)
    if gn2 > target:
        raise RuntimeError("Newton's method did not reach the tolerance the sampler's bound assumes")
    return theta, {"newton_iterations": max_iter, "grad_norm": math.sqrt(gn2)}


# ----------------------------------------------------------------------------------------------
# exact rejection sampler
# ----------------------------------------------------------------------------------------------
@dataclass
class SampleResult:
    theta: FloatArray
    accepted: bool
    proposals: int
    info: dict[str, Any] = field(default_factory=dict)


def sample_rejection(
    yz: FloatArray,
    cal: GibbsCalibration,
    rng: RandomSource,
    *,
    batch: int = 32,
    max_proposals: float = PROPOSAL_LIMIT,
    progress: Callable[[float, str], None] = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> SampleResult:
    """One exact draw from the Gibbs posterior by tangent-envelope rejection (module docstring),
    with the data-dependent cap K making P(no acceptance) <= gamma.

    Proposals are drawn ``batch`` at a time (vectorised); the FIRST accepted one in proposal
    order is returned, so the law is that of the sequential algorithm.  The Bernoulli
    acceptance exp(-(U - V)) is exact for the float value of U - V
    (:func:`dpstudio.engine.mechanisms.sampling.bernoulli_exp`).  If no proposal is accepted
    within the cap (probability <= gamma_bound), a draw from the prior N(0, I/m) is returned:
    the TV bound holds whatever is returned then.
    """
    from fractions import Fraction

    from dpstudio.engine.mechanisms.sampling import bernoulli_exp

    beta, m = cal.beta, cal.m_pi
    n, D = yz.shape
    if D != cal.dim or n != cal.n:
        raise ValueError("data shape does not match the calibration")
    theta0, newton = find_mode(yz, beta, m, cancel=cancel)
    t0 = yz @ theta0
    l0 = _log1pexp_neg(t0)
    d0 = -_sigmoid(-t0)  # l'(t0)
    mu = -(beta / m) * (yz.T @ d0)
    sd = 1.0 / math.sqrt(m)
    log_p = log_acceptance_lower(yz, beta, m, mu - theta0)
    # (1 - p)^K <= gamma/2 and K e^-GAP_CUTOFF <= gamma/2
    K = proposals_for(log_p, 0.5 * cal.gamma_target)
    if K * math.exp(-GAP_CUTOFF) > 0.5 * cal.gamma_target:
        raise ValueError("proposal cap too large for the rejection cut-off")
    if K > max_proposals:
        raise ValueError(
            f"the exact sampler may need {K:.3g} proposals for this data (limit "
            f"{max_proposals:.3g}); raise 'lambda' (stronger prior)"
        )
    K = int(K)
    done = 0
    while done < K:
        cancel.check()
        b = min(batch, K - done)
        props = mu[None, :] + sd * secure_normal(rng, (b, D))
        T = yz @ props.T  # n x b
        # U - V = beta sum_i [l(t) - l(t0) - l'(t0)(t - t0)]  (prior terms cancel)
        gap = beta * (_log1pexp_neg(T) - l0[:, None] - d0[:, None] * (T - t0[:, None])).sum(axis=0)
        gap = np.maximum(gap, 0.0)
        acc = np.zeros(b, dtype=bool)
        live = np.flatnonzero(gap < GAP_CUTOFF)
        if live.size:
            acc[live] = bernoulli_exp([Fraction(float(g)) for g in gap[live]], rng)
        hit = np.flatnonzero(acc)
        if hit.size:
            j = int(hit[0])
            progress(1.0, "posterior sample accepted")
            return SampleResult(
                theta=props[j],
                accepted=True,
                proposals=done + j + 1,
                info={**newton, "cap": K, "log_acceptance_lower": log_p},
            )
        done += b
        progress(min(done / K, 1.0), f"rejection sampler: {done} proposals")
    # cap reached (probability <= gamma_bound): any output keeps TV <= gamma_bound
    return SampleResult(
        theta=sd * secure_normal(rng, D),
        accepted=False,
        proposals=K,
        info={**newton, "cap": K, "log_acceptance_lower": log_p},
    )


def sample_ula(
    yz: FloatArray,
    cal: GibbsCalibration,
    rng: RandomSource,
    *,
    max_steps: int,
    progress: Callable[[float, str], None] = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> SampleResult:
    """ULA with the Vempala-Wibisono schedule for gamma_target; refuses when it needs more than
    ``max_steps`` steps (it always does at realistic delta: see :mod:`.langevin`)."""
    from dpstudio.engine.models.langevin import ula_sample

    theta0, newton = find_mode(yz, cal.beta, cal.m_pi, cancel=cancel)
    gnorm = newton["grad_norm"] * (1 + 1e-6)
    sch = ula_schedule(cal.m_pi, cal.smoothness, cal.dim, cal.gamma_target, start_grad_norm=gnorm)
    if sch.iterations > max_steps:
        raise ValueError(
            f"unadjusted Langevin needs {sch.iterations:.3g} steps (step {sch.step:.3g}) to be "
            f"within TV {cal.gamma_target:.3g} of the posterior (Vempala & Wibisono 2019 Thm 1); "
            f"limit {max_steps:.3g}: use the exact rejection sampler"
        )
    theta = ula_sample(
        lambda th: potential_grad(th, yz, cal.beta, cal.m_pi), theta0, sch, rng, progress=progress, cancel=cancel
    )
    return SampleResult(theta=theta, accepted=True, proposals=sch.iterations, info={**newton, "ula": sch.to_json()})


def snap(values: npt.ArrayLike, grid: float = COEF_GRID) -> FloatArray:
    """Round to the public grid (post-processing; removes float low-order bits)."""
    return np.rint(np.asarray(values, dtype=np.float64) / grid) * grid
