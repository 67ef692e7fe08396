"""`wattsched cluster`: ``run`` a data centre of MIG GPUs, ``import`` a public trace and its node list
(docs/concepts/datacentre.md).

    wattsched cluster run (--servers N --gpus-per-server G [--gpu NAME] | --cluster FILE.json)
        (--trace FILE | --preset paper|literal | --rate R | --profile NAME) [--hours H] [--rate-multiplier M]
        [--inference-share P] [--seed S] --placement NAME --partitioner NAME [--config C] --policy NAME
        [--repartition-s S|measured:STATE] [--power-states on|off] [--clocks on|off]
        [power-state constants] [--horizon-s T] [--json] [--jobs-out FILE]
    wattsched cluster import --format alibaba-2023 --input PODS.csv --nodes NODES.csv -o FILE
        [--cluster-out FILE.json] [--map MODEL=GPU ...] [--fallback GPU] [window and duration options]

Generated workloads are per GPU (``--rate``, ``--rate-multiplier``; the ``paper`` preset is the Fig. 5
profile at 2.5 per GPU) and scaled to the cluster's GPUs; a cluster of one GPU runs exactly ``mig run``.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from wattsched.cli._model import model_notes
from wattsched.cli._output import print_json, progress_bar
from wattsched.cli._parsing import (
    add_import_window_options,
    int_at_least,
    non_negative_float,
    positive_finite_float,
    repartition_cost,
    repartition_seconds,
)
from wattsched.errors import ConfigError, InputError, did_you_mean
from wattsched.units import JOULES_PER_KWH

__all__ = ["add_parser", "trace_jobs"]


def _on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got '{text}'")
    return text == "on"


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    from wattsched.cli._parsing import OneLineErrorParser

    parser = groups.add_parser("cluster", help="a data centre of MIG GPUs: run, import a public trace")
    sub = parser.add_subparsers(
        dest="cluster_command", metavar="COMMAND", parser_class=OneLineErrorParser, required=True
    )
    run = sub.add_parser("run", help="simulate a cluster of MIG GPUs")
    shape = run.add_argument_group("cluster")
    shape.add_argument("--servers", type=int_at_least(1), metavar="N", help="number of servers")
    shape.add_argument("--gpus-per-server", type=int_at_least(1), metavar="G", help="GPUs per server")
    shape.add_argument("--gpu", metavar="NAME|FILE.toml", help="catalogue GPU of every server (a100-40gb)")
    shape.add_argument("--cluster", metavar="FILE.json", help="a cluster file ('cluster import' writes one)")
    work = run.add_argument_group("workload")
    source = work.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--trace",
        metavar="FILE",
        help="job trace ('wattsched schema trace'; optional 'gpus' column: a job of g GPUs "
        "runs on g whole GPUs of one server)",
    )
    source.add_argument(
        "--preset",
        choices=("paper", "literal"),
        help="Fig. 5 profile at 2.5 (paper) or 1 (literal) x per GPU",
    )
    source.add_argument("--rate", type=positive_finite_float, metavar="R", help="Poisson jobs/min per GPU")
    source.add_argument("--profile", metavar="NAME", help="hourly arrival profile (per GPU)")
    work.add_argument("--hours", type=positive_finite_float, metavar="H", help="arrival window (default 24)")
    work.add_argument(
        "--rate-multiplier",
        type=positive_finite_float,
        metavar="M",
        help="arrival rate factor per GPU (default 1; the preset's with --preset)",
    )
    work.add_argument("--inference-share", type=float, metavar="P", help="inference share (default 0.8)")
    work.add_argument("--seed", type=int_at_least(0), default=None, metavar="S", help="random seed (0)")
    work.add_argument(
        "--horizon-s",
        type=non_negative_float,
        metavar="T",
        help="end of the arrival window in s (default: generator hours / last arrival)",
    )
    choice = run.add_argument_group("scheduling")
    choice.add_argument(
        "--placement",
        required=True,
        metavar="NAME",
        help="first-fit, best-fit, least-energy, deadline-aware, fewest-jobs or a plug-in's",
    )
    choice.add_argument(
        "--partitioner",
        required=True,
        metavar="NAME",
        help="static, no-mig, day-night or lookahead (per GPU)",
    )
    choice.add_argument(
        "--config",
        metavar="C",
        help="static configuration and every GPU's starting one (default: the partitioner's; static: 3)",
    )
    choice.add_argument(
        "--policy",
        required=True,
        metavar="NAME",
        help="edf-fs, edf-ss, edf-ss-restricted, llf or lalf (every GPU)",
    )
    choice.add_argument(
        "--repartition-s",
        type=repartition_cost,
        metavar="S|measured:STATE",
        help="seconds without slices per repartition on every GPU (default: each GPU "
        "model's repartition_s), or 'measured:STATE': per GPU model of the cluster, the "
        "median seconds out of service of its finished repartitions in a 'wattsched "
        "slurm' controller's state file",
    )
    power = run.add_argument_group("power")
    power.add_argument(
        "--power-states",
        type=_on_off,
        default=False,
        metavar="on|off",
        help="servers turn off after idle slots and on for work (P2's DRS; default off)",
    )
    power.add_argument(
        "--clocks",
        type=_on_off,
        default=False,
        metavar="on|off",
        help="GPU-wide clock levels from P2's model on GPUs with a clock table (default off)",
    )
    power.add_argument(
        "--slot-s", type=positive_finite_float, default=60.0, metavar="S", help="DRS slot (60)"
    )
    power.add_argument(
        "--idle-slots",
        type=int_at_least(0),
        default=None,
        metavar="N",
        help="idle slots before a server turns off (default P2's rule from the constants)",
    )
    power.add_argument(
        "--turn-on-j",
        type=non_negative_float,
        default=5400.0,
        metavar="J",
        help="turn-on energy per GPU (default 5400, P2's 90 W x 60 s slot)",
    )
    power.add_argument(
        "--turn-on-s", type=non_negative_float, default=60.0, metavar="S", help="boot time (60)"
    )
    power.add_argument(
        "--host-idle-w",
        type=non_negative_float,
        default=0.0,
        metavar="W",
        help="host power of a server that is on (default 0)",
    )
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument("--jobs-out", metavar="FILE", help="per-job results (CSV or Parquet)")
    run.set_defaults(func=_run)

    imp = sub.add_parser("import", help="turn a public trace (and its node list) into a trace and cluster")
    imp.add_argument("--format", required=True, choices=("alibaba-2023", "philly"), help="trace format")
    imp.add_argument("--input", required=True, metavar="FILE", help="the public trace (CSV)")
    imp.add_argument("--nodes", metavar="FILE", help="the node list (alibaba-2023: required)")
    imp.add_argument("-o", "--output", required=True, metavar="FILE", help="trace to write (.csv/.parquet)")
    imp.add_argument("--cluster-out", metavar="FILE.json", help="cluster file (default: beside the trace)")
    imp.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="MODEL=GPU",
        help="map a node GPU model to a catalogue entry (repeatable)",
    )
    imp.add_argument("--fallback", metavar="GPU", help="catalogue entry for every model not mapped")
    add_import_window_options(imp, min_duration=False, target_load=None)
    imp.add_argument(
        "--multi-gpu",
        choices=("fold", "skip", "keep"),
        default="fold",
        help="multi-GPU pods: fold their GPU work onto one GPU (default), leave them out, or "
        "keep them as jobs of several GPUs (a gang on one server)",
    )
    imp.add_argument("--seed", type=int_at_least(0), default=0, metavar="S", help="random seed (0)")
    imp.add_argument("--json", action="store_true", help="print the import report as JSON")
    imp.set_defaults(func=_import)


# ---------------------------------------------------------------------- run
def _cluster(args: argparse.Namespace) -> Any:
    from wattsched.cluster.nodes import read_cluster_file
    from wattsched.cluster.spec import ClusterSpec
    from wattsched.hardware.catalogue import DEFAULT_GPU

    if args.cluster is not None:
        given = [
            o
            for o, v in (
                ("--servers", args.servers),
                ("--gpus-per-server", args.gpus_per_server),
                ("--gpu", args.gpu),
            )
            if v is not None
        ]
        if given:
            raise ConfigError(f"{', '.join(given)} cannot be combined with --cluster")
        return read_cluster_file(args.cluster)
    if args.servers is None or args.gpus_per_server is None:
        raise ConfigError("give --servers N and --gpus-per-server G (and --gpu NAME), or --cluster FILE.json")
    spec = ClusterSpec.homogeneous(args.servers, args.gpus_per_server, args.gpu or DEFAULT_GPU)
    spec.gpu_models()  # an unknown --gpu lists the catalogue
    return spec


def trace_jobs(path: str, largest_server: int) -> tuple[list[Any], float]:
    """The jobs of a cluster trace and its last arrival; InputError when a job needs more GPUs than the
    largest server has (a job's GPUs are all on one server)."""
    from wattsched.cluster.workloads import oversized_jobs, read_cluster_trace

    jobs, needed = read_cluster_trace(path)
    oversized = oversized_jobs(needed, largest_server)
    if oversized:
        counts = ", ".join(f"{n} need {g} GPUs" for g, n in oversized.items())
        raise InputError(
            f"{sum(oversized.values())} of {len(jobs)} jobs need more GPUs than a server of "
            f"the cluster has ({largest_server}): {counts}; a job's GPUs must be on one "
            "server: give larger servers, or fold or drop such jobs when importing",
            path=path,
            column="gpus",
        )
    return jobs, max(job.arrival_s for job in jobs)


def _workload(args: argparse.Namespace, gpus: int, largest_server: int) -> tuple[list[Any], float]:
    from wattsched.cluster.workloads import cluster_spec, preset_spec
    from wattsched.workload.arrivals import PROFILES
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    if args.trace is not None:
        given = [
            f"--{n.replace('_', '-')}"
            for n in ("hours", "rate_multiplier", "inference_share", "seed")
            if getattr(args, n) is not None
        ]
        if given:
            raise ConfigError(f"{', '.join(given)} only apply to generated workloads, not to --trace")
        jobs, horizon_s = trace_jobs(args.trace, largest_server)
    else:
        if args.inference_share is not None and not (
            math.isfinite(args.inference_share) and 0 <= args.inference_share <= 1
        ):
            raise ConfigError(f"--inference-share must be in [0, 1], got {args.inference_share:g}")
        if args.preset is not None:
            spec = preset_spec(args.preset, args.hours or 24.0)
        else:
            if args.profile is not None and args.profile not in PROFILES:
                valid = ", ".join(PROFILES.available())
                raise ConfigError(
                    f"unknown --profile '{args.profile}'"
                    f"{did_you_mean(args.profile, PROFILES.available())}; valid: {valid}"
                )
            spec = WorkloadSpec(rate_per_min=args.rate, profile=args.profile, hours=args.hours or 24.0)
        options: dict[str, Any] = {}
        if args.rate_multiplier is not None:
            options["rate_multiplier"] = args.rate_multiplier
        if args.inference_share is not None:
            options["inference_share"] = args.inference_share
        spec = replace(spec, **options)
        jobs = generate_jobs(cluster_spec(spec, gpus), args.seed or 0)
        horizon_s = spec.horizon_s
    if args.horizon_s is not None:
        horizon_s = args.horizon_s
    return jobs, horizon_s


def _run(args: argparse.Namespace) -> int:
    from wattsched.cluster.engine import ClusterSimulation
    from wattsched.cluster.result import SUMMARY_KEYS
    from wattsched.cluster.spec import ClusterOptions, PowerStates
    from wattsched.mig.partition import check_workload_source
    from wattsched.workload.traces import file_format, require_sizes

    if args.jobs_out is not None:
        file_format(args.jobs_out)
    check_workload_source(args.partitioner, args.trace)
    spec = _cluster(args)
    models = spec.gpu_models()
    distinct = list({id(g): g for g in models}.values())
    for gpu in distinct:
        if args.config is not None:
            gpu.configuration(args.config)  # ConfigError lists the valid ids
    repartition_s = None
    if args.repartition_s is not None:  # a state file without a model's repartitions: one line naming both
        repartition_s = {gpu.name: repartition_seconds(args.repartition_s, gpu) for gpu in distinct}
    options = ClusterOptions(
        placement=args.placement,
        partitioner=args.partitioner,
        configuration=args.config,
        policy=args.policy,
        power_states=PowerStates(
            enabled=args.power_states,
            slot_s=args.slot_s,
            idle_slots=args.idle_slots,
            turn_on_j_per_gpu=args.turn_on_j,
            turn_on_s=args.turn_on_s,
            host_idle_w=args.host_idle_w,
        ),
        clocks=args.clocks,
        repartition_s=repartition_s,
        record_jobs=args.jobs_out is not None,
        seed=args.seed or 0,
    )
    jobs, horizon_s = _workload(args, spec.gpus, max(server.gpus for server in spec.servers))
    if args.trace is not None:
        for gpu in distinct:
            require_sizes(jobs, gpu.compute_sizes, args.trace)
    simulation = ClusterSimulation(spec, options, horizon_s=horizon_s)
    result = simulation.run(jobs, progress=progress_bar(len(jobs), "job", "cluster"))
    notes = model_notes(models, clocks=args.clocks)
    summary = {
        "placement": args.placement,
        "partitioner": args.partitioner,
        "policy": args.policy,
        "config": args.config,
        "power_states": args.power_states,
        **result.to_dict(),
        **notes.to_dict(),
        **clock_levels(result.clock_time_s),
    }
    bad = [k for k in SUMMARY_KEYS if isinstance(summary[k], float) and not math.isfinite(summary[k])]
    if bad:
        raise InputError(
            f"the simulation overflowed ({', '.join(bad)} not finite): times or durations are too large",
            path=args.trace,
        )
    if args.jobs_out is not None:
        _write_jobs(result, args.jobs_out)
    notes.warn()
    if args.json:
        print_json(summary)
    else:
        sys.stdout.write(_table(summary))
    return 0


def clock_levels(clock_time_s: dict[int, float]) -> dict[str, Any]:
    """The clock levels a run used (SM clocks in MHz with time spent there, fastest first) and their count."""
    used = sorted((mhz for mhz, seconds in clock_time_s.items() if seconds > 0), reverse=True)
    return {"clock_levels_used": len(used), "clock_levels_mhz": used}


def _write_jobs(result: Any, path: str) -> None:
    import pandas as pd

    from wattsched.workload.traces import write_table

    records = result.records or ()
    frame = pd.DataFrame(
        {
            "job_id": [r.record.job_id for r in records],
            "gpu": [r.gpu for r in records],
            "start_s": [float(r.record.start_s) for r in records],
            "completion_s": [float(r.record.completion_s) for r in records],
            "tardiness_s": [float(r.record.tardiness_s) for r in records],
            "preemptions": [int(r.record.preemptions) for r in records],
        }
    )
    write_table(frame, path)


def _table(summary: dict[str, Any]) -> str:
    kwh = JOULES_PER_KWH
    lines = [
        f"cluster           {summary['servers']} servers, {summary['gpus']} GPUs",
        f"scheduling        placement {summary['placement']}, partitioner {summary['partitioner']}, "
        f"policy {summary['policy']}",
        f"jobs              {summary['jobs']} ({summary['late_jobs']} late)",
        f"energy            {summary['energy_j']:,.0f} J ({summary['energy_j'] / kwh:.3f} kWh): run "
        f"{summary['energy_run_j'] / kwh:.3f}, idle {summary['energy_idle_j'] / kwh:.3f}, "
        f"turn-on {summary['energy_overhead_j'] / kwh:.3f} kWh",
        f"avg tardiness     {summary['avg_tardiness_s']:.2f} s",
        f"repartitions      {summary['repartitions']} ({summary['blackout_s']:g} s without slices)",
        f"server turn-ons   {summary['server_turn_ons']}",
        f"model             power {summary['power_model']}, clocks {_clocks_text(summary)}",
        f"end               {summary['end_s']:.2f} s",
    ]
    return "\n".join(lines) + "\n"


def _clocks_text(summary: dict[str, Any]) -> str:
    clocks = summary["clocks"]
    if clocks is True:
        return f"on ({summary['clock_levels_used']} level(s) used)"
    return "off" if clocks is False else str(clocks)


# ---------------------------------------------------------------------- import
def _import(args: argparse.Namespace) -> int:
    from wattsched.cluster.nodes import read_node_list, write_cluster_file
    from wattsched.workload.adapters import ImportOptions, import_trace
    from wattsched.workload.traces import file_format, write_trace

    file_format(args.output)
    if args.end_s is not None and args.start_s is None:
        raise ConfigError("--end-s needs --start-s")
    mapping = {}
    for entry in args.map:
        model, sep, gpu = entry.partition("=")
        if not sep or not model.strip() or not gpu.strip():
            raise ConfigError(f"--map expects MODEL=GPU, got '{entry}'")
        mapping[model.strip()] = gpu.strip()
    nodes = None
    if args.format == "alibaba-2023" and args.nodes is None:
        raise ConfigError("--format alibaba-2023 needs --nodes NODES.csv (the node list)")
    cluster_out = None
    if args.nodes is not None:
        cluster_out = Path(args.cluster_out) if args.cluster_out else _beside(Path(args.output))
        if cluster_out.suffix != ".json":
            raise ConfigError(f"--cluster-out must end in .json, got '{cluster_out}'")
        if not cluster_out.parent.is_dir():
            raise InputError("cannot write: the folder does not exist", path=str(cluster_out))
        nodes = read_node_list(args.nodes, mapping, args.fallback)
    elif args.map or args.fallback or args.cluster_out:
        raise ConfigError("--map, --fallback and --cluster-out need --nodes")
    options = ImportOptions(
        day=args.day,
        start_s=args.start_s,
        end_s=args.end_s,
        duration_scale=args.duration_scale,
        max_duration_s=args.max_duration_s,
        deadline_slack=(args.deadline_slack[0], args.deadline_slack[1]),
        multi_gpu=args.multi_gpu,
        seed=args.seed,
    )
    jobs, report = import_trace(args.format, args.input, options)
    write_trace(jobs, args.output)
    out: dict[str, Any] = {**report.to_dict(), "output": str(args.output)}
    if nodes is not None and cluster_out is not None:
        write_cluster_file(nodes, cluster_out, {"trace": str(args.output), "horizon_s": report.horizon_s})
        out.update({"cluster_out": str(cluster_out), "nodes": nodes.to_dict()})
    if args.json:
        print_json(out)
    else:
        for line in report.lines():
            print(line, file=sys.stderr)
        if nodes is not None:
            n = nodes.to_dict()
            print(
                f"node list: {n['rows_read']} nodes, {n['servers']} servers with {n['gpus']} GPUs, "
                f"{n['cpu_only_nodes']} CPU-only nodes left out",
                file=sys.stderr,
            )
            for model, entry in n["models"].items():
                print(f"  {model}: {entry['gpus']} GPUs -> {entry['gpu']} ({entry['how']})", file=sys.stderr)
            print(f"wrote the cluster to {cluster_out}", file=sys.stderr)
        print(f"wrote {len(jobs)} jobs to {args.output}", file=sys.stderr)
    return 0


def _beside(trace: Path) -> Path:
    return trace.with_name(trace.name.split(".")[0] + ".cluster.json")
