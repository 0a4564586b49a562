"""Time expected_error_curves for 50 columns x 200 epsilons; prints JSON."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from dpstudio.engine.bounds import ColumnSpec, expected_error_curves


def main(n_cols: int = 50, n_eps: int = 200, repeats: int = 50) -> dict:
    mechs = [("numeric", "laplace"), ("numeric", "gaussian"), ("categorical", "rr")]
    cols = []
    for j in range(n_cols):
        kind, mech = mechs[j % 3]
        cols.append(ColumnSpec(kind=kind, mechanism=mech, diam=10.0 + j,
                               n_categories=2 + j % 7 if kind == "categorical" else None,
                               delta=(1e-6, 1e-5, 1e-7)[j % 3] if mech == "gaussian" else 0.0,
                               weight=1.0 / n_cols))
    eps = np.geomspace(1e-2, 20, n_eps)
    expected_error_curves(cols, eps)  # warm the per-delta tables (cached for the session)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        expected_error_curves(cols, eps)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    from dpstudio.engine import bounds
    bounds._mu_table.cache_clear()
    expected_error_curves(cols, eps)
    cold = time.perf_counter() - t0
    out = {"columns": n_cols, "eps_values": n_eps, "seconds_median": float(np.median(times)),
           "seconds_cold_first_call": cold}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
