"""Domains estimated with DP at release time: their cost is part of every plan's total."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpstudio.engine.accounting import PrivacyLoss


def _category_strings(series):
    """Values as the strings category lists use: integral floats as "1", not "1.0"."""
    import pandas as pd
    if pd.api.types.is_float_dtype(series.dtype):
        f = series.to_numpy(dtype=np.float64)
        if np.all(f == np.round(f)):
            return np.round(f).astype(np.int64).astype(str)
    return series.astype(str).to_numpy()


def _needs_estimate(col) -> bool:
    d = col.domain
    return d is not None and d.source == "dp" and not d.known and col.role not in ("identifier", "ignore")


def domain_components(recipe) -> list[PrivacyLoss]:
    """One PrivacyLoss per domain still to be estimated with DP (central, over the whole column)."""
    out = []
    for c in recipe.columns:
        if _needs_estimate(c):
            what = "bounds" if c.domain.kind == "numeric" else "categories"
            out.append(PrivacyLoss(epsilon=c.domain.cost.epsilon, delta=c.domain.cost.delta,
                                   label=f"DP estimate of the {what} of {c.name}", kind="dp"))
        elif c.domain is not None and c.domain.source == "dp" and c.domain.cost is not None:
            # estimated earlier (e.g. in the GUI): its cost still belongs to this release's total
            what = "bounds" if c.domain.kind == "numeric" else "categories"
            out.append(PrivacyLoss(epsilon=c.domain.cost.epsilon, delta=c.domain.cost.delta,
                                   label=f"DP estimate of the {what} of {c.name} (done before the release)",
                                   kind="dp"))
    return out


def resolve_dp_domains(recipe, frame, rng):
    """Estimate the domains the recipe asks to estimate; returns the completed recipe and notes."""
    from dpstudio.engine import domains as dp_domains

    notes = {}
    cols = []
    for c in recipe.columns:
        if _needs_estimate(c):
            d = c.domain
            if d.kind == "numeric":
                x = frame[c.name].to_numpy(dtype=np.float64, na_value=np.nan)
                x = x[~np.isnan(x)]
                # integer columns (declared in the recipe, a public input) get integer bounds
                integer = c.type == "integer"
                low, high, _loss = dp_domains.dp_bounds(x, epsilon=d.cost.epsilon, coarse_low=d.search_low,
                                                        coarse_high=d.search_high, rng=rng, integer=integer)
                if not low < high:
                    # both quantiles drew the same grid point: widen to its grid neighbour, so the
                    # published bounds stay on the public grid (post-processing)
                    low, high = dp_domains.next_grid_point(low, d.search_low, d.search_high, integer=integer)
                c = replace(c, domain=replace(d, low=float(low), high=float(high)))
                notes[f"dp_domain:{c.name}"] = [float(low), float(high)]
            else:
                values = _category_strings(frame[c.name].dropna())
                cats, _loss = dp_domains.dp_select_categories(
                    values, epsilon=d.cost.epsilon, delta=d.cost.delta, rng=rng,
                    candidates=list(d.candidates) if d.candidates else None)
                cats = tuple(str(x) for x in cats)
                other = d.other
                if other is None:
                    other = "(other)"
                cats = cats + ((other,) if other not in cats else ())
                if len(cats) < 2:
                    from dpstudio.errors import UserError
                    raise UserError(f"column {c.name!r}: DP category discovery kept no category; "
                                    f"give a public category list (or a larger cost)")
                c = replace(c, domain=replace(d, categories=cats, other=other))
                notes[f"dp_domain:{c.name}"] = list(cats)
        cols.append(c)
    return replace(recipe, columns=tuple(cols)), notes
