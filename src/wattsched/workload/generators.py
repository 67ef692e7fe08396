"""Synthetic MIG job queues with P1's job mix (docs/concepts/mig-model.md).

``generate_jobs(spec, seed)`` is a pure function of ``(spec, seed)``: arrivals and job attributes come from
two independent child streams of ``SeedSequence(seed)``, and every attribute is drawn as one vector.

Deadline rules (``WorkloadSpec.deadline_rule``), both soft deadlines ``d = a + s·dur_ref`` with the slack
``s ~ U(deadline_slack)`` (default U(1, 1.5)):

* ``"p1"`` (default): ``dur_ref = dur_7g``, the rule of the P1 group's code and of SMART-MIG
  (docs/concepts/mig-model.md). Since ``dur_1g >= 2·dur_7g`` for every scaling family, no job can meet its
  deadline on a 1g slice.
* ``"slice-aware"`` (a sensitivity of ours, not in P1): ``dur_ref = dur_g`` for a compute size ``g`` drawn
  uniformly from the generated sizes (1, 2, 3, 4, 7), so about a fifth of the jobs can meet their deadline on
  a 1g slice and EDF-SS's "slowest slice that meets the deadline" has small slices to choose, as P1 Sec. V-B
  describes. The size is drawn after every other attribute, so a day under either rule has the same
  arrivals, kinds, curves, durations and slack draws (common random numbers across rules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from wattsched.errors import ConfigError
from wattsched.units import SECONDS_PER_HOUR
from wattsched.workload.arrivals import PROFILES, poisson_arrivals, profile_arrivals
from wattsched.workload.job import Job, JobKind, Scaling
from wattsched.workload.scaling import (
    CAPPED_LIMITS,
    DEFAULT_FULL_GPU_SPEEDUP,
    SUBLINEAR_CURVES,
    ScalingCurve,
    capped_curve,
    linear_curve,
)

__all__ = ["DEADLINE_RULES", "WorkloadSpec", "check_deadline_rule", "generate_jobs", "job_id"]

#: Deadline rules of :class:`WorkloadSpec` (see the module docstring).
DEADLINE_RULES: tuple[str, ...] = ("p1", "slice-aware")

# Floor on a drawn 1g duration: an Exponential draw can be exactly 0, and traces need durations > 0.
_MIN_DURATION_S = 1e-6


def check_deadline_rule(rule: str) -> None:
    """Raise :class:`ConfigError` listing :data:`DEADLINE_RULES` unless ``rule`` is one of them."""
    if rule not in DEADLINE_RULES:
        raise ConfigError(f"unknown deadline rule {rule!r}; valid: {', '.join(DEADLINE_RULES)}")


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


@dataclass(frozen=True)
class WorkloadSpec:
    """What to generate: one arrival source and the job-mix distribution (defaults: P1 Sec. V-A).

    Exactly one of ``rate_per_min`` (homogeneous Poisson) and ``profile`` (a name in ``PROFILES``) is set.
    ``scaling_weights`` weigh the types (linear, sublinear, capped). When ``curves`` is given, each job draws
    its curve uniformly from it instead of the paper mix and is labelled with the curve's ``kind``.
    ``deadline_rule`` is ``"p1"`` (``a + U(slack)·dur_7g``, default) or ``"slice-aware"``
    (``a + U(slack)·dur_g`` for a uniformly drawn compute size ``g``); see the module docstring.
    """

    rate_per_min: float | None = None
    profile: str | None = None
    hours: float = 24.0
    inference_share: float = 0.8
    rate_multiplier: float = 1.0
    deadline_slack: tuple[float, float] = (1.0, 1.5)
    curves: tuple[ScalingCurve, ...] | None = None
    inference_mean_s: float = 180.0
    training_range_s: tuple[float, float] = (600.0, 2400.0)
    scaling_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)
    capped_limits: tuple[int, ...] = CAPPED_LIMITS
    sublinear_curves: tuple[ScalingCurve, ...] = SUBLINEAR_CURVES
    full_gpu_speedup: float = DEFAULT_FULL_GPU_SPEEDUP
    deadline_rule: str = "p1"

    def __post_init__(self) -> None:
        if (self.rate_per_min is None) == (self.profile is None):
            raise ConfigError("give exactly one arrival source: a rate (jobs/min) or a profile name")
        if self.rate_per_min is not None and not (_finite(self.rate_per_min) and self.rate_per_min > 0):
            raise ConfigError(f"rate must be > 0 jobs/min, got {self.rate_per_min!r}")
        if self.profile is not None:
            PROFILES.make(self.profile)  # raises UnknownNameError listing the valid profiles
        if not (_finite(self.hours) and self.hours > 0):
            raise ConfigError(f"hours must be > 0, got {self.hours!r}")
        if not (_finite(self.inference_share) and 0.0 <= self.inference_share <= 1.0):
            raise ConfigError(f"inference share must be in [0, 1], got {self.inference_share!r}")
        if not (_finite(self.rate_multiplier) and self.rate_multiplier > 0):
            raise ConfigError(f"rate multiplier must be > 0, got {self.rate_multiplier!r}")
        low, high = self._pair("deadline_slack", self.deadline_slack)
        if not 0 <= low <= high:
            raise ConfigError(f"deadline_slack must satisfy 0 <= low <= high, got {self.deadline_slack!r}")
        if not (_finite(self.inference_mean_s) and self.inference_mean_s > 0):
            raise ConfigError(f"inference_mean_s must be > 0, got {self.inference_mean_s!r}")
        low, high = self._pair("training_range_s", self.training_range_s)
        if not 0 < low <= high:
            raise ConfigError(f"training_range_s must satisfy 0 < low <= high, got {self.training_range_s!r}")
        weights = self.scaling_weights
        if len(weights) != 3 or not all(_finite(w) and w >= 0 for w in weights) or sum(weights) <= 0:
            raise ConfigError(
                "scaling_weights needs 3 weights >= 0 (linear, sublinear, capped), not all 0; "
                f"got {weights!r}"
            )
        if not self.capped_limits or not all(_finite(c) and c >= 1 for c in self.capped_limits):
            raise ConfigError(f"capped_limits needs caps >= 1, got {self.capped_limits!r}")
        if not self.sublinear_curves:
            raise ConfigError("sublinear_curves must not be empty")
        if self.curves is not None and not self.curves:
            raise ConfigError("curves must not be empty when given")
        if not (_finite(self.full_gpu_speedup) and self.full_gpu_speedup > 0):
            raise ConfigError(f"full_gpu_speedup must be > 0, got {self.full_gpu_speedup!r}")
        check_deadline_rule(self.deadline_rule)

    @staticmethod
    def _pair(name: str, pair: tuple[float, float]) -> tuple[float, float]:
        if len(pair) != 2 or not all(_finite(v) for v in pair):
            raise ConfigError(f"{name} must be two finite numbers, got {pair!r}")
        return float(pair[0]), float(pair[1])

    @property
    def horizon_s(self) -> float:
        """Length of the arrival window in seconds."""
        return self.hours * SECONDS_PER_HOUR


def job_id(index: int) -> str:
    """The id of the ``index``-th generated job: ``j000000``, ``j000001``, ..."""
    return f"j{index:06d}"


def _child_generators(seed: int | np.random.SeedSequence, count: int) -> list[np.random.Generator]:
    # Derive children from the spawn key instead of calling ``spawn`` so a caller's SeedSequence is not
    # mutated: generating twice from the same object gives the same jobs.
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return [
        np.random.default_rng(
            np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, index), pool_size=root.pool_size)
        )
        for index in range(count)
    ]


def _arrivals(spec: WorkloadSpec, rng: np.random.Generator) -> np.ndarray:
    if spec.rate_per_min is not None:
        return poisson_arrivals(spec.rate_per_min * spec.rate_multiplier, spec.horizon_s, rng)
    assert spec.profile is not None
    return profile_arrivals(PROFILES.make(spec.profile), spec.horizon_s, rng, spec.rate_multiplier)


def _curve_choice(
    spec: WorkloadSpec, count: int, rng: np.random.Generator
) -> tuple[tuple[ScalingCurve, ...], np.ndarray]:
    """The candidate curves and, for each job, the index of its curve."""
    if spec.curves is not None:
        return spec.curves, rng.integers(0, len(spec.curves), size=count)
    # Candidate table: [linear, sublinear..., capped...]; draw the type, then the member within the type.
    caps = tuple(capped_curve(c) for c in spec.capped_limits)
    table = (linear_curve(), *spec.sublinear_curves, *caps)
    weights = np.asarray(spec.scaling_weights, dtype=np.float64)
    kind = rng.choice(3, size=count, p=weights / weights.sum())
    sub = rng.integers(0, len(spec.sublinear_curves), size=count)
    cap = rng.integers(0, len(caps), size=count)
    index = np.where(kind == 0, 0, np.where(kind == 1, 1 + sub, 1 + len(spec.sublinear_curves) + cap))
    return table, index


def _deadline_reference(spec: WorkloadSpec, durations: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The run time each job's slack multiplies: ``dur_7g`` (rule "p1") or ``dur_g`` for a uniformly drawn
    size ``g`` (rule "slice-aware"; drawn last, so the other attributes do not depend on the rule)."""
    if spec.deadline_rule == "p1":
        return durations[:, -1]
    column = rng.integers(0, durations.shape[1], size=durations.shape[0])
    return np.asarray(durations[np.arange(durations.shape[0]), column], dtype=np.float64)


def _check_seed(seed: object, name: str = "seed") -> None:
    """ConfigError unless ``seed`` is a whole number >= 0 (not a bool) or a SeedSequence."""
    if isinstance(seed, np.random.SeedSequence):
        return
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"{name} must be a whole number >= 0 or a numpy SeedSequence, got {seed!r}")


def generate_jobs(
    spec: WorkloadSpec, seed: int | np.random.SeedSequence, *, offset_s: float = 0.0, id_prefix: str = ""
) -> list[Job]:
    """A job queue drawn from ``spec``: P1's mix over the spec's arrival process, sorted by arrival.

    ``offset_s`` is added to every arrival and deadline, and ``id_prefix`` put before every job id (a
    stream of days, :func:`wattsched.cluster.stream_jobs`); the draws do not depend on them.

    Args:
        spec: a :class:`WorkloadSpec`: one arrival source, ``rate_per_min`` (jobs/min, Poisson) or
            ``profile`` (``"alibaba-day"``, P1's Fig. 5 hourly profile), over ``hours`` (default 24 h);
            ``inference_share`` (default 0.8), ``rate_multiplier`` (default 1), ``deadline_rule``
            (``"p1"`` default, or ``"slice-aware"``); the other fields default to P1 Sec. V-A.
        seed: a whole number >= 0 (or a :class:`numpy.random.SeedSequence`); the same seed gives the same
            jobs.

    Returns:
        Jobs with ids ``j000000, j000001, ...``; times in seconds (arrival, deadline, run time per compute
        size 1, 2, 3, 4, 7 and on the MIG-disabled GPU).

    Raises:
        ConfigError: (a ValueError) naming the argument when ``spec`` or ``seed`` is not valid.
    """
    _check_seed(seed)
    if not isinstance(spec, WorkloadSpec):
        raise ConfigError(f"spec must be a WorkloadSpec, got {type(spec).__name__}")
    arrival_rng, attribute_rng = _child_generators(seed, 2)
    arrivals = _arrivals(spec, arrival_rng)
    count = arrivals.size
    rng = attribute_rng
    inference = rng.random(count) < spec.inference_share
    inference_s = rng.exponential(spec.inference_mean_s, size=count)
    training_s = rng.uniform(spec.training_range_s[0], spec.training_range_s[1], size=count)
    table, curve_index = _curve_choice(spec, count, rng)
    slack = rng.uniform(spec.deadline_slack[0], spec.deadline_slack[1], size=count)

    dur_1g = np.maximum(np.where(inference, inference_s, training_s), _MIN_DURATION_S)
    speedups = np.asarray([c.speedups for c in table], dtype=np.float64)[curve_index]
    durations = dur_1g[:, None] / speedups  # one column per size of P1_SIZES (1, 2, 3, 4, 7)
    dur_7g = durations[:, -1]
    linear = np.asarray([c.kind == Scaling.LINEAR for c in table])[curve_index]
    full = np.where(linear, dur_7g / spec.full_gpu_speedup, dur_7g)
    deadlines = arrivals + slack * _deadline_reference(spec, durations, rng)

    kinds = np.where(inference, 0, 1).tolist()
    chosen = curve_index.tolist()
    kind_values = (JobKind.INFERENCE, JobKind.TRAINING)
    labels = [c.kind for c in table]
    if offset_s:
        arrivals = arrivals + offset_s
        deadlines = deadlines + offset_s
    return [
        Job(f"{id_prefix}j{i:06d}", arrival, deadline, kind_values[k], labels[c], tuple(row), whole)
        for i, (arrival, deadline, k, c, row, whole) in enumerate(
            zip(
                arrivals.tolist(),
                deadlines.tolist(),
                kinds,
                chosen,
                durations.tolist(),
                full.tolist(),
                strict=True,
            )
        )
    ]
