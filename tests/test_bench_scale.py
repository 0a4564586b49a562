"""Smoke test of benchmarks/bench_scale.py's own code at 2,000 rows: the input generator
(deterministic, the designed schema, cached), the numpy + pyarrow floor, one streamed record
release through the harness (recipe init + ``release --engine stream`` in a child), the
resumable run plan and the report's target checks.  No Dask here."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_scale.py"
N = 2_000


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_scale", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def table(bench, tmp_path_factory):
    d = tmp_path_factory.mktemp("scale")
    return d, bench.write_table(d, N, 7, log=lambda m: None)


def test_generator_is_deterministic_with_the_designed_schema(bench, table, tmp_path):
    d, path = table
    t = pq.read_table(path)
    assert t.num_rows == N
    assert t.schema.remove_metadata() == bench.arrow_schema()
    assert len(bench.NUMERIC) == 10 and len(bench.CATEGORICAL) == 10
    for c, typ, lo, hi in bench.NUMERIC:
        x = t.column(c).to_numpy()
        assert x.dtype == (np.int64 if typ == "integer" else np.float64)
        assert lo <= x.min() and x.max() <= hi, c
        assert np.unique(x).size > 1, c
    for c, k in bench.CATEGORICAL:
        assert 2 <= k <= 50
        seen = set(t.column(c).to_pylist())
        assert seen <= set(bench.categories(c, k)), c
        assert len(seen) > 1, c
    # skew: the income column is log-normal (mean well above the median)
    inc = t.column("income").to_numpy()
    assert inc.mean() > 1.2 * np.median(inc)
    # same seed, another directory: the same table; another seed: another table
    again = pq.read_table(bench.write_table(tmp_path / "a", N, 7, log=lambda m: None))
    assert again.equals(t)
    other = pq.read_table(bench.write_table(tmp_path / "b", N, 8, log=lambda m: None))
    assert not other.equals(t)
    # cached: a second call reuses the file (not rewritten)
    mtime = path.stat().st_mtime_ns
    assert bench.cached_ok(path, N, 7) and not bench.cached_ok(path, N, 8) and not bench.cached_ok(path, N + 1, 7)
    assert bench.write_table(d, N, 7, log=lambda m: None) == path
    assert path.stat().st_mtime_ns == mtime


def test_floor_perturbs_every_column_parquet_to_parquet(bench, table, tmp_path):
    _, path = table
    out = tmp_path / "floor.parquet"
    assert bench.floor_release(path, out, block_rows=700, seed=1) == N
    a, b = pq.read_table(path), pq.read_table(out)
    assert b.num_rows == N and b.column_names == a.column_names
    for c, typ, lo, hi in bench.NUMERIC:
        y = b.column(c).to_numpy()
        assert lo <= y.min() and y.max() <= hi, c
        assert (y != a.column(c).to_numpy()).mean() > 0.5, c
        if typ == "integer":
            assert y.dtype == np.int64
    for c, k in bench.CATEGORICAL:
        y = np.asarray(b.column(c).cast(pa.string()).to_pylist())
        assert set(y) <= set(bench.categories(c, k)), c
        # at epsilon 1/20 per column nearly every code is replaced (never by itself)
        changed = (y != np.asarray(a.column(c).to_pylist())).mean()
        keep = np.exp(0.05) / (np.exp(0.05) + k - 1)
        assert abs(changed - (1 - keep)) < 0.05, c


def test_streamed_record_release_through_the_harness(bench, table, monkeypatch):
    from dpstudio.engine.data.loader import fingerprint

    d, path = table
    # as for a large table: init on the first rows, then the recipe points at the table (the
    # release checks the SHA-256)
    monkeypatch.setattr(bench, "SAMPLE_ROWS", 500)
    recipe = bench.write_recipe(d, N, 7, "record")
    r = json.loads(recipe.read_text())
    assert r["release"]["type"] == "record"
    assert {c["role"] for c in r["columns"]} == {"sensitive"} and len(r["columns"]) == 20
    assert r["input"]["path"] == str(path) and r["input"]["sha256"] == fingerprint(str(path))
    assert not list(d.glob("*.first500.parquet"))
    res = bench.measure("stream", N, 7, d)
    assert res["status"] == "ok", res
    assert res["output_rows"] == N
    assert "streamed" in res["engine_reported"]
    assert res["values_per_s"] == round(N * 20 / res["wall_s"])
    assert res["peak_rss_mb"] > 0
    assert not list(d.glob("out-*"))  # the output directory is deleted after the run


def test_memory_guard_and_resumable_plan(bench):
    assert bench.memory_guard(10**12).startswith("skipped: would need ~")
    assert bench.memory_guard(N) is None
    assert [bench.parse_size(s) for s in ("1M", "10M", "50m", "2000", "2k")] == [10**6, 10**7, 5 * 10**7, 2000, 2000]
    jobs = bench.plan_runs([10**6, 5 * 10**7], ["floor", "stream"], None, set(), "abc", 262144)
    assert len(jobs) == 3 * 2 + 1 * 2  # 3 repeats below 50M, 1 at 50M
    assert [j["run"] for j in jobs[:4]] == ["floor", "stream", "floor", "stream"]  # interleaved
    done = {bench.run_key(jobs[0])}
    assert len(bench.plan_runs([10**6, 5 * 10**7], ["floor", "stream"], None, done, "abc", 262144)) == 7
    assert len(bench.plan_runs([10**6, 5 * 10**7], ["floor", "stream"], None, done, "new", 262144)) == 8


def test_targets_from_one_session(bench):
    def row(n, run, wall, rss=500.0, session="s1"):
        return {
            "rows": n,
            "run": run,
            "wall_s": wall,
            "cpu_s": wall,
            "peak_rss_mb": rss,
            "status": "ok",
            "session": session,
            "date": "2026-11-24",
            "commit": "abc",
        }

    m, big = 10**6, 5 * 10**7
    rows = [row(m, "floor", 1.0), row(m, "stream", 1.9), row(m, "dask", 3.0)]
    rows += [row(big, "stream", 1.9 * 56, rss=1500.0), row(big, "floor", 50.0)]
    rows += [row(m, "mst-stream", 10.0, session="s2"), row(m, "mst-dask", 12.0, session="s3")]
    rows += [{"rows": big, "run": "memory", "status": "skipped: would need ~32 GB", "session": "s1", "date": "x"}]
    listed = bench.target_checks(rows)
    checks = {(c["target"], c["where"]): c["verdict"] for c in listed}
    values = {(c["target"], c["where"]): c["value"] for c in listed}
    assert checks[("streamed <= 2 x floor", "stream/floor 1M")] == "PASS"  # 1.9 x
    assert checks[("streamed <= 2 x floor", "stream/floor 50M")] == "FAIL"  # 2.13 x
    assert checks[("Dask <= 1.5 x streamed", "dask/stream 1M")] == "FAIL"  # 1.58 x
    # MST dask and stream never ran in one session: no ratio across sessions
    # (shown, not judged)
    assert checks[("Dask <= 1.5 x streamed", "mst-dask/mst-stream 1M")] == "not measured in one session"
    assert values[("Dask <= 1.5 x streamed", "mst-dask/mst-stream 1M")] == "1.20 x (across sessions)"
    assert checks[("peak RSS <= 1.5 GB streamed", "mst-stream 50M")] == "not measured"
    assert checks[("50M time <= 55 x 1M time", "stream")] == "FAIL"  # 56 x
    assert checks[("50M time <= 55 x 1M time", "floor")] == "PASS"
    assert checks[("peak RSS <= 1.5 GB streamed", "stream 1M")] == "PASS"
    assert checks[("peak RSS <= 1.5 GB streamed", "stream 50M")] == "FAIL"  # 1500 MiB > 1.5e9 B
    assert checks[("streamed record release >= 10M values/s", "stream 1M")] == "PASS"  # 10.5M/s
    md = bench.markdown(rows)
    assert "skipped: would need ~32 GB" in md and "| 1M | stream | 1 | 1.90 |" in md and "| abc, s1 |" in md
