"""MarginalCounts (issue 20): exact, mergeable clique counts are the only view MST and AIM take
of the private data.  Split invariance, exact compression, fit(frame) == fit_counts(counts built
from batches), and block sampling of any size."""

import math
import pickle
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpstudio.engine.rng import RandomSource
from dpstudio.engine.synth import cells as cells_mod
from dpstudio.engine.synth.aim import AIMSynthesizer
from dpstudio.engine.synth.cells import draw_rows
from dpstudio.engine.synth.counts import FitsFromCounts, MarginalCounts
from dpstudio.engine.synth.encoding import ColumnSpec, TableSpec
from dpstudio.engine.synth.mst import MSTSynthesizer


def direct(x, clique, sizes):
    """Reference count of a clique, flattened in C order (np.ravel_multi_index)."""
    shape = [int(sizes[a]) for a in clique]
    if len(x) == 0:
        return np.zeros(math.prod(shape))
    idx = np.ravel_multi_index(tuple(x[:, a] for a in clique), shape)
    return np.bincount(idx, minlength=math.prod(shape)).astype(np.float64)


@st.composite
def codes_and_cliques(draw):
    d = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 5), min_size=d, max_size=d))
    n = draw(st.integers(0, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    x = np.random.default_rng(seed).integers(0, sizes, size=(n, d))
    subsets = [tuple(a for a in range(d) if m >> a & 1) for m in range(1, 1 << d)]
    cliques = draw(st.lists(st.sampled_from(subsets), min_size=1, max_size=6))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    return sizes, cliques, x, cuts, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codes_and_cliques())
def test_counts_do_not_depend_on_the_batch_split(case):
    sizes, cliques, x, cuts, seed = case
    whole = MarginalCounts(sizes, cliques).add(x)
    pieces = np.split(x, cuts)  # includes empty pieces where cuts repeat or touch the ends
    in_order = MarginalCounts(sizes, cliques)
    for p in pieces:
        in_order.add(p)
    parts = [MarginalCounts(sizes, cliques).add(p) for p in pieces]
    order = np.random.default_rng(seed).permutation(len(parts))
    merged = MarginalCounts(sizes, cliques)
    for k in order:
        merged.merge(pickle.loads(pickle.dumps(parts[k])))  # as shipped between processes
    assert whole == in_order == merged
    assert whole.n == in_order.n == merged.n == len(x)
    for c in whole.cliques:
        ref = direct(x, c, sizes)
        for acc in (whole, in_order, merged):
            got = acc.counts(c)
            assert got.dtype == np.float64
            assert np.array_equal(got, ref)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codes_and_cliques(), st.integers(0, 2**32 - 1))
def test_compressed_counts_equal_counting_the_compressed_codes(case, map_seed):
    sizes, cliques, x, _, _ = case
    gen = np.random.default_rng(map_seed)
    csizes = [int(gen.integers(1, s + 1)) for s in sizes]
    # a surjective-or-not map of each column's cells onto 0 .. csizes[j] - 1
    cmap = [gen.integers(0, cs, size=s) for s, cs in zip(sizes, csizes, strict=True)]
    acc = MarginalCounts(sizes, cliques).add(x)
    xc = np.column_stack([cmap[j][x[:, j]] for j in range(len(sizes))]) if len(x) else x
    for c in acc.cliques:
        assert np.array_equal(acc.compressed(c, cmap, csizes), direct(xc, c, csizes))


def test_subsets_of_a_listed_clique_are_answered_and_others_refused():
    x = np.array([[0, 1, 2], [1, 1, 0], [0, 0, 2], [1, 1, 2]])
    acc = MarginalCounts([2, 2, 3], [(0, 1, 2), (2,)]).add(x)
    assert np.array_equal(acc.counts((0, 2)), direct(x, (0, 2), [2, 2, 3]))
    assert np.array_equal(acc.counts((1,)), [1.0, 3.0])
    assert acc.nbytes == 2 * 2 * 3 * 8  # only the maximal clique is stored
    with pytest.raises(KeyError):
        acc.counts((2, 0))  # unsorted: not the C order the fits use
    only_pairs = MarginalCounts([2, 2, 3], [(0, 1)])
    with pytest.raises(KeyError):
        only_pairs.counts((1, 2))
    with pytest.raises(ValueError):
        only_pairs.add(np.array([[0, 2, 0]]))  # code outside column 1's two cells
    with pytest.raises(ValueError):
        only_pairs.add(np.zeros((3, 2), dtype=np.int64))  # wrong width
    with pytest.raises(ValueError):
        only_pairs.merge(MarginalCounts([2, 2, 3], [(0, 2)]))


def _frame(n=600, seed=3):
    """Mixed: categories with an unknown value and missing cells, numbers with missing cells,
    a wide amount column (log bins), a label."""
    g = np.random.default_rng(seed)
    a = g.integers(0, 5, n)
    b = np.where(g.random(n) < 0.8, a % 3, g.integers(0, 3, n))
    ca = np.array(list("pqrsX"))[a].astype(object)  # "X" is not a public category
    ca[g.random(n) < 0.1] = None
    num = np.clip(7.0 * b + g.normal(0, 3, n), 0, 30)
    num[g.random(n) < 0.07] = np.nan
    big = np.where(g.random(n) < 0.7, 0, g.integers(1, 50000, n)).astype(float)
    frame = pd.DataFrame(
        {"ca": ca, "num": num, "big": big, "cb": np.array(list("uvw"))[b], "y": ((a + b) % 2).astype(str)}
    )
    spec = TableSpec(
        (
            ColumnSpec.categorical("ca", "pqrs", missing=True),
            ColumnSpec.numeric("num", 0, 30, False, missing=True),
            ColumnSpec.numeric("big", 0, 99999, True),
            ColumnSpec.categorical("cb", "uvw"),
        ),
        ColumnSpec.categorical("y", ("0", "1")),
    )
    return frame, spec


def _record(fitted):
    return [(c.label, c.epsilon, c.delta, c.zcdp_rho, repr(sorted(c.details.items()))) for c in fitted.components]


SYNTHS: dict[str, Callable[[], MSTSynthesizer | AIMSynthesizer]] = {
    "mst": lambda: MSTSynthesizer(),
    "aim": lambda: AIMSynthesizer(iters=20, final_iters=50),
}


@pytest.mark.parametrize("method", sorted(SYNTHS))
def test_fit_counts_from_batches_is_the_in_memory_fit(method):
    frame, spec = _frame()
    synth = SYNTHS[method]()
    a = synth.fit(frame, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(5))
    layout = synth.layout(spec)
    # three batches of the same frame (one of them empty), merged out of order
    batches = [frame.iloc[:250], frame.iloc[250:250], frame.iloc[250:]]
    parts = [MarginalCounts(layout.sizes, synth.cliques_needed(spec)).add(layout.codes(b)) for b in batches]
    counts = parts[2].merge(parts[0]).merge(parts[1])
    assert counts.n == len(frame)
    b = synth.fit_counts(counts, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(5))
    assert _record(a) == _record(b)
    assert a.privacy_loss() == b.privacy_loss()
    assert a.noisy_one_way is not None and b.noisy_one_way is not None
    assert all(np.array_equal(p, q) for p, q in zip(a.noisy_one_way, b.noisy_one_way, strict=True))
    assert {k: v for k, v in a.info.items() if k != "fit_seconds"} == {
        k: v for k, v in b.info.items() if k != "fit_seconds"
    }
    pd.testing.assert_frame_equal(a.sample(300, RandomSource(9)), b.sample(300, RandomSource(9)), check_exact=True)


@pytest.mark.parametrize("method", sorted(SYNTHS))
def test_cliques_needed_are_public_and_checked(method):
    frame, spec = _frame()
    synth = SYNTHS[method]()
    other, _ = _frame(n=50, seed=99)
    assert isinstance(synth, FitsFromCounts)
    needed = synth.cliques_needed(spec)
    assert needed == synth.cliques_needed(spec)  # a function of the spec only
    assert all(list(c) == sorted(set(c)) for c in needed)
    layout = synth.layout(spec)
    short = MarginalCounts(layout.sizes, needed[: layout.d]).add(layout.codes(other))  # 1-ways only
    with pytest.raises(ValueError):
        synth.fit_counts(short, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(0))
    wrong = MarginalCounts(np.asarray(layout.sizes) + 1, needed)
    with pytest.raises(ValueError):
        synth.fit_counts(wrong, spec, epsilon=1.0, delta=1e-6, rng=RandomSource(0))


@pytest.mark.parametrize("method", sorted(SYNTHS))
def test_sampling_any_block_size(method):
    frame, spec = _frame()
    fitted = SYNTHS[method]().fit(frame, spec, epsilon=2.0, delta=1e-6, rng=RandomSource(1))
    names = [c.name for c in spec.all_columns]
    for n in (0, 1, 7):
        s = fitted.sample(n, RandomSource(100 + n))
        assert len(s) == n
        assert list(s.columns) == names
    big = fitted.sample(2000, RandomSource(4))
    one = fitted.sample(1, RandomSource(5))
    assert [str(t) for t in one.dtypes] == [str(t) for t in big.dtypes]
    assert set(big["cb"]) <= {"u", "v", "w"}  # never the hidden unknown cell
    assert set(big["ca"].dropna()) <= set("pqrs")


def test_chunked_draw_is_the_one_shot_draw(monkeypatch):
    gen = np.random.default_rng(0)
    table = gen.random((4, 6)) * (gen.random((4, 6)) < 0.7)
    table[2] = 0.0  # a row of weight 0 draws the last cell, as the one-shot rule does
    rows = gen.integers(0, 4, 1000)

    def one_shot(seed):
        cs = np.cumsum(table[rows], axis=1)
        u = np.random.default_rng(seed).random(len(cs)) * cs[:, -1]
        return np.minimum((cs < u[:, None]).sum(axis=1), cs.shape[1] - 1)

    monkeypatch.setattr(cells_mod, "_DRAW_CHUNK_CELLS", 6 * 37)  # chunks of 37 rows
    got = draw_rows(table, rows, np.random.default_rng(7))
    assert np.array_equal(got, one_shot(7))
    assert (table[rows, got][rows != 2] > 0).all()  # a cell of weight 0 is never drawn
    assert len(draw_rows(table, rows[:0], np.random.default_rng(7))) == 0
