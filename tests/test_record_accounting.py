"""Record releases: the printed scale is the one that ran (DP-estimated bounds), and several
Gaussian columns are calibrated jointly in zCDP instead of splitting (eps, delta)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from dpstudio.engine.accounting import (
    RDP_ORDERS,
    gdp_delta,
    rdp_to_dp,
    zcdp_epsilon,
    zcdp_rho_for,
)
from dpstudio.engine.mechanisms.gaussian import GaussianMechanism
from dpstudio.engine.mechanisms.laplace import LaplaceMechanism
from dpstudio.plan import record
from dpstudio.recipe.model import (
    Budget,
    Column,
    Cost,
    Domain,
    InputSpec,
    Mechanism,
    Params,
    Randomness,
    Recipe,
    ReleaseSpec,
)


def _num(name, low=0.0, high=100.0, mech="gaussian", weight=1.0):
    return Column(
        name,
        "float",
        "sensitive",
        domain=Domain("numeric", low=low, high=high),
        mechanism=Mechanism(mech, weight=weight),
        type_source="confirmed",
        role_source="confirmed",
    )


def _recipe(columns, eps=1.0, delta=1e-6, path="data.csv", seed=None):
    return Recipe(
        input=InputSpec(path=str(path)),
        release=ReleaseSpec("record"),
        columns=tuple(columns),
        budget=Budget(eps, delta),
        randomness=Randomness(seed=seed),
    )


# ---------------------------------------------------------------- joint Gaussian calibration


@pytest.fixture(scope="module")
def four_gaussians():
    r = _recipe([_num(c) for c in "abcd"])
    return r, record.compile(r)


def test_four_gaussian_columns_get_less_noise_for_the_same_budget(four_gaussians):
    r, p = four_gaussians
    old = GaussianMechanism(epsilon=0.25, delta=2.5e-7, low=0, high=100)  # the former per-column share
    sigmas = [m["sigma"] for m in p.mechanisms]
    assert len(set(sigmas)) == 1
    # zCDP split of rho instead of (eps, delta): sigma(new)/sigma(old) = 0.546 at (1, 1e-6), k = 4
    assert 0.53 < sigmas[0] / old.sigma < 0.56
    assert p.total.epsilon <= 1.0 and p.total.delta <= 1e-6
    assert p.composition.method == "zcdp+basic"  # tighter than rdp on the order grid, and basic


def test_joint_total_holds_by_independent_methods(four_gaussians):
    _, p = four_gaussians
    D = np.array([m["diam_steps"] for m in p.mechanisms])
    sig = np.array([m["sigma_steps"] for m in p.mechanisms])
    rho = float(np.sum(D**2 / (2 * sig**2)))
    # 1. RDP curves alpha * rho summed and converted on a fine order grid (not the calibration's grid)
    orders = np.arange(1.001, 400.0, 0.001)
    assert rdp_to_dp(rho * orders, 1e-6, orders=orders) <= 1.0 + 1e-9
    # 2. the continuous-Gaussian GDP profile of the same sigmas, closed form and by numerical
    #    integration of the privacy-loss distribution L ~ N(mu^2/2, mu^2)
    mu = math.sqrt(2 * rho)
    assert gdp_delta(mu, 1.0) <= 1e-6

    def delta_integrand(loss):
        return -math.expm1(1.0 - loss) * stats.norm.pdf(loss, mu * mu / 2, mu)

    num, _ = integrate.quad(delta_integrand, 1.0, mu * mu / 2 + 40 * mu, epsabs=1e-14, limit=200)
    assert num == pytest.approx(gdp_delta(mu, 1.0), rel=1e-6)
    assert num <= 1e-6


def test_basic_composition_of_the_same_sigmas_prints_far_more(four_gaussians):
    _, p = four_gaussians
    basic_eps, basic_delta = p.composition.alternatives["basic"]
    # each column alone is (0.51, 2.5e-7)-DP: adding them up would print eps = 2.04 for what is eps = 1
    assert basic_eps > 2.0 and basic_delta == pytest.approx(1e-6)
    # and the former per-column sigmas were worth eps ~ 0.52 together, while printed as eps = 1
    old = GaussianMechanism(epsilon=0.25, delta=2.5e-7, low=0, high=100)
    assert zcdp_epsilon(4 * old.diam_steps**2 / (2 * old.sigma_steps**2), 1e-6) < 0.6


def test_discrete_gaussians_meet_the_target_at_every_shift():
    # rigorous claim checked exactly on a small grid: two discrete Gaussian columns calibrated on
    # rho shares; delta(eps) of the 2-D product, summed over Z^2, for every integer shift vector
    eps, delta = 1.0, 1e-6
    rho = zcdp_rho_for(eps, delta) * (1 - 1e-9)
    mechs = [
        GaussianMechanism(delta=delta / 2, low=0, high=4, integer=True, grid_bits=2, rho=rho / 2) for _ in range(2)
    ]
    D, s2 = mechs[0].diam_steps, mechs[0].sigma_steps ** 2
    half = int(14 * math.sqrt(s2)) + D + 1
    x = np.arange(-half, half + 1, dtype=float)
    p1 = np.exp(-(x**2) / (2 * s2))
    p1 /= p1.sum()
    worst = 0.0
    for a in range(D + 1):
        for b in range(D + 1):
            if a == b == 0:
                continue
            q1a, q1b = np.roll(p1, a), np.roll(p1, b)  # support padded by D: no wrap-around mass
            diff = np.outer(p1, p1) - math.e**eps * np.outer(q1a, q1b)
            worst = max(worst, float(diff[diff > 0].sum()))
    assert worst <= delta
    assert worst > delta / 20  # the calibration is not vacuous


def test_weights_share_rho_and_mixed_units_stay_within_budget():
    cols = [
        _num("a", weight=3.0),
        _num("b"),
        _num("c", mech="laplace"),
        Column(
            "k",
            "categorical",
            "sensitive",
            domain=Domain("categorical", categories=("x", "y", "z")),
            mechanism=Mechanism("rr"),
            type_source="confirmed",
            role_source="confirmed",
        ),
    ]
    r = _recipe(cols, eps=2.0, delta=1e-7)
    p = record.compile(r)
    by = {m["unit"]: m for m in p.mechanisms}
    assert by["a"]["zcdp_rho"] == pytest.approx(3 * by["b"]["zcdp_rho"], rel=1e-9)
    assert by["b"]["sigma"] / by["a"]["sigma"] == pytest.approx(math.sqrt(3), rel=1e-6)
    # the Gaussian group spends its share 2 * 4/6; Laplace and RR 2/6 each, pure DP
    assert by["c"]["epsilon"] == pytest.approx(2 / 6) and by["k"]["epsilon"] == pytest.approx(2 / 6)
    assert p.total.epsilon <= 2.0 and p.total.delta <= 1e-7
    assert p.composition.method == "zcdp+basic"
    assert p.total.epsilon == pytest.approx(2.0, rel=1e-6)


def test_a_single_gaussian_keeps_its_exact_calibration():
    r = _recipe([_num("a"), _num("c", mech="laplace")])
    p = record.compile(r)
    g = next(m for m in p.mechanisms if m["mechanism"] == "gaussian")
    assert "zcdp_rho" not in g
    assert g["sigma"] == GaussianMechanism(epsilon=0.5, delta=1e-6, low=0, high=100).sigma
    assert p.composition.method == "basic" and p.total.epsilon == pytest.approx(1.0)


# ---------------------------------------------------------------- DP-estimated bounds


def _dp_income(mech="laplace"):
    d = Domain("numeric", source="dp", cost=Cost(0.5, 0.0), search_low=0.0, search_high=1_000_000.0)
    return Column(
        "income",
        "float",
        "sensitive",
        domain=d,
        mechanism=Mechanism(mech),
        type_source="confirmed",
        role_source="confirmed",
    )


def test_plan_with_dp_bounds_gives_only_the_worst_case_scale():
    from dpstudio.pipeline import check_recipe

    r = _recipe([_dp_income()], eps=1.0, delta=0.0)
    m = record.compile(r).mechanisms[0]
    worst = LaplaceMechanism(epsilon=1.0, low=0.0, high=1_000_000.0)
    assert m["scale_depends_on_estimate"] is True
    assert "scale" not in m and "expected_error" not in m
    assert m["worst_case_scale"] == worst.scale
    assert "worst case" in m["note"]
    out = check_recipe(r)
    unit = next(u for u in out["units"] if u["kind"] == "perturbation")
    assert unit["worst_case_scale"] == worst.scale and "scale" not in unit
    assert any("worst case" in n for n in out["notes"])


@pytest.fixture(scope="module")
def dp_bounds_release(tmp_path_factory):
    from dpstudio.pipeline import execute_release

    tmp = tmp_path_factory.mktemp("dpb")
    n = 40_000
    g = np.random.default_rng(1)
    pd.DataFrame({"income": g.uniform(20_000, 60_000, n).round(2)}).to_csv(tmp / "d.csv", index=False)
    r = _recipe([_dp_income()], eps=1.0, delta=0.0, path=tmp / "d.csv", seed=7)
    # the raw noise is measured below: clamping (on by default) would shrink it near the bounds
    r = replace(r, release=ReleaseSpec("record", options=Params.of({"clamp_to_bounds": False})))
    res = execute_release(r, output_path=tmp / "o.csv", with_risk=False)
    raw = pd.read_csv(tmp / "d.csv")["income"].to_numpy()
    out = pd.read_csv(tmp / "o.csv")["income"].to_numpy()
    return res, raw, out


def test_release_reports_the_scale_that_ran(dp_bounds_release):
    res, raw, out = dp_bounds_release
    low, high = res.outcome.steward_stats["dp_domain:income"]
    ran = LaplaceMechanism(epsilon=1.0, low=low, high=high)
    m = res.plan.mechanisms[0]
    assert "scale_depends_on_estimate" not in m
    assert m["scale"] == ran.scale and m["expected_error"] == ran.expected_error()
    assert m["domain"] == [low, high]
    assert m["scale"] < 0.5 * LaplaceMechanism(epsilon=1.0, low=0.0, high=1e6).scale
    # what was printed is what the noise shows (mean |noise| of a discrete Laplace = expected_error)
    inside = (raw >= low) & (raw <= high)
    emp = float(np.mean(np.abs(out[inside] - raw[inside])))
    assert emp == pytest.approx(m["expected_error"], rel=0.05)
    assert res.plan.total.epsilon == pytest.approx(1.5)  # perturbation + the bounds estimate


def test_report_prints_the_final_scale(dp_bounds_release):
    from dpstudio.report.model import build_model, fmt

    res, _, _ = dp_bounds_release
    low, high = res.outcome.steward_stats["dp_domain:income"]
    ran = LaplaceMechanism(epsilon=1.0, low=low, high=high)
    model = build_model(res, "internal", None, charts=False)
    sec = next(s for s in model.sections if s.title == "Mechanisms and parameters")
    table = next(b for b in sec.blocks if b.kind == "table")
    params = table.content["rows"][0][4].text
    assert f"Laplace scale b = {fmt(ran.scale)}" in params
    assert table.content["rows"][0][5].text == fmt(ran.expected_error())
    assert "worst case" not in params


def test_report_of_a_provisional_plan_says_worst_case(dp_bounds_release):
    # a plan made before the estimate (e.g. a dry run) never presents the search-range scale as the scale
    from dataclasses import replace

    from dpstudio.report.model import build_model, fmt

    res, _, _ = dp_bounds_release
    provisional = record.compile(res.recipe)
    model = build_model(replace(res, plan=provisional), "internal", None, charts=False)
    sec = next(s for s in model.sections if s.title == "Mechanisms and parameters")
    row = next(b for b in sec.blocks if b.kind == "table").content["rows"][0]
    worst = LaplaceMechanism(epsilon=1.0, low=0.0, high=1e6).scale
    assert f"Laplace scale b \u2264 {fmt(worst)} (worst case" in row[4].text
    assert "Laplace scale b =" not in row[4].text and row[5].text.startswith("\u2264")


# ---------------------------------------------------------------- the GUI preview (numpy only)


def test_preview_errors_match_the_joint_calibration(four_gaussians):
    from dpstudio.gui.charts.preview import plan_curves, preview_units

    r, p = four_gaussians
    units, _ = preview_units(p)
    curves = plan_curves(p, np.array([0.5, 1.0, 2.0]))
    err = np.array([curves.errors[u.name] for u in units])
    floor = np.array([curves.floors[u.name] for u in units])
    # the curves are the plan's own figures (the discrete Gaussians jointly calibrated), not a closed form
    assert list(err[:, 1]) == [u.shown_error for u in p.perturbation_units]
    assert list(floor[:, 1]) == [u.floor for u in p.perturbation_units]
    assert np.all(np.diff(err, axis=1) < 0) and np.all(floor < err)


def test_preview_marks_dp_bounds_as_worst_case():
    from dpstudio.gui.charts.preview import preview_units

    units, notes = preview_units(record.compile(_recipe([_dp_income(), _num("a", mech="laplace")], delta=0.0)))
    by = {u.name: u for u in units}
    assert by["income"].worst_case and not by["a"].worst_case
    assert any("income" in n and "worst case" in n for n in notes)


def test_run_never_spends_more_than_the_plan_reserved(four_gaussians, monkeypatch):
    from dataclasses import replace

    from dpstudio.engine.rng import RandomSource

    r, p = four_gaussians
    frame = pd.DataFrame({c: np.linspace(0, 100, 50) for c in "abcd"})
    out = record.execute(p, frame, RandomSource(1))
    assert out.final_plan.total.epsilon <= p.total.epsilon
    assert [m["sigma"] for m in out.final_plan.mechanisms] == [m["sigma"] for m in p.mechanisms]
    # a finalised plan that would spend more than the compiled one (the ledger's reservation) is
    # refused before any noise is drawn
    dearer = record.compile(replace(r, budget=Budget(2.0, 1e-6)))
    monkeypatch.setattr(record, "finalise", lambda plan, recipe, frame: dearer)
    with pytest.raises(RuntimeError, match="more than planned"):
        record.execute(p, frame, RandomSource(1))


def test_gaussian_from_a_rho_share_states_what_it_samples():
    from dpstudio.engine.rng import RandomSource

    m = GaussianMechanism(delta=1e-7, low=0, high=10, rho=0.01)
    loss = m.privacy_loss()
    assert 0.01 * (1 - 1e-12) <= loss.zcdp_rho <= 0.01 * (1 + 1e-12)
    assert np.allclose(loss.rdp, np.asarray(RDP_ORDERS) * m.diam_steps**2 / (2 * m.sigma_steps**2))
    assert loss.epsilon == zcdp_epsilon(loss.zcdp_rho, 1e-7)
    assert m.sigma == pytest.approx(10 / math.sqrt(0.02), rel=1e-3)  # D steps * step = diam (to the grid)
    y = m.release(np.full(20_000, 5.0), RandomSource(3))
    assert np.std(y) == pytest.approx(m.sigma, rel=0.03)
    with pytest.raises(ValueError):
        GaussianMechanism(epsilon=1.0, delta=1e-7, low=0, high=10, rho=0.01)
    with pytest.raises(ValueError):
        GaussianMechanism(delta=1e-7, low=0, high=10, rho=0.0)


@pytest.mark.parametrize("budget_delta", [1e-30, 1e-20])
def test_joint_group_total_stays_within_budget_next_to_a_large_discovery_delta(budget_delta):
    """Review finding: the group's delta was recovered as (budget delta + discovery delta) minus
    the discovery delta, which rounds a tiny budget delta away (silent fallback to a total above
    the budget).  The group is now converted at its own delta and the plan checks its total."""
    cat = Column(
        "c",
        "categorical",
        "sensitive",
        mechanism=Mechanism("rr"),
        domain=Domain("categorical", source="dp", cost=Cost(epsilon=0.3, delta=1e-4)),
        type_source="confirmed",
        role_source="confirmed",
    )
    r = _recipe([_num("a"), _num("b"), _num("d"), cat], eps=1.0, delta=budget_delta)
    p = record.compile(r)
    assert p.total.epsilon <= (1.0 + 0.3) * (1 + 1e-9)
    assert p.total.delta <= (budget_delta + 1e-4) * (1 + 1e-9)


def test_a_dp_domain_of_a_column_released_unchanged_is_refused_not_charged():
    """A label release copies every other column as it is: a DP estimate of such a column's
    domain would be charged (and folded into the label's guarantee) for nothing."""
    from dpstudio.plan import compile_checked
    from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Recipe, ReleaseSpec

    dp = Domain("numeric", source="dp", search_low=0.0, search_high=120.0, cost=Cost(0.1))
    label = Column("y", "categorical", "label", Domain("categorical", categories=("0", "1")))
    recipe = Recipe(
        input=InputSpec("t.csv"),
        release=ReleaseSpec("label"),
        columns=(Column("age", "integer", "public", dp), label),
        budget=Budget(1.0, 0.0),
    )
    plan, problems = compile_checked(recipe)
    assert plan is None and any("'age'" in str(p) and "for nothing" in str(p) for p in problems), problems
    # the same column perturbed (a record release) uses its estimate: no problem
    perturbed = Recipe(
        input=InputSpec("t.csv"),
        release=ReleaseSpec("record"),
        columns=(Column("age", "integer", "sensitive", dp), label),
        budget=Budget(1.0, 0.0),
    )
    assert compile_checked(perturbed)[0] is not None


def test_a_column_marked_sensitive_that_the_release_would_publish_unchanged_is_a_problem():
    """A label release perturbs only its label, a semi-sensitive one not embeddings: a column whose
    role asks for protection would go out as it is.  That is a problem on the columns page (mark it
    public or ignore, or choose a record release), not a note beside a release that runs."""
    from dpstudio.plan import compile_checked
    from dpstudio.recipe.model import Budget, Column, Domain, InputSpec, Recipe, ReleaseSpec

    label = Column("y", "categorical", "label", Domain("categorical", categories=("0", "1")))
    cols = (Column("inc", "integer", "sensitive"), Column("age", "integer", "public"), label)
    plan, problems = compile_checked(Recipe(InputSpec("t.csv"), ReleaseSpec("label"), cols, Budget(1.0, 0.0)))
    assert plan is None and [str(p) for p in problems] == [
        "column 'inc': marked sensitive, but a label release perturbs only label columns and would publish "
        "it unchanged; mark it 'public' to publish it as it is, or 'ignore' to leave it out, or choose a "
        "release that perturbs it (record)"
    ]
    assert problems[0].field == "column:inc" and problems[0].page == "columns"
    for role in ("public", "ignore"):  # the user's visible choice: released as it is, or left out
        chosen = tuple(Column(c.name, c.type, role) if c.name == "inc" else c for c in cols)
        assert compile_checked(Recipe(InputSpec("t.csv"), ReleaseSpec("label"), chosen, Budget(1.0, 0.0)))[0]
    vec = Column("v", "vector", "embedding")
    _, problems = compile_checked(
        Recipe(InputSpec("t.csv"), ReleaseSpec("semi-sensitive"), (vec, label), Budget(1.0, 0.0))
    )
    assert any("column 'v': marked embedding, but a semi-sensitive release" in str(p) for p in problems), problems


def test_recipe_init_proposes_public_for_a_label_releases_other_columns(tmp_path, monkeypatch, capsys):
    import json

    import pandas as pd

    from dpstudio.cli import main

    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"age": [30, 40, 50, 60] * 10, "inc": [1, 2, 3, 4] * 10, "y": ["a", "b"] * 20}).to_csv(
        "t.csv", index=False
    )
    args = ["--release", "label", "--role", "y=label", "--categories", "y=a,b", "--confirm-inferred"]
    capsys.readouterr()
    assert main(["recipe", "init", "t.csv", "-o", "r.json", *args]) == 0
    roles = {c["name"]: c["role"] for c in json.loads((tmp_path / "r.json").read_text())["columns"]}
    assert roles == {"age": "public", "inc": "public", "y": "label"}  # inc: the data suggested sensitive
    err = capsys.readouterr().err
    assert "note: inc: proposed public, so published as they are" in err and "age:" not in err
    # a role the user gives is kept, and the problem says what to do
    assert main(["recipe", "init", "t.csv", "-o", "s.json", *args, "--role", "inc=sensitive"]) != 0
    assert "column 'inc': marked sensitive, but a label release" in capsys.readouterr().err
