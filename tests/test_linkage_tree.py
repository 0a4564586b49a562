"""The linkage attack's k-d tree path gives the dense scan's rate, and scans only what it must.

The internal report's linkage attack matched every target against all n originals with a dense
distance matrix (~5 s of the ~7 s report phase at the 50,000-row cap); the tree finds the
nearest and counts the ties in ~log n per target.  It must be the same attack, ties included.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpstudio.engine.leakage.linkage as lk


def _tables(g, n, n_cat, n_num, unseen):
    """An original and a perturbed table, with exact ties (integer columns, duplicates) and,
    when ``unseen``, released categories no original has."""
    orig = pd.DataFrame({f"c{j}": g.integers(0, int(g.integers(1, 6)), n).astype(str) for j in range(n_cat)})
    scale = {f"x{j}": 10.0 ** int(g.integers(-3, 6)) for j in range(n_num)}
    for j in range(n_num):
        orig[f"x{j}"] = g.integers(0, 4, n).astype(float) if j % 2 == 0 else g.normal(size=n) * scale[f"x{j}"]
    rel = orig.copy()
    for c in rel.columns:
        if c.startswith("x"):
            rel[c] = rel[c] + (g.integers(-1, 2, n) if int(c[1:]) % 2 == 0 else g.laplace(0, 0.3 * scale[c], n))
        elif unseen:
            rel[c] = np.where(g.random(n) < 0.3, "new", rel[c])
    return orig, rel


CASES = [
    (n_cat, n_num, unseen)
    for n_cat in (0, 1, 3)
    for n_num in (0, 1, 3, 14)
    for unseen in (False, True)
    if n_cat + n_num > 0 and not (unseen and n_cat == 0)
]


@pytest.mark.parametrize("n_cat,n_num,unseen", CASES)
def test_tree_rate_equals_the_dense_scan(monkeypatch, n_cat, n_num, unseen):
    g = np.random.default_rng(100 * n_cat + 10 * n_num + unseen)
    orig, rel = _tables(g, 800, n_cat, n_num, unseen)
    orig_num, rel_num, orig_cat, rel_cat, *_ = lk._split(orig, rel, list(orig.columns))
    targets = np.sort(g.choice(len(orig), 300, replace=False))
    dense = {"targets": 0}
    real = lk._dense_successes

    def counting(orig_num, rel_num, orig_cat, rel_cat, t, *a):
        dense["targets"] += t.size
        return real(orig_num, rel_num, orig_cat, rel_cat, t, *a)

    monkeypatch.setattr(lk, "_dense_successes", counting)
    for A, Ac in ((rel_num, rel_cat), (orig_num, orig_cat)):  # the release, and the unperturbed baseline
        dense["targets"] = 0
        got = lk.linkage_rate(orig_num, A, orig_cat, Ac, targets)
        want = real(orig_num, A, orig_cat, Ac, targets, 1e6, 64, 1e-9) / targets.size
        assert got == pytest.approx(want, abs=1e-12)
        wide = orig_num.shape[1] + orig_cat.shape[1] > lk.TREE_MAX_DIMS
        if wide:  # a tree would visit most leaves: all dense
            assert dense["targets"] == targets.size
        else:  # only targets whose released categories no original has
            keys = {tuple(r) for r in orig_cat}
            missing = sum(tuple(Ac[t]) not in keys for t in targets)
            assert dense["targets"] == missing
    assert lk.linkage_rate(orig_num, orig_num, orig_cat, orig_cat, targets) > 0


def test_exact_duplicates_split_the_success():
    orig = pd.DataFrame({"zip": ["a", "a", "a", "b"], "age": [30, 30, 30, 40]})
    r = lk.linkage_risk(orig, orig, ["zip", "age"], seed=0)
    assert r["reid_rate_unperturbed"] == pytest.approx((3 * (1 / 3) + 1) / 4)
