"""The per-dataset privacy budget ledger (BRIEF 3.9).

One SQLite database (WAL journal) records every release of every dataset, keyed by the
SHA-256 of the input file, so renaming or copying a file cannot reset its budget.  Every
change runs in a ``BEGIN IMMEDIATE`` transaction, so concurrent processes serialise: two
releases cannot both see the same remaining budget.

Location: the explicit path > ``$DPSTUDIO_LEDGER`` > the user's application-data folder
(``$XDG_DATA_HOME/dpstudio`` or ``~/.local/share/dpstudio`` on Linux,
``~/Library/Application Support/dpstudio`` on macOS, ``%APPDATA%\\dpstudio`` on Windows).

Crash consistency of a release (``reserve`` -> ``write_and_commit``): after the process is
killed at *any* moment, either the entry is complete and the complete output file exists, or
neither exists.  The protocol:

1. ``reserve``: check the cap against spent + in-flight releases, insert a *pending* row.
2. record the temporary file's name (beside the output) in the row, status *writing*;
3. the writer writes the temporary file; it is fsynced and hashed;
4. status *committing* with the hash (the point of no return);
5. ``os.replace(tmp, output)``, fsync of the folder;
6. status *complete*.

Recovery runs whenever a ledger is opened and before every reservation: rows whose process is
dead (pid and start time, so a reused pid is not mistaken for the writer) are rolled back
(*pending*/*writing*: the temporary files and the row are deleted) or rolled forward
(*committing*: the output with the recorded hash exists, or the rename is finished, -> complete;
otherwise the row is deleted).  No Qt here.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import glob
import json
import math
import os
import re
import socket
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dpstudio.errors import BudgetError, UserError

SCHEMA_VERSION = 1
TOLERANCE = 1e-12
_IN_FLIGHT = ("pending", "writing", "committing")
_HEX = re.compile(r"^[0-9a-fA-F]+$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    sha256      TEXT PRIMARY KEY,
    name        TEXT,
    cap_epsilon REAL,
    cap_delta   REAL,
    created     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset        TEXT NOT NULL REFERENCES datasets(sha256),
    time           TEXT NOT NULL,
    epsilon        REAL NOT NULL,
    delta          REAL NOT NULL,
    rdp            TEXT,
    release_type   TEXT,
    recipe_sha256  TEXT,
    output_path    TEXT,
    output_sha256  TEXT,
    status         TEXT NOT NULL,
    pid            INTEGER,
    pid_start_time TEXT,
    host           TEXT,
    tmp_path       TEXT
);
CREATE INDEX IF NOT EXISTS entries_dataset ON entries(dataset);
CREATE INDEX IF NOT EXISTS entries_status ON entries(status);
"""


# ---- where -----------------------------------------------------------------------------------

def default_ledger_path() -> Path:
    """``$DPSTUDIO_LEDGER``, else ``ledger.sqlite`` in the user's application-data folder."""
    env = os.environ.get("DPSTUDIO_LEDGER")
    if env:
        return Path(env).expanduser()
    return app_data_dir() / "ledger.sqlite"


def app_data_dir() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / "dpstudio"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "dpstudio"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dpstudio"


# ---- processes ---------------------------------------------------------------------------------

def _proc_start_time(pid: int) -> str | None:
    """A token that identifies the process ``pid`` across pid reuse, or None if unknown.

    Linux: field 22 of /proc/<pid>/stat (start time in clock ticks since boot); Windows: the
    creation time from GetProcessTimes; other POSIX systems: ``ps -o lstart=``.
    Raises ProcessLookupError when the process does not exist (or is a zombie).
    """
    if sys.platform.startswith("linux") or os.path.isdir("/proc/self"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                raw = fh.read().decode("ascii", "replace")
        except FileNotFoundError:
            raise ProcessLookupError(pid) from None
        except OSError:
            return None
        fields = raw[raw.rfind(")") + 2:].split()
        if fields and fields[0] in ("Z", "X", "x"):
            raise ProcessLookupError(pid)  # zombie: dead, not yet reaped
        return fields[19] if len(fields) > 19 else None
    if sys.platform == "win32":
        return _win_start_time(pid)
    if not _posix_alive(pid):
        raise ProcessLookupError(pid)
    try:
        import subprocess
        out = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True,
                             text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not out:
        raise ProcessLookupError(pid)
    return out


def _posix_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _win_start_time(pid: int) -> str | None:  # pragma: no cover - Windows only
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        if ctypes.get_last_error() == 87:  # ERROR_INVALID_PARAMETER: no such process
            raise ProcessLookupError(pid)
        return None
    try:
        code = wintypes.DWORD()
        if kernel32.GetExitCodeProcess(handle, ctypes.byref(code)) and code.value != 259:
            raise ProcessLookupError(pid)  # exited (259 = STILL_ACTIVE)
        times = [wintypes.FILETIME() for _ in range(4)]
        if not kernel32.GetProcessTimes(handle, *[ctypes.byref(t) for t in times]):
            return None
        return f"{times[0].dwHighDateTime}:{times[0].dwLowDateTime}"
    finally:
        kernel32.CloseHandle(handle)


def _process_alive(pid: int | None, start: str | None, host: str | None) -> bool:
    """Conservative: True unless we can tell the process that wrote the row is gone."""
    if pid is None:
        return False
    if host and host != _HOST:
        return True  # another machine's process (shared folder): we cannot tell
    try:
        now = _proc_start_time(int(pid))
    except ProcessLookupError:
        return False
    if start is None or now is None:
        return True
    return now == start


_HOST = socket.gethostname()
_SELF_START: str | None = None


def _self_start() -> str | None:
    global _SELF_START
    if _SELF_START is None:
        try:
            _SELF_START = _proc_start_time(os.getpid())
        except ProcessLookupError:  # pragma: no cover
            _SELF_START = None
    return _SELF_START


# ---- files -------------------------------------------------------------------------------------

def _sha256_file(path) -> str:
    from dpstudio.export import file_sha256  # one streamed hasher for outputs everywhere
    return file_sha256(path)


def _fsync_file(path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(path) -> None:
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _tmp_files(tmp_path: str | None) -> list[str]:
    """The temporary file of a release and any helper temporaries made beside it by the writer
    (``dpstudio.export.atomic_path`` writes ``.<name>.<random>.dpstmp`` then renames)."""
    if not tmp_path:
        return []
    p = Path(tmp_path)
    found = [str(p)] if p.exists() else []
    found += glob.glob(os.path.join(glob.escape(str(p.parent)), glob.escape("." + p.name + ".") + "*"))
    return found


def _remove_tmp(tmp_path: str | None) -> None:
    for f in _tmp_files(tmp_path):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(f)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _fmt(x: float | None) -> str:
    return "unlimited" if x is None else f"{x:.6g}"


def _as_loss(loss) -> tuple[float, float, str | None]:
    """(epsilon, delta, rdp JSON) of a PrivacyLoss (its (eps, delta) total: metric-DP
    components are not part of it) or of an (epsilon, delta) pair."""
    if hasattr(loss, "epsilon"):
        eps, delta = float(loss.epsilon), float(getattr(loss, "delta", 0.0))
        rdp = getattr(loss, "rdp", None)
        rdp_json = None
        if rdp is not None:
            from dpstudio.engine.accounting import RDP_ORDERS
            rdp_json = json.dumps({"orders": list(RDP_ORDERS), "epsilons": [float(x) for x in rdp]})
    else:
        eps, delta = (float(x) for x in loss)
        rdp_json = None
    if not (math.isfinite(eps) and eps >= 0) or not (0.0 <= delta < 1.0):
        raise UserError(f"invalid privacy loss epsilon={eps!r}, delta={delta!r}")
    return eps, delta, rdp_json


@dataclass(frozen=True)
class Reservation:
    """A release that has been admitted against the cap but not yet written."""

    id: int
    dataset: str
    epsilon: float
    delta: float
    output_path: str | None
    ledger_path: str


# ---- the ledger ----------------------------------------------------------------------------------

class Ledger:
    """The privacy budget ledger; cheap to create (one short connection per operation)."""

    def __init__(self, path=None, *, busy_timeout: float = 120.0):
        self.path = Path(path).expanduser() if path else default_ledger_path()
        self.busy_timeout = busy_timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the ledger folder {self.path.parent}: {exc.strerror or exc}") from None
        if self.path.is_dir():
            raise UserError(f"ledger path is a folder, not a database file: {self.path}")
        self._init_db()
        self.recover()

    # -- connections ------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            con = sqlite3.connect(str(self.path), timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise UserError(f"cannot open the privacy ledger {self.path}: {exc}") from None
        con.row_factory = sqlite3.Row
        try:
            con.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            con.close()
            raise UserError(f"the privacy ledger {self.path} is not a usable SQLite database: {exc}") from None
        return con

    @contextlib.contextmanager
    def _tx(self):
        """A ``BEGIN IMMEDIATE`` transaction: it takes the write lock at once, so concurrent
        processes serialise (waiting up to ``busy_timeout``)."""
        con = self._connect()
        try:
            deadline = time.monotonic() + self.busy_timeout
            while True:
                try:
                    con.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        raise
                    if time.monotonic() > deadline:
                        raise UserError(f"the privacy ledger {self.path} is busy (locked by another "
                                        f"process for over {self.busy_timeout:g} s); try again") from None
                    time.sleep(0.05)
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            else:
                con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise UserError(f"the privacy ledger {self.path} cannot be used: {exc}") from None
        finally:
            con.close()

    def _init_db(self) -> None:
        con = self._connect()
        try:
            for _ in range(200):
                try:
                    mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        raise
                    time.sleep(0.05)
            else:
                raise UserError(f"the privacy ledger {self.path} is locked by another process")
            if str(mode).lower() != "wal":
                raise UserError(f"the privacy ledger {self.path} cannot use write-ahead logging "
                                f"(journal mode {mode}); put it on a local disk")
        except sqlite3.DatabaseError as exc:
            raise UserError(f"the privacy ledger {self.path} is not a usable SQLite database: {exc}") from None
        finally:
            con.close()
        with self._tx() as con:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UserError(f"the privacy ledger {self.path} was written by a newer dpstudio "
                                f"(schema {version}); upgrade dpstudio")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    con.execute(stmt)
            if version < SCHEMA_VERSION:
                con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # -- recovery ----------------------------------------------------------------------------
    def recover(self) -> list[dict]:
        """Roll back or forward every in-flight release whose process is gone; returns what
        was done (one dict per row)."""
        with self._tx() as con:
            return self._recover(con)

    def _recover(self, con) -> list[dict]:
        done = []
        rows = con.execute("SELECT * FROM entries WHERE status IN (?,?,?)", _IN_FLIGHT).fetchall()
        for r in rows:
            if _process_alive(r["pid"], r["pid_start_time"], r["host"]):
                continue
            done.append({"id": r["id"], "status": r["status"],
                         "action": self._settle(con, r)})
        return done

    def _settle(self, con, r) -> str:
        """Finish a dead (or failed) in-flight row; returns "completed" or "rolled back"."""
        if r["status"] == "committing" and r["output_path"] and r["output_sha256"]:
            out, tmp = r["output_path"], r["tmp_path"]
            if os.path.isfile(out) and _sha256_file(out) == r["output_sha256"]:
                _remove_tmp(tmp)
                con.execute("UPDATE entries SET status='complete', tmp_path=NULL WHERE id=?", (r["id"],))
                return "completed"
            if tmp and os.path.isfile(tmp) and _sha256_file(tmp) == r["output_sha256"]:
                os.replace(tmp, out)
                _fsync_dir(os.path.dirname(out) or ".")
                _remove_tmp(tmp)
                con.execute("UPDATE entries SET status='complete', tmp_path=NULL WHERE id=?", (r["id"],))
                return "completed"
        _remove_tmp(r["tmp_path"])
        con.execute("DELETE FROM entries WHERE id=?", (r["id"],))
        return "rolled back"

    # -- queries ------------------------------------------------------------------------------
    @staticmethod
    def _spent(con, sha: str) -> dict:
        row = con.execute(
            "SELECT COALESCE(SUM(CASE WHEN status='complete' THEN epsilon END), 0) AS e, "
            "COALESCE(SUM(CASE WHEN status='complete' THEN delta END), 0) AS d, "
            "COALESCE(SUM(CASE WHEN status='complete' THEN 1 END), 0) AS n, "
            "COALESCE(SUM(CASE WHEN status!='complete' THEN epsilon END), 0) AS pe, "
            "COALESCE(SUM(CASE WHEN status!='complete' THEN delta END), 0) AS pd, "
            "COALESCE(SUM(CASE WHEN status!='complete' THEN 1 END), 0) AS pn "
            "FROM entries WHERE dataset=?", (sha,)).fetchone()
        return dict(row)

    def _summary(self, con, sha: str) -> dict:
        ds = con.execute("SELECT * FROM datasets WHERE sha256=?", (sha,)).fetchone()
        s = self._spent(con, sha)
        cap = None
        if ds is not None and ds["cap_epsilon"] is not None:
            cap = {"epsilon": ds["cap_epsilon"], "delta": ds["cap_delta"]}
        used_e, used_d = s["e"] + s["pe"], s["d"] + s["pd"]
        remaining = None
        if cap is not None:
            remaining = {"epsilon": max(0.0, cap["epsilon"] - used_e),
                         "delta": None if cap["delta"] is None else max(0.0, cap["delta"] - used_d)}
        out = {"dataset": sha, "name": ds["name"] if ds is not None else None, "cap": cap,
               "spent": {"epsilon": s["e"], "delta": s["d"]}, "remaining": remaining,
               "releases": int(s["n"])}
        if s["pn"]:
            out["in_progress"] = {"epsilon": s["pe"], "delta": s["pd"], "releases": int(s["pn"])}
        return out

    def summary(self, sha: str) -> dict:
        """Cap, spend (complete releases), remaining budget (also net of releases in progress)
        and release count of a dataset; an unknown dataset has spent nothing and no cap."""
        con = self._connect()
        try:
            return self._summary(con, sha)
        finally:
            con.close()

    def datasets(self) -> list[dict]:
        con = self._connect()
        try:
            shas = [r[0] for r in con.execute("SELECT sha256 FROM datasets ORDER BY created, sha256")]
            return [self._summary(con, s) for s in shas]
        finally:
            con.close()

    def resolve(self, dataset: str, *, create: bool = False) -> str:
        """The SHA-256 of ``dataset``: a full SHA-256, a unique prefix (>= 6 hex digits) or a
        file path (fingerprinted).  With ``create``, a file or full SHA-256 not yet in the
        ledger is added (so a cap can be set before the first release)."""
        dataset = str(dataset).strip()
        con = self._connect()
        try:
            if os.path.isfile(dataset):
                sha, name = _fingerprint(dataset), Path(dataset).name
            elif _HEX.match(dataset) and len(dataset) == 64:
                sha, name = dataset.lower(), None
            elif _HEX.match(dataset):
                if len(dataset) < 6:
                    raise UserError(f"dataset prefix {dataset!r} is too short: give at least 6 hex digits")
                rows = con.execute("SELECT sha256 FROM datasets WHERE sha256 LIKE ?",
                                   (dataset.lower() + "%",)).fetchall()
                if len(rows) > 1:
                    raise UserError(f"dataset prefix {dataset!r} is ambiguous: it matches {len(rows)} "
                                    f"datasets; give more digits")
                if not rows:
                    raise UserError(f"no dataset with SHA-256 starting {dataset!r} in the ledger {self.path}")
                return rows[0][0]
            else:
                raise UserError(f"{dataset!r} is neither a file nor a dataset SHA-256 (prefix)")
            known = con.execute("SELECT 1 FROM datasets WHERE sha256=?", (sha,)).fetchone()
        finally:
            con.close()
        if not known:
            if not create:
                raise UserError(f"dataset {sha[:12]}... ({dataset}) is not in the ledger {self.path}")
            with self._tx() as tx:
                tx.execute("INSERT OR IGNORE INTO datasets(sha256, name, created) VALUES (?,?,?)",
                           (sha, name, _now()))
        return sha

    def show(self, dataset: str) -> dict:
        """Summary plus every entry (newest last) of one dataset."""
        sha = self.resolve(dataset)
        con = self._connect()
        try:
            out = self._summary(con, sha)
            rows = con.execute("SELECT * FROM entries WHERE dataset=? ORDER BY id", (sha,)).fetchall()
        finally:
            con.close()
        out["entries"] = [{
            "id": r["id"], "time": r["time"], "epsilon": r["epsilon"], "delta": r["delta"],
            "rdp": json.loads(r["rdp"]) if r["rdp"] else None, "release_type": r["release_type"],
            "recipe_sha256": r["recipe_sha256"], "output_path": r["output_path"],
            "output_sha256": r["output_sha256"], "status": r["status"]} for r in rows]
        return out

    def set_cap(self, dataset: str, epsilon: float, delta: float | None = None) -> dict:
        """Set the total budget of a dataset (``delta=None``: delta is not capped)."""
        try:
            epsilon = float(epsilon)
            delta = None if delta is None else float(delta)
        except (TypeError, ValueError):
            raise UserError(f"cap must be numbers, got epsilon={epsilon!r}, delta={delta!r}") from None
        if not (math.isfinite(epsilon) and epsilon >= 0):
            raise UserError(f"cap epsilon must be a finite number >= 0, got {epsilon!r}")
        if delta is not None and not (0.0 <= delta < 1.0):
            raise UserError(f"cap delta must lie in [0, 1), got {delta!r}")
        sha = self.resolve(dataset, create=True)
        with self._tx() as con:
            con.execute("UPDATE datasets SET cap_epsilon=?, cap_delta=? WHERE sha256=?", (epsilon, delta, sha))
            return self._summary(con, sha)

    # -- the release protocol -----------------------------------------------------------------
    def reserve(self, sha: str, *, dataset_name: str | None = None, loss, release_type: str | None = None,
                recipe_sha256: str | None = None, output_path=None) -> Reservation:
        """Admit a release against the dataset's cap (refusing with BudgetError) and record it
        as pending; spent = complete releases + releases of live processes still in flight."""
        eps, delta, rdp_json = _as_loss(loss)
        if not (isinstance(sha, str) and _HEX.match(sha) and len(sha) == 64):
            raise UserError(f"invalid dataset fingerprint {sha!r} (expected a SHA-256 hex digest)")
        sha = sha.lower()
        out = str(Path(output_path).resolve()) if output_path is not None else None
        with self._tx() as con:
            self._recover(con)
            con.execute("INSERT OR IGNORE INTO datasets(sha256, name, created) VALUES (?,?,?)",
                        (sha, dataset_name, _now()))
            if dataset_name:
                con.execute("UPDATE datasets SET name=? WHERE sha256=? AND name IS NULL", (dataset_name, sha))
            ds = con.execute("SELECT * FROM datasets WHERE sha256=?", (sha,)).fetchone()
            s = self._spent(con, sha)
            used_e, used_d = s["e"] + s["pe"], s["d"] + s["pd"]
            cap_e, cap_d = ds["cap_epsilon"], ds["cap_delta"]
            over_e = cap_e is not None and used_e + eps > cap_e + TOLERANCE
            over_d = cap_e is not None and cap_d is not None and used_d + delta > cap_d + TOLERANCE
            if over_e or over_d:
                left_e = max(0.0, cap_e - used_e)
                msg = f"release would spend ε={eps:.6g}"
                if delta or cap_d is not None:
                    msg += f", δ={delta:.6g}"
                msg += f", the dataset has ε={left_e:.6g}"
                if cap_d is not None:
                    msg += f", δ={max(0.0, cap_d - used_d):.6g}"
                msg += f" left of its cap ε={cap_e:.6g}"
                if cap_d is not None:
                    msg += f", δ={cap_d:.6g}"
                if s["pn"]:
                    msg += f" ({int(s['pn'])} other release(s) in progress hold part of it)"
                raise BudgetError(msg + "; nothing was released")
            cur = con.execute(
                "INSERT INTO entries(dataset, time, epsilon, delta, rdp, release_type, recipe_sha256, "
                "output_path, status, pid, pid_start_time, host) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (sha, _now(), eps, delta, rdp_json, release_type, recipe_sha256, out, "pending",
                 os.getpid(), _self_start(), _HOST))
            rid = int(cur.lastrowid)
        return Reservation(id=rid, dataset=sha, epsilon=eps, delta=delta, output_path=out,
                           ledger_path=str(self.path))

    def _row(self, con, reservation: Reservation):
        return con.execute("SELECT * FROM entries WHERE id=?", (reservation.id,)).fetchone()

    def write_and_commit(self, reservation: Reservation, output_path, writer) -> str:
        """Write the output through ``writer(tmp_path)`` and record the release, crash-consistently
        (module docstring).  Returns the output's SHA-256.  On failure before the point of no
        return, the temporary files and the reservation are removed and the error re-raised."""
        output = Path(output_path).resolve()
        directory = output.parent
        if output.is_dir():
            raise UserError(f"output path is a folder: {output}")
        if not directory.is_dir():
            raise UserError(f"output folder does not exist: {directory}")
        tmp = directory / f".{output.name}.{reservation.id}-{os.getpid()}.dpsrel"
        with self._tx() as con:
            r = self._row(con, reservation)
            if r is None or r["status"] != "pending":
                raise UserError(f"release reservation {reservation.id} is no longer pending in the "
                                f"ledger {self.path} (status {r['status'] if r else 'deleted'})")
            con.execute("UPDATE entries SET status='writing', tmp_path=?, output_path=? WHERE id=?",
                        (str(tmp), str(output), reservation.id))
        try:
            writer(tmp)
            if not tmp.is_file():
                raise RuntimeError(f"the output writer did not create {tmp}")
            _fsync_file(tmp)
            digest = _sha256_file(tmp)
            with self._tx() as con:
                con.execute("UPDATE entries SET status='committing', output_sha256=? WHERE id=?",
                            (digest, reservation.id))
        except BaseException:
            self._rollback(reservation)
            raise
        # point of no return: from here a crash is rolled forward by recovery
        try:
            os.replace(tmp, output)
        except OSError as exc:
            self._rollback(reservation)
            raise UserError(f"cannot write {output}: {exc.strerror or exc}") from None
        _fsync_dir(str(directory))
        with self._tx() as con:
            con.execute("UPDATE entries SET status='complete', tmp_path=NULL, time=? WHERE id=?",
                        (_now(), reservation.id))
        return digest

    def _rollback(self, reservation: Reservation) -> None:
        with self._tx() as con:
            r = self._row(con, reservation)
            if r is not None and r["status"] in _IN_FLIGHT:
                _remove_tmp(r["tmp_path"])
                con.execute("DELETE FROM entries WHERE id=?", (reservation.id,))

    def abort(self, reservation: Reservation) -> None:
        """Cancel a reservation that failed: its row and temporary files go.  A release already
        past its point of no return (output renamed into place) is completed instead, so the
        ledger never loses a release that happened.  Idempotent."""
        with self._tx() as con:
            r = self._row(con, reservation)
            if r is None or r["status"] == "complete":
                return
            if r["status"] == "committing":
                self._settle(con, r)
                return
            _remove_tmp(r["tmp_path"])
            con.execute("DELETE FROM entries WHERE id=?", (reservation.id,))

    # -- checks ----------------------------------------------------------------------------------
    def verify(self, dataset: str | None = None) -> list[str]:
        """Problems with complete entries: outputs missing or changed since the release (e.g.
        overwritten by a later release to the same path).  Empty list = all outputs intact."""
        con = self._connect()
        try:
            q = "SELECT * FROM entries WHERE status='complete'"
            rows = con.execute(q + (" AND dataset=?" if dataset else ""),
                               (dataset,) if dataset else ()).fetchall()
        finally:
            con.close()
        problems = []
        for r in rows:
            p = r["output_path"]
            if not p or not os.path.isfile(p):
                problems.append(f"entry {r['id']}: output {p} is missing")
            elif _sha256_file(p) != r["output_sha256"]:
                problems.append(f"entry {r['id']}: output {p} changed since the release")
        return problems


def _fingerprint(path) -> str:
    try:
        from dpstudio.engine.data.loader import fingerprint
    except ImportError:  # pragma: no cover - the loader is always shipped
        return _sha256_file(path)
    return fingerprint(path)
