"""wattsched: energy-aware scheduling of AI/ML work on GPUs.

Two systems: MIG scheduling with dynamic repartitioning (Lipe et al., CCGrid 2025) and DVFS-aware deadline
scheduling on CPU-GPU clusters (Mei, Wang et al., TPDS 2022).

The public names below are imported on first use (PEP 562), so ``import wattsched`` is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched._lazy import lazy_exports
from wattsched.errors import ConfigError, InputError, UnknownNameError, WattschedError

if TYPE_CHECKING:
    from wattsched.energy.measure import measure
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "measure": "wattsched.energy",
        "available": "wattsched.hardware.catalogue",
        "load": "wattsched.hardware.catalogue",
        "load_gpu": "wattsched.hardware.catalogue",
        "Configuration": "wattsched.hardware.mig",
        "MigGpu": "wattsched.hardware.mig",
        "Slice": "wattsched.hardware.mig",
        "et_score": "wattsched.metrics",
        "MigSimulation": "wattsched.mig.simulator",
        "SimResult": "wattsched.mig.results",
        "simulate": "wattsched.mig.simulator",
        "WorkloadSpec": "wattsched.workload.generators",
        "generate_jobs": "wattsched.workload.generators",
        "read_trace": "wattsched.workload.traces",
        "write_trace": "wattsched.workload.traces",
        "Job": "wattsched.workload.job",
        "JobKind": "wattsched.workload.job",
        "Scaling": "wattsched.workload.job",
    },
)
