"""Graphical-model estimator of AIM (Private-PGM): junction tree, belief propagation,
estimation from marginals, marginals of any attribute set, ancestral sampling."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from dpstudio.engine.synth.pgm import (
    MarkovModel,
    Measurement,
    downward_closure,
    eliminate,
    estimate,
    junction_tree,
    model_size,
    triangulate,
)


def _joint(model: MarkovModel) -> np.ndarray:
    """Brute-force joint (probabilities) of a small model from its potentials."""
    sz = model.sizes
    logp = np.zeros(sz)
    letters = list(range(len(sz)))
    for r, t in model.theta.items():
        shape = [sz[a] if a in r else 1 for a in letters]
        logp = logp + t.reshape(shape)
    for a, z in model.zeros.items():
        shape = [sz[b] if b == a else 1 for b in letters]
        logp = logp + np.where(z, -np.inf, 0.0).reshape(shape)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def _brute_marginal(joint: np.ndarray, cl) -> np.ndarray:
    axes = tuple(a for a in range(joint.ndim) if a not in cl)
    return joint.sum(axis=axes)


CYCLIC = [
    [(0, 1), (1, 2), (2, 0)],  # a triangle
    [(0, 1), (1, 2), (2, 3), (3, 0)],  # a 4-cycle: needs a fill edge
    [(0, 1, 2), (2, 3), (3, 4), (4, 0), (1, 4)],
    [(0, 1), (2, 3), (3, 4), (4, 2)],  # two components
]


@pytest.mark.parametrize("cliques", CYCLIC)
def test_junction_tree_has_the_running_intersection_property(cliques):
    sizes = [2, 3, 4, 2, 3]
    jt = junction_tree(sizes, cliques)
    # every clique is covered
    for c in cliques:
        assert any(set(c) <= set(k) for k in jt.cliques)
    # running intersection: the cliques holding an attribute form a connected subtree
    for a in {x for c in cliques for x in c}:
        holders = [k for k, c in enumerate(jt.cliques) if a in c]
        tops = [k for k in holders if jt.parent[k] < 0 or a not in jt.cliques[jt.parent[k]]]
        assert len(tops) == 1
    # separators are the intersections with the parent
    for k, c in enumerate(jt.cliques):
        if jt.parent[k] >= 0:
            assert set(jt.sep[k]) == set(c) & set(jt.cliques[jt.parent[k]]) and jt.sep[k]
    assert jt.size == sum(math.prod(sizes[a] for a in c) for c in jt.cliques)
    assert model_size(sizes, cliques) == jt.size
    # the triangulation of a 4-cycle adds exactly one chord: two cliques of three
    if len(cliques) == 4 and len(cliques[0]) == 2 and cliques[3] == (3, 0):
        assert sorted(len(c) for c in triangulate(sizes, cliques)) == [3, 3]


@pytest.mark.parametrize("cliques", CYCLIC)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_belief_propagation_matches_brute_force(cliques, seed):
    gen = np.random.default_rng(seed)
    sizes = [2, 3, 4, 2, 3]
    pots = {tuple(sorted(c)): gen.normal(0, 1.5, [sizes[a] for a in sorted(c)]) for c in cliques}
    zeros = {1: np.array([False, True, False]), 4: np.array([False, False, True])} if seed == 2 else None
    model = MarkovModel(sizes, pots.keys(), 1000.0, zeros, pots)
    joint = _joint(model)
    for k, c in enumerate(model.jt.cliques):
        assert np.allclose(model.marg[k] / 1000.0, _brute_marginal(joint, c), atol=1e-12)
    # any marginal, inside a clique or across the tree, and across components
    d = len(sizes)
    for cl in [(0,), (0, 2), (1, 3), (0, 3, 4), (1, 2, 3, 4), tuple(range(d))]:
        assert np.allclose(model.marginal(cl) / 1000.0, _brute_marginal(joint, cl), atol=1e-12)
    if zeros:
        assert np.all(model.marginal((1,))[1] == 0) and np.all(model.marginal((4,))[2] == 0)


def test_eliminate_is_a_sum_of_products():
    gen = np.random.default_rng(4)
    sizes = [2, 3, 2, 4]
    f1, f2, f3 = gen.random((2, 3)), gen.random((3, 2)), gen.random((2, 4))
    full = np.einsum("ab,bc,cd->abcd", f1, f2, f3)
    got = eliminate([((0, 1), f1), ((1, 2), f2), ((2, 3), f3)], (0, 3), sizes)
    assert np.allclose(got, full.sum(axis=(1, 2)))


def test_downward_closure():
    assert downward_closure([(2, 0), (1, 2)]) == [(0,), (1,), (2,), (0, 2), (1, 2)]


@pytest.mark.parametrize("cliques", [[(0, 1), (1, 2), (2, 0)], [(0, 1), (1, 2), (2, 3), (3, 0)]])
def test_estimation_from_exact_marginals_reproduces_them(cliques):
    gen = np.random.default_rng(7)
    sizes = [3, 2, 4, 3]
    # a random joint in the exponential family of the cliques (so the marginals are realisable)
    pots = {tuple(sorted(c)): gen.normal(0, 1.0, [sizes[a] for a in sorted(c)]) for c in cliques}
    truth = MarkovModel(sizes, pots.keys(), 5000.0, None, pots)
    meas = [Measurement(tuple(sorted(c)), truth.marginal(c), 1.0) for c in cliques]
    meas += [Measurement((a,), truth.marginal((a,)), 1.0) for a in range(len(sizes))]
    model, step, loss = estimate(sizes, meas, 5000.0, iters=3000)
    for m in meas:
        assert np.abs(model.marginal(m.clique) - m.y).max() < 0.5  # counts out of 5000
    assert loss < 1.0
    # a warm start continues from there: the loss cannot get worse
    model2, _, loss2 = estimate(sizes, meas, 5000.0, warm=model, iters=20, step=step)
    assert loss2 <= loss + 1e-9


@pytest.mark.parametrize("systematic", [True, False])
def test_sampling_frequencies_match_the_model_and_skip_structural_zeros(systematic):
    gen = np.random.default_rng(11)
    sizes = [3, 4, 2, 3]
    cliques = [(0, 1), (1, 2), (2, 3), (3, 0)]
    pots = {c: gen.normal(0, 1.0, [sizes[a] for a in c]) for c in cliques}
    zeros = {1: np.array([False, False, True, False]), 3: np.array([True, False, False])}
    model = MarkovModel(sizes, cliques, 1.0, zeros, pots)
    n = 60000
    codes = model.sample(n, np.random.default_rng(12), systematic=systematic)
    assert codes.shape == (n, 4) and codes.min() >= 0
    assert not np.any(codes[:, 1] == 2) and not np.any(codes[:, 3] == 0)  # structural zeros
    # every 2-way cell count within a binomial tail bound (two-sided, Bonferroni over all cells
    # at total level 1e-9: cannot flake for a correct sampler with this fixed seed)
    pairs = [(0, 1), (1, 2), (2, 3), (0, 3), (0, 2), (1, 3)]
    n_cells = sum(sizes[a] * sizes[b] for a, b in pairs)
    alpha = 1e-9 / n_cells
    for a, b in pairs:
        p = model.marginal((a, b))
        cnt = np.zeros((sizes[a], sizes[b]))
        np.add.at(cnt, (codes[:, a], codes[:, b]), 1)
        lo = binom.ppf(alpha / 2, n, p)
        hi = binom.isf(alpha / 2, n, p)
        assert np.all(cnt >= lo) and np.all(cnt <= hi), (a, b)
    if systematic:  # the root clique's counts are n p rounded up or down
        root = model.jt.order[0]
        c = model.jt.cliques[root]
        flat = np.ravel_multi_index(tuple(codes[:, a] for a in c), [sizes[a] for a in c])
        cnt = np.bincount(flat, minlength=model.marg[root].size)
        assert np.all(np.abs(cnt - n * model.marg[root].ravel()) < 1.0 + 1e-9)
    # the model's zeros are its marginals' zeros
    assert np.all(model.marginal((1,))[2] == 0)


def test_a_uniform_that_rounds_up_to_one_never_draws_a_trailing_structural_zero():
    """u = (k - 1 + v)/k rounds to exactly 1.0 for v just below 1; the draw must then stay on the
    last cell with weight, not fall on a trailing zero-weight (hidden) cell."""
    from dpstudio.engine.synth.pgm import _inverse_cdf

    class AlmostOne:
        def random(self, size):
            return np.full(size, np.nextafter(1.0, 0.0))

    table = np.array([[0.3, 0.7, 0.0]])  # the last cell is a structural zero
    for k in (2, 3, 5, 1000):
        drawn = _inverse_cdf(table, np.zeros(k, dtype=np.int64), AlmostOne(), systematic=True)
        assert drawn.max() <= 1, k
