"""Infer column types and *suggest* privacy roles for a loaded table.

Why: before a user can plan a release they must say, per column, whether it is a direct
identifier (dropped), public (e.g. demographics the adversary is assumed to know), sensitive
(protected by DP), the label of a learning task, part of an embedding, or ignored.  Good
suggestions make that step a review instead of a chore; each comes with a one-line reason.

What inference deliberately does NOT do: fill domains.  Bounds and category lists computed from
private data leak it (diffprivlib's ``PrivacyLeakWarning``); the user supplies them later.  We
count missing and distinct values only (exactly: the GUI shows them and the identifier rule
depends on ``distinct == rows``); min/max or category lists are never stored or returned.

Speed: per column, work is vectorised; exact distinct counts use a sort (numpy's SIMD sort) for
high-cardinality numbers, arrow hashing for low-cardinality ones, and a packed-bytes sort for
fixed-width string codes.  Type decisions that need not be exact (ISO-date strings, vector
cells) look at a small sample.

Type rules (documented choices):

* boolean -- bool dtype, or at most two distinct values that are {0,1}, {true,false},
  {yes,no}, {y,n} or {t,f} (case-insensitive).
* integer -- integer dtype; also a float column whose non-missing values are all integral
  *and* that has missing values (the NaN is what forced pandas to store it as float).  A float
  column with no missing values stays float even if every value is integral: somebody wrote
  ``1.0``, and we do not second-guess it -- unless the file format has no integer type (SAS
  stores every number as a double; the loader marks such frames with
  ``frame.attrs[NUMBERS_ARE_DOUBLES]``), where integral values are integers.
* float -- other float columns.
* datetime -- datetime dtype, or strings whose sample all parse as ISO-8601 dates.
* vector -- cells holding numeric lists/arrays (object column or pyarrow list type).
* categorical -- category dtype, or strings with at most ``max(50, 5% of rows)`` distinct
  values, or digit codes with leading zeros ("02134"; at most 65,536 of them; the loader reads
  such CSV columns as text so the zeros survive); otherwise text.  (Timedeltas, rare in
  practice, are reported as float.)

Role rules, first match wins:

1. ignore -- every value missing.
2. embedding -- a vector column, or one of >= 8 numeric columns sharing a prefix with a numeric
   suffix (``emb_0..emb_255``, ``x1..x16``); ``embedding_groups`` lists each group.
3. identifier -- name tokens that are direct identifiers whatever their cardinality (``ssn``,
   ``email``/``e-mail``, ``phone``, ``name``, ``first_name``, ``surname``, ``address``,
   ``street``, ``uuid``...); ``id``/``*_id``/``ID`` when at least half the values are distinct
   (a 5-valued ``region_id`` is a code); or any integer/string column unique per row with
   >= 20 rows (floats are excluded: continuous measurements are unique without identifying).
   Names are split into tokens, so ``fnlwgt``, ``educ`` or ``paid`` never match.
4. ignore -- constant columns.
5. label -- at most one per table: 2..10 distinct values and a name like label/target/y/
   class/outcome/response/diagnosis/income or ``*_gt_*``; the best name wins (``Outcome`` over
   ``Diagnosis``), binary breaks ties.  A continuous ``income`` (PUMS) is *not* a label: it is
   the sensitive quantity a release protects; only a thresholded one (``income_gt_50k``) is.
6. public -- quasi-identifying demographics assumed known to an adversary (sex, gender, age,
   race, ethnicity, zip/postcode, state, county, puma, fips, country, marital).  ``zip`` is a
   quasi-identifier, not a direct identifier.
7. sensitive -- everything else.
"""

from __future__ import annotations

import itertools
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["ColumnSchema", "TableSchema", "infer_schema", "TYPES", "ROLES"]

TYPES = ("integer", "float", "boolean", "categorical", "datetime", "text", "vector")
ROLES = ("identifier", "public", "sensitive", "label", "embedding", "ignore")


@dataclass(frozen=True)
class ColumnSchema:
    name: str
    type: str  # one of TYPES
    missing: int
    distinct: int  # exact count of distinct non-missing values
    suggested_role: str  # one of ROLES
    embedding_group: str | None = None
    reason: str = ""  # one line: why this role was suggested


@dataclass(frozen=True)
class TableSchema:
    rows: int
    columns: tuple[ColumnSchema, ...]
    embedding_groups: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A plain dict (lists, str, int, None) ready for ``json.dumps``."""
        return {
            "rows": self.rows,
            "columns": [asdict(c) for c in self.columns],
            "embedding_groups": {k: list(v) for k, v in self.embedding_groups.items()},
        }

    def column(self, name: str) -> ColumnSchema:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"no column named {name!r}")


# --------------------------------------------------------------------------- name rules
#: direct identifiers whatever their cardinality (a repeated name is still a name)
_STRONG_ID_TOKENS = {
    "ssn",
    "email",
    "phone",
    "telephone",
    "mobile",
    "name",
    "surname",
    "firstname",
    "lastname",
    "address",
    "street",
    "uuid",
    "guid",
    "passport",
}
#: "id"-style keys: an identifier only when (nearly) unique; a 12-valued ``region_id`` is a code
_KEY_TOKENS = {"id", "uuid", "guid"}
#: quasi-identifying demographics, assumed known to an adversary -> public
_PUBLIC_TOKENS = {
    "sex",
    "gender",
    "age",
    "race",
    "ethnicity",
    "zip",
    "zipcode",
    "postcode",
    "postal",
    "state",
    "county",
    "puma",
    "fips",
    "country",
    "marital",
}
#: label-like names, with a priority (higher wins when several columns qualify)
_LABEL_TOKENS = {
    "label": 5,
    "target": 5,
    "y": 5,
    "class": 4,
    "outcome": 4,
    "response": 3,
    "diagnosis": 2,
    "income": 1,
}
_LABEL_MAX_DISTINCT = 10
_EMBED_MIN = 8
_SUFFIX = re.compile(r"^(.*?\D)(\d+)$", re.S)
_BOOL_SETS = [{"0", "1"}, {"true", "false"}, {"yes", "no"}, {"y", "n"}, {"t", "f"}]
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$")
_SAMPLE = 4096


def _tokens(name: str) -> list[str]:
    """``PatientID`` -> [patient, id]; ``first_name`` -> [first, name]; ``e-mail`` -> [e, mail]."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", s)
    return [t for t in re.split(r"[^A-Za-z0-9]+", s.lower()) if t]


def _joined_tokens(tokens: list[str]) -> set[str]:
    """Adjacent pairs joined too, so ``e-mail``/``first_name``/``zip code`` match one word."""
    return set(tokens) | {a + b for a, b in itertools.pairwise(tokens)}


# --------------------------------------------------------------------------- distinct counts
def _count_sorted_unique(v: np.ndarray, *, inplace: bool = False) -> int:
    """Distinct values by sorting; ``inplace`` sorts ``v`` itself (a scratch array) instead of
    a fresh 8-bytes-per-row copy."""
    if v.size == 0:
        return 0
    if inplace:
        v.sort()
        s = v
    else:
        s = np.sort(v)
    return 1 + int(np.count_nonzero(s[1:] != s[:-1]))


def _numeric_distinct(v: np.ndarray) -> int:
    """Exact distinct count of a NaN-free numeric array.

    A strided sample decides the algorithm: few values -> arrow hashing (a few ms per million
    rows); many values -> numpy's SIMD sort (far faster than hashing a million keys).
    """
    n = v.size
    if n == 0:
        return 0
    sample = v[:: max(1, n // _SAMPLE)]
    seen = np.unique(sample)
    if seen.size <= 4:
        # binary / few-valued columns: if every value is one already seen in the sample, the
        # count is exactly the sample's (a few vectorised comparisons, no hashing)
        covered = v == seen[0]
        for x in seen[1:]:  # at most 3 more comparisons
            covered |= v == x
        if covered.all():
            return int(seen.size)
    if seen.size <= 256:
        if v.dtype.kind == "f":
            v = v + 0.0  # hashing tells -0.0 from 0.0; the sort path compares them equal
        return int(pc.count_distinct(pa.array(v)).as_py())
    if v.dtype.kind in "iu":
        # integers spanning at most ~one value per row: a bincount (two linear passes and a
        # histogram) is up to twice as fast as the sort (measured on 1M rows), and as exact
        lo, hi = int(v.min()), int(v.max())
        limit = max(n, 1 << 16)
        if hi - lo < limit:
            if lo >= 0 and hi < limit and v.dtype != np.uint64:
                shifted = v  # already small non-negative: no shifted copy needed
            elif v.dtype == np.uint64:  # may exceed intp: subtract in its own type first
                shifted = (v - np.uint64(lo)).astype(np.intp)
            else:  # widen first so the subtraction cannot wrap (e.g. int8 - (-128))
                shifted = v.astype(np.intp, copy=False) - lo
            return int(np.count_nonzero(np.bincount(shifted)))
    return _count_sorted_unique(v)


def _string_distinct(arr: pa.ChunkedArray | pa.Array, n_valid: int) -> int:
    """Exact distinct count of a string arrow array (nulls excluded)."""
    if n_valid == 0:
        return 0
    if isinstance(arr, pa.ChunkedArray):
        sample = arr.slice(0, min(len(arr), _SAMPLE))
        sample = pa.concat_arrays(sample.chunks) if sample.num_chunks else pa.array([], arr.type)
    else:
        sample = arr.slice(0, _SAMPLE)
    sample_distinct = pc.count_distinct(sample).as_py()
    if sample_distinct > 0.5 * max(1, len(sample) - sample.null_count):
        packed = _fixed_width_distinct(arr, n_valid)
        if packed is not None:
            return packed
    return int(pc.count_distinct(arr).as_py())


def _fixed_width_distinct(arr: pa.ChunkedArray | pa.Array, n_valid: int) -> int | None:
    """Equal-length strings (ID codes, hashes) as fixed-width bytes, counted by sorting.

    Strings of <= 8 bytes pack exactly into one uint64.  Longer ones are mixed into a 64-bit
    hash of (possibly overlapping) 8-byte words read in place: collisions can only *merge*
    values, so if the hashed count equals the number of valid cells the strings are provably
    all distinct -- otherwise return None and let the caller count exactly.  Works chunk by
    chunk into one preallocated key array, so the column's strings are never copied whole.
    """
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    keys = np.empty(n_valid, dtype=np.uint64)
    width = None
    pos = 0
    for chunk in chunks:  # a loop over arrow chunks (blocks of rows), not over rows
        if chunk.null_count:
            chunk = chunk.drop_null()
        n = len(chunk)
        if n == 0:
            continue
        if not pa.types.is_large_string(chunk.type):
            chunk = chunk.cast(pa.large_string())
        bufs = chunk.buffers()
        offsets = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1, offset=chunk.offset * 8)
        start = int(offsets[0])
        w = int(offsets[1] - start)
        if width is None:
            width = w
        if w != width or w == 0 or w > 256 or int(offsets[-1]) - start != w * n:
            return None
        if not (np.diff(offsets) == w).all():  # every string, not just the total
            return None
        _pack_fixed(bufs[2], start, n, w, keys[pos : pos + n])
        pos += n
    if pos != n_valid:
        return None
    d = _count_sorted_unique(keys, inplace=True)
    if width is not None and width <= 8:
        return d  # exact packing
    return d if d == n_valid else None


def _pack_fixed(data: pa.Buffer, start: int, n: int, width: int, out: npt.NDArray[np.uint64]) -> None:
    """Write into ``out`` one uint64 key per fixed-width string (exact if width <= 8)."""

    def word(at: int, size: int = 8) -> npt.NDArray[np.uint64]:
        # bytes [at, at+size) of every string as a uint64, copied out of the strided buffer
        if size == 8:  # arithmetic on the unaligned strided view itself is 3x slower
            return np.ndarray((n,), np.uint64, buffer=data, offset=start + at, strides=(width,)).copy()
        raw = np.ndarray((n, size), np.uint8, buffer=data, offset=start + at, strides=(width, 1))
        padded = np.zeros((n, 8), np.uint8)
        padded[:, :size] = raw
        return padded.view(np.uint64).ravel()

    if width <= 8:
        out[:] = word(0, width)
        return
    starts = list(range(0, width - 7, 8))
    if starts[-1] != width - 8:
        starts.append(width - 8)  # overlapping last word: stays inside the string
    out.fill(0x9E3779B97F4A7C15)
    tmp = np.empty_like(out)
    mult, shift = np.uint64(0xBF58476D1CE4E5B9), np.uint64(31)
    with np.errstate(over="ignore"):
        for at in starts:  # loop over 8-byte words of the code, not over rows
            out ^= word(at)
            out *= mult
            np.right_shift(out, shift, out=tmp)
            out ^= tmp


def _vector_stats(col: pd.Series) -> tuple[int, bool]:
    """(exact distinct, is_numeric_vector) for a column whose cells are lists/arrays.

    Equal-length vectors become one (n, d) matrix (a C-level conversion) and are counted with
    a row-wise unique; ragged vectors, rare in practice, fall back to hashing each cell.
    """
    dtype = col.dtype
    if isinstance(dtype, pd.ArrowDtype):
        arr = col.array.__arrow_array__().combine_chunks()
        if arr.null_count:
            arr = arr.drop_null()
        if len(arr) == 0:
            return 0, True
        lengths = pc.list_value_length(arr)
        flat = pc.list_flatten(arr)
        if pc.all(pc.equal(lengths, lengths[0])).as_py() and flat.null_count == 0:
            width = lengths[0].as_py()
            mat = flat.to_numpy(zero_copy_only=False).reshape(len(arr), width)
            return int(np.unique(mat, axis=0).shape[0]) if width else 1, True
        col = pd.Series(arr.to_pylist(), dtype=object)
    valid = col[col.notna()]
    if len(valid) == 0:
        return 0, False
    cells = list(valid.array)
    try:
        mat = np.array(cells, dtype=float)
        if mat.ndim == 2:
            return int(np.unique(mat, axis=0).shape[0]), True
    except (TypeError, ValueError):
        pass
    try:  # ragged vectors
        return len({np.asarray(c, dtype=float).tobytes() for c in cells}), True
    except (TypeError, ValueError):
        return int(pd.Series([repr(c) for c in cells]).nunique()), False


# --------------------------------------------------------------------------- per-column facts
@dataclass
class _Facts:
    name: str
    type: str
    missing: int
    distinct: int
    note: str = ""


def _is_vector_cell(x: object) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim == 1 and x.dtype.kind in "biuf"
    if isinstance(x, (list, tuple)):
        head = x[:16]  # a peek at a few elements of one sampled cell, not a loop over rows
        return len(x) > 0 and all(isinstance(e, (int, float, np.number)) and not isinstance(e, bool) for e in head)
    return False


def _bool_like(values: list[Any]) -> bool:
    vals = {str(v).strip().lower() for v in values}
    return len(vals) <= 2 and any(vals <= s for s in _BOOL_SETS)


def _string_facts(name: str, col: pd.Series, rows: int) -> _Facts:
    if isinstance(col.dtype, pd.StringDtype) and col.dtype.storage == "pyarrow":
        arr = col.array.__arrow_array__()
    else:
        arr = pa.array(col.to_numpy(dtype=object), type=pa.large_string(), from_pandas=True)
    missing = int(arr.null_count)
    n_valid = rows - missing
    distinct = _string_distinct(arr, n_valid)
    if distinct <= 2 and n_valid:
        values = pc.unique(arr.drop_null() if arr.null_count else arr).to_pylist()
        if _bool_like(values):
            return _Facts(name, "boolean", missing, distinct)
    if n_valid:
        sample = arr.drop_null().slice(0, 200) if missing else arr.slice(0, 200)
        texts = pc.utf8_trim_whitespace(sample).to_pylist()
        if texts and all(_ISO_DATE.match(s) for s in texts):
            if pd.to_datetime(pd.Series(texts), format="ISO8601", errors="coerce").notna().all():
                return _Facts(name, "datetime", missing, distinct)
    limit = max(50, int(0.05 * rows))
    if distinct > limit and distinct <= _MAX_CODES and _zero_padded_codes(arr, missing):
        # zip codes, ICD/treatment codes: many values, but a code list, not free text
        return _Facts(name, "categorical", missing, distinct, "digit codes with leading zeros")
    return _Facts(name, "categorical" if distinct <= limit else "text", missing, distinct)


#: most distinct digit codes taken as categories (randomized response's limit on a category list)
_MAX_CODES = 65536


def _zero_padded_codes(arr: pa.ChunkedArray | pa.Array, missing: int) -> bool:
    """Every value a string of digits and some with a leading zero ("02134"): codes whose zeros
    matter, which the loader kept as text.  A sample decides cheaply before the full check."""
    valid = arr.drop_null() if missing else arr
    sample = valid.slice(0, _SAMPLE)
    if not pc.all(pc.match_substring_regex(sample, r"^[0-9]+$")).as_py():
        return False
    return bool(
        pc.all(pc.match_substring_regex(valid, r"^[0-9]+$")).as_py()
        and pc.any(pc.match_substring_regex(valid, r"^0[0-9]+$")).as_py()
    )


#: key of ``DataFrame.attrs`` the loader sets when the file format stores every number as a
#: double (SAS): there, integral values say nothing about how the data were written
NUMBERS_ARE_DOUBLES = "dpstudio_numbers_are_doubles"


def _column_facts(name: str, col: pd.Series, rows: int, doubles_only: bool = False) -> _Facts:
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()
        valid = codes[codes >= 0]
        missing = rows - valid.size
        distinct = int(np.count_nonzero(np.bincount(valid))) if valid.size else 0
        if distinct <= 2 and valid.size:
            used = np.flatnonzero(np.bincount(valid))
            if _bool_like(list(col.cat.categories[used])):
                return _Facts(name, "boolean", missing, distinct)
        return _Facts(name, "categorical", missing, distinct)
    if pd.api.types.is_bool_dtype(dtype):
        mask = col.isna().to_numpy()
        missing = int(np.count_nonzero(mask))
        vals = col.to_numpy(dtype=bool, na_value=False)
        if missing:
            vals = vals[~mask]
        n_true = int(np.count_nonzero(vals))
        distinct = int(n_true > 0) + int(n_true < vals.size)
        return _Facts(name, "boolean", missing, distinct)
    if isinstance(dtype, pd.ArrowDtype) and (
        pa.types.is_list(dtype.pyarrow_dtype)
        or pa.types.is_large_list(dtype.pyarrow_dtype)
        or pa.types.is_fixed_size_list(dtype.pyarrow_dtype)
    ):
        missing = int(col.isna().sum())
        distinct, _ = _vector_stats(col)
        return _Facts(name, "vector", missing, distinct)
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        ints = col.to_numpy().view("int64") if not hasattr(dtype, "tz") or dtype.tz is None else col.array.asi8
        nat = np.iinfo(np.int64).min
        valid = ints[ints != nat]
        kind = "datetime" if pd.api.types.is_datetime64_any_dtype(dtype) else "float"
        return _Facts(name, kind, rows - valid.size, _numeric_distinct(valid))
    if pd.api.types.is_integer_dtype(dtype):
        if isinstance(dtype, np.dtype):
            v, missing = col.to_numpy(), 0
        else:  # nullable Int64 / arrow ints
            missing = int(col.isna().sum())
            v = col.dropna().to_numpy(dtype=np.int64)
        distinct = _numeric_distinct(v)
        if distinct <= 2 and v.size and np.all((v == 0) | (v == 1)):
            return _Facts(name, "boolean", missing, distinct)
        return _Facts(name, "integer", missing, distinct)
    if pd.api.types.is_float_dtype(dtype):
        if isinstance(dtype, np.dtype):
            x = col.to_numpy()  # a view: no 8 MB copy per million rows
        else:  # nullable Float64 / arrow floats
            x = col.to_numpy(dtype=np.float64, na_value=np.nan)
        nan = np.isnan(x)
        missing = int(np.count_nonzero(nan))
        v = x[~nan] if missing else x
        distinct = _numeric_distinct(v)
        if distinct <= 2 and v.size and np.all((v == 0) | (v == 1)):
            return _Facts(name, "boolean", missing, distinct)
        if (missing or doubles_only) and v.size and np.all(np.isfinite(v)) and np.all(v == np.round(v)):
            why = "integral values stored as float" if missing else "integral values in a format with only doubles"
            return _Facts(name, "integer", missing, distinct, why)
        return _Facts(name, "float", missing, distinct)
    if isinstance(dtype, pd.StringDtype) or (
        pd.api.types.is_object_dtype(dtype)
        and pd.api.types.infer_dtype(col.iloc[:_SAMPLE], skipna=True) == "string"
        and pd.api.types.infer_dtype(col, skipna=True) == "string"
    ):
        return _string_facts(name, col, rows)
    if pd.api.types.is_object_dtype(dtype):
        missing = int(col.isna().sum())
        head = col.dropna().iloc[:64]
        if len(head) and all(_is_vector_cell(x) for x in head):
            distinct, numeric = _vector_stats(col)
            return _Facts(name, "vector" if numeric else "text", missing, distinct)
        try:
            distinct = int(col.nunique(dropna=True))
        except TypeError:  # unhashable cells of mixed kinds
            distinct = int(col.dropna().map(repr).nunique())
        limit = max(50, int(0.05 * rows))
        return _Facts(name, "categorical" if distinct <= limit else "text", missing, distinct)
    # anything else (complex, period, interval, other arrow types): count via pandas
    missing = int(col.isna().sum())
    try:
        distinct = int(col.nunique(dropna=True))
    except TypeError:
        distinct = int(col.dropna().astype(str).nunique())
    return _Facts(name, "text", missing, distinct)


# --------------------------------------------------------------------------- roles
def _embedding_groups(facts: list[_Facts]) -> dict[str, tuple[str, ...]]:
    """>= 8 numeric columns sharing a prefix with a numeric suffix (emb_0.., x1..x16)."""
    by_prefix: dict[str, list[str]] = {}
    for f in facts:
        if f.type not in ("integer", "float", "boolean"):
            continue
        m = _SUFFIX.match(str(f.name))
        if m:
            by_prefix.setdefault(m.group(1), []).append(f.name)
    groups = {}
    for prefix, cols in by_prefix.items():
        if len(cols) >= _EMBED_MIN:
            key = prefix.rstrip("_-. ") or prefix
            groups[key] = tuple(cols)
    for f in facts:
        if f.type == "vector":
            groups[str(f.name)] = (f.name,)
    return groups


def _label_score(f: _Facts, tokens: list[str]) -> int:
    if not 2 <= f.distinct <= _LABEL_MAX_DISTINCT:
        return 0
    score = max((_LABEL_TOKENS.get(t, 0) for t in tokens), default=0)
    if "gt" in tokens[1:-1] or "lt" in tokens[1:-1]:  # income_gt_50k: a thresholded target
        score = max(score, 5)
    if score and f.distinct == 2:
        score += 1
    return score


def infer_schema(frame: pd.DataFrame) -> TableSchema:
    """Types, exact missing/distinct counts and suggested roles for every column.

    Columns are independent, so they are processed on a small thread pool: numpy sorts and
    arrow kernels release the GIL.
    """
    rows = int(len(frame))
    names = [str(c) for c in frame.columns]
    cols = [frame.iloc[:, i] for i in range(len(names))]
    doubles = bool(frame.attrs.get(NUMBERS_ARE_DOUBLES, False))
    if len(names) > 1 and rows >= 100_000:
        with ThreadPoolExecutor(max_workers=2) as pool:
            facts = list(pool.map(lambda nc: _column_facts(nc[0], nc[1], rows, doubles), zip(names, cols, strict=True)))
    else:
        facts = [_column_facts(n, c, rows, doubles) for n, c in zip(names, cols, strict=True)]

    groups = _embedding_groups(facts)
    member = {c: g for g, cs in groups.items() for c in cs}
    tokens = [_tokens(f.name) for f in facts]
    roles = [_suggest(f, rows, t, member.get(f.name)) for f, t in zip(facts, tokens, strict=True)]

    # One label per table: the best-scoring candidate among columns not already identifier,
    # embedding or ignored (ties -> the later column, where targets usually sit).
    scored = [
        (_label_score(f, t), i)
        for i, (f, t, (role, _)) in enumerate(zip(facts, tokens, roles, strict=True))
        if role in ("sensitive", "public")
    ]
    best_score, best_i = max(scored, default=(0, -1))
    if best_score > 0:
        f = facts[best_i]
        roles[best_i] = ("label", f"named like a prediction target with {f.distinct} distinct values")

    out = tuple(
        ColumnSchema(
            name=f.name,
            type=f.type,
            missing=f.missing,
            distinct=f.distinct,
            suggested_role=role,
            embedding_group=member.get(f.name),
            reason=reason,
        )
        for f, (role, reason) in zip(facts, roles, strict=True)
    )
    return TableSchema(rows=rows, columns=out, embedding_groups=groups)


def _suggest(f: _Facts, rows: int, tokens: list[str], group: str | None) -> tuple[str, str]:
    """Role and one-line reason, in priority order; the label is chosen afterwards."""
    valid = rows - f.missing
    words = _joined_tokens(tokens)
    if valid == 0:
        return "ignore", "every value is missing"
    if group is not None:
        if f.type == "vector":
            return "embedding", "cells are numeric vectors"
        return "embedding", f"one of >= {_EMBED_MIN} numeric columns named '{group}<n>'"
    strong = sorted(words & _STRONG_ID_TOKENS)
    if strong:
        return "identifier", f"name suggests a direct identifier ('{strong[0]}')"
    if words & _KEY_TOKENS and f.distinct >= 0.5 * valid:
        return "identifier", f"named like an ID and {f.distinct:,} of {valid:,} values are distinct"
    if f.distinct == rows and rows >= 20 and f.type in ("integer", "text", "categorical"):
        return "identifier", "a different value in every row: likely a direct identifier"
    if f.distinct <= 1:
        return "ignore", "constant: the same value in every non-missing row"
    public = sorted(words & _PUBLIC_TOKENS)
    if public:
        return "public", f"demographic quasi-identifier ('{public[0]}'), assumed known to an adversary"
    if words & _KEY_TOKENS:
        return "sensitive", f"named like an ID but only {f.distinct:,} distinct values: treated as a code"
    return "sensitive", "no identifying or public name: protect with differential privacy"
