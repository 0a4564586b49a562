"""Bounded memory and time on any input (issue 16 item 5).

The limits ``recipe check`` enforces are where dpstudio's exact samplers stay exact and fast;
spreadsheets are read in memory proportional to their cells, not to their declared extent;
pipes are never opened; and every rejection loop of the samplers has a bound.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstudio.errors import UserError
from dpstudio.plan import plan_problems
from dpstudio.recipe.model import Budget, Column, Cost, Domain, InputSpec, Mechanism, Outputs, Recipe, ReleaseSpec
from dpstudio.recipe.validate import MAX_DISCOVERY_DELTA, MAX_GAUSSIAN_SIGMA_STEPS, MIN_UNIT_EPSILON, limit_problems

ROOT = Path(__file__).resolve().parents[1]


def _recipe(*columns, epsilon=1.0, delta=0.0, rows=None, release="record") -> Recipe:
    return Recipe(
        input=InputSpec("x.csv"),
        release=ReleaseSpec(release),
        columns=tuple(columns),
        budget=Budget(epsilon, delta),
        outputs=Outputs(rows=rows),
    )


def _num(name="a", mech="laplace", weight=1.0, low=0.0, high=1.0, type_="float"):
    return Column(name, type_, "sensitive", Domain("numeric", low=low, high=high), Mechanism(mech, weight))


def _run(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a child with a timeout: a regression to an unbounded loop fails, never hangs."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


# ---- budgets and weights ------------------------------------------------------------------------


def test_unit_epsilon_share_has_a_floor():
    """epsilon x weight / total weight per perturbed unit: at the floor fine, below it refused."""
    at = _recipe(_num("a"), _num("b"), epsilon=2 * MIN_UNIT_EPSILON)
    assert plan_problems(at) == []
    below = _recipe(_num("a", weight=1.0), _num("b", weight=3.0), epsilon=2 * MIN_UNIT_EPSILON)
    problems = plan_problems(below)
    assert len(problems) == 1 and "column 'a'" in problems[0] and "share of epsilon" in problems[0]
    assert (problems[0].field, problems[0].page) == ("column:a", "budget")  # typed where found


@pytest.mark.parametrize("weight", [1e300, 1e-300, 1e7, 1e-7])
def test_weights_outside_the_range_are_refused(weight):
    assert any("weight" in p for p in plan_problems(_recipe(_num("a", weight=weight), _num("b"))))


@pytest.mark.parametrize("epsilon", [1e-300, 1e-18, 1e-7])
def test_tiny_budget_is_refused(epsilon):
    assert any("below 1e-06" in p for p in plan_problems(_recipe(_num(), epsilon=epsilon)))


def test_laplace_at_the_epsilon_floor_draws_exact_integers():
    """The floor is where the discrete Laplace still draws: scale 2048 / 1e-6 grid steps fits
    int64 and every draw is decided (the float path plus the exact fallback)."""
    from dpstudio.engine.mechanisms.laplace import LaplaceMechanism
    from dpstudio.engine.rng import RandomSource

    mech = LaplaceMechanism(epsilon=MIN_UNIT_EPSILON, low=0.0, high=1.0)
    assert mech.scale_steps == pytest.approx(mech.diam_steps / MIN_UNIT_EPSILON)
    out = mech.release(np.full(2000, 0.5), RandomSource(seed=4))
    k = out / mech.step
    assert np.all(np.isfinite(out)) and np.array_equal(k, np.round(k))
    # |noise| ~ Exp(scale): the median is scale * log 2, far from int64 overflow
    assert 0.3 < np.median(np.abs(k - 0.5 / mech.step)) / (mech.scale_steps * np.log(2)) < 3


def test_gaussian_grid_coarsens_so_small_shares_still_run():
    """The discrete Gaussian's calibration sums its pmf over ~30 sigma, so sigma in grid steps
    must stay bounded.  A float column's grid coarsens with the noise (public inputs only), so
    small epsilon shares run with sigma near the target; only shares too small for any grid are
    refused."""
    from dpstudio.engine.mechanisms.gaussian import SIGMA_STEPS_TARGET, GaussianMechanism

    assert plan_problems(_recipe(_num("a", "gaussian"), epsilon=1.0, delta=1e-6)) == []
    # eps 0.01 needed ~1e6 steps on the fixed 2**10 grid (refused before); now a coarser grid
    assert plan_problems(_recipe(_num("a", "gaussian"), epsilon=0.01, delta=1e-6)) == []
    mech = GaussianMechanism(epsilon=0.01, delta=1e-6, low=0.0, high=100.0)
    assert mech.sigma_steps < 2 * SIGMA_STEPS_TARGET and mech.diam_steps >= 1
    assert 0.5 * mech.step < mech.sigma / SIGMA_STEPS_TARGET  # rounding to the coarser grid: negligible
    fine = GaussianMechanism(epsilon=1.0, delta=1e-6, low=0.0, high=100.0)
    assert fine.diam_steps >= 2**10  # wide enough noise budgets keep the usual grid
    joint = _recipe(_num("a", "gaussian", weight=1.0), _num("b", "gaussian", weight=1e4), epsilon=1.0, delta=1e-6)
    assert plan_problems(joint) == []
    # a share so small that even one grid step across the bounds needs sigma above the cap
    tiny = _recipe(_num("a", "gaussian", low=0, high=10, type_="integer"), epsilon=5e-6, delta=1e-6)
    problems = plan_problems(tiny)
    assert len(problems) == 1 and "Gaussian noise" in problems[0] and f"{MAX_GAUSSIAN_SIGMA_STEPS:g}" in problems[0]


def test_deltas():
    assert any("below 1e-50" in p for p in plan_problems(_recipe(_num("a", "gaussian"), delta=1e-300)))
    assert plan_problems(_recipe(_num("a", "gaussian"), delta=1e-40)) == []


# ---- domains --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "low, high, words", [(-1e308, 1e308, "overflows"), (0.0, 1e-300, "below"), (1e15, 1e15 + 1, "too far from zero")]
)
def test_bounds_must_give_an_exact_grid(low, high, words):
    problems = plan_problems(_recipe(_num(low=low, high=high)))
    assert len(problems) == 1 and words in problems[0]


def test_data_copied_bounds_are_not_quoted():
    col = Column(
        "a", "float", "sensitive", Domain("numeric", source="data", low=-1e308, high=1.2345e308), Mechanism("laplace")
    )
    problems = limit_problems(_recipe(col))
    assert problems and not any("1.2345" in p for p in problems)


def _discovery(epsilon=0.1, delta=1e-7, candidates=None):
    return Column(
        "c",
        "categorical",
        "sensitive",
        Domain("categorical", source="dp", cost=Cost(epsilon, delta), candidates=candidates),
        Mechanism("rr"),
    )


def test_category_discovery_delta_is_small_and_below_one_over_n():
    assert plan_problems(_recipe(_discovery(delta=MAX_DISCOVERY_DELTA))) == []
    assert any("cost delta 0.5" in p for p in plan_problems(_recipe(_discovery(delta=0.5))))
    assert any("cost delta" in p for p in plan_problems(_recipe(_discovery(delta=2 * MAX_DISCOVERY_DELTA))))

    class Schema:  # n = 5000: 1e-3 is not below 1/n
        rows = 5000
        columns = [type("C", (), {"name": "c"})()]

    assert any("1/n" in p for p in plan_problems(_recipe(_discovery(delta=MAX_DISCOVERY_DELTA)), Schema()))


@pytest.mark.parametrize("epsilon", [1e-300, 1e-7, 51.0])
def test_domain_estimate_epsilon_is_bounded(epsilon):
    assert any("cost epsilon" in p for p in plan_problems(_recipe(_discovery(epsilon=epsilon))))


def test_partition_threshold_at_the_floor_is_finite():
    """The threshold loop ends at eps = 1e-6 (at 1e-300, q = exp(-eps/2) rounds to 1: no end)."""
    from dpstudio.engine.domains import partition_selection_threshold

    t = partition_selection_threshold(MIN_UNIT_EPSILON, 1e-7)
    assert 2e6 * 15 < t < 2e6 * 16  # (2/eps) log(1/(2 delta)) = 2e6 x 15.4


def test_synthetic_epsilon_floor():
    """MST's Gaussian shares underflow (ZeroDivisionError) at a total epsilon of 1e-5."""
    cols = [Column(n, "categorical", "sensitive", Domain("categorical", categories=("x", "y"))) for n in "ab"]
    problems = limit_problems(_recipe(*cols, epsilon=1e-5, delta=1e-6, release="synthetic"))
    assert any("synthetic data needs epsilon" in p for p in problems)
    assert limit_problems(_recipe(*cols, epsilon=0.5, delta=1e-6, release="synthetic")) == []


def test_synthetic_rows_are_bounded():
    assert any("outputs.rows" in p for p in limit_problems(_recipe(_num(), rows=10**12)))


# ---- recipe JSON ----------------------------------------------------------------------------------


def test_recipe_json_refuses_duplicates_depth_and_non_finite():
    from dpstudio.recipe.model import parse_recipe_text

    with pytest.raises(UserError, match=r"key 'epsilon' appears more than once in budget"):
        parse_recipe_text('{"budget": {"epsilon": 1, "epsilon": 1000}}')
    with pytest.raises(UserError, match=r"key 'b' appears more than once in columns\[1\]"):
        parse_recipe_text('{"columns": [{}, {"b": 1, "b": 2}]}')
    with pytest.raises(UserError, match="nested too deeply"):
        parse_recipe_text("[" * 40 + "]" * 40)
    with pytest.raises(UserError, match="nested too deeply"):
        parse_recipe_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UserError, match="Infinity is not a JSON number"):
        parse_recipe_text('{"epsilon": -Infinity}')
    assert parse_recipe_text('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}


def test_recipe_numbers_beyond_float_range_are_problems_not_overflows():
    from dpstudio.errors import RecipeError
    from dpstudio.recipe.model import recipe_from_json

    data = {
        "input": {"path": "x.csv"},
        "release": {"type": "record"},
        "columns": [],
        "budget": {"epsilon": 10**400},
        "randomness": {"seed": 10**400},
    }
    with pytest.raises(RecipeError) as err:
        recipe_from_json(data)
    text = " | ".join(err.value.problems)
    assert "budget.epsilon" in text and "randomness.seed" in text and "401 digits" in text


def test_recipe_dumps_refuses_non_finite():
    recipe = _recipe(_num(), epsilon=float("inf"))
    with pytest.raises(ValueError):
        recipe.dumps()


# ---- files ----------------------------------------------------------------------------------------


def test_fifo_and_device_are_refused_before_opening(tmp_path):
    """load_table on a FIFO (which would block open() forever) and on /dev/zero (endless)."""
    pipe = tmp_path / "x.csv"
    import os

    os.mkfifo(pipe)
    proc = _run(f"""
        from dpstudio.engine.data.loader import load_table
        from dpstudio.errors import UserError
        for path in [{str(pipe)!r}, "/dev/zero"]:
            try:
                load_table(path)
            except UserError as e:
                print("refused:", e)
        """)
    assert proc.returncode == 0, proc.stderr
    # /dev/zero has no data-file suffix; the FIFO is the case that used to hang
    assert "x.csv' is not a regular file" in proc.stdout


def _sheet(path, cells):
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    for ref, value in cells.items():
        ws[ref] = value
    wb.save(path)
    return path


def test_xlsx_far_cell_is_refused_without_allocating_its_rectangle(tmp_path):
    """A 5 KB workbook with one value at XFD1048576: pandas pads it to 1,048,576 x 16,384 cells
    (tens of GB); we refuse it from the cells present, within a small memory budget."""
    import resource

    from dpstudio.engine.data.loader import load_table

    path = _sheet(tmp_path / "far.xlsx", {"A1": "a", "B1": "b", "A2": 1, "B2": 2, "XFD1048576": 1})
    assert path.stat().st_size < 20_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(UserError, match=r"1,048,576 rows x 16,384 columns"):
        load_table(path)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 500  # the peak never came near the rectangle's size


def test_xlsx_many_far_rows_are_refused_early(tmp_path):
    """Many rows each with a value in a far column: refused as soon as the rectangle read so
    far passes the cap, not after building it."""
    from dpstudio.engine.data.loader import _XLSX_MAX_CELLS, load_table

    rows = _XLSX_MAX_CELLS // 16_384 + 50
    cells = {"A1": "a"}
    cells.update({f"XFD{r}": r for r in range(2, rows + 2)})
    path = _sheet(tmp_path / "wide.xlsx", cells)
    with pytest.raises(UserError, match="more than the 25,000,000 cells"):
        load_table(path)


def test_xlsx_formatted_empty_far_cell_gives_the_small_table(tmp_path):
    """A far-away cell with formatting but no value is not data: the table is what is filled."""
    from openpyxl import Workbook

    from dpstudio.engine.data.loader import load_table

    path = tmp_path / "styled.xlsx"
    wb = Workbook()
    ws = wb.active
    for row in (["a", "b"], [1, "x"], [2.5, "NA"]):
        ws.append(row)
    ws["XFD1048576"].number_format = "0.00"
    wb.save(path)
    frame = load_table(path).frame
    assert list(frame.columns) == ["a", "b"] and len(frame) == 2
    expected = pd.read_excel(path, header=0)  # same conversions as pandas (NA -> missing, ints)
    pd.testing.assert_frame_equal(frame.astype(object), expected.astype(object), check_dtype=False)


# ---- sampler loops ----------------------------------------------------------------------------------


def test_rejection_loop_is_bounded():
    """A source that never lets CKS Alg. 3 accept (every uniform is 1 - 2^-32) used to spin
    forever; the loop now ends with an error after a bounded number of rounds."""
    proc = _run("""
        import numpy as np
        from dpstudio.engine.rng import RandomSource
        from dpstudio.engine.mechanisms import sampling

        class Stuck(RandomSource):
            def uint32(self, n):
                return np.full(int(n), 0xFFFFFFFF, dtype=np.uint32)

        try:
            sampling.discrete_gaussian(0.25, 1, Stuck(seed=1))
        except RuntimeError as e:
            print("bounded:", e)
        """)
    assert proc.returncode == 0, proc.stderr
    assert "bounded: discrete Gaussian rejection: not done after 10000 rounds" in proc.stdout


def test_cks_reference_sampler_finds_t_without_counting_up():
    """t = floor(sigma) + 1 used to be found by counting t up one by one (sigma = 1e15: forever)."""
    proc = _run("""
        from fractions import Fraction
        from dpstudio.engine.rng import RandomSource
        from dpstudio.engine.mechanisms.sampling import discrete_gaussian_cks
        print(len(discrete_gaussian_cks(Fraction(10) ** 30, 0, RandomSource(seed=1))))
        """)
    assert proc.returncode == 0 and proc.stdout.strip() == "0", proc.stderr
