"""Problems reach the wizard page that can fix them by their typed ``page`` (not by their wording),
and the columns page marks a column by the problem's ``field``."""

from __future__ import annotations

from dataclasses import replace

from dpstudio.gui.wizard.edits import set_domain
from dpstudio.recipe.model import Domain


def _pages(win):
    return {p.key: p for p in (win.data_page, win.columns_page, win.release_page, win.budget_page)}


def _where(win, text):
    """The pages whose problems include ``text``."""
    return sorted(k for k, p in _pages(win).items() if any(text in q for q in p.problems()))


def test_budget_problem_shows_on_the_budget_page(qtbot, loaded_demo):
    win = loaded_demo
    assert all(p.isComplete() for p in _pages(win).values()), win.session.problems()
    win.session.update(lambda r: replace(r, budget=replace(r.budget, epsilon=0.0)))
    assert _where(win, "epsilon must be > 0") == ["budget"]
    assert win.columns_page.isComplete() and win.release_page.isComplete()
    assert not win.budget_page.isComplete()
    assert win.go_to(3)  # the earlier pages are complete: the budget page is reachable
    win.budget_page.refresh_now()
    assert (
        "epsilon must be &gt; 0" in win.budget_page.problem_label.text()
        or "epsilon must be > 0" in win.budget_page.problem_label.text()
    )
    win._update_nav()
    assert "epsilon must be > 0" in win.blocker.toolTip()


def test_column_problem_shows_on_the_columns_page(qtbot, loaded_demo):
    win = loaded_demo
    win.session.update(lambda r: set_domain(r, "income", Domain("numeric", low=10.0, high=1.0)))
    assert _where(win, "column 'income': bounds must satisfy low < high") == ["columns"]
    page = win.columns_page
    assert not page.isComplete() and win.budget_page.problems() == []
    win.go_to(1)
    page.refresh_now()
    row = page._names.index("income")
    status = page.table.item(row, 4)
    assert status.text() == "needs attention" and "low < high" in status.toolTip()
    # only that column is marked
    assert page.table.item(page._names.index("education_level"), 4).text() == "ready"
    assert "low &lt; high" in page.problem_label.text() or "low < high" in page.problem_label.text()


def test_plan_problems_reach_the_budget_page(qtbot, loaded_demo):
    """Each unit's share of epsilon is the plan's check: below the floor it is shown where epsilon
    is set, and the columns page (which edits neither budget nor weights) stays complete."""
    win = loaded_demo
    win.session.update(lambda r: replace(r, budget=replace(r.budget, epsilon=2e-6)))
    shares = [p for p in win.session.problems() if "share of epsilon" in p]
    assert shares and all(p.page == "budget" and p.field.startswith("column:") for p in shares)
    assert _where(win, "share of epsilon") == ["budget"]
    assert win.columns_page.isComplete() and win.release_page.isComplete()


def test_mechanism_problem_shows_on_the_release_page(qtbot, loaded_demo):
    from dpstudio.recipe.model import Mechanism

    win = loaded_demo
    win.session.update(lambda r: r.with_column("income", mechanism=Mechanism("rr", 2.0)))
    assert _where(win, "column 'income': numeric columns use") == ["release"]
    # a problem of another page never marks a column on the columns page
    win.go_to(1)
    win.columns_page.refresh_now()
    assert win.columns_page.table.item(win.columns_page._names.index("income"), 4).text() == "ready"
