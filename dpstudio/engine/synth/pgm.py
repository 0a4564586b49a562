"""A discrete graphical model estimated from noisy marginals (Private-PGM; McKenna, Sheldon & Miklau 2019).

Everything here is post-processing of released measurements; no data is read.

* **Factors** are dense numpy arrays over a *clique*: a sorted tuple of attribute indices, one
  axis per attribute in that order (``sizes[a]`` cells on attribute a's axis).
* **Junction tree** (:func:`junction_tree`): the cliques' union graph is triangulated by greedy
  elimination (min-fill, ties broken by the cell count of the clique the elimination creates),
  the maximal cliques of the triangulation are joined by a maximum-weight spanning forest on
  separator sizes (Kruskal); cliques that share no attribute stay in separate trees (independent
  components).  :func:`model_size` is the total cell count of those cliques (AIM's size limit).
* **Belief propagation** (:meth:`MarkovModel.calibrate`) in log space, two passes per tree: the
  exact marginal of every junction-tree clique.  Structural zeros (cells that must never occur)
  are -inf log-potentials that no update changes.
* **Estimation** (:func:`estimate`): minimise ``sum_r ||M_r(p) - y_r||^2 / sigma_r^2`` over the
  exponential family of the measured cliques by mirror descent on the log-potentials (entropic
  mirror map, the Private-PGM algorithm), step size by an Armijo test (grow 1 % after an accepted
  step, halve and retry after a rejected one), warm-started from previous potentials.
* **Marginals** of any attribute set (:meth:`MarkovModel.marginal`): a clique's belief summed down
  when one clique holds the set, otherwise variable elimination over the smallest subtree of the
  junction tree that covers it (root marginal times the children's conditionals).
* **Sampling** (:meth:`MarkovModel.sample`): ancestral, along each tree: the root clique from its
  marginal, then each child's new attributes given the separator (rows grouped by separator code,
  inverse CDF within a group; no loop over rows).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress

#: steps of :func:`estimate` between two progress reports
PROGRESS_EVERY = 10

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Clique = tuple[int, ...]

_NEG_INF = -np.inf
GROW = 1.01


# --------------------------------------------------------------------------- cliques


def cells(sizes: Sequence[int], clique: Iterable[int]) -> int:
    """Number of cells of a factor over ``clique``."""
    return int(math.prod(int(sizes[a]) for a in clique))


def downward_closure(cliques: Iterable[Clique]) -> list[Clique]:
    """Every non-empty subset of every clique (sorted tuples), smallest first."""
    out: set[Clique] = set()
    for cl in cliques:
        c = tuple(sorted(cl))
        k = len(c)
        for mask in range(1, 1 << k):
            out.add(tuple(c[i] for i in range(k) if mask >> i & 1))
    return sorted(out, key=lambda c: (len(c), c))


def _maximal(cliques: Iterable[Clique]) -> list[Clique]:
    uniq = sorted({tuple(sorted(c)) for c in cliques}, key=lambda c: (-len(c), c))
    out: list[Clique] = []
    for c in uniq:
        s = set(c)
        if not any(s <= set(o) for o in out):
            out.append(c)
    return out


def triangulate(sizes: Sequence[int], cliques: Iterable[Clique]) -> list[Clique]:
    """Maximal cliques of a chordal supergraph of the cliques' union graph (greedy min-fill
    elimination, ties broken by the cell count of the clique an elimination creates, then by
    attribute index).  Adjacency is kept as bit masks."""
    cl_list = [tuple(sorted(int(a) for a in c)) for c in cliques if len(c) > 0]
    nodes = sorted({a for c in cl_list for a in c})
    adj: dict[int, int] = {a: 0 for a in nodes}
    for c in cl_list:
        mask = 0
        for a in c:
            mask |= 1 << a
        for a in c:
            adj[a] |= mask & ~(1 << a)

    def fill2(v: int) -> int:  # pairs of neighbours that are not adjacent, each counted twice
        nb = adj[v]
        f = 0
        m = nb
        while m:
            low = m & -m
            f += (nb & ~adj[low.bit_length() - 1] & ~low).bit_count()
            m ^= low
        return f

    size_l = {a: int(sizes[a]) for a in nodes}
    fill = {v: fill2(v) for v in nodes}
    created: list[Clique] = []
    while fill:
        best = min(fill.values())
        if best == 0:
            # simplicial vertices add no edge: their order does not change the result
            v = min(u for u, f in fill.items() if f == 0)
        else:
            ties = [u for u, f in fill.items() if f == best]
            v = min(ties, key=lambda u: (math.prod(size_l[a] for a in _bits(adj[u] | 1 << u)), u))
        nb = adj[v]
        members = _bits(nb)
        created.append(tuple(sorted(members + [v])))
        dirty = set(members)
        for a in members:
            adj[a] = (adj[a] | nb) & ~(1 << a) & ~(1 << v)
        del adj[v], fill[v]
        if best > 0:  # edges were added among v's neighbours: their neighbours' fill changes
            for a in members:
                dirty.update(_bits(adj[a]))
        for u in dirty:
            if u in fill:
                fill[u] = fill2(u)
    return _maximal(created)


def _bits(mask: int) -> list[int]:
    out: list[int] = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


@dataclass(frozen=True)
class JunctionTree:
    """A junction forest: ``cliques[k]``, its ``parent[k]`` (-1 for a root) and separator
    ``sep[k]`` with the parent; ``order`` lists every clique after its parent."""

    cliques: tuple[Clique, ...]
    parent: tuple[int, ...]
    sep: tuple[Clique, ...]
    order: tuple[int, ...]
    sizes: tuple[int, ...]

    @property
    def size(self) -> int:
        return sum(cells(self.sizes, c) for c in self.cliques)

    def children(self) -> list[list[int]]:
        ch: list[list[int]] = [[] for _ in self.cliques]
        for k in self.order:
            if self.parent[k] >= 0:
                ch[self.parent[k]].append(k)
        return ch


def junction_tree(sizes: Sequence[int], cliques: Iterable[Clique]) -> JunctionTree:
    """Junction forest of the triangulated clique graph (maximum-weight spanning forest on
    separator sizes; edges with an empty separator are left out)."""
    sizes_t = tuple(int(s) for s in sizes)
    tri = triangulate(sizes_t, cliques)
    m = len(tri)
    sets = [set(c) for c in tri]
    edges = sorted(
        ((len(sets[i] & sets[j]), i, j) for i in range(m) for j in range(i + 1, m) if sets[i] & sets[j]),
        key=lambda e: (-e[0], e[1], e[2]),
    )
    root = list(range(m))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    adj: list[list[int]] = [[] for _ in range(m)]
    for _, i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            root[ri] = rj
            adj[i].append(j)
            adj[j].append(i)
    parent = [-1] * m
    order: list[int] = []
    seen = [False] * m
    # root every tree at its largest clique (ties: first)
    for r in sorted(range(m), key=lambda k: (-cells(sizes_t, tri[k]), k)):
        if seen[r]:
            continue
        seen[r] = True
        queue = [r]
        while queue:
            k = queue.pop(0)
            order.append(k)
            for c in sorted(adj[k]):
                if not seen[c]:
                    seen[c] = True
                    parent[c] = k
                    queue.append(c)
    sep = tuple(tuple(sorted(sets[k] & sets[parent[k]])) if parent[k] >= 0 else () for k in range(m))
    return JunctionTree(tuple(tri), tuple(parent), sep, tuple(order), sizes_t)


def model_size(sizes: Sequence[int], cliques: Iterable[Clique]) -> int:
    """Total cells of the junction tree's cliques for a model over ``cliques``."""
    return sum(cells(sizes, c) for c in triangulate(sizes, cliques))


# --------------------------------------------------------------------------- factor helpers


def _expand(arr: FloatArray, src: Clique, dst: Clique, sizes: Sequence[int]) -> FloatArray:
    """View of a factor over ``src`` broadcastable against a factor over ``dst`` (src ⊆ dst)."""
    s = set(src)
    return arr.reshape([int(sizes[a]) if a in s else 1 for a in dst])


def _sum_to(arr: FloatArray, src: Clique, dst: Clique) -> FloatArray:
    """Sum a factor over ``src`` down to ``dst`` ⊆ src (axes stay in sorted order)."""
    d = set(dst)
    axes = tuple(i for i, a in enumerate(src) if a not in d)
    if not axes:
        return arr
    out: FloatArray = arr.sum(axis=axes)
    return out


def _lse_to(arr: FloatArray, src: Clique, dst: Clique) -> FloatArray:
    """log-sum-exp of a log-factor over ``src`` down to ``dst`` (-inf safe)."""
    d = set(dst)
    axes = tuple(i for i, a in enumerate(src) if a not in d)
    if not axes:
        return arr
    mx = arr.max(axis=axes, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        out: FloatArray = np.log(np.exp(arr - mx).sum(axis=axes, keepdims=True)) + mx
    return out.reshape([s for i, s in enumerate(arr.shape) if i not in axes])


def _lse_all(arr: FloatArray) -> float:
    mx = float(arr.max())
    if not math.isfinite(mx):
        return mx
    return mx + math.log(float(np.exp(arr - mx).sum()))


def _product(factors: Sequence[tuple[Clique, FloatArray]], sizes: Sequence[int]) -> tuple[Clique, FloatArray]:
    scope: Clique = tuple(sorted({a for c, _ in factors for a in c}))
    out = np.ones([int(sizes[a]) for a in scope])
    for c, f in factors:
        out = out * _expand(f, c, scope, sizes)
    return scope, out


def eliminate(factors: Sequence[tuple[Clique, FloatArray]], keep: Clique, sizes: Sequence[int]) -> FloatArray:
    """Sum of the product of ``factors`` over every attribute not in ``keep`` (variable
    elimination, greedy smallest-intermediate order); axes in ``keep``'s sorted order."""
    fs = [(tuple(c), np.asarray(f, dtype=np.float64)) for c, f in factors]
    keep_s = set(keep)
    todo = {a for c, _ in fs for a in c} - keep_s
    while todo:
        best_v, best_cost = -1, -1
        for v in sorted(todo):
            cost = cells(sizes, {a for c, _ in fs if v in c for a in c})
            if best_v < 0 or cost < best_cost:
                best_v, best_cost = v, cost
        touch = [f for f in fs if best_v in f[0]]
        fs = [f for f in fs if best_v not in f[0]]
        scope, prod = _product(touch, sizes)
        new_scope = tuple(a for a in scope if a != best_v)
        fs.append((new_scope, _sum_to(prod, scope, new_scope)))
        todo.discard(best_v)
    scope, prod = _product(fs, sizes)
    target = tuple(sorted(keep))
    if scope != target:  # an attribute of keep in no factor: uniform (should not happen)
        missing = tuple(a for a in target if a not in scope)
        prod = _expand(prod, scope, target, sizes) * np.ones([int(sizes[a]) if a in missing else 1 for a in target])
    return prod


# --------------------------------------------------------------------------- the model


class MarkovModel:
    """Exponential-family model ``p(x) ∝ exp(sum_r theta_r(x_r))`` over measured cliques r, with
    structural zeros; ``total`` records (marginals are counts summing to ``total``)."""

    def __init__(
        self,
        sizes: Sequence[int],
        cliques: Iterable[Clique],
        total: float,
        zeros: Mapping[int, npt.NDArray[np.bool_]] | None = None,
        potentials: Mapping[Clique, FloatArray] | None = None,
    ) -> None:
        self.sizes = tuple(int(s) for s in sizes)
        d = len(self.sizes)
        cl = {tuple(sorted(c)) for c in cliques}
        cl |= {(a,) for a in range(d)}  # every attribute is in the model
        if potentials:
            cl |= set(potentials)
        self.cliques: list[Clique] = sorted(cl, key=lambda c: (len(c), c))
        self.total = float(total)
        self.zeros = {int(a): np.asarray(z, dtype=bool) for a, z in (zeros or {}).items() if np.any(z)}
        self.jt = junction_tree(self.sizes, self.cliques)
        self.theta: dict[Clique, FloatArray] = {}
        for c in self.cliques:
            if potentials is not None and c in potentials:
                self.theta[c] = np.array(potentials[c], dtype=np.float64)
            else:
                self.theta[c] = np.zeros([self.sizes[a] for a in c])
        # each measured clique (and each attribute's zero mask) goes to the smallest JT clique holding it
        jt_sets = [set(c) for c in self.jt.cliques]
        by_size = sorted(range(len(self.jt.cliques)), key=lambda k: (cells(self.sizes, self.jt.cliques[k]), k))

        def home(c: Iterable[int]) -> int:
            s = set(c)
            for k in by_size:
                if s <= jt_sets[k]:
                    return k
            raise AssertionError("clique not covered by the junction tree")

        self.home = {c: home(c) for c in self.cliques}
        self._jt_sets, self._by_size = jt_sets, by_size
        self._zero_log: list[FloatArray | None] = [None] * len(self.jt.cliques)
        for a, z in self.zeros.items():
            k = home((a,))
            mask = np.where(z, _NEG_INF, 0.0)
            cur = self._zero_log[k]
            add = _expand(mask, (a,), self.jt.cliques[k], self.sizes)
            self._zero_log[k] = add if cur is None else cur + add
        self._children = self.jt.children()
        self.marg: list[FloatArray] = []  # JT clique marginals (counts), set by calibrate
        self._cond: dict[int, FloatArray] = {}
        self.calibrate()

    # ---- belief propagation
    def _clique_log_potentials(self, theta: Mapping[Clique, FloatArray]) -> list[FloatArray]:
        jt = self.jt
        psi: list[FloatArray] = []
        for k, c in enumerate(jt.cliques):
            z = self._zero_log[k]
            psi.append(
                np.zeros([self.sizes[a] for a in c])
                if z is None
                else np.broadcast_to(z, [self.sizes[a] for a in c]).copy()
            )
        for r, t in theta.items():
            k = self.home[r]
            psi[k] = psi[k] + _expand(t, r, jt.cliques[k], self.sizes)
        return psi

    def belief_propagation(self, theta: Mapping[Clique, FloatArray]) -> list[FloatArray]:
        """Exact marginals (counts) of every junction-tree clique under potentials ``theta``."""
        jt, sz = self.jt, self.sizes
        psi = self._clique_log_potentials(theta)
        up: dict[int, FloatArray] = {}
        inner: list[FloatArray] = list(psi)
        with np.errstate(invalid="ignore"):
            for k in reversed(jt.order):
                for c in self._children[k]:
                    inner[k] = inner[k] + _expand(up[c], jt.sep[c], jt.cliques[k], sz)
                if jt.parent[k] >= 0:
                    up[k] = _lse_to(inner[k], jt.cliques[k], jt.sep[k])
            belief: list[FloatArray] = list(inner)
            for k in jt.order:
                p = jt.parent[k]
                if p >= 0:
                    m_up = _expand(up[k], jt.sep[k], jt.cliques[p], sz)
                    rest = np.where(np.isneginf(m_up), _NEG_INF, belief[p] - m_up)
                    down = _lse_to(rest, jt.cliques[p], jt.sep[k])
                    belief[k] = inner[k] + _expand(down, jt.sep[k], jt.cliques[k], sz)
        out: list[FloatArray] = []
        for b in belief:
            lz = _lse_all(b)
            out.append(self.total * np.exp(b - lz) if math.isfinite(lz) else np.zeros_like(b))
        return out

    def calibrate(self) -> None:
        self.marg = self.belief_propagation(self.theta)
        self._cond = {}

    # ---- marginals
    def _containing(self, cl: Clique) -> int | None:
        """The smallest junction-tree clique holding ``cl`` (None if none does)."""
        s = set(cl)
        for k in self._by_size:
            if s <= self._jt_sets[k]:
                return k
        return None

    def project(self, clique: Iterable[int]) -> FloatArray:
        """Marginal (counts) of an attribute set held by one junction-tree clique."""
        cl = tuple(sorted(clique))
        k = self._containing(cl)
        if k is None:
            raise ValueError(f"{cl} is not inside a junction-tree clique; use marginal()")
        return _sum_to(self.marg[k], self.jt.cliques[k], cl)

    def _conditional(self, k: int) -> FloatArray:
        """P(clique k's new attributes | separator), as a factor over clique k (0 where the
        separator has probability 0)."""
        if k not in self._cond:
            jt = self.jt
            m = self.marg[k]
            s = _expand(_sum_to(m, jt.cliques[k], jt.sep[k]), jt.sep[k], jt.cliques[k], self.sizes)
            with np.errstate(invalid="ignore", divide="ignore"):
                self._cond[k] = np.where(s > 0, m / np.where(s > 0, s, 1.0), 0.0)
        return self._cond[k]

    def marginal(self, clique: Iterable[int]) -> FloatArray:
        """Marginal (counts) of any attribute set."""
        cl = tuple(sorted(clique))
        k = self._containing(cl)
        if k is not None:
            return _sum_to(self.marg[k], self.jt.cliques[k], cl)
        jt = self.jt
        # split by tree of the forest: independent components multiply
        tree_of = self._tree_ids()
        by_tree: dict[int, list[int]] = {}
        homes = {a: self._containing((a,)) for a in cl}
        for a in cl:
            h = homes[a]
            assert h is not None
            by_tree.setdefault(tree_of[h], []).append(a)
        out = np.ones([self.sizes[a] for a in cl])
        for attrs in by_tree.values():
            sub = tuple(attrs)
            k = self._containing(sub)
            if k is not None:
                part = _sum_to(self.marg[k], jt.cliques[k], sub) / self.total
            else:
                part = self._subtree_marginal(sub)
            out = out * _expand(part, sub, cl, self.sizes)
        return self.total * out

    def _tree_ids(self) -> list[int]:
        tid = [-1] * len(self.jt.cliques)
        for k in self.jt.order:
            p = self.jt.parent[k]
            tid[k] = k if p < 0 else tid[p]
        return tid

    def _subtree_marginal(self, cl: Clique) -> FloatArray:
        """Probability marginal of ``cl`` (one tree) by variable elimination over the smallest
        subtree covering it."""
        jt = self.jt
        need = set(cl)
        chosen: list[int] = []
        while need:  # greedy cover: the clique holding most uncovered attributes
            k = max(
                range(len(jt.cliques)),
                key=lambda i: (len(need & set(jt.cliques[i])), -cells(self.sizes, jt.cliques[i])),
            )
            chosen.append(k)
            need -= set(jt.cliques[k])
        # smallest connected subtree holding the chosen cliques: ancestors up to their common one
        depth = [0] * len(jt.cliques)
        for k in jt.order:
            if jt.parent[k] >= 0:
                depth[k] = depth[jt.parent[k]] + 1
        nodes = set(chosen)
        frontier = set(chosen)
        while len(frontier) > 1:
            deepest = max(frontier, key=lambda i: depth[i])
            frontier.discard(deepest)
            p = jt.parent[deepest]
            assert p >= 0
            nodes.add(p)
            frontier.add(p)
        top = next(iter(frontier))
        factors: list[tuple[Clique, FloatArray]] = [(jt.cliques[top], self.marg[top] / self.total)]
        for k in nodes:
            if k != top:
                factors.append((jt.cliques[k], self._conditional(k)))
        return eliminate(factors, cl, self.sizes)

    @property
    def size(self) -> int:
        return self.jt.size

    # ---- sampling
    def sample(self, n_rows: int, gen: np.random.Generator, systematic: bool = True) -> IntArray:
        """(n_rows, d) attribute codes drawn from the model (ancestral sampling; ``systematic``:
        counts rounded per separator group, see :func:`_inverse_cdf`)."""
        jt, sz = self.jt, self.sizes
        n = int(n_rows)
        codes = np.full((n, len(sz)), -1, dtype=np.int64)
        for k in jt.order:
            c = jt.cliques[k]
            m = self.marg[k]
            if jt.parent[k] < 0:
                flat = _inverse_cdf(m.reshape(1, -1), np.zeros(n, dtype=np.int64), gen, systematic)
                idx = np.unravel_index(flat, m.shape)
                for a, v in zip(c, idx, strict=True):
                    codes[:, a] = v
                continue
            s = jt.sep[k]
            new = tuple(a for a in c if a not in set(s))
            if not new:
                continue
            perm = [c.index(a) for a in s] + [c.index(a) for a in new]
            n_s, n_new = cells(sz, s), cells(sz, new)
            table = np.transpose(m, perm).reshape(n_s, n_new)
            if s:
                sep_code = np.ravel_multi_index(tuple(codes[:, a] for a in s), [sz[a] for a in s])
            else:
                sep_code = np.zeros(n, dtype=np.int64)
            flat = _inverse_cdf(table, sep_code, gen, systematic)
            idx = np.unravel_index(flat, [sz[a] for a in new])
            for a, v in zip(new, idx, strict=True):
                codes[:, a] = v
        return codes


def _inverse_cdf(table: FloatArray, row: IntArray, gen: np.random.Generator, systematic: bool = True) -> IntArray:
    """For each i, an index drawn with probabilities ∝ ``table[row[i]]`` (rows grouped by
    ``row``; cells of weight 0 are never drawn).  A row of weight 0 (unreachable in exact
    arithmetic) falls back to the column totals.

    ``systematic``: within each group of k rows the uniforms are ``(rank + v) / k`` with one
    uniform offset v per group and ranks in random order, so every row still gets the right
    distribution but the group's counts are k p rounded up or down (Private-PGM's synthetic
    data rounds counts the same way); otherwise independent uniforms."""
    n = len(row)
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    colsum = np.clip(table, 0.0, None).sum(axis=0)
    order = np.lexsort((gen.random(n), row))  # by group, random order inside a group
    groups, starts, counts = np.unique(row[order], return_index=True, return_counts=True)
    ends = starts + counts
    if systematic:
        rank = np.arange(n) - np.repeat(starts, counts)
        u_sorted = (rank + np.repeat(gen.random(len(groups)), counts)) / np.repeat(counts, counts)
        u = np.empty(n)
        u[order] = u_sorted
    else:
        u = gen.random(n)
    for g, a, b in zip(groups, starts, ends, strict=True):
        w = np.clip(table[g], 0.0, None)
        if not w.sum() > 0:
            w = colsum
        cs = np.cumsum(w)
        rows = order[a:b]
        # first index with cs > u * total: a zero-weight cell never satisfies it first; u * total
        # can round up to the total (u = (k - 1 + v)/k rounds to 1.0 for v near 1), so clamp to
        # the last cell with weight, never to a trailing structural zero
        last = int(np.flatnonzero(w > 0)[-1]) if (w > 0).any() else len(cs) - 1
        out[rows] = np.minimum(np.searchsorted(cs, u[rows] * cs[-1], side="right"), last)
    return out


# --------------------------------------------------------------------------- estimation


@dataclass
class Measurement:
    """A noisy marginal ``y`` (counts, shape of ``clique``'s cells) with noise std ``sigma``
    (a number or an array broadcastable to ``y``)."""

    clique: Clique
    y: FloatArray
    sigma: float | FloatArray


def _loss_grad(
    model: MarkovModel, marg: Sequence[FloatArray], groups: Mapping[Clique, list[tuple[FloatArray, FloatArray]]]
) -> tuple[float, dict[Clique, FloatArray], dict[Clique, FloatArray]]:
    loss = 0.0
    grad: dict[Clique, FloatArray] = {}
    mus: dict[Clique, FloatArray] = {}
    for r, ms in groups.items():
        k = model.home[r]
        mu = _sum_to(marg[k], model.jt.cliques[k], r)
        mus[r] = mu
        g = np.zeros_like(mu)
        for y, w in ms:
            diff = mu - y
            loss += float((w * diff * diff).sum())
            g = g + 2.0 * w * diff
        grad[r] = g
    return loss, grad, mus


def estimate(
    sizes: Sequence[int],
    measurements: Sequence[Measurement],
    total: float,
    *,
    zeros: Mapping[int, npt.NDArray[np.bool_]] | None = None,
    warm: MarkovModel | None = None,
    iters: int = 200,
    step: float | None = None,
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> tuple[MarkovModel, float, float]:
    """Private-PGM estimate of a model from noisy marginals (mirror descent, Armijo steps).

    Returns (model, final step size for the next warm start, final loss).  The model is over
    the measured cliques (and every attribute); ``warm``'s potentials seed the new ones.
    ``cancel`` is checked at every step and ``progress`` told every ``PROGRESS_EVERY`` steps:
    AIM's final estimate of 1,000 steps took 15 s on a 25k-row table with a still progress bar
    and a Cancel that waited for it (post-processing of DP measurements: no privacy role)."""
    cliques = {tuple(sorted(m.clique)) for m in measurements}
    pots = dict(warm.theta) if warm is not None else None
    model = MarkovModel(sizes, cliques, total, zeros, pots)
    groups: dict[Clique, list[tuple[FloatArray, FloatArray]]] = {}
    wmax = 0.0
    raw: list[tuple[Clique, FloatArray, FloatArray]] = []
    for m in measurements:
        r = tuple(sorted(m.clique))
        sig = np.broadcast_to(np.asarray(m.sigma, dtype=np.float64), m.y.shape)
        w = 1.0 / np.maximum(sig, 1e-300) ** 2
        wmax = max(wmax, float(w.max()))
        raw.append((r, np.asarray(m.y, dtype=np.float64), w))
    for r, y, w in raw:  # weights relative to the most precise measurement: steps are ~1/total
        groups.setdefault(r, []).append((y, w / wmax))
    # a warm step can be tiny after a converged fit (rejected steps halve it): restart at
    # least from the default scale 1/total, the Armijo test halves it again if needed
    alpha = max(float(step), 1.0 / max(total, 1.0)) if step is not None else 1.0 / max(total, 1.0)
    theta = model.theta
    marg = model.marg
    loss, grad, mu = _loss_grad(model, marg, groups)
    for i in range(int(iters)):
        cancel.check()
        if i % PROGRESS_EVERY == 0:
            progress(i / iters, f"fitting the model: step {i} of {iters}")
        theta2 = dict(theta)
        for r, g in grad.items():
            theta2[r] = theta[r] - alpha * g
        marg2 = model.belief_propagation(theta2)
        loss2, grad2, mu2 = _loss_grad(model, marg2, groups)
        decrease = sum(float((grad[r] * (mu[r] - mu2[r])).sum()) for r in grad)
        if loss - loss2 >= 0.5 * alpha * decrease and math.isfinite(loss2):
            theta, marg, loss, grad, mu = theta2, marg2, loss2, grad2, mu2
            alpha *= GROW
        else:
            alpha *= 0.5
    model.theta = dict(theta)
    model.marg = list(marg)
    model._cond = {}
    return model, alpha, loss * wmax
