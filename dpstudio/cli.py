"""Headless command line: every GUI action has an equivalent here, driven by the same recipe.

Exit codes: 0 success, 2 user error (one line on stderr, no traceback), 1 internal error.
This module never imports Qt; ``dpstudio gui`` imports the GUI lazily.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from dpstudio import __version__
from dpstudio.errors import RecipeError, UserError

EXIT_OK, EXIT_INTERNAL, EXIT_USER = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and one line (its default also exits 2, with usage)."""

    def error(self, message):
        self.exit(EXIT_USER, f"{self.prog}: error: {message}\n")


def _compact(obj):
    """Drop Renyi-DP curves from printed JSON (long, and only the accountant needs them)."""
    if isinstance(obj, dict):
        return {k: _compact(v) for k, v in obj.items() if k != "rdp"}
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
    from dpstudio.engine.data.loader import load_table
    from dpstudio.engine.data.schema import infer_schema

    loaded = load_table(args.file, _load_options(args))
    schema = infer_schema(loaded.frame)
    _print_json({"path": str(loaded.path), "format": loaded.format, "options": loaded.options,
                 "sha256": loaded.sha256, **schema.to_json()})
    return EXIT_OK


def cmd_recipe_init(args) -> int:
    from dpstudio.engine.data.loader import load_table
    from dpstudio.engine.data.schema import infer_schema
    from dpstudio.export import write_text
    from dpstudio.recipe.build import fill_domains_from_data, parse_assignments, recipe_from_schema
    from dpstudio.recipe.validate import validate

    loaded = load_table(args.file, _load_options(args))
    schema = infer_schema(loaded.frame)
    options = {}
    if args.synth:
        options["method"] = args.synth
    for item in args.option or ():
        k, _, v = item.partition("=")
        if not k or not _:
            raise UserError(f"--option: expected KEY=VALUE, got {item!r}")
        try:
            options[k] = json.loads(v)
        except json.JSONDecodeError:
            options[k] = v
    recipe = recipe_from_schema(
        loaded, schema, release=args.release, epsilon=args.epsilon, delta=args.delta,
        roles=parse_assignments(args.role, "--role"), bounds=parse_assignments(args.bounds, "--bounds"),
        categories=parse_assignments(args.categories, "--categories"),
        mechanisms=parse_assignments(args.mechanism, "--mechanism"), seed=args.seed,
        weights=parse_assignments(args.weight, "--weight"),
        out_format=args.format, rows=args.rows, release_options=options)
    recipe = fill_domains_from_data(recipe, loaded.frame)  # only for domains the user asked to copy
    if recipe.release.type == "synthetic" and "method" not in recipe.release.options:
        from dataclasses import replace

        from dpstudio.engine.release.synthetic import recommend_method
        method, why = recommend_method(recipe)
        recipe = replace(recipe, release=replace(recipe.release,
                                                 options=recipe.release.options.with_(method=method)))
        print(f"synthetic method: {method} (recommended: {why}; choose with --synth)", file=sys.stderr)
    write_text(recipe.dumps() + "\n", args.output)
    problems = validate(recipe, schema)
    print(f"wrote {args.output}" + (f" ({len(problems)} problem(s) to fix: run 'dpstudio recipe check')"
                                     if problems else ""), file=sys.stderr)
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    return EXIT_OK


def cmd_recipe_check(args) -> int:
    from dpstudio.recipe.model import load_recipe
    from dpstudio.recipe.run import check_recipe

    try:
        recipe = load_recipe(args.recipe)
    except RecipeError as exc:
        _print_json({"valid": False, "problems": exc.problems})
        return EXIT_USER
    schema = frame = None
    if args.input or args.with_data:
        from dpstudio.engine.data.schema import infer_schema
        from dpstudio.recipe.run import load_input
        frame = load_input(recipe, args.input).frame
        schema = infer_schema(frame)
    result = check_recipe(recipe, schema, frame)
    _print_json(result)
    return EXIT_OK if result["valid"] else EXIT_USER


def open_ledger(args):
    from dpstudio.ledger import Ledger

    return Ledger(getattr(args, "ledger", None))


def cmd_release(args) -> int:
    from dpstudio.recipe.model import load_recipe
    from dpstudio.recipe.run import execute_release

    recipe = load_recipe(args.recipe)
    ledger = None if args.no_ledger else open_ledger(args)

    def progress(fraction, message=""):
        if args.progress:
            print(f"[{fraction * 100:5.1f}%] {message}", file=sys.stderr)

    result = execute_release(recipe, output_path=args.output, input_path=args.input, ledger=ledger,
                             report_path=args.report, report_variant=args.report_variant,
                             progress=progress)
    summary = {"release_id": result.release_id, "output": result.output_path,
               "output_sha256": result.output_sha256, "report": args.report,
               "total": result.plan.total.to_json(), "guarantee": result.plan.guarantee,
               "randomness": result.randomness, "warnings": result.warnings}
    if result.ledger_after is not None:
        summary["ledger"] = result.ledger_after
    _print_json(summary)
    return EXIT_OK


def cmd_audit(args) -> int:
    from dpstudio.engine.audit import audit

    try:
        result = audit(args.mechanism, epsilon=args.epsilon, delta=args.delta, trials=args.trials,
                       seed=args.seed, broken=args.broken)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    _print_json(result)
    # a real mechanism failing its audit is a defect in dpstudio, not in the user input
    return EXIT_OK if result.get("passed") or args.broken else EXIT_INTERNAL


def cmd_risk(args) -> int:
    from dpstudio.engine.leakage.risk import risk_for_recipe
    from dpstudio.recipe.model import load_recipe
    from dpstudio.recipe.run import load_input

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
    led = open_ledger(args)
    led.set_cap(args.dataset, args.epsilon, args.delta)
    _print_json(led.show(args.dataset))
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
    from dpstudio.recipe.model import InputSpec, load_recipe
    from dpstudio.recipe.run import execute_release

    out_dir.mkdir(parents=True, exist_ok=True)
    recipe = load_recipe(demo_recipe_path())
    data = demo_dataset()
    recipe = replace(recipe, input=InputSpec(path=str(data), format=recipe.input.format,
                                             options=recipe.input.options, sha256=fingerprint(data)))
    from dpstudio.ledger import Ledger
    ledger = Ledger(os.environ.get("DPSTUDIO_LEDGER") or str(out_dir / "ledger.sqlite"))
    report = out_dir / "demo_report.html"
    result = execute_release(recipe, output_path=out_dir / "demo_release.csv", ledger=ledger,
                             report_path=report)
    print("dpstudio demo (headless: no display found)")
    print(f"  input:    {data}")
    print(f"  recipe:   {demo_recipe_path()}")
    print(f"  released: {result.output_path}")
    print(f"  report:   {report}")
    print(f"  total privacy loss: epsilon={result.plan.total.epsilon:g}, delta={result.plan.total.delta:g} "
          f"({result.plan.guarantee})")
    return EXIT_OK


# ---- parser --------------------------------------------------------------------------------

def _add_load_options(p) -> None:
    p.add_argument("--delimiter", help="CSV delimiter (detected when omitted)")
    p.add_argument("--encoding", help="text encoding (detected when omitted)")
    p.add_argument("--sheet", help="Excel sheet name")


def _add_ledger_option(p) -> None:
    p.add_argument("--ledger", help="ledger database path (default: $DPSTUDIO_LEDGER or the user's "
                                    "application-data directory)")


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
    p.set_defaults(func=lambda a: (p.print_help(), EXIT_USER)[1])
    pi = rsub.add_parser("init", help="a recipe from the inferred schema plus overrides")
    pi.add_argument("file")
    pi.add_argument("-o", "--output", required=True, help="recipe JSON to write")
    pi.add_argument("--release", default="record", choices=RELEASE_TYPES)
    pi.add_argument("--epsilon", type=float, default=1.0)
    pi.add_argument("--delta", type=float, default=None,
                    help="default: 0 for pure-DP releases, min(1e-6, 0.1/n) where needed")
    pi.add_argument("--role", action="append", metavar="COL=ROLE",
                    help="identifier, public, sensitive, label, embedding or ignore")
    pi.add_argument("--bounds", action="append", metavar="COL=LOW:HIGH",
                    help="public bounds; or dp:LOW:HIGH[:EPS] to estimate within a public range with DP; "
                         "or 'data' to copy from the data (flagged as a privacy risk)")
    pi.add_argument("--categories", action="append", metavar="COL=A,B,C",
                    help="public category list; or dp[:EPS[:CANDIDATES]]; or 'data' (flagged)")
    pi.add_argument("--mechanism", action="append", metavar="COL=NAME",
                    help="laplace, gaussian, rr, metric[:POOLFILE|:dataset] or none")
    pi.add_argument("--weight", action="append", metavar="COL=W",
                    help="relative share of the per-record budget for a perturbed column (default 1)")
    pi.add_argument("--seed", type=int, default=None, help="fixed seed (reproducible; reported). "
                                                           "Default: the OS's secure randomness")
    pi.add_argument("--format", default="csv", choices=OUTPUT_FORMATS, help="output data format")
    pi.add_argument("--rows", type=int, default=None, help="synthetic data: rows to generate")
    pi.add_argument("--synth", choices=("pearl", "merf", "mst"), default=None,
                    help="synthetic data method (release type synthetic)")
    pi.add_argument("--option", action="append", metavar="KEY=VALUE", help="release option (JSON value)")
    _add_load_options(pi)
    pi.set_defaults(func=cmd_recipe_init)
    pc = rsub.add_parser("check", help="validate a recipe and print its total privacy loss")
    pc.add_argument("recipe")
    pc.add_argument("--input", help="also check the recipe against this data file")
    pc.add_argument("--with-data", action="store_true", help="also check against the recipe's input file")
    pc.set_defaults(func=cmd_recipe_check)

    p = sub.add_parser("release", help="run a recipe: write the privatized data (and a report)")
    p.add_argument("recipe")
    p.add_argument("--output", required=True, help="output data file (.csv, .parquet, .xlsx; .json for "
                                                    "model/density)")
    p.add_argument("--report", help="report file (.html or .pdf)")
    p.add_argument("--report-variant", choices=("internal", "external"), default="internal")
    p.add_argument("--input", help="the input file, if it moved since the recipe was made")
    p.add_argument("--progress", action="store_true", help="print progress to stderr")
    p.add_argument("--no-ledger", action="store_true", help=argparse.SUPPRESS)
    _add_ledger_option(p)
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("audit", help="statistical audit of a mechanism's privacy claim")
    p.add_argument("mechanism", help="laplace, gaussian, rr, exponential or metric")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--trials", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--broken", default=None, help="audit a deliberately broken variant (must fail)")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("risk", help="leakage and attack estimates for a recipe (raw data: internal use)")
    p.add_argument("recipe")
    p.add_argument("--input")
    p.add_argument("--seed", type=int, default=0, help="seed of the estimates' own randomness")
    p.set_defaults(func=cmd_risk)

    p = sub.add_parser("ledger", help="the per-dataset privacy budget ledger")
    lsub = p.add_subparsers(dest="ledger_command", metavar="SUBCOMMAND", parser_class=_Parser)
    p.set_defaults(func=lambda a: (p.print_help(), EXIT_USER)[1])
    pl = lsub.add_parser("list", help="datasets, their spend and caps")
    _add_ledger_option(pl)
    pl.set_defaults(func=cmd_ledger_list)
    ps = lsub.add_parser("show", help="every release of one dataset")
    ps.add_argument("dataset", help="SHA-256 (or a unique prefix) or file path of the dataset")
    _add_ledger_option(ps)
    ps.set_defaults(func=cmd_ledger_show)
    pcap = lsub.add_parser("set-cap", help="set the dataset's total budget")
    pcap.add_argument("dataset")
    pcap.add_argument("epsilon", type=float)
    pcap.add_argument("delta", type=float, nargs="?", default=None)
    _add_ledger_option(pcap)
    pcap.set_defaults(func=cmd_ledger_set_cap)

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
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["gui"])
    try:
        return int(args.func(args) or 0)
    except RecipeError as exc:
        for problem in exc.problems:
            print(f"dpstudio: {problem}", file=sys.stderr)
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
        import traceback
        traceback.print_exc()
        print(f"dpstudio: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


def gui_entry() -> int:
    return main(["gui", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
