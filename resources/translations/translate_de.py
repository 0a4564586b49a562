"""Fill the German translations of ``dpstudio_de.ts`` (a handful of strings: enough to prove the
lupdate -> .ts -> lrelease -> .qm -> QTranslator pipeline; the rest stays 'unfinished' and shows
in English).

Regenerate:
    .venv/bin/pyside6-lupdate $(find dpstudio/gui -name '*.py') -ts resources/translations/dpstudio_de.ts
    .venv/bin/python resources/translations/translate_de.py
    .venv/bin/pyside6-lrelease resources/translations/dpstudio_de.ts -qm resources/translations/dpstudio_de.qm
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

GERMAN = {
    ("MainWindow", "dpstudio — private data release"): "dpstudio — private Datenfreigabe",
    ("MainWindow", "◀ Back"): "◀ Zurück",
    ("MainWindow", "Next ▶"): "Weiter ▶",
    ("MainWindow", "&File"): "&Datei",
    ("MainWindow", "&Edit"): "&Bearbeiten",
    ("MainWindow", "&View"): "&Ansicht",
    ("MainWindow", "&Help"): "&Hilfe",
    ("MainWindow", "&Quit"): "&Beenden",
    ("MainWindow", "Open a table to begin."): "Öffnen Sie eine Tabelle, um zu beginnen.",
    ("DataPage", "Load your data"): "Daten laden",
    ("ColumnsPage", "Classify the columns"): "Spalten einordnen",
    ("ReleasePage", "Choose the release"): "Freigabe wählen",
    ("BudgetPage", "Set the privacy budget"): "Privatsphäre-Budget festlegen",
    ("ReviewPage", "Review before release"): "Vor der Freigabe prüfen",
    ("ExportPage", "Export the release"): "Freigabe exportieren",
    ("ExportPage", "Release now"): "Jetzt freigeben",
}


def main(path: str) -> int:
    tree = ET.parse(path)
    done = 0
    for ctx in tree.getroot().iter("context"):
        name = ctx.findtext("name") or ""
        for msg in ctx.iter("message"):
            text = GERMAN.get((name, msg.findtext("source")))
            if text is not None:
                tr = msg.find("translation")
                tr.text = text
                tr.attrib.pop("type", None)  # no longer 'unfinished'
                done += 1
    tree.write(path, encoding="utf-8", xml_declaration=True)
    print(f"{done} of {len(GERMAN)} German strings filled in {path}")
    return 0 if done == len(GERMAN) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).with_name("dpstudio_de.ts"))))
