"""A data centre of MIG GPUs: energy and tardiness of placement × partitioner × power states ×
clocks, on the Alibaba 2023 replay and on a synthetic 64-GPU cluster, against the baseline "no MIG, always on,
default clocks".

Workloads:

* ``alibaba``: the whole Alibaba 2023 pod list (``cluster import`` rules: gpu_milli to the observed slice,
  QoS to the job class, P1's deadline rule) replayed on its node list, 6,212 GPUs on 1,213 servers. Pods
  observed running longer than ``max_duration_s`` (default 2 days) are left out: a few pods ran for months,
  and every GPU of an always-on cluster idles until the last completion, so one such pod would decide the
  whole comparison.
* ``synthetic``: 64 GPUs (8 servers × 8) at the ``paper`` load (Fig. 5 profile, rate multiplier 2.5 per GPU),
  a day at quick scale and a week at paper scale.

Both run on H200s (the study's ``gpu`` option; the Alibaba node models are mapped to it): the H200 is the
catalogue entry with a clock table, so the clock dimension exists (the A100-40GB entry has none). Every MIG
cell uses restricted EDF-SS and starts in configuration 3; the baseline runs each GPU with MIG disabled under
preemptive EDF (EDF-FS on its one slice, as P1's No-MIG), first-fit, servers always on, default clocks.

Rows (``part``): ``run`` (one per cell: energy by component, tardiness, GPU-hours on, turn-ons,
repartitions), ``cdf`` (101 quantiles of per-job tardiness) and ``timeline`` (mean GPUs on per time bin).
The figures draw these tables (:mod:`wattsched.studies.cluster_report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wattsched.errors import ConfigError
from wattsched.experiments.study import STUDIES, Row, Scale

__all__ = ["ClusterCell", "ClusterStudy", "run_cluster_cell"]

WORKLOADS = ("alibaba", "synthetic")
BASELINE = ("first-fit", "no-mig", False, False)
_QUANTILES = np.linspace(0.0, 1.0, 101)
_TIMELINE_BINS = 96
_TRACES = {"pods": "traces/openb_pod_list_default.csv", "nodes": "traces/openb_node_list_all_node.csv"}


@dataclass(frozen=True)
class ClusterCell:
    """One cluster run: a workload and one choice of each dimension."""

    workload: str
    placement: str
    partitioner: str
    power_states: bool
    clocks: bool
    gpu: str
    days: float
    seed: int
    data_dir: str
    max_duration_s: float = 2 * 86_400.0

    @property
    def baseline(self) -> bool:
        return (self.placement, self.partitioner, self.power_states, self.clocks) == BASELINE

    @property
    def key(self) -> str:
        power = "drs" if self.power_states else "on"
        clocks = "dvfs" if self.clocks else "default"
        return f"{self.workload}/{self.placement}/{self.partitioner}/{power}/{clocks}"


@cache
def _alibaba(data_dir: str, gpu: str, max_duration_s: float) -> tuple[Any, list[Any], float]:
    from wattsched.cluster.nodes import gpu_models, read_node_list
    from wattsched.workload.adapters import ImportOptions, import_trace

    mapping = {model: gpu for model in gpu_models()}
    nodes = read_node_list(Path(data_dir) / _TRACES["nodes"], mapping, fallback=gpu)
    options = ImportOptions(max_duration_s=max_duration_s)
    jobs, report = import_trace("alibaba-2023", Path(data_dir) / _TRACES["pods"], options)
    return nodes.spec, jobs, report.horizon_s


def run_cluster_cell(cell: ClusterCell) -> list[Row]:
    """Run one cell and return its rows (see the module docstring)."""
    from wattsched.cluster import (
        ClusterOptions,
        ClusterSimulation,
        ClusterSpec,
        PowerStates,
        cluster_spec,
        preset_spec,
    )
    from wattsched.workload.generators import generate_jobs

    if cell.workload == "alibaba":
        spec, jobs, horizon_s = _alibaba(cell.data_dir, cell.gpu, cell.max_duration_s)
    else:
        spec = ClusterSpec.homogeneous(8, 8, cell.gpu)
        per_gpu = preset_spec("paper", hours=24.0 * cell.days)
        jobs = generate_jobs(cluster_spec(per_gpu, spec.gpus), cell.seed)
        horizon_s = per_gpu.horizon_s
    options = ClusterOptions(
        placement=cell.placement,
        partitioner=cell.partitioner,
        configuration=None if cell.partitioner != "static" else 3,
        policy="edf-fs" if cell.partitioner == "no-mig" else "edf-ss-restricted",
        power_states=PowerStates(enabled=cell.power_states),
        clocks=cell.clocks,
        seed=cell.seed,
    )
    result = ClusterSimulation(spec, options, horizon_s=horizon_s).run(jobs)
    base: Row = {
        "key": cell.key,
        "workload": cell.workload,
        "placement": cell.placement,
        "partitioner": cell.partitioner,
        "power_states": cell.power_states,
        "clocks": cell.clocks,
        "baseline": cell.baseline,
    }
    rows: list[Row] = [
        {
            **base,
            "part": "run",
            "x": 0.0,
            "y": 0.0,
            **{k: float(v) for k, v in result.to_dict().items()},
            "horizon_s": float(horizon_s),
        }
    ]
    tardiness = np.asarray(result.tardiness_s, dtype=float)
    for q, value in zip(_QUANTILES, np.quantile(tardiness, _QUANTILES), strict=True):
        rows.append({**base, "part": "cdf", "x": float(q), "y": float(value)})
    for start, mean in _binned_gpus_on(result.gpus_on, min(result.end_s, max(horizon_s, 1.0))):
        rows.append({**base, "part": "timeline", "x": start, "y": mean})
    return rows


def _binned_gpus_on(steps: tuple[tuple[float, int], ...], end_s: float) -> list[tuple[float, float]]:
    """Time-weighted mean GPUs on in each of :data:`_TIMELINE_BINS` equal bins of ``[0, end_s]``."""
    edges = np.linspace(0.0, end_s, _TIMELINE_BINS + 1)
    times = np.array([t for t, _ in steps] + [end_s])
    counts = np.array([n for _, n in steps], dtype=float)
    # Integral of the step function up to each edge, then differences per bin.
    cumulative = np.concatenate([[0.0], np.cumsum(np.diff(times) * counts)])
    at_edges = np.interp(edges, times, cumulative)
    width = np.diff(edges)
    means = np.diff(at_edges) / np.where(width > 0, width, 1.0)
    return [(float(a), float(m)) for a, m in zip(edges[:-1], means, strict=True)]


class ClusterStudy:
    """Options: ``gpu`` (default ``h200-141gb``), ``days`` of the synthetic run (quick 1, paper 7),
    ``placements``, ``partitioners``, ``workloads``, ``seed`` (default 14), ``data_dir`` (the data folder of
    :func:`~wattsched.studies.real_workloads.find_data_dir`; without it the Alibaba replay is left out),
    ``max_duration_s`` (Alibaba pods observed longer are left out; default 2 days)."""

    name = "cluster"

    def __init__(
        self,
        *,
        gpu: str = "h200-141gb",
        days: float | None = None,
        placements: list[str] | None = None,
        partitioners: list[str] | None = None,
        workloads: list[str] | None = None,
        seed: int = 14,
        data_dir: str | None = None,
        max_duration_s: float = 2 * 86_400.0,
        iterations: int | None = None,
    ) -> None:
        from wattsched.cluster.placement import PLACEMENTS
        from wattsched.mig.partition import PARTITIONERS
        from wattsched.studies.real_workloads import find_data_dir

        del iterations  # one run per cell: a cluster already averages over many GPUs
        self.gpu = gpu
        self.days = days
        self.placements = tuple(placements) if placements else None
        self.partitioners = tuple(partitioners) if partitioners else None
        for name in self.placements or ():
            PLACEMENTS.make(name)
        for name in self.partitioners or ():
            if name not in PARTITIONERS:
                PARTITIONERS.make(name)
        self.workloads = tuple(workloads or WORKLOADS)
        if set(self.workloads) - set(WORKLOADS):
            raise ConfigError(
                f"unknown cluster workloads {sorted(set(self.workloads) - set(WORKLOADS))}; "
                f"valid: {', '.join(WORKLOADS)}"
            )
        self.seed = seed
        self.max_duration_s = float(max_duration_s)
        found = find_data_dir(data_dir)
        self.data_dir = str(found) if found is not None else ""

    def cells(self, scale: Scale) -> list[ClusterCell]:
        paper = scale == "paper"
        days = self.days if self.days is not None else (7.0 if paper else 1.0)
        placements = self.placements or (
            ("first-fit", "best-fit", "least-energy", "deadline-aware")
            if paper
            else ("first-fit", "least-energy", "deadline-aware")
        )
        partitioners = self.partitioners or ("static", "day-night")
        grid = [
            (p, q, s, c)
            for p in placements
            for q in partitioners
            for s in (False, True)
            for c in (False, True)
        ]
        cells = []
        for workload in self.workloads:
            if workload == "alibaba" and not self.data_dir:
                continue
            for placement, partitioner, power, clocks in [BASELINE, *grid]:
                if workload == "alibaba" and not paper and partitioner == "day-night":
                    continue  # quick scale: the 150-day replay with static partitions only
                cells.append(
                    ClusterCell(
                        workload,
                        placement,
                        partitioner,
                        power,
                        clocks,
                        self.gpu,
                        days,
                        self.seed,
                        self.data_dir,
                        self.max_duration_s,
                    )
                )
        return cells

    def run_cell(self, cell: ClusterCell) -> list[Row]:
        return run_cluster_cell(cell)

    def summarize(self, rows: pd.DataFrame) -> dict[str, Any]:
        from wattsched.studies.cluster_report import summarize

        return summarize(rows)

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        from wattsched.studies.cluster_report import report

        return report(rows, figures_dir, self.gpu)


STUDIES.register("cluster")(ClusterStudy)
