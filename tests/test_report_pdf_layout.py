"""The PDF report's layout, read back with poppler: no text line or table row cut by a page break,
nothing past the margins or over the footer, no word broken that the source did not break, the
document information (Author: the operator), A4 and Letter pages, and the chart's helpers."""

from __future__ import annotations

import html
import re
import shutil
import subprocess

import numpy as np
import pytest

from dpstudio.report.model import Block, Cell, ReportModel, Section

pytestmark = pytest.mark.gui

MM = 72 / 25.4  # PDF points per millimetre
LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"}
)
NARROW_WORDS = ["relationship", "occupation", "identifier", "randomized", "marginals", "education-num"]


def _poppler(tool: str) -> str:
    exe = shutil.which(tool)
    if exe is None:
        pytest.skip(f"{tool} (poppler-utils) is not installed: 'apt-get install poppler-utils' to check the PDF")
    return exe


def _lines(path) -> list[dict]:
    """Every page of the PDF: its size and its text lines, each a list of (x0, y0, x1, y1, word)."""
    out = subprocess.run(
        [_poppler("pdftotext"), "-bbox-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    pages = []
    for m in re.finditer(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', out, re.S):
        lines = []
        for line in re.findall(r"<line[^>]*>(.*?)</line>", m.group(3), re.S):
            words = [
                (float(a), float(b), float(c), float(d), html.unescape(t).translate(LIGATURES))
                for a, b, c, d, t in re.findall(
                    r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">(.*?)</word>', line
                )
            ]
            if words:
                lines.append(words)
        pages.append({"width": float(m.group(1)), "height": float(m.group(2)), "lines": lines})
    return pages


def _info(path) -> dict[str, str]:
    out = subprocess.run([_poppler("pdfinfo"), str(path)], capture_output=True, text=True, check=True).stdout
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)}


def _footer_top(page) -> float:
    """The top of the footer band (below it only the footer may be)."""
    from dpstudio.report.pdf import FOOTER_PX, MARGINS_MM, RES

    return page["height"] - MARGINS_MM[3] * MM - FOOTER_PX * 72 / RES


def _body_bottom(page) -> float:
    from dpstudio.report.pdf import FOOTER_GAP_PX, RES

    return _footer_top(page) - FOOTER_GAP_PX * 72 / RES


def _body_lines(page) -> list[list[tuple]]:
    top = _footer_top(page)
    return [ln for ln in page["lines"] if min(w[1] for w in ln) < top]


def big_model(operator: str | None = "Dana Steward") -> ReportModel:
    """A report long enough to break pages inside tables, paragraphs and preformatted text, with
    narrow columns of long ordinary words, long tokens (hashes, paths) and a block kind no
    renderer knows."""
    sha = "8d970044aea351b98330573d33afb13bae2f6aa654481c669e29fee1fdbcd6a5"
    path = "/work/shared/datasets/some_department/quarterly_extracts/medical_records_2024.csv"
    prose = (
        "The released values were changed on purpose: each one carries random noise calibrated so that "
        "no single person's record can change what is released by much, whatever else is known. "
    )
    sections = [Section("Summary", [Block("p", prose * 3), Block("kv", [("Input fingerprint", sha), ("File", path)])])]
    rows = []
    for i in range(60):
        rows.append(
            [
                f"row{i:02d}a",
                Cell(f"row{i:02d}b {NARROW_WORDS[i % len(NARROW_WORDS)]}", flag=i % 7 == 0),
                f"row{i:02d}c\nrow{i:02d}d\nrow{i:02d}e",
                NARROW_WORDS[(i + 1) % len(NARROW_WORDS)],
                f"ε = 0.{i % 9 + 1}, δ = 1 × 10⁻⁶",
                NARROW_WORDS[(i + 2) % len(NARROW_WORDS)] + " " + NARROW_WORDS[(i + 3) % len(NARROW_WORDS)],
            ]
        )
    table = {"head": ["Column", "Role", "Lines", "Type", "Loss", "Treatment"], "rows": rows}
    sections.append(Section("Columns", [Block("table", table), Block("note", prose)]))
    for k in range(30):  # headings at every height of a page: some would fall at a page's end
        body = [Block("p", prose * (k % 7 + 1))] + ([Block("list", [prose] * 2)] if k % 3 == 0 else [])
        sections.append(Section(f"Section number {k}", body))
    pre = "\n".join(
        f'    "key_{i:03d}": "{("value " * (i % 40)).strip()}", "path": "{path}", "sha256": "{sha}"' for i in range(90)
    )
    sections.append(Section("Recipe", [Block("pre", pre, caption="Recipe (JSON)")]))
    sections.append(Section("Odd content", [Block("mystery", {"unknown kind": "shown as text"})]))
    sections.append(Section("Sign-off", [Block("signoff", ["Data steward", "Compliance officer"])]))
    model = ReportModel(
        title="Differential privacy release report",
        variant="internal",
        banner="INTERNAL VERSION: do not publish.",
        header=[("Dataset", "medical.csv"), ("Release id", "0123456789abcdef"), ("Release type", "record")],
        sections=sections,
    )
    model.operator = operator
    return model


def _source_tokens(model: ReportModel) -> set[str]:
    from dpstudio.report.pdf import qt_html

    text = html.unescape(re.sub(r"<[^>]+>", " ", qt_html(model, 600).replace("<br>", " ")))
    text = text.replace("\u200b", " ")
    return set(text.split())


def _render(tmp_path, model, paper="A4", name="r.pdf"):
    from dpstudio.report.pdf import render_pdf_bytes

    path = tmp_path / name
    path.write_bytes(render_pdf_bytes(model, paper=paper))
    return path


@pytest.fixture(scope="module")
def big_pdf(tmp_path_factory):
    model = big_model()
    return model, _render(tmp_path_factory.mktemp("pdf"), model)


def _assert_inside(path, clean_top: bool = True):
    pages = _lines(path)
    assert len(pages) > 1
    from dpstudio.report.pdf import MARGINS_MM

    for n, page in enumerate(pages, 1):
        bottom, footer = _body_bottom(page), _footer_top(page)
        right = page["width"] - MARGINS_MM[2] * MM
        for line in page["lines"]:
            for x0, y0, x1, y1, word in line:
                # a word is above the body's bottom or in the footer band: never across either
                assert y1 <= bottom + 0.5 or y0 >= footer - 0.5, f"page {n}: {word!r} crosses the page's end"
                assert y1 <= page["height"] - MARGINS_MM[3] * MM + 0.5, f"page {n}: {word!r} below the margin"
                # (a line of the page before, clipped away but still in the file, would end up here)
                assert not clean_top or y1 > MARGINS_MM[1] * MM + 2, f"page {n}: {word!r} above the top margin"
                assert x1 <= right + 0.5, f"page {n}: {word!r} runs past the right margin"
                assert x0 >= MARGINS_MM[0] * MM - 0.5, f"page {n}: {word!r} starts in the left margin"
    return pages


@pytest.mark.parametrize("paper,size", [("A4", (595, 842)), ("Letter", (612, 792))])
def test_no_text_crosses_a_page_end_or_a_margin(tmp_path, paper, size):
    path = _render(tmp_path, big_model(), paper=paper)
    pages = _assert_inside(path)
    assert (round(pages[0]["width"]), round(pages[0]["height"])) == size
    # every page but the last is filled (no page left mostly empty by the page breaking)
    for page in pages[:-1]:
        lowest = max(w[3] for ln in _body_lines(page) for w in ln)
        assert lowest > page["height"] * 0.6


def test_table_rows_are_never_split_and_headers_repeat(big_pdf):
    _, path = big_pdf
    pages = _lines(path)
    where: dict[str, set[int]] = {}
    for n, page in enumerate(pages):
        for line in page["lines"]:
            for *_, word in line:
                m = re.fullmatch(r"row(\d\d)[a-e]", word)
                if m:
                    where.setdefault(m.group(1), set()).add(n)
    assert len(where) == 60
    split = {row: sorted(p) for row, p in where.items() if len(p) > 1}
    assert not split, f"table rows split across pages: {split}"
    table_pages = sorted(set().union(*where.values()))
    assert len(table_pages) >= 2
    for n in table_pages:  # the header row opens the table on every page it is on
        first_row_y = min(w[1] for ln in pages[n]["lines"] for w in ln if re.fullmatch(r"row\d\d[a-e]", w[4]))
        heads = [w for ln in pages[n]["lines"] for w in ln if w[4] == "Treatment" and w[1] < first_row_y]
        assert len(heads) == 1, f"page {n + 1}: the table's header is not repeated once above its rows"


def test_no_word_is_broken_that_the_source_did_not_break(big_pdf):
    model, path = big_pdf
    from dpstudio.report.pdf import _LONG

    tokens = _source_tokens(model)
    long_tokens = [t for t in tokens if len(t) > _LONG]

    def known(word: str) -> bool:
        # a piece of a long token (hash, path, JSON value) may wrap; an ordinary word never
        return word in tokens or any(word in t for t in long_tokens)

    for n, page in enumerate(_lines(path), 1):
        lines = _body_lines(page)
        continued: set[tuple] = set()  # the two halves of a word broken at its own hyphen
        words = [w for line in lines for w in line]
        for line in lines:
            for w in line:
                if not w[4].endswith("-") or known(w[4]):
                    continue
                # the rest of the word starts the next line down, at the left edge of its column
                below = [v for v in words if w[3] - 1 < v[1] < w[3] + 8 and v[0] <= w[0] + 1]
                rest = max(below, key=lambda v: v[0]) if below else None
                assert rest and known(w[4] + rest[4]), f"page {n}: {w[4]!r} hyphenated by the layout"
                continued.update((w, rest))
        for line in lines:
            for w in line:
                assert w in continued or known(w[4]), f"page {n}: {w[4]!r} is not a word of the report"
    # the narrow columns' words are whole somewhere in the PDF
    words = {w[4] for page in _lines(path) for ln in page["lines"] for w in ln}
    for w in NARROW_WORDS:
        assert w in words


def test_headings_are_kept_with_what_follows(big_pdf):
    model, path = big_pdf
    titles = {s.title for s in model.sections} | {"Recipe (JSON)"}
    for n, page in enumerate(_lines(path), 1):
        body = _body_lines(page)
        last = " ".join(w[4] for w in body[-1])
        assert last not in titles, f"page {n} ends with the heading {last!r}"


def test_unknown_block_kind_is_shown_as_text(big_pdf):
    _, path = big_pdf
    text = " ".join(w[4] for page in _lines(path) for ln in page["lines"] for w in ln)
    assert "unknown kind: shown as text" in text


def test_metadata_names_the_operator(tmp_path, big_pdf):
    _, path = big_pdf
    info = _info(path)
    assert info["Author"] == "Dana Steward"
    assert info["Title"] == "Differential privacy release report (internal version)"
    assert info["Creator"] == "dpstudio"
    assert "internal version" in info["Subject"] and "record release of medical.csv" in info["Subject"]
    assert "differential privacy" in info["Keywords"] and "0123456789abcdef" in info["Keywords"]
    small = big_model(operator=None)
    small.sections = small.sections[:1]
    info = _info(_render(tmp_path, small, name="anon.pdf"))
    assert info.get("Author", "") == ""
    assert info["Creator"] == "dpstudio"


def test_operator_with_non_ascii_name(tmp_path):
    model = big_model(operator="Zoë Ångström-Øster")
    model.sections = model.sections[:1]
    path = _render(tmp_path, model)
    assert _info(path)["Author"] == "Zoë Ångström-Øster"
    assert len(_lines(path)) == 1  # the incremental update of the document information keeps the PDF readable


def test_add_info_leaves_an_unknown_structure_alone():
    from dpstudio.report.pdf import add_info

    assert add_info(b"not a pdf", {"Subject": "x"}) == b"not a pdf"
    assert add_info(b"%PDF-1.4 anything", {}) == b"%PDF-1.4 anything"


def test_real_release_report_layout(tmp_path):
    from dpstudio.report import write_report
    from tests.test_report import make_release

    res, frame = make_release(tmp_path)
    for variant in ("internal", "external"):
        path = tmp_path / f"{variant}.pdf"
        write_report(res, path, variant=variant, frame=frame)
        pages = _assert_inside(path)
        assert f"page {len(pages)} of {len(pages)}" in " ".join(w[4] for ln in pages[-1]["lines"] for w in ln)
        assert _info(path)["Creator"] == "dpstudio"


def test_soft_breaks_only_long_tokens():
    from dpstudio.report.pdf import ZWSP, _soft

    assert ZWSP not in _soft("quasi-identifier randomized response relationship occupation_code")
    sha = "8d970044aea351b98330573d33afb13bae2f6aa654481c669e29fee1fdbcd6a5"
    soft = _soft(sha)
    assert soft.replace(ZWSP, "") == sha and all(len(p) <= 16 for p in soft.split(ZWSP))
    path = _soft("/work/shared/datasets/medical/medical.csv").split(ZWSP)
    assert path[0] == "/work/" and "".join(path) == "/work/shared/datasets/medical/medical.csv"
    # a figure is not broken at its spaces: 1 × 10⁻⁶, 0.5 %, ε = 1
    assert _soft("δ = 1 × 10⁻⁶ and 5 %") == "δ\u00a0=\u00a01\u00a0×\u00a010⁻⁶ and 5\u00a0%"
    assert _soft("a\nb<c") == "a<br>b&lt;c"


def test_wrap_pre_fits_the_width_and_keeps_the_text():
    from dpstudio.report.pdf import wrap_pre

    text = '  "path": "' + "/abc" * 60 + '",\n' + "x" * 300 + "\nshort"
    wrapped = wrap_pre(text, 80)
    assert all(len(line) <= 80 for line in wrapped.splitlines())
    assert "".join(wrapped.split()) == "".join(text.split())
    assert wrapped.splitlines()[-1] == "short"


def test_chart_merges_coinciding_curves_and_stays_inside_its_axis():
    from dpstudio.report.pdf.charts import _clip_below, _groups

    grid = np.geomspace(0.05, 20, 12)
    same = {"mechanism": "laplace", "error": list(10 / grid), "floor": list(0.3 / (grid + 1))}
    units = [dict(same, name="a"), dict(same, name="b", error=list(10.01 / grid)), dict(same, name="c")]
    units.append({"name": "d", "mechanism": "rr", "error": list(1 / (np.exp(grid) + 1)), "floor": list(grid * 0)})
    groups = _groups({"epsilon": list(grid), "units": units}, tol_decades=0.01)
    assert [g["names"] for g in groups] == [["a", "b", "c"], ["d"]]
    x, y = _clip_below(grid, np.asarray(units[3]["error"]), 1e-6)
    finite = y[np.isfinite(y)]
    assert finite.min() == pytest.approx(1e-6) and (finite >= 1e-6 * (1 - 1e-9)).all()
    assert x[np.isfinite(y)].max() < grid.max()  # the curve ends where it leaves the axis


def test_chart_renders_with_its_legend_below(tmp_path):
    from dpstudio.report.pdf.charts import LOGICAL_PLOT_HEIGHT, LOGICAL_WIDTH, error_floor_chart, qt_available

    if not qt_available():
        pytest.skip("Qt is not available")
    from PySide6 import QtGui

    grid = list(np.geomspace(0.05, 20, 10))
    units = [
        {"name": f"column_{i}", "mechanism": "laplace", "error": [1 / g for g in grid], "floor": [0.2] * 10}
        for i in range(12)
    ]
    png = error_floor_chart({"epsilon": grid, "chosen": 1.0, "units": units}, width=1360)
    assert png is not None
    img = QtGui.QImage()
    assert img.loadFromData(png, "PNG")
    assert img.width() == 1360
    scale = 1360 / LOGICAL_WIDTH
    # twelve coinciding columns: one line and one legend entry (plus the floor's), below the plot
    legend_h = img.height() - LOGICAL_PLOT_HEIGHT * scale
    assert 20 * scale < legend_h < 120 * scale


def test_a_table_row_taller_than_a_page_is_cut_between_lines(tmp_path):
    model = big_model()
    lines = "\n".join(f"estimate number {i} of a very long cell" for i in range(150))
    model.sections = [Section("All estimates", [Block("kv", [("a long value", lines), ("next", "short")])])]
    # a cell split by a page: Qt also draws the cell's line above the page, clipped away (invisible,
    # but in the file's text): only this last resort leaves it
    pages = _assert_inside(_render(tmp_path, model), clean_top=False)
    assert len(pages) >= 3
    from dpstudio.report.pdf import MARGINS_MM

    top = MARGINS_MM[1] * MM
    text = [" ".join(w[4] for w in ln) for page in pages for ln in page["lines"] if ln[0][3] > top + 2]
    for i in range(150):  # every line once on the pages, none lost or cut in half at a page's end
        assert sum(f"estimate number {i} of a very long cell" in t for t in text) == 1, i
