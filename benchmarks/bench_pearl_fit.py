"""Benchmark: one PEARL fit at the paper's settings on the Adult split (issue target <= 60 s,
peak RSS <= 1 GB on a 2-core machine).

k = 500 frequencies, batch 0.1 n (1,108 rows), 8,000 Adam steps, (eps, delta) = (1, 1e-5), the
public Adult schema of benchmarks/synth_adult.py.  Prints JSON
``{steps, n, wall_seconds, cpu_seconds, ms_per_step, peak_rss_mb, workers, shards, ...}``.

With worker processes (the default for a fit this size) ``peak_rss_mb`` is this process's
peak plus every worker's (``worker_peak_rss_mb``, each worker's own VmHWM), and
``cpu_seconds`` includes the workers' CPU time.  ``train_seconds`` is the generator training
alone (from the first training progress report to the end).  ``window_ms_per_step`` gives the
pace over 16 windows of the training (min / median / max), see :func:`window_pace`.

    .venv/bin/python benchmarks/bench_pearl_fit.py [--steps N] [--workers W]
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
    ap.add_argument(
        "--workers", type=int, default=None, help="training processes (default: PearlConfig's, one per shard here)"
    )
    a = ap.parse_args(argv)
    import pandas as pd

    from dpstudio.engine.rng import RandomSource
    from dpstudio.engine.synth import SYNTHESIZERS
    from dpstudio.engine.synth.encoding import spec_from_adult

    train = pd.read_csv(DATA / "train.csv")
    opts = {"steps": a.steps} if a.workers is None else {"steps": a.steps, "workers": a.workers}
    synth = SYNTHESIZERS["pearl"](**opts)
    marks, ticks = {}, []

    def progress(f, m=""):
        if "generator" in m and "train" not in marks:
            marks["train"] = time.perf_counter()
        if "generator step " in m:
            ticks.append((time.perf_counter(), int(m.rsplit(" ", 1)[1].split("/")[0])))

    t0 = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    fitted = synth.fit(train, spec_from_adult(), epsilon=1.0, delta=1e-5, rng=RandomSource(0), progress=progress)
    t1 = time.perf_counter()
    wall = t1 - t0
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (me.ru_utime + me.ru_stime - c0.ru_utime - c0.ru_stime) + kids.ru_utime + kids.ru_stime
    own = me.ru_maxrss / 1024
    workers = fitted.info["train_worker_peak_rss_mb"]
    out = {
        "steps": a.steps,
        "n": len(train),
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "ms_per_step": round(1000 * wall / a.steps, 2),
        "train_seconds": round(t1 - marks.get("train", t0), 2),
        "peak_rss_mb": round(own + sum(workers), 1),
        "parent_peak_rss_mb": round(own, 1),
        "worker_peak_rss_mb": [round(v, 1) for v in workers],
        "workers": fitted.info["train_processes"],
        "shards": fitted.info["train_shards"],
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "window_ms_per_step": window_pace(ticks, a.steps // 16),
    }
    print(json.dumps(out))
    return out


def window_pace(ticks: list[tuple[float, int]], width: int) -> dict:
    """ms per step over consecutive windows of >= ``width`` steps (from the progress reports).

    Why: this VM's speed for the same numpy code drifts between two states ~1.7x apart over
    seconds (same process, same arrays), so the spread of the windows says how much of a fit's
    time is the machine's state; the fastest window is the pace the code reaches when both
    vCPUs are in the fast state."""
    paces, start = [], None
    for t, step in ticks:
        if start is None:
            start = (t, step)
        elif step - start[1] >= max(1, width):
            paces.append(1000 * (t - start[0]) / (step - start[1]))
            start = (t, step)
    if not paces:
        return {}
    paces.sort()
    return {
        "windows": len(paces),
        "width_steps": width,
        "min": round(paces[0], 2),
        "median": round(paces[len(paces) // 2], 2),
        "max": round(paces[-1], 2),
    }


if __name__ == "__main__":
    main()
