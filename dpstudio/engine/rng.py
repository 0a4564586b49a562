"""Where every random bit comes from.

By default noise is drawn from the operating system's cryptographically secure generator
(``os.urandom`` = Linux ``getrandom``, a ChaCha20 CSPRNG).  A fixed seed is honoured only
when the recipe asks for one, and :meth:`RandomSource.describe` says which was used so the
report can print it.  All DP noise must be built from :meth:`uint64` / :meth:`integers`
(exact integer arithmetic); :meth:`numpy_generator` is for randomness that carries no privacy
role (shuffles, train/test splits, random features that are public by construction).
"""

from __future__ import annotations

import os
import secrets
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

_CHUNK_BYTES = 1 << 24  # getrandom is fastest in bounded chunks; also bounds peak memory

_Word = TypeVar("_Word", np.uint32, np.uint64)


class RandomSource:
    """Uniform random integers from a secure source, or from a seeded PCG64 when asked."""

    def __init__(self, seed: int | None = None, *, stream: int | None = None):
        """``stream``: a seeded source of its own for the same ``seed``, which never repeats
        the draws of ``RandomSource(seed)`` nor of its :meth:`stream` children (every seeded
        draw is keyed by ``SeedSequence(seed, spawn_key=(stream, ...))`` instead of
        ``(...)``): a risk estimate's simulated release must not draw the released file's noise
        when the recipe's seed happens to be the estimate's."""
        self._gen: np.random.Generator | None
        self._prefix: tuple[int, ...] = () if stream is None else (int(stream),)
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
            entropy = int(seed) if stream is None else np.random.SeedSequence(int(seed), spawn_key=self._prefix)
            self._gen = np.random.Generator(np.random.PCG64(entropy))
        else:
            self._gen = None
        self.seed = None if seed is None else int(seed)

    @property
    def secure(self) -> bool:
        return self._gen is None

    def describe(self) -> str:
        if self.secure:
            return "secure: operating-system CSPRNG (os.urandom/getrandom)"
        return f"fixed seed {self.seed} (PCG64) - reproducible, NOT for production releases"

    @staticmethod
    def _os_words(n: int, dtype: type[_Word]) -> npt.NDArray[_Word]:
        """``n`` words of ``dtype`` filled straight from the OS CSPRNG (one copy per chunk)."""
        out = np.empty(n, dtype=dtype)
        view = out.view(np.uint8)
        pos = 0
        total = view.size
        while pos < total:
            step = min(_CHUNK_BYTES, total - pos)
            view[pos : pos + step] = np.frombuffer(os.urandom(step), dtype=np.uint8)
            pos += step
        return out

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` independent uniform 64-bit words."""
        n = int(n)
        if self._gen is not None:
            return self._gen.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
        return self._os_words(n, np.uint64)

    def uint32(self, n: int) -> npt.NDArray[np.uint32]:
        """``n`` independent uniform 32-bit words (half the entropy cost of :meth:`uint64`)."""
        n = int(n)
        if self._gen is None:
            # exactly 4n bytes from the OS: random bytes are the scarce resource (~250 MB/s)
            return self._os_words(n, np.uint32)
        words = self.uint64((n + 1) // 2)
        return words.view(np.uint32)[:n]

    def integers(
        self, high: int | np.integer[Any] | npt.NDArray[np.integer[Any]], n: int | None = None
    ) -> npt.NDArray[np.int64]:
        """Exactly uniform integers in ``[0, high)``; ``high`` a positive int or array (< 2**32).

        Lemire's multiply-shift with rejection, so there is no modulo bias.
        """
        if np.ndim(high) == 0 and n is not None:
            return self._integers_scalar(int(high), int(n))
        high_arr = np.asarray(high, dtype=np.uint64)
        if n is None:
            n = high_arr.size if high_arr.ndim else 1
        if np.any(high_arr == 0) or np.any(high_arr >= 2**32):
            raise ValueError(f"integers: high must lie in [1, 2**32), got {high!r}")
        high_b = np.broadcast_to(high_arr, (n,)).astype(np.uint64)
        out = np.empty(n, dtype=np.int64)
        todo = np.arange(n)
        # threshold = 2**32 mod high: reject products whose low half falls below it
        threshold = (np.uint64(2**32) - high_b) % high_b
        while todo.size:
            r = self.uint32(todo.size).astype(np.uint64)
            m = r * high_b[todo]
            low = m & np.uint64(0xFFFFFFFF)
            ok = low >= threshold[todo]
            out[todo[ok]] = (m[ok] >> np.uint64(32)).astype(np.int64)
            todo = todo[~ok]
        return out

    def _integers_scalar(self, high: int, n: int) -> npt.NDArray[np.int64]:
        """The same Lemire draw for one common bound, without per-element bound arrays."""
        if not 1 <= high < 2**32:
            raise ValueError(f"integers: high must lie in [1, 2**32), got {high!r}")
        h = np.uint64(high)
        threshold = np.uint64((2**32 - high) % high)
        m = self.uint32(n).astype(np.uint64)
        m *= h
        out = (m >> np.uint64(32)).astype(np.int64)
        if threshold:
            bad = np.flatnonzero((m & np.uint64(0xFFFFFFFF)) < threshold)
            if bad.size:
                out[bad] = self._integers_scalar(high, bad.size)
        return out

    def uniform(self, n: int) -> npt.NDArray[np.float64]:
        """Uniform floats on the grid ``k / 2**53`` in [0, 1) (no privacy role by itself)."""
        return (self.uint64(n) >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)

    def stream(self, *key: int) -> RandomSource:
        """An independent source for one part of a batched release, named by ``key`` (e.g.
        ``(purpose, block)``).

        Secure mode: a fresh secure source (every draw comes from the OS CSPRNG anyway).  Seeded
        mode: PCG64 seeded from ``SeedSequence(seed, spawn_key=key)``, so a block's noise depends
        on the seed and the block's key only -- not on what was drawn before, nor on which
        process or machine draws it: a streamed or Dask run reproduces the in-memory one."""
        if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 for k in key):
            raise ValueError(f"stream key must be non-negative integers, got {key!r}")
        child = RandomSource(None)
        if self._gen is not None:
            assert self.seed is not None
            seq = np.random.SeedSequence(self.seed, spawn_key=self._prefix + tuple(int(k) for k in key))
            child._gen = np.random.Generator(np.random.PCG64(seq))
            child.seed, child._prefix = self.seed, self._prefix
        return child

    def numpy_generator(self) -> np.random.Generator:
        """A numpy Generator for randomness without a privacy role.

        Seeded mode derives it from the seed; secure mode seeds it with 256 fresh OS bits.
        """
        if self._gen is not None:
            return np.random.Generator(np.random.PCG64(self._gen.integers(0, 2**63)))
        return np.random.Generator(np.random.PCG64(secrets.randbits(256)))


def make_random_source(seed: int | None) -> RandomSource:
    return RandomSource(seed)
