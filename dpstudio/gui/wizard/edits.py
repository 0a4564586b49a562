"""Pure recipe edits shared by the pages (no Qt): keep roles, types, domains and mechanisms
consistent when the user changes one of them."""
from __future__ import annotations

from dataclasses import replace

from dpstudio.recipe.model import Domain, Mechanism, Recipe
from dpstudio.recipe.validate import (ACK_DOMAIN_FROM_DATA, NUMERIC_TYPES, default_mechanism,
                                      perturbed_roles)

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
    uses = any(c.domain is not None and c.domain.source == "data" and c.role not in DROPPED_ROLES
               for c in recipe.columns)
    acks = tuple(a for a in recipe.acknowledgements if a != ACK_DOMAIN_FROM_DATA)
    if uses:
        acks = acks + (ACK_DOMAIN_FROM_DATA,)
    return replace(recipe, acknowledgements=acks) if acks != recipe.acknowledgements else recipe


def set_role(recipe: Recipe, name: str, role: str) -> Recipe:
    col = replace(recipe.column(name), role=role)
    col = replace(col, mechanism=fit_mechanism(col, recipe.release.type))
    return _sync_ack(recipe.with_column(name, role=col.role, mechanism=col.mechanism))


def set_type(recipe: Recipe, name: str, col_type: str) -> Recipe:
    col = replace(recipe.column(name), type=col_type)
    kind = domain_kind(col_type)
    domain = col.domain if col.domain is not None and col.domain.kind == kind else None
    col = replace(col, domain=domain)
    col = replace(col, mechanism=fit_mechanism(col, recipe.release.type))
    return _sync_ack(recipe.with_column(name, type=col_type, domain=domain, mechanism=col.mechanism))


def set_domain(recipe: Recipe, name: str, domain: Domain | None, *, acknowledge: bool = False) -> Recipe:
    """Set a domain; a 'data' source needs ``acknowledge=True`` (the user confirmed the risk)."""
    if domain is not None and domain.source == "data" and not acknowledge \
            and ACK_DOMAIN_FROM_DATA not in recipe.acknowledgements:
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
