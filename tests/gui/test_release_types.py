"""Embedding pools in a record release; model and density releases end to end."""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pytest
from conftest import load


def _embedding_table(path, n=120):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(18, 90, n)})
    e = rng.normal(size=(n, 16))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    for j in range(16):
        df[f"emb_{j}"] = e[:, j]
    df.to_csv(path, index=False)
    return df


def _numeric_table(path, n=300):
    rng = np.random.default_rng(1)
    x1 = rng.uniform(0, 1, n)
    x2 = rng.uniform(0, 10, n)
    y = np.where(x1 + 0.1 * x2 + rng.normal(0, 0.3, n) > 1.0, "yes", "no")
    pd.DataFrame({"x1": x1.round(4), "x2": x2.round(3), "y": y}).to_csv(path, index=False)


def _public_domains(session, bounds, categories=None):
    from dpstudio.gui.wizard.edits import set_domain
    from dpstudio.recipe.model import Domain

    for name, (lo, hi) in bounds.items():
        session.update(lambda r, n=name, a=lo, b=hi: set_domain(r, n, Domain(kind="numeric", low=a, high=b)))
    for name, cats in (categories or {}).items():
        session.update(lambda r, n=name, c=cats: set_domain(r, n, Domain(kind="categorical", categories=c)))


def test_embedding_pool_file_and_dataset_pool(qtbot, window, tmp_path):
    from dpstudio.recipe.validate import ACK_DATASET_POOL

    data = tmp_path / "emb.csv"
    df = _embedding_table(data)
    load(qtbot, window, data)
    s = window.session
    assert {c.role for c in s.recipe.columns if c.name.startswith("emb_")} == {"embedding"}
    s.update_column("age", role="public")
    window.go_to(2)
    page = window.release_page
    assert page.pool_box.isVisible() and list(page.pool_rows) == ["emb"]
    assert not page.isComplete()  # no pool chosen yet
    assert "no pool" in page.pool_rows["emb"][1].text()

    # a pool file lacking the vector columns is refused with a dialog
    bad = tmp_path / "bad_pool.csv"
    pd.DataFrame({"a": [1.0], "b": [2.0]}).to_csv(bad, index=False)
    page.choose_pool_file = lambda key: str(bad)
    assert not page.choose_pool("emb")
    assert page._pool_error.isVisible()
    page._pool_error.close()

    # a good public pool: metric selection with {"pool": path} on every column of the group
    pool = tmp_path / "pool.csv"
    rng = np.random.default_rng(5)
    p = rng.normal(size=(50, 16))
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    pd.DataFrame(p, columns=[f"emb_{j}" for j in range(16)]).to_csv(pool, index=False)
    page.choose_pool_file = lambda key: str(pool)
    assert page.choose_pool("emb")
    cols = [c for c in s.recipe.columns if c.name.startswith("emb_")]
    assert all(c.mechanism.name == "metric" and c.mechanism.params.get("pool") == str(pool) for c in cols)
    assert ACK_DATASET_POOL not in s.recipe.acknowledgements
    assert page.isComplete(), s.problems()
    assert "pool.csv" in page.pool_rows["emb"][1].text()

    # the dataset's own vectors: refused without the confirmation, acknowledged with it
    page.confirm_dataset_pool = lambda key: False
    assert not page.use_dataset_pool("emb")
    assert cols[0].mechanism.params.get("pool") == str(pool)
    asked = []
    page.confirm_dataset_pool = lambda key: asked.append(key) or True
    assert page.use_dataset_pool("emb") and asked == ["emb"]
    assert ACK_DATASET_POOL in s.recipe.acknowledgements
    assert all(c.mechanism.params.get("pool") == "dataset" for c in s.recipe.columns if c.role == "embedding")
    assert page.isComplete(), s.problems()
    assert "real vectors" in page.pool_rows["emb"][1].text()
    # back to the file: the acknowledgement goes away again
    page.choose_pool("emb")
    assert ACK_DATASET_POOL not in s.recipe.acknowledgements
    s.undo()
    assert ACK_DATASET_POOL in s.recipe.acknowledgements
    # the release really runs with the group released from the pool
    from dpstudio.engine.progress import CancelToken
    from dpstudio.gui.wizard.export_page import run_release

    out = tmp_path / "emb_dp.csv"
    res = run_release(s.recipe, str(out), "", "internal", progress=lambda *a: None, cancel=CancelToken())
    got = pd.read_csv(res.output_path)
    assert got.shape[0] == len(df) and "emb_15" in got.columns


def test_dataset_pool_confirmation_dialog_explains(qtbot, window, tmp_path):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    data = tmp_path / "emb.csv"
    _embedding_table(data, n=40)
    load(qtbot, window, data)
    window.session.update_column("age", role="public")
    window.go_to(2)
    seen = {}

    def answer():
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox)
        seen["text"] = box.text()
        box.button(QMessageBox.StandardButton.Cancel).click()

    QTimer.singleShot(100, answer)
    assert not window.release_page.use_dataset_pool("emb")
    assert "other people's real vectors" in seen["text"]


@pytest.mark.parametrize("rtype", ["model", "density"])
def test_model_and_density_release_pages_and_json_export(qtbot, window, tmp_path, rtype):
    data = tmp_path / "num.csv"
    _numeric_table(data)
    load(qtbot, window, data)
    s = window.session
    s.update_column("x1", role="sensitive")
    s.update_column("x2", role="sensitive" if rtype == "density" else "public")
    s.update_column("y", role="label" if rtype == "model" else "ignore", type="categorical")
    _public_domains(s, {"x1": (0, 1), "x2": (0, 10)}, {"y": ("no", "yes")} if rtype == "model" else None)
    window.go_to(2)
    page = window.release_page
    button = page.type_buttons[rtype]
    assert button.isEnabled() and "not available" not in button.text()
    button.click()
    assert s.recipe.release.type == rtype
    assert s.recipe.budget.delta > 0  # these releases need delta > 0; it was set for the user
    assert page.options_box.isVisible()
    keys = ("norm_bound", "lambda") if rtype == "model" else ("bandwidth", "grid_size", "sample_rows")
    for k in keys:
        w = page.opt[k]
        assert w.isVisibleTo(page) and w.isEnabled() and len(w.toolTip()) > 40
    hidden = set(page.opt) - set(keys)
    assert not any(page.opt[k].isVisibleTo(page) for k in hidden)
    if rtype == "model":
        # the mechanism the compiled plan picks for the loaded table, and why (issue 22)
        assert page.model_choice.isVisibleTo(page)
        assert "objective perturbation" in page.model_choice.text() or "Gibbs" in page.model_choice.text()
        assert "rows \u00d7 \u03b5" in page.model_choice.text()
        page.opt["norm_bound"].setValue(2.0)
        assert s.recipe.release.options.get("norm_bound") == 2.0
        page.opt["lambda"].setValue(page.opt["lambda"].minimum())  # automatic: option removed
        assert "lambda" not in s.recipe.release.options
    else:
        page.opt["grid_size"].setValue(32)
        assert s.recipe.release.options.get("grid_size") == 32
    assert page.isComplete(), s.problems()
    # budget page: delta 0 is a problem for these releases, the hint says so
    window.go_to(3)
    bp = window.budget_page
    plan, _ = s.plan()
    if rtype == "model" and plan.total.delta == 0:
        # the table's row count chose pure ε-DP objective perturbation: the hint says what is
        # charged (the plan's δ), not "needs δ > 0" beside a total of δ = 0
        assert "δ = 0 is charged" in bp.delta_hint.text() and "needs" not in bp.delta_hint.text()
    else:
        assert "needs δ > 0" in bp.delta_hint.text()
    bp.delta.setText("0")
    bp._delta_edited()
    assert not bp.isComplete() and any("delta" in p for p in bp.problems())
    bp.delta.setText("1e-6")
    bp._delta_edited()
    assert bp.isComplete(), s.problems()
    # review: the model's protection is described by the mechanism the plan settled for this table
    window.go_to(4)
    if rtype == "model":
        plan, _ = s.plan()
        review = window.review_page._plain_table(plan)
        unit = next(u for u in plan.units if u.kind == "model")
        assert html.escape(unit.facts["mechanism_choice"]) in review
        if "objective" in unit.mechanism_name:
            assert "objective perturbation" in review and "drawn at random" not in review
        else:
            assert "Gibbs posterior" in review
    # export: the output is a .json artifact
    assert window.go_to(5)
    ep = window.export_page
    assert s.output_path.endswith(".json") and not ep.format.isEnabled()
    ep.confirm_release = lambda text: True
    s.set_targets(report_path="")
    assert ep.start_release() is not None
    qtbot.waitUntil(lambda: ep.worker is None, timeout=120000)
    assert ep.result is not None, ep.last_error
    doc = json.loads(open(s.output_path, encoding="utf-8").read())
    assert isinstance(doc, dict) and doc
    assert "JSON" in ep.result_label.text()
    # the done page says what this release spent, δ included, and its id in the ledger
    done = ep.result_label.text()
    spent = ep.result.recorded_total
    assert f"This release spent ε {spent.epsilon:.3g}" in done
    assert ("δ" in done.split("This release spent")[1].split("<br>")[0]) == (spent.delta > 0)
    assert f"(release {ep.result.ledger_entry} in the ledger)" in done


def test_switching_to_synthetic_data_drops_the_model_options(qtbot, window, tmp_path):
    """A model option left in the recipe would be refused by the synthesizer (it refuses options it
    does not know): choosing another release type on the page removes this page's options of the
    types not chosen."""
    data = tmp_path / "num.csv"
    _numeric_table(data)
    load(qtbot, window, data)
    s = window.session
    s.update_column("x1", role="sensitive")
    s.update_column("x2", role="public")
    s.update_column("y", role="label", type="categorical")
    _public_domains(s, {"x1": (0, 1), "x2": (0, 10)}, {"y": ("no", "yes")})
    window.go_to(2)
    page = window.release_page
    page.type_buttons["model"].click()
    page.opt["norm_bound"].setValue(2.0)
    assert s.recipe.release.options.get("norm_bound") == 2.0
    page.type_buttons["synthetic"].click()
    assert s.recipe.release.type == "synthetic" and "norm_bound" not in s.recipe.release.options
    assert not [p for p in s.problems() if "not an option" in p]


def _synthetic_release_page(qtbot, window, tmp_path):
    """The numeric test table loaded, its domains typed, the release page on synthetic data."""
    data = tmp_path / "num.csv"
    _numeric_table(data)
    load(qtbot, window, data)
    s = window.session
    s.update_column("y", role="sensitive", type="categorical")
    _public_domains(s, {"x1": (0, 1), "x2": (0, 10)}, {"y": ("no", "yes")})
    window.go_to(2)
    page = window.release_page
    page.type_buttons["synthetic"].click()
    return s, page


def test_choosing_another_synthesizer_drops_the_options_it_does_not_take(qtbot, window, tmp_path):
    from dataclasses import replace

    from dpstudio.recipe.model import Params

    s, page = _synthetic_release_page(qtbot, window, tmp_path)
    # an AIM-only option, as a recipe made with the CLI may carry
    s.update(
        lambda r: replace(
            r, release=replace(r.release, options=Params.of({"method": "aim", "max_cells": 5000, "bins": 8}))
        )
    )
    page.method.setCurrentIndex(page.method.findData("mst"))
    opts = s.recipe.release.options.to_dict()
    assert opts == {"method": "mst", "bins": 8}  # bins is MST's too; max_cells is AIM's only
    assert not [p for p in s.problems() if "not an option" in p]


def test_synthesizer_options_have_fields_that_show_the_values_that_run(qtbot, window, tmp_path):
    """AIM and MST options were settable only in the recipe; the page now has fields for the main
    ones, each showing the synthesizer's own default when the recipe does not set it."""
    from dpstudio.plan.synthetic import option_defaults

    s, page = _synthetic_release_page(qtbot, window, tmp_path)
    page.method.setCurrentIndex(page.method.findData("aim"))
    assert page.options_box.isVisible() and page.options_box.title() == "AIM options"
    aim = option_defaults("aim")
    for k in ("bins", "max_values", "rounds_per_column", "max_cells"):
        w = page.opt[k]
        assert w.isVisibleTo(page) and w.value() == aim[k] and len(w.toolTip()) > 40, k
    assert not any(page.opt[k].isVisibleTo(page) for k in ("norm_bound", "lambda", "bandwidth"))
    page.opt["bins"].setValue(24)
    page.opt["rounds_per_column"].setValue(4)
    assert s.recipe.release.options.to_dict() == {"method": "aim", "bins": 24, "rounds_per_column": 4}
    page.opt["rounds_per_column"].setValue(aim["rounds_per_column"])  # the default: not written
    assert "rounds_per_column" not in s.recipe.release.options
    assert page.isComplete(), s.problems()
    # MST: its own fields; AIM's go with the switch
    page.method.setCurrentIndex(page.method.findData("mst"))
    assert page.options_box.title() == "MST options" and s.recipe.release.options.to_dict() == {
        "method": "mst",
        "bins": 24,
    }
    assert page.opt["bins"].value() == 24 and not page.opt["rounds_per_column"].isVisibleTo(page)
    # PEARL: no fields here
    page.method.setCurrentIndex(page.method.findData("pearl"))
    assert not page.options_box.isVisible()
    # another release type: the synthesizer's options go
    page.method.setCurrentIndex(page.method.findData("aim"))
    page.opt["max_cells"].setValue(50_000)
    page.type_buttons["record"].click()
    assert not {"bins", "max_cells", "method"} & set(s.recipe.release.options.to_dict())
