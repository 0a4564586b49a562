"""Differentially private estimation of column domains (numeric bounds and category lists).

Bounds and category lists read silently from the private data leak (a maximum *is* a person,
a rare category identifies its holder).  When the user cannot type a public domain, these
functions estimate it with DP and return the :class:`PrivacyLoss` the recipe must record.
Neighbours differ in one record (replace-one); ``n`` is public.

Randomness: every draw comes from :class:`~dpstudio.engine.rng.RandomSource`.
Selections are sampled exactly: quantiles by the exponential mechanism's exact sampler over a
public grid (:func:`public_grid`), category lists with the exact discrete Laplace or an exact
discrete Gaussian on a fine lattice.  No output is a float computed from private values: a
quantile drawn as ``edge + uniform * length`` (the continuous version of Smith 2011) carries
the data's low-order bits into the published bound (Mironov 2012, "On significance of the
least significant bits for differential privacy"), so every bound is one of a set of floats
fixed by the public search range alone.

Derivations and sources (grid, quantiles, bounds, candidate counts, partition selection with
its replace-one proof): docs/domains.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeAlias, overload

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine.accounting import (
    PrivacyLoss,
    calibrate_gaussian_gdp,
    rdp_gaussian,
    rdp_pure_dp,
)
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError

# --------------------------------------------------------------------------- private samplers


def _sample_log_weights(logw: npt.NDArray[np.float64], rng: RandomSource) -> int:
    """Index ``i`` with probability exactly ``exp(logw_i) / sum exp(logw)`` (-inf: excluded);
    the exponential mechanism's exact sampler."""
    from dpstudio.engine.mechanisms.exponential import sample_log_weights

    return int(sample_log_weights(np.asarray(logw, dtype=float)[None, :], rng)[0])


#: lattice of the Gaussian noise on counts (integers lie on it; sigma/grid > 10^6)
_COUNT_GRID = 2.0**-20

#: one column's values as the estimators take them: a pandas Series or anything array-like
ColumnValues: TypeAlias = "pd.Series[Any] | npt.ArrayLike"


# --------------------------------------------------------------------------- quantiles


def _clean_numeric(values: ColumnValues) -> npt.NDArray[np.float64]:
    x = np.asarray(pd.to_numeric(pd.Series(values).reset_index(drop=True), errors="coerce"), dtype=float)
    return x


def quantile_utility(
    sorted_values: npt.NDArray[np.float64], q: float, points: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Utility ``u(y) = -| #{x_j < y} - q n |`` of candidate outputs ``y`` (Smith 2011;
    docs/domains.md §DP quantiles).

    For any fixed ``y``, replacing one record changes ``#{x_j < y}`` by at most 1, so the
    utility has sensitivity 1 under replace-one (tested).  ``n`` is public.  Where missing
    values are dropped first (release domains), replacing a missing value by a number moves the
    count by 0 or 1 and ``q n`` by ``q``: the change is ``q`` or ``1 - q``, still at most 1 (tested).
    """
    n = sorted_values.size
    below = np.searchsorted(sorted_values, points, side="left")
    return quantile_utility_from_counts(below, n, q)


def quantile_utility_from_counts(below: npt.ArrayLike, n: int, q: float) -> npt.NDArray[np.float64]:
    """:func:`quantile_utility` from its summary of the data: ``below[k] = #{x_j < points[k]}``
    (:func:`grid_below_counts`) and the number ``n`` of values, the only things it reads."""
    b = np.asarray(below)
    u: npt.NDArray[np.float64] = -np.abs(b - q * n)
    return u


def grid_below_counts(values: ColumnValues, grid: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The data summary a DP quantile on ``grid`` reads: ``below[k] = #{x < grid[k]}`` over the
    values clipped to ``[grid[0], grid[-1]]`` (the public range: :func:`public_grid` starts at
    ``low`` and ends at ``high``), as ``int64[len(grid)]``.

    Exact and additive: the counts of a table split into batches are the sums of the batches'
    counts (with ``n`` the sum of the batches' sizes), so streamed or partitioned data give the
    same summary as one pass.  Memory: the grid's size, whatever the number of rows.  NaN values
    are rejected (drop or impute them first).
    """
    g = np.asarray(grid, dtype=float)
    if g.ndim != 1 or g.size == 0:
        raise ValueError("the grid must be a non-empty 1-d array")
    x = _clean_numeric(values)
    if np.isnan(x).any():
        raise UserError("the column has missing or non-numeric values; impute them first")
    x = np.sort(np.clip(x, g[0], g[-1]))
    return np.searchsorted(x, g, side="left").astype(np.int64)


#: the default grid has at most this many steps over the search range (and more than 2/5 of it)
GRID_MAX_STEPS = 4000


def grid_step(low: float, high: float, *, integer: bool = False) -> tuple[int, int]:
    """The default grid step over the public range ``[low, high]`` as ``(m, e)``: step ``m 10^e``.

    The smallest "nice" step (``m`` in 1, 2, 5) giving at most :data:`GRID_MAX_STEPS` steps over
    the range, so a grid has between 1,600 and 4,000 steps: fine enough that the step is below
    0.07 % of the range, coarse enough for the exact sampler (a few thousand candidates).
    Decimal steps make the published bounds short decimals (0.005 not 0.00499999...).
    ``integer``: the column is declared integer in the recipe, so the step is at least 1 and the
    bounds are integers.  A function of ``(low, high, integer)`` only.
    """
    width = float(high) - float(low)
    if not (math.isfinite(width) and width > 0):
        raise UserError(f"the public search range must be finite with low < high, got [{low!r}, {high!r}]")
    e = math.floor(math.log10(width / GRID_MAX_STEPS)) - 1
    while True:  # log10 may be off by one near powers of ten: walk up from below
        for m in (1, 2, 5):
            if width <= GRID_MAX_STEPS * _decimal(m, e):
                if integer and (e < 0):
                    return 1, 0
                return m, e
        e += 1


def _decimal(m: int, e: int) -> float:
    """The float nearest to ``m 10^e`` (correctly rounded: one IEEE operation on exact operands)."""
    return float(m * 10**e) if e >= 0 else m / float(10**-e)


def public_grid(
    low: float, high: float, *, integer: bool = False, n_bins: int | None = None
) -> npt.NDArray[np.float64]:
    """The candidate outputs of :func:`dp_quantile`: sorted floats fixed by the public inputs
    (docs/domains.md §Public grid).

    Default: ``low``, ``high`` and every multiple ``j s`` of the step ``s = m 10^e`` of
    :func:`grid_step` inside ``[low, high]``, each computed as the float nearest to
    ``(j m) 10^e`` (one correctly rounded operation on exact integers), so the same
    ``(low, high)`` always gives bit-identical points.  ``n_bins=k``: ``k + 1`` equally spaced
    points ``low + (high - low) i / k``.  Ranges so far from zero that ``j m`` passes 2^53 use
    the equal spacing with :data:`GRID_MAX_STEPS` bins (still public).
    """
    low, high = float(low), float(high)
    if low == high:
        return np.array([low])
    if n_bins is None and not (1e-250 < high - low < 1e300):
        n_bins = GRID_MAX_STEPS  # beyond the decimal steps' float range (absurd but public)
    if n_bins is None:
        m, e = grid_step(low, high, integer=integer)
        s = _decimal(m, e)
        j0, j1 = math.ceil(low / s), math.floor(high / s)
        if max(abs(j0), abs(j1)) * m < 2**53:
            jm = np.arange(j0, j1 + 1, dtype=np.int64) * m
            multiples = jm * float(10**e) if e >= 0 else jm / float(10**-e)
            pts = np.unique(np.concatenate([[low], multiples, [high]]))
            return pts[(pts >= low) & (pts <= high)]
        n_bins = GRID_MAX_STEPS
    k = int(n_bins)
    if k < 1:
        raise UserError(f"n_bins must be >= 1, got {n_bins!r}")
    grid = low + (high - low) * (np.arange(k + 1) / k)
    grid[-1] = high
    return np.unique(grid)  # far from zero neighbouring points can round to the same float


def next_grid_point(
    value: float, low: float, high: float, *, integer: bool = False, n_bins: int | None = None
) -> tuple[float, float]:
    """A non-empty interval of two neighbouring grid points containing ``value``: ``(value, next)``,
    or ``(previous, value)`` when ``value`` is the top of the grid (post-processing of a grid
    value, for bounds whose two DP quantiles coincide)."""
    grid = public_grid(low, high, integer=integer, n_bins=n_bins)
    if grid.size < 2:
        raise UserError(f"the public search range [{low!r}, {high!r}] has a single point")
    i = int(np.clip(np.searchsorted(grid, value), 0, grid.size - 1))
    return (float(grid[i]), float(grid[i + 1])) if i + 1 < grid.size else (float(grid[i - 1]), float(grid[i]))


@overload
def dp_quantile(
    values: ColumnValues,
    q: float,
    *,
    epsilon: float,
    low: float,
    high: float,
    rng: RandomSource,
    n_bins: int | None = None,
    integer: bool = False,
) -> float: ...
@overload
def dp_quantile(
    values: ColumnValues,
    q: npt.ArrayLike,
    *,
    epsilon: float,
    low: float,
    high: float,
    rng: RandomSource,
    n_bins: int | None = None,
    integer: bool = False,
) -> float | npt.NDArray[np.float64]: ...


def dp_quantile(
    values: ColumnValues,
    q: npt.ArrayLike,
    *,
    epsilon: float,
    low: float,
    high: float,
    rng: RandomSource,
    n_bins: int | None = None,
    integer: bool = False,
) -> float | npt.NDArray[np.float64]:
    """epsilon-DP ``q``-quantile of ``values``: a point of :func:`public_grid` over the PUBLIC
    range ``[low, high]``.

    Exponential mechanism (McSherry & Talwar 2007, "Mechanism design via differential privacy",
    Thm 6) over the grid with the quantile utility of Smith 2011 ("Privacy-preserving
    statistical estimation with optimal convergence rates"), :func:`quantile_utility`
    (sensitivity 1 under replace-one): grid point ``y`` is drawn with probability proportional
    to ``exp(epsilon u(y) / 2)`` by the exact sampler.  The factor 1/2 is needed: u is not
    monotone in the data (a replaced record can move a count either way), so the normaliser
    changes too.  Derivation and accuracy: docs/domains.md §DP quantiles.

    Why a grid and not Smith's continuous version (a uniform point inside the chosen interval
    between sorted values): that float is ``x_(i) + u * length``, whose low-order bits depend on
    the private values -- Mironov 2012 ("On significance of the least significant bits for
    differential privacy") shows such outputs can be impossible under one dataset and likely
    under its neighbour.  The grid's points depend on ``(low, high, integer, n_bins)`` only.

    NaN values are rejected (impute first).  Values outside the range are clipped (the clipped
    count is not returned).  ``q`` may be an array: each quantile is a separate
    ``epsilon``-DP release (total ``len(q) * epsilon`` by basic composition; the caller records it).
    """
    _check_quantile_inputs(epsilon, low, high, q)
    x = _clean_numeric(values)
    if np.isnan(x).any():
        raise UserError("dp_quantile: the column has missing or non-numeric values; impute them first")
    grid = public_grid(low, high, integer=integer, n_bins=n_bins)
    return dp_quantile_from_counts(grid_below_counts(x, grid), x.size, q, epsilon=epsilon, grid=grid, rng=rng)


def _check_quantile_inputs(epsilon: float, low: float, high: float, q: npt.ArrayLike) -> None:
    if not (epsilon > 0):
        raise UserError(f"epsilon must be > 0, got {epsilon!r}")
    if not (np.isfinite(low) and np.isfinite(high) and low <= high):
        raise UserError(f"the public range must satisfy low <= high, got [{low!r}, {high!r}]")
    qs = np.atleast_1d(np.asarray(q, dtype=float))
    if np.any((qs < 0) | (qs > 1)):
        raise UserError(f"quantile levels must lie in [0, 1], got {q!r}")


@overload
def dp_quantile_from_counts(
    below: npt.ArrayLike, n: int, q: float, *, epsilon: float, grid: npt.ArrayLike, rng: RandomSource
) -> float: ...
@overload
def dp_quantile_from_counts(
    below: npt.ArrayLike, n: int, q: npt.ArrayLike, *, epsilon: float, grid: npt.ArrayLike, rng: RandomSource
) -> float | npt.NDArray[np.float64]: ...


def dp_quantile_from_counts(
    below: npt.ArrayLike, n: int, q: npt.ArrayLike, *, epsilon: float, grid: npt.ArrayLike, rng: RandomSource
) -> float | npt.NDArray[np.float64]:
    """:func:`dp_quantile` from the data's summary: ``below`` = :func:`grid_below_counts` of the
    values on the public ``grid`` and ``n`` the number of values (summed over batches for
    streamed or partitioned data).  The same draws as :func:`dp_quantile` on the values, so the
    same output for the same random source.  ``q`` may be an array (one epsilon-DP release each).
    """
    g = np.asarray(grid, dtype=float)
    b = np.asarray(below)
    if g.ndim != 1 or g.size == 0:
        raise ValueError("the grid must be a non-empty 1-d array")
    _check_quantile_inputs(epsilon, float(g[0]), float(g[-1]), q)
    if b.shape != g.shape:
        raise ValueError(f"below has shape {b.shape}, the grid {g.shape}")
    qs = np.atleast_1d(np.asarray(q, dtype=float))
    out = np.empty(qs.size)
    for j, qq in enumerate(qs):
        logw = 0.5 * epsilon * quantile_utility_from_counts(b, n, qq)
        out[j] = g[_sample_log_weights(logw, rng)]
    return float(out[0]) if np.ndim(q) == 0 else out


def dp_bounds(
    values: ColumnValues,
    *,
    epsilon: float,
    coarse_low: float,
    coarse_high: float,
    rng: RandomSource,
    lower_q: float = 0.01,
    upper_q: float = 0.99,
    n_bins: int | None = None,
    integer: bool = False,
    label: str = "",
) -> tuple[float, float, PrivacyLoss]:
    """epsilon-DP numeric bounds: the ``lower_q`` and ``upper_q`` DP quantiles (each at
    ``epsilon/2``, basic composition) inside the public coarse range, both points of
    :func:`public_grid` (``integer``, ``n_bins``: see there).

    Returns ``(low, high, loss)``; if the two draws cross they are swapped (post-processing).
    They may coincide: :func:`next_grid_point` widens them to two neighbouring grid points.
    The loss carries the RDP curve ``2 x rdp_pure_dp(epsilon/2)`` (docs/domains.md §DP bounds).
    """
    if not (0 <= lower_q < upper_q <= 1):
        raise UserError(f"need 0 <= lower_q < upper_q <= 1, got {lower_q!r}, {upper_q!r}")
    _check_quantile_inputs(epsilon / 2, coarse_low, coarse_high, [lower_q, upper_q])
    x = _clean_numeric(values)
    if np.isnan(x).any():
        raise UserError("dp_quantile: the column has missing or non-numeric values; impute them first")
    grid = public_grid(coarse_low, coarse_high, integer=integer, n_bins=n_bins)
    return dp_bounds_from_counts(
        grid_below_counts(x, grid),
        x.size,
        epsilon=epsilon,
        coarse_low=coarse_low,
        coarse_high=coarse_high,
        rng=rng,
        lower_q=lower_q,
        upper_q=upper_q,
        n_bins=n_bins,
        integer=integer,
        label=label,
    )


def dp_bounds_from_counts(
    below: npt.ArrayLike,
    n: int,
    *,
    epsilon: float,
    coarse_low: float,
    coarse_high: float,
    rng: RandomSource,
    lower_q: float = 0.01,
    upper_q: float = 0.99,
    n_bins: int | None = None,
    integer: bool = False,
    label: str = "",
) -> tuple[float, float, PrivacyLoss]:
    """:func:`dp_bounds` from the data's summary: ``below`` = :func:`grid_below_counts` of the
    values on ``public_grid(coarse_low, coarse_high, integer=integer, n_bins=n_bins)`` and ``n``
    the number of values (each summed over batches).  The same draws, output and loss as
    :func:`dp_bounds` on the values."""
    if not (0 <= lower_q < upper_q <= 1):
        raise UserError(f"need 0 <= lower_q < upper_q <= 1, got {lower_q!r}, {upper_q!r}")
    _check_quantile_inputs(epsilon / 2, coarse_low, coarse_high, [lower_q, upper_q])
    grid = public_grid(coarse_low, coarse_high, integer=integer, n_bins=n_bins)
    lo = dp_quantile_from_counts(below, n, lower_q, epsilon=epsilon / 2, grid=grid, rng=rng)
    hi = dp_quantile_from_counts(below, n, upper_q, epsilon=epsilon / 2, grid=grid, rng=rng)
    lo, hi = min(lo, hi), max(lo, hi)
    half = np.asarray(rdp_pure_dp(epsilon / 2))
    loss = PrivacyLoss(
        epsilon=float(epsilon),
        delta=0.0,
        label=label or "DP bounds estimate",
        rdp=tuple(float(v) for v in 2 * half),
        kind="dp",
        details={
            "mechanism": "exponential-mechanism quantiles on a public grid (Smith 2011; McSherry & Talwar 2007)",
            "quantiles": [lower_q, upper_q],
            "epsilon_each": epsilon / 2,
            "public_range": [coarse_low, coarse_high],
        },
    )
    return lo, hi, loss


# --------------------------------------------------------------------------- categories


def candidate_counts(values: ColumnValues, candidates: Sequence[Any]) -> npt.NDArray[np.int64]:
    """Counts of each public candidate; values outside the list are ignored.

    Replace-one changes at most two counts, each by 1: L1 sensitivity 2, L2 sensitivity sqrt 2.
    """
    idx = pd.Index(list(candidates))
    if not idx.is_unique:
        raise UserError("the candidate category list has duplicates")
    pos = idx.get_indexer(pd.Series(values).reset_index(drop=True))
    pos = pos[pos >= 0]
    return np.bincount(pos, minlength=len(idx)).astype(np.int64)


def category_counts(values: ColumnValues) -> dict[Any, int]:
    """Counts of each distinct value (missing values dropped), in order of first appearance: the
    summary :func:`dp_select_categories_from_counts` reads without a candidate list (the order
    is the order its noise is drawn in).  Memory: O(distinct values), not bounded by a public
    size (a column of identifiers has as many entries as rows); with a public candidate list use
    :func:`candidate_counts` (O(candidates)).  Counts of batches add up per value; for the same
    noise order as one pass, merge the batches' dicts in row order (first appearance)."""
    keys, counts = _value_counts(values)
    return dict(zip(keys, counts.tolist(), strict=True))


def _value_counts(values: ColumnValues) -> tuple[list[Any], npt.NDArray[np.int64]]:
    vc = pd.Series(values).reset_index(drop=True).value_counts(dropna=True, sort=False)
    out: npt.NDArray[np.int64] = np.asarray(vc.to_numpy(), dtype=np.int64)
    return vc.index.tolist(), out


def _counts_input(
    counts: Mapping[Any, int] | npt.ArrayLike, candidates: Sequence[Any] | None
) -> tuple[list[Any] | None, npt.NDArray[np.int64]]:
    """``(values in noise order or None, counts)`` from a ``*_from_counts`` argument: with a
    candidate list, counts aligned with it (or a mapping, absent candidates count 0); without,
    a mapping of the values present to their counts (each >= 1), in the order to draw noise."""
    if candidates is not None:
        cands = list(candidates)
        if not pd.Index(cands).is_unique:
            raise UserError("the candidate category list has duplicates")
        if isinstance(counts, Mapping):
            arr = np.array([int(counts.get(c, 0)) for c in cands], dtype=np.int64)
        else:
            arr = np.asarray(counts, dtype=np.int64).reshape(-1)
            if arr.size != len(cands):
                raise ValueError(f"{arr.size} counts for {len(cands)} candidates")
        return None, arr
    if not isinstance(counts, Mapping):
        raise ValueError("without a candidate list the counts must map each value present to its count")
    arr = np.fromiter((int(v) for v in counts.values()), dtype=np.int64, count=len(counts))
    if np.any(arr < 1):
        raise ValueError("partition selection reads the values present in the data only (counts >= 1)")
    return list(counts.keys()), arr


def _partition_scale(epsilon: float) -> Fraction:
    """The discrete Laplace scale b = 2/eps as an exact rational: two counts move by 1, so the
    pure part is exactly 2/b = eps (a float 2/eps could round b down by an ulp)."""
    return Fraction(2) / Fraction(float(epsilon))


def partition_singleton_keep_probability(epsilon: float, threshold: float) -> float:
    """P(1 + Z > T) for Z ~ discrete Laplace(2/eps) and a threshold T >= 0: with integer counts
    ``c + Z > T`` iff ``Z >= floor(T) + 1 - c``, and P(Z >= j) = q^j / (1 + q) for j >= 0,
    q = e^{-eps/2}."""
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    q = math.exp(-float(epsilon) / 2.0)
    j = math.floor(threshold)
    return q**j / (1.0 + q)


def partition_selection_threshold(epsilon: float, delta: float) -> int:
    """Smallest integer threshold ``T`` at which a partition held by one record is kept with
    probability ``q^T / (1 + q) <= delta`` (discrete Laplace(2/eps) noise, q = e^{-eps/2});
    about ``(2/eps) log(1/(2 delta))``.  Needs ``delta <= 1/2``.

    Proof: docs/domains.md §Partition selection (summarised in :func:`dp_select_categories`).
    The float evaluation carries a relative
    error ~1e-15, so the condition is checked against ``delta (1 - 1e-12)``.
    """
    if not (0 < delta <= 0.5):
        raise UserError(f"partition selection needs 0 < delta <= 1/2, got {delta!r}")
    q = math.exp(-float(epsilon) / 2.0)
    t = max(0, math.ceil(math.log(1.0 / ((1.0 + q) * delta)) / (float(epsilon) / 2.0)) - 1)
    while partition_singleton_keep_probability(epsilon, t) > delta * (1 - 1e-12):
        t += 1
    return t


def _sorted_values(vals: list[Any]) -> list[Any]:
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=lambda v: (type(v).__name__, str(v)))


def dp_select_categories(
    values: ColumnValues,
    *,
    epsilon: float,
    delta: float,
    rng: RandomSource,
    candidates: Sequence[Any] | None = None,
    threshold: float | None = None,
    noise: str = "laplace",
    false_inclusion: float = 0.05,
    label: str = "",
) -> tuple[list[Any], PrivacyLoss]:
    """DP category list of a column (docs/domains.md §Noisy counts of public candidates;
    docs/domains.md §Partition selection).

    **With a public candidate list** (``candidates``): noisy counts of the candidates, kept
    when above ``threshold``; values outside the list are ignored.  Replace-one moves one
    record between two categories: L1 sensitivity 2, L2 sensitivity sqrt 2.
    ``noise="laplace"``: Laplace(2/eps) per count -> pure eps-DP (delta unused, loss delta 0).
    ``noise="gaussian"``: sigma = sqrt2 * c with c the analytic-Gaussian multiplier for
    (eps, delta) (exact GDP, mu = sqrt2/sigma).  Default threshold: the noise quantile at which a
    zero-count candidate is kept with probability ``false_inclusion / len(candidates)``.
    Output is a subset of ``candidates`` only, in the candidates' order.

    **Without a list**: Laplace partition selection (Korolova et al. 2009; Gopi et al. 2020;
    Desfontaines, Voss, Gipson & Mandayam 2022), adapted to replace-one, with the exact discrete
    Laplace (counts are integers, so no float noise).  Each distinct value ``v`` with count
    ``c_v >= 1`` is kept iff ``c_v + Z_v > T``, ``Z_v`` ~ discrete Laplace with
    P(z) ∝ exp(-|z|/b), ``b = 2/eps``, and ``T`` the smallest integer with
    ``p1 = P(1 + Z > T) = q^T/(1+q) <= delta`` (q = e^{-1/b};
    :func:`partition_selection_threshold`).  Proof (replace-one): a record moves from
    partition ``a`` to ``a'``; only those two keep decisions change law, independently; a
    shift of one count changes a keep probability by a factor <= e^{1/b} (the discrete Laplace's
    likelihood ratio).  (i) Both partitions present in both datasets:
    each count moves by 1, each decision is (1/b = eps/2)-DP, jointly (eps, 0).  (ii) ``a`` held
    only by the moved record (kept w.p. ``p1`` vs never), ``a'`` present in both: the hockey-stick
    divergence at ``e^eps`` is ``p1`` from the outcomes keeping ``a`` plus, on the outcomes
    dropping ``a``, ``sum ((1-p1) P_b - e^eps Q_b)_+ = 0`` since ``P_b <= e^{eps/2} Q_b``; the
    reverse direction is ``<= sum (Q_b - e^eps (1-p1) P_b)_+ <= p1``.  (iii) ``a`` 1->0 and
    ``a'`` 0->1: divergence ``p1``.  So the release is (eps, p1)-DP, p1 <= delta (the naive
    basic-composition argument would charge ``2 p1``; tests check all count cases exactly).
    Under add/remove neighbours the classical rule is Lap(1/eps) with
    ``T = 1 + log(1/(2 delta))/eps``; replace-one needs the doubled scale.  The kept list is
    returned sorted by value, so its order carries no count information.  Missing values are not a category here.

    Reads the data through :func:`candidate_counts` (with a list) or :func:`category_counts`
    (without) only: :func:`dp_select_categories_from_counts` does the rest.
    """
    if not (epsilon > 0):
        raise UserError(f"epsilon must be > 0, got {epsilon!r}")
    if candidates is not None:
        cands = list(candidates)
        counts = candidate_counts(values, cands) if cands else np.zeros(0, dtype=np.int64)
        return _select_categories(
            None,
            counts,
            epsilon=epsilon,
            delta=delta,
            rng=rng,
            candidates=cands,
            threshold=threshold,
            noise=noise,
            false_inclusion=false_inclusion,
            label=label,
        )
    keys, counts = _value_counts(values)
    return _select_categories(
        keys,
        counts,
        epsilon=epsilon,
        delta=delta,
        rng=rng,
        candidates=None,
        threshold=threshold,
        noise=noise,
        false_inclusion=false_inclusion,
        label=label,
    )


def dp_select_categories_from_counts(
    counts: Mapping[Any, int] | npt.ArrayLike,
    *,
    epsilon: float,
    delta: float,
    rng: RandomSource,
    candidates: Sequence[Any] | None = None,
    threshold: float | None = None,
    noise: str = "laplace",
    false_inclusion: float = 0.05,
    label: str = "",
) -> tuple[list[Any], PrivacyLoss]:
    """:func:`dp_select_categories` from the data's summary: with ``candidates``, their counts
    (:func:`candidate_counts`, aligned with the list; or a mapping); without, the counts of the
    values present (:func:`category_counts`: a mapping whose order is the order the noise is
    drawn in).  Counts of batches are summed first.  The same draws as
    :func:`dp_select_categories` on the values, so the same list for the same random source."""
    keys, arr = _counts_input(counts, candidates)
    return _select_categories(
        keys,
        arr,
        epsilon=epsilon,
        delta=delta,
        rng=rng,
        candidates=None if candidates is None else list(candidates),
        threshold=threshold,
        noise=noise,
        false_inclusion=false_inclusion,
        label=label,
    )


def _select_categories(
    keys: list[Any] | None,
    counts: npt.NDArray[np.int64],
    *,
    epsilon: float,
    delta: float,
    rng: RandomSource,
    candidates: list[Any] | None,
    threshold: float | None,
    noise: str,
    false_inclusion: float,
    label: str,
) -> tuple[list[Any], PrivacyLoss]:
    if not (epsilon > 0):
        raise UserError(f"epsilon must be > 0, got {epsilon!r}")
    if candidates is not None:
        cands = candidates
        if not cands:
            return [], PrivacyLoss(0.0, 0.0, label=label or "DP category selection")
        k = len(cands)
        beta = false_inclusion / k
        if noise == "laplace":
            b = 2.0 / epsilon
            # counts are integers: the exact discrete Laplace keeps the pure-eps claim exact (a
            # float Laplace built from capped exponentials is truncated, adding a tiny delta)
            from dpstudio.engine.mechanisms.laplace import discrete_laplace_rdp
            from dpstudio.engine.mechanisms.sampling import discrete_laplace

            z = discrete_laplace(b, k, rng).astype(np.float64)
            thr = b * math.log(1.0 / (2.0 * beta)) if threshold is None else float(threshold)
            loss = PrivacyLoss(
                epsilon=float(epsilon),
                delta=0.0,
                label=label or "DP category selection",
                # two counts move by 1 each: twice the discrete Laplace's own RDP at shift 1
                rdp=tuple(2 * v for v in discrete_laplace_rdp(b, 1)),
                details={
                    "mechanism": "discrete Laplace noisy counts of public candidates",
                    "scale": b,
                    "l1_sensitivity": 2,
                    "threshold": thr,
                },
            )
        elif noise == "gaussian":
            if not (0 < delta < 1):
                raise UserError("Gaussian noise needs 0 < delta < 1")
            sigma = math.sqrt(2.0) * calibrate_gaussian_gdp(epsilon, delta, 1)
            # counts are integers, so on the grid 2^-20 Z: exact discrete Gaussian noise there,
            # whose privacy curve is the continuous Gaussian's up to exp(-2 pi^2 (sigma/g)^2)
            # terms (see dpstudio.engine.synth.privacy)
            from dpstudio.engine.synth.privacy import gaussian_noise

            z, how = gaussian_noise(rng, sigma, (k,), _COUNT_GRID)
            from scipy.stats import norm

            thr = float(sigma * norm.isf(beta)) if threshold is None else float(threshold)
            loss = PrivacyLoss(
                epsilon=float(epsilon),
                delta=float(delta),
                label=label or "DP category selection",
                rdp=rdp_gaussian(math.sqrt(2.0), sigma),
                gdp_mu=math.sqrt(2.0) / sigma,
                details={
                    "mechanism": "Gaussian noisy counts of public candidates",
                    "sigma": sigma,
                    "l2_sensitivity": math.sqrt(2.0),
                    "threshold": thr,
                    "noise": how,
                },
            )
        else:
            raise UserError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
        keep = counts + z > thr
        return [c for c, kp in zip(cands, keep, strict=True) if kp], loss

    if not (0 < delta <= 0.5):
        raise UserError("selecting categories without a public list needs 0 < delta <= 1/2")
    if noise != "laplace":
        raise UserError("partition selection without a candidate list uses Laplace noise")
    from dpstudio.engine.mechanisms.sampling import discrete_laplace

    assert keys is not None
    scale = _partition_scale(epsilon)
    least = partition_selection_threshold(epsilon, delta)
    thr = float(least) if threshold is None else float(threshold)
    if math.floor(thr) < least:
        raise UserError(
            f"a threshold below {least} (the smallest at which a value held by one "
            f"record is kept with probability <= delta) does not deliver (eps, delta)-DP"
        )
    z_int = discrete_laplace(scale, len(keys), rng)
    keep = counts + z_int > thr
    kept = _sorted_values([v for v, kp in zip(keys, keep, strict=True) if kp])
    loss = PrivacyLoss(
        epsilon=float(epsilon),
        delta=float(delta),
        label=label or "DP category discovery",
        details={
            "mechanism": "discrete Laplace partition selection (replace-one)",
            "scale": float(scale),
            "threshold": thr,
            "singleton_keep_probability": partition_singleton_keep_probability(epsilon, thr),
        },
    )
    return kept, loss


# --------------------------------------------------------------------------- Gaussian (zCDP) selection


def _dg_log_weight(z: npt.NDArray[np.float64], sigma: float) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = -(z * z) / (2.0 * sigma * sigma)
    return out


def gaussian_partition_keep_probability(sigma: float, threshold: int) -> float:
    """An upper bound (tight to ~1e-15 relative for sigma <= 2000) on ``P(1 + Z > T) = P(Z >= T)``
    for ``Z`` the discrete Gaussian on the integers with ``P(z) ∝ exp(-z^2 / (2 sigma^2))`` and an
    integer threshold ``T >= 1``: the keep probability of a partition held by one record.

    sigma <= 2000: the tail sums the weights from ``T`` to ``m = T + 12 sigma + 40`` and bounds the
    rest geometrically (the ratio of consecutive weights beyond ``m`` is at most
    ``exp(-(2m + 1) / (2 sigma^2))``); the normaliser is summed over ``|z| <= 12 sigma + 40`` only,
    which makes it smaller and the result larger (conservative).  Larger sigma (a tiny budget):
    the normaliser is at least ``sigma sqrt(2 pi)`` (Poisson summation) and the tail at most
    ``exp(-T^2/(2 sigma^2)) + sigma sqrt(2 pi) Phi(-T/sigma)`` (the first term plus the integral
    of the decreasing weight), so ``p1 <= Phi(-T/sigma) + phi(T/sigma)/sigma`` (relative slack
    below ``T/sigma^2``)."""
    t = int(threshold)
    if t < 1 or not (sigma > 0) or not math.isfinite(sigma):
        raise ValueError(f"need an integer threshold >= 1 and a finite sigma > 0, got {threshold!r}, {sigma!r}")
    if sigma > 2000.0:
        from scipy.stats import norm

        x = t / float(sigma)
        return min(float(norm.sf(x)) + float(norm.pdf(x)) / float(sigma), 1.0)
    width = int(math.ceil(12.0 * sigma)) + 40
    m = t + width
    z = np.arange(t, m, dtype=np.float64)
    tail = float(np.exp(_dg_log_weight(z, sigma)).sum())
    ratio = math.exp(-(2.0 * m + 1.0) / (2.0 * sigma * sigma))
    tail += math.exp(-(m * m) / (2.0 * sigma * sigma)) / (1.0 - ratio)
    zz = np.arange(1, width + 1, dtype=np.float64)
    norm_lower = 1.0 + 2.0 * float(np.exp(_dg_log_weight(zz, sigma)).sum())
    return min(tail / norm_lower, 1.0)


def gaussian_partition_threshold(sigma: float, delta: float) -> int:
    """Smallest integer threshold ``T >= 1`` at which a partition held by one record is kept with
    probability ``P(Z >= T) <= delta`` (``Z`` the discrete Gaussian of scale ``sigma``, the bound
    of :func:`gaussian_partition_keep_probability`): about ``sigma Phi^-1(1 - delta)``.  Found by
    bisection on the decreasing keep probability; checked against ``delta (1 - 1e-12)``."""
    if not (0 < delta <= 0.5):
        raise UserError(f"partition selection needs 0 < delta <= 1/2, got {delta!r}")
    limit = delta * (1 - 1e-12)

    def ok(t: int) -> bool:
        return gaussian_partition_keep_probability(sigma, t) <= limit

    if ok(1):
        return 1
    from scipy.stats import norm

    lo = 1  # not ok
    hi = max(2, int(math.ceil(float(sigma) * float(norm.isf(delta)))) + 1)
    while not ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def dp_select_categories_gaussian(
    values: ColumnValues,
    *,
    sigma: float,
    delta: float,
    rng: RandomSource,
    candidates: Sequence[Any] | None = None,
    selection_delta: float | None = None,
    false_inclusion: float = 0.05,
    label: str = "",
) -> tuple[list[Any], PrivacyLoss]:
    """DP category list with Gaussian noise of scale ``sigma`` on the counts, accounted in zCDP
    (docs/domains.md §Partition selection with Gaussian noise).

    Replace-one moves a record from partition ``a`` to ``a'``: two counts move by 1 (squared L2
    sensitivity 2), so the noisy counts are ``rho = 1 / sigma^2``-zCDP (Bun & Steinke 2016,
    Prop. 1.6); the discrete Gaussian meets this bound exactly for integer shifts (Canonne,
    Kamath & Steinke 2020).

    **With a public candidate list**: noisy counts of the candidates (exact discrete Gaussian on
    the grid 2^-20, as :func:`dp_select_categories` draws it), kept above the noise quantile at
    which a zero-count candidate is kept with probability ``false_inclusion / len(candidates)``;
    also ``mu = sqrt 2 / sigma``-GDP.

    **Without a list**: each distinct value with count ``c >= 1`` is kept iff ``c + Z > T``, ``Z``
    the exact discrete Gaussian on the integers (CKS 2020), ``T`` the smallest integer with
    ``p1 = P(Z >= T) <= selection_delta`` (:func:`gaussian_partition_threshold`).  The release is
    ``p1``-approximately ``rho``-zCDP (Bun & Steinke 2016, Def. 8.1), never ``2 p1``: in each
    case, condition each dataset on the event that the partition only it holds (if any) is not
    kept -- an event of probability ``1 - p1`` on both sides (for a side that holds no such
    partition, the same event on the noise of the other's singleton, which it draws but never
    reads) -- and what remains differs by at most two counts moved by 1.  The loss carries
    ``zcdp_rho``, ``zcdp_delta = p1``.

    ``delta``: the delta of the stand-alone (epsilon, delta) figure the loss states (its epsilon
    is the zCDP conversion at ``delta - p1``, Canonne, Kamath & Steinke 2020, Prop. 12).
    Missing values are not a category here; the kept list is sorted by value (no partitions)
    or in the candidates' order.

    Reads the data through :func:`candidate_counts` (with a list) or :func:`category_counts`
    (without) only: :func:`dp_select_categories_gaussian_from_counts` does the rest.
    """
    if candidates is not None:
        cands = list(candidates)
        return _select_categories_gaussian(
            None,
            lambda: candidate_counts(values, cands),
            sigma=sigma,
            delta=delta,
            rng=rng,
            candidates=cands,
            selection_delta=selection_delta,
            false_inclusion=false_inclusion,
            label=label,
        )
    keys, counts = _value_counts(values)
    return _select_categories_gaussian(
        keys,
        lambda: counts,
        sigma=sigma,
        delta=delta,
        rng=rng,
        candidates=None,
        selection_delta=selection_delta,
        false_inclusion=false_inclusion,
        label=label,
    )


def dp_select_categories_gaussian_from_counts(
    counts: Mapping[Any, int] | npt.ArrayLike,
    *,
    sigma: float,
    delta: float,
    rng: RandomSource,
    candidates: Sequence[Any] | None = None,
    selection_delta: float | None = None,
    false_inclusion: float = 0.05,
    label: str = "",
) -> tuple[list[Any], PrivacyLoss]:
    """:func:`dp_select_categories_gaussian` from the data's summary (the counts as
    :func:`dp_select_categories_from_counts` takes them).  The same draws, so the same list for
    the same random source."""
    keys, arr = _counts_input(counts, candidates)
    return _select_categories_gaussian(
        keys,
        lambda: arr,
        sigma=sigma,
        delta=delta,
        rng=rng,
        candidates=None if candidates is None else list(candidates),
        selection_delta=selection_delta,
        false_inclusion=false_inclusion,
        label=label,
    )


def _select_categories_gaussian(
    keys: list[Any] | None,
    get_counts: Callable[[], npt.NDArray[np.int64]],
    *,
    sigma: float,
    delta: float,
    rng: RandomSource,
    candidates: list[Any] | None,
    selection_delta: float | None,
    false_inclusion: float,
    label: str,
) -> tuple[list[Any], PrivacyLoss]:
    """The selection; ``get_counts`` is called where the checks of the public inputs are done
    (so a bad input is reported before a duplicate in the candidate list, as before)."""
    from dpstudio.engine.accounting import zcdp_epsilon

    if not (sigma > 0) or not math.isfinite(sigma):
        raise UserError(f"sigma must be finite and > 0, got {sigma!r}")
    rho = 1.0 / (float(sigma) ** 2)
    if candidates is not None:
        cands = candidates
        if not cands:
            return [], PrivacyLoss(0.0, 0.0, label=label or "DP category selection")
        if not (0 < delta < 1):
            raise UserError("Gaussian noise needs 0 < delta < 1")
        from scipy.stats import norm

        from dpstudio.engine.synth.privacy import gaussian_noise

        counts = get_counts()
        k = len(cands)
        z, how = gaussian_noise(rng, float(sigma), (k,), _COUNT_GRID)
        thr = float(sigma * norm.isf(false_inclusion / k))
        loss = PrivacyLoss(
            epsilon=zcdp_epsilon(rho, delta),
            delta=float(delta),
            label=label or "DP category selection",
            gdp_mu=math.sqrt(2.0) / float(sigma),
            zcdp_rho=rho,
            details={
                "mechanism": "Gaussian noisy counts of public candidates (zCDP)",
                "sigma": float(sigma),
                "l2_sensitivity": math.sqrt(2.0),
                "threshold": thr,
                "noise": how,
            },
        )
        keep = counts + z > thr
        return [c for c, kp in zip(cands, keep, strict=True) if kp], loss

    if selection_delta is None or not (0 < selection_delta <= 0.5):
        raise UserError("selecting categories without a public list needs 0 < selection delta <= 1/2")
    from dpstudio.engine.mechanisms.sampling import discrete_gaussian

    t = gaussian_partition_threshold(float(sigma), float(selection_delta))
    p1 = gaussian_partition_keep_probability(float(sigma), t)
    if not (delta > p1):
        raise UserError(f"the stated delta {delta!r} must exceed the selection's {p1!r}")
    assert keys is not None
    counts = get_counts()
    z_int = discrete_gaussian(Fraction(float(sigma)) ** 2, len(keys), rng) if len(keys) else np.zeros(0, np.int64)
    keep = counts + z_int > t
    kept = _sorted_values([v for v, kp in zip(keys, keep, strict=True) if kp])
    loss = PrivacyLoss(
        epsilon=zcdp_epsilon(rho, float(delta) - p1),
        delta=float(delta),
        label=label or "DP category discovery",
        zcdp_rho=rho,
        zcdp_delta=p1,
        details={
            "mechanism": "discrete Gaussian partition selection (replace-one, approximate zCDP)",
            "sigma": float(sigma),
            "threshold": float(t),
            "singleton_keep_probability": p1,
        },
    )
    return kept, loss
