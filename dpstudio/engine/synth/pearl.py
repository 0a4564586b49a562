"""PEARL (Liew, Takahashi & Ueno, ICLR 2022): DP synthetic data from a one-shot
private characteristic-function embedding, with an adversarially re-weighted generator loss.

Privacy (replace-one neighbours, n public), all releases Gaussian and composed exactly in GDP:

1. frequency scale sigma0 = DP mean distance of a fixed, data-independent pairing of the
   records (pairs (pi(2j), pi(2j+1)), pi a public random permutation).  Each record sits in
   exactly one of the P = floor(n/2) pairs and a pair distance lies in [0, diam] with
   diam = sqrt(4 n_num + 2 n_cat) (encoded domain; missing-value slots and indicator blocks
   leave it unchanged, see :mod:`.encoding`), so the replace-one L2 sensitivity of
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

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..accounting import PrivacyLoss
from ..progress import NEVER_CANCELLED, CancelToken, no_progress
from ..rng import RandomSource
from .base import FittedSynth, Synthesizer
from .encoding import Encoder, FloatArray, IntArray, TableSpec
from .mlp import BlockHeads, Floats, Generator, standard_normal_f32
from .privacy import attach_proven, lattice_mu_for, release_gaussian, release_scale, total_gaussian_loss
from .shards import UnguardedMainError, available_cores, run_shards
from .training import PROCESS_MIN_WORK, TrainSetup, critic_objective, make_shard

# PEARL's public names, defined in .training (explicit re-exports)
from .training import EmbeddingLoss as EmbeddingLoss
from .training import PearlConfig as PearlConfig
from .training import batch_pieces as batch_pieces
from .training import mix_to_min_ess as mix_to_min_ess

# --------------------------------------------------------------------------- DP statistics


def pair_distance_mean(x: Floats, perm: IntArray) -> float:
    """Mean distance over the disjoint pairs (perm[2j], perm[2j+1])."""
    p = len(perm) // 2
    a = x[perm[0 : 2 * p : 2]].astype(np.float64)
    b = x[perm[1 : 2 * p : 2]].astype(np.float64)
    return float(np.sqrt(((a - b) ** 2).sum(axis=1)).mean())


def pair_distance_sensitivity(n: int, diameter: float) -> float:
    return diameter / (n // 2)


def class_proportions(y: IntArray, n_classes: int) -> FloatArray:
    ok = y >= 0
    return np.bincount(y[ok], minlength=n_classes).astype(np.float64) / len(y)


def weighted_embedding(x: Floats, y: IntArray, w: FloatArray, n_classes: int, chunk: int = 4096) -> FloatArray:
    """(2k, C) matrix (1/n) sum_i phi(x_i) e_{y_i}^T, phi = [cos Wx, sin Wx]/sqrt(k).

    Records with unknown label (y = -1) contribute a zero column (still within the bound)."""
    n: int = x.shape[0]
    k: int = w.shape[0]
    out = np.zeros((2 * k, n_classes))
    for s in range(0, n, chunk):
        xs = x[s : s + chunk].astype(np.float64)
        ys = y[s : s + chunk]
        u = xs @ w.T.astype(np.float64)
        oh = np.zeros((len(ys), n_classes))
        ok = ys >= 0
        oh[np.nonzero(ok)[0], ys[ok]] = 1.0
        out[:k] += np.cos(u).T @ oh
        out[k:] += np.sin(u).T @ oh
    return out / (n * math.sqrt(k))


# --------------------------------------------------------------------------- model


class FittedEmbeddingSynth(FittedSynth):
    def __init__(
        self,
        encoder: Encoder,
        gen_net: Generator,
        props: FloatArray,
        z_dim: int,
        batch: int,
        components: list[PrivacyLoss],
        total: PrivacyLoss,
        cfg: PearlConfig,
        info: dict[str, Any],
    ) -> None:
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

    def _labels(self, n: int, gen: np.random.Generator) -> IntArray:
        c = len(self.props)
        counts = np.floor(self.props * n).astype(np.int64)
        rest = n - counts.sum()
        if rest > 0:
            counts += np.bincount(gen.choice(c, size=rest, p=self.props), minlength=c)
        y = np.repeat(np.arange(c), counts)
        gen.shuffle(y)
        return y

    def generate_encoded(self, n_rows: int, gen: np.random.Generator) -> tuple[npt.NDArray[np.float32], IntArray]:
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

    def _forward(self, y: IntArray, gen: np.random.Generator, c: int) -> Floats:
        z = standard_normal_f32(gen, (len(y), self.z_dim))
        inp = np.concatenate([z, np.eye(c, dtype=np.float32)[y]], axis=1)
        o = self.net.forward(inp)
        self.net.cache = None
        return o

    def sample(self, n_rows: int, rng: RandomSource) -> pd.DataFrame:
        gen = rng.numpy_generator()
        x, y = self.generate_encoded(int(n_rows), gen)
        labels = y if self.encoder.spec.label is not None else None
        return self.encoder.decode(
            x, labels, gen=gen, sample_categories=self.cfg.sample_categories, stretch=self.cfg.decode_stretch
        )


class EmbeddingSynthesizer(Synthesizer):
    """Shared machinery of PEARL and DP-MERF (characteristic-function / RFF mean embedding)."""

    name = "pearl"

    def __init__(self, config: PearlConfig | None = None, **overrides: Any) -> None:
        cfg = config or PearlConfig()
        for k, v in overrides.items():
            if not hasattr(cfg, k):
                raise TypeError(f"unknown option {k!r}")
            setattr(cfg, k, v)
        # checked before any private release is made
        if not 0 <= cfg.critic_min_ess <= 1:
            raise ValueError(f"critic_min_ess must lie in [0, 1], got {cfg.critic_min_ess}")
        if not isinstance(cfg.shards, int) or cfg.shards < 1:
            raise ValueError(f"shards must be a positive integer, got {cfg.shards!r}")
        if cfg.workers is not None and (not isinstance(cfg.workers, int) or cfg.workers < 1):
            raise ValueError(f"workers must be a positive integer or None, got {cfg.workers!r}")
        self.config = cfg

    #: the frequency scale is always a public value (DP-MERF): no sigma0 release
    public_sigma0 = False
    #: Gaussian releases calibrated in Gaussian DP (Synthesizer.calculus)
    calculus = "gdp"

    def _mu_shares(self, n_classes: int) -> dict[str, float]:
        """mu^2 shares of the releases this config makes (they add up to 1)."""
        cfg = self.config
        shares: dict[str, float] = {}
        if cfg.fixed_sigma0 is None and not self.public_sigma0:
            shares["sigma0"] = cfg.sigma0_share
        if n_classes > 1 and not cfg.one_release:
            shares["counts"] = cfg.counts_share
        shares["embedding"] = 1.0 - sum(shares.values())
        return shares

    def _lattice_dim(self, n_classes: int) -> int:
        """Coordinates released on the lattice (for the discrete law's correction)."""
        cfg = self.config
        dims = {
            "sigma0": 1,
            "counts": n_classes,
            "embedding": 2 * cfg.k * n_classes + (n_classes if cfg.one_release and n_classes > 1 else 0),
        }
        return sum(dims[key] for key in self._mu_shares(n_classes))

    def budget_plan(self, epsilon: float, delta: float, n: int, n_classes: int) -> list[dict[str, Any]]:
        cfg = self.config
        mu = lattice_mu_for(epsilon, delta, self._lattice_dim(n_classes))
        names = {
            "sigma0": "frequency scale (mean pair distance)",
            "counts": "class proportions",
            "embedding": "embedding + class proportions"
            if (cfg.one_release and n_classes > 1)
            else "weighted embedding",
        }
        plan = []
        for key, share in self._mu_shares(n_classes).items():
            entry: dict[str, Any] = {"part": names[key], "share": share}
            if key == "counts":
                entry["dim"] = n_classes
                entry["sigma"] = release_scale(math.sqrt(2.0) / n, mu * math.sqrt(share), n_classes)[2]
            elif key == "embedding":
                dim = 2 * cfg.k * n_classes + (n_classes if cfg.one_release and n_classes > 1 else 0)
                entry["dim"] = dim
                entry["sigma"] = release_scale(2.0 / n, mu * math.sqrt(share), dim)[2]
            plan.append(entry)  # sigma0's noise depends on the encoded domain's diameter
        return plan

    # ---- the private part: all access to the data happens here
    def _releases(
        self,
        x: Floats,
        y: IntArray,
        enc: Encoder,
        n_classes: int,
        mu_total: float,
        delta: float,
        rng: RandomSource,
        gen: np.random.Generator,
    ) -> tuple[FloatArray, FloatArray, FloatArray, list[PrivacyLoss], dict[str, Any]]:
        cfg = self.config
        n = x.shape[0]
        comps = []
        shares = self._mu_shares(n_classes)
        info: dict[str, Any] = {}
        # 1. frequency scale
        if cfg.fixed_sigma0 is not None:
            sigma0 = float(cfg.fixed_sigma0)
            info["sigma0_source"] = "public fixed value"
        else:
            perm = gen.permutation(n)
            sens = pair_distance_sensitivity(n, enc.diameter)
            mu = mu_total * math.sqrt(shares["sigma0"])
            val, loss = release_gaussian(
                rng,
                np.array([pair_distance_mean(x, perm)]),
                sens,
                mu,
                delta,
                f"{cfg.label}: frequency scale (mean pair distance)",
            )
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
        mu_e = mu_total * math.sqrt(shares["embedding"])
        if n_classes > 1 and cfg.one_release:
            # joint vector [vec(E), c]: if y = y' only E moves (<= 2/n); if y != y' E moves by
            # sqrt(2)/n and c by sqrt(2)/n: sqrt(2 + 2)/n.  Sensitivity 2/n either way.
            props = class_proportions(y, n_classes)
            vec = np.concatenate([emb.ravel(), props])
            sens = 2.0 / n
            val, loss = release_gaussian(rng, vec, sens, mu_e, delta, f"{cfg.label}: embedding + class proportions")
            comps.append(loss)
            emb_noisy = val[: emb.size].reshape(emb.shape)
            props_noisy = val[emb.size :]
        else:
            if n_classes > 1:
                mu_c = mu_total * math.sqrt(shares["counts"])
                sens = math.sqrt(2.0) / n
                props_noisy, loss = release_gaussian(
                    rng, class_proportions(y, n_classes), sens, mu_c, delta, f"{cfg.label}: class proportions"
                )
                comps.append(loss)
            else:
                props_noisy = np.ones(1)
            sens = 2.0 / n
            emb_noisy, loss = release_gaussian(rng, emb, sens, mu_e, delta, f"{cfg.label}: weighted embedding")
            comps.append(loss)
        props = np.clip(props_noisy, 0.0, None)
        props = props / props.sum() if props.sum() > 0 else np.full(n_classes, 1.0 / n_classes)
        return w, emb_noisy, props, comps, info

    def fit(
        self,
        frame: pd.DataFrame,
        spec: TableSpec,
        *,
        epsilon: float,
        delta: float,
        rng: RandomSource,
        progress: Callable[[float, str], None] = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> FittedEmbeddingSynth:
        cfg = self.config
        t0 = time.perf_counter()
        enc = Encoder(spec)
        x = enc.encode(frame, dtype=np.float32)
        y = enc.label_codes(frame)
        n = x.shape[0]
        c = spec.n_classes
        gen = rng.numpy_generator()
        # continuous GDP mu shaved so the DISCRETE law meets (eps, delta) (privacy.lattice_mu_for)
        mu_total = lattice_mu_for(epsilon, delta, self._lattice_dim(c)) if math.isfinite(epsilon) else math.inf
        cancel.check()
        w, emb_noisy, props, comps, info = self._releases(x, y, enc, c, mu_total, delta, rng, gen)
        self._bandwidths = np.asarray(info["freq_bandwidths"])
        del x
        total = attach_proven(total_gaussian_loss(comps, delta, cfg.label), comps, epsilon, delta)
        progress(0.02, "private embedding released")
        net, critic_ess, layout = self._train(enc, w, emb_noisy, props, n, gen, progress, cancel)
        info["fit_seconds"] = time.perf_counter() - t0
        info["critic_final_ess"] = critic_ess
        info.update({f"train_{key}": value for key, value in layout.items()})
        batch = max(64, int(round(cfg.batch_frac * n)))
        return FittedEmbeddingSynth(enc, net, props, cfg.z_dim, batch, comps, total, cfg, info)

    # ---- post-processing: generator training against the noisy embedding
    def _train(
        self,
        enc: Encoder,
        w64: FloatArray,
        emb_noisy: FloatArray,
        props: FloatArray,
        n: int,
        gen: np.random.Generator,
        progress: Callable[[float, str], None],
        cancel: CancelToken,
    ) -> tuple[Generator, float, dict[str, Any]]:
        """Train the generator against the released embedding (post-processing only).

        The batch is cut into ``config.shards`` fixed shards, run in worker processes when
        that pays off (see :mod:`.shards`) and one after another here otherwise: the same
        computation either way (bit for bit when BLAS runs one thread)."""
        cfg = self.config
        c = len(props)
        batch = max(64, int(round(cfg.batch_frac * n)))
        heads = BlockHeads(enc.n_num, enc.sizes)
        net = Generator(cfg.z_dim + c, cfg.hidden, heads, gen)
        counts = np.floor(props * batch).astype(np.int64)
        counts[np.argmax(props)] += batch - counts.sum()
        n_shards = max(1, min(int(cfg.shards), batch // 32))
        setup = TrainSetup(
            cfg=cfg,
            n_num=enc.n_num,
            sizes=np.asarray(enc.sizes),
            dim=enc.dim,
            w=w64,
            target=emb_noisy,
            counts=counts,
            init=net.flat.copy(),
            noise_seeds=[int(v) for v in gen.integers(0, 2**63, size=n_shards)],
            bandwidths=np.asarray(self._bandwidths, dtype=np.float64),
            n_shards=n_shards,
        )
        workers = self._workers(n_shards, batch)
        slot_len = max(net.flat.size, 2 * cfg.k * c, 2 * cfg.hidden)
        layout: dict[str, Any] = {"shards": n_shards, "processes": workers if workers > 1 else 0}
        stats: dict[str, list[float]] = {}

        def train(processes: bool) -> tuple[Floats, float]:
            return run_shards(
                make_shard,
                setup,
                n_shards,
                cfg.steps,
                processes=processes,
                slot_len=slot_len,
                label=f"{cfg.label} generator",
                progress=lambda f, m: progress(0.02 + 0.98 * f, m),
                cancel=cancel,
                stats=stats,
            )

        try:
            flat, critic_ess = train(workers > 1)
        except UnguardedMainError:
            raise
        except (OSError, RuntimeError) as e:
            if workers == 1:
                raise
            # worker processes could not be used here (no spawn, no shared memory, a frozen
            # bundle without freeze_support...): the in-process run gives the same result
            layout["processes"] = 0
            layout["processes_unavailable"] = f"{type(e).__name__}: {str(e).splitlines()[-1][:200]}"
            progress(0.02, f"{cfg.label}: worker processes unavailable; training in this process")
            flat, critic_ess = train(False)
        progress(1.0, "done")
        net.flat[...] = flat
        layout["worker_peak_rss_mb"] = stats.get("worker_peak_rss_mb", [])
        return net, critic_ess, layout

    def _workers(self, n_shards: int, batch: int) -> int:
        """Worker processes for a fit: none (1) for small jobs, where starting the processes
        (~0.3 s: a fresh interpreter importing numpy) costs more than it saves."""
        cfg = self.config
        if cfg.workers is not None:
            return max(1, min(int(cfg.workers), n_shards))
        if cfg.steps * batch < PROCESS_MIN_WORK:
            return 1
        return min(n_shards, available_cores())

    # exposed for tests: the critic objective and gradient the training uses
    critic_objective = staticmethod(critic_objective)


class PearlSynthesizer(EmbeddingSynthesizer):
    name = "pearl"
