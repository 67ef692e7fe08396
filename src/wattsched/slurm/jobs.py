"""A Slurm job as the MIG engine sees it: its run time on each slice size from its annotation.

A job's annotation gives its work as the run time alone on the whole GPU (``work=``) and its scaling family;
the run time on a slice of g compute slices follows the family's speed-up curve S(g) (``dur_g = dur_1g /
S(g)``), the same curves the trace generator draws from: ``linear`` S(g) = g (the whole GPU 6 % faster than
a 7g slice), ``sublinear`` S(g) = g^0.75, ``capped`` S(g) = min(g, 3).
"""

from __future__ import annotations

from wattsched.workload.job import P1_SIZES, Job, JobKind, Scaling
from wattsched.workload.scaling import (
    DEFAULT_FULL_GPU_SPEEDUP,
    FAMILY_CURVES,
    ScalingCurve,
    durations_from_base,
)

__all__ = ["CURVES", "engine_job"]

#: The speed-up curve of each scaling family for annotated jobs (module docstring).
CURVES: dict[Scaling, ScalingCurve] = FAMILY_CURVES


def engine_job(
    job_id: str, arrival_s: float, deadline_s: float, kind: JobKind, scaling: Scaling, work_s: float
) -> Job:
    """The engine's job (times relative to the model's origin) for ``work_s`` seconds on the whole GPU."""
    curve = CURVES[Scaling(scaling)]
    dur_7g = work_s * DEFAULT_FULL_GPU_SPEEDUP if curve.kind == Scaling.LINEAR else work_s
    durations = durations_from_base(dur_7g * curve.speedups[-1], curve)
    return Job(
        job_id, arrival_s, deadline_s, JobKind(kind), Scaling(scaling), durations[:5], durations[5], P1_SIZES
    )
