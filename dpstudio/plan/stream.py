"""Releases that read their input block by block (streamed on one machine, or on a cluster).

A record release perturbs block by block with the plan's own mechanism objects
(:func:`dpstudio.plan.record.perturb_block`); a marginal synthesizer (MST, AIM) reads the data only
through exact counts of marginals, summed over blocks, and adds its noise once, on the summed
counts (:class:`dpstudio.engine.synth.counts.MarginalCounts`); DP domain estimates read mergeable
summaries (:func:`dpstudio.plan.domains.domain_summaries`).  The in-memory release runs the
same functions over one frame, so with a fixed seed every engine releases the same table
(docs/scale.md).

What needs the rows themselves -- PEARL and DP-MERF (gradient steps over records), the DP model,
the density, a metric mechanism whose pool is the dataset -- refuses to stream
(:func:`stream_problem`), with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress
from dpstudio.engine.rng import RandomSource
from dpstudio.plan.units import ReleaseOutcome, ReleasePlan, UnitMechanism
from dpstudio.recipe.model import Recipe

#: synthesizers that read the data only through marginal counts
COUNT_METHODS = ("mst", "aim")
#: the largest marginal counts a streamed fit holds (bytes; set by the public domain sizes)
MAX_COUNT_BYTES = 1 << 30

Blocks = Callable[[], Iterator[pd.DataFrame]]


def stream_problem(plan: ReleasePlan) -> str | None:
    """Why ``plan`` cannot run over blocks of rows (None: it can)."""
    recipe = plan.recipe
    assert recipe is not None
    rtype = plan.release_type
    if rtype in ("record", "label", "semi-sensitive"):
        from dpstudio.plan.record import streamable_problem

        return streamable_problem(recipe)
    if rtype == "synthetic":
        from dpstudio.plan.synthetic import METHOD_NAME, method_of

        method = method_of(recipe)
        if method not in COUNT_METHODS:
            return (
                f"the {METHOD_NAME.get(method, method)} synthesizer trains on the rows themselves and "
                "needs the whole table in memory; choose AIM or MST, which read only sums of counts"
            )
        return None
    return (
        f"a {rtype} release fits on the rows themselves and needs the whole table in memory; "
        "streamed and cluster runs release records and marginal synthetic data"
    )


def run_domains(
    plan: ReleasePlan,
    blocks: Blocks | None,
    rng: RandomSource,
    *,
    summaries: dict[str, Any] | None = None,
) -> tuple[Recipe, dict[str, Any], dict[str, UnitMechanism]]:
    """The plan's DP domain estimates from summaries of the blocks (one pass, only when the plan
    has estimates to run; ``summaries``: already summed, e.g. on a cluster).  Returns the recipe
    with the estimated domains, the steward's notes and ``drawn_by``."""
    from dpstudio.plan.domains import domain_summaries, finish_domain_units

    recipe = plan.recipe
    assert recipe is not None
    drawn_by: dict[str, UnitMechanism] = {}
    if summaries is None:
        summaries = domain_summaries(recipe, plan.units)
        if summaries and blocks is not None:
            for block in blocks():
                for s in summaries.values():
                    s.add(block)
    recipe, notes = finish_domain_units(recipe, plan.units, summaries, rng, drawn_by)
    return recipe, notes, drawn_by


def finalise_records(plan: ReleasePlan, recipe: Recipe, drawn_by: dict[str, UnitMechanism]) -> ReleasePlan:
    """The record plan whose mechanisms draw the noise (after the domain estimates), checked
    against the reserved total."""
    from dpstudio.plan.record import check_within_plan, finalise

    final = finalise(plan, recipe, pd.DataFrame())
    check_within_plan(plan, final)
    drawn_by.update({u.name: u.mechanism for u in final.perturbation_units if u.mechanism is not None})
    return final


def stream_records(
    plan: ReleasePlan,
    blocks: Iterable[pd.DataFrame],
    rng: RandomSource,
    write: Callable[[pd.DataFrame], None],
    *,
    n_rows: int | None = None,
    domain_summaries: dict[str, Any] | None = None,
    domain_blocks: Blocks | None = None,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    workers: int = 2,
    block_rows: int | None = None,
) -> ReleaseOutcome:
    """A record release over ``blocks`` (in table order, :data:`BLOCK_ROWS` rows each): block
    ``k`` is perturbed with the random stream ``(RECORD_STREAM, k)`` and handed to ``write``,
    in table order.  ``workers`` threads perturb blocks while this thread reads and writes
    (numpy, pyarrow and the OS's random source release the GIL); each block's noise depends on
    its own stream only, so the output does not depend on the number of threads."""
    from dpstudio.engine.data.stream import BLOCK_ROWS
    from dpstudio.plan.record import RECORD_STREAM, merge_stats, perturb_block

    recipe, domain_notes, drawn_by = run_domains(plan, domain_blocks, rng, summaries=domain_summaries)
    final = finalise_records(plan, recipe, drawn_by)
    stats: dict[str, Any] = {}
    start = 0
    written = 0
    total = max(-(-(n_rows or 0) // (block_rows or BLOCK_ROWS)), 1)

    def job(item: tuple[int, int, pd.DataFrame]) -> tuple[pd.DataFrame, dict[str, Any]]:
        k, first, block = item
        here: dict[str, Any] = {}
        return perturb_block(final, recipe, block, rng.stream(RECORD_STREAM, k), here, start=first), here

    def numbered() -> Iterator[tuple[int, int, pd.DataFrame]]:
        nonlocal start
        for k, block in enumerate(blocks):
            cancel.check()
            yield k, start, block
            start += len(block)

    for k, (out, here) in enumerate(map_in_order(job, numbered(), workers=workers)):
        cancel.check()
        write(out)
        merge_stats(stats, here)
        written += len(out)
        progress(min((k + 1) / total, 0.99), f"perturbed and wrote {written:,} rows")
    if start == 0:  # an empty table: the header (CSV) / schema (Parquet) of an empty release
        write(perturb_block(final, recipe, _empty_block(recipe), rng.stream(RECORD_STREAM, 0), stats))
    progress(1.0, "perturbation done")
    return ReleaseOutcome(
        data=None,
        steward_stats={"columns": stats, **domain_notes},
        public_stats={"rows": start, "n_input": start},
        final_plan=final,
        drawn_by=drawn_by,
    )


def map_in_order(
    fn: Callable[[Any], Any], items: Iterable[Any], *, workers: int = 2, ahead: int | None = None
) -> Iterator[Any]:
    """``map(fn, items)`` on ``workers`` threads, results in the items' order, with at most
    ``ahead`` items in flight (memory: that many blocks, whatever the table's size)."""
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    if workers <= 1:
        yield from map(fn, items)
        return
    limit = ahead or workers + 1
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dpstudio-block") as pool:
        pending: deque[Future[Any]] = deque()
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) >= limit:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()


def _empty_block(recipe: Recipe) -> pd.DataFrame:
    return pd.DataFrame({c.name: pd.Series([], dtype=object) for c in recipe.columns})


def synthetic_counts(plan: ReleasePlan, recipe: Recipe) -> tuple[Any, Any, Callable[[pd.DataFrame], None]]:
    """``(counts, spec, add)``: the empty marginal counts the plan's synthesizer reads, its table
    spec, and the function that adds one block of rows to them."""
    from dpstudio.engine.synth.counts import MarginalCounts
    from dpstudio.errors import UserError
    from dpstudio.plan.synthetic import SynthesizerRelease, _as_strings, table_spec

    unit = next(u for u in plan.units if u.kind == "synthesizer")
    mech = unit.mechanism
    assert isinstance(mech, SynthesizerRelease), unit.name
    synth = _count_synth(mech)
    spec = table_spec(recipe)
    layout = synth.layout(spec)
    cliques = synth.cliques_needed(spec)
    cells = sum(int(np.prod([layout.sizes[j] for j in c], dtype=np.float64)) for c in cliques)
    if cells * 8 > MAX_COUNT_BYTES:
        # the counts are sized by the public domains only: refused before any row is read
        raise UserError(
            f"the marginal counts of this table would take {cells * 8 / 2**30:.1f} GB (every pair of "
            f"columns over its full category list); shorten the longest category lists or bin them"
        )
    counts = MarginalCounts(layout.sizes, cliques)

    def add(block: pd.DataFrame) -> None:
        counts.add(layout.codes(_as_strings(block, spec)))

    return counts, spec, add


def _count_synth(mech: Any) -> Any:
    from dpstudio.engine.synth.counts import FitsFromCounts

    synth = mech._synthesizer()
    assert isinstance(synth, FitsFromCounts), mech.method  # stream_problem refused the others
    return synth


def stream_synthetic(
    plan: ReleasePlan,
    blocks: Blocks,
    rng: RandomSource,
    write: Callable[[pd.DataFrame], None],
    *,
    counts: Any = None,
    domain_summaries: dict[str, Any] | None = None,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> ReleaseOutcome:
    """A marginal synthesizer's release over blocks: domain estimates (one pass, if any), exact
    counts summed over the blocks (one pass; or ``counts`` summed elsewhere, e.g. on a cluster,
    for the recipe the estimates give), one fit on the counts, rows sampled and written block by
    block (:func:`dpstudio.plan.synthetic.sample_blocks`)."""
    from dpstudio.engine.progress import sub_progress
    from dpstudio.plan.synthetic import SynthesizerRelease, finish_fit

    recipe, domain_notes, drawn_by = run_domains(plan, blocks, rng, summaries=domain_summaries)
    final = plan if recipe is plan.recipe else replace(plan, recipe=recipe)
    unit = next(u for u in final.units if u.kind == "synthesizer")
    mech = unit.mechanism
    assert isinstance(mech, SynthesizerRelease), unit.name
    drawn_by[unit.name] = mech
    if counts is None:
        counts, spec, add = synthetic_counts(final, recipe)
        progress(0.0, "counting marginals")
        for block in blocks():
            cancel.check()
            add(block)
            progress(0.05, f"counted the marginals of {counts.n:,} rows")
    else:
        from dpstudio.plan.synthetic import table_spec

        spec = table_spec(recipe)
    synth = _count_synth(mech)
    fitted = synth.fit_counts(
        counts,
        spec,
        epsilon=mech.epsilon,
        delta=mech.delta,
        rng=rng,
        progress=sub_progress(progress, 0.1, 0.8),
        cancel=cancel,
    )
    rows = recipe.outputs.rows or int(counts.n)
    return finish_fit(
        final,
        recipe,
        unit,
        mech,
        fitted,
        rows,
        rng,
        domain_notes,
        drawn_by,
        write=write,
        progress=progress,
        cancel=cancel,
    )
