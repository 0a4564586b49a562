"""The ledger's row sketch over a table read in batches (streamed releases) and over a Dask
DataFrame is bit for bit the in-memory :func:`row_sketch` (issue 20)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpstudio import ledger as ledger_mod
from dpstudio.errors import UserError
from dpstudio.ledger import Ledger, RowSketcher, row_sketch, table_sketches

KEY = bytes(range(32))


def _sketch_batches(batches, k=ledger_mod.SKETCH_K, **kw):
    with RowSketcher(KEY, k, **kw) as s:
        for b in batches:
            s.add(b)
        return (*s.finish(), s.column_sets)


def _pieces(frame: pd.DataFrame, cuts) -> list[pd.DataFrame]:
    bounds = [0, *sorted(cuts), len(frame)]
    return [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _assert_same(got, want):
    assert got[1] == want[1]
    assert got[0].dtype == np.uint64 and got[0].dtype == want[0].dtype
    assert np.array_equal(got[0], want[0])
    if len(got) == 3 and len(want) == 3:  # the column-set sketches too
        assert got[2].keys() == want[2].keys()
        for s, (ncols, values, counts) in want[2].items():
            assert got[2][s][0] == ncols and values.dtype == got[2][s][1].dtype == np.uint64
            assert np.array_equal(got[2][s][1], values) and np.array_equal(got[2][s][2], counts)


def _mixed(n: int, seed: int) -> pd.DataFrame:
    """Ints, floats with NaN, text with empty strings and missing cells, booleans; many copies."""
    rng = np.random.default_rng(seed)
    f = pd.DataFrame(
        {
            "age": rng.integers(0, 6, n),
            "score": rng.choice([0.5, 1.25, -3.0, np.nan], n),
            "town": pd.Series(rng.choice(["Oslo", "", " Bergen ", "x"], n), dtype="str"),
            "flag": rng.random(n) < 0.5,
        }
    )
    f.loc[rng.random(n) < 0.1, "town"] = np.nan
    return f


# ---- the cell hashes do not depend on a batch's dtype -------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (pd.Series([1, 2, 10**12, -5]), pd.Series([1.0, 2.0, 1e12, -5.0])),
        (pd.Series([1, 2, -5]), pd.Series([1, 2, -5], dtype="Int64")),
        (pd.Series([1, None], dtype="Int64"), pd.Series([1.0, np.nan])),
        (pd.Series([1, 7, -5]), pd.Series(["1", " 7", "-5"], dtype="str")),
        (pd.Series([0.1, 1.5, np.nan, 1e20]), pd.Series([0.1, 1.5, np.nan, 1e20], dtype=object)),
        (pd.Series([np.inf, -np.inf]), pd.Series(["inf", "-Infinity"], dtype="str")),
        (pd.Series([True, False]), pd.Series([True, False], dtype="boolean")),
        (pd.Series([True, False]), pd.Series(["True", "false"], dtype=object)),
        (pd.Series(["a", "", " b", np.nan], dtype="str"), pd.Series(["a", "", "b", None], dtype=object)),
        # ISO dates and times written as text: the streamed and Dask readers keep them as text
        (
            pd.Series(pd.to_datetime(["2024-01-05", "2023-12-31"])),
            pd.Series(["2024-01-05", " 2023-12-31"], dtype="str"),
        ),
        (
            pd.Series(pd.to_datetime(["2024-01-05 10:00", "2024-01-05 10:00:00.5"], format="ISO8601")),
            pd.Series(["2024-01-05T10:00:00", "2024-01-05 10:00:00.500"], dtype=object),
        ),
        (pd.Series(pd.to_datetime(["2024-01-05T08:00:00Z"])), pd.Series(["2024-01-05T10:00:00+02:00"], dtype="str")),
        # a batch in which a text column is all missing (read as float, or as text)
        (pd.Series([np.nan, np.nan]), pd.Series([np.nan, np.nan], dtype="str")),
        (pd.Series([np.nan, np.nan]), pd.Series([None, None], dtype=object)),
    ],
)
def test_cell_hashes_depend_on_values_not_on_the_batch_dtype(a, b):
    assert np.array_equal(ledger_mod._cell_hashes(a), ledger_mod._cell_hashes(b))


def test_an_all_missing_text_column_is_sketched():
    # used to fail (an index into the empty list of distinct values)
    f = pd.DataFrame({"a": [1, 2, 2], "t": pd.Series([np.nan] * 3, dtype="str")})
    sketch, n = row_sketch(f, KEY)
    assert n == 3 and len(sketch) == 3
    assert np.array_equal(sketch, row_sketch(f.assign(t=np.nan), KEY)[0])


# ---- RowSketcher == row_sketch -----------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "", "b", None]), st.booleans()), max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=6),
    k=st.sampled_from([1, 5, 256]),
    bucket_bytes=st.sampled_from([8, 64, 1 << 20]),
)
def test_batches_give_the_in_memory_sketch(rows, cuts, k, bucket_bytes):
    frame = pd.DataFrame(rows, columns=["n", "t", "b"])
    want = table_sketches(frame, KEY, k)
    got = _sketch_batches(_pieces(frame, [min(c, len(frame)) for c in cuts]), k, bucket_bytes=bucket_bytes)
    _assert_same(got, want)


@pytest.mark.parametrize("bucket_bytes", [1 << 30, 8 * 700, 8 * 3])
@pytest.mark.parametrize("k", [5, 256, 100_000])
def test_mixed_dtypes_duplicates_across_batches(bucket_bytes, k):
    frame = _mixed(3000, seed=1)
    frame = pd.concat([frame, frame.iloc[::7]], ignore_index=True)  # more copies, far apart
    want = table_sketches(frame, KEY, k)
    assert len(want[0]) == (k if k < 100_000 else len(np.unique(want[0])))
    cuts = np.random.default_rng(2).integers(0, len(frame), 9)
    pieces = _pieces(frame, cuts)
    pieces = [p[list(reversed(p.columns))] if i % 2 else p for i, p in enumerate(pieces)]  # column order varies
    _assert_same(_sketch_batches(pieces, k, bucket_bytes=bucket_bytes), want)


def test_batches_whose_dtypes_differ_for_the_same_column():
    frame = pd.DataFrame(
        {
            "count": [1, 2, 3, 3, 1, 2, 3, 7],
            "town": ["Oslo", "", "1", "1", "Oslo", None, "2", "Oslo"],
            "ok": [True, False, True, True, True, False, False, True],
        }
    )
    want = table_sketches(frame, KEY)
    pieces = [
        frame.iloc[:3].astype({"town": "str"}),
        frame.iloc[3:4].astype({"count": "float64", "town": "int64", "ok": "boolean"}),  # "1" read as a number
        frame.iloc[4:5].astype({"count": "float64", "town": object, "ok": object}),
        frame.iloc[5:].astype({"count": "Int64", "town": object, "ok": "boolean"}),
    ]
    assert pieces[1]["town"].dtype == np.int64 and pieces[3]["count"].dtype == "Int64"
    _assert_same(_sketch_batches(pieces), want)
    _assert_same(_sketch_batches(pieces, bucket_bytes=8), want)
    # a batch in which the text column is all missing, read as float
    f2 = frame.copy()
    f2.loc[5:6, "town"] = None
    pieces = [f2.iloc[:5], f2.iloc[5:7].assign(town=np.nan), f2.iloc[7:]]
    assert pieces[1]["town"].dtype == np.float64
    _assert_same(_sketch_batches(pieces), table_sketches(f2, KEY))


def test_empty_batches_no_rows_and_no_columns():
    frame = _mixed(50, seed=3)
    _assert_same(_sketch_batches([frame.iloc[:0], frame, frame.iloc[:0]]), table_sketches(frame, KEY))
    _assert_same(_sketch_batches([]), table_sketches(frame.iloc[:0], KEY))
    no_cols = pd.DataFrame(index=range(4))
    _assert_same(_sketch_batches([no_cols, no_cols]), (np.empty(0, dtype=np.uint64), 8))


def test_one_row_with_many_copies_and_a_small_bucket():
    # one row hash with more copies than a bucket holds, beside many distinct rows
    frame = pd.concat([pd.DataFrame({"a": [5] * 3000}), pd.DataFrame({"a": range(2000)})], ignore_index=True)
    want = table_sketches(frame, KEY, 300)
    with RowSketcher(KEY, 300, bucket_bytes=8 * 100) as s:
        for p in _pieces(frame, [700, 1400, 2999, 4100]):
            s.add(p)
        assert s.spill_folder is not None and len(os.listdir(s.spill_folder)) > 1  # several buckets
        got = s.finish()
    _assert_same(got, want)


def test_expansion_in_chunks_equals_one_go():
    rng = np.random.default_rng(4)
    uniq = np.unique(rng.integers(0, 2**63, 30, dtype=np.int64).astype(np.uint64))
    counts = rng.integers(1, 13, len(uniq))
    sip = ledger_mod._sip_key(KEY)
    whole = ledger_mod._bottom_k_of_counts(uniq, counts, sip, 10**6)
    for chunk in (1, 7, 12, 1000):
        assert np.array_equal(np.sort(ledger_mod._bottom_k_of_counts(uniq, counts, sip, 10**6, chunk)), np.sort(whole))
        assert np.array_equal(
            np.sort(ledger_mod._bottom_k_of_counts(uniq, counts, sip, 20, chunk)), np.sort(whole)[:20]
        )
    assert len(whole) == counts.sum()


# ---- temporary files -----------------------------------------------------------------------------


def test_temporary_files_are_private_and_removed_after_finish(tmp_path):
    frame = _mixed(2000, seed=5)
    s = RowSketcher(KEY, spill_dir=tmp_path, bucket_bytes=8 * 200)
    for p in _pieces(frame, [500, 1000, 1500]):
        s.add(p)
    folder = s.spill_folder
    assert folder is not None and os.path.dirname(folder) == str(tmp_path) and os.listdir(folder)
    _assert_same(s.finish(), table_sketches(frame, KEY))
    assert not os.path.exists(folder) and os.listdir(tmp_path) == []
    _assert_same(s.finish(), table_sketches(frame, KEY))  # the result is kept
    with pytest.raises(ValueError, match="finished or closed"):
        s.add(frame)


def test_temporary_files_are_removed_after_an_error_in_finish(tmp_path, monkeypatch):
    frame = _mixed(2000, seed=6)
    s = RowSketcher(KEY, spill_dir=tmp_path, bucket_bytes=8 * 200)
    s.add(frame)
    assert os.listdir(tmp_path)

    def broken(*a, **kw):
        raise OSError("disk gone")

    monkeypatch.setattr(ledger_mod, "_bottom_k_of_counts", broken)
    with pytest.raises(OSError, match="disk gone"):
        s.finish()
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="closed"):
        s.finish()


def test_temporary_files_are_removed_after_an_error_in_add(tmp_path):
    frame = _mixed(2000, seed=7)
    s = RowSketcher(KEY, spill_dir=tmp_path, bucket_bytes=8 * 200)
    s.add(frame)
    assert os.listdir(tmp_path)
    with pytest.raises(ValueError, match="columns"):
        s.add(frame.rename(columns={"age": "years"}))
    assert os.listdir(tmp_path) == []
    # and when the caller leaves a with block early, or drops the sketcher
    with pytest.raises(RuntimeError), RowSketcher(KEY, spill_dir=tmp_path, bucket_bytes=64) as s2:
        s2.add(frame)
        assert os.listdir(tmp_path)
        raise RuntimeError
    assert os.listdir(tmp_path) == []
    s3 = RowSketcher(KEY, spill_dir=tmp_path, bucket_bytes=64)
    s3.add(frame)
    assert os.listdir(tmp_path)
    del s3
    assert os.listdir(tmp_path) == []


# ---- the ledger -----------------------------------------------------------------------------------


def test_ledger_fingerprint_from_a_sketcher(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    frame = _mixed(1500, seed=8)
    s = led.row_sketcher()
    for p in _pieces(frame, [10, 900]):
        s.add(p)
    assert led.fingerprint_from(s) == led.fingerprint_rows(frame)
    with pytest.raises(ValueError, match="another key"):
        led.fingerprint_from(RowSketcher(bytes(32)))
    led.key_path.unlink()
    with pytest.raises(UserError, match="key file"):
        led.row_sketcher()


# ---- Dask -------------------------------------------------------------------------------------------


def test_dask_gives_the_in_memory_sketch():
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    import dask.dataframe as dd

    frame = _mixed(4000, seed=9)
    frame = pd.concat([frame, frame.iloc[:500]], ignore_index=True)  # copies in other partitions
    ddf = dd.from_pandas(frame, npartitions=4)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster),
    ):
        for k in (7, 256, 100_000):
            _assert_same(ledger_mod.table_sketches_dask(ddf, KEY, k), table_sketches(frame, KEY, k))
            _assert_same(ledger_mod.row_sketch_dask(ddf, KEY, k), row_sketch(frame, KEY, k))
        led = Ledger(os.environ["DPSTUDIO_LEDGER"])
        assert led.fingerprint_dask(ddf) == led.fingerprint_rows(frame)
