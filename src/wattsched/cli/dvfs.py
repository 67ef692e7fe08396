"""`wattsched dvfs` commands: generate, solve (Alg. 1 per task), run (offline/online schedules), fit."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

import numpy as np

__all__ = ["add_parser"]


def _generate(args: argparse.Namespace) -> int:
    from wattsched.dvfs.tasks import GeneratorSpec, generate_offline, generate_online, write_tasks

    spec = GeneratorSpec(slot_s=args.slot_s)
    make = generate_offline if args.mode == "offline" else generate_online
    tasks = make(args.util, args.pairs, args.seed, spec)
    write_tasks(tasks, args.output)
    print(f"wrote {len(tasks)} tasks to {args.output}", file=sys.stderr)
    return 0


def _solve(args: argparse.Namespace) -> int:
    from wattsched.dvfs.solver import solve
    from wattsched.dvfs.tasks import read_tasks, tasks_to_frame, write_frame_atomic
    from wattsched.hardware.dvfs import load_dvfs_gpu

    gpu = load_dvfs_gpu(args.gpu)
    tasks = read_tasks(args.tasks)
    interval = gpu.interval(args.interval)
    result = solve(tasks.model, tasks.window_s, interval, method=args.method, hkbu_grid=gpu.hkbu)
    frame = tasks_to_frame(tasks)
    for name in ("v", "f_core", "f_mem", "time_s", "power_w", "energy_j", "feasible"):
        frame[name] = getattr(result, name)
    write_frame_atomic(frame, args.output)
    infeasible = int((~result.feasible).sum())
    print(
        f"solved {len(tasks)} tasks ({infeasible} with no setting meeting the window) -> {args.output}",
        file=sys.stderr,
    )
    return 0


def _run(args: argparse.Namespace) -> int:
    from wattsched.dvfs.cluster import ClusterConfig, DvfsConfig
    from wattsched.dvfs.offline import run_offline
    from wattsched.dvfs.online import run_online
    from wattsched.dvfs.tasks import GeneratorSpec, generate_offline, generate_online, read_tasks
    from wattsched.errors import ConfigError, InputError
    from wattsched.hardware.dvfs import load_dvfs_gpu

    gpu = load_dvfs_gpu(args.gpu)
    base = gpu.cluster
    slot_s = args.slot_s if args.slot_s is not None else base.slot_s
    if slot_s <= 0:
        raise ConfigError(f"--slot-s must be > 0, got {slot_s}")
    idle_w = args.idle_power_w if args.idle_power_w is not None else base.idle_power_w
    per_pair_j = (
        args.turn_on_j_per_pair
        if args.turn_on_j_per_pair is not None
        else base.turn_on_j_per_pair / base.slot_s * slot_s
    )
    cluster = ClusterConfig(
        pairs=args.pairs,
        pairs_per_server=args.pairs_per_server,
        idle_power_w=idle_w,
        turn_on_j_per_pair=per_pair_j,
        slot_s=slot_s,
        drs_idle_slots=args.drs_slots if args.drs_slots is not None else base.drs_idle_slots,
        grouping=args.grouping,
        allow_overflow=not args.strict_capacity,
    )
    interval = gpu.interval(args.interval)
    if args.v_max is not None:
        interval = interval.with_v_max(args.v_max)
    dvfs = DvfsConfig(
        enabled=args.dvfs == "on",
        theta=args.theta,
        interval=interval,
        method=args.method,
        reproduce_hkbu=args.reproduce_hkbu,
    )
    if args.tasks:
        tasks = read_tasks(args.tasks)
    else:
        if args.util is None:
            raise ConfigError("give --util U (to generate tasks) or --tasks FILE")
        spec = replace(GeneratorSpec(), slot_s=slot_s)
        make = generate_offline if args.mode == "offline" else generate_online
        tasks = make(args.util, args.pairs, args.seed, spec)
    runner = run_offline if args.mode == "offline" else run_online
    try:
        result = runner(tasks, args.algo, cluster, dvfs)
    except InputError as exc:
        if exc.path is None and args.tasks:
            raise InputError(exc.reason, path=args.tasks, row=exc.row, column=exc.column) from None
        raise
    data: dict[str, Any] = {
        "mode": args.mode,
        "algo": args.algo,
        "dvfs": args.dvfs,
        "theta": args.theta,
        "pairs_per_server": args.pairs_per_server,
        **result.to_dict(),
    }
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        for key, value in data.items():
            print(f"{key:20s} {value:.6g}" if isinstance(value, float) else f"{key:20s} {value}")
    return 0


def _fit(args: argparse.Namespace) -> int:
    import pandas as pd

    from wattsched.dvfs.fitting import fit_measurements
    from wattsched.dvfs.tasks import write_frame_atomic
    from wattsched.hardware.dvfs import load_dvfs_gpu

    fits = fit_measurements(args.data, load_dvfs_gpu(args.gpu))
    frame = pd.DataFrame([fit.to_dict() for fit in fits])
    if args.output:
        write_frame_atomic(frame, args.output)
    if args.json:
        print(
            json.dumps(
                {
                    "applications": frame.to_dict(orient="records"),
                    "mean_saving_wide": float(np.mean(frame["saving_wide"])),
                    "mean_saving_narrow": float(np.mean(frame["saving_narrow"])),
                },
                indent=2,
            )
        )
        return 0
    print(
        f"{'application':28s} {'time MAPE':>9s} {'power MAPE':>10s} "
        f"{'saving wide':>11s} {'saving narrow':>13s}"
    )
    for fit in fits:
        print(
            f"{fit.app:28s} {fit.time_mape:9.2%} {fit.power_mape:10.2%} {fit.saving_wide:11.1%} "
            f"{fit.saving_narrow:13.1%}"
        )
    print(
        f"{'mean':28s} {frame['time_mape'].mean():9.2%} {frame['power_mape'].mean():10.2%} "
        f"{frame['saving_wide'].mean():11.1%} {frame['saving_narrow'].mean():13.1%}"
    )
    return 0


def _add_generator_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=("offline", "online"), default="offline")
    parser.add_argument("--util", type=float, help="task-set utilisation U_J (n = pairs x U tasks)")
    parser.add_argument("--pairs", type=int, default=2048, help="CPU-GPU pairs in the cluster (default 2048)")
    parser.add_argument("--seed", type=int, default=0)


def add_parser(groups: argparse._SubParsersAction) -> None:
    parser = groups.add_parser("dvfs", help="DVFS-aware deadline scheduling on CPU-GPU clusters (P2)")
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
    commands = parser.add_subparsers(dest="dvfs_command", metavar="COMMAND")

    gen = commands.add_parser("generate", help="write a synthetic P2 task file (CONTRACT §6)")
    _add_generator_options(gen)
    gen.add_argument("--slot-s", type=float, default=60.0)
    gen.add_argument("-o", "--output", required=True, help="task file to write (.csv or .parquet)")
    gen.set_defaults(func=_generate, util=1.0)

    sol = commands.add_parser("solve", help="Alg. 1: minimum-energy V/f per task within its window")
    sol.add_argument("--tasks", required=True, help="task file (.csv or .parquet, CONTRACT §6)")
    sol.add_argument("-o", "--output", required=True, help="output file (.csv or .parquet)")
    sol.add_argument("--gpu", default="gtx1080ti", help="DVFS GPU name or TOML file")
    sol.add_argument("--interval", choices=("wide", "narrow"), default="wide")
    sol.add_argument("--method", choices=("exact", "hkbu"), default="exact")
    sol.set_defaults(func=_solve)

    run = commands.add_parser("run", help="schedule tasks on the cluster and report the energy split")
    _add_generator_options(run)
    run.add_argument("--tasks", help="task file instead of generated tasks")
    run.add_argument("--pairs-per-server", type=int, default=1, help="l, pairs per server")
    run.add_argument("--algo", choices=("edl", "edf-bf", "edf-wf", "lpt-ff", "bin"), default="edl")
    run.add_argument("--theta", type=float, default=1.0, help="θ of the readjustment (1 = off)")
    run.add_argument("--dvfs", choices=("on", "off"), default="on")
    run.add_argument(
        "--grouping",
        choices=("sorted", "on_demand"),
        default="sorted",
        help="offline/initial grouping: Alg. 3 (sorted, paper) or opening order (authors' code)",
    )
    run.add_argument("--gpu", default="gtx1080ti", help="DVFS GPU name or TOML file")
    run.add_argument("--interval", choices=("wide", "narrow"), default="wide")
    run.add_argument("--v-max", type=float, help="voltage ceiling (paper 1.2, authors' code 1.25)")
    run.add_argument("--method", choices=("exact", "hkbu"), default="exact", help="Alg. 1 search")
    run.add_argument(
        "--reproduce-hkbu",
        action="store_true",
        help="authors' quirks: initial solve ignores the deadline, 16-point grid",
    )
    run.add_argument("--idle-power-w", type=float, help="idle power per pair (paper 37 W)")
    run.add_argument("--turn-on-j-per-pair", type=float, help="Δ per pair in J (paper 90 W·slot)")
    run.add_argument("--slot-s", type=float, help="slot length (default 60 s)")
    run.add_argument("--drs-slots", type=int, help="ρ, idle slots before DRS turns a server off (default 2)")
    run.add_argument(
        "--strict-capacity",
        action="store_true",
        help="never open more than --pairs pairs (late tasks instead)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.set_defaults(func=_run)

    fit = commands.add_parser("fit", help="fit the P2 model to measured clocks/time/power per application")
    fit.add_argument("--data", required=True, help="measurement CSV (appName, coreF, memF, time/ms, power/W)")
    fit.add_argument("--gpu", default="gtx1080ti", help="GPU whose default clocks normalise the data")
    fit.add_argument("-o", "--output", help="write the fitted parameters (.csv or .parquet)")
    fit.add_argument("--json", action="store_true")
    fit.set_defaults(func=_fit)
