"""Gaussian mechanism: analytic calibration (Balle & Wang 2018) and the discrete Gaussian.

* :func:`analytic_gaussian_sigma` — Balle & Wang 2018 ("Improving the Gaussian mechanism for
  differential privacy", ICML), Thm 8 / Alg. 1: N(0, sigma^2) noise on a query with L2
  sensitivity Delta is (eps, delta)-DP iff
      Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta) <= delta.
  We bisect on sigma over this exact condition (the left side decreases in sigma) and return
  the valid end of the bracket.  Valid for every eps (unlike the classic
  sqrt(2 ln(1.25/delta)) Delta/eps, which also needs eps < 1).
* :class:`GaussianMechanism` — 1-D bounded numbers: clip, snap to a public grid, add the
  discrete Gaussian N_Z(0, sigma^2) (CKS 2020 Alg. 3 law, exact sampler).  Calibrated with
  CKS 2020 Thm 7's exact delta for the discrete Gaussian and integer shift s:
      delta_s = P[X > eps sigma^2/s - s/2] - e^eps P[X > eps sigma^2/s + s/2],  X ~ N_Z(0, sigma^2),
  maximised over all shifts 1 <= s <= D (D = diameter in grid steps), summed over the support.
  RDP: alpha D^2/(2 sigma^2), the same as the continuous Gaussian (CKS 2020 Prop. 5 / Cor. 9,
  1/2 (D/sigma)^2-concentrated DP).  gdp_mu is left None: mu-GDP is proven for the continuous
  Gaussian (Dong, Roth & Su 2019), not for the discrete one.
* Joint calibration (``rho=``): several Gaussian columns of one record share a zCDP budget
  rho = sum rho_i instead of splitting (eps, delta).  Each column gets
  sigma_i = D_i / sqrt(2 rho_i) grid steps; by CKS 2020 Prop. 5 (the Renyi divergence of two
  discrete Gaussians with integer shift s is at most alpha s^2 / (2 sigma^2), s <= D_i) the column
  is rho_i-zCDP, the columns together are (sum rho_i)-zCDP (Bun & Steinke 2016, Lemma 2.3: rho's
  of independent mechanisms add) and CKS 2020 Prop. 12 converts that to (eps, delta).  This holds
  for the discrete Gaussian as it is, with no continuous-Gaussian approximation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal, overload

import numpy as np
import numpy.typing as npt
from scipy.special import log_ndtr, ndtr

from dpstudio.engine.accounting import RDP_ORDERS, PrivacyLoss, zcdp_epsilon
from dpstudio.engine.mechanisms.base import Mechanism, check_bounds, check_delta, check_epsilon, smallest_valid_scale
from dpstudio.engine.mechanisms.sampling import (
    Grid,
    discrete_gaussian,
    discrete_gaussian_clamped_mean_abs,
    discrete_gaussian_interval,
    discrete_gaussian_mean_abs,
    discrete_gaussian_support,
    within_on_grid,
)
from dpstudio.engine.rng import RandomSource


def analytic_gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Exact delta(eps) of N(0, sigma^2) noise with L2 sensitivity Delta (Balle & Wang Thm 8)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    # e^eps Phi(-a - b) in log space so large eps does not overflow
    return float(ndtr(a - b) - math.exp(epsilon + log_ndtr(-a - b)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest sigma (to 1e-12 relative, rounded up) with the exact condition <= delta.

    Balle & Wang 2018 Alg. 1 solves the same equation by a change of variables; plain
    bisection on sigma is simpler and just as exact.  Raises ValueError on bad input.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    if isinstance(sensitivity, bool) or not float(sensitivity) > 0 or not math.isfinite(float(sensitivity)):
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
    sens = float(sensitivity)
    lo, hi = 1e-3 * sens, sens
    while analytic_gaussian_delta(eps, hi, sens) > dl:
        hi *= 2.0
        if hi > 1e12 * sens:
            raise ValueError(f"cannot calibrate Gaussian noise for epsilon={epsilon!r}, delta={delta!r}")
    while analytic_gaussian_delta(eps, lo, sens) <= dl and lo > 1e-12 * sens:
        lo /= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if analytic_gaussian_delta(eps, mid, sens) <= dl:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-13 * hi:
            break
    return hi


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """sqrt(2 ln(1.25/delta)) Delta / eps (Dwork & Roth Thm A.1; valid only for eps < 1)."""
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


def gaussian_rdp(sigma: float, sensitivity: float, orders: Sequence[float] = RDP_ORDERS) -> tuple[float, ...]:
    """(alpha, alpha Delta^2 / (2 sigma^2))-RDP (Mironov 2017 Prop. 7; CKS 2020 for N_Z)."""
    return tuple(a * sensitivity**2 / (2.0 * sigma**2) for a in orders)


def discrete_gaussian_delta(epsilon: float, sigma2: float, shifts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """CKS 2020 Thm 7, exact: delta for each integer shift s, summed over the integer support."""
    sigma = math.sqrt(sigma2)
    shifts = np.asarray(shifts, dtype=np.int64)
    smax = int(shifts.max())
    sup = discrete_gaussian_support(sigma, tail=14.0)  # mass beyond 14 sigma < 1e-44
    sup = np.arange(sup[0] - smax, sup[-1] + smax + 1)
    logw = -(sup.astype(np.float64) ** 2) / (2.0 * sigma2)
    w = np.exp(logw - logw.max())
    pmf = w / w.sum()
    # tail[i] = P[X >= sup[i]], summed from the far end so small tails keep relative accuracy
    tail = np.cumsum(pmf[::-1])[::-1]

    def p_greater(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        # P[X > a] = P[X >= floor(a) + 1]
        idx = np.floor(a).astype(np.int64) + 1 - sup[0]
        res = np.zeros(a.shape)
        inside = (idx >= 0) & (idx < sup.size)
        res[inside] = tail[idx[inside]]
        res[idx < 0] = 1.0
        return res

    s = shifts.astype(np.float64)
    d = p_greater(epsilon * sigma2 / s - s / 2.0) - math.exp(epsilon) * p_greater(epsilon * sigma2 / s + s / 2.0)
    return np.maximum(d, 0.0)


#: sigma in grid steps stays below twice this: the exact calibration (CKS 2020 Thm 7) and the
#: expected error sum the discrete pmf over ~30 sigma, so memory and time grow with sigma/step
SIGMA_STEPS_TARGET = 2.0**13


def gaussian_grid(
    low: float,
    high: float,
    *,
    integer: bool = False,
    grid_bits: int = 10,
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
) -> Grid:
    """The public grid of a Gaussian column: ``grid_bits`` as for Laplace, made coarser when the
    noise is so wide that sigma would exceed :data:`SIGMA_STEPS_TARGET` steps.

    Public inputs only (bounds, epsilon/delta or rho).  A coarser grid loses nothing that
    matters: when it is coarsened, sigma > SIGMA_STEPS_TARGET / 2 steps, so the rounding to the
    grid (at most half a step) is below sigma / 8192.  Without it, a small
    epsilon share (e.g. 0.05 at delta 1e-6) needs sigma ~ 2e5 steps and the exact calibration
    several GB.  ``sigma_over_diam`` is the continuous analytic Gaussian's sigma for sensitivity
    1 (Balle & Wang 2018), or 1/sqrt(2 rho) for a zCDP share; the discrete calibration is within
    a few per cent of it."""
    if rho is not None:
        ratio = 1.0 / math.sqrt(2.0 * float(rho))
    else:
        # the checks analytic_gaussian_sigma starts with, done first so that None is rejected with its error
        ratio = analytic_gaussian_sigma(check_epsilon(epsilon), check_delta(delta, allow_zero=False), 1.0)
    bits = int(grid_bits)
    if ratio > 0 and math.isfinite(ratio):
        bits = min(bits, max(0, math.floor(math.log2(SIGMA_STEPS_TARGET / ratio))))
    return Grid(float(low), float(high), bits=bits, integer=integer)


class GaussianMechanism(Mechanism):
    """Clip to public [low, high], snap to a public grid, add exact discrete Gaussian noise.

    L2 sensitivity = D grid steps (one record, one value).  Given (epsilon, delta), sigma^2 (grid
    units) is the smallest value whose CKS Thm 7 delta, maximised over shifts 1..D, is <= delta.
    Given ``rho`` (a share of a zCDP budget calibrated jointly with other columns, see the module
    docstring) instead of ``epsilon``, sigma = D / sqrt(2 rho) grid steps; ``epsilon`` is then the
    column's own guarantee at ``delta`` (CKS 2020 Prop. 12), for information.  Either way sigma^2
    is frozen as an exact rational (the binary value of the float) for the exact sampler, and the
    privacy loss is computed from that frozen value.
    """

    name = "gaussian"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float,
        low: float,
        high: float,
        integer: bool = False,
        grid_bits: int = 10,
        rho: float | None = None,
    ):
        self.delta = check_delta(delta, allow_zero=False)
        self.low, self.high = check_bounds(low, high)
        self.integer = bool(integer)
        if (rho is None) == (epsilon is None):
            raise ValueError("give the Gaussian mechanism either epsilon or rho (a zCDP share), not both")
        if epsilon is not None:
            epsilon = check_epsilon(epsilon)
        elif rho is not None and (isinstance(rho, bool) or not (float(rho) > 0) or not math.isfinite(float(rho))):
            raise ValueError(f"rho must be a finite number > 0, got {rho!r}")
        self.grid = gaussian_grid(
            self.low, self.high, integer=self.integer, grid_bits=grid_bits, epsilon=epsilon, delta=self.delta, rho=rho
        )
        self.diam_steps = self.grid.diam_steps
        if rho is None:
            self.epsilon = check_epsilon(epsilon)
            self.sigma_steps = self._calibrate()
        else:
            if isinstance(rho, bool) or not (float(rho) > 0) or not math.isfinite(float(rho)):
                raise ValueError(f"rho must be a finite number > 0, got {rho!r}")
            D = self.diam_steps
            # rounded up: the frozen sigma never spends more than the rho it was given
            self.sigma_steps = float(np.nextafter(D / math.sqrt(2.0 * float(rho)), np.inf)) if D else 0.0
        # freeze exactly the float sigma^2 that the calibration checked
        self.sigma2_exact = Fraction(self.sigma_steps * self.sigma_steps)
        # zCDP of what is sampled: D^2 / (2 sigma^2) from the frozen sigma^2, rounded up
        self.rho: float | None = None
        if rho is not None:
            self.rho = (
                float(np.nextafter(self.diam_steps**2 / (2.0 * float(self.sigma2_exact)), np.inf))
                if self.diam_steps
                else 0.0
            )
            if self.rho > float(rho) * (1 + 1e-12):
                raise AssertionError("frozen sigma spends more zCDP budget than it was given")
            self.epsilon = zcdp_epsilon(self.rho, self.delta)

    def _worst_delta(self, sigma: float) -> float:
        D = self.diam_steps
        return float(np.max(discrete_gaussian_delta(self.epsilon, sigma * sigma, np.arange(1, D + 1))))

    def _calibrate(self) -> float:
        D = self.diam_steps
        if D == 0:
            return 0.0
        target = self.delta * (1.0 - 1e-9)
        s_c = analytic_gaussian_sigma(self.epsilon, self.delta, D)
        lo, hi = 0.5 * s_c, 1.01 * s_c
        while self._worst_delta(hi) > target:
            hi *= 1.5
        if self._worst_delta(lo) <= target:
            lo = 1e-3
        return smallest_valid_scale(self._worst_delta, target, lo, hi, rtol=1e-10)

    @property
    def step(self) -> float:
        return self.grid.step

    @property
    def sigma(self) -> float:
        return self.sigma_steps * self.grid.step

    def privacy_loss(self) -> PrivacyLoss:
        rdp = gaussian_rdp(self.sigma_steps, self.diam_steps) if self.diam_steps else None
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            label=f"gaussian[{self.low},{self.high}]",
            rdp=rdp,
            gdp_mu=None,
            kind="dp",
            zcdp_rho=self.rho,
            details={
                "mechanism": "discrete Gaussian on grid",
                "grid_step": self.step,
                "sigma": self.sigma,
                "sigma_steps": self.sigma_steps,
                "diam_steps": self.diam_steps,
                **({"calibration": "joint zCDP share"} if self.rho is not None else {}),
            },
        )

    def expected_error(self) -> float:
        if self.diam_steps == 0:
            return 0.0
        return discrete_gaussian_mean_abs(self.sigma_steps**2) * self.step

    def clamped_error(self) -> float:
        """Worst case over the bounds of the error after clamping to them (the middle of the
        range; :func:`~.sampling.discrete_gaussian_clamped_mean_abs`), <= :meth:`expected_error`."""
        if self.diam_steps == 0:
            return 0.0
        return discrete_gaussian_clamped_mean_abs(self.sigma_steps**2, self.diam_steps) * self.step

    def within_probability(self, tolerance: float) -> float:
        """A lower bound on P(|released - true| <= ``tolerance``) for a true value inside the
        public bounds, from this noise's exact law (:func:`~.sampling.within_on_grid`)."""
        return within_on_grid(
            tolerance,
            self.step,
            self.integer,
            self.diam_steps,
            lambda a, b: discrete_gaussian_interval(a, b, self.sigma_steps**2),
        )

    def clip(self, values: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], int]:
        return self.grid.clip(values)

    @overload
    def release(
        self, values: npt.ArrayLike, rng: RandomSource, return_clipped: Literal[False] = False
    ) -> npt.NDArray[np.float64]: ...
    @overload
    def release(
        self, values: npt.ArrayLike, rng: RandomSource, return_clipped: Literal[True]
    ) -> tuple[npt.NDArray[np.float64], int]: ...
    @overload
    def release(
        self, values: npt.ArrayLike, rng: RandomSource, return_clipped: bool
    ) -> npt.NDArray[np.float64] | tuple[npt.NDArray[np.float64], int]: ...

    def release(
        self, values: npt.ArrayLike, rng: RandomSource, return_clipped: bool = False
    ) -> npt.NDArray[np.float64] | tuple[npt.NDArray[np.float64], int]:
        clipped, n_clipped = self.grid.clip(values)
        k = self.grid.snap(clipped)
        if self.diam_steps > 0:
            k = k + discrete_gaussian(self.sigma2_exact, k.size, rng).reshape(k.shape)
        out = self.grid.to_values(k)
        return (out, n_clipped) if return_clipped else out
