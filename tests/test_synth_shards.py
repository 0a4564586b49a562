"""Data-parallel generator training (dpstudio.engine.synth.shards): worker processes give the
same result as running the shards in process, and failures, deaths and cancels are handled."""

import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_synth_fit import SPEC, mixture

from dpstudio.engine.progress import Cancelled, CancelToken
from dpstudio.engine.rng import RandomSource
from dpstudio.engine.synth import SYNTHESIZERS, shards
from dpstudio.engine.synth.shards import run_local, run_shards, run_together, sum_in_order

ROOT = Path(__file__).resolve().parents[1]


class ToyShard:
    """A shard whose step needs two totals: sum of (index + step) and of a vector."""

    def __init__(self, setup, index):
        self.index, self.setup = index, setup
        self.seen = []

    def step(self, i):
        mode = self.setup.get("mode")
        if mode == "raise" and i == 5 and self.index == 1:
            raise ValueError("toy shard exploded")
        if mode == "die" and i == 5 and self.index == 1:
            os._exit(3)
        if mode == "slow":
            time.sleep(0.005)
        a = yield np.array([self.index + i], dtype=np.float32)
        b = yield np.arange(3, dtype=np.float32) * (self.index + 1)
        self.seen.append(float(a[0]) + float(b.sum()))

    def result(self):
        return self.seen


def make_toy(setup, index):
    return ToyShard(setup, index)


def test_run_local_and_run_together_drive_coroutines():
    def co(x):
        t = yield np.array([x], dtype=np.float32)
        return float(t[0])

    assert run_local(co(2.0)) == 2.0  # alone, a part is its own total
    assert run_together([co(1.0), co(2.0), co(4.0)], sum_in_order) == [7.0, 7.0, 7.0]


def test_worker_processes_compute_the_same_totals_as_in_process():
    setup = {"mode": None}
    local = run_shards(make_toy, setup, 2, 12, processes=False, slot_len=8)
    # step i: (0 + i) + (1 + i) plus 0+1+2 times (1 + 2)
    assert local == [2 * i + 1 + 9 for i in range(12)]
    assert run_shards(make_toy, setup, 2, 12, processes=True, slot_len=8) == local
    # the lock-based handshake used where stores are not ordered (ARM) gives the same
    assert run_shards(make_toy, setup, 2, 12, processes=True, slot_len=8, locked=True) == local
    assert not multiprocessing.active_children()


def test_a_worker_exception_is_reported_and_no_process_is_left():
    with pytest.raises(RuntimeError, match="toy shard exploded"):
        run_shards(make_toy, {"mode": "raise"}, 2, 50, processes=True, slot_len=8)
    assert not multiprocessing.active_children()


def test_a_worker_that_dies_is_reported():
    with pytest.raises(RuntimeError, match=r"exited unexpectedly \(code 3\)"):
        run_shards(make_toy, {"mode": "die"}, 2, 50, processes=True, slot_len=8)
    assert not multiprocessing.active_children()


def test_cancel_mid_training_stops_at_the_next_poll_and_leaves_no_worker():
    """Cancel is honoured at the parent's next poll (at most the one progress report already under
    way follows it), the run raises Cancelled and no worker process is left.  How fast that is
    in seconds is a benchmark matter, not a test's: a loaded machine must not fail it."""
    tok, seen, state = CancelToken(), [], {}
    started = threading.Event()

    def progress(fraction: float, message: str = "") -> None:
        seen.append(fraction)
        if fraction * 100_000 >= 50:  # the workers are past 50 steps
            started.set()

    def run():
        try:
            run_shards(
                make_toy,
                {"mode": "slow"},
                2,
                100_000,
                processes=True,
                slot_len=8,
                progress=progress,
                cancel=tok,
            )
        except Cancelled:
            state["cancelled"] = True

    th = threading.Thread(target=run)
    th.start()
    assert started.wait(300), "training never started"
    reports_at_cancel = len(seen)
    tok.cancel()
    th.join(300)  # a guard against a hang, not a speed claim
    assert not th.is_alive() and state.get("cancelled")
    assert len(seen) - reports_at_cancel <= 1
    assert not multiprocessing.active_children()


def _pearl_fits(workers_list, steps=30):
    data = mixture(3000)
    return [
        SYNTHESIZERS["pearl"](steps=steps, workers=w).fit(data, SPEC, epsilon=1.0, delta=1e-5, rng=RandomSource(7))
        for w in workers_list
    ]


def test_pearl_generator_is_the_same_with_or_without_worker_processes():
    """The two shards run in worker processes or one after another here: same arithmetic,
    so the generators agree up to the rounding of numpy's multi-threaded BLAS (used only in
    this process; the workers run one BLAS thread)."""
    inproc, procs = _pearl_fits((1, 2))
    assert inproc.info["train_processes"] == 0 and procs.info["train_processes"] == 2
    assert inproc.info["train_shards"] == procs.info["train_shards"] == 2
    np.testing.assert_allclose(inproc.net.flat, procs.net.flat, rtol=1e-3, atol=1e-5)
    # and a fixed seed repeats a fit exactly
    again = _pearl_fits((2,))[0]
    np.testing.assert_array_equal(again.net.flat, procs.net.flat)
    assert again.sample(300, RandomSource(1)).equals(procs.sample(300, RandomSource(1)))


def test_pearl_generator_is_bit_identical_when_blas_runs_one_thread():
    """With one BLAS thread everywhere the in-process and worker-process runs are the same
    computation bit for bit (totals added in shard order on both paths)."""
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        import numpy as np
        from test_synth_shards import _pearl_fits
        if __name__ == "__main__":
            a, b = _pearl_fits((1, 2))
            assert b.info["train_processes"] == 2
            print("identical", np.array_equal(a.net.flat, b.net.flat))
    """)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "identical True" in out.stdout


def test_pearl_trains_in_process_when_workers_are_unavailable(monkeypatch):
    def no_workers(*args, **kwargs):
        raise OSError("no shared memory here")

    monkeypatch.setattr(shards, "_run_in_processes", no_workers)
    fitted = SYNTHESIZERS["pearl"](steps=10, workers=2).fit(
        mixture(2000), SPEC, epsilon=1.0, delta=1e-5, rng=RandomSource(0)
    )
    assert fitted.info["train_processes"] == 0
    assert "no shared memory" in fitted.info["train_processes_unavailable"]


@pytest.mark.parametrize("bad", [{"shards": 0}, {"shards": 1.5}, {"workers": 0}])
def test_bad_parallel_settings_refused_before_any_release(bad):
    with pytest.raises(ValueError, match="positive integer"):
        SYNTHESIZERS["pearl"](**bad)


def test_unguarded_script_gets_a_clear_error_and_the_fit_still_finishes(tmp_path):
    """Spawned workers re-import the main script; one that fits at import time must not make
    every worker train again."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        from dpstudio.engine.rng import RandomSource
        from dpstudio.engine.synth import SYNTHESIZERS
        from test_synth_fit import SPEC, mixture
        fitted = SYNTHESIZERS["pearl"](steps=5, workers=2).fit(
            mixture(500), SPEC, epsilon=1.0, delta=1e-5, rng=RandomSource(0))
        print("processes", fitted.info["train_processes"])
    """)
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "processes 0" in out.stdout  # trained here after the workers failed
    assert "if __name__ == '__main__'" in out.stderr
    assert out.stdout.count("processes") == 1  # no worker ran a fit of its own


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_stop_when_their_parent_is_killed(tmp_path):
    """A killed app (no chance to abort its workers) must not leave them running."""
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(f"""
        import multiprocessing, sys, threading, time
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        from dpstudio.engine.synth.shards import run_shards
        from test_synth_shards import make_toy

        def report():
            while len(multiprocessing.active_children()) < 2:
                time.sleep(0.05)
            time.sleep(1.0)   # the workers are training
            print(*[p.pid for p in multiprocessing.active_children()], flush=True)

        if __name__ == "__main__":
            threading.Thread(target=report, daemon=True).start()
            run_shards(make_toy, {{"mode": "slow"}}, 2, 10 ** 6, processes=True, slot_len=8)
    """)
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        pids = [int(v) for v in proc.stdout.readline().split()]
        assert len(pids) == 2
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 120  # a guard against a hang: the claim is that they stop, not how fast
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in pids if _running(p)]
    assert not alive, "workers still running after their parent was killed"


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # zombies are done
    except OSError:
        return False
