"""Finite-difference checks of the hand-written backprop (generator incl. bn + softmax blocks,
the embedding loss and the critic)."""

import numpy as np
import pytest

from dpstudio.engine.synth.mlp import BlockHeads, Generator
from dpstudio.engine.synth.pearl import EmbeddingLoss, EmbeddingSynthesizer


def _fd(f, x, idx, h=1e-6):
    old = x[idx]
    x[idx] = old + h
    a = f()
    x[idx] = old - h
    b = f()
    x[idx] = old
    return (a - b) / (2 * h)


def test_generator_gradients_finite_difference():
    gen = np.random.default_rng(0)
    heads = BlockHeads(3, [4, 2, 5])
    net = Generator(6, 7, heads, gen, dtype=np.float64)
    inp = gen.standard_normal((9, 6))
    target = gen.standard_normal((9, heads.dim))

    def loss():
        out = net.forward(inp)
        return float(((out - target) ** 2).sum() + (out[:, 5:] ** 3).sum())

    out = net.forward(inp)
    grads = net.backward(2 * (out - target) + np.concatenate([np.zeros((9, 5)), 3 * out[:, 5:] ** 2], axis=1))
    for name, g in grads.items():
        p = net.p[name]
        for idx in list(np.ndindex(p.shape))[:: max(1, p.size // 15)]:
            num = _fd(loss, p, idx)
            assert abs(num - g[idx]) <= 1e-5 * max(1.0, abs(num)), (name, idx, num, g[idx])


def test_block_softmax_is_normalised_and_stable():
    heads = BlockHeads(2, [3, 1, 4])
    a = np.random.default_rng(1).standard_normal((5, heads.dim)).astype(np.float32)
    a[0, 2:5] -= 500.0  # a whole block far below the row max: fallback path
    a[1, 6:] += 80.0
    out = heads.forward(a.copy())  # forward works in place on its argument
    assert np.all(np.isfinite(out))
    sums = np.add.reduceat(out[:, 2:], heads.rel, axis=1)
    assert np.allclose(sums, 1.0, atol=1e-5)
    assert np.allclose(out[:, :2], np.tanh(a[:, :2]))


def test_embedding_loss_gradient_wrt_generator_output():
    """PEARL's training loss object: value and dL/d(out) against finite differences, with
    L = sum_i alpha_i sum_c |E_hat_c - E_c|^2 (cos and sin parts), rows sorted by class."""
    gen = np.random.default_rng(2)
    B, D, k, C = 7, 5, 6, 2
    w = gen.standard_normal((k, D))
    counts = np.array([3, 4])
    y = np.repeat(np.arange(C), counts)
    yoh = np.eye(C)[y]
    e = gen.standard_normal((2 * k, C)) * 0.1
    alpha = gen.uniform(0.5, 2, k)
    out = gen.standard_normal((B, D))
    inv = 1.0 / (B * np.sqrt(k))
    obj = EmbeddingLoss(w, e, counts, dtype=np.float64)

    def loss():  # written independently of EmbeddingLoss, straight from the definition
        u = out @ w.T
        rc = np.cos(u).T @ yoh * inv - e[:k]
        rs = np.sin(u).T @ yoh * inv - e[k:]
        return float((alpha[:, None] * (rc**2 + rs**2)).sum())

    r = obj.residual(out)
    assert abs(EmbeddingLoss.value(r, alpha) - loss()) < 1e-12
    dout = obj.gradient(r, alpha).copy()
    for idx in np.ndindex(out.shape):
        assert abs(_fd(loss, out, idx) - dout[idx]) < 1e-7


def test_critic_gradient_finite_difference():
    gen = np.random.default_rng(3)
    k, D = 12, 4
    t2 = gen.standard_normal((k, D)) ** 2
    r = gen.uniform(0, 1, k)
    l0 = 0.5 * t2.sum(axis=1)
    log_s = gen.normal(0, 0.3, D)
    _, grad = EmbeddingSynthesizer.critic_objective(log_s, t2, r, l0)
    for d in range(D):
        num = _fd(lambda: EmbeddingSynthesizer.critic_objective(log_s, t2, r, l0)[0], log_s, d)
        assert abs(num - grad[d]) < 1e-6 * max(1, abs(num))


def test_embedding_loss_over_shards_adds_up_to_the_whole_batch():
    """Two shards of a class-sorted batch (one shard holding parts of two classes and an
    empty class): their class sums add up to the whole batch's, and each shard's gradient
    rows are the whole batch's rows."""
    gen = np.random.default_rng(5)
    k, D = 40, 9
    counts = np.array([700, 1, 0, 411])
    w = gen.standard_normal((k, D))
    e = gen.standard_normal((2 * k, len(counts))) * 0.05
    out = gen.uniform(-1, 1, (int(counts.sum()), D)).astype(np.float32)
    alpha = gen.uniform(0.5, 2, k).astype(np.float32)
    whole = EmbeddingLoss(w, e, counts)
    r1 = whole.residual(out)
    g1 = whole.gradient(r1, alpha).copy()
    assert len(whole.pieces) > 2  # the batch really is cut into pieces
    y = np.repeat(np.arange(len(counts)), counts)
    cut = 600
    parts = [
        EmbeddingLoss(w, e, np.bincount(y[sl], minlength=len(counts)), batch=len(y))
        for sl in (slice(0, cut), slice(cut, None))
    ]
    sums = parts[0].class_sums(out[:cut]) + parts[1].class_sums(out[cut:])
    r2 = parts[0].residual_from(sums)
    np.testing.assert_allclose(r2, r1, atol=1e-6)
    g2 = np.concatenate([parts[0].gradient(r1, alpha), parts[1].gradient(r1, alpha)])
    np.testing.assert_allclose(g2, g1, rtol=1e-5, atol=1e-9)
    # and the pieces add up to the plain formula
    u = out.astype(np.float64) @ w.T
    oh = np.eye(len(counts))[y]
    inv = 1.0 / (len(y) * np.sqrt(k))
    ref = np.concatenate([(np.cos(u).T @ oh).T, (np.sin(u).T @ oh).T], axis=1) * inv - e.T
    np.testing.assert_allclose(r1, ref, atol=2e-6)


def test_box_muller_normals():
    from scipy import stats

    from dpstudio.engine.synth.mlp import standard_normal_f32

    z = standard_normal_f32(np.random.default_rng(0), (2001, 3))
    assert z.shape == (2001, 3) and z.dtype == np.float32
    flat = z.ravel()
    assert stats.kstest(flat, "norm").pvalue > 1e-3
    # a broken transform (e.g. using only the cos half, or a wrong radius) fails this
    assert abs(flat.std() - 1.0) < 0.03 and abs(flat.mean()) < 0.04
    # halves are not copies of each other
    assert np.corrcoef(flat[: flat.size // 2], flat[flat.size // 2 : 2 * (flat.size // 2)])[0, 1] < 0.05


def test_block_softmax_matches_reference_on_both_shift_paths():
    """The common case shifts all logits by one scalar (the array max); a spread of 80 or
    more switches to per-block shifts.  Both must equal a plain per-block softmax."""
    heads = BlockHeads(1, [3, 2, 4])
    gen = np.random.default_rng(4)
    for spread in (3.0, 200.0):
        a = (gen.standard_normal((6, heads.dim)) * spread).astype(np.float64)
        out = heads.forward(a.copy())
        ref = np.empty_like(a)
        ref[:, 0] = np.tanh(a[:, 0])
        for start, size in zip(1 + heads.rel, heads.sizes, strict=True):
            blk = a[:, start : start + size]
            e = np.exp(blk - blk.max(axis=1, keepdims=True))
            ref[:, start : start + size] = e / e.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-300)


def test_critic_weights_mixed_to_the_minimum_effective_sample_size():
    from dpstudio.engine.synth.pearl import mix_to_min_ess

    k = 500
    gen = np.random.default_rng(6)
    peaked = np.exp(gen.standard_normal(k) * 3)
    peaked *= k / peaked.sum()  # mean 1, ESS far below k/2

    def ess(a):
        return a.sum() ** 2 / (a * a).sum()

    assert ess(peaked) < 0.1 * k
    for rho in (0.3, 0.5, 0.9):
        mixed = mix_to_min_ess(peaked, rho)
        assert ess(mixed) == pytest.approx(rho * k, rel=1e-9)  # exactly the floor: minimal mix
        assert mixed.mean() == pytest.approx(1.0)
        # still a mixture with uniform: the order of the weights is kept
        assert np.array_equal(np.argsort(mixed, kind="stable"), np.argsort(peaked, kind="stable"))
    flat = 1 + 0.1 * gen.standard_normal(k)
    flat *= k / flat.sum()
    np.testing.assert_array_equal(mix_to_min_ess(flat, 0.5), flat)  # already spread: untouched
    np.testing.assert_array_equal(mix_to_min_ess(peaked, 0.0), peaked)  # 0 switches it off
    with pytest.raises(ValueError):
        mix_to_min_ess(peaked, 1.5)


def test_bad_critic_floor_refused_before_any_release():
    with pytest.raises(ValueError, match="critic_min_ess"):
        EmbeddingSynthesizer(critic_min_ess=2.0)
