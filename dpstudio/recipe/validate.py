"""Semantic validation of a recipe: returns *all* problems, each naming the column and quoting
the bad value, so a user fixes everything in one pass."""
from __future__ import annotations

from dpstudio.recipe.model import Recipe

NUMERIC_TYPES = ("integer", "float")
DISCRETE_TYPES = ("categorical", "boolean")
NUMERIC_MECHANISMS = ("laplace", "gaussian")

ACK_DATASET_POOL = "embedding-pool-is-dataset"
ACK_DOMAIN_FROM_DATA = "domain-copied-from-data"


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


def default_mechanism(column_type: str, role: str) -> str:
    if role == "embedding" or column_type == "vector":
        return "metric"
    if column_type in NUMERIC_TYPES:
        return "laplace"
    return "rr"


def _domain_problems(col, where: str) -> list[str]:
    p: list[str] = []
    d = col.domain
    numeric = col.type in NUMERIC_TYPES
    if d is None:
        kind = "bounds (--bounds COL=LOW:HIGH)" if numeric else "a category list (--categories COL=A,B,...)"
        return [f"{where}: needs a public domain: {kind}, a DP estimate, or an explicit copy from the data"]
    if numeric and d.kind != "numeric":
        p.append(f"{where}: numeric column has a {d.kind!r} domain; give bounds")
    if not numeric and col.type in DISCRETE_TYPES and d.kind != "categorical":
        p.append(f"{where}: categorical column has a {d.kind!r} domain; give a category list")
    if d.source == "dp":
        if d.cost is None or not (d.cost.epsilon > 0):
            p.append(f"{where}: a DP-estimated domain needs a positive cost epsilon, got "
                     f"{None if d.cost is None else d.cost.epsilon!r}")
        if d.kind == "numeric" and not d.known:
            if d.search_low is None or d.search_high is None or not d.search_low < d.search_high:
                p.append(f"{where}: DP bounds need a public search range search_low < search_high, got "
                         f"[{d.search_low!r}, {d.search_high!r}]")
        if d.kind == "categorical" and not d.known and not d.candidates and d.cost is not None \
                and not (0 < d.cost.delta <= 0.5):
            p.append(f"{where}: discovering categories without a public candidate list needs a cost "
                     f"delta in (0, 0.5], got {d.cost.delta!r}")
        if not d.known:
            return p
    if d.kind == "numeric":
        if d.low is None or d.high is None:
            p.append(f"{where}: bounds need both low and high, got [{d.low!r}, {d.high!r}]")
        elif not d.low < d.high:
            p.append(f"{where}: bounds must satisfy low < high, got [{d.low!r}, {d.high!r}]")
    else:
        cats = d.categories
        if not cats:
            p.append(f"{where}: category list is empty")
        else:
            if len(set(cats)) != len(cats):
                dup = sorted({c for c in cats if cats.count(c) > 1})
                p.append(f"{where}: category list repeats {dup!r}")
            if len(set(cats)) < 2:
                p.append(f"{where}: a category list needs at least 2 categories, got {list(cats)!r}")
            if d.other is not None and d.other not in cats:
                p.append(f"{where}: 'other' category {d.other!r} is not in the category list")
    return p


def validate(recipe: Recipe, schema=None) -> list[str]:
    """Every problem with ``recipe`` (and, given a TableSchema, its fit to the data)."""
    p: list[str] = []
    b = recipe.budget
    if not (b.epsilon > 0):
        p.append(f"budget: epsilon must be > 0, got {b.epsilon!r}")
    elif b.epsilon > 50:
        p.append(f"budget: epsilon {b.epsilon!r} is above 50 - such a release protects nobody; lower it")
    if not (0 <= b.delta < 1):
        p.append(f"budget: delta must lie in [0, 1), got {b.delta!r}")
    if not recipe.input.path:
        p.append("input.path: empty")

    names = [c.name for c in recipe.columns]
    seen: set[str] = set()
    for n in names:
        if n in seen:
            p.append(f"column {n!r}: listed more than once")
        seen.add(n)
    if not recipe.columns:
        p.append("columns: the recipe lists no columns")

    rtype = recipe.release.type
    labels = recipe.columns_with_role("label")
    if len(labels) > 1:
        p.append(f"columns: at most one label column, got {[c.name for c in labels]!r}")
    if rtype in ("label", "semi-sensitive", "model") and not labels:
        p.append(f"release {rtype!r}: needs a column with role 'label'")
    for lab in labels:
        if lab.type not in DISCRETE_TYPES + ("integer",):
            p.append(f"column {lab.name!r}: a label must be categorical/boolean, got type {lab.type!r}")

    perturbed = perturbed_roles(rtype)
    gaussian_used = False
    for c in recipe.columns:
        where = f"column {c.name!r}"
        if c.role in ("identifier", "ignore"):
            if c.mechanism is not None and c.mechanism.name != "none":
                p.append(f"{where}: role {c.role!r} is dropped, but mechanism {c.mechanism.name!r} was given")
            continue
        if c.type in ("datetime", "text") and c.role in perturbed and rtype not in ("label",):
            p.append(f"{where}: type {c.type!r} cannot be released by {rtype!r}; set its role to "
                     f"'ignore' or 'identifier'")
            continue
        if c.mechanism is not None and not (c.mechanism.weight > 0):
            p.append(f"{where}: mechanism weight must be > 0, got {c.mechanism.weight!r}")
        if c.role not in perturbed:
            if rtype in ("record", "label", "semi-sensitive") and c.mechanism is not None \
                    and c.mechanism.name != "none":
                p.append(f"{where}: role {c.role!r} is released unchanged by {rtype!r}, "
                         f"but mechanism {c.mechanism.name!r} was given")
            continue
        if c.role == "embedding":
            if rtype != "record":
                p.append(f"{where}: embeddings are released only by 'record' releases, not {rtype!r}")
                continue
            mech = c.mechanism.name if c.mechanism else "metric"
            if mech != "metric":
                p.append(f"{where}: embedding columns use mechanism 'metric', got {mech!r}")
            pool = c.mechanism.params.get("pool") if c.mechanism else None
            if pool is None:
                p.append(f"{where}: metric selection needs a public pool of vectors "
                         f"(mechanism param 'pool': a file path, or 'dataset' with acknowledgement)")
            elif pool == "dataset" and ACK_DATASET_POOL not in recipe.acknowledgements:
                p.append(f"{where}: drawing replacements from the dataset itself releases other people's "
                         f"real vectors; add acknowledgement {ACK_DATASET_POOL!r} to allow it")
            continue
        p.extend(_domain_problems(c, where))
        if c.domain is not None and c.domain.source == "data" \
                and ACK_DOMAIN_FROM_DATA not in recipe.acknowledgements:
            p.append(f"{where}: domain copied from the private data needs acknowledgement "
                     f"{ACK_DOMAIN_FROM_DATA!r} (the guarantee does not cover it)")
        if rtype in ("record", "label", "semi-sensitive"):
            mech = c.mechanism.name if c.mechanism else default_mechanism(c.type, c.role)
            if c.type in NUMERIC_TYPES and c.role != "label":
                if mech not in NUMERIC_MECHANISMS:
                    p.append(f"{where}: numeric columns use 'laplace' or 'gaussian', got {mech!r}")
                gaussian_used |= mech == "gaussian"
            elif mech != "rr":
                p.append(f"{where}: categorical columns and labels use 'rr', got {mech!r}")
        if rtype == "density" and c.type not in NUMERIC_TYPES:
            p.append(f"{where}: a density release takes numeric columns, got type {c.type!r}")
        if rtype == "model" and c.role != "label" and c.type not in NUMERIC_TYPES + ("boolean",):
            p.append(f"{where}: the DP model takes numeric features, got type {c.type!r}")

    if gaussian_used and b.delta <= 0:
        p.append("budget: the Gaussian mechanism needs delta > 0, got 0")
    if rtype == "density":
        n = len(recipe.columns_with_role("sensitive"))
        if n not in (1, 2):
            p.append(f"release 'density': mark 1 or 2 numeric columns 'sensitive', got {n}")
        if b.delta <= 0:
            p.append("budget: the density release adds Gaussian-process noise and needs delta > 0, got 0")
    if rtype in ("synthetic", "model") and b.delta <= 0:
        p.append(f"budget: the {rtype!r} release needs delta > 0, got 0")

    if schema is not None:
        data_cols = {c.name: c for c in schema.columns}
        for c in recipe.columns:
            if c.name not in data_cols:
                p.append(f"column {c.name!r}: not found in the data (columns: "
                         f"{', '.join(list(data_cols)[:12])}{', ...' if len(data_cols) > 12 else ''})")
        listed = set(names)
        for n in data_cols:
            if n not in listed:
                p.append(f"column {n!r}: in the data but not in the recipe; give it a role ('ignore' drops it)")
        rows = getattr(schema, "rows", None)
        if rows and b.delta > 0 and b.delta >= 1.0 / rows:
            p.append(f"budget: delta {b.delta!r} is not below 1/n = {1.0 / rows:.3g}; a release could "
                     f"then expose a whole record - use delta << 1/n")
    return p
