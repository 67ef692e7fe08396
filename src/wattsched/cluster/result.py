"""The result of a cluster run (units: s, J, W; docs/concepts/datacentre.md)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from wattsched.mig.results import JobRecord, SimResult

__all__ = ["SUMMARY_KEYS", "ClusterJobRecord", "ClusterResult"]

#: Keys ``cluster run --json`` always prints (docs/concepts/datacentre.md).
SUMMARY_KEYS = (
    "energy_j",
    "energy_idle_j",
    "energy_overhead_j",
    "avg_tardiness_s",
    "jobs",
    "late_jobs",
    "repartitions",
    "gpus",
    "server_turn_ons",
    "end_s",
)


@dataclass(frozen=True, slots=True)
class ClusterJobRecord:
    """One job's record (:class:`~wattsched.mig.JobRecord`) and the GPU that ran it."""

    gpu: int
    record: JobRecord


@dataclass(frozen=True)
class ClusterResult:
    """Totals of one cluster run.

    Energy: ``energy_j = energy_gpu_j + energy_host_j + energy_overhead_j`` where ``energy_gpu_j`` is the sum
    of every GPU's power integral while its server is on (``gpu_energy_j``), ``energy_host_j`` the servers'
    host power while on, and ``energy_overhead_j`` the turn-on energy. The same total splits as
    ``energy_run_j + energy_idle_j + energy_overhead_j`` (P2's split, docs/concepts/dvfs.md): GPU energy with
    at least one busy slice / GPU idle power while on (blackouts included) plus host power / turn-ons.
    """

    energy_j: float
    energy_gpu_j: float
    energy_run_j: float
    energy_idle_j: float
    energy_host_j: float
    energy_overhead_j: float
    avg_tardiness_s: float
    max_tardiness_s: float
    jobs: int
    late_jobs: int
    preemptions: int
    repartitions: int
    #: Seconds without slices because of repartitions, summed over the GPUs (each repartition of a GPU
    #: costs its model's ``repartition_s``).
    blackout_s: float
    end_s: float
    gpus: int
    servers: int
    server_turn_ons: int
    #: Jobs placed by the fallback (no available GPU suited them): on a booting server or the least-loaded.
    fallback_placements: int
    gpu_energy_j: tuple[float, ...]
    gpu_jobs: tuple[int, ...]
    #: Seconds each server spent off (booting included) over [0, end_s].
    server_off_s: tuple[float, ...]
    #: Each stretch a server was off (booting included), as ``(server, start_s, end_s)``.
    server_off_intervals: tuple[tuple[int, float, float], ...]
    #: Step function of GPUs on (GPUs of servers that are on; booting counts as off): ``(time_s, gpus_on)``
    #: at each change.
    gpus_on: tuple[tuple[float, int], ...]
    #: Seconds GPUs spent at each clock level, by SM clock in MHz (GPUs with a clock governor only).
    clock_time_s: dict[int, float] = field(default_factory=dict)
    #: Per-job tardiness (s, 0 when on time), in the order jobs were given; empty when not kept.
    tardiness_s: array[float] = field(default_factory=lambda: array("d"))
    records: tuple[ClusterJobRecord, ...] | None = None
    #: Each GPU's own result (its engine's energy integrates idle power over off stretches too; the
    #: cluster's ``gpu_energy_j`` subtracts it).
    gpu_results: tuple[SimResult, ...] = ()
    #: Jobs that had not completed when the run ended, over every GPU (0 for a run that runs to its end).
    unfinished_jobs: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able scalars (docs/concepts/datacentre.md keys and more); per-job and per-GPU series are left
        out."""
        return {
            "energy_j": self.energy_j,
            "energy_gpu_j": self.energy_gpu_j,
            "energy_run_j": self.energy_run_j,
            "energy_idle_j": self.energy_idle_j,
            "energy_host_j": self.energy_host_j,
            "energy_overhead_j": self.energy_overhead_j,
            "avg_tardiness_s": self.avg_tardiness_s,
            "max_tardiness_s": self.max_tardiness_s,
            "jobs": self.jobs,
            "late_jobs": self.late_jobs,
            "preemptions": self.preemptions,
            "repartitions": self.repartitions,
            "blackout_s": self.blackout_s,
            "end_s": self.end_s,
            "gpus": self.gpus,
            "servers": self.servers,
            "server_turn_ons": self.server_turn_ons,
            "fallback_placements": self.fallback_placements,
            "gpu_hours_on": self.gpu_hours_on,
            "unfinished_jobs": self.unfinished_jobs,
        }

    @property
    def gpu_hours_on(self) -> float:
        """GPU-hours with the GPU's server on (booting counts as off)."""
        return sum(self.gpus_on_seconds()) / 3600.0

    def gpus_on_seconds(self) -> list[float]:
        """GPU-seconds on, per interval of the ``gpus_on`` step function."""
        out = []
        steps = self.gpus_on
        for (start, count), (stop, _) in zip(steps, (*steps[1:], (self.end_s, 0)), strict=True):
            out.append(max(min(stop, self.end_s) - start, 0.0) * count)
        return out
