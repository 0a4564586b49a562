"""Benchmark: load + schema inference of a 1,000,000 x 20 CSV against bare pyarrow.

Why: intake must not be the slow or memory-hungry step of a release.  Targets: our
``load_table`` + ``infer_schema`` within 1.3x of ``pyarrow.csv.read_csv`` alone, and peak RSS
within 3x of the loaded frame's size.

Each measurement runs in a fresh subprocess so peak RSS (``VmHWM``; ``ru_maxrss`` would
inherit the parent's peak across fork+exec) is not shared between runs; each is repeated 3 times
and medians are printed as JSON:
``{rows, cols, seconds, peak_rss_mb, frame_mb, pyarrow_seconds, ratio, ...}``.

Usage: ``.venv/bin/python benchmarks/bench_load.py [--rows N] [--repeat K]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "_data"

_OURS = r"""
import json, sys, time
sys.path.insert(0, {root!r})
def hwm():  # peak RSS of this process (VmHWM resets on exec, unlike ru_maxrss)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
import pandas as pd, pyarrow  # imports are not part of the timing
from dpstudio.engine.data import load_table, infer_schema
base = hwm()
t0 = time.perf_counter(); c0 = time.process_time()
lt = load_table({path!r})
t1 = time.perf_counter()
schema = infer_schema(lt.frame)
t2 = time.perf_counter(); cpu = time.process_time() - c0
peak = hwm()
frame_mb = lt.frame.memory_usage(deep=True).sum() / 2**20
print(json.dumps({{"seconds": t2 - t0, "cpu_seconds": cpu, "load_seconds": t1 - t0, "infer_seconds": t2 - t1,
                  "peak_rss_mb": peak, "baseline_rss_mb": base,
                  "frame_mb": frame_mb}}))
"""

_ARROW = r"""
import json, time
import pyarrow, pyarrow.csv
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
t0 = time.perf_counter(); c0 = time.process_time()
table = pyarrow.csv.read_csv({path!r})
t1 = time.perf_counter()
print(json.dumps({{"seconds": t1 - t0, "cpu_seconds": time.process_time() - c0,
                  "peak_rss_mb": hwm()}}))
"""


def make_data(rows: int) -> Path:
    """Write the benchmark CSV once (mixed ints, floats, low-cardinality strings, one id)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = DATA / f"bench_{rows}x20.csv"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20240601)
    ids = pa.array(np.char.add("P", np.char.zfill(np.arange(rows).astype(str), 9)))
    cols = {"patient_id": ids}
    cols["age"] = rng.integers(18, 91, rows)
    cols["sex"] = rng.integers(0, 2, rows)
    cols["visits"] = rng.poisson(3, rows)
    cols["children"] = rng.integers(0, 6, rows)
    cols["income"] = rng.integers(0, 250_000, rows)
    cols["zip3"] = rng.integers(100, 1000, rows)
    cols["los_days"] = rng.integers(0, 60, rows)
    cols["score"] = rng.integers(0, 1000, rows)
    cols["bmi"] = np.round(rng.normal(27, 5, rows), 1)
    for j in range(6):
        cols[f"lab_{chr(97 + j)}"] = np.round(rng.normal(50 + j, 10, rows), 4)
    cols["state"] = pa.array(rng.choice(["GA", "NY", "CA", "TX", "FL", "WA", "IL"], rows))
    cols["diagnosis"] = pa.array(rng.choice(["flu", "asthma", "copd", "diabetes", "none"], rows))
    cols["insurer"] = pa.array(rng.choice([f"insurer {k}" for k in range(40)], rows))
    cols["outcome"] = rng.integers(0, 2, rows)
    table = pa.table(cols)
    assert table.num_columns == 20
    tmp = path.with_suffix(".csv.tmp")
    pacsv.write_csv(table, str(tmp))
    tmp.replace(path)
    return path


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    path = str(make_data(args.rows))
    ours, arrow = [], []
    for _ in range(args.repeat):  # interleave so background load hits both alike
        arrow.append(_run(_ARROW.format(path=path)))
        ours.append(_run(_OURS.format(root=str(ROOT), path=path)))

    def med(rs, k):
        return statistics.median(r[k] for r in rs)

    result = {
        "rows": args.rows,
        "cols": 20,
        "seconds": round(med(ours, "seconds"), 3),
        "peak_rss_mb": round(med(ours, "peak_rss_mb"), 1),
        "frame_mb": round(med(ours, "frame_mb"), 1),
        "pyarrow_seconds": round(med(arrow, "seconds"), 3),
        "cpu_seconds": round(med(ours, "cpu_seconds"), 3),
        "pyarrow_cpu_seconds": round(med(arrow, "cpu_seconds"), 3),
        "load_seconds": round(med(ours, "load_seconds"), 3),
        "infer_seconds": round(med(ours, "infer_seconds"), 3),
        "baseline_rss_mb": round(med(ours, "baseline_rss_mb"), 1),
        "pyarrow_peak_rss_mb": round(med(arrow, "peak_rss_mb"), 1),
    }
    result["ratio"] = round(result["seconds"] / result["pyarrow_seconds"], 3)
    result["cpu_ratio"] = round(result["cpu_seconds"] / result["pyarrow_cpu_seconds"], 3)
    result["rss_ratio"] = round(result["peak_rss_mb"] / result["frame_mb"], 3)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
