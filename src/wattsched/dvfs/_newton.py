"""Exact Alg. 1 by Newton steps along the core clock (the ``method="exact"`` engine of :mod:`.solver`).

On the coupling curve the voltage is a function of the core clock ``f``: ``V(f) = s·(f − b)² + o`` (the
inverse of ``g1``). With ``A(f) = p0 + c·V(f)²·f`` (convex increasing for ``f >= b``), ``B(f) = t0 + k/f``
(``k = d·delta``; convex decreasing) and ``C = d·(1 − delta)`` the energy is ``E(f, m) = (A + gamma·m)(B +
C/m)`` for memory clock ``m``, subject to ``m_lo <= m <= m_hi`` and ``B + C/m <= W``. ``E`` is convex in
``m``, so the best ``m`` at ``f`` is ``clip(max(m*, C/(W − B)), m_lo, m_hi)`` with
``m* = sqrt(A·C/(gamma·B))``, and ``E_r(f) = E(f, best m)`` is made of pieces:

* ``m = m*`` (interior): ``E = (sqrt(A·B) + sqrt(gamma·C))²``, whose derivative has the sign of ``(A·B)'``;
  ``A·B`` is convex;
* ``m = m_lo`` or ``m = m_hi``: ``(A + gamma·m)(B + C/m)``, convex;
* ``m = C/(W − B)`` (window binds): ``W·(A + gamma·C/(W − B))``, convex.

``m*`` rises with ``f`` and ``C/(W − B)`` falls, so along ``f`` the binding piece comes first, then
``m_lo``/interior/``m_hi`` in that order. Every join is C¹ (the envelope theorem: ``dE/dm = 0`` there or the
bound on ``m`` is fixed) except where ``C/(W − B)`` falls to ``m_lo`` with ``m* < m_lo``, where ``E_r'`` jumps
up. Hence ``E_r'`` changes sign at most once, from − to +: ``E_r`` is unimodal on the feasible range
``[f_feas, g1(v_max)]`` and the sign of ``E_r'`` brackets its minimiser. Newton steps use the piece's own
second derivative (the ``A·B`` one on the interior piece) and are safeguarded by that bracket; the kink is
settled first from its two one-sided derivatives. Tasks whose window never binds take a faster path: plain
Newton on the piece at the start, accepted when the piece at the result is the same (then it is a
stationary point or a bound of ``E_r``). The scalar twin serves ``solve_one``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from wattsched.dvfs.model import TaskModel
from wattsched.hardware.dvfs import ScalingInterval

__all__ = ["DEADLINE_RTOL", "ExactResult", "exact_arrays", "exact_scalar"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
#: Relative slack on the deadline test, so that a setting solved to meet ``W`` exactly counts as meeting it.
DEADLINE_RTOL = 1e-9
_STEP_TOL = 1e-6  # a task stops after a Newton step below this: f is O(1), its error then ~1e-12
_BRACKET_TOL = 1e-13  # ... or after a bisection step below this
_MAX_STEPS = 60
_PIECE_STEPS = 12  # plain Newton steps on one piece before handing a task to the safeguarded search
_PIECE_ROUNDS = 2  # piece re-guesses before the safeguarded search takes over
_START = 0.67  # start of the Newton search (clipped to the range); typical optima are 0.6-0.8
ExactResult = tuple[FloatArray, FloatArray, FloatArray, BoolArray]


@lru_cache(maxsize=16)
def _curve(interval: ScalingInterval) -> _Curve:
    return _Curve(interval)


class _Curve:
    """Interval constants: ``V(f) = s (f − b)² + o`` on ``[f_lo, f_hi]``, memory clock in ``[m_lo, m_hi]``."""

    def __init__(self, interval: ScalingInterval) -> None:
        cp = interval.coupling
        self.s, self.b, self.o = cp.scale, cp.base, cp.offset
        self.f_lo = max(interval.f_core_min, math.sqrt(max((interval.v_min - self.o) / self.s, 0.0)) + self.b)
        self.f_hi = interval.f_core_max_at_top
        self.v_max = interval.v_max
        self.m_lo, self.m_hi = interval.f_mem_min, interval.f_mem_max


class _Tasks:
    """Per-task constants of a (sub)set of tasks, flat float arrays; ``deadline``: some window may bind."""

    __slots__ = ("c", "cm", "deadline", "gamma", "k", "p0", "ratio", "t0", "w")

    def __init__(self, *columns: FloatArray, deadline: bool = True) -> None:
        self.p0, self.gamma, self.c, self.t0, self.k, self.cm, self.ratio, self.w = columns
        self.deadline = deadline

    def take(self, idx: npt.NDArray[np.intp], deadline: bool | None = None) -> _Tasks:
        cols = (self.p0, self.gamma, self.c, self.t0, self.k, self.cm, self.ratio, self.w)
        return _Tasks(*(x[idx] for x in cols), deadline=self.deadline if deadline is None else deadline)


def _derivs(cv: _Curve, t: _Tasks, f: FloatArray) -> tuple[FloatArray, FloatArray]:
    """A Newton pair ``(g', g'')`` for the best-memory-clock energy ``E_r(f)``: ``g'`` has the sign of
    ``E_r'`` and ``g'/g''`` is the Newton step of the piece ``f`` lies on (interior ``m*``: ``A·B``)."""
    u = f - cv.b
    v = cv.s * u * u + cv.o
    v1 = (2.0 * cv.s) * u
    vf = v * f
    a = t.p0 + t.c * (v * vf)
    a1 = t.c * (v * (2.0 * v1 * f + v))
    a2 = t.c * (2.0 * v1 * (v1 * f + 2.0 * v) + (4.0 * cv.s) * vf)
    inv = 1.0 / f
    b = t.t0 + t.k * inv
    b1 = -t.k * inv * inv
    b2 = -2.0 * b1 * inv
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m_star = np.sqrt(a * t.ratio / b)
    m = np.fmin(np.fmax(m_star, cv.m_lo), cv.m_hi)  # nan (0/0: energy ignores f_mem) -> m_lo
    clipped = m != m_star
    alpha = np.where(clipped, t.gamma * m, 0.0)
    beta = np.where(clipped, t.cm / m, 0.0)
    bb = b + beta
    aa = a + alpha
    g1 = a1 * bb + aa * b1
    g2 = a2 * bb + 2.0 * a1 * b1 + aa * b2
    if t.deadline:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = 1.0 / (t.w - b)  # > 0 on the feasible range (inf where the window just fits)
        m_req = t.cm * r
        active = m_req > np.maximum(m_star, cv.m_lo)
        q = t.gamma * t.cm * r * r
        g1 = np.where(active, a1 + q * b1, g1)
        g2 = np.where(active, a2 + q * (b2 + 2.0 * b1 * b1 * r), g2)
    return g1, g2


def _newton(
    cv: _Curve,
    t: _Tasks,
    lo: FloatArray,
    hi: FloatArray,
    x: FloatArray,
    lo_seen: BoolArray,
    hi_seen: BoolArray,
) -> FloatArray:
    """Minimiser of the unimodal ``E_r`` over ``[lo, hi]`` from start ``x``: Newton steps kept in a sign
    bracket (a step out of it towards a probed bound bisects). Converged tasks drop out of the arrays."""
    out = x.copy()
    act = np.arange(x.size)
    for it in range(_MAX_STEPS):
        g1, g2 = _derivs(cv, t, x)
        up = g1 > 0.0
        hi = np.where(up, x, hi)
        lo = np.where(up, lo, x)
        hi_seen = hi_seen | up
        lo_seen = lo_seen | ~up
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            nxt = x - g1 / g2
        stuck = ((nxt < lo) & lo_seen) | ((nxt > hi) & hi_seen)
        nxt = np.where(stuck, 0.5 * (lo + hi), np.fmin(np.fmax(nxt, lo), hi))
        # a Newton step of size h leaves an error ~h² (quadratic convergence); bisection steps need h itself
        moving = np.abs(nxt - x) > np.where(stuck, _BRACKET_TOL, _STEP_TOL)
        x = nxt
        if it < 2:
            continue
        keep = np.flatnonzero(moving)
        if keep.size == x.size:
            continue
        out[act] = x
        if not keep.size:
            break
        act, x, lo, hi, lo_seen, hi_seen = (
            act[keep],
            x[keep],
            lo[keep],
            hi[keep],
            lo_seen[keep],
            hi_seen[keep],
        )
        t = t.take(keep)
    else:
        out[act] = x
    return out


def _piece(cv: _Curve, t: _Tasks, f: FloatArray) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int8]]:
    """The window-free piece of ``E_r`` at ``f``: ``(alpha, beta, code)`` with ``E = (A + alpha)(B + beta)``
    locally, ``code`` 0 interior ``m*`` (``alpha = beta = 0``: minimise ``A·B``), 1 ``m_lo``, 2 ``m_hi``."""
    u = f - cv.b
    v = cv.s * u * u + cv.o
    a = t.p0 + t.c * v * v * f
    b = t.t0 + t.k / f
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m_star = np.sqrt(a * t.ratio / b)
    code = np.where(m_star > cv.m_hi, 2, np.where(m_star < cv.m_lo, 1, 0)).astype(np.int8)
    code[np.isnan(m_star)] = 1
    m = np.where(code == 2, cv.m_hi, cv.m_lo)
    clipped = code != 0
    return np.where(clipped, t.gamma * m, 0.0), np.where(clipped, t.cm / m, 0.0), code


def _piece_newton(
    cv: _Curve, t: _Tasks, lo: FloatArray, hi: FloatArray, x: FloatArray, alpha: FloatArray, beta: FloatArray
) -> tuple[FloatArray, BoolArray]:
    """Plain Newton (clipped to ``[lo, hi]``) on the convex ``(A + alpha)(B + beta)``; and which converged."""
    out = x.copy()
    done = np.zeros(x.size, bool)
    act = np.arange(x.size)
    p0, c, t0, k = t.p0 + alpha, t.c, t.t0 + beta, t.k
    s2, s4 = 2.0 * cv.s, 4.0 * cv.s
    for _ in range(_PIECE_STEPS):
        u = x - cv.b
        v = cv.s * u * u + cv.o
        v1 = s2 * u
        vf = v * x
        a = p0 + c * (v * vf)
        a1 = c * (v * (2.0 * v1 * x + v))
        a2 = c * (2.0 * v1 * (v1 * x + 2.0 * v) + s4 * vf)
        inv = 1.0 / x
        kb = k * inv
        b = t0 + kb
        b1 = -kb * inv
        g1 = a1 * b + a * b1
        g2 = a2 * b + 2.0 * b1 * (a1 - a * inv)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            nxt = np.fmin(np.fmax(x - g1 / g2, lo), hi)
        moving = np.abs(nxt - x) > _STEP_TOL
        x = nxt
        keep = np.flatnonzero(moving)
        if keep.size == x.size:
            continue
        out[act] = x
        done[act[~moving]] = True
        if not keep.size:
            break
        act, x, lo, hi = act[keep], x[keep], lo[keep], hi[keep]
        p0, c, t0, k = p0[keep], c[keep], t0[keep], k[keep]
    else:
        out[act] = x
    return out, done


def _solve_free(cv: _Curve, t: _Tasks, lo: FloatArray, hi: FloatArray, x: FloatArray) -> FloatArray:
    """Minimiser of ``E_r`` for tasks whose window never binds: Newton on the piece at the start, kept when
    the piece at the result is the same (then ``E_r'`` there has the sign of the piece's derivative, and
    ``E_r`` is unimodal); the rest by the general safeguarded search."""
    out = x.copy()
    act = np.arange(x.size)
    for _ in range(_PIECE_ROUNDS):
        alpha, beta, code = _piece(cv, t, x)
        x, done = _piece_newton(cv, t, lo, hi, x, alpha, beta)
        out[act] = x
        ok = done & (_piece(cv, t, x)[2] == code)
        keep = np.flatnonzero(~ok)
        if not keep.size:
            return out
        act, x, lo, hi, t = act[keep], x[keep], lo[keep], hi[keep], t.take(keep)
    none = np.zeros(act.size, bool)
    out[act] = _newton(cv, t, lo, hi, x, none, none.copy())
    return out


def _best_mem(cv: _Curve, t: _Tasks, f: FloatArray) -> FloatArray:
    """Best window-meeting memory clock at core clock ``f``: ``clip(max(m*, C/(W − B)), m_lo, m_hi)``."""
    u = f - cv.b
    v = cv.s * u * u + cv.o
    a = t.p0 + t.c * v * v * f
    b = t.t0 + t.k / f
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m_opt = np.sqrt(a * t.cm / (t.gamma * b))  # nan (0/0: energy ignores f_mem) -> m_lo below
        m_req = np.where(t.cm > 0, t.cm / np.maximum(t.w - b, 1e-300), 0.0)
    return np.fmin(np.fmax(np.fmax(m_opt, m_req), cv.m_lo), cv.m_hi)


def _mem_star(cv: _Curve, t: _Tasks, f: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Unconstrained best memory clock ``m*(f)`` (inf when gamma = 0 < C) and the window's ``C/(W − B)``."""
    u = f - cv.b
    v = cv.s * u * u + cv.o
    a = t.p0 + t.c * v * v * f
    b = t.t0 + t.k / f
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m_opt = np.sqrt(a * t.ratio / b)
        m_req = np.where(t.cm > 0, t.cm / np.maximum(t.w - b, 1e-300), 0.0)
    return np.where(np.isnan(m_opt), 0.0, m_opt), m_req


def _core_bound(t: _Tasks, mem: float, cv: _Curve) -> FloatArray:
    """Lowest core clock in ``[f_lo, inf)`` with ``B(f) + C/mem <= W`` (``inf``: none)."""
    slack = t.w - t.t0 - t.cm / mem
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        need = np.where(t.k > 0, t.k / np.maximum(slack, 1e-300), 0.0)
    need = np.where((slack > 0) | ((t.k == 0) & (slack >= -DEADLINE_RTOL * t.w)), need, np.inf)
    return np.maximum(need, cv.f_lo)


def exact_arrays(model: TaskModel, window: FloatArray, interval: ScalingInterval) -> ExactResult:
    """``(v, f_core, f_mem, feasible)`` per task: the exact constrained optimum (fastest setting if none)."""
    cv = _curve(interval)
    delta, gamma = model.delta, model.gamma_w
    cm = model.d_s * (1.0 - delta)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(cm > 0, cm / gamma, 0.0)  # C / gamma: m*² = A·ratio/B (inf when gamma = 0 < C)
    t = _Tasks(model.p0_w, gamma, model.c_w, model.t0_s, model.d_s * delta, cm, ratio, window)
    n = len(model)
    # feasible iff the fastest setting meets the window (same tolerance as the deadline test)
    f_feas = _core_bound(t, cv.m_hi, cv)
    feasible = f_feas <= cv.f_hi * (1.0 + DEADLINE_RTOL)
    lo = np.minimum(f_feas, cv.f_hi)
    hi = np.full(n, cv.f_hi)
    f = np.where(feasible, np.minimum(np.maximum(_START, lo), hi), cv.f_hi)
    # the window can bind somewhere iff it binds at the left end (C/(W − B) falls, m* rises with f)
    m_star, m_req = _mem_star(cv, t, lo)
    binds = feasible & (m_req > np.maximum(m_star, cv.m_lo))
    groups = [(np.flatnonzero(feasible & ~binds), False), (np.flatnonzero(binds), True)]
    for idx, deadline in groups:
        if not idx.size:
            continue
        sub = t.take(idx, deadline)
        glo, ghi, gx = lo[idx], hi[idx], f[idx]
        lo_seen = np.zeros(idx.size, bool)
        hi_seen = np.zeros(idx.size, bool)
        if deadline:
            _split_at_kink(cv, sub, glo, ghi, gx, lo_seen, hi_seen)
        if deadline:
            f[idx] = _newton(cv, sub, glo, ghi, gx, lo_seen, hi_seen)
        else:
            f[idx] = _solve_free(cv, sub, glo, ghi, gx)
    mem = np.where(feasible, _best_mem(cv, t, f), cv.m_hi)
    u = f - cv.b
    v_out = np.where(feasible, np.minimum(cv.s * u * u + cv.o, cv.v_max), cv.v_max)
    return v_out, f, mem, feasible


def _split_at_kink(
    cv: _Curve,
    t: _Tasks,
    lo: FloatArray,
    hi: FloatArray,
    x: FloatArray,
    lo_seen: BoolArray,
    hi_seen: BoolArray,
) -> None:
    """Narrow the brackets (in place) to one side of the kink where ``C/(W − B)`` falls to ``m_lo`` with
    ``m* < m_lo``: there ``E_r'`` jumps up, so the one-sided derivatives tell the side (or the kink is it)."""
    f_k = _core_bound(t, cv.m_lo, cv)
    inside = (f_k > lo) & (f_k < hi)
    if not inside.any():
        return
    fk = np.where(inside, f_k, hi)
    u = fk - cv.b
    v = cv.s * u * u + cv.o
    v1 = (2.0 * cv.s) * u
    a = t.p0 + t.c * v * v * fk
    a1 = t.c * (v * (2.0 * v1 * fk + v))
    inv = 1.0 / fk
    b = t.t0 + t.k * inv
    b1 = -t.k * inv * inv
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m_star = np.sqrt(a * t.ratio / b)
    inside &= m_star < cv.m_lo
    right = a1 * (b + t.cm / cv.m_lo) + (a + t.gamma * cv.m_lo) * b1  # m = m_lo
    r = 1.0 / (t.w - b)
    left = a1 + t.gamma * t.cm * r * r * b1  # m = C/(W − B), derivative / W
    go_right = inside & (right < 0.0)
    go_left = inside & (left > 0.0) & ~go_right
    at_kink = inside & ~go_right & ~go_left
    lo[:] = np.where(go_right | at_kink, fk, lo)
    hi[:] = np.where(go_left | at_kink, fk, hi)
    lo_seen |= go_right | at_kink
    hi_seen |= go_left | at_kink
    x[:] = np.minimum(np.maximum(x, lo), hi)


def _scalar_derivs(cv: _Curve, p: tuple[float, ...], f: float) -> tuple[float, float]:
    """Scalar twin of :func:`_derivs` for one task ``p = (p0, gamma, c, t0, k, C, ratio, W)``."""
    p0, gamma, c, t0, k, cm, ratio, w = p
    u = f - cv.b
    v = cv.s * u * u + cv.o
    v1 = 2.0 * cv.s * u
    vf = v * f
    a = p0 + c * (v * vf)
    a1 = c * (v * (2.0 * v1 * f + v))
    a2 = c * (2.0 * v1 * (v1 * f + 2.0 * v) + 4.0 * cv.s * vf)
    inv = 1.0 / f
    b = t0 + k * inv
    b1 = -k * inv * inv
    b2 = -2.0 * b1 * inv
    m_star = _sqrt_ratio(a * ratio, b)
    if cm > 0.0 and w < math.inf:
        r = 1.0 / (w - b) if w > b else math.inf  # w = b: the window just fits (a tolerance made it feasible)
        if cm * r > max(m_star, cv.m_lo):  # the window binds: m = C/(W − B)
            q = gamma * cm * r * r
            return a1 + q * b1, a2 + q * (b2 + 2.0 * b1 * b1 * r)
    if cv.m_lo <= m_star <= cv.m_hi:
        return a1 * b + a * b1, a2 * b + 2.0 * a1 * b1 + a * b2
    m = cv.m_hi if m_star >= cv.m_hi else cv.m_lo
    aa, bb = a + gamma * m, b + cm / m
    return a1 * bb + aa * b1, a2 * bb + 2.0 * a1 * b1 + aa * b2


def _sqrt_ratio(num: float, den: float) -> float:
    """``sqrt(num / den)`` with ``x/0 = inf`` and ``0/0 = 0`` (then the energy ignores the memory clock)."""
    if den > 0.0:
        return math.sqrt(num / den) if num < math.inf else math.inf
    return math.inf if num > 0.0 else 0.0


def _scalar_bound(p: tuple[float, ...], mem: float, cv: _Curve) -> float:
    """Scalar twin of :func:`_core_bound`."""
    _, _, _, t0, k, cm, _, w = p
    slack = w - t0 - cm / mem
    if k > 0.0:
        need = k / slack if slack > 0.0 else math.inf
    else:
        need = 0.0 if slack >= -DEADLINE_RTOL * w else math.inf
    return max(need, cv.f_lo)


def exact_scalar(
    interval: ScalingInterval, p0: float, gamma: float, c: float, t0: float, d: float, delta: float, w: float
) -> tuple[float, float, float, bool]:
    """Scalar twin of :func:`exact_arrays` for one task: ``(v, f_core, f_mem, feasible)``."""
    cv = _curve(interval)
    cm, k = d * (1.0 - delta), d * delta
    ratio = (cm / gamma if gamma > 0.0 else math.inf) if cm > 0.0 else 0.0
    p = (p0, gamma, c, t0, k, cm, ratio, w)
    f_feas = _scalar_bound(p, cv.m_hi, cv)
    if not f_feas <= cv.f_hi * (1.0 + DEADLINE_RTOL):
        return cv.v_max, cv.f_hi, cv.m_hi, False
    lo, hi = min(f_feas, cv.f_hi), cv.f_hi
    lo_seen = hi_seen = False
    if cm > 0.0 and w < math.inf:
        a = p0 + c * _v_of(cv, lo) ** 2 * lo
        b = t0 + k / lo
        if cm / max(w - b, 1e-300) > max(_sqrt_ratio(a * ratio, b), cv.m_lo):
            lo, hi, lo_seen, hi_seen = _scalar_kink(cv, p, lo, hi)
    x = min(max(_START, lo), hi)
    for _ in range(_MAX_STEPS):
        g1, g2 = _scalar_derivs(cv, p, x)
        if g1 > 0.0:
            hi, hi_seen = x, True
        else:
            lo, lo_seen = x, True
        nxt = x - g1 / g2 if g2 != 0.0 else x
        stuck = (nxt < lo and lo_seen) or (nxt > hi and hi_seen)
        nxt = 0.5 * (lo + hi) if stuck else min(max(nxt, lo), hi)  # min/max also map nan to a bound
        step, x = abs(nxt - x), nxt
        if step <= (_BRACKET_TOL if stuck else _STEP_TOL):
            break
    return min(_v_of(cv, x), cv.v_max), x, _scalar_mem(cv, p, x), True


def _v_of(cv: _Curve, f: float) -> float:
    u = f - cv.b
    return cv.s * u * u + cv.o


def _scalar_mem(cv: _Curve, p: tuple[float, ...], f: float) -> float:
    """Best window-meeting memory clock at core clock ``f`` (scalar twin of :func:`_best_mem`)."""
    p0, gamma, c, t0, k, cm, _, w = p
    a = p0 + c * _v_of(cv, f) ** 2 * f
    b = t0 + k / f
    m_opt = _sqrt_ratio(a * cm, gamma * b)
    m_req = cm / max(w - b, 1e-300) if cm > 0.0 else 0.0
    return min(max(m_opt, m_req, cv.m_lo), cv.m_hi)


def _scalar_kink(cv: _Curve, p: tuple[float, ...], lo: float, hi: float) -> tuple[float, float, bool, bool]:
    """Scalar twin of :func:`_split_at_kink`: ``(lo, hi, lo_seen, hi_seen)``."""
    p0, gamma, c, t0, k, cm, ratio, w = p
    fk = _scalar_bound(p, cv.m_lo, cv)
    if not lo < fk < hi:
        return lo, hi, False, False
    u = fk - cv.b
    v = cv.s * u * u + cv.o
    v1 = 2.0 * cv.s * u
    a = p0 + c * v * v * fk
    a1 = c * (v * (2.0 * v1 * fk + v))
    inv = 1.0 / fk
    b = t0 + k * inv
    b1 = -k * inv * inv
    if not _sqrt_ratio(a * ratio, b) < cv.m_lo:
        return lo, hi, False, False
    if a1 * (b + cm / cv.m_lo) + (a + gamma * cv.m_lo) * b1 < 0.0:
        return fk, hi, True, False
    r = 1.0 / (w - b) if w > b else math.inf
    if a1 + gamma * cm * r * r * b1 > 0.0:
        return lo, fk, False, True
    return fk, fk, True, True
