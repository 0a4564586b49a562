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
        "Noise on every record (whole-record protection)",
        "Every column of every row that is not marked public gets its own noise; the table keeps "
        "its rows. With no column marked public, each person's whole record is protected.",
        "Protects every person's sensitive values and label (record-level DP). Identifiers are "
        "dropped; columns you mark public are released as they are and are not protected.",
    ),
    "label": (
        "Noise on the label only",
        "Only the label column is randomized; every other kept column is released as it is.",
        "Protects only the label (label DP). If public columns predict the label, an attacker "
        "can still guess it — see the attacker estimate.",
    ),
    "semi-sensitive": (
        "Noise on sensitive columns only; public columns released as they are",
        "The label and the sensitive columns are perturbed; columns marked public (e.g. age, "
        "region) are published unchanged.",
        "Protects the label and the sensitive values relative to what the public columns already "
        "reveal (semi-sensitive DP); the public columns themselves are not protected and may "
        "reveal the others.",
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
        "Only the model's coefficients are released, never rows. Asks for a δ, which the mechanism "
        "chosen for the table may not need (then δ = 0 is charged).",
    ),
    "density": (
        "A private density estimate",
        "Releases a smoothed distribution (density) of one or two numeric columns.",
        "Only the density grid is released, never rows. Needs δ.",
    ),
}

SEMI_SENSITIVE = (
    "“Semi-sensitive” means: some columns are treated as public knowledge and published "
    "unchanged, the others (and the label) get noise. The guarantee then covers the noisy columns "
    "only, measured against what the public columns already tell about a person."
)

#: the plan's guarantee names (``ReleasePlan.guarantee``), in plain words
GUARANTEES = {
    "record-level": "every person's whole record is protected",
    "label": "only the label is protected",
    "semi-sensitive": "the sensitive columns and the label are protected, relative to the public columns",
    "central": "the whole table is protected (every row, every column)",
}

ROLES = {
    "identifier": ("Direct identifier", "Names, IDs, e-mail addresses: always dropped from the release."),
    "public": (
        "Public",
        "Already known to outsiders (e.g. age, sex, region): released as it is unless the release "
        "is synthetic data or a model.",
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


#: command-line hints in the recipe layer's messages, and what the wizard says instead
_CLI_HINTS: tuple[tuple[str, str], ...] = (
    (r"\s*\(--bounds [^)]*\)", " (enter them on the “Classify the columns” step)"),
    (r"\s*\(--categories [^)]*\)", " (enter it on the “Classify the columns” step)"),
    (r"\(--type [^=)\s]+=(\w+)\)", "(choose the type “\\1” on the “Classify the columns” step)"),
    (r"--type [^=\s]+=(\w+)", "the type “\\1” on the “Classify the columns” step"),
    (r"--bounds [^\s,;)]+", "bounds on the “Classify the columns” step"),
    (r"--categories [^\s;)]+", "a category list on the “Classify the columns” step"),
    (
        r"release it with --new-dataset",
        "tick “This is a new dataset” on the “Export the release” step and release again",
    ),
    (r"'?dpstudio ledger reinit --confirm'?", "the command line (dpstudio ledger reinit)"),
    (r"--confirm-inferred", "“Accept the suggestions” on the “Classify the columns” step"),
)


def gui_message(text: str) -> str:
    """A message of the engine or the recipe layer as the wizard shows it: command-line flags
    (``--bounds COL=LOW:HIGH``) become the step where the same thing is done in the window."""
    import re

    if "--" not in text:
        return text
    for pattern, repl in _CLI_HINTS:
        text = re.sub(pattern, tr(repl), text)
    # anything left: a flag in parentheses is a hint the window does not need, a bare one is named
    text = re.sub(r"\s*\([^()]*--[a-z][^()]*\)", "", text)
    return re.sub(r"--([a-z][a-z0-9-]*)", lambda m: "“" + m.group(1).replace("-", " ") + "”", text)


def gui_problem(problem):
    """A recipe :class:`Problem` with its text as the wizard shows it (same field and page)."""
    text = gui_message(str(problem))
    if text == str(problem):
        return problem
    return type(problem)(text, field=problem.field, page=problem.page)


def guarantee_text(guarantee: str) -> str:
    return tr(GUARANTEES.get(guarantee, guarantee))


def semi_sensitive_text() -> str:
    return tr(SEMI_SENSITIVE)


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


# ---- files too large for memory (issue 20) ------------------------------------------------
LARGE_FILE = (
    "Large file: {rows} rows. Previews and estimates use a uniform sample of {sample} rows; "
    "the release reads every row, in blocks."
)
SAMPLE_ESTIMATE = "Computed on a uniform sample of {sample} of the file's {rows} rows."
CLUSTER_HELP = (
    "To run this release on a Dask cluster, save the recipe where the cluster can read it, then "
    "run the command below on a computer that can reach the cluster's scheduler. The data file "
    "must be readable by the cluster at the same path (or give the recipe a path it can read)."
)


def large_file_text(rows: int, sample: int) -> str:
    """The notice shown wherever a file too large for memory is previewed from a sample."""
    return tr(LARGE_FILE).format(rows=f"{rows:,}", sample=f"{sample:,}")


def sample_estimate_text(rows: int, sample: int) -> str:
    """The label of an estimate computed on the sample of a large file, not on every row."""
    return tr(SAMPLE_ESTIMATE).format(rows=f"{rows:,}", sample=f"{sample:,}")


def cluster_help_text() -> str:
    return tr(CLUSTER_HELP)
