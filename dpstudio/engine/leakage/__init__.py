"""Leakage estimates: attacks on arrays and frames (docs/leakage.md; Sekiguchi 2024).

Everything in this package reads the raw data and produces numbers for the data steward and
the internal report only ("computed_on": "raw data - internal use only"), never for
publication.  Modules:

* :mod:`.logistic` - L2 logistic regression (numpy/scipy, L-BFGS) and cross-fitted posteriors;
* :mod:`.label` - label attackers, k, IUEAdv (Sekiguchi 2024, Prop. 3.0.2), effective label epsilon
  (Prop. 4.0.1, corrected), :class:`LabelLeakageModel` for the live preview;
* :mod:`.embedding` - NN re-identification and angular distortion of metric-DP selection;
* :mod:`.synthetic` - distance to closest record and membership-inference advantage;
* :mod:`.linkage` - linkage attack on record-level perturbation;

The recipe-facing risk view that runs them on a compiled plan is :mod:`dpstudio.risk`.
"""

from dpstudio.engine.leakage.label import (
    COMPUTED_ON,
    LabelLeakageModel,
    effective_label_epsilon,
    iue_adv_bound,
    k_ratio,
)

__all__ = ["COMPUTED_ON", "LabelLeakageModel", "effective_label_epsilon", "iue_adv_bound", "k_ratio"]
