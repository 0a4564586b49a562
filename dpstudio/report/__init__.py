"""Compliance reports of a release: HTML (self-contained, printable) or PDF (Qt), in an
*internal* variant (everything, including figures computed on the raw data) and an *external*
one (publishable: DP outputs and public information only).

Only the :mod:`dpstudio.report.pdf` package (PDF writer and chart images) imports Qt, lazily.
"""

from __future__ import annotations

from pathlib import Path

from dpstudio.errors import UserError
from dpstudio.report.model import VARIANTS, ReportModel, build_model

__all__ = ["write_report", "build_model", "render", "ReportModel", "VARIANTS"]


#: report formats by file suffix (dpstudio.targets checks them before a release spends anything)
REPORT_KINDS = {".html": "html", ".htm": "html", ".pdf": "pdf"}


def _kind(path) -> str:
    kind = REPORT_KINDS.get(Path(path).suffix.lower())
    if kind is None:
        raise UserError(f"cannot tell the report format of {path}: use a .html or .pdf file name")
    return kind


def render(result, kind: str, *, variant: str = "internal", frame=None) -> bytes:
    """The report as bytes (``kind``: "html" or "pdf")."""
    if kind == "html":
        from dpstudio.report.html import render_html
        from dpstudio.report.pdf.charts import qt_available

        model = build_model(result, variant, frame, charts=qt_available())
        return render_html(model).encode("utf-8")
    if kind == "pdf":
        try:
            from dpstudio.report.pdf import render_pdf_bytes

            model = build_model(result, variant, frame, charts=True)
            return render_pdf_bytes(model)
        except ImportError as exc:
            raise UserError(
                f"PDF reports need Qt (PySide6), which failed to load: {exc}; write an .html report instead"
            ) from None
    raise UserError(f"unknown report format {kind!r}")


def write_report(result, path, *, variant: str = "internal", frame=None) -> str:
    """Write the report atomically (HTML or PDF by extension); returns its SHA-256."""
    from dpstudio.export import write_bytes

    if variant not in VARIANTS:
        raise UserError(f"report variant must be 'internal' or 'external', got {variant!r}")
    data = render(result, _kind(path), variant=variant, frame=frame)
    return write_bytes(data, path)
