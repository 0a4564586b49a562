"""Benchmark: DP synthetic data on several real tables, released through the CLI as a user would.

Tables (``benchmarks/synth_tables_schemas.py``: public bounds and category lists, and where they
come from): the Adult split (given train/test files), the Fulton County PUMS extract (label
``employed``) and the SmartNoise medical demo records (label ``Outcome``, 3 classes).  The PUMS
and medical tables are split 80/20, stratified on the label, with ``numpy``/scikit-learn seed
``SPLIT_SEED``; the split is computed in memory each time (a run's training rows go to a
temporary file that the release reads and that is deleted after it).

**One run** = (table, mode, method, epsilon, seed):

1. ``dpstudio recipe init`` writes a recipe for the training rows: release type synthetic,
   ``--option method=<method>`` (every name in ``dpstudio.engine.synth.SYNTHESIZERS``, so a new
   synthesizer is picked up without changing this file), the typed (epsilon, delta = 1e-5),
   ``--seed <seed>``, every column's type and role, public numeric bounds, and per mode:
   ``public`` - the public category lists; ``dp`` - no list: ``--categories COL=dp`` for every
   categorical column (label included), i.e. the categories are estimated with DP inside the
   typed budget (domain source "dp", no candidates).  By default the product chooses each
   estimate's cost (``--dp-cost product``, what a user typing ``dp`` gets);
   ``--dp-cost share:F`` types an explicit cost of F * epsilon / k for each of the k columns.
2. ``dpstudio release RECIPE --output synth.csv --no-ledger --progress`` runs in a fresh child
   process (no report file is written).  Its wall seconds are measured around the child; its
   **fit seconds** are the time between its progress lines "loaded ... rows" and "sampling ...
   rows" (DP domain estimates + the synthesizer's fit; not loading, sampling or writing),
   timestamped by this process as the lines arrive.  **Peak RSS**: the release process's own
   peak (its ``VmHWM``, which it prints at exit: ``benchmarks/peak_rss.py``) plus the sum of the
   peaks (``VmHWM``, polled every 50 ms from /proc) of every process it spawned (PEARL's and
   DP-MERF's training workers, and multiprocessing's resource tracker) - an upper bound on the
   simultaneous total; ``n_workers`` counts those processes.  Rows without ``"rss": "vmhwm"``
   were measured with ``ru_maxrss`` from ``os.wait4``, which on Linux includes this benchmark
   process's own peak (inherited at exec), so their figure is only an upper bound (1,063 MB
   on every medical row: this process's evaluation matrix, not the release).
3. The synthetic CSV is read back and scored.

**Metrics.** Six classifiers (a fast subset of synth_adult.py's twelve): LogisticRegression,
GaussianNB, DecisionTree (balanced), RandomForest (50 trees, balanced), HistGradientBoosting,
MLP (one hidden layer of 64, early stopping), each ``random_state = seed``, trained on the
synthetic rows and tested on the real test split (``--validation``: on the validation rows).
Features: numbers scaled to [0, 1] with the public bounds (clipped) plus a missing indicator;
categories one-hot on the public list plus one "other/missing" slot - the same for real and
synthetic rows.

* ``hard_roc``: ROC-AUC of the hard predicted labels (seed 003's metric).  With K classes it is
  the macro mean over classes k of the AUC of the indicator [predicted = k] against
  [true = k] (one-vs-rest); for K = 2 this equals the binary hard-label AUC.
* ``prob_roc``: ROC-AUC of ``predict_proba``: binary - the positive class's probability;
  multiclass - macro one-vs-rest (``roc_auc_score(multi_class="ovr", average="macro")``),
  classes absent from the synthetic rows get probability 0.  A synthetic table with one class
  scores 0.5 for both.
* Both are averaged over the six classifiers (``clf`` keeps each one's).
* ``tv1`` / ``tv2``: mean total-variation distance between the synthetic rows and the real
  training rows of every 1-way / every 2-way marginal (label included), numbers on 20 equal
  bins of their public bounds (values outside clipped) plus a missing cell, categories on the
  public list plus one "other/missing" cell.

A "real data" baseline row per table trains the classifiers on the real training rows.

**Grid and output.**  tables x modes x methods x eps {0.3, 1, 4} x seeds {0, 1, 2}; one JSON
line per run appended to ``--out`` (default benchmarks/results_synth_tables.jsonl); runs already
there (same table, mode, method, epsilon, seed, split, row limit, dp cost) are skipped, failed
ones too unless ``--retry-failed``.  ``--jobs 2`` runs two at once (each in its own process,
each release in its own child; with two at once the seconds are contended - the row says
``jobs``).  ``--validation`` carves a stratified 10 % validation split from the training rows
(``VAL_SEED``), releases from the rest and scores on the validation rows: tune there, never
on test.  ``--report`` renders "## Synthetic data on several real tables" from the test-split
rows and replaces that section of benchmarks/RESULTS.md (appends it if absent).

    .venv/bin/python benchmarks/synth_tables.py --tables adult --methods mst --eps 1 --seeds 0
    .venv/bin/python benchmarks/synth_tables.py --jobs 2            # the whole grid (hours)
    .venv/bin/python benchmarks/synth_tables.py --report            # RESULTS.md from the file
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402 - after the BLAS thread settings above
import pandas as pd  # noqa: E402 - after the BLAS thread settings above
from peak_rss import MARK, child_peak_mb, module_command  # noqa: E402
from synth_tables_schemas import TABLES, Numeric, TableSchema  # noqa: E402

SPLIT_SEED = 20261124
VAL_SEED = 12345
TEST_FRACTION = 0.2
VAL_FRACTION = 0.1
DELTA = 1e-5
TV_BINS = 20
DEFAULT_OUT = ROOT / "benchmarks" / "results_synth_tables.jsonl"
RESULTS_MD = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "## Synthetic data on several real tables"
MODES = ("public", "dp")
DEFAULT_EPS = (0.3, 1.0, 4.0)
DEFAULT_SEEDS = (0, 1, 2)
SPARSE = ("DecisionTree", "RandomForest")
CLASSIFIERS = ("LogisticRegression", "GaussianNB", "DecisionTree", "RandomForest", "HistGradientBoosting", "MLP")


def methods() -> list[str]:
    from dpstudio.engine.synth import SYNTHESIZERS

    return list(SYNTHESIZERS)


# ---- data --------------------------------------------------------------------------------------


def read_raw(path: Path) -> pd.DataFrame:
    """The file as text cells (empty cells stay ""), so a split is written back unchanged."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def parse(raw: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """Kept columns: numbers as floats (NaN when empty or not a number), categories as text
    (NaN when empty)."""
    out = {}
    for c, d in schema.columns.items():
        s = raw[c] if c in raw.columns else pd.Series([""] * len(raw), index=raw.index)
        if isinstance(d, Numeric):
            out[c] = pd.to_numeric(s, errors="coerce").astype(np.float64)
        else:
            s = s.astype(object).where(s.notna(), "")
            out[c] = s.where(s != "", np.nan)
    return pd.DataFrame(out, index=raw.index)


def _stratified(frame: pd.DataFrame, label: str, fraction: float, seed: int):
    from sklearn.model_selection import train_test_split

    keep, held = train_test_split(frame, test_size=fraction, random_state=seed, stratify=frame[label])
    return keep.reset_index(drop=True), held.reset_index(drop=True)


def splits(schema: TableSchema, validation: bool = False, max_rows: int | None = None):
    """(train_raw, eval_raw, train_is_file): raw text frames of the training rows and of the rows
    scored on (test, or validation with ``validation``); ``train_is_file`` when the training
    rows are exactly the table's training file (then the release reads that file)."""
    raw = read_raw(schema.train)
    if schema.test is not None:
        train, test = raw, read_raw(schema.test)
        as_file = True
    else:
        train, test = _stratified(raw, schema.label, TEST_FRACTION, SPLIT_SEED)
        as_file = False
    if validation:
        train, test = _stratified(train, schema.label, VAL_FRACTION, VAL_SEED)
        as_file = False
    if max_rows is not None:
        if len(train) > max_rows:
            train = _stratified(train, schema.label, 1 - max_rows / len(train), SPLIT_SEED)[0]
            as_file = False
        if len(test) > max_rows:
            test = _stratified(test, schema.label, 1 - max_rows / len(test), SPLIT_SEED)[0]
    return train, test, as_file


# ---- the release, through the CLI --------------------------------------------------------------


def _fmt(x: float) -> str:
    """A number as a user would type it (integers without a decimal point)."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def recipe_args(
    schema: TableSchema, mode: str, method: str, eps: float, seed: int, dp_cost: str = "product"
) -> list[str]:
    """The ``recipe init`` options a user would type for this table."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: choose one of {', '.join(MODES)}")
    args = ["--release", "synthetic", "--epsilon", _fmt(eps), "--delta", _fmt(DELTA), "--seed", str(seed)]
    args += ["--option", f"method={method}", "--format", "csv", "--confirm-inferred"]
    for c in schema.identifiers:
        args += ["--role", f"{c}=identifier"]
    for c in schema.ignored:
        args += ["--role", f"{c}=ignore"]
    cats = schema.categorical
    per_col = None
    if mode == "dp" and dp_cost != "product":
        kind, _, share = dp_cost.partition(":")
        if kind != "share" or not share:
            raise ValueError(f"dp cost {dp_cost!r}: expected 'product' or 'share:F'")
        per_col = float(share) * float(eps) / len(cats)
    for c, d in schema.columns.items():
        args += ["--role", f"{c}={'label' if c == schema.label else 'sensitive'}"]
        if isinstance(d, Numeric):
            args += [
                "--type",
                f"{c}={'integer' if d.integer else 'float'}",
                "--bounds",
                f"{c}={_fmt(d.low)}:{_fmt(d.high)}",
            ]
        else:
            args += ["--type", f"{c}=categorical"]
            if mode == "public":
                args += ["--categories", f"{c}={','.join(d)}"]
            else:
                args += ["--categories", f"{c}=dp" + ("" if per_col is None else f":{per_col!r}")]
    return args


def _child_env(home: Path, blas_threads: int) -> dict[str, str]:
    env = dict(os.environ)
    # nothing of the user's: a ledger, preferences and output folder of this run only
    env["DPSTUDIO_LEDGER"] = str(home / "ledger.sqlite")
    env["DPSTUDIO_PREFS"] = str(home / "preferences.json")
    env["DPSTUDIO_OUTPUT_DIR"] = str(home / "outputs")
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(blas_threads)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                kids = Path(f"/proc/{p}/task/{t}/children").read_text().split()
            except OSError:
                continue
            for k in kids:
                out.append(int(k))
                todo.append(int(k))
    return out


def _hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def run_cli(args: list[str], env: dict[str, str], cwd: Path, poll: float = 0.05) -> dict:
    """Run ``python -m dpstudio ARGS`` in a child; wall seconds, stdout, timestamped stderr lines,
    the child's own peak RSS (its VmHWM, printed at exit) and the peaks of the processes it spawned."""
    cmd = module_command("dpstudio", *args)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []
    out_parts: list[str] = []

    def read_err():
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))

    def read_out():
        assert proc.stdout is not None
        out_parts.append(proc.stdout.read())

    readers = [threading.Thread(target=read_err, daemon=True), threading.Thread(target=read_out, daemon=True)]
    for r in readers:
        r.start()
    kids: dict[int, float] = {}
    own = 0.0  # polled, in case the child dies before it can print its peak
    while True:
        pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        own = max(own, _hwm_mb(proc.pid) or 0.0)
        for k in _descendants(proc.pid):
            hwm = _hwm_mb(k)
            if hwm is not None:
                kids[k] = max(kids.get(k, 0.0), hwm)
        time.sleep(poll)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join()
    return {
        "returncode": proc.returncode,
        "wall_s": wall,
        "stdout": "".join(out_parts),
        "stderr": lines,
        "rss_main_mb": child_peak_mb([line for _t, line in lines]) or own,
        "rss_workers_mb": float(sum(kids.values())),
        "n_workers": len(kids),
    }


def fit_seconds(stderr: list[tuple[float, str]]) -> float | None:
    """From the release's progress lines: 'loaded ... rows' to 'sampling ... rows'."""
    start = next((t for t, s in stderr if "] loaded " in s), None)
    end = next((t for t, s in stderr if "] sampling " in s), None)
    return None if start is None or end is None else end - start


def release(
    schema: TableSchema,
    mode: str,
    method: str,
    eps: float,
    seed: int,
    train_raw: pd.DataFrame,
    train_is_file: bool,
    *,
    dp_cost: str = "product",
    blas_threads: int = 1,
) -> dict:
    """Recipe + release through the CLI; the synthetic rows (raw text) or the error."""
    with tempfile.TemporaryDirectory(prefix="dpstudio-bench-") as tmp:
        home = Path(tmp)
        env = _child_env(home, blas_threads)
        if train_is_file:
            data = schema.train
        else:
            data = home / f"{schema.name}_train.csv"
            train_raw.to_csv(data, index=False)
        recipe = home / "recipe.json"
        init = run_cli(
            ["recipe", "init", str(data), "-o", str(recipe), *recipe_args(schema, mode, method, eps, seed, dp_cost)],
            env,
            home,
        )
        if init["returncode"] != 0:
            return {"status": "failed", "stage": "recipe init", "error": _tail(init)}
        out = home / "synth.csv"
        run = run_cli(["release", str(recipe), "--output", str(out), "--no-ledger", "--progress"], env, home)
        res = {
            "wall_s": run["wall_s"],
            "fit_s": fit_seconds(run["stderr"]),
            "rss_main_mb": run["rss_main_mb"],
            "rss_workers_mb": run["rss_workers_mb"],
            "peak_rss_mb": run["rss_main_mb"] + run["rss_workers_mb"],
            "n_workers": run["n_workers"],
            "rss": "vmhwm",  # the release's own peak (older rows: ru_maxrss, an upper bound)
        }
        if run["returncode"] != 0 or not out.exists():
            res.update(status="failed", stage="release", error=_tail(run))
            return res
        try:
            summary = json.loads(run["stdout"])
            res["epsilon_spent"] = summary["total"]["epsilon"]
            res["delta_spent"] = summary["total"]["delta"]
        except (ValueError, KeyError, TypeError):
            pass
        res["status"] = "ok"
        res["synth"] = read_raw(out)
        return res


def _tail(run: dict, n: int = 6) -> str:
    # the product's messages, without progress lines or the temporary file names
    msgs = [s.strip().removeprefix("- ") for _, s in run["stderr"] if not s.startswith(("[", "wrote ", MARK))]
    return " | ".join(msgs[-n:]) or f"exit code {run['returncode']}"


# ---- metrics -----------------------------------------------------------------------------------


def _classifiers(seed: int) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    return {
        "LogisticRegression": LogisticRegression(solver="lbfgs", max_iter=2000),
        "GaussianNB": GaussianNB(),
        "DecisionTree": DecisionTreeClassifier(class_weight="balanced", random_state=seed),
        "RandomForest": RandomForestClassifier(n_estimators=50, class_weight="balanced", random_state=seed),
        "HistGradientBoosting": HistGradientBoostingClassifier(random_state=seed),
        "MLP": MLPClassifier(hidden_layer_sizes=(64,), max_iter=200, early_stopping=True, random_state=seed),
    }


def codes(frame: pd.DataFrame, schema: TableSchema, col: str) -> tuple[np.ndarray, int]:
    """Cell index of every row and the number of cells: numbers on TV_BINS public bins + a
    missing cell; categories on the public list + one other/missing cell."""
    d = schema.columns[col]
    if isinstance(d, Numeric):
        v = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=np.float64)
        miss = np.isnan(v)
        u = (np.clip(np.where(miss, d.low, v), d.low, d.high) - d.low) / (d.high - d.low)
        k = np.minimum((u * TV_BINS).astype(np.int64), TV_BINS - 1)
        return np.where(miss, TV_BINS, k), TV_BINS + 1
    s = frame[col].astype(object)
    k = pd.Categorical(s.where(s.isin(d)), categories=list(d)).codes.astype(np.int64)  # off the list: -1
    return np.where(k < 0, len(d), k), len(d) + 1


def marginal_tv(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema) -> tuple[float, float]:
    """(mean TV of the 1-way marginals, mean TV of the 2-way marginals)."""
    cols = list(schema.columns)
    rc = {c: codes(real, schema, c) for c in cols}
    sc = {c: codes(synth, schema, c) for c in cols}

    def tv(a: np.ndarray, b: np.ndarray, m: int) -> float:
        p = np.bincount(a, minlength=m) / max(len(a), 1)
        q = np.bincount(b, minlength=m) / max(len(b), 1)
        return 0.5 * float(np.abs(p - q).sum())

    one = [tv(rc[c][0], sc[c][0], rc[c][1]) for c in cols]
    two = []
    for i, a in enumerate(cols):
        for b in cols[i + 1 :]:
            mb = rc[b][1]
            two.append(tv(rc[a][0] * mb + rc[b][0], sc[a][0] * mb + sc[b][0], rc[a][1] * mb))
    return float(np.mean(one)), float(np.mean(two)) if two else 0.0


def features(frame: pd.DataFrame, schema: TableSchema) -> np.ndarray:
    blocks = []
    for c, d in schema.columns.items():
        if c == schema.label:
            continue
        if isinstance(d, Numeric):
            v = pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64)
            miss = np.isnan(v)
            u = (np.clip(np.where(miss, d.low, v), d.low, d.high) - d.low) / (d.high - d.low)
            blocks += [np.where(miss, 0.5, u)[:, None], miss[:, None].astype(np.float64)]
        else:
            k, m = codes(frame, schema, c)
            one = np.zeros((len(frame), m), dtype=np.float64)
            one[np.arange(len(frame)), k] = 1.0
            blocks.append(one)
    return np.hstack(blocks).astype(np.float32)


def labels(frame: pd.DataFrame, schema: TableSchema) -> np.ndarray:
    """Class index on the public label list; rows whose label is off the list get -1."""
    k, m = codes(frame, schema, schema.label)
    return np.where(k == m - 1, -1, k)


def hard_roc(y: np.ndarray, pred: np.ndarray, n_classes: int) -> float:
    """Macro one-vs-rest AUC of hard labels (the binary hard-label AUC when K = 2)."""
    from sklearn.metrics import roc_auc_score

    if n_classes == 2:
        return float(roc_auc_score(y == 1, pred == 1))
    aucs = [roc_auc_score(y == k, pred == k) for k in range(n_classes) if 0 < (y == k).sum() < len(y)]
    return float(np.mean(aucs))


def prob_roc(y: np.ndarray, proba: np.ndarray, n_classes: int) -> float:
    from sklearn.metrics import roc_auc_score

    if n_classes == 2:
        return float(roc_auc_score(y == 1, proba[:, 1]))
    present = [k for k in range(n_classes) if 0 < (y == k).sum() < len(y)]
    return float(np.mean([roc_auc_score(y == k, proba[:, k]) for k in present]))


def evaluate(train: pd.DataFrame, test: pd.DataFrame, schema: TableSchema, seed: int) -> dict:
    """Each classifier's hard and probability ROC: trained on ``train``, scored on ``test``
    (test rows whose label is off the public list are not scored; none in these tables)."""
    from scipy import sparse

    n_classes = len(schema.columns[schema.label])
    ytr, yte = labels(train, schema), labels(test, schema)
    keep_tr, keep_te = ytr >= 0, yte >= 0
    xtr, xte = features(train, schema)[keep_tr], features(test, schema)[keep_te]
    ytr, yte = ytr[keep_tr], yte[keep_te]
    sp_tr, sp_te = sparse.csr_matrix(xtr), sparse.csr_matrix(xte)
    out = {}
    for name, clf in _classifiers(seed).items():
        if len(np.unique(ytr)) < 2:
            out[name] = {"hard_roc": 0.5, "prob_roc": 0.5}
            continue
        # the trees get the same features as a sparse matrix: same splits, many times faster on
        # wide one-hot blocks (a 1,000-category zip)
        a, b = (sp_tr, sp_te) if name in SPARSE else (xtr, xte)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(a, ytr)
            pred = clf.predict(b)
            proba = np.zeros((len(xte), n_classes))
            proba[:, clf.classes_] = clf.predict_proba(b)
        out[name] = {"hard_roc": hard_roc(yte, pred, n_classes), "prob_roc": prob_roc(yte, proba, n_classes)}
    return out


# ---- runs --------------------------------------------------------------------------------------


def run_key(row: dict) -> tuple:
    eps = row.get("epsilon")
    return (
        row["table"],
        row["mode"],
        row["method"],
        None if eps is None else round(float(eps), 9),
        row["seed"],
        row["split"],
        row.get("max_rows"),
        row.get("dp_cost") if row["mode"] == "dp" else None,
    )


def one_run(job: dict) -> dict:
    """A release (or the real-data baseline when method == "real") and its scores, as one JSON row."""
    schema = TABLES[job["table"]]
    train_raw, test_raw, as_file = splits(schema, job["split"] == "validation", job.get("max_rows"))
    train, test = parse(train_raw, schema), parse(test_raw, schema)
    row = {k: job[k] for k in ("table", "mode", "method", "epsilon", "seed", "split", "max_rows")}
    if job["mode"] == "dp":
        row["dp_cost"] = job["dp_cost"]
    row.update(delta=None if job["method"] == "real" else DELTA, n_train=len(train), n_eval=len(test))
    row.update(jobs=job.get("jobs", 1), blas_threads=job.get("blas_threads", 1), date=_now(), commit=_commit())
    t0 = time.perf_counter()
    if job["method"] == "real":
        synth = train
        row["status"] = "ok"
    else:
        res = release(
            schema,
            job["mode"],
            job["method"],
            job["epsilon"],
            job["seed"],
            train_raw,
            as_file,
            dp_cost=job.get("dp_cost", "product"),
            blas_threads=job.get("blas_threads", 1),
        )
        raw = res.pop("synth", None)
        row.update(res)
        if res["status"] != "ok":
            return row
        synth = parse(raw, schema)
        row["synth_rows"] = len(synth)
        row["synth_distinct"] = {c: int(synth[c].nunique()) for c in schema.categorical}
    clf = evaluate(synth, test, schema, job["seed"])
    row["clf"] = clf
    row["hard_roc"] = float(np.mean([r["hard_roc"] for r in clf.values()]))
    row["prob_roc"] = float(np.mean([r["prob_roc"] for r in clf.values()]))
    if job["method"] == "real":
        row["tv1"] = row["tv2"] = 0.0
    else:
        row["tv1"], row["tv2"] = marginal_tv(train, synth, schema)
    row["eval_s"] = time.perf_counter() - t0 - row.get("wall_s", 0.0)
    return row


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut by an interrupted run
    return rows


def plan_jobs(a, done: set) -> list[dict]:
    split = "validation" if a.validation else "test"
    common = {"split": split, "max_rows": a.max_rows, "jobs": a.jobs, "blas_threads": a.blas_threads}
    jobs = []
    for table in a.tables:
        base = {"table": table, "mode": "-", "method": "real", "epsilon": None, "seed": 0, **common}
        jobs.append(base)
        for mode in a.modes:
            for method in a.methods:
                for eps in a.eps:
                    for seed in a.seeds:
                        job = {"table": table, "mode": mode, "method": method, "epsilon": eps, "seed": seed}
                        job.update(common)
                        if mode == "dp":
                            job["dp_cost"] = a.dp_cost
                        jobs.append(job)
    return [j for j in jobs if run_key(j) not in done]


def _csv(text: str, conv=str) -> list:
    return [conv(x.strip()) for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", default=",".join(TABLES), help="comma-separated: " + ", ".join(TABLES))
    ap.add_argument("--methods", default=None, help="comma-separated (default: every synthesizer)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--eps", default=",".join(str(e) for e in DEFAULT_EPS))
    ap.add_argument("--seeds", default=",".join(str(s) for s in DEFAULT_SEEDS))
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (each its own process and release)")
    ap.add_argument("--validation", action="store_true", help="score on a validation split of the training rows")
    ap.add_argument("--max-rows", type=int, default=None, help="a stratified slice of this many train/eval rows")
    ap.add_argument("--dp-cost", default="product", help="dp mode: 'product' (type 'dp') or 'share:F'")
    ap.add_argument("--blas-threads", type=int, default=1)
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="JSON lines file (appended; resumable)")
    ap.add_argument("--retry-failed", action="store_true")
    ap.add_argument("--no-baseline", action="store_true", help="skip the real-data rows")
    ap.add_argument("--report", action="store_true", help="render the markdown section from --out, run nothing")
    ap.add_argument("--results-md", default=str(RESULTS_MD))
    ap.add_argument("--dry-run", action="store_true", help="list the runs still to do")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.report:
        md = markdown(load_rows(out), source=out)
        write_section(Path(a.results_md), md)
        print(md)
        return 0
    a.tables = _csv(a.tables)
    unknown = [t for t in a.tables if t not in TABLES]
    if unknown:
        ap.error(f"--tables: unknown {unknown}; choose from {list(TABLES)}")
    a.methods = _csv(a.methods) if a.methods else methods()
    bad = [m for m in a.methods if m not in methods()]
    if bad:
        ap.error(f"--methods: unknown {bad}; choose from {methods()}")
    a.modes = _csv(a.modes)
    if any(m not in MODES for m in a.modes):
        ap.error(f"--modes: choose from {MODES}")
    a.eps = _csv(a.eps, float)
    a.seeds = _csv(a.seeds, int)
    rows = load_rows(out)
    done = {run_key(r) for r in rows if r.get("status") == "ok" or not a.retry_failed}
    jobs = plan_jobs(a, done)
    if a.no_baseline:
        jobs = [j for j in jobs if j["method"] != "real"]
    print(f"{len(jobs)} run(s) to do ({len(rows)} row(s) in {out})", file=sys.stderr, flush=True)
    if a.dry_run:
        for j in jobs:
            print(json.dumps(j))
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()

    def record(row: dict) -> None:
        with out.open("a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")
        print(json.dumps(row, default=str), flush=True)
        brief = (
            f"hard {row['hard_roc']:.3f} prob {row['prob_roc']:.3f} tv1 {row['tv1']:.3f} tv2 {row['tv2']:.3f}"
            if row.get("status") == "ok"
            else f"FAILED ({row.get('stage')}): {row.get('error', '')[:200]}"
        )
        print(
            f"{row['table']} {row['mode']} {row['method']} eps={row['epsilon']} seed={row['seed']}: {brief} "
            f"wall={row.get('wall_s') or 0:.1f}s fit={row.get('fit_s') or 0:.1f}s "
            f"rss={row.get('peak_rss_mb') or 0:.0f}MB  [{time.perf_counter() - t_all:.0f}s]",
            file=sys.stderr,
            flush=True,
        )

    if a.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from multiprocessing import get_context

        with ProcessPoolExecutor(max_workers=a.jobs, mp_context=get_context("spawn")) as ex:
            futures = [ex.submit(one_run, j) for j in jobs]
            for f in as_completed(futures):
                record(f.result())
    else:
        for j in jobs:
            record(one_run(j))
    return 0


# ---- report ------------------------------------------------------------------------------------


def _ms(values: list[float], digits: int = 3) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def _machine(rows: list[dict]) -> str:
    try:
        from threadpoolctl import threadpool_info

        blas = (
            ", ".join(sorted({f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info()})) or "none loaded"
        )
    except ImportError:
        blas = "unknown"
    dates = sorted({r["date"] for r in rows if r.get("date")})
    commits = sorted({r["commit"] for r in rows if r.get("commit")})
    threads = sorted({str(r.get("blas_threads")) for r in rows if r.get("blas_threads") is not None})
    jobs = sorted({str(r.get("jobs")) for r in rows if r.get("jobs") is not None})
    span = f"{dates[0]} to {dates[-1]}" if len(dates) > 1 else (dates[0] if dates else "?")
    return (
        f"Machine: {os.uname().nodename}, {os.cpu_count()} cores; runs from {span} at commit(s) "
        f"{', '.join(commits) or '?'}; {'/'.join(threads) or '?'} BLAS thread(s) per release "
        f"(report rendered with {blas}); {'/'.join(jobs) or '?'} run(s) at once."
    )


def markdown(rows: list[dict], source: Path | None = None, *, slices: bool = False) -> str:
    """The RESULTS.md section from the test-split rows (runs on a row slice only with ``slices``)."""
    rows = [r for r in rows if r.get("split") == "test" and (slices or r.get("max_rows") is None)]
    # one row per run: a success wins over failures of the same run (--retry-failed), else the last
    by_key: dict[tuple, dict] = {}
    for r in rows:
        k = run_key(r)
        if k not in by_key or r.get("status") == "ok" or by_key[k].get("status") != "ok":
            by_key[k] = r
    rows = list(by_key.values())
    lines = [
        SECTION,
        "",
        "Generated by `benchmarks/synth_tables.py --report`"
        + (f" from `{source.relative_to(ROOT) if source.is_relative_to(ROOT) else source.name}`" if source else "")
        + ". Each run releases the training rows through the CLI as a user would (`recipe init` "
        "with the public bounds, then `release` in a fresh process), δ = 1e-5; **public**: the "
        "public category lists typed; **dp**: no list, the categories estimated with DP inside the "
        "typed ε. Six classifiers (logistic regression, Gaussian naive Bayes, decision tree, random "
        "forest of 50, histogram gradient boosting, one-layer MLP) trained on the synthetic rows, "
        "tested on the real test split. Each cell: hard-label ROC / probability ROC (mean ± std over "
        "seeds; 3 classes: macro one-vs-rest) / mean total variation of 1-way / of 2-way marginals "
        "against the real training rows / fit seconds / peak RSS MB of the release (its training "
        'workers included; "≤": rows measured before the release\'s own peak was read, whose '
        "figure includes this benchmark process's peak, an upper bound). Definitions in the "
        "script's docstring.",
        "",
    ]
    lines.append(_machine(rows))
    lines.append("")
    for table, schema in TABLES.items():
        trows = [r for r in rows if r["table"] == table]
        if not trows:
            continue
        eps_list = sorted({float(r["epsilon"]) for r in trows if r.get("epsilon") is not None})
        lines += [f"### {table}", "", f"{schema.note}; label `{schema.label}`.", ""]
        lines.append("| method | categories | " + " | ".join(f"ε = {e:g}" for e in eps_list) + " |")
        lines.append("|---|---|" + "---|" * len(eps_list))
        real = [r for r in trows if r["method"] == "real" and r.get("status") == "ok"]
        if real:
            cell = f"{_ms([r['hard_roc'] for r in real])} / {_ms([r['prob_roc'] for r in real])}"
            lines.append("| real data | - | " + " | ".join(cell for _ in eps_list) + " |")
        order = {m: i for i, m in enumerate(methods())}
        combos = sorted(
            {(r["method"], r["mode"]) for r in trows if r["method"] != "real"},
            key=lambda mm: (order.get(mm[0], 99), mm[0], MODES.index(mm[1]) if mm[1] in MODES else 9),
        )
        for method, mode in combos:
            cells = []
            for e in eps_list:
                grp = [
                    r
                    for r in trows
                    if r["method"] == method
                    and r["mode"] == mode
                    and r.get("epsilon") is not None
                    and abs(float(r["epsilon"]) - e) < 1e-12
                ]
                ok = [r for r in grp if r.get("status") == "ok"]
                failed = len(grp) - len(ok)
                if not ok:
                    cells.append(f"failed ({failed})" if failed else "-")
                    continue
                fit = [r["fit_s"] for r in ok if r.get("fit_s") is not None]
                cell = (
                    f"{_ms([r['hard_roc'] for r in ok])} / {_ms([r['prob_roc'] for r in ok])} / "
                    f"{np.mean([r['tv1'] for r in ok]):.3f} / {np.mean([r['tv2'] for r in ok]):.3f} / "
                    + (f"{np.mean(fit):.1f} s" if fit else "- s")
                    + f" / {'' if all(r.get('rss') == 'vmhwm' for r in ok) else '≤ '}"
                    + f"{np.mean([r['peak_rss_mb'] for r in ok]):.0f} MB"
                )
                if len(ok) != 3 or failed:
                    cell += f" ({len(ok)} seed{'s' if len(ok) != 1 else ''}" + (
                        f", {failed} failed)" if failed else ")"
                    )
                cells.append(cell)
            lines.append(f"| {method} | {mode} | " + " | ".join(cells) + " |")
        lines.append("")
        if real and np.mean([r["prob_roc"] for r in real]) < 0.55:
            lines += [
                "The real training rows themselves do not predict the label of this table "
                "(probability ROC about 0.5): only the TV columns compare the methods here.",
                "",
            ]
        costs = sorted({str(r.get("dp_cost")) for r in trows if r["mode"] == "dp"})
        if costs:
            lines += [
                "dp mode: cost of each category estimate: "
                + ", ".join("the product's default ('dp')" if c == "product" else c for c in costs)
                + ".",
                "",
            ]
        fails = [r for r in trows if r.get("status") != "ok"]
        if fails:
            reasons = sorted({(r["method"], r["mode"], str(r.get("error", ""))[:160]) for r in fails})
            lines.append("Failed runs: " + "; ".join(f"{m} ({mo}): {e}" for m, mo, e in reasons[:6]) + ".")
            lines.append("")
    return "\n".join(lines) + "\n"


def write_section(path: Path, md: str) -> None:
    """Replace the section (up to the next '## ' heading) or append it; nothing else changes."""
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    start = text.find(SECTION + "\n")
    if start >= 0:
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + md + ("\n" + text[nxt + 1 :] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + md
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
