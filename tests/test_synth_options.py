"""A synthesizer's options are checked when the recipe is compiled (``recipe init``, ``recipe
check``, the GUI's release page), before any data is read or budget reserved: an unknown name or
a value of the wrong kind used to pass every check and stop the release with a type error.  And
``recipe check --with-data`` checks the ledger's cap as the release will."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import EXIT_NOT_READY, EXIT_OK, main
from dpstudio.plan.synthetic import option_names


def _init(tmp_path, capsys, method, *options):
    g = np.random.default_rng(0)
    data = tmp_path / "d.csv"
    pd.DataFrame({"age": g.integers(18, 90, 200), "grp": g.choice(["a", "b"], 200)}).to_csv(data, index=False)
    args = ["recipe", "init", str(data), "-o", str(tmp_path / "r.json"), "--release", "synthetic"]
    args += ["--synth", method, "--epsilon", "1", "--delta", "1e-6", "--bounds", "age=0:120"]
    args += ["--categories", "grp=a,b", "--confirm-inferred"]
    for o in options:
        args += ["--option", o]
    code = main(args)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("method", ["aim", "mst", "pearl", "merf"])
def test_an_unknown_option_is_named_with_the_options_there_are(tmp_path, capsys, method):
    code, err = _init(tmp_path, capsys, method, "degree=3")
    assert code == EXIT_NOT_READY
    assert "release option(s) 'degree': not an option of the" in err
    assert ", ".join(option_names(method)) in err


def test_a_value_of_the_wrong_kind_is_refused_at_init(tmp_path, capsys):
    code, err = _init(tmp_path, capsys, "aim", "bins=abc")
    assert code == EXIT_NOT_READY and "release options of the AIM synthesizer:" in err
    # the release stops with the same problem, before the ledger is opened for writing
    ledger = tmp_path / "l.sqlite"
    out = tmp_path / "o.csv"
    assert main(["release", str(tmp_path / "r.json"), "--output", str(out), "--ledger", str(ledger)]) != EXIT_OK
    err = capsys.readouterr().err
    assert "release options of the AIM synthesizer" in err and "Traceback" not in err
    assert not out.exists()


def test_good_options_pass(tmp_path, capsys):
    code, err = _init(tmp_path, capsys, "aim", "bins=8", "max_cells=20000")
    assert code == EXIT_OK, err


def test_recipe_check_with_the_data_checks_the_ledger_cap(tmp_path, capsys):
    """``recipe check --with-data`` answers "can this be released?": a release the dataset's cap
    will refuse is not valid, and the check says how much is left (it records nothing)."""
    import json

    code, err = _init(tmp_path, capsys, "mst")
    assert code == EXIT_OK, err
    ledger = str(tmp_path / "l.sqlite")
    recipe = str(tmp_path / "r.json")
    assert main(["release", recipe, "--output", str(tmp_path / "o.csv"), "--ledger", ledger]) == EXIT_OK
    capsys.readouterr()
    assert main(["ledger", "set-cap", str(tmp_path / "d.csv"), "1.5", "--ledger", ledger]) == EXIT_OK
    capsys.readouterr()
    assert main(["recipe", "check", recipe, "--with-data", "--ledger", ledger]) != EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert not out["valid"] and any("left of its cap" in p for p in out["problems"]), out["problems"]
    # within the cap: valid, with the figures the release will meet
    assert main(["ledger", "set-cap", str(tmp_path / "d.csv"), "3", "--ledger", ledger]) == EXIT_OK
    capsys.readouterr()
    assert main(["recipe", "check", recipe, "--with-data", "--ledger", ledger]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] and out["ledger"]["remaining"]["epsilon"] == pytest.approx(2.0)
    # nothing was recorded by the checks
    main(["ledger", "show", str(tmp_path / "d.csv"), "--ledger", ledger])
    assert len(json.loads(capsys.readouterr().out)["entries"]) == 1
