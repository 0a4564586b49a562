"""The one release pipeline behind the CLI and the GUI: load -> compile -> reserve -> execute ->
write -> commit -> report.

Order matters and is the diffprivlib discipline: every output target is checked, the recipe is
compiled once into a :class:`~dpstudio.plan.ReleasePlan` (total privacy loss), the ledger
checks and reserves that total, the plan's own mechanisms draw the noise, the output is written
atomically and the spend recorded.  Nothing random happens before the ledger has accepted the
release; nothing after the commit can undo it.
"""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from dpstudio import __version__
from dpstudio.engine.progress import NEVER_CANCELLED, Cancelled, no_progress, sub_progress
from dpstudio.errors import RecipeError, UserError
from dpstudio.plan import ReleaseOutcome, ReleasePlan, compile_checked, compile_plan, execute, for_rows
from dpstudio.plan.domains import copied_domain_warnings, emptied_dp_categories
from dpstudio.plan.model import LogisticRegressionRelease
from dpstudio.recipe.model import Recipe
from dpstudio.recipe.validate import Problem, declared_type_problems

#: where a release can run: loaded in memory, streamed in blocks, on a Dask cluster
ENGINES = ("memory", "stream", "dask")


def compile_recipe(recipe: Recipe) -> ReleasePlan:
    """The compiled plan of a recipe; no data is read."""
    return compile_plan(recipe)


def check_recipe(recipe: Recipe, schema=None, frame=None, *, ledger=None, loaded=None) -> dict:
    """What ``dpstudio recipe check`` prints: validity, every problem, and the total loss.

    With the data (``frame``), label and semi-sensitive releases also get the effective epsilon
    for the label, which depends on how well the public columns predict it (raw-data estimate).
    With a ``ledger`` and the ``loaded`` input, the dataset's cap is checked as the release will
    check it (nothing is written): a release the cap would refuse is not "valid".
    """
    if frame is not None:
        # 'copied from the data' domains are filled in as the release will fill them
        from dpstudio.recipe.build import fill_domains_from_data

        recipe = fill_domains_from_data(recipe, frame)
    plan, problems = compile_checked(recipe, schema)
    if plan is None and schema is not None:
        plan = compile_checked(recipe)[0]  # the recipe's own figures, beside its misfit to the data
    if plan is not None and frame is not None:
        plan = for_rows(plan, len(frame))  # as the release settles it
    out: dict = {
        "valid": not problems,
        "problems": problems,
        "release": recipe.release.type,
        "budget": {"epsilon": recipe.budget.epsilon, "delta": recipe.budget.delta},
    }
    copied = copied_domain_warnings(recipe)
    if copied:
        out["warnings"] = copied
    if ledger is not None and loaded is not None and plan is not None and not problems:
        from dpstudio.errors import BudgetError

        try:
            summary = ledger.check_unrecorded(
                loaded.sha256,
                loss=plan.total,
                dataset_name=Path(loaded.path).name,
                label=recipe.input.dataset,
                fingerprint=ledger.fingerprint_rows(frame) if ledger.needs_fingerprint(loaded.sha256) else None,
            )
            out["ledger"] = {k: summary.get(k) for k in ("cap", "spent", "remaining")}
            undone = earlier_protection_warning(ledger, (summary.get("identity") or {}).get("dataset"), plan)
            if undone:
                out.setdefault("warnings", []).append(undone)
        except BudgetError as exc:
            problems = [*problems, Problem(str(exc), field="budget", page="budget")]
            out.update(valid=False, problems=problems)
    if plan is not None:
        out.update(plan.to_json())
        if frame is None and any(isinstance(u.mechanism, LogisticRegressionRelease) for u in plan.units):
            # the model's mechanism (and with it the delta charged) follows from the row count,
            # unknown here: the total above is the budget's, not necessarily what a release charges
            out.setdefault("warnings", []).append(
                "the model's mechanism is chosen from the table's row count when it runs: objective "
                "perturbation with Laplace-like noise charges delta = 0; `recipe check --with-data` "
                "prints the total a release of this table charges"
            )
        if plan.label is not None:
            if frame is not None and not problems:
                from dpstudio.risk import label_risk

                views = label_risk(recipe, frame).get("label_views", {})
                for name, view in views.items():
                    eff = view.get("effective_label_epsilon")
                    if eff is None:  # label release: the public columns' own information
                        eff = {
                            "epsilon_label_rr": view.get("epsilon_label"),
                            "informed_minus_naive_at_epsilon": view.get("at_epsilon", {}).get("informed_minus_naive"),
                        }
                    out["label_guarantee"]["effective_for_label"] = {
                        "column": name,
                        **eff,
                        "computed_on": "raw data - internal use only",
                    }
    return out


@dataclass
class ReleaseResult:
    """Everything the report and the GUI need to describe a finished release."""

    recipe: Recipe
    plan: ReleasePlan
    outcome: ReleaseOutcome
    schema: object
    dataset_name: str
    input_sha256: str
    release_id: str
    started_at: str
    randomness: str
    output_path: str | None = None
    output_sha256: str | None = None
    ledger_before: dict | None = None
    ledger_after: dict | None = None
    ledger_identity: dict | None = None  # how the ledger resolved the input to its dataset
    ledger_recorded: bool = False  # False: not recorded in any ledger (--no-ledger)
    #: the release's id in the ledger (``dpstudio ledger show`` lists it under this id)
    ledger_entry: int | None = None
    risk: dict | None = None
    version: str = __version__
    warnings: list[str] = field(default_factory=list)
    committed: bool = False  # past the point of no return: output in place, spend recorded
    recorded_total: object = None  # the loss the ledger recorded (the reserved plan's total)
    artifact_path: str | None = None  # the density side file, when written
    artifact_sha256: str | None = None  # ... and its SHA-256
    report_path: str | None = None  # the report, when written
    report_error: str | None = None  # why the report failed after the commit
    operator: str | None = None  # who ran the release (printed in the report; None: not given)
    #: where the release ran: "in memory", "streamed in blocks of N rows", "on the Dask cluster at ..."
    engine: str = "in memory"
    rows: int | None = None  # rows read from the input (a streamed release holds no frame)

    def spent_text(self) -> str | None:
        """What the ledger recorded for this release, "ε = 1.5, δ = 1e-06" (None: nothing)."""
        eps = getattr(self.recorded_total, "epsilon", None)
        if not self.ledger_recorded or eps is None:
            return None
        delta = getattr(self.recorded_total, "delta", 0.0) or 0.0
        return f"\u03b5 = {eps:.3g}" + (f", \u03b4 = {delta:.3g}" if delta > 0 else "")

    def written_text(self) -> str:
        """What the commit did: where the data went and what the ledger recorded."""
        spent = self.spent_text()
        if spent is None:
            recorded = "nothing recorded in any ledger"
        else:
            entry = f" as release {self.ledger_entry}" if self.ledger_entry is not None else ""
            recorded = f"{spent} recorded in the ledger{entry}"
        return f"the data was written to {self.output_path} and {recorded}"

    def done_text(self) -> str:
        """One sentence saying exactly what happened (for the CLI and the GUI)."""
        text = self.written_text()
        if self.report_error is not None:
            text += f"; the report failed: {self.report_error}"
        elif self.report_path is not None:
            text += f"; the report was written to {self.report_path}"
        return text


class _Failure:
    """What went wrong in a step after the point of no return."""

    def __init__(self, message: str):
        self.message = message


def _failure_text(exc: BaseException) -> str:
    import os

    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    if isinstance(exc, Cancelled):
        return "cancelled"
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{exc.strerror or type(exc).__name__}: {exc.filename}" if exc.filename else str(exc)
    # another library's message may quote private data (cli._report_internal_error)
    return f"internal error {type(exc).__name__}" + (f": {exc}" if os.environ.get("DPSTUDIO_DEBUG") else "")


def _after_commit(result: ReleaseResult, what: str, step):
    """Run a step of a release that is already final: a failure, Ctrl-C included, is a warning."""
    try:
        return step()
    except BaseException as exc:  # noqa: BLE001 - nothing may undo a committed release
        failure = _Failure(_failure_text(exc))
        result.warnings.append(
            f"{what} failed after the release was final ({result.written_text()}): {failure.message}"
        )
        return failure


def _quiet(progress):
    """A progress callback that cannot cancel or fail (the GUI's raises once cancel was pressed)."""

    def report(fraction: float, message: str = "") -> None:
        try:
            progress(fraction, message)
        except BaseException:  # noqa: BLE001 - a final release is not cancelled
            pass

    return report


def _operator(name: str | None) -> str | None:
    """The operator to print: ``name`` as given, else the one remembered in the preferences."""
    from dpstudio import prefs

    return prefs.clean_operator(name) if name is not None else prefs.operator()


def ledger_kind(recipe: Recipe, plan: ReleasePlan) -> str:
    """The release type the ledger records: the guarantee delivered.  A record release that
    copies columns marked public is semi-sensitive DP (plan.record.assemble), and its spend
    counts with the semi-sensitive releases', not under record releases (audit finding: the
    budget panel filed it under one guarantee while the review and report named another)."""
    if recipe.release.type == "record" and plan.guarantee == "semi-sensitive":
        return "semi-sensitive"
    return recipe.release.type


def ledger_columns(plan: ReleasePlan) -> dict[str, list[str]]:
    """What the ledger keeps of a release's columns: those it put noise on, those it copied."""
    return {"protected": list(plan.protected_columns()), "unchanged": list(plan.unchanged_columns())}


def earlier_protection_warning(ledger, dataset: str | None, plan: ReleasePlan, *, exclude=None) -> str | None:
    """A warning when this release copies unchanged a column that earlier releases of the same
    dataset protected with noise: the copy undoes that protection (the column is public by the
    user's choice now, but the earlier guarantee no longer hides it).  None when there is none."""
    if ledger is None or not dataset:
        return None
    found = ledger.protected_before(dataset, plan.unchanged_columns(), exclude=exclude)
    if not found:
        return None

    def releases(ids: list[int]) -> str:  # a few ids, then how many (thousands made a page of them)
        if len(ids) == 1:
            return f"release {ids[0]}"
        more = f" and {len(ids) - 5} more" if len(ids) > 5 else ""
        return "releases " + ", ".join(str(i) for i in ids[:5]) + more

    parts = [f"{name} ({releases(ids)})" for name, ids in found.items()]
    return (
        f"this release copies unchanged column(s) that earlier releases of this dataset protected with noise: "
        f"{'; '.join(parts)}; published as they are, their values are no longer hidden by that noise"
    )


def refuse_paid_targets(ledger, targets) -> None:
    """No file a release (or ``recipe init``/``recipe domains``) writes may be an earlier recorded
    release's output, report or density side file, wherever it now lies, nor lie inside a
    recorded dataset folder (:meth:`dpstudio.ledger.Ledger.paid_output`): refused
    before anything is read or reserved, since writing there would lose a release already paid
    for (the ledger would keep its charge and ``ledger verify`` would report it changed).
    ``targets``: a :class:`dpstudio.targets.Targets`, or ``(what, path)`` pairs."""
    if ledger is None:
        return
    if not isinstance(targets, list | tuple):
        targets = [
            (what, p)
            for what, p in (
                ("output", targets.output),
                ("density side file", targets.artifact),
                ("report", targets.report),
            )
            if p is not None
        ]
    for what, path in targets:
        earlier = ledger.paid_output(path)
        if earlier is None:
            continue
        if earlier.get("data"):  # another dataset's raw input (its own is refused by the targets check)
            raise UserError(
                f"the {what} {path} holds the data of dataset {earlier['dataset']} (a version of it the "
                "ledger knows): writing over it would destroy private data. Choose another name"
            )
        delta = f", delta = {earlier['delta']:.3g}" if earlier["delta"] else ""
        kind = earlier["what"]
        if earlier.get("edited"):
            where = f"is the {kind} (edited since)"
        elif os.path.realpath(earlier["path"] or "") == os.path.realpath(path):
            where = f"holds the {kind}"
        else:
            where = f"is inside or a copy of the {kind} ({earlier['path']})"
        raise UserError(
            f"the {what} {path} {where} of release {earlier['id']} of {earlier['dataset']} "
            f"({earlier['release_type']}, {earlier['time']}, epsilon = {earlier['epsilon']:.6g}{delta} spent): "
            "writing over it would lose a release already paid for. Choose another name"
        )


def refuse_paid_file(ledger_path, what: str, path) -> None:
    """A file another command writes (a recipe, a domain file: ``recipe init -o``, the GUI's
    save dialogs) never replaces an earlier release's output, report or side file, ``--force``
    or a dialog's "replace?" or not.  Reads the ledger if there is one; never creates one."""
    from dpstudio.ledger import Ledger

    if os.path.exists(path):
        refuse_paid_targets(Ledger.open_existing(ledger_path), [(what, path)])


def _refuse_too_large(path) -> None:
    """A file that cannot fit in the available memory is refused before loading (an
    out-of-memory kill would lose the user's time, not their data), with what to do."""
    from dpstudio.engine.data.sample import available_memory, estimated_memory, file_format

    need = estimated_memory(path)
    if need > available_memory() and file_format(path) in ("csv", "parquet"):
        raise UserError(
            f"{Path(path).name} needs about {need / 2**30:.1f} GB loaded, more than this computer has "
            f"free: release it with --engine stream (read in blocks, whatever its size)"
        )


def load_input(recipe: Recipe, input_path=None, *, progress=no_progress, cancel=NEVER_CANCELLED):
    """Load the recipe's input (or ``input_path``) and check it is the file the recipe was made for."""
    from dpstudio.engine.data.loader import load_table

    path = input_path or recipe.input.path
    loaded = load_table(path, recipe.input.options.to_dict() or None, progress=progress, cancel=cancel)
    if recipe.input.sha256 and loaded.sha256 != recipe.input.sha256:
        raise UserError(
            f"{path} is not the file this recipe was made for (SHA-256 {loaded.sha256[:12]}... "
            f"!= {recipe.input.sha256[:12]}...); make a new recipe for it"
        )
    return loaded


def execute_release(
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
    engine: str = "memory",
    scheduler: str | None = None,
    block_rows: int | None = None,
) -> ReleaseResult:
    """Run a whole release: load, validate, account, reserve budget, perturb, write, record.

    Point of no return: every target (data path and format, density side file, report path,
    format and variant) is checked by :func:`dpstudio.targets.validate_targets` before the input
    is read or the ledger reserves anything, and nothing is written or spent before the commit.
    After the commit (``on_commit()`` is then called) the release is final: cancel is ignored and
    a failure of the side file, the risk estimate or the report - even a KeyboardInterrupt - is
    a warning on the result (``report_error``), never an exception.

    ``new_dataset``: the user declares the input a new dataset even if the ledger recognises its
    rows (recorded).  ``record=False`` (``--no-ledger``): the ledger, if given, is only consulted
    - the release is refused as it would be, but nothing is recorded.  ``operator``: who runs the
    release, printed in the report (default: the name remembered in the preferences).

    ``engine``: ``"memory"`` loads the table; ``"stream"`` reads it in blocks of ``block_rows``
    rows with bounded memory (:mod:`dpstudio.pipeline.blocks`); ``"dask"`` runs the same
    mechanisms on the Dask cluster at ``scheduler`` (:mod:`dpstudio.pipeline.cluster`).  With a
    fixed seed all three release the same table."""
    if engine not in ENGINES:
        raise UserError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if engine != "memory":
        kw = dict(
            output_path=output_path,
            input_path=input_path,
            ledger=ledger,
            report_path=report_path,
            report_variant=report_variant,
            with_risk=with_risk,
            progress=progress,
            cancel=cancel,
            new_dataset=new_dataset,
            record=record,
            recipe_path=recipe_path,
            on_commit=on_commit,
            operator=operator,
            block_rows=block_rows,
        )
        if engine == "stream":
            from dpstudio.pipeline.blocks import execute_streamed

            return execute_streamed(recipe, **kw)
        from dpstudio.pipeline.cluster import execute_on_dask

        return execute_on_dask(recipe, scheduler=scheduler, **kw)
    if scheduler is not None:
        raise UserError("a scheduler address is for the dask engine only")
    if block_rows is not None and recipe.release.type not in ("record", "label", "semi-sensitive"):
        block_rows = None  # only record releases draw their noise block by block
    from dpstudio.engine.data.schema import infer_schema
    from dpstudio.engine.rng import make_random_source
    from dpstudio.export import write_table, write_text
    from dpstudio.recipe.build import fill_domains_from_data
    from dpstudio.targets import refuse_too_many_xlsx_rows, validate_targets

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
    if out_fmt == "parquet-dataset":
        raise UserError(
            "a partitioned Parquet dataset (an output path ending with a slash) is written block by "
            "block: release with --engine stream or --engine dask"
        )

    _refuse_too_large(input_path or recipe.input.path)
    loaded = load_input(recipe, input_path, progress=sub_progress(progress, 0.0, 0.15), cancel=cancel)
    frame = loaded.frame
    schema = infer_schema(frame)
    # 'copied from the data' domains (acknowledged) are filled in first, so their limits are
    # checked with the values; the declared types, not the file, fix the output grid: data they
    # cannot hold is refused
    recipe = fill_domains_from_data(recipe, frame)
    plan, problems = compile_checked(recipe, schema)
    problems += declared_type_problems(recipe, frame)
    if problems or plan is None:
        raise RecipeError(problems)
    # the row count is public: a charge that depends on it is settled before the reservation
    plan = for_rows(plan, len(frame))
    refuse_too_many_xlsx_rows(recipe, out_fmt, len(frame))
    cancel.check()

    reservation = None
    ledger_before = ledger_identity = None
    unrecorded_check = None
    if ledger is not None:
        # the file's dataset is found by its SHA-256, the recipe's dataset name or its rows
        # hashing every row costs ~1 s per million: skipped when this exact file is already known
        rows_fp = ledger.fingerprint_rows(frame) if ledger.needs_fingerprint(loaded.sha256) else None
        who = dict(
            dataset_name=Path(loaded.path).name,
            label=recipe.input.dataset,
            fingerprint=rows_fp,
            new_dataset=new_dataset,
        )
        if not record:  # refuses like a recorded release would, records nothing
            ledger_before = ledger.check_unrecorded(
                loaded.sha256, loss=plan.total, output_path=output_path, side_files=targets.side_files(), **who
            )
            ledger_identity = ledger_before.pop("identity")
            # it holds no names: looked at again just before writing (a recorded release may
            # have completed its own output or report under these names meanwhile)
            unrecorded_check = ledger
            ledger = None
        else:
            # refuses (BudgetError) before any noise is drawn
            reservation = ledger.reserve(
                loaded.sha256,
                loss=plan.total,
                release_type=ledger_kind(recipe, plan),
                recipe_sha256=recipe.sha256(),
                output_path=str(output_path),
                side_files=targets.side_files(),
                columns=ledger_columns(plan),
                **who,
            )
            ledger_before, ledger_identity = reservation.before, reservation.identity
    try:
        rng = make_random_source(recipe.randomness.seed)
        outcome = execute(
            plan, frame, rng, progress=sub_progress(progress, 0.15, 0.85), cancel=cancel, block_rows=block_rows
        )
        cancel.check()
        progress(0.86, "writing output")
        if outcome.data is not None:
            data = outcome.data

            def writer(tmp):
                return write_table(
                    data, tmp, fmt=out_fmt, formula_protection=recipe.outputs.formula_protection, cancel=cancel
                )

        else:
            import json

            text = json.dumps(outcome.artifact, indent=2)

            def writer(tmp):
                return write_text(text, tmp)

        from dpstudio.pipeline.blocks import write_output

        # the engines' one writer: through the ledger's commit, or (an unrecorded release, which
        # holds no names) atomically, looking again for a recorded release's files just before
        # the rename; an interrupt after the commit had begun comes back as late_interrupt
        output_sha, late_interrupt = write_output(
            ledger, unrecorded_check, reservation, targets, writer, on_commit=on_commit
        )
    except BaseException:
        if reservation is not None:  # before the commit (the writer settles its own failures)
            ledger.abort(reservation)
        raise

    return _conclude(
        recipe=recipe,
        plan=plan,
        outcome=outcome,
        schema=schema,
        dataset_name=Path(loaded.path).name,
        input_sha256=loaded.sha256,
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
        frame=frame,
        progress=progress,
        on_commit=on_commit,
        operator=operator,
        engine="in memory",
        reservation=reservation,
    )


def _record_file(result, ledger, reservation, kind: str, path) -> None:
    """A file written beside a recorded release (its report, a density's side file) is recorded
    with it, so no later release writes over it; after the commit, so a failure is a warning."""
    if ledger is None or reservation is None:
        return
    rid = reservation.id
    what = "report" if kind == "report" else "density side file"
    _after_commit(result, f"the {what}'s record in the ledger", lambda: ledger.record_file(rid, kind, path))


def _conclude(
    *,
    recipe: Recipe,
    plan: ReleasePlan,
    outcome: ReleaseOutcome,
    schema,
    dataset_name: str,
    input_sha256: str,
    release_id: str,
    started: str,
    rng,
    output_path,
    output_sha,
    ledger,
    ledger_before,
    ledger_identity,
    late_interrupt: BaseException | None,
    targets,
    report_path,
    report_variant: str,
    with_risk: bool,
    frame,
    progress,
    on_commit,
    operator: str | None,
    engine: str,
    rows: int | None = None,
    reservation=None,
) -> ReleaseResult:
    """Everything after the point of no return (shared by every engine): the result, the
    warnings, the ledger summary, the density side file, the risk estimate and the report -- a
    failure of any of them is a warning on the result."""
    # point of no return: the output is in place and the spend recorded.  From here the release
    # is final - cancel is ignored and every failure (even Ctrl-C) becomes a warning on the result
    from dpstudio.targets import DATASET_FORMAT, artifact_only

    progress = _quiet(progress)
    if on_commit is not None:
        on_commit()
    # the report prints the mechanisms that drew the noise (scales on DP-estimated bounds), whose
    # total never exceeds the reserved one
    reserved_total = plan.total  # what the ledger recorded
    plan = outcome.final_plan if outcome.final_plan is not None else plan
    result = ReleaseResult(
        recipe=recipe,
        plan=plan,
        outcome=outcome,
        schema=schema,
        dataset_name=dataset_name,
        input_sha256=input_sha256,
        release_id=release_id,
        started_at=started,
        randomness=rng.describe(),
        output_path=str(output_path),
        output_sha256=output_sha,
        ledger_before=ledger_before,
        warnings=list(plan.notes),
        operator=_operator(operator),
        engine=engine,
        rows=rows if rows is not None else (len(frame) if frame is not None else None),
    )
    result.committed, result.recorded_total = True, reserved_total
    result.ledger_entry = reservation.id if reservation is not None else None
    # a DP category estimate that kept nothing leaves a column of "(other)" only (a synthetic
    # release goes on with it): say so where the user reads the outcome, not only in the table
    result.warnings += emptied_dp_categories(plan.recipe if plan.recipe is not None else recipe)
    result.warnings += copied_domain_warnings(recipe)
    fmt = targets.output_format
    if not artifact_only(recipe) and fmt not in (recipe.outputs.format, DATASET_FORMAT):
        # the output's extension chose the format (targets._output_format): say so, not silently
        result.warnings.append(
            f"the output was written as {fmt}, as its name {Path(output_path).name} says; the "
            f"recipe's format ({recipe.outputs.format}) applies to output names without an extension"
        )
    pending = getattr(ledger, "completion_pending", None) if ledger is not None else None
    if pending:
        result.warnings.append(
            f"the ledger could not mark the release complete ({pending}); it is recorded "
            f"as committing and completed when the ledger is next opened"
        )
    if late_interrupt is not None:
        result.warnings.append(
            f"{_failure_text(late_interrupt)} while the output was being put in place; "
            f"the release had "
            f"passed its point of no return, so it was completed and recorded"
        )
    result.ledger_identity, result.ledger_recorded = ledger_identity, ledger is not None
    if ledger is not None and reservation is not None:
        copied = _after_commit(
            result,
            "the check of earlier releases' columns",
            lambda: earlier_protection_warning(ledger, reservation.dataset, plan, exclude=reservation.id),
        )
        if isinstance(copied, str):
            result.warnings.append(copied)
    if ledger is not None:
        after = _after_commit(result, "the ledger summary", lambda: ledger.summary(input_sha256))
        result.ledger_after = after if isinstance(after, dict) else None
    else:
        result.warnings.append("not recorded in any ledger: the spend of this release is not tracked")
    if recipe.randomness.seed is not None:
        result.warnings.append(
            f"a fixed random seed ({recipe.randomness.seed}) was used: the noise is "
            f"reproducible by anyone who knows it - not for production releases"
        )
    if targets.artifact is not None and outcome.data is not None and outcome.artifact is not None:
        # a density with sampled values: the table is the output, the JSON goes beside it
        import json

        from dpstudio.export import write_text

        text = json.dumps(outcome.artifact, indent=2)
        done = _after_commit(result, "the density side file", lambda: write_text(text, targets.artifact))
        result.artifact_path = None if isinstance(done, _Failure) else str(targets.artifact)
        if result.artifact_path is not None:
            result.artifact_sha256 = done if isinstance(done, str) else None
            _record_file(result, ledger, reservation, "artifact", targets.artifact)
    # synthetic-data risk needs a second fit on a training split: only on request (dpstudio risk)
    if (
        frame is None
        and report_path is not None
        and report_variant == "internal"
        and with_risk
        and recipe.release.type != "synthetic"
    ):
        result.warnings.append(
            "no residual-risk estimate: it is computed on the whole table in memory, and this "
            "release read its input in blocks"
        )
    if (
        frame is not None
        and report_path is not None
        and report_variant == "internal"
        and with_risk
        and recipe.release.type != "synthetic"
    ):
        progress(0.88, "estimating residual risks (raw data, internal report only)")

        def estimate():
            try:
                from dpstudio.risk import risk_for_recipe

                # the recipe as it ran (DP-estimated domains resolved): the simulated release for
                # the attack uses the scales that drew the noise, not a new estimate of its own
                result.risk = risk_for_recipe(result.plan.recipe or recipe, frame, seed=0)
            except Exception as exc:  # the release is done; a failed estimate must not lose it
                # the type only: an arbitrary error's text can quote a cell, and warnings are
                # printed by the CLI and the report
                result.warnings.append(
                    f"risk estimate unavailable: it failed with {type(exc).__name__} "
                    f"(the error's text is withheld: it can quote a value of the raw "
                    f"data); the release itself is complete"
                )

        _after_commit(result, "the risk estimate", estimate)
    if report_path is not None:
        progress(0.9, "writing report")

        def report():
            from dpstudio.report import write_report

            write_report(result, report_path, variant=report_variant, frame=frame)

        done = _after_commit(result, "the report", report)
        if isinstance(done, _Failure):
            result.report_error = done.message
        else:
            result.report_path = str(report_path)
            # the report belongs to the release paid for: no later release may replace it
            _record_file(result, ledger, reservation, "report", report_path)
    if ledger is not None and reservation is not None and targets.side_files():
        # its report and side file are written (and recorded) or failed: other releases may
        # name them again; a failure here only keeps the names held until this process ends
        _after_commit(result, "freeing the report's name in the ledger", lambda: ledger.files_written(reservation))
    progress(1.0, "done")
    return result
