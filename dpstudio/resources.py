"""Locate bundled resources (demo data, icons, stylesheets, translations).

They live in the top-level ``resources/`` folder of a checkout, beside the package in a frozen
(PyInstaller) bundle, or where ``DPSTUDIO_RESOURCES`` points.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def resources_dir() -> Path:
    env = os.environ.get("DPSTUDIO_RESOURCES")
    candidates = [Path(env)] if env else []
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        candidates.append(Path(frozen) / "resources")
    candidates.append(Path(__file__).resolve().parent.parent / "resources")
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError("dpstudio resources folder not found; set DPSTUDIO_RESOURCES")


def resource_path(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
