"""Read a table in blocks of rows, with memory bounded by the block size whatever the file's size.

A streamed release (issue 20) reads its input twice -- once before the ledger reservation (the
file's SHA-256, the ledger's row sketch, the checks and summaries that draw no noise) and once
after it (the noise) -- so the input is never held whole.  Blocks have exactly
:data:`BLOCK_ROWS` rows (the last may be shorter), whatever the file format's own batches: the
block is the unit of randomness (``RandomSource.stream(purpose, block)``), so a fixed seed gives
the same release in memory, streamed and on a cluster.

CSV files are read with the options the recipe recorded (or detected as ``load_table`` does) and,
when the recipe declares column types, with those types fixed for every block: a streamed parser
cannot infer a column's type from the whole file, and a column read as integers in its first
block must not fail on a later one.  Cells are converted as :func:`load_table` converts them
(missing markers in text columns, text kept as pandas ``str``), so a block equals the same rows
of the loaded frame up to dtype (integers may come as float64 when the recipe fixes the type).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from dpstudio.engine.data import loader as _loader
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken
from dpstudio.errors import UserError

__all__ = ["BLOCK_ROWS", "TableStream", "open_stream", "STREAMABLE_FORMATS"]

#: rows in one block of a batched release: the unit of randomness and of work.  2^18 rows of
#: 20 float columns are 40 MB, so a block, its noise and its output stay well inside 1.5 GB.
BLOCK_ROWS = 1 << 18
#: the formats that can be read in blocks (xlsx, Stata and SAS are read whole)
STREAMABLE_FORMATS = ("csv", "parquet")
#: pyarrow's CSV block: bytes parsed at once (big enough to keep both cores busy)
_CSV_BLOCK_BYTES = 8 << 20

#: declared type -> the arrow type a CSV column is read as in a streamed release
_ARROW_TYPES: dict[str, pa.DataType] = {
    "integer": pa.float64(),
    "float": pa.float64(),
}


def arrow_read_types(declared: Mapping[str, str]) -> dict[str, pa.DataType]:
    """The fixed CSV read type of each declared column: numbers as float64 (a later block's
    missing cell or fraction cannot break them), the rest as text (a boolean column may be
    written yes/no or 0/1: :func:`restore_types` makes true/false text booleans again)."""
    return {name: _ARROW_TYPES.get(t, pa.string()) for name, t in declared.items()}


@dataclass(frozen=True)
class TableStream:
    """A table on disk, read block by block (:meth:`blocks`)."""

    path: str
    format: str
    #: the resolved load options (as :attr:`LoadedTable.options`)
    options: dict[str, Any]
    columns: tuple[str, ...]
    #: declared types fixing the CSV read types (empty: inferred from the first block)
    declared: Mapping[str, str] = field(default_factory=dict)
    _dialect: Any = None

    def blocks(
        self,
        columns: Sequence[str] | None = None,
        *,
        rows: int = BLOCK_ROWS,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> Iterator[pd.DataFrame]:
        """The table's rows in order, as pandas frames of exactly ``rows`` rows (the last one
        shorter; none for an empty table), holding ``columns`` (default: all)."""
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows!r}")
        cols = list(columns) if columns is not None else list(self.columns)
        missing = [c for c in cols if c not in self.columns]
        if missing:
            raise UserError(f"{self.path}: no column(s) {missing[:5]!r}")
        pending: list[pa.RecordBatch] = []
        held = 0
        for batch in self._arrow_batches(cols, cancel):
            cancel.check()
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            held += batch.num_rows
            while held >= rows:
                table = pa.Table.from_batches(pending)
                yield self._typed(_to_pandas(table.slice(0, rows), cols))
                rest = table.slice(rows)
                pending = rest.to_batches() if rest.num_rows else []
                held = rest.num_rows
                del table, rest
        if held:
            yield self._typed(_to_pandas(pa.Table.from_batches(pending), cols))

    def _typed(self, frame: pd.DataFrame) -> pd.DataFrame:
        return restore_types(frame, self.declared) if self.format == "csv" else frame

    def integer_columns(self) -> tuple[str, ...]:
        """Columns the file itself stores as integers (Parquet's schema; none for CSV, whose
        integer-declared columns are read as float64 and checked)."""
        if self.format != "parquet":
            return ()
        import pyarrow.parquet as pq

        schema = pq.read_schema(self.path)
        return tuple(f.name for f in schema if pa.types.is_integer(f.type))

    def count_rows(self, cancel: CancelToken = NEVER_CANCELLED) -> int:
        """The number of rows (Parquet: from the metadata; CSV: one pass over one column)."""
        if self.format == "parquet":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(self.path).metadata.num_rows)
        n = 0
        for batch in self._arrow_batches(list(self.columns[:1]), cancel):
            n += batch.num_rows
        return n

    def _arrow_batches(self, cols: list[str], cancel: CancelToken) -> Iterator[pa.RecordBatch]:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(self.path)
            try:
                # row group by row group: one iter_batches over the whole file keeps memory that
                # grows with the file (1.6 GB peak for 50M rows x 20 columns; 0.35 GB this way)
                for group in range(pf.metadata.num_row_groups):
                    yield from pf.iter_batches(batch_size=1 << 16, row_groups=[group], columns=cols, use_threads=True)
            finally:
                pf.close()
            return
        d = self._dialect
        o = d.resolved
        names = None if o["header"] else [f"column_{i + 1}" for i in range(max(d.ncols, 1))]
        types: dict[str, pa.DataType] = {n: pa.string() for n in d.text_columns}
        types.update(arrow_read_types(self.declared))
        reader = pacsv.open_csv(
            self.path,
            read_options=pacsv.ReadOptions(
                use_threads=True,
                block_size=_CSV_BLOCK_BYTES,
                encoding=_loader._arrow_encoding(o["encoding"]),
                column_names=names,
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=o["delimiter"], quote_char=o["quotechar"], newlines_in_values=d.quoted_newlines
            ),
            convert_options=pacsv.ConvertOptions(
                strings_can_be_null=False,
                column_types={n: t for n, t in types.items() if n in self.columns},
                include_columns=cols,
            ),
        )
        try:
            while True:
                cancel.check()
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowInvalid as e:
                    raise UserError(
                        f"{_loader._q(Path(self.path))}: cannot read it in blocks: {_loader._short(e)}"
                    ) from None
                yield batch
        finally:
            reader.close()


def restore_types(frame: pd.DataFrame, declared: Mapping[str, str]) -> pd.DataFrame:
    """A text-file block's columns as the loader types them: integer-declared columns (read as
    float64, see :func:`arrow_read_types`) as integers when the block's values are whole numbers;
    boolean-declared columns written true/false (any case) as booleans.  Other spellings (yes/no,
    0/1) stay text and match the recipe's category list as text."""
    for name, t in declared.items():
        if name not in frame.columns:
            continue
        col = frame[name]
        if t == "integer" and col.dtype == np.float64:
            x = col.to_numpy()
            finite = ~np.isnan(x)
            if np.all(x[finite] == np.round(x[finite])) and np.all(np.abs(x[finite]) < 2.0**53):
                frame[name] = x.astype(np.int64) if finite.all() else pd.array(x, dtype="Int64")
        elif t == "boolean" and pd.api.types.is_string_dtype(col.dtype):
            low = col.str.strip().str.lower()
            present = low.notna()
            if not present.any():
                frame[name] = pd.Series(pd.NA, index=frame.index, dtype="boolean")  # not text
            elif low[present].isin(["true", "false"]).all():
                flags = pd.Series(low.eq("true").to_numpy(dtype=bool), index=frame.index)
                frame[name] = flags if present.all() else flags.astype("boolean").mask(~present)
    return frame


def _to_pandas(table: pa.Table, cols: list[str]) -> pd.DataFrame:
    """One block as load_table converts a whole table (missing markers, str dtype)."""
    frame = _loader._arrow_to_pandas([table.select(cols)])
    frame.index = pd.RangeIndex(len(frame))
    return frame


def open_stream(
    path: str | os.PathLike[str],
    options: dict[str, Any] | None = None,
    *,
    declared: Mapping[str, str] | None = None,
) -> TableStream:
    """Open ``path`` for block reading (CSV or Parquet), detecting what ``options`` leaves open.

    ``declared``: column name -> declared type (the recipe's); fixes the CSV read types."""
    opts = dict(options or {})
    p = _loader._check_path(path)
    fmt = _loader._FORMATS[p.suffix.lower()]
    if fmt not in STREAMABLE_FORMATS:
        raise UserError(
            f"{_loader._q(p)}: a {fmt} file cannot be read in blocks; a streamed release reads "
            "CSV or Parquet (save the table as Parquet, or release it in memory)"
        )
    unknown = set(opts) - _loader._OPTION_KEYS[fmt]
    if unknown:
        raise UserError(f"unknown load option(s) {sorted(unknown)} for {fmt} file {_loader._q(p)}")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(p)
        except Exception as e:  # noqa: BLE001 - third-party reader on untrusted bytes
            raise UserError(f"cannot read {_loader._q(p)} as parquet: {_loader._short(e)}") from None
        _loader._check_names(schema.names, p)
        _loader._check_flat(schema, p)
        return TableStream(str(p), fmt, {}, tuple(schema.names), dict(declared or {}))
    dialect = _loader.csv_dialect(p, opts)
    if dialect.resolved["header"]:
        first = next(_first_rows(p, dialect), None)
        names = tuple(first or ())
    else:
        names = tuple(f"column_{i + 1}" for i in range(max(dialect.ncols, 1)))
    return TableStream(str(p), fmt, dict(dialect.resolved), names, dict(declared or {}), dialect)


def _first_rows(p: Path, dialect: Any) -> Iterator[list[str]]:
    o = dialect.resolved
    reader = pacsv.open_csv(
        str(p),
        read_options=pacsv.ReadOptions(block_size=1 << 20, encoding=_loader._arrow_encoding(o["encoding"])),
        parse_options=pacsv.ParseOptions(
            delimiter=o["delimiter"], quote_char=o["quotechar"], newlines_in_values=dialect.quoted_newlines
        ),
    )
    try:
        yield [str(n) for n in reader.schema.names]
    finally:
        reader.close()


def concat(blocks: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The blocks as one frame (tests and small outputs)."""
    if not blocks:
        return pd.DataFrame()
    out = pd.concat(list(blocks), ignore_index=True)
    return out


def uniform_sample(stream: TableStream, n: int, seed: int = 0, cancel: CancelToken = NEVER_CANCELLED) -> pd.DataFrame:
    """A uniform sample of ``n`` rows (all rows when fewer), in file order: each row gets a random
    key and the ``n`` smallest keys are kept, block by block (memory O(n + block)).

    For previews and schema inference of a file too large to load; never a release's input."""
    gen = np.random.Generator(np.random.PCG64(seed))
    kept: pd.DataFrame | None = None
    keys = np.empty(0)
    start = 0
    for block in stream.blocks(cancel=cancel):
        k = gen.random(len(block))
        block = block.assign(__pos=np.arange(start, start + len(block)))
        start += len(block)
        allk = np.concatenate([keys, k])
        both = block if kept is None else pd.concat([kept, block], ignore_index=True)
        if len(both) > n:
            idx = np.argpartition(allk, n - 1)[:n]
            both, allk = both.iloc[idx].reset_index(drop=True), allk[idx]
        kept, keys = both, allk
    if kept is None:
        return pd.DataFrame(columns=list(stream.columns))
    return kept.sort_values("__pos").drop(columns="__pos").reset_index(drop=True)
