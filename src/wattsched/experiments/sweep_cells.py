"""The cells of a sweep: frozen dataclasses, each a pure function of its fields, and the function that runs
one (:func:`run_sweep_cell`, one result row per cell).

A MIG cell draws its jobs exactly as ``wattsched mig run`` does (``generate_jobs(spec, seed)`` with a
duration for every compute size of the GPU), so every configuration, policy and partitioner of a (GPU,
workload, seed) sees the same jobs. A fixed cell runs :func:`~wattsched.mig.simulator.simulate` like
``mig run``; a partitioner cell runs a whole day through the experiment protocol
(:func:`~wattsched.experiments.protocol.build_policy` and
:func:`~wattsched.mig.partition.runner.run_day`) like ``mig day``. A DVFS cell generates P2 tasks
and schedules them like ``wattsched dvfs run`` (P2's rules, the GPU's cluster constants).
Files (traces, GPU TOMLs) enter a cell with a digest of their bytes, so an edited file is a new cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattsched.plugins import PluginReference, import_references

__all__ = ["DvfsRunCell", "MigRunCell", "WorkloadCell", "run_sweep_cell"]


@dataclass(frozen=True)
class WorkloadCell:
    """A MIG workload: generated (``profile`` or ``rate_per_min``; jobs/min, hours) or a ``trace`` file."""

    profile: str | None = None
    rate_per_min: float | None = None
    rate_multiplier: float = 1.0
    hours: float = 24.0
    inference_share: float = 0.8
    deadline_rule: str = "p1"
    trace: str | None = None
    trace_digest: str = ""
    horizon_s: float | None = None

    @property
    def label(self) -> str:
        """The ``workload`` column: the trace's file name, or the profile name / ``poisson-<rate>/min`` with
        the inference share and deadline rule when they are not the defaults (0.8, p1)."""
        if self.trace is not None:
            return Path(self.trace).name
        name = self.profile if self.profile is not None else f"poisson-{self.rate_per_min:g}/min"
        if self.inference_share != 0.8:
            name += f" inference={self.inference_share:g}"
        return name if self.deadline_rule == "p1" else f"{name} {self.deadline_rule}"

    def spec(self) -> Any:
        from wattsched.workload.generators import WorkloadSpec

        return WorkloadSpec(
            profile=self.profile,
            rate_per_min=self.rate_per_min,
            hours=self.hours,
            rate_multiplier=self.rate_multiplier,
            inference_share=self.inference_share,
            deadline_rule=self.deadline_rule,
        )


@dataclass(frozen=True)
class MigRunCell:
    """One MIG run: a fixed (configuration, policy) when ``partitioner == "none"``, else a partitioner's day.

    ``gpu`` is the name the sweep file gives, ``gpu_ref`` what is loaded (a name or an absolute TOML path),
    ``gpu_digest`` the TOML file's digest ("" for catalogue names). ``plugin_code``: the source digest of the
    modules outside wattsched that define the cell's policy, partitioner or GPU ("" for wattsched's own), so
    an edited plug-in is a new cell. ``plugins``: the plug-in modules a worker imports before it runs the
    cell (not part of the cell's repr).
    """

    gpu: str
    gpu_ref: str
    gpu_digest: str
    configuration: str
    policy: str
    partitioner: str
    workload: WorkloadCell
    seed: int
    plugin_code: str = ""
    plugins: tuple[PluginReference, ...] = field(default=(), repr=False, compare=False)

    @property
    def key(self) -> str:
        what = f"{self.configuration}/{self.policy}" if self.partitioner == "none" else self.partitioner
        w = self.workload
        return f"mig/{self.gpu}/{w.label}/x{w.rate_multiplier:g}/{w.hours:g}h/s{self.seed}/{what}"


@dataclass(frozen=True)
class DvfsRunCell:
    """One P2 run: ``round(pairs·util)`` generated tasks (``mode`` offline or online) on servers of
    ``pairs_per_server`` pairs, scheduled by ``algo`` with DVFS on or off and readjustment ``theta``."""

    gpu: str
    gpu_ref: str
    gpu_digest: str
    mode: str
    util: float
    pairs: int
    pairs_per_server: int
    algo: str
    theta: float
    dvfs: bool
    seed: int

    @property
    def key(self) -> str:
        return (
            f"dvfs/{self.gpu}/{self.mode}/U{self.util:g}/p{self.pairs}/l{self.pairs_per_server}/s{self.seed}/"
            f"{self.algo}/theta{self.theta:g}/{'on' if self.dvfs else 'off'}"
        )

    @property
    def policy(self) -> str:
        """The ``policy`` column: the algorithm, ``+dvfs`` when DVFS is on, and θ when below 1."""
        name = f"{self.algo}+dvfs" if self.dvfs else self.algo
        return f"{name} θ={self.theta:g}" if self.theta < 1 else name


def run_sweep_cell(cell: MigRunCell | DvfsRunCell) -> list[dict[str, Any]]:
    """The result row of one cell (a list of one row, as the store expects)."""
    if isinstance(cell, DvfsRunCell):
        return [_dvfs_row(cell)]
    import_references(cell.plugins)  # a worker process that did not inherit them (spawn, Ray)
    return [_mig_row(cell)]


def _jobs(cell: MigRunCell, gpu: Any) -> tuple[list[Any], float]:
    from wattsched.workload.generators import generate_jobs
    from wattsched.workload.traces import read_trace, require_single_gpu, require_sizes

    workload = cell.workload
    if workload.trace is not None:
        jobs = read_trace(workload.trace)
        require_single_gpu(jobs, workload.trace, "a sweep's MIG run")
        require_sizes(jobs, gpu.compute_sizes, workload.trace)
        horizon_s = max(job.arrival_s for job in jobs)
        return jobs, workload.horizon_s if workload.horizon_s is not None else horizon_s
    spec = workload.spec()
    jobs = [job.with_sizes(gpu.compute_sizes) for job in generate_jobs(spec, cell.seed)]
    return jobs, float(spec.horizon_s)


def _mig_row(cell: MigRunCell) -> dict[str, Any]:
    from wattsched.hardware.catalogue import load_gpu

    gpu = load_gpu(cell.gpu_ref)
    jobs, horizon_s = _jobs(cell, gpu)
    result: Any  # a SimResult either way
    if cell.partitioner == "none":
        from wattsched.mig.simulator import simulate

        result = simulate(jobs, cell.configuration, cell.policy, gpu=gpu, horizon_s=horizon_s)
        configuration, policy = cell.configuration, cell.policy
    else:
        from wattsched.experiments.protocol import Method, Setting, build_policy
        from wattsched.experiments.sweep import PARTITIONER_CHOICES
        from wattsched.mig.partition import PARTITIONERS
        from wattsched.mig.partition.runner import run_day

        if cell.partitioner in PARTITIONER_CHOICES and cell.workload.trace is None:
            # The lookahead's ET coefficient and jobs per day come from pilot days drawn from the workload.
            setting = Setting(seed=cell.seed, workload=cell.workload.spec(), gpu=cell.gpu_ref)
            partitioner = build_policy(Method(cell.partitioner), setting)
        else:  # a trace has no days to draw, and a plug-in's partitioner: each with its defaults, as
            # `mig day --trace` does
            partitioner = PARTITIONERS.make(cell.partitioner)
        day = run_day(jobs, partitioner, horizon_s=horizon_s, gpu=gpu, seed=cell.seed)
        result = day.result
        configuration, policy = str(day.initial_configuration), partitioner.scheduler
    bound_j = _energy_bound(cell, gpu, jobs, horizon_s)
    return {
        "part": "mig",
        "gpu": cell.gpu,
        "configuration": configuration,
        "policy": policy,
        "partitioner": cell.partitioner,
        "workload": cell.workload.label,
        "rate_multiplier": cell.workload.rate_multiplier if cell.workload.trace is None else math.nan,
        "hours": cell.workload.hours if cell.workload.trace is None else math.nan,
        "seed": cell.seed,
        **result.metrics(),
        "unfinished_jobs": int(result.unfinished_jobs),
        "end_s": float(result.end_s),
        "bound_energy_j": bound_j,
        "gap_to_bound": float(result.energy_j) / bound_j - 1.0 if bound_j > 0 else math.nan,
    }


#: The energy bound of each (GPU, workload, seed) a process has met: the cells of one trace share it.
_BOUNDS: dict[tuple[str, str, WorkloadCell, int], float] = {}


def _energy_bound(cell: MigRunCell, gpu: Any, jobs: list[Any], horizon_s: float) -> float:
    """The energy no schedule of the cell's jobs beats on its GPU (docs/concepts/bound.md), as ``mig day``
    reports it: time cut at every event up to 60 jobs, else on an hour's grid."""
    from wattsched.mig.bound import DAY_GRID_S, auto_resolution, lower_bound

    key = (cell.gpu_ref, cell.gpu_digest, cell.workload, cell.seed)
    if key not in _BOUNDS:
        step = auto_resolution(len(jobs), DAY_GRID_S)
        _BOUNDS[key] = lower_bound(jobs, gpu, horizon_s, resolution_s=step, tardiness=False).energy_j
    return _BOUNDS[key]


def _dvfs_row(cell: DvfsRunCell) -> dict[str, Any]:
    import numpy as np

    from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig
    from wattsched.dvfs.offline import run_offline
    from wattsched.dvfs.online import run_online
    from wattsched.dvfs.tasks import GeneratorSpec, generate_offline, generate_online
    from wattsched.hardware.dvfs import load_dvfs_gpu

    gpu = load_dvfs_gpu(cell.gpu_ref)
    base = gpu.cluster
    cluster = ClusterConfig(
        pairs=cell.pairs,
        pairs_per_server=cell.pairs_per_server,
        idle_power_w=base.idle_power_w,
        turn_on_j_per_pair=base.turn_on_j_per_pair,
        slot_s=base.slot_s,
        drs_idle_slots=base.drs_idle_slots,
    )
    dvfs = DvfsConfig(enabled=cell.dvfs, theta=cell.theta, interval=gpu.interval("wide"), hkbu_grid=gpu.hkbu)
    make = generate_offline if cell.mode == "offline" else generate_online
    tasks = make(cell.util, cell.pairs, cell.seed, GeneratorSpec(slot_s=cluster.slot_s))
    runner = run_offline if cell.mode == "offline" else run_online
    result = runner(tasks, cell.algo, cluster, dvfs, keep_schedule=True)
    assert result.schedule is not None
    # Late by more than float noise, with the tolerance the run's deadline_misses count uses.
    deadline_s = tasks.deadline_s
    late = result.schedule.end_s > deadline_s + 1e-9 * np.maximum(np.abs(deadline_s), 1.0)
    lateness_s = np.where(late, result.schedule.end_s - deadline_s, 0.0)
    return {
        "part": "dvfs",
        "gpu": cell.gpu,
        "configuration": f"{cell.pairs} pairs, l={cell.pairs_per_server}",
        "policy": cell.policy,
        "partitioner": "none",
        "workload": f"{cell.mode} U={cell.util:g}",
        "seed": cell.seed,
        "energy_j": float(result.energy_total_j),
        "avg_tardiness_s": float(lateness_s.mean()) if lateness_s.size else 0.0,
        "max_tardiness_s": float(lateness_s.max()) if lateness_s.size else 0.0,
        "jobs": int(result.tasks),
        "late_jobs": int(result.deadline_misses),
        "unfinished_jobs": 0,  # P2's schedules place every task
        "preemptions": 0,  # P2's tasks run to completion on their pair
        "end_s": float(result.end_s),
        "mode": cell.mode,
        "util": cell.util,
        "pairs": cell.pairs,
        "pairs_per_server": cell.pairs_per_server,
        "algo": cell.algo,
        "theta": cell.theta,
        "dvfs": "on" if cell.dvfs else "off",
        "energy_run_j": float(result.energy_run_j),
        "energy_idle_j": float(result.energy_idle_j),
        "energy_overhead_j": float(result.energy_overhead_j),
        "pairs_used": int(result.pairs_used),
        "turn_ons": int(result.turn_ons),
    }
