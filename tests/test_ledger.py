"""The privacy budget ledger: caps, the release protocol, recovery after crashes, lookup."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from dpstudio import ledger as ledger_mod
from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.errors import BudgetError, UserError
from dpstudio.ledger import Ledger

SHA = "ab" * 32
OTHER = "cd" * 32


def _writer(text: str):
    def write(tmp):
        Path(tmp).write_text(text)
        return hashlib.sha256(text.encode()).hexdigest()

    return write


def _release(led, tmp_path, name, eps=0.1, delta=0.0, sha=SHA):
    out = tmp_path / name
    r = led.reserve(
        sha,
        dataset_name="d.csv",
        loss=PrivacyLoss(eps, delta),
        release_type="record",
        recipe_sha256="0" * 64,
        output_path=out,
    )
    return led.write_and_commit(r, out, _writer(name))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".dpsrel" in p.name or p.name.endswith(".dpstmp"))


# ---- location -------------------------------------------------------------------------------


def test_path_explicit_beats_env_beats_appdata(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "env.sqlite"))
    assert Ledger(tmp_path / "explicit.sqlite").path == tmp_path / "explicit.sqlite"
    assert Ledger().path == tmp_path / "env.sqlite"
    monkeypatch.delenv("DPSTUDIO_LEDGER")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(ledger_mod.sys, "platform", "linux")
    assert ledger_mod.default_ledger_path() == tmp_path / "xdg" / "dpstudio" / "ledger.sqlite"
    monkeypatch.setattr(ledger_mod.sys, "platform", "darwin")
    assert ledger_mod.app_data_dir() == Path.home() / "Library" / "Application Support" / "dpstudio"
    monkeypatch.setattr(ledger_mod.sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "roaming"))
    assert ledger_mod.app_data_dir() == tmp_path / "roaming" / "dpstudio"


def test_wal_mode_and_schema(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    con = sqlite3.connect(led.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = {r[1] for r in con.execute("PRAGMA table_info(entries)")}
    assert {
        "dataset",
        "epsilon",
        "delta",
        "rdp",
        "status",
        "pid",
        "pid_start_time",
        "tmp_path",
        "output_sha256",
        "recipe_sha256",
    } <= cols
    con.close()


def test_not_a_database_is_a_user_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    # no head or key beside it: some other file given as the ledger (a CSV, say), never re-initialised
    with pytest.raises(UserError, match="is not a privacy ledger"):
        Ledger(bad)
    with pytest.raises(UserError, match="is not a privacy ledger"):
        Ledger.reinit(bad, reason="wrong path")
    assert bad.read_bytes() == b"this is not sqlite" * 100 and not list(tmp_path.glob("bad.sqlite.damaged*"))
    # a damaged ledger (its head file is there): re-initialising is the way out
    (tmp_path / "bad.sqlite.head").write_text("{}")
    with pytest.raises(UserError, match="not a usable SQLite database|cannot be used"):
        Ledger(bad)
    with pytest.raises(UserError, match="folder"):
        Ledger(tmp_path)


# ---- caps -------------------------------------------------------------------------------------


def test_cap_refuses_before_anything_is_written(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, 1.0, 1e-5)
    for i in range(3):
        _release(led, tmp_path, f"o{i}.csv", eps=0.3)
    with pytest.raises(BudgetError) as exc:
        led.reserve(SHA, loss=PrivacyLoss(0.3), output_path=tmp_path / "o3.csv")
    msg = str(exc.value)
    assert "release would spend ε=0.3" in msg and "left of its cap ε=1" in msg
    assert "the dataset has ε=0.1" in msg
    assert not (tmp_path / "o3.csv").exists()
    s = led.summary(SHA)
    assert s["releases"] == 3 and s["spent"]["epsilon"] == pytest.approx(0.9)
    assert s["remaining"]["epsilon"] == pytest.approx(0.1)
    assert s["cap"] == {"epsilon": 1.0, "delta": 1e-5}


def test_cap_tolerance_allows_exact_fill(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, 1.0)
    for i in range(10):  # 10 x 0.1 = 0.9999999999999999: exactly the cap, not over it
        _release(led, tmp_path, f"o{i}.csv", eps=0.1)
    with pytest.raises(BudgetError):
        led.reserve(SHA, loss=PrivacyLoss(1e-9))


def test_delta_cap(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, 10.0, 1e-5)
    _release(led, tmp_path, "a.csv", eps=1, delta=6e-6)
    with pytest.raises(BudgetError, match="δ"):
        led.reserve(SHA, loss=PrivacyLoss(1, 6e-6))


def test_pending_reservations_hold_budget(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, 1.0)
    r1 = led.reserve(SHA, loss=PrivacyLoss(0.6))
    with pytest.raises(BudgetError, match="in progress"):
        led.reserve(SHA, loss=PrivacyLoss(0.6))
    assert led.summary(SHA)["in_progress"]["releases"] == 1
    led.abort(r1)
    led.abort(r1)  # idempotent
    led.reserve(SHA, loss=PrivacyLoss(0.6))


def test_no_cap_means_no_limit_and_unknown_summary(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    s = led.summary(OTHER)
    assert s.pop("ledger")["intact"] is True
    assert s == {
        "dataset": OTHER,
        "name": None,
        "dataset_name": None,
        "cap": None,
        "spent": {"epsilon": 0, "delta": 0},
        "remaining": None,
        "releases": 0,
    }
    _release(led, tmp_path, "a.csv", eps=50.0, sha=OTHER)
    assert led.summary(OTHER)["spent"]["epsilon"] == 50.0


def test_metric_components_are_not_in_the_total(tmp_path):
    from dpstudio.engine.accounting import compose

    led = Ledger(tmp_path / "l.sqlite")
    comp = compose([PrivacyLoss(0.5, label="age"), PrivacyLoss(3.0, kind="metric", label="voice")])
    r = led.reserve(SHA, loss=comp.total)
    assert r.epsilon == pytest.approx(0.5)


def test_invalid_inputs(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(UserError, match="fingerprint"):
        led.reserve("not-a-sha", loss=(1, 0))
    with pytest.raises(UserError, match="epsilon"):
        led.set_cap(SHA, -1)
    with pytest.raises(UserError, match="delta"):
        led.set_cap(SHA, 1, 1.5)


# ---- the protocol -------------------------------------------------------------------------------


def test_write_and_commit_success(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    digest = _release(led, tmp_path, "out.csv")
    assert digest == hashlib.sha256(b"out.csv").hexdigest()
    entry = led.show(SHA)["entries"][0]
    assert entry["status"] == "complete" and entry["output_sha256"] == digest
    assert entry["output_path"] == str((tmp_path / "out.csv").resolve())
    assert _leftovers(tmp_path) == []
    assert led.verify() == []
    (tmp_path / "out.csv").write_text("tampered")
    assert "changed" in led.verify()[0]


def test_writer_failure_leaves_nothing(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, 1.0)
    r = led.reserve(SHA, loss=PrivacyLoss(1.0), output_path=tmp_path / "o.csv")

    def broken(tmp):
        Path(tmp).write_text("half")
        (Path(tmp).parent / f".{Path(tmp).name}.x1.dpstmp").write_text("helper")  # export's temp
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        led.write_and_commit(r, tmp_path / "o.csv", broken)
    assert not (tmp_path / "o.csv").exists()
    assert _leftovers(tmp_path) == []
    assert led.show(SHA)["entries"] == []
    led.reserve(SHA, loss=PrivacyLoss(1.0))  # the budget came back


def test_cancel_during_write_with_export(tmp_path):
    import pandas as pd

    from dpstudio.engine.progress import Cancelled, CancelToken
    from dpstudio.export import write_table

    led = Ledger(tmp_path / "l.sqlite")
    tok = CancelToken()
    tok.cancel()
    r = led.reserve(SHA, loss=PrivacyLoss(1.0), output_path=tmp_path / "o.csv")
    frame = pd.DataFrame({"a": [1, 2, 3]})
    with pytest.raises(Cancelled):
        led.write_and_commit(r, tmp_path / "o.csv", lambda t: write_table(frame, t, fmt="csv", cancel=tok))
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("l.sqlite")) == []


def test_reservation_cannot_be_committed_twice(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    r = led.reserve(SHA, loss=PrivacyLoss(0.1))
    led.write_and_commit(r, tmp_path / "a.csv", _writer("a"))
    with pytest.raises(UserError, match="no longer pending"):
        led.write_and_commit(r, tmp_path / "b.csv", _writer("b"))
    led.abort(r)  # a complete release is never undone
    assert led.summary(SHA)["releases"] == 1


# ---- recovery ---------------------------------------------------------------------------------


def _forge(led, status, *, out, tmp=None, digest=None, alive=False):
    """Insert an in-flight row as a (dead or live) process would have left it."""
    led.resolve(SHA, create=True)  # the dataset as the ledger records it (chained)
    con = sqlite3.connect(led.path)
    start = ledger_mod._self_start() if alive else "not-this-process"
    cur = con.execute(
        "INSERT INTO entries(dataset, time, epsilon, delta, status, pid, pid_start_time, host, "
        "output_path, tmp_path, output_sha256) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            SHA,
            "t",
            0.5,
            0.0,
            status,
            ledger_mod.os.getpid(),
            start,
            ledger_mod._HOST,
            str(out),
            str(tmp) if tmp else None,
            digest,
        ),
    )
    con.commit()
    con.close()
    return cur.lastrowid


def _committing(led, tmp_path, name: str, n: int, content: bytes):
    """A dead release marked committing: its output ``name`` hashed as ``content``."""
    tmp = tmp_path / f".{name}.{n}-1.dpsrel"
    return _forge(led, "committing", out=tmp_path / name, tmp=tmp, digest=hashlib.sha256(content).hexdigest())


def _status(led):
    return [(e["status"], Path(e["output_path"]).name) for e in led.show(SHA)["entries"]] if led.datasets() else []


def test_recovery_rolls_back_dead_pending_and_writing(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    tmp = tmp_path / ".a.csv.1-1.dpsrel"
    tmp.write_text("partial")
    (tmp_path / f".{tmp.name}.abc.dpstmp").write_text("partial helper")  # export's own temp
    _forge(led, "writing", out=tmp_path / "a.csv", tmp=tmp)
    _forge(led, "pending", out=tmp_path / "b.csv")
    done = Ledger(led.path).recover() or None
    led2 = Ledger(led.path)
    assert _status(led2) == []
    assert _leftovers(tmp_path) == []
    assert done is None  # recovery already ran when the ledger was opened


def test_recovery_rolls_forward_committing(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    # 1) killed before the rename: tmp complete, output absent -> rename finished
    tmp1 = tmp_path / ".a.csv.1-1.dpsrel"
    tmp1.write_text("A")
    _forge(led, "committing", out=tmp_path / "a.csv", tmp=tmp1, digest=hashlib.sha256(b"A").hexdigest())
    # 2) killed after the rename: output present with the hash -> complete
    (tmp_path / "b.csv").write_text("B")
    _committing(led, tmp_path, "b.csv", 2, b"B")
    # 3) neither the tmp nor a matching output: the rename happened (only it removes the
    # temporary file) and the output was edited since -> the release stands, charged
    (tmp_path / "c.csv").write_text("C, edited after the release")
    _committing(led, tmp_path, "c.csv", 3, b"C")
    # 4) ... or moved away before the ledger was next opened
    _committing(led, tmp_path, "d.csv", 4, b"D")
    # 5) killed before the rename, and the user has put a file of their own at the output's path
    # since: it is not written over, the output is kept beside it
    tmp5 = tmp_path / ".e.csv.5-1.dpsrel"
    tmp5.write_text("E")
    (tmp_path / "e.csv").write_text("the user's own file")
    _forge(led, "committing", out=tmp_path / "e.csv", tmp=tmp5, digest=hashlib.sha256(b"E").hexdigest())
    actions = led.recover()
    assert [a["action"] for a in actions] == ["completed"] * 5
    assert (tmp_path / "a.csv").read_text() == "A"
    assert (tmp_path / "e.csv").read_text() == "the user's own file"
    assert (tmp_path / "e.recovered-5.csv").read_text() == "E"
    assert [a["note"] is not None for a in actions] == [False, False, True, True, True]
    assert "e.recovered-5.csv" in actions[4]["note"] and "moved, changed or deleted" in actions[3]["note"]
    assert _status(led) == [
        ("complete", "a.csv"),
        ("complete", "b.csv"),
        ("complete", "c.csv"),
        ("complete", "d.csv"),
        ("complete", "e.recovered-5.csv"),
    ]
    assert _leftovers(tmp_path) == []
    # verify tells what became of the edited and the moved outputs
    problems = " ".join(led.verify())
    assert "c.csv" in problems and "d.csv" in problems and "e.recovered" not in problems


def test_recovery_leaves_live_processes_alone(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    tmp = tmp_path / ".a.csv.1-1.dpsrel"
    tmp.write_text("being written")
    _forge(led, "writing", out=tmp_path / "a.csv", tmp=tmp, alive=True)
    assert Ledger(led.path).recover() == []
    assert tmp.exists() and _status(led) == [("writing", "a.csv")]
    led.set_cap(SHA, 0.7)
    with pytest.raises(BudgetError):  # the live row's 0.5 still counts
        led.reserve(SHA, loss=PrivacyLoss(0.3))


def test_dead_pid_detection():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(p.stdout)
    assert (
        not ledger_mod._process_alive(dead, "123", ledger_mod._HOST) or ledger_mod._proc_start_time(dead) != "123"
    )  # pid reuse: a different start time
    assert ledger_mod._process_alive(ledger_mod.os.getpid(), ledger_mod._self_start(), ledger_mod._HOST)
    assert not ledger_mod._process_alive(ledger_mod.os.getpid(), "0", ledger_mod._HOST)
    assert ledger_mod._process_alive(1234567, "0", "some-other-host")  # cannot tell: keep


# ---- lookup and CLI ----------------------------------------------------------------------------


def test_show_by_prefix_path_and_errors(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    led.set_cap(str(data), 2.0)  # a file not yet released: added by its fingerprint
    assert led.show(sha[:8])["dataset"] == sha
    assert led.show(str(data))["name"] == "data.csv"
    assert led.show(sha.upper())["cap"]["epsilon"] == 2.0
    with pytest.raises(UserError, match="at least 6"):
        led.show(sha[:4])
    with pytest.raises(UserError, match="not in the ledger"):
        led.show("e" * 64)
    with pytest.raises(UserError, match="no dataset"):
        led.show("eeeeee")
    with pytest.raises(UserError, match="neither a file"):
        led.show("no/such/file.csv")
    # ambiguous prefix
    led.set_cap(sha[:6] + "0" * 58 if not sha.startswith(sha[:6] + "0" * 58) else sha[:6] + "1" * 58, 1)
    with pytest.raises(UserError, match="ambiguous"):
        led.show(sha[:6])


def test_cli_ledger_commands(tmp_path, capsys):
    from dpstudio.cli import main

    db = str(tmp_path / "l.sqlite")
    led = Ledger(db)
    _release(led, tmp_path, "x.csv", eps=0.25)
    assert main(["ledger", "list", "--ledger", db]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["spent"]["epsilon"] == 0.25 and listed[0]["releases"] == 1
    assert main(["ledger", "set-cap", SHA[:10], "0.3", "--ledger", db]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["cap"]["epsilon"] == 0.3 and len(shown["entries"]) == 1
    assert main(["ledger", "show", "ffffff", "--ledger", db]) == 2
    assert "no dataset" in capsys.readouterr().err


def test_output_can_never_replace_the_ledgers_own_files(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    _release(led, tmp_path, "a.csv")
    for target in (led.path, Path(str(led.path) + "-wal"), led.head_path, led.key_path):
        with pytest.raises(UserError, match="ledger's own files"):
            led.reserve(SHA, loss=PrivacyLoss(0.1), output_path=target)
    r = led.reserve(SHA, loss=PrivacyLoss(0.1), output_path=tmp_path / "b.csv")
    with pytest.raises(UserError, match="ledger's own files"):
        led.write_and_commit(r, led.path, _writer("x"))
    assert Ledger(led.path).problems == [] and led.summary(SHA)["releases"] == 1


def test_what_is_left_of_a_cap_is_not_a_float_sums_residue(tmp_path):
    """Three releases of 0.3 under a cap of 0.9 showed 1.1e-16 left (the report printed
    'Remaining ε = 3.553 × 10⁻¹⁵' after five releases of a demo recipe): within the admission
    tolerance, what is left is 0."""

    led = Ledger(tmp_path / "l.sqlite")
    for i in range(3):
        r = led.reserve("a" * 64, loss=PrivacyLoss(0.3), dataset_name="a.csv")
        led.write_and_commit(r, tmp_path / f"o{i}.csv", lambda t: Path(t).write_text("x"))
    led.set_cap("a" * 64, 0.9)
    assert led.summary("a" * 64)["remaining"]["epsilon"] == 0.0
    # a zCDP total a hair under its nominal value left 5.4e-10, below what any release can spend
    # (the refusal then advised "lower epsilon to at most 5.4e-10", which every recipe refuses)
    from dpstudio.recipe.validate import MIN_UNIT_EPSILON

    assert ledger_mod.LEAST_RELEASE_EPSILON == MIN_UNIT_EPSILON
    led.set_cap("a" * 64, 0.9 + 5.4e-10)
    assert led.summary("a" * 64)["remaining"]["epsilon"] == 0.0
    with pytest.raises(BudgetError, match="the dataset has ε=0 left"):
        led.reserve("a" * 64, loss=PrivacyLoss(0.01), dataset_name="a.csv")
    led.set_cap("a" * 64, 0.9 + 2e-6)
    assert led.summary("a" * 64)["remaining"]["epsilon"] == pytest.approx(2e-6)


def test_opening_the_ledger_says_what_recovery_did(tmp_path, capsys):
    """Audit finding: recovery settled a dead process's release silently - the user learnt
    neither that it was charged nor where its output went."""
    from dpstudio.cli import main

    led = Ledger(tmp_path / "l.sqlite")
    tmp = tmp_path / ".e.csv.1-1.dpsrel"
    tmp.write_text("E")
    (tmp_path / "e.csv").write_text("the user's own file")
    _forge(led, "committing", out=tmp_path / "e.csv", tmp=tmp, digest=hashlib.sha256(b"E").hexdigest())
    _forge(led, "pending", out=tmp_path / "f.csv")
    assert main(["ledger", "list", "--ledger", str(led.path)]) == 0
    err = capsys.readouterr().err
    assert "release 1, whose process ended after its point of no return, was completed and is charged" in err
    assert "e.recovered-1.csv" in err and "not written over" in err
    assert "release 2, whose process ended before its point of no return, was rolled back: no charge" in err
    assert main(["ledger", "list", "--ledger", str(led.path)]) == 0
    assert "release" not in capsys.readouterr().err  # said once, when it happened


def test_a_rollback_marks_its_row_before_the_temporary_file_goes(tmp_path, monkeypatch):
    """Review finding: deleting the row first left a complete, uncharged output behind forever
    when the process died before the file went; deleting the file first could leave a committing
    row without it (taken for a rename).  The row is marked *aborting* first; recovery of an
    aborting row removes its files and the row, charging nothing."""
    led = Ledger(tmp_path / "l.sqlite")
    r = led.reserve(SHA, loss=PrivacyLoss(0.5), output_path=tmp_path / "o.csv")
    real = ledger_mod.os.replace

    def rename_fails(a, b, *args, **kw):
        if Path(b).name == "o.csv":
            raise OSError(5, "Input/output error")
        return real(a, b, *args, **kw)

    monkeypatch.setattr(ledger_mod.os, "replace", rename_fails)
    monkeypatch.setattr(Ledger, "_finish_abort", lambda self, eid, tmp: None)  # the process dies here
    with pytest.raises(UserError):
        led.write_and_commit(r, tmp_path / "o.csv", _writer("o"))
    row = sqlite3.connect(led.path).execute("SELECT status, tmp_path FROM entries").fetchone()
    assert row[0] == "aborting" and Path(row[1]).exists()  # never "committing" without its file
    # ... and recovery (as by the next process) rolls it back: nothing charged, nothing left
    con = sqlite3.connect(led.path)
    con.execute("UPDATE entries SET pid_start_time='not-this-process'")
    con.commit()
    con.close()
    monkeypatch.undo()
    done = Ledger(led.path).recovered
    assert [d["action"] for d in done] == ["rolled back"] and not Path(row[1]).exists()
    assert not (tmp_path / "o.csv").exists() and _status(Ledger(led.path)) == []


def test_an_interrupted_release_of_this_process_replaces_the_file_the_user_chose(tmp_path, monkeypatch):
    """Review finding: a Ctrl-C between the committing mark and the rename made abort() keep the
    output beside a file the user had asked to replace (dead-process recovery's rule) while the
    result named the asked path; this process's own release finishes its rename as asked."""
    out = tmp_path / "o.csv"
    out.write_text("the user's older file, to be replaced")
    led = Ledger(tmp_path / "l.sqlite")
    r = led.reserve(SHA, loss=PrivacyLoss(0.5), output_path=out)
    real = ledger_mod.os.replace
    once = []

    def interrupted(a, b, *args, **kw):
        if Path(b).name == "o.csv" and not once:
            once.append(1)
            raise KeyboardInterrupt
        return real(a, b, *args, **kw)

    monkeypatch.setattr(ledger_mod.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        led.write_and_commit(r, out, _writer("o"))
    assert led.abort(r) == "complete"
    assert out.read_text() != "the user's older file, to be replaced" and not list(tmp_path.glob("*recovered*"))
    assert _status(led) == [("complete", "o.csv")]


def test_a_rollback_whose_file_cannot_go_still_frees_its_budget(tmp_path, monkeypatch):
    """Second review: a temporary file that could not be removed (held by another program) left
    the row 'aborting' for the life of the process, holding budget and the output's name."""
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, 1.0)
    r = led.reserve(SHA, loss=PrivacyLoss(0.6), output_path=tmp_path / "o.csv")

    def held(_tmp):
        raise PermissionError(13, "Permission denied")

    def no_space(tmp):
        Path(tmp).write_text("partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ledger_mod, "_remove_tmp", held)
    with pytest.raises(OSError, match="No space"):  # the user's error, not the cleanup's
        led.write_and_commit(r, tmp_path / "o.csv", no_space)
    monkeypatch.undo()
    assert _status(led) == []
    led.reserve(SHA, loss=PrivacyLoss(0.6), output_path=tmp_path / "o.csv")  # budget and name free


def test_a_dead_committing_row_rolled_back_in_a_reservation_does_not_count_against_it(tmp_path):
    """Second review: a dead release's committing row whose temporary file does not hold its
    bytes, settled inside another release's reservation, was marked and still counted there (and
    the refusal's rollback restored it, so every retry was refused)."""
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, 1.0)
    tmp = tmp_path / ".a.csv.1-1.dpsrel"
    tmp.write_text("not the bytes that were hashed")
    _forge(led, "committing", out=tmp_path / "a.csv", tmp=tmp, digest=hashlib.sha256(b"A").hexdigest())
    # the same Ledger object: recovery runs inside the reservation's own transaction
    led.reserve(SHA, loss=PrivacyLoss(0.6), output_path=tmp_path / "b.csv")
    assert led.summary(SHA)["in_progress"]["epsilon"] == pytest.approx(0.6)  # only the new one
