"""Exact integer samplers for DP noise: Bernoulli(exp(-gamma)), discrete Laplace, discrete Gaussian.

Why exact integer samplers: floating-point Laplace/Gaussian noise leaks the input through the
low-order bits of the output (Mironov, CCS 2012).  Following Canonne, Kamath & Steinke 2020
("The Discrete Gaussian for Differential Privacy", NeurIPS; CKS below) noise lives on the
integers, values are snapped to a data-independent grid, and every sample is drawn from
*exactly* the stated distribution using only uniform random integers from
:class:`~dpstudio.engine.rng.RandomSource`.

Two exact implementations are provided:

* ``*_cks`` — CKS Algorithms 1, 2 and 3 literally (vectorised over arrays, Bernoulli(n/d) from
  exact uniform integers).  Simple to audit, but they spend ~8 random 32-bit words per sample.
* the default fast path — *certified inversion*.  A uniform U in [0, 1) is revealed lazily, 31
  or 32 bits at a time; the sample is a step function of U whose break points are
  ``exp(-rational)``.  After each reveal U is known to lie in a dyadic interval [a, a + w); if
  floating-point bounds, widened by a rigorous error margin, show that the whole interval lies
  between two consecutive break points, the sample is decided (this is exact: every U in the
  interval gives the same output).  Otherwise 32 more bits are revealed; after 63 bits the
  (rare, probability ~1e-11 * scale) undecided samples go to a scalar routine that compares
  against break points computed with correctly rounded ``decimal`` arithmetic at growing
  precision, revealing more bits until decided.  The output law is therefore exactly the
  target law; floats only decide *when* enough bits have been seen.  Cost: one 32-bit word and
  one ``log`` per discrete-Laplace sample.

Both are tested against the exact pmf (chi-square) in tests/test_sampling.py.  How each sampler
works and why its law is exact: docs/mechanisms.md §Exact samplers.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from dpstudio.engine.rng import RandomSource

#: an exact non-negative rational as the samplers accept it (floats are taken at their binary value)
Rational: TypeAlias = int | float | Fraction | tuple[int, int] | np.integer[Any] | np.floating[Any]

# Relative/absolute safety margin for the float certification.  The float quantities below
# carry errors of a few ulp (2**-52) times (1 + magnitude); 2**-40 leaves a >1000x cushion.
_MARGIN = 2.0**-40
_TWO31 = 2.0**-31
_TWO32 = 2.0**-32
_TWO63 = 2.0**-63
_TWO64 = 2.0**-64


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
#: rounds of any rejection / reveal-more-bits loop below.  Within the limits a recipe is validated
#: against (recipe.validate: per-unit epsilon >= 1e-6, so scales <= ~2e9 grid steps) every such
#: loop ends a round with probability >= 0.18 per pending draw (see each loop), so 10,000 rounds
#: fail with probability < n * 0.82**10000 < 1e-800: the bound turns a hang on absurd parameters
#: into an error without changing the law of any output in a measurable way.
_MAX_ROUNDS = 10_000
#: 32-bit reveals of the scalar exact fallbacks: each further word leaves a draw undecided with
#: probability ~2**-30, so 64 of them fail with probability < 2**-1900
_MAX_REVEALS = 64


def _rounds(what: str, limit: int = _MAX_ROUNDS) -> Iterator[int]:
    """range(limit), then RuntimeError: ``for _ in _rounds(...)`` with a ``break`` when done."""
    yield from range(limit)
    raise RuntimeError(f"{what}: not done after {limit} rounds - parameters outside the validated limits?")


def _as_fraction(x: object, what: str) -> Fraction:
    """An exact non-negative rational from an int, Fraction, float or (num, den) pair."""
    if isinstance(x, tuple):
        num, den = x
        f = Fraction(int(num), int(den))
    elif isinstance(x, Fraction):
        f = x
    elif isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        f = Fraction(int(x))
    elif isinstance(x, (float, np.floating)):
        if not math.isfinite(float(x)):
            raise ValueError(f"{what} must be finite, got {x!r}")
        f = Fraction(float(x))  # exact binary value of the float
    else:
        raise ValueError(f"{what} must be a number or (num, den) pair, got {x!r}")
    return f


def _decimal_exp_neg(x: Fraction, prec: int) -> decimal.Decimal:
    """exp(-x) to ``prec`` significant digits (the decimal module's exp is correctly rounded)."""
    ctx = decimal.Context(prec=prec + 5, Emin=-(10**9), Emax=10**9)
    arg = ctx.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator))
    return ctx.exp(-arg)


def _reveal_prefix(words: Sequence[int | np.integer[Any]], first_bits: int) -> tuple[int, int]:
    """Concatenate revealed words into an integer prefix and its bit length."""
    prefix = 0
    nbits = 0
    for i, w in enumerate(words):
        b = first_bits if i == 0 else 32
        prefix = (prefix << b) | int(w)
        nbits += b
    return prefix, nbits


# --------------------------------------------------------------------------------------------
# Bernoulli(exp(-gamma))
# --------------------------------------------------------------------------------------------
def _bernoulli_exp_fallback(gamma: Fraction, prefix: int, nbits: int, rng: RandomSource) -> bool:
    """Exact decision of U < exp(-gamma) given the revealed prefix of U (scalar, rare)."""
    prec = 40
    for _ in _rounds("exact Bernoulli(exp(-gamma)) fallback", _MAX_REVEALS):
        v = _decimal_exp_neg(gamma, prec)
        ctx = decimal.Context(prec=prec + 30, Emin=-(10**9), Emax=10**9)
        # decimal exp is correctly rounded; the argument's rounding adds gamma * 10**-(prec+4)
        tol = ctx.multiply(v, decimal.Decimal(10) ** (-(prec - 2)) * (1 + math.ceil(gamma)))
        scale = ctx.power(decimal.Decimal(2), -nbits)
        lo = ctx.multiply(decimal.Decimal(prefix), scale)
        hi = ctx.multiply(decimal.Decimal(prefix + 1), scale)
        if hi <= v - tol:
            return True
        if lo >= v + tol:
            return False
        prefix = (prefix << 32) | int(rng.uint32(1)[0])
        nbits += 32
        prec += 12
    raise AssertionError("unreachable: _rounds raises when its rounds run out")


def bernoulli_exp(
    gamma: Rational | Sequence[Rational] | npt.NDArray[Any], rng: RandomSource, n: int | None = None
) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(exp(-gamma)) draws, vectorised (certified inversion).

    ``gamma``: a non-negative rational — a scalar (int/float/Fraction/(num, den)) with ``n``
    draws, or a sequence of :class:`fractions.Fraction` (one per draw).  Floats are taken as
    their exact binary value.  Returns a bool array.
    """
    exact: list[Fraction] | None
    if isinstance(gamma, (list, np.ndarray)) and n is None:
        fr = [_as_fraction(g, "gamma") for g in gamma]
        gam_f = np.array([float(g) for g in fr], dtype=np.float64)
        exact = fr
    else:
        g = _as_fraction(gamma, "gamma")
        if n is None:
            n = 1
        gam_f = np.full(int(n), float(g))
        exact = None
        scalar_exact = g
    if np.any(gam_f < 0):
        raise ValueError(f"gamma must be >= 0, got {gamma!r}")

    def exact_of(i: int) -> Fraction:
        return exact[i] if exact is not None else scalar_exact

    return _bernoulli_exp_float(gam_f, exact_of, rng)


def bernoulli_exp_floats(top: npt.ArrayLike, w: npt.ArrayLike, rng: RandomSource) -> npt.NDArray[np.bool_]:
    """Exact Bernoulli(exp(-(top_i - w_i))) draws for float arrays ``top >= w`` (finite): the
    difference is taken exactly (as rationals) wherever the certification needs it, and its
    float value (relative error <= 2^-53, inside the margin) everywhere else."""
    top = np.asarray(top, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    gam_f = top - w
    if np.any(gam_f < 0) or not np.all(np.isfinite(gam_f)):
        raise ValueError("bernoulli_exp_floats needs finite top >= w")

    def exact_of(i: int) -> Fraction:
        return Fraction(float(top[i])) - Fraction(float(w[i]))

    return _bernoulli_exp_float(gam_f, exact_of, rng)


def _bernoulli_exp_float(
    gam_f: npt.NDArray[np.float64], exact_of: Callable[[int], Fraction], rng: RandomSource
) -> npt.NDArray[np.bool_]:
    """Core of :func:`bernoulli_exp`: float gammas + a callback giving the exact gamma of row i.

    ``gam_f`` must be within a few ulp (relative) of the exact gamma; the margin covers it.
    """
    n = gam_f.size
    out = np.zeros(n, dtype=bool)
    with np.errstate(under="ignore"):
        v = np.exp(-gam_f)
    marg = _MARGIN * (1.0 + gam_f) * v  # absolute margin on exp(-gamma)
    v_lo = v - marg
    v_hi = v + marg
    w1 = rng.uint32(n)
    a = w1.astype(np.float64) * _TWO32
    yes = (a + _TWO32) <= v_lo
    no = (a >= v_hi) & (a > 0)  # a > 0 keeps this exact when exp(-gamma) underflows
    out[yes] = True
    und = np.flatnonzero(~(yes | no))
    if und.size:
        w2 = rng.uint32(und.size)
        a2 = a[und] + w2.astype(np.float64) * _TWO64  # rounding 2**-53 rel, inside the margin
        yes2 = (a2 + _TWO64) <= v_lo[und]
        no2 = (a2 >= v_hi[und]) & (a2 > 0)
        out[und[yes2]] = True
        rest = np.flatnonzero(~(yes2 | no2))
        for j in rest:  # probability ~1e-12 per draw: scalar exact comparison
            i = und[j]
            prefix, nbits = _reveal_prefix([w1[i], w2[j]], 32)
            out[i] = _bernoulli_exp_fallback(exact_of(int(i)), prefix, nbits, rng)
    return out


def bernoulli_exp_cks(num: npt.ArrayLike, den: npt.ArrayLike, rng: RandomSource) -> npt.NDArray[np.bool_]:
    """Bernoulli(exp(-num/den)) by CKS 2020 Algorithm 1, vectorised; ``num``, ``den`` int arrays.

    Reference implementation (slow, ~e random words per unit of gamma); ``den * K`` must stay
    below 2**32 for the uniform draws.
    """
    num = np.asarray(num, dtype=np.int64).ravel()
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape).ravel()
    if np.any(num < 0) or np.any(den <= 0):
        raise ValueError("bernoulli_exp_cks: need num >= 0 and den > 0")
    n = num.size
    out = np.ones(n, dtype=bool)
    # gamma > 1: exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac); each factor is a Bernoulli.
    whole = num // den
    frac = num - whole * den
    alive = np.arange(n)
    k = 0
    while True:  # at most max(whole) + 1 rounds: k grows by one each round
        need = alive[whole[alive] > k]
        if need.size == 0:
            break
        b = _bern_exp_le1(np.ones(need.size, np.int64), np.ones(need.size, np.int64), rng)
        out[need[~b]] = False
        alive = np.setdiff1d(alive, need[~b], assume_unique=True)
        k += 1
    if alive.size:
        b = _bern_exp_le1(frac[alive], den[alive], rng)
        out[alive[~b]] = False
    return out


def _bern_exp_le1(num: npt.NDArray[np.int64], den: npt.NDArray[np.int64], rng: RandomSource) -> npt.NDArray[np.bool_]:
    """CKS Alg. 1 for gamma = num/den in [0, 1]: K = first k with Bernoulli(gamma/k) = 0; K odd."""
    n = num.size
    K = np.ones(n, dtype=np.int64)
    todo = np.arange(n)
    # a draw survives round K with probability gamma/K <= 1/K: P(more than 170 rounds) < 1/170!
    for _ in _rounds("CKS Bernoulli(exp(-gamma)), gamma <= 1"):
        if not todo.size:
            break
        # Bernoulli(gamma/K) = [uniform{0..den*K-1} < num]
        u = rng.integers(den[todo] * K[todo])
        a = u < num[todo]
        K[todo[a]] += 1
        todo = todo[a]
    odd: npt.NDArray[np.bool_] = (K % 2) == 1  # ndarray comparisons are typed Any in the numpy stubs
    return odd


# --------------------------------------------------------------------------------------------
# discrete Laplace
# --------------------------------------------------------------------------------------------
def _dlap_fallback(t: Fraction, prefix: int, nbits: int, rng: RandomSource) -> int:
    """Exact |X| for the discrete Laplace given a revealed prefix of U (scalar, rare).

    |X| = k  iff  c_{k+1} <= U < c_k,  c_0 = 1, c_k = 2 q^k / (1 + q), q = exp(-1/t).
    """
    r = 1 / t
    prec = 40
    for _ in _rounds("exact discrete Laplace fallback", _MAX_REVEALS):
        ctx = decimal.Context(prec=prec + 30, Emin=-(10**9), Emax=10**9)
        scale = ctx.power(decimal.Decimal(2), -nbits)
        lo = ctx.multiply(decimal.Decimal(prefix), scale)
        hi = ctx.multiply(decimal.Decimal(prefix + 1), scale)
        q = _decimal_exp_neg(r, prec)
        half1q = ctx.divide(1 + q, 2)
        rel = decimal.Decimal(10) ** (-(prec - 3))
        if lo > 0:
            # candidate k from the interval's lower end
            lval = -ctx.ln(ctx.multiply(lo, half1q))
            kf = ctx.divide(lval, ctx.divide(decimal.Decimal(r.numerator), decimal.Decimal(r.denominator)))
            k = max(0, int(kf.to_integral_value(rounding=decimal.ROUND_CEILING)) - 1)

            def c(j: int, ctx: decimal.Context = ctx, prec: int = prec, q: decimal.Decimal = q) -> decimal.Decimal:
                # called within this iteration only; the defaults bind this iteration's values
                if j == 0:
                    return decimal.Decimal(1)
                return ctx.divide(ctx.multiply(2, _decimal_exp_neg(j * r, prec)), 1 + q)

            ck, ck1 = c(k), c(k + 1)
            rel = rel * (2 + math.ceil((k + 1) * r))  # exponent rounding grows with k r
            ok_low = lo >= ck1 * (1 + rel)
            ok_high = k == 0 or hi <= ck * (1 - rel)
            if ok_low and ok_high:
                return k
        prefix = (prefix << 32) | int(rng.uint32(1)[0])
        nbits += 32
        prec += 12
    raise AssertionError("unreachable: _rounds raises when its rounds run out")


def discrete_laplace(scale: Rational, n: int, rng: RandomSource) -> npt.NDArray[np.int64]:
    """``n`` exact draws of the discrete Laplace P(x) ∝ exp(-|x|/t), x ∈ ℤ (CKS 2020 Def. 2).

    ``scale`` t > 0 rational (int, Fraction, (num, den) or a float taken exactly).  Certified
    inversion (module docstring): the top bit of one 32-bit word is the sign, the other 31 bits
    start U; |X| = k iff L(U) := -log(U (1+q)/2) lies in (k/t, (k+1)/t].
    """
    t = _as_fraction(scale, "scale")
    if t <= 0:
        raise ValueError(f"scale must be > 0, got {scale!r}")
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n!r}")
    r = float(1 / t)  # 1/t, correctly rounded
    tf = float(t)
    q = math.exp(-r)
    log_half1q = math.log((1.0 + q) / 2.0)  # log((1+q)/2) <= 0

    out = np.empty(n, dtype=np.int64)
    # chunks keep the temporaries cache-resident (the float passes are memory-bound)
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        out[start:stop] = _dlap_chunk(stop - start, t, r, tf, log_half1q, rng)
    return out


_CHUNK = 1 << 15


def _dlap_chunk(
    n: int, t: Fraction, r: float, tf: float, log_half1q: float, rng: RandomSource
) -> npt.NDArray[np.int64]:
    w1 = rng.uint32(n)
    a = (w1 & np.uint32(0x7FFFFFFF)).astype(np.float64)
    a *= _TWO31  # exact
    mag, und = _dlap_certify(a, _TWO31, r, tf, log_half1q)
    if und.size:
        w2 = rng.uint32(und.size)
        a2 = a[und] + w2.astype(np.float64) * _TWO63
        mag2, und2 = _dlap_certify(a2, _TWO63, r, tf, log_half1q)
        ok = np.ones(und.size, dtype=bool)
        ok[und2] = False
        mag[und[ok]] = mag2[ok]
        for j in und2:  # rare: exact decimal comparison with more bits
            i = und[j]
            prefix, nbits = _reveal_prefix([int(w1[i]) & 0x7FFFFFFF, w2[j]], 31)
            mag[i] = _dlap_fallback(t, prefix, nbits, rng)
    # sign from the top bit; for |X| = 0 it is irrelevant (0 has one representation)
    neg = w1 >= np.uint32(1 << 31)
    np.negative(mag, out=mag, where=neg)
    return mag


def _dlap_certify(
    a: npt.NDArray[np.float64], w: float, r: float, tf: float, log_half1q: float
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """Candidate |X| for U in [a, a+w) and the indices where floats cannot certify it.

    Work in units of the break-point spacing: z = L(a) t, |X| = k iff L(U) t ∈ (k, k+1], so the
    candidate is k = ceil(z) - 1 and with f = ceil(z) - z the whole interval maps to k iff
        f >= margin            (U >= c_{k+1} on [a, a+w): L(a) t <= k+1)
        1 - f >= t w/a + margin  (U < c_k on [a, a+w): L(a+w) >= L(a) - w/a > k/t; void if k = 0).
    Float errors in z are a few ulp times (t + z); margin = _MARGIN (t + z) dominates them.
    a = 0 gives z = inf, f = nan: never certified (goes to more bits / the exact fallback).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = np.log(a)
        z += log_half1q
        z *= -tf
        c = np.ceil(z)
        f = c - z
        m = z * _MARGIN
        m += _MARGIN * tf
        ok = f >= m
        g = (tf * w) / a
        g += m
        np.subtract(1.0, g, out=g)
        ok2 = f <= g
        ok2 |= c <= 1.0
        ok &= ok2
        # a = 0 casts inf: a placeholder for a draw that is never certified (it is in ``und``)
        k = c.astype(np.int64)
    und = np.flatnonzero(~ok)
    k -= 1
    return k, und


def discrete_laplace_cks(s: int, t: int, n: int, rng: RandomSource) -> npt.NDArray[np.int64]:
    """CKS 2020 Algorithm 2, vectorised: n draws of P(x) ∝ exp(-|x| s/t) (scale t/s)."""
    s, t = int(s), int(t)
    if s <= 0 or t <= 0:
        raise ValueError(f"discrete_laplace_cks: need s, t > 0, got {s!r}, {t!r}")
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    # a round accepts a draw with probability >= e^-1 (the Bernoulli) x 1/2 (the sign rejection)
    for _ in _rounds("CKS discrete Laplace"):
        if not todo.size:
            break
        m = todo.size
        u = rng.integers(t, m)
        d = bernoulli_exp_cks(u, np.full(m, t), rng)
        idx = todo[d]
        u = u[d]
        m = idx.size
        v = np.zeros(m, dtype=np.int64)
        live = np.arange(m)
        # V ~ Geometric(1 - e^-1) by repeated Bernoulli(exp(-1)): a draw continues w.p. e^-1
        for _ in _rounds("CKS geometric"):
            if not live.size:
                break
            a = bernoulli_exp_cks(np.ones(live.size, np.int64), 1, rng)
            v[live[a]] += 1
            live = live[a]
        x = u + t * v
        y = x // s
        b = rng.integers(2, m).astype(bool)
        rej = b & (y == 0)
        out[idx[~rej]] = np.where(b[~rej], -y[~rej], y[~rej])
        done = np.zeros(n, dtype=bool)
        done[idx[~rej]] = True
        todo = todo[~done[todo]]
    return out


# --------------------------------------------------------------------------------------------
# discrete Gaussian
# --------------------------------------------------------------------------------------------
def discrete_gaussian(sigma2: Rational, n: int, rng: RandomSource) -> npt.NDArray[np.int64]:
    """``n`` exact draws of the discrete Gaussian P(x) ∝ exp(-x²/(2σ²)), x ∈ ℤ (CKS Alg. 3).

    ``sigma2`` = σ² rational.  CKS Algorithm 3: propose Y ~ discrete Laplace with scale
    t = floor(σ) + 1, accept with probability exp(-(|Y| - σ²/t)² / (2σ²)); both steps exact
    (certified inversion for the Laplace and the Bernoulli).
    """
    s2 = _as_fraction(sigma2, "sigma2")
    if s2 <= 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2!r}")
    n = int(n)
    # floor(sigma) = isqrt(floor(sigma^2)) exactly, so t = floor(sigma) + 1 as in CKS Alg. 3
    t = math.isqrt(s2.numerator // s2.denominator) + 1
    c = s2 / t  # sigma^2 / t, exact
    c_f = float(c)
    two_s2_f = float(2 * s2)
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    # CKS Alg. 3 accepts a proposal with probability >= 0.45 for every sigma (measured over
    # sigma^2 = 1e-6 .. 1e10; ~0.76 for large sigma): 10,000 rounds fail w.p. < n * 0.55**10000
    for _ in _rounds("discrete Gaussian rejection"):
        if not todo.size:
            break
        y = discrete_laplace(t, todo.size, rng)
        ay = np.abs(y).astype(np.float64)
        gam = (ay - c_f) ** 2 / two_s2_f

        def exact_of(i: int, y: npt.NDArray[np.int64] = y) -> Fraction:
            return (abs(int(y[i])) - c) ** 2 / (2 * s2)

        acc = _bernoulli_exp_float(gam, exact_of, rng)
        out[todo[acc]] = y[acc]
        todo = todo[~acc]
    return out


def discrete_gaussian_cks(sigma2: Fraction, n: int, rng: RandomSource) -> npt.NDArray[np.int64]:
    """CKS Algorithm 3 built on Algorithms 1-2 only (reference; slow)."""
    s2 = Fraction(sigma2)
    # t = floor(sigma) + 1 = isqrt(floor(sigma^2)) + 1 exactly (a loop counting t up took sigma steps)
    t = math.isqrt(s2.numerator // s2.denominator) + 1
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    for _ in _rounds("CKS discrete Gaussian rejection"):  # acceptance >= 0.45, as above
        if not todo.size:
            break
        y = discrete_laplace_cks(1, t, todo.size, rng)
        # gamma = (|y| - s2/t)^2 / (2 s2) = (|y| t D - N)^2 / (2 N D t^2)  with s2 = N/D
        N, D = s2.numerator, s2.denominator
        num = (np.abs(y) * t * D - N) ** 2
        den = 2 * N * D * t * t
        acc = bernoulli_exp_cks(num, np.full(y.size, den), rng)
        out[todo[acc]] = y[acc]
        todo = todo[~acc]
    return out


# --------------------------------------------------------------------------------------------
# exact pmfs (for calibration, expected error and tests)
# --------------------------------------------------------------------------------------------
def discrete_laplace_pmf(x: npt.ArrayLike, scale: float) -> npt.NDArray[np.float64]:
    """P(X = x) = (1-q)/(1+q) q^|x|, q = exp(-1/scale)."""
    q = math.exp(-1.0 / scale)
    return (-math.expm1(-1.0 / scale)) / (1.0 + q) * np.exp(-np.abs(np.asarray(x, np.float64)) / scale)


def discrete_laplace_mean_abs(scale: float) -> float:
    """E|X| = 2q / (1 - q²) for the discrete Laplace (closed form)."""
    q = math.exp(-1.0 / scale)
    return 2.0 * q / (-math.expm1(-2.0 / scale))


def _clamped_worst(tail_sum: Callable[[int], float], diam: int) -> float:
    """max over x in {0, ..., D} of E|clamp(x + X, 0, D) - x| for a symmetric integer noise X,
    given ``tail_sum(a) = sum_{j=1}^{a} P(X >= j)`` (= E min(X^+, a)): the error is
    T(D - x) + T(x), T is concave (its increments P(X >= j) fall with j), so the worst x is the
    middle of the range (docs/mechanisms.md, "Error after clamping")."""
    d = int(diam)
    return tail_sum(d // 2) + tail_sum(d - d // 2) if d > 0 else 0.0


def discrete_laplace_clamped_mean_abs(scale: float, diam: int) -> float:
    """Worst case over a range of ``diam`` steps of the error after clamping, E|clamp(x + X) - x|
    (:func:`_clamped_worst`), for the discrete Laplace: P(X >= j) = q^j / (1 + q), so
    T(a) = q (1 - q^a) / (1 - q^2), q = exp(-1/scale); it tends to E|X| / 2 per side as D grows."""
    q = math.exp(-1.0 / scale)
    den = -math.expm1(-2.0 / scale)  # 1 - q^2

    def tail_sum(a: int) -> float:
        return q * -math.expm1(-a / scale) / den

    return _clamped_worst(tail_sum, diam)


def discrete_gaussian_clamped_mean_abs(sigma2: float, diam: int) -> float:
    """The same worst case for the discrete Gaussian: its pmf over +-40 sigma (as
    :func:`discrete_gaussian_mean_abs` sums it), tails summed up to the half range."""
    sup = discrete_gaussian_support(math.sqrt(sigma2))
    p = discrete_gaussian_pmf(sup[sup > 0], sigma2)  # P(X = 1), P(X = 2), ...
    ge = np.cumsum(p[::-1])[::-1]  # P(X >= 1), P(X >= 2), ...
    partial = np.concatenate([[0.0], np.cumsum(ge)])

    def tail_sum(a: int) -> float:
        return float(partial[min(a, len(ge))])

    return _clamped_worst(tail_sum, diam)


def discrete_gaussian_support(sigma: float, tail: float = 40.0) -> npt.NDArray[np.int64]:
    half = int(math.ceil(tail * sigma)) + 2
    return np.arange(-half, half + 1)


def discrete_gaussian_pmf(x: npt.ArrayLike, sigma2: float) -> npt.NDArray[np.float64]:
    """Normalised pmf of the discrete Gaussian (normaliser summed over ±40σ, error < 1e-300)."""
    sigma = math.sqrt(sigma2)
    sup = discrete_gaussian_support(sigma)
    z: np.float64 = np.exp(-(sup.astype(float) ** 2) / (2 * sigma2)).sum()
    return np.exp(-(np.asarray(x, np.float64) ** 2) / (2 * sigma2)) / z


def discrete_gaussian_mean_abs(sigma2: float) -> float:
    sup = discrete_gaussian_support(math.sqrt(sigma2))
    p = discrete_gaussian_pmf(sup, sigma2)
    return float(np.sum(np.abs(sup) * p))


def discrete_laplace_within(m: int, scale: float) -> float:
    """P(|X| <= m) for the discrete Laplace of ``scale`` (:func:`discrete_laplace_interval`)."""
    return discrete_laplace_interval(-m, m, scale) if m >= 0 else 0.0


#: above this sigma (grid steps) the discrete Gaussian's P(|X| <= m) is the normal law's with a
#: half-step continuity correction: by Poisson summation the two differ by O(exp(-2 pi^2 sigma^2))
#: in the normaliser and O(1/sigma^2) in the partial sum, far below what a target can resolve
_DG_EXACT_SIGMA = 1e4


def discrete_gaussian_within(m: int, sigma2: float) -> float:
    """P(|X| <= m) for the discrete Gaussian (:func:`discrete_gaussian_interval`)."""
    return discrete_gaussian_interval(-m, m, sigma2) if m >= 0 else 0.0


def discrete_laplace_interval(a: int, b: int, scale: float) -> float:
    """P(a <= X <= b) for the discrete Laplace of ``scale`` (its closed-form CDF:
    P(X <= k) = q^-k / (1 + q) for k < 0 and 1 - q^(k+1) / (1 + q) for k >= 0, q = exp(-1/scale))."""
    if b < a:
        return 0.0
    if scale <= 0:
        return 1.0 if a <= 0 <= b else 0.0
    q = math.exp(-1.0 / scale)

    def cdf(k: int) -> float:
        return math.exp(k / scale) / (1.0 + q) if k < 0 else 1.0 - math.exp(-(k + 1) / scale) / (1.0 + q)

    return float(max(0.0, cdf(b) - cdf(a - 1)))


def discrete_gaussian_interval(a: int, b: int, sigma2: float) -> float:
    """P(a <= X <= b) for the discrete Gaussian (its normalised pmf summed; above sigma = 1e4
    grid steps, the normal law with a half-step continuity correction)."""
    if b < a:
        return 0.0
    if sigma2 <= 0:
        return 1.0 if a <= 0 <= b else 0.0
    sigma = math.sqrt(sigma2)
    if sigma > _DG_EXACT_SIGMA:
        z = sigma * math.sqrt(2.0)
        return float(max(0.0, 0.5 * (math.erf((b + 0.5) / z) - math.erf((a - 0.5) / z))))
    sup = discrete_gaussian_support(sigma)
    inside = (sup >= a) & (sup <= b)
    return float(np.sum(discrete_gaussian_pmf(sup[inside], sigma2)))


def worst_offset_within(tolerance: float, step: float, on_grid: bool, interval: Callable[[int, int], float]) -> float:
    """min over the snapping offset u of P(|u + step K| <= tolerance), K the integer noise with
    ``interval(a, b) = P(a <= K <= b)``: a true value x inside the bounds is released as
    ``snap(x) + step K`` with snap(x) - x = u in [-step/2, step/2] (u = 0 when ``on_grid``).  The
    set of K that fit, [ceil((-t - u) / step), floor((t - u) / step)], changes only where u
    crosses t - step j or -t - step j, so the midpoints between those points reach the minimum."""
    t = float(tolerance)

    def prob(u: float) -> float:
        return interval(math.ceil((-t - u) / step - 1e-12), math.floor((t - u) / step + 1e-12))

    if on_grid:
        return prob(0.0)
    half = 0.5 * step
    points = {-half, half}
    j_lo, j_hi = math.floor((-t - half) / step) - 1, math.ceil((t + half) / step) + 1
    for j in range(j_lo, j_hi + 1):
        for b in (t - step * j, -t - step * j):
            if -half < b < half:
                points.add(b)
    ordered = sorted(points)
    return min(prob(0.5 * (lo + hi)) for lo, hi in zip(ordered, ordered[1:], strict=False))


def within_on_grid(
    tolerance: float, step: float, integer: bool, diam_steps: int, interval: Callable[[int, int], float]
) -> float:
    """A grid mechanism's lower bound on P(|released - true| <= ``tolerance``) for a true value
    inside the public bounds (:func:`worst_offset_within`; no snapping for an integer column on a
    grid of whole numbers; 1 when the bounds snap to one point).  Clamping a noisy value back
    into the bounds only moves it closer to a true value inside them, so the bound holds after
    that post-processing too."""
    tol = float(tolerance)
    if not tol >= 0:
        raise ValueError(f"tolerance must be a number >= 0, got {tolerance!r}")
    if diam_steps == 0:
        return 1.0
    return worst_offset_within(tol, step, integer and step == 1.0, interval)


# --------------------------------------------------------------------------------------------
# data-independent grid
# --------------------------------------------------------------------------------------------
class Grid:
    """A grid step·ℤ chosen from the PUBLIC bounds only (never from the data).

    ``step = 2**floor(log2(diam / 2**bits))`` so that [low, high] spans between 2**bits and
    2**(bits+1) steps; a power of two makes ``x / step`` and ``k * step`` exact in float64.
    Integer columns use an integer step (max(1, ...)) so outputs stay integers.
    """

    def __init__(self, low: float, high: float, *, bits: int = 10, integer: bool = False):
        low, high = float(low), float(high)
        if not (math.isfinite(low) and math.isfinite(high)) or not high > low:
            raise ValueError(f"need finite bounds with low < high, got low={low!r}, high={high!r}")
        if not (isinstance(bits, (int, np.integer)) and 0 <= bits <= 40):
            raise ValueError(f"grid bits must be an integer in [0, 40], got {bits!r}")
        diam = high - low
        e = math.floor(math.log2(diam)) - int(bits)
        # guard against log2 rounding: ensure diam / 2**e in [2**bits, 2**(bits+1)); log2 of a finite
        # positive float is off by less than one, so each loop runs at most once
        while diam / 2.0**e >= 2.0 ** (bits + 1):
            e += 1
        while diam / 2.0**e < 2.0**bits:
            e -= 1
        if integer:
            e = max(e, 0)
        self.step = float(2.0**e)
        self.low, self.high = low, high
        self.integer = bool(integer)
        self.k_low = int(np.rint(low / self.step))
        self.k_high = int(np.rint(high / self.step))
        # rint is monotone, so snapped values of [low, high] span exactly this many steps
        self.diam_steps = self.k_high - self.k_low

    def clip(self, values: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], int]:
        """Clip to the public bounds; also return how many values were moved (NOT private)."""
        v = np.asarray(values, dtype=np.float64)
        if np.isnan(v).any():
            raise ValueError("values contain NaN; handle missing values before the mechanism")
        n_clipped = int(np.count_nonzero((v < self.low) | (v > self.high)))
        return np.clip(v, self.low, self.high), n_clipped

    def snap(self, clipped: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """Integer grid index of each (already clipped) value: rint(x / step)."""
        return np.rint(clipped / self.step).astype(np.int64)

    def to_values(self, k: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.float64]:
        return k.astype(np.float64) * self.step
