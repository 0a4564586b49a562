import json

import pytest

from dpstudio.errors import RecipeError
from dpstudio.recipe.model import (
    SCHEMA_VERSION,
    Budget,
    Column,
    Domain,
    InputSpec,
    Mechanism,
    Params,
    Recipe,
    ReleaseSpec,
    recipe_from_json,
)
from dpstudio.recipe.validate import ACK_DATASET_POOL, ACK_DOMAIN_FROM_DATA, validate


def _recipe(**kw):
    cols = kw.pop(
        "columns",
        (
            Column("id", "text", "identifier"),
            Column("age", "integer", "sensitive", Domain("numeric", low=0, high=100), Mechanism("laplace")),
            Column("sex", "categorical", "public"),
            Column("y", "boolean", "label", Domain("categorical", categories=("0", "1")), Mechanism("rr")),
        ),
    )
    return Recipe(
        input=kw.pop("input", InputSpec(path="data.csv", sha256="ab" * 32)),
        release=kw.pop("release", ReleaseSpec("record")),
        columns=cols,
        budget=kw.pop("budget", Budget(epsilon=1.0)),
        **kw,
    )


def test_json_round_trip_is_identity():
    r = _recipe(release=ReleaseSpec("synthetic", Params.of({"method": "pearl", "k": 500, "nested": {"a": [1, 2]}})))
    again = recipe_from_json(json.loads(r.dumps()))
    assert again == r
    assert again.sha256() == r.sha256()
    assert r.to_json()["schema_version"] == SCHEMA_VERSION


def test_unknown_keys_are_refused_all_at_once():
    d = _recipe().to_json()
    d["colour"] = "blue"
    d["columns"][1]["domian"] = {}
    d["budget"]["epsilonn"] = 3
    with pytest.raises(RecipeError) as e:
        recipe_from_json(d)
    text = "\n".join(e.value.problems)
    assert "'colour'" in text and "'domian'" in text and "'epsilonn'" in text
    assert "column 'age'" in text
    assert len(e.value.problems) == 3


def test_newer_schema_version_refused():
    d = _recipe().to_json()
    d["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(RecipeError, match="newer"):
        recipe_from_json(d)


def test_version_0_is_migrated():
    v0 = {
        "input": {"path": "x.csv"},
        "release": {"type": "record"},
        "epsilon": 2.0,
        "delta": 0.0,
        "seed": 7,
        "columns": [
            {"name": "age", "type": "integer", "role": "sensitive", "bounds": [0, 99]},
            {"name": "sex", "type": "categorical", "role": "sensitive", "categories": ["f", "m"]},
        ],
    }
    r = recipe_from_json(v0)
    assert r.budget.epsilon == 2.0 and r.randomness.seed == 7
    assert r.column("age").domain == Domain("numeric", source="public", low=0.0, high=99.0)
    assert r.column("sex").domain.categories == ("f", "m")


def test_bad_values_are_quoted_with_their_column():
    d = _recipe().to_json()
    d["columns"][1]["role"] = "secret"
    d["budget"]["epsilon"] = "one"
    d["randomness"] = {"seed": -3}
    with pytest.raises(RecipeError) as e:
        recipe_from_json(d)
    text = "\n".join(e.value.problems)
    assert "column 'age' role: 'secret'" in text
    assert "'one'" in text and "-3" in text


def test_validation_lists_every_problem_with_column_names():
    cols = (
        Column("age", "integer", "sensitive", None, Mechanism("laplace")),
        Column("inc", "float", "sensitive", Domain("numeric", low=5, high=1), Mechanism("rr")),
        Column("sex", "categorical", "sensitive", Domain("categorical", categories=("f", "f")), None),
        Column("emb", "vector", "embedding", None, Mechanism("metric", params=Params.of({"pool": "dataset"}))),
    )
    problems = validate(_recipe(columns=cols, budget=Budget(epsilon=-1, delta=2)))
    text = "\n".join(problems)
    for needle in [
        "column 'age': needs a public domain",
        "column 'inc': bounds must satisfy low < high",
        "[5.0, 1.0]" if "5.0" in text else "[5, 1]",
        "column 'inc': numeric columns use",
        "column 'sex': category list repeats ['f']",
        ACK_DATASET_POOL,
        "epsilon must be > 0, got -1",
        "delta must lie in [0, 1), got 2",
    ]:
        assert needle in text, needle


def test_valid_recipe_has_no_problems_and_data_domain_needs_ack():
    assert validate(_recipe()) == []
    r = _recipe().with_column("age", domain=Domain("numeric", source="data", low=0, high=100))
    assert any(ACK_DOMAIN_FROM_DATA in p for p in validate(r))
    r2 = Recipe(**{**r.__dict__, "acknowledgements": (ACK_DOMAIN_FROM_DATA,)})
    assert validate(r2) == []


def test_gaussian_needs_delta_and_label_release_needs_label():
    r = _recipe().with_column("age", mechanism=Mechanism("gaussian"))
    assert any("needs delta > 0" in p for p in validate(r))
    cols = (Column("age", "integer", "sensitive", Domain("numeric", low=0, high=1), Mechanism("laplace")),)
    assert any(
        "needs a column with role 'label'" in p for p in validate(_recipe(columns=cols, release=ReleaseSpec("label")))
    )


def test_schema_mismatch_is_reported():
    class S:
        rows = 100
        columns = [type("C", (), {"name": n}) for n in ("id", "age", "sex", "extra")]

    problems = validate(_recipe(budget=Budget(epsilon=1, delta=0.5)), S())
    text = "\n".join(problems)
    assert "column 'y': not found in the data" in text
    assert "column 'extra': in the data but not in the recipe" in text
    assert "not below 1/n" in text
    # typed records: where each problem lies and the page that fixes it
    where = {(p.field, p.page) for p in problems}
    assert ("column:y", "columns") in where and ("column:extra", "columns") in where and ("budget", "budget") in where
