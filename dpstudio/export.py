"""Writing outputs: always to a temporary file in the target directory, then renamed atomically,
so a failed or cancelled export leaves no file behind.  Spreadsheet-formula protection (on by
default for CSV, TSV and XLSX) keeps a cell such as ``=HYPERLINK(...)`` or ``+1+1`` as text."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED
from dpstudio.errors import UserError

FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".xlsx": "xlsx",
    ".json": "json",
    ".html": "html",
    ".pdf": "pdf",
}
#: field separator of each delimited-text format.  Chosen from the format the caller passes (or the
#: target's name), never from the path being written, which is a temporary name.
_SEPARATORS = {"csv": ",", "tsv": "\t"}
#: OWASP "CSV Injection": a text cell starting with one of these is evaluated as a formula by Excel,
#: LibreOffice or Google Sheets (TAB and CR because some importers strip them and evaluate what
#: follows).  The full-width forms too: East Asian input methods turn them into the ASCII operators
#: when a cell is edited, and a quote on the rare text value starting with one costs little.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def format_for(path, default: str | None = None) -> str:
    fmt = FORMATS.get(Path(path).suffix.lower(), default)
    if fmt is None:
        raise UserError(f"cannot tell the output format of {path}: use .csv, .parquet or .xlsx")
    return fmt


def name_max(directory) -> int:
    """The longest file name (in bytes) the file system of ``directory`` accepts."""
    try:
        return int(os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows) or no answer
        return 255


def temp_stem(name: str, directory, *, room: int) -> str:
    """``name`` for use inside a temporary file name that adds ``room`` bytes to it: unchanged when
    that fits the file system's name limit, else its start and a hash of the whole name (a
    250-character output name must not fail only because its temporary name is longer)."""
    limit = name_max(directory) - room
    raw = os.fsencode(name)
    if len(raw) <= limit:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = raw[: max(limit - len(digest) - 1, 0)].decode("utf-8", errors="ignore")
    return f"{head}~{digest}"


@contextlib.contextmanager
def atomic_path(target, *, cancel=NEVER_CANCELLED):
    """Yield a temporary path beside ``target``; rename it over ``target`` only on success."""
    target = Path(target)
    directory = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UserError(f"output path is a directory: {target}")
    if not directory.is_dir():
        raise UserError(f"output directory does not exist: {directory}")
    # "." + name + "." + 8 random characters + ".dpstmp" must stay within the name limit
    fd, tmp = tempfile.mkstemp(
        prefix=f".{temp_stem(target.name, directory, room=20)}.", suffix=".dpstmp", dir=directory
    )
    os.close(fd)
    # mkstemp makes the file private (0600); a finished export gets the user's usual permissions
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield Path(tmp)
        cancel.check()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _formula_cells(s: pd.Series) -> np.ndarray | None:
    """Which cells of ``s`` are text starting with a formula trigger (None: no text at all).

    Only ``str`` cells count: in an object column numbers stay numbers, so -2 is never quoted."""
    try:
        hit = s.str.startswith(_FORMULA_START)  # NaN for the non-text cells of an object column
    except AttributeError:  # no text in the column (numbers, booleans, dates)
        return None
    return hit.astype("boolean").fillna(False).to_numpy(dtype=bool)


def _protect_text(s: pd.Series) -> pd.Series:
    risky = _formula_cells(s)
    if risky is None or not risky.any():
        return s
    return s.mask(risky, "'" + s.astype("string"))


def _protect_column(s: pd.Series) -> pd.Series:
    if isinstance(s.dtype, pd.CategoricalDtype):
        # randomised-response output: protect the category list, not a million cells
        cats = pd.Series(s.cat.categories, dtype=object)
        safe = _protect_text(cats)
        if safe is cats:
            return s
        if safe.is_unique:
            return s.cat.rename_categories(list(safe))
        # a category already spelled with the quote ('=x' beside =x): give up the dictionary
        return _protect_text(s.astype(object))
    if pd.api.types.is_string_dtype(s.dtype) or s.dtype == object:
        return _protect_text(s)
    return s


def protect_name(name):
    """A column name as a header cell: quoted when it starts with a formula trigger."""
    return "'" + name if isinstance(name, str) and name.startswith(_FORMULA_START) else name


def protect_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix every text cell and column name that a spreadsheet would evaluate with a quote.

    Text, object and categorical columns are covered; numeric columns are left alone (a negative
    number is a number, not a formula)."""
    out = frame.copy(deep=False)
    for i in range(frame.shape[1]):  # by position: duplicate column names stay distinct
        s = frame.iloc[:, i]
        safe = _protect_column(s)
        if safe is not s:
            out.isetitem(i, safe)  # type: ignore[arg-type]  # pandas documents "array-like"; the stubs omit Series
    out.columns = [protect_name(c) for c in frame.columns]
    return out


def _check_xlsx_text(frame: pd.DataFrame) -> None:
    """XLSX cannot hold ASCII control characters other than TAB, LF and CR; openpyxl's own error
    would quote the cell, so refuse by row and column number instead."""
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    for i, name in enumerate(frame.columns):
        if isinstance(name, str) and ILLEGAL_CHARACTERS_RE.search(name):
            raise UserError(
                f"column {i + 1}: its name contains a control character that XLSX cannot "
                f"store; write CSV or Parquet instead"
            )
        s = frame.iloc[:, i]
        categorical = isinstance(s.dtype, pd.CategoricalDtype)
        if categorical:
            s = pd.Series(s.cat.categories, dtype=object)
        elif not (pd.api.types.is_string_dtype(s.dtype) or s.dtype == object):
            continue
        try:
            bad = s.str.contains(ILLEGAL_CHARACTERS_RE.pattern, regex=True)
        except AttributeError:  # no text in the column
            continue
        flagged = bad.astype("boolean").fillna(False).to_numpy(dtype=bool)
        if flagged.any():
            where = "a category" if categorical else f"data row {int(np.flatnonzero(flagged)[0]) + 1}"
            raise UserError(
                f"{where} of column {name!r} contains a control character that XLSX cannot "
                f"store; write CSV or Parquet instead"
            )


def _write_xlsx(frame: pd.DataFrame, path: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    _check_xlsx_text(frame)
    wb = Workbook(write_only=True)
    ws = wb.create_sheet("release")

    def text(v: str) -> WriteOnlyCell:
        cell = WriteOnlyCell(ws, value=v)
        cell.data_type = "s"  # always a string cell: openpyxl would store "=..." as a formula
        return cell

    ws.append([text(str(c)) for c in frame.columns])
    columns = [frame.iloc[:, i].to_numpy(dtype=object) for i in range(frame.shape[1])]
    for row in zip(*columns, strict=True):
        cells: list[object] = []
        for v in row:
            if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA or v is pd.NaT:
                cells.append(None)
            elif isinstance(v, str):
                cells.append(text(v))
            elif isinstance(v, np.generic):
                cells.append(v.item())
            else:
                cells.append(v)
        ws.append(cells)
    wb.save(path)


def write_table(
    frame: pd.DataFrame, target, *, fmt: str | None = None, formula_protection: bool = True, cancel=NEVER_CANCELLED
) -> str:
    """Write ``frame`` atomically; returns the SHA-256 of the written file.

    ``fmt`` names the format ("csv", "tsv", "parquet", "xlsx", "json"); without it the format
    comes from ``target``'s suffix.  Callers that write to a temporary name must pass it.
    ``formula_protection`` (CSV, TSV, XLSX) quotes text cells and column names that a
    spreadsheet would evaluate."""
    fmt = fmt or format_for(target)
    with atomic_path(target, cancel=cancel) as tmp:
        if fmt in _SEPARATORS:
            data = protect_formulas(frame) if formula_protection else frame
            # CRLF (RFC 4180): the csv writer quotes a field holding any line-terminator
            # character, so a bare CR inside a value can no longer start a new row
            data.to_csv(tmp, index=False, sep=_SEPARATORS[fmt], lineterminator="\r\n")
        elif fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            # no pandas metadata: it would carry the index and dtypes of the raw frame
            table = table.replace_schema_metadata(None)
            pq.write_table(table, tmp)
        elif fmt == "xlsx":
            _write_xlsx(protect_formulas(frame) if formula_protection else frame, tmp)
        elif fmt == "json":
            frame.to_json(tmp, orient="records")
        else:
            raise UserError(f"cannot write a table as {fmt!r}")
        cancel.check()
    return file_sha256(target)


#: formats a streamed release can write block by block ("parquet-dataset": a folder of Parquet
#: files, one per block, named part-00000.parquet, ...)
STREAM_FORMATS = ("csv", "tsv", "parquet", "parquet-dataset")


class BlockWriter:
    """Write a table block by block to ``path`` (a temporary name the caller renames into place:
    :func:`atomic_path` or the ledger's commit), as :func:`write_table` writes it whole: CSV/TSV
    with CRLF rows and formula protection, Parquet one row group per block, without pandas
    metadata.  Use as a context manager; :meth:`write` each block in order."""

    def __init__(self, path, fmt: str, *, formula_protection: bool = True, background: bool = False) -> None:
        if fmt not in STREAM_FORMATS:
            raise UserError(f"a streamed release writes {', '.join(STREAM_FORMATS)}, not {fmt!r}")
        self.path, self.fmt, self.formula_protection = Path(path), fmt, formula_protection
        self.rows = 0
        self._parquet: Any = None
        self._schema: Any = None
        self._parts = 0
        self._started = False
        # background: blocks are written on a thread of their own (the writers release the GIL)
        # while the caller perturbs the next ones; at most two blocks wait in the queue
        self._queue: Any = None
        self._thread: Any = None
        self._error: BaseException | None = None
        if background:
            import queue
            import threading

            self._queue = queue.Queue(maxsize=2)
            self._thread = threading.Thread(target=self._drain, name="dpstudio-writer", daemon=True)
            self._thread.start()

    def __enter__(self) -> BlockWriter:
        return self

    def _drain(self) -> None:
        while True:
            frame = self._queue.get()
            if frame is None:
                return
            if self._error is None:
                try:
                    self._write(frame)
                except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                    self._error = exc

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, frame: pd.DataFrame) -> None:
        """Write the next block (in table order)."""
        if self._queue is None:
            self._write(frame)
            return
        self._raise()
        self._queue.put(frame)

    def _write(self, frame: pd.DataFrame) -> None:
        if self.fmt in _SEPARATORS:
            data = protect_formulas(frame) if self.formula_protection else frame
            data.to_csv(
                self.path,
                index=False,
                sep=_SEPARATORS[self.fmt],
                lineterminator="\r\n",
                mode="a" if self._started else "w",
                header=not self._started,
            )
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
            if self.fmt == "parquet-dataset":
                if self._schema is None:
                    self._schema = table.schema
                    self.path.mkdir(exist_ok=True)
                elif table.schema != self._schema:
                    table = table.cast(self._schema)
                pq.write_table(table, self.path / f"part-{self._parts:05d}.parquet")
                self._parts += 1
            else:
                if self._parquet is None:
                    self._schema = table.schema
                    self._parquet = pq.ParquetWriter(self.path, self._schema)
                elif table.schema != self._schema:
                    table = table.cast(self._schema)
                self._parquet.write_table(table)
        self._started = True
        self.rows += len(frame)

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
            self._raise()
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None
        elif self.fmt == "parquet-dataset":
            self.path.mkdir(exist_ok=True)  # an empty table: an empty folder
        elif not self._started:
            self.path.write_bytes(b"")

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self._thread is not None:
            # the release failed: stop writing (the temporary file is removed by the caller)
            self._error = self._error or exc
            try:
                self.close()
            except BaseException:  # noqa: BLE001 - the caller's own error is the one to report
                pass
            return
        self.close()


def write_text(text: str, target) -> str:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return file_sha256(target)


def write_bytes(data: bytes, target) -> str:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return file_sha256(target)


@contextlib.contextmanager
def atomic_folder(target, *, cancel=NEVER_CANCELLED):
    """Yield a temporary folder name beside ``target`` (the caller creates the folder); rename
    it to ``target`` (which must not exist) only on success."""
    import shutil

    target = Path(target)
    directory = target.parent if str(target.parent) else Path(".")
    tmp = Path(
        tempfile.mkdtemp(prefix=f".{temp_stem(target.name, directory, room=20)}.", suffix=".dpstmp", dir=directory)
    )
    tmp.rmdir()  # the writer makes it: an empty release is an empty folder it made
    try:
        yield tmp
        cancel.check()
        fsync_tree(tmp)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def fsync_tree(path) -> None:
    """fsync a file, or every file of a folder and the folder itself."""
    p = Path(path)
    for f in sorted(p.iterdir()) if p.is_dir() else [p]:
        with open(f, "rb+") as fh:
            os.fsync(fh.fileno())
    if p.is_dir() and os.name == "posix":
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def output_sha256(path) -> str:
    """The SHA-256 a release records for its output: the file's, or for a folder (a partitioned
    dataset) the SHA-256 of the sorted lines ``<file name> TAB <its SHA-256>``."""
    p = Path(path)
    if not p.is_dir():
        return file_sha256(p)
    lines = "".join(f"{f.name}\t{file_sha256(f)}\n" for f in sorted(p.iterdir()))
    return hashlib.sha256(lines.encode()).hexdigest()


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
