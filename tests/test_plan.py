"""The compiled plan is what runs and what is printed.

* Every release type draws its noise with the mechanism objects of the plan it returns
  (``outcome.final_plan``): a spy on every mechanism class records which object's ``release``
  ran, and each must be the plan unit's own object.  Units that depend on nothing estimated at
  release time are the compiled plan's very objects.
* Over random recipes, what ``recipe check`` prints (epsilon, delta, noise scale, expected error,
  floor) equals the plan's units, and the total equals the accountant's.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpstudio.engine.mechanisms.gaussian import GaussianMechanism
from dpstudio.engine.mechanisms.laplace import LaplaceMechanism
from dpstudio.engine.mechanisms.metric_selection import MetricSelection
from dpstudio.engine.mechanisms.randomized_response import RandomizedResponse
from dpstudio.engine.rng import RandomSource
from dpstudio.pipeline import check_recipe
from dpstudio.plan import compile_plan, execute
from dpstudio.plan.density import DensityRelease
from dpstudio.plan.domains import BoundsEstimate, CategoryDiscovery
from dpstudio.plan.model import GibbsLogisticRelease, LogisticRegressionRelease
from dpstudio.plan.synthetic import SynthesizerRelease
from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Mechanism, Params, Recipe, ReleaseSpec

SPIED = (
    LaplaceMechanism,
    GaussianMechanism,
    RandomizedResponse,
    MetricSelection,
    BoundsEstimate,
    CategoryDiscovery,
    SynthesizerRelease,
    GibbsLogisticRelease,
    LogisticRegressionRelease,
    DensityRelease,
)

N = 200


def _frame() -> pd.DataFrame:
    g = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "age": g.integers(18, 90, N),
            "income": g.uniform(0, 1e5, N),
            "score": g.normal(50, 10, N),
            "city": g.choice(["a", "b", "c"], N),
            "sick": g.choice(["no", "yes"], N),
            "e1": g.normal(size=N),
            "e2": g.normal(size=N),
        }
    )


def _col(name, type_, role, domain=None, mech=None, weight=1.0, group=None, params=None):
    m = Mechanism(mech, weight=weight, params=Params.of(params)) if mech else None
    return Column(
        name, type_, role, domain=domain, mechanism=m, group=group, type_source="confirmed", role_source="confirmed"
    )


def _num(low, high):
    return Domain("numeric", low=low, high=high)


def _cats(*c):
    return Domain("categorical", categories=tuple(c))


DP_INCOME = Domain("numeric", source="dp", cost=Cost(0.3), search_low=0.0, search_high=1e6)
DP_CITY = Domain("categorical", source="dp", cost=Cost(0.3), candidates=("a", "b", "c", "d"), other="d")


def _recipe(rtype, columns, eps=1.0, delta=1e-6, options=None):
    return Recipe(
        InputSpec("x.csv"),
        ReleaseSpec(rtype, Params.of(options)),
        tuple(columns),
        Budget(eps, delta),
        acknowledgements=("embedding-pool-is-dataset",),
    )


RECIPES = {
    "record-laplace-rr-dp-domains": _recipe(
        "record",
        [
            _col("age", "integer", "sensitive", _num(0, 100), "laplace"),
            _col("income", "float", "sensitive", DP_INCOME, "laplace", weight=2.0),
            _col("score", "float", "public"),
            _col("city", "categorical", "sensitive", DP_CITY, "rr"),
            _col("sick", "categorical", "label", _cats("no", "yes"), "rr"),
            _col("e1", "float", "ignore"),
            _col("e2", "float", "ignore"),
        ],
    ),
    "record-two-gaussians-and-embedding": _recipe(
        "record",
        [
            _col("age", "integer", "sensitive", _num(0, 100), "gaussian"),
            _col("income", "float", "sensitive", DP_INCOME, "gaussian"),
            _col("score", "float", "sensitive", _num(0, 100), "gaussian", weight=0.5),
            _col("city", "categorical", "public"),
            _col("sick", "categorical", "public"),
            _col("e1", "float", "embedding", group="emb", mech="metric", params={"pool": "dataset"}),
            _col("e2", "float", "embedding", group="emb", mech="metric", params={"pool": "dataset"}),
        ],
    ),
    "label": _recipe(
        "label",
        [
            _col("age", "integer", "public"),
            _col("income", "float", "public"),
            _col("score", "float", "public"),
            _col("city", "categorical", "public"),
            _col("sick", "categorical", "label", _cats("no", "yes"), "rr"),
            _col("e1", "float", "ignore"),
            _col("e2", "float", "ignore"),
        ],
        delta=0.0,
    ),
    "semi-sensitive": _recipe(
        "semi-sensitive",
        [
            _col("age", "integer", "public"),
            _col("income", "float", "sensitive", _num(0, 1e5), "laplace"),
            _col("score", "float", "public"),
            _col("city", "categorical", "public"),
            _col("sick", "categorical", "label", _cats("no", "yes"), "rr", weight=3.0),
            _col("e1", "float", "ignore"),
            _col("e2", "float", "ignore"),
        ],
        delta=0.0,
    ),
    "synthetic": _recipe(
        "synthetic",
        [
            _col("age", "integer", "sensitive", _num(0, 100)),
            _col("income", "float", "sensitive", DP_INCOME),
            _col("score", "float", "ignore"),
            _col("city", "categorical", "public", _cats("a", "b", "c")),
            _col("sick", "categorical", "label", _cats("no", "yes")),
            _col("e1", "float", "ignore"),
            _col("e2", "float", "ignore"),
        ],
        options={"method": "mst"},
    ),
    "model": _recipe(
        "model",
        [
            _col("age", "integer", "sensitive", _num(0, 100)),
            _col("income", "float", "sensitive", DP_INCOME),
            _col("score", "float", "public", _num(0, 100)),
            _col("city", "categorical", "ignore"),
            _col("sick", "categorical", "label", _cats("no", "yes")),
            _col("e1", "float", "ignore"),
            _col("e2", "float", "ignore"),
        ],
        eps=2.0,
        delta=1e-5,
    ),
    "density": _recipe(
        "density",
        [
            _col("age", "integer", "public"),
            _col("income", "float", "sensitive", DP_INCOME),
            _col("score", "float", "sensitive", _num(0, 100)),
            _col("city", "categorical", "ignore"),
            _col("sick", "categorical", "ignore"),
            _col("e1", "float", "ignore"),
            _col("e2", "float", "ignore"),
        ],
        options={"grid_size": 16},
    ),
}


@pytest.fixture
def spy(monkeypatch):
    """Records every object whose ``release`` draws noise, in order."""
    drew: list = []
    for cls in SPIED:
        real = cls.release

        def release(self, *a, _real=real, **k):
            drew.append(self)
            return _real(self, *a, **k)

        monkeypatch.setattr(cls, "release", release)
    return drew


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_object_that_drew_each_units_noise_is_the_plans(name, spy):
    recipe = RECIPES[name]
    plan = compile_plan(recipe)
    outcome = execute(plan, _frame(), RandomSource(seed=3))
    final = outcome.final_plan
    assert final is not None and final.final
    # every unit that draws noise drew it with the final plan's own object, exactly once
    drawing = [u for u in final.units if u.mechanism is not None]
    assert drawing and {u.name for u in drawing} == set(outcome.drawn_by)
    for u in drawing:
        assert outcome.drawn_by[u.name] is u.mechanism, u.name
        assert sum(obj is u.mechanism for obj in spy) == 1, u.name
    # and no other object drew anything
    assert all(any(obj is u.mechanism for u in drawing) for obj in spy)
    # the domain estimates ran first, with the compiled plan's objects
    domain = [u for u in plan.units if u.kind == "domain"]
    assert spy[: len(domain)] == [u.mechanism for u in domain]
    # a unit that depends on no estimate (and no pool) is the compiled plan's very object
    for u in plan.units:
        if u.mechanism is not None and not u.provisional:
            assert final.unit(u.name).mechanism is u.mechanism, u.name
    # the run never spends more than the compiled plan (what the ledger reserves)
    assert final.total.epsilon <= plan.total.epsilon * (1 + 1e-12)
    assert final.total.delta <= plan.total.delta * (1 + 1e-12) + 1e-300


def test_without_estimates_the_plan_that_ran_is_the_compiled_plan(spy):
    recipe = RECIPES["semi-sensitive"]
    plan = compile_plan(recipe)
    outcome = execute(plan, _frame(), RandomSource(seed=1))
    assert outcome.final_plan is plan


def test_provisional_units_are_finalised_on_the_estimate(spy):
    plan = compile_plan(RECIPES["record-laplace-rr-dp-domains"])
    assert [u.name for u in plan.units if u.provisional] == ["income", "city"]
    assert not plan.final
    outcome = execute(plan, _frame(), RandomSource(seed=2))
    final = outcome.final_plan
    low, high = final.unit("income").domain
    assert [low, high] == outcome.steward_stats["dp_domain:income"]
    # the scale that ran is the one calibrated on the estimated bounds, read off the object that drew
    assert final.unit("income").noise.scale == final.unit("income").mechanism.scale
    assert final.unit("income").noise.scale <= plan.unit("income").noise.scale


# ---- what is printed is the plan ---------------------------------------------------------------


def _unit_figures(u) -> dict:
    keys = (
        "epsilon",
        "delta",
        "scale",
        "sigma",
        "grid_step",
        "keep_probability",
        "other_probability",
        "expected_error",
        "clamped_error",
        "floor",
    )
    return {k: u[k] for k in keys if k in u}


def _plan_figures(u) -> dict:
    out = {"epsilon": u.epsilon, "delta": u.delta, **u.noise.items()}
    if u.expected_error is not None:
        out["expected_error"] = u.expected_error
    if u.clamped_error is not None:
        out["clamped_error"] = u.clamped_error
    if u.floor is not None:
        out["floor"] = u.floor
    return {
        k: v
        for k, v in out.items()
        if k
        in (
            "epsilon",
            "delta",
            "scale",
            "sigma",
            "grid_step",
            "keep_probability",
            "other_probability",
            "expected_error",
            "clamped_error",
            "floor",
        )
    }


_NUMERIC = st.tuples(
    st.sampled_from(["laplace", "gaussian"]),
    st.sampled_from(["integer", "float"]),
    st.floats(-1e4, 1e4),
    st.floats(1.0, 1e5),
    st.floats(0.1, 10.0),
)
_CATEGORICAL = st.tuples(st.just("rr"), st.integers(2, 40), st.floats(0.1, 10.0))


@st.composite
def _random_recipe(draw):
    rtype = draw(st.sampled_from(["record", "label", "semi-sensitive"]))
    cols = []
    for i, (mech, typ, low, width, w) in enumerate(draw(st.lists(_NUMERIC, min_size=0, max_size=4))):
        role = "sensitive" if rtype != "label" else "public"
        cols.append(
            _col(
                f"n{i}",
                typ,
                role,
                _num(low, low + width) if role == "sensitive" else None,
                mech if role == "sensitive" else None,
                weight=w,
            )
        )
    for i, (mech, k, w) in enumerate(draw(st.lists(_CATEGORICAL, min_size=0, max_size=3))):
        role = "sensitive" if rtype != "label" else "public"
        cats = tuple(f"c{j}" for j in range(k))
        cols.append(
            _col(
                f"c{i}",
                "categorical",
                role,
                _cats(*cats) if role == "sensitive" else None,
                mech if role == "sensitive" else None,
                weight=w,
            )
        )
    label_w = draw(st.floats(0.1, 10.0))
    cols.append(_col("y", "categorical", "label", _cats("no", "yes"), "rr", weight=label_w))
    eps = draw(st.floats(0.05, 20.0))
    gauss = any(c.mechanism is not None and c.mechanism.name == "gaussian" for c in cols)
    delta = draw(st.sampled_from([1e-8, 1e-6])) if gauss else draw(st.sampled_from([0.0, 1e-7]))
    return _recipe(rtype, cols, eps=eps, delta=delta)


@st.composite
def _random_central_recipe(draw):
    """synthetic, model or density: numeric and categorical columns with public or DP domains."""
    rtype = draw(st.sampled_from(["synthetic", "model", "density"]))
    n_num = draw(st.integers(1 if rtype != "density" else 1, 2 if rtype == "density" else 3))
    cols = []
    for i in range(n_num):
        low = draw(st.floats(-1e3, 1e3))
        width = draw(st.floats(1.0, 1e4))
        dom = (
            Domain(
                "numeric", source="dp", cost=Cost(draw(st.floats(0.05, 1.0))), search_low=low, search_high=low + width
            )
            if draw(st.booleans())
            else _num(low, low + width)
        )
        cols.append(_col(f"n{i}", draw(st.sampled_from(["integer", "float"])), "sensitive", dom))
    if rtype != "density":
        cols.append(_col("y", "categorical", "label", _cats("no", "yes")))
    options = {
        "synthetic": {"method": draw(st.sampled_from(["mst", "merf", "pearl"]))},
        "model": {"norm_bound": draw(st.floats(0.5, 4.0))},
        "density": {"grid_size": draw(st.integers(8, 64))},
    }[rtype]
    eps = draw(st.floats(0.05, 10.0))
    if rtype == "synthetic":  # the typed epsilon is the total: domain estimates are paid out of it
        eps += sum(c.domain.cost.epsilon for c in cols if c.domain is not None and c.domain.cost is not None)
    return _recipe(rtype, cols, eps=eps, delta=draw(st.sampled_from([1e-8, 1e-6])), options=options)


def _shows(text: str, value: float) -> bool:
    """Whether a cell ("≤ 1,234.5", "33.9 %", "b = 22.5", "2.6e+06", "1.5 × 10⁻⁶") prints ``value`` to the
    digits it shows (within half a unit of its last digit)."""
    import re

    # the report's small numbers read "1.5 × 10⁻⁶" (dpstudio.report.model.fmt): as "1.5e-6"
    sup = str.maketrans("\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "-0123456789")
    power = r" \u00d7 10([\u207b\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+)"
    plain = re.sub(power, lambda e: "e" + e[1].translate(sup), text)
    m = re.search(r"(-?[0-9][0-9,]*)(?:\.([0-9]+))?(?:e([-+]?[0-9]+))?", plain.replace("\u2212", "-"))
    assert m, text
    whole, decimals, exp = m.group(1).replace(",", ""), m.group(2) or "", int(m.group(3) or 0)
    scale = (0.01 if "%" in text else 1.0) * 10.0**exp
    shown = float(f"{whole}.{decimals}" if decimals else whole) * scale
    return abs(shown - value) <= 0.5 * 10.0 ** -len(decimals) * scale * (1 + 1e-9) + 1e-12


def _report_and_wizard_print_the_plan(recipe, plan) -> None:
    """The report's Accuracy and Mechanisms tables and the wizard's budget table print the plan's
    units' own figures: a row per unit, each cell the unit's field as formatted (and parsing
    back to it)."""
    from dpstudio.gui.charts import preview
    from dpstudio.pipeline import ReleaseResult
    from dpstudio.plan import ReleaseOutcome
    from dpstudio.report.model import build_model

    result = ReleaseResult(
        recipe=recipe,
        plan=plan,
        outcome=ReleaseOutcome(),
        schema=None,
        dataset_name="x.csv",
        input_sha256="0" * 64,
        release_id="property",
        started_at="2026-01-01T00:00:00+00:00",
        randomness="test",
        output_path="out.csv",
    )
    model = build_model(result, "internal", charts=False)
    tables = {s.title: [b.content for b in s.blocks if b.kind == "table"] for s in model.sections if s.blocks}
    accuracy = {r[0].text: r for t in tables.get("Accuracy", []) for r in t["rows"]}
    # the section's mechanisms table (the post-processing table below it is keyed by unit too)
    mechanisms = {
        r[0].text: r
        for t in tables.get("Mechanisms and parameters", [])
        if t["head"][:2] == ["Unit", "Mechanism"]
        for r in t["rows"]
    }
    for u in plan.units:
        if u.kind == "domain":
            continue
        assert u.name in mechanisms, u.name
        assert _shows(mechanisms[u.name][2].text, u.epsilon), u.name
        if u.kind == "perturbation" and u.expected_error is not None and u.floor is not None:
            row = accuracy[u.name]
            assert _shows(row[3].text, u.shown_error) and _shows(row[4].text, u.floor), u.name
    for u in plan.perturbation_units:  # the wizard's budget table
        if u.expected_error is not None:
            assert _shows(preview.error_text(u), u.shown_error), u.name
        if u.noise.scale is not None:
            assert _shows(preview.noise_text(u), u.noise.scale), u.name
        elif u.noise.sigma is not None:
            assert _shows(preview.noise_text(u), u.noise.sigma), u.name
        assert _shows(preview.fmt_epsilon(u.epsilon), u.epsilon), u.name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_random_recipe(), _random_central_recipe()))
def test_recipe_check_prints_the_plans_numbers(recipe):
    plan = compile_plan(recipe)
    checked = json.loads(json.dumps(check_recipe(recipe)))  # as the CLI prints it
    assert checked["valid"]
    assert checked["total"]["epsilon"] == plan.total.epsilon and checked["total"]["delta"] == plan.total.delta
    printed = {u["unit"]: u for u in checked["units"]}
    assert set(printed) == {u.name for u in plan.units}
    for u in plan.units:
        assert _unit_figures(printed[u.name]) == _plan_figures(u), u.name
    # the units' own figures are their mechanism objects' (never recomputed beside them)
    for u in plan.units:
        m = u.mechanism
        if m is None:
            continue
        assert (u.epsilon, u.delta) == (m.privacy_loss().epsilon, m.privacy_loss().delta)
    for u in plan.perturbation_units:
        m = u.mechanism
        assert u.expected_error == m.expected_error()
        assert u.clamped_error is None or u.clamped_error == m.clamped_error()
        assert (u.epsilon, u.delta) == (m.privacy_loss().epsilon, m.privacy_loss().delta)
        attrs = {
            "scale": "scale",
            "sigma": "sigma",
            "grid_step": "step",
            "keep_probability": "keep",
            "other_probability": "p",
            "categories": "n_categories",
        }
        for field, attr in attrs.items():
            assert getattr(u.noise, field) == getattr(m, attr, None), (u.name, field)
    # the total never exceeds the budget plus the stated costs of the DP domain estimates
    domain_eps = sum(u.epsilon for u in plan.units if u.kind == "domain")
    assert plan.total.epsilon <= (recipe.budget.epsilon + domain_eps) * (1 + 1e-9)
    _report_and_wizard_print_the_plan(recipe, plan)
    if plan.label is not None:
        lab = plan.unit_of_column("y")
        assert plan.label.label_unit_epsilon == lab.epsilon
        assert math.isclose(checked["label_guarantee"]["label_epsilon"], plan.label.epsilon)


def test_the_label_guarantee_is_the_whole_total():
    """Every unit of a label or semi-sensitive release may inform about the label: a DP estimate
    of the label's categories counts, and a jointly calibrated Gaussian group counts with its
    joint conversion (adding the units' own epsilons would overstate, leaving estimates out
    would understate)."""
    discovered = Domain("categorical", source="dp", cost=Cost(0.5, 1e-7), other="other")
    label = _recipe("label", [_col("age", "integer", "public"), _col("sick", "categorical", "label", discovered, "rr")])
    plan = compile_plan(label)
    assert plan.total.epsilon == pytest.approx(1.5)
    assert plan.label.epsilon == plan.total.epsilon and plan.label.delta == plan.total.delta
    assert plan.label.label_unit_epsilon == pytest.approx(1.0)
    semi = _recipe(
        "semi-sensitive",
        [
            _col("age", "integer", "sensitive", _num(0, 100), "gaussian"),
            _col("score", "float", "sensitive", _num(0, 100), "gaussian"),
            _col("city", "categorical", "public"),
            _col("sick", "categorical", "label", _cats("no", "yes"), "rr"),
        ],
    )
    plan = compile_plan(semi)
    own = sum(u.epsilon for u in plan.perturbation_units)
    assert own > plan.total.epsilon  # the joint group's units' own epsilons add up to more
    assert plan.label.epsilon == plan.total.epsilon <= 1.0 * (1 + 1e-9)
    assert plan.label.delta == plan.total.delta > 0


def test_a_discovered_category_list_shows_a_true_worst_case_or_none(spy):
    """Planned on its candidates plus 'other' (what the run can keep at most), a DP category list's
    worst case is never exceeded by the list that runs; with no candidates nothing is a worst
    case, so no figure is shown."""
    with_candidates = RECIPES["record-laplace-rr-dp-domains"]
    plan = compile_plan(with_candidates)
    city = plan.unit("city")
    assert city.provisional and city.categories_count == len(DP_CITY.candidates)  # 'd' is 'other'
    outcome = execute(plan, _frame(), RandomSource(seed=4))
    ran = outcome.final_plan.unit("city")
    assert ran.categories_count <= city.categories_count
    assert ran.expected_error <= city.expected_error
    no_list = Domain("categorical", source="dp", cost=Cost(0.3, 1e-6))
    cols = [
        c if c.name != "city" else _col("city", "categorical", "sensitive", no_list, "rr")
        for c in with_candidates.columns
    ]
    unit = compile_plan(_recipe("record", cols)).unit("city")
    assert unit.expected_error is None and unit.noise.items() == {} and unit.categories_count is None
    assert "worst_case_expected_error" not in unit.to_json()


def test_the_risk_view_simulates_the_release_that_ran(tmp_path, monkeypatch):
    """The internal report's linkage attack runs on a simulated release; with DP-estimated bounds
    it must use the bounds (hence the scales) the release used, not estimate its own."""
    import dpstudio.risk as risk
    from dpstudio.pipeline import execute_release

    frame = _frame()
    data = tmp_path / "x.csv"
    frame.to_csv(data, index=False)
    recipe = RECIPES["record-laplace-rr-dp-domains"]
    recipe = replace(recipe, input=replace(recipe.input, path=str(data)))
    simulated: list = []
    real = risk.linkage_of_plan

    def spy_simulation(plan, f, seed=0, **kw):
        simulated.append(plan)
        return real(plan, f, seed, **kw)

    monkeypatch.setattr(risk, "linkage_of_plan", spy_simulation)
    result = execute_release(
        recipe, output_path=tmp_path / "out.csv", report_path=tmp_path / "r.html", ledger=None, with_risk=True
    )
    assert result.report_error is None and simulated
    ran, sim = result.plan.unit("income"), simulated[0].unit("income")
    assert sim.domain == ran.domain and sim.noise.scale == ran.noise.scale
    assert simulated[0].unit("city").categories_count == result.plan.unit("city").categories_count


@pytest.mark.parametrize(
    ("change", "field", "page"),
    [
        (lambda r: replace(r, release=replace(r.release, options=Params.of({"method": "nope"}))), "release", "release"),
        # a model needs >= 2 label categories (3 are one-vs-rest since issue 22)
        (lambda r: r.with_column("sick", domain=_cats("no")), "column:sick", "columns"),
    ],
)
def test_the_compilers_refusals_are_typed_problems(change, field, page):
    """What only the compiler refuses (release options, a model's two label categories) reaches the
    wizard as a Problem on the page that fixes it, not as an untyped error with nothing listed."""
    from dpstudio.plan import plan_problems

    base = RECIPES["synthetic"] if field == "release" else RECIPES["model"]
    problems = plan_problems(change(base))
    assert len(problems) == 1 and problems[0].field == field and problems[0].page == page


def test_the_typed_epsilon_is_the_total_of_a_synthetic_release(tmp_path):
    """DP domain estimates are paid out of the budget the user typed, not added on top: the plan's
    total and the ledger's record are the typed (epsilon, delta); the synthesizer gets what the
    estimates leave (in zCDP: the rho they leave), and a budget they use up is refused."""
    from dpstudio.errors import RecipeError
    from dpstudio.ledger import Ledger
    from dpstudio.pipeline import execute_release

    dp_age = Domain("numeric", source="dp", cost=Cost(0.1), search_low=0.0, search_high=128.0)
    no_list = Domain("categorical", source="dp", cost=Cost(1.0, 1e-7))
    cols = [
        _col("age", "integer", "sensitive", dp_age),
        _col("city", "categorical", "sensitive", DP_CITY),
        _col("sick", "categorical", "sensitive", no_list),
    ]
    recipe = _recipe("synthetic", cols, eps=2.0, delta=1e-6, options={"method": "mst"})
    plan = compile_plan(recipe)
    assert plan.total.epsilon == pytest.approx(2.0) and plan.total.delta == pytest.approx(1e-6)
    synth = plan.units[-1]
    assert synth.kind == "synthesizer"
    # the estimates take the plan's domain share (10 %) of rho, the synthesizer the rest
    rho = [u.loss.zcdp_rho for u in plan.units]
    assert sum(rho[:-1]) == pytest.approx(0.1 * sum(rho)) and synth.loss.zcdp_rho == pytest.approx(0.9 * sum(rho))
    assert synth.epsilon < 2.0 and synth.delta < 1e-6
    data = tmp_path / "x.csv"
    # 25 copies: each city's count (~1,700) is far above the discovery threshold (~2.2 sigma,
    # sigma ~35 for city's small part of the share), so no draw can drop every category
    pd.concat([_frame()[["age", "city", "sick"]]] * 25).to_csv(data, index=False)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    res = execute_release(replace(recipe, input=InputSpec(str(data))), output_path=tmp_path / "o.csv", ledger=ledger)
    assert res.plan.total.epsilon == pytest.approx(2.0) and res.plan.total.delta == pytest.approx(1e-6)
    assert res.recorded_total.epsilon == pytest.approx(2.0) and res.recorded_total.delta == pytest.approx(1e-6)
    # an estimate made before the release keeps its recorded cost: one that used the whole
    # budget leaves nothing for the synthesizer
    done = replace(no_list, categories=("no", "yes"))
    cols_done = [*cols[:2], _col("sick", "categorical", "sensitive", done)]
    with pytest.raises(RecipeError, match="nothing is left for the synthesizer"):
        compile_plan(replace(recipe, columns=tuple(cols_done), budget=Budget(1.0, 1e-6)))
