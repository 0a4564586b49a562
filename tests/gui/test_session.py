from dataclasses import replace

from dpstudio.gui.session import Session
from dpstudio.gui.wizard.edits import set_domain, set_release_type, set_role
from dpstudio.recipe.model import Domain, Mechanism


def _session(qtbot, demo_copy):
    from dpstudio.engine.progress import NEVER_CANCELLED
    from dpstudio.gui.session import load_for_session

    s = Session()
    s.set_data(*load_for_session(demo_copy, progress=lambda *a: None, cancel=NEVER_CANCELLED))
    return s


def test_update_emits_and_undoes(qtbot, demo_copy):
    s = _session(qtbot, demo_copy)
    before = s.recipe
    with qtbot.waitSignal(s.recipeChanged, timeout=120000):
        assert s.update(lambda r: replace(r, budget=replace(r.budget, epsilon=2.5)))
    assert s.recipe.budget.epsilon == 2.5
    assert not s.update(lambda r: r)  # no change, no signal, no undo step
    s.undo()
    assert s.recipe == before
    s.redo()
    assert s.recipe.budget.epsilon == 2.5


def test_slider_moves_merge_into_one_undo_step(qtbot, demo_copy):
    s = _session(qtbot, demo_copy)
    before = s.recipe
    for e in (1.1, 1.2, 1.3, 1.4):
        s.update(lambda r, e=e: replace(r, budget=replace(r.budget, epsilon=e)), merge="epsilon")
    s.undo()
    assert s.recipe == before


def test_problems_are_grouped_by_page(qtbot, demo_copy):
    s = _session(qtbot, demo_copy)
    # the schema recipe has no domains yet: the columns page is blocked, not the budget page
    assert s.page_problems("columns")
    assert not s.page_problems("budget")
    s.update(lambda r: replace(r, budget=replace(r.budget, epsilon=0.0)))
    assert any(p.startswith("budget") for p in s.page_problems("budget"))
    s.update(lambda r: r.with_column("income", mechanism=Mechanism("rr")))
    assert any(p.startswith("column 'income': numeric columns use") for p in s.page_problems("release"))
    assert all(p.page == page for page in ("data", "columns", "release", "budget") for p in s.page_problems(page))


def test_copy_from_data_needs_confirmation_and_adds_ack(qtbot, demo_copy):
    import pytest

    s = _session(qtbot, demo_copy)
    with pytest.raises(ValueError):
        set_domain(s.recipe, "income", Domain(kind="numeric", source="data"))
    r = set_domain(s.recipe, "income", Domain(kind="numeric", source="data"), acknowledge=True)
    assert "domain-copied-from-data" in r.acknowledgements
    r2 = set_domain(r, "income", Domain(kind="numeric", source="public", low=0, high=1e6))
    assert "domain-copied-from-data" not in r2.acknowledgements


def test_preview_recipe_is_cached_across_epsilon_moves(qtbot, demo_copy):
    s = _session(qtbot, demo_copy)
    s.update(lambda r: set_domain(r, "income", Domain(kind="numeric", source="data"), acknowledge=True))
    p1 = s.preview_recipe()
    assert p1.column("income").domain.known
    s.update(lambda r: replace(r, budget=replace(r.budget, epsilon=3.0)))
    p2 = s.preview_recipe()
    assert p2.columns is p1.columns and p2.budget.epsilon == 3.0


def test_release_type_change_refits_mechanisms(qtbot, demo_copy):
    s = _session(qtbot, demo_copy)
    r = set_role(s.recipe, "employed", "label")
    r = set_release_type(r, "label")
    assert r.column("income").mechanism is None  # sensitive columns pass through a label release
    assert r.column("employed").mechanism.name == "rr"
    r = set_release_type(r, "synthetic")
    assert r.budget.delta > 0
