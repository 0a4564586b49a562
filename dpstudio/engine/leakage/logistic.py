"""L2-regularised logistic regression (binary or softmax) and K-fold cross-fitted posteriors.

Used only to *estimate* ``P(y | x_public)`` for the leakage views (Sekiguchi 2024; docs/leakage.md).
These estimates read the raw data and are for the data steward / internal report only, never
released; that is why the features may be standardised with the data's own mean and standard
deviation here (elsewhere in dpstudio that would be a leak).

Design: numeric public columns are standardised into a dense block; categorical public columns
are one-hot encoded *implicitly* as integer codes (``z += W_j[code]``; the gradient of the block
is a ``bincount``), so a high-cardinality column (even one level per record) costs O(n), not
O(n * levels).  Missing numbers are filled with the column mean and get a missingness
indicator; missing categories are their own level.

The loss is the exact mean log-loss plus ``l2/2 * ||W||^2`` (the intercept is not penalised),
minimised by scipy's L-BFGS with the exact gradient.  Cross-fitting: the records are split into
K folds; each record's posterior comes from the model fitted on the other K-1 folds, so no
record's own label is used for its own posterior (a memorised feature cannot leak into it).
No scikit-learn at run time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, no_progress

__all__ = ["Design", "encode_features", "encode_labels", "LogisticModel", "fit_logistic", "crossfit_posteriors"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass
class Design:
    """Features in a compact form: a dense numeric block and integer codes of one-hot blocks."""

    dense: FloatArray  # (n, d) float64, standardised
    codes: list[IntArray] = field(default_factory=list)  # (n,) int64 arrays, values in [0, L_j)
    levels: list[int] = field(default_factory=list)  # L_j
    names: list[str] = field(default_factory=list)  # column names (dense first, then categorical)

    @property
    def n(self) -> int:
        return int(self.dense.shape[0])

    @property
    def n_params(self) -> int:
        return int(self.dense.shape[1] + sum(self.levels))

    def rows(self, idx: npt.NDArray[np.intp] | IntArray) -> Design:
        return Design(self.dense[idx], [c[idx] for c in self.codes], list(self.levels), self.names)


def encode_features(frame: pd.DataFrame, columns: Iterable[str]) -> Design:
    """Numeric columns standardised (data mean/sd: internal use only), others as category codes."""
    dense_cols: list[FloatArray] = []
    codes: list[IntArray] = []
    levels: list[int] = []
    names: list[str] = []
    n = len(frame)
    for name in columns:
        s = frame[name]
        if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
            c, uniques = pd.factorize(s, use_na_sentinel=True)
            c = c.astype(np.int64)
            L = len(uniques)
            if (c < 0).any():
                c[c < 0] = L  # missing: its own level
                L += 1
            codes.append(c)
            levels.append(max(L, 1))
            names.append(name)
            continue
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        miss = ~np.isfinite(x)
        if miss.all():
            continue
        mu = float(np.mean(x[~miss]))
        sd = float(np.std(x[~miss]))
        x = np.where(miss, mu, x)
        if sd > 0:
            dense_cols.append((x - mu) / sd)
            names.append(name)
        if miss.any():
            ind = miss.astype(np.float64)
            dense_cols.append((ind - ind.mean()) / max(ind.std(), 1e-12))
            names.append(f"{name}__missing")
    dense = np.column_stack(dense_cols) if dense_cols else np.zeros((n, 0))
    return Design(np.ascontiguousarray(dense, dtype=np.float64), codes, levels, names)


def encode_labels(series: pd.Series[Any]) -> tuple[IntArray, list[Any]]:
    """Integer label codes 0..K-1 (sorted classes) and the class values; missing -> -1."""
    codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=True)
    return codes.astype(np.int64), list(uniques)


# ---- the model -----------------------------------------------------------------------------


class LogisticModel:
    """Fitted coefficients.  Binary (K=2): one logit; K>2: softmax with K logits."""

    def __init__(
        self, n_classes: int, dense_w: FloatArray, cat_w: list[FloatArray], bias: FloatArray, info: dict[str, Any]
    ):
        self.n_classes = n_classes
        self.dense_w = dense_w  # (d, m) with m = 1 (binary) or K
        self.cat_w = cat_w  # list of (L_j, m)
        self.bias = bias  # (m,)
        self.info = info

    def logits(self, X: Design) -> FloatArray:
        z = X.dense @ self.dense_w + self.bias
        for c, w in zip(X.codes, self.cat_w, strict=True):
            # levels unseen at training time (code >= rows of w) contribute 0
            ok = c < w.shape[0]
            z[ok] += w[c[ok]]
        return z

    def predict_proba(self, X: Design) -> FloatArray:
        z = self.logits(X)
        if self.n_classes == 2:
            p1 = expit(z[:, 0])
            return np.column_stack([1.0 - p1, p1])
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        p: FloatArray = e / e.sum(axis=1, keepdims=True)
        return p


def _unpack(
    theta: FloatArray, d: int, levels: Sequence[int], m: int
) -> tuple[FloatArray, list[FloatArray], FloatArray]:
    pos = 0
    dw = theta[pos : pos + d * m].reshape(d, m)
    pos += d * m
    cw = []
    for L in levels:
        cw.append(theta[pos : pos + L * m].reshape(L, m))
        pos += L * m
    b = theta[pos : pos + m]
    return dw, cw, b


def _one_blas_thread() -> contextlib.AbstractContextManager[object]:
    """Tall-skinny products are memory-bound: BLAS threads only add contention.  Use
    threadpoolctl when it is installed (optional); otherwise leave BLAS alone."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    limits: contextlib.AbstractContextManager[object] = threadpool_limits(limits=1, user_api="blas")
    return limits


def fit_logistic(
    X: Design, y: IntArray, n_classes: int, *, l2: float = 1e-3, maxiter: int = 500, tol: float = 1e-7
) -> LogisticModel:
    """Minimise mean log-loss + l2/2 ||W||^2 (intercept unpenalised) by L-BFGS, exact gradient."""
    y = np.asarray(y, dtype=np.int64)
    n, d = X.dense.shape
    m = 1 if n_classes == 2 else n_classes
    levels = list(X.levels)
    counts = np.bincount(y, minlength=n_classes).astype(float)
    prior = (counts + 0.5) / (n + 0.5 * n_classes)
    theta0 = np.zeros(d * m + sum(levels) * m + m)
    if m == 1:
        theta0[-1] = np.log(prior[1] / prior[0])
    else:
        theta0[-m:] = np.log(prior)
    Xd = X.dense
    codes = X.codes
    yf = y.astype(np.float64)
    if m > 1:
        Y = np.zeros((n, m))
        Y[np.arange(n), y] = 1.0
    inv_n = 1.0 / n
    n_pen = d * m + sum(levels) * m

    def fun(theta: FloatArray) -> tuple[float, FloatArray]:
        dw, cw, b = _unpack(theta, d, levels, m)
        z = Xd @ dw + b
        for c, w in zip(codes, cw, strict=True):
            z += w[c]
        if m == 1:
            z1 = z[:, 0]
            # log(1+e^z) - y z = max(z,0) + log1p(e^-|z|) - y z  (stable; one exp per row)
            t = np.exp(-np.abs(z1))
            loss = (np.sum(np.maximum(z1, 0.0)) + np.sum(np.log1p(t)) - float(yf @ z1)) * inv_n
            sig = np.where(z1 >= 0, 1.0, t) / (1.0 + t)
            g = ((sig - yf) * inv_n)[:, None]
        else:
            zmax = z.max(axis=1, keepdims=True)
            e = np.exp(z - zmax)
            s = e.sum(axis=1, keepdims=True)
            lse = (zmax + np.log(s))[:, 0]
            loss = np.sum(lse - z[np.arange(n), y]) * inv_n
            g = (e / s - Y) * inv_n
        pen = theta[:n_pen]
        loss += 0.5 * l2 * float(pen @ pen)
        grad = np.empty_like(theta)
        grad[: d * m] = (Xd.T @ g).ravel()
        pos = d * m
        for c, L in zip(codes, levels, strict=True):
            if m == 1:
                gb = np.bincount(c, weights=g[:, 0], minlength=L)[:, None]
            else:
                gb = np.stack([np.bincount(c, weights=g[:, k], minlength=L) for k in range(m)], 1)
            grad[pos : pos + L * m] = gb.ravel()
            pos += L * m
        grad[pos:] = g.sum(axis=0)
        grad[:n_pen] += l2 * pen
        return loss, grad

    with _one_blas_thread():
        res = minimize(
            fun,
            theta0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": maxiter, "gtol": tol, "ftol": 1e-12, "maxcor": 20},
        )
    dw, cw, b = _unpack(res.x, d, levels, m)
    info = {
        "converged": bool(res.success),
        "iterations": int(res.nit),
        "loss": float(res.fun),
        "message": str(res.message),
    }
    return LogisticModel(n_classes, dw.copy(), [w.copy() for w in cw], b.copy(), info)


def crossfit_posteriors(
    X: Design,
    y: IntArray,
    n_classes: int,
    *,
    folds: int = 5,
    l2: float = 1e-3,
    seed: int = 0,
    progress: Callable[[float, str], None] = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> tuple[FloatArray, dict[str, Any]]:
    """K-fold cross-fitted posteriors ``P(y | x_i)`` (n, K): row i from a model not trained on i.

    Folds are a seeded random partition.  Levels of a categorical column that occur only in the
    held-out fold get weight 0 (L2 shrinks unseen one-hot weights to exactly 0 anyway).
    """
    n = X.n
    folds = int(max(2, min(folds, n)))
    gen = np.random.default_rng(seed)
    fold_of = gen.permutation(np.arange(n) % folds)
    post = np.empty((n, n_classes))
    infos = []
    for k in range(folds):
        cancel.check()
        progress(k / folds, f"fitting posterior model, fold {k + 1}/{folds}")
        test = np.flatnonzero(fold_of == k)
        train = np.flatnonzero(fold_of != k)
        model = fit_logistic(X.rows(train), y[train], n_classes, l2=l2)
        post[test] = model.predict_proba(X.rows(test))
        infos.append(model.info)
    progress(1.0, "posterior model fitted")
    return post, {"folds": folds, "l2": l2, "fold_fits": infos, "all_converged": all(i["converged"] for i in infos)}
