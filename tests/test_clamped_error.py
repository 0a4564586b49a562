"""The error a clamped release carries: a number's noisy value is clamped to its public bounds (the
default), so its error is at most the worst case over the bounds of E|clamp(x + Z) - x| -- at the
middle of the range -- which the product prints and compares with the floor (Jazbec 2018's
worst-case bound on an interval).  The noise's own E|Z| (18.7 for a range of 4 in a walkthrough,
"20.9 x the floor" where the released values were 2 x) stays the figure of the "noise wider than
the range" warning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstudio.engine.mechanisms.gaussian import GaussianMechanism
from dpstudio.engine.mechanisms.laplace import LaplaceMechanism
from dpstudio.engine.mechanisms.sampling import (
    discrete_gaussian_clamped_mean_abs,
    discrete_gaussian_pmf,
    discrete_gaussian_support,
    discrete_laplace_clamped_mean_abs,
    discrete_laplace_mean_abs,
)
from dpstudio.engine.rng import RandomSource


def _brute(k, p, diam):
    return max(float(np.sum(p * np.abs(np.clip(x + k, 0, diam) - x))) for x in range(diam + 1))


@pytest.mark.parametrize(("scale", "diam"), [(3.0, 10), (50.0, 7), (0.7, 300), (12.0, 1), (5.0, 0)])
def test_laplace_worst_case_is_the_middle_of_the_range(scale, diam):
    q = math.exp(-1 / scale)
    k = np.arange(-int(80 * scale) - diam, int(80 * scale) + diam + 1)
    p = (1 - q) / (1 + q) * q ** np.abs(k)
    assert discrete_laplace_clamped_mean_abs(scale, diam) == pytest.approx(_brute(k, p, diam), rel=1e-12, abs=1e-15)
    assert discrete_laplace_clamped_mean_abs(scale, diam) <= min(discrete_laplace_mean_abs(scale), diam / 2) + 1e-12


@pytest.mark.parametrize(("sigma2", "diam"), [(9.0, 10), (400.0, 30), (4.0, 200), (1.0, 1)])
def test_gaussian_worst_case_is_the_middle_of_the_range(sigma2, diam):
    k = discrete_gaussian_support(math.sqrt(sigma2))
    p = discrete_gaussian_pmf(k, sigma2)
    assert discrete_gaussian_clamped_mean_abs(sigma2, diam) == pytest.approx(_brute(k, p, diam), rel=1e-12)


@pytest.mark.parametrize(
    "mech",
    [
        LaplaceMechanism(epsilon=0.05, low=11.0, high=15.0),
        GaussianMechanism(epsilon=0.2, delta=1e-6, low=11.0, high=15.0),
    ],
)
def test_a_clamped_release_at_the_middle_shows_the_printed_error(mech):
    """Released values of the worst true value (the middle), clamped to the bounds: their mean
    absolute error is the printed figure, far below the noise's own."""
    x = np.full(40_000, 13.0)
    out = np.clip(mech.release(x, RandomSource(11)), 11.0, 15.0)
    assert float(np.mean(np.abs(out - x))) == pytest.approx(mech.clamped_error(), abs=0.03)
    assert mech.clamped_error() < 0.25 * mech.expected_error()


def test_the_report_compares_the_clamped_error_with_the_floor(tmp_path):
    """The Accuracy table prints the clamped worst case and its ratio to the floor; a release that
    does not clamp (--no-clamp) prints the noise's own figure."""
    import pandas as pd

    from dpstudio.cli import main
    from dpstudio.pipeline import execute_release
    from dpstudio.recipe.model import load_recipe
    from dpstudio.report.model import build_model, fmt

    g = np.random.default_rng(0)
    data = tmp_path / "w.csv"
    pd.DataFrame({"alcohol": g.uniform(11, 15, 300).round(2), "hue": g.uniform(0.4, 1.8, 300).round(2)}).to_csv(
        data, index=False
    )
    shown = {}
    for flag in ([], ["--no-clamp"]):
        r = tmp_path / f"r{len(flag)}.json"
        args = ["recipe", "init", str(data), "-o", str(r), "--epsilon", "0.3", "--role", "alcohol=sensitive"]
        args += [
            "--role",
            "hue=sensitive",
            "--bounds",
            "alcohol=11:15",
            "--bounds",
            "hue=0.4:1.8",
            "--confirm-inferred",
        ]
        assert main([*args, *flag]) == 0
        res = execute_release(load_recipe(r), output_path=tmp_path / f"o{len(flag)}.csv", ledger=None)
        u = res.plan.unit("alcohol")
        model = build_model(res, "internal", None, charts=False)
        table = next(b.content for s in model.sections if s.title == "Accuracy" for b in s.blocks if b.kind == "table")
        row = next(r_ for r_ in table["rows"] if r_[0].text == "alcohol")
        shown[bool(flag)] = (u, row[3].text, row[5].text)
    u, err, ratio = shown[False]
    assert u.clamped_error is not None and u.clamped_error < u.expected_error
    assert err == fmt(u.clamped_error) and ratio == f"{u.clamped_error / u.floor:.2f} \u00d7"
    u, err, ratio = shown[True]
    assert u.clamped_error is None and err == fmt(u.expected_error)
