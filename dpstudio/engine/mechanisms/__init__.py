"""Per-value DP mechanisms and their exact samplers.

Registry key -> class: "laplace", "gaussian", "rr", "exponential", "metric".
"""

from dpstudio.engine.mechanisms.base import Mechanism
from dpstudio.engine.mechanisms.exponential import ExponentialMechanism
from dpstudio.engine.mechanisms.gaussian import (
    GaussianMechanism,
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
)
from dpstudio.engine.mechanisms.laplace import LaplaceMechanism
from dpstudio.engine.mechanisms.metric_selection import MetricSelection, angular_distance
from dpstudio.engine.mechanisms.randomized_response import RandomizedResponse

MECHANISMS = {
    LaplaceMechanism.name: LaplaceMechanism,
    GaussianMechanism.name: GaussianMechanism,
    RandomizedResponse.name: RandomizedResponse,
    ExponentialMechanism.name: ExponentialMechanism,
    MetricSelection.name: MetricSelection,
}

__all__ = [
    "MECHANISMS",
    "Mechanism",
    "LaplaceMechanism",
    "GaussianMechanism",
    "RandomizedResponse",
    "ExponentialMechanism",
    "MetricSelection",
    "analytic_gaussian_sigma",
    "analytic_gaussian_delta",
    "angular_distance",
]
