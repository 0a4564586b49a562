"""Installers: build (or reuse) the PyInstaller bundle and the .deb, then smoke-test both.

Slow (a PyInstaller build takes minutes) and Linux-only, so it runs only when asked:

    DPSTUDIO_TEST_PACKAGING=1 .venv/bin/python -m pytest -q tests/test_packaging.py

DPSTUDIO_PACKAGING_REBUILD=1 forces a fresh build; otherwise an existing packaging/dist is reused.
CI runs it through packaging/ci.sh.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
DIST = PACKAGING / "dist"
BUNDLE = DIST / "dpstudio"

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("DPSTUDIO_TEST_PACKAGING") != "1",
        reason="packaging tests build installers (minutes); set DPSTUDIO_TEST_PACKAGING=1",
    ),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the .deb is built on Linux only"),
]


def _version() -> str:
    for line in (ROOT / "dpstudio" / "__init__.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise AssertionError("no __version__")


def _deb() -> Path:
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    return DIST / f"dpstudio_{_version()}_{arch}.deb"


@pytest.fixture(scope="module")
def built() -> tuple[Path, Path]:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb not available")
    rebuild = os.environ.get("DPSTUDIO_PACKAGING_REBUILD") == "1"
    if rebuild or not (BUNDLE / "dpstudio").exists() or not _deb().exists():
        py = Path(sys.executable)
        subprocess.run(["make", "-C", str(PACKAGING), "all", f"PY={py}"], check=True, timeout=3600)
    assert (BUNDLE / "dpstudio").exists(), "bundle not built"
    assert _deb().exists(), "deb not built"
    return BUNDLE, _deb()


def _smoke(target: Path) -> str:
    proc = subprocess.run(
        ["bash", str(PACKAGING / "smoke_test.sh"), str(target)], capture_output=True, text=True, timeout=900
    )
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_bundle_smoke(built):
    bundle, _ = built
    out = _smoke(bundle)
    assert "GUI offscreen: first window painted" in out


def test_deb_smoke(built, tmp_path):
    _, deb = built
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    subprocess.run(["dpkg-deb", "-e", str(deb), str(root / "DEBIAN")], check=True)
    out = _smoke(root)
    assert "/usr/bin/dpstudio" in out


def test_deb_metadata_and_size(built):
    _, deb = built
    info = subprocess.run(["dpkg-deb", "-I", str(deb)], capture_output=True, text=True, check=True).stdout
    assert f"Version: {_version()}" in info
    for lib in (
        "libxcb-cursor0",
        "libxkbcommon-x11-0",
        "libxcb-icccm4",
        "libxcb-keysyms1",
        "libegl1",
        "libgl1",
        "libfontconfig1",
        "libdbus-1-3",
    ):
        assert lib in info, lib
    contents = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    for path in (
        "./opt/dpstudio/dpstudio",
        "./usr/bin/dpstudio",
        "./usr/share/applications/dpstudio.desktop",
        "./usr/share/icons/hicolor/256x256/apps/dpstudio.png",
        "./usr/share/icons/hicolor/scalable/apps/dpstudio.svg",
        "./opt/dpstudio/_internal/resources/demo/census_demo.csv",
    ):
        assert path in contents, path
    assert deb.stat().st_size <= 150 * 1024 * 1024, f".deb is {deb.stat().st_size / 1e6:.0f} MB (> 150 MB)"


def test_bundle_size_and_exclusions(built):
    bundle, _ = built
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file() and not p.is_symlink())
    assert size <= 350 * 1024 * 1024, f"bundle is {size / 2**20:.0f} MiB (> 350 MiB)"
    internal = bundle / "_internal"
    names = {p.name for p in internal.rglob("*")}
    for unwanted in (
        "libarrow_flight.so.2600",
        "libQt6Qml.so.6",
        "libQt6Quick.so.6",
        "libQt6Network.so.6",
        "_tkinter.cpython-311-x86_64-linux-gnu.so",
        "sklearn",
        "matplotlib",
    ):
        assert not any(n.startswith(unwanted) for n in names), unwanted
    assert not [p for p in internal.rglob("tests") if p.is_dir()], "test folders bundled"
    assert (internal / "resources" / "demo" / "LICENSE-data.md").exists()
