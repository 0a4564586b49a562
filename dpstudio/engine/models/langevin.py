"""Secure Gaussian noise for samplers, and the unadjusted Langevin algorithm (ULA) with a
published total-variation bound.

Every random bit of a DP sampler is part of the mechanism, so all Gaussians here are built
from :class:`~dpstudio.engine.rng.RandomSource` uniforms (the OS CSPRNG unless the recipe fixes
a seed) by the Box-Muller transform on 53-bit uniforms.  This is a floating-point Gaussian:
it is not an exact sampler of N(0, 1) (values lie on a data-independent but irregular float
set), which the release modules document; the released coefficients are additionally rounded
to a public grid (snapping, Mironov CCS 2012) so their low-order bits carry no data.

ULA and its guarantee (used only when its schedule is affordable — see below):

    x_{k+1} = x_k - h grad U(x_k) + sqrt(2 h) xi_k,   xi_k ~ N(0, I_D)

Vempala & Wibisono 2019 ("Rapid convergence of the unadjusted Langevin algorithm:
isoperimetry suffices", NeurIPS), Theorem 1: if nu = e^{-U} satisfies a log-Sobolev inequality
with constant alpha (true with alpha = m when U is m-strongly convex, Bakry-Emery) and U is
M-smooth, then for any step 0 < h <= alpha / (4 M^2)

    KL(rho_k | nu) <= e^{-alpha h k} KL(rho_0 | nu) + 8 h D M^2 / alpha.

Started at rho_0 = N(x0, I/M), KL(rho_0 | nu) <= (D/2) log(M/alpha) + |grad U(x0)|^2/(2 alpha)
(ibid., Lemma 1 for x0 = x*, the minimiser; the last term covers an inexact minimiser:
E_rho0 U <= U(x0) + D/2 by smoothness, U(x0) <= U(x*) + |grad U(x0)|^2/(2 alpha) by strong
convexity, and e^{-U(x*)} >= (alpha/2pi)^{D/2} for a normalised alpha-strongly log-concave nu).
Pinsker: TV <= sqrt(KL / 2).
:func:`ula_schedule` picks h and k to make TV <= gamma.  Because the bias term is linear in h,
TV ~ sqrt(h): the number of steps grows like 1/gamma^2, and for the gamma a DP release needs
(~1e-7 at delta = 1e-5) it is astronomically large (Dwivedi, Chen, Wainwright & Yu 2019,
JMLR 20(183), abstract: ULA needs O(kappa^2 d / gamma^2) steps for TV error gamma).  That is why
the Gibbs-posterior release samples by exact rejection (:mod:`.gibbs_logistic`) and keeps ULA
only for schedules under a step limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, no_progress
from dpstudio.engine.rng import RandomSource

FloatArray = npt.NDArray[np.float64]

_TWO_PI = 2.0 * math.pi


def secure_normal(rng: RandomSource, shape: int | tuple[int, ...]) -> FloatArray:
    """Standard normal draws by Box-Muller on 53-bit uniforms from ``rng`` (vectorised).

    ``u1`` lies in (0, 1] (so log is finite), ``u2`` in [0, 1); both are uniform on the
    2**-53 grid.  The radius is then bounded by sqrt(2 * 53 log 2) ~ 8.57: tails beyond 8.5
    sigma (probability ~1e-17) are truncated — noted in the documentation of every user.
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    pairs = (n + 1) // 2
    w = rng.uint64(2 * pairs) >> np.uint64(11)
    u1 = (w[:pairs].astype(np.float64) + 1.0) * (1.0 / 2**53)  # (0, 1]
    u2 = w[pairs:].astype(np.float64) * (1.0 / 2**53)  # [0, 1)
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.empty(2 * pairs, dtype=np.float64)
    z[:pairs] = r * np.cos(_TWO_PI * u2)
    z[pairs:] = r * np.sin(_TWO_PI * u2)
    return z[:n].reshape(shape)


@dataclass(frozen=True)
class ULASchedule:
    """Step size, number of steps and the TV bound they give (Vempala & Wibisono 2019, Thm 1)."""

    step: float
    iterations: int
    kl_initial: float
    kl_bound: float
    tv_bound: float
    alpha: float
    smoothness: float
    dimension: int

    def to_json(self) -> dict[str, Any]:
        return {
            "algorithm": "unadjusted Langevin (ULA), start N(x*, I/M)",
            "bound": "Vempala & Wibisono 2019, Thm 1 (KL) + Lemma 1 (start) + Pinsker",
            "step": self.step,
            "iterations": self.iterations,
            "kl_initial": self.kl_initial,
            "kl_bound": self.kl_bound,
            "tv_bound": self.tv_bound,
            "alpha": self.alpha,
            "smoothness": self.smoothness,
            "dimension": self.dimension,
        }


def ula_initial_kl(alpha: float, smoothness: float, dim: int, start_grad_norm: float = 0.0) -> float:
    """KL(N(x0, I/M) | nu) <= (D/2) log(M/alpha) + |grad U(x0)|^2 / (2 alpha) (module docstring)."""
    return 0.5 * dim * math.log(smoothness / alpha) + start_grad_norm**2 / (2.0 * alpha)


def ula_kl_bound(
    alpha: float, smoothness: float, dim: int, step: float, iterations: npt.ArrayLike, start_grad_norm: float = 0.0
) -> FloatArray:
    """Vempala & Wibisono 2019 Thm 1 with the Lemma 1 start: KL after ``iterations`` steps."""
    if not (0 < step <= alpha / (4.0 * smoothness**2) * (1 + 1e-12)):
        raise ValueError("VW19 Thm 1 needs 0 < step <= alpha / (4 M^2)")
    kl0 = ula_initial_kl(alpha, smoothness, dim, start_grad_norm)
    k = np.asarray(iterations, dtype=float)
    return np.exp(-alpha * step * k) * kl0 + 8.0 * step * dim * smoothness**2 / alpha


def ula_schedule(alpha: float, smoothness: float, dim: int, gamma: float, start_grad_norm: float = 0.0) -> ULASchedule:
    """The step and the number of ULA steps after which TV(law, target) <= ``gamma``.

    Splits the KL budget 2 gamma^2 (Pinsker) equally between the bias ``8 h D M^2/alpha`` and
    the contraction ``e^{-alpha h k} KL_0``; ``iterations`` may be astronomically large (a
    Python int, not capped): callers compare it with their own limit.
    """
    if not (alpha > 0 and smoothness >= alpha and dim >= 1 and 0 < gamma < 1):
        raise ValueError("need 0 < alpha <= smoothness, dim >= 1 and 0 < gamma < 1")
    kl_budget = 2.0 * gamma * gamma
    kl0 = ula_initial_kl(alpha, smoothness, dim, start_grad_norm)
    step = min(alpha / (4.0 * smoothness**2), 0.5 * kl_budget * alpha / (8.0 * dim * smoothness**2))
    if kl0 <= 0.5 * kl_budget:
        iters = 1
    else:
        iters = math.ceil(math.log(kl0 / (0.5 * kl_budget)) / (alpha * step))
    kl = float(ula_kl_bound(alpha, smoothness, dim, step, iters, start_grad_norm))
    return ULASchedule(
        step=step,
        iterations=int(iters),
        kl_initial=kl0,
        kl_bound=kl,
        tv_bound=math.sqrt(kl / 2.0),
        alpha=alpha,
        smoothness=smoothness,
        dimension=dim,
    )


def ula_sample(
    grad: Callable[[FloatArray], FloatArray],
    x_star: FloatArray,
    schedule: ULASchedule,
    rng: RandomSource,
    *,
    progress: Callable[[float, str], None] = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    check_every: int = 256,
) -> FloatArray:
    """Run ULA from N(x0, I/M) for ``schedule.iterations`` steps; returns the last iterate.

    ``schedule`` must have been computed with ``start_grad_norm >= |grad U(x_star)|``.

    ``grad(x)`` is the gradient of the potential U.  Progress is reported and the cancel
    token polled every ``check_every`` steps.  All Gaussians come from :func:`secure_normal`.
    """
    dim = x_star.size
    h = schedule.step
    x = x_star + secure_normal(rng, dim) / math.sqrt(schedule.smoothness)
    scale = math.sqrt(2.0 * h)
    k_total = schedule.iterations
    done = 0
    while done < k_total:
        cancel.check()
        block = min(check_every, k_total - done)
        noise = secure_normal(rng, (block, dim)) * scale
        for j in range(block):
            x = x - h * grad(x) + noise[j]
        done += block
        progress(done / k_total, f"Langevin step {done}/{k_total}")
    return x
