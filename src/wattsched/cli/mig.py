"""`wattsched mig` commands: ``generate`` a trace, ``run`` one simulation, list ``configs`` (CONTRACT §5)."""

from __future__ import annotations

import argparse
import json
import math
import sys

import pandas as pd

from wattsched.cli._parsing import (
    OneLineErrorParser,
    add_gpu_option,
    add_preset_options,
    resolve_deadline_rule,
    resolve_gpu,
    resolve_preset,
)
from wattsched.errors import ConfigError, InputError
from wattsched.hardware.catalogue import available
from wattsched.hardware.mig import MigGpu
from wattsched.units import joules_to_kwh, seconds_to_minutes
from wattsched.workload.arrivals import PROFILES
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job
from wattsched.workload.traces import file_format, read_trace, require_sizes, write_table, write_trace

__all__ = ["add_parser"]

#: Per-job columns written by ``run --jobs-out`` (CONTRACT §5).
JOBS_OUT_COLUMNS = ("job_id", "start_s", "completion_s", "tardiness_s", "preemptions")
#: Keys ``run --json`` always prints (CONTRACT §5).
RESULT_KEYS = ("energy_j", "avg_tardiness_s", "max_tardiness_s", "jobs", "late_jobs", "preemptions",
               "repartitions", "end_s")


def add_parser(groups: argparse._SubParsersAction) -> None:
    parser = groups.add_parser("mig", help="MIG scheduling: generate traces, simulate, repartition")
    sub = parser.add_subparsers(dest="mig_command", metavar="COMMAND", parser_class=OneLineErrorParser,
                                required=True)

    generate = sub.add_parser("generate", help="write a synthetic job trace (CSV or Parquet)")
    _add_generator_options(generate, required=True)
    add_gpu_option(generate)
    generate.add_argument("-o", "--output", required=True, metavar="FILE",
                          help="trace file (.csv/.parquet/.pq)")
    generate.add_argument("--json", action="store_true",
                          help="print what was generated (preset, workload, jobs) as one JSON object")
    generate.set_defaults(func=_generate)

    run = sub.add_parser("run", help="simulate one job queue on one configuration with one policy")
    run.add_argument("--config", required=True, metavar="N",
                     help="configuration id as 'mig configs --gpu G' lists them (A100-40GB: 1..12), "
                     "or 'no-mig'")
    add_gpu_option(run)
    run.add_argument("--power-curve", metavar="NAME", help="power curve of the GPU (default: per job kind "
                     "where the GPU declares kind curves, else its default curve)")
    run.add_argument("--power-cap", action="store_true",
                     help="model the GPU's power cap as a shared slow-down of every busy slice")
    run.add_argument("--policy", required=True, metavar="NAME",
                     help="edf-fs, edf-ss, edf-ss-restricted, llf or lalf")
    _add_generator_options(run, required=True, trace=True)
    run.add_argument("--horizon-s", type=float, metavar="T",
                     help="end of the arrival window in s (default: generator hours / last arrival)")
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument("--jobs-out", metavar="FILE", help="write per-job results (CSV or Parquet)")
    run.add_argument("--timeline-out", metavar="FILE",
                     help="write the run's per-slice timeline for `wattsched plot` (CSV or Parquet)")
    run.set_defaults(func=_run)

    configs = sub.add_parser("configs", help="list a GPU's MIG profiles and configurations (CONTRACT §7)")
    add_gpu_option(configs)
    configs.add_argument("--all", action="store_true",
                         help="also list every derived placement-valid partition, not only the named ones")
    configs.add_argument("--list-gpus", action="store_true", help="list the catalogue's GPUs and exit")
    configs.add_argument("--json", action="store_true", help="print one JSON object (CONTRACT §7)")
    configs.set_defaults(func=_configs)

    from wattsched.cli import mig_day, mig_import, mig_plan, mig_train

    mig_import.add_parser(sub)
    mig_train.add_parser(sub)
    mig_plan.add_parsers(sub)
    mig_day.add_parser(sub)


def _add_generator_options(parser: argparse.ArgumentParser, *, required: bool, trace: bool = False) -> None:
    source = parser.add_mutually_exclusive_group(required=required)
    if trace:
        source.add_argument("--trace", metavar="FILE", help="job trace file (CONTRACT §3)")
    source.add_argument("--rate", type=float, metavar="R", help="homogeneous Poisson arrivals, jobs/min")
    source.add_argument("--profile", metavar="NAME",
                        help=f"hourly arrival profile ({', '.join(PROFILES.available())})")
    parser.add_argument("--hours", type=float, metavar="H", help="arrival window in hours (default 24)")
    parser.add_argument("--inference-share", type=float, metavar="P", help="inference share (default 0.8)")
    parser.add_argument("--rate-multiplier", type=float, metavar="M",
                        help="arrival rate factor (default: the preset's for --profile, 1 for --rate)")
    parser.add_argument("--seed", type=int, metavar="S", help="random seed (default 0)")
    add_preset_options(parser, default="literal")


_GENERATOR_ONLY = ("hours", "inference_share", "rate_multiplier", "seed", "preset", "deadline_rule")


def _spec(args: argparse.Namespace) -> WorkloadSpec:
    """The validated workload spec of the generator options (ConfigError on bad values).

    The preset (CONTRACT §4) fills what the options leave open: a ``--profile`` day gets the preset's rate
    multiplier (paper 2.5, literal 1), a ``--rate`` queue the preset's Table II length (paper 8 h, literal
    24 h). Explicit ``--rate-multiplier`` and ``--hours`` win.
    """
    checks = (
        ("--rate", args.rate, lambda v: v > 0, "must be > 0 jobs/min"),
        ("--hours", args.hours, lambda v: v > 0, "must be > 0"),
        ("--inference-share", args.inference_share, lambda v: 0 <= v <= 1, "must be in [0, 1]"),
        ("--rate-multiplier", args.rate_multiplier, lambda v: v > 0, "must be > 0"),
    )
    for option, value, ok, rule in checks:
        if value is not None and not (math.isfinite(value) and ok(value)):
            raise ConfigError(f"{option} {rule}, got {value:g}")
    if args.seed is not None and args.seed < 0:
        raise ConfigError(f"--seed must be >= 0, got {args.seed}")
    if args.profile is not None and args.profile not in PROFILES:
        raise ConfigError(f"unknown --profile '{args.profile}'; valid: {', '.join(PROFILES.available())}")
    preset = resolve_preset(args)
    options: dict[str, object] = {"rate_per_min": args.rate, "profile": args.profile,
                                  "deadline_rule": resolve_deadline_rule(args)}
    if args.profile is not None:
        options["rate_multiplier"] = preset.rate_multiplier
    else:
        options["hours"] = preset.table2_hours
    for name in ("hours", "inference_share", "rate_multiplier"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return WorkloadSpec(**options)  # type: ignore[arg-type]


def _workload_json(args: argparse.Namespace, spec: WorkloadSpec) -> dict[str, object]:
    """What a generated workload was drawn from (``--json`` of generate and run)."""
    return {"preset": resolve_preset(args).name, "deadline_rule": spec.deadline_rule,
            "rate_multiplier": spec.rate_multiplier, "hours": spec.hours,
            "profile": spec.profile, "rate_per_min": spec.rate_per_min, "seed": args.seed or 0}


def _generate(args: argparse.Namespace) -> int:
    file_format(args.output)  # a bad suffix fails before any work
    gpu = resolve_gpu(args)
    spec = _spec(args)
    jobs = generate_jobs(spec, args.seed or 0)
    write_trace([job.with_sizes(gpu.compute_sizes) for job in jobs], args.output)
    if args.json:
        summary = {"output": str(args.output), "gpu": gpu.name, "jobs": len(jobs),
                   **_workload_json(args, spec)}
        sys.stdout.write(json.dumps(summary, sort_keys=True, allow_nan=False) + "\n")
    return 0


def _workload(
    args: argparse.Namespace, gpu: MigGpu | None = None
) -> tuple[list[Job], float, dict[str, object]]:
    """The jobs to simulate, the end of their arrival window (checked against ``gpu``'s sizes) and, for a
    generated workload, what it was drawn from."""
    drawn: dict[str, object] = {"preset": None}
    if args.trace is None:
        spec = _spec(args)
        jobs = generate_jobs(spec, args.seed or 0)
        horizon_s = spec.horizon_s
        drawn = _workload_json(args, spec)
    else:
        given = [f"--{name.replace('_', '-')}" for name in _GENERATOR_ONLY if getattr(args, name) is not None]
        if given:
            raise ConfigError(f"{', '.join(given)} only apply to generated workloads, not to --trace")
        jobs = read_trace(args.trace)
        if gpu is not None:
            require_sizes(jobs, gpu.compute_sizes, args.trace)
        horizon_s = max(job.arrival_s for job in jobs)
    if args.horizon_s is not None:
        if not (math.isfinite(args.horizon_s) and args.horizon_s >= 0):
            raise ConfigError(f"--horizon-s must be >= 0, got {args.horizon_s:g}")
        horizon_s = args.horizon_s
    return jobs, horizon_s, drawn


def _run(args: argparse.Namespace) -> int:
    from wattsched.mig.simulator import resolve_policy, simulate

    gpu = resolve_gpu(args)
    configuration = gpu.configuration(args.config)  # ConfigError lists the valid ids
    policy = resolve_policy(args.policy)  # UnknownNameError lists the valid policies
    if args.power_curve is not None and args.power_curve != "kind":
        gpu.power.curve(args.power_curve)  # ConfigError lists the curves
    for path in (args.jobs_out, args.timeline_out):
        if path is not None:
            file_format(path)
    jobs, horizon_s, drawn = _workload(args, gpu)
    record = args.jobs_out is not None or args.timeline_out is not None
    result = simulate(jobs, configuration, policy, gpu=gpu, horizon_s=horizon_s, record_jobs=record,
                      power_curve=args.power_curve, power_cap=args.power_cap)
    overflow = [key for key in RESULT_KEYS if not math.isfinite(float(getattr(result, key)))]
    if overflow:  # times near the float64 limit (e.g. 1e308 s) overflow the sums; JSON cannot hold inf/NaN
        raise InputError(f"the simulation overflowed ({', '.join(overflow)} not finite): "
                         "times or durations are too large", path=args.trace)
    if args.jobs_out is not None:
        write_table(_jobs_frame(result.records or ()), args.jobs_out)
    if args.timeline_out is not None:
        from wattsched.viz.timeline import timeline_frame

        write_table(timeline_frame(result, gpu, jobs=jobs), args.timeline_out)
    summary = {"gpu": gpu.name, "config": str(configuration.ident), "policy": args.policy, **result.to_dict(),
               "workload": drawn, "preset": drawn["preset"]}
    if args.json:
        sys.stdout.write(json.dumps(summary, sort_keys=True, allow_nan=False) + "\n")
    else:
        sys.stdout.write(_table(summary))
    return 0


def _jobs_frame(records: tuple[object, ...]) -> pd.DataFrame:
    rows = {column: [getattr(record, column) for record in records] for column in JOBS_OUT_COLUMNS}
    frame = pd.DataFrame(rows, columns=list(JOBS_OUT_COLUMNS))
    for column in ("start_s", "completion_s", "tardiness_s"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    frame["preemptions"] = frame["preemptions"].astype("int64")
    return frame


def _table(summary: dict[str, object]) -> str:
    energy_j = float(summary["energy_j"])  # type: ignore[arg-type]
    lines = [
        f"gpu               {summary['gpu']}",
        f"configuration     {summary['config']}",
        f"policy            {summary['policy']}",
        f"jobs              {summary['jobs']} ({summary['late_jobs']} late)",
        f"energy            {energy_j:,.0f} J ({joules_to_kwh(energy_j):.4f} kWh)",
        "avg tardiness     {:.2f} s ({:.3f} min)".format(
            float(summary["avg_tardiness_s"]), seconds_to_minutes(float(summary["avg_tardiness_s"]))  # type: ignore[arg-type]
        ),
        f"max tardiness     {float(summary['max_tardiness_s']):.2f} s",  # type: ignore[arg-type]
        f"preemptions       {summary['preemptions']}",
        f"repartitions      {summary['repartitions']}",
        f"end               {float(summary['end_s']):.2f} s",  # type: ignore[arg-type]
    ]
    return "\n".join(lines) + "\n"


def _configs(args: argparse.Namespace) -> int:
    if args.list_gpus:
        names = available("gpu")
        if args.json:
            sys.stdout.write(json.dumps({"gpus": names}) + "\n")
        else:
            sys.stdout.write("\n".join(names) + "\n")
        return 0
    gpu = resolve_gpu(args)
    if args.json:
        sys.stdout.write(json.dumps(configs_json(gpu, derived=args.all), allow_nan=False) + "\n")
        return 0
    lines = [f"{gpu.name} ({gpu.product}): {len(gpu.configurations)} configurations; "
             f"{len(gpu.derived_placements)} maximal placement-valid partitions ({len(gpu.derived_shapes())} "
             "distinct profile sets)",
             "profiles: " + ", ".join(f"{p.name} (g={p.compute}, {p.sms} SMs)" for p in gpu.profiles)]
    for config in (*gpu.configurations, gpu.full_gpu):
        lines.append(f"{config.ident!s:>7}  compute={config.total_compute}  {config.label()}")
    if args.all:
        lines.append("derived partitions (placement order):")
        for index, placed in enumerate(gpu.derived_placements, start=1):
            lines.append(f"{index:>7}  " + " + ".join(f"{name}@{start}" for name, start, _ in placed))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def configs_json(gpu: MigGpu, *, derived: bool = False) -> dict[str, object]:
    """``mig configs --json`` (CONTRACT §7)."""
    power = gpu.power
    out: dict[str, object] = {
        "gpu": gpu.name,
        "product": gpu.product,
        "compute_slices": gpu.compute_slices,
        "memory_slots": gpu.memory_slots,
        "profiles": [
            {"name": p.name, "nvml_id": p.nvml_id, "compute": p.compute, "memory_slots": p.memory_slots,
             "sms": p.sms, "memory_mb": p.memory_mb, "placements": [list(x) for x in p.placements],
             "media": p.media}
            for p in gpu.profiles
        ],
        "configurations": [
            {"id": c.ident, "slices": [{"profile": s.profile, "compute": s.compute, "start": s.start,
                                        "size": s.size} for s in c.slices]}
            for c in gpu.configurations
        ],
        "roles": dict(gpu.roles),
        "power_w": {
            "idle_w": power.idle_w,
            "cap_w": power.cap_w,
            "default_curve": power.default_curve,
            "kinds": dict(power.kind_curves),
            "curves": {c.name: list(c.busy_w) for c in power.curves},
            "estimated": power.estimated,
        },
        "derived_partitions": len(gpu.derived_placements),
    }
    if derived:
        out["derived"] = [[{"profile": n, "start": s, "size": z} for n, s, z in placed]
                          for placed in gpu.derived_placements]
    return out
