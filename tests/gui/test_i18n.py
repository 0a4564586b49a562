"""Translations: the .qm compiled from resources/translations/dpstudio_de.ts is loaded when the
locale is German (only a handful of strings are translated: the pipeline is what is tested)."""

from __future__ import annotations

import pytest
from conftest import REPO
from PySide6.QtCore import QCoreApplication, QLocale


@pytest.fixture
def german():
    old = QLocale()
    QLocale.setDefault(QLocale(QLocale.Language.German, QLocale.Country.Germany))
    installed = []
    yield installed
    for t in installed:
        QCoreApplication.removeTranslator(t)
    QLocale.setDefault(old)


def test_german_locale_loads_the_translator(qtbot, german):
    from dpstudio.gui.i18n import install_translator

    assert (REPO / "resources" / "translations" / "dpstudio_de.qm").is_file()
    t = install_translator(QCoreApplication.instance())
    assert t is not None
    german.append(t)
    assert QCoreApplication.translate("MainWindow", "Next ▶") == "Weiter ▶"
    from dpstudio.gui.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    assert win.next_button.text() == "Weiter ▶"
    assert win.data_page.title() == "Daten laden"
    assert win.menuBar().actions()[0].text() == "&Datei"
    # untranslated strings fall back to English
    assert win.back_action.text() == "Previous step"


def test_other_locale_loads_no_translator(qtbot):
    from dpstudio.gui.i18n import install_translator

    old = QLocale()
    QLocale.setDefault(QLocale(QLocale.Language.Japanese, QLocale.Country.Japan))
    try:
        assert install_translator(QCoreApplication.instance()) is None
    finally:
        QLocale.setDefault(old)
    assert QCoreApplication.translate("MainWindow", "Next ▶") == "Next ▶"
