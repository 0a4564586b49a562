"""Laplace mechanism for bounded numbers, on a data-independent grid (discrete Laplace).

Jazbec 2018, Ex. 4.9: Y_d = d + Lap(b) on a bounded D is (eps, delta)-DP for suitable b.  We
release the *discrete* Laplace on the grid step*Z (CKS 2020, Sec. 2; Mironov CCS 2012 for why
floats are unsafe) and calibrate it with its own exact privacy profile:

For grid shift s (integer, 1 <= s <= D = diam in steps), scale t, q = exp(-1/t),
P = DLap(t), Q = s + DLap(t), the privacy loss log P/Q(x) is s/t for x <= 0, -s/t for x >= s
and (s - 2x)/t between.  Summing (P - e^eps Q)_+ over the integers (Balle et al. 2018/2020
privacy profiles) gives, with X the number of x in [1, s-1] with (s - 2x)/t > eps,
    delta_s(eps) = [ (1 - e^{eps - s/t})_+ + (1 - q^X)(q - e^eps q^{s-X}) ] / (1 + q).
In the continuous limit (t -> inf, s/t = mu) this tends to 1 - e^{(eps - mu)/2}, the exact
profile of the continuous Laplace (docs/mechanisms.md; docs/errata.md, E1).  The mechanism is
(eps, delta)-DP iff max_s delta_s(eps) <= delta (P vs Q and Q vs P are mirror images).
delta = 0 gives t = D/eps (pure eps-DP: the loss is bounded by D/t).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from dpstudio.engine.accounting import RDP_ORDERS, PrivacyLoss
from dpstudio.engine.mechanisms.base import Mechanism, check_bounds, check_delta, check_epsilon, smallest_valid_scale
from dpstudio.engine.mechanisms.sampling import (
    Grid,
    discrete_laplace,
    discrete_laplace_clamped_mean_abs,
    discrete_laplace_interval,
    discrete_laplace_mean_abs,
    within_on_grid,
)
from dpstudio.engine.rng import RandomSource


def continuous_laplace_delta(epsilon: float, mu: float) -> float:
    """Exact privacy profile of the continuous Laplace with mu = diam / b (docs/mechanisms.md)."""
    return max(0.0, -math.expm1((epsilon - mu) / 2.0))


def laplace_b_exact(epsilon: float, delta: float, diam: float) -> float:
    """Smallest continuous-Laplace b with exact profile <= delta: diam / (eps - 2 log(1-delta))."""
    return diam / (epsilon - 2.0 * math.log1p(-delta))


def laplace_b_seed(epsilon: float, delta: float, diam: float) -> float:
    """The (valid, looser) scale of Jazbec 2018, Ex. 4.9: diam / (eps - log(1-delta))."""
    return diam / (epsilon - math.log1p(-delta))


def discrete_laplace_delta(epsilon: float, t: float, shifts: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Exact delta_s(eps) of the discrete Laplace with scale t for integer shifts s (closed form)."""
    s = np.asarray(shifts, dtype=np.float64)
    q = math.exp(-1.0 / t)
    # X = #{x in [1, s-1]: x < (s - eps t)/2}
    X = np.clip(np.ceil((s - epsilon * t) / 2.0) - 1.0, 0.0, np.maximum(s - 1.0, 0.0))
    first = np.maximum(0.0, -np.expm1(epsilon - s / t))
    with np.errstate(over="ignore"):
        mid = (-np.expm1(-X / t)) * (q - np.exp(epsilon - (s - X) / t))
    mid = np.where(X > 0, mid, 0.0)
    return np.maximum(first + mid, 0.0) / (1.0 + q)


def discrete_laplace_delta_numeric(epsilon: float, t: float, s: int, tail: float = 60.0) -> float:
    """The same profile by brute-force summation of (p - e^eps q)_+ (tests, cross-check)."""
    half = int(math.ceil(tail * t)) + s + 2
    x = np.arange(-half, half + 1, dtype=np.float64)
    c = (-math.expm1(-1.0 / t)) / (1.0 + math.exp(-1.0 / t))
    p = c * np.exp(-np.abs(x) / t)
    qq = c * np.exp(-np.abs(x - s) / t)
    return float(np.sum(np.maximum(p - math.exp(epsilon) * qq, 0.0)))


def discrete_laplace_rdp(t: float, s: int, orders: Sequence[float] = RDP_ORDERS) -> tuple[float, ...]:
    """Exact Renyi divergence D_alpha(DLap(t) || s + DLap(t)), closed-form sums in log space
    (derivation: docs/accounting.md §Exact RDP of the discrete Laplace)."""
    mu = s / t
    logc = math.log(-math.expm1(-1.0 / t)) - math.log1p(math.exp(-1.0 / t))
    log1mq = math.log(-math.expm1(-1.0 / t))
    out = []
    for a in orders:
        terms = [
            logc + (a - 1) * mu - log1mq,  # x <= 0
            logc - a * mu - log1mq,
        ]  # x >= s
        if s >= 2:  # 0 < x < s: q^{(1-a)s} * sum_{x=1}^{s-1} rho^x, rho = q^{2a-1}
            lr = -(2 * a - 1) / t
            geo = lr + math.log(-math.expm1(lr * (s - 1))) - math.log(-math.expm1(lr))
            terms.append(logc + (a - 1) * mu + geo)
        m = max(terms)
        out.append((m + math.log(sum(math.exp(v - m) for v in terms))) / (a - 1))
    return tuple(max(0.0, v) for v in out)


class LaplaceMechanism(Mechanism):
    """Clip to public [low, high], snap to a public grid, add exact discrete Laplace noise.

    Implements Jazbec 2018, Ex. 4.9 (bounded Laplace, eps/delta) with the exact privacy profile of
    the discrete Laplace (module docstring; docs/mechanisms.md), sampled exactly (CKS 2020, Alg. 2 law;
    certified-inversion sampler in :mod:`.sampling`).  ``grid_bits``: the grid has between
    2**bits and 2**(bits+1) steps across [low, high] (integer columns: integer steps).
    """

    name = "laplace"

    def __init__(
        self, *, epsilon: float, delta: float = 0.0, low: float, high: float, integer: bool = False, grid_bits: int = 10
    ):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.low, self.high = check_bounds(low, high)
        self.integer = bool(integer)
        self.grid = Grid(self.low, self.high, bits=grid_bits, integer=self.integer)
        self.diam_steps = self.grid.diam_steps
        self.scale_steps = self._calibrate()  # discrete Laplace scale t in grid units

    # -- calibration ------------------------------------------------------------------------
    def _worst_delta(self, t: float) -> float:
        shifts = np.arange(1, self.diam_steps + 1)
        return float(np.max(discrete_laplace_delta(self.epsilon, t, shifts)))

    def _calibrate(self) -> float:
        D = self.diam_steps
        if D == 0:
            return 0.0  # every clipped value snaps to the same grid point: nothing to hide
        t_pure = D / self.epsilon  # loss bounded by D/t = eps: delta = 0
        if self.delta == 0.0:
            return t_pure
        target = self.delta * (1.0 - 1e-9)  # safety against float rounding in the profile
        lo = D / (self.epsilon - 2.0 * math.log1p(-self.delta)) * 0.25
        if self._worst_delta(lo) <= target:
            return lo
        # t_pure is valid (delta = 0 there); delta_s decreases in t
        return smallest_valid_scale(self._worst_delta, target, lo, t_pure, rtol=1e-12)

    # -- interface --------------------------------------------------------------------------
    @property
    def step(self) -> float:
        return self.grid.step

    @property
    def scale(self) -> float:
        """Noise scale in the column's units (grid step x t)."""
        return self.scale_steps * self.grid.step

    def privacy_loss(self) -> PrivacyLoss:
        rdp = None
        if self.diam_steps > 0:
            rdp = discrete_laplace_rdp(self.scale_steps, self.diam_steps)
            # pure eps-DP with eps0 = D/t also bounds every Renyi order
            eps0 = self.diam_steps / self.scale_steps
            rdp = tuple(min(v, eps0) for v in rdp)
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            label=f"laplace[{self.low},{self.high}]",
            rdp=rdp,
            kind="dp",
            details={
                "mechanism": "discrete Laplace on grid",
                "grid_step": self.step,
                "scale": self.scale,
                "scale_steps": self.scale_steps,
                "diam_steps": self.diam_steps,
            },
        )

    def expected_error(self) -> float:
        """E|noise| of the discrete Laplace actually used: step * 2q/(1-q^2), q = e^{-1/t}."""
        if self.diam_steps == 0:
            return 0.0
        return discrete_laplace_mean_abs(self.scale_steps) * self.step

    def clamped_error(self) -> float:
        """Worst case over the bounds of the error after clamping to them (the middle of the
        range; :func:`~.sampling.discrete_laplace_clamped_mean_abs`), <= :meth:`expected_error`."""
        return discrete_laplace_clamped_mean_abs(self.scale_steps, self.diam_steps) * self.step

    def within_probability(self, tolerance: float) -> float:
        """A lower bound on P(|released - true| <= ``tolerance``) for a true value inside the
        public bounds, from this noise's exact law (:func:`~.sampling.within_on_grid`)."""
        return within_on_grid(
            tolerance,
            self.step,
            self.integer,
            self.diam_steps,
            lambda a, b: discrete_laplace_interval(a, b, self.scale_steps),
        )

    def clip(self, values: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], int]:
        """(values clipped to the public bounds, number clipped — NOT private, steward only)."""
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
            k = k + discrete_laplace(self.scale_steps, k.size, rng).reshape(k.shape)
        out = self.grid.to_values(k)
        return (out, n_clipped) if return_clipped else out
