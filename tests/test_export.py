"""Atomic writes and spreadsheet-formula protection of dpstudio.export."""

from __future__ import annotations

import pandas as pd
import pytest

from dpstudio.engine.progress import Cancelled, CancelToken
from dpstudio.errors import UserError
from dpstudio.export import atomic_path, file_sha256, protect_formulas, write_table, write_text

RISKY = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "plain"]


def _files(folder):
    return sorted(p.name for p in folder.iterdir())


def test_writer_raising_midway_leaves_nothing(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half a file")
            raise RuntimeError("boom")
    assert _files(tmp_path) == []


def test_failure_keeps_previous_file_intact(tmp_path):
    target = tmp_path / "out.csv"
    write_text("old", target)
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("new but broken")
            raise RuntimeError("boom")
    assert target.read_text() == "old" and _files(tmp_path) == ["out.csv"]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "xlsx"])
def test_cancel_leaves_no_file(tmp_path, fmt):
    tok = CancelToken()
    tok.cancel()
    with pytest.raises(Cancelled):
        write_table(pd.DataFrame({"a": range(100)}), tmp_path / f"out.{fmt}", cancel=tok)
    assert _files(tmp_path) == []


def test_missing_folder_and_directory_target(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        write_text("x", tmp_path / "nope" / "out.csv")
    with pytest.raises(UserError, match="directory"):
        write_text("x", tmp_path)


def test_sha256_matches_file(tmp_path):
    digest = write_table(pd.DataFrame({"a": [1, 2]}), tmp_path / "a.csv")
    assert digest == file_sha256(tmp_path / "a.csv")


def test_xlsx_stores_formulas_as_text(tmp_path):
    from openpyxl import load_workbook

    frame = pd.DataFrame({"t": RISKY, "n": range(len(RISKY))})
    write_table(frame, tmp_path / "o.xlsx", formula_protection=False)
    ws = load_workbook(tmp_path / "o.xlsx").active
    cells = [ws.cell(row=i + 2, column=1) for i in range(len(RISKY))]
    assert [c.value for c in cells] == RISKY
    assert all(c.data_type == "s" for c in cells)
    assert ws.cell(row=2, column=2).data_type == "n"
    write_table(frame, tmp_path / "p.xlsx")  # protected by default
    ws = load_workbook(tmp_path / "p.xlsx").active
    assert [ws.cell(row=i + 2, column=1).value for i in range(len(RISKY))] == ["'" + v for v in RISKY[:4]] + ["plain"]


def test_csv_formula_protection(tmp_path):
    frame = pd.DataFrame({"t": RISKY, "n": [1, 2, 3, 4, 5]})
    write_table(frame, tmp_path / "p.csv")  # on by default
    back = pd.read_csv(tmp_path / "p.csv", dtype=str)
    assert list(back["t"]) == ["'" + v for v in RISKY[:4]] + ["plain"]
    write_table(frame, tmp_path / "u.csv", formula_protection=False)
    assert list(pd.read_csv(tmp_path / "u.csv", dtype=str)["t"]) == RISKY
    assert protect_formulas(pd.DataFrame({"x": [1.0, -2.0]}))["x"].tolist() == [1.0, -2.0]  # numbers untouched


def test_protection_keeps_duplicate_names_and_colliding_categories(tmp_path):
    frame = pd.DataFrame([["=a", "b"]], columns=["x", "x"])
    assert protect_formulas(frame).values.tolist() == [["'=a", "b"]]
    # a category already spelled with the quote: two equal names cannot share a dictionary, so the
    # column is written as plain text (the ambiguity is the quote rule's own)
    cat = pd.DataFrame({"c": pd.Categorical(["=x", "'=x", "y"])})
    assert protect_formulas(cat)["c"].tolist() == ["'=x", "'=x", "y"]


def test_xlsx_control_character_is_refused_by_position(tmp_path):
    frame = pd.DataFrame({"name": ["ok", "SECRET\x01VALUE"]})
    with pytest.raises(UserError) as e:
        write_table(frame, tmp_path / "o.xlsx")
    assert "data row 2 of column 'name'" in str(e.value) and "SECRET" not in str(e.value)
    assert _files(tmp_path) == []


def test_parquet_has_no_pandas_metadata(tmp_path):
    import pyarrow.parquet as pq

    frame = pd.DataFrame({"a": [1.5, 2.5], "b": ["x", "y"]}, index=pd.Index([1001, 1002], name="raw_row_id"))
    write_table(frame, tmp_path / "o.parquet")
    f = pq.ParquetFile(tmp_path / "o.parquet")
    meta = f.schema_arrow.metadata or {}
    assert b"pandas" not in meta
    assert f.schema_arrow.names == ["a", "b"]
    blob = b"".join(k + v for k, v in meta.items())
    assert b"raw_row_id" not in blob and b"1001" not in blob
    assert (tmp_path / "o.parquet").read_bytes().find(b"raw_row_id") == -1
