"""Accuracy floors: the smallest worst-case error any (eps, delta)-DP mechanism can achieve
(docs/accounting.md, "Accuracy floors").  Each mechanism's own expected error is its
``expected_error()``; the compiled plan puts the two side by side.

Jazbec 2018, §5 (one-record mechanisms on a compact metric space ``(D, rho)``, maximal
expected error ``gamma = max_d E rho(Y_d, d)``), for every (eps, delta)-DP mechanism:

* Thm 5.3 (any D):                    ``gamma >= (1 - delta) diam(D) / (2 (1 + e^eps))``
* Thm 5.5 (m+1 points, min distance kappa): ``gamma >= (1 - delta) kappa m / (m + e^eps)``

Randomized response attains Thm 5.5 with equality under the discrete metric.  Both broadcast.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import special


def floor_continuous(diam: npt.ArrayLike, eps: npt.ArrayLike, delta: npt.ArrayLike = 0.0) -> npt.NDArray[np.float64]:
    """Jazbec 2018, Thm 5.3: ``(1 - delta) diam / (2 (1 + e^eps))`` (broadcasts).

    ``1/(1 + e^eps)`` is computed as ``expit(-eps)`` so large eps does not overflow.
    """
    diam, eps, delta = (np.asarray(x, dtype=float) for x in (diam, eps, delta))
    floor: npt.NDArray[np.float64] = (1.0 - delta) * diam * 0.5 * special.expit(-eps)
    return floor


def floor_finite(
    m: npt.ArrayLike, kappa: npt.ArrayLike, eps: npt.ArrayLike, delta: npt.ArrayLike = 0.0
) -> npt.NDArray[np.float64]:
    """Jazbec 2018, Thm 5.5: ``(1 - delta) kappa m / (m + e^eps)`` for m+1 points (broadcasts).

    ``m / (m + e^eps) = expit(log m - eps)``; m = 0 (a single category) gives 0.
    """
    m, kappa, eps, delta = (np.asarray(x, dtype=float) for x in (m, kappa, eps, delta))
    with np.errstate(divide="ignore"):
        frac = special.expit(np.log(m) - eps)
    floor: npt.NDArray[np.float64] = (1.0 - delta) * kappa * np.where(m > 0, frac, 0.0)
    return floor
