"""Reading a table in blocks (dpstudio.engine.data.stream) and the per-block random streams."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.data.loader import load_table
from dpstudio.engine.data.stream import open_stream, uniform_sample
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError


def _frame(n=2500):
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "n": rng.integers(0, 100, n),
            "x": rng.normal(size=n),
            "c": rng.choice(["a", "b", "NA", ""], n),
            "z": rng.choice(["025", "111"], n),
            "t": rng.choice(["true", "false"], n),
        }
    )


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_blocks_have_the_asked_size_and_the_loaded_values(tmp_path, ext):
    path = tmp_path / f"t.{ext}"
    df = _frame()
    df.to_csv(path, index=False) if ext == "csv" else df.to_parquet(path)
    whole = load_table(path).frame
    stream = open_stream(path, declared={"n": "integer", "x": "float", "c": "categorical", "t": "boolean"})
    blocks = list(stream.blocks(rows=1000))
    assert [len(b) for b in blocks] == [1000, 1000, 500]
    assert stream.count_rows() == 2500
    got = pd.concat(blocks, ignore_index=True)
    for col in whole.columns:
        a, b = whole[col], got[col]
        assert a.isna().sum() == b.isna().sum(), col
        assert (a.astype(str)[a.notna()] == b.astype(str)[b.notna()]).all(), col
    assert got["n"].dtype == np.int64  # integer-declared, read as float64 per block, back to integers


def test_a_declared_type_holds_for_every_block(tmp_path):
    """A column that reads as integers in the first block and has a fraction later still streams."""
    path = tmp_path / "t.csv"
    n = np.arange(30000).astype(float)
    n[-1] = 0.5
    pd.DataFrame({"n": n}).to_csv(path, index=False)
    blocks = list(open_stream(path, declared={"n": "float"}).blocks(rows=10000))
    assert sum(len(b) for b in blocks) == 30000 and blocks[-1]["n"].iloc[-1] == 0.5


def test_only_csv_and_parquet_stream(tmp_path):
    _frame(10).to_excel(tmp_path / "t.xlsx", index=False)
    with pytest.raises(UserError, match="cannot be read in blocks"):
        open_stream(tmp_path / "t.xlsx")


def test_a_uniform_sample_in_file_order(tmp_path):
    path = tmp_path / "t.parquet"
    df = _frame(5000).assign(i=np.arange(5000))
    df.to_parquet(path)
    s = uniform_sample(open_stream(path), 300, seed=1)
    assert len(s) == 300 and s["i"].is_monotonic_increasing and s["i"].is_unique
    # every part of the file is represented (a prefix would hold only i < 300)
    assert s["i"].max() > 4000 and s["i"].min() < 1000
    assert len(uniform_sample(open_stream(path), 10_000)) == 5000


def test_streams_are_keyed_by_block_and_independent_of_earlier_draws():
    a, b = RandomSource(5), RandomSource(5)
    b.uint64(1000)  # the root's own draws do not move a block's stream
    assert np.array_equal(a.stream(1, 3).uint64(10), b.stream(1, 3).uint64(10))
    assert not np.array_equal(a.stream(1, 3).uint64(10), a.stream(1, 4).uint64(10))
    assert not np.array_equal(a.stream(1, 3).uint64(10), a.stream(2, 3).uint64(10))
    assert RandomSource(None).stream(1, 0).secure
    with pytest.raises(ValueError):
        a.stream(-1)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_the_block_writer_writes_in_order_and_reports_a_late_error(tmp_path, fmt):
    from dpstudio.export import BlockWriter

    frame = _frame(900)
    path = tmp_path / f"o.{fmt}"
    with BlockWriter(path, fmt, background=True) as w:
        for i in range(0, 900, 200):
            w.write(frame.iloc[i : i + 200])
    back = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    assert len(back) == 900 and back["x"].round(6).tolist() == frame["x"].round(6).tolist()
    # a block the file cannot take fails the write (on the writer thread), and the caller hears it
    with (
        pytest.raises((ValueError, TypeError, OSError)),
        BlockWriter(tmp_path / "bad.parquet", "parquet", background=True) as w,
    ):
        w.write(pd.DataFrame({"a": [1, 2]}))
        w.write(pd.DataFrame({"a": ["x", "y"]}))
        w.write(pd.DataFrame({"a": [3]}))
