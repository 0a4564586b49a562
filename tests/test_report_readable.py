"""The report as a compliance officer reads it (issue 18): synthetic releases told truthfully,
the synthesizer's accounting as it composes, readable risk tables, no internal references,
the operator, numbers without exponent notation, the recipe as an appendix, an external
version that names nothing it withholds, and useless columns flagged in the summary."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpstudio import prefs
from dpstudio.cli import main
from dpstudio.pipeline import execute_release
from dpstudio.recipe.model import load_recipe
from dpstudio.report import build_model, render
from dpstudio.report.model import Cell, _pct, fmt, synthesizer_components, synthetic_utility

# ---- helpers -----------------------------------------------------------------------------------


def model_text(model, *, skip_pre: bool = False) -> str:
    """Every word of a report model, as a reader sees it."""
    out = [model.title, model.banner] + [f"{k}: {v}" for k, v in model.header]
    for s in model.sections:
        out.append(s.title)
        for b in s.blocks:
            out.append(b.caption)
            c = b.content
            if b.kind == "pre" and skip_pre:
                continue
            if isinstance(c, str):
                out.append(c)
            elif b.kind == "list":
                out += [str(x) for x in c]
            elif b.kind == "kv":
                out += [f"{k}: {v}" for k, v in c]
            elif b.kind == "table":
                out += list(c["head"])
                out += [x.text if isinstance(x, Cell) else str(x) for row in c["rows"] for x in row]
            elif isinstance(c, list):
                out += [str(x) for x in c]
    return "\n".join(out)


def section(model, title):
    return next(s for s in model.sections if s.title == title)


def section_text(model, title) -> str:
    s = section(model, title)
    fake = type("M", (), {"title": "", "banner": "", "header": [], "sections": [s]})
    return model_text(fake)


def tables(model, title) -> list[dict]:
    return [b.content for b in section(model, title).blocks if b.kind == "table"]


def _table_file(tmp_path, n=400, seed=1, **extra):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "pid": [f"P{i:05d}" for i in range(n)],
            "age": rng.integers(18, 90, n),
            "grp": rng.choice(["a", "b", "c"], n),
            "zip": rng.choice([f"{z:03d}**" for z in range(40)], n),
            "y": rng.choice(["0", "1"], n),
            **extra,
        }
    )
    path = tmp_path / "data" / "small.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path, frame


def _recipe(tmp_path, data, args) -> object:
    path = tmp_path / "recipe.json"
    assert main(["recipe", "init", str(data), "-o", str(path), "--confirm-inferred", *args]) == 0
    return load_recipe(path)


SYNTH_ARGS = [
    "--release",
    "synthetic",
    "--epsilon",
    "1",
    "--delta",
    "1e-6",
    "--rows",
    "300",
    "--role",
    "pid=identifier",
    "--role",
    "y=label",
    "--role",
    "age=public",
    "--role",
    "grp=sensitive",
    "--role",
    "zip=public",
    "--bounds",
    "age=0:120",
    "--categories",
    "grp=a,b,c",
    "--categories",
    "y=0,1",
    "--categories",
    "zip=data",
]


def _synthetic(tmp_path, method, options=()):
    data, frame = _table_file(tmp_path)
    args = [*SYNTH_ARGS, "--synth", method]
    for opt in options:
        args += ["--option", opt]
    recipe = _recipe(tmp_path, data, args)
    res = execute_release(recipe, output_path=tmp_path / "syn.csv", ledger=None)
    return res, frame


@pytest.fixture(scope="module")
def mst(tmp_path_factory):
    return _synthetic(tmp_path_factory.mktemp("mst"), "mst")


@pytest.fixture(scope="module")
def merf(tmp_path_factory):
    return _synthetic(tmp_path_factory.mktemp("merf"), "merf", ["k=16", "steps=20", "hidden=8"])


RECORD_ARGS = [
    "--release",
    "record",
    "--epsilon",
    "1",
    "--role",
    "pid=identifier",
    "--role",
    "age=sensitive",
    "--role",
    "grp=sensitive",
    "--role",
    "zip=public",
    "--role",
    "y=sensitive",
    "--bounds",
    "age=0:120",
    "--categories",
    "grp=a,b,c",
    "--categories",
    "y=0,1",
    "--categories",
    "zip=data",
]


@pytest.fixture(scope="module")
def pearl(tmp_path_factory):
    return _synthetic(tmp_path_factory.mktemp("pearl"), "pearl", ["k=16", "steps=20", "hidden=8"])


def _central(tmp_path, release, roles):
    data, frame = _table_file(tmp_path)
    args = ["--release", release, "--epsilon", "1", "--delta", "1e-6", "--role", "pid=identifier"]
    args += ["--bounds", "age=0:120", "--categories", "y=0,1"]
    for col, role in roles.items():
        args += ["--role", f"{col}={role}"]
    recipe = _recipe(tmp_path, data, args)
    out = tmp_path / "out.json"
    return execute_release(recipe, output_path=out, ledger=None), frame


@pytest.fixture(scope="module")
def model_release(tmp_path_factory):
    roles = {"age": "sensitive", "y": "label", "grp": "ignore", "zip": "ignore"}
    return _central(tmp_path_factory.mktemp("model"), "model", roles)


@pytest.fixture(scope="module")
def density(tmp_path_factory):
    roles = {"age": "sensitive", "y": "ignore", "grp": "ignore", "zip": "ignore"}
    return _central(tmp_path_factory.mktemp("density"), "density", roles)


@pytest.fixture(scope="module")
def label(tmp_path_factory):
    from dpstudio.risk import risk_for_recipe

    tmp = tmp_path_factory.mktemp("label")
    data, frame = _table_file(tmp)
    args = ["--release", "label", "--epsilon", "1", "--role", "pid=identifier", "--role", "y=label"]
    args += ["--role", "age=public", "--role", "grp=public", "--role", "zip=public", "--bounds", "age=0:120"]
    args += ["--categories", "grp=a,b,c", "--categories", "y=0,1", "--categories", "zip=data"]
    res = execute_release(_recipe(tmp, data, args), output_path=tmp / "lab.csv", ledger=None)
    res.risk = risk_for_recipe(res.plan.recipe or res.recipe, frame, seed=0)
    return res, frame


ALL_TYPES = ["mst", "merf", "pearl", "record", "label", "model_release", "density"]


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    from dpstudio.risk import risk_for_recipe

    tmp = tmp_path_factory.mktemp("record")
    data, frame = _table_file(tmp)
    recipe = _recipe(tmp, data, RECORD_ARGS)
    res = execute_release(recipe, output_path=tmp / "rec.csv", ledger=None)
    res.risk = risk_for_recipe(res.plan.recipe or res.recipe, frame, seed=0)
    return res, frame


# ---- 1. synthetic releases tell the truth ----------------------------------------------------


@pytest.mark.parametrize("which", ["mst", "merf"])
@pytest.mark.parametrize("variant", ["internal", "external"])
def test_no_synthesized_column_is_called_unprotected(request, which, variant):
    res, frame = request.getfixturevalue(which)
    model = build_model(res, variant, frame, charts=False)
    text = model_text(model)
    assert "released unchanged" not in text and "Released without noise" not in text
    assert "not protected by the guarantee): " not in text
    treatment = {r[0].text: r[5].text for r in tables(model, "Columns")[0]["rows"]}
    for c in ("age", "grp", "zip", "y"):
        assert "synthesizer" in treatment[c], (c, treatment[c])
    summary = section_text(model, "Summary")
    assert "No row is a real person's record" in summary
    # a synthetic table is not "aggregate results", and a record guarantee's texts do not apply
    assert "aggregate" not in summary.lower() and "Each person's whole record was changed" not in summary
    assert "values were changed on purpose" not in summary


def test_record_release_does_not_speak_of_aggregates_or_synthetic_rows(record):
    res, frame = record
    for variant in ("internal", "external"):
        summary = section_text(build_model(res, variant, frame, charts=False), "Summary")
        assert "aggregate" not in summary.lower() and "No row is a real person's record" not in summary
        assert "rows are synthetic" not in summary and "values were changed on purpose" in summary


# ---- 2. the synthesizer's accounting as it composes ------------------------------------------


def _synth_table(model):
    return next(t for t in tables(model, "Privacy accounting") if t["head"][0] == "Measured")


def test_mst_accounting_is_grouped_and_composes_in_zcdp(mst):
    res, frame = mst
    comps = synthesizer_components(res.outcome.public_stats)
    assert len(comps) == len(res.outcome.public_stats["synthesizer_transcript"]) == 4 + 3 + 3
    model = build_model(res, "external", None, charts=False)
    t = _synth_table(model)
    rows = {r[0].text.split(":")[0]: r for r in t["rows"]}
    assert len(t["rows"]) == 4  # three groups and their composition, not one line per release
    assert rows["One-way marginals"][1].text == "4" and rows["Tree edges chosen"][1].text == "3"
    assert rows["Two-way marginals along the tree"][1].text == "3"
    for c in ("age", "grp", "zip", "y"):
        assert c in rows["One-way marginals"][0].text
    # the noise printed is the synthesizer's own record of each release
    one_way_mu = next(c["mu"] for c in comps if ": 1-way " in c["label"])
    assert f"\u03bc = {fmt(one_way_mu)} each" in rows["One-way marginals"][2].text
    assert f"\u03c1 = \u03bc\u00b2/2 = {fmt(one_way_mu**2 / 2)}" in rows["One-way marginals"][2].text
    edge_eps = next(c["epsilon"] for c in comps if "tree edge" in c["label"])
    assert f"\u03b5 = {fmt(edge_eps)} each" in rows["Tree edges chosen"][2].text
    together = rows["Together"][2].text
    proven = res.outcome.public_stats["synthesizer_proven"]
    assert "zero-concentrated DP" in together and f"\u03b5 = {fmt(float(proven['epsilon']))}" in together
    assert f"\u03b4 = {fmt(float(proven['delta']))}" in together
    # no per-release epsilon list that seems to add up to more than the total
    assert "epsilon=" not in model_text(model) and "Synthesizer accounting" in model_text(model)


def test_merf_accounting_composes_in_gaussian_dp(merf):
    res, _ = merf
    model = build_model(res, "internal", None, charts=False)
    t = _synth_table(model)
    comps = synthesizer_components(res.outcome.public_stats)
    assert comps and all(c["mu"] is not None for c in comps)
    assert len(t["rows"]) == len({c["label"] for c in comps}) + 1
    together = t["rows"][-1][2].text
    assert "Gaussian differential privacy" in together
    mu = math.sqrt(sum(c["mu"] ** 2 for c in comps))
    assert f"\u03bc \u2248 {fmt(mu)}" in together


def test_structured_components_are_read_before_the_transcript():
    ps = {
        "synthesizer_transcript": ["X: 1-way a: epsilon=9, delta=1e-06, mu=9"],
        "synthesizer_components": [{"label": "X: 1-way a", "epsilon": 0.5, "delta": 1e-6, "gdp_mu": 0.25}],
    }
    assert synthesizer_components(ps) == [{"label": "X: 1-way a", "epsilon": 0.5, "delta": 1e-6, "mu": 0.25}]


# ---- 3. utility of a synthetic release ---------------------------------------------------------


def test_synthetic_utility_shows_a_code_as_the_table_writes_it(mst):
    """Counting compares "025" and 25 as one category, but the value shown is the table's own
    text: a report that prints 45 for a released "045" describes a value nobody will find."""
    from dataclasses import replace
    from types import SimpleNamespace

    res, _ = mst
    data = res.outcome.data.copy()
    data["grp"] = "045"
    fake = SimpleNamespace(recipe=res.recipe, outcome=SimpleNamespace(data=data, public_stats={}))
    rows = {r[0].text: r[1].text for r in synthetic_utility(fake, None, True)[0].blocks[1].content["rows"]}
    assert rows["grp"] == "1 of 3 categories occurs; most common \u201c045\u201d (100.0 %)"
    # a DP-estimated list (not known to the recipe before the run): no "of N", and one is singular
    cols = tuple(
        replace(c, domain=replace(c.domain, source="dp", categories=None)) if c.name == "grp" else c
        for c in res.recipe.columns
    )
    fake.recipe = replace(res.recipe, columns=cols)
    rows = {r[0].text: r[1].text for r in synthetic_utility(fake, None, True)[0].blocks[1].content["rows"]}
    assert rows["grp"].startswith("1 category occurs; most common \u201c045\u201d")


def test_synthetic_utility_is_synthetic_only_externally(mst):
    res, frame = mst
    ext = build_model(res, "external", frame, charts=False)
    util = section_text(ext, "Utility of the released data")
    assert f"{fmt(len(res.outcome.data))} rows" in util
    rows = {r[0].text: r[1].text for r in tables(ext, "Utility of the released data")[0]["rows"]}
    assert set(rows) == {"age", "grp", "zip", "y"} and "of 3 categories occur" in rows["grp"]
    # the zip list was copied from the data: externally withheld, its length too
    zips = len(res.recipe.column("zip").domain.categories)
    assert rows["zip"] == "withheld: its category list was copied from the data"
    assert not any(z in rows["zip"] for z in res.recipe.column("zip").domain.categories)
    internal_rows = {
        r[0].text: r[1].text
        for r in tables(build_model(res, "internal", frame, charts=False), "Utility of the released data")[0]["rows"]
    }
    assert f"of {zips} categories occur" in internal_rows["zip"]
    assert "Fidelity against the raw data" not in [s.title for s in ext.sections]
    internal = build_model(res, "internal", frame, charts=False)
    fid = section(internal, "Fidelity against the raw data")
    assert fid.internal_only
    fid_rows = {r[0].text: r[1].text for r in tables(internal, "Fidelity against the raw data")[0]["rows"]}
    assert set(fid_rows) == {"age", "grp", "zip", "y"}
    # the grp distance is computed against the raw frame: changing the raw data changes it
    real = frame["grp"].value_counts(normalize=True)
    syn = res.outcome.data["grp"].astype(str).value_counts(normalize=True)
    tvd = 0.5 * (real.reindex(["a", "b", "c"], fill_value=0) - syn.reindex(["a", "b", "c"], fill_value=0)).abs().sum()
    assert fid_rows["grp"] == f"{100 * tvd:.1f} %"
    assert "The internal version adds" in section_text(internal, "Utility of the released data")


def test_synthetic_utility_compares_with_the_noisy_marginals_externally(mst):
    """The published fidelity: each column against the synthesizer's own noisy 1-way release
    (DP outputs both), read from the release as it ran, printed in the external version."""
    res, frame = mst
    fid = res.outcome.public_stats["synthesizer_fidelity"]
    assert set(fid) == {"age", "grp", "zip", "y"}
    ext = build_model(res, "external", frame, charts=False)
    table = tables(ext, "Utility of the released data")[0]
    assert table["head"][-1] == "Distance to the noisy marginal"
    shown = {r[0].text: r[-1].text for r in table["rows"]}
    for col, tvd in fid.items():
        # as the report formats a share (below 0.05 % with two significant digits: a fixed
        # "0.0 %" prefix failed whenever a column's noisy draw fitted that closely)
        assert shown[col].startswith(_pct(tvd) + " ("), (col, shown[col], tvd)


# ---- 4. residual risk as tables ----------------------------------------------------------------


def test_residual_risk_is_tables_not_a_key_dump(record):
    res, frame = record
    model = build_model(res, "internal", frame, charts=False)
    text = section_text(model, "Residual risk estimates")
    assert "Attack" in text and "What it means" in text
    assert "independent randomness" in text
    assert not re.search(r"\bseed\b", text, re.IGNORECASE)  # the simulation's seed is no release's
    assert " / " not in text and "[0]" not in text and "reid_rate" not in text
    risk_table = tables(model, "Residual risk estimates")[0]
    assert risk_table["head"] == ["Attack", "Figure", "What it means"]
    link = res.risk["linkage"]
    assert any(r[1].text.startswith(f"{100 * link['reid_rate']:.1f} %") for r in risk_table["rows"])


# ---- 5. no internal references -----------------------------------------------------------------

INTERNAL_REFERENCE = re.compile(r"seed ?0\d\d|seed_0\d\d|docs/\w+\.md|\bBRIEF\b", re.IGNORECASE)


def bare_theorems(text: str) -> list[str]:
    """Theorems cited without their paper: a "Thm" with no author's year shortly before it."""
    return [
        text[max(0, m.start() - 60) : m.end() + 10]
        for m in re.finditer(r"\b(?:Thm|Theorem|Prop\.|Lemma)\b", text)
        if not re.search(r"(?:19|20)\d\d\b", text[max(0, m.start() - 60) : m.start()].split("\n")[-1])
    ]


@pytest.mark.parametrize("which", ALL_TYPES)
@pytest.mark.parametrize("variant", ["internal", "external"])
def test_no_internal_reference_in_any_report(request, which, variant):
    res, frame = request.getfixturevalue(which)
    text = model_text(build_model(res, variant, frame, charts=False))
    assert not INTERNAL_REFERENCE.search(text), INTERNAL_REFERENCE.search(text)
    assert not bare_theorems(text)


def test_a_documentation_reference_is_dropped_the_paper_kept():
    from dpstudio.report.model import public_text

    assert public_text("lattice bound (docs/mechanisms.md; Canonne, Kamath & Steinke 2020)") == (
        "lattice bound (Canonne, Kamath & Steinke 2020)"
    )
    assert public_text("as in seed 004 (docs/errata.md, E4)") == "as in"


# ---- 6. the operator -------------------------------------------------------------------------


def test_operator_is_printed_and_given_to_the_pdf_writer(tmp_path):
    data, frame = _table_file(tmp_path)
    recipe = _recipe(tmp_path, data, RECORD_ARGS)
    res = execute_release(recipe, output_path=tmp_path / "o.csv", ledger=None, operator="Ada  Lovelace\n")
    model = build_model(res, "external", frame, charts=False)
    assert dict(model.header)["Operator"] == "Ada Lovelace" and model.operator == "Ada Lovelace"
    assert prefs.operator() is None  # a name given to the pipeline is not remembered by it
    res = execute_release(recipe, output_path=tmp_path / "p.csv", ledger=None)
    model = build_model(res, "internal", frame, charts=False)
    assert model.operator is None and dict(model.header)["Operator"].startswith("not recorded")
    prefs.set_operator("Grace Hopper")
    res = execute_release(recipe, output_path=tmp_path / "q.csv", ledger=None)
    assert build_model(res, "internal", frame, charts=False).operator == "Grace Hopper"


def test_cli_operator_is_remembered(tmp_path):
    data, _ = _table_file(tmp_path)
    _recipe(tmp_path, data, RECORD_ARGS)
    args = ["release", str(tmp_path / "recipe.json"), "--no-ledger"]
    assert (
        main(
            [*args, "--output", str(tmp_path / "a.csv"), "--report", str(tmp_path / "a.html"), "--operator", "Kim Lee"]
        )
        == 0
    )
    assert prefs.operator() == "Kim Lee"
    assert "Kim Lee" in (tmp_path / "a.html").read_text(encoding="utf-8")
    assert main([*args, "--output", str(tmp_path / "b.csv"), "--report", str(tmp_path / "b.html")]) == 0
    assert "Kim Lee" in (tmp_path / "b.html").read_text(encoding="utf-8")


# ---- 7. numbers --------------------------------------------------------------------------------


def _shown(text: str) -> tuple[float, float]:
    """The value a printed number stands for and half a unit of its last digit."""
    sup = str.maketrans("\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "-0123456789")
    m = re.fullmatch(r"(-?[0-9][0-9,]*)(?:\.([0-9]+))?(?: \u00d7 10([\u207b\u2070-\u2079\u00b9\u00b2\u00b3]+))?", text)
    assert m, text
    decimals = m.group(2) or ""
    scale = 10.0 ** int(m.group(3).translate(sup)) if m.group(3) else 1.0
    value = float(m.group(1).replace(",", "") + (f".{decimals}" if decimals else "")) * scale
    return value, 0.5 * 10.0 ** -len(decimals) * scale


@settings(max_examples=400, deadline=None)
@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300).filter(
        lambda v: v == 0 or abs(v) > 1e-300  # a subnormal's "× 10⁻³²⁴" cannot be read back in a float
    ),
    st.integers(min_value=1, max_value=6),
)
def test_fmt_never_prints_an_exponent_and_reads_back(x, digits):
    text = fmt(x, digits)
    assert "e+" not in text and "e-" not in text and "E" not in text and "inf" not in text
    value, half = _shown(text)
    assert abs(value - x) <= half * (1 + 1e-9) + abs(x) * 1e-15, (x, text)
    # at most ``digits`` significant digits, but never fewer than the integer part's
    if abs(x) < 1000 and x != round(x):
        shown = text.split(" \u00d7")[0]
        significant = re.sub(r"[^0-9]", "", shown).lstrip("0")
        if "." not in shown:  # a whole number's trailing zeros only hold places
            significant = significant.rstrip("0")
        int_digits = len(str(int(abs(x)))) if abs(x) >= 1 else 0
        assert len(significant) <= max(digits, int_digits), (x, text)


def test_fmt_examples():
    assert fmt(1e-6) == "1 \u00d7 10\u207b\u2076" and fmt(1.000e-6) == fmt(1e-6)
    assert fmt(1.57e8) == "157,000,000" and fmt(0.0) == "0" and fmt(1.0999999999999999) == "1.1"
    assert fmt(0.1974) == "0.1974" and fmt(2.718281828, 3) == "2.72" and fmt(150.3, 2) == "150"
    assert fmt(8.21e-9, 3) == "8.21 \u00d7 10\u207b\u2079" and fmt(12345) == "12,345"


# exponent notation, float noise ("1.0999999999999999", "0.30000000000000004"), long decimals
NUMBER_SMELLS = re.compile(r"\d[eE][+-]?\d|\.\d*9{6,}|[0-9]\.\d*0{6,}[1-9]|[1-9]\.\d{7,}")


@pytest.mark.parametrize("which", ALL_TYPES)
def test_report_numbers_have_sensible_digits(request, which):
    res, frame = request.getfixturevalue(which)
    for variant in ("internal", "external"):
        text = model_text(build_model(res, variant, frame, charts=False))
        text = re.sub(r"\b[0-9a-f]{16,64}\b", "", text)  # hashes and ids are no numbers
        assert not NUMBER_SMELLS.search(text), NUMBER_SMELLS.search(text)
        assert "1 \u00d7 10\u207b\u2076" in text or res.plan.total.delta == 0
        assert "\u03b4 = 1.000e" not in text and "0.00e+00" not in text


# ---- 8. the recipe as an appendix --------------------------------------------------------------


def test_recipe_is_the_last_section_with_relative_paths_and_short_lists(tmp_path):
    zips = [f"{z:05d}" for z in range(995)]
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"zip": rng.choice(zips, 2000), "age": rng.integers(18, 90, 2000)})
    folder = tmp_path / "deep" / "folder"
    folder.mkdir(parents=True)
    data = folder / "zips.csv"
    frame.to_csv(data, index=False)
    zip_list = ",".join(zips)
    recipe = _recipe(
        tmp_path,
        data,
        ["--release", "record", "--epsilon", "1", "--role", "zip=sensitive", "--role", "age=sensitive"]
        + ["--type", "zip=categorical", "--categories", f"zip={zip_list}", "--bounds", "age=0:120"],
    )
    res = execute_release(recipe, output_path=tmp_path / "o.csv", ledger=None)
    for variant in ("internal", "external"):
        model = build_model(res, variant, frame, charts=False)
        last = model.sections[-1]
        assert last.title.startswith("Appendix") and "recipe" in last.title.lower()
        pre = next(b.content for b in last.blocks if b.kind == "pre")
        assert '"path": "zips.csv"' in pre and str(folder) not in pre
        assert "\u2026 (995 in all)" in pre and "00500" not in pre
        assert pre.count("\n") < 200  # not fifteen pages of zip codes
        assert "1e-" not in pre and "e+" not in pre


# ---- 9. the external version names nothing it withholds ----------------------------------------

WITHHELD_WORDS = re.compile(r"internal|steward statistics|residual risk|fidelity|see .risk", re.IGNORECASE)


@pytest.mark.parametrize("which", ALL_TYPES)
def test_external_names_no_withheld_section(request, which):
    res, frame = request.getfixturevalue(which)
    model = build_model(res, "external", frame, charts=False)
    text = model_text(model)
    text = text.replace(model.banner, "")
    assert not WITHHELD_WORDS.search(text), WITHHELD_WORDS.search(text)
    assert "leakage estimate" not in text and "risk estimate" not in text
    body = render(res, "html", variant="external", frame=frame).decode().split("</style>", 1)[1]
    assert "internal-only" not in body and "Fidelity" not in body


# ---- 10. useless releases flagged in the summary -----------------------------------------------


def test_useless_columns_are_flagged_in_the_summary(tmp_path):
    rng = np.random.default_rng(5)
    n = 400
    income = rng.integers(0, 200_000, n)
    income[:100] = 900_000  # a quarter of the rows beyond the bounds: clipped
    frame = pd.DataFrame({"income": income, "age": rng.integers(18, 90, n), "grp": rng.choice(list("abcdefghij"), n)})
    data = tmp_path / "wide.csv"
    frame.to_csv(data, index=False)
    recipe = _recipe(
        tmp_path,
        data,
        ["--release", "record", "--epsilon", "0.05", "--role", "income=sensitive", "--role", "age=sensitive"]
        + ["--role", "grp=sensitive", "--bounds", "income=0:250000", "--bounds", "age=0:120"]
        + ["--categories", "grp=a,b,c,d,e,f,g,h,i,j"],
    )
    res = execute_release(recipe, output_path=tmp_path / "o.csv", ledger=None)
    income_unit = res.plan.unit_of_column("income")
    assert income_unit.expected_error > 250_000  # the premise: error beyond the range
    internal = section_text(build_model(res, "internal", frame, charts=False), "Summary")
    external = section_text(build_model(res, "external", frame, charts=False), "Summary")
    for text in (internal, external):
        # clamping is on by default: the plan's figure is the noise's own size before it (the
        # accuracy table prints the smaller error after clamping), and the sentence says so
        assert (
            f"income: its noise's expected size, {fmt(income_unit.expected_error)} before clamping to the bounds, is"
            in text
        )
        assert "whole range [0, 250,000]" in text and "synthetic data instead" in text
        assert "grp: a released category is wrong" in text
    clipped = res.outcome.steward_stats["columns"]["income"]["clipped"]
    assert clipped >= 100
    assert f"income: {fmt(clipped)} values" in internal and "clipped" in internal
    assert "clipped" not in external  # a raw-data count


def test_a_useful_column_is_not_flagged(tmp_path):
    data, frame = _table_file(tmp_path)
    args = ["--release", "record", "--epsilon", "10", "--role", "pid=identifier", "--role", "age=sensitive"]
    args += ["--bounds", "age=0:120"] + [x for c in ("grp", "zip", "y") for x in ("--role", f"{c}=ignore")]
    res = execute_release(_recipe(tmp_path, data, args), output_path=tmp_path / "o.csv", ledger=None)
    age = res.plan.unit_of_column("age")
    assert age.expected_error < 120
    summary = section_text(build_model(res, "internal", frame, charts=False), "Summary")
    assert "too little accuracy" not in summary and "age: the expected error" not in summary


def test_the_report_states_each_units_post_processing(record):
    """Clamping (on by default for record releases) and the other public post-processing steps
    are printed per unit, from the finalised plan's own ``post_processing``."""
    res, frame = record
    model = build_model(res, "external", frame, charts=False)
    post = [t for t in tables(model, "Mechanisms and parameters") if t["head"][0] == "Unit" and len(t["head"]) == 2]
    assert len(post) == 1
    shown = {r[0].text: r[1].text for r in post[0]["rows"]}
    plan = res.plan
    for u in plan.perturbation_units:
        if u.post_processing:
            assert shown[u.name] == "\n".join(f"\u2022 {step}" for step in u.post_processing)
    numeric = [u for u in plan.perturbation_units if u.mechanism_name in ("laplace", "gaussian")]
    assert numeric and all("nearest bound" in shown[u.name] for u in numeric)


def test_a_column_aim_measures_again_is_its_own_group():
    """AIM may choose a 1-way marginal in a later round: the report lists it apart from the
    initial 1-way releases (it used to be counted with them)."""
    from dpstudio.report.model import synthesizer_groups

    comps = [
        {"label": "AIM: 1-way a", "mu": 0.1, "epsilon": 0.2, "delta": 1e-6},
        {"label": "AIM: 1-way b", "mu": 0.1, "epsilon": 0.2, "delta": 1e-6},
        {"label": "AIM: selection round 1 (exponential mechanism)", "mu": None, "epsilon": 0.1, "delta": 0.0},
        {"label": "AIM: 1-way a (round 1)", "mu": 0.3, "epsilon": 0.5, "delta": 1e-6},
        {"label": "AIM: 2-way a x b", "mu": 0.3, "epsilon": 0.5, "delta": 1e-6},
    ]
    groups = {g["title"]: g for g in synthesizer_groups(comps)}
    assert groups["one-way marginals"]["count"] == 2 and groups["one-way marginals"]["items"] == ["a", "b"]
    again = groups["one-way marginals measured again (chosen in a round)"]
    assert again["count"] == 1 and again["items"] == ["a"] and again["mechanism"] == "Gaussian noise"
