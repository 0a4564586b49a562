"""Budget from targets: the epsilon (and split across units) whose compiled plan meets them all.

The user states what the release must achieve instead of an epsilon (docs/targets.md):

* accuracy targets set a LOWER limit on epsilon and depend on public quantities only:
  ``within`` (a perturbed number within +-t of its true value for a share p of records: the
  unit mechanism's own
  :meth:`~dpstudio.engine.mechanisms.laplace.LaplaceMechanism.within_probability`), ``keep``
  (a category kept with probability at least q: the randomized response's own keep
  probability) and ``marginals`` (a synthetic table's mean 1-way total variation, forecast from
  the synthesizer's own 1-way noise and the public number of records);
* risk targets are internal CHECKS: ``label-attack`` (the best label attacker's accuracy under
  the plan's randomized response on the label -- its keep and other-category probabilities, as
  the mechanism runs them -- from a leakage model fitted on the raw data) and
  ``reid`` (the re-identification rate of a linkage attack on a seeded simulated release).  They
  are estimated on the raw data, so a budget chosen or refused with them could change with one
  record, which no differential-privacy guarantee covers: they are reported (with the largest
  budget where they hold, as advice) and never choose or refuse the budget.

Every value is read off a plan compiled at the candidate budget (``compile_checked``): the
solver holds no copy of an error formula.  Each accuracy target's predicted value is monotone
in the budget (more epsilon: less noise, a higher keep probability), so a bisection on log
epsilon finds its limit to a relative ``REL_TOL``; the answer is the smallest epsilon that meets
every accuracy target, within the affordable cap.  A target no affordable epsilon meets is
reported as such, with the best value reachable and the floor, never approximated.

The split: with ``split="targets"`` (the default) the weights of the units that carry an
accuracy target are set so that each gets exactly the share its target needs, read off the
compiled plans; the units without a target share :data:`UNTARGETED_FRACTION` of that.
``split="weights"`` keeps the user's weights and solves for the total only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from dpstudio.engine.progress import NEVER_CANCELLED, CancelToken, ProgressCallback, no_progress
from dpstudio.errors import RecipeError, UserError
from dpstudio.plan.compile import compile_checked
from dpstudio.plan.units import PlanUnit, ReleasePlan
from dpstudio.recipe.model import Params, Recipe, Target
from dpstudio.recipe.validate import MAX_EPSILON, Problem, target_problems

#: the smallest budget the solver tries: a target met there is met "at any epsilon"
LOWEST_EPSILON = 1e-3
#: the bisection stops when the bracket's ends are within this ratio (the answer is minimal, or
#: for risk targets maximal, to within 0.1 %)
REL_TOL = 1e-3
#: rounds of re-splitting the budget across targeted units (converges in two for basic composition)
MAX_SPLIT_ROUNDS = 6

ACCURACY_KINDS = ("within", "keep", "marginals")
#: accuracy targets on one perturbed column: the ones the split gives a share to
COLUMN_KINDS = ("within", "keep")
RISK_KINDS = ("label-attack", "reid")


@dataclass(frozen=True)
class Evidence:
    """What risk targets need beyond the plan, estimated on the raw data (internal use only).

    ``label_model``: a fitted :class:`~dpstudio.engine.leakage.label.LabelLeakageModel`;
    ``reid``: the re-identification rate of a plan's simulated release (both built by
    :func:`dpstudio.risk.evidence_for`, as the report's residual-risk estimates are)."""

    label_model: Any = None
    reid: Callable[[ReleasePlan], float] | None = None
    #: the number of records (public under replace-one neighbours): a marginals forecast needs it
    rows: int | None = None


def target_unit(plan: ReleasePlan, target: Target) -> PlanUnit | None:
    """The perturbation unit a target is about (None: the whole release)."""
    if target.kind in ("within", "keep"):
        return plan.unit_of_column(target.column or "")
    if target.kind == "label-attack" and plan.label is not None:
        return plan.unit_of_column(plan.label.column)
    if target.kind == "marginals":
        return next((u for u in plan.units if u.kind == "synthesizer"), None)
    return None


def predict(plan: ReleasePlan, target: Target, evidence: Evidence = Evidence()) -> float:
    """The target's predicted value for ``plan``, read off its units (docs/targets.md):
    ``within``: share of records within the tolerance (a lower bound); ``keep``: probability a
    category is kept; ``label-attack``: the best attacker's accuracy; ``reid``: the rate."""
    if target.kind in ("within", "keep"):
        unit = target_unit(plan, target)
        if unit is None or unit.mechanism is None:
            raise UserError(f"target {target.spec}: the plan perturbs no column {target.column!r}")
        if target.kind == "within":
            within = getattr(unit.mechanism, "within_probability", None)
            if within is None:
                raise UserError(f"target {target.spec}: {unit.mechanism_name} noise has no tolerance law")
            return float(within(target.value))
        keep = unit.noise.keep_probability
        if keep is None:
            raise UserError(f"target {target.spec}: {unit.mechanism_name} has no keep probability")
        return float(keep)
    if target.kind == "marginals":
        unit = target_unit(plan, target)
        forecast = getattr(unit.mechanism, "one_way_tv_forecast", None) if unit is not None else None
        if unit is None or forecast is None or plan.recipe is None:
            raise UserError(f"target {target.spec}: the release has no synthesizer")
        if evidence.rows is None:
            raise UserError(f"target {target.spec}: needs the number of records (open the data)")
        value = forecast(plan.recipe, evidence.rows, plan.recipe.outputs.rows)
        if value is None:
            raise UserError(f"target {target.spec}: {unit.mechanism_name} does not measure the 1-way marginals")
        return float(value[0])
    if target.kind == "label-attack":
        if plan.label is None:
            raise UserError(f"target {target.spec}: the release has no label guarantee")
        if evidence.label_model is None:
            raise UserError(f"target {target.spec}: needs the data (an attacker model fitted on it)")
        from dpstudio.engine.leakage.label import RRLaw  # the leakage model's module (scipy)

        # read at the law of the plan's label unit (as the ``keep`` target reads its keep
        # probability): the randomized response that runs, delta and 2^-32 grid included
        unit = target_unit(plan, target)
        if unit is None:
            raise UserError(f"target {target.spec}: the plan perturbs no label column")
        acc = evidence.label_model.accuracies_of(RRLaw.of_unit(unit))["informed"]
        return float(acc[0])
    if target.kind == "reid":
        if evidence.reid is None:
            raise UserError(f"target {target.spec}: needs the data (a simulated release to attack)")
        return float(evidence.reid(plan))
    raise UserError(f"unknown target kind {target.kind!r}")


def meets(target: Target, value: float) -> bool:
    """Whether a predicted ``value`` meets ``target``."""
    if target.kind == "within":
        return value >= float(target.probability or 0.0)
    if target.kind == "keep":
        return value >= target.value
    return value <= target.value  # marginals' total variation, an attacker's accuracy, a rate


def unmet_targets(plan: ReleasePlan) -> list[Problem]:
    """The accuracy targets of ``plan``'s recipe that ``plan`` misses (risk targets need the
    data: ``recipe check --with-data`` and the report check those).  A recipe states its
    targets as requirements, so compiling one that misses them is refused."""
    recipe = plan.recipe
    if recipe is None:
        return []
    out = []
    rows = recipe.budget.solved.get("rows")
    evidence = Evidence(rows=int(rows) if rows is not None else None)
    for t in recipe.budget.targets:
        if t.kind not in ACCURACY_KINDS or target_unit(plan, t) is None:
            continue
        if t.kind == "marginals" and evidence.rows is None:
            continue  # forecast from the number of records: checked where the data is known
        value = predict(plan, t, evidence)
        if not meets(t, value):
            out.append(
                Problem(
                    f"targets: {t.spec}: at epsilon {recipe.budget.epsilon:g} the plan gives {value_text(t, value)} "
                    f"({describe(t)} was asked); find the budget for the targets again, or change the target",
                    field="targets",
                    page="budget",
                )
            )
    return out


def describe(target: Target) -> str:
    """The target in words (the budget page, the report, the CLI)."""
    if target.kind == "within":
        return f"{target.column} within ±{target.value:g} for {target.probability:.0%} of records"
    if target.kind == "keep":
        return f"{target.column}: category kept with probability ≥ {target.value:.0%}"
    if target.kind == "marginals":
        return f"1-way marginals within {target.value:g} total variation of the real ones, on average"
    if target.kind == "label-attack":
        return f"no attacker guesses the label right more than {target.value:.0%} of the time"
    return f"re-identification rate below {target.value:.1%}"


def value_text(target: Target, value: float | None) -> str:
    """A predicted or measured value of ``target`` in words."""
    if value is None or not math.isfinite(value):
        return "-"
    if target.kind == "within":
        return f"{value:.1%} of records within ±{target.value:g}"
    if target.kind == "keep":
        return f"kept with probability {value:.1%}"
    if target.kind == "marginals":
        return f"mean 1-way total variation {value:.3f}"
    if target.kind == "label-attack":
        return f"best attacker right {value:.1%} of the time"
    return f"{value:.2%} re-identified"


@dataclass(frozen=True)
class TargetResult:
    """One target at the solution.  ``status``: "met"; "not met"; "impossible" (no epsilon up
    to the product's limit meets it: ``best`` is the value at that limit, ``floor`` what bounds
    it); "beyond cap" (the targets need more than the affordable cap); "blocked" (another target
    is impossible); "check" (a risk target with no budget to check it at).  ``limit``: the budget
    where this target binds under the solved split (a risk target: the largest where it holds)."""

    target: Target
    status: str
    predicted: float | None
    limit: float | None = None
    best: float | None = None
    floor: float | None = None
    advice: str = ""
    #: a risk target: an internal check on the raw data, never a reason to choose or refuse a budget
    advisory: bool = False

    @property
    def met(self) -> bool:
        return self.status == "met"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target": self.target.spec,
            "means": describe(self.target),
            "status": self.status,
            "predicted": self.predicted,
        }
        for k in ("limit", "best", "floor"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        if self.advice:
            out["advice"] = self.advice
        if self.advisory:
            out["computed_on"] = "raw data - internal use only"
        return out


@dataclass(frozen=True)
class Solution:
    """What :func:`solve` found.  ``epsilon``: the budget to type (None: no budget meets every
    target); ``plan``: the plan compiled at it (its total is what the ledger will charge);
    ``weights``: column -> weight of the solved split; ``results``: one per target."""

    epsilon: float | None
    plan: ReleasePlan | None
    weights: dict[str, float]
    results: tuple[TargetResult, ...]
    cap: float
    split: str
    notes: tuple[str, ...] = ()
    recipe: Recipe | None = field(default=None, repr=False, compare=False)
    #: the number of records the marginals forecast used (recorded: the compile check reads it)
    rows: int | None = None

    @property
    def feasible(self) -> bool:
        """A budget meets every accuracy target (risk targets are internal checks: reported, not required)."""
        return self.epsilon is not None and all(r.met for r in self.results if not r.advisory)

    def record(self) -> Params:
        """What the recipe keeps of the solution (``budget.solved``)."""
        out: dict[str, Any] = {"status": "met" if self.feasible else "not met", "split": self.split}
        if self.plan is not None:
            out.update(
                epsilon=self.epsilon,
                total_epsilon=float(self.plan.total.epsilon),
                total_delta=float(self.plan.total.delta),
                shares={u.name: float(u.epsilon) for u in self.plan.units},
            )
        # accuracy predictions only: a risk target's value is a raw-data estimate, and the recipe
        # is shared (and printed in the external report's appendix)
        out["predicted"] = {r.target.spec: r.predicted for r in self.results if r.target.kind in ACCURACY_KINDS}
        if any(r.target.kind in RISK_KINDS for r in self.results):
            out["risk_targets"] = "internal checks on the raw data; not used to choose the budget"
        if self.rows is not None:
            out["rows"] = int(self.rows)
        return Params.of(out)

    def apply(self) -> Recipe:
        """The recipe with the solved budget, weights and record (raises when infeasible)."""
        if not self.feasible or self.recipe is None or self.epsilon is None:
            raise UserError("no budget meets every target: " + "; ".join(r.advice for r in self.results if r.advice))
        r = _with(self.recipe, self.epsilon, self.weights)
        return replace(r, budget=replace(r.budget, targets=self.recipe.budget.targets, solved=self.record()))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "feasible": self.feasible,
            "epsilon": self.epsilon,
            "cap": self.cap,
            "split": self.split,
            "targets": [r.to_json() for r in self.results],
            "notes": list(self.notes),
        }
        if self.plan is not None:
            out["total"] = self.plan.total.to_json()
            out["shares"] = {u.name: float(u.epsilon) for u in self.plan.units}
            out["weights"] = dict(self.weights)
        return out


def _weights(recipe: Recipe) -> dict[str, float]:
    """Column -> the weight of its mechanism (perturbed columns only)."""
    return {c.name: float(c.mechanism.weight) for c in recipe.columns if c.mechanism is not None}


def _with(recipe: Recipe, epsilon: float, weights: dict[str, float]) -> Recipe:
    cols = tuple(
        replace(c, mechanism=replace(c.mechanism, weight=weights[c.name]))
        if c.mechanism is not None and c.name in weights
        else c
        for c in recipe.columns
    )
    # the candidate is compiled without its targets: compile_checked refuses a plan that misses them
    return replace(recipe, columns=cols, budget=replace(recipe.budget, epsilon=float(epsilon), targets=()))


class _Plans:
    """Plans compiled at (epsilon, weights), memoised: the bisections ask for many."""

    def __init__(self, recipe: Recipe, cancel: CancelToken) -> None:
        self.recipe = recipe
        self.cancel = cancel
        self._cache: dict[tuple[float, tuple[tuple[str, float], ...]], ReleasePlan | None] = {}
        self.last_problems: list[Problem] = []

    def at(self, epsilon: float, weights: dict[str, float]) -> ReleasePlan | None:
        key = (float(epsilon), tuple(sorted(weights.items())))
        if key not in self._cache:
            self.cancel.check()
            plan, problems = compile_checked(_with(self.recipe, epsilon, weights))
            self.last_problems = problems
            self._cache[key] = plan
        return self._cache[key]


def _ok(plans: _Plans, target: Target, evidence: Evidence, epsilon: float, weights: dict[str, float]) -> bool:
    plan = plans.at(epsilon, weights)
    return plan is not None and meets(target, predict(plan, target, evidence))


def _bisect(ok: Callable[[float], bool], lo: float, hi: float) -> float:
    """For ``ok`` False at ``lo`` and True at ``hi`` (monotone): the smallest True point to
    within REL_TOL, returned from the True side."""
    while hi / lo > 1.0 + REL_TOL:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _lower_limit(
    plans: _Plans, target: Target, evidence: Evidence, weights: dict[str, float], top: float
) -> float | None:
    """The smallest budget <= ``top`` meeting an accuracy target (None: not even ``top``)."""
    if _ok(plans, target, evidence, LOWEST_EPSILON, weights):
        return LOWEST_EPSILON
    if not _ok(plans, target, evidence, top, weights):
        return None
    return _bisect(lambda e: _ok(plans, target, evidence, e, weights), LOWEST_EPSILON, top)


def _upper_limit(
    plans: _Plans, target: Target, evidence: Evidence, weights: dict[str, float], top: float
) -> float | None:
    """The largest budget <= ``top`` meeting a risk target (None: not even the lowest)."""
    if _ok(plans, target, evidence, top, weights):
        return top
    if not _ok(plans, target, evidence, LOWEST_EPSILON, weights):
        return None
    # the largest True point: bisect on "fails", then step back to the True side
    lo, hi = LOWEST_EPSILON, top
    while hi / lo > 1.0 + REL_TOL:
        mid = math.sqrt(lo * hi)
        if _ok(plans, target, evidence, mid, weights):
            lo = mid
        else:
            hi = mid
    return lo


def _floor_advice(
    plans: _Plans, target: Target, evidence: Evidence, weights: dict[str, float], at: float
) -> tuple[float | None, float | None, str]:
    """(best value reachable at ``at``, the floor that bounds it, what to relax)."""
    plan = plans.at(at, weights)
    if plan is None:
        return None, None, f"the recipe cannot be compiled at epsilon {at:g}"
    best = predict(plan, target, evidence)
    unit = target_unit(plan, target)
    floor = None if unit is None else unit.floor
    if target.kind == "within":
        # the floor only when it says something at this scale (at a large epsilon it is ~0)
        extra = (
            f"; at this budget no mechanism has a worst-case expected error below {floor:.3g} (Jazbec 2018)"
            if floor is not None and floor >= 0.01 * target.value
            else ""
        )
        return (
            best,
            floor,
            f"at epsilon {at:g} (the most this release can use) the share of records the noise is sure to "
            f"keep within ±{target.value:g} is {best:.1%}{extra}: widen the tolerance or lower the share",
        )
    if target.kind == "keep":
        return (
            best,
            floor,
            (
                f"at epsilon {at:g} a category is kept with probability {best:.1%} at most: lower the "
                "probability or merge categories (fewer categories keep more)"
            ),
        )
    if target.kind == "marginals":
        unit = target_unit(plan, target)
        forecast = unit.mechanism.one_way_tv_forecast(plan.recipe, evidence.rows, plan.recipe.outputs.rows)  # type: ignore[union-attr]
        sampling = float(forecast[1])
        return (
            best,
            sampling,
            (
                f"at epsilon {at:g} the 1-way marginals are forecast {best:.3f} total variation from the real "
                f"ones; sampling the rows alone leaves about {sampling:.3f}: raise the limit, give columns "
                "public lists with fewer categories (or fewer bins), or generate more rows"
            ),
        )
    if target.kind == "label-attack":
        return (
            best,
            best,
            (
                f"the public columns alone let an attacker guess the label right {best:.1%} of the time, "
                "whatever the label's epsilon: raise the limit to at least that, or publish fewer public "
                "columns"
            ),
        )
    return (
        best,
        best,
        (
            f"even at epsilon {at:g} the linkage attack re-identifies {best:.2%} of records: raise the "
            "limit, perturb more columns, or publish fewer public ones"
        ),
    )


def _unit_share(plan: ReleasePlan, unit_name: str) -> float:
    return float(plan.unit(unit_name).budget_share[0])


#: while a target is solved alone, every other column keeps this weight against its unit's 1
ISOLATED_WEIGHT = 1e-3


#: with ``split="targets"`` the columns without a target share this fraction of what the targeted
#: columns need (by the user's weights): the smallest budget that meets the targets, with those
#: columns kept, but noisy (docs/targets.md)
UNTARGETED_FRACTION = 0.01


def _reweigh(ref: ReleasePlan, user: dict[str, float], need: dict[str, float]) -> dict[str, float]:
    """Weights giving each targeted unit its needed share and the other units together
    :data:`UNTARGETED_FRACTION` of the targeted units' total, split by the user's weights
    (largest weight 1)."""
    unit_weight = {u.name: user[u.columns[0]] for u in ref.perturbation_units if u.columns[0] in user}
    others = [u.name for u in ref.perturbation_units if u.name not in need]
    total_other = sum(unit_weight.get(n, 1.0) for n in others)
    pool = UNTARGETED_FRACTION * sum(need.values())
    rest = {n: pool * unit_weight.get(n, 1.0) / total_other for n in others} if total_other > 0 else {}
    new = dict(user)
    for u in ref.perturbation_units:
        share = need.get(u.name, rest.get(u.name, 0.0))
        for c in u.columns:
            if c in new:
                new[c] = share
    top_w = max(new.values())
    return {c: float(w / top_w) for c, w in new.items()}


def _split_for_targets(
    plans: _Plans, accuracy: list[Target], evidence: Evidence, user: dict[str, float], top: float
) -> dict[str, float]:
    """The weights of ``split="targets"``: each target first solved alone (its unit holding
    nearly the whole budget), then refined until the targets bind at the same budget."""
    ref = plans.at(top, user)
    assert ref is not None
    units = {t: target_unit(ref, t) for t in accuracy}
    need: dict[str, float] = {}
    for t in accuracy:
        u = units[t]
        if u is None:
            continue
        alone = {c: (1.0 if c in u.columns else ISOLATED_WEIGHT) for c in user}
        e = _lower_limit(plans, t, evidence, alone, top)
        plan = plans.at(e, alone) if e is not None else None
        if plan is not None:
            need[u.name] = max(need.get(u.name, 0.0), _unit_share(plan, u.name))
    weights = dict(user)
    for _ in range(MAX_SPLIT_ROUNDS):
        if not need:
            break
        new = _reweigh(ref, user, need)
        if new == weights:
            break
        weights = new
        found = {t: e for t in accuracy if (e := _lower_limit(plans, t, evidence, weights, top)) is not None}
        if len(found) < len(accuracy) or max(found.values()) / min(found.values()) <= 1.0 + 10 * REL_TOL:
            break
        # not binding together yet (a joint calibration shares more than epsilon): each unit's
        # need is its share where its own target binds under these weights
        need = {}
        for t, e in found.items():
            u = units[t]
            plan = plans.at(e, weights)
            if u is not None and plan is not None:
                need[u.name] = max(need.get(u.name, 0.0), _unit_share(plan, u.name))
    return weights


def _risk_check(
    plans: _Plans,
    target: Target,
    evidence: Evidence,
    weights: dict[str, float],
    plan: ReleasePlan | None,
    top: float,
) -> TargetResult:
    """A risk target as an internal check: its estimate at the chosen budget and the largest
    budget where it holds (advice for the steward; never applied)."""
    upper = _upper_limit(plans, target, evidence, weights, top)
    value = predict(plan, target, evidence) if plan is not None else None
    if upper is None:
        best, floor, advice = _floor_advice(plans, target, evidence, weights, LOWEST_EPSILON)
        return TargetResult(target, "not met", value, None, best, floor, advice, advisory=True)
    held = f"the estimate holds up to epsilon {upper:.3g}"
    if value is None:
        return TargetResult(target, "check", None, upper, advice=held + " (internal estimate)", advisory=True)
    ok = meets(target, value)
    advice = "" if ok else f"{held}: lower an accuracy target, or release fewer columns unchanged"
    return TargetResult(target, "met" if ok else "not met", value, upper, advice=advice, advisory=True)


def solve(
    recipe: Recipe,
    *,
    evidence: Evidence = Evidence(),
    cap: float = MAX_EPSILON,
    split: str = "targets",
    progress: ProgressCallback = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
) -> Solution:
    """The smallest budget (and split) meeting every accuracy target of ``recipe.budget.targets``,
    and each risk target checked there (or, without accuracy targets, at the budget as typed).

    ``cap``: the largest affordable budget (the dataset's remaining ledger cap, at most
    :data:`MAX_EPSILON`).  Raises :class:`RecipeError` when the targets or the recipe itself
    have problems no budget fixes."""
    targets = tuple(recipe.budget.targets)
    if not targets:
        raise UserError("the recipe states no targets")
    if split not in ("targets", "weights"):
        raise UserError(f"split {split!r}: choose 'targets' or 'weights'")
    problems = target_problems(recipe)
    if problems:
        raise RecipeError(problems)
    cap = min(float(cap), MAX_EPSILON)
    top = MAX_EPSILON
    plans = _Plans(recipe, cancel)
    weights = _weights(recipe)
    if plans.at(top, weights) is None:
        raise RecipeError(plans.last_problems)
    accuracy = [t for t in targets if t.kind in ACCURACY_KINDS]
    risk = [t for t in targets if t.kind in RISK_KINDS]
    notes: list[str] = []

    # ---- the split: each targeted unit gets what its accuracy target needs
    on_columns = [t for t in accuracy if t.kind in COLUMN_KINDS]
    if split == "targets" and on_columns:
        progress(0.1, "finding the budget each target needs")
        weights = _split_for_targets(plans, on_columns, evidence, weights, top)
    limits = {t: _lower_limit(plans, t, evidence, weights, top) for t in accuracy}
    ref = plans.at(top, weights)
    if split == "targets" and on_columns and ref is not None:
        targeted = {u.name for t in on_columns if (u := target_unit(ref, t)) is not None}
        if any(u.name not in targeted for u in ref.perturbation_units):
            notes.append(
                f"Columns without a target share {UNTARGETED_FRACTION:.0%} of what the targeted columns need: "
                "their noise is wide (see their expected error); give them a target to keep them useful"
            )

    # ---- the budget: the accuracy targets' largest lower limit (public quantities only)
    low = max((e for e in limits.values() if e is not None), default=None)
    impossible = [t for t, e in limits.items() if e is None]
    eps: float | None = None if impossible or not accuracy else low
    if risk:
        notes.append(
            "Risk targets are internal checks estimated on the raw data: they are reported, never used to "
            "choose or refuse the budget (a budget chosen with them could change with one record, which the "
            "differential-privacy guarantee does not cover)"
            + ("" if accuracy else f"; checked at the budget as typed, epsilon {recipe.budget.epsilon:g}")
        )
    beyond = eps is not None and eps > cap * (1 + 1e-12)
    eps_needed = eps if beyond else None
    if beyond:
        eps = None

    # ---- each target at the solution
    plan = plans.at(eps, weights) if eps is not None else None
    results = []
    for t in accuracy:
        limit = limits.get(t)
        if t in impossible:
            w_at = weights
            unit = target_unit(ref, t) if ref is not None else None
            if split == "targets" and unit is not None and t.kind in COLUMN_KINDS:
                # the best this column can reach: its unit holding nearly the whole budget
                w_at = {c: (1.0 if c in unit.columns else ISOLATED_WEIGHT) for c in weights}
            best, floor, advice = _floor_advice(plans, t, evidence, w_at, top)
            results.append(TargetResult(t, "impossible", None, None, best, floor, advice))
        elif impossible:
            results.append(
                TargetResult(
                    t,
                    "blocked",
                    None,
                    limit,
                    advice=(f"met alone at epsilon {limit:.3g}; " if limit is not None else "")
                    + "another target cannot be met",
                )
            )
        elif beyond and eps_needed is not None:
            value = predict(plans.at(eps_needed, weights), t, evidence)  # type: ignore[arg-type]
            results.append(
                TargetResult(
                    t,
                    "beyond cap",
                    value,
                    limit,
                    advice=f"the targets need epsilon {eps_needed:.3g}, more than the {cap:g} this dataset "
                    "can still spend: relax a target or raise the cap",
                )
            )
        else:
            got = predict(plan, t, evidence) if plan is not None else None
            ok = got is not None and meets(t, got)
            results.append(TargetResult(t, "met" if ok else "not met", got, limit))
    if risk:
        progress(0.8, "checking the risk targets (internal estimates)")
    # without accuracy targets nothing is solved: the checks are made at the budget as typed
    at_plan = plan if accuracy else plans.at(recipe.budget.epsilon, weights)
    for t in risk:
        results.append(_risk_check(plans, t, evidence, weights, at_plan, top))
    results.sort(key=lambda r: targets.index(r.target))
    progress(1.0, "budget found" if plan is not None else "no budget meets every target")
    return Solution(
        epsilon=eps,
        plan=plan,
        weights=weights,
        results=tuple(results),
        cap=cap,
        split=split,
        notes=tuple(notes),
        recipe=recipe,
        rows=evidence.rows if any(t.kind == "marginals" for t in targets) else None,
    )
