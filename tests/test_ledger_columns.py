"""A copy of a dataset with one column added, dropped, recoded or renamed keeps the dataset's
budget (audit B: a row-number column, a dropped or recoded column gave every row a new hash and
the copy a fresh budget); unrelated tables that share columns do not match."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstudio import ledger as ledger_mod
from dpstudio.engine.accounting import PrivacyLoss
from dpstudio.errors import BudgetError
from dpstudio.ledger import Fingerprint, Ledger, column_set_overlap, sketch_overlap, table_sketches

KEY = bytes(range(32))


def _people(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": rng.integers(0, 200_000, n),
            "sex": rng.choice(["female", "male"], n),
            "region": rng.choice(["north", "south", "east", "west"], n),
            "visits": rng.poisson(3, n),
        }
    )


def _one_column_changed(a: pd.DataFrame) -> dict[str, pd.DataFrame]:
    shuffled = a.sample(frac=1, random_state=4).reset_index(drop=True)
    return {
        "a row number added": shuffled.assign(row=np.arange(len(a))),
        "a column dropped": shuffled.drop(columns=["visits"]),
        "a column recoded": shuffled.assign(sex=shuffled["sex"].map({"female": "F", "male": "M"})),
        "every value of a column shifted": shuffled.assign(age=shuffled["age"] + 1),
        "a column renamed": shuffled.rename(columns={"region": "area"}),
        "a column replaced": shuffled.drop(columns=["visits"]).assign(weight=1.0),
    }


def _overlaps(a: pd.DataFrame, b: pd.DataFrame) -> tuple[float, float]:
    """(over whole rows, over the best shared column set)."""
    sa, _, ca = table_sketches(a, KEY)
    sb, _, cb = table_sketches(b, KEY)
    return sketch_overlap(sa, sb), column_set_overlap(ca, cb)


@pytest.mark.parametrize("change", list(_one_column_changed(_people(10))))
def test_one_column_changed_is_recognised_over_the_other_columns(change):
    a = _people()
    whole, columns = _overlaps(a, _one_column_changed(a)[change])
    assert whole < ledger_mod.MATCH_THRESHOLD  # every row hash changed: the old escape
    assert columns >= 0.95


def test_column_names_are_compared_without_case_and_spaces():
    a = _people()
    b = a.rename(columns={"age": " Age ", "sex": "SEX"}).assign(visits=a["visits"] * 2)
    assert _overlaps(a, b)[1] >= 0.95


def test_a_change_to_the_column_that_tells_rows_apart_is_not_recognised():
    """Without income, 70 % of these rows are distinct: too few to decide (documented limit)."""
    a = _people()
    assert max(_overlaps(a, a.assign(income=a["income"] + 1))) < ledger_mod.MATCH_THRESHOLD


def test_two_columns_changed_are_not_recognised():
    a = _people()
    b = a.assign(sex=a["sex"].str.upper(), visits=a["visits"] + 1)
    assert max(_overlaps(a, b)) < ledger_mod.MATCH_THRESHOLD


def test_unrelated_people_with_the_same_columns_do_not_match():
    a, b = _people(seed=0), _people(seed=1)
    assert max(_overlaps(a, b)) < 0.1
    # one column of the unrelated table changed: still nothing in common
    assert max(_overlaps(a, b.drop(columns=["region"]))) < 0.1


def test_column_sets_that_do_not_tell_rows_apart_decide_nothing():
    """Over a few coarse columns most rows are copies of a few patterns, which any two tables with
    those columns share: such column sets are ignored (``IDENTIFYING_SHARE``)."""
    rng = np.random.default_rng(3)
    a = pd.DataFrame({"sex": rng.choice(["f", "m"], 2000), "smoker": rng.random(2000) < 0.3})
    b = pd.DataFrame({"sex": rng.choice(["f", "m"], 2000), "smoker": rng.random(2000) < 0.3})
    a["id"], b["id"] = [f"A{i}" for i in range(2000)], [f"B{i}" for i in range(2000)]
    _, _, ca = table_sketches(a, KEY)
    _, _, cb = table_sketches(b, KEY)
    coarse = [s for s in ca.keys() & cb.keys() if len(ca[s][1]) == 4]  # {sex, smoker}: the ids left out
    assert len(coarse) == 1 and sketch_overlap(ca[coarse[0]][1], cb[coarse[0]][1]) == 1.0  # the same 4 patterns
    assert column_set_overlap(ca, cb) == 0.0  # but they tell no rows apart


def test_column_sets_with_many_common_patterns_decide_nothing():
    """Unrelated people over age, sex, region and visits (income left out): about 70 % of the rows
    are distinct and half of those patterns occur in the other table too (a match by chance, had
    such sets counted)."""
    a, b = _people(seed=0), _people(seed=1)
    _, _, ca = table_sketches(a, KEY)
    _, _, cb = table_sketches(b, KEY)
    loose = [
        s
        for s in ca.keys() & cb.keys()
        if ledger_mod._once_share(ca[s][2]) < ledger_mod.IDENTIFYING_SHARE
        and sketch_overlap(ca[s][1], cb[s][1]) >= ledger_mod.MATCH_THRESHOLD
    ]
    assert loose  # the chance match exists...
    assert column_set_overlap(ca, cb) < 0.1  # ...and is not taken


def test_a_single_shared_column_decides_nothing():
    """Two tables sharing a row-number column and nothing else are different datasets."""
    ids = np.arange(1000)
    a = pd.DataFrame({"id": ids, "x": np.random.default_rng(0).normal(size=1000)})
    b = pd.DataFrame({"id": ids, "y": np.random.default_rng(1).normal(size=1000)})
    assert max(_overlaps(a, b)) < ledger_mod.MATCH_THRESHOLD


def test_values_swapped_between_columns_are_other_rows():
    """Each cell is mixed with its column's name: the rows (x=1, y=2) and (x=2, y=1) differ."""
    rng = np.random.default_rng(2)
    a = pd.DataFrame({"x": rng.integers(0, 10**6, 500), "y": rng.integers(0, 10**6, 500), "z": 1})
    b = a.rename(columns={"x": "y", "y": "x"})
    _, _, ca = table_sketches(a, KEY)
    _, _, cb = table_sketches(b, KEY)
    whole = [s for s in ca if ca[s][0] == 3]
    assert whole and sketch_overlap(ca[whole[0]][1], cb[whole[0]][1]) == 0.0
    assert column_set_overlap(ca, cb) == 0.0  # (only z, a single column, is the same in both)


def test_column_sketches_need_the_key():
    a = _people()
    _, _, ca = table_sketches(a, KEY)
    _, _, other = table_sketches(a, bytes(32))
    assert not (ca.keys() & other.keys())  # column-set ids are keyed too
    assert len(ca) == a.shape[1] + 1


def test_wide_tables_are_sketched_over_all_their_columns_only(monkeypatch):
    monkeypatch.setattr(ledger_mod, "COLUMN_SKETCH_MAX", 4)
    _, _, sets = table_sketches(_people(), KEY)
    assert [c for c, _, _ in sets.values()] == [5]


def test_counts_are_kept_with_the_values():
    a = pd.DataFrame({"x": [1, 1, 1, 2, 3, 3], "y": [5, 5, 5, 6, 7, 7]})
    _, _, sets = table_sketches(a, KEY)
    for ncols, values, counts in sets.values():
        assert sorted(counts.tolist()) == [1, 2, 3] and len(values) == 3 and ncols in (1, 2)
    # many copies of few rows (counted by hashing: the 4k smallest are all copies of one or two)
    many = pd.DataFrame({"x": np.arange(3000) % 3, "y": np.arange(3000) % 3})
    for _, values, counts in table_sketches(many, KEY)[2].values():
        assert len(values) == 3 and counts.tolist() == [1000, 1000, 1000]
    # beyond k distinct rows: the counts of the kept values are still exact
    big = pd.concat([_people(2000)] * 3 + [_people(2000).iloc[:500]], ignore_index=True)
    _, _, sets = table_sketches(big, KEY)
    ncols, values, counts = sets[max(sets, key=lambda s: sets[s][0])]
    assert ncols == 5 and len(values) == ledger_mod.SKETCH_K and set(counts.tolist()) <= {3, 4}
    assert 0.15 < (counts == 4).mean() < 0.4  # 500 of the 2000 distinct rows have a fourth copy


# ---- the ledger ------------------------------------------------------------------------------------


def _reserve(led, sha, frame, eps, **kw):
    return led.reserve(
        sha, loss=PrivacyLoss(eps), fingerprint=led.fingerprint_rows(frame), dataset_name=kw.pop("name", "x.csv"), **kw
    )


def _release(led, tmp_path, sha, frame, eps, **kw):
    r = _reserve(led, sha, frame, eps, **kw)
    led.write_and_commit(r, tmp_path / f"out-{sha[:4]}.csv", lambda t: Path(t).write_text("x"))
    return r


@pytest.mark.parametrize("change", ["a row number added", "a column dropped", "a column recoded"])
def test_a_copy_with_one_column_changed_is_charged_to_the_dataset(tmp_path, change):
    led = Ledger(tmp_path / "l.sqlite")
    a = _people()
    _release(led, tmp_path, "a" * 64, a, 0.6, name="A.csv")
    led.set_cap("a" * 64, 1.0)
    b = _one_column_changed(a)[change]
    with pytest.raises(BudgetError) as exc:
        _reserve(led, "b" * 64, b, 0.6, name="B.csv")
    assert "by its rows over all but one column" in str(exc.value) and "'A.csv'" in str(exc.value)
    r = _reserve(led, "b" * 64, b, 0.4, name="B.csv")
    assert r.dataset == "a" * 64 and r.identity["how"] == "rows" and r.identity["over_columns"] == "all but one"
    # an explicit declaration still gives it a budget of its own, and says what it overrode
    r2 = _reserve(led, "c" * 64, b.assign(extra=1), 0.6, new_dataset=True)
    assert r2.dataset == "c" * 64 and r2.identity["overrode_match"]["dataset"] == "a" * 64


def test_a_chain_of_one_column_changes_stays_with_the_dataset(tmp_path):
    """Each version differs from the one before by one column: each is charged to the first."""
    led = Ledger(tmp_path / "l.sqlite")
    a = _people()
    _release(led, tmp_path, "a" * 64, a, 0.3)
    b = a.assign(row=np.arange(len(a)))
    _release(led, tmp_path, "b" * 64, b, 0.3)
    c = b.drop(columns=["visits"])
    assert _reserve(led, "c" * 64, c, 0.3).dataset == "a" * 64


def test_column_sketches_are_chained(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    _release(led, tmp_path, "a" * 64, _people(), 0.3)
    assert led.check() == []
    con = sqlite3.connect(led.path)
    with con:
        con.execute("UPDATE files SET cols=NULL")  # drop them: later copies would escape
    con.close()
    assert any("file fingerprint(s)" in p and "differ" in p for p in led.check())


def test_a_file_known_from_before_column_sketches_gets_them_at_its_next_release(tmp_path):
    """Ledgers written before this change hold row sketches only: the next release of a known file
    computes and chains its column sets, and later copies with a column changed are recognised."""
    led = Ledger(tmp_path / "l.sqlite")
    a = _people()
    whole = led.fingerprint_rows(a)
    old = Fingerprint(sketch=whole.sketch, rows=whole.rows)  # what an earlier dpstudio stored
    r = led.reserve("a" * 64, loss=PrivacyLoss(0.3), fingerprint=old, dataset_name="A.csv")
    led.write_and_commit(r, tmp_path / "o1.csv", lambda t: Path(t).write_text("x"))
    b = a.assign(row=np.arange(len(a)))
    fb = led.fingerprint_rows(b)
    assert led.lookup("b" * 64, fingerprint=fb)["identity"]["how"] == "new"  # not recognised yet
    assert led.needs_fingerprint("a" * 64)
    _release(led, tmp_path, "a" * 64, a, 0.1)  # a second release of the very file
    assert not led.needs_fingerprint("a" * 64) and led.check() == []
    assert led.lookup("b" * 64, fingerprint=fb)["identity"]["over_columns"] == "all but one"
    assert _reserve(led, "b" * 64, b, 0.1).dataset == "a" * 64


# ---- end to end: the CLI, in memory and streamed ------------------------------------------------


def _cli(*args):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    return subprocess.run(
        [sys.executable, "-m", "dpstudio", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=root,
        env=dict(os.environ, PYTHONPATH=str(root)),
        timeout=300,
    )


def _recipe(tmp_path, name: str, frame: pd.DataFrame, *roles: str) -> Path:
    frame.to_csv(tmp_path / f"{name}.csv", index=False)
    out = tmp_path / f"{name}.recipe.json"
    p = _cli(
        "recipe", "init", tmp_path / f"{name}.csv", "-o", out, "--epsilon", "0.6",
        "--role", "age=sensitive", "--role", "income=sensitive", "--role", "sex=public", "--role", "region=public",
        "--role", "visits=public", *roles,
        "--bounds", "age=0:120", "--bounds", "income=0:250000",
        "--categories", "sex=female,male", "--categories", "region=north,south,east,west",
        "--confirm-inferred",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return out


def test_cli_a_streamed_copy_with_a_row_number_column_is_charged_to_the_dataset(tmp_path):
    db = tmp_path / "l.sqlite"
    a = _people(2000)
    ra = _recipe(tmp_path, "A", a)
    rb = _recipe(tmp_path, "B", a.assign(row=np.arange(len(a))), "--role", "row=identifier")
    p = _cli("release", ra, "--output", tmp_path / "a.csv", "--ledger", db)
    assert p.returncode == 0, p.stderr
    assert _cli("ledger", "set-cap", tmp_path / "A.csv", "1.0", "--ledger", db).returncode == 0
    p = _cli("release", rb, "--output", tmp_path / "b.csv", "--ledger", db, "--engine", "stream", "--block-rows", "700")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "recognised as dataset 'A.csv' (" in p.stderr and ") by its rows over all but one column" in p.stderr
    assert not (tmp_path / "b.csv").exists()


def test_reinit_drops_sketches_edited_since_the_chain_recorded_them(tmp_path):
    """Another file's column sets copied onto A (so that A's copies match nothing), then a reinit:
    the chain's digests no longer fit, so the sketches are dropped and computed again at A's next
    release (before, the reinit made the edited ones official)."""
    led = Ledger(tmp_path / "l.sqlite")
    a, other = _people(), _people(seed=9)
    _release(led, tmp_path, "a" * 64, a, 0.3)
    _release(led, tmp_path, "e" * 64, other, 0.3, new_dataset=True)
    con = sqlite3.connect(led.path)
    with con:
        blob = con.execute("SELECT cols FROM files WHERE sha256=?", ("e" * 64,)).fetchone()[0]
        con.execute("UPDATE files SET cols=? WHERE sha256=?", (blob, "a" * 64))
    con.close()
    out = Ledger.reinit(led.path, reason="test")
    assert out["restored"]["sketches_dropped"] == 1
    led = Ledger(led.path)
    assert led.check() == [] and led.needs_fingerprint("a" * 64)
    _release(led, tmp_path, "a" * 64, a, 0.1)  # computed again from A's rows
    assert _reserve(led, "b" * 64, a.assign(row=np.arange(len(a))), 0.1).dataset == "a" * 64


def test_a_file_appended_to_itself_with_a_row_number_is_recognised():
    """Every distinct row of the copy occurs twice in it: the rule reads the original's rows
    (before, both files had to have rows that occur once, and the copy escaped)."""
    a = _people()
    doubled = pd.concat([a, a], ignore_index=True)
    for b in (doubled.assign(row=np.arange(len(doubled))), doubled.assign(sex=doubled["sex"].str.upper())):
        assert _overlaps(a, b)[1] >= 0.95
    boot = a.sample(frac=1.0, replace=True, random_state=3).reset_index(drop=True)
    assert _overlaps(a, boot.assign(row=np.arange(len(boot))))[1] >= 0.95


def test_no_column_set_over_a_few_common_patterns_is_stored():
    """Such a set would be the exact histogram of those columns, readable without the key: only
    sets that can decide are stored, and their counts are capped."""
    rng = np.random.default_rng(5)
    t = pd.DataFrame(
        {
            "patient": rng.choice(10**7, 4000, replace=False),  # IDs, not row numbers
            "hiv": rng.random(4000) < 0.04,
            "ward": rng.choice(list("ABCDEFG"), 4000),
        }
    )
    _, _, sets = table_sketches(t, KEY)
    assert any(len(v) < ledger_mod.SKETCH_K for _, v, _ in sets.values())  # {hiv, ward}: 14 patterns
    stored = ledger_mod.unpack_column_set_sketches(ledger_mod.pack_column_set_sketches(sets))
    assert stored and all(len(v) == ledger_mod.SKETCH_K and c.max() <= 3 for _, v, c in stored.values())
    assert all(n >= 2 for n, _, _ in stored.values())


def test_a_few_samples_cannot_decide_by_chance():
    """The share's lower bound must reach the threshold: 10 of 16 sampled rows found (a share of
    0.62) is not enough, 16 of 16 is."""
    assert ledger_mod._lower_bound(10, 16) < ledger_mod.MATCH_THRESHOLD <= ledger_mod._lower_bound(16, 16)
    assert ledger_mod._lower_bound(150, 256) >= ledger_mod.MATCH_THRESHOLD  # 0.59 of a full sketch
    assert ledger_mod._lower_bound(0, 0) == 0.0


def test_names_equal_but_for_case_keep_their_own_column_sets():
    """With columns Age and age, folding case gave the whole set and a one-left-out set one id
    (one overwrote the other): names are then compared exactly."""
    a = _people().assign(Age=lambda d: d["age"] * 12)
    _, _, sets = table_sketches(a, KEY)
    assert len(sets) == a.shape[1] + 1
    assert _overlaps(a, a.assign(visits=a["visits"] + 1))[1] >= 0.95


# ---- row numbers -----------------------------------------------------------------------------------


def test_the_row_number_candidate_is_read_from_the_first_rows_and_settled_on_the_whole_table():
    n = 1500
    rng = np.random.default_rng(0)
    t = pd.DataFrame(
        {
            "age": rng.integers(0, 99, n),  # whole numbers, but most repeat
            "zz_index": rng.permutation(n),  # shuffled row numbers: as distinct as "id"
            "id": np.arange(1, n + 1).astype(float),
            "code": [str(i) for i in rng.choice(10**6, n, replace=False)],
            "flag": [True, False] * (n // 2),
        }
    )
    assert ledger_mod.row_number_candidate(t) == "id"  # of the distinct ones, the least span
    assert ledger_mod.row_number_candidate(t.drop(columns=["id"])) == "zz_index"
    assert ledger_mod.row_number_candidate(t[["code", "age"]]) == "code"  # IDs written as text
    assert ledger_mod.row_number_candidate(t.iloc[:2]) is None  # too few rows to tell
    assert ledger_mod.row_number_candidate(t.assign(id=t["id"].where(t.index != 5))[["id", "age"]]) is None
    # settled on the whole table: whole numbers, range within 1.5 x the rows
    parts = ledger_mod.column_set_parts
    names, cells = ledger_mod._cells(t[["id", "age"]])
    p = parts(t[["id", "age"]], names, cells, KEY, 256, "id")
    assert p.is_row_number()
    sparse = t[["id", "age"]].assign(id=t["id"] * 2)  # range 2n: IDs with gaps, not row numbers
    names, cells = ledger_mod._cells(sparse)
    assert not parts(sparse, names, cells, KEY, 256, "id").is_row_number()


HEAD = ledger_mod.HEAD_ROWS


def _trial(seed: int, n: int) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    arm = np.where(np.arange(n) % 2 == 0, "treatment", "control")  # alternating allocation
    return pd.DataFrame({"id": np.arange(1, n + 1), "arm": arm, "outcome": r.normal(120, 15, n).round(1)})


@pytest.mark.parametrize("n", [60, 400, 3000])
def test_two_trials_numbered_alike_are_two_datasets(n):
    """{id, arm} was the same in two unrelated trials with ids 1..n and alternating arms (the
    audit matched 30 of 30): row numbers take no part in the column sets."""
    assert max(_overlaps(_trial(1, n), _trial(2, n))) < ledger_mod.MATCH_THRESHOLD


def test_shared_row_numbers_beside_a_constant_column_are_two_datasets():
    a = pd.DataFrame({"id": np.arange(1, 501), "country": "US", "bmi": np.random.default_rng(0).normal(25, 4, 500)})
    b = pd.DataFrame(
        {"id": np.arange(1, 5001), "country": "US", "income": np.random.default_rng(1).normal(5e4, 1e4, 5000)}
    )
    assert max(_overlaps(a, b)) < ledger_mod.MATCH_THRESHOLD


def test_a_numbered_table_with_one_column_changed_is_still_recognised():
    a = _people().assign(row=np.arange(3000))
    assert _overlaps(a, a.assign(sex=a["sex"].str.upper()))[1] >= 0.95
    # reordered, sorted, resampled, cut to 70 %: still numbered (settled on the whole table, not
    # on the rows' order: the second audit's HIGH finding was 0 of 5 for each)
    for b in (
        a.sample(frac=1, random_state=1),
        a.sort_values("income"),
        a.sample(frac=1, replace=True, random_state=2),
        a.sample(frac=0.7, random_state=3),
    ):
        assert _overlaps(a, b.assign(sex=b["sex"].str.upper()))[1] >= 0.9
    # the row numbers dropped too: not a change to the column sets (they take no part)
    assert _overlaps(a, a.drop(columns=["row"]).assign(visits=a["visits"] + 1))[1] >= 0.95
    kept = a.iloc[: HEAD + 500]  # rows dropped after the first ones: still numbered 0, 1, ...
    assert _overlaps(a, kept.assign(region=kept["region"].str.upper()))[1] >= 0.95
    assert _overlaps(_people(), _people().assign(n=np.arange(1, 3001)))[1] >= 0.95  # numbers added


def test_batches_smaller_than_the_head_give_the_in_memory_column_sets():
    a = _people(1400).assign(row=np.arange(1400))
    want = table_sketches(a, KEY)
    with ledger_mod.RowSketcher(KEY) as s:
        for lo in range(0, len(a), 97):
            s.add(a.iloc[lo : lo + 97])
        got = (*s.finish(), s.column_sets)
    assert got[2].keys() == want[2].keys() and all(np.array_equal(got[2][k][1], want[2][k][1]) for k in want[2])
    with ledger_mod.RowSketcher(KEY) as s, pytest.raises(ValueError, match="first 1000 rows"):
        s.hash_batch(a.iloc[:10])  # on another thread it cannot hold batches back: head= is needed
    with ledger_mod.RowSketcher(KEY, head=a.iloc[:HEAD]) as s:
        for lo in range(0, len(a), 97):
            s.add_hashed(s.hash_batch(a.iloc[lo : lo + 97]))
        s.finish()
        assert s.column_sets.keys() == want[2].keys()


def _skewed(rng, n: int, common: int) -> pd.DataFrame:
    """80 % of the rows are one of ``common`` patterns, the rest nearly unique; bmi differs in
    every row (so whole rows never match)."""
    head = rng.random(n) < 0.8
    pat = np.where(head, rng.integers(0, common, n), common + rng.integers(0, 10**9, n))
    return pd.DataFrame(
        {"age_band": pat % 15, "sex": (pat // 15) % 2, "code": pat // 30, "bmi": rng.normal(27, 5, n).round(2)}
    )


def test_common_patterns_found_in_a_large_table_are_no_evidence():
    """Samples of one skewed population: the large table's sampled distinct rows are mostly its
    rare ones (they occur once), while the small one's are mostly common patterns, which any large
    sample has: 7 of 10 pairs were joined (the second audit). A row found counts only when the
    other file has it at most twice."""
    joined = 0
    for t in range(10):
        rng = np.random.default_rng(100 + t)
        y, x = _skewed(rng, 30_000, 1000), _skewed(rng, 2000, 1000)
        joined += max(_overlaps(x, y)) >= ledger_mod.MATCH_THRESHOLD
    assert joined == 0
