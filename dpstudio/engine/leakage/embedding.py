"""Risk view for embedding vectors released by metric-DP selection (docs/leakage.md §Embeddings;
VoicePrivacy 2020 note).

Each person's vector x_i is replaced by a vector drawn from a *public pool* with
``P(p | x_i) ∝ exp(-(eps/2) d_chi(x_i, p))`` (the ``eps/2`` delivers the printed
``eps * d_chi`` guarantee with the correct normaliser, docs/mechanisms.md §Metric-DP selection for
embeddings), ``d_chi`` the angular
distance ``arccos(cos)/pi``.  Two exact expectations over the mechanism, no sampling:

* nearest-neighbour re-identification rate: the attacker maps the released vector to its
  nearest original; success iff that is the person.  Every pool vector's nearest original is
  computed once, so ``E[reid] = mean_i sum_p P(p|x_i) 1{nn(p) = i}``;
* mean angular distortion ``E d_chi(x_i, x~_i)`` (also in degrees).

When the pool *is* the dataset (acknowledged in the recipe), x_i itself is excluded.
Work is chunked over records so memory stays at ``chunk * pool`` floats.
Raw-data numbers: internal use only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

COMPUTED_ON = "raw data - internal use only"

__all__ = ["speaker_like_embeddings", "angular_distance", "embedding_risk", "COMPUTED_ON"]

FloatArray = npt.NDArray[np.float64]


def _unit(v: npt.ArrayLike) -> FloatArray:
    x = np.asarray(v, dtype=np.float64)
    nrm = np.linalg.norm(x, axis=1, keepdims=True)
    u: FloatArray = x / np.where(nrm > 0, nrm, 1.0)
    return u


def angular_distance(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """d_chi = arccos(<a,b>/(|a||b|)) / pi for all pairs (rows of a x rows of b)."""
    d: FloatArray = np.arccos(np.clip(_unit(a) @ _unit(b).T, -1.0, 1.0)) / np.pi
    return d


def speaker_like_embeddings(
    n_ids: int = 1000, dim: int = 256, *, pool_size: int = 5000, latent: int = 12, within: float = 0.35, seed: int = 0
) -> tuple[FloatArray, FloatArray]:
    """Generated speaker-like unit vectors: identity centres on a low-dimensional manifold
    (``latent`` Gaussian factors mapped linearly into ``dim``) plus within-speaker noise; the
    public pool is drawn from *other* identities of the same population.

    Returns (vectors (n_ids, dim) - one per person, pool (pool_size, dim)).
    """
    g = np.random.default_rng(seed)
    A = g.normal(size=(latent, dim)) / np.sqrt(latent)

    def people(m: int) -> FloatArray:
        centres = _unit(g.normal(size=(m, latent)) @ A)
        return _unit(centres + within * g.normal(size=(m, dim)) / np.sqrt(dim))

    return people(n_ids), people(pool_size)


def embedding_risk(
    vectors: npt.ArrayLike,
    pool: npt.ArrayLike,
    eps_grid: npt.ArrayLike,
    *,
    pool_is_dataset: bool = False,
    chunk: int = 256,
) -> dict[str, Any]:
    """Exact expected NN re-identification rate and angular distortion for each eps."""
    X = _unit(vectors)
    Pl = _unit(pool)
    n, m = X.shape[0], Pl.shape[0]
    eps = np.atleast_1d(np.asarray(eps_grid, dtype=float))
    # nearest original of every pool vector (chunked over the pool)
    nn = np.empty(m, dtype=np.int64)
    for s in range(0, m, chunk * 4):
        nn[s : s + chunk * 4] = np.argmax(Pl[s : s + chunk * 4] @ X.T, axis=1)
    reid = np.zeros(eps.size)
    dist = np.zeros(eps.size)
    nearest_reid = 0.0
    nearest_dist = 0.0
    for s in range(0, n, chunk):
        xb = X[s : s + chunk]
        D = np.arccos(np.clip(xb @ Pl.T, -1.0, 1.0)) / np.pi  # (b, m)
        idx = np.arange(s, s + xb.shape[0])
        if pool_is_dataset:
            D[np.arange(xb.shape[0]), idx] = np.inf  # never x_i itself
        hit = nn[None, :] == idx[:, None]  # (b, m)
        dmin = D.min(axis=1, keepdims=True)
        j = np.argmin(D, axis=1)
        nearest_reid += float(hit[np.arange(xb.shape[0]), j].sum())
        nearest_dist += float(dmin.sum())
        finite = np.isfinite(D)
        Dz = np.where(finite, D - dmin, 0.0)
        for t, e in enumerate(eps):
            w = np.where(finite, np.exp(-(0.5 * e) * Dz), 0.0)
            Z = w.sum(axis=1)
            reid[t] += float(((w * hit).sum(axis=1) / Z).sum())
            dist[t] += float(((w * np.where(finite, D, 0.0)).sum(axis=1) / Z).sum())
    reid /= n
    dist /= n
    return {
        "epsilon": eps.tolist(),
        "reid_rate": reid.tolist(),
        "mean_angular_distortion": dist.tolist(),
        "mean_angular_distortion_degrees": (dist * 180.0).tolist(),
        "baseline_reid_rate": 1.0 / n,
        "limit_eps_infinite": {"reid_rate": nearest_reid / n, "mean_angular_distortion": nearest_dist / n},
        "n_records": int(n),
        "pool_size": int(m),
        "pool_is_dataset": bool(pool_is_dataset),
        "selection_weights": "exp(-(eps/2) * d_chi)",
        "method": "exact expectation over the selection (no sampling)",
        "computed_on": COMPUTED_ON,
    }
