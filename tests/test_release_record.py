"""Record-level release end to end: recipe init -> release on real data (Census PUMS)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.conftest import DEMO, shared_dataset

BOOLS = [
    "latino",
    "black",
    "asian",
    "married",
    "divorced",
    "uscitizen",
    "children",
    "disability",
    "militaryservice",
    "employed",
    "englishability",
]


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "dpstudio", *map(str, args)], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def pums_release(tmp_path_factory):
    src = shared_dataset("pums", "fulton_pums.csv")
    tmp = tmp_path_factory.mktemp("pums")
    recipe = tmp / "r.json"
    args = [
        "recipe",
        "init",
        src,
        "-o",
        recipe,
        "--release",
        "record",
        "--epsilon",
        "6",
        "--role",
        "employed=label",
        "--bounds",
        "educ=1:16",
        "--bounds",
        "income=0:300000",
        "--mechanism",
        "income=gaussian",
        "--delta",
        "1e-7",
        "--weight",
        "income=3",
        "--seed",
        "11",
    ]
    for b in BOOLS:
        args += ["--categories", f"{b}=0,1"]
    code, _, err = cli(*args)
    assert code == 0, err
    out = tmp / "out.parquet"
    code, stdout, err = cli("release", recipe, "--output", out, "--ledger", tmp / "ledger.sqlite")
    assert code == 0, err
    return src, json.loads(recipe.read_text()), pd.read_parquet(out), json.loads(stdout)


def test_pums_release_shape_and_pass_through(pums_release):
    src, recipe, out, summary = pums_release
    raw = pd.read_csv(src)
    assert len(out) == len(raw)
    # constant columns were suggested 'ignore' and are dropped; public columns pass unchanged
    assert "state" not in out and "fips" not in out
    for public in ("puma", "sex", "age"):
        assert (out[public].to_numpy() == raw[public].to_numpy()).all()
    assert summary["total"]["epsilon"] == pytest.approx(6.0)
    assert summary["total"]["delta"] == pytest.approx(1e-7)
    assert "fixed random seed (11)" in " ".join(summary["warnings"])


def test_pums_release_perturbs_within_declared_domains(pums_release):
    src, recipe, out, _ = pums_release
    raw = pd.read_csv(src)
    for b in BOOLS:
        assert set(np.unique(out[b])) <= {0, 1}
        # with eps/14 per column RR flips a visible share of values, but not all
        changed = (out[b].to_numpy() != raw[b].to_numpy()).mean()
        assert 0.05 < changed < 0.6, (b, changed)
    # integer column: integer grid; Gaussian income: values on a data-independent grid
    assert out["educ"].dtype.kind == "i"
    inc = out["income"].to_numpy()
    assert np.std(inc - raw["income"].clip(0, 300000).fillna(150000).to_numpy()) > 1000


def test_same_seed_same_release_and_secure_default_differs(tmp_path):
    recipe = tmp_path / "r.json"
    common = [
        "recipe",
        "init",
        DEMO,
        "-o",
        recipe,
        "--epsilon",
        "2",
        "--role",
        "employed=label",
        "--bounds",
        "age=0:100",
        "--bounds",
        "education_level=1:16",
        "--bounds",
        "income=0:500000",
        "--categories",
        "employed=0,1",
        "--categories",
        "ethnicity=latino,black,asian,other",
        "--categories",
        "married=no,yes",
        "--categories",
        "us_citizen=no,yes",
        "--categories",
        "children=0,1",
        "--categories",
        "disability=no,yes",
        "--categories",
        "speaks_english_well=no,yes",
        "--categories",
        "sex=female,male",
    ]
    assert cli(*common, "--seed", "5")[0] == 0
    outs = []
    for i in range(2):
        code, _, err = cli("release", recipe, "--output", tmp_path / f"s{i}.csv", "--no-ledger")
        assert code == 0, err
        outs.append(pd.read_csv(tmp_path / f"s{i}.csv"))
    pd.testing.assert_frame_equal(outs[0], outs[1])
    assert cli(*common, "--force")[0] == 0  # no seed: secure randomness
    for i in range(2):
        assert cli("release", recipe, "--output", tmp_path / f"u{i}.csv", "--no-ledger")[0] == 0
    a, b = pd.read_csv(tmp_path / "u0.csv"), pd.read_csv(tmp_path / "u1.csv")
    assert not a["income"].equals(b["income"])
    assert "person_id" not in a.columns  # identifiers are dropped


def test_out_of_list_category_is_refused_or_mapped_to_other(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x,c\n" + "".join(f"{i % 7},{'abc'[i % 3]}\n" for i in range(60)))
    recipe = tmp_path / "r.json"
    assert (
        cli(
            "recipe",
            "init",
            data,
            "-o",
            recipe,
            "--role",
            "x=sensitive",
            "--role",
            "c=sensitive",
            "--bounds",
            "x=0:6",
            "--categories",
            "c=a,b",
        )[0]
        == 0
    )
    code, _, err = cli("release", recipe, "--output", tmp_path / "o.csv", "--no-ledger")
    assert code == 2 and "not in the declared category list" in err
    assert not (tmp_path / "o.csv").exists()
    r = json.loads(recipe.read_text())
    for c in r["columns"]:
        if c["name"] == "c":
            c["domain"]["categories"] = ["a", "b", "other"]
            c["domain"]["other"] = "other"
    recipe.write_text(json.dumps(r))
    code, _, err = cli("release", recipe, "--output", tmp_path / "o.csv", "--no-ledger")
    assert code == 0, err
    assert set(pd.read_csv(tmp_path / "o.csv")["c"]) <= {"a", "b", "other"}


def _tiny_recipe(tmp_path, csv_text, *args):
    data = tmp_path / "d.csv"
    data.write_text(csv_text)
    recipe = tmp_path / "r.json"
    code, _, err = cli("recipe", "init", data, "-o", recipe, *args)
    assert code == 0, err
    return recipe


def test_output_type_does_not_reveal_a_missing_value(tmp_path):
    """Review finding A4: one missing value turned the released column from ints into strings."""
    outs = []
    for i, grade in enumerate(["2", ""]):
        sub = tmp_path / str(i)
        sub.mkdir()
        rows = "".join(f"{k},{(k % 3) + 1}\n" for k in range(40))
        recipe = _tiny_recipe(
            sub,
            f"x,grade\n{rows}99,{grade}\n",
            "--role",
            "x=sensitive",
            "--role",
            "grade=sensitive",
            "--bounds",
            "x=0:100",
            "--categories",
            "grade=1,2,3",
        )
        r = json.loads(recipe.read_text())
        for c in r["columns"]:
            if c["name"] == "grade":
                c["type"] = "categorical"
                c["domain"]["other"] = "3"
                c["mechanism"] = {"name": "rr", "weight": 1.0, "params": {}}
            if c["name"] == "x":
                c["type"] = "integer"
        recipe.write_text(json.dumps(r))
        code, _, err = cli("release", recipe, "--output", sub / "o.json", "--no-ledger")
        assert code == 0, err
        outs.append(json.loads((sub / "o.json").read_text()))
    assert {type(row["grade"]) for row in outs[0]} == {type(row["grade"]) for row in outs[1]} == {int}


def test_public_columns_make_a_record_release_semi_sensitive(tmp_path):
    """Review finding A2: a column copied verbatim is not covered by record-level DP."""
    from dpstudio.pipeline import compile_recipe
    from dpstudio.recipe.model import load_recipe

    recipe = _tiny_recipe(
        tmp_path,
        "zip,hiv\n" + "".join(f"{10000 + k},{'yn'[k % 2]}\n" for k in range(30)),
        "--role",
        "zip=public",
        "--role",
        "hiv=sensitive",
        "--categories",
        "hiv=n,y",
    )
    plan = compile_recipe(load_recipe(recipe))
    assert plan.guarantee == "semi-sensitive" and plan.total.kind == "semi-sensitive"
    assert any("zip" in n and "not protected" in n for n in plan.notes)
    r = json.loads(recipe.read_text())
    r["columns"] = [c if c["name"] != "zip" else {**c, "role": "ignore"} for c in r["columns"]]
    recipe.write_text(json.dumps(r))
    assert compile_recipe(load_recipe(recipe)).guarantee == "record-level"


def test_validation_catches_degenerate_domains():
    """Review finding C: these used to pass validation and crash later."""
    from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Mechanism, Recipe, ReleaseSpec
    from dpstudio.recipe.validate import validate

    def one(col):
        return validate(
            Recipe(input=InputSpec("x.csv"), release=ReleaseSpec("record"), columns=(col,), budget=Budget(1.0))
        )

    assert one(
        Column("a", "categorical", "sensitive", Domain("categorical", categories=("a",), other="a"), Mechanism("rr"))
    )
    assert one(
        Column(
            "a",
            "float",
            "sensitive",
            Domain("numeric", source="dp", low=1, high=1, cost=Cost(0.1)),
            Mechanism("laplace"),
        )
    )
    assert any(
        "delta in (0, 0.001]" in p
        for p in one(
            Column("a", "categorical", "sensitive", Domain("categorical", source="dp", cost=Cost(0.1)), Mechanism("rr"))
        )
    )
