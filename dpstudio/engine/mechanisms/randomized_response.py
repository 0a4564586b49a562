"""k-ary randomized response (Jazbec 2018, Ex. 4.10; Sekiguchi 2024 for binary labels).

On categories {0..m} (m + 1 = n_categories), P(Y = d) = 1 - m p and P(Y = d') = p for every
other d'.  It is (eps, delta)-DP iff p >= (1 - delta)/(m + e^eps) (docs/mechanisms.md): the worst event
is {d} for neighbours d, d', giving 1 - m p <= e^eps p + delta.  Binary (m = 1, delta = 0):
flip probability 1/(1 + e^eps).  Expected error under the discrete metric is m p, which meets
the lower bound of Jazbec 2018, Thm 5.5, exactly.

One category (m = 0: a DP category estimate that kept only its "other" value) leaves nothing to
randomize: the output is that category, whatever the input, which is 0-DP; it is allowed so that
such a release completes (and is charged) instead of failing after the estimate ran.

Exactness: p is irrational, so we realise p' = j / N with N = 2**32 - 1 and j = ceil(p N)
(p' >= p: never less private than claimed) using ONE exact uniform integer u in [0, N) per
value: u < m j selects "other category number u // j", else the value is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dpstudio.engine.accounting import RDP_ORDERS, PrivacyLoss
from dpstudio.engine.mechanisms.base import Mechanism, check_delta, check_epsilon
from dpstudio.engine.rng import RandomSource

_N = 2**32 - 1


def rr_rdp(keep: float, p: float, m: int, orders: Sequence[float] = RDP_ORDERS) -> tuple[float, ...]:
    """Exact Renyi divergence between the output laws for two different inputs a != b.

    P_a = (keep at a, p at b, p elsewhere), P_b = (p at a, keep at b, p elsewhere); every pair
    of distinct inputs gives the same divergence, so this is the worst pair.
    D_alpha = log(keep^a p^(1-a) + p^a keep^(1-a) + (m-1) p) / (a-1).
    """
    if m == 0:  # one category: both laws are the point mass on it
        return tuple(0.0 for _ in orders)
    lk, lp = math.log(keep), math.log(p)
    out = []
    for a in orders:
        terms = [a * lk + (1 - a) * lp, a * lp + (1 - a) * lk]
        if m > 1:
            terms.append(math.log(m - 1) + lp)
        mx = max(terms)
        out.append(max(0.0, (mx + math.log(sum(math.exp(v - mx) for v in terms))) / (a - 1)))
    return tuple(out)


class RandomizedResponse(Mechanism):
    """Randomized response on integer codes 0..n_categories-1 (Jazbec 2018, Ex. 4.10)."""

    name = "rr"

    def __init__(self, *, epsilon: float, delta: float = 0.0, n_categories: int):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        if isinstance(n_categories, bool) or not isinstance(n_categories, (int, np.integer)):
            raise ValueError(f"n_categories must be an integer >= 1, got {n_categories!r}")
        if not 1 <= int(n_categories) <= 65536:
            raise ValueError(f"n_categories must lie in [1, 65536], got {n_categories!r}")
        self.n_categories = int(n_categories)
        self.m = self.n_categories - 1
        if self.m == 0:  # one category: kept with probability 1 (module docstring)
            self.p_target, self.j, self.p, self.keep = 0.0, 0, 0.0, 1.0
            return
        self.p_target = (1.0 - self.delta) / (self.m + math.exp(self.epsilon))
        # ceil(p N), computed so that rounding can only raise it
        self.j = min(_N // self.m, math.ceil(self.p_target * _N * (1 + 1e-15)))
        self.p = self.j / _N
        self.keep = 1.0 - self.m * self.p

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            label=f"rr[{self.n_categories}]",
            rdp=rr_rdp(self.keep, self.p, self.m),
            kind="dp",
            details={"mechanism": "randomized response", "p_other": self.p, "p_keep": self.keep},
        )

    def expected_error(self) -> float:
        """m p: probability the released category differs from the true one."""
        return self.m * self.p

    def release(
        self, values: npt.ArrayLike, rng: RandomSource, *, _override_j: int | None = None
    ) -> npt.NDArray[np.int64]:
        v = np.asarray(values)
        if v.size and (not np.issubdtype(v.dtype, np.integer)):
            if not np.all(np.equal(np.mod(v, 1), 0)):
                raise ValueError("randomized response needs integer category codes")
        v = v.astype(np.int64)
        if v.size and (v.min() < 0 or v.max() > self.m):
            raise ValueError(f"category codes must lie in [0, {self.m}], got range [{v.min()}, {v.max()}]")
        if self.m == 0:
            return v  # every code is 0, the one category
        j = self.j if _override_j is None else _override_j
        u = rng.integers(_N, v.size).reshape(v.shape)
        change = u < self.m * j
        other = u // j  # 0..m-1 where change: the "other" category number
        # skip the true value so each of the m other categories has probability exactly j/N
        other = other + (other >= v)
        return np.where(change, other, v)
