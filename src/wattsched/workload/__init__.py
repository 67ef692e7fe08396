"""MIG workloads: the job model, scaling curves, arrival processes, generators and trace files.
Public names are imported on first use (PEP 562): importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched._lazy import lazy_exports

if TYPE_CHECKING:
    from wattsched.workload.arrivals import PROFILES, ArrivalProfile, poisson_arrivals, profile_arrivals
    from wattsched.workload.generators import WorkloadSpec, generate_jobs
    from wattsched.workload.job import DURATION_COLUMNS, Job, JobKind, Scaling
    from wattsched.workload.scaling import (
        SUBLINEAR_CURVES,
        ScalingCurve,
        capped_curve,
        durations_from_base,
        linear_curve,
    )
    from wattsched.workload.traces import frame_to_jobs, jobs_to_frame, read_trace, write_trace

__all__ = [
    "DURATION_COLUMNS",
    "PROFILES",
    "SUBLINEAR_CURVES",
    "ArrivalProfile",
    "Job",
    "JobKind",
    "Scaling",
    "ScalingCurve",
    "WorkloadSpec",
    "capped_curve",
    "durations_from_base",
    "frame_to_jobs",
    "generate_jobs",
    "jobs_to_frame",
    "linear_curve",
    "poisson_arrivals",
    "profile_arrivals",
    "read_trace",
    "write_trace",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "PROFILES": "wattsched.workload.arrivals",
        "ArrivalProfile": "wattsched.workload.arrivals",
        "poisson_arrivals": "wattsched.workload.arrivals",
        "profile_arrivals": "wattsched.workload.arrivals",
        "WorkloadSpec": "wattsched.workload.generators",
        "generate_jobs": "wattsched.workload.generators",
        "DURATION_COLUMNS": "wattsched.workload.job",
        "Job": "wattsched.workload.job",
        "JobKind": "wattsched.workload.job",
        "Scaling": "wattsched.workload.job",
        "SUBLINEAR_CURVES": "wattsched.workload.scaling",
        "ScalingCurve": "wattsched.workload.scaling",
        "capped_curve": "wattsched.workload.scaling",
        "durations_from_base": "wattsched.workload.scaling",
        "linear_curve": "wattsched.workload.scaling",
        "frame_to_jobs": "wattsched.workload.traces",
        "jobs_to_frame": "wattsched.workload.traces",
        "read_trace": "wattsched.workload.traces",
        "write_trace": "wattsched.workload.traces",
    },
)
