"""Calibration, composition and sensitivities of the DP synthesizers (Monte-Carlo checks)."""

import math

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.accounting import RDP_ORDERS
from dpstudio.engine.rng import RandomSource
from dpstudio.engine.synth import privacy as P
from dpstudio.engine.synth.encoding import ColumnSpec, Encoder, TableSpec
from dpstudio.engine.synth.mst import pair_counts, selection_score
from dpstudio.engine.synth.pearl import (
    class_proportions,
    pair_distance_mean,
    pair_distance_sensitivity,
    weighted_embedding,
)


def test_gdp_calibration_matches_brief_and_rdp_crosscheck():
    mu = P.gdp_mu_for(1.0, 1e-5)
    # two sensitivity-1 releases with the same sigma (BRIEF 3.9: sigma ~ 5.28)
    assert math.sqrt(2) / mu == pytest.approx(5.28, abs=0.01)
    assert P.gdp_delta(1.0, mu) == pytest.approx(1e-5, rel=1e-6)
    assert P.gdp_epsilon(mu, 1e-5) == pytest.approx(1.0, abs=1e-9)
    # RDP with the improved conversion is a valid but looser bound: a bit larger epsilon
    e_rdp = P.rdp_to_dp(P.gaussian_rdp_curve(mu), RDP_ORDERS, 1e-5)
    e_z = P.zcdp_epsilon(mu * mu / 2, 1e-5)
    assert 1.0 < e_z <= e_rdp < 1.15
    # classic RDP conversion is looser still
    classic = min(a * mu * mu / 2 + math.log(1e5) / (a - 1) for a in RDP_ORDERS)
    assert classic > e_rdp
    # GDP delta by direct numerical integration of the privacy-loss distribution
    from scipy.stats import norm

    z = np.linspace(-40, 40, 400001)
    llr = mu * z - mu * mu / 2  # loss for N(mu,1) vs N(0,1) at x = z
    dens = norm.pdf(z - mu)  # x ~ N(mu, 1)
    d_num = np.trapezoid(np.clip(1 - np.exp(1.0 - llr), 0, None) * dens, z)
    assert d_num == pytest.approx(1e-5, rel=1e-3)


def test_composition_and_zcdp_inverse():
    mus = [0.1, 0.2, 0.05]
    assert P.gdp_compose(mus) == pytest.approx(math.sqrt(0.01 + 0.04 + 0.0025))
    rho = P.zcdp_rho_for(1.0, 1e-5)
    assert P.zcdp_epsilon(rho, 1e-5) == pytest.approx(1.0, abs=1e-6)


def test_release_noise_scale_and_grid():
    rng = RandomSource(1)
    val = np.full(20000, 0.3)
    out, loss = P.release_gaussian(rng, val, 0.01, 0.5, 1e-5, "t")
    sens = loss.details["sensitivity"]
    assert sens >= 0.01 and sens < 0.01 * 1.001
    assert loss.gdp_mu == pytest.approx(0.5)
    assert loss.details["sigma"] == pytest.approx(sens / 0.5)
    assert np.std(out - val) == pytest.approx(loss.details["sigma"], rel=0.03)
    grid = loss.details["grid"]
    assert np.allclose(np.round(out / grid) * grid, out, atol=0)  # on the lattice
    assert math.log2(grid) == int(math.log2(grid))


def _spec():
    return TableSpec(
        (
            ColumnSpec.numeric("a", 0, 10),
            ColumnSpec.numeric("b", -5, 5),
            ColumnSpec.categorical("c", "xyz"),
            ColumnSpec.categorical("d", range(4)),
        ),
        ColumnSpec.categorical("y", (0, 1, 2)),
    )


def _frame(n, gen):
    return pd.DataFrame(
        {
            "a": gen.uniform(-2, 12, n),
            "b": gen.normal(0, 3, n),
            "c": gen.choice(list("xyzq"), n),
            "d": gen.integers(0, 5, n),
            "y": gen.integers(0, 3, n),
        }
    )


def _extreme_record(enc, gen):
    """Corner records: numbers at +-1, random categories (the extremes of the domain)."""
    x = np.zeros(enc.dim)
    x[: enc.n_num] = gen.choice([-1.0, 1.0], enc.n_num)
    for s, m in zip(enc.starts, enc.sizes, strict=True):
        x[s + gen.integers(m)] = 1.0
    return x


def test_encoding_public_bounds_and_unknowns():
    spec = _spec()
    enc = Encoder(spec)
    f = pd.DataFrame(
        {
            "a": [-3.0, 5.0, 99.0, np.nan],
            "b": [0, 5, -5, 7],
            "c": ["x", "q", "z", None],
            "d": [0, 3, 7, 1],
            "y": [0, 1, 2, 5],
        }
    )
    x = enc.encode(f, dtype=np.float64)
    assert np.allclose(x[:, 0], [-1, 0, 1, 0]) and np.allclose(x[:, 1], [0, 1, -1, 1])
    assert x[1, 2:5].sum() == 0 and x[3, 2:5].sum() == 0  # unknown -> zero block
    assert x[2, 5:9].sum() == 0
    assert list(enc.label_codes(f)) == [0, 1, 2, -1]
    assert np.all(np.linalg.norm(x, axis=1) <= enc.norm_bound + 1e-12)


def test_embedding_sensitivity_monte_carlo():
    """||E(D) - E(D')||_F <= 2/n for random and extreme neighbours, and the bound is nearly hit."""
    gen = np.random.default_rng(0)
    spec = _spec()
    enc = Encoder(spec)
    n, k = 50, 64
    worst = 0.0
    for _ in range(150):
        frame = _frame(n, gen)
        x = enc.encode(frame, dtype=np.float64)
        y = enc.label_codes(frame)
        w = gen.standard_normal((k, enc.dim)) / gen.uniform(0.05, 3)
        e1 = weighted_embedding(x, y, w, 3)
        i = gen.integers(n)
        x2, y2 = x.copy(), y.copy()
        x2[i] = _extreme_record(enc, gen)
        y2[i] = gen.integers(-1, 3)
        e2 = weighted_embedding(x2, y2, w, 3)
        d = np.linalg.norm(e1 - e2) * n
        worst = max(worst, d)
        assert d <= 2.0 + 1e-9
        # joint MERF vector [E, proportions]: also 2/n
        v1 = np.concatenate([e1.ravel(), class_proportions(y, 3)])
        v2 = np.concatenate([e2.ravel(), class_proportions(y2, 3)])
        assert np.linalg.norm(v1 - v2) * n <= 2.0 + 1e-9
        assert np.linalg.norm(class_proportions(y, 3) - class_proportions(y2, 3)) * n <= math.sqrt(2) + 1e-12
    assert worst > 1.4  # random neighbours already come close to the bound 2


def test_pair_distance_sensitivity_monte_carlo():
    gen = np.random.default_rng(1)
    spec = _spec()
    enc = Encoder(spec)
    n = 41
    sens = pair_distance_sensitivity(n, enc.diameter)
    worst = 0.0
    for _ in range(150):
        frame = _frame(n, gen)
        x = enc.encode(frame, dtype=np.float64)
        perm = gen.permutation(n)
        i = gen.integers(n)
        x2 = x.copy()
        x2[i] = _extreme_record(enc, gen)
        d = abs(pair_distance_mean(x, perm) - pair_distance_mean(x2, perm))
        worst = max(worst, d)
        assert d <= sens + 1e-12
    # diameter is attained: opposite corners with different categories
    a, b = np.zeros(enc.dim), np.zeros(enc.dim)
    a[: enc.n_num], b[: enc.n_num] = 1, -1
    for s in enc.starts:
        a[s], b[s + 1] = 1, 1
    assert np.linalg.norm(a - b) == pytest.approx(enc.diameter)


def test_mst_score_sensitivity():
    gen = np.random.default_rng(2)
    for _ in range(200):
        n = 30
        a, b = gen.integers(0, 4, n), gen.integers(0, 3, n)
        pa, pb = gen.dirichlet(np.ones(4)), gen.dirichlet(np.ones(3))
        s1 = selection_score(pair_counts(a, b, 4, 3), pa, pb, n)
        i = gen.integers(n)
        a[i], b[i] = gen.integers(0, 4), gen.integers(0, 3)
        s2 = selection_score(pair_counts(a, b, 4, 3), pa, pb, n)
        assert abs(s1 - s2) <= 2.0 + 1e-9


def test_decode_stretch_reaches_the_public_bounds():
    from dpstudio.engine.synth.encoding import ColumnSpec, Encoder, TableSpec

    spec = TableSpec(columns=(ColumnSpec.numeric("gain", 0.0, 100.0),), label=None)
    enc = Encoder(spec)
    s = np.array([[-0.999], [-0.5], [0.0], [0.995]], dtype=np.float32)
    plain = enc.decode(s, None)["gain"].to_numpy()
    assert plain[0] > 0.0 and plain[3] < 100.0  # tanh never reaches the bounds
    st = enc.decode(s, None, stretch=0.02)["gain"].to_numpy()
    assert st[0] == 0.0 and st[3] == 100.0  # stretched: exactly on the bounds
    assert abs(st[2] - 50.0) < 1e-9 and abs(st[1] - 0.5 * (1 - 0.5 * 1.02) * 100) < 1e-6
