"""Exit codes keep their promise: every bad input below ends with exit 2 and one
``dpstudio: ...`` line on stderr (``recipe check``: a JSON verdict listing the problem), never a
traceback, never exit 1 - and a refused release never reaches the ledger.

Each case builds its malformed input in ``tmp_path`` from one valid recipe and returns the
command line; the table is the list of what a careless or hostile user can type (issue 16).
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dpstudio.cli import main

ROWS = 60
INIT = [
    "--release",
    "record",
    "--epsilon",
    "0.5",
    "--role",
    "person_id=identifier",
    "--role",
    "sex=public",
    "--role",
    "age=sensitive",
    "--role",
    "income=sensitive",
    "--role",
    "smoker=sensitive",
    "--bounds",
    "age=0:120",
    "--bounds",
    "income=0:250000",
    "--categories",
    "sex=female,male",
    "--categories",
    "smoker=yes,no",
]


@pytest.fixture
def base(tmp_path, capsys):
    """(data file, recipe dict, recipe path) of a small valid record release."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    data = tmp_path / "input.csv"
    pd.DataFrame(
        {
            "person_id": [f"P{i:05d}" for i in range(ROWS)],
            "age": rng.integers(18, 90, ROWS),
            "income": rng.integers(0, 200_000, ROWS),
            "sex": rng.choice(["female", "male"], ROWS),
            "smoker": rng.choice(["yes", "no"], ROWS),
        }
    ).to_csv(data, index=False)
    recipe = tmp_path / "recipe.json"
    assert main(["recipe", "init", str(data), "-o", str(recipe), *INIT]) == 0
    capsys.readouterr()
    return data, json.loads(recipe.read_text()), recipe


def _col(d: dict, name: str) -> dict:
    return next(c for c in d["columns"] if c["name"] == name)


def _text(base, tmp_path, text: str) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(text)
    return path


def _edit(base, tmp_path, change) -> Path:
    d = json.loads(json.dumps(base[1]))
    change(d)
    return _text(base, tmp_path, json.dumps(d))


def _replace(base, tmp_path, old: str, new: str) -> Path:
    text = json.dumps(base[1])
    assert old in text
    return _text(base, tmp_path, text.replace(old, new, 1))


# ---- malformed recipes: each is checked by ``recipe check`` and refused by ``release`` ----------

RECIPES = {
    "epsilon 1e-300": lambda b, t: _edit(b, t, lambda d: d["budget"].update(epsilon=1e-300)),
    "epsilon 1e-18": lambda b, t: _edit(b, t, lambda d: d["budget"].update(epsilon=1e-18)),
    "epsilon of 400 digits": lambda b, t: _replace(b, t, '"epsilon": 0.5', '"epsilon": 1' + "0" * 400),
    "epsilon -Infinity": lambda b, t: _replace(b, t, '"epsilon": 0.5', '"epsilon": -Infinity'),
    "epsilon NaN": lambda b, t: _replace(b, t, '"epsilon": 0.5', '"epsilon": NaN'),
    "weight 1e300": lambda b, t: _edit(b, t, lambda d: _col(d, "age")["mechanism"].update(weight=1e300)),
    "weight 1e-300": lambda b, t: _edit(b, t, lambda d: _col(d, "age")["mechanism"].update(weight=1e-300)),
    "weights far apart": lambda b, t: _edit(
        b,
        t,
        lambda d: (_col(d, "age")["mechanism"].update(weight=1e-6), _col(d, "income")["mechanism"].update(weight=1e6)),
    ),
    "bounds +-1e308": lambda b, t: _edit(b, t, lambda d: _col(d, "income")["domain"].update(low=-1e308, high=1e308)),
    "bound of 400 digits": lambda b, t: _replace(b, t, '"high": 250000.0', '"high": 1' + "0" * 400),
    "bounds 1e-300 apart": lambda b, t: _edit(b, t, lambda d: _col(d, "income")["domain"].update(low=0, high=1e-300)),
    "bounds far from zero": lambda b, t: _edit(
        b, t, lambda d: _col(d, "income")["domain"].update(low=1e15, high=1e15 + 1)
    ),
    "search range +-1e308": lambda b, t: _edit(
        b,
        t,
        lambda d: _col(d, "income").update(
            domain={
                "kind": "numeric",
                "source": "dp",
                "cost": {"epsilon": 0.1},
                "search_low": -1e308,
                "search_high": 1e308,
            }
        ),
    ),
    "domain estimate epsilon 1e-300": lambda b, t: _edit(
        b,
        t,
        lambda d: _col(d, "smoker").update(
            domain={"kind": "categorical", "source": "dp", "cost": {"epsilon": 1e-300, "delta": 1e-7}}
        ),
    ),
    "domain estimate delta 0.5": lambda b, t: _edit(
        b,
        t,
        lambda d: _col(d, "smoker").update(
            domain={"kind": "categorical", "source": "dp", "cost": {"epsilon": 0.1, "delta": 0.5}}
        ),
    ),
    "gaussian sigma too large": lambda b, t: _edit(
        b,
        t,
        lambda d: (
            _col(d, "income")["mechanism"].update(name="gaussian", weight=1.0),
            _col(d, "age")["mechanism"].update(weight=1e4),
            d["budget"].update(delta=1e-9),
        ),
    ),
    "delta 1e-300": lambda b, t: _edit(b, t, lambda d: d["budget"].update(delta=1e-300)),
    "seed of 400 digits": lambda b, t: _replace(b, t, '"seed": null', '"seed": 1' + "0" * 400),
    "synthetic rows 1e12": lambda b, t: _edit(b, t, lambda d: d["outputs"].update(rows=10**12)),
    "nested 100000 deep": lambda b, t: _text(
        b, t, json.dumps(b[1])[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    ),
    "nested 40 deep": lambda b, t: _edit(
        b, t, lambda d: d["release"].update(options={"x": json.loads("[" * 40 + "]" * 40)})
    ),
    "duplicate key": lambda b, t: _replace(b, t, '"budget": {', '"budget": {"epsilon": 1000, '),
}


def _ledger_releases(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    con = sqlite3.connect(ledger)
    try:
        return con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def _assert_one_line(code: int, err: str) -> None:
    """Exit 2 and ``dpstudio: ...`` lines only: one per problem (a recipe with several problems
    lists each on its own line), no traceback, no usage block."""
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert lines and all(ln.startswith("dpstudio: ") for ln in lines), err


@pytest.mark.parametrize("case", sorted(RECIPES))
def test_bad_recipe_is_refused_before_the_ledger(case, base, tmp_path, capsys):
    bad = RECIPES[case](base, tmp_path)
    code = main(["recipe", "check", str(bad)])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err, err
    if err.strip():  # not even readable as a recipe: one line
        _assert_one_line(code, err)
    else:  # readable: the JSON verdict lists the problem
        verdict = json.loads(out)
        assert verdict["valid"] is False and verdict["problems"], verdict
    ledger = tmp_path / "ledger.sqlite"
    code = main(["release", str(bad), "--output", str(tmp_path / "out.csv"), "--ledger", str(ledger)])
    _assert_one_line(code, capsys.readouterr().err)
    assert _ledger_releases(ledger) == 0
    assert not (tmp_path / "out.csv").exists()


# ---- command lines and data files --------------------------------------------------------------


def _struct_parquet(tmp_path, base):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"s": pa.array([{"x": 1, "y": "a"}, {"x": 2, "y": "b"}]), "v": [1, 2]}), path)
    return ["inspect", str(path)]


def _list_parquet(tmp_path, base):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "lists.parquet"
    pq.write_table(pa.table({"l": pa.array([[1, 2], [3]]), "v": [1, 2]}), path)
    return ["recipe", "init", str(path), "-o", str(tmp_path / "r.json")]


def _far_cell_xlsx(tmp_path, base):
    from openpyxl import Workbook

    path = tmp_path / "far.xlsx"
    wb = Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["A2"], ws["B2"] = "a", "b", 1, 2
    ws["XFD1048576"] = 1  # one value at Excel's last cell: a 17-billion-cell rectangle
    wb.save(path)
    assert path.stat().st_size < 20_000
    return ["inspect", str(path)]


def _fifo_recipe(tmp_path, base):
    path = tmp_path / "recipe_pipe.json"
    os.mkfifo(path)
    return ["recipe", "check", str(path)]


def _init(*flags):
    """``recipe init`` of the bad-input table with the usual roles and ``flags`` (an argv maker)."""
    return lambda t, b: ["recipe", "init", str(b[0]), "-o", str(t / "r.json"), *INIT, *flags]


COMMANDS = {
    "--epsilon of 400 digits": _init("--epsilon", "1" * 400),
    "--epsilon=-inf": _init("--epsilon=-inf"),
    "--epsilon nan": _init("--epsilon", "nan"),
    "--epsilon 1_0 (float() reads 10)": _init("--epsilon", "1_0"),
    "set-cap 1_0": lambda t, b: ["ledger", "set-cap", str(b[0]), "1_0", "--ledger", str(t / "l.sqlite")],
    "--delta 1e999": _init("--delta", "1e999"),
    "--bounds to inf": lambda t, b: ["recipe", "init", str(b[0]), "-o", str(t / "r.json"), "--bounds", "age=0:inf"],
    "--weight 1e400": _init("--weight", "age=1e400"),
    "--rows of 20 digits": _init("--rows", "9" * 20),
    "--seed of 400 digits": _init("--seed", "9" * 400),
    "--option 3000 deep": _init("--option", "x=" + "[" * 3000 + "]" * 3000),
    "audit --trials 1e12": lambda t, b: ["audit", "laplace", "--epsilon", "1", "--trials", "1" + "0" * 12],
    "ledger set-cap inf": lambda t, b: ["ledger", "set-cap", "abc", "inf", "--ledger", str(t / "l.sqlite")],
    "unknown option": lambda t, b: ["inspect", str(b[0]), "--no-such-option"],
    "struct parquet": _struct_parquet,
    "list parquet": _list_parquet,
    "xlsx with a cell at XFD1048576": _far_cell_xlsx,
    "recipe is a FIFO": _fifo_recipe,
}


@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_bad_command_line_or_file_exits_2_with_one_line(case, base, tmp_path, capsys):
    argv = COMMANDS[case](tmp_path, base)
    code = main(argv)
    _assert_one_line(code, capsys.readouterr().err)
    if argv[:2] == ["recipe", "init"]:
        assert not (tmp_path / "r.json").exists()  # never a recipe no JSON reader accepts


def test_fifo_named_csv_is_refused_without_opening_it(tmp_path):
    """A FIFO blocks open() until a writer comes: run in a child with a timeout so that a
    regression fails here instead of hanging the suite."""
    pipe = tmp_path / "x.csv"
    os.mkfifo(pipe)
    for args in (["inspect", str(pipe)], ["recipe", "init", str(pipe), "-o", str(tmp_path / "r.json")]):
        proc = subprocess.run(
            [sys.executable, "-m", "dpstudio", *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).resolve().parents[1],
        )
        _assert_one_line(proc.returncode, proc.stderr)
        assert "not a regular file" in proc.stderr


@pytest.mark.parametrize("err_no", [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.ENAMETOOLONG])
def test_output_os_errors_name_the_path(err_no, base, tmp_path, capsys, monkeypatch):
    """A full or read-only disk, a forbidden folder or a name too long while writing the
    release: exit 2 naming the path, and the reserved spend is not charged."""
    import dpstudio.export as export

    out = tmp_path / "out.csv"

    def failing_writer(*args, **kwargs):
        raise OSError(err_no, os.strerror(err_no), str(out))

    monkeypatch.setattr(export, "write_table", failing_writer)
    ledger = tmp_path / "ledger.sqlite"
    code = main(["release", str(base[2]), "--output", str(out), "--ledger", str(ledger)])
    err = capsys.readouterr().err
    _assert_one_line(code, err)
    assert os.strerror(err_no) in err and str(out) in err
    con = sqlite3.connect(ledger)
    try:
        assert con.execute("SELECT COUNT(*) FROM entries WHERE status='complete'").fetchone()[0] == 0
    finally:
        con.close()


@pytest.mark.parametrize("columns", [2, "x", None, {"a": 1}, [{"name": "a", "bounds": 3}]])
def test_a_version_0_recipe_with_malformed_columns_is_a_user_error(tmp_path, capsys, columns):
    """Found by the fuzz suite: a recipe without schema_version is migrated from layout 0, whose
    migration iterated ``columns`` whatever its type (a TypeError, exit 1)."""
    import json as _json

    from dpstudio.cli import main as _main

    r = tmp_path / "r.json"
    r.write_text(
        _json.dumps({"input": {"path": "x.csv"}, "release": {"type": "record"}, "columns": columns, "epsilon": 1.0})
    )
    code = _main(["recipe", "check", str(r)])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err, captured.err


def test_a_full_disk_without_a_file_name_is_a_one_line_error(base, tmp_path, capsys, monkeypatch):
    """A library writing through a stream raises ENOSPC with no file name: still the user's disk,
    not an internal error (it was a traceback and exit 1); nothing is charged."""
    import dpstudio.export as export

    def failing_writer(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(export, "write_table", failing_writer)
    ledger = tmp_path / "ledger.sqlite"
    code = main(["release", str(base[2]), "--output", str(tmp_path / "o.csv"), "--ledger", str(ledger)])
    err = capsys.readouterr().err
    _assert_one_line(code, err)
    assert os.strerror(errno.ENOSPC) in err
    con = sqlite3.connect(ledger)
    try:
        assert con.execute("SELECT COUNT(*) FROM entries WHERE status='complete'").fetchone()[0] == 0
    finally:
        con.close()
