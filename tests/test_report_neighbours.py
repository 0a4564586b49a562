"""The report's "Neighbouring datasets" and its plain reading of ε say what the guarantee
protects: a label release protects one person's label, not their record (its other columns are
published as they are)."""

from __future__ import annotations

from html import unescape

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main


@pytest.fixture
def table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "l.sqlite"))
    rng = np.random.default_rng(0)
    n = 200
    pd.DataFrame({"age": rng.integers(18, 80, n), "inc": rng.integers(0, 9, n), "y": rng.choice(["a", "b"], n)}).to_csv(
        "in.csv", index=False
    )
    return tmp_path


@pytest.mark.parametrize(
    ("release", "roles", "neighbours", "plain"),
    [
        (
            "record",
            ["inc=sensitive", "age=sensitive", "y=sensitive"],
            "differ in one person's record",
            "one person than",
        ),
        ("label", ["inc=public", "age=public", "y=label"], "differ in one person's label", "about one person's label"),
        (
            "semi-sensitive",
            ["inc=sensitive", "age=public", "y=label"],
            "differ in one person's values of the perturbed columns",
            "one person's values in the perturbed columns",
        ),
    ],
)
def test_the_neighbours_are_those_of_the_guarantee(table, capsys, release, roles, neighbours, plain):
    args = ["--release", release, "--bounds", "age=0:100", "--bounds", "inc=0:10", "--categories", "y=a,b"]
    for r in roles:
        args += ["--role", r]
    assert main(["recipe", "init", "in.csv", "-o", "r.json", *args, "--confirm-inferred"]) == 0
    assert main(["release", "r.json", "--output", "o.csv", "--report", "o.html"]) == 0
    html = unescape((table / "o.html").read_text())
    assert neighbours in html and plain in html
    if release != "record":
        assert "differ in one person's record" not in html
        assert "released as they are" in html
