"""Exact, mergeable marginal counts: the only view of the private data that MST and AIM take.

:class:`MarginalCounts` holds the exact counts of a fixed list of cliques (tuples of column
indices) over the full-domain cell codes of :class:`~.cells.CellLayout` (one ``(n, d)`` integer
matrix per batch of records).  It is an accumulator in the sense of the streamed / Dask design:
``add`` one batch at a time (any number of rows, including 0), ``merge`` partial results in any
order; the result never depends on how the records were split, so an in-memory fit (one batch:
the whole frame), a streamed fit and a Dask fit see bit-identical counts.

Only the *maximal* cliques of the list are stored (a clique inside another one is answered by
summing the larger table, an exact integer sum), so the memory is at most the sum of the
cliques' cell counts -- a function of the public domain sizes, never of the number of rows.  The
object is plain numpy arrays and tuples: picklable.

``compressed`` maps a clique's full table through a per-column cell map (MST's and AIM's domain
compression, computed from noisy 1-way releases): the result equals counting the compressed
codes ``cmap[j][x[:, j]]`` directly, exactly (integer counts summed in float64, exact below
2**53 records).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..progress import NEVER_CANCELLED, CancelToken, no_progress
from ..rng import RandomSource
from .encoding import FloatArray, TableSpec

if TYPE_CHECKING:
    from .base import FittedSynth
    from .cells import CellLayout

Clique = tuple[int, ...]


_ENUMERATE = 12  # up to this many columns, a clique's subsets are enumerated (2**k); above, scanned


def _listed_subsets(c: Clique, listed: Sequence[Clique], lookup: set[Clique]) -> list[Clique]:
    """The cliques of ``listed`` (``lookup``: the same, as a set) strictly inside ``c``."""
    k = len(c)
    if k > _ENUMERATE:
        sc = set(c)
        return [o for o in listed if len(o) < k and set(o) < sc]
    subs = (tuple(c[i] for i in range(k) if mask >> i & 1) for mask in range(1, (1 << k) - 1))
    return [s for s in subs if s in lookup]


def _maximal(cliques: Sequence[Clique]) -> list[Clique]:
    """The cliques not strictly inside another one of the list (first-seen order)."""
    lookup = set(cliques)
    inside: set[Clique] = set()
    for c in cliques:
        inside.update(_listed_subsets(c, cliques, lookup))
    return [c for c in cliques if c not in inside]


class MarginalCounts:
    """Exact counts of ``cliques`` (sorted tuples of column indices) over cell codes whose
    column j takes values ``0 .. sizes[j] - 1``.

    ``counts(c)`` is the flattened table of clique ``c`` in C order (the first column of the
    clique varies slowest: cell ``(v_a, v_b)`` of ``(a, b)`` is at ``v_a * sizes[b] + v_b``,
    as ``np.ravel_multi_index`` gives).  Any non-empty subset of a listed clique may be asked
    for."""

    def __init__(self, sizes: npt.ArrayLike, cliques: Iterable[Sequence[int]]) -> None:
        self.sizes: tuple[int, ...] = tuple(int(s) for s in np.asarray(sizes, dtype=np.int64).ravel())
        if any(s < 1 for s in self.sizes):
            raise ValueError("every column needs at least one cell")
        d = len(self.sizes)
        seen: dict[Clique, None] = {}
        for c in cliques:
            cl = tuple(sorted(int(a) for a in c))
            if not cl:
                raise ValueError("a clique holds at least one column")
            if len(set(cl)) != len(cl) or cl[0] < 0 or cl[-1] >= d:
                raise ValueError(f"clique {tuple(c)}: distinct column indices in 0..{d - 1}")
            seen[cl] = None
        self.cliques: list[Clique] = list(seen)
        self.n = 0
        stored = _maximal(self.cliques)
        self._tables: dict[Clique, npt.NDArray[np.int64]] = {
            c: np.zeros(self._cells(c), dtype=np.int64) for c in stored
        }
        # the stored clique (fewest cells) each listed clique is summed from
        self._home: dict[Clique, Clique] = {c: c for c in stored}
        lookup = set(self.cliques)
        for s in sorted(stored, key=self._cells):
            for o in _listed_subsets(s, self.cliques, lookup):
                self._home.setdefault(o, s)

    # ------------------------------------------------------------------ accumulation
    def _cells(self, clique: Clique) -> int:
        return int(math.prod(self.sizes[a] for a in clique))

    def add(self, x: npt.ArrayLike) -> MarginalCounts:
        """Add a batch of full-domain cell codes, an ``(n_b, d)`` integer array (any n_b >= 0).
        Returns self."""
        codes = np.asarray(x)
        d = len(self.sizes)
        if codes.ndim != 2 or codes.shape[1] != d:
            raise ValueError(f"codes: an (n, {d}) array, got shape {codes.shape}")
        n_b = codes.shape[0]
        if n_b == 0:
            return self
        if not np.issubdtype(codes.dtype, np.integer):
            raise TypeError("codes: an integer array")
        used = sorted({a for c in self._tables for a in c})
        if used:
            sub = codes[:, used]
            lo, hi = sub.min(axis=0), sub.max(axis=0)
            top = np.array([self.sizes[a] for a in used])
            if (lo < 0).any() or (hi >= top).any():
                raise ValueError("codes outside the columns' cells")
        for c, table in self._tables.items():
            idx = codes[:, c[0]].astype(np.int64)
            for a in c[1:]:
                idx = idx * self.sizes[a] + codes[:, a]
            table += np.bincount(idx, minlength=len(table))
        self.n += int(n_b)
        return self

    def merge(self, other: MarginalCounts) -> MarginalCounts:
        """Add the counts of ``other`` (same sizes and cliques) into self; returns self."""
        if self.sizes != other.sizes or set(self.cliques) != set(other.cliques):
            raise ValueError("merge: the two counts must have the same sizes and cliques")
        for c, table in self._tables.items():
            table += other._tables[c]
        self.n += other.n
        return self

    # ------------------------------------------------------------------ answers
    def _home_of(self, clique: Sequence[int]) -> Clique | None:
        cl = tuple(int(a) for a in clique)
        if cl in self._home:
            return self._home[cl]
        if not cl or list(cl) != sorted(set(cl)):
            return None
        homes = [c for c in self._tables if set(cl) <= set(c)]
        if not homes:
            return None
        self._home[cl] = min(homes, key=self._cells)
        return self._home[cl]

    def has(self, clique: Sequence[int]) -> bool:
        """Whether ``clique`` (sorted) is a listed clique or a subset of one."""
        return self._home_of(clique) is not None

    def _shaped(self, clique: Sequence[int]) -> npt.NDArray[np.int64]:
        cl = tuple(int(a) for a in clique)
        home = self._home_of(cl)
        if home is None:
            raise KeyError(f"clique {cl} was not counted (cliques must be sorted, within the listed ones)")
        if cl == home:
            return self._tables[cl].reshape([self.sizes[a] for a in cl])
        full = self._tables[home].reshape([self.sizes[a] for a in home])
        drop = tuple(k for k, a in enumerate(home) if a not in cl)
        out: npt.NDArray[np.int64] = full.sum(axis=drop)
        return out

    def counts(self, clique: Sequence[int]) -> FloatArray:
        """The exact counts of ``clique`` (float64, flattened in C order; a new array)."""
        return self._shaped(clique).astype(np.float64).ravel()

    def compressed(self, clique: Sequence[int], cmap: Sequence[npt.ArrayLike], csizes: Sequence[int]) -> FloatArray:
        """The counts of ``clique`` over compressed codes: column j's cell v becomes cell
        ``cmap[j][v]`` of ``0 .. csizes[j] - 1`` (``cmap`` and ``csizes`` indexed by column).
        Flattened in C order over the compressed sizes; equal, exactly, to counting
        ``cmap[j][x[:, j]]`` directly."""
        full = self._shaped(clique)
        cl = tuple(int(a) for a in clique)
        idx: npt.NDArray[np.int64] | None = None
        for a in cl:
            mp = np.asarray(cmap[a], dtype=np.int64)
            m_c = int(csizes[a])
            if mp.shape != (self.sizes[a],) or (mp.size and (mp.min() < 0 or mp.max() >= m_c)):
                raise ValueError(f"cmap[{a}]: one compressed cell in 0..{m_c - 1} per cell of column {a}")
            idx = mp if idx is None else idx[..., None] * m_c + mp
        assert idx is not None
        n_c = int(math.prod(int(csizes[a]) for a in cl))
        out = np.bincount(idx.ravel(), weights=full.ravel().astype(np.float64), minlength=n_c)
        return out.astype(np.float64, copy=False)  # float64 already (weighted): no copy

    def check(self, sizes: npt.ArrayLike, needed: Iterable[Sequence[int]]) -> None:
        """Raise ValueError unless these counts are over ``sizes`` and answer every clique of
        ``needed`` (a fit's guard against counts built for another layout or method)."""
        want = tuple(int(s) for s in np.asarray(sizes, dtype=np.int64).ravel())
        if self.sizes != want:
            raise ValueError(f"the counts are over cells {self.sizes}, the fit's layout has {want}")
        missing = [tuple(c) for c in needed if not self.has(tuple(c))]
        if missing:
            raise ValueError(f"the counts lack the cliques {missing[:5]}{' ...' if len(missing) > 5 else ''}")

    # ------------------------------------------------------------------ misc
    @property
    def nbytes(self) -> int:
        return int(sum(t.nbytes for t in self._tables.values()))

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, MarginalCounts):
            return NotImplemented
        return (
            self.sizes == other.sizes
            and set(self.cliques) == set(other.cliques)
            and self.n == other.n
            and all(np.array_equal(t, other._tables[c]) for c, t in self._tables.items())
        )

    __hash__ = None  # type: ignore[assignment]  # mutable accumulator

    def __repr__(self) -> str:
        return f"MarginalCounts(n={self.n}, d={len(self.sizes)}, cliques={len(self.cliques)})"


@runtime_checkable
class FitsFromCounts(Protocol):
    """A synthesizer whose fit reads the data only through :class:`MarginalCounts` (MST, AIM):
    ``isinstance(synth, FitsFromCounts)`` before a streamed or distributed fit.

    ``layout(spec)``: the public cells; ``cliques_needed(spec)``: the full-domain cliques to
    count (public); ``fit_counts(counts, spec, ...)``: the fit, the same Fitted object (and, for
    a fixed seed, the same bits) as ``fit`` on the frame the counts were taken from."""

    def layout(self, spec: TableSpec) -> CellLayout: ...

    def cliques_needed(self, spec: TableSpec) -> list[tuple[int, ...]]: ...

    def fit_counts(
        self,
        counts: MarginalCounts,
        spec: TableSpec,
        *,
        epsilon: float,
        delta: float,
        rng: RandomSource,
        progress: Callable[[float, str], None] = no_progress,
        cancel: CancelToken = NEVER_CANCELLED,
    ) -> FittedSynth: ...
