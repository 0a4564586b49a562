"""MST synthesizer: public binning, domain compression, estimation and exact accounting."""

import math

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.rng import RandomSource
from dpstudio.engine.synth.cells import column_bins
from dpstudio.engine.synth.encoding import ColumnSpec, TableSpec, spec_from_adult
from dpstudio.engine.synth.mst import MSTSynthesizer, pair_counts, project_table, selection_score
from dpstudio.engine.synth.privacy import zcdp_rho_for


def test_auto_bins_follow_the_public_spec_only():
    spec = spec_from_adult()
    kinds = {c.name: column_bins(c).kind for c in spec.numeric}
    assert kinds == {
        "age": "linear",
        "fnlwgt": "linear",
        "education-num": "per-value",
        "capital-gain": "zero+log",
        "capital-loss": "zero+log",
        "hours-per-week": "linear",
    }
    edu = column_bins(spec.numeric[2])
    assert list(edu.edges) == list(range(1, 18))
    gain = column_bins(spec.numeric[3])
    assert gain.edges[0] == 0 and gain.edges[1] == 1 and gain.edges[-1] == 100000  # zeros alone
    assert np.all(np.diff(np.log(gain.edges[2:])) > 0)
    # the same spec gives the same edges, whatever data is fitted
    gen = np.random.default_rng(0)
    small = TableSpec(
        (
            ColumnSpec.numeric("g", 0, 99999, True),
            ColumnSpec.numeric("a", 17, 90, True),
            ColumnSpec.numeric("z", -1.0, 1.0),
        ),
        ColumnSpec.categorical("y", (0, 1)),
    )
    fits = []
    for data in (
        pd.DataFrame({"g": np.zeros(300, int), "a": np.full(300, 17), "z": np.zeros(300), "y": np.zeros(300, int)}),
        pd.DataFrame(
            {
                "g": gen.integers(0, 99999, 300),
                "a": gen.integers(17, 91, 300),
                "z": gen.uniform(-1, 1, 300),
                "y": gen.integers(0, 2, 300),
            }
        ),
    ):
        f = MSTSynthesizer().fit(data, small, epsilon=1.0, delta=1e-5, rng=RandomSource(1))
        fits.append([b.edges for b in f.col_bins])
    for e1, e2, c in zip(*fits, small.numeric, strict=True):
        assert np.array_equal(e1, e2)
        assert np.array_equal(e1, column_bins(c).edges)


@pytest.mark.parametrize(
    "low,high,bins,binning",
    [
        (17, 90, 16, "auto"),
        (1, 16, 16, "auto"),
        (0, 99999, 16, "auto"),
        (0, 4356, 12, "auto"),
        (-3, 7, 4, "auto"),
        (1, 99, 16, "auto"),
    ],
)
def test_integer_aligned_bins_partition_the_integers(low, high, bins, binning):
    cb = column_bins(ColumnSpec.numeric("v", low, high, True), bins, binning)
    assert cb.aligned and cb.size <= max(bins, 32)
    values = np.arange(low, high + 1)
    codes = cb.codes(values.astype(float))
    assert codes.min() == 0 and codes.max() == cb.size - 1 and np.all(np.diff(codes) >= 0)
    # decoding a bin gives integers of that bin only, and every integer of the bin can come out
    gen = np.random.default_rng(0)
    k = np.repeat(np.arange(cb.size), 200)
    dec = cb.decode(k, gen.random(len(k)), True)
    assert np.array_equal(cb.codes(dec.astype(float)), k)
    assert dec.min() == low and dec.max() <= high
    width = np.diff(cb.edges).astype(int)
    for kk in np.flatnonzero(width <= 10):  # narrow bins: every integer comes out
        assert set(dec[k == kk]) == set(range(int(cb.edges[kk]), int(cb.edges[kk + 1])))


def test_uniform_bins_are_the_original_scheme():
    c = ColumnSpec.numeric("v", 0, 10)
    cb = column_bins(c, 10, "uniform")
    assert np.allclose(cb.edges, np.linspace(0, 10, 11)) and not cb.aligned
    assert list(cb.codes(np.array([0.0, 0.99, 1.0, 9.99, 10.0]))) == [0, 0, 1, 9, 9]


def test_compressed_score_sensitivity():
    """Cells merged by a (public) map: the penalised score still moves by <= 2."""
    gen = np.random.default_rng(3)
    for _ in range(200):
        n = 40
        a, b = gen.integers(0, 6, n), gen.integers(0, 5, n)
        ma, mb = np.array([0, 1, 2, 2, 2, 2]), np.array([0, 1, 1, 2, 2])
        pa, pb = gen.dirichlet(np.ones(3)), gen.dirichlet(np.ones(3))
        pen = gen.uniform(0, 50)
        s1 = selection_score(pair_counts(ma[a], mb[b], 3, 3), pa, pb, n) - pen
        i = gen.integers(n)
        a[i], b[i] = gen.integers(0, 6), gen.integers(0, 5)
        s2 = selection_score(pair_counts(ma[a], mb[b], 3, 3), pa, pb, n) - pen
        assert abs(s1 - s2) <= 2.0 + 1e-9


def test_project_table_is_the_least_squares_projection():
    gen = np.random.default_rng(4)
    for _ in range(20):
        true = gen.integers(0, 30, (5, 4)).astype(float)
        noisy = true + gen.normal(0, 8, true.shape)
        r, c = true.sum(1), true.sum(0)
        x = project_table(noisy, r, c, iters=2000)
        assert np.all(x >= 0)
        assert np.allclose(x.sum(1), r, atol=1e-6) and np.allclose(x.sum(0), c, atol=1e-6)
        # optimality against random feasible directions (cycles keep margins, stay >= 0 if small)
        f0 = ((x - noisy) ** 2).sum()
        for _ in range(50):
            i1, i2 = gen.choice(5, 2, replace=False)
            j1, j2 = gen.choice(4, 2, replace=False)
            step = min(x[i1, j2], x[i2, j1]) * gen.random()
            y = x.copy()
            y[i1, j1] += step
            y[i2, j2] += step
            y[i1, j2] -= step
            y[i2, j1] -= step
            assert ((y - noisy) ** 2).sum() >= f0 - 1e-3
    feasible = gen.integers(1, 9, (3, 3)).astype(float)
    assert np.allclose(project_table(feasible, feasible.sum(1), feasible.sum(0)), feasible, atol=1e-6)


@pytest.mark.parametrize(
    "opts",
    [
        {},
        {"budget": (1, 0, 2)},
        {"budget": (0.2, 0.1, 0.7)},
        {"binning": "uniform", "compress": -1, "penalty": 0, "estimator": "ipf"},
    ],
)
@pytest.mark.parametrize("eps", [0.3, 1.0, 5.0])
def test_total_spend_is_exactly_the_recipe(opts, eps):
    gen = np.random.default_rng(5)
    n = 500
    spec = TableSpec(
        (
            ColumnSpec.numeric("g", 0, 99999, True),
            ColumnSpec.numeric("e", 1, 16, True),
            ColumnSpec.categorical("c", "abcdefgh"),
        ),
        ColumnSpec.categorical("y", (0, 1)),
    )
    data = pd.DataFrame(
        {
            "g": np.where(gen.random(n) < 0.9, 0, gen.integers(0, 99999, n)),
            "e": gen.integers(1, 17, n),
            "c": gen.choice(list("abcdefghq"), n),
            "y": gen.integers(0, 2, n),
        }
    )
    f = MSTSynthesizer(**opts).fit(data, spec, epsilon=eps, delta=1e-5, rng=RandomSource(2))
    loss = f.privacy_loss()
    assert loss.epsilon == pytest.approx(eps, rel=1e-6) and loss.epsilon <= eps + 1e-9
    assert loss.details["zcdp_rho"] == pytest.approx(zcdp_rho_for(eps, 1e-5), rel=1e-6)
    d = 4
    n_em = 0 if opts.get("budget", (1, 1, 1))[1] == 0 else d - 1
    assert len(f.components) == d + n_em + (d - 1)
    for c in f.components:
        if c.gdp_mu is not None:  # Gaussian counts: replace-one moves one unit between two cells
            assert c.details["raw_sensitivity"] == pytest.approx(math.sqrt(2))
        else:
            assert c.details["sensitivity"] == 2.0
    s = f.sample(300, RandomSource(3))
    assert s["g"].between(0, 99999).all() and s["e"].between(1, 16).all()
    assert set(s["c"]) <= set("abcdefgh") and set(s["y"]) <= {0, 1}


def test_marginal_fidelity_compares_the_sample_with_the_noisy_one_way_releases():
    """The published fidelity figure reads the fit's own noisy 1-way measurements (DP outputs):
    small for the model's own sample, large for a table that ignores the measurements."""
    spec = TableSpec(
        (ColumnSpec.numeric("a", 0, 9, True), ColumnSpec.categorical("c", ("x", "y", "z"))),
        ColumnSpec.categorical("y", (0, 1)),
    )
    gen = np.random.default_rng(3)
    n = 4000
    data = pd.DataFrame(
        {
            "a": np.minimum(gen.poisson(2, n), 9),
            "c": gen.choice(["x", "y", "z"], n, p=[0.7, 0.2, 0.1]),
            "y": gen.integers(0, 2, n),
        }
    )
    fitted = MSTSynthesizer().fit(data, spec, epsilon=4.0, delta=1e-6, rng=RandomSource(2))
    assert fitted.noisy_one_way is not None and len(fitted.noisy_one_way) == 3
    own = fitted.marginal_fidelity(fitted.sample(n, RandomSource(5)))
    assert own is not None and set(own) == {"a", "c", "y"}
    assert max(own.values()) < 0.05
    skewed = pd.DataFrame({"a": np.full(n, 9), "c": np.full(n, "z"), "y": np.zeros(n, int)})
    far = fitted.marginal_fidelity(skewed)
    assert far is not None
    assert far["a"] > 0.8 and far["c"] > 0.8 and far["y"] > 0.4
