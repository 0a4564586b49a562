"""Benchmark helper: how steady is this machine's per-core speed right now?

Why: on the 2-vCPU VM the same numpy kernel in the same process, on the same arrays, was seen
to take either ~0.18 or ~0.30 ms (sin of 554 x 500 float32), switching every few seconds with
no steal reported -- most likely a host core shared with another guest.  A fit that meets in
lock step on both vCPUs runs at the pace of the slower one, so this state, not the code, sets
much of a benchmark's spread.  Run this next to a benchmark to read its numbers.

Samples one fixed kernel every ``--every`` seconds on each core (one pinned process per core,
both at once, as a two-worker fit runs) and prints JSON: per core the min / median / max ms and
the share of samples slower than 1.3x that core's fastest.

    .venv/bin/python benchmarks/host_state.py [--seconds 30] [--every 0.25]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_PROBE = r"""
import json, os, sys, time
import numpy as np
os.sched_setaffinity(0, {{{core}}})
x = (np.random.default_rng(0).standard_normal((554, 500)) * 3).astype(np.float32)
o = np.empty_like(x)
samples, end = [], time.perf_counter() + {seconds}
while time.perf_counter() < end:
    t = time.perf_counter()
    for _ in range(10):
        np.sin(x, out=o)
    samples.append((time.perf_counter() - t) / 10 * 1e3)
    time.sleep({every})
print(json.dumps(samples))
"""


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--every", type=float, default=0.25)
    a = ap.parse_args(argv)
    cores = sorted(os.sched_getaffinity(0))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PROBE.format(core=c, seconds=a.seconds, every=a.every)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for c in cores
    ]
    out = {}
    for c, p in zip(cores, procs, strict=True):
        s = sorted(json.loads(p.communicate()[0]))
        out[f"cpu{c}"] = {
            "samples": len(s),
            "min_ms": round(s[0], 3),
            "median_ms": round(s[len(s) // 2], 3),
            "max_ms": round(s[-1], 3),
            "slow_share": round(sum(v > 1.3 * s[0] for v in s) / len(s), 2),
        }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
