"""Where a release writes, checked before anything is spent: the point of no return.

``validate_targets`` runs before the input is read and before the ledger reserves any budget.
Every file a release will write (the data or model output, the density side file
``<stem>.artifact.json``, the report) must be a new name or an existing regular file, in an
existing folder this process can create files in, with a name the file system accepts and a
format dpstudio can write, and must be none of the files that have to survive the release: the
private input, the recipe, the privacy ledger and its side files - nor one of the other targets.
Paths are compared after resolving ``..`` and symbolic links (``os.path.realpath``) and, for files
that exist, by device and inode, so a hard link to the input is refused too.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dpstudio.errors import UserError
from dpstudio.export import name_max
from dpstudio.report import REPORT_KINDS

#: table formats a release can write (``dpstudio.export.write_table``)
TABLE_FORMATS = ("csv", "tsv", "parquet", "xlsx", "json")


@dataclass(frozen=True)
class Targets:
    """The checked targets of one release (absolute paths, symbolic links not followed)."""

    output: Path
    output_format: str  # "csv", ..., or "json" for a model / density artifact
    artifact: Path | None  # the density side file written beside a table output
    report: Path | None
    report_kind: str | None  # "html" or "pdf"
    report_variant: str

    def side_files(self) -> dict[str, Path]:
        """The files written after the commit, by what they are (the ledger holds their names)."""
        named = {"report": self.report, "density side file": self.artifact}
        return {what: p for what, p in named.items() if p is not None}


def artifact_only(recipe) -> bool:
    """Releases whose output is a JSON artifact, not a table (a model; a density without samples)."""
    t = recipe.release.type
    return t == "model" or (t == "density" and not int(recipe.release.options.get("sample_rows", 0) or 0))


def artifact_beside(recipe) -> bool:
    """A density with sampled rows: the table is the output, the density JSON goes beside it."""
    return recipe.release.type == "density" and not artifact_only(recipe)


def artifact_path(output) -> Path:
    output = Path(output)
    return output.with_name(output.stem + ".artifact.json")


def _absolute(path) -> Path:
    # abspath normalises "x/../" textually; realpath (for comparisons) also follows links
    return Path(os.path.abspath(os.fspath(path)))


def _identity(path) -> tuple[str, tuple[int, int] | None]:
    """(real path, (device, inode) when the file exists) of ``path``."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return real, None
    return real, (st.st_dev, st.st_ino)


def _same(a: tuple[str, tuple[int, int] | None], b: tuple[str, tuple[int, int] | None]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def _real(role: str, path: Path) -> Path:
    """``path`` with its symbolic links followed; a loop of links is the user's error."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # Python 3.11 raises RuntimeError for a loop
        raise UserError(f"cannot use {path} as the {role}: {exc}") from None


def _check_place(role: str, given, path: Path) -> None:
    """A target must be a new name or a regular file, in an existing folder, with a legal name."""
    text = os.fspath(given)
    if text.endswith(("/", os.sep)) or (os.altsep and text.endswith(os.altsep)):
        raise UserError(f"the {role} path {text} ends with a slash, so it names a folder: give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise UserError(f"the folder of the {role} does not exist: {folder}")
    real = _real(role, path).parent  # a symbolic link is written where it points (the ledger resolves it)
    if not real.is_dir():
        raise UserError(f"the {role} {path} is a link into a folder that does not exist: {real}")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UserError(f"cannot use {path} as the {role}: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(f"the {role} path is a folder: {path}")
    if st is not None and not stat.S_ISREG(st.st_mode):
        # a device, FIFO or socket would be replaced by a regular file (as root: /dev/null)
        raise UserError(f"the {role} path {path} is not a regular file (a device, pipe or socket); choose a file name")
    limit = name_max(folder)
    if len(os.fsencode(path.name)) > limit:
        raise UserError(f"the {role} file name is longer than this file system allows ({limit} bytes): {path}")


#: the format of an output path ending with a slash: a folder of Parquet files, one per block
DATASET_FORMAT = "parquet-dataset"


def names_dataset(output_path) -> bool:
    """Whether ``output_path`` names a partitioned Parquet dataset: it ends with a slash."""
    text = os.fspath(output_path)
    return text.endswith(("/", os.sep)) or bool(os.altsep and text.endswith(os.altsep))


def _check_dataset_folder(recipe, folder: Path) -> None:
    """A partitioned dataset goes into a new folder in an existing one: it is written beside it
    under a temporary name and renamed into place, so it never mixes with other files (and a
    rename onto an existing folder is not portable)."""
    if artifact_only(recipe):
        raise UserError("a model or density release is written as a JSON file, not a folder of Parquet files")
    if not folder.parent.is_dir():
        raise UserError(f"the folder of the output does not exist: {folder.parent}")
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise UserError(
            f"{folder} is a file: an output path ending with a slash names a new folder for a "
            "partitioned Parquet dataset; give a file name without the slash, or a new folder name"
        )
    if os.path.lexists(folder):
        raise UserError(
            f"the output folder {folder} already exists: a partitioned dataset is written into a new "
            "folder (nothing is ever written over or into)"
        )
    limit = name_max(folder.parent)
    if len(os.fsencode(folder.name)) > limit:
        raise UserError(f"the output folder name is longer than this file system allows ({limit} bytes): {folder}")


def _inside(path, folder) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it (real paths)."""
    p, f = os.path.realpath(path), os.path.realpath(folder)
    return p == f or p.startswith(f.rstrip(os.sep) + os.sep)


def refuse_input_targets(targets: Targets, input_files, input_folders=()) -> None:
    """No target may be one of the input's files, nor lie inside one of its folders (an input
    given as a folder or a glob of several files: a cluster release)."""
    outs = [("output", targets.output), ("density side file", targets.artifact), ("report", targets.report)]
    for what, p in outs:
        if p is None:
            continue
        ident = _identity(p)
        for f in input_files:
            if _same(ident, _identity(f)):
                raise UserError(f"the {what} {p} is one of the input's files: choose another name")
        for folder in input_folders:
            if _inside(p, folder):
                raise UserError(f"the {what} {p} is inside the input's folder {folder}: put it elsewhere")


#: the most data rows one XLSX sheet holds (1,048,576 rows, one of them the header)
XLSX_MAX_ROWS = 1_048_575


def refuse_too_many_xlsx_rows(recipe, out_fmt: str, table_rows: int) -> None:
    """An XLSX output of more rows than a sheet holds is refused before the reservation (it was
    written, charged, and no spreadsheet could open it whole).  The rows released: a synthetic
    release's requested count, a density's samples, else one per input row (all public)."""
    if out_fmt != "xlsx":
        return
    rtype = recipe.release.type
    if rtype == "synthetic":
        rows = int(recipe.outputs.rows or table_rows)
    elif rtype == "density":
        rows = int(recipe.release.options.get("sample_rows", 0) or 0)
    else:
        rows = int(table_rows)
    if rows > XLSX_MAX_ROWS:
        raise UserError(
            f"the release has {rows:,} rows, more than an XLSX sheet holds ({XLSX_MAX_ROWS:,} and a "
            "header): write CSV or Parquet instead (nothing was spent)"
        )


def probe_folder(folder: Path) -> None:
    """Create and delete a file in ``folder``: a read-only or forbidden folder fails here, before
    anything is spent, rather than after the data was written."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".dps-probe-", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise UserError(f"cannot write in the folder {folder}: {exc.strerror or exc}") from None


def _output_format(recipe, output: Path) -> str:
    from dpstudio.export import FORMATS

    suffix = output.suffix.lower()
    if artifact_only(recipe):
        what = "model" if recipe.release.type == "model" else "density"
        if suffix != ".json":
            raise UserError(f"a {what} release is written as a JSON file: name the output .json, not {output.name}")
        return "json"
    if not suffix:  # no extension: the recipe's format
        return recipe.outputs.format
    fmt = FORMATS.get(suffix)
    if fmt not in TABLE_FORMATS:
        raise UserError(f"cannot tell the output format of {output.name}: use .csv, .tsv, .parquet, .xlsx or .json")
    return fmt


def _ledger_files(ledger_path) -> tuple[str, str] | None:
    """(real folder, database name) of the ledger: its side files (-wal, -journal, .key, .head)
    are the files of that folder whose names start with the database's name."""
    if ledger_path is None:
        return None
    real = os.path.realpath(ledger_path)
    return os.path.dirname(real), os.path.basename(real)


def validate_targets(
    recipe,
    output_path,
    *,
    report_path=None,
    report_variant: str = "internal",
    input_path=None,
    recipe_path=None,
    ledger_path=None,
    probe: bool = True,
) -> Targets:
    """Check every file a release will write; raise :class:`UserError` (nothing spent) or return them.

    ``input_path``, ``recipe_path`` and ``ledger_path`` are the files that must survive; with
    ``probe`` each target folder gets a file created and deleted in it."""
    from dpstudio.report.model import VARIANTS

    output = _absolute(output_path)
    dataset = names_dataset(output_path)
    if dataset:
        _check_dataset_folder(recipe, output)
    else:
        _check_place("output", output_path, output)
    named: list[tuple[str, Path]] = [("output", output)]
    artifact = report = None
    if artifact_beside(recipe):
        artifact = artifact_path(output)
        _check_place("density side file", artifact, artifact)
        named.append((f"density side file ({artifact.name})", artifact))
    if report_path is not None and os.fspath(report_path) != "":
        report = _absolute(report_path)
        _check_place("report", report_path, report)
        named.append(("report", report))
    # what must survive first: a collision is the worse mistake than a wrong extension
    _refuse_collisions(named, input_path=input_path, recipe_path=recipe_path, ledger_path=ledger_path)
    if dataset:
        # nothing may be written into the dataset's folder after it is in place (its recorded
        # SHA-256 covers every file in it)
        for what, p in named[1:]:
            if _inside(p, output):
                raise UserError(f"the {what} {p} would be written into the output dataset's folder; put it beside")
    fmt = DATASET_FORMAT if dataset else _output_format(recipe, output)
    kind = None
    if report is not None:
        if report_variant not in VARIANTS:
            raise UserError(f"report variant must be 'internal' or 'external', got {report_variant!r}")
        kind = REPORT_KINDS.get(report.suffix.lower())
        if kind is None:
            raise UserError(f"cannot tell the report format of {report.name}: use a .html or .pdf file name")
    if probe:
        # the named folder and, for a symbolic link, the folder it points into (where the file
        # is written): a link into a read-only folder failed only after the budget was reserved
        for folder in dict.fromkeys(q for what, p in named for q in (p.parent, _real(what, p).parent)):
            probe_folder(folder)
    return Targets(
        output=output,
        output_format=fmt,
        artifact=artifact,
        report=report,
        report_kind=kind,
        report_variant=report_variant,
    )


def _refuse_collisions(named, *, input_path, recipe_path, ledger_path) -> None:
    """No target may be a file that must survive, nor another target."""
    keep = [
        (what, _identity(p))
        for what, p in (("input data file", input_path), ("recipe", recipe_path), ("privacy ledger", ledger_path))
        if p is not None
    ]
    ledger = _ledger_files(ledger_path)
    ids = [(what, p, _identity(p)) for what, p in named]
    for i, (what, p, ident) in enumerate(ids):
        for other, oid in keep:
            if _same(ident, oid):
                raise UserError(f"the {what} {p} is the {other}: writing it would destroy it; choose another name")
        if (
            ledger is not None
            and os.path.dirname(ident[0]) == ledger[0]
            and os.path.basename(ident[0]).startswith(ledger[1])
        ):
            raise UserError(f"the {what} {p} is one of the privacy ledger's files; choose another name")
        for other, _q, oid in ids[:i]:
            if _same(ident, oid):
                raise UserError(f"the {what} and the {other} are the same file ({p}); give them different names")


#: the first bytes of every SQLite database (a privacy ledger is one)
SQLITE_HEADER = b"SQLite format 3\x00"


def refuse_overwrite(
    what: str,
    path,
    *,
    input_path=None,
    input_sha256: str | None = None,
    recipe_path=None,
    ledger_path=None,
    replace_existing: bool = False,
) -> None:
    """Refuse (UserError) a file another command writes (e.g. ``recipe init -o``) when it is the
    input, the recipe or a ledger file (the same rules as a release's targets), or when it exists
    and ``replace_existing`` (``--force``) was not given: a recipe or domain file is the user's own
    work, often edited by hand, and a second ``init`` with the same name would silently replace it.
    Even with ``--force``, an existing file is never replaced when it is a SQLite database (a
    ledger this command was not told about) or holds the bytes of the input (``input_sha256``,
    recorded in the recipe: a relative input path may name it from another folder)."""
    _refuse_collisions(
        [(what, _absolute(path))], input_path=input_path, recipe_path=recipe_path, ledger_path=ledger_path
    )
    if not os.path.lexists(path):
        return
    if not replace_existing:
        raise UserError(f"{path} already exists: choose another name for the {what}, or add --force to replace it")
    if not os.path.isfile(path):
        raise UserError(f"the {what} path {path} is not a regular file; choose a file name")
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
        if head == SQLITE_HEADER:
            raise UserError(f"{path} is a SQLite database (a privacy ledger?): a {what} is never written over it")
        if input_sha256:
            from dpstudio.export import output_sha256

            if output_sha256(path) == input_sha256.lower():
                raise UserError(f"{path} holds the recipe's input data: a {what} is never written over it")
    except OSError as exc:
        raise UserError(f"cannot check {path} before replacing it: {exc.strerror or exc}") from None
