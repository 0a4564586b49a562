"""A release that reads its input in blocks of rows: streamed on this machine, whatever the file's
size (docs/scale.md).

The order is the in-memory release's (:func:`dpstudio.pipeline.execute_release`), with the input
read twice instead of held:

1. every output target is checked (nothing read yet);
2. first pass, no noise: the file's SHA-256, the ledger's row sketch, the values of domains
   copied from the data, the rows the declared types cannot hold, and the row count;
3. the recipe is compiled and checked, and the ledger reserves the plan's total;
4. second pass: the plan's DP domain estimates (when it has any: their own pass), then the
   release itself -- records perturbed and written block by block, or a marginal synthesizer's
   counts summed over the blocks, one fit, rows sampled and written block by block -- into a
   temporary file the ledger renames into place when it records the spend.

The file must not change between the passes: its size and modification time are checked after
each, and a change stops the release before the commit (nothing is spent).
"""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED, no_progress, sub_progress
from dpstudio.errors import RecipeError, UserError
from dpstudio.recipe.model import Recipe

#: the release's columns that are read (identifiers and ignored columns are never read)
_DROPPED = ("identifier", "ignore")


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _unchanged(path: str, before: tuple[int, int]) -> None:
    if _stamp(path) != before:
        raise UserError(f"{path} changed while it was being released; release it again")


def open_input(recipe: Recipe, input_path=None):
    """The recipe's input opened for block reading, with the recipe's load options and types."""
    from dpstudio.engine.data.stream import open_stream

    path = input_path or recipe.input.path
    declared = {c.name: c.type for c in recipe.columns}
    return open_stream(path, recipe.input.options.to_dict() or None, declared=declared)


def first_pass(stream, recipe: Recipe, ledger, *, block_rows: int, progress=no_progress, cancel=NEVER_CANCELLED):
    """What the release reads before any noise: ``(sha256, row fingerprint or None, facts, first
    rows, stamp)``.  Only the columns something needs are read: every column for the ledger's
    row sketch (only when the ledger does not know the file), else the copied domains' and the
    integer checks' columns -- often none, and then this pass reads no rows at all."""
    from concurrent.futures import ThreadPoolExecutor

    from dpstudio.engine.data.loader import fingerprint
    from dpstudio.recipe.build import DataFacts

    stamp = _stamp(stream.path)
    facts = DataFacts(recipe)
    # column kinds for the recipe's checks: from the first rows only
    first = next(stream.blocks(rows=min(block_rows, 10_000), cancel=cancel), None)
    with ThreadPoolExecutor(max_workers=1) as pool:
        # hashlib releases the GIL: the file's hash costs little wall time beside the parse
        sha_future = pool.submit(fingerprint, stream.path)
        sketcher = None
        try:
            if ledger is not None:
                # the ledger decides from the file's hash whether it needs the rows' sketch
                _check_sha(stream.path, recipe, sha_future.result())
                if ledger.needs_fingerprint(sha_future.result()):
                    from dpstudio.ledger import HEAD_ROWS

                    # its first rows say which columns are row numbers (the same rows in every engine)
                    head = first
                    if first is not None and min(block_rows, 10_000) <= len(first) < HEAD_ROWS:
                        head = next(stream.blocks(rows=HEAD_ROWS))  # (a first block shorter than that)
                    sketcher = ledger.row_sketcher(head=head)
            cols = list(stream.columns) if sketcher is not None else facts.columns(stream.integer_columns())
            if cols:
                from dpstudio.plan.stream import map_in_order

                def summarise(block: pd.DataFrame):
                    # the row hashes, the costly part, on two threads; added in table order below
                    return block, (sketcher.hash_batch(block) if sketcher is not None else None)

                blocks = stream.blocks(cols, rows=block_rows, cancel=cancel)
                for k, (block, hashed) in enumerate(map_in_order(summarise, blocks, workers=2)):
                    progress(0.0, f"reading block {k + 1} (no noise yet)")
                    facts.add(block)
                    if sketcher is not None:
                        sketcher.add_hashed(hashed)
            # the row count decides the checks that depend on n (delta below 1/n): counted, never
            # taken from the first rows (Parquet: its metadata; CSV: a pass if none was made)
            n = facts.rows if cols else stream.count_rows(cancel)
            sha = sha_future.result()
            fp = ledger.fingerprint_from(sketcher) if sketcher is not None else None
        finally:
            if sketcher is not None:
                sketcher.close()
    _check_sha(stream.path, recipe, sha)
    _unchanged(stream.path, stamp)
    if n == 0:
        raise UserError(f"{Path(stream.path).name} has a header but no data rows")
    assert first is not None
    return sha, fp, facts, first, stamp, n


def _check_sha(path: str, recipe: Recipe, sha: str) -> None:
    if recipe.input.sha256 and sha != recipe.input.sha256:
        raise UserError(
            f"{path} is not the file this recipe was made for (SHA-256 {sha[:12]}... "
            f"!= {recipe.input.sha256[:12]}...); make a new recipe for it"
        )


def execute_streamed(
    recipe: Recipe,
    *,
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
    """:func:`dpstudio.pipeline.execute_release` over blocks of rows (``engine="stream"``):
    memory bounded by the block size, whatever the input's size.  Records (every perturbation
    mechanism except a metric one drawing from the dataset itself) and the marginal synthesizers
    (AIM, MST) stream; the others are refused before anything is read."""
    from dpstudio.engine.data.schema import infer_schema
    from dpstudio.engine.data.stream import BLOCK_ROWS
    from dpstudio.engine.rng import make_random_source
    from dpstudio.export import STREAM_FORMATS, BlockWriter
    from dpstudio.pipeline import _conclude, refuse_paid_targets
    from dpstudio.plan import compile_checked
    from dpstudio.plan.stream import stream_problem, stream_records, stream_synthetic
    from dpstudio.targets import validate_targets

    rows = block_rows or BLOCK_ROWS
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    release_id = uuid.uuid4().hex[:16]
    targets = validate_targets(
        recipe,
        output_path,
        report_path=report_path,
        report_variant=report_variant,
        input_path=input_path or recipe.input.path,
        recipe_path=recipe_path,
        ledger_path=getattr(ledger, "path", None),
    )
    output_path, out_fmt, report_path = targets.output, targets.output_format, targets.report
    refuse_paid_targets(ledger, targets)
    # refuse what cannot stream before reading a byte (the recipe alone decides)
    provisional = compile_checked(recipe)[0]
    if provisional is not None:
        why = stream_problem(provisional)
        if why is not None:
            raise UserError(f"this release cannot run streamed: {why}")
    if out_fmt not in STREAM_FORMATS:
        raise UserError(f"a streamed release writes {', '.join(STREAM_FORMATS)} files, not {out_fmt}")

    stream = open_input(recipe, input_path)
    sha, fp, facts, first, stamp, n_rows = first_pass(
        stream, recipe, ledger, block_rows=rows, progress=sub_progress(progress, 0.0, 0.3), cancel=cancel
    )
    recipe = facts.fill(recipe)
    # column kinds for the checks from the first rows; the row count is the file's
    schema = replace(infer_schema(first), rows=n_rows)
    plan, problems = compile_checked(recipe, schema)
    problems += facts.type_problems()
    if problems or plan is None:
        raise RecipeError(problems)
    why = stream_problem(plan)
    if why is not None:
        raise UserError(f"this release cannot run streamed: {why}")
    cancel.check()
    read_cols = [c.name for c in recipe.columns if c.role not in _DROPPED and c.name in stream.columns]

    def blocks() -> Iterator[pd.DataFrame]:
        yield from stream.blocks(read_cols, rows=rows, cancel=cancel)

    checker = ledger  # for an unrecorded release, _reserve returns no ledger to write with
    reservation, ledger_before, ledger_identity, ledger = _reserve(
        ledger, recipe, plan, sha, fp, stream.path, targets, new_dataset=new_dataset, record=record
    )
    rng = make_random_source(recipe.randomness.seed)
    box: dict[str, Any] = {}

    def run(tmp) -> None:
        with BlockWriter(tmp, out_fmt, formula_protection=recipe.outputs.formula_protection, background=True) as writer:
            step = sub_progress(progress, 0.3, 0.85)
            if plan.release_type == "synthetic":
                box["outcome"] = stream_synthetic(plan, blocks, rng, writer.write, progress=step, cancel=cancel)
            else:
                box["outcome"] = stream_records(
                    plan,
                    blocks(),
                    rng,
                    writer.write,
                    n_rows=n_rows,
                    block_rows=rows,
                    domain_blocks=blocks,
                    progress=step,
                    cancel=cancel,
                )
        _unchanged(stream.path, stamp)  # the second pass read the bytes the first one hashed
        cancel.check()

    output_sha, late_interrupt = write_output(ledger, checker, reservation, targets, run, on_commit=on_commit)
    n_read = int(box["outcome"].public_stats.get("n_input", n_rows))
    return _conclude(
        recipe=recipe,
        plan=plan,
        outcome=box["outcome"],
        schema=schema,
        dataset_name=Path(stream.path).name,
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
        engine=f"streamed on this computer, in blocks of {rows:,} rows ({n_read:,} rows read)",
        rows=n_read,
        reservation=reservation,
    )


def _reserve(ledger, recipe: Recipe, plan, sha: str, fp, path: str, targets, *, new_dataset: bool, record: bool):
    """The ledger's reservation of the plan's total (or its check, for an unrecorded release):
    ``(reservation, before, identity, ledger to write with or None)``."""
    if ledger is None:
        return None, None, None, None
    from dpstudio.pipeline import ledger_columns, ledger_kind

    who = dict(dataset_name=Path(path).name, label=recipe.input.dataset, fingerprint=fp, new_dataset=new_dataset)
    if not record:  # refuses like a recorded release would, records nothing
        before = ledger.check_unrecorded(
            sha, loss=plan.total, output_path=str(targets.output), side_files=targets.side_files(), **who
        )
        identity = before.pop("identity")
        return None, before, identity, None
    # refuses (BudgetError) before any noise is drawn
    reservation = ledger.reserve(
        sha,
        loss=plan.total,
        release_type=ledger_kind(recipe, plan),
        recipe_sha256=recipe.sha256(),
        output_path=str(targets.output),
        side_files=targets.side_files(),
        columns=ledger_columns(plan),
        **who,
    )
    return reservation, reservation.before, reservation.identity, ledger


def write_output(ledger, checker, reservation, targets, run: Callable[[Any], None], *, on_commit=None):
    """:func:`_write` of a streamed or Dask release to its checked ``targets``; ``checker``: the
    ledger that checked an unrecorded release (``ledger`` is then None), asked again just before
    the rename."""
    from dpstudio.pipeline import refuse_paid_targets
    from dpstudio.targets import DATASET_FORMAT

    return _write(
        ledger,
        reservation,
        targets.output,
        run,
        folder=targets.output_format == DATASET_FORMAT,
        on_commit=on_commit,
        recheck=lambda: refuse_paid_targets(checker, targets),
    )


def _write(
    ledger,
    reservation,
    output_path,
    run: Callable[[Any], None],
    *,
    folder: bool = False,
    on_commit=None,
    recheck: Callable[[], None] | None = None,
) -> tuple[str | None, BaseException | None]:
    """Run the release into a temporary file (``folder``: a temporary folder, for a partitioned
    dataset) and put it in place: through the ledger's commit (which records the spend) or
    atomically without a ledger.  ``(output SHA-256, an interrupt that came after the commit
    had begun)``.  ``on_commit()`` is called at the point of no return, before anything else
    (closing a cluster's client can take seconds: a Ctrl-C then must not fail the release)."""
    from dpstudio.export import atomic_folder, atomic_path, output_sha256

    try:
        if ledger is not None:
            return ledger.write_and_commit(reservation, output_path, run, folder=folder, on_commit=on_commit), None
        with (atomic_folder if folder else atomic_path)(output_path) as tmp:
            run(tmp)
            if recheck is not None:  # an unrecorded release holds no names: looked at again
                recheck()
        if on_commit is not None:
            on_commit()
        return output_sha256(output_path), None
    except BaseException as exc:
        if reservation is None or ledger.abort(reservation) != "complete":
            raise
        # interrupted after the ledger marked the release as committing: recovery rolled it
        # forward, so it happened - report it as done, not failed
        return ledger.output_sha256(reservation), exc
