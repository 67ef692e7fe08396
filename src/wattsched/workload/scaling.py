"""Throughput-scaling curves: how much faster a job runs on a larger MIG slice (P1 Fig. 2).

A curve is data: a speed-up ``S(g)`` for each compute size g = 1, 2, 3, 4, 7 with ``S(1) = 1``, so that
``dur_g = dur_1 / S(g)``. The paper's three types are ``linear`` (S(g) = g), ``capped`` (S(g) = min(g, c)) and
``sublinear`` (one of four functions of our choosing). ``measured`` curves come from profiled workloads and
are only required to be positive with ``S(1) = 1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from wattsched.errors import ConfigError
from wattsched.workload.job import P1_SIZES, Scaling

COMPUTE_SIZES = P1_SIZES

__all__ = [
    "CAPPED_LIMITS",
    "DEFAULT_FULL_GPU_SPEEDUP",
    "FAMILY_CURVES",
    "SUBLINEAR_CURVES",
    "ScalingCurve",
    "capped_curve",
    "curve_from_function",
    "durations_from_base",
    "linear_curve",
]

#: A MIG-disabled GPU runs linear jobs 6 % faster than a 7g slice (P1 citing Zeus;
#: docs/concepts/mig-model.md).
DEFAULT_FULL_GPU_SPEEDUP = 1.06
#: Caps a ``capped`` job draws from uniformly (P1 Sec. V-A).
CAPPED_LIMITS: tuple[int, ...] = (2, 3, 4)

# Slack for curves computed in floating point (S(g) <= g, non-decreasing).
_TOLERANCE = 1e-12


@dataclass(frozen=True)
class ScalingCurve:
    """Speed-ups ``S(g)`` for g = 1, 2, 3, 4, 7 (in ``COMPUTE_SIZES`` order), ``S(1) = 1``.

    Paper types (linear, sublinear, capped) must be non-decreasing with ``S(g) <= g``; ``measured`` curves
    only need positive values, because profiled workloads can slow down on larger slices.
    """

    kind: Scaling
    name: str
    speedups: tuple[float, float, float, float, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Scaling(self.kind))
        values = tuple(float(s) for s in self.speedups)
        object.__setattr__(self, "speedups", values)
        if len(values) != len(COMPUTE_SIZES):
            raise ConfigError(
                f"scaling curve '{self.name}': expected {len(COMPUTE_SIZES)} speed-ups "
                f"(g = {', '.join(map(str, COMPUTE_SIZES))}), got {len(values)}"
            )
        if not all(math.isfinite(s) and s > 0 for s in values):
            raise ConfigError(f"scaling curve '{self.name}': speed-ups must be finite and > 0, got {values}")
        if values[0] != 1.0:
            raise ConfigError(f"scaling curve '{self.name}': S(1) must be 1, got {values[0]!r}")
        if self.kind == Scaling.MEASURED:
            return
        for i in range(1, len(values)):
            if values[i] < values[i - 1] - _TOLERANCE:
                low, high = COMPUTE_SIZES[i - 1], COMPUTE_SIZES[i]
                raise ConfigError(
                    f"scaling curve '{self.name}': S({high}) = {values[i]:g} < S({low}) = "
                    f"{values[i - 1]:g}; {self.kind} curves must be non-decreasing"
                )
        for g, s in zip(COMPUTE_SIZES, values, strict=True):
            if s > g + _TOLERANCE:
                raise ConfigError(
                    f"scaling curve '{self.name}': S({g}) = {s:g} > {g}; a slice of size {g} "
                    f"cannot be more than {g}x faster than 1g"
                )

    def speedup(self, compute_units: int) -> float:
        """``S(g)`` for a compute size in ``COMPUTE_SIZES``."""
        return self.speedups[COMPUTE_SIZES.index(compute_units)]


def linear_curve() -> ScalingCurve:
    """``S(g) = g``."""
    return ScalingCurve(Scaling.LINEAR, "linear", tuple(float(g) for g in COMPUTE_SIZES))  # type: ignore[arg-type]


def capped_curve(cap: float) -> ScalingCurve:
    """``S(g) = min(g, cap)``; P1 draws ``cap`` from {2, 3, 4}."""
    if not (math.isfinite(cap) and cap >= 1):
        raise ConfigError(f"capped curve: cap must be >= 1, got {cap!r}")
    name = f"capped-{cap:g}"
    return ScalingCurve(Scaling.CAPPED, name, tuple(float(min(g, cap)) for g in COMPUTE_SIZES))  # type: ignore[arg-type]


def curve_from_function(kind: Scaling, name: str, speedup: Callable[[int], float]) -> ScalingCurve:
    """A curve from a function of the compute size g (evaluated at g = 1, 2, 3, 4, 7)."""
    return ScalingCurve(kind, name, tuple(float(speedup(g)) for g in COMPUTE_SIZES))  # type: ignore[arg-type]


def _saturating_exponential(g: int) -> float:
    return (1.0 - math.exp(-g / 3.0)) / (1.0 - math.exp(-1.0 / 3.0))


#: Four sublinear functions of our choosing for P1 Fig. 2 and Table I (P1 only says "exponential and
#: logarithmic").
SUBLINEAR_CURVES: tuple[ScalingCurve, ...] = (
    curve_from_function(Scaling.SUBLINEAR, "sub-e1", lambda g: g**0.75),
    curve_from_function(Scaling.SUBLINEAR, "sub-e2", _saturating_exponential),
    curve_from_function(Scaling.SUBLINEAR, "sub-l1", lambda g: 1.0 + math.log(g)),
    curve_from_function(Scaling.SUBLINEAR, "sub-l2", lambda g: math.log2(1.0 + g)),
)


def durations_from_base(
    dur_1g_s: float, curve: ScalingCurve, full_gpu_speedup: float = DEFAULT_FULL_GPU_SPEEDUP
) -> tuple[float, float, float, float, float, float]:
    """``Job.durations_s`` for a job that runs ``dur_1g_s`` on a 1g slice.

    Index 0..4: ``dur_1g_s / S(g)`` for g = 1, 2, 3, 4, 7; index 5 (MIG disabled):
    ``dur_7g / full_gpu_speedup`` for linear jobs, else ``dur_7g`` (docs/concepts/mig-model.md).
    """
    if not (math.isfinite(dur_1g_s) and dur_1g_s > 0):
        raise ConfigError(f"dur_1g_s must be finite and > 0, got {dur_1g_s!r}")
    if not (math.isfinite(full_gpu_speedup) and full_gpu_speedup > 0):
        raise ConfigError(f"full_gpu_speedup must be finite and > 0, got {full_gpu_speedup!r}")
    sized = [dur_1g_s / s for s in curve.speedups]
    dur_7g = sized[-1]
    full = dur_7g / full_gpu_speedup if curve.kind == Scaling.LINEAR else dur_7g
    return (sized[0], sized[1], sized[2], sized[3], sized[4], full)


#: One curve per scaling family, for jobs that name only their family (a Slurm annotation, a job log's
#: ``scaling`` column): ``linear`` S(g) = g, ``sublinear`` S(g) = g^0.75, ``capped`` S(g) = min(g, 3).
FAMILY_CURVES: dict[Scaling, ScalingCurve] = {
    Scaling.LINEAR: linear_curve(),
    Scaling.SUBLINEAR: SUBLINEAR_CURVES[0],
    Scaling.CAPPED: capped_curve(3),
}
