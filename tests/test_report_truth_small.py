"""What the report says is what ran: the risk estimate's row sample and uncertainty, the
synthesizers' figure proven for the discrete noise that ran, and no exception text (which can
quote a cell) in any warning, note, CLI output or report."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpstudio import risk as risk_mod
from dpstudio.cli import main
from dpstudio.ledger import Ledger
from dpstudio.pipeline import execute_release
from dpstudio.recipe.model import load_recipe
from dpstudio.report import build_model
from dpstudio.report.model import risk_summary
from dpstudio.risk import risk_for_recipe
from tests.test_report import make_release

CANARY = "CANARY-123"


def section_text(model, title: str) -> str:
    return "\n".join(repr(b.content) for s in model.sections if s.title == title for b in s.blocks)


def model_text(model) -> str:
    return repr(model.header) + repr(model.sections)


@pytest.fixture(scope="module")
def record_release(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("truth"))


# ---- 1. the risk summary states the row sample and each rate's uncertainty -----------------


def test_sampled_risk_summary_states_the_sample_and_intervals(record_release):
    res, frame = record_release
    res.risk = risk_for_recipe(res.recipe, frame, seed=0, max_rows=100)
    assert res.risk["sample"]["sampled"]
    text = section_text(build_model(res, "internal", frame, charts=False), "Residual risk estimates")
    assert "Estimated on a uniform sample of 100 of 300 rows" in text
    link = next(line for line in risk_summary(res.risk) if line.startswith("Linkage attack"))
    lo, hi = res.risk["linkage"]["reid_rate_ci95"]
    assert f"(95 % interval {100 * lo:.1f}\u2013{100 * hi:.1f} %)" in link
    assert "overstatement" in link  # the sample's caveat: fewer look-alikes help the attacker


def test_unsampled_risk_summary_says_all_rows(record_release):
    res, frame = record_release
    res.risk = risk_for_recipe(res.recipe, frame, seed=0)
    text = section_text(build_model(res, "internal", frame, charts=False), "Residual risk estimates")
    assert "Estimated on all 300 rows (no row sampling)" in text and "uniform sample" not in text


def _label_risk(se: float, sampled: bool) -> dict:
    acc = {"uninformed": 0.6, "naive": 0.7, "informed": 0.75}
    return {
        "sample": {
            "rows_used": 50_000 if sampled else 800,
            "rows_total": 3_000_000 if sampled else 800,
            "sampled": sampled,
        },
        "label_views": {
            "y": {
                "at_epsilon": {
                    "epsilon": 1.0,
                    "accuracy": acc,
                    "iue_adv_bound": {"share_above": 0.2, "count_above": 160, "threshold": 0.1},
                    "standard_errors": {
                        "accuracy": {k: (0.0 if k == "naive" else se) for k in acc},
                        "iue_share_above": se,
                    },
                }
            }
        },
    }


def test_label_rates_carry_their_interval_only_when_it_is_not_zero():
    lines = risk_summary(_label_risk(0.002, sampled=True))
    assert lines[0].startswith("Estimated on a uniform sample of 50,000 of 3,000,000 rows")
    # 1.96 * 0.2 % = 0.39 %: the rates with an SE carry it, the naive one (a constant) does not
    assert "60.0 % \u00b1 0.4 %" in lines[1] and "75.0 % \u00b1 0.4 %" in lines[1]
    assert "70.0 %," in lines[1] and "20.0 % \u00b1 0.4 % of records" in lines[2]
    plain = risk_summary(_label_risk(0.0, sampled=False))
    assert plain[0].startswith("Estimated on all 800 rows") and not any("\u00b1" in s for s in plain[1:])


# ---- 2. synthetic releases: the figure proven for the noise as sampled ----------------------


def _small_table(tmp_path):
    rng = np.random.default_rng(1)
    n = 400
    frame = pd.DataFrame(
        {"age": rng.integers(18, 90, n), "grp": rng.choice(["a", "b", "c"], n), "y": rng.choice(["0", "1"], n)}
    )
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("method,options", [("mst", []), ("merf", ["k=16", "steps=20", "hidden=8"])])
def test_synthetic_report_prints_the_proven_figure(tmp_path, method, options):
    data = _small_table(tmp_path)
    recipe_path = tmp_path / "r.json"
    args = [
        "recipe",
        "init",
        str(data),
        "-o",
        str(recipe_path),
        "--release",
        "synthetic",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--synth",
        method,
        "--rows",
        "200",
        "--role",
        "y=label",
        "--role",
        "age=sensitive",
        "--role",
        "grp=sensitive",
        "--bounds",
        "age=0:120",
        "--categories",
        "grp=a,b,c",
        "--categories",
        "y=0,1",
    ]
    for opt in options:
        args += ["--option", opt]
    assert main(args) == 0
    recipe = load_recipe(recipe_path)
    res = execute_release(recipe, output_path=tmp_path / "out.csv", ledger=None)
    proven = res.outcome.public_stats["synthesizer_proven"]
    assert 0 < proven["epsilon"] <= 1.0 * (1 + 1e-9) and 0 < proven["delta"] <= 1e-5 * (1 + 1e-9)
    if method == "mst":  # a zCDP conversion, proven for the discrete Gaussian as it stands
        assert "discrete Gaussian" in proven["basis"] and "gdp_epsilon_continuous" not in proven
    else:  # the continuous calibration is shaved below the proven figure
        assert proven["gdp_epsilon_continuous"] < proven["epsilon"] and proven["lattice_H"] > 0
    for variant in ("internal", "external"):
        text = section_text(build_model(res, variant, None, charts=False), "Privacy accounting")
        eps_text = f"\u03b5 = {float(proven['epsilon']):.4g}"
        assert f"proven for the noise as sampled: {eps_text}, \u03b4 = " in text


# ---- 3. no exception text (it can quote a cell) in warnings, notes, CLI output, report -----


def _raise_canary(*_a, **_k):
    raise ValueError(CANARY)


def test_failed_risk_estimate_warns_without_the_error_text(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(risk_mod, "risk_for_recipe", _raise_canary)
    res, frame = make_release(tmp_path, report=tmp_path / "r.html")
    warned = [w for w in res.warnings if w.startswith("risk estimate unavailable")]
    assert warned and "ValueError" in warned[0]
    assert not any(CANARY in w for w in res.warnings)
    assert CANARY not in (tmp_path / "r.html").read_text()
    assert CANARY not in model_text(build_model(res, "internal", frame, charts=False))
    # the CLI prints the warnings: run the same release through it
    capsys.readouterr()
    led = tmp_path / "cli-ledger.sqlite"
    Ledger(led).set_cap(str(tmp_path / "people.csv"), 10.0, 1e-5)
    code = main(
        [
            "release",
            str(tmp_path / "recipe.json"),
            "--output",
            str(tmp_path / "cli.csv"),
            "--report",
            str(tmp_path / "cli.html"),
            "--ledger",
            str(led),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "risk estimate unavailable" in out + err and CANARY not in out + err
    assert CANARY not in (tmp_path / "cli.html").read_text()


def test_risk_notes_name_the_error_type_not_its_text(record_release, monkeypatch):
    from dpstudio.plan import record as rec

    res, frame = record_release
    monkeypatch.setattr(rec, "execute", _raise_canary)  # the simulated release fails: no estimate
    out = risk_for_recipe(res.recipe, frame, seed=0)
    assert out["linkage"]["available"] is False and "ValueError" in out["linkage"]["note"]
    assert CANARY not in json.dumps(out)
    assert CANARY not in "\n".join(risk_summary(out))


def test_failed_synthesizer_note_names_the_type_only(monkeypatch):
    import dpstudio.engine.synth as synth_mod

    class Broken:
        def fit(self, *a, **k):
            raise ValueError(CANARY)

    monkeypatch.setitem(synth_mod.SYNTHESIZERS, "mst", Broken)
    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Params, Recipe, ReleaseSpec

    recipe = Recipe(
        InputSpec("x.csv"),
        ReleaseSpec("synthetic", Params.of({"method": "mst"})),
        (Column("a", "integer", "sensitive", Domain("numeric", low=0, high=20)),),
        Budget(1.0, 1e-5),
    )
    frame = pd.DataFrame({"a": np.arange(20)})
    out = risk_mod.synthetic_risk(recipe, frame)
    assert out["available"] is False and "ValueError" in out["note"] and CANARY not in out["note"]
