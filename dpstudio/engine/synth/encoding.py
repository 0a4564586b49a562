"""Schema (public domains) and vectorised encoding of tables for the synthesizers.

Every domain comes from the :class:`TableSpec` - public knowledge typed by the user - never
from the private data:

* numeric column: PUBLIC bounds ``[low, high]``; values are clipped to them and scaled to
  ``[-1, 1]``; a missing value (NaN) is encoded as the midpoint (0), a data-independent rule.
* categorical column: PUBLIC category list; a value is one-hot encoded by its position.
  A value that is not in the list (or missing) is encoded as an **all-zero block** ("unknown"):
  it never raises (an exception would reveal that such a record exists) and it keeps the
  record inside the norm bound used by the sensitivity proofs.  Synthesizers never *produce*
  unknown values; MST measures them in a hidden extra cell that it drops when sampling.
* label column (optional): categorical; unknown labels get code -1 (zero one-hot).

Encoded record norm bound: ``||x||^2 <= n_numeric + n_categorical`` (each numeric coordinate
in [-1, 1], each block a one-hot or zero), and the diameter of the encoded domain is
``sqrt(4 n_numeric + 2 n_categorical)``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    kind: str  # "numeric" or "categorical"
    low: float | None = None
    high: float | None = None
    categories: tuple[Hashable, ...] = ()
    integer: bool = False  # round decoded numbers (post-processing)

    def __post_init__(self) -> None:
        if self.kind not in ("numeric", "categorical"):
            raise ValueError(f"column {self.name!r}: kind must be numeric or categorical")
        if self.kind == "numeric":
            if self.low is None or self.high is None or not (self.high > self.low):
                raise ValueError(f"column {self.name!r}: numeric needs public low < high")
        elif len(self.categories) < 1:
            raise ValueError(f"column {self.name!r}: categorical needs a public category list")

    @staticmethod
    def numeric(name: str, low: float, high: float, integer: bool = False) -> ColumnSpec:
        return ColumnSpec(name, "numeric", float(low), float(high), (), bool(integer))

    @staticmethod
    def categorical(name: str, categories: Iterable[Hashable]) -> ColumnSpec:
        return ColumnSpec(name, "categorical", categories=tuple(categories))


@dataclass(frozen=True)
class TableSpec:
    columns: tuple[ColumnSpec, ...]  # the features (label excluded)
    label: ColumnSpec | None = None

    @property
    def numeric(self) -> list[ColumnSpec]:
        return [c for c in self.columns if c.kind == "numeric"]

    @property
    def categorical(self) -> list[ColumnSpec]:
        return [c for c in self.columns if c.kind == "categorical"]

    @property
    def all_columns(self) -> list[ColumnSpec]:
        return list(self.columns) + ([self.label] if self.label is not None else [])

    @property
    def n_classes(self) -> int:
        return len(self.label.categories) if self.label is not None else 1


def _codes(series: pd.Series, categories: Sequence[Hashable]) -> IntArray:
    """Integer positions in the public list; -1 for unknown/missing (vectorised)."""
    cats = pd.Index(list(categories))
    s = series
    codes = cats.get_indexer(pd.Index(s))
    if (codes < 0).any():
        # tolerate dtype mismatch, e.g. codes typed as strings vs ints in the data
        alt = pd.Index([str(c) for c in categories]).get_indexer(pd.Index(s.astype(str)))
        codes = np.where(codes < 0, alt, codes)
    return np.asarray(codes, dtype=np.int64)


class Encoder:
    """Numbers -> [-1, 1] with public bounds, categories -> one-hot blocks."""

    def __init__(self, spec: TableSpec):
        self.spec = spec
        self.num = spec.numeric
        self.cat = spec.categorical
        self.n_num = len(self.num)
        self.sizes = np.array([len(c.categories) for c in self.cat], dtype=np.int64)
        self.starts = self.n_num + np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.dim = self.n_num + int(self.sizes.sum())
        self.low = np.array([c.low for c in self.num], dtype=np.float64)
        self.high = np.array([c.high for c in self.num], dtype=np.float64)
        # column -> block index for the categorical part (segment tricks)
        self.block_of = np.repeat(np.arange(len(self.cat)), self.sizes)

    @property
    def norm_bound(self) -> float:
        return math.sqrt(self.n_num + len(self.cat))

    @property
    def diameter(self) -> float:
        return math.sqrt(4.0 * self.n_num + 2.0 * len(self.cat))

    # -- raw table -> codes
    def numeric_matrix(self, frame: pd.DataFrame) -> FloatArray:
        """Clipped numeric values in original units (n, n_num), NaN -> midpoint."""
        if not self.n_num:
            return np.zeros((len(frame), 0))
        v: FloatArray = np.column_stack(
            [pd.to_numeric(frame[c.name], errors="coerce").to_numpy(dtype=np.float64) for c in self.num]
        )
        mid = 0.5 * (self.low + self.high)
        v = np.where(np.isnan(v), mid, v)
        return np.clip(v, self.low, self.high)

    def category_codes(self, frame: pd.DataFrame) -> IntArray:
        if not self.cat:
            return np.zeros((len(frame), 0), dtype=np.int64)
        return np.column_stack([_codes(frame[c.name], c.categories) for c in self.cat])

    def label_codes(self, frame: pd.DataFrame) -> IntArray:
        if self.spec.label is None:
            return np.zeros(len(frame), dtype=np.int64)
        return _codes(frame[self.spec.label.name], self.spec.label.categories)

    def scale(self, v: FloatArray) -> FloatArray:
        return 2.0 * (v - self.low) / (self.high - self.low) - 1.0

    def unscale(self, s: FloatArray) -> FloatArray:
        return self.low + (np.clip(s, -1.0, 1.0) + 1.0) * 0.5 * (self.high - self.low)

    def encode(self, frame: pd.DataFrame, dtype: type[np.floating[Any]] = np.float32) -> npt.NDArray[np.floating[Any]]:
        n = len(frame)
        x = np.zeros((n, self.dim), dtype=dtype)
        x[:, : self.n_num] = self.scale(self.numeric_matrix(frame))
        codes = self.category_codes(frame)
        if codes.size:
            ok = codes >= 0
            rows = np.broadcast_to(np.arange(n)[:, None], codes.shape)
            cols = self.starts[None, :] + np.where(ok, codes, 0)
            x[rows[ok], cols[ok]] = 1.0
        return x

    # -- decoding of generator output
    def decode(
        self,
        x: npt.NDArray[np.floating[Any]],
        labels: IntArray | None,
        *,
        gen: np.random.Generator | None = None,
        sample_categories: bool = False,
        stretch: float = 0.0,
    ) -> pd.DataFrame:
        """Encoded (soft) rows -> DataFrame in the original schema (hard categories).

        ``sample_categories``: draw each category from the block's probabilities (gen needed)
        instead of taking the argmax.  ``stretch``: numbers are decoded from
        ``clip((1 + stretch) s, -1, 1)``, so a tanh output (which never reaches +-1) can land
        exactly on a public bound, e.g. the spike at 0 of a capital-gain column."""
        out: dict[str, npt.NDArray[Any]] = {}
        nums = np.asarray(x[:, : self.n_num], dtype=np.float64)
        if stretch:
            nums = nums * (1.0 + stretch)
        nums = self.unscale(nums)
        for j, c in enumerate(self.num):
            v = nums[:, j]
            out[c.name] = np.rint(v) if c.integer else v
        if self.cat:
            codes = self.hard_codes(x, gen=gen, sample=sample_categories)
            for b, c in enumerate(self.cat):
                out[c.name] = np.asarray(c.categories, dtype=object)[codes[:, b]]
        frame = pd.DataFrame(out)
        frame = self._restore_dtypes(frame)
        if self.spec.label is not None and labels is not None:
            frame[self.spec.label.name] = _typed(np.asarray(self.spec.label.categories, dtype=object)[labels])
        return frame[[c.name for c in self.spec.all_columns if c.name in frame.columns]]

    def _restore_dtypes(self, frame: pd.DataFrame) -> pd.DataFrame:
        for c in self.cat:
            frame[c.name] = _typed(frame[c.name].to_numpy())
        for c in self.num:
            if c.integer:
                frame[c.name] = frame[c.name].astype(np.int64)
        return frame

    def hard_codes(
        self, x: npt.NDArray[np.floating[Any]], *, gen: np.random.Generator | None = None, sample: bool = False
    ) -> IntArray:
        """Per-block argmax (or a draw) of the categorical part, vectorised over blocks."""
        p = np.asarray(x[:, self.n_num :], dtype=np.float64)
        n = p.shape[0]
        if sample:
            assert gen is not None, "drawing categories needs gen"
            p = np.maximum(p, 0)
            cs = np.cumsum(p, axis=1)
            # per-block cumulative sums: subtract the running total at block starts
            rel = self.starts - self.n_num
            base = np.concatenate([np.zeros((n, 1)), cs[:, :-1]], axis=1)[:, rel]
            cs = cs - base[:, self.block_of]
            tot = cs[:, rel + self.sizes - 1]
            u = gen.random((n, len(self.cat))) * tot
            below = cs < u[:, self.block_of]
            counts = np.add.reduceat(below, rel, axis=1)
            return np.minimum(counts, self.sizes - 1)
        rel = self.starts - self.n_num
        mx = np.maximum.reduceat(p, rel, axis=1)
        is_max = p >= mx[:, self.block_of]
        # first maximum in each block: position of first True within the block
        idx = np.arange(p.shape[1])[None, :]
        cand = np.where(is_max, idx, p.shape[1] + 1)
        first = np.minimum.reduceat(cand, rel, axis=1)
        return first - rel[None, :]


def _typed(values: npt.ArrayLike) -> npt.NDArray[np.int64] | npt.NDArray[np.float64] | npt.NDArray[np.object_]:
    """Object arrays of homogeneous ints/floats back to a numeric dtype."""
    arr = np.asarray(values, dtype=object)
    try:
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr[:1000]):
            return arr.astype(np.int64)
        if all(isinstance(v, (float, np.floating)) for v in arr[:1000]):
            return arr.astype(np.float64)
    except (TypeError, ValueError):
        pass
    return arr


def spec_from_adult() -> TableSpec:
    """Public schema of the Adult split (bounds and code ranges from the census documentation)."""
    num = [
        ColumnSpec.numeric("age", 17, 90, True),
        ColumnSpec.numeric("fnlwgt", 10000, 1500000, True),
        ColumnSpec.numeric("education-num", 1, 16, True),
        ColumnSpec.numeric("capital-gain", 0, 99999, True),
        ColumnSpec.numeric("capital-loss", 0, 4356, True),
        ColumnSpec.numeric("hours-per-week", 1, 99, True),
    ]
    cats = [
        ("education", 16),
        ("workclass", 9),
        ("marital-status", 7),
        ("occupation", 15),
        ("relationship", 6),
        ("race", 5),
        ("sex", 2),
        ("native-country", 41),
    ]
    return TableSpec(
        tuple(num + [ColumnSpec.categorical(n, range(m)) for n, m in cats]),
        ColumnSpec.categorical("income_gt_50k", (0, 1)),
    )
