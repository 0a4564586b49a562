"""A domain copied from the data (acknowledged) is resolvable in the wizard as in the release, and
the wizard holds the declared types against the loaded table as the release will."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpstudio.engine.progress import NEVER_CANCELLED
from dpstudio.gui.session import Session, load_for_session
from dpstudio.gui.wizard.edits import set_domain
from dpstudio.recipe.model import Domain


def _session(tmp_path, frame: pd.DataFrame) -> Session:
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    loaded, schema, recipe, source = load_for_session(str(path), progress=lambda *a: None, cancel=NEVER_CANCELLED)
    s = Session()
    s.set_data(loaded, schema, recipe, source)
    return s


def test_a_copied_domain_is_no_dead_end(qapp, tmp_path):
    g = np.random.default_rng(0)
    s = _session(tmp_path, pd.DataFrame({"x": g.normal(size=300), "y": g.choice(["a", "b"], 300)}))
    s.update(lambda r: r.with_column("x", role="sensitive"))
    s.update(lambda r: set_domain(r, "x", Domain("numeric", source="data"), acknowledge=True))
    s.update(lambda r: set_domain(r, "y", Domain("categorical", source="data"), acknowledge=True))
    assert [str(p) for p in s.problems()] == []
    plan, err = s.plan()
    assert err is None
    x = np.asarray(s.frame["x"])
    assert plan.unit("x").domain == (float(x.min()), float(x.max()))  # what the release will use


def test_declared_types_are_checked_against_the_table(qapp, tmp_path):
    g = np.random.default_rng(1)
    s = _session(tmp_path, pd.DataFrame({"x": g.normal(size=50), "y": g.choice(["a", "b"], 50)}))
    s.update(lambda r: r.with_column("x", type="integer"))
    typed = [p for p in s.problems() if p.field == "column:x" and "declared integer" in p]
    assert typed and typed[0].page == "columns"
