"""The headless CLI as a user drives it: exit codes, one-line errors, JSON outputs."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from dpstudio import __version__
from dpstudio.cli import main
from tests.conftest import DEMO, shared_dataset


def run_cli(*args, cwd=None):
    proc = subprocess.run(
        [sys.executable, "-m", "dpstudio", *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert __version__ in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect"],
        ["recipe", "init"],
        ["recipe", "check"],
        ["release"],
        ["audit"],
        ["risk"],
        ["ledger", "list"],
        ["ledger", "show"],
        ["ledger", "set-cap"],
        ["gui"],
        ["demo"],
    ],
)
def test_every_subcommand_has_help(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_user_errors_exit_2_with_one_line_and_no_traceback(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    for args in (
        ["inspect", tmp_path / "missing.csv"],
        ["inspect", empty],
        ["inspect", tmp_path],
        ["recipe", "check", tmp_path / "nope.json"],
        ["release", tmp_path / "nope.json", "--output", "x.csv"],
        ["recipe", "init", DEMO, "-o", tmp_path / "r.json", "--role", "nosuch=public"],
        ["recipe", "init", DEMO, "-o", tmp_path / "r.json", "--bounds", "age=1:x"],
    ):
        code, out, err = run_cli(*args)
        assert code == 2, (args, err)
        assert "Traceback" not in err
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith("dpstudio"), err


def test_unknown_flag_is_a_user_error():
    code, _, err = run_cli("inspect", "--frobnicate")
    assert code == 2 and "Traceback" not in err


@pytest.mark.parametrize(
    "parts,identifier,label",
    [
        (("medical", "medical.csv"), "ID", None),
        (("adult", "train.csv"), None, "income_gt_50k"),
        (("pums", "fulton_pums.csv"), None, None),
        (("pums", "pums_1000.csv"), None, None),
    ],
)
def test_inspect_every_shared_dataset(parts, identifier, label):
    path = shared_dataset(*parts)
    code, out, err = run_cli("inspect", path)
    assert code == 0, err
    info = json.loads(out)
    assert len(info["sha256"]) == 64
    roles = {c["name"]: c["suggested_role"] for c in info["columns"]}
    assert info["rows"] == len(pd.read_csv(path))
    if identifier:
        assert roles[identifier] == "identifier"
    if label:
        assert roles[label] == "label"
    # inference never fills a domain
    assert all("low" not in c and "categories" not in c for c in info["columns"])


def test_inspect_real_sas_file():
    """The CLI on a file written by SAS: types from SAS's doubles, text and dates."""
    from tests.test_data_loader import SAS_FIXTURE

    code, out, err = run_cli("inspect", SAS_FIXTURE)
    assert code == 0, err
    info = json.loads(out)
    assert info["format"] == "sas7bdat" and info["rows"] == 5
    types = {c["name"]: c["type"] for c in info["columns"]}
    # SAS stores every number as a double, so integral values are integers even with none missing
    assert types == {"integer_row": "integer", "text_row": "categorical", "float_row": "float", "date_row": "datetime"}


def test_recipe_init_and_check_report_problems_then_total(tmp_path):
    recipe = tmp_path / "r.json"
    code, _, err = run_cli("recipe", "init", DEMO, "-o", recipe)
    # written, but not ready: exit 3 says there are problems to fix (listed on stderr)
    assert code == 3 and recipe.exists() and "problem(s) to fix" in err
    # no domains were given: check lists every column that needs one, exit 2
    code, out, _ = run_cli("recipe", "check", recipe)
    result = json.loads(out)
    assert code == 2 and not result["valid"]
    assert any("'income'" in p and "domain" in p for p in result["problems"])
    code, _, err = run_cli(
        "recipe",
        "init",
        DEMO,
        "-o",
        recipe,
        "--force",  # the first recipe, fixed: replaced on purpose
        "--epsilon",
        "2",
        "--role",
        "employed=label",
        "--bounds",
        "age=0:100",
        "--bounds",
        "education_level=1:16",
        "--bounds",
        "income=0:500000",
        "--categories",
        "employed=0,1",
        "--categories",
        "ethnicity=latino,black,asian,other",
        "--categories",
        "married=no,yes",
        "--categories",
        "us_citizen=no,yes",
        "--categories",
        "children=0,1",
        "--categories",
        "disability=no,yes",
        "--categories",
        "speaks_english_well=no,yes",
        "--categories",
        "sex=female,male",
    )
    assert code == 0, err
    code, out, err = run_cli("recipe", "check", recipe, "--with-data")
    result = json.loads(out)
    assert code == 0, (out, err)
    assert result["valid"]
    assert result["total"]["epsilon"] == pytest.approx(2.0)
    assert result["guarantee"] == "semi-sensitive"  # public columns pass through unchanged


def test_release_refused_for_a_changed_input(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,x\n2,y\n3,x\n")
    recipe = tmp_path / "r.json"
    assert run_cli("recipe", "init", data, "-o", recipe, "--bounds", "a=0:5", "--categories", "b=x,y")[0] == 0
    data.write_text("a,b\n1,x\n2,y\n4,x\n")
    code, _, err = run_cli("release", recipe, "--output", tmp_path / "o.csv")
    assert code == 2 and "not the file this recipe was made for" in err
    assert not (tmp_path / "o.csv").exists()
