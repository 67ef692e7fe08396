"""Algorithm 1 of P2: the minimum-energy V/f setting of each task under a time window, vectorised over tasks.

``method="exact"`` (default) is the constrained optimum, found by safeguarded Newton steps along the core
clock on the coupling curve (:mod:`wattsched.dvfs._newton` has the derivation): the energy with the best
window-meeting memory clock is unimodal in ``f_core`` (P2 Alg. 1).

``method="grid"`` is the previous exact search, kept for cross-checks: for a fixed core voltage ``V`` the core
clock sits on ``f_core = g1(V)`` and ``f_mem(V)`` is closed-form, so every task's feasible voltage range
``[v_start, v_max]`` gets a uniform grid and the best cell is refined by golden-section search.

``method="hkbu"`` reproduces the authors' code: 16 grid voltages, closed-form ``f_mem`` clipped to its
bounds, and (when the deadline is enforced) only grid points with ``T <= W`` kept. A window no setting meets
yields the fastest setting with ``feasible = False``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from wattsched.dvfs._newton import DEADLINE_RTOL, exact_arrays, exact_scalar
from wattsched.dvfs.model import TaskModel
from wattsched.errors import ConfigError
from wattsched.hardware.dvfs import HkbuGrid, ScalingInterval

__all__ = ["METHODS", "Settings", "default_settings", "fastest_time_s", "solve", "solve_one"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
METHODS: tuple[str, ...] = ("exact", "hkbu", "grid")
_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0
_CHUNK = 4096  # grid method: (tasks x grid) temporaries stay in L2
_EXACT_CHUNK = 16384  # Newton method: measured best (its flat temporaries stay near L2)


@dataclass(frozen=True, eq=False)
class Settings:
    """One V/f setting per task, with its time, power and energy, and whether it meets the window."""

    v: FloatArray
    f_core: FloatArray
    f_mem: FloatArray
    time_s: FloatArray
    power_w: FloatArray
    energy_j: FloatArray
    feasible: BoolArray

    def __len__(self) -> int:
        return int(self.v.size)

    def take(self, index: Any) -> Settings:
        return Settings(*(np.atleast_1d(getattr(self, f.name)[index]) for f in fields(self)))


def _settings(
    model: TaskModel, v: FloatArray, fc: FloatArray, fm: FloatArray, window: FloatArray
) -> Settings:
    time = model.time_s(fc, fm)
    power = model.power_w(v, fc, fm)
    feasible = time <= window * (1.0 + DEADLINE_RTOL)
    return Settings(v, fc, fm, time, power, power * time, feasible)


def default_settings(model: TaskModel, window_s: Any = np.inf) -> Settings:
    """DVFS off: every task at the default setting (1, 1, 1)."""
    ones = np.ones(len(model))
    return _settings(
        model, ones, ones.copy(), ones.copy(), np.broadcast_to(np.asarray(window_s, float), ones.shape)
    )


def fastest_time_s(model: TaskModel, interval: ScalingInterval) -> FloatArray:
    """``t_min``: the time at ``(v_max, g1(v_max), f_mem_max)``."""
    return model.time_s(interval.f_core_max_at_top, interval.f_mem_max)


class _Problem:
    """Per-task constants as column vectors, so that voltages may be ``(n,)`` or ``(n, k)``."""

    def __init__(self, model: TaskModel, window: FloatArray, interval: ScalingInterval, col: bool) -> None:
        shape = (-1, 1) if col else (-1,)
        self.p0 = model.p0_w.reshape(shape)
        self.gamma = model.gamma_w.reshape(shape)
        self.c = model.c_w.reshape(shape)
        self.t0 = model.t0_s.reshape(shape)
        self.d_core = (model.d_s * model.delta).reshape(shape)
        self.c_mem = (model.d_s * (1.0 - model.delta)).reshape(shape)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(model.d_s * (1.0 - model.delta) > 0, self.c_mem.ravel() / model.gamma_w, 0.0)
        self.mem_ratio = ratio.reshape(shape)  # C / gamma (inf when gamma = 0 < C, 0 when C = 0)
        self.window = window.reshape(shape)
        self.coupling = interval.coupling
        self.fm_min = interval.f_mem_min
        self.fm_max = interval.f_mem_max

    def evaluate(self, v: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(f_core, f_mem, energy)`` at voltages ``v``, best window-meeting ``f_mem`` (inf: none)."""
        cp = self.coupling
        fc = np.sqrt((v - cp.offset) / cp.scale) + cp.base
        a = self.p0 + self.c * v * v * fc
        b = self.t0 + self.d_core / fc
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            fm_opt = np.sqrt(a * self.mem_ratio / b)  # b = 0 (no core-bound time) gives inf: clipped below
        fm_opt = np.where(np.isnan(fm_opt), self.fm_min, fm_opt)
        room = self.window - b
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            fm_req = np.where(self.c_mem > 0, self.c_mem / np.maximum(room, 1e-300), 0.0)
        ok = (room >= -DEADLINE_RTOL * self.window) & (fm_req <= self.fm_max * (1.0 + DEADLINE_RTOL))
        fm = np.minimum(np.maximum(np.maximum(fm_opt, fm_req), self.fm_min), self.fm_max)
        energy = (a + self.gamma * fm) * (b + self.c_mem / fm)
        return fc, fm, np.where(ok, energy, np.inf)


def _start_voltage(
    model: TaskModel, window: FloatArray, interval: ScalingInterval
) -> tuple[FloatArray, BoolArray]:
    """Lowest voltage meeting the window at full memory clock, and whether any setting meets it."""
    slack = window - model.t0_s - model.d_s * (1.0 - model.delta) / interval.f_mem_max
    d_core = model.d_s * model.delta
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fc_need = np.where(d_core > 0, d_core / np.maximum(slack, 1e-300), 0.0)
    top = interval.f_core_max_at_top
    feasible = (slack > 0) | ((slack >= -DEADLINE_RTOL * window) & (d_core == 0))
    feasible &= fc_need <= top * (1.0 + DEADLINE_RTOL)
    v_need = interval.coupling.v_min_for(np.minimum(fc_need, top))
    v_start = np.clip(np.maximum(v_need, interval.v_low), interval.v_low, interval.v_max)
    return np.asarray(v_start, float), np.asarray(feasible, bool)


def _solve_exact(
    model: TaskModel, window: FloatArray, interval: ScalingInterval, grid_points: int, iterations: int
) -> Settings:
    n = len(model)
    v_start, feasible = _start_voltage(model, window, interval)
    problem = _Problem(model, window, interval, col=True)
    steps = np.linspace(0.0, 1.0, grid_points)
    grid = v_start[:, None] + (interval.v_max - v_start)[:, None] * steps[None, :]
    energy = problem.evaluate(grid)[2]
    best = np.argmin(energy, axis=1)
    rows = np.arange(n)
    lo = grid[rows, np.maximum(best - 1, 0)]
    hi = grid[rows, np.minimum(best + 1, grid_points - 1)]
    flat = _Problem(model, window, interval, col=False)
    v_ref = _golden_section(flat, lo, hi, iterations)
    e_ref = flat.evaluate(v_ref)[2]
    v_grid = grid[rows, best]
    v = np.where(e_ref < energy[rows, best], v_ref, v_grid)
    fc, fm, _ = flat.evaluate(v)
    top = interval.f_core_max_at_top
    v = np.where(feasible, v, interval.v_max)
    fc = np.where(feasible, fc, top)
    fm = np.where(feasible, fm, interval.f_mem_max)
    return _settings(model, v, fc, fm, window)


def _golden_section(problem: _Problem, lo: FloatArray, hi: FloatArray, iterations: int) -> FloatArray:
    a, b = lo.copy(), hi.copy()
    x1 = b - _GOLDEN * (b - a)
    x2 = a + _GOLDEN * (b - a)
    e1 = problem.evaluate(x1)[2]
    e2 = problem.evaluate(x2)[2]
    for _ in range(iterations):
        left = e1 <= e2
        # left: keep [a, x2]; the old x1 becomes the new x2 and a new x1 is probed.
        # right: keep [x1, b]; the old x2 becomes the new x1 and a new x2 is probed.
        b = np.where(left, x2, b)
        a = np.where(left, a, x1)
        probe = np.where(left, b - _GOLDEN * (b - a), a + _GOLDEN * (b - a))
        e_probe = problem.evaluate(probe)[2]
        new_x1 = np.where(left, probe, x2)
        new_x2 = np.where(left, x1, probe)
        new_e1 = np.where(left, e_probe, e2)
        new_e2 = np.where(left, e1, e_probe)
        x1, x2, e1, e2 = new_x1, new_x2, new_e1, new_e2
    return np.where(e1 <= e2, x1, x2)


def _solve_hkbu(
    model: TaskModel, window: FloatArray, interval: ScalingInterval, grid: HkbuGrid, enforce_deadline: bool
) -> Settings:
    voltages = grid.voltages()
    cp = interval.coupling
    v = np.broadcast_to(voltages[None, :], (len(model), voltages.size))
    fc = np.sqrt((v - cp.offset) / cp.scale) + cp.base
    problem = _Problem(model, np.full(len(model), np.inf), interval, col=True)
    a = problem.p0 + problem.c * v * v * fc
    b = problem.t0 + problem.d_core / fc
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fm_opt = np.sqrt(a * problem.mem_ratio / b)
    fm = np.clip(
        np.where(np.isnan(fm_opt), interval.f_mem_min, fm_opt), interval.f_mem_min, interval.f_mem_max
    )
    time = b + problem.c_mem / fm
    energy = (a + problem.gamma * fm) * time
    if enforce_deadline:
        energy = np.where(time <= window[:, None] * (1.0 + DEADLINE_RTOL), energy, np.inf)
    best = np.argmin(energy, axis=1)
    rows = np.arange(len(model))
    any_ok = np.isfinite(energy[rows, best])
    v_top = float(voltages[-1])
    fc_top = float(cp.f_core_max(v_top))
    v_out = np.where(any_ok, v[rows, best], v_top)
    fc_out = np.where(any_ok, fc[rows, best], fc_top)
    fm_out = np.where(any_ok, fm[rows, best], interval.f_mem_max)
    return _settings(model, v_out, fc_out, fm_out, window)


def _chunked(
    model: TaskModel, window: FloatArray, interval: ScalingInterval, grid_points: int, iterations: int
) -> Settings:
    """Solve in cache-sized chunks: the (tasks x grid) temporaries then stay in L2."""
    if len(model) <= _CHUNK:
        return _solve_exact(model, window, interval, grid_points, iterations)
    parts = [
        _solve_exact(
            model.take(slice(s, s + _CHUNK)), window[s : s + _CHUNK], interval, grid_points, iterations
        )
        for s in range(0, len(model), _CHUNK)
    ]
    return Settings(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Settings)))


def solve(
    model: TaskModel,
    window_s: Any,
    interval: ScalingInterval,
    *,
    method: str = "exact",
    hkbu_grid: HkbuGrid | None = None,
    enforce_deadline: bool = True,
    grid_points: int = 16,
    iterations: int = 28,
) -> Settings:
    """Alg. 1 for every task of ``model`` with time windows ``window_s`` (s; scalar or per task;
    ``inf`` = none).

    ``method="exact"`` is the constrained optimum in ``interval``; ``"grid"`` the same by the older grid and
    golden-section search over ``V`` (``grid_points``, ``iterations``; for cross-checks); ``"hkbu"`` the
    authors' 16-point grid (``hkbu_grid``, default 0.5..1.25 step 0.05) that, with
    ``enforce_deadline=False``, ignores the window like their initial solve.
    """
    window = np.ascontiguousarray(np.broadcast_to(np.asarray(window_s, dtype=float), (len(model),)))
    if len(model) == 0:
        empty = np.zeros(0)
        return Settings(empty, empty, empty, empty, empty, empty, np.zeros(0, bool))
    if method in ("exact", "grid"):
        search = window if enforce_deadline else np.full(len(model), np.inf)
        if method == "grid":
            found = _chunked(model, search, interval, max(grid_points, 3), iterations)
            if enforce_deadline:
                return found
            return _settings(model, found.v, found.f_core, found.f_mem, window)
        # Extreme but valid parameters (subnormal or 1e12-sized) reach inf/0 in the Newton search by design;
        # its clamps map them to bounds and the results are checked with the deadline test below.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            parts = [
                exact_arrays(model.take(slice(s, s + _EXACT_CHUNK)), search[s : s + _EXACT_CHUNK], interval)
                if len(model) > _EXACT_CHUNK
                else exact_arrays(model, search, interval)
                for s in range(0, len(model), _EXACT_CHUNK)
            ]
        v, fc, fm = (np.concatenate([part[j] for part in parts]) for j in range(3))
        return _settings(model, v, fc, fm, window)
    if method == "hkbu":
        return _solve_hkbu(model, window, interval, hkbu_grid or HkbuGrid(), enforce_deadline)
    raise ConfigError(f"unknown Alg. 1 method '{method}'; valid: {', '.join(METHODS)}")


def _scalar_energy(p: tuple[float, ...], v: float, window: float) -> tuple[float, float, float]:
    """Scalar twin of :meth:`_Problem.evaluate` for one task: ``(f_core, f_mem, energy)``.

    ``p`` = ``(p0, gamma, c, t0, d·delta, d·(1−delta), C/gamma, offset, scale, base, f_mem_min, f_mem_max)``.
    """
    p0, gamma, c, t0, d_core, c_mem, ratio, offset, scale, base, fm_min, fm_max = p
    fc = math.sqrt(max((v - offset) / scale, 0.0)) + base
    a = p0 + c * v * v * fc
    b = t0 + d_core / fc
    fm_opt = math.sqrt(a * ratio / b) if (ratio < math.inf and b > 0) else (math.inf if ratio > 0 else fm_min)
    room = window - b
    fm_req = c_mem / max(room, 1e-300) if c_mem > 0 else 0.0
    if room < -DEADLINE_RTOL * window or fm_req > fm_max * (1.0 + DEADLINE_RTOL):
        return fc, fm_max, math.inf
    fm = min(max(fm_opt, fm_req, fm_min), fm_max)
    return fc, fm, (a + gamma * fm) * (b + c_mem / fm)


def solve_one(
    model: TaskModel,
    index: int,
    window_s: float,
    interval: ScalingInterval,
    *,
    method: str = "exact",
    hkbu_grid: HkbuGrid | None = None,
    grid_points: int = 16,
    iterations: int = 28,
) -> tuple[float, float, float, float, float, bool]:
    """Alg. 1 for task ``index`` alone in plain floats (the re-solve inside packing loops).

    Returns ``(v, f_core, f_mem, time_s, power_w, feasible)``; same search as :func:`solve`.
    """
    i = int(index)
    p0, gamma, c = float(model.p0_w[i]), float(model.gamma_w[i]), float(model.c_w[i])
    t0, d, delta = float(model.t0_s[i]), float(model.d_s[i]), float(model.delta[i])
    if method == "exact":
        v, fc, fm, _ = exact_scalar(interval, p0, gamma, c, t0, d, delta, window_s)
        t = t0 + d * (delta / fc + (1.0 - delta) / fm)
        power = p0 + gamma * fm + c * v * v * fc
        return v, fc, fm, t, power, t <= window_s * (1.0 + DEADLINE_RTOL)
    if method not in METHODS:
        raise ConfigError(f"unknown Alg. 1 method '{method}'; valid: {', '.join(METHODS)}")
    c_mem, d_core = d * (1.0 - delta), d * delta
    ratio = (c_mem / gamma if gamma > 0 else math.inf) if c_mem > 0 else 0.0
    iv = interval
    cp = iv.coupling
    params = (
        p0,
        gamma,
        c,
        t0,
        d_core,
        c_mem,
        ratio,
        cp.offset,
        cp.scale,
        cp.base,
        iv.f_mem_min,
        iv.f_mem_max,
    )
    if method == "hkbu":
        grid = hkbu_grid or HkbuGrid()
        candidates = [float(v) for v in grid.voltages()]
        iv = (
            ScalingInterval(
                iv.name, grid.v_min, max(candidates), iv.f_core_min, iv.f_mem_min, iv.f_mem_max, iv.coupling
            )
            if candidates[-1] > iv.v_max
            else iv
        )
        best = (math.inf, 0.0, 0.0, 0.0)
        for v in candidates:
            fc = float(iv.coupling.f_core_max(v))
            a, b = p0 + c * v * v * fc, t0 + d_core / fc
            fm_opt = (
                math.sqrt(a * ratio / b) if (ratio < math.inf and b > 0) else (math.inf if ratio > 0 else 0.0)
            )
            fm = min(max(fm_opt, iv.f_mem_min), iv.f_mem_max)
            t = b + c_mem / fm
            e = (a + gamma * fm) * t
            if t <= window_s * (1.0 + DEADLINE_RTOL) and e < best[0]:
                best = (e, v, fc, fm)
        v_top = candidates[-1]
        if best[0] == math.inf:
            best = (math.inf, v_top, float(iv.coupling.f_core_max(v_top)), iv.f_mem_max)
    else:
        slack = window_s - t0 - c_mem / iv.f_mem_max
        top = math.sqrt((iv.v_max - cp.offset) / cp.scale) + cp.base
        fc_need = d_core / max(slack, 1e-300) if d_core > 0 else 0.0
        ok = (slack > 0 or (d_core == 0 and slack >= -DEADLINE_RTOL * window_s)) and fc_need <= top * (
            1.0 + DEADLINE_RTOL
        )
        if not ok:
            best = (math.inf, iv.v_max, top, iv.f_mem_max)
        else:
            v_low = max(iv.v_min, cp.scale * max(iv.f_core_min - cp.base, 0.0) ** 2 + cp.offset)
            v_need = cp.scale * max(min(fc_need, top) - cp.base, 0.0) ** 2 + cp.offset
            v_start = min(max(v_need, v_low), iv.v_max)
            step = (iv.v_max - v_start) / (grid_points - 1)
            energies = [_scalar_energy(params, v_start + k * step, window_s)[2] for k in range(grid_points)]
            j = min(range(grid_points), key=energies.__getitem__)
            lo, hi = v_start + max(j - 1, 0) * step, v_start + min(j + 1, grid_points - 1) * step
            x1, x2 = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
            e1, e2 = _scalar_energy(params, x1, window_s)[2], _scalar_energy(params, x2, window_s)[2]
            for _ in range(iterations):
                if e1 <= e2:
                    hi, x2, e2 = x2, x1, e1
                    x1 = hi - _GOLDEN * (hi - lo)
                    e1 = _scalar_energy(params, x1, window_s)[2]
                else:
                    lo, x1, e1 = x1, x2, e2
                    x2 = lo + _GOLDEN * (hi - lo)
                    e2 = _scalar_energy(params, x2, window_s)[2]
            v_ref, e_ref = (x1, e1) if e1 <= e2 else (x2, e2)
            v = v_ref if e_ref < energies[j] else v_start + j * step
            fc, fm, e = _scalar_energy(params, v, window_s)
            best = (e, v, fc, fm)
    _, v, fc, fm = best
    t = t0 + d_core / fc + c_mem / fm
    power = p0 + gamma * fm + c * v * v * fc
    return v, fc, fm, t, power, t <= window_s * (1.0 + DEADLINE_RTOL)
