"""Fuzz and fault suite for the command line: what a hostile or careless user can throw at it.

Case families (each case is a plain dict, so a case that fails can be re-run alone):

* ``file``: malformed data files (random bytes, ragged or truncated CSV, junk behind a
  Parquet/Excel/Stata suffix, a struct column, a far-away spreadsheet cell, a FIFO, a folder)
  through ``inspect`` and ``recipe init``;
* ``recipe``: a valid recipe with random mutations (keys dropped, types changed, extreme and
  non-finite numbers, deep nesting, duplicate keys) through ``recipe check`` and ``release``;
* ``path``: hostile output and report targets (the input itself, via ``..`` or a symlink or a
  hard link, the recipe, the ledger, each other, ``/dev/null``, a FIFO, a folder, a trailing
  slash, names of 240-255 characters, missing folders, wrong suffixes);
* ``formula``: spreadsheet-formula payloads in cells, categories and column names, released to
  CSV, TSV and XLSX and read back;
* kills at every phase of a release are in ``benchmarks/ledger_torture.py --phases`` (and its
  test); this suite covers what a command *says* and leaves behind.

Every case checks the same promises: exit 0 or 2 (never a traceback, never exit 1), an answer
within the time limit (no hang), the input, the recipe and the ledger never overwritten, and
the ledger charged exactly when the command says a release happened.

    python tests/fuzz/harness.py --cases 1200 [--seed 0] [--jobs 2]

prints one JSON object with the counts (``make fuzz``).  The fast subset runs in ``make test``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import sqlite3
import stat
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE_SECONDS = 60.0

FORMULA_PAYLOADS = [
    "=1+1",
    "+1",
    "-1+2",
    "@SUM(A1:A2)",
    '=HYPERLINK("http://x.invalid","c")',
    "\t=1",
    "\r=2+2",
    "a\r=2+2",
    "=cmd|' /C calc'!A0",
    "＝1+1",
    "=2+5+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@cmd|'/C calc'!A0",
]
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")


# --------------------------------------------------------------------------------- helpers


def _sha(path: Path) -> str | None:
    try:
        if not path.is_file():
            return None
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _releases(ledger: Path) -> int:
    """Complete releases recorded in a ledger (0 when there is none)."""
    if not ledger.is_file() or ledger.stat().st_size == 0:
        return 0
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=30)
    try:
        return int(con.execute("SELECT COUNT(*) FROM entries WHERE status='complete'").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def _cli(args: list[str]) -> tuple[int, str, str]:
    """``dpstudio ARGS`` in this process: (exit code, stdout, stderr)."""
    from dpstudio.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return int(code or 0), out.getvalue(), err.getvalue()


def _verdict(code: int, err: str, out: str = "") -> list[str]:
    problems = []
    # exit 3: 'recipe init' wrote a recipe with problems to fix (and lists them)
    if code not in (0, 2) and not (code == 3 and "problem(s) to fix" in err):
        problems.append(f"exit {code}")
    if "Traceback" in err:
        problems.append("traceback")
    if code == 2 and not _explained(out, err):
        problems.append(f"exit 2 without a 'dpstudio:' message: {err[-200:]!r}")
    return problems


def _explained(out: str, err: str) -> bool:
    """Exit 2 comes with a 'dpstudio: ...' line, or (``recipe check``) a JSON verdict listing the problems."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    if lines and lines[0].startswith("dpstudio"):
        return True
    try:
        verdict = json.loads(out)
    except ValueError:
        return False
    return isinstance(verdict, dict) and verdict.get("valid") is False and bool(verdict.get("problems"))


def _table(rows: int, rng: random.Random):
    import pandas as pd

    return pd.DataFrame(
        {
            "person_id": [f"P{i:05d}" for i in range(rows)],
            "age": [rng.randint(18, 90) for _ in range(rows)],
            "income": [rng.randint(0, 200_000) for _ in range(rows)],
            "sex": [rng.choice(["female", "male"]) for _ in range(rows)],
            "smoker": [rng.choice(["yes", "no"]) for _ in range(rows)],
        }
    )


INIT_ARGS = [
    "--release",
    "record",
    "--epsilon",
    "0.5",
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
]


def _base_release(work: Path, rng: random.Random, rows: int = 60) -> tuple[Path, Path, Path]:
    """A small input, a valid recipe for it and a ledger path inside ``work``."""
    data = work / "input.csv"
    _table(rows, rng).to_csv(data, index=False)
    recipe = work / "recipe.json"
    code, _, err = _cli(["recipe", "init", str(data), "-o", str(recipe), *INIT_ARGS])
    if code != 0:
        raise RuntimeError(f"fuzz setup: recipe init failed: {err[-300:]}")
    return data, recipe, work / "ledger.sqlite"


# ---------------------------------------------------------------------------- case: files


def _malformed_file(work: Path, rng: random.Random, kind: str) -> Path:
    p = work / "bad.csv"
    if kind == "random_bytes":
        p.write_bytes(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 3000))))
    elif kind == "ragged":
        lines = ["a,b,c"] + [
            ",".join(str(rng.randint(0, 9)) for _ in range(rng.choice([1, 2, 3, 4, 7])))
            for _ in range(rng.randint(1, 50))
        ]
        p.write_text("\n".join(lines))
    elif kind == "truncated_quote":
        p.write_text('a,b\n1,"unterminated\n2,3\n')
    elif kind == "nul_bytes":
        p.write_bytes(b"a,b\n1,\x002\n3,4\n" * rng.randint(1, 20))
    elif kind == "only_header":
        p.write_text("a,b,c\n")
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "duplicate_columns":
        p.write_text("a,a,b\n1,2,3\n4,5,6\n")
    elif kind == "wide_header":
        p.write_text(",".join(f"c{i}" for i in range(rng.randint(500, 3000))) + "\n" + "1\n")
    elif kind == "bom_latin1":
        p.write_bytes(b"\xef\xbb\xbfname,town\nJos\xe9,K\xf6ln\n")
    elif kind == "junk_parquet":
        p = work / "bad.parquet"
        p.write_bytes(b"PAR1" + bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 500))) + b"PAR1")
    elif kind == "junk_xlsx":
        p = work / "bad.xlsx"
        p.write_bytes(b"PK\x03\x04" + bytes(rng.getrandbits(8) for _ in range(400)))
    elif kind == "junk_dta":
        p = work / "bad.dta"
        p.write_bytes(bytes(rng.getrandbits(8) for _ in range(300)))
    elif kind == "struct_parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        p = work / "nested.parquet"
        pq.write_table(
            pa.table(
                {"s": pa.array([{"x": 1, "y": "a"}, {"x": 2, "y": "b"}]), "l": pa.array([[1, 2], [3]]), "v": [1, 2]}
            ),
            p,
        )
    elif kind == "far_cell_xlsx":
        from openpyxl import Workbook

        p = work / "far.xlsx"
        wb = Workbook()
        ws = wb.active
        ws["A1"] = "a"
        ws["A2"] = 1
        ws["XFD1048576"] = 1
        wb.save(p)
    elif kind == "fifo":
        p = work / "pipe.csv"
        os.mkfifo(p)
    elif kind == "folder":
        p = work / "folder.csv"
        p.mkdir()
    elif kind == "missing":
        p = work / "does_not_exist.csv"
    else:  # pragma: no cover
        raise ValueError(kind)
    return p


FILE_KINDS = (
    "random_bytes",
    "ragged",
    "truncated_quote",
    "nul_bytes",
    "only_header",
    "empty",
    "duplicate_columns",
    "wide_header",
    "bom_latin1",
    "junk_parquet",
    "junk_xlsx",
    "junk_dta",
    "struct_parquet",
    "far_cell_xlsx",
    "fifo",
    "folder",
    "missing",
)


def case_file(case: dict, work: Path) -> dict:
    rng = random.Random(case["seed"])
    path = _malformed_file(work, rng, case["kind"])
    problems = []
    before = _sha(path)
    for args in (["inspect", str(path)], ["recipe", "init", str(path), "-o", str(work / "r.json")]):
        code, _, err = _cli(args)
        problems += [f"{args[0]}: {p}" for p in _verdict(code, err)]
    if before is not None and _sha(path) != before:
        problems.append("the input file changed")
    return {"problems": problems}


# -------------------------------------------------------------------------- case: recipes

_EXTREMES = [
    0,
    -1,
    1e-300,
    1e300,
    1e-18,
    0.5,
    1,
    2,
    10**400,
    -(10**400),
    "",
    "x" * 10_000,
    None,
    True,
    [],
    {},
    [1, 2],
    "NaN",
    "1e309",
    3.5,
]


def _mutate(obj, rng: random.Random, depth: int = 0):
    """One random mutation somewhere inside a JSON value; returns the new value."""
    if isinstance(obj, dict) and obj and rng.random() < 0.8:
        key = rng.choice(sorted(obj))
        r = rng.random()
        out = dict(obj)
        if r < 0.15:
            del out[key]
        elif r < 0.25:
            out[key + "_extra"] = rng.choice(_EXTREMES)
        else:
            out[key] = _mutate(obj[key], rng, depth + 1)
        return out
    if isinstance(obj, list) and obj and rng.random() < 0.8:
        out = list(obj)
        i = rng.randrange(len(out))
        r = rng.random()
        if r < 0.2:
            del out[i]
        elif r < 0.3:
            out.append(out[i])  # duplicates (e.g. the same column twice)
        else:
            out[i] = _mutate(out[i], rng, depth + 1)
        return out
    return rng.choice(_EXTREMES)


def _recipe_text(recipe: Path, rng: random.Random, kind: str) -> str:
    data = json.loads(recipe.read_text())
    if kind == "mutate":
        for _ in range(rng.randint(1, 3)):
            data = _mutate(data, rng)
        text = json.dumps(data, allow_nan=True, default=str)
    elif kind == "deep":
        text = json.dumps(data)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    elif kind == "duplicate_key":
        text = json.dumps(data)
        text = text.replace('"budget": {', '"budget": {"epsilon": 1000, ', 1)
    elif kind == "huge_number":
        text = json.dumps(data).replace('"epsilon": 0.5', '"epsilon": 0.' + "0" * 398 + "5", 1)
    elif kind == "non_finite":
        text = json.dumps(data).replace('"epsilon": 0.5', '"epsilon": -Infinity', 1)
    elif kind == "truncated":
        full = json.dumps(data)
        text = full[: rng.randrange(len(full))]
    else:  # pragma: no cover
        raise ValueError(kind)
    return text


RECIPE_KINDS = ("mutate",) * 6 + ("deep", "duplicate_key", "huge_number", "non_finite", "truncated")


def case_recipe(case: dict, work: Path) -> dict:
    rng = random.Random(case["seed"])
    data, recipe, ledger = _base_release(work, rng)
    recipe.write_text(_recipe_text(recipe, rng, case["kind"]))
    keep = {p: _sha(p) for p in (data, recipe)}
    problems = []
    code, stdout, err = _cli(["recipe", "check", str(recipe)])
    problems += [f"check: {p}" for p in _verdict(code, err, stdout)]
    out = work / "out.csv"
    code, _, err = _cli(["release", str(recipe), "--output", str(out), "--ledger", str(ledger)])
    problems += [f"release: {p}" for p in _verdict(code, err)]
    problems += _spend_matches(code, ledger, 0, out)
    problems += [f"{p.name} changed" for p, h in keep.items() if _sha(p) != h]
    return {"problems": problems, "exit": code}


def _spend_matches(code: int, ledger: Path, before: int, out: Path | None) -> list[str]:
    after = _releases(ledger)
    if code == 0 and after != before + 1:
        return [f"exit 0 but the ledger recorded {after - before} releases"]
    if code != 0 and after != before:
        return [f"exit {code} but the ledger recorded {after - before} release(s): an unrecorded failure was charged"]
    if code == 0 and out is not None and not out.is_file():
        return ["exit 0 but no output file"]
    return []


# ---------------------------------------------------------------------------- case: paths

PATH_KINDS = (
    "input",
    "input_dotdot",
    "input_symlink",
    "input_hardlink",
    "recipe",
    "ledger",
    "ledger_wal",
    "report_is_output",
    "report_is_input",
    "dev_null",
    "fifo",
    "folder",
    "trailing_slash",
    "long_240",
    "long_250",
    "long_255",
    "long_300",
    "missing_folder",
    "bad_suffix",
    "bad_report_suffix",
    "report_missing_folder",
    "artifact_clash",
    "ok",
)


def case_path(case: dict, work: Path) -> dict:
    rng = random.Random(case["seed"])
    data, recipe, ledger = _base_release(work, rng)
    kind = case["kind"]
    # one good release first, so the ledger exists and is worth protecting
    code, _, err = _cli(["release", str(recipe), "--output", str(work / "first.csv"), "--ledger", str(ledger)])
    if code != 0:
        return {"problems": [f"setup release failed: {err[-300:]}"]}
    out: str = str(work / "out.csv")
    report: str | None = None
    sub = work / "sub"
    sub.mkdir()
    if kind == "input":
        out = str(data)
    elif kind == "input_dotdot":
        out = str(sub / ".." / data.name)
    elif kind == "input_symlink":
        (work / "link.csv").symlink_to(data)
        out = str(work / "link.csv")
    elif kind == "input_hardlink":
        os.link(data, work / "hard.csv")
        out = str(work / "hard.csv")
    elif kind == "recipe":
        out = str(recipe)
    elif kind == "ledger":
        out = str(ledger)
    elif kind == "ledger_wal":
        out = str(ledger) + "-wal"
    elif kind == "report_is_output":
        report = out
    elif kind == "report_is_input":
        report = str(data)
    elif kind == "dev_null":
        # a character device of our own (the same node as /dev/null): a release that replaced it
        # by a regular file would do that to the real /dev/null when run as root
        node = work / "null.csv"
        try:
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except (PermissionError, AttributeError):
            os.mkfifo(node)
        out = str(node)
    elif kind == "fifo":
        os.mkfifo(work / "fifo.csv")
        out = str(work / "fifo.csv")
    elif kind == "folder":
        out = str(sub)
    elif kind == "trailing_slash":
        out = str(work / "newdir") + "/"
    elif kind.startswith("long_"):
        n = int(kind.split("_")[1])
        out = str(work / ("o" * (n - 4) + ".csv"))
    elif kind == "missing_folder":
        out = str(work / "nope" / "out.csv")
    elif kind == "bad_suffix":
        out = str(work / "out.exe")
    elif kind == "bad_report_suffix":
        report = str(work / "report.docx")
    elif kind == "report_missing_folder":
        report = str(work / "nope" / "report.html")
    elif kind == "artifact_clash":
        report = str(work / "out.artifact.json")
    protected = {p: _sha(p) for p in (data, recipe, work / "first.csv")}
    before = _releases(ledger)
    args = ["release", str(recipe), "--output", out, "--ledger", str(ledger)]
    if report:
        args += ["--report", report]
    code, _, err = _cli(args)
    problems = _verdict(code, err)
    problems += [f"{p.name} was overwritten" for p, h in protected.items() if _sha(p) != h]
    if kind == "dev_null" and stat.S_ISREG(os.lstat(out).st_mode):
        problems.append("a device node was replaced by a regular file")
    if kind == "fifo" and not stat.S_ISFIFO(os.lstat(out).st_mode):
        problems.append("a FIFO was replaced by a regular file")
    if _releases(ledger) < before:
        problems.append("the ledger lost entries")
    problems += _spend_matches(code, ledger, before, None)
    must_refuse = {
        "input",
        "input_dotdot",
        "input_symlink",
        "input_hardlink",
        "recipe",
        "ledger",
        "ledger_wal",
        "report_is_output",
        "report_is_input",
        "dev_null",
        "fifo",
        "folder",
        "trailing_slash",
        "missing_folder",
        "bad_suffix",
        "bad_report_suffix",
        "report_missing_folder",
    }
    if kind in must_refuse and code != 2:
        problems.append(f"{kind}: expected a refusal (exit 2), got exit {code}")
    if kind in ("long_240", "long_250", "long_255", "ok") and code != 0:
        problems.append(f"{kind}: a valid target was refused: {err.strip()[-200:]}")
    return {"problems": problems, "exit": code}


# ------------------------------------------------------------------------- case: formulas


def case_formula(case: dict, work: Path) -> dict:
    """Payloads in a public text column, in a randomised-response category list and in a column
    name, from a Parquet input (so the input itself is unambiguous), released to CSV/TSV/XLSX."""
    import csv

    rng = random.Random(case["seed"])
    fmt = case["kind"]
    payloads = list(FORMULA_PAYLOADS)
    rng.shuffle(payloads)
    n = 40
    table = _table(n, rng)
    table["note"] = [payloads[i % len(payloads)] for i in range(n)]
    cats = [p for p in payloads if "," not in p][:3]  # a category list is comma-separated
    table["smoker"] = [cats[i % 3] for i in range(n)]
    plain = work / "plain.parquet"
    table.to_parquet(plain, index=False)
    recipe = work / "recipe.json"
    args = [
        "recipe",
        "init",
        str(plain),
        "-o",
        str(recipe),
        "--release",
        "record",
        "--epsilon",
        "1",
        "--role",
        "person_id=identifier",
        "--role",
        "sex=public",
        "--role",
        "note=public",
        "--role",
        "age=sensitive",
        "--role",
        "income=ignore",
        "--role",
        "smoker=sensitive",
        "--bounds",
        "age=0:120",
        "--categories",
        "smoker=" + ",".join(cats),
    ]
    code, _, err = _cli(args)
    problems = [f"init: {p}" for p in _verdict(code, err)]
    if code != 0:
        return {"problems": problems + [f"init refused the payload table: {err.strip()[-200:]}"], "exit": code}
    # the column name carries a payload too (a name like '=HYPERLINK(...)' cannot be given as
    # COL=ROLE on the command line, so the recipe is edited as a user editing JSON would)
    header = rng.choice(payloads)
    hostile = work / "input.parquet"
    table.rename(columns={"sex": header}).to_parquet(hostile, index=False)
    spec = json.loads(recipe.read_text())
    spec["input"]["path"] = str(hostile)
    spec["input"].pop("sha256", None)
    for col in spec["columns"]:
        if col["name"] == "sex":
            col["name"] = header
    recipe.write_text(json.dumps(spec))
    out = work / f"out.{fmt}"
    code, _, err = _cli(["release", str(recipe), "--output", str(out), "--ledger", str(work / "l.sqlite")])
    problems += [f"release: {p}" for p in _verdict(code, err)]
    if code != 0:
        return {"problems": problems + [f"release refused: {err.strip()[-200:]}"], "exit": code}
    if fmt in ("csv", "tsv"):
        with open(out, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh, delimiter="\t" if fmt == "tsv" else ","))
        widths = {len(r) for r in rows}
        if len(rows) != n + 1 or len(widths) != 1:
            problems.append(f"{fmt}: {len(rows)} rows of widths {sorted(widths)} (expected {n + 1} rows of one width)")
        numeric = {i for i, name in enumerate(rows[0] if rows else []) if name == "age"}
        cells = [c for row in rows for i, c in enumerate(row) if i not in numeric]
    else:
        from openpyxl import load_workbook

        ws = load_workbook(out).active
        cells = []
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f":
                    problems.append(f"xlsx: live formula in {c.coordinate}")
                if isinstance(c.value, str):
                    cells.append(c.value)
    bad = [c for c in cells if c.startswith(FORMULA_TRIGGERS)]
    if bad:
        problems.append(f"{fmt}: {len(bad)} cell(s) start with a formula trigger, e.g. {bad[0][:20]!r}")
    return {"problems": problems, "exit": code}


FAMILIES = {
    "file": (case_file, FILE_KINDS),
    "recipe": (case_recipe, RECIPE_KINDS),
    "path": (case_path, PATH_KINDS),
    "formula": (case_formula, ("csv", "tsv", "xlsx")),
}


def run_case(case: dict) -> dict:
    """Run one case in a fresh temporary folder (in the calling process)."""
    fn, _ = FAMILIES[case["family"]]
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory(prefix="dps-fuzz-") as tmp:
        work = Path(tmp)
        os.environ["DPSTUDIO_LEDGER"] = str(work / "default-ledger.sqlite")
        t0 = time.monotonic()
        try:
            res = fn(case, work)
        except Exception as exc:  # the harness itself or an escaped exception: a finding
            import traceback

            res = {"problems": [f"harness exception: {type(exc).__name__}: {exc}", traceback.format_exc()[-600:]]}
        res["seconds"] = round(time.monotonic() - t0, 3)
    return {**case, **res}


def make_cases(count: int, seed: int = 0, families=None) -> list[dict]:
    """``count`` cases spread over the families; every kind of every family appears at least
    once when ``count`` allows, the rest drawn at random (reproducible from ``seed``)."""
    rng = random.Random(seed)
    fams = list(families or FAMILIES)
    cases = []
    for fam in fams:
        for kind in dict.fromkeys(FAMILIES[fam][1]):
            cases.append({"family": fam, "kind": kind, "seed": rng.getrandbits(32)})
    while len(cases) < count:
        fam = rng.choice(fams)
        cases.append({"family": fam, "kind": rng.choice(FAMILIES[fam][1]), "seed": rng.getrandbits(32)})
    return cases[:count] if count >= len(cases) else cases


def run_cases(cases: list[dict], *, jobs: int = 2, case_seconds: float = CASE_SECONDS, log=None) -> dict:
    """Run cases in worker processes; a case that does not answer in ``case_seconds`` is a hang
    (its worker is killed and replaced)."""
    ctx = get_context("spawn")
    results: list[dict] = []
    pending = list(cases)
    while pending:
        batch, pending = pending, []
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = [(c, pool.submit(run_case, c)) for c in batch]
            hung = False
            for c, fut in futures:
                if hung:  # the pool is being torn down: re-queue what did not run
                    if fut.done() and not fut.cancelled() and fut.exception() is None:
                        results.append(fut.result())
                    else:
                        pending.append(c)
                    continue
                try:
                    results.append(fut.result(timeout=case_seconds))
                except FutureTimeout:
                    results.append({**c, "problems": [f"hang: no answer in {case_seconds:.0f} s"], "hang": True})
                    hung = True
                    for p in list(getattr(pool, "_processes", {}).values()):
                        p.kill()
                except Exception as exc:
                    results.append({**c, "problems": [f"worker died: {type(exc).__name__}: {exc}"]})
                if log:
                    log(results[-1])
    return summarise(results)


def summarise(results: list[dict]) -> dict:
    def count(pred):
        return sum(1 for r in results if pred(r))

    probs = [r for r in results if r.get("problems")]

    def text(r):
        return " ".join(r.get("problems", []))

    by_family: dict[str, dict] = {}
    for r in results:
        f = by_family.setdefault(r["family"], {"cases": 0, "failed": 0})
        f["cases"] += 1
        f["failed"] += bool(r.get("problems"))
    return {
        "cases": len(results),
        "failed": len(probs),
        "tracebacks": count(lambda r: "traceback" in text(r) or "harness exception" in text(r)),
        "exit_1": count(lambda r: "exit 1" in text(r)),
        "hangs": count(lambda r: r.get("hang")),
        "data_loss": count(
            lambda r: (
                "overwritten" in text(r) or "changed" in text(r) or "replaced" in text(r) or "lost entries" in text(r)
            )
        ),
        "unrecorded_spends": count(lambda r: "charged" in text(r) or "ledger recorded" in text(r)),
        "formula_cells": count(lambda r: "formula" in text(r)),
        "by_family": by_family,
        "failures": [{k: r[k] for k in ("family", "kind", "seed", "problems")} for r in probs[:30]],
        "median_case_seconds": sorted(r.get("seconds", 0) for r in results)[len(results) // 2] if results else 0,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="dpstudio CLI fuzz and fault suite (prints JSON)")
    ap.add_argument("--cases", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES))
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    t0 = time.monotonic()
    cases = make_cases(a.cases, a.seed, a.family)
    log = (
        (lambda r: print(json.dumps({k: r.get(k) for k in ("family", "kind", "seed", "problems")}), file=sys.stderr))
        if a.verbose
        else None
    )
    res = run_cases(cases, jobs=a.jobs, log=log)
    res["wall_seconds"] = round(time.monotonic() - t0, 1)
    res["seed"] = a.seed
    print(json.dumps(res, indent=2, ensure_ascii=False))
    return 0 if res["failed"] == 0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
