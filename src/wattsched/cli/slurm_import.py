"""`wattsched slurm import`: a Slurm job log (``sacct --parsable2``) to a trace, and optionally a cluster
file.

    wattsched slurm import --sacct FILE -o TRACE [--cluster-out FILE.json] [--gpu NAME]
        [--gpus-per-server G] [--timezone ZONE] [--states STATE,...] [--day N | --start-s S [--end-s E]]
        [--min-duration-s S] [--max-duration-s S] [--duration-scale F | --target-load L]
        [--deadline-slack LO HI] [--multi-gpu skip|fold] [--seed S] [--json]

The fields the log needs and how rows become jobs: :mod:`wattsched.slurm.sacct` (``wattsched slurm import
--help`` gives the sacct command line). One summary line (rows kept, left out by reason) goes to stderr, or
the whole import report as one JSON object to stdout with ``--json``. ``--cluster-out`` writes the cluster
file ``wattsched cluster run --cluster`` reads: one server per node of ``NodeList``, of ``--gpu`` GPUs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wattsched.cli._output import check_suffix, check_writable, print_json
from wattsched.cli._parsing import (
    add_import_window_options,
    int_at_least,
)
from wattsched.errors import ConfigError

__all__ = ["SACCT_COMMAND", "add_import_parser"]

#: A sacct command line that writes a log this command reads.
SACCT_COMMAND = (
    "sacct --parsable2 --allocations --starttime START --endtime END "
    "--format=JobID,User,Partition,Submit,Start,End,Elapsed,Timelimit,State,AllocTRES,Comment,AdminComment,NodeList"
)


def add_import_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Add ``import`` to the ``wattsched slurm`` command group."""
    cmd = subparsers.add_parser(
        "import",
        help="turn a sacct job log into a trace (and a cluster file)",
        description=f"Turn a sacct job log into a wattsched trace. Make the log with: {SACCT_COMMAND}",
    )
    cmd.add_argument("--sacct", required=True, metavar="FILE", help="the sacct --parsable2 log")
    cmd.add_argument("-o", "--output", required=True, metavar="TRACE", help="trace to write (.csv/.parquet)")
    cmd.add_argument(
        "--cluster-out",
        metavar="FILE.json",
        help="also write the cluster the jobs ran on (for 'wattsched cluster run --cluster')",
    )
    cmd.add_argument(
        "--gpu",
        metavar="NAME|FILE.toml",
        help="catalogue GPU of every server of --cluster-out (default: a100-40gb)",
    )
    cmd.add_argument(
        "--gpus-per-server",
        type=int_at_least(1),
        metavar="G",
        help="GPUs of every server of --cluster-out (default: the fewest whole GPUs that held "
        "the node's busiest moment in the log)",
    )
    cmd.add_argument(
        "--timezone",
        default="UTC",
        metavar="ZONE",
        help="time zone of the log's times, e.g. Europe/Berlin (sacct prints local time)",
    )
    cmd.add_argument(
        "--states",
        default="COMPLETED",
        metavar="STATE,...",
        help="job states to keep, e.g. COMPLETED,TIMEOUT",
    )
    add_import_window_options(
        cmd,
        what="submissions",
        target_load="scale durations so that sum(dur_7g) / horizon = L (on the observed run times)",
    )
    cmd.add_argument(
        "--multi-gpu",
        choices=("skip", "fold"),
        default="skip",
        help="jobs of several GPUs or slices: leave them out (counted), or fold their "
        "slice-seconds onto one whole GPU",
    )
    cmd.add_argument("--seed", type=int_at_least(0), default=0, metavar="S", help="random seed")
    cmd.add_argument("--json", action="store_true", help="print the import report as JSON on stdout")
    cmd.set_defaults(func=_import)


def _timezone(name: str) -> Any:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"--timezone: unknown time zone '{name}' (expected an IANA name such as UTC or Europe/Berlin)"
        ) from None


def _import(args: argparse.Namespace) -> int:
    from wattsched.cluster.nodes import write_cluster_file
    from wattsched.hardware.catalogue import DEFAULT_GPU
    from wattsched.slurm.sacct import import_sacct, infer_cluster
    from wattsched.workload.adapters import ImportOptions
    from wattsched.workload.traces import file_format, write_trace

    file_format(args.output)  # a bad suffix fails before any work
    check_writable(args.output)
    if args.cluster_out is not None:
        check_suffix(args.cluster_out, (".json",), "--cluster-out")
        check_writable(args.cluster_out)
    elif args.gpu is not None or args.gpus_per_server is not None:
        raise ConfigError("--gpu and --gpus-per-server describe the cluster of --cluster-out; give it too")
    if args.end_s is not None and args.start_s is None:
        raise ConfigError("--end-s needs --start-s")
    states = frozenset(s.strip().upper() for s in args.states.split(",") if s.strip())
    options = ImportOptions(
        day=args.day,
        start_s=args.start_s,
        end_s=args.end_s,
        min_duration_s=args.min_duration_s,
        max_duration_s=args.max_duration_s,
        duration_scale=args.duration_scale,
        target_load=args.target_load,
        deadline_slack=(args.deadline_slack[0], args.deadline_slack[1]),
        multi_gpu=args.multi_gpu,
        seed=args.seed,
    )
    imported = import_sacct(args.sacct, options, states=states, timezone=_timezone(args.timezone))
    nodes = None
    if args.cluster_out is not None:
        nodes = infer_cluster(imported, args.gpu or DEFAULT_GPU, args.gpus_per_server)
    write_trace(imported.jobs, args.output)
    report = imported.report
    energies = imported.energies_j
    out: dict[str, Any] = {
        **report.to_dict(),
        "output": str(args.output),
        "annotated": imported.annotated,
        "measured_energy_j": energies,
    }
    if nodes is not None:
        extra = {"trace": str(args.output), "horizon_s": report.horizon_s}
        write_cluster_file(nodes, args.cluster_out, extra)
        out.update({"cluster_out": str(args.cluster_out), "nodes": nodes.to_dict()})
    if args.json:
        print_json(out)
        return 0
    line = (
        f"sacct import: kept {report.rows_kept} of {report.rows_read} rows ({imported.annotated} "
        f"annotated) -> {args.output}; skipped: {_counts(report.skipped)}; filtered: "
        f"{_counts(report.filtered)}; horizon {report.horizon_s:.0f} s"
    )
    if energies:
        line += f"; {measured_line(energies)}"
    if nodes is not None:
        line += f"; cluster: {len(nodes.spec.servers)} servers, {nodes.spec.gpus} GPUs -> {args.cluster_out}"
    print(line, file=sys.stderr)
    return 0


def measured_line(energies_j: dict[str, float]) -> str:
    """What the import says of the energies the Slurm controller measured (AdminComment)."""
    return (
        f"{len(energies_j)} jobs with the energy the wattsched controller measured (AdminComment), "
        f"{sum(energies_j.values()):.3f} J in all"
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())) or "none"
