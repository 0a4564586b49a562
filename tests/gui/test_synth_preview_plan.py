"""The synthetic preview's budget split is the one the release's synthesizer computes.

The budget page shows how the synthesizer splits its budget and the embedding's noise-to-signal
ratio before anything runs.  Both depend on the number of label classes; the fit reads it off
the public table spec the release builds (``dpstudio.plan.synthetic.table_spec``), so the preview
must too (it used to count a label's ``other`` category beside its list as one more class).
Each case runs the release until the synthesizer's ``fit`` is called, captures what it was
given, and compares the synthesizer's own ``budget_plan`` for that spec with the preview's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpstudio.engine.rng import make_random_source
from dpstudio.engine.synth.merf import MerfSynthesizer
from dpstudio.engine.synth.mst import MSTSynthesizer
from dpstudio.engine.synth.pearl import PearlSynthesizer
from dpstudio.gui.wizard.budget_charts import embedding_noise_to_signal, synth_budget_plan
from dpstudio.plan import compile_plan, execute
from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Params, Recipe, ReleaseSpec

N = 400
YES_NO_OTHER = Domain("categorical", categories=("no", "yes", "unknown"), other="unknown")
THREE = Domain("categorical", categories=("a", "b", "c"))
DP_BOUNDS = Domain("numeric", source="dp", cost=Cost(0.2), search_low=0.0, search_high=1000.0)


class _Stop(Exception):
    pass


def _column(name, type_, role, domain):
    return Column(name, type_, role, domain=domain, type_source="confirmed", role_source="confirmed")


def _recipe(method, label, x_domain=None):
    columns = (
        _column("x", "float", "sensitive", x_domain or Domain("numeric", low=0.0, high=1.0)),
        _column("z", "categorical", "sensitive", Domain("categorical", categories=("p", "q"))),
        _column("y", "categorical", "label", label),
    )
    return Recipe(
        InputSpec("x.csv"), ReleaseSpec("synthetic", Params.of({"method": method})), columns, Budget(1.0, 1e-6)
    )


def _frame(label):
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {"x": rng.uniform(0, 1, N), "z": rng.choice(["p", "q"], N), "y": rng.choice(label.categories, N)}
    )


def _fit_budget_plan(recipe, frame, monkeypatch):
    """The synthesizer's budget plan for exactly what the release hands its ``fit``."""
    seen = {}

    def spy(self, data, spec, *, epsilon, delta, **_kw):
        seen["plan"] = self.budget_plan(epsilon, delta, len(data), spec.n_classes)
        seen["n_classes"] = spec.n_classes
        raise _Stop

    for cls in (PearlSynthesizer, MerfSynthesizer, MSTSynthesizer):
        monkeypatch.setattr(cls, "fit", spy)
    with pytest.raises(_Stop):
        execute(compile_plan(recipe), frame, make_random_source(1))
    return seen


@pytest.mark.parametrize(
    ("method", "label", "x_domain"),
    [
        ("merf", YES_NO_OTHER, None),
        ("pearl", YES_NO_OTHER, None),
        ("pearl", THREE, None),
        ("mst", YES_NO_OTHER, None),
        ("merf", THREE, DP_BOUNDS),  # a feature's bounds known only once the release runs
    ],
)
def test_preview_budget_plan_is_the_fits(method, label, x_domain, monkeypatch):
    recipe = _recipe(method, label, x_domain)
    frame = _frame(label)
    fit = _fit_budget_plan(recipe, frame, monkeypatch)
    assert fit["n_classes"] == len(label.categories)
    preview = synth_budget_plan(recipe, N)
    assert preview and preview == fit["plan"]
    if method in ("pearl", "merf"):
        emb = next(p for p in fit["plan"] if "embedding" in p["part"])
        shown = embedding_noise_to_signal(recipe, N)
        assert shown is not None and (shown["sigma"], shown["dim"]) == (emb["sigma"], emb["dim"])
    else:
        assert embedding_noise_to_signal(recipe, N) is None


def test_an_other_category_outside_the_list_is_no_extra_class():
    """Such a recipe is refused, but the page shows the split beside the problem: the spec's."""
    from dpstudio.engine.synth import SYNTHESIZERS
    from dpstudio.plan.synthetic import table_spec

    recipe = _recipe("merf", Domain("categorical", categories=("no", "yes"), other="unknown"))
    assert table_spec(recipe).n_classes == 2
    assert synth_budget_plan(recipe, N) == SYNTHESIZERS["merf"]().budget_plan(1.0, 1e-6, N, 2)
    assert embedding_noise_to_signal(recipe, N)["dim"] == 2 * 500 * 2 + 2  # 2k features per class, 2 proportions


def test_no_split_while_the_label_categories_are_unknown():
    pending = Domain("categorical", source="dp", cost=Cost(0.2), candidates=("no", "yes", "maybe"))
    assert synth_budget_plan(_recipe("merf", pending), N) is None
