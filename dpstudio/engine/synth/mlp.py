"""A small numpy MLP generator with hand-written backprop and Adam (no autograd, no torch).

Architecture (Liew et al. 2022; Harder et al. 2021, DP-MERF): ``[z, onehot(y)] -> fc -> bn -> relu -> fc -> bn -> relu
-> fc -> heads`` where the heads are ``tanh`` on the numeric coordinates and a softmax per
categorical block.  The per-block softmax uses segment reductions (``np.maximum.reduceat`` /
``np.add.reduceat`` over the column blocks) - no Python loop over blocks in the hot path.
Batch normalisation uses batch statistics (training mode) also when sampling, in batches
built like the training batches.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .shards import ShardCoroutine, run_local

#: the generator's arrays: float32 in training, float64 in the finite-difference tests
Floats = npt.NDArray[np.floating[Any]]
#: what the batch-norm forward keeps for the backward: (centred h, 1/sqrt(var + eps), g * inv)
_BNCache = tuple[Floats, Floats, Floats]


def standard_normal_f32(gen: np.random.Generator, shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
    """float32 N(0, 1) draws by Box-Muller from float32 uniforms.

    numpy's ziggurat draws one sample per C call (~20 ns each here); the generator needs
    B x z_dim fresh inputs every step, and this vectorised transform is several times faster.
    The input noise of the generator has no privacy role (post-processing), and float32
    uniforms only truncate the tails beyond ~5.8 sigma.
    """
    n = math.prod(shape)  # np.prod of a tuple costs ~50 us: it builds an array first
    m = (n + 1) // 2
    u = gen.random((2, m), dtype=np.float32)
    r, theta = u
    np.subtract(np.float32(1.0), r, out=r)  # (0, 1]: log is finite
    np.log(r, out=r)
    r *= np.float32(-2.0)
    np.sqrt(r, out=r)  # radius sqrt(-2 log(1 - u0))
    theta *= np.float32(2.0 * np.pi)
    z = np.empty(2 * m, dtype=np.float32)
    np.cos(theta, out=z[:m])
    z[:m] *= r
    np.sin(theta, out=z[m:])
    z[m:] *= r
    return z[:n].reshape(shape)


class BlockHeads:
    """tanh on the first ``n_num`` outputs, softmax on each contiguous block after them."""

    def __init__(self, n_num: int, sizes: npt.ArrayLike) -> None:
        self.n_num = int(n_num)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.rel = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.block_of = np.repeat(np.arange(len(self.sizes)), self.sizes)
        self.dim = self.n_num + int(self.sizes.sum())
        # block-membership matrix (n_cat_columns, n_blocks): segment sums as one small matmul
        self.member = (self.block_of[:, None] == np.arange(len(self.sizes))[None, :]).astype(np.float32)

    def forward(self, a: Floats) -> Floats:
        """Activations in place: ``a`` (the pre-activations, not needed afterwards) becomes the
        output, which saves a (B, D) buffer and a pass over it every step."""
        nn = self.n_num
        np.tanh(a[:, :nn], out=a[:, :nn])
        if self.sizes.size:
            lg = a[:, nn:]
            hi = lg.max()
            if hi - lg.min() < 80.0:
                # one scalar shift for the whole array (two fast reductions, not a per-row
                # max): every exp lies in [e^-80, 1], so no block sum under- or overflows
                e = np.subtract(lg, hi)
                np.exp(e, out=e)
            else:
                # logits spread wider: shift each block by its own max (segment reduction)
                mx = np.maximum.reduceat(lg, self.rel, axis=1)
                e = np.exp(lg - mx[:, self.block_of])
            s = e @ self.member  # (B, n_blocks) block sums, each >= e^-80
            # broadcast 1/s back to the block's columns with a tiny matmul (no fancy indexing)
            np.reciprocal(s, out=s)
            np.multiply(e, s @ self.member.T, out=lg)
        return a

    def backward(self, out: Floats, g: Floats) -> Floats:
        """Gradient w.r.t. the pre-activations; ``g`` is overwritten and returned."""
        nn = self.n_num
        t = out[:, :nn]
        g[:, :nn] *= 1.0 - t * t
        if self.sizes.size:
            p = out[:, nn:]
            gp = g[:, nn:]
            dot = (p * gp) @ self.member  # per-block sums (segment matmul)
            gp -= dot @ self.member.T
            gp *= p
        return g


class Adam:
    """Adam (Kingma & Ba 2015) updating the arrays of ``params`` in place; the update runs in
    preallocated scratch buffers, a handful of vector operations per array and step."""

    def __init__(
        self, params: dict[str, Floats], lr: float = 1e-2, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
    ) -> None:
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.tmp = {k: np.empty_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: dict[str, Floats], grads: dict[str, Floats], ascend: bool = False) -> None:
        self.t += 1
        b1, b2 = self.b1, self.b2
        c1 = 1.0 - b1**self.t
        c2 = 1.0 - b2**self.t
        lr = self.lr * np.sqrt(c2) / c1
        sign = 1.0 if ascend else -1.0
        for k, g in grads.items():
            m, v, t = self.m[k], self.v[k], self.tmp[k]
            m *= b1
            np.multiply(g, 1 - b1, out=t)
            m += t
            v *= b2
            np.multiply(g, g, out=t)
            t *= 1 - b2
            v += t
            np.sqrt(v, out=t)
            t += self.eps
            np.divide(m, t, out=t)
            t *= sign * lr
            params[k] += t


class Generator:
    """fc-bn-relu x2 + block heads, float32 by default.

    All parameters live in one flat array (``self.flat``; ``self.p`` holds views of it) and so
    do the gradients (``self.gflat`` / the dict returned by :meth:`backward`), so Adam updates
    every parameter with a handful of vector operations instead of a few per tensor.
    """

    BN_EPS = 1e-5
    BN_PARAMS = ("g1", "c1", "g2", "c2")

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        heads: BlockHeads,
        gen: np.random.Generator,
        dtype: type[np.floating[Any]] = np.float32,
    ) -> None:
        self.heads = heads
        self.dtype = dtype
        h = int(hidden)

        def lin(i: int, o: int) -> Floats:  # PyTorch default init: U(-1/sqrt(i), 1/sqrt(i))
            b = 1.0 / np.sqrt(i)
            return gen.uniform(-b, b, size=(i, o)).astype(dtype)

        init = {
            "W1": lin(in_dim, h),
            "g1": np.ones(h, dtype),
            "c1": np.zeros(h, dtype),
            "W2": lin(h, h),
            "g2": np.ones(h, dtype),
            "c2": np.zeros(h, dtype),
            "W3": lin(h, heads.dim),
            "b3": np.zeros(heads.dim, dtype),
        }
        total = sum(v.size for v in init.values())
        self.flat = np.empty(total, dtype=dtype)
        self.gflat = np.zeros(total, dtype=dtype)
        self.p: dict[str, Floats] = {}
        self.g: dict[str, Floats] = {}
        at = 0
        for name, v in init.items():
            self.p[name] = self.flat[at : at + v.size].reshape(v.shape)
            self.p[name][...] = v
            self.g[name] = self.gflat[at : at + v.size].reshape(v.shape)
            at += v.size
        self.ones = np.ones(0, dtype=dtype)
        #: forward -> backward: (inp, bn cache 1, r1, bn cache 2, r2, out)
        self.cache: tuple[Floats, _BNCache, Floats, _BNCache, Floats, Floats] | None = None

    def _ones(self, n: int) -> Floats:
        if self.ones.shape[0] != n:
            self.ones = np.ones(n, dtype=self.dtype)
        return self.ones

    def _bn_relu_fwd(
        self, h: Floats, g: Floats, c: Floats, eps: float, n: int
    ) -> ShardCoroutine[tuple[Floats, _BNCache]]:
        """BatchNorm (batch statistics) followed by ReLU; ``h`` is overwritten (centred).

        r = relu((h - mean) * a + c) with a = g / sqrt(var + eps); x-hat is never stored
        (it is (h - mean) / sqrt(var + eps), recomputed in closed form by the backward).
        A shard coroutine: the column sums are ``yield``ed and the totals over the ``n`` rows
        of the whole batch come back (see :mod:`.shards`)."""
        h -= (yield self._ones(h.shape[0]) @ h) / n
        var = (yield np.einsum("ij,ij->j", h, h)) / n
        inv = (1.0 / np.sqrt(var + eps)).astype(h.dtype)
        a = g * inv
        r = h * a
        r += c
        np.maximum(r, 0, out=r)
        return r, (h, inv, a)

    def _bn_relu_bwd(
        self, dr: Floats, r: Floats, cache: _BNCache, dg_out: Floats, dc_out: Floats, n: int
    ) -> ShardCoroutine[Floats]:
        """Backward of relu(bn(h)); ``dr`` is overwritten with dL/dh.  With x-hat = hc * inv
        and a = g * inv: dgamma = inv sum(d hc), dbeta = sum(d) and
        dh = a d - a dbeta / n - hc (a inv dgamma / n)   (d = dL/d bn-output).
        The two sums run over the whole batch: one ``yield`` of both."""
        hc, inv, a = cache
        h = hc.shape[1]
        dr *= r > 0  # through the ReLU
        part = np.empty(2 * h, dtype=dr.dtype)
        np.matmul(self._ones(dr.shape[0]), dr, out=part[:h])
        part[h:] = np.einsum("ij,ij->j", dr, hc)
        total = yield part
        dc_out[...] = total[:h]
        np.multiply(total[h:], inv, out=dg_out)
        dr -= dc_out / n
        dr *= a
        dr -= hc * (a * inv * dg_out / n)
        return dr

    def forward(self, inp: Floats) -> Floats:
        return run_local(self.forward_steps(inp, inp.shape[0]))

    def backward(self, dout: Floats) -> dict[str, Floats]:
        """Gradients (views of ``self.gflat``, overwritten by the next call); ``dout`` may be
        overwritten."""
        return run_local(self.backward_steps(dout, dout.shape[0]))

    def forward_steps(self, inp: Floats, n: int) -> ShardCoroutine[Floats]:
        """:meth:`forward` of one shard of a batch of ``n`` rows (a shard coroutine)."""
        p = self.p
        eps = self.BN_EPS
        r1, bc1 = yield from self._bn_relu_fwd(inp @ p["W1"], p["g1"], p["c1"], eps, n)
        r2, bc2 = yield from self._bn_relu_fwd(r1 @ p["W2"], p["g2"], p["c2"], eps, n)
        a = r2 @ p["W3"]
        a += p["b3"]
        out = self.heads.forward(a)
        self.cache = (inp, bc1, r1, bc2, r2, out)
        return out

    def backward_steps(self, dout: Floats, n: int) -> ShardCoroutine[dict[str, Floats]]:
        """:meth:`backward` of one shard of a batch of ``n`` rows (a shard coroutine): the
        weight gradients are this shard's sums, totalled over the shards by the last
        ``yield`` (the batch-norm parameters' gradients are totals already)."""
        p, g = self.p, self.g
        assert self.cache is not None, "backward needs a forward first"
        inp, bc1, r1, bc2, r2, out = self.cache
        da = self.heads.backward(out, dout)
        np.matmul(r2.T, da, out=g["W3"])
        np.matmul(self._ones(da.shape[0]), da, out=g["b3"])
        dh2 = yield from self._bn_relu_bwd(da @ p["W3"].T, r2, bc2, g["g2"], g["c2"], n)
        np.matmul(r1.T, dh2, out=g["W2"])
        dh1 = yield from self._bn_relu_bwd(dh2 @ p["W2"].T, r1, bc1, g["g1"], g["c1"], n)
        np.matmul(inp.T, dh1, out=g["W1"])
        self.cache = None
        totals = {k: g[k].copy() for k in self.BN_PARAMS}
        for k in self.BN_PARAMS:  # counted once: zero here, put back after the sum
            g[k][...] = 0
        self.gflat[...] = yield self.gflat
        for k, v in totals.items():
            g[k][...] = v
        return g
