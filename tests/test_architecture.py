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
    "dpstudio.report",
    "dpstudio.report.html",
    "dpstudio.report.model",
    "dpstudio.report.text",
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


# The only ways from a Qt-free module to Qt (pyproject.toml's import-linter Qt contract ignores
# exactly these edges): each one an import inside the function that needs Qt.
LAZY_QT_EDGES = {
    ("dpstudio.report.model", "dpstudio.report.pdf.charts"),  # the error-vs-floor chart image
    ("dpstudio.report", "dpstudio.report.pdf.charts"),  # render(): does Qt load (HTML chart)?
    ("dpstudio.report", "dpstudio.report.pdf"),  # render(): a PDF report
    ("dpstudio.cli", "dpstudio.gui.app"),  # `dpstudio gui`
}


def _qt_contract() -> dict:
    import tomllib

    config = tomllib.loads((Path(dpstudio.__file__).parents[1] / "pyproject.toml").read_text("utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(
        c for c in contracts if "PySide6" in c.get("forbidden_modules", ()) and "dpstudio.cli" in c["source_modules"]
    )


def test_qt_contract_counts_indirect_imports_and_ignores_only_the_lazy_edges():
    contract = _qt_contract()
    assert not contract.get("allow_indirect_imports", False)
    ignored = {tuple(x.strip() for x in edge.split("->")) for edge in contract.get("ignore_imports", ())}
    assert ignored == LAZY_QT_EDGES
    # every module of the Qt-free test is a source of the contract (a package covers its modules)
    sources = contract["source_modules"]
    for name in _qt_free_modules():
        if name != "dpstudio.report":  # the package itself: its modules but report.pdf are listed
            assert any(name == s or name.startswith(s + ".") for s in sources), name


def _module_level_imports(path: Path, package: str) -> set[str]:
    """Modules imported by ``path`` outside any function (module body, class bodies, ``if``...)."""
    import ast

    found: set[str] = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: resolved against the module's package
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{a.name}" for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text("utf-8")))
    return found


def test_the_edges_to_qt_stay_lazy():
    root = Path(dpstudio.__file__).parent
    for importer, imported in LAZY_QT_EDGES:
        rel = Path(*importer.split(".")[1:])
        path = root / rel / "__init__.py" if (root / rel).is_dir() else (root / rel).with_suffix(".py")
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        text = path.read_text("utf-8")
        assert imported in text, f"{importer} no longer imports {imported}: drop the edge from the contract"
        top = _module_level_imports(path, package)
        assert not any(m == imported or m.startswith(imported + ".") for m in top), (
            f"{importer} imports {imported} at module level: Qt would load with it"
        )
