"""MIG workloads: the job model, scaling curves, arrival processes, generators and trace files."""

from __future__ import annotations

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
