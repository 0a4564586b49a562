"""The report phase of a release (risk estimate + report) costs the same at any table size.

Issue 16 item 6: with ``--report`` the internal report must stay within seconds and a few
hundred MB however many rows the input has.  Not timed (no timing tests): instead every place
the report phase could do per-row work is spied on, on a table 24 times the (lowered) row cap:

* the risk estimate gets the full table wrapped so that only ``len`` and a row selection of at
  most the cap work -- anything else it did on the whole table would raise here;
* the release simulated inside it, the linkage attack and the label model see <= cap rows;
* the report renderer gets the input and the released table wrapped so that only their shape
  is readable.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpstudio.engine.leakage.label as label_mod
import dpstudio.engine.leakage.linkage as linkage_mod
import dpstudio.export as export_mod
import dpstudio.plan.record as record_mod
import dpstudio.report as report_mod
import dpstudio.risk as risk_mod
from dpstudio.cli import main
from dpstudio.pipeline import execute_release
from dpstudio.recipe.model import load_recipe

N, CAP = 120_000, 5_000


class _Touched(AssertionError):
    pass


class _ShapeOnly:
    """A table of which only the size (and column names) may be read."""

    def __init__(self, frame, what):
        self._frame, self._what = frame, what

    def __len__(self):
        return len(self._frame)

    @property
    def columns(self):
        return self._frame.columns

    @property
    def shape(self):
        return self._frame.shape

    def __getattr__(self, name):
        raise _Touched(f"the report phase read {self._what}.{name} of all {len(self._frame):,} rows")


class _SampleOnly(_ShapeOnly):
    """The full table as the risk estimate gets it: besides its size, only ``iloc`` of <= CAP rows."""

    @property
    def iloc(self):
        frame, what = self._frame, self._what

        class _Rows:
            def __getitem__(self, idx):
                k = np.asarray(idx).size if not isinstance(idx, slice) else len(range(*idx.indices(len(frame))))
                if k > CAP:
                    raise _Touched(f"the report phase selected {k:,} rows of {what} (cap {CAP:,})")
                return frame.iloc[idx]

        return _Rows()


def _table(kind):
    g = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "zip": g.choice([f"Z{z:03d}" for z in range(300)], N),
            "sex": g.choice(["f", "m"], N),
            "age": g.integers(0, 100, N),
            "income": np.round(g.uniform(0, 200_000, N), 2),
        }
    )
    if kind == "label":
        frame["smoker"] = np.where(g.random(N) < 0.3, "yes", "no")
    return frame


def _recipe(tmp_path, kind):
    data = tmp_path / "big.csv"
    _table(kind).to_csv(data, index=False)
    args = [
        "recipe",
        "init",
        str(data),
        "-o",
        str(tmp_path / "r.json"),
        "--epsilon",
        "2",
        "--role",
        "zip=public",
        "--role",
        "sex=public",
        "--categories",
        "sex=f,m",
        "--type",
        "zip=categorical",
        "--categories",
        "zip=" + ",".join(f"Z{z:03d}" for z in range(300)),
    ]
    if kind == "record":
        args += [
            "--role",
            "age=sensitive",
            "--role",
            "income=sensitive",
            "--bounds",
            "age=0:100",
            "--bounds",
            "income=0:200000",
        ]
    else:
        args += [
            "--release",
            "label",
            "--role",
            "age=public",
            "--role",
            "income=public",
            "--role",
            "smoker=label",
            "--categories",
            "smoker=yes,no",
        ]
    assert main(args) == 0
    return load_recipe(tmp_path / "r.json")


@pytest.mark.parametrize("kind", ["record", "label"])
def test_report_phase_touches_at_most_the_row_cap(tmp_path, monkeypatch, kind):
    assert risk_mod.risk_for_recipe.__kwdefaults__["max_rows"] == risk_mod.MAX_ROWS <= 100_000
    monkeypatch.setitem(risk_mod.risk_for_recipe.__kwdefaults__, "max_rows", CAP)
    phase = {"report": False}
    seen = {"risk": 0, "report": 0, "record.run": [], "linkage": [], "label.fit": []}

    real_write = export_mod.write_table

    def write_table(data, *a, **k):  # the output is written: what follows is the report phase
        out = real_write(data, *a, **k)
        phase["report"] = True
        return out

    monkeypatch.setattr(export_mod, "write_table", write_table)

    real_risk = risk_mod.risk_for_recipe

    def risk_for_recipe(recipe, frame, *a, **k):
        seen["risk"] += 1
        assert len(frame) == N
        return real_risk(recipe, _SampleOnly(frame, "the input"), *a, **k)

    monkeypatch.setattr(risk_mod, "risk_for_recipe", risk_for_recipe)

    def spy(name, key, rows):
        real = getattr(name[0], name[1])

        def wrapper(*a, **k):
            if phase["report"]:
                seen[key].append(rows(*a, **k))
            return real(*a, **k)

        monkeypatch.setattr(name[0], name[1], wrapper)

    spy((record_mod, "execute"), "record.run", lambda plan, frame, *a, **k: len(frame))
    spy((linkage_mod, "linkage_rate"), "linkage", lambda orig, rel, *a, **k: max(len(orig), len(rel)))
    spy((label_mod.LabelLeakageModel, "fit"), "label.fit", lambda frame, *a, **k: len(frame))

    real_build = report_mod.build_model

    def build_model(result, variant="internal", frame=None, **k):
        seen["report"] += 1
        assert frame is not None and len(frame) == N
        result.outcome.data = _ShapeOnly(result.outcome.data, "the released table")
        return real_build(result, variant, _ShapeOnly(frame, "the input"), **k)

    monkeypatch.setattr(report_mod, "build_model", build_model)

    res = execute_release(
        _recipe(tmp_path, kind), output_path=tmp_path / "out.csv", report_path=tmp_path / "rep.html", record=False
    )
    assert not [w for w in res.warnings if "failed" in w or "unavailable" in w], res.warnings
    assert seen["risk"] == 1 and seen["report"] == 1 and res.risk["sample"]["rows_used"] == CAP
    per_row = seen["record.run"] + seen["linkage"] + seen["label.fit"]
    assert per_row and max(per_row) <= CAP, seen
    assert seen["linkage"] if kind == "record" else seen["label.fit"]  # the attack ran, on the sample
    assert "rows" in (tmp_path / "rep.html").read_text(encoding="utf-8")
