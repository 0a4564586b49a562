"""One budget for a synthetic release (issue 19, item 1): the (epsilon, delta) the user types is
the total of the DP domain estimates and the synthesizer, planned up front from public quantities
and composed with the tightest valid method (zCDP, or Gaussian DP when every part is Gaussian).

* For every method and 0, 1 or 3 estimated columns (category lists with and without candidates,
  numeric bounds) the plan's composed total is the typed one, and the accountant's ``compose``
  reproduces it from the plan's units.
* The synthesizer gets strictly more budget than basic composition of the same parts would leave.
* Gaussian partition selection: exact case analysis of the replace-one guarantee (its delta is the
  singleton keep probability p1, not 2 p1; a test fails if it is halved), the threshold, and the
  sampler's keep rate.
* The split follows public rules (the domain share, the columns' costs); a budget that estimates
  made before the release use up is refused; a real release records the typed total.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.accounting import RDP_ORDERS, compose, zcdp_epsilon, zcdp_rho_for
from dpstudio.engine.domains import (
    dp_select_categories_gaussian,
    gaussian_partition_keep_probability,
    gaussian_partition_threshold,
)
from dpstudio.engine.rng import RandomSource
from dpstudio.errors import RecipeError
from dpstudio.plan import compile_plan
from dpstudio.recipe.model import (
    Budget,
    Column,
    Cost,
    Domain,
    InputSpec,
    Params,
    Recipe,
    ReleaseSpec,
)

METHODS = ("aim", "mst", "pearl", "merf")


def _col(name, type_, role, domain):
    return Column(name, type_, role, domain=domain, type_source="confirmed", role_source="confirmed")


def _recipe(columns, eps=1.0, delta=1e-6, options=None, path="x.csv"):
    return Recipe(
        InputSpec(path), ReleaseSpec("synthetic", Params.of(options or {})), tuple(columns), Budget(eps, delta)
    )


PUBLIC = [
    _col("age", "integer", "sensitive", Domain("numeric", low=0, high=100)),
    _col("city", "categorical", "sensitive", Domain("categorical", categories=("a", "b", "c"))),
    _col("sick", "categorical", "label", Domain("categorical", categories=("no", "yes"))),
]


def _estimated(kind: str):
    """Three columns whose domains are estimated with DP: ``lists`` (candidate lists only),
    ``no-lists`` (partition selection), ``mixed`` (bounds, a list, partition selection)."""
    bounds = Domain("numeric", source="dp", cost=Cost(0.1), search_low=0.0, search_high=128.0)
    listed = Domain("categorical", source="dp", cost=Cost(0.1), candidates=("a", "b", "c", "d"), other="d")
    found = Domain("categorical", source="dp", cost=Cost(0.1, 1e-8))
    label_listed = Domain("categorical", source="dp", cost=Cost(0.1), candidates=("no", "yes", "other"), other="other")
    label_found = Domain("categorical", source="dp", cost=Cost(0.1, 1e-8))
    job_listed = Domain("categorical", source="dp", cost=Cost(0.1), candidates=("x", "y", "other"), other="other")
    if kind == "lists":
        return {"city": listed, "sick": label_listed, "job": job_listed}
    if kind == "no-lists":
        return {"city": found, "sick": label_found, "job": found}
    return {"age": bounds, "city": listed, "sick": label_found}


def _columns(n: int, kind: str):
    est = _estimated(kind)
    cols = list(PUBLIC) + [_col("job", "categorical", "sensitive", Domain("categorical", categories=("x", "y")))]
    names = [c for c in ("age", "city", "sick", "job") if c in est][:n]
    return [replace(c, domain=est[c.name]) if c.name in names else c for c in cols]


CASES = [(0, "lists")] + [(n, kind) for n in (1, 3) for kind in ("lists", "no-lists", "mixed")]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("n", "kind"), CASES)
@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-6), (0.3, 1e-5), (4.0, 1e-8)])
def test_the_typed_budget_is_the_composed_total(method, n, kind, eps, delta):
    plan = compile_plan(_recipe(_columns(n, kind), eps, delta, {"method": method}))
    assert plan.total.epsilon == pytest.approx(eps, rel=1e-9) and plan.total.epsilon <= eps * (1 + 1e-12)
    assert plan.total.delta == pytest.approx(delta, rel=1e-12)
    domains = [u for u in plan.units if u.kind == "domain"]
    assert len(domains) == n
    # the accountant reproduces the total from the plan's units (the plan's composition is the record)
    again = compose([u.loss for u in plan.units], delta=delta, method=plan.composition.method)
    assert again.total.epsilon == plan.total.epsilon and again.total.delta == plan.total.delta
    if n == 0:
        assert plan.composition.method == "basic"
        return
    gaussian_only = kind == "lists" and method in ("pearl", "merf")
    assert plan.composition.method == ("gdp" if gaussian_only else "zcdp+basic")
    synth = plan.units[-1]
    if gaussian_only:  # every part Gaussian: mu's add in quadrature, each unit carries its mu
        assert all(u.loss.gdp_mu is not None for u in plan.units)
        assert synth.mechanism.mu == synth.loss.gdp_mu
    else:  # each unit carries its rho, partition selections their approximate-zCDP delta
        assert all(u.loss.zcdp_rho is not None for u in plan.units)
        approx = [u.loss.zcdp_delta for u in domains if u.mechanism_name.endswith("partition selection")]
        assert all(d > 0 for d in approx) and len(approx) == {"lists": 0, "no-lists": n, "mixed": n // 3}[kind]
        assert plan.total.zcdp_delta == pytest.approx(sum(approx))
        assert synth.mechanism.rho == synth.loss.zcdp_rho
    # the shares of the typed budget add up to it (what the budget page and the report show)
    assert sum(u.budget_share[0] for u in plan.units) == pytest.approx(eps, rel=1e-9)
    assert sum(u.budget_share[1] for u in plan.units) == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["lists", "no-lists", "mixed"])
def test_the_synthesizer_gets_more_than_basic_composition_would_leave(method, kind):
    """Basic composition of the same domain estimates (each at its own stand-alone figure) would
    leave the synthesizer (eps - sum eps_i, delta - sum delta_i): the plan gives it strictly more."""
    from dpstudio.engine.accounting import gdp_mu_for

    eps, delta = 1.0, 1e-6
    plan = compile_plan(_recipe(_columns(3, kind), eps, delta, {"method": method}))
    domains = [u for u in plan.units if u.kind == "domain"]
    e_left = eps - sum(u.epsilon for u in domains)
    d_left = delta - sum(u.delta for u in domains)
    assert e_left > 0 and d_left > 0
    synth = plan.units[-1]
    if synth.loss.gdp_mu is not None:
        assert synth.loss.gdp_mu > gdp_mu_for(e_left, d_left) * 1.01
    else:
        assert synth.loss.zcdp_rho > zcdp_rho_for(e_left, d_left) * 1.01
    # and the synthesizer's own (epsilon, delta) is more than basic composition leaves
    assert synth.epsilon > e_left


def test_the_split_is_public_and_follows_the_share_and_the_costs():
    cols = _columns(3, "mixed")
    plan = compile_plan(_recipe(cols, 1.0, 1e-6, {"method": "mst"}))
    rho = {u.name: u.loss.zcdp_rho for u in plan.units}
    total = sum(rho.values())
    domain = total - rho["whole table"]
    assert domain == pytest.approx(0.1 * total)  # the default share: a tenth
    # equal costs: an even split of the domain share
    assert all(rho[u.name] == pytest.approx(domain / 3) for u in plan.units if u.kind == "domain")
    # partition selection: a tenth of delta
    assert plan.unit("categories of sick").loss.zcdp_delta == pytest.approx(1e-7)
    # the release option overrides the share
    wider = compile_plan(_recipe(cols, 1.0, 1e-6, {"method": "mst", "domain_share": 0.25}))
    rho_w = {u.name: u.loss.zcdp_rho for u in wider.units}
    assert sum(rho_w.values()) - rho_w["whole table"] == pytest.approx(0.25 * sum(rho_w.values()))
    assert wider.total.epsilon == pytest.approx(1.0)
    # a column whose cost is twice the others' gets twice their epsilon-equivalent (4x the rho)
    doubled = [
        replace(c, domain=replace(c.domain, cost=Cost(0.2, c.domain.cost.delta))) if c.name == "city" else c
        for c in cols
    ]
    plan2 = compile_plan(_recipe(doubled, 1.0, 1e-6, {"method": "mst"}))
    assert plan2.unit("categories of city").loss.zcdp_rho == pytest.approx(
        4 * plan2.unit("bounds of age").loss.zcdp_rho
    )
    # the recipe's costs themselves do not add to the total: scaling them all changes nothing
    scaled = [
        replace(c, domain=replace(c.domain, cost=Cost(c.domain.cost.epsilon * 5, c.domain.cost.delta)))
        if c.domain is not None and c.domain.source == "dp"
        else c
        for c in cols
    ]
    again = compile_plan(_recipe(scaled, 1.0, 1e-6, {"method": "mst"}))
    assert [u.loss.zcdp_rho for u in again.units] == pytest.approx(list(rho.values()), rel=1e-12)
    assert again.total.epsilon == pytest.approx(plan.total.epsilon, rel=1e-12)
    with pytest.raises(RecipeError, match="domain_share"):
        compile_plan(_recipe(cols, 1.0, 1e-6, {"method": "mst", "domain_share": 1.0}))


def test_estimates_that_use_the_whole_budget_are_refused():
    """An estimate made before the release (its domain known, its cost recorded) keeps its cost,
    added by basic composition; one that used the budget leaves nothing for the synthesizer."""
    done = Domain("categorical", source="dp", cost=Cost(1.0, 1e-7), categories=("a", "b", "c"))
    cols = [c if c.name != "city" else replace(c, domain=done) for c in _columns(1, "mixed")]
    plan = compile_plan(_recipe(cols, 2.0, 1e-6, {"method": "mst"}))
    assert plan.total.epsilon == pytest.approx(2.0) and plan.total.delta == pytest.approx(1e-6)
    assert plan.unit("categories of city").loss.zcdp_rho is None  # basic composition for it
    for budget in (Budget(1.0, 1e-6), Budget(0.5, 1e-6), Budget(2.0, 1e-7)):
        with pytest.raises(RecipeError, match="nothing is left for the synthesizer"):
            compile_plan(replace(_recipe(cols, 1.0, 1e-6, {"method": "mst"}), budget=budget))


# --------------------------------------------------------------------------- Gaussian partition selection


def _dg_tail(sigma: float, j: int) -> float:
    """P(Z >= j) for the discrete Gaussian on the integers, by direct summation (reference)."""
    z = np.arange(-4000, 4001, dtype=np.float64)
    w = np.exp(-(z * z) / (2 * sigma * sigma))
    return float(w[z >= j].sum() / w.sum())


def test_the_threshold_and_keep_probability_are_exact():
    for sigma, delta in ((2.0, 1e-3), (5.0, 1e-7), (37.5, 1e-6), (120.0, 1e-8)):
        t = gaussian_partition_threshold(sigma, delta)
        p1 = gaussian_partition_keep_probability(sigma, t)
        assert p1 == pytest.approx(_dg_tail(sigma, t), rel=1e-9)
        assert p1 <= delta and (t == 1 or gaussian_partition_keep_probability(sigma, t - 1) > delta)


def _keep(sigma: float, t: int, c: int) -> float:
    """P(c + Z > T) for a present partition (count c >= 1); 0 for an absent one."""
    return 0.0 if c == 0 else _dg_tail(sigma, t + 1 - c)


def _joint(keep_a: float, keep_b: float) -> list[float]:
    return [(keep_a if oa else 1 - keep_a) * (keep_b if ob else 1 - keep_b) for oa in (0, 1) for ob in (0, 1)]


def _hockey(p: list[float], q: list[float], eps: float) -> float:
    return sum(max(x - math.exp(eps) * y, 0.0) for x, y in zip(p, q, strict=True))


def test_gaussian_partition_selection_exact_replace_one_guarantee():
    """A record moves from partition a (count na -> na - 1) to a' (nb -> nb + 1); only those two
    keep decisions change law, independently.  For every count case and both directions the
    release is (eps(rho, delta'), delta' + p1)-DP with rho = 1/sigma^2, p1 = P(Z >= T): the
    approximate-zCDP delta is p1, not 2 p1.  And it is no less: a case reaches p1, so a delta
    of p1/2 fails."""
    sigma, sel = 2.0, 1e-3
    t = gaussian_partition_threshold(sigma, sel)
    p1 = _keep(sigma, t, 1)
    rho = 1.0 / sigma**2
    for d_conv in (1e-2, 1e-4, 1e-6):
        eps = zcdp_epsilon(rho, d_conv)
        worst = 0.0
        for na in range(1, 30):
            for nb in range(0, 30):
                p = _joint(_keep(sigma, t, na), _keep(sigma, t, nb))
                q = _joint(_keep(sigma, t, na - 1), _keep(sigma, t, nb + 1))
                worst = max(worst, _hockey(p, q, eps), _hockey(q, p, eps))
        assert worst <= (d_conv + p1) * (1 + 1e-9)
        if d_conv <= 1e-4:
            assert worst > d_conv + p1 / 2  # halving the delta would be wrong
    assert worst >= p1 * (1 - 1e-6)  # case (iii): a kept under one dataset only


def test_gaussian_partition_selection_is_approximately_zcdp_in_every_case():
    """Conditioned on the event that the partition held only by the moved record is not kept
    (probability 1 - p1 on both sides, the other side conditioning on the same event of the noise
    it draws but never reads), the two laws are rho-zCDP with rho = 1/sigma^2: their Renyi
    divergence is at most alpha rho at every order, in every count case and both directions."""
    sigma, sel = 3.0, 1e-3
    t = gaussian_partition_threshold(sigma, sel)
    rho = 1.0 / sigma**2

    def law(ka: float, kb: float, drop_a: bool, drop_b: bool) -> np.ndarray:
        # conditioning on "a not kept" (or "b not kept") where that partition is a singleton
        p = np.array(_joint(0.0 if drop_a else ka, 0.0 if drop_b else kb))
        return p / p.sum()

    def renyi(p: np.ndarray, q: np.ndarray, a: float) -> float:
        from scipy.special import logsumexp

        m = p > 0
        if np.any(q[m] == 0):
            return math.inf
        return float(logsumexp(a * np.log(p[m]) + (1 - a) * np.log(q[m])) / (a - 1))

    for na in range(1, 25):
        for nb in range(0, 25):
            ka, kb = _keep(sigma, t, na), _keep(sigma, t, nb)
            ka2, kb2 = _keep(sigma, t, na - 1), _keep(sigma, t, nb + 1)
            # a is a singleton under x (na = 1): both sides condition on "a not kept";
            # a' is a singleton under x' (nb = 0): both condition on "a' not kept"
            p = law(ka, kb, na == 1, nb == 0)
            q = law(ka2, kb2, na == 1, nb == 0)
            for a in RDP_ORDERS:
                assert renyi(p, q, a) <= a * rho * (1 + 1e-9) + 1e-12, (na, nb, a)
                assert renyi(q, p, a) <= a * rho * (1 + 1e-9) + 1e-12, (na, nb, a)


def test_gaussian_partition_selection_keeps_singletons_at_p1_and_draws_integer_noise():
    sigma, sel = 4.0, 0.05
    t = gaussian_partition_threshold(sigma, sel)
    p1 = gaussian_partition_keep_probability(sigma, t)
    n_single = 30000
    vals = [f"s{i}" for i in range(n_single)] + ["common"] * 300 + ["mid"] * 80
    kept, loss = dp_select_categories_gaussian(vals, sigma=sigma, delta=0.1, rng=RandomSource(21), selection_delta=sel)
    rate = sum(1 for v in kept if v.startswith("s")) / n_single
    se = math.sqrt(p1 * (1 - p1) / n_single)
    assert p1 - 5 * se <= rate <= p1 + 5 * se
    assert "common" in kept and "mid" in kept and kept == sorted(kept)
    assert loss.zcdp_rho == pytest.approx(1 / sigma**2) and loss.zcdp_delta == p1 and loss.delta == 0.1
    assert loss.epsilon == pytest.approx(zcdp_epsilon(1 / sigma**2, 0.1 - p1))
    assert loss.rdp is None and loss.gdp_mu is None  # approximate: no pure Renyi curve is claimed
    assert "discrete Gaussian" in loss.details["mechanism"]


def test_compose_handles_approximate_zcdp_parts():
    from dpstudio.engine.accounting import PrivacyLoss

    a = PrivacyLoss(0.5, 2e-7, zcdp_rho=0.01, zcdp_delta=1e-7)
    b = PrivacyLoss(0.5, 1e-7, zcdp_rho=0.02)
    c = compose([a, b], delta=1e-6, method="zcdp+basic")
    assert c.total.epsilon == pytest.approx(zcdp_epsilon(0.03, 1e-6 - 1e-7))
    assert c.total.delta == 1e-6 and c.total.zcdp_rho == pytest.approx(0.03) and c.total.zcdp_delta == 1e-7
    with pytest.raises(ValueError):
        PrivacyLoss(0.5, 1e-7, zcdp_delta=1e-7)  # an approximate-zCDP delta needs its rho


# --------------------------------------------------------------------------- a real release


def _data(n=3000, seed=3) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": g.integers(18, 90, n),
            "city": g.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "sick": g.choice(["no", "yes"], n, p=[0.7, 0.3]),
            "job": g.choice(["x", "y"], n),
        }
    )


@pytest.mark.parametrize(
    ("method", "kind"), [("mst", "mixed"), ("mst", "no-lists"), ("merf", "lists"), ("aim", "mixed")]
)
def test_a_release_records_the_typed_total(tmp_path, method, kind):
    from dpstudio.ledger import Ledger
    from dpstudio.pipeline import execute_release

    data = tmp_path / "x.csv"
    _data().to_csv(data, index=False)
    options = {"method": method}
    if method == "merf":
        options.update(steps=30, k=20)
    recipe = _recipe(_columns(3, kind), 1.0, 1e-6, options, path=str(data))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    res = execute_release(recipe, output_path=tmp_path / "o.csv", ledger=ledger)
    assert res.plan.total.epsilon == pytest.approx(1.0) and res.plan.total.delta == pytest.approx(1e-6)
    assert res.recorded_total.epsilon == pytest.approx(1.0) and res.recorded_total.delta == pytest.approx(1e-6)
    entries = ledger.show(res.input_sha256)["entries"]
    assert [e["status"] for e in entries] == ["committed"] or len(entries) == 1
    assert entries[-1]["epsilon"] == pytest.approx(1.0) and entries[-1]["delta"] == pytest.approx(1e-6)
    # the fit spent exactly its unit's part: its releases' rho add up to the unit's rho (zCDP),
    # its mu stays within the unit's allowance (Gaussian DP)
    unit = res.plan.units[-1]
    comps = res.outcome.public_stats["synthesizer_components"]
    if unit.loss.zcdp_rho is not None and method in ("mst", "aim"):
        spent = sum(c["gdp_mu"] ** 2 / 2 if c["gdp_mu"] is not None else c["epsilon"] ** 2 / 8 for c in comps)
        assert spent == pytest.approx(unit.loss.zcdp_rho, rel=1e-9)
    else:
        mu = math.sqrt(sum(c["gdp_mu"] ** 2 for c in comps))
        assert mu <= unit.loss.gdp_mu * (1 + 1e-12) and mu == pytest.approx(unit.loss.gdp_mu, rel=1e-3)
    # the report's accounting shows the domain estimates and composes everything to the total
    from dpstudio.report.model import build_model

    model = build_model(res, "internal", charts=False)
    table = next(
        b.content
        for s in model.sections
        for b in s.blocks
        if b.kind == "table" and b.caption == "Synthesizer accounting"
    )
    first = [r[0].text for r in table["rows"]]
    assert sum(1 for t in first if t.startswith(("Range of", "Categories of"))) == 3
    together = table["rows"][-1]
    assert together[0].text == "Together" and "the budget chosen" in together[2].text
    assert "\u03b5 = 1" in together[2].text
    # each estimate's part of the typed total (the budget page's figure), not its stand-alone
    # epsilon, is what the estimates table shows; the parts and the synthesizer's add to the total
    est = next(
        b.content
        for s in model.sections
        for b in s.blocks
        if b.kind == "table" and b.content["head"][:3] == ["Estimate", "Method", "Part of the total (ε)"]
    )
    domain_units = [u for u in res.plan.units if u.kind == "domain"]
    assert [r[2].text for r in est["rows"]] == [_eps_text(u.budget_share[0]) for u in domain_units]
    # a list found without candidates states the threshold its counts had to pass (the plan's)
    from dpstudio.report.model import fmt

    for r, u in zip(est["rows"], domain_units, strict=True):
        if "threshold" in u.facts:
            assert f"passes {fmt(u.facts['threshold'])} rows" in r[1].text
    assert kind != "no-lists" or any("passes" in r[1].text for r in est["rows"])
    assert sum(u.budget_share[0] for u in res.plan.units) == pytest.approx(1.0, rel=1e-9)


def _eps_text(v):
    from dpstudio.report.model import _eps

    return _eps(v)


def test_every_release_goes_on_and_is_charged_when_discovery_keeps_no_category(tmp_path):
    """A column whose values are all rare (a zip code held by one record each) loses every value
    to the discovery threshold: the release goes on with the column reduced to its "other" value
    (its estimate is already part of the total), instead of stopping after the data was read."""
    from dpstudio.ledger import Ledger
    from dpstudio.pipeline import execute_release

    n = 600
    g = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age": g.integers(18, 90, n),
            "zip": [f"{i:05d}" for i in range(n)],  # every value held by one record
            "sick": g.choice(["no", "yes"], n),
        }
    )
    data = tmp_path / "z.csv"
    frame.to_csv(data, index=False)
    zip_dp = Domain("categorical", source="dp", cost=Cost(0.1, 1e-8))
    cols = [PUBLIC[0], _col("zip", "categorical", "sensitive", zip_dp), PUBLIC[2]]
    recipe = _recipe(cols, 1.0, 1e-6, {"method": "mst"}, path=str(data))
    ledger = Ledger(tmp_path / "ledger.sqlite")
    res = execute_release(recipe, output_path=tmp_path / "o.csv", ledger=ledger)
    out = pd.read_csv(tmp_path / "o.csv", dtype=str)
    assert set(out["zip"]) == {"(other)"}
    assert res.outcome.steward_stats["dp_domain:zip"] == ["(other)"]
    # the threshold the plan states (budget page, report) is the one the estimate ran with
    from dpstudio.engine.domains import dp_select_categories_gaussian_from_counts
    from dpstudio.engine.rng import RandomSource

    unit = next(u for u in res.plan.units if u.kind == "domain")
    mech = unit.mechanism
    _, loss = dp_select_categories_gaussian_from_counts(
        {"00001": 1}, sigma=mech.sigma, delta=mech.delta, rng=RandomSource(0), selection_delta=mech.selection_delta
    )
    assert unit.facts["threshold"] == loss.details["threshold"] > 1  # above every zip count
    # ... and the user is told, in the warnings the CLI prints and the report lists
    assert [w for w in res.warnings if "'zip'" in w and "kept no value" in w and "'(other)'" in w]
    assert ledger.show(res.input_sha256)["entries"][-1]["epsilon"] == pytest.approx(1.0)
    # a record release goes on too, and is charged: stopping after the estimate ran would tell
    # its outcome while the reservation is rolled back (an estimate for free, as often as asked)
    rec = replace(recipe, release=ReleaseSpec("record", Params.of({})))
    before = ledger.show(res.input_sha256)["spent"]["epsilon"]
    rr = execute_release(rec, output_path=tmp_path / "r.csv", ledger=ledger)
    assert set(pd.read_csv(tmp_path / "r.csv", dtype=str)["zip"]) == {"(other)"}
    assert [w for w in rr.warnings if "'zip'" in w and "kept no value" in w]
    charged = ledger.show(res.input_sha256)["spent"]["epsilon"] - before
    assert charged == pytest.approx(rr.recorded_total.epsilon) and charged > 1.0  # the estimate's 0.1 too
    unit = rr.plan.unit("zip")
    assert unit.noise.keep_probability == 1.0 and unit.expected_error == 0.0  # nothing left to randomize


def test_a_fit_that_spends_the_typed_total_instead_of_its_part_is_stopped(tmp_path, monkeypatch):
    """The release checks the fit's own record against the synthesizer's part of the plan: a fit
    calibrated to the whole typed budget (forgetting the domain estimates' share) is refused."""
    from dpstudio.pipeline import execute_release
    from dpstudio.plan import synthetic

    data = tmp_path / "x.csv"
    _data().to_csv(data, index=False)
    recipe = _recipe(_columns(3, "mixed"), 1.0, 1e-6, {"method": "mst"}, path=str(data))

    def greedy(self, frame, spec, rng, *, progress, cancel):
        synth = self._synthesizer()
        return synth.fit(frame, spec, epsilon=1.0, delta=1e-6 * 0.9, rng=rng, progress=progress, cancel=cancel)

    monkeypatch.setattr(synthetic.SynthesizerRelease, "release", greedy)
    with pytest.raises(RuntimeError, match="beyond its part of the plan"):
        execute_release(recipe, output_path=tmp_path / "o.csv", ledger=None)
