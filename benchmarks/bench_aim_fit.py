"""Benchmark: AIM fit on the Adult split, against MST in the same run (issue 19: Adult-size fit
<= 60 s and <= 2 GB on a 2-core machine; utility better than MST).

For each method (AIM, MST) and seed: fit on adult/train.csv with the public schema
(``spec_from_adult``) at (eps, delta) = (1, 1e-5) in a fresh process (so ``peak_rss_mb`` is the
fit's own ``ru_maxrss``), sample as many rows as train, then

* ``tv2``: mean total variation over every pair of columns of the 2-way marginals, synthetic vs
  the real train rows, on the synthesizer's public cells (numbers on the public bins of
  ``CellLayout``; the same cells for both methods);
* ``tv1``: the same for the 1-way marginals;
* ``roc``: ROC-AUC on adult/test.csv of LogisticRegression and GradientBoosting trained on the
  synthetic rows (hard labels, ``roc``, and probabilities, ``prob_roc``).

Prints one JSON object: per method the per-seed rows and their means.

    .venv/bin/python benchmarks/bench_aim_fit.py [--seeds 3] [--epsilon 1.0] [--methods aim,mst]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "datasets" / "adult"

import numpy as np  # noqa: E402 - after the BLAS thread settings above
import pandas as pd  # noqa: E402


def _fit_job(method: str, eps: float, delta: float, seed: int, q) -> None:  # type: ignore[no-untyped-def]
    from dpstudio.engine.rng import RandomSource
    from dpstudio.engine.synth import SYNTHESIZERS
    from dpstudio.engine.synth.encoding import spec_from_adult

    train = pd.read_csv(DATA / "train.csv")
    spec = spec_from_adult()
    t0 = time.perf_counter()
    c0 = time.process_time()
    fitted = SYNTHESIZERS[method]().fit(train, spec, epsilon=eps, delta=delta, rng=RandomSource(seed))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    synth = fitted.sample(len(train), RandomSource(seed + 1000))
    info = fitted.info
    q.put(
        {
            "fit_seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),
            "peak_rss_mb": round(rss, 1),
            "rounds": info.get("rounds"),
            "anneals": info.get("anneals"),
            "model_cells": info.get("model_cells"),
            "cliques": [list(c) for c in info.get("cliques", info.get("edges", []))],
            "epsilon_spent": fitted.privacy_loss().epsilon,
            "synthetic": synth.to_json(orient="split"),
        }
    )


def run_fit(method: str, eps: float, delta: float, seed: int) -> dict:  # type: ignore[type-arg]
    ctx = get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_fit_job, args=(method, eps, delta, seed, q))
    p.start()
    import queue

    while True:  # the child's result, or its failure
        try:
            out = q.get(timeout=5)
            break
        except queue.Empty:
            if not p.is_alive():
                raise RuntimeError(f"{method} fit failed (exit code {p.exitcode})") from None
    p.join()
    return out  # type: ignore[no-any-return]


def marginal_tvs(real: pd.DataFrame, synth: pd.DataFrame) -> tuple[float, float]:
    from dpstudio.engine.synth.cells import CellLayout
    from dpstudio.engine.synth.encoding import spec_from_adult

    layout = CellLayout(spec_from_adult())
    a, b = layout.codes(real), layout.codes(synth)
    sizes = layout.sizes
    d = layout.d
    tv1 = []
    for j in range(d):
        p = np.bincount(a[:, j], minlength=sizes[j]) / len(a)
        q = np.bincount(b[:, j], minlength=sizes[j]) / len(b)
        tv1.append(0.5 * np.abs(p - q).sum())
    tv2 = []
    for i in range(d):
        for j in range(i + 1, d):
            m = int(sizes[i] * sizes[j])
            p = np.bincount(a[:, i] * sizes[j] + a[:, j], minlength=m) / len(a)
            q = np.bincount(b[:, i] * sizes[j] + b[:, j], minlength=m) / len(b)
            tv2.append(0.5 * np.abs(p - q).sum())
    return float(np.mean(tv1)), float(np.mean(tv2))


def roc_scores(train: pd.DataFrame, test: pd.DataFrame, seed: int) -> dict:  # type: ignore[type-arg]
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    from dpstudio.engine.synth.encoding import Encoder, spec_from_adult

    spec = spec_from_adult()
    enc = Encoder(spec)
    lab = spec.label.name if spec.label is not None else ""

    def feats(frame: pd.DataFrame) -> np.ndarray:  # type: ignore[type-arg]
        x = enc.encode(frame, dtype=np.float64)
        x[:, : enc.n_num] = (x[:, : enc.n_num] + 1.0) / 2.0
        return x

    xtr, ytr = feats(train), train[lab].to_numpy().astype(int)
    xte, yte = feats(test), test[lab].to_numpy().astype(int)
    out = {}
    for name, clf in (
        ("LogisticRegression", LogisticRegression(max_iter=5000)),
        ("GradientBoosting", GradientBoostingClassifier(n_estimators=100, random_state=seed)),
    ):
        if len(np.unique(ytr)) < 2:
            out[name] = {"roc": 0.5, "prob_roc": 0.5}
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(xtr, ytr)
        out[name] = {
            "roc": float(roc_auc_score(yte, clf.predict(xte))),
            "prob_roc": float(roc_auc_score(yte, clf.predict_proba(xte)[:, 1])),
        }
    return out


def main(argv: list[str] | None = None) -> dict:  # type: ignore[type-arg]
    from io import StringIO

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--methods", default="aim,mst")
    a = ap.parse_args(argv)
    train = pd.read_csv(DATA / "train.csv")
    test = pd.read_csv(DATA / "test.csv")
    result: dict = {"epsilon": a.epsilon, "delta": a.delta, "n_train": len(train), "n_test": len(test)}  # type: ignore[type-arg]
    result["real"] = {"roc": roc_scores(train, test, 0)}
    for method in a.methods.split(","):
        rows = []
        for seed in range(a.seeds):
            r = run_fit(method, a.epsilon, a.delta, seed)
            synth = pd.read_json(StringIO(r.pop("synthetic")), orient="split")
            r["tv1"], r["tv2"] = marginal_tvs(train, synth)
            r["roc"] = roc_scores(synth, test, seed)
            r["seed"] = seed
            rows.append(r)
            print(json.dumps({method: {k: v for k, v in r.items() if k != "cliques"}}), file=sys.stderr, flush=True)
        mean = {
            k: float(np.mean([row[k] for row in rows]))
            for k in ("fit_seconds", "cpu_seconds", "peak_rss_mb", "tv1", "tv2")
        }
        for clf in rows[0]["roc"]:
            for m in ("roc", "prob_roc"):
                mean[f"{clf}_{m}"] = float(np.mean([row["roc"][clf][m] for row in rows]))
        result[method] = {"mean": mean, "runs": rows}
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
