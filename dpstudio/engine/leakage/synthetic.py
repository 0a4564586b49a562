"""Risk view for DP synthetic data: distance to closest record and membership inference.

Records are encoded with the recipe's *public* domains when given (numbers scaled by the
public bounds to [0, 1], categories one-hot / sqrt(2) so one mismatch is distance 1); without
domains, numbers are scaled by the data's own range (acceptable here: internal, steward-only).

* DCR: distance of each synthetic record to its closest *training* record, compared with the
  same for a *holdout* sample the generator never saw.  If the generator memorises, synthetic
  records sit closer to training records than fresh real records do: median DCR ratio
  (synthetic / holdout) well below 1, and the share of synthetic records closer than the 5th
  percentile of holdout DCRs well above 5 %.
* Membership inference (distance-based attacker): score a real record by its distance to the
  closest synthetic record (smaller = "member"); advantage = max over thresholds of TPR - FPR,
  members = training records, non-members = holdout records (equal-size samples).

Nearest neighbours are computed exactly in chunks (|a|^2 + |b|^2 - 2ab).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

COMPUTED_ON = "raw data - internal use only"

__all__ = ["encode_mixed", "nearest_distance", "dcr_risk", "membership_advantage", "COMPUTED_ON"]

FloatArray = npt.NDArray[np.float64]


class PublicDomain(Protocol):
    """What :func:`encode_mixed` reads of a column's public domain (a recipe ``Domain``)."""

    @property
    def kind(self) -> str: ...  # "numeric" | "categorical"
    @property
    def known(self) -> bool: ...
    @property
    def low(self) -> float | None: ...
    @property
    def high(self) -> float | None: ...
    @property
    def categories(self) -> Sequence[str] | None: ...


def encode_mixed(
    frames: Sequence[pd.DataFrame], columns: Iterable[str], domains: Mapping[str, PublicDomain] | None = None
) -> list[FloatArray]:
    """Encode several frames on a common scale (public domains preferred)."""
    domains = domains or {}
    blocks: list[list[FloatArray]] = [[] for _ in frames]
    for col in columns:
        dom = domains.get(col)
        series = [f[col] for f in frames]
        numeric = all(
            pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype) for s in series
        )
        if dom is not None and getattr(dom, "kind", None) == "categorical":
            numeric = False
        if numeric:
            vals = [s.to_numpy(dtype=np.float64, na_value=np.nan) for s in series]
            if dom is not None and getattr(dom, "known", False) and dom.kind == "numeric":
                assert dom.low is not None and dom.high is not None  # a known numeric domain has both
                lo, hi = float(dom.low), float(dom.high)
            else:
                allv = np.concatenate([v[np.isfinite(v)] for v in vals]) if vals else np.array([0.0])
                lo, hi = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 1.0)
            span = hi - lo if hi > lo else 1.0
            for b, v in zip(blocks, vals, strict=True):
                b.append(np.nan_to_num((np.clip(v, lo, hi) - lo) / span, nan=0.5)[:, None])
        else:
            public_cats = getattr(dom, "categories", None) if dom is not None else None
            if public_cats:
                cats = list(public_cats)
            else:
                cats = sorted(set().union(*[set(s.astype(str).unique()) for s in series]))
            index = pd.Index(cats)
            for b, s in zip(blocks, series, strict=True):
                codes = index.get_indexer(pd.Index(s.astype(str)))  # documented target type: Index
                oh = np.zeros((len(s), len(cats)))
                ok = codes >= 0
                oh[np.flatnonzero(ok), codes[ok]] = 1.0 / np.sqrt(2.0)
                b.append(oh)
    return [np.hstack(b) if b else np.zeros((len(f), 0)) for b, f in zip(blocks, frames, strict=True)]


#: entries of one chunk's (rows of A) x (rows of B) distance matrix: 4M float64 = 32 MB a
#: temporary, whatever the sizes (a fixed 1,024 rows of A against 20,000 of B made 160 MB ones)
_CHUNK_ENTRIES = 1 << 22


def nearest_distance(
    A: npt.NDArray[np.floating[Any]],
    B: npt.NDArray[np.floating[Any]],
    *,
    chunk: int | None = None,
    exclude_self: bool = False,
) -> FloatArray:
    """Euclidean distance of every row of A to its nearest row of B (exact, chunked: ``chunk``
    rows of A at a time, by default as many as keep a chunk's matrix at 4M entries)."""
    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    if chunk is None:
        chunk = max(1, _CHUNK_ENTRIES // max(B.shape[0], 1))
    b2 = np.einsum("ij,ij->i", B, B)
    out = np.empty(A.shape[0])
    for s in range(0, A.shape[0], chunk):
        a = A[s : s + chunk]
        d2 = np.einsum("ij,ij->i", a, a)[:, None] + b2[None, :] - 2.0 * (a @ B.T)
        if exclude_self:
            d2[np.arange(a.shape[0]), np.arange(s, s + a.shape[0])] = np.inf
        out[s : s + chunk] = np.sqrt(np.maximum(d2.min(axis=1), 0.0))
    return out


def membership_advantage(member_scores: npt.ArrayLike, nonmember_scores: npt.ArrayLike) -> dict[str, Any]:
    """max_t TPR(t) - FPR(t) for the rule 'member iff score <= t' (exact over all thresholds)."""
    m = np.sort(np.asarray(member_scores, float))
    h = np.sort(np.asarray(nonmember_scores, float))
    t = np.unique(np.concatenate([m, h]))
    tpr = np.searchsorted(m, t, side="right") / max(m.size, 1)
    fpr = np.searchsorted(h, t, side="right") / max(h.size, 1)
    gap = tpr - fpr
    i = int(np.argmax(gap)) if gap.size else 0
    # AUC of the score (probability a member scores lower than a non-member; ties 1/2)
    ranks = pd.Series(np.concatenate([m, h])).rank().to_numpy()
    auc = (ranks[m.size :].sum() - h.size * (h.size + 1) / 2) / max(m.size * h.size, 1)
    return {
        "advantage": float(max(gap[i], 0.0)) if gap.size else 0.0,
        "threshold": float(t[i]) if t.size else None,
        "tpr": float(tpr[i]) if t.size else None,
        "fpr": float(fpr[i]) if t.size else None,
        "auc": float(auc),
    }


def dcr_risk(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    columns: Iterable[str] | None = None,
    *,
    domains: Mapping[str, PublicDomain] | None = None,
    max_rows: int = 5000,
    seed: int = 0,
) -> dict[str, Any]:
    """DCR ratio and distance-based membership-inference advantage (see module docstring)."""
    columns = list(columns) if columns is not None else [c for c in train.columns if c in synthetic.columns]
    g = np.random.default_rng(seed)

    def sample(f: pd.DataFrame, k: int) -> pd.DataFrame:
        return f.iloc[np.sort(g.choice(len(f), size=min(k, len(f)), replace=False))] if len(f) > k else f

    m = min(len(train), len(holdout), max_rows)
    tr_all = sample(train, max(max_rows * 4, m))  # reference set for DCR
    syn = sample(synthetic, max_rows)
    ho = sample(holdout, m)
    mem = sample(train, m)
    Etr, Esyn, Eho, Emem = encode_mixed([tr_all, syn, ho, mem], columns, domains)
    d_syn = nearest_distance(Esyn, Etr)
    d_ho = nearest_distance(Eho, Etr)
    p5 = float(np.quantile(d_ho, 0.05))
    med_ho = float(np.median(d_ho))
    mia = membership_advantage(nearest_distance(Emem, Esyn), nearest_distance(Eho, Esyn))
    if mia["tpr"] is not None:
        # SE of TPR - FPR at the chosen threshold (two independent sample shares; the choice
        # of the threshold on the same samples biases the advantage up, not covered)
        mia["advantage_se"] = math.sqrt(
            mia["tpr"] * (1 - mia["tpr"]) / max(len(mem), 1) + mia["fpr"] * (1 - mia["fpr"]) / max(len(ho), 1)
        )
    closer = float(np.mean(d_syn < p5))
    copies = float(np.mean(d_syn <= 1e-12))
    k = max(d_syn.size, 1)
    return {
        "dcr": {
            "median_synthetic_to_train": float(np.median(d_syn)),
            "median_holdout_to_train": med_ho,
            "median_ratio": float(np.median(d_syn) / med_ho) if med_ho > 0 else None,
            "holdout_p5": p5,
            "share_synthetic_closer_than_holdout_p5": closer,
            "share_synthetic_closer_than_holdout_p5_se": math.sqrt(closer * (1 - closer) / k),
            "expected_share_without_memorisation": 0.05,
            "share_synthetic_exact_copies": copies,
            "share_synthetic_exact_copies_se": math.sqrt(copies * (1 - copies) / k),
        },
        "membership_inference": {
            **mia,
            "attacker": "distance to closest synthetic record",
            "members": int(len(mem)),
            "non_members": int(len(ho)),
        },
        "rows": {"train_reference": int(len(tr_all)), "synthetic": int(len(syn)), "holdout": int(len(ho))},
        "computed_on": COMPUTED_ON,
    }
