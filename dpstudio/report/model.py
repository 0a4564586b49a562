"""The report's content, built once from a ReleaseResult and rendered as HTML or PDF.

All variant filtering happens here, so no renderer can leak: the *external* variant contains
no number computed from the raw data other than DP outputs (no clipped counts, no risk
estimates, no domain values copied from the data, nor anything derived from them such as a
noise scale or the recipe's hash).  The row count is public in the DP model (replace-one
neighbours, docs/mechanisms.md).
No Qt here.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from dpstudio.report import text as T

VARIANTS = ("internal", "external")


@dataclass
class Cell:
    text: str
    flag: bool = False  # shown in red: a privacy risk


@dataclass
class Block:
    kind: str  # "p", "warn", "note", "table", "list", "kv", "pre", "image", "signoff"
    content: object = None
    caption: str = ""


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    internal_only: bool = False

    def add(self, kind, content=None, caption=""):
        self.blocks.append(Block(kind, content, caption))
        return self


@dataclass
class ReportModel:
    title: str
    variant: str
    banner: str
    header: list[tuple[str, str]]
    sections: list[Section]
    images: dict[str, bytes] = field(default_factory=dict)


def fmt(x, digits: int = 4) -> str:
    if x is None:
        return "\u2014"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x == 0:
            return "0"
        if math.isfinite(x) and x == round(x) and abs(x) < 1e15:
            return f"{int(round(x)):,}"
        if math.isfinite(x) and 1000 <= abs(x) < 1e15:
            return f"{x:,.0f}"
        if math.isfinite(x) and 1e-3 <= abs(x) < 1000:
            return f"{x:.{digits}g}"
        return f"{x:.{digits - 1}e}".replace("e-0", "e-").replace("e+0", "e+")
    return str(x)


def _pct(x) -> str:
    return "\u2014" if x is None else f"{100 * float(x):.1f} %"


def _pct_half(h: float) -> str:
    """Half-width of an interval in percent: one decimal, or two significant digits below 0.1 %."""
    v = 100 * float(h)
    return f"{v:.1f} %" if v >= 0.1 else f"{v:.2g} %"


def _rate(p, se=None, ci=None) -> str:
    """A rate in percent with its 95 % uncertainty: the interval when the estimate gives one
    (Wilson's, which does not collapse at 0 or 1), else +- 1.96 standard errors; nothing when
    the error is 0 (every row used and nothing else random: a ± 0 would only be clutter)."""
    if p is None:
        return "\u2014"
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci and ci[1] > ci[0]:
        return f"{_pct(p)} (95 % interval {100 * float(ci[0]):.1f}\u2013{100 * float(ci[1]):.1f} %)"
    if se is not None and float(se) > 0:
        return f"{_pct(p)} \u00b1 {_pct_half(1.96 * float(se))}"
    return _pct(p)


def _sample_sentence(risk: dict) -> str | None:
    """How many rows the estimates ran on (``risk["sample"]``, dpstudio.risk)."""
    sample = risk.get("sample")
    if not isinstance(sample, dict) or sample.get("rows_used") is None:
        return None
    used = int(sample["rows_used"])
    total = int(sample.get("rows_total") or used)
    if used < total:
        return (
            f"Estimated on a uniform sample of {used:,} of {total:,} rows (drawn without "
            f"replacement, to bound time and memory); each rate below is given with its 95 % "
            f"interval (\u00b1 1.96 standard errors) for the sampling, not for the attack "
            f"models' own error."
        )
    return (
        f"Estimated on all {total:,} rows (no row sampling); a \u00b1 or interval below is the "
        f"uncertainty of the attack's own random draws (its targets, the simulated noise)."
    )


def risk_summary(risk: dict) -> list[str]:
    """The residual-risk estimates in plain sentences (internal report only)."""
    lines: list[str] = []
    head = _sample_sentence(risk) if isinstance(risk, dict) else None
    if head:
        lines.append(head)
    link = risk.get("linkage") if isinstance(risk, dict) else None
    if isinstance(link, dict) and "reid_rate" in link:

        def linked(key):
            return _rate(link.get(key), link.get(key + "_se"), link.get(key + "_ci95"))

        note = str(link.get("sample_note") or "")
        lines.append(
            f"Linkage attack: matching released records back to the originals on the "
            f"quasi-identifiers re-identifies {linked('reid_rate')} of the records it tries (without "
            f"any noise: {linked('reid_rate_unperturbed')}; by pure chance: {_pct(link.get('chance_rate'))})."
            + (f" {note[:1].upper()}{note[1:]}." if note else "")
        )
    for name, view in (risk.get("label_views") or {}).items():
        at = view.get("at_epsilon") or {}
        acc = at.get("accuracy") or {}
        errs = at.get("standard_errors") or {}
        acc_se = errs.get("accuracy") or {}
        if acc:
            lines.append(
                f"Label '{name}' at its epsilon {fmt(at.get('epsilon'))}: an attacker who only sees the "
                f"public columns guesses it right {_rate(acc.get('uninformed'), acc_se.get('uninformed'))} of "
                f"the time, one who trusts the released label {_rate(acc.get('naive'), acc_se.get('naive'))}, "
                f"and one who combines both {_rate(acc.get('informed'), acc_se.get('informed'))}."
            )
        iue = at.get("iue_adv_bound") or {}
        if "share_above" in iue:
            share = _rate(iue.get("share_above"), errs.get("iue_share_above"))
            lines.append(
                f"{share} of records ({fmt(iue.get('count_above'))}) have an "
                f"individual unexpected leakage above {fmt(iue.get('threshold'))} "
                f"(Sekiguchi 2024, Prop. 3.0.2)."
            )
        eff = view.get("effective_label_epsilon")
        if isinstance(eff, dict) and eff.get("effective_label_epsilon") is not None:
            lines.append(
                f"Effective epsilon for the label, counting what the public columns reveal: "
                f"{fmt(eff['effective_label_epsilon'])} (an estimate, not a bound)."
            )
    syn = risk.get("synthetic") if isinstance(risk, dict) else None
    if isinstance(syn, dict):
        dcr = syn.get("dcr") or {}
        mia = syn.get("membership_inference") or {}
        if "median_ratio" in dcr:
            copies = _rate(dcr.get("share_synthetic_exact_copies"), dcr.get("share_synthetic_exact_copies_se"))
            lines.append(
                f"Synthetic data: the median distance from a synthetic row to its closest training "
                f"row is {fmt(dcr['median_ratio'])} times the holdout's (below 1 would suggest "
                f"copying); {copies} exact copies."
            )
        if "advantage" in mia:
            adv_pm = (
                f" \u00b1 {fmt(1.96 * float(mia['advantage_se']), 2)}"
                if mia.get("advantage_se") and mia["advantage"] is not None
                else ""
            )
            lines.append(
                f"Membership inference (distance attack): advantage {fmt(mia['advantage'])}{adv_pm} "
                f"(0 = no better than guessing)."
            )
    for unit, view in ((risk.get("embedding") or {}) if isinstance(risk, dict) else {}).items():
        at = view.get("at_epsilon") if isinstance(view, dict) else None
        if at:
            lines.append(
                f"Embeddings '{unit}': a nearest-neighbour attacker re-identifies "
                f"{_rate(at.get('reid_rate'), at.get('reid_rate_se'))} of the replaced vectors; "
                f"mean angular distortion "
                f"{fmt(at.get('mean_angular_distortion'))}."
            )
    return lines


def _eps(x) -> str:
    return fmt(float(x), 4) if x is not None else "\u2014"


def _loss_text(eps, delta) -> str:
    return f"\u03b5 = {_eps(eps)}, \u03b4 = {fmt(float(delta or 0.0))}"


# ---- pieces ------------------------------------------------------------------------------------


def _dp_domains(result) -> dict:
    """Domains estimated with DP at release time (DP outputs: publishable)."""
    stats = getattr(result.outcome, "steward_stats", None) or {}
    return {k.split(":", 1)[1]: v for k, v in stats.items() if isinstance(k, str) and k.startswith("dp_domain:")}


def _domain_text(col, dp_values, external: bool, estimate=None) -> tuple[str, str, bool]:
    """``estimate``: the plan's domain unit of ``col`` (its cost is part of the plan's total)."""
    d = col.domain
    if col.role in ("identifier", "ignore"):
        return "\u2014", "dropped, not released", False
    if d is None:
        return "\u2014", "\u2014", False
    src = T.SOURCE_TEXT.get(d.source, d.source)
    if d.source == "dp" and estimate is not None:
        src += f" (cost {_loss_text(estimate.epsilon, estimate.delta)}, included in the total)"
    if d.source == "data" and external:
        return T.WITHHELD, src, True
    if d.kind == "numeric":
        lo, hi = d.low, d.high
        if (lo is None or hi is None) and isinstance(dp_values, list) and len(dp_values) == 2:
            lo, hi = dp_values
        if lo is None or hi is None:
            rng = f"searched in [{fmt(d.search_low)}, {fmt(d.search_high)}]" if d.search_low is not None else "\u2014"
            return rng, src, d.source == "data"
        return f"[{fmt(lo)}, {fmt(hi)}]", src, d.source == "data"
    cats = d.categories
    if cats is None and isinstance(dp_values, list):
        cats = tuple(dp_values)
    if cats is None:
        return "\u2014", src, d.source == "data"
    shown = ", ".join(str(c) for c in cats[:12])
    if len(cats) > 12:
        shown += f", \u2026 ({len(cats)} in all)"
    if d.other:
        shown += f" (other values \u2192 {d.other})"
    return shown, src, d.source == "data"


def _copied_columns(recipe) -> set[str]:
    return {
        c.name
        for c in recipe.columns
        if c.domain is not None and c.domain.source == "data" and c.role not in ("identifier", "ignore")
    }


def inferred_caveat(recipe) -> str | None:
    """The caveat for column types and roles read from the private data and never confirmed:
    the type fixes the output grid and the role whether a column is released, so one record
    can change either (like a domain copied from the data, they are not the user's choice)."""
    from dpstudio.recipe.validate import inferred_facts

    facts = inferred_facts(recipe)
    if not facts:
        return None
    parts = [f"{f['column']} (" + ", ".join(f"{k} {f[k]}" for k in ("type", "role") if k in f) + ")" for f in facts]
    return (
        "Column types or roles read from the private data and not confirmed by the user: "
        + "; ".join(parts)
        + ". They decide the released form (an integer or a float grid) and which "
        "columns are released, so a single record can change them; confirm them as public choices "
        "(recipe init --type/--role/--confirm-inferred, or the Columns page)."
    )


def redacted_recipe_json(recipe, external: bool) -> dict:
    """The recipe for reproduction; externally, values copied from the data are withheld and
    the input path is reduced to the file name."""
    data = copy.deepcopy(recipe.to_json())
    if not external:
        return data
    copied = _copied_columns(recipe)
    for c in data.get("columns", []):
        if c.get("name") in copied and "domain" in c:
            for key in ("low", "high", "categories", "other"):
                if key in c["domain"]:
                    c["domain"][key] = T.WITHHELD
    if "input" in data and "path" in data["input"]:
        data["input"]["path"] = Path(str(data["input"]["path"])).name
    if "input" in data and "sha256" in data["input"]:
        data["input"]["sha256"] = T.WITHHELD  # a hash of the raw file is not a DP output
    return data


#: noise parameters fixed by a unit's domain: withheld externally when it was copied from the data
DOMAIN_DERIVED = ("scale", "sigma", "grid_step", "keep_probability", "other_probability", "categories")
#: parameters that grow with a numeric domain: a provisional unit shows them as a worst case
WORST_CASE = ("scale", "sigma", "grid_step")
_WORST_CASE_TEXT = "(worst case: whole search range; the scale depends on the DP estimate of the bounds)"


def _hidden(unit, copied: set[str], external: bool) -> bool:
    """Whether the external variant withholds ``unit``'s domain-derived numbers (its domain, or
    one of its columns', was copied from the data)."""
    return external and bool(set(unit.columns) & copied)


def _fact_text(v) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) if isinstance(x, str) else fmt(x) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, ensure_ascii=False, default=str)
    return fmt(v)


def unit_parameters(unit, hide: bool = False) -> list[str]:
    """What the report prints as a unit's parameters, read off the compiled plan unit: its
    description, its noise parameters (``unit.noise``) and its public facts (``unit.facts``).

    A provisional unit (built on the public search range before a DP domain estimate) shows its
    worst case; ``hide`` withholds the numbers fixed by a domain copied from the data."""
    params = [unit.description] if unit.description else []
    noise = unit.noise.items()
    worst = unit.provisional and unit.search_range is not None
    for key, label in T.NOISE_LABELS.items():
        if key not in noise:
            continue
        if hide and key in DOMAIN_DERIVED:
            params.append(f"{label} = {T.WITHHELD}")
        elif worst and key in WORST_CASE:
            params.append(f"{label} \u2264 {fmt(noise[key])} {_WORST_CASE_TEXT}")
        elif not unit.provisional:
            params.append(f"{label} = {fmt(noise[key])}")
    if unit.provisional and not worst:
        params.append("parameters depend on the category list selected with DP at release time")
    if unit.noise.zcdp_rho is not None:
        params.append(f"zCDP \u03c1 = {fmt(unit.noise.zcdp_rho)} (calibrated jointly with the other Gaussian columns)")
    for key, value in unit.facts.items():
        if key == "calibration" and unit.noise.zcdp_rho is not None:
            continue  # said by the zCDP line
        label = T.FACT_LABELS.get(key, key.replace("_", " "))
        text = _fact_text(value)
        words = isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value))
        params.append(f"{label}: {text}" if words else f"{label} = {text}")
    return params


def _error_text(unit, hide: bool = False) -> str:
    """A unit's expected error as printed (``unit.expected_error``; a provisional numeric unit's is
    its worst case)."""
    err = unit.expected_error
    if err is None:
        return "\u2014"
    if hide:
        return T.WITHHELD
    if unit.provisional:
        return f"\u2264 {fmt(err)} (worst case)" if unit.search_range is not None else "\u2014"
    return fmt(err)


def accuracy_units(plan, copied: set[str], external: bool) -> tuple[list, list[str]]:
    """The plan units the Accuracy table and chart show (perturbations with an expected error
    and a floor), and the names of those left out, with why."""
    units, skipped = [], []
    for u in plan.perturbation_units:
        if u.expected_error is None or u.floor is None or u.mechanism_name not in T.MECHANISM_SHORT:
            skipped.append(u.name)
        elif _hidden(u, copied, external):
            skipped.append(f"{u.name} (withheld: its domain was copied from the data)")
        else:
            units.append(u)
    return units, skipped


def _relative(unit, value: float | None) -> float:
    """An error in the chart's units: relative to the domain's width (numbers) or as is (categories)."""
    if value is None:
        return math.nan
    if unit.mechanism_name in ("laplace", "gaussian"):
        width = unit.domain[1] - unit.domain[0] if unit.domain is not None else math.nan
        return float(value) / width if width > 0 else math.nan
    return float(value)


def error_floor_curves(plan, names, *, points: int = 20) -> dict:
    """The error-vs-floor chart's data, every point compiled by the plan.

    For ``points`` log-spaced budgets around the recipe's epsilon (never above ``MAX_EPSILON``,
    where ``compile_plan`` refuses a recipe: ``at_budget`` does not validate), and that epsilon
    itself, ``plan.at_budget(eps)`` is compiled and each named unit's ``expected_error`` and ``floor``
    read off it (divided by the domain's width for numeric units).  Returns ``{"epsilon": [...],
    "chosen": eps, "units": [{"name", "mechanism", "error": [...], "floor": [...]}]}``; the
    point at ``chosen`` is the plan's own (the Accuracy table's) numbers.  Raises when the plan
    cannot be compiled at another budget (no recipe)."""
    import numpy as np

    from dpstudio.recipe.validate import MAX_EPSILON, MIN_UNIT_EPSILON

    if plan.recipe is None:
        raise ValueError("this plan was not compiled from a recipe")
    chosen = float(plan.recipe.budget.epsilon)
    lo = max(MIN_UNIT_EPSILON, min(0.05, chosen / 4))
    hi = min(MAX_EPSILON, max(20.0, chosen * 4))
    grid = sorted({float(x) for x in np.geomspace(lo, hi, points)} | {chosen})
    curves = [{"name": n, "mechanism": plan.unit(n).mechanism_name, "error": [], "floor": []} for n in names]
    for eps in grid:
        at = plan.at_budget(eps)
        for c in curves:
            u = at.unit(c["name"])
            c["error"].append(_relative(u, u.expected_error))
            c["floor"].append(_relative(u, u.floor))
    return {"epsilon": grid, "chosen": chosen, "units": curves}


def label_guarantee_rows(label) -> list[tuple[str, str]]:
    """The label's formal guarantee as the plan states it (``ReleasePlan.label``)."""
    delta = getattr(label, "delta", 0.0) or 0.0
    what = (
        f"\u03b5 = {_eps(label.epsilon)}"
        + (f", \u03b4 = {fmt(delta)}" if delta > 0 else "")
        + f" for the label \u201c{label.column}\u201d, relative to what the public columns already say"
    )
    rows = [("Label guarantee", what)]
    if label.sensitive_epsilon > 0:
        rest = "the perturbed sensitive columns" if label.release_type == "semi-sensitive" else ""
        rest += (" and " if rest else "") + "the DP estimates of domains, where any"
        rows.append(
            (
                "Made of",
                f"randomized response on the label, \u03b5 = {_eps(label.label_unit_epsilon)}, with {rest}: "
                "the release's whole total, since each part may carry information about the label",
            )
        )
    rows.append(("Basis", label.note))
    return rows


def _flatten(d, prefix="") -> list[tuple[str, str]]:
    rows = []
    if isinstance(d, dict):
        for k, v in d.items():
            rows += _flatten(v, f"{prefix}{k}" if not prefix else f"{prefix} / {k}")
    elif isinstance(d, (list, tuple)) and len(d) <= 12 and all(not isinstance(x, (dict, list)) for x in d):
        rows.append((prefix, ", ".join(fmt(x) for x in d)))
    elif isinstance(d, (list, tuple)):
        for i, v in enumerate(d[:50]):
            rows += _flatten(v, f"{prefix}[{i}]")
    else:
        rows.append((prefix, fmt(d)))
    return rows


# ---- the model ---------------------------------------------------------------------------------

_HOW = {
    "file": "this exact file was already in the ledger",
    "name": "the dataset name in the recipe",
    "rows": "its rows: an edited or re-saved copy of a file already in the ledger",
    "new": "a new dataset (no file in the ledger shares most of its rows)",
}


def _ledger_identity(result, external: bool) -> list:
    """Which dataset the release was charged to and why, and the ledger's head."""
    ident = getattr(result, "ledger_identity", None) or {}
    after = result.ledger_after or result.ledger_before or {}
    name = after.get("dataset_name") or after.get("name") or result.dataset_name
    how = _HOW.get(ident.get("how") or "", "\u2014")
    if ident.get("overrode_match"):
        how = "the user's declaration that it is a new dataset (its rows match a known one)"
    if ident.get("how") == "rows" and not external and ident.get("share_of_rows") is not None:
        # a raw-data estimate: internal version only
        how += f" (about {ident['share_of_rows']:.0%} of rows shared with {ident.get('matched_file') or '?'})"
    declared = "no"
    if ident.get("declared_new"):
        declared = "yes: the user declared this a new dataset"
        if ident.get("overrode_match"):
            declared += " although its rows match a dataset already in the ledger"
    head = (after.get("ledger") or {}).get("head") or {}
    key = "withheld" if external else str(after.get("dataset", ""))[:16]
    rows = [("Dataset in the ledger", f"{name} ({key})"), ("Identified by", how), ("Declared a new dataset", declared)]
    if head:
        rows.append(("Ledger head", f"event {head.get('seq')}, {head.get('hash')}"))
    return rows


def _synth_proven_text(result) -> str | None:
    """The synthesizer's (epsilon, delta) proven for the discrete noise that ran (public: it
    follows from the noise scales, lattices and budget; dpstudio.plan.synthetic)."""
    ps = getattr(result.outcome, "public_stats", None) or {}
    proven = ps.get("synthesizer_proven")
    if not isinstance(proven, dict) or proven.get("epsilon") is None:
        return None
    text = (
        f"Synthesizer ({ps.get('synthesizer', '?')}): proven for the noise as sampled: "
        f"{_loss_text(proven['epsilon'], proven.get('delta'))}"
    )
    if proven.get("gdp_epsilon_continuous") is not None:
        # the shave is ~1e-8: at 4 digits both figures read "1", so print the gap itself
        gap = float(proven["epsilon"]) - float(proven["gdp_epsilon_continuous"])
        text += (
            f" (calibrated as continuous Gaussian noise to \u03b5 = {_eps(proven['gdp_epsilon_continuous'])}, "
            f"{fmt(gap, 3)} less, so that the discrete law's correction, H = "
            f"{fmt(proven.get('lattice_H'), 3)}, stays within the budget)"
        )
    return text + (f". Basis: {proven['basis']}." if proven.get("basis") else ".")


def build_model(result, variant: str = "internal", frame=None, *, charts: bool = True) -> ReportModel:
    if variant not in VARIANTS:
        from dpstudio.errors import UserError

        raise UserError(f"report variant must be 'internal' or 'external', got {variant!r}")
    external = variant == "external"
    recipe, plan = result.recipe, result.plan
    total = plan.total
    comp = plan.composition
    copied = _copied_columns(recipe)
    guarantee = plan.guarantee
    g_name = T.GUARANTEE_NAME.get(guarantee, guarantee)
    data = getattr(result.outcome, "data", None)
    n_rows = len(frame) if frame is not None else None
    n_out = len(data) if data is not None else None

    banner = (
        "EXTERNAL VERSION \u2014 for publication: contains only the differentially private "
        "outputs and public information."
        if external
        else "INTERNAL VERSION \u2014 contains figures computed on the raw data. Do not publish; "
        "use the external version for that."
    )
    header = [
        ("Dataset", result.dataset_name),
        # a hash of the raw file can be brute-forced by someone who knows all but one value
        (
            "Input fingerprint (SHA-256)",
            "withheld in the external version (a hash of the raw data; the internal report and the ledger have it)"
            if external
            else result.input_sha256,
        ),
        ("Release id", result.release_id),
        ("Date (UTC)", result.started_at.replace("T", " ").replace("+00:00", "")),
        ("dpstudio version", result.version),
        ("Release type", recipe.release.type),
        ("Output file", Path(result.output_path).name if result.output_path else "\u2014"),
        ("Output SHA-256", result.output_sha256 or "\u2014"),
    ]
    sections: list[Section] = []

    # 1. summary
    s = Section("Summary")
    kept = [c for c in recipe.columns if c.role not in ("identifier", "ignore")]
    dropped = [c for c in recipe.columns if c.role in ("identifier", "ignore")]
    if data is not None:
        what = (
            f"A table of {fmt(n_out)} rows and {len(data.columns)} columns derived from "
            f"\u201c{result.dataset_name}\u201d" + (f" ({fmt(n_rows)} rows)" if n_rows is not None else "") + "."
        )
        if recipe.release.type == "synthetic":
            what += (
                " The rows are synthetic: generated by a model trained with differential privacy, not "
                "real people's records."
            )
    else:
        what = (
            f"A {recipe.release.type} computed from \u201c{result.dataset_name}\u201d"
            + (f" ({fmt(n_rows)} rows)" if n_rows is not None else "")
            + " with differential privacy."
        )
    if dropped:
        what += " Dropped before release: " + ", ".join(c.name for c in dropped) + "."
    s.add("p", "What was released: " + what)
    s.add(
        "kv",
        [
            ("Guarantee", g_name),
            ("Total privacy loss", _loss_text(total.epsilon, total.delta)),
            ("Accounting method", comp.method),
            ("Neighbouring datasets", "differ in one person's record (replace-one); the number of rows is public"),
        ],
    )
    factor = math.exp(total.epsilon)
    s.add(
        "p",
        T.EPSILON_PLAIN.format(
            eps=_eps(total.epsilon),
            factor=fmt(factor, 3),
            delta_part=T.DELTA_PLAIN.format(delta=fmt(total.delta)) if total.delta else "",
        ),
    )
    s.add("p", "What the guarantee means: " + T.GUARANTEE_MEANS.get(guarantee, T.GUARANTEE_MEANS["record-level"]))
    if plan.label is not None:
        s.add("kv", label_guarantee_rows(plan.label))
    if comp.metric_epsilon:
        s.add("p", T.METRIC_PLAIN.format(eps=_eps(comp.metric_epsilon)))
    s.add("p", "What it does not mean:")
    s.add("list", list(T.GUARANTEE_DOES_NOT_MEAN))
    if copied:
        s.add(
            "warn",
            "Domains of " + ", ".join(sorted(copied)) + " were copied from the private data. "
            "They are not protected by the guarantee" + (" and are withheld from this version." if external else "."),
        )
    caveat = inferred_caveat(recipe)
    if caveat:
        s.add("warn", caveat)
    if recipe.randomness.seed is not None:
        s.add(
            "warn",
            "A fixed random seed was used: the noise can be reproduced by anyone who knows the "
            "seed. Not acceptable for a production release.",
        )
    if not getattr(result, "ledger_recorded", result.ledger_after is not None):
        s.add(
            "warn",
            "Not recorded in any ledger: this release was not recorded in a privacy budget "
            "ledger, so its spend is not tracked.",
        )
    sections.append(s)

    # 2. columns
    s = Section("Columns")
    dpv = _dp_domains(result)
    estimate_of = {u.columns[0]: u for u in plan.units if u.kind == "domain"}
    rows = []
    for c in recipe.columns:
        dom, src, flag = _domain_text(c, dpv.get(c.name), external, estimate_of.get(c.name))
        unit = plan.unit_of_column(c.name)
        if unit is not None:
            mech = unit.mechanism_name
        else:
            mech = "dropped" if c.role in ("identifier", "ignore") else "released unchanged"
        # as in the caveat: a dropped column's type changes nothing, so only its role is marked
        inferred = " (inferred)"
        type_inferred = c.type_source != "confirmed" and c.role not in ("identifier", "ignore")
        rows.append(
            [
                Cell(c.name, flag),
                Cell(T.ROLE_TEXT.get(c.role, c.role) + (inferred if c.role_source != "confirmed" else "")),
                Cell(c.type + (inferred if type_inferred else "")),
                Cell(dom, flag),
                Cell(src, flag),
                Cell(T.MECHANISM_TEXT.get(mech, mech)),
            ]
        )
    s.add(
        "table",
        {
            "head": ["Column", "Role", "Type", "Domain", "Domain source", "Treatment"],
            "rows": rows,
            "widths": [13, 14, 13, 24, 21, 15],
        },
    )
    s.add(
        "note",
        "A domain is the range of values (numbers) or list of categories (text) a column may "
        "take. It must be public knowledge or estimated with differential privacy; values "
        "copied from the data (in red) can identify people.",
    )
    unchanged = [c.name for c in kept if plan.unit_of_column(c.name) is None]
    if unchanged:
        s.add("warn", "Released without noise (not protected by the guarantee): " + ", ".join(unchanged) + ".")
    sections.append(s)

    # 3. mechanisms
    s = Section("Mechanisms and parameters")
    rows = []
    released = [u for u in plan.units if u.kind != "domain"]
    for u in released:
        hide = _hidden(u, copied, external)
        rows.append(
            [
                Cell(u.name),
                Cell(T.MECHANISM_TEXT.get(u.mechanism_name, u.mechanism_name)),
                Cell(_eps(u.epsilon)),
                Cell(fmt(u.delta)),
                Cell("\n".join(unit_parameters(u, hide)) or "\u2014"),
                Cell(_error_text(u, hide)),
            ]
        )
    if rows:
        s.add(
            "table",
            {
                "head": ["Unit", "Mechanism", "ε", "δ", "Parameters", "Expected error"],
                "rows": rows,
                "widths": [12, 18, 9, 9, 39, 13],
            },
        )
        if any(u.noise.zcdp_rho is not None for u in released):
            s.add(
                "note",
                "The Gaussian columns share one zero-concentrated-DP budget ρ (their ρ's add): each "
                "one's ε and δ above is its own guarantee alone; together they spend the ε and δ "
                "of the accounting below, less than their ε's added up.",
            )
    else:
        s.add("p", "No per-column mechanism: see the accounting transcript.")
    sections.append(s)

    # 4. accounting
    s = Section("Privacy accounting")
    s.add(
        "kv",
        [
            ("Method", comp.method),
            ("Total", _loss_text(total.epsilon, total.delta)),
            *(
                [("Metric DP (separate)", f"\u03b5 = {_eps(comp.metric_epsilon)} per unit distance")]
                if comp.metric_epsilon
                else []
            ),
        ],
    )
    # The totals the accountant's other methods would give: internal only.  They are not the
    # guarantee, and some depend on figures the external variant withholds (randomized
    # response's RDP curve depends on its number of categories, which may be copied from the data).
    unused = {k: v for k, v in (getattr(comp, "alternatives", None) or {}).items() if k != comp.method}
    if unused and not external:
        s.add(
            "note",
            f"Other accounting methods, not used (the total above is the {comp.method} method's); internal only:",
        )
        s.add(
            "table",
            {
                "head": ["Method not used", "ε", "δ"],
                "rows": [[Cell(k), Cell(_eps(v[0])), Cell(fmt(float(v[1])))] for k, v in unused.items()],
            },
        )
    estimates = [u for u in plan.units if u.kind == "domain"]
    if estimates:
        s.add(
            "p",
            "Domains estimated with differential privacy before the columns were released; their "
            "cost is part of the total:",
        )
        s.add(
            "table",
            {
                "head": ["Estimate", "Method", "ε", "δ"],
                "rows": [
                    [
                        Cell(u.name),
                        Cell(T.MECHANISM_TEXT.get(u.mechanism_name, u.mechanism_name)),
                        Cell(_eps(u.epsilon)),
                        Cell(fmt(u.delta)),
                    ]
                    for u in estimates
                ],
                "widths": [30, 46, 12, 12],
            },
        )
    s.add("pre", "\n".join(comp.transcript), caption="Accounting transcript")
    proven = _synth_proven_text(result)
    if proven:
        s.add("p", proven)
    sections.append(s)

    # 5. ledger
    s = Section("Privacy budget ledger")
    if not getattr(result, "ledger_recorded", result.ledger_after is not None):
        s.add(
            "warn",
            "Not recorded in any ledger: the spend of this release is not tracked"
            + (" (an existing ledger was consulted, so its cap still applied)." if result.ledger_before else "."),
        )
    if result.ledger_before is not None or result.ledger_after is not None:
        s.add("kv", _ledger_identity(result, external))
        for r in ((result.ledger_after or result.ledger_before or {}).get("ledger") or {}).get("reinitialised") or []:
            lost = r.get("lost_head") or {}
            s.add(
                "warn",
                f"This ledger was re-initialised on {str(r.get('time') or '?').replace('T', ' ')} after it "
                f"lost recorded history"
                + (f" (it had {lost.get('seq')} chained events, head {str(lost.get('hash'))[:16]})" if lost else "")
                + ": spend recorded before that may be missing from the figures below.",
            )

        def _b(sm, key):
            if not sm or sm.get(key) is None:
                return "no cap set" if key in ("cap", "remaining") else "\u2014"
            v = sm[key]
            return f"\u03b5 = {_eps(v.get('epsilon'))}, \u03b4 = " + (
                "not capped" if v.get("delta") is None else fmt(float(v.get("delta")))
            )

        rows = [
            [Cell(lbl), Cell(_b(result.ledger_before, key)), Cell(_b(result.ledger_after, key))]
            for lbl, key in (("Cap", "cap"), ("Spent", "spent"), ("Remaining", "remaining"))
        ]
        rows.append(
            [
                Cell("Releases recorded"),
                Cell(fmt((result.ledger_before or {}).get("releases", 0))),
                Cell(fmt((result.ledger_after or {}).get("releases", 0))),
            ]
        )
        s.add(
            "table", {"head": ["", "Before this release", "After this release"], "rows": rows, "widths": [20, 40, 40]}
        )
        s.add(
            "note",
            "Spend adds up across releases of the same dataset (basic composition). A file is "
            "matched to its dataset by its SHA-256 fingerprint, by the dataset name in the "
            "recipe, or by its rows (keyed sketches), so renaming, re-saving, re-ordering or "
            "correcting a few records does not reset it. The ledger head is the last link of "
            "the hash chain over every recorded fact; a later ledger must still contain it "
            "(dpstudio ledger verify --head).",
        )
    sections.append(s)

    # 6. accuracy
    s = Section("Accuracy")
    units, skipped = accuracy_units(plan, copied, external)
    images = {}
    if units:
        rows = []
        for u in units:
            final = not u.provisional
            ratio = u.expected_error / u.floor if final and u.floor > 0 else None
            rows.append(
                [
                    Cell(u.name),
                    Cell(T.MECHANISM_SHORT[u.mechanism_name]),
                    Cell(_eps(u.epsilon)),
                    Cell(_error_text(u)),
                    Cell(fmt(u.floor) if final else "\u2014"),
                    Cell(f"{ratio:.2f} \u00d7" if ratio else "\u2014"),
                ]
            )
        s.add(
            "p",
            "Expected error of each column against its floor: the smallest worst-case error any "
            "mechanism with the same \u03b5 and \u03b4 can achieve (a theoretical lower bound: "
            "Jazbec 2018, Thm 5.3 for numbers, Thm 5.5 for categories). Numbers: average absolute difference "
            "between released and true value, in the column's units. Categories: probability that "
            "the released category is wrong.",
        )
        s.add(
            "table",
            {"head": ["Unit", "Mechanism", "ε of the unit", "Expected error", "Floor", "Error / floor"], "rows": rows},
        )
        png = None
        if charts:
            try:  # a chart must never stop a report
                from dpstudio.report.pdf.charts import error_floor_chart

                png = error_floor_chart(error_floor_curves(plan, [u.name for u in units]))
            except Exception:
                png = None
        if png:
            budget = (
                "the release's total \u03b5"
                if not any(u.kind == "domain" for u in plan.units)
                else "the \u03b5 budget the columns share (the DP domain estimates' cost comes on top)"
            )
            s.add(
                "image",
                "error_floor.png",
                caption=f"Expected error (solid) and floor (dashed) against {budget}, each point compiled "
                "by the release plan at that budget; numbers relative to the column's range. The "
                "dotted line marks the chosen \u03b5, where the dots are the table's figures.",
            )
            images = {"error_floor.png": png}
    else:
        s.add("p", "No per-column accuracy figures for this release type.")
    if skipped:
        s.add("note", "Not shown: " + ", ".join(skipped) + ".")
    sections.append(s)

    # 7. utility (DP outputs only)
    ps = getattr(result.outcome, "public_stats", None) or {}
    if ps:
        s = Section("Utility of the released data")
        s.add("note", "Computed from the differentially private output only.")
        flat = _flatten(
            {
                k: v
                for k, v in ps.items()
                if k not in ("synthesizer_transcript", "synthesizer_training", "synthesizer_proven")
            }
        )
        if flat:
            s.add("kv", flat[:60])
        if ps.get("synthesizer_transcript"):
            s.add("pre", "\n".join(map(str, ps["synthesizer_transcript"])), caption="Synthesizer accounting")
        sections.append(s)

    # 8. risk and steward statistics (internal only)
    if not external:
        s = Section("Residual risk estimates", internal_only=True)
        s.add("warn", T.RISK_LABEL)
        if result.risk:
            lab = plan.label
            views = (result.risk.get("label_views") or {}) if isinstance(result.risk, dict) else {}
            at = ((views.get(lab.column) or {}).get("at_epsilon") or {}).get("epsilon") if lab is not None else None
            if at is not None and not math.isclose(float(at), lab.label_unit_epsilon, rel_tol=1e-9):
                # the attacker curves hold at the label's own randomized response, never elsewhere
                s.add(
                    "warn",
                    f"The label estimate below was computed at \u03b5 = {_eps(at)}, but the label's "
                    f"randomized response ran at \u03b5 = {_eps(lab.label_unit_epsilon)}: it does not "
                    f"describe this release.",
                )
            lines = risk_summary(result.risk)
            if lines:
                s.add("list", lines)
            s.add("kv", _flatten(result.risk)[:80], caption="All estimates")
        else:
            s.add("p", "No risk estimate was run for this release (dpstudio risk RECIPE computes one).")
        sections.append(s)
        stats = {
            k: v
            for k, v in (getattr(result.outcome, "steward_stats", None) or {}).items()
            if not (isinstance(k, str) and k.startswith("dp_domain:"))
        }
        s = Section("Data steward statistics", internal_only=True)
        s.add("warn", T.STEWARD_LABEL)
        cols_stat = stats.get("columns")
        cols = cols_stat if isinstance(cols_stat, dict) else {}
        # "columns" also holds release-wide counts (a model's "norm_clipped"): those are no row
        rest = {k: v for k, v in stats.items() if k != "columns"}
        rest.update({k: v for k, v in cols.items() if not isinstance(v, dict)})
        cols = {n: v for n, v in cols.items() if isinstance(v, dict)}
        if cols:
            keys = sorted({k for v in cols.values() if isinstance(v, dict) for k in v})
            label = {
                "clipped": "values clipped to the bounds",
                "missing_filled": "missing values filled",
                "mapped_to_other": "values mapped to 'other'",
            }
            s.add(
                "table",
                {
                    "head": ["Column"] + [label.get(k, k) for k in keys],
                    "rows": [[Cell(n)] + [Cell(fmt(v.get(k))) for k in keys] for n, v in cols.items()],
                },
            )
        if rest:
            s.add("kv", _flatten(rest)[:60])
        if not cols and not rest:
            s.add("p", "None recorded.")
        sections.append(s)

    # 9. warnings and acknowledgements
    s = Section("Warnings and acknowledgements")
    warnings = list(dict.fromkeys(list(result.warnings) + list(plan.notes)))
    if warnings:
        s.add("list", warnings)
    else:
        s.add("p", "No warnings.")
    if recipe.acknowledgements:
        s.add("p", "The user acknowledged:")
        s.add("list", [T.ack_text(a) + f" [{a}]" for a in recipe.acknowledgements])
    sections.append(s)

    # 10. randomness and reproduction
    s = Section("Randomness and reproduction")
    s.add(
        "kv",
        [
            ("Randomness source", result.randomness),
            (
                "Kind",
                "cryptographically secure (production)"
                if recipe.randomness.seed is None
                else f"fixed seed {recipe.randomness.seed} (testing only)",
            ),
        ],
    )
    if ps.get("synthesizer_training"):
        # how the generator was trained decides the last digits of a seeded re-run
        s.add("kv", [("Synthesizer training", str(ps["synthesizer_training"]))])
    rj = redacted_recipe_json(recipe, external)
    if not external:  # the recipe's hash covers the input's hash: internal only
        s.add("kv", [("Recipe SHA-256", recipe.sha256())])
    s.add(
        "p",
        "Running this recipe again with dpstudio gives a release with the same guarantee and "
        "cost (new noise unless a fixed seed was used), and spends budget again.",
    )
    s.add("pre", json.dumps(rj, indent=2, ensure_ascii=False), caption="Recipe (JSON)")
    sections.append(s)

    # 11. sign-off
    s = Section("Sign-off")
    s.add("p", T.SIGN_OFF_TEXT)
    s.add("signoff", ["Data steward", "Compliance officer"])
    sections.append(s)

    title = "Differential privacy release report"
    return ReportModel(title=title, variant=variant, banner=banner, header=header, sections=sections, images=images)
