"""Issue 16 item 2 / issue 17 item 4: the point of no return.  Before the ledger commit nothing is
written or spent; after it the release is final: a failing report, a cancel or Ctrl-C is a
warning, the command exits 0 and says exactly what happened."""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main


def _releases(ledger: Path) -> list[dict]:
    from dpstudio.ledger import Ledger

    return Ledger(ledger).datasets() if ledger.exists() else []


@pytest.fixture
def record(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    pd.DataFrame({"age": rng.integers(18, 80, 150), "sex": rng.choice(["f", "m"], 150)}).to_csv("in.csv", index=False)
    assert (
        main(
            [
                "recipe",
                "init",
                "in.csv",
                "-o",
                "rec.json",
                "--role",
                "age=sensitive",
                "--role",
                "sex=sensitive",
                "--bounds",
                "age=0:100",
                "--categories",
                "sex=f,m",
                "--epsilon",
                "1.1",
                "--confirm-inferred",
            ]
        )
        == 0
    )
    capsys.readouterr()
    return tmp_path, Path(os.environ["DPSTUDIO_LEDGER"])


def test_model_release_with_an_internal_report_succeeds(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    x = rng.random(300)
    pd.DataFrame({"x": x, "y": (x + 0.3 * rng.normal(size=300) > 0.5).astype(int)}).to_csv("m.csv", index=False)
    assert (
        main(
            [
                "recipe",
                "init",
                "m.csv",
                "-o",
                "r.json",
                "--release",
                "model",
                "--role",
                "y=label",
                "--role",
                "x=sensitive",
                "--bounds",
                "x=0:1",
                "--categories",
                "y=0,1",
                "--epsilon",
                "1",
                "--delta",
                "1e-5",
                "--confirm-inferred",
            ]
        )
        == 0
    )
    capsys.readouterr()
    # without the data the check cannot know the mechanism the row count chooses: it says so
    # (audit finding: it printed the budget's delta, which a release of this table never charged)
    assert main(["recipe", "check", "r.json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert any("chosen from the table's row count" in w for w in checked.get("warnings", []))
    assert main(["recipe", "check", "r.json", "--with-data"]) == 0
    with_data = json.loads(capsys.readouterr().out)
    code = main(["release", "r.json", "--output", "model.json", "--report", "rep.html", "--report-variant", "internal"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert not [w for w in summary["warnings"] if "report" in w], summary["warnings"]
    html = (tmp_path / "rep.html").read_text(encoding="utf-8")
    assert "Data steward statistics" in html and "norm_clipped" in html  # the count that crashed it
    # the CLI, the report and `ledger show` name the release by one id
    from dpstudio.ledger import Ledger

    shown = Ledger().show("m.csv")
    assert [e["id"] for e in shown["entries"]] == [summary["ledger_entry"]]
    assert f"release {summary['ledger_entry']} (as" in html
    assert with_data["total"]["delta"] == summary["recorded"]["delta"]  # the check with data: what ran


def _check_final(capsys, code, d, ledger, *, says):
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    # exactly what happened: written, recorded, and why the report is missing
    assert "the data was written to" in captured.err and "recorded in the ledger" in captured.err, captured.err
    assert f"the report failed: {says}" in captured.err, captured.err
    summary = json.loads(captured.out)
    assert summary["report"] is None
    assert any("after the release was final" in w for w in summary["warnings"]), summary["warnings"]
    assert (d / "o.csv").is_file()
    (entry,) = _releases(ledger)
    assert entry["releases"] == 1 and entry["spent"]["epsilon"] == pytest.approx(1.1)
    assert main(["ledger", "verify"]) == 0  # committed, output intact
    assert not (d / "r.html").exists()


def test_a_report_failure_after_the_commit_is_a_warning_and_exit_0(record, capsys, monkeypatch):
    import dpstudio.report as report

    def full_disk(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", "r.html")

    monkeypatch.setattr(report, "write_report", full_disk)
    code = main(["release", "rec.json", "--output", "o.csv", "--report", "r.html"])
    _check_final(capsys, code, *record, says="No space left on device")


def test_keyboard_interrupt_in_the_report_phase_exits_0(record, capsys, monkeypatch):
    import dpstudio.report as report

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "write_report", interrupted)
    code = main(["release", "rec.json", "--output", "o.csv", "--report", "r.html"])
    _check_final(capsys, code, *record, says="interrupted")


@pytest.fixture
def interactive_sigint():
    """SIGINT as in a terminal: Python's KeyboardInterrupt handler.  A test run started in the
    background by a non-interactive shell inherits SIGINT ignored, and Python then installs no
    handler; the test must not depend on how it was launched."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_real_sigint_after_the_commit_is_ignored(record, capsys, monkeypatch, interactive_sigint):
    """The signal itself (not only the exception): the CLI's handler keeps the final release."""
    import dpstudio.report as report

    real = report.write_report

    def ctrl_c_then_write(*a, **k):
        os.kill(os.getpid(), signal.SIGINT)  # delivered at once to this (main) thread
        return real(*a, **k)

    monkeypatch.setattr(report, "write_report", ctrl_c_then_write)
    code = main(["release", "rec.json", "--output", "o.csv", "--report", "r.html"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert (record[0] / "r.html").is_file() and (record[0] / "o.csv").is_file()
    assert _releases(record[1])[0]["releases"] == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_sigint_before_the_commit_still_aborts(record, capsys, monkeypatch):
    import dpstudio.pipeline as run

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "load_input", interrupted)
    assert main(["release", "rec.json", "--output", "o.csv", "--report", "r.html"]) == 130
    assert not (record[0] / "o.csv").exists() and _releases(record[1]) == []


def test_a_cancel_after_the_commit_is_ignored(record, monkeypatch):
    """The GUI's cancel token set during the report phase: the release returns, committed."""
    import dpstudio.report as report
    from dpstudio.engine.progress import CancelToken
    from dpstudio.ledger import Ledger
    from dpstudio.pipeline import execute_release
    from dpstudio.recipe.model import load_recipe

    d, ledger = record
    token = CancelToken()
    real = report.write_report

    def press_cancel(*a, **k):
        token.cancel()
        return real(*a, **k)

    def progress(fraction, message=""):
        token.check()  # like the GUI worker's callback: raises once cancel was pressed

    monkeypatch.setattr(report, "write_report", press_cancel)
    result = execute_release(
        load_recipe(d / "rec.json"),
        output_path=d / "o.csv",
        report_path=d / "r.html",
        ledger=Ledger(ledger),
        cancel=token,
        progress=progress,
    )
    assert token.cancelled and result.committed and result.report_error is None
    assert result.report_path == str(d / "r.html") and (d / "r.html").is_file()
    assert "\u03b5 = 1.1 recorded" in result.done_text()
    assert _releases(ledger)[0]["releases"] == 1


def test_a_density_side_file_failure_after_the_commit_is_a_warning(record, capsys, monkeypatch):
    import dpstudio.export as export

    d, ledger = record
    assert (
        main(
            [
                "recipe",
                "init",
                "in.csv",
                "-o",
                "drec.json",
                "--release",
                "density",
                "--role",
                "age=sensitive",
                "--role",
                "sex=ignore",
                "--bounds",
                "age=0:100",
                "--option",
                "sample_rows=20",
                "--confirm-inferred",
            ]
        )
        == 0
    )
    real = export.write_text

    def failing(text, target):
        if str(target).endswith(".artifact.json"):
            raise OSError(errno.EIO, "Input/output error", str(target))
        return real(text, target)

    monkeypatch.setattr(export, "write_text", failing)
    capsys.readouterr()
    code = main(["release", "drec.json", "--output", "d.csv"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert any(
        "density side file failed after the release was final" in w for w in json.loads(captured.out)["warnings"]
    )
    assert (d / "d.csv").is_file() and _releases(ledger)[0]["releases"] == 1


@pytest.mark.parametrize("when", ["before_rename", "after_rename"])
def test_ctrl_c_once_the_release_is_committing_still_completes_it(record, capsys, monkeypatch, when):
    """Ctrl-C inside the ledger's commit, after the release was marked *committing* (the hashed
    output is ready): recovery rolls it forward, so the command reports it done (exit 0, a
    warning), never 130 with a release that happened anyway."""
    import dpstudio.ledger as dl

    d, ledger = record
    real = os.replace

    fired = []

    def interrupted_replace(a, b, *args, **kwargs):
        if Path(b).name == "o.csv" and not fired:  # one Ctrl-C, then recovery's own rename works
            fired.append(True)
            if when == "after_rename":
                real(a, b, *args, **kwargs)
            raise KeyboardInterrupt
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(dl.os, "replace", interrupted_replace)
    code = main(["release", "rec.json", "--output", "o.csv"])
    monkeypatch.setattr(dl.os, "replace", real)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert any("passed its point of no return" in w for w in summary["warnings"]), summary["warnings"]
    assert (d / "o.csv").is_file()
    (entry,) = _releases(ledger)
    assert entry["releases"] == 1 and entry["spent"]["epsilon"] == pytest.approx(1.1)
    assert main(["ledger", "verify"]) == 0


def test_a_ledger_that_cannot_mark_the_release_complete_is_a_warning(record, capsys, monkeypatch):
    """Review finding: after the rename, a failing 'complete' transaction (disk full) was
    reported as a failed release.  The output is in place and the row is committing, so the
    release stands: exit 0, a warning, and the next opening of the ledger completes it."""
    import dpstudio.ledger as dl

    d, ledger = record
    real = dl.Ledger._complete

    def disk_full(self, con, row, stamp=False):
        if stamp:  # the write_and_commit completion, not recovery's
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, con, row, stamp=stamp)

    monkeypatch.setattr(dl.Ledger, "_complete", disk_full)
    code = main(["release", "rec.json", "--output", "o.csv", "--report", "r.html"])
    monkeypatch.setattr(dl.Ledger, "_complete", real)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert any("could not mark the release complete" in w for w in summary["warnings"]), summary["warnings"]
    assert (d / "o.csv").is_file()
    import sqlite3

    con = sqlite3.connect(str(ledger))
    # still committing while this (test) process lives; recovery completes it once it is gone
    assert [r[0] for r in con.execute("SELECT status FROM entries")] == ["committing"]
    # its report is recorded all the same (audit finding: it was not, and a later release took its name)
    assert [r[0] for r in con.execute("SELECT report_path FROM entries")] == [str((d / "r.html").resolve())]
    con.close()
    assert main(["release", "rec.json", "--output", "o2.csv", "--report", "r.html"]) == 2
    assert "r.html" in capsys.readouterr().err


def test_recipe_init_refuses_to_write_over_its_input(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"age": [30, 40, 50]}).to_csv("in.csv", index=False)
    before = (tmp_path / "in.csv").read_bytes()
    code = main(["recipe", "init", "in.csv", "-o", "./x/../in.csv", "--bounds", "age=0:100"])
    assert code == 2 and "input data file" in capsys.readouterr().err
    assert (tmp_path / "in.csv").read_bytes() == before


def test_rows_are_hashed_only_for_a_file_the_ledger_does_not_know(record, capsys, monkeypatch):
    """The row sketch costs ~1 s per million rows: a second release of the same bytes, already
    resolved with its sketch stored, skips it (and is still charged to the same dataset)."""
    import dpstudio.ledger as dl

    d, ledger = record
    calls = []
    real = dl.Ledger.fingerprint_rows
    monkeypatch.setattr(dl.Ledger, "fingerprint_rows", lambda self, frame: calls.append(1) or real(self, frame))
    assert main(["release", "rec.json", "--output", "o1.csv"]) == 0
    assert main(["release", "rec.json", "--output", "o2.csv"]) == 0
    capsys.readouterr()
    assert calls == [1]
    (entry,) = _releases(ledger)
    assert entry["releases"] == 2


@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_a_real_sigint_between_the_commit_and_the_rest_is_ignored(
    record, capsys, monkeypatch, interactive_sigint, engine
):
    """Audit finding: the CLI took the release for final only once the code after the commit
    began; a Ctrl-C between (a Dask client closing for seconds) printed "interrupted", exit 130,
    no report, the spend recorded.  ``on_commit`` now runs at the point of no return itself."""
    import dpstudio.pipeline as module  # the streamed engine imports _conclude from it when it runs

    real = module._conclude

    def ctrl_c_then_conclude(**kw):
        os.kill(os.getpid(), signal.SIGINT)  # like the seconds a cluster's client takes to close
        return real(**kw)

    monkeypatch.setattr(module, "_conclude", ctrl_c_then_conclude)
    d, ledger = record
    code = main(["release", "rec.json", "--output", "o.csv", "--report", "r.html", "--engine", engine])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "already final" in captured.err and (d / "r.html").is_file()
    assert _releases(ledger)[0]["releases"] == 1


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_a_summary_that_cannot_be_printed_is_no_failed_release(record, stdout):
    """Audit finding: with the JSON summary going to a full disk (or a closed stdout) the CLI said
    the release failed (exit 2, "No space left on device while writing"; exit 1 "internal
    error") although its output and report were written and its spend recorded."""
    import subprocess
    import sys

    d, ledger = record
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root), DPSTUDIO_LEDGER=str(ledger))
    argv = [sys.executable, "-m", "dpstudio", "release", "rec.json", "--output", "o.csv", "--report", "r.html"]
    if stdout == "full":
        with open("/dev/full", "w") as full:
            proc = subprocess.run(argv, cwd=d, env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    else:
        proc = subprocess.run(
            argv,
            cwd=d,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            pass_fds=(),
            close_fds=True,
            preexec_fn=lambda: os.close(1),
        )
    assert proc.returncode == 0, proc.stderr
    assert "the release is complete" in proc.stderr and "could not be printed" in proc.stderr
    assert (d / "o.csv").is_file() and (d / "r.html").is_file()
    assert _releases(ledger)[0]["releases"] == 1


def test_a_rename_that_fails_is_no_commit_for_the_caller(record, monkeypatch):
    """Review finding: on_commit ran before the rename; a rename that failed was rolled back
    while the GUI had been told "final" and reported a spend that never happened."""
    import dpstudio.ledger as dl
    from dpstudio.errors import UserError
    from dpstudio.ledger import Ledger
    from dpstudio.pipeline import execute_release
    from dpstudio.recipe.model import load_recipe

    d, ledger = record
    real = os.replace

    def refuse_the_output(a, b, *args, **kw):
        if Path(b).name == "o.csv":
            raise OSError(errno.EACCES, "Permission denied")
        return real(a, b, *args, **kw)

    monkeypatch.setattr(dl.os, "replace", refuse_the_output)
    told = []
    with pytest.raises(UserError, match="cannot write"):
        execute_release(
            load_recipe(d / "rec.json"),
            output_path=d / "o.csv",
            ledger=Ledger(ledger),
            on_commit=lambda: told.append(1),
        )
    assert told == [] and not (d / "o.csv").exists()
    assert _releases(ledger) == [] or _releases(ledger)[0]["releases"] == 0
