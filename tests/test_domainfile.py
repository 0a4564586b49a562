"""Domain files and pasted domain tables (dpstudio.recipe.domainfile), and code columns with
leading zeros read as categories."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.data.loader import load_table
from dpstudio.engine.data.schema import infer_schema
from dpstudio.errors import UserError
from dpstudio.recipe.build import recipe_from_schema
from dpstudio.recipe.domainfile import (
    DomainFileError,
    apply_domains,
    domains_json,
    load_domains,
    parse_domain_table,
    read_domain_rows,
    save_domains,
)
from dpstudio.recipe.model import Cost, Domain
from dpstudio.recipe.validate import ACK_DOMAIN_FROM_DATA


def _recipe(tmp_path, frame=None):
    if frame is None:
        g = np.random.default_rng(0)
        frame = pd.DataFrame(
            {
                "age": g.integers(18, 90, 200),
                "income": g.normal(50000, 1000, 200).round(2),
                "sex": g.choice(["female", "male"], 200),
                "job": g.choice(["a", "b", "c"], 200),
            }
        )
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    loaded = load_table(path)
    return recipe_from_schema(loaded, infer_schema(loaded.frame))


# ---- pasted tables ---------------------------------------------------------------------------


def test_a_pasted_table_gives_public_domains():
    rows = parse_domain_table("age\t0\t120\nsex\tfemale|male\njob\ta;b;c\nregion\tnorth, south\n")
    assert [r.error for r in rows] == [None] * 4
    d = {r.column: r.domain for r in rows}
    assert d["age"] == Domain("numeric", source="public", low=0.0, high=120.0)
    assert d["sex"] == Domain("categorical", source="public", categories=("female", "male"))
    assert d["job"].categories == ("a", "b", "c")
    assert d["region"].categories == ("north", "south")  # commas split only in a tab-separated table
    assert all(x.source == "public" for x in d.values())


def test_a_comma_separated_table_with_other():
    rows = parse_domain_table("age,0,120\nsex,female|male|(other),(other)\n")
    assert rows[1].domain.other == "(other)" and rows[1].domain.categories == ("female", "male", "(other)")


def test_every_bad_row_has_its_own_error_and_none_is_dropped():
    text = "\n".join(
        [
            "age,120,0",  # reversed
            "hours,0,inf",  # not finite
            "sex,female|female",  # repeated
            "job,onlyone",  # one category
            ",1,2",  # no column name
            "x,1,2,3",  # too many cells
            "age,0,100",  # age given twice (even if its first row was refused)
            "sex,f|m",  # sex given twice
            "y",  # nothing
            "z,a||b",  # empty category
        ]
    )
    rows = parse_domain_table(text)
    assert len(rows) == 10
    errs = [r.error for r in rows]
    assert "below the highest" in errs[0]
    assert "finite" in errs[1] or "number" in errs[1]
    assert "repeat" in errs[2] and "female" in errs[2]
    assert "at least 2" in errs[3]
    assert errs[4] == "no column name"
    assert "more cells" in errs[5]
    assert "twice" in errs[6] and "twice" in errs[7]
    assert errs[8] is not None and "expected" in errs[8]
    assert "empty category" in errs[9]
    assert not any(r.ok for r in rows)


def test_a_table_with_a_header_can_ask_for_dp_or_a_copy():
    text = (
        "column,source,low,high,categories,epsilon,delta,search_low,search_high,type\n"
        "age,public,0,120,,,,,,integer\n"
        "income,dp,,,,0.2,,0,1000000,float\n"
        "job,dp,,,,0.1,1e-8,,,categorical\n"
        "hours,data,,,,,,,,integer\n"
        "sex,dp,,,,,,,,categorical\n"
    )
    rows = parse_domain_table(text)
    d = {r.column: r.domain for r in rows if r.ok}
    assert d["age"].source == "public" and rows[0].type == "integer"
    assert d["income"] == Domain("numeric", source="dp", search_low=0.0, search_high=1e6, cost=Cost(0.2))
    assert d["job"].cost == Cost(0.1, 1e-8) and d["job"].candidates is None
    assert d["hours"] == Domain("numeric", source="data")
    assert "epsilon" in rows[4].error and rows[4].domain is None


def test_an_unknown_heading_is_reported_on_every_row():
    rows = parse_domain_table("column,lo,hi\nage,0,1\n")
    assert rows[0].error.startswith("unknown heading") and "lo" in rows[0].error


# ---- files -----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".csv", ".tsv"])
def test_saved_domains_load_back_the_same(tmp_path, suffix):
    rec = _recipe(tmp_path)
    rec = rec.with_column("age", domain=Domain("numeric", low=0.0, high=120.0))
    rec = rec.with_column(
        "income", domain=Domain("numeric", source="dp", search_low=0.0, search_high=1e6, cost=Cost(0.1))
    )
    rec = rec.with_column("sex", domain=Domain("categorical", categories=("female", "male", "x;y"), other="x;y"))
    rec = rec.with_column("job", domain=Domain("categorical", source="dp", cost=Cost(0.1, 1e-7)))
    path = tmp_path / f"domains{suffix}"
    assert save_domains(rec, path) == 4
    got = load_domains(path)
    assert got == {c.name: c.domain for c in rec.columns}


def test_a_category_with_a_bar_needs_json(tmp_path):
    rec = _recipe(tmp_path).with_column("sex", domain=Domain("categorical", categories=("f|x", "m")))
    with pytest.raises(UserError, match="JSON"):
        save_domains(rec, tmp_path / "d.csv")
    save_domains(rec, tmp_path / "d.json")
    assert load_domains(tmp_path / "d.json")["sex"].categories == ("f|x", "m")


def test_saving_never_writes_values_from_the_data(tmp_path):
    rec = _recipe(tmp_path)
    # a copy from the data already resolved, and a DP estimate already run: their values stay home
    rec = rec.with_column("age", domain=Domain("numeric", source="data", low=18.0, high=89.0))
    rec = rec.with_column(
        "income",
        domain=Domain(
            "numeric", source="dp", search_low=0.0, search_high=1e6, cost=Cost(0.1), low=48123.0, high=51234.0
        ),
    )
    rec = rec.with_column("job", domain=Domain("categorical", source="data", categories=("a", "b", "c")))
    entries = {e["column"]: e for e in domains_json(rec)["columns"]}
    assert entries["age"] == {"column": "age", "type": "integer", "source": "data", "kind": "numeric"}
    assert entries["income"] == {
        "column": "income",
        "type": "float",
        "source": "dp",
        "epsilon": 0.1,
        "search": [0.0, 1e6],
    }
    assert entries["job"] == {"column": "job", "type": "categorical", "source": "data", "kind": "categorical"}
    save_domains(rec, tmp_path / "d.csv")
    text = (tmp_path / "d.csv").read_text()
    assert "48123" not in text and "89" not in text and "a|b|c" not in text
    back = load_domains(tmp_path / "d.csv")
    assert back["age"] == Domain("numeric", source="data") and back["job"] == Domain("categorical", source="data")


def test_a_bad_file_lists_every_problem(tmp_path):
    p = tmp_path / "d.json"
    p.write_text(
        json.dumps(
            {
                "format": "dpstudio-domains",
                "version": 1,
                "columns": [
                    {"column": "age", "bounds": [10, 5]},
                    {"column": "sex", "categories": []},
                    {"column": "ok", "bounds": [0, 1]},
                    {"bounds": [0, 1]},
                ],
            }
        )
    )
    with pytest.raises(DomainFileError) as exc:
        load_domains(p)
    assert len(exc.value.problems) == 3
    assert "age" in exc.value.problems[0] and "empty" in exc.value.problems[1]
    assert [r.ok for r in read_domain_rows(p)] == [False, False, True, False]


def test_a_file_that_is_not_a_domain_file_is_refused(tmp_path):
    p = tmp_path / "r.json"
    p.write_text('{"columns": []}')
    with pytest.raises(UserError, match="not a dpstudio domain file"):
        load_domains(p)
    p.write_text('{"format": "dpstudio-domains", "version": 1, "columns": [{"column": "a", "bounds": [0, NaN]}]}')
    with pytest.raises(UserError, match="not valid JSON"):
        load_domains(p)


# ---- applying --------------------------------------------------------------------------------


def test_applying_reports_unknown_and_mismatched_names(tmp_path):
    rec = _recipe(tmp_path)
    domains = {
        "age": Domain("numeric", low=0.0, high=120.0),
        "Sex": Domain("categorical", categories=("f", "m")),  # wrong case: unknown, with a hint
        "income": Domain("categorical", categories=("lo", "hi")),  # numeric column: mismatched
        "job": Domain("numeric", source="data"),  # categorical column: mismatched
        "hours": Domain("numeric", low=0.0, high=99.0),
    }
    out, report = apply_domains(rec, domains)
    assert report.applied == ["age"]
    assert len(report.unknown) == 2 and "did you mean 'sex'" in report.unknown[0]
    assert len(report.mismatched) == 2 and "bounds" in report.mismatched[0]
    assert len(report.applied) + report.skipped == len(domains)  # nothing dropped silently
    assert out.column("age").domain == domains["age"] and out.column("income").domain is None
    assert any("not applied" in line for line in report.lines())


def test_a_copy_from_the_data_needs_the_acknowledgement(tmp_path):
    rec = _recipe(tmp_path)
    domains = {"age": Domain("numeric", source="data")}
    out, report = apply_domains(rec, domains)
    assert report.needs_ack == ["age"] and out.column("age").domain is None
    out, report = apply_domains(rec, domains, acknowledge_data=True)
    assert report.applied == ["age"] and ACK_DOMAIN_FROM_DATA in out.acknowledgements


def test_one_file_serves_two_tables_with_the_same_columns(tmp_path):
    a = _recipe(tmp_path)
    a = a.with_column("age", domain=Domain("numeric", low=0.0, high=120.0))
    a = a.with_column("sex", domain=Domain("categorical", categories=("female", "male")))
    save_domains(a, tmp_path / "shared.json")
    g = np.random.default_rng(5)
    other = pd.DataFrame({"age": g.integers(20, 60, 50), "sex": g.choice(["female", "male"], 50)})
    (tmp_path / "b").mkdir()
    b = _recipe(tmp_path / "b", other)
    out, report = apply_domains(b, load_domains(tmp_path / "shared.json"))
    assert sorted(report.applied) == ["age", "sex"] and report.skipped == 0
    assert out.column("sex").domain.categories == ("female", "male")


# ---- codes with leading zeros ------------------------------------------------------------------


def test_codes_with_leading_zeros_stay_text_and_categorical(tmp_path):
    p = tmp_path / "codes.csv"
    p.write_text("treatment,zip,n\n025,02134,1\n048,10001,2\n100,02139,3\n025,90210,4\n")
    loaded = load_table(p)
    assert loaded.frame["treatment"].tolist() == ["025", "048", "100", "025"]
    assert loaded.frame["zip"].tolist()[0] == "02134"
    assert pd.api.types.is_integer_dtype(loaded.frame["n"])  # no leading zero: still numbers
    assert "text_columns" not in loaded.options  # detected again from the same bytes on replay
    schema = infer_schema(loaded.frame)
    assert schema.column("treatment").type == "categorical"
    assert schema.column("n").type == "integer"


def test_many_zero_padded_codes_are_categories_not_text():
    g = np.random.default_rng(0)
    z = pd.Series([f"{v:05d}" for v in g.integers(0, 99999, 3000)], dtype="str")
    s = infer_schema(pd.DataFrame({"zip": z, "note": z + "x"}))
    assert s.column("zip").type == "categorical"  # ~3000 distinct: past the 5% rule, still codes
    assert s.column("note").type == "text"


def test_the_pandas_fallback_keeps_the_zeros_too(tmp_path):
    from dpstudio.engine.data.loader import _read_csv_pandas

    p = tmp_path / "c.csv"
    p.write_text("code,n\n007,1\n010,2\n")
    o = {"delimiter": ",", "quotechar": '"', "encoding": "utf-8", "header": True, "text_columns": ["code"]}
    frame = _read_csv_pandas(p, o, None, ValueError("x"))
    assert frame["code"].tolist() == ["007", "010"]


# ---- command line ------------------------------------------------------------------------------


def test_recipe_domains_and_init_with_a_domain_file(tmp_path, capsys):
    from dpstudio.cli import main
    from dpstudio.recipe.model import load_recipe

    g = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "age": g.integers(18, 90, 300),
            "sex": g.choice(["female", "male"], 300),
            "income": g.integers(0, 10**5, 300),
        }
    )
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    frame.to_csv(a, index=False)
    frame.iloc[::-1].to_csv(b, index=False)  # the same schema, other rows
    ra = tmp_path / "a.recipe.json"
    code = main(
        [
            "recipe",
            "init",
            str(a),
            "-o",
            str(ra),
            "--role",
            "sex=sensitive",
            "--bounds",
            "age=0:120",
            "--bounds",
            "income=data",
            "--categories",
            "sex=female,male",
        ]  # fmt: skip
    )
    assert code == 0
    for suffix in (".json", ".csv"):
        f = tmp_path / f"domains{suffix}"
        assert main(["recipe", "domains", str(ra), "-o", str(f)]) == 0
        assert "wrote 3 domain(s)" in capsys.readouterr().err
        rb = tmp_path / f"b{suffix}.recipe.json"
        assert main(["recipe", "init", str(b), "-o", str(rb), "--role", "sex=sensitive", "--domains", str(f)]) == 0
        err = capsys.readouterr().err
        assert "3 domain(s) applied" in err
        # a copy the file asks for is said as loudly as --bounds COL=data
        assert "copies the domains of income from the private data" in err
        rec = load_recipe(rb)
        assert rec.column("age").domain == Domain("numeric", low=0.0, high=120.0)
        assert rec.column("sex").domain.categories == ("female", "male")
        income = rec.column("income").domain
        assert income.source == "data" and ACK_DOMAIN_FROM_DATA in rec.acknowledgements  # the file asked for it
        assert income.low == float(frame["income"].min())  # filled from b, flagged as a copy
    # flags win over the file; names the file cannot serve are listed
    f = tmp_path / "extra.csv"
    f.write_text("age,0,100\nzip,a|b\nsex,0,1\n")
    rc = tmp_path / "c.recipe.json"
    main(["recipe", "init", str(b), "-o", str(rc), "--domains", str(f), "--bounds", "age=0:99"])
    err = capsys.readouterr().err
    assert "no column 'zip'" in err and "'sex' is a categorical column" in err
    assert load_recipe(rc).column("age").domain.high == 99.0


def test_recipe_domains_never_overwrites_the_recipe(tmp_path, capsys):
    from dpstudio.cli import main

    a = tmp_path / "a.csv"
    pd.DataFrame({"age": range(30)}).to_csv(a, index=False)
    r = tmp_path / "r.json"
    main(["recipe", "init", str(a), "-o", str(r), "--bounds", "age=0:120"])
    before = r.read_text()
    assert main(["recipe", "domains", str(r), "-o", str(r)]) == 2
    assert r.read_text() == before


def test_a_pasted_table_may_mix_tabs_and_commas_and_blank_lines():
    rows = parse_domain_table("age\t0\t120\n\nsex,female|male\nbad\n")
    assert [(r.line, r.column, r.ok) for r in rows] == [(1, "age", True), (3, "sex", True), (4, "bad", False)]


@pytest.mark.parametrize("release", ["record", "synthetic"])
def test_zero_padded_codes_are_released_as_written(tmp_path, release):
    """A code column with leading zeros ("020") is read as text and released as text: never as
    the number 20 (which would also merge it with a different code "20"), in record releases
    (randomized response) and in synthetic data alike; the published fidelity figure compares
    the codes as written."""
    from dpstudio.cli import main

    gen = np.random.default_rng(4)
    codes = ["020", "021", "022", "130", "20"]
    n = 600
    data = tmp_path / "codes.csv"
    pd.DataFrame({"zip": gen.choice(codes, n, p=[0.4, 0.2, 0.2, 0.1, 0.1]), "y": gen.choice(["a", "b"], n)}).to_csv(
        data, index=False
    )
    recipe = tmp_path / "r.json"
    args = ["--release", release, "--epsilon", "4", "--role", "zip=sensitive", "--role", "y=sensitive"]
    args += ["--categories", "zip=" + ",".join(codes), "--categories", "y=a,b", "--confirm-inferred"]
    if release == "synthetic":
        args += ["--synth", "mst"]
    assert main(["recipe", "init", str(data), "-o", str(recipe), *args]) == 0
    out = tmp_path / "out.csv"
    assert main(["release", str(recipe), "--output", str(out), "--no-ledger"]) == 0
    released = pd.read_csv(out, dtype=str)["zip"]
    assert set(released) <= set(codes)
    assert (released == "020").mean() > 0.2  # the commonest code, with its zero
    if release == "synthetic":
        from dpstudio.pipeline import execute_release
        from dpstudio.recipe.model import load_recipe

        res = execute_release(load_recipe(recipe), output_path=tmp_path / "again.csv", ledger=None)
        assert res.outcome.public_stats["synthesizer_fidelity"]["zip"] < 0.1
