"""Kill tests of the ledger's crash-consistent release protocol.

``--phases`` (what the test suite runs): one release per protocol phase, each killing itself at
that phase, so every window is hit on any machine.  The default random mode is a stress run: each
trial starts a release in a child process and SIGKILLs it after a random delay (some
trials are left to finish), then reopens the ledger (which runs recovery) and checks:

* every complete entry's output exists and has the recorded SHA-256;
* every output file present has a complete entry;
* no entry is left in flight, and no temporary file is left in the output folder.

Modes: ``cli`` runs the real ``python -m dpstudio release`` on a CSV with a recipe; ``direct``
runs a small script that reserves budget and writes a ~50k-row table through
``Ledger.write_and_commit`` + ``dpstudio.export.write_table`` (the same calls the pipeline makes).
``auto`` uses ``cli`` when a release works end to end, else ``direct``.

    python benchmarks/ledger_torture.py --trials 200 [--mode auto|cli|direct] [--rows 50000]

Prints one JSON object: {trials, killed, consistent, inconsistent, completed, rolled_back, ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

# Optional slow-down of the protocol's narrow windows (pending, committing), applied inside the
# child only by patching; the product code is unchanged.  DPS_TORTURE_SLOW = max sleep (s).
_SLOW = r"""
import os, random, time
import dpstudio.ledger as _dl
_S = float(os.environ.get("DPS_TORTURE_SLOW") or 0)
if _S > 0:
    _real_replace = os.replace
    def _slow_replace(a, b):
        time.sleep(random.uniform(0, _S)); _real_replace(a, b); time.sleep(random.uniform(0, _S))
    os.replace = _slow_replace
    _real_wac = _dl.Ledger.write_and_commit
    def _wac(self, *a, **k):
        time.sleep(random.uniform(0, _S)); return _real_wac(self, *a, **k)
    _dl.Ledger.write_and_commit = _wac
"""

_CLI_CHILD = (
    _SLOW
    + r"""
import sys
from dpstudio.cli import main
sys.exit(main(sys.argv[1:]))
"""
)

_CHILD = (
    _SLOW
    + r"""
import sys
import numpy as np, pandas as pd
from dpstudio.ledger import Ledger
from dpstudio.export import write_table
ledger_path, out, rows, sha = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng()
frame = pd.DataFrame({"age": rng.integers(0, 100, rows), "income": rng.normal(5e4, 1e4, rows),
                      "smoker": rng.choice(["yes", "no"], rows)})
L = Ledger(ledger_path)
print("ready", flush=True)
r = L.reserve(sha, dataset_name="torture.csv", loss=(0.01, 0.0), release_type="record",
              recipe_sha256="0" * 64, output_path=out)
try:
    L.write_and_commit(r, out, lambda tmp: write_table(frame, tmp, fmt="csv"))
except BaseException:
    L.abort(r)
    raise
"""
)


# Deterministic kills: the child SIGKILLs *itself* when the release reaches a chosen phase of
# the ledger protocol, so a test knows exactly which window it hit, on any machine speed.
# Patched inside the child only; the product code is unchanged.  The output path is read from
# the command line (``--output``) so the commit rename is told apart from any other rename.
_PHASE_KILL = r"""
import os, signal, sys
from pathlib import Path
import dpstudio.ledger as _dl
_PHASE = os.environ.get("DPS_KILL_AT", "")
_OUT = str(Path(sys.argv[sys.argv.index("--output") + 1]).resolve()) if "--output" in sys.argv else ""

def _die(phase):
    if phase == _PHASE:
        sys.stdout.flush(); sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

_real_reserve = _dl.Ledger.reserve
def _reserve(self, *a, **k):
    r = _real_reserve(self, *a, **k)
    _die("reserved")
    return r
_dl.Ledger.reserve = _reserve

_real_wac = _dl.Ledger.write_and_commit
def _wac(self, reservation, output_path, writer, **kw):
    def _writer(tmp):
        _die("before_write")
        res = writer(tmp)
        if _PHASE == "partial_write":
            size = os.path.getsize(tmp)
            with open(tmp, "r+b") as fh:
                fh.truncate(size // 2)
            _die("partial_write")
        _die("written")
        return res
    digest = _real_wac(self, reservation, output_path, _writer, **kw)
    _die("committed")
    return digest
_dl.Ledger.write_and_commit = _wac

_real_replace = os.replace
def _replace(a, b, *args, **kw):
    final = str(Path(b).resolve()) == _OUT
    if final:
        _die("before_rename")
    res = _real_replace(a, b, *args, **kw)
    if final:
        _die("after_rename")
    return res
os.replace = _replace
"""

#: the phases of one release, in order, and where recovery must leave it: before the hashed
#: output is marked *committing* the release is rolled back (nothing written, nothing spent);
#: from then on it is rolled forward (the output is put in place and its spend is recorded)
PHASES = {
    "reserved": "rolled_back",
    "before_write": "rolled_back",
    "partial_write": "rolled_back",
    "written": "rolled_back",
    "before_rename": "completed",
    "after_rename": "completed",
    "committed": "completed",
}

_PHASE_CHILD = (
    _PHASE_KILL
    + r"""
from dpstudio.cli import main
sys.exit(main(sys.argv[1:]))
"""
)


def make_input(path: Path, rows: int, seed: int = 0) -> Path:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    pd.DataFrame(
        {
            "person_id": [f"P{i:07d}" for i in range(rows)],
            "age": rng.integers(18, 90, rows),
            "income": rng.integers(0, 200_000, rows),
            "sex": rng.choice(["female", "male"], rows),
            "smoker": rng.choice(["yes", "no"], rows),
        }
    ).to_csv(path, index=False)
    return path


def make_recipe(data: Path, recipe: Path, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            PY,
            "-m",
            "dpstudio",
            "recipe",
            "init",
            str(data),
            "-o",
            str(recipe),
            "--release",
            "record",
            "--epsilon",
            "0.01",
            "--role",
            "person_id=identifier",
            "--role",
            "sex=public",
            "--role",
            "age=sensitive",
            "--role",
            "income=sensitive",
            "--role",
            "smoker=sensitive",
            "--bounds",
            "age=0:120",
            "--bounds",
            "income=0:250000",
            "--categories",
            "sex=female,male",
            "--categories",
            "smoker=yes,no",
            "--seed",
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def cli_command(recipe: Path, out: Path, ledger: Path, *, patched: bool = False) -> list[str]:
    head = [PY, "-c", _CLI_CHILD] if patched else [PY, "-m", "dpstudio"]
    return head + ["release", str(recipe), "--output", str(out), "--ledger", str(ledger)]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.pop("DPSTUDIO_LEDGER", None)
    return env


def cli_works(work: Path, env) -> tuple[bool, str]:
    data = make_input(work / "probe.csv", 200)
    rec = work / "probe.recipe.json"
    p = make_recipe(data, rec, env)
    if p.returncode != 0:
        return False, (p.stderr.strip().splitlines() or ["recipe init failed"])[-1]
    out = work / "probe_out.csv"
    p = subprocess.run(
        cli_command(rec, out, work / "probe.sqlite"), capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    for f in (out, data, rec):
        f.unlink(missing_ok=True)
    if p.returncode != 0:
        return False, (p.stderr.strip().splitlines() or ["release failed"])[-1]
    return True, ""


def peek_status(ledger: Path, out: Path) -> str:
    """Status of the row for ``out`` *before* recovery (which phase the kill hit)."""
    if not ledger.exists():
        return "none"
    con = sqlite3.connect(str(ledger), timeout=30)
    try:
        row = con.execute(
            "SELECT status FROM entries WHERE output_path=? ORDER BY id DESC LIMIT 1", (str(out.resolve()),)
        ).fetchone()
    except sqlite3.Error:
        return "none"
    finally:
        con.close()
    return row[0] if row else "none"


def check_consistency(ledger_path: Path, out_dir: Path, pattern: str = "out_*", only=None) -> list[str]:
    """Reopen the ledger (runs recovery) and list every inconsistency (empty = consistent).
    ``only``: hash just this output (the per-trial check); None hashes every output."""
    sys.path.insert(0, str(ROOT))
    from dpstudio.ledger import Ledger, _sha256_file

    led = Ledger(ledger_path)
    problems = []
    by_path = {}
    for ds in led.datasets():
        for e in led.show(ds["dataset"])["entries"]:
            if e["status"] != "complete":
                problems.append(f"entry {e['id']} left {e['status']}")
                continue
            p = e["output_path"]
            by_path[p] = e
            if not p or not os.path.isfile(p):
                problems.append(f"entry {e['id']}: output {p} missing")
            elif only is not None and p != str(Path(only).resolve()):
                continue
            elif _sha256_file(p) != e["output_sha256"]:
                problems.append(f"entry {e['id']}: output {p} has the wrong hash (partial or replaced)")
    for f in out_dir.glob(pattern):
        if str(f.resolve()) not in by_path:
            problems.append(f"output {f.name} exists without a complete ledger entry")
    for f in out_dir.iterdir():
        if f.name.endswith((".dpsrel", ".dpstmp")) or ".dpsrel." in f.name:
            problems.append(f"temporary file left behind: {f.name}")
    return problems


def run(
    trials: int,
    *,
    mode: str = "auto",
    rows: int = 50_000,
    seed: int = 0,
    workdir=None,
    finish_share: float = 0.1,
    slow_s: float = 0.3,
    log=None,
) -> dict:
    rnd = random.Random(seed)
    env = _env()
    own_tmp = None
    if workdir is None:
        own_tmp = tempfile.TemporaryDirectory(prefix="dps-torture-")
        workdir = own_tmp.name
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    out_dir = work / "out"
    out_dir.mkdir(exist_ok=True)
    ledger = work / "ledger.sqlite"
    reason = ""
    if mode == "auto":
        ok, reason = cli_works(work, env)
        mode = "cli" if ok else "direct"
    data = recipe = None
    if mode == "cli":
        data = make_input(work / "input.csv", rows)
        recipe = work / "recipe.json"
        p = make_recipe(data, recipe, env)
        if p.returncode != 0:
            raise SystemExit(f"recipe init failed: {p.stderr.strip()}")
        dataset_sha = None
    else:
        dataset_sha = "7" * 64

    def command(out: Path, patched: bool = False) -> list[str]:
        if mode == "cli":
            return cli_command(recipe, out, ledger, patched=patched)
        return [PY, "-c", _CHILD, str(ledger), str(out), str(rows), dataset_sha]

    # calibration: how long an undisturbed release takes (after the child is ready)
    durations = []
    for i in range(3):
        out = out_dir / f"out_cal{i}.csv"
        t0 = time.monotonic()
        p = subprocess.Popen(command(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, text=True)
        if mode == "direct":
            p.stdout.readline()
            t0 = time.monotonic()
        _, err = p.communicate(timeout=600)
        if p.returncode != 0:
            raise SystemExit(f"calibration release failed ({mode}): {err.strip()[-400:]}")
        durations.append(time.monotonic() - t0)
    # the fastest (warm) run: the first one pays for cold caches, and a span that is too long
    # lets releases finish before their kill, which tests nothing
    span = min(durations)

    counts = {
        "killed": 0,
        "consistent": 0,
        "inconsistent": 0,
        "completed": 0,
        "rolled_back": 0,
        "finished_before_kill": 0,
    }
    phases: dict[str, int] = {}
    problems_seen: list[str] = []
    t_start = time.monotonic()
    for t in range(trials):
        out = out_dir / f"out_{t:04d}.csv"
        let_finish = rnd.random() < finish_share
        # half the kills anywhere in the run, half in its last 40 % (where the output is written)
        delay = rnd.uniform(0.0, 1.15 * span) if t % 2 else rnd.uniform(0.6 * span, 1.1 * span)
        p = subprocess.Popen(command(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, text=True)
        if mode == "direct":
            p.stdout.readline()  # imports done: the delay covers the release itself
        killed = False
        if let_finish:
            p.communicate(timeout=600)
        else:
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                killed = True
            p.communicate(timeout=600)
        if killed:
            counts["killed"] += 1
            phase = peek_status(ledger, out)
            phases[phase] = phases.get(phase, 0) + 1
        elif not let_finish:
            counts["finished_before_kill"] += 1
        problems = check_consistency(ledger, out_dir, only=out)
        if problems:
            counts["inconsistent"] += 1
            problems_seen.extend(f"trial {t}: {x}" for x in problems[:3])
        else:
            counts["consistent"] += 1
        if out.exists():
            counts["completed"] += 1
        else:
            counts["rolled_back"] += 1
        if not killed and p.returncode != 0:
            problems_seen.append(f"trial {t}: unkilled release exited {p.returncode}")
        if log:
            log(
                f"trial {t}: {'killed (' + phase + ')' if killed else 'finished'}, "
                f"{'completed' if out.exists() else 'rolled back'}"
            )
    final = check_consistency(ledger, out_dir)
    problems_seen.extend(f"final check: {x}" for x in final)
    result = {
        "trials": trials,
        "mode": mode,
        **counts,
        "final_check_consistent": not final,
        "kill_phase": phases,
        "rows": rows,
        "release_seconds_median": round(span, 3),
        "wall_seconds": round(time.monotonic() - t_start, 1),
        "problems": problems_seen[:20],
    }
    if reason:
        result["cli_unavailable"] = reason
    if own_tmp is not None:
        own_tmp.cleanup()
    return result


def run_phases(*, rows: int = 20_000, workdir=None, phases=None) -> dict:
    """One real CLI release per protocol phase, each SIGKILLed by itself at that phase; then
    recovery must leave it as :data:`PHASES` says.  Deterministic: no timing is involved."""
    env = _env()
    own_tmp = None
    if workdir is None:
        own_tmp = tempfile.TemporaryDirectory(prefix="dps-phases-")
        workdir = own_tmp.name
    work = Path(workdir)
    out_dir = work / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    ledger = work / "ledger.sqlite"
    data = make_input(work / "input.csv", rows)
    recipe = work / "recipe.json"
    p = make_recipe(data, recipe, env)
    if p.returncode != 0:
        raise SystemExit(f"recipe init failed: {p.stderr.strip()}")
    result: dict = {"phases": {}, "problems": []}
    for i, phase in enumerate(phases or PHASES):
        out = out_dir / f"out_{i:02d}_{phase}.csv"
        cmd = [PY, "-c", _PHASE_CHILD, "release", str(recipe), "--output", str(out), "--ledger", str(ledger)]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=dict(env, DPS_KILL_AT=phase), cwd=ROOT, timeout=600
        )
        killed = proc.returncode == -signal.SIGKILL
        status_before = peek_status(ledger, out)
        problems = check_consistency(ledger, out_dir, only=out)
        outcome = "completed" if out.exists() else "rolled_back"
        result["phases"][phase] = {
            "killed": killed,
            "status_at_kill": status_before,
            "outcome": outcome,
            "expected": PHASES.get(phase),
            "exit": proc.returncode,
        }
        if not killed:
            result["problems"].append(f"{phase}: not killed (exit {proc.returncode}): {proc.stderr[-300:]}")
        if outcome != PHASES.get(phase):
            result["problems"].append(f"{phase}: {outcome}, expected {PHASES.get(phase)}")
        result["problems"].extend(f"{phase}: {x}" for x in problems)
    final = check_consistency(ledger, out_dir)
    result["problems"].extend(f"final check: {x}" for x in final)
    sys.path.insert(0, str(ROOT))
    from dpstudio.ledger import Ledger

    led = Ledger(ledger)
    summary = led.show(str(data))
    result["releases_recorded"] = summary["releases"]
    result["completed_outputs"] = sorted(f.name for f in out_dir.glob("out_*"))
    if own_tmp is not None:
        own_tmp.cleanup()
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--mode", choices=("auto", "cli", "direct"), default="auto")
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument(
        "--phases",
        action="store_true",
        help="instead of random kills: one release killed at each protocol phase (deterministic)",
    )
    a = ap.parse_args(argv)
    if a.phases:
        res = run_phases(rows=a.rows, workdir=a.workdir)
        print(json.dumps(res, indent=2))
        return 0 if not res["problems"] else 1
    res = run(
        a.trials,
        mode=a.mode,
        rows=a.rows,
        seed=a.seed,
        workdir=a.workdir,
        log=(lambda m: print(m, file=sys.stderr)) if a.verbose else None,
    )
    print(json.dumps(res, indent=2))
    return 0 if res["inconsistent"] == 0 and not res["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
