"""Values outside a public category list in a synthetic release: refused before anything is
spent (they would have vanished from the synthetic table without a word), or, with an 'other'
category (``--other COL=NAME``, and the "(other)" of a list found with DP), counted as that
category like every other release type counts them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import EXIT_NOT_READY, EXIT_OK, main
from dpstudio.engine.synth.encoding import _codes


def _table(path, n=400):
    g = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age": g.integers(18, 90, n),
            "grade": g.choice(["class_0", "class_1", "class_2"], n, p=[0.4, 0.35, 0.25]),
        }
    )
    frame.to_csv(path, index=False)
    return frame


def _init(tmp_path, capsys, *extra):
    data = tmp_path / "d.csv"
    frame = _table(data)
    recipe = tmp_path / "r.json"
    args = ["recipe", "init", str(data), "-o", str(recipe), "--release", "synthetic", "--synth", "mst"]
    args += ["--epsilon", "1", "--delta", "1e-6", "--bounds", "age=0:120", "--confirm-inferred", *extra]
    code = main(args)
    return code, capsys.readouterr(), recipe, frame


def test_a_misspelt_category_is_refused_before_anything_is_spent(tmp_path, capsys):
    code, cap, recipe, frame = _init(tmp_path, capsys, "--categories", "grade=class_0,class_1,clas_2")
    assert code == EXIT_NOT_READY and "--other grade=NAME" in cap.err
    n = int((frame["grade"] == "class_2").sum())
    # recipe check with the data names it, counted (never quoting a value)
    main(["recipe", "check", str(recipe), "--with-data"])
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [p for p in problems if p.startswith(f"column 'grade': {n} row(s) hold a value that is not in")]
    # the release refuses it, and the ledger has nothing for the table
    ledger = tmp_path / "l.sqlite"
    assert main(["release", str(recipe), "--output", str(tmp_path / "o.csv"), "--ledger", str(ledger)]) != EXIT_OK
    assert "not in the category list" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()
    main(["ledger", "list", "--ledger", str(ledger)])
    listed = capsys.readouterr().out
    assert "d.csv" not in listed


def test_an_other_category_keeps_unlisted_values_as_that_category(tmp_path, capsys):
    code, cap, recipe, frame = _init(
        tmp_path,
        capsys,
        "--categories",
        "grade=class_0,class_1",
        "--other",
        "grade=rest",
        "--rows",
        "4000",
        "--seed",
        "7",
    )
    assert code == EXIT_OK, cap.err
    d = {c["name"]: c for c in json.loads(recipe.read_text())["columns"]}["grade"]["domain"]
    assert d["categories"] == ["class_0", "class_1", "rest"] and d["other"] == "rest"
    out = tmp_path / "o.csv"
    assert main(["release", str(recipe), "--output", str(out), "--no-ledger"]) == EXIT_OK
    synth = pd.read_csv(out)
    share = float((synth["grade"] == "rest").mean())
    # class_2 holds a quarter of the rows: its share reaches the synthetic table as "rest" (the
    # hidden cell of a list without 'other' is never sampled: its share would be 0)
    assert share == pytest.approx(float((frame["grade"] == "class_2").mean()), abs=0.08)


def test_other_needs_a_public_list(tmp_path, capsys):
    code, cap, *_ = _init(tmp_path, capsys, "--categories", "grade=dp", "--other", "grade=rest")
    assert code != EXIT_OK and "--other grade='rest': give the column a public category list" in cap.err


def test_codes_count_unlisted_values_as_the_other_category():
    s = pd.Series(["a", "b", "zz", None, ""])
    assert _codes(s, ["a", "b", "o"]).tolist() == [0, 1, -1, -1, -1]
    assert _codes(s, ["a", "b", "o"], other="o").tolist() == [0, 1, 2, 2, 2]
    # a column that may be missing keeps its empty cells as "missing", not "other"
    assert _codes(s, ["a", "b", "o"], missing=True, other="o").tolist() == [0, 1, 2, 3, 3]


def test_a_domain_copied_from_the_data_is_warned_everywhere_the_user_reads(tmp_path, capsys):
    """``--bounds COL=data`` is allowed (and acknowledged), but the CLI user hears it at init,
    at check and in the release's warnings, not only in the PDF; the external report says the
    released values can show the copied bounds (they are clamped to them)."""
    code, cap, recipe, frame = _init(tmp_path, capsys, "--categories", "grade=class_0,class_1,class_2")
    d = json.loads(recipe.read_text())
    for c in d["columns"]:
        if c["name"] == "age":
            c["domain"] = {"kind": "numeric", "source": "data"}
    d["acknowledgements"] = sorted(set(d.get("acknowledgements", [])) | {"domain-copied-from-data"})
    recipe.write_text(json.dumps(d))
    main(["recipe", "check", str(recipe), "--with-data"])
    checked = json.loads(capsys.readouterr().out)
    assert any("'age' were copied from the data" in w for w in checked.get("warnings", [])), checked
    out, rep = tmp_path / "o.csv", tmp_path / "r.html"
    args = ["release", str(recipe), "--output", str(out), "--report", str(rep), "--report-variant", "external"]
    code = main([*args, "--ledger", str(tmp_path / "l.sqlite")])
    cap = capsys.readouterr()
    assert code == EXIT_OK, cap.err
    assert any("'age' were copied from the data" in w for w in json.loads(cap.out)["warnings"])
    text = rep.read_text()
    assert "the released data can show them" in text and "withheld from this version" not in text


def test_integer_codes_stored_as_floats_match_their_categories():
    """A column of 0/1 codes with empty cells is read as floats (1.0): those are the categories
    "1" and "0", for the synthesizer as for the record release (no false problem, no lost rows)."""
    s = pd.Series([1.0, 0.0, np.nan, 1.0])
    assert _codes(s, ["0", "1"]).tolist() == [1, 0, -1, 1]
    assert _codes(s, ["0", "1"], missing=True).tolist() == [1, 0, 2, 1]
    # a float that is no integer stays outside an integer list
    assert _codes(pd.Series([0.5, 1.0]), ["0", "1"]).tolist() == [-1, 1]
    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Recipe, ReleaseSpec
    from dpstudio.recipe.validate import category_counts

    col = Column("flag", "categorical", "sensitive", Domain("categorical", categories=("0", "1"), missing=True))
    recipe = Recipe(InputSpec("x.csv"), ReleaseSpec("synthetic"), (col,), Budget(1.0, 1e-6))
    assert category_counts(recipe, pd.DataFrame({"flag": s})) == ({}, {})


@pytest.mark.parametrize("listed", [("true", "false"), ("TRUE", "FALSE"), ("True", "False")])
def test_a_boolean_column_matches_true_and_false_in_any_case(listed):
    """The loader reads True/TRUE/true as booleans; a list typed in another case still names them
    (they used to fall outside the list: a synthetic table lost the whole column)."""
    s = pd.Series([True, False, True])
    assert _codes(s, list(listed)).tolist() == [0, 1, 0]
    nullable = pd.Series([True, None, False], dtype="boolean")
    assert _codes(nullable, list(listed)).tolist() == [0, -1, 1]
    assert _codes(nullable, list(listed), missing=True).tolist() == [0, 2, 1]


@pytest.mark.parametrize("listed", ["true,false", "FALSE,TRUE", "0,1"])
def test_a_boolean_column_reaches_the_synthetic_table(tmp_path, capsys, listed):
    """The loader reads TRUE/FALSE as booleans; the synthesizer read them as "1"/"0", outside a
    true/false list, and the column's values were lost (sampled from noise alone)."""
    data = tmp_path / "b.csv"
    g = np.random.default_rng(1)
    frame = pd.DataFrame({"age": g.integers(18, 90, 600), "b": g.choice(["TRUE", "FALSE"], 600, p=[0.2, 0.8])})
    frame.to_csv(data, index=False)
    recipe, out = tmp_path / "r.json", tmp_path / "o.csv"
    args = ["recipe", "init", str(data), "-o", str(recipe), "--release", "synthetic", "--synth", "mst", "--seed", "3"]
    args += ["--epsilon", "2", "--delta", "1e-6", "--bounds", "age=0:120", "--categories", f"b={listed}"]
    assert main([*args, "--confirm-inferred", "--rows", "4000"]) == EXIT_OK, capsys.readouterr().err
    assert main(["release", str(recipe), "--output", str(out), "--no-ledger"]) == EXIT_OK
    released = pd.read_csv(out, dtype=str)["b"]
    true = next(c for c in listed.split(",") if c.lower() in ("true", "1"))
    assert set(released) <= set(listed.split(","))
    assert float((released == true).mean()) == pytest.approx(0.2, abs=0.06)


@pytest.mark.parametrize("engine", ["stream", "memory"])
def test_every_engine_refuses_a_value_outside_the_list(tmp_path, capsys, engine):
    """The streamed engine checks the whole table in its first pass (the block pass's counts), as
    the in-memory release checks the frame: nothing is written or spent."""
    code, cap, recipe, frame = _init(tmp_path, capsys, "--categories", "grade=class_0,class_1,clas_2")
    n = int((frame["grade"] == "class_2").sum())
    out, ledger = tmp_path / "o.csv", tmp_path / "l.sqlite"
    args = ["release", str(recipe), "--output", str(out), "--ledger", str(ledger), "--engine", engine]
    assert main([*args, "--block-rows", "64"]) != EXIT_OK
    assert f"column 'grade': {n} row(s) hold a value that is not in the category list" in capsys.readouterr().err
    assert not out.exists()


def test_empty_cells_of_a_column_not_declared_to_have_any_are_a_problem():
    """They go to the same hidden cell as a value outside the list; declared 'may be empty', they
    are a value of their own, and with an 'other' category they are that category."""
    from dataclasses import replace

    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Recipe, ReleaseSpec
    from dpstudio.recipe.validate import declared_type_problems

    frame = pd.DataFrame({"c": ["a", None, "b", " "]})
    d = Domain("categorical", categories=("a", "b"))
    recipe = Recipe(
        InputSpec("x.csv"), ReleaseSpec("synthetic"), (Column("c", "categorical", "sensitive", d),), Budget(1, 1e-6)
    )
    problems = declared_type_problems(recipe, frame)
    assert [p for p in problems if p.startswith("column 'c': 2 row(s) are empty, but the column is not declared")]
    for ok in (replace(d, missing=True), replace(d, categories=("a", "b", "o"), other="o")):
        fixed = replace(recipe, columns=(Column("c", "categorical", "sensitive", ok),))
        assert declared_type_problems(fixed, frame) == []
