"""Smoke test of benchmarks/synth_tables.py's own code: a 300-row slice of the PUMS table released
with MST through the CLI (one epsilon, one seed), its JSON line, and the RESULTS.md section."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import shared_dataset

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "synth_tables.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("synth_tables", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_metrics_definitions(bench):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    pred = np.where(rng.random(200) < 0.8, y, 1 - y)
    assert bench.hard_roc(y, pred, 2) == pytest.approx(roc_auc_score(y, pred))
    # 3 classes: macro mean of the one-vs-rest AUCs of the hard labels
    y3 = rng.integers(0, 3, 300)
    p3 = np.where(rng.random(300) < 0.7, y3, (y3 + 1) % 3)
    want = np.mean([roc_auc_score(y3 == k, p3 == k) for k in range(3)])
    assert bench.hard_roc(y3, p3, 3) == pytest.approx(want)
    proba = np.eye(3)[p3] * 0.7 + 0.1
    assert bench.prob_roc(y3, proba, 3) == pytest.approx(roc_auc_score(y3, proba, multi_class="ovr", average="macro"))
    # the release's fit seconds: from 'loaded ... rows' to 'sampling ... rows'
    lines = [
        (0.1, "[  0.0%] reading x.csv"),
        (0.5, "[ 15.0%] loaded 300 rows x 3 columns"),
        (2.0, "[ 79.4%] sampling 300 rows"),
    ]
    assert bench.fit_seconds(lines) == pytest.approx(1.5)
    assert bench.fit_seconds(lines[:2]) is None


def test_recipe_options_by_mode(bench):
    schema = bench.TABLES["medical"]
    pub = bench.recipe_args(schema, "public", "mst", 1.0, 3)
    dp = bench.recipe_args(schema, "dp", "mst", 1.0, 3)
    share = bench.recipe_args(schema, "dp", "mst", 1.0, 3, dp_cost="share:0.1")
    assert "ID=identifier" in pub and "Outcome=label" in pub and "method=mst" in pub
    assert "Zip=" + ",".join(f"{i:03d}**" for i in range(1000)) in pub
    assert "Zip=dp" in dp and "Outcome=dp" in dp and not any("Zip=000**" in x for x in dp)
    assert "Diagnosis=dp:" + repr(0.1 / 6) in share  # 10 % of epsilon over the 6 categorical columns
    assert "-10000:1000000" in " ".join(bench.recipe_args(bench.TABLES["pums"], "dp", "aim", 4.0, 0))


def test_smoke_run_json_line_and_report(bench, tmp_path):
    shared_dataset("pums", "fulton_pums.csv")
    out = tmp_path / "runs.jsonl"
    args = ["--tables", "pums", "--methods", "mst", "--modes", "public", "--eps", "1", "--seeds", "0"]
    args += ["--max-rows", "300", "--out", str(out)]
    assert bench.main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["method"], r["status"]) for r in rows] == [("real", "ok"), ("mst", "ok")], rows
    run = rows[1]
    assert run["table"] == "pums" and run["mode"] == "public" and run["epsilon"] == 1.0 and run["seed"] == 0
    assert run["split"] == "test" and run["max_rows"] == 300 and run["n_train"] == 300 and run["n_eval"] == 300
    assert run["synth_rows"] == 300 and run["delta"] == 1e-5
    assert run["epsilon_spent"] == pytest.approx(1.0) and run["delta_spent"] == pytest.approx(1e-5)
    assert set(run["clf"]) == set(bench.CLASSIFIERS)
    for key in ("hard_roc", "prob_roc"):
        assert 0.0 <= run[key] <= 1.0
        assert run[key] == pytest.approx(np.mean([c[key] for c in run["clf"].values()]))
    assert 0.0 <= run["tv1"] <= run["tv2"] <= 1.0  # a 2-way table is never closer than its margins
    assert run["wall_s"] > 0 and run["fit_s"] is not None and 0 < run["fit_s"] < run["wall_s"]
    assert run["peak_rss_mb"] >= run["rss_main_mb"] > 50
    assert run["commit"] and run["date"]
    # resumable: the same command finds nothing left to do
    assert bench.main(args) == 0
    assert len(out.read_text().splitlines()) == 2

    md = bench.markdown(rows, slices=True)
    assert md.startswith(bench.SECTION + "\n")
    assert "### pums" in md and "| real data | - |" in md and "| mst | public |" in md and "ε = 1" in md
    assert f"{run['hard_roc']:.3f} / {run['prob_roc']:.3f} / {run['tv1']:.3f} / {run['tv2']:.3f}" in md
    assert "Machine: " in md and run["commit"] in md
    assert "| mst |" not in bench.markdown(rows)  # row slices stay out of RESULTS.md

    # the section is replaced in place (or appended), every other section kept byte for byte
    results = tmp_path / "RESULTS.md"
    before, after = "# Benchmark results\n\n## A\n\ntext a\n", "## B\n\n| x |\n"
    results.write_text(before + "\n" + after)
    bench.write_section(results, md)
    once = results.read_text()
    assert once.startswith(before) and once.count(bench.SECTION) == 1
    results.write_text(before + "\n" + bench.SECTION + "\n\nold numbers\n\n" + after)
    bench.write_section(results, md)
    text = results.read_text()
    assert text.startswith(before) and text.endswith(after) and "old numbers" not in text
    assert text.count(bench.SECTION) == 1 and md in text
    bench.write_section(results, md)
    assert results.read_text() == text
