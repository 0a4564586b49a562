"""Plain-language explanations shown in tooltips, help and the release page.

Written for data stewards with no DP training.  Texts are looked up and translated at call
time (``tr``), never at import, so a translator installed later still applies.
"""

from __future__ import annotations

from dpstudio.gui.i18n import tr

EPSILON = (
    "ε (epsilon) is the privacy budget: how much one person's data may change what is released. "
    "Smaller is more private and noisier. 0.1–1 is strong protection, 1–5 is moderate, above 10 "
    "protects little. Releases on the same dataset add up their ε."
)
DELTA = (
    "δ (delta) is a tiny probability that the ε guarantee fails. Keep it far below 1 / (number of "
    "rows) — e.g. 1e-6 for a table of 10,000 rows. Use 0 when no mechanism needs it "
    "(only the Gaussian mechanism, synthetic data and models do)."
)

MECHANISMS = {
    "laplace": (
        "Laplace noise",
        "Adds random noise to each number, scaled to the column's range and ε.",
        "Protects: each person's exact value — anyone can only learn it roughly.",
        "Does not protect: values outside the bounds you typed are clipped to them first; "
        "averages over many rows stay accurate (that is the point), so group facts remain visible.",
    ),
    "gaussian": (
        "Gaussian noise",
        "Adds bell-shaped random noise to each number; needs a small δ.",
        "Protects: each person's exact value, with rare large errors less likely than Laplace.",
        "Does not protect: with probability δ the guarantee may fail; values are clipped to the bounds.",
    ),
    "rr": (
        "Randomized response",
        "Keeps each category with some probability and otherwise replaces it by a random other category.",
        "Protects: plausible deniability — any recorded answer may have been randomized.",
        "Does not protect: the overall proportions (they can be estimated); with a large ε most answers stay true.",
    ),
    "metric": (
        "Metric-DP selection",
        "Replaces each embedding vector by a vector from a public pool, preferring nearby ones.",
        "Protects: the exact vector; nearby vectors are hard to tell apart.",
        "Does not protect: coarse similarity — far-apart people stay distinguishable (metric privacy).",
    ),
    "none": (
        "Released unchanged",
        "The column is copied as it is.",
        "Protects: nothing — only use it for information that is already public.",
        "Does not protect: anything; public columns can reveal the protected ones if they predict them.",
    ),
}

RELEASE_TYPES = {
    "record": (
        "Perturb every record",
        "Every protected column of every row gets its own noise; the table keeps its rows.",
        "Protects every person's sensitive values and label (record-level DP). Identifiers are "
        "dropped; columns marked public are released as they are.",
    ),
    "label": (
        "Protect only the label",
        "Only the label column is randomized; every other kept column is released as it is.",
        "Protects only the label (label DP). If public columns predict the label, an attacker "
        "can still guess it — see the attacker chart.",
    ),
    "semi-sensitive": (
        "Protect label and sensitive columns",
        "The label and the sensitive columns are perturbed; public columns are released as they are.",
        "Protects the label and sensitive values (semi-sensitive DP); public columns are not "
        "protected and may reveal the others.",
    ),
    "synthetic": (
        "Synthetic data",
        "A generator learns from a one-shot private summary of the data and makes new, artificial rows.",
        "Protects every record (DP on the whole table, needs δ). Rare combinations and outliers "
        "are not reproduced; the rows are not real people.",
    ),
    "model": (
        "A private prediction model",
        "Fits a logistic regression of the label on the other columns with differential privacy.",
        "Only the model's coefficients are released, never rows. Needs δ.",
    ),
    "density": (
        "A private density estimate",
        "Releases a smoothed distribution (density) of one or two numeric columns.",
        "Only the density grid is released, never rows. Needs δ.",
    ),
}

ROLES = {
    "identifier": ("Direct identifier", "Names, IDs, e-mail addresses: always dropped from the release."),
    "public": (
        "Public",
        "Already known to outsiders (e.g. age, sex, region): released as it is in label / semi-sensitive releases.",
    ),
    "sensitive": ("Sensitive", "Private information: perturbed with differential privacy."),
    "label": ("Label", "The outcome a model would predict (e.g. employed yes/no): always perturbed."),
    "embedding": ("Embedding", "A group of numeric columns that together form one vector."),
    "ignore": ("Ignore", "Not part of the release: dropped."),
}

DOMAIN_SOURCES = {
    "public": (
        "Typed (public knowledge)",
        "You type the bounds or categories from public knowledge (e.g. age 0–120). Free and safe.",
    ),
    "dp": (
        "Estimated with DP",
        "dpstudio estimates them from the data with differential privacy; this costs a little ε, counted in the total.",
    ),
    "data": (
        "Copied from the data",
        "The exact minimum, maximum or category list of the private data is copied. This LEAKS: "
        "extreme values and rare categories identify people. Not covered by the guarantee.",
    ),
}


def t(text: str) -> str:
    return tr(text)


def mechanism_text(name: str) -> tuple[str, str, str, str]:
    title, what, protects, not_ = MECHANISMS.get(name, MECHANISMS["none"])
    return tr(title), tr(what), tr(protects), tr(not_)


def mechanism_tooltip(name: str) -> str:
    title, what, protects, not_ = mechanism_text(name)
    return f"<b>{title}</b><br>{what}<br><br>{protects}<br>{not_}"


def release_text(name: str) -> tuple[str, str, str]:
    title, what, guarantee = RELEASE_TYPES[name]
    return tr(title), tr(what), tr(guarantee)


def role_text(role: str) -> tuple[str, str]:
    title, text = ROLES[role]
    return tr(title), tr(text)


def domain_source_text(source: str) -> tuple[str, str]:
    title, text = DOMAIN_SOURCES[source]
    return tr(title), tr(text)


def epsilon_tooltip() -> str:
    return tr(EPSILON)


def delta_tooltip() -> str:
    return tr(DELTA)
