"""`wattsched mig run`: simulate one job queue on one configuration with one policy.

Besides the run's totals the result states its ET (P1's energy-tardiness score) against a stated
coefficient ``a``: ``--et-coefficient A`` (J⁻¹), else :data:`REFERENCE_ET_COEFFICIENT`, pooled over a fixed
reference comparison (:data:`REFERENCE_ET_POOL`). ET is only comparable between runs scored with the same
``a``; a sweep states the ``a`` of its own pool. Warning (one line on stderr): more than
:data:`OVERLOAD_LATE_SHARE` of the jobs late (the workload overloads the configuration).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from dataclasses import replace

from wattsched.cli._model import model_notes
from wattsched.cli._output import check_writable, print_json
from wattsched.cli._parsing import (
    GPU_OWN_CAP,
    add_gpu_option,
    positive_finite_float,
    power_cap_w,
    resolve_gpu,
    watts,
)
from wattsched.errors import InputError
from wattsched.units import joules_to_kwh, seconds_to_minutes

__all__ = [
    "OVERLOAD_LATE_SHARE",
    "REFERENCE_ET_COEFFICIENT",
    "REFERENCE_ET_POOL",
    "RESULT_KEYS",
    "add_parser",
    "reference_et_pool",
]

LOG = logging.getLogger(__name__)

#: Keys ``run --json`` always prints, besides the ET keys and the run's description.
RESULT_KEYS = (
    "energy_j",
    "avg_tardiness_s",
    "max_tardiness_s",
    "jobs",
    "late_jobs",
    "preemptions",
    "repartitions",
    "end_s",
)
#: ET's ``a`` (per joule) pooled over :data:`REFERENCE_ET_POOL` (:func:`reference_et_pool` recomputes it;
#: a test checks that both agree).
REFERENCE_ET_COEFFICIENT = 7.365086828208271e-08
#: The reference comparison :data:`REFERENCE_ET_COEFFICIENT` is pooled over.
REFERENCE_ET_POOL = (
    "reference pool: the 5 policies x the 12 A100-40GB configurations on the Fig. 5 day "
    "(--profile alibaba-day, literal preset), seeds 0 and 1 (120 runs)"
)
#: A run with more than this share of its jobs late gets an overload warning (P1's deadlines leave about half
#: the jobs of an ordinary day late on small slices; 90 % is a queue the configuration cannot serve).
OVERLOAD_LATE_SHARE = 0.9


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register ``run`` under ``wattsched mig``."""
    from wattsched.cli.mig import add_generator_options

    run = sub.add_parser(
        "run",
        help="simulate one job queue on one configuration with one policy",
        description="Simulate one job queue (a trace file or generated) on one MIG configuration with one "
        "policy and print energy, tardiness and ET. ET = mean((a*energy_J + tardiness_min)/(a + 1)) "
        "depends on a, the coefficient of a pool of runs: compare ETs only when scored with the same a.",
    )
    run.add_argument(
        "--config",
        required=True,
        metavar="N",
        help="configuration id as 'mig configs --gpu G' lists them (A100-40GB: 1..12), or 'no-mig'",
    )
    add_gpu_option(run)
    run.add_argument(
        "--power-curve",
        metavar="NAME",
        help="power curve of the GPU (default: per job kind "
        "where the GPU declares kind curves, else its default curve)",
    )
    run.add_argument(
        "--power-cap",
        nargs="?",
        const=GPU_OWN_CAP,
        type=watts,
        metavar="WATTS",
        help="cap the GPU's power at WATTS (e.g. 300 or 300W; alone: the GPU's own limit), "
        "modelled as a shared slow-down of every busy slice when a state would draw more; "
        "within the GPU's power-limit range where its entry gives one",
    )
    run.add_argument(
        "--policy",
        required=True,
        metavar="NAME",
        help="edf-fs, edf-ss, edf-ss-restricted, llf, lalf, or a plug-in's (--plugin MODULE)",
    )
    add_generator_options(run, required=True, trace=True)
    run.add_argument(
        "--horizon-s",
        type=float,
        metavar="T",
        help="end of the arrival window in s (default: generator hours / last arrival)",
    )
    run.add_argument(
        "--et-coefficient",
        type=positive_finite_float,
        metavar="A",
        help="ET's a per joule, e.g. the et_coefficient of a sweep's sweep.json (default: "
        f"{REFERENCE_ET_COEFFICIENT:.6g}, the {REFERENCE_ET_POOL})",
    )
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument(
        "--jobs-out",
        metavar="FILE",
        help="write one row per job (CSV or Parquet): arrival, deadline, kind, start, "
        "completion, tardiness, preemptions, slice and energy ('wattsched schema jobs')",
    )
    run.add_argument(
        "--timeline-out",
        metavar="FILE",
        help="write the run's per-slice timeline for 'wattsched plot' (CSV or Parquet)",
    )
    run.set_defaults(func=_run)


def reference_et_pool() -> tuple[list[float], list[float]]:
    """Energy (J) and average tardiness (s) of the runs of :data:`REFERENCE_ET_POOL`."""
    from wattsched.hardware.catalogue import load_gpu
    from wattsched.mig.simulator import simulate
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    gpu = load_gpu("a100-40gb")
    energy_j: list[float] = []
    tardiness_s: list[float] = []
    spec = WorkloadSpec(profile="alibaba-day")
    for seed in (0, 1):
        jobs = generate_jobs(spec, seed)
        for config in gpu.configuration_ids:
            for policy in ("edf-fs", "edf-ss", "edf-ss-restricted", "llf", "lalf"):
                result = simulate(jobs, gpu.configuration(config), policy, gpu=gpu, horizon_s=spec.horizon_s)
                energy_j.append(result.energy_j)
                tardiness_s.append(result.avg_tardiness_s)
    return energy_j, tardiness_s


def _run(args: argparse.Namespace) -> int:
    from wattsched.cli.mig import workload
    from wattsched.metrics import et_score
    from wattsched.mig.simulator import resolve_policy, simulate

    gpu = resolve_gpu(args)
    configuration = gpu.configuration(args.config)  # ConfigError lists the valid ids
    policy = resolve_policy(args.policy)  # UnknownNameError lists the valid policies
    if args.power_curve is not None and args.power_curve != "kind":
        gpu.power.curve(args.power_curve)  # ConfigError lists the curves
    for path in (args.jobs_out, args.timeline_out):
        if path is not None:
            from wattsched.io import file_format

            file_format(path)
            check_writable(path)
    cap_w = None if args.power_cap is None else power_cap_w(gpu, args.power_cap)
    jobs, horizon_s, drawn = workload(args, gpu)
    record = args.jobs_out is not None or args.timeline_out is not None
    capped = gpu if cap_w is None else replace(gpu, power=replace(gpu.power, cap_w=cap_w))
    result = simulate(
        jobs,
        configuration,
        policy,
        gpu=capped,
        horizon_s=horizon_s,
        record_jobs=record,
        power_curve=args.power_curve,
        power_cap=cap_w is not None,
    )
    overflow = [key for key in RESULT_KEYS if not math.isfinite(float(getattr(result, key)))]
    if overflow:  # times near the float64 limit (e.g. 1e308 s) overflow the sums; JSON cannot hold inf/NaN
        raise InputError(
            f"the simulation overflowed ({', '.join(overflow)} not finite): times or durations are too large",
            path=args.trace,
        )
    if args.jobs_out is not None or args.timeline_out is not None:
        from wattsched.io import write_table
    if args.jobs_out is not None:
        from wattsched.mig.frames import records_frame

        write_table(records_frame(result, jobs, capped), args.jobs_out)
    if args.timeline_out is not None:
        from wattsched.viz.timeline import timeline_frame

        write_table(timeline_frame(result, capped, jobs=jobs), args.timeline_out)
    given = args.et_coefficient is not None
    a = float(args.et_coefficient) if given else REFERENCE_ET_COEFFICIENT
    summary = {
        "gpu": gpu.name,
        "config": str(configuration.ident),
        "policy": args.policy,
        **result.to_dict(),
        "et": et_score(
            [result.energy_j], [result.avg_tardiness_s], a, unfinished_jobs=[result.unfinished_jobs]
        ),
        "et_coefficient": a,
        "et_reference": "--et-coefficient" if given else REFERENCE_ET_POOL,
        "workload": drawn,
        "preset": drawn["preset"],
    }
    if cap_w is not None:
        summary["power_cap_w"] = cap_w
    notes = model_notes([gpu])
    summary.update(notes.to_dict())
    del summary["clocks"]  # mig run has no clock option
    notes.warn()
    if args.json:
        print_json(summary)
    else:
        sys.stdout.write(_table(summary))
    if result.jobs and result.late_jobs > OVERLOAD_LATE_SHARE * result.jobs:
        LOG.warning(
            "%d of %d jobs (%.0f %%) are late: the workload overloads configuration %s of %s (try a "
            "lower --rate/--rate-multiplier or another --config)",
            result.late_jobs,
            result.jobs,
            100.0 * result.late_jobs / result.jobs,
            configuration.ident,
            gpu.name,
        )
    return 0


def _table(summary: dict[str, object]) -> str:
    energy_j = float(summary["energy_j"])  # type: ignore[arg-type]
    tardiness_s = float(summary["avg_tardiness_s"])  # type: ignore[arg-type]
    lines = [
        f"gpu               {summary['gpu']}",
        f"configuration     {summary['config']}",
        f"policy            {summary['policy']}",
        f"jobs              {summary['jobs']} ({summary['late_jobs']} late)",
        f"energy            {energy_j:,.0f} J ({joules_to_kwh(energy_j):.4f} kWh)",
        f"avg tardiness     {tardiness_s:.2f} s ({seconds_to_minutes(tardiness_s):.3f} min)",
        f"max tardiness     {float(summary['max_tardiness_s']):.2f} s",  # type: ignore[arg-type]
        f"preemptions       {summary['preemptions']}",
        f"repartitions      {summary['repartitions']}",
        f"end               {float(summary['end_s']):.2f} s",  # type: ignore[arg-type]
        f"power model       {summary['power_model']}",
        f"ET                {float(summary['et']):.6g} at a = {float(summary['et_coefficient']):.6g} /J "  # type: ignore[arg-type]
        f"({summary['et_reference']})",
    ]
    return "\n".join(lines) + "\n"
