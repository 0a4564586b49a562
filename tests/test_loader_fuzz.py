"""Fuzz load_table: whatever the bytes, the result is a LoadedTable or a one-line UserError.

Why: users point the tool at arbitrary files; a raw pyarrow/pandas traceback (or a crash in
our own detection code) is a bug.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpstudio.engine.data.loader import LoadedTable, load_table
from dpstudio.errors import UserError

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _check(fuzz_dir: Path, data: bytes, suffix: str = ".csv") -> None:
    p = fuzz_dir / f"fuzz{suffix}"
    p.write_bytes(data)
    try:
        out = load_table(p)
    except UserError as e:
        msg = str(e)
        assert msg and "\n" not in msg, msg
        return
    assert isinstance(out, LoadedTable)
    assert out.frame.shape[0] > 0 and out.frame.shape[1] > 0
    assert len(set(map(str, out.frame.columns))) == out.frame.shape[1]


@SETTINGS
@given(st.binary(max_size=2048))
def test_random_bytes(fuzz_dir, data):
    _check(fuzz_dir, data)


_cell = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "NA", "null", "true", "False", '"', '""', "'", "2020-01-01", "é", "日本"]),
)


@st.composite
def csv_like(draw):
    delim = draw(st.sampled_from([",", ";", "\t", "|", " "]))
    ncols = draw(st.integers(1, 5))
    nrows = draw(st.integers(0, 8))
    ragged = draw(st.booleans())
    rows = []
    for _ in range(nrows + 1):
        n = ncols + (draw(st.integers(-1, 1)) if ragged else 0)
        cells = [draw(_cell) for _ in range(max(n, 0))]
        if draw(st.booleans()):
            cells = ['"' + c.replace('"', '""') + '"' for c in cells]
        rows.append(delim.join(cells))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join(rows) + draw(st.sampled_from(["", newline]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "cp1252", "shift_jis", "utf-16"]))
    return text.encode(encoding, errors="replace")


@SETTINGS
@given(csv_like())
def test_random_csv_like_text(fuzz_dir, data):
    _check(fuzz_dir, data)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512), st.sampled_from([".parquet", ".xlsx", ".dta", ".xpt", ".tsv"]))
def test_random_bytes_other_formats(fuzz_dir, data, suffix):
    _check(fuzz_dir, data, suffix)
