"""A small numpy MLP generator with hand-written backprop and Adam (no autograd, no torch).

Architecture (seed 003 / DP-MERF): ``[z, onehot(y)] -> fc -> bn -> relu -> fc -> bn -> relu
-> fc -> heads`` where the heads are ``tanh`` on the numeric coordinates and a softmax per
categorical block.  The per-block softmax uses segment reductions (``np.maximum.reduceat`` /
``np.add.reduceat`` over the column blocks) - no Python loop over blocks in the hot path.
Batch normalisation uses batch statistics (training mode) also when sampling, in batches
built like the training batches.
"""
from __future__ import annotations

import numpy as np


class BlockHeads:
    """tanh on the first ``n_num`` outputs, softmax on each contiguous block after them."""

    def __init__(self, n_num: int, sizes):
        self.n_num = int(n_num)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.rel = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.block_of = np.repeat(np.arange(len(self.sizes)), self.sizes)
        self.dim = self.n_num + int(self.sizes.sum())
        # block-membership matrix (n_cat_columns, n_blocks): segment sums as one small matmul
        self.member = (self.block_of[:, None] == np.arange(len(self.sizes))[None, :]).astype(np.float32)

    def forward(self, a: np.ndarray) -> np.ndarray:
        out = np.empty_like(a)
        nn = self.n_num
        np.tanh(a[:, :nn], out=out[:, :nn])
        if self.sizes.size:
            lg = a[:, nn:]
            # Shift by the row max (one fast reduction): exp never overflows.  A block whose
            # logits all lie ~80 below the row max would underflow to zero; only then fall
            # back to the exact per-block max (segment reduction with np.maximum.reduceat).
            e = np.exp(lg - lg.max(axis=1, keepdims=True))
            s = e @ self.member                      # (B, n_blocks) block sums
            if not np.all(s > 1e-30):
                mx = np.maximum.reduceat(lg, self.rel, axis=1)
                e = np.exp(lg - mx[:, self.block_of])
                s = e @ self.member
            np.multiply(e, (1.0 / s)[:, self.block_of], out=out[:, nn:])
        return out

    def backward(self, out: np.ndarray, g: np.ndarray) -> np.ndarray:
        da = np.empty_like(g)
        nn = self.n_num
        t = out[:, :nn]
        da[:, :nn] = g[:, :nn] * (1.0 - t * t)
        if self.sizes.size:
            p = out[:, nn:]
            gp = g[:, nn:]
            dot = (p * gp) @ self.member              # per-block sums (segment matmul)
            da[:, nn:] = p * (gp - dot[:, self.block_of])
        return da


class Adam:
    def __init__(self, params: dict, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: dict, grads: dict, ascend: bool = False):
        self.t += 1
        b1, b2 = self.b1, self.b2
        c1 = 1.0 - b1 ** self.t
        c2 = 1.0 - b2 ** self.t
        lr = self.lr * np.sqrt(c2) / c1
        sign = 1.0 if ascend else -1.0
        for k, g in grads.items():
            m, v = self.m[k], self.v[k]
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * (g * g)
            params[k] += (sign * lr) * m / (np.sqrt(v) + self.eps)


class Generator:
    """fc-bn-relu x2 + block heads, float32 by default."""

    BN_EPS = 1e-5

    def __init__(self, in_dim: int, hidden: int, heads: BlockHeads, gen: np.random.Generator,
                 dtype=np.float32):
        self.heads = heads
        self.dtype = dtype
        h = int(hidden)

        def lin(i, o):  # PyTorch default init: U(-1/sqrt(i), 1/sqrt(i))
            b = 1.0 / np.sqrt(i)
            return gen.uniform(-b, b, size=(i, o)).astype(dtype)

        self.p = {
            "W1": lin(in_dim, h), "g1": np.ones(h, dtype), "c1": np.zeros(h, dtype),
            "W2": lin(h, h), "g2": np.ones(h, dtype), "c2": np.zeros(h, dtype),
            "W3": lin(h, heads.dim), "b3": np.zeros(heads.dim, dtype),
        }
        self.cache = None

    @staticmethod
    def _bn_relu_fwd(h, g, c, eps):
        """BatchNorm (batch statistics) followed by ReLU; ``h`` is overwritten."""
        n = h.shape[0]
        h -= h.mean(axis=0)
        var = np.einsum("ij,ij->j", h, h) / n
        inv = (1.0 / np.sqrt(var + eps)).astype(h.dtype)
        h *= inv                                  # h is now x-hat
        r = h * g
        r += c
        np.maximum(r, 0, out=r)
        return r, (h, inv)

    @staticmethod
    def _bn_relu_bwd(dr, r, g, cache):
        """Backward of relu(bn(h)); ``dr`` is overwritten.  Returns dh, dgamma, dbeta."""
        xh, inv = cache
        n = dr.shape[0]
        dr *= (r > 0)                             # through the ReLU: d(bn output)
        dg = np.einsum("ij,ij->j", dr, xh)
        dc = dr.sum(axis=0)
        # dh = inv/n * (n dxh - sum dxh - xh sum(dxh xh)),  dxh = dout * g
        dr *= g * inv
        dr -= (dc * g * inv) / n
        dr -= xh * ((dg * g * inv) / n)
        return dr, dg, dc

    def forward(self, inp: np.ndarray) -> np.ndarray:
        p = self.p
        eps = self.BN_EPS
        r1, bc1 = self._bn_relu_fwd(inp @ p["W1"], p["g1"], p["c1"], eps)
        r2, bc2 = self._bn_relu_fwd(r1 @ p["W2"], p["g2"], p["c2"], eps)
        a = r2 @ p["W3"]
        a += p["b3"]
        out = self.heads.forward(a)
        self.cache = (inp, bc1, r1, bc2, r2, out)
        return out

    def backward(self, dout: np.ndarray) -> dict:
        p = self.p
        inp, bc1, r1, bc2, r2, out = self.cache
        da = self.heads.backward(out, dout)
        g = {"W3": r2.T @ da, "b3": da.sum(axis=0)}
        dh2, g["g2"], g["c2"] = self._bn_relu_bwd(da @ p["W3"].T, r2, p["g2"], bc2)
        g["W2"] = r1.T @ dh2
        dh1, g["g1"], g["c1"] = self._bn_relu_bwd(dh2 @ p["W2"].T, r1, p["g1"], bc1)
        g["W1"] = inp.T @ dh1
        self.cache = None
        return g
