"""Exports are safe to open in a spreadsheet (OWASP "CSV Injection"): every text cell, category
and column name that a spreadsheet would evaluate gets a leading quote in CSV, TSV and XLSX;
numbers stay numbers; a bare CR inside a value cannot start a new row; TSV is tab-separated."""

from __future__ import annotations

import csv
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main
from dpstudio.export import write_table
from dpstudio.recipe.model import Outputs, load_recipe

PAYLOADS = [
    "=1+1",
    "+1",
    "-1+2",
    "@SUM(A1)",
    '=HYPERLINK("http://x","c")',
    "\t=1",
    "\r=2+2",
    "=cmd|' /C calc'!A0",
    "-2",
    "+44 20 7946 0000",
    "@user",
    "=1+1\r\n=2+2",
    "\uff1d1+1",  # full-width =
    "\uff0b1",
    "\uff0d1+2",
    "\uff20SUM(A1)",
]
# no trigger at the start, but a CR inside: it must stay one cell of one row
HARMLESS = ["a\r=2+2", "plain", "x\n@y", "1=1"]
TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
SEP = {"csv": ",", "tsv": "\t"}


def _frame() -> pd.DataFrame:
    values = PAYLOADS + HARMLESS
    n = len(values)
    cols = {
        "text": pd.Series(values, dtype="str"),
        "cat": pd.Categorical(values),  # what randomised response writes
        "mixed": pd.Series([-(i + 1) if i % 2 else v for i, v in enumerate(values)], dtype=object),
        "num": np.arange(n) - 5,  # negative numbers: numbers, not formulas
    }
    # every payload is also a column name
    cols.update({p: [f"v{i}"] * n for i, p in enumerate(PAYLOADS)})
    return pd.DataFrame(cols)


def _expected(v):
    return "'" + v if isinstance(v, str) and v.startswith(TRIGGERS) else v


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _read_delimited(path, fmt):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh, delimiter=SEP[fmt]))


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_delimited_text_is_protected(tmp_path, fmt):
    frame = _frame()
    path = tmp_path / f"o.{fmt}"
    write_table(frame, path)  # protection is on by default; format from the name
    rows = _read_delimited(path, fmt)
    assert len(rows) == len(frame) + 1  # no value split a row
    assert all(len(r) == frame.shape[1] for r in rows)  # and TSV really is tab-separated
    for r in rows:
        for cell in r:
            assert _is_number(cell) or not cell.startswith(TRIGGERS), (cell, r)
    assert rows[0] == [_expected(str(c)) for c in frame.columns]
    body = pd.DataFrame(rows[1:], columns=list(frame.columns))
    assert body["text"].tolist() == [_expected(v) for v in frame["text"]]
    assert body["cat"].tolist() == [_expected(v) for v in frame["cat"]]
    assert body["mixed"].tolist() == [str(_expected(v)) for v in frame["mixed"]]
    assert body["num"].tolist() == [str(v) for v in frame["num"]]  # -5 stays -5
    assert body["mixed"].iloc[1] == "-2"  # a negative number in an object column: not quoted


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_delimited_protection_off_is_verbatim(tmp_path, fmt):
    frame = _frame()
    path = tmp_path / f"o.{fmt}"
    write_table(frame, path, formula_protection=False)
    rows = _read_delimited(path, fmt)
    assert len(rows) == len(frame) + 1 and all(len(r) == frame.shape[1] for r in rows)
    assert rows[0] == [str(c) for c in frame.columns]
    body = pd.DataFrame(rows[1:], columns=list(frame.columns))
    assert body["text"].tolist() == list(frame["text"])
    assert body["cat"].tolist() == list(frame["cat"])


def test_tsv_separator_comes_from_the_format_not_the_temporary_name(tmp_path):
    """The ledger writes to a temporary name and passes the format: TSV must stay TSV."""
    tmp = tmp_path / ".out.tsv.1234.dpsrel"
    write_table(pd.DataFrame({"a": ["x,y", "z"], "b": [1, 2]}), tmp, fmt="tsv")
    with open(tmp, newline="") as fh:
        assert list(csv.reader(fh, delimiter="\t")) == [["a", "b"], ["x,y", "1"], ["z", "2"]]


def _xml(text: str) -> str:
    """XML turns a CR into a LF; an XLSX string is otherwise exactly what was written."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _sheet_xml(path) -> str:
    with zipfile.ZipFile(path) as z:
        return "".join(z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/"))


@pytest.mark.parametrize("protect", [True, False])
def test_xlsx_never_holds_a_formula(tmp_path, protect):
    from openpyxl import load_workbook

    frame = _frame()
    path = tmp_path / "o.xlsx"
    write_table(frame, path, formula_protection=protect)
    assert "<f>" not in _sheet_xml(path)  # no formula element at all, header included
    ws = load_workbook(path).active
    rows = list(ws.iter_rows())
    assert len(rows) == len(frame) + 1 and all(len(r) == frame.shape[1] for r in rows)
    header = [c.value for c in rows[0]]
    names = [str(c) for c in frame.columns]
    assert header == [_xml(_expected(n) if protect else n) for n in names]
    assert all(c.data_type == "s" for c in rows[0])
    text_cols = [0, 1, 2] + list(range(4, frame.shape[1]))
    for i, r in enumerate(rows[1:]):
        for j in text_cols:
            cell = r[j]
            if not isinstance(frame.iloc[i, j], str):
                continue
            assert cell.data_type == "s"
            want = _expected(frame.iloc[i, j]) if protect else frame.iloc[i, j]
            assert cell.value == _xml(want)
            if protect:
                assert not cell.value.startswith(TRIGGERS)
        assert r[3].data_type == "n" and r[3].value == frame["num"].iloc[i]  # numbers stay numbers
    assert rows[2][2].value == -2 and rows[2][2].data_type == "n"  # number in an object column


def test_recipe_default_and_opt_out(tmp_path, capsys):
    assert Outputs().formula_protection is True
    data = tmp_path / "d.csv"
    pd.DataFrame({"answer": ["=1+1", "+1"] * 20, "n": range(40)}).to_csv(data, index=False)
    on, off = tmp_path / "on.json", tmp_path / "off.json"
    # exit 3: written, with problems to fix (no domains given); the option is recorded either way
    assert main(["recipe", "init", str(data), "-o", str(on)]) == 3
    assert main(["recipe", "init", str(data), "-o", str(off), "--no-formula-protection"]) == 3
    assert json.loads(on.read_text())["outputs"]["formula_protection"] is True
    assert json.loads(off.read_text())["outputs"]["formula_protection"] is False
    assert load_recipe(off).outputs.formula_protection is False
    # a hand-written recipe that does not say: protected
    blob = json.loads(on.read_text())
    del blob["outputs"]["formula_protection"]
    on.write_text(json.dumps(blob))
    assert load_recipe(on).outputs.formula_protection is True


def _e2e_recipe(tmp_path, *extra):
    """A release whose randomised-response categories and a passed-through column name are payloads."""
    cats = ["=1+1", "+1", "-1+2", "@SUM(A1)"]
    data = tmp_path / "d.csv"
    n = 80
    pd.DataFrame(
        {
            '@HYPERLINK("http://x","c")': [f"t{i}" for i in range(n)],
            "answer": [cats[i % 4] for i in range(n)],
            "income": np.arange(n) % 50 - 25,
        }
    ).to_csv(data, index=False)
    recipe = tmp_path / "r.json"
    assert (
        main(
            [
                "recipe",
                "init",
                str(data),
                "-o",
                str(recipe),
                "--epsilon",
                "2",
                "--role",
                '@HYPERLINK("http://x","c")=public',
                "--role",
                "answer=sensitive",
                "--role",
                "income=sensitive",
                "--categories",
                "answer=" + ",".join(cats),
                "--bounds",
                "income=-25:25",
                *extra,
            ]
        )
        == 0
    )
    return recipe, cats


@pytest.mark.parametrize("ext", ["tsv", "xlsx"])
def test_release_path_protects_randomised_categories_and_names(tmp_path, capsys, ext):
    recipe, cats = _e2e_recipe(tmp_path)
    out = tmp_path / f"out.{ext}"
    assert main(["release", str(recipe), "--output", str(out)]) == 0  # through the ledger's temp file
    if ext == "tsv":
        rows = _read_delimited(out, "tsv")
    else:
        from openpyxl import load_workbook

        assert "<f>" not in _sheet_xml(out)
        rows = [[c.value for c in r] for r in load_workbook(out).active.iter_rows()]
    assert rows[0] == ["'" + '@HYPERLINK("http://x","c")', "answer", "income"]
    assert len(rows) == 81 and all(len(r) == 3 for r in rows)
    answers = {r[1] for r in rows[1:]}
    assert answers and answers <= {"'" + c for c in cats}
    assert any(str(r[2]).startswith("-") for r in rows[1:])  # negative numbers written as numbers


def test_release_path_honours_opt_out(tmp_path, capsys):
    recipe, cats = _e2e_recipe(tmp_path, "--no-formula-protection")
    out = tmp_path / "out.csv"
    assert main(["release", str(recipe), "--output", str(out)]) == 0
    rows = _read_delimited(out, "csv")
    assert rows[0][0] == '@HYPERLINK("http://x","c")'
    assert {r[1] for r in rows[1:]} <= set(cats)
