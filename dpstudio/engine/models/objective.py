"""DP logistic regression by objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011,
Alg. 2; the (eps, delta) Gaussian version after Kifer, Smith & Thakurta 2012; an approximate
minimiser accounted for after Iyengar et al. 2019; docs/models.md, "DP logistic regression by
objective perturbation").

Model.  Rows u_i = y_i zt_i with zt_i = (z_i, 1), ||z_i|| <= R (public norm bound), y_i in
{-1, +1}, so ||u_i|| <= zeta = sqrt(R^2 + 1) (the intercept adds the 1, as for the Gibbs model:
docs/errata.md E9, E17).  Public class weights w_i <= w (option; 1 by default).  Logistic loss
l(t) = log(1 + e^-t): |l'| <= 1 and 0 <= l'' <= c = 1/4.  The released theta minimises

    F_b(theta) = sum_i w_i l(u_i' theta) + (m/2) |theta|^2 + b' theta,     m = n lam (+ Delta)

(Chaudhuri et al. 2011's J scaled by n).  The map b -> theta is a bijection:
b = -grad G_D(theta), G_D = sum_i w_i l(u_i' theta) + (m/2)|theta|^2, with Jacobian
H_D(theta) = sum_i w_i l''_i u_i u_i' + m I.

Privacy (replace-one neighbours D, D': record k, u -> u').  The density of the output is
p_b(b_D(theta)) det H_D(theta), so the privacy loss at theta is

* Jacobian term.  H_D = B + h u u', H_D' = B + h' u'u'' with B >= m I (the other n - 1 rows and
  the ridge), 0 <= h, h' <= w c, so det H_D / det H_D' <= det(B + h u u')/det B
  = 1 + h u'B^-1 u <= 1 + w c zeta^2 / m.  eps_J = log(1 + w c zeta^2 / m) (Chaudhuri et al.
  2011 bound the ratio by the square (1 + c/(n Lambda))^2: valid, twice the cost).
* Noise term.  b_D'(theta) = b_D(theta) + v(theta), v = a u - a' u' with a, a' in [-w, 0]:
  ||v|| <= 2 w zeta = 2 s.  THE REPLACE-ONE FACTOR 2 ENTERS HERE (add/remove: s).
  - pure ("laplace"; Chaudhuri et al. 2011 Alg. 2): density of b ∝ exp(-eps_n ||b|| / (2 s));
    ||b + v|| - ||b|| <= 2 s gives a log-ratio <= eps_n.  Sampled as direction x norm: the
    direction a normalised N(0, I) vector, the norm ~ Gamma(D, 2 s / eps_n) (the density of
    ||b|| is ∝ r^{D-1} e^{-r eps_n/(2s)}), drawn exactly as 2s/eps_n times a sum of D standard
    exponentials -log U (U secure uniforms on the 2^-53 grid).
  - Gaussian ("gaussian"; the (eps, delta) version of Kifer, Smith & Thakurta 2012): b ~
    N(0, sigma^2 I).  log p(b)/p(b + v) = (||v||^2 + 2<b, v>)/(2 sigma^2) and, with
    g1 = <b, u>/(sigma ||u||), g2 = <b, u'>/(sigma ||u'||) ~ N(0, 1) (the directions u, u' do not
    depend on theta: logistic regression is a linear model) and a, a' <= 0,
    <b, v> = a <b, u> - a' <b, u'> <= s sigma (max(0, -g1) + max(0, g2)).  That sum exceeds 2t
    only if -g1 + g2 > 2t (variance 2 - 2 rho <= 4), -g1 > 2t or g2 > 2t, so the log-ratio is
    <= 2 s^2/sigma^2 + 2 s t/sigma except with probability Phi(-t) + 2 Phi(-2t) =: delta_n.
    sigma is the smallest value with 2 s^2/sigma^2 + 2 s t/sigma <= eps_n
    (:func:`gaussian_noise_epsilon`).  Kifer et al. 2012 state their Gaussian variance for the
    general case; this is the direct computation for a linear model with the replace-one
    shift 2s.
* Total: P(loss > eps_J + eps_n) <= delta_n, hence (eps_J + eps_n, delta_n)-DP.

Ridge (Chaudhuri et al. 2011 Alg. 2, with the single Jacobian factor): if
eps_J(n lam) <= eps/2, m = n lam and eps_n = eps - eps_J; else m = w c zeta^2/(e^{eps/2} - 1)
(the extra ridge Delta = m - n lam), eps_J = eps_n = eps/2.  With no lam given, m is chosen to
minimise the PUBLIC predicted excess risk (E||b||^2 + m^2 B^2)/(2(m + h)) (B a public reference
norm of the coefficients, h = CURVATURE_COEF n / D a public curvature prior; h = 0 is the worst
case E||b||^2/(2m) + m B^2/2; :func:`predicted_excess`).  Any ridge gives the same guarantee.

Approximate minimiser (Iyengar, Near, Song, Thakkar, Thakurta & Wang 2019, "approximate minima
perturbation").  Newton's method stops at theta~ with ||grad F_b(theta~)|| <= m r / 2 (float
evaluation; the bound claimed is m r, leaving a rounding allowance far above the error of the
gradient sum), so ||theta~ - theta*|| <= r by m-strong convexity.  Given theta* (and so b) the
optimiser is deterministic: theta~ = theta* + e(D, b) with ||e|| <= r, and for neighbours the
means differ by <= 2 r.  Releasing theta~ + N(0, sigma_t^2 I) (analytic Gaussian, Balle & Wang
2018, sensitivity 2r at (eps_t, delta_t)) — or gamma-norm noise of scale 2r/eps_t when pure —
is an adaptive composition with the release of theta*: (eps_J + eps_n + eps_t,
delta_n + delta_t).  The share (eps_t, delta_t) is ``tolerance_fraction`` (1 %) of the budget.

Released coefficients are snapped to the public grid of :func:`gibbs_logistic.snap`.  Floating
point: Gaussians are Box-Muller on 53-bit uniforms (:func:`langevin.secure_normal`, tails beyond
~8.6 sigma truncated), exponentials are -log U on the same grid (tails beyond ~36.7 truncated);
as for the Gibbs sampler these are documented approximations of the continuous laws.

Multiclass (one-vs-rest): K binary problems; a replaced record changes its row in every one of
them (its features change in all K), so the K releases compose: each gets (eps/K, delta/K)
(basic composition; docs/models.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr, ndtri

from dpstudio.engine.mechanisms.gaussian import analytic_gaussian_sigma
from dpstudio.engine.models.gibbs_logistic import lipschitz_constant, snap
from dpstudio.engine.models.langevin import secure_normal
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken
from dpstudio.engine.rng import RandomSource

FloatArray = npt.NDArray[np.float64]

#: sup of l'' for the logistic loss (Chaudhuri et al. 2011, Corollary 11: c = 1/4).
LOGISTIC_SMOOTHNESS = 0.25
#: Share of each problem's (eps, delta) paying for the optimiser's tolerance noise.
DEFAULT_TOLERANCE_FRACTION = 0.01
#: Public bound r on the optimiser's displacement ||theta~ - theta*|| (coefficient units).
DISPLACEMENT_TOLERANCE = 1e-7
#: Public reference norm of good coefficients per unit of D / R (sets the default ridge).
REFERENCE_COEF = 1.0
#: Public curvature prior per unit of n / D: the data's own curvature floor h = CURVATURE_COEF n / D
#: assumed by the default ridge (0 = the worst case, no curvature; chosen on validation rows carved
#: from training rows, benchmarks/RESULTS_model.md).
CURVATURE_COEF = 0.005
NOISE_KINDS = ("auto", "gaussian", "laplace")


# ----------------------------------------------------------------------------------------------
# calibration (public numbers only)
# ----------------------------------------------------------------------------------------------
def feature_norm(norm_bound: float) -> float:
    """zeta = sqrt(R^2 + 1): ||(z, 1)|| for ||z|| <= R (the intercept's 1 included)."""
    return lipschitz_constant(norm_bound)


def jacobian_epsilon(ridge: float, hess_bound: float) -> float:
    """eps_J = log(1 + w c zeta^2 / m): the Jacobian ratio of one replaced record."""
    return math.log1p(hess_bound / ridge)


def ridge_for_jacobian(eps_j: float, hess_bound: float) -> float:
    """Smallest m with log(1 + hess_bound/m) <= eps_j (checked in floating point)."""
    m = hess_bound / math.expm1(eps_j)
    while jacobian_epsilon(m, hess_bound) > eps_j:
        m = math.nextafter(m, math.inf)
    return m


def gaussian_tail_probability(t: float) -> float:
    """P(max(0, -g1) + max(0, g2) > 2t) <= Phi(-t) + 2 Phi(-2t) for standard normals g1, g2
    with any correlation (module docstring)."""
    return float(ndtr(-t) + 2.0 * ndtr(-2.0 * t))


def gaussian_tail(delta_n: float) -> float:
    """Smallest t (to float precision, rounded up) with Phi(-t) + 2 Phi(-2t) <= delta_n."""
    lo, hi = float(-ndtri(delta_n)), float(-ndtri(delta_n / 3.0))  # bracket: Phi(-t) <= . <= 3 Phi(-t)
    while gaussian_tail_probability(hi) > delta_n:
        hi += 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_tail_probability(mid) <= delta_n:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    return hi


def gaussian_noise_epsilon(sigma: float, grad_bound: float, delta_n: float) -> float:
    """Noise part of the privacy loss, exceeded with probability <= delta_n:
    2 s^2/sigma^2 + 2 s t/sigma (replace-one: shift <= 2s, two inner products)."""
    s, t = grad_bound, gaussian_tail(delta_n)
    return 2.0 * s * s / sigma**2 + 2.0 * s * t / sigma


def gaussian_sigma(eps_n: float, delta_n: float, grad_bound: float) -> float:
    """Smallest sigma with :func:`gaussian_noise_epsilon` <= eps_n: s/x with
    2x^2 + 2tx = eps_n, x = (sqrt(t^2 + 2 eps_n) - t)/2 = eps_n/(sqrt(t^2 + 2 eps_n) + t)."""
    t = gaussian_tail(delta_n)
    x = eps_n / (math.sqrt(t * t + 2.0 * eps_n) + t)
    sigma = grad_bound / x
    while gaussian_noise_epsilon(sigma, grad_bound, delta_n) > eps_n:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def laplace_scale(eps_n: float, grad_bound: float) -> float:
    """Scale k of the density ∝ exp(-||b||/k): k = 2 s / eps_n (replace-one shift 2s)."""
    return 2.0 * grad_bound / eps_n


def expected_noise_norm2(kind: str, scale: float, dim: int) -> float:
    """E||b||^2: D sigma^2 (Gaussian) or D (D + 1) k^2 (norm ~ Gamma(D, k))."""
    return dim * scale**2 if kind == "gaussian" else dim * (dim + 1) * scale**2


def default_reference_norm(dim: int, norm_bound: float) -> float:
    """Public reference coefficient norm B = REFERENCE_COEF * D / R: coefficients of order 1 per
    feature in the [-1, 1] scale are of order sqrt(D)/R each in the z scale."""
    return REFERENCE_COEF * dim / float(norm_bound)


@dataclass(frozen=True)
class ObjectiveCalibration:
    """Every public number of an objective-perturbation release (one binary problem)."""

    n: int
    dim: int
    problems: int  # 1 (binary) or K (one-vs-rest), each with this calibration
    epsilon: float  # the whole release's
    delta: float
    epsilon_problem: float
    delta_problem: float
    noise: str  # "gaussian" | "laplace"
    norm_bound: float
    feature_norm: float  # zeta
    weight_max: float
    grad_bound: float  # s = w zeta
    hess_bound: float  # w c zeta^2
    lam: float
    lam_default: bool
    ridge: float  # m = n lam + extra
    extra_ridge: float  # Chaudhuri et al.'s Delta
    eps_jacobian: float
    eps_noise: float
    delta_noise: float
    noise_scale: float  # sigma or k
    eps_tolerance: float
    delta_tolerance: float
    displacement: float  # r
    tolerance_scale: float  # sigma_t or k_t
    reference_norm: float
    curvature: float  # public curvature prior h of the ridge rule
    predicted_excess: float  # per record, public

    @property
    def proven_epsilon(self) -> float:
        return self.problems * (self.eps_jacobian + self.eps_noise + self.eps_tolerance)

    @property
    def proven_delta(self) -> float:
        return self.problems * (self.delta_noise + self.delta_tolerance)

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "dimension": self.dim,
            "problems": self.problems,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_per_problem": self.epsilon_problem,
            "delta_per_problem": self.delta_problem,
            "noise": self.noise,
            "norm_bound": self.norm_bound,
            "feature_norm": self.feature_norm,
            "weight_max": self.weight_max,
            "gradient_bound": self.grad_bound,
            "smoothness_c": LOGISTIC_SMOOTHNESS,
            "hessian_bound": self.hess_bound,
            "lambda": self.lam,
            "lambda_default": self.lam_default,
            "ridge_m": self.ridge,
            "extra_ridge": self.extra_ridge,
            "epsilon_jacobian": self.eps_jacobian,
            "epsilon_noise": self.eps_noise,
            "delta_noise": self.delta_noise,
            "noise_scale": self.noise_scale,
            "epsilon_tolerance": self.eps_tolerance,
            "delta_tolerance": self.delta_tolerance,
            "displacement_bound": self.displacement,
            "tolerance_noise_scale": self.tolerance_scale,
            "reference_norm": self.reference_norm,
            "curvature_prior": self.curvature,
            "predicted_excess_risk": self.predicted_excess,
            "proven_epsilon": self.proven_epsilon,
            "proven_delta": self.proven_delta,
        }


def _noise_for(kind: str, eps_n: float, delta_n: float, s: float) -> float:
    return gaussian_sigma(eps_n, delta_n, s) if kind == "gaussian" else laplace_scale(eps_n, s)


def default_curvature(n: int, dim: int) -> float:
    """Public curvature prior h = CURVATURE_COEF * n / D: the loss's curvature floor that the
    default ridge assumes in the directions the noise hurts (a prior, not read from the data)."""
    return CURVATURE_COEF * n / dim


def predicted_excess(noise_norm2: float, ridge: float, reference_norm: float, curvature: float = 0.0) -> float:
    """Public predicted excess of the (sum) objective with a public curvature prior h:
    (E||b||^2 + m^2 B^2) / (2 (m + h)) (the objective is (m + h)-strongly convex: the noise's
    excess E||b||^2/(2(m + h)), the ridge's shift m B at a reference solution of norm B costs
    (m B)^2/(2(m + h))).  h = 0 is the worst case E||b||^2/(2m) + m B^2/2; the minimiser over m
    is sqrt(h^2 + E||b||^2/B^2) - h (for fixed E||b||^2)."""
    return (noise_norm2 + (ridge * reference_norm) ** 2) / (2.0 * (ridge + curvature))


def calibrate(
    n: int,
    dim: int,
    epsilon: float,
    delta: float,
    *,
    norm_bound: float = 1.0,
    lam: float | None = None,
    noise: str = "auto",
    problems: int = 1,
    weight_max: float = 1.0,
    tolerance_fraction: float = DEFAULT_TOLERANCE_FRACTION,
    reference_norm: float | None = None,
    displacement: float = DISPLACEMENT_TOLERANCE,
    curvature: float | None = None,
) -> ObjectiveCalibration:
    """Split the budget, pick the noise kind (smaller E||b||^2 when "auto") and the ridge."""
    if not (epsilon > 0 and 0 <= delta < 1):
        raise ValueError(f"objective perturbation needs epsilon > 0 and 0 <= delta < 1, got {epsilon!r}, {delta!r}")
    if noise not in NOISE_KINDS:
        raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}")
    if noise == "gaussian" and delta <= 0:
        raise ValueError("Gaussian objective perturbation needs delta > 0")
    if not (0 < tolerance_fraction < 1):
        raise ValueError(f"tolerance_fraction must lie in (0, 1), got {tolerance_fraction!r}")
    if not (norm_bound > 0 and weight_max > 0 and displacement > 0):
        raise ValueError("norm_bound, weight_max and displacement must be > 0")
    n, dim, problems = int(n), int(dim), int(problems)
    if n < 1 or dim < 1 or problems < 1:
        raise ValueError("need n, dim and problems >= 1")
    eps_p, delta_p = epsilon / problems, delta / problems
    eps_t = tolerance_fraction * eps_p
    eps_o = eps_p - eps_t
    zeta = feature_norm(norm_bound)
    s = weight_max * zeta
    hb = weight_max * LOGISTIC_SMOOTHNESS * zeta * zeta
    B = default_reference_norm(dim, norm_bound) if reference_norm is None else float(reference_norm)
    h = default_curvature(n, dim) if curvature is None else float(curvature)
    if not (h >= 0 and math.isfinite(h)):
        raise ValueError(f"curvature must be >= 0, got {curvature!r}")
    kinds = (
        ("gaussian", "laplace") if (noise == "auto" and delta > 0) else ("laplace",) if noise == "auto" else (noise,)
    )

    def split(kind: str) -> tuple[float, float]:
        """(delta_noise, delta_tolerance) of one problem for this noise kind."""
        if kind == "laplace":
            return 0.0, 0.0
        return delta_p * (1.0 - tolerance_fraction), delta_p * tolerance_fraction

    def at(kind: str, m: float) -> tuple[float, float, float]:
        """(eps_J, eps_n, scale) at ridge m (requires eps_J < eps_o)."""
        ej = jacobian_epsilon(m, hb)
        en = eps_o - ej
        return ej, en, _noise_for(kind, en, split(kind)[0], s)

    best: tuple[float, str, float, float] | None = None  # (score, kind, m, extra)
    m_half = ridge_for_jacobian(eps_o / 2.0, hb)  # eps_J = eps_o / 2
    for kind in kinds:
        if lam is not None:
            m0 = n * float(lam)
            if not (m0 > 0):
                raise ValueError(f"lambda must be > 0, got {lam!r}")
            m = m0 if jacobian_epsilon(m0, hb) <= eps_o / 2.0 else m_half
            cands = [(m, m - m0 if m > m0 else 0.0)]
        else:
            # public grid of ridges from the Jacobian's eps_o/2 point upward (Delta = 0: lam = m/n)
            cands = [(m_half * 2.0 ** (k / 4.0), 0.0) for k in range(0, 161)]
        for m, extra in cands:
            _, _, scale = at(kind, m)
            score = predicted_excess(expected_noise_norm2(kind, scale, dim), m, B, h)
            if best is None or score < best[0]:
                best = (score, kind, m, extra)
    assert best is not None
    score, kind, m, extra = best
    ej, en, scale = at(kind, m)
    d_n, d_t = split(kind)
    tol_scale = (
        analytic_gaussian_sigma(eps_t, d_t, 2.0 * displacement) if kind == "gaussian" else (2.0 * displacement / eps_t)
    )
    return ObjectiveCalibration(
        n=n,
        dim=dim,
        problems=problems,
        epsilon=float(epsilon),
        delta=float(delta),
        epsilon_problem=eps_p,
        delta_problem=delta_p,
        noise=kind,
        norm_bound=float(norm_bound),
        feature_norm=zeta,
        weight_max=float(weight_max),
        grad_bound=s,
        hess_bound=hb,
        lam=float(lam) if lam is not None else m / n,
        lam_default=lam is None,
        ridge=m,
        extra_ridge=extra,
        eps_jacobian=ej,
        eps_noise=en,
        delta_noise=d_n,
        noise_scale=scale,
        eps_tolerance=eps_t,
        delta_tolerance=d_t,
        displacement=float(displacement),
        tolerance_scale=tol_scale,
        reference_norm=B,
        curvature=h,
        predicted_excess=score / n,
    )


# ----------------------------------------------------------------------------------------------
# noise
# ----------------------------------------------------------------------------------------------
def secure_exponential(rng: RandomSource, size: int) -> FloatArray:
    """Standard exponentials -log U, U uniform on (0, 1] on the 2^-53 grid (secure source)."""
    w = rng.uint64(int(size)) >> np.uint64(11)
    u = (w.astype(np.float64) + 1.0) * (1.0 / 2**53)
    out: FloatArray = -np.log(u)
    return out


def gamma_norm_noise(rng: RandomSource, dim: int, scale: float) -> FloatArray:
    """A draw of density ∝ exp(-||b||/scale) on R^dim: uniform direction (normalised secure
    Gaussian) times a Gamma(dim, scale) norm (a sum of dim exponentials: dim is an integer)."""
    g = secure_normal(rng, dim)
    nrm = float(np.linalg.norm(g))
    while nrm == 0.0:  # probability 0 in exact arithmetic; keeps the direction defined
        g = secure_normal(rng, dim)
        nrm = float(np.linalg.norm(g))
    radius = scale * float(secure_exponential(rng, dim).sum())
    out: FloatArray = g * (radius / nrm)
    return out


def draw_noise(rng: RandomSource, kind: str, dim: int, scale: float) -> FloatArray:
    if kind == "gaussian":
        out: FloatArray = scale * secure_normal(rng, dim)
        return out
    return gamma_norm_noise(rng, dim, scale)


# ----------------------------------------------------------------------------------------------
# the perturbed objective and its minimiser
# ----------------------------------------------------------------------------------------------
def _sigmoid(t: FloatArray) -> FloatArray:
    out = np.empty_like(t)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def objective(theta: FloatArray, u: FloatArray, w: FloatArray, m: float, b: FloatArray) -> float:
    """F_b(theta) = sum_i w_i log(1 + exp(-u_i'theta)) + (m/2)|theta|^2 + b'theta."""
    t = u @ theta
    return float(w @ np.logaddexp(0.0, -t) + 0.5 * m * theta @ theta + b @ theta)


def gradient(theta: FloatArray, u: FloatArray, w: FloatArray, m: float, b: FloatArray) -> FloatArray:
    t = u @ theta
    g: FloatArray = -(u.T @ (w * _sigmoid(-t))) + m * theta + b
    return g


def minimise(
    u: FloatArray,
    w: FloatArray,
    m: float,
    b: FloatArray,
    grad_tol: float,
    *,
    max_iter: int = 500,
    cancel: CancelToken = NEVER_CANCELLED,
) -> tuple[FloatArray, dict[str, float]]:
    """Newton's method with backtracking until ||grad F_b|| <= grad_tol (F_b is m-strongly
    convex, so it converges; ``max_iter`` only guards against bugs)."""
    D = u.shape[1]
    theta = -b / m  # the minimiser without data: a good start when the noise dominates
    f = objective(theta, u, w, m, b)
    for it in range(max_iter):
        cancel.check()
        t = u @ theta
        sg = _sigmoid(-t)
        g = -(u.T @ (w * sg)) + m * theta + b
        gn = float(np.linalg.norm(g))
        if gn <= grad_tol:
            return theta, {"newton_iterations": it, "grad_norm": gn}
        h = w * sg * (1.0 - sg)
        H = (u * h[:, None]).T @ u + m * np.eye(D)
        step = np.linalg.solve(H, g)
        dec = float(g @ step)  # the Newton decrement squared: predicted decrease x 2
        if dec <= 1e-9 * (abs(f) + 1.0):
            # inside the quadratic region, where F's float differences no longer show a decrease:
            # the full Newton step (convergence is judged by the gradient, never by F)
            theta = theta - step
            f = objective(theta, u, w, m, b)
            continue
        lr = 1.0
        while True:
            cand = theta - lr * step
            fc = objective(cand, u, w, m, b)
            if fc <= f - 0.25 * lr * dec or lr < 1e-12:
                break
            lr *= 0.5
        theta, f = cand, fc
    g = gradient(theta, u, w, m, b)
    gn = float(np.linalg.norm(g))
    if gn > grad_tol:
        raise RuntimeError(
            f"Newton's method stopped at gradient norm {gn:.3g} above the tolerance {grad_tol:.3g} "
            "the guarantee accounts for"
        )
    return theta, {"newton_iterations": max_iter, "grad_norm": gn}


@dataclass
class ObjectiveResult:
    theta: FloatArray  # snapped, released
    info: dict[str, Any]


def release(
    u: FloatArray,
    cal: ObjectiveCalibration,
    rng: RandomSource,
    *,
    weights: FloatArray | None = None,
    cancel: CancelToken = NEVER_CANCELLED,
    noise_multiplier: float = 1.0,
) -> ObjectiveResult:
    """One binary problem: draw b, minimise F_b to the accounted tolerance, add the tolerance
    noise, snap.  ``u`` rows are y_i (z_i, 1); ``weights`` the public class weights of the rows
    (<= cal.weight_max).  ``noise_multiplier`` exists for the audit's broken variant only."""
    n, D = u.shape
    if D != cal.dim or n != cal.n:
        raise ValueError("data shape does not match the calibration")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or np.any(w < 0) or np.any(w > cal.weight_max):
        raise ValueError("row weights must lie in [0, weight_max]")
    norms = np.linalg.norm(u, axis=1)
    if np.any(norms > cal.feature_norm * (1 + 1e-12)):
        raise ValueError("a row exceeds the public norm bound sqrt(R^2 + 1)")
    b = draw_noise(rng, cal.noise, D, cal.noise_scale * noise_multiplier)
    theta, info = minimise(u, w, cal.ridge, b, 0.5 * cal.ridge * cal.displacement, cancel=cancel)
    extra = draw_noise(rng, cal.noise, D, cal.tolerance_scale)
    return ObjectiveResult(theta=snap(theta + extra), info=info)


def privacy_loss_bound(cal: ObjectiveCalibration) -> tuple[float, float]:
    """(epsilon, delta) proven for ``cal`` (all problems composed)."""
    return cal.proven_epsilon, cal.proven_delta


def exact_privacy_loss(
    theta: FloatArray,
    u: FloatArray,
    u_prime: FloatArray,
    cal: ObjectiveCalibration,
    *,
    weights: FloatArray | None = None,
    weights_prime: FloatArray | None = None,
    noise_scale: float | None = None,
) -> FloatArray:
    """log p_D(theta)/p_D'(theta) of the exact minimiser's law, for outputs ``theta`` (rows):
    log p_b(b_D(theta)) - log p_b(b_D'(theta)) + log det H_D(theta) - log det H_D'(theta), with
    b_D(theta) = -grad G_D(theta) (for the audit; ``noise_scale`` overrides the calibration's:
    the law that actually drew).  The tolerance noise is ignored (it is ~1e-7)."""
    scale = cal.noise_scale if noise_scale is None else float(noise_scale)
    th = np.atleast_2d(np.asarray(theta, dtype=np.float64))
    out = np.empty(th.shape[0])
    w = np.ones(u.shape[0]) if weights is None else weights
    wp = np.ones(u_prime.shape[0]) if weights_prime is None else weights_prime
    eye = np.eye(u.shape[1])
    for i, t in enumerate(th):
        lp = []
        for rows, ww in ((u, w), (u_prime, wp)):
            s = _sigmoid(-(rows @ t))
            b = (rows.T @ (ww * s)) - cal.ridge * t  # b = -grad G_D(theta)
            H = (rows * (ww * s * (1.0 - s))[:, None]).T @ rows + cal.ridge * eye
            logdet = float(np.linalg.slogdet(H)[1])
            if cal.noise == "gaussian":
                logp = -float(b @ b) / (2.0 * scale**2)
            else:
                logp = -float(np.linalg.norm(b)) / scale
            lp.append(logp + logdet)
        out[i] = lp[0] - lp[1]
    return out
