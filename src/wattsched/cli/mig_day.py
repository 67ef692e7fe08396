"""`wattsched mig day`: one day under a repartitioning policy (the day runner); ``--live`` drives a GPU.

Without ``--live`` it simulates the day and lists the policy's repartitions. With ``--live`` each
repartition is also planned for a real MIG GPU (``mig plan``'s steps): logged as a dry run, or, with
``--apply``, carried out through NVML behind the guards of ``mig plan --apply``; before the day the GPU is
brought to the policy's first configuration the same way. ``--speed-x`` paces the decisions to the wall
clock (simulated seconds per real second; 1 is real time). Jobs still run in the simulator only.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from wattsched.cli._output import print_json
from wattsched.cli._parsing import (
    add_gpu_option,
    int_at_least,
    positive_finite_float,
    repartition_cost,
    repartition_seconds,
    resolve_gpu,
)
from wattsched.cli.gpu import add_backend_option, opened
from wattsched.errors import ConfigError

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``day`` under ``wattsched mig``."""
    from wattsched.cli.mig import add_generator_options
    from wattsched.mig.partition import PARTITIONERS

    day = commands.add_parser(
        "day", help="one day under a repartitioning policy; --live repartitions a GPU too"
    )
    day.add_argument(
        "--partitioner",
        required=True,
        metavar="NAME",
        help=f"repartitioning policy ({', '.join(PARTITIONERS.available())})",
    )
    day.add_argument("--config", metavar="C", help="static: its configuration (default: the GPU's)")
    day.add_argument("--day-config", metavar="C", help="day-night: the day configuration")
    day.add_argument("--night-config", metavar="C", help="day-night: the night configuration")
    add_gpu_option(day)
    add_generator_options(day, required=True, trace=True)
    day.add_argument("--horizon-s", type=float, metavar="T", help="end of the arrival window in s")
    day.add_argument(
        "--repartition-s",
        type=repartition_cost,
        metavar="S|measured:STATE",
        help="seconds without slices per repartition (default: the GPU's repartition_s), or "
        "'measured:STATE': the median seconds out of service of the GPU model's finished repartitions in "
        "a 'wattsched slurm' controller's state file",
    )
    day.add_argument("--live", action="store_true", help="plan each repartition for a real GPU (dry run)")
    day.add_argument("--apply", action="store_true", help="with --live: carry the plans out (root, MIG on)")
    day.add_argument(
        "--speed-x",
        type=positive_finite_float,
        metavar="X",
        help="with --live: simulated seconds per wall-clock second (default: no pacing)",
    )
    day.add_argument("--index", type=int_at_least(0), default=0, help="GPU index for --apply (default 0)")
    add_backend_option(day)
    day.add_argument("--json", action="store_true", help="print one JSON object")
    day.set_defaults(func=_day)


def _partitioner(args: argparse.Namespace) -> Any:
    from wattsched.mig.partition import PARTITIONERS

    options: dict[str, Any] = {}
    given = {"--config": args.config, "--day-config": args.day_config, "--night-config": args.night_config}
    allowed = {"static": {"--config"}, "day-night": {"--day-config", "--night-config"}}.get(
        args.partitioner, set()
    )
    stray = [option for option, value in given.items() if value is not None and option not in allowed]
    if stray:
        raise ConfigError(f"{', '.join(stray)} do(es) not apply to --partitioner {args.partitioner}")
    names = {
        "--config": "configuration",
        "--day-config": "day_configuration",
        "--night-config": "night_configuration",
    }
    for option, value in given.items():
        if value is not None:
            options[names[option]] = int(value) if value.isdigit() else value
    return PARTITIONERS.make(args.partitioner, **options)  # UnknownNameError lists the policies


def _day(args: argparse.Namespace) -> int:
    from wattsched.cli.mig import workload
    from wattsched.hardware.gpu.apply import apply_plan, current_layout
    from wattsched.hardware.gpu.live import ApplyOnGpu, DryRun, LiveRepartitioner
    from wattsched.hardware.mig_plan import GpuLayouts, plan_repartition
    from wattsched.mig.partition.runner import run_day

    if (args.apply or args.speed_x is not None) and not args.live:
        raise ConfigError("--apply and --speed-x only apply with --live")
    from wattsched.mig.partition import check_workload_source

    check_workload_source(args.partitioner, args.trace)
    gpu = resolve_gpu(args)
    if args.repartition_s is not None:
        gpu = replace(gpu, repartition_s=repartition_seconds(args.repartition_s, gpu))
    policy = _partitioner(args)
    jobs, horizon_s, _ = workload(args, gpu)
    if args.trace is None:  # generated jobs get a duration for every compute size of the GPU
        jobs = [job.with_sizes(gpu.compute_sizes) for job in jobs]
    backend = None
    live = None
    try:
        if args.live:
            layouts = GpuLayouts.from_catalogue(gpu)
            executor: Any = DryRun()
            if args.apply:
                backend = opened(args)
                policy.reset(gpu, args.seed)
                start = layouts.layout(str(policy.initial_configuration()), "the first configuration")[1]
                now = current_layout(backend, args.index)[0]
                apply_plan(backend, args.index, now, plan_repartition(layouts.geometry, now, start))
                executor = ApplyOnGpu(backend, args.index)
            live = LiveRepartitioner(policy, layouts, executor, speed_x=args.speed_x)
        run = run_day(jobs, live or policy, horizon_s=horizon_s, gpu=gpu, seed=args.seed)
    finally:
        if backend is not None:
            backend.close()
    result: Any = run.result
    from wattsched.mig.bound import DAY_GRID_S, auto_resolution, lower_bound

    step = auto_resolution(len(jobs), DAY_GRID_S)
    bound_j = lower_bound(jobs, gpu, horizon_s, resolution_s=step, tardiness=False).energy_j
    changes = [
        {"time_s": d.time_s, "configuration": d.configuration} for d in run.decisions if d.repartitioned
    ]
    summary: dict[str, Any] = {
        "gpu": gpu.name,
        "partitioner": args.partitioner,
        "initial_configuration": run.initial_configuration,
        **result.to_dict(),
        "bound_energy_j": bound_j,
        "gap_to_bound": result.energy_j / bound_j - 1.0 if bound_j > 0 else None,
        "changes": changes,
    }
    if live is not None:
        summary["live"] = {"applied": bool(args.apply), "events": [e.to_dict() for e in live.events]}
    if args.json:
        print_json(summary)
        return 0
    lines = [
        f"{gpu.name}, {args.partitioner}: {result.jobs} jobs, energy {result.energy_j:,.0f} J, avg tardiness "
        f"{result.avg_tardiness_s:.1f} s, {len(changes)} repartition(s) from configuration "
        f"{run.initial_configuration}",
        f"  no schedule of these jobs uses less than {bound_j:,.0f} J: this day is "
        f"{100 * summary['gap_to_bound']:.1f} % above it ('wattsched mig bound' for tardiness)"
        if summary["gap_to_bound"] is not None
        else "  (no energy bound: an empty day)",
    ]
    events = live.events if live is not None else []
    for number, change in enumerate(changes):
        line = f"  t={change['time_s']:>9.1f} s -> configuration {change['configuration']}"
        if number < len(events):
            steps = ", ".join(f"{s.op} {s.instance}" for s in events[number].steps) or "no step"
            line += f" [{events[number].outcome}: {steps}]"
        lines.append(line)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
