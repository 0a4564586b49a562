"""The compiled release plan: ``compile_plan(recipe, schema) -> ReleasePlan`` and ``execute``.

One module per release type (:mod:`~dpstudio.plan.record` for record, label and
semi-sensitive; :mod:`~dpstudio.plan.synthetic`; :mod:`~dpstudio.plan.model`;
:mod:`~dpstudio.plan.density`), each with ``compile(recipe)`` and ``execute(plan, frame, rng,
progress=, cancel=)``; DP domain estimates are :mod:`~dpstudio.plan.domains` units that come
first in every plan.
"""

from dpstudio.plan.compile import (
    RELEASE_TYPES,
    compile_checked,
    compile_plan,
    execute,
    for_rows,
    plan_problems,
    release_module,
)
from dpstudio.plan.units import LabelGuarantee, NoiseParameters, PlanUnit, ReleaseOutcome, ReleasePlan

__all__ = [
    "RELEASE_TYPES",
    "LabelGuarantee",
    "NoiseParameters",
    "PlanUnit",
    "ReleaseOutcome",
    "ReleasePlan",
    "compile_checked",
    "compile_plan",
    "execute",
    "for_rows",
    "plan_problems",
    "release_module",
]
