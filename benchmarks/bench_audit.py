"""Full statistical audit at 1e6 trials: every mechanism and every broken variant (JSON list)."""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpstudio.engine.audit import audit

RUNS = [
    ("laplace", None, 1.0, 0.0),
    ("laplace", None, 1.0, 1e-3),
    ("gaussian", None, 1.0, 1e-5),
    ("rr", None, 1.0, 0.0),
    ("exponential", None, 1.0, 0.0),
    ("metric", None, 4.0, 0.0),
    ("laplace", "laplace_half_scale", 1.0, 0.0),
    ("gaussian", "gaussian_half_sigma", 1.0, 1e-5),
    ("rr", "rr_2eps", 1.0, 0.0),
    ("metric", "metric_2eps", 4.0, 0.0),
    ("exponential", "exponential_no_half", 1.0, 0.0),
]


def main(trials: int = 1_000_000, seed=2024):
    out = []
    for mech, broken, eps, delta in RUNS:
        t0 = time.perf_counter()
        r = audit(mech, epsilon=eps, delta=delta, trials=trials, seed=seed, broken=broken)
        r["seconds"] = round(time.perf_counter() - t0, 2)
        r["expected"] = "fail" if broken else "pass"
        r["ok"] = r["passed"] == (broken is None)
        out.append(r)
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
