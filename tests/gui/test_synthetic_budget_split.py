"""The budget page shows how a synthetic release shares the ε the user chose (issue 19, item 1):
one row per DP domain estimate and one for the synthesizer, in plain words, each with its share
and the ε of that share (the plan's figures), and the total, which is the ε chosen."""

from __future__ import annotations

from dataclasses import replace

import pytest


def _synthetic_with_dp_domains(window):
    from dpstudio.gui.wizard.edits import set_domain, set_release_type
    from dpstudio.recipe.model import Cost, Domain

    s = window.session
    s.update(lambda r: set_release_type(r, "synthetic"))
    for c in s.recipe.columns:  # public columns without a typed domain are left out of this test
        if c.role not in ("identifier", "ignore") and c.domain is None:
            s.update_column(c.name, role="ignore")
    s.update_column("ethnicity", role="sensitive", type="categorical")
    s.update(
        lambda r: set_domain(
            set_domain(r, "ethnicity", Domain("categorical", source="dp", cost=Cost(0.1, 1e-8))),
            "income",
            Domain("numeric", source="dp", cost=Cost(0.1), search_low=0.0, search_high=1_000_000.0),
        )
    )
    s.update(lambda r: replace(r, budget=replace(r.budget, epsilon=1.0, delta=1e-6)))
    assert window.go_to(3), s.problems()
    return window.budget_page.preview


def _rows(table):
    return [[table.item(i, j).text() for j in range(table.columnCount())] for i in range(table.rowCount())]


def test_the_budget_page_shows_the_split_of_a_synthetic_release(qtbot, loaded_demo):
    panel = _synthetic_with_dp_domains(loaded_demo)
    s = loaded_demo.session
    plan, err = s.plan()
    assert plan is not None, err
    assert panel.split_table.isVisible() and not panel.table.isVisible()
    rows = _rows(panel.split_table)
    parts = [r[0] for r in rows]
    assert "Finding the categories of ethnicity" in parts and "Finding the range of income" in parts
    # a list found without candidates: the plan's threshold, in rows, said where the user decides
    cats = next(u for u in plan.units if u.name == "categories of ethnicity")
    assert f"(ethnicity: about {cats.facts['threshold']:,.0f} rows)" in panel.split_note.text()
    assert parts[-2] == "Fitting the synthesizer" and parts[-1].startswith("Total")
    # each row is the plan's unit: its share of the typed epsilon, as printed
    for u, row in zip(plan.units, rows[:-1], strict=True):
        assert row[2] == f"{u.budget_share[0]:.4g}", u.name
    assert rows[-1][2] == f"{plan.total.epsilon:.4g}" == "1" and rows[-1][1] == "100 %"
    shares = [float(r[1].rstrip(" %")) for r in rows[:-1]]
    assert sum(shares) == pytest.approx(100.0, abs=0.2)
    # the default: the domain estimates take a tenth of the budget, the synthesizer the rest
    assert shares[-1] == pytest.approx(90.0, abs=0.05)
    # plain words in the table; the calculus in the collapsed details
    assert not any("ρ" in c or "zCDP" in c for r in rows for c in r)
    assert not panel.details_area.isVisible()
    details = panel.details.text()
    assert "zero-concentrated DP" in details and "Approximate-zCDP δ" in details
    # the table follows epsilon
    loaded_demo.budget_page.set_epsilon(3.0)
    rows = _rows(panel.split_table)
    assert rows[-1][2] == "3"
    plan, _ = s.plan()
    assert rows[-2][2] == f"{plan.units[-1].budget_share[0]:.4g}"


def test_a_record_release_keeps_the_unit_table(qtbot, loaded_demo):
    assert loaded_demo.go_to(3)
    panel = loaded_demo.budget_page.preview
    assert panel.table.isVisible() and not panel.split_table.isVisible() and not panel.split_note.isVisible()
