"""DP logistic regression: dpstudio (exact Gibbs posterior) vs non-private sklearn vs diffprivlib.

Data and preprocessing (stated exactly):
* Breast Cancer (sklearn): 20 random 70/30 splits (seeds 0..19).  Public bounds = each feature's
  min/max over the WHOLE data set (sklearn's feature ranges), TREATED AS PUBLIC KNOWLEDGE.
* Adult (/work/shared/datasets/adult): the given train/test split, 5 repeats of the noise.
  Public bounds = min/max over train+test, treated as public knowledge.
Every method sees the same bounded features: x -> 2(x - lo)/(hi - lo) - 1 in [-1, 1], divided by
sqrt(d), so ||z|| <= 1 (dpstudio's "ball" scaling; diffprivlib gets data_norm=1; sklearn the same z).
diffprivlib 0.6.6 needs scikit-learn < 1.8: it runs in .venv-bench (this script calls itself
there with --diffprivlib).  Usage: .venv/bin/python benchmarks/bench_model.py [--quick]
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT.parent / "shared" / "datasets" / "adult"
EPS = (0.5, 1.0, 2.0)
DELTA = 1e-5


def _scale(X, lo, hi):
    d = X.shape[1]
    return (2 * (np.clip(X, lo, hi) - lo) / np.where(hi > lo, hi - lo, 1.0) - 1) / math.sqrt(d)


def datasets(quick=False):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    lo, hi = X.min(0), X.max(0)
    Z = _scale(X, lo, hi)
    out = []
    for s in range(5 if quick else 20):
        idx = np.random.default_rng(s).permutation(len(y))
        k = int(round(0.7 * len(y)))
        out.append(("breast_cancer", s, Z[idx[:k]], y[idx[:k]], Z[idx[k:]], y[idx[k:]]))
    tr, te = pd.read_csv(ADULT / "train.csv"), pd.read_csv(ADULT / "test.csv")
    lab = "income_gt_50k"
    allx = pd.concat([tr, te]).drop(columns=lab).to_numpy(float)
    lo, hi = allx.min(0), allx.max(0)
    Ztr = _scale(tr.drop(columns=lab).to_numpy(float), lo, hi)
    Zte = _scale(te.drop(columns=lab).to_numpy(float), lo, hi)
    for s in range(2 if quick else 5):
        out.append(("adult", s, Ztr, tr[lab].to_numpy(), Zte, te[lab].to_numpy()))
    return out


def _metrics(score, y) -> dict:
    from sklearn.metrics import roc_auc_score

    return {"accuracy": float(np.mean((score > 0) == (y == 1))), "auc": float(roc_auc_score(y, score))}


def run_diffprivlib(quick):
    import warnings

    from diffprivlib.models import LogisticRegression

    warnings.filterwarnings("ignore")
    res = []
    for name, s, Ztr, ytr, Zte, yte in datasets(quick):
        for eps in EPS:
            m = LogisticRegression(epsilon=eps, data_norm=1.0, random_state=1000 + s)
            m.fit(Ztr, ytr)
            res.append(
                {
                    "data": name,
                    "split": s,
                    "epsilon": eps,
                    "method": "diffprivlib",
                    **_metrics(m.decision_function(Zte), yte),
                }
            )
    return res


def run_ours(quick):
    from sklearn.linear_model import LogisticRegression

    from dpstudio.engine.models import gibbs_logistic as gl
    from dpstudio.engine.rng import RandomSource

    res = []
    for name, s, Ztr, ytr, Zte, yte in datasets(quick):
        sk = LogisticRegression(max_iter=2000).fit(Ztr * math.sqrt(Ztr.shape[1]), ytr)
        res.append(
            {
                "data": name,
                "split": s,
                "epsilon": None,
                "method": "sklearn (non-private)",
                **_metrics(sk.decision_function(Zte * math.sqrt(Zte.shape[1])), yte),
            }
        )
        yy = np.where(ytr == 1, 1.0, -1.0)
        zt = np.hstack([Ztr, np.ones((len(ytr), 1))])
        zte = np.hstack([Zte, np.ones((len(yte), 1))])
        for eps in EPS:
            cal = gl.calibrate(len(ytr), zt.shape[1], eps, DELTA)
            t = time.time()
            r = gl.sample_rejection(yy[:, None] * zt, cal, RandomSource(10_000 + s), batch=64)
            res.append(
                {
                    "data": name,
                    "split": s,
                    "epsilon": eps,
                    "method": "dpstudio Gibbs (exact)",
                    "seconds": time.time() - t,
                    "proposals": r.proposals,
                    **_metrics(zte @ r.theta, yte),
                }
            )
    return res


def summarise(rows):
    df = pd.DataFrame(rows)
    g = df.groupby(["data", "method", "epsilon"], dropna=False)[["accuracy", "auc"]].agg(["mean", "std"])
    return g


def main():
    quick = "--quick" in sys.argv
    if "--diffprivlib" in sys.argv:
        print(json.dumps(run_diffprivlib(quick)))
        return
    venv = ROOT / ".venv-bench" / "bin" / "python"
    dp = subprocess.run(
        [str(venv), __file__, "--diffprivlib"] + (["--quick"] if quick else []),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    rows = run_ours(quick) + json.loads(dp.stdout)
    (ROOT / "benchmarks" / "results_model.json").write_text(json.dumps(rows, indent=1))
    summ = summarise(rows)
    print(summ.to_string())
    out = {
        f"{k[0]}|{k[1]}|{k[2]}": {
            "accuracy_mean": v[("accuracy", "mean")],
            "accuracy_std": v[("accuracy", "std")],
            "auc_mean": v[("auc", "mean")],
            "auc_std": v[("auc", "std")],
        }
        for k, v in summ.iterrows()
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
