"""Build a recipe from an inferred schema plus explicit overrides (``dpstudio recipe init``).

Inference suggests roles and types only, and each column records whether its type and role
were confirmed by the user (``--type``/``--role``, or ``--confirm-inferred`` for all) or
inferred from the private data: both change what is released, so inferred ones are reported.
Domains come *only* from what the user passes: typed bounds/categories (public), a DP
estimate over a public search range (``dp:LOW:HIGH`` or ``dp`` for categories, at a cost), or
``data`` — an explicit copy from the private data, which is recorded with an acknowledgement
and flagged by every report.
"""

from __future__ import annotations

import math
from dataclasses import replace

from dpstudio.errors import RecipeError, UserError
from dpstudio.recipe.model import (
    RELEASE_TYPES,
    ROLES,
    Budget,
    Column,
    Cost,
    Domain,
    InputSpec,
    Mechanism,
    Outputs,
    Params,
    Randomness,
    Recipe,
    ReleaseSpec,
)
from dpstudio.recipe.validate import (
    ACK_DOMAIN_FROM_DATA,
    DISCRETE_TYPES,
    NUMERIC_TYPES,
    closest_column,
    column_list,
    default_mechanism,
    listed_columns,
    perturbed_roles,
)

# share of the budget spent on each DP domain estimate when the user asks for one without a cost
DEFAULT_DP_DOMAIN_EPSILON = 0.1
DEFAULT_DISCOVERY_DELTA = 1e-7
# types a user may declare with --type (the ones inference can pick for a released column)
DECLARABLE_TYPES = ("integer", "float", "categorical", "boolean")


def parse_assignments(items, what: str) -> dict[str, str]:
    """Parse ``COL=VALUE`` strings; column names may contain '=' only if quoted by the shell."""
    out: dict[str, str] = {}
    for item in items or ():
        if "=" not in item:
            raise UserError(f"{what}: expected COLUMN=VALUE, got {item!r}")
        col, value = item.rsplit("=", 1) if what == "--bounds" and item.count("=") > 1 else item.split("=", 1)
        if not col:
            raise UserError(f"{what}: empty column name in {item!r}")
        out[col] = value
    return out


def _number(text) -> float:
    """A finite float from user text; ValueError otherwise ('inf', 'nan' and '1e400' included:
    a recipe is JSON, which has no infinities, and no mechanism takes them)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def _parse_bounds(col: str, spec: str) -> Domain:
    parts = spec.split(":")
    try:
        if parts[0] == "data" and len(parts) == 1:
            return Domain(kind="numeric", source="data")
        if parts[0] == "dp":
            if len(parts) not in (3, 4):
                raise ValueError
            cost = _number(parts[3]) if len(parts) == 4 else DEFAULT_DP_DOMAIN_EPSILON
            return Domain(
                kind="numeric",
                source="dp",
                search_low=_number(parts[1]),
                search_high=_number(parts[2]),
                cost=Cost(epsilon=cost),
            )
        if len(parts) != 2:
            raise ValueError
        return Domain(kind="numeric", source="public", low=_number(parts[0]), high=_number(parts[1]))
    except ValueError:
        raise UserError(
            f"--bounds {col}={spec!r}: expected LOW:HIGH, dp:LOW:HIGH[:EPS] or data, with finite numbers"
        ) from None


def _parse_categories(col: str, spec: str) -> Domain:
    if spec == "data":
        return Domain(kind="categorical", source="data")
    if spec == "dp" or spec.startswith("dp:"):
        rest = spec[3:]
        cost = DEFAULT_DP_DOMAIN_EPSILON
        candidates = None
        if rest:
            head, _, tail = rest.partition(":")
            try:
                cost = _number(head)
            except ValueError:
                raise UserError(f"--categories {col}={spec!r}: expected dp[:EPS[:A,B,C]] with a finite EPS") from None
            candidates = tuple(x for x in tail.split(",") if x) or None
        # without a public list, partition selection needs a small delta (kept far below 1/n)
        return Domain(
            kind="categorical",
            source="dp",
            candidates=candidates,
            cost=Cost(epsilon=cost, delta=0.0 if candidates else DEFAULT_DISCOVERY_DELTA),
        )
    cats = tuple(x for x in spec.split(","))
    if any(x == "" for x in cats):
        raise UserError(f"--categories {col}={spec!r}: empty category name")
    return Domain(kind="categorical", source="public", categories=cats)


def recipe_from_schema(
    loaded,
    schema,
    *,
    release: str = "record",
    epsilon: float = 1.0,
    delta: float | None = None,
    roles=None,
    bounds=None,
    categories=None,
    mechanisms=None,
    seed: int | None = None,
    out_format: str = "csv",
    rows: int | None = None,
    release_options: dict | None = None,
    weights=None,
    types=None,
    others=None,
) -> Recipe:
    """A recipe from the inferred schema; the columns named in ``types``/``roles`` record those
    facts as confirmed, every other type and role as inferred."""
    if release not in RELEASE_TYPES:
        raise UserError(f"--release {release!r}: choose one of {', '.join(RELEASE_TYPES)}")
    for flag, value in (("--epsilon", epsilon), ("--delta", delta)):
        if value is not None and not math.isfinite(float(value)):
            raise UserError(f"{flag}: expected a finite number, got {value!r}")
    roles = dict(roles or {})
    bounds = dict(bounds or {})
    categories = dict(categories or {})
    mechanisms = dict(mechanisms or {})
    weights = dict(weights or {})
    types = dict(types or {})
    others = dict(others or {})
    unknown_columns(
        schema,
        loaded.path,
        (
            ("--role", roles),
            ("--type", types),
            ("--bounds", bounds),
            ("--categories", categories),
            ("--mechanism", mechanisms),
            ("--weight", weights),
            ("--other", others),
        ),
    )
    for col, name in others.items():
        spec = categories.get(col)
        if spec is None or spec == "data" or spec == "dp" or spec.startswith("dp:"):
            raise UserError(
                f"--other {col}={name!r}: give the column a public category list with --categories "
                f"{col}=A,B,... (a list estimated with DP sends unlisted values to '(other)' itself)"
            )
        if not name.strip():
            raise UserError(f"--other {col}=NAME: empty category name")
    for col, role in roles.items():
        if role not in ROLES:
            raise UserError(f"--role {col}={role!r}: choose one of {', '.join(ROLES)}")
    for col, ctype in types.items():
        if ctype not in DECLARABLE_TYPES:
            raise UserError(f"--type {col}={ctype!r}: choose one of {', '.join(DECLARABLE_TYPES)}")
    domain_kind_mismatches(schema, types, bounds, categories)

    acks: list[str] = []
    perturbed = perturbed_roles(release)
    columns = []
    for cs in schema.columns:
        role = roles.get(cs.name, cs.suggested_role)
        if cs.name not in roles and release == "label" and role in ("sensitive", "embedding"):
            # a label release publishes every column but the label as it is: the role that says
            # so is proposed (inferred, listed for review), not a "sensitive" it would not honour
            role = "public"
        ctype = types.get(cs.name, cs.type)
        if cs.name not in roles and ctype in ("datetime", "text") and role not in ("identifier", "ignore"):
            role = "ignore"  # free text and dates have no mechanism yet; never release them raw
        domain = None
        if cs.name in bounds:
            domain = _parse_bounds(cs.name, bounds[cs.name])
        elif cs.name in categories:
            domain = _parse_categories(cs.name, categories[cs.name])
            other = others.get(cs.name)
            if other is not None and domain.categories is not None:
                # values outside the list are released as this category (added to the list)
                cats = domain.categories + ((other,) if other not in domain.categories else ())
                domain = replace(domain, categories=cats, other=other)
            if ctype in NUMERIC_TYPES and cs.name not in types:
                ctype = "categorical"  # integer codes given a category list are categories
        if domain is not None and release == "synthetic" and getattr(cs, "missing", 0) > 0:
            # proposed like the type (read from the data, listed for review): the column has
            # empty cells, so the synthesizer gives them a value of their own
            domain = replace(domain, missing=True, missing_inferred=True)
        if domain is not None and domain.source == "data" and ACK_DOMAIN_FROM_DATA not in acks:
            acks.append(ACK_DOMAIN_FROM_DATA)
        mech = None
        if role not in ("identifier", "ignore"):
            name = mechanisms.get(cs.name)
            if name is None and role in perturbed and release in ("record", "label", "semi-sensitive"):
                name = default_mechanism(ctype, role)
            if name is not None:
                params = {}
                if ":" in name:  # e.g. metric:pool.parquet
                    name, pool = name.split(":", 1)
                    params["pool"] = pool
                try:
                    weight = _number(weights.get(cs.name, 1.0))
                except ValueError:
                    raise UserError(f"--weight {cs.name}={weights[cs.name]!r}: expected a finite number") from None
                mech = Mechanism(name=name, weight=weight, params=Params.of(params))
        columns.append(
            Column(
                name=cs.name,
                type=ctype,
                role=role,
                domain=domain,
                mechanism=mech,
                group=cs.embedding_group if role == "embedding" else None,
                type_source=_source(cs.name in types),
                role_source=_source(cs.name in roles),
            )
        )

    if delta is None:
        needs_delta = release in ("synthetic", "model", "density") or any(
            c.mechanism is not None and c.mechanism.name == "gaussian" for c in columns
        )
        delta = min(1e-6, 0.1 / max(schema.rows, 1)) if needs_delta else 0.0
    return Recipe(
        input=InputSpec(
            path=str(loaded.path), format=loaded.format, options=Params.of(loaded.options), sha256=loaded.sha256
        ),
        release=ReleaseSpec(type=release, options=Params.of(release_options or {})),
        columns=tuple(columns),
        budget=Budget(epsilon=float(epsilon), delta=float(delta)),
        randomness=Randomness(seed=seed),
        outputs=Outputs(format=out_format, rows=rows),
        acknowledgements=tuple(acks),
    )


def empty_cell_notes(recipe: Recipe, schema) -> list[str]:
    """For a synthetic release, one line per kept column that has empty cells in the data: whether
    its domain says it may be empty (proposed from the data, like the type) or not (its empty
    cells then count as unknown values and the synthetic table has none there)."""
    if recipe.release.type != "synthetic":
        return []
    empty = {c.name: c.missing for c in schema.columns if getattr(c, "missing", 0) > 0}
    out = []
    for c in recipe.columns:
        if c.name not in empty or c.role in ("identifier", "ignore", "embedding") or c.domain is None:
            continue
        if c.domain.missing:
            out.append(
                f"{c.name}: may be empty (read from the data: it has empty cells); its empty cells are "
                "synthesised as a value of their own"
            )
        else:
            out.append(
                f"{c.name}: has empty cells but its domain says it cannot be empty; they are treated as "
                'unknown values (set "missing": true in its domain to synthesise them)'
            )
    return out


def unknown_columns(schema, path, flags) -> None:
    """Refuse every column name that is not in the table, all at once and in one line: each
    with the closest column, then the table's columns.  ``flags``: (flag, {column: value})."""
    known = [c.name for c in schema.columns]
    present = set(known)
    wrong = [
        f"{flag}: no column {col!r}" + (f" (did you mean {close!r}?)" if close is not None else "")
        for flag, mapping in flags
        for col in mapping
        if col not in present
        for close in (closest_column(col, known),)
    ]
    if wrong:
        raise UserError(f"{'; '.join(wrong)} in {path}; its columns are: {column_list(known)}")


def domain_kind_mismatches(schema, types, bounds, categories) -> None:
    """Refuse bounds for a categorical column and a category list for a numeric one (all at once).

    The type is the declared one (``--type``), else the one read from the data; an integer column
    read from the data that is given a category list becomes categorical (integer codes), but one
    declared numeric with ``--type`` does not, and a float column never does by itself."""
    inferred = {c.name: c.type for c in schema.columns}
    problems: list[str] = []
    for col, spec in bounds.items():
        if col in categories:
            problems.append(f"--bounds and --categories both name column {col!r}: give one domain")
            continue
        if col not in types and spec == "data":
            continue  # copying bounds from a column read as text says which rows hold text
        ctype = types.get(col, inferred.get(col))
        if ctype in DISCRETE_TYPES:
            read = "" if col in types else " (as read from the data)"
            problems.append(
                f"--bounds {col}=...: {col!r} is a {ctype} column{read}, and categorical columns take "
                f"--categories {col}=A,B,...; or declare it numeric with --type {col}=integer (or float)"
            )
    for col in categories:
        if col in bounds:
            continue
        declared = types.get(col)
        if declared in NUMERIC_TYPES or (declared is None and inferred.get(col) == "float"):
            how = f"declared {declared} with --type" if declared else "a float column"
            problems.append(
                f"--categories {col}=...: {col!r} is {how}, and numeric columns take --bounds "
                f"{col}=LOW:HIGH; or declare it categorical with --type {col}=categorical"
            )
    if problems:
        raise RecipeError(problems)


def _source(confirmed: bool) -> str:
    return "confirmed" if confirmed else "inferred"


def confirm_inferred_facts(recipe: Recipe) -> Recipe:
    """Every column's type, role and "may be empty" flag marked as the user's confirmed choice
    (values unchanged)."""

    def confirmed(c: Column) -> Column:
        d = c.domain
        if d is not None and d.missing_inferred:
            d = replace(d, missing_inferred=False)
        return replace(c, type_source="confirmed", role_source="confirmed", domain=d)

    return replace(recipe, columns=tuple(confirmed(c) for c in recipe.columns))


def _text_rows(s, offset: int = 0) -> str:
    """Which rows of ``s`` are not numbers, by count and first row number (never by content);
    ``offset``: rows of the table before ``s`` (a block)."""
    import numpy as np
    import pandas as pd

    bad = np.flatnonzero(pd.to_numeric(s, errors="coerce").isna().to_numpy() & s.notna().to_numpy())
    if bad.size == 0:
        return "its values are not numbers"
    return f"{bad.size} row(s) hold text (the first is data row {offset + int(bad[0]) + 1})"


def fill_domains_from_data(recipe: Recipe, frame) -> Recipe:
    """Resolve ``source == "data"`` domains by reading the private data (the flagged, explicit copy)."""
    import numpy as np

    cols = []
    for c in recipe.columns:
        d = c.domain
        if d is not None and d.source == "data" and not d.known and c.name in frame.columns:
            # (a column missing from the table is reported by validation)
            s = frame[c.name]
            if d.kind == "numeric":
                try:
                    vals = s.to_numpy(dtype=float, na_value=np.nan)
                except (TypeError, ValueError):  # numpy's message would quote the cell
                    raise UserError(
                        f"column {c.name!r}: bounds copied from the data need numbers, but "
                        f"{_text_rows(s)}; give public bounds"
                    ) from None
                low, high = float(np.nanmin(vals)), float(np.nanmax(vals))
                if low == high:
                    high = low + 1.0
                d = replace(d, low=low, high=high)
            else:
                cats = tuple(sorted(str(v) for v in s.dropna().unique()))
                d = replace(d, categories=cats)
            c = replace(c, domain=d)  # replace keeps every other field (type/role sources, ...)
        cols.append(c)
    return replace(recipe, columns=tuple(cols))


class DataFacts:
    """What a release reads from the private data before any noise, as a mergeable summary of
    blocks (a streamed or cluster release): the values of the domains copied from the data
    (:func:`fill_domains_from_data`) and the integer-declared columns' non-integer rows
    (:func:`dpstudio.recipe.validate.declared_type_problems`).  Picklable; memory O(1) per
    copied bounds, O(distinct values) per copied category list."""

    def __init__(self, recipe: Recipe) -> None:
        self.rows = 0
        self.low: dict[str, float] = {}
        self.high: dict[str, float] = {}
        self.values: dict[str, set[str]] = {}
        self.not_integer: dict[str, int] = {}
        self.outside_list: dict[str, int] = {}  # synthetic: values outside a typed list
        self.empty: dict[str, int] = {}  # synthetic: empty cells of a column not declared to have any
        copied = [c for c in recipe.columns if _copied(c)]
        self._numeric = [c.name for c in copied if c.domain is not None and c.domain.kind == "numeric"]
        self._categories = [c.name for c in copied if c.name not in self._numeric]
        self._integers = [
            c.name
            for c in recipe.columns
            if c.type == "integer" and c.role not in ("identifier", "ignore", "embedding")
        ]
        self._listed = listed_columns(recipe)
        self._recipe = recipe

    def columns(self, integer_typed: tuple[str, ...] = ()) -> list[str]:
        """The columns :meth:`add` reads: the copied domains', the integer-declared ones (except
        those the file already stores as integers, ``integer_typed``: nothing to check) and a
        synthetic release's columns with a typed category list."""
        names = self._numeric + self._categories + [c for c in self._integers if c not in integer_typed]
        return list(dict.fromkeys(names + self._listed))

    def add(self, block) -> None:
        import numpy as np

        from dpstudio.recipe.validate import category_counts, integer_violations

        for name in self._numeric:
            if name not in block.columns:
                continue
            s = block[name]
            try:
                vals = s.to_numpy(dtype=float, na_value=np.nan)
            except (TypeError, ValueError):  # numpy's message would quote the cell
                raise UserError(
                    f"column {name!r}: bounds copied from the data need numbers, but "
                    f"{_text_rows(s, offset=self.rows)}; give public bounds"
                ) from None
            vals = vals[~np.isnan(vals)]
            if vals.size:
                self.low[name] = min(self.low.get(name, np.inf), float(vals.min()))
                self.high[name] = max(self.high.get(name, -np.inf), float(vals.max()))
        for name in self._categories:
            if name in block.columns:
                self.values.setdefault(name, set()).update(str(v) for v in block[name].dropna().unique())
        for name, n in integer_violations(self._recipe, block).items():
            self.not_integer[name] = self.not_integer.get(name, 0) + n
        outside, empty = category_counts(self._recipe, block)
        _add_counts(self.outside_list, outside)
        _add_counts(self.empty, empty)
        self.rows += len(block)

    def merge(self, other: DataFacts) -> DataFacts:
        """This summary and ``other``'s (rows of another block or partition) together."""
        for name, v in other.low.items():
            self.low[name] = min(self.low.get(name, v), v)
        for name, v in other.high.items():
            self.high[name] = max(self.high.get(name, v), v)
        for name, vals in other.values.items():
            self.values.setdefault(name, set()).update(vals)
        _add_counts(self.not_integer, other.not_integer)
        _add_counts(self.outside_list, other.outside_list)
        _add_counts(self.empty, other.empty)
        self.rows += other.rows
        return self

    def fill(self, recipe: Recipe) -> Recipe:
        """``recipe`` with its copied domains filled in, as :func:`fill_domains_from_data` does."""
        cols = []
        for c in recipe.columns:
            d = c.domain
            if _copied(c) and d is not None:
                if d.kind == "numeric":
                    low = self.low.get(c.name, float("nan"))
                    high = self.high.get(c.name, float("nan"))
                    d = replace(d, low=low, high=high if high != low else low + 1.0)
                else:
                    d = replace(d, categories=tuple(sorted(self.values.get(c.name, set()))))
                c = replace(c, domain=d)
            cols.append(c)
        return replace(recipe, columns=tuple(cols))

    def type_problems(self) -> list:
        from dpstudio.recipe.validate import category_problems, integer_problems

        return integer_problems(self.not_integer) + category_problems(self.outside_list, self.empty)


def _add_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for name, n in counts.items():
        into[name] = into.get(name, 0) + n


def _copied(c) -> bool:
    d = c.domain
    return d is not None and d.source == "data" and not d.known


__all__ = [
    "recipe_from_schema",
    "parse_assignments",
    "fill_domains_from_data",
    "DataFacts",
    "empty_cell_notes",
    "confirm_inferred_facts",
    "DECLARABLE_TYPES",
    "NUMERIC_TYPES",
]
