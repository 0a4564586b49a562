"""Tests for dpstudio.engine.data.loader: formats, encodings, dialects and every bad input."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpstudio.engine.data.loader import LoadedTable, fingerprint, load_table
from dpstudio.engine.data.schema import NUMBERS_ARE_DOUBLES
from dpstudio.engine.progress import Cancelled, CancelToken
from dpstudio.errors import UserError

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
if not DATASETS.exists():
    DATASETS = Path("/work/shared/datasets")


def write(tmp_path: Path, name: str, data: bytes | str, encoding: str = "utf-8") -> Path:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode(encoding))
    return p


def assert_one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert msg and "\n" not in msg, msg
    assert "Traceback" not in msg
    return msg


# --------------------------------------------------------------------------- basics
def test_fingerprint_matches_hashlib(tmp_path):
    data = os.urandom(3 * (1 << 20) + 123)  # spans several 1 MiB chunks
    p = write(tmp_path, "x.bin", data)
    assert fingerprint(p) == hashlib.sha256(data).hexdigest()


def test_loaded_table_fields_and_json_options(tmp_path):
    p = write(tmp_path, "a.csv", "a,b,c\n1,2.5,x\n2,3.5,y\n")
    progress = []
    lt = load_table(p, progress=lambda f, m="": progress.append(f))
    assert isinstance(lt, LoadedTable)
    assert lt.format == "csv" and lt.path == str(p)
    assert lt.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert list(lt.frame.columns) == ["a", "b", "c"]
    assert lt.frame["a"].dtype == np.int64 and lt.frame["b"].dtype == np.float64
    assert lt.frame["c"].dtype == "str"  # pandas 3 str dtype, not object
    json.dumps(lt.options)
    assert lt.options == {"delimiter": ",", "encoding": "utf-8", "header": True, "quotechar": '"'}
    assert progress[0] == 0.0 and progress[-1] == 1.0
    assert progress == sorted(progress)


def test_cancel_is_checked(tmp_path):
    p = write(tmp_path, "a.csv", "a,b\n1,2\n")
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        load_table(p, cancel=token)


def test_missing_values_match_pandas(tmp_path):
    p = write(tmp_path, "m.csv", "n,s,f\n1,,1.5\n,NA,\n3,x,2.5\n")
    df = load_table(p).frame
    assert df["n"].isna().tolist() == [False, True, False]
    assert df["s"].isna().tolist() == [True, True, False]
    assert df["f"].isna().tolist() == [False, True, False]


def test_dates_become_datetime64(tmp_path):
    p = write(tmp_path, "d.csv", "d,v\n2020-01-01,1\n2021-12-31,2\n")
    df = load_table(p).frame
    assert pd.api.types.is_datetime64_any_dtype(df["d"])


def test_shared_datasets_load():
    for f in sorted(DATASETS.glob("*/*.csv")):
        lt = load_table(f)
        assert len(lt.frame) > 100 and lt.options["delimiter"] == ","


# --------------------------------------------------------------------------- encodings
TEXT = "name,city,note\nRené,Zürich,é ü ß\nÅsa,Köln,naïve café\nBjörk,Málaga,crème brûlée\n"
JP = "名前,都市,メモ\n山田太郎,東京,日本語のテキスト\n鈴木花子,大阪,こんにちは\n佐藤,京都,カタカナ\n"


@pytest.mark.parametrize(
    "text,encoding,expected",
    [
        (TEXT, "utf-8", "utf-8"),
        (TEXT, "utf-8-sig", "utf-8-sig"),
        (TEXT, "cp1252", "cp1252"),
        (JP, "utf-8", "utf-8"),
        (JP, "shift_jis", "shift_jis"),
    ],
)
def test_encoding_detection(tmp_path, text, encoding, expected):
    p = write(tmp_path, "e.csv", text, encoding)
    lt = load_table(p)
    assert lt.options["encoding"] == expected
    expected_frame = pd.read_csv(p, encoding=encoding)
    assert list(lt.frame.columns) == list(expected_frame.columns)
    assert lt.frame.astype(str).values.tolist() == expected_frame.astype(str).values.tolist()
    first = text.splitlines()[1].split(",")[0]
    assert lt.frame.iloc[0, 0] == first


def test_cp1252_text_that_also_decodes_as_shift_jis(tmp_path):
    # "résumé" has é followed by an ASCII letter: valid Shift_JIS bytes, but not Japanese
    p = write(tmp_path, "r.csv", "word,n\nrésumé,1\nélan,2\n", "cp1252")
    lt = load_table(p)
    assert lt.options["encoding"] == "cp1252"
    assert lt.frame["word"].tolist() == ["résumé", "élan"]


def test_encoding_option_overrides_detection(tmp_path):
    p = write(tmp_path, "o.csv", "a,b\nx,é\n", "latin-1")
    lt = load_table(p, {"encoding": "latin-1"})
    assert lt.options["encoding"] == "iso8859-1"
    assert lt.frame["b"].tolist() == ["é"]


def test_non_utf8_beyond_the_sample_is_a_clear_error(tmp_path):
    body = "a,b\n" + "x,1\n" * 300_000  # > 1 MiB of ASCII, then a cp1252 byte
    p = write(tmp_path, "late.csv", body.encode() + "é,2\n".encode("cp1252"))
    with pytest.raises(UserError, match="encoding") as e:
        load_table(p)
    assert_one_line(e)
    lt = load_table(p, {"encoding": "cp1252"})
    assert lt.frame["a"].iloc[-1] == "é"


# --------------------------------------------------------------------------- dialects
@pytest.mark.parametrize("delim", [",", ";", "\t", "|"])
def test_delimiters(tmp_path, delim):
    rows = [["id", "x", "label"], ["1", "2.5", "a b"], ["2", "3.5", "c"], ["3", "4.5", "d"]]
    p = write(tmp_path, "d.csv", "\n".join(delim.join(r) for r in rows) + "\n")
    lt = load_table(p)
    assert lt.options["delimiter"] == delim
    assert list(lt.frame.columns) == ["id", "x", "label"]
    assert lt.frame["x"].tolist() == [2.5, 3.5, 4.5]


def test_tsv_extension(tmp_path):
    p = write(tmp_path, "d.tsv", "a\tb\n1\t2\n")
    assert load_table(p).options["delimiter"] == "\t"


def test_semicolon_with_decimal_commas_in_quotes(tmp_path):
    p = write(tmp_path, "eu.csv", 'name;amount\n"Müller, A.";"1,5"\n"Roth";"2,0"\n')
    lt = load_table(p)
    assert lt.options["delimiter"] == ";"
    assert lt.frame["name"].tolist() == ["Müller, A.", "Roth"]


def test_quoted_fields_with_delimiters_and_newlines(tmp_path):
    text = 'id,comment,n\n1,"hello, world",3\n2,"line one\nline two",4\n3,"say ""hi""",5\n'
    lt = load_table(write(tmp_path, "q.csv", text))
    assert lt.frame["comment"].tolist() == ["hello, world", "line one\nline two", 'say "hi"']
    assert lt.frame["n"].tolist() == [3, 4, 5]


def test_quoted_newline_beyond_sample(tmp_path):
    body = "id,comment\n" + "".join(f"{i},plain\n" for i in range(150_000))
    body += '150000,"two\nlines"\n'
    lt = load_table(write(tmp_path, "q2.csv", body))
    assert lt.frame["comment"].iloc[-1] == "two\nlines"
    assert len(lt.frame) == 150_001


def test_single_quote_char(tmp_path):
    text = "a,b\n'x, y',1\n'z',2\n'w, v',3\n"
    lt = load_table(write(tmp_path, "sq.csv", text))
    assert lt.options["quotechar"] == "'"
    assert lt.frame["a"].tolist() == ["x, y", "z", "w, v"]


def test_headerless_numeric_file(tmp_path):
    lt = load_table(write(tmp_path, "h.csv", "1,2,3\n4,5,6\n"))
    assert lt.options["header"] is False
    assert list(lt.frame.columns) == ["column_1", "column_2", "column_3"]
    assert len(lt.frame) == 2


def test_options_override_header_and_delimiter(tmp_path):
    p = write(tmp_path, "o.csv", "a;b\nc;d\n")
    lt = load_table(p, {"header": False, "delimiter": ";"})
    assert lt.options["header"] is False and lt.frame.shape == (2, 2)
    lt = load_table(p, {"delimiter": ","})
    assert lt.frame.shape == (1, 1)


def test_unknown_option(tmp_path):
    with pytest.raises(UserError, match="unknown load option") as e:
        load_table(write(tmp_path, "a.csv", "a\n1\n"), {"delimter": ","})
    assert_one_line(e)


def test_single_column(tmp_path):
    lt = load_table(write(tmp_path, "one.csv", "value\n1\n2\n3\n"))
    assert list(lt.frame.columns) == ["value"] and len(lt.frame) == 3


def test_type_change_late_in_file_falls_back_gracefully(tmp_path):
    body = "a,b\n" + "1,2\n" * 500_000 + "oops,3\n"
    lt = load_table(write(tmp_path, "late.csv", body))
    assert len(lt.frame) == 500_001 and lt.frame["a"].iloc[-1] == "oops"


def test_field_larger_than_a_block_loads(tmp_path):
    big = "x" * (9 << 20)  # bigger than the fast-path block: exercises the resize retry
    lt = load_table(write(tmp_path, "big.csv", f"a,b\n1,{big}\n2,y\n"))
    assert len(lt.frame["b"].iloc[0]) == len(big)


def test_100mb_field_is_a_clear_error(tmp_path):
    p = tmp_path / "huge.csv"
    chunk = b"x" * (1 << 20)
    with open(p, "wb") as fh:  # written in 1 MiB chunks: never 100 MB in memory
        fh.write(b"a,b\n1,")
        for _ in range(100):
            fh.write(chunk)
        fh.write(b"\n2,y\n")
    with pytest.raises(UserError, match="larger than 64 MiB") as e:
        load_table(p)
    assert_one_line(e)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "name,data,pattern",
    [
        ("empty.csv", b"", "is empty"),
        ("blank.csv", b"\n\n  \n", "is empty"),
        ("header.csv", b"a,b,c\n", "no data rows"),
        ("ragged.csv", b"a,b\n1,2\n3,4,5\n", "ragged rows"),
        ("short.csv", b"a,b,c\n1,2,3\n4,5\n", "ragged rows"),
        ("dup.csv", b"a,b,a\n1,2,3\n", "duplicate column name 'a'"),
        ("emptyname.csv", b"a,,c\nx,y,z\n", "empty name"),
        ("junk.csv", bytes(range(256)) * 40, "binary"),
        ("zip.csv", b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + os.urandom(2000), "binary"),
        ("data.json", b'{"a": 1}', "unsupported file type"),
        ("noext", b"a,b\n1,2\n", "unsupported file type"),
        ("bad.parquet", b"PAR1 this is not parquet", "cannot read .* as parquet"),
        ("bad.xlsx", b"not a zip at all", "cannot read .* as an Excel workbook"),
        ("bad.dta", b"\x00\x01garbage" * 10, "cannot read .* as a Stata file"),
        ("bad.sas7bdat", b"\x00" * 2000, "cannot read .* as a SAS7BDAT file"),
        ("bad.xpt", b"HEADER RECORD garbage" * 10, "cannot read .* as a SAS transport"),
    ],
)
def test_bad_inputs(tmp_path, name, data, pattern):
    p = write(tmp_path, name, data)
    with pytest.raises(UserError, match=pattern) as e:
        load_table(p)
    msg = assert_one_line(e)
    assert name in msg  # the message quotes the file


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="file not found") as e:
        load_table(tmp_path / "nope.csv")
    assert_one_line(e)
    with pytest.raises(UserError, match="file not found") as e:
        load_table(tmp_path / "two\nlines.csv")  # control characters in a path stay escaped
    assert_one_line(e)


def test_directory(tmp_path):
    d = tmp_path / "dir.csv"
    d.mkdir()
    with pytest.raises(UserError, match="is a directory") as e:
        load_table(d)
    assert_one_line(e)


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root can read anything")
def test_unreadable_file(tmp_path):
    p = write(tmp_path, "secret.csv", "a\n1\n")
    p.chmod(0)
    try:
        with pytest.raises(UserError, match="permission denied") as e:
            load_table(p)
        assert_one_line(e)
    finally:
        p.chmod(0o600)


def test_unreadable_file_simulated(tmp_path, monkeypatch):
    """Runs even as root: open() raising PermissionError must become a UserError."""
    p = write(tmp_path, "secret.csv", "a\n1\n")
    import builtins

    real_open = builtins.open

    def fake_open(f, *a, **k):
        if str(f) == str(p):
            raise PermissionError(13, "Permission denied", str(f))
        return real_open(f, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    with pytest.raises(UserError, match="permission denied") as e:
        load_table(p)
    assert_one_line(e)


# --------------------------------------------------------------------------- other formats
def sample_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "score": [1.5, 2.5, np.nan, 4.0],
            "city": ["Zürich", "東京", "Köln", "Paris"],
        }
    )


def test_parquet(tmp_path):
    df = sample_frame()
    p = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), p)
    lt = load_table(p)
    assert lt.format == "parquet"
    assert lt.frame["city"].dtype == "str"
    pd.testing.assert_frame_equal(lt.frame, df, check_dtype=False)
    p2 = tmp_path / "t.pq"
    p2.write_bytes(p.read_bytes())
    assert load_table(p2).format == "parquet"


def test_parquet_duplicate_columns(tmp_path):
    t = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    p = tmp_path / "dup.parquet"
    pq.write_table(t, p)
    with pytest.raises(UserError, match="duplicate column name 'a'"):
        load_table(p)


def test_parquet_no_rows(tmp_path):
    p = tmp_path / "none.parquet"
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), p)
    with pytest.raises(UserError, match="no data rows"):
        load_table(p)


def test_xlsx(tmp_path):
    df = sample_frame()
    p = tmp_path / "t.xlsx"
    with pd.ExcelWriter(p, engine="openpyxl") as xw:
        df.to_excel(xw, sheet_name="first", index=False)
        df.head(2).to_excel(xw, sheet_name="second", index=False)
    lt = load_table(p)
    assert lt.format == "xlsx" and lt.options == {"sheet": "first", "header": True}
    assert lt.frame["id"].dtype == np.int64
    assert lt.frame["city"].tolist() == df["city"].tolist()
    assert lt.frame["score"].isna().sum() == 1
    assert len(load_table(p, {"sheet": "second"}).frame) == 2
    assert len(load_table(p, {"sheet": 1}).frame) == 2
    with pytest.raises(UserError, match="no sheet 'third'"):
        load_table(p, {"sheet": "third"})


def test_xlsx_duplicate_and_empty_headers(tmp_path):
    import openpyxl

    for header, pattern in ((["a", "a"], "duplicate"), (["a", None, "c"], "empty name")):
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.append(header)
        ws.append([1] * len(header))
        p = tmp_path / f"h{len(header)}.xlsx"
        wb.save(p)
        with pytest.raises(UserError, match=pattern):
            load_table(p)


def test_xlsx_empty_sheet(tmp_path):
    import openpyxl

    p = tmp_path / "empty.xlsx"
    openpyxl.Workbook().save(p)
    with pytest.raises(UserError, match="empty"):
        load_table(p)


def test_stata(tmp_path):
    df = sample_frame()
    p = tmp_path / "t.dta"
    df.to_stata(p, write_index=False, version=118)
    lt = load_table(p)
    assert lt.format == "stata"
    assert lt.frame["city"].tolist() == df["city"].tolist()
    assert lt.frame["city"].dtype == "str"
    assert lt.frame["id"].tolist() == [1, 2, 3, 4]


def test_xport(tmp_path):
    import pyreadstat  # the test extra's writer of SAS transport files

    df = pd.DataFrame({"id": [1.0, 2.0, 3.0], "city": ["Paris", "Lyon", "Nice"]})
    p = tmp_path / "t.xpt"
    pyreadstat.write_xport(df, str(p), file_format_version=5)  # pandas reads v5
    lt = load_table(p)
    assert lt.format == "xport"
    assert lt.frame["city"].tolist() == ["Paris", "Lyon", "Nice"]
    assert lt.frame["id"].tolist() == [1.0, 2.0, 3.0]


SAS_FIXTURE = Path(__file__).parent / "data" / "sas" / "file1.sas7bdat"


def test_sas7bdat_real_file():
    """A file written by SAS itself (see tests/data/sas/README.md): strings decoded with the
    encoding the file records, dates as datetimes, numbers as SAS's doubles."""
    lt = load_table(SAS_FIXTURE)
    assert lt.format == "sas7bdat" and lt.options == {"encoding": "infer"}
    assert lt.sha256 == hashlib.sha256(SAS_FIXTURE.read_bytes()).hexdigest()
    f = lt.frame
    assert list(f.columns) == ["integer_row", "text_row", "float_row", "date_row"]
    assert f["integer_row"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert f["float_row"].tolist() == [2.5, 17.23, 3.21, 100.9, 98.6]
    assert f["text_row"].tolist()[:2] == ["Some text", "Some more text"]  # str, not bytes
    assert pd.api.types.is_string_dtype(f["text_row"])
    assert f["date_row"].dt.strftime("%Y-%m-%d").tolist() == [
        "2018-01-02",
        "2018-02-05",
        "2017-11-21",
        "2016-05-19",
        "1999-10-25",
    ]
    assert f.attrs[NUMBERS_ARE_DOUBLES]  # so inference may call integral doubles integers


def test_sas7bdat_not_sas(tmp_path):
    """A file named .sas7bdat that is not one gets a clear SAS-specific error."""
    p = write(tmp_path, "t.sas7bdat", b"not really sas" * 100)
    with pytest.raises(UserError, match="SAS7BDAT") as e:
        load_table(p)
    assert_one_line(e)


def test_bad_option_values(tmp_path):
    p = write(tmp_path, "a.csv", "a,b\n1,2\n")
    for opts, pattern in (
        ({"header": "yes"}, "header option"),
        ({"delimiter": ",,"}, "delimiter"),
        ({"encoding": "klingon"}, "unknown encoding"),
        ({"max_field_mb": -1}, "max_field_mb"),
    ):
        with pytest.raises(UserError, match=pattern) as e:
            load_table(p, opts)
        assert_one_line(e)


@pytest.mark.parametrize("text,encoding", [(TEXT, "cp1252"), (JP, "shift_jis"), ("a;b\n'x;y';1\n'z';2\n", "utf-8")])
def test_resolved_options_replay_the_same_load(tmp_path, text, encoding):
    """A recipe stores LoadedTable.options and replays them: same frame, same options."""
    p = write(tmp_path, "r.csv", text, encoding)
    first = load_table(p)
    again = load_table(p, json.loads(json.dumps(first.options)))
    assert again.options == first.options
    pd.testing.assert_frame_equal(again.frame, first.frame)


def test_pandas_fallback_when_pyarrow_rejects(tmp_path, monkeypatch):
    """pyarrow is lenient enough that no small legal file trips it, so force the failure."""
    import pyarrow.csv as pacsv

    def refuse(*a, **k):
        raise pa.ArrowInvalid("CSV conversion error to int64: something odd")

    monkeypatch.setattr(pacsv, "read_csv", refuse)
    p = write(tmp_path, "f.csv", "a,b\n1,x\n2,\n")
    lt = load_table(p)
    assert lt.frame["a"].tolist() == [1, 2] and lt.frame["b"].isna().tolist() == [False, True]
    with pytest.raises(UserError, match="ragged rows") as e:
        load_table(write(tmp_path, "g.csv", "a,b\n1,2\n3,4,5\n"))
    assert_one_line(e)


def test_parquet_written_by_pandas_keeps_its_index_out_of_the_columns(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]}, index=pd.Index([10, 20, 30], name="key"))
    p = tmp_path / "indexed.parquet"
    df.to_parquet(p)
    frame = load_table(p).frame
    assert list(frame.columns) == ["a", "b"]
    assert frame.index.name == "key" and list(frame.index) == [10, 20, 30]
