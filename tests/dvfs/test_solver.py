"""Alg. 1 against an independent dense brute force, the authors' 16-point grid, and hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest

from wattsched.dvfs.model import TaskModel
from wattsched.dvfs.solver import default_settings, fastest_time_s, solve, solve_one
from wattsched.dvfs.tasks import generate_offline
from wattsched.errors import ConfigError
from wattsched.hardware.dvfs import HkbuGrid, default_dvfs_gpu

GPU = default_dvfs_gpu()
WIDE = GPU.wide


def _random_tasks(n: int, seed: int) -> tuple[TaskModel, np.ndarray]:
    """Generator tasks with windows from loose to tight-but-feasible (0.7 .. 2 x t*)."""
    tasks = generate_offline(1.0, n, seed)
    rng = np.random.default_rng(seed + 1)
    window = tasks.model.default_time_s * rng.uniform(0.7, 2.0, n)
    return tasks.model, window


def _bisect(fun, lo: np.ndarray, hi: np.ndarray, iterations: int = 80) -> np.ndarray:
    """Smallest x in [lo, hi] with fun(x) true, for fun monotone false->true (vectorised bisection)."""
    for _ in range(iterations):
        mid = (lo + hi) / 2
        ok = fun(mid)
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return hi


def brute_force(model: TaskModel, i: int, window: float, points: int = 801) -> float:
    """Minimum energy of task i over a dense (V, f_mem) grid with f_core = g1(V), using only the model's
    power and time functions. The feasibility edges are located by bisection on T <= W (T decreases in V
    and in f_mem) and added to the grids, so a binding deadline costs no grid error."""
    one = model.take([i])
    g1 = WIDE.coupling.f_core_max

    def time(v, fm):
        return one.time_s(g1(v), fm)

    v_lo, v_hi, fm_lo, fm_hi = WIDE.v_low, WIDE.v_max, WIDE.f_mem_min, WIDE.f_mem_max
    if time(np.array([v_hi]), fm_hi)[0] > window:
        return np.inf
    v_edge = _bisect(lambda v: time(v, fm_hi) <= window, np.array([v_lo]), np.array([v_hi]))[0]
    v_start = v_lo if time(np.array([v_lo]), fm_hi)[0] <= window else v_edge
    voltages = np.linspace(v_start, v_hi, points)
    fm_edge = _bisect(lambda fm: time(voltages, fm) <= window, np.full(points, fm_lo), np.full(points, fm_hi))
    fm_edge = np.where(time(voltages, fm_lo) <= window, fm_lo, fm_edge)
    frac = np.linspace(0.0, 1.0, points)[None, :]
    fm = fm_edge[:, None] + (fm_hi - fm_edge[:, None]) * frac  # (V, f_mem) grid, edge included
    v = voltages[:, None]
    energy = one.power_w(v, g1(v), fm) * time(v, fm)
    energy = np.where(time(v, fm) <= window * (1 + 1e-9), energy, np.inf)
    return float(energy.min())


def test_exact_matches_dense_brute_force_within_0_01_percent() -> None:
    model, window = _random_tasks(40, seed=3)
    window[:5] = np.inf  # some unconstrained tasks too
    result = solve(model, window, WIDE)
    for i in range(len(model)):
        brute = brute_force(model, i, float(window[i]))
        if not np.isfinite(brute):
            assert not result.feasible[i]
            continue
        assert result.feasible[i]
        # within 0.01 % of the brute force, and never worse than it (beyond float noise): the grid can only
        # overestimate the true minimum
        assert abs(result.energy_j[i] - brute) <= 1e-4 * brute
        assert result.energy_j[i] <= brute * (1 + 1e-9)


def test_never_worse_than_the_16_point_grid_and_meets_the_deadline() -> None:
    model, window = _random_tasks(3000, seed=5)
    interval = WIDE.with_v_max(1.25)  # the grid's own voltage range
    exact = solve(model, window, interval)
    grid = solve(model, window, interval, method="hkbu", hkbu_grid=HkbuGrid(0.5, 0.05, 1.25))
    assert HkbuGrid(0.5, 0.05, 1.25).voltages().size == 16
    ok = grid.feasible
    assert np.all(exact.energy_j[ok] <= grid.energy_j[ok] * (1 + 1e-12))
    # feasible whenever the fastest setting meets the window, and then the window is met
    reachable = fastest_time_s(model, interval) <= window
    np.testing.assert_array_equal(exact.feasible, reachable)
    assert np.all(exact.time_s[reachable] <= window[reachable] * (1 + 1e-9))
    assert (exact.energy_j < grid.energy_j * (1 - 1e-3)).mean() > 0.3  # the grid is visibly coarse


def test_infeasible_window_runs_at_the_fastest_setting() -> None:
    model = TaskModel([50.0], [30.0], [120.0], [10.0], [100.0], [0.5])
    t_min = float(fastest_time_s(model, WIDE)[0])
    # hand check: t_min = 10 + 100 (0.5 / g1(1.2) + 0.5 / 1.2), g1(1.2) = sqrt(0.35) + 0.5
    assert t_min == pytest.approx(10 + 100 * (0.5 / (np.sqrt(0.35) + 0.5) + 0.5 / 1.2))
    result = solve(model, t_min * 0.99, WIDE)
    assert not result.feasible[0]
    assert (result.v[0], result.f_mem[0]) == (1.2, 1.2)
    assert result.f_core[0] == pytest.approx(np.sqrt(0.35) + 0.5)
    tight = solve(model, t_min * (1 + 1e-7), WIDE)
    assert tight.feasible[0] and tight.time_s[0] <= t_min * (1 + 1e-7) * (1 + 1e-9)


def test_memory_clock_corner_cases() -> None:
    # delta = 1: time ignores f_mem, so f_mem sits at its minimum; gamma = 0: power ignores f_mem -> maximum.
    model = TaskModel([50.0, 50.0], [30.0, 0.0], [120.0, 120.0], [10.0, 10.0], [100.0, 100.0], [1.0, 0.3])
    result = solve(model, np.inf, WIDE)
    assert result.f_mem[0] == pytest.approx(WIDE.f_mem_min)
    assert result.f_mem[1] == pytest.approx(WIDE.f_mem_max)


def test_unconstrained_optimum_has_the_closed_form_memory_clock() -> None:
    # At the optimum, if f_mem is interior, f_mem = sqrt(A C / (gamma B)) (stationarity of (A+gF)(B+C/F)).
    model, _ = _random_tasks(200, seed=9)
    result = solve(model, np.inf, WIDE)
    v, fc = result.v, result.f_core
    a = model.p0_w + model.c_w * v * v * fc
    b = model.t0_s + model.d_s * model.delta / fc
    c = model.d_s * (1 - model.delta)
    closed = np.clip(np.sqrt(a * c / (model.gamma_w * b)), 0.5, 1.2)
    np.testing.assert_allclose(result.f_mem, closed, rtol=1e-9)
    np.testing.assert_allclose(fc, WIDE.coupling.f_core_max(v))


def test_solve_one_agrees_with_the_vectorised_solver() -> None:
    model, window = _random_tasks(100, seed=11)
    exact = solve(model, window, WIDE)
    grid = solve(model, window, WIDE, method="hkbu")
    for i in range(len(model)):
        _v, _fc, _fm, t, p, ok = solve_one(model, i, float(window[i]), WIDE)
        assert t * p == pytest.approx(exact.energy_j[i], rel=1e-12) and ok == exact.feasible[i]
        *_, t, p, ok = solve_one(model, i, float(window[i]), WIDE, method="hkbu")
        assert t * p == pytest.approx(grid.energy_j[i], rel=1e-12) and ok == grid.feasible[i]


def test_paper_sanity_target_mean_saving_about_34_percent() -> None:
    # papers.md §B.4.1: mean single-task saving 1 - E_min/E* ~ 33.8 % (12-61 %), mean V ~ 0.56.
    tasks = generate_offline(1.0, 5000, 1)
    result = solve(tasks.model, np.inf, WIDE)
    default = default_settings(tasks.model)
    saving = 1 - result.energy_j / default.energy_j
    assert saving.mean() == pytest.approx(0.338, abs=0.01)
    assert saving.min() > 0.10 and saving.max() < 0.65
    assert result.v.mean() == pytest.approx(0.56, abs=0.02)


def test_hkbu_ignoring_the_deadline_may_miss_it() -> None:
    model, window = _random_tasks(500, seed=13)
    loose = solve(model, window, WIDE, method="hkbu", enforce_deadline=False)
    strict = solve(model, window, WIDE, method="hkbu")
    assert np.all(loose.energy_j <= strict.energy_j * (1 + 1e-12))
    assert (~loose.feasible).any()


def test_unknown_method_is_a_config_error() -> None:
    model, window = _random_tasks(2, seed=1)
    with pytest.raises(ConfigError, match="exact, hkbu"):
        solve(model, window, WIDE, method="nope")
