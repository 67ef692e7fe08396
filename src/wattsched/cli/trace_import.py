"""`wattsched import`: a job log or a public job trace to a wattsched trace (and a cluster file).

    wattsched import --format csv|sacct|philly|alibaba-2023 --input FILE -o TRACE [--map KEY=COLUMN ...]
        [--cluster-out FILE.json [--gpu NAME] [--servers N] [--gpus-per-server G] [--nodes NODES.csv]]
        [--multi-gpu keep|fold|skip] [--day N | --start-s S [--end-s E]] [--min-duration-s S]
        [--max-duration-s S] [--duration-scale F | --target-load L] [--deadline-slack LO HI]
        [--class-rule source|duration|share] [--inference-share P] [--timezone ZONE] [--states S,...]
        [--seed S] [--json]

One family of adapters (:mod:`wattsched.workload.adapters`) reads every format; ``mig import``,
``cluster import`` and ``slurm import`` use the same ones. Jobs that ran on several GPUs at once are kept
by default (the trace's ``gpus`` column, which ``cluster run`` accepts and the one-GPU commands refuse),
or folded onto one GPU, or left out (``--multi-gpu``). The import report goes to stderr, or as one JSON
object to stdout with ``--json``.

``--cluster-out`` writes the cluster file ``cluster run --cluster`` reads: for ``sacct``, one server per
node of the log's ``NodeList``; for ``alibaba-2023``, the node list ``--nodes``; for ``csv`` and
``philly``, ``--servers`` (default 1) servers of ``--gpus-per-server`` GPUs (default: the most GPUs one
job needs). Every server has ``--gpu`` GPUs (default a100-40gb).
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

__all__ = ["FORMATS", "add_parser"]

#: The names of ``wattsched.workload.adapters.ADAPTERS`` (listed here so that building the parser does not
#: import pandas; a test checks that both agree).
FORMATS = ("alibaba-2023", "csv", "philly", "sacct")


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    cmd = groups.add_parser(
        "import",
        help="turn your job log (CSV, sacct) or a public trace into a trace",
        description="Turn a job log or a public job trace into a wattsched trace. csv: a header line and one "
        "row per job; columns named like the keys submit, start, end, duration, gpus, deadline, kind, "
        "scaling, job_id need no map (submit plus duration, or start and end, are needed).",
    )
    cmd.add_argument("--format", required=True, choices=FORMATS, help="input format")
    cmd.add_argument("--input", required=True, metavar="FILE", help="the job log or trace")
    cmd.add_argument("-o", "--output", required=True, metavar="TRACE", help="trace to write (.csv/.parquet)")
    cmd.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="KEY=COLUMN",
        help="csv: the column of a key, e.g. submit=submit_time (repeatable)",
    )
    cluster = cmd.add_argument_group("cluster file")
    cluster.add_argument("--cluster-out", metavar="FILE.json", help="also write the cluster the jobs ran on")
    cluster.add_argument("--gpu", metavar="NAME|FILE.toml", help="catalogue GPU of every server (a100-40gb)")
    cluster.add_argument("--servers", type=int_at_least(1), metavar="N", help="csv, philly: servers (1)")
    cluster.add_argument(
        "--gpus-per-server",
        type=int_at_least(1),
        metavar="G",
        help="GPUs of every server (csv, philly: the most GPUs one job needs; sacct: the "
        "fewest whole GPUs that held the node's busiest moment)",
    )
    cluster.add_argument("--nodes", metavar="NODES.csv", help="alibaba-2023: the node list")
    cmd.add_argument(
        "--multi-gpu",
        choices=("keep", "fold", "skip"),
        default="keep",
        help="jobs of several GPUs: keep them (a 'gpus' column, for cluster run; default), "
        "fold their GPU work onto one GPU, or leave them out (counted)",
    )
    add_import_window_options(cmd, target_load="scale durations so that sum(gpus * dur_7g) / horizon = L")
    cmd.add_argument(
        "--class-rule",
        choices=("source", "duration", "share"),
        help="job class: the format's own (csv: kind column; Alibaba: QoS), duration (run "
        "time <= 600 s: inference) or share",
    )
    cmd.add_argument("--inference-share", type=float, metavar="P", help="draw inference with probability P")
    cmd.add_argument("--timezone", metavar="ZONE", help="sacct: time zone of the log's times (UTC)")
    cmd.add_argument("--states", metavar="STATE,...", help="sacct: job states to keep (COMPLETED)")
    cmd.add_argument("--seed", type=int_at_least(0), default=0, metavar="S", help="random seed (0)")
    cmd.add_argument("--json", action="store_true", help="print the import report as JSON on stdout")
    cmd.set_defaults(func=_import)


def _column_map(entries: list[str]) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for entry in entries:
        key, sep, column = entry.partition("=")
        if not sep or not key.strip() or not column.strip():
            raise ConfigError(f"--map expects KEY=COLUMN, got '{entry}'")
        if key.strip() in out:
            raise ConfigError(f"--map gives the key '{key.strip()}' twice")
        out[key.strip()] = column.strip()
    return tuple(out.items())


def _check_format_options(args: argparse.Namespace) -> None:
    """Options of one format given with another are an error, never ignored."""
    only = {
        "--map": ("csv", bool(args.map)),
        "--timezone": ("sacct", args.timezone is not None),
        "--states": ("sacct", args.states is not None),
        "--nodes": ("alibaba-2023", args.nodes is not None),
    }
    for option, (fmt, given) in only.items():
        if given and args.format != fmt:
            raise ConfigError(f"{option} is for --format {fmt}, not {args.format}")
    if args.servers is not None and args.format not in ("csv", "philly"):
        raise ConfigError(f"--servers is for --format csv or philly, not {args.format}")
    shape = [
        o
        for o, v in (
            ("--gpu", args.gpu),
            ("--servers", args.servers),
            ("--gpus-per-server", args.gpus_per_server),
            ("--nodes", args.nodes),
        )
        if v
    ]
    if shape and args.cluster_out is None:
        raise ConfigError(f"{', '.join(shape)} describe the cluster of --cluster-out; give it too")
    if args.cluster_out is not None and args.format == "alibaba-2023" and args.nodes is None:
        raise ConfigError("--format alibaba-2023 needs --nodes NODES.csv for --cluster-out")
    if args.end_s is not None and args.start_s is None:
        raise ConfigError("--end-s needs --start-s")


def _options(args: argparse.Namespace) -> Any:
    from wattsched.workload.adapters import ImportOptions

    class_rule = args.class_rule
    if args.inference_share is not None and class_rule is None:
        class_rule = "share"
    return ImportOptions(
        day=args.day,
        start_s=args.start_s,
        end_s=args.end_s,
        min_duration_s=args.min_duration_s,
        max_duration_s=args.max_duration_s,
        duration_scale=args.duration_scale,
        target_load=args.target_load,
        deadline_slack=(args.deadline_slack[0], args.deadline_slack[1]),
        class_rule=class_rule,
        inference_share=args.inference_share,
        multi_gpu=args.multi_gpu,
        seed=args.seed,
        columns=_column_map(args.map),
    )


def _sacct(args: argparse.Namespace, options: Any) -> tuple[list[Any], Any, Any, dict[str, float]]:
    from wattsched.cli.slurm_import import _timezone
    from wattsched.hardware.catalogue import DEFAULT_GPU
    from wattsched.slurm.sacct import COMPLETED_STATES, import_sacct, infer_cluster

    states = (
        frozenset(s.strip().upper() for s in args.states.split(",") if s.strip())
        if args.states is not None
        else COMPLETED_STATES
    )
    imported = import_sacct(args.input, options, states=states, timezone=_timezone(args.timezone or "UTC"))
    nodes = None
    if args.cluster_out is not None:
        nodes = infer_cluster(imported, args.gpu or DEFAULT_GPU, args.gpus_per_server)
    return imported.jobs, imported.report, nodes, imported.energies_j


def _servers(args: argparse.Namespace, jobs: list[Any]) -> Any:
    """The cluster of ``--servers`` x ``--gpus-per-server`` (csv, philly)."""
    from wattsched.cluster.nodes import NodeImport
    from wattsched.cluster.spec import ClusterSpec
    from wattsched.hardware.catalogue import DEFAULT_GPU

    gpu = args.gpu or DEFAULT_GPU
    servers = args.servers or 1
    per_server = args.gpus_per_server or max(job.gpus for job in jobs)
    spec = ClusterSpec.homogeneous(servers, per_server, gpu)
    spec.gpu_models()  # an unknown --gpu lists the catalogue
    return NodeImport(spec, ("job log",) * servers, 0, 0, {"job log": (gpu, "--gpu", spec.gpus)})


def _import(args: argparse.Namespace) -> int:
    from wattsched.cluster.nodes import read_node_list, write_cluster_file
    from wattsched.workload.adapters import import_trace
    from wattsched.workload.traces import file_format, multi_gpu_jobs, write_trace

    _check_format_options(args)
    file_format(args.output)  # a bad suffix fails before any work
    check_writable(args.output)
    if args.cluster_out is not None:
        check_suffix(args.cluster_out, (".json",), "--cluster-out")
        check_writable(args.cluster_out)
    options = _options(args)
    nodes = None
    energies: dict[str, float] = {}
    if args.format == "sacct":
        jobs, report, nodes, energies = _sacct(args, options)
    else:
        if args.nodes is not None:
            nodes = read_node_list(args.nodes, {}, args.gpu)
        jobs, report = import_trace(args.format, args.input, options)
        if args.cluster_out is not None and nodes is None:
            nodes = _servers(args, jobs)
    if nodes is not None:
        _check_gangs_fit(jobs, nodes.spec)
    write_trace(jobs, args.output)
    multi = multi_gpu_jobs(jobs)
    out: dict[str, Any] = {
        **report.to_dict(),
        "output": str(args.output),
        "multi_gpu_jobs": {str(g): n for g, n in multi.items()},
    }
    if args.format == "sacct":
        out["measured_energy_j"] = energies  # the Slurm controller's, from the AdminComments
    if nodes is not None:
        extra = {"trace": str(args.output), "horizon_s": report.horizon_s}
        write_cluster_file(nodes, args.cluster_out, extra)
        out.update({"cluster_out": str(args.cluster_out), "nodes": nodes.to_dict()})
    if args.json:
        print_json(out)
        return 0
    for line in report.lines():
        print(line, file=sys.stderr)
    if energies:
        from wattsched.cli.slurm_import import measured_line

        print(measured_line(energies), file=sys.stderr)
    if multi:
        counts = ", ".join(f"{n} need {g} GPUs" for g, n in multi.items())
        print(
            f"{sum(multi.values())} jobs need more than one GPU at once ({counts}): run the trace with "
            "'wattsched cluster run'",
            file=sys.stderr,
        )
    if nodes is not None:
        print(
            f"wrote the cluster ({len(nodes.spec.servers)} servers, {nodes.spec.gpus} GPUs) to "
            f"{args.cluster_out}",
            file=sys.stderr,
        )
    print(f"wrote {len(jobs)} jobs to {args.output}", file=sys.stderr)
    return 0


def _check_gangs_fit(jobs: list[Any], spec: Any) -> None:
    """A cluster file whose servers cannot hold a job's GPUs is refused with the count of such jobs."""
    from wattsched.errors import InputError

    largest = max(server.gpus for server in spec.servers)
    too_big = [job for job in jobs if job.gpus > largest]
    if too_big:
        raise InputError(
            f"{len(too_big)} jobs need more GPUs than a server of the cluster has ({largest}; "
            f"the largest job needs {max(j.gpus for j in too_big)}): give --gpus-per-server, "
            "or import with --multi-gpu fold or skip",
            column="gpus",
        )
