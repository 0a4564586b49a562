"""Semantic validation of a recipe: returns *all* problems, each naming the column and quoting
the bad setting (never a value read from the data), so a user fixes everything in one pass."""

from __future__ import annotations

import math

from dpstudio.recipe.model import Recipe

NUMERIC_TYPES = ("integer", "float")
DISCRETE_TYPES = ("categorical", "boolean")
NUMERIC_MECHANISMS = ("laplace", "gaussian")

ACK_DATASET_POOL = "embedding-pool-is-dataset"
ACK_DOMAIN_FROM_DATA = "domain-copied-from-data"

#: the wizard pages a problem can send the user to (the GUI pages' ``key``)
PAGES = ("data", "columns", "release", "budget")
#: where a problem lies: a part of the recipe, the table of columns, or one column ("column:<name>")
FIELDS = ("budget", "input", "release", "outputs", "columns", "targets")


class Problem(str):
    """One problem with a recipe: its English text (it *is* that string, so messages compare,
    join and dump to JSON as before) plus where it lies and who can fix it.

    ``field``: "budget", "input", "release", "outputs", "columns" (the table of columns) or
    "column:<name>" (one column).  ``page``: the wizard page whose controls fix it ("data",
    "columns", "release", "budget").  Both are chosen where the problem is found; the GUI routes
    by them, never by the wording."""

    field: str
    page: str

    def __new__(cls, text: str, field: str, page: str) -> Problem:
        if page not in PAGES:
            raise ValueError(f"unknown page {page!r} (one of {', '.join(PAGES)})")
        if field not in FIELDS and not field.startswith("column:"):  # a recipe may name a column ""
            raise ValueError(f"unknown field {field!r} (one of {', '.join(FIELDS)} or 'column:<name>')")
        self = super().__new__(cls, text)
        self.field = field
        self.page = page
        return self

    def __reduce__(self):
        # pickling/copying keeps the record (a str subclass would otherwise lose field and page)
        return (type(self), (str(self), self.field, self.page))


def _col(name: str) -> str:
    """The field of a problem about column ``name``."""
    return f"column:{name}"


def closest_column(name: str, columns) -> str | None:
    """The column ``name`` was probably meant to be: the same name in another case ('AGE' ->
    'Age'), else the most similar one (difflib), else None."""
    import difflib

    columns = [str(c) for c in columns]
    folded = name.casefold()
    for c in columns:
        if c.casefold() == folded:
            return c
    by_folded: dict[str, str] = {}
    for c in columns:
        by_folded.setdefault(c.casefold(), c)
    match = difflib.get_close_matches(folded, list(by_folded), n=1, cutoff=0.6)
    return by_folded[match[0]] if match else None


def column_list(columns, limit: int = 30) -> str:
    """The columns of a table for a message: the first ``limit`` names, then how many more."""
    names = [str(c) for c in columns]
    more = len(names) - limit
    return ", ".join(repr(n) for n in names[:limit]) + (f", ... ({more} more)" if more > 0 else "")


def did_you_mean(name: str, columns) -> str:
    """'; did you mean 'Age'?' (or nothing when no column is close)."""
    close = closest_column(name, columns)
    return f"; did you mean {close!r}?" if close is not None else ""


def perturbed_roles(release_type: str) -> tuple[str, ...]:
    """Roles whose columns a release type perturbs (the others pass through or are dropped)."""
    return {
        "record": ("sensitive", "label", "embedding"),
        "label": ("label",),
        "semi-sensitive": ("sensitive", "label"),
        "synthetic": ("public", "sensitive", "label"),
        "model": ("sensitive", "public", "label"),
        "density": ("sensitive",),
    }[release_type]


DROPPED_ROLES = ("identifier", "ignore")


def inferred_facts(recipe: Recipe) -> list[dict]:
    """Column facts ``recipe init`` read from the private data and nobody confirmed.

    Both shape the release: the type fixes the output grid (integer or float) and the role
    decides whether a column is released at all (an all-distinct column is suggested as an
    identifier and dropped; one duplicate keeps it).  Roles are listed for every column; types
    only for columns that are released, since a dropped column's type changes nothing."""
    out = []
    for c in recipe.columns:
        facts: dict[str, object] = {}
        if c.type_source != "confirmed" and c.role not in DROPPED_ROLES:
            facts["type"] = c.type
        if c.role_source != "confirmed":
            facts["role"] = c.role
        if c.domain is not None and c.domain.missing_inferred and c.role not in DROPPED_ROLES:
            facts["may be empty"] = True  # read from the file's empty cells (synthetic releases)
        if facts:
            out.append({"column": c.name, **facts})
    return out


def declared_type_problems(recipe: Recipe, frame) -> list[Problem]:
    """Rows the declared types cannot hold, counted (never quoted) per column.

    The release's output form follows the recipe only: an integer column is released on an
    integer grid.  Data that breaks the declaration is refused rather than rounded silently,
    so the file never decides the grid."""
    outside, empty = category_counts(recipe, frame)
    return (
        _counted_problems("text", text_in_numbers(recipe, frame))
        + integer_problems(integer_violations(recipe, frame))
        + category_problems(outside, empty)
    )


def text_in_numbers(recipe: Recipe, frame) -> dict[str, int]:
    """Per number-declared column that the release reads as numbers (perturbed, or fitted), the
    rows holding text (the release would stop there after its reservation; counted, never
    quoted).  A column the file already stores as numbers has none."""
    import numpy as np
    import pandas as pd

    read = perturbed_roles(recipe.release.type)
    out: dict[str, int] = {}
    for c in recipe.columns:
        if c.type not in NUMERIC_TYPES or c.role not in read or c.role == "embedding" or c.name not in frame.columns:
            continue
        s = frame[c.name]
        if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            continue
        x = pd.to_numeric(s, errors="coerce")
        n = int(np.count_nonzero(x.isna().to_numpy() & s.notna().to_numpy()))
        if n:
            out[c.name] = n
    return out


def integer_violations(recipe: Recipe, frame) -> dict[str, int]:
    """Per integer-declared column of ``frame`` (a table or one block of it), the number of rows
    holding a non-integer number (a sum over blocks is the table's count)."""
    import numpy as np
    import pandas as pd

    out: dict[str, int] = {}
    for c in recipe.columns:
        if c.type != "integer" or c.role in DROPPED_ROLES + ("embedding",) or c.name not in frame.columns:
            continue
        s = frame[c.name]
        if pd.api.types.is_integer_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            continue
        try:
            x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            continue  # not numbers at all: the release's own reading of the column says so
        n = int(np.count_nonzero(np.isfinite(x) & (x != np.round(x))))
        if n:
            out[c.name] = n
    return out


def listed_columns(recipe: Recipe) -> list[str]:
    """The columns a synthetic release keeps with a typed (or copied) category list and no 'other'
    category: a value outside the list, or an empty cell of a column not declared to have any,
    has no listed category there (:func:`category_counts`)."""
    if recipe.release.type != "synthetic":
        return []
    return [
        c.name
        for c in recipe.columns
        if c.role not in DROPPED_ROLES + ("embedding",)
        and c.domain is not None
        and c.domain.kind == "categorical"
        and c.domain.categories is not None
        and c.domain.source != "dp"  # a DP list keeps what it finds and sends the rest to its "(other)"
        and c.domain.other is None
    ]


def category_counts(recipe: Recipe, frame) -> tuple[dict[str, int], dict[str, int]]:
    """``(outside, empty)`` per :func:`listed_columns` column of ``frame`` (a table or one block of
    it; a sum over blocks is the table's count): the rows whose value is not empty and not in the
    list, and the empty cells of a column not declared to have any (``missing``).  The
    synthesizers count both in a hidden "unknown" cell that no listed category holds
    (dpstudio.engine.synth.encoding): they would be lost, or released as a rare listed category
    when compression merges that cell with it -- a misspelt category would lose a whole class
    without a word.  Matched exactly as the synthesizer's encoder matches them."""
    import numpy as np

    from dpstudio.engine.synth.encoding import _codes, is_missing

    outside: dict[str, int] = {}
    empty: dict[str, int] = {}
    for name in listed_columns(recipe):
        if name not in frame.columns:
            continue
        d = recipe.column(name).domain
        assert d is not None and d.categories is not None, name
        s = frame[name]
        blank = is_missing(s)
        n = int(np.count_nonzero((_codes(s, d.categories) < 0) & ~blank))
        if n:
            outside[name] = n
        m = 0 if d.missing else int(np.count_nonzero(blank))
        if m:
            empty[name] = m
    return outside, empty


#: the problems of rows the declared schema cannot hold, counted per column (never quoted)
COUNTED_PROBLEMS = {
    # the type is chosen on the columns page
    "integer": (
        "column {name!r}: declared integer, but {n} row(s) hold non-integer numbers; "
        "declare it float (--type {name}=float) or fix the data"
    ),
    "text": (
        "column {name!r}: declared a number, but {n} row(s) hold text; declare it categorical "
        "(--type {name}=categorical), leave it out (--role {name}=ignore) or fix the data"
    ),
    "category": (
        "column {name!r}: {n} row(s) hold a value that is not in the category list, which a "
        "synthetic table cannot hold (it would lose them or release them as another category); add "
        "the missing categories (a typo?), or send such values to a category of their own "
        "(--other {name}=NAME)"
    ),
    "empty": (
        "column {name!r}: {n} row(s) are empty, but the column is not declared to have empty cells, "
        "and a synthetic table cannot hold them; declare that it may be empty (its domain's 'may be "
        'empty\' box; "missing": true in the recipe, which recipe init sets when it sees empty cells), '
        "or send them to a category of their own (--other {name}=NAME)"
    ),
}


def _counted_problems(kind: str, counts: dict[str, int]) -> list[Problem]:
    text = COUNTED_PROBLEMS[kind]
    return [Problem(text.format(name=k, n=n), field=_col(k), page="columns") for k, n in counts.items() if n]


def category_problems(counts: dict[str, int], empty: dict[str, int] | None = None) -> list[Problem]:
    """The problems of :func:`category_counts`' counts (values outside the list, empty cells)."""
    return _counted_problems("category", counts) + _counted_problems("empty", empty or {})


def integer_problems(counts: dict[str, int]) -> list[Problem]:
    """The problems of :func:`integer_violations`' counts."""
    return _counted_problems("integer", counts)


def default_mechanism(column_type: str, role: str) -> str:
    if role == "embedding" or column_type == "vector":
        return "metric"
    if column_type in NUMERIC_TYPES:
        return "laplace"
    return "rr"


def _domain_problems(col, where: str) -> list[Problem]:
    """The column's domain (and its DP estimate's cost): all edited on the columns page."""
    p: list[Problem] = []
    field = _col(col.name)

    def problem(text: str) -> Problem:
        return Problem(text, field=field, page="columns")

    d = col.domain
    numeric = col.type in NUMERIC_TYPES
    if d is None:
        kind = "bounds (--bounds COL=LOW:HIGH)" if numeric else "a category list (--categories COL=A,B,...)"
        return [problem(f"{where}: needs a public domain: {kind}, a DP estimate, or an explicit copy from the data")]
    if numeric and d.kind != "numeric":
        p.append(problem(f"{where}: numeric column has a {d.kind!r} domain; give bounds"))
    if not numeric and col.type in DISCRETE_TYPES and d.kind != "categorical":
        p.append(problem(f"{where}: categorical column has a {d.kind!r} domain; give a category list"))
    if d.source == "dp":
        if d.cost is None or not (d.cost.epsilon > 0):
            p.append(
                problem(
                    f"{where}: a DP-estimated domain needs a positive cost epsilon, got "
                    f"{None if d.cost is None else d.cost.epsilon!r}"
                )
            )
        if d.kind == "numeric" and not d.known:
            if d.search_low is None or d.search_high is None or not d.search_low < d.search_high:
                p.append(
                    problem(
                        f"{where}: DP bounds need a public search range search_low < search_high, got "
                        f"[{d.search_low!r}, {d.search_high!r}]"
                    )
                )
        if (
            d.kind == "categorical"
            and not d.known
            and not d.candidates
            and d.cost is not None
            and not (0 < d.cost.delta)
        ):
            p.append(
                problem(
                    f"{where}: discovering categories without a public candidate list needs a cost "
                    f"delta in (0, {MAX_DISCOVERY_DELTA:g}], got {d.cost.delta!r}"
                )
            )
        if not d.known:
            return p
    if d.source == "data" and not d.known:
        # an acknowledged copy still to be made: the release (and the wizard's plan) fill it in
        # from the loaded table (recipe.build.fill_domains_from_data) before compiling
        return p
    # bounds copied from the data are its minimum and maximum: private, never quoted
    got = "" if d.source == "data" else f", got [{d.low!r}, {d.high!r}]"
    if d.kind == "numeric":
        if d.low is None or d.high is None:
            p.append(problem(f"{where}: bounds need both low and high{got}"))
        elif not d.low < d.high:
            p.append(problem(f"{where}: bounds must satisfy low < high{got}"))
    else:
        # a list copied from the data is private (and can be megabytes long): named by position
        # and count only; a declared list is quoted, a few entries at most
        cats = d.categories
        private = d.source == "data"
        if not cats:
            p.append(problem(f"{where}: category list is empty"))
        else:
            if len(set(cats)) != len(cats):
                first: dict = {}
                repeats = [i for i, c in enumerate(cats) if first.setdefault(c, i) != i]
                if private:
                    shown = f"{len(repeats)} entr(ies), at position(s) " + _few([i + 1 for i in repeats])
                else:
                    shown = _few(sorted({cats[i] for i in repeats}), quote=True)
                p.append(problem(f"{where}: category list repeats {shown}"))
            if len(set(cats)) < 2:
                got = str(len(set(cats))) if private else _few(list(cats), quote=True)
                p.append(problem(f"{where}: a category list needs at least 2 categories, got {got}"))
            if d.other is not None and d.other not in cats:
                named = "" if private else f" {d.other!r}"
                p.append(problem(f"{where}: 'other' category{named} is not in the category list"))
    return p


def _few(items: list, quote: bool = False, limit: int = 5) -> str:
    """The first ``limit`` items of a list for a message, then '...'."""
    if quote:
        return repr(items[:limit])[:-1] + (", ...]" if len(items) > limit else "]")
    return ", ".join(map(str, items[:limit])) + (", ..." if len(items) > limit else "")


# ---- limits: where the exact samplers stay exact, fast and bounded in memory ------------------
# Measured on the samplers themselves (certified-inversion discrete Laplace, CKS discrete
# Gaussian, randomized response, exponential mechanism); see tests/test_input_limits.py.
#: smallest epsilon of one perturbed unit or DP estimate.  Laplace scale t = D/eps grid steps with
#: D <= 2**11: t <= 2e9, where 1M draws take ~2.5 s (t = 1e10: ~12 s; t = 1e11: ~100 s, and the
#: int64 draws overflow near t = 2e17, i.e. eps ~ 1e-14).  Partition selection's threshold
#: (2/eps) log(1/(2 delta)) stays below 2**40.
MIN_UNIT_EPSILON = 1e-6
MAX_EPSILON = 50.0
#: a positive delta below this means nothing (far below 2**-128) and pushes floats towards subnormals
MIN_DELTA = 1e-50
#: DP category discovery releases a category held by one person with probability delta: that is
#: a disclosure, so delta must be small in absolute terms and (with the data) below 1/n
MAX_DISCOVERY_DELTA = 1e-3
#: relative weights of perturbed columns; their ratio is further limited by MIN_UNIT_EPSILON
MIN_WEIGHT, MAX_WEIGHT = 1e-6, 1e6
#: |bound| / (high - low): keeps grid indices (<= 2**51) and added noise exact in float64
MAX_BOUND_RATIO = 2.0**40
#: the grid step is ~diameter / 2**10 and must stay a normal float
MIN_DIAMETER = 1e-290
#: the exact discrete Gaussian's calibration and expected error sum its pmf over ~30 sigma:
#: memory and time grow with sigma (1e5 grid steps: ~300 MB, ~2 s; 7e5: 1.8 GB, 24 s)
MAX_GAUSSIAN_SIGMA_STEPS = 1e5
#: randomized response draws its "other" category from 2**32 - 1 equally likely values
MAX_CATEGORIES = 65536
#: synthetic rows generated in memory at once
MAX_SYNTHETIC_ROWS = 10_000_000
#: synthetic data splits its budget over many noisy measurements; below ~1e-5 a share's Gaussian
#: calibration underflows (MST on 4 columns failed at 1e-5, ran at 1e-4): a 100x margin
MIN_SYNTHETIC_EPSILON = 1e-2


def _range_problems(low: float, high: float, where: str, what: str, private: bool, field: str) -> list[Problem]:
    """Finite, non-degenerate ranges whose grid arithmetic is exact (never quotes private bounds).

    A column's bounds or search range: edited in its domain, on the columns page."""
    got = "" if private else f" [{low!r}, {high!r}]"
    diam = high - low
    if not math.isfinite(diam):
        return [Problem(f"{where}: {what}{got}: high - low overflows; narrow the range", field=field, page="columns")]
    if low < high and diam < MIN_DIAMETER:
        return [
            Problem(
                f"{where}: {what}{got}: high - low is below {MIN_DIAMETER:g}; widen the range",
                field=field,
                page="columns",
            )
        ]
    if low < high and max(abs(low), abs(high)) > MAX_BOUND_RATIO * diam:
        return [
            Problem(
                f"{where}: {what}{got}: too far from zero for the width (|bound| > 2^40 x "
                f"(high - low)); shift the column (e.g. subtract a public offset) or widen the range",
                field=field,
                page="columns",
            )
        ]
    return []


def _delta_problem(delta: float, where: str, field: str, page: str) -> list[Problem]:
    if 0 < delta < MIN_DELTA:  # a negative delta is refused by the range check, once
        return [
            Problem(
                f"{where}: delta {delta!r} is below {MIN_DELTA:g}; use 0 or at least {MIN_DELTA:g}",
                field=field,
                page=page,
            )
        ]
    return []


def limit_problems(recipe: Recipe, rows: int | None = None) -> list[Problem]:
    """Parameters outside the range where dpstudio's exact samplers are exact, fast and bounded.

    Budgets, weights, deltas, bounds and DP-estimate costs (each unit's share of epsilon and each
    Gaussian unit's noise are the plan's: :func:`dpstudio.plan.compile.plan_problems`).
    ``rows`` (n, when the data is known) also bounds the discovery delta below 1/n."""
    p: list[Problem] = []
    b = recipe.budget
    if 0 < b.epsilon < MIN_UNIT_EPSILON:
        p.append(
            Problem(
                f"budget: epsilon {b.epsilon!r} is below {MIN_UNIT_EPSILON:g}; noise that large "
                f"carries no information and the exact samplers cannot draw it in bounded time",
                field="budget",
                page="budget",
            )
        )
    if recipe.release.type == "synthetic" and MIN_UNIT_EPSILON <= b.epsilon < MIN_SYNTHETIC_EPSILON:
        p.append(
            Problem(
                f"budget: synthetic data needs epsilon >= {MIN_SYNTHETIC_EPSILON:g}, got {b.epsilon!r} "
                f"(its budget is split over many measurements)",
                field="budget",
                page="budget",
            )
        )
    p += _delta_problem(b.delta, "budget", field="budget", page="budget")
    if recipe.outputs.rows is not None and recipe.outputs.rows > MAX_SYNTHETIC_ROWS:
        # how many synthetic rows the release generates: a release setting (no page edits it yet)
        p.append(
            Problem(
                f"outputs.rows: at most {MAX_SYNTHETIC_ROWS:,} rows can be generated, got {recipe.outputs.rows:,}",
                field="outputs",
                page="release",
            )
        )
    for c in recipe.columns:
        where, field = f"column {c.name!r}", _col(c.name)
        if c.mechanism is not None and c.role not in DROPPED_ROLES:
            w = c.mechanism.weight
            if w > 0 and not (MIN_WEIGHT <= w <= MAX_WEIGHT):
                # weights ("budget share") are set beside the mechanisms
                p.append(
                    Problem(
                        f"{where}: mechanism weight {w!r} is outside [{MIN_WEIGHT:g}, {MAX_WEIGHT:g}]",
                        field=field,
                        page="release",
                    )
                )
        d = c.domain
        if d is None or c.role in DROPPED_ROLES:
            continue
        # the rest is the column's domain and its DP estimate's cost: the columns page's domain editor
        if d.kind == "numeric" and d.low is not None and d.high is not None:
            p += _range_problems(d.low, d.high, where, "bounds", d.source == "data", field)
        if d.source == "dp" and d.search_low is not None and d.search_high is not None:
            p += _range_problems(d.search_low, d.search_high, where, "search range", False, field)
        if d.categories is not None and len(d.categories) > MAX_CATEGORIES:
            p.append(
                Problem(
                    f"{where}: {len(d.categories):,} categories; randomized response takes at most {MAX_CATEGORIES:,}",
                    field=field,
                    page="columns",
                )
            )
        if d.source == "dp" and d.cost is not None:
            ce, cd = d.cost.epsilon, d.cost.delta
            if 0 < ce < MIN_UNIT_EPSILON or ce > MAX_EPSILON:
                p.append(
                    Problem(
                        f"{where}: the DP estimate's cost epsilon {ce!r} is outside "
                        f"[{MIN_UNIT_EPSILON:g}, {MAX_EPSILON:g}]",
                        field=field,
                        page="columns",
                    )
                )
            if not 0 <= cd <= MAX_DISCOVERY_DELTA:
                p.append(
                    Problem(
                        f"{where}: the DP estimate's cost delta {cd!r} is outside [0, {MAX_DISCOVERY_DELTA:g}]",
                        field=field,
                        page="columns",
                    )
                )
            elif cd != 0 and cd < MIN_DELTA:
                p += _delta_problem(cd, f"{where} DP estimate cost", field=field, page="columns")
            elif rows and cd > 0 and cd >= 1.0 / rows:
                p.append(
                    Problem(
                        f"{where}: the DP estimate's cost delta {cd!r} is not below 1/n = "
                        f"{1.0 / rows:.3g}; a category held by one person would be published with "
                        f"that probability",
                        field=field,
                        page="columns",
                    )
                )
    return p


def validate(recipe: Recipe, schema=None) -> list[Problem]:
    """Every problem with ``recipe`` (and, given a TableSchema, its fit to the data).

    Each is a :class:`Problem`: its page is the wizard page whose controls fix it - "budget"
    (epsilon, delta), "columns" (roles, types, domains and their DP estimates), "release"
    (release type, mechanisms, weights, embedding pools), "data" (the input file)."""
    p: list[Problem] = []
    b = recipe.budget
    if not (b.epsilon > 0):
        p.append(Problem(f"budget: epsilon must be > 0, got {b.epsilon!r}", field="budget", page="budget"))
    elif b.epsilon > MAX_EPSILON:
        p.append(
            Problem(
                f"budget: epsilon {b.epsilon!r} is above 50 - such a release protects nobody; lower it",
                field="budget",
                page="budget",
            )
        )
    if not (0 <= b.delta < 1):
        p.append(Problem(f"budget: delta must lie in [0, 1), got {b.delta!r}", field="budget", page="budget"))
    if not recipe.input.path:
        p.append(Problem("input.path: empty", field="input", page="data"))

    # which columns the recipe lists: no page edits that list (the fix is opening the matching
    # table or recipe); shown on the columns page, which lists them, since the data page shows
    # no problems and never blocks
    names = [c.name for c in recipe.columns]
    seen: set[str] = set()
    for n in names:
        if n in seen:
            p.append(Problem(f"column {n!r}: listed more than once", field=_col(n), page="columns"))
        seen.add(n)
    if not recipe.columns:
        p.append(Problem("columns: the recipe lists no columns", field="columns", page="columns"))

    rtype = recipe.release.type
    labels = recipe.columns_with_role("label")
    if len(labels) > 1:
        p.append(
            Problem(
                f"columns: at most one label column, got {[c.name for c in labels]!r}", field="columns", page="columns"
            )
        )
    if rtype in ("label", "semi-sensitive", "model") and not labels:
        # no one column to point at: shown where the release type was chosen (the role itself is
        # set on the columns page, one step back)
        p.append(Problem(f"release {rtype!r}: needs a column with role 'label'", field="release", page="release"))
    for lab in labels:
        if lab.type not in DISCRETE_TYPES + ("integer",):
            p.append(
                Problem(
                    f"column {lab.name!r}: a label must be categorical/boolean, got type {lab.type!r}",
                    field=_col(lab.name),
                    page="columns",
                )
            )

    perturbed = perturbed_roles(rtype)
    gaussian_used = False
    for c in recipe.columns:
        where, field = f"column {c.name!r}", _col(c.name)
        if c.role in ("identifier", "ignore"):
            if c.mechanism is not None and c.mechanism.name != "none":
                p.append(
                    Problem(
                        f"{where}: role {c.role!r} is dropped, but mechanism {c.mechanism.name!r} was given",
                        field=field,
                        page="release",
                    )
                )
            continue
        if c.type in ("datetime", "text") and c.role in perturbed and rtype not in ("label",):
            # the fix the message asks for is the column's role
            p.append(
                Problem(
                    f"{where}: type {c.type!r} cannot be released by {rtype!r}; set its role to "
                    f"'ignore' or 'identifier'",
                    field=field,
                    page="columns",
                )
            )
            continue
        if c.mechanism is not None and not (c.mechanism.weight > 0):
            p.append(
                Problem(
                    f"{where}: mechanism weight must be > 0, got {c.mechanism.weight!r}", field=field, page="release"
                )
            )
        if c.role not in perturbed:
            if rtype in ("label", "semi-sensitive") and c.role in ("sensitive", "embedding"):
                # the role asks for protection that this release type does not give: it would
                # publish the column as it is (a public choice must be made, not implied)
                p.append(
                    Problem(
                        f"{where}: marked {c.role}, but a {rtype} release perturbs only "
                        f"{' and '.join(perturbed)} columns and would publish it unchanged; mark it "
                        "'public' to publish it as it is, or 'ignore' to leave it out, or choose a "
                        "release that perturbs it (record)",
                        field=field,
                        page="columns",
                    )
                )
                continue
            if (
                rtype in ("record", "label", "semi-sensitive")
                and c.mechanism is not None
                and c.mechanism.name != "none"
            ):
                p.append(
                    Problem(
                        f"{where}: role {c.role!r} is released unchanged by {rtype!r}, "
                        f"but mechanism {c.mechanism.name!r} was given",
                        field=field,
                        page="release",
                    )
                )
            continue
        if c.role == "embedding":
            # mechanisms and embedding pools are chosen on the release page
            if rtype != "record":
                p.append(
                    Problem(
                        f"{where}: embeddings are released only by 'record' releases, not {rtype!r}",
                        field=field,
                        page="release",
                    )
                )
                continue
            mech = c.mechanism.name if c.mechanism else "metric"
            if mech != "metric":
                p.append(
                    Problem(
                        f"{where}: embedding columns use mechanism 'metric', got {mech!r}", field=field, page="release"
                    )
                )
            pool = c.mechanism.params.get("pool") if c.mechanism else None
            if pool is None:
                p.append(
                    Problem(
                        f"{where}: metric selection needs a public pool of vectors "
                        f"(mechanism param 'pool': a file path, or 'dataset' with acknowledgement)",
                        field=field,
                        page="release",
                    )
                )
            elif pool == "dataset" and ACK_DATASET_POOL not in recipe.acknowledgements:
                p.append(
                    Problem(
                        f"{where}: drawing replacements from the dataset itself releases other people's "
                        f"real vectors; add acknowledgement {ACK_DATASET_POOL!r} to allow it",
                        field=field,
                        page="release",
                    )
                )
            continue
        p.extend(_domain_problems(c, where))
        if c.domain is not None and c.domain.source == "data" and ACK_DOMAIN_FROM_DATA not in recipe.acknowledgements:
            # the domain editor asks for this acknowledgement
            p.append(
                Problem(
                    f"{where}: domain copied from the private data needs acknowledgement "
                    f"{ACK_DOMAIN_FROM_DATA!r} (the guarantee does not cover it)",
                    field=field,
                    page="columns",
                )
            )
        if rtype in ("record", "label", "semi-sensitive"):
            mech = c.mechanism.name if c.mechanism else default_mechanism(c.type, c.role)
            if c.type in NUMERIC_TYPES and c.role != "label":
                if mech not in NUMERIC_MECHANISMS:
                    p.append(
                        Problem(
                            f"{where}: numeric columns use 'laplace' or 'gaussian', got {mech!r}",
                            field=field,
                            page="release",
                        )
                    )
                gaussian_used |= mech == "gaussian"
            elif mech != "rr":
                p.append(
                    Problem(
                        f"{where}: categorical columns and labels use 'rr', got {mech!r}", field=field, page="release"
                    )
                )
        # a column type the release cannot take: fixed by the column's type or role
        if rtype == "density" and c.type not in NUMERIC_TYPES:
            p.append(
                Problem(
                    f"{where}: a density release takes numeric columns, got type {c.type!r}",
                    field=field,
                    page="columns",
                )
            )
        if rtype == "model" and c.role != "label" and c.type not in NUMERIC_TYPES + ("boolean",):
            p.append(
                Problem(
                    f"{where}: the DP model takes numeric features, got type {c.type!r}", field=field, page="columns"
                )
            )

    if gaussian_used and b.delta == 0:  # (a negative delta: the range check says so)
        p.append(Problem("budget: the Gaussian mechanism needs delta > 0, got 0", field="budget", page="budget"))
    if rtype == "density":
        n_sensitive = len(recipe.columns_with_role("sensitive"))
        if n_sensitive not in (1, 2):
            p.append(
                Problem(
                    f"release 'density': mark 1 or 2 numeric columns 'sensitive', got {n_sensitive}",
                    field="release",
                    page="release",
                )
            )
        if b.delta == 0:
            p.append(
                Problem(
                    "budget: the density release adds Gaussian-process noise and needs delta > 0, got 0",
                    field="budget",
                    page="budget",
                )
            )
    if rtype in ("synthetic", "model") and b.delta == 0:
        p.append(Problem(f"budget: the {rtype!r} release needs delta > 0, got 0", field="budget", page="budget"))

    p += limit_problems(recipe, getattr(schema, "rows", None) if schema is not None else None)
    p += target_problems(recipe)

    if schema is not None:
        # the recipe does not fit the table: on the columns page, like the list of columns above
        data_cols = {c.name: c for c in schema.columns}
        for c in recipe.columns:
            if c.name not in data_cols:
                # every wrong name is its own problem (all reported at once), each with the
                # closest column of the data and the list of its columns
                p.append(
                    Problem(
                        f"column {c.name!r}: not found in the data (columns: "
                        f"{', '.join(list(data_cols)[:12])}{', ...' if len(data_cols) > 12 else ''})"
                        f"{did_you_mean(c.name, data_cols)}",
                        field=_col(c.name),
                        page="columns",
                    )
                )
        listed = set(names)
        for n in data_cols:
            if n not in listed:
                p.append(
                    Problem(
                        f"column {n!r}: in the data but not in the recipe; give it a role ('ignore' drops it)",
                        field=_col(n),
                        page="columns",
                    )
                )
        rows = getattr(schema, "rows", None)
        if rows and b.delta > 0 and b.delta >= 1.0 / rows:
            p.append(
                Problem(
                    f"budget: delta {b.delta!r} is not below 1/n = {1.0 / rows:.3g}; a release could "
                    f"then expose a whole record - use delta << 1/n",
                    field="budget",
                    page="budget",
                )
            )
    return p


def _copied_target_problem(where: str, names: list[str]) -> Problem:
    """A target on a domain copied from the data: its prediction (and the budget solved for it)
    would be a function of the raw data, printed in the recipe and the external report."""
    return Problem(
        f"{where}: the domain of {', '.join(repr(n) for n in names[:5])} is copied from the data, so the "
        "budget solved for this target would reveal it; give a public domain or a DP estimate",
        field="targets",
        page="budget",
    )


#: which release types each target kind applies to (docs/targets.md)
TARGET_RELEASES = {
    "within": ("record", "label", "semi-sensitive"),
    "keep": ("record", "label", "semi-sensitive"),
    "marginals": ("synthetic",),
    "label-attack": ("label", "semi-sensitive"),
    "reid": ("record",),
}


def target_problems(recipe: Recipe) -> list[Problem]:
    """The budget's targets: each names a kind that applies to the release type, a released
    column of the right mechanism, and values in range (the solver checks the rest against the
    compiled plan)."""
    p: list[Problem] = []
    rtype = recipe.release.type
    by_name = {c.name: c for c in recipe.columns}
    seen: set[str] = set()
    for t in recipe.budget.targets:
        where = f"targets: {t.spec}"
        if rtype not in TARGET_RELEASES.get(t.kind, ()):
            kinds = [k for k, types in TARGET_RELEASES.items() if rtype in types]
            p.append(
                Problem(
                    f"{where}: does not apply to a {rtype!r} release"
                    + (f" (targets it takes: {', '.join(kinds)})" if kinds else " (it takes no targets yet)"),
                    field="targets",
                    page="budget",
                )
            )
            continue
        key = t.kind if t.column is None else f"{t.kind}:{t.column}"
        if key in seen:
            p.append(
                Problem(f"{where}: a second target of this kind on the same column", field="targets", page="budget")
            )
        seen.add(key)
        if t.kind in ("within", "keep"):
            c = by_name.get(t.column or "")
            mech = c.mechanism.name if c is not None and c.mechanism is not None else None
            if c is None:
                p.append(Problem(f"{where}: no column {t.column!r} in the recipe", field="targets", page="budget"))
                continue
            if c.role in DROPPED_ROLES or c.role == "public":
                p.append(
                    Problem(
                        f"{where}: column {c.name!r} is not perturbed (role {c.role!r})", field="targets", page="budget"
                    )
                )
                continue
            if c.domain is not None and c.domain.source == "data":
                p.append(_copied_target_problem(where, [c.name]))
                continue
            want = ("laplace", "gaussian") if t.kind == "within" else ("rr",)
            if mech not in want:
                said = {"laplace": "Laplace noise", "gaussian": "Gaussian noise", "rr": "randomized response"}
                p.append(
                    Problem(
                        f"{where}: a {t.kind!r} target needs a column perturbed with "
                        f"{' or '.join(said[w] for w in want)}; {c.name!r} uses "
                        f"{said.get(mech or '', mech or 'no mechanism')}",
                        field="targets",
                        page="budget",
                    )
                )
        if t.kind == "marginals" and recipe.release.options.get("method") in ("pearl", "merf"):
            p.append(
                Problem(
                    f"{where}: a marginals target is forecast for MST and AIM, which measure the 1-way "
                    f"marginals; {recipe.release.options.get('method')!r} does not",
                    field="targets",
                    page="budget",
                )
            )
        if t.kind == "marginals":
            kept = [c for c in recipe.columns if c.role not in DROPPED_ROLES + ("embedding",) and c.domain is not None]
            copied = [c.name for c in kept if c.domain is not None and c.domain.source == "data"]
            if copied:
                p.append(_copied_target_problem(where, copied))
            unknown = [c.name for c in kept if c.domain is not None and not c.domain.known]
            if unknown:
                p.append(
                    Problem(
                        f"{where}: the forecast counts each column's public cells, and the domains of "
                        f"{', '.join(repr(n) for n in unknown[:5])} are found with DP at release time; "
                        "give them a public domain, or state another target",
                        field="targets",
                        page="budget",
                    )
                )
        if t.kind == "within":
            if not (t.value > 0 and math.isfinite(t.value)):
                p.append(Problem(f"{where}: the tolerance must be a number > 0", field="targets", page="budget"))
            if t.probability is None or not 0 < t.probability < 1:
                p.append(
                    Problem(
                        f"{where}: the share of records must lie strictly between 0 and 1",
                        field="targets",
                        page="budget",
                    )
                )
        elif not 0 < t.value < 1:
            p.append(Problem(f"{where}: the value must lie strictly between 0 and 1", field="targets", page="budget"))
    return p
