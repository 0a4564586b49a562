import numpy as np
import pytest
from scipy import stats

from dpstudio.engine.rng import RandomSource


@pytest.mark.parametrize("seed", [None, 7])
@pytest.mark.parametrize("high", [2, 3, 7, 2**31 + 1])
def test_integers_are_uniform_for_scalar_and_array_bounds(seed, high):
    rng = RandomSource(seed)
    n = 120_000
    for draw in (rng.integers(high, n), rng.integers(np.full(n, high))):
        assert draw.min() >= 0 and draw.max() < high
        bins = min(high, 16)
        # 2**31+1 has a rejection rate near 1/2: the folded histogram must still be flat
        counts = np.bincount((draw * bins // high).astype(np.int64), minlength=bins)
        assert stats.chisquare(counts).pvalue > 1e-4


def test_seeded_is_reproducible_and_secure_is_not():
    a, b = RandomSource(3).integers(1000, 50), RandomSource(3).integers(1000, 50)
    assert (a == b).all()
    assert not (RandomSource(None).uint64(8) == RandomSource(None).uint64(8)).all()
    assert RandomSource(None).secure and not RandomSource(1).secure
    assert "fixed seed 1" in RandomSource(1).describe()


def test_bad_seed_and_bound_are_refused():
    with pytest.raises(ValueError, match="-1"):
        RandomSource(-1)
    with pytest.raises(ValueError):
        RandomSource(None).integers(0, 5)
