"""DP kernel density estimates with Gaussian-process noise (docs/models.md; Jazbec 2018 §6;
Hall, Rinaldo & Wasserman 2013, JMLR 14, "Differential privacy for functions and functional
data", Prop. / Cor. on KDE).

Data in [0, 1]^d (d = 1, 2) after scaling by PUBLIC bounds.  KDE with the Gaussian kernel of
bandwidth h: f_D(x) = (1/(n (2 pi h^2)^{d/2})) sum_i K(x, x_i), K(x, y) = exp(-|x - y|^2/(2h^2)).
f_D lies in the RKHS H of K, and for replace-one neighbours f_D - f_D' = c (K_{x_n} - K_{x_n'}),
c = 1/(n (2 pi h^2)^{d/2}), so ||f_D - f_D'||_H^2 = c^2 (2 - 2 K(x_n, x_n')).  Over the unit
cube (diameter sqrt(d)) the supremum is exactly

    Delta = c sqrt(2 - 2 exp(-d / (2 h^2)))  <=  sqrt(2) c   (HRW 2013's constant),

attained at opposite corners (:func:`kde_sensitivity`).  A record with a missing value
contributes nothing to the sum (n stays the public row count), so the difference may also be
c K_x alone, of norm c: Delta = c max(1, sqrt(2 - 2 exp(-d/(2h^2)))).  (Jazbec 2018 Ex. 6.10
drops the sqrt(2) and writes sqrt(log(2/delta)) for sqrt(2 log(2/delta)): not used.)

On a finite grid the GP G with covariance K is N(0, M), M the Gram matrix, and Jazbec 2018
Thm 6.8 gives ||M^{-1/2}(f_D - f_D')(grid)|| <= ||f_D - f_D'||_H <= Delta.  Hence
f_D(grid) + c_mult N(0, M) is the Gaussian mechanism on M^{-1/2} f with L2 sensitivity Delta
and std c_mult, calibrated for EVERY eps by the analytic Gaussian mechanism (Balle & Wang 2018
Thm 8).  The corollary's sqrt(2 log(2/delta)) Delta / eps (valid for eps <= 1) is reported for
comparison (:func:`corollary_multiplier`).

Noise factorisation.  M = M_1 (x) M_2 (2-D grid = product of 1-D grids; the Gaussian kernel
factorises).  Each 1-D Gram matrix is eigendecomposed, negative eigenvalues (rounding) are
clipped to 0 and a jitter tau = 1e-10 * ||M_k|| is added: the sampled covariance is
M' = M_1' (x) M_2' with M_k' = Q_k (Lambda_k+ + tau) Q_k^T >= M_k up to rounding errors
(~1e-13 ||M_k|| << tau), so M' >= M: the noise is N(0, M) plus independent extra noise, which
is post-processing — jitter only adds noise, it never weakens the guarantee.  Standard
normals come from :func:`dpstudio.engine.models.langevin.secure_normal` (RandomSource).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpstudio.engine.models.langevin import secure_normal
from dpstudio.engine.rng import RandomSource

JITTER = 1e-10


def scott_bandwidth(n: int, d: int) -> float:
    """Scott's rule with the PUBLIC scale: the std of the uniform law on [0, 1] (1/sqrt(12)),
    h = n^{-1/(d+4)} / sqrt(12).  Uses n (public) and the public range only, never the data."""
    h: float = float(n) ** (-1.0 / (d + 4)) / math.sqrt(12.0)
    return h


def kde_constant(n: int, h: float, d: int) -> float:
    c: float = 1.0 / (n * (2.0 * math.pi * h * h) ** (d / 2.0))
    return c


def kde_sensitivity(n: int, h: float, d: int, *, with_missing: bool = True) -> float:
    """RKHS sensitivity of the KDE on [0, 1]^d (module docstring); <= sqrt(2)/(n (2 pi h^2)^{d/2})."""
    c = kde_constant(n, h, d)
    pair = math.sqrt(2.0 - 2.0 * math.exp(-d / (2.0 * h * h)))
    return c * (max(1.0, pair) if with_missing else pair)


def hrw_sensitivity(n: int, h: float, d: int) -> float:
    """The HRW 2013 bound sqrt(2) / (n (2 pi h^2)^{d/2}) (docs/models.md; docs/errata.md, E6)."""
    return math.sqrt(2.0) * kde_constant(n, h, d)


def analytic_multiplier(epsilon: float, delta: float, sensitivity: float) -> float:
    """Analytic Gaussian mechanism std for Mahalanobis sensitivity Delta (Balle & Wang 2018)."""
    from dpstudio.engine.mechanisms.gaussian import analytic_gaussian_sigma

    return analytic_gaussian_sigma(epsilon, delta, sensitivity)


def corollary_multiplier(epsilon: float, delta: float, sensitivity: float) -> float:
    """Jazbec 2018 Cor. 6.9 / HRW 2013: sqrt(2 log(2/delta)) Delta / eps — valid only for eps <= 1."""
    return math.sqrt(2.0 * math.log(2.0 / delta)) * sensitivity / epsilon


def grid_1d(size: int) -> npt.NDArray[np.float64]:
    return np.linspace(0.0, 1.0, int(size))


def gram_1d(grid: npt.NDArray[np.float64], h: float) -> npt.NDArray[np.float64]:
    diff = grid[:, None] - grid[None, :]
    gram: npt.NDArray[np.float64] = np.exp(-(diff * diff) / (2.0 * h * h))
    return gram


def kde_on_grid(
    points: npt.NDArray[np.float64], grids: list[npt.NDArray[np.float64]], h: float, n: int
) -> npt.NDArray[np.float64]:
    """f_D on the product grid; ``points`` (n_obs x d) in [0,1]^d, rows with NaN contribute 0;
    ``n`` the public row count.  Separable: f = c A_1^T A_2 in 2-D."""
    d = len(grids)
    ok = ~np.isnan(points).any(axis=1)
    p = points[ok]
    c = kde_constant(n, h, d)
    mats = [np.exp(-((p[:, [k]] - g[None, :]) ** 2) / (2.0 * h * h)) for k, g in enumerate(grids)]
    f: npt.NDArray[np.float64] = c * mats[0].sum(axis=0) if d == 1 else c * (mats[0].T @ mats[1])
    return f


@dataclass
class GPNoise:
    """Factors B_k with B_k B_k^T = M_k' >= M_k (eigendecomposition, clipped, jittered)."""

    factors: list[npt.NDArray[np.float64]]

    @classmethod
    def for_grids(cls, grids: list[npt.NDArray[np.float64]], h: float, jitter: float = JITTER) -> GPNoise:
        facs = []
        for g in grids:
            M = gram_1d(g, h)
            lam, Q = np.linalg.eigh(M)
            tau = jitter * float(np.max(np.abs(lam)))
            facs.append(Q * np.sqrt(np.clip(lam, 0.0, None) + tau)[None, :])
        return cls(facs)

    def covariance(self) -> npt.NDArray[np.floating[Any]]:
        cov: npt.NDArray[np.floating[Any]] = self.factors[0] @ self.factors[0].T
        for B in self.factors[1:]:
            cov = np.kron(cov, B @ B.T)
        return cov

    def whiten(self, f: npt.NDArray[np.float64]) -> npt.NDArray[np.floating[Any]]:
        """B^{-1} f (per axis): coordinates in which the GP noise is isotropic N(0, I)."""
        if len(self.factors) == 1:
            return np.linalg.solve(self.factors[0], f)
        B1, B2 = self.factors
        return np.linalg.solve(B1, np.linalg.solve(B2, f.T).T)

    def color(self, c: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """B c: back from whitened coordinates (post-processing)."""
        if len(self.factors) == 1:
            return self.factors[0] @ c
        B1, B2 = self.factors
        return B1 @ c @ B2.T

    def sample(self, rng: RandomSource, size: int | None = None) -> npt.NDArray[np.float64]:
        """One (or ``size``) draws of N(0, M') on the grid (shape grid or (size, *grid))."""
        k = 1 if size is None else int(size)
        shape = tuple(B.shape[1] for B in self.factors)
        Z = secure_normal(rng, (k, *shape))
        if len(self.factors) == 1:
            out = Z @ self.factors[0].T
        else:
            B1, B2 = self.factors
            out = np.einsum("ij,kjl,ml->kim", B1, Z, B2)
        return out[0] if size is None else out


def sample_from_grid_density(
    values: npt.ArrayLike, grids: list[npt.NDArray[np.float64]], rows: int, gen: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Post-processing: draw ``rows`` points from the clipped (>= 0), renormalised grid density,
    uniformly within each grid cell (cells centred on grid points, truncated to [0, 1])."""
    w = np.clip(np.asarray(values, dtype=np.float64), 0.0, None).ravel()
    if not w.sum() > 0:
        w = np.ones_like(w)
    w = w / w.sum()
    idx = gen.choice(w.size, size=int(rows), p=w)
    shape = tuple(g.size for g in grids)
    sub = np.unravel_index(idx, shape)
    out = np.empty((int(rows), len(grids)))
    for k, g in enumerate(grids):
        step = g[1] - g[0] if g.size > 1 else 1.0
        centre = g[sub[k]]
        out[:, k] = np.clip(centre + (gen.random(int(rows)) - 0.5) * step, 0.0, 1.0)
    return out
