"""A dataset keeps its budget when a record is edited, the file re-saved, renamed or re-ordered."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstudio import ledger as ledger_mod
from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.errors import BudgetError, UserError
from dpstudio.ledger import Ledger, row_sketch, sketch_overlap

ROOT = Path(__file__).resolve().parent.parent
KEY = bytes(range(32))


def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "person_id": [f"P{i:05d}" for i in range(n)],
            "age": rng.integers(18, 90, n),
            "income": rng.integers(0, 200_000, n),
            "sex": rng.choice(["female", "male"], n),
        }
    )


def _edited(a: pd.DataFrame) -> pd.DataFrame:
    """One record corrected, the rows shuffled and the columns re-ordered."""
    b = a.sample(frac=1, random_state=1).reset_index(drop=True)
    b.loc[0, "income"] = 12345
    return b[list(reversed(b.columns))]


def test_siphash_matches_the_reference_vector():
    # Aumasson & Bernstein 2012, appendix vectors: key 00..0f, message 00..07
    m = np.array([int.from_bytes(bytes(range(8)), "little")], dtype=np.uint64)
    out = ledger_mod._siphash24(bytes(range(16)), m)[0]
    assert int(out).to_bytes(8, "little").hex() == "6224939a79f5f593"


def test_sketch_survives_edit_shuffle_resave_and_dtype_changes(tmp_path):
    a = _frame()
    sa, n = row_sketch(a, KEY)
    assert n == 400 and len(sa) == ledger_mod.SKETCH_K and np.all(np.diff(sa.astype(np.float64)) >= 0)
    _edited(a).to_csv(tmp_path / "b.csv", index=False)
    b = pd.read_csv(tmp_path / "b.csv")
    b["age"] = b["age"].astype(float)  # an integer column re-read as float
    b["sex"] = " " + b["sex"].astype(str)  # stray whitespace
    assert sketch_overlap(sa, row_sketch(b, KEY)[0]) >= 0.95
    # another key: nothing in common (the sketch is meaningless without the key)
    assert sketch_overlap(sa, row_sketch(a, bytes(32))[0]) == 0.0
    # unrelated data with the same columns and value distributions
    rng = np.random.default_rng(5)
    other = pd.DataFrame({c: rng.permutation(a[c].to_numpy()) for c in a.columns})
    assert sketch_overlap(sa, row_sketch(other, KEY)[0]) < ledger_mod.MATCH_THRESHOLD


def test_small_tables_are_sketched_whole_and_compared_exactly():
    a = _frame(10)
    sa, _ = row_sketch(a, KEY)
    assert len(sa) == 10
    b = a.copy()
    b.loc[[0, 1, 2], "income"] = -1
    assert sketch_overlap(sa, row_sketch(b, KEY)[0]) == pytest.approx(0.7)
    # a duplicated row counts twice (rows are a multiset)
    assert len(row_sketch(pd.concat([a, a.iloc[:1]]), KEY)[0]) == 11


def test_subset_and_superset_are_recognised():
    a = _frame(3000)
    sa, _ = row_sketch(a, KEY)
    assert sketch_overlap(sa, row_sketch(a.iloc[:600], KEY)[0]) >= 0.9  # a 20 % extract
    bigger = pd.concat([a, _frame(3000, seed=9).assign(person_id=lambda f: "Q" + f["person_id"])])
    assert sketch_overlap(sa, row_sketch(bigger, KEY)[0]) >= 0.9


def test_key_file_is_private_and_stable(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    mode = stat.S_IMODE(os.stat(led.key_path).st_mode)
    if os.name == "posix":
        assert mode == 0o600
    key = led.key_path.read_text()
    Ledger(led.path)
    assert led.key_path.read_text() == key


def _reserve(led, sha, frame, eps, **kw):
    return led.reserve(
        sha, loss=PrivacyLoss(eps), fingerprint=led.fingerprint_rows(frame), dataset_name=kw.pop("name", "x.csv"), **kw
    )


def test_edited_copy_counts_against_the_known_dataset(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    a, b = _frame(), _edited(_frame())
    r = _reserve(led, "a" * 64, a, 0.6, name="A.csv")
    led.set_cap("a" * 64, 1.0)
    led.write_and_commit(r, tmp_path / "o.csv", lambda t: Path(t).write_text("x"))
    with pytest.raises(BudgetError) as exc:
        _reserve(led, "b" * 64, b, 0.6, name="B.csv")
    msg = str(exc.value)
    assert "'A.csv' (aaaaaaaaaaaa...)" in msg and "by its rows" in msg and "--new-dataset" in msg
    r2 = _reserve(led, "b" * 64, b, 0.4, name="B.csv")  # what is left is still available
    assert r2.dataset == "a" * 64 and r2.identity["how"] == "rows"
    assert r2.identity["share_of_rows"] >= 0.95 and r2.identity["matched_file"] == "A.csv"


def test_declaring_a_new_dataset_is_explicit_and_recorded(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    a, b = _frame(), _edited(_frame())
    led.set_cap(_reserve(led, "a" * 64, a, 0.6).dataset, 1.0)
    r = _reserve(led, "b" * 64, b, 0.6, new_dataset=True)
    assert r.dataset == "b" * 64 and r.identity["declared_new"]
    assert r.identity["overrode_match"]["dataset"] == "a" * 64
    assert led.summary("b" * 64)["declared_new"] is True
    # the same bytes as a known dataset's file can never be declared new
    with pytest.raises(UserError, match="already in the ledger"):
        _reserve(led, "a" * 64, a, 0.1, new_dataset=True)


def test_recipe_dataset_name_joins_versions(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    _reserve(led, "a" * 64, _frame(), 0.5, label="survey-2024")
    led.set_cap("survey-2024", 0.8)
    unrelated = _frame(seed=3)
    with pytest.raises(BudgetError, match="the recipe names dataset 'survey-2024'"):
        _reserve(led, "c" * 64, unrelated, 0.5, label="survey-2024")
    with pytest.raises(UserError, match="name of its own"):
        _reserve(led, "c" * 64, unrelated, 0.5, label="survey-2024", new_dataset=True)
    assert _reserve(led, "c" * 64, unrelated, 0.5, label="other").dataset == "c" * 64


def test_cap_set_on_a_file_before_its_release_does_not_escape_matching(tmp_path):
    """``ledger set-cap B`` registers B without rows; its first release still matches A."""
    led = Ledger(tmp_path / "l.sqlite")
    led.set_cap(_reserve(led, "a" * 64, _frame(), 0.6).dataset, 1.0)
    led.set_cap("b" * 64, 10.0)
    with pytest.raises(BudgetError, match="by its rows"):
        _reserve(led, "b" * 64, _edited(_frame()), 0.6)


def _cli(*args, env=None):
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "dpstudio", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=e,
        timeout=300,
    )


@pytest.fixture(scope="module")
def ab_files(tmp_path_factory):
    work = tmp_path_factory.mktemp("ab")
    a = _frame()
    a.to_csv(work / "A.csv", index=False)
    _edited(a).to_csv(work / "B_renamed.csv", index=False)
    for f in ("A", "B_renamed"):
        p = _cli(
            "recipe",
            "init",
            work / f"{f}.csv",
            "-o",
            work / f"{f}.recipe.json",
            "--epsilon",
            "0.6",
            "--role",
            "person_id=identifier",
            "--role",
            "sex=public",
            "--role",
            "age=sensitive",
            "--role",
            "income=sensitive",
            "--bounds",
            "age=0:120",
            "--bounds",
            "income=0:250000",
            "--categories",
            "sex=female,male",
            "--confirm-inferred",
        )
        assert p.returncode == 0, p.stderr
    return work


def test_cli_edited_shuffled_renamed_copy_is_refused(ab_files, tmp_path):
    db = tmp_path / "l.sqlite"
    assert _cli("ledger", "set-cap", ab_files / "A.csv", "1.0", "--ledger", db).returncode == 0
    p = _cli("release", ab_files / "A.recipe.json", "--output", tmp_path / "a.csv", "--ledger", db)
    assert p.returncode == 0, p.stderr
    p = _cli("release", ab_files / "B_renamed.recipe.json", "--output", tmp_path / "b.csv", "--ledger", db)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = p.stderr.strip()
    assert len(line.splitlines()) == 1 and "release would spend ε=0.6" in line
    assert "recognised as dataset 'A.csv'" in line and "--new-dataset" in line
    assert not (tmp_path / "b.csv").exists()
    # the explicit declaration goes through, and is in the output and the report
    rep = tmp_path / "b.html"
    p = _cli(
        "release",
        ab_files / "B_renamed.recipe.json",
        "--output",
        tmp_path / "b.csv",
        "--ledger",
        db,
        "--new-dataset",
        "--report",
        rep,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["dataset_identity"]["declared_new"] and out["dataset_identity"]["overrode_match"]
    html = rep.read_text(encoding="utf-8")
    assert "the user declared this a new dataset although its rows match" in html and "Ledger head" in html


def test_no_ledger_still_respects_an_exhausted_cap(ab_files, tmp_path):
    db = tmp_path / "l.sqlite"
    assert _cli("ledger", "set-cap", ab_files / "A.csv", "0.5", "--ledger", db).returncode == 0
    p = _cli(
        "release", ab_files / "B_renamed.recipe.json", "--output", tmp_path / "b.csv", "--ledger", db, "--no-ledger"
    )
    assert p.returncode == 2 and "left of its cap ε=0.5" in p.stderr
    # without any ledger it runs, and says so
    p = _cli(
        "release",
        ab_files / "A.recipe.json",
        "--output",
        tmp_path / "a.csv",
        "--no-ledger",
        "--report",
        tmp_path / "a.html",
        env={"DPSTUDIO_LEDGER": str(tmp_path / "none.sqlite")},
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["ledger"] == "not recorded in any ledger"
    assert "not recorded in any ledger" in p.stderr
    assert "not recorded in any ledger" in (tmp_path / "a.html").read_text(encoding="utf-8")
    assert not (tmp_path / "none.sqlite").exists()
    assert "--no-ledger" in _cli("release", "--help").stdout


def test_a_cap_set_on_an_edited_copy_lands_on_the_dataset_its_releases_are_charged_to(ab_files, tmp_path):
    """``ledger set-cap`` on a file whose rows are a known dataset's: the cap is that dataset's
    (before, it went to a new dataset of the file alone, which no release of it ever met)."""
    db = tmp_path / "l.sqlite"
    p = _cli("release", ab_files / "A.recipe.json", "--output", tmp_path / "a.csv", "--ledger", db)
    assert p.returncode == 0, p.stderr
    p = _cli("ledger", "set-cap", ab_files / "B_renamed.csv", "1.0", "--ledger", db)
    assert p.returncode == 0, p.stderr
    assert "are those of dataset 'A.csv'" in p.stderr and "the cap is set on that dataset" in p.stderr
    shown = json.loads(p.stdout)
    assert shown["name"] == "A.csv" and shown["cap"]["epsilon"] == 1.0 and shown["spent"]["epsilon"] == 0.6
    listed = json.loads(_cli("ledger", "list", "--ledger", db).stdout)
    assert len(listed) == 1  # one dataset, not a second one holding the cap
    # through the file, the cap may tighten that dataset's, not loosen it
    p = _cli("ledger", "set-cap", ab_files / "B_renamed.csv", "2.0", "--ledger", db)
    assert p.returncode == 2 and "whose cap (ε=1) this would loosen" in p.stderr, p.stderr
    p = _cli("release", ab_files / "B_renamed.recipe.json", "--output", tmp_path / "b.csv", "--ledger", db)
    assert p.returncode == 2 and "left of its cap ε=1" in p.stderr, p.stderr
    assert not (tmp_path / "b.csv").exists()
    # the file was not recorded by set-cap: it can still be declared a new dataset at its release
    p = _cli(
        "release", ab_files / "B_renamed.recipe.json", "--output", tmp_path / "b.csv", "--ledger", db, "--new-dataset"
    )
    assert p.returncode == 0, p.stderr


def test_a_cap_set_before_the_first_release_is_never_loosened_by_row_matching(tmp_path):
    """A cap set on a file before any release (no rows known then) whose rows turn out to be a
    known dataset's: its releases are charged there, so that dataset's cap must be as strict."""
    led = Ledger(tmp_path / "l.sqlite")
    a = _reserve(led, "a" * 64, _frame(), 0.6).dataset
    led.set_cap("b" * 64, 2.0)
    with pytest.raises(BudgetError, match=r"a cap \(ε=2\) was set on this file before its first release"):
        _reserve(led, "b" * 64, _edited(_frame()), 0.6)
    led.set_cap(a, 3.0)  # still looser than the file's own cap
    with pytest.raises(BudgetError, match="that dataset's cap is looser"):
        _reserve(led, "b" * 64, _edited(_frame()), 0.6)
    led.set_cap(a, 1.5)
    assert _reserve(led, "b" * 64, _edited(_frame()), 0.6).dataset == a
    with pytest.raises(BudgetError, match="left of its cap ε=1.5"):
        _reserve(led, "b" * 64, _edited(_frame()), 0.6)


def test_naming_another_dataset_does_not_move_a_files_rows_away_from_theirs(tmp_path):
    """--dataset / input.dataset joins versions of one dataset; naming an unrelated dataset for an
    edited copy of a capped one would charge it there and escape the cap."""
    led = Ledger(tmp_path / "l.sqlite")
    a = _reserve(led, "a" * 64, _frame(), 0.6).dataset
    led.set_cap(a, 1.0)
    _reserve(led, "c" * 64, _frame(seed=3), 0.1, label="junk")
    with pytest.raises(UserError, match="names dataset 'junk'.*but this file's rows are those of dataset"):
        _reserve(led, "b" * 64, _edited(_frame()), 0.6, label="junk")
    assert led.summary(a)["in_progress"]["releases"] == 1  # nothing reserved for the refused one
    # the name of the dataset its rows belong to is fine (and so is no name: the cap refuses)
    led.set_cap(a, 2.0)
    _reserve(led, "d" * 64, _frame(), 0.1, label="survey")  # names dataset a ("survey" is new: rows decide)
    assert _reserve(led, "b" * 64, _edited(_frame()), 0.6, label="survey").dataset == a


def test_a_cap_set_before_the_first_release_is_not_escaped_by_naming_another_dataset(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    _reserve(led, "a" * 64, _frame(), 0.6, label="pumsA")  # no cap
    led.set_cap("b" * 64, 0.5)  # a cap set on file b before its first release
    with pytest.raises(
        BudgetError,
        match=r"a cap \(ε=0.5\) was set on this file before its first release, but the recipe names dataset 'pumsA'",
    ):
        _reserve(led, "b" * 64, _frame(seed=7), 0.6, label="pumsA")


def test_a_name_is_accepted_when_its_dataset_is_any_of_those_the_rows_match(tmp_path):
    """B (declared new: it shares 60 % of its rows with A) is named cohortB; a version of it that
    shares more with A than with B may still be released as cohortB (B's rows are in it)."""
    x, extra = _frame(400), _frame(160, seed=5)
    led = Ledger(tmp_path / "l.sqlite")
    a = _reserve(led, "a" * 64, x, 0.1).dataset
    b = pd.concat([x.iloc[:240], extra], ignore_index=True)
    cohort = _reserve(led, "b" * 64, b, 0.1, new_dataset=True, label="cohortB").dataset
    assert cohort != a
    b4 = pd.concat([x.iloc[:360], extra.iloc[:20]], ignore_index=True)  # ~95 % A, ~68 % B
    assert _reserve(led, "c" * 64, b4, 0.1, label="cohortB").dataset == cohort
