"""Real workloads: P1's in-configuration ranking and repartitioning comparison on replayed public traces.

Workloads (one 24-hour day each, ``iterations`` days per workload):

* ``synthetic``: P1's generator with the Fig. 5 profile (``alibaba-day``): the baseline. Day ``i`` is held-out
  day ``i`` of the Table III seed, so these rows are the same queues Table III evaluates.
* ``synthetic-measured``: the same seeds, but each job draws a *measured* speed-up curve (one per profiled
  model of the slice-speed CSV) instead of the linear/sublinear/capped families.
* ``synthetic-openb-profile``: the same generator with an hourly profile *derived* from the Alibaba 2023 pod
  list (its days 115-148), normalised to the mean rate of ``alibaba-day`` (what P1 did with Alibaba's trace).
* ``philly`` / ``alibaba``: one replayed day of the trace (``workload.adapters``), rate-matched to synthetic
  day ``i`` by thinning (same job count, or every job when the day has fewer) and load-matched by scaling
  durations (same offered load Σ dur_7g / 86,400 s). Jobs observed longer than ``max_duration_s`` are left
  out first (heavy tails: one multi-day job would otherwise be the whole day). Linear curves.
* ``philly-measured`` / ``alibaba-measured``: the same replayed days with measured curves drawn per job
  (matched on class: inference jobs draw inference profiles, training jobs training profiles).

So each replay differs from the baseline only in its *shape*: arrival pattern, duration distribution,
class mix and scaling. Every cell runs all policies × configurations (rows ``part = in-config``) and the
repartitioning methods No-MIG, Static (cfg 3) and Day-Night (rows ``part = repartition``) on one day. One
extra cell stores the derived hourly profiles (``part = profile``) for the report.

The data are not part of the package. The study looks for a folder holding ``traces/philly.csv``,
``traces/openb_pod_list_default.csv`` and ``mig-profiles/slice_speed.csv``: the ``data_dir`` option, else
``$WATTSCHED_DATA``, else the repository's ``data/`` folder (the checkout this module runs from, or ``data/``
in the working directory). The repository ships the Philly trace and the slice speeds; the Alibaba pod list
may not be redistributed, so it has to be downloaded into ``data/traces/`` first (``data/traces/README.md``
says from where). Without the three files the study has no cells and its report says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wattsched.errors import ConfigError
from wattsched.experiments.study import STUDIES, Row, Scale
from wattsched.hardware.catalogue import load_gpu

__all__ = ["REPARTITION_METHODS", "WORKLOADS", "RealWorkloadCell", "RealWorkloadsStudy", "find_data_dir"]

WORKLOADS: tuple[str, ...] = (
    "synthetic",
    "synthetic-measured",
    "synthetic-openb-profile",
    "philly",
    "philly-measured",
    "alibaba",
    "alibaba-measured",
)
REPARTITION_METHODS: tuple[str, ...] = ("no-mig", "static", "day-night")
POLICIES: tuple[str, ...] = ("edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf")
DAY_S = 86_400.0
OPENB_PROFILE = "openb-2023-day"
#: Days of the trace clock where each trace is dense (the first weeks of both hold only stray rows).
TRACE_DAYS = {"philly": (20, 105), "alibaba": (115, 149)}
_FILES = {
    "philly": "traces/philly.csv",
    "alibaba": "traces/openb_pod_list_default.csv",
    "speeds": "mig-profiles/slice_speed.csv",
}
_FORMATS = {"philly": "philly", "alibaba": "alibaba-2023"}


def find_data_dir(explicit: str | None = None) -> Path | None:
    """The data folder holding the study's ``traces/`` and ``mig-profiles/`` files, or None when there is
    none: ``explicit``, else ``$WATTSCHED_DATA`` (``$WATTSCHED_SHARED_DATA``, its older name), else ``data/``
    of the repository checkout, else ``data/`` in the working directory."""
    candidates = (
        [explicit]
        if explicit
        else [
            os.environ.get("WATTSCHED_DATA"),
            os.environ.get("WATTSCHED_SHARED_DATA"),
            str(Path(__file__).resolve().parents[3] / "data"),
            str(Path.cwd() / "data"),
        ]
    )
    for candidate in candidates:
        if candidate and all((Path(candidate) / f).is_file() for f in _FILES.values()):
            return Path(candidate).resolve()
    if explicit:
        raise ConfigError(f"real-workloads data_dir {explicit} lacks {', '.join(_FILES.values())}")
    return None


@dataclass(frozen=True)
class RealWorkloadCell:
    """One (workload, day): every policy × configuration and every repartitioning method on it."""

    workload: str
    iteration: int
    trace_day: int  # day of the trace clock for replays, -1 for generated days
    seed: int
    data_dir: str
    max_duration_s: float
    policies: tuple[str, ...]
    configurations: tuple[int | str, ...]
    methods: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.workload}/i{self.iteration:03d}"


@cache
def _parsed(data_dir: str, trace: str) -> Any:
    from wattsched.workload.adapters import ADAPTERS, ImportOptions

    options = ImportOptions()
    return ADAPTERS.make(_FORMATS[trace])(str(Path(data_dir) / _FILES[trace]), options)


@cache
def _library(data_dir: str) -> Any:
    from wattsched.workload.measured import load_slice_speeds

    return load_slice_speeds(Path(data_dir) / _FILES["speeds"])


def _openb_profile(data_dir: str) -> Any:
    """The hourly profile of the Alibaba 2023 GPU pods (days 115-148), scaled to P1's mean rate."""
    from wattsched.workload.arrivals import PROFILES
    from wattsched.workload.profiles import derive_profile, register_profile

    frame = _parsed(data_dir, "alibaba").frame
    first, last = TRACE_DAYS["alibaba"]
    p1_mean = float(np.mean(PROFILES.make("alibaba-day").rates_per_min))
    profile = derive_profile(
        frame["time_s"],
        OPENB_PROFILE,
        start_s=first * DAY_S,
        end_s=last * DAY_S,
        target_mean_rate_per_min=p1_mean,
        source=f"Alibaba cluster-trace-gpu-v2023 pod list, days {first}-{last - 1}",
    )
    register_profile(profile)
    return profile


def _philly_profile(data_dir: str) -> Any:
    from wattsched.workload.arrivals import PROFILES
    from wattsched.workload.profiles import derive_profile

    frame = _parsed(data_dir, "philly").frame
    first, last = TRACE_DAYS["philly"]
    p1_mean = float(np.mean(PROFILES.make("alibaba-day").rates_per_min))
    return derive_profile(
        frame["time_s"],
        "philly-day",
        start_s=first * DAY_S,
        end_s=last * DAY_S,
        target_mean_rate_per_min=p1_mean,
    )


def _jobs(cell: RealWorkloadCell) -> tuple[list[Any], dict[str, float]]:
    """The cell's day of jobs and facts about it (rate, load, class mix)."""
    from wattsched.mig.partition.runner import held_out_day
    from wattsched.workload.adapters import ImportOptions
    from wattsched.workload.adapters.common import build_jobs
    from wattsched.workload.generators import WorkloadSpec, generate_jobs
    from wattsched.workload.job import JobKind

    spec = WorkloadSpec(profile="alibaba-day")
    day_seed = held_out_day(cell.seed, cell.iteration)
    baseline = generate_jobs(spec, day_seed)
    measured = cell.workload.endswith("-measured")
    curves = _library(cell.data_dir).per_model() if measured else None
    if cell.workload.startswith("synthetic"):
        if cell.workload == "synthetic-openb-profile":
            _openb_profile(cell.data_dir)
            spec = replace(spec, profile=OPENB_PROFILE)
        jobs = (
            baseline
            if cell.workload == "synthetic"
            else generate_jobs(replace(spec, curves=curves), day_seed)
        )
    else:
        trace = cell.workload.removesuffix("-measured")
        parsed = _parsed(cell.data_dir, trace)
        in_day = parsed.frame["time_s"] // DAY_S == cell.trace_day
        available = int((in_day & (parsed.frame["duration_s"] <= cell.max_duration_s)).sum())
        target = len(baseline) / (DAY_S / 60.0) if available > len(baseline) else None
        options = ImportOptions(
            day=cell.trace_day,
            target_rate_per_min=target,
            max_duration_s=cell.max_duration_s,
            target_load=sum(j.duration_for_size(7) for j in baseline) / DAY_S,
            curves=curves,
            seed=cell.iteration,
        )
        jobs, _ = build_jobs(parsed, options)
    facts = {
        "rate_per_min": len(jobs) / (DAY_S / 60.0),
        "offered_load": sum(j.duration_for_size(7) for j in jobs) / DAY_S,
        "inference_share": sum(j.kind == JobKind.INFERENCE for j in jobs) / len(jobs),
    }
    return jobs, facts


def run_real_workload(cell: RealWorkloadCell) -> list[Row]:
    """Simulate one day under every policy × configuration and every repartitioning method."""
    if cell.workload == "profiles":
        return _profile_rows(cell)
    from wattsched.mig.partition import PARTITIONERS, run_day
    from wattsched.mig.simulator import simulate

    jobs, facts = _jobs(cell)
    base = {"workload": cell.workload, "iteration": cell.iteration, "trace_day": cell.trace_day, **facts}
    rows: list[Row] = []

    def result_row(part: str, policy: str, config: str, method: str, result: Any) -> Row:
        return {
            **base,
            "part": part,
            "policy": policy,
            "config": config,
            "method": method,
            **result.metrics(),
            "hour": -1,
            "rate_profile_per_min": 0.0,
        }

    for policy in cell.policies:
        for configuration in cell.configurations:
            result = simulate(jobs, configuration, policy, horizon_s=DAY_S)
            rows.append(result_row("in-config", policy, str(configuration), "", result))
    for method in cell.methods:
        run = run_day(jobs, PARTITIONERS.make(method), horizon_s=DAY_S, seed=cell.iteration)
        rows.append(result_row("repartition", "", "", method, run.result))
    return rows


def _profile_rows(cell: RealWorkloadCell) -> list[Row]:
    from wattsched.workload.arrivals import PROFILES

    profiles = {
        "profile:p1-fig5": PROFILES.make("alibaba-day"),
        "profile:openb-2023": _openb_profile(cell.data_dir),
        "profile:philly": _philly_profile(cell.data_dir),
    }
    return [
        {
            "workload": name,
            "iteration": 0,
            "trace_day": -1,
            "part": "profile",
            "policy": "",
            "config": "",
            "method": "",
            "hour": hour,
            "rate_profile_per_min": float(rate),
        }
        for name, profile in profiles.items()
        for hour, rate in enumerate(profile.rates_per_min)
    ]


def eligible_days(data_dir: str, trace: str, max_duration_s: float, count: int) -> list[int]:
    """``count`` days spread evenly over the trace's dense range, each with at least 150 usable jobs."""
    frame = _parsed(data_dir, trace).frame
    first, last = TRACE_DAYS[trace]
    usable = frame[frame["duration_s"] <= max_duration_s]
    per_day = (usable["time_s"] // DAY_S).astype(int).value_counts()
    days = sorted(int(d) for d, n in per_day.items() if first <= d < last and n >= 150)
    if not days:
        return []
    picks = np.unique(np.linspace(0, len(days) - 1, min(count, len(days))).round().astype(int))
    return [days[i] for i in picks]


class RealWorkloadsStudy:
    """Options: ``iterations`` (days per workload; quick 3, paper 20), ``data_dir``, ``max_duration_s``
    (default 4 h), ``policies``, ``configurations``, ``workloads``, ``seed`` (default 2025, Table III's)."""

    name = "real-workloads"

    def __init__(
        self,
        *,
        iterations: int | None = None,
        data_dir: str | None = None,
        max_duration_s: float = 4 * 3600.0,
        policies: list[str] | None = None,
        configurations: list[int | str] | None = None,
        workloads: list[str] | None = None,
        seed: int = 2025,
    ) -> None:
        self.iterations = iterations
        self.data_dir = find_data_dir(data_dir)
        self.max_duration_s = float(max_duration_s)
        self.policies = tuple(policies or POLICIES)
        self.configurations = tuple(configurations or load_gpu(None).configuration_ids)
        self.workloads = tuple(workloads or WORKLOADS)
        unknown = set(self.workloads) - set(WORKLOADS)
        if unknown:
            raise ConfigError(
                f"unknown real-workloads workloads {sorted(unknown)}; valid: {', '.join(WORKLOADS)}"
            )
        if "synthetic" not in self.workloads:
            self.workloads = ("synthetic", *self.workloads)
        self.seed = seed

    def cells(self, scale: Scale) -> list[RealWorkloadCell]:
        if self.data_dir is None:
            return []
        count = self.iterations or (20 if scale == "paper" else 3)
        data = str(self.data_dir)
        days = {t: eligible_days(data, t, self.max_duration_s, count) for t in TRACE_DAYS}
        cells = [RealWorkloadCell("profiles", 0, -1, self.seed, data, self.max_duration_s, (), (), ())]
        for workload in self.workloads:
            trace = workload.removesuffix("-measured")
            for i in range(count):
                if trace in days and i >= len(days[trace]):
                    break
                day = days[trace][i] if trace in days else -1
                cells.append(
                    RealWorkloadCell(
                        workload,
                        i,
                        day,
                        self.seed,
                        data,
                        self.max_duration_s,
                        self.policies,
                        self.configurations,
                        REPARTITION_METHODS,
                    )
                )
        return cells

    def run_cell(self, cell: RealWorkloadCell) -> list[Row]:
        return run_real_workload(cell)

    def summarize(self, rows: pd.DataFrame) -> dict[str, Any]:
        from wattsched.studies.real_workloads_analysis import summarize

        return summarize(rows, self.data_dir)

    def report(self, rows: pd.DataFrame, figures_dir: Path) -> str:
        from wattsched.studies.real_workloads_analysis import report

        return report(rows, self.data_dir, figures_dir, self.max_duration_s)


STUDIES.register("real-workloads")(RealWorkloadsStudy)
