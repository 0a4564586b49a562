"""Canary values planted in identifier, ignored and sensitive columns must not reach any report
variant (HTML, PDF text) nor the metadata of exported files."""

from __future__ import annotations

import zipfile

import pytest
from test_report import make_release, pdf_text

from dpstudio.export import write_table
from dpstudio.report import render, write_report

CANARY_TEXT = "CANARY_ID_7f3a"
CANARY_NUM = 987654.321
NEEDLES = [CANARY_TEXT, "CANARY", "987654", "987,654", "9.877e", "9.88e+05", "987654.321"]

ROWS = [
    {
        "person_id": CANARY_TEXT,
        "age": 44,
        "income": CANARY_NUM,
        "score": 50,
        "sex": "female",
        "smoker": "yes",
        "notes": CANARY_TEXT + " lives at 1 Canary Road",
    },
    {"person_id": "P-canary-2", "age": 45, "income": 1000, "score": 51, "sex": "male", "smoker": "no", "notes": "ok"},
]


def _absent(text: str, where: str):
    for needle in NEEDLES:
        assert needle not in text, f"canary {needle!r} leaked into {where}"


@pytest.fixture(scope="module")
def canary_release(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("canary")
    res, frame = make_release(tmp, extra_rows=ROWS, report=tmp / "report.html")
    assert CANARY_TEXT in frame["person_id"].tolist() and CANARY_NUM in frame["income"].tolist()
    return tmp, res, frame


@pytest.mark.parametrize("variant", ["internal", "external"])
def test_no_canary_in_html(canary_release, variant):
    _, res, frame = canary_release
    html = render(res, "html", variant=variant, frame=frame).decode("utf-8")
    assert res.release_id in html  # the report was really rendered from this release
    # the raw input's hash is itself a function of the canaries: internal version only
    assert (res.input_sha256 in html) == (variant == "internal")
    _absent(html, f"{variant} HTML")


def test_report_written_by_execute_release_is_clean(canary_release):
    tmp, _, _ = canary_release
    _absent((tmp / "report.html").read_text(encoding="utf-8"), "execute_release's report")


@pytest.mark.gui
@pytest.mark.parametrize("variant", ["internal", "external"])
def test_no_canary_in_pdf(canary_release, tmp_path, variant):
    _, res, frame = canary_release
    path = tmp_path / f"{variant}.pdf"
    write_report(res, path, variant=variant, frame=frame)
    text = pdf_text(path)
    assert res.release_id in " ".join(text.split())
    assert (res.input_sha256 in " ".join(text.split())) == (variant == "internal")
    _absent(text, f"{variant} PDF text")
    _absent(path.read_bytes().decode("latin-1"), f"{variant} PDF bytes")


def test_clipped_canary_only_counted_internally(canary_release):
    _, res, frame = canary_release
    internal = render(res, "html", variant="internal", frame=frame).decode()
    external = render(res, "html", variant="external", frame=frame).decode()
    assert "values clipped to the bounds" in internal  # the steward learns 1 value was clipped
    assert "values clipped to the bounds" not in external


def test_no_canary_in_export_metadata(canary_release, tmp_path):
    import pyarrow.parquet as pq

    _, res, _ = canary_release
    data = res.outcome.data
    assert "person_id" not in data.columns and "notes" not in data.columns
    write_table(data, tmp_path / "o.parquet")
    meta = pq.ParquetFile(tmp_path / "o.parquet").schema_arrow.metadata or {}
    _absent(b"".join(k + v for k, v in meta.items()).decode("latin-1"), "parquet schema metadata")
    pf = pq.ParquetFile(tmp_path / "o.parquet").metadata
    kv = pf.metadata or {}
    _absent(repr(kv), "parquet key-value metadata")
    write_table(data, tmp_path / "o.xlsx")
    with zipfile.ZipFile(tmp_path / "o.xlsx") as z:
        for name in z.namelist():
            if name.startswith("docProps/") or name.endswith(".rels") or "workbook" in name:
                _absent(z.read(name).decode("utf-8", "replace"), f"xlsx {name}")
    from openpyxl import load_workbook

    props = load_workbook(tmp_path / "o.xlsx").properties
    _absent(
        " ".join(
            str(getattr(props, a)) for a in ("title", "subject", "creator", "description", "keywords", "lastModifiedBy")
        ),
        "xlsx properties",
    )
