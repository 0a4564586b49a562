"""Schema migrations: older recipe layouts are upgraded, newer ones refused.

Version 0 is the pre-release layout of the first prototypes: budget and seed at the top level
(``epsilon``, ``delta``, ``seed``) and domains written as ``bounds: [low, high]`` or
``categories: [...]`` directly on the column, always typed by the user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpstudio.errors import RecipeError

CURRENT = 1


def _v0_to_v1(d: dict) -> dict:
    d = dict(d)
    budget = {"epsilon": d.pop("epsilon", None), "delta": d.pop("delta", 0.0)}
    d.setdefault("budget", budget)
    if "seed" in d:
        d.setdefault("randomness", {"seed": d.pop("seed")})
    if not isinstance(d.get("columns"), list):
        d["schema_version"] = 1
        return d  # not a list: the reader reports it, with the field's name
    cols = []
    for c in d["columns"]:
        if not isinstance(c, dict):
            cols.append(c)
            continue
        c = dict(c)
        if "bounds" in c and isinstance(c["bounds"], list):
            lo, hi = (list(c.pop("bounds")) + [None, None])[:2]
            c["domain"] = {"kind": "numeric", "source": "public", "low": lo, "high": hi}
        elif "categories" in c:
            c["domain"] = {"kind": "categorical", "source": "public", "categories": c.pop("categories")}
        cols.append(c)
    d["columns"] = cols
    d["schema_version"] = 1
    return d


MIGRATIONS: dict[int, Callable[[dict], dict]] = {0: _v0_to_v1}


def migrate(data: Any) -> Any:
    if not isinstance(data, dict):
        raise RecipeError([f"recipe: expected a JSON object, got {type(data).__name__}"])
    version = data.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise RecipeError([f"recipe: schema_version must be a non-negative integer, got {version!r}"])
    if version > CURRENT:
        raise RecipeError(
            [
                f"recipe: schema_version {version} is newer than this dpstudio understands "
                f"(up to {CURRENT}); upgrade dpstudio"
            ]
        )
    while version < CURRENT:
        data = MIGRATIONS[version](data)
        version = data["schema_version"]
    return data
