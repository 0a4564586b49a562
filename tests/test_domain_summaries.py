"""DP domain estimates from exact, mergeable summaries of the data (streamed and Dask releases).

* The summaries do not depend on how the rows are split into batches: adding the pieces of a
  frame one after the other, or summarising each piece apart and merging them in any order,
  gives the summary of one pass over the frame -- which holds exactly what the estimators read
  today (the grid counts of the present values; the counts of the category strings).
* The DP outputs drawn from summaries built over batches equal those of an in-memory release
  with the same seed (bounds, categories with and without a public list, Laplace and Gaussian).
* The summaries survive a pickle round trip (Dask ships them between processes).
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpstudio.engine.domains import (
    candidate_counts,
    category_counts,
    dp_bounds,
    dp_bounds_from_counts,
    dp_quantile,
    dp_quantile_from_counts,
    dp_select_categories,
    dp_select_categories_from_counts,
    dp_select_categories_gaussian,
    dp_select_categories_gaussian_from_counts,
    grid_below_counts,
    public_grid,
)
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import UserError
from dpstudio.plan import compile_plan
from dpstudio.plan.domains import (
    BoundsEstimate,
    BoundsSummary,
    CategoryDiscovery,
    CategorySummary,
    _category_strings,
    domain_summaries,
    finish_domain_units,
    run_domain_units,
)
from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Mechanism, Params, Recipe, ReleaseSpec

# --------------------------------------------------------------------------- data


def _frame(n: int, seed: int) -> pd.DataFrame:
    """Mixed columns with missing values, duplicates, values outside the search ranges, floats
    that are integral in some rows only, and -0.0 beside 0.0."""
    g = np.random.default_rng(seed)
    x = g.choice([-3.0, 0.0, 0.5, 7.25, 12.0, 40.0, 49.9, 50.0, 80.0, np.nan], n)
    ints = pd.array(g.integers(-5, 60, n), dtype="Int64")
    ints[g.random(n) < 0.15] = pd.NA
    text = g.choice(np.array(["a", "b", "c", "d", "e", "", "Zz", "b "], dtype=object), n)
    text[g.random(n) < 0.15] = None
    fint = g.choice([1.0, 2.0, 3.0, -0.0, 0.0, 7.0, 10.0, np.nan], n)
    fmix = g.choice([1.0, 2.0, 0.0, -0.0, 3.0, 10.0, np.nan], n)
    fmix[g.random(n) < 0.08] = 1.5  # integral batches and non-integral ones
    return pd.DataFrame(
        {
            "x": x,
            "xi": ints,
            "c": pd.Series(text, dtype="str"),
            "fi": fint,
            "fm": fmix,
            "k": g.integers(0, 6, n),
        }
    )


def _pieces(frame: pd.DataFrame, cuts: list[int]) -> list[tuple[int, pd.DataFrame]]:
    """``frame`` cut before each position in ``cuts``: (first row number, piece) in row order
    (pieces may be empty)."""
    edges = [0, *sorted(cuts), len(frame)]
    return [(a, frame.iloc[a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _merge_in_order(summaries: list, order: list[int], tree: bool):
    """Merge ``summaries`` in the given order: left to right, or pairwise as a tree."""
    items = [summaries[i] for i in order]
    if not tree:
        out = items[0]
        for s in items[1:]:
            out = out.merge(s)
        return out
    while len(items) > 1:
        items = [items[i].merge(items[i + 1]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


MECHANISMS = {
    "bounds x": BoundsEstimate("x", 1.0, 0.0, 50.0, False),
    "bounds xi": BoundsEstimate("xi", 1.0, 0.0, 40.0, True),
    "text, no list": CategoryDiscovery("c", 1.0, 1e-5, None),
    "text, list": CategoryDiscovery("c", 1.0, 0.0, ("a", "b", "Zz", "q", "")),
    "integral floats, no list": CategoryDiscovery("fi", 1.0, 1e-5, None),
    "integral floats, list": CategoryDiscovery("fi", 1.0, 0.0, ("1", "2", "0", "-0.0", "1.0", "7")),
    "mixed floats, no list": CategoryDiscovery("fm", 1.0, 1e-5, None),
    "mixed floats, list": CategoryDiscovery("fm", 1.0, 0.0, ("1", "1.0", "1.5", "0.0", "-0.0", "0", "10.0")),
    "integers, no list": CategoryDiscovery("k", 1.0, 1e-5, None),
    "integers, list": CategoryDiscovery("k", 1.0, 0.0, ("0", "1", "5", "9")),
}


def _expected_reads(mech, frame: pd.DataFrame):
    """What the in-memory estimators read from the whole frame (the code before summaries)."""
    if isinstance(mech, BoundsEstimate):
        x = frame[mech.column].to_numpy(dtype=np.float64, na_value=np.nan)
        x = np.sort(np.clip(x[~np.isnan(x)], mech.search_low, mech.search_high))
        grid = public_grid(mech.search_low, mech.search_high, integer=mech.integer)
        return np.searchsorted(x, grid, side="left"), x.size
    strings = _category_strings(frame[mech.column].dropna())
    if mech.candidates:
        return candidate_counts(strings, list(mech.candidates))
    vc = pd.Series(strings).value_counts(sort=False)
    return list(zip(vc.index.tolist(), vc.tolist(), strict=True))


def _reads(summary):
    if isinstance(summary, BoundsSummary):
        return summary.below, summary.n
    counts = summary.category_counts()
    return counts if isinstance(counts, np.ndarray) else list(counts.items())


def _assert_same_reads(a, b):
    if isinstance(a, tuple):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


# --------------------------------------------------------------------------- batch-split invariance


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_the_one_pass_summary_holds_what_the_estimators_read(name):
    mech = MECHANISMS[name]
    for seed in range(3):
        frame = _frame(300, seed)
        summary = mech.summary().add(frame)
        _assert_same_reads(_reads(summary), _expected_reads(mech, frame))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    n=st.integers(0, 80),
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(0, 80), max_size=6),
    order_seed=st.integers(0, 2**16),
    tree=st.booleans(),
)
def test_summaries_do_not_depend_on_the_batches(n, seed, cuts, order_seed, tree):
    """Random split points (empty pieces included): adding the pieces in order, or summarising
    each apart (given its first row's position) and merging them out of order, gives the
    summary of one pass over the whole frame."""
    frame = _frame(n, seed)
    pieces = _pieces(frame, [min(c, n) for c in cuts])
    order = list(np.random.default_rng(order_seed).permutation(len(pieces)))
    for name, mech in MECHANISMS.items():
        whole = mech.summary().add(frame)
        sequential = mech.summary()
        for _, piece in pieces:
            sequential.add(piece)
        assert sequential == whole, name
        apart = [mech.summary().add(piece, start=start) for start, piece in pieces]
        merged = _merge_in_order(apart, order, tree)
        assert merged == whole, name
        _assert_same_reads(_reads(merged), _reads(whole))
        # Dask-style positions: only their order matters
        spaced = [mech.summary().add(piece, start=i * 2**40) for i, (_, piece) in enumerate(pieces)]
        _assert_same_reads(_reads(_merge_in_order(spaced, order, not tree)), _reads(whole))


def test_without_positions_the_counts_still_add_up():
    """Summaries of pieces built apart without positions, merged in any order: the same counts
    per value (only the order of the values, which orders the noise draws, may differ)."""
    frame = _frame(200, 4)
    pieces = _pieces(frame, [30, 31, 90, 150])
    for name, mech in MECHANISMS.items():
        if not isinstance(mech, CategoryDiscovery) or mech.candidates:
            continue
        whole = dict(mech.summary().add(frame).category_counts())
        apart = [mech.summary().add(p) for _, p in pieces]
        merged = _merge_in_order(apart, [3, 0, 4, 2, 1], tree=True)
        assert dict(merged.category_counts()) == whole, name
        # positions tie across such pieces; the order (hence the noise) still does not depend on
        # the order of the merges
        again = _merge_in_order(apart, [1, 4, 2, 0, 3], tree=False)
        assert list(again.category_counts().items()) == list(merged.category_counts().items()), name


def test_a_float_column_is_written_as_integers_only_if_every_value_is():
    """'1' vs '1.0' is decided by the whole column, not by each batch."""
    mech = CategoryDiscovery("f", 1.0, 1e-5, None)
    listed = CategoryDiscovery("f", 1.0, 0.0, ("1", "1.0", "1.5", "0", "0.0", "-0.0"))
    integral = pd.DataFrame({"f": [1.0, -0.0, 1.0, 0.0, np.nan]})
    mixed = pd.DataFrame({"f": [1.5, np.nan]})
    s = mech.summary().add(integral)
    assert s.category_counts() == {"1": 2, "0": 2}
    s.add(mixed)
    assert s.category_counts() == {"1.0": 2, "-0.0": 1, "0.0": 1, "1.5": 1}
    np.testing.assert_array_equal(listed.summary().add(integral).category_counts(), [2, 0, 0, 2, 0, 0])
    both = listed.summary().add(mixed).merge(listed.summary().add(integral, start=-5))
    np.testing.assert_array_equal(both.category_counts(), [0, 2, 1, 0, 1, 1])


def test_batches_with_numbers_in_one_and_text_in_another_are_refused():
    mech = CategoryDiscovery("f", 1.0, 1e-5, None)
    s = mech.summary().add(pd.DataFrame({"f": [1.0, 2.0]}))
    s.add(pd.DataFrame({"f": pd.Series([None], dtype=object)}))  # nothing present: nothing to compare
    with pytest.raises(ValueError, match="numbers"):
        s.add(pd.DataFrame({"f": ["a"]}))
    with pytest.raises(ValueError, match="numbers"):
        s.merge(mech.summary().add(pd.DataFrame({"f": ["a"]})))
    with pytest.raises(ValueError, match="candidate"):
        s.merge(CategoryDiscovery("f", 1.0, 0.0, ("1",)).summary())
    with pytest.raises(ValueError, match="grid"):
        BoundsEstimate("x", 1.0, 0.0, 50.0, False).summary().merge(BoundsEstimate("x", 1.0, 0.0, 60.0, False).summary())


def test_summaries_survive_a_pickle_round_trip():
    frame = _frame(150, 9)
    for name, mech in MECHANISMS.items():
        s = mech.summary().add(frame.iloc[:70])
        back = pickle.loads(pickle.dumps(s))
        assert back == s, name
        back.add(frame.iloc[70:])
        assert back == mech.summary().add(frame), name
        assert s != back or len(frame) == 70, name  # the copy is independent of the original


# --------------------------------------------------------------------------- the engine's split


def test_quantiles_and_bounds_from_counts_draw_what_the_values_draw():
    x = np.random.default_rng(1).normal(40, 10, 2000)
    for seed in range(4):
        for kw in ({}, {"n_bins": 500}, {"integer": True}):
            grid = public_grid(0, 100, **kw)
            below = grid_below_counts(x[:700], grid) + grid_below_counts(x[700:], grid)
            a = dp_quantile(x, [0.1, 0.5, 0.9], epsilon=0.3, low=0, high=100, rng=RandomSource(seed), **kw)
            b = dp_quantile_from_counts(below, x.size, [0.1, 0.5, 0.9], epsilon=0.3, grid=grid, rng=RandomSource(seed))
            np.testing.assert_array_equal(a, b)
            one = dp_quantile_from_counts(below, x.size, 0.5, epsilon=0.3, grid=grid, rng=RandomSource(seed))
            assert isinstance(one, float)
            lo, hi, loss = dp_bounds(x, epsilon=1.0, coarse_low=0, coarse_high=100, rng=RandomSource(seed), **kw)
            lo2, hi2, loss2 = dp_bounds_from_counts(
                below, x.size, epsilon=1.0, coarse_low=0, coarse_high=100, rng=RandomSource(seed), **kw
            )
            assert (lo, hi) == (lo2, hi2) and loss == loss2
    with pytest.raises(ValueError, match="shape"):
        dp_quantile_from_counts(np.zeros(3, np.int64), 0, 0.5, epsilon=1.0, grid=[0.0, 1.0], rng=RandomSource(0))
    with pytest.raises(UserError):
        dp_quantile_from_counts(np.zeros(2, np.int64), 0, 0.5, epsilon=0.0, grid=[0.0, 1.0], rng=RandomSource(0))
    with pytest.raises(UserError, match="missing"):
        grid_below_counts([1.0, np.nan], [0.0, 1.0])


def test_grid_counts_clip_to_the_public_range():
    grid = np.array([0.0, 1.0, 2.0])
    np.testing.assert_array_equal(grid_below_counts([-5.0, 0.0, 0.5, 2.0, 9.0], grid), [0, 3, 3])
    np.testing.assert_array_equal(grid_below_counts([], grid), [0, 0, 0])


def test_category_selection_from_counts_draws_what_the_values_draw():
    g = np.random.default_rng(2)
    vals = g.choice([f"v{i}" for i in range(50)], size=300, p=np.r_[np.full(25, 0.032), np.full(25, 0.008)])
    cands = [f"v{i}" for i in range(60)]
    listed = candidate_counts(vals, cands)
    found = category_counts(vals)
    assert list(found) == list(dict.fromkeys(vals))  # order of first appearance
    for seed in range(6):
        for noise in ("laplace", "gaussian"):
            a = dp_select_categories(
                vals, epsilon=0.5, delta=1e-6, rng=RandomSource(seed), candidates=cands, noise=noise
            )
            b = dp_select_categories_from_counts(
                listed, epsilon=0.5, delta=1e-6, rng=RandomSource(seed), candidates=cands, noise=noise
            )
            c = dp_select_categories_from_counts(
                dict(zip(cands, listed.tolist(), strict=True)),
                epsilon=0.5,
                delta=1e-6,
                rng=RandomSource(seed),
                candidates=cands,
                noise=noise,
            )
            assert a == b == c
        a = dp_select_categories(vals, epsilon=1.0, delta=1e-3, rng=RandomSource(seed))
        b = dp_select_categories_from_counts(found, epsilon=1.0, delta=1e-3, rng=RandomSource(seed))
        assert a == b
        for cl in (cands, None):
            a = dp_select_categories_gaussian(
                vals, sigma=2.0, delta=1e-3, rng=RandomSource(seed), candidates=cl, selection_delta=1e-4
            )
            b = dp_select_categories_gaussian_from_counts(
                listed if cl else found,
                sigma=2.0,
                delta=1e-3,
                rng=RandomSource(seed),
                candidates=cl,
                selection_delta=1e-4,
            )
            assert a == b


def test_the_noise_order_of_partition_selection_matters():
    """Why the summaries keep the order of first appearance: the same counts in another order
    give another list for some seed, so equality with the in-memory release is not vacuous."""
    counts = {f"v{i}": 12 for i in range(40)}
    reordered = dict(reversed(list(counts.items())))
    differs = [
        dp_select_categories_from_counts(counts, epsilon=1.0, delta=1e-3, rng=RandomSource(s))[0]
        != dp_select_categories_from_counts(reordered, epsilon=1.0, delta=1e-3, rng=RandomSource(s))[0]
        for s in range(5)
    ]
    assert any(differs)


def test_counts_from_a_summary_are_checked():
    with pytest.raises(ValueError, match="candidates"):
        dp_select_categories_from_counts([1, 2], epsilon=1.0, delta=0.0, rng=RandomSource(0), candidates=["a"])
    with pytest.raises(ValueError, match="map"):
        dp_select_categories_from_counts([1, 2], epsilon=1.0, delta=1e-3, rng=RandomSource(0))
    with pytest.raises(ValueError, match=">= 1"):
        dp_select_categories_from_counts({"a": 0}, epsilon=1.0, delta=1e-3, rng=RandomSource(0))
    with pytest.raises(UserError, match="duplicates"):
        dp_select_categories_from_counts([1, 2], epsilon=1.0, delta=0.0, rng=RandomSource(0), candidates=["a", "a"])


# --------------------------------------------------------------------------- finish == in-memory run


def _col(name, type_, role, domain, mech=None):
    return Column(
        name,
        type_,
        role,
        domain=domain,
        mechanism=Mechanism(mech) if mech else None,
        type_source="confirmed",
        role_source="confirmed",
    )


def _recipe(rtype, cols, eps, options=None):
    return Recipe(InputSpec("x.csv"), ReleaseSpec(rtype, Params.of(options)), tuple(cols), Budget(eps, 1e-6))


def _dp_num(low, high, eps=0.3):
    return Domain("numeric", source="dp", cost=Cost(eps), search_low=low, search_high=high)


def _dp_cats(eps, delta=0.0, candidates=None, other=None):
    return Domain("categorical", source="dp", cost=Cost(eps, delta), candidates=candidates, other=other)


RECIPES = {
    # Laplace: bounds, noisy candidate counts, partition selection
    "record": _recipe(
        "record",
        [
            _col("x", "float", "sensitive", _dp_num(0.0, 50.0), "laplace"),
            _col("xi", "integer", "sensitive", _dp_num(0.0, 40.0), "laplace"),
            _col("c", "categorical", "sensitive", _dp_cats(1.0, 1e-5), "rr"),
            _col("fi", "categorical", "sensitive", _dp_cats(0.5, candidates=("1", "2", "0", "7", "3")), "rr"),
            _col("fm", "categorical", "sensitive", _dp_cats(2.0, 1e-5), "rr"),
            _col("k", "categorical", "sensitive", _dp_cats(0.4, candidates=("0", "1", "2", "5", "9"), other="9"), "rr"),
        ],
        eps=2.0,
    ),
    # Gaussian (zCDP) estimates of a synthetic release, with and without candidate lists
    "synthetic": _recipe(
        "synthetic",
        [
            _col("x", "float", "sensitive", _dp_num(0.0, 50.0, eps=0.1)),
            _col("c", "categorical", "sensitive", _dp_cats(1.0, 1e-7)),
            _col("fm", "categorical", "sensitive", _dp_cats(0.5, candidates=("1.0", "1.5", "0.0", "-0.0", "2.0"))),
            _col("fi", "categorical", "sensitive", _dp_cats(1.0, 1e-7)),
        ],
        eps=3.0,
        options={"method": "mst"},
    ),
}


def _outcome(run):
    """``(recipe, notes, names drawn)``, or the error's text (the same errors must come out)."""
    drawn: dict = {}
    try:
        recipe, notes = run(drawn)
    except UserError as e:
        return ("error", str(e))
    return recipe, notes, {k: id(v) for k, v in drawn.items()}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_finishing_from_batches_is_the_in_memory_release(name):
    plan = compile_plan(RECIPES[name])
    estimates = [u for u in plan.units if u.kind == "domain" and u.mechanism is not None]
    assert len(estimates) == len(RECIPES[name].columns)
    frame = _frame(400, 11)
    pieces = _pieces(frame, [0, 57, 58, 200, 333])
    order = [4, 1, 5, 0, 3, 2]
    kept_some = 0
    for seed in range(8):
        whole = _outcome(lambda d, s=seed: run_domain_units(plan.recipe, plan.units, frame, RandomSource(s), d))
        # one summary per unit and piece, shipped through pickle and merged out of order
        per_piece = []
        for start, piece in pieces:
            sums = domain_summaries(plan.recipe, plan.units)
            assert list(sums) == [u.name for u in estimates]  # one per estimate, in plan order
            for s in sums.values():
                s.add(piece, start=start)
            per_piece.append(pickle.loads(pickle.dumps(sums)))
        merged = {u.name: _merge_in_order([p[u.name] for p in per_piece], order, tree=True) for u in estimates}
        streamed = _outcome(
            lambda d, s=seed, m=merged: finish_domain_units(plan.recipe, plan.units, m, RandomSource(s), d)
        )
        assert streamed == whole, seed
        if whole[0] != "error":
            kept_some += 1
            assert set(whole[1]) == {f"dp_domain:{c.name}" for c in RECIPES[name].columns}
    assert kept_some >= 4  # most seeds release (an error is compared too, but is not the point)


def test_run_domain_units_reads_the_frame_once_through_the_summaries(monkeypatch):
    """The in-memory release is the summaries over the one frame, then the same finish."""
    import dpstudio.plan.domains as plan_domains

    plan = compile_plan(RECIPES["record"])
    frame = _frame(400, 3)
    added: list = []
    real = {cls: cls.add for cls in (BoundsSummary, CategorySummary)}
    for cls in real:

        def add(self, batch, start=None, _real=real[cls]):
            added.append((self.column, len(batch)))
            return _real(self, batch, start)

        monkeypatch.setattr(cls, "add", add)
    monkeypatch.setattr(plan_domains, "_category_strings", None)  # not read any more
    recipe, notes = run_domain_units(plan.recipe, plan.units, frame, RandomSource(1), {})
    assert added == [(c.name, 400) for c in RECIPES["record"].columns]
    assert recipe.column("fm").domain.categories == tuple(notes["dp_domain:fm"])
