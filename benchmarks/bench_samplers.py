"""Exact discrete Laplace/Gaussian sampler speed vs numpy's float Laplace (same run, JSON)."""

import json
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from dpstudio.engine.mechanisms import LaplaceMechanism
from dpstudio.engine.mechanisms.sampling import discrete_gaussian, discrete_laplace
from dpstudio.engine.rng import RandomSource

N = 20_000_000


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return round(time.perf_counter() - t0, 3)


def main(n: int = N):
    res = {"n": n}
    g = np.random.default_rng(1)
    res["numpy_laplace_float64_s"] = timed(lambda: g.laplace(size=n))
    for label, seed in (("secure", None), ("seeded", 7)):
        res[f"discrete_laplace_t1000_{label}_s"] = timed(lambda s=seed: discrete_laplace(1000, n, RandomSource(s)))
        res[f"discrete_laplace_t2_{label}_s"] = timed(lambda s=seed: discrete_laplace(2, n, RandomSource(s)))
    res["discrete_gaussian_sigma2_1e6_seeded_s"] = timed(lambda: discrete_gaussian(Fraction(10**6), n, RandomSource(7)))
    # whole record release: 1M x 20 numeric values through LaplaceMechanism (clip+snap+noise)
    m = LaplaceMechanism(epsilon=1.0, low=0.0, high=100.0)
    x = np.random.default_rng(0).uniform(-5, 105, (1_000_000, 20))
    res["laplace_mechanism_1Mx20_secure_s"] = timed(lambda: m.release(x, RandomSource(None)))
    res["ratio_secure_t1000_vs_numpy"] = round(
        res["discrete_laplace_t1000_secure_s"] / res["numpy_laplace_float64_s"], 2
    )
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else N)
