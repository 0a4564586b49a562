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
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from dpstudio.plan.record import clamps_to_bounds
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
    #: who ran the release (the PDF's Author metadata); None when not recorded
    operator: str | None = None


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def fmt(x, digits: int = 4) -> str:
    """A number as the report prints it, the one formatter for every figure: thousands
    separators, at most ``digits`` significant digits below 1,000 (whole numbers from 1,000 on
    are printed in full), no trailing zeros, and never Python's exponent notation: a number
    below 0.001 (or from 10^15 on) reads "1.5 × 10⁻⁶"."""
    if x is None:
        return "\u2014"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "\u2014"
        if math.isinf(x):
            return "\u221e" if x > 0 else "\u2212\u221e"
        if x == 0:
            return "0"
        digits = max(1, int(digits))
        mantissa, exp_text = f"{x:.{digits - 1}e}".split("e")
        exp = int(exp_text)  # after rounding to ``digits`` significant digits
        if exp >= 15 or exp < -3:
            m = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
            return f"{m} \u00d7 10{str(exp).translate(_SUPERSCRIPT)}"
        if exp >= digits - 1 or x == round(x):
            return f"{x:,.0f}"
        text = f"{x:,.{digits - 1 - exp}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return str(x)


def _pct_number(v: float) -> str:
    """A percentage's number: one decimal, two significant digits below 1 % (a linkage rate of
    0.15 % printed as "0.1 %" beside an interval of 0.05-0.44 % read as "0.1-0.4 %")."""
    return fmt(v, 2) if 0 < abs(v) < 1 else f"{v:.1f}"


def _pct(x) -> str:
    if x is None:
        return "\u2014"
    return f"{_pct_number(100 * float(x))} %"


def _pct_half(h: float) -> str:
    """Half-width of an interval in percent: one decimal, or two significant digits below 0.1 %."""
    v = 100 * float(h)
    return f"{v:.1f} %" if v >= 0.1 else f"{fmt(v, 2)} %"


def _rate(p, se=None, ci=None) -> str:
    """A rate in percent with its 95 % uncertainty: the interval when the estimate gives one
    (Wilson's, which does not collapse at 0 or 1), else +- 1.96 standard errors; nothing when
    the error is 0 (every row used and nothing else random: a ± 0 would only be clutter)."""
    if p is None:
        return "\u2014"
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci and ci[1] > ci[0]:
        return f"{_pct(p)} (95 % interval {_pct_number(100 * float(ci[0]))}\u2013{_pct_number(100 * float(ci[1]))} %)"
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


def _best_attacker_text(view: dict, acc: dict | None = None) -> str:
    """What the "Combine both" row means; in a semi-sensitive release the attackers ignore the
    perturbed sensitive columns, so "the best" is only the best of these (a lower bound).  It is
    called the best only when it scored highest (its model of the public columns is estimated, so
    on a given table the plain "take the released label" attacker can score a little higher)."""
    acc = acc or {}
    informed, others = acc.get("informed"), [acc.get(k) for k in ("uninformed", "naive")]
    best = informed is not None and all(o is None or informed >= o for o in others)
    if view.get("note_semi_sensitive"):
        return (
            ("the best of these three attackers" if best else "the Bayes rule for the noise")
            + ", which ignore the perturbed sensitive columns: one that "
            "uses them too can do better, so this is a lower bound on what the release allows"
        )
    if best:
        return "the best of these attackers: how far above the baseline the release lets it go"
    return (
        "the Bayes rule for the noise on top of the public columns' prediction; here another "
        "attacker above scores higher, as an estimated model of the public columns can: read the highest rate"
    )


def _iue_text(iue: dict) -> str:
    """What the Prop. 3.0.2 share measures (docs/leakage.md): P(y | x, y~) - P(y | y~) on a
    record whose label was kept -- what the PUBLIC columns add to the released label, not
    what the release adds to the public columns."""
    return (
        f"for these people, knowing the public columns as well as the released label raises an attacker's "
        f"probability of the true label by more than {fmt(iue.get('threshold'))} (when the label was "
        "released unchanged), compared with the released label alone: P(y | public, released) "
        "\u2212 P(y | released), Sekiguchi 2024, Prop. 3.0.2"
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
            if view.get("note_semi_sensitive"):
                note = str(view["note_semi_sensitive"])
                lines.append(f"{note[:1].upper()}{note[1:]}.")
        iue = at.get("iue_adv_bound") or {}
        if "share_above" in iue:
            share = _rate(iue.get("share_above"), errs.get("iue_share_above"))
            lines.append(
                f"{share} of records ({fmt(iue.get('count_above'))}): the public columns add more than "
                f"{fmt(iue.get('threshold'))} to the probability of their true label an attacker reads from "
                f"the released label alone (Sekiguchi 2024, Prop. 3.0.2, on labels released unchanged)."
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
    if getattr(d, "missing", False):  # a public schema fact, declared like the domain
        src += "; may be empty (missing values kept as a value of their own)"
    if d.source == "dp" and estimate is not None:
        share = _own_share(estimate)
        if share is not None:  # a part of a total composed tightly (a synthetic release's split)
            alone = _loss_text(estimate.epsilon, estimate.delta)
            src += f" (part of the total: \u03b5 {_eps(share[0])}; on its own {alone})"
        else:
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


def _own_share(unit) -> tuple[float, float] | None:
    """A unit's part of the typed total when it differs from its stand-alone (epsilon, delta): the
    plan composed its parts more tightly than by adding them (a synthetic release's split)."""
    share = getattr(unit, "budget_share", None)
    if not share or share[0] is None or math.isclose(float(share[0]), float(unit.epsilon), rel_tol=1e-6):
        return None
    return float(share[0]), float(share[1])


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

    def listed(f: dict) -> str:
        bits = [f"{k} {f[k]}" for k in ("type", "role") if k in f]
        if f.get("may be empty"):
            bits.append("may be empty")
        return f"{f['column']} (" + ", ".join(bits) + ")"

    return (
        "Column facts read from the private data and not confirmed by the user: "
        + "; ".join(listed(f) for f in facts)
        + ". They decide the released form (an integer or a float grid, whether a column has "
        "empty cells) and which columns are released, so a single record can change them; "
        "confirm them as public choices (recipe init --type/--role/--confirm-inferred, or the "
        "Columns page)."
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
        return "; ".join(f"{k}: {_fact_text(x)}" for k, x in v.items())
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
    """A unit's expected error as printed (``unit.shown_error``: after clamping to the bounds when
    the release clamps; a provisional numeric unit's is its worst case)."""
    err = unit.shown_error
    if err is None:
        return "\u2014"
    if hide:
        return T.WITHHELD
    if unit.provisional:
        return f"\u2264 {fmt(err)} (worst case)" if unit.search_range is not None else "\u2014"
    return _unit_value(unit, err)


def _unit_value(unit, value: float) -> str:
    """An error figure in the unit's own terms: a category unit's is a probability, printed as a
    percentage as the wizard prints it; a numeric unit's is in the column's units."""
    if unit.mechanism_name == "rr":
        return f"{100 * value:.1f} %" if 100 * value >= 0.1 else f"{fmt(100 * value)} %"
    return fmt(value)


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
    itself, ``plan.at_budget(eps)`` is compiled and each named unit's ``shown_error`` and ``floor``
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
            c["error"].append(_relative(u, u.shown_error))
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
        how += f" (about {ident['share_of_rows']:.0%} of rows shared with {ident.get('matched_file') or '?'}"
        how += ", over all but one column)" if ident.get("over_columns") else ")"
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
        f"Synthesizer ({_SYNTH_NAME.get(str(ps.get('synthesizer')), ps.get('synthesizer', '?'))}): "
        "proven for the noise as sampled: "
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


# ---- synthetic releases ----------------------------------------------------------------------

#: a line of the synthesizer's transcript (dpstudio.plan.synthetic.execute)
_TRANSCRIPT_LINE = re.compile(
    r"^(?P<label>.*): epsilon=(?P<epsilon>[^,]+), delta=(?P<delta>[^,]+)(?:, mu=(?P<mu>[^,]+))?\s*$"
)


def _number(text) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def synthesizer_components(public_stats: dict) -> list[dict]:
    """The synthesizer's own record of its noisy releases, one dict per release with ``label``,
    ``epsilon``, ``delta`` and ``mu`` (Gaussian releases' GDP parameter, else None): read from
    ``public_stats["synthesizer_components"]`` when the release recorded them as such, else from
    its accounting transcript (the lines :mod:`dpstudio.plan.synthetic` writes).  Nothing is
    recomputed: these are the synthesizer's figures."""
    comps = public_stats.get("synthesizer_components")
    if isinstance(comps, list) and comps and all(isinstance(c, dict) for c in comps):
        return [
            {
                "label": str(c.get("label", "")),
                "epsilon": _number(c.get("epsilon")),
                "delta": _number(c.get("delta")),
                "mu": _number(c.get("mu", c.get("gdp_mu"))),
            }
            for c in comps
        ]
    out = []
    for line in public_stats.get("synthesizer_transcript") or ():
        m = _TRANSCRIPT_LINE.match(str(line))
        if m:
            out.append(
                {
                    "label": m["label"],
                    "epsilon": _number(m["epsilon"]),
                    "delta": _number(m["delta"]),
                    "mu": _number(m["mu"]),
                }
            )
    return out


_SYNTH_NAME = {"mst": "MST", "pearl": "PEARL", "merf": "DP-MERF", "aim": "AIM"}
#: synthesizers whose releases compose in zero-concentrated DP (the others in Gaussian DP)
_ZCDP_SYNTHS = ("mst", "aim")
_ONE_WAY = re.compile(r"^1-way (?P<a>.+)$")
_ONE_WAY_AGAIN = re.compile(r"^1-way (?P<a>.+) \(round \d+\)$")
_K_WAY = re.compile(r"^(?P<k>[23])-way (?P<cols>.+)$")
_EDGE = re.compile(r"^tree edge \d+ \(exponential mechanism\)$")
_ROUND = re.compile(r"^selection round \d+ \(exponential mechanism\)$")
_K_NAME = {"2": "two-way", "3": "three-way"}


def _part_kind(label: str) -> tuple[str, str | None]:
    """(group title, item) of one release's label ("MST: 1-way Age" -> ("one-way marginals", "Age"))."""
    tail = label.split(": ", 1)[1] if ": " in label else label
    m = _ONE_WAY_AGAIN.match(tail)
    if m:
        return "one-way marginals measured again (chosen in a round)", m["a"]
    m = _ONE_WAY.match(tail)
    if m:
        return "one-way marginals", m["a"]
    m = _K_WAY.match(tail)
    if m:
        along = " along the tree" if label.startswith("MST") else ""
        return f"{_K_NAME[m['k']]} marginals{along}", " \u00d7 ".join(m["cols"].split(" x "))
    if _EDGE.match(tail):
        return "tree edges chosen", None
    if _ROUND.match(tail):
        return "marginals chosen (one per round)", None
    return tail, None


def _listing(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", \u2026 ({len(items)} in all)" if len(items) > limit else "")


def synthesizer_groups(components: list[dict]) -> list[dict]:
    """The releases grouped by what they measured, in the order they ran: ``title``, ``count``,
    ``items`` (marginals' columns), ``mechanism``, and the per-release ``mu`` / ``epsilon`` (a
    tuple of the distinct values recorded)."""
    groups: dict[str, dict] = {}
    for c in components:
        title, item = _part_kind(c["label"])
        g = groups.setdefault(title, {"title": title, "count": 0, "items": [], "mu": [], "epsilon": [], "delta": []})
        g["count"] += 1
        if item:
            g["items"].append(item)
        g["mu"].append(c["mu"])
        g["epsilon"].append(c["epsilon"])
        g["delta"].append(c["delta"])
    out = []
    for g in groups.values():
        gaussian = all(m is not None for m in g["mu"])
        exponential = "exponential" in g["title"] or g["title"] in (
            "tree edges chosen",
            "marginals chosen (one per round)",
        )
        g["mechanism"] = "Gaussian noise" if gaussian else ("exponential mechanism" if exponential else "\u2014")
        g["gaussian"] = gaussian
        out.append(g)
    return out


def _each(values: list) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "\u2014"
    lo, hi = min(vals), max(vals)
    return fmt(lo) if math.isclose(lo, hi, rel_tol=1e-3) else f"{fmt(lo)} to {fmt(hi)}"


def _domain_estimate_rows(plan) -> list[list[Cell]]:
    """A synthetic release's DP domain estimates as rows of its accounting table: what each found,
    its noise and its part of the joint budget (zCDP rho, approximate-zCDP delta, or Gaussian-DP
    mu), read off the plan's units."""
    rows = []
    for u in plan.units:
        if u.kind != "domain":
            continue
        col = u.columns[0] if u.columns else u.name
        loss = u.loss
        if u.name.startswith("bounds of"):
            what = f"Range of {col} (two quantiles on a public grid)"
        elif u.mechanism_name.endswith("partition selection"):
            what = f"Categories of {col} (values kept when their noisy count passes a threshold)"
        else:
            what = f"Categories of {col} (noisy counts of the listed candidates)"
        releases = 2 if u.name.startswith("bounds of") else 1
        if u.mechanism is None:
            what += ", done before this release"
            noise = f"\u03b5 = {_eps(loss.epsilon)}, \u03b4 = {fmt(loss.delta)} (added by basic composition)"
        elif u.noise.sigma is not None:
            noise = f"Gaussian, \u03c3 = {fmt(u.noise.sigma)}"
            if loss.gdp_mu is not None and plan.composition.method == "gdp":
                noise += f" (\u03bc = {fmt(loss.gdp_mu)})"
            elif loss.zcdp_rho is not None:
                noise += f" (zCDP \u03c1 = {fmt(loss.zcdp_rho)}"
                noise += f"; approximate zCDP, \u03b4 = {fmt(loss.zcdp_delta)})" if loss.zcdp_delta else ")"
        elif loss.zcdp_rho is not None:
            noise = (
                f"exponential mechanism, \u03b5 = {_eps(loss.epsilon / 2)} each "
                f"(zCDP \u03c1 = \u03b5\u00b2/8 each, {fmt(loss.zcdp_rho)} in all, bounded range)"
            )
        else:
            noise = f"\u03b5 = {_eps(loss.epsilon)}, \u03b4 = {fmt(loss.delta)}"
        rows.append([Cell(what), Cell(fmt(releases)), Cell(noise)])
    return rows


def _release_together_row(plan, releases: int) -> list[Cell]:
    """The last row of a synthetic release's accounting with DP domain estimates: every part
    composed, which gives the plan's total (the epsilon chosen)."""
    total = plan.total
    method = plan.composition.method
    if method == "gdp" and total.gdp_mu is not None:
        how = (
            f"Gaussian differential privacy: the domain estimates and the synthesizer compose to "
            f"\u03bc = {fmt(total.gdp_mu)} (\u03bc\u00b2's add), converted to \u03b5 = {_eps(total.epsilon)} "
            f"at \u03b4 = {fmt(total.delta)} (Dong, Roth & Su 2019): the budget chosen"
        )
    elif method == "zcdp+basic" and total.zcdp_rho is not None:
        approx = float(total.zcdp_delta)
        how = (
            f"zero-concentrated DP: the domain estimates' and the synthesizer's \u03c1 add up to "
            f"\u03c1 = {fmt(total.zcdp_rho)}"
            + (f", the thresholds' \u03b4 to {fmt(approx)} (Bun & Steinke 2016)" if approx else "")
            + f"; converted at \u03b4 = {fmt(total.delta - approx)} to \u03b5 = {_eps(total.epsilon)}, "
            f"\u03b4 = {fmt(total.delta)} (Canonne, Kamath & Steinke 2020): the budget chosen"
        )
    else:
        how = f"{method} composition: \u03b5 = {_eps(total.epsilon)}, \u03b4 = {fmt(total.delta)}"
    return [Cell("Together"), Cell(fmt(releases)), Cell(how)]


def synthesizer_accounting(result) -> list[Block]:
    """The synthesizer's accounting as what it is: its releases grouped (what each group measured,
    with which noise), how they compose (zCDP for MST, Gaussian DP for PEARL / DP-MERF), and the
    conversion to the (epsilon, delta) total."""
    ps = getattr(result.outcome, "public_stats", None) or {}
    comps = synthesizer_components(ps)
    if not comps:
        return []
    method = str(ps.get("synthesizer") or "")
    groups = synthesizer_groups(comps)
    zcdp = method in _ZCDP_SYNTHS
    rows, rhos, mus = [], [], []
    for g in groups:
        what = g["title"][:1].upper() + g["title"][1:]
        if g["items"]:
            what += ": " + _listing(g["items"])
        if g["gaussian"]:
            noise = f"Gaussian, \u03bc = {_each(g['mu'])} each"
            if zcdp:
                rho = [m * m / 2 for m in g["mu"]]
                noise += f" (zCDP \u03c1 = \u03bc\u00b2/2 = {_each(rho)})"
                rhos += rho
            mus += [m for m in g["mu"] if m is not None]
        elif g["mechanism"] == "exponential mechanism":
            noise = f"exponential mechanism, \u03b5 = {_each(g['epsilon'])} each"
            if zcdp:
                rho = [e * e / 8 for e in g["epsilon"] if e is not None]
                noise += f" (zCDP \u03c1 = \u03b5\u00b2/8 = {_each(rho)}, bounded range)"
                rhos += rho
        else:
            noise = f"\u03b5 = {_each(g['epsilon'])}, \u03b4 = {_each(g['delta'])} each"
        rows.append([Cell(what), Cell(fmt(g["count"])), Cell(noise)])
    total = next((u for u in result.plan.units if u.kind == "synthesizer"), None)
    found = ps.get("synthesizer_proven")
    proven: dict = found if isinstance(found, dict) else {}
    eps = proven.get("epsilon", total.epsilon if total is not None else None)
    delta = proven.get("delta", total.delta if total is not None else None)
    if zcdp and len(rhos) == len(comps):
        how = (
            f"zero-concentrated DP: the {len(comps)} releases' \u03c1 add up to \u03c1 \u2248 {fmt(sum(rhos))}, "
            f"converted to \u03b5 = {_eps(eps)} at \u03b4 = {fmt(delta)} (Canonne, Kamath & Steinke 2020)"
        )
    elif mus and len(mus) == len(comps):
        how = (
            f"Gaussian differential privacy: the {len(comps)} releases compose to "
            f"\u03bc \u2248 {fmt(math.sqrt(sum(m * m for m in mus)))} (\u03bc\u00b2's add), converted to "
            f"\u03b5 = {_eps(eps)} at \u03b4 = {fmt(delta)} (Dong, Roth & Su 2019)"
        )
    else:
        how = f"composed to \u03b5 = {_eps(eps)}, \u03b4 = {fmt(delta)}"
    domain_rows = _domain_estimate_rows(result.plan)
    if domain_rows:
        rows = domain_rows + rows
        rows.append([Cell("The synthesizer's releases together"), Cell(fmt(len(comps))), Cell(how)])
        rows.append(_release_together_row(result.plan, len(comps) + len(domain_rows)))
    else:
        rows.append([Cell("Together"), Cell(fmt(len(comps))), Cell(how)])
    blocks = [
        Block(
            "p",
            f"What the {_SYNTH_NAME.get(method, method)} synthesizer measured on the data, with "
            "the noise each measurement got"
            + (", after the estimates of the domains that were not public" if domain_rows else "")
            + ". Everything else it did (fitting its model, drawing the "
            "rows) used only these noisy measurements, so it costs no privacy.",
        ),
        Block(
            "table",
            {"head": ["Measured", "Releases", "Noise and privacy of each"], "rows": rows, "widths": [46, 10, 44]},
            caption="Synthesizer accounting",
        ),
        Block(
            "note",
            "\u03bc: the Gaussian noise's privacy parameter (smaller is more private: the noise's standard "
            "deviation is the measurement's sensitivity divided by \u03bc); \u03c1: the same in "
            "zero-concentrated DP. The releases' parameters compose as stated in the last row, not by "
            "adding their separate \u03b5's, which would overstate the loss many times.",
        ),
    ]
    return blocks


def _measured_target(target, unit, original: pd.Series, released: pd.Series) -> float | None:
    """A target's value on this release, from the raw and released columns (internal): the share
    of records within the tolerance among those whose true value lies inside the public bounds
    (``within``), the share whose category was kept among those in the list (``keep``)."""
    if target.kind == "within" and unit.domain is not None:
        o = pd.to_numeric(original, errors="coerce").to_numpy(dtype=float)
        r = pd.to_numeric(released, errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(o) & np.isfinite(r) & (o >= unit.domain[0]) & (o <= unit.domain[1])
        return float(np.mean(np.abs(r[ok] - o[ok]) <= target.value)) if ok.any() else None
    if target.kind == "keep":
        col = next((c for c in (unit.columns or ()) if c == target.column), None)
        if col is None:
            return None
        o_text, r_text = original.astype("string"), released.astype("string")
        both = o_text.notna() & r_text.notna()
        return float((o_text[both] == r_text[both]).mean()) if both.any() else None
    return None


def _solved_as_run(recipe, plan) -> bool:
    """Whether the release ran the budget and split the solver found (a recipe edited after it
    was solved keeps its record, but was then checked against the targets, not solved for them)."""
    solved = recipe.budget.solved.to_dict()
    eps = solved.get("epsilon")
    if eps is None or abs(float(eps) - recipe.budget.epsilon) > 1e-9 * max(float(eps), 1e-12):
        return False
    shares = solved.get("shares") or {}
    for u in plan.units:
        if u.kind == "perturbation" and u.name in shares:
            if abs(float(shares[u.name]) - u.epsilon) > 1e-9 * max(u.epsilon, 1e-12):
                return False
    return True


def targets_section(result, frame, external: bool) -> Section:
    """The targets of the release: each accuracy target's predicted value at the chosen epsilon
    (read off the plan that ran) and, internally, its value measured on this release where that
    needs no further privacy loss; each risk target, internally only, as the check it is (the
    residual-risk estimate, which computes it as the solver did)."""
    from dpstudio.plan.solve import RISK_KINDS, Evidence, describe, meets, predict, value_text

    recipe, plan = result.recipe, result.plan
    s = Section("Targets")
    eps = recipe.budget.epsilon
    solved = _solved_as_run(recipe, plan)
    s.add(
        "p",
        (
            f"The budget (\u03b5 = {_eps(eps)}; the ledger charged {_eps(plan.total.epsilon)}) and its split "
            "across the columns were solved for these targets: the smallest \u03b5 that meets every accuracy "
            "target."
            if solved
            else f"The budget (\u03b5 = {_eps(eps)}) was chosen by hand and checked against these targets."
        )
        + " Each accuracy prediction is read off the release plan that ran (for a share of records "
        "within a tolerance, a lower bound for values inside the public bounds that counts the grid's "
        "rounding) and depends on public choices only.",
    )
    risk = getattr(result, "risk", None) or {}
    data = getattr(result.outcome, "data", None)
    # the number of records (public under replace-one neighbours) a marginals forecast reads
    n = recipe.budget.solved.get("rows") or getattr(result, "rows", None) or (len(frame) if frame is not None else None)
    evidence = Evidence(rows=int(n) if n is not None else None)
    rows = []
    for t in recipe.budget.targets:
        v = None
        if t.kind not in RISK_KINDS and (t.kind != "marginals" or evidence.rows is not None):
            v = predict(plan, t, evidence)
        elif t.kind in RISK_KINDS and not external:
            v = _risk_target_value(t, plan, risk)
        if t.kind in RISK_KINDS and external:
            predicted, met = "an internal check on the raw data (in the internal version)", "\u2014"
        elif v is None:
            predicted, met = "not estimated", "\u2014"
        else:
            predicted = value_text(t, v) + (" (internal estimate)" if t.kind in RISK_KINDS else "")
            met = "yes" if meets(t, v) else "NO"
        row = [Cell(describe(t)), Cell(predicted), Cell(met, flag=met == "NO")]
        if not external:
            measured = "\u2014"
            unit = plan.unit_of_column(t.column) if t.column else None
            if t.kind in RISK_KINDS:
                measured = "an expectation over the noise: not a figure of one release"
            elif t.kind == "marginals" and frame is not None and data is not None:
                synth = next((u for u in plan.units if u.kind == "synthesizer"), None)
                m = synth.mechanism.one_way_tv(recipe, frame, data) if synth is not None and synth.mechanism else None
                # over the synthesizer's own cells, as the target is set (the Fidelity table below
                # compares ten equal bins per number column: another figure, said there)
                measured = value_text(t, m) + " (over the synthesizer's cells)" if m is not None else "\u2014"
            elif frame is None or data is None or unit is None:
                measured = "not measured (the rows were not kept: released block by block)"
            elif t.column in frame.columns and t.column in data.columns and len(frame) == len(data):
                m = _measured_target(t, unit, frame[t.column], data[t.column])
                measured = value_text(t, m) if m is not None else "\u2014"
            row.append(Cell(measured))
        rows.append(row)
    head = ["Target", f"Predicted at \u03b5 = {_eps(eps)}", "Met"] + ([] if external else ["On this release"])
    s.add("table", {"head": head, "rows": rows})
    if any(t.kind in RISK_KINDS for t in recipe.budget.targets):
        s.add(
            "note",
            "Risk targets are checks estimated on the raw data, for the data steward: they never chose or "
            "refused the budget (a budget chosen with them could change with one record, which the "
            "differential-privacy guarantee does not cover)."
            + (" Their figures are in the internal version only." if external else ""),
        )
    if not external:
        s.add(
            "note",
            "\u201cOn this release\u201d is measured against the raw data: internal use only.",
        )
    return s


def _risk_target_value(target, plan, risk: dict) -> float | None:
    """A risk target's value from the residual-risk estimate (the same attacker model or linkage
    attack the solver used: ``dpstudio.risk.evidence_for``)."""
    try:
        if target.kind == "label-attack" and plan.label is not None:
            view = risk["label_views"][plan.label.column]
            return float(view["at_epsilon"]["accuracy"]["informed"])
        if target.kind == "reid":
            return float(risk["linkage"]["reid_rate"])
    except (KeyError, TypeError, ValueError):
        return None
    return None


def _tvd(a: pd.Series, b: pd.Series) -> float:
    """Total variation distance between two distributions given as share series."""
    idx = a.index.union(b.index)
    return float(0.5 * (a.reindex(idx, fill_value=0.0) - b.reindex(idx, fill_value=0.0)).abs().sum())


def _category_keys(values: pd.Series) -> pd.Series:
    """Category values as comparable text: "025", "25" and 25 are one category (a code column
    read as numbers on one side and as text on the other)."""
    text = values.dropna().astype(str).str.strip()
    num = pd.to_numeric(text, errors="coerce")
    integral = num.notna() & (num == num.round()) & (num.abs() < 1e15)
    return text.where(~integral, num.where(integral, 0).round().astype("int64").astype(str))


def _shares(values: pd.Series, col) -> pd.Series:
    """A column's distribution: category shares, or shares of 10 equal bins of its public bounds."""
    d = col.domain
    if d is not None and d.kind == "numeric" and d.low is not None and d.high is not None and d.high > d.low:
        x = pd.to_numeric(values, errors="coerce").dropna().clip(d.low, d.high)
        edges = np.linspace(float(d.low), float(d.high), 11)
        counts = pd.Series(np.histogram(x, bins=edges)[0], dtype=float)
    else:
        counts = _category_keys(values).value_counts().astype(float)
    total = counts.sum()
    return counts / total if total > 0 else counts


def synthetic_utility(result, frame, external: bool) -> list[Section]:
    """The utility section of a synthetic release (figures of the synthetic table only: a
    post-processing of DP outputs) and, internally, its fidelity against the raw data."""
    data = getattr(result.outcome, "data", None)
    if data is None:
        return []
    recipe = result.recipe
    cols = [c for c in recipe.columns if c.name in data.columns]
    s = Section("Utility of the released data")
    s.add(
        "p",
        f"The synthetic table has {fmt(len(data))} rows and {fmt(len(cols))} columns. The figures below "
        "are computed from the synthetic table alone (a post-processing of the differentially private "
        "measurements), so they are as publishable as the table itself.",
    )
    rows = []
    for c in cols:
        v = data[c.name]
        d = c.domain
        if d is not None and d.kind == "numeric":
            x = pd.to_numeric(v, errors="coerce").dropna()
            if len(x):
                q = x.quantile([0.05, 0.5, 0.95])
                lo, mid, hi = (fmt(float(q[k])) for k in (0.05, 0.5, 0.95))
                text = f"median {mid}; 90 % of values between {lo} and {hi}"
            else:
                text = "no values"
        else:
            keys = _category_keys(v)
            counts = keys.value_counts()
            # a list copied from the data is withheld externally, its length with it
            hidden = external and d is not None and d.source == "data"
            declared = len(d.categories) if d is not None and d.categories and not hidden else None
            # a withheld list's values are withheld here too (the Columns table says so)
            # shown as the table writes it ("025", not the comparison key "25")
            top = None
            if len(counts) and not hidden:
                top = v.dropna().astype(str).str.strip()[keys == counts.index[0]].iloc[0]
            text = (
                f"{fmt(len(counts))}"
                + (f" of {fmt(declared)}" if declared else "")
                + (" categor" + ("y" if len(counts) == 1 and not declared else "ies"))
                + (" occurs" if len(counts) == 1 else " occur")
                + (
                    f"; most common \u201c{top}\u201d ({_pct(counts.iloc[0] / counts.sum())})"
                    if top is not None
                    else ""
                )
            )
            if hidden:
                text = "withheld: its category list was copied from the data"
        rows.append([Cell(c.name), Cell(text)])
    fidelity = (getattr(result.outcome, "public_stats", None) or {}).get("synthesizer_fidelity")
    if isinstance(fidelity, dict) and fidelity:
        # both sides are DP outputs: the synthesizer's own noisy one-way measurements and the table
        for r in rows:
            tvd = fidelity.get(r[0].text)
            r.append(Cell(f"{_pct(tvd)} ({_fidelity_words(tvd, 'measured')})" if tvd is not None else "—"))
        s.add(
            "table",
            {
                "head": ["Column", "In the synthetic table", "Distance to the noisy marginal"],
                "rows": rows,
                "widths": [20, 50, 30],
            },
        )
        s.add(
            "note",
            "Distance: the share of rows that would have to change for the synthetic column to "
            "match the one-way distribution the synthesizer measured with noise (total variation). Both "
            "are differentially private outputs, so this figure may be published; it shows how well "
            "the model fits its own measurements, not how close they are to the real data.",
        )
    else:
        s.add("table", {"head": ["Column", "In the synthetic table"], "rows": rows, "widths": [25, 75]})
    sections = [s]
    if external:
        return sections
    s.add(
        "note",
        "The internal version adds, in the next section, how closely each column of the synthetic "
        "table follows the real data: a figure computed on the raw data.",
    )
    f = Section("Fidelity against the raw data", internal_only=True)
    f.add("warn", T.RISK_LABEL)
    if frame is None:
        f.add("p", "Not computed: the raw data was not available when the report was written.")
        return sections + [f]
    rows = []
    for c in cols:
        if c.name not in frame.columns:
            continue
        tvd = _tvd(_shares(frame[c.name], c), _shares(data[c.name], c))
        rows.append([Cell(c.name), Cell(_pct(tvd)), Cell(_fidelity_words(tvd))])
    f.add(
        "p",
        "For each column, the share of rows that would have to change for the synthetic column's "
        "distribution to match the real one (total variation distance; numbers compared in ten "
        "equal bins of their public bounds, so a marginals target's figure, over the synthesizer's "
        "own cells, differs from their mean). 0 % is a perfect match.",
    )
    f.add("table", {"head": ["Column", "Distance", "Reading"], "rows": rows, "widths": [30, 20, 50]})
    return sections + [f]


def _fidelity_words(tvd: float, against: str = "real") -> str:
    what = f"the {against} distribution"
    if tvd < 0.05:
        return f"close to {what}"
    if tvd < 0.15:
        return f"roughly follows {what}"
    if tvd < 0.3:
        return f"departs noticeably from {what}"
    return f"far from {what}" + (": do not rely on this column" if against == "real" else "")


# ---- residual risk -------------------------------------------------------------------------


def risk_tables(risk: dict) -> list[Block]:
    """The residual-risk estimates as tables a person reads: attack, figure, what it means."""
    if not isinstance(risk, dict):
        return []
    blocks: list[Block] = []
    rows: list[list[Cell]] = []
    link = risk.get("linkage")
    if isinstance(link, dict):
        if "reid_rate" in link:

            def linked(key):
                return _rate(link.get(key), link.get(key + "_se"), link.get(key + "_ci95"))

            rows += [
                [
                    Cell("Linkage: match each released record back to the real one"),
                    Cell(linked("reid_rate")),
                    Cell("share of the records the attacker tried that it re-identified in a simulated release"),
                ],
                [
                    Cell("The same, had the data been released without noise"),
                    Cell(linked("reid_rate_unperturbed")),
                    Cell("how identifying the released columns are on their own"),
                ],
                [
                    Cell("The same, by pure chance"),
                    Cell(_pct(link.get("chance_rate"))),
                    Cell("what guessing achieves: the rate above should be close to this"),
                ],
            ]
        elif link.get("note"):
            rows.append([Cell("Linkage"), Cell("not available"), Cell(str(link["note"]))])
    for name, view in (risk.get("label_views") or {}).items():
        at = view.get("at_epsilon") or {}
        acc = at.get("accuracy") or {}
        errs = at.get("standard_errors") or {}
        acc_se = errs.get("accuracy") or {}
        if acc:
            rows += [
                [
                    Cell(f"Guess \u201c{name}\u201d from the public columns only"),
                    Cell(_rate(acc.get("uninformed"), acc_se.get("uninformed"))),
                    Cell("share guessed right without the release: the baseline"),
                ],
                [
                    Cell(f"Take the released \u201c{name}\u201d as true"),
                    Cell(_rate(acc.get("naive"), acc_se.get("naive"))),
                    Cell(f"share right when trusting the noisy label (\u03b5 = {_eps(at.get('epsilon'))})"),
                ],
                [
                    Cell("Combine both"),
                    Cell(_rate(acc.get("informed"), acc_se.get("informed"))),
                    Cell(_best_attacker_text(view, acc)),
                ],
            ]
        iue = at.get("iue_adv_bound") or {}
        if "share_above" in iue:
            rows.append(
                [
                    Cell(
                        f"Records where the public columns add more than {fmt(iue.get('threshold'))} "
                        f"to what the released \u201c{name}\u201d says"
                    ),
                    Cell(
                        f"{_rate(iue.get('share_above'), errs.get('iue_share_above'))} "
                        f"({fmt(iue.get('count_above'))} records)"
                    ),
                    Cell(_iue_text(iue)),
                ]
            )
        eff = view.get("effective_label_epsilon")
        if isinstance(eff, dict) and eff.get("effective_label_epsilon") is not None:
            rows.append(
                [
                    Cell(f"Effective \u03b5 for \u201c{name}\u201d"),
                    Cell(_eps(eff["effective_label_epsilon"])),
                    Cell("counting what the public columns reveal: an estimate, not a bound"),
                ]
            )
    syn = risk.get("synthetic")
    if isinstance(syn, dict):
        dcr = syn.get("dcr") or {}
        mia = syn.get("membership_inference") or {}
        if "median_ratio" in dcr:
            rows += [
                [
                    Cell("Distance from a synthetic row to the closest real row"),
                    Cell(f"{fmt(dcr['median_ratio'], 3)} \u00d7 the holdout's"),
                    Cell("median ratio; below 1 would suggest the synthesizer copies its training rows"),
                ],
                [
                    Cell("Synthetic rows identical to a training row"),
                    Cell(_rate(dcr.get("share_synthetic_exact_copies"), dcr.get("share_synthetic_exact_copies_se"))),
                    Cell("exact copies (common values can coincide by chance)"),
                ],
            ]
        if "advantage" in mia:
            pm = (
                f" \u00b1 {fmt(1.96 * float(mia['advantage_se']), 2)}"
                if mia.get("advantage_se") and mia.get("advantage") is not None
                else ""
            )
            rows.append(
                [
                    Cell("Membership inference: tell training rows from others by distance"),
                    Cell(f"advantage {fmt(mia.get('advantage'))}{pm}"),
                    Cell("0 = no better than guessing, 1 = always right"),
                ]
            )
        if syn.get("available") is False and syn.get("note"):
            rows.append([Cell("Synthetic-data attacks"), Cell("not available"), Cell(str(syn["note"]))])
    for unit, view in (risk.get("embedding") or {}).items():
        at = view.get("at_epsilon") if isinstance(view, dict) else None
        if at:
            rows += [
                [
                    Cell(f"Re-identify the embeddings \u201c{unit}\u201d by nearest neighbour"),
                    Cell(_rate(at.get("reid_rate"), at.get("reid_rate_se"))),
                    Cell("share of replaced vectors traced back to their owner"),
                ],
                [
                    Cell("Mean angular distortion"),
                    Cell(fmt(at.get("mean_angular_distortion"))),
                    Cell("how far a replaced vector is from the original (0 = same direction, 1 = opposite)"),
                ],
            ]
    if rows:
        blocks.append(
            Block("table", {"head": ["Attack", "Figure", "What it means"], "rows": rows, "widths": [36, 24, 40]})
        )
    for view in (risk.get("label_views") or {}).values():
        # semi-sensitive: the attackers above are a lower bound (they ignore the perturbed columns)
        note = str(view.get("note_semi_sensitive") or "")
        if note:
            blocks.append(Block("note", f"{note[:1].upper()}{note[1:]}."))
    if risk.get("available") is False and risk.get("note"):
        blocks.append(Block("p", str(risk["note"])))
    return blocks


def _simulation_sentence(risk: dict) -> str:
    return (
        "Where an attack needs a released file, it ran on a simulated release: the same recipe "
        "executed again with independent randomness, never the noise of the file that was released."
    )


# ---- useless columns -------------------------------------------------------------------------


def useless_columns(plan, copied: set[str], external: bool, steward: dict | None, n_rows: int | None) -> list[str]:
    """Columns whose release carries next to no information, with advice: a numeric column whose
    expected error exceeds the width of its public bounds, a category column whose randomized
    response is close to a uniform guess, and (internal only: a raw-data count) a column with
    many values clipped to its bounds."""
    out = []
    for u in plan.perturbation_units:
        if u.expected_error is None or u.provisional or _hidden(u, copied, external):
            continue
        if u.mechanism_name in ("laplace", "gaussian") and u.domain is not None:
            width = float(u.domain[1]) - float(u.domain[0])
            if u.error_exceeds_range:
                # the plan's figure is the noise's own size, before the free clamping to the
                # bounds; the accuracy table prints the error AFTER clamping (smaller), so the
                # sentence says which of the two it quotes
                clamped = plan.recipe is not None and clamps_to_bounds(plan.recipe)
                size = (
                    f"its noise's expected size, {fmt(u.expected_error)} before clamping to the bounds,"
                    if clamped
                    else f"its noise's expected size, {fmt(u.expected_error)},"
                )
                out.append(
                    f"{u.name}: {size} is "
                    f"{fmt(u.expected_error / width, 2)} times its whole range "
                    f"[{fmt(float(u.domain[0]))}, {fmt(float(u.domain[1]))}]: released values "
                    "carry almost no information about the real ones"
                    + (
                        " (the smaller error after clamping, in the accuracy table, comes from pulling values "
                        "to the bounds, not from the data)"
                        if clamped
                        else ""
                    )
                    + ". Give this column a larger share of "
                    "the budget (or more \u03b5), narrow its public bounds, or release synthetic data instead."
                )
        elif u.mechanism_name == "rr" and u.noise.categories:
            m = int(u.noise.categories)
            chance = (m - 1) / m
            if m > 1 and u.expected_error >= 0.9 * chance:
                out.append(
                    f"{u.name}: a released category is wrong with probability {_pct(u.expected_error)}, "
                    f"close to a blind guess among its {m} categories ({_pct(chance)}). Give it a larger share "
                    "of the budget, merge categories into fewer, or release synthetic data instead."
                )
    if not external and isinstance(steward, dict) and n_rows:
        for name, v in (steward.get("columns") or {}).items():
            clipped = v.get("clipped") if isinstance(v, dict) else None
            if isinstance(clipped, (int, float)) and clipped / n_rows >= 0.05:
                out.append(
                    f"{name}: {fmt(int(clipped))} values ({_pct(clipped / n_rows)} of rows) lay outside its "
                    "bounds and were clipped to them (a raw-data count: internal only). Widen the bounds "
                    "if they are not the real range."
                )
    return out


# ---- the recipe appendix -------------------------------------------------------------------

#: category lists longer than this are shortened in the appendix (the recipe file has them all)
APPENDIX_CATEGORIES = 12


def _relative_path(path: str, base: Path) -> str:
    p = Path(path)
    try:
        return p.relative_to(base).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        return p.name


def _shorten_lists(node, limit: int):
    if isinstance(node, dict):
        return {k: _shorten_lists(v, limit) for k, v in node.items()}
    if isinstance(node, list):
        if len(node) > limit and all(not isinstance(x, (dict, list)) for x in node):
            return [*node[:limit], f"\u2026 ({len(node)} in all)"]
        return [_shorten_lists(x, limit) for x in node]
    return node


def _json_plain(node, indent: int = 0) -> str:
    """JSON text with numbers in plain decimals (0.000001, never 1e-06)."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(node, dict):
        if not node:
            return "{}"
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_json_plain(v, indent + 1)}" for k, v in node.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(node, list):
        if not node:
            return "[]"
        return "[\n" + ",\n".join(inner + _json_plain(v, indent + 1) for v in node) + "\n" + pad + "]"
    if isinstance(node, float) and math.isfinite(node):
        if node == round(node) and abs(node) < 1e15:
            return str(int(node))
        text = format(Decimal(repr(node)), "f")
        return text
    return json.dumps(node, ensure_ascii=False)


def recipe_appendix(recipe, external: bool) -> str:
    """The recipe for the appendix: paths relative to the dataset's folder (the input as its
    file name), long category lists shortened, numbers in plain decimals; externally, values
    copied from the data withheld (:func:`redacted_recipe_json`)."""
    data = redacted_recipe_json(recipe, external)
    base = Path(str(recipe.input.path)).parent
    if "input" in data and "path" in data["input"]:
        data["input"]["path"] = Path(str(data["input"]["path"])).name
    for c in data.get("columns", []):
        params = (c.get("mechanism") or {}).get("params") or {}
        for key, value in list(params.items()):
            if isinstance(value, str) and ("/" in value or "\\" in value or key in ("pool", "path")):
                params[key] = _relative_path(value, base)
    return _json_plain(_shorten_lists(data, APPENDIX_CATEGORIES))


#: a citation of the team's own documents ("docs/mechanisms.md §Exact samplers"): meaningless to
#: a report's reader, who gets the published papers the report names instead.  The words that
#: only introduce the citation go with it ("corrected in docs/errata.md" leaves "corrected", and
#: a "see" before a citation goes too): a dangling "in" broke the sentence.
_DOC_REFERENCE = re.compile(
    r'(?:\s+(?:as\s+)?in\s+|\bsee\s+)?\bdocs/[\w.-]+\.md(?:\s*§[^;,.()"\n]+|,\s*"[^"]*"|,\s*E\d+\b)?'
)
_INTERNAL_ID = re.compile(r"\bseeds?[ _]?0\d\d\b", re.IGNORECASE)


def public_text(text: str) -> str:
    """A report text without internal references: citations of the team's own documents and of
    the specification's source ids (``_DOC_REFERENCE``, ``_INTERNAL_ID``) are dropped; the papers
    cited beside them stay."""
    out = _DOC_REFERENCE.sub("", text)
    out = _INTERNAL_ID.sub("", out)
    out = re.sub(r"\(\s*[;,]?\s*\)", "", out)
    out = re.sub(r"\(\s*[;,]\s*", "(", out)
    out = re.sub(r"\s*[;,]\s*\)", ")", out)
    if out == text:
        return text
    return re.sub(r"  +", " ", out).replace(" .", ".").replace(" ,", ",").strip()


#: a pointer to the risk estimates, which only the internal version has
_SEE_ESTIMATE = re.compile(r"\s*\((?:see|as in) [^()]*\b(?:leakage|risk) estimates?\b[^()]*\)")
#: the clause ends before a parenthesis it did not open (its sentence's closing one stays)
_INTERNAL_CLAUSE = re.compile(r"[;,]\s*[^;,.()]*\binternal\b(?:[^;.()]|\([^()]*\))*")
_INTERNAL_SENTENCE = re.compile(r"(?:^|(?<=\. ))[^.]*\binternal\b[^.]*\.\s*")


def external_text(text: str) -> str:
    """A text of the external version without pointers to what only the internal version has
    (the risk estimates, "the internal leakage estimate quantifies this")."""
    out = _SEE_ESTIMATE.sub("", text)
    out = _INTERNAL_CLAUSE.sub("", out)
    out = _INTERNAL_SENTENCE.sub("", out)
    return out.strip() if out != text else text


def _scrub(node, external: bool = False):
    if isinstance(node, str):
        return external_text(public_text(node)) if external else public_text(node)
    if isinstance(node, Cell):
        return Cell(_scrub(node.text, external), node.flag)
    if isinstance(node, list):
        return [_scrub(x, external) for x in node]
    if isinstance(node, tuple):
        return tuple(_scrub(x, external) for x in node)
    if isinstance(node, dict):
        return {k: _scrub(v, external) for k, v in node.items()}
    return node


def _operator_text(result) -> str:
    op = getattr(result, "operator", None)
    return op if op else "not recorded \u2014 give it in Settings or with --operator"


def _accounting_rows(plan) -> list[list[Cell]]:
    """The plan's units and their composed total, as a table (the accountant's figures)."""
    rows = [
        [
            Cell(u.name),
            Cell(T.MECHANISM_TEXT.get(u.mechanism_name, u.mechanism_name)),
            Cell(_eps(u.epsilon)),
            Cell(fmt(u.delta)),
        ]
        for u in plan.units
    ]
    rows.append(
        [
            Cell("Total"),
            Cell(f"{plan.composition.method} composition"),
            Cell(_eps(plan.total.epsilon)),
            Cell(fmt(plan.total.delta)),
        ]
    )
    return rows


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
    rtype = recipe.release.type
    synthetic = rtype == "synthetic"
    g_name = T.GUARANTEE_NAME.get(guarantee, guarantee)
    data = getattr(result.outcome, "data", None)
    n_rows = len(frame) if frame is not None else getattr(result, "rows", None)
    n_out = len(data) if data is not None else (result.outcome.public_stats or {}).get("rows")
    steward = getattr(result.outcome, "steward_stats", None) or {}

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
            "withheld in the external version (a hash of the raw data; the ledger has it)"
            if external
            else result.input_sha256,
        ),
        ("Release id", result.release_id),
        (
            "Ledger entry",
            f"release {result.ledger_entry} (as `dpstudio ledger show` lists it)"
            if getattr(result, "ledger_entry", None) is not None
            else "\u2014",
        ),
        ("Date (UTC)", result.started_at.replace("T", " ").replace("+00:00", "")),
        ("Operator", _operator_text(result)),
        ("dpstudio version", result.version),
        (
            "Release type",
            f"{rtype} (delivered as semi-sensitive: the columns marked public are copied unchanged)"
            if rtype == "record" and plan.guarantee == "semi-sensitive"
            else rtype,
        ),
        ("Output file", Path(result.output_path).name if result.output_path else "\u2014"),
        ("Output SHA-256", result.output_sha256 or "\u2014"),
    ]
    if getattr(result, "artifact_path", None):  # a density's JSON beside its sampled rows
        header += [
            ("Side file (density JSON)", Path(result.artifact_path).name),
            ("Side file SHA-256", getattr(result, "artifact_sha256", None) or "\u2014"),
        ]
    sections: list[Section] = []

    # 1. summary
    s = Section("Summary")
    dropped = [c for c in recipe.columns if c.role in ("identifier", "ignore")]
    kept = [c for c in recipe.columns if c.role not in ("identifier", "ignore")]
    released_cols = list(data.columns) if data is not None else None
    if data is None and n_out is not None and rtype in ("record", "label", "semi-sensitive", "synthetic"):
        # a streamed release writes its table block by block and holds none of it
        released_cols = [c.name for c in kept if not (synthetic and c.role == "embedding")]
    if released_cols is not None:
        what = (
            f"A table of {fmt(n_out)} rows and {fmt(len(released_cols))} columns derived from "
            f"\u201c{result.dataset_name}\u201d" + (f" ({fmt(n_rows)} rows)" if n_rows is not None else "") + "."
        )
        if synthetic:
            what += (
                " The rows are synthetic: drawn from a model fitted to noisy summaries of the data. "
                "No row is a real person's record."
            )
    else:
        what = (
            f"A {rtype} computed from \u201c{result.dataset_name}\u201d"
            + (f" ({fmt(n_rows)} rows)" if n_rows is not None else "")
            + " with differential privacy."
        )
    if dropped:
        what += " Dropped before release: " + ", ".join(c.name for c in dropped) + "."
    model_unit = next((u for u in plan.units if u.kind == "model"), None)
    if model_unit is not None and model_unit.facts.get("mechanism_choice"):
        # which mechanism fitted the model and why (the finalised plan's unit)
        what += f" Mechanism: {model_unit.facts['mechanism_choice']}."
    s.add("p", "What was released: " + what)
    s.add(
        "kv",
        [
            ("Guarantee", g_name),
            ("Total privacy loss", _loss_text(total.epsilon, total.delta)),
            ("Accounting method", comp.method),
            ("Neighbouring datasets", T.NEIGHBOURS.get(guarantee, T.NEIGHBOURS["record-level"])),
        ],
    )
    factor = math.exp(total.epsilon)
    s.add(
        "p",
        T.EPSILON_PLAIN_OF.get(guarantee, T.EPSILON_PLAIN).format(
            eps=_eps(total.epsilon),
            factor=fmt(factor, 3),
            delta_part=T.DELTA_PLAIN.format(delta=fmt(total.delta)) if total.delta else "",
        ),
    )
    means = T.SYNTHETIC_MEANS if synthetic else T.GUARANTEE_MEANS.get(guarantee, T.GUARANTEE_MEANS["record-level"])
    s.add("p", "What the guarantee means: " + means)
    if plan.label is not None:
        s.add("kv", label_guarantee_rows(plan.label))
    if comp.metric_epsilon:
        s.add("p", T.METRIC_PLAIN.format(eps=_eps(comp.metric_epsilon)))
    s.add("p", "What it does not mean:")
    s.add("list", T.does_not_mean(rtype))
    useless = useless_columns(plan, copied, external, steward, n_rows)
    if useless:
        s.add("warn", "Columns released with too little accuracy to be useful:")
        s.add("list", useless)
    if copied:
        s.add(
            "warn",
            "Domains of " + ", ".join(sorted(copied)) + " were copied from the private data. "
            "They are not protected by the guarantee"
            + (
                ". This version of the report does not print them, but the released data can show "
                "them: values are clamped to copied bounds, and a copied category list is the data's own."
                if external
                else "."
            ),
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
    if synthetic:
        s.add(
            "note",
            "Every kept column went into the synthesizer: no column was released as it is, and no "
            "released row is a real record.",
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
        if synthetic:
            s.add(
                "note",
                "The synthesizer's measurements and their noise are listed under \u201cPrivacy accounting\u201d.",
            )
    else:
        s.add("p", "No per-column mechanism: the privacy accounting below lists what was released.")
    # what was done to the values besides the noise: the plan's own post-processing steps
    post = [(u.name, u.post_processing) for u in released if u.post_processing]
    if post:
        s.add(
            "table",
            {
                "head": ["Unit", "Before and after the noise (public rules only, no privacy cost)"],
                "rows": [[Cell(name), Cell("\n".join(f"\u2022 {step}" for step in steps))] for name, steps in post],
                "widths": [15, 85],
            },
        )
        s.add(
            "note",
            "Steps that use only public choices (the bounds, the category list, the column's type) "
            "change no privacy figure: anything computed from a differentially private output, "
            "without the data, keeps its guarantee.",
        )
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
        shares = [_own_share(u) for u in estimates]
        tight = any(sh is not None for sh in shares)

        def row(u, sh) -> list[Cell]:
            text = T.MECHANISM_TEXT.get(u.mechanism_name, u.mechanism_name)
            threshold = (u.facts or {}).get("threshold")
            if threshold is not None:  # the threshold that ran (a value held by fewer rows is seldom kept)
                text += f"; keeps a value when its noisy count passes {fmt(threshold)} rows"
            method = Cell(text)
            if tight:  # composed tightly: its part of the typed total, and the figure on its own
                part = _eps(sh[0]) if sh is not None else _eps(u.epsilon)
                return [Cell(u.name), method, Cell(part), Cell(_loss_text(u.epsilon, u.delta))]
            return [Cell(u.name), method, Cell(_eps(u.epsilon)), Cell(fmt(u.delta))]

        s.add(
            "table",
            {
                "head": ["Estimate", "Method", "Part of the total (ε)", "On its own (ε, δ)"]
                if tight
                else ["Estimate", "Method", "ε", "δ"],
                "rows": [row(u, sh) for u, sh in zip(estimates, shares, strict=True)],
                "widths": [30, 34, 16, 20] if tight else [30, 46, 12, 12],
            },
        )
    s.add(
        "table",
        {"head": ["Part", "Mechanism", "ε", "δ"], "rows": _accounting_rows(plan), "widths": [30, 46, 12, 12]},
        caption="Accounting",
    )
    if synthetic:
        s.blocks += synthesizer_accounting(result)
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
                + (
                    f" (it had {fmt(lost.get('seq'))} chained events, head {str(lost.get('hash'))[:16]})"
                    if lost
                    else ""
                )
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
                # not recorded (--no-ledger): no "after", rather than a count that went down
                Cell("\u2014" if result.ledger_after is None else fmt(result.ledger_after.get("releases", 0))),
            ]
        )
        s.add(
            "table", {"head": ["", "Before this release", "After this release"], "rows": rows, "widths": [20, 40, 40]}
        )
        kinds = (result.ledger_after or {}).get("spent_by_guarantee")
        if kinds:
            parts = "; ".join(
                f"{k}: \u03b5 = {_eps(v['epsilon'])}, \u03b4 = {fmt(float(v['delta']))} "
                f"({fmt(v['releases'])} release{'s' if v['releases'] != 1 else ''})"
                for k, v in kinds.items()
            )
            s.add(
                "note",
                f"The spend after this release adds releases that protect different things: {parts}. "
                "The total bounds what they reveal together about the columns every one of them "
                "protects; a column that any of them published unchanged has no protection left, "
                "whatever the total.",
            )
        s.add(
            "note",
            "Spend adds up across releases of the same dataset (basic composition). A file is "
            "matched to its dataset by its SHA-256 fingerprint, by the dataset name in the "
            "recipe, or by its rows (keyed sketches, also over all but one column), so renaming, "
            "re-saving, re-ordering, correcting a few records or changing one column does not "
            "reset it. The ledger head is the last link of "
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
            ratio = u.shown_error / u.floor if final and u.floor > 0 else None
            rows.append(
                [
                    Cell(u.name),
                    Cell(T.MECHANISM_SHORT[u.mechanism_name]),
                    Cell(_eps(u.epsilon)),
                    Cell(_error_text(u)),
                    Cell(_unit_value(u, u.floor) if final else "\u2014"),
                    Cell((f"{ratio:.2f}" if ratio < 1000 else fmt(ratio)) + " \u00d7" if ratio else "\u2014"),
                ]
            )
        s.add(
            "p",
            "Expected error of each column against its floor: the smallest worst-case error any "
            "mechanism with the same \u03b5 and \u03b4 can achieve (a theoretical lower bound from "
            "Jazbec 2018, for numbers and for categories). Numbers: average absolute difference "
            "between released and true value, in the column's units"
            + (
                " (the released values are clamped to the bounds: for the worst true value, the "
                "middle of the range; the noise's own scale is under Mechanisms and parameters)"
                if any(u.clamped_error is not None for u in units)
                else ""
            )
            + ". Categories: probability that the released category is wrong.",
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
    elif synthetic:
        s.add(
            "p",
            "A synthetic table has no per-column error against the real values: no row corresponds to "
            "a real record. "
            + (
                "What the table holds is summarised under \u201cUtility of the released data\u201d."
                if data is not None
                # a streamed release writes its rows block by block and holds none of them
                else "This release was written block by block, so its rows were not kept for a utility "
                "summary in this report."
            ),
        )
    elif (dens := next((u for u in plan.units if u.kind == "density"), None)) is not None and (
        dens.facts.get("noise_sd_relative_to_flat") is not None
    ):
        # the calibration the release drew with (plan.density.for_rows), in words
        f = dens.facts
        s.add(
            "p",
            "The noise added to the density at each grid point has a standard deviation of "
            f"{_pct(f['noise_sd_relative_to_flat'])} of the height of a flat density over the bounds "
            f"(on average {_pct(f['noise_mean_abs_relative_to_flat'])} off). This is the noise only: the "
            f"smoothing by the bandwidth ({_pct(float(f['bandwidth']))} of each column's range) also "
            "flattens peaks and fills gaps narrower than about that width.",
        )
    else:
        s.add("p", "No per-column accuracy figures for this release type.")
    if skipped:
        s.add("note", "Not shown: " + ", ".join(skipped) + ".")
    sections.append(s)

    if recipe.budget.targets:
        sections.append(targets_section(result, frame, external))

    # 7. utility (DP outputs only; internally, a synthetic table's fidelity to the raw data)
    ps = getattr(result.outcome, "public_stats", None) or {}
    if synthetic:
        sections += synthetic_utility(result, frame, external)
    elif {k for k in ps if k not in ("rows", "n_input")}:
        s = Section("Utility of the released data")
        s.add("note", "Computed from the differentially private output only.")
        # row counts are no utility figure (the header and the engine line give them); a streamed
        # release's "rows | n_input" printed raw keys in a section of its own
        flat = _flatten(
            {k: v for k, v in ps.items() if not k.startswith("synthesizer") and k not in ("rows", "n_input")}
        )
        if flat:
            s.add("kv", flat[:60])
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
            head = _sample_sentence(result.risk) if isinstance(result.risk, dict) else None
            if head:
                s.add("p", head)
            s.add("p", _simulation_sentence(result.risk))
            s.blocks += risk_tables(result.risk)
            link = result.risk.get("linkage") if isinstance(result.risk, dict) else None
            if isinstance(link, dict) and link.get("sample_note"):
                note = str(link["sample_note"])
                s.add("note", note[:1].upper() + note[1:] + ".")
        else:
            s.add(
                "p",
                "No risk estimate was run for this release"
                + (
                    " (synthetic data needs a second fit: run \u201cdpstudio risk\u201d on the recipe)."
                    if synthetic
                    else "."
                ),
            )
        sections.append(s)
        stats = {k: v for k, v in steward.items() if not (isinstance(k, str) and k.startswith("dp_domain:"))}
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
            ("Where it ran", getattr(result, "engine", None) or "in memory"),
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
    if not external:  # the recipe's hash covers the input's hash: internal only
        # the ledger's recipe hash: of the canonical JSON, so re-indenting the file keeps it
        s.add(
            "kv",
            [
                (
                    "Recipe SHA-256",
                    f"{recipe.sha256()} (of the recipe's canonical JSON, keys sorted and no spaces, as the "
                    "ledger records it; not of the file's bytes)",
                )
            ],
        )
    s.add(
        "p",
        "Running this recipe again with dpstudio gives a release with the same guarantee and "
        "cost (new noise unless a fixed seed was used), and spends budget again. The recipe is "
        "printed in the appendix.",
    )
    sections.append(s)

    # 11. sign-off
    s = Section("Sign-off")
    s.add("p", T.SIGN_OFF_TEXT_EXTERNAL if external else T.SIGN_OFF_TEXT)
    s.add("signoff", ["Data steward", "Compliance officer"])
    sections.append(s)

    # appendix: the recipe (last)
    s = Section("Appendix: the recipe")
    s.add(
        "p",
        "The recipe this release ran, with paths relative to the dataset's folder and category lists "
        f"longer than {APPENDIX_CATEGORIES} shortened; the recipe file itself is the complete record"
        + (
            " (the SHA-256 of its canonical JSON is under \u201cRandomness and reproduction\u201d)."
            if not external
            else "."
        )
        + (" Values copied from the data are withheld." if external and copied else ""),
    )
    s.add("pre", recipe_appendix(recipe, external), caption="Recipe (JSON)")
    sections.append(s)

    for sec in sections:  # the recipe ("pre") is printed as it is
        sec.blocks = [
            b if b.kind in ("pre", "image") else Block(b.kind, _scrub(b.content, external), b.caption)
            for b in sec.blocks
        ]
    title = "Differential privacy release report"
    return ReportModel(
        title=title,
        variant=variant,
        banner=banner,
        header=header,
        sections=sections,
        images=images,
        operator=getattr(result, "operator", None) or None,
    )
