"""Pure recipe edits shared by the pages (no Qt): keep roles, types, domains and mechanisms
consistent when the user changes one of them."""

from __future__ import annotations

from dataclasses import replace

from dpstudio.recipe.model import Domain, Mechanism, Recipe
from dpstudio.recipe.validate import ACK_DOMAIN_FROM_DATA, NUMERIC_TYPES, default_mechanism, perturbed_roles

DROPPED_ROLES = ("identifier", "ignore")
RECORD_TYPES = ("record", "label", "semi-sensitive")


def domain_kind(col_type: str) -> str | None:
    if col_type in NUMERIC_TYPES:
        return "numeric"
    if col_type in ("categorical", "boolean"):
        return "categorical"
    return None


def allowed_mechanisms(col, release_type: str) -> tuple[str, ...]:
    """Mechanisms the user may choose for a column under a release type ("none": unchanged)."""
    if col.role in DROPPED_ROLES:
        return ()
    if release_type not in RECORD_TYPES:
        return ()  # synthetic / model / density choose their own noise
    if col.role not in perturbed_roles(release_type):
        return ("none",)
    if col.role == "embedding" or col.type == "vector":
        return ("metric",)
    if col.type in NUMERIC_TYPES and col.role != "label":
        return ("laplace", "gaussian")
    return ("rr",)


def fit_mechanism(col, release_type: str):
    """The column's mechanism after a role/type/release change: kept if still allowed."""
    allowed = allowed_mechanisms(col, release_type)
    if not allowed:
        return None
    if allowed == ("none",):
        return None
    current = col.mechanism
    if current is not None and current.name in allowed:
        return current
    name = default_mechanism(col.type, col.role)
    if name not in allowed:
        name = allowed[0]
    weight = current.weight if current is not None else 1.0
    params = current.params if current is not None and name == "metric" else None
    return Mechanism(name=name, weight=weight) if params is None else Mechanism(name=name, weight=weight, params=params)


def _sync_ack(recipe: Recipe) -> Recipe:
    uses = any(
        c.domain is not None and c.domain.source == "data" and c.role not in DROPPED_ROLES for c in recipe.columns
    )
    acks = tuple(a for a in recipe.acknowledgements if a != ACK_DOMAIN_FROM_DATA)
    if uses:
        acks = acks + (ACK_DOMAIN_FROM_DATA,)
    return replace(recipe, acknowledgements=acks) if acks != recipe.acknowledgements else recipe


def set_role(recipe: Recipe, name: str, role: str) -> Recipe:
    """The user's choice of role: recorded as confirmed (no longer the data's suggestion)."""
    col = replace(recipe.column(name), role=role)
    col = replace(col, mechanism=fit_mechanism(col, recipe.release.type))
    return _sync_pool_ack(
        _sync_ack(recipe.with_column(name, role=col.role, mechanism=col.mechanism, role_source="confirmed"))
    )


def unprotected_marked(recipe: Recipe) -> list[str]:
    """Columns whose role asks for protection (sensitive, embedding) that the release type would
    publish unchanged (a label release perturbs only its label): a problem until the user marks
    them public or ignore, or picks a release that perturbs them."""
    from dpstudio.recipe.validate import perturbed_roles

    perturbed = perturbed_roles(recipe.release.type)
    if recipe.release.type not in ("label", "semi-sensitive"):
        return []
    return [c.name for c in recipe.columns if c.role in ("sensitive", "embedding") and c.role not in perturbed]


def publish_unprotected(recipe: Recipe) -> Recipe:
    """The user's choice (one click on the release page) to publish those columns as they are:
    each is marked public, as a confirmed role."""
    for name in unprotected_marked(recipe):
        recipe = set_role(recipe, name, "public")
    return recipe


def confirm_suggestions(recipe: Recipe) -> Recipe:
    """The user accepts every suggested type and role as a public choice (values unchanged)."""
    from dpstudio.recipe.build import confirm_inferred_facts

    return confirm_inferred_facts(recipe)


def set_type(recipe: Recipe, name: str, col_type: str) -> Recipe:
    """The user's choice of type (it fixes the released grid): recorded as confirmed."""
    col = replace(recipe.column(name), type=col_type)
    kind = domain_kind(col_type)
    domain = col.domain if col.domain is not None and col.domain.kind == kind else None
    col = replace(col, domain=domain)
    col = replace(col, mechanism=fit_mechanism(col, recipe.release.type))
    return _sync_ack(
        recipe.with_column(name, type=col_type, domain=domain, mechanism=col.mechanism, type_source="confirmed")
    )


def set_domain(recipe: Recipe, name: str, domain: Domain | None, *, acknowledge: bool = False) -> Recipe:
    """Set a domain; a 'data' source needs ``acknowledge=True`` (the user confirmed the risk)."""
    if (
        domain is not None
        and domain.source == "data"
        and not acknowledge
        and ACK_DOMAIN_FROM_DATA not in recipe.acknowledgements
    ):
        raise ValueError("copying a domain from the data needs the user's explicit confirmation")
    return _sync_ack(recipe.with_column(name, domain=domain))


def set_release_type(recipe: Recipe, release_type: str) -> Recipe:
    r = replace(recipe, release=replace(recipe.release, type=release_type))
    cols = tuple(replace(c, mechanism=fit_mechanism(c, release_type)) for c in r.columns)
    r = replace(r, columns=cols)
    if release_type in ("synthetic", "model", "density") and r.budget.delta <= 0:
        r = replace(r, budget=replace(r.budget, delta=suggested_delta(None)))
    return r


def set_mechanism(recipe: Recipe, name: str, mech_name: str | None = None, weight: float | None = None) -> Recipe:
    col = recipe.column(name)
    cur = col.mechanism or Mechanism(name=mech_name or default_mechanism(col.type, col.role))
    new = replace(cur, name=mech_name or cur.name, weight=cur.weight if weight is None else float(weight))
    r = recipe.with_column(name, mechanism=new)
    if new.name == "gaussian" and r.budget.delta <= 0:
        r = replace(r, budget=replace(r.budget, delta=suggested_delta(None)))
    return r


def suggested_delta(rows: int | None) -> float:
    if not rows:
        return 1e-6
    return min(1e-6, 0.1 / rows)


# ---- embedding pools (metric selection) -----------------------------------------------------


def embedding_units(recipe: Recipe) -> list[tuple[str, list]]:
    """The embedding vectors of a recipe: (group key, its columns), in column order."""
    units: list[tuple[str, list]] = []
    index: dict[str, list] = {}
    for c in recipe.columns:
        if c.role != "embedding":
            continue
        key = c.group or c.name
        if key not in index:
            index[key] = []
            units.append((key, index[key]))
        index[key].append(c)
    return units


def embedding_pool(recipe: Recipe, key: str) -> str | None:
    """The pool of an embedding unit: a file path, "dataset", or None (not chosen yet)."""
    for k, cols in embedding_units(recipe):
        if k == key:
            pools = {c.mechanism.params.get("pool") if c.mechanism else None for c in cols}
            return pools.pop() if len(pools) == 1 else None
    raise KeyError(key)


def _sync_pool_ack(recipe: Recipe) -> Recipe:
    from dpstudio.recipe.validate import ACK_DATASET_POOL

    uses = any(
        c.role == "embedding" and c.mechanism is not None and c.mechanism.params.get("pool") == "dataset"
        for c in recipe.columns
    )
    acks = tuple(a for a in recipe.acknowledgements if a != ACK_DATASET_POOL)
    if uses:
        acks = acks + (ACK_DATASET_POOL,)
    return replace(recipe, acknowledgements=acks) if acks != recipe.acknowledgements else recipe


def set_embedding_pool(recipe: Recipe, key: str, pool: str | None, *, acknowledge: bool = False) -> Recipe:
    """Metric selection for every column of embedding unit ``key`` with ``pool`` (a public file,
    or "dataset": the data's own vectors, which needs ``acknowledge=True`` - the user confirmed
    that the output then consists of other people's real vectors)."""
    from dpstudio.recipe.model import Params
    from dpstudio.recipe.validate import ACK_DATASET_POOL

    if pool == "dataset" and not acknowledge and ACK_DATASET_POOL not in recipe.acknowledgements:
        raise ValueError("using the dataset's own vectors as the pool needs the user's explicit confirmation")
    cols = dict(embedding_units(recipe))[key]
    names = {c.name for c in cols}
    out = []
    for c in recipe.columns:
        if c.name in names:
            cur = c.mechanism or Mechanism(name="metric")
            params = cur.params.to_dict()
            if pool is None:
                params.pop("pool", None)
            else:
                params["pool"] = pool
            c = replace(c, mechanism=replace(cur, name="metric", params=Params.of(params)))
        out.append(c)
    return _sync_pool_ack(replace(recipe, columns=tuple(out)))


def pool_file_problem(path: str, columns: list[str]) -> str | None:
    """Why a pool file cannot serve an embedding made of ``columns`` (None: it can).  Reads only
    the file's header."""
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        return f"{path}: not found"
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            names = list(pq.read_schema(str(p)).names)
        elif p.suffix.lower() in (".csv", ".txt", ".tsv", ".gz"):
            import pandas as pd

            names = list(pd.read_csv(p, nrows=0, sep=None if p.suffix.lower() == ".tsv" else ",").columns)
        else:
            return f"{p.name}: choose a CSV or Parquet file"
    except Exception as exc:  # noqa: BLE001 - shown to the user
        return f"{p.name}: cannot be read ({type(exc).__name__}: {exc})"
    if len(columns) > 1:
        missing = [c for c in columns if c not in names]
        if missing:
            return (
                f"{p.name} lacks the vector columns {', '.join(missing[:5])}"
                f"{' …' if len(missing) > 5 else ''}: the pool needs the same columns as the data"
            )
    return None


# ---- domains: several columns at once, domain files, the obvious domain of a yes/no column --------


def set_domains(recipe: Recipe, names, domain: Domain | None, *, acknowledge: bool = False) -> Recipe:
    """One domain choice for several columns (of one kind): one edit, one undo step."""
    for name in names:
        recipe = set_domain(recipe, name, domain, acknowledge=acknowledge)
    return recipe


def apply_domain_file(recipe: Recipe, domains: dict[str, Domain], *, acknowledge: bool = False):
    """``(recipe, report)``: the domains of a file or pasted table applied to the matching
    columns (:func:`dpstudio.recipe.domainfile.apply_domains`); unknown and mismatched names are
    in the report, never dropped silently."""
    from dpstudio.recipe.domainfile import apply_domains

    out, report = apply_domains(recipe, domains, acknowledge_data=acknowledge)
    return _sync_ack(out), report


def suggested_discovery_delta(rows: int | None) -> float:
    """δ of a DP category discovery without a candidate list: the recipe default (1e-7), kept
    a hundred times below 1/n, the chance of one person's category being published."""
    from dpstudio.recipe.build import DEFAULT_DISCOVERY_DELTA

    if not rows:
        return DEFAULT_DISCOVERY_DELTA
    return min(DEFAULT_DISCOVERY_DELTA, 0.01 / rows)


def binary_domain_offer(col, inferred_type: str | None, series=None) -> Domain | None:
    """The obvious domain of a yes/no column, *offered* (never applied) as a public choice.

    Why this is acceptable: a column of 0/1 values (or True/False) can only take those two
    values - the set is the domain of the type, a bit, not something learnt about the people
    in the data, so it is public knowledge like "age is between 0 and 120".  The only thing
    read from the data is what the schema already read to call the column boolean (its values
    are among 0/1, true/false, yes/no...).  For yes/no words the two spellings found are
    offered: visible on the button, and applied only when the user clicks it (a confirmation).
    ``inferred_type`` is the schema's type; ``series`` the loaded column (its dtype, and for
    words its at most two values)."""
    import pandas as pd

    if col.domain is not None or col.role in DROPPED_ROLES or series is None:
        return None
    kind = domain_kind(col.type)
    if kind is None or (inferred_type != "boolean" and col.type != "boolean"):
        return None
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        cats: tuple[str, ...] = ("False", "True")
    elif pd.api.types.is_numeric_dtype(dtype):
        cats = ("0", "1")  # the schema calls a numeric column boolean only if its values are 0/1
    else:
        values = sorted(str(v) for v in pd.unique(series.dropna()))
        if len(values) != 2:
            return None
        cats = (values[0], values[1])
    if kind == "numeric":
        if cats != ("0", "1") and cats != ("False", "True"):
            return None
        return Domain(kind="numeric", source="public", low=0.0, high=1.0)
    return Domain(kind="categorical", source="public", categories=cats)
