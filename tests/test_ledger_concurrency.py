"""The ledger under concurrent processes and under SIGKILL at each phase of a release."""

from __future__ import annotations

import importlib.util
import json
import math
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpstudio.ledger import Ledger

ROOT = Path(__file__).resolve().parent.parent
SHA = "5e" * 32


def _torture():
    spec = importlib.util.spec_from_file_location("ledger_torture", ROOT / "benchmarks" / "ledger_torture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DPSTUDIO_LEDGER", None)
    return env


def _reserve_and_write(args):
    db, out, eps, barrier = args
    from dpstudio.errors import BudgetError

    led = Ledger(db)
    barrier.wait()
    try:
        r = led.reserve(SHA, loss=(eps, 0.0), output_path=out)
    except BudgetError as exc:
        return ("refused", str(exc))
    led.write_and_commit(r, out, lambda tmp: Path(tmp).write_text("x" * 10000))
    return ("ok", "")


@pytest.mark.slow
def test_ten_processes_direct_never_exceed_cap(tmp_path):
    db = str(tmp_path / "l.sqlite")
    cap, eps = 1.0, 0.15
    Ledger(db).set_cap(SHA, cap)
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(10)
        with ctx.Pool(10) as pool:
            res = pool.map(_reserve_and_write, [(db, str(tmp_path / f"o{i}.txt"), eps, barrier) for i in range(10)])
    ok = [r for r in res if r[0] == "ok"]
    assert len(ok) == math.floor(cap / eps) == 6
    assert all("left of its cap ε=1" in r[1] for r in res if r[0] == "refused")
    s = Ledger(db).summary(SHA)
    assert s["releases"] == 6 and s["spent"]["epsilon"] <= cap + 1e-12
    assert len(list(tmp_path.glob("o*.txt"))) == 6


@pytest.fixture(scope="module")
def cli_recipe(tmp_path_factory):
    work = tmp_path_factory.mktemp("cli")
    t = _torture()
    data = t.make_input(work / "input.csv", 400)
    recipe = work / "recipe.json"
    p = t.make_recipe(data, recipe, _env())
    assert p.returncode == 0, p.stderr
    return work, data, recipe


@pytest.mark.slow
def test_ten_cli_releases_against_one_cap(cli_recipe, tmp_path):
    """The real ``dpstudio release``: ε=0.01 per release, cap 0.035 -> exactly 3 succeed."""
    _, data, recipe = cli_recipe
    db = tmp_path / "l.sqlite"
    cap, eps = 0.035, 0.01
    Ledger(db).set_cap(str(data), cap)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dpstudio",
                "release",
                str(recipe),
                "--output",
                str(tmp_path / f"out{i}.csv"),
                "--ledger",
                str(db),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )
        for i in range(10)
    ]
    results = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    codes = sorted(r[0] for r in results)
    assert codes == [0] * math.floor(cap / eps) + [2] * (10 - math.floor(cap / eps)), [r[2][-300:] for r in results]
    for code, out, err in results:
        if code == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and "release would spend ε=0.01" in lines[0] and "cap ε=0.035" in lines[0]
            assert "Traceback" not in err
        else:
            assert json.loads(out)["ledger"]["cap"]["epsilon"] == cap
    led = Ledger(db)
    s = led.show(str(data))
    assert s["releases"] == 3 and s["spent"]["epsilon"] <= cap + 1e-12
    assert led.verify() == []
    assert len(list(tmp_path.glob("out*.csv"))) == 3
    assert not [p for p in tmp_path.iterdir() if ".dpsrel" in p.name or p.name.endswith(".dpstmp")]


@pytest.mark.slow
def test_sigkill_at_every_phase_leaves_the_ledger_consistent(tmp_path):
    """One real CLI release per phase of the ledger protocol, each SIGKILLed by itself exactly
    at that phase (no timing: the same windows are hit on any machine, loaded or not).
    Recovery must roll back what was not yet committing and roll forward the rest."""
    if sys.platform == "win32":
        pytest.skip("SIGKILL trials need POSIX signals")
    t = _torture()
    res = t.run_phases(rows=5_000, workdir=tmp_path)
    assert res["problems"] == [], res
    assert set(res["phases"]) == set(t.PHASES)
    for phase, info in res["phases"].items():
        assert info["killed"], (phase, info)
        assert info["outcome"] == t.PHASES[phase], (phase, info)
    # the in-flight states were all reached, so each recovery path ran
    assert {i["status_at_kill"] for i in res["phases"].values()} == {"pending", "writing", "committing", "complete"}
    rolled_forward = [ph for ph, want in t.PHASES.items() if want == "completed"]
    assert res["releases_recorded"] == len(rolled_forward)
    assert len(res["completed_outputs"]) == len(rolled_forward)
