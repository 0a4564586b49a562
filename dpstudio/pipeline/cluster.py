"""The same release on a Dask cluster (``dpstudio release R.json --engine dask --scheduler ADDRESS``).

Dask (``pip install 'dpstudio[cluster]'``) is an optional dependency: it is imported here only.
The division of work follows the privacy accounting, not convenience:

* on the client: the recipe is compiled, the ledger reserves the plan's total before any noise
  is drawn and records the spend when the output is in place (the same ledger calls as a local
  release); the DP domain estimates and the marginal synthesizer's fit draw their noise here,
  once, from summaries summed over the partitions;
* on the workers: everything that reads rows -- the exact summaries (domain values copied from
  the data, integer checks, the ledger's row sketch, domain-estimate and marginal counts) and the
  record perturbation itself, with the plan's own mechanism objects
  (:func:`dpstudio.plan.record.perturb_block`), block ``k`` of the table with the random stream
  ``(RECORD_STREAM, k)``: the blocks are the streamed engine's (the partitions are cut and joined
  into them), so a fixed seed gives the same table locally, streamed and on the cluster.

The output is one file written by the client, block by block in table order as the workers
finish them, through the same temporary-name-then-rename commit as a local release.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import itertools
import os
import pickle
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED, no_progress, sub_progress
from dpstudio.errors import RecipeError, UserError
from dpstudio.recipe.model import Recipe

#: missing-value markers of text files: the streamed reader's (pyarrow's), so a CSV cell is
#: missing on the cluster exactly when it is missing locally
_NULLS = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "N/A", "NA"]
_NULLS += ["NULL", "NaN", "n/a", "nan", "null"]
#: Dask's CSV partition size
_CSV_BLOCKSIZE = "64MB"


def _dask():
    try:
        import dask.dataframe as dd
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UserError(
            "the dask engine needs Dask: pip install 'dpstudio[cluster]' (it is not part of the desktop installer)"
        ) from None
    return dd, Client, LocalCluster


#: glibc malloc settings for the workers of the local cluster dpstudio starts (and the ones it
#: recommends for a cluster's workers, docs/scale.md).  Dask's default worker environment sets
#: only ``MALLOC_TRIM_THRESHOLD_`` = 64 KiB, and setting any threshold turns off glibc's dynamic
#: mmap threshold: every array over 128 KiB is then a fresh mmap, page-faulted in and unmapped
#: again, and perturbing a 262,144-row block took 2.6 x as long (0.9 s -> 2.3 s a 1M rows).
#: These are the values the dynamic threshold reaches by itself (32 MiB, trim at twice that).
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(64 << 20)}


def local_cluster(n_workers: int = 2):
    """A local Dask cluster of ``n_workers`` single-threaded worker processes with
    :data:`WORKER_MALLOC` in their environment (set before they start).

    Dask's nanny prefers a variable already in this process's environment to its configuration,
    and writes its pre-spawn variables into this process's environment: both are undone here,
    so the workers get these values and this process keeps its own environment."""
    import dask

    _dd, _client, LocalCluster = _dask()
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    environ.update(WORKER_MALLOC)
    saved = dict(os.environ)
    try:
        os.environ.update(WORKER_MALLOC)
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def read_table(path: str, recipe: Recipe, columns: list[str] | None = None):
    """The input as a Dask DataFrame: Parquet (a file, a folder or a glob) or CSV (a file or a
    glob) at a path or fsspec URL the workers can read, with the recipe's load options and its
    declared column types (as the streamed reader fixes them)."""
    dd, _, _ = _dask()
    text = str(path)
    lower = text.lower().rstrip("/")
    declared = {c.name: c.type for c in recipe.columns}
    if lower.endswith((".csv", ".tsv", ".txt")):
        o = recipe.input.options.to_dict()
        dtypes = {n: {"integer": "float64", "float": "float64"}.get(t, "str") for n, t in declared.items()}
        header = o.get("header", True)
        ddf = dd.read_csv(
            text,
            sep=o.get("delimiter", "\t" if lower.endswith(".tsv") else ","),
            quotechar=o.get("quotechar") or '"',
            encoding=o.get("encoding", "utf-8"),
            header=0 if header else None,
            dtype=dtypes if header else None,
            keep_default_na=False,
            na_values=_NULLS,
            blocksize=_CSV_BLOCKSIZE,
        )
        if not header:
            ddf.columns = [f"column_{i + 1}" for i in range(len(ddf.columns))]
    else:
        # a partition per row group: Dask's default reads a file of up to a few GB as one
        # partition, which one worker then holds whole (11 GB at 10M rows x 20 columns)
        ddf = dd.read_parquet(text, split_row_groups=True)
    if columns is not None:
        missing = [c for c in columns if c not in ddf.columns]
        if missing:
            raise UserError(f"{text}: no column(s) {missing[:5]!r}")
        ddf = ddf[columns]
    return ddf


def _normalise(part: pd.DataFrame, declared: dict[str, str], csv: bool, markers: bool = True) -> pd.DataFrame:
    """A partition as the in-memory and streamed readers give it: CSV types restored; in a
    Parquet partition read by Dask, text cells that are NA markers ("", "NA", "null", ...) made
    missing, as the loader does (``markers``: False for frames that already went through the
    streamed reader's conversion, :func:`_row_group`)."""
    from dpstudio.engine.data.stream import restore_types

    part = part.reset_index(drop=True)
    if csv:
        return restore_types(part, declared)
    if markers:
        from dpstudio.engine.data.loader import _NULL_STRINGS

        nulls = _NULL_STRINGS.to_pylist()
        for name in part.columns:
            col = part[name]
            if pd.api.types.is_string_dtype(col.dtype) and not isinstance(col.dtype, pd.CategoricalDtype):
                hit = col.isin(nulls)
                if hit.any():
                    part[name] = col.mask(hit)
    return part


# ---- tasks run on the workers (module-level functions: Dask ships them by reference) ------


def _slices(part: pd.DataFrame, rows: int):
    """``(first row, rows)`` of a partition cut into slices of ``rows`` rows (the block size):
    a partition (a Parquet row group: 1M rows or more) is read whole, but a summary's
    temporaries (text, codes) are then a block's, not the partition's."""
    for a in range(0, max(len(part), 1), rows):
        yield a, part.iloc[a : a + rows]


def _facts_of(part: pd.DataFrame, recipe: Recipe, declared: dict[str, str], csv: bool, rows: int):
    """Pass 1 of one partition: the copied domains and integer checks."""
    from dpstudio.recipe.build import DataFacts

    facts = DataFacts(recipe)
    for _a, piece in _slices(_normalise(part, declared, csv), rows):
        facts.add(piece)
    return facts


def _domain_summaries_of(part, recipe, units, declared, csv, start, rows):
    from dpstudio.plan.domains import domain_summaries

    out = domain_summaries(recipe, units)
    for a, piece in _slices(_normalise(part, declared, csv), rows):
        for s in out.values():
            s.add(piece, start=start + a)
    return out


def _counts_of(part, plan, recipe, declared, csv, rows, markers=True):
    from dpstudio.plan.stream import synthetic_counts

    counts, _spec, add = synthetic_counts(plan, recipe)
    for _a, piece in _slices(_normalise(part, declared, csv, markers), rows):
        add(piece)
    return counts


def _row_group(path: str, group: int, columns: list[str]) -> pd.DataFrame:
    """Row group ``group`` of the Parquet file at ``path``, converted as the streamed reader
    converts a block (the same dtypes, so both engines perturb identical frames).  Its columns
    are decoded on pyarrow's threads, as the streamed reader's are: a worker whose partner has
    no row group to read lends it its core (whole-process runs paired with single-threaded
    reads: 0.95 x at 1M and at 10M rows on 2 cores)."""
    import pyarrow.parquet as pq

    from dpstudio.engine.data.stream import _to_pandas

    with pq.ParquetFile(path) as pf:
        table = pf.read_row_group(group, columns=columns, use_threads=True)
    return _to_pandas(table, columns)


def row_group_parts(path: str, ddf, columns: list[str]) -> tuple[list[Any], list[int]] | None:
    """For one local Parquet file: a delayed read of each row group and the groups' row counts
    (from the file's metadata), or None when Dask's partitions are not exactly its row groups.

    Dask's Parquet partitions go through its own reader: about twice the time of pyarrow's
    ``read_row_group`` plus the streamed reader's conversion (2.2-2.5 s vs 1.2 s a 1M-row x
    20-column row group, single-threaded), and the release's CPU on two cores is what bounds it.
    The keys are pure; :func:`_records_on_cluster` holds each read until its last block is
    submitted, so a row group is read once."""
    import pyarrow.parquet as pq
    from dask import delayed

    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, ValueError):
        return None
    if meta.num_row_groups != ddf.npartitions:
        return None
    lengths = [int(meta.row_group(i).num_rows) for i in range(meta.num_row_groups)]
    read = delayed(_row_group, pure=True)
    where = os.path.abspath(path)  # the workers' working folder is not the client's
    return [read(where, i, list(columns)) for i in range(meta.num_row_groups)], lengths


def _first_rows_of_file(path: str, columns: list[str], n: int = 1000) -> pd.DataFrame:
    """The first ``n`` rows of a local Parquet file (from its leading row groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpstudio.engine.data.stream import _to_pandas

    batches, held = [], 0
    with pq.ParquetFile(path) as pf:
        for batch in pf.iter_batches(batch_size=n, columns=columns):  # a batch ends at a row group's end
            batches.append(batch)
            held += batch.num_rows
            if held >= n:
                break
        schema = pa.schema([pf.schema_arrow.field(c) for c in columns])
        table = pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()
    return _to_pandas(table.slice(0, n), columns)


@functools.cache
def _slices_pickle_compactly() -> bool:
    """Whether a row slice of a text column pickles only its own rows (pandas 3's Arrow-backed
    strings do; pyarrow's own pickling, which pandas 2.2 uses, sends the whole buffers)."""
    column = pd.Series(["0123456789abcdef"] * 4096, dtype="string[pyarrow]")
    return len(pickle.dumps(column.iloc[:16], protocol=5)) < len(pickle.dumps(column, protocol=5)) // 4


def _cut(part: pd.DataFrame, a: int, b: int) -> pd.DataFrame:
    """Rows ``a:b`` of a partition, cut on the worker that holds it: a block task that took the
    partitions themselves made the scheduler move a whole 1M-row partition to the other worker
    whenever a block landed there.  A view where a moved or spilled block sends only its own
    rows; else a copy in buffers of its own (see :func:`_head_of`; 0.05 s a 262,144-row block)."""
    if _slices_pickle_compactly():
        return part.iloc[a:b]
    return part.take(np.arange(a, b))


def _perturb(pieces, declared, csv, final, recipe, seed, k, start, markers=True):
    from dpstudio.engine.rng import RandomSource
    from dpstudio.plan.record import RECORD_STREAM, perturb_block

    stats: dict[str, Any] = {}
    frame = pieces[0] if len(pieces) == 1 else pd.concat(pieces, ignore_index=True)
    block = _normalise(frame, declared, csv, markers)
    out = perturb_block(final, recipe, block, RandomSource(seed).stream(RECORD_STREAM, k), stats, start=start)
    return out, stats


def _merge_all(items: list[Any]) -> Any:
    acc = items[0]
    for x in items[1:]:
        acc = acc.merge(x)
    return acc


def _merge_dicts(items: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(items[0])
    for d in items[1:]:
        for name, s in d.items():
            out[name] = out[name].merge(s)
    return out


#: how many partitions' summaries one merge task on a worker takes
_SPLIT_EVERY = 8


def _reduce_on_workers(client, leaves: list[Any], merge, split_every: int = _SPLIT_EVERY) -> Any:
    """The merge of the summaries ``leaves`` (Delayed, one per partition, in table order),
    merged on the workers ``split_every`` neighbours at a time (a tree) and only the result
    sent to the client.  Gathering every partition's summary instead holds them all, on the
    workers until the client has them and then on the client: memory that grows with the
    number of partitions, i.e. with the table (a marginal synthesizer's counts may take up to
    :data:`dpstudio.plan.stream.MAX_COUNT_BYTES` each).  Neighbours are merged left to right,
    so the result is the one of a fold in table order.  Each summary has one consumer, so
    ``merge`` may add into its first argument."""
    from dask import delayed

    items = list(leaves)
    while len(items) > 1:
        items = [delayed(merge)(items[i : i + split_every]) for i in range(0, len(items), split_every)]
    return client.compute(items[0], sync=True)


def _head_of(part: pd.DataFrame, n: int) -> pd.DataFrame:
    """The first ``n`` rows of a partition in buffers of their own: a slice -- or its pandas
    ``copy()``, which shares the Arrow buffers of text columns -- keeps the whole partition's
    text alive for as long as the piece lives."""
    return part.take(np.arange(min(n, len(part))))


def first_rows(client, ddf, lengths: list[int], n: int = 1000) -> pd.DataFrame:
    """The table's first ``n`` rows, read from the fewest leading partitions that hold them
    (``lengths``: the partitions' row counts).  ``ddf.head(n, npartitions=-1)`` reads every
    partition in full, and each partition's head pins that partition's text columns until the
    heads are joined: a second pass over the whole table and worker memory that grew with it
    (1.5 GB a worker at 10M rows x 20 columns, 6 GB at 50M)."""
    from dask import delayed

    m, held = 0, 0
    while m < len(lengths) and held < n:
        held += lengths[m]
        m += 1
    pieces = client.compute([delayed(_head_of)(p, n) for p in ddf.to_delayed()[: max(m, 1)]], sync=True)
    return (pieces[0] if len(pieces) == 1 else pd.concat(pieces)).iloc[:n]


def block_cuts(lengths: list[int], block_rows: int) -> list[list[tuple[int, int, int]]]:
    """For each block of ``block_rows`` rows of a table whose partitions have ``lengths`` rows:
    the ``(partition, first row, end row)`` slices that make it, in order (one empty block for
    an empty table)."""
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + int(n))
    total = offsets[-1]
    blocks: list[list[tuple[int, int, int]]] = []
    for first in range(0, max(total, 1), block_rows):
        end = min(first + block_rows, total)
        cut = []
        for i, n in enumerate(lengths):
            a, b = max(first, offsets[i]), min(end, offsets[i] + int(n))
            if a < b:
                cut.append((i, a - offsets[i], b - offsets[i]))
        if not cut and lengths:
            cut.append((0, 0, 0))
        blocks.append(cut)
    return blocks


def execute_on_dask(
    recipe: Recipe,
    *,
    scheduler: str | None,
    output_path,
    input_path=None,
    ledger=None,
    report_path=None,
    report_variant: str = "internal",
    with_risk: bool = True,
    progress=no_progress,
    cancel=NEVER_CANCELLED,
    new_dataset: bool = False,
    record: bool = True,
    recipe_path=None,
    on_commit=None,
    operator: str | None = None,
    block_rows: int | None = None,
):
    """:func:`dpstudio.pipeline.execute_release` on the Dask cluster at ``scheduler`` (None: a
    local cluster of this computer's cores, two worker processes)."""
    from dask import delayed

    from dpstudio.engine.data.schema import infer_schema
    from dpstudio.engine.data.stream import BLOCK_ROWS
    from dpstudio.engine.rng import make_random_source
    from dpstudio.export import STREAM_FORMATS, BlockWriter
    from dpstudio.pipeline import _conclude, refuse_paid_targets
    from dpstudio.pipeline.blocks import _reserve, _stamp, _unchanged, write_output
    from dpstudio.plan import compile_checked
    from dpstudio.plan.stream import stream_problem
    from dpstudio.targets import refuse_input_targets, validate_targets

    _dd, Client, _local = _dask()
    rows = block_rows or BLOCK_ROWS
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    release_id = uuid.uuid4().hex[:16]
    source = str(input_path or recipe.input.path)
    local_file = "://" not in source and Path(source).is_file()
    targets = validate_targets(
        recipe,
        output_path,
        report_path=report_path,
        report_variant=report_variant,
        input_path=source if local_file else None,
        recipe_path=recipe_path,
        ledger_path=getattr(ledger, "path", None),
    )
    output_path, out_fmt, report_path = targets.output, targets.output_format, targets.report
    refuse_paid_targets(ledger, targets)
    if not local_file and "://" not in source or source.startswith("file://"):
        # a local folder or glob: no target may be one of its files or inside its folder
        files, folders = _local_inputs(source)
        refuse_input_targets(targets, files, folders)
    provisional = compile_checked(recipe)[0]
    if provisional is not None:
        why = stream_problem(provisional)
        if why is not None:
            raise UserError(f"this release cannot run on a cluster: {why}")
    if out_fmt not in STREAM_FORMATS:
        raise UserError(f"a cluster release writes {', '.join(STREAM_FORMATS)} files, not {out_fmt}")

    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="30s")
        else:
            cluster = local_cluster(2)
            client = Client(cluster)
    except (OSError, TimeoutError) as exc:
        raise UserError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    try:
        where = f"on the Dask cluster at {scheduler}" if scheduler else "on a local Dask cluster (this computer)"
        workers = len(client.scheduler_info().get("workers", {}))
        progress(0.0, f"connected {where} ({workers} workers)")
        csv = source.lower().rstrip("/").endswith((".csv", ".tsv", ".txt"))
        declared = {c.name: c.type for c in recipe.columns}
        ddf = read_table(source, recipe)
        stamp = _stamp(source) if local_file else None
        read_cols = [c.name for c in recipe.columns if c.role not in ("identifier", "ignore") and c.name in ddf.columns]
        direct = row_group_parts(source, ddf, read_cols) if local_file and not csv else None
        # partition lengths (the blocks are cut by row position): a single Parquet file's
        # metadata, or one column of every partition read
        lengths = (
            direct[1]
            if direct is not None
            else [
                int(x) for x in client.compute([delayed(len)(p) for p in ddf[[ddf.columns[0]]].to_delayed()], sync=True)
            ]
        )
        offsets = list(itertools.accumulate(lengths, initial=0))[:-1]  # each partition's first row
        n_rows = sum(lengths)
        cancel.check()

        # ---- pass 1 (no noise): the input's hash, copied domains, integer checks, row sketch --
        # each read only when needed, and only the columns it needs
        sha = _input_sha256(client, source, local_file)
        if recipe.input.sha256 and sha != recipe.input.sha256:
            raise UserError(
                f"{source} is not the file this recipe was made for (SHA-256 {sha[:12]}... "
                f"!= {recipe.input.sha256[:12]}...); make a new recipe for it"
            )
        from dpstudio.recipe.build import DataFacts

        facts = DataFacts(recipe)
        integer_typed = tuple(str(c) for c, t in ddf.dtypes.items() if pd.api.types.is_integer_dtype(t))
        fact_cols = facts.columns(integer_typed)
        if fact_cols:
            facts = _reduce_on_workers(
                client,
                [delayed(_facts_of)(p, recipe, declared, csv, rows) for p in ddf[fact_cols].to_delayed()],
                _merge_all,
            )
        if direct is not None:  # the file's first rows from its leading row groups, on the client
            first = _first_rows_of_file(source, list(ddf.columns))
        else:
            first = _normalise(first_rows(client, ddf, lengths), declared, csv)
        fp = None
        if ledger is not None and ledger.needs_fingerprint(sha):
            # the partitions as the in-memory and streamed readers see them (NA markers, types):
            # one file has one fingerprint whichever engine reads it
            seen = ddf.map_partitions(_normalise, declared, csv, meta=_normalise(ddf._meta, declared, csv))
            fp = ledger.fingerprint_dask(seen, head=first)
        parts = direct[0] if direct is not None else ddf[read_cols].to_delayed()
        progress(0.25, "read the input once (no noise yet)")
        recipe = facts.fill(recipe)
        if n_rows == 0:
            raise UserError(f"{source} has a header but no data rows")
        # column kinds from the first rows; the row count (delta below 1/n) is the table's
        schema = replace(infer_schema(first), rows=n_rows)
        plan, problems = compile_checked(recipe, schema)
        problems += facts.type_problems()
        if problems or plan is None:
            raise RecipeError(problems)
        why = stream_problem(plan)
        if why is not None:
            raise UserError(f"this release cannot run on a cluster: {why}")
        cancel.check()

        checker = ledger  # for an unrecorded release, _reserve returns no ledger to write with
        reservation, ledger_before, ledger_identity, ledger = _reserve(
            ledger, recipe, plan, sha, fp, source, targets, new_dataset=new_dataset, record=record
        )
        rng = make_random_source(recipe.randomness.seed)
        box: dict[str, Any] = {}

        def domain_summaries():
            from dpstudio.plan.domains import domain_summaries as empty

            wanted = empty(recipe, plan.units)
            if not wanted:
                return None
            # only the estimated columns are read
            cols = list(dict.fromkeys(s.column for s in wanted.values()))
            return _reduce_on_workers(
                client,
                [
                    delayed(_domain_summaries_of)(p, recipe, plan.units, declared, csv, offsets[i], rows)
                    for i, p in enumerate(ddf[cols].to_delayed())
                ],
                _merge_dicts,
            )

        def run(tmp) -> None:
            with BlockWriter(tmp, out_fmt, formula_protection=recipe.outputs.formula_protection) as writer:
                summaries = domain_summaries()
                if plan.release_type == "synthetic":
                    from dpstudio.plan.stream import run_domains

                    # the counts are taken for the recipe the domain estimates give
                    dom_recipe, notes, drawn = run_domains(plan, None, rng, summaries=summaries or {})

                    fin = plan if dom_recipe is plan.recipe else replace(plan, recipe=dom_recipe)
                    # two at a time: a synthesizer's counts may be up to MAX_COUNT_BYTES each
                    counts = _reduce_on_workers(
                        client,
                        [delayed(_counts_of)(p, fin, dom_recipe, declared, csv, rows, direct is None) for p in parts],
                        _merge_all,
                        2,
                    )
                    box["outcome"] = _synthetic_with(
                        plan, fin, dom_recipe, notes, drawn, counts, rng, writer.write, progress, cancel
                    )
                else:
                    box["outcome"] = _records_on_cluster(
                        client,
                        plan,
                        parts,
                        lengths,
                        rows,
                        declared,
                        csv,
                        rng,
                        summaries,
                        writer.write,
                        sub_progress(progress, 0.3, 0.85),
                        cancel,
                        direct is None,
                    )
            if stamp is not None:
                _unchanged(source, stamp)  # the workers read the bytes the client hashed
            cancel.check()

        output_sha, late_interrupt = write_output(ledger, checker, reservation, targets, run, on_commit=on_commit)
    finally:
        # after the commit nothing may turn a release that happened into an error: a failure to
        # disconnect from the cluster is not the release's
        with contextlib.suppress(Exception):
            client.close()
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close()
    return _conclude(
        recipe=recipe,
        plan=plan,
        outcome=box["outcome"],
        schema=schema,
        dataset_name=Path(source).name,
        input_sha256=sha,
        release_id=release_id,
        started=started,
        rng=rng,
        output_path=output_path,
        output_sha=output_sha,
        ledger=ledger,
        ledger_before=ledger_before,
        ledger_identity=ledger_identity,
        late_interrupt=late_interrupt,
        targets=targets,
        report_path=report_path,
        report_variant=report_variant,
        with_risk=with_risk,
        frame=None,
        progress=progress,
        on_commit=on_commit,
        operator=operator,
        engine=f"{where}, {workers} workers, in blocks of {rows:,} rows ({n_rows:,} rows read)",
        rows=n_rows,
        reservation=reservation,
    )


def _synthetic_with(plan, final, recipe, notes, drawn_by, counts, rng, write, progress, cancel):
    """The fit on the cluster's summed counts and the sampled rows (on the client)."""
    from dpstudio.plan.stream import _count_synth
    from dpstudio.plan.synthetic import SynthesizerRelease, finish_fit, table_spec

    unit = next(u for u in final.units if u.kind == "synthesizer")
    mech = unit.mechanism
    assert isinstance(mech, SynthesizerRelease), unit.name
    drawn_by[unit.name] = mech
    fitted = _count_synth(mech).fit_counts(
        counts,
        table_spec(recipe),
        epsilon=mech.epsilon,
        delta=mech.delta,
        rng=rng,
        progress=sub_progress(progress, 0.3, 0.8),
        cancel=cancel,
    )
    rows = recipe.outputs.rows or int(counts.n)
    return finish_fit(
        final, recipe, unit, mech, fitted, rows, rng, notes, drawn_by, write=write, progress=progress, cancel=cancel
    )


def _records_on_cluster(
    client, plan, parts, lengths, rows, declared, csv, rng, summaries, write, progress, cancel, markers=True
):
    """Record perturbation on the workers, block by block, written in order on the client."""
    from collections import deque

    from dpstudio.plan.record import merge_stats
    from dpstudio.plan.stream import finalise_records, run_domains
    from dpstudio.plan.units import ReleaseOutcome

    recipe, notes, drawn_by = run_domains(plan, None, rng, summaries=summaries or {})
    final = finalise_records(plan, recipe, drawn_by)
    seed = recipe.randomness.seed
    cuts = block_cuts(lengths, rows)
    # each partition is read once: the client holds its future from the first block cut from
    # it until the last such block is submitted.  Blocks submitted one by one each naming the
    # read let the scheduler drop a partition as soon as its submitted blocks were cut, and a
    # later block read it again (17 reads of 10 row groups at 10M rows)
    last_use: dict[int, int] = {}
    for k, cut in enumerate(cuts):
        for i, _a, _b in cut:
            last_use[i] = k
    # in flight: the blocks of as many partitions as there are workers, and one more (at most
    # 4 x (workers + 1) blocks, so a file written as one huge row group cannot put the whole
    # table in flight).  The blocks cut from one partition run where it was read, so a window
    # inside one partition kept one worker busy at a time (0.57 s a block at 10M rows)
    workers = max(len(client.scheduler_info().get("workers", {})), 1)
    window = max(2 * workers + 2, min(-(-workers * max(lengths, default=0) // rows) + 1, 4 * (workers + 1)))
    stats: dict[str, Any] = {}
    pending: deque[Any] = deque()
    reads: dict[int, Any] = {}
    # the plan and recipe go to every worker once (as arguments they were pickled per block)
    shared = client.scatter([final, recipe], broadcast=True, hash=False)
    done = [0]

    def submit(k: int, cut: list[tuple[int, int, int]], start: int) -> Any:
        pieces = []
        for i, a, b in cut:
            if i not in reads:
                reads[i] = client.compute(parts[i])
            # cut on the worker holding the partition (see _cut)
            pieces.append(client.submit(_cut, reads[i], a, b, pure=False))
        fut = client.submit(_perturb, pieces, declared, csv, *shared, seed, k, start, markers, pure=False)
        for p in pieces:  # the block's task holds them now
            p.release()
        for i, _a, _b in cut:
            if last_use[i] == k:
                reads.pop(i).release()
        return fut

    def write_next() -> None:
        fut = pending.popleft()
        block, st = fut.result()
        fut.release()
        write(block)
        merge_stats(stats, st)
        progress(done[0] / len(cuts), f"wrote block {done[0] + 1} of {len(cuts)}")
        done[0] += 1

    start = 0
    try:
        for k, cut in enumerate(cuts):
            cancel.check()
            pending.append(submit(k, cut, start))
            start += sum(b - a for _i, a, b in cut)
            if len(pending) >= window:
                write_next()
        while pending:
            cancel.check()
            write_next()
    finally:
        for f in [*pending, *reads.values(), *shared]:
            f.release()
    return ReleaseOutcome(
        data=None,
        steward_stats={"columns": stats, **notes},
        public_stats={"rows": start},
        final_plan=final,
        drawn_by=drawn_by,
    )


def _local_inputs(source: str) -> tuple[list[str], list[str]]:
    """The files and folders of a local input given as a folder, a glob or a ``file://`` URL."""
    import glob
    import os

    path = source[len("file://") :] if source.startswith("file://") else source
    path = path.rstrip("/") or "/"
    if os.path.isdir(path):
        return [os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs], [path]
    files = glob.glob(path)
    return files, sorted({os.path.dirname(f) for f in files} if glob.has_magic(path) else set())


def _input_sha256(client, source: str, local_file: bool) -> str:
    """The SHA-256 the ledger identifies the input by: the file's own for one local file (as a
    local release computes it); for a folder, a glob or a URL, the SHA-256 of the sorted list of
    ``name<TAB>sha256`` of its files, each file hashed on a worker."""
    from dpstudio.engine.data.loader import fingerprint

    if local_file:
        return fingerprint(source)
    import hashlib

    import fsspec

    fs, _, paths = fsspec.get_fs_token_paths(source)
    files: list[str] = []
    for p in paths:
        files.extend(sorted(fs.find(p)) if fs.isdir(p) else [p])
    if not files:
        raise UserError(f"no input file found at {source}")
    digests = client.gather(client.map(_hash_remote, files, fs=fs, pure=False))
    listing = "".join(f"{Path(f).name}\t{d}\n" for f, d in zip(files, digests, strict=True))
    return hashlib.sha256(listing.encode()).hexdigest()


def _hash_remote(path: str, fs) -> str:
    import hashlib

    h = hashlib.sha256()
    with fs.open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
