"""User preferences shared by the CLI and the GUI, and the user's folders.

Preferences are a small JSON file in the user's application-data folder (``$DPSTUDIO_PREFS``
overrides the path), so a choice made once — the operator's name — is remembered by both the
command line and the desktop application.  Only public facts about the *user* live here, never
anything read from a dataset.

Outputs default to a folder of the user's own, ``Documents/dpstudio/<dataset>/``
(``$DPSTUDIO_OUTPUT_DIR`` overrides the base), not beside the input, which may be read-only,
on a shared drive or inside the application bundle.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

OPERATOR_MAX = 200


def app_data_dir() -> Path:
    """The user's application-data folder for dpstudio (not created here)."""
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / "dpstudio"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "dpstudio"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dpstudio"


def prefs_path() -> Path:
    env = os.environ.get("DPSTUDIO_PREFS")
    return Path(env).expanduser() if env else app_data_dir() / "preferences.json"


def load() -> dict[str, Any]:
    """The stored preferences; {} when there are none or the file is unreadable (a preference
    is never worth refusing to start for)."""
    try:
        data = json.loads(prefs_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(**changes: Any) -> None:
    """Merge ``changes`` into the stored preferences, atomically (a crash leaves the old file)."""
    path = prefs_path()
    data = load()
    data.update(changes)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".preferences-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def clean_operator(name: str | None) -> str | None:
    """The operator's name as printed: control characters removed, whitespace collapsed, at
    most OPERATOR_MAX characters; None when nothing is left."""
    if name is None:
        return None
    text = re.sub(r"[\x00-\x1f\x7f]", " ", str(name))
    text = " ".join(text.split())[:OPERATOR_MAX]
    return text or None


def operator() -> str | None:
    """The remembered operator name (the person who runs releases), or None if never given."""
    return clean_operator(load().get("operator"))


def set_operator(name: str | None) -> str | None:
    """Remember ``name`` as the operator; returns the name as it will be printed."""
    cleaned = clean_operator(name)
    save(operator=cleaned)
    return cleaned


def _safe_folder_name(name: str) -> str:
    stem = re.sub(r'[<>:"/\\|?*\x00-\x1f]', "_", name).strip(" .")
    return stem[:100] or "dataset"


def documents_dir() -> Path:
    """The user's Documents folder (XDG's user-dirs setting on Linux when present)."""
    if sys.platform not in ("win32", "darwin"):
        conf = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "user-dirs.dirs"
        try:
            for line in conf.read_text(encoding="utf-8").splitlines():
                if line.startswith("XDG_DOCUMENTS_DIR="):
                    value = line.split("=", 1)[1].strip().strip('"').replace("$HOME", str(Path.home()))
                    if value and Path(value) != Path.home():
                        return Path(value)
        except OSError:
            pass
    return Path.home() / "Documents"


def output_dir(dataset_name: str) -> Path:
    """Default folder for a dataset's outputs: ``<Documents>/dpstudio/<dataset stem>/``
    (``$DPSTUDIO_OUTPUT_DIR/<dataset stem>/`` when set).  Not created here."""
    env = os.environ.get("DPSTUDIO_OUTPUT_DIR")
    base = Path(env).expanduser() if env else documents_dir() / "dpstudio"
    return base / _safe_folder_name(Path(dataset_name).stem)
