"""Guards for the seed errata (docs/errata.md) and for the proven guarantee of the discrete
Gaussian noise the synthesizers run.  Every expected number is computed here from the
published formula, independently of the code under test."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special, stats

from dpstudio.engine.models import gibbs_logistic as gl
from dpstudio.engine.rng import RandomSource
from dpstudio.engine.synth import SYNTHESIZERS, privacy
from dpstudio.engine.synth.encoding import ColumnSpec, Encoder, TableSpec
from dpstudio.engine.synth.pearl import EmbeddingSynthesizer
from dpstudio.plan import density as release_density
from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Params, Recipe, ReleaseSpec


def _gaussian_delta(eps: float, sens: float, sigma: float) -> float:
    """Balle & Wang 2018 Thm 8 (= mu-GDP profile, Dong, Roth & Su 2019), written out here."""
    a, b = sens / (2.0 * sigma), eps * sigma / sens
    return float(stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b))


# --------------------------------------------------------------------- (a) Gibbs posterior beta


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0, 8.0])
def test_gibbs_beta_meets_the_exact_tail_condition(eps):
    """Minami et al. 2016 Thm 8: a = 2 L^2 beta^2 / m_pi <= (sqrt(eps + log 1/d) - sqrt(log 1/d))^2.
    The seed's closed form (Cor. 10(ii)) breaks this at eps >= 2 (BRIEF 3.7)."""
    n, dim, R, delta = 1000, 5, 1.0, 1e-5
    cal = gl.calibrate(n, dim, eps, delta, norm_bound=R, lam=0.01)
    L = math.sqrt(R * R + 1.0)  # logistic loss with intercept
    m = n * 0.01
    assert cal.lipschitz == pytest.approx(L, rel=1e-15) and cal.m_pi == pytest.approx(m, rel=1e-15)
    assert cal.delta_gibbs + (math.exp(eps) + 1.0) * cal.gamma_target <= delta * (1 + 1e-12)
    lg = math.log(1.0 / cal.delta_gibbs)
    a_allowed = (math.sqrt(eps + lg) - math.sqrt(lg)) ** 2
    a = 2.0 * L * L * cal.beta**2 / m  # the beta the sampler uses
    assert a <= a_allowed * (1 + 1e-9)
    # and not just tiny: within 1 % of the largest admissible beta
    beta_star = math.sqrt(a_allowed * m / (2.0 * L * L))
    assert cal.beta >= 0.99 * beta_star


# --------------------------------------------------------------------- (b) DP-KDE constant


def _density_recipe(eps, delta, grid):
    return Recipe(
        input=InputSpec("x.csv"),
        release=ReleaseSpec("density", Params.of({"grid_size": grid})),
        columns=(Column("x", "float", "sensitive", Domain("numeric", low=0, high=100)),),
        budget=Budget(eps, delta),
    )


def test_density_noise_has_the_sqrt2_constant():
    """Hall, Rinaldo & Wasserman 2013: Delta = sqrt(2) / (n (2 pi h^2)^{d/2}) (Jazbec 2018 Ex. 6.10
    drops the sqrt(2)).  The noise that RUNS (read back from the output in whitened
    coordinates) must have the analytic-Gaussian std for that Delta."""
    from dpstudio.engine import density as kde

    n, grid, eps, delta = 300, 256, 1.0, 1e-6
    x = np.random.default_rng(0).normal(50, 10, n).clip(0, 100)
    frame = pd.DataFrame({"x": x})
    recipe = _density_recipe(eps, delta, grid)
    plan = release_density.compile(recipe)
    h = n ** (-1.0 / 5.0) / math.sqrt(12.0)  # Scott's rule on the public range
    sens = math.sqrt(2.0) / (n * math.sqrt(2.0 * math.pi * h * h))
    sigma_min = optimize.brentq(lambda s: _gaussian_delta(eps, sens, s) - delta, 1e-6 * sens, 1e3 * sens)
    # the true KDE on the grid, written out
    g = np.linspace(0.0, 1.0, grid)
    f = np.exp(-((x[:, None] / 100.0 - g[None, :]) ** 2) / (2 * h * h)).sum(0) / (n * math.sqrt(2 * math.pi) * h)
    noise = kde.GPNoise.for_grids([g], h)
    c_true = noise.whiten(f)
    zs = []
    for seed in range(4):
        out = release_density.execute(plan, frame, RandomSource(seed))
        gtee = out.artifact["guarantee"]
        assert gtee["bandwidth_scaled"] == pytest.approx(h, rel=1e-12)
        assert gtee["sensitivity"] == pytest.approx(sens, rel=1e-9)
        assert _gaussian_delta(eps, sens, gtee["noise_multiplier"]) <= delta
        f_dp = np.asarray(out.artifact["density"]) * 100.0
        zs.append(noise.whiten(f_dp) - c_true)
    z = np.concatenate(zs)
    # 1024 draws: the std is known to ~2 %; a missing sqrt(2) gives 0.71 sigma_min
    assert np.std(z) >= 0.9 * sigma_min
    assert np.std(z) <= 1.2 * sigma_min


# --------------------------------------------------------------------- (c) PEARL scaling

SPEC_C = TableSpec(
    (ColumnSpec.numeric("u", 0, 100), ColumnSpec.categorical("c", ["a", "b"])), ColumnSpec.categorical("y", [0, 1])
)


def test_encoding_uses_public_bounds_only():
    """Liew et al.'s reference code scales by the data's own min/max (a leak: the min and max are
    somebody's values).  A record must encode the same whatever the other records are."""
    shared = pd.DataFrame({"u": [25.0], "c": ["b"], "y": [1]})
    d1 = pd.concat([shared, pd.DataFrame({"u": [10.0, 40.0], "c": ["a", "a"], "y": [0, 0]})])
    d2 = pd.concat([shared, pd.DataFrame({"u": [1.0, 99.0], "c": ["a", "b"], "y": [0, 1]})])
    enc = Encoder(SPEC_C)
    e1, e2 = enc.encode(d1, dtype=np.float64), enc.encode(d2, dtype=np.float64)
    assert np.array_equal(e1[0], e2[0])
    assert e1[0].tolist() == [2 * 25.0 / 100 - 1, 0.0, 1.0]


class _Captured(Exception):
    pass


def test_pearl_embedding_is_built_from_public_scaling(monkeypatch):
    """The embedding PEARL releases (eps = inf: no noise) equals the one computed here from the
    public bounds; data min/max scaling anywhere on the fit's path breaks the equality."""
    seen = {}

    def capture(self, enc, w, emb, props, n, gen, progress, cancel):
        seen.update(w=w, emb=emb)
        raise _Captured

    monkeypatch.setattr(EmbeddingSynthesizer, "_train", capture)
    g = np.random.default_rng(1)
    n = 200
    data = pd.DataFrame({"u": g.uniform(30, 60, n), "c": g.choice(["a", "b"], n), "y": g.integers(0, 2, n)})
    with pytest.raises(_Captured):
        SYNTHESIZERS["pearl"](k=16, steps=1).fit(data, SPEC_C, epsilon=math.inf, delta=1e-5, rng=RandomSource(2))
    x = np.column_stack(
        [2 * data["u"].to_numpy() / 100 - 1, (data["c"] == "a").astype(float), (data["c"] == "b").astype(float)]
    )
    u = x @ seen["w"].T
    oh = np.eye(2)[data["y"].to_numpy()]
    emb = np.vstack([np.cos(u).T @ oh, np.sin(u).T @ oh]) / (n * math.sqrt(16))
    # float32 encoding: agreement to ~1e-9; min/max scaling moves entries by ~0.1
    np.testing.assert_allclose(seen["emb"], emb, rtol=0, atol=1e-6)


# --------------------------------------------------------------------- (d) PEARL sigma0 with noise


def test_pearl_frequency_scale_is_a_noisy_release():
    """Every pair of records is at distance sqrt(2) here (distinct categories, same number), so
    any noiseless estimate of the scale (pair mean, median of 10 records, ...) is exactly
    sqrt(2) whatever the permutation.  The DP release must scatter it by its printed sigma."""
    n = 100
    spec = TableSpec((ColumnSpec.numeric("u", -1, 1), ColumnSpec.categorical("c", [f"k{i}" for i in range(n)])))
    data = pd.DataFrame({"u": np.zeros(n), "c": [f"k{i}" for i in range(n)]})
    devs, sigmas = [], []
    for seed in range(6):
        fitted = SYNTHESIZERS["pearl"](k=8, steps=1, hidden=8).fit(
            data, spec, epsilon=4.0, delta=1e-5, rng=RandomSource(seed)
        )
        comp = [c for c in fitted.components if "frequency scale" in c.label]
        assert len(comp) == 1 and comp[0].gdp_mu > 0 and comp[0].details["sigma"] > 0
        assert fitted.info["sigma0_source"] == "DP mean pair distance"
        devs.append(fitted.info["sigma0"] / fitted.cfg.sigma0_mult - math.sqrt(2.0))
        sigmas.append(comp[0].details["sigma"])
    devs = np.asarray(devs)
    assert np.all(np.abs(devs) > 1e-9)  # never the noiseless value
    assert len(set(np.round(devs, 12))) == len(devs)
    assert np.all(np.abs(devs) <= 6 * np.asarray(sigmas))  # scattered by the printed noise


# --------------------------------------------------------------------- discrete Gaussian: proven figures


def _eta(s, T):
    """Per-coordinate log-ratio bound between rounded and discrete Gaussian (docs/mechanisms.md)."""
    return max(T * T, 1.0) / (24 * s * s) + 3 * math.exp(-2 * math.pi**2 * s * s)


@pytest.mark.parametrize("s", [1.0, 1.5, 3.0, 10.0, 40.0])
def test_rounded_vs_discrete_gaussian_ratio_and_tails(s):
    """Brute force: |log r(z) - log d(z)| <= eta(s, T) on |z| <= T s, and the box tails are below
    2 e^{-T^2/2} (discrete) and 2 Phi(-(T - 1/(2s))) (rounded); the ratio bound is not vacuous."""
    z = np.arange(-int(60 * s) - 2, int(60 * s) + 3).astype(float)
    logd = -(z**2) / (2 * s * s)
    logd -= special.logsumexp(logd)
    r = special.ndtr((z + 0.5) / s) - special.ndtr((z - 0.5) / s)
    for T in (3.0, 6.0):
        box = np.abs(z) <= T * s
        gap = np.abs(np.log(r[box]) - logd[box]).max()
        assert gap <= _eta(s, T) == privacy.lattice_terms([(1, s)], T)[0]
        if s >= 3:
            assert _eta(s, T) <= 3 * gap
        assert np.exp(logd[~box]).sum() <= 2 * math.exp(-T * T / 2)
        assert r[~box].sum() <= 2 * special.ndtr(-(T - 0.5 / s))


@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 20.0])
def test_discrete_gaussian_renyi_below_continuous(alpha):
    """Canonne, Kamath & Steinke 2020: integer shift k of N_Z(0, s^2) has Renyi divergence
    <= alpha k^2 / (2 s^2), the continuous value (so zCDP figures hold for the lattice noise)."""
    s, k = 2.3, 3
    z = np.arange(-200, 201).astype(float)
    logp = -(z**2) / (2 * s * s)
    logq = -((z - k) ** 2) / (2 * s * s)
    lz = special.logsumexp(logp)
    div = special.logsumexp(alpha * (logp - lz) + (1 - alpha) * (logq - lz)) / (alpha - 1)
    assert div <= alpha * k * k / (2 * s * s) + 1e-12


def _proven_delta_at(eps, mu, parts, T):
    """delta of the discrete law at eps (docs/mechanisms.md), written out: the continuous law
    is taken at eps_r = eps - 2H, mu-GDP profile of Dong, Roth & Su 2019."""
    H = sum(dim * _eta(s, T) for dim, s in parts)
    B_d = sum(dim * 2 * math.exp(-T * T / 2) for dim, s in parts)
    B_r = sum(dim * 2 * special.ndtr(-(T - 0.5 / s)) for dim, s in parts)
    e_r = eps - 2 * H
    gdp = stats.norm.cdf(-e_r / mu + mu / 2) - math.exp(e_r) * stats.norm.cdf(-e_r / mu - mu / 2)
    return math.exp(H) * gdp + math.exp(e_r + H) * B_r + B_d, H


def _mixture(n=300):
    g = np.random.default_rng(5)
    y = g.integers(0, 2, n)
    return pd.DataFrame(
        {"u": np.clip(g.normal(30 + 40 * y, 10), 0, 100), "c": np.where(g.random(n) < 0.3 + 0.4 * y, "a", "b"), "y": y}
    )


@pytest.mark.parametrize("method", ["pearl", "merf"])
@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (0.2, 1e-6)])
def test_embedding_synthesizers_proven_delta_within_target(method, eps, delta):
    fitted = SYNTHESIZERS[method](steps=1).fit(_mixture(), SPEC_C, epsilon=eps, delta=delta, rng=RandomSource(0))
    comps = fitted.components
    mu = math.sqrt(sum((c.details["sensitivity"] / c.details["sigma"]) ** 2 for c in comps))
    parts = [(c.details["dim"], c.details["sigma"] / c.details["grid"]) for c in comps]
    assert sum(d for d, _ in parts) >= 2 * 500 * 2  # every released coordinate counted
    total = fitted.privacy_loss()
    proven, H = _proven_delta_at(eps, mu, parts, total.details["lattice_box_T"])
    assert H > 0  # the correction is accounted, not assumed away
    assert proven <= delta
    assert total.details["proven_epsilon"] <= eps and total.details["proven_delta"] <= delta
    assert total.epsilon == total.details["proven_epsilon"] and total.delta == delta


@pytest.mark.parametrize("eps,delta,grid", [(1.0, 1e-6, 64), (8.0, 1e-8, 64), (1.0, 1e-6, 256)])
def test_density_proven_figures_within_target(eps, delta, grid):
    """The density release's noise is a discrete Gaussian on a 2^-12 (relative) grid: its
    continuous calibration is shaved so the discrete law meets the recipe's (eps, delta)."""
    n = 300
    g = np.random.default_rng(0)
    if grid == 64:
        frame = pd.DataFrame({"x": g.uniform(0, 100, n), "w": g.uniform(0, 100, n)})
        cols = (
            Column("x", "float", "sensitive", Domain("numeric", low=0, high=100)),
            Column("w", "float", "sensitive", Domain("numeric", low=0, high=100)),
        )
    else:
        frame = pd.DataFrame({"x": g.uniform(0, 100, n)})
        cols = (Column("x", "float", "sensitive", Domain("numeric", low=0, high=100)),)
    recipe = Recipe(
        input=InputSpec("x.csv"),
        release=ReleaseSpec("density", Params.of({"grid_size": grid})),
        columns=cols,
        budget=Budget(eps, delta),
    )
    gtee = release_density.execute(release_density.compile(recipe), frame, RandomSource(0)).artifact["guarantee"]
    dim = grid ** len(cols)
    s = gtee["noise_multiplier"] / gtee["noise_grid"]
    # snapped sensitivity as the release computes it: Delta (1 + 1e-6) + grid sqrt(dim)
    sens = gtee["sensitivity"] * (1 + 1e-6) + gtee["noise_grid"] * math.sqrt(dim)
    T = math.sqrt(2 * math.log(4 * dim * (math.exp(eps) + 1) / (1e-6 * delta)))
    proven, H = _proven_delta_at(eps, sens / gtee["noise_multiplier"], [(dim, s)], T)
    assert proven <= delta
    assert gtee["proven_epsilon"] <= eps and gtee["proven_delta"] <= delta


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (0.2, 1e-6)])
def test_mst_zcdp_total_is_proven_within_target(eps, delta):
    """MST accounts in zCDP, which holds exactly for the discrete Gaussian (test above);
    its (eps, delta) follows by the CKS 2020 Prop. 12 conversion, minimised over alpha here."""
    fitted = SYNTHESIZERS["mst"](bins=6).fit(_mixture(), SPEC_C, epsilon=eps, delta=delta, rng=RandomSource(0))
    rho = sum(c.gdp_mu**2 / 2 if c.gdp_mu is not None else c.details["zcdp_rho"] for c in fitted.components)
    assert rho == pytest.approx(fitted.privacy_loss().details["zcdp_rho"], rel=1e-12)

    def log_delta(log_am1):
        a = 1.0 + math.exp(log_am1)
        return (a - 1) * (a * rho - eps) + (a - 1) * math.log1p(-1 / a) - math.log(a)

    grid = np.linspace(-10, 12, 4001)
    best = min(log_delta(v) for v in grid)
    res = optimize.minimize_scalar(log_delta, bounds=(-10, 12), method="bounded")
    assert math.exp(min(best, res.fun)) <= delta * (1 + 1e-6)


def test_merf_length_scale_is_public():
    """Harder et al.'s code took the data's median distance as the length scale; ours is the
    public sqrt(2/3 n_num + n_cat), whatever the data, and nothing else is released for it."""
    scales = []
    for lo, hi in ((0.0, 5.0), (95.0, 100.0)):
        g = np.random.default_rng(3)
        data = pd.DataFrame({"u": g.uniform(lo, hi, 200), "c": g.choice(["a", "b"], 200), "y": g.integers(0, 2, 200)})
        fitted = SYNTHESIZERS["merf"](k=16, steps=1).fit(data, SPEC_C, epsilon=1.0, delta=1e-5, rng=RandomSource(0))
        assert [c.label for c in fitted.components] == ["DP-MERF: embedding + class proportions"]
        scales.append(fitted.info["sigma0"])
    assert scales == [math.sqrt(2 / 3 * 1 + 1)] * 2
