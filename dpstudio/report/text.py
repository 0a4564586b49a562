"""Plain-language text of the compliance report (one place, so wording is reviewed once)."""

from __future__ import annotations

GUARANTEE_NAME = {
    "record-level": "record-level differential privacy",
    "label": "label differential privacy",
    "semi-sensitive": "semi-sensitive differential privacy",
    "metric": "metric differential privacy (d\u03c7-privacy)",
    "central": "central differential privacy",
}

# What each guarantee protects, for a reader without a statistics background.
GUARANTEE_MEANS = {
    "record-level": (
        "Each person's whole record was changed at random before release. Whatever a reader of the "
        "released file does with it, the result would have been almost as likely if any single "
        "person's record had been different or replaced by someone else's."
    ),
    "label": (
        "Only the outcome column (the label) was changed at random. The guarantee protects each "
        "person's label: the release would have been almost as likely with any one person's label "
        "changed. The other columns were released as they are and are not protected."
    ),
    "semi-sensitive": (
        "The outcome column and the columns marked sensitive were changed at random; the columns "
        "marked public were released as they are. The guarantee protects each person's label and "
        "sensitive values, assuming the public columns are already known to everyone."
    ),
    "metric": (
        "Each embedding vector was replaced by a different vector chosen at random, preferring "
        "similar ones. Vectors that are close to each other are hard to tell apart; vectors that are "
        "very different are protected less."
    ),
    "central": (
        "Only aggregate results (a model fitted to all records, or a density estimate) were "
        "released, with random noise added; no record was released. The result would have been "
        "almost as likely if any single person's record had been different."
    ),
}

# What a synthetic-data release is (its guarantee is central DP, but nothing "aggregate" is
# released: a table of rows drawn from a model).
SYNTHETIC_MEANS = (
    "A table of synthetic rows was released. A synthesizer measured a few summaries of the data "
    "(listed under \u201cPrivacy accounting\u201d) with random noise added, fitted a model to those "
    "noisy summaries only, and drew new rows from the model. No row is a real person's record, "
    "and the released table would have been almost as likely if any single person's record had "
    "been different."
)

_GROUPS = (
    "It does not hide facts that hold for whole groups: conclusions drawn from the data about a "
    "group (for example, that smokers in the data have a higher risk) can still apply to a person "
    "in that group, whether or not that person is in the data."
)
_LEGAL = (
    "It does not mean the released data are anonymous in the legal sense on their own: the "
    "guarantee is a bound on how much one person's data can change what is released, and its "
    "strength depends on the value of \u03b5."
)

#: "What it does not mean", by release type (``GUARANTEE_DOES_NOT_MEAN`` is the record-level one)
DOES_NOT_MEAN = {
    "record": [
        _LEGAL,
        _GROUPS,
        "It does not protect anything released without noise: columns released unchanged, domain "
        "values copied from the data (flagged below) and any other release of the same data outside "
        "this ledger.",
        "It is not a guarantee that each released value is accurate: values were changed on purpose "
        "(see \u201cAccuracy\u201d).",
    ],
    "synthetic": [
        _LEGAL,
        _GROUPS,
        "It does not protect domain values copied from the data (flagged below), which shape the "
        "released table, nor any other release of the same data outside this ledger.",
        "It does not mean the synthetic table reproduces the data: its statistics follow the real "
        "ones only as far as the noisy summaries allow, and relations the synthesizer did not "
        "measure are not kept.",
        "A synthetic row that resembles a real person is a coincidence of the model, not that "
        "person's record; it can still be mistaken for one, so do not present rows as real.",
    ],
    "central": [
        _LEGAL,
        _GROUPS,
        "It does not protect domain values copied from the data (flagged below), nor any other "
        "release of the same data outside this ledger.",
        "It is not a guarantee that the released figures are accurate: noise was added on purpose.",
    ],
}
GUARANTEE_DOES_NOT_MEAN = DOES_NOT_MEAN["record"]


def does_not_mean(release_type: str) -> list[str]:
    """The "What it does not mean" list of a release type."""
    if release_type == "synthetic":
        return list(DOES_NOT_MEAN["synthetic"])
    if release_type in ("model", "density"):
        return list(DOES_NOT_MEAN["central"])
    return list(DOES_NOT_MEAN["record"])


EPSILON_PLAIN = (
    "\u03b5 (epsilon) measures the privacy loss: smaller is more private. With \u03b5 = {eps}, anyone "
    "looking at the release can become at most {factor} times more confident about a claim concerning "
    "one person than they would have been without that person's data{delta_part}."
)
#: what a neighbouring dataset may change, by guarantee: replace-one everywhere, of what the
#: guarantee protects (a label release's other columns are the same in both: they are public)
NEIGHBOURS = {
    "record-level": "differ in one person's record (replace-one); the number of rows is public",
    "label": (
        "differ in one person's label (replace-one: the same rows, one label changed); the other "
        "columns, released as they are, are the same in both; the number of rows is public"
    ),
    "semi-sensitive": (
        "differ in one person's values of the perturbed columns (replace-one); the columns "
        "released as they are are the same in both; the number of rows is public"
    ),
}
EPSILON_PLAIN_OF = {
    "label": (
        "\u03b5 (epsilon) measures the privacy loss: smaller is more private. With \u03b5 = {eps}, anyone "
        "looking at the release can become at most {factor} times more confident about one person's label "
        "than they would have been had that label been different{delta_part}. The columns released as "
        "they are get no such bound."
    ),
    "semi-sensitive": (
        "\u03b5 (epsilon) measures the privacy loss: smaller is more private. With \u03b5 = {eps}, anyone "
        "looking at the release can become at most {factor} times more confident about one person's values "
        "in the perturbed columns than they would have been had those been different{delta_part}. The "
        "columns released as they are get no such bound."
    ),
}
DELTA_PLAIN = ", except with a probability of at most \u03b4 = {delta} (a small chance that the bound does not hold)"

METRIC_PLAIN = (
    "Embedding vectors are protected by metric DP with \u03b5 = {eps} per unit of angular distance "
    "(0 = same direction, 1 = opposite): two people's vectors at distance d are protected with "
    "\u03b5\u00b7d. This is reported separately and is not part of the total above."
)

ROLE_TEXT = {
    "identifier": "direct identifier (dropped)",
    "public": "public / quasi-identifier",
    "sensitive": "sensitive feature",
    "label": "sensitive label",
    "embedding": "embedding vector",
    "ignore": "ignored (dropped)",
}

SOURCE_TEXT = {
    "public": "public knowledge (typed by the user)",
    "dp": "estimated with differential privacy",
    "data": "COPIED FROM THE DATA \u2014 not covered by the guarantee",
}

MECHANISM_TEXT = {
    "laplace": "Laplace noise (numbers)",
    "gaussian": "Gaussian noise (numbers)",
    "rr": "randomized response (categories)",
    "metric": "metric-DP selection (embeddings)",
    "none": "released unchanged",
    "aim": "AIM synthesizer (adaptively chosen noisy marginals)",
    "mst": "MST synthesizer (noisy marginals)",
    "merf": "DP-MERF synthesizer (mean embedding)",
    "pearl": "PEARL synthesizer (characteristic-function embedding)",
    "gibbs-logistic": "logistic regression, Gibbs posterior sampling",
    "gp-density": "density estimate with Gaussian-process noise",
    "exponential-mechanism quantiles": "DP bounds: exponential-mechanism quantiles",
    "noisy candidate counts": "DP category list: noisy counts of public candidates",
    "partition selection": "DP category list: partition selection",
    "done before the release": "DP estimate made before the release",
}

# Short mechanism names for tables and chart legends.
MECHANISM_SHORT = {"laplace": "Laplace", "gaussian": "Gaussian", "rr": "randomized response"}

# NoiseParameters fields (dpstudio.plan.units) as a compliance officer reads them.
NOISE_LABELS = {
    "scale": "Laplace scale b",
    "sigma": "Gaussian \u03c3",
    "grid_step": "noise grid step",
    "keep_probability": "P(value kept)",
    "other_probability": "P(each other category)",
    "categories": "number of categories",
}

# Public facts of synthesizer, model and density units (PlanUnit.facts) in plain words; a fact
# not listed here is printed under its own name.
FACT_LABELS = {
    "features": "features",
    "label": "label",
    "a_max": "a_max (largest privacy-loss parameter a of the Gibbs posterior; Minami 2015)",
    "gamma": "\u03b3 (sampler's total-variation budget)",
    "delta_gibbs": "\u03b4 of the Gibbs posterior",
    "delta_sampler": "\u03b4 spent on the sampler, (e^\u03b5 + 1)\u00b7\u03b3",
    "norm_bound": "feature norm bound R",
    "lipschitz": "Lipschitz constant L = \u221a(R\u00b2 + 1)",
    "beta": "inverse temperature \u03b2",
    "sampler": "sampler",
    "scaling": "feature scaling",
    "grid_size": "grid points per axis",
    "bandwidth": "kernel bandwidth (in units of the public range)",
    "bandwidth_rule": "bandwidth rule (public: n and the range only)",
    "table_rows": "rows of the table (public)",
    "noise_multiplier": "noise multiplier (standard deviation per whitened coordinate)",
    "noise_sd_relative_to_flat": "noise standard deviation at a grid point, relative to a flat density's height",
    "noise_mean_abs_relative_to_flat": "expected absolute noise at a grid point, relative to a flat density's height",
    "sensitivity": "sensitivity",
    "calibration": "calibration",
    "sample_rows": "synthetic values sampled",
    "pool": "replacement pool",
    "rows": "synthetic rows",
    # the model's mechanism choice and objective perturbation (docs/models.md)
    "mechanism_choice": "mechanism chosen",
    "objective_predicted_excess_risk": "predicted excess risk of objective perturbation (public rule)",
    "rows_x_epsilon_per_coefficient": "rows \u00d7 \u03b5 per coefficient",
    "classes": "label categories",
    "one_vs_rest": "one-vs-rest",
    "class_weights": "class weights",
    "noise": "noise",
    "noise_scale": "noise scale (per coefficient)",
    "lambda": "\u03bb (ridge per record)",
    "ridge_m": "ridge m = n\u03bb",
    "epsilon_jacobian": "\u03b5 for the change of the objective's curvature (Jacobian factor)",
    "epsilon_noise": "\u03b5 of the noise",
    "epsilon_tolerance": "\u03b5 paid for the optimiser's tolerance",
    "delta_noise": "\u03b4 of the noise",
    "delta_tolerance": "\u03b4 paid for the optimiser's tolerance",
    "tolerance_noise_scale": "noise scale covering the optimiser's tolerance",
    "tolerance_fraction": "share of the budget for the optimiser's tolerance",
    "feature_norm": "feature norm with the intercept, \u221a(R\u00b2 + 1)",
    "smoothness_c": "smoothness constant c of the logistic loss",
}

# Known acknowledgement codes -> plain words; unknown ones are printed as recorded.
ACKNOWLEDGEMENTS = {
    "domain-copied-from-data": (
        "The user chose to copy some column domains (bounds or category lists) from the private "
        "data. Those values can identify people (for example an unusual maximum or a rare category) "
        "and are not protected by the guarantee."
    ),
    "embedding-pool-is-dataset": (
        "Embedding vectors were replaced by vectors taken from the dataset itself: each released "
        "vector is another real person's vector. The user accepted this risk."
    ),
    "fixed_seed": (
        "A fixed random seed was used. Anyone who knows the seed can reproduce, and remove, the "
        "noise; this is for testing only."
    ),
    "public_columns_leak": (
        "Public columns are released unchanged; if they predict the label, the label is less "
        "protected than \u03b5 suggests."
    ),
}

RISK_LABEL = "Computed on the raw data \u2014 internal use only. Do not publish."
STEWARD_LABEL = "Counts computed on the raw data \u2014 internal use only. Do not publish."
WITHHELD = "withheld: copied from the data"

SIGN_OFF_TEXT = (
    "I have reviewed this release: the columns and their roles, the privacy guarantee and its "
    "limits, the budget spent and the residual risks described in this report."
)
#: the external version has no residual-risk section to have reviewed
SIGN_OFF_TEXT_EXTERNAL = (
    "I have reviewed this release: the columns and their roles, the privacy guarantee and its "
    "limits, and the budget spent, as described in this report."
)


def ack_text(code: str) -> str:
    key = code.split(":", 1)[0].strip()
    return ACKNOWLEDGEMENTS.get(key, code)
