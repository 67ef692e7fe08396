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


def _extreme_tasks(n: int, seed: int) -> tuple[TaskModel, np.ndarray]:
    """Wide parameter ranges with corners: delta in {0, 1}, gamma = 0, t0 = 0, no window, tight windows."""
    rng = np.random.default_rng(seed)
    p_star = rng.uniform(50, 300, n)
    p0 = p_star * rng.uniform(0.0, 0.9, n)
    gamma = p_star * rng.uniform(0.0, 0.5, n) * (rng.random(n) > 0.05)
    c = np.maximum(p_star - p0 - gamma, 0.0)
    delta = np.where(rng.random(n) < 0.8, rng.uniform(0, 1, n), rng.choice([0.0, 1.0], n))
    t0 = rng.uniform(0, 100, n) * (rng.random(n) < 0.9)
    d = rng.uniform(1, 500, n)
    model = TaskModel(p0, gamma, c, t0, d, delta)
    window = model.default_time_s * rng.uniform(0.6, 2.5, n)
    window[rng.random(n) < 0.1] = np.inf
    return model, window


@pytest.mark.parametrize("interval", [WIDE, GPU.narrow, WIDE.with_v_max(1.25)], ids=lambda iv: iv.name)
def test_newton_matches_the_dense_grid_search_on_extreme_tasks(interval) -> None:
    # Two independent exact searches (Newton along f_core vs a 200-point V grid + golden section) agree.
    model, window = _extreme_tasks(600, seed=21)
    newton = solve(model, window, interval)
    grid = solve(model, window, interval, method="grid", grid_points=200, iterations=60)
    np.testing.assert_array_equal(newton.feasible, grid.feasible)
    ok = newton.feasible
    assert ok.mean() > 0.5 and (~ok).any()
    assert np.all(newton.energy_j[ok] <= grid.energy_j[ok] * (1 + 1e-12))
    np.testing.assert_allclose(newton.energy_j[ok], grid.energy_j[ok], rtol=1e-9)
    assert np.all(newton.time_s[ok] <= window[ok] * (1 + 1e-9))
    # the setting lies in the interval, on the coupling curve
    assert np.all((newton.v >= interval.v_low - 1e-12) & (newton.v <= interval.v_max))
    assert np.all((newton.f_mem >= interval.f_mem_min) & (newton.f_mem <= interval.f_mem_max))
    np.testing.assert_allclose(newton.f_core, interval.coupling.f_core_max(newton.v), atol=1e-9)


@pytest.mark.parametrize("interval", [WIDE, GPU.narrow], ids=lambda iv: iv.name)
def test_solve_one_matches_solve_on_extreme_tasks(interval) -> None:
    model, window = _extreme_tasks(150, seed=23)
    exact = solve(model, window, interval)
    for i in range(len(model)):
        v, fc, fm, t, p, ok = solve_one(model, i, float(window[i]), interval)
        assert ok == exact.feasible[i]
        assert t * p == pytest.approx(exact.energy_j[i], rel=1e-12)
        if model.c_w[i] > 0 and 0 < model.delta[i] < 1 and model.gamma_w[i] > 0:  # else ties may differ
            assert (v, fc, fm) == pytest.approx((exact.v[i], exact.f_core[i], exact.f_mem[i]), rel=1e-6)


def test_a_binding_window_is_met_exactly() -> None:
    # If the window costs energy (constrained optimum above the unconstrained one), the constraint is active
    # at the optimum (KKT): the task takes the whole window.
    model, window = _random_tasks(400, seed=25)
    free = solve(model, np.inf, WIDE)
    tied = solve(model, window, WIDE)
    binding = tied.feasible & (tied.energy_j > free.energy_j * (1 + 1e-9))
    assert binding.sum() > 20
    np.testing.assert_allclose(tied.time_s[binding], window[binding], rtol=1e-9)
    # unconstrained optimum, interior clocks: stationarity of A(f)·B(f) along the coupling curve,
    # A = p0 + c V(f)² f, B = t0 + d delta / f, V(f) = 2 (f - 0.5)² + 0.5 (central difference)
    interior = (free.f_mem > 0.5 + 1e-6) & (free.f_mem < 1.2 - 1e-6) & (free.f_core > 0.5 + 1e-3)
    f = free.f_core[interior][:, None] + np.array([-1e-5, 1e-5])[None, :]
    m = model.take(interior)
    ab = (m.p0_w[:, None] + m.c_w[:, None] * (2 * (f - 0.5) ** 2 + 0.5) ** 2 * f) * (
        m.t0_s[:, None] + (m.d_s * m.delta)[:, None] / f
    )
    slope = (ab[:, 1] - ab[:, 0]) / 2e-5
    assert interior.sum() > 50
    assert np.all(np.abs(slope) <= 1e-5 * ab.mean(axis=1))


def test_grid_method_is_available_for_cross_checks() -> None:
    model, window = _random_tasks(50, seed=27)
    grid = solve(model, window, WIDE, method="grid")
    exact = solve(model, window, WIDE)
    np.testing.assert_allclose(grid.energy_j, exact.energy_j, rtol=1e-8)
    with pytest.raises(ConfigError, match="grid"):
        solve_one(model, 0, float(window[0]), WIDE, method="nope")
