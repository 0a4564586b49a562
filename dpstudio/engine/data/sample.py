"""Tables too large for memory, opened as a uniform sample (issue 20): the public facts that
decide it (the file's size, a Parquet file's own metadata, the available memory), and the
sample itself -- for schema inference, previews and ``recipe init``, never a release's input (a
release of such a file streams every row: docs/scale.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from dpstudio.engine.progress import CancelToken, ProgressCallback

if TYPE_CHECKING:
    from dpstudio.engine.data.loader import LoadedTable
    from dpstudio.engine.data.schema import TableSchema
    from dpstudio.engine.data.stream import TableStream

PathLike: TypeAlias = "str | os.PathLike[str]"

#: rows of the uniform sample a file too large for memory is previewed and inferred from
SAMPLE_ROWS = 100_000
#: a file whose estimated in-memory size exceeds this share of the available memory is "large"
LARGE_SHARE = 0.4
#: overrides the limit (bytes of estimated memory above which a file is large); tests set it tiny
LARGE_FILE_ENV = "DPSTUDIO_LARGE_FILE_BYTES"
#: the available memory assumed when the system does not say (a modest laptop's)
FALLBACK_AVAILABLE = 4 << 30
#: how many bytes of memory a file takes per byte on disk once loaded (CSV: numbers parsed into
#: 8-byte cells and text into Python strings; xlsx: zipped XML, many times its size)
MEMORY_PER_DISK_BYTE = {"csv": 3.0, "xlsx": 10.0}
#: Parquet: the metadata's uncompressed size, times this
PARQUET_FACTOR = 1.5
_EXT_FORMAT = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet", ".xlsx": "xlsx"}


def available_memory() -> int:
    """Bytes of memory available to a new load: Linux's MemAvailable, the free physical pages
    elsewhere (half the physical memory when the system does not report free pages), Windows'
    available physical memory, else :data:`FALLBACK_AVAILABLE`."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    sysconf = getattr(os, "sysconf", None)
    if sysconf is not None:
        try:
            return int(sysconf("SC_AVPHYS_PAGES")) * int(sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            pass
        try:
            return int(sysconf("SC_PHYS_PAGES")) * int(sysconf("SC_PAGE_SIZE")) // 2
        except (ValueError, OSError):
            pass
    if os.name == "nt":
        try:
            return _windows_available()
        except (OSError, AttributeError, ValueError):
            pass
    return FALLBACK_AVAILABLE


def _windows_available() -> int:
    import ctypes

    class _MemoryStatus(ctypes.Structure):
        _fields_ = [  # noqa: RUF012 - ctypes' own declaration
            ("dwLength", ctypes.c_ulong),
            ("dwMemoryLoad", ctypes.c_ulong),
            ("ullTotalPhys", ctypes.c_ulonglong),
            ("ullAvailPhys", ctypes.c_ulonglong),
            ("ullTotalPageFile", ctypes.c_ulonglong),
            ("ullAvailPageFile", ctypes.c_ulonglong),
            ("ullTotalVirtual", ctypes.c_ulonglong),
            ("ullAvailVirtual", ctypes.c_ulonglong),
            ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
        ]

    status = _MemoryStatus()
    status.dwLength = ctypes.sizeof(_MemoryStatus)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore[attr-defined]
        raise OSError("GlobalMemoryStatusEx failed")
    return int(status.ullAvailPhys)


def large_file_limit() -> int:
    """The estimated in-memory size above which a file is opened as a sample: ``$DPSTUDIO_LARGE_FILE_BYTES``
    when set, else :data:`LARGE_SHARE` of the available memory."""
    env = os.environ.get(LARGE_FILE_ENV, "").strip()
    if env:
        try:
            return max(int(float(env)), 0)
        except ValueError:
            pass
    return int(LARGE_SHARE * available_memory())


def file_format(path: PathLike) -> str | None:
    """``csv``, ``parquet``, ``xlsx`` or None (another format) from the file name."""
    return _EXT_FORMAT.get(Path(path).suffix.lower())


def estimated_memory(path: PathLike) -> int:
    """Bytes the table at ``path`` would take loaded (an estimate from public facts of the file:
    its size on disk, or the Parquet metadata's uncompressed size).  0 when the file cannot be
    read (the loader then says why)."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError:
        return 0
    fmt = file_format(p)
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(p).metadata
            raw = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            return int(PARQUET_FACTOR * max(raw, size))
        except Exception:  # noqa: BLE001 - unreadable: the loader gives the message
            return 0
    return int(MEMORY_PER_DISK_BYTE.get(fmt or "", 2.0) * size)


def is_large_file(path: PathLike) -> bool:
    """Whether ``path`` is too large to load whole (:func:`large_file_limit`)."""
    need = estimated_memory(path)
    return need > 0 and need > large_file_limit()


def too_large_message(path: PathLike) -> str:
    """Why a large file in a format that cannot be read in blocks is refused, and what to do."""
    gb = estimated_memory(path) / 2**30
    return (
        f"{Path(path).name} is too large to open in this computer's memory (it needs about "
        f"{gb:.1f} GB). Files this large can be opened only as CSV or Parquet, which are read a part "
        "at a time: save the table as Parquet (or CSV) in the program that made it, and open that file."
    )


class _Watched:
    """A table stream that counts the rows read and reports progress (duck-types TableStream
    for :func:`uniform_sample`)."""

    def __init__(self, stream: TableStream, progress: ProgressCallback, expected_rows: int | None) -> None:
        self.stream = stream
        self.columns = stream.columns
        self.progress = progress
        self.expected = expected_rows
        self.rows = 0

    def blocks(self, columns: Sequence[str] | None = None, **kw: Any) -> Iterator[Any]:
        for block in self.stream.blocks(columns, **kw):
            self.rows += len(block)
            frac = min(self.rows / self.expected, 0.99) if self.expected else 0.5
            self.progress(frac, f"reading {self.rows:,} rows for a sample")
            yield block


def _expected_rows(stream: TableStream) -> int | None:
    """The table's rows, or an estimate for progress (CSV: from the first MiB's line length)."""
    if stream.format == "parquet":
        return int(stream.count_rows())
    try:
        with open(stream.path, "rb") as fh:
            head = fh.read(1 << 20)
        lines = head.count(b"\n")
        return int(os.path.getsize(stream.path) / (len(head) / lines)) if lines else None
    except OSError:
        return None


def _read_types(stream: TableStream) -> dict[str, str]:
    """Types fixed for every block of a CSV read for a sample, from its first rows: numbers read
    as numbers throughout (a later missing cell or fraction cannot break them), the rest as text."""
    if stream.format != "csv":
        return {}
    first = next(stream.blocks(rows=1 << 16), None)
    if first is None:
        return {}
    out = {}
    for name in first.columns:
        kind = first[name].dtype.kind
        out[name] = "integer" if kind in "iu" else "float" if kind == "f" else "boolean" if kind == "b" else "text"
    return out


def load_sample(
    path: PathLike,
    options: dict[str, Any] | None = None,
    *,
    rows: int | None = None,
    progress: ProgressCallback,
    cancel: CancelToken,
) -> LoadedTable:
    """Worker job: a file too large for memory, opened as a uniform sample of ``rows`` rows (one
    pass over the file: the sample, the row count and, on a helper thread, the whole file's
    SHA-256).  The :class:`LoadedTable` says so (``sample_of``: the file's rows).  ``rows``:
    default :data:`SAMPLE_ROWS`."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from dpstudio.engine.data import loader
    from dpstudio.engine.data.stream import STREAMABLE_FORMATS, open_stream, uniform_sample
    from dpstudio.errors import UserError

    if file_format(path) not in STREAMABLE_FORMATS:
        raise UserError(too_large_message(path))
    progress(0.0, f"reading {Path(path).name}")
    stream = open_stream(path, options)
    stream = open_stream(path, options, declared=_read_types(stream))
    p = Path(stream.path)
    before = p.stat()
    stop = threading.Event()
    watched = _Watched(stream, progress, _expected_rows(stream))
    with ThreadPoolExecutor(max_workers=1) as pool:
        # the loader's cancellable hash: a cancelled sample does not wait for the whole file's hash
        sha_future = pool.submit(loader._fingerprint, p, stop)
        try:
            sample = uniform_sample(watched, rows or SAMPLE_ROWS, cancel=cancel)  # type: ignore[arg-type]
            cancel.check()
        except BaseException:
            stop.set()
            raise
        try:
            sha = sha_future.result()
        except OSError as e:
            raise UserError(f"cannot read {p.name}: {e.strerror or e}") from None
    after = p.stat()
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise UserError(f"{p.name} changed while it was being read; open it again")
    progress(1.0, f"sampled {len(sample):,} of {watched.rows:,} rows")
    return loader.LoadedTable(
        frame=sample,
        path=str(p),
        format=stream.format,
        options=dict(stream.options),
        sha256=sha,
        sample_of=watched.rows,
    )


def schema_of(loaded: LoadedTable) -> TableSchema:
    """The inferred schema of a loaded table; of a sample, with the file's own row count (the
    other figures are the sample's)."""
    from dpstudio.engine.data.schema import infer_schema

    schema = infer_schema(loaded.frame)
    if loaded.sample_of is not None:
        schema = replace(schema, rows=loaded.sample_of)
    return schema
