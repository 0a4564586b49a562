"""The ledger's one "spent" adds releases whose ε protect different things (a record release
protects every perturbed column, a label release only the label): ``ledger show``, the budget
page and the report list the spend by kind of guarantee when a dataset has more than one."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main


@pytest.fixture
def two_kinds(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "l.sqlite"))
    rng = np.random.default_rng(0)
    pd.DataFrame({"age": rng.integers(18, 80, 200), "sex": rng.choice(["f", "m"], 200)}).to_csv("in.csv", index=False)
    common = ["--categories", "sex=f,m", "--confirm-inferred"]
    rec = ["--role", "age=sensitive", "--role", "sex=sensitive", "--bounds", "age=0:100", "--epsilon", "0.7"]
    lab = ["--release", "label", "--role", "age=public", "--role", "sex=label", "--epsilon", "1.5"]
    assert main(["recipe", "init", "in.csv", "-o", "rec.json", *rec, *common]) == 0
    assert main(["recipe", "init", "in.csv", "-o", "lab.json", *lab, *common]) == 0
    assert main(["release", "rec.json", "--output", "a.csv"]) == 0
    capsys.readouterr()
    return tmp_path


def _show(capsys) -> dict:
    capsys.readouterr()
    assert main(["ledger", "show", "in.csv"]) == 0
    return json.loads(capsys.readouterr().out)


def test_one_kind_has_no_breakdown(two_kinds, capsys):
    shown = _show(capsys)
    assert shown["spent"]["epsilon"] == pytest.approx(0.7) and "spent_by_guarantee" not in shown


def test_mixed_kinds_are_shown_apart_and_add_up(two_kinds, capsys):
    assert main(["release", "lab.json", "--output", "b.csv", "--report", "b.html"]) == 0
    shown = _show(capsys)
    kinds = shown["spent_by_guarantee"]
    assert kinds["record releases (the perturbed columns)"] == {
        "epsilon": pytest.approx(0.7),
        "delta": 0.0,
        "releases": 1,
    }
    assert kinds["label DP (label columns only)"] == {"epsilon": pytest.approx(1.5), "delta": 0.0, "releases": 1}
    assert sum(v["epsilon"] for v in kinds.values()) == pytest.approx(shown["spent"]["epsilon"])
    assert sum(v["releases"] for v in kinds.values()) == shown["releases"]
    text = (two_kinds / "b.html").read_text()
    assert "protect different things: record releases (the perturbed columns): ε = 0.7" in text
    assert "label DP (label columns only): ε = 1.5" in text
