"""The authors' simulator (GitHub HKBU-HPML/GPU-DVFS-Job-Schedule, HEAD 7ae3c9c8) as a configuration.

P2's text and the authors' code differ in constants and in a few rules (P2 Sec. VI; P2; docs/concepts/dvfs.md
fixes the paper's constants as defaults). :func:`hkbu_configs` returns the configuration that turns every
rule and constant of their code on together, so that on task sets from their generator our totals equal what
their code prints (``tests/dvfs/test_hkbu_reproduction.py`` checks it on exported task sets). Their Alg. 1
details live here too:

* the initial solve (``sim_job.solve_dvfs``) ignores the deadline, searches ``V = 0.5 + 0.05·k`` on a grid
  (k ≤ 15 for the 1080 Ti at their TPDS-final commit; k ≤ 12, the 2070 SUPER, at HEAD) with the closed-form
  memory clock, and keeps the default setting (1, 1, 1) unless a grid point uses strictly less energy;
* the θ re-solve (``sim_job.theta_adjust``) searches 16 voltages to 1.25 for the least energy that is below
  the default setting's and meets the new window, and leaves the task as it was when no point qualifies
  (the task then runs late);
* ``t_min`` (``get_t_theta``) is the time at ``(g1(1.25), f_mem_max)`` whatever the GPU.

Their energies are in W·slot; ours are in J: with 60 s slots, J = 60 × theirs.
"""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import numpy.typing as npt

from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig
from wattsched.dvfs.model import TaskModel
from wattsched.dvfs.solver import Settings, default_settings, solve
from wattsched.hardware.dvfs import HkbuGrid, ScalingInterval, default_dvfs_gpu

__all__ = [
    "HKBU_IDLE_POWER_W",
    "HKBU_RESOLVE_GRID",
    "HKBU_TURN_ON_W_SLOT_PER_SERVER",
    "hkbu_configs",
    "hkbu_initial_settings",
    "hkbu_resolve",
    "hkbu_t_min_s",
]

FloatArray = npt.NDArray[np.float64]
#: ``gpu.gpu_idle_power`` in cluster.py: W per pair (per GPU) while its server is on and it is not busy
#: (85 W; data: the ``hkbu_idle_power_w`` of the default DVFS GPU's catalogue entry).
HKBU_IDLE_POWER_W = default_dvfs_gpu().cluster.hkbu_idle_power_w
#: ``node.turn_on_overhead`` in cluster.py: W·slot per server turn-on, whatever its number of pairs (200).
HKBU_TURN_ON_W_SLOT_PER_SERVER = default_dvfs_gpu().cluster.hkbu_turn_on_w_slot_per_server
#: ``theta_adjust`` and ``get_t_theta`` use these 16 voltages (to 1.25) on every GPU.
HKBU_RESOLVE_GRID = HkbuGrid(0.5, 0.05, 1.25)


def hkbu_configs(
    pairs: int = 2048,
    pairs_per_server: int = 1,
    *,
    enabled: bool = True,
    theta: float = 1.0,
    slot_s: float = 60.0,
    grid: HkbuGrid | None = None,
    interval: ScalingInterval | None = None,
) -> tuple[ClusterConfig, DvfsConfig]:
    """Cluster and DVFS configurations of the authors' code: idle 85 W per pair, 200 W·slot per server
    turn-on (``200·slot_s / l`` J per pair), ρ = 2, servers filled in opening order, whole-slot idle
    accounting, one pair per deadline-meeting task at T = 0, their tie order and Alg. 1 (module docstring).

    ``grid`` is the initial-solve voltage grid (default 16 points to 1.25, their TPDS-final 1080 Ti code;
    ``HkbuGrid(0.5, 0.05, 1.1)`` is their current HEAD); ``interval`` gives the memory-clock bounds
    (default the 1080 Ti's wide interval, f_mem in [0.5, 1.2], as in their code).
    """
    cluster = ClusterConfig(
        pairs=pairs,
        pairs_per_server=pairs_per_server,
        idle_power_w=HKBU_IDLE_POWER_W,
        turn_on_j_per_pair=HKBU_TURN_ON_W_SLOT_PER_SERVER * slot_s / pairs_per_server,
        slot_s=slot_s,
        drs_idle_slots=2,
        grouping="on_demand",
        idle_accounting="whole-slot",
        initial_placement="one-per-pair",
        next_start="previous-finish",
        reproduce_hkbu=True,
    )
    dvfs = DvfsConfig(
        enabled=enabled,
        theta=theta,
        interval=interval if interval is not None else default_dvfs_gpu().wide,
        reproduce_hkbu=True,
        hkbu_grid=grid if grid is not None else HkbuGrid(),
    )
    return cluster, dvfs


def hkbu_initial_settings(
    model: TaskModel, window_s: FloatArray, interval: ScalingInterval, grid: HkbuGrid
) -> Settings:
    """``solve_dvfs``: the grid optimum ignoring the window, or the default setting where no grid point
    uses strictly less energy than it (``feasible`` still reports whether the window is met)."""
    found = solve(model, window_s, interval, method="hkbu", hkbu_grid=grid, enforce_deadline=False)
    default = default_settings(model, window_s)
    keep = found.energy_j < default.energy_j
    chosen = (np.where(keep, getattr(found, f.name), getattr(default, f.name)) for f in fields(Settings))
    return Settings(*chosen)


def hkbu_t_min_s(model: TaskModel, interval: ScalingInterval) -> FloatArray:
    """``get_t_theta``'s ``t_min``: the time at ``(g1(1.25), f_mem_max)``."""
    fc_max = float(interval.coupling.f_core_max(HKBU_RESOLVE_GRID.v_max))
    return model.time_s(fc_max, interval.f_mem_max)


def hkbu_resolve(
    model: TaskModel, index: int, window_s: float, interval: ScalingInterval, time_s: float, power_w: float
) -> tuple[float, float]:
    """``theta_adjust``: ``(time_s, power_w)`` of the least-energy grid point below the default energy with
    ``T <= window_s``, or the task's current ``(time_s, power_w)`` when there is none."""
    i = int(index)
    p0, gamma, c = float(model.p0_w[i]), float(model.gamma_w[i]), float(model.c_w[i])
    t0, d, delta = float(model.t0_s[i]), float(model.d_s[i]), float(model.delta[i])
    best_e = (p0 + gamma + c) * (t0 + d)
    best = (time_s, power_w)
    coupling = interval.coupling
    for v in HKBU_RESOLVE_GRID.voltages().tolist():
        fc = math.sqrt((v - coupling.offset) / coupling.scale) + coupling.base
        # the closed-form memory clock, in the order of operations of their code
        denominator = gamma * (t0 + d * delta / fc)
        numerator = (p0 + c * v**2 * fc) * d * (1 - delta)
        fm = math.sqrt(numerator / denominator) if denominator > 0 else math.inf
        fm = min(max(fm, interval.f_mem_min), interval.f_mem_max)
        t = t0 + d * (delta / fc + (1 - delta) / fm)
        p = p0 + gamma * fm + c * v**2 * fc
        if t <= window_s and t * p < best_e:
            best_e, best = t * p, (t, p)
    return best
