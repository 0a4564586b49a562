"""The release recipe: frozen dataclasses with a versioned JSON form.

The recipe is the single source of truth for a release: the GUI edits one, the CLI runs one,
and the report prints one for reproduction.  JSON never contains Python class paths, so
renaming code never breaks a saved recipe; ``schema_version`` guards the layout and older
layouts are migrated by :mod:`dpstudio.recipe.migrate`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Set
from dataclasses import dataclass, field, replace
from typing import Any

SCHEMA_VERSION = 1

RELEASE_TYPES = ("record", "label", "semi-sensitive", "synthetic", "model", "density")
ROLES = ("identifier", "public", "sensitive", "label", "embedding", "ignore")
COLUMN_TYPES = ("integer", "float", "boolean", "categorical", "datetime", "text", "vector")
DOMAIN_SOURCES = ("public", "dp", "data")
# Where a column's type or role came from: "confirmed" (chosen by the user: --type/--role, the GUI,
# or an explicit confirmation of the suggestion) or "inferred" (read from the private data by
# ``recipe init`` and never confirmed).  Both change what is released, so inferred ones are listed.
FACT_SOURCES = ("confirmed", "inferred")
# Mechanisms a column may name; "none" passes the column through unchanged (public columns).
MECHANISM_NAMES = ("laplace", "gaussian", "rr", "metric", "none")
OUTPUT_FORMATS = ("csv", "parquet", "xlsx", "json")

DOMAIN_SOURCE_TEXT = {
    "public": "typed by the user (public knowledge)",
    "dp": "estimated with differential privacy (cost counted in the total)",
    "data": "COPIED FROM THE PRIVATE DATA - a privacy risk not covered by the guarantee",
}


def _freeze(value: Any) -> Any:
    """Make nested JSON-like values hashable so recipes can be frozen dataclasses."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class Params:
    """An immutable string-keyed mapping of JSON scalars/lists (mechanism and release options)."""

    items: tuple = ()

    @classmethod
    def of(cls, mapping: dict | None) -> Params:
        mapping = mapping or {}
        return cls(tuple(sorted((str(k), _to_tuple(v)) for k, v in mapping.items())))

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.items:
            if k == key:
                return v
        return default

    def to_dict(self) -> dict:
        return {k: _to_list(v) for k, v in self.items}

    def with_(self, **changes) -> Params:
        d = self.to_dict()
        d.update(changes)
        return Params.of(d)

    def __contains__(self, key: str) -> bool:
        return any(k == key for k, _ in self.items)


def _to_tuple(v):
    if isinstance(v, list):
        return tuple(_to_tuple(x) for x in v)
    if isinstance(v, dict):
        return Params.of(v)
    return v


def _to_list(v):
    if isinstance(v, tuple):
        return [_to_list(x) for x in v]
    if isinstance(v, Params):
        return v.to_dict()
    return v


@dataclass(frozen=True)
class Cost:
    """The privacy cost paid to estimate a domain with DP."""

    epsilon: float
    delta: float = 0.0


@dataclass(frozen=True)
class Domain:
    """Bounds of a numeric column or the category list of a categorical one, and where it came from.

    ``source``: "public" (typed by the user), "dp" (estimated with DP at ``cost``; when the
    values are not yet known ``search_low``/``search_high`` or ``candidates`` give the public
    range searched) or "data" (copied from the observed data by an explicit user action — a
    privacy risk every report flags).

    ``missing``: the column may be empty (a public schema fact, chosen like the type).  Only
    synthetic releases read it: their synthesizers give empty cells a value of their own
    ("missing"), measured and sampled like any other, so the synthetic table has empty cells
    where the real one tends to.  Other release types ignore it.  ``missing_inferred``: the flag
    was read from the private data (``recipe init`` saw empty cells) and nobody confirmed it: one
    record can flip it, so it is listed with the other inferred facts until confirmed (serialised
    as ``"missing": "inferred"``).
    """

    kind: str  # "numeric" | "categorical"
    source: str = "public"
    low: float | None = None
    high: float | None = None
    categories: tuple[str, ...] | None = None
    other: str | None = None  # category that out-of-list values are mapped to; None = refuse
    cost: Cost | None = None
    search_low: float | None = None
    search_high: float | None = None
    candidates: tuple[str, ...] | None = None
    missing: bool = False
    missing_inferred: bool = False

    @property
    def known(self) -> bool:
        if self.kind == "numeric":
            return self.low is not None and self.high is not None
        return self.categories is not None

    @property
    def diameter(self) -> float:
        assert self.low is not None and self.high is not None, "the diameter of a domain without bounds"
        return float(self.high) - float(self.low)


@dataclass(frozen=True)
class Mechanism:
    name: str
    weight: float = 1.0  # share of the per-record budget, relative to the other perturbed columns
    params: Params = field(default_factory=Params)


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    role: str
    domain: Domain | None = None
    mechanism: Mechanism | None = None
    group: str | None = None  # embedding group: columns sharing it form one vector
    type_source: str = "inferred"  # FACT_SOURCES; unstated means nobody confirmed it
    role_source: str = "inferred"


@dataclass(frozen=True)
class InputSpec:
    path: str
    format: str | None = None
    options: Params = field(default_factory=Params)
    sha256: str | None = None
    # the dataset's name in the budget ledger: edited or re-saved versions of a file share it
    dataset: str | None = None


@dataclass(frozen=True)
class ReleaseSpec:
    type: str
    options: Params = field(default_factory=Params)


#: what a release must achieve (docs/targets.md): "within" a tolerance for a share of records (a
#: perturbed number), a category "keep" probability (randomized response), a synthetic table's
#: 1-way "marginals" within a mean total variation, at most this accuracy for the best
#: "label-attack"er, at most this re-identification ("reid") rate of a linkage attack
TARGET_KINDS = ("within", "keep", "marginals", "label-attack", "reid")


@dataclass(frozen=True)
class Target:
    """One target the budget is solved for (``dpstudio.plan.solve``).

    ``within``: ``column``'s released value within +-``value`` of the true one for at least a
    share ``probability`` of records; ``keep``: ``column``'s category kept with probability at
    least ``value``; ``marginals``: a synthetic table's 1-way marginals at most ``value`` total
    variation from the real ones, on average over columns; ``label-attack``: the best label
    attacker right at most a share ``value`` of the time; ``reid``: at most a share ``value``
    of records re-identified by linkage."""

    kind: str
    value: float
    column: str | None = None
    probability: float | None = None

    @property
    def spec(self) -> str:
        """The target as ``recipe init --target`` writes it (``age=within:3:0.95``)."""
        if self.kind == "within":
            return f"{self.column}=within:{self.value:g}:{self.probability:g}"
        if self.kind == "keep":
            return f"{self.column}=keep:{self.value:g}"
        return f"{self.kind}={self.value:g}"

    @classmethod
    def parse(cls, text: str) -> Target:
        """``age=within:3:0.95``, ``sex=keep:0.8``, ``marginals=0.05``, ``label-attack=0.6`` or ``reid=0.01``
        (raises ValueError with the accepted forms)."""
        forms = (
            "COLUMN=within:TOLERANCE:SHARE, COLUMN=keep:PROBABILITY, marginals=TOTAL_VARIATION, "
            "label-attack=ACCURACY or reid=RATE"
        )
        left, sep, right = str(text).partition("=")
        left, right = left.strip(), right.strip()
        if not sep or not left or not right:
            raise ValueError(f"target {text!r}: expected {forms}")
        try:
            if left in ("marginals", "label-attack", "reid"):
                return cls(kind=left, value=float(right))
            kind, _, rest = right.partition(":")
            if kind == "within":
                tol, _, share = rest.partition(":")
                return cls(kind="within", column=left, value=float(tol), probability=float(share))
            if kind == "keep":
                return cls(kind="keep", column=left, value=float(rest))
        except ValueError:
            pass
        raise ValueError(f"target {text!r}: expected {forms}")

    def to_json(self) -> dict:
        return _drop_none(
            {"kind": self.kind, "column": self.column, "value": self.value, "probability": self.probability}
        )


@dataclass(frozen=True)
class Budget:
    epsilon: float
    delta: float = 0.0
    #: when set, ``epsilon`` and the perturbed columns' weights were solved for these targets
    targets: tuple[Target, ...] = ()
    #: what the solver found (``dpstudio.plan.solve.Solution.record``): epsilon, split, status
    solved: Params = field(default_factory=Params)


@dataclass(frozen=True)
class Randomness:
    seed: int | None = None  # None: the OS's cryptographically secure source

    @property
    def secure(self) -> bool:
        return self.seed is None


@dataclass(frozen=True)
class Outputs:
    format: str = "csv"
    rows: int | None = None  # synthetic data: rows to generate (None = as many as the input)
    # CSV/TSV/XLSX: quote text cells and column names that start with = + - @ TAB CR (OWASP),
    # so a spreadsheet shows them as text instead of evaluating them.  On unless turned off.
    formula_protection: bool = True


@dataclass(frozen=True)
class Recipe:
    input: InputSpec
    release: ReleaseSpec
    columns: tuple[Column, ...]
    budget: Budget
    randomness: Randomness = field(default_factory=Randomness)
    outputs: Outputs = field(default_factory=Outputs)
    acknowledgements: tuple[str, ...] = ()
    schema_version: int = SCHEMA_VERSION

    # ---- convenience -------------------------------------------------------------------
    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def columns_with_role(self, *roles: str) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.role in roles)

    def with_column(self, name: str, **changes) -> Recipe:
        cols = tuple(replace(c, **changes) if c.name == name else c for c in self.columns)
        return replace(self, columns=cols)

    def to_json(self) -> dict:
        return recipe_to_json(self)

    def dumps(self) -> str:
        # allow_nan=False: JSON has no Infinity/NaN; a non-finite number is a bug caught here, not a
        # recipe that no JSON reader (ours included) accepts
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False, allow_nan=False)

    def sha256(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# ---- JSON ---------------------------------------------------------------------------------


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _f(v):
    """Numbers as floats, so a recipe and its JSON round trip hash identically."""
    return None if v is None else float(v)


def domain_to_json(d: Domain) -> dict:
    out = {
        "kind": d.kind,
        "source": d.source,
        "low": _f(d.low),
        "high": _f(d.high),
        "categories": list(d.categories) if d.categories is not None else None,
        "other": d.other,
        "cost": {"epsilon": _f(d.cost.epsilon), "delta": _f(d.cost.delta)} if d.cost else None,
        "search_low": _f(d.search_low),
        "search_high": _f(d.search_high),
        "candidates": list(d.candidates) if d.candidates is not None else None,
        # written only when set: older recipes hash alike
        "missing": ("inferred" if d.missing_inferred else True) if d.missing else None,
    }
    return _drop_none(out)


def recipe_to_json(r: Recipe) -> dict:
    cols = []
    for c in r.columns:
        col: dict[str, Any] = {
            "name": c.name,
            "type": c.type,
            "role": c.role,
            "type_source": c.type_source,
            "role_source": c.role_source,
        }
        if c.domain is not None:
            col["domain"] = domain_to_json(c.domain)
        if c.mechanism is not None:
            col["mechanism"] = {
                "name": c.mechanism.name,
                "weight": _f(c.mechanism.weight),
                "params": c.mechanism.params.to_dict(),
            }
        if c.group is not None:
            col["group"] = c.group
        cols.append(col)
    return {
        "schema_version": r.schema_version,
        "input": _drop_none(
            {
                "path": r.input.path,
                "format": r.input.format,
                "options": r.input.options.to_dict(),
                "sha256": r.input.sha256,
                "dataset": r.input.dataset,
            }
        ),
        "release": {"type": r.release.type, "options": r.release.options.to_dict()},
        "columns": cols,
        "budget": {
            "epsilon": _f(r.budget.epsilon),
            "delta": _f(r.budget.delta),
            **({"targets": [t.to_json() for t in r.budget.targets]} if r.budget.targets else {}),
            **({"solved": r.budget.solved.to_dict()} if r.budget.solved.items else {}),
        },
        "randomness": {"seed": r.randomness.seed},
        "outputs": _drop_none(
            {"format": r.outputs.format, "rows": r.outputs.rows, "formula_protection": r.outputs.formula_protection}
        ),
        "acknowledgements": list(r.acknowledgements),
    }


def _finite_float(v: Any) -> float | None:
    """``v`` as a finite float, or None (not a number, a bool, inf/nan, or an int past 1.8e308)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _brief(v: Any, limit: int = 60) -> str:
    """repr of a bad value for a one-line message, cut short (a 400-digit number, a huge list)."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**30:
        return f"an integer of {len(str(abs(v)))} digits"
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 3] + "..."


class _Reader:
    """Reads a JSON dict into dataclasses, collecting every problem instead of stopping."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def keys(self, d: Any, where: str, allowed: Set[str], required: Set[str] = frozenset()) -> dict:
        if not isinstance(d, dict):
            self.problems.append(f"{where}: expected an object, got {d!r}")
            return {}
        for k in d:
            if k not in allowed:
                self.problems.append(f"{where}: unknown key {k!r} (allowed: {', '.join(sorted(allowed))})")
        for k in required:
            if k not in d:
                self.problems.append(f"{where}: missing required key {k!r}")
        return d

    def number(self, v: Any, where: str, *, allow_none=False) -> float | None:
        if v is None and allow_none:
            return None
        # an int beyond float range (a 400-digit literal) is as unusable as inf: float() overflows
        f = _finite_float(v)
        if f is None:
            self.problems.append(f"{where}: expected a finite number, got {_brief(v)}")
            return None
        return f

    def string(self, v: Any, where: str, *, choices=None, allow_none=False) -> str | None:
        if v is None and allow_none:
            return None
        if not isinstance(v, str):
            self.problems.append(f"{where}: expected a string, got {v!r}")
            return None
        if choices is not None and v not in choices:
            self.problems.append(f"{where}: {v!r} is not one of {', '.join(choices)}")
            return None
        return v

    def strings(self, v: Any, where: str) -> tuple[str, ...] | None:
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self.problems.append(f"{where}: expected a list of strings, got {v!r}")
            return None
        return tuple(v)

    def flag(self, v: Any, where: str) -> bool:
        if not isinstance(v, bool):
            self.problems.append(f"{where}: expected true or false, got {_brief(v)}")
            return False
        return v

    def params(self, v: Any, where: str) -> Params:
        if v is None:
            return Params()
        if not isinstance(v, dict):
            self.problems.append(f"{where}: expected an object, got {v!r}")
            return Params()
        return Params.of(v)


def recipe_from_json(data: Any) -> Recipe:
    """Parse (and migrate) a recipe; raises RecipeError listing *all* problems found."""
    from dpstudio.errors import RecipeError
    from dpstudio.recipe.migrate import migrate

    data = migrate(data)  # raises RecipeError on newer/unknown versions
    rd = _Reader()
    top = rd.keys(
        data,
        "recipe",
        {"schema_version", "input", "release", "columns", "budget", "randomness", "outputs", "acknowledgements"},
        {"input", "release", "columns", "budget"},
    )

    inp = rd.keys(top.get("input", {}), "input", {"path", "format", "options", "sha256", "dataset"}, {"path"})
    input_spec = InputSpec(
        path=rd.string(inp.get("path"), "input.path") or "",
        format=rd.string(inp.get("format"), "input.format", allow_none=True),
        options=rd.params(inp.get("options"), "input.options"),
        sha256=rd.string(inp.get("sha256"), "input.sha256", allow_none=True),
        dataset=rd.string(inp.get("dataset"), "input.dataset", allow_none=True),
    )

    rel = rd.keys(top.get("release", {}), "release", {"type", "options"}, {"type"})
    release = ReleaseSpec(
        type=rd.string(rel.get("type"), "release.type", choices=RELEASE_TYPES) or "record",
        options=rd.params(rel.get("options"), "release.options"),
    )

    bud = rd.keys(top.get("budget", {}), "budget", {"epsilon", "delta", "targets", "solved"}, {"epsilon"})
    targets = []
    raw_targets = bud.get("targets", []) or []
    if not isinstance(raw_targets, list):
        rd.problems.append(f"budget.targets: expected a list, got {_brief(raw_targets)}")
        raw_targets = []
    for i, rt in enumerate(raw_targets):
        where = f"budget.targets[{i}]"
        t = rd.keys(rt, where, {"kind", "column", "value", "probability"}, {"kind", "value"})
        targets.append(
            Target(
                kind=rd.string(t.get("kind"), f"{where}.kind", choices=TARGET_KINDS) or "within",
                value=rd.number(t.get("value"), f"{where}.value") or 0.0,
                column=rd.string(t.get("column"), f"{where}.column", allow_none=True),
                probability=rd.number(t.get("probability"), f"{where}.probability", allow_none=True),
            )
        )
    budget = Budget(
        epsilon=rd.number(bud.get("epsilon"), "budget.epsilon") or 0.0,
        delta=rd.number(bud.get("delta", 0.0), "budget.delta") or 0.0,
        targets=tuple(targets),
        solved=rd.params(bud.get("solved"), "budget.solved"),
    )

    rnd = rd.keys(top.get("randomness", {}) or {}, "randomness", {"seed"})
    seed = rnd.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
        # below 2**63: the ledger and the reports store it as a 64-bit integer
        rd.problems.append(f"randomness.seed: expected an integer in [0, 2**63) or null, got {_brief(seed)}")
        seed = None
    randomness = Randomness(seed=seed)

    out = rd.keys(top.get("outputs", {}) or {}, "outputs", {"format", "rows", "formula_protection"})
    rows = out.get("rows")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows <= 0):
        rd.problems.append(f"outputs.rows: expected a positive integer, got {rows!r}")
        rows = None
    fp = out.get("formula_protection", True)  # unstated: the safe default
    if not isinstance(fp, bool):
        rd.problems.append(f"outputs.formula_protection: expected true/false, got {fp!r}")
        fp = False
    outputs = Outputs(
        format=rd.string(out.get("format", "csv"), "outputs.format", choices=OUTPUT_FORMATS) or "csv",
        rows=rows,
        formula_protection=fp,
    )

    acks = rd.strings(top.get("acknowledgements", []), "acknowledgements") or ()

    columns = []
    raw_cols = top.get("columns", [])
    if not isinstance(raw_cols, list):
        rd.problems.append(f"columns: expected a list, got {raw_cols!r}")
        raw_cols = []
    for i, rc in enumerate(raw_cols):
        name = rc.get("name") if isinstance(rc, dict) else None
        where = f"column {name!r}" if isinstance(name, str) else f"columns[{i}]"
        c = rd.keys(
            rc,
            where,
            {"name", "type", "role", "domain", "mechanism", "group", "type_source", "role_source"},
            {"name", "type", "role"},
        )
        domain = None
        if c.get("domain") is not None:
            dd = rd.keys(
                c["domain"],
                f"{where} domain",
                {
                    "kind",
                    "source",
                    "low",
                    "high",
                    "categories",
                    "other",
                    "cost",
                    "search_low",
                    "search_high",
                    "candidates",
                    "missing",
                },
                {"kind"},
            )
            cost = None
            if dd.get("cost") is not None:
                cd = rd.keys(dd["cost"], f"{where} domain cost", {"epsilon", "delta"}, {"epsilon"})
                cost = Cost(
                    epsilon=rd.number(cd.get("epsilon"), f"{where} domain cost epsilon") or 0.0,
                    delta=rd.number(cd.get("delta", 0.0), f"{where} domain cost delta") or 0.0,
                )
            domain = Domain(
                kind=rd.string(dd.get("kind"), f"{where} domain kind", choices=("numeric", "categorical")) or "numeric",
                source=rd.string(dd.get("source", "public"), f"{where} domain source", choices=DOMAIN_SOURCES)
                or "public",
                low=rd.number(dd.get("low"), f"{where} domain low", allow_none=True),
                high=rd.number(dd.get("high"), f"{where} domain high", allow_none=True),
                categories=rd.strings(dd.get("categories"), f"{where} domain categories"),
                other=rd.string(dd.get("other"), f"{where} domain other", allow_none=True),
                cost=cost,
                search_low=rd.number(dd.get("search_low"), f"{where} domain search_low", allow_none=True),
                search_high=rd.number(dd.get("search_high"), f"{where} domain search_high", allow_none=True),
                candidates=rd.strings(dd.get("candidates"), f"{where} domain candidates"),
                missing=dd.get("missing") == "inferred"
                or rd.flag(dd.get("missing", False), f'{where} domain missing (true, false or "inferred")'),
                missing_inferred=dd.get("missing") == "inferred",
            )
        mech = None
        if c.get("mechanism") is not None:
            md = rd.keys(c["mechanism"], f"{where} mechanism", {"name", "weight", "params"}, {"name"})
            mech = Mechanism(
                name=rd.string(md.get("name"), f"{where} mechanism name", choices=MECHANISM_NAMES) or "none",
                weight=rd.number(md.get("weight", 1.0), f"{where} mechanism weight") or 0.0,
                params=rd.params(md.get("params"), f"{where} mechanism params"),
            )
        columns.append(
            Column(
                name=rd.string(c.get("name"), f"{where} name") or "",
                type=rd.string(c.get("type"), f"{where} type", choices=COLUMN_TYPES) or "text",
                role=rd.string(c.get("role"), f"{where} role", choices=ROLES) or "ignore",
                domain=domain,
                mechanism=mech,
                group=rd.string(c.get("group"), f"{where} group", allow_none=True),
                # recipes written before these fields existed never recorded a confirmation
                type_source=rd.string(c.get("type_source", "inferred"), f"{where} type_source", choices=FACT_SOURCES)
                or "inferred",
                role_source=rd.string(c.get("role_source", "inferred"), f"{where} role_source", choices=FACT_SOURCES)
                or "inferred",
            )
        )

    if rd.problems:
        raise RecipeError(rd.problems)
    recipe = Recipe(
        input=input_spec,
        release=release,
        columns=tuple(columns),
        budget=budget,
        randomness=randomness,
        outputs=outputs,
        acknowledgements=acks,
    )
    return recipe


#: a recipe is a few KB; even one listing 65,536 categories per column stays far below this
MAX_RECIPE_BYTES = 64 << 20
#: objects/lists inside objects/lists: a recipe needs about 6 levels (release options a few more)
MAX_RECIPE_DEPTH = 32


class _JSONObject(dict):
    """A parsed JSON object that remembers the keys it saw more than once (``json`` keeps the last)."""

    duplicates: tuple = ()


def _object_pairs(pairs) -> _JSONObject:
    obj = _JSONObject(pairs)
    if len(obj) != len(pairs):
        seen: set[Any] = set()
        repeated = []
        for k, _ in pairs:
            if k in seen:
                repeated.append(k)
            else:
                seen.add(k)
        obj.duplicates = tuple(repeated)
    return obj


def parse_recipe_text(text: str, where: str = "recipe") -> Any:
    """JSON text -> Python values, refusing what ``json`` would silently accept or choke on:
    duplicate keys (named by their path), nesting deeper than :data:`MAX_RECIPE_DEPTH`,
    and NaN/Infinity literals (not JSON).  Raises UserError with one line."""
    from dpstudio.errors import UserError

    def no_constants(name):
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(text, object_pairs_hook=_object_pairs, parse_constant=no_constants)
    except RecursionError:
        raise UserError(f"{where} is nested too deeply (more than {MAX_RECIPE_DEPTH} levels)") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError, and so is a NaN/Infinity literal
        raise UserError(f"{where} is not valid JSON: {exc}") from None
    # iterative walk: the structure may be as deep as the parser allowed (about 1000 levels)
    stack = [(data, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_RECIPE_DEPTH:
            raise UserError(
                f"{where} is nested too deeply (more than {MAX_RECIPE_DEPTH} levels, at {path or 'the top'})"
            )
        if isinstance(node, dict):
            dups = getattr(node, "duplicates", ())
            if dups:
                raise UserError(
                    f"{where}: key {_brief(dups[0])} appears more than once in "
                    f"{path or 'the top level'}; JSON readers disagree on which one counts"
                )
            stack.extend((v, f"{path}.{k}" if path else str(k), depth + 1) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node))
    return data


def load_recipe(path) -> Recipe:
    """Read a recipe file; every failure is a UserError with one line."""
    import os
    import stat as _stat

    from dpstudio.errors import UserError

    try:
        st = os.stat(path)
        if _stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
        if not _stat.S_ISREG(st.st_mode):
            # a FIFO or a device would block or never end: refuse before opening it
            raise UserError(f"recipe {path} is not a regular file")
        if st.st_size > MAX_RECIPE_BYTES:
            raise UserError(f"recipe {path} is {st.st_size:,} bytes; a recipe is at most {MAX_RECIPE_BYTES >> 20} MiB")
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_RECIPE_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"recipe not found: {path}") from None
    except IsADirectoryError:
        raise UserError(f"recipe path is a directory: {path}") from None
    except PermissionError:
        raise UserError(f"cannot read recipe (permission denied): {path}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"recipe {path} is not valid JSON: {exc}") from None
    except OSError as exc:  # e.g. a name too long (ENAMETOOLONG), an I/O error
        raise UserError(f"cannot read recipe {path}: {exc.strerror or exc}") from None
    if len(text) > MAX_RECIPE_BYTES:
        raise UserError(f"recipe {path} is larger than {MAX_RECIPE_BYTES >> 20} MiB")
    data = parse_recipe_text(text, f"recipe {path}")
    recipe = recipe_from_json(data)
    # a relative input path is relative to the recipe's folder when it does not exist from here
    from pathlib import Path

    inp = Path(recipe.input.path)
    if not inp.is_absolute() and not inp.exists() and (Path(path).parent / inp).exists():
        recipe = replace(recipe, input=replace(recipe.input, path=str(Path(path).parent / inp)))
    return recipe
