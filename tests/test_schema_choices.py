"""Column types and roles are public choices: confirmed by the user or listed as inferred.

``recipe init`` reads each column's type and an identifier suggestion from the private data,
and both change what is released (the grid of a numeric column; whether a column is released
at all).  These tests pin down that a declared type fixes the output grid whatever the file
holds, that inferred facts are listed by ``recipe check`` and the report, and that the
record of confirmed/inferred survives JSON.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main
from dpstudio.errors import RecipeError, UserError
from dpstudio.pipeline import execute_release
from dpstudio.recipe.model import Column, load_recipe, recipe_from_json
from dpstudio.recipe.validate import inferred_facts

ROWS = 300


def _files(tmp_path):
    """x = 1,2,3 in one file; the same with one record's x = 1.5 in the other."""
    rng = np.random.default_rng(7)
    x = rng.integers(1, 4, ROWS)
    y = rng.integers(0, 100, ROWS)
    ints = tmp_path / "ints.csv"
    pd.DataFrame({"x": x, "y": y}).to_csv(ints, index=False)
    xf = x.astype(float)
    xf[0] = 1.5
    floats = tmp_path / "floats.csv"
    pd.DataFrame({"x": xf, "y": y}).to_csv(floats, index=False)
    return ints, floats


def _init(tmp_path, data, name, *extra, code=0):
    """``recipe init`` (exit 0: the recipe is ready; 3: written with problems to fix)."""
    out = tmp_path / f"{name}.json"
    assert (
        main(
            [
                "recipe",
                "init",
                str(data),
                "-o",
                str(out),
                "--bounds",
                "x=0:10",
                "--bounds",
                "y=0:100",
                "--seed",
                "3",
                *extra,
            ]
        )
        == code
    )
    return out


def _release(tmp_path, recipe_path, name):
    return execute_release(load_recipe(recipe_path), output_path=tmp_path / f"{name}.csv")


def _grid_step(result, col):
    return next(m["grid_step"] for m in result.plan.mechanisms if m["unit"] == col)


# ---- (a) the declared type, not the file, fixes the released grid -----------------------------


def test_declared_float_gives_the_same_grid_whatever_the_file_holds(tmp_path):
    ints, floats = _files(tmp_path)
    results = {}
    for data in (ints, floats):
        # --no-clamp: clamping (on by default) puts many outputs on the whole-number bounds 0 and 10
        rp = _init(tmp_path, data, data.stem, "--type", "x=float", "--no-clamp")
        assert load_recipe(rp).column("x").type == "float"
        results[data.stem] = _release(tmp_path, rp, data.stem + "_released")
    steps = {k: _grid_step(r, "x") for k, r in results.items()}
    assert steps["ints"] == steps["floats"] < 1  # one float grid for both files
    for r in results.values():
        out = r.outcome.data["x"].to_numpy(dtype=float)
        non_integer = np.count_nonzero(out != np.round(out))
        assert non_integer > ROWS // 2  # float grid: most outputs are not whole numbers
        k = (out - 0.0) / steps["ints"]
        assert np.array_equal(k, np.round(k))  # every output lies on that grid


def test_inferred_type_follows_the_file_one_record_decides(tmp_path):
    """The gap itself, visible without --type: one record switches the grid (so it is listed)."""
    ints, floats = _files(tmp_path)
    ri = load_recipe(_init(tmp_path, ints, "i"))
    rf = load_recipe(_init(tmp_path, floats, "f"))
    assert (ri.column("x").type, rf.column("x").type) == ("integer", "float")
    assert {"column": "x", "type": "integer", "role": "sensitive"} in inferred_facts(ri)


def test_integer_declared_column_with_non_integers_is_refused_without_values(tmp_path, capsys):
    _, floats = _files(tmp_path)
    rp = _init(tmp_path, floats, "f", "--type", "x=integer", code=3)  # written, not ready
    with pytest.raises(UserError) as e:
        _release(tmp_path, rp, "out")
    msg = str(e.value)
    assert "'x'" in msg and "declared integer" in msg and "1 row(s)" in msg
    assert "1.5" not in msg  # counts rows, never quotes a value
    assert main(["release", str(rp), "--output", str(tmp_path / "o.csv"), "--no-ledger"]) == 2
    err = capsys.readouterr().err
    assert "1 row(s)" in err and "Traceback" not in err and "1.5" not in err
    assert not (tmp_path / "o.csv").exists()


def test_recipe_check_with_data_reports_a_broken_integer_declaration(tmp_path, capsys):
    _, floats = _files(tmp_path)
    rp = _init(tmp_path, floats, "f", "--type", "x=integer", code=3)  # written, not ready
    capsys.readouterr()
    assert main(["recipe", "check", str(rp), "--with-data"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is False
    assert any("declared integer" in p and "1 row(s)" in p for p in out["problems"])


def test_type_flag_rejects_unknown_types_and_columns(tmp_path):
    ints, _ = _files(tmp_path)
    assert main(["recipe", "init", str(ints), "-o", str(tmp_path / "r.json"), "--type", "x=text"]) == 2
    assert main(["recipe", "init", str(ints), "-o", str(tmp_path / "r.json"), "--type", "nope=float"]) == 2


# ---- (b) inferred facts are listed by recipe check and the report ------------------------------


def test_recipe_check_lists_inferred_facts_only(tmp_path, capsys):
    ints, _ = _files(tmp_path)
    rp = _init(tmp_path, ints, "r", "--type", "x=float", "--role", "x=sensitive")
    capsys.readouterr()
    assert main(["recipe", "check", str(rp)]) == 0
    listed = json.loads(capsys.readouterr().out)["inferred_from_data"]
    assert listed == [{"column": "y", "type": "integer", "role": "sensitive"}]

    rp2 = _init(tmp_path, ints, "r2", "--confirm-inferred")
    capsys.readouterr()
    assert main(["recipe", "check", str(rp2)]) == 0
    assert json.loads(capsys.readouterr().out)["inferred_from_data"] == []
    saved = json.loads(rp2.read_text())["columns"]
    assert all(c["type_source"] == c["role_source"] == "confirmed" for c in saved)


def test_report_lists_inferred_facts_as_a_caveat(tmp_path):
    from dpstudio.report.model import build_model

    ints, _ = _files(tmp_path)
    rp = _init(tmp_path, ints, "r", "--type", "x=float", "--role", "x=sensitive")
    result = _release(tmp_path, rp, "out")
    for variant in ("internal", "external"):
        model = build_model(result, variant, charts=False)
        warns = [b.content for s in model.sections for b in s.blocks if b.kind == "warn"]
        caveat = [w for w in warns if "not confirmed" in w]
        assert len(caveat) == 1
        assert "y (type integer, role sensitive)" in caveat[0]
        assert "x (" not in caveat[0]  # confirmed: not listed
        table = next(b.content for s in model.sections if s.title == "Columns" for b in s.blocks if b.kind == "table")
        types = {r[0].text: r[2].text for r in table["rows"]}
        assert types == {"x": "float", "y": "integer (inferred)"}

    rp2 = _init(tmp_path, ints, "r2", "--confirm-inferred")
    model = build_model(_release(tmp_path, rp2, "out2"), "internal", charts=False)
    assert not [b for s in model.sections for b in s.blocks if b.kind == "warn" and "not confirmed" in b.content]


# ---- (c) the identifier suggestion is a choice the user can overrule ----------------------------


def test_all_distinct_integer_column_is_released_when_marked_sensitive(tmp_path):
    n = 50
    data = tmp_path / "ids.csv"
    pd.DataFrame({"x": np.arange(1, n + 1), "amount": np.arange(n) % 7 * 10}).to_csv(data, index=False)

    def init(name, *extra):
        out = tmp_path / f"{name}.json"
        assert (
            main(
                [
                    "recipe",
                    "init",
                    str(data),
                    "-o",
                    str(out),
                    "--bounds",
                    "x=0:100",
                    "--bounds",
                    "amount=0:100",
                    "--seed",
                    "1",
                    *extra,
                ]
            )
            == 0
        )
        return out

    suggested = load_recipe(init("s"))
    assert suggested.column("x").role == "identifier"  # read from the data: every value distinct
    assert {"column": "x", "role": "identifier"} in inferred_facts(suggested)

    chosen_path = init("c", "--role", "x=sensitive")
    chosen = load_recipe(chosen_path)
    assert chosen.column("x").role == "sensitive" and chosen.column("x").role_source == "confirmed"
    assert all(f["column"] != "x" or "role" not in f for f in inferred_facts(chosen))
    out = _release(tmp_path, chosen_path, "out").outcome.data
    assert "x" in out.columns and len(out) == n


# ---- (d) JSON round trip and older recipes ------------------------------------------------------


def _recipe_json(**col_extra):
    return {
        "schema_version": 1,
        "input": {"path": "d.csv"},
        "release": {"type": "record"},
        "budget": {"epsilon": 1.0},
        "columns": [
            {
                "name": "x",
                "type": "float",
                "role": "sensitive",
                "domain": {"kind": "numeric", "low": 0, "high": 1},
                **col_extra,
            }
        ],
    }


def test_sources_round_trip_through_json():
    r = recipe_from_json(_recipe_json(type_source="confirmed", role_source="inferred"))
    c = r.column("x")
    assert (c.type_source, c.role_source) == ("confirmed", "inferred")
    again = recipe_from_json(json.loads(r.dumps()))
    assert again == r and again.sha256() == r.sha256()
    assert json.loads(r.dumps())["columns"][0]["type_source"] == "confirmed"


def test_older_recipes_load_as_inferred():
    c = recipe_from_json(_recipe_json()).column("x")
    assert (c.type_source, c.role_source) == ("inferred", "inferred")
    v0 = {
        "epsilon": 1.0,
        "input": {"path": "d.csv"},
        "release": {"type": "record"},
        "columns": [{"name": "x", "type": "float", "role": "sensitive", "bounds": [0, 1]}],
    }
    c0 = recipe_from_json(v0).column("x")
    assert (c0.type_source, c0.role_source) == ("inferred", "inferred")
    assert Column("x", "float", "sensitive").type_source == "inferred"  # unstated: not confirmed


def test_bad_source_is_a_recipe_problem():
    with pytest.raises(RecipeError) as e:
        recipe_from_json(_recipe_json(type_source="maybe"))
    assert any("type_source" in p for p in e.value.problems)


def test_copying_a_domain_from_the_data_keeps_the_sources(tmp_path):
    """fill_domains_from_data rebuilt each column field by field and dropped the record."""
    ints, _ = _files(tmp_path)
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "recipe",
                "init",
                str(ints),
                "-o",
                str(out),
                "--bounds",
                "x=data",
                "--bounds",
                "y=0:100",
                "--type",
                "x=float",
                "--role",
                "x=sensitive",
            ]
        )
        == 0
    )
    c = load_recipe(out).column("x")
    assert (c.domain.source, c.type_source, c.role_source) == ("data", "confirmed", "confirmed")


# ---- GUI edits (pure functions, no Qt) -----------------------------------------------------------


def test_gui_edits_mark_changed_facts_confirmed(tmp_path):
    from dpstudio.gui.wizard.edits import confirm_suggestions, set_role, set_type

    ints, _ = _files(tmp_path)
    r = load_recipe(_init(tmp_path, ints, "r"))
    r1 = set_type(r, "x", "float")
    assert (r1.column("x").type_source, r1.column("x").role_source) == ("confirmed", "inferred")
    r2 = set_role(r1, "y", "public")
    assert r2.column("y").role_source == "confirmed" and r2.column("y").type_source == "inferred"
    r3 = confirm_suggestions(r2)
    assert inferred_facts(r3) == []
    assert [(c.type, c.role) for c in r3.columns] == [(c.type, c.role) for c in r2.columns]
