"""MST-style marginal synthesizer (McKenna, Miklau & Sheldon 2021, simplified).

Domain (public only): a numeric column is cut into ``bins`` equal-width bins of its PUBLIC
bounds; a categorical column (and the label) has its public categories plus one hidden
"unknown" cell that receives values outside the list (measured like any cell, never sampled).

Releases (replace-one neighbours, n public):

* 1-way marginals of every column: count vectors; a replaced record moves one unit between two
  cells, L2 sensitivity sqrt(2) -> Gaussian (grid-snapped), budget rho/3 split evenly.
* tree selection: Kruskal on the complete graph, each of the d-1 rounds picks an edge among
  those joining two components with the exponential mechanism, score
  q(i,j) = || M_ij(D) - n p_i (x) p_j ||_1 (true 2-way counts vs. the independence estimate
  from the already released 1-way marginals).  Replacing a record changes M_ij(D) in at most
  two cells by one each, so |q(D) - q(D')| <= 2 = Delta; the mechanism samples with
  probability proportional to exp(eps_r q / (2 Delta)), which is eps_r-DP and eps_r-bounded-range,
  hence eps_r^2/8-zCDP (Cesar & Rogers 2021).  Budget rho/3 = (d-1) eps_r^2 / 8.  (Basic
  composition of eps_r-DP rounds would charge (d-1) eps_r, far more: zCDP is the tighter valid
  bound and composes with the Gaussian measurements directly.)
* 2-way marginals of the d-1 tree edges: L2 sensitivity sqrt(2) -> Gaussian, budget rho/3.

Total: rho-zCDP with rho = sum mu_i^2/2 + (d-1) eps_r^2/8, converted to (eps, delta) with the
improved conversion; rho is chosen by bisection so the total equals the recipe's (eps, delta).

Estimation (post-processing): each column's marginal is the inverse-variance average of its
own noisy 1-way and of the sums of the noisy tree tables touching it, clipped at 0 and
normalised ("unknown" cell set to 0); each tree table is clipped at 0 and fitted by iterative
proportional fitting to its two column marginals, so all tables agree on the shared 1-way
marginals.  Sampling goes down the tree (root, then child | parent); numbers are decoded
uniformly within their bin.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from ..accounting import RDP_ORDERS, PrivacyLoss
from ..progress import NEVER_CANCELLED, no_progress
from .base import FittedSynth, Synthesizer
from .encoding import Encoder, TableSpec, _typed
from .privacy import release_gaussian, zcdp_epsilon, zcdp_rho_for


def _column_codes(frame, spec, enc: Encoder, bins: int):
    """(n, d) integer cell codes and the domain sizes (label last)."""
    cols, sizes = [], []
    if enc.n_num:
        v = enc.numeric_matrix(frame)
        t = (v - enc.low) / (enc.high - enc.low)
        b = np.minimum((t * bins).astype(np.int64), bins - 1)
    j_num = 0
    cat_codes = enc.category_codes(frame)
    j_cat = 0
    for c in spec.columns:
        if c.kind == "numeric":
            cols.append(b[:, j_num]); sizes.append(bins); j_num += 1
        else:
            m = len(c.categories)
            code = cat_codes[:, j_cat]
            cols.append(np.where(code < 0, m, code)); sizes.append(m + 1); j_cat += 1
    if spec.label is not None:
        m = len(spec.label.categories)
        code = enc.label_codes(frame)
        cols.append(np.where(code < 0, m, code)); sizes.append(m + 1)
    return np.column_stack(cols).astype(np.int64), np.array(sizes, dtype=np.int64)


def pair_counts(a, b, ma, mb):
    return np.bincount(a * mb + b, minlength=ma * mb).reshape(ma, mb).astype(np.float64)


def selection_score(counts_ij, p_i, p_j, n):
    """L1 distance of the true 2-way counts from the independence estimate (sensitivity 2)."""
    return float(np.abs(counts_ij - n * np.outer(p_i, p_j)).sum())


def exp_mech_choice(scores, eps, sensitivity, rng):
    """Exponential mechanism: index i with probability ∝ exp(eps q_i / (2 Delta)).

    Sampled by inverse CDF on the secure source's uniforms (``RandomSource.uniform``), like the
    product's ExponentialMechanism; only the chosen index is released."""
    if math.isinf(eps):
        return int(np.argmax(scores))
    from dpstudio.engine.mechanisms.exponential import sample_log_weights

    logits = eps * np.asarray(scores, dtype=np.float64) / (2.0 * sensitivity)
    return int(sample_log_weights(logits[None, :], rng)[0])


def ipf(table, r, c, iters=50):
    t = np.maximum(table, 0) + 1e-9
    for _ in range(iters):
        rs = t.sum(axis=1)
        t *= np.where(rs > 0, r / np.maximum(rs, 1e-300), 0)[:, None]
        cs = t.sum(axis=0)
        t *= np.where(cs > 0, c / np.maximum(cs, 1e-300), 0)[None, :]
    return t


class FittedMST(FittedSynth):
    def __init__(self, spec, enc, sizes, bins, marg, tables, order, components, total, info):
        self.spec, self.enc, self.sizes, self.bins = spec, enc, sizes, bins
        self.marg, self.tables, self.order = marg, tables, order
        self.components, self._total, self.info = components, total, info

    def privacy_loss(self):
        return self._total

    def sample(self, n_rows: int, rng) -> pd.DataFrame:
        gen = rng.numpy_generator()
        n = int(n_rows)
        d = len(self.sizes)
        codes = np.full((n, d), -1, dtype=np.int64)
        root = self.order[0][1]
        codes[:, root] = _draw(np.broadcast_to(self.marg[root], (n, self.sizes[root])), gen)
        for parent, child in self.order[1:]:
            t = self.tables[(parent, child)]  # (m_parent, m_child)
            rs = t.sum(axis=1, keepdims=True)
            cond = np.where(rs > 0, t / np.maximum(rs, 1e-300), self.marg[child][None, :])
            codes[:, child] = _draw(cond[codes[:, parent]], gen)
        return self._decode(codes, gen)

    def _decode(self, codes, gen):
        out = {}
        for j, c in enumerate(self.spec.columns):
            if c.kind == "numeric":
                u = (codes[:, j] + gen.random(len(codes))) / self.bins
                v = c.low + u * (c.high - c.low)
                out[c.name] = np.rint(v).astype(np.int64) if c.integer else v
            else:
                out[c.name] = _typed(np.asarray(c.categories, dtype=object)[codes[:, j]])
        if self.spec.label is not None:
            out[self.spec.label.name] = _typed(np.asarray(self.spec.label.categories, dtype=object)[codes[:, -1]])
        return pd.DataFrame(out)


def _draw(prob_rows, gen):
    cs = np.cumsum(prob_rows, axis=1)
    u = gen.random(len(cs)) * cs[:, -1]
    return np.minimum((cs < u[:, None]).sum(axis=1), cs.shape[1] - 1)


class MSTSynthesizer(Synthesizer):
    name = "mst"

    def __init__(self, bins: int = 16, label: str = "MST"):
        self.bins = int(bins)
        self.label = label

    def fit(self, frame, spec: TableSpec, *, epsilon, delta, rng, progress=no_progress,
            cancel=NEVER_CANCELLED):
        t0 = time.perf_counter()
        enc = Encoder(spec)
        x, sizes = _column_codes(frame, spec, enc, self.bins)
        n, d = x.shape
        rho = zcdp_rho_for(epsilon, delta) if math.isfinite(epsilon) else math.inf
        sens = math.sqrt(2.0)
        comps = []
        # known "unknown" cells: structural zeros for sampling
        unknown = [None if (j < len(spec.columns) and spec.columns[j].kind == "numeric") else sizes[j] - 1
                   for j in range(d)]
        # ---- 1-way
        mu1 = math.sqrt(2.0 * (rho / 3.0) / d) if math.isfinite(rho) else math.inf
        one, var1 = [], []
        for j in range(d):
            cancel.check()
            cnt = np.bincount(x[:, j], minlength=sizes[j]).astype(np.float64)
            noisy, loss = release_gaussian(rng, cnt, sens, mu1, delta, f"{self.label}: 1-way {self._name(spec, j)}")
            comps.append(loss)
            one.append(noisy)
            var1.append(loss.details["sigma"] ** 2)
        p_hat = [self._normalise(v, unknown[j]) for j, v in enumerate(one)]
        progress(0.2, "1-way marginals measured")
        # ---- tree selection (exponential mechanism, zCDP eps^2/8 per round)
        eps_r = math.sqrt(8.0 * (rho / 3.0) / max(d - 1, 1)) if math.isfinite(rho) else math.inf
        comp_of = list(range(d))
        edges = []
        pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
        scores = {}
        for (i, j) in pairs:
            scores[(i, j)] = selection_score(pair_counts(x[:, i], x[:, j], sizes[i], sizes[j]),
                                             p_hat[i], p_hat[j], n)
        for r in range(d - 1):
            cancel.check()
            cand = [(i, j) for (i, j) in pairs if comp_of[i] != comp_of[j]]
            pick = cand[exp_mech_choice([scores[e] for e in cand], eps_r, 2.0, rng)]
            edges.append(pick)
            old, new = comp_of[pick[1]], comp_of[pick[0]]
            comp_of = [new if c == old else c for c in comp_of]
            rdp = (tuple(float(min(eps_r * eps_r / 8.0 * a, eps_r)) for a in RDP_ORDERS)
                   if math.isfinite(eps_r) else None)
            comps.append(PrivacyLoss(epsilon=eps_r, delta=0.0, label=f"{self.label}: tree edge {r + 1} "
                                     "(exponential mechanism)", rdp=rdp,
                                     details={"zcdp_rho": eps_r * eps_r / 8.0, "sensitivity": 2.0,
                                              "mechanism": "exponential (bounded range)"}))
        progress(0.5, "tree selected")
        # ---- 2-way measurements
        mu2 = math.sqrt(2.0 * (rho / 3.0) / max(d - 1, 1)) if math.isfinite(rho) else math.inf
        noisy_tab, var2 = {}, {}
        for (i, j) in edges:
            cancel.check()
            cnt = pair_counts(x[:, i], x[:, j], sizes[i], sizes[j])
            noisy, loss = release_gaussian(rng, cnt, sens, mu2, delta,
                                           f"{self.label}: 2-way {self._name(spec, i)} x {self._name(spec, j)}")
            comps.append(loss)
            noisy_tab[(i, j)] = noisy
            var2[(i, j)] = loss.details["sigma"] ** 2
        del x
        # ---- consistent estimate (post-processing)
        marg = []
        for j in range(d):
            num, den = one[j] / max(var1[j], 1e-300), 1.0 / max(var1[j], 1e-300)
            for (a, b), t in noisy_tab.items():
                if j in (a, b):
                    s = t.sum(axis=1) if j == a else t.sum(axis=0)
                    v = var2[(a, b)] * (t.shape[1] if j == a else t.shape[0])
                    num = num + s / max(v, 1e-300)
                    den = den + 1.0 / max(v, 1e-300)
            if not math.isfinite(rho):
                est = one[j]
            else:
                est = num / den
            marg.append(self._normalise(est, unknown[j]))
        tables = {}
        for (i, j), t in noisy_tab.items():
            fitted = ipf(t, marg[i] * n, marg[j] * n)
            s = fitted.sum()
            fitted = fitted / s if s > 0 else np.outer(marg[i], marg[j])
            tables[(i, j)] = fitted
            tables[(j, i)] = fitted.T
        # BFS order from the label (or column 0)
        root = d - 1 if spec.label is not None else 0
        adj = {k: [] for k in range(d)}
        for (i, j) in edges:
            adj[i].append(j)
            adj[j].append(i)
        order, seen, queue = [(None, root)], {root}, [root]
        while queue:
            p = queue.pop(0)
            for c in adj[p]:
                if c not in seen:
                    seen.add(c)
                    order.append((p, c))
                    queue.append(c)
        total_rho = sum((c.gdp_mu ** 2) / 2.0 if c.gdp_mu is not None else c.details.get("zcdp_rho", math.inf)
                        for c in comps)
        tot_eps = zcdp_epsilon(total_rho, delta) if math.isfinite(total_rho) else math.inf
        rdp_tot = (tuple(float(sum(c.rdp[i] for c in comps)) for i in range(len(RDP_ORDERS)))
                   if all(c.rdp is not None for c in comps) else None)
        total = PrivacyLoss(epsilon=tot_eps, delta=delta, label=self.label, rdp=rdp_tot,
                            details={"composition": "zCDP (Gaussian rho = mu^2/2, EM eps^2/8)",
                                     "zcdp_rho": total_rho, "n_releases": len(comps)})
        progress(1.0, "done")
        info = {"edges": [(self._name(spec, i), self._name(spec, j)) for i, j in edges],
                "fit_seconds": time.perf_counter() - t0}
        return FittedMST(spec, enc, sizes, self.bins, marg, tables, order, comps, total, info)

    @staticmethod
    def _name(spec, j):
        return spec.columns[j].name if j < len(spec.columns) else spec.label.name

    @staticmethod
    def _normalise(v, unknown_cell):
        p = np.clip(np.asarray(v, dtype=np.float64), 0.0, None)
        if unknown_cell is not None:
            p[unknown_cell] = 0.0
        s = p.sum()
        if s <= 0:
            p = np.ones_like(p)
            if unknown_cell is not None:
                p[unknown_cell] = 0.0
            s = p.sum()
        return p / s
