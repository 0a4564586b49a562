"""The benchmarks' peak RSS of a child is the child's own, not the benchmark's (peak_rss.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import peak_rss  # noqa: E402


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_small_child_of_a_big_parent_reports_its_own_peak(tmp_path):
    big = np.ones(300 * 1024 * 1024 // 8)  # this process: about 300 MB more, touched
    script = tmp_path / "child.py"
    script.write_text("import numpy as np\nx = np.ones(40 * 1024 * 1024 // 8)\nprint(x.sum() > 0)\n")
    proc = subprocess.Popen(
        peak_rss.script_command(str(script)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _pid, _status, usage = os.wait4(proc.pid, 0)
    out, err = proc.communicate()
    assert out.strip() == "True"
    own = peak_rss.child_peak_mb(err.splitlines())
    assert own is not None and 40 < own < 200
    # ru_maxrss of the same child (on Linux this process's peak, inherited at exec) is kernel
    # behaviour, not ours: not asserted
    del big, usage


def test_no_report_is_none():
    assert peak_rss.child_peak_mb(["loaded 10 rows", "done"]) is None
    assert peak_rss.child_peak_mb([f"{peak_rss.MARK} 2048"]) == 2.0
