"""Domain files: the public ranges and category lists of a table's columns, saved to a file
(JSON or CSV) and applied to another table with the same columns, or pasted as a table.

A domain written here is a *public choice*: typed from public knowledge (a code book, a
questionnaire, an earlier published table), never read from the data.  So every entry is
``source == "public"`` unless the file itself says otherwise: ``"dp"`` (a request to estimate
the domain with DP at a stated cost, over a public search range or candidate list) or
``"data"`` (a request to copy it from the private data, which needs the user's explicit
acknowledgement where it is applied).  Saving never writes values that came from the data:
a domain copied from the data is saved as the request ``"data"``, one estimated with DP as
its request (search range, cost), not as the values the estimate produced.

JSON::

    {"format": "dpstudio-domains", "version": 1,
     "columns": [
       {"column": "age", "type": "integer", "bounds": [0, 120]},
       {"column": "sex", "categories": ["female", "male"], "other": null},
       {"column": "income", "source": "dp", "search": [0, 1000000], "epsilon": 0.1},
       {"column": "job", "source": "dp", "epsilon": 0.1, "delta": 1e-7},
       {"column": "hours", "source": "data", "kind": "numeric"},
       {"column": "tenure", "bounds": [0, 50], "missing": true}]}

``"missing": true`` (CSV: ``missing`` = yes/true/1) says the column may be empty: a public
schema fact that synthetic releases read (empty cells are synthesised as a value of their own).

CSV (and pasted tables, tab- or comma-separated): either a header row naming any of
``column, type, kind, source, low, high, categories, other, epsilon, delta, search_low,
search_high, candidates, missing``, or no header and rows ``column, low, high`` or
``column, categories[, other]``, categories separated by ``|`` or ``;`` ("A|B|C").

Pure Python (no Qt): the CLI and the GUI share it.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from dpstudio.errors import UserError
from dpstudio.recipe.model import Cost, Domain, Recipe

FORMAT = "dpstudio-domains"
VERSION = 1
CSV_FIELDS = (
    "column",
    "type",
    "source",
    "low",
    "high",
    "categories",
    "other",
    "epsilon",
    "delta",
    "search_low",
    "search_high",
    "candidates",
    "missing",
)
_HEADER_NAMES = set(CSV_FIELDS) | {"kind"}
_NUMERIC_TYPES = ("integer", "float")
_CATEGORICAL_TYPES = ("categorical", "boolean")
SOURCES = ("public", "dp", "data")


class DomainFileError(UserError):
    """A domain file or table that cannot be used; ``problems`` lists every bad entry."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.problems = list(problems)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{path}: {problems[0] if problems else 'no domains'}{more}")


@dataclass(frozen=True)
class DomainRow:
    """One entry of a domain file or pasted table: its domain, or why it has none."""

    line: int  # 1-based line of the table, or position in a JSON file's list
    column: str
    domain: Domain | None
    type: str | None = None  # the column type the file states, if any
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.domain is not None


# ---- reading -------------------------------------------------------------------------------


def _number(text: object, what: str) -> float:
    if isinstance(text, bool):
        raise ValueError(f"{what} must be a number, got {text!r}")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = str(text).strip()
        if not s:
            raise ValueError(f"{what} is missing")
        try:
            value = float(s)
        except ValueError:
            raise ValueError(f"{what} must be a number, got {s!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {text!r}")
    return value


def split_categories(text: str, *, commas: bool = False) -> tuple[str, ...]:
    """ "A|B|C" or "A;B;C" (or "A, B, C" when ``commas``) -> ("A", "B", "C"), trimmed."""
    text = text.strip()
    for sep in ("|", ";") + ((",",) if commas else ()):
        if sep in text:
            return tuple(s.strip() for s in text.split(sep))
    return (text,) if text else ()


def _category_list(items, what: str) -> tuple[str, ...]:
    if isinstance(items, str):
        items = split_categories(items)
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"{what} must be a list, got {type(items).__name__}")
    cats = tuple(str(x).strip() for x in items)
    if not cats or all(c == "" for c in cats):
        raise ValueError(f"{what}: the list is empty")
    if any(c == "" for c in cats):
        raise ValueError(f"{what}: an empty category name")
    repeats = sorted(c for c, n in Counter(cats).items() if n > 1)
    if repeats:
        raise ValueError(f"{what} repeat(s) {', '.join(repeats[:5])}")
    return cats


def _public_numeric(low, high) -> Domain:
    lo, hi = _number(low, "the lowest value"), _number(high, "the highest value")
    if not lo < hi:
        raise ValueError(f"the lowest value must be below the highest, got {lo:g} and {hi:g}")
    return Domain(kind="numeric", source="public", low=lo, high=hi)


def _public_categorical(cats, other) -> Domain:
    categories = _category_list(cats, "categories")
    if len(categories) < 2:
        raise ValueError(f"a category list needs at least 2 categories, got {categories[0]!r}")
    other = None if other in (None, "") else str(other).strip()
    if other is not None and other not in categories:
        raise ValueError(f"the category for unlisted values, {other!r}, is not in the list")
    return Domain(kind="categorical", source="public", categories=categories, other=other)


def _missing_flag(value: object) -> bool:
    """A domain entry's ``missing``: JSON true/false, or CSV text (yes/true/1, no/false/0/empty)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("", "no", "false", "0", "n"):
        return False
    if text in ("yes", "true", "1", "y"):
        return True
    raise ValueError(f"missing must be yes or no, got {value!r}")


def _kind_of(entry: dict, ctype: str | None) -> str | None:
    kind = entry.get("kind")
    if kind in ("numeric", "categorical"):
        return kind
    if kind not in (None, ""):
        raise ValueError(f"kind must be numeric or categorical, got {kind!r}")
    if ctype in _NUMERIC_TYPES:
        return "numeric"
    if ctype in _CATEGORICAL_TYPES:
        return "categorical"
    if any(entry.get(k) not in (None, "") for k in ("low", "high", "search_low", "search_high", "bounds", "search")):
        return "numeric"
    if any(entry.get(k) not in (None, "") for k in ("categories", "candidates")):
        return "categorical"
    return None


def _entry_domain(entry: dict) -> tuple[Domain, str | None]:
    """The domain of one entry (a dict of the header names, JSON's or the CSV's)."""
    ctype = entry.get("type") or None
    if ctype is not None and ctype not in _NUMERIC_TYPES + _CATEGORICAL_TYPES:
        raise ValueError(f"type must be integer, float, categorical or boolean, got {ctype!r}")
    source = (entry.get("source") or "public").strip().lower()
    if source not in SOURCES:
        raise ValueError(f"source must be public, dp or data, got {source!r}")
    if "bounds" in entry:
        b = entry["bounds"]
        if not isinstance(b, (list, tuple)) or len(b) != 2:
            raise ValueError("bounds must be a list [low, high]")
        entry = {**entry, "low": b[0], "high": b[1]}
    if "search" in entry:
        b = entry["search"]
        if not isinstance(b, (list, tuple)) or len(b) != 2:
            raise ValueError("search must be a list [low, high]")
        entry = {**entry, "search_low": b[0], "search_high": b[1]}
    kind = _kind_of(entry, ctype)
    if kind is None:
        raise ValueError("give bounds (low and high) or a category list")
    if source == "public":
        if kind == "numeric":
            return _public_numeric(entry.get("low"), entry.get("high")), ctype
        return _public_categorical(entry.get("categories"), entry.get("other")), ctype
    if source == "data":
        other = entry.get("other") or None
        return Domain(kind=kind, source="data", other=None if other is None else str(other)), ctype
    # a DP estimate: its cost, and the public search range or candidate list
    eps = _number(entry.get("epsilon"), "the estimate's privacy cost (epsilon)")
    if eps <= 0:
        raise ValueError(f"the estimate's privacy cost (epsilon) must be positive, got {eps:g}")
    if kind == "numeric":
        lo = _number(entry.get("search_low"), "the start of the search range")
        hi = _number(entry.get("search_high"), "the end of the search range")
        if not lo < hi:
            raise ValueError(f"the search range must run from low to high, got {lo:g} and {hi:g}")
        return Domain(kind="numeric", source="dp", search_low=lo, search_high=hi, cost=Cost(epsilon=eps)), ctype
    raw = entry.get("candidates")
    candidates = _category_list(raw, "candidates") if raw not in (None, "", []) else None
    delta = 0.0
    if candidates is None:
        from dpstudio.recipe.build import DEFAULT_DISCOVERY_DELTA

        d = entry.get("delta")
        delta = DEFAULT_DISCOVERY_DELTA if d in (None, "") else _number(d, "the estimate's delta")
        if not delta > 0:
            raise ValueError("finding categories without a candidate list needs a positive delta")
    other = entry.get("other") or None
    return (
        Domain(
            kind="categorical",
            source="dp",
            candidates=candidates,
            other=None if other is None else str(other),
            cost=Cost(epsilon=eps, delta=delta),
        ),
        ctype,
    )


def _row(line: int, column: str, entry: dict, seen: dict[str, int]) -> DomainRow:
    column = column.strip()
    if not column:
        return DomainRow(line, "", None, error="no column name")
    if column in seen:
        return DomainRow(line, column, None, error=f"{column!r} is given twice (first on line {seen[column]})")
    seen[column] = line
    try:
        domain, ctype = _entry_domain(entry)
        if _missing_flag(entry.get("missing")):
            domain = replace(domain, missing=True)
    except ValueError as exc:
        return DomainRow(line, column, None, error=str(exc))
    return DomainRow(line, column, domain, type=ctype)


def _split_lines(text: str, delimiter: str | None) -> list[tuple[int, list[str], str]]:
    """Non-empty rows, each with its line number and delimiter: ``delimiter``, or per line a
    tab when the line has one, else a comma (a pasted table mixing both still reads)."""
    out = []
    for n, line in enumerate(text.lstrip("\ufeff").splitlines(), start=1):
        if not line.strip():
            continue
        d = delimiter or ("\t" if "\t" in line else ",")
        out.append((n, next(csv.reader([line], delimiter=d)), d))
    return out


def parse_domain_table(text: str, delimiter: str | None = None) -> list[DomainRow]:
    """Rows of a pasted or CSV domain table, each with its domain or its error (never dropped).

    Without a header: ``column, low, high`` (both numbers) or ``column, categories[, other]``;
    with a header row (first cell "column"), any of the names of :data:`CSV_FIELDS`."""
    split = [(n, r, d) for n, r, d in _split_lines(text, delimiter) if any(c.strip() for c in r)]
    if not split:
        return []
    head = [c.strip().lower() for c in split[0][1]]
    out: list[DomainRow] = []
    seen: dict[str, int] = {}
    if head and head[0] in ("column", "name", "variable"):
        unknown = [h for h in head if h and h not in _HEADER_NAMES]
        names = ["column", *head[1:]]
        for i, r, _d in split[1:]:
            entry = {n: r[j].strip() for j, n in enumerate(names) if j < len(r) and n in _HEADER_NAMES}
            if unknown:
                out.append(
                    DomainRow(i, entry.get("column", ""), None, error=f"unknown heading(s) {', '.join(unknown)}")
                )
                continue
            out.append(_row(i, entry.get("column", ""), entry, seen))
        return out
    for i, r, delim in split:
        cells = [c.strip() for c in r]
        name, rest = cells[0], cells[1:]
        while rest and rest[-1] == "":
            rest.pop()
        if len(rest) >= 2 and _is_number(rest[0]) and _is_number(rest[1]):
            if len(rest) > 2:
                out.append(DomainRow(i, name, None, error="expected column, low, high: more cells than that"))
                continue
            out.append(_row(i, name, {"low": rest[0], "high": rest[1]}, seen))
        elif len(rest) in (1, 2) and rest[0]:
            cats = split_categories(rest[0], commas=delim == "\t")
            cat_entry: dict[str, object] = {"categories": list(cats), "other": rest[1] if len(rest) == 2 else None}
            out.append(_row(i, name, cat_entry, seen))
        else:
            out.append(
                DomainRow(
                    i,
                    name,
                    None,
                    error="expected column, low, high (numbers) or column, categories (A|B|C)",
                )
            )
    return out


def _is_number(text: str) -> bool:
    """Reads as a number (infinities too: they are refused as bounds, with the reason)."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def read_domain_rows(path) -> list[DomainRow]:
    """Every entry of a domain file (JSON, or CSV/TSV/TXT), each with its domain or its error."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeError) as exc:
        raise UserError(f"cannot read the domain file {p.name}: {exc}") from None
    if p.suffix.lower() != ".json":
        return parse_domain_table(text, {".tsv": "\t", ".csv": ","}.get(p.suffix.lower()))
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise UserError(f"{p.name} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UserError(f'{p.name} is not a dpstudio domain file (no "format": "{FORMAT}")')
    if not isinstance(data.get("version"), int) or data["version"] > VERSION:
        raise UserError(f"{p.name}: domain file version {data.get('version')!r} is not supported (at most {VERSION})")
    cols = data.get("columns")
    if isinstance(cols, dict):
        cols = [{"column": k, **v} if isinstance(v, dict) else v for k, v in cols.items()]
    if not isinstance(cols, list):
        raise UserError(f'{p.name}: "columns" must be a list of entries')
    out: list[DomainRow] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(cols, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("column"), str):
            out.append(DomainRow(i, "", None, error='an entry needs a "column" name'))
            continue
        out.append(_row(i, entry["column"], entry, seen))
    return out


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def load_domains(path) -> dict[str, Domain]:
    """The domains of a file by column name; a :class:`DomainFileError` listing every bad entry."""
    rows = read_domain_rows(path)
    bad = [f"line {r.line}" + (f" ({r.column})" if r.column else "") + f": {r.error}" for r in rows if not r.ok]
    if bad:
        raise DomainFileError(Path(path).name, bad)
    return {r.column: r.domain for r in rows if r.domain is not None}


def file_types(path) -> dict[str, str]:
    """The column types a domain file states (entries with a ``type``)."""
    return {r.column: r.type for r in read_domain_rows(path) if r.ok and r.type}


# ---- writing -------------------------------------------------------------------------------


def domain_entry(name: str, col_type: str | None, d: Domain) -> dict:
    """One JSON entry.  Values copied from the data or produced by a DP estimate are not
    written: the entry is the request (copy / estimate at this cost), never private values."""
    e: dict = {"column": name}
    if col_type:
        e["type"] = col_type
    if d.source == "data":
        e.update(source="data", kind=d.kind)
    elif d.source == "dp":
        e["source"] = "dp"
        assert d.cost is not None, name
        e["epsilon"] = d.cost.epsilon
        if d.kind == "numeric":
            e["search"] = [d.search_low, d.search_high]
        else:
            if d.candidates:
                e["candidates"] = list(d.candidates)
            else:
                e["delta"] = d.cost.delta
    elif d.kind == "numeric":
        e["bounds"] = [d.low, d.high]
    else:
        e["categories"] = list(d.categories or ())
    if d.kind == "categorical" and d.other is not None:
        e["other"] = d.other
    if d.missing:
        e["missing"] = True
    return e


def domains_json(recipe: Recipe) -> dict:
    """The recipe's domains as a domain file's JSON (columns without a domain are left out)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "note": "Public domains (ranges and category lists) of a table's columns; apply them to a table "
        "with the same columns.",
        "columns": [domain_entry(c.name, c.type, c.domain) for c in recipe.columns if c.domain is not None],
    }


def _csv_list(items: tuple[str, ...] | list[str] | None) -> str:
    items = list(items or ())
    if any("|" in x for x in items):  # "|" separates them (read back first, before ";")
        raise UserError("a category name contains '|': save the domains as JSON instead")
    return "|".join(items)


def domains_csv(recipe: Recipe) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for entry in domains_json(recipe)["columns"]:
        row = dict(entry)
        if "bounds" in row:
            row["low"], row["high"] = row.pop("bounds")
        if "search" in row:
            row["search_low"], row["search_high"] = row.pop("search")
        if row.get("source") == "data":
            row["type"] = row.get("type") or ("float" if row.pop("kind") == "numeric" else "categorical")
        for k in ("categories", "candidates"):
            if k in row:
                row[k] = _csv_list(row[k])
        if row.get("missing"):
            row["missing"] = "yes"
        w.writerow(["" if row.get(k) is None else _cell(row.get(k)) for k in CSV_FIELDS])
    return buf.getvalue()


def _cell(v) -> str:
    if isinstance(v, float):
        return repr(v) if v != int(v) or abs(v) >= 1e16 else str(int(v))
    return str(v)


def save_domains(recipe: Recipe, path) -> int:
    """Write the recipe's domains to ``path`` (.json, or .csv/.tsv/.txt); the number written."""
    from dpstudio.export import write_text

    p = Path(path)
    data = domains_json(recipe)
    if p.suffix.lower() == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    else:
        text = domains_csv(recipe)
        if p.suffix.lower() == ".tsv":
            rows = list(csv.reader(io.StringIO(text)))
            out = io.StringIO()
            csv.writer(out, delimiter="\t", lineterminator="\n").writerows(rows)
            text = out.getvalue()
    write_text(text, p)
    return len(data["columns"])


# ---- applying ------------------------------------------------------------------------------


def _column_kind(col_type: str) -> str | None:
    if col_type in _NUMERIC_TYPES:
        return "numeric"
    if col_type in _CATEGORICAL_TYPES:
        return "categorical"
    return None


def closest(name: str, names: list[str]) -> str | None:
    """The column name closest to ``name`` (case-insensitive), if one is close."""
    low = {n.lower(): n for n in names}
    if name.lower() in low:
        return low[name.lower()]
    hit = difflib.get_close_matches(name.lower(), list(low), n=1, cutoff=0.6)
    return low[hit[0]] if hit else None


def mismatch(recipe: Recipe, name: str, domain: Domain) -> str | None:
    """Why ``domain`` cannot be given to column ``name`` of ``recipe`` (None: it can)."""
    try:
        col = recipe.column(name)
    except KeyError:
        near = closest(name, [c.name for c in recipe.columns])
        return f"no column {name!r} in this table" + (f" (did you mean {near!r}?)" if near else "")
    kind = _column_kind(col.type)
    if kind is None:
        return f"{name!r} is a {col.type} column: it takes no domain"
    if kind != domain.kind:
        if domain.kind == "numeric":
            return f"{name!r} is a {col.type} column: it needs a category list, not bounds"
        return (
            f"{name!r} is a {col.type} column: it needs bounds, not a category list (or change its type to categorical)"
        )
    return None


@dataclass
class ApplyReport:
    """What applying domains did: every entry is in exactly one list (nothing dropped silently)."""

    applied: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # "name: why"
    mismatched: list[str] = field(default_factory=list)  # "why"
    needs_ack: list[str] = field(default_factory=list)  # copies from the data not confirmed

    @property
    def skipped(self) -> int:
        return len(self.unknown) + len(self.mismatched) + len(self.needs_ack)

    def lines(self) -> list[str]:
        out = [f"{len(self.applied)} domain(s) applied" + (f": {', '.join(self.applied)}" if self.applied else "")]
        out += [f"not applied: {u}" for u in self.unknown]
        out += [f"not applied: {m}" for m in self.mismatched]
        out += [
            f"not applied: {n!r} would copy its domain from the private data (not confirmed)" for n in self.needs_ack
        ]
        return out


def apply_domains(
    recipe: Recipe, domains: dict[str, Domain], *, acknowledge_data: bool = False
) -> tuple[Recipe, ApplyReport]:
    """``recipe`` with the domains of matching columns replaced; unknown and mismatched names
    reported, not applied.  Copies from the data are applied only with ``acknowledge_data``
    (the user confirmed the risk), which records the acknowledgement."""
    from dpstudio.recipe.validate import ACK_DOMAIN_FROM_DATA

    report = ApplyReport()
    new: dict[str, Domain] = {}
    for name, d in domains.items():
        why = mismatch(recipe, name, d)
        if why is not None:
            (report.unknown if why.startswith("no column") else report.mismatched).append(why)
            continue
        if d.source == "data" and not acknowledge_data and ACK_DOMAIN_FROM_DATA not in recipe.acknowledgements:
            report.needs_ack.append(name)
            continue
        new[name] = d
        report.applied.append(name)
    if not new:
        return recipe, report
    cols = tuple(replace(c, domain=new[c.name]) if c.name in new else c for c in recipe.columns)
    out = replace(recipe, columns=cols)
    if any(d.source == "data" for d in new.values()) and ACK_DOMAIN_FROM_DATA not in out.acknowledgements:
        out = replace(out, acknowledgements=out.acknowledgements + (ACK_DOMAIN_FROM_DATA,))
    return out, report


__all__ = [
    "ApplyReport",
    "DomainFileError",
    "DomainRow",
    "apply_domains",
    "closest",
    "domains_json",
    "file_types",
    "load_domains",
    "mismatch",
    "parse_domain_table",
    "read_domain_rows",
    "save_domains",
    "split_categories",
]
