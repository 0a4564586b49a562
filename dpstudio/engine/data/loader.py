"""Read a user's table from disk into a pandas DataFrame, or explain in one line why not.

Why this module exists: the first thing a user does is point the tool at a file they did not
write for us -- a CSV exported from Excel in cp1252, a Japanese Shift_JIS export, a Stata or
SAS file, a parquet dump.  Every failure must be a :class:`~dpstudio.errors.UserError` whose
one-line message says which file and what is wrong, never a parser traceback.

Design:

* We never hand-write a parser.  CSV-family files go through ``pyarrow.csv`` (multithreaded,
  the fast path) and fall back to ``pandas.read_csv`` for legal-but-odd files pyarrow rejects;
  the other formats use the pandas / pyarrow readers.
* Detection (encoding, delimiter, quote character, header) looks at a bounded sample only, so
  it costs the same for 1 KB and 10 GB files.  Everything the caller passes in ``options``
  overrides detection, and :attr:`LoadedTable.options` records what was actually used so that
  a recipe can replay the exact same load.
* Strings stay in pandas' ``str`` dtype (pyarrow-backed in pandas 3): no object columns, no
  copies of string data.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from pandas.io.parsers import TextParser  # type: ignore[attr-defined]  # public at runtime; pandas-stubs omit it

from dpstudio.engine.data.schema import NUMBERS_ARE_DOUBLES
from dpstudio.engine.progress import NEVER_CANCELLED, Cancelled, CancelToken, no_progress
from dpstudio.errors import UserError

__all__ = ["LoadedTable", "fingerprint", "load_table", "SUPPORTED_EXTENSIONS"]

_CHUNK = 1 << 20
#: bytes examined for encoding / binary detection
_SAMPLE_BYTES = 1 << 20
#: characters examined for delimiter / header detection (csv.reader over it 4 times)
_DIALECT_CHARS = 64 << 10
_DELIMITERS = (",", ";", "\t", "|")
#: pyarrow block size for the fast path: big enough that typical rows never straddle blocks,
#: small enough that both cores get work and in-flight parse buffers stay small (measured on
#: 1M x 20: 2 MiB peaks ~30 MB lower than 8 MiB at the same CPU time).
_BLOCK_SIZE = 2 << 20
#: default cap on one row's size; a cell bigger than this is not something a DP release can
#: use, and loading it needs several times its size in RAM.  Override with ``max_field_mb``.
_DEFAULT_MAX_FIELD_MB = 64

#: a format's reader: (path, options, progress, cancel) -> (frame, resolved options)
_Reader: TypeAlias = Callable[
    [Path, dict[str, Any], Callable[[float, str], None], CancelToken], tuple[pd.DataFrame, dict[str, Any]]
]


def _memory_pool() -> pa.MemoryPool:
    """jemalloc with immediate page return when available, else arrow's default pool.

    Why: the CSV parser's transient buffers are several times the final table; mimalloc (the
    default pool) keeps those pages resident, which made peak RSS ~3.5x the loaded frame.
    jemalloc with decay 0 hands them back to the OS as soon as they are freed.  Only our own
    reads use this pool; arrow's process-wide default is left alone.
    """
    global _POOL
    if _POOL is None:
        try:
            pool = pa.jemalloc_memory_pool()
            pa.jemalloc_set_decay_ms(0)
        except (NotImplementedError, pa.ArrowException):
            pool = pa.default_memory_pool()
        _POOL = pool
    return _POOL


_POOL: pa.MemoryPool | None = None

_CSV_EXT = {".csv": "csv", ".tsv": "csv", ".txt": "csv"}
_FORMATS = {
    **_CSV_EXT,
    ".parquet": "parquet",
    ".pq": "parquet",
    ".xlsx": "xlsx",
    ".dta": "stata",
    ".sas7bdat": "sas7bdat",
    ".xpt": "xport",
}
SUPPORTED_EXTENSIONS = tuple(sorted(_FORMATS))

_OPTION_KEYS = {
    "csv": {"delimiter", "encoding", "header", "quotechar", "max_field_mb"},
    "parquet": set(),
    "xlsx": {"sheet", "header"},
    "stata": set(),
    "sas7bdat": {"encoding"},
    "xport": {"encoding"},
}


@dataclass(frozen=True, eq=False)
class LoadedTable:
    """A loaded table plus everything needed to reproduce the load.

    ``eq=False``: two loads are compared by ``sha256`` and ``options``, not by comparing frames
    (DataFrame equality is elementwise and has no truth value).
    """

    frame: pd.DataFrame
    path: str
    format: str
    #: the resolved options actually used (JSON-serialisable), e.g. delimiter, encoding, header
    options: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""
    #: None: ``frame`` is the whole table.  Otherwise the file was too large to load and
    #: ``frame`` is a uniform sample of its rows (for previews and inference only, never a
    #: release's input); the value is the file's total number of rows.  ``sha256`` is then
    #: still the whole file's.
    sample_of: int | None = None

    @property
    def is_sample(self) -> bool:
        return self.sample_of is not None


def fingerprint(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of the file, streamed in 1 MiB chunks.

    Why: the report and the budget ledger identify a dataset by its content, not its name,
    so renaming a file cannot reset its privacy budget.  Streaming keeps memory flat.
    """
    return _fingerprint(path, None)


def _fingerprint(path: str | os.PathLike[str], stop: threading.Event | None) -> str:
    h = hashlib.sha256()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            if stop is not None and stop.is_set():
                return ""
            h.update(view[:n])
    return h.hexdigest()


def load_table(
    path: str | os.PathLike[str],
    options: dict[str, Any] | None = None,
    *,
    progress: Callable[[float, str], None] = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> LoadedTable:
    """Load ``path`` (format chosen by extension) into a :class:`LoadedTable`.

    ``options`` override detection (CSV: ``delimiter``, ``encoding``, ``header``,
    ``quotechar``, ``max_field_mb``; xlsx: ``sheet``, ``header``).  Raises
    :class:`UserError` with a one-line message for anything the user can fix.

    ``progress`` is called at 0.0 and 1.0 and between stages; ``cancel`` is polled between
    stages (detection, parse, conversion) -- a single pyarrow parse cannot be interrupted.
    The SHA-256 fingerprint is computed on a helper thread while the parser runs, and the
    load is refused if the file changes meanwhile, so ``sha256`` always describes the bytes
    that were parsed.
    """
    opts = dict(options or {})
    p = _check_path(path)
    fmt = _FORMATS[p.suffix.lower()]
    unknown = set(opts) - _OPTION_KEYS[fmt]
    if unknown:
        raise UserError(
            f"unknown load option(s) {sorted(unknown)} for {fmt} file {_q(p)}; "
            f"allowed: {sorted(_OPTION_KEYS[fmt]) or 'none'}"
        )
    progress(0.0, f"reading {p.name}")
    cancel.check()
    # Hash on a helper thread while the parser runs: hashlib releases the GIL, so on a
    # multi-core machine the fingerprint costs almost no wall time.
    before = p.stat()
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        sha_future = pool.submit(_fingerprint, p, stop)
        try:
            frame, resolved = _READERS[fmt](p, opts, progress, cancel)
            cancel.check()
            _check_frame(frame, p)
        except BaseException:
            stop.set()  # do not make the user wait for a hash nobody will use
            raise
        try:
            sha = sha_future.result()
        except OSError as e:
            raise UserError(f"cannot read {_q(p)}: {e.strerror or e}") from None
    after = p.stat()
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        # the fingerprint must describe exactly the bytes that were parsed
        raise UserError(f"{_q(p)} changed while it was being loaded; load it again")
    progress(1.0, f"loaded {len(frame):,} rows x {frame.shape[1]} columns")
    return LoadedTable(frame=frame, path=str(p), format=fmt, options=resolved, sha256=sha)


# --------------------------------------------------------------------------- path checks
def _check_path(path: str | os.PathLike[str]) -> Path:
    """Reject what cannot be a table before any reader sees it (cheap, specific messages)."""
    try:
        p = Path(os.fspath(path))
    except TypeError:
        raise UserError(f"not a file path: {path!r}") from None
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UserError(f"file not found: {_q(p)}") from None
    except PermissionError:
        raise UserError(f"permission denied: cannot access {_q(p)}") from None
    except OSError as e:
        raise UserError(f"cannot access {_q(p)}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{_q(p)} is a directory, not a data file")
    if not stat.S_ISREG(st.st_mode):
        # a FIFO blocks the first open() until someone writes to it, a device never ends:
        # refuse before anything opens it
        raise UserError(f"{_q(p)} is not a regular file (a pipe, device or socket); save the data to a file")
    ext = p.suffix.lower()
    if ext not in _FORMATS:
        raise UserError(
            f"unsupported file type '{ext or '(no extension)'}' for {_q(p)}; "
            f"supported: {', '.join(SUPPORTED_EXTENSIONS)}"
        )
    try:
        with open(p, "rb") as fh:
            fh.read(1)
    except PermissionError:
        raise UserError(f"permission denied: cannot read {_q(p)}") from None
    except OSError as e:
        raise UserError(f"cannot read {_q(p)}: {e.strerror or e}") from None
    if st.st_size == 0:
        raise UserError(f"{_q(p)} is empty")
    return p


def _check_names(names: Sequence[object], p: Path) -> None:
    """Column names must be non-empty and unique: roles and recipes refer to columns by name."""
    seen: set[str] = set()
    for i, name in enumerate(names, start=1):
        s = "" if name is None or (isinstance(name, float) and name != name) else str(name)
        if not s.strip():
            raise UserError(f"{_q(p)}: column {i} has an empty name; give every column a header")
        if s in seen:
            raise UserError(f"{_q(p)}: duplicate column name '{s}'; column names must be unique")
        seen.add(s)


def _check_frame(frame: pd.DataFrame, p: Path) -> None:
    if frame.shape[1] == 0:
        raise UserError(f"{_q(p)} contains no columns")
    _check_names(list(frame.columns), p)
    if len(frame) == 0:
        raise UserError(f"{_q(p)} has a header but no data rows")


def _q(p: object) -> str:
    """A path quoted for a one-line message (control characters such as newlines escaped)."""
    s = str(p)
    if not s.isprintable():
        s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)
    return f"'{s}'"


#: what a parser quotes from the file: quoted strings, and whatever follows a field count
#: ("Expected 3 columns, got 4: <the row>") or "invalid value" -- all private cell contents
_QUOTED = re.compile(r"""(?<![A-Za-z])b?'[^']*'?|b?"[^"]*"?""")  # after a letter: an apostrophe
_ROW_TAIL = re.compile(r"((?:columns|fields), got \d+|invalid value|value)\s*:.*$", re.IGNORECASE)


def _short(e: BaseException, limit: int = 160) -> str:
    """The first line of an exception message, trimmed, for a one-line UserError.

    Third-party readers quote cells of the file they choke on; those are private, so quoted
    text and row excerpts are replaced by '...' (the message keeps the reason and numbers)."""
    if isinstance(e, UnicodeDecodeError):
        return f"invalid {e.encoding} byte at offset {e.start}"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    msg = _ROW_TAIL.sub(lambda m: m.group(1) + ": ...", _QUOTED.sub("'...'", msg))
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


# --------------------------------------------------------------------------- CSV detection
def _read_sample(p: Path) -> tuple[bytes, bool]:
    with open(p, "rb") as fh:
        sample = fh.read(_SAMPLE_BYTES + 1)
    complete = len(sample) <= _SAMPLE_BYTES
    return sample[:_SAMPLE_BYTES], complete


def _looks_binary(sample: bytes) -> bool:
    """NUL bytes or >1% control characters: no text export looks like that."""
    if not sample:
        return False
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    if b"\x00" in sample:
        return True
    counts = np.bincount(np.frombuffer(sample, dtype=np.uint8), minlength=256)
    control = int(counts[:32].sum() - counts[[9, 10, 12, 13]].sum() + counts[127])
    return control > max(2, 0.01 * len(sample))


def _decodes(sample: bytes, encoding: str, complete: bool) -> bool:
    """Strict decode; a multi-byte character cut at the sample's end is not an error."""
    try:
        codecs.getincrementaldecoder(encoding)("strict").decode(sample, final=complete)
        return True
    except UnicodeDecodeError:
        return False


def _japanese_share(text: str) -> float:
    """Share of non-ASCII characters that are kana, CJK ideographs or full-width forms.

    Latin text encoded in cp1252 often also decodes as Shift_JIS (é = 0xE9 is a lead byte)
    but then yields stray half-width katakana and rare ideographs mixed with Latin letters;
    genuine Japanese text is nearly all kana/kanji.
    """
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    high = codes[codes > 0x7F]
    if high.size == 0:
        return 0.0
    jp = (
        ((high >= 0x3000) & (high <= 0x30FF))  # CJK punctuation, hiragana, katakana
        | ((high >= 0x4E00) & (high <= 0x9FFF))  # CJK unified ideographs
        | ((high >= 0xFF01) & (high <= 0xFF5E))  # full-width ASCII forms
    )
    return float(jp.mean())


def _detect_encoding(sample: bytes, complete: bool) -> str:
    """UTF-8 (with/without BOM), then Shift_JIS vs cp1252, then latin-1 as a last resort.

    Order matters: valid UTF-8 is almost never accidental, so it wins; among the legacy
    single/double-byte code pages we discriminate by what the decoded text looks like.
    """
    if sample.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if _decodes(sample, "utf-8", complete):
        return "utf-8"
    sjis = next((e for e in ("shift_jis", "cp932") if _decodes(sample, e, complete)), None)
    cp1252 = _decodes(sample, "cp1252", complete)
    if sjis is not None:
        text = codecs.getincrementaldecoder(sjis)("replace").decode(sample, final=complete)
        if not cp1252 or _japanese_share(text) >= 0.9:
            return sjis
    if cp1252:
        return "cp1252"
    return "latin-1"


def _sample_text(sample: bytes, encoding: str, complete: bool) -> str:
    text = codecs.getincrementaldecoder(encoding)("replace").decode(
        sample[: _DIALECT_CHARS * 4], final=complete and len(sample) <= _DIALECT_CHARS * 4
    )
    if len(text) > _DIALECT_CHARS or not complete:
        cut = text.rfind("\n", 0, _DIALECT_CHARS)
        text = text[: cut + 1] if cut > 0 else text[:_DIALECT_CHARS]
    return text.lstrip("\ufeff")


def _rows(text: str, delimiter: str, quotechar: str, limit: int = 200) -> list[list[str]]:
    out = []
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar=quotechar)
    try:
        for row in reader:
            if row:
                out.append(row)
                if len(out) >= limit:
                    break
    except csv.Error:
        pass
    return out


def _detect_delimiter(text: str, quotechar: str, ext: str, complete: bool) -> str:
    """The candidate giving the most consistent field count (>1) across sampled records.

    csv.Sniffer alone is unreliable (it guesses from character frequencies and often fails on
    small or quoted samples), so we parse the sample with each candidate and score the result.
    """
    order = ("\t",) + tuple(d for d in _DELIMITERS if d != "\t") if ext == ".tsv" else _DELIMITERS
    best, best_key = None, (0.0, 0)
    for d in order:
        rows = _rows(text, d, quotechar)
        if not complete and len(rows) > 1:
            rows = rows[:-1]  # the last record may be cut by the sample boundary
        if not rows:
            continue
        counts = np.array([len(r) for r in rows])
        values, freq = np.unique(counts, return_counts=True)
        mode = int(values[np.argmax(freq)])
        if mode < 2:
            continue
        key = (float(freq.max()) / len(counts), mode)
        if key > best_key:
            best, best_key = d, key
    if best is None:
        return "\t" if ext == ".tsv" else ","
    return best


def _detect_quotechar(text: str, delimiter: str) -> str:
    """'"' unless csv.Sniffer clearly sees single-quoted fields."""
    if "'" not in text:
        return '"'
    try:
        q = csv.Sniffer().sniff(text[:16384], delimiters=delimiter).quotechar
    except csv.Error:
        return '"'
    return q if q in ("'", '"') else '"'


def _numeric_like(cell: str) -> bool:
    try:
        float(cell.replace(",", "."))
        return True
    except ValueError:
        return False


def _detect_header(first_row: list[str]) -> bool:
    """A first row with any numeric or empty cell is data; all-text first rows are headers.

    Header names are practically never numbers, while data rows nearly always contain one.
    An all-text first row is taken as a header (the common case); pass ``header=False`` for
    header-less all-text files.  A header with an empty cell is still a header (and rejected
    later with a clear message) when the rest of the row is text.
    """
    cells = [c.strip() for c in first_row]
    nonempty = [c for c in cells if c]
    if not nonempty:
        return False
    return not any(_numeric_like(c) for c in nonempty)


# --------------------------------------------------------------------------- CSV reading
@dataclass(frozen=True)
class CsvDialect:
    """How a delimited text file is read: the resolved options a recipe records, plus what the
    parser needs besides (all detected from a bounded sample)."""

    resolved: dict[str, Any]
    text_columns: list[str]
    quoted_newlines: bool
    ncols: int
    max_field: int


def csv_dialect(p: Path, opts: dict[str, Any]) -> CsvDialect:
    """Detect (or take from ``opts``) encoding, delimiter, quote character and header of ``p``."""
    sample, complete = _read_sample(p)
    encoding = opts.get("encoding")
    if encoding is None:
        if _looks_binary(sample):
            raise UserError(f"{_q(p)} looks like a binary file, not delimited text")
        encoding = _detect_encoding(sample, complete)
    else:
        try:
            encoding = codecs.lookup(encoding).name
        except (LookupError, TypeError):
            raise UserError(f"unknown encoding {encoding!r} for {_q(p)}") from None
    text = _sample_text(sample, encoding, complete)
    if not text.strip():
        raise UserError(f"{_q(p)} is empty")
    quotechar = opts.get("quotechar")
    delimiter = opts.get("delimiter")
    if delimiter is None:
        delimiter = _detect_delimiter(text, quotechar or '"', p.suffix.lower(), complete)
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\r\n":
        raise UserError(f"delimiter must be one character, got {delimiter!r}")
    if quotechar is None:
        quotechar = _detect_quotechar(text, delimiter)
    if quotechar is not False and (not isinstance(quotechar, str) or len(quotechar) != 1):
        raise UserError(f"quotechar must be one character (or false), got {quotechar!r}")
    first = _rows(text, delimiter, quotechar or '"', limit=1)
    header = opts.get("header")
    if header is None:
        header = _detect_header(first[0]) if first else True
    if not isinstance(header, bool):
        raise UserError(f"header option must be true or false, got {header!r}")
    if header and first:
        _check_names(first[0], p)  # fail before parsing a large file
    max_field_mb = opts.get("max_field_mb", _DEFAULT_MAX_FIELD_MB)
    if not isinstance(max_field_mb, (int, float)) or max_field_mb <= 0:
        raise UserError(f"max_field_mb must be a positive number, got {max_field_mb!r}")
    resolved = {
        "delimiter": delimiter,
        "encoding": encoding,
        "header": header,
        "quotechar": quotechar,
    }
    if "max_field_mb" in opts:
        resolved["max_field_mb"] = max_field_mb
    return CsvDialect(
        resolved=resolved,
        text_columns=_leading_zero_columns(text, delimiter, quotechar, header, complete),
        quoted_newlines=_has_quoted_newlines(text, delimiter, quotechar),
        ncols=len(first[0]) if first else 0,
        max_field=int(max_field_mb * 2**20),
    )


def _read_csv(
    p: Path, opts: dict[str, Any], progress: Callable[[float, str], None], cancel: CancelToken
) -> tuple[pd.DataFrame, dict[str, Any]]:
    dialect = csv_dialect(p, opts)
    progress(0.2, "parsing")
    cancel.check()
    frame = _read_csv_arrow(
        p,
        {**dialect.resolved, "text_columns": dialect.text_columns},
        dialect.ncols,
        dialect.max_field,
        quoted_newlines=dialect.quoted_newlines,
        cancel=cancel,
    )
    progress(0.9, "parsed")
    return frame, dialect.resolved


_LEADING_ZERO = re.compile(r"^0[0-9]+$")
_DIGITS = re.compile(r"^[0-9]+$")


def _leading_zero_columns(
    text: str, delimiter: str, quotechar: str | Literal[False], header: bool, complete: bool
) -> list[str]:
    """Columns of digit codes with a leading zero in the sample ("025", zip "02134"): read as
    text, since parsing them as integers loses the zeros (025 and 25 are different codes).

    Like the other detections it looks at the sample only: a code column whose first
    zero-padded value comes later is read as integers."""
    rows = _rows(text, delimiter, quotechar or '"', limit=2000)
    if not complete and len(rows) > 1:
        rows = rows[:-1]  # the last record may be cut by the sample boundary
    if not rows:
        return []
    names = [str(c) for c in rows[0]] if header else [f"column_{i + 1}" for i in range(len(rows[0]))]
    body = rows[1:] if header else rows
    out = []
    for i, name in enumerate(names):
        cells = [r[i].strip() for r in body if i < len(r) and r[i].strip()]
        if any(_LEADING_ZERO.match(c) for c in cells) and all(_DIGITS.match(c) for c in cells):
            out.append(name)
    return out


def _arrow_encoding(encoding: str) -> str:
    # pyarrow decodes UTF-8 natively and skips a UTF-8 BOM itself; anything else goes through
    # Python's codecs (slower, but only legacy files pay for it)
    return "utf8" if encoding in ("utf-8", "utf-8-sig") else encoding


def _has_quoted_newlines(text: str, delimiter: str, quotechar: str | Literal[False]) -> bool:
    """Whether a quoted field in the sample spans lines (fewer records than lines).

    pyarrow's ``newlines_in_values=True`` costs ~25% CPU and ~15% memory, so it is only
    enabled when needed; a quoted newline past the sample shows up as a column-count error
    and triggers a retry with it enabled.
    """
    if not quotechar or quotechar not in text:
        return False
    body = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
    if not body:
        return False
    try:
        records = sum(1 for _ in csv.reader(io.StringIO(body), delimiter=delimiter, quotechar=quotechar))
    except csv.Error:
        return True
    return records < body.count("\n")


def _read_csv_arrow(
    p: Path, o: dict[str, Any], ncols: int, max_field: int, *, quoted_newlines: bool, cancel: CancelToken
) -> pd.DataFrame:
    """pyarrow fast path with targeted retries; pandas for what pyarrow rejects."""
    names = None if o["header"] else [f"column_{i + 1}" for i in range(max(ncols, 1))]
    newlines_in_values = quoted_newlines
    block = _BLOCK_SIZE
    while True:
        read_opts = pacsv.ReadOptions(
            use_threads=True,
            block_size=block,
            encoding=_arrow_encoding(o["encoding"]),
            column_names=names,
        )
        parse_opts = pacsv.ParseOptions(
            delimiter=o["delimiter"],
            quote_char=o["quotechar"],
            newlines_in_values=newlines_in_values,
        )
        # strings_can_be_null=True would make missing strings match pandas directly but costs
        # more parse CPU than fixing the string columns afterwards (_null_strings), which
        # skips ID-like columns entirely
        convert_opts = pacsv.ConvertOptions(
            strings_can_be_null=False, column_types={n: pa.string() for n in o.get("text_columns", ())}
        )
        try:
            table = pacsv.read_csv(
                str(p),
                read_options=read_opts,
                parse_options=parse_opts,
                convert_options=convert_opts,
                memory_pool=_memory_pool(),
            )
            break
        except Cancelled:
            raise
        except (pa.ArrowInvalid, UnicodeError) as e:
            msg = str(e)
            if "straddl" in msg:
                # a row longer than a block: size the block from the longest line, but refuse
                # rows over the cap before pyarrow tries (it becomes very slow and hungry)
                too_big = UserError(
                    f"{_q(p)}: a single row or field is larger than {max_field / 2**20:g} MiB "
                    "(or a quote is never closed); raise max_field_mb to load it"
                )
                if block >= max_field:
                    raise too_big from None
                longest = _longest_line(p, max_field, cancel)
                if longest > max_field:
                    raise too_big from None
                block = min(max(block * 2, 1 << (2 * longest).bit_length()), max_field)
                continue
            if "Expected" in msg and "columns, got" in msg:
                if not newlines_in_values and o["quotechar"]:
                    # a quoted newline beyond the sample looks like a ragged row: retry
                    newlines_in_values = True
                    continue
                cancel.check()
                bad = _first_ragged_row(p, read_opts, parse_opts)
                raise UserError(f"{_q(p)} has ragged rows: {_ragged_reason(bad, o['header'])}") from None
            if "Empty CSV" in msg:
                raise UserError(f"{_q(p)} is empty") from None
            cancel.check()
            return _read_csv_pandas(p, o, names, e)
        except MemoryError:
            raise UserError(f"not enough memory to load {_q(p)}") from None
        except (pa.ArrowException, OSError, ValueError) as e:
            return _read_csv_pandas(p, o, names, e)
    not_text = UserError(
        f"{_q(p)} is not valid {o['encoding']} text (the encoding was chosen from its first "
        f"{_SAMPLE_BYTES >> 20} MiB); pass the right encoding option"
    )
    if any(pa.types.is_binary(t) or pa.types.is_large_binary(t) for t in table.schema.types):
        raise not_text
    box = [table]
    del table  # _arrow_to_pandas must hold the only reference (see its docstring)
    try:
        return _arrow_to_pandas(box)
    except UnicodeDecodeError:  # invalid bytes in a header name
        raise not_text from None


def _longest_line(p: Path, stop_above: int, cancel: CancelToken) -> int:
    """Length of the longest line in bytes, streamed; stops early once it exceeds
    ``stop_above``.  Only run after pyarrow reported a row larger than its block."""
    longest = run = 0
    with open(p, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            cancel.check()
            nl = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            if nl.size == 0:
                run += len(chunk)
            else:
                gaps = np.diff(nl) if nl.size > 1 else np.empty(0, dtype=np.int64)
                longest = max(longest, run + int(nl[0]), int(gaps.max(initial=0)))
                run = len(chunk) - int(nl[-1]) - 1
            if max(longest, run) > stop_above:
                break
    return max(longest, run)


def _first_ragged_row(
    p: Path, read_opts: pacsv.ReadOptions, parse_opts: pacsv.ParseOptions
) -> tuple[int, int, int | None] | None:
    """(expected fields, fields found, row number) of the first row with a wrong field count.

    pyarrow's message quotes the offending row -- private data -- and, multithreaded, has no
    row number.  A single-threaded re-parse with an invalid-row handler stops at the first bad
    row and reports its number (only its counts are kept, never its ``text``)."""
    found: list[tuple[int, int, int | None]] = []

    def first(row: pacsv.InvalidRow) -> str:
        found.append((row.expected_columns, row.actual_columns, row.number))
        return "error"

    ro = pacsv.ReadOptions(
        use_threads=False,
        block_size=read_opts.block_size,
        encoding=read_opts.encoding,
        column_names=read_opts.column_names,
    )
    po = pacsv.ParseOptions(
        delimiter=parse_opts.delimiter,
        quote_char=parse_opts.quote_char,
        newlines_in_values=parse_opts.newlines_in_values,
        invalid_row_handler=first,
    )
    try:
        pacsv.read_csv(str(p), read_options=ro, parse_options=po, memory_pool=_memory_pool())
    except Exception:  # noqa: BLE001 - the first error is the one already being reported
        pass
    return found[0] if found else None


def _ragged_reason(bad: tuple[int, int, int | None] | None, header: bool) -> str:
    """Where the first ragged row is, by number and field counts only (its cells are private)."""
    if bad is None:
        return "field counts differ between rows"
    expected, actual, number = bad
    where = "a row" if number is None else f"row {number} of the file" + (" (the header is row 1)" if header else "")
    return f"{where} has {actual} field(s), expected {expected}"


def _read_csv_pandas(p: Path, o: dict[str, Any], names: list[str] | None, arrow_error: BaseException) -> pd.DataFrame:
    """Fallback for files pyarrow rejects but pandas reads (e.g. odd quoting)."""
    try:
        frame = pd.read_csv(
            p,
            sep=o["delimiter"],
            quotechar=o["quotechar"] or '"',
            quoting=csv.QUOTE_NONE if o["quotechar"] is False else csv.QUOTE_MINIMAL,
            encoding=o["encoding"],
            header=0 if o["header"] else None,
            names=names,
            dtype={n: str for n in o.get("text_columns", ())} or None,
            engine="c",
            low_memory=False,
        )
    except MemoryError:
        raise UserError(f"not enough memory to load {_q(p)}") from None
    except pd.errors.EmptyDataError:
        raise UserError(f"{_q(p)} is empty") from None
    except pd.errors.ParserError as e:
        m = _short(e)
        if "Expected" in m and "fields" in m:
            raise UserError(f"{_q(p)} has ragged rows: {m.split('. ')[-1]}") from None
        raise UserError(f"cannot read {_q(p)} as CSV: {_short(arrow_error)}") from None
    except (ValueError, UnicodeError, OSError) as e:
        raise UserError(f"cannot read {_q(p)} as CSV: {_short(e)}") from None
    if names is not None and frame.shape[1] != len(names):
        raise UserError(f"{_q(p)} has ragged rows: field counts differ between rows")
    return frame


_NULL_STRINGS = pa.array(pacsv.ConvertOptions().null_values, pa.string())
_MAX_NULL_MARKER = max(len(s.encode()) for s in pacsv.ConvertOptions().null_values)


def _null_strings(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Empty cells and NA markers in string columns become missing, as pandas.read_csv does
    (and as pyarrow already does for numeric columns)."""
    pool = _memory_pool()
    shortest = pc.min(pc.binary_length(col, memory_pool=pool)).as_py()
    if shortest is not None and shortest > _MAX_NULL_MARKER:
        return col  # ID-like columns: no cell is short enough to be a marker; skip the hashing
    hit = pc.is_in(col, value_set=_NULL_STRINGS.cast(col.type), memory_pool=pool)
    if not pc.any(hit).as_py():
        return col
    return pc.if_else(hit, pa.scalar(None, col.type), col, memory_pool=pool)


def _arrow_to_pandas(box: list[pa.Table]) -> pd.DataFrame:
    """Arrow -> pandas without detours: str dtype kept, dates as datetime64, no block copies.

    ``split_blocks`` + ``self_destruct`` free each arrow column as it is converted, which keeps
    peak memory near one copy of the data -- but only if nobody else holds the table, so the
    caller hands it over in a one-element list that we empty (measured: -75 MB peak on
    1M x 20).
    """
    table = box.pop()
    fixed = []
    for i, name in enumerate(table.column_names):  # by index: table.columns would pin them all
        col = table.column(i)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            # pandas' str dtype stores large_string: cast here, one column at a time, so the
            # old buffers are freed before the next column is copied
            col = pc.cast(_null_strings(col), pa.large_string(), memory_pool=_memory_pool())
            table = table.set_column(i, name, col)
            del col  # drop our reference so the old buffers go with the table's
            continue
        if pa.types.is_null(col.type):  # all-missing column: float NaN, like pandas
            table = table.set_column(i, name, pa.nulls(len(col), pa.float64()))
        elif pa.types.is_boolean(col.type) and col.null_count:
            fixed.append(name)  # would become object; make it nullable boolean below
    frame: pd.DataFrame = table.to_pandas(
        date_as_object=False, split_blocks=True, self_destruct=True, memory_pool=_memory_pool()
    )
    del table
    for name in fixed:
        frame[name] = frame[name].astype("boolean")
    return frame


# --------------------------------------------------------------------------- other formats
def _read_parquet(
    p: Path, opts: dict[str, Any], progress: Callable[[float, str], None], cancel: CancelToken
) -> tuple[pd.DataFrame, dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(p)
        _check_names(pf.schema_arrow.names, p)  # before read: pyarrow chokes on duplicates
        _check_flat(pf.schema_arrow, p)
        table = pf.read()  # parquet has no transient parse buffers worth a special pool
    except UserError:
        raise
    except MemoryError:
        raise UserError(f"not enough memory to load {_q(p)}") from None
    except Exception as e:  # third-party reader on untrusted bytes: anything means "corrupt"
        raise UserError(f"cannot read {_q(p)} as parquet: {_short(e)}") from None
    progress(0.8, "converting")
    box = [table]
    del table
    return _arrow_to_pandas(box), {}


def _check_flat(schema: pa.Schema, p: Path) -> None:
    """Refuse nested columns (struct, list, map, union): a table cell must be one value for the
    schema, the mechanisms and the writers; which column, never its contents."""
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        more = f" (and {len(nested) - 1} more)" if len(nested) > 1 else ""
        kind = schema.field(nested[0]).type
        raise UserError(
            f"{_q(p)}: column '{nested[0]}'{more} holds nested values ({_type_name(kind)}); "
            "dpstudio reads flat columns only - flatten or drop it first"
        )


def _type_name(t: pa.DataType) -> str:
    for test, name in ((pa.types.is_struct, "struct"), (pa.types.is_map, "map"), (pa.types.is_union, "union")):
        if test(t):
            return name
    return "list"


def _read_xlsx(
    p: Path, opts: dict[str, Any], progress: Callable[[float, str], None], cancel: CancelToken
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read with ``header=None`` so duplicate / empty header cells can be rejected (pandas
    would silently rename them to ``a.1`` / ``Unnamed: 3``), then re-infer column dtypes."""
    sheet = opts.get("sheet", 0)
    header = opts.get("header", True)
    if not isinstance(header, bool):
        raise UserError(f"header option must be true or false, got {header!r}")
    try:
        from openpyxl import load_workbook

        # the options pandas' own openpyxl reader uses; read-only streams the sheet's XML
        wb = load_workbook(p, read_only=True, data_only=True, keep_links=False)
        try:
            names = wb.sheetnames
            if isinstance(sheet, int) and not isinstance(sheet, bool):
                if not 0 <= sheet < len(names):
                    raise UserError(f"{_q(p)} has no sheet number {sheet}; sheets: {names}")
                sheet = names[sheet]
            elif sheet not in names:
                raise UserError(f"{_q(p)} has no sheet {sheet!r}; sheets: {names}")
            data = _xlsx_cells(wb[sheet], p, sheet, cancel)
        finally:
            wb.close()
        # the same parse pandas.read_excel(header=None) applies to the cells it read
        raw = TextParser(data, header=None, skip_blank_lines=False).read() if data else pd.DataFrame()
    except (UserError, Cancelled):
        raise
    except MemoryError:
        raise UserError(f"not enough memory to load {_q(p)}") from None
    except Exception as e:  # zip / xml errors from a corrupt or non-xlsx file
        raise UserError(f"cannot read {_q(p)} as an Excel workbook: {_short(e)}") from None
    if raw.shape[0] == 0 or raw.shape[1] == 0:
        raise UserError(f"{_q(p)} is empty (sheet {sheet!r})")
    if header:
        cols = list(raw.iloc[0])
        _check_names(cols, p)
        frame = raw.iloc[1:].reset_index(drop=True)
        frame.columns = [str(c) for c in cols]
        frame = frame.infer_objects()
    else:
        frame = raw
        frame.columns = [f"column_{i + 1}" for i in range(raw.shape[1])]
    return _strings_to_str(frame), {"sheet": sheet, "header": header}


#: Excel's own sheet limits; a file claiming more is malformed
_XLSX_MAX_ROWS, _XLSX_MAX_COLS = 1_048_576, 16_384
#: cells of the rectangle up to the last filled row and column that we allocate (e.g. the full
#: 1,048,576 rows at 24 columns); larger sheets belong in CSV or Parquet
_XLSX_MAX_CELLS = 25_000_000


def _xlsx_cells(ws: Any, p: Path, sheet: str, cancel: CancelToken) -> list[list[object]]:
    """The sheet's cells as pandas' openpyxl reader returns them, in memory proportional to the
    cells present -- never to the extent the file declares (its ``dimension`` tag can say
    XFD1048576 for a 5 KB file) nor to a lone far-away cell (one cell at XFD1048576 would make a
    17-billion-cell rectangle): the rectangle up to the last non-empty cell is refused beyond
    :data:`_XLSX_MAX_CELLS` as soon as the rows read so far exceed it."""
    ws.reset_dimensions()  # ignore the declared extent: each row is as long as its last cell
    rows: list[list[object] | tuple[()]] = []
    last_row, width = -1, 0
    for i, row in enumerate(ws.iter_rows()):
        if i >= _XLSX_MAX_ROWS or len(row) > _XLSX_MAX_COLS:
            raise UserError(
                f"{_q(p)}: sheet {sheet!r} goes beyond Excel's {_XLSX_MAX_ROWS:,} rows x "
                f"{_XLSX_MAX_COLS:,} columns; the file is malformed"
            )
        vals = [_xlsx_value(c) for c in row]
        while vals and vals[-1] == "":
            vals.pop()  # trailing empty (e.g. formatted) cells, as pandas trims them
        if vals:
            last_row, width = i, max(width, len(vals))
            if (last_row + 1) * width > _XLSX_MAX_CELLS:
                raise UserError(
                    f"{_q(p)}: sheet {sheet!r} spans at least {last_row + 1:,} rows x {width:,} "
                    f"columns, more than the {_XLSX_MAX_CELLS:,} cells dpstudio reads from a "
                    "spreadsheet; remove stray far-away cells or save the data as CSV"
                )
        rows.append(vals or ())  # one shared empty tuple for the (many) empty rows
        if i % 65536 == 65535:
            cancel.check()
    del rows[last_row + 1 :]
    return [[*r, *[""] * (width - len(r))] for r in rows]


def _xlsx_value(cell: Any) -> object:
    """pandas' conversion of an openpyxl cell (``OpenpyxlReader._convert_cell``): empty -> "",
    error -> NaN, integral numbers -> int."""
    value = cell.value
    if value is None:
        return ""
    if cell.data_type == "e":
        return np.nan
    if cell.data_type == "n":
        as_int = int(value)
        return as_int if as_int == value else float(value)
    return value


def _read_stata(
    p: Path, opts: dict[str, Any], progress: Callable[[float, str], None], cancel: CancelToken
) -> tuple[pd.DataFrame, dict[str, Any]]:
    try:
        frame = pd.read_stata(p)
    except MemoryError:
        raise UserError(f"not enough memory to load {_q(p)}") from None
    except Exception as e:
        raise UserError(f"cannot read {_q(p)} as a Stata file: {_short(e)}") from None
    return _strings_to_str(frame), {}


def _read_sas(fmt: Literal["sas7bdat", "xport"]) -> _Reader:
    label = {"sas7bdat": "a SAS7BDAT", "xport": "a SAS transport (XPT)"}[fmt]

    def read(
        p: Path, opts: dict[str, Any], progress: Callable[[float, str], None], cancel: CancelToken
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        encoding = opts.get("encoding", "infer" if fmt == "sas7bdat" else "latin-1")
        try:
            frame = pd.read_sas(p, format=fmt, encoding=encoding)
        except MemoryError:
            raise UserError(f"not enough memory to load {_q(p)}") from None
        except Exception as e:
            raise UserError(f"cannot read {_q(p)} as {label} file: {_short(e)}") from None
        frame = _strings_to_str(frame)
        frame.attrs[NUMBERS_ARE_DOUBLES] = True  # SAS has no integer type (see schema)
        return frame, {"encoding": encoding}

    return read


def _strings_to_str(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns holding only strings become pandas' ``str`` dtype (one per column)."""
    for name in [n for n, dt in frame.dtypes.items() if pd.api.types.is_object_dtype(dt)]:
        col = frame[name]
        if pd.api.types.infer_dtype(col, skipna=True) == "string":
            frame[name] = col.astype("str")
    return frame


_READERS: dict[str, _Reader] = {
    "csv": _read_csv,
    "parquet": _read_parquet,
    "xlsx": _read_xlsx,
    "stata": _read_stata,
    "sas7bdat": _read_sas("sas7bdat"),
    "xport": _read_sas("xport"),
}
