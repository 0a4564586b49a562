"""PDF report via Qt only: QTextDocument (Qt's rich-text HTML subset) painted page by page on a
QPdfWriter (A4, fonts embedded by Qt, a footer with the release id and page numbers).

Charts are added as QImage resources (``QTextDocument.addResource``).  This and
:mod:`dpstudio.report.pdf.charts` (this package) is the only part of the report that imports Qt.
"""

from __future__ import annotations

import html

from dpstudio.report.model import Cell, ReportModel

RES = 96  # layout resolution (px per inch): text stays vector in the PDF, images keep their pixels
RED = "#b3190f"
BLUE = "#123b6b"
GRID = "#b9c3cf"

_STYLE = f"""
body {{ font-family: 'DejaVu Sans', 'Segoe UI', Arial, sans-serif; font-size: 9.5pt; color: #1b1b1b; }}
h1 {{ font-size: 17pt; margin-bottom: 4px; }}
h2 {{ font-size: 12.5pt; color: {BLUE}; margin-top: 16px; margin-bottom: 5px; }}
p {{ margin-top: 3px; margin-bottom: 5px; }}
th {{ background-color: #eef2f7; font-weight: bold; text-align: left; }}
td.k {{ background-color: #f6f8fb; font-weight: bold; }}
td.flag {{ color: {RED}; font-weight: bold; }}
pre {{ font-family: 'DejaVu Sans Mono', monospace; font-size: 7.2pt; }}
.note {{ color: #4a5560; font-size: 8.5pt; }}
.caption {{ color: #4a5560; font-size: 8.5pt; }}
"""


def e(s) -> str:
    return html.escape(str(s), quote=True)


def _soft(s: str) -> str:
    """Escape, let long unbroken strings (hashes, paths) wrap inside narrow cells, and keep the
    cell's line breaks (one parameter per line)."""
    out = []
    for word in str(s).split(" "):
        if len(word) > 24:
            word = "\u200b".join(word[i : i + 16] for i in range(0, len(word), 16))
        out.append(word)
    return e(" ".join(out)).replace("\n", "<br>")


def _table(t: dict) -> str:
    widths = t.get("widths")
    head = "".join(
        f'<th width="{widths[i]}%">{e(h)}</th>' if widths else f"<th>{e(h)}</th>" for i, h in enumerate(t["head"])
    )
    rows = []
    for row in t["rows"]:
        cells = []
        for c in row:
            if isinstance(c, Cell) and c.flag:
                cells.append(f'<td class="flag">{_soft(c.text)}</td>')
            else:
                cells.append(f"<td>{_soft(c.text if isinstance(c, Cell) else c)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table width="99%" border="1" cellspacing="0" cellpadding="4" style="border-color:{GRID}; '
        f'border-collapse: collapse;"><thead><tr>{head}</tr></thead>{"".join(rows)}</table>'
    )


def _kv(rows) -> str:
    body = "".join(f'<tr><td class="k" width="32%">{e(k)}</td><td>{e(v)}</td></tr>' for k, v in rows)
    return (
        f'<table width="99%" border="1" cellspacing="0" cellpadding="4" style="border-color:{GRID}; '
        f'border-collapse: collapse;">{body}</table>'
    )


def _box(text: str, fg: str, bg: str) -> str:
    return (
        f'<table width="99%" border="0" cellspacing="0" cellpadding="6"><tr>'
        f'<td style="background-color:{bg}; color:{fg}; font-weight:bold;">{e(text)}</td></tr></table>'
    )


def qt_html(model: ReportModel, image_width_px: int) -> str:
    out = [f"<html><body><h1>{e(model.title)}</h1>"]
    if model.variant == "internal":
        out.append(_box(model.banner, "#8b1d12", "#fde8e6"))
    else:
        out.append(_box(model.banner, BLUE, "#e7f1fb"))
    out.append("<p></p>" + _kv(model.header))
    for sec in model.sections:
        tag = f' <span style="color:{RED}; font-size:8.5pt;">(internal only)</span>' if sec.internal_only else ""
        out.append(f"<h2>{e(sec.title)}{tag}</h2>")
        for b in sec.blocks:
            if b.kind == "p":
                out.append(f"<p>{e(b.content)}</p>")
            elif b.kind == "warn":
                out.append(
                    f'<table width="99%" border="0" cellspacing="0" cellpadding="5"><tr>'
                    f'<td width="4" style="background-color:{RED};"></td>'
                    f'<td style="background-color:#fdf1ef;">{e(b.content)}</td></tr></table><p></p>'
                )
            elif b.kind == "note":
                out.append(f'<p class="note">{e(b.content)}</p>')
            elif b.kind == "list":
                assert isinstance(b.content, list), "a list block holds a list"
                out.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in b.content) + "</ul>")
            elif b.kind == "kv":
                out.append(_kv(b.content))
            elif b.kind == "table":
                assert isinstance(b.content, dict), "a table block holds a dict"
                out.append(_table(b.content))
            elif b.kind == "pre":
                assert isinstance(b.content, str), "a pre block holds text"
                if b.caption:
                    out.append(f"<p><b>{e(b.caption)}</b></p>")
                out.append(f"<pre>{e(_wrap_pre(b.content))}</pre>")
            elif b.kind == "image" and b.content in model.images:
                out.append(
                    f'<p><img src="{e(b.content)}" width="{image_width_px}"></p><p class="caption">{e(b.caption)}</p>'
                )
            elif b.kind == "signoff":
                assert isinstance(b.content, list), "a signoff block holds a list of roles"
                rows = "".join(f'<tr><td height="34">{e(r)}</td><td></td><td></td><td></td></tr>' for r in b.content)
                out.append(
                    f'<table width="99%" border="1" cellspacing="0" cellpadding="9" '
                    f'style="border-color:{GRID};">'
                    f'<tr><th width="22%">Role</th><th width="30%">Name</th><th width="16%">Date</th>'
                    f'<th width="32%">Signature</th></tr>{rows}</table>'
                )
    out.append(f'<p class="note">Generated by dpstudio. Report variant: {e(model.variant)}.</p></body></html>')
    return "".join(out)


def _wrap_pre(text: str, width: int = 118) -> str:
    lines = []
    for line in str(text).splitlines():
        while len(line) > width:
            lines.append(line[:width])
            line = "    " + line[width:]
        lines.append(line)
    return "\n".join(lines)


def render_pdf_bytes(model: ReportModel) -> bytes:
    from dpstudio.report.pdf.charts import ensure_app, on_gui_thread

    ensure_app()
    return on_gui_thread(lambda: _render(model))


def _render(model: ReportModel) -> bytes:
    from PySide6 import QtCore, QtGui

    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    writer = QtGui.QPdfWriter(buf)
    writer.setResolution(RES)
    writer.setPageSize(QtGui.QPageSize(QtGui.QPageSize.PageSizeId.A4))
    writer.setPageMargins(QtCore.QMarginsF(15, 14, 15, 14), QtGui.QPageLayout.Unit.Millimeter)
    writer.setTitle(f"{model.title} ({model.variant})")
    writer.setCreator("dpstudio")

    page_w, page_h = writer.width(), writer.height()
    footer_h = 22
    doc = QtGui.QTextDocument()
    doc.documentLayout().setPaintDevice(writer)
    doc.setDefaultStyleSheet(_STYLE)
    font = QtGui.QFont("DejaVu Sans")
    font.setPointSizeF(9.5)
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    for name, png in model.images.items():
        img = QtGui.QImage()
        img.loadFromData(png, "PNG")
        doc.addResource(QtGui.QTextDocument.ResourceType.ImageResource, QtCore.QUrl(name), img)
    doc.setHtml(qt_html(model, int(page_w * 0.98)))
    doc.setPageSize(QtCore.QSizeF(page_w, page_h - footer_h))
    pages = doc.pageCount()

    release_id = dict(model.header).get("Release id", "")
    painter = QtGui.QPainter(writer)
    try:
        for i in range(pages):
            if i:
                writer.newPage()
            painter.save()
            painter.translate(0, -i * (page_h - footer_h))
            doc.drawContents(painter, QtCore.QRectF(0, i * (page_h - footer_h), page_w, page_h - footer_h))
            painter.restore()
            painter.save()
            ffont = QtGui.QFont("DejaVu Sans")
            ffont.setPointSizeF(7.5)
            painter.setFont(ffont)
            painter.setPen(QtGui.QColor("#555"))
            painter.drawLine(0, page_h - footer_h + 4, page_w, page_h - footer_h + 4)
            text = f"dpstudio release report \u2014 {model.variant} version \u2014 release {release_id}"
            painter.drawText(
                QtCore.QRectF(0, page_h - footer_h + 6, page_w * 0.8, footer_h - 6),
                int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter),
                text,
            )
            painter.drawText(
                QtCore.QRectF(0, page_h - footer_h + 6, page_w, footer_h - 6),
                int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter),
                f"page {i + 1} of {pages}",
            )
            painter.restore()
    finally:
        painter.end()
    buf.close()
    return bytes(buf.data().data())  # QByteArray.data(): the bytes (its buffer protocol is not in the stubs)
