"""Tables of one MIG simulation: :func:`records_frame`, one row per job (what ``mig run --jobs-out`` writes).

Columns (:data:`RECORD_COLUMNS`):

=================  ==========================================================================================
``job_id``         the job
``start_s``        first time the job ran, s (NaN: never ran)
``completion_s``   completion time, s (NaN: not finished)
``tardiness_s``    ``max(0, completion_s - deadline_s)``, s
``preemptions``    times the job was stopped before it finished
``kind``           ``inference`` | ``training`` (empty when the jobs are not given)
``arrival_s``      arrival time, s
``deadline_s``     the deadline tardiness is measured against, s
``slice``          the slices it ran on, in order, ``profile@start`` joined by ``+`` (``full`` without MIG)
``compute``        compute slices of the slice it ran on longest
``energy_j``       the job's share of the board's energy, J (below)
=================  ==========================================================================================

**Energy per job.** At each instant the board's power (the GPU's power model in the busy state of that
instant, as ``wattsched plot`` draws it) is split among the jobs running then in proportion to their compute
slices. Energy drawn while nothing runs (idle time, repartition blackouts) belongs to no job, so for a run
without ``--power-curve``/``--power-cap`` the column sums to the run's ``energy_j`` minus that idle energy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from wattsched.hardware.mig import MigGpu
    from wattsched.mig.results import SimResult
    from wattsched.workload.job import Job

__all__ = ["RECORD_COLUMNS", "idle_energy_j", "records_frame"]

#: The five columns every run's job table starts with (``job_id, start_s, completion_s, tardiness_s,
#: preemptions``), then the rest.
RECORD_COLUMNS = (
    "job_id",
    "start_s",
    "completion_s",
    "tardiness_s",
    "preemptions",
    "kind",
    "arrival_s",
    "deadline_s",
    "slice",
    "compute",
    "energy_j",
)


def records_frame(result: SimResult, jobs: Iterable[Job] = (), gpu: MigGpu | None = None) -> pd.DataFrame:
    """One row per job of ``result`` (simulated with ``record_jobs=True``) on ``gpu`` (default: P1's
    A100-40GB), columns :data:`RECORD_COLUMNS`. ``jobs`` (the simulated jobs) fill ``kind``. Raises
    ValueError when the result has no records."""
    import pandas as pd

    from wattsched.viz.timeline import RUN, timeline_frame

    if result.records is None:
        raise ValueError("the result has no per-job records: simulate with record_jobs=True")
    job_list = list(jobs)
    kinds = {job.job_id: job.kind.value for job in job_list}
    timeline = timeline_frame(result, gpu, jobs=job_list)
    runs = timeline[timeline["kind"] == RUN]
    energy = _stretch_energy_j(timeline, runs, gpu)
    per_job: dict[str, float] = {}
    slices: dict[str, list[str]] = {}
    longest: dict[str, tuple[float, int]] = {}
    for job_id, profile, start, compute, length, joules in zip(
        runs["job_id"],
        runs["profile"],
        runs["slice_start"],
        runs["compute"],
        runs["end_s"] - runs["start_s"],
        energy,
        strict=True,
    ):
        per_job[job_id] = per_job.get(job_id, 0.0) + float(joules)
        name = f"{profile}@{start}" if profile != "full" else "full"
        names = slices.setdefault(job_id, [])
        if not names or names[-1] != name:
            names.append(name)
        if length > longest.get(job_id, (-1.0, 0))[0]:
            longest[job_id] = (float(length), int(compute))
    rows = [
        {
            "job_id": r.job_id,
            "kind": kinds.get(r.job_id, ""),
            "arrival_s": float(r.arrival_s),
            "deadline_s": float(r.deadline_s),
            "start_s": float(r.start_s),
            "completion_s": float(r.completion_s),
            "tardiness_s": float(r.tardiness_s),
            "preemptions": int(r.preemptions),
            "slice": "+".join(slices.get(r.job_id, [])),
            "compute": longest.get(r.job_id, (0.0, 0))[1],
            "energy_j": per_job.get(r.job_id, 0.0),
        }
        for r in result.records
    ]
    frame = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    return frame.astype({"preemptions": "int64", "compute": "int64", "energy_j": "float64"})


def _stretch_energy_j(timeline: pd.DataFrame, runs: pd.DataFrame, gpu: MigGpu | None) -> np.ndarray:
    """Joules of each run row: the board's power split by compute slices among the rows running then."""
    from wattsched.viz.timeline import power_series

    series = power_series(timeline, gpu)
    times = series["start_s"].to_numpy(dtype=float)
    busy = series["busy_units"].to_numpy(dtype=float)
    power = np.nan_to_num(series["power_w"].to_numpy(dtype=float))
    per_unit_w = np.divide(power, busy, out=np.zeros_like(power), where=busy > 0)
    # W per busy compute slice is constant on [times[k], times[k+1]); its integral up to each step time.
    integral = np.concatenate(([0.0], np.cumsum(per_unit_w[:-1] * np.diff(times))))
    first = np.searchsorted(times, runs["start_s"].to_numpy(dtype=float))
    last = np.searchsorted(times, runs["end_s"].to_numpy(dtype=float))
    stretch_j: np.ndarray = runs["compute"].to_numpy(dtype=float) * (integral[last] - integral[first])
    return stretch_j


def idle_energy_j(result: SimResult, gpu: MigGpu | None = None) -> float:
    """Joules drawn while no job ran (idle time and blackouts; what :func:`records_frame` leaves unassigned)
    under the GPU's default power model: ``busy_time_s[0]`` times the idle power."""
    from wattsched.hardware.mig import default_gpu

    resolved = gpu if gpu is not None else default_gpu()
    return float(result.busy_time_s[0]) * float(resolved.power.idle_w)
