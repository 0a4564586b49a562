"""Tests for dpstudio.engine.data.schema: types, exact counts, suggested roles, speed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dpstudio.engine.data import infer_schema, load_table
from dpstudio.engine.data.schema import NUMBERS_ARE_DOUBLES, ROLES, TYPES, ColumnSchema, TableSchema

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
if not DATASETS.exists():
    DATASETS = Path("/work/shared/datasets")


def schema_of(path: Path) -> TableSchema:
    return infer_schema(load_table(path).frame)


# --------------------------------------------------------------------------- shared datasets
def test_medical():
    s = schema_of(DATASETS / "medical" / "medical.csv")
    assert s.rows == 30_000
    assert s.column("ID").suggested_role == "identifier"
    assert s.column("ID").distinct == 30_000
    roles = {c.name: c.suggested_role for c in s.columns}
    # Outcome and Diagnosis are both label-like; only one label per table: Outcome wins
    assert roles["Outcome"] == "label"
    assert roles["Diagnosis"] == "sensitive"
    assert roles["Zip"] == "public"  # a quasi-identifier, not a direct identifier
    assert roles["Gender"] == roles["Age"] == "public"
    assert s.column("Gender").type == "categorical"


@pytest.mark.parametrize("name", ["train.csv", "test.csv"])
def test_adult(name):
    s = schema_of(DATASETS / "adult" / name)
    roles = {c.name: c.suggested_role for c in s.columns}
    assert roles["income_gt_50k"] == "label"
    assert s.column("income_gt_50k").type == "boolean"
    assert [r for r in roles.values()].count("label") == 1
    assert roles["fnlwgt"] == "sensitive"  # not an identifier, despite many values
    assert roles["education-num"] == "sensitive"
    assert roles["age"] == roles["sex"] == roles["race"] == "public"
    assert roles["marital-status"] == roles["native-country"] == "public"
    assert "identifier" not in roles.values()


def test_pums():
    s = schema_of(DATASETS / "pums" / "fulton_pums.csv")
    roles = {c.name: c.suggested_role for c in s.columns}
    # continuous income is a sensitive value, not a classification target
    assert roles["income"] == "sensitive"
    assert "label" not in roles.values()
    assert roles["educ"] == "sensitive"
    assert roles["puma"] == roles["sex"] == roles["age"] == "public"
    assert roles["state"] == "ignore"  # constant in this extract
    s2 = schema_of(DATASETS / "pums" / "pums_1000.csv")
    assert s2.column("income").suggested_role == "sensitive"
    assert "label" not in {c.suggested_role for c in s2.columns}


def test_binary_income_is_a_label():
    df = pd.DataFrame({"age": np.arange(100) % 50, "income": np.arange(100) % 2})
    assert infer_schema(df).column("income").suggested_role == "label"


# --------------------------------------------------------------------------- types
def test_types():
    n = 200
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "b_bool": rng.random(n) < 0.5,
            "b_01": rng.integers(0, 2, n),
            "b_yes": pd.Series(rng.choice(["Yes", "no"], n), dtype="str"),
            "b_tf": pd.Series(rng.choice(["TRUE", "false"], n), dtype="str"),
            "i": rng.integers(0, 1000, n),
            "i_nan": np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 9, n)),
            "f": rng.normal(size=n),
            "f_integral": np.arange(n, dtype=float),
            "cat": pd.Series(rng.choice(list("abcde"), n), dtype="str"),
            "txt": pd.Series([f"free text {i}" for i in range(n)], dtype="str"),
            "dt": pd.date_range("2020-01-01", periods=n, freq="h"),
            "dt_str": pd.Series(pd.date_range("2020-01-01", periods=n).strftime("%Y-%m-%d"), dtype="str"),
            "category": pd.Categorical(rng.choice(["x", "y", "z"], n)),
            "vec": pd.Series([np.arange(3, dtype=float) + i for i in range(n)], dtype=object),
            "vec_list": pd.Series([[1.0, 2.0, float(i % 7)] for i in range(n)], dtype=object),
            "obj_str": pd.Series(["u", "v"] * (n // 2), dtype=object),
        }
    )
    df["arrow_list"] = pd.Series(
        pa.array([[1, 2], [3, 4]] * (n // 2), type=pa.list_(pa.int64())), dtype=pd.ArrowDtype(pa.list_(pa.int64()))
    )
    s = infer_schema(df)
    types = {c.name: c.type for c in s.columns}
    assert types == {
        "b_bool": "boolean",
        "b_01": "boolean",
        "b_yes": "boolean",
        "b_tf": "boolean",
        "i": "integer",
        "i_nan": "integer",  # integral floats with NaN: ints forced to float by missing values
        "f": "float",
        "f_integral": "float",  # no NaN: the writer chose float; we do not second-guess it
        "cat": "categorical",
        "txt": "text",
        "dt": "datetime",
        "dt_str": "datetime",
        "category": "categorical",
        "vec": "vector",
        "vec_list": "vector",
        "obj_str": "categorical",
        "arrow_list": "vector",
    }
    assert set(types.values()) <= set(TYPES)
    # a format with only doubles (SAS; the loader sets the flag): integral means integer
    df.attrs[NUMBERS_ARE_DOUBLES] = True
    doubles = {c.name: c.type for c in infer_schema(df).columns}
    assert doubles == {**types, "f_integral": "integer"}
    assert s.column("vec").distinct == n and s.column("vec_list").distinct == 7
    assert s.column("arrow_list").distinct == 2
    assert s.column("vec").suggested_role == "embedding"
    assert s.column("vec").embedding_group == "vec"


def test_exact_missing_and_distinct():
    rng = np.random.default_rng(1)
    n = 50_000
    vals = rng.integers(0, 30_000, n).astype(float)
    vals[rng.random(n) < 0.2] = np.nan
    strs = pd.Series(rng.choice([f"s{i}" for i in range(5000)], n), dtype="str")
    strs[rng.random(n) < 0.1] = None
    ids = pd.Series([f"{i:012d}" for i in rng.permutation(n)], dtype="str")
    ids_dup = ids.copy()
    ids_dup.iloc[7] = ids_dup.iloc[8]  # one duplicate among fixed-width codes
    df = pd.DataFrame(
        {
            "v": vals,
            "s": strs,
            "ids": ids,
            "ids_dup": ids_dup,
            "big": rng.integers(0, 2**62, n),
            "neg0": np.r_[[-0.0, 0.0], np.ones(n - 2)],
        }
    )
    s = infer_schema(df)
    for name in ["v", "s", "ids", "ids_dup", "big"]:
        col = df[name]
        assert s.column(name).missing == int(col.isna().sum()), name
        assert s.column(name).distinct == int(col.nunique()), name
    assert s.column("neg0").distinct == 2  # -0.0 == 0.0
    assert s.column("ids").suggested_role == "identifier"
    assert s.column("ids_dup").distinct == n - 1


def test_categorical_threshold():
    n = 2000  # 5% of rows = 100 > 50
    df = pd.DataFrame(
        {
            "c100": pd.Series([f"v{i % 100}" for i in range(n)], dtype="str"),
            "c101": pd.Series([f"v{i % 101}" for i in range(n)], dtype="str"),
        }
    )
    s = infer_schema(df)
    assert s.column("c100").type == "categorical" and s.column("c101").type == "text"


# --------------------------------------------------------------------------- roles
def test_identifier_names():
    n = 100
    rng = np.random.default_rng(2)
    df = pd.DataFrame(
        {
            "PatientID": rng.permutation(n),
            "customer_id": rng.permutation(n),
            "region_id": rng.integers(0, 5, n),  # a code, not an identifier
            "uuid": [f"u{i}" for i in range(n)],
            "e-mail": ["a@b.c"] * 50 + ["d@e.f"] * 50,
            "first_name": rng.choice(["Ann", "Bob"], n),
            "Surname": rng.choice(["Lee", "Kim"], n),
            "phone": rng.integers(0, 3, n),
            "street address": rng.choice(["1 Main St", "2 Side St"], n),
            "zip": rng.integers(10000, 10010, n),
            "fnlwgt": rng.integers(0, 10**6, n).astype(float),
            "educ": rng.integers(0, 16, n),
            "paid": rng.normal(size=n),
            "row_number": np.arange(n),  # unique per row
            "measure": np.arange(n, dtype=float),  # unique but float: not an identifier
        }
    )
    roles = {c.name: c.suggested_role for c in infer_schema(df).columns}
    for col in [
        "PatientID",
        "customer_id",
        "uuid",
        "e-mail",
        "first_name",
        "Surname",
        "phone",
        "street address",
        "row_number",
    ]:
        assert roles[col] == "identifier", col
    assert roles["region_id"] == "sensitive"
    assert roles["zip"] == "public"
    for col in ["fnlwgt", "educ", "paid", "measure"]:
        assert roles[col] == "sensitive", col


def test_small_tables_are_not_flagged_unique():
    df = pd.DataFrame({"value": range(10), "other": range(10)})
    assert {c.suggested_role for c in infer_schema(df).columns} == {"sensitive"}


def test_one_label_per_table():
    n = 60
    df = pd.DataFrame(
        {
            "diagnosis": np.arange(n) % 4,
            "target": np.arange(n) % 2,
            "outcome": np.arange(n) % 3,
            "class": np.arange(n) % 50,  # too many values for a label
        }
    )
    roles = {c.name: c.suggested_role for c in infer_schema(df).columns}
    assert list(roles.values()).count("label") == 1 and roles["target"] == "label"
    assert roles["class"] == "sensitive"


def test_embedding_groups():
    n = 50
    rng = np.random.default_rng(3)
    data = {f"emb_{i}": rng.normal(size=n) for i in range(16)}
    data.update({f"x{i}": rng.normal(size=n) for i in range(1, 9)})
    data.update({f"q{i}": rng.normal(size=n) for i in range(1, 4)})  # only 3: no group
    data["age"] = rng.integers(0, 90, n)
    s = infer_schema(pd.DataFrame(data))
    assert s.embedding_groups["emb"] == tuple(f"emb_{i}" for i in range(16))
    assert s.embedding_groups["x"] == tuple(f"x{i}" for i in range(1, 9))
    assert "q" not in s.embedding_groups
    assert s.column("emb_3").suggested_role == "embedding"
    assert s.column("emb_3").embedding_group == "emb"
    assert s.column("q1").suggested_role == "sensitive"


def test_ignore_constant_and_missing():
    df = pd.DataFrame({"c": [7] * 30, "m": [np.nan] * 30, "s": pd.Series([None] * 30, dtype="str"), "v": range(30)})
    s = infer_schema(df)
    assert s.column("c").suggested_role == "ignore" and s.column("c").distinct == 1
    assert s.column("m").suggested_role == "ignore" and s.column("m").missing == 30
    assert s.column("s").suggested_role == "ignore"


def test_every_role_has_a_one_line_reason():
    s = schema_of(DATASETS / "medical" / "medical.csv")
    for c in s.columns:
        assert c.suggested_role in ROLES
        assert c.reason and "\n" not in c.reason


def test_to_json_and_column():
    df = pd.DataFrame({f"e{i}": np.arange(10.0) * i for i in range(8)} | {"y": [0, 1] * 5})
    s = infer_schema(df)
    j = s.to_json()
    assert json.loads(json.dumps(j)) == j
    assert j["rows"] == 10 and len(j["columns"]) == 9
    assert j["embedding_groups"] == {"e": [f"e{i}" for i in range(8)]}
    assert isinstance(s.column("y"), ColumnSchema)
    with pytest.raises(KeyError):
        s.column("nope")


def test_no_domains_are_inferred():
    """Inference must not leak bounds or category lists from private data."""
    df = pd.DataFrame({"a": [1, 5, 9] * 10, "c": pd.Series(["x", "y", "z"] * 10, dtype="str")})
    text = json.dumps(infer_schema(df).to_json())
    fields = set(ColumnSchema.__dataclass_fields__)
    assert not fields & {"min", "max", "lower", "upper", "bounds", "categories", "values"}
    assert '"x"' not in text and '"z"' not in text


def test_empty_frame():
    s = infer_schema(pd.DataFrame({"a": pd.Series([], dtype="int64")}))
    assert s.rows == 0 and s.column("a").suggested_role == "ignore"


# --------------------------------------------------------------------------- scale
def test_one_million_rows_with_a_string_identifier():
    """1M x 20 with an arrow-backed identifier column: inferred correctly (its speed is
    benchmarks/bench_load.py's, not a test's: a loaded machine must not fail this)."""
    n = 1_000_000
    rng = np.random.default_rng(4)
    data = {}
    for j in range(8):
        data[f"int{j}"] = rng.integers(0, 10 ** (j + 1), n)
    for j in range(8):
        data[f"f{j}"] = rng.normal(size=n)
    for j in range(3):
        data[f"s{j}"] = pd.Series(rng.choice(["a", "b", "c", "d", "e", "f"], n), dtype="str")
    # fixed-width 10-digit codes built straight into an arrow buffer (fast to generate)
    digits = ((np.arange(n)[:, None] // 10 ** np.arange(9, -1, -1)) % 10 + 48).astype(np.uint8)
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int64) * 10).tobytes())
    pid = pa.Array.from_buffers(pa.large_string(), n, [None, offsets, pa.py_buffer(digits.tobytes())])
    data["pid"] = pid.to_pandas()
    df = pd.DataFrame(data)
    s = infer_schema(df)
    assert s.rows == n and len(s.columns) == len(data)
    assert s.column("pid").suggested_role == "identifier"


def test_label_skips_identifiers_and_constants():
    n = 40
    df = pd.DataFrame(
        {
            "target": [1] * n,  # constant: ignored, so it cannot be the label
            "outcome": np.arange(n) % 3,
            "label_id": np.arange(n),  # unique ID-named column: identifier, not label
        }
    )
    roles = {c.name: c.suggested_role for c in infer_schema(df).columns}
    assert roles == {"target": "ignore", "outcome": "label", "label_id": "identifier"}


def test_non_string_column_names():
    s = infer_schema(pd.DataFrame({0: [1, 2, 3], 1: ["a", "b", "c"]}))
    assert [c.name for c in s.columns] == ["0", "1"]


def test_vectors_with_missing_and_ragged_cells():
    ragged = pd.Series([np.ones(2), None, np.ones(3), np.ones(2)] * 10, dtype=object)
    arrow = pd.Series(
        pa.array([[1.0, 2.0], None, [1.0, 2.0], [3.0, 4.0]] * 10, type=pa.list_(pa.float64())),
        dtype=pd.ArrowDtype(pa.list_(pa.float64())),
    )
    s = infer_schema(pd.DataFrame({"r": ragged, "a": arrow}))
    assert (s.column("r").type, s.column("r").missing, s.column("r").distinct) == ("vector", 10, 2)
    assert (s.column("a").type, s.column("a").missing, s.column("a").distinct) == ("vector", 10, 2)
    assert s.embedding_groups == {"r": ("r",), "a": ("a",)}


# --------------------------------------------------------------------------- fast arrow path
def _mixed_csv(path: Path, n: int = 150_000) -> Path:
    """A multi-block CSV mixing every type, with missing markers in every kind of column."""
    rng = np.random.default_rng(11)

    def with_missing(values: np.ndarray, share: float, markers=("",)) -> np.ndarray:
        values = values.astype(object)
        hit = rng.random(n) < share
        values[hit] = rng.choice(list(markers), int(hit.sum()))
        return values

    cols = {
        "person_id": np.char.add("P", np.char.zfill(np.arange(n).astype(str), 8)),
        "state": with_missing(rng.choice(["GA", "NY", "CA", "TX"], n), 0.05, ("", "NA", "null")),
        "smoker": with_missing(rng.choice(["yes", "no"], n), 0.1),
        "flag": with_missing(rng.choice(["true", "false"], n), 0.1),
        "age": with_missing(rng.integers(18, 91, n), 0.02),
        "visits": rng.poisson(3, n),
        "bmi": with_missing(np.round(rng.normal(27, 5, n), 1), 0.03, ("", "NaN")),
        "lab": np.round(rng.normal(50, 10, n), 4),
        "admitted": with_missing(rng.choice(["2020-01-02", "2021-03-04 05:06:07", "2022-12-31"], n), 0.04),
        "note": with_missing(rng.choice(["a b", "c", "d,e", "é", "日本"], n), 0.02, ("", "N/A")),
        "all_missing": rng.choice(["", "NA"], n),
        "constant": np.full(n, "x"),
        "outcome": rng.integers(0, 2, n),
    }
    late = rng.choice(["low", "high"], n).astype(object)
    late[-5:] = ["rare1", "rare2", "rare3", "rare4", "rare5"]  # values seen only in the last block
    cols["grade"] = late
    many = rng.choice(["u", "v"], n).astype(object)
    many[n // 2 :] = np.char.add("k", np.arange(n - n // 2).astype(str))  # too many for a dictionary
    cols["code"] = many
    frame = pd.DataFrame(cols)
    frame.to_csv(path, index=False)
    return path


def _plain(frame: pd.DataFrame, as_object: bool) -> pd.DataFrame:
    """The same data with every string column rebuilt (object or fresh str arrays), so
    ``infer_schema`` cannot reuse anything the loader measured."""
    out = {}
    for name in frame.columns:
        col = frame[name]
        if col.dtype == "str":
            values = col.astype(object).where(col.notna(), None).tolist()
            out[name] = pd.Series(values, dtype=object if as_object else "str")
        else:
            out[name] = col.copy(deep=True)
    return pd.DataFrame(out)


def test_arrow_fast_path_matches_plain_pandas_path(tmp_path):
    """Arrow-backed str columns (the loader's fast counting paths) and plain object/str
    columns give the same schema on a table spanning several parse blocks."""
    lt = load_table(_mixed_csv(tmp_path / "mixed.csv"))
    frame = lt.frame
    fast = infer_schema(frame)
    for as_object in (False, True):
        plain = infer_schema(_plain(frame, as_object))
        assert plain.to_json() == fast.to_json(), as_object
    types = {c.name: c.type for c in fast.columns}
    assert types["smoker"] == types["flag"] == "boolean" and types["admitted"] == "datetime"
    assert types["person_id"] == "text" and fast.column("person_id").suggested_role == "identifier"
    assert fast.column("state").missing == int(frame["state"].isna().sum()) > 0
    assert fast.column("grade").distinct == 7
    assert fast.column("all_missing").suggested_role == "ignore"


def test_schema_follows_edits_and_slices(tmp_path):
    lt = load_table(_mixed_csv(tmp_path / "mixed.csv", n=2_000))
    frame = lt.frame
    before = infer_schema(frame).column("state")
    frame.loc[0, "state"] = "ZZ"  # a brand-new value: one more distinct, maybe one less missing
    after = infer_schema(frame).column("state")
    assert after.distinct == before.distinct + 1
    assert after.missing == int(frame["state"].isna().sum())
    assert after == infer_schema(_plain(frame, as_object=False)).column("state")
    # a slice shares no arrow array with the loaded frame: counted afresh
    head = frame.head(100)
    assert infer_schema(head).to_json() == infer_schema(_plain(head, as_object=True)).to_json()


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_integer_distinct_counts_are_exact_at_the_extremes(dtype):
    from dpstudio.engine.data.schema import _numeric_distinct

    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    spans = ((int(info.min), 5_000), (int(info.max) - 70_000, 70_000), (-300, 600), (0, 300_000))
    for lo, span in spans:
        lo = max(lo, int(info.min))
        hi = min(lo + span, int(info.max))
        v = rng.integers(lo, hi, 200_000, endpoint=True, dtype=dtype)
        assert _numeric_distinct(v) == np.unique(v).size, (lo, span)
    v = np.concatenate(
        [
            np.array([info.min, info.max] * 500, dtype=dtype),
            rng.integers(info.min, info.max, 5_000, endpoint=True, dtype=dtype),
        ]
    )
    assert _numeric_distinct(v) == np.unique(v).size
