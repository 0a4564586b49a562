"""Exponential mechanism (McSherry & Talwar 2007; seed 001 Thm 2; BRIEF 3.4).

Select candidate i with probability proportional to exp(eps u_i / (2 Delta)), where Delta
bounds |u_i(d) - u_i(d')| over neighbours.  Each factor of the ratio P_d(i)/P_d'(i) --- the
numerator and the normaliser --- contributes at most e^{eps/2}: eps-DP.

Sampling: stable weights (subtract the row maximum), inverse CDF on a 53-bit uniform from the
secure source.  (The selection probabilities are float-rounded to ~1e-16 relative; the product
does not claim bit-exactness here, unlike the additive noise of :mod:`.sampling`.)
"""
from __future__ import annotations

import math

import numpy as np

from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.engine.mechanisms.base import Mechanism, check_epsilon
from dpstudio.engine.rng import RandomSource

_ROW_CHUNK_ELEMS = 1 << 22


def sample_log_weights(logw: np.ndarray, rng: RandomSource) -> np.ndarray:
    """One index per row of ``logw`` (2-D) with P(i) ∝ exp(logw[i]); -inf means excluded."""
    logw = np.atleast_2d(np.asarray(logw, dtype=np.float64))
    n, k = logw.shape
    out = np.empty(n, dtype=np.int64)
    step = max(1, _ROW_CHUNK_ELEMS // max(k, 1))
    for s in range(0, n, step):
        lw = logw[s:s + step]
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        cum = np.cumsum(w, axis=1)
        target = rng.uniform(lw.shape[0]) * cum[:, -1]
        idx = (cum <= target[:, None]).sum(axis=1)
        out[s:s + step] = np.minimum(idx, k - 1)
    return out


class ExponentialMechanism(Mechanism):
    """Exponential mechanism with utility sensitivity ``sensitivity`` (McSherry-Talwar Thm 6)."""

    name = "exponential"

    def __init__(self, *, epsilon, sensitivity, _unsafe_factor: float = 1.0):
        self.epsilon = check_epsilon(epsilon)
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, float, np.integer, np.floating)):
            raise ValueError(f"sensitivity must be a number > 0, got {sensitivity!r}")
        if not (float(sensitivity) > 0 and math.isfinite(float(sensitivity))):
            raise ValueError(f"sensitivity must be > 0 and finite, got {sensitivity!r}")
        self.sensitivity = float(sensitivity)
        self._factor = float(_unsafe_factor)  # audit-only: 2.0 = "forgot the 1/2"

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(epsilon=self.epsilon, delta=0.0, label="exponential", kind="dp",
                           details={"mechanism": "exponential", "sensitivity": self.sensitivity})

    def log_weights(self, utilities) -> np.ndarray:
        u = np.asarray(utilities, dtype=np.float64)
        if np.isnan(u).any():
            raise ValueError("utilities contain NaN")
        return self._factor * self.epsilon * u / (2.0 * self.sensitivity)

    def select(self, utilities, rng: RandomSource) -> np.ndarray | int:
        u = np.asarray(utilities, dtype=np.float64)
        if u.ndim not in (1, 2) or u.shape[-1] == 0:
            raise ValueError(f"utilities must be (n_candidates,) or (n_rows, n_candidates), got shape {u.shape}")
        idx = sample_log_weights(np.atleast_2d(self.log_weights(u)), rng)
        return int(idx[0]) if u.ndim == 1 else idx

    def release(self, values, rng: RandomSource) -> np.ndarray:
        """``values`` = utility matrix (n_rows, n_candidates): one selected index per row."""
        return np.atleast_1d(self.select(np.atleast_2d(values), rng))
