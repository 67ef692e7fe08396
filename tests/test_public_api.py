"""The public API is pinned (issue #7, part 5): adding or removing a public name is a deliberate change
to this file, not an accident of an import. Every name in ``__all__`` must resolve, and ``__all__`` must list
each name once.
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC_API: dict[str, set[str]] = {
    "wattsched": {
        "ConfigError",
        "Configuration",
        "InputError",
        "Job",
        "JobKind",
        "MigGpu",
        "Scaling",
        "Slice",
        "UnknownNameError",
        "WattschedError",
        "__version__",
        "available",
        "load",
        "load_gpu",
        "MigSimulation",
        "SimResult",
        "WorkloadSpec",
        "et_score",
        "generate_jobs",
        "measure",
        "read_trace",
        "simulate",
        "write_trace",
    },
    "wattsched.energy": {"EnergyMeter", "GpuEnergy", "Measurement", "measure", "run_measured"},
    "wattsched.hardware.gpu": {
        "BACKEND_ENV",
        "ClockState",
        "GpuBackend",
        "GpuError",
        "GpuIdentity",
        "GpuInstance",
        "GpuProcess",
        "NvmlProfile",
        "PowerLimits",
        "open_backend",
    },
    "wattsched.mig": {
        "Assignment",
        "JobRecord",
        "JobState",
        "JobView",
        "MigSimulation",
        "POLICIES",
        "PolicyError",
        "SchedulerView",
        "SchedulingPolicy",
        "SimResult",
        "SimSnapshot",
        "ViewJob",
        "build_view",
        "records_frame",
        "simulate",
    },
    "wattsched.mig.checks": {
        "CheckError",
        "check_not_starved",
        "check_partitioner",
        "check_policy",
        "check_run",
        "random_trace",
    },
    "wattsched.hardware": {
        "NO_MIG",
        "CatalogueError",
        "Clocks",
        "Configuration",
        "InstanceProfile",
        "MigGpu",
        "PowerCurve",
        "PowerModel",
        "PowerTable",
        "Slice",
        "available",
        "load",
        "load_gpu",
    },
    "wattsched.sim": {"EventQueue", "Instant"},
    "wattsched.dvfs.checks": {"check_pair_rule", "check_schedule"},
    "wattsched.workload": {
        "ArrivalProfile",
        "DURATION_COLUMNS",
        "Job",
        "JobKind",
        "PROFILES",
        "SUBLINEAR_CURVES",
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
    },
    "wattsched.metrics": {
        "et_coefficient",
        "et_of_results",
        "et_score",
        "et_values",
        "require_finished",
        "summarize_runs",
    },
    "wattsched.dvfs": {
        "ALGORITHMS",
        "ClusterConfig",
        "DvfsConfig",
        "GeneratorSpec",
        "RunResult",
        "Schedule",
        "Settings",
        "TaskModel",
        "TaskSet",
        "generate_offline",
        "generate_online",
        "hkbu_configs",
        "read_tasks",
        "run_offline",
        "run_online",
        "solve",
        "solve_one",
        "write_tasks",
    },
    "wattsched.mig.partition": {
        "ConfigId",
        "DayNightPartitioner",
        "DayRun",
        "Decision",
        "LookaheadPartitioner",
        "NoMigPartitioner",
        "PARTITIONERS",
        "RepartitionPolicy",
        "RolloutPartitioner",
        "StaticPartitioner",
        "check_workload_source",
        "hour_of_day",
        "run_day",
    },
    "wattsched.rl.partitioner": {"DQNPartitioner", "QEnsemble", "QNetwork"},
    "wattsched.rl.distill": {
        "DISTILL_DAY_OFFSET",
        "DistillConfig",
        "DistillResult",
        "DistillationSet",
        "LabellingPolicy",
        "distill",
        "expert_rollout",
        "fine_tune",
        "label_days",
        "save_networks",
    },
    "wattsched.rl": {"ENV_ID", "register_envs"},
    "wattsched.viz": {
        "FORMATS",
        "METRICS",
        "PNG_DPI",
        "TIMELINE_COLUMNS",
        "Metric",
        "Sweep",
        "bar_figure",
        "gantt_figure",
        "group_summary",
        "power_figure",
        "power_series",
        "read_sweep",
        "read_timeline",
        "render",
        "timeline_frame",
    },
    "wattsched.cluster": {
        "PLACEMENTS",
        "PRESETS",
        "ClockModel",
        "ClockSchedule",
        "ClusterJobRecord",
        "ClusterOptions",
        "ClusterResult",
        "ClusterSimulation",
        "ClusterSpec",
        "GpuPool",
        "PlacementPolicy",
        "PowerStates",
        "ServerSpec",
        "clock_schedule",
        "cluster_spec",
        "preset_spec",
        "simulate_cluster",
        "stream_jobs",
    },
    "wattsched.studies": {"REPORT_ORDER", "reproduce"},
    "wattsched.slurm": {
        "Annotation",
        "AnnotationError",
        "Controller",
        "ControllerConfig",
        "EnergyLedger",
        "FakeSlurmClient",
        "SlurmClient",
        "SlurmError",
        "SlurmJob",
        "StateStore",
        "import_sacct",
        "load_config",
        "parse_annotation",
        "split_energy",
    },
    "wattsched.workload.adapters": {
        "ADAPTERS",
        "ImportOptions",
        "ImportReport",
        "ParsedTrace",
        "TraceParser",
        "import_trace",
    },
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC_API))
def test_all_is_pinned(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    assert len(names) == len(set(names)), f"{module_name}.__all__ lists a name twice"
    assert set(names) == PUBLIC_API[module_name]


@pytest.mark.parametrize("module_name", sorted(PUBLIC_API))
def test_every_public_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec(f"from {module_name} import *", namespace)  # star-import gives exactly the public names
    assert set(namespace) - {"__builtins__"} == set(module.__all__)


def test_shared_names_are_the_same_objects() -> None:
    # Re-exports must be the defining objects, not copies (isinstance checks across modules rely on it).
    import wattsched
    import wattsched.workload
    from wattsched.workload import job

    for name in ("Job", "JobKind", "Scaling"):
        assert getattr(wattsched, name) is getattr(wattsched.workload, name) is getattr(job, name)
    assert isinstance(wattsched.__version__, str) and wattsched.__version__.count(".") == 2


def test_core_imports_no_heavy_extras() -> None:
    # CONTRACT §1: the simulator and the DVFS code import none of the [rl] / [ray] extras.
    import subprocess
    import sys

    code = (
        "import sys, wattsched, wattsched.mig, wattsched.dvfs, wattsched.workload, wattsched.experiments, "
        "wattsched.studies, wattsched.slurm, "
        "wattsched.mig.partition, wattsched.cli, wattsched.energy, wattsched.hardware.gpu; "
        "print(sorted(m for m in ('torch', 'gymnasium', 'stable_baselines3', 'ray', 'pynvml', 'cupy') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
