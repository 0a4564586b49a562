"""Typed problem records: every problem the recipe checks and the plan checks produce is a
:class:`Problem` - the same English text, plus where it lies (``field``) and the wizard page that
can fix it (``page``), chosen where the problem is found.  The GUI routes by ``page``; it used to
route by matching the English text, which the last tests compare against."""

from __future__ import annotations

import ast
import copy
import json
import pickle
import re
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from dpstudio.errors import RecipeError
from dpstudio.plan import plan_problems
from dpstudio.recipe.model import (
    Budget,
    Column,
    Cost,
    Domain,
    InputSpec,
    Mechanism,
    Outputs,
    Params,
    Recipe,
    ReleaseSpec,
    Target,
)
from dpstudio.recipe.validate import (
    ACK_DOMAIN_FROM_DATA,
    FIELDS,
    MAX_CATEGORIES,
    PAGES,
    Problem,
    declared_type_problems,
)

ROOT = Path(__file__).resolve().parents[1]
CHECKED = (ROOT / "dpstudio" / "recipe" / "validate.py", ROOT / "dpstudio" / "plan" / "problems.py")
#: checks no recipe reaches (their problems are typed all the same)
UNREACHED = ("embeddings are released only by 'record' releases",)


# ---- a generator of broken recipes: one (or more) per check ------------------------------------


def _recipe(*columns, epsilon=1.0, delta=0.0, release="record", rows=None, acks=(), path="x.csv") -> Recipe:
    return Recipe(
        input=InputSpec(path),
        release=ReleaseSpec(release),
        columns=tuple(columns),
        budget=Budget(epsilon, delta),
        outputs=Outputs(rows=rows),
        acknowledgements=tuple(acks),
    )


def _targets(*columns_and_targets, release="record") -> Recipe:
    cols = tuple(x for x in columns_and_targets if isinstance(x, Column))
    targets = tuple(x for x in columns_and_targets if isinstance(x, Target))
    r = _recipe(*cols, release=release)
    return replace(r, budget=replace(r.budget, targets=targets))


def _pearl(r: Recipe) -> Recipe:
    return replace(r, release=replace(r.release, options=Params.of({"method": "pearl"})))


def T(kind, value, column=None, probability=None) -> Target:  # noqa: N802 - reads like the recipe's form
    return Target(kind=kind, value=value, column=column, probability=probability)


def _num(name="a", mech="laplace", weight=1.0, low=0.0, high=1.0, type_="float", role="sensitive", domain=...):
    d = Domain("numeric", low=low, high=high) if domain is ... else domain
    return Column(name, type_, role, d, None if mech is None else Mechanism(mech, weight))


def _cat(name="c", cats=("x", "y"), mech="rr", role="sensitive", domain=..., type_="categorical"):
    d = Domain("categorical", categories=cats) if domain is ... else domain
    return Column(name, type_, role, d, None if mech is None else Mechanism(mech))


def _emb(name="e", mech="metric", pool="pool.csv", type_="vector", group=None):
    params = Params.of({} if pool is None else {"pool": pool})
    return Column(name, type_, "embedding", None, Mechanism(mech, params=params), group=group)


def _label(name="y", type_="categorical"):
    return Column(name, type_, "label", Domain("categorical", categories=("0", "1")), Mechanism("rr"))


class _Schema:
    def __init__(self, names, rows=100):
        self.rows = rows
        self.columns = [type("C", (), {"name": n})() for n in names]


def _dp_num(cost=..., low=0.0, high=1.0):
    cost = Cost(0.1) if cost is ... else cost
    return Domain("numeric", source="dp", cost=cost, search_low=low, search_high=high)


#: (case, recipe, schema, a phrase the case must produce)
CASES = [
    # budget, input, the list of columns
    ("epsilon zero", _recipe(_num(), epsilon=0.0), None, "epsilon must be > 0"),
    ("epsilon above 50", _recipe(_num(), epsilon=60.0), None, "is above 50"),
    ("delta out of range", _recipe(_num(), delta=1.5), None, "delta must lie in [0, 1)"),
    ("no input path", _recipe(_num(), path=""), None, "input.path: empty"),
    ("duplicate column", _recipe(_num("a"), _num("a")), None, "listed more than once"),
    ("no columns", _recipe(), None, "lists no columns"),
    # labels
    ("two labels", _recipe(_label("y"), _label("z")), None, "at most one label column"),
    ("label release without label", _recipe(_num(), release="label"), None, "needs a column with role 'label'"),
    (
        "label of type float",
        _recipe(_num("y", role="label", type_="float", mech="rr", domain=Domain("categorical", categories=("0", "1")))),
        None,
        "a label must be categorical/boolean",
    ),
    # roles and mechanisms
    (
        "dropped column with a mechanism",
        _recipe(_num(), Column("id", "text", "identifier", None, Mechanism("laplace"))),
        None,
        "is dropped, but mechanism",
    ),
    ("datetime released", _recipe(Column("d", "datetime", "sensitive")), None, "cannot be released by"),
    ("weight zero", _recipe(_num(weight=0.0)), None, "mechanism weight must be > 0"),
    (
        "release option nothing reads",
        replace(_recipe(_num()), release=ReleaseSpec("record", Params.of({"clamp": False}))),
        None,
        "release option(s) 'clamp': not read by a record release",
    ),
    (
        "mechanism parameter nothing reads",
        _recipe(
            Column(
                "a",
                "float",
                "sensitive",
                Domain("numeric", low=0, high=1),
                Mechanism("laplace", params=Params.of({"scale": 1e-4})),
            )
        ),
        None,
        "mechanism parameter(s) 'scale' are not read by 'laplace' (it takes none)",
    ),
    ("public column with a mechanism", _recipe(_num(), _cat("p", role="public")), None, "released unchanged by"),
    ("numeric column with rr", _recipe(_num(mech="rr")), None, "numeric columns use 'laplace' or 'gaussian'"),
    ("categorical column with laplace", _recipe(_cat(mech="laplace")), None, "categorical columns and labels use"),
    # embeddings
    # (an embedding in another release type never reaches its own check: only 'record' releases
    # perturb the role 'embedding', so the column is passed over as not perturbed first - see UNREACHED)
    ("embedding with laplace", _recipe(_emb(mech="laplace")), None, "embedding columns use mechanism 'metric'"),
    ("embedding without a pool", _recipe(_emb(pool=None)), None, "needs a public pool of vectors"),
    ("embedding pool is the dataset", _recipe(_emb(pool="dataset")), None, "drawing replacements"),
    # domains
    ("numeric without domain", _recipe(_num(domain=None)), None, "needs a public domain: bounds"),
    ("categorical without domain", _recipe(_cat(domain=None)), None, "needs a public domain: a category list"),
    (
        "numeric with a category list",
        _recipe(_num(domain=Domain("categorical", categories=("x", "y")))),
        None,
        "numeric column has a 'categorical' domain",
    ),
    (
        "categorical with bounds",
        _recipe(_cat(domain=Domain("numeric", low=0, high=1))),
        None,
        "categorical column has a 'numeric' domain",
    ),
    ("bounds missing high", _recipe(_num(high=None)), None, "bounds need both low and high"),
    ("bounds reversed", _recipe(_num(low=5.0, high=1.0)), None, "bounds must satisfy low < high"),
    ("empty category list", _recipe(_cat(cats=())), None, "category list is empty"),
    ("repeated categories", _recipe(_cat(cats=("x", "x", "y"))), None, "category list repeats ['x']"),
    (
        "repeated private categories",
        _recipe(
            _cat(domain=Domain("categorical", source="data", categories=("x", "x", "y"))), acks=(ACK_DOMAIN_FROM_DATA,)
        ),
        None,
        "at position(s) 2",
    ),
    ("one category", _recipe(_cat(cats=("x",))), None, "at least 2 categories"),
    (
        "other not listed",
        _recipe(_cat(domain=Domain("categorical", categories=("x", "y"), other="z"))),
        None,
        "'other' category 'z' is not in the category list",
    ),
    (
        "domain copied without acknowledgement",
        _recipe(_num(domain=Domain("numeric", source="data", low=0, high=1))),
        None,
        "domain copied from the private data needs acknowledgement",
    ),
    (
        "too many categories",
        _recipe(_cat(cats=tuple(str(i) for i in range(MAX_CATEGORIES + 1)))),
        None,
        "randomized response takes at most",
    ),
    # exact grid arithmetic
    ("bounds overflow", _recipe(_num(low=-1e308, high=1e308)), None, "high - low overflows"),
    ("bounds too narrow", _recipe(_num(low=0.0, high=1e-300)), None, "high - low is below"),
    ("bounds far from zero", _recipe(_num(low=1e15, high=1e15 + 1)), None, "too far from zero"),
    # DP estimates of domains and their costs
    ("DP estimate without a cost", _recipe(_num(domain=_dp_num(cost=None))), None, "needs a positive cost epsilon"),
    (
        "DP estimate with reversed search range",
        _recipe(_num(domain=_dp_num(low=1.0, high=0.0))),
        None,
        "public search range search_low < search_high",
    ),
    (
        "DP search range overflows",
        _recipe(_num(domain=_dp_num(low=-1e308, high=1e308))),
        None,
        "search range [-1e+308, 1e+308]: high - low overflows",
    ),
    (
        "category discovery without delta",
        _recipe(_cat(domain=Domain("categorical", source="dp", cost=Cost(0.1)))),
        None,
        "discovering categories without a public candidate list",
    ),
    (
        "DP estimate cost epsilon too large",
        _recipe(_num(domain=_dp_num(cost=Cost(100.0)))),
        None,
        "cost epsilon 100.0 is outside",
    ),
    (
        "DP estimate cost delta too large",
        _recipe(_num(domain=_dp_num(cost=Cost(0.1, 0.5)))),
        None,
        "cost delta 0.5 is outside",
    ),
    (
        "DP estimate cost delta tiny",
        _recipe(_num(domain=_dp_num(cost=Cost(0.1, 1e-60)))),
        None,
        "DP estimate cost: delta 1e-60 is below",
    ),
    (
        "DP estimate cost delta above 1/n",
        _recipe(_cat(domain=Domain("categorical", source="dp", cost=Cost(0.1, 1e-3)))),
        _Schema(["c"], rows=5000),
        "cost delta 0.001 is not below 1/n",
    ),
    # release types
    ("gaussian without delta", _recipe(_num(mech="gaussian")), None, "the Gaussian mechanism needs delta > 0"),
    (
        "density of a category",
        _recipe(_num(mech=None), _cat(mech=None), release="density", delta=1e-6),
        None,
        "a density release takes numeric columns",
    ),
    (
        "density of three columns",
        _recipe(*(_num(n, mech=None) for n in "abc"), release="density", delta=1e-6),
        None,
        "mark 1 or 2 numeric columns 'sensitive'",
    ),
    ("density without delta", _recipe(_num(mech=None), release="density"), None, "Gaussian-process noise"),
    (
        "model with a text feature",
        _recipe(_label(), _cat("f", role="public", mech=None), release="model", delta=1e-6),
        None,
        "the DP model takes numeric features",
    ),
    (
        "synthetic without delta",
        _recipe(_num(mech=None), _cat(mech=None), release="synthetic"),
        None,
        "the 'synthetic' release needs delta > 0",
    ),
    # limits of the exact samplers
    ("epsilon below the floor", _recipe(_num(), epsilon=1e-7), None, "is below 1e-06"),
    (
        "synthetic epsilon too small",
        _recipe(_num(mech=None), _cat(mech=None), release="synthetic", epsilon=1e-3, delta=1e-6),
        None,
        "synthetic data needs epsilon",
    ),
    ("delta tiny", _recipe(_num(), delta=1e-60), None, "budget: delta 1e-60 is below 1e-50"),
    ("too many synthetic rows", _recipe(_num(), rows=10**12), None, "outputs.rows: at most"),
    ("weight too large", _recipe(_num(weight=1e7), _num("b")), None, "mechanism weight 10000000.0 is outside"),
    # the data
    ("schema mismatch", _recipe(_num("a"), _num("b")), _Schema(["a", "extra"]), "not found in the data"),
    ("schema mismatch, other side", _recipe(_num("a")), _Schema(["a", "extra"]), "in the data but not in the recipe"),
    ("delta above 1/n", _recipe(_num(mech="gaussian"), delta=0.5), _Schema(["a"]), "is not below 1/n = 0.01"),
    # the plan's own checks: each unit's share of epsilon, each Gaussian unit's noise
    (
        "share of epsilon",
        _recipe(_num("a", weight=1.0), _num("b", weight=3.0), epsilon=2e-6),
        None,
        "column 'a': its share of epsilon",
    ),
    (
        "share of epsilon of an embedding group",
        _recipe(
            _num("a", weight=3.0),
            _emb("e1", type_="float", group="g"),
            _emb("e2", type_="float", group="g"),
            epsilon=2.5e-6,
        ),
        None,
        "column 'g': its share of epsilon",
    ),
    (
        "gaussian sigma steps",
        _recipe(_num("a", "gaussian", low=0, high=10, type_="integer"), epsilon=5e-6, delta=1e-6),
        None,
        "Gaussian noise at epsilon",
    ),
    # names that look like other pages' words (the old text matcher read them)
    (
        "column named like a mechanism",
        _recipe(_num("mechanism", domain=None)),
        None,
        "column 'mechanism': needs a public domain",
    ),
    (
        "data column named like a mechanism",
        _recipe(_num("a"), _num("b")),
        _Schema(["a", "mechanism_id"]),
        "column 'b': not found in the data (columns: a, mechanism_id)",
    ),
    (
        "category that quotes a use",
        _recipe(_cat(cats=("we use 'x'", "we use 'x'", "y"))),
        None,
        "category list repeats",
    ),
    ("column without a name", _recipe(_num("", domain=None)), None, "column '': needs a public domain"),
    # budget targets (issue 21): each names a released column of the right mechanism, in range
    (
        "target of another release type",
        _targets(_label(), T("label-attack", 0.6)),
        None,
        "does not apply to a 'record'",
    ),
    ("target on a model", _targets(_num(), T("within", 1, "a", 0.9), release="model"), None, "takes no targets yet"),
    (
        "two targets on a column",
        _targets(_num(), T("within", 0.1, "a", 0.9), T("within", 0.2, "a", 0.8)),
        None,
        "a second",
    ),
    ("target on no column", _targets(_num(), T("keep", 0.8, "zz")), None, "no column 'zz'"),
    (
        "target on a public column",
        _targets(_num(role="public", mech=None), T("within", 1, "a", 0.5)),
        None,
        "not perturbed",
    ),
    (
        "keep target on a number",
        _targets(_num(), T("keep", 0.8, "a")),
        None,
        "needs a column perturbed with randomized response",
    ),
    ("negative tolerance", _targets(_num(), T("within", -1, "a", 0.5)), None, "tolerance must be a number > 0"),
    ("share out of range", _targets(_num(), T("within", 1, "a", 1.5)), None, "share of records must lie strictly"),
    ("risk target out of range", _targets(_num(), T("reid", 2.0)), None, "value must lie strictly between 0 and 1"),
    (
        "marginals target, categories found with DP",
        _targets(_cat(domain=Domain("categorical", source="dp")), T("marginals", 0.05), release="synthetic"),
        None,
        "found with DP at release time",
    ),
    (
        "within target on a copied domain",
        _targets(_num(domain=Domain("numeric", source="data", low=0.0, high=1.0)), T("within", 0.1, "a", 0.9)),
        None,
        "is copied from the data",
    ),
    (
        "marginals target, a copied domain",
        _targets(
            _cat(domain=Domain("categorical", source="data", categories=("x", "y"))),
            T("marginals", 0.05),
            release="synthetic",
        ),
        None,
        "is copied from the data",
    ),
    (
        "marginals target on PEARL",
        _pearl(_targets(_num(), T("marginals", 0.05), release="synthetic")),
        None,
        "MST and AIM",
    ),
]

DECLARED_TYPE_CASE = (
    _recipe(_num("n", type_="integer", low=0, high=10)),
    pd.DataFrame({"n": [1.0, 2.5, 3.0]}),
    "declared integer, but 1 row(s) hold non-integer numbers",
)


def _problems(recipe, schema):
    return plan_problems(recipe, schema)


CATEGORY_LIST_CASE = (
    _recipe(_cat("c", cats=("x", "y"), mech=None), release="synthetic", delta=1e-6),
    pd.DataFrame({"c": ["x", "y", "z", None]}),
    "1 row(s) hold a value that is not in the category list",
)


def _all_cases():
    for name, recipe, schema, phrase in CASES:
        yield name, _problems(recipe, schema), phrase
    recipe, frame, phrase = DECLARED_TYPE_CASE
    yield "declared type", declared_type_problems(recipe, frame), phrase
    recipe, frame, phrase = CATEGORY_LIST_CASE
    yield "value outside a synthetic release's list", declared_type_problems(recipe, frame), phrase


def _valid_field(field: str) -> bool:
    return field in FIELDS or field.startswith("column:")


@pytest.mark.parametrize("name, problems, phrase", list(_all_cases()), ids=[c[0] for c in _all_cases()])
def test_every_problem_is_a_typed_record(name, problems, phrase):
    assert any(phrase in p for p in problems), (name, problems)
    for p in problems:
        assert type(p) is Problem, (name, p)
        assert p.page in PAGES, (name, p, p.page)
        assert _valid_field(p.field), (name, p, p.field)
        # the field agrees with the text it types
        m = re.match(r"column ('[^']*'|\"[^\"]*\")", p)
        if p.field.startswith("column:"):
            assert m and p.field == f"column:{ast.literal_eval(m.group(1))}", (name, p, p.field)
        elif p.field == "columns":
            assert p.startswith("columns:") or "share of epsilon" in p, (name, p)  # or an embedding group
        elif p.field == "outputs":
            assert p.startswith("outputs."), (name, p)
        elif p.field == "input":
            assert p.startswith("input."), (name, p)
        else:
            assert p.startswith(p.field), (name, p, p.field)


def test_an_option_another_release_type_reads_is_a_harmless_leftover():
    """A synthesizer's ``method`` left on a record release (a change of type) misleads no one."""
    from dpstudio.plan.problems import ignored_settings

    r = replace(_recipe(_num()), release=ReleaseSpec("record", Params.of({"method": "aim", "iters": 3})))
    assert ignored_settings(r) == []
    r = replace(_recipe(_num()), release=ReleaseSpec("record", Params.of({"method": "aim", "scale": 3})))
    assert [str(p) for p in ignored_settings(r)] == [
        "release option(s) 'scale': not read by a record release (its options: clamp_to_bounds)"
    ]


def test_the_generator_reaches_every_check():
    """Every place in the recipe and plan checks that creates a problem is reached by a case
    above (so the tests above see every kind of problem)."""
    sites, unreached = set(), set()
    for path in CHECKED:
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("Problem", "problem")
            ):
                site = (path.name, node.lineno)
                (unreached if any(u in ast.get_source_segment(text, node) for u in UNREACHED) else sites).add(site)
    assert len(unreached) == len(UNREACHED)
    assert len(sites) >= 50
    reached = set()
    original = Problem.__new__

    def recording(cls, *args, **kwargs):
        frame = sys._getframe(1)
        while frame is not None:
            name = Path(frame.f_code.co_filename).name
            if any(Path(frame.f_code.co_filename) == p for p in CHECKED):
                start = list(frame.f_code.co_positions())[frame.f_lasti // 2][0]
                reached.add((name, start))
            frame = frame.f_back
        return original(cls, *args, **kwargs)

    Problem.__new__ = recording
    try:
        list(_all_cases())
    finally:
        Problem.__new__ = original
    assert sites - reached == set()


def test_problems_survive_pickling_copying_and_json():
    p = Problem("column 'a': bounds must satisfy low < high", field="column:a", page="columns")
    for q in (
        pickle.loads(pickle.dumps(p)),
        pickle.loads(pickle.dumps(p, protocol=0)),
        copy.copy(p),
        copy.deepcopy(p),
        copy.deepcopy([p])[0],
    ):
        assert type(q) is Problem and q == p and (q.field, q.page) == ("column:a", "columns")
    # still the plain message wherever a string was used
    assert p == "column 'a': bounds must satisfy low < high" and hash(p) == hash(str(p))
    assert json.dumps({"problems": [p]}) == json.dumps({"problems": [str(p)]})
    assert "\n".join([p, p]).count("low < high") == 2 and repr(p) == repr(str(p))
    err = pickle.loads(pickle.dumps(RecipeError([p])))
    assert err.problems[0].page == "columns"


def test_problem_refuses_unknown_pages_and_fields():
    with pytest.raises(ValueError):
        Problem("x", field="budget", page="export")
    with pytest.raises(ValueError):
        Problem("x", field="nowhere", page="budget")
    assert Problem("x", field="column:", page="columns").field == "column:"  # a column named ""
    with pytest.raises(TypeError):
        Problem("x")  # noqa - field and page are required


# ---- routing by page vs the old text matcher ----------------------------------------------------


def _old_page_of(problem: str) -> str:
    """The GUI's former router (dpstudio/gui/session.py::_page_of), verbatim."""
    p = problem.lower()
    if p.startswith("budget"):
        return "budget"
    if (
        p.startswith("release")
        or "mechanism" in p
        or " use '" in p
        or "released unchanged" in p
        or "cannot be released by" in p
        or "embeddings are released only" in p
    ):
        return "release"
    if p.startswith("input"):
        return "data"
    return "columns"


#: where the text matcher sent a problem to a page that cannot fix it: (phrase, old page, new page)
OLD_MATCHER_WRONG = [
    # the embedding pool and its acknowledgement are set on the release page
    ("drawing replacements from the dataset itself", "columns", "release"),
    # the message asks for the column's role: the columns page
    ("cannot be released by", "release", "columns"),
    # how many synthetic rows: a release setting, nothing on the columns page
    ("outputs.rows: at most", "columns", "release"),
    # share = budget x weight / total weight: the columns page edits neither; shown on the budget
    # page, the later of the two pages that can fix it
    ("its share of epsilon", "columns", "budget"),
    # the same for the Gaussian noise (matched only by the " use '" in "or use 'laplace'")
    ("Gaussian noise at epsilon", "release", "budget"),
    # user-chosen names and values inside the text: "mechanism" / " use '" sent domain problems
    # to the release page
    ("column 'mechanism': needs a public domain", "release", "columns"),
    ("mechanism_id", "release", "columns"),  # in "not found in the data (columns: ...)" too
    ("category list repeats [\"we use 'x'\"]", "release", "columns"),
    # budget targets came after the text matcher: they are set (and fixed) on the budget page
    ("targets: ", "columns", "budget"),
]


def test_typed_routing_matches_the_old_matcher_except_where_it_was_wrong():
    seen = set()
    for name, problems, _phrase in _all_cases():
        for p in problems:
            old = _old_page_of(p)
            if old == p.page:
                continue
            wrong = [w for w in OLD_MATCHER_WRONG if w[0] in p]
            assert wrong, f"{name}: routed to {p.page!r}, the old matcher said {old!r}: {p}"
            phrase, was, now = wrong[0]
            assert (old, p.page) == (was, now), (name, p)
            seen.add(phrase)
    assert seen == {w[0] for w in OLD_MATCHER_WRONG}  # every listed case still happens


def test_pages_follow_the_controls_that_fix_them():
    by = {name: problems for name, problems, _ in _all_cases()}

    def page(case, phrase):
        return next(p for p in by[case] if phrase in p).page

    assert page("epsilon zero", "epsilon") == "budget"
    assert page("gaussian without delta", "Gaussian") == "budget"
    assert page("no input path", "input") == "data"
    assert page("bounds reversed", "low < high") == "columns"
    assert page("DP estimate cost epsilon too large", "cost epsilon") == "columns"
    assert page("numeric column with rr", "numeric columns use") == "release"
    assert page("weight too large", "weight") == "release"
    assert page("embedding without a pool", "pool") == "release"
    assert page("label release without label", "label") == "release"
    assert page("share of epsilon", "share of epsilon") == "budget"
    share = next(p for p in by["share of epsilon of an embedding group"] if "share" in p and "'g'" in p)
    assert share.field == "columns"  # a group of columns, not one column


def test_a_negative_delta_is_one_problem_not_three_contradicting_ones():
    """delta = -1 used to read "must lie in [0, 1)", "needs delta > 0, got 0" (it was -1) and
    "below 1e-50; use 0 or at least 1e-50" (0 refused just above) at once."""
    recipe = _recipe(_cat("c", mech=None), release="synthetic", delta=-1.0)
    deltas = [p for p in plan_problems(recipe, None) if "delta" in p]
    assert deltas == ["budget: delta must lie in [0, 1), got -1.0"]
