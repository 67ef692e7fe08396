"""Workloads for a cluster: P1's generator scaled to N GPUs (the ``paper`` preset), streamed day by day for
long runs, and trace files with an optional ``gpus`` column.

* **Scaled generator**: the per-GPU arrival process (a rate, or an hourly profile with a rate multiplier)
  times the number of GPUs (a superposition of Poisson processes is Poisson with the summed rate). With one
  GPU it is exactly ``mig run``'s generator.
* **Presets** (docs/concepts/presets.md): ``paper`` = the Fig. 5 day profile (``alibaba-day``) at rate
  multiplier **2.5 per GPU** (~516 jobs per GPU-day); ``literal`` = multiplier 1 (~207 jobs per GPU-day).
* **Streaming** (:func:`stream_jobs`): one generator call per day, seeded ``SeedSequence(seed,
  spawn_key=(day,))``, times shifted by whole days, ids ``d<day>-j<n>``; a month on 1,024 GPUs (~16 M jobs)
  never holds more than a day of jobs. Not the same draws as one call over the whole horizon.
* **Trace files**: docs/howto/import-trace.md traces, plus an optional integer column ``gpus`` (GPUs a job
  needs at once, default 1). A job of several GPUs runs as a gang on whole GPUs of one server
  (:mod:`wattsched.cluster.gangs`); a job needing more GPUs than any server has can never run:
  :func:`oversized_jobs` counts them and the CLI refuses the trace (never drops them).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from wattsched.errors import ConfigError
from wattsched.units import SECONDS_PER_HOUR
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job
from wattsched.workload.traces import read_trace

__all__ = ["PRESETS", "cluster_spec", "oversized_jobs", "preset_spec", "read_cluster_trace", "stream_jobs"]

#: Rate multiplier per GPU of each preset, on the ``alibaba-day`` profile (docs/concepts/presets.md).
PRESETS: dict[str, float] = {"paper": 2.5, "literal": 1.0}
_DAY_S = 86_400.0


def preset_spec(preset: str, hours: float = 24.0) -> WorkloadSpec:
    """The per-GPU workload of a preset."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset '{preset}'; valid: {', '.join(PRESETS)}")
    return WorkloadSpec(profile="alibaba-day", rate_multiplier=PRESETS[preset], hours=hours)


def cluster_spec(per_gpu: WorkloadSpec, gpus: int) -> WorkloadSpec:
    """The whole cluster's arrivals: the per-GPU rate multiplier times ``gpus``."""
    if gpus < 1:
        raise ConfigError(f"a workload needs at least one GPU, got {gpus}")
    return replace(per_gpu, rate_multiplier=per_gpu.rate_multiplier * gpus)


def stream_jobs(per_gpu: WorkloadSpec, gpus: int, seed: int) -> Iterator[Job]:
    """The scaled workload, generated one day at a time (see the module docstring); in arrival order."""
    whole = cluster_spec(per_gpu, gpus)
    days = math.ceil(whole.hours * SECONDS_PER_HOUR / _DAY_S - 1e-9)
    for day in range(days):
        hours = min(24.0, whole.hours - 24.0 * day)
        spec = replace(whole, hours=hours)
        yield from generate_jobs(
            spec,
            np.random.SeedSequence(seed, spawn_key=(day,)),
            offset_s=day * _DAY_S,
            id_prefix=f"d{day:03d}-",
        )


def read_cluster_trace(path: str | Path) -> tuple[list[Job], list[int]]:
    """A trace's jobs and the GPUs each needs (the ``gpus`` column, default 1; see
    :mod:`wattsched.workload.traces`)."""
    jobs = read_trace(path)
    return jobs, [job.gpus for job in jobs]


def oversized_jobs(gpus_needed: list[int], largest_server: int = 1) -> dict[int, int]:
    """How many jobs need each GPU count above ``largest_server`` (none: every job fits on one server)."""
    out: dict[int, int] = {}
    for count in gpus_needed:
        if count > largest_server:
            out[count] = out.get(count, 0) + 1
    return dict(sorted(out.items()))
