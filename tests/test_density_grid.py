"""The density release's noise lies on a data-independent lattice (review finding B1)."""

import math

import numpy as np
import pandas as pd

from dpstudio.engine import density as kde
from dpstudio.engine.rng import RandomSource
from dpstudio.plan import density as release_density
from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Params, Recipe, ReleaseSpec


def test_density_output_is_on_a_lattice_in_whitened_coordinates():
    g = np.random.default_rng(0)
    frame = pd.DataFrame({"x": g.normal(50, 10, 300).clip(0, 100)})
    recipe = Recipe(
        input=InputSpec("x.csv"),
        release=ReleaseSpec("density", Params.of({"grid_size": 64})),
        columns=(Column("x", "float", "sensitive", Domain("numeric", low=0, high=100)),),
        budget=Budget(1.0, 1e-6),
    )
    plan = release_density.compile(recipe)
    out = release_density.execute(plan, frame, RandomSource(3))
    art = out.artifact
    f_dp = np.asarray(art["density"]) * 100.0  # back to the scaled [0, 1] units
    h = art["guarantee"]["bandwidth_scaled"]
    noise = kde.GPNoise.for_grids([kde.grid_1d(64)], h)
    step = 2.0 ** (math.floor(math.log2(art["guarantee"]["sensitivity"])) - 12)
    k = noise.whiten(f_dp) / step
    assert np.max(np.abs(k - np.rint(k))) < 1e-3  # integer multiples of the public step
    assert "discrete Gaussian" in art["guarantee"]["noise_sampling"]
