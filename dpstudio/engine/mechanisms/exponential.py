"""Exponential mechanism (McSherry & Talwar 2007; Minami 2015, Thm 2; docs/mechanisms.md).

Select candidate i with probability proportional to exp(eps u_i / (2 Delta)), where Delta
bounds |u_i(d) - u_i(d')| over neighbours.  Each factor of the ratio P_d(i)/P_d'(i) --- the
numerator and the normaliser --- contributes at most e^{eps/2}: eps-DP.

Sampling is exact for the float log-weights ``w_i`` (each an exact binary rational):
P(i) = exp(w_i) / sum_j exp(w_j) with no rounding, by rejection from the uniform proposal.
Propose i uniformly (exact bounded integers), accept with probability exp(-(M - w_i)),
M = max_j w_j, drawn by the exact Bernoulli(exp(-gamma)) sampler of :mod:`.sampling` with
gamma = M - w_i as an exact rational; the first accepted proposal is the output.  Why not the
inverse CDF on a float uniform: its probabilities are rounded to the 2^-53 grid of the uniform,
so a candidate whose true probability is ~1e-20 gets either 0 or ~1e-16 -- for a neighbouring
dataset the ratio is unbounded, i.e. the pure eps claim silently becomes (eps, ~1e-16).  The
remaining float step is computing w_i = eps u_i / (2 Delta) itself: a few roundings of
2^-53 |w_i| each, so neighbours' log-weights may differ by eps/2 + ~1e-15 max|w| (an additive
~1e-15 max|w| to eps, e.g. 1e-9 for utilities near 1e6; documented, not charged).  Expected
proposals per selection: k exp(M) / sum_j exp(w_j) <= k (k candidates).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.engine.mechanisms.base import Mechanism, check_epsilon
from dpstudio.engine.mechanisms.sampling import bernoulli_exp_floats
from dpstudio.engine.rng import RandomSource

#: proposals drawn per round across all rows still undecided (bounds the temporaries)
_ROUND_PROPOSALS = 1 << 20


def sample_log_weights(logw: npt.ArrayLike, rng: RandomSource) -> npt.NDArray[np.int64]:
    """One index per row of ``logw`` (2-D) with P(i) ∝ exp(logw[i]) exactly; -inf = excluded.

    Rejection from the uniform proposal with exact Bernoulli(exp(-(max - logw[i]))) coins (see
    the module docstring).  Rows are drawn together: each round gives every undecided row a
    batch of i.i.d. proposals and takes its first accepted one -- the same law as proposing
    one at a time.  The batch size follows a float estimate of the acceptance rate; it changes
    only the running time, never the law.
    """
    logw = np.atleast_2d(np.asarray(logw, dtype=np.float64))
    if logw.ndim != 2 or logw.shape[1] == 0:
        raise ValueError(f"log-weights must be (rows, candidates), got shape {logw.shape}")
    if np.isnan(logw).any() or np.isposinf(logw).any():
        raise ValueError("log-weights must be finite or -inf (excluded)")
    n, k = logw.shape
    if n == 0:
        return np.empty(0, dtype=np.int64)
    top = logw.max(axis=1)
    if np.isneginf(top).any():
        raise ValueError("exponential mechanism: a row has no candidate with positive weight")
    # acceptance rate sum_j exp(w_j - M) / k of (a sample of) the rows: it sizes the first
    # round so that ~4 rows in 5 finish; later rounds double the batch for the slow rest
    probe = slice(None, None, max(1, n // 2048))
    with np.errstate(under="ignore"):
        rate = np.exp(logw[probe] - top[probe, None]).sum(axis=1) / k
    per_row = 1.6 / np.quantile(rate, 0.2)
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        per_row = int(np.clip(np.ceil(per_row), 1, max(1, _ROUND_PROPOSALS // todo.size)))
        rows = np.repeat(todo, per_row)
        cand = rng.integers(k, rows.size)
        w = logw[rows, cand]
        live = np.flatnonzero(np.isfinite(w))  # excluded candidates are always rejected
        accept: npt.NDArray[np.bool_] = np.zeros(rows.size, dtype=bool)
        if live.size:
            accept[live] = bernoulli_exp_floats(top[rows[live]], w[live], rng)
        accept = accept.reshape(todo.size, per_row)
        done = accept.any(axis=1)
        first = accept.argmax(axis=1)
        out[todo[done]] = cand.reshape(todo.size, per_row)[done, first[done]]
        todo = todo[~done]
        per_row *= 2
    return out


class ExponentialMechanism(Mechanism):
    """Exponential mechanism with utility sensitivity ``sensitivity`` (McSherry-Talwar Thm 6)."""

    name = "exponential"

    def __init__(self, *, epsilon: float, sensitivity: float, _unsafe_factor: float = 1.0):
        self.epsilon = check_epsilon(epsilon)
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, float, np.integer, np.floating)):
            raise ValueError(f"sensitivity must be a number > 0, got {sensitivity!r}")
        if not (float(sensitivity) > 0 and math.isfinite(float(sensitivity))):
            raise ValueError(f"sensitivity must be > 0 and finite, got {sensitivity!r}")
        self.sensitivity = float(sensitivity)
        self._factor = float(_unsafe_factor)  # audit-only: 2.0 = "forgot the 1/2"

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=0.0,
            label="exponential",
            kind="dp",
            details={"mechanism": "exponential", "sensitivity": self.sensitivity},
        )

    def log_weights(self, utilities: npt.ArrayLike) -> npt.NDArray[np.float64]:
        u = np.asarray(utilities, dtype=np.float64)
        if np.isnan(u).any():
            raise ValueError("utilities contain NaN")
        return self._factor * self.epsilon * u / (2.0 * self.sensitivity)

    def select(self, utilities: npt.ArrayLike, rng: RandomSource) -> npt.NDArray[np.int64] | int:
        u = np.asarray(utilities, dtype=np.float64)
        if u.ndim not in (1, 2) or u.shape[-1] == 0:
            raise ValueError(f"utilities must be (n_candidates,) or (n_rows, n_candidates), got shape {u.shape}")
        idx = sample_log_weights(np.atleast_2d(self.log_weights(u)), rng)
        return int(idx[0]) if u.ndim == 1 else idx

    def release(self, values: npt.ArrayLike, rng: RandomSource) -> npt.NDArray[np.int64]:
        """``values`` = utility matrix (n_rows, n_candidates): one selected index per row."""
        return np.atleast_1d(self.select(np.atleast_2d(values), rng))
