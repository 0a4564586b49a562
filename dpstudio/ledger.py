"""The per-dataset privacy budget ledger (docs/architecture.md §A release, step by step).

One SQLite database (WAL journal) records every release of every dataset.  Every change runs in
a ``BEGIN IMMEDIATE`` transaction, so concurrent processes serialise: two releases cannot both
see the same remaining budget.

Location: the explicit path > ``$DPSTUDIO_LEDGER`` > the user's application-data folder
(``$XDG_DATA_HOME/dpstudio`` or ``~/.local/share/dpstudio`` on Linux,
``~/Library/Application Support/dpstudio`` on macOS, ``%APPDATA%\\dpstudio`` on Windows).
Two small files live beside the database: ``<ledger>.key`` (a random key, mode 0600) and
``<ledger>.head`` (the head of the hash chain, see below).

Identity of a dataset (so that editing one record cannot reset its budget). A file is resolved
to a dataset, in this order: (1) its SHA-256 is already known; (2) the recipe names a dataset
(``input.dataset``) already in the ledger; (3) its rows match a known file's rows: at least
``MATCH_THRESHOLD`` (half) of the rows of one of the two files are rows of the other, estimated
from keyed bottom-k sketches (:func:`row_sketch`, :func:`sketch_overlap`), whatever the file's
name, format, column order or row order; (4) otherwise it is a new dataset. A file that matches
a known dataset is charged to that dataset's cap unless the user explicitly declares it a new
dataset (``dpstudio release --new-dataset``, a GUI checkbox); the declaration is recorded in
the entry and shown in the report. A cap set on a file (``dpstudio ledger set-cap FILE``) goes
to the dataset its rows match, where its releases are charged; a cap set on a file before any
release is never loosened by a later row match (:meth:`Ledger._refuse_looser_cap`). A sketch
holds ``SKETCH_K`` keyed 64-bit row hashes per file version; without the key they reveal
nothing about the rows. Beside it, column-set sketches (:func:`column_set_sketches`) of the
distinct rows over all columns and over each set with one column left out recognise a copy with
one column added, dropped, recoded or renamed (docs/ledger.md). Limits: a file sharing less than
half its rows with every known file, a small subset (under about 2 %) of a large dataset, or a
copy with two columns changed is not recognised (docs/ledger.md §Limits).

Integrity (so that losing entries cannot silently reset a budget).  Every fact that counts -
datasets and their names, caps, which file belongs to which dataset, every complete release, the
key's id, re-initialisations - is appended to a SHA-256 hash chain (table ``log``).  The tables
are checked against the chain before every reservation and cap change, and the chain's head is
also written (atomically) to ``<ledger>.head`` after every commit and printed in every report.
A deleted, emptied, truncated or replaced database, a dropped table, a deleted entry or a
deleted chain row is refused until the user re-initialises the ledger explicitly
(:meth:`Ledger.reinit`, ``dpstudio ledger reinit --confirm``), which keeps everything that
survives (tables and readable chain rows), starts a new chain and records the loss in it; every
later report shows it.  The head file is written after the commit, so a crash in between leaves
it one step behind: a head file that names an ancestor of the database's head is valid (and is
brought up to date).  This detects accidents and casual resets, not a deliberate forgery by
someone who rewrites the database, the chain and the head file together (the heads printed in
earlier reports still expose that: ``dpstudio ledger verify --head``).

Crash consistency of a release (``reserve`` -> ``write_and_commit``): after the process is
killed at *any* moment, either the entry is complete and the complete output file exists, or
neither exists (the output may be moved or edited afterwards; its charge stays).  The protocol:

1. ``reserve``: check the cap against spent + in-flight releases, insert a *pending* row.
2. record the temporary file's name (beside the output) in the row, status *writing*;
3. the writer writes the temporary file; it is fsynced and hashed;
4. status *committing* with the hash (the point of no return);
5. ``os.replace(tmp, output)``, fsync of the folder;
6. status *complete*, and the release appended to the chain (same transaction).

The files a release writes after its commit (its report, a density's side file) are named at
``reserve`` and held, like an in-flight output, until the release has written them
(``files_written``) or its process is gone; once written they are recorded (``record_file``)
and protected by their bytes.  So two releases never share an output, report or side file.

Recovery runs whenever a ledger is opened and before every reservation: rows whose process is
dead (pid and start time, so a reused pid is not mistaken for the writer) are rolled back
(*pending*/*writing*/*aborting* -- a rollback marks its row *aborting* before its temporary file
goes: the temporary files and the row are deleted) or rolled forward
(*committing*: the release happened -> complete.  The output with the recorded hash is in
place, or the rename is finished now -- beside a file that was put at the output's path since,
never over it -- or the temporary file is gone, which only the rename does (a rollback marks
the row *aborting* before the file goes): the output was then moved or edited before the row
was marked, and ``verify`` says so).  What recovery did is kept in :attr:`Ledger.recovered` for
the caller to say.  No Qt here.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import glob
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import shutil
import socket
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from dpstudio.errors import BudgetError, UserError
from dpstudio.prefs import app_data_dir

SCHEMA_VERSION = 2
TOLERANCE = 1e-12
#: *aborting*: a rollback's first step (the row is marked before its temporary file goes, so a
#: crash never leaves a *committing* row without that file, which recovery takes for a rename)
_IN_FLIGHT = ("pending", "writing", "committing", "aborting")
_IN_FLIGHT_SQL = ",".join("?" * len(_IN_FLIGHT))
#: what a release type's ε protects (``ledger show`` and the report list spend by these when a
#: dataset has releases of more than one kind; the total adds them, an upper bound for the
#: columns every release protects)
GUARANTEES = {
    "synthetic": "central DP (whole records)",
    "model": "central DP (whole records)",
    "density": "central DP (whole records)",
    "record": "record releases (the perturbed columns)",
    "semi-sensitive": "sensitive columns only",
    "label": "label DP (label columns only)",
}
_HEX = re.compile(r"^[0-9a-fA-F]+$")
#: keyed row hashes kept per file version (memory and disk: 8 bytes each)
SKETCH_K = 256
#: a file belongs to a known dataset when at least this share of one file's rows are the other's
MATCH_THRESHOLD = 0.5
#: fewer sampled rows than this (in files larger than it) give no verdict: too noisy to match on
_MIN_SAMPLES = 16
_GENESIS = "0" * 64
_CAP_FIRST = "cap set before the first release"  # such a file's rows are still matched at its release
#: a file that is no SQLite database and has no ledger head or key beside it: not a ledger at all
_NOT_A_LEDGER = (
    "{path} is not a privacy ledger (not a SQLite database, and no ledger head or key file beside "
    "it): check the --ledger path or $DPSTUDIO_LEDGER; nothing was changed"
)


def _has_ledger_files(path) -> bool:
    """Whether ``path`` has the side files only a ledger writes (its head or its row-sketch key)."""
    p = Path(path)
    return p.with_name(p.name + ".head").exists() or p.with_name(p.name + ".key").exists()


def _intact_on_disk(path) -> bool:
    """Whether the database file itself is a sound ledger (read only, its side files ignored):
    an open that fails although it is sound is a matter of access (permissions, a read-only
    folder, a -wal or -shm that is not a file), which re-initialising would turn into a loss."""
    try:
        uri = Path(os.path.realpath(path)).as_uri() + "?mode=ro&immutable=1"
        con = sqlite3.connect(uri, uri=True)
    except (sqlite3.Error, OSError, ValueError):
        return False
    try:
        ok = con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        con.execute("SELECT COUNT(*) FROM log").fetchone()
        con.execute("SELECT COUNT(*) FROM entries").fetchone()
        return bool(ok)
    except sqlite3.Error:
        return False
    finally:
        con.close()


def _salvage_log(path) -> list:
    """The chain rows of a damaged ledger that can still be read, in order (read only; none when
    the table cannot be read): re-initialising replays them, so no recorded spend is lost."""
    try:
        con = sqlite3.connect(Path(os.path.realpath(path)).as_uri() + "?mode=ro", uri=True)
    except (sqlite3.Error, OSError, ValueError):
        return []
    con.row_factory = sqlite3.Row
    rows: list = []
    try:
        for r in con.execute("SELECT * FROM log ORDER BY seq"):
            rows.append(r)
    except sqlite3.DatabaseError:
        pass  # the rows read before the damaged page are kept
    finally:
        con.close()
    return rows


def _access_problem(path, exc) -> str:
    # a full disk shows as SQLite's "disk I/O error" (or "database or disk is full"): say so
    # first, rather than only pointing at permissions (audit finding)
    free = None
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(Path(path).parent).free
    full = f"its disk has {free:,} bytes free: make room there, then " if free is not None and free < 1 << 20 else ""
    return (
        f"the privacy ledger {path} cannot be opened here ({exc}), but the database itself is "
        f"sound: {full}check the permissions of the file and its folder, that the disk is not full, "
        f"and that {Path(path).name}-wal and {Path(path).name}-shm beside it are files you may write; "
        f"do not re-initialise it (that would discard its spend); nothing was changed"
    )


REINIT_HINT = (
    "restore it from a backup, or accept the loss and re-initialise it explicitly with "
    "'dpstudio ledger reinit --confirm' (recorded and shown in every later report)"
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    sha256       TEXT PRIMARY KEY,
    name         TEXT,
    cap_epsilon  REAL,
    cap_delta    REAL,
    created      TEXT NOT NULL,
    label        TEXT,
    declared_new INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS files (
    sha256  TEXT PRIMARY KEY,
    dataset TEXT NOT NULL,
    name    TEXT,
    how     TEXT,
    score   REAL,
    rows    INTEGER,
    sketch  BLOB,
    time    TEXT NOT NULL,
    cols    BLOB
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
    tmp_path       TEXT,
    input_sha256   TEXT,
    identity       TEXT,
    report_path    TEXT,
    report_sha256  TEXT,
    artifact_path  TEXT,
    artifact_sha256 TEXT,
    targets        TEXT
);
CREATE TABLE IF NOT EXISTS log (
    seq  INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
-- edits of a release's files that the user acknowledged (a signed report), whose bytes
-- ``ledger verify`` accepts: outside the hash chain, like the files' own paths and hashes
-- (no semicolons in these comments: the schema is split on them)
CREATE TABLE IF NOT EXISTS edits (
    entry  INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    time   TEXT NOT NULL,
    note   TEXT,
    PRIMARY KEY (entry, kind, sha256)
);
CREATE INDEX IF NOT EXISTS entries_dataset ON entries(dataset);
CREATE INDEX IF NOT EXISTS entries_status ON entries(status);
CREATE INDEX IF NOT EXISTS files_dataset ON files(dataset);
-- facts about the ledger itself (head_written: a head file was written for this chain, so its
-- absence is a loss, not a first write that failed)
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT
);
"""
#: columns added by schema 2 to tables of schema 1 (ALTER TABLE ... ADD COLUMN)
_ADDED_COLUMNS = {
    "datasets": (("label", "TEXT"), ("declared_new", "INTEGER NOT NULL DEFAULT 0")),
    # the column-set sketches of a file version (pack_column_set_sketches); NULL: from before them
    "files": (("cols", "BLOB"),),
    "entries": (
        # JSON {"protected": [...], "unchanged": [...]}: which columns the release put noise on
        # and which it copied (advisory, outside the chain: a later release that copies a column
        # an earlier one protected is warned)
        ("columns", "TEXT"),
        ("input_sha256", "TEXT"),
        ("identity", "TEXT"),
        ("report_path", "TEXT"),
        ("report_sha256", "TEXT"),
        ("artifact_path", "TEXT"),
        ("artifact_sha256", "TEXT"),
        # the files a release will write after its commit (JSON list), held until it has written
        # them (``Ledger.files_written``) or its process is gone
        ("targets", "TEXT"),
    ),
}


# ---- where -----------------------------------------------------------------------------------


def default_ledger_path() -> Path:
    """``$DPSTUDIO_LEDGER``, else ``ledger.sqlite`` in the user's application-data folder."""
    env = os.environ.get("DPSTUDIO_LEDGER")
    if env:
        return Path(env).expanduser()
    return app_data_dir() / "ledger.sqlite"


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
        fields = raw[raw.rfind(")") + 2 :].split()
        if fields and fields[0] in ("Z", "X", "x"):
            raise ProcessLookupError(pid)  # zombie: dead, not yet reaped
        return fields[19] if len(fields) > 19 else None
    if sys.platform == "win32":
        return _win_start_time(pid)
    if not _posix_alive(pid):
        raise ProcessLookupError(pid)
    try:
        import subprocess

        out = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=5
        ).stdout.strip()
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
    if sys.platform != "win32":  # called only there; mypy checks the Windows API below for Windows only
        raise NotImplementedError("Windows only")
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
    """An output's SHA-256: a file's, or a partitioned dataset folder's (its files' names and
    hashes: ``dpstudio.export.output_sha256``)."""
    from dpstudio.export import output_sha256  # one streamed hasher for outputs everywhere

    return output_sha256(path)


def _fsync_file(path) -> None:
    from dpstudio.export import fsync_tree

    fsync_tree(path)


def _is_output(path) -> bool:
    """An output is in place: a file, or a partitioned dataset's folder."""
    return bool(path) and (os.path.isfile(path) or os.path.isdir(path))


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


def _release_tmp_name(name: str, directory, tag: str) -> str:
    """The temporary name of a release's output: it must leave room, within the file system's
    name limit, for the writer's own temporary beside it (``.<this name>.<random>.dpstmp``)."""
    from dpstudio.export import temp_stem

    tail = f".{tag}.dpsrel"
    return "." + temp_stem(name, directory, room=1 + len(tail) + 20) + tail


def recovery_text(r: dict) -> str:
    """One entry of :attr:`Ledger.recovered` as the CLI and the GUI say it."""
    if r["action"] == "completed":
        text = f"release {r['id']}, whose process ended after its point of no return, was completed and is charged"
    else:
        text = f"release {r['id']}, whose process ended before its point of no return, was rolled back: no charge"
    return text + (f"; {r['note']}" if r.get("note") else "")


def _beside(path: str, tag: str) -> str:
    """A free name beside ``path``: ``data.recovered-3.csv`` (``data.recovered-3-2.csv``, ...)."""
    p = Path(path)
    for i in range(1, 1000):
        name = f"{p.stem}.{tag}{'' if i == 1 else f'-{i}'}{p.suffix}"
        if not os.path.lexists(p.with_name(name)):
            return str(p.with_name(name))
    raise UserError(f"no free name beside {path} to keep a recovered release's output")


def _remove_tmp(tmp_path: str | None) -> None:
    import shutil

    for f in _tmp_files(tmp_path):
        if os.path.isdir(f) and not os.path.islink(f):
            shutil.rmtree(f, ignore_errors=True)  # a partitioned dataset's temporary folder
            continue
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(f)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _fmt(x: float | None) -> str:
    return "unlimited" if x is None else f"{x:.6g}"


#: the least epsilon a release can spend (``recipe.validate.MIN_UNIT_EPSILON``; a test holds them equal)
LEAST_RELEASE_EPSILON = 1e-6


def _left(cap: float, used: float, least: float = TOLERANCE) -> float:
    """What is left of a cap: 0 below ``least`` -- the admission tolerance (a cap of 20 spent as
    five releases of 0.6667 + ... showed 3.553e-15 left, a float sum's residue), or for epsilon
    the least a release can spend (a zCDP total of 1.4999999994645 left 5.4e-10 of a cap, and
    the advice to "lower epsilon to at most 5.4e-10" named a budget every recipe refuses)."""
    left = cap - used
    return left if left > max(least, TOLERANCE) else 0.0


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


# ---- dataset identity: keyed row sketches ------------------------------------------------------

_TAG_TEXT = 0x9E3779B97F4A7C15  # keeps text cells apart from numbers with the same hash
_TAG_TIME = 0xC2B2AE3D27D4EB4F
_NA_HASH = 0x5851F42D4C957F2D


def _number_hashes(values):
    """uint64 hashes of float64 cells; None where a cell is missing.

    The float is rounded to 40 mantissa bits (about 12 significant digits), so a value that a
    spreadsheet re-saved with 15 digits, or an integer read as a float, hashes the same."""
    import numpy as np
    from pandas.util import hash_array

    v = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 -> 0.0
    finite = np.isfinite(v)
    bits = v.view(np.uint64).copy()
    bits[finite] = (bits[finite] + np.uint64(1 << 11)) & ~np.uint64((1 << 12) - 1)
    h = hash_array(bits)
    h[np.isnan(v)] = np.uint64(_NA_HASH)
    return h


def _cell_hashes(s):
    """One uint64 per cell of column ``s``, equal for equal values whatever the column's dtype:
    numbers (also numbers and true/false written as text) by value, text stripped, missing alike."""
    import numpy as np
    import pandas as pd
    from pandas.api import types as pt
    from pandas.util import hash_array

    if pt.is_bool_dtype(s.dtype) or pt.is_numeric_dtype(s.dtype):
        return _number_hashes(s.astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan))
    if pt.is_datetime64_any_dtype(s.dtype):
        if getattr(s.dtype, "tz", None) is not None:
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        ns = s.to_numpy(dtype="datetime64[ns]").view(np.int64)
        h = hash_array(ns) ^ np.uint64(_TAG_TIME)
        h[s.isna().to_numpy()] = np.uint64(_NA_HASH)
        return h
    # each distinct value is canonicalised once (text columns rarely have one value per row)
    codes, uniques = pd.factorize(s.astype(object), use_na_sentinel=True)
    if len(uniques) == 0:  # every cell missing (or no cells): common in one batch of a column
        return np.full(len(s), _NA_HASH, dtype=np.uint64)
    h = _text_hashes(np.asarray(uniques, dtype=object))
    return np.where(codes < 0, np.uint64(_NA_HASH), h[np.maximum(codes, 0)]).astype(np.uint64)


_NUMBER_TEXT = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
#: an ISO 8601 date or date and time, as the loader (Arrow's CSV reader) reads into a time column
_TIME_TEXT = r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}(:?\d{2})?)?$"
_INF_TEXT = r"^[+-]?inf(inity)?$"  # lower case: how an infinite number reads as text


def _text_hashes(values):
    """Hashes of distinct non-missing cells of a text column: numbers, true/false and ISO 8601
    dates and times written as text hash as those values (a re-save may turn a column's type
    either way, and the streamed and Dask readers keep as text a date column the in-memory loader
    reads as dates), the rest as whitespace-stripped text."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pandas.util import hash_array

    text = pc.utf8_trim_whitespace(pa.array(np.asarray(values).astype(str), type=pa.string()))
    lower = pc.utf8_lower(text)
    is_num = pc.or_(pc.match_substring_regex(text, _NUMBER_TEXT), pc.match_substring_regex(lower, _INF_TEXT))
    is_num = is_num.to_numpy(zero_copy_only=False)
    truth = pc.equal(lower, "true").to_numpy(zero_copy_only=False)
    false = pc.equal(lower, "false").to_numpy(zero_copy_only=False)
    strs = text.to_numpy(zero_copy_only=False)
    h = hash_array(strs.astype(object)) ^ np.uint64(_TAG_TEXT)
    num = np.full(len(strs), np.nan)
    if is_num.any():
        num[is_num] = np.asarray(strs[is_num], dtype=np.float64)
    num[truth], num[false] = 1.0, 0.0
    number = is_num | truth | false
    if number.any():
        h[number] = _number_hashes(num[number])
    when = pc.match_substring_regex(text, _TIME_TEXT).to_numpy(zero_copy_only=False) & ~number
    if when.any():
        import pandas as pd

        at = pd.to_datetime(pd.Series(strs[when], dtype=object), format="ISO8601", utc=True, errors="coerce")
        ok = at.notna().to_numpy()
        # as _cell_hashes hashes a time column: UTC, naive, in nanoseconds
        ns = at[ok].dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view(np.int64)
        h[np.flatnonzero(when)[ok]] = hash_array(ns) ^ np.uint64(_TAG_TIME)
    return h


_SIP_CHUNK = 1 << 14  # elements hashed at a time: the five working arrays stay in the CPU's cache


def _siphash24(key: bytes, m):
    """SipHash-2-4 (Aumasson & Bernstein 2012, a keyed pseudorandom function) of each uint64 of
    ``m`` as an 8-byte little-endian message, vectorised over the array; ``key``: 16 bytes.

    Whole-array operations on chunks of ``_SIP_CHUNK`` elements, in place (3x faster than on the
    whole array at once with temporaries: measured 40 vs 121 ms for 1M values)."""
    import numpy as np

    k0 = np.uint64(int.from_bytes(key[:8], "little"))
    k1 = np.uint64(int.from_bytes(key[8:16], "little"))
    m = np.asarray(m, dtype=np.uint64)
    shape, m = m.shape, m.ravel()
    out = np.empty(len(m), dtype=np.uint64)
    c = max(1, min(_SIP_CHUNK, len(m)))
    work = np.empty((5, c), dtype=np.uint64)
    shifts = {b: (np.uint64(b), np.uint64(64 - b)) for b in (13, 16, 17, 21, 32)}
    last = np.uint64(8 << 56)  # the final block: the message length (8 bytes), no tail bytes

    def rotl(x, b, t):  # x = x <<< b, in place
        left, right = shifts[b]
        np.right_shift(x, right, out=t)
        np.left_shift(x, left, out=x)
        x |= t

    def rounds(n, v0, v1, v2, v3, t):
        for _ in range(n):  # a fixed number of whole-chunk rounds, not a loop over rows
            # one SipRound, laid out line for line as in the reference implementation (Aumasson &
            # Bernstein 2012) so it can be checked against it
            v0 += v1
            rotl(v1, 13, t)
            v1 ^= v0
            rotl(v0, 32, t)
            v2 += v3
            rotl(v3, 16, t)
            v3 ^= v2
            v0 += v3
            rotl(v3, 21, t)
            v3 ^= v0
            v2 += v1
            rotl(v1, 17, t)
            v1 ^= v2
            rotl(v2, 32, t)

    for lo in range(0, len(m), c):
        mm = m[lo : lo + c]
        v0, v1, v2, v3, t = (w[: len(mm)] for w in work)
        v0.fill(k0 ^ np.uint64(0x736F6D6570736575))
        v1.fill(k1 ^ np.uint64(0x646F72616E646F6D))
        v2.fill(k0 ^ np.uint64(0x6C7967656E657261))
        v3.fill(k1 ^ np.uint64(0x7465646279746573))
        v3 ^= mm
        rounds(2, v0, v1, v2, v3, t)
        v0 ^= mm
        v3 ^= last
        rounds(2, v0, v1, v2, v3, t)
        v0 ^= last
        v2 ^= np.uint64(0xFF)
        rounds(4, v0, v1, v2, v3, t)
        o = out[lo : lo + len(mm)]
        np.bitwise_xor(v0, v1, out=o)
        o ^= v2
        o ^= v3
    return out.reshape(shape)


def _sip_key(key: bytes) -> bytes:
    """The 128-bit SipHash key of the row sketches, derived from the ledger key."""
    return hmac.new(key, b"dpstudio row sketch", hashlib.sha256).digest()[:16]


def row_sketch(frame, key: bytes, k: int = SKETCH_K):
    """The keyed bottom-k sketch of a table's rows: the ``k`` smallest keyed row hashes (sorted
    uint64) and the row count.

    Rows are hashed by their values (columns in name order, each cell by :func:`_cell_hashes`),
    so a re-saved, re-ordered or converted copy has the same row hashes; the i-th copy of a row
    is hashed with i (a multiset).  Each row hash then goes through SipHash-2-4 keyed with the
    ledger's secret key (a pseudorandom function: Aumasson & Bernstein 2012), so the stored
    values say nothing about the rows without the key.  The k smallest values of a random hash
    are a uniform sample of the rows that two files sample consistently (bottom-k sketches:
    Broder 1997; Cohen & Kaplan 2007).  Vectorised; memory O(rows) while hashing, k kept.  The
    same sketch of a table read in batches: :class:`RowSketcher`; of a Dask DataFrame:
    :func:`row_sketch_dask`."""
    import numpy as np

    n = len(frame)
    if n == 0 or frame.shape[1] == 0:
        return np.empty(0, dtype=np.uint64), n
    return _sketch_of_rows(_row_hashes(frame), key, k), n


def _sketch_of_rows(rows, key: bytes, k: int):
    """The bottom-k sketch of the unkeyed row hashes ``rows`` (:func:`row_sketch`)."""
    import numpy as np
    import pandas as pd

    copy_no = pd.Series(rows).groupby(rows, sort=False).cumcount().to_numpy(dtype=np.uint64)
    keyed = _siphash24(_sip_key(key), _copy_hashes(rows, copy_no))
    # O(n) selection; the k smallest are then sorted (distinct: copies are numbered)
    return np.unique(_smallest(keyed, k))


#: rows hashed at a time by :func:`table_sketches` (its temporaries: about 3 x 8 bytes x columns a row)
_TABLE_CHUNK = 1 << 16


def table_sketches(frame, key: bytes, k: int = SKETCH_K):
    """``(row sketch, rows, column-set sketches)`` of a table: :func:`row_sketch` and
    :func:`column_set_sketches`, its cells hashed once."""
    import numpy as np

    n = len(frame)
    if n == 0 or frame.shape[1] == 0:
        return np.empty(0, dtype=np.uint64), n, {}
    rows: list = []
    sets: ColumnSetParts | None = None
    candidate = row_number_candidate(frame.iloc[:HEAD_ROWS])
    for lo in range(0, n, _TABLE_CHUNK):  # in pieces: the cells' arrays stay small (and in cache)
        _, hashes, _, part = batch_row_hashes(frame.iloc[lo : lo + _TABLE_CHUNK], key, k, candidate)
        rows.append(hashes)
        sets = part if sets is None else sets.merge(part, k)
    return _sketch_of_rows(np.concatenate(rows), key, k), n, (sets.final() if sets is not None else {})


def _cells(frame):
    """``(names, cells)``: the column names stripped and sorted, and the (rows x columns) uint64
    array of :func:`_cell_hashes` in that order."""
    import numpy as np

    order = sorted(range(frame.shape[1]), key=lambda i: str(frame.columns[i]).strip())
    names = [str(frame.columns[i]).strip() for i in order]
    cells = np.empty((len(frame), len(order)), dtype=np.uint64, order="F")  # a column at a time
    for j, i in enumerate(order):
        cells[:, j] = _cell_hashes(frame.iloc[:, i])
    return names, cells


def _hash_rows(cells):
    """The unkeyed uint64 hash of each row of a :func:`_cells` array."""
    import pandas as pd
    from pandas.util import hash_pandas_object

    return hash_pandas_object(pd.DataFrame(cells, copy=False), index=False).to_numpy()


def _row_hashes(frame):
    """The unkeyed uint64 hash of each row of ``frame`` (columns in name order, each cell by
    :func:`_cell_hashes`): a function of the row's values only, so the same whatever the other
    rows, the batch the row comes in, the columns' order or (mostly) their dtypes."""
    return _hash_rows(_cells(frame)[1])


def _copy_hashes(rows, copy_no):
    """The unkeyed hash of each (row hash, copy number) pair (both uint64 arrays)."""
    import pandas as pd
    from pandas.util import hash_pandas_object

    return hash_pandas_object(pd.DataFrame({"r": rows, "c": copy_no}), index=False).to_numpy()


def _smallest(values, k: int):
    """The ``k`` smallest of ``values`` as a multiset (unsorted; all of them when there are at most k)."""
    import numpy as np

    return np.partition(values, k - 1)[:k] if len(values) > k else values


# ---- column-set sketches: the rows over all columns and over all but one ------------------------
#
# The row sketch above hashes whole rows, so a copy with one more column (a row number), one column
# less or one column recoded or renamed has no row in common with the original. Beside it, a file
# version keeps bottom-k sketches of its *distinct* rows over its whole column set and over each
# set with one column left out, each labelled by a keyed id of its column names: a copy that
# changed one column shares one of these column sets with the original, and its rows there.
# A cell's hash is mixed with its column's name (the MurmurHash3 finaliser, a bijection, of the
# two XORed), a row over a column set is the sum of its cells' (mod 2**64), so leaving a column out
# is one subtraction per row, and each such sum is keyed with SipHash under the ledger's key, as
# the whole-row hashes are: the stored values are pseudorandom without the key. Each kept value
# comes with the number of rows that have it. Distinct rows (sets, not multisets) make the sketch of a table
# read in batches the merge of the batches' sketches, with no spill to disk.

#: tables with more columns are sketched over all their columns only (each left-out column costs a
#: pass over the rows and ``SKETCH_K`` values of storage)
COLUMN_SKETCH_MAX = 128
#: when a column set decides a match (``column_set_overlap``). The share of X's sampled distinct
#: rows (over the set) found in Y is evidence that X's rows are Y's only when Y's rows over the set
#: tell people apart: at least this share of Y's sampled distinct rows occur once in Y. Two
#: independent samples of n rows from n/r equally likely patterns: a pattern found occurs once
#: with probability r e^-r / (1 - e^-r), and about 1 - e^-r of one sample's patterns are in the
#: other; a share of 0.8 occurring once means r < 0.45 and under 36 % in common by chance, below
#: MATCH_THRESHOLD (a test table of unrelated people had 0.53 in common over a set where 0.7 of
#: the rows were distinct). X itself must not be a few common patterns: a set is kept only when at
#: least this share of its sampled distinct rows occur at most twice (a file appended to itself,
#: or resampled, still qualifies). The decision takes the lower bound of a score interval
#: (``_MATCH_Z``) of the share, so that a handful of samples cannot decide by chance.
IDENTIFYING_SHARE = 0.8
#: stored counts are capped: the rule reads only 1, 2 and "more"
_COUNT_CAP = 3
#: standard errors below the estimated share that still reach MATCH_THRESHOLD (column sets)
_MATCH_Z = 2.0
_COLUMN_SET_MIN = 2


def _column_sip_key(key: bytes) -> bytes:
    """The SipHash key of the column-set sketches, derived from the ledger key."""
    return hmac.new(key, b"dpstudio column-set sketch", hashlib.sha256).digest()[:16]


def _fold(names) -> bool:
    """Whether a table's column names may be compared without their case: unless two of them then
    become one (``Age`` and ``age``), which would give two column sets one id."""
    return len({str(n).strip().casefold() for n in names}) == len(names)


def _norm(name, fold: bool) -> str:
    return str(name).strip().casefold() if fold else str(name).strip()


def _name_word(key: bytes, name: str, fold: bool = True) -> int:
    """A keyed 64-bit word of a column name (case and surrounding spaces ignored: ``fold``)."""
    text = b"dpstudio column " + _norm(name, fold).encode("utf-8", "surrogatepass")
    return int.from_bytes(hmac.new(key, text, hashlib.sha256).digest()[:8], "little")


def _column_set_id(key: bytes, names, fold: bool = True) -> int:
    """A keyed 64-bit id of a set of column names (case and surrounding spaces ignored: ``fold``)."""
    norm = sorted({_norm(n, fold) for n in names})
    text = b"dpstudio column set\0" + "\0".join(norm).encode("utf-8", "surrogatepass")
    return int.from_bytes(hmac.new(key, text, hashlib.sha256).digest()[:8], "little")


def _fmix(x):
    """The MurmurHash3 64-bit finaliser (Appleby 2011; a bijection), on a uint64 array."""
    import numpy as np

    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


def _smallest_distinct(values, k: int):
    """``(values, counts)``: the ``k`` smallest distinct values of a uint64 array, sorted, and how
    often each occurs."""
    import numpy as np
    import pandas as pd

    if len(values) > 4 * k:
        # the 4k smallest as a multiset hold every copy of each distinct value below their largest
        some, counts = np.unique(np.partition(values, 4 * k - 1)[: 4 * k], return_counts=True)
        if len(some) > k:
            return some[:k], counts[:k].astype(np.int64)
        # few distinct values, many copies: count them by hashing, then keep the smallest
        vc = pd.Series(values).value_counts(sort=False)
        distinct, copies = vc.index.to_numpy(dtype=np.uint64), vc.to_numpy(dtype=np.int64)
        order = np.argsort(distinct)[:k]
        return distinct[order], copies[order]
    some, counts = np.unique(values, return_counts=True)
    return some[:k], counts[:k].astype(np.int64)


#: the first rows of a table that say which of its columns are row numbers (every engine reads them alike)
HEAD_ROWS = 1000


def row_number_candidate(head) -> str | None:
    """The column of a table's first rows (``HEAD_ROWS`` of them, or all; at least three) that may
    be a row number: whole numbers (written as text too: the streamed reader may read them so),
    none missing, at least half of them distinct; of several, the one whose values there span the
    least (row numbers span about the rows; IDs with gaps more), then the first by name. Whether
    it is one is settled on the whole table (:class:`ColumnSetParts`), whatever the rows' order."""
    import numpy as np
    import pandas as pd

    head = head.iloc[:HEAD_ROWS]
    if len(head) < 3:
        return None
    best: tuple[float, str] | None = None  # (span, name)
    for i in range(head.shape[1]):
        col = head.iloc[:, i]
        if pd.api.types.is_bool_dtype(col.dtype):
            continue
        v = _whole_numbers(col)
        if not np.isfinite(v).all():
            continue
        if len(np.unique(v)) < 0.5 * len(v):
            continue
        key = (float(v.max() - v.min()), str(head.columns[i]).strip())
        if best is None or key < best:
            best = key
    return None if best is None else best[1]


def _whole_numbers(col):
    """A column's cells as float64, NaN where a cell is missing or not a whole number."""
    import numpy as np
    import pandas as pd

    if pd.api.types.is_bool_dtype(col.dtype):
        return np.full(len(col), np.nan)
    if not pd.api.types.is_numeric_dtype(col.dtype):
        col = pd.to_numeric(col.astype(object), errors="coerce")
    v = np.asarray(col, dtype=np.float64)
    return np.where(np.isfinite(v) & (v == np.round(v)), v, np.nan)


@dataclass
class ColumnSetParts:
    """The column-set sketches of some of a table's rows, both ways while it is not yet known
    whether the table's :func:`row_number_candidate` is a row number: ``plain`` over all columns,
    ``without`` with the candidate left out of every set; and the candidate's facts so far
    (rows, cells missing or not whole numbers, least and greatest). Batches merge
    (:meth:`merge`); :meth:`final` picks one way for the whole table.

    A row number (an exported index, ``id`` 1..n) says nothing about people yet tells every row
    apart: two unrelated tables numbered alike share their rows over {row number, a column that
    follows the row order or hardly varies}. So a candidate with every cell a whole number and
    a range at most 1.5 x the rows takes no part in the column sets. Settled on the whole table,
    not on the rows' order: a shuffled, sorted, resampled or (to two thirds) cut copy of a
    numbered table decides as the original does."""

    plain: dict
    without: dict | None = None
    rows: int = 0
    bad: int = 0
    low: float | None = None
    high: float | None = None

    def merge(self, other: ColumnSetParts, k: int) -> ColumnSetParts:
        if (self.without is None) != (other.without is None):
            raise ValueError("these batches disagree on the row-number candidate")
        lows = [x for x in (self.low, other.low) if x is not None]
        highs = [x for x in (self.high, other.high) if x is not None]
        return ColumnSetParts(
            merge_column_set_sketches(self.plain, other.plain, k),
            None if self.without is None else merge_column_set_sketches(self.without, other.without or {}, k),
            self.rows + other.rows,
            self.bad + other.bad,
            min(lows) if lows else None,
            max(highs) if highs else None,
        )

    def is_row_number(self) -> bool:
        if self.without is None or self.bad or self.low is None or self.high is None or self.rows < 3:
            return False
        return self.high - self.low + 1 <= 1.5 * self.rows

    def final(self) -> dict:
        return dict(self.without if self.is_row_number() and self.without is not None else self.plain)


def column_set_parts(frame, names, cells, key: bytes, k: int, candidate: str | None) -> ColumnSetParts:
    """:class:`ColumnSetParts` of one batch (``names``/``cells`` from :func:`_cells`; ``cells`` is
    used up)."""
    import numpy as np

    if candidate is None or candidate not in names:
        return ColumnSetParts(column_set_sketches(names, cells, key, k, overwrite=True))
    plain = column_set_sketches(names, cells, key, k)
    without = column_set_sketches(names, cells, key, k, overwrite=True, exclude=(candidate,))
    i = next(i for i, c in enumerate(frame.columns) if str(c).strip() == candidate)
    v = _whole_numbers(frame.iloc[:, i])
    good = v[np.isfinite(v)]
    return ColumnSetParts(
        plain,
        without,
        rows=len(v),
        bad=int(len(v) - len(good)),
        low=float(good.min()) if len(good) else None,
        high=float(good.max()) if len(good) else None,
    )


def column_set_sketches(names, cells, key: bytes, k: int = SKETCH_K, *, overwrite: bool = False, exclude=()) -> dict:
    """``{column-set id: (number of columns, values, counts)}`` of a :func:`_cells` array with the
    column ``names``: the k smallest distinct keyed row values (sorted) and how many rows have
    each, over all the columns, and over each set with one column left out when there are at most
    ``COLUMN_SKETCH_MAX`` columns (and at least two). Of one batch of a table, it merges with the
    other batches' by :func:`merge_column_set_sketches`. With ``overwrite``, ``cells`` is used for
    the cells mixed with their column names (saving a copy of its size). The columns named in
    ``exclude`` take no part (a row number: :class:`ColumnSetParts`)."""
    import numpy as np

    if exclude:
        drop = {str(n).strip() for n in exclude}
        keep = [j for j, n in enumerate(names) if n not in drop]
        if len(keep) < len(names):
            names, cells, overwrite = [names[j] for j in keep], cells[:, keep], True  # (a copy)
    c = len(names)
    if c == 0 or len(cells) == 0:
        return {}
    sip = _column_sip_key(key)
    fold = _fold(names)
    named = cells if overwrite else np.empty(cells.shape, dtype=np.uint64, order="F")
    total = np.zeros(len(cells), dtype=np.uint64)
    for j, name in enumerate(names):
        # mixed after the XOR, so that equal values in two columns, or two values that XOR alike,
        # add up to unrelated sums
        named[:, j] = _fmix(cells[:, j] ^ np.uint64(_name_word(key, name, fold)))
        total += named[:, j]  # wraps mod 2**64

    def sketch(sums):
        return _smallest_distinct(_siphash24(sip, sums), k)

    out = {_column_set_id(key, names, fold): (c, *sketch(total))}
    if 2 <= c <= COLUMN_SKETCH_MAX:
        for j in range(c):
            rest = names[:j] + names[j + 1 :]
            out[_column_set_id(key, rest, fold)] = (c - 1, *sketch(total - named[:, j]))
    return out


def merge_column_set_sketches(a: dict, b: dict, k: int = SKETCH_K) -> dict:
    """The column-set sketches of two batches' rows together (the same column sets): a value among
    the k smallest of the whole is among the k smallest of each batch that has it, so its counts
    add up exactly."""
    import numpy as np

    if not a or not b:
        return {s: (ncols, values[:k], counts[:k]) for s, (ncols, values, counts) in (a or b).items()}
    if a.keys() != b.keys():
        raise ValueError("these batches have different columns")
    out = {}
    for s in a:
        values, where = np.unique(np.concatenate([a[s][1], b[s][1]]), return_inverse=True)
        counts = np.bincount(where, weights=np.concatenate([a[s][2], b[s][2]])).astype(np.int64)
        out[s] = (a[s][0], values[:k], counts[:k])
    return out


def _diverse(counts) -> bool:
    """Whether a file's rows over a column set are not a few common patterns: at least
    ``IDENTIFYING_SHARE`` of its sampled distinct rows occur at most twice."""
    return len(counts) > 0 and float((counts <= 2).mean()) >= IDENTIFYING_SHARE


def pack_column_set_sketches(sketches: dict) -> bytes:
    """The stored form of the column sets that can take part in a match (at least two columns,
    rows not a few common patterns: :func:`_diverse`): per set (by id), its id, number of columns,
    number of values, the values and their counts capped at ``_COUNT_CAP`` (little-endian uint64).
    A set over which the rows are a few common patterns would be their histogram; it is not kept."""
    import numpy as np

    parts = []
    for sid in sorted(sketches):
        ncols, values, counts = sketches[sid]
        if ncols < _COLUMN_SET_MIN or not _diverse(counts):
            continue
        counts = np.minimum(counts, _COUNT_CAP)
        parts.append(np.asarray([sid, ncols, len(values)], dtype="<u8"))
        parts.append(np.asarray(values, dtype="<u8"))
        parts.append(np.asarray(counts, dtype="<u8"))
    return b"".join(p.tobytes() for p in parts)


def unpack_column_set_sketches(blob) -> dict:
    """The inverse of :func:`pack_column_set_sketches`."""
    import numpy as np

    words = np.frombuffer(bytes(blob or b""), dtype="<u8").astype(np.uint64)  # one copy, native order
    signed = words.view(np.int64)  # (counts are at most _COUNT_CAP)
    out, i = {}, 0
    while i + 3 <= len(words):
        sid, ncols, m = int(words[i]), int(words[i + 1]), int(words[i + 2])
        values = words[i + 3 : i + 3 + m]
        counts = signed[i + 3 + m : i + 3 + 2 * m]
        out[sid] = (ncols, values, counts)
        i += 3 + 2 * m
    return out


def _once_share(counts) -> float:
    """The share of a sketch's sampled distinct rows that occur once in their file."""
    import numpy as np

    return np.count_nonzero(counts == 1) / len(counts) if len(counts) else 0.0


def _found(x, y, k: int, y_counts=None) -> tuple[int, int]:
    """``(found, sampled)``: of X's kept values that Y would have kept too (at most Y's largest
    when Y is full), how many Y holds (bottom-k containment of X in Y; Broder 1997); with
    ``y_counts``, only those Y holds at most twice (a row common in Y is no evidence that X's
    copy of it is Y's: a common pattern is in any large sample)."""
    import numpy as np

    limit = y[-1] if len(y) >= k else np.uint64(2**64 - 1)
    xs = x[x <= limit]
    if len(xs) == 0:
        return 0, 0
    at = np.minimum(np.searchsorted(y, xs), len(y) - 1)  # both sorted: a binary search, not a sort
    hit = y[at] == xs
    if y_counts is not None:
        hit &= y_counts[at] <= 2
    return int(hit.sum()), len(xs)


def _lower_bound(found: int, n: int, z: float = _MATCH_Z) -> float:
    """The lower end of the Wilson score interval of a share ``found / n`` (Wilson 1927)."""
    if n == 0:
        return 0.0
    p = found / n
    centre = p + z * z / (2 * n)
    spread = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5)
    return (centre - spread) / (1 + z * z / n)


def column_set_overlap(a: dict, b: dict, k: int = SKETCH_K) -> float:
    """The share of one file's distinct rows that are the other's over a column set both have,
    where it decides (``IDENTIFYING_SHARE``): X's rows found in Y count when Y's rows tell people
    apart (most occur once in Y), when at least ``_MIN_SAMPLES`` of X's rows were compared, and
    when the share's lower bound reaches ``MATCH_THRESHOLD``; the largest such share, else 0.
    Only stored sets take part (at least two columns, not a few common patterns: both files')."""
    best = 0.0
    for sid in a.keys() & b.keys():
        (ca, va, na), (cb, vb, nb) = a[sid], b[sid]
        if min(ca, cb) < _COLUMN_SET_MIN or not (_diverse(na) and _diverse(nb)):
            continue  # (such sets are not stored: unpacked sketches never have them)
        for x, y, y_counts in ((va, vb, nb), (vb, va, na)):
            if _once_share(y_counts) < IDENTIFYING_SHARE:
                continue
            found, n = _found(x, y, k, y_counts)
            if n < min(_MIN_SAMPLES, len(x)) or _lower_bound(found, n) < MATCH_THRESHOLD:
                continue
            best = max(best, found / n)
        if best >= 0.99:  # found: no set can say more
            break
    return best


# ---- the row sketch over batches (streamed releases) and over a Dask DataFrame -------------------

#: bytes of row hashes held in memory before they spill to disk, and the most a bucket may hold
#: while its copies are counted (8 bytes per row: 8M rows; peak about 6 times this)
_SKETCH_BUCKET_BYTES = 64 << 20
#: (row, copy) pairs expanded and hashed at a time (temporaries: about 100 bytes per pair)
_SKETCH_EXPAND = 1 << 21
_SPILL_BITS = 8  # a spill or a split sorts row hashes into 2**8 bucket files by 8 of their bits


def _bottom_k_of_counts(uniq, counts, sip: bytes, k: int, chunk: int = _SKETCH_EXPAND):
    """The ``k`` smallest keyed hashes (a multiset, unsorted) of the rows with the distinct row
    hashes ``uniq``, each present ``counts`` times: copy i of row r is hashed as (r, i), as in
    :func:`row_sketch`.  The pairs are expanded ``chunk`` at a time, so memory is
    O(len(uniq) + chunk + k) even when one row has millions of copies."""
    import numpy as np

    best = np.empty(0, dtype=np.uint64)
    counts = np.asarray(counts, dtype=np.int64)
    if len(counts) == 0 or k <= 0:
        return best
    uniq = np.asarray(uniq, dtype=np.uint64)
    ends = np.cumsum(counts)
    starts = ends - counts
    for lo in range(0, int(ends[-1]), chunk):
        hi = min(lo + chunk, int(ends[-1]))
        a = int(np.searchsorted(ends, lo, side="right"))  # the rows whose copies overlap [lo, hi)
        b = int(np.searchsorted(ends, hi - 1, side="right")) + 1
        take = np.minimum(ends[a:b], hi) - np.maximum(starts[a:b], lo)
        rows = np.repeat(uniq[a:b], take)
        copy_no = (np.arange(lo, hi, dtype=np.int64) - np.repeat(starts[a:b], take)).astype(np.uint64)
        keyed = _siphash24(sip, _copy_hashes(rows, copy_no))
        best = _smallest(np.concatenate([best, keyed]), k)
    return best


def _merge_counts(u, c, u2, c2):
    """Two (sorted distinct values, counts) pairs summed into one."""
    import numpy as np

    if len(u) == 0:
        return u2, c2
    values, counts = np.concatenate([u, u2]), np.concatenate([c, c2])
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    first = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    return values[first], np.add.reduceat(counts, first)


def _scatter(values, shift: int, folder: str) -> None:
    """Append ``values`` (uint64) to the bucket files ``folder/<b>`` by b = 8 bits from ``shift``."""
    import numpy as np

    top = ((values >> np.uint64(shift)) & np.uint64((1 << _SPILL_BITS) - 1)).astype(np.uint16)
    order = np.argsort(top, kind="stable")
    values, top = values[order], top[order]
    bounds = np.searchsorted(top, np.arange((1 << _SPILL_BITS) + 1))
    for b in range(1 << _SPILL_BITS):
        if bounds[b + 1] > bounds[b]:
            with open(os.path.join(folder, f"{b:03d}"), "ab") as f:
                values[bounds[b] : bounds[b + 1]].tofile(f)


def _remove_orphan_spills(root) -> None:
    """Delete the sketch spill folders under ``root`` whose process is gone (killed runs)."""
    import shutil

    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return
    for d in Path(root).glob("dpstudio-sketch-*-*"):
        try:
            pid = int(d.name.split("-")[2])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)  # signal 0: does the process exist
            alive = True
        except ProcessLookupError:
            alive = False
        except (PermissionError, OSError, AttributeError):
            alive = True  # someone else's, or cannot tell: leave it
        if not alive:
            shutil.rmtree(d, ignore_errors=True)


def batch_row_hashes(frame, key: bytes, k: int = SKETCH_K, candidate: str | None = None):
    """``(sorted column names, unkeyed row hashes or None, rows, ColumnSetParts or None)`` of one
    batch, as :meth:`RowSketcher.add_hashed` takes it (thread-safe: reads the frame only);
    ``candidate``: the table's :func:`row_number_candidate`."""
    n = len(frame)
    if frame.shape[1] == 0 or n == 0:
        return sorted(str(c).strip() for c in frame.columns), None, n, None
    names, cells = _cells(frame)
    rows = _hash_rows(cells)
    return names, rows, n, column_set_parts(frame, names, cells, key, k, candidate)


class RowSketcher:
    """:func:`row_sketch` of a table read in batches, in memory bounded independently of the
    number of rows: :meth:`add` each batch in turn, then :meth:`finish` gives ``(sketch, n)``, bit
    for bit what ``row_sketch`` gives for all the rows at once.

    A batch may hold any number of rows; all hold the same columns (in any order), and a column's
    dtype may differ from batch to batch (cells hash by value: :func:`_cell_hashes`).  The
    column-set sketches (:func:`column_set_sketches`) of the batches are merged as they come
    (:attr:`column_sets`, complete after :meth:`finish`).  The copy
    number of a row needs the count of its copies in the whole table, so the unkeyed row hashes
    (8 bytes per row) are kept, in memory up to ``bucket_bytes`` and beyond that in bucket files
    of a private temporary folder (under ``spill_dir``, default the system's temporary folder),
    sorted by their top 8 bits: every copy of a row lands in the same bucket.  :meth:`finish`
    counts the copies bucket by bucket (a bucket with more than ``bucket_bytes`` of distinct row
    hashes is split again by the next 8 bits) and keeps the ``k`` smallest keyed hashes.  Memory:
    about 6 x ``bucket_bytes`` plus a batch; disk: 8 bytes per row.  The folder is deleted by
    :meth:`finish`, by :meth:`close` (or leaving a ``with`` block), when an :meth:`add` fails
    (the sketcher is then closed) and at garbage collection.  Not picklable (open temporary files).
    """

    def __init__(
        self, key: bytes, k: int = SKETCH_K, spill_dir=None, *, bucket_bytes: int = _SKETCH_BUCKET_BYTES, head=None
    ):
        if int(k) < 0 or int(bucket_bytes) < 8:
            raise ValueError(f"invalid row sketch size k={k!r}, bucket_bytes={bucket_bytes!r}")
        self.k = int(k)
        self.n = 0  # rows added so far
        self._sip = _sip_key(key)
        self._key = key
        #: the table's row-number candidate, from its first rows (``head``: a frame; else the first
        #: batches given to :meth:`add` are held until they hold HEAD_ROWS rows or finish comes)
        self._candidate: str | None = None if head is None else row_number_candidate(head)
        self._known = head is not None
        self._held: list = []
        self._parts: ColumnSetParts | None = None
        self._spill_dir = None if spill_dir is None else os.fspath(spill_dir)
        self._limit = int(bucket_bytes) // 8  # row hashes per bucket
        self._columns: list[str] | None = None
        self._buffer: list = []
        self._buffered = 0
        self._dir: str | None = None
        self._cleanup: list = []  # the finaliser deleting the folder, once there is one
        self._result: tuple | None = None
        self._closed = False

    def __enter__(self) -> RowSketcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def spill_folder(self) -> str | None:
        """The private temporary folder of the bucket files, once rows have spilled to disk."""
        return self._dir

    def add(self, frame) -> None:
        """Hash the rows of one batch (a pandas DataFrame); a batch without rows is ignored."""
        if len(frame) == 0:
            if self._closed:
                raise ValueError("this row sketcher is already finished or closed")
            return
        if not self._known:  # the row-number candidate is not known yet: from the first rows
            if self._closed:
                raise ValueError("this row sketcher is already finished or closed")
            self._held.append(frame)
            if sum(len(f) for f in self._held) >= HEAD_ROWS:
                self._release_held()
            return
        self.add_hashed(self.hash_batch(frame))

    def _release_held(self) -> None:
        import pandas as pd

        held, self._held = self._held, []
        if held:
            self._candidate = row_number_candidate(pd.concat(held, ignore_index=True).iloc[:HEAD_ROWS])
            self._known = True
            for f in held:
                self.add_hashed(self.hash_batch(f))

    def hash_batch(self, frame):
        """:func:`batch_row_hashes` of one batch with this sketcher's key: what :meth:`add_hashed`
        takes (thread-safe, so batches may be hashed on other threads)."""
        if not self._known:  # (add holds the first batches until it knows)
            raise ValueError(f"give the table's first {HEAD_ROWS} rows (head=) to hash batches on other threads")
        return batch_row_hashes(frame, self._key, self.k, self._candidate)

    @property
    def column_sets(self) -> dict:
        """The column-set sketches of the rows added so far (complete after :meth:`finish`)."""
        return self._parts.final() if self._parts is not None else {}

    def add_hashed(self, hashed) -> None:
        """Add one batch given as :meth:`hash_batch` of it (which may run on another thread:
        hashing is the costly part; the batches must still be added in one thread)."""
        if self._closed:
            raise ValueError("this row sketcher is already finished or closed")
        names, hashes, n, sets = hashed
        if n == 0:
            return
        try:
            if self._columns is None:
                self._columns = names
            elif names != self._columns:
                raise ValueError(f"a batch has the columns {names}, the first batch had {self._columns}")
            self.n += n
            if sets is not None:
                self._parts = sets if self._parts is None else self._parts.merge(sets, self.k)
            if names:
                self._buffer.append(hashes)
                self._buffered += n
                if self._buffered >= self._limit:
                    self._spill()
        except BaseException:
            self.close()
            raise

    def _spill(self) -> None:
        import shutil
        import tempfile
        import weakref

        import numpy as np

        if self._dir is None:
            # the PID in the name lets a later run remove the folder of a run that was killed
            self._dir = tempfile.mkdtemp(prefix=f"dpstudio-sketch-{os.getpid()}-", dir=self._spill_dir)
            self._cleanup.append(weakref.finalize(self, shutil.rmtree, self._dir, True))
        rows = np.concatenate(self._buffer)
        self._buffer, self._buffered = [], 0
        _scatter(rows, 64 - _SPILL_BITS, self._dir)

    def finish(self):
        """``(sketch, n)``: the ``k`` smallest keyed row hashes (sorted uint64) and the row count,
        as :func:`row_sketch` of all the rows added; deletes the temporary files."""
        import numpy as np

        done = self._result
        if done is not None:
            return done[0].copy(), done[1]
        if self._closed:
            raise ValueError("this row sketcher was closed before it finished")
        self._release_held()  # a table of fewer than HEAD_ROWS rows
        try:
            if self._dir is None:  # everything fitted in memory
                rows = np.concatenate(self._buffer) if self._buffer else np.empty(0, dtype=np.uint64)
                self._buffer = []
                best = _bottom_k_of_counts(*np.unique(rows, return_counts=True), self._sip, self.k)
            else:
                if self._buffer:
                    self._spill()
                best = self._buckets(self._dir, 64 - 2 * _SPILL_BITS)
            done = self._result = (np.unique(best), self.n)
        finally:
            self.close()
        return done[0].copy(), done[1]

    def _buckets(self, folder: str, shift: int):
        """The k smallest keyed hashes of the rows in the bucket files of ``folder``; a bucket with
        too many distinct row hashes is split into ``folder/<b>.d`` by the 8 bits from ``shift``."""
        import numpy as np

        best = np.empty(0, dtype=np.uint64)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if not os.path.isfile(path):
                continue
            counts = self._count(path, exact=shift < 0)
            if counts is None:  # too many distinct rows for memory: split by the next bits
                sub = path + ".d"
                os.mkdir(sub)
                with open(path, "rb") as f:
                    while len(chunk := np.fromfile(f, dtype=np.uint64, count=self._limit)):
                        _scatter(chunk, shift, sub)
                os.remove(path)
                part = self._buckets(sub, shift - _SPILL_BITS)
            else:
                os.remove(path)
                part = _bottom_k_of_counts(counts[0], counts[1], self._sip, self.k)
            best = _smallest(np.concatenate([best, part]), self.k)
        return best

    def _count(self, path: str, *, exact: bool):
        """(distinct row hashes, their counts) of a bucket file, read ``bucket_bytes`` at a time;
        None when it holds more than a bucket's worth of distinct hashes (unless ``exact``: then
        every hash in it is the same, as all of its 64 bits were used to sort it)."""
        import numpy as np

        u = np.empty(0, dtype=np.uint64)
        c = np.empty(0, dtype=np.int64)
        with open(path, "rb") as f:
            while len(chunk := np.fromfile(f, dtype=np.uint64, count=self._limit)):
                u, c = _merge_counts(u, c, *np.unique(chunk, return_counts=True))
                if len(u) > self._limit and not exact:
                    return None
        return u, c

    def close(self) -> None:
        """Delete the temporary files (also after an error); the sketcher cannot be used again."""
        self._closed = True
        self._buffer, self._buffered, self._held = [], 0, []
        for cleanup in self._cleanup:
            cleanup()


def _partition_row_hashes(frame):
    """Dask: the unkeyed row hashes of one partition (run on the workers)."""
    import numpy as np
    import pandas as pd

    rows = _row_hashes(frame) if len(frame) and frame.shape[1] else np.empty(0, dtype=np.uint64)
    return pd.Series(rows, dtype=np.uint64, name="row")


def _partition_smallest(counts, sip: bytes, k: int):
    """Dask: the k smallest keyed hashes of one partition of the rows' copy counts."""
    import numpy as np
    import pandas as pd

    u = counts.index.to_numpy(dtype=np.uint64)
    best = _bottom_k_of_counts(u, counts.to_numpy(dtype=np.int64), sip, k)
    return pd.Series(best, dtype=np.uint64, name="keyed")


def _partition_hashes(frame, key: bytes, k: int, candidate: str | None = None):
    """Dask: the unkeyed row hashes and the column-set sketches of one partition (on the workers)."""
    import numpy as np
    import pandas as pd

    if len(frame) == 0 or frame.shape[1] == 0:
        return pd.Series(np.empty(0, dtype=np.uint64), dtype=np.uint64, name="row"), None
    names, cells = _cells(frame)
    rows = pd.Series(_hash_rows(cells), dtype=np.uint64, name="row")
    return rows, column_set_parts(frame, names, cells, key, k, candidate)


def _merge_parts(a, b, k: int):
    """Dask: two partitions' :class:`ColumnSetParts` together (None: a partition without rows)."""
    return b if a is None else a if b is None else a.merge(b, k)


def _merge_tree(parts: list, merge):
    """Dask: the delayed pairwise merge of ``parts`` (delayed values), log-depth."""
    from dask import delayed

    while len(parts) > 1:
        parts = [delayed(merge)(*parts[i : i + 2]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def table_sketches_dask(ddf, key: bytes, k: int = SKETCH_K, head=None):
    """:func:`table_sketches` of the rows of a Dask DataFrame, bit for bit: ``(row sketch, n,
    column-set sketches)``; each partition is hashed once (:func:`row_sketch_dask` for the rest).
    ``head``: the table's first ``HEAD_ROWS`` rows (else read here with ``ddf.head``, which reads
    every partition). The ledger key is sent to the workers."""
    import operator

    import dask.dataframe as dd
    import numpy as np
    import pandas as pd
    from dask import delayed

    if len(ddf.columns) == 0:
        return np.empty(0, dtype=np.uint64), int(len(ddf)), {}
    if head is None:
        head = ddf.head(HEAD_ROWS, npartitions=-1, compute=True)
    candidate = row_number_candidate(head)
    hashed = [delayed(_partition_hashes)(p, key, k, candidate) for p in ddf.to_delayed()]
    rows = dd.from_delayed(
        [delayed(operator.getitem)(h, 0) for h in hashed],
        meta=pd.Series(dtype=np.uint64, name="row"),
        verify_meta=False,
    )
    sets = _merge_tree([delayed(operator.getitem)(h, 1) for h in hashed], partial(_merge_parts, k=k))
    sketch, n, merged = _rows_sketch_dask(rows, key, k, sets)
    return sketch, n, (merged.final() if merged is not None else {})


def _rows_sketch_dask(rows, key: bytes, k: int, *also):
    """The bottom-k sketch and count of a Dask Series of unkeyed row hashes (:func:`row_sketch_dask`),
    computed together with the delayed values ``also``."""
    import dask
    import numpy as np
    import pandas as pd

    counts = rows.value_counts(sort=False, split_out=max(1, rows.npartitions))
    parts = counts.map_partitions(_partition_smallest, _sip_key(key), k, meta=pd.Series(dtype=np.uint64, name="keyed"))
    # one graph of delayed values (not a mix of expressions and delayed), so a partition whose
    # row hashes and column-set sketches are both wanted is read and hashed once
    n, kept, *more = dask.compute(rows.size.to_delayed(), parts.to_delayed(), *also)
    kept = np.concatenate([np.asarray(p, dtype=np.uint64) for p in kept]) if kept else np.empty(0, np.uint64)
    return (np.unique(_smallest(kept, k)), int(n), *more)


def row_sketch_dask(ddf, key: bytes, k: int = SKETCH_K):
    """:func:`row_sketch` of the rows of a Dask DataFrame, bit for bit: ``(sketch, n)``.

    The row hashes are computed on the workers, partition by partition; the copies of each row
    are counted by a distributed ``value_counts`` (its result split over as many partitions as
    the input, so no worker holds every distinct row); each partition of the counts is expanded
    into (row, copy) pairs, keyed and cut to its k smallest on the workers, and only those are
    merged on the client.  The SipHash key derived from the ledger key is sent to the workers.
    Dask is an optional dependency, imported here."""
    import numpy as np
    import pandas as pd

    if len(ddf.columns) == 0:
        return np.empty(0, dtype=np.uint64), int(len(ddf))
    rows = ddf.map_partitions(_partition_row_hashes, meta=pd.Series(dtype=np.uint64, name="row"))
    return _rows_sketch_dask(rows, key, k)


def sketch_overlap(a, b, k: int = SKETCH_K) -> float:
    """Estimated share of rows in common: the larger of "share of A's rows that are B's" and
    "share of B's rows that are A's", from two bottom-k sketches (sorted uint64 arrays).

    A's sampled rows whose hash is at most B's largest kept hash are exactly the rows B would
    have kept if it had them, so the share of them found in B's sketch estimates A's containment
    in B (exact when both files have at most k rows)."""
    import numpy as np

    def contained(x, y) -> float:
        limit = y[-1] if len(y) >= k else np.uint64(2**64 - 1)
        xs = x[x <= limit]
        if len(xs) < min(_MIN_SAMPLES, len(x)) or len(xs) == 0:
            return 0.0
        return float(np.isin(xs, y, assume_unique=True).mean())

    if len(a) == 0 or len(b) == 0:
        return 0.0
    return max(contained(a, b), contained(b, a))


def _pack(sketch) -> bytes:
    import numpy as np

    return np.asarray(sketch, dtype="<u8").tobytes()


def _unpack(blob):
    import numpy as np

    return np.frombuffer(blob, dtype="<u8").astype(np.uint64)


def _digest(blob) -> str | None:
    return None if blob is None else hashlib.sha256(bytes(blob)).hexdigest()


def _file_body(sha, dataset, how, sketch, cols) -> dict:
    """A chain event recording a file version: its dataset and the digests of its sketches."""
    body = {"file": sha, "dataset": dataset, "how": how, "sketch": _digest(sketch)}
    if cols is not None:  # (ledgers from before column-set sketches chained no such key)
        body["cols"] = _digest(cols)
    return body


@dataclass(frozen=True)
class Fingerprint:
    """What the ledger knows about the rows of an input: its keyed row sketch, its row count and
    its column-set sketches (:func:`pack_column_set_sketches`; None: not computed)."""

    sketch: bytes
    rows: int
    columns: bytes | None = None


# ---- integrity: the hash chain, its head file, the key -----------------------------------------


def _canonical(body: dict) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _link(prev: str, seq: int, at: str, kind: str, body: str) -> str:
    return hashlib.sha256(f"{prev}\n{seq}\n{at}\n{kind}\n{body}".encode()).hexdigest()


def _key_id(key: bytes) -> str:
    return hmac.new(key, b"dpstudio ledger key id", hashlib.sha256).hexdigest()[:16]


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write-fsync-rename-fsync: the file is either the old or the new content after a crash."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(str(path.parent))


class _Con(sqlite3.Connection):
    """A connection that remembers whether its transaction appended to the chain."""

    appended = False


@dataclass
class _Replay:
    """The state the chain describes, rebuilt event by event."""

    datasets: dict = field(default_factory=dict)  # key -> {"label", "cap"}
    files: dict = field(default_factory=dict)  # file sha -> (dataset, sketch digest, column-sets digest)
    releases: dict = field(default_factory=dict)  # entry id -> (dataset, epsilon, delta)
    #: entry id -> what else the chain says of a release (output hash, type, recipe, input file):
    #: a reinit puts it back, so that a restored release's output stays protected by its bytes
    release_facts: dict = field(default_factory=dict)
    key_id: str | None = None
    reinits: list = field(default_factory=list)

    def apply(self, kind: str, b: dict) -> None:
        if kind in ("genesis", "migrated", "reinit", "key"):
            self.key_id = b.get("key_id", self.key_id)
            if kind == "reinit":
                self.reinits = list(b.get("earlier") or []) + [
                    {k: b.get(k) for k in ("time", "lost_head", "problems", "reason")}
                ]
        elif kind == "dataset":
            self.datasets[b["dataset"]] = {"label": b.get("label"), "cap": (None, None)}
        elif kind == "label":
            self.datasets.setdefault(b["dataset"], {"label": None, "cap": (None, None)})["label"] = b["label"]
        elif kind == "cap":
            self.datasets.setdefault(b["dataset"], {"label": None, "cap": (None, None)})["cap"] = (
                b.get("epsilon"),
                b.get("delta"),
            )
        elif kind == "file":
            self.files[b["file"]] = (b["dataset"], b.get("sketch"), b.get("cols"))
        elif kind == "release":
            self.releases[int(b["entry"])] = (b["dataset"], float(b["epsilon"]), float(b["delta"]))
            self.release_facts[int(b["entry"])] = {
                k: b.get(k) for k in ("output_sha256", "release_type", "recipe_sha256", "file")
            }


@dataclass(frozen=True)
class Reservation:
    """A release that has been admitted against the cap but not yet written."""

    id: int
    dataset: str
    epsilon: float
    delta: float
    output_path: str | None
    ledger_path: str
    identity: dict | None = None  # how the input file was resolved to ``dataset``
    before: dict | None = None  # the dataset's summary just before this reservation


def _desc(row) -> str:
    """How messages name a dataset: its name and the start of its key (never cell contents)."""
    name = row["label"] or row["name"] or "unnamed"
    return f"'{name}' ({row['sha256'][:12]}...)"


# ---- the ledger ----------------------------------------------------------------------------------


class Ledger:
    """The privacy budget ledger; cheap to create (one short connection per operation).

    ``problems`` lists what the integrity check found when the ledger was opened (empty: the
    tables agree with the hash chain and the chain with the head file)."""

    def __init__(self, path=None, *, busy_timeout: float = 120.0):
        self.path = Path(path).expanduser() if path else default_ledger_path()
        self.busy_timeout = busy_timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the ledger folder {self.path.parent}: {exc.strerror or exc}") from None
        if self.path.is_dir():
            raise UserError(f"ledger path is a folder, not a database file: {self.path}")
        self.key_path = self.path.with_name(self.path.name + ".key")
        self.head_path = self.path.with_name(self.path.name + ".head")
        self.settled_note: str | None = None  # what the last _settle must tell the user
        self._init_db()
        with self._tx() as con:
            self.problems = self._check(con)
        #: what opening the ledger did to in-flight releases of processes that ended (:meth:`recover`)
        self.recovered: list[dict] = []
        if not self.problems:  # a damaged ledger is left exactly as found until reinit
            self.recovered = self.recover()

    @classmethod
    def open_existing(cls, path=None) -> Ledger | None:
        """The ledger at ``path`` (default location) if there is one (its database or its head
        file exists), else None; never creates one from nothing."""
        p = Path(path).expanduser() if path else default_ledger_path()
        if not p.exists() and not p.with_name(p.name + ".head").exists():
            return None
        return cls(p, busy_timeout=120.0)

    # -- connections ------------------------------------------------------------------------
    def _connect(self) -> _Con:
        try:
            con = sqlite3.connect(str(self.path), timeout=self.busy_timeout, isolation_level=None, factory=_Con)
        except sqlite3.Error as exc:
            raise UserError(f"cannot open the privacy ledger {self.path}: {exc}") from None
        con.row_factory = sqlite3.Row
        try:
            con.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            con.close()
            if not _has_ledger_files(self.path):
                raise UserError(_NOT_A_LEDGER.format(path=self.path)) from None
            if _intact_on_disk(self.path):
                raise UserError(_access_problem(self.path, exc)) from None
            raise UserError(
                f"the privacy ledger {self.path} is not a usable SQLite database: {exc}; {REINIT_HINT}"
            ) from None
        return con

    def _begin(self, con) -> None:
        """``BEGIN IMMEDIATE``: takes the write lock at once, so concurrent processes serialise
        (waiting up to ``busy_timeout``)."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                con.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise UserError(
                        f"the privacy ledger {self.path} is busy (locked by another "
                        f"process for over {self.busy_timeout:g} s); try again"
                    ) from None
                time.sleep(0.05)

    @contextlib.contextmanager
    def _tx(self):
        """One write transaction; when it appended to the chain, the head file follows the commit."""
        con = self._connect()
        committed = False
        try:
            self._begin(con)
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            else:
                con.execute("COMMIT")
                committed = True
        except sqlite3.DatabaseError as exc:
            if _intact_on_disk(self.path):
                raise UserError(_access_problem(self.path, exc)) from None
            raise UserError(f"the privacy ledger {self.path} cannot be used: {exc}; {REINIT_HINT}") from None
        finally:
            con.close()
        if committed and con.appended:
            self._sync_head()

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
                raise UserError(
                    f"the privacy ledger {self.path} cannot use write-ahead logging "
                    f"(journal mode {mode}); put it on a local disk"
                )
        except sqlite3.DatabaseError as exc:
            raise UserError(
                f"the privacy ledger {self.path} is not a usable SQLite database: {exc}; {REINIT_HINT}"
            ) from None
        finally:
            con.close()
        with self._tx() as con:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UserError(
                    f"the privacy ledger {self.path} was written by a newer dpstudio "
                    f"(schema {version}); upgrade dpstudio"
                )
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    con.execute(stmt)
            for table, cols in _ADDED_COLUMNS.items():
                have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
                for name, decl in cols:
                    if name not in have:
                        con.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
            if version < SCHEMA_VERSION:
                con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            if con.execute("SELECT 1 FROM log LIMIT 1").fetchone():
                return
            if version == 1:  # a ledger from before the chain: chain what it holds
                con.execute(
                    "INSERT OR IGNORE INTO files(sha256, dataset, name, how, time) "
                    "SELECT sha256, sha256, name, 'file', created FROM datasets"
                )
                key = self._load_key() or self._new_key()
                self._rebuild_log(con, "migrated", {"key_id": _key_id(key), "from_schema": 1})
                self._set_head_written(con, "0")  # a chain made here: no head file yet
            elif version == 0 and not self.head_path.exists():
                # a brand-new ledger; with a head file beside it, it is a lost one (see _check)
                self._append(con, "genesis", {"key_id": _key_id(self._new_key()), "schema": SCHEMA_VERSION})
                self._set_head_written(con, "0")  # a chain made here: no head file yet

    # -- the chain, its head file and the key -----------------------------------------------------
    @staticmethod
    def _db_head(con) -> tuple[int, str]:
        row = con.execute("SELECT seq, hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
        return (int(row[0]), row[1]) if row else (0, _GENESIS)

    def _append(self, con, kind: str, body: dict) -> None:
        seq, prev = self._db_head(con)
        seq, at, text = seq + 1, _now(), _canonical(body)
        con.execute(
            "INSERT INTO log(seq, time, kind, body, prev, hash) VALUES (?,?,?,?,?,?)",
            (seq, at, kind, text, prev, _link(prev, seq, at, kind, text)),
        )
        con.appended = True

    def _write_head(self, seq: int, digest: str, con=None) -> bool:
        """Write the head file (False when it could not be: a lagging head file is valid, an
        ancestor, and is healed later).  With ``con`` (in a write transaction) the database
        remembers that this chain has a head file: from then on a missing one is a loss."""
        try:
            _write_atomic(self.head_path, json.dumps({"seq": seq, "hash": digest, "ledger": self.path.name}).encode())
        except OSError:
            return False
        if con is not None:
            self._set_head_written(con, "1")
        return True

    @staticmethod
    def _set_head_written(con, value: str) -> None:
        with contextlib.suppress(sqlite3.DatabaseError):
            con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('head_written', ?)", (value,))

    @staticmethod
    def _head_state(con) -> str | None:
        row = con.execute("SELECT value FROM meta WHERE key='head_written'").fetchone()
        return None if row is None else str(row[0])

    @classmethod
    def _head_may_be_unwritten(cls, con) -> bool:
        """Whether this chain may never have had a head file: it was made by this version (row
        '0', set with the chain's first commit) and no head file was written since.  No row:
        a database from before this was kept -- possibly an older copy put back -- which, as
        before, must have its head file."""
        return cls._head_state(con) == "0"

    def _sync_head(self) -> None:
        """Write the database's head to the head file, holding the write lock so that no later
        head can be overwritten by this one."""
        con = self._connect()
        try:
            self._begin(con)
            try:
                self._write_head(*self._db_head(con), con=con)
            finally:
                con.execute("COMMIT")
        except sqlite3.DatabaseError:
            pass  # the commit is done; the head file is brought up to date by the next check
        finally:
            con.close()

    def _read_head(self) -> tuple[dict | None, str | None]:
        try:
            head = json.loads(self.head_path.read_text(encoding="utf-8"))
            if not (isinstance(head, dict) and isinstance(head.get("seq"), int) and isinstance(head.get("hash"), str)):
                raise ValueError
            return head, None
        except FileNotFoundError:
            return None, None
        except (OSError, ValueError, UnicodeDecodeError):
            return None, f"its head file {self.head_path.name} is damaged"

    def _load_key(self) -> bytes | None:
        try:
            key = bytes.fromhex(self.key_path.read_text(encoding="ascii").strip())
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        return key if len(key) == 32 else None

    def _new_key(self) -> bytes:
        key = secrets.token_bytes(32)
        _write_atomic(self.key_path, key.hex().encode(), mode=0o600)
        with contextlib.suppress(OSError):
            os.chmod(self.key_path, 0o600)
        return key

    def needs_fingerprint(self, sha: str) -> bool:
        """False when the file (by SHA-256) is already resolved to a dataset with its row sketch
        stored: :meth:`_identify` then never reads a fingerprint, so the rows need not be hashed."""
        con = self._connect()
        try:
            f = con.execute(
                "SELECT dataset, how, sketch, cols FROM files WHERE sha256=?", (str(sha).lower(),)
            ).fetchone()
            if f is None or f["sketch"] is None or f["cols"] is None:
                return True
            used = con.execute("SELECT 1 FROM entries WHERE dataset=? LIMIT 1", (f["dataset"],)).fetchone()
            return not (used or f["how"] != _CAP_FIRST)
        except sqlite3.Error:
            return True
        finally:
            con.close()

    def fingerprint_rows(self, frame) -> Fingerprint:
        """The keyed sketch of a table's rows (:func:`row_sketch`) with this ledger's key."""
        key = self._load_key()
        if key is None:
            raise UserError(f"the privacy ledger's key file {self.key_path} is missing or damaged; {REINIT_HINT}")
        sketch, n, sets = table_sketches(frame, key)
        return Fingerprint(sketch=_pack(sketch), rows=int(n), columns=pack_column_set_sketches(sets))

    def _sketch_key(self) -> bytes:
        key = self._load_key()
        if key is None:
            raise UserError(f"the privacy ledger's key file {self.key_path} is missing or damaged; {REINIT_HINT}")
        return key

    def row_sketcher(self, spill_dir=None, *, head=None) -> RowSketcher:
        """A :class:`RowSketcher` with this ledger's key: the row sketch of a table read in
        batches (streamed releases); turn it into a fingerprint with :meth:`fingerprint_from`.

        Its spilled row hashes (unkeyed: a guessed row can be tested against them) go by default
        into a private folder beside the ledger, not the shared temporary folder, and the
        folders of earlier runs that were killed before they could delete theirs are removed
        here. ``head``: the table's first ``HEAD_ROWS`` rows (or all of them), which say which
        column may be a row number (:func:`row_number_candidate`); needed to hash batches on other
        threads (:meth:`RowSketcher.hash_batch`)."""
        key = self._sketch_key()
        if spill_dir is None:
            spill_dir = Path(f"{self.path}.sketch-spill")
            spill_dir.mkdir(mode=0o700, exist_ok=True)
            _remove_orphan_spills(spill_dir)
        return RowSketcher(key, spill_dir=spill_dir, head=head)

    def fingerprint_from(self, sketcher: RowSketcher) -> Fingerprint:
        """The fingerprint of the rows added to ``sketcher`` (finishing it): what
        :meth:`fingerprint_rows` gives for all of them at once."""
        if not hmac.compare_digest(sketcher._sip, _sip_key(self._sketch_key())):
            raise ValueError("these rows were sketched with another key than this ledger's")
        sketch, n = sketcher.finish()
        return Fingerprint(sketch=_pack(sketch), rows=int(n), columns=pack_column_set_sketches(sketcher.column_sets))

    def fingerprint_dask(self, ddf, head=None) -> Fingerprint:
        """The fingerprint of the rows of a Dask DataFrame (:func:`table_sketches_dask`; ``head``:
        its first ``HEAD_ROWS`` rows)."""
        sketch, n, sets = table_sketches_dask(ddf, self._sketch_key(), head=head)
        return Fingerprint(sketch=_pack(sketch), rows=int(n), columns=pack_column_set_sketches(sets))

    # -- integrity ------------------------------------------------------------------------------
    @staticmethod
    def _replay(rows, *, strict: bool = True) -> tuple[_Replay, list[str]]:
        """The state the chain describes; with ``strict``, stops at the first broken link."""
        rep, prev, problems = _Replay(), _GENESIS, []
        for i, r in enumerate(rows, start=1):
            if strict and r["seq"] != i:
                problems.append(f"event {i} of its hash chain is missing (the next one is {r['seq']})")
                break
            if strict and (r["prev"] != prev or _link(prev, r["seq"], r["time"], r["kind"], r["body"]) != r["hash"]):
                problems.append(
                    f"event {i} of its hash chain does not follow from the events before "
                    f"it (edited, removed or inserted)"
                )
                break
            try:
                rep.apply(r["kind"], json.loads(r["body"]))
            except (ValueError, KeyError, TypeError):
                if strict:
                    problems.append(f"event {i} of its hash chain is unreadable")
                    break
            prev = r["hash"]
        return rep, problems

    def _check(self, con, *, heal: bool = True) -> list[str]:
        """Everything that says the ledger lost or changed recorded facts (empty: intact).
        Brings a lagging head file up to date when all is well."""
        rows = con.execute("SELECT * FROM log ORDER BY seq").fetchall()
        rep, problems = self._replay(rows)
        self._reinits = rep.reinits
        head, bad_head = self._read_head()
        db_seq, db_hash = self._db_head(con)
        self._head = {"seq": db_seq, "hash": db_hash}
        if bad_head:
            problems.insert(0, bad_head)
        if head is not None:
            at = con.execute("SELECT hash FROM log WHERE seq=?", (head["seq"],)).fetchone()
            if head["seq"] > db_seq:
                problems.insert(
                    0,
                    f"it has lost part of its history: its head file {self.head_path.name} "
                    f"records {head['seq']} chained events (head {head['hash'][:12]}), "
                    f"the database {db_seq}",
                )
            elif head["seq"] > 0 and (at is None or at[0] != head["hash"]):
                problems.insert(
                    0,
                    f"its hash chain does not contain the head recorded in {self.head_path.name} "
                    f"(event {head['seq']}, {head['hash'][:12]}): the database was replaced "
                    f"or rewritten",
                )
        elif not rows:
            problems.insert(0, "its hash chain is missing (table log is empty)")
        elif db_seq > 1 and not bad_head and not self._head_may_be_unwritten(con):
            # the head file is what tells a database put back from an older copy: without it a
            # restored backup would silently reset every budget spent since.  Not refused only
            # while this chain, made by this version, never had one (meta.head_written = '0'): a
            # first head write that failed (a full disk; a crash right after an upgrade's or a
            # reinit's commit) is healed below
            problems.insert(
                0,
                f"its head file {self.head_path.name} is missing while its hash chain holds {db_seq} "
                f"events: the database may be an older copy put back, which would forget the releases "
                f"recorded since",
            )
        if not problems:
            problems += self._compare(con, rep)
        if rep.key_id is not None:
            key = self._load_key()
            if key is None:
                problems.append(f"its key file {self.key_path.name} is missing or damaged")
            elif _key_id(key) != rep.key_id:
                problems.append(f"its key file {self.key_path.name} was replaced")
        self.problems = problems
        if heal and not problems and rows and (head is None or head["seq"] < db_seq):
            self._write_head(db_seq, db_hash, con=con)  # e.g. a crash between a commit and its head write
        elif heal and not problems and head is not None and self._head_state(con) != "1":
            self._set_head_written(con, "1")  # a head file is there: from now on its loss counts
        return problems

    @staticmethod
    def _compare(con, rep: _Replay) -> list[str]:
        """The tables against the state the chain describes."""
        problems = []

        def diff(what: str, table: dict, chain: dict) -> None:
            lost = [k for k in chain if k not in table]
            extra = [k for k in table if k not in chain]
            changed = [k for k in chain if k in table and table[k] != chain[k]]
            if lost:
                problems.append(f"{len(lost)} {what} recorded in its hash chain are missing from the database")
            if extra:
                problems.append(f"{len(extra)} {what} in the database are not in its hash chain")
            if changed:
                problems.append(f"{len(changed)} {what} in the database differ from its hash chain")

        diff(
            "dataset(s)",
            {
                r[0]: (r[1], r[2], r[3])
                for r in con.execute("SELECT sha256, label, cap_epsilon, cap_delta FROM datasets")
            },
            {k: (d["label"], *d["cap"]) for k, d in rep.datasets.items()},
        )
        diff(
            "file fingerprint(s)",
            {
                r[0]: (r[1], _digest(r[2]), _digest(r[3]))
                for r in con.execute("SELECT sha256, dataset, sketch, cols FROM files")
            },
            rep.files,
        )
        diff(
            "release(s)",
            {
                int(r[0]): (r[1], r[2], r[3])
                for r in con.execute("SELECT id, dataset, epsilon, delta FROM entries WHERE status='complete'")
            },
            rep.releases,
        )
        return problems

    def _require_intact(self, con) -> None:
        problems = self._check(con)
        if problems:
            more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
            raise UserError(
                f"the privacy ledger {self.path} cannot be trusted: {problems[0]}{more}; "
                f"nothing was released or changed; {REINIT_HINT}"
            )

    def check(self) -> list[str]:
        """Run the integrity check now; returns the problems (empty: intact)."""
        with self._tx() as con:
            return self._check(con)

    def integrity(self) -> dict:
        """The chain's head, whether the ledger is intact, and every re-initialisation."""
        problems = self.check()
        return {
            "ledger": str(self.path),
            "head": dict(self._head),
            "intact": not problems,
            "problems": problems,
            "reinitialised": list(self._reinits),
        }

    def head_seq(self, digest: str) -> int | None:
        """The position of ``digest`` (e.g. a head printed in an earlier report) in the chain."""
        con = self._connect()
        try:
            row = con.execute("SELECT seq FROM log WHERE hash=?", (digest.strip().lower(),)).fetchone()
        finally:
            con.close()
        return int(row[0]) if row else None

    def _rebuild_log(self, con, kind: str, body: dict) -> None:
        """A new chain: ``kind`` (migrated / reinit) first, then every fact the tables hold."""
        self._append(con, kind, body)
        for d in con.execute("SELECT * FROM datasets ORDER BY created, sha256").fetchall():
            self._append(
                con,
                "dataset",
                {
                    "dataset": d["sha256"],
                    "label": d["label"],
                    "name": d["name"],
                    "declared_new": bool(d["declared_new"]),
                },
            )
            if d["cap_epsilon"] is not None or d["cap_delta"] is not None:
                self._append(con, "cap", {"dataset": d["sha256"], "epsilon": d["cap_epsilon"], "delta": d["cap_delta"]})
        for f in con.execute("SELECT * FROM files ORDER BY time, sha256").fetchall():
            self._append(
                con,
                "file",
                _file_body(f["sha256"], f["dataset"], f["how"], f["sketch"], f["cols"]),
            )
        for e in con.execute("SELECT * FROM entries WHERE status='complete' ORDER BY id").fetchall():
            self._append(con, "release", self._release_body(e))

    @staticmethod
    def _release_body(e) -> dict:
        return {
            "entry": int(e["id"]),
            "dataset": e["dataset"],
            "file": e["input_sha256"],
            "epsilon": e["epsilon"],
            "delta": e["delta"],
            "output_sha256": e["output_sha256"],
            "release_type": e["release_type"],
            "recipe_sha256": e["recipe_sha256"],
            "identity": json.loads(e["identity"]) if e["identity"] else None,
        }

    @staticmethod
    def _restore(con, rep: _Replay) -> dict:
        """Put back what the readable chain records and the tables lost (never less spend, never
        a looser cap); returns how many datasets, files and releases came back."""
        now, n = _now(), {"datasets": 0, "files": 0, "releases": 0, "corrected": 0, "sketches_dropped": 0}

        def ensure(key, label=None, cap=(None, None)):
            row = con.execute("SELECT cap_epsilon FROM datasets WHERE sha256=?", (key,)).fetchone()
            if row is None:
                taken = label and con.execute("SELECT 1 FROM datasets WHERE label=?", (label,)).fetchone()
                con.execute(
                    "INSERT INTO datasets(sha256, created, label, cap_epsilon, cap_delta) VALUES (?,?,?,?,?)",
                    (key, now, None if taken else label, *cap),
                )
                n["datasets"] += 1
            elif cap[0] is not None and (row[0] is None or cap[0] < row[0]):
                con.execute("UPDATE datasets SET cap_epsilon=?, cap_delta=? WHERE sha256=?", (*cap, key))

        for key, d in rep.datasets.items():
            ensure(key, d["label"], d["cap"])
        for sha, (key, sketch_digest, cols_digest) in rep.files.items():
            row = con.execute("SELECT dataset, sketch, cols FROM files WHERE sha256=?", (sha,)).fetchone()
            if row is not None and (_digest(row["sketch"]), _digest(row["cols"])) != (sketch_digest, cols_digest):
                # sketches edited since the chain recorded them (another file's, made not to match):
                # dropped, so that the file's next release computes them again from its rows
                con.execute("UPDATE files SET sketch=NULL, rows=NULL, cols=NULL WHERE sha256=?", (sha,))
                n["sketches_dropped"] += 1
            if row is None:
                ensure(key)
                con.execute(
                    "INSERT INTO files(sha256, dataset, how, time) VALUES (?,?,?,?)",
                    (sha, key, "restored from the chain", now),
                )
                n["files"] += 1
            elif row["dataset"] != key:  # a file moved to another dataset (a fresh budget): back
                ensure(key)
                con.execute("UPDATE files SET dataset=? WHERE sha256=?", (key, sha))
                n["corrected"] += 1
        for eid, (key, eps, delta) in rep.releases.items():
            row = con.execute("SELECT dataset, epsilon, delta, status FROM entries WHERE id=?", (eid,)).fetchone()
            if row is None:
                ensure(key)
                facts = rep.release_facts.get(eid) or {}
                con.execute(
                    "INSERT INTO entries(id, dataset, time, epsilon, delta, status, release_type, "
                    "output_sha256, recipe_sha256, input_sha256) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        eid,
                        key,
                        now,
                        eps,
                        delta,
                        "complete",
                        facts.get("release_type") or "restored from the chain",
                        facts.get("output_sha256"),  # its output, wherever it is, stays paid for
                        facts.get("recipe_sha256"),
                        facts.get("file"),
                    ),
                )
                n["releases"] += 1
            elif row["dataset"] != key or row["epsilon"] < eps or row["delta"] < delta or row["status"] != "complete":
                # a surviving entry edited to spend less, moved to another dataset or marked
                # unfinished: the chain's record of it (never less spend)
                ensure(key)
                con.execute(
                    "UPDATE entries SET dataset=?, epsilon=?, delta=?, status='complete' WHERE id=?",
                    (key, max(row["epsilon"], eps), max(row["delta"], delta), eid),
                )
                n["corrected"] += 1
        return n

    @classmethod
    def reinit(cls, path=None, *, reason: str = "") -> dict:
        """Accept the loss of a damaged ledger explicitly: keep what survives (tables and the
        readable part of the chain, whichever records more spend), start a new chain whose first
        event records the lost head and the problems found, and a new key if it was lost.
        A database SQLite cannot open is moved aside (``.damaged-<time>``) first."""
        p = Path(path).expanduser() if path else default_ledger_path()

        def move_aside() -> None:
            stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            for suffix in ("", "-wal", "-shm"):
                src = Path(str(p) + suffix)
                if src.exists():
                    os.replace(src, Path(f"{p}.damaged-{stamp}{suffix}"))

        try:
            led = cls(p)
        except UserError as exc:
            if not p.exists() or not _has_ledger_files(p):
                raise  # e.g. a data file given as --ledger: never moved aside nor replaced
            if _intact_on_disk(p):
                raise  # sound, but not reachable here: an access problem, not a loss to accept
            # the chain rows that still read are kept, the file is moved aside, the chain replayed
            salvaged = _salvage_log(p)
            move_aside()
            return cls(p)._reinit(reason, salvaged=salvaged, damage=str(exc))
        damage = led._damage()
        if damage is not None:
            # it opens, but pages are malformed (some queries fail, its checks may not): the same
            salvaged = _salvage_log(p)
            move_aside()
            return cls(p)._reinit(reason, salvaged=salvaged, damage=damage)
        return led._reinit(reason)

    def _damage(self) -> str | None:
        """SQLite's own finding when the database file is malformed (``PRAGMA quick_check``)."""
        con = self._connect()
        try:
            found = [r[0] for r in con.execute("PRAGMA quick_check").fetchall()]
        except sqlite3.DatabaseError as exc:
            return str(exc)
        finally:
            con.close()
        return None if found == ["ok"] else "; ".join(found[:3])

    def _reinit(self, reason: str, *, salvaged: list | None = None, damage: str | None = None) -> dict:
        with self._tx() as con:
            problems = self._check(con, heal=False)
            if damage is not None:
                problems = [f"the database file was damaged ({damage}); it was moved aside", *problems]
            if not problems:
                raise UserError(f"the privacy ledger {self.path} is intact: there is nothing to re-initialise")
            head, _ = self._read_head()
            rows = salvaged if salvaged is not None else con.execute("SELECT * FROM log ORDER BY seq").fetchall()
            rep, _ = self._replay(rows, strict=False)
            restored = self._restore(con, rep)
            key = self._load_key()
            new_key = key is None or (rep.key_id is not None and _key_id(key) != rep.key_id)
            if key is None or new_key:  # the old sketches cannot be compared with new ones
                key = self._new_key()
                con.execute("UPDATE files SET sketch=NULL, rows=NULL, cols=NULL")
            con.execute("DELETE FROM log")
            self._set_head_written(con, "0")  # the new chain has no head file yet
            at = _now()
            self._rebuild_log(
                con,
                "reinit",
                {
                    "time": at,
                    "key_id": _key_id(key),
                    "lost_head": head,
                    "problems": problems[:5],
                    "earlier": rep.reinits,
                    "reason": reason or None,
                    "restored": restored,
                    "new_key": new_key,
                },
            )
        return {
            "ledger": str(self.path),
            "reinitialised": at,
            "problems": problems,
            "restored": restored,
            "new_key": new_key,
            **self.integrity(),
        }

    # -- recovery ----------------------------------------------------------------------------
    def recover(self) -> list[dict]:
        """Roll back or forward every in-flight release whose process is gone; returns what
        was done (one dict per row)."""
        with self._tx() as con:
            return self._recover(con)

    def _recover(self, con) -> list[dict]:
        done = []
        rows = con.execute(f"SELECT * FROM entries WHERE status IN ({_IN_FLIGHT_SQL})", _IN_FLIGHT).fetchall()
        for r in rows:
            if _process_alive(r["pid"], r["pid_start_time"], r["host"]):
                continue
            action = self._settle(con, r)
            done.append({"id": r["id"], "status": r["status"], "action": action, "note": self.settled_note})
        return done

    def _complete(self, con, r, *, stamp: bool) -> None:
        """Mark a release complete and chain it, in the caller's transaction."""
        if stamp:
            con.execute("UPDATE entries SET status='complete', tmp_path=NULL, time=? WHERE id=?", (_now(), r["id"]))
        else:
            con.execute("UPDATE entries SET status='complete', tmp_path=NULL WHERE id=?", (r["id"],))
        self._append(con, "release", self._release_body(self._row_id(con, r["id"])))

    def _settle(self, con, r, *, own: bool = False) -> str:
        """Finish a dead (or failed) in-flight row; returns "completed" or "rolled back" (and
        sets :attr:`settled_note` to what the user must know about the output, or None).

        A *committing* row is past its point of no return: its output was hashed and only the
        rename was left, so the release stands whatever became of the output since:

        * the output holds the recorded bytes: complete;
        * the temporary file holds them: renamed into place (rolled forward) -- unless a file
          now stands at the output's path (put there after the crash), which is never written
          over: the output is then kept beside it under a name of its own, which the row records;
        * neither: the rename happened and the output was moved, changed or deleted before the
          row was marked complete (the temporary file disappears only by that rename; a rollback
          marks the row *aborting* before the file goes).  The release is charged, and ``ledger
          verify`` says what became of its output.

        ``own``: the live process's own release (:meth:`abort`), which renames over a file at
        the output's path as the user asked.  A committing row rolled back (its temporary file
        not holding the recorded bytes) loses its row here and keeps its file (:meth:`abort`
        removes it after the commit)."""
        self.settled_note = None
        if r["status"] == "committing" and r["output_path"] and r["output_sha256"]:
            out, tmp = r["output_path"], r["tmp_path"]
            if _is_output(out) and _sha256_file(out) == r["output_sha256"]:
                _remove_tmp(tmp)
                self._complete(con, r, stamp=False)
                return "completed"
            if tmp and _is_output(tmp) and _sha256_file(tmp) == r["output_sha256"]:
                if os.path.lexists(out) and not own:
                    kept = _beside(out, f"recovered-{r['id']}")
                    os.replace(tmp, kept)
                    con.execute("UPDATE entries SET output_path=? WHERE id=?", (kept, r["id"]))
                    self.settled_note = (
                        f"its output was kept as {kept}: another file stands at {out} and was not written over"
                    )
                else:
                    os.replace(tmp, out)
                _fsync_dir(os.path.dirname(out) or ".")
                _remove_tmp(tmp)
                self._complete(con, r, stamp=False)
                return "completed"
            if not (tmp and os.path.lexists(tmp)):
                self._complete(con, r, stamp=False)
                self.settled_note = f"its output {out} was moved, changed or deleted after it was written"
                return "completed"
        if r["status"] == "committing":
            # its temporary file does not hold the recorded bytes: the row goes in the caller's
            # transaction and the file is left (removing it before that commits could leave a
            # committing row without its file, taken for a rename; abort() removes it after)
            con.execute("DELETE FROM entries WHERE id=?", (r["id"],))
            return "rolled back"
        _remove_tmp(r["tmp_path"])
        con.execute("DELETE FROM entries WHERE id=?", (r["id"],))
        return "rolled back"

    # -- identity ------------------------------------------------------------------------------
    @staticmethod
    def _dataset_of(con, sha: str) -> str:
        """The dataset key a file SHA-256 (or a dataset key) belongs to; itself when unknown."""
        row = con.execute("SELECT dataset FROM files WHERE sha256=?", (sha,)).fetchone()
        return row[0] if row else sha

    def _new_file(self, con, sha, dataset, *, name, how, score=None, fp: Fingerprint | None = None) -> None:
        sketch, cols = (fp.sketch, fp.columns) if fp else (None, None)
        con.execute(
            "INSERT OR REPLACE INTO files(sha256, dataset, name, how, score, rows, sketch, cols, time) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            (sha, dataset, name, how, score, fp.rows if fp else None, sketch, cols, _now()),
        )
        self._append(con, "file", _file_body(sha, dataset, how, sketch, cols))

    def _store_sketches(self, con, f, fp: Fingerprint | None) -> None:
        """Record ``fp`` for the known file row ``f`` (its rows' and column sets' sketches) and chain it."""
        sketch, cols = (fp.sketch, fp.columns) if fp else (None, None)
        con.execute(
            "UPDATE files SET sketch=?, rows=?, cols=? WHERE sha256=?",
            (sketch, fp.rows if fp else None, cols, f["sha256"]),
        )
        self._append(con, "file", _file_body(f["sha256"], f["dataset"], f["how"], sketch, cols))

    def _new_dataset(self, con, key, *, name, label, declared_new=False) -> None:
        con.execute(
            "INSERT INTO datasets(sha256, name, created, label, declared_new) VALUES (?,?,?,?,?)",
            (key, name, _now(), label, int(declared_new)),
        )
        self._append(con, "dataset", {"dataset": key, "label": label, "name": name, "declared_new": bool(declared_new)})

    def _matches(self, con, sha, fp: Fingerprint | None) -> list[tuple[float, Any, bool]]:
        """Every known file whose rows overlap with ``fp`` by at least MATCH_THRESHOLD, as
        ``(share, file row, over one column less)``, the largest share first: over all columns
        (the row sketches), or else over all but one column of either file (the column-set
        sketches: one column added, dropped, recoded or renamed)."""
        if fp is None or not fp.sketch:
            return []
        mine = _unpack(fp.sketch)
        my_sets = unpack_column_set_sketches(fp.columns) if fp.columns else {}
        out = []
        for r in con.execute(
            "SELECT sha256, dataset, name, sketch, cols FROM files WHERE sketch IS NOT NULL AND sha256 != ?",
            (sha,),
        ).fetchall():
            share, by_columns = sketch_overlap(mine, _unpack(r["sketch"])), False
            if share < MATCH_THRESHOLD and my_sets and r["cols"]:
                # the same rows with one column added, dropped, recoded or renamed
                share = column_set_overlap(my_sets, unpack_column_set_sketches(r["cols"]))
                by_columns = True
            if share >= MATCH_THRESHOLD:
                out.append((share, r, by_columns))
        out.sort(key=lambda t: -t[0])
        return out

    def _best_match(self, con, sha, fp: Fingerprint | None):
        """The known file whose rows overlap most with ``fp`` (at least MATCH_THRESHOLD), or None."""
        found = self._matches(con, sha, fp)
        return (found[0][1], found[0][0], found[0][2]) if found else (None, 0.0, False)

    @staticmethod
    def _refuse_looser_cap(con, placeholder, key: str, *, why: str) -> None:
        """A cap set on a file before its first release (``placeholder``) whose release is charged
        to the dataset ``key`` (its rows match it, or the recipe names it: ``why``, where ``{ds}``
        stands for that dataset): ``key``'s cap must then be at least as strict, or the cap the
        user set for this file would never be met."""
        ds = con.execute("SELECT * FROM datasets WHERE sha256=?", (key,)).fetchone()
        cap_e, cap_d = placeholder["cap_epsilon"], placeholder["cap_delta"]
        looser = ds["cap_epsilon"] is None or ds["cap_epsilon"] > cap_e + TOLERANCE
        if cap_d is not None:
            looser = looser or ds["cap_delta"] is None or ds["cap_delta"] > cap_d + TOLERANCE
        if not looser:
            return
        spent = Ledger._spent(con, key)
        cap = f"ε={cap_e:.6g}" + (f", δ={cap_d:.6g}" if cap_d is not None else "")
        raise BudgetError(
            f"a cap ({cap}) was set on this file before its first release, but {why.replace('{ds}', _desc(ds))}, "
            f"to which its releases are charged (it has spent ε={spent['e']:.6g}), and that dataset's cap "
            f"is looser; nothing was released. Set the cap on that dataset ('dpstudio ledger set-cap "
            f"{ds['sha256'][:12]} ...'), or, if this really is a different dataset, release it with "
            f"--new-dataset"
        )

    def _identify(self, con, sha: str, *, file_name, label, fp, new_dataset: bool, write: bool):
        """Resolve an input file to its dataset (module docstring): returns (dataset key, identity).
        With ``write``, records the file (and a new dataset) in the caller's transaction."""
        label = (label or "").strip() or None
        ident = {"file": sha, "label_requested": label, "declared_new": bool(new_dataset)}
        f = con.execute("SELECT * FROM files WHERE sha256=?", (sha,)).fetchone()
        placeholder = None
        if f is not None:
            ds = con.execute("SELECT * FROM datasets WHERE sha256=?", (f["dataset"],)).fetchone()
            used = con.execute("SELECT 1 FROM entries WHERE dataset=? LIMIT 1", (f["dataset"],)).fetchone()
            if used or f["how"] != _CAP_FIRST:
                if new_dataset and not (ds["sha256"] == sha and ds["declared_new"]):
                    raise UserError(
                        f"this exact file is already in the ledger as dataset {_desc(ds)}: "
                        f"it cannot be declared a new dataset"
                    )
                if write and fp is not None and (f["sketch"] is None or (f["cols"] is None and fp.columns is not None)):
                    # a file known from before its rows (or column sets) were sketched: sketch it now
                    self._store_sketches(con, f, fp)
                if (
                    write
                    and label
                    and ds["label"] is None
                    and not con.execute("SELECT 1 FROM datasets WHERE label=?", (label,)).fetchone()
                ):
                    con.execute("UPDATE datasets SET label=? WHERE sha256=?", (label, ds["sha256"]))
                    self._append(con, "label", {"dataset": ds["sha256"], "label": label})
                return ds["sha256"], {**ident, "dataset": ds["sha256"], "how": "file"}
            placeholder = ds  # known only by a cap set before its first release: its rows still decide
        if label:
            ds = con.execute("SELECT * FROM datasets WHERE label=?", (label,)).fetchone()
            if ds is not None and (placeholder is None or ds["sha256"] != placeholder["sha256"]):
                if new_dataset:
                    raise UserError(
                        f"the dataset name '{label}' is already in the ledger ({_desc(ds)}); "
                        f"give the new dataset a name of its own"
                    )
                # a name may join versions of one dataset, never move a file's rows away from the
                # dataset they belong to (naming any other dataset would escape its cap); the
                # named dataset may be any of those the rows match
                found = self._matches(con, sha, fp)
                if found and all(r["dataset"] != ds["sha256"] for _, r, _ in found):
                    score, match, _ = found[0]
                    other = con.execute("SELECT * FROM datasets WHERE sha256=?", (match["dataset"],)).fetchone()
                    raise UserError(
                        f"the recipe names dataset {_desc(ds)}, but this file's rows are those of dataset "
                        f"{_desc(other)} (about {score:.0%} shared with '{match['name'] or '?'}'), to which "
                        f"its releases are charged: remove the dataset name (--dataset, or input.dataset "
                        f"in the recipe), or, if this really is a different dataset, give it a name of its "
                        f"own with --new-dataset"
                    )
                if placeholder is not None and placeholder["cap_epsilon"] is not None:
                    # a cap set on this very file before its first release: the named dataset's
                    # cap must be as strict, or naming it would escape the cap
                    self._refuse_looser_cap(con, placeholder, ds["sha256"], why=f"the recipe names dataset {_desc(ds)}")
                if write:
                    self._new_file(con, sha, ds["sha256"], name=file_name, how="name", fp=fp)
                return ds["sha256"], {**ident, "dataset": ds["sha256"], "how": "name"}
        match, score, by_columns = self._best_match(con, sha, fp)
        if match is not None and (placeholder is None or match["dataset"] != placeholder["sha256"]):
            if not new_dataset:
                if placeholder is not None and placeholder["cap_epsilon"] is not None:
                    why = (
                        f"its rows are those of dataset {{ds}} (about {score:.0%} shared with '{match['name'] or '?'}')"
                    )
                    self._refuse_looser_cap(con, placeholder, match["dataset"], why=why)
                if write:
                    how = "rows over all but one column" if by_columns else "rows"
                    self._new_file(con, sha, match["dataset"], name=file_name, how=how, score=score, fp=fp)
                return match["dataset"], {
                    **ident,
                    "dataset": match["dataset"],
                    "how": "rows",
                    "share_of_rows": round(score, 4),
                    "matched_file": match["name"],
                    **({"over_columns": "all but one"} if by_columns else {}),
                }
            ident["overrode_match"] = {"dataset": match["dataset"], "share_of_rows": round(score, 4)}
        if placeholder is not None:
            if write:
                self._store_sketches(con, f, fp)
            return placeholder["sha256"], {**ident, "dataset": placeholder["sha256"], "how": "file"}
        if write:
            self._new_dataset(con, sha, name=file_name, label=label, declared_new=new_dataset)
            self._new_file(con, sha, sha, name=file_name, how="declared new" if new_dataset else "new", fp=fp)
        return sha, {**ident, "dataset": sha, "how": "new"}

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
            "FROM entries WHERE dataset=?",
            (sha,),
        ).fetchone()
        return dict(row)

    @staticmethod
    def _spent_by_guarantee(con, sha: str) -> dict:
        """The complete releases' ε, δ and count by the kind of guarantee their release type
        gives (:data:`GUARANTEES`), in the order of that table."""
        got: dict[str, dict] = {}
        for r in con.execute(
            "SELECT release_type, SUM(epsilon) AS e, SUM(delta) AS d, COUNT(*) AS n FROM entries "
            "WHERE dataset=? AND status='complete' GROUP BY release_type",
            (sha,),
        ):
            # entries restored from the chain by a reinit (or older ones) have no release type
            kind = GUARANTEES.get(r["release_type"], "kind not recorded")
            have = got.setdefault(kind, {"epsilon": 0.0, "delta": 0.0, "releases": 0})
            have["epsilon"] += r["e"]
            have["delta"] += r["d"]
            have["releases"] += int(r["n"])
        order = list(dict.fromkeys(GUARANTEES.values()))
        return dict(sorted(got.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))

    def _summary(self, con, sha: str) -> dict:
        sha = self._dataset_of(con, sha)
        ds = con.execute("SELECT * FROM datasets WHERE sha256=?", (sha,)).fetchone()
        s = self._spent(con, sha)
        cap = None
        if ds is not None and ds["cap_epsilon"] is not None:
            cap = {"epsilon": ds["cap_epsilon"], "delta": ds["cap_delta"]}
        used_e, used_d = s["e"] + s["pe"], s["d"] + s["pd"]
        remaining = None
        if cap is not None:
            remaining = {
                "epsilon": _left(cap["epsilon"], used_e, LEAST_RELEASE_EPSILON),
                "delta": None if cap["delta"] is None else _left(cap["delta"], used_d),
            }
        out = {
            "dataset": sha,
            "name": ds["name"] if ds is not None else None,
            "dataset_name": ds["label"] if ds is not None else None,
            "cap": cap,
            "spent": {"epsilon": s["e"], "delta": s["d"]},
            "remaining": remaining,
            "releases": int(s["n"]),
        }
        kinds = self._spent_by_guarantee(con, sha)
        if len(kinds) > 1:  # the one "spent" adds guarantees of different kinds: show them apart
            out["spent_by_guarantee"] = kinds
        if ds is not None and ds["declared_new"]:
            out["declared_new"] = True
        if s["pn"]:
            out["in_progress"] = {"epsilon": s["pe"], "delta": s["pd"], "releases": int(s["pn"])}
        out["ledger"] = {
            "path": str(self.path),
            "head": dict(self._head),
            "intact": not self.problems,
            "reinitialised": list(self._reinits),
        }
        return out

    def summary(self, sha: str) -> dict:
        """Cap, spend (complete releases), remaining budget (also net of releases in progress)
        and release count of a dataset (or of the dataset a known file belongs to); an unknown
        dataset has spent nothing and no cap.  ``ledger``: the chain head and re-initialisations."""
        with self._tx() as con:
            self._check(con)
            return self._summary(con, sha)

    def datasets(self) -> list[dict]:
        with self._tx() as con:
            self._check(con)
            shas = [r[0] for r in con.execute("SELECT sha256 FROM datasets ORDER BY created, sha256")]
            return [self._summary(con, s) for s in shas]

    def resolve(self, dataset: str, *, create: bool = False) -> str:
        """The key of ``dataset``: a file path (fingerprinted), a dataset name, a full SHA-256 or
        a unique prefix (>= 6 hex digits) of a dataset or file SHA-256.  With ``create``, a file
        or full SHA-256 not yet in the ledger is added (so a cap can be set before the first
        release; its rows are still matched against known datasets at that release)."""
        dataset = str(dataset).strip()
        con = self._connect()
        try:
            if os.path.isfile(dataset):
                sha, name = _fingerprint(dataset), Path(dataset).name
            else:
                row = con.execute("SELECT sha256 FROM datasets WHERE label=?", (dataset,)).fetchone()
                if row:
                    return row[0]
                by_name = self._by_file_name(con, dataset)
                if by_name is not None:
                    return by_name
                if _HEX.match(dataset) and len(dataset) == 64:
                    sha, name = dataset.lower(), None
                elif _HEX.match(dataset):
                    if len(dataset) < 6:
                        raise UserError(f"dataset prefix {dataset!r} is too short: give at least 6 hex digits")
                    like = (dataset.lower() + "%",)
                    keys = {r[0] for r in con.execute("SELECT sha256 FROM datasets WHERE sha256 LIKE ?", like)}
                    keys |= {r[0] for r in con.execute("SELECT dataset FROM files WHERE sha256 LIKE ?", like)}
                    if len(keys) > 1:
                        raise UserError(
                            f"dataset prefix {dataset!r} is ambiguous: it matches {len(keys)} "
                            f"datasets; give more digits"
                        )
                    if not keys:
                        raise UserError(f"no dataset with SHA-256 starting {dataset!r} in the ledger {self.path}")
                    return keys.pop()
                else:
                    raise UserError(
                        f"{dataset!r} is neither a file, a dataset or file name in the ledger nor a dataset "
                        f"SHA-256 (prefix); 'dpstudio ledger list' shows the names"
                    )
            key = self._dataset_of(con, sha)
            known = con.execute("SELECT 1 FROM datasets WHERE sha256=?", (key,)).fetchone()
        finally:
            con.close()
        if known:
            return key
        if not create:
            raise UserError(f"dataset {sha[:12]}... ({dataset}) is not in the ledger {self.path}")
        fp = self._file_rows(dataset) if name else None
        with self._tx() as tx:
            self._require_intact(tx)
            if not tx.execute("SELECT 1 FROM files WHERE sha256=?", (sha,)).fetchone():
                match, _, _ = self._best_match(tx, sha, fp)
                if match is not None:
                    # the rows of a known dataset: a release of this file is charged to it, so a
                    # cap set on the file is that dataset's (a new dataset here would hold a cap
                    # that no release of the file ever meets); the file itself is not recorded, so
                    # it can still be declared a new dataset at its release
                    return match["dataset"]
                self._new_dataset(tx, sha, name=name, label=None)
                self._new_file(tx, sha, sha, name=name, how=_CAP_FIRST, fp=fp)
        return sha

    @staticmethod
    def _by_file_name(con, name: str) -> str | None:
        """The dataset whose file is called ``name`` (the ``name`` that ``ledger list`` prints, or
        a later version's name that ``ledger show`` lists; without its extension when no file has
        the exact name); None when no file has that name;
        UserError listing the candidates when files of several datasets do."""
        keys = sorted(
            {r[0] for r in con.execute("SELECT sha256 FROM datasets WHERE name=?", (name,))}
            | {r[0] for r in con.execute("SELECT dataset FROM files WHERE name=?", (name,))}
        )
        if not keys and name and not Path(name).suffix:  # "pums_1000" for pums_1000.csv
            keys = sorted(
                {r[0] for r in con.execute("SELECT sha256, name FROM datasets") if r[1] and Path(r[1]).stem == name}
                | {r[0] for r in con.execute("SELECT dataset, name FROM files") if r[1] and Path(r[1]).stem == name}
            )
        if len(keys) <= 1:
            return keys[0] if keys else None
        rows = [con.execute("SELECT * FROM datasets WHERE sha256=?", (k,)).fetchone() for k in keys]
        shown = "; ".join(
            f"{_desc(r)} created {r['created']}" if r is not None else f"{k[:12]}..."
            for k, r in zip(keys, rows, strict=True)
        )
        raise UserError(
            f"{name!r} is the file name of {len(keys)} datasets in the ledger: {shown}; give the start of "
            f"the SHA-256 you mean (at least 6 hex digits) or its dataset name"
        )

    def _file_rows(self, path) -> Fingerprint | None:
        """The row sketch of a data file (so later edited copies are recognised), if it loads."""
        from dpstudio.engine.data.loader import load_table

        try:
            return self.fingerprint_rows(load_table(path).frame)
        except (UserError, OSError, ValueError):
            return None

    def show(self, dataset: str) -> dict:
        """Summary plus every entry (newest last) and every file version of one dataset."""
        sha = self.resolve(dataset)
        with self._tx() as con:
            self._check(con)
            out = self._summary(con, sha)
            rows = con.execute("SELECT * FROM entries WHERE dataset=? ORDER BY id", (sha,)).fetchall()
            files = con.execute("SELECT * FROM files WHERE dataset=? ORDER BY time, sha256", (sha,)).fetchall()
        out["entries"] = [
            {
                "id": r["id"],
                "time": r["time"],
                "epsilon": r["epsilon"],
                "delta": r["delta"],
                "rdp": json.loads(r["rdp"]) if r["rdp"] else None,
                "release_type": r["release_type"],
                "recipe_sha256": r["recipe_sha256"],
                "input_sha256": r["input_sha256"],
                "identity": json.loads(r["identity"]) if r["identity"] else None,
                "output_path": r["output_path"],
                "output_sha256": r["output_sha256"],
                "report_path": r["report_path"],
                "report_sha256": r["report_sha256"],
                "artifact_path": r["artifact_path"],
                "artifact_sha256": r["artifact_sha256"],
                "status": r["status"],
            }
            for r in rows
        ]
        out["files"] = [
            {
                "sha256": f["sha256"],
                "name": f["name"],
                "how": f["how"],
                "share_of_rows": f["score"],
                "rows": f["rows"],
                "time": f["time"],
            }
            for f in files
        ]
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
        file_sha = _fingerprint(dataset) if os.path.isfile(str(dataset).strip()) else None
        sha = self.resolve(dataset, create=True)
        with self._tx() as con:
            self._require_intact(con)
            if file_sha is not None and not con.execute("SELECT 1 FROM files WHERE sha256=?", (file_sha,)).fetchone():
                # a file resolved by its rows to a known dataset: the cap may tighten that
                # dataset's, never loosen it (raising a cap is a choice made on the dataset itself)
                ds = con.execute("SELECT * FROM datasets WHERE sha256=?", (sha,)).fetchone()
                cap_e, cap_d = ds["cap_epsilon"], ds["cap_delta"]
                looser = cap_e is not None and epsilon > cap_e + TOLERANCE
                looser = looser or (cap_d is not None and (delta is None or delta > cap_d + TOLERANCE))
                if looser:
                    old = f"ε={cap_e:.6g}" + (f", δ={cap_d:.6g}" if cap_d is not None else "")
                    raise UserError(
                        f"the rows of {dataset} are those of dataset {_desc(ds)}, whose cap ({old}) this "
                        f"would loosen; to change that dataset's cap, name it: dpstudio ledger set-cap "
                        f"{sha[:12]} EPSILON [DELTA] (nothing was changed)"
                    )
            con.execute("UPDATE datasets SET cap_epsilon=?, cap_delta=? WHERE sha256=?", (epsilon, delta, sha))
            self._append(con, "cap", {"dataset": sha, "epsilon": epsilon, "delta": delta})
            return self._summary(con, sha)

    # -- the release protocol -----------------------------------------------------------------
    def _admit(self, con, key: str, eps: float, delta: float, identity: dict) -> None:
        """Refuse (BudgetError) a release that would exceed the dataset's cap."""
        ds = con.execute("SELECT * FROM datasets WHERE sha256=?", (key,)).fetchone()
        if ds is None or ds["cap_epsilon"] is None:
            return
        s = self._spent(con, key)
        used_e, used_d = s["e"] + s["pe"], s["d"] + s["pd"]
        cap_e, cap_d = ds["cap_epsilon"], ds["cap_delta"]
        over_e = used_e + eps > cap_e + TOLERANCE
        over_d = cap_d is not None and used_d + delta > cap_d + TOLERANCE
        if not (over_e or over_d):
            return
        left_e = _left(cap_e, used_e, LEAST_RELEASE_EPSILON)
        msg = f"release would spend ε={eps:.6g}"
        if delta or cap_d is not None:
            msg += f", δ={delta:.6g}"
        msg += f", the dataset has ε={left_e:.6g}"
        if cap_d is not None:
            msg += f", δ={_left(cap_d, used_d):.6g}"
        msg += f" left of its cap ε={cap_e:.6g}"
        if cap_d is not None:
            msg += f", δ={cap_d:.6g}"
        if s["pn"]:
            msg += f" ({int(s['pn'])} other release(s) in progress hold part of it)"
        msg += "; nothing was released"
        how = identity.get("how")
        if how == "rows":
            msg += (
                f". This file was recognised as dataset {_desc(ds)} by its rows"
                f"{' over all but one column' if identity.get('over_columns') else ''} (about "
                f"{identity['share_of_rows']:.1%} shared with the known file "
                f"'{identity.get('matched_file') or '?'}'); if it really is a different dataset, "
                f"release it with --new-dataset"
            )
        elif how == "name":
            msg += f" (the recipe names dataset {_desc(ds)})"
        else:
            msg += f" (dataset {_desc(ds)})"
        err = BudgetError(msg)
        err.dataset, err.matched_by = ds["sha256"], how
        err.needed_epsilon, err.left_epsilon = eps, left_e  # for the advice on how to go on
        err.delta_only = over_d and not over_e
        raise err

    @staticmethod
    def _check_sha(sha) -> str:
        if not (isinstance(sha, str) and _HEX.match(sha) and len(sha) == 64):
            raise UserError(f"invalid dataset fingerprint {sha!r} (expected a SHA-256 hex digest)")
        return sha.lower()

    def reserve(
        self,
        sha: str,
        *,
        dataset_name: str | None = None,
        loss,
        release_type: str | None = None,
        recipe_sha256: str | None = None,
        output_path=None,
        label: str | None = None,
        fingerprint: Fingerprint | None = None,
        new_dataset: bool = False,
        side_files: dict[str, str | os.PathLike] | None = None,
        columns: dict[str, list[str]] | None = None,
    ) -> Reservation:
        """Admit a release of the file ``sha`` against its dataset's cap (refusing with
        BudgetError) and record it as pending; spent = complete releases + releases of live
        processes still in flight.  The file is resolved to its dataset by SHA-256, by the
        recipe's dataset name (``label``) or by its rows (``fingerprint``); ``new_dataset``
        declares it a new dataset even if its rows match a known one (recorded).  A ledger
        whose integrity check fails refuses (UserError) until it is re-initialised.

        ``side_files`` (name -> path: the report, a density's side file) are the other files the
        release will write after its commit.  They are held with the output until
        :meth:`files_written`, so that no other release writes them meanwhile (UserError here)."""
        side_files = side_files or {}
        eps, delta, rdp_json = _as_loss(loss)
        sha = self._check_sha(sha)
        self._refuse_own_files(output_path)
        out = str(Path(output_path).resolve()) if output_path is not None else None
        ours = {} if out is None else {out: "output"}
        for what, p in side_files.items():
            self._refuse_own_files(p)
            ours.setdefault(str(Path(p).resolve()), what)
        with self._tx() as con:
            self._require_intact(con)
            self._recover(con)
            self._refuse_held(con, ours)
            key, identity = self._identify(
                con, sha, file_name=dataset_name, label=label, fp=fingerprint, new_dataset=new_dataset, write=True
            )
            before = self._summary(con, key)
            self._admit(con, key, eps, delta, identity)
            sides = sorted(p for p in ours if p != out)
            cur = con.execute(
                "INSERT INTO entries(dataset, time, epsilon, delta, rdp, release_type, recipe_sha256, "
                "output_path, status, pid, pid_start_time, host, input_sha256, identity, targets, columns) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    key,
                    _now(),
                    eps,
                    delta,
                    rdp_json,
                    release_type,
                    recipe_sha256,
                    out,
                    "pending",
                    os.getpid(),
                    _self_start(),
                    _HOST,
                    sha,
                    json.dumps(identity, sort_keys=True),
                    json.dumps(sides) if sides else None,
                    json.dumps(columns, sort_keys=True) if columns else None,
                ),
            )
            rid = int(cur.lastrowid)
        return Reservation(
            id=rid,
            dataset=key,
            epsilon=eps,
            delta=delta,
            output_path=out,
            ledger_path=str(self.path),
            identity=identity,
            before=before,
        )

    def _refuse_held(self, con, ours: dict[str, str]) -> None:
        """Refuse (UserError) a release whose files (resolved path -> what) another release is
        about to write (its output while in flight, its report or side file until it has
        written them: two releases to one name would both be charged and the later file would
        replace the earlier), or which a release completed since the caller's early check (that
        ran before the input was read; here under the lock).  Dead processes' rows were settled
        by the caller's ``_recover``."""
        if not ours:
            return
        busy = con.execute(
            "SELECT id, status, output_path, targets, pid, pid_start_time, host FROM entries "
            f"WHERE status IN ({_IN_FLIGHT_SQL}) OR targets IS NOT NULL",
            _IN_FLIGHT,
        ).fetchall()
        for r in busy:
            held = set(json.loads(r["targets"])) if r["targets"] else set()
            if r["status"] in _IN_FLIGHT:
                held.add(r["output_path"])
            elif not _process_alive(r["pid"], r["pid_start_time"], r["host"]):
                continue  # complete, and its process is gone: its files are written or never will be
            for path, what in ours.items():
                if path in held:
                    raise UserError(
                        f"release {r['id']} is writing {path} right now: choose another name for the "
                        f"{what} (nothing was spent)"
                    )
        for path, what in ours.items():
            done = con.execute(
                "SELECT id, output_path, output_sha256, report_path, report_sha256, artifact_path, "
                "artifact_sha256 FROM entries WHERE status IN ('complete', 'committing') "
                "AND (output_path=? OR report_path=? OR artifact_path=?) ORDER BY id DESC",
                (path, path, path),
            ).fetchall()
            if not done or not _is_output(path):
                continue  # only a name that a complete entry recorded is hashed here
            digest = _sha256_file(path)
            for d in done:
                for k in ("output", *_SIDE_FILES):
                    if d[f"{k}_path"] == path and d[f"{k}_sha256"] == digest:
                        raise UserError(
                            f"{path} holds the {_KIND_NAMES[k]} of release {d['id']}, completed while "
                            f"this one was reading its input: choose another name for the {what} "
                            "(nothing was spent)"
                        )

    def protected_before(self, dataset: str, names, *, exclude: int | None = None) -> dict[str, list[int]]:
        """Which of ``names`` (columns a release copies unchanged) earlier complete releases of
        ``dataset`` (its key, or a file SHA-256 of it) protected with noise: column -> their ids.
        Names compare without case.  Releases recorded before this was kept say nothing."""
        wanted = {str(n).casefold(): str(n) for n in names}
        if not wanted:
            return {}
        con = self._connect()
        try:
            key = self._dataset_of(con, dataset)
            rows = con.execute(
                "SELECT id, columns FROM entries WHERE dataset=? AND status='complete' AND columns IS NOT NULL "
                "ORDER BY id",
                (key,),
            ).fetchall()
        finally:
            con.close()
        found: dict[str, list[int]] = {}
        for r in rows:
            if exclude is not None and r["id"] == exclude:
                continue
            try:
                protected = json.loads(r["columns"]).get("protected") or []
            except (ValueError, AttributeError):
                continue
            for c in protected:
                name = wanted.get(str(c).casefold())
                if name is not None:
                    found.setdefault(name, []).append(int(r["id"]))
        return found

    def files_written(self, reservation: Reservation) -> None:
        """The release ``reservation`` has written (or given up on) the files it named in
        :meth:`reserve`'s ``side_files``: other releases may name them again (a written file
        recorded by :meth:`record_file` stays protected by its bytes)."""
        with self._tx() as con:
            con.execute("UPDATE entries SET targets=NULL WHERE id=?", (reservation.id,))

    def lookup(
        self,
        sha: str,
        *,
        dataset_name: str | None = None,
        label: str | None = None,
        fingerprint: Fingerprint | None = None,
    ) -> dict:
        """Read only: the summary of the dataset that a release of the file ``sha`` would be
        charged to, resolved exactly as :meth:`reserve` resolves it (by SHA-256, the recipe's
        dataset name, then its rows), with ``identity``.  A file known to no dataset: nothing
        spent, no cap.  What the budget panel shows before a release."""
        sha = self._check_sha(sha)
        with self._tx() as con:
            self._check(con)
            key, identity = self._identify(
                con, sha, file_name=dataset_name, label=label, fp=fingerprint, new_dataset=False, write=False
            )
            return {**self._summary(con, key), "identity": identity}

    def check_unrecorded(
        self,
        sha: str,
        *,
        loss,
        dataset_name: str | None = None,
        label: str | None = None,
        fingerprint: Fingerprint | None = None,
        new_dataset: bool = False,
        output_path=None,
        side_files: dict[str, str | os.PathLike] | None = None,
    ) -> dict:
        """For a release that will not be recorded (``--no-ledger``): resolve the file and refuse
        exactly as :meth:`reserve` would, but write nothing.  Returns the dataset's summary.
        Its files (``output_path``, ``side_files``) may not be ones a recorded release is writing
        either: it would replace them after that release was charged."""
        eps, delta, _ = _as_loss(loss)
        sha = self._check_sha(sha)
        ours = {} if output_path is None else {str(Path(output_path).resolve()): "output"}
        for what, p in (side_files or {}).items():
            ours.setdefault(str(Path(p).resolve()), what)
        with self._tx() as con:
            self._require_intact(con)
            self._refuse_held(con, ours)
            key, identity = self._identify(
                con, sha, file_name=dataset_name, label=label, fp=fingerprint, new_dataset=new_dataset, write=False
            )
            self._admit(con, key, eps, delta, identity)
            return {**self._summary(con, key), "identity": identity}

    def _row(self, con, reservation: Reservation):
        return self._row_id(con, reservation.id)

    @staticmethod
    def _row_id(con, rid: int):
        return con.execute("SELECT * FROM entries WHERE id=?", (rid,)).fetchone()

    def _refuse_own_files(self, output) -> None:
        """An output must never replace the ledger's database, journal, head or key file."""
        if output is None:
            return
        out = Path(output).resolve()
        own = {Path(str(self.path) + s).resolve() for s in ("", "-wal", "-shm", "-journal")}
        own |= {self.head_path.resolve(), self.key_path.resolve()}
        if out in own:
            raise UserError(f"the output path {out} is one of the privacy ledger's own files; choose another")

    def write_and_commit(
        self, reservation: Reservation, output_path, writer, *, folder: bool = False, on_commit=None
    ) -> str:
        """Write the output through ``writer(tmp_path)`` and record the release, crash-consistently
        (module docstring).  Returns the output's SHA-256.  On failure before the point of no
        return, the temporary files and the reservation are removed and the error re-raised.
        ``folder``: the output is a new folder the writer creates at ``tmp_path`` (a
        partitioned dataset), recorded by the SHA-256 of its files' names and hashes.
        ``on_commit()`` is called once the output is in place (just after the rename; a crash
        from the *committing* mark on is rolled forward anyway): from there nothing the caller
        does may report the release as failed (the CLI ignores a Ctrl-C)."""
        self._refuse_own_files(output_path)
        output = Path(output_path).resolve()
        directory = output.parent
        if output.is_dir():
            raise UserError(f"output path is a folder: {output}")
        if not directory.is_dir():
            raise UserError(f"output folder does not exist: {directory}")
        tmp = directory / _release_tmp_name(output.name, directory, f"{reservation.id}-{os.getpid()}")
        with self._tx() as con:
            r = self._row(con, reservation)
            if r is None or r["status"] != "pending":
                raise UserError(
                    f"release reservation {reservation.id} is no longer pending in the "
                    f"ledger {self.path} (status {r['status'] if r else 'deleted'})"
                )
            con.execute(
                "UPDATE entries SET status='writing', tmp_path=?, output_path=? WHERE id=?",
                (str(tmp), str(output), reservation.id),
            )
        try:
            writer(tmp)
            if not (tmp.is_dir() if folder else tmp.is_file()):
                raise RuntimeError(f"the output writer did not create {tmp}")
            _fsync_file(tmp)
            digest = _sha256_file(tmp)
            with self._tx() as con:
                con.execute(
                    "UPDATE entries SET status='committing', output_sha256=? WHERE id=?", (digest, reservation.id)
                )
        except BaseException:
            self._rollback(reservation)
            raise
        # point of no return: from here a crash is rolled forward by recovery
        try:
            os.replace(tmp, output)
        except OSError as exc:
            self._rollback(reservation)
            raise UserError(f"cannot write {output}: {exc.strerror or exc}") from None
        # the output is in place: tell the caller now, before anything else can be interrupted
        # (not before the rename: a rename that fails is rolled back, and the caller must not
        # have said "final" -- the GUI then reported a spend that never happened)
        if on_commit is not None:
            on_commit()
        # the output is in place and the row says *committing*: the release has happened.  A
        # failure to mark it complete (disk full, a locked database) must not be reported as a
        # failed release: recovery completes the row the next time the ledger is opened
        self.completion_pending = None
        try:
            _fsync_dir(str(directory))
            with self._tx() as con:
                self._complete(con, self._row(con, reservation), stamp=True)
        except Exception as exc:  # noqa: BLE001 - after the rename nothing may undo the release
            self.completion_pending = f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}"
        return digest

    def _rollback(self, reservation: Reservation) -> None:
        with self._tx() as con:
            r = self._row(con, reservation)
            if r is None or r["status"] not in _IN_FLIGHT:
                return
            # marked first: a crash from here leaves an *aborting* row that recovery rolls back
            # (its temporary file, even a complete one, goes) -- never a *committing* row without
            # its temporary file, which recovery takes for a finished rename (_settle)
            con.execute("UPDATE entries SET status='aborting' WHERE id=?", (reservation.id,))
        self._finish_abort(reservation.id, r["tmp_path"])

    def _finish_abort(self, entry_id: int, tmp: str | None) -> None:
        """The second step of a rollback: the temporary files, then the *aborting* row (which
        goes even when a file cannot: a stray file is left, never a row holding budget)."""
        with contextlib.suppress(OSError):
            _remove_tmp(tmp)
        with self._tx() as con:
            con.execute("DELETE FROM entries WHERE id=? AND status='aborting'", (entry_id,))

    def abort(self, reservation: Reservation) -> str:
        """Cancel a reservation that failed: its row and temporary files go.  A release already
        past its point of no return (marked *committing*: hashed output ready) is completed
        instead, so the ledger never loses a release that happened.  Idempotent.

        Returns ``"complete"`` when the release stands (the caller must report it as done, not
        as failed) and ``"rolled back"`` otherwise."""
        with self._tx() as con:
            r = self._row(con, reservation)
            if r is None:
                return "rolled back"
            if r["status"] == "complete":
                return "complete"
            if r["status"] == "committing":
                # this process's own release, interrupted: it finishes its rename as asked (over
                # a file the user chose to replace); a rollback only marks the row (below)
                if self._settle(con, r, own=True) == "completed":
                    return "complete"
            else:
                con.execute("UPDATE entries SET status='aborting' WHERE id=?", (reservation.id,))
        self._finish_abort(reservation.id, r["tmp_path"])
        return "rolled back"

    def output_sha256(self, reservation: Reservation) -> str | None:
        """The recorded SHA-256 of a reservation's output (None if it has none)."""
        con = self._connect()
        try:
            r = self._row(con, reservation)
        finally:
            con.close()
        return r["output_sha256"] if r is not None else None

    # -- checks ----------------------------------------------------------------------------------
    def verify(self, dataset: str | None = None) -> list[str]:
        """Problems with complete entries: outputs missing or changed since the release (e.g.
        overwritten by a later release to the same path), except edits the user acknowledged
        (:meth:`acknowledge`).  Empty list = all outputs intact."""
        return self._verify(dataset)[0]

    def acknowledged_edits(self, dataset: str | None = None) -> list[str]:
        """The release files whose present bytes differ from the release's but were acknowledged
        (:meth:`acknowledge`), one line each: what ``ledger verify`` accepts."""
        return self._verify(dataset)[1]

    def _verify(self, dataset: str | None) -> tuple[list[str], list[str]]:
        con = self._connect()
        try:
            q = "SELECT * FROM entries WHERE status='complete'"
            rows = con.execute(q + (" AND dataset=?" if dataset else ""), (dataset,) if dataset else ()).fetchall()
            edits = {(r[0], r[1], r[2]): (r[3], r[4]) for r in con.execute("SELECT * FROM edits")}
        finally:
            con.close()
        problems, accepted = [], []
        for r in rows:
            for kind, what in _KIND_NAMES.items():
                fp, digest = r[f"{kind}_path"], r[f"{kind}_sha256"]
                if kind != "output" and not (fp and digest):
                    continue  # no such file was written
                if not fp or not _is_output(fp):
                    problems.append(f"entry {r['id']}: {what} {fp} is missing")
                    continue
                now = _sha256_file(fp)
                if now == digest:
                    continue
                ack = edits.get((int(r["id"]), kind, now))
                if ack is None:
                    problems.append(f"entry {r['id']}: {what} {fp} changed since the release")
                else:
                    note = f": {ack[1]}" if ack[1] else ""
                    accepted.append(
                        f"entry {r['id']}: {what} {fp} edited since the release, acknowledged {ack[0]}{note}"
                    )
        return problems, accepted

    def acknowledge(self, path, note: str = "") -> dict:
        """Accept the present bytes of a file a complete release wrote (its output, report or
        density side file) that were edited since (a signed report, an annotated output), so that
        :meth:`verify` no longer reports it; any later change is reported again.  Refused for a
        file no release wrote and for one that is unchanged."""
        real = os.path.realpath(path)
        if not _is_output(real):
            raise UserError(f"{path} does not exist: there is nothing to acknowledge")
        con = self._connect()
        try:
            found = [
                (r, kind)
                for r in con.execute("SELECT * FROM entries WHERE status='complete' ORDER BY id").fetchall()
                for kind in _KIND_NAMES
                if r[f"{kind}_path"] and os.path.realpath(r[f"{kind}_path"]) == real
            ]
        finally:
            con.close()
        if not found:
            raise UserError(f"{path} is not a file a release recorded in the ledger {self.path} wrote")
        r, kind = found[-1]  # the latest release that wrote there (an earlier one's file was replaced)
        now = _sha256_file(real)
        if now == r[f"{kind}_sha256"]:
            raise UserError(f"{path} is unchanged since release {r['id']} wrote it: there is nothing to acknowledge")
        at = _now()
        with self._tx() as con:
            con.execute(
                "INSERT OR REPLACE INTO edits(entry, kind, sha256, time, note) VALUES (?,?,?,?,?)",
                (int(r["id"]), kind, now, at, (note or "").strip() or None),
            )
        return {
            "entry": int(r["id"]),
            "file": _KIND_NAMES[kind],
            "path": real,
            "released_sha256": r[f"{kind}_sha256"],
            "acknowledged_sha256": now,
            "acknowledged": at,
            "note": (note or "").strip() or None,
        }

    def record_file(self, entry_id: int, kind: str, path) -> str:
        """Record a file written beside the complete release ``entry_id``'s output (``kind``:
        "report", or "artifact" for a density's side file): its path and SHA-256, so that no
        later release writes over it (:meth:`paid_output`) and :meth:`verify` checks it.  Returns
        the hash.  Outside the hash chain, like the output's own path and hash."""
        if kind not in _SIDE_FILES:
            raise ValueError(f"unknown file kind {kind!r}")
        out = str(Path(path).resolve())
        digest = _sha256_file(out)
        with self._tx() as con:
            con.execute(
                # a *committing* row too: the release happened, and its completion is pending
                # (the ledger could not mark it; recovery does) -- its report is still its own
                f"UPDATE entries SET {kind}_path=?, {kind}_sha256=? "
                "WHERE id=? AND status IN ('complete', 'committing')",
                (out, digest, int(entry_id)),
            )
        return digest

    def paid_output(self, path) -> dict | None:
        """The complete release whose file ``path`` would write over, or None: the file at ``path`` is
        a recorded output, report or density side file (found by its bytes, wherever that release
        wrote it: moved, renamed or linked files too), or ``path`` lies inside a recorded
        partitioned dataset's folder, or it is the very file a release wrote there, edited since
        (``edited``: an annotated or signed report is still that release's). A copy elsewhere of a
        file whose recorded path still holds it is the user's to replace. A file holding a dataset
        version the ledger knows is answered with ``data`` (its raw input). ``what``/``path`` in the
        answer: which of its files, recorded where. Writing there would lose a release already paid
        for, which only :meth:`verify` would notice afterwards. Read only; an existing file is
        hashed once."""
        real = os.path.realpath(path)
        digest = None
        if os.path.isfile(real):
            try:
                digest = _sha256_file(real)
            except OSError as exc:
                raise UserError(
                    f"cannot read {path} to check that it holds no earlier release's output: {exc.strerror or exc}"
                ) from None
        con = self._connect()
        try:
            cols = "e.id, e.time, e.epsilon, e.delta, e.release_type, e.output_path, e.output_sha256, " + ", ".join(
                f"e.{k}_path, e.{k}_sha256" for k in _SIDE_FILES
            )
            same = " OR ".join(f"e.{k}_sha256=?" for k in ("output", *_SIDE_FILES))
            rows = con.execute(
                f"SELECT {cols}, d.label, d.name, d.sha256 FROM entries e JOIN datasets d ON d.sha256 = e.dataset "
                # a committing release is past its point of no return: its files are paid for
                f"WHERE e.status IN ('complete', 'committing') AND (({same}) OR ? LIKE e.output_path || '%' "
                "OR e.report_path=? OR e.artifact_path=?) ORDER BY e.id DESC",
                (*[digest] * (1 + len(_SIDE_FILES)), real, real, real),
            ).fetchall()
            data = None
            if digest is not None:
                data = con.execute(
                    "SELECT d.label, d.name, d.sha256 FROM files f JOIN datasets d ON d.sha256 = f.dataset "
                    "WHERE f.sha256=?",
                    (digest,),
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise UserError(f"the privacy ledger {self.path} cannot be used: {exc}; {REINIT_HINT}") from None
        finally:
            con.close()
        for r in rows:  # a target inside a recorded dataset folder would change its files
            folder = r["output_path"]
            if folder and real.startswith(folder.rstrip(os.sep) + os.sep) and os.path.isdir(folder):
                return _paid(r, "output", folder)
        if digest is None:
            return None
        if data is not None:  # a dataset's raw input (a version the ledger knows): private data
            return {"what": "input data", "data": True, "dataset": _desc(data), "path": str(path)}
        for r in rows:  # the very file a release wrote, edited since (annotated, signed): still its
            for kind in ("output", *_SIDE_FILES):
                recorded = r[f"{kind}_path"]
                if recorded and r[f"{kind}_sha256"] and os.path.realpath(recorded) == real:
                    return {**_paid(r, _KIND_NAMES[kind], recorded), "edited": r[f"{kind}_sha256"] != digest}
        for r in rows:
            for kind in ("output", *_SIDE_FILES):
                recorded = r[f"{kind}_path"]
                if r[f"{kind}_sha256"] != digest:
                    continue
                if recorded and os.path.realpath(recorded) != real and _holds(recorded, digest):
                    continue  # a copy: the release's own file is intact where it was written
                return _paid(r, _KIND_NAMES[kind], recorded)
        return None


#: files recorded beside a release's output (``Ledger.record_file``): column prefix -> name
_SIDE_FILES = {"report": "report", "artifact": "density side file"}
_KIND_NAMES = {"output": "output", **_SIDE_FILES}


def _holds(path, digest: str) -> bool:
    """Whether the file at ``path`` still has the SHA-256 ``digest``."""
    try:
        return os.path.isfile(path) and _sha256_file(path) == digest
    except OSError:
        return False


def _paid(r, what: str, path) -> dict:
    return {
        "what": what,
        "path": path,
        "id": r["id"],
        "time": r["time"],
        "epsilon": r["epsilon"],
        "delta": r["delta"],
        "release_type": r["release_type"],
        "dataset": _desc(r),
    }


def _fingerprint(path) -> str:
    from dpstudio.engine.data.loader import fingerprint

    return fingerprint(path)
