"""P2 speed: Alg. 1 tasks per second (vectorised exact solver vs per-task Python loops over the authors'
16-point grid) and the wall time of one online day at U = 1.6 on 2048 pairs with l = 16."""

from __future__ import annotations

import math
import time

import numpy as np

from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig
from wattsched.dvfs.online import run_online
from wattsched.dvfs.solver import solve, solve_one
from wattsched.dvfs.tasks import generate_offline, generate_online
from wattsched.hardware.dvfs import default_dvfs_gpu


def python_grid_loop(p0, gamma, c, t0, d, delta, window) -> list[tuple[float, float, float, float]]:
    """The authors' approach per task in plain floats: 16 voltages, closed-form f_mem, keep T <= W."""
    grid = [0.5 + 0.05 * k for k in range(16)]
    out = []
    for i in range(len(p0)):
        a0, g, cc, t, dd, de, w = p0[i], gamma[i], c[i], t0[i], d[i], delta[i], window[i]
        c_mem, d_core = dd * (1 - de), dd * de
        best = (math.inf, 0.0, 0.0, 0.0)
        for v in grid:
            fc = math.sqrt((v - 0.5) / 2) + 0.5
            a, b = a0 + cc * v * v * fc, t + d_core / fc
            fm = min(max(math.sqrt(a * c_mem / (g * b)), 0.5), 1.2)
            time_s = b + c_mem / fm
            energy = (a + g * fm) * time_s
            if time_s <= w and energy < best[0]:
                best = (energy, v, fc, fm)
        out.append(best)
    return out


def numpy_grid_loop(model, window) -> list[float]:
    """Per task, the 16-point grid evaluated with numpy (a natural per-task vectorisation)."""
    grid = 0.5 + 0.05 * np.arange(16)
    fc = np.sqrt((grid - 0.5) / 2) + 0.5
    out = []
    for i in range(len(model)):
        a = model.p0_w[i] + model.c_w[i] * grid * grid * fc
        b = model.t0_s[i] + model.d_s[i] * model.delta[i] / fc
        c_mem = model.d_s[i] * (1 - model.delta[i])
        fm = np.clip(np.sqrt(a * c_mem / (model.gamma_w[i] * b)), 0.5, 1.2)
        t = b + c_mem / fm
        e = np.where(t <= window[i], (a + model.gamma_w[i] * fm) * t, np.inf)
        out.append(float(e.min()))
    return out


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    wide = default_dvfs_gpu().wide.with_v_max(1.25)
    tasks = generate_offline(1.0, 200_000, 1)
    model, window = tasks.model, tasks.window_s
    n_loop = 20_000
    cols = [getattr(model, k)[:n_loop].tolist() for k in ("p0_w", "gamma_w", "c_w", "t0_s", "d_s", "delta")]
    loop_s = best_of(lambda: python_grid_loop(*cols, window[:n_loop].tolist()))
    numpy_loop_s = best_of(lambda: numpy_grid_loop(model.take(slice(0, 5000)), window[:5000]), repeats=1)
    exact_s = best_of(lambda: solve(model, window, wide), repeats=5)
    old_s = best_of(lambda: solve(model, window, wide, method="grid"), repeats=1)
    grid_s = best_of(lambda: solve(model, window, wide, method="hkbu"))
    n_one = 5000
    one_s = best_of(lambda: [solve_one(model, i, float(window[i]), wide) for i in range(n_one)], repeats=2)
    rate = {
        "python loop, 16-point grid": n_loop / loop_s,
        "numpy per task, 16-point grid": 5000 / numpy_loop_s,
        "vectorised exact Alg. 1 (Newton)": len(model) / exact_s,
        "vectorised exact (grid+golden)": len(model) / old_s,
        "vectorised 16-point grid": len(model) / grid_s,
        "solve_one exact (scalar)": n_one / one_s,
    }
    print("Alg. 1 throughput (tasks/s):")
    for name, value in rate.items():
        print(f"  {name:34s} {value:12,.0f}")
    exact = rate["vectorised exact Alg. 1 (Newton)"]
    print(
        f"  speed-up exact vs python loop:  {exact / rate['python loop, 16-point grid']:.1f}x (target >= 50x)"
    )
    print(f"  speed-up exact vs numpy loop:   {exact / rate['numpy per task, 16-point grid']:.1f}x")
    check = model.take(slice(0, 20_000)), window[:20_000]
    new, ref = solve(*check, wide), solve(*check, wide, method="grid", grid_points=200, iterations=60)
    ok = new.feasible
    gap = (new.energy_j[ok] - ref.energy_j[ok]) / ref.energy_j[ok]
    print(
        f"  exact vs dense grid+golden (20k tasks): worst {gap.max():+.1e}, best {gap.min():+.1e} (relative)"
    )
    day = generate_online(1.6, 2048, 7)
    for theta in (1.0, 0.5):
        cluster, dvfs = ClusterConfig(pairs=2048, pairs_per_server=16), DvfsConfig(theta=theta)
        wall = best_of(lambda: run_online(day, "edl", cluster, dvfs), repeats=2)  # noqa: B023
        print(f"online day U=1.6, 2048 pairs, l=16, EDL theta={theta}: {wall:.3f} s for {len(day)} tasks")


if __name__ == "__main__":
    main()
