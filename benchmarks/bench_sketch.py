"""The ledger's dataset-identity sketches: time of the whole-row sketch alone against the row and
column-set sketches together (docs/ledger.md), in memory and over batches, in one run (JSON).

Run: ``.venv/bin/python benchmarks/bench_sketch.py [ROWS]`` (default 1,000,000 rows x 20 columns:
half integer codes, half floats). Each variant is timed ``REPEATS`` times, interleaved, and the
median is reported with the ratio of medians."""

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pandas as pd

from dpstudio.ledger import HEAD_ROWS, RowSketcher, row_sketch, table_sketches

KEY = bytes(range(32))
REPEATS = 5
BATCH = 100_000


def frame(n: int, cols: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({f"c{i}": (rng.integers(0, 100, n) if i % 2 else rng.normal(size=n)) for i in range(cols)})


def batched(f: pd.DataFrame):
    with RowSketcher(KEY, head=f.iloc[:HEAD_ROWS]) as s:
        for lo in range(0, len(f), BATCH):
            s.add_hashed(s.hash_batch(f.iloc[lo : lo + BATCH]))
        return s.finish(), s.column_sets


def main(n: int) -> dict:
    f = frame(n)
    runs = {"row_sketch_only": lambda: row_sketch(f, KEY), "row_and_column_sets": lambda: table_sketches(f, KEY)}
    runs["batched_row_and_column_sets"] = lambda: batched(f)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(REPEATS):
        for name, fn in runs.items():  # interleaved: a slow moment hits every variant alike
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: round(statistics.median(v), 3) for k, v in times.items()}
    sets = table_sketches(f, KEY)[2]
    return {
        "rows": n,
        "columns": f.shape[1],
        "repeats": REPEATS,
        "median_s": med,
        "ratio_row_and_column_sets_vs_row_only": round(med["row_and_column_sets"] / med["row_sketch_only"], 2),
        "column_sets": len(sets),
        "stored_bytes": sum(16 * len(v) + 24 for _, v, _ in sets.values()),
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000), indent=2))
