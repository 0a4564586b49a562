"""Accuracy floors (Jazbec 2018, Thm 5.3 / 5.5), held against the mechanisms' own expected errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpstudio.engine.bounds import floor_continuous, floor_finite
from dpstudio.engine.mechanisms.gaussian import GaussianMechanism
from dpstudio.engine.mechanisms.laplace import LaplaceMechanism
from dpstudio.engine.mechanisms.randomized_response import RandomizedResponse

EPS = np.geomspace(1e-3, 20, 400)


def test_floor_formulas_and_broadcast():
    assert floor_continuous(10.0, 0.0) == pytest.approx(2.5)
    assert floor_continuous(4.0, 1.0, 0.1) == pytest.approx(0.9 * 4 / (2 * (1 + math.e)))
    assert floor_finite(3, 2.0, 1.0) == pytest.approx(2.0 * 3 / (3 + math.e))
    assert floor_finite(0, 1.0, 1.0) == 0.0
    out = floor_continuous(np.array([[1.0], [2.0]]), EPS[None, :])
    assert out.shape == (2, EPS.size) and np.all(np.diff(out, axis=1) <= 0)
    assert np.isfinite(floor_continuous(1.0, 1e4)) and np.isfinite(floor_finite(5, 1.0, 1e4))


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [0.0, 1e-9, 1e-5, 1e-2])
def test_no_mechanism_beats_its_floor(eps, delta):
    """The mechanisms that run are (eps, delta)-DP, so none can have less error than the floor."""
    lap = LaplaceMechanism(epsilon=eps, delta=delta, low=0.0, high=7.0)
    assert lap.expected_error() >= float(floor_continuous(7.0, eps, delta))
    if delta > 0:
        gau = GaussianMechanism(epsilon=eps, delta=delta, low=0.0, high=7.0)
        assert gau.expected_error() >= float(floor_continuous(7.0, eps, delta))
    for k in (2, 5, 40):
        rr = RandomizedResponse(epsilon=eps, delta=delta, n_categories=k)
        floor = float(floor_finite(k - 1, 1.0, eps, delta))
        # randomized response attains Thm 5.5; its probability is rounded up to a multiple of
        # 2^-32 so that the sampler is exact, which costs at most k 2^-32 of error
        assert floor <= rr.expected_error() <= floor + k * 2.0**-32 + 1e-12
