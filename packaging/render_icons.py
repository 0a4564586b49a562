"""Render the app icon SVG to PNGs (and a Windows .ico) with Qt's QSvgRenderer.

    python packaging/render_icons.py OUT_DIR [SVG]

Writes OUT_DIR/dpstudio-<N>.png for N in 16..512 and OUT_DIR/dpstudio.ico. The SVG is
resources/icons/dpstudio.svg when the GUI ships one, else packaging/icons/dpstudio.svg.
Needs no display (offscreen platform).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
HERE = Path(__file__).resolve().parent


def default_svg() -> Path:
    gui_icon = HERE.parent / "resources" / "icons" / "dpstudio.svg"
    return gui_icon if gui_icon.is_file() else HERE / "icons" / "dpstudio.svg"


def render(svg: Path, out_dir: Path) -> list[Path]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QImageWriter, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 (keeps Qt alive)
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"render_icons: cannot parse {svg}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for n in SIZES:
        img = QImage(n, n, QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(Qt.GlobalColor.transparent)
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(p)
        p.end()
        path = out_dir / f"dpstudio-{n}.png"
        if not img.save(str(path), "PNG"):
            raise SystemExit(f"render_icons: cannot write {path}")
        written.append(path)
    # Windows icon (Qt's qico plugin writes a single-image .ico; 256 px is what Explorer wants).
    if b"ico" in [bytes(f) for f in QImageWriter.supportedImageFormats()]:
        ico = out_dir / "dpstudio.ico"
        QImage(str(out_dir / "dpstudio-256.png")).save(str(ico), "ICO")
        written.append(ico)
    return written


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    svg = Path(argv[1]) if len(argv) > 1 else default_svg()
    for path in render(svg, Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
