"""MST-style marginal synthesizer (McKenna, Miklau & Sheldon 2021; AIM-style selection score).

Domain (public only).  A numeric column is cut into bins computed from its PUBLIC spec only
(bounds and integer flag; :func:`column_bins`, ``binning="auto"``): integer columns with at most
``max_values`` (32) values get one bin per value (education-num 1..16); non-negative columns
whose upper bound is >= 1000 x max(low, 1) (amounts spanning three or more decades, e.g.
capital-gain 0..99,999) get a bin [low, low + 1) for their zeros and ``bins - 1`` log-spaced bins;
other columns get ``bins`` (16) equal-width bins; bins of integer columns hold whole integers.
``binning="uniform"`` is the original ``bins`` equal-width scheme.  No quantile or other
statistic of the data is used, so the bins cost no privacy.  A categorical column (and the
label) has its public categories plus one hidden "unknown" cell that receives values outside
the list (measured like any cell, never sampled).  A column that may be missing
(``ColumnSpec.missing``) has one more cell, "missing", for its empty cells: measured, estimated
and sampled like any value and never merged by domain compression, so the synthetic table has
empty cells at the rate (and with the dependences on the tree) that the noisy marginals show.

Releases (replace-one neighbours, n public), zCDP budget rho split by ``budget`` =
(1-way, selection, 2-way) shares, default 1/3 each:

* 1-way marginals of every column on the full public domain: count vectors; a replaced record
  moves one unit between two cells, L2 sensitivity sqrt(2) -> Gaussian (grid-snapped),
  mu_1^2/2 = rho_1 / d each.
* domain compression (post-processing of the 1-way releases, as in MST): cells whose noisy
  count is <= ``compress`` (3) x sigma_1 are merged into one "other" cell per column (the
  unknown cell always goes there, the missing cell never does); the merge map is a function
  of released values only, so the later queries are chosen adaptively from public outputs
  (adaptive composition holds).
* tree selection: Kruskal on the complete graph, each of the d-1 rounds picks an edge among
  those joining two components with the exponential mechanism, score
  q(i,j) = || M_ij(D) - n p_i (x) p_j ||_1 - penalty sqrt(2/pi) sigma_2 |cells_ij|
  (true compressed 2-way counts vs. the independence estimate from the released 1-way
  marginals, minus the expected L1 error that measuring a table of that size with the 2-way
  noise sigma_2 would add - AIM's penalty, McKenna et al. 2022).  The penalty depends only on
  public quantities (sigma_2 from the budget, cell counts from the released compression), so
  it cancels in q(D) - q(D'); replacing a record changes M_ij(D) in at most two cells by one
  each, so |q(D) - q(D')| <= 2 = Delta.  The mechanism samples with probability
  proportional to exp(eps_r q / (2 Delta)) (exact sampling on the secure RandomSource), which is
  eps_r-DP and eps_r-bounded-range, hence eps_r^2/8-zCDP (Cesar & Rogers 2021):
  (d-1) eps_r^2/8 = rho_sel.  With a zero selection share no mechanism runs (a fixed,
  data-independent chain) and nothing is charged.
* 2-way marginals of the d-1 tree edges on the compressed domains: L2 sensitivity sqrt(2)
  -> Gaussian, mu_2^2/2 = rho_2 / (d-1) each.

Total: rho-zCDP with rho = sum mu_i^2/2 + (d-1) eps_r^2/8 = rho_1 + rho_sel + rho_2, converted
to (eps, delta) with the improved conversion; rho is chosen by bisection so the total equals
the recipe's (eps, delta).  All noise comes from the secure RandomSource (release_gaussian's
discrete Gaussian, exp_mech_choice's uniforms).

Estimation (post-processing): each column's compressed marginal is the inverse-variance average
of its own noisy 1-way (summed over merged cells, variance multiplied by their number) and of
the sums of the noisy tree tables touching it, clipped at 0 and normalised (structural "unknown"
cell set to 0).  Each tree table is then projected in least squares onto the non-negative
tables with those two margins (``estimator="project"``: Dykstra's algorithm, then IPF to match
the margins exactly; ``"ipf"``: clip at 0 then IPF), so every table agrees with the shared 1-way
marginals and the tree model is consistent.  Sampling goes down the tree from the label (root
marginal, then child | parent from each edge's table, every edge used once); a merged "other"
cell is expanded to one of its original cells by their noisy 1-way counts shrunk toward their
mean (:func:`~.cells.merged_weights`);
numbers are decoded uniformly within their bin (integer columns: uniformly over the bin's
integers, exact for one-value bins).

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
from ..progress import NEVER_CANCELLED, CancelToken, no_progress
from ..rng import RandomSource
from .base import FittedSynth, Synthesizer
from .cells import CellLayout, draw_rows, expand, merged_weights, noisy_fidelity
from .counts import MarginalCounts
from .encoding import FloatArray, IntArray, TableSpec
from .privacy import release_gaussian, selection_loss, zcdp_rho_for, zcdp_total

Edge = tuple[int, int]


def pair_counts(a: IntArray, b: IntArray, ma: int, mb: int) -> FloatArray:
    return np.bincount(a * mb + b, minlength=ma * mb).reshape(ma, mb).astype(np.float64)


def selection_score(counts_ij: FloatArray, p_i: FloatArray, p_j: FloatArray, n: int) -> float:
    """L1 distance of the true 2-way counts from the independence estimate (sensitivity 2)."""
    return float(np.abs(counts_ij - n * np.outer(p_i, p_j)).sum())


def exp_mech_choice(scores: Sequence[float], eps: float, sensitivity: float, rng: RandomSource) -> int:
    """Exponential mechanism: index i with probability ∝ exp(eps q_i / (2 Delta)).

    Sampled exactly (rejection with exact Bernoulli coins on the secure source) by the
    product's ExponentialMechanism sampler; only the chosen index is released."""
    if math.isinf(eps):
        return int(np.argmax(scores))
    from dpstudio.engine.mechanisms.exponential import sample_log_weights

    logits = eps * np.asarray(scores, dtype=np.float64) / (2.0 * sensitivity)
    return int(sample_log_weights(logits[None, :], rng)[0])


def ipf(table: FloatArray, r: FloatArray, c: FloatArray, iters: int = 50) -> FloatArray:
    t = np.maximum(table, 0) + 1e-9
    for _ in range(iters):
        rs = t.sum(axis=1)
        t *= np.where(rs > 0, r / np.maximum(rs, 1e-300), 0)[:, None]
        cs = t.sum(axis=0)
        t *= np.where(cs > 0, c / np.maximum(cs, 1e-300), 0)[None, :]
    return t


def project_table(table: npt.ArrayLike, r: FloatArray, c: FloatArray, iters: int = 300) -> FloatArray:
    """Least-squares projection of a noisy table onto {X >= 0, X 1 = r, X^T 1 = c}.

    Dykstra's alternating projections (the affine set needs no correction term), then a few
    IPF sweeps so the non-negative result matches the margins exactly.  Unlike clipping at 0
    followed by IPF, it does not keep the positive part of the noise in empty cells."""
    t = np.asarray(table, dtype=np.float64)
    m, k = t.shape
    r = np.asarray(r, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64) * (r.sum() / max(c.sum(), 1e-300))
    x = t.copy()
    q = np.zeros_like(t)
    for _ in range(iters):
        rr = r - x.sum(axis=1)
        cc = c - x.sum(axis=0)
        y = x + rr[:, None] / k + cc[None, :] / m - rr.sum() / (m * k)
        z = y + q
        x = np.maximum(z, 0.0)
        q = z - x
    return ipf(x, r, c, iters=20)


class FittedMST(FittedSynth):
    def __init__(
        self,
        layout: CellLayout,
        marg: list[FloatArray],
        tables: dict[Edge, FloatArray],
        order: list[tuple[int | None, int]],
        components: list[PrivacyLoss],
        total: PrivacyLoss,
        info: dict[str, Any],
        decompress: list[FloatArray | None],
    ) -> None:
        self.layout = layout
        self.spec, self.enc, self.sizes, self.col_bins = layout.spec, layout.enc, layout.sizes, layout.col_bins
        self.marg, self.tables, self.order = marg, tables, order
        self.components, self._total, self.info = components, total, info
        self.decompress = decompress  # per column: (compressed cells, original cells) probabilities
        self.noisy_one_way: list[FloatArray] | None = None  # set by fit: the 1-way releases

    def privacy_loss(self) -> PrivacyLoss:
        return self._total

    def marginal_fidelity(self, synthetic: pd.DataFrame) -> dict[str, float] | None:
        """Total variation between each column of ``synthetic`` and the noisy one-way marginal
        MST measured (clipped at zero, normalised; the hidden unknown cell left out).  Both sides
        are DP outputs (the measurement and a sample of the fitted model), so the figure is a
        post-processing and costs no budget."""
        noisy = self.noisy_one_way
        if noisy is None:
            return None
        return noisy_fidelity(self.layout, noisy, synthetic)

    def sample(self, n_rows: int, rng: RandomSource) -> pd.DataFrame:
        gen = rng.numpy_generator()
        n = int(n_rows)
        d = len(self.sizes)
        codes = np.full((n, d), -1, dtype=np.int64)
        root = self.order[0][1]
        codes[:, root] = draw_rows(self.marg[root][None, :], np.zeros(n, dtype=np.int64), gen)
        for parent, child in self.order[1:]:
            assert parent is not None  # only the root, order[0], has none
            t = self.tables[(parent, child)]  # (m_parent, m_child)
            rs = t.sum(axis=1, keepdims=True)
            cond = np.where(rs > 0, t / np.maximum(rs, 1e-300), self.marg[child][None, :])
            codes[:, child] = draw_rows(cond, codes[:, parent], gen)
        return self.layout.decode(expand(codes, self.decompress, gen), gen)


class MSTSynthesizer(Synthesizer):
    name = "mst"

    def __init__(
        self,
        bins: int = 16,
        label: str = "MST",
        *,
        binning: str = "auto",
        max_values: int = 32,
        budget: Sequence[float] = (1.0, 1.0, 1.0),
        compress: float = 3.0,
        penalty: float = 1.0,
        estimator: str = "project",
    ) -> None:
        self.bins = int(bins)
        self.label = label
        self.binning = str(binning)
        self.max_values = int(max_values)
        b = tuple(float(v) for v in budget)
        if len(b) != 3 or any(v < 0 for v in b) or b[0] <= 0 or b[2] <= 0:
            raise ValueError("budget: three non-negative shares (1-way, selection, 2-way), 1-way and 2-way > 0")
        self.budget = tuple(v / sum(b) for v in b)
        self.compress = float(compress)
        self.penalty = float(penalty)
        if estimator not in ("project", "ipf"):
            raise ValueError("estimator: project or ipf")
        self.estimator = estimator

    def budget_plan(self, epsilon: float, delta: float, n: int, n_classes: int) -> list[dict[str, Any]]:
        share1, share_sel, share2 = self.budget
        plan: list[dict[str, Any]] = [{"part": "1-way marginals (Gaussian)", "share": share1}]
        if share_sel > 0:
            plan.append({"part": "tree selection (exponential mechanism)", "share": share_sel})
        plan.append({"part": "2-way marginals along the tree (Gaussian)", "share": share2})
        return plan

    def one_way_mu(self, epsilon: float, delta: float, d: int) -> float:
        """The GDP mu of each of the ``d`` 1-way releases at (``epsilon``, ``delta``): what
        :meth:`fit_counts` draws them with (public: a budget-from-targets forecast reads it)."""
        rho = zcdp_rho_for(epsilon, delta) if math.isfinite(epsilon) else math.inf
        return math.sqrt(2.0 * self.budget[0] * rho / d) if math.isfinite(rho) else math.inf

    def layout(self, spec: TableSpec) -> CellLayout:
        """The public cells the fit uses (bins and categories from ``spec`` and the options)."""
        return CellLayout(spec, self.bins, self.binning, self.max_values)

    def cliques_needed(self, spec: TableSpec) -> list[tuple[int, ...]]:
        """The full-domain cliques :meth:`fit_counts` reads: every column and every pair (the
        selection scores every pair; the tree's 2-way tables are pairs).  Public: from the
        number of columns only."""
        d = self.layout(spec).d
        return [(j,) for j in range(d)] + [(i, j) for i in range(d) for j in range(i + 1, d)]

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
    ) -> FittedMST:
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
    ) -> FittedMST:
        """The fit from exact counts of :meth:`cliques_needed` over :meth:`layout`'s cells (the
        only view of the private data; ``counts.n`` is the number of records)."""
        t0 = time.perf_counter()
        layout = self.layout(spec)
        col_bins = layout.col_bins
        sizes = layout.sizes
        counts.check(sizes, self.cliques_needed(spec))
        n, d = counts.n, layout.d
        rho = zcdp_rho_for(epsilon, delta) if math.isfinite(epsilon) else math.inf
        finite = math.isfinite(rho)
        share1, share_sel, share2 = self.budget
        sens = math.sqrt(2.0)
        comps = []
        # the hidden "unknown" cell of categorical columns: a structural zero for sampling
        unknown = [layout.hidden[j][0] if layout.hidden[j] else None for j in range(d)]
        # ---- 1-way marginals (full public domains)
        mu1 = self.one_way_mu(epsilon, delta, d)
        one: list[FloatArray] = []
        var1: list[float] = []
        for j in range(d):
            cancel.check()
            cnt = counts.counts((j,))
            noisy, loss = release_gaussian(rng, cnt, sens, mu1, delta, f"{self.label}: 1-way {self._name(spec, j)}")
            comps.append(loss)
            one.append(noisy)
            var1.append(loss.details["sigma"] ** 2)
        # ---- domain compression (post-processing of the 1-way releases)
        cmap: list[IntArray] = []
        csizes: list[int] = []
        czero: list[int | None] = []
        decompress: list[FloatArray | None] = []
        for j in range(d):
            keep = one[j] > self.compress * math.sqrt(var1[j])
            if unknown[j] is not None:
                keep[unknown[j]] = False
            if layout.missing_cell[j] is not None:
                keep[layout.missing_cell[j]] = True  # "missing" is a value of its own, never "(other)"
            if self.compress < 0 or (~keep).sum() <= 1:
                keep = np.ones(sizes[j], dtype=bool)  # nothing (or one cell) to merge
            mp = np.full(sizes[j], -1, dtype=np.int64)
            mp[keep] = np.arange(int(keep.sum()))
            other = ~keep
            m_c = int(keep.sum()) + int(other.any())
            mp[other] = m_c - 1
            cmap.append(mp)
            csizes.append(m_c)
            members = [np.flatnonzero(mp == g) for g in range(m_c)]
            zero = [g for g in range(m_c) if unknown[j] is not None and list(members[g]) == [unknown[j]]]
            czero.append(zero[0] if zero else None)
            if other.any():
                spread = other.copy()
                if unknown[j] is not None:
                    spread[unknown[j]] = False  # never sampled (other has >= 2 cells here)
                dm = np.zeros((m_c, sizes[j]))
                dm[mp[keep], np.flatnonzero(keep)] = 1.0
                dm[m_c - 1] = merged_weights(one[j], math.sqrt(var1[j]), spread)
                decompress.append(dm)
            else:
                decompress.append(None)
        one_c = [np.bincount(cmap[j], weights=one[j], minlength=csizes[j]) for j in range(d)]
        var1_c = [np.bincount(cmap[j], minlength=csizes[j]) * var1[j] for j in range(d)]
        p_hat = [self._normalise(one_c[j], czero[j]) for j in range(d)]
        progress(0.2, "1-way marginals measured")
        # ---- tree selection (exponential mechanism, zCDP eps^2/8 per round)
        mu2 = math.sqrt(2.0 * share2 * rho / max(d - 1, 1)) if finite else math.inf
        sigma2 = sens / mu2 if finite else 0.0
        eps_r = math.sqrt(8.0 * share_sel * rho / max(d - 1, 1)) if finite else math.inf
        comp_of = list(range(d))
        edges: list[Edge] = []
        pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
        scores: dict[Edge, float] = {}
        pair_c: dict[Edge, FloatArray] = {}
        for i, j in pairs:
            pair_c[(i, j)] = counts.compressed((i, j), cmap, csizes).reshape(csizes[i], csizes[j])
            scores[(i, j)] = (
                selection_score(pair_c[(i, j)], p_hat[i], p_hat[j], n)
                - self.penalty * math.sqrt(2.0 / math.pi) * sigma2 * csizes[i] * csizes[j]
            )
        for r in range(d - 1):
            cancel.check()
            cand = [(i, j) for (i, j) in pairs if comp_of[i] != comp_of[j]]
            if eps_r > 0:
                pick = cand[exp_mech_choice([scores[e] for e in cand], eps_r, 2.0, rng)]
            else:  # no selection budget: a data-independent choice (the first candidate)
                pick = cand[0]
            edges.append(pick)
            old, new = comp_of[pick[1]], comp_of[pick[0]]
            comp_of = [new if c == old else c for c in comp_of]
            if eps_r > 0:
                comps.append(selection_loss(eps_r, 2.0, f"{self.label}: tree edge {r + 1} (exponential mechanism)"))
        progress(0.5, "tree selected")
        # ---- 2-way measurements (compressed domains)
        noisy_tab: dict[Edge, FloatArray] = {}
        var2: dict[Edge, float] = {}
        for i, j in edges:
            cancel.check()
            cnt = pair_c[(i, j)]
            noisy, loss = release_gaussian(
                rng, cnt, sens, mu2, delta, f"{self.label}: 2-way {self._name(spec, i)} x {self._name(spec, j)}"
            )
            comps.append(loss)
            noisy_tab[(i, j)] = noisy
            var2[(i, j)] = loss.details["sigma"] ** 2
        del pair_c
        # ---- consistent estimate (post-processing)
        marg: list[FloatArray] = []
        for j in range(d):
            if not finite:
                marg.append(self._normalise(one_c[j], czero[j]))
                continue
            num, den = one_c[j] / np.maximum(var1_c[j], 1e-300), 1.0 / np.maximum(var1_c[j], 1e-300)
            for (a, b), t in noisy_tab.items():
                if j in (a, b):
                    s = t.sum(axis=1) if j == a else t.sum(axis=0)
                    v = var2[(a, b)] * (t.shape[1] if j == a else t.shape[0])
                    num = num + s / max(v, 1e-300)
                    den = den + 1.0 / max(v, 1e-300)
            marg.append(self._normalise(num / den, czero[j]))
        tables: dict[Edge, FloatArray] = {}
        for (i, j), t in noisy_tab.items():
            if self.estimator == "project" and finite:
                fitted = project_table(t, marg[i] * n, marg[j] * n)
            else:
                fitted = ipf(t, marg[i] * n, marg[j] * n)
            s = fitted.sum()
            fitted = fitted / s if s > 0 else np.outer(marg[i], marg[j])
            tables[(i, j)] = fitted
            tables[(j, i)] = fitted.T
        # BFS order from the label (or column 0)
        root = d - 1 if spec.label is not None else 0
        adj: dict[int, list[int]] = {k: [] for k in range(d)}
        for i, j in edges:
            adj[i].append(j)
            adj[j].append(i)
        order: list[tuple[int | None, int]] = [(None, root)]
        seen, queue = {root}, [root]
        while queue:
            p = queue.pop(0)
            for c in adj[p]:
                if c not in seen:
                    seen.add(c)
                    order.append((p, c))
                    queue.append(c)
        total = zcdp_total(comps, delta, self.label)
        progress(1.0, "done")
        info: dict[str, Any] = {
            "edges": [(self._name(spec, i), self._name(spec, j)) for i, j in edges],
            "fit_seconds": time.perf_counter() - t0,
        }
        info["compressed_sizes"] = {self._name(spec, j): int(csizes[j]) for j in range(d)}
        info["bins"] = {c.name: b.kind for c, b in zip(spec.numeric, col_bins, strict=False)}
        model = FittedMST(layout, marg, tables, order, comps, total, info, decompress)
        model.noisy_one_way = one  # the 1-way releases themselves (DP outputs), for fidelity figures
        return model

    @staticmethod
    def _name(spec: TableSpec, j: int) -> str:
        if j < len(spec.columns):
            return spec.columns[j].name
        assert spec.label is not None  # column d - 1 is the label when there is one
        return spec.label.name

    @staticmethod
    def _normalise(v: npt.ArrayLike, unknown_cell: int | None) -> FloatArray:
        p: FloatArray = np.clip(np.asarray(v, dtype=np.float64), 0.0, None)
        if unknown_cell is not None:
            p[unknown_cell] = 0.0
        s: float = p.sum()
        if s <= 0:
            p = np.ones_like(p)
            if unknown_cell is not None:
                p[unknown_cell] = 0.0
            s = p.sum()
        return p / s
