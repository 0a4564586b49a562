"""The engine, recipe, ledger, export and CLI never import Qt (ARCHITECTURE.md rule 1)."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import dpstudio

QT_FREE_PACKAGES = ["dpstudio.engine", "dpstudio.recipe", "dpstudio.plan"]
QT_FREE_MODULES = [
    "dpstudio.cli",
    "dpstudio.ledger",
    "dpstudio.export",
    "dpstudio.errors",
    "dpstudio.pipeline",
    "dpstudio.risk",
    "dpstudio.targets",
    "dpstudio.resources",
    "dpstudio.report.html",
    "dpstudio.report.model",
]


def _qt_free_modules():
    root = Path(dpstudio.__file__).parent
    names = list(QT_FREE_MODULES)
    for pkg in QT_FREE_PACKAGES:
        path = root.joinpath(*pkg.split(".")[1:])
        names.append(pkg)
        names += [m.name for m in pkgutil.walk_packages([str(path)], prefix=pkg + ".")]
    return [n for n in names if _exists(root, n)]


def _exists(root: Path, name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (root / rel).with_suffix(".py").exists() or (root / rel / "__init__.py").exists()


def test_engine_recipe_cli_never_import_qt():
    modules = _qt_free_modules()
    assert "dpstudio.engine.rng" in modules and "dpstudio.cli" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph'))\n"
        "print(','.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"Qt imported by engine/recipe/CLI: {proc.stdout} {proc.stderr[-2000:]}"


def test_cli_help_runs_without_qt():
    code = (
        "import sys, contextlib, io\nfrom dpstudio.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
        "assert 'PySide6' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
