"""Finite-difference checks of the hand-written backprop (generator incl. bn + softmax blocks,
the embedding loss and the critic)."""
import numpy as np

from dpstudio.engine.synth.mlp import BlockHeads, Generator
from dpstudio.engine.synth.pearl import EmbeddingSynthesizer


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
    a[0, 2:5] -= 500.0          # a whole block far below the row max: fallback path
    a[1, 6:] += 80.0
    out = heads.forward(a)
    assert np.all(np.isfinite(out))
    sums = np.add.reduceat(out[:, 2:], heads.rel, axis=1)
    assert np.allclose(sums, 1.0, atol=1e-5)
    assert np.allclose(out[:, :2], np.tanh(a[:, :2]))


def test_embedding_loss_gradient_wrt_generator_output():
    """The training step's dL/d(out) for L = sum_i alpha_i |E_hat - E|^2 (cos and sin parts)."""
    gen = np.random.default_rng(2)
    B, D, k, C = 7, 5, 6, 2
    w = gen.standard_normal((k, D))
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    yoh = np.eye(C)[y]
    e = gen.standard_normal((2 * k, C)) * 0.1
    alpha = gen.uniform(0.5, 2, k)
    out = gen.standard_normal((B, D))
    inv = 1.0 / (B * np.sqrt(k))

    def loss():
        u = out @ w.T
        rc = np.cos(u).T @ yoh * inv - e[:k]
        rs = np.sin(u).T @ yoh * inv - e[k:]
        return float((alpha[:, None] * (rc ** 2 + rs ** 2)).sum())

    u = out @ w.T
    cu, su = np.cos(u), np.sin(u)
    rc = cu.T @ yoh * inv - e[:k]
    rs = su.T @ yoh * inv - e[k:]
    gc = 2 * inv * alpha[:, None] * rc
    gs = 2 * inv * alpha[:, None] * rs
    du = -su * gc.T[y] + cu * gs.T[y]      # same algebra as PEARL's loop
    dout = du @ w
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
