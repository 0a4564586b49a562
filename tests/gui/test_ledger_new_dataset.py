"""The export page's "new dataset" choice reaches the ledger and the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.gui.conftest import load


def test_new_dataset_checkbox_is_passed_and_recorded(qtbot, window, tmp_path):
    from dpstudio.ledger import Ledger

    d = tmp_path / "data"
    d.mkdir()
    frame = pd.DataFrame({"age": list(range(20, 80)) * 5, "sex": ["f", "m"] * 150})
    frame.to_csv(d / "a.csv", index=False)
    edited = frame.sample(frac=1, random_state=2).reset_index(drop=True)
    edited.loc[0, "age"] = 99
    edited.to_csv(d / "b_other_name.csv", index=False)
    led = Ledger()
    led.set_cap(str(d / "a.csv"), 1.0)  # the known dataset, sketched from its file
    load(qtbot, window, d / "b_other_name.csv")
    win, page = window, window.export_page
    from dpstudio.recipe.model import Domain

    win.session.update(
        lambda r: r.with_column("age", role="sensitive", domain=Domain("numeric", low=0, high=120)).with_column(
            "sex", role="public"
        )
    )
    win.go_to(5)
    page.confirm_release = lambda text: "new dataset" in text
    win.session.set_targets(output_path=str(d / "out.csv"), report_path=str(d / "rep.html"))
    page.new_dataset.setChecked(True)
    assert page.start_release() is not None, win.session.problems()
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)
    assert page.last_error is None, page.last_error
    assert page.result.ledger_identity["declared_new"] and page.result.ledger_identity["overrode_match"]
    assert "the user declared this a new dataset" in Path(d / "rep.html").read_text(encoding="utf-8")
