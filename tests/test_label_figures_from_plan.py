"""Label and semi-sensitive figures are read from the compiled plan, never recomputed beside it.

* the effective epsilon for the label is built on the plan's label guarantee (DP domain
  estimates and the joint calibration of Gaussian columns included), and ``dpstudio risk``
  prints the plan's total;
* every attacker accuracy is taken at the law of the plan's label unit (its keep and
  other-category probabilities: delta and the mechanism's 2^-32 grid included), checked
  against an independent enumeration of that law;
* the cap of the public likelihood-ratio estimate is never below the estimate;
* the report's risk wording says what its numbers are.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.leakage.label import (
    LabelLeakageModel,
    RRLaw,
    effective_label_epsilon,
    public_log_likelihood_ratio,
    rr_keep_probability,
)
from dpstudio.engine.mechanisms.randomized_response import RandomizedResponse
from dpstudio.pipeline import check_recipe
from dpstudio.plan import compile_plan
from dpstudio.recipe.model import (
    Budget,
    Column,
    Cost,
    Domain,
    InputSpec,
    Mechanism,
    Params,
    Recipe,
    ReleaseSpec,
    Target,
)
from dpstudio.report.model import external_text, public_text, risk_summary, risk_tables
from dpstudio.risk import evidence_for, label_risk, risk_for_recipe

# ---- data and recipes -------------------------------------------------------------------------


def _frame(n=2000, seed=0):
    g = np.random.default_rng(seed)
    age = g.integers(18, 91, n)
    y = (g.random(n) < 1 / (1 + np.exp(-(age - 50) / 8))).astype(int)
    cls = np.where(age < 40, "a", np.where(age < 65, "b", "c"))
    cls = np.where(g.random(n) < 0.3, g.choice(["a", "b", "c"], n), cls)
    return pd.DataFrame(
        {
            "age": age,
            "sex": g.choice(["f", "m"], n),
            "income": g.integers(0, 200_001, n).astype(float),
            "score": g.integers(0, 101, n).astype(float),
            "w": g.integers(0, 101, n).astype(float),
            "y": y.astype(str),
            "cls": cls,
        }
    )


def _col(name, typ, role, domain=None, mech=None):
    return Column(name, typ, role, domain, mech, type_source="user", role_source="user")


LABEL_Y = _col("y", "categorical", "label", Domain("categorical", categories=("0", "1")), Mechanism("rr"))


def _semi_dp_bounds(epsilon=1.0):
    """Semi-sensitive, income's bounds estimated with DP (0.2 on top of the budget)."""
    dp = Domain("numeric", source="dp", cost=Cost(0.2), search_low=0.0, search_high=1e6)
    cols = (
        _col("age", "integer", "public"),
        _col("sex", "categorical", "public"),
        _col("income", "float", "sensitive", dp, Mechanism("laplace")),
        LABEL_Y,
    )
    return Recipe(InputSpec("x.csv"), ReleaseSpec("semi-sensitive"), cols, Budget(epsilon))


def _semi_three_gaussians():
    """Semi-sensitive, three jointly calibrated Gaussian sensitive columns."""

    def gauss(name, high):
        return _col(name, "float", "sensitive", Domain("numeric", low=0, high=high), Mechanism("gaussian"))

    cols = (_col("age", "integer", "public"), gauss("score", 100), gauss("w", 100), gauss("income", 2e5), LABEL_Y)
    return Recipe(InputSpec("x.csv"), ReleaseSpec("semi-sensitive"), cols, Budget(3.0, 1e-6))


def _label_3_classes(categories=("a", "b", "c")):
    """Label release: 3 classes, epsilon 0.5, delta 0.005 (the mechanism keeps less than e^eps/(2+e^eps))."""
    cols = (
        _col("age", "integer", "public"),
        _col("sex", "categorical", "public"),
        _col("cls", "categorical", "label", Domain("categorical", categories=categories), Mechanism("rr")),
    )
    return Recipe(InputSpec("x.csv"), ReleaseSpec("label"), cols, Budget(0.5, 0.005))


# ---- 1. effective epsilon from the plan's label guarantee ---------------------------------------


@pytest.mark.parametrize("make", [_semi_dp_bounds, _semi_three_gaussians], ids=["dp-bounds", "joint-gaussian"])
def test_effective_epsilon_is_built_on_the_plans_label_guarantee(make):
    recipe, frame = make(), _frame()
    plan = compile_plan(recipe)
    guarantee = plan.label
    stand_alone = sum(u.epsilon for u in plan.perturbation_units if u.columns[0] != "y")
    # the premise: summing the units' stand-alone epsilons gives another number (the old bug:
    # 0.5 instead of 0.7 with the DP bounds estimate, 3.92 instead of 2.25 with three Gaussians)
    assert abs(stand_alone - guarantee.sensitive_epsilon) > 0.1

    checked = check_recipe(recipe, frame=frame)["label_guarantee"]
    eff = checked["effective_for_label"]
    # one quantity, one value: what `recipe check --with-data` shows twice
    assert eff["epsilon_sensitive"] == checked["epsilon_sensitive"] == guarantee.sensitive_epsilon
    assert eff["relative_to_public_posterior_epsilon"] == checked["label_epsilon"] == guarantee.epsilon
    assert eff["relative_to_public_posterior_delta"] == checked["label_delta"] == guarantee.delta
    assert eff["epsilon_label_rr"] == checked["epsilon_label_rr"]
    assert eff["effective_label_epsilon"] == guarantee.epsilon + eff["public_log_likelihood_ratio"]


def test_risk_prints_the_plans_total_not_the_typed_budget():
    recipe = _semi_dp_bounds(epsilon=1.0)
    out = risk_for_recipe(recipe, _frame(), seed=0)
    total = compile_plan(recipe).total
    assert (out["epsilon"], out["delta"]) == (total.epsilon, total.delta)
    assert out["epsilon"] == pytest.approx(1.2)  # the budget (1.0) plus the DP bounds estimate (0.2)
    assert out["budget"] == {"epsilon": 1.0, "delta": 0.0}


# ---- 2. attackers at the plan's randomized response ------------------------------------------


def _enumerated_accuracy(P, y, law: RRLaw):
    """Independent reference: enumerate every released category under ``law`` and take the
    Bayes guess argmax_c P(c|x) P(y~|c) (ties follow y~); categories beyond P's columns are
    ones the data never shows."""
    n, K = P.shape
    total = np.zeros(n)
    for released in range(law.categories):
        prob = np.where(y == released, law.keep, law.other)
        like = np.where(np.arange(K)[None, :] == released, law.keep, law.other)
        post = P * like
        best = post.argmax(axis=1)
        if released < K:
            follow = post[:, released] >= post.max(axis=1) * (1 - 1e-12)
            best = np.where(follow, released, best)
        total += prob * (best == y)
    return float(total.mean())


@pytest.mark.parametrize("categories", [("a", "b", "c"), ("a", "b", "c", "d")], ids=["3", "3-of-4"])
def test_attackers_are_read_at_the_plans_label_unit(categories):
    recipe, frame = _label_3_classes(categories), _frame(150)
    plan = compile_plan(recipe)
    unit = plan.unit_of_column("cls")
    law = RRLaw.of_unit(unit)
    assert law.keep == unit.noise.keep_probability and law.other == unit.noise.other_probability
    K = len(categories)
    # the premise: the ideal closed form differs (0.4519 against 0.4546 for 3 classes)
    assert abs(float(rr_keep_probability(0.5, K)) - law.keep) > 2e-3

    view = label_risk(recipe, frame)["label_views"]["cls"]
    acc = view["at_epsilon"]["accuracy"]
    # "Take the released label as true" is the "P(value kept)" printed beside it
    assert acc["naive"] == unit.noise.keep_probability
    model = LabelLeakageModel.fit(frame, ["age", "sex"], "cls")
    want = _enumerated_accuracy(model.P, model.y, law)
    assert acc["informed"] == pytest.approx(want, abs=1e-12)
    assert view["at_epsilon"]["randomized_response"]["keep_probability"] == law.keep

    # the curves: the same mechanism class, delta and categories at each grid epsilon
    grid = view["curves"]["epsilon"]
    for e, naive in itertools.islice(zip(grid, view["curves"]["accuracy"]["naive"], strict=True), 0, None, 7):
        assert naive == RandomizedResponse(epsilon=e, delta=unit.delta, n_categories=K).keep


def test_binary_leakage_quantities_use_the_plans_law():
    """With delta > 0 the binary views (IUE counts, posterior gain) follow log(keep/other), not eps."""
    g = np.random.default_rng(3)
    n = 4000
    p1 = g.beta(0.7, 0.7, n)
    y = (g.random(n) < p1).astype(int)
    m = LabelLeakageModel(np.column_stack([1 - p1, p1]), y, [0, 1])
    law = RRLaw.of_mechanism(RandomizedResponse(epsilon=1.0, delta=0.05, n_categories=2))
    assert abs(law.log_odds - 1.0) > 0.05  # the premise
    at = m.at(1.0, rr=law)
    same = m.at(law.log_odds)  # the ideal mechanism whose ratio keep/other is the plan's
    assert at["accuracy"]["informed"] == pytest.approx(same["accuracy"]["informed"], abs=1e-12)
    assert at["iue_adv_bound"] == same["iue_adv_bound"]
    assert at["accuracy"]["naive"] == law.keep


def test_label_attack_target_reads_the_plans_label_unit():
    from dpstudio.plan.solve import predict

    target = Target("label-attack", 0.9)
    recipe, frame = _label_3_classes(), _frame(150)
    recipe = replace(recipe, budget=replace(recipe.budget, targets=(target,)))
    plan = compile_plan(recipe)
    evidence = evidence_for(recipe, frame)
    value = predict(plan, target, evidence)
    law = RRLaw.of_unit(plan.unit_of_column("cls"))
    assert value == pytest.approx(_enumerated_accuracy(evidence.label_model.P, evidence.label_model.y, law), abs=1e-12)
    # the same figure the report's target table reads from the risk estimate
    view = label_risk(recipe, frame)["label_views"]["cls"]
    assert value == view["at_epsilon"]["accuracy"]["informed"]
    ideal = float(evidence.label_model.accuracies(np.array([0.5]))["informed"][0])
    assert value != ideal  # the premise: the closed form in epsilon is another number


# ---- the estimate's cap ---------------------------------------------------------------------


def test_public_likelihood_ratio_cap_is_never_below_the_estimate():
    # a rare label (prior 0.1) and a near-certain posterior: |logit p| + |logit prior| > ln(999)
    y = np.array([1] * 10 + [0] * 90)
    p1 = np.where(y == 1, 0.9999, 0.2)
    P = np.column_stack([1 - p1, p1])
    lam = public_log_likelihood_ratio(P, y)
    assert lam > math.log(999)  # the premise: the old "cap" was below the value it capped
    est = effective_label_epsilon(1.0, 0.0, posteriors=P, labels=y)["estimate"]
    assert est["cap"] >= lam
    assert est["cap"] == pytest.approx(math.log(999) + math.log(9))


# ---- 4. report wording ------------------------------------------------------------------------


def _table_text(blocks) -> str:
    parts = []
    for b in blocks:
        if b.kind == "table":
            parts += [c.text for row in b.content["rows"] for c in row]
        else:
            parts.append(str(b.content))
    return " | ".join(parts)


def test_report_says_what_the_leakage_share_is_and_qualifies_semi_sensitive_attackers():
    frame = _frame()
    semi = risk_for_recipe(_semi_dp_bounds(), frame, seed=0)
    text = _table_text(risk_tables(semi))
    # (a) the Prop. 3.0.2 share: what the public columns add to the released label
    assert "tells more about these people than the public columns" not in text
    assert "unusually exposed" not in text
    assert "public columns add more than 0.1 to what the released" in text
    assert "P(y | public, released) \u2212 P(y | released)" in text
    # (b) the attackers ignore the perturbed sensitive columns: a lower bound, printed
    assert "lower bound on what the release allows" in text
    assert "The attackers above ignore the perturbed sensitive features" in text
    assert any("lower bound" in line for line in risk_summary(semi))
    # a label release's attackers see everything that is released: no qualification
    label_text = _table_text(risk_tables(risk_for_recipe(_label_3_classes(), _frame(150), seed=0)))
    # (called "the best" only when it scored highest: not on this small table)
    assert "lower bound" not in label_text
    assert ("the best of these attackers" in label_text) != ("another attacker above scores higher" in label_text)


def test_stripping_internal_references_keeps_the_label_note_grammatical():
    note = compile_plan(_semi_dp_bounds()).label.note
    assert "corrected in docs/errata.md" in note  # the premise
    internal = public_text(note)
    external = external_text(internal)
    for text in (internal, external):
        assert "docs/" not in text
        assert not re.search(r"\bin\s*[-;,)]", text), text  # no dangling "corrected in - ..."
        assert text.count("(") == text.count(")"), text
    assert "Prop. 4.0.1, corrected - the public columns' own information is added separately" in external
    assert "internal" not in external and external.endswith("separately)")


def test_too_noisy_warning_names_the_noise_size_before_clamping():
    from dpstudio.report.model import fmt, useless_columns

    cols = (_col("income", "float", "sensitive", Domain("numeric", low=0, high=100), Mechanism("laplace")),)
    recipe = Recipe(InputSpec("x.csv"), ReleaseSpec("record"), cols, Budget(0.01))
    unit = compile_plan(recipe).unit_of_column("income")
    assert unit.error_exceeds_range and unit.shown_error < unit.expected_error  # the premise
    (line,) = useless_columns(compile_plan(recipe), set(), False, None, None)
    # the figure quoted is the noise's own size, before clamping - not the table's error after it
    assert f"income: its noise's expected size, {fmt(unit.expected_error)} before clamping to the bounds, is" in line
    assert "after clamping" in line
    unclamped = replace(recipe, release=replace(recipe.release, options=Params.of({"clamp_to_bounds": False})))
    (line,) = useless_columns(compile_plan(unclamped), set(), False, None, None)
    assert "clamping" not in line and f"its noise's expected size, {fmt(unit.expected_error)}, is" in line


def test_combine_both_is_called_the_best_only_when_it_scored_highest():
    """Audit finding: "Combine both 72.9 % - the best of these attackers" sat next to "Take the
    released label as true 73.1 %"."""
    from dpstudio.report.model import _best_attacker_text

    ahead = {"uninformed": 0.6, "naive": 0.70, "informed": 0.73}
    behind = {"uninformed": 0.6, "naive": 0.731, "informed": 0.729}
    assert "the best of these attackers" in _best_attacker_text({}, ahead)
    assert "best" not in _best_attacker_text({}, behind) and "scores higher" in _best_attacker_text({}, behind)
    semi = {"note_semi_sensitive": True}
    assert "the best of these three" in _best_attacker_text(semi, ahead)
    assert "best" not in _best_attacker_text(semi, behind) and "lower bound" in _best_attacker_text(semi, behind)
