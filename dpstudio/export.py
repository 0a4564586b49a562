"""Writing outputs: always to a temporary file in the target directory, then renamed atomically,
so a failed or cancelled export leaves no file behind.  Spreadsheet-formula protection keeps a
cell such as ``=HYPERLINK(...)`` or ``+1+1`` as text."""
from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED
from dpstudio.errors import UserError

FORMATS = {".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet", ".xlsx": "xlsx",
           ".json": "json", ".html": "html", ".pdf": "pdf"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def format_for(path, default: str | None = None) -> str:
    fmt = FORMATS.get(Path(path).suffix.lower(), default)
    if fmt is None:
        raise UserError(f"cannot tell the output format of {path}: use .csv, .parquet or .xlsx")
    return fmt


@contextlib.contextmanager
def atomic_path(target, *, cancel=NEVER_CANCELLED):
    """Yield a temporary path beside ``target``; rename it over ``target`` only on success."""
    target = Path(target)
    directory = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UserError(f"output path is a directory: {target}")
    if not directory.is_dir():
        raise UserError(f"output directory does not exist: {directory}")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".dpstmp", dir=directory)
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


def protect_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix text cells that a spreadsheet would evaluate (=, +, -, @) with a quote."""
    out = {}
    for name, s in frame.items():
        if pd.api.types.is_string_dtype(s.dtype) or s.dtype == object:
            txt = s.astype("string")
            risky = txt.str.startswith(_FORMULA_START).fillna(False)
            out[name] = txt.mask(risky, "'" + txt) if risky.any() else s
        else:
            out[name] = s
    return pd.DataFrame(out, index=frame.index)


def _write_xlsx(frame: pd.DataFrame, path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("release")
    ws.append([str(c) for c in frame.columns])
    columns = [frame[c].to_numpy(dtype=object) for c in frame.columns]
    for row in zip(*columns):
        cells = []
        for v in row:
            if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
                cells.append(None)
            elif isinstance(v, str):
                from openpyxl.cell import WriteOnlyCell
                cell = WriteOnlyCell(ws, value=v)
                cell.data_type = "s"  # always a string cell: never parsed as a formula
                cells.append(cell)
            elif isinstance(v, np.generic):
                cells.append(v.item())
            else:
                cells.append(v)
        ws.append(cells)
    wb.save(path)


def write_table(frame: pd.DataFrame, target, *, fmt: str | None = None, formula_protection: bool = False,
                cancel=NEVER_CANCELLED) -> str:
    """Write ``frame`` atomically; returns the SHA-256 of the written file."""
    fmt = fmt or format_for(target)
    with atomic_path(target, cancel=cancel) as tmp:
        if fmt == "csv":
            data = protect_formulas(frame) if formula_protection else frame
            sep = "\t" if str(target).lower().endswith(".tsv") else ","
            data.to_csv(tmp, index=False, sep=sep)
        elif fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq
            table = pa.Table.from_pandas(frame, preserve_index=False)
            # no pandas metadata: it would carry the index and dtypes of the raw frame
            table = table.replace_schema_metadata(None)
            pq.write_table(table, tmp)
        elif fmt == "xlsx":
            _write_xlsx(frame, tmp)
        elif fmt == "json":
            frame.to_json(tmp, orient="records")
        else:
            raise UserError(f"cannot write a table as {fmt!r}")
        cancel.check()
    return file_sha256(target)


def write_text(text: str, target) -> str:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return file_sha256(target)


def write_bytes(data: bytes, target) -> str:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return file_sha256(target)


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
