"""The compliance report: both variants, HTML and PDF, from a real end-to-end release."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main
from dpstudio.ledger import Ledger
from dpstudio.pipeline import execute_release
from dpstudio.recipe.model import load_recipe
from dpstudio.report import build_model, render, write_report


def make_release(
    tmp_path, *, report=None, variant="internal", extra_rows=None, copy_domain=False, epsilon="1", delta=None, seed=None
):
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame(
        {
            "person_id": [f"P{i:05d}" for i in range(n)],
            "age": rng.integers(18, 90, n),
            "income": rng.integers(0, 200_000, n),
            "score": rng.integers(0, 100, n),
            "sex": rng.choice(["female", "male"], n),
            "smoker": rng.choice(["yes", "no"], n),
            "notes": ["ok"] * n,
        }
    )
    if extra_rows is not None:
        frame = pd.concat([frame, pd.DataFrame(extra_rows)], ignore_index=True)
    data = tmp_path / "people.csv"
    frame.to_csv(data, index=False)
    recipe_path = tmp_path / "recipe.json"
    args = [
        "recipe",
        "init",
        str(data),
        "-o",
        str(recipe_path),
        "--epsilon",
        epsilon,
        "--role",
        "person_id=identifier",
        "--role",
        "notes=ignore",
        "--role",
        "sex=public",
        "--role",
        "age=sensitive",
        "--role",
        "income=sensitive",
        "--role",
        "smoker=sensitive",
        "--role",
        "score=sensitive",
        "--bounds",
        "age=0:120",
        "--bounds",
        "income=0:250000",
        "--categories",
        "smoker=yes,no",
        "--categories",
        "sex=female,male",
        "--bounds",
        "score=data" if copy_domain else "score=0:100",
    ]
    if delta is not None:
        args += ["--delta", delta]
    if seed is not None:
        args += ["--seed", str(seed)]
    assert main(args) == 0
    recipe = load_recipe(recipe_path)
    led = Ledger(tmp_path / "ledger.sqlite")
    led.set_cap(str(data), 10.0, 1e-5)
    res = execute_release(
        recipe, output_path=tmp_path / "out.csv", ledger=led, report_path=report, report_variant=variant
    )
    return res, frame


def pdf_text(path) -> str:
    exe = shutil.which("pdftotext")
    if exe is None:
        pytest.skip(
            "pdftotext (poppler-utils) is not installed: run 'make test' as root or "
            "'apt-get install poppler-utils' to check the PDF's text"
        )
    text = subprocess.run([exe, "-layout", str(path), "-"], capture_output=True, text=True, check=True).stdout
    # the report font draws ff/fi/fl as ligature glyphs, which pdftotext returns as U+FB00-FB04:
    # a release id like 'ff13...' did not match its own report (and a canary could hide)
    return text.translate(_LIGATURES)


_LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"}
)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("rel"))


def test_model_sections_and_variants(release):
    res, frame = release
    internal = build_model(res, "internal", frame, charts=False)
    external = build_model(res, "external", frame, charts=False)
    titles = [s.title for s in internal.sections]
    for t in (
        "Summary",
        "Columns",
        "Mechanisms and parameters",
        "Privacy accounting",
        "Privacy budget ledger",
        "Accuracy",
        "Residual risk estimates",
        "Data steward statistics",
        "Warnings and acknowledgements",
        "Randomness and reproduction",
        "Sign-off",
    ):
        assert t in titles
    ext_titles = [s.title for s in external.sections]
    assert "Residual risk estimates" not in ext_titles and "Data steward statistics" not in ext_titles
    assert dict(internal.header)["Input fingerprint (SHA-256)"] == res.input_sha256


def test_html_is_self_contained(release, tmp_path):
    res, frame = release
    path = tmp_path / "r.html"
    write_report(res, path, variant="internal", frame=frame)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html
    assert 'src="http' not in html and "<link" not in html and "<script" not in html
    # the fixture releases "sex" unchanged, so the delivered guarantee is semi-sensitive DP
    assert res.input_sha256 in html and "semi-sensitive differential privacy" in html
    assert "ε = 1" in html and "δ = 0" in html
    assert "What it does not mean" in html and "Sign-off" in html
    assert "internal use only" in html
    from dpstudio.report.pdf.charts import qt_available

    if qt_available():
        assert "data:image/png;base64," in html


def test_html_report_works_without_qt(release, monkeypatch):
    import dpstudio.report.pdf.charts as charts

    monkeypatch.setattr(charts, "qt_available", lambda: False)
    res, frame = release
    html = render(res, "html", frame=frame).decode()
    assert "data:image/png" not in html and res.input_sha256 in html
    code = (
        "import sys, dpstudio.report.html, dpstudio.report.model, dpstudio.report.text; "
        "bad=[m for m in sys.modules if m.startswith(('PySide6','pyqtgraph'))]; print(bad); sys.exit(bool(bad))"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_unknown_extension_and_variant(release, tmp_path):
    from dpstudio.errors import UserError

    res, _ = release
    with pytest.raises(UserError, match="html or .pdf"):
        write_report(res, tmp_path / "r.docx")
    with pytest.raises(UserError, match="variant"):
        write_report(res, tmp_path / "r.html", variant="public")
    assert not list(tmp_path.iterdir())


@pytest.mark.gui
def test_pdf_text_has_the_key_figures(release, tmp_path):
    res, frame = release
    path = tmp_path / "r.pdf"
    write_report(res, path, variant="external", frame=frame)
    assert path.read_bytes().startswith(b"%PDF")
    text = pdf_text(path)
    flat = " ".join(text.split())
    assert "ε = 1" in flat and "δ = 0" in flat
    # the external version must not carry a hash of the raw input (it can be brute-forced)
    assert res.input_sha256 not in flat and res.recipe.sha256() not in flat
    assert "withheld in the external version" in flat
    internal = tmp_path / "i.pdf"
    write_report(res, internal, variant="internal", frame=frame)
    assert res.input_sha256 in " ".join(pdf_text(internal).split())
    assert "Total privacy loss ε = 1, δ = 0" in flat
    assert "EXTERNAL VERSION" in flat and "internal use only" not in flat
    assert "page 1 of" in flat


def test_external_withholds_domains_copied_from_data(tmp_path):
    res, frame = make_release(
        tmp_path,
        copy_domain=True,
        extra_rows=[
            {"person_id": "PX", "age": 40, "income": 1, "score": 4242, "sex": "male", "smoker": "no", "notes": "ok"}
        ],
    )
    internal = render(
        res,
        "html",
        variant="internal",
        frame=frame,
    ).decode()
    external = render(res, "html", variant="external", frame=frame).decode()
    assert "4,242" in internal  # the steward sees the copied bound, flagged
    assert 'class="flag"' in internal
    # as a number, not as four hex digits inside a hash or the release id (random: ~0.4 % of runs)
    assert not re.search(r"(?<![0-9A-Za-z])4,?242(?![0-9A-Za-z])", external)
    assert "withheld: copied from the data" in external
    assert res.recipe.sha256() not in external  # a hash of the bounds could be brute-forced


def test_fixed_seed_and_no_ledger_are_warned(tmp_path):
    res, frame = make_release(tmp_path, seed=7)
    res.ledger_before = res.ledger_after = None
    res.ledger_recorded = False  # what the report reads (a failed summary alone is not "unrecorded")
    html = render(res, "html", frame=frame).decode()
    assert "fixed random seed" in html and "not recorded in a privacy budget ledger" in html
