"""CLI polish (issue 18, item 9): wrong column names are all reported with the closest column,
a domain of the wrong kind is refused, ``recipe init``'s exit code says whether the recipe is
ready, an over-cap refusal says how to go on, and ``ledger show`` takes the names ``ledger list``
prints."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from dpstudio.cli import EXIT_NOT_READY, EXIT_OK, EXIT_USER, main
from tests.conftest import DEMO

READY = [
    "--epsilon",
    "1",
    "--bounds",
    "education_level=1:16",
    "--bounds",
    "income=0:500000",
    "--categories",
    "children=0,1",
    "--categories",
    "disability=no,yes",
    "--categories",
    "employed=0,1",
    "--categories",
    "married=no,yes",
    "--categories",
    "us_citizen=no,yes",
    "--categories",
    "speaks_english_well=no,yes",
]


def _init(capsys, out, *args, data=DEMO):
    code = main(["recipe", "init", str(data), "-o", str(out), *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.err


def _lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]


# ---- wrong column names ----------------------------------------------------------------------


def test_every_wrong_column_is_named_with_the_closest_one_in_one_line(tmp_path, capsys):
    out = tmp_path / "r.json"
    code, err = _init(
        capsys,
        out,
        "--bounds",
        "AGE=0:120",  # another case
        "--role",
        "incme=sensitive",  # a typo
        "--weight",
        "zzzzzz=2",  # nothing close
        "--categories",
        "Sex=female,male",
    )
    assert code == EXIT_USER and not out.exists()
    (line,) = _lines(err)  # one line, every wrong name in it
    assert line.startswith("dpstudio: ") and "Traceback" not in err
    assert "--bounds: no column 'AGE' (did you mean 'age'?)" in line
    assert "--role: no column 'incme' (did you mean 'income'?)" in line
    assert "--categories: no column 'Sex' (did you mean 'sex'?)" in line
    assert "--weight: no column 'zzzzzz'" in line and "'zzzzzz' (did you mean" not in line
    # and the table's columns, to pick from
    assert "its columns are: 'person_id', 'sex', 'age', 'education_level', 'income'" in line


@pytest.mark.parametrize("flag", ["--type", "--mechanism"])
def test_other_flags_suggest_too(tmp_path, capsys, flag):
    value = {"--type": "EDUCATION_LEVEL=integer", "--mechanism": "Income=gaussian"}[flag]
    code, err = _init(capsys, tmp_path / "r.json", flag, value)
    assert code == EXIT_USER
    close = {"--type": "education_level", "--mechanism": "income"}[flag]
    assert f"(did you mean '{close}'?)" in err


def test_case_insensitive_match_wins_over_a_similar_name():
    from dpstudio.recipe.validate import closest_column

    assert closest_column("AGE", ["page", "Age", "age2"]) == "Age"
    assert closest_column("incom", ["income", "outcome"]) == "income"
    assert closest_column("qqq", ["income", "age"]) is None


def test_recipe_check_names_the_closest_data_column_for_each_wrong_recipe_column(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert _init(capsys, out, *READY)[0] == EXIT_OK
    d = json.loads(out.read_text())
    for c in d["columns"]:
        c["name"] = {"income": "Income", "education_level": "educaton_level"}.get(c["name"], c["name"])
    out.write_text(json.dumps(d))
    assert main(["recipe", "check", str(out), "--with-data"]) == EXIT_USER
    problems = json.loads(capsys.readouterr().out)["problems"]
    wrong = [p for p in problems if "not found in the data" in p]
    assert len(wrong) == 2  # both reported at once
    assert any("'Income'" in p and p.endswith("did you mean 'income'?") for p in wrong)
    assert any("'educaton_level'" in p and p.endswith("did you mean 'education_level'?") for p in wrong)


# ---- a domain of the wrong kind ------------------------------------------------------------


def test_bounds_on_a_categorical_column_is_an_error(tmp_path, capsys):
    out = tmp_path / "r.json"
    code, err = _init(capsys, out, "--role", "sex=public", "--bounds", "sex=0:1")
    assert code == EXIT_USER and not out.exists()
    (line,) = _lines(err)
    assert (
        "'sex' is a categorical column (as read from the data)" in line
        and "categorical columns take --categories sex=" in line
    )
    # a boolean column too
    code, err = _init(capsys, out, "--bounds", "married=0:1")
    assert code == EXIT_USER and "'married' is a boolean column" in err


def test_bounds_on_a_column_declared_numeric_is_accepted(tmp_path, capsys):
    out = tmp_path / "r.json"
    ready = [a for a in READY if a != "children=0,1"]
    ready.remove("--categories")
    code, err = _init(capsys, out, *ready, "--type", "children=integer", "--bounds", "children=0:1")
    assert code == EXIT_OK and out.exists(), err
    col = next(c for c in json.loads(out.read_text())["columns"] if c["name"] == "children")
    assert col["type"] == "integer" and col["domain"]["low"] == 0


def test_categories_on_a_numeric_column_is_an_error_unless_the_type_says_otherwise(tmp_path, capsys):
    out = tmp_path / "r.json"
    code, err = _init(capsys, out, "--type", "age=integer", "--categories", "age=1,2,3")
    assert code == EXIT_USER and not out.exists()
    assert "'age' is declared integer with --type" in err and "numeric columns take --bounds age=" in err
    data = tmp_path / "f.csv"
    pd.DataFrame({"x": [0.5, 1.5, 2.25, 3.0], "y": ["a", "b", "a", "b"]}).to_csv(data, index=False)
    code, err = _init(capsys, out, "--categories", "x=1,2", data=data)
    assert code == EXIT_USER and "'x' is a float column" in err
    # --type changes it
    code, err = _init(capsys, out, "--type", "x=categorical", "--categories", "x=0.5,1.5,2.25,3.0", data=data)
    assert code in (EXIT_OK, EXIT_NOT_READY) and out.exists(), err
    # an integer column read from the data takes a category list as integer codes (as before)
    code, err = _init(capsys, tmp_path / "codes.json", *READY, "--categories", "age=18,19")
    assert code in (EXIT_OK, EXIT_NOT_READY), err
    age = next(c for c in json.loads((tmp_path / "codes.json").read_text())["columns"] if c["name"] == "age")
    assert age["type"] == "categorical"


def test_bounds_and_categories_for_one_column_is_an_error(tmp_path, capsys):
    code, err = _init(capsys, tmp_path / "r.json", "--bounds", "age=0:100", "--categories", "age=1,2")
    assert code == EXIT_USER and "both name column 'age'" in err


def test_several_wrong_kinds_are_reported_at_once(tmp_path, capsys):
    code, err = _init(capsys, tmp_path / "r.json", "--bounds", "sex=0:1", "--bounds", "ethnicity=0:3")
    assert code == EXIT_USER
    lines = _lines(err)
    assert len(lines) == 2 and all(ln.startswith("dpstudio: ") for ln in lines)
    assert "'sex'" in lines[0] and "'ethnicity'" in lines[1]


# ---- recipe init's exit code -----------------------------------------------------------------


def test_recipe_init_exit_code_says_whether_the_recipe_is_ready(tmp_path, capsys):
    ready, not_ready = tmp_path / "ready.json", tmp_path / "not_ready.json"
    code, err = _init(capsys, ready, *READY)
    assert code == EXIT_OK == 0, err
    assert main(["recipe", "check", str(ready), "--with-data"]) == EXIT_OK
    capsys.readouterr()
    code, err = _init(capsys, not_ready)  # no domains: problems to fix
    assert code == EXIT_NOT_READY == 3
    assert not_ready.exists() and "problem(s) to fix" in err  # the file is still written
    assert main(["recipe", "check", str(not_ready)]) == EXIT_USER


def test_exit_codes_are_documented_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["recipe", "init", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "Exit code: 0 the recipe is ready to release; 3 it was written but has problems to fix" in help_text
    assert "--no-clamp" in help_text


# ---- --no-clamp ------------------------------------------------------------------------------


def test_no_clamp_is_recorded_and_default_clamps(tmp_path, capsys):
    from dpstudio.plan import compile_plan
    from dpstudio.recipe.model import load_recipe

    on, off = tmp_path / "on.json", tmp_path / "off.json"
    assert _init(capsys, on, *READY)[0] == EXIT_OK
    assert _init(capsys, off, *READY, "--no-clamp")[0] == EXIT_OK
    assert "clamp_to_bounds" not in json.loads(on.read_text())["release"]["options"]  # on by default
    assert json.loads(off.read_text())["release"]["options"]["clamp_to_bounds"] is False
    steps_on = compile_plan(load_recipe(on)).unit("income").post_processing
    steps_off = compile_plan(load_recipe(off)).unit("income").post_processing
    assert any("set to the nearest bound" in s and "after this step" in s for s in steps_on)
    assert any("not clamped" in s for s in steps_off) and not any("nearest bound" in s for s in steps_off)


def test_no_clamp_is_refused_for_releases_that_do_not_clamp(tmp_path, capsys):
    code, err = _init(capsys, tmp_path / "r.json", *READY, "--release", "synthetic", "--no-clamp")
    assert code == EXIT_USER and "--no-clamp" in err and "'synthetic'" in err


# ---- over-cap refusal ------------------------------------------------------------------------


def _ready_recipe(tmp_path, capsys, data):
    rp = tmp_path / "r.json"
    assert _init(capsys, rp, *READY, "--seed", "1", data=data)[0] == EXIT_OK
    return rp


def test_over_cap_refusal_says_how_to_go_on_and_the_advice_works(tmp_path, capsys):
    data = tmp_path / "census.csv"
    shutil.copy(DEMO, data)
    rp = _ready_recipe(tmp_path, capsys, data)
    ledger = tmp_path / "l.sqlite"
    assert main(["ledger", "set-cap", str(data), "0.5", "--ledger", str(ledger)]) == EXIT_OK
    capsys.readouterr()
    out = tmp_path / "o.csv"
    assert main(["release", str(rp), "--output", str(out), "--ledger", str(ledger)]) == EXIT_USER
    err = capsys.readouterr().err
    (line,) = _lines(err)
    assert "left of its cap ε=0.5" in line and "nothing was released" in line
    assert "lower the recipe's epsilon" in line and "dpstudio ledger set-cap " in line
    assert "declare it new" not in line  # this very file cannot be declared a new dataset
    assert not out.exists()
    # the set-cap command the message gives names this dataset: following it lets the release run
    key = line.split("dpstudio ledger set-cap ", 1)[1].split()[0]
    assert main(["ledger", "set-cap", key, "2", "--ledger", str(ledger)]) == EXIT_OK
    capsys.readouterr()
    assert main(["release", str(rp), "--output", str(out), "--ledger", str(ledger)]) == EXIT_OK
    capsys.readouterr()
    assert main(["ledger", "list", "--ledger", str(ledger)]) == EXIT_OK
    (ds,) = json.loads(capsys.readouterr().out)
    assert ds["dataset"].startswith(key) and ds["cap"]["epsilon"] == 2 and ds["releases"] == 1


def test_over_cap_refusal_of_a_copy_matched_by_rows_points_to_new_dataset(tmp_path, capsys):
    a = tmp_path / "a" / "census.csv"
    a.parent.mkdir()
    shutil.copy(DEMO, a)
    ledger = tmp_path / "l.sqlite"
    rp = _ready_recipe(tmp_path / "a", capsys, a)
    assert main(["release", str(rp), "--output", str(tmp_path / "o1.csv"), "--ledger", str(ledger)]) == EXIT_OK
    capsys.readouterr()
    assert main(["ledger", "set-cap", str(a), "1.5", "--ledger", str(ledger)]) == EXIT_OK
    # an edited copy (one row fewer, other order): matched by its rows
    b = tmp_path / "b" / "copy.csv"
    b.parent.mkdir()
    pd.read_csv(DEMO).iloc[1:].iloc[::-1].to_csv(b, index=False)
    rb = _ready_recipe(tmp_path / "b", capsys, b)
    capsys.readouterr()
    assert main(["release", str(rb), "--output", str(tmp_path / "o2.csv"), "--ledger", str(ledger)]) == EXIT_USER
    (line,) = _lines(capsys.readouterr().err)
    assert "by its rows" in line and "--new-dataset" in line and "declare it new as said above" in line


# ---- ledger show by name ---------------------------------------------------------------------


def test_ledger_show_takes_the_names_ledger_list_prints(tmp_path, capsys):
    data = tmp_path / "census.csv"
    shutil.copy(DEMO, data)
    rp = _ready_recipe(tmp_path, capsys, data)
    ledger = tmp_path / "l.sqlite"
    args = ["--ledger", str(ledger)]
    assert main(["release", str(rp), "--output", str(tmp_path / "o.csv"), "--dataset", "census-2024", *args]) == 0
    capsys.readouterr()
    assert main(["ledger", "list", *args]) == EXIT_OK
    (ds,) = json.loads(capsys.readouterr().out)
    assert ds["name"] == "census.csv" and ds["dataset_name"] == "census-2024"
    other = tmp_path / "elsewhere"
    other.mkdir()  # no file of that name in the working folder: the ledger's own names are used
    for name in (ds["name"], ds["dataset_name"], ds["dataset"][:8], "census"):  # "census": without its extension
        assert main(["ledger", "show", name, *args]) == EXIT_OK, name
        shown = json.loads(capsys.readouterr().out)
        assert shown["dataset"] == ds["dataset"] and len(shown["entries"]) == 1


def test_ledger_show_by_an_ambiguous_file_name_lists_the_candidates(tmp_path, capsys, monkeypatch):
    ledger = tmp_path / "l.sqlite"
    keys = []
    for i, folder in enumerate(("x", "y")):
        f = tmp_path / folder / "survey.csv"
        f.parent.mkdir()
        pd.DataFrame({"v": [i * 1000 + j for j in range(50)]}).to_csv(f, index=False)  # no shared rows
        assert main(["ledger", "set-cap", str(f), "1", "--ledger", str(ledger)]) == EXIT_OK
        keys.append(json.loads(capsys.readouterr().out)["dataset"])
    monkeypatch.chdir(tmp_path)  # 'survey.csv' is no file here
    assert main(["ledger", "show", "survey.csv", "--ledger", str(ledger)]) == EXIT_USER
    (line,) = _lines(capsys.readouterr().err)
    assert "'survey.csv' is the file name of 2 datasets" in line
    assert all(k[:12] in line for k in keys) and "at least 6 hex digits" in line
    assert main(["ledger", "show", "survey", "--ledger", str(ledger)]) == EXIT_USER  # without the extension too
    assert "'survey' is the file name of 2 datasets" in capsys.readouterr().err
    # an unknown name says where the names are
    assert main(["ledger", "show", "nosuch.csv", "--ledger", str(ledger)]) == EXIT_USER
    assert "'dpstudio ledger list' shows the names" in capsys.readouterr().err


def test_init_says_when_dp_domain_estimates_add_to_the_typed_epsilon(tmp_path, capsys):
    """A record release spends its DP domain estimates on top of --epsilon: init prints the
    plan's own total, so '--epsilon 1' is not read as the whole spend."""
    from dpstudio.plan import compile_plan
    from dpstudio.recipe.model import load_recipe

    out = tmp_path / "r.json"
    args = [a if a != "income=0:500000" else "income=dp:0:1000000:0.3" for a in READY]
    code, err = _init(capsys, out, *args)
    assert code == EXIT_OK, err
    total = compile_plan(load_recipe(out)).total.epsilon
    assert total == pytest.approx(1.3)
    assert f"note: this release spends epsilon {total:.6g} in all: --epsilon 1 plus the DP domain" in err
    # a DP category list adds a delta (partition selection): the note says it too
    args = [a if a != "children=0,1" else "children=dp:0.1" for a in READY]
    code, err = _init(capsys, tmp_path / "c.json", *args)
    plan = compile_plan(load_recipe(tmp_path / "c.json"))
    assert plan.total.delta > 0
    assert f"spends epsilon {plan.total.epsilon:.6g} and delta {plan.total.delta:.3g} in all" in err, err
    # a typed total (no estimate) prints no such note
    code, err = _init(capsys, tmp_path / "s.json", *READY)
    assert code == EXIT_OK and "spends epsilon" not in err
    # recipe check without the data says the cap was not checked (not silently "valid")
    capsys.readouterr()
    main(["recipe", "check", str(tmp_path / "s.json")])
    assert "not checked: add --with-data" in capsys.readouterr().out


def test_printed_json_keeps_the_rdp_total_and_drops_rdp_curves():
    from dpstudio.cli import _compact

    got = _compact({"alternatives": {"rdp": {"epsilon": 1.2, "delta": 1e-6}}, "loss": {"rdp": [[2.0, 0.5]]}})
    assert got == {"alternatives": {"rdp": {"epsilon": 1.2, "delta": 1e-6}}, "loss": {}}


def test_text_in_a_column_declared_a_number_is_a_problem_at_init_not_at_the_release(tmp_path, capsys):
    """init said 'ready' for a float column holding text; the release then stopped. Now init (and
    check, and the release before anything is reserved) name the column and count the rows."""
    import pandas as pd

    data = tmp_path / "t.csv"
    pd.DataFrame({"age": [30, 40, 50] * 10, "income": ["100", "abc", "300"] * 10}).to_csv(data, index=False)
    args = ["--type", "income=float", "--bounds", "income=0:1000", "--bounds", "age=0:100"]
    args += ["--role", "age=sensitive", "--role", "income=sensitive", "--confirm-inferred"]
    code = main(["recipe", "init", str(data), "-o", str(tmp_path / "r.json"), *args])
    err = capsys.readouterr().err
    assert code == EXIT_NOT_READY and "column 'income': declared a number, but 10 row(s) hold text" in err, err
    assert "abc" not in err  # counted, never quoted
