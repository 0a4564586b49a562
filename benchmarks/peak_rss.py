"""A child process's own peak RSS, exactly, for the benchmarks that run releases in children.

``ru_maxrss`` from ``os.wait4`` is NOT the child's own peak on Linux: exec records the old
address space's high-water mark into the process's ``maxrss``, and a child forked (or vforked)
from the benchmark inherits the benchmark's.  So a release forked from a benchmark that had held
a 1 GB evaluation matrix reported 1,063 MB whatever it used itself (the medical rows of
synth_tables.py before this module).  ``VmHWM`` in ``/proc/<pid>/status`` belongs to the current
address space and restarts at exec; polling it misses a peak in the last interval before exit, so
the child prints its own ``VmHWM`` at exit instead (:func:`module_command`), and the parent reads
it back from the child's standard error (:func:`child_peak_mb`).
"""

from __future__ import annotations

import sys

#: the line the child writes to standard error at exit: "<MARK> <VmHWM in kB>"
MARK = "dpstudio-bench-vmhwm-kb"

_HEAD = f"""
import atexit, runpy, sys

def _peak():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    sys.stderr.write("{MARK} " + line.split()[1] + "\\n")
                    sys.stderr.flush()
    except (OSError, ValueError):
        pass

atexit.register(_peak)
"""


def module_command(module: str, *args: str) -> list[str]:
    """``python -m MODULE ARGS`` that also reports its own peak RSS at exit."""
    run = f"sys.argv[0] = {module!r}\nrunpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n"
    return [sys.executable, "-c", _HEAD + run, *args]


def script_command(path: str, *args: str) -> list[str]:
    """``python PATH ARGS`` that also reports its own peak RSS at exit."""
    run = f"sys.argv[0] = {path!r}\nrunpy.run_path({path!r}, run_name='__main__')\n"
    return [sys.executable, "-c", _HEAD + run, *args]


def child_peak_mb(stderr_lines: list[str]) -> float | None:
    """The peak the child reported (MB), or None (killed, or it exited without atexit)."""
    for line in reversed(stderr_lines):
        if line.startswith(MARK + " "):
            try:
                return int(line.split()[1]) / 1024.0
            except (IndexError, ValueError):
                return None
    return None
