"""Linkage attack on record-level perturbation (the record risk view of dpstudio.risk).

The attacker holds the original quasi-identifiers (public columns plus the columns the release
perturbs) of everyone in the table and matches each released record back to the originals:
exact match on the categorical quasi-identifiers first (each mismatch costs ``cat_weight``,
default large), then the nearest neighbour on the numeric ones in standardised space (the
data's own sd: internal estimate).  Ties are broken uniformly at random, so a record matched to
a set of T equally close originals counts 1/T (the *expected* success).

Reported: re-identification rate on the released data, the same attack on the unperturbed data
(what the quasi-identifiers alone give away), and the chance level 1/n.  The targets are a
random sample (``max_targets``) matched against *all* n originals: through a k-d tree when there
are few quasi-identifiers (log n per target), else a dense scan in chunks -- the same matches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

COMPUTED_ON = "raw data - internal use only"

__all__ = ["linkage_rate", "linkage_risk", "COMPUTED_ON"]

FloatArray = npt.NDArray[np.float64]
CodeArray = npt.NDArray[np.integer[Any]]


def _split(
    original: pd.DataFrame, released: pd.DataFrame, columns: Iterable[str]
) -> tuple[FloatArray, FloatArray, CodeArray, CodeArray, list[str], list[str]]:
    num: list[str] = []
    cat: list[str] = []
    for c in columns:
        s = original[c]
        if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
            num.append(c)
        else:
            cat.append(c)
    if num:
        orig = original[num].to_numpy(np.float64, na_value=np.nan)
        rel = released[num].apply(pd.to_numeric, errors="coerce").to_numpy(np.float64, na_value=np.nan)
        mu = np.nanmean(orig, axis=0)
        sd = np.nanstd(orig, axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        orig = np.nan_to_num((orig - mu) / sd)
        rel = np.nan_to_num((rel - mu) / sd)
    else:
        orig = np.zeros((len(original), 0))
        rel = np.zeros((len(released), 0))
    orig_codes: list[CodeArray] = []
    rel_codes: list[CodeArray] = []
    for c in cat:
        codes, uniq = pd.factorize(pd.concat([original[c].astype(str), released[c].astype(str)], ignore_index=True))
        orig_codes.append(codes[: len(original)])
        rel_codes.append(codes[len(original) :])
    orig_cat = np.column_stack(orig_codes) if orig_codes else np.zeros((len(original), 0), np.int64)
    rel_cat = np.column_stack(rel_codes) if rel_codes else np.zeros((len(released), 0), np.int64)
    return orig, rel, orig_cat, rel_cat, num, cat


def linkage_rate(
    orig: FloatArray,
    rel: FloatArray,
    orig_cat: CodeArray,
    rel_cat: CodeArray,
    targets: CodeArray,
    *,
    cat_weight: float = 1e6,
    chunk: int = 64,
    tol: float = 1e-9,
) -> float:
    """Expected share of targets t whose released record rel[t] is matched to original t.

    Distance: squared Euclidean on the numeric quasi-identifiers plus ``cat_weight`` per
    categorical mismatch; the originals within ``tol`` (relative) of the minimum tie.  With few
    quasi-identifiers a k-d tree finds the nearest and counts the ties (:func:`_tree_successes`,
    ~log n per target instead of n); targets it cannot settle, and wide tables, are matched
    against all n originals (:func:`_dense_successes`)."""
    targets = np.asarray(targets, dtype=np.int64)
    if targets.size == 0:
        return 0.0
    total, rest = 0.0, targets
    if orig.shape[1] + orig_cat.shape[1] <= TREE_MAX_DIMS:
        succ, done = _tree_successes(orig, rel, orig_cat, rel_cat, targets, cat_weight, tol)
        total, rest = float(succ[done].sum()), targets[~done]
    return (total + _dense_successes(orig, rel, orig_cat, rel_cat, rest, cat_weight, chunk, tol)) / targets.size


#: k-d trees beat the dense scan up to about this many quasi-identifiers (then they visit most leaves)
TREE_MAX_DIMS = 12


def _dense_successes(
    orig: FloatArray,
    rel: FloatArray,
    orig_cat: CodeArray,
    rel_cat: CodeArray,
    targets: CodeArray,
    cat_weight: float,
    chunk: int,
    tol: float,
) -> float:
    """Sum over ``targets`` of the expected success against all n originals, ``chunk`` at a time."""
    if targets.size == 0:
        return 0.0
    o2 = np.einsum("ij,ij->i", orig, orig)
    total = 0.0
    for s in range(0, targets.size, chunk):
        t = targets[s : s + chunk]
        r = rel[t]
        d = np.einsum("ij,ij->i", r, r)[:, None] + o2[None, :] - 2.0 * (r @ orig.T)
        if orig_cat.shape[1]:
            mism = np.zeros(d.shape)
            for j in range(orig_cat.shape[1]):
                mism += rel_cat[t, j][:, None] != orig_cat[None, :, j]
            d += cat_weight * mism
        dmin = d.min(axis=1, keepdims=True)
        near = d <= dmin + tol * (1.0 + np.abs(dmin))
        ties = near.sum(axis=1)
        own = near[np.arange(t.size), t]
        total += float(np.sum(own / ties))
    return total


def _tree_successes(
    orig: FloatArray,
    rel: FloatArray,
    orig_cat: CodeArray,
    rel_cat: CodeArray,
    targets: CodeArray,
    cat_weight: float,
    tol: float,
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """``(success, done)`` per target from a k-d tree (Bentley 1975) over the originals.

    Each categorical code becomes a coordinate scaled by ``sqrt(cat_weight)``: records whose
    categories all agree are at their numeric distance, any others at least ``cat_weight``
    away -- exactly the dense distance whenever the nearest original agrees on every category.
    So when the nearest lies below ``cat_weight / 2`` (every target but those whose released
    categories no original has, or ~700 standard deviations away) the ties within ``tol`` of it
    are the dense ones: counted by a ball query, ``done``.  The rest go to the dense scan."""
    from scipy.spatial import cKDTree

    scale = math.sqrt(cat_weight)
    X = np.hstack([orig, scale * orig_cat])
    Y = np.hstack([rel[targets], scale * rel_cat[targets]])
    tree = cKDTree(X)
    dist, _ = tree.query(Y, k=1)
    dmin = dist * dist
    lim = dmin + tol * (1.0 + dmin)
    ties = tree.query_ball_point(Y, np.sqrt(lim), return_length=True)
    own = np.einsum("ij,ij->i", Y - X[targets], Y - X[targets]) <= lim
    # without categorical quasi-identifiers the tree's distance is the dense one at any range
    success: FloatArray = own / np.maximum(ties, 1)
    done: npt.NDArray[np.bool_] = (dmin < 0.5 * cat_weight) | (orig_cat.shape[1] == 0)
    return success, done


def _wilson95(p: float, m: int) -> list[float]:
    """Wilson score 95 % interval for a share ``p`` of ``m`` trials (Wilson 1927): unlike
    ``p +- 1.96 SE`` it does not collapse to a point when ``p`` is 0 or 1 (0 of 2,000 -> [0, 0.0019])."""
    z2 = 1.96**2
    centre = (p + z2 / (2 * m)) / (1 + z2 / m)
    half = 1.96 * math.sqrt(p * (1 - p) / m + z2 / (4 * m * m)) / (1 + z2 / m)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def linkage_risk(
    original: pd.DataFrame,
    released: pd.DataFrame,
    columns: Iterable[str],
    *,
    max_targets: int = 2000,
    seed: int = 0,
    cat_weight: float = 1e6,
) -> dict[str, Any]:
    """Re-identification rate of the linkage attack, vs. unperturbed data and vs. 1/n."""
    columns = [c for c in columns if c in original.columns and c in released.columns]
    n = len(original)
    if n == 0 or not columns:
        return {"available": False, "note": "no quasi-identifier columns", "computed_on": COMPUTED_ON}
    g = np.random.default_rng(seed)
    targets = np.sort(g.choice(n, size=min(max_targets, n), replace=False))
    orig, rel, orig_cat, rel_cat, num, cat = _split(
        original.reset_index(drop=True), released.reset_index(drop=True), columns
    )
    rate = linkage_rate(orig, rel, orig_cat, rel_cat, targets, cat_weight=cat_weight)
    base = linkage_rate(orig, orig, orig_cat, orig_cat, targets, cat_weight=cat_weight)
    m = targets.size
    # per-target successes lie in [0, 1]: the Bernoulli variance bounds theirs.  No finite-
    # population factor: the rate is random through the simulated noise too, not only the targets
    se = math.sqrt(rate * (1 - rate) / m)
    se_base = math.sqrt(base * (1 - base) / m)
    return {
        "reid_rate": rate,
        "reid_rate_se": se,
        "reid_rate_ci95": _wilson95(rate, m),
        "reid_rate_unperturbed": base,
        "reid_rate_unperturbed_se": se_base,
        "reid_rate_unperturbed_ci95": _wilson95(base, m),
        "chance_rate": 1.0 / n,
        "quasi_identifiers": {"numeric": num, "categorical": cat},
        "targets": int(m),
        "n": int(n),
        "attack": "exact match on categorical quasi-identifiers, then nearest neighbour in "
        "standardised numeric space; ties split uniformly",
        "computed_on": COMPUTED_ON,
    }
