"""The mechanism interface shared by every per-value DP mechanism.

Each mechanism is a small class with keyword-only, validated parameters.  ``privacy_loss()``
states the guarantee for replace-one neighbours (one record's value changes, docs/mechanisms.md);
``release`` perturbs a whole column at once (vectorised, never a Python loop over rows); the
per-record guarantee lifts to the dataset by Jazbec 2018, Thm 4.7, and to every query of the
output by post-processing (Jazbec 2018, Thm 4.3).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, SupportsFloat

import numpy as np
import numpy.typing as npt

from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.engine.rng import RandomSource


class Mechanism(ABC):
    """One-record mechanism Y_d applied independently to every value of a column."""

    name: str = ""

    @abstractmethod
    def privacy_loss(self) -> PrivacyLoss:
        """The (eps, delta) guarantee (and RDP curve where defined) actually delivered."""

    def expected_error(self) -> float | None:
        """E rho(Y_d, d) per released value in the column's own metric (None if undefined)."""
        return None

    def clamped_error(self) -> float | None:
        """The worst case over the public bounds of E|clamp(Y_d) - d| when the noisy value is
        clamped to the bounds (None where there is no such bound)."""
        return None

    @abstractmethod
    def release(self, values: npt.ArrayLike, rng: RandomSource) -> npt.NDArray[Any]:
        """Perturb every value independently; ``rng`` supplies all randomness."""

    def describe(self) -> dict[str, Any]:
        return {"mechanism": self.name, **self.privacy_loss().to_json()}


def check_epsilon(epsilon: object) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.integer, np.floating)):
        raise ValueError(f"epsilon must be a number > 0, got {epsilon!r}")
    e = float(epsilon)
    if not (e > 0 and math.isfinite(e)):
        raise ValueError(f"epsilon must be > 0 and finite, got {epsilon!r}")
    return e


def check_delta(delta: object, *, allow_zero: bool = True) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)):
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
    d = float(delta)
    lo_ok = d >= 0 if allow_zero else d > 0
    if not (lo_ok and d < 1):
        rng_txt = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"delta must lie in {rng_txt}, got {delta!r}")
    return d


def check_bounds(low: SupportsFloat, high: SupportsFloat) -> tuple[float, float]:
    for nm, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"{nm} must be a finite number, got {v!r}")
        if not math.isfinite(float(v)):
            raise ValueError(f"{nm} must be finite, got {v!r}")
    if not float(high) > float(low):
        raise ValueError(f"need low < high, got low={low!r}, high={high!r}")
    if not math.isfinite(float(high) - float(low)):
        # e.g. [-1e308, 1e308]: the grid is built from the diameter, which overflows
        raise ValueError(f"high - low overflows for low={low!r}, high={high!r}; narrow the bounds")
    return float(low), float(high)


def logsumexp_rows(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    m = np.max(x, axis=-1, keepdims=True)
    out: npt.NDArray[np.float64] = (m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)))[..., 0]
    return out


def smallest_valid_scale(
    worst_delta: Callable[[float], float], target: float, lo: float, hi: float, *, rtol: float
) -> float:
    """Bisection for the smallest noise scale whose worst-case delta is <= ``target``.

    ``worst_delta`` must decrease with the scale and ``hi`` must already be valid; the returned
    value is always a scale that was checked to be valid (the upper end of the bracket), so the
    calibration can only err towards more noise.  At most 100 halvings (the bracket shrinks by
    2**-100, far below any ``rtol``), so the time is bounded whatever the bracket.
    """
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if worst_delta(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= rtol * hi:
            break
    return hi
