"""Benchmark: one PEARL fit at the paper's settings on the Adult split (issue target <= 60 s,
peak RSS <= 1 GB on a 2-core machine).

k = 500 frequencies, batch 0.1 n (1,108 rows), 8,000 Adam steps, (eps, delta) = (1, 1e-5), the
public Adult schema of benchmarks/synth_adult.py.  Prints JSON
``{steps, n, wall_seconds, cpu_seconds, ms_per_step, peak_rss_mb, threads, blas_threads}``.

    .venv/bin/python benchmarks/bench_pearl_fit.py [--steps N] [--threads T]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "datasets" / "adult"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--threads", type=int, default=None,
                    help="training threads (default: PearlConfig's default, 1)")
    a = ap.parse_args(argv)
    import pandas as pd

    from dpstudio.engine.rng import RandomSource
    from dpstudio.engine.synth import SYNTHESIZERS
    from dpstudio.engine.synth.encoding import spec_from_adult
    train = pd.read_csv(DATA / "train.csv")
    opts = {"steps": a.steps} if a.threads is None else {"steps": a.steps, "threads": a.threads}
    synth = SYNTHESIZERS["pearl"](**opts)
    t0, c0 = time.perf_counter(), time.process_time()
    synth.fit(train, spec_from_adult(), epsilon=1.0, delta=1e-5, rng=RandomSource(0))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"steps": a.steps, "n": len(train), "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
           "ms_per_step": round(1000 * wall / a.steps, 2),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "threads": synth.config.threads or os.cpu_count(), "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
