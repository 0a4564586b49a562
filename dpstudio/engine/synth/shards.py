"""Data-parallel training over fixed batch shards, in this process or one process per shard.

Why processes: a generator step is ~100 numpy calls on (B, 100)-(B, 500) arrays.  BLAS
threads barely help products this small, and Python threads cannot run the elementwise work
in parallel (every numpy call re-takes the GIL; a hand-off costs ~0.1 ms on a 2-vCPU VM).
Two processes, each owning half of the batch, run the whole step in parallel and meet only
where the batch must be summed (batch-norm statistics, the class sums of the embedding, the
weight gradients): measured on the Adult fit, ~12.5 ms/step in one process, 7-9.5 ms in two.

The contract that keeps results independent of whether worker processes are used:

* A step is a *shard coroutine*: plain code that ``yield``s each partial sum it needs
  totalled over the batch and receives the total back (``total = yield part``).
* The batch is cut into a fixed number of shards (a setting, not the core count), each with
  its own noise stream.  Totals are always ``part[0] + part[1] + ...`` in shard order, whether
  the shards run one after another in this process (:func:`run_together` with
  :func:`sum_in_order`) or in separate processes (:class:`SlotReducer`).  So both paths do the
  same arithmetic: bit for bit when numpy's BLAS runs one thread (as in the workers), and up
  to the rounding of multi-threaded BLAS products otherwise.  A fixed seed repeats a fit
  exactly on the same machine and settings.

Nothing here knows about PEARL: a *shard factory* ``make_shard(setup, index)`` (a module-level
function, so spawned processes can import it) builds the per-shard state; the shard object has
``step(i)`` (a coroutine) and ``result()`` (picklable, taken from shard 0).  Only the
post-processing training runs here: ``setup`` holds released (noisy) statistics, never the
private table.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import platform
import queue as queue_mod
import threading
import time
import traceback
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from ..progress import NEVER_CANCELLED, Cancelled, CancelToken, no_progress

if TYPE_CHECKING:  # multiprocessing.synchronize fails to import where sem_open is missing
    from multiprocessing.process import BaseProcess
    from multiprocessing.queues import Queue
    from multiprocessing.synchronize import Lock

__all__ = [
    "run_local",
    "run_together",
    "sum_in_order",
    "run_shards",
    "available_cores",
    "SlotReducer",
    "UnguardedMainError",
    "Partial",
    "ShardCoroutine",
    "Shard",
]

_R = TypeVar("_R")
_R_co = TypeVar("_R_co", covariant=True)
_S = TypeVar("_S")

#: a partial sum that a shard yields, and the total over the shards that it receives back
Partial = npt.NDArray[np.floating[Any]]
#: a shard coroutine returning ``_R``: ``total = yield part`` at each sync point
ShardCoroutine = Generator[Partial, Partial, _R]


class Shard(Protocol[_R_co]):
    """What a shard factory builds: ``step(i)`` (a shard coroutine) and ``result()``."""

    def step(self, step: int, /) -> ShardCoroutine[object]: ...

    def result(self) -> _R_co: ...


# --------------------------------------------------------------------------- coroutine drivers
def run_local(co: ShardCoroutine[_R]) -> _R:
    """Drive one shard coroutine that *is* the whole batch: each partial sum is the total."""
    try:
        part = next(co)
        while True:
            part = co.send(part)
    except StopIteration as stop:
        value: _R = stop.value
        return value


def sum_in_order(parts: list[Partial]) -> Partial:
    """The total of the shards' partial sums, always added in shard order (deterministic)."""
    total = np.array(parts[0], copy=True)
    for p in parts[1:]:
        total += p
    return total


def run_together(cos: list[ShardCoroutine[_R]], reduce: Callable[[list[Partial]], Partial]) -> list[_R | None]:
    """Advance shard coroutines in lock step: at each sync point ``reduce(parts)`` is sent back
    to every shard.  Returns the coroutines' return values."""
    results: list[_R | None] = [None] * len(cos)
    try:
        parts = [next(c) for c in cos]
    except StopIteration:  # a step without any sync point: all shards finish at once
        return results
    while True:
        total = reduce(parts)
        parts, done = [], 0
        for i, c in enumerate(cos):
            try:
                parts.append(c.send(total))
            except StopIteration as stop:
                results[i] = stop.value
                done += 1
        if done:
            if done != len(cos):
                raise RuntimeError("shard coroutines fell out of step")
            return results


# --------------------------------------------------------------------------- cross-process sums
# control block (int64): [abort, error, sync counter per shard..., finished steps per shard...]
_ABORT, _ERROR, _HEADER = 0, 1, 2


#: polls of a peer's counter before each further poll also yields the CPU (~0.1 ms)
_SPIN_POLLS = 500
_yield_cpu = getattr(os, "sched_yield", lambda: time.sleep(0))


class UnguardedMainError(RuntimeError):
    """Training was started while a worker process was importing the user's main script."""


class _Aborted(Exception):
    """Raised in a worker when the parent (or another worker) asked everyone to stop."""


def _ordered_stores() -> bool:
    """Whether plain shared-memory stores become visible in program order (x86 TSO).

    There, a flag written after the data can be polled without locks.  Elsewhere (ARM) the
    flag is written and read under a per-shard lock, whose acquire/release are the fences."""
    return platform.machine().lower() in {"x86_64", "amd64", "i386", "i686", "x86"}


def _parent_gone() -> bool:
    """Whether this worker's parent has died (killed: it could not abort us)."""
    parent = multiprocessing.parent_process()
    return parent is not None and not parent.is_alive()


class SlotReducer:
    """Totals over shards living in different processes, through shared memory.

    Each shard writes its partial into its own slot, publishes its sync counter, waits until
    every shard has published the same count, then adds all slots in shard order.  Two slot
    sets alternate between consecutive syncs: a shard can run at most one sync ahead (it waits
    for the others at the next one), so it never overwrites a slot still being read.
    """

    def __init__(
        self,
        control: ctypes.Array[ctypes.c_int64],
        slots: ctypes.Array[ctypes.c_float],
        shard: int,
        n_shards: int,
        slot_len: int,
        locks: Sequence[Lock] | None = None,
    ) -> None:
        self.ctl = np.frombuffer(memoryview(control), dtype=np.int64)
        self.slots = np.frombuffer(memoryview(slots), dtype=np.float32).reshape(2, n_shards, slot_len)
        self.shard, self.n, self.len = shard, n_shards, slot_len
        self.locks = locks
        self.count = 0

    def _publish(self, count: int) -> None:
        if self.locks is None:
            self.ctl[_HEADER + self.shard] = count
            return
        with self.locks[self.shard]:
            self.ctl[_HEADER + self.shard] = count

    def _seen(self, other: int) -> int:
        if self.locks is None:
            return int(self.ctl[_HEADER + other])
        with self.locks[other]:
            return int(self.ctl[_HEADER + other])

    def _wait(self, other: int, count: int) -> None:
        """Busy-wait for ``other`` to reach sync ``count``.

        Why spin: the peers run on their own cores and meet every ~1 ms; a sleeping wait
        would add a scheduler wake-up (~0.1 ms on a VM) to every meeting, and an idle vCPU
        was measured to slow its sibling's numpy work.  After ~0.1 ms of spinning each poll
        also yields the CPU, so a peer that shares our core (more runnable processes than
        cores) still gets to run."""
        spins = 0
        while self._seen(other) < count:
            spins += 1
            if spins > _SPIN_POLLS:
                _yield_cpu()
                if spins % 256 == 0 and self.ctl[_ABORT]:  # the peer failed or was cancelled
                    raise _Aborted
                if spins % 65536 == 0 and _parent_gone():  # nobody left to abort us
                    raise _Aborted

    def reduce(self, parts: list[Partial]) -> Partial:
        (part,) = parts
        if part.dtype != np.float32 or part.size > self.len:
            raise ValueError(
                f"partial sum of dtype {part.dtype} and size {part.size} does not fit a float32 slot of {self.len}"
            )
        par = self.count & 1
        self.slots[par, self.shard, : part.size] = part.reshape(-1)
        self.count += 1
        self._publish(self.count)
        for other in range(self.n):
            if other != self.shard:
                self._wait(other, self.count)
        total = self.slots[par, 0, : part.size].copy()
        for other in range(1, self.n):
            total += self.slots[par, other, : part.size]
        return total.reshape(part.shape)


def _worker(
    job: ctypes.Array[ctypes.c_uint8],
    shard: int,
    n_shards: int,
    n_steps: int,
    control: ctypes.Array[ctypes.c_int64],
    slots: ctypes.Array[ctypes.c_float],
    slot_len: int,
    locks: Sequence[Lock] | None,
    results: Queue[tuple[str, int, Any]],
) -> None:
    """Body of one training process: run shard ``shard`` for ``n_steps`` steps.  ``job`` is the
    pickled ``(make_shard, setup)`` in shared memory."""
    ctl = np.frombuffer(memoryview(control), dtype=np.int64)
    try:
        make_shard, setup = pickle.loads(memoryview(job).cast("B"))
        sh = make_shard(setup, shard)
        red = SlotReducer(control, slots, shard, n_shards, slot_len, locks)
        for i in range(n_steps):
            if ctl[_ABORT] or (i % 256 == 0 and _parent_gone()):  # killed parent: stop
                return
            run_together([sh.step(i)], red.reduce)
            ctl[_HEADER + n_shards + shard] = i + 1
        results.put(("done", shard, (sh.result() if shard == 0 else None, _peak_rss_mb())))
    except _Aborted:
        return
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises it
        ctl[_ERROR] = 1
        ctl[_ABORT] = 1
        results.put(("error", shard, traceback.format_exc(limit=8)))


_ENV_LOCK = threading.Lock()
#: one thread per worker: the workers already fill the cores, and BLAS threads would fight them
_SINGLE_THREAD_ENV = {
    k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
}


def available_cores() -> int:
    """Cores this process may run on (affinity / cgroup aware where the OS says so)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_shards(
    make_shard: Callable[[_S, int], Shard[_R]],
    setup: _S,
    n_shards: int,
    n_steps: int,
    *,
    processes: bool,
    slot_len: int,
    label: str = "training",
    progress: Callable[[float, str], None] = no_progress,
    cancel: CancelToken = NEVER_CANCELLED,
    locked: bool | None = None,
    stats: dict[str, list[float]] | None = None,
) -> _R:
    """Run ``n_steps`` steps of ``n_shards`` shards and return shard 0's ``result()``.

    ``processes=False`` runs every shard here, one after another at each sync point;
    ``processes=True`` gives each shard its own spawned process (``slot_len`` floats bound
    every partial sum) while this thread only reports ``progress`` and polls ``cancel``.
    Both do the same arithmetic (see the module docstring).  ``locked`` forces the lock-based
    cross-process handshake (default: lock-free only where stores are ordered, see
    :func:`_ordered_stores`).
    ``stats``, if given, receives ``worker_peak_rss_mb`` (one entry per worker process).
    """
    report_every = max(1, n_steps // 200)
    if not processes or n_shards == 1:
        shards = [make_shard(setup, s) for s in range(n_shards)]
        for i in range(n_steps):
            cancel.check()
            run_together([sh.step(i) for sh in shards], sum_in_order)
            if i % report_every == 0:
                progress(i / n_steps, f"{label} step {i}/{n_steps}")
        return shards[0].result()
    return _run_in_processes(
        make_shard,
        setup,
        n_shards,
        n_steps,
        slot_len,
        label,
        progress,
        cancel,
        (not _ordered_stores()) if locked is None else locked,
        stats,
    )


def _run_in_processes(
    make_shard: Callable[[_S, int], Shard[_R]],
    setup: _S,
    n_shards: int,
    n_steps: int,
    slot_len: int,
    label: str,
    progress: Callable[[float, str], None],
    cancel: CancelToken,
    locked: bool,
    stats: dict[str, list[float]] | None,
) -> _R:
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # a spawned worker re-imports the main script; a script that fits at import time
        # would otherwise start workers of its own (or, caught, train again in every worker)
        raise UnguardedMainError(
            "a training worker process is importing your main script, which starts a fit at "
            "import time: put the script's top-level code under `if __name__ == '__main__':`"
        )
    # spawn, not fork: the GUI process has Qt and worker threads, which fork does not copy safely
    ctx = multiprocessing.get_context("spawn")
    control = ctx.RawArray(ctypes.c_int64, _HEADER + 2 * n_shards)
    slots = ctx.RawArray(ctypes.c_float, 2 * n_shards * slot_len)
    locks = [ctx.Lock() for _ in range(n_shards)] if locked else None
    results: Queue[tuple[str, int, Any]] = ctx.Queue()
    ctl = np.frombuffer(memoryview(control), dtype=np.int64)
    # the job goes through shared memory, not the process arguments: spawn writes arguments
    # into a pipe that the child drains only after its imports, so a large argument would
    # make each start() wait for the previous child to boot
    blob = pickle.dumps((make_shard, setup), protocol=pickle.HIGHEST_PROTOCOL)
    job = ctx.RawArray(ctypes.c_uint8, len(blob))
    np.frombuffer(memoryview(job), dtype=np.uint8)[:] = np.frombuffer(blob, dtype=np.uint8)
    del blob
    procs: list[BaseProcess] = []
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in _SINGLE_THREAD_ENV}
        os.environ.update(_SINGLE_THREAD_ENV)
        try:
            for s in range(n_shards):
                p = ctx.Process(
                    target=_worker,
                    name=f"dpstudio-{label}-{s}",
                    daemon=True,
                    args=(job, s, n_shards, n_steps, control, slots, slot_len, locks, results),
                )
                p.start()
                procs.append(p)
        except BaseException:
            ctl[_ABORT] = 1
            _stop(procs)
            raise
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    outcome: object = None
    failure: str | None = None
    finished: set[int] = set()
    peaks = [0.0] * n_shards

    def take(kind: str, shard: int, payload: Any) -> None:
        nonlocal outcome, failure
        if kind == "done":
            finished.add(shard)
            result, peaks[shard] = payload
            if shard == 0:
                outcome = result
        else:
            failure = f"{label} worker {shard} failed:\n{payload}"

    try:
        last, report_every = -1, max(1, n_steps // 200)
        while len(finished) < n_shards and failure is None:
            if cancel.cancelled:
                ctl[_ABORT] = 1
                raise Cancelled("cancelled by the user")
            try:
                message = results.get(timeout=0.05)
                take(*message)
            except queue_mod.Empty:
                message = None
            done = int(ctl[_HEADER + n_shards :].min())
            if last < 0 or done - last >= report_every or (done == n_steps and done != last):
                progress(done / n_steps, f"{label} step {done}/{n_steps}")
                last = done
            if message is None and failure is None and not ctl[_ERROR]:
                dead = [s for s, p in enumerate(procs) if s not in finished and p.exitcode is not None]
                if dead:
                    # a worker that has just finished may exit before its message is read:
                    # give its last message time to arrive before calling it dead
                    try:
                        while True:
                            take(*results.get(timeout=0.5))
                    except queue_mod.Empty:
                        pass
                    for s in dead:
                        if s not in finished and failure is None:
                            failure = f"{label} worker {s} exited unexpectedly (code {procs[s].exitcode})"
        if failure is not None:
            ctl[_ABORT] = 1
            raise RuntimeError(failure.strip())
        if stats is not None:
            stats["worker_peak_rss_mb"] = peaks
        return cast(_R, outcome)  # shard 0's result(), unpickled from its "done" message
    finally:
        ctl[_ABORT] = ctl[_ABORT] or int(len(finished) < n_shards)
        _stop(procs)
        results.close()
        results.join_thread()


def _peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM, reset at exec unlike ``ru_maxrss``), or 0."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _stop(procs: Sequence[BaseProcess], grace: float = 0.3) -> None:
    """Join the workers; any still running after ``grace`` seconds is terminated."""
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join()
