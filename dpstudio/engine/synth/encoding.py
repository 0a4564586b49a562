"""Schema (public domains) and vectorised encoding of tables for the synthesizers.

Every domain comes from the :class:`TableSpec` - public knowledge typed by the user - never
from the private data:

* numeric column: PUBLIC bounds ``[low, high]``; values are clipped to them and scaled to
  ``[-1, 1]``; a missing value (NaN) is encoded as the midpoint (0), a data-independent rule.
* categorical column: PUBLIC category list; a value is one-hot encoded by its position.
  A value that is not in the list (or missing) is encoded as an **all-zero block** ("unknown"):
  it never raises (an exception would reveal that such a record exists) and it keeps the
  record inside the norm bound used by the sensitivity proofs.  Synthesizers never *produce*
  unknown values; MST and AIM count them in a hidden extra cell, which compression may merge
  with rare listed cells (whose share then carries them). A release therefore refuses values
  outside a typed list (``dpstudio.recipe.validate.category_counts``) unless the column
  has an 'other' category.
  A column with an **'other' category** (``ColumnSpec.other``: typed by the user, or the
  "(other)" of a list estimated with DP) counts every such value as that category instead: a
  fixed public rule, so the sensitivity is unchanged, and the values stay in the table as "other"
  rather than vanishing from it.
* label column (optional): categorical; unknown labels get code -1 (zero one-hot).

Columns that **may be missing** (``ColumnSpec.missing``, a public schema fact) keep their empty
cells (NaN, None, pd.NA or a blank string) as a value of their own:

* categorical (and the label): one more slot, "missing", after the public categories: the block
  stays one-hot (a value outside the list is still the all-zero block); the label gets one more
  class.
* numeric: the value coordinate is 0 when missing (the midpoint rule above) and the column gets
  an indicator block of two slots ``[present, missing]``, one-hot, placed after the categorical
  blocks; the generator's softmax samples it like a category, and "missing" decodes to NaN.

Encoded record norm bound: ``||x||^2 <= n_numeric + n_blocks`` where ``n_blocks`` counts the
categorical blocks and the indicator blocks (each numeric coordinate in [-1, 1], each block a
one-hot or zero).  The diameter of the encoded domain is still ``sqrt(4 n_numeric + 2
n_categorical)``: a numeric column with an indicator contributes at most
``max((v - v')^2, v^2 + 2, 0) <= 4`` to the squared distance of two records (both present: the
blocks agree; one missing: its value coordinate is 0 and the blocks differ in two slots; both
missing: nothing), the same 4 as a column without one; a categorical block contributes at most 2.
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
    missing: bool = False  # may be empty: missing values are a value of their own (public fact)
    #: the category that values outside the list (and empty cells of a column that is not
    #: declared to have missing values) are counted as; None: they go to the hidden "unknown" cell
    other: Hashable | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("numeric", "categorical"):
            raise ValueError(f"column {self.name!r}: kind must be numeric or categorical")
        if self.kind == "numeric":
            if self.low is None or self.high is None or not (self.high > self.low):
                raise ValueError(f"column {self.name!r}: numeric needs public low < high")
        elif len(self.categories) < 1:
            raise ValueError(f"column {self.name!r}: categorical needs a public category list")
        if self.other is not None and self.other not in self.categories:
            raise ValueError(f"column {self.name!r}: the 'other' category must be in the list")

    @staticmethod
    def numeric(name: str, low: float, high: float, integer: bool = False, missing: bool = False) -> ColumnSpec:
        return ColumnSpec(name, "numeric", float(low), float(high), (), bool(integer), bool(missing))

    @staticmethod
    def categorical(
        name: str, categories: Iterable[Hashable], missing: bool = False, other: Hashable | None = None
    ) -> ColumnSpec:
        return ColumnSpec(name, "categorical", categories=tuple(categories), missing=bool(missing), other=other)

    @property
    def n_values(self) -> int:
        """Categories a categorical column can take, its "missing" value included."""
        return len(self.categories) + int(self.missing)


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
        return self.label.n_values if self.label is not None else 1


def is_missing(series: pd.Series) -> npt.NDArray[np.bool_]:
    """Empty cells: NaN, None, pd.NA, NaT or a blank string (never a value that is merely unknown)."""
    miss = np.asarray(pd.isna(series), dtype=bool)
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        blank = series.astype("string").str.strip().eq("").fillna(False).to_numpy(dtype=bool)
        miss = miss | blank
    return miss


def category_text(series: pd.Series, categories: Sequence[Hashable]) -> pd.Series:
    """A categorical column as the text its public (string) list names, as the synthesizers read
    it (vectorised; empty cells stay empty):

    * a pandas category column: its values, not its codes (text categories stay text: "025" must
      not become "25");
    * booleans: the list's own spelling of true/false in any case ("TRUE", "True", "true"), or
      "1"/"0" for a list of codes;
    * numbers: whole numbers without ".0" (integer codes stored as floats because of empty cells)."""
    s = series
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.dtype.categories
        s = s.astype("string") if pd.api.types.is_string_dtype(cats.dtype) else s.astype(cats.dtype)
    if pd.api.types.is_bool_dtype(s.dtype):
        spelt = {str(c).lower(): str(c) for c in categories}
        if "true" in spelt or "false" in spelt:
            b = s.to_numpy(dtype=bool, na_value=False)
            text = pd.Series(np.where(b, spelt.get("true", "true"), spelt.get("false", "false")), index=s.index)
            return text.astype("string").where(~pd.isna(s).to_numpy(), pd.NA)
    if not pd.api.types.is_string_dtype(s.dtype):
        f = pd.to_numeric(s, errors="coerce")
        integral = f.notna() & (f == f.round())
        s = s.astype("string").where(~integral, f.round().astype("Int64").astype("string"))
    return s


def _codes(
    series: pd.Series, categories: Sequence[Hashable], missing: bool = False, other: Hashable | None = None
) -> IntArray:
    """Integer positions in the public list; -1 for unknown/missing (vectorised).  With
    ``missing``, an empty cell gets its own code ``len(categories)``; with ``other`` (a category
    of the list), every value that would be -1 gets that category's code instead."""
    cats = pd.Index(list(categories))
    s = category_text(series, categories)  # booleans, float-stored codes: as the list names them
    codes = cats.get_indexer(pd.Index(s))
    if (codes < 0).any():
        # tolerate dtype mismatch, e.g. codes typed as strings vs ints in the data
        alt = pd.Index([str(c) for c in categories]).get_indexer(pd.Index(s.astype(str)))
        codes = np.where(codes < 0, alt, codes)
    codes = np.asarray(codes, dtype=np.int64)
    if missing:
        codes = np.where(is_missing(series), len(categories), codes)
    if other is not None:
        codes = np.where(codes < 0, list(categories).index(other), codes)
    return codes


class Encoder:
    """Numbers -> [-1, 1] with public bounds, categories -> one-hot blocks."""

    def __init__(self, spec: TableSpec):
        self.spec = spec
        self.num = spec.numeric
        self.cat = spec.categorical
        self.n_num = len(self.num)
        # numeric columns that may be missing: an indicator block [present, missing] each, after
        # the categorical blocks (block len(cat) + k belongs to numeric column num_missing[k])
        self.num_missing = [j for j, c in enumerate(self.num) if c.missing]
        self.sizes = np.array([c.n_values for c in self.cat] + [2] * len(self.num_missing), dtype=np.int64)
        self.starts = self.n_num + np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.dim = self.n_num + int(self.sizes.sum())
        self.low = np.array([c.low for c in self.num], dtype=np.float64)
        self.high = np.array([c.high for c in self.num], dtype=np.float64)
        # column -> block index for the categorical part (segment tricks)
        self.block_of = np.repeat(np.arange(len(self.sizes)), self.sizes)

    @property
    def norm_bound(self) -> float:
        """Largest norm of an encoded record: each numeric coordinate in [-1, 1], each block
        (categorical or missing indicator) one-hot or zero."""
        return math.sqrt(self.n_num + len(self.sizes))

    @property
    def diameter(self) -> float:
        """Largest distance of two encoded records (module docstring: an indicator block adds
        nothing to a numeric column's 4)."""
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

    def numeric_missing(self, frame: pd.DataFrame) -> npt.NDArray[np.bool_]:
        """(n, n_num) True where a column that may be missing is empty (False elsewhere)."""
        out = np.zeros((len(frame), self.n_num), dtype=bool)
        for j in self.num_missing:
            out[:, j] = is_missing(frame[self.num[j].name])
        return out

    def category_codes(self, frame: pd.DataFrame) -> IntArray:
        """Position in the public list, ``len(categories)`` for an empty cell of a column that
        may be missing, -1 for a value outside the list (and an empty cell of the others)."""
        if not self.cat:
            return np.zeros((len(frame), 0), dtype=np.int64)
        return np.column_stack([_codes(frame[c.name], c.categories, c.missing, c.other) for c in self.cat])

    def label_codes(self, frame: pd.DataFrame) -> IntArray:
        if self.spec.label is None:
            return np.zeros(len(frame), dtype=np.int64)
        lab = self.spec.label
        return _codes(frame[lab.name], lab.categories, lab.missing, lab.other)

    def scale(self, v: FloatArray) -> FloatArray:
        return 2.0 * (v - self.low) / (self.high - self.low) - 1.0

    def unscale(self, s: FloatArray) -> FloatArray:
        return self.low + (np.clip(s, -1.0, 1.0) + 1.0) * 0.5 * (self.high - self.low)

    def encode(self, frame: pd.DataFrame, dtype: type[np.floating[Any]] = np.float32) -> npt.NDArray[np.floating[Any]]:
        n = len(frame)
        x = np.zeros((n, self.dim), dtype=dtype)
        x[:, : self.n_num] = self.scale(self.numeric_matrix(frame))
        codes = self.category_codes(frame)
        if self.num_missing:
            miss = self.numeric_missing(frame)[:, self.num_missing]
            x[:, self.num_missing] = np.where(miss, 0.0, x[:, self.num_missing])
            codes = np.concatenate([codes, miss.astype(np.int64)], axis=1)  # [present, missing]
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
        out: dict[str, Any] = {}  # arrays, or pandas Int64 arrays (integers that may be empty)
        nums = np.asarray(x[:, : self.n_num], dtype=np.float64)
        if stretch:
            nums = nums * (1.0 + stretch)
        nums = self.unscale(nums)
        codes = self.hard_codes(x, gen=gen, sample=sample_categories) if len(self.sizes) else None
        for j, c in enumerate(self.num):
            v = nums[:, j]
            v = np.rint(v) if c.integer else v
            if c.missing:
                assert codes is not None
                miss = codes[:, len(self.cat) + self.num_missing.index(j)] == 1
                out[c.name] = numbers_with_missing(v, miss, c.integer)
            else:
                out[c.name] = v.astype(np.int64) if c.integer else v
        for b, c in enumerate(self.cat):
            assert codes is not None
            out[c.name] = categories_of(c, codes[:, b])
        frame = pd.DataFrame(out)
        if self.spec.label is not None and labels is not None:
            frame[self.spec.label.name] = categories_of(self.spec.label, labels)
        return frame[[c.name for c in self.spec.all_columns if c.name in frame.columns]]

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


def categories_of(col: ColumnSpec, codes: IntArray) -> npt.NDArray[Any]:
    """Decoded values of a categorical column: its public categories (numeric dtype when they
    are all numbers), and for code ``len(categories)`` of a column that may be missing, a missing
    value (NaN in a numeric result, None otherwise)."""
    cats = _typed(np.asarray(col.categories, dtype=object))
    m = len(col.categories)
    codes = np.asarray(codes, dtype=np.int64)
    miss = codes >= m
    out = cats[np.where(miss, 0, codes)]
    if col.missing and miss.any():
        if out.dtype.kind in "iuf":
            out = out.astype(np.float64)
            out[miss] = np.nan
        else:
            out = out.astype(object)
            out[miss] = None  # type: ignore[call-overload]
    return out


def numbers_with_missing(v: FloatArray, miss: npt.NDArray[np.bool_], integer: bool) -> Any:
    """Decoded numbers of a column that may be missing: NaN where ``miss``; integer columns as
    pandas' nullable Int64 (an integer column with empty cells)."""
    if integer:
        arr = pd.array(np.where(miss, 0, v).astype(np.int64), dtype="Int64")
        arr[miss] = pd.NA
        return arr
    return np.where(miss, np.nan, v)


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
