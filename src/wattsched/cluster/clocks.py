"""GPU clock levels on a MIG GPU, with time and power from P2's DVFS model (a model, stated as such).

On a real MIG GPU the SM clock is one setting for the whole GPU, not one per slice. The model:

* **Levels**: the GPU's supported SM clocks (its catalogue entry's ``[clocks]`` table, e.g. the H200's 110
  levels from NVML) normalised to the default clock, ``f = sm_mhz / default_sm_mhz``, kept within P2's wide
  scaling interval ``f ≥ 0.5`` (docs/concepts/dvfs.md). The memory clock stays at its default (``f_m = 1``).
* **Time** (P2 Eq. 2 with ``f_m = 1``): a job's remaining time at level ``f`` is its time at the default
  clock times ``τ(f) = t0 + (1 − t0)·(δ/f + 1 − δ)`` with ``t0`` the clock-insensitive share and ``δ`` the
  core-bound share of the rest; every running job runs at speed ``1/τ(f)``.
* **Power** (P2 Eq. 1 with ``f_m = 1``): the GPU's busy power *above idle* is scaled by
  ``π(f) = s + (1 − s)·V(f)²·f`` with ``s`` the frequency-independent share and ``V(f) = g1⁻¹(f)`` the lowest
  voltage that supports ``f`` (P2's coupling, ``V(1) = 1``). Idle power does not change with the level.
* **Shares**: the means of P2's synthetic application library (P2 Sec. VI): ``s`` = mean P0/P* +
  mean γ/P* = 0.305 + 0.15 = 0.455, ``δ`` = 0.49, ``t0`` = mean t0 / (mean t0 + mean D) = 0.525 / 5.16 ≈ 0.10.
  Per-job shares are not known for MIG jobs; one GPU-wide set is the model's simplification.
* **The solver**: P2's Alg. 1 (:func:`wattsched.dvfs.solver.solve`, exact method) is run once per GPU model
  on the task ``(P0 = s, γ = 0, c = 1 − s, t0, D = 1 − t0, δ)`` in the interval ``V ∈ [0.5, 1]``,
  ``f_m = 1``: its unconstrained optimum ``f*`` (lowest energy ``π·τ`` per unit of work) is snapped to the
  better neighbouring level. At each scheduling decision each running job ``j`` needs
  ``τ(f) ≤ r_j = (d_j − now) / remaining time at the default clock``; with ``E = π·τ`` unimodal in ``f``, the
  per-job optimum is ``max(f*, f_req(r_j))``, and the GPU takes the largest over its running jobs: the
  slowest level at least as fast as ``f*`` that keeps every running job on time, or the fastest level when
  some job cannot be on time. The policy's own slice choices use default-clock run times.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from wattsched.errors import ConfigError
from wattsched.hardware.dvfs import ScalingInterval, VoltageCoupling
from wattsched.hardware.mig import MigGpu

__all__ = ["ClockModel", "ClockSchedule", "clock_schedule"]

#: P2's wide interval: the lowest normalised core clock.
F_CORE_MIN = 0.5


@dataclass(frozen=True)
class ClockModel:
    """The shares of P2's model (see the module docstring for their sources)."""

    static_share: float = 0.455
    core_share: float = 0.49
    insensitive_share: float = 0.10
    coupling: VoltageCoupling = field(default_factory=VoltageCoupling)
    f_core_min: float = F_CORE_MIN

    def __post_init__(self) -> None:
        for name in ("static_share", "core_share", "insensitive_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"clock model: {name} must be in [0, 1], got {value!r}")
        if not 0 < self.f_core_min <= 1:
            raise ConfigError(f"clock model: f_core_min must be in (0, 1], got {self.f_core_min!r}")

    def time_factor(self, f: float) -> float:
        """``τ(f)``: run time at normalised clock ``f`` relative to the default clock."""
        t0 = self.insensitive_share
        delta = self.core_share
        return t0 + (1.0 - t0) * (delta / f + 1.0 - delta)

    def power_factor(self, f: float) -> float:
        """``π(f)``: busy power above idle at ``f`` relative to the default clock."""
        voltage = float(self.coupling.v_min_for(f))
        return self.static_share + (1.0 - self.static_share) * voltage * voltage * f

    def optimum_f(self) -> float:
        """P2's Alg. 1 (exact) on the model's task without a deadline: the energy-optimal clock."""
        from wattsched.dvfs.model import TaskModel
        from wattsched.dvfs.solver import solve

        t0 = self.insensitive_share

        def one(value: float) -> np.ndarray:
            return np.array([value], dtype=np.float64)

        task = TaskModel(
            p0_w=one(self.static_share),
            gamma_w=one(0.0),
            c_w=one(1.0 - self.static_share),
            t0_s=one(t0),
            d_s=one(1.0 - t0),
            delta=one(self.core_share),
        )
        v_low = float(self.coupling.v_min_for(self.f_core_min))
        interval = ScalingInterval("mig-clock", v_low, 1.0, self.f_core_min, 1.0, 1.0, self.coupling)
        return float(solve(task, np.inf, interval).f_core[0])


@dataclass(frozen=True)
class ClockSchedule:
    """One GPU model's levels, fastest first, and the governor the engine calls
    (:class:`wattsched.mig.clock.ClockGovernor`)."""

    sm_mhz: tuple[int, ...]
    speed: tuple[float, ...]
    power_scale: tuple[float, ...]
    #: τ of each level, ascending (fastest first).
    time_factor: tuple[float, ...]
    #: The energy-optimal level (index) and the default clock's level.
    optimum_level: int
    initial_level: int

    def level_of(self, sm_mhz: float) -> int:
        """The level whose SM clock is nearest ``sm_mhz`` (a clock read back from a GPU)."""
        return min(range(len(self.sm_mhz)), key=lambda level: abs(self.sm_mhz[level] - sm_mhz))

    def level_for(self, slack_ratio: float) -> int:
        """The level of a decision whose tightest running job has ``slack_ratio`` (module docstring)."""
        slowest_on_time = bisect_right(self.time_factor, slack_ratio) - 1
        if slowest_on_time < 0:
            return 0  # some job is late even at the fastest level: run as fast as possible
        return min(slowest_on_time, self.optimum_level)


def clock_schedule(gpu: MigGpu, model: ClockModel | None = None) -> ClockSchedule | None:
    """The clock levels of ``gpu`` under ``model`` (default :class:`ClockModel`); ``None`` when the
    catalogue entry has no clock table. The same object for the same inputs (P2's solver runs once)."""
    if gpu.clocks is None:
        return None
    return _schedule(gpu, model or ClockModel())


@lru_cache(maxsize=32)
def _schedule(gpu: MigGpu, model: ClockModel) -> ClockSchedule:
    assert gpu.clocks is not None
    default = gpu.clocks.default_sm_mhz
    levels = sorted(
        {mhz for mhz in gpu.clocks.sm_mhz if model.f_core_min - 1e-12 <= mhz / default <= 1.0} | {default},
        reverse=True,
    )
    f = [mhz / default for mhz in levels]
    tau = [model.time_factor(x) for x in f]
    power = [model.power_factor(x) for x in f]
    best = model.optimum_f()
    # Snap P2's continuous optimum to the better of its two neighbouring levels (E = π·τ is unimodal).
    above = [i for i, x in enumerate(f) if x >= best - 1e-12]
    below = [i for i, x in enumerate(f) if x <= best + 1e-12]
    candidates = [c for c in (above[-1] if above else None, below[0] if below else None) if c is not None]
    optimum = min(candidates, key=lambda i: (power[i] * tau[i], i))
    if any(not math.isfinite(v) for v in (*tau, *power)):
        raise ConfigError(f"{gpu.name}: the clock model gives non-finite time or power factors")
    return ClockSchedule(
        sm_mhz=tuple(levels),
        speed=tuple(1.0 / t for t in tau),
        power_scale=tuple(power),
        time_factor=tuple(tau),
        optimum_level=optimum,
        initial_level=levels.index(default),
    )
