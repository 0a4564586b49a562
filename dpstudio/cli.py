"""Headless command line: every GUI action has an equivalent here, driven by the same recipe.

Exit codes: 0 success, 2 user error (one line on stderr, no traceback), 1 internal error,
3 ``recipe init`` wrote a recipe that still has problems to fix (listed on stderr).
This module never imports Qt; ``dpstudio gui`` imports the GUI lazily.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from dpstudio import __version__
from dpstudio.errors import BudgetError, RecipeError, UserError

EXIT_OK, EXIT_INTERNAL, EXIT_USER = 0, 1, 2
#: ``recipe init`` wrote the recipe, but it is not ready: problems to fix (``recipe check`` lists them)
EXIT_NOT_READY = 3


class _UsageError(UserError):
    """A command line argparse rejects; :func:`main` reports it like any user error."""


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one ``dpstudio: ...`` line and exit code 2 (no usage block)."""

    def error(self, message):
        command = self.prog.partition(" ")[2]  # "dpstudio recipe init" -> "recipe init"
        raise _UsageError(f"{command + ': ' if command else ''}{message} (see --help)")


def _finite(text: str) -> float:
    """argparse type: a finite float ('1e400' and a 400-digit number overflow to inf; 'nan')."""
    import math
    import re

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {_brief(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {_brief(text)}")
    # a plain decimal number: Python's float() also reads '1_0' as 10, which nobody means as a budget
    if not re.fullmatch(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*", text):
        raise argparse.ArgumentTypeError(f"expected a number, got {_brief(text)}")
    return value


def _bounded_int(low: int, high: int):
    """argparse type: an integer in [low, high] (a 400-digit --rows would be allocated)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {_brief(text)}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer in [{low:,}, {high:,}], got {_brief(text)}")
        return value

    parse.__name__ = "integer"
    return parse


def _brief(text: str, limit: int = 40) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


_SEED = _bounded_int(0, 2**63 - 1)


def _compact(obj):
    """Drop Renyi-DP curves from printed JSON (long, and only the accountant needs them); an
    accounting method's total named "rdp" (an (epsilon, delta), as the report prints) stays."""
    if isinstance(obj, dict):
        return {
            k: _compact(v)
            for k, v in obj.items()
            if k != "rdp" or (isinstance(v, dict) and "epsilon" in v and "delta" in v)
        }
    if isinstance(obj, list):
        return [_compact(v) for v in obj]
    return obj


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(_compact(obj), indent=2, ensure_ascii=False, default=str) + "\n")


def _load_options(args) -> dict | None:
    opts = {}
    for key in ("delimiter", "encoding", "sheet"):
        v = getattr(args, key, None)
        if v is not None:
            opts[key] = v
    return opts or None


# ---- commands ------------------------------------------------------------------------------


def cmd_inspect(args) -> int:
    loaded, schema = _load_or_sample(args)
    _print_json(
        {
            "path": str(loaded.path),
            "format": loaded.format,
            "options": loaded.options,
            "sha256": loaded.sha256,
            **({"sampled_rows": len(loaded.frame)} if loaded.sample_of is not None else {}),
            **schema.to_json(),
        }
    )
    return EXIT_OK


def _load_or_sample(args):
    """The table ``recipe init`` / ``inspect`` read: loaded whole, or -- a CSV or Parquet file too
    large for this computer's memory -- a uniform sample of its rows (said on stderr): the
    recipe's types and roles are inferred from it, and the release streams every row."""
    from dpstudio.engine.data.loader import load_table
    from dpstudio.engine.data.sample import SAMPLE_ROWS, is_large_file, load_sample, schema_of
    from dpstudio.engine.progress import NEVER_CANCELLED, no_progress

    if not is_large_file(args.file):
        loaded = load_table(args.file, _load_options(args))
    else:
        loaded = load_sample(args.file, _load_options(args), progress=no_progress, cancel=NEVER_CANCELLED)
        print(
            f"{args.file} is too large to load whole: types and roles are inferred from a uniform "
            f"sample of {min(SAMPLE_ROWS, loaded.sample_of or 0):,} of its {loaded.sample_of:,} rows; "
            "release it with --engine stream (every row is read, in blocks)",
            file=sys.stderr,
        )
    return loaded, schema_of(loaded)


def cmd_recipe_init(args) -> int:
    from dpstudio.export import write_text
    from dpstudio.recipe.build import (
        confirm_inferred_facts,
        fill_domains_from_data,
        parse_assignments,
        recipe_from_schema,
    )
    from dpstudio.recipe.validate import declared_type_problems, inferred_facts

    loaded, schema = _load_or_sample(args)
    options = {}
    if args.synth:
        options["method"] = args.synth
    for item in args.option or ():
        k, _, v = item.partition("=")
        if not k or not _:
            raise UserError(f"--option: expected KEY=VALUE, got {item!r}")
        options[k] = _option_value(k, v)
    if args.no_clamp:
        from dpstudio.plan.record import CLAMP_OPTION

        if args.release not in ("record", "label", "semi-sensitive"):
            raise UserError(f"--no-clamp: only record, label and semi-sensitive releases clamp, not {args.release!r}")
        options[CLAMP_OPTION] = False
    recipe = recipe_from_schema(
        loaded,
        schema,
        release=args.release,
        epsilon=args.epsilon,
        delta=args.delta,
        roles=parse_assignments(args.role, "--role"),
        bounds=parse_assignments(args.bounds, "--bounds"),
        categories=parse_assignments(args.categories, "--categories"),
        mechanisms=parse_assignments(args.mechanism, "--mechanism"),
        seed=args.seed,
        weights=parse_assignments(args.weight, "--weight"),
        types=parse_assignments(args.type, "--type"),
        out_format=args.format,
        rows=args.rows,
        release_options=options,
        others=parse_assignments(args.other, "--other"),
    )
    if args.confirm_inferred:
        recipe = confirm_inferred_facts(recipe)  # recorded per column as "confirmed"
    if args.domains:
        recipe = _apply_domain_file(recipe, args)
    if loaded.sample_of is None:  # a sampled file's copies are filled by the release, from every row
        recipe = fill_domains_from_data(recipe, loaded.frame)  # only for domains the user asked to copy
    if recipe.release.type == "synthetic" and "method" not in recipe.release.options:
        from dataclasses import replace

        from dpstudio.plan.synthetic import recommend_method

        method, why = recommend_method(recipe)
        recipe = replace(recipe, release=replace(recipe.release, options=recipe.release.options.with_(method=method)))
        print(f"synthetic method: {method} (recommended: {why}; choose with --synth)", file=sys.stderr)
    if args.no_formula_protection:
        from dataclasses import replace as _replace

        recipe = _replace(recipe, outputs=_replace(recipe.outputs, formula_protection=False))
    if args.target:
        recipe = _solve_targets(recipe, args, loaded)
    # the recipe must never replace the data it describes (nor the ledger)
    from dpstudio.ledger import default_ledger_path
    from dpstudio.targets import refuse_overwrite

    ledger_path = args.ledger or default_ledger_path()
    if args.domains and os.path.exists(args.output) and os.path.samefile(args.domains, args.output):
        raise UserError(f"the recipe {args.output} is the domain file it was made from: choose another name")
    refuse_overwrite("recipe", args.output, input_path=args.file, ledger_path=ledger_path, replace_existing=args.force)
    from dpstudio.pipeline import refuse_paid_file

    refuse_paid_file(ledger_path, "recipe", args.output)
    write_text(recipe.dumps() + "\n", args.output)
    from dpstudio.plan import compile_checked

    plan, problems = compile_checked(recipe, schema)
    problems += declared_type_problems(recipe, loaded.frame)
    print(
        f"wrote {args.output}"
        + (f" ({len(problems)} problem(s) to fix: run 'dpstudio recipe check')" if problems else ""),
        file=sys.stderr,
    )
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    if plan is not None and (
        plan.total.epsilon > recipe.budget.epsilon * (1 + 1e-9) or plan.total.delta > recipe.budget.delta * (1 + 1e-9)
    ):
        # the plan's own total (DP domain estimates of a record release add to the typed epsilon,
        # and a category list's partition selection adds a delta)
        delta = f" and delta {plan.total.delta:.3g}" if plan.total.delta > recipe.budget.delta * (1 + 1e-9) else ""
        print(
            f"  note: this release spends epsilon {plan.total.epsilon:.6g}{delta} in all: --epsilon "
            f"{recipe.budget.epsilon:g}"
            + (f", --delta {recipe.budget.delta:g}" if delta else "")
            + " plus the DP domain estimates ('dpstudio recipe check' lists them)",
            file=sys.stderr,
        )
    from dpstudio.recipe.build import empty_cell_notes

    for note in empty_cell_notes(recipe, schema):
        print(f"  note: {note}", file=sys.stderr)
    if recipe.release.type == "label":
        # init proposed public where the data suggested sensitive (recipe_from_schema): say so,
        # the columns go out as they are
        given = parse_assignments(args.role, "--role")
        flipped = [
            c.name
            for c in schema.columns
            if c.name not in given
            and c.suggested_role in ("sensitive", "embedding")
            and recipe.column(c.name).role == "public"
        ]
        if flipped:
            print(
                f"  note: {', '.join(flipped)}: proposed public, so published as they are (a label release "
                "perturbs only the label); leave them out with --role COL=ignore, or protect them with a "
                "record or semi-sensitive release",
                file=sys.stderr,
            )
    from dpstudio.plan.domains import copied_domain_warnings

    for warning in copied_domain_warnings(recipe):
        print(f"  warning: {warning}", file=sys.stderr)
    inferred = inferred_facts(recipe)
    if inferred:
        # the type fixes the output grid and the role whether a column is released at all
        print(
            f"{len(inferred)} column(s) have a type, role or 'may be empty' flag read from the data, not confirmed "
            f"(listed by 'dpstudio recipe check'); confirm with --type/--role or --confirm-inferred",
            file=sys.stderr,
        )
    # the exit code says whether the recipe can be released as written (the file is written either way)
    return EXIT_NOT_READY if problems else EXIT_OK


def _apply_domain_file(recipe, args):
    """``recipe init --domains FILE``: the file's domains for the columns that --bounds and
    --categories leave without one; names it cannot serve are listed, never dropped silently."""
    from dpstudio.recipe.domainfile import apply_domains, load_domains

    given = set(_assigned_columns(args.bounds)) | set(_assigned_columns(args.categories))
    domains = {k: v for k, v in load_domains(args.domains).items() if k not in given}
    # a copy from the data is applied because the file asks for it (recorded and flagged, as --bounds COL=data)
    recipe, report = apply_domains(recipe, domains, acknowledge_data=True)
    print(f"--domains {args.domains}: " + "; ".join(report.lines()), file=sys.stderr)
    copied = [
        c.name for c in recipe.columns if c.name in domains and c.domain is not None and c.domain.source == "data"
    ]
    if copied:
        # said as loudly as --bounds COL=data would be: the file, not the user's flag, asked for it
        print(
            f"warning: the domain file copies the domains of {', '.join(copied)} from the private data: "
            "they are not covered by the guarantee (recorded in the recipe and flagged in the report)",
            file=sys.stderr,
        )
    return recipe


def _assigned_columns(items) -> list[str]:
    return [item.split("=", 1)[0] for item in items or () if "=" in item]


def cmd_recipe_domains(args) -> int:
    """``recipe domains RECIPE -o FILE``: the recipe's domains as a domain file (JSON or CSV)."""
    from dpstudio.ledger import default_ledger_path
    from dpstudio.recipe.domainfile import save_domains
    from dpstudio.recipe.model import load_recipe
    from dpstudio.targets import refuse_overwrite

    recipe = load_recipe(args.recipe)
    refuse_overwrite(
        "domain file",
        args.output,
        input_path=recipe.input.path,
        input_sha256=recipe.input.sha256,
        recipe_path=args.recipe,
        ledger_path=default_ledger_path(),
        replace_existing=args.force,
    )
    from dpstudio.pipeline import refuse_paid_file

    refuse_paid_file(default_ledger_path(), "domain file", args.output)
    n = save_domains(recipe, args.output)
    print(f"wrote {n} domain(s) to {args.output}", file=sys.stderr)
    return EXIT_OK


def _option_value(key: str, text: str):
    """A JSON value (checked like a recipe: no NaN/Infinity, duplicate keys or deep nesting),
    or the text itself when it is not JSON (``--option method=mst``)."""
    from dpstudio.recipe.model import parse_recipe_text

    try:
        json.loads(text, parse_constant=lambda name: _raise(ValueError(name)))
    except RecursionError:
        pass  # parse_recipe_text reports it
    except ValueError:
        return text
    return parse_recipe_text(text, f"--option {key}")


def _raise(exc: Exception):
    raise exc


def _parse_targets(specs) -> tuple:
    from dpstudio.recipe.model import Target

    out = []
    for spec in specs:
        try:
            out.append(Target.parse(spec))
        except ValueError as exc:
            raise UserError(f"--target: {exc}") from None
    return tuple(out)


def _affordable_cap(sha: str | None, ledger_path=None) -> tuple[float, str]:
    """(the largest budget the solver may choose, why): the dataset's remaining ledger cap when
    it has one, else the product's limit."""
    from dpstudio.ledger import Ledger
    from dpstudio.recipe.validate import MAX_EPSILON

    ledger = Ledger.open_existing(ledger_path)
    if ledger is None or not sha:
        return MAX_EPSILON, "the product's limit"
    remaining = (ledger.summary(sha).get("remaining") or {}).get("epsilon")
    if remaining is None:
        return MAX_EPSILON, "the product's limit (this dataset has no cap)"
    return min(float(remaining), MAX_EPSILON), "this dataset's remaining cap"


def _solution_lines(solution) -> list[str]:
    from dpstudio.plan.solve import describe, value_text

    lines = []
    if solution.plan is not None:
        total = solution.plan.total
        lines.append(
            f"targets met at epsilon {solution.epsilon:.4g} (total charged {total.epsilon:.4g}"
            + (f", delta {total.delta:.3g}" if total.delta else "")
            + f"; split: {solution.split})"
        )
        lines.append(
            "  split: " + ", ".join(f"{u.name} {u.epsilon:.3g}" for u in solution.plan.units if u.kind != "domain")
        )
    elif all(r.advisory for r in solution.results) and solution.recipe is not None:
        lines.append(
            f"risk targets checked at epsilon {solution.recipe.budget.epsilon:g} (as typed; internal estimates)"
        )
    else:
        lines.append("no budget meets every target")
    for r in solution.results:
        mark = "ok" if r.met else r.status
        if r.advisory:  # a raw-data estimate: labelled as such wherever it is printed
            mark = f"internal check: {r.status}"
        shown = value_text(r.target, r.predicted) if r.predicted is not None else value_text(r.target, r.best)
        lines.append(f"  [{mark}] {describe(r.target)}: {shown}" + (f" - {r.advice}" if r.advice else ""))
    lines += [f"  note: {n}" for n in solution.notes]
    return lines


def _solve_targets(recipe, args, loaded):
    """``recipe init --target``: the smallest budget (and split) meeting the targets, solved on
    the compiled plan (risk targets on an attacker model fitted on the data, internal)."""
    from dataclasses import replace

    from dpstudio.plan.solve import solve
    from dpstudio.risk import evidence_for

    recipe = replace(recipe, budget=replace(recipe.budget, targets=_parse_targets(args.target)))
    cap, why = _affordable_cap(loaded.sha256, getattr(args, "ledger", None))
    try:
        evidence = evidence_for(recipe, loaded.frame, rows=loaded.sample_of)
        solution = solve(recipe, evidence=evidence, cap=cap, split=args.split)
    except RecipeError:
        # problems no budget fixes (a missing domain, a wrong target): written with its targets
        # unsolved, the problems listed below; fix them and run init again with the same targets
        print("targets not solved yet: the recipe has problems to fix first (listed below)", file=sys.stderr)
        return recipe
    for line in _solution_lines(solution):
        print(line, file=sys.stderr)
    if all(r.advisory for r in solution.results):
        return recipe  # risk targets are checks: the budget as typed stands, the targets are recorded
    if not solution.feasible:
        raise UserError(f"no budget up to {cap:g} meets every target (the limit is {why}); nothing was written")
    return solution.apply()


def cmd_recipe_check(args) -> int:
    from dpstudio.pipeline import check_recipe
    from dpstudio.recipe.model import load_recipe

    try:
        recipe = load_recipe(args.recipe)
    except RecipeError as exc:
        _print_json({"valid": False, "problems": exc.problems})
        return EXIT_USER
    schema = frame = loaded = ledger = None
    if args.input or args.with_data:
        from dpstudio.engine.data.schema import infer_schema
        from dpstudio.ledger import Ledger
        from dpstudio.pipeline import load_input

        loaded = load_input(recipe, args.input)
        frame = loaded.frame
        schema = infer_schema(frame)
        # the dataset's cap, checked as the release will (read only; no ledger yet: nothing spent)
        ledger = Ledger.open_existing(getattr(args, "ledger", None))
    result = check_recipe(recipe, schema, frame, ledger=ledger, loaded=loaded)
    if loaded is None and "ledger" not in result:
        # "valid" is the recipe's; the cap is the dataset's, known once its file is resolved
        result["ledger"] = "not checked: add --with-data to check the dataset's cap as the release will"
    if frame is not None:
        from dpstudio.recipe.validate import declared_type_problems

        type_problems = declared_type_problems(recipe, frame)
        if type_problems:
            result["valid"] = False
            result["problems"] = list(result["problems"]) + type_problems
    from dpstudio.recipe.validate import inferred_facts

    # a caveat, not a problem: the recipe is valid, but these public choices were made by the data
    result["inferred_from_data"] = inferred_facts(recipe)
    if recipe.budget.targets:
        result["targets"] = _recheck_targets(recipe, frame, args)
    _print_json(result)
    return EXIT_OK if result["valid"] else EXIT_USER


def _recheck_targets(recipe, frame, args) -> dict:
    """``recipe check`` on a recipe with targets: solved again, and compared with the recipe's
    own budget (risk targets only with the data)."""
    from dataclasses import replace

    from dpstudio.plan import compile_checked
    from dpstudio.plan.solve import RISK_KINDS, Evidence, predict, solve, value_text
    from dpstudio.risk import evidence_for

    risky = [t for t in recipe.budget.targets if t.kind in RISK_KINDS]
    if risky and frame is None:
        return {
            "checked": False,
            "note": "risk targets need the data: run again with --with-data (or --input FILE)",
        }
    rows = recipe.budget.solved.get("rows")
    if frame is not None:
        evidence = evidence_for(recipe, frame)
    else:  # accuracy targets only; a marginals forecast uses the number of records solved with
        evidence = Evidence(rows=int(rows) if rows is not None else None)
    if evidence.rows is None and any(t.kind == "marginals" for t in recipe.budget.targets):
        return {"checked": False, "note": "a marginals target needs the number of records: run with --with-data"}
    cap, why = _affordable_cap(recipe.input.sha256, getattr(args, "ledger", None))
    solution = solve(recipe, evidence=evidence, cap=cap, split=recipe.budget.solved.get("split", "targets"))
    again = solution.to_json()
    notes = again.pop("notes", [])
    out: dict = {"checked": True, "cap": cap, "cap_is": why, "solved_again": again, "notes": notes}
    stripped = replace(recipe, budget=replace(recipe.budget, targets=()))
    plan = compile_checked(stripped)[0]
    if plan is not None:
        checked = {}
        for t in recipe.budget.targets:
            v = predict(plan, t, evidence)
            entry = {"predicted": v, "in_words": value_text(t, v), "met": _meets(t, v)}
            if t.kind in RISK_KINDS:  # a check on the raw data, never a reason to release or not
                entry["computed_on"] = "raw data - internal use only"
            checked[t.spec] = entry
        out["at_recipe_epsilon"] = {"epsilon": recipe.budget.epsilon, "targets": checked}
        if solution.epsilon is not None:
            out["recipe_vs_solved"] = (
                "the recipe's epsilon is the solved one"
                if abs(recipe.budget.epsilon - solution.epsilon) <= 1e-9 * solution.epsilon
                else f"the recipe's epsilon {recipe.budget.epsilon:g} differs from the solved {solution.epsilon:.6g}"
            )
    return out


def _meets(target, value) -> bool:
    from dpstudio.plan.solve import meets

    return meets(target, value)


def open_ledger(args):
    from dpstudio.ledger import Ledger

    return _say_recovered(Ledger(getattr(args, "ledger", None)))


def _say_recovered(ledger):
    """Tell the user (stderr) what opening ``ledger`` settled: releases whose process ended
    mid-way, completed (charged) or rolled back (nothing charged)."""
    from dpstudio.ledger import recovery_text

    for r in getattr(ledger, "recovered", None) or []:
        print(f"dpstudio: ledger {ledger.path}: {recovery_text(r)}", file=sys.stderr)
    return ledger


def cmd_release(args) -> int:
    from dpstudio.pipeline import execute_release
    from dpstudio.recipe.model import load_recipe

    recipe = load_recipe(args.recipe)
    if args.dataset:
        from dataclasses import replace

        recipe = replace(recipe, input=replace(recipe.input, dataset=args.dataset))
    if args.no_ledger:  # consulted (a cap still refuses) when one exists, never written
        from dpstudio.ledger import Ledger

        ledger = Ledger.open_existing(getattr(args, "ledger", None))
        if ledger is not None:
            _say_recovered(ledger)
    else:
        ledger = open_ledger(args)

    def progress(fraction, message=""):
        if args.progress:
            print(f"[{fraction * 100:5.1f}%] {message}", file=sys.stderr)

    with _FinalAfterCommit() as on_commit:
        result = execute_release(
            recipe,
            output_path=args.output,
            input_path=args.input,
            ledger=ledger,
            report_path=args.report,
            report_variant=args.report_variant,
            progress=progress,
            new_dataset=args.new_dataset,
            record=not args.no_ledger,
            recipe_path=args.recipe,
            on_commit=on_commit,
            operator=_remember_operator(args.operator),
            engine=args.engine,
            scheduler=args.scheduler,
            block_rows=args.block_rows,
        )
        return _print_release(result)


def _remember_operator(name: str | None) -> str | None:
    """``release --operator NAME``: remembered for later releases (CLI and GUI) and printed in
    this release's report; without it, the remembered name (None: the report says it is missing)."""
    from dpstudio import prefs

    if name is None:
        return prefs.operator()
    return prefs.set_operator(name)


def _print_release(result) -> int:
    """The summary of a committed release: exit 0 even when the report failed (a warning)."""
    if result.report_error is not None:
        print(f"dpstudio: warning: {result.done_text()}", file=sys.stderr)
    summary = {
        "release_id": result.release_id,
        "output": result.output_path,
        "output_sha256": result.output_sha256,
        "report": result.report_path,
        "total": result.plan.total.to_json(),
        "guarantee": result.plan.guarantee,
        "recorded": _recorded(result),
        "ledger_entry": result.ledger_entry,
        "randomness": result.randomness,
        "engine": result.engine,
        "warnings": result.warnings,
    }
    if result.artifact_path is not None:  # a density's JSON beside its sampled rows
        summary["side_file"], summary["side_file_sha256"] = result.artifact_path, result.artifact_sha256
    summary["ledger"] = (
        result.ledger_after
        if result.ledger_after is not None
        else "recorded (the ledger summary could not be read)"
        if result.ledger_recorded
        else "not recorded in any ledger"
    )
    if result.ledger_identity is not None:
        summary["dataset_identity"] = result.ledger_identity
    try:
        if not result.ledger_recorded:
            print("dpstudio: this release is not recorded in any ledger", file=sys.stderr)
        _print_json(summary)
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError) as exc:  # stdout full, closed or gone
        # the release is final: its summary failing to print is no failed release (exit 0).
        # What stays buffered goes to the null device, so that the interpreter's own flush at
        # exit does not turn this into exit 120
        with contextlib.suppress(Exception):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        with contextlib.suppress(Exception):
            why = getattr(exc, "strerror", None) or type(exc).__name__
            print(
                f"dpstudio: warning: the release is complete ({result.done_text()}), but its summary "
                f"could not be printed ({why})",
                file=sys.stderr,
            )
    return EXIT_OK


def _recorded(result) -> dict | str:
    """What the ledger recorded: the compiled plan's total (reserved before any noise).  The
    finalised plan's total above can be smaller (scales fitted to DP-estimated bounds)."""
    if not result.ledger_recorded:
        return "nothing (not recorded in any ledger)"
    total = result.recorded_total
    return total.to_json() if total is not None else "unknown"


class _FinalAfterCommit:
    """Ctrl-C aborts a release until its commit and is ignored after it (the release is final:
    exit 0 with what happened, never 130).  Yields the ``on_commit`` callback."""

    def __enter__(self):
        import signal
        import threading

        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.getsignal(signal.SIGINT)
            self._committed = False

            def handler(signum, frame):
                if self._committed:
                    print("dpstudio: the release is already final; finishing it", file=sys.stderr)
                    return
                raise KeyboardInterrupt

            signal.signal(signal.SIGINT, handler)
        return self._commit

    def _commit(self) -> None:
        self._committed = True

    def __exit__(self, *exc: object) -> Literal[False]:
        if self._old is not None:
            import signal

            signal.signal(signal.SIGINT, self._old)
        return False


def cmd_audit(args) -> int:
    from dpstudio.engine.audit import audit

    try:
        result = audit(
            args.mechanism,
            epsilon=args.epsilon,
            delta=args.delta,
            trials=args.trials,
            seed=args.seed,
            broken=args.broken,
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    _print_json(result)
    # a real mechanism failing its audit is a defect in dpstudio, not in the user input
    return EXIT_OK if result.get("passed") or args.broken else EXIT_INTERNAL


def cmd_risk(args) -> int:
    from dpstudio.pipeline import load_input
    from dpstudio.recipe.model import load_recipe
    from dpstudio.risk import risk_for_recipe

    recipe = load_recipe(args.recipe)
    frame = load_input(recipe, args.input).frame
    _print_json(risk_for_recipe(recipe, frame, seed=args.seed))
    return EXIT_OK


def cmd_ledger_list(args) -> int:
    _print_json(open_ledger(args).datasets())
    return EXIT_OK


def cmd_ledger_show(args) -> int:
    _print_json(open_ledger(args).show(args.dataset))
    return EXIT_OK


def cmd_ledger_set_cap(args) -> int:
    from dpstudio.engine.data.loader import fingerprint

    led = open_ledger(args)
    summary = led.set_cap(args.dataset, args.epsilon, args.delta)
    if os.path.isfile(args.dataset) and summary.get("dataset") != fingerprint(args.dataset):
        # the file's rows are a known dataset's: the cap is set where its releases are charged
        name = summary.get("dataset_name") or summary.get("name")
        print(
            f"note: the rows of {args.dataset} are those of dataset '{name}' ({summary['dataset'][:12]}...), "
            "to which its releases are charged: the cap is set on that dataset",
            file=sys.stderr,
        )
    _print_json(led.show(summary["dataset"]))
    return EXIT_OK


def cmd_ledger_verify(args) -> int:
    led = open_ledger(args)
    out = led.integrity()
    out["outputs"] = led.verify()
    edited = led.acknowledged_edits()
    if edited:
        out["acknowledged_edits"] = edited
    if args.head:
        seq = led.head_seq(args.head)
        out["report_head"] = {"hash": args.head, "in_chain": seq is not None, "event": seq}
    _print_json(out)
    # a missing or changed output, report or side file fails the check too: it is what the
    # ledger says was released, and scripts read the exit code, not the list
    ok = out["intact"] and not out["outputs"] and (not args.head or out["report_head"]["in_chain"])
    return EXIT_OK if ok else EXIT_USER


def cmd_ledger_acknowledge(args) -> int:
    _print_json(open_ledger(args).acknowledge(args.file, note=args.note or ""))
    return EXIT_OK


def cmd_ledger_reinit(args) -> int:
    from dpstudio.ledger import Ledger

    if not args.confirm:
        raise UserError(
            "ledger reinit accepts the loss of the spend the ledger no longer holds; run it again with --confirm"
        )
    _print_json(Ledger.reinit(getattr(args, "ledger", None), reason=args.reason or ""))
    return EXIT_OK


def cmd_gui(args) -> int:
    from dpstudio.gui.app import run_gui  # Qt is imported only here

    return run_gui(getattr(args, "file", None))


def cmd_demo(args) -> int:
    """The GUI with the demo data, or (no display / --headless) a headless release of it."""
    demo = demo_dataset()
    headless = args.headless or not _has_display()
    if not headless:
        try:
            from dpstudio.gui.app import run_gui
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("dpstudio.gui"):
                raise
        else:
            return run_gui(str(demo))
    return run_headless_demo(Path(args.out))


def _has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    if os.environ.get("QT_QPA_PLATFORM", "") == "offscreen":
        return False
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def demo_dataset() -> Path:
    from dpstudio.resources import resource_path

    return resource_path("demo", "census_demo.csv")


def demo_recipe_path() -> Path:
    from dpstudio.resources import resource_path

    return resource_path("demo", "census_demo.recipe.json")


def run_headless_demo(out_dir: Path) -> int:
    from dataclasses import replace

    from dpstudio.engine.data.loader import fingerprint
    from dpstudio.pipeline import execute_release
    from dpstudio.recipe.model import InputSpec, load_recipe

    out_dir.mkdir(parents=True, exist_ok=True)
    recipe = load_recipe(demo_recipe_path())
    data = demo_dataset()
    recipe = replace(
        recipe,
        input=InputSpec(
            path=str(data), format=recipe.input.format, options=recipe.input.options, sha256=fingerprint(data)
        ),
    )
    from dpstudio.ledger import Ledger

    ledger = Ledger(os.environ.get("DPSTUDIO_LEDGER") or str(out_dir / "ledger.sqlite"))
    report = out_dir / "demo_report.html"
    result = execute_release(recipe, output_path=out_dir / "demo_release.csv", ledger=ledger, report_path=report)
    print("dpstudio demo (headless: no display found)")
    print(f"  input:    {data}")
    print(f"  recipe:   {demo_recipe_path()}")
    print(f"  released: {result.output_path}")
    print(f"  report:   {report}")
    print(
        f"  total privacy loss: epsilon={result.plan.total.epsilon:g}, delta={result.plan.total.delta:g} "
        f"({result.plan.guarantee})"
    )
    return EXIT_OK


# ---- parser --------------------------------------------------------------------------------


def _add_load_options(p) -> None:
    p.add_argument("--delimiter", help="CSV delimiter (detected when omitted)")
    p.add_argument("--encoding", help="text encoding (detected when omitted)")
    p.add_argument("--sheet", help="Excel sheet name")


def _add_ledger_option(p) -> None:
    p.add_argument(
        "--ledger", help="ledger database path (default: $DPSTUDIO_LEDGER or the user's application-data directory)"
    )


def _show_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The command of a group run without a subcommand: print the group's help, exit 2.
    (A ``lambda`` reading the variable ``p`` printed the help of the last parser bound to it: "demo".)"""

    def show(args: argparse.Namespace) -> int:
        parser.print_help()
        return EXIT_USER

    return show


def build_parser() -> argparse.ArgumentParser:
    from dpstudio.recipe.model import OUTPUT_FORMATS, RELEASE_TYPES

    parser = _Parser(prog="dpstudio", description="Release sensitive tables with differential privacy.")
    parser.add_argument("--version", action="version", version=f"dpstudio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("inspect", help="schema and suggested roles of a data file, as JSON")
    p.add_argument("file")
    _add_load_options(p)
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("recipe", help="create or check a release recipe")
    rsub = p.add_subparsers(dest="recipe_command", metavar="SUBCOMMAND", parser_class=_Parser)
    p.set_defaults(func=_show_help(p))
    pi = rsub.add_parser(
        "init",
        help="a recipe from the inferred schema plus overrides",
        epilog=f"Exit code: {EXIT_OK} the recipe is ready to release; {EXIT_NOT_READY} it was written but "
        f"has problems to fix (listed; 'dpstudio recipe check' shows them again); {EXIT_USER} nothing "
        "was written (a wrong option or column name: every wrong name is listed with the closest column).",
    )
    pi.add_argument("file")
    pi.add_argument("-o", "--output", required=True, help="recipe JSON to write (a new file unless --force)")
    pi.add_argument("--force", action="store_true", help="write over an existing file at --output")
    pi.add_argument("--release", default="record", choices=RELEASE_TYPES)
    pi.add_argument("--epsilon", type=_finite, default=1.0)
    pi.add_argument(
        "--delta", type=_finite, default=None, help="default: 0 for pure-DP releases, min(1e-6, 0.1/n) where needed"
    )
    pi.add_argument(
        "--role", action="append", metavar="COL=ROLE", help="identifier, public, sensitive, label, embedding or ignore"
    )
    pi.add_argument(
        "--type",
        action="append",
        metavar="COL=TYPE",
        help="integer, float, categorical or boolean: the released form (an integer or float "
        "grid) then follows this choice, not the data",
    )
    pi.add_argument(
        "--confirm-inferred",
        action="store_true",
        help="confirm every type and role read from the data as your own choice (recorded)",
    )
    pi.add_argument(
        "--bounds",
        action="append",
        metavar="COL=LOW:HIGH",
        help="public bounds of a numeric column; or dp:LOW:HIGH[:EPS] to estimate within a public range "
        "with DP; or 'data' to copy from the data (flagged as a privacy risk). EPS: a record release "
        "spends it on top of --epsilon; a synthetic release shares --epsilon, and EPS only weighs the "
        "estimates against each other",
    )
    pi.add_argument(
        "--categories",
        action="append",
        metavar="COL=A,B,C",
        help="public category list of a categorical column (an integer column given one becomes "
        "categorical); or dp[:EPS[:CANDIDATES]]; or 'data' (flagged)",
    )
    pi.add_argument(
        "--other",
        action="append",
        metavar="COL=NAME",
        help="with a public category list: values outside the list are released as the category "
        "NAME (added to the list) instead of being refused or, in synthetic data, lost",
    )
    pi.add_argument(
        "--mechanism",
        action="append",
        metavar="COL=NAME",
        help="laplace, gaussian, rr, metric[:POOLFILE|:dataset] or none",
    )
    pi.add_argument(
        "--weight",
        action="append",
        metavar="COL=W",
        help="relative share of the per-record budget for a perturbed column (default 1)",
    )
    pi.add_argument(
        "--seed",
        type=_SEED,
        default=None,
        help="fixed seed (reproducible; reported). Default: the OS's secure randomness",
    )
    pi.add_argument("--format", default="csv", choices=OUTPUT_FORMATS, help="output data format")
    pi.add_argument("--rows", type=_bounded_int(1, 10_000_000), default=None, help="synthetic data: rows to generate")
    pi.add_argument(
        "--no-formula-protection",
        action="store_true",
        help="CSV/TSV/XLSX: write text cells starting with = + - @ verbatim (by default "
        "they get a leading ' so a spreadsheet cannot run them as formulas)",
    )
    pi.add_argument(
        "--synth",
        choices=("aim", "mst", "pearl", "merf"),
        default=None,
        help="synthetic data method (release type synthetic)",
    )
    pi.add_argument("--option", action="append", metavar="KEY=VALUE", help="release option (JSON value)")
    pi.add_argument(
        "--target",
        action="append",
        metavar="SPEC",
        help="solve epsilon for a target instead of typing it: COL=within:TOL:SHARE (a perturbed number "
        "within +-TOL for SHARE of records), COL=keep:P (a category kept with probability >= P), "
        "label-attack=A (no label attacker right more than A of the time; fitted on the data, internal), "
        "reid=R (re-identification rate below R; simulated on the data, internal). Repeatable; "
        "--epsilon is then ignored",
    )
    pi.add_argument(
        "--split",
        choices=("targets", "weights"),
        default="targets",
        help="with --target: give each targeted column the share its target needs (targets, default) "
        "or keep the weights and solve the total only (weights)",
    )
    pi.add_argument(
        "--no-clamp",
        action="store_true",
        help="record/label/semi-sensitive releases: keep noisy numbers outside the public bounds (by "
        "default they are set to the nearest bound, which costs no privacy)",
    )
    pi.add_argument(
        "--domains",
        metavar="FILE",
        help="a domain file (JSON or CSV, e.g. from 'recipe domains'): public bounds and category lists "
        "for the columns of the same names; --bounds/--categories win for a column they name",
    )
    _add_load_options(pi)
    _add_ledger_option(pi)  # with --target: the dataset's remaining cap bounds the budget solved for
    pi.set_defaults(func=cmd_recipe_init)
    pdom = rsub.add_parser(
        "domains", help="save a recipe's domains to a file (JSON or CSV) for 'recipe init --domains'"
    )
    pdom.add_argument("recipe")
    pdom.add_argument(
        "-o", "--output", required=True, help="domain file to write (.json, .csv or .tsv; a new file unless --force)"
    )
    pdom.add_argument("--force", action="store_true", help="write over an existing file at --output")
    pdom.set_defaults(func=cmd_recipe_domains)
    pc = rsub.add_parser("check", help="validate a recipe and print its total privacy loss")
    pc.add_argument("recipe")
    pc.add_argument("--input", help="also check the recipe against this data file")
    pc.add_argument("--with-data", action="store_true", help="also check against the recipe's input file")
    _add_ledger_option(pc)  # a recipe with targets is solved again under the dataset's remaining cap
    pc.set_defaults(func=cmd_recipe_check)

    p = sub.add_parser("release", help="run a recipe: write the privatized data (and a report)")
    p.add_argument("recipe")
    p.add_argument(
        "--output",
        required=True,
        help="output data file (.csv, .parquet, .xlsx; .json for model/density); a path ending with / "
        "is a new folder of Parquet files, one per block (--engine stream or dask)",
    )
    p.add_argument("--report", help="report file (.html or .pdf)")
    p.add_argument("--report-variant", choices=("internal", "external"), default="internal")
    p.add_argument(
        "--operator",
        metavar="NAME",
        help="who runs the release: printed in the report (and the PDF's author); remembered for later releases",
    )
    p.add_argument("--input", help="the input file, if it moved since the recipe was made")
    p.add_argument("--progress", action="store_true", help="print progress to stderr")
    p.add_argument(
        "--new-dataset",
        action="store_true",
        help="declare the input a new dataset even if the ledger recognises its rows (or "
        "name) as a known dataset's; recorded in the ledger and the report",
    )
    p.add_argument(
        "--dataset", metavar="NAME", help="the dataset's name in the ledger (overrides the recipe's input.dataset)"
    )
    p.add_argument(
        "--no-ledger",
        action="store_true",
        help="for tests and simulations: record nothing. An existing ledger is still "
        "consulted, so a cap still refuses; the output and report say 'not recorded "
        "in any ledger'",
    )
    p.add_argument(
        "--engine",
        choices=("memory", "stream", "dask"),
        default="memory",
        help="memory: load the table (default); stream: read it in blocks, with memory bounded "
        "whatever its size (CSV or Parquet; records and AIM/MST synthetic data); dask: run on the "
        "Dask cluster at --scheduler (pip install 'dpstudio[cluster]')",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the Dask scheduler (tcp://host:8786) for --engine dask; without it, a local cluster "
        "on this computer's cores",
    )
    p.add_argument(
        "--block-rows",
        type=_bounded_int(1, 1 << 24),
        default=None,
        help="rows per block for --engine stream/dask (default 262144); a fixed seed reproduces "
        "a release only with the same block size",
    )
    _add_ledger_option(p)
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("audit", help="statistical audit of a mechanism's privacy claim")
    p.add_argument("mechanism", help="laplace, gaussian, rr, exponential or metric")
    p.add_argument("--epsilon", type=_finite, required=True)
    p.add_argument("--delta", type=_finite, default=0.0)
    p.add_argument("--trials", type=_bounded_int(1, 100_000_000), default=1_000_000)
    p.add_argument("--seed", type=_SEED, default=None)
    p.add_argument("--broken", default=None, help="audit a deliberately broken variant (must fail)")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("risk", help="leakage and attack estimates for a recipe (raw data: internal use)")
    p.add_argument("recipe")
    p.add_argument("--input")
    p.add_argument("--seed", type=_SEED, default=0, help="seed of the estimates' own randomness")
    p.set_defaults(func=cmd_risk)

    p = sub.add_parser("ledger", help="the per-dataset privacy budget ledger")
    lsub = p.add_subparsers(dest="ledger_command", metavar="SUBCOMMAND", parser_class=_Parser)
    p.set_defaults(func=_show_help(p))
    pl = lsub.add_parser("list", help="datasets, their spend and caps")
    _add_ledger_option(pl)
    pl.set_defaults(func=cmd_ledger_list)
    ps = lsub.add_parser("show", help="every release of one dataset")
    ps.add_argument(
        "dataset",
        help="a name 'ledger list' prints (dataset name or file name), a file path, or the SHA-256 "
        "(or a unique prefix of at least 6 hex digits)",
    )
    _add_ledger_option(ps)
    ps.set_defaults(func=cmd_ledger_show)
    pcap = lsub.add_parser("set-cap", help="set the dataset's total budget")
    pcap.add_argument("dataset")
    pcap.add_argument("epsilon", type=_finite)
    pcap.add_argument("delta", type=_finite, nargs="?", default=None)
    _add_ledger_option(pcap)
    pcap.set_defaults(func=cmd_ledger_set_cap)
    pv = lsub.add_parser("verify", help="check the ledger's hash chain, head file and recorded outputs")
    pv.add_argument("--head", help="a ledger head printed in an earlier report: is it in the chain?")
    _add_ledger_option(pv)
    pv.set_defaults(func=cmd_ledger_verify)
    pa = lsub.add_parser(
        "acknowledge",
        help="accept the present bytes of a release's file edited since (a signed report): ledger verify passes it",
    )
    pa.add_argument("file", help="the output, report or density side file a recorded release wrote")
    pa.add_argument("--note", help="why it changed (e.g. 'signed by the data protection officer')")
    _add_ledger_option(pa)
    pa.set_defaults(func=cmd_ledger_acknowledge)
    pr = lsub.add_parser(
        "reinit",
        help="accept the loss of a damaged ledger and start a new hash chain (recorded, shown in every later report)",
    )
    pr.add_argument("--confirm", action="store_true", help="required: spend the ledger lost is not counted")
    pr.add_argument("--reason", help="why (recorded)")
    _add_ledger_option(pr)
    pr.set_defaults(func=cmd_ledger_reinit)

    p = sub.add_parser("gui", help="open the desktop application")
    p.add_argument("file", nargs="?")
    p.set_defaults(func=cmd_gui)

    p = sub.add_parser("demo", help="the GUI on the demo data (headless release without a display)")
    p.add_argument("--headless", action="store_true")
    p.add_argument("--out", default="out/demo", help="output folder of the headless demo")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            args = parser.parse_args(["gui"])
    except UserError as exc:
        print(f"dpstudio: {exc}", file=sys.stderr)
        return EXIT_USER
    try:
        return int(args.func(args) or 0)
    except RecipeError as exc:
        for problem in exc.problems:
            print(f"dpstudio: {problem}", file=sys.stderr)
        return EXIT_USER
    except BudgetError as exc:
        print(f"dpstudio: {exc}. {_over_cap_advice(exc, args)}", file=sys.stderr)  # one line
        return EXIT_USER
    except UserError as exc:
        print(f"dpstudio: {exc}", file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        print("dpstudio: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # an internal error: keep the traceback for the bug report
        if isinstance(exc, OSError) and exc.errno in _USER_ERRNOS and exc.filename:
            # a full or read-only disk, a forbidden folder, a name too long: the user's path
            print(f"dpstudio: {exc.strerror or 'cannot use this path'}: {_path_text(exc.filename)}", file=sys.stderr)
            return EXIT_USER
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            # a full disk met while writing through a library (no file name in the error); the
            # release's reservation was rolled back before this reached here
            print(f"dpstudio: {exc.strerror or os.strerror(exc.errno or 0)} while writing", file=sys.stderr)
            return EXIT_USER
        _report_internal_error(exc)
        return EXIT_INTERNAL


def _recipe_epsilon(args) -> float | None:
    """The epsilon typed in the recipe of a release command (None when there is none to read)."""
    path = getattr(args, "recipe", None)
    if not path:
        return None
    try:
        from dpstudio.recipe.model import load_recipe

        return float(load_recipe(path).budget.epsilon)
    except Exception:  # noqa: BLE001 - only advice: without it, the general wording stands
        return None


def _over_cap_advice(exc: BudgetError, args) -> str:
    """How to go on after a release the dataset's cap refused (the ledger's message says why)."""
    name = exc.dataset[:12] if exc.dataset else "DATASET"
    ledger = f" --ledger {_path_text(args.ledger)}" if getattr(args, "ledger", None) else ""
    lower = (
        "lower the recipe's epsilon (budget.epsilon; or make it again with recipe init --epsilon) to at "
        "most what is left"
    )
    needed, left = getattr(exc, "needed_epsilon", None), getattr(exc, "left_epsilon", None)
    budget = _recipe_epsilon(args)
    if getattr(exc, "delta_only", False):
        # ε fits: lowering it changes nothing
        lower = (
            "make the release spend less δ (a public category list instead of a DP estimate, "
            "Laplace instead of Gaussian noise, a smaller --delta)"
        )
    elif needed is not None and left is not None and budget is not None:
        # the release's total can exceed budget.epsilon (DP estimates of domains are added to it):
        # lowering budget.epsilon to what is left would be refused again
        extra = max(0.0, needed - budget)
        if extra <= 1e-12:
            lower = lower.replace("what is left", f"{left:.6g}, what is left")
        elif left - extra > 0:
            lower = lower.replace(
                "what is left", f"{left - extra:.6g} (what is left, less the {extra:.6g} its DP domain estimates add)"
            )
        else:
            lower = (
                f"type the domains that are estimated with DP (public knowledge, free): those estimates "
                f"alone spend {extra:.6g}, more than is left"
            )
    advice = (
        f"To go on: {lower}; or, if your policy allows more, raise the cap: dpstudio "
        f"ledger set-cap {name} EPSILON [DELTA]{ledger} (give DELTA again to keep a δ cap; 'dpstudio "
        f"ledger show {name}{ledger}' lists its releases)"
    )
    # --new-dataset only helps a file matched by its rows (an exact file or a dataset name cannot
    # be declared new), and the ledger's message already offers it then
    if exc.matched_by == "rows":
        advice += "; or, only if this file truly is a different dataset, declare it new as said above"
    return advice


# OSErrors about a path the user chose (output, report, ledger) rather than a defect in dpstudio
_USER_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "ENOSPC",
        "EDQUOT",
        "EROFS",
        "EACCES",
        "EPERM",
        "ENAMETOOLONG",
        "ENOTDIR",
        "EISDIR",
        "ENOENT",
        "EFBIG",
        "EEXIST",
        "ELOOP",
        "EXDEV",
        "ETXTBSY",
    )
    if hasattr(errno, name)
)


#: a full disk or quota: the user's to free, whichever library met it
_FULL_ERRNOS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EFBIG") if hasattr(errno, n))


def _path_text(name) -> str:
    """A path for a one-line message: control characters escaped, very long names shortened."""
    s = os.fsdecode(name) if isinstance(name, (bytes, os.PathLike)) else str(name)
    s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)
    return f"'{s}'" if len(s) <= 200 else f"'{s[:120]}...{s[-60:]}' ({len(s)} characters)"


def _report_internal_error(exc: BaseException) -> None:
    """Where the error happened (the stack), but not its message unless DPSTUDIO_DEBUG is set:
    a library's message can quote a cell of the private data (numpy's "could not convert string
    to float: '...'"), and a traceback gets pasted into bug reports."""
    import traceback

    if os.environ.get("DPSTUDIO_DEBUG"):
        traceback.print_exc()
        print(f"dpstudio: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    print("Traceback (most recent call last):", file=sys.stderr)
    sys.stderr.write("".join(traceback.format_tb(exc.__traceback__)))
    print(
        f"dpstudio: internal error: {type(exc).__name__} (message withheld: it may quote private "
        f"data; set DPSTUDIO_DEBUG=1 to show it)",
        file=sys.stderr,
    )


def gui_entry() -> int:
    return main(["gui", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
