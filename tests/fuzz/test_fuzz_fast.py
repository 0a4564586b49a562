"""The fast subset of the fuzz and fault suite: every kind of every case family once.

The full run (``make fuzz``: 1,200 cases, random kinds and seeds) prints its counts as JSON;
this subset keeps each promise guarded in ``make test``.  Cases run in worker processes, so a
hang is caught as a finding instead of stalling the suite.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # beside this file (also runnable as a script)


@pytest.fixture(scope="module")
def fast_run():
    if sys.platform == "win32":
        pytest.skip("FIFOs and SIGKILL cases need POSIX")
    cases = harness.make_cases(0, seed=20261123)  # one of each kind
    return harness.run_cases(cases, jobs=2, case_seconds=120)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(harness.FAMILIES))
def test_every_case_kind_keeps_the_promises(fast_run, family):
    fam = fast_run["by_family"][family]
    assert fam["cases"] == len(dict.fromkeys(harness.FAMILIES[family][1]))
    failures = [f for f in fast_run["failures"] if f["family"] == family]
    assert not failures, failures


def test_the_counts_cover_what_the_issue_counts(fast_run):
    for key in ("tracebacks", "hangs", "data_loss", "unrecorded_spends", "formula_cells"):
        assert fast_run[key] == 0, fast_run
