"""`wattsched mig import`: turn a public job trace into a wattsched trace file (docs/howto/import-trace.md).

    wattsched mig import --format philly|alibaba-2023 --input FILE -o FILE
        [--day N | --start-s S --end-s E] [--target-rate R [--rate-method thin|stretch]]
        [--duration-scale F | --target-load L] [--min-duration-s S] [--max-duration-s S]
        [--deadline-slack LO HI] [--class-rule source|duration|share] [--inference-share P]
        [--scaling linear|measured --speeds CSV] [--multi-gpu fold|skip] [--seed S] [--json]

The import report (rows read, kept, skipped and filtered by reason; window; rate; load) goes to stderr, or
as one JSON object to stdout with ``--json``. The trace is written atomically.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from wattsched.cli._output import print_json
from wattsched.cli._parsing import add_gpu_option, resolve_gpu
from wattsched.errors import ConfigError

if TYPE_CHECKING:
    from wattsched.workload.adapters import ImportOptions
    from wattsched.workload.measured import CurveEntry

LOG = logging.getLogger(__name__)

#: The GPU family each public source of slice-speed measurements ran on (data/mig-profiles: ParvaGPU
#: on the A100 80GB, MISO on the A100 40GB). Curves of other sources are not checked.
MEASURED_ON = {"parvagpu": "a100", "miso": "a100"}

__all__ = ["MEASURED_ON", "TRACE_FORMATS", "add_parser", "options_from_args", "warn_other_gpu"]

#: The names of ``wattsched.workload.adapters.ADAPTERS`` (listed here so that building the parser does not
#: import the adapters and pandas; a test checks that both agree).
TRACE_FORMATS = ("alibaba-2023", "philly")


def add_parser(mig_commands: argparse._SubParsersAction) -> None:
    """Register ``import`` under ``wattsched mig``."""
    cmd = mig_commands.add_parser(
        "import", help="convert a public job trace (Philly, Alibaba 2023) to a trace"
    )
    cmd.add_argument("--format", required=True, choices=TRACE_FORMATS, help="input trace format")
    cmd.add_argument("--input", required=True, metavar="FILE", help="the public trace file (CSV)")
    cmd.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="trace to write (.csv/.parquet/.pq)"
    )
    window = cmd.add_mutually_exclusive_group()
    window.add_argument("--day", type=int, metavar="N", help="keep arrivals of day N of the trace clock")
    window.add_argument("--start-s", type=float, metavar="S", help="window start on the trace clock (s)")
    cmd.add_argument("--end-s", type=float, metavar="E", help="window end on the trace clock (s)")
    cmd.add_argument("--target-rate", type=float, metavar="R", help="scale arrivals to R jobs/min")
    cmd.add_argument(
        "--rate-method",
        choices=("thin", "stretch"),
        default="thin",
        help="thin: keep a random subset (keeps time of day); stretch: rescale the clock",
    )
    load = cmd.add_mutually_exclusive_group()
    load.add_argument(
        "--duration-scale", type=float, metavar="F", default=1.0, help="multiply durations by F"
    )
    load.add_argument(
        "--target-load", type=float, metavar="L", help="scale durations so that sum(dur_7g) / horizon = L"
    )
    cmd.add_argument("--min-duration-s", type=float, metavar="S", help="leave out jobs observed shorter")
    cmd.add_argument("--max-duration-s", type=float, metavar="S", help="leave out jobs observed longer")
    cmd.add_argument(
        "--deadline-slack",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        default=(1.0, 1.5),
        help="deadline = arrival + U(LO, HI) * dur_7g (default 1.0 1.5)",
    )
    cmd.add_argument(
        "--class-rule",
        choices=("source", "duration", "share"),
        help="job class: source (Alibaba QoS), duration (observed <= --inference-max-s) or share",
    )
    cmd.add_argument("--inference-share", type=float, metavar="P", help="draw inference with probability P")
    cmd.add_argument(
        "--inference-max-s",
        type=float,
        default=600.0,
        metavar="S",
        help="duration rule threshold in s (default 600)",
    )
    cmd.add_argument(
        "--scaling",
        choices=("linear", "measured"),
        default="linear",
        help="speed-up curve for the other slice sizes (default linear)",
    )
    cmd.add_argument("--speeds", metavar="CSV", help="slice-speed CSV for --scaling measured")
    cmd.add_argument(
        "--multi-gpu",
        choices=("fold", "skip"),
        default="fold",
        help="multi-GPU jobs: fold the GPU work onto one GPU (default) or leave them out",
    )
    cmd.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    cmd.add_argument("--json", action="store_true", help="print the import report as JSON on stdout")
    add_gpu_option(cmd)
    cmd.set_defaults(func=_import)


def options_from_args(args: argparse.Namespace) -> ImportOptions:
    """Validated :class:`ImportOptions` from parsed arguments."""
    from wattsched.workload.adapters import ImportOptions

    if args.end_s is not None and args.start_s is None:
        raise ConfigError("--end-s needs --start-s")
    curves = None
    if args.scaling == "measured":
        if not args.speeds:
            raise ConfigError("--scaling measured needs --speeds CSV (a slice-speed table)")
        from wattsched.workload.measured import load_slice_speeds

        library = load_slice_speeds(args.speeds, gpu=getattr(args, "gpu", None) or "h200-141gb")
        warn_other_gpu(library.entries, resolve_gpu(args).name, args.speeds)
        curves = library.per_model()
    elif args.speeds:
        raise ConfigError("--speeds is only used with --scaling measured")
    class_rule = args.class_rule
    if args.inference_share is not None and class_rule is None:
        class_rule = "share"
    return ImportOptions(
        day=args.day,
        start_s=args.start_s,
        end_s=args.end_s,
        target_rate_per_min=args.target_rate,
        rate_method=args.rate_method,
        duration_scale=args.duration_scale if args.target_load is None else 1.0,
        target_load=args.target_load,
        min_duration_s=args.min_duration_s,
        max_duration_s=args.max_duration_s,
        deadline_slack=(args.deadline_slack[0], args.deadline_slack[1]),
        class_rule=class_rule,
        inference_share=args.inference_share,
        inference_max_s=args.inference_max_s,
        curves=curves,
        multi_gpu=args.multi_gpu,
        seed=args.seed,
    )


def warn_other_gpu(entries: Iterable[CurveEntry], gpu: str, path: str) -> None:
    """One warning when measured curves come from a GPU family other than ``gpu``'s (the first part of its
    catalogue name, e.g. ``a100``): the speed-ups are used as measured, on another GPU."""
    family = gpu.split("-")[0].lower()
    foreign = sorted({e.source for e in entries if MEASURED_ON.get(e.source, family) != family})
    if foreign:
        measured = ", ".join(f"{source} ({MEASURED_ON[source].upper()})" for source in foreign)
        LOG.warning(
            "--speeds %s holds measurements of another GPU (%s) than --gpu %s: their speed-ups are "
            "used as they are",
            path,
            measured,
            gpu,
        )


def _import(args: argparse.Namespace) -> int:
    from wattsched.workload.adapters import import_trace
    from wattsched.workload.traces import file_format, write_trace

    file_format(args.output)  # a bad suffix fails before any work
    gpu = resolve_gpu(args)
    options = options_from_args(args)
    jobs, report = import_trace(args.format, args.input, options)
    write_trace([job.with_sizes(gpu.compute_sizes) for job in jobs], args.output)
    if args.json:
        print_json({**report.to_dict(), "output": str(args.output)})
    else:
        for line in report.lines():
            print(line, file=sys.stderr)
        print(f"wrote {len(jobs)} jobs to {args.output}", file=sys.stderr)
    return 0
