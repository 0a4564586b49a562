"""Label leakage through public features under label DP (Sekiguchi 2024; docs/leakage.md).

A label release perturbs the label with randomized response (RR) and publishes the public
features as they are.  With K classes RR keeps the label with probability
``q = e^eps / (K - 1 + e^eps)`` and moves it to each other class with ``r = 1 / (K - 1 + e^eps)``
(docs/mechanisms.md §Randomized response; binary: flip probability ``pi = 1 / (1 + e^eps)``).

Three attackers guess each record's true label from the release (Sekiguchi 2024, §2.2):

* *uninformed*: ``argmax_c P(c | x)`` from the public features only (independent of eps);
* *naive*: trusts the released label ``y~`` (accuracy ``q = 1 - pi``), the attacker label DP
  is designed against;
* *informed*: Bayes-optimal, ``argmax_c P(c | x) * P(y~ | c)``.

Closed forms (exact expectations over the mechanism's coins, conditioning on the dataset's
true labels -- "observed" -- or with ``y ~ P(y | x)`` as in the IEAU of Sekiguchi 2024, Def. 2.2.1 --
"model").  For record i with true label y and posterior row P:

* released ``y~ = y`` (probability q): the informed attacker is right iff
  ``P_y e^eps >= max_{c != y} P_c``, i.e. ``eps >= a_i = log(max_{c!=y} P_c / P_y)``;
* released ``y~ = c != y`` (probability r each): right iff ``y`` is the argmax of P outside c
  and ``P_y > e^eps P_c``, i.e. ``eps < b_ic = log(P_y / P_c)``.

Hence ``acc_informed(eps) = mean_i [ q(eps) 1{a_i <= eps} + r(eps) #{c: b_ic > eps} ]``: two
step functions of eps.  Sorting the thresholds once makes every curve over any eps grid a
``searchsorted`` -- O(G log n) -- which is what makes the GUI's live preview instant.
Binary case: the informed attacker follows ``y~`` when ``|logit P(1|x)| <= eps`` and
otherwise ignores it.

Individual unexpected leakage, Sekiguchi 2024, Prop. 3.0.2 (binary labels)::

    IUEAdv_i <= 1 / (1 + e^-eps P(1-y|x)/P(y|x))  -  1 / (1 + e^-eps P(1-y)/P(y))

It is positive iff ``k = [P(y|x)/P(y)] / [P(1-y|x)/P(1-y)] > 1`` (Cor. 3.0.3).  Within one
label group the right-hand side is a decreasing function of ``P(1-y|x)/P(y|x)`` for every eps,
so counts above a threshold and quantiles over records are again searchsorted on sorted arrays.

**Caveat (checked numerically in tests/test_leakage_label.py and the report):** the source's
proof of Prop. 3.0.2 bounds ``P(y|x,y~) - P(y|y~)`` only when ``y~ = y`` (there it is an
equality).  When RR flipped the label the difference is ``1/(1+e^eps r_x) - 1/(1+e^eps r_0)``,
which can be far larger (eps=3, P(y)=0.5, P(y|x)=0.952: 0.449 against the "bound" 0.045):
the step that replaces ``P(y~|y)`` by ``e^eps/(1+e^eps)`` in the *subtracted* term goes the
wrong way.  We therefore report the source's quantity under its name ("iue_adv_bound", exact for
unflipped records) next to the exact expected accuracy advantage of the informed over the
naive attacker.

**The law that runs.**  The closed forms above are in ``q``, ``r`` and the thresholds' variable
``log(q / r)``, which equals eps only for the ideal mechanism.  The product's randomized response
realises ``r`` on a 2^-32 grid and, with delta > 0, takes ``r = (1 - delta) / (K - 1 + e^eps)``
(docs/mechanisms.md §Randomized response): it keeps the label less often than ``e^eps / (K - 1 +
e^eps)``.  Every figure of a release is therefore read at the plan's own law (:class:`RRLaw`,
from the label unit's ``keep_probability`` / ``other_probability``): ``accuracies_of``,
``at(eps, rr=...)``, ``curves(grid, rr_at=...)``.  ``accuracies(eps)`` is the ideal closed form
(delta 0, no rounding), for previews without a plan and for the tests' references.

Semi-sensitive releases, Sekiguchi 2024, Prop. 4.0.1: see :func:`effective_label_epsilon`.

Everything here reads raw data: internal, steward-only numbers (``computed_on``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpstudio.engine.leakage.logistic import (
    FloatArray,
    IntArray,
    crossfit_posteriors,
    encode_features,
    encode_labels,
)
from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, no_progress

COMPUTED_ON = "raw data - internal use only"
DEFAULT_GRID = np.geomspace(0.05, 10.0, 60)
DEFAULT_THRESHOLD = 0.1
QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
POSTERIOR_CLIP = 1e-6

__all__ = [
    "RRLaw",
    "rr_keep_probability",
    "flip_probability",
    "k_ratio",
    "iue_adv_bound",
    "informed_accuracy_binary",
    "LabelLeakageModel",
    "effective_label_epsilon",
    "COMPUTED_ON",
    "DEFAULT_GRID",
]


# ---- closed forms --------------------------------------------------------------------------


@dataclass(frozen=True)
class RRLaw:
    """The label's randomized response as it runs: P(label kept), P(moved to each other
    category), and how many categories it draws among (``keep + (categories - 1) * other = 1``).

    Read off the plan's label unit (:meth:`of_unit`) so that an attacker's figure and the
    "P(value kept)" printed beside it come from one mechanism.  The attackers see the release
    only through the likelihood ratio ``keep / other``: ``log_odds`` is where their thresholds are
    read (eps itself only for the ideal mechanism)."""

    keep: float
    other: float
    categories: int

    @classmethod
    def of_unit(cls, unit: Any) -> RRLaw:
        """The law of a compiled plan unit (its ``noise``, read off the mechanism object that runs)."""
        n = unit.noise
        if n.keep_probability is None or n.other_probability is None or not n.categories:
            raise ValueError(f"unit {unit.name!r} is not a randomized response")
        return cls(float(n.keep_probability), float(n.other_probability), int(n.categories))

    @classmethod
    def of_mechanism(cls, mech: Any) -> RRLaw:
        """The law of a :class:`~dpstudio.engine.mechanisms.RandomizedResponse` object."""
        return cls(float(mech.keep), float(mech.p), int(mech.n_categories))

    @property
    def log_odds(self) -> float:
        return math.log(self.keep / self.other)

    def to_json(self) -> dict[str, Any]:
        return {"keep_probability": self.keep, "other_probability": self.other, "categories": self.categories}


def rr_keep_probability(eps: npt.ArrayLike, n_classes: int = 2) -> FloatArray:
    """P(y~ = y) of the ideal K-ary randomized response: e^eps / (K - 1 + e^eps) (docs/mechanisms.md
    §Randomized response).  Not what a release runs when delta > 0 or at the 2^-32 grid: a
    release's figures use :class:`RRLaw`."""
    eps = np.asarray(eps, dtype=float)
    q: FloatArray = 1.0 / (1.0 + (n_classes - 1) * np.exp(-eps))
    return q


def flip_probability(eps: npt.ArrayLike) -> FloatArray:
    """Binary RR flip probability pi = 1 / (1 + e^eps)."""
    pi: FloatArray = 1.0 / (1.0 + np.exp(np.asarray(eps, dtype=float)))
    return pi


def k_ratio(p_y_given_x: npt.ArrayLike, p_y: npt.ArrayLike) -> FloatArray:
    """Sekiguchi 2024, Cor. 3.0.3: k = [P(y|x)/P(y)] / [P(1-y|x)/P(1-y)] (binary)."""
    a = np.asarray(p_y_given_x, dtype=float)
    b = np.asarray(p_y, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        k: FloatArray = (a / b) / ((1.0 - a) / (1.0 - b))
    return k


def iue_adv_bound(p_y_given_x: npt.ArrayLike, p_y: npt.ArrayLike, eps: npt.ArrayLike) -> FloatArray:
    """Sekiguchi 2024, Prop. 3.0.2 right-hand side (broadcasts over records x eps):
    1/(1 + e^-eps P(1-y|x)/P(y|x)) - 1/(1 + e^-eps P(1-y)/P(y)).

    Equals P(y|x, y~) - P(y|y~) exactly on records whose label RR kept; see the module
    docstring for why it is *not* an upper bound on records whose label RR flipped."""
    a = np.clip(np.asarray(p_y_given_x, dtype=float), POSTERIOR_CLIP, 1 - POSTERIOR_CLIP)
    b = np.asarray(p_y, dtype=float)
    c = np.exp(-np.asarray(eps, dtype=float))
    bound: FloatArray = 1.0 / (1.0 + c * (1.0 - a) / a) - 1.0 / (1.0 + c * (1.0 - b) / b)
    return bound


def posterior_gain_flipped(p_y_given_x: npt.ArrayLike, p_y: npt.ArrayLike, eps: npt.ArrayLike) -> FloatArray:
    """P(y|x, y~) - P(y|y~) on a record whose binary label RR *flipped* (y~ = 1 - y):
    1/(1 + e^eps P(1-y|x)/P(y|x)) - 1/(1 + e^eps P(1-y)/P(y))."""
    a = np.clip(np.asarray(p_y_given_x, dtype=float), POSTERIOR_CLIP, 1 - POSTERIOR_CLIP)
    b = np.asarray(p_y, dtype=float)
    c = np.exp(np.asarray(eps, dtype=float))
    gain: FloatArray = 1.0 / (1.0 + c * (1.0 - a) / a) - 1.0 / (1.0 + c * (1.0 - b) / b)
    return gain


def informed_accuracy_binary(p1: npt.ArrayLike, y: npt.ArrayLike, eps: npt.ArrayLike) -> FloatArray:
    """Per-record expected accuracy of the Bayes-optimal (informed) attacker, binary RR,
    given the true label y (expectation over RR's coin): 1 - pi if |logit p1| <= eps, else
    1{argmax = y}.  Broadcasts (records x eps).  Reference implementation for the tests."""
    p = np.clip(np.asarray(p1, float), POSTERIOR_CLIP, 1 - POSTERIOR_CLIP)
    L = np.log(p) - np.log1p(-p)
    Ly = np.where(np.asarray(y) == 1, L, -L)
    e = np.asarray(eps, float)
    pi = flip_probability(e)
    acc: FloatArray = (1 - pi) * (e >= -Ly) + pi * (e < Ly)
    return acc


class _Steps:
    """sum_j w_j 1{t_j <= eps} (or > eps) for many eps at once, by searchsorted + cumsum."""

    def __init__(self, thresholds: npt.ArrayLike, weights: npt.ArrayLike | None = None) -> None:
        t = np.asarray(thresholds, float).ravel()
        w = np.ones_like(t) if weights is None else np.asarray(weights, float).ravel()
        keep = np.isfinite(t) | (t == np.inf)
        keep &= ~np.isnan(t)
        order = np.argsort(t[keep], kind="stable")
        self.t = t[keep][order]
        self.cw = np.concatenate([[0.0], np.cumsum(w[keep][order])])
        self.total_all = float(w.sum())

    def le(self, eps: FloatArray) -> FloatArray:
        i = np.searchsorted(self.t, eps, side="right")
        s: FloatArray = self.cw[i]
        return s

    def gt(self, eps: FloatArray) -> FloatArray:
        i = np.searchsorted(self.t, eps, side="right")
        s: FloatArray = self.cw[-1] - self.cw[i]
        return s


def _attack_thresholds(P: FloatArray, y: IntArray) -> tuple[FloatArray, FloatArray]:
    """Thresholds a_i (right when kept iff eps >= a_i) and b_ic (right when moved to c iff
    eps < b_ic) for true labels y (n,) and posterior rows P (n, K)."""
    n, K = P.shape
    logP = np.log(np.clip(P, POSTERIOR_CLIP, None))
    rows = np.arange(n)
    ly = logP[rows, y]
    others = logP.copy()
    others[rows, y] = -np.inf
    a = others.max(axis=1) - ly
    # b_ic: for c != y, y must be argmax of P over classes != c (ties -> lowest index wins)
    if K == 2:
        b = (ly - logP[rows, 1 - y])[:, None]
        return a, b
    b = np.full((n, K), -np.inf)
    order = np.argsort(-logP, axis=1, kind="stable")
    top1, top2 = order[:, 0], order[:, 1]
    for c in range(K):
        best_excl_c = np.where(top1 == c, top2, top1)
        ok = (best_excl_c == y) & (y != c)
        b[ok, c] = ly[ok] - logP[ok, c]
    b[rows, y] = -np.inf
    return a, b


# ---- the model the GUI previews -----------------------------------------------------------


class LabelLeakageModel:
    """Cross-fitted ``P(y | x_public)`` plus sorted thresholds: fit once, curves in milliseconds.

    >>> m = LabelLeakageModel.fit(frame, ["age", "zip"], "diagnosis")
    >>> m.curves(np.geomspace(0.05, 10, 60))   # attackers' accuracy, IUEAdv quantiles/counts
    >>> m.at(1.0)                               # the same at one epsilon

    All numbers are computed on the raw data: for the data steward, never for publication.
    """

    def __init__(
        self,
        posteriors: npt.ArrayLike,
        labels: npt.ArrayLike,
        classes: Iterable[Any],
        *,
        threshold: float = DEFAULT_THRESHOLD,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        P = np.asarray(posteriors, float)
        y = np.asarray(labels, np.int64)
        keep = y >= 0
        self.dropped_missing_labels = int((~keep).sum())
        P, y = P[keep], y[keep]
        self.P, self.y, self.classes = P, y, list(classes)
        self.n, self.K = P.shape
        self.threshold = float(threshold)
        self.info: dict[str, Any] = dict(info or {})
        counts = np.bincount(y, minlength=self.K).astype(float)
        self.prior = counts / max(self.n, 1)
        rows = np.arange(self.n)
        guess = np.argmax(P, axis=1)
        self.uninformed_observed = float(np.mean(guess == y)) if self.n else float("nan")
        self.uninformed_model = float(np.mean(P.max(axis=1))) if self.n else float("nan")
        # what the naive attacker that knows the prior guesses when y~ says nothing
        self.prior_guess_observed = float(np.mean(int(np.argmax(self.prior)) == y)) if self.n else float("nan")
        # observed (true labels)
        a, b = _attack_thresholds(P, y)
        self._kept = _Steps(a)
        self._moved = _Steps(b)
        # model (y ~ P(y|x)): every hypothetical label weighted by its posterior
        A: list[FloatArray] = []
        B: list[FloatArray] = []
        WA: list[FloatArray] = []
        WB: list[FloatArray] = []
        for c in range(self.K):
            yc = np.full(self.n, c)
            ac, bc = _attack_thresholds(P, yc)
            A.append(ac)
            WA.append(P[:, c])
            B.append(bc)
            WB.append(np.repeat(P[:, c][:, None], bc.shape[1], axis=1))
        self._kept_m = _Steps(np.concatenate(A), np.concatenate(WA))
        self._moved_m = _Steps(np.concatenate([x.ravel() for x in B]), np.concatenate([x.ravel() for x in WB]))
        # naive attacker that also knows the prior (Bayes on y~ and P(y) only)
        Pp = np.broadcast_to(self.prior, (self.n, self.K))
        ap, bp = _attack_thresholds(np.ascontiguousarray(Pp), y)
        self._kept_p = _Steps(ap)
        self._moved_p = _Steps(bp)
        # binary: k and the Prop. 3.0.2 quantities, per label group sorted for fast counts
        self.binary = self.K == 2
        if self.binary:
            py = np.clip(P[rows, y], POSTERIOR_CLIP, 1 - POSTERIOR_CLIP)
            self.p_true = py
            self.k = k_ratio(py, self.prior[y])
            self._rx: list[FloatArray] = []  # sorted P(1-y|x)/P(y|x) per group
            for g in (0, 1):
                pg = py[y == g]
                self._rx.append(np.sort((1.0 - pg) / pg))
            self._r0 = np.array(
                [(1 - self.prior[0]) / max(self.prior[0], 1e-300), (1 - self.prior[1]) / max(self.prior[1], 1e-300)]
            )

    # ---- construction
    @classmethod
    def fit(
        cls,
        frame: pd.DataFrame,
        public_cols: Iterable[str],
        label_col: str,
        *,
        folds: int = 5,
        l2: float = 1e-3,
        seed: int = 0,
        threshold: float = DEFAULT_THRESHOLD,
        progress: Callable[[float, str], None] = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> LabelLeakageModel:
        """Cross-fitted logistic posteriors of the label from the public columns."""
        y, classes = encode_labels(frame[label_col])
        keep = y >= 0
        sub = frame.loc[keep] if not keep.all() else frame
        y = y[keep]
        K = len(classes)
        if K < 2:
            P = np.ones((len(y), max(K, 1)))
            return cls(P, y, classes, threshold=threshold, info={"note": "a single label value"})
        public_cols = list(public_cols)
        if public_cols:
            X = encode_features(sub, public_cols)
            P, info = crossfit_posteriors(X, y, K, folds=folds, l2=l2, seed=seed, progress=progress, cancel=cancel)
        else:
            prior = np.bincount(y, minlength=K) / len(y)
            P, info = np.tile(prior, (len(y), 1)), {"note": "no public columns: P(y|x) = P(y)"}
        info = {
            **info,
            "public_columns": public_cols,
            "label_column": label_col,
            "rows_without_label": int((~keep).sum()),
        }
        return cls(P, y, classes, threshold=threshold, info=info)

    # ---- curves
    def accuracies(self, eps: npt.ArrayLike) -> dict[str, FloatArray]:
        """Expected accuracy of each attacker at each eps (arrays shaped like eps) under the
        IDEAL K-ary randomized response (delta 0, no rounding): a preview.  A release's figures
        come from :meth:`accuracies_of` at the plan's own law."""
        eps = np.asarray(eps, float)
        q = rr_keep_probability(eps, self.K)
        return self._accuracies(eps, q, (1.0 - q) / (self.K - 1), self.K)

    def accuracies_of(self, law: RRLaw | Sequence[RRLaw]) -> dict[str, FloatArray]:
        """Expected accuracy of each attacker under the randomized response ``law`` (one law, or
        one per point: arrays with one entry per law) -- the mechanism that runs."""
        laws = [law] if isinstance(law, RRLaw) else list(law)
        q = np.array([x.keep for x in laws], float)
        r = np.array([x.other for x in laws], float)
        cats = np.array([x.categories for x in laws], float)
        return self._accuracies(np.log(q / r), q, r, cats)

    def _accuracies(
        self, L: FloatArray, q: FloatArray, r: FloatArray, categories: npt.ArrayLike
    ) -> dict[str, FloatArray]:
        """The attackers when RR keeps the label with probability ``q`` and moves it to each other
        category with probability ``r``: the informed attacker follows y~ iff its likelihood ratio
        ``e^L = q / r`` outweighs the posterior's (module docstring), so its thresholds are read
        at ``L``.  RR may draw among more ``categories`` than the data shows: a move to one of
        those says nothing about the label, and there the attackers guess without it."""
        n = max(self.n, 1)
        unseen = r * np.maximum(np.asarray(categories, float) - self.K, 0.0)
        inf_obs = (q * self._kept.le(L) + r * self._moved.gt(L)) / n + unseen * self.uninformed_observed
        inf_mod = (q * self._kept_m.le(L) + r * self._moved_m.gt(L)) / n + unseen * self.uninformed_model
        naive_prior = (q * self._kept_p.le(L) + r * self._moved_p.gt(L)) / n + unseen * self.prior_guess_observed
        return {
            "informed": inf_obs,
            "naive": q + 0 * L,
            "uninformed": np.full(L.shape, self.uninformed_observed),
            "naive_with_prior": naive_prior,
            "informed_model": inf_mod,
            "uninformed_model": np.full(L.shape, self.uninformed_model),
        }

    def _count_bound_above(self, v: npt.ArrayLike, eps: npt.ArrayLike) -> FloatArray:
        """#records with IUEAdv bound > v (v, eps broadcast together)."""
        v, eps = np.broadcast_arrays(np.asarray(v, float), np.asarray(eps, float))
        total = np.zeros(v.shape)
        c = np.exp(-eps)
        for g in (0, 1):
            rx = self._rx[g]
            if rx.size == 0:
                continue
            s = v + 1.0 / (1.0 + c * self._r0[g])
            with np.errstate(divide="ignore", invalid="ignore"):
                thr = np.where(s > 0, (1.0 / s - 1.0) / c, np.inf)
            thr = np.where(s >= 1.0, -np.inf, thr)
            cnt = np.searchsorted(rx, thr.ravel(), side="left").reshape(v.shape)
            total += cnt
        return total

    def _bound_sorted(self, g: int, idx: npt.NDArray[np.int64], c: FloatArray) -> FloatArray:
        """The idx-th smallest bound in label group g (B increases as P(1-y|x)/P(y|x) falls)."""
        rx = self._rx[g]
        b: FloatArray = 1.0 / (1.0 + c * rx[rx.size - 1 - idx]) - 1.0 / (1.0 + c * self._r0[g])
        return b

    def bound_quantiles(self, eps: npt.ArrayLike, quantiles: Sequence[float] = QUANTILES) -> FloatArray:
        """Quantiles (inverted CDF) over records of the Prop. 3.0.2 bound, shape
        (len(eps), len(quantiles)).  Exact: the k-th smallest of the union of the two label
        groups' sorted sequences, by a vectorised binary search (O(log n) per query)."""
        eps = np.atleast_1d(np.asarray(eps, float))
        qs = np.asarray(quantiles, float)
        n0, n1 = self._rx[0].size, self._rx[1].size
        n = n0 + n1
        shape = (eps.size, qs.size)
        c = np.broadcast_to(np.exp(-eps)[:, None], shape)
        k = np.clip(np.ceil(qs * n).astype(np.int64) - 1, 0, n - 1)
        k = np.broadcast_to(k[None, :], shape)
        lo = np.maximum(0, k + 1 - n1)
        hi = np.minimum(k + 1, n0)
        while True:
            act = lo < hi
            if not act.any():
                break
            i = (lo + hi) // 2
            j = k + 1 - i
            a0 = self._bound_sorted(0, np.where(act, np.minimum(i, n0 - 1), 0), c) if n0 else 0 * c
            a1 = self._bound_sorted(1, np.where(act, np.clip(j - 1, 0, max(n1 - 1, 0)), 0), c) if n1 else 0 * c
            go_right = act & (a0 < a1)
            lo = np.where(go_right, i + 1, lo)
            hi = np.where(act & ~go_right, i, hi)
        i = lo
        j = k + 1 - i
        v0 = (
            np.where(i > 0, self._bound_sorted(0, np.clip(i - 1, 0, max(n0 - 1, 0)), c), -np.inf)
            if n0
            else np.full(shape, -np.inf)
        )
        v1 = (
            np.where(j > 0, self._bound_sorted(1, np.clip(j - 1, 0, max(n1 - 1, 0)), c), -np.inf)
            if n1
            else np.full(shape, -np.inf)
        )
        return np.maximum(v0, v1)

    def curves(
        self,
        eps_grid: npt.ArrayLike = DEFAULT_GRID,
        *,
        quantiles: Sequence[float] = QUANTILES,
        rr_at: Callable[[float], RRLaw] | None = None,
    ) -> dict[str, Any]:
        """Every preview curve over the eps grid (plain lists, JSON-able).  ``rr_at``: the
        randomized response that would run at each eps (None: the ideal one)."""
        eps = np.asarray(eps_grid, float)
        if rr_at is None:
            acc, L = self.accuracies(eps), eps
        else:
            laws = [rr_at(float(e)) for e in eps]
            acc, L = self.accuracies_of(laws), np.array([x.log_odds for x in laws])
        out: dict[str, Any] = {
            "epsilon": eps.tolist(),
            "n": self.n,
            "classes": [str(c) for c in self.classes],
            "accuracy": {k: np.asarray(v).tolist() for k, v in acc.items()},
            "informed_minus_naive": (acc["informed"] - acc["naive"]).tolist(),
            "computed_on": COMPUTED_ON,
        }
        if self.binary:
            # the Prop. 3.0.2 expressions depend on the release only through e^-eps = r / q
            cnt = self._count_bound_above(self.threshold, L)
            out["iue_adv_bound"] = {
                "threshold": self.threshold,
                "count_above": cnt.astype(int).tolist(),
                "share_above": (cnt / max(self.n, 1)).tolist(),
                "quantiles": {
                    str(q): col.tolist() for q, col in zip(quantiles, self.bound_quantiles(L, quantiles).T, strict=True)
                },
            }
        return out

    def iue_adv(self, eps: npt.ArrayLike) -> FloatArray:
        """Per-record Prop. 3.0.2 bound at one eps (for histograms); binary labels only."""
        if not self.binary:
            raise ValueError("IUEAdv (Sekiguchi 2024, Prop. 3.0.2) is defined for binary labels")
        return iue_adv_bound(self.p_true, self.prior[self.y], eps)

    def at(self, eps: float, *, quantiles: Sequence[float] = QUANTILES, rr: RRLaw | None = None) -> dict[str, Any]:
        """Scalars at one eps: accuracies, IUEAdv bound distribution, count above threshold.
        ``rr``: the randomized response that runs at ``eps`` (the plan's; None: the ideal one)."""
        e = float(eps)
        raw = self.accuracies(np.array([e])) if rr is None else self.accuracies_of(rr)
        acc = {k: float(v[0]) for k, v in raw.items()}
        L = e if rr is None else rr.log_odds
        out: dict[str, Any] = {
            "epsilon": e,
            "n": self.n,
            "accuracy": acc,
            "informed_minus_naive": acc["informed"] - acc["naive"],
            "computed_on": COMPUTED_ON,
        }
        if rr is not None:
            out["randomized_response"] = rr.to_json()
        if self.binary:
            above = int(self._count_bound_above(self.threshold, L))
            out["iue_adv_bound"] = {
                "threshold": self.threshold,
                "count_above": above,
                "share_above": above / max(self.n, 1),
                "quantiles": {
                    str(q): float(v) for q, v in zip(quantiles, self.bound_quantiles([L], quantiles)[0], strict=True)
                },
            }
        return out

    def k_summary(self, quantiles: Sequence[float] = QUANTILES) -> dict[str, Any]:
        """Distribution of k over records (eps-free) and the share with k > 1 (Cor. 3.0.3)."""
        if not self.binary:
            return {"available": False, "note": "k is defined for binary labels (Sekiguchi 2024)"}
        k = self.k
        return {
            "quantiles": {str(q): float(v) for q, v in zip(quantiles, np.quantile(k, quantiles), strict=True)},
            "share_k_above_1": float(np.mean(k > 1.0)),
            "count_k_above_1": int(np.sum(k > 1.0)),
        }

    def posterior_gain(
        self, eps: float, quantiles: Sequence[float] = QUANTILES, *, rr: RRLaw | None = None
    ) -> dict[str, Any]:
        """Distribution over records of P(y|x,y~) - P(y|y~): on kept labels (the Prop.
        3.0.2 expression of Sekiguchi 2024), on flipped labels, and its expectation over RR
        (``rr``: the randomized response that runs; None: the ideal one at ``eps``)."""
        e = float(eps)
        if rr is None:
            L, keep, flip, unseen = e, 1.0 - 1.0 / (1.0 + math.exp(e)), 1.0 / (1.0 + math.exp(e)), 0.0
        else:
            L, keep, flip = rr.log_odds, rr.keep, rr.other
            unseen = max(rr.categories - 2, 0) * rr.other
        B = self.iue_adv(L)
        F = posterior_gain_flipped(self.p_true, self.prior[self.y], L)
        # a move to a category the data never shows leaves P(y|x) against P(y)
        E = keep * B + flip * F + unseen * (self.p_true - self.prior[self.y])

        def qd(v: FloatArray) -> dict[str, float]:
            return {str(q): float(x) for q, x in zip(quantiles, np.quantile(v, quantiles), strict=True)}

        return {
            "epsilon": e,
            "kept_label_prop_3_0_2": qd(B),
            "flipped_label": qd(F),
            "expected_over_rr": qd(E),
            "share_records_where_expected_gain_exceeds_prop_3_0_2": float(np.mean(E > B + 1e-12)),
            "computed_on": COMPUTED_ON,
        }

    def summary(
        self,
        eps: float,
        eps_grid: npt.ArrayLike = DEFAULT_GRID,
        *,
        rr: RRLaw | None = None,
        rr_at: Callable[[float], RRLaw] | None = None,
    ) -> dict[str, Any]:
        """Every view at ``eps`` (the randomized response ``rr`` that runs there) and over
        ``eps_grid`` (``rr_at``: the one that would run at each point; None: the ideal one)."""
        return {
            "at_epsilon": self.at(eps, rr=rr),
            "curves": self.curves(eps_grid, rr_at=rr_at),
            "k": self.k_summary(),
            "prior": {str(c): float(p) for c, p in zip(self.classes, self.prior, strict=True)},
            **({"posterior_gain": self.posterior_gain(eps, rr=rr)} if self.binary else {}),
            "posterior_model": _jsonable_info(self.info),
            "computed_on": COMPUTED_ON,
        }


def _jsonable_info(info: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in info.items():
        if k == "fold_fits":
            out["fold_iterations"] = [f.get("iterations") for f in v]
            out["all_converged"] = all(f.get("converged") for f in v)
        elif isinstance(v, (str, int, float, bool, list)) or v is None:
            out[k] = v
    return out


# ---- semi-sensitive: Sekiguchi 2024, Prop. 4.0.1 ----------------------------------------------


def public_log_likelihood_ratio(
    posteriors: npt.ArrayLike, labels: npt.ArrayLike, *, quantile: float = 1.0, clip: float = 1e-3
) -> float:
    """Estimate lambda = max_x |ln P(x|y=1)/P(x|y=0)| over the public features (binary labels).

    Bayes: P(x|y=1)/P(x|y=0) = [P(y=1|x)/P(y=0|x)] * [P(y=0)/P(y=1)].  We use the cross-fitted
    posteriors clipped to [clip, 1-clip] (so lambda <= ln((1-clip)/clip) + |logit prior|) and take
    the ``quantile`` (default 1.0 = the maximum) over records of |ln ratio|.  This is an
    *estimate* from a fitted model, not a bound: a richer model or unseen x can give larger
    ratios, so report it as such.
    """
    P = np.asarray(posteriors, float)
    p1 = np.clip(P[:, 1], clip, 1 - clip)
    llr = (np.log(p1) - np.log1p(-p1)) - _prior_logit(labels, clip)
    return float(np.quantile(np.abs(llr), quantile)) if llr.size else 0.0


def _prior_logit(labels: npt.ArrayLike, clip: float) -> float:
    """logit P(y=1), the prior clipped as :func:`public_log_likelihood_ratio` clips it."""
    prior1 = float(np.clip(np.mean(np.asarray(labels) == 1), clip, 1 - clip))
    return math.log(prior1) - math.log1p(-prior1)


def public_log_likelihood_ratio_cap(labels: npt.ArrayLike, *, clip: float = 1e-3) -> float:
    """The largest value :func:`public_log_likelihood_ratio` can return on these labels:
    ``ln((1-clip)/clip) + |logit P(y=1)|`` -- the posterior's clipped logit is at most the first
    term, and the prior's logit is subtracted from it."""
    return math.log((1 - clip) / clip) + abs(_prior_logit(labels, clip))


def effective_label_epsilon(
    eps_label: float,
    eps_sensitive: float = 0.0,
    *,
    posteriors: npt.ArrayLike | None = None,
    labels: npt.ArrayLike | None = None,
    public_llr: float | None = None,
    quantile: float = 1.0,
    clip: float = 1e-3,
    guarantee_epsilon: float | None = None,
) -> dict[str, Any]:
    """Effective epsilon for the label of a semi-sensitive release (Sekiguchi 2024, Prop. 4.0.1).

    ``guarantee_epsilon``: the plan's label guarantee (``plan.label.epsilon``: every unit of
    the release, DP domain estimates and a jointly calibrated Gaussian group with its joint
    conversion included), so that the figure relative to the public columns IS the plan's, not a
    sum beside it; ``eps_sensitive`` should then be ``plan.label.sensitive_epsilon``.  Without it,
    ``eps_sensitive + eps_label``.

    Source: odds(y | x_pub, x~_priv, y~) <= e^{eps_1 + eps_2} odds(y | x_pub), with
    ``eps_1 = max{eps', ln max_x P(x|y=1)/P(x|y=0)}``, eps' of the Laplace-perturbed sensitive
    features, eps_2 of RR on the label.

    What the mathematics gives (see the report / tests): relative to odds(y | x_pub) the factor
    is ``e^{eps' + eps_2}`` (the mixture argument bounds the sensitive part by e^{eps'}, RR by
    e^{eps_2}; the public likelihood ratio is already inside odds(y | x_pub), and no independence
    assumption is needed).  Relative to the *prior* odds -- what an "effective epsilon for the
    label" must mean once public columns are published -- the factor is
    ``e^{eps' + lambda + eps_2}`` with ``lambda = max_x |ln P(x|y=1)/P(x|y=0)|``: the terms add,
    so the source's ``max{eps', lambda} + eps_2`` understates it.  We return both; the headline
    ``effective_label_epsilon`` is the corrected sum.
    """
    if public_llr is None:
        if posteriors is None or labels is None:
            raise ValueError("give public_llr, or posteriors and labels to estimate it")
        public_llr = public_log_likelihood_ratio(posteriors, labels, quantile=quantile, clip=clip)
    lam = float(public_llr)
    e1_seed = max(float(eps_sensitive), lam)
    relative = float(eps_sensitive) + float(eps_label) if guarantee_epsilon is None else float(guarantee_epsilon)
    estimate: dict[str, Any] = {
        "method": "cross-fitted logistic posteriors, clipped to "
        f"[{clip}, {1 - clip}], quantile {quantile} of |log ratio| over records",
        "conservative": "an estimate, not a bound: unseen public values or a richer model could show a larger ratio",
    }
    if labels is not None:
        # the estimate's true cap: ln((1-clip)/clip) alone omits the prior's logit, and was
        # printed below the value it claimed to cap
        estimate["cap"] = public_log_likelihood_ratio_cap(labels, clip=clip)
        estimate["cap_note"] = (
            "the largest public_log_likelihood_ratio the clipped posteriors can give: "
            "ln((1-clip)/clip) + |logit P(y=1)|; an estimate at the cap means the clipping, "
            "not the data, limited it"
        )
    return {
        "effective_label_epsilon": relative + lam,
        "relative_to_public_posterior_epsilon": relative,
        "seed_prop_4_0_1_epsilon": e1_seed + float(eps_label),
        "seed_epsilon_1": e1_seed,
        "public_log_likelihood_ratio": lam,
        "epsilon_label_rr": float(eps_label),
        "epsilon_sensitive": float(eps_sensitive),
        "estimate": estimate,
        "note": (
            "posterior odds of the label given the release are at most e^effective_label_epsilon "
            "times the prior odds (e^(eps'+eps_2) times the odds given the public columns). "
            "Sekiguchi 2024, Prop. 4.0.1, takes max{eps', lambda}, which understates the prior-relative "
            "factor; both are shown."
        ),
        "computed_on": COMPUTED_ON,
    }
