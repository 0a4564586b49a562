"""What every release type's plan and run return."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from dpstudio.engine.accounting import Composition, PrivacyLoss


@dataclass(frozen=True)
class ReleasePlan:
    """The privacy accounting of a recipe, computed before any data is read or noise drawn.

    ``components``: one PrivacyLoss per mechanism application; ``composition``: their total;
    ``guarantee``: the kind of guarantee ("record-level", "label", "semi-sensitive", "central");
    ``mechanisms``: per-column/per-release parameters for the report (JSON-able dicts);
    ``notes``: warnings the user must see.
    """

    components: tuple[PrivacyLoss, ...]
    composition: Composition
    guarantee: str
    mechanisms: tuple[dict, ...] = ()
    notes: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    @property
    def total(self) -> PrivacyLoss:
        return self.composition.total

    def to_json(self) -> dict:
        return {"guarantee": self.guarantee,
                "total": self.total.to_json(),
                "composition": self.composition.to_json(),
                "mechanisms": list(self.mechanisms),
                "notes": list(self.notes),
                **({"extra": self.extra} if self.extra else {})}


@dataclass
class ReleaseOutcome:
    """The result of a run: a table (records or synthetic rows) and/or a JSON artifact
    (model coefficients, density grid).  ``steward_stats`` are computed on the raw data (e.g.
    clipped counts): for the data steward and the internal report only, never published.
    ``final_plan``: the plan of the mechanisms that actually drew the noise, when it differs from
    the plan made before the data was read (e.g. scales that depend on DP-estimated bounds);
    its total never exceeds the planned one.  None: the planned one ran as printed."""

    data: pd.DataFrame | None = None
    artifact: dict | None = None
    steward_stats: dict = field(default_factory=dict)
    public_stats: dict = field(default_factory=dict)  # computed from DP outputs only
    final_plan: ReleasePlan | None = None
