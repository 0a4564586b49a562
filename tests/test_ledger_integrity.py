"""A ledger that lost entries is refused until it is re-initialised explicitly (and that shows)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dpstudio import ledger as ledger_mod
from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.errors import BudgetError, UserError
from dpstudio.ledger import Ledger

ROOT = Path(__file__).resolve().parent.parent
SHA = "ab" * 32


def _released(tmp_path, n=3, eps=0.3, cap=1.0) -> Ledger:
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(SHA, cap)
    for i in range(n):
        r = led.reserve(SHA, loss=PrivacyLoss(eps), output_path=tmp_path / f"o{i}.csv")
        led.write_and_commit(r, tmp_path / f"o{i}.csv", lambda t: Path(t).write_text("x"))
    return led


def _sub(tmp_path, name) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def _sql(led, *stmts):
    con = sqlite3.connect(led.path)
    for s in stmts:
        con.execute(s)
    con.commit()
    con.close()


def _refused(led_path, match):
    led = Ledger(led_path)
    assert led.problems, "the damage was not detected"
    with pytest.raises(UserError, match=match) as exc:
        led.reserve(SHA, loss=PrivacyLoss(0.01))
    assert not isinstance(exc.value, BudgetError)
    assert "ledger reinit --confirm" in str(exc.value)
    with pytest.raises(UserError, match="cannot be trusted"):
        led.set_cap(SHA, 100.0)
    return led


def _delete_db(led):
    for suffix in ("", "-wal", "-shm"):
        Path(str(led.path) + suffix).unlink(missing_ok=True)


def test_intact_ledger_has_a_head_file_matching_its_chain(tmp_path):
    led = _released(tmp_path)
    head = json.loads(led.head_path.read_text())
    integ = led.integrity()
    assert integ["intact"] and integ["head"] == {"seq": head["seq"], "hash": head["hash"]}
    # genesis; dataset, file and cap (set_cap); the file claimed by its first release; 3 releases
    assert head["seq"] == 1 + 3 + 1 + 3
    assert led.head_seq(head["hash"]) == head["seq"]


def test_deleted_database_with_head_file_is_refused(tmp_path):
    led = _released(tmp_path)
    _delete_db(led)
    _refused(led.path, "lost part of its history: its head file l.sqlite.head records 8 chained events")


def test_an_older_copy_put_back_without_its_head_file_is_refused(tmp_path):
    """Audit finding: copying back an older ledger.db and deleting ledger.db.head reset the
    budget silently (the missing head file was simply written anew)."""
    import shutil

    led = _released(tmp_path, n=1)
    backup = tmp_path / "backup.sqlite"
    shutil.copy(led.path, backup)
    for i in (1, 2):
        r = led.reserve(SHA, loss=PrivacyLoss(0.3), output_path=tmp_path / f"p{i}.csv")
        led.write_and_commit(r, tmp_path / f"p{i}.csv", lambda t: Path(t).write_text("y"))
    _delete_db(led)
    shutil.copy(backup, led.path)
    led.head_path.unlink()
    _refused(led.path, "head file l.sqlite.head is missing while its hash chain holds [0-9]+ events")
    # a ledger whose only event is its creation may lack it (a crash before its first head write)
    fresh = Ledger(_sub(tmp_path, "f") / "l.sqlite")
    fresh.head_path.unlink(missing_ok=True)
    assert Ledger(fresh.path).problems == []


def test_a_head_file_that_was_never_written_is_no_loss(tmp_path, monkeypatch):
    """Review finding: a first head write that failed (a full disk; a crash right after an
    upgrade's or a reinit's commit) left a ledger refused for good.  Only a chain that had a head
    file (meta.head_written) is refused without it."""
    real = ledger_mod._write_atomic

    def no_head(path, data, **kw):
        if str(path).endswith(".head"):
            raise OSError(28, "No space left on device")
        return real(path, data, **kw)

    monkeypatch.setattr(ledger_mod, "_write_atomic", no_head)
    led = _released(tmp_path, n=2)  # several events, no head file ever written
    assert not led.head_path.exists()
    monkeypatch.setattr(ledger_mod, "_write_atomic", real)
    led = Ledger(led.path)  # the disk has room again: healed, not refused
    assert led.problems == [] and led.head_path.exists()
    led.head_path.unlink()  # from now on its absence is a loss
    _refused(led.path, "head file l.sqlite.head is missing")


def test_a_backup_from_before_the_head_record_put_back_without_its_head_file_is_refused(tmp_path):
    """Review finding: a database copied before it recorded anything about its head file (made
    by an earlier version) and put back without the head file passed, resetting the budget.
    No record at all is treated as before: the head file must be there."""
    import shutil

    led = _released(tmp_path, n=1)
    backup = tmp_path / "backup.sqlite"
    shutil.copy(led.path, backup)
    _sql(Ledger(backup), "DELETE FROM meta")  # as an earlier version's database has no such record
    for i in (1, 2):
        r = led.reserve(SHA, loss=PrivacyLoss(0.3), output_path=tmp_path / f"p{i}.csv")
        led.write_and_commit(r, tmp_path / f"p{i}.csv", lambda t: Path(t).write_text("y"))
    _delete_db(led)
    shutil.copy(backup, led.path)
    Path(str(backup) + ".head").unlink(missing_ok=True)
    led.head_path.unlink()
    _refused(led.path, "head file l.sqlite.head is missing")


def test_zero_byte_database_is_refused(tmp_path):
    led = _released(tmp_path)
    _delete_db(led)
    led.path.write_bytes(b"")
    _refused(led.path, "lost part of its history")


def test_truncated_database_is_refused(tmp_path):
    led = _released(tmp_path)
    size = led.path.stat().st_size
    with open(led.path, "r+b") as fh:
        fh.truncate(size // 2)
    with pytest.raises(UserError, match="ledger reinit --confirm"):
        Ledger(led.path).reserve(SHA, loss=PrivacyLoss(0.01))


def test_dropped_entries_table_is_refused_and_reinit_restores_its_spend(tmp_path):
    led = _released(tmp_path)
    _sql(led, "DROP TABLE entries")
    _refused(led.path, "3 release\\(s\\) recorded in its hash chain are missing")
    out = Ledger.reinit(led.path, reason="test")
    assert out["restored"]["releases"] == 3 and out["intact"]
    led = Ledger(led.path)
    s = led.summary(SHA)
    assert s["spent"]["epsilon"] == pytest.approx(0.9) and s["cap"]["epsilon"] == 1.0
    with pytest.raises(BudgetError):  # the budget did not come back
        led.reserve(SHA, loss=PrivacyLoss(0.3))
    assert s["ledger"]["reinitialised"][0]["reason"] == "test"
    # the restored releases' outputs stay paid for: the chain has their hashes (audit finding:
    # a later release wrote over o1.csv after a reinit)
    assert led.paid_output(tmp_path / "o1.csv") is not None


def test_entry_deleted_from_the_middle_is_refused(tmp_path):
    led = _released(tmp_path)
    _sql(led, "DELETE FROM entries WHERE id=2")
    _refused(led.path, "1 release\\(s\\) recorded in its hash chain are missing")


def test_chain_event_deleted_from_the_middle_is_refused(tmp_path):
    led = _released(tmp_path)
    _sql(led, "DELETE FROM log WHERE seq=5")
    _refused(led.path, "event 5 of its hash chain is missing")


def test_edited_spend_or_rewritten_chain_is_refused(tmp_path):
    led = _released(tmp_path)
    _sql(led, "UPDATE entries SET epsilon=0.0 WHERE id=1")
    _refused(led.path, "differ from its hash chain")
    led = _released(_sub(tmp_path, "b"))
    # the last release removed from both the entries and the chain: the head file still knows it
    _sql(led, "DELETE FROM entries WHERE id=3", "DELETE FROM log WHERE seq=(SELECT MAX(seq) FROM log)")
    _refused(led.path, "lost part of its history")


def test_dropped_chain_and_lost_key_and_damaged_head_are_refused(tmp_path):
    led = _released(tmp_path)
    led.key_path.unlink()
    _refused(led.path, "key file l.sqlite.key is missing")
    led = _released(_sub(tmp_path, "b"))
    led.head_path.write_text("")
    _refused(led.path, "head file l.sqlite.head is damaged")
    led = _released(_sub(tmp_path, "c"))
    _sql(led, "DROP TABLE log")
    _refused(led.path, "lost part of its history")


def test_crash_between_commit_and_head_write_is_accepted_and_healed(tmp_path, monkeypatch):
    led = _released(tmp_path, n=1)
    before = json.loads(led.head_path.read_text())
    monkeypatch.setattr(Ledger, "_sync_head", lambda self: None)  # killed right after the COMMIT
    r = led.reserve(SHA, loss=PrivacyLoss(0.1), output_path=tmp_path / "late.csv")
    led.write_and_commit(r, tmp_path / "late.csv", lambda t: Path(t).write_text("x"))
    monkeypatch.undo()
    assert json.loads(led.head_path.read_text()) == before  # the head file lags by one event
    led2 = Ledger(led.path)
    assert led2.problems == []
    assert json.loads(led2.head_path.read_text())["seq"] == before["seq"] + 1  # brought up to date
    led2.reserve(SHA, loss=PrivacyLoss(0.1))


def test_reinit_needs_damage_and_is_shown_in_every_later_report(tmp_path):
    led = _released(tmp_path)
    with pytest.raises(UserError, match="intact"):
        Ledger.reinit(led.path)
    lost = json.loads(led.head_path.read_text())
    _delete_db(led)
    Ledger.reinit(led.path)
    led = Ledger(led.path)
    assert led.problems == []
    r = led.reserve(SHA, loss=PrivacyLoss(0.1))
    assert r.before["ledger"]["reinitialised"][0]["lost_head"]["hash"] == lost["hash"]
    # a second reinit keeps the first one on record
    led.key_path.unlink()
    Ledger.reinit(led.path)
    assert len(Ledger(led.path).integrity()["reinitialised"]) == 2


def test_v1_ledger_is_chained_on_upgrade(tmp_path):
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        ledger_mod._SCHEMA.split("CREATE TABLE IF NOT EXISTS log")[0]
        .replace(",\n    label        TEXT,\n    declared_new INTEGER NOT NULL DEFAULT 0", "")
        .replace(",\n    input_sha256   TEXT,\n    identity       TEXT", "")
    )
    con.execute("DROP TABLE files")
    con.execute("INSERT INTO datasets(sha256, name, cap_epsilon, created) VALUES (?,?,?,?)", (SHA, "d.csv", 1.0, "t"))
    con.execute(
        "INSERT INTO entries(dataset, time, epsilon, delta, status) VALUES (?,?,?,?,?)",
        (SHA, "t", 0.7, 0.0, "complete"),
    )
    con.execute("PRAGMA user_version=1")
    con.commit()
    con.close()
    led = Ledger(db)
    assert led.problems == [] and led.head_path.exists()
    with pytest.raises(BudgetError):
        led.reserve(SHA, loss=PrivacyLoss(0.5))
    _sql(led, "DELETE FROM entries")
    assert Ledger(db).problems


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "dpstudio", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def test_cli_deleted_ledger_refused_then_reinit_shown_in_report(tmp_path):
    data = tmp_path / "d.csv"
    pd.DataFrame({"age": [30, 40, 50, 60] * 10, "sex": ["f", "m"] * 20}).to_csv(data, index=False)
    recipe = tmp_path / "r.json"
    assert (
        _cli(
            "recipe",
            "init",
            data,
            "-o",
            recipe,
            "--epsilon",
            "0.1",
            "--role",
            "age=sensitive",
            "--role",
            "sex=public",
            "--bounds",
            "age=0:100",
            "--categories",
            "sex=f,m",
            "--confirm-inferred",
        ).returncode
        == 0
    )
    db = tmp_path / "ledger.sqlite"
    assert _cli("release", recipe, "--output", tmp_path / "o1.csv", "--ledger", db).returncode == 0
    db.unlink()
    p = _cli("release", recipe, "--output", tmp_path / "o2.csv", "--ledger", db)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "lost part of its history" in p.stderr and "ledger reinit --confirm" in p.stderr
    assert not (tmp_path / "o2.csv").exists()
    assert _cli("ledger", "verify", "--ledger", db).returncode == 2
    assert _cli("ledger", "reinit", "--ledger", db).returncode == 2  # --confirm is required
    assert _cli("ledger", "reinit", "--confirm", "--reason", "disk replaced", "--ledger", db).returncode == 0
    rep = tmp_path / "r.html"
    p = _cli("release", recipe, "--output", tmp_path / "o2.csv", "--ledger", db, "--report", rep)
    assert p.returncode == 0, p.stderr
    assert "This ledger was re-initialised on" in rep.read_text(encoding="utf-8")
    assert json.loads(p.stdout)["ledger"]["ledger"]["reinitialised"][0]["reason"] == "disk replaced"


def test_reinit_puts_back_spend_that_was_edited_down_or_moved(tmp_path):
    """A tampered ledger is refused; re-initialising it must not keep the tampering: an entry
    edited to spend less, moved to another dataset, or a file moved to a fresh dataset, gets the
    chain's record back (never less spend)."""
    led = _released(tmp_path)
    before = led.summary(SHA)["spent"]["epsilon"]
    _sql(
        led,
        "UPDATE entries SET epsilon=1e-6",
        "UPDATE datasets SET cap_epsilon=50",
    )
    _refused(led.path, "differ from its hash chain")
    out = Ledger.reinit(led.path, reason="test")
    assert out["restored"]["corrected"] == 3 and out["intact"]
    s = Ledger(led.path).summary(SHA)
    assert s["spent"]["epsilon"] == pytest.approx(before) and s["cap"]["epsilon"] == 1.0
    with pytest.raises(BudgetError):
        Ledger(led.path).reserve(SHA, loss=PrivacyLoss(0.3))


def test_a_sound_ledger_that_cannot_be_opened_is_an_access_problem_never_reinitialised(tmp_path):
    """A -shm that is a folder (or a read-only place) makes SQLite fail to open a sound ledger:
    that is said as an access problem, and reinit refuses to move the database aside."""
    led = _released(tmp_path)
    spent = led.summary(SHA)["spent"]["epsilon"]
    shm = Path(str(led.path) + "-shm")
    shm.unlink(missing_ok=True)
    shm.mkdir()
    before = led.path.read_bytes()
    with pytest.raises(UserError, match="the database itself is sound") as exc:
        Ledger(led.path).summary(SHA)
    assert "do not re-initialise" in str(exc.value)
    with pytest.raises(UserError, match="the database itself is sound"):
        Ledger.reinit(led.path, reason="test")
    assert led.path.read_bytes() == before and not list(tmp_path.glob("*.damaged-*"))
    shm.rmdir()
    assert Ledger(led.path).summary(SHA)["spent"]["epsilon"] == pytest.approx(spent)


@pytest.mark.parametrize("table", ["entries", "files", "datasets"])
def test_a_malformed_database_page_can_be_reinitialised_from_its_chain(tmp_path, table):
    """A page of one table overwritten: SQLite opens the file, some queries fail ("malformed"),
    and the ledger's own checks may pass.  reinit used to answer "intact: nothing to
    re-initialise" (a dead end); it now moves the file aside and replays the readable chain."""
    led = _released(tmp_path)
    spent = led.summary(SHA)["spent"]["epsilon"]
    con = sqlite3.connect(led.path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (table,)).fetchone()[0]
    con.close()
    with open(led.path, "r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\xff" * 64)
    out = Ledger.reinit(led.path, reason="test")
    assert out["intact"] and any("damaged" in p and "moved aside" in p for p in out["reinitialised"][-1]["problems"])
    assert list(tmp_path.glob("l.sqlite.damaged-*"))
    s = Ledger(led.path).summary(SHA)
    assert s["spent"]["epsilon"] == pytest.approx(spent) and s["cap"]["epsilon"] == 1.0


def test_a_full_disk_under_a_sound_ledger_is_said(tmp_path, monkeypatch):
    """Audit finding: a full disk ("disk I/O error") was answered with advice on permissions only."""
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(ledger_mod.shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 4096, 4096))
    text = ledger_mod._access_problem(tmp_path / "l.sqlite", "disk I/O error")
    assert "its disk has 4,096 bytes free: make room there" in text and "do not re-initialise" in text
    monkeypatch.setattr(ledger_mod.shutil, "disk_usage", lambda p: usage(10**9, 0, 10**9))
    assert "make room" not in ledger_mod._access_problem(tmp_path / "l.sqlite", "unable to open")
