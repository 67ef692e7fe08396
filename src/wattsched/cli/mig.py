"""`wattsched mig` commands: ``generate`` a trace, list ``configs``; the group's other commands
(``run``, ``import``, ``train``, ``evaluate``, ``plan``, ``export``, ``import-config``, ``day``) live in the
``mig_*`` modules and are imported only when the command line names them."""

from __future__ import annotations

import argparse
import math
import sys

from wattsched.cli._output import print_json
from wattsched.cli._parsing import (
    OneLineErrorParser,
    add_gpu_option,
    add_lazily,
    add_preset_options,
    resolve_deadline_rule,
    resolve_gpu,
    resolve_preset,
)
from wattsched.errors import ConfigError, did_you_mean
from wattsched.hardware.catalogue import available
from wattsched.hardware.mig import MigGpu
from wattsched.workload.arrivals import PROFILES
from wattsched.workload.generators import WorkloadSpec, generate_jobs
from wattsched.workload.job import Job

__all__ = ["add_generator_options", "add_parser", "configs_json", "workload"]


def add_parser(groups: argparse._SubParsersAction) -> None:
    parser = groups.add_parser("mig", help="MIG scheduling: generate traces, simulate, repartition")
    sub = parser.add_subparsers(
        dest="mig_command", metavar="COMMAND", parser_class=OneLineErrorParser, required=True
    )

    generate = sub.add_parser("generate", help="write a synthetic job trace (CSV or Parquet)")
    add_generator_options(generate, required=True)
    add_gpu_option(generate)
    generate.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="trace file (.csv/.parquet/.pq)"
    )
    generate.add_argument(
        "--json",
        action="store_true",
        help="print what was generated (preset, workload, jobs) as one JSON object",
    )
    generate.set_defaults(func=_generate)

    configs = sub.add_parser("configs", help="list a GPU's MIG profiles and configurations")
    add_gpu_option(configs)
    configs.add_argument(
        "--all",
        action="store_true",
        help="also list every derived placement-valid partition, not only the named ones",
    )
    configs.add_argument("--list-gpus", action="store_true", help="list the catalogue's GPUs and exit")
    configs.add_argument(
        "--json", action="store_true", help="print one JSON object ('wattsched schema configs')"
    )
    configs.set_defaults(func=_configs)

    add_lazily(
        sub,
        {"run": "simulate one job queue on one configuration with one policy"},
        "wattsched.cli.mig_run:add_parser",
    )
    add_lazily(
        sub,
        {"import": "convert a public job trace (Philly, Alibaba 2023) to a trace"},
        "wattsched.cli.mig_import:add_parser",
    )
    add_lazily(
        sub,
        {
            "train": "train the DQN repartitioning agent (stable-baselines3)",
            "evaluate": "compare every repartitioning policy on held-out days",
        },
        "wattsched.cli.mig_train:add_parser",
    )
    add_lazily(
        sub,
        {
            "plan": "steps that repartition a MIG GPU (dry run unless --apply)",
            "export": "write configurations as NVIDIA mig-parted YAML",
            "import-config": "read a mig-parted YAML into configurations of a GPU",
        },
        "wattsched.cli.mig_plan:add_parsers",
    )
    add_lazily(
        sub,
        {"day": "one day under a repartitioning policy; --live repartitions a GPU too"},
        "wattsched.cli.mig_day:add_parser",
    )
    add_lazily(
        sub,
        {"bound": "lower bounds on the energy and tardiness of any schedule of a trace"},
        "wattsched.cli.mig_bound:add_parser",
    )


def add_generator_options(parser: argparse.ArgumentParser, *, required: bool, trace: bool = False) -> None:
    source = parser.add_mutually_exclusive_group(required=required)
    if trace:
        source.add_argument(
            "--trace", metavar="FILE", help="job trace file, CSV or Parquet ('wattsched schema trace')"
        )
    source.add_argument("--rate", type=float, metavar="R", help="homogeneous Poisson arrivals, jobs/min")
    source.add_argument(
        "--profile", metavar="NAME", help=f"hourly arrival profile ({', '.join(PROFILES.available())})"
    )
    parser.add_argument("--hours", type=float, metavar="H", help="arrival window in hours (default 24)")
    parser.add_argument("--inference-share", type=float, metavar="P", help="inference share (default 0.8)")
    parser.add_argument(
        "--rate-multiplier",
        type=float,
        metavar="M",
        help="arrival rate factor (default: the preset's for --profile, 1 for --rate)",
    )
    parser.add_argument("--seed", type=int, metavar="S", help="random seed (default 0)")
    add_preset_options(parser, default="literal")


_GENERATOR_ONLY = ("hours", "inference_share", "rate_multiplier", "seed", "preset", "deadline_rule")


def _spec(args: argparse.Namespace) -> WorkloadSpec:
    """The validated workload spec of the generator options (ConfigError on bad values).

    The preset (docs/concepts/presets.md) fills what the options leave open: a ``--profile`` day gets the
    preset's rate multiplier (paper 2.5, literal 1), a ``--rate`` queue the preset's Table II length (paper 8
    h, literal 24 h). Explicit ``--rate-multiplier`` and ``--hours`` win.
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
        valid = PROFILES.available()
        raise ConfigError(
            f"unknown --profile '{args.profile}'{did_you_mean(args.profile, valid)}; "
            f"valid: {', '.join(valid)}"
        )
    preset = resolve_preset(args)
    options: dict[str, object] = {
        "rate_per_min": args.rate,
        "profile": args.profile,
        "deadline_rule": resolve_deadline_rule(args),
    }
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
    return {
        "preset": resolve_preset(args).name,
        "deadline_rule": spec.deadline_rule,
        "rate_multiplier": spec.rate_multiplier,
        "hours": spec.hours,
        "profile": spec.profile,
        "rate_per_min": spec.rate_per_min,
        "seed": args.seed or 0,
    }


def _generate(args: argparse.Namespace) -> int:
    from wattsched.workload.traces import file_format, write_trace

    file_format(args.output)  # a bad suffix fails before any work
    gpu = resolve_gpu(args)
    spec = _spec(args)
    jobs = generate_jobs(spec, args.seed or 0)
    write_trace([job.with_sizes(gpu.compute_sizes) for job in jobs], args.output)
    if args.json:
        summary = {
            "output": str(args.output),
            "gpu": gpu.name,
            "jobs": len(jobs),
            **_workload_json(args, spec),
        }
        print_json(summary)
    return 0


def workload(
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
        from wattsched.workload.traces import read_trace, require_single_gpu, require_sizes

        jobs = read_trace(args.trace)
        require_single_gpu(jobs, args.trace, f"mig {getattr(args, 'mig_command', 'run')}")
        if gpu is not None:
            require_sizes(jobs, gpu.compute_sizes, args.trace)
        horizon_s = max(job.arrival_s for job in jobs)
    if args.horizon_s is not None:
        if not (math.isfinite(args.horizon_s) and args.horizon_s >= 0):
            raise ConfigError(f"--horizon-s must be >= 0, got {args.horizon_s:g}")
        horizon_s = args.horizon_s
    return jobs, horizon_s, drawn


def _configs(args: argparse.Namespace) -> int:
    if args.list_gpus:
        names = available("gpu")
        if args.json:
            print_json({"gpus": names})
        else:
            sys.stdout.write("\n".join(names) + "\n")
        return 0
    gpu = resolve_gpu(args)
    if args.json:
        print_json(configs_json(gpu, derived=args.all))
        return 0
    lines = [
        f"{gpu.name} ({gpu.product}): {len(gpu.configurations)} configurations; "
        f"{len(gpu.derived_placements)} maximal placement-valid partitions ({len(gpu.derived_shapes())} "
        "distinct profile sets)",
        "profiles: " + ", ".join(f"{p.name} (g={p.compute}, {p.sms} SMs)" for p in gpu.profiles),
    ]
    for config in (*gpu.configurations, gpu.full_gpu):
        lines.append(f"{config.ident!s:>7}  compute={config.total_compute}  {config.label()}")
    if args.all:
        lines.append("derived partitions (placement order):")
        for index, placed in enumerate(gpu.derived_placements, start=1):
            lines.append(f"{index:>7}  " + " + ".join(f"{name}@{start}" for name, start, _ in placed))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def configs_json(gpu: MigGpu, *, derived: bool = False) -> dict[str, object]:
    """``mig configs --json`` (docs/howto/add-gpu.md)."""
    power = gpu.power
    out: dict[str, object] = {
        "gpu": gpu.name,
        "product": gpu.product,
        "compute_slices": gpu.compute_slices,
        "memory_slots": gpu.memory_slots,
        "profiles": [
            {
                "name": p.name,
                "nvml_id": p.nvml_id,
                "compute": p.compute,
                "memory_slots": p.memory_slots,
                "sms": p.sms,
                "memory_mb": p.memory_mb,
                "placements": [list(x) for x in p.placements],
                "media": p.media,
            }
            for p in gpu.profiles
        ],
        "configurations": [
            {
                "id": c.ident,
                "slices": [
                    {"profile": s.profile, "compute": s.compute, "start": s.start, "size": s.size}
                    for s in c.slices
                ],
            }
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
        out["derived"] = [
            [{"profile": n, "start": s, "size": z} for n, s, z in placed] for placed in gpu.derived_placements
        ]
    return out
