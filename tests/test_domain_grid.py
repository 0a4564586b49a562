"""DP-estimated bounds are points of a grid fixed by the public search range (Mironov 2012).

The continuous quantile (``x_(i) + uniform * length``) published floats whose low-order bits
depend on the private values; these tests fail if any estimate leaves the public grid.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpstudio.engine.domains import (
    GRID_MAX_STEPS,
    dp_bounds,
    dp_quantile,
    grid_step,
    next_grid_point,
    public_grid,
    quantile_utility,
)
from dpstudio.engine.rng import RandomSource
from dpstudio.plan.domains import resolve_dp_domains
from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Params, Randomness, Recipe, ReleaseSpec


def _dp_recipe(low, high, eps=1.0, ctype="float", rtype="density", options=None):
    dom = Domain("numeric", source="dp", search_low=float(low), search_high=float(high), cost=Cost(eps))
    return Recipe(
        InputSpec("x.csv"),
        ReleaseSpec(rtype, options=Params.of(options or {})),
        (Column("x", ctype, "sensitive", dom),),
        Budget(1.0, 1e-5),
        randomness=Randomness(seed=1),
    )


def test_grid_is_a_function_of_the_public_range_with_nice_decimal_steps():
    gen = np.random.default_rng(0)
    for _ in range(200):
        low = float(gen.uniform(-1e4, 1e4) * 10.0 ** gen.integers(-3, 3))
        high = low + float(gen.uniform(0.001, 1e5))
        g = public_grid(low, high)
        assert np.array_equal(g, public_grid(low, high))  # bit-identical on every call
        assert g[0] == low and g[-1] == high and np.all(np.diff(g) > 0)
        m, e = grid_step(low, high)
        assert m in (1, 2, 5)
        steps = (high - low) / (m * 10.0**e)
        assert 0.4 * GRID_MAX_STEPS < steps <= GRID_MAX_STEPS * (1 + 1e-12)
        # interior points are the floats nearest to the decimals j * m * 10^e
        inner = g[1:-1]
        j = np.round(inner / (m * 10.0**e)).astype(np.int64)
        want = np.array([float(f"{int(v) * m}e{e}") for v in j])
        assert np.array_equal(inner, want)
    assert grid_step(0, 10) == (5, -3) and public_grid(0, 10).size == 2001
    assert grid_step(0, 150, integer=True) == (1, 0)
    assert np.array_equal(public_grid(18, 90, integer=True), np.arange(18, 91, dtype=float))


def test_random_data_estimates_lie_on_the_public_grid():
    rng = RandomSource(5)
    gen = np.random.default_rng(6)
    for trial in range(40):
        low = float(gen.uniform(-100, 100))
        high = low + float(gen.uniform(0.5, 1000))
        integer = bool(trial % 3 == 0)
        x = gen.normal(gen.uniform(low, high), gen.uniform(0.1, 50), size=int(gen.integers(1, 300)))
        grid = public_grid(low, high, integer=integer)
        qs = dp_quantile(
            x, [0.01, 0.5, 0.99], epsilon=float(gen.uniform(0.05, 5)), low=low, high=high, rng=rng, integer=integer
        )
        lo, hi, _ = dp_bounds(x, epsilon=1.0, coarse_low=low, coarse_high=high, rng=rng, integer=integer)
        assert np.all(np.isin(qs, grid)) and lo in grid and hi in grid
        if integer:
            inner = np.array([v for v in (lo, hi) if v not in (low, high)])
            assert np.all(inner == np.round(inner))
        v = dp_quantile(x, 0.5, epsilon=1.0, low=low, high=high, rng=rng, n_bins=7)
        assert v in public_grid(low, high, n_bins=7)


def test_coinciding_quantiles_widen_to_the_neighbouring_grid_point():
    assert next_grid_point(0.5, 0, 10) == (0.5, 0.505)
    assert next_grid_point(10.0, 0, 10) == (9.995, 10.0)
    # integer column on [0, 1]: the grid is {0, 1}, the two quantiles often coincide
    rec = _dp_recipe(0, 1, ctype="integer")
    frame = pd.DataFrame({"x": np.zeros(50, dtype=np.int64)})
    rng = RandomSource(3)
    for _ in range(40):
        out, notes = resolve_dp_domains(rec, frame, rng)
        assert notes["dp_domain:x"] == [0.0, 1.0]
        assert (out.columns[0].domain.low, out.columns[0].domain.high) == (0.0, 1.0)


def _exact_published_low_law(data, low, high, eps):
    """Exact law of the published low bound: min of the two grid draws (each eps/2), widened
    to the previous point when both are the top of the grid."""
    g = public_grid(low, high)
    x = np.sort(np.asarray(data, float))
    p = []
    for q in (0.01, 0.99):
        w = np.exp(0.5 * (eps / 2) * quantile_utility(x, q, g))
        p.append(w / w.sum())
    p1, p2 = p
    s2 = np.cumsum(p2[::-1])[::-1]  # P(hi >= g_i)
    s1 = np.concatenate([np.cumsum(p1[::-1])[::-1][1:], [0.0]])  # P(lo > g_i)
    law = p1 * s2 + p2 * s1
    both_top = p1[-1] * p2[-1]
    law[-1] -= both_top
    law[-2] += both_top
    return g, law


def test_mironov_reproduction_d_vs_neighbour_cannot_be_told_apart():
    # issue 15: D = {3,5,7}, D' = {1,5,7}, search [0, 10], eps 1.  The old continuous quantile
    # gave "low in [0.5, 1) and low * 2^53 not divisible by 3" probability 0 under D (the interval
    # [0, 3) scales a 53-bit uniform by 3) and ~6 % under D'.
    def event(v):
        return (v >= 0.5) & (v < 1.0) & (np.array([int(t * 2.0**53) % 3 for t in np.atleast_1d(v)]) != 0)

    eps, runs = 1.0, 700
    rec = _dp_recipe(0, 10, eps=eps)
    grid = public_grid(0, 10)
    for data in ([3.0, 5.0, 7.0], [1.0, 5.0, 7.0]):
        frame = pd.DataFrame({"x": data})
        rng = RandomSource(20261123)
        lows = np.array([resolve_dp_domains(rec, frame, rng)[1]["dp_domain:x"][0] for _ in range(runs)])
        assert np.all(np.isin(lows, grid))  # every published bound on the public grid
        g, law = _exact_published_low_law(data, 0, 10, eps)
        p_event = float(law[event(g)].sum())
        assert p_event > 0.03  # possible under both datasets
        freq = float(event(lows).mean())
        assert abs(freq - p_event) < 5 * math.sqrt(p_event * (1 - p_event) / runs)
    # and the exact laws satisfy the eps-DP ratio bound point by point
    _, law_d = _exact_published_low_law([3.0, 5.0, 7.0], 0, 10, eps)
    _, law_d2 = _exact_published_low_law([1.0, 5.0, 7.0], 0, 10, eps)
    support = law_d > 0
    assert np.array_equal(support, law_d2 > 0) and support.sum() == law_d.size - 1  # all but the top
    assert np.max(np.abs(np.log(law_d[support] / law_d2[support]))) <= eps + 1e-9


def test_density_release_publishes_grid_bounds():
    from dpstudio.plan import density

    gen = np.random.default_rng(9)
    frame = pd.DataFrame({"x": gen.normal(4.2, 1.3, size=300)})
    rec = _dp_recipe(0, 10, options={"grid_size": 16})
    out = density.execute(density.compile(rec), frame, RandomSource(4))
    xs = out.artifact["grid"]["x"]
    assert xs[0] in public_grid(0, 10) and xs[-1] in public_grid(0, 10) and xs[0] < xs[-1]
