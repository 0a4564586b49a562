"""AIM: an adaptive and iterative mechanism (McKenna, Mullins, Sheldon & Miklau 2022), in numpy.

Cells: :class:`~.cells.CellLayout` (public bins and categories; ``hidden`` cells are structural
zeros of the model: measured, never sampled).  Replace-one neighbours, n public.  zCDP budget
rho for the recipe's (eps, delta) (:func:`~.privacy.zcdp_rho_for`), spent exactly.

* T = ``rounds_per_column`` x d (default 8 d; the paper uses 16 d, 8 d measured the 1-way
  marginals better on validation runs carved from Adult train rows) fixes the starting scales: each
  Gaussian measurement gets mu^2/2 = alpha rho / T (alpha = 0.9) and each selection
  eps^2/8 = (1 - alpha) rho / T.
* Init: every 1-way marginal on the full public domain, Gaussian, L2 sensitivity sqrt(2) (a
  replaced record moves one unit between two cells), discrete Gaussian
  (:func:`~.privacy.release_gaussian`).  Domain compression as in MST (post-processing of those
  releases): cells with noisy count <= ``compress`` x sigma (default 3, MST's) merge into one
  "other" cell; a merged measurement cell has variance k sigma^2; a merged cell is sampled
  back into its cells by their shrunk noisy counts (:func:`~.cells.merged_weights`).
* Workload: every 2-way marginal, plus every 3-way marginal holding the label when the table
  has one.  Candidates = the workload's downward closure, weight w_r = sum over workload
  marginals s of |r ∩ s| (the paper's weights).
* Each round: if what is left is < 2 rounds at the current scales, the round uses all of it
  (alpha / 1 - alpha split) and is the last.  Candidates are filtered by the model-size limit
  (junction-tree cells with the candidate added <= ``max_cells`` x fraction of rho spent so far,
  or the candidate already inside the model), then one is chosen by the exponential mechanism
  (exact, :func:`~.mst.exp_mech_choice`) with score
  q_r = w_r (||M_r(D) - M_r(p_hat)||_1 - sqrt(2/pi) sigma |cells_r|).  Replacing one record
  changes M_r(D) by one unit in at most two cells, so ||M_r(D) - .||_1 moves by <= 2 and q_r by
  <= 2 w_r: sensitivity Delta = 2 max_r w_r (the paper states max w_r for add/remove neighbours).
  The penalty and M_r(p_hat) are functions of earlier releases only.  eps-DP and eps-bounded
  range, so eps^2/8-zCDP (Cesar & Rogers 2021).  The chosen marginal is measured with the
  Gaussian (sensitivity sqrt(2)), the model re-estimated (Private-PGM, :mod:`.pgm`, warm start,
  a capped number of mirror-descent steps), and if the estimate of the chosen marginal moved by
  <= sqrt(2/pi) sigma |cells_r| (the measurement barely changed it) the scales anneal: sigma
  halves, eps doubles (both shares x4).
* Final estimation with more iterations; sampling along the junction tree (systematic: counts
  per separator group rounded, :func:`~.pgm._inverse_cdf`); a merged "other" cell expands
  to one of its cells by their noisy 1-way counts shrunk toward their mean
  (:func:`~.cells.merged_weights`).

Total rho = sum of the component rhos (Gaussian mu^2/2, selections eps^2/8) = the target rho,
converted to (eps, delta) with Canonne, Kamath & Steinke 2020, Prop. 12.

Data access: the fit reads the records only through exact counts of the full-domain cliques
``cliques_needed(spec)`` (:class:`~.counts.MarginalCounts`, mergeable over batches), which
``fit_counts`` maps through the compression; ``fit(frame)`` counts the frame in one batch and
calls it, so a streamed or distributed count gives the same fit, bit for bit, for a fixed seed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..accounting import PrivacyLoss
from ..progress import NEVER_CANCELLED, CancelToken, no_progress, sub_progress
from ..rng import RandomSource
from .base import FittedSynth, Synthesizer
from .cells import CellLayout, expand, merged_weights, noisy_fidelity
from .counts import MarginalCounts
from .encoding import FloatArray, IntArray, TableSpec
from .mst import exp_mech_choice
from .pgm import Clique, MarkovModel, Measurement, cells, downward_closure, estimate, model_size
from .privacy import release_gaussian, release_scale, selection_loss, zcdp_rho_for, zcdp_total

_SQ2PI = math.sqrt(2.0 / math.pi)


class _ModelSize:
    """Junction-tree size of the model with one clique added (AIM's size rule), computed per
    connected component of the cliques' graph: min-fill elimination never mixes components, so
    the size is the sum over components and only the components the new clique touches change.
    Results are cached by (cliques of those components, new clique) across rounds."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = list(sizes)
        self.cache: dict[tuple[frozenset[Clique], Clique], int] = {}
        self.comp_of: dict[int, int] = {}
        self.comp_cliques: dict[int, frozenset[Clique]] = {}
        self.comp_size: dict[int, int] = {}
        self.total = 0

    def _size(self, cliques: frozenset[Clique], extra: Clique) -> int:
        key = (cliques, extra)
        if key not in self.cache:
            self.cache[key] = model_size(self.sizes, list(cliques) + ([extra] if extra else []))
        return self.cache[key]

    def set_model(self, cliques: Sequence[Clique]) -> None:
        parent: dict[int, int] = {}

        def find(a: int) -> int:
            while parent.setdefault(a, a) != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for c in cliques:
            for a in c[1:]:
                ra, rb = find(c[0]), find(a)
                if ra != rb:
                    parent[ra] = rb
            find(c[0])
        groups: dict[int, set[Clique]] = {}
        for c in cliques:
            groups.setdefault(find(c[0]), set()).add(c)
        self.comp_of = {a: find(a) for a in parent}
        self.comp_cliques = {r: frozenset(g) for r, g in groups.items()}
        self.comp_size = {r: self._size(g, ()) for r, g in self.comp_cliques.items()}
        self.total = sum(self.comp_size.values())

    def with_clique(self, c: Clique) -> int:
        touched = {self.comp_of[a] for a in c}
        union = frozenset().union(*(self.comp_cliques[r] for r in touched))
        return self.total - sum(self.comp_size[r] for r in touched) + self._size(union, c)


class FittedAIM(FittedSynth):
    def __init__(
        self,
        layout: CellLayout,
        model: MarkovModel,
        decompress: list[FloatArray | None],
        components: list[PrivacyLoss],
        total: PrivacyLoss,
        info: dict[str, Any],
    ) -> None:
        self.layout = layout
        self.spec, self.sizes = layout.spec, layout.sizes
        self.model = model
        self.decompress = decompress
        self.components, self._total, self.info = components, total, info
        self.noisy_one_way: list[FloatArray] | None = None  # set by fit: the 1-way releases

    def privacy_loss(self) -> PrivacyLoss:
        return self._total

    def marginal_fidelity(self, synthetic: pd.DataFrame) -> dict[str, float] | None:
        """Total variation between each column of ``synthetic`` and the noisy one-way marginal
        AIM measured (clipped at zero, normalised, hidden cells left out): both sides are DP
        outputs, so the figure is a post-processing."""
        noisy = self.noisy_one_way
        if noisy is None:
            return None
        return noisy_fidelity(self.layout, noisy, synthetic)

    def sample(self, n_rows: int, rng: RandomSource) -> pd.DataFrame:
        gen = rng.numpy_generator()
        codes = self.model.sample(int(n_rows), gen)
        return self.layout.decode(expand(codes, self.decompress, gen), gen)


class AIMSynthesizer(Synthesizer):
    name = "aim"

    def __init__(
        self,
        bins: int = 16,
        label: str = "AIM",
        *,
        binning: str = "auto",
        max_values: int = 32,
        rounds_per_column: int = 8,
        alpha: float = 0.9,
        max_cells: int = 1_000_000,
        compress: float = 3.0,
        iters: int = 100,
        final_iters: int = 1000,
        label_triples: bool = True,
    ) -> None:
        self.bins = int(bins)
        self.label = label
        self.binning = str(binning)
        self.max_values = int(max_values)
        if rounds_per_column < 1:
            raise ValueError("rounds_per_column: at least 1")
        if not 0.0 < alpha < 1.0:
            raise ValueError("alpha: the measurement share of a round, strictly between 0 and 1")
        self.rounds_per_column = int(rounds_per_column)
        self.alpha = float(alpha)
        self.max_cells = int(max_cells)
        self.compress = float(compress)
        self.iters = int(iters)
        self.final_iters = int(final_iters)
        self.label_triples = bool(label_triples)

    def budget_plan(self, epsilon: float, delta: float, n: int, n_classes: int) -> list[dict[str, Any]]:
        """Shares of rho: the d 1-way releases take alpha d / T = alpha / rounds_per_column; the
        adaptive rounds split the rest alpha (Gaussian) / 1 - alpha (selection)."""
        share1 = self.alpha / self.rounds_per_column
        rest = 1.0 - share1
        return [
            {"part": "1-way marginals (Gaussian)", "share": share1},
            {"part": "marginal selection, adaptive rounds (exponential mechanism)", "share": (1.0 - self.alpha) * rest},
            {"part": "selected 1-, 2- and 3-way marginals, adaptive rounds (Gaussian)", "share": self.alpha * rest},
        ]

    #: rows are drawn along the junction tree systematically (pgm.MarkovModel.sample): each
    #: group matches the model's distribution up to rounding, so a forecast has no sampling term
    systematic_sampling = True

    def one_way_mu(self, epsilon: float, delta: float, d: int) -> float:
        """The GDP mu of each of the ``d`` initial 1-way releases at (``epsilon``, ``delta``):
        what :meth:`fit_counts` draws them with (later rounds may measure a column again, which
        only adds information; a budget-from-targets forecast reads this one)."""
        rho = zcdp_rho_for(epsilon, delta) if math.isfinite(epsilon) else math.inf
        return math.sqrt(2.0 * self.alpha * rho / (self.rounds_per_column * d)) if math.isfinite(rho) else math.inf

    def layout(self, spec: TableSpec) -> CellLayout:
        """The public cells the fit uses (bins and categories from ``spec`` and the options)."""
        return CellLayout(spec, self.bins, self.binning, self.max_values)

    def _workload(self, d: int, has_label: bool) -> list[Clique]:
        """Every 2-way marginal, plus every 3-way one holding the label (public: from d)."""
        label_j = d - 1 if has_label else None
        workload: list[Clique] = [(i, j) for i in range(d) for j in range(i + 1, d)]
        if label_j is not None and self.label_triples:
            workload += [(i, j, label_j) for i in range(label_j) for j in range(i + 1, label_j)]
        if not workload:
            workload = [(j,) for j in range(d)]
        return workload

    def cliques_needed(self, spec: TableSpec) -> list[tuple[int, ...]]:
        """The full-domain cliques :meth:`fit_counts` reads: the 1-way marginals and the
        candidates (the workload's downward closure).  Public: from the number of columns and
        whether there is a label only."""
        d = self.layout(spec).d
        cands = downward_closure(self._workload(d, spec.label is not None))
        return [(j,) for j in range(d)] + [c for c in cands if len(c) > 1]

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
    ) -> FittedAIM:
        """In memory: the frame's cell codes counted in one batch, then :meth:`fit_counts`."""
        t0 = time.perf_counter()
        layout = self.layout(spec)
        counts = MarginalCounts(layout.sizes, self.cliques_needed(spec)).add(layout.codes(frame))
        fitted = self.fit_counts(counts, spec, epsilon=epsilon, delta=delta, rng=rng, progress=progress, cancel=cancel)
        fitted.info["fit_seconds"] = time.perf_counter() - t0
        return fitted

    def fit_counts(
        self,
        counts: MarginalCounts,
        spec: TableSpec,
        *,
        epsilon: float,
        delta: float,
        rng: RandomSource,
        progress: Callable[[float, str], None] = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> FittedAIM:
        """The fit from exact counts of :meth:`cliques_needed` over :meth:`layout`'s cells (the
        only view of the private data; ``counts.n`` is the number of records)."""
        t0 = time.perf_counter()
        layout = self.layout(spec)
        sizes = layout.sizes
        counts.check(sizes, self.cliques_needed(spec))
        n, d = counts.n, layout.d
        names = layout.names
        rho = zcdp_rho_for(epsilon, delta) if math.isfinite(epsilon) else math.inf
        finite = math.isfinite(rho)
        sens = math.sqrt(2.0)
        T = self.rounds_per_column * d
        mu = self.one_way_mu(epsilon, delta, d)
        eps_sel = math.sqrt(8.0 * (1.0 - self.alpha) * rho / T) if finite else math.inf
        comps: list[PrivacyLoss] = []
        rho_used = 0.0

        def gauss(value: FloatArray, mu_r: float, what: str) -> tuple[FloatArray, float]:
            noisy, loss = release_gaussian(rng, value, sens, mu_r, delta, f"{self.label}: {what}")
            loss.details["zcdp_rho"] = mu_r * mu_r / 2.0 if math.isfinite(mu_r) else math.inf
            comps.append(loss)
            return noisy, float(loss.details["sigma"])

        # ---- 1-way marginals on the full public domains
        one: list[FloatArray] = []
        sig1: list[float] = []
        for j in range(d):
            cancel.check()
            noisy, s = gauss(counts.counts((j,)), mu, f"1-way {names[j]}")
            one.append(noisy)
            sig1.append(s)
            rho_used += mu * mu / 2.0 if finite else 0.0
        # ---- domain compression (post-processing of the 1-way releases)
        cmap, csizes, zeros, decompress = self._compress(layout, one, sig1)
        meas: list[Measurement] = []
        for j in range(d):
            y1: FloatArray = np.bincount(cmap[j], weights=one[j], minlength=csizes[j]).astype(np.float64)
            var = np.bincount(cmap[j], minlength=csizes[j]).astype(np.float64) * sig1[j] ** 2
            meas.append(Measurement((j,), y1, np.sqrt(var) if finite else 1.0))
        progress(0.05, "1-way marginals measured")
        # ---- workload and candidates (compressed domains)
        workload = self._workload(d, spec.label is not None)
        cands = downward_closure(workload)
        weight = {c: float(sum(len(set(c) & set(w)) for w in workload)) for c in cands}
        answers = {c: counts.compressed(c, cmap, csizes).reshape([csizes[a] for a in c]) for c in cands}
        sel_sens = 2.0 * max(weight.values())
        model, step, _ = estimate(csizes, meas, n, zeros=zeros, iters=self.iters, cancel=cancel)
        sizer = _ModelSize(csizes)
        selected: list[Clique] = []
        anneals = 0
        t = 0
        terminate = False
        while not terminate:
            cancel.check()
            t += 1
            if finite:
                per_round = mu * mu / 2.0 + eps_sel * eps_sel / 8.0
                if rho - rho_used < 2.0 * per_round:
                    rem = max(rho - rho_used, 0.0)
                    mu = math.sqrt(2.0 * self.alpha * rem)
                    eps_sel = math.sqrt(8.0 * (1.0 - self.alpha) * rem)
                    terminate = True
                rho_used += mu * mu / 2.0 + eps_sel * eps_sel / 8.0
                limit = self.max_cells * min(rho_used / rho, 1.0)
            else:
                terminate = t >= T
                limit = float(self.max_cells)
            jt_sets = [set(c) for c in model.jt.cliques]
            sizer.set_model(model.cliques)
            ok: list[Clique] = []
            for c in cands:
                if any(set(c) <= s for s in jt_sets) or sizer.with_clique(c) <= limit:
                    ok.append(c)
            scores = []
            sig_by: dict[Clique, float] = {}
            for c in ok:
                m_c = cells(csizes, c)
                sig_c = release_scale(sens, mu, m_c)[2] if finite else 0.0
                sig_by[c] = sig_c
                err = float(np.abs(answers[c] - model.marginal(c)).sum())
                scores.append(weight[c] * (err - _SQ2PI * sig_c * m_c))
            if not finite and max(scores) <= 1e-9 * n * max(weight.values()):
                break  # exact measurements and nothing left to fit
            pick = ok[exp_mech_choice(scores, eps_sel, sel_sens, rng)]
            comps.append(
                selection_loss(eps_sel, sel_sens, f"{self.label}: selection round {t} (exponential mechanism)")
            )
            what = f"{len(pick)}-way " + " x ".join(names[a] for a in pick)
            if len(pick) == 1:  # a column measured again: told apart from the initial 1-way ones
                what += f" (round {t})"
            before = model.marginal(pick)
            y, s = gauss(answers[pick], mu, what)
            meas.append(Measurement(pick, y, s if finite else 1.0))
            selected.append(pick)
            model, step, _ = estimate(
                csizes, meas, n, zeros=zeros, warm=model, iters=self.iters, step=step, cancel=cancel
            )
            after = model.marginal(pick)
            if finite and not terminate and np.abs(after - before).sum() <= _SQ2PI * s * cells(csizes, pick):
                mu *= 2.0
                eps_sel *= 2.0
                anneals += 1
            progress(0.05 + 0.85 * (min(rho_used / rho, 1.0) if finite else t / T), f"round {t}: {what}")
        cancel.check()
        progress(0.9, "final estimate")
        model, step, _ = estimate(
            csizes,
            meas,
            n,
            zeros=zeros,
            warm=model,
            iters=self.final_iters,
            step=step,
            progress=sub_progress(progress, 0.9, 0.99),
            cancel=cancel,
        )
        total = zcdp_total(comps, delta, self.label)
        progress(1.0, "model fitted")  # not "done": the release goes on (sampling, writing)
        info: dict[str, Any] = {
            "cliques": [tuple(names[a] for a in c) for c in selected],
            "rounds": t,
            "anneals": anneals,
            "model_cells": int(model.size),
            "junction_tree": [tuple(names[a] for a in c) for c in model.jt.cliques],
            "compressed_sizes": {names[j]: int(csizes[j]) for j in range(d)},
            "bins": {c.name: b.kind for c, b in zip(spec.numeric, layout.col_bins, strict=False)},
            "fit_seconds": time.perf_counter() - t0,
        }
        fitted = FittedAIM(layout, model, decompress, comps, total, info)
        fitted.noisy_one_way = one
        return fitted

    def _compress(
        self, layout: CellLayout, one: list[FloatArray], sig1: list[float]
    ) -> tuple[list[IntArray], list[int], dict[int, npt.NDArray[np.bool_]], list[FloatArray | None]]:
        """MST's domain compression from the noisy 1-way counts (post-processing): per column
        the cell map, compressed sizes, structural zeros (compressed cells made of hidden cells
        only) and the expansion probabilities of merged cells."""
        cmap: list[IntArray] = []
        csizes: list[int] = []
        zeros: dict[int, npt.NDArray[np.bool_]] = {}
        decompress: list[FloatArray | None] = []
        for j in range(layout.d):
            m = int(layout.sizes[j])
            hidden = np.zeros(m, dtype=bool)
            hidden[list(layout.hidden[j])] = True
            keep = one[j] > self.compress * sig1[j]
            keep &= ~hidden
            if layout.missing_cell[j] is not None:
                keep[layout.missing_cell[j]] = True  # "missing" is a value of its own, never "(other)"
            if self.compress < 0 or (~keep).sum() <= 1:
                keep = np.ones(m, dtype=bool)
            mp = np.full(m, -1, dtype=np.int64)
            mp[keep] = np.arange(int(keep.sum()))
            other = ~keep
            m_c = int(keep.sum()) + int(other.any())
            mp[other] = m_c - 1
            cmap.append(mp)
            csizes.append(m_c)
            z = np.array([bool(np.all(hidden[mp == g])) for g in range(m_c)])
            if z.all():  # every cell hidden: nothing can be sampled; keep the model well defined
                z[:] = False
            if z.any():
                zeros[j] = z
            if other.any():
                spread = other & ~hidden
                dm = np.zeros((m_c, m))
                dm[mp[keep], np.flatnonzero(keep)] = 1.0
                dm[m_c - 1] = merged_weights(one[j], sig1[j], spread if spread.any() else other)
                decompress.append(dm)
            else:
                decompress.append(None)
        return cmap, csizes, zeros, decompress
