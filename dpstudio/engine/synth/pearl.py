"""PEARL (seed 003; Liew, Takahashi & Ueno, ICLR 2022): DP synthetic data from a one-shot
private characteristic-function embedding, with an adversarially re-weighted generator loss.

Privacy (replace-one neighbours, n public), all releases Gaussian and composed exactly in GDP:

1. frequency scale sigma0 = DP mean distance of a fixed, data-independent pairing of the
   records (pairs (pi(2j), pi(2j+1)), pi a public random permutation).  Each record sits in
   exactly one of the P = floor(n/2) pairs and a pair distance lies in [0, diam] with
   diam = sqrt(4 n_num + 2 n_cat) (encoded domain), so the replace-one L2 sensitivity of
   the mean is diam / P.
2. class proportions c = (1/n) sum e_{y_i}: a replaced record moves one unit between two
   cells, sensitivity sqrt(2)/n (0 if there is no label: then nothing is released).
3. weighted per-class embedding E = (1/n) sum phi(x_i) e_{y_i}^T with
   phi(x) = [cos(Wx), sin(Wx)]/sqrt(k), ||phi(x)|| = 1.  Replacing (x,y) by (x',y') changes E
   by (phi(x) e_y^T - phi(x') e_y'^T)/n, whose Frobenius norm is ||phi(x)-phi(x')|| <= 2 when
   y = y' and sqrt(||phi(x)||^2 + ||phi(x')||^2) = sqrt(2) when y != y': sensitivity 2/n.

The total GDP mu for the recipe's (eps, delta) is split in mu^2 shares (default 3 % / 3 % /
94 %); each release is snapped to a grid of 2^-20 x its sensitivity and gets grid Gaussian
noise (see :mod:`.privacy`).  Everything afterwards (generator, critic, sampling) is
post-processing.
"""
from __future__ import annotations

import itertools
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..accounting import PrivacyLoss
from ..progress import NEVER_CANCELLED, no_progress
from .base import FittedSynth, Synthesizer
from .encoding import Encoder, TableSpec
from .mlp import Adam, BlockHeads, Generator, standard_normal_f32
from .privacy import gdp_mu_for, release_gaussian, total_gaussian_loss


# --------------------------------------------------------------------------- DP statistics

def pair_distance_mean(x: np.ndarray, perm: np.ndarray) -> float:
    """Mean distance over the disjoint pairs (perm[2j], perm[2j+1])."""
    p = len(perm) // 2
    a = x[perm[0:2 * p:2]].astype(np.float64)
    b = x[perm[1:2 * p:2]].astype(np.float64)
    return float(np.sqrt(((a - b) ** 2).sum(axis=1)).mean())


def pair_distance_sensitivity(n: int, diameter: float) -> float:
    return diameter / (n // 2)


def class_proportions(y: np.ndarray, n_classes: int) -> np.ndarray:
    ok = y >= 0
    return np.bincount(y[ok], minlength=n_classes).astype(np.float64) / len(y)


def weighted_embedding(x: np.ndarray, y: np.ndarray, w: np.ndarray, n_classes: int,
                       chunk: int = 4096) -> np.ndarray:
    """(2k, C) matrix (1/n) sum_i phi(x_i) e_{y_i}^T, phi = [cos Wx, sin Wx]/sqrt(k).

    Records with unknown label (y = -1) contribute a zero column (still within the bound)."""
    n = x.shape[0]
    k = w.shape[0]
    out = np.zeros((2 * k, n_classes))
    for s in range(0, n, chunk):
        xs = x[s:s + chunk].astype(np.float64)
        ys = y[s:s + chunk]
        u = xs @ w.T.astype(np.float64)
        oh = np.zeros((len(ys), n_classes))
        ok = ys >= 0
        oh[np.nonzero(ok)[0], ys[ok]] = 1.0
        out[:k] += np.cos(u).T @ oh
        out[k:] += np.sin(u).T @ oh
    return out / (n * math.sqrt(k))


# --------------------------------------------------------------------------- training loss

class PieceRunner:
    """Run a function over fixed row pieces on the calling thread plus a thread pool.

    Pieces are claimed one at a time from a shared counter by the caller and the pool's
    workers alike, so a worker that wakes late (a descheduled virtual CPU) delays nothing: the
    caller simply does more pieces, and a worker that never started is cancelled, not waited
    for.  Each piece writes only its own rows and partial sums, so who ran it does not change
    the result: a fixed seed gives the same fit on any number of cores.
    """

    def __init__(self, pool=None, workers: int = 1):
        self.pool = pool
        self.n_workers = 1 if pool is None else max(1, int(workers))

    def run(self, fn, pieces) -> None:
        if self.pool is None or self.n_workers == 1 or len(pieces) == 1:
            for piece in pieces:
                fn(piece)
            return
        claim = itertools.count()
        n = len(pieces)

        def work():
            for i in iter(lambda: next(claim), None):
                if i >= n:
                    return
                fn(pieces[i])

        helpers = [self.pool.submit(work) for _ in range(min(self.n_workers, n) - 1)]
        try:
            work()
        finally:
            for f in helpers:
                if not f.cancel():
                    f.result()


class EmbeddingLoss:
    """The generator's loss against the released embedding and its gradient (BRIEF 5.5).

    For a batch ``out`` (B, D) whose rows are sorted by class (``counts[c]`` rows of class c):
    ``Ehat[c] = (1/(B sqrt k)) sum_{b in c} [cos(W out_b), sin(W out_b)]`` and
    ``L = sum_i alpha_i sum_c |Ehat[c]_i - E[c]_i|^2`` over the k frequencies (cos and sin
    parts of frequency i share the weight alpha_i).  With ``cs = [cos u | sin u]``,
    ``u = out W^T``: dL/dcs = 2/(B sqrt k) alpha R[class] (R = Ehat - E), and
    d cos/du = -sin, d sin/du = cos, so dL/du = cos * G_sin - sin * G_cos and
    dL/dout = (dL/du) W.  The class sums are (C, B) x (B, k) matmuls, the per-class gradient
    scaling runs in place on contiguous row slices, and the buffers are reused across steps:
    no per-step (B, k) allocations.  cos and sin write to separate contiguous buffers: numpy's
    SIMD loops only run on contiguous arrays (a strided output is ~3x slower).

    The batch is cut into fixed pieces ``(i, start, stop, class)`` (:attr:`pieces`, never
    straddling a class); :meth:`forward_piece` and :meth:`backward_piece` do one piece, and
    :meth:`residual` / :meth:`gradient` run every piece, on a thread pool when one is given.
    """

    #: rows per work piece: the pieces are fixed by the batch layout alone, so results do not
    #: depend on how many threads run them (a fixed seed gives the same fit on any machine).
    PIECE_ROWS = 320

    def __init__(self, w: np.ndarray, target: np.ndarray, counts: np.ndarray, dtype=np.float32,
                 pool=None, workers: int = 1):
        k, d = w.shape
        self.k = k
        self.dtype = dtype
        self.w = np.ascontiguousarray(w, dtype=dtype)             # (k, D)
        self.wt = np.ascontiguousarray(w.T, dtype=dtype)          # (D, k)
        self.target = np.ascontiguousarray(target.T, dtype=dtype)  # (C, 2k): [cos | sin]
        counts = np.asarray(counts, dtype=np.int64)
        b = int(counts.sum())
        self.bounds = np.concatenate([[0], np.cumsum(counts)])
        self.pieces = batch_pieces(counts, self.PIECE_ROWS)
        self.runner = PieceRunner(pool, workers)
        self.n_workers = self.runner.n_workers
        self.ones = np.ones(b, dtype=dtype)
        self.inv = dtype(1.0 / (b * math.sqrt(k)))
        self.cu = np.empty((b, k), dtype=dtype)
        self.su = np.empty((b, k), dtype=dtype)
        self.dout = np.empty((b, d), dtype=dtype)
        self.partial = np.zeros((len(self.pieces), 2 * k), dtype=dtype)
        self._g_cos = self._g_sin = None

    def forward_piece(self, out: np.ndarray, piece) -> None:
        """cos u, sin u of the piece's rows and their column sums (its partial of Ehat)."""
        i, a, b, _ = piece
        k = self.k
        cu, su = self.cu[a:b], self.su[a:b]
        np.matmul(out[a:b], self.wt, out=cu)                     # u, then cos u in place
        np.sin(cu, out=su)
        np.cos(cu, out=cu)
        np.matmul(self.ones[a:b], self.cu[a:b], out=self.partial[i, :k])
        np.matmul(self.ones[a:b], self.su[a:b], out=self.partial[i, k:])

    def reduce(self) -> np.ndarray:
        """R = Ehat - E, shape (C, 2k), from the pieces' partial sums (added in piece order)."""
        r = np.zeros_like(self.target)
        for i, _, _, j in self.pieces:                            # fixed order: deterministic
            r[j] += self.partial[i]
        r *= self.inv
        r -= self.target
        return r

    def residual(self, out: np.ndarray) -> np.ndarray:
        """R = Ehat - E, shape (C, 2k); leaves cos u and sin u in ``self.cu``, ``self.su``."""
        self.runner.run(lambda piece: self.forward_piece(out, piece), self.pieces)
        return self.reduce()

    @staticmethod
    def value(r: np.ndarray, alpha: np.ndarray) -> float:
        k = len(alpha)
        return float((alpha * (r[:, :k] ** 2 + r[:, k:] ** 2)).sum())

    def prepare_gradient(self, r: np.ndarray, alpha: np.ndarray) -> None:
        """Per-class weights of the backward pass (call once per step, before the pieces)."""
        k = self.k
        g = ((2.0 * self.inv) * r).astype(self.dtype)
        g[:, :k] *= alpha
        g[:, k:] *= alpha
        self._g_cos = np.ascontiguousarray(-g[:, :k])
        self._g_sin = np.ascontiguousarray(g[:, k:])

    def backward_piece(self, piece, into: np.ndarray) -> None:
        """dL/dout for the piece's rows into ``into[start:stop]``; overwrites its cos/sin rows."""
        _, a, b, j = piece
        cu, su = self.cu[a:b], self.su[a:b]
        cu *= self._g_sin[j]
        su *= self._g_cos[j]
        cu += su                                                  # dL/du
        np.matmul(cu, self.w, out=into[a:b])

    def gradient(self, r: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """dL/dout (B, D) after :meth:`residual`; overwrites ``self.cu`` and ``self.su``."""
        self.prepare_gradient(r, alpha)
        self.runner.run(lambda piece: self.backward_piece(piece, self.dout), self.pieces)
        return self.dout


def batch_pieces(counts, rows: int) -> list[tuple[int, int, int, int]]:
    """Fixed work pieces ``(i, start, stop, class)`` of a class-sorted batch: each class's
    rows cut into near-equal runs of at most ``rows`` (depends on the layout only)."""
    bounds = np.concatenate([[0], np.cumsum(counts)])
    pieces = []
    for j in range(len(counts)):                                  # C is tiny
        a, z = int(bounds[j]), int(bounds[j + 1])
        if z == a:
            continue
        m = -(-(z - a) // rows)
        cuts = np.linspace(a, z, m + 1).round().astype(int)
        pieces += [(len(pieces) + i, int(p), int(q), j)
                   for i, (p, q) in enumerate(zip(cuts[:-1], cuts[1:]))]
    return pieces


def mix_to_min_ess(alpha: np.ndarray, min_ess: float) -> np.ndarray:
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
    k: int = 500                 # frequencies
    steps: int = 8000
    batch_frac: float = 0.1      # batch = batch_frac * n (min 64)
    hidden: int = 100
    z_dim: int = 32
    lr: float = 0.005
    lr_decay: float = 0.1        # final lr = lr * lr_decay (cosine)
    critic: bool = True
    critic_every: int = 10
    critic_lr: float = 0.01
    # the critic's weights are mixed with uniform weights as little as needed to keep their
    # effective sample size k^2 / sum(alpha^2) >= critic_min_ess * k (0: unbounded).  Unbounded,
    # one eps = 10 fit ended with all weight on a single frequency (ESS 1/k; validation ROC
    # 0.519); with 0.5 the validation ROC was 0.772 / 0.781 / 0.782 at eps = 10 (seeds 0-2,
    # unbounded 0.764 / 0.776 / 0.519) and 0.764 / 0.777 / 0.765 at eps = 1 (0.755 / 0.771 / -)
    critic_min_ess: float = 0.5
    sigma0_share: float = 0.03   # mu^2 shares of the budget
    counts_share: float = 0.03
    sigma0_mult: float = 1.0     # sigma0 = mult * DP mean pair distance
    # frequency scales: the k frequencies are split evenly over bandwidths sigma0 * m for m in
    # this tuple (data independent given sigma0, so no privacy cost); the critic's base density
    # omega0 is the matching Gaussian scale mixture.
    freq_scales: tuple = (1.0,)
    sample_categories: bool = True   # decode categories by a draw from the block (True) or argmax
    # numbers are decoded from clip((1 + stretch) tanh, -1, 1): tanh never reaches +-1, so
    # without it no synthetic value sits on a bound (e.g. capital-gain = 0, 90 % of Adult);
    # tree classifiers then split on spurious small values (validation ROC 0.672 -> 0.750)
    decode_stretch: float = 0.02
    fixed_sigma0: float | None = None  # public scale: skip the DP sigma0 release (DP-MERF)
    one_release: bool = False    # DP-MERF: proportions and embedding in one Gaussian release
    label: str = "PEARL"
    # threads for the (B, k) part of a step (None: all cores).  Default 1: numpy's BLAS
    # already spreads the big products over the cores, and on 2 cores our own threads only
    # added GIL hand-offs (measured per step: 1 thread 13.3-14.5 ms, 2 threads 15.2-17.0 ms)
    threads: int | None = 1


# --------------------------------------------------------------------------- model


class FittedEmbeddingSynth(FittedSynth):
    def __init__(self, encoder, gen_net, props, z_dim, batch, components, total, cfg, info):
        self.encoder = encoder
        self.net = gen_net
        self.props = props
        self.z_dim = z_dim
        self.batch = batch
        self.components = components
        self._total = total
        self.cfg = cfg
        self.info = info

    def privacy_loss(self) -> PrivacyLoss:
        return self._total

    def _labels(self, n, gen):
        c = len(self.props)
        counts = np.floor(self.props * n).astype(np.int64)
        rest = n - counts.sum()
        if rest > 0:
            counts += np.bincount(gen.choice(c, size=rest, p=self.props), minlength=c)
        y = np.repeat(np.arange(c), counts)
        gen.shuffle(y)
        return y

    def generate_encoded(self, n_rows: int, gen) -> tuple[np.ndarray, np.ndarray]:
        y = self._labels(n_rows, gen)
        c = len(self.props)
        out = np.empty((n_rows, self.encoder.dim), dtype=np.float32)
        b = max(self.batch, 2)
        for s in range(0, n_rows, b):
            e = min(s + b, n_rows)
            if e - s < 2:  # batch norm needs >= 2 rows: borrow a neighbour chunk
                s0 = max(0, e - b)
                out[s0:e] = self._forward(y[s0:e], gen, c)
                continue
            out[s:e] = self._forward(y[s:e], gen, c)
        return out, y

    def _forward(self, y, gen, c):
        z = standard_normal_f32(gen, (len(y), self.z_dim))
        inp = np.concatenate([z, np.eye(c, dtype=np.float32)[y]], axis=1)
        o = self.net.forward(inp)
        self.net.cache = None
        return o

    def sample(self, n_rows: int, rng) -> pd.DataFrame:
        gen = rng.numpy_generator()
        x, y = self.generate_encoded(int(n_rows), gen)
        labels = y if self.encoder.spec.label is not None else None
        return self.encoder.decode(x, labels, gen=gen, sample_categories=self.cfg.sample_categories,
                                   stretch=self.cfg.decode_stretch)


class EmbeddingSynthesizer(Synthesizer):
    """Shared machinery of PEARL and DP-MERF (characteristic-function / RFF mean embedding)."""

    name = "pearl"

    def __init__(self, config: PearlConfig | None = None, **overrides):
        cfg = config or PearlConfig()
        for k, v in overrides.items():
            if not hasattr(cfg, k):
                raise TypeError(f"unknown option {k!r}")
            setattr(cfg, k, v)
        if not 0 <= cfg.critic_min_ess <= 1:   # checked before any private release is made
            raise ValueError(f"critic_min_ess must lie in [0, 1], got {cfg.critic_min_ess}")
        self.config = cfg

    # ---- the private part: all access to the data happens here
    def _releases(self, x, y, enc, n_classes, mu_total, delta, rng, gen):
        cfg = self.config
        n = x.shape[0]
        comps = []
        shares_aux = (0.0 if cfg.fixed_sigma0 is not None else cfg.sigma0_share) + \
                     (0.0 if (n_classes == 1 or cfg.one_release) else cfg.counts_share)
        emb_share = 1.0 - shares_aux
        info = {}
        # 1. frequency scale
        if cfg.fixed_sigma0 is not None:
            sigma0 = float(cfg.fixed_sigma0)
            info["sigma0_source"] = "public fixed value"
        else:
            perm = gen.permutation(n)
            sens = pair_distance_sensitivity(n, enc.diameter)
            mu = mu_total * math.sqrt(cfg.sigma0_share)
            val, loss = release_gaussian(rng, np.array([pair_distance_mean(x, perm)]), sens, mu, delta,
                                         f"{cfg.label}: frequency scale (mean pair distance)")
            comps.append(loss)
            md = float(np.clip(val[0], 0.05 * enc.diameter, enc.diameter))  # post-processing
            sigma0 = cfg.sigma0_mult * md
            info["sigma0_source"] = "DP mean pair distance"
        info["sigma0"] = sigma0
        mults = np.asarray(cfg.freq_scales, dtype=np.float64)
        scale_of = mults[np.arange(cfg.k) % len(mults)]
        w = gen.standard_normal((cfg.k, enc.dim)) / (sigma0 * scale_of)[:, None]
        info["freq_bandwidths"] = list(sigma0 * mults)
        emb = weighted_embedding(x, y, w, n_classes)
        mu_e = mu_total * math.sqrt(emb_share)
        if n_classes > 1 and cfg.one_release:
            # joint vector [vec(E), c]: if y = y' only E moves (<= 2/n); if y != y' E moves by
            # sqrt(2)/n and c by sqrt(2)/n: sqrt(2 + 2)/n.  Sensitivity 2/n either way.
            props = class_proportions(y, n_classes)
            vec = np.concatenate([emb.ravel(), props])
            sens = 2.0 / n
            val, loss = release_gaussian(rng, vec, sens, mu_e, delta,
                                         f"{cfg.label}: embedding + class proportions")
            comps.append(loss)
            emb_noisy = val[:emb.size].reshape(emb.shape)
            props_noisy = val[emb.size:]
        else:
            if n_classes > 1:
                mu_c = mu_total * math.sqrt(cfg.counts_share)
                sens = math.sqrt(2.0) / n
                props_noisy, loss = release_gaussian(
                    rng, class_proportions(y, n_classes), sens, mu_c, delta,
                    f"{cfg.label}: class proportions")
                comps.append(loss)
            else:
                props_noisy = np.ones(1)
            sens = 2.0 / n
            emb_noisy, loss = release_gaussian(rng, emb, sens, mu_e, delta,
                                               f"{cfg.label}: weighted embedding")
            comps.append(loss)
        props = np.clip(props_noisy, 0.0, None)
        props = props / props.sum() if props.sum() > 0 else np.full(n_classes, 1.0 / n_classes)
        return w, emb_noisy, props, comps, info

    def fit(self, frame, spec: TableSpec, *, epsilon, delta, rng, progress=no_progress,
            cancel=NEVER_CANCELLED):
        cfg = self.config
        t0 = time.perf_counter()
        enc = Encoder(spec)
        x = enc.encode(frame, dtype=np.float32)
        y = enc.label_codes(frame)
        n = x.shape[0]
        c = spec.n_classes
        gen = rng.numpy_generator()
        mu_total = gdp_mu_for(epsilon, delta) if math.isfinite(epsilon) else math.inf
        cancel.check()
        w, emb_noisy, props, comps, info = self._releases(x, y, enc, c, mu_total, delta, rng, gen)
        self._bandwidths = np.asarray(info["freq_bandwidths"])
        del x
        total = total_gaussian_loss(comps, delta, cfg.label)
        progress(0.02, "private embedding released")
        net, critic_ess = self._train(enc, w, emb_noisy, props, n, gen, progress, cancel)
        info["fit_seconds"] = time.perf_counter() - t0
        info["critic_final_ess"] = critic_ess
        batch = max(64, int(round(cfg.batch_frac * n)))
        return FittedEmbeddingSynth(enc, net, props, cfg.z_dim, batch, comps, total, cfg, info)

    # ---- post-processing: generator training against the noisy embedding
    def _train(self, enc, w64, emb_noisy, props, n, gen, progress, cancel):
        # with threads > 1 the (B, k) part of a step runs on a pool over fixed row pieces
        workers = min(self.config.threads or (os.cpu_count() or 1), 8)
        pool = ThreadPoolExecutor(workers, thread_name_prefix="pearl") if workers > 1 else None
        try:
            return self._train_loop(enc, w64, emb_noisy, props, n, gen, progress, cancel, pool,
                                    workers)
        finally:
            if pool is not None:
                pool.shutdown()

    def _train_loop(self, enc, w64, emb_noisy, props, n, gen, progress, cancel, pool, workers):
        cfg = self.config
        k = cfg.k
        c = len(props)
        batch = max(64, int(round(cfg.batch_frac * n)))
        heads = BlockHeads(enc.n_num, enc.sizes)
        net = Generator(cfg.z_dim + c, cfg.hidden, heads, gen)
        params, grads = {"all": net.flat}, {"all": net.gflat}   # one flat Adam update
        opt = Adam(params, lr=cfg.lr)
        f32 = np.float32
        # critic: log-scale per input dimension, alpha = k softmax(l)
        if cfg.critic:
            t2 = (w64 ** 2)                            # (k, D)
            base_scale = np.sqrt(t2.mean())            # = 1/sigma0 approx
            log_s = {"log_s": np.full(enc.dim, math.log(base_scale))}
            copt = Adam(log_s, lr=cfg.critic_lr)
            # l0 = -log omega0(t) (up to a constant), omega0 = mixture of N(0, I/b^2) over the
            # bandwidths b actually used to draw the frequencies
            bw = self._bandwidths
            nrm = t2.sum(axis=1)[:, None]
            comp = enc.dim * np.log(bw)[None, :] - 0.5 * nrm * (bw ** 2)[None, :]
            mx = comp.max(axis=1, keepdims=True)
            l0 = -(mx[:, 0] + np.log(np.exp(comp - mx).mean(axis=1)))
        alpha = np.ones(k, dtype=f32)
        critic_ess = 1.0   # share of k: the effective sample size of the weights in use
        counts = np.floor(props * batch).astype(np.int64)
        counts[np.argmax(props)] += batch - counts.sum()
        # labels sorted by class: class sums and per-class gradients are contiguous slices
        y = np.repeat(np.arange(c), counts)
        loss = EmbeddingLoss(w64, emb_noisy, counts, f32, pool=pool, workers=workers)
        inp = np.empty((batch, cfg.z_dim + c), dtype=f32)
        inp[:, cfg.z_dim:] = np.eye(c, dtype=f32)[y]
        report_every = max(1, cfg.steps // 200)
        for step in range(cfg.steps):
            cancel.check()
            frac = step / max(1, cfg.steps - 1)
            opt.lr = cfg.lr * (cfg.lr_decay + (1 - cfg.lr_decay) * 0.5 * (1 + math.cos(math.pi * frac)))
            inp[:, :cfg.z_dim] = standard_normal_f32(gen, (batch, cfg.z_dim))
            out = net.forward(inp)
            resid = loss.residual(out)
            cancel.check()                                          # mid-step too: cancel < 0.5 s
            net.backward(loss.gradient(resid, alpha))              # fills net.gflat
            opt.step(params, grads)
            if cfg.critic and (step + 1) % cfg.critic_every == 0:
                r = (resid[:, :k] ** 2 + resid[:, k:] ** 2).sum(axis=0).astype(np.float64)  # (k,)
                s2 = np.exp(2 * log_s["log_s"])
                ll = -np.log(np.sqrt(s2)).sum() - 0.5 * (t2 / s2).sum(axis=1) + l0
                a = np.exp(ll - ll.max())
                a /= a.sum()
                gl = k * a * (r - (a * r).sum())          # dL/dl_i
                grad = (gl @ t2) / s2 - gl.sum()
                copt.step(log_s, {"log_s": grad}, ascend=True)
                s2 = np.exp(2 * log_s["log_s"])
                ll = -np.log(np.sqrt(s2)).sum() - 0.5 * (t2 / s2).sum(axis=1) + l0
                a = np.exp(ll - ll.max())
                alpha = mix_to_min_ess(k * a / a.sum(), cfg.critic_min_ess).astype(f32)
                critic_ess = k / float(np.square(alpha, dtype=np.float64).sum())
            if step % report_every == 0:
                progress(0.02 + 0.98 * frac, f"{cfg.label} generator step {step}/{cfg.steps}")
        progress(1.0, "done")
        return net, critic_ess

    # exposed for tests: the critic objective and gradient
    @staticmethod
    def critic_objective(log_s, t2, r, l0):
        s2 = np.exp(2 * log_s)
        ll = -log_s.sum() - 0.5 * (t2 / s2).sum(axis=1) + l0
        a = np.exp(ll - ll.max())
        a /= a.sum()
        k = len(r)
        val = k * (a * r).sum()
        gl = k * a * (r - (a * r).sum())
        grad = (gl @ t2) / s2 - gl.sum()
        return val, grad


class PearlSynthesizer(EmbeddingSynthesizer):
    name = "pearl"
