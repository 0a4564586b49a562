"""PEARL's generator training: the loss against the released embedding, the critic, the
config, and the per-shard training step (see :mod:`.shards`).

Everything here is post-processing of released statistics.  The module imports only numpy and
its siblings (no pandas or scipy), so the worker processes that run training shards start in
a fraction of a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .mlp import Adam, BlockHeads, Floats, Generator, standard_normal_f32
from .shards import ShardCoroutine

FloatArray = npt.NDArray[np.float64]


# --------------------------------------------------------------------------- training loss


class EmbeddingLoss:
    """The generator's loss against the released embedding and its gradient (Liew, Takahashi & Ueno
    2022; docs/synthesizers.md, "PEARL").

    For a batch ``out`` (B, D) whose rows are sorted by class (``counts[c]`` rows of class c):
    ``Ehat[c] = (1/(B sqrt k)) sum_{b in c} [cos(W out_b), sin(W out_b)]`` and
    ``L = sum_i alpha_i sum_c |Ehat[c]_i - E[c]_i|^2`` over the k frequencies (cos and sin
    parts of frequency i share the weight alpha_i).  With ``cs = [cos u | sin u]``,
    ``u = out W^T``: dL/dcs = 2/(B sqrt k) alpha R[class] (R = Ehat - E), and
    d cos/du = -sin, d sin/du = cos, so dL/du = cos * G_sin - sin * G_cos and
    dL/dout = (dL/du) W.  The class sums are (1, rows) x (rows, k) products per piece, the
    per-class gradient scaling runs in place on contiguous row slices, and the buffers are
    reused across steps: no per-step (B, k) allocations.  cos and sin write to separate
    contiguous buffers: numpy's SIMD loops only run on contiguous arrays (a strided output is
    ~3x slower).

    The object may hold one shard of a larger batch (``batch`` rows in all, see
    :mod:`.shards`): :meth:`class_sums` gives this shard's part of the class sums, and
    :meth:`residual_from` turns their total into R.  The rows are cut into pieces of at most
    :attr:`PIECE_ROWS` rows (never straddling a class) so each piece's (rows, k) buffers stay
    in the core's L2 cache between the product and the cos/sin passes.
    """

    PIECE_ROWS = 320

    def __init__(
        self,
        w: Floats,
        target: Floats,
        counts: npt.ArrayLike,
        dtype: type[np.floating[Any]] = np.float32,
        batch: int | None = None,
    ) -> None:
        k, d = w.shape
        self.k = k
        self.dtype = dtype
        # the backward product (rows, k) x (k, D) writes D columns; padded with zero columns
        # to a multiple of 16 it runs on full SIMD tiles (measured for D = 107 -> 112 on one
        # core: 0.90 -> 0.67 ms per 554-row shard); the padding is sliced off the result
        dp = -(-d // 16) * 16
        self.w = np.zeros((k, dp), dtype=dtype)  # (k, D) + zero columns
        self.w[:, :d] = w
        self.wt = np.ascontiguousarray(w.T, dtype=dtype)  # (D, k)
        self.target = np.ascontiguousarray(target.T, dtype=dtype)  # (C, 2k): [cos | sin]
        counts = np.asarray(counts, dtype=np.int64)
        b = int(counts.sum())
        self.pieces = batch_pieces(counts, self.PIECE_ROWS)
        self.ones = np.ones(b, dtype=dtype)
        self.inv = dtype(1.0 / ((batch or b) * math.sqrt(k)))
        self.cu = np.empty((b, k), dtype=dtype)
        self.su = np.empty((b, k), dtype=dtype)
        self.dout = np.empty((b, dp), dtype=dtype)
        self.d = d
        self.partial = np.zeros((len(self.pieces), 2 * k), dtype=dtype)

    def class_sums(self, out: Floats) -> Floats:
        """Unscaled sums of [cos u, sin u] over this shard's rows per class, (C, 2k); leaves
        cos u and sin u in ``self.cu``, ``self.su`` for the backward pass."""
        k = self.k
        for i, a, b, _ in self.pieces:
            cu, su = self.cu[a:b], self.su[a:b]
            np.matmul(out[a:b], self.wt, out=cu)  # u, then cos u in place
            np.sin(cu, out=su)
            np.cos(cu, out=cu)
            np.matmul(self.ones[a:b], cu, out=self.partial[i, :k])
            np.matmul(self.ones[a:b], su, out=self.partial[i, k:])
        sums = np.zeros_like(self.target)
        for i, _, _, j in self.pieces:  # fixed order: deterministic
            sums[j] += self.partial[i]
        return sums

    def residual_from(self, total_sums: Floats) -> Floats:
        """R = Ehat - E, shape (C, 2k), from the class sums totalled over the whole batch."""
        r = total_sums * self.inv
        r -= self.target
        return r

    def residual(self, out: Floats) -> Floats:
        """R for a batch held whole by this object."""
        return self.residual_from(self.class_sums(out))

    @staticmethod
    def value(r: Floats, alpha: Floats) -> float:
        k = len(alpha)
        return float((alpha * (r[:, :k] ** 2 + r[:, k:] ** 2)).sum())

    def gradient(self, r: Floats, alpha: Floats) -> Floats:
        """dL/dout for this object's rows after :meth:`class_sums`; overwrites ``self.cu``
        and ``self.su``."""
        k = self.k
        g = ((2.0 * self.inv) * r).astype(self.dtype)
        g[:, :k] *= alpha
        g[:, k:] *= alpha
        g_cos = np.ascontiguousarray(-g[:, :k])
        g_sin = np.ascontiguousarray(g[:, k:])
        for _, a, b, j in self.pieces:
            cu, su = self.cu[a:b], self.su[a:b]
            cu *= g_sin[j]
            su *= g_cos[j]
            cu += su  # dL/du
            np.matmul(cu, self.w, out=self.dout[a:b])
        return self.dout[:, : self.d]


def batch_pieces(counts: npt.NDArray[np.integer[Any]], rows: int) -> list[tuple[int, int, int, int]]:
    """Fixed work pieces ``(i, start, stop, class)`` of a class-sorted batch: each class's
    rows cut into near-equal runs of at most ``rows`` (depends on the layout only)."""
    bounds = np.concatenate([[0], np.cumsum(counts)])
    pieces: list[tuple[int, int, int, int]] = []
    for j in range(len(counts)):  # C is tiny
        a, z = int(bounds[j]), int(bounds[j + 1])
        if z == a:
            continue
        m = -(-(z - a) // rows)
        cuts = np.linspace(a, z, m + 1).round().astype(int)
        pieces += [
            (len(pieces) + i, int(p), int(q), j) for i, (p, q) in enumerate(zip(cuts[:-1], cuts[1:], strict=False))
        ]
    return pieces


def mix_to_min_ess(alpha: npt.ArrayLike, min_ess: float) -> FloatArray:
    """Importance weights ``alpha`` (mean 1) mixed with uniform weights, (1 - lam) alpha + lam,
    with the smallest lam in [0, 1] that makes the effective sample size
    ``k^2 / sum(alpha^2)`` at least ``min_ess * k``.

    With s = mean(alpha^2) >= 1, the mixture has mean square 1 + (1 - lam)^2 (s - 1), so
    lam = 1 - sqrt((1/min_ess - 1) / (s - 1)) when s > 1/min_ess, else 0.  Why: a critic left
    free at low noise puts almost all weight on a handful of frequencies, and the generator
    then fits those alone (seen as unstable fits at eps = 10).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    if min_ess <= 0:
        return alpha
    if not 0 < min_ess <= 1:
        raise ValueError(f"critic_min_ess must lie in [0, 1], got {min_ess}")
    s = float(np.mean(alpha * alpha))
    if s <= 1.0 / min_ess:
        return alpha
    lam = 1.0 - math.sqrt((1.0 / min_ess - 1.0) / (s - 1.0))
    return (1.0 - lam) * alpha + lam


# --------------------------------------------------------------------------- config


@dataclass
class PearlConfig:
    k: int = 500  # frequencies
    steps: int = 8000
    batch_frac: float = 0.1  # batch = batch_frac * n (min 64)
    hidden: int = 100
    z_dim: int = 32
    lr: float = 0.005
    lr_decay: float = 0.1  # final lr = lr * lr_decay (cosine)
    critic: bool = True
    critic_every: int = 10
    critic_lr: float = 0.01
    # the critic's weights are mixed with uniform weights as little as needed to keep their
    # effective sample size k^2 / sum(alpha^2) >= critic_min_ess * k (0: unbounded).  Unbounded,
    # one eps = 10 fit ended with all weight on a single frequency (ESS 1/k; validation ROC
    # 0.519); with 0.5 the validation ROC was 0.772 / 0.781 / 0.782 at eps = 10 (seeds 0-2,
    # unbounded 0.764 / 0.776 / 0.519) and 0.764 / 0.777 / 0.765 at eps = 1 (0.755 / 0.771 / -)
    critic_min_ess: float = 0.5
    sigma0_share: float = 0.03  # mu^2 shares of the budget
    counts_share: float = 0.03
    sigma0_mult: float = 1.0  # sigma0 = mult * DP mean pair distance
    # frequency scales: the k frequencies are split evenly over bandwidths sigma0 * m for m in
    # this tuple (data independent given sigma0, so no privacy cost); the critic's base density
    # omega0 is the matching Gaussian scale mixture.
    freq_scales: tuple[float, ...] = (1.0,)
    sample_categories: bool = True  # decode categories by a draw from the block (True) or argmax
    # numbers are decoded from clip((1 + stretch) tanh, -1, 1): tanh never reaches +-1, so
    # without it no synthetic value sits on a bound (e.g. capital-gain = 0, 90 % of Adult);
    # tree classifiers then split on spurious small values (validation ROC 0.672 -> 0.750)
    decode_stretch: float = 0.02
    fixed_sigma0: float | None = None  # public scale: skip the DP sigma0 release (DP-MERF)
    one_release: bool = False  # DP-MERF: proportions and embedding in one Gaussian release
    label: str = "PEARL"
    # the batch is cut into this many fixed shards, each with its own noise stream (part of
    # the fit's definition: whether the shards run in worker processes or not changes only
    # BLAS rounding, see .shards).  Worker processes: None = one per shard for jobs big
    # enough to pay for starting them (see PROCESS_MIN_WORK), up to the cores available;
    # 1 = in this process.  Adult fit, 2 vCPUs: ~12.5 ms/step in one process, 7-9.5 in two.
    shards: int = 2
    workers: int | None = None


# --------------------------------------------------------------------------- training shards

#: steps x batch rows below which a fit trains in process: starting the workers costs ~0.4 s,
#: and below this (about 450 Adult steps, ~5 s in process) they would save little more
PROCESS_MIN_WORK = 500_000


@dataclass
class TrainSetup:
    """Everything a training shard needs, picklable for worker processes.  Only released
    (noisy) statistics and public facts -- the private table never leaves :meth:`fit`."""

    cfg: PearlConfig
    n_num: int
    sizes: npt.NDArray[np.int64]
    dim: int
    w: FloatArray  # (k, D) frequencies
    target: FloatArray  # (2k, C) released embedding
    counts: npt.NDArray[np.int64]  # rows per class in a batch
    init: Floats  # the generator's initial flat parameters
    noise_seeds: list[int]  # one input-noise stream per shard
    bandwidths: FloatArray  # frequency bandwidths (the critic's base density)
    n_shards: int


class _Critic:
    """Importance weights over the fixed frequencies from a learnable per-dimension Gaussian
    scale (Liew et al. 2022, §4), ascending the generator's loss; no privacy cost.  The weights
    in use are mixed toward uniform to keep their ESS >= ``critic_min_ess`` k."""

    def __init__(self, cfg: PearlConfig, w64: FloatArray, bandwidths: FloatArray, dim: int) -> None:
        self.cfg = cfg
        self.k = w64.shape[0]
        self.t2 = w64**2  # (k, D)
        base_scale = np.sqrt(self.t2.mean())  # = 1/sigma0 approx
        self.log_s = {"log_s": np.full(dim, math.log(base_scale))}
        self.opt = Adam(self.log_s, lr=cfg.critic_lr)
        # l0 = -log omega0(t) (up to a constant), omega0 = mixture of N(0, I/b^2) over the
        # bandwidths b actually used to draw the frequencies
        nrm = self.t2.sum(axis=1)[:, None]
        comp = dim * np.log(bandwidths)[None, :] - 0.5 * nrm * (bandwidths**2)[None, :]
        mx = comp.max(axis=1, keepdims=True)
        self.l0 = -(mx[:, 0] + np.log(np.exp(comp - mx).mean(axis=1)))
        self.alpha = np.ones(self.k, dtype=np.float32)
        self.ess = 1.0  # share of k: the effective sample size of the weights in use

    def update(self, resid: Floats) -> None:
        k = self.k
        r = (resid[:, :k] ** 2 + resid[:, k:] ** 2).sum(axis=0).astype(np.float64)  # (k,)
        _, grad = critic_objective(self.log_s["log_s"], self.t2, r, self.l0)
        self.opt.step(self.log_s, {"log_s": grad}, ascend=True)
        a, _ = critic_weights(self.log_s["log_s"], self.t2, self.l0)
        self.alpha = mix_to_min_ess(k * a, self.cfg.critic_min_ess).astype(np.float32)
        self.ess = k / float(np.square(self.alpha, dtype=np.float64).sum())


def critic_weights(log_s: FloatArray, t2: FloatArray, l0: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Normalised importance weights a_i (sum 1) of the frequencies t_i under the critic's
    Gaussian scale exp(log_s), relative to the base density exp(-l0); and 1/s^2.
    ``sum_d t2[i, d] / s_d^2`` is one matrix-vector product (not a (k, D) temporary)."""
    inv_s2 = np.exp(-2.0 * log_s)
    ll = l0 - log_s.sum() - 0.5 * (t2 @ inv_s2)
    a = np.exp(ll - ll.max())
    return a / a.sum(), inv_s2


def critic_objective(log_s: FloatArray, t2: FloatArray, r: FloatArray, l0: FloatArray) -> tuple[float, FloatArray]:
    """The critic's objective k sum_i a_i r_i (r_i: the frequency's squared residual) and its
    gradient in log_s: dL/dl_i = k a_i (r_i - sum_j a_j r_j), chained through
    l_i = l0_i - sum_d log_s_d - t2_id / (2 s_d^2)."""
    a, inv_s2 = critic_weights(log_s, t2, l0)
    k = len(r)
    mean_r = (a * r).sum()
    gl = k * a * (r - mean_r)
    grad = (gl @ t2) * inv_s2 - gl.sum()
    return k * mean_r, grad


class _Shard:
    """One shard of the training batch: its rows, its own copy of the generator and of the
    optimisers (kept identical across shards: every update uses totals), its noise stream."""

    def __init__(self, setup: TrainSetup, index: int) -> None:
        cfg = self.cfg = setup.cfg
        c = len(setup.counts)
        batch = int(setup.counts.sum())
        lo = index * batch // setup.n_shards
        hi = (index + 1) * batch // setup.n_shards
        y = np.repeat(np.arange(c), setup.counts)[lo:hi]  # rows sorted by class
        self.batch, self.rows = batch, hi - lo
        self.net = Generator(cfg.z_dim + c, cfg.hidden, BlockHeads(setup.n_num, setup.sizes), np.random.default_rng(0))
        self.net.flat[...] = setup.init
        self.opt = Adam({"all": self.net.flat}, lr=cfg.lr)
        self.loss = EmbeddingLoss(setup.w, setup.target, np.bincount(y, minlength=c), np.float32, batch=batch)
        self.inp = np.empty((self.rows, cfg.z_dim + c), dtype=np.float32)
        self.inp[:, cfg.z_dim :] = np.eye(c, dtype=np.float32)[y]
        self.noise = np.random.Generator(np.random.PCG64(setup.noise_seeds[index]))
        self.critic = _Critic(cfg, setup.w, setup.bandwidths, setup.dim) if cfg.critic else None

    def step(self, step: int) -> ShardCoroutine[None]:
        """One Adam step of the generator (and every ``critic_every`` steps one of the
        critic), as a shard coroutine."""
        cfg = self.cfg
        frac = step / max(1, cfg.steps - 1)
        self.opt.lr = cfg.lr * (cfg.lr_decay + (1 - cfg.lr_decay) * 0.5 * (1 + math.cos(math.pi * frac)))
        self.inp[:, : cfg.z_dim] = standard_normal_f32(self.noise, (self.rows, cfg.z_dim))
        out = yield from self.net.forward_steps(self.inp, self.batch)
        resid = self.loss.residual_from((yield self.loss.class_sums(out)))
        alpha = self.critic.alpha if self.critic else np.ones(cfg.k, dtype=np.float32)
        yield from self.net.backward_steps(self.loss.gradient(resid, alpha), self.batch)
        self.opt.step({"all": self.net.flat}, {"all": self.net.gflat})
        if self.critic and (step + 1) % cfg.critic_every == 0:
            self.critic.update(resid)

    def result(self) -> tuple[Floats, float]:
        return self.net.flat.copy(), (self.critic.ess if self.critic else 1.0)


def make_shard(setup: TrainSetup, index: int) -> _Shard:
    return _Shard(setup, index)
