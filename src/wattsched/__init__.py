"""wattsched: energy-aware scheduling of AI/ML work on GPUs.

Two systems: MIG scheduling with dynamic repartitioning (Lipe et al., CCGrid 2025) and DVFS-aware deadline
scheduling on CPU-GPU clusters (Mei, Wang et al., TPDS 2022).
"""

from __future__ import annotations

from wattsched.energy.measure import measure
from wattsched.errors import ConfigError, InputError, UnknownNameError, WattschedError
from wattsched.hardware.catalogue import available, load, load_gpu
from wattsched.hardware.mig import Configuration, MigGpu, Slice
from wattsched.metrics import et_score
from wattsched.mig import MigSimulation, SimResult, simulate
from wattsched.workload import WorkloadSpec, generate_jobs, read_trace, write_trace
from wattsched.workload.job import Job, JobKind, Scaling

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Configuration",
    "InputError",
    "Job",
    "JobKind",
    "MigGpu",
    "MigSimulation",
    "Scaling",
    "SimResult",
    "Slice",
    "UnknownNameError",
    "WattschedError",
    "WorkloadSpec",
    "__version__",
    "available",
    "et_score",
    "generate_jobs",
    "load",
    "load_gpu",
    "measure",
    "read_trace",
    "simulate",
    "write_trace",
]
