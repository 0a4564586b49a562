"""Leakage engine timings: cross-fitted posterior fit on 100,000 rows (target <= 2 s) and the
recomputation of every label-leakage curve for a new epsilon (target <= 20 ms).

Run: .venv/bin/python benchmarks/bench_leakage.py   (prints JSON)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpstudio.engine.leakage.embedding import embedding_risk, speaker_like_embeddings
from dpstudio.engine.leakage.label import DEFAULT_GRID, LabelLeakageModel


def main(n: int = 100_000, seed: int = 0) -> dict:
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, 10))
    w = g.normal(size=10) * 0.8
    cat = g.choice(list("abcdefgh"), n)
    logit = X @ w + (cat == "a") * 1.5 - 0.5
    y = (g.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(10)]).assign(region=cat, y=y)
    cols = [f"x{i}" for i in range(10)] + ["region"]
    fits = []
    for _ in range(3):
        t = time.perf_counter()
        model = LabelLeakageModel.fit(frame, cols, "y", seed=seed)
        fits.append(time.perf_counter() - t)
    recompute = []
    for eps in np.linspace(0.1, 8.0, 40):
        t = time.perf_counter()
        model.curves(DEFAULT_GRID)
        model.at(float(eps))
        recompute.append(time.perf_counter() - t)
    Xe, pool = speaker_like_embeddings(n_ids=1000, dim=256, pool_size=5000, seed=seed)
    t = time.perf_counter()
    emb = embedding_risk(Xe, pool, [1.0, 10.0, 50.0, 200.0])
    emb_s = time.perf_counter() - t
    at1 = model.at(1.0)
    out = {
        "fit_rows": n,
        "public_features": len(cols),
        "folds": model.info.get("folds"),
        "fit_seconds": round(float(np.median(fits)), 3),
        "fit_seconds_all": [round(f, 3) for f in fits],
        "recompute_ms_median": round(1e3 * float(np.median(recompute)), 2),
        "recompute_ms_max": round(1e3 * float(np.max(recompute)), 2),
        "grid_points": int(DEFAULT_GRID.size),
        "targets": {"fit_seconds": 2.0, "recompute_ms": 20.0},
        "at_eps_1": {
            "accuracy": {k: round(v, 4) for k, v in at1["accuracy"].items()},
            "share_iue_adv_above_0.1": round(at1["iue_adv_bound"]["share_above"], 4),
        },
        "embedding_1000x256_pool5000_4eps_seconds": round(emb_s, 3),
        "embedding_reid": [round(v, 4) for v in emb["reid_rate"]],
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
