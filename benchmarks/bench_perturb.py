"""Record-level release speed: 1,000,000 rows x 20 columns (10 numeric, 8 categorical, a label,
an identifier).

Prints JSON {rows, seconds, write_seconds, peak_rss_mb, numpy_floor_seconds,
diffprivlib_seconds_extrapolated, ratio_to_floor, speedup_vs_diffprivlib}:
  seconds      - dpstudio's record release (secure randomness, exact discrete samplers), median of 3
  numpy_floor  - numpy drawing the same number (20M) of float64 Laplace variates, median of 3
  diffprivlib  - diffprivlib 0.6.6 perturbing a 20,000-row slice value by value with its own
                 mechanisms (Laplace / Exponential over categories), extrapolated linearly; run in
                 .venv-bench (scikit-learn<1.8) when it exists, else reported as null.
Targets: seconds <= 2, <= 3 x numpy floor, >= 100 x faster than diffprivlib.

    .venv/bin/python benchmarks/bench_perturb.py [--rows N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N_NUM, N_CAT, N_LEVELS = 10, 8, 6


def make_frame(rows: int, seed: int = 1) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    data = {"person_id": np.arange(rows, dtype=np.int64) + 10_000_000}
    for i in range(N_NUM):
        data[f"num{i}"] = g.normal(50, 15, rows).clip(0, 100).astype(np.float64)
    for i in range(N_CAT):
        data[f"cat{i}"] = g.integers(0, N_LEVELS, rows).astype(np.int64)
    data["label"] = g.integers(0, 2, rows).astype(np.int64)
    return pd.DataFrame(data)


def make_recipe(path: str):
    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Mechanism, Recipe, ReleaseSpec

    cols = [Column("person_id", "integer", "identifier")]
    cols += [
        Column(f"num{i}", "float", "sensitive", Domain("numeric", low=0, high=100), Mechanism("laplace"))
        for i in range(N_NUM)
    ]
    cats = tuple(str(k) for k in range(N_LEVELS))
    cols += [
        Column(f"cat{i}", "categorical", "sensitive", Domain("categorical", categories=cats), Mechanism("rr"))
        for i in range(N_CAT)
    ]
    cols.append(Column("label", "boolean", "label", Domain("categorical", categories=("0", "1")), Mechanism("rr")))
    return Recipe(
        input=InputSpec(path=path), release=ReleaseSpec("record"), columns=tuple(cols), budget=Budget(epsilon=4.0)
    )


DIFFPRIVLIB_SCRIPT = r"""
import json, sys, time
import numpy as np
from diffprivlib.mechanisms import Laplace, ExponentialCategorical
rows = int(sys.argv[1])
g = np.random.default_rng(2)
num = g.normal(50, 15, (rows, 10)).clip(0, 100)
cat = g.integers(0, 6, (rows, 9))
eps = 4.0 / 19
lap = Laplace(epsilon=eps, sensitivity=100.0)
levels = [str(k) for k in range(6)]
util = [[a, b, 0.0 if a == b else 1.0] for a in levels for b in levels]
expo = ExponentialCategorical(epsilon=eps, utility_list=util)
t = time.perf_counter()
for r in range(rows):
    for j in range(10):
        lap.randomise(float(num[r, j]))
    for j in range(8):
        expo.randomise(str(cat[r, j]))
    expo.randomise(str(cat[r, 8] % 2))
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def diffprivlib_seconds(rows_slice: int) -> float | None:
    py = ROOT / ".venv-bench" / "bin" / "python"
    if not py.exists():
        return None
    proc = subprocess.run(
        [str(py), "-c", DIFFPRIVLIB_SCRIPT, str(rows_slice)], capture_output=True, text=True, timeout=1800
    )
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(proc.stdout)["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--slice", type=int, default=20_000)
    args = ap.parse_args()

    from dpstudio.engine.rng import RandomSource
    from dpstudio.export import write_table
    from dpstudio.plan import record

    frame = make_frame(args.rows)
    recipe = make_recipe("bench.csv")
    plan = record.compile(recipe)
    n_values = args.rows * (N_NUM + N_CAT + 1)

    floor = []
    g = np.random.default_rng()
    for _ in range(args.repeats):
        t = time.perf_counter()
        g.laplace(0.0, 1.0, size=args.rows * 20)
        floor.append(time.perf_counter() - t)

    ours = []
    out = None
    for _ in range(args.repeats):
        t = time.perf_counter()
        out = record.execute(plan, frame, RandomSource(None))
        ours.append(time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        write_table(out.data, Path(d) / "out.parquet")
        write_seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    dpl = diffprivlib_seconds(args.slice)
    dpl_extrap = None if dpl is None else dpl * args.rows / args.slice
    sec = statistics.median(ours)
    fl = statistics.median(floor)
    print(
        json.dumps(
            {
                "rows": args.rows,
                "values_perturbed": n_values,
                "seconds": round(sec, 3),
                "write_parquet_seconds": round(write_seconds, 3),
                "peak_rss_mb": round(peak, 1),
                "numpy_floor_seconds": round(fl, 3),
                "diffprivlib_seconds_extrapolated": None if dpl_extrap is None else round(dpl_extrap, 1),
                "ratio_to_floor": round(sec / fl, 2),
                "speedup_vs_diffprivlib": None if dpl_extrap is None else round(dpl_extrap / sec, 1),
                "randomness": "secure (os.urandom)",
            }
        )
    )


if __name__ == "__main__":
    main()
