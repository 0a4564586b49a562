"""Tune a DP synthesizer on Adult WITHOUT looking at the real test split.

adult/train.csv is split once by a fixed public permutation (``numpy.random.default_rng(12345)``)
into 90 % "fit" rows and 10 % "validation" rows.  For every seed the synthesizer
``SYNTHESIZERS[method](**opts)`` is fitted on the fit rows with the public schema
``spec_from_adult()``, as many rows as the fit part are sampled, and the same 12 classifiers and
feature encoding as ``benchmarks/synth_adult.py`` (imported from it, not copied) are trained on
the synthetic rows and tested on the validation rows.  The test split is never read: use
``synth_adult.py`` once, at the end, to confirm.

``--method real`` evaluates the fit rows themselves (the no-privacy reference).
Seeds as in synth_adult.py: fit with ``RandomSource(seed)``, sample with ``RandomSource(seed+1000)``.

    .venv/bin/python benchmarks/synth_tune.py --method mst --eps 1 --seeds 0,1,2,3,4 \\
        --opt bins=16 --opt key=value ... [--jobs 2] [--json-out FILE]

Options are parsed with ``ast.literal_eval`` (int, float, bool, None, str, tuple, list, dict
literals), falling back to the raw string.  Output: one JSON line per seed, then a JSON summary
{method, opts, eps, delta, seeds, roc_mean, roc_std, prc_mean, prob_roc_mean, tv_mean,
fit_s_mean, per_classifier_roc}.  With ``--jobs N`` seeds run in N spawned processes (each
with one BLAS thread); default 1 (in-process, one at a time).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
DATA = ROOT.parent / "shared" / "datasets" / "adult"
SPLIT_SEED = 12345
FIT_FRACTION = 0.9

import numpy as np  # noqa: E402 - after the BLAS thread settings above
import pandas as pd  # noqa: E402 - after the BLAS thread settings above


def parse_opt(text: str):
    """'key=value' -> (key, literal value or the raw string)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--opt needs key=value, got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--opt: bad option name {key!r}")
    try:
        val = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        val = raw
    return key, val


def split_train():
    """(fit, validation) frames of adult/train.csv by the fixed public permutation."""
    train = pd.read_csv(DATA / "train.csv")
    perm = np.random.default_rng(SPLIT_SEED).permutation(len(train))
    n_fit = int(round(FIT_FRACTION * len(train)))
    fit = train.iloc[perm[:n_fit]].reset_index(drop=True)
    val = train.iloc[perm[n_fit:]].reset_index(drop=True)
    return fit, val


def run_seed(method: str, opts: dict, eps: float, delta: float, seed: int) -> dict:
    from synth_adult import evaluate, marginal_tv

    from dpstudio.engine.rng import RandomSource
    from dpstudio.engine.synth import SYNTHESIZERS
    from dpstudio.engine.synth.encoding import spec_from_adult

    fit_rows, val_rows = split_train()
    spec = spec_from_adult()
    t0 = time.perf_counter()
    if method == "real":  # reference row: the fit rows themselves (no privacy)
        synth, loss = fit_rows, None
    else:
        fitted = SYNTHESIZERS[method](**opts).fit(fit_rows, spec, epsilon=eps, delta=delta, rng=RandomSource(seed))
        loss = fitted.privacy_loss()
    fit_s = time.perf_counter() - t0
    if loss is not None:
        synth = fitted.sample(len(fit_rows), RandomSource(seed + 1000))
    clf = evaluate(synth, val_rows, spec, seed)
    return {
        "seed": seed,
        "roc": float(np.mean([r["roc"] for r in clf.values()])),
        "prc": float(np.mean([r["prc"] for r in clf.values()])),
        "prob_roc": float(np.mean([r["prob_roc"] for r in clf.values() if "prob_roc" in r])),
        "tv": marginal_tv(fit_rows, synth, spec),
        "fit_s": fit_s,
        "epsilon_spent": float(loss.epsilon) if loss else None,
        "delta_spent": float(loss.delta) if loss else None,
        "fit_info": {k: v for k, v in getattr(fitted, "info", {}).items() if isinstance(v, (int, float, str))}
        if loss
        else {},
        "per_classifier_roc": {k: v["roc"] for k, v in clf.items()},
    }


def _job(args):
    return run_seed(*args)


def summarise(method, opts, eps, delta, rows) -> dict:
    rocs = [r["roc"] for r in rows]
    return {
        "method": method,
        "opts": opts,
        "eps": eps,
        "delta": delta,
        "seeds": [r["seed"] for r in rows],
        "roc_mean": float(np.mean(rocs)),
        "roc_std": float(np.std(rocs)),
        "prc_mean": float(np.mean([r["prc"] for r in rows])),
        "prob_roc_mean": float(np.mean([r["prob_roc"] for r in rows])),
        "tv_mean": float(np.mean([r["tv"] for r in rows])),
        "fit_s_mean": float(np.mean([r["fit_s"] for r in rows])),
        "per_classifier_roc": {
            k: float(np.mean([r["per_classifier_roc"][k] for r in rows])) for k in rows[0]["per_classifier_roc"]
        },
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", default="mst")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds")
    ap.add_argument("--opt", action="append", type=parse_opt, default=[], metavar="KEY=VALUE")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json-out", default=None, help="also write the summary (with seed rows) here")
    a = ap.parse_args(argv)
    opts = dict(a.opt)
    if a.jobs > 1 and a.method in ("pearl", "merf"):
        # seeds already fill the cores: each fit's own training workers would only contend
        opts.setdefault("workers", 1)
    seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
    jobs = [(a.method, opts, a.eps, a.delta, s) for s in seeds]
    rows = []
    if a.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        with ProcessPoolExecutor(max_workers=a.jobs, mp_context=get_context("spawn")) as ex:
            for row in ex.map(_job, jobs):
                rows.append(row)
                print(json.dumps(row), flush=True)
    else:
        for j in jobs:
            row = _job(j)
            rows.append(row)
            print(json.dumps(row), flush=True)
    summary = summarise(a.method, opts, a.eps, a.delta, rows)
    print(json.dumps(summary, default=str), flush=True)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"summary": summary, "seeds": rows}, indent=1, default=str))
    return summary


if __name__ == "__main__":
    main()
