"""Translation helpers: every user-visible string goes through Qt's translator."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLocale, QTranslator

CONTEXT = "dpstudio"


def tr(text: str, context: str = CONTEXT) -> str:
    """``QCoreApplication.translate`` in the shared context (for module-level texts)."""
    return QCoreApplication.translate(context, text)


def install_translator(app) -> QTranslator | None:
    """Load ``resources/translations/dpstudio_<locale>.qm`` when one exists."""
    try:
        from dpstudio.resources import resource_path

        folder = resource_path("translations")
    except FileNotFoundError:
        return None
    translator = QTranslator(app)
    if translator.load(QLocale(), "dpstudio", "_", str(folder)):
        app.installTranslator(translator)
        return translator
    return None
