"""Common interface of the DP synthesizers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import pandas as pd

from ..accounting import PrivacyLoss
from ..progress import NEVER_CANCELLED, CancelToken, no_progress
from ..rng import RandomSource
from .encoding import TableSpec


class FittedSynth(ABC):
    """A fitted generator: everything in it is a post-processing of its DP releases."""

    components: list[PrivacyLoss]  # one per release (accountant transcript)

    @abstractmethod
    def sample(self, n_rows: int, rng: RandomSource) -> pd.DataFrame:
        """Rows in the original schema (names, decoded categories, numbers in public bounds)."""

    @abstractmethod
    def privacy_loss(self) -> PrivacyLoss:
        """Total guarantee of the fit (composition of ``components``)."""

    def marginal_fidelity(self, synthetic: pd.DataFrame) -> dict[str, float] | None:
        """Per column, the total variation distance between ``synthetic``'s one-way distribution
        and the fit's own *noisy* one-way marginal -- a figure computed from DP outputs only, so
        it may be published.  None for synthesizers that measure no one-way marginals."""
        return None


class Synthesizer(ABC):
    name = "base"
    #: the calculus its fit calibrates in: "zcdp" (its releases' rho's add to the rho of the
    #: (epsilon, delta) it is given, as MST and AIM do) or "gdp" (Gaussian releases whose mu's
    #: add in quadrature to the mu of that (epsilon, delta), as PEARL and DP-MERF do).  A
    #: synthetic release's plan reads it to share one budget with the DP domain estimates.
    calculus = "zcdp"

    def budget_plan(self, epsilon: float, delta: float, n: int, n_classes: int) -> list[dict[str, Any]]:
        """How the fit will split its privacy budget, from public quantities only: one dict per
        release with ``part``, ``share`` (of the additive budget: GDP mu^2 or zCDP rho) and,
        where one noise scale describes it, ``sigma`` (noise std per coordinate) and ``dim``.
        Shown before a release; the fit's transcript is the record."""
        return []

    @abstractmethod
    def fit(
        self,
        frame: pd.DataFrame,
        spec: TableSpec,
        *,
        epsilon: float,
        delta: float,
        rng: RandomSource,
        progress: Callable[[float, str], None] = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> FittedSynth: ...
