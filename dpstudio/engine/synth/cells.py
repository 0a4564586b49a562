"""The discrete cells of a public table schema, shared by the marginal synthesizers (MST, AIM).

Every column becomes a finite set of cells computed from the PUBLIC :class:`TableSpec` only:

* a numeric column: its public bins (:func:`column_bins`; no quantile or other statistic of the
  data is used, so the bins cost no privacy);
* a categorical column (and the label): its public categories plus one hidden "unknown" cell
  that receives values outside the list (measured like any cell, never sampled).
* a column that may be missing (``ColumnSpec.missing``): one more cell, "missing", that receives
  its empty cells (NaN, None, blank) and is measured AND sampled like any value; it comes after
  the bins or the categories, before the hidden "unknown" cell (which stays last).  Decoded as a
  missing value (NaN for numbers, None/NaN for categories).  Without the flag an empty
  categorical cell goes to the hidden "unknown" cell and an empty number to its midpoint's bin.

:class:`CellLayout` maps a frame to an ``(n, d)`` matrix of cell codes (label last) and decodes
sampled codes back to the original schema (numbers uniformly inside their bin).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .encoding import ColumnSpec, Encoder, FloatArray, IntArray, TableSpec, categories_of, numbers_with_missing


class ColumnBins:
    """Bins of one numeric column, computed from its PUBLIC spec only (bounds, integer flag).

    ``edges`` has B + 1 entries.  ``aligned`` (integer columns): bin k holds the integers
    ``edges[k] .. edges[k+1] - 1`` and ``edges[-1] = high + 1``; otherwise bin k is
    ``[edges[k], edges[k+1])`` (the last one closed at ``high``)."""

    def __init__(self, edges: npt.ArrayLike, aligned: bool, kind: str) -> None:
        self.edges = np.asarray(edges, dtype=np.float64)
        self.aligned = bool(aligned)
        self.kind = kind
        if self.edges.ndim != 1 or len(self.edges) < 2 or np.any(np.diff(self.edges) <= 0):
            raise ValueError("bin edges must be strictly increasing")

    @property
    def size(self) -> int:
        return len(self.edges) - 1

    def codes(self, v: FloatArray) -> IntArray:
        """Bin index of values already clipped to the public bounds."""
        if self.aligned:
            v = np.rint(v)
        return np.searchsorted(self.edges[1:-1], v, side="right").astype(np.int64)

    def decode(self, codes: IntArray, u: FloatArray, integer: bool) -> IntArray | FloatArray:
        """A value drawn uniformly inside each bin (u uniform in [0, 1))."""
        lo, hi = self.edges[codes], self.edges[codes + 1]
        if self.aligned:  # uniform over the integers of the bin
            return (lo + np.floor(u * (hi - lo))).astype(np.int64)
        v = lo + u * (hi - lo)
        return np.rint(v).astype(np.int64) if integer else v


def column_bins(col: ColumnSpec, bins: int = 16, binning: str = "auto", max_values: int = 32) -> ColumnBins:
    """Public bins of a numeric column: a function of (low, high, integer, options) only.

    * ``"uniform"``: ``bins`` equal-width bins of [low, high] (numbers decoded uniformly in the
      bin, rounded for integer columns) - the original scheme.
    * ``"auto"`` (default):
      - integer column with at most ``max_values`` values: one bin per value (exact decoding);
      - non-negative column whose upper bound is >= 1000 x max(low, 1) (amounts, counts spanning
        three or more decades, e.g. capital-gain 0..99,999): one bin [low, low + 1) (the zeros of
        such columns) then ``bins - 1`` log-spaced bins up to high;
      - otherwise ``bins`` equal-width bins;
      integer columns get integer-aligned bins (each holds whole integers).
    No data is read: the same spec always gives the same edges."""
    assert col.low is not None and col.high is not None, "a numeric column has public bounds"
    low, high, integer = float(col.low), float(col.high), bool(col.integer)
    bins = max(int(bins), 1)
    if binning == "uniform":
        return ColumnBins(np.linspace(low, high, bins + 1), False, "uniform")
    if binning != "auto":
        raise ValueError(f"unknown binning {binning!r} (auto or uniform)")
    if integer:
        lo, hi = math.ceil(low), math.floor(high)
        if hi < lo:
            return ColumnBins(np.linspace(low, high, bins + 1), False, "uniform")
        n_values = hi - lo + 1
        if n_values <= max(int(max_values), bins):
            return ColumnBins(np.arange(lo, hi + 2, dtype=np.float64), True, "per-value")
    if low >= 0 and high >= 1000.0 * max(low, 1.0) and bins >= 3:
        first = low + 1.0
        geo = np.geomspace(max(first, 1.0), high, bins)  # bins - 1 log bins after the first
        if integer:
            starts = np.unique(np.concatenate([[lo], np.round(geo[:-1])]).astype(np.int64))
            starts = starts[starts <= hi]
            return ColumnBins(np.concatenate([starts, [hi + 1]]).astype(np.float64), True, "zero+log")
        return ColumnBins(np.concatenate([[low], geo]), False, "zero+log")
    if integer:
        starts = np.unique(np.floor(lo + (hi - lo + 1) * np.arange(bins) / bins).astype(np.int64))
        return ColumnBins(np.concatenate([starts, [hi + 1]]).astype(np.float64), True, "linear")
    return ColumnBins(np.linspace(low, high, bins + 1), False, "linear")


class CellLayout:
    """The cells of every column of ``spec`` (features in order, then the label).

    ``sizes[j]`` is the number of cells of column j; ``hidden[j]`` the cells that are measured
    but never sampled (a categorical column's "unknown" cell), a structural zero of the model;
    ``missing_cell[j]`` the sampleable "missing" cell of a column that may be missing (None for
    the others).  Everything here is a function of the public spec and the options only."""

    def __init__(self, spec: TableSpec, bins: int = 16, binning: str = "auto", max_values: int = 32) -> None:
        self.spec = spec
        self.enc = Encoder(spec)
        self.col_bins = [column_bins(c, bins, binning, max_values) for c in spec.numeric]
        cols = spec.all_columns
        self.names: list[str] = [c.name for c in cols]
        sizes: list[int] = []
        hidden: list[tuple[int, ...]] = []
        missing_cell: list[int | None] = []
        j_num = 0
        for c in cols:
            base = self.col_bins[j_num].size if c.kind == "numeric" else len(c.categories)
            missing_cell.append(base if c.missing else None)
            base += int(c.missing)
            if c.kind == "numeric":
                sizes.append(base)
                hidden.append(())
                j_num += 1
            else:
                sizes.append(base + 1)
                hidden.append((base,))
        self.sizes: IntArray = np.array(sizes, dtype=np.int64)
        self.hidden = hidden
        self.missing_cell = missing_cell

    @property
    def d(self) -> int:
        return len(self.sizes)

    def one_way_tv_forecast(self, mu: float, n: int, n_out: int, *, iid: bool = True) -> tuple[float, float]:
        """(forecast, its sampling part) of the mean over columns of the total variation between
        a synthetic table's 1-way marginals and the real ones, on these cells, when each 1-way
        count vector of the ``n`` records is released with mu-GDP Gaussian noise and ``n_out``
        rows are sampled.  Per column with m sampleable cells: the noise's expected L1,
        m sigma sqrt(2/pi) (sigma as :func:`~.privacy.release_scale` draws it), over 2n, plus the
        sampling's, at most sqrt((m - 1) / (2 pi n_out)) (Cauchy-Schwarz on
        sum_v sqrt(p_v (1 - p_v) / n_out) sqrt(2/pi) / 2), capped at 1.  An estimate, not a
        bound: the fit's projection of the noisy counts onto the simplex and its use of the
        other marginals usually make the real figure smaller.  ``iid=False`` (a synthesizer that
        samples systematically, each group of rows matching its distribution up to rounding): no
        sampling term."""
        from .privacy import release_scale

        n, n_out = max(int(n), 1), max(int(n_out), 1)
        total = sampling = 0.0
        for j, size in enumerate(self.sizes):
            m = int(size) - len(self.hidden[j])
            sigma = release_scale(math.sqrt(2.0), mu, int(size))[2] if math.isfinite(mu) else 0.0
            samp = math.sqrt(max(m - 1, 0) / (2.0 * math.pi * n_out)) if iid else 0.0
            total += min(1.0, m * sigma * math.sqrt(2.0 / math.pi) / (2.0 * n) + samp)
            sampling += min(1.0, samp)
        d = max(self.d, 1)
        return total / d, sampling / d

    def one_way_tv(self, real: pd.DataFrame, synthetic: pd.DataFrame) -> float:
        """The mean over columns of the total variation between the 1-way marginals of ``real``
        and ``synthetic`` on these cells (what :meth:`one_way_tv_forecast` forecasts)."""
        a, b = self.codes(real), self.codes(synthetic)
        tvs = []
        for j, size in enumerate(self.sizes):
            pa = np.bincount(a[:, j], minlength=int(size)) / max(len(a), 1)
            pb = np.bincount(b[:, j], minlength=int(size)) / max(len(b), 1)
            tvs.append(0.5 * float(np.abs(pa - pb).sum()))
        return float(np.mean(tvs)) if tvs else 0.0

    def is_numeric(self, j: int) -> bool:
        return j < len(self.spec.columns) and self.spec.columns[j].kind == "numeric"

    def codes(self, frame: pd.DataFrame) -> IntArray:
        """(n, d) integer cell codes of ``frame`` (label last)."""
        cols: list[IntArray] = []
        v = self.enc.numeric_matrix(frame)  # (n, 0) without numeric columns
        v_missing = self.enc.numeric_missing(frame)
        cat_codes = self.enc.category_codes(frame)  # len(categories) = missing, -1 = unknown
        j_num = j_cat = 0
        for j, c in enumerate(self.spec.columns):
            if c.kind == "numeric":
                code = self.col_bins[j_num].codes(v[:, j_num])
                cell = self.missing_cell[j]
                cols.append(code if cell is None else np.where(v_missing[:, j_num], cell, code))
                j_num += 1
            else:
                code = cat_codes[:, j_cat]
                cols.append(np.where(code < 0, self.hidden[j][0], code))
                j_cat += 1
        if self.spec.label is not None:
            code = self.enc.label_codes(frame)
            cols.append(np.where(code < 0, self.hidden[-1][0], code))
        if not cols:
            return np.zeros((len(frame), 0), dtype=np.int64)
        return np.column_stack(cols).astype(np.int64)

    def decode(self, codes: IntArray, gen: np.random.Generator) -> pd.DataFrame:
        """Rows in the original schema from sampled cell codes (never a hidden cell)."""
        out: dict[str, Any] = {}  # arrays, or pandas Int64 arrays (integers that may be empty)
        j_num = 0
        for j, c in enumerate(self.spec.columns):
            if c.kind == "numeric":
                cell = self.missing_cell[j]
                miss = codes[:, j] == cell if cell is not None else np.zeros(len(codes), dtype=bool)
                v = self.col_bins[j_num].decode(np.where(miss, 0, codes[:, j]), gen.random(len(codes)), c.integer)
                out[c.name] = numbers_with_missing(np.asarray(v), miss, c.integer) if c.missing else v
                j_num += 1
            else:
                out[c.name] = categories_of(c, codes[:, j])
        if self.spec.label is not None:
            out[self.spec.label.name] = categories_of(self.spec.label, codes[:, -1])
        return pd.DataFrame(out)


def draw(prob_rows: FloatArray, gen: np.random.Generator) -> IntArray:
    """One index per row of ``prob_rows`` (non-negative weights, not necessarily normalised)."""
    return draw_rows(prob_rows, np.arange(len(prob_rows)), gen)


_DRAW_CHUNK_CELLS = 1 << 22  # cells of the cumulative table compared at once (32 MB of float64)


def draw_rows(table: FloatArray, rows: IntArray, gen: np.random.Generator) -> IntArray:
    """One index per entry of ``rows``, drawn with weights ``table[rows[i]]`` (non-negative,
    not necessarily normalised): one uniform per entry (``gen.random(len(rows))``), the first
    index whose cumulative weight reaches ``u`` x the row total.  Rows are compared in chunks,
    so the memory is O(len(rows)) plus a fixed chunk, never len(rows) x the table's width."""
    cs_table = np.cumsum(np.asarray(table, dtype=np.float64), axis=1)
    m = cs_table.shape[1]
    n = len(rows)
    u = gen.random(n) * cs_table[rows, -1]
    codes: IntArray = np.empty(n, dtype=np.int64)
    step = max(1, _DRAW_CHUNK_CELLS // max(m, 1))
    for a in range(0, n, step):
        cs = cs_table[rows[a : a + step]]
        codes[a : a + step] = np.minimum((cs < u[a : a + step, None]).sum(axis=1), m - 1)
    return codes


def expand(codes: IntArray, decompress: list[FloatArray | None], gen: np.random.Generator) -> IntArray:
    """Compressed cell codes back to the layout's cells: a merged "other" cell becomes one of its
    cells with the probabilities in ``decompress[j]`` (post-processing of noisy counts)."""
    full = np.empty_like(codes)
    for j in range(codes.shape[1]):
        dm = decompress[j]
        full[:, j] = codes[:, j] if dm is None else draw_rows(dm, codes[:, j], gen)
    return full


def noisy_fidelity(layout: CellLayout, noisy_one_way: list[FloatArray], synthetic: pd.DataFrame) -> dict[str, float]:
    """Per column, the total variation between ``synthetic``'s one-way distribution and a
    marginal synthesizer's own noisy one-way release (clipped at zero, normalised, hidden cells
    left out).  Both sides are DP outputs, so the figure is a post-processing and may be
    published."""
    codes = layout.codes(synthetic)
    out: dict[str, float] = {}
    for j, name in enumerate(layout.names):
        m = int(layout.sizes[j])
        keep = np.ones(m, dtype=bool)
        keep[list(layout.hidden[j])] = False
        p_noisy = np.clip(np.asarray(noisy_one_way[j], dtype=np.float64)[keep], 0.0, None)
        p_syn = np.bincount(codes[:, j], minlength=m)[keep].astype(np.float64)
        if p_noisy.sum() <= 0 or p_syn.sum() <= 0:
            continue
        out[name] = float(0.5 * np.abs(p_syn / p_syn.sum() - p_noisy / p_noisy.sum()).sum())
    return out


def merged_weights(noisy: FloatArray, sigma: float, members: npt.NDArray[np.bool_]) -> FloatArray:
    """How a merged "other" cell is spread over its ``members`` when sampled: the members' noisy
    1-way counts shrunk toward their mean (positive-part James-Stein, James & Stein 1961), clipped
    at zero and normalised; zero outside ``members``.  Post-processing of the released counts.

    Why not the clipped noisy counts themselves: a cell is merged because its noisy count is
    below a few sigma, i.e. mostly noise.  Spreading by those counts turns the noise into the
    synthetic shares (on a near-uniform 1,000-value zip code at sigma 2x the counts, 1-way TV
    0.37); the shrunk counts keep what signal the group's spread shows above the noise variance
    (sigma^2 per cell) and fall back to the group mean when there is none.  With fewer than four
    members the shrinkage is not defined (James-Stein needs k >= 3 around an estimated mean), so
    the clipped counts are used as before.  ``sigma`` = 0 (exact counts) gives the counts."""
    y = np.asarray(noisy, dtype=np.float64)
    idx = np.flatnonzero(members)
    w = np.zeros(y.shape[0], dtype=np.float64)
    if idx.size == 0:
        return w
    g = y[idx]
    k = g.size
    if k >= 4 and sigma > 0:
        centred = g - g.mean()
        spread = float(centred @ centred)
        factor = max(0.0, 1.0 - (k - 3) * sigma * sigma / spread) if spread > 0 else 0.0
        g = g.mean() + factor * centred
    g = np.clip(g, 0.0, None)
    w[idx] = g / g.sum() if g.sum() > 0 else 1.0 / k
    return w
