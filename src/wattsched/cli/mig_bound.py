"""`wattsched mig bound`: lower bounds on the energy and tardiness of any schedule of a trace on one GPU.

What no schedule can beat, whatever its configurations, repartitions, preemptions and order
(:mod:`wattsched.mig.bound`, docs/concepts/bound.md): the energy of any schedule that finishes every job, the
average tardiness of any schedule, and — where zero tardiness is not ruled out — the energy of any schedule
with zero tardiness.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wattsched.cli._output import print_json
from wattsched.cli._parsing import add_gpu_option, resolve_gpu
from wattsched.errors import ConfigError

__all__ = ["add_parser", "resolution"]


def resolution(text: str) -> float | str | None:
    """``--resolution-s``: seconds (> 0), ``events`` (every arrival and deadline) or ``auto``."""
    if text in ("auto", "events"):
        return None if text == "events" else "auto"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, 'events' or 'auto', got '{text}'") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected seconds > 0, 'events' or 'auto', got {text}")
    return value


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``bound`` under ``wattsched mig``."""
    from wattsched.cli.mig import add_generator_options

    bound = commands.add_parser(
        "bound", help="lower bounds on the energy and tardiness of any schedule of a trace"
    )
    add_gpu_option(bound)
    add_generator_options(bound, required=True, trace=True)
    bound.add_argument("--horizon-s", type=float, metavar="T", help="end of the arrival window in s")
    bound.add_argument(
        "--resolution-s",
        type=resolution,
        default="auto",
        metavar="S|events|auto",
        help="where time is cut: every S seconds, at every arrival and deadline ('events', the tightest), "
        "or 'auto' (events up to 60 jobs, else 900 s)",
    )
    bound.add_argument(
        "--configs",
        metavar="C,C,...",
        help="configurations a schedule may use (default: all of the GPU's and no-mig)",
    )
    bound.add_argument(
        "--et-coefficient",
        type=float,
        metavar="A",
        help="also bound ET with this a per J (tardiness in minutes), e.g. a study's et_coefficient_per_j",
    )
    bound.add_argument("--json", action="store_true", help="print one JSON object")
    bound.set_defaults(func=_bound, mig_command="bound")


def _configs(text: str | None) -> list[int | str] | None:
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise ConfigError(f"--configs: an empty id in '{text}'")
    return [int(item) if item.isdigit() else item for item in items]


def _bound(args: argparse.Namespace) -> int:
    from wattsched.cli.mig import workload
    from wattsched.mig.bound import auto_resolution, lower_bound

    gpu = resolve_gpu(args)
    jobs, horizon_s, drawn = workload(args, gpu)
    if args.trace is None:
        jobs = [job.with_sizes(gpu.compute_sizes) for job in jobs]
    chosen: Any = args.resolution_s
    step = auto_resolution(len(jobs)) if chosen == "auto" else chosen
    bound = lower_bound(
        jobs,
        gpu,
        horizon_s,
        resolution_s=step,
        configurations=_configs(args.configs),
        et_coefficient=args.et_coefficient,
    )
    if args.json:
        print_json({"gpu": gpu.name, "horizon_s": horizon_s, **bound.row(), "workload": drawn})
        return 0
    if bound.on_time_energy_j is None:
        on_time = "no schedule is on time"
    else:
        on_time = f"an on-time schedule uses at least {bound.on_time_energy_j:,.0f} J"
    et = (
        []
        if bound.et is None
        else [f"  ET          >= {bound.et:.4f} with a = {bound.et_coefficient:.4g} per J"]
    )
    lines = [
        f"{gpu.name}, {bound.jobs} jobs, horizon {horizon_s:,.0f} s:",
        f"  energy      >= {bound.energy_j:,.0f} J ({bound.energy_j / 3.6e6:.3f} kWh) for any schedule that "
        "finishes every job",
        f"  tardiness   >= {bound.tardiness_s:,.1f} s on average; {on_time}",
        *et,
        f"  closed form    {bound.closed_form_j:,.0f} J",
        f"  {bound.method}: {bound.intervals} intervals, {bound.variables:,} variables, "
        f"{bound.solve_s:.1f} s",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
