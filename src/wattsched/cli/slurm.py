"""`wattsched slurm`: wattsched's policies schedule the jobs of a real Slurm partition.

    wattsched slurm controller --config FILE.toml [--dry-run] [--once]
    wattsched slurm status [--config FILE.toml] [--json]
    wattsched slurm jobs [--config FILE.toml] [--json]
    wattsched slurm import --sacct FILE -o TRACE [--cluster-out FILE]
    wattsched slurm prolog|epilog --state FAKE_GPU.json     (Slurm's Prolog/Epilog with a fake GPU)
    wattsched slurm gres --node NAME [--config FILE | --backend nvml|fake:FILE] [--pad] [-o FILE] [--json]
    wattsched slurm suspend|resume NODELIST [--config FILE]  (Slurm's SuspendProgram / ResumeProgram)
    wattsched slurm power-settings [--config FILE] [-o DIR] [--json]

The controller runs until SIGTERM or SIGINT (its state is kept in the config's state file), then unlocks the
GPU clocks it set; ``--once`` does one pass and exits (leaving the clocks that pass set); ``--dry-run`` logs
every decision and changes nothing (its state lives in memory).
``status`` and ``jobs`` read the state file only (``--config``, or ``$WATTSCHED_SLURM_CONFIG``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from wattsched.cli._output import print_json
from wattsched.errors import ConfigError

__all__ = ["add_parser"]

CONFIG_ENV = "WATTSCHED_SLURM_CONFIG"


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    from wattsched.cli._parsing import OneLineErrorParser
    from wattsched.cli.slurm_import import add_import_parser

    parser = groups.add_parser("slurm", help="schedule the jobs of a real Slurm partition on MIG slices")
    sub = parser.add_subparsers(
        dest="slurm_command", metavar="COMMAND", parser_class=OneLineErrorParser, required=True
    )
    controller = sub.add_parser("controller", help="watch a Slurm partition and schedule its jobs")
    controller.add_argument("--config", required=True, metavar="FILE.toml", help="the controller's config")
    controller.add_argument(
        "--dry-run",
        action="store_true",
        help="log every decision, change nothing (no Slurm action, no state written)",
    )
    controller.add_argument("--once", action="store_true", help="one pass, then exit")
    controller.set_defaults(func=_controller)
    for name, help_text, func in (
        ("status", "nodes, GPUs, slices, the queue in the controller's order, recent decisions", _status),
        ("jobs", "one row per job the controller has seen (tardiness, slice, energy, preemptions)", _jobs),
    ):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--config", metavar="FILE.toml", help=f"the controller's config (${CONFIG_ENV})")
        cmd.add_argument("--json", action="store_true", help="print JSON")
        cmd.set_defaults(func=func)
    add_import_parser(sub)
    for name, help_text in (
        ("prolog", "Slurm's Prolog on a node with a fake GPU: mark the job's MIG instances busy"),
        ("epilog", "Slurm's Epilog on a node with a fake GPU: mark the job's MIG instances idle"),
    ):
        hook = sub.add_parser(
            name,
            help=help_text,
            description=f"{help_text}. The instances are the MIG "
            "UUIDs in CUDA_VISIBLE_DEVICES (Slurm sets it for the Prolog and Epilog); a real "
            "GPU knows by itself when it is busy, so a real cluster needs neither.",
        )
        hook.add_argument("--state", required=True, metavar="FILE", help="the fake GPU state file")
        if name == "prolog":
            hook.add_argument(
                "--kind",
                choices=("inference", "training"),
                help="the job's kind (default: its annotation's, read with squeue)",
            )
        hook.set_defaults(func=_hook)
    gres = sub.add_parser(
        "gres",
        help="the gres.conf lines of a node's GPUs as they are now (for Slurm builds without NVML)",
        description="Print the gres.conf lines of the node's current MIG instances (GRES types after the GPU "
        "family and profile, as the controller requests them; device files from the driver's MIG "
        "capability list) and, as a comment, the Gres= value of its slurm.conf node line. A GPU with MIG "
        "off is one whole-GPU line; wattsched never changes MIG mode.",
    )
    gres.add_argument("--node", required=True, metavar="NAME", help="the node's name in Slurm")
    gres.add_argument("--config", metavar="FILE.toml", help="read the node's backend from this config")
    gres.add_argument("--backend", metavar="nvml|fake:FILE", help="the GPUs to read (default: the config's)")
    gres.add_argument(
        "--mig-minors",
        metavar="FILE",
        help="the driver's MIG capability list (default /proc/driver/nvidia-caps/mig-minors; a fake:FILE "
        "backend numbers its instances' minors itself)",
    )
    gres.add_argument(
        "--pad",
        action="store_true",
        help="pad each MIG GPU with spare devices (type 'spare') up to its compute slices, so that the "
        "node's device count stays the same through live MIG changes",
    )
    gres.add_argument(
        "--per-gpu",
        action="store_true",
        help="MIG types that name their GPU (a100_3g.20gb_gpu1), for a node with gres_per_gpu = true "
        "(default with --config: the node's setting)",
    )
    gres.add_argument("-o", "--output", metavar="FILE", help="write gres.conf here instead of printing it")
    gres.add_argument("--json", action="store_true", help="print JSON")
    gres.set_defaults(func=_gres)
    for name in ("suspend", "resume"):
        power = sub.add_parser(
            name,
            help=f"Slurm's {name.capitalize()}Program: {name} the nodes of NODELIST",
            description=f"Journal a {name} of every node of NODELIST in the controller's state file and run "
            f"the config's power.{name}_command for each ({{node}} replaced by its name); without a "
            "command the call is journaled only.",
        )
        power.add_argument("nodelist", metavar="NODELIST", help="Slurm's host list, e.g. gpu[01-04]")
        power.add_argument("--config", metavar="FILE.toml", help=f"the controller's config (${CONFIG_ENV})")
        power.set_defaults(func=_power_program, action=name)
    settings = sub.add_parser(
        "power-settings",
        help="the slurm.conf power-saving settings for the managed nodes, with the reasoning",
        description="Print SuspendTime (the break-even wait rho = floor(turn-on energy / (idle power x "
        "slot)) of the managed nodes), SuspendTimeout, ResumeTimeout and the rates to put in slurm.conf, "
        "with the reasoning; -o DIR also writes the two programs Slurm calls.",
    )
    settings.add_argument("--config", metavar="FILE.toml", help=f"the controller's config (${CONFIG_ENV})")
    settings.add_argument("-o", "--output", metavar="DIR", help="write suspend.sh and resume.sh here")
    settings.add_argument("--json", action="store_true", help="print JSON")
    settings.set_defaults(func=_power_settings)


def _config(args: argparse.Namespace) -> Any:
    from wattsched.slurm.config import load_config

    path = args.config or os.environ.get(CONFIG_ENV)
    if not path:
        raise ConfigError(f"give --config FILE.toml (or set ${CONFIG_ENV})")
    return load_config(path)


def _controller(args: argparse.Namespace) -> int:
    from wattsched.slurm.client import SlurmClient
    from wattsched.slurm.controller import Controller
    from wattsched.slurm.rest import open_client
    from wattsched.slurm.state import StateStore

    config = _config(args)
    commands = SlurmClient(slurm_conf=config.slurm_conf, gpu_uuids=_device_uuids(config))
    slurm = open_client(config.api, config.rest_socket, commands)
    if not slurm.ping():
        from wattsched.slurm.client import SlurmError

        if slurm is not commands:
            raise SlurmError(f"slurmrestd at {config.rest_socket} found no slurmctld (or did not answer)")
        raise SlurmError("slurm is not running: 'scontrol ping' found no slurmctld (is SLURM_CONF right?)")
    _check_nodes(config, slurm)
    _check_mig_mode(config)
    logging.getLogger("wattsched.slurm").setLevel(logging.INFO)
    through = f"slurmrestd at {config.rest_socket}" if slurm is not commands else "its commands"
    logging.getLogger("wattsched.slurm").info("driving Slurm through %s", through)
    store = StateStore(":memory:" if args.dry_run else config.state_path)
    controller = Controller(config, slurm, store, dry_run=args.dry_run)
    if args.once:
        controller.run_once()
        return 0
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        controller.run(lambda: bool(stopping))
    finally:
        controller.close()  # the GPU clocks it set are unlocked, even when a pass failed
        store.close()
    return 0


def _hook(args: argparse.Namespace) -> int:
    from wattsched.hardware.gpu.fake_state import FakeGpuState
    from wattsched.slurm.gres_update import visible_uuids

    job_id = os.environ.get("SLURM_JOB_ID", "")
    state = FakeGpuState(args.state)
    if args.slurm_command == "epilog":
        state.release_job(job_id)  # every instance its Prolog marked
        uuids = visible_uuids(os.environ)
        if uuids:
            state.set_busy(uuids, None)
        return 0
    # Slurm 22.05 gives the Prolog the devices of only the last type of a request of several types
    # (gpu:A:1,gpu:B:1: SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES name B's), so the job's record adds the rest.
    job = _job_record(job_id)
    uuids = list(dict.fromkeys([*visible_uuids(os.environ), *(job.gpu_uuids if job is not None else ())]))
    if uuids:
        state.set_busy(uuids, args.kind or _job_kind(job), job=job_id or None)
    return 0


def _job_record(job_id: str) -> Any:
    """The job's Slurm record with its devices on this node as MIG UUIDs (``None`` where it cannot be
    read)."""
    from wattsched.slurm.client import SlurmClient, SlurmError
    from wattsched.slurm.gres_update import device_uuids

    if not job_id.isdigit():
        return None
    node = os.environ.get("SLURMD_NODENAME") or ""
    known = device_uuids(os.environ.get("SLURM_CONF"), node or None) or []
    try:
        return SlurmClient(gpu_uuids={node: known} if node else None).job(int(job_id))
    except SlurmError:
        return None


def _job_kind(job: Any) -> str:
    """The kind a job's annotation gives (the annotation default when it gives none or cannot be read)."""
    from wattsched.slurm.annotations import DEFAULTS, AnnotationError, parse_annotation

    if job is not None:
        try:
            return parse_annotation(job.comment, submit_s=job.submit_s).kind.value
        except (ValueError, AnnotationError):
            pass
    return DEFAULTS.kind.value


def _device_uuids(config: Any) -> dict[str, list[str]]:
    """Each node's GPU device UUIDs in Slurm's index order, where a ``fake_gpus.conf`` beside ``slurm.conf``
    (or the node's own, in a many-node sandbox) lists them; elsewhere jobs are placed by the GRES type the
    controller gave them."""
    from wattsched.slurm.gres_update import device_uuids

    conf = config.slurm_conf or os.environ.get("SLURM_CONF")
    found = {node.name: device_uuids(conf, node.name) for node in config.nodes}
    return {name: uuids for name, uuids in found.items() if uuids is not None}


def _check_mig_mode(config: Any) -> None:
    """A node whose partitioner repartitions needs its GPUs in MIG mode (wattsched never changes it)."""
    from wattsched.hardware.gpu import open_backend

    for node in config.nodes:
        if not node.dynamic:
            continue
        backend = open_backend(node.backend)
        try:
            for index in range(len(node.gpus)):
                if not backend.mig_mode(index)[0]:
                    raise ConfigError(
                        f"{config.source}: node '{node.name}' GPU {index} is not in MIG mode; partitioner "
                        f"'{node.partitioner}' repartitions MIG GPUs and wattsched never changes MIG mode "
                        "(enable it, or use partitioner 'static')"
                    )
        finally:
            backend.close()


def _check_nodes(config: Any, slurm: Any) -> None:
    """Every configured node exists in Slurm and offers the GRES types of its slices."""
    from wattsched.hardware.gpu.fake_state import gres_type

    nodes = {node.name: node for node in slurm.nodes()}
    partitions = sorted({p for node in nodes.values() for p in node.partitions})
    if config.partition not in partitions:
        raise ConfigError(
            f"{config.source}: slurm.partition '{config.partition}' is not a partition of this "
            f"Slurm (it has: {', '.join(partitions) or 'none'})"
        )
    for node in config.nodes:
        if node.name not in nodes:
            raise ConfigError(
                f"{config.source}: node '{node.name}' is not a node of this Slurm "
                f"(it has: {', '.join(sorted(nodes)) or 'none'})"
            )
        if node.dynamic:
            continue  # its GRES follow its repartitions (the state file has the configuration in force)
        offered = {entry.type for entry in nodes[node.name].gres}
        for index, (gpu, configuration) in enumerate(zip(node.gpus, node.configurations, strict=True)):
            for slice_ in configuration.slices:
                wanted = gres_type(gpu, slice_.profile, index if node.gres_per_gpu else None)
                if wanted not in offered:
                    raise ConfigError(
                        f"{config.source}: node '{node.name}' has no GRES gpu:{wanted} for a "
                        f"{slice_.profile} slice of its {gpu.name} (its GRES types: "
                        f"{', '.join(sorted(t for t in offered if t)) or 'none'})"
                    )


def _store(config: Any) -> Any:
    from wattsched.errors import InputError
    from wattsched.slurm.state import StateStore

    if not Path(config.state_path).exists():
        raise InputError("no controller state yet (has the controller run?)", path=str(config.state_path))
    return StateStore(config.state_path)


def _job_rows(store: Any) -> list[dict[str, Any]]:
    rows = []
    for row in store.jobs():
        rows.append(
            {
                "job_id": row.job_id,
                "user": row.user,
                "state": row.phase,
                "slurm_state": row.slurm_state,
                "submit_s": row.submit_s,
                "deadline_s": row.deadline_s,
                "start_s": row.start_s,
                "end_s": row.end_s,
                "node": row.node,
                "gpu": row.gpu,
                "slice": row.slice,
                "gpus": row.gpus,
                "members": row.members,
                "tardiness_s": row.tardiness_s,
                "energy_j": row.energy_mj / 1000.0,
                "preemptions": row.preemptions,
                "kind": row.kind,
                "preemptible": bool(row.preemptible),
                "error": row.error,
                "renewed_as": row.renewed_as,
            }
        )
    return rows


def _jobs(args: argparse.Namespace) -> int:
    store = _store(_config(args))
    rows = _job_rows(store)
    if args.json:
        print_json(rows)
        return 0
    header = ("job", "user", "state", "slurm", "node/gpu", "slice", "tardiness_s", "energy_J", "preempt")
    print("  ".join(f"{h:>12}" for h in header))
    for r in rows:
        where = f"{r['node']}/{r['gpu']}" if r["node"] is not None else "-"
        if r["gpus"] > 1 and r["node"] is not None:  # a gang: its GPUs (with their slice indices)
            where = f"{r['node']}/{r['members']}"
        tardiness = f"{r['tardiness_s']:.1f}" if r["tardiness_s"] is not None else "-"
        cells = (
            r["job_id"],
            r["user"] or "-",
            r["state"] if r["renewed_as"] is None else f"renewed:{r['renewed_as']}",
            r["slurm_state"] or "-",
            where,
            r["slice"] or "-",
            tardiness,
            f"{r['energy_j']:.1f}",
            r["preemptions"],
        )
        print("  ".join(f"{c!s:>12}" for c in cells))
    return 0


def _status(args: argparse.Namespace) -> int:
    from wattsched.hardware.gpu.fake_state import gres_type
    from wattsched.slurm.accounting import accounting_status, status_line
    from wattsched.slurm.clocks import applied_clocks
    from wattsched.slurm.state import ON_SLICE

    config = _config(args)
    store = _store(config)
    rows = store.jobs()
    clocks = applied_clocks(store)
    by_slice = {(r.node, r.gpu, r.slice_index): r.job_id for r in rows if r.phase in ON_SLICE}
    nodes = []
    repartitions = store.repartitions(20)
    from wattsched.slurm.repartition import measured_cost

    by_gpu = {(node.name, index): gpu for node in config.nodes for index, gpu in enumerate(node.gpus)}
    cost = measured_cost(store.repartitions(1000), by_gpu)
    for node in config.nodes:
        gpus = []
        for index, (gpu, configuration) in enumerate(zip(node.gpus, node.configurations, strict=True)):
            last = store.last_repartition(node.name, index)
            if last is not None:
                ident = last.in_force
                configuration = gpu.configuration(int(ident) if ident.isdigit() else ident)
            gpus.append(
                {
                    "index": index,
                    "gpu": gpu.name,
                    "configuration": configuration.ident,
                    "clock": _clock_status(config.clocks.manages(node.name), clocks.get((node.name, index))),
                    "slices": [
                        {
                            "slice": s.label,
                            "profile": s.profile,
                            "placement": s.start,
                            "gres": f"gpu:{gres_type(gpu, s.profile, index if node.gres_per_gpu else None)}",
                            "job": by_slice.get((node.name, index, k)),
                        }
                        for k, s in enumerate(configuration.slices)
                    ],
                }
            )
        nodes.append({"name": node.name, "backend": node.backend, "gpus": gpus})
    queue = sorted(
        (r for r in rows if r.phase in ("booting", "queued", "released")),
        key=lambda r: (r.deadline_s if r.deadline_s is not None else float("inf"), r.job_id),
    )
    status = {
        "partition": config.partition,
        "policy": config.policy,
        "state": str(config.state_path),
        "nodes": nodes,
        "queue": [
            {
                "job_id": r.job_id,
                "phase": r.phase,
                "deadline_s": r.deadline_s,
                "node": r.node,
                "gpu": r.gpu,
                "slice": r.slice,
            }
            for r in queue
        ],
        "repartitions": [entry.as_json() for entry in repartitions],
        "repartition_cost": cost,
        "accounting": accounting_status(store),
        "decisions": [{"time_s": t, "text": text} for t, text in store.decisions(20)],
    }
    if args.json:
        print_json(status)
        return 0
    out = sys.stdout
    out.write(f"partition {config.partition}, policy {config.policy}, state {config.state_path}\n")
    for node in nodes:
        for gpu in node["gpus"]:
            out.write(
                f"{node['name']} GPU {gpu['index']} ({gpu['gpu']}, configuration {gpu['configuration']}, "
                f"{_clock_text(gpu['clock'])})\n"
            )
            for s in gpu["slices"]:
                out.write(
                    f"  {s['slice']:<14} {s['gres']:<22} {s['job'] if s['job'] is not None else 'idle'}\n"
                )
    out.write(
        f"queue ({len(queue)}): "
        + (" ".join(f"{r.job_id}{'->' + r.slice if r.slice else ''}" for r in queue) or "empty")
        + "\n"
    )
    for entry in repartitions[-5:]:
        spent = ", ".join(f"{phase} {seconds:.2f} s" for phase, seconds in entry.phase_s.items()) or "-"
        out.write(
            f"repartition {entry.id} {entry.node}/{entry.gpu}: {entry.from_config} -> {entry.to_config} "
            f"{entry.phase} ({spent}); waited {entry.waited or '-'}, requeued {entry.requeued or '-'}"
            f"{'; ' + entry.detail if entry.detail else ''}\n"
        )
    for item in cost:
        out.write(
            f"{item['gpu']}: {item['repartitions']} repartition(s) done, slices out of service "
            f"(apply + gres + resume) {item['out_of_service_s']:.2f} s median, "
            f"{item['total_s']:.2f} s start to end; the simulator charges "
            f"repartition_s = {item['simulator_repartition_s']:g} s\n"
        )
    out.write(status_line(accounting_status(store)) + "\n")
    for t, text in store.decisions(10):
        out.write(f"  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t))}  {text}\n")
    return 0


def _clock_status(managed: bool, applied: Any) -> dict[str, Any]:
    """A GPU's clocks for ``status``: whether the controller sets them, and what it last applied (``sm_mhz``
    ``None``: unlocked, or nothing applied yet when ``since_s`` is ``None`` too)."""
    return {
        "managed": managed,
        "sm_mhz": applied.sm_mhz if applied is not None else None,
        "mem_mhz": applied.mem_mhz if applied is not None else None,
        "since_s": applied.since_s if applied is not None else None,
    }


def _clock_text(clock: dict[str, Any]) -> str:
    if clock["sm_mhz"] is not None:
        return f"clock SM {clock['sm_mhz']} MHz, memory {clock['mem_mhz']} MHz (locked)"
    if clock["since_s"] is not None:
        return "clock unlocked" if clock["managed"] else "clock unlocked, not managed"
    return "clock not set yet" if clock["managed"] else "clock not managed"


def _gres(args: argparse.Namespace) -> int:
    from wattsched.hardware.gpu import open_backend
    from wattsched.slurm.gres import node_gres

    backend_spec = args.backend
    per_gpu = args.per_gpu
    if backend_spec is None:
        if not (args.config or os.environ.get(CONFIG_ENV)):
            raise ConfigError("give --backend nvml|fake:FILE or --config FILE.toml naming the node")
        config = _config(args)
        nodes = {node.name: node for node in config.nodes}
        if args.node not in nodes:
            raise ConfigError(
                f"{config.source}: no node '{args.node}' in [[nodes]] (it has: {', '.join(sorted(nodes))})"
            )
        backend_spec = nodes[args.node].backend
        per_gpu = per_gpu or nodes[args.node].gres_per_gpu
    backend = open_backend(backend_spec)
    try:
        found = node_gres(backend, args.node, minors_path=args.mig_minors, pad=args.pad, per_gpu=per_gpu)
    finally:
        backend.close()
    if args.json:
        print_json(found.as_json())
        return 0
    if args.output:
        from wattsched.cli._output import write_text

        write_text(args.output, found.gres_conf())
        return 0
    sys.stdout.write(found.gres_conf())
    return 0


def _power_program(args: argparse.Namespace) -> int:
    from wattsched.slurm.power import run_power_program

    config = _config(args)
    results = run_power_program(config, args.action, args.nodelist)
    failed = [r for r in results if r[1] == "failed"]
    for node, status, detail in results:
        sys.stderr.write(f"{args.action} {node}: {status}{': ' + detail if detail else ''}\n")
    return 1 if failed else 0


def _power_settings(args: argparse.Namespace) -> int:
    from wattsched.slurm.power import power_settings

    config = _config(args)
    settings = power_settings(config)
    source = Path(str(config.source)).resolve()
    programs = {}
    package_root = Path(__file__).resolve().parents[2]  # the wattsched that writes the programs runs them
    if args.output:
        from wattsched.cli._output import write_text

        folder = Path(args.output)
        folder.mkdir(parents=True, exist_ok=True)
        for action in ("suspend", "resume"):
            script = folder / f"{action}.sh"
            write_text(
                str(script),
                "#!/bin/sh\n# Slurm's "
                f"{action.capitalize()}Program, written by `wattsched slurm power-settings`\n"
                f"export PYTHONPATH={shlex_quote(str(package_root))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                f"exec {shlex_quote(sys.executable)} -m wattsched slurm {action} "
                f'--config {shlex_quote(str(source))} "$@"\n',
            )
            script.chmod(0o755)
            programs[action] = str(script.resolve())
    suspend = programs.get("suspend", "/path/to/suspend.sh")
    resume = programs.get("resume", "/path/to/resume.sh")
    if args.json:
        print_json({**settings.as_json(), "SuspendProgram": suspend, "ResumeProgram": resume})
        return 0
    out = sys.stdout
    out.write("# slurm.conf power saving for the managed nodes (wattsched slurm power-settings)\n")
    for line in settings.slurm_conf(suspend, resume):
        out.write(line + "\n")
    out.write("# why:\n")
    for line in settings.reasoning():
        out.write(f"#   {line}\n")
    if not args.output:
        out.write("# -o DIR writes suspend.sh and resume.sh, the two programs, for this config\n")
    return 0


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
