"""DP-MERF baseline (Harder, Adamczewski & Park, AISTATS 2021).

Random Fourier features of the whole encoded record, phi(x) = [cos(Wx), sin(Wx)]/sqrt(k) with
W ~ N(0, I/sigma0^2), ||phi(x)|| = 1, combined with the label as in the paper (outer product
with the label one-hot: one mean embedding per class, weighted by class frequency), and the
class proportions appended, all in ONE Gaussian release:

    v(D) = [ vec((1/n) sum_i phi(x_i) e_{y_i}^T),  (1/n) sum_i e_{y_i} ].

Replace-one, (x, y) -> (x', y'): if y = y' the proportions do not move and the embedding
block moves by ||phi(x) - phi(x')||/n <= 2/n; if y != y' the embedding block moves by
sqrt(||phi(x)||^2 + ||phi(x')||^2)/n = sqrt(2)/n and the proportions by sqrt(2)/n, together
sqrt(2 + 2)/n = 2/n.  So ||v(D) - v(D')|| <= 2/n: appending the proportions is free.

The length scale is PUBLIC: sigma0 = sqrt(2/3 n_num + n_cat), the expected distance between two
records drawn uniformly from the encoded domain's numeric cube with categories differing about
half the time (the original code used the data's median distance - a leak).  The generator
is trained by MMD (squared distance between the noisy and the generated embedding, uniform
weights, no critic); categories are decoded to hard values.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pandas as pd

from .encoding import Encoder, TableSpec
from .pearl import EmbeddingSynthesizer, FittedEmbeddingSynth, PearlConfig


def public_sigma0(enc: Encoder) -> float:
    return math.sqrt(2.0 / 3.0 * enc.n_num + 1.0 * len(enc.cat))


class MerfSynthesizer(EmbeddingSynthesizer):
    name = "merf"
    public_sigma0 = True

    def __init__(self, config: PearlConfig | None = None, **overrides: Any) -> None:
        cfg = config or PearlConfig(k=500, critic=False, one_release=True, label="DP-MERF", steps=4000, lr=0.005)
        super().__init__(cfg, **overrides)

    def fit(self, frame: pd.DataFrame, spec: TableSpec, **kw: Any) -> FittedEmbeddingSynth:
        if self.config.fixed_sigma0 is not None:
            return super().fit(frame, spec, **kw)
        base = self.config
        self.config = replace(base, fixed_sigma0=public_sigma0(Encoder(spec)))
        try:
            return super().fit(frame, spec, **kw)
        finally:
            self.config = base
