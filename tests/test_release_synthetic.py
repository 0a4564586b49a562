"""Synthetic release end to end on the Adult training table (the PEARL paper's split)."""

import json
import subprocess
import sys
from dataclasses import replace

import pandas as pd
import pytest

from tests.conftest import shared_dataset

BOUNDS = [
    "age=17:90",
    "fnlwgt=10000:1500000",
    "education-num=1:16",
    "capital-gain=0:99999",
    "capital-loss=0:4356",
    "hours-per-week=1:99",
]
LEVELS = {
    "education": 16,
    "workclass": 9,
    "marital-status": 7,
    "occupation": 15,
    "relationship": 6,
    "race": 5,
    "sex": 2,
    "native-country": 41,
    "income_gt_50k": 2,
}


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "dpstudio", *map(str, args)], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def init_args(train, recipe, *extra):
    """`recipe init` on the Adult split with its public bounds and category lists."""
    args = [
        "recipe",
        "init",
        train,
        "-o",
        recipe,
        "--release",
        "synthetic",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--role",
        "income_gt_50k=label",
        *extra,
    ]
    for b in BOUNDS:
        args += ["--bounds", b]
    for col, k in LEVELS.items():
        args += ["--categories", f"{col}=" + ",".join(str(i) for i in range(k))]
    return args


@pytest.mark.parametrize("method,options", [("mst", []), ("pearl", ["--option", "steps=150", "--option", "k=100"])])
def test_synthetic_release_on_adult(tmp_path, method, options):
    train = shared_dataset("adult", "train.csv")
    recipe = tmp_path / "r.json"
    code, _, err = cli(*init_args(train, recipe, "--synth", method, "--rows", "3000", "--seed", "4", *options))
    assert code == 0, err
    code, out, err = cli("recipe", "check", recipe)
    assert code == 0, out + err
    out_csv = tmp_path / "synth.csv"
    code, out, err = cli(
        "release", recipe, "--output", out_csv, "--report", tmp_path / "r.html", "--ledger", tmp_path / "l.sqlite"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["guarantee"] == "central"
    assert summary["total"]["epsilon"] == pytest.approx(1.0) and summary["total"]["delta"] == pytest.approx(1e-5)
    synth = pd.read_csv(out_csv)
    real = pd.read_csv(train)
    assert len(synth) == 3000 and list(synth.columns) == list(real.columns)
    for col, k in LEVELS.items():  # categories come from the public lists, as integers
        assert synth[col].between(0, k - 1).all() and synth[col].dtype.kind == "i"
    assert synth["age"].between(17, 90).all()
    # a sane synthesizer keeps the label's base rate roughly (real: about 0.39)
    assert abs(synth["income_gt_50k"].mean() - real["income_gt_50k"].mean()) < 0.15
    assert (tmp_path / "r.html").exists() and not list(tmp_path.glob("*.dpstmp"))
    if method == "pearl":  # a small fit trains in process; the report says how, where
        html = (tmp_path / "r.html").read_text()  # reproduction is discussed
        at = html.index("2 batch shards, in one process")
        assert html.index("Randomness and reproduction") < at < html.index("Sign-off")
        assert html.count("2 batch shards") == 1


def test_recommended_method_follows_the_public_schema(tmp_path):
    """recipe init without --synth writes the recommended method (AIM on Adult) and says why; a
    table wider than AIM's search can handle quickly tips it to MST (public input only)."""
    from dpstudio.plan.synthetic import AIM_MAX_COLUMNS, recommend_method
    from dpstudio.recipe.model import load_recipe

    train = shared_dataset("adult", "train.csv")
    recipe = tmp_path / "r.json"
    code, _, err = cli(*init_args(train, recipe))
    assert code == 0, err
    rec = load_recipe(recipe)
    assert rec.release.options.get("method") == "aim" and "recommended" in err
    kept = [c for c in rec.columns if c.role not in ("identifier", "ignore", "embedding")]
    assert len(kept) <= AIM_MAX_COLUMNS
    extra = tuple(replace(kept[0], name=f"copy{i}") for i in range(AIM_MAX_COLUMNS + 1 - len(kept)))
    wide = replace(rec, columns=rec.columns + extra)
    method, why = recommend_method(wide)
    assert method == "mst" and str(AIM_MAX_COLUMNS + 1) in why
    # the recommendation is also what runs when a recipe names no method
    from dpstudio.plan.synthetic import method_of
    from dpstudio.recipe.model import Params

    opts = {k: v for k, v in wide.release.options.to_dict().items() if k != "method"}
    bare = replace(wide, release=replace(wide.release, options=Params.of(opts)))
    assert method_of(bare) == "mst"
