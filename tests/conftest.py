import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"
DEMO = ROOT / "resources" / "demo" / "census_demo.csv"

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _isolated_ledger(tmp_path, monkeypatch):
    """No test writes to the user's real ledger."""
    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite"))
    # nor to the user's preferences or Documents folder
    monkeypatch.setenv("DPSTUDIO_PREFS", str(tmp_path / "preferences.json"))
    monkeypatch.setenv("DPSTUDIO_OUTPUT_DIR", str(tmp_path / "outputs"))


def shared_dataset(*parts) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared dataset missing: {path}")
    return path
