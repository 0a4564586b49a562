"""Benchmark: releases at scale -- streamed, in memory and on Dask -- against a numpy + pyarrow
floor, on generated tables of 1M, 10M and 50M rows x 20 columns (issue 20, item 3).

**Input tables** (plain random data, not DP): ``n`` rows x 20 columns, 10 numeric (integer ages,
counts and hours; floats with skew: a log-normal income, a Laplace balance, a Beta score) and 10
categorical (2 to 50 text labels each, Zipf-like frequencies), no missing cells.  Generated in
chunks of 1,000,000 rows (chunk ``k`` from ``SeedSequence([seed, k])``, so a smaller table is
not a prefix of a larger one, but every table is reproducible from its seed), written with
``pyarrow.parquet.ParquetWriter`` (one row group per chunk), to a temporary name then renamed.
Cached under ``--data-dir`` (default /tmp/dpstudio-bench-scale, never inside the repository):
a file whose Parquet metadata says the same rows, seed and generator version is reused.

**Recipes** (``dpstudio recipe init``, as a user would type it): every column sensitive (so the
record release perturbs 20 values per row), its type, public bounds and category list given on
the command line, epsilon 1, ``--confirm-inferred``, output format Parquet.  A *record* recipe
(Laplace for numbers, randomized response for categories: the product's defaults) and a
*synthetic* one (``--release synthetic --synth mst --rows 1000000``, label ``status``, delta
``min(1e-6, 0.1 / n)``: the product's default for that n, typed).  ``recipe init`` loads the whole
table in memory (it is not streamed), so for tables above 20,000 rows it runs on the table's
first 20,000 rows and the recipe is then pointed at the table (``input.path`` and the table's
SHA-256 from dpstudio's own ``fingerprint``): every type, role, bound and list is typed, so
nothing in the recipe depends on which rows init read.

**Runs**, each in a fresh child process (``python -m dpstudio release RECIPE --output
OUT.parquet --no-ledger --progress --engine E``), output to a temporary directory under
``--data-dir``, deleted after the run:

* ``floor``: numpy + pyarrow only, Parquet -> Parquet: batches of 262,144 rows
  (``ParquetFile.iter_batches``); numbers + numpy Laplace noise (scale = range / (epsilon / 20)),
  clipped to the bounds, integers rounded; categories read as dictionary arrays, mapped to codes
  on the public list (``pyarrow.compute.index_in`` on each batch's dictionary) and replaced by
  another code with probability ``1 - e^e / (e^e + k - 1)`` (k-ary randomized response, one
  uniform draw per cell, vectorised), written back as text (dictionary-encoded) with
  ``ParquetWriter``.  numpy's PCG64 (not a secure source): a lower bound, not a DP release.
* ``stream`` / ``memory`` / ``dask``: the record release with ``--engine stream|memory|dask``.
* ``mst-stream`` / ``mst-memory`` / ``mst-dask``: the MST fit (synthetic recipe), 1M rows sampled
  and written.
* ``memory`` runs only when ``n * 20 * 8 * 4`` bytes < 60 % of MemAvailable (read just before the
  run); else the row says ``skipped: would need ~X GB``.
* ``dask``: ``dpstudio.pipeline.cluster.local_cluster(2)`` - the local cluster dpstudio itself
  starts: two single-threaded worker processes with the glibc malloc thresholds of
  ``WORKER_MALLOC`` (rows before 2026-11-24 13:30 UTC ran Dask's default worker environment,
  whose fixed 128 KiB mmap threshold slowed the perturbation 2.6 x) - started by this script
  (its scheduler lives in this process), the
  address passed with ``--scheduler``; ``client.restart()`` before every run, so each worker's
  peak RSS is the run's own, then each worker imports what a release runs there (numpy, pandas,
  pyarrow, dask.dataframe, dpstudio's pipeline and plan modules: ``WORKER_IMPORTS``), so the run
  is timed on warm workers as on a cluster that is up (the imports' memory is in the peaks
  either way).  If ``--engine dask`` fails (not installed, not implemented), the row says
  ``failed`` with the product's message and the others go on.  The tables' Parquet row groups
  hold 1,000,000 rows each (pyarrow's default size): how many pieces a reader can split the
  file into is the engine's business, not this script's.

**Measured** per run: wall seconds around the child (Python start and imports included: end to
end), CPU seconds of the child, rows/s, perturbed values/s (rows x 20, record releases), peak
RSS of the release process (its own ``VmHWM``, printed at exit: ``benchmarks/peak_rss.py``;
rows without ``"rss": "vmhwm"`` used ``ru_maxrss`` from ``os.wait4``, which includes this
script's own peak inherited at exec, an upper bound), the peaks of any
process it spawned (``VmHWM`` polled), of each Dask worker (``VmHWM`` after the run, PIDs from
``client.run(os.getpid)``), MST fit seconds (progress line "loaded" -> "sampling", when the
engine prints them), the rows written (Parquet metadata) and the engine the release reports.

**Ratios and targets** are computed from runs of one session (one invocation of this script):
stream/floor, dask/stream (and mst-dask/mst-stream) at each size, 50M/1M per run kind; a ratio
whose two sides were only measured in different sessions is shown "across sessions" and not
judged (run both in one invocation, e.g. ``--sizes 1M,50M``, with ``--again`` if needed).  Targets
(issue 20; PASS/FAIL, never loosened): peak RSS <= 1.5 GB (1.5e9 bytes) when streamed, at every
size; 50M time <= 55 x the 1M time; streamed record release >= 10M perturbed values/s end to end;
streamed record release <= 2 x the floor; Dask <= 1.5 x the streamed run.

**Output**: one JSON line per run (one repeat) printed and appended to ``--out``; runs already in
the file with status ok (or a memory-guard skip) for the same commit, size, run and repeat are
skipped (failed ones are run again; ``--again`` runs everything asked for).  A run still going
after ``--timeout`` seconds (default 5400) is killed and recorded as failed.  Medians over
``--repeats`` (default 3 below 50M rows, 1 at 50M); the repeats of one size are interleaved
(floor, stream, ... then again) so a slow spell of the host falls on every run kind.
``--report`` renders the markdown table and the target checks from ``--out`` and runs nothing.

    .venv/bin/python benchmarks/bench_scale.py --sizes 1M --runs floor,stream --repeats 1
    .venv/bin/python benchmarks/bench_scale.py --sizes 1M,10M,50M --dry-run   # what would run
    .venv/bin/python benchmarks/bench_scale.py --sizes 1M,10M,50M   # every run (hours: see the report)
    .venv/bin/python benchmarks/bench_scale.py --report
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402 - after the BLAS thread settings above

sys.path.insert(0, str(ROOT / "benchmarks"))
from peak_rss import MARK, child_peak_mb, module_command, script_command  # noqa: E402

GEN_VERSION = 1
CHUNK_ROWS = 1_000_000
BLOCK_ROWS = 262_144
SAMPLE_ROWS = 20_000  # recipe init reads this many rows of a larger table
EPSILON = 1.0
SYNTH_ROWS = 1_000_000
SYNTH_LABEL = "status"
DEFAULT_DATA_DIR = Path("/tmp/dpstudio-bench-scale")
DEFAULT_OUT = ROOT / "benchmarks" / "results_scale.jsonl"
META_KEY = b"dpstudio_bench_scale"
RUNS = ("floor", "stream", "memory", "dask", "mst-stream", "mst-memory", "mst-dask")
ENGINE_OF = {
    "stream": "stream",
    "memory": "memory",
    "dask": "dask",
    "mst-stream": "stream",
    "mst-memory": "memory",
    "mst-dask": "dask",
}
MEMORY_GUARD_SHARE = 0.6
RSS_TARGET_BYTES = 1.5e9
LINEAR_TARGET = 55.0
VALUES_TARGET = 10e6
FLOOR_TARGET = 2.0
DASK_TARGET = 1.5

# (name, type, low, high): the public bounds are the generator's own clip limits
NUMERIC: tuple[tuple[str, str, float, float], ...] = (
    ("age", "integer", 0, 100),
    ("children", "integer", 0, 10),
    ("hours", "integer", 0, 99),
    ("visits", "integer", 0, 1000),
    ("household", "integer", 1, 20),
    ("income", "float", 0, 1_000_000),
    ("weight", "float", 30, 200),
    ("height", "float", 100, 220),
    ("score", "float", 0, 1),
    ("balance", "float", -100_000, 100_000),
)
# (name, number of categories); labels "<name>_<i>"
CATEGORICAL: tuple[tuple[str, int], ...] = (
    ("sex", 2),
    ("status", 3),
    ("region", 5),
    ("marital", 6),
    ("tenure", 8),
    ("education", 12),
    ("industry", 20),
    ("occupation", 30),
    ("language", 40),
    ("country", 50),
)
N_COLUMNS = len(NUMERIC) + len(CATEGORICAL)


def categories(name: str, k: int) -> list[str]:
    return [f"{name}_{i:02d}" for i in range(k)]


# ---- input tables ------------------------------------------------------------------------------


def parse_size(text: str) -> int:
    """'1M' -> 1_000_000, '2k' -> 2_000, '50000' -> 50_000."""
    t = text.strip().upper().replace("_", "")
    mult = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in "KMG" else t
    value = float(num) * mult
    if value <= 0 or not value.is_integer():
        raise ValueError(f"size {text!r}: expected a positive whole number of rows (1M, 10M, 2000)")
    return int(value)


def size_label(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


def arrow_schema() -> Any:
    import pyarrow as pa

    fields = [pa.field(c, pa.int64() if t == "integer" else pa.float64()) for c, t, _, _ in NUMERIC]
    fields += [pa.field(c, pa.string()) for c, _ in CATEGORICAL]
    return pa.schema(fields)


def _zipf(k: int, s: float = 1.1) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1) ** s
    return np.cumsum(w / w.sum())


def generate_chunk(seed: int, chunk: int, rows: int) -> Any:
    """Rows of chunk ``chunk`` of the table with ``seed`` (a pyarrow Table)."""
    import pyarrow as pa

    rng = np.random.default_rng(np.random.SeedSequence([seed, chunk]))
    n = rows

    def clip_int(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
        return np.clip(np.rint(x), lo, hi).astype(np.int64)

    def clip_float(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
        return np.round(np.clip(x, lo, hi), 2)

    cols: dict[str, Any] = {
        "age": clip_int(rng.normal(40, 18, n), 0, 100),
        "children": np.minimum(rng.poisson(1.2, n), 10).astype(np.int64),
        "hours": clip_int(rng.normal(38, 12, n), 0, 99),
        "visits": clip_int(np.floor(rng.lognormal(1.5, 1.2, n)), 0, 1000),
        "household": np.minimum(1 + rng.poisson(1.8, n), 20).astype(np.int64),
        "income": clip_float(rng.lognormal(10.5, 0.9, n), 0, 1_000_000),
        "weight": clip_float(rng.normal(75, 15, n), 30, 200),
        "height": clip_float(rng.normal(170, 10, n), 100, 220),
        "score": np.round(rng.beta(2, 5, n), 4),
        "balance": clip_float(rng.laplace(0, 8000, n), -100_000, 100_000),
    }
    for name, k in CATEGORICAL:
        codes = np.searchsorted(_zipf(k), rng.random(n), side="right").clip(0, k - 1)
        cols[name] = pa.array(categories(name, k), pa.string()).take(pa.array(codes))
    return pa.Table.from_pydict(cols, schema=arrow_schema())


def table_path(data_dir: Path, n: int, seed: int) -> Path:
    return Path(data_dir) / f"scale_{size_label(n)}_seed{seed}_v{GEN_VERSION}.parquet"


def _meta(n: int, seed: int) -> dict[str, Any]:
    return {"rows": n, "seed": seed, "version": GEN_VERSION, "chunk_rows": CHUNK_ROWS}


def cached_ok(path: Path, n: int, seed: int) -> bool:
    """The file at ``path`` is this generator's table of ``n`` rows from ``seed``."""
    import pyarrow.parquet as pq

    if not path.exists():
        return False
    try:
        md = pq.ParquetFile(path).metadata
        stored = json.loads((md.metadata or {}).get(META_KEY, b"{}"))
    except Exception:  # noqa: BLE001 - a broken or foreign file is simply regenerated
        return False
    return md.num_rows == n and stored == _meta(n, seed)


def check_data_dir(data_dir: Path) -> Path:
    d = Path(data_dir).resolve()
    if d == ROOT or ROOT in d.parents:
        raise SystemExit(f"--data-dir {d} is inside the repository; choose a directory outside it")
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_table(data_dir: Path, n: int, seed: int, *, log: Callable[[str], object] = print) -> Path:
    """The table of ``n`` rows from ``seed`` (generated, or the cached file), memory bounded by
    one chunk."""
    import pyarrow.parquet as pq

    path = table_path(data_dir, n, seed)
    if cached_ok(path, n, seed):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    schema = arrow_schema().with_metadata({META_KEY: json.dumps(_meta(n, seed)).encode()})
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            for k, start in enumerate(range(0, n, CHUNK_ROWS)):
                t = generate_chunk(seed, k, min(CHUNK_ROWS, n - start))
                writer.write_table(t.replace_schema_metadata(schema.metadata), row_group_size=CHUNK_ROWS)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    log(f"generated {path} ({n:,} rows, {path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    return path


# ---- recipes -----------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def recipe_args(kind: str, n: int) -> list[str]:
    """The ``recipe init`` options for a record (``kind="record"``) or MST (``"mst"``) recipe."""
    args = ["--epsilon", _fmt(EPSILON), "--format", "parquet", "--confirm-inferred"]
    if kind == "record":
        args = ["--release", "record", *args]
    elif kind == "mst":
        delta = min(1e-6, 0.1 / n)
        args = ["--release", "synthetic", "--synth", "mst", "--rows", str(SYNTH_ROWS), "--delta", repr(delta), *args]
    else:
        raise ValueError(f"recipe kind {kind!r}: record or mst")
    for c, t, lo, hi in NUMERIC:
        args += ["--role", f"{c}=sensitive", "--type", f"{c}={t}", "--bounds", f"{c}={_fmt(lo)}:{_fmt(hi)}"]
    for c, k in CATEGORICAL:
        role = "label" if kind == "mst" and c == SYNTH_LABEL else "sensitive"
        args += [
            "--role",
            f"{c}={role}",
            "--type",
            f"{c}=categorical",
            "--categories",
            f"{c}={','.join(categories(c, k))}",
        ]
    return args


def child_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    # nothing of the user's: a ledger, preferences and output folder of this benchmark only
    env["DPSTUDIO_LEDGER"] = str(home / "ledger.sqlite")
    env["DPSTUDIO_PREFS"] = str(home / "preferences.json")
    env["DPSTUDIO_OUTPUT_DIR"] = str(home / "outputs")
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def recipe_path(data_dir: Path, n: int, seed: int, kind: str) -> Path:
    return table_path(data_dir, n, seed).with_suffix(f".{kind}.recipe.json")


def write_recipe(data_dir: Path, n: int, seed: int, kind: str) -> Path:
    """The recipe of ``kind`` for the table (cached beside it while the table is unchanged)."""
    import pyarrow.parquet as pq

    from dpstudio.engine.data.loader import fingerprint

    table = table_path(data_dir, n, seed)
    out = recipe_path(data_dir, n, seed, kind)
    stamp = out.with_suffix(".stamp")
    key = json.dumps({"table": table.stat().st_mtime_ns, "args": recipe_args(kind, n)})
    if out.exists() and stamp.exists() and stamp.read_text() == key:
        return out
    home = Path(data_dir) / "home"
    home.mkdir(exist_ok=True)
    source = table
    sample = None
    if n > SAMPLE_ROWS:
        sample = table.with_suffix(f".first{SAMPLE_ROWS}.parquet")
        first = next(pq.ParquetFile(table).iter_batches(batch_size=SAMPLE_ROWS))
        pq.write_table(__import__("pyarrow").Table.from_batches([first]), sample)
        source = sample
    try:
        cmd = [sys.executable, "-m", "dpstudio", "recipe", "init", str(source), "-o", str(out), "--force"]
        cmd += recipe_args(kind, n)  # --force: a stale cached recipe is replaced on purpose
        r = subprocess.run(cmd, env=child_env(home), cwd=home, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"recipe init ({kind}, {n} rows) failed: {r.stderr.strip()[-2000:]}")
    finally:
        if sample is not None and sample.exists():
            sample.unlink()
    if sample is not None:  # point the recipe at the table itself
        recipe = json.loads(out.read_text())
        recipe["input"]["path"] = str(table)
        recipe["input"]["sha256"] = fingerprint(str(table))
        out.write_text(json.dumps(recipe, indent=1))
    stamp.write_text(key)
    return out


# ---- the floor ---------------------------------------------------------------------------------


def floor_release(inp: Path, out: Path, *, block_rows: int = BLOCK_ROWS, seed: int | None = None) -> int:
    """numpy + pyarrow only: Laplace on the numbers, k-ary randomized response on the categories,
    Parquet in -> Parquet out, batch by batch.  Returns the rows written.

    Categories are read as dictionary arrays (the batch's dictionary mapped once onto the public
    list) and written as dictionary arrays over the public list: text cells in the file either
    way, without hashing every cell twice.  One uniform draw per cell decides both whether a code
    is kept and, when not, which other code replaces it."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    eps = EPSILON / N_COLUMNS
    names = [c for c, _ in CATEGORICAL]
    src = pq.ParquetFile(inp, read_dictionary=names)
    schema = arrow_schema()
    out_schema = pa.schema(
        [schema.field(c) for c, *_ in NUMERIC] + [pa.field(c, pa.dictionary(pa.int32(), pa.string())) for c in names]
    )
    lists = {c: pa.array(categories(c, k), pa.string()) for c, k in CATEGORICAL}
    keep = {c: math.exp(eps) / (math.exp(eps) + k - 1) for c, k in CATEGORICAL}
    rows = 0
    with pq.ParquetWriter(out, out_schema) as writer:
        # row group by row group, as dpstudio reads: one iter_batches over a whole large file
        # holds memory that grows with the file (pyarrow)
        batches = (
            b
            for g in range(src.metadata.num_row_groups)
            for b in src.iter_batches(batch_size=block_rows, row_groups=[g], columns=schema.names)
        )
        for batch in batches:
            m = batch.num_rows
            cols = []
            for c, t, lo, hi in NUMERIC:
                x = batch.column(c).to_numpy(zero_copy_only=False).astype(np.float64)
                y = np.clip(x + rng.laplace(0.0, (hi - lo) / eps, m), lo, hi)
                cols.append(pa.array(np.rint(y).astype(np.int64) if t == "integer" else y))
            for c, k in CATEGORICAL:
                col = batch.column(c)
                if not isinstance(col.type, pa.DictionaryType):  # a file without dictionary pages
                    col = pc.dictionary_encode(col)
                to_public = pc.index_in(col.dictionary, value_set=lists[c]).fill_null(0).to_numpy()
                codes = to_public[col.indices.fill_null(0).to_numpy()]
                u = rng.random(m)
                p = keep[c]
                other = np.minimum(((u - p) / (1 - p) * (k - 1)).astype(np.int64), k - 2)
                other += other >= codes
                new = np.where(u < p, codes, other).astype(np.int32)
                cols.append(pa.DictionaryArray.from_arrays(pa.array(new), lists[c]))
            writer.write_table(pa.Table.from_arrays(cols, schema=out_schema))
            rows += m
    return rows


# ---- measuring one child -----------------------------------------------------------------------


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


def hwm_mb(pid: int) -> float | None:
    """A live process's peak resident set (VmHWM), MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def mem_available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def run_child(
    cmd: list[str], env: dict[str, str], cwd: Path, poll: float = 0.1, timeout: float | None = None
) -> dict[str, Any]:
    """Run ``cmd``; wall seconds, stdout, timestamped stderr lines, the child's own peak RSS and
    CPU seconds (``os.wait4``) and the summed peaks of the processes it spawned.  A child still
    running after ``timeout`` seconds is killed (``timed_out``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []
    out_parts: list[str] = []

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))

    def read_out() -> None:
        assert proc.stdout is not None
        out_parts.append(proc.stdout.read())

    readers = [threading.Thread(target=read_err, daemon=True), threading.Thread(target=read_out, daemon=True)]
    for r in readers:
        r.start()
    kids: dict[int, float] = {}
    own = 0.0  # polled, in case the child dies before it can print its peak
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        own = max(own, hwm_mb(proc.pid) or 0.0)
        if timeout is not None and not timed_out and time.perf_counter() - t0 > timeout:
            proc.kill()
            timed_out = True
        for k in _descendants(proc.pid):
            h = hwm_mb(k)
            if h is not None:
                kids[k] = max(kids.get(k, 0.0), h)
        time.sleep(poll)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join()
    return {
        "returncode": proc.returncode,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "stdout": "".join(out_parts),
        "stderr": lines,
        "peak_rss_mb": child_peak_mb([line for _t, line in lines]) or own,
        "rss": "vmhwm",
        "children_peak_rss_mb": float(sum(kids.values())),
        "timed_out": timed_out,
    }


def _tail(run: dict[str, Any], n: int = 4) -> str:
    msgs = [s.strip().removeprefix("- ") for _, s in run["stderr"] if s.strip() and not s.startswith(("[", MARK))]
    return " | ".join(msgs[-n:])[-1500:] or f"exit code {run['returncode']}"


def fit_seconds(stderr: list[tuple[float, str]]) -> float | None:
    """MST: from the progress line 'loaded ...' (in memory) or 'counting marginals' (streamed, Dask:
    the pass that counts) to the first 'sampling ...'."""
    start = next((t for t, s in stderr if "] loaded " in s or "] counting marginals" in s), None)
    end = next((t for t, s in stderr if "] sampling " in s), None)
    return None if start is None or end is None else round(end - start, 3)


def parquet_rows(path: Path) -> int | None:
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # noqa: BLE001 - no output, or not Parquet
        return None


# ---- the Dask cluster --------------------------------------------------------------------------


#: run in each restarted worker before a timed run (``exec`` is pickled by reference)
WORKER_IMPORTS = (
    "import numpy, pandas, pyarrow, pyarrow.parquet, dask.dataframe\n"
    "import dpstudio.pipeline.cluster, dpstudio.plan.record, dpstudio.plan.stream, dpstudio.plan.synthetic\n"
    "import dpstudio.engine.data.stream"
)


class Cluster:
    """A 2-worker LocalCluster for the dask runs (started on first use)."""

    def __init__(self) -> None:
        self.cluster: Any = None
        self.client: Any = None
        self.error: str | None = None

    def start(self) -> bool:
        if self.client is not None or self.error is not None:
            return self.client is not None
        try:
            import warnings

            from distributed import Client

            from dpstudio.pipeline.cluster import local_cluster

            # the scheduler's HTTP endpoint moves to a free port when 8787 is taken: not news
            warnings.filterwarnings("ignore", message="Port .* is already in use", category=UserWarning)

            os.environ["PYTHONPATH"] = str(ROOT) + (
                os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""
            )
            # the local cluster dpstudio itself starts: its workers' malloc settings (WORKER_MALLOC)
            self.cluster = local_cluster(2)
            self.client = Client(self.cluster)
        except Exception as exc:  # noqa: BLE001 - reported in the rows, the other runs go on
            self.error = f"could not start a LocalCluster: {type(exc).__name__}: {exc}"
            return False
        return True

    @property
    def address(self) -> str:
        return str(self.cluster.scheduler_address)

    def fresh_workers(self) -> dict[str, int]:
        """Restart the workers (a fresh peak RSS each), import what a release runs there (so the
        run is timed on warm workers, as on a cluster that is up; the imports' memory is in the
        peaks either way) and return their PIDs."""
        self.client.restart(wait_for_workers=True)
        self.client.wait_for_workers(2)
        self.client.run(exec, WORKER_IMPORTS)
        return dict(self.client.run(os.getpid))

    def close(self) -> None:
        for x in (self.client, self.cluster):
            if x is not None:
                try:
                    x.close()
                except Exception:  # noqa: BLE001, S110 - closing at exit
                    pass


# ---- one run -----------------------------------------------------------------------------------


def _commit() -> tuple[str, bool]:
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True, check=True).stdout

    try:
        return git("rev-parse", "--short", "HEAD").strip(), bool(
            git("status", "--porcelain", "--untracked-files=no").strip()
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False


def memory_guard(n: int) -> str | None:
    """None when an in-memory run of ``n`` rows may go ahead, else the skip status."""
    need = n * N_COLUMNS * 8 * 4
    if need < MEMORY_GUARD_SHARE * mem_available_bytes():
        return None
    return f"skipped: would need ~{need / 1e9:.0f} GB"


def measure(
    run: str,
    n: int,
    seed: int,
    data_dir: Path,
    *,
    block_rows: int = BLOCK_ROWS,
    cluster: Cluster | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """One run of ``run`` on the table of ``n`` rows: the measurements (no identity fields)."""
    table = table_path(data_dir, n, seed)
    res: dict[str, Any] = {"input_mb": round(table.stat().st_size / 1e6, 1)}
    if run in ("memory", "mst-memory"):
        res["mem_available_mb"] = round(mem_available_bytes() / 1e6)
        skip = memory_guard(n)
        if skip:
            res["status"] = skip
            return res
    home = Path(data_dir) / "home"
    home.mkdir(exist_ok=True)
    env = child_env(home)
    with tempfile.TemporaryDirectory(prefix="out-", dir=data_dir) as tmp:
        out = Path(tmp) / "released.parquet"
        workers: dict[str, int] = {}
        if run == "floor":
            cmd = script_command(str(Path(__file__).resolve()), "--child-floor", str(table), str(out))
            cmd += ["--block-rows", str(block_rows)]
        else:
            kind = "mst" if run.startswith("mst") else "record"
            recipe = recipe_path(data_dir, n, seed, kind)
            cmd = module_command("dpstudio", "release", str(recipe), "--output", str(out))
            cmd += ["--no-ledger", "--progress", "--engine", ENGINE_OF[run]]
            if ENGINE_OF[run] != "memory":
                cmd += ["--block-rows", str(block_rows)]
            if ENGINE_OF[run] == "dask":
                if cluster is None or not cluster.start():
                    res["status"] = "failed"
                    res["error"] = cluster.error if cluster is not None else "no cluster"
                    return res
                workers = cluster.fresh_workers()
                cmd += ["--scheduler", cluster.address]
        r = run_child(cmd, env, home, timeout=timeout)
        res.update(
            wall_s=round(r["wall_s"], 3),
            cpu_s=round(r["cpu_s"], 3),
            peak_rss_mb=round(r["peak_rss_mb"], 1),
            children_peak_rss_mb=round(r["children_peak_rss_mb"], 1),
            rss=r["rss"],
        )
        if workers:
            res["worker_peak_rss_mb"] = [hwm_mb(p) for p in workers.values()]
            after = dict(cluster.client.run(os.getpid)) if cluster is not None else {}
            res["workers_restarted_during_run"] = sorted(after.values()) != sorted(workers.values())
            res["workers_warmed"] = True
        written = parquet_rows(out)
        if r["timed_out"]:
            res["status"] = "failed"
            res["error"] = f"killed after the --timeout of {timeout:g} s"
            return res
        if r["returncode"] != 0 or written is None:
            res["status"] = "failed"
            res["error"] = _tail(r)
            return res
        res["output_rows"] = written
        res["output_mb"] = round(out.stat().st_size / 1e6, 1)
    res["rows_per_s"] = round(n / res["wall_s"])
    if not run.startswith("mst"):
        res["values_per_s"] = round(n * N_COLUMNS / res["wall_s"])
    if run.startswith("mst"):
        res["fit_s"] = fit_seconds(r["stderr"])
    if run != "floor":
        try:
            summary = json.loads(r["stdout"])
            res["engine_reported"] = summary.get("engine")
            res["epsilon_spent"] = summary.get("total", {}).get("epsilon")
        except (ValueError, AttributeError):
            pass
    res["status"] = "ok"
    return res


def run_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row.get("commit"), row.get("rows"), row.get("run"), row.get("repeat"), row.get("block_rows"))


def is_done(row: dict[str, Any]) -> bool:
    return row.get("status") == "ok" or str(row.get("status", "")).startswith("skipped")


def load_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut by an interrupted run
    return rows


def default_repeats(n: int) -> int:
    return 1 if n >= 50_000_000 else 3


def plan_runs(
    sizes: list[int], runs: list[str], repeats: int | None, done: set[tuple[Any, ...]], commit: str, block_rows: int
) -> list[dict[str, Any]]:
    """Every (size, repeat, run) still to do, repeats interleaved within a size."""
    jobs = []
    for n in sizes:
        for i in range(repeats if repeats is not None else default_repeats(n)):
            for run in runs:
                job = {"commit": commit, "rows": n, "run": run, "repeat": i, "block_rows": block_rows}
                if run_key(job) not in done:
                    jobs.append(job)
    return jobs


# ---- report ------------------------------------------------------------------------------------


def _median(xs: list[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def summarise(rows: list[dict[str, Any]]) -> dict[tuple[int, str], dict[str, Any]]:
    """Per (size, run): the rows of the latest session that has it (ok rows, else its status)."""
    by: dict[tuple[int, str], dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        by.setdefault((r["rows"], r["run"]), {}).setdefault(r.get("session", "?"), []).append(r)
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for key, sessions in by.items():
        ok_sessions = [s for s, rs in sessions.items() if any(x.get("status") == "ok" for x in rs)]
        pick = max(ok_sessions or sessions, key=lambda s: max(x.get("date", "") for x in sessions[s]))
        rs = sessions[pick]
        ok = [x for x in rs if x.get("status") == "ok"]
        s: dict[str, Any] = {"session": pick, "n_ok": len(ok), "rows": key[0], "run": key[1]}
        s["commit"] = rs[-1].get("commit")
        if ok:
            s["status"] = "ok"
            s["wall_s"] = _median([x["wall_s"] for x in ok])
            s["walls"] = [x["wall_s"] for x in ok]
            s["cpu_s"] = _median([x["cpu_s"] for x in ok])
            s["peak_rss_mb"] = max(x["peak_rss_mb"] for x in ok)
            s["rss_upper_bound"] = any(x.get("rss") != "vmhwm" for x in ok)
            s["children_peak_rss_mb"] = max(x.get("children_peak_rss_mb") or 0.0 for x in ok)
            w = [max(v or 0.0 for v in x["worker_peak_rss_mb"]) for x in ok if x.get("worker_peak_rss_mb")]
            s["worker_peak_rss_mb"] = max(w) if w else None
            s["rows_per_s"] = key[0] / s["wall_s"]
            s["values_per_s"] = key[0] * N_COLUMNS / s["wall_s"] if not key[1].startswith("mst") else None
            fits = [x["fit_s"] for x in ok if x.get("fit_s") is not None]
            s["fit_s"] = _median(fits)
            s["engine_reported"] = ok[-1].get("engine_reported")
        else:
            s["status"] = rs[-1].get("status")
            s["error"] = rs[-1].get("error")
        out[key] = s
    return out


def session_ratio(rows: list[dict[str, Any]], a: tuple[int, str], b: tuple[int, str]) -> dict[str, Any] | None:
    """median wall of ``a`` / median wall of ``b`` (each (size, run)), both from the latest
    session that measured both; None when no session did."""
    walls: dict[str, dict[tuple[int, str], list[float]]] = {}
    dates: dict[str, str] = {}
    for r in rows:
        if r.get("status") == "ok" and (r["rows"], r["run"]) in (a, b):
            s = r.get("session", "?")
            walls.setdefault(s, {}).setdefault((r["rows"], r["run"]), []).append(r["wall_s"])
            dates[s] = max(dates.get(s, ""), r.get("date", ""))
    both = [s for s, w in walls.items() if a in w and b in w]
    if not both:
        return None
    s = max(both, key=lambda x: dates[x])
    wa, wb = _median(walls[s][a]), _median(walls[s][b])
    assert wa is not None and wb is not None
    return {"ratio": wa / wb, "a_s": wa, "b_s": wb, "session": s}


def target_checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target at each size it applies to: PASS, FAIL or 'not measured'."""
    summ = summarise(rows)
    sizes = sorted({n for n, _ in summ})
    checks: list[dict[str, Any]] = []

    def add(
        target: str, where: str, value: float | None, limit: float, le: bool, fmt: str, across: float | None = None
    ) -> None:
        if value is not None:
            verdict = "PASS" if (value <= limit if le else value >= limit) else "FAIL"
            shown = fmt.format(value)
        elif across is not None:  # both measured, never in one session: shown, not judged
            verdict = "not measured in one session"
            shown = fmt.format(across) + " (across sessions)"
        else:
            verdict = "not measured"
            shown = "-"
        checks.append({"target": target, "where": where, "value": shown, "verdict": verdict})

    def ratio(a: tuple[int, str], b: tuple[int, str]) -> tuple[float | None, float | None]:
        r = session_ratio(rows, a, b)
        if r is not None:
            return r["ratio"], None
        sa, sb = summ.get(a), summ.get(b)
        if sa and sb and sa.get("status") == "ok" and sb.get("status") == "ok":
            return None, sa["wall_s"] / sb["wall_s"]
        return None, None

    for run in ("stream", "mst-stream"):
        for n in sizes:
            s = summ.get((n, run))
            v = s["peak_rss_mb"] * 1024 * 1024 if s and s.get("status") == "ok" else None
            add("peak RSS <= 1.5 GB streamed", f"{run} {size_label(n)}", v, RSS_TARGET_BYTES, True, "{:.3g} bytes")
    small, big = 1_000_000, 50_000_000
    for run in RUNS:
        if (small, run) in summ or (big, run) in summ:
            v, across = ratio((big, run), (small, run))
            add("50M time <= 55 x 1M time", run, v, LINEAR_TARGET, True, "{:.1f} x", across)
    for n in sizes:
        s = summ.get((n, "stream"))
        v = s["values_per_s"] if s and s.get("status") == "ok" else None
        add("streamed record release >= 10M values/s", f"stream {size_label(n)}", v, VALUES_TARGET, False, "{:.3g}/s")
    for n in sizes:
        v, across = ratio((n, "stream"), (n, "floor"))
        add("streamed <= 2 x floor", f"stream/floor {size_label(n)}", v, FLOOR_TARGET, True, "{:.2f} x", across)
    for d, st in (("dask", "stream"), ("mst-dask", "mst-stream")):
        for n in sizes:
            if (n, d) in summ or (n, st) in summ:
                v, across = ratio((n, d), (n, st))
                add("Dask <= 1.5 x streamed", f"{d}/{st} {size_label(n)}", v, DASK_TARGET, True, "{:.2f} x", across)
    return checks


def _f(x: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def markdown(rows: list[dict[str, Any]], source: Path | None = None) -> str:
    summ = summarise(rows)
    dates = sorted({r["date"] for r in rows if r.get("date")})
    commits = sorted({f"{r.get('commit')}{'+dirty' if r.get('dirty') else ''}" for r in rows})
    hosts = sorted({f"{r.get('host')} ({r.get('cpus')} cores)" for r in rows})
    span = f"{dates[0]} to {dates[-1]}" if len(dates) > 1 else (dates[0] if dates else "?")
    blocks = (
        " / ".join(f"{b:,}" for b in sorted({r.get("block_rows") or BLOCK_ROWS for r in rows})) or f"{BLOCK_ROWS:,}"
    )
    lines = [
        "## Releases at scale: streamed, in memory and on Dask (issue 20)",
        "",
        f"Generated by `benchmarks/bench_scale.py --report` from {source or 'the results file'}; runs {span} "
        f"at commit(s) {', '.join(commits) or '?'} on {', '.join(hosts) or '?'}.  Input: generated Parquet "
        f"tables, 20 columns (10 numeric, 10 categorical with 2-50 labels), epsilon {EPSILON:g}, every "
        f"column sensitive; blocks of {blocks} rows; each run a fresh process, wall time end to end "
        f"(Python start included); median of the repeats; peak RSS = the release process's own VmHWM "
        f"(max over repeats; \"≤\": an older row's ru_maxrss, which includes this script's peak), "
        f"Dask workers' VmHWM per worker (max).  MST: 1,000,000 rows sampled and written.",
        "",
        "| rows | run | repeats | wall s (median) | CPU s | rows/s | values/s | peak RSS MB | worker peak MB "
        "| MST fit s | status | commit, session |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (n, run), s in sorted(
        summ.items(), key=lambda kv: (kv[0][0], RUNS.index(kv[0][1]) if kv[0][1] in RUNS else 99)
    ):
        where = f"{s.get('commit')}, {str(s['session'])[:15]}"
        if s["status"] == "ok":
            lines.append(
                f"| {size_label(n)} | {run} | {s['n_ok']} | {_f(s['wall_s'], '{:.2f}')} | {_f(s['cpu_s'])} | "
                f"{_f(s['rows_per_s'], '{:,.0f}')} | {_f(s['values_per_s'], '{:,.0f}')} | "
                f"{'≤ ' if s.get('rss_upper_bound') else ''}{_f(s['peak_rss_mb'], '{:.0f}')} | "
                f"{_f(s['worker_peak_rss_mb'], '{:.0f}')} | {_f(s['fit_s'])} | ok | {where} |"
            )
        else:
            err = (s.get("error") or "").replace("|", "/")[:160]
            lines.append(
                f"| {size_label(n)} | {run} | 0 | - | - | - | - | - | - | - | "
                f"{s['status']}{': ' + err if err else ''} | {where} |"
            )
    lines += ["", "Ratios (median walls, both sides from one session):", ""]
    lines += ["| ratio | rows | value |", "|---|---|---|"]
    sizes = sorted({n for n, _ in summ})
    pairs = [("stream", "floor"), ("dask", "stream"), ("mst-dask", "mst-stream"), ("memory", "stream")]
    for a, b in pairs:
        for n in sizes:
            r = session_ratio(rows, (n, a), (n, b))
            if r:
                lines.append(
                    f"| {a} / {b} | {size_label(n)} | {r['ratio']:.2f} ({r['a_s']:.2f} s / {r['b_s']:.2f} s) |"
                )
    for run in RUNS:
        r = session_ratio(rows, (50_000_000, run), (1_000_000, run))
        if r:
            lines.append(f"| 50M / 1M | {run} | {r['ratio']:.1f} ({r['a_s']:.1f} s / {r['b_s']:.2f} s) |")
    lines += ["", "Targets (issue 20):", "", "| target | where | value | verdict |", "|---|---|---|---|"]
    for c in target_checks(rows):
        lines.append(f"| {c['target']} | {c['where']} | {c['value']} | {c['verdict']} |")
    return "\n".join(lines) + "\n"


# ---- main --------------------------------------------------------------------------------------


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1M,10M,50M", help="comma-separated row counts (1M, 10M, 50M, 2000)")
    ap.add_argument("--runs", default=",".join(RUNS), help="comma-separated: " + ", ".join(RUNS))
    ap.add_argument("--repeats", type=int, default=None, help="median of N (default 3 below 50M rows, 1 at 50M)")
    ap.add_argument("--seed", type=int, default=20261124, help="the input tables' seed")
    ap.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), help="cache of tables and recipes (not the repo)")
    ap.add_argument("--block-rows", type=int, default=BLOCK_ROWS)
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="JSON lines file (appended; resumable)")
    ap.add_argument("--report", action="store_true", help="print the markdown table and target checks from --out")
    ap.add_argument("--dry-run", action="store_true", help="list the runs still to do")
    ap.add_argument("--again", action="store_true", help="run everything asked for, even runs already in --out")
    ap.add_argument("--timeout", type=float, default=5400, help="seconds before a run is killed (default 5400)")
    ap.add_argument("--child-floor", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child_floor:
        floor_release(Path(a.child_floor[0]), Path(a.child_floor[1]), block_rows=a.block_rows)
        return 0
    out = Path(a.out)
    if a.report:
        print(markdown(load_rows(out), source=out))
        return 0
    try:
        sizes = [parse_size(s) for s in _csv(a.sizes)]
    except ValueError as exc:
        ap.error(str(exc))
    runs = _csv(a.runs)
    bad = [r for r in runs if r not in RUNS]
    if bad:
        ap.error(f"--runs: unknown {bad}; choose from {', '.join(RUNS)}")
    if a.repeats is not None and a.repeats < 1:
        ap.error("--repeats: at least 1")
    commit, dirty = _commit()
    rows = load_rows(out)
    done = set() if a.again else {run_key(r) for r in rows if is_done(r)}
    jobs = plan_runs(sizes, runs, a.repeats, done, commit, a.block_rows)
    print(f"{len(jobs)} run(s) to do ({len(rows)} row(s) in {out})", file=sys.stderr, flush=True)
    if a.dry_run:
        for j in jobs:
            print(json.dumps(j))
        return 0
    data_dir = check_data_dir(Path(a.data_dir))
    session = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    cluster = Cluster()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        prepared: set[int] = set()
        for job in jobs:
            n = job["rows"]
            if n not in prepared:
                write_table(data_dir, n, a.seed, log=lambda m: print(m, file=sys.stderr, flush=True))
                if any(j["rows"] == n and j["run"] != "floor" for j in jobs):
                    for kind in ("record", "mst"):
                        if any(j["rows"] == n and j["run"].startswith("mst") == (kind == "mst") for j in jobs):
                            write_recipe(data_dir, n, a.seed, kind)
                prepared.add(n)
            row: dict[str, Any] = dict(job)
            row.update(
                bench="bench_scale",
                size=size_label(n),
                dirty=dirty,
                session=session,
                seed=a.seed,
                date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                host=os.uname().nodename,
                cpus=os.cpu_count(),
            )
            try:
                row.update(
                    measure(
                        job["run"], n, a.seed, data_dir, block_rows=a.block_rows, cluster=cluster, timeout=a.timeout
                    )
                )
            except Exception as exc:  # noqa: BLE001 - one broken run is a row, not the end
                row.update(status="failed", error=f"harness: {type(exc).__name__}: {exc}")
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        cluster.close()
    mine = [r for r in rows if r.get("session") == session]
    if mine:
        print("", file=sys.stderr)
        for c in target_checks([r for r in rows if r.get("commit") == commit]):
            print(f"{c['verdict']:>12}  {c['target']}: {c['where']} = {c['value']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
