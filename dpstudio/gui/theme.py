"""Light and dark palettes and the stylesheet, following the system or the user's choice."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication


def resource_file(*parts: str) -> Path | None:
    """A bundled resource file, or None when it is missing."""
    try:
        from dpstudio.resources import resource_path

        p = resource_path(*parts)
        return p if p.exists() else None
    except FileNotFoundError:
        return None


def dark_palette() -> QPalette:
    p = QPalette()
    c = {
        QPalette.ColorRole.Window: "#202124",
        QPalette.ColorRole.WindowText: "#E8EAED",
        QPalette.ColorRole.Base: "#17181A",
        QPalette.ColorRole.AlternateBase: "#26282B",
        QPalette.ColorRole.ToolTipBase: "#2D2F31",
        QPalette.ColorRole.ToolTipText: "#E8EAED",
        QPalette.ColorRole.Text: "#E8EAED",
        QPalette.ColorRole.Button: "#2D2F31",
        QPalette.ColorRole.ButtonText: "#E8EAED",
        QPalette.ColorRole.BrightText: "#FF6B6B",
        QPalette.ColorRole.Highlight: "#3A7BD5",
        QPalette.ColorRole.HighlightedText: "#FFFFFF",
        QPalette.ColorRole.Link: "#8AB4F8",
        QPalette.ColorRole.PlaceholderText: "#9AA0A6",
    }
    for role, color in c.items():
        p.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#6B6F73"))
    return p


def light_palette() -> QPalette:
    p = QPalette()
    c = {
        QPalette.ColorRole.Window: "#F4F5F7",
        QPalette.ColorRole.WindowText: "#1F2328",
        QPalette.ColorRole.Base: "#FFFFFF",
        QPalette.ColorRole.AlternateBase: "#F0F2F5",
        QPalette.ColorRole.ToolTipBase: "#FFFFE8",
        QPalette.ColorRole.ToolTipText: "#1F2328",
        QPalette.ColorRole.Text: "#1F2328",
        QPalette.ColorRole.Button: "#FAFBFC",
        QPalette.ColorRole.ButtonText: "#1F2328",
        QPalette.ColorRole.BrightText: "#C62828",
        QPalette.ColorRole.Highlight: "#0969DA",
        QPalette.ColorRole.HighlightedText: "#FFFFFF",
        QPalette.ColorRole.Link: "#0969DA",
        QPalette.ColorRole.PlaceholderText: "#8C959F",
    }
    for role, color in c.items():
        p.setColor(role, QColor(color))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#A0A7AF"))
    return p


def is_dark() -> bool:
    choice = QSettings().value("appearance/theme", "system")
    if choice in ("light", "dark"):
        return choice == "dark"
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def apply_theme() -> None:
    """Light or dark palette following the system (or the user's choice) + the stylesheet."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):  # none yet, or a QCoreApplication without widgets
        return
    dark = is_dark()
    app.setPalette(dark_palette() if dark else light_palette())
    qss = resource_file("styles", "dpstudio.qss")
    sheet = qss.read_text(encoding="utf-8") if qss else ""
    accent = "#8AB4F8" if dark else "#0969DA"
    danger = "#FF8A65" if dark else "#C62828"
    muted = "#9AA0A6" if dark else "#57606A"
    app.setStyleSheet(sheet.replace("@accent", accent).replace("@danger", danger).replace("@muted", muted))
