"""PDF report via Qt only: QTextDocument (Qt's rich-text HTML subset) painted page by page on a
QPdfWriter (A4 or Letter, fonts embedded by Qt, a footer with the release id and page numbers).

The document is laid out once as a single tall page and cut into pages here (:func:`_paginate`),
not by Qt's own pagination, which splits a text line or a table row across two pages: a page
ends only between two lines of text, between two table rows (the table's header rows are
repeated on the next page) or between two blocks, never right after a heading or a caption's
lead-in, and above the footer.  Words wrap only at word boundaries; long unbroken tokens
(hashes, paths) get invisible break opportunities; preformatted text is wrapped to the measured
width of the page.  The document information names the operator as Author (when the model has
one), with a Title, Subject and Keywords (the last two added to Qt's own as an incremental update).

Charts are added as QImage resources (``QTextDocument.addResource``).  This and
:mod:`dpstudio.report.pdf.charts` (this package) is the only part of the report that imports Qt.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from dpstudio.report.model import Cell, ReportModel

RES = 96  # layout resolution (px per inch): text stays vector in the PDF, images keep their pixels
RED = "#b3190f"
BLUE = "#123b6b"
GRID = "#b9c3cf"
TEXT = "#1b1b1b"
ZWSP = "\u200b"  # zero-width space: a line-break opportunity that prints nothing
MARGINS_MM = (16.0, 14.0, 16.0, 12.0)  # left, top, right, bottom: fits A4 and Letter alike
FOOTER_PX = 22  # the footer band at the bottom of the printable area
FOOTER_GAP_PX = 8  # space between the last line of content and the footer's rule
PAPERS = ("A4", "Letter")

_STYLE = f"""
body {{ font-family: 'DejaVu Sans', 'Segoe UI', Arial, sans-serif; font-size: 9.5pt; color: {TEXT}; }}
h1 {{ font-size: 17pt; margin-bottom: 4px; }}
h2 {{ font-size: 12.5pt; color: {BLUE}; margin-top: 16px; margin-bottom: 5px; }}
h3 {{ font-size: 9.5pt; font-weight: bold; margin-top: 6px; margin-bottom: 3px; }}
p {{ margin-top: 3px; margin-bottom: 5px; }}
th {{ background-color: #eef2f7; font-weight: bold; text-align: left; }}
td.k {{ background-color: #f6f8fb; font-weight: bold; }}
td.flag {{ color: {RED}; font-weight: bold; }}
pre {{ font-family: 'DejaVu Sans Mono', monospace; font-size: 7.2pt; }}
.note {{ color: #4a5560; font-size: 8.5pt; }}
.caption {{ color: #4a5560; font-size: 8.5pt; }}
"""
PRE_POINT_SIZE = 7.2


def e(s) -> str:
    return html.escape(str(s), quote=True)


_LONG = 20  # a token longer than this (no space in it) gets break opportunities
_RUN = 16  # at most this many characters between two break opportunities in a long token
_BREAK_AFTER = frozenset("/\\_.,;:=&?|+")


def _break_token(word: str) -> str:
    """A long token with zero-width spaces after its separators (``/``, ``_``, ``.``...) or, in
    a run without any, every ``_RUN`` characters (a hash: 64 hex digits in four groups)."""
    if len(word) <= _LONG:
        return word
    out: list[str] = []
    since = 0
    for i, ch in enumerate(word):
        out.append(ch)
        since += 1
        last = i == len(word) - 1
        if not last and ((ch in _BREAK_AFTER and since >= 4) or since >= _RUN):
            out.append(ZWSP)
            since = 0
    return "".join(out)


# spaces a figure must not be broken at (made non-breaking): "1 x 10^-6", "42.1 x", "0.5 %", "epsilon = 1"
_GLUE = re.compile(
    r"(?<=\d) (?=[\u00d7%])|(?<=\u00d7) (?=\d)|(?<=[\u03b5\u03b4\u03c1\u03bc\u03c3]) (?==)"
    r"|(?<=[\u03b5\u03b4\u03c1\u03bc\u03c3] =) (?=[\d\u2212-])"
)


def _soft(s) -> str:
    """Escape, let long unbroken tokens (hashes, paths) wrap inside narrow cells -- ordinary words
    are never broken (the document wraps at word boundaries only) -- and keep the text's line
    breaks (one parameter per line)."""
    lines = []
    for line in str(s).split("\n"):
        line = re.sub(r"\S+", lambda m: _break_token(m.group(0)), line)
        lines.append(_GLUE.sub("\u00a0", line))
    return e("\n".join(lines)).replace("\n", "<br>")


def _text(c) -> str:
    return c.text if isinstance(c, Cell) else "" if c is None else str(c)


def _grid_table(padding: int) -> str:
    """A full-width table with thin solid rules (Qt's default 'outset' border shows only two edges)."""
    return (
        f'<table width="100%" border="1" cellspacing="0" cellpadding="{padding}" style="border-color:{GRID}; '
        f'border-style: solid; border-collapse: collapse; margin-bottom: 6px;">'
    )


def _table(t: dict) -> str:
    widths = t.get("widths")
    head = "".join(
        f'<th width="{widths[i]}%">{_soft(h)}</th>' if widths and i < len(widths) else f"<th>{_soft(h)}</th>"
        for i, h in enumerate(t.get("head") or [])
    )
    rows = []
    for row in t.get("rows") or []:
        cells = []
        for c in row:
            if isinstance(c, Cell) and c.flag:
                cells.append(f'<td class="flag">{_soft(c.text)}</td>')
            else:
                cells.append(f"<td>{_soft(_text(c))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    thead = f"<thead><tr>{head}</tr></thead>" if head else ""
    return f"{_grid_table(4)}{thead}{''.join(rows)}</table>"


def _kv(rows) -> str:
    body = "".join(f'<tr><td class="k" width="32%">{_soft(k)}</td><td>{_soft(v)}</td></tr>' for k, v in _pairs(rows))
    return f"{_grid_table(4)}{body}</table>"


def _pairs(rows) -> list[tuple[str, str]]:
    out = []
    for r in rows or []:
        if isinstance(r, (list, tuple)) and len(r) >= 2:
            out.append((_text(r[0]), _text(r[1])))
        else:
            out.append((_text(r), ""))
    return out


def _box(text: str, fg: str, bg: str) -> str:
    return (
        f'<table width="100%" border="0" cellspacing="0" cellpadding="6" style="margin-bottom: 4px;"><tr>'
        f'<td style="background-color:{bg}; color:{fg}; font-weight:bold;">{_soft(text)}</td></tr></table>'
    )


def _as_text(content) -> str:
    """Any block's content as plain text (a block kind this renderer does not know)."""
    if content is None:
        return ""
    if isinstance(content, (list, tuple)):
        return "\n".join(_as_text(x) for x in content)
    if isinstance(content, dict):
        return "\n".join(f"{k}: {_as_text(v)}" for k, v in content.items())
    return _text(content)


def qt_html(model: ReportModel, image_width_px: int, pre_columns: int = 118) -> str:
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
            out.append(_block(model, b, image_width_px, pre_columns))
    out.append(f'<p class="note">Generated by dpstudio. Report variant: {e(model.variant)}.</p></body></html>')
    return "".join(out)


def _block(model: ReportModel, b, image_width_px: int, pre_columns: int) -> str:
    caption = getattr(b, "caption", "") or ""
    if b.kind == "p":
        return f"<p>{_soft(b.content)}</p>"
    if b.kind == "warn":
        return (
            f'<table width="100%" border="0" cellspacing="0" cellpadding="5" style="margin-bottom: 6px;"><tr>'
            f'<td width="4" style="background-color:{RED};"></td>'
            f'<td style="background-color:#fdf1ef;">{_soft(b.content)}</td></tr></table>'
        )
    if b.kind == "note":
        return f'<p class="note">{_soft(b.content)}</p>'
    if b.kind == "list" and isinstance(b.content, (list, tuple)):
        return "<ul>" + "".join(f"<li>{_soft(x)}</li>" for x in b.content) + "</ul>"
    if b.kind == "kv" and isinstance(b.content, (list, tuple)):
        lead = f"<h3>{e(caption)}</h3>" if caption else ""
        return lead + _kv(b.content)
    if b.kind == "table" and isinstance(b.content, dict):
        lead = f"<h3>{e(caption)}</h3>" if caption else ""
        return lead + _table(b.content)
    if b.kind == "pre":
        lead = f"<h3>{e(caption)}</h3>" if caption else ""
        return lead + f"<pre>{e(wrap_pre(_as_text(b.content), pre_columns))}</pre>"
    if b.kind == "image":
        if not isinstance(b.content, str) or b.content not in model.images:
            return ""
        # the image and its caption in one block: a page never separates them
        return (
            f'<p><img src="{e(b.content)}" width="{image_width_px}"><br>'
            f'<span class="caption">{_soft(caption)}</span></p>'
        )
    if b.kind == "signoff" and isinstance(b.content, (list, tuple)):
        rows = "".join(f'<tr><td height="34">{_soft(r)}</td><td></td><td></td><td></td></tr>' for r in b.content)
        return (
            f"{_grid_table(9)}"
            f'<thead><tr><th width="22%">Role</th><th width="30%">Name</th><th width="16%">Date</th>'
            f'<th width="32%">Signature</th></tr></thead>{rows}</table>'
        )
    # a kind this renderer does not know (or content of an unexpected shape): shown as text
    lead = f"<h3>{e(caption)}</h3>" if caption else ""
    return lead + f"<p>{_soft(_as_text(b.content))}</p>"


_PRE_BREAK = re.compile(r"[ ,;:=/\\]")


def wrap_pre(text: str, width: int = 118) -> str:
    """Preformatted text wrapped to ``width`` characters: at a space or separator when one is in
    the second half of the line, the continuation indented one step below the line's own indent."""
    width = max(int(width), 20)
    lines = []
    for line in str(text).expandtabs(4).splitlines():
        indent = len(line) - len(line.lstrip(" "))
        cont = " " * min(indent + 4, width // 2)
        while len(line) > width:
            cut = 0
            for m in _PRE_BREAK.finditer(line, 0, width):
                if m.start() >= width // 2:
                    cut = m.start() + 1
            if cut <= 0:
                cut = width
            lines.append(line[:cut].rstrip())
            line = cont + line[cut:].lstrip(" ")
        lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# pagination


@dataclass
class _Break:
    """A place where a page may end: the next page starts at ``y``; the page ending here shows
    content down to ``end`` (>= y: a table's row rule is drawn on both pages)."""

    y: float
    end: float
    penalty: int = 0
    header: tuple[float, float] | None = None  # a table's header rows to repeat on the next page
    skip: float = 0.0  # with a repeated header: the row's own top rule, not drawn twice
    line_of: int | None = None  # between two lines of this (top-level) block: its number


@dataclass
class _Page:
    top: float
    bottom: float
    header: tuple[float, float] | None = None
    line_of: int | None = None  # the page starts inside this block (the rest of a paragraph)


_HAIR = 0.05  # layout pixels
SOFT = 1  # widow / orphan: one line of a paragraph alone
FORBID = 2  # a heading (or lead-in) separated from what follows, a header row alone


def _is_keep_with_next(block) -> bool:
    """A heading, or a paragraph that leads into what follows ("What it does not mean:")."""
    if block.blockFormat().headingLevel() > 0:
        return True
    return block.text().rstrip().endswith(":") and not block.textList()


def _top_frame(doc, block):
    """The top-level frame (a table) holding ``block``, or None for a block of the root frame."""
    from PySide6 import QtGui

    root = doc.rootFrame()
    frame = QtGui.QTextCursor(block).currentFrame()
    if frame is None or frame == root:
        return None
    while frame.parentFrame() is not None and frame.parentFrame() != root:
        frame = frame.parentFrame()
    return frame


def _table_breaks(doc, table, keep_prev: bool) -> list[_Break]:
    """Breaks before each row of a top-level table (never right after its header rows)."""
    from PySide6 import QtGui

    layout = doc.documentLayout()
    fmt = table.format()
    border = float(fmt.border()) if fmt.border() > 0 else 0.0
    rows, cols = table.rows(), table.columns()
    # the top of each row's content: a cell's first block sits its padding below the row's rule
    tops: list[float | None] = []
    for r in range(rows):
        top = None
        for c in range(cols):
            cell = table.cellAt(r, c)
            if not cell.isValid() or cell.row() != r:
                continue  # a cell spanning from an earlier row
            cf = cell.format().toTableCellFormat()
            has = cf.hasProperty(QtGui.QTextFormat.Property.TableCellTopPadding)
            pad = cf.topPadding() if has else fmt.cellPadding()
            y = layout.blockBoundingRect(doc.findBlock(cell.firstPosition())).top() - pad
            top = y if top is None else min(top, y)
        tops.append(top)
    if not rows or tops[0] is None:
        r = layout.frameBoundingRect(table)
        return [_Break(r.top(), r.top(), FORBID if keep_prev else 0)]
    # a row's rule (``border`` wide) ends half a pixel above its padding: a page that ends at a row
    # keeps the rule under it, the next one starts with the rule above the next row
    rule = border + 1.0 if border else 0.0
    start = float(tops[0]) - rule
    heads = max(0, min(fmt.headerRowCount(), rows - 1))
    header = None
    if heads and tops[heads] is not None:
        header = (start, float(tops[heads]))
    out = [_Break(start, start, FORBID if keep_prev else 0)]
    for r in range(1, rows):
        top = tops[r]
        if top is None or any(table.cellAt(r, c).row() < r for c in range(cols) if table.cellAt(r, c).isValid()):
            continue  # a cell of an earlier row spans into this one: no break here
        if r <= heads:
            penalty = FORBID  # the header rows alone at the bottom of a page
        elif r == heads + 1 or r == rows - 1:
            penalty = SOFT  # one row alone at the bottom or at the top of a page (a sign-off's last role)
        else:
            penalty = 0
        out.append(_Break(top - rule, top, penalty, header, rule if header else 0.0))
    return out


def _breaks(doc) -> list[_Break]:
    """Every place a page may end, top to bottom, with its penalty."""
    layout = doc.documentLayout()
    out: list[_Break] = []
    keep_prev = False  # the previous item must stay with the next one
    seen_tables: set[int] = set()
    block = doc.begin()
    while block.isValid():
        frame = _top_frame(doc, block)
        if frame is not None:
            key = frame.firstPosition()
            if key not in seen_tables:
                seen_tables.add(key)
                from PySide6 import QtGui

                if isinstance(frame, QtGui.QTextTable):
                    out.extend(_table_breaks(doc, frame, keep_prev))
                else:
                    r = layout.frameBoundingRect(frame)
                    out.append(_Break(r.top(), r.top(), FORBID if keep_prev else 0))
                keep_prev = False
            block = block.next()
            continue
        tl = block.layout()
        n = tl.lineCount() if tl is not None else 0
        if n == 0 or (block.length() <= 1 and not block.textList()):
            block = block.next()  # an empty paragraph: no break of its own
            continue
        origin = layout.blockBoundingRect(block).top() - tl.boundingRect().top()
        atomic = "\ufffc" in block.text()  # an image with its caption
        for i in range(n):
            if i and atomic:
                break
            y = origin + tl.lineAt(i).y()
            if i == 0:
                penalty = FORBID if keep_prev else 0
            elif i == 1 or i == n - 1:
                penalty = SOFT  # one line alone at the bottom or the top of a page
            else:
                penalty = 0
            out.append(_Break(y, y, penalty, line_of=block.blockNumber() if i else None))
        keep_prev = _is_keep_with_next(block)
        block = block.next()
    return out


def _line_tops(doc) -> list[float]:
    """The top of every text line of the document, in table cells too, in order."""
    layout = doc.documentLayout()
    tops: list[float] = []
    block = doc.begin()
    while block.isValid():
        tl = block.layout()
        if tl is not None and tl.lineCount():
            origin = layout.blockBoundingRect(block).top() - tl.boundingRect().top()
            tops.extend(origin + tl.lineAt(i).y() for i in range(tl.lineCount()))
        block = block.next()
    return sorted(tops)


def _paginate(doc, height: float) -> list[_Page]:
    """Cut the laid-out document (one tall page) into pages of ``height``."""
    total = float(doc.size().height())
    breaks = sorted(_breaks(doc), key=lambda b: b.y)
    pages: list[_Page] = []
    lines: list[float] | None = None  # every line's top, cells' too: the last resort
    top, header, skip, line_of = 0.0, None, 0.0, None
    while True:
        head_h = (header[1] - header[0]) if header else 0.0
        avail = height - head_h
        start = top + skip
        if total - start <= avail + 0.5:
            pages.append(_Page(start, total, header, line_of))
            return pages
        fits = [b for b in breaks if b.y > start + 1 and b.end - start <= avail]
        choice = None
        for level in (0, SOFT, FORBID):
            ok = [b for b in fits if b.penalty <= level]
            if ok and (level == FORBID or ok[-1].end - start >= 0.35 * avail):
                choice = ok[-1]
                break
        if choice is None:  # one item taller than a page (a huge table row): cut it between two lines
            if lines is None:
                lines = _line_tops(doc)
            inside = [y for y in lines if start + 0.3 * avail < y <= start + avail]
            cut = inside[-1] if inside else start + avail
            pages.append(_Page(start, cut, header, line_of))
            top, header, skip, line_of = cut, None, 0.0, None
            continue
        pages.append(_Page(start, choice.end, header, line_of))
        top, header, skip, line_of = choice.y, choice.header, choice.skip, choice.line_of
        if len(pages) > 2000:  # a guard against a layout that never advances
            raise RuntimeError("the report does not paginate")


# ---------------------------------------------------------------------------------------------
# the PDF


def default_paper() -> str:
    """Letter where the system's locale measures in US units, A4 elsewhere."""
    from PySide6 import QtCore

    us = QtCore.QLocale.system().measurementSystem() == QtCore.QLocale.MeasurementSystem.ImperialUSSystem
    return "Letter" if us else "A4"


def render_pdf_bytes(model: ReportModel, *, paper: str | None = None) -> bytes:
    """The report as a PDF: ``paper`` "A4" or "Letter" (default: by the system's locale)."""
    from dpstudio.report.pdf.charts import ensure_app, on_gui_thread

    ensure_app()
    if paper is not None and paper not in PAPERS:
        raise ValueError(f"paper must be one of {PAPERS}, got {paper!r}")
    return on_gui_thread(lambda: _render(model, paper or default_paper()))


def pdf_metadata(model: ReportModel) -> dict[str, str]:
    """Title, Author (the operator, when the model names one), Subject and Keywords."""
    header = dict(_pairs(model.header))
    release_id = header.get("Release id", "")
    dataset = header.get("Dataset", "")
    rtype = header.get("Release type", "")
    subject = "Differential privacy release report"
    if rtype:
        subject += f": {rtype} release"
    if dataset:
        subject += f" of {dataset}"
    subject += f" ({model.variant} version)"
    if release_id:
        subject += f", release {release_id}"
    keywords = ["differential privacy", "release report", f"{model.variant} version"]
    keywords += [k for k in (rtype, dataset, release_id) if k]
    operator = getattr(model, "operator", None)
    return {
        "Title": f"{model.title} ({model.variant} version)",
        "Author": str(operator).strip() if operator and str(operator).strip() else "",
        "Subject": subject,
        "Keywords": ", ".join(keywords),
        "Creator": "dpstudio",
    }


def _render(model: ReportModel, paper: str) -> bytes:
    from PySide6 import QtCore, QtGui

    meta = pdf_metadata(model)
    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    writer = QtGui.QPdfWriter(buf)
    writer.setResolution(RES)
    size_id = QtGui.QPageSize.PageSizeId.Letter if paper == "Letter" else QtGui.QPageSize.PageSizeId.A4
    writer.setPageSize(QtGui.QPageSize(size_id))
    left, top, right, bottom = MARGINS_MM
    writer.setPageMargins(QtCore.QMarginsF(left, top, right, bottom), QtGui.QPageLayout.Unit.Millimeter)
    writer.setTitle(meta["Title"])
    writer.setCreator(meta["Creator"])
    if meta["Author"]:
        writer.setAuthor(meta["Author"])

    page_w, page_h = writer.width(), writer.height()
    body_h = page_h - FOOTER_PX - FOOTER_GAP_PX
    doc = QtGui.QTextDocument()
    doc.documentLayout().setPaintDevice(writer)
    doc.setDefaultStyleSheet(_STYLE)
    font = QtGui.QFont("DejaVu Sans")
    font.setPointSizeF(9.5)
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    option = QtGui.QTextOption()
    option.setWrapMode(QtGui.QTextOption.WrapMode.WordWrap)  # never inside a word
    doc.setDefaultTextOption(option)
    for name, png in model.images.items():
        img = QtGui.QImage()
        img.loadFromData(png, "PNG")
        doc.addResource(QtGui.QTextDocument.ResourceType.ImageResource, QtCore.QUrl(name), img)
    mono = QtGui.QFont("DejaVu Sans Mono")
    mono.setPointSizeF(PRE_POINT_SIZE)
    char_w = QtGui.QFontMetricsF(mono, writer).horizontalAdvance("M" * 100) / 100
    columns = int((page_w - 4) / char_w) if char_w > 0 else 118
    doc.setHtml(qt_html(model, int(page_w), columns))
    doc.setTextWidth(page_w)  # one tall page: _paginate cuts it
    pages = _paginate(doc, body_h)

    release_id = dict(_pairs(model.header)).get("Release id", "")
    painter = QtGui.QPainter(writer)
    try:
        for i, pg in enumerate(pages):
            if i:
                writer.newPage()
            y = 0.0
            if pg.header:
                h0, h1 = pg.header
                painter.save()
                painter.translate(0, -h0)
                doc.drawContents(painter, QtCore.QRectF(-4, h0 + _HAIR, page_w + 8, h1 - h0 - 2 * _HAIR))
                painter.restore()
                y = h1 - h0
            painter.save()
            painter.translate(0, y - pg.top)
            body = QtCore.QRectF(-4, pg.top + _HAIR, page_w + 8, max(pg.bottom - pg.top - 2 * _HAIR, 0))
            if pg.line_of is not None:
                body = _draw_rest_of_block(painter, doc, pg.line_of, body)
            # a hair less than the page's slice: the lines that end exactly at its top or start exactly
            # at its bottom (on the pages before and after) are not drawn, not even clipped away
            if body.height() > 0:
                doc.drawContents(painter, body)
            painter.restore()
            _footer(painter, model, release_id, i, len(pages), page_w, page_h)
    finally:
        painter.end()
    buf.close()
    data = bytes(buf.data().data())  # QByteArray.data(): the bytes (its buffer protocol is not in the stubs)
    return add_info(data, {k: v for k, v in meta.items() if k in ("Subject", "Keywords")})


def _draw_rest_of_block(painter, doc, number: int, clip):
    """Draw the lines of a paragraph split by the page's top that fall on this page, one by one
    (Qt would also draw, clipped away but present in the file, the line just above the page);
    returns the rest of the page's rectangle, below the paragraph."""
    from PySide6 import QtCore, QtGui

    block = doc.findBlockByNumber(number)
    tl = block.layout()
    pos = tl.position()
    painter.save()
    painter.setClipRect(clip)
    painter.setPen(QtGui.QColor(TEXT))
    bottom = clip.top()
    for i in range(tl.lineCount()):
        line = tl.lineAt(i)
        top = pos.y() + line.y()
        if top + _HAIR >= clip.top() and top < clip.bottom():
            line.draw(painter, pos)
            bottom = max(bottom, top + line.height())
    painter.restore()
    end = max(bottom, doc.documentLayout().blockBoundingRect(block).bottom()) + _HAIR
    return QtCore.QRectF(clip.left(), end, clip.width(), max(clip.bottom() - end, 0))


def _footer(painter, model, release_id, i, n, page_w, page_h) -> None:
    from PySide6 import QtCore, QtGui

    painter.save()
    ffont = QtGui.QFont("DejaVu Sans")
    ffont.setPointSizeF(7.5)
    painter.setFont(ffont)
    painter.setPen(QtGui.QColor("#555"))
    top = page_h - FOOTER_PX
    painter.drawLine(QtCore.QPointF(0, top + 4), QtCore.QPointF(page_w, top + 4))
    text = f"dpstudio release report \u2014 {model.variant} version"
    if release_id:
        text += f" \u2014 release {release_id}"
    painter.drawText(
        QtCore.QRectF(0, top + 6, page_w * 0.8, FOOTER_PX - 6),
        int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter),
        text,
    )
    painter.drawText(
        QtCore.QRectF(page_w * 0.8, top + 6, page_w * 0.2, FOOTER_PX - 6),
        int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter),
        f"page {i + 1} of {n}",
    )
    painter.restore()


# ---------------------------------------------------------------------------------------------
# document information (Qt writes Title, Author, Creator, Producer and dates only)


def _pdf_text(s: str) -> bytes:
    """A PDF text string: UTF-16BE with its byte-order mark, as a hex string."""
    return b"<FEFF" + str(s).encode("utf-16-be").hex().upper().encode("ascii") + b">"


def add_info(data: bytes, extra: dict[str, str]) -> bytes:
    """``data`` with ``extra`` entries (e.g. Subject, Keywords) added to the PDF's document
    information dictionary, as an incremental update (the original bytes are kept as they are).
    Returns ``data`` unchanged if its structure is not the simple one Qt writes."""
    extra = {k: v for k, v in extra.items() if v}
    if not extra:
        return data
    try:
        sx = data.rindex(b"startxref")
        prev = int(data[sx + 9 :].split()[0])
        tpos = data.rindex(b"trailer", 0, sx)
        trailer = data[tpos:sx]
        m_info = re.search(rb"/Info\s+(\d+)\s+(\d+)\s+R", trailer)
        m_root = re.search(rb"/Root\s+(\d+)\s+(\d+)\s+R", trailer)
        m_size = re.search(rb"/Size\s+(\d+)", trailer)
        m_id = re.search(rb"/ID\s*\[[^\]]*\]", trailer)
        if not (m_info and m_root and m_size):
            return data
        num, gen = int(m_info.group(1)), int(m_info.group(2))
        m_obj = re.search(rb"(?:^|[\r\n])%d\s+%d\s+obj\s*<<(.*?)>>\s*endobj" % (num, gen), data, re.S)
        if m_obj is None or b"<<" in m_obj.group(1):  # not a flat dictionary
            return data
    except (ValueError, IndexError):
        return data
    body = m_obj.group(1)
    for key in extra:
        body = re.sub(rb"/%s\s*(\([^)]*\)|<[^>]*>)" % key.encode("ascii"), b"", body)
    body += b"".join(b"\n/" + k.encode("ascii") + b" " + _pdf_text(v) for k, v in extra.items())
    sep = b"" if data.endswith(b"\n") else b"\n"
    offset = len(data) + len(sep)
    obj = b"%d %d obj\n<<%s\n>>\nendobj\n" % (num, gen, body)
    xref_at = offset + len(obj)
    xref = b"xref\n%d 1\n%010d %05d n \n" % (num, offset, gen)
    ident = m_id.group(0) + b"\n" if m_id else b""
    trail = b"trailer\n<<\n/Size %s\n/Root %s %s R\n/Info %d %d R\n%s/Prev %d\n>>\nstartxref\n%d\n%%%%EOF\n" % (
        m_size.group(1),
        m_root.group(1),
        m_root.group(2),
        num,
        gen,
        ident,
        prev,
        xref_at,
    )
    return data + sep + obj + xref + trail
