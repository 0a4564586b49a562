"""Metric-DP selection for embedding vectors (VoicePrivacy 2020 note, x-vector anonymisation; docs/mechanisms.md).

Angular distance d(x, y) = arccos(<x, y> / (|x| |y|)) / pi is a metric on directions.  For an
input x0 the mechanism outputs pool row p with probability
    P(p | x0) = exp(-(eps/2) d(x0, p)) / Z(x0),   Z(x0) = sum_{p' in pool} exp(-(eps/2) d(x0, p')).
Guarantee (exponential-mechanism argument, McSherry & Talwar 2007 Thm 6 with utility -d,
which is 1-Lipschitz in x0 by the triangle inequality): for inputs x, x' and every pool row p,
    P(p | x) / P(p | x') = e^{(eps/2)(d(x',p) - d(x,p))} * Z(x')/Z(x) <= e^{(eps/2) d} e^{(eps/2) d}
                         = e^{eps d(x, x')}.
So the printed eps*d guarantee needs the factor 1/2.  The seed normalises over the wrong sum
and uses exp(-eps d): that version is only 2 eps d-private (the audit demonstrates it).

"Never the input itself": exclusion must not depend on the *value* of x0 (a value-based rule
such as "drop pool rows equal to x0" gives an output probability 0 for one input and > 0 for a
neighbour: no finite eps).  When the pool is the dataset itself, pass ``self_index`` (row i of
the input is pool row self_index[i]); that row is removed by identity, so the candidate set is
the other records, the same for both neighbouring values of record i (docs/errata.md, E5).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.engine.mechanisms.base import Mechanism, check_epsilon
from dpstudio.engine.mechanisms.exponential import sample_log_weights
from dpstudio.engine.rng import RandomSource

_CHUNK_ELEMS = 1 << 22


def _unit_rows(x: npt.ArrayLike, what: str) -> npt.NDArray[np.float64]:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array (rows, dim), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{what} contains NaN or infinite values")
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"{what} contains zero vectors: angular distance is undefined for them")
    unit: npt.NDArray[np.float64] = x / norms[:, None]
    return unit


def angular_distance(x: npt.ArrayLike, y: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Pairwise d(x_i, y_j) = arccos(cos)/pi in [0, 1] (float64 throughout)."""
    xu, yu = _unit_rows(np.atleast_2d(x), "x"), _unit_rows(np.atleast_2d(y), "y")
    d: npt.NDArray[np.float64] = np.arccos(np.clip(xu @ yu.T, -1.0, 1.0)) / np.pi
    return d


class MetricSelection(Mechanism):
    """Select a pool vector with P ∝ exp(-(eps/2) d(x0, p)): eps*d_chi metric DP (docs/mechanisms.md)."""

    name = "metric"

    def __init__(self, *, epsilon: float, pool: npt.ArrayLike, _unsafe_full_epsilon: bool = False):
        self.epsilon = check_epsilon(epsilon)
        pool = np.asarray(pool, dtype=np.float64)
        if pool.ndim != 2 or pool.shape[0] < 2:
            raise ValueError(f"pool must be (P >= 2, dim), got shape {pool.shape}")
        self.pool = pool
        self._pool_unit = _unit_rows(pool, "pool")
        # audit-only: the VoicePrivacy 2020 note's weights exp(-eps d) (no 1/2) -- NOT eps*d private
        self._unsafe_full_epsilon = bool(_unsafe_full_epsilon)
        self._coef = self.epsilon if self._unsafe_full_epsilon else 0.5 * self.epsilon

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=0.0,
            label="metric selection",
            kind="metric",
            details={"mechanism": "metric-DP selection (angular distance / pi)", "pool_size": int(self.pool.shape[0])},
        )

    def select(
        self,
        values: npt.ArrayLike,
        rng: RandomSource,
        self_index: npt.ArrayLike | None = None,
        progress: Callable[[float, str], None] | None = None,
    ) -> npt.NDArray[np.int64]:
        """Index of the chosen pool row for each input row (chunked matrix products)."""
        x = _unit_rows(np.atleast_2d(values), "values")
        if x.shape[1] != self._pool_unit.shape[1]:
            raise ValueError(f"values have dim {x.shape[1]}, pool has dim {self._pool_unit.shape[1]}")
        n, P = x.shape[0], self._pool_unit.shape[0]
        if self_index is not None:
            self_index = np.asarray(self_index, dtype=np.int64).reshape(-1)
            if self_index.shape[0] != n or self_index.min(initial=0) < 0 or self_index.max(initial=0) >= P:
                raise ValueError("self_index must give one pool row index per input row")
        out = np.empty(n, dtype=np.int64)
        step = max(1, _CHUNK_ELEMS // P)
        for s in range(0, n, step):
            xc = x[s : s + step]
            cos = xc @ self._pool_unit.T
            np.clip(cos, -1.0, 1.0, out=cos)
            logw = np.arccos(cos)
            logw *= -self._coef / np.pi
            if self_index is not None:  # remove the record's own row by identity, not value
                logw[np.arange(xc.shape[0]), self_index[s : s + step]] = -np.inf
            out[s : s + step] = sample_log_weights(logw, rng)
            if progress is not None:
                progress(min(1.0, (s + step) / n), "metric selection")
        return out

    def release(
        self, values: npt.ArrayLike, rng: RandomSource, self_index: npt.ArrayLike | None = None
    ) -> npt.NDArray[np.float64]:
        return self.pool[self.select(values, rng, self_index=self_index)]

    def expected_error(self) -> None:
        return None  # data dependent: the report shows the empirical mean angular distortion
