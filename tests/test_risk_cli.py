"""`dpstudio risk` answers for synthetic and embedding recipes (record/label/semi are covered in
tests/test_leakage_risk.py)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd

from dpstudio.report.model import risk_summary


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "dpstudio", *map(str, args)], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def _unit(v):
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_risk_for_an_embedding_recipe(tmp_path):
    g = np.random.default_rng(0)
    centres = _unit(g.normal(size=(60, 16)))
    people = _unit(centres[np.arange(300) % 60] + 0.3 * g.normal(size=(300, 16)))
    pool = _unit(g.normal(size=(500, 16)))
    cols = [f"emb_{i}" for i in range(16)]
    data = pd.DataFrame(people, columns=cols)
    data.insert(0, "age", g.integers(20, 70, 300))
    data.to_csv(tmp_path / "d.csv", index=False)
    pd.DataFrame(pool, columns=cols).to_csv(tmp_path / "pool.csv", index=False)
    recipe = tmp_path / "r.json"
    args = ["recipe", "init", tmp_path / "d.csv", "-o", recipe, "--epsilon", "8", "--role", "age=ignore"]
    for c in cols:
        args += ["--mechanism", f"{c}=metric:{tmp_path / 'pool.csv'}"]
    code, _, err = cli(*args)
    assert code == 0, err
    r = json.loads(recipe.read_text())
    assert {c["role"] for c in r["columns"] if c["name"].startswith("emb_")} == {"embedding"}
    code, out, err = cli("risk", recipe)
    assert code == 0, err
    risk = json.loads(out)
    view = next(iter(risk["embedding"].values()))
    assert 0 <= view["at_epsilon"]["reid_rate"] <= 1
    assert risk["computed_on"].startswith("raw data")
    assert any("Embeddings" in line for line in risk_summary(risk))
    code, _, err = cli("release", recipe, "--output", tmp_path / "o.csv", "--no-ledger")
    assert code == 0, err
    released = pd.read_csv(tmp_path / "o.csv")[cols].to_numpy()
    # every released vector is a pool vector (never a person's own)
    assert np.isclose(released @ pool.T, 1.0, atol=1e-5).any(axis=1).all()


def test_risk_for_a_synthetic_recipe(tmp_path):
    g = np.random.default_rng(1)
    n = 1500
    frame = pd.DataFrame(
        {"x": g.normal(50, 10, n).clip(0, 100).round(1), "c": g.choice(["a", "b", "c"], n), "y": g.integers(0, 2, n)}
    )
    frame.to_csv(tmp_path / "d.csv", index=False)
    recipe = tmp_path / "r.json"
    code, _, err = cli(
        "recipe",
        "init",
        tmp_path / "d.csv",
        "-o",
        recipe,
        "--release",
        "synthetic",
        "--synth",
        "mst",
        "--delta",
        "1e-6",
        "--role",
        "y=label",
        "--role",
        "x=sensitive",
        "--role",
        "c=sensitive",
        "--bounds",
        "x=0:100",
        "--categories",
        "c=a,b,c",
        "--categories",
        "y=0,1",
    )
    assert code == 0, err
    code, out, err = cli("risk", recipe)
    assert code == 0, err
    syn = json.loads(out)["synthetic"]
    assert 0 <= syn["membership_inference"]["advantage"] <= 1
    assert syn["dcr"]["median_ratio"] > 0
    assert any("Membership inference" in line for line in risk_summary(json.loads(out)))
