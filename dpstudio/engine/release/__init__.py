"""Release types: each module offers ``plan(recipe)`` (privacy accounting, no data, no noise) and
``run(recipe, frame, plan, rng, progress, cancel)`` (the release itself)."""
from __future__ import annotations

import importlib

from dpstudio.errors import UserError

_MODULES = {
    "record": "dpstudio.engine.release.record",
    "label": "dpstudio.engine.release.record",
    "semi-sensitive": "dpstudio.engine.release.record",
    "synthetic": "dpstudio.engine.release.synthetic",
    "model": "dpstudio.engine.release.model",
    "density": "dpstudio.engine.release.density",
}


def release_module(release_type: str):
    """The module implementing ``release_type``; a clear UserError if it is not available."""
    name = _MODULES.get(release_type)
    if name is None:
        raise UserError(f"unknown release type {release_type!r}; choose one of {', '.join(_MODULES)}")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise UserError(f"release type {release_type!r} is not available in this version of dpstudio") from None
        raise
