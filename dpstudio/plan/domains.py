"""Domain-estimation units: domains estimated with DP at release time come first in every plan.

Each is a small calibrated object whose ``release`` is the exact mechanism of
:mod:`dpstudio.engine.domains` (bounds: two exponential-mechanism quantiles on a public grid;
categories: noisy counts of public candidates, or partition selection), and whose output set is
fixed by public inputs only.  The plan is finalised from their outputs
(:func:`dpstudio.plan.compile.execute`).

The private data reach them through exact, mergeable summaries only (:class:`BoundsSummary`,
:class:`CategorySummary`; :func:`domain_summaries`): built batch by batch (a streamed file, a
Dask partition) with ``add``, combined with ``merge``, and turned into the DP outputs once by
:func:`finish_domain_units`.  An in-memory release builds them over the one frame
(:func:`run_domain_units`), so every engine draws the same noise from the same summaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.engine.rng import RandomSource
from dpstudio.plan.units import NoiseParameters, PlanUnit, ReleasePlan, UnitMechanism
from dpstudio.recipe.model import Column, Domain, Recipe


def _category_strings(series: pd.Series) -> npt.NDArray[Any]:
    """Values as the strings category lists use: integral floats as "1", not "1.0" (when every
    value of the column is integral).  :class:`CategorySummary` writes them so batch by batch."""
    if pd.api.types.is_float_dtype(series.dtype):
        f = series.to_numpy(dtype=np.float64)
        if np.all(f == np.round(f)):
            return np.round(f).astype(np.int64).astype(str)
    return series.astype(str).to_numpy()


class BoundsSummary:
    """What a :class:`BoundsEstimate` reads from the data: ``below[k]``, the number of the
    column's present values (clipped to the public search range) below the k-th point of the
    public grid, and ``n``, the number of present values (missing values are dropped, as in an
    in-memory release).  Exact and additive, so the summary of a table does not depend on how
    its rows are split into batches or in which order the batches' summaries are merged.
    Memory: the public grid's size (at most a few thousand points), whatever the number of rows.
    """

    def __init__(self, column: str, grid: npt.NDArray[np.float64]) -> None:
        self.column = column
        self.grid = np.asarray(grid, dtype=np.float64)
        self.below = np.zeros(self.grid.size, dtype=np.int64)
        self.n = 0

    def add(self, batch: pd.DataFrame, start: int | None = None) -> BoundsSummary:
        """Add a batch of rows (a frame holding the column; any number of rows).  ``start`` is
        accepted for a uniform interface and not needed here.  Returns ``self``."""
        return self.add_values(batch[self.column].to_numpy(dtype=np.float64, na_value=np.nan))

    def add_values(self, values: npt.NDArray[np.float64]) -> BoundsSummary:
        """Add the column's values of a batch (missing values dropped).  Returns ``self``."""
        from dpstudio.engine.domains import grid_below_counts

        x = np.asarray(values, dtype=np.float64)
        x = x[~np.isnan(x)]
        self.below += grid_below_counts(x, self.grid)
        self.n += int(x.size)
        return self

    def merge(self, other: BoundsSummary) -> BoundsSummary:
        """A new summary of both summaries' rows (neither is changed)."""
        if not isinstance(other, BoundsSummary) or other.column != self.column:
            raise ValueError(f"cannot merge a bounds summary of {self.column!r} with {other!r}")
        if not np.array_equal(other.grid, self.grid):
            raise ValueError(f"the bounds summaries of {self.column!r} use different grids")
        out = BoundsSummary(self.column, self.grid)
        out.below = self.below + other.below
        out.n = self.n + other.n
        return out

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BoundsSummary)
            and other.column == self.column
            and other.n == self.n
            and np.array_equal(other.grid, self.grid)
            and np.array_equal(other.below, self.below)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"BoundsSummary({self.column!r}, n={self.n}, grid points={self.grid.size})"


class CategorySummary:
    """What a :class:`CategoryDiscovery` reads from the data: the counts of the column's present
    values (missing values dropped), as the strings category lists use (:func:`_category_strings`).

    With a public candidate list: the counts of the candidates only (values outside the list
    are not kept), memory O(candidates).  Without one: a count per distinct value, memory
    O(distinct values) -- not bounded by a public size (a column of identifiers has about as
    many as rows).

    A float column's strings depend on the whole column (integral floats are written "1", not
    "1.0", only if every value is integral), so a float column keeps both forms while every
    value seen is integral (with a list: two count arrays; without: each distinct value's float).

    Partition selection (no list) draws its noise in the order the values first appear in the
    table, so the summary keeps each value's first row position.  ``add(batch)`` counts rows
    itself (the next batch follows the last one); summaries built separately (Dask partitions)
    and merged get the same order as one pass when each ``add`` is given ``start``: a position
    of the batch's first row that grows with the batch's place in the table (its row number;
    or ``i * 2**40`` for the i-th partition: only the order matters).  Counts are exact and
    additive and positions merge by minimum, so ``merge`` is commutative and associative.
    """

    def __init__(self, column: str, candidates: tuple[str, ...] | None) -> None:
        self.column = column
        self.candidates = candidates
        #: "float" or "other" once a batch with present values was added
        self.kind: str | None = None
        #: every float value seen is integral
        self.integral = True
        #: rows added (missing included); the default position of the next batch
        self.rows = 0
        k = len(candidates) if candidates is not None else 0
        #: with a list: the candidates' counts of the values' strings ("1.0" for a float)
        self.str_counts = np.zeros(k, dtype=np.int64)
        #: with a list, a float column while every value is integral: the counts of "1"
        self.int_counts = np.zeros(k, dtype=np.int64)
        #: without a list: per value string, its count, first row position, and (float columns) value
        self.counts: dict[str, int] = {}
        self.first: dict[str, int] = {}
        self.floats: dict[str, float] = {}

    def add(self, batch: pd.DataFrame, start: int | None = None) -> CategorySummary:
        """Add a batch of rows (a frame holding the column; any number of rows), whose first row
        is at position ``start`` (default: after every row added so far).  Returns ``self``."""
        return self.add_values(batch[self.column], start)

    def add_values(self, series: pd.Series, start: int | None = None) -> CategorySummary:
        """Add the column's values of a batch (missing values included; they are dropped)."""
        from dpstudio.engine.domains import candidate_counts

        pos0 = self.rows if start is None else int(start)
        self.rows = max(self.rows, pos0 + len(series))
        present = series.notna().to_numpy(dtype=bool)
        s = series[present]
        if s.size == 0:
            return self
        kind = "float" if pd.api.types.is_float_dtype(s.dtype) else "other"
        if self.kind is not None and kind != self.kind:
            raise ValueError(f"the batches of column {self.column!r} hold numbers in one and not in another")
        self.kind = kind
        strings = s.astype(str).to_numpy()
        f = s.to_numpy(dtype=np.float64) if kind == "float" else None
        batch_integral = f is not None and bool(np.all(f == np.round(f)))
        if self.candidates is not None:
            cands = list(self.candidates)
            self.str_counts += candidate_counts(strings, cands)
            if f is not None and self.integral and batch_integral:
                self.int_counts += candidate_counts(np.round(f).astype(np.int64).astype(str), cands)
        else:
            codes, uniques = pd.factorize(strings)
            counts = np.bincount(codes, minlength=len(uniques)).tolist()
            _, first_index = np.unique(codes, return_index=True)
            firsts = [pos0 + r for r in np.flatnonzero(present)[first_index].tolist()]
            keys = [str(key) for key in uniques.tolist()]
            if f is not None:
                self.floats.update(
                    (k, v) for k, v in zip(keys, f[first_index].tolist(), strict=True) if k not in self.floats
                )
            if not self.counts:
                self.counts = dict(zip(keys, counts, strict=True))
                self.first = dict(zip(keys, firsts, strict=True))
            else:
                for key, c, r in zip(keys, counts, firsts, strict=True):
                    old = self.counts.get(key)
                    if old is None:
                        self.counts[key] = c
                        self.first[key] = r
                    else:
                        self.counts[key] = old + c
                        if r < self.first[key]:
                            self.first[key] = r
        if f is not None:
            self.integral = self.integral and batch_integral
        return self

    def merge(self, other: CategorySummary) -> CategorySummary:
        """A new summary of both summaries' rows (neither is changed)."""
        if not isinstance(other, CategorySummary) or other.column != self.column:
            raise ValueError(f"cannot merge a category summary of {self.column!r} with {other!r}")
        if other.candidates != self.candidates:
            raise ValueError(f"the category summaries of {self.column!r} use different candidate lists")
        if self.kind is not None and other.kind is not None and self.kind != other.kind:
            raise ValueError(f"the batches of column {self.column!r} hold numbers in one and not in another")
        out = CategorySummary(self.column, self.candidates)
        out.kind = self.kind if self.kind is not None else other.kind
        out.integral = self.integral and other.integral
        out.rows = max(self.rows, other.rows)
        out.str_counts = self.str_counts + other.str_counts
        out.int_counts = self.int_counts + other.int_counts
        out.counts = dict(self.counts)
        out.first = dict(self.first)
        out.floats = dict(self.floats)
        for key, c in other.counts.items():
            if key in out.counts:
                out.counts[key] += c
                out.first[key] = min(out.first[key], other.first[key])
            else:
                out.counts[key] = c
                out.first[key] = other.first[key]
                if key in other.floats:
                    out.floats[key] = other.floats[key]
        return out

    def category_counts(self) -> npt.NDArray[np.int64] | dict[str, int]:
        """The counts the selection reads: with a list, aligned with the candidates; without, the
        present values' strings (as :func:`_category_strings` writes them) in order of first
        appearance."""
        as_integers = self.kind == "float" and self.integral
        if self.candidates is not None:
            return (self.int_counts if as_integers else self.str_counts).copy()
        # ties (summaries merged without positions) are broken by the value, so merging stays
        # commutative; sorting by value first keeps them so in the stable sort by position
        tied = len(set(self.first.values())) < len(self.first)
        order = sorted(sorted(self.counts) if tied else self.counts, key=self.first.__getitem__)
        if not as_integers:
            return {key: self.counts[key] for key in order}
        f = np.array([self.floats[key] for key in order], dtype=np.float64)
        out: dict[str, int] = {}
        for name, key in zip(np.round(f).astype(np.int64).astype(str).tolist(), order, strict=True):
            out[name] = out.get(name, 0) + self.counts[key]  # "-0.0" and "0.0" are both "0"
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CategorySummary):
            return False
        same_ints = not (self.kind == "float" and self.integral) or np.array_equal(self.int_counts, other.int_counts)
        return (
            (self.column, self.candidates, self.kind, self.integral)
            == (other.column, other.candidates, other.kind, other.integral)
            and np.array_equal(self.str_counts, other.str_counts)
            and same_ints
            and self.counts == other.counts
            and self.first == other.first
            and self.floats == other.floats
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        size = len(self.candidates) if self.candidates is not None else len(self.counts)
        return f"CategorySummary({self.column!r}, {'candidates' if self.candidates is not None else 'values'}={size})"


#: one domain unit's summary of the data
DomainSummary = BoundsSummary | CategorySummary


def needs_estimate(col: Column) -> bool:
    d = col.domain
    return d is not None and d.source == "dp" and not d.known and col.role not in ("identifier", "ignore")


@dataclass(frozen=True)
class BoundsEstimate:
    """epsilon-DP bounds of one numeric column on the public grid of its search range
    (:func:`dpstudio.engine.domains.dp_bounds`; docs/domains.md §DP bounds)."""

    column: str
    epsilon: float
    search_low: float
    search_high: float
    integer: bool
    #: charged in zCDP (a synthetic release's joint budget): two exponential-mechanism draws at
    #: epsilon/2, each (epsilon/2)^2/8-zCDP (bounded range, Cesar & Rogers 2021): epsilon^2/16
    zcdp: bool = False

    def privacy_loss(self) -> PrivacyLoss:
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=0.0,
            kind="dp",
            label=f"DP estimate of the bounds of {self.column}",
            zcdp_rho=self.epsilon**2 / 16.0 if self.zcdp else None,
        )

    def summary(self) -> BoundsSummary:
        """An empty summary of the data this estimate reads (on its public grid)."""
        from dpstudio.engine.domains import public_grid

        return BoundsSummary(self.column, public_grid(self.search_low, self.search_high, integer=self.integer))

    def release(self, data: BoundsSummary | npt.NDArray[np.float64], rng: RandomSource) -> tuple[float, float]:
        """The DP bounds from the data's summary (or from the column's present values)."""
        from dpstudio.engine import domains as dp_domains

        summary = data if isinstance(data, BoundsSummary) else self.summary().add_values(data)
        low, high, _loss = dp_domains.dp_bounds_from_counts(
            summary.below,
            summary.n,
            epsilon=self.epsilon,
            coarse_low=self.search_low,
            coarse_high=self.search_high,
            rng=rng,
            integer=self.integer,
        )
        if not low < high:
            # both quantiles drew the same grid point: widen to its grid neighbour, so the
            # published bounds stay on the public grid (post-processing)
            low, high = dp_domains.next_grid_point(low, self.search_low, self.search_high, integer=self.integer)
        return float(low), float(high)


@dataclass(frozen=True)
class CategoryDiscovery:
    """(epsilon, delta)-DP category list of one column: noisy counts of a public candidate list,
    or partition selection without one (:func:`dpstudio.engine.domains.dp_select_categories`)."""

    column: str
    epsilon: float
    delta: float
    candidates: tuple[str, ...] | None
    #: Gaussian noise of this scale on the counts, accounted in zCDP (a synthetic release's joint
    #: budget; :func:`dpstudio.engine.domains.dp_select_categories_gaussian`); None: Laplace
    #: noise at (epsilon, delta).  ``epsilon``/``delta`` are then the stand-alone figure.
    sigma: float | None = None
    #: without a candidate list: the delta allowed for a value held by one record to be kept
    #: (the approximate-zCDP delta this unit charges; the threshold keeps it at most this)
    selection_delta: float | None = None
    #: with a candidate list in a Gaussian-DP plan: the unit's mu allowance (its noise may be
    #: calibrated below it, see ``dpstudio.plan.synthetic``); None: not part of a GDP plan
    gdp_mu: float | None = None

    @property
    def threshold(self) -> int | None:
        """Partition selection's integer threshold (None with candidates or Laplace noise)."""
        if self.sigma is None or self.candidates or self.selection_delta is None:
            return None
        from dpstudio.engine.domains import gaussian_partition_threshold

        return gaussian_partition_threshold(self.sigma, self.selection_delta)

    def privacy_loss(self) -> PrivacyLoss:
        label = f"DP estimate of the categories of {self.column}"
        if self.sigma is None:
            return PrivacyLoss(epsilon=self.epsilon, delta=self.delta, kind="dp", label=label)
        return PrivacyLoss(
            epsilon=self.epsilon,
            delta=self.delta,
            kind="dp",
            label=label,
            zcdp_rho=1.0 / self.sigma**2,
            zcdp_delta=0.0 if self.candidates else float(self.selection_delta or 0.0),
            gdp_mu=self.gdp_mu,
        )

    def summary(self) -> CategorySummary:
        """An empty summary of the data this estimate reads."""
        return CategorySummary(self.column, self.candidates if self.candidates else None)

    def release(self, data: CategorySummary | npt.NDArray[Any], rng: RandomSource) -> tuple[str, ...]:
        """The DP category list from the data's summary (or from the column's present values as
        strings)."""
        from dpstudio.engine import domains as dp_domains

        if isinstance(data, CategorySummary):
            counts = data.category_counts()
        elif self.candidates:
            counts = dp_domains.candidate_counts(data, list(self.candidates))
        else:
            counts = dp_domains.category_counts(data)
        if self.sigma is not None:
            kept, _ = dp_domains.dp_select_categories_gaussian_from_counts(
                counts,
                sigma=self.sigma,
                delta=self.delta,
                rng=rng,
                candidates=list(self.candidates) if self.candidates else None,
                selection_delta=self.selection_delta,
            )
            return tuple(str(x) for x in kept)
        cats, _loss = dp_domains.dp_select_categories_from_counts(
            counts,
            epsilon=self.epsilon,
            delta=self.delta,
            rng=rng,
            candidates=list(self.candidates) if self.candidates else None,
        )
        return tuple(str(x) for x in cats)


@dataclass(frozen=True)
class DomainCharge:
    """A DP domain estimate's part of a budget planned jointly with the rest of the release (a
    synthetic release: ``dpstudio.plan.synthetic``).  ``rho``: its zCDP charge; ``sigma``: the
    Gaussian noise on category counts (None for bounds); ``epsilon_bounds``: the bounds'
    exponential-mechanism epsilon (``rho = epsilon^2/16``); ``selection_delta``: partition
    selection's approximate-zCDP delta; ``gdp_mu``: the mu allowance in a Gaussian-DP plan;
    ``epsilon``/``delta``: the stand-alone figure; ``share``: its (epsilon, delta) share of the
    typed budget (what the budget page and the report show)."""

    rho: float
    epsilon: float
    delta: float
    share: tuple[float, float]
    sigma: float | None = None
    epsilon_bounds: float | None = None
    selection_delta: float | None = None
    gdp_mu: float | None = None


def domain_units(recipe: Recipe, charges: Mapping[str, DomainCharge] | None = None) -> list[PlanUnit]:
    """One unit per domain estimated with DP: still to be run (with its calibrated object), or run
    earlier (e.g. in the GUI), whose cost still belongs to this release's total.  ``charges``:
    the column's part of a jointly planned budget (synthetic releases), which replaces the
    column's own cost for an estimate still to run."""
    out: list[PlanUnit] = []
    for c in recipe.columns:
        d = c.domain
        if d is None or d.source != "dp" or d.cost is None or not (needs_estimate(c) or d.known):
            continue  # a dropped column's domain that was never estimated costs nothing
        what = "bounds" if d.kind == "numeric" else "categories"
        mech: UnitMechanism | None = None
        charge = charges.get(c.name) if charges is not None and needs_estimate(c) else None
        noise = NoiseParameters()
        share = (float(d.cost.epsilon), float(d.cost.delta))
        if needs_estimate(c):
            label = f"DP estimate of the {what} of {c.name}"
            if d.kind == "numeric":
                assert d.search_low is not None and d.search_high is not None, c.name  # validated
                eps_b = float(d.cost.epsilon) if charge is None else float(charge.epsilon_bounds or 0.0)
                mech = BoundsEstimate(
                    c.name,
                    eps_b,
                    float(d.search_low),
                    float(d.search_high),
                    c.type == "integer",
                    zcdp=charge is not None,
                )
            elif charge is None:
                mech = CategoryDiscovery(
                    c.name, float(d.cost.epsilon), float(d.cost.delta), tuple(d.candidates) if d.candidates else None
                )
            else:
                mech = CategoryDiscovery(
                    c.name,
                    float(charge.epsilon),
                    float(charge.delta),
                    tuple(d.candidates) if d.candidates else None,
                    sigma=charge.sigma,
                    selection_delta=None if d.candidates else charge.selection_delta,
                    gdp_mu=charge.gdp_mu,
                )
                noise = NoiseParameters(sigma=charge.sigma)
            name = (
                "exponential-mechanism quantiles"
                if d.kind == "numeric"
                else ("noisy candidate counts" if d.candidates else "partition selection")
            )
            if charge is not None:
                share = charge.share
                if d.kind != "numeric":
                    name = "Gaussian " + name
        else:
            label = f"DP estimate of the {what} of {c.name} (done before the release)"
            name = "done before the release"
        loss = (
            mech.privacy_loss()
            if charge is not None and mech is not None
            else PrivacyLoss(epsilon=d.cost.epsilon, delta=d.cost.delta, label=label, kind="dp")
        )
        search = (
            (float(d.search_low), float(d.search_high))
            if d.kind == "numeric" and d.search_low is not None and d.search_high is not None
            else None
        )
        # a jointly planned estimate's part of the budget, as ``recipe check`` prints it (the loss's)
        facts: dict[str, float] = {}
        if charge is not None:
            if loss.zcdp_rho is not None:
                facts["zcdp_rho"] = float(loss.zcdp_rho)
            if loss.zcdp_delta:
                facts["approximate_zcdp_delta"] = float(loss.zcdp_delta)
            if loss.gdp_mu is not None:
                facts["gdp_mu"] = float(loss.gdp_mu)
            threshold = getattr(mech, "threshold", None)
            if threshold is not None:
                facts["threshold"] = float(threshold)
        out.append(
            PlanUnit(
                name=f"{what} of {c.name}",
                kind="domain",
                columns=(c.name,),
                mechanism_name=name,
                loss=loss,
                mechanism=mech,
                budget_share=share,
                noise=noise,
                search_range=search,
                domain_source="dp",
                description=label,
                facts=facts,
            )
        )
    return out


def domain_summaries(recipe: Recipe, units: tuple[PlanUnit, ...] | list[PlanUnit]) -> dict[str, DomainSummary]:
    """An empty summary of the data for each domain unit still to run, by unit name, in plan
    order: fill them with ``add(batch)`` (and ``merge``), then :func:`finish_domain_units`."""
    out: dict[str, DomainSummary] = {}
    for u in units:
        if u.kind != "domain" or u.mechanism is None:
            continue
        recipe.column(u.columns[0])  # the unit's column is the recipe's
        mech = u.mechanism
        assert isinstance(mech, BoundsEstimate | CategoryDiscovery), u.name
        out[u.name] = mech.summary()
    return out


def run_domain_units(
    recipe: Recipe,
    units: tuple[PlanUnit, ...],
    frame: pd.DataFrame,
    rng: RandomSource,
    drawn_by: dict[str, UnitMechanism],
) -> tuple[Recipe, dict[str, Any]]:
    """Run the plan's domain units that are still to run, in plan order; the recipe completed
    with their outputs (post-processing of DP outputs only), and the public notes.  The data's
    summaries over the one frame, then :func:`finish_domain_units`."""
    summaries = domain_summaries(recipe, units)
    for summary in summaries.values():
        summary.add(frame)
    return finish_domain_units(recipe, units, summaries, rng, drawn_by)


def finish_domain_units(
    recipe: Recipe,
    units: tuple[PlanUnit, ...],
    summaries: Mapping[str, DomainSummary],
    rng: RandomSource,
    drawn_by: dict[str, UnitMechanism],
) -> tuple[Recipe, dict[str, Any]]:
    """Run the plan's domain units that are still to run, in plan order, from the data's
    summaries (:func:`domain_summaries`, filled with every batch); the recipe completed with
    their outputs (post-processing of DP outputs only), and the public notes."""
    notes: dict[str, Any] = {}
    new_domain: dict[str, Domain] = {}
    for u in units:
        if u.kind != "domain" or u.mechanism is None:
            continue
        col = recipe.column(u.columns[0])
        d = col.domain
        assert d is not None, col.name  # a domain unit's column has a DP domain
        mech = u.mechanism
        summary = summaries.get(u.name)
        if summary is None:
            raise ValueError(f"no summary of the data for the estimate {u.name!r}")
        if isinstance(mech, BoundsEstimate):
            assert isinstance(summary, BoundsSummary), u.name
            low, high = mech.release(summary, rng)
            new_domain[col.name] = replace(d, low=low, high=high)
            notes[f"dp_domain:{col.name}"] = [low, high]
        else:
            assert isinstance(summary, CategorySummary), u.name
            cats: tuple[str, ...] = mech.release(summary, rng)
            other = d.other if d.other is not None else "(other)"
            cats = cats + ((other,) if other not in cats else ())
            # every release goes on with the column reduced to its "other" value (useless but
            # honest; emptied_dp_categories says so): stopping here would tell the user the
            # estimate's outcome while the reservation is rolled back, an estimate for free
            new_domain[col.name] = replace(d, categories=cats, other=other)
            notes[f"dp_domain:{col.name}"] = list(cats)
        drawn_by[u.name] = mech
    if not new_domain:
        return recipe, notes
    cols = tuple(replace(c, domain=new_domain[c.name]) if c.name in new_domain else c for c in recipe.columns)
    return replace(recipe, columns=cols), notes


def copied_domain_warnings(recipe: Recipe) -> list[str]:
    """The warning for domains copied from the data (an explicit, acknowledged choice): they are
    not covered by the guarantee, and the release can show them -- values are clamped to copied
    bounds, and a copied list holds exactly the categories the data has."""
    names = sorted(
        c.name
        for c in recipe.columns
        if c.domain is not None and c.domain.source == "data" and c.role not in ("identifier", "ignore")
    )
    if not names:
        return []
    return [
        "the domains of "
        + ", ".join(repr(n) for n in names)
        + " were copied from the data: they are not covered by the privacy guarantee, and the "
        "release can show them (values are clamped to copied bounds; a copied category list is "
        "the data's own); give public domains or DP estimates instead"
    ]


def emptied_dp_categories(recipe: Recipe) -> list[str]:
    """Warnings for the columns whose DP category estimate kept no value (every noisy count fell
    below its threshold), so that the release holds only the "other" value there.  Reads the
    estimates' outputs (DP, publishable): a synthetic release goes on with such a column, and the
    user must hear that it is empty rather than find out from the table."""
    out = []
    for c in recipe.columns:
        d = c.domain
        if d is None or d.kind != "categorical" or d.source != "dp" or d.categories is None:
            continue
        if all(v == d.other for v in d.categories):
            other = d.other if d.other is not None else "(other)"
            out.append(
                f"column {c.name!r}: the DP category estimate kept no value (every value is too rare "
                f"for its threshold at this budget), so the released column holds only {other!r}; "
                "give a public category list, or more budget for this estimate, to keep its values"
            )
    return out


def resolve_dp_domains(recipe: Recipe, frame: pd.DataFrame, rng: RandomSource) -> tuple[Recipe, dict[str, Any]]:
    """Run every DP domain estimate ``recipe`` asks for (the domain units of its plan)."""
    return run_domain_units(recipe, tuple(domain_units(recipe)), frame, rng, {})


def start_central(
    plan: ReleasePlan, frame: pd.DataFrame, rng: RandomSource, kind: str
) -> tuple[Recipe, dict[str, Any], ReleasePlan, PlanUnit, dict[str, UnitMechanism]]:
    """The first steps of a release with one central unit (synthesizer, model, density): run the
    domain units, finalise the plan with their outputs (the central unit's object depends on no
    estimate: it reads the domains when it runs), and hand back ``(recipe, domain notes, final
    plan, the unit of ``kind``, drawn_by)``."""
    if plan.recipe is None:
        raise ValueError("this plan was not compiled from a recipe")
    drawn_by: dict[str, UnitMechanism] = {}
    recipe, notes = run_domain_units(plan.recipe, plan.units, frame, rng, drawn_by)
    final = plan if recipe is plan.recipe else replace(plan, recipe=recipe)
    unit = next(u for u in final.units if u.kind == kind)
    return recipe, notes, final, unit, drawn_by
